/*
 * QTest testcases for the rnic device: memory registration by work
 * request (REG_MR, LOCAL_INV) and remote invalidation, as kernel ULPs
 * (NVMe over Fabrics, NFS/RDMA, iSER) use them.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest-single.h"
#include "rnic-test-common.h"

#ifndef _WIN32

#define FR_IOVA         0x5a0000001000ull

/* A fast-reg MR with room for 'max_pages' pages, not yet registered. */
static uint32_t alloc_fr_mr(Env *e, uint32_t max_pages)
{
    struct rnic_cmd cmd;
    uint32_t out[6];

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(e->pdn);
    cmd.u.reg_mr.flags = cpu_to_le32(RNIC_MR_FLAG_FAST_REG);
    cmd.u.reg_mr.max_pages = cpu_to_le32(max_pages);
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    return out[RNIC_OUT_LKEY];
}

static void post_reg_mr(Env *e, uint64_t wr_id, uint32_t key,
                        uint32_t access, uint64_t iova, uint64_t len,
                        uint64_t list, uint32_t npages)
{
    struct rnic_send_wqe w;

    rt_send_wqe(&w, wr_id, RNIC_WR_REG_MR, 0);
    w.remote_addr = cpu_to_le64(iova);
    w.rkey = cpu_to_le32(key);
    w.imm_inv = cpu_to_le32(access);
    w.compare_add = cpu_to_le64(list);
    w.inline_len = cpu_to_le32(npages);
    w.swap = cpu_to_le64(len);
    w.rsvd_11 = 12;
    qrnic_post_send(e->r, &e->qp, &w, NULL, 0);
    qrnic_ring_sq(e->r, &e->qp);
}

static void post_local_inv(Env *e, uint64_t wr_id, uint32_t key)
{
    struct rnic_send_wqe w;

    rt_send_wqe(&w, wr_id, RNIC_WR_LOCAL_INV, 0);
    w.imm_inv = cpu_to_le32(key);
    qrnic_post_send(e->r, &e->qp, &w, NULL, 0);
    qrnic_ring_sq(e->r, &e->qp);
}

static void expect_send_cqe(Env *e, uint64_t wr_id, uint8_t status,
                            uint8_t opcode)
{
    struct rnic_cqe cqe;

    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == RNIC_WC_SUCCESS) {
        g_assert_cmpuint(cqe.opcode, ==, opcode);
    }
}

/* Two scattered pages; 'list' holds their addresses. */
static void two_pages(Env *e, uint64_t pg[2], uint64_t *list)
{
    uint64_t ents[2];

    pg[1] = qrnic_alloc(e->r, QRNIC_PAGE);
    pg[0] = qrnic_alloc(e->r, QRNIC_PAGE);
    *list = qrnic_alloc(e->r, QRNIC_PAGE);
    ents[0] = cpu_to_le64(pg[0]);
    ents[1] = cpu_to_le64(pg[1]);
    qtest_memwrite(qrnic_qts(e->r), *list, ents, sizeof(ents));
}

static void inject_write(Env *e, uint32_t psn, uint32_t rkey, uint64_t va,
                         const uint8_t *payload, uint32_t len)
{
    Roce f;

    rt_roce_init_payload(&f, OPC_WRITE_ONLY, e->qp.qpn, psn, payload, len);
    f.va = va;
    f.rkey = rkey;
    f.dma_len = len;
    rt_send_roce(e, &f);
}

/*
 * REG_MR by work request makes a fast-reg MR reachable under its new
 * key, in the pages the list names; LOCAL_INV closes it again.
 */
static void test_fast_reg_wqe(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint64_t pg[2], list;
    uint32_t lkey, key;
    uint8_t payload[64], got[64];

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    lkey = alloc_fr_mr(&e, 4);
    two_pages(&e, pg, &list);
    key = (lkey & ~0xffu) | ((lkey + 0x11) & 0xff);    /* a new key byte */

    /* Not registered yet: a WRITE with either key is refused. */
    rt_fill_pattern(payload, sizeof(payload), 0x3c);
    inject_write(&e, QP_RQ_PSN, lkey, FR_IOVA, payload, sizeof(payload));
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);

    post_reg_mr(&e, 1, key, RNIC_ACCESS_LOCAL_WRITE |
                RNIC_ACCESS_REMOTE_WRITE, FR_IOVA + 0x800,
                2 * QRNIC_PAGE - 0x800, list, 2);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);

    /* Across the page boundary, at the offset iova gives the first page. */
    inject_write(&e, QP_RQ_PSN, key, FR_IOVA + QRNIC_PAGE - 16, payload,
                 sizeof(payload));
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), pg[0] + QRNIC_PAGE - 16, got, 16);
    qtest_memread(qrnic_qts(e.r), pg[1], got + 16, 48);
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));
    /* The old key byte no longer opens it. */
    inject_write(&e, QP_RQ_PSN + 1, lkey, FR_IOVA + 0x800, payload, 8);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN + 1);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);

    post_local_inv(&e, 2, key);
    expect_send_cqe(&e, 2, RNIC_WC_SUCCESS, RNIC_WC_LOCAL_INV);
    inject_write(&e, QP_RQ_PSN, key, FR_IOVA + 0x800, payload, 8);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
}

/* REG_MR and LOCAL_INV that do not fit the MR fail the WQE and the QP. */
static void test_fast_reg_wqe_errors(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    static const struct {
        const char *what;
        bool inv;
        bool regular_mr;        /* aim at the ordinary MR of the Env */
        uint32_t key_xor;
        uint32_t access;
        uint32_t npages;
        uint64_t len;
    } cases[] = {
        { "too many pages", false, false, 0, RNIC_ACCESS_LOCAL_WRITE, 5,
          QRNIC_PAGE },
        { "length beyond the pages", false, false, 0,
          RNIC_ACCESS_LOCAL_WRITE, 1, QRNIC_PAGE + 1 },
        { "remote write without local write", false, false, 0,
          RNIC_ACCESS_REMOTE_WRITE, 1, QRNIC_PAGE },
        { "not a fast-reg MR", false, true, 0, RNIC_ACCESS_LOCAL_WRITE, 1,
          QRNIC_PAGE },
        { "invalidate with a wrong key byte", true, false, 1, 0, 0, 0 },
        { "invalidate an ordinary MR", true, true, 0, 0, 0, 0 },
    };
    Env e;
    uint64_t pg[2], list;
    uint32_t lkey;
    size_t i;

    rt_env_basic(&e, obj, data);
    lkey = alloc_fr_mr(&e, 4);
    two_pages(&e, pg, &list);
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        uint32_t key = lkey ^ cases[i].key_xor;
        uint64_t errs = rt_guest_errs(e.r);

        if (cases[i].regular_mr) {
            key = e.mr.lkey ^ cases[i].key_xor;
        }

        g_test_message("%s", cases[i].what);
        rt_env_rc_qp(&e, RNIC_QPS_RTS);
        if (cases[i].inv) {
            post_local_inv(&e, 10 + i, key);
        } else {
            post_reg_mr(&e, 10 + i, key, cases[i].access, FR_IOVA,
                        cases[i].len, list, cases[i].npages);
        }
        expect_send_cqe(&e, 10 + i, RNIC_WC_LOC_QP_OP_ERR, 0);
        qrnic_settle(e.r);
        g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
        if (!cases[i].inv) {
            g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 1);
        }
        g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0,
                                       e.qp.qpn), ==, RNIC_CMD_OK);
    }

    /* Registered twice without an invalidation in between: refused. */
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_reg_mr(&e, 20, lkey, RNIC_ACCESS_LOCAL_WRITE, FR_IOVA, QRNIC_PAGE,
                list, 1);
    expect_send_cqe(&e, 20, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);
    post_reg_mr(&e, 21, lkey, RNIC_ACCESS_LOCAL_WRITE, FR_IOVA, QRNIC_PAGE,
                list, 1);
    expect_send_cqe(&e, 21, RNIC_WC_LOC_QP_OP_ERR, 0);
}

/* SEND with invalidate from the peer closes the named fast-reg MR. */
static void test_fast_reg_remote_inv(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    uint64_t pg[2], list;
    uint32_t key;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    key = alloc_fr_mr(&e, 2);
    two_pages(&e, pg, &list);
    post_reg_mr(&e, 1, key, RNIC_ACCESS_LOCAL_WRITE |
                RNIC_ACCESS_REMOTE_WRITE, FR_IOVA, 2 * QRNIC_PAGE, list, 2);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);

    rt_sge_of(&sge, &e.mr, 0, 64);
    qrnic_post_recv(e.r, &e.qp, 0x99, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);
    rt_fill_pattern(payload, sizeof(payload), 1);
    rt_roce_init_payload(&f, OPC_SEND_ONLY_INV, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.rkey = key;
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.imm_inv), ==, key);
    g_assert_true(cqe.flags & RNIC_CQE_WITH_INV);

    inject_write(&e, QP_RQ_PSN + 1, key, FR_IOVA, payload, 8);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN + 1);
}

/*
 * A peer's SEND with invalidate may end only a registration it was given
 * remote rights to, and a key it may not invalidate fails the message:
 * the RECV completes with REM_INV_REQ_ERR (never WITH_INV), the peer
 * gets an invalid-request NAK, the QP goes to ERR, and the MR stays
 * registered.  Before, the RECV completed with success and WITH_INV.
 */
static void test_remote_inv_refused(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    uint64_t pg[2], list;
    uint32_t keys[2];           /* the local-only MR's, and a key of none */
    uint8_t payload[16];
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint32_t key;
    size_t i;
    Roce f;
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    key = alloc_fr_mr(&e, 2);
    two_pages(&e, pg, &list);
    post_reg_mr(&e, 1, key, RNIC_ACCESS_LOCAL_WRITE, FR_IOVA,
                2 * QRNIC_PAGE, list, 2);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);
    keys[0] = key;
    keys[1] = key ^ 0x100;

    for (i = 0; i < ARRAY_SIZE(keys); i++) {
        if (i) {
            g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0,
                                           e.qp.qpn), ==, RNIC_CMD_OK);
            rt_env_rc_qp(&e, RNIC_QPS_RTS);
        }
        rt_sge_of(&sge, &e.mr, 0, 64);
        qrnic_post_recv(e.r, &e.qp, 0x90 + i, &sge, 1);
        qrnic_ring_rq(e.r, &e.qp);
        rt_fill_pattern(payload, sizeof(payload), 2);
        rt_roce_init_payload(&f, OPC_SEND_ONLY_INV, e.qp.qpn, QP_RQ_PSN,
                             payload, sizeof(payload));
        f.rkey = keys[i];
        rt_send_roce(&e, &f);
        rt_expect_ack(&e, AETH_NAK(NAK_INV_REQ), QP_RQ_PSN);
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x90 + i);
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_REM_INV_REQ_ERR);
        g_assert_false(cqe.flags & RNIC_CQE_WITH_INV);
        qrnic_settle(e.r);
        g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    }

    /* Still registered: registering it again without LOCAL_INV fails. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn),
                     ==, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_reg_mr(&e, 2, key, RNIC_ACCESS_LOCAL_WRITE, FR_IOVA, QRNIC_PAGE,
                list, 1);
    expect_send_cqe(&e, 2, RNIC_WC_LOC_QP_OP_ERR, 0);
}

/* ---- memory windows ---- */

static uint32_t alloc_mw(Env *e, uint8_t type)
{
    struct rnic_cmd cmd;
    uint32_t out[6];

    qrnic_cmd_init(&cmd, RNIC_CMD_ALLOC_MW);
    cmd.u.alloc_mw.pdn = cpu_to_le32(e->pdn);
    cmd.u.alloc_mw.type = type;
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    return out[RNIC_OUT_HANDLE];
}

static void post_bind(Env *e, uint64_t wr_id, uint32_t rkey, uint32_t lkey,
                      uint32_t access, uint64_t va, uint64_t len)
{
    struct rnic_send_wqe w;

    rt_send_wqe(&w, wr_id, RNIC_WR_BIND_MW, 0);
    w.rkey = cpu_to_le32(rkey);
    w.imm_inv = cpu_to_le32(access);
    w.remote_addr = cpu_to_le64(va);
    w.swap = cpu_to_le64(len);
    w.compare_add = cpu_to_le64(lkey);
    qrnic_post_send(e->r, &e->qp, &w, NULL, 0);
    qrnic_ring_sq(e->r, &e->qp);
}

static uint32_t next_key(uint32_t key)
{
    return (key & ~0xffu) | ((key + 1) & 0xff);
}

/*
 * The peer's WRITE at 'psn' is refused and the QP replaced by a fresh
 * one (which expects QP_RQ_PSN).
 */
static void expect_write_refused_at(Env *e, uint32_t psn, uint32_t rkey,
                                    uint64_t va, uint32_t len)
{
    uint8_t payload[64] = { 0 };

    inject_write(e, psn, rkey, va, payload, len);
    rt_expect_ack(e, AETH_NAK(NAK_REM_ACCESS), psn);
    qrnic_settle(e->r);
    g_assert_cmpuint(rt_qp_state(e, &e->qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_destroy(e->r, RNIC_CMD_DESTROY_QP, 0, e->qp.qpn),
                     ==, RNIC_CMD_OK);
    rt_env_rc_qp(e, RNIC_QPS_RTS);
}

static void expect_write_refused(Env *e, uint32_t rkey, uint64_t va,
                                 uint32_t len)
{
    expect_write_refused_at(e, QP_RQ_PSN, rkey, va, len);
}

/*
 * A type 2 window: bound by work request, it opens its range of the MR
 * (and only that) to the QP that bound it, holds the MR, and closes on
 * the peer's SEND with invalidate.
 */
static void mw_type2(Env *ep)
{
    Env e = *ep;
    QRnicMr mr;
    uint32_t mw, key;
    uint8_t payload[64], got[64];
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f;

    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_MW_BIND, 2 * QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    mw = alloc_mw(&e, 2);
    g_assert_true(mw & (1u << 31));
    /* Not bound yet; and the MR itself gives no remote access. */
    expect_write_refused(&e, mw, mr.buf, 8);
    expect_write_refused(&e, mr.rkey, mr.buf, 8);

    key = next_key(mw);
    post_bind(&e, 1, key, mr.lkey, RNIC_ACCESS_REMOTE_WRITE, mr.buf + 256,
              512);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, mr.lkey), ==,
                     RNIC_CMD_ERR_BUSY);

    rt_fill_pattern(payload, sizeof(payload), 0x5b);
    inject_write(&e, QP_RQ_PSN, key, mr.buf + 256 + 448, payload,
                 sizeof(payload));
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), mr.buf + 256 + 448, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));

    /* The peer invalidates it. */
    rt_sge_of(&sge, &e.mr, 0, 64);
    qrnic_post_recv(e.r, &e.qp, 0x77, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);
    rt_roce_init_payload(&f, OPC_SEND_ONLY_INV, e.qp.qpn, QP_RQ_PSN + 1,
                         payload, 16);
    f.rkey = key;
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.imm_inv), ==, key);
    g_assert_true(cqe.flags & RNIC_CQE_WITH_INV);
    expect_write_refused_at(&e, QP_RQ_PSN + 2, key, mr.buf + 256, 8);

    /* Unbound, it holds nothing: both go. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, key), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, key), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    *ep = e;
}

/*
 * Windows check their own rights and range; a type 2 window answers only
 * the QP that bound it; a type 1 window is rebound in place and unbound by
 * a zero-length bind, and is not for LOCAL_INV.
 */
static void mw_rules(Env *ep)
{
    Env e = *ep;
    QRnicMr mr;
    uint32_t mw1, mw2, k1, k2;
    uint8_t payload[64];

    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_MW_BIND, QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    mw1 = alloc_mw(&e, 1);
    mw2 = alloc_mw(&e, 2);
    k1 = next_key(mw1);
    k2 = next_key(mw2);
    post_bind(&e, 1, k1, mr.lkey, RNIC_ACCESS_REMOTE_READ, mr.buf, 256);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);
    post_bind(&e, 2, k2, mr.lkey, RNIC_ACCESS_REMOTE_WRITE, mr.buf, 256);
    expect_send_cqe(&e, 2, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);

    /* No write right in the read-only window. */
    expect_write_refused(&e, k1, mr.buf, 8);
    /* The type 2 window was bound through the QP just replaced. */
    expect_write_refused(&e, k2, mr.buf, 8);

    /* Type 1: rebound, writable, its range enforced. */
    post_bind(&e, 3, next_key(k1), mr.lkey, RNIC_ACCESS_REMOTE_WRITE,
              mr.buf, 256);
    expect_send_cqe(&e, 3, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);
    k1 = next_key(k1);
    expect_write_refused(&e, k1, mr.buf + 200, 64);
    rt_fill_pattern(payload, sizeof(payload), 9);
    inject_write(&e, QP_RQ_PSN, k1, mr.buf + 192, payload, 64);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    /* A zero-length bind unbinds it. */
    post_bind(&e, 4, next_key(k1), mr.lkey, 0, 0, 0);
    expect_send_cqe(&e, 4, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);
    expect_write_refused_at(&e, QP_RQ_PSN + 1, next_key(k1), mr.buf, 8);
    /* LOCAL_INV is for type 2 windows only. */
    post_local_inv(&e, 5, next_key(k1));
    expect_send_cqe(&e, 5, RNIC_WC_LOC_QP_OP_ERR, 0);

    /*
     * The type 2 window went with the QP that bound it, the type 1 window
     * with its zero-length bind: nothing holds the MR any more.
     */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, mw1), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, mw2), ==,
                     RNIC_CMD_OK);
    *ep = e;
}

/* Binds the window's PD, its type, or the MR do not allow: MW_BIND_ERR. */
static void mw_bind_errors(Env *ep)
{
    static const struct {
        const char *what;
        bool plain_mr;          /* the Env's MR: no MW_BIND right */
        uint32_t access;
        uint64_t off, len;
        bool twice;             /* type 2 bound already */
    } cases[] = {
        { "MR without MW_BIND", true, RNIC_ACCESS_REMOTE_READ, 0, 64, false },
        { "range past the MR", false, RNIC_ACCESS_REMOTE_READ,
          QRNIC_PAGE - 32, 64, false },
        { "remote write, MR without local write", false,
          RNIC_ACCESS_REMOTE_WRITE, 0, 64, false },
        { "a local right", false, RNIC_ACCESS_LOCAL_WRITE, 0, 64, false },
        { "type 2 bound twice", false, RNIC_ACCESS_REMOTE_READ, 0, 64, true },
    };
    Env e = *ep;
    QRnicMr mr;
    uint32_t mw;
    size_t i;

    /* Read-only MR: remote write through a window needs local write. */
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, RNIC_ACCESS_MW_BIND,
                                  QRNIC_PAGE), ==, RNIC_CMD_OK);
    mw = alloc_mw(&e, 2);
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        QRnicMr *m = &mr;
        uint64_t errs;

        if (cases[i].plain_mr) {
            m = &e.mr;
        }

        g_test_message("%s", cases[i].what);
        rt_env_rc_qp(&e, RNIC_QPS_RTS);
        if (cases[i].twice) {
            post_bind(&e, 30, next_key(mw), m->lkey, cases[i].access,
                      m->buf, cases[i].len);
            expect_send_cqe(&e, 30, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);
        }
        errs = rt_guest_errs(e.r);
        post_bind(&e, 40 + i, next_key(mw), m->lkey, cases[i].access,
                  m->buf + cases[i].off, cases[i].len);
        expect_send_cqe(&e, 40 + i, RNIC_WC_MW_BIND_ERR, 0);
        qrnic_settle(e.r);
        g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 1);
        g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
        g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0,
                                       e.qp.qpn), ==, RNIC_CMD_OK);
    }
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, mw), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, mr.lkey), ==,
                     RNIC_CMD_OK);
    *ep = e;
}

/*
 * A type 2 window holds its fast-reg MR: LOCAL_INV of the MR fails while
 * the window is bound (as rxe's does), so the MR cannot be registered
 * again, on other pages and without remote write, under a window that
 * still grants remote write.  Once the window is gone (with the QP that
 * bound it), the MR is invalidated and registered again, and neither the
 * window's rkey nor the new key lets the peer write the new pages.
 */
static void test_mw_holds_fr_mr(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t got[32], zero[32] = { 0 };
    uint64_t pg[2], pg2[2], list, list2;
    uint32_t key, key2, mw;
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    key = next_key(alloc_fr_mr(&e, 2));
    two_pages(&e, pg, &list);
    post_reg_mr(&e, 1, key, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_MW_BIND,
                FR_IOVA, 2 * QRNIC_PAGE, list, 2);
    expect_send_cqe(&e, 1, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);
    mw = next_key(alloc_mw(&e, 2));
    post_bind(&e, 2, mw, key, RNIC_ACCESS_REMOTE_WRITE, FR_IOVA, 256);
    expect_send_cqe(&e, 2, RNIC_WC_SUCCESS, RNIC_WC_BIND_MW);

    post_local_inv(&e, 3, key);
    expect_send_cqe(&e, 3, RNIC_WC_LOC_QP_OP_ERR, 0);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    /* Nor may the MR be deregistered while the window holds it. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, key), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);

    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_local_inv(&e, 4, key);
    expect_send_cqe(&e, 4, RNIC_WC_SUCCESS, RNIC_WC_LOCAL_INV);
    two_pages(&e, pg2, &list2);
    key2 = next_key(key);
    post_reg_mr(&e, 5, key2, RNIC_ACCESS_LOCAL_WRITE, FR_IOVA,
                2 * QRNIC_PAGE, list2, 2);
    expect_send_cqe(&e, 5, RNIC_WC_SUCCESS, RNIC_WC_REG_MR);

    expect_write_refused(&e, mw, FR_IOVA, sizeof(got));
    expect_write_refused(&e, key2, FR_IOVA, sizeof(got));
    qtest_memread(qrnic_qts(e.r), pg2[0], got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
}

/* Memory windows: each phase leaves no window, MR or QP behind. */
static void test_mw(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    mw_type2(&e);
    mw_rules(&e);
    mw_bind_errors(&e);
}

/* ---- memory placement: ATOMIC WRITE and FLUSH ---- */

/* An empty READ response only, acknowledging the request at @psn. */
static void expect_place_resp(Env *e, uint32_t psn)
{
    Roce f;

    rt_recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_READ_RESP_ONLY);
    g_assert_cmphex(f.psn, ==, psn);
    g_assert_cmphex(f.syndrome & 0xe0, ==, 0);      /* an ACK */
    g_assert_cmpuint(f.payload_len, ==, 0);
}

static void inject_atomic_write(Env *e, uint32_t psn, uint64_t va,
                                const uint8_t val[8])
{
    Roce f;

    rt_roce_init_payload(&f, OPC_ATOMIC_WRITE, e->qp.qpn, psn, val, 8);
    f.va = va;
    f.rkey = e->mr.rkey;
    f.dma_len = 8;
    f.ack_req = true;
    rt_send_roce(e, &f);
}

static void inject_flush(Env *e, uint32_t psn, uint32_t rkey, uint64_t va,
                         uint32_t len, uint32_t feth)
{
    Roce f;

    rt_roce_init(&f, OPC_FLUSH, e->qp.qpn, psn);
    f.va = va;
    f.rkey = rkey;
    f.dma_len = len;
    f.feth = feth;
    f.ack_req = true;
    rt_send_roce(e, &f);
}

/*
 * A peer's ATOMIC WRITE lands its 8 bytes and is answered by an empty READ
 * response; its duplicate gets the answer again without writing again.
 * A misaligned one is an invalid request.
 */
static void test_atomic_write_rx(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const uint8_t val[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint8_t got[16], zero[8] = { 0 };
    QTestState *qts;
    Env e;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    inject_atomic_write(&e, QP_RQ_PSN, e.mr.buf + 0x40, val);
    expect_place_resp(&e, QP_RQ_PSN);
    qtest_memread(qts, e.mr.buf + 0x38, got, sizeof(got));
    g_assert_cmpmem(got, 8, zero, 8);
    g_assert_cmpmem(got + 8, 8, val, 8);

    /* The duplicate is answered, not executed. */
    qtest_memwrite(qts, e.mr.buf + 0x40, zero, 8);
    inject_atomic_write(&e, QP_RQ_PSN, e.mr.buf + 0x40, val);
    expect_place_resp(&e, QP_RQ_PSN);
    qtest_memread(qts, e.mr.buf + 0x40, got, 8);
    g_assert_cmpmem(got, 8, zero, 8);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_DUP_REQ), ==, 1);

    inject_atomic_write(&e, QP_RQ_PSN + 1, e.mr.buf + 0x44, val);
    rt_expect_ack(&e, AETH_NAK(NAK_INV_REQ), QP_RQ_PSN + 1);
    qtest_memread(qts, e.mr.buf + 0x40, got, 16);
    g_assert_cmpmem(got, 8, zero, 8);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/*
 * FLUSH: the MR must allow every placement type asked for; a range flush
 * stays inside the MR, an MR-level one ignores the range.
 */
static void test_flush_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    const uint32_t global_range = 0x01, global_mr = 0x11, persist = 0x02;
    QRnicMr mr;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE |
                                  RNIC_ACCESS_FLUSH_GLOBAL, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    inject_flush(&e, QP_RQ_PSN, mr.rkey, mr.buf + 0x100, 0x200, global_range);
    expect_place_resp(&e, QP_RQ_PSN);
    inject_flush(&e, QP_RQ_PSN + 1, mr.rkey, 0, 0x7fffffff, global_mr);
    expect_place_resp(&e, QP_RQ_PSN + 1);
    /* A duplicate is answered again. */
    inject_flush(&e, QP_RQ_PSN + 1, mr.rkey, 0, 0x7fffffff, global_mr);
    expect_place_resp(&e, QP_RQ_PSN + 1);

    /* A range past the MR's end. */
    inject_flush(&e, QP_RQ_PSN + 2, mr.rkey, mr.buf + 0x100, QRNIC_PAGE,
                 global_range);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN + 2);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn),
                     ==, RNIC_CMD_OK);

    /* Persistence the MR does not allow; the env MR allows no flush. */
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    inject_flush(&e, QP_RQ_PSN, mr.rkey, mr.buf, 64, persist);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn),
                     ==, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    inject_flush(&e, QP_RQ_PSN, e.mr.rkey, e.mr.buf, 64, global_range);
    rt_expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn),
                     ==, RNIC_CMD_OK);

    /* A placement type that does not exist. */
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    inject_flush(&e, QP_RQ_PSN, mr.rkey, mr.buf, 64, 0x04);
    rt_expect_ack(&e, AETH_NAK(NAK_INV_REQ), QP_RQ_PSN);
}

/*
 * The requester side: ATOMIC WRITE and FLUSH WQEs go out with their
 * headers and complete on the empty READ response, with their own
 * completion opcodes.
 */
static void test_place_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;
    Roce f, resp;
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_send_wqe(&w, 0xa7, RNIC_WR_ATOMIC_WRITE, 0);
    w.rkey = cpu_to_le32(0x1234);
    w.remote_addr = cpu_to_le64(0x10000);
    w.compare_add = cpu_to_le64(0x0807060504030201ull);
    qrnic_post_send(e.r, &e.qp, &w, NULL, 0);
    rt_send_wqe(&w, 0xf1, RNIC_WR_FLUSH, 0);
    w.rkey = cpu_to_le32(0x1234);
    w.remote_addr = cpu_to_le64(0x20000);
    w.swap = cpu_to_le64(0x3000);
    w.imm_inv = cpu_to_le32(RNIC_FLUSH_PERSISTENT |
                            RNIC_FLUSH_LEVEL_MR << RNIC_FLUSH_LEVEL_SHIFT);
    qrnic_post_send(e.r, &e.qp, &w, NULL, 0);
    qrnic_ring_sq(e.r, &e.qp);

    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ATOMIC_WRITE);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmphex(f.va, ==, 0x10000);
    g_assert_cmphex(f.rkey, ==, 0x1234);
    g_assert_cmpuint(f.dma_len, ==, 8);
    g_assert_cmpuint(f.payload_len, ==, 8);
    g_assert_cmphex(ldq_le_p(f.payload), ==, 0x0807060504030201ull);
    g_assert_true(f.ack_req);
    rt_roce_init(&resp, OPC_READ_RESP_ONLY, e.qp.qpn, QP_SQ_PSN);
    resp.syndrome = AETH_ACK(0x1f);
    resp.msn = 1;
    rt_send_roce(&e, &resp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xa7);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_ATOMIC_WRITE);

    /* max_rd_atomic 1: the FLUSH waited for that response. */
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_FLUSH);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN + 1);
    g_assert_cmphex(f.feth, ==, 0x12);
    g_assert_cmphex(f.va, ==, 0x20000);
    g_assert_cmpuint(f.dma_len, ==, 0x3000);
    g_assert_cmpuint(f.payload_len, ==, 0);
    rt_roce_init(&resp, OPC_READ_RESP_ONLY, e.qp.qpn, QP_SQ_PSN + 1);
    resp.syndrome = AETH_ACK(0x1f);
    resp.msn = 2;
    rt_send_roce(&e, &resp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xf1);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_FLUSH);
    rt_assert_cq_empty(&e, &e.cq);
}

static void register_rnic_mem_test(void)
{
    rt_add("fast-reg-wqe", test_fast_reg_wqe);
    rt_add("fast-reg-wqe-errors", test_fast_reg_wqe_errors);
    rt_add("fast-reg-remote-inv", test_fast_reg_remote_inv);
    rt_add("remote-inv-refused", test_remote_inv_refused);
    rt_add("mw", test_mw);
    rt_add("mw-holds-fr-mr", test_mw_holds_fr_mr);
    rt_add("atomic-write-rx", test_atomic_write_rx);
    rt_add("flush-rx", test_flush_rx);
    rt_add("place-tx", test_place_tx);
}

libqos_init(register_rnic_mem_test);

#endif /* _WIN32 */
