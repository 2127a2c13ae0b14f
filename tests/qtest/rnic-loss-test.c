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
    uint8_t payload[16], burst[3 * 256];
    size_t len;
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

    /*
     * One write: QEMU's one read takes all three.  Written one by one,
     * a slow test process let QEMU read the first alone, queue it for
     * the stopped VM and stop reading, so it arrived ahead of the rest.
     */
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'stop'}"));
    for (i = 0, len = 0; i < 3; i++) {
        uint32_t be_len;
        size_t n;

        rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + i,
                             payload, sizeof(payload));
        g_assert_true(f.ack_req);
        n = rt_roce_build(&f, burst + len + 4, sizeof(burst) - len - 4);
        be_len = htonl(n);
        memcpy(burst + len, &be_len, 4);
        len += 4 + n;
    }
    g_assert_cmpint(send(e.fd, burst, len, 0), ==, len);
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
    rt_use_node_b(false);
}

libqos_init(register_rnic_loss_test);

#endif /* _WIN32 */
