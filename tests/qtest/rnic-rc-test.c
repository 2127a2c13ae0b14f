/*
 * QTest testcases for the rnic RoCEv2 RNIC: the RC transport (WQEs, frames
 * sent and received, ACK/NAK, retransmission), reset and UD/GSI
 *
 * The device sits on a socketpair netdev, so a test reads every frame the
 * device sends and injects frames of its own.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-test-common.h"

#ifndef _WIN32

/* ---- 7. bad WQEs ---- */

static void test_wqe_bad_opcode(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 0x1111, 0x3f, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    rt_send_wqe(&w, 0x2222, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);

    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x1111);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);

    /* the QP is in ERR, so the good WQE behind it is flushed */
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x2222);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 1);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CQE_ERR), ==, 2);
    rt_assert_no_frame(&e, 50);

    /* a WQE posted while in ERR is flushed as well */
    rt_send_wqe(&w, 0x3333, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x3333);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
}

static void test_wqe_bad_lkey(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    sge.lkey = cpu_to_le32(e.mr.lkey + 0x100);
    rt_send_wqe(&w, 0x77, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
    rt_assert_no_frame(&e, 50);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

static void test_wqe_bounds(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    /* SGE runs past the end of the MR */
    rt_sge_of(&sge, &e.mr, QRNIC_PAGE - 8, 16);
    rt_send_wqe(&w, 0x88, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x88);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
    rt_assert_no_frame(&e, 50);
}

static void test_wqe_too_many_sge(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge[3];
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);     /* max_send_sge 2 */
    rt_sge_of(&sge[0], &e.mr, 0, 4);
    rt_sge_of(&sge[1], &e.mr, 4, 4);
    rt_sge_of(&sge[2], &e.mr, 8, 4);
    rt_send_wqe(&w, 0x99, RNIC_WR_SEND, 3);
    qrnic_post_send(e.r, &e.qp, &w, sge, 3);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x99);
    g_assert_true(cqe.status == RNIC_WC_LOC_QP_OP_ERR ||
                  cqe.status == RNIC_WC_LOC_LEN_ERR);
    rt_assert_no_frame(&e, 50);
}

static void test_wqe_inline_too_long(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);     /* max_inline 64 */
    rt_send_wqe(&w, 0xaa, RNIC_WR_SEND, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(65);
    qrnic_post_send(e.r, &e.qp, &w, NULL, 0);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xaa);
    g_assert_true(cqe.status == RNIC_WC_LOC_QP_OP_ERR ||
                  cqe.status == RNIC_WC_LOC_LEN_ERR);
    rt_assert_no_frame(&e, 50);
}

/* A doorbell on a QP in RESET or INIT sends nothing. */
static void test_sq_not_ready(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_assert_no_frame(&e, 100);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
}

/* ---- 8. RC SEND on the wire ---- */

static void test_rc_send_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge[2];
    struct rnic_cqe cqe;
    uint8_t payload[100];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_fill_pattern(payload, sizeof(payload), 0x31);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf + 0x100, payload, 60);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf + 0x800, payload + 60, 40);
    rt_sge_of(&sge[0], &e.mr, 0x100, 60);
    rt_sge_of(&sge[1], &e.mr, 0x800, 40);
    rt_send_wqe(&w, 0xabcdef01, RNIC_WR_SEND, 2);
    qrnic_post_send(e.r, &e.qp, &w, sge, 2);
    qrnic_ring_sq(e.r, &e.qp);

    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_true(f.ack_req);
    g_assert_cmpuint(f.sport, >=, 0xc000);
    g_assert_cmpuint(f.ttl, ==, 64);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));
    /* one frame on the wire, counted once */
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_BYTES), ==, e.frame_len);

    /* not complete before the ACK */
    rt_assert_cq_empty(&e, &e.cq);

    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xabcdef01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 1);
}

/* Two messages, and an inline one: consecutive PSNs. */
static void test_rc_send_tx_inline(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;
    uint8_t payload[48];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_fill_pattern(payload, sizeof(payload), 0x77);

    rt_send_wqe(&w, 5, RNIC_WR_SEND_IMM, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(sizeof(payload));
    stl_be_p(&w.imm_inv, 0x11223344);     /* as on the wire */
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + sizeof(w), payload, sizeof(payload));
    qtest_memwrite(qrnic_qts(e.r), e.qp.sq_buf, buf, sizeof(buf));
    e.qp.sq_pi = 1;
    qrnic_ring_sq(e.r, &e.qp);

    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY_IMM);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmphex(f.imm, ==, 0x11223344);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));

    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 5);
}

/* ---- 9. RC SEND received ---- */

static void post_recv_buf(Env *e, uint64_t wr_id, uint64_t off, uint32_t len)
{
    struct rnic_sge sge;

    rt_sge_of(&sge, &e->mr, off, len);
    qrnic_post_recv(e->r, &e->qp, wr_id, &sge, 1);
    qrnic_ring_rq(e->r, &e->qp);
}

/* An ACK (any credit count) or the exact NAK/RNR NAK @syndrome. */
static void test_rc_send_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[77], got[128], zero[128] = { 0 };
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0xfeed, 0x200, 128);
    qrnic_settle(e.r);

    rt_fill_pattern(payload, sizeof(payload), 0x90);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN,
                         payload, sizeof(payload));
    rt_send_roce(&e, &f);

    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xfeed);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);

    qtest_memread(qrnic_qts(e.r), e.mr.buf + 0x200, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(payload), payload, sizeof(payload));
    /* nothing beyond the message was written */
    g_assert_cmpmem(got + sizeof(payload), sizeof(got) - sizeof(payload),
                    zero, sizeof(got) - sizeof(payload));

    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_BYTES), >=,
                     sizeof(payload));
}

static void test_rc_send_rx_bad_icrc(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[40], buf[256], got[40], zero[40] = { 0 };
    size_t len;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 1, 0, 64);
    qrnic_settle(e.r);

    rt_fill_pattern(payload, sizeof(payload), 0x10);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN,
                         payload, sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    /* flip one ICRC bit */
    buf[L3_OFF + lduw_be_p(buf + L3_OFF + 2) - 1] ^= 0x10;
    rt_sock_send(e.fd, buf, len);
    qrnic_settle(e.r);

    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);
    rt_assert_cq_empty(&e, &e.cq);
    rt_assert_no_frame(&e, 50);
    qtest_memread(qrnic_qts(e.r), e.mr.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));

    /* a payload bit flipped: the ICRC catches that too */
    len = rt_roce_build(&f, buf, sizeof(buf));
    buf[BTH_OFF + BTH_LEN + 3] ^= 1;
    rt_sock_send(e.fd, buf, len);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 2);
    rt_assert_cq_empty(&e, &e.cq);

    /* the good frame is then accepted */
    rt_send_roce(&e, &f);
    {
        struct rnic_cqe cqe;

        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    }
}

/* Frames that are not for a QP of ours are dropped and counted. */
static void test_rx_dropped(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint8_t buf[256];
    size_t len;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 1, 0, 64);
    qrnic_settle(e.r);

    /* unknown QPN */
    rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, QP_RQ_PSN,
                         payload, sizeof(payload));
    rt_send_roce(&e, &f);
    /* unknown BTH opcode (ICRC correct) */
    rt_roce_init(&f, 0x1f, e.qp.qpn, QP_RQ_PSN);
    rt_send_roce(&e, &f);
    /* truncated: IP length says more than the frame has */
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN,
                         payload, sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    rt_sock_send(e.fd, buf, BTH_OFF + 6);
    /* bad IPv4 header checksum */
    buf[L3_OFF + 10] ^= 0xff;
    rt_sock_send(e.fd, buf, len);
    qrnic_settle(e.r);

    /* the first two are RoCE for us; the last two may count as Ethernet */
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), >=, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) +
                     qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 4);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);
    rt_assert_cq_empty(&e, &e.cq);
    rt_assert_no_frame(&e, 50);
}

/* Out of order, duplicate and RNR cases of the responder. */
static void test_rc_rx_psn(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_fill_pattern(payload, sizeof(payload), 0x42);
    post_recv_buf(&e, 0x10, 0, 64);
    qrnic_settle(e.r);

    /* ahead of the expected PSN: one sequence NAK naming the expected PSN */
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + 5,
                         payload, sizeof(payload));
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_NAK(NAK_PSN_SEQ), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_SENT), ==, 1);
    /* ... and only one per gap */
    f.psn = QP_RQ_PSN + 6;
    f.ack_req = false;
    rt_send_roce(&e, &f);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_SENT), ==, 1);
    f.psn = QP_RQ_PSN + 7;
    f.ack_req = true;
    rt_send_roce(&e, &f);
    rt_assert_no_frame(&e, 100);
    /* unless a packet seen ahead comes again asking (a tail-loss probe) */
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_NAK(NAK_PSN_SEQ), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_SENT), ==, 2);
    rt_assert_cq_empty(&e, &e.cq);

    /* in order: accepted */
    f.psn = QP_RQ_PSN;
    rt_send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x10);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);

    /* the same PSN again is a duplicate: re-ACKed, no second CQE */
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_DUP_REQ), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);

    /* next PSN with no receive WQE posted: RNR NAK with min_rnr_timer */
    f.psn = QP_RQ_PSN + 1;
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_RNR(12), QP_RQ_PSN + 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RNR_NAK_SENT), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);

    /* once a WQE is posted, the retried packet lands */
    post_recv_buf(&e, 0x11, 64, 64);
    qrnic_settle(e.r);
    rt_send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x11);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 1);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 1);
}

/* A message larger than the receive buffer fails with LOC_LEN_ERR. */
static void test_rc_rx_too_long(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[64];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0x21, 0, 32);
    qrnic_settle(e.r);
    rt_fill_pattern(payload, sizeof(payload), 1);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN,
                         payload, sizeof(payload));
    rt_send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x21);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_LEN_ERR);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ACK);
    g_assert_cmphex(f.syndrome, ==, AETH_NAK(NAK_INV_REQ));
}

/* ---- 10. RDMA WRITE ---- */

static void test_rc_write_bad_rkey(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[32], got[64], zero[64] = { 0 };
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_fill_pattern(payload, sizeof(payload), 0xc0);

    rt_roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = e.mr.buf + 16;
    f.rkey = e.mr.rkey ^ 0x01;         /* wrong key byte */
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);

    qtest_memread(qrnic_qts(e.r), e.mr.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

static void test_rc_write_bounds(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[32], got[32], zero[32] = { 0 };
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_fill_pattern(payload, sizeof(payload), 0xc0);

    /* runs 16 bytes past the end of the MR */
    rt_roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = e.mr.buf + QRNIC_PAGE - 16;
    f.rkey = e.mr.rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + QRNIC_PAGE - 16, got, 16);
    g_assert_cmpmem(got, 16, zero, 16);
}

static void test_rc_write_no_access(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Env e;
    QRnicMr ro;
    uint8_t payload[16], got[16], zero[16] = { 0 };
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    /* an MR without REMOTE_WRITE */
    g_assert_cmpuint(qrnic_reg_mr(e.r, &ro, e.pdn, RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_READ, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
    rt_fill_pattern(payload, sizeof(payload), 0xd0);
    rt_roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = ro.buf;
    f.rkey = ro.rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), ro.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
}

/* A good WRITE lands across a two-page MR given as a levels-1 list. */
static void test_rc_write_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t p0, p1, list, ents[2], iova = 0x7f0000000000ull;
    uint32_t out[6], rkey;
    uint8_t payload[64], got[64];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    p1 = qrnic_alloc(e.r, QRNIC_PAGE);
    p0 = qrnic_alloc(e.r, QRNIC_PAGE);      /* not contiguous with p1 */
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    ents[0] = cpu_to_le64(p0);
    ents[1] = cpu_to_le64(p1);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(e.pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE |
                                      RNIC_ACCESS_REMOTE_WRITE);
    cmd.u.reg_mr.iova = cpu_to_le64(iova);
    cmd.u.reg_mr.length = cpu_to_le64(2 * QRNIC_PAGE);
    cmd.u.reg_mr.pages.addr = cpu_to_le64(list);
    cmd.u.reg_mr.pages.npages = cpu_to_le32(2);
    cmd.u.reg_mr.pages.page_shift = 12;
    cmd.u.reg_mr.pages.levels = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    rkey = out[RNIC_OUT_RKEY];

    rt_fill_pattern(payload, sizeof(payload), 0xe0);
    rt_roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = iova + QRNIC_PAGE - 24;
    f.rkey = rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);

    qtest_memread(qrnic_qts(e.r), p0 + QRNIC_PAGE - 24, got, 24);
    qtest_memread(qrnic_qts(e.r), p1, got + 24, 40);
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));
    /* a WRITE without immediate makes no CQE */
    rt_assert_cq_empty(&e, &e.cq);
}

/* ---- QP to ERR flushes posted receives ---- */

static void test_qp_err_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0x61, 0, 64);
    post_recv_buf(&e, 0x62, 64, 64);
    qrnic_settle(e.r);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x61);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x62);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    rt_assert_cq_empty(&e, &e.cq);
}

/* ---- CQ overrun is never silent ---- */

static void test_cq_overrun(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicCq small;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_eqe eqe;
    bool cq_err = false;
    unsigned i;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_cq(e.r, &small, 1, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, e.pdn,
                                     small.cqn, small.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    /* 4 bad WQEs on a 2-entry CQ that nobody consumes */
    rt_sge_of(&sge, &e.mr, 0, 8);
    sge.lkey = cpu_to_le32(0xdead00);
    for (i = 0; i < 4; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    while (qrnic_eq_poll(e.r, &e.eq, &eqe)) {
        if (eqe.type == RNIC_EQE_CQ_ERR) {
            g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, small.cqn);
            cq_err = true;
        }
    }
    g_assert_true(cq_err);
}

/* ---- 11. reset ---- */

static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t pdn, old_qpn;
    QRnicCq cq;
    Roce f;
    unsigned i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    old_qpn = e.qp.qpn;
    rt_sge_of(&sge, &e.mr, 0, 8);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);

    qrnic_reset(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CTRL), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    for (i = 0; i < RNIC_CNT_MAX; i++) {
        g_assert_cmpuint(qrnic_counter(e.r, i), ==, 0);
    }

    /* no retransmission of the QP that no longer exists */
    qtest_clock_step(qrnic_qts(e.r), 500 * 1000 * 1000);
    rt_assert_no_frame(&e, 100);

    /* handles start again from the bottom */
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_eq(e.r, &e.eq, 0, 4), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, e.pdn);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(cq.cqn, ==, e.cq.cqn);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, pdn, cq.cqn,
                                     cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    g_assert_cmpuint(e.qp.qpn, ==, old_qpn);
    /* the old GID is gone: an AV naming it is refused */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_ERR_PARAM);
}

/* Clearing ENABLE without RESET does the same. */
static void test_disable(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn;

    rt_env_basic(&e, obj, data);
    qrnic_writel(e.r, RNIC_REG_CTRL, 0);
    qrnic_settle(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, 0);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, 1);
}

/* ---- GSI QP ---- */

static void test_gsi_qp(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp gsi, gsi2;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_qp(e.r, &gsi, RNIC_QPT_GSI, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(gsi.qpn, ==, 1);
    g_assert_cmpuint(qrnic_create_qp(e.r, &gsi2, RNIC_QPT_GSI, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     !=, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RESET);
    g_assert_cmpuint(e.qp.qpn, ==, 2);
}

/* ---- UD and GSI send: the DETH ---- */

#define OPC_UD_SEND_ONLY    0x64
#define DETH_LEN            8
#define GSI_QKEY            0x80010000u
#define UD_QKEY             0x11223344u

/* A UD/GSI QP on the env's PD and CQ, moved to RTS with @qkey. */
static void env_ud_qp(Env *e, QRnicQp *qp, uint8_t type, uint32_t qkey)
{
    struct rnic_qp_attr a;
    uint32_t port = type == RNIC_QPT_UD ? RNIC_QP_ATTR_PORT : 0;

    g_assert_cmpuint(qrnic_create_qp(e->r, qp, type, e->pdn, e->cq.cqn,
                                     e->cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_INIT);
    a.qkey = cpu_to_le32(qkey);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PKEY_INDEX |
                                     RNIC_QP_ATTR_QKEY | port, &a),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_SQ_PSN, &a),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_state(e, qp), ==, RNIC_QPS_RTS);
}

/*
 * Posts and rings a signaled UD SEND of @len bytes from the MR at offset
 * 0 to PEER_QPN, with the address vector at offset 64 of the WQE.
 */
static void post_ud_send_to(Env *e, QRnicQp *qp, uint64_t wr_id,
                            uint32_t qkey, uint8_t sgid_index, uint32_t len,
                            uint32_t dqpn, uint32_t dip, const uint8_t *dmac)
{
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    struct rnic_send_wqe w;
    struct rnic_av av = { 0 };
    struct rnic_sge sge;
    uint32_t idx = qp->sq_pi & ((1u << qp->sq_log_size) - 1);

    rt_send_wqe(&w, wr_id, RNIC_WR_SEND, 1);
    w.ud_qpn = cpu_to_le32(dqpn);
    w.ud_qkey = cpu_to_le32(qkey);
    rt_ipv4_gid(dip, av.dgid);
    memcpy(av.dmac, dmac, 6);
    av.sgid_index = sgid_index;
    av.hop_limit = 64;
    av.net_type = RNIC_NET_IPV4;
    rt_sge_of(&sge, &e->mr, 0, len);
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + 64, &av, sizeof(av));
    memcpy(buf + 128, &sge, sizeof(sge));
    qtest_memwrite(qrnic_qts(e->r), qp->sq_buf + idx * RNIC_SQ_WQE_SIZE,
                   buf, sizeof(buf));
    qp->sq_pi++;
    qrnic_ring_sq(e->r, qp);
}

static void post_ud_send(Env *e, QRnicQp *qp, uint64_t wr_id, uint32_t qkey,
                         uint8_t sgid_index, uint32_t len)
{
    post_ud_send_to(e, qp, wr_id, qkey, sgid_index, len, PEER_QPN, PEER_IP,
                    rt_peer_mac);
}

/* The next frame is a UD SEND from @qp with @qkey, and it completes. */
static void expect_ud_send(Env *e, QRnicQp *qp, uint64_t wr_id, uint32_t qkey,
                           const uint8_t *payload, uint32_t len)
{
    struct rnic_cqe cqe;
    Roce f;

    rt_recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_UD_SEND_ONLY);
    g_assert_cmpuint(f.payload_len, ==, DETH_LEN + len);
    g_assert_cmphex((uint32_t)ldl_be_p(f.payload), ==, qkey);
    g_assert_cmphex(rt_ld24(f.payload + 5), ==, qp->qpn);
    g_assert_cmpmem(f.payload + DETH_LEN, len, payload, len);

    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qp->qpn);
}

/*
 * A UD/GSI WQE qkey with the top bit set means the QP's own: the fixed
 * GSI qkey for QP1 (whatever MODIFY_QP set), the MODIFY_QP one for UD.
 * A qkey with the top bit clear goes out as it is.
 */
static void test_ud_gsi_qkey(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp gsi, ud;
    uint8_t payload[32];

    rt_env_basic(&e, obj, data);
    rt_fill_pattern(payload, sizeof(payload), 0x42);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, payload, sizeof(payload));

    env_ud_qp(&e, &gsi, RNIC_QPT_GSI, 0x1234);
    g_assert_cmpuint(gsi.qpn, ==, 1);
    post_ud_send(&e, &gsi, 0x101, 0x80000000u, 0, sizeof(payload));
    expect_ud_send(&e, &gsi, 0x101, GSI_QKEY, payload, sizeof(payload));
    post_ud_send(&e, &gsi, 0x102, 0x5678, 0, sizeof(payload));
    expect_ud_send(&e, &gsi, 0x102, 0x5678, payload, sizeof(payload));

    env_ud_qp(&e, &ud, RNIC_QPT_UD, UD_QKEY);
    g_assert_cmpuint(ud.qpn, >=, 2);
    post_ud_send(&e, &ud, 0x201, 0x80000000u, 0, sizeof(payload));
    expect_ud_send(&e, &ud, 0x201, UD_QKEY, payload, sizeof(payload));
    post_ud_send(&e, &ud, 0x202, 0x7654321, 0, sizeof(payload));
    expect_ud_send(&e, &ud, 0x202, 0x7654321, payload, sizeof(payload));

    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 4);
    rt_assert_no_frame(&e, 50);
}

/* A UD WQE whose AV names a GID that does not exist sends nothing. */
static void test_ud_bad_sgid(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp ud;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    env_ud_qp(&e, &ud, RNIC_QPT_UD, UD_QKEY);
    post_ud_send(&e, &ud, 0x301, UD_QKEY, 3, 16);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x301);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    rt_assert_no_frame(&e, 50);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
}

/* ---- multicast ---- */

#define MCAST_IP        0xef010203u     /* 239.1.2.3 */
static const uint8_t mcast_mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };

static uint8_t mcast_cmd(Env *e, uint8_t op, uint32_t qpn, uint32_t ip)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, op);
    cmd.u.mcast.qpn = cpu_to_le32(qpn);
    rt_ipv4_gid(ip, cmd.u.mcast.gid);
    return qrnic_cmd(e->r, &cmd, NULL);
}

/*
 * Sends to the group from one UD QP: the frame goes to the wire with
 * destination QP 0xffffff, and the other UD QP of this device gets it
 * while it is a member.  Returns how many receive CQEs came.
 */
static int mcast_round(Env *e, QRnicQp *tx, QRnicQp *rx, uint64_t wr_id,
                       const uint8_t *payload, uint32_t len)
{
    struct rnic_cqe cqe;
    uint8_t got[64];
    int recvs = 0;
    Roce f;

    post_ud_send_to(e, tx, wr_id, UD_QKEY, 0, len, 0xffffff, MCAST_IP,
                    mcast_mac);
    rt_recv_roce_any(e, &f);
    g_assert_cmphex(f.dqpn, ==, 0xffffff);
    g_assert_cmphex(f.dip, ==, MCAST_IP);
    g_assert_cmpmem(f.dmac, 6, mcast_mac, 6);
    qrnic_settle(e->r);
    while (qrnic_cq_poll(e->r, &e->cq, &cqe)) {
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        if (le32_to_cpu(cqe.qpn) == tx->qpn) {
            g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
            continue;
        }
        g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, rx->qpn);
        g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
        g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, tx->qpn);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + len);
        qtest_memread(qrnic_qts(e->r), e->mr.buf + 256 + 40, got, len);
        g_assert_cmpmem(got, len, payload, len);
        recvs++;
    }
    return recvs;
}

static void test_ud_mcast(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp tx, rx;
    struct rnic_sge sge;
    uint8_t payload[32];

    rt_env_basic(&e, obj, data);
    rt_fill_pattern(payload, sizeof(payload), 0x6d);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, payload, sizeof(payload));
    env_ud_qp(&e, &tx, RNIC_QPT_UD, UD_QKEY);
    env_ud_qp(&e, &rx, RNIC_QPT_UD, UD_QKEY);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);

    /* A unicast GID, an RC QP, a QP not in the group: refused. */
    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_ATTACH_MCAST, rx.qpn, PEER_IP),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_ATTACH_MCAST, e.qp.qpn, MCAST_IP),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_DETACH_MCAST, rx.qpn, MCAST_IP),
                     ==, RNIC_CMD_ERR_PARAM);
    /* Not a member yet: the frame only goes to the wire. */
    rt_sge_of(&sge, &e.mr, 256, 256);
    qrnic_post_recv(e.r, &rx, 0x55, &sge, 1);
    qrnic_ring_rq(e.r, &rx);
    g_assert_cmpint(mcast_round(&e, &tx, &rx, 0x500, payload, 32), ==, 0);

    /* Joining twice is joining once. */
    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_ATTACH_MCAST, rx.qpn, MCAST_IP),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_ATTACH_MCAST, rx.qpn, MCAST_IP),
                     ==, RNIC_CMD_OK);
    g_assert_cmpint(mcast_round(&e, &tx, &rx, 0x501, payload, 32), ==, 1);

    g_assert_cmpuint(mcast_cmd(&e, RNIC_CMD_DETACH_MCAST, rx.qpn, MCAST_IP),
                     ==, RNIC_CMD_OK);
    qrnic_post_recv(e.r, &rx, 0x56, &sge, 1);
    qrnic_ring_rq(e.r, &rx);
    g_assert_cmpint(mcast_round(&e, &tx, &rx, 0x502, payload, 32), ==, 0);
}

static void test_rc_rx_too_many_sge(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Env e;
    struct rnic_sge sge[3];
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);     /* max_recv_sge 2 */
    rt_sge_of(&sge[0], &e.mr, 0, 8);
    rt_sge_of(&sge[1], &e.mr, 8, 8);
    rt_sge_of(&sge[2], &e.mr, 16, 8);
    qrnic_post_recv(e.r, &e.qp, 0x71, sge, 3);
    qrnic_ring_rq(e.r, &e.qp);
    qrnic_settle(e.r);

    rt_fill_pattern(payload, sizeof(payload), 3);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN,
                         payload, sizeof(payload));
    rt_send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x71);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_LEN_ERR);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
}

/* ---- registration ---- */

/* ---- RoCE v1 ---- */

#define V1_ETHERTYPE    0x8915
#define V1_GRH_OFF      ETH_HLEN
#define V1_BTH_OFF      (ETH_HLEN + 40)
#define V1_GID_INDEX    1

/*
 * IBTA's ICRC, bit by bit: eight 0xff bytes for the LRH, the GRH with
 * traffic class, flow label and hop limit set to ones, the BTH with its
 * resv8a byte set to ones, then the rest up to the ICRC.
 */
static uint32_t v1_icrc(const uint8_t *grh, size_t len)
{
    uint8_t m[8 + 40 + BTH_LEN];
    uint32_t crc = 0xffffffffu;
    size_t i;
    int b;

    g_assert_cmpuint(len, >=, 40 + BTH_LEN);
    memset(m, 0xff, 8);
    memcpy(m + 8, grh, 40 + BTH_LEN);
    m[8] |= 0x0f;
    m[9] = m[10] = m[11] = m[8 + 7] = 0xff;
    m[8 + 40 + 4] = 0xff;
    for (i = 0; i < len + 8; i++) {
        crc ^= i < sizeof(m) ? m[i] : grh[i - 8];
        for (b = 0; b < 8; b++) {
            crc = (crc >> 1) ^ ((crc & 1) ? 0xedb88320u : 0);
        }
    }
    return ~crc;
}

/*
 * A RoCE v1 frame from the peer to @dip around @n bytes from the BTH on
 * (pad included); the ICRC is right if @good.
 */
static size_t v1_frame(uint8_t *buf, uint32_t dip, const uint8_t *bth,
                       size_t n, bool good)
{
    size_t len = V1_BTH_OFF + n + 4;

    memcpy(buf, rt_dev_mac, 6);
    memcpy(buf + 6, rt_peer_mac, 6);
    rt_st16(buf + 12, V1_ETHERTYPE);
    stl_be_p(buf + V1_GRH_OFF, 0x6a0abcdeu);    /* tclass, flow label */
    rt_st16(buf + V1_GRH_OFF + 4, n + 4);
    buf[V1_GRH_OFF + 6] = 0x1b;
    buf[V1_GRH_OFF + 7] = 1;
    rt_ipv4_gid(PEER_IP, buf + V1_GRH_OFF + 8);
    rt_ipv4_gid(dip, buf + V1_GRH_OFF + 24);
    memcpy(buf + V1_BTH_OFF, bth, n);
    stl_le_p(buf + V1_BTH_OFF + n, v1_icrc(buf + V1_GRH_OFF, 40 + n) ^ !good);
    return len;
}

static void v1_bth(uint8_t *b, uint8_t opc, uint32_t dqpn, uint32_t psn,
                   bool ack_req)
{
    memset(b, 0, BTH_LEN);
    b[0] = opc;
    rt_st16(b + 2, 0xffff);
    stl_be_p(b + 4, dqpn);
    stl_be_p(b + 8, psn | (ack_req ? 0x80000000u : 0));
}

/* The next frame must be v1 from our v1 GID to the peer's; returns it. */
static size_t v1_recv(Env *e, uint8_t opc, uint32_t psn)
{
    uint8_t gid[16];
    ssize_t len = rt_sock_recv(e->fd, e->frame, sizeof(e->frame),
                               QRNIC_TIMEOUT_MS);
    const uint8_t *grh = e->frame + V1_GRH_OFF;
    size_t paylen;

    g_assert_cmpint(len, >=, V1_BTH_OFF + BTH_LEN + 4);
    g_assert_cmpmem(e->frame, 6, rt_peer_mac, 6);
    g_assert_cmpmem(e->frame + 6, 6, rt_dev_mac, 6);
    g_assert_cmphex(lduw_be_p(e->frame + 12), ==, V1_ETHERTYPE);
    g_assert_cmphex(grh[0] >> 4, ==, 6);
    g_assert_cmphex(grh[6], ==, 0x1b);          /* next header: BTH */
    g_assert_cmpuint(grh[7], ==, 64);           /* the AV's hop limit */
    rt_ipv4_gid(DEV_IP, gid);
    g_assert_cmpmem(grh + 8, 16, gid, 16);
    rt_ipv4_gid(PEER_IP, gid);
    g_assert_cmpmem(grh + 24, 16, gid, 16);
    paylen = lduw_be_p(grh + 4);
    g_assert_cmpuint(V1_BTH_OFF + paylen, <=, len);
    g_assert_cmphex(e->frame[V1_BTH_OFF], ==, opc);
    g_assert_cmphex(rt_ld24(e->frame + V1_BTH_OFF + 5), ==, PEER_QPN);
    g_assert_cmphex(rt_ld24(e->frame + V1_BTH_OFF + 9), ==, psn);
    g_assert_cmphex((uint32_t)ldl_le_p(grh + 40 + paylen - 4), ==,
                    v1_icrc(grh, 40 + paylen - 4));
    e->frame_len = V1_BTH_OFF + paylen;
    return e->frame_len;
}

static void v1_set_gid(Env *e, uint32_t index, uint32_t ip)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_SET_GID);
    cmd.u.gid.index = cpu_to_le32(index);
    cmd.u.gid.type = RNIC_GID_ROCE_V1;
    rt_ipv4_gid(ip, cmd.u.gid.gid);
    memcpy(cmd.u.gid.mac, rt_dev_mac, 6);
    cmd.u.gid.vlan_id = cpu_to_le16(0xffff);
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* The env's RC QP, addressed through the v1 GID, up to RTS. */
static void v1_rc_qp(Env *e)
{
    static const struct {
        uint8_t state;
        uint32_t mask;
    } steps[] = {
        { RNIC_QPS_INIT, MASK_TO_INIT },
        { RNIC_QPS_RTR, MASK_TO_RTR },
        { RNIC_QPS_RTS, MASK_TO_RTS },
    };
    struct rnic_qp_attr a;
    unsigned i;

    g_assert_cmpuint(qrnic_create_qp(e->r, &e->qp, RNIC_QPT_RC, e->pdn,
                                     e->cq.cqn, e->cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    for (i = 0; i < ARRAY_SIZE(steps); i++) {
        rt_attr_for(&a, steps[i].state);
        a.av.sgid_index = V1_GID_INDEX;
        a.av.net_type = RNIC_NET_ROCE_V1;
        g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, steps[i].mask, &a),
                         ==, RNIC_CMD_OK);
    }
}

/*
 * An RC QP whose source GID is v1 sends v1 (EtherType 0x8915, GRH, BTH,
 * IBTA ICRC), takes v1 requests and ACKs them in v1, and hears nothing
 * in v2 even from the right peer at the right address.
 */
static void test_roce_v1_rc(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t payload[100], bth[BTH_LEN + 4 + 32], buf[256], got[32];
    Roce f;

    rt_env_basic(&e, obj, data);
    v1_set_gid(&e, V1_GID_INDEX, DEV_IP);
    v1_rc_qp(&e);
    rt_fill_pattern(payload, sizeof(payload), 0x51);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf + 0x100, payload,
                   sizeof(payload));

    /* requester: a v1 SEND, completed by a v1 ACK */
    rt_sge_of(&sge, &e.mr, 0x100, sizeof(payload));
    rt_send_wqe(&w, 0x7101, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    v1_recv(&e, OPC_SEND_ONLY, QP_SQ_PSN);
    g_assert_cmpuint(e.frame_len, ==, V1_BTH_OFF + BTH_LEN +
                     sizeof(payload) + 4);
    g_assert_cmpmem(e.frame + V1_BTH_OFF + BTH_LEN, sizeof(payload),
                    payload, sizeof(payload));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_ROCE_V1), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);

    v1_bth(bth, OPC_ACK, e.qp.qpn, QP_SQ_PSN, false);
    stl_be_p(bth + BTH_LEN, AETH_ACK(0x1f) << 24 | 1);
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, BTH_LEN + 4, true));
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x7101);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ROCE_V1), ==, 1);

    /* responder: a v1 SEND is received and ACKed in v1 */
    post_recv_buf(&e, 0x7102, 0x400, sizeof(got));
    qrnic_settle(e.r);
    v1_bth(bth, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, true);
    rt_fill_pattern(bth + BTH_LEN, 32, 0x77);
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, BTH_LEN + 32, true));
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x7102);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 32);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + 0x400, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), bth + BTH_LEN, 32);
    v1_recv(&e, OPC_ACK, QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_ROCE_V1), ==, 2);

    /* the same request in v2 is not the connected peer's version */
    post_recv_buf(&e, 0x7103, 0x400, sizeof(got));
    qrnic_settle(e.r);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + 1,
                         payload, 32);
    rt_send_roce(&e, &f);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);
    rt_assert_no_frame(&e, 50);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 2);
}

/* Bad v1 frames are dropped and counted, and nothing answers them. */
static void test_roce_v1_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint8_t bth[BTH_LEN + 16], buf[256];
    size_t len;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 1, 0, 64);
    qrnic_settle(e.r);
    v1_bth(bth, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, true);
    memset(bth + BTH_LEN, 0x5a, 16);

    /* our address, but only as a v2 GID: not ours in v1 */
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, sizeof(bth), true));
    /* a GID that is nobody's here */
    v1_set_gid(&e, V1_GID_INDEX, DEV_IP);
    rt_sock_send(e.fd, buf, v1_frame(buf, 0x0a000009, bth, sizeof(bth),
                                     true));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ROCE_V1), ==, 0);

    /* a bad ICRC, then a next header that is not a BTH */
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, sizeof(bth), false));
    len = v1_frame(buf, DEV_IP, bth, sizeof(bth), true);
    buf[V1_GRH_OFF + 6] = 17;
    rt_sock_send(e.fd, buf, len);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 4);

    /* an intact v1 frame for a QP that speaks v2 */
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, sizeof(bth), true));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ROCE_V1), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 5);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);
    rt_assert_cq_empty(&e, &e.cq);
    rt_assert_no_frame(&e, 50);
}

/*
 * UD over v1: the WQE's AV through the v1 GID sends v1, and a received
 * v1 datagram lands behind the very GRH it came with, its CQE saying v1.
 */
static void test_roce_v1_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp ud;
    struct rnic_cqe cqe;
    struct rnic_sge sge;
    uint8_t payload[24], bth[BTH_LEN + DETH_LEN + 24], buf[256], got[64];

    rt_env_basic(&e, obj, data);
    v1_set_gid(&e, V1_GID_INDEX, DEV_IP);
    env_ud_qp(&e, &ud, RNIC_QPT_UD, UD_QKEY);
    rt_fill_pattern(payload, sizeof(payload), 0x24);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, payload, sizeof(payload));

    post_ud_send(&e, &ud, 0x7201, UD_QKEY, V1_GID_INDEX, sizeof(payload));
    v1_recv(&e, OPC_UD_SEND_ONLY, QP_SQ_PSN);
    g_assert_cmphex((uint32_t)ldl_be_p(e.frame + V1_BTH_OFF + BTH_LEN), ==,
                    UD_QKEY);
    g_assert_cmpmem(e.frame + V1_BTH_OFF + BTH_LEN + DETH_LEN,
                    sizeof(payload), payload, sizeof(payload));
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    rt_sge_of(&sge, &e.mr, 0x200, sizeof(got));
    qrnic_post_recv(e.r, &ud, 0x7202, &sge, 1);
    qrnic_ring_rq(e.r, &ud);
    qrnic_settle(e.r);
    v1_bth(bth, OPC_UD_SEND_ONLY, ud.qpn, 5, false);
    stl_be_p(bth + BTH_LEN, UD_QKEY);
    stl_be_p(bth + BTH_LEN + 4, PEER_QPN);
    memcpy(bth + BTH_LEN + DETH_LEN, payload, sizeof(payload));
    rt_sock_send(e.fd, buf, v1_frame(buf, DEV_IP, bth, sizeof(bth), true));
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x7202);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.net_type, ==, RNIC_NET_ROCE_V1);
    g_assert_cmpuint(cqe.flags & RNIC_CQE_GRH, ==, RNIC_CQE_GRH);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + sizeof(payload));
    g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, PEER_QPN);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + 0x200, got, sizeof(got));
    g_assert_cmpmem(got, 40, buf + V1_GRH_OFF, 40);
    g_assert_cmpmem(got + 40, sizeof(payload), payload, sizeof(payload));
}

static void register_rnic_rc_test(void)
{
    rt_use_node_b(true);
    rt_add("wqe-bad-opcode", test_wqe_bad_opcode);
    rt_add("wqe-bad-lkey", test_wqe_bad_lkey);
    rt_add("wqe-bounds", test_wqe_bounds);
    rt_add("wqe-too-many-sge", test_wqe_too_many_sge);
    rt_add("wqe-inline-too-long", test_wqe_inline_too_long);
    rt_add("sq-not-ready", test_sq_not_ready);
    rt_add("rc-send-tx", test_rc_send_tx);
    rt_add("rc-send-tx-inline", test_rc_send_tx_inline);
    rt_add("rc-send-rx", test_rc_send_rx);
    rt_add("rc-send-rx-bad-icrc", test_rc_send_rx_bad_icrc);
    rt_add("rx-dropped", test_rx_dropped);
    rt_add("rc-rx-psn", test_rc_rx_psn);
    rt_add("rc-rx-too-long", test_rc_rx_too_long);
    rt_add("rc-write-bad-rkey", test_rc_write_bad_rkey);
    rt_add("rc-write-bounds", test_rc_write_bounds);
    rt_add("rc-write-no-access", test_rc_write_no_access);
    rt_add("rc-write-rx", test_rc_write_rx);
    rt_add("qp-err-flush", test_qp_err_flush);
    rt_add("cq-overrun", test_cq_overrun);
    rt_add("reset", test_reset);
    rt_add("disable", test_disable);
    rt_add("gsi-qp", test_gsi_qp);
    rt_add("ud-gsi-qkey", test_ud_gsi_qkey);
    rt_add("ud-bad-sgid", test_ud_bad_sgid);
    rt_add("ud-mcast", test_ud_mcast);
    rt_add("rc-rx-too-many-sge", test_rc_rx_too_many_sge);
    rt_add("roce-v1-rc", test_roce_v1_rc);
    rt_add("roce-v1-bad", test_roce_v1_bad);
    rt_add("roce-v1-ud", test_roce_v1_ud);
    rt_use_node_b(false);
}

libqos_init(register_rnic_rc_test);

#endif /* _WIN32 */
