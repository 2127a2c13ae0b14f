/*
 * QTest testcases for the rnic RoCEv2 RNIC: doorbells and the guest errors
 * a bad doorbell counts
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-test-common.h"

#ifndef _WIN32

/* ---- doorbell guest errors ---- */

static void test_db_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);

    before = qrnic_counter(e.r, RNIC_CNT_GUEST_ERR);
    /* unknown QPN, a user page that does not own the QP, a 32-bit write */
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, 77 | 1ull << 32);
    qrnic_doorbell(e.r, 1, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qpci_io_writel(&e.r->dev, e.r->db, RNIC_DB_SQ, e.qp.qpn);
    /* a producer index too far ahead of the ring (16 entries) */
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 100ull << 32);
    /* unknown doorbell offset */
    qrnic_doorbell(e.r, 0, 0x100, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_GUEST_ERR), >=, before + 5);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);

    /* the right doorbell still sends */
    qrnic_ring_sq(e.r, &e.qp);
    {
        Roce f;

        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    }
}

/* ---- more doorbell guest errors ---- */

/* Any doorbell before the device is enabled is refused. */
static void test_db_not_ready(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint64_t before;

    rt_env_init(&e, obj, data);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, 2 | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 3);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_eq(e.r, &e.eq, 0, 4), ==, RNIC_CMD_OK);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 3);
}

/* SQ and RQ doorbells of a QP in RESET are refused, not remembered. */
static void test_db_qp_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RESET);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    before = rt_guest_errs(e.r);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_doorbell(e.r, 0, RNIC_DB_RQ, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);

    /* at RTS the refused doorbell has not queued the WQE */
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);
    rt_assert_no_frame(&e, 100);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
}

/* A producer index behind the last one is refused. */
static void test_db_backwards(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;
    unsigned i;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    rt_sge_of(&sge, &e.mr, 0, 16);
    for (i = 0; i < 3; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    before = rt_guest_errs(e.r);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 2ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
    /* the same PI again is fine */
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);

    /* all three WQEs go out once the QP can send */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    for (i = 0; i < 3; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }
    rt_assert_no_frame(&e, 50);
}

/* A user doorbell page may not ring a kernel QP. */
static void test_db_qp_owner(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t uctx;
    uint64_t before;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, uctx, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qrnic_doorbell(e.r, uctx, RNIC_DB_RQ, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
    rt_assert_no_frame(&e, 100);

    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
}

static uint32_t create_srq(Env *e, uint16_t uctx)
{
    return rt_create_srq(e, uctx, 5, qrnic_alloc(e->r, QRNIC_PAGE));
}

/* An RQ doorbell for a QP that receives from an SRQ is refused. */
static void test_db_rq_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t srqn, qpn;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    srqn = create_srq(&e, 0);
    qpn = rt_create_srq_qp(&e, srqn);

    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_RQ, qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);
    /* the SRQ and the SQ doorbells are fine */
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, qpn);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);
}

/* SRQ doorbells: no such SRQ, another context's SRQ, PI too far. */
static void test_db_srq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t srqn, uctx;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    srqn = create_srq(&e, 0);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, (srqn + 1) | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, 0 | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, 0xffffff | 1ull << 32);
    qrnic_doorbell(e.r, uctx, RNIC_DB_SRQ, srqn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 33ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 32ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
    /* and once at 32, going back is refused too */
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 31ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 6);
}

/* CQ doorbells: no such CQ, another context's CQ, CI beyond PI. */
static void test_db_cq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t uctx;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn + 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 0);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 0xffffff);
    qrnic_doorbell(e.r, uctx, RNIC_DB_CQ, e.cq.cqn | RNIC_DB_ARM);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn | 5ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
}

/* EQ doorbells: on a user page, no such EQ, CI beyond PI. */
static void test_db_eq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t uctx;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, uctx, RNIC_DB_EQ, 0 | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 1);          /* max-eq=2, not made */
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 2);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0xffffff);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0 | 7ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0 | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
}

/* ---- CQ resize ---- */

/* Posts 'n' SENDs with wr_id first.. on a QP in ERR: each is flushed. */
static void flush_sends(Env *e, uint64_t first, uint32_t n)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t i;

    rt_sge_of(&sge, &e->mr, 0, 8);
    for (i = 0; i < n; i++) {
        rt_send_wqe(&w, first + i, RNIC_WR_SEND, 1);
        qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e->r, &e->qp);
}

/*
 * RESIZE_CQ carries the CQEs not yet consumed to the new ring, in order,
 * refuses a ring too small for them, and later CQEs land in the new ring.
 */
static void test_cq_resize(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;
    struct rnic_cmd cmd;
    uint32_t moved = 0, out[6], idx;
    struct rnic_cmd_resp resp;
    uint64_t errs;
    QRnicCq cq;

    rt_env_basic(&e, obj, data);
    rt_env_init_qp_on_cq(&e, &cq, 3, 4);
    rt_attr_for(&a, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    flush_sends(&e, 100, 6);
    /* Two consumed, four left in the ring. */
    rt_expect_cqes(&e, &cq, 100, 2, RNIC_WC_WR_FLUSH_ERR);

    errs = rt_guest_errs(e.r);
    g_assert_cmpuint(qrnic_resize_cq(e.r, &cq, 1, &moved), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 1);
    /* The refused resize changed nothing. */
    rt_expect_cqes(&e, &cq, 102, 1, RNIC_WC_WR_FLUSH_ERR);

    g_assert_cmpuint(qrnic_resize_cq(e.r, &cq, 4, &moved), ==, RNIC_CMD_OK);
    g_assert_cmpuint(moved, ==, 3);
    rt_expect_cqes(&e, &cq, 103, 3, RNIC_WC_WR_FLUSH_ERR);
    rt_assert_cq_empty(&e, &cq);

    /* Shrinking works as long as what is left fits. */
    flush_sends(&e, 200, 2);
    g_assert_cmpuint(qrnic_resize_cq(e.r, &cq, 1, &moved), ==, RNIC_CMD_OK);
    g_assert_cmpuint(moved, ==, 2);
    rt_expect_cqes(&e, &cq, 200, 2, RNIC_WC_WR_FLUSH_ERR);
    flush_sends(&e, 300, 2);
    rt_expect_cqes(&e, &cq, 300, 2, RNIC_WC_WR_FLUSH_ERR);
    rt_assert_cq_empty(&e, &cq);

    /*
     * WQEs whose doorbell came before the command complete before it is
     * judged, even when both wait for the same run of the device (the VM
     * is stopped meanwhile): three CQEs do not fit two entries.
     */
    g_assert_cmpuint(qrnic_resize_cq(e.r, &cq, 2, &moved), ==, RNIC_CMD_OK);
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'stop'}"));
    flush_sends(&e, 400, 3);
    qrnic_resize_cq_cmd(e.r, &cq, 1, &cmd);
    idx = qrnic_cmd_post(e.r, &cmd);
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'cont'}"));
    g_assert_true(qrnic_cmd_wait(e.r, idx, &resp, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.status, ==, RNIC_CMD_ERR_PARAM);
    rt_expect_cqes(&e, &cq, 400, 3, RNIC_WC_WR_FLUSH_ERR);
    rt_assert_cq_empty(&e, &cq);

    /* No such CQ; a bad ring description. */
    qrnic_cmd_init(&cmd, RNIC_CMD_RESIZE_CQ);
    cmd.u.resize_cq.log_size = 2;
    cmd.u.resize_cq.cqn = cpu_to_le32(999);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_HANDLE);
    cmd.u.resize_cq.cqn = cpu_to_le32(cq.cqn);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.resize_cq.rsvd_1 = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
}

/*
 * A QP on an SRQ that enters ERR, by MODIFY_QP or by an error, posts
 * QP_LAST_WQE once (ib_drain_qp waits for it); a QP with its own RQ
 * does not.
 */
static void test_srq_qp_last_wqe(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct rnic_eqe eqe;
    uint32_t srqn, qpn, plain;
    Env e;

    rt_env_basic(&e, obj, data);
    srqn = create_srq(&e, 0);
    qpn = rt_create_srq_qp(&e, srqn);
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_RTR,
                                  MASK_TO_RTR), ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_ERR,
                                  RNIC_QP_ATTR_STATE), ==, RNIC_CMD_OK);
    qrnic_settle(e.r);
    g_assert_true(qrnic_eq_poll(e.r, &e.eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, RNIC_EQE_QP_LAST_WQE);
    g_assert_cmphex(le32_to_cpu(eqe.obj), ==, qpn);
    g_assert_false(qrnic_eq_poll(e.r, &e.eq, &eqe));
    /* Already in ERR: no second event. */
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_ERR,
                                  RNIC_QP_ATTR_STATE), ==, RNIC_CMD_OK);
    qrnic_settle(e.r);
    g_assert_false(qrnic_eq_poll(e.r, &e.eq, &eqe));

    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    plain = e.qp.qpn;
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_ERR,
                                  RNIC_QP_ATTR_STATE), ==, RNIC_CMD_OK);
    qrnic_settle(e.r);
    g_assert_false(qrnic_eq_poll(e.r, &e.eq, &eqe));
    g_assert_cmpuint(plain, !=, qpn);
}

/*
 * RESIZE_SRQ: WQEs posted before the resize and copied by the driver to
 * their slots in the larger ring are consumed from there, in order, with
 * their data where their SGEs say; CQEs carry unmasked SRQ indices.  A
 * smaller ring, a bad handle and reserved bits are refused.
 */
static void test_srq_resize(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *qts;
    uint8_t wqe[RNIC_RQ_WQE_SIZE], want[48], got[48];
    QRnicQp srq = { .rq_log_size = 2 };
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    struct rnic_cmd cmd;
    uint32_t out[6], srqn, qpn, psn = QP_RQ_PSN, i;
    uint64_t new_ring;
    Env e;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    srq.rq_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    srqn = rt_create_srq(&e, 0, srq.rq_log_size, srq.rq_buf);
    qpn = rt_create_srq_qp(&e, srqn);
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_RTR,
                                  MASK_TO_RTR), ==, RNIC_CMD_OK);

    /* Fill the 4-entry ring and take all of it, then one more. */
    for (i = 0; i < 7; i++) {
        rt_sge_of(&sge, &e.mr, i * 64, 64);
        qrnic_post_recv(e.r, &srq, 0x100 + i, &sge, 1);
        if (i == 3 || i == 6) {
            qrnic_doorbell(e.r, 0, RNIC_DB_SRQ,
                           srqn | (uint64_t)srq.rq_pi << 32);
        }
        if (i == 3) {
            for (; psn < QP_RQ_PSN + 4; psn++) {
                rt_srq_send(&e, qpn, psn, psn, &cqe);
                g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==,
                                0x100 + psn - QP_RQ_PSN);
            }
        }
    }
    rt_srq_send(&e, qpn, psn, psn, &cqe);
    psn++;
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x104);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 4);   /* not 4 & 3 */

    /* Indices 5 and 6 wait in slots 1 and 2; they move to 5 and 6. */
    new_ring = qrnic_alloc(e.r, QRNIC_PAGE);
    for (i = 5; i < 7; i++) {
        qtest_memread(qts, srq.rq_buf + (i & 3) * RNIC_RQ_WQE_SIZE, wqe,
                      sizeof(wqe));
        qtest_memwrite(qts, new_ring + i * RNIC_RQ_WQE_SIZE, wqe,
                       sizeof(wqe));
    }
    qrnic_cmd_init(&cmd, RNIC_CMD_RESIZE_SRQ);
    cmd.u.resize_srq.srqn = cpu_to_le32(srqn);
    cmd.u.resize_srq.log_size = 1;
    cmd.u.resize_srq.ring.addr = cpu_to_le64(new_ring);
    cmd.u.resize_srq.ring.npages = cpu_to_le32(1);
    cmd.u.resize_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.resize_srq.log_size = 4;
    cmd.u.resize_srq.rsvd_5[1] = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.resize_srq.rsvd_5[1] = 0;
    cmd.u.resize_srq.srqn = cpu_to_le32(srqn + 1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_HANDLE);
    cmd.u.resize_srq.srqn = cpu_to_le32(srqn);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_ENTRIES], ==, 16);
    qrnic_cmd_init(&cmd, RNIC_CMD_QUERY_SRQ);
    cmd.u.query.handle = cpu_to_le32(srqn);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_SRQ_ENTRIES], ==, 16);

    /* Three more in the new ring, then five messages take 5 .. 9. */
    srq.rq_buf = new_ring;
    srq.rq_log_size = 4;
    for (i = 7; i < 10; i++) {
        rt_sge_of(&sge, &e.mr, i * 64, 64);
        qrnic_post_recv(e.r, &srq, 0x100 + i, &sge, 1);
    }
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | (uint64_t)srq.rq_pi << 32);
    for (i = 5; i < 10; i++, psn++) {
        rt_srq_send(&e, qpn, psn, psn, &cqe);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, i);
        rt_fill_pattern(want, sizeof(want), psn);
        qtest_memread(qts, e.mr.buf + i * 64, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    }
    rt_assert_cq_empty(&e, &e.cq);
}

/* ---- the device clock and CQE timestamps ---- */

static uint64_t clock_read(QRnic *r, unsigned page)
{
    return qpci_io_readq(&r->dev, r->db,
                         page * RNIC_DB_PAGE_SIZE + RNIC_DB_CLOCK);
}

/*
 * The clock register reads the virtual clock, on every doorbell page and
 * before the device is enabled.  Under qtest that clock moves only when
 * the test steps it, so every value is known.  Other reads of a doorbell
 * page read 0, and a write to the clock is a guest error that changes
 * nothing.
 */
static void test_db_clock(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QTestState *qts;
    struct rnic_device_attr da;
    uint64_t now, before;
    uint32_t uctx;

    rt_env_init(&e, obj, data);
    qts = qrnic_qts(e.r);
    now = qtest_clock_step(qts, 1000);
    g_assert_cmpuint(now, >=, 1000);
    g_assert_cmpuint(clock_read(e.r, 0), ==, now);
    g_assert_cmpuint(clock_read(e.r, 1), ==, now);
    g_assert_cmpuint(clock_read(e.r, 0), ==, now);
    now = qtest_clock_step(qts, 12345);
    g_assert_cmpuint(clock_read(e.r, 0), ==, now);

    /* Only an 8-byte read of the clock offset sees the clock. */
    g_assert_cmphex(qpci_io_readl(&e.r->dev, e.r->db, RNIC_DB_CLOCK), ==, 0);
    g_assert_cmphex(qpci_io_readl(&e.r->dev, e.r->db, RNIC_DB_CLOCK + 4),
                    ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_CLOCK + 8),
                    ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_SQ), ==, 0);

    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_CLOCK, ==,
                    RNIC_DEV_CAP_CLOCK);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = rt_guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_CLOCK, 0);
    qrnic_doorbell(e.r, uctx, RNIC_DB_CLOCK, 1ull << 40);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
    g_assert_cmpuint(clock_read(e.r, uctx), ==, now);
    g_assert_cmpuint(clock_read(e.r, 0), ==, now);
}

/*
 * Every CQE carries the clock at the moment the device wrote it: for a
 * send, when its ACK arrived, not when it was posted; for a flushed WQE,
 * when it was flushed.  Each lies between two reads of the clock, they
 * increase as the clock does, and RESIZE_CQ carries them over unchanged.
 */
static void test_cqe_timestamp(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    Env e;
    QTestState *qts;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    struct rnic_qp_attr a;
    uint64_t t0, t1, now, prev;
    uint32_t moved = 0;
    Roce f;
    unsigned i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    qts = qrnic_qts(e.r);
    t0 = clock_read(e.r, 0);

    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    /* 250 us: far from the ACK timeout and the tail-loss probe */
    now = qtest_clock_step(qts, 250 * 1000);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.rsvd_31, ==, 0);
    g_assert_cmpuint(le64_to_cpu(cqe.timestamp), >, t0);
    g_assert_cmpuint(le64_to_cpu(cqe.timestamp), ==, now);
    prev = now;

    rt_attr_for(&a, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    for (i = 0; i < 3; i++) {
        now = qtest_clock_step(qts, 1000 + i);
        flush_sends(&e, 10 + i, 1);
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 10 + i);
        g_assert_cmpuint(le64_to_cpu(cqe.timestamp), ==, now);
        g_assert_cmpuint(le64_to_cpu(cqe.timestamp), >, prev);
        prev = le64_to_cpu(cqe.timestamp);
    }
    t1 = clock_read(e.r, 0);
    g_assert_cmpuint(prev, <=, t1);

    /* Written at 'now', moved 5 us later: still 'now'. */
    now = qtest_clock_step(qts, 777);
    flush_sends(&e, 20, 2);
    qrnic_settle(e.r);
    qtest_clock_step(qts, 5000);
    g_assert_cmpuint(qrnic_resize_cq(e.r, &e.cq, 4, &moved), ==, RNIC_CMD_OK);
    g_assert_cmpuint(moved, ==, 2);
    for (i = 0; i < 2; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 20 + i);
        g_assert_cmpuint(le64_to_cpu(cqe.timestamp), ==, now);
    }
    rt_assert_cq_empty(&e, &e.cq);
}

/* ---- SQ doorbell records ---- */

/* The env's RC QP, in RTS, with an SQ doorbell record. */
static void dbrec_qp(Env *e)
{
    g_assert_cmpuint(qrnic_create_qp_flags(e->r, &e->qp, RNIC_QPT_RC, e->pdn,
                                           e->cq.cqn, e->cq.cqn, 4, 5,
                                           RNIC_QP_FLAG_SQ_DBREC),
                     ==, RNIC_CMD_OK);
    rt_qp_up(e, &e->qp, RNIC_QPS_RTS);
}

static void dbrec_post_len(Env *e, uint64_t wr_id, uint32_t len)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;

    rt_sge_of(&sge, &e->mr, 0, len);
    rt_send_wqe(&w, wr_id, RNIC_WR_SEND, 1);
    qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
    qrnic_sq_dbrec_store(e->r, &e->qp);
}

static void dbrec_post(Env *e, uint64_t wr_id)
{
    dbrec_post_len(e, wr_id, 16);
}

static uint32_t dbrec_flags(Env *e)
{
    struct rnic_sq_dbrec rec;

    qrnic_settle(e->r);
    qrnic_sq_dbrec_read(e->r, &e->qp, &rec);
    return rec.flags;
}

/*
 * While an AckReq interval of packets (16) waits for its ACK the device
 * takes WQEs from the record alone; with fewer in flight, or once
 * everything is acknowledged, it asks for the doorbell again and no
 * longer looks at the record by itself.
 */
static void test_sq_dbrec(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_device_attr da;
    struct rnic_sq_dbrec rec;
    struct rnic_cqe cqe;
    Env e;
    Roce f;
    int i;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_SQ_DBREC, ==,
                    RNIC_DEV_CAP_SQ_DBREC);
    dbrec_qp(&e);
    qrnic_sq_dbrec_read(e.r, &e.qp, &rec);
    g_assert_cmpuint(rec.pi, ==, 0);
    g_assert_cmphex(rec.flags, ==, RNIC_SQ_DBREC_RING);

    /* An idle device needs the doorbell; one packet in flight is idle. */
    dbrec_post(&e, 1);
    rt_assert_no_frame(&e, 100);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmphex(dbrec_flags(&e), ==, RNIC_SQ_DBREC_RING);
    rt_send_ack(&e, QP_SQ_PSN, 1);

    /* Four 4 KiB SENDs, 16 packets at MTU 1024: busy. */
    for (i = 2; i <= 5; i++) {
        dbrec_post_len(&e, i, 4096);
    }
    qrnic_ring_sq(e.r, &e.qp);
    for (i = 1; i <= 16; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }
    g_assert_cmphex(dbrec_flags(&e), ==, 0);

    /* Busy: a WQE in the record alone goes out after the next ACK. */
    dbrec_post(&e, 6);
    rt_assert_no_frame(&e, 100);
    rt_send_ack(&e, QP_SQ_PSN + 16, 5);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 17);
    g_assert_cmphex(dbrec_flags(&e), ==, RNIC_SQ_DBREC_RING);

    /* All acknowledged: the record alone sends nothing. */
    rt_send_ack(&e, QP_SQ_PSN + 17, 6);
    dbrec_post(&e, 7);
    qtest_clock_step(qrnic_qts(e.r), 100 * 1000 * 1000);
    rt_assert_no_frame(&e, 100);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 18);
    rt_send_ack(&e, QP_SQ_PSN + 18, 7);
    for (i = 1; i <= 7; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, i);
    }
    g_assert_cmphex(dbrec_flags(&e), ==, RNIC_SQ_DBREC_RING);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_GUEST_ERR), ==, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SQ_DOORBELLS), ==, 3);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SQ_DBREC_WQES), ==, 1);
}

/*
 * A busy QP's record is read by any bottom-half run, not only by the
 * QP's own next ACK: another QP's doorbell sends the WQE.
 */
static void test_sq_dbrec_sweep(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    bool seen_a = false, seen_b = false;
    QRnicQp b;
    Env e;
    Roce f;
    int i;

    rt_env_basic(&e, obj, data);
    dbrec_qp(&e);
    g_assert_cmpuint(qrnic_create_qp(e.r, &b, RNIC_QPT_RC, e.pdn, e.cq.cqn,
                                     e.cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    rt_qp_up(&e, &b, RNIC_QPS_RTS);

    for (i = 1; i <= 4; i++) {
        dbrec_post_len(&e, i, 4096);
    }
    qrnic_ring_sq(e.r, &e.qp);
    for (i = 0; i < 16; i++) {
        rt_recv_roce(&e, &f);
    }
    g_assert_cmphex(dbrec_flags(&e), ==, 0);
    dbrec_post(&e, 5);
    rt_assert_no_frame(&e, 100);

    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 9, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &b, &w, &sge, 1);
    qrnic_ring_sq(e.r, &b);
    for (i = 0; i < 2; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        if (f.psn == QP_SQ_PSN + 16) {
            seen_a = true;
        } else {
            g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
            seen_b = true;
        }
    }
    g_assert_true(seen_a && seen_b);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SQ_DBREC_WQES), ==, 1);
}

/*
 * A producer index in the record that a doorbell would refuse is
 * refused the same way, once, and sends nothing; a good one later works.
 */
static void test_sq_dbrec_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    uint64_t before;
    uint32_t good;
    Env e;
    Roce f;

    rt_env_basic(&e, obj, data);
    dbrec_qp(&e);
    dbrec_post(&e, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);

    /* 100 WQEs past the consumer (the SQ holds 16), read on the ACK. */
    before = qrnic_counter(e.r, RNIC_CNT_GUEST_ERR);
    good = e.qp.sq_pi;
    e.qp.sq_pi = 100;
    qrnic_sq_dbrec_store(e.r, &e.qp);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_cmphex(dbrec_flags(&e), ==, RNIC_SQ_DBREC_RING);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_GUEST_ERR), ==, before + 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);

    /* Behind what a doorbell already gave: refused too. */
    e.qp.sq_pi = good;
    dbrec_post(&e, 2);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);
    e.qp.sq_pi = good;
    qrnic_sq_dbrec_store(e.r, &e.qp);
    rt_send_ack(&e, QP_SQ_PSN + 1, 2);
    g_assert_cmphex(dbrec_flags(&e), ==, RNIC_SQ_DBREC_RING);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_GUEST_ERR), ==, before + 2);
    rt_assert_no_frame(&e, 100);
}

/* RESET rewrites the record: the ring and its producer start over. */
static void test_sq_dbrec_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_sq_dbrec rec = {
        .pi = cpu_to_le32(7),
        .flags = 0,
    };
    Env e;

    rt_env_basic(&e, obj, data);
    dbrec_qp(&e);
    qtest_memwrite(qrnic_qts(e.r), e.qp.sq_dbrec, &rec, sizeof(rec));
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RESET,
                                  RNIC_QP_ATTR_STATE), ==, RNIC_CMD_OK);
    qrnic_sq_dbrec_read(e.r, &e.qp, &rec);
    g_assert_cmpuint(rec.pi, ==, 0);
    g_assert_cmphex(rec.flags, ==, RNIC_SQ_DBREC_RING);
}

/* With sq-dbrec=off the capability is gone and the flag is refused. */
static void test_sq_dbrec_off(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_device_attr da;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_SQ_DBREC, ==, 0);
    g_assert_cmpuint(qrnic_create_qp_flags(e.r, &e.qp, RNIC_QPT_RC, e.pdn,
                                           e.cq.cqn, e.cq.cqn, 4, 5,
                                           RNIC_QP_FLAG_SQ_DBREC),
                     ==, RNIC_CMD_ERR_NOT_SUPP);
}

/* ---- registration ---- */

static void register_rnic_db_test(void)
{
    rt_add("db-bad", test_db_bad);
    rt_add("db-not-ready", test_db_not_ready);
    rt_add("db-qp-reset", test_db_qp_reset);
    rt_add("db-backwards", test_db_backwards);
    rt_add("db-qp-owner", test_db_qp_owner);
    rt_add("db-rq-srq", test_db_rq_srq);
    rt_add("db-srq-bad", test_db_srq_bad);
    rt_add("db-cq-bad", test_db_cq_bad);
    rt_add("db-eq-bad", test_db_eq_bad);
    rt_add("cq-resize", test_cq_resize);
    rt_add("srq-resize", test_srq_resize);
    rt_add("srq-qp-last-wqe", test_srq_qp_last_wqe);
    rt_add("db-clock", test_db_clock);
    rt_add("cqe-timestamp", test_cqe_timestamp);
    rt_add("sq-dbrec", test_sq_dbrec);
    rt_add("sq-dbrec-sweep", test_sq_dbrec_sweep);
    rt_add("sq-dbrec-bad", test_sq_dbrec_bad);
    rt_add("sq-dbrec-reset", test_sq_dbrec_reset);
    rt_add_opts("sq-dbrec-off", test_sq_dbrec_off, ",sq-dbrec=off");
}

libqos_init(register_rnic_db_test);

#endif /* _WIN32 */
