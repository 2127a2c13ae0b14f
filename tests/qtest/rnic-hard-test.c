/*
 * QTest testcases for the rnic device: regression tests of the hardening
 * work.  Each test here failed on the device before the fix it names.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest-single.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "rnic-test-common.h"

#ifndef _WIN32

#define DEV2_IP         0x0a000002u     /* the second rnic of a pair */
static const uint8_t rt_dev2_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x67 };

static void pbl_contig(struct rnic_pbl *pbl, uint64_t addr, uint32_t npages)
{
    memset(pbl, 0, sizeof(*pbl));
    pbl->addr = cpu_to_le64(addr);
    pbl->npages = cpu_to_le32(npages);
    pbl->page_shift = 12;
}

/* Enabled device whose EQ 0 (one page) lies at 'eq_addr', with GID 0. */
static void env_eq_at(Env *e, uint64_t eq_addr)
{
    struct rnic_cmd cmd;
    uint8_t gid[16];

    qrnic_enable(e->r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ);
    cmd.u.eq.eqn = cpu_to_le32(0);
    cmd.u.eq.log_size = 8;                  /* 256 x 16 bytes: one page */
    pbl_contig(&cmd.u.eq.ring, eq_addr, 1);
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, NULL), ==, RNIC_CMD_OK);
    e->eq.eqn = 0;
    e->eq.log_size = 8;
    e->eq.buf = eq_addr;
    rt_ipv4_gid(DEV_IP, gid);
    g_assert_cmpuint(qrnic_set_gid(e->r, 0, gid, rt_dev_mac), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e->r, 0, &e->pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e->r, &e->cq, 7, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(e->r, &e->mr, e->pdn,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE |
                                  RNIC_ACCESS_REMOTE_READ, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
}

/*
 * 1. The local ACK timer fires with EQ 0 on BAR0, so that the event of
 * the RETRY_EXC_ERR completion would be written over CTRL.  Done from
 * the timer, that write reset the device under the completer's feet
 * (use-after-free); done from the guarded bottom half, it is refused and
 * the device stays up.
 */
static void test_ack_timer_eq_on_bar(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f;
    int i;

    rt_env_init(&e, obj, data);
    env_eq_at(&e, e.r->regs.addr);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_attr_for(&a, RNIC_QPS_RTS);
    a.retry_cnt = 0;
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTS, &a), ==,
                     RNIC_CMD_OK);

    /* Armed: the error CQE will post a completion event to EQ 0. */
    qrnic_doorbell(e.r, RNIC_DB_PAGE_KERNEL, RNIC_DB_CQ,
                   e.cq.cqn | RNIC_DB_ARM);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 0x77, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    /* Four tail-loss probes resend first, spending no retry. */
    for (i = 0; i < 4; i++) {
        qtest_clock_step(qrnic_qts(e.r), (10ull << i) * 1000 * 1000);
        rt_recv_roce(&e, &f);
    }

    /* No ACK: the timer expires with no retry left. */
    qtest_clock_step(qrnic_qts(e.r), 200 * 1000 * 1000);
    qrnic_settle(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, RNIC_STATUS_READY);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CTRL), ==, RNIC_CTRL_ENABLE);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_RETRY_EXC_ERR);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/* ---- 2. host memory a guest can make the device allocate ---- */

static uint8_t reg_mr_raw(QRnic *r, uint32_t pdn, uint32_t flags,
                          uint64_t iova, uint64_t len, uint32_t npages,
                          uint32_t max_pages, uint32_t *lkey)
{
    struct rnic_cmd cmd;
    uint32_t out[6] = { 0 };
    uint8_t st;

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    cmd.u.reg_mr.flags = cpu_to_le32(flags);
    cmd.u.reg_mr.max_pages = cpu_to_le32(max_pages);
    cmd.u.reg_mr.iova = cpu_to_le64(iova);
    cmd.u.reg_mr.length = cpu_to_le64(len);
    if (npages) {
        pbl_contig(&cmd.u.reg_mr.pages, iova & ~0xfffull, npages);
    }
    st = qrnic_cmd(r, &cmd, out);
    if (lkey) {
        *lkey = out[RNIC_OUT_LKEY];
    }
    return st;
}

/* A page list must describe exactly the pages the region spans. */
static void test_reg_mr_npages_exact(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    uint64_t buf, errs;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &e.pdn), ==, RNIC_CMD_OK);
    buf = qrnic_alloc(e.r, 2 * QRNIC_PAGE);

    errs = rt_guest_errs(e.r);
    /* 4 KiB declared as 2^20 pages: 8 MiB of host list for nothing. */
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, buf, QRNIC_PAGE, 1u << 20, 0,
                                NULL), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, buf, QRNIC_PAGE, 2, 0, NULL),
                     ==, RNIC_CMD_ERR_PARAM);
    /* Too few is refused as before. */
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, buf + 8, QRNIC_PAGE, 1, 0,
                                NULL), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 3);
    /* Exact counts work, an offset into the first page included. */
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, buf, QRNIC_PAGE, 1, 0, NULL),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, buf + 8, QRNIC_PAGE, 2, 0,
                                NULL), ==, RNIC_CMD_OK);
}

/* max-host-mem=1M: lists beyond it are refused, and given back on free. */
static void test_host_mem_cap(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_device_attr attr;
    uint32_t lkey, lkey2;
    const uint64_t half = 96 * 1024;    /* pages: 768 KiB of list */
    const uint64_t base = 0x100000000ull;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_query_device(e.r, &attr), ==, RNIC_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(attr.max_host_mem_mb), ==, 1);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &e.pdn), ==, RNIC_CMD_OK);

    /* 1 GiB of 4 KiB pages: a 2 MiB list. */
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, base, 1ull << 30, 1u << 18, 0,
                                NULL), ==, RNIC_CMD_ERR_RESOURCE);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, RNIC_MR_FLAG_FAST_REG, 0, 0, 0,
                                1u << 18, NULL), ==, RNIC_CMD_ERR_RESOURCE);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, base, half * QRNIC_PAGE, half,
                                0, &lkey), ==, RNIC_CMD_OK);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, base, half * QRNIC_PAGE, half,
                                0, &lkey2), ==, RNIC_CMD_ERR_RESOURCE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, base, half * QRNIC_PAGE, half,
                                0, &lkey2), ==, RNIC_CMD_OK);
    /* A reset frees everything: the same fits again afterwards. */
    qrnic_reset(e.r);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &e.pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(reg_mr_raw(e.r, e.pdn, 0, base, half * QRNIC_PAGE, half,
                                0, &lkey), ==, RNIC_CMD_OK);
}

/* ---- 3. work per bottom-half run ---- */

/*
 * A full command queue on one device, each command loading a page list
 * of 16384 entries: a command on a second device completes while the
 * first is still working through its queue.
 */
static void test_cmd_flood_fair(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    QRnic r2;
    const unsigned log_size = RNIC_CMDQ_MAX_LOG_SIZE;
    const uint32_t n = (1u << log_size) - 1;
    const uint32_t npages = 16384;
    size_t bytes = (size_t)RNIC_CMD_ENTRY_SIZE << log_size;
    g_autofree struct rnic_cmd *ring = g_malloc0(bytes);
    uint64_t base;
    struct rnic_cmd_resp resp;
    struct rnic_cmd cmd;
    uint32_t ci, i, idx, pdn;

    qrnic_init_second(&r2, r, RT_SLOT2);
    qrnic_enable(&r2);
    base = qrnic_alloc(r, bytes);
    g_assert_cmphex(qrnic_try_enable(r, base, log_size) & RNIC_STATUS_READY,
                    ==, RNIC_STATUS_READY);
    g_assert_cmpuint(qrnic_create_pd(r, 0, &pdn), ==, RNIC_CMD_OK);

    /* Slot 0 held CREATE_PD; the rest register 64 MiB regions. */
    for (i = 1; i < n; i++) {
        ring[i].hdr.opcode = RNIC_CMD_REG_MR;
        ring[i].hdr.cookie = cpu_to_le32(i + 1);
        ring[i].u.reg_mr.pdn = cpu_to_le32(pdn);
        ring[i].u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
        ring[i].u.reg_mr.iova = cpu_to_le64((uint64_t)i << 32);
        ring[i].u.reg_mr.length = cpu_to_le64((uint64_t)npages * QRNIC_PAGE);
        pbl_contig(&ring[i].u.reg_mr.pages, (uint64_t)i << 32, npages);
    }
    qtest_memwrite(qrnic_qts(r), base + RNIC_CMD_ENTRY_SIZE,
                   &ring[1], bytes - RNIC_CMD_ENTRY_SIZE);
    qrnic_writel(r, RNIC_REG_CMDQ_PI, n);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    idx = qrnic_cmd_post(&r2, &cmd);
    g_assert_true(qrnic_cmd_wait(&r2, idx, &resp, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
    ci = qrnic_readl(r, RNIC_REG_CMDQ_CI);
    g_test_message("first device done with %u of %u commands", ci, n);
    g_assert_cmpuint(ci, <, n);

    /* It finishes all of them, each answered. */
    for (i = 0; i < 5000 && qrnic_readl(r, RNIC_REG_CMDQ_CI) != n; i++) {
        g_usleep(1000);
    }
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, n);
    qtest_memread(qrnic_qts(r), base + (uint64_t)(n - 1) * RNIC_CMD_ENTRY_SIZE,
                  &ring[0], sizeof(ring[0]));
    g_assert_cmpuint(ring[0].resp.done, ==, 1);
    g_assert_cmpuint(ring[0].resp.status, ==, RNIC_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(ring[0].resp.cookie), ==, n);
    qrnic_fini_second(&r2);
}

/*
 * RESIZE_CQ between two rings of 64K entries, over and over: each move
 * carries a whole ring (the dbrec claims nothing is consumed), three DMA
 * accesses per CQE.  Charged for what it moves, one such command fills a
 * run, so a command on a second device completes long before the queue
 * of moves is through; charged as one command, the whole queue ran in
 * the first run.
 */
static void test_resize_flood_fair(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    const unsigned log_size = 16;
    const uint32_t n = 14;      /* the 16-entry queue, less EQ and CQ */
    const uint32_t npages = 1 + (RNIC_CQE_SIZE << log_size) / QRNIC_PAGE;
    QRnic *r = obj;
    QRnic r2;
    QTestState *qts = qrnic_qts(r);
    struct rnic_cmd_resp resp;
    struct rnic_cmd cmd;
    uint64_t ring[2];
    uint32_t out[6];
    uint32_t i, idx, ci, cqn;

    qrnic_init_second(&r2, r, RT_SLOT2);
    qrnic_enable(&r2);
    qrnic_enable(r);
    g_assert_cmpuint(qrnic_create_eq(r, &(QRnicEq){ 0 }, 0, 8), ==,
                     RNIC_CMD_OK);
    ring[0] = qrnic_alloc(r, (size_t)npages * QRNIC_PAGE);
    ring[1] = qrnic_alloc(r, (size_t)npages * QRNIC_PAGE);
    /* Ring 0's consumer is a whole ring behind: 64K CQEs to move. */
    qtest_writel(qts, ring[0], -(1u << log_size));
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = log_size;
    pbl_contig(&cmd.u.create_cq.ring, ring[0], npages);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, out), ==, RNIC_CMD_OK);
    cqn = out[RNIC_OUT_HANDLE];

    /* All of them behind one doorbell, as a driver batching would. */
    for (i = 0; i < n; i++) {
        uint32_t slot = (r->cmdq_pi + i) & ((1u << r->cmdq_log_size) - 1);

        qrnic_cmd_init(&cmd, RNIC_CMD_RESIZE_CQ);
        cmd.hdr.cookie = cpu_to_le32(0x5000 + i);
        cmd.u.resize_cq.cqn = cpu_to_le32(cqn);
        cmd.u.resize_cq.log_size = log_size;
        pbl_contig(&cmd.u.resize_cq.ring, ring[(i + 1) % 2], npages);
        qtest_memwrite(qts, r->cmdq + (uint64_t)slot * RNIC_CMD_ENTRY_SIZE,
                       &cmd, sizeof(cmd));
    }
    idx = r->cmdq_pi + n - 1;
    r->cmdq_pi += n;
    qrnic_writel(r, RNIC_REG_CMDQ_PI, r->cmdq_pi);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    i = qrnic_cmd_post(&r2, &cmd);
    g_assert_true(qrnic_cmd_wait(&r2, i, &resp, 20 * QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
    ci = qrnic_readl(r, RNIC_REG_CMDQ_CI);
    g_test_message("first device done with %u of %u moves", ci - 2, n);
    g_assert_cmpuint(ci - 2, <, n);

    /* Every move completes, each with the whole ring. */
    g_assert_true(qrnic_cmd_wait(r, idx, &resp, 60 * QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(resp.cookie), ==, 0x5000 + n - 1);
    g_assert_cmpuint(le32_to_cpu(resp.out[RNIC_OUT_MOVED]), ==,
                     1u << log_size);
    qrnic_fini_second(&r2);
}

/* Counts the CQEs the device has written so far in a fresh CQ. */
static uint32_t cq_count_written(QRnic *r, QRnicCq *cq)
{
    uint32_t entries = 1u << cq->log_size;
    g_autofree struct rnic_cqe *c = g_new(struct rnic_cqe, entries);
    uint32_t i;

    qtest_memread(qrnic_qts(r), cq->buf + QRNIC_PAGE, c,
                  entries * sizeof(*c));
    for (i = 0; i < entries && (c[i].owner & RNIC_CQE_OWNER); i++) {
        ;
    }
    return i;
}

/* Flushing 4095 WQEs through the budgeted bottom half completes. */
static void test_flush_budget(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    const uint32_t n = 4095;
    uint32_t i, seen;
    QRnicCq cq;

    rt_env_basic(&e, obj, data);
    rt_env_init_qp_on_cq(&e, &cq, 13, 12);
    rt_sge_of(&sge, &e.mr, 0, 8);
    for (i = 0; i < n; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);
    rt_attr_for(&a, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    /*
     * Usually only part of the flush is visible by now.  Not asserted: the
     * main loop keeps running bottom halves while this process waits for
     * the CPU, so on a loaded host the whole flush can be done already.
     */
    seen = cq_count_written(e.r, &cq);
    g_test_message("%u of %u flushed when MODIFY_QP completed", seen, n);
    /* One CQE per look: reading the whole ring each time is slow. */
    for (i = 0; i < 5000; i++) {
        struct rnic_cqe last;

        qtest_memread(qrnic_qts(e.r),
                      cq.buf + QRNIC_PAGE + (n - 1) * sizeof(last), &last,
                      sizeof(last));
        if (last.owner & RNIC_CQE_OWNER) {
            break;
        }
        g_usleep(1000);
    }
    g_assert_cmpuint(cq_count_written(e.r, &cq), ==, n);
    for (i = 0; i < n; i++) {
        struct rnic_cqe cqe;

        g_assert_true(qrnic_cq_poll(e.r, &cq, &cqe));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, i);
    }
}

/* ---- 4. max_dest_rd_atomic ---- */

static void expect_nak(Env *e, uint32_t psn, uint8_t code, int max_frames)
{
    Roce f;
    int i;

    for (i = 0; i < max_frames; i++) {
        rt_recv_roce(e, &f);
        if (f.opcode == OPC_ACK) {
            g_assert_cmphex(f.syndrome, ==, AETH_NAK(code));
            g_assert_cmphex(f.psn, ==, psn);
            return;
        }
        g_assert_cmphex(f.opcode, !=, OPC_READ_RESP_ONLY);
    }
    g_assert_not_reached();
}

/* A QP that allows no incoming READ answers one with an invalid request. */
static void test_rd_atomic_none(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;
    Roce rd;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    rt_attr_for(&a, RNIC_QPS_RTR);
    a.max_dest_rd_atomic = 0;
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);

    rt_roce_init(&rd, OPC_READ_REQ, e.qp.qpn, QP_RQ_PSN);
    rd.va = e.mr.buf;
    rd.rkey = e.mr.rkey;
    rd.dma_len = 64;
    rt_send_roce(&e, &rd);
    expect_nak(&e, QP_RQ_PSN, NAK_INV_REQ, 1);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/*
 * max_dest_rd_atomic=1: a second READ while the first one's responses
 * are still going out is refused.  Both frames reach the device in one
 * socket write, so both wait in its receive queue for the same run.
 */
static void test_rd_atomic_limit(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    QRnicMr big;
    Roce rd;
    uint8_t buf[2 * 2048 + 8];
    size_t len1, len2;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &big, e.pdn,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_READ, 64 * 1024),
                     ==, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);

    rt_roce_init(&rd, OPC_READ_REQ, e.qp.qpn, QP_RQ_PSN);
    rd.va = big.buf;
    rd.rkey = big.rkey;
    rd.dma_len = 64 * 1024;                 /* 64 responses at MTU 1024 */
    len1 = rt_roce_build(&rd, buf + 4, 2048);
    stl_be_p(buf, len1);
    rt_roce_init(&rd, OPC_READ_REQ, e.qp.qpn, QP_RQ_PSN + 64);
    rd.va = big.buf;
    rd.rkey = big.rkey;
    rd.dma_len = 64;
    len2 = rt_roce_build(&rd, buf + 8 + len1, 2048);
    stl_be_p(buf + 4 + len1, len2);
    g_assert_cmpint(send(e.fd, buf, 8 + len1 + len2, 0), ==, 8 + len1 + len2);

    expect_nak(&e, QP_RQ_PSN + 64, NAK_INV_REQ, 70);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/* ---- 5. who may talk to a connected QP ---- */

static void test_rx_source_check(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t payload[32], gid[16];
    uint64_t dropped;
    Roce f, ack;

    rt_env_basic(&e, obj, data);
    rt_ipv4_gid(0x0a000005, gid);           /* a second address: GID 1 */
    g_assert_cmpuint(qrnic_set_gid(e.r, 1, gid, rt_dev_mac), ==, RNIC_CMD_OK);
    rt_env_rc_qp(&e, RNIC_QPS_RTR);
    rt_sge_of(&sge, &e.mr, 0, 64);
    qrnic_post_recv(e.r, &e.qp, 0x55, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);
    rt_fill_pattern(payload, sizeof(payload), 9);
    dropped = qrnic_counter(e.r, RNIC_CNT_RX_DROPPED);

    /* Another host, another P_Key, the QP's other address: dropped. */
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.sip = 0x0a000009;
    rt_send_roce(&e, &f);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.pkey = 0x1234;
    rt_send_roce(&e, &f);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.dip = 0x0a000005;
    rt_send_roce(&e, &f);
    rt_assert_no_frame(&e, 200);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==,
                     dropped + 3);

    /* The peer itself, with the limited-member form of the P_Key. */
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.pkey = 0x7fff;
    rt_send_roce(&e, &f);
    rt_recv_roce(&e, &ack);
    g_assert_cmphex(ack.opcode, ==, OPC_ACK);
    g_assert_cmphex(ack.syndrome & 0xe0, ==, 0);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
}

/* ---- 6. two rnics on a hub: synchronous delivery ---- */

static void pair_env(Env *e, QRnic *r, uint32_t ip, const uint8_t *mac)
{
    uint8_t gid[16];

    memset(e, 0, sizeof(*e));
    e->r = r;
    e->fd = -1;
    qrnic_enable(r);
    g_assert_cmpuint(qrnic_create_eq(r, &e->eq, 0, 8), ==, RNIC_CMD_OK);
    rt_ipv4_gid(ip, gid);
    g_assert_cmpuint(qrnic_set_gid(r, 0, gid, mac), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(r, 0, &e->pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(r, &e->cq, 7, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(r, &e->mr, e->pdn,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE, 4 * QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(r, &e->qp, RNIC_QPT_RC, e->pdn,
                                     e->cq.cqn, e->cq.cqn, 4, 4),
                     ==, RNIC_CMD_OK);
}

static void pair_connect(Env *e, uint32_t peer_ip, const uint8_t *peer_mac,
                         uint32_t peer_qpn)
{
    struct rnic_qp_attr a;

    g_assert_cmpuint(rt_qp_modify(e, &e->qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    rt_ipv4_gid(peer_ip, a.av.dgid);
    memcpy(a.av.dmac, peer_mac, 6);
    a.dest_qpn = cpu_to_le32(peer_qpn);
    a.rq_psn = cpu_to_le32(QP_SQ_PSN);      /* both send from QP_SQ_PSN */
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    a.qp_state = RNIC_QPS_RTS;
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTS, &a), ==,
                     RNIC_CMD_OK);
}

/*
 * A's SEND reaches B inside A's transmit, and B's ACK reaches A inside
 * B's receive.  Handled there, the ACK entered A's completer in the
 * middle of sending and was thrown away; queued for A's bottom half, it
 * completes the SEND with no timer involved (the clock never moves).
 */
static void test_hub_pair_send(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic r2;
    Env a, b;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t payload[3000], got[3000];

    qrnic_init_second(&r2, obj, RT_SLOT2);
    pair_env(&a, obj, DEV_IP, rt_dev_mac);
    pair_env(&b, &r2, DEV2_IP, rt_dev2_mac);
    pair_connect(&a, DEV2_IP, rt_dev2_mac, b.qp.qpn);
    pair_connect(&b, DEV_IP, rt_dev_mac, a.qp.qpn);

    rt_sge_of(&sge, &b.mr, 0, 4 * QRNIC_PAGE);
    qrnic_post_recv(b.r, &b.qp, 0xb0, &sge, 1);
    qrnic_ring_rq(b.r, &b.qp);

    rt_fill_pattern(payload, sizeof(payload), 0x5a);
    qtest_memwrite(qrnic_qts(a.r), a.mr.buf, payload, sizeof(payload));
    rt_sge_of(&sge, &a.mr, 0, sizeof(payload));
    rt_send_wqe(&w, 0xa0, RNIC_WR_SEND, 1);
    qrnic_post_send(a.r, &a.qp, &w, &sge, 1);
    qrnic_ring_sq(a.r, &a.qp);

    g_assert_true(qrnic_cq_wait(b.r, &b.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xb0);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    qtest_memread(qrnic_qts(b.r), b.mr.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));

    g_assert_true(qrnic_cq_wait(a.r, &a.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xa0);
    g_assert_cmpuint(qrnic_counter(a.r, RNIC_CNT_RETRANSMITS), ==, 0);
    qrnic_fini_second(&r2);
}

/* ---- 7. rings at guest physical address 0 ---- */

static void test_ring_at_gpa0(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint32_t out[6];
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t payload[40], raw[RNIC_SQ_WQE_SIZE] = { 0 };
    uint64_t rq;
    Roce f;

    rt_env_basic(&e, obj, data);
    rq = qrnic_alloc(e.r, QRNIC_PAGE);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.sq_log_size = 4;        /* 16 x 256 bytes: one page */
    cmd.u.create_qp.rq_log_size = 4;
    cmd.u.create_qp.max_send_sge = 2;
    cmd.u.create_qp.max_recv_sge = 2;
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    pbl_contig(&cmd.u.create_qp.sq, 0, 1);
    pbl_contig(&cmd.u.create_qp.rq, rq, 1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    e.qp.qpn = out[RNIC_OUT_HANDLE];
    e.qp.type = RNIC_QPT_RC;
    e.qp.sq_log_size = 4;
    e.qp.rq_log_size = 4;
    e.qp.rq_buf = rq;
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);

    rt_fill_pattern(payload, sizeof(payload), 0x40);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, payload, sizeof(payload));
    rt_sge_of(&sge, &e.mr, 0, sizeof(payload));
    rt_send_wqe(&w, 0x600d, RNIC_WR_SEND, 1);
    memcpy(raw, &w, sizeof(w));
    memcpy(raw + sizeof(w), &sge, sizeof(sge));
    qtest_memwrite(qrnic_qts(e.r), 0, raw, sizeof(raw));   /* SQ slot 0 */
    e.qp.sq_pi = 1;
    qrnic_ring_sq(e.r, &e.qp);

    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));
    rt_assert_cq_empty(&e, &e.cq);
}

/* ---- injected faults (device properties) ---- */

/* One signaled SEND of 'len' pattern bytes from e->mr, rung at once. */
static void post_one_send(Env *e, uint64_t wr_id, uint32_t len, uint8_t seed)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t buf[256];

    g_assert_cmpuint(len, <=, sizeof(buf));
    rt_fill_pattern(buf, len, seed);
    qtest_memwrite(qrnic_qts(e->r), e->mr.buf + seed * 256, buf, len);
    rt_sge_of(&sge, &e->mr, seed * 256, len);
    rt_send_wqe(&w, wr_id, RNIC_WR_SEND, 1);
    qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
}

/* reorder=100: of two frames sent in one run, the first goes second. */
static void test_fault_reorder(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    Roce f1, f2;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_one_send(&e, 1, 16, 1);
    post_one_send(&e, 2, 16, 2);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f1);
    rt_recv_roce(&e, &f2);
    g_assert_cmphex(f1.psn, ==, QP_SQ_PSN + 1);
    g_assert_cmphex(f2.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_REORDER_INJECTED), ==, 1);
}

/* duplicate=100: every frame twice, the same bytes. */
static void test_fault_duplicate(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint8_t first[2048];
    size_t len;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_one_send(&e, 1, 100, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    len = e.frame_len;
    memcpy(first, e.frame, len);
    rt_recv_roce(&e, &f);
    g_assert_cmpmem(e.frame, e.frame_len, first, len);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_DUP_INJECTED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);
}

/*
 * corrupt=100 on a QP connected to itself: every looped-back frame has a
 * flipped bit, and the receive side's ICRC check throws each one away.
 */
/* An RC QP connected to itself (through the device's loopback), in RTS. */
static void test_fault_corrupt(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_sge sge;

    rt_env_basic(&e, obj, data);
    rt_qp_to_self(&e);
    rt_sge_of(&sge, &e.mr, 2048, 1024);
    qrnic_post_recv(e.r, &e.qp, 0x10, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);
    post_one_send(&e, 1, 200, 1);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_CORRUPT_INJECTED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_LOOPBACK_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);
    rt_assert_no_frame(&e, 50);
}

/* qom-set of one fault percentage on the running device; false if refused. */
static bool fault_set(Env *e, const char *path, const char *prop, int pct)
{
    QDict *resp = qtest_qmp(qrnic_qts(e->r), "{'execute': 'qom-set',"
                            " 'arguments': {'path': %s, 'property': %s,"
                            " 'value': %d}}", path, prop, pct);
    bool ok = qdict_haskey(resp, "return");

    qobject_unref(resp);
    return ok;
}

static int64_t fault_get(Env *e, const char *path, const char *prop)
{
    QDict *resp = qtest_qmp(qrnic_qts(e->r), "{'execute': 'qom-get',"
                            " 'arguments': {'path': %s, 'property': %s}}",
                            path, prop);
    int64_t v = qdict_get_int(resp, "return");

    qobject_unref(resp);
    return v;
}

/*
 * The fault percentages change while the device runs, so one boot can go
 * through a fault matrix: corrupt=100 set over QMP spoils the next frame,
 * 101 is refused and changes nothing, and at 0 a frame arrives intact.
 */
static void test_fault_runtime(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t want[200], got[200];
    Env e;

    rt_env_basic(&e, obj, data);
    path = rt_qom_path(qrnic_qts(e.r));
    rt_qp_to_self(&e);
    rt_sge_of(&sge, &e.mr, 2048, 1024);
    qrnic_post_recv(e.r, &e.qp, 0x10, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);

    g_assert_true(fault_set(&e, path, "corrupt", 100));
    post_one_send(&e, 1, 200, 1);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_CORRUPT_INJECTED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);

    g_assert_false(fault_set(&e, path, "corrupt", 101));
    g_assert_cmpint(fault_get(&e, path, "corrupt"), ==, 100);
    g_assert_true(fault_set(&e, path, "corrupt", 0));
    g_assert_cmpint(fault_get(&e, path, "corrupt"), ==, 0);

    /* The tail-loss probe (8 ms) resends it clean, and its data arrives. */
    qtest_clock_step(qrnic_qts(e.r), 10 * 1000 * 1000);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    rt_fill_pattern(want, sizeof(want), 1);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_CORRUPT_INJECTED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
}

/* delay=100: a frame leaves only once delay-us of virtual time passed. */
static void test_fault_delay(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    Roce f;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_one_send(&e, 1, 16, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_DELAY_INJECTED), ==, 1);
    qtest_clock_step(qrnic_qts(e.r), 5 * 1000 * 1000);      /* 5 of 30 ms */
    rt_assert_no_frame(&e, 100);
    qtest_clock_step(qrnic_qts(e.r), 30 * 1000 * 1000);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(f.payload_len, ==, 16);
}

/* ---- reproducers of fuzzer findings ---- */

/*
 * generic-fuzz (UBSan): CMDQ_LOG_SIZE 0xbcbcbcbc was used as a shift
 * count before the range check.  Refused with a guest error; a good size
 * then enables the device.
 */
static void test_fuzz_cmdq_log_size(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t base = qrnic_alloc(r, QRNIC_PAGE);
    uint64_t errs = rt_guest_errs(r);

    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, (uint32_t)base);
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_HI, base >> 32);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, 0xbcbcbcbc);
    qrnic_writel(r, RNIC_REG_CTRL, RNIC_CTRL_ENABLE);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==, 0);
    g_assert_cmpuint(rt_guest_errs(r), >, errs);
    qrnic_reset(r);
    qrnic_enable(r);
}

/* ---- power states and the function's own config space ---- */

/*
 * On q35 the function's config space is also memory: the host bridge's
 * ECAM window.  A ring, a CQE or an MSI-X message the guest aims there
 * makes the device write its own config space in the middle of its work.
 * Those writes once reset the device from inside its bottom half (host
 * use-after-free, double free); the device now only records the reset,
 * and outside D0 it does no DMA and sends no interrupt at all.
 */

#define PM_D3HOT        3
#define Q35_PCIEXBAR    0x60
#define Q35_ECAM_BASE   0xb0000000ull

static uint8_t pm_cap(QRnic *r)
{
    uint8_t pm = qpci_find_capability(&r->dev, PCI_CAP_ID_PM, 0);

    g_assert_cmpuint(pm, !=, 0);
    return pm;
}

static void pm_set(QRnic *r, uint16_t state)
{
    qpci_config_writew(&r->dev, pm_cap(r) + PCI_PM_CTRL, state);
}

static uint16_t pm_get(QRnic *r)
{
    return qpci_config_readw(&r->dev, pm_cap(r) + PCI_PM_CTRL) &
           PCI_PM_CTRL_STATE_MASK;
}

/* The device's QOM "power" state (never reset); unref when done. */
static QDict *power_get(QRnic *r)
{
    QTestState *qts = qrnic_qts(r);
    g_autofree char *path = rt_qom_path(qts);
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments':"
                                 " {'path': %s, 'property': 'power'}}", path);

    g_assert_nonnull(qdict_get_qdict(resp, "return"));
    return resp;
}

static uint64_t power_stat(QRnic *r, const char *key)
{
    QDict *resp = power_get(r);
    uint64_t val = qdict_get_int(qdict_get_qdict(resp, "return"), key);

    qobject_unref(resp);
    return val;
}

static bool power_reset_pending(QRnic *r)
{
    QDict *resp = power_get(r);
    bool val = qdict_get_bool(qdict_get_qdict(resp, "return"),
                              "reset-pending");

    qobject_unref(resp);
    return val;
}

/* Waits (real time: the bottom half runs on its own) for @key >= @min. */
static void power_wait(QRnic *r, const char *key, uint64_t min)
{
    int i;

    for (i = 0; i < 500 && power_stat(r, key) < min; i++) {
        g_usleep(2000);
    }
    g_assert_cmpuint(power_stat(r, key), >=, min);
}

/* Waits for the function to reach power state @state on its own. */
static void pm_wait(QRnic *r, uint16_t state)
{
    int i;

    for (i = 0; i < 500 && pm_get(r) != state; i++) {
        g_usleep(2000);
    }
    g_assert_cmpuint(pm_get(r), ==, state);
}

/*
 * Back to D0: the function resets (once), and comes up again from
 * nothing: its first PD gets the handle the env's first PD got.
 */
static void pm_wake_and_check(Env *e, uint64_t resets_before)
{
    uint32_t first_pd = e->pdn;
    uint32_t pdn;

    pm_set(e->r, 0);
    /* A register access runs the recorded reset before it is answered. */
    g_assert_cmphex(qrnic_readl(e->r, RNIC_REG_CTRL), ==, 0);
    g_assert_cmphex(qrnic_readl(e->r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, 0);
    g_assert_cmpuint(power_stat(e->r, "resets"), ==, resets_before + 1);
    g_assert_false(power_reset_pending(e->r));
    e->r->cmdq = 0;
    e->r->cmdq_pi = 0;
    qrnic_enable(e->r);
    g_assert_cmpuint(qrnic_create_pd(e->r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, first_pd);
}

/*
 * Work that arrives in D3hot: an ACK from the wire is dropped and
 * counted, the ACK timer resends nothing, no CQE is written; D0 then
 * resets the function.
 */
static void test_pm_d3hot_work(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f;
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    rt_send_wqe(&w, 0x51, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);

    pm_set(e.r, PM_D3HOT);
    g_assert_cmpuint(pm_get(e.r), ==, PM_D3HOT);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    power_wait(e.r, "frames-dropped", 1);
    /* Long past the ACK timeout and its probes: nothing is resent. */
    qtest_clock_step(qrnic_qts(e.r), 2000ull * 1000 * 1000);
    rt_assert_no_frame(&e, 200);
    power_wait(e.r, "work-deferred", 1);
    g_assert_false(qrnic_cq_poll(e.r, &e.cq, &cqe));
    g_assert_cmpuint(power_stat(e.r, "frames-dropped"), ==, 1);
    g_assert_cmpuint(power_stat(e.r, "resets"), ==, 0);
    g_assert_cmpuint(pm_get(e.r), ==, PM_D3HOT);

    pm_wake_and_check(&e, 0);
    rt_assert_no_frame(&e, 100);
}

/* A q35 machine (ECAM at Q35_ECAM_BASE) with one rnic in slot 4. */
typedef struct Q35Rnic {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *mch;
    QRnic base;                 /* only the bus and the allocator */
    QRnic r;
    int fds[2];
    uint64_t ecam;              /* the function's ECAM page */
} Q35Rnic;

static void q35_start(Q35Rnic *q, Env *e)
{
    memset(q, 0, sizeof(*q));
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, q->fds), !=, -1);
    q->qts = qtest_initf("-M q35 -netdev socket,fd=%d,id=hs0 "
                         "-device rnic,addr=04.0,netdev=hs0,mac="
                         QRNIC_MAC_STR ",msix-vectors=5", q->fds[1]);
    pc_alloc_init(&q->alloc, q->qts, ALLOC_NO_FLAGS);
    q->bus = qpci_new_pc(q->qts, &q->alloc);
    q->mch = qpci_device_find(q->bus, 0);
    g_assert_nonnull(q->mch);
    qpci_config_writel(q->mch, Q35_PCIEXBAR + 4, 0);
    qpci_config_writel(q->mch, Q35_PCIEXBAR, Q35_ECAM_BASE | 1);
    q->base.dev.bus = q->bus;
    q->base.alloc = &q->alloc;
    qrnic_init_second(&q->r, &q->base, 4);
    q->ecam = Q35_ECAM_BASE + ((uint64_t)q->r.dev.devfn << 12);
    g_assert_cmphex(qtest_readw(q->qts, q->ecam), ==, RNIC_PCI_VENDOR_ID);
    rt_env_init(e, &q->r, q->fds);
}

static void q35_stop(Q35Rnic *q)
{
    qrnic_fini_second(&q->r);
    g_free(q->mch);
    qpci_free_pc(q->bus);
    alloc_destroy(&q->alloc);
    qtest_quit(q->qts);
    close(q->fds[0]);
}

/* A CQ of 64 entries whose one CQE page is @page (a level-1 page list). */
static void create_cq_on(Env *e, QRnicCq *cq, uint64_t page, uint32_t eqn)
{
    QTestState *qts = qrnic_qts(e->r);
    uint64_t list = qrnic_alloc(e->r, QRNIC_PAGE);
    struct rnic_cmd cmd;
    uint32_t out[6];

    memset(cq, 0, sizeof(*cq));
    cq->log_size = 6;
    cq->npages = 2;
    cq->buf = qrnic_alloc(e->r, QRNIC_PAGE);      /* the dbrec page */
    qtest_writeq(qts, list, cq->buf);
    qtest_writeq(qts, list + 8, page);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = 6;
    cmd.u.create_cq.eqn = cpu_to_le32(eqn);
    cmd.u.create_cq.ring.addr = cpu_to_le64(list);
    cmd.u.create_cq.ring.npages = cpu_to_le32(2);
    cmd.u.create_cq.ring.page_shift = 12;
    cmd.u.create_cq.ring.levels = 1;
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    cq->cqn = out[RNIC_OUT_HANDLE];
}

/*
 * The CQE route: a send CQ whose CQEs land on the function's own config
 * space.  CQE 0 would rewrite the command register as it is, CQE 1's
 * wr_id would write 0 into PMCSR: D3hot -> D0, a reset in the middle of
 * posting the completion.  In D3hot the ACK is dropped instead, and the
 * config space keeps what the guest put there.
 */
static void test_pm_cqe_own_config(void)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    QRnicCq ecq;
    Q35Rnic q;
    uint16_t cmdreg;
    Roce f;
    Env e;
    int i;

    q35_start(&q, &e);
    rt_env_basic(&e, &q.r, q.fds);
    cmdreg = qpci_config_readw(&e.r->dev, PCI_COMMAND);
    create_cq_on(&e, &ecq, q.ecam, 0);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, e.pdn, ecq.cqn,
                                     e.cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    for (i = 0; i < 2; i++) {
        rt_send_wqe(&w, i ? 0 : (uint64_t)cmdreg << 32, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    rt_recv_roce(&e, &f);

    pm_set(e.r, PM_D3HOT);
    rt_send_ack(&e, QP_SQ_PSN + 1, 2);
    power_wait(e.r, "frames-dropped", 1);
    qrnic_settle(e.r);
    g_assert_cmpuint(pm_get(e.r), ==, PM_D3HOT);
    g_assert_cmphex(qpci_config_readw(&e.r->dev, PCI_COMMAND), ==, cmdreg);
    g_assert_cmpuint(power_stat(e.r, "resets"), ==, 0);
    pm_wake_and_check(&e, 0);
    q35_stop(&q);
}

/*
 * The MSI-X route: EQ 1's vector writes D3hot into PMCSR, EQ 0's writes
 * D0.  The send completion's event puts the function in D3hot; the
 * receive that follows would have raised EQ 0's vector, and so reset the
 * device inside its own interrupt.  In D3hot nothing is received and no
 * message sent: the function stays in D3hot until the guest wakes it.
 */
static void test_pm_msix_own_config(void)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cmd cmd;
    uint8_t payload[16];
    QRnicCq scq;
    uint64_t pmcsr;
    Q35Rnic q;
    Roce f, s;
    Env e;

    q35_start(&q, &e);
    rt_env_basic(&e, &q.r, q.fds);
    pmcsr = q.ecam + pm_cap(e.r) + PCI_PM_CTRL;
    qpci_msix_enable(&e.r->dev);
    rt_msix_entry(e.r, 0, pmcsr, 0);
    rt_msix_entry(e.r, 1, pmcsr, PM_D3HOT);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ);
    cmd.u.eq.eqn = cpu_to_le32(1);
    cmd.u.eq.log_size = 8;
    cmd.u.eq.vector = cpu_to_le16(1);
    cmd.u.eq.ring.addr = cpu_to_le64(qrnic_alloc(e.r, QRNIC_PAGE));
    cmd.u.eq.ring.npages = cpu_to_le32(1);
    cmd.u.eq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &scq, 6, 1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, e.pdn, scq.cqn,
                                     e.cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    rt_qp_up(&e, &e.qp, RNIC_QPS_RTS);
    rt_sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_recv(e.r, &e.qp, 0x61, &sge, 1);
    qrnic_ring_rq(e.r, &e.qp);
    qrnic_doorbell(e.r, RNIC_DB_PAGE_KERNEL, RNIC_DB_CQ, scq.cqn | RNIC_DB_ARM);
    qrnic_doorbell(e.r, RNIC_DB_PAGE_KERNEL, RNIC_DB_CQ,
                   e.cq.cqn | RNIC_DB_ARM);
    qrnic_doorbell(e.r, RNIC_DB_PAGE_KERNEL, RNIC_DB_EQ, 0 | RNIC_DB_ARM);
    qrnic_doorbell(e.r, RNIC_DB_PAGE_KERNEL, RNIC_DB_EQ, 1 | RNIC_DB_ARM);

    rt_send_wqe(&w, 0x62, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    rt_recv_roce(&e, &f);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    /* The completion's event: the function sends itself to D3hot. */
    pm_wait(e.r, PM_D3HOT);

    rt_fill_pattern(payload, sizeof(payload), 7);
    rt_roce_init_payload(&s, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    rt_send_roce(&e, &s);
    power_wait(e.r, "frames-dropped", 1);
    g_usleep(20 * 1000);
    g_assert_cmpuint(pm_get(e.r), ==, PM_D3HOT);
    g_assert_cmpuint(power_stat(e.r, "resets"), ==, 0);
    pm_wake_and_check(&e, 0);
    q35_stop(&q);
}

/*
 * The RESIZE_CQ route: the new ring's CQE pages are the function's ECAM
 * page, twice.  The CQEs carried over are the guest's: copies of its
 * config space, but for PMCSR, D3hot in entry 1 and D0 in entry 65.  The
 * second lap once reset the device inside the move, and RESIZE_CQ then
 * freed the old page list a second time.  Now the device stops at D3hot:
 * the rest of the move is refused and the command never completes.
 */
static void test_pm_resize_cq_own_config(void)
{
    const uint32_t n = 66;
    uint8_t cfg[256];
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;
    QTestState *qts;
    uint64_t dbrec, list;
    uint32_t k, idx, moved;
    QRnicCq cq2;
    Q35Rnic q;
    Env e;

    q35_start(&q, &e);
    qts = q.qts;
    rt_env_basic(&e, &q.r, q.fds);
    for (k = 0; k < sizeof(cfg); k += 4) {
        stl_le_p(cfg + k, qpci_config_readl(&e.r->dev, k));
    }

    /* The CQEs not consumed: the n before index 0 of a 128-entry ring. */
    for (k = 0; k < n; k++) {
        uint32_t slot = (k - n) & 127;
        uint32_t off = (k % 64) * RNIC_CQE_SIZE;
        uint8_t cqe[RNIC_CQE_SIZE] = { 0 };

        if (off < sizeof(cfg)) {
            memcpy(cqe, cfg + off, sizeof(cqe));
        }
        if (k == 1 || k == 65) {
            stw_le_p(cqe + PCI_PM_CTRL, k == 1 ? PM_D3HOT : 0);
        }
        qtest_memwrite(qts, e.cq.buf + QRNIC_PAGE + slot * RNIC_CQE_SIZE,
                       cqe, sizeof(cqe));
    }
    qtest_writel(qts, e.cq.buf, -n);        /* the dbrec's consumer index */

    dbrec = qrnic_alloc(e.r, QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    qtest_writeq(qts, list, dbrec);
    qtest_writeq(qts, list + 8, q.ecam);
    qtest_writeq(qts, list + 16, q.ecam);
    qrnic_cmd_init(&cmd, RNIC_CMD_RESIZE_CQ);
    cmd.u.resize_cq.cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.resize_cq.log_size = 7;
    cmd.u.resize_cq.ring.addr = cpu_to_le64(list);
    cmd.u.resize_cq.ring.npages = cpu_to_le32(3);
    cmd.u.resize_cq.ring.page_shift = 12;
    cmd.u.resize_cq.ring.levels = 1;
    idx = qrnic_cmd_post(e.r, &cmd);

    pm_wait(e.r, PM_D3HOT);
    power_wait(e.r, "dma-refused", 1);
    g_assert_false(qrnic_cmd_wait(e.r, idx, &resp, 200));
    g_assert_cmpuint(pm_get(e.r), ==, PM_D3HOT);
    g_assert_cmpuint(power_stat(e.r, "resets"), ==, 0);
    g_assert_cmphex(qpci_config_readw(&e.r->dev, PCI_COMMAND), ==,
                    lduw_le_p(cfg + PCI_COMMAND));

    pm_wake_and_check(&e, 0);
    /* The fresh device resizes a CQ as usual. */
    g_assert_cmpuint(qrnic_create_eq(e.r, &e.eq, 0, 8), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq2, 6, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_resize_cq(e.r, &cq2, 7, &moved), ==, RNIC_CMD_OK);
    g_assert_cmpuint(moved, ==, 0);
    q35_stop(&q);
}

/*
 * A QMP set_link while EQ 0 lies on BAR0 once posted its event from the
 * monitor, outside the guard, and so wrote CTRL.  The event is now the
 * bottom half's: the write is refused and the device stays enabled; a
 * flap still reports both edges, in order, on a normal EQ.
 */
static void test_link_event_in_bh(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QTestState *qts;
    struct rnic_eqe eqe;
    Env e;

    rt_env_init(&e, obj, data);
    qts = qrnic_qts(e.r);
    env_eq_at(&e, e.r->regs.addr);
    qtest_qmp_assert_success(qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'hs0', 'up': false}}");
    qrnic_settle(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CTRL), ==, RNIC_CTRL_ENABLE);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, RNIC_STATUS_READY);
    qtest_qmp_assert_success(qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'hs0', 'up': true}}");

    /* A normal EQ 0: a flap between two runs still gives DOWN, ACTIVE. */
    qrnic_reset(e.r);
    rt_env_basic(&e, obj, data);
    qtest_qmp_assert_success(qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'hs0', 'up': false}}");
    qtest_qmp_assert_success(qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'hs0', 'up': true}}");
    qrnic_settle(e.r);
    g_assert_true(qrnic_eq_poll(e.r, &e.eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, RNIC_EQE_PORT_DOWN);
    g_assert_true(qrnic_eq_poll(e.r, &e.eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, RNIC_EQE_PORT_ACTIVE);
    g_assert_false(qrnic_eq_poll(e.r, &e.eq, &eqe));
}

/*
 * GPA 0 is memory like any other: a command queue may live there (it
 * was refused, a leftover of "address 0 means failure").
 */
static void test_cmdq_at_gpa0(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    QTestState *qts = qrnic_qts(r);
    struct rnic_cmd cmd;
    int i;

    g_assert_cmphex(qrnic_try_enable(r, 0, 2) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
    /* libqos takes a zero queue address for "not enabled": by hand. */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.cookie = cpu_to_le32(0xc0de);
    qtest_memwrite(qts, 0, &cmd, sizeof(cmd));
    qrnic_writel(r, RNIC_REG_CMDQ_PI, 1);
    for (i = 0; i < 1000 && !qtest_readb(qts, offsetof(struct rnic_cmd,
                                                       resp.done)); i++) {
        g_usleep(1000);
    }
    qtest_memread(qts, 0, &cmd, sizeof(cmd));
    g_assert_cmpuint(cmd.resp.done, ==, 1);
    g_assert_cmpuint(cmd.resp.status, ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(cmd.resp.cookie), ==, 0xc0de);
    g_assert_cmpuint(le32_to_cpu(cmd.resp.out[RNIC_OUT_HANDLE]), !=, 0);
}

static void register_rnic_hard_test(void)
{
    /* The first node's list of tests is near the qos graph's depth cap. */
    rt_use_node_b(true);
    rt_add("ack-timer-eq-on-bar", test_ack_timer_eq_on_bar);
    rt_add("reg-mr-npages-exact", test_reg_mr_npages_exact);
    rt_add_opts("host-mem-cap", test_host_mem_cap, ",max-host-mem=1M");
    rt_add_pair("cmd-flood-fair", test_cmd_flood_fair, ",max-mr=1024");
    rt_add("flush-budget", test_flush_budget);
    rt_add_pair("resize-flood-fair", test_resize_flood_fair, "");
    rt_add("rd-atomic-none", test_rd_atomic_none);
    rt_add("rd-atomic-limit", test_rd_atomic_limit);
    rt_add("rx-source-check", test_rx_source_check);
    rt_add_pair("hub-pair-send", test_hub_pair_send, "");
    rt_add("ring-at-gpa0", test_ring_at_gpa0);
    rt_add("fuzz-cmdq-log-size", test_fuzz_cmdq_log_size);
    rt_add_opts("fault-reorder", test_fault_reorder, ",reorder=100");
    rt_add_opts("fault-duplicate", test_fault_duplicate, ",duplicate=100");
    rt_add_opts("fault-corrupt", test_fault_corrupt, ",corrupt=100");
    rt_add("fault-runtime", test_fault_runtime);
    rt_add_opts("fault-delay", test_fault_delay,
                ",delay=100,delay-us=30000");
    rt_add("pm-d3hot-work", test_pm_d3hot_work);
    rt_add("link-event-in-bh", test_link_event_in_bh);
    rt_add("cmdq-at-gpa0", test_cmdq_at_gpa0);
    rt_use_node_b(false);
    /* q35 machines of their own: ECAM makes config space reachable. */
    qtest_add_func("rnic/q35/pm-cqe-own-config", test_pm_cqe_own_config);
    qtest_add_func("rnic/q35/pm-msix-own-config", test_pm_msix_own_config);
    qtest_add_func("rnic/q35/pm-resize-cq-own-config",
                   test_pm_resize_cq_own_config);
}

libqos_init(register_rnic_hard_test);

#endif /* _WIN32 */
