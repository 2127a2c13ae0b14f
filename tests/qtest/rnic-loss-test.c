/*
 * QTest testcases for the rnic RoCEv2 RNIC: loss recovery on RC QPs --
 * retransmission, tail-loss probes and their round-trip estimate,
 * sequence NAKs, the congestion window and coalesced ACKs
 *
 * The device sits on a socketpair netdev, so a test reads every frame the
 * device sends and injects frames of its own; the virtual clock only
 * moves when a test steps it, so timer deadlines are exact.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/un.h>
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-test-common.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/udp.h>

#ifndef _WIN32

/* @n signaled SENDs of 16 bytes with wr_id 0..n-1, one doorbell. */
static void post_sends(Env *e, int n)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    int i;

    rt_sge_of(&sge, &e->mr, 0, 16);
    for (i = 0; i < n; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e->r, &e->qp);
}

/* Their @n successful completions, in order. */
static void expect_send_cqes(Env *e, int n)
{
    struct rnic_cqe cqe;
    int i;

    for (i = 0; i < n; i++) {
        g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, i);
    }
}

/* A QP in RTR with @n receives of 64 bytes each, wr_id @wr_id0 on. */
static void rtr_with_recvs(Env *e, void *obj, void *data, int n,
                           uint64_t wr_id0)
{
    struct rnic_sge sge;
    int i;

    rt_env_basic(e, obj, data);
    rt_env_rc_qp(e, RNIC_QPS_RTR);
    for (i = 0; i < n; i++) {
        rt_sge_of(&sge, &e->mr, i * 64, 64);
        qrnic_post_recv(e->r, &e->qp, wr_id0 + i, &sge, 1);
    }
    qrnic_ring_rq(e->r, &e->qp);
    qrnic_settle(e->r);
}

/* No ACK: a tail-loss probe, then the local ACK timer resend the PSN. */
static void test_rc_retransmit(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce f1, f2;
    uint8_t p1[32];
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 32);
    rt_fill_pattern(p1, sizeof(p1), 3);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, p1, sizeof(p1));
    rt_send_wqe(&w, 9, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f1);
    g_assert_cmphex(f1.psn, ==, QP_SQ_PSN);

    /*
     * Tail-loss probes resend without spending a retry: with no round
     * trip measured the first waits 8 ms, each next one twice as long.
     * A timer only wakes the bottom half, which runs after the step, so
     * each step lets at most one probe out.
     */
    for (i = 0; i < 4; i++) {
        qtest_clock_step(qrnic_qts(e.r), ((8ull << i) - 1) * 1000 * 1000);
        rt_assert_no_frame(&e, 50);
        qtest_clock_step(qrnic_qts(e.r), 2 * 1000 * 1000);
        rt_recv_roce(&e, &f2);
        g_assert_cmphex(f2.psn, ==, QP_SQ_PSN);
        g_assert_cmpmem(f2.payload, f2.payload_len, p1, sizeof(p1));
        g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, i + 1);
        g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ACK_TIMEOUTS), ==, 0);
    }

    /* ...then the QP's timeout (14: 4.096 us << 14, about 67 ms). */
    qtest_clock_step(qrnic_qts(e.r), 70 * 1000 * 1000);
    rt_recv_roce(&e, &f2);
    g_assert_cmphex(f2.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f2.psn, ==, QP_SQ_PSN);
    g_assert_cmpmem(f2.payload, f2.payload_len, p1, sizeof(p1));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), ==, 5);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ACK_TIMEOUTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, 4);
}

/*
 * One SEND acknowledged @rtt_us after it left, so that the round trip
 * is measured; then a second SEND that nobody acknowledges.  Its probe
 * must not come within @quiet_us and must come by @probe_us.
 */
static void probe_after_rtt(void *obj, void *data, uint64_t rtt_us,
                            uint64_t quiet_us, uint64_t probe_us)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_true(f.ack_req);
    qtest_clock_step(qrnic_qts(e.r), rtt_us * 1000);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    rt_send_wqe(&w, 2, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);

    qtest_clock_step(qrnic_qts(e.r), quiet_us * 1000);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, 0);
    qtest_clock_step(qrnic_qts(e.r), (probe_us - quiet_us) * 1000);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ACK_TIMEOUTS), ==, 0);
}

/*
 * The probe learns the round trip: an ACK 500 us after its SEND makes
 * the next probe wait 500 + 4 * 250 us instead of the first 8 ms.
 */
static void test_rc_probe_rtt(void *obj, void *data, QGuestAllocator *alloc)
{
    probe_after_rtt(obj, data, 500, 1400, 1600);
}

/*
 * The first probe of a stall resends only the last packet, asking for
 * an ACK, and cuts no window: an ACK of it completes all three SENDs.
 * The second probe resends the whole run.
 */
static void test_rc_probe_last(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    Roce f;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_sends(&e, 3);
    for (i = 0; i < 3; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }

    qtest_clock_step(qrnic_qts(e.r), 10 * 1000 * 1000);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 2);
    g_assert_true(f.ack_req);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), ==, 1);

    /* No answer: the second probe goes back to the oldest PSN. */
    qtest_clock_step(qrnic_qts(e.r), 20 * 1000 * 1000);
    for (i = 0; i < 3; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TAIL_PROBES), ==, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 1);

    rt_send_ack(&e, QP_SQ_PSN + 2, 3);
    expect_send_cqes(&e, 3);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ACK_TIMEOUTS), ==, 0);
}

/*
 * However short the measured round trip, a probe waits 250 us: an ACK
 * 10 us after its SEND would otherwise make it 30 us.
 */
static void test_rc_probe_floor(void *obj, void *data, QGuestAllocator *alloc)
{
    probe_after_rtt(obj, data, 10, 240, 260);
}

/*
 * A sequence NAK that answers a probe spends no retry: with retry_cnt 0
 * the lost SEND is still resent and completes, where a NAK alone would
 * fail it with RETRY_EXC_ERR.
 */
static void test_rc_probe_nak(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;
    Roce f, nak;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_attr_for(&a, RNIC_QPS_RTS);
    a.retry_cnt = 0;
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTS, &a), ==,
                     RNIC_CMD_OK);
    post_sends(&e, 2);
    rt_recv_roce(&e, &f);
    rt_recv_roce(&e, &f);

    /* The first SEND was "lost": the probe resends the second ... */
    qtest_clock_step(qrnic_qts(e.r), 10 * 1000 * 1000);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);
    /* ... which the responder answers with a NAK for the first. */
    rt_roce_init(&nak, OPC_ACK, e.qp.qpn, QP_SQ_PSN);
    nak.ack_req = false;
    nak.syndrome = AETH_NAK(NAK_PSN_SEQ);
    rt_send_roce(&e, &nak);
    for (i = 0; i < 2; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }
    rt_send_ack(&e, QP_SQ_PSN + 1, 2);
    expect_send_cqes(&e, 2);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

/* A PSN sequence NAK rewinds; a remote access NAK fails the WQE. */
static void test_rc_nak_rcvd(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f, nak;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 8);
    rt_send_wqe(&w, 0x51, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);

    rt_roce_init(&nak, OPC_ACK, e.qp.qpn, QP_SQ_PSN);
    nak.ack_req = false;
    nak.syndrome = AETH_NAK(NAK_PSN_SEQ);
    rt_send_roce(&e, &nak);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_RCVD), ==, 1);

    nak.syndrome = AETH_NAK(NAK_REM_ACCESS);
    rt_send_roce(&e, &nak);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x51);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/* Sends one-packet SENDs until the window closes; checks their PSNs. */
static void cwnd_expect_run(Env *e, uint32_t first, uint32_t n)
{
    Roce f;
    uint32_t i;

    for (i = 0; i < n; i++) {
        rt_recv_roce(e, &f);
        g_assert_cmphex(f.psn, ==, (first + i) & 0xffffff);
    }
    rt_assert_no_frame(e, 100);
}

/*
 * The congestion window: 64 packets in flight at first; a sequence NAK
 * cuts it by a quarter (and counts a cut) and resends from the NAK's
 * PSN; a quarter window acknowledged grows it by one.
 */
static void test_rc_cwnd(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicCq scq;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce ack;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_init_qp_on_cq(&e, &scq, 8, 7);
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 8);
    for (i = 0; i < 100; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);
    cwnd_expect_run(&e, QP_SQ_PSN, 64);

    rt_roce_init(&ack, OPC_ACK, e.qp.qpn, QP_SQ_PSN + 10);
    ack.ack_req = false;
    ack.syndrome = AETH_NAK(NAK_PSN_SEQ);
    rt_send_roce(&e, &ack);
    cwnd_expect_run(&e, QP_SQ_PSN + 10, 48);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 1);

    /*
     * 12 acknowledged since the cut: the window opens to 49, so 13 more
     * packets follow the 48 already out.
     */
    rt_roce_init(&ack, OPC_ACK, e.qp.qpn, QP_SQ_PSN + 21);
    ack.ack_req = false;
    ack.syndrome = AETH_ACK(0);
    rt_send_roce(&e, &ack);
    cwnd_expect_run(&e, QP_SQ_PSN + 58, 13);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 1);
}

/*
 * Packets that arrive together are acknowledged together: three SENDs,
 * each asking for an ACK, queued while the VM is stopped and delivered
 * at once when it runs, draw one ACK for the last of them.
 */
static void test_rc_ack_coalesce(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_fill_pattern(payload, sizeof(payload), 0x24);
    for (i = 0; i < 3; i++) {
        rt_sge_of(&sge, &e.mr, i * 64, 64);
        qrnic_post_recv(e.r, &e.qp, 0x20 + i, &sge, 1);
    }
    qrnic_ring_rq(e.r, &e.qp);
    qrnic_settle(e.r);

    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'stop'}"));
    for (i = 0; i < 3; i++) {
        rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + i,
                             payload, sizeof(payload));
        g_assert_true(f.ack_req);
        rt_send_roce(&e, &f);
    }
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'cont'}"));

    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 2);
    rt_assert_no_frame(&e, 200);
    for (i = 0; i < 3; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x20 + i);
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    }
}

/* ---- ECN and congestion notification ---- */

#define OPC_CNP     0x81
#define ECN_MASK    0x03
#define ECN_ECT0    0x02
#define ECN_CE      0x03

/* The ECN field of the SEND the device sends for one posted WQE. */
static uint8_t ecn_of_send(void *obj, void *data)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    /* rt_recv_roce checks the IPv4 header checksum and the ICRC too. */
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    return f.tos & ECN_MASK;
}

/* RoCEv2 packets leave ECN-capable, ECT(0), unless ecn=off. */
static void test_ecn_ect(void *obj, void *data, QGuestAllocator *alloc)
{
    g_assert_cmphex(ecn_of_send(obj, data), ==, ECN_ECT0);
}

static void test_ecn_off(void *obj, void *data, QGuestAllocator *alloc)
{
    g_assert_cmphex(ecn_of_send(obj, data), ==, 0);
}

/* ce-mark=100 stands in for a congested switch: every packet is CE. */
static void test_ecn_ce_mark(void *obj, void *data, QGuestAllocator *alloc)
{
    g_assert_cmphex(ecn_of_send(obj, data), ==, ECN_CE);
}

static void send_ce(Env *e, uint32_t psn, uint8_t tos)
{
    static const uint8_t payload[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    Roce f;

    rt_roce_init_payload(&f, OPC_SEND_ONLY, e->qp.qpn, psn, payload,
                         sizeof(payload));
    f.tos = tos;
    rt_send_roce(e, &f);
}

static void expect_cnp(Env *e)
{
    Roce f;

    rt_recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_CNP);
    g_assert_cmphex(f.dqpn, ==, PEER_QPN);
    g_assert_cmpuint(f.payload_len, ==, 16);
    g_assert_cmphex(f.tos & ECN_MASK, ==, 0);
}

/*
 * A request marked CE draws a CNP to its requester before the ACK; a
 * second one within 50 us draws none, one after that another.
 */
static void test_ecn_cnp_sent(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rtr_with_recvs(&e, obj, data, 4, 0);

    send_ce(&e, QP_RQ_PSN, ECN_CE);
    expect_cnp(&e);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    send_ce(&e, QP_RQ_PSN + 1, ECN_CE);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 1);
    send_ce(&e, QP_RQ_PSN + 2, ECN_ECT0);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ECN_CE_RCVD), ==, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CNP_SENT), ==, 1);

    qtest_clock_step(qrnic_qts(e.r), 60 * 1000);
    send_ce(&e, QP_RQ_PSN + 3, ECN_CE);
    expect_cnp(&e);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 3);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ECN_CE_RCVD), ==, 3);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CNP_SENT), ==, 2);
}

/*
 * A CNP halves the congestion window once: a second one for packets
 * sent before the cut changes nothing.  Once all 64 are acknowledged,
 * 33 more go out (32, grown by one for the 64 acknowledged).
 */
static void test_ecn_cnp_rcvd(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t rsvd[16];
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    QRnicCq scq;
    Roce cnp, ack;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_init_qp_on_cq(&e, &scq, 8, 7);
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 8);
    for (i = 0; i < 100; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 0);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);
    cwnd_expect_run(&e, QP_SQ_PSN, 64);

    rt_roce_init_payload(&cnp, OPC_CNP, e.qp.qpn, 0, rsvd, sizeof(rsvd));
    cnp.ack_req = false;
    rt_send_roce(&e, &cnp);
    rt_send_roce(&e, &cnp);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CNP_RCVD), ==, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 1);

    rt_roce_init(&ack, OPC_ACK, e.qp.qpn, QP_SQ_PSN + 63);
    ack.ack_req = false;
    ack.syndrome = AETH_ACK(0);
    rt_send_roce(&e, &ack);
    cwnd_expect_run(&e, QP_SQ_PSN + 64, 33);
}

/* The netdev connects from a thread; frames sent before are dropped. */
static void stream_wait_connected(QTestState *qts)
{
    int i;

    for (i = 0; i < QRNIC_TIMEOUT_MS / 10; i++) {
        char *info = qtest_hmp(qts, "info network");
        bool up = !strstr(info, "connecting");

        g_free(info);
        if (up) {
            return;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/* The env's QP on its own send CQ, in RTS at path MTU 4096. */
static void rts_mtu_4096(Env *e, QRnicCq *scq)
{
    struct rnic_qp_attr a;

    rt_env_init_qp_on_cq(e, scq, 7, 6);
    rt_attr_for(&a, RNIC_QPS_RTR);
    a.path_mtu = RNIC_MTU_4096;
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(e, &e->qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
}

/* SENDs 0..n-1 completed in order, their @pkts packets each sent once. */
static void expect_sends_done(Env *e, QRnicCq *scq, int n, int pkts)
{
    rt_expect_cqes(e, scq, 0, n, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_TX_PKTS), ==, pkts);
}

/*
 * A stream netdev holds what the socket cannot take; with coalesce=on it
 * also writes the frames of one main-loop pass together.  64 SENDs of
 * 4 KiB (path MTU 4096) posted with one doorbell leave in one pass: more
 * than the netdev buffers, into a socket whose send buffer takes a few.  Read back
 * slowly, every frame must come whole, in PSN order, and once; and no
 * frame may have needed a resend.
 */
static void test_stream_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { N = 64, LEN = 4096 };
    Env e;
    QRnicCq scq;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t pat[LEN];
    struct pollfd pfd;
    Roce f;
    int i, queued = 0, before = -1;

    rt_env_basic(&e, obj, data);
    stream_wait_connected(qrnic_qts(e.r));
    rts_mtu_4096(&e, &scq);
    rt_fill_pattern(pat, LEN, 7);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, pat, LEN);
    rt_sge_of(&sge, &e.mr, 0, LEN);
    for (i = 0; i < N; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);

    /* Wait until the socket holds a steady part of the burst. */
    pfd = (struct pollfd) { .fd = e.fd, .events = POLLIN };
    g_assert_cmpint(poll(&pfd, 1, QRNIC_TIMEOUT_MS), ==, 1);
    while (queued != before) {
        before = queued;
        qrnic_settle(e.r);
        g_assert_cmpint(ioctl(e.fd, FIONREAD, &queued), ==, 0);
    }
    g_assert_cmpint(queued, >=, RT_STREAM_SNDBUF);
    g_assert_cmpint(queued, <, N * LEN / 4);

    for (i = 0; i < N; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
        g_assert_cmpmem(f.payload, f.payload_len, pat, LEN);
    }
    rt_assert_no_frame(&e, 100);

    rt_send_ack(&e, QP_SQ_PSN + N - 1, N);
    expect_sends_done(&e, &scq, N, N);
}

/* A client of the listening stream netdev at rt_stream_path. */
static int stream_connect(QTestState *qts)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), i;

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(sa.sun_path, rt_stream_path, sizeof(sa.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    /* Connected once QEMU has accepted: it no longer says "listening". */
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10; i++) {
        char *info = qtest_hmp(qts, "info network");
        bool up = !strstr(info, "listening");

        g_free(info);
        if (up) {
            return fd;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/*
 * A stream connection that drops while the netdev refuses frames (its
 * socket and its own buffer full) used to leave the netdev refusing for
 * good: the NIC's frames then waited in the queue for ever, even on the
 * next connection.  Here two QPs' 64 SENDs of 4 KiB each, more than the
 * socket and the netdev's buffer hold, go to a client that never reads;
 * the client goes, a new one connects and ACKs them all, and the next
 * SEND must reach it.  (The connection a server accepts was also
 * blocking: the first full socket stopped all of QEMU in write().)
 */
static void test_stream_reconnect(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { N = 64, LEN = 4096 };
    QTestState *qts;
    QRnicCq scq;
    QRnicQp qp[2];
    struct rnic_qp_attr a;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce f;
    Env e;
    int i, k, queued = 0, before = -1;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    e.fd = stream_connect(qts);
    rts_mtu_4096(&e, &scq);
    qp[0] = e.qp;
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp[1], RNIC_QPT_RC, e.pdn,
                                     scq.cqn, e.cq.cqn, 6, 4), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &qp[1], RNIC_QPS_INIT, MASK_TO_INIT),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    a.path_mtu = RNIC_MTU_4096;
    g_assert_cmpuint(qrnic_modify_qp(e.r, qp[1].qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &qp[1], RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    rt_sge_of(&sge, &e.mr, 0, LEN);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < N; i++) {
            rt_send_wqe(&w, k * N + i, RNIC_WR_SEND, 1);
            qrnic_post_send(e.r, &qp[k], &w, &sge, 1);
        }
        qrnic_ring_sq(e.r, &qp[k]);
    }
    while (queued != before) {
        before = queued;
        qrnic_settle(e.r);
        g_assert_cmpint(ioctl(e.fd, FIONREAD, &queued), ==, 0);
    }
    /* Not all of it fitted: the netdev holds the rest back. */
    g_assert_cmpint(queued, <, 2 * N * LEN);

    close(e.fd);
    e.fd = stream_connect(qts);
    for (k = 0; k < 2; k++) {
        e.qp = qp[k];
        rt_send_ack(&e, QP_SQ_PSN + N - 1, N);
    }
    for (i = 0; i < 2 * N; i++) {
        struct rnic_cqe cqe;

        g_assert_true(qrnic_cq_wait(e.r, &scq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    }
    e.qp = qp[0];
    rt_send_wqe(&w, 2 * N, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    do {
        rt_recv_roce(&e, &f);
    } while (f.psn != QP_SQ_PSN + N);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmpuint(f.payload_len, ==, LEN);
    close(e.fd);
}

/*
 * Sends the device a SEND for a QP that does not exist (0x777), and waits
 * until its RX_DROPPED counter reaches @want.
 */
static void send_unmatched(Env *e, uint64_t want)
{
    static const uint8_t payload[16];
    uint8_t buf[256];
    size_t len;
    Roce f;
    int i;

    rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, 0, payload,
                         sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e->fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e->r, RNIC_CNT_RX_DROPPED) < want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_RX_DROPPED), ==, want);
}

/*
 * An empty datagram is a datagram like any other on a socket or dgram
 * netdev, not the end of a connection; it used to turn reading off for
 * good.  After one, a frame still arrives (counted as a dropped RoCE
 * frame, as its QP does not exist).
 */
static void test_dgram_empty(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t none = 0;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpint(send(e.fd, &none, 0, 0), ==, 0);
    qrnic_settle(e.r);
    send_unmatched(&e, 1);
}

/* ---- Selective repeat ---- */

#define BTH_X_SR    0x01

/*
 * Ten SENDs out, each marked as from a selective-repeat requester; a NAK
 * that names a hole of 2 at the fourth brings back exactly those two
 * and nothing after them.  With
 * selective-repeat=off the requests carry no mark and the same NAK
 * brings back all seven from the hole on.
 */
static void sr_requester(void *obj, void *data, bool sr)
{
    Env e;
    Roce f, nak;
    int i, n = sr ? 2 : 7;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_sends(&e, 10);
    for (i = 0; i < 10; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
        g_assert_cmphex(f.resv6, ==, sr ? BTH_X_SR : 0);
    }

    rt_roce_init(&nak, OPC_ACK, e.qp.qpn, QP_SQ_PSN + 3);
    nak.ack_req = false;
    nak.syndrome = AETH_NAK(NAK_PSN_SEQ);
    nak.resv6 = 2;
    rt_send_roce(&e, &nak);
    for (i = 0; i < n; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 3 + i);
        g_assert_true(f.ack_req);       /* every SEND_ONLY asks */
    }
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), ==, n);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SR_RESENDS), ==, sr);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 1);

    /* A second NAK for the same hole while it is resent changes nothing. */
    rt_send_roce(&e, &nak);
    rt_assert_no_frame(&e, 100);

    rt_send_ack(&e, QP_SQ_PSN + 9, 10);
    expect_send_cqes(&e, 10);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

static void test_sr_requester(void *obj, void *data, QGuestAllocator *alloc)
{
    sr_requester(obj, data, true);
}

static void test_sr_requester_off(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    sr_requester(obj, data, false);
}

/*
 * A hole in the middle of a message: a 4 KiB SEND (four packets at path
 * MTU 1024) and a short one; the NAK names the second packet alone, which
 * comes back with its own bytes and asking for an ACK, and nothing else;
 * a hole of one packet cuts no congestion window.
 */
static void test_sr_requester_mid(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t pat[4096];
    Roce f, nak;
    int i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_fill_pattern(pat, sizeof(pat), 0x5a);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, pat, sizeof(pat));
    rt_sge_of(&sge, &e.mr, 0, sizeof(pat));
    rt_send_wqe(&w, 0, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    for (i = 0; i < 5; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }

    rt_roce_init(&nak, OPC_ACK, e.qp.qpn, QP_SQ_PSN + 1);
    nak.ack_req = false;
    nak.syndrome = AETH_NAK(NAK_PSN_SEQ);
    nak.resv6 = 1;
    rt_send_roce(&e, &nak);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);
    g_assert_true(f.ack_req);
    g_assert_cmpmem(f.payload, f.payload_len, pat + 1024, 1024);
    rt_assert_no_frame(&e, 100);

    rt_send_ack(&e, QP_SQ_PSN + 4, 2);
    expect_send_cqes(&e, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), ==, 1);
    /* One packet lost, its followers kept: no congestion, no cut. */
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CWND_CUTS), ==, 0);
}

/* The test is the requester: SEND_ONLY @psn of 16 bytes of pattern @psn. */
static void sr_send(Env *e, uint32_t psn, bool sr)
{
    uint8_t payload[16];
    Roce f;

    rt_fill_pattern(payload, sizeof(payload), psn);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e->qp.qpn, QP_RQ_PSN + psn,
                         payload, sizeof(payload));
    f.resv6 = sr ? BTH_X_SR : 0;
    rt_send_roce(e, &f);
}

static void sr_expect(Env *e, uint8_t syndrome, uint32_t psn, uint8_t hole)
{
    Roce f;

    rt_recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ACK);
    g_assert_cmphex(f.syndrome >> 5, ==, syndrome >> 5);
    if (syndrome >> 5) {
        g_assert_cmphex(f.syndrome, ==, syndrome);
    }
    g_assert_cmphex(f.psn, ==, QP_RQ_PSN + psn);
    g_assert_cmphex(f.resv6, ==, hole);
}

/*
 * The responder keeps SENDs that arrive past a gap from a selective-
 * repeat requester, names the hole in its NAK, and once the hole is
 * filled runs them in order: each lands in its own receive WQE, in PSN
 * order.  Two holes at once: filling the first brings a NAK for the
 * second at once, not an ACK.
 */
static void test_sr_responder(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { N = 8 };
    Env e;
    struct rnic_cqe cqe;
    uint8_t want[16], got[16];
    int i;

    rtr_with_recvs(&e, obj, data, N, 0x40);

    sr_send(&e, 0, true);
    sr_expect(&e, AETH_ACK(0), 0, 0);
    sr_send(&e, 2, true);                       /* 1 is lost */
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 1, 1);
    sr_send(&e, 3, true);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 2);
    sr_send(&e, 1, true);                       /* the hole, resent */
    sr_expect(&e, AETH_ACK(0), 3, 0);

    sr_send(&e, 5, true);                       /* 4 and 6 are lost */
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 4, 1);
    sr_send(&e, 7, true);
    rt_assert_no_frame(&e, 100);
    sr_send(&e, 4, true);
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 6, 1);
    sr_send(&e, 6, true);
    sr_expect(&e, AETH_ACK(0), 7, 0);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 4);

    for (i = 0; i < N; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x40 + i);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(want));
        rt_fill_pattern(want, sizeof(want), i);
        qtest_memread(qrnic_qts(e.r), e.mr.buf + i * 64, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    }
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
}

/* The host memory the device's objects hold now (QOM "objects"). */
static uint64_t host_mem(QRnic *r)
{
    QTestState *qts = qrnic_qts(r);
    g_autofree char *path = rt_qom_path(qts);
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments':"
                                 " {'path': %s, 'property': 'objects'}}",
                            path);
    QDict *ret = qdict_get_qdict(resp, "return");
    uint64_t val;

    g_assert_nonnull(ret);
    val = qdict_get_int(ret, "host-mem");
    qobject_unref(resp);
    return val;
}

static void drain_frames(Env *e)
{
    Roce f;

    qrnic_settle(e->r);
    while (rt_sock_pending(e->fd) > 0) {
        rt_recv_roce_any(e, &f);
    }
}

/*
 * What the reorder buffer keeps is bounded: a request larger than the
 * path MTU is only NAKed, never kept; one QP keeps at most 64 frames;
 * each kept frame is charged to max-host-mem; and frames whose gap stays
 * open are given up after 100 ms (virtual), their memory returned, so
 * that a peer, or a spoofer, cannot hold the device's pool.
 */
static void test_sr_responder_limits(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    uint8_t big[1100] = { 0 };
    uint64_t base, full;
    Roce f;
    Env e;
    int i;

    rtr_with_recvs(&e, obj, data, 4, 0);        /* path MTU 1024 */
    base = host_mem(e.r);
    sr_send(&e, 0, true);
    sr_expect(&e, AETH_ACK(0), 0, 0);

    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + 2, big,
                         sizeof(big));
    f.resv6 = BTH_X_SR;
    rt_send_roce(&e, &f);
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 1, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 0);
    g_assert_cmpuint(host_mem(e.r), ==, base);

    for (i = 3; i < 103; i++) {
        sr_send(&e, i, true);
    }
    drain_frames(&e);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 64);
    full = host_mem(e.r);
    /* The buffer's own state, and each frame. */
    g_assert_cmpuint(full - base, >=, 64 * (BTH_OFF + 16));

    qtest_clock_step(qrnic_qts(e.r), 200ull * 1000 * 1000);
    sr_send(&e, 103, true);
    drain_frames(&e);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 65);
    /* 64 frames went, one came. */
    g_assert_cmpuint(full - host_mem(e.r), >=, 63 * (BTH_OFF + 16));
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
}

/*
 * A requester that does not mark its requests (rxe, a real NIC) gets
 * go-back-N: nothing is kept, the NAK names no hole, and once the hole
 * is filled the packet after it is still missing.
 */
static void test_sr_responder_plain(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Env e;

    rtr_with_recvs(&e, obj, data, 4, 0);

    sr_send(&e, 0, false);
    sr_expect(&e, AETH_ACK(0), 0, 0);
    sr_send(&e, 2, false);
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 1, 0);
    sr_send(&e, 1, false);
    sr_expect(&e, AETH_ACK(0), 1, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_OOO_KEPT), ==, 0);
    sr_send(&e, 3, false);
    sr_expect(&e, AETH_NAK(NAK_PSN_SEQ), 2, 0);
}

/*
 * A multicast segment is a hub without backpressure: a burst that comes
 * while the receiving QEMU is busy (here: stopped) waits in its socket's
 * receive buffer or is lost.  200 frames of 4 KiB, about four times what
 * the usual default buffer (212,992 bytes) holds, must all reach the
 * device once it runs (patches/qemu/0005): each, for a QP that does not
 * exist, is counted as a dropped RoCE frame.
 */
static void test_mcast_burst(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { N = 200, LEN = 4000 };
    static const uint8_t payload[LEN];
    uint8_t buf[LEN + 128];
    Env e;
    Roce f;
    size_t len;
    int i;

    rt_env_basic(&e, obj, data);
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'stop'}"));
    for (i = 0; i < N; i++) {
        rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, i, payload, LEN);
        len = rt_roce_build(&f, buf, sizeof(buf));
        g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    }
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'cont'}"));
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < N; i++) {
        g_usleep(10 * 1000);
    }
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, N);
}

/*
 * On a multicast segment the socket hears its own frames back; a socket
 * filter drops those whose source is the device's address before they
 * cost a read (patches/qemu/0006).  Of a foreign frame, five with the
 * device's own source address and another foreign one, all for a QP that
 * does not exist, only the two foreign frames may reach the device.
 */
static void test_mcast_own_echo(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t payload[64];
    uint8_t buf[256];
    Env e;
    Roce f;
    size_t len;
    int i;

    rt_env_basic(&e, obj, data);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, 0, payload,
                         sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < 1; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 1);

    memcpy(f.smac, rt_dev_mac, 6);
    for (i = 1; i <= 5; i++) {
        f.psn = i;
        len = rt_roce_build(&f, buf, sizeof(buf));
        g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    }
    memcpy(f.smac, rt_peer_mac, 6);
    f.psn = 6;
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < 2; i++) {
        g_usleep(10 * 1000);
    }
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 2);
}

/*
 * Reads datagrams from the group member @fd, cutting GRO batches at the
 * size the kernel names, until @n frames from the device came: their
 * lengths go to @len, their bytes to @buf at @stride apart.  Returns how
 * many reads carried more than one frame.
 */
static int mcast_gro_recv(int fd, int n, uint8_t *buf, size_t stride,
                          size_t *len)
{
    static uint8_t dgram[65536];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = dgram, .iov_len = sizeof(dgram) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    struct cmsghdr *cm;
    ssize_t size, off, seg;
    int got = 0, batches = 0, in_read, gso;
    Roce f;

    while (got < n) {
        g_assert_cmpint(poll(&pfd, 1, QRNIC_TIMEOUT_MS), ==, 1);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        size = recvmsg(fd, &msg, 0);
        g_assert_cmpint(size, >, 0);
        g_assert_false(msg.msg_flags & MSG_TRUNC);
        seg = size;
        for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
                memcpy(&gso, CMSG_DATA(cm), sizeof(gso));
                seg = gso;
            }
        }
        in_read = 0;
        for (off = 0; off < size; off += seg) {
            size_t l = MIN(seg, size - off);

            rt_roce_parse(dgram + off, l, &f);
            if (memcmp(f.smac, rt_dev_mac, 6)) {
                continue;       /* the test's own frame */
            }
            g_assert_cmpint(got, <, n);
            g_assert_cmpuint(l, <=, stride);
            memcpy(buf + got * stride, dgram + off, l);
            len[got++] = l;
            in_read++;
        }
        batches += in_read > 1;
    }
    return batches;
}

/*
 * coalesce=on on a multicast segment (patches/qemu/0007).  Four SENDs at
 * path MTU 4096 (32 KiB, 100 B, 100 B, 16 KiB: 14 frames of two sizes)
 * leave in GSO batches: a member taking GRO batches gets several frames
 * in one read, and cut where the kernel says they are every frame, whole
 * and in PSN order.  The other way, a GSO batch of six SENDs reaches the
 * device as six frames, each in its receive WQE.
 */
static void test_mcast_coalesce(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { N = 14, MTU = 4096, BIG = 8 * MTU, M = 6, MLEN = 512 };
    static const uint32_t msg_len[] = { BIG, 100, 100, 4 * MTU };
    static uint8_t frames[N][4352], pat[BIG];
    size_t flen[N], blen = 0, off = 0;
    uint8_t out[M * 640], got[MLEN], want[MLEN], opc;
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl = {};
    struct iovec iov = { .iov_base = out };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
    };
    struct cmsghdr *cm;
    int rx = ((int *)data)[1];
    struct rnic_cqe cqe;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint16_t seg;
    QRnicCq scq;
    QRnicMr big;
    Env e;
    Roce f;
    size_t len;
    int i, m;

    rt_env_basic(&e, obj, data);
    rts_mtu_4096(&e, &scq);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &big, e.pdn, RNIC_ACCESS_LOCAL_WRITE,
                                  BIG), ==, RNIC_CMD_OK);
    rt_fill_pattern(pat, BIG, 9);
    qtest_memwrite(qrnic_qts(e.r), big.buf, pat, BIG);
    for (m = 0; m < ARRAY_SIZE(msg_len); m++) {
        rt_sge_of(&sge, &big, 0, msg_len[m]);
        rt_send_wqe(&w, m, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    /*
     * Under qtest the device builds a frame every few microseconds, about
     * the netdev's quiet gap, so some would go alone.  A filter-buffer
     * holds them until the virtual clock passes its interval and then
     * hands them on back to back, as a busy device does.
     */
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpint(rt_sock_pending(rx), ==, 0);
    qtest_clock_step(qrnic_qts(e.r), RT_MCAST_FILTER_US * 1000);

    /*
     * The first frame goes alone (quiet before it), the rest of the long
     * message and the first short frame go together (a shorter frame ends
     * a batch), the second short frame alone (a longer one follows), and
     * the last message's four frames together.
     */
    g_assert_cmpint(mcast_gro_recv(rx, N, frames[0], sizeof(frames[0]), flen),
                    ==, 2);
    for (i = 0, m = 0; i < N; i++) {
        rt_roce_parse(frames[i], flen[i], &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
        len = MIN(MTU, msg_len[m] - off);
        if (msg_len[m] <= MTU) {
            opc = OPC_SEND_ONLY;
        } else {
            opc = !off ? OPC_SEND_FIRST :
                  off + len == msg_len[m] ? OPC_SEND_LAST : OPC_SEND_MIDDLE;
        }
        g_assert_cmphex(f.opcode, ==, opc);
        g_assert_cmpmem(f.payload, f.payload_len, pat + off, len);
        off += len;
        if (off == msg_len[m]) {
            off = 0;
            m++;
        }
    }
    g_assert_cmpint(m, ==, ARRAY_SIZE(msg_len));
    rt_roce_init(&f, OPC_ACK, e.qp.qpn, QP_SQ_PSN + N - 1);
    f.ack_req = false;
    f.syndrome = AETH_ACK(0x1f);
    f.msn = ARRAY_SIZE(msg_len);
    len = rt_roce_build(&f, out, sizeof(out));
    g_assert_cmpint(send(e.fd, out, len, 0), ==, len);
    expect_sends_done(&e, &scq, ARRAY_SIZE(msg_len), N);

    for (i = 0; i < M; i++) {
        rt_sge_of(&sge, &e.mr, i * MLEN, MLEN);
        qrnic_post_recv(e.r, &e.qp, 0x80 + i, &sge, 1);
    }
    qrnic_ring_rq(e.r, &e.qp);
    for (i = 0; i < M; i++) {
        rt_fill_pattern(want, MLEN, 0x20 + i);
        rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + i,
                             want, MLEN);
        len = rt_roce_build(&f, out + blen, sizeof(out) - blen);
        g_assert_true(i == 0 || len == blen / i);
        blen += len;
    }
    iov.iov_len = blen;
    seg = blen / M;
    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(seg));
    memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
    g_assert_cmpint(sendmsg(e.fd, &msg, 0), ==, blen);
    for (i = 0; i < M; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x80 + i);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, MLEN);
        rt_fill_pattern(want, MLEN, 0x20 + i);
        qtest_memread(qrnic_qts(e.r), e.mr.buf + i * MLEN, got, MLEN);
        g_assert_cmpmem(got, MLEN, want, MLEN);
    }
}

/*
 * coalesce= belongs to the datagram sockets: a stream socket netdev
 * (listen=) with it is refused with a message, and a multicast one with
 * it is taken (netdev_add goes through the same checks as -netdev).
 */
static void test_socket_coalesce_opts(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    QTestState *qts = qrnic_qts(obj);
    QDict *resp;
    char *mcast;

    resp = qtest_qmp(qts, "{'execute': 'netdev_add', 'arguments':"
                     " {'type': 'socket', 'id': 'rt-bad',"
                     " 'listen': '127.0.0.1:0', 'coalesce': true}}");
    g_assert_true(qdict_haskey(resp, "error"));
    g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(resp, "error"),
                                          "desc"),
                            "coalesce= is only valid with mcast= or udp="));
    qobject_unref(resp);
    mcast = g_strdup_printf("239.255.77.79:%d",
                            g_random_int_range(20000, 40000));
    qtest_qmp_assert_success(qts, "{'execute': 'netdev_add', 'arguments':"
                             " {'type': 'socket', 'id': 'rt-ok',"
                             " 'mcast': %s, 'localaddr': '127.0.0.1',"
                             " 'coalesce': true}}", mcast);
    g_free(mcast);
    qtest_qmp_assert_success(qts, "{'execute': 'netdev_del', 'arguments':"
                             " {'id': 'rt-ok'}}");
}

static void register_rnic_loss_test(void)
{
    rt_use_node_b(true);
    rt_add("rc-retransmit", test_rc_retransmit);
    rt_add("rc-probe-rtt", test_rc_probe_rtt);
    rt_add("rc-probe-last", test_rc_probe_last);
    rt_add("rc-probe-floor", test_rc_probe_floor);
    rt_add("rc-probe-nak", test_rc_probe_nak);
    rt_add("rc-nak-rcvd", test_rc_nak_rcvd);
    rt_add("rc-cwnd", test_rc_cwnd);
    rt_add("rc-ack-coalesce", test_rc_ack_coalesce);
    rt_add("ecn-ect", test_ecn_ect);
    rt_add_opts("ecn-off", test_ecn_off, ",ecn=off");
    rt_add_opts("ecn-ce-mark", test_ecn_ce_mark, ",ce-mark=100");
    rt_add("ecn-cnp-sent", test_ecn_cnp_sent);
    rt_add("ecn-cnp-rcvd", test_ecn_cnp_rcvd);
    rt_add("sr-requester", test_sr_requester);
    rt_add_opts("sr-requester-off", test_sr_requester_off,
                ",selective-repeat=off");
    rt_add("sr-requester-mid", test_sr_requester_mid);
    rt_add("sr-responder", test_sr_responder);
    rt_add("sr-responder-plain", test_sr_responder_plain);
    rt_add("sr-responder-limits", test_sr_responder_limits);
    rt_add_stream("stream-backpressure", test_stream_backpressure, false);
    rt_add_stream("stream-coalesce", test_stream_backpressure, true);
    rt_add_mcast("mcast-burst", test_mcast_burst);
    rt_add_mcast("mcast-own-echo", test_mcast_own_echo);
    rt_add_mcast_coalesce("mcast-coalesce", test_mcast_coalesce);
    rt_add("socket-coalesce-opts", test_socket_coalesce_opts);
    rt_add_stream_server("stream-reconnect", test_stream_reconnect);
    rt_add_mcast("mcast-empty-datagram", test_dgram_empty);
    rt_add_dgram("dgram-empty-datagram", test_dgram_empty);
    rt_use_node_b(false);
}

libqos_init(register_rnic_loss_test);

#endif /* _WIN32 */
