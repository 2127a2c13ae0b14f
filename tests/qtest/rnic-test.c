/*
 * QTest testcases for the rnic RoCEv2 RNIC: registers, the command queue,
 * commands, page lists and enabling the device
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

/* ---- 1. register reset values ---- */

static void test_reg_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint32_t status, pages;
    unsigned i;

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_VERSION), ==, RNIC_ABI_VERSION);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CTRL), ==, 0);
    status = qrnic_readl(r, RNIC_REG_STATUS);
    g_assert_cmphex(status & ~RNIC_STATUS_LINK_UP, ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 0);

    /* max-uctx=2: pages 0..2 at least, and all inside BAR2. */
    pages = qrnic_readl(r, RNIC_REG_DB_PAGES);
    g_assert_cmpuint(pages, >=, 3);
    g_assert_cmpuint((uint64_t)pages * RNIC_DB_PAGE_SIZE, <=, r->db_size);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_MSIX_VECTORS), ==, 5);

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_LO), ==, ldl_le_p(rt_dev_mac));
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_HI), ==,
                    lduw_le_p(rt_dev_mac + 4));

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_TXQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_TXQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_RXQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_RXQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_NET_CTRL), ==, 0);

    for (i = 0; i < RNIC_CNT_MAX; i++) {
        g_assert_cmpuint(qrnic_counter(r, i), ==, 0);
    }
    /* A counter read as LO then HI (HI latched on LO) is zero too. */
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CNT_BASE), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CNT_BASE + 4), ==, 0);
}

/* ---- 2. commands: success paths ---- */

static void test_cmd_query(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    uint64_t buf;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.abi_version), ==, RNIC_ABI_VERSION);
    g_assert_cmphex(le32_to_cpu(da.vendor_id), ==, RNIC_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(da.vendor_part_id), ==, RNIC_PCI_DEVICE_ID);
    g_assert_cmpuint(le32_to_cpu(da.max_pd), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_cq), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_qp), ==, 4);
    g_assert_cmpuint(le32_to_cpu(da.max_mr), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_uctx), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_eq), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_sge), ==, 4);
    g_assert_cmpuint(le32_to_cpu(da.max_srq), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_mw), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_gid), ==, 4);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_RC, ==,
                    RNIC_DEV_CAP_RC);
    g_assert_cmphex(le64_to_cpu(da.page_size_cap) & 0x1000, ==, 0x1000);
    g_assert_cmpuint(le64_to_cpu(da.node_guid), !=, 0);

    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, buf,
                                 sizeof(pa)), ==, RNIC_CMD_OK);
    qtest_memread(qrnic_qts(e.r), buf, &pa, sizeof(pa));
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);
    g_assert_cmpuint(le32_to_cpu(pa.gid_tbl_len), ==, 4);
    g_assert_cmpuint(pa.active_mtu, >=, RNIC_MTU_256);
    g_assert_cmpuint(pa.active_mtu, <=, pa.max_mtu);
    g_assert_cmpuint(pa.max_mtu, <=, RNIC_MTU_4096);
}

/* Every create/destroy pair, and handles come back in order. */
static void test_cmd_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp2;
    struct rnic_cmd cmd;
    uint32_t out[6], uctx, pdn2, srqn, mw;
    uint64_t srq_buf;
    uint8_t gid[16];

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RESET);

    /* second EQ, a GID and its removal */
    {
        QRnicEq eq1;

        g_assert_cmpuint(qrnic_create_eq(e.r, &eq1, 1, 4), ==, RNIC_CMD_OK);
        g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 1), ==,
                         RNIC_CMD_OK);
        /* EQN 1 is free again */
        g_assert_cmpuint(qrnic_create_eq(e.r, &eq1, 1, 4), ==, RNIC_CMD_OK);
    }
    rt_ipv4_gid(0x0a000009, gid);
    g_assert_cmpuint(qrnic_set_gid(e.r, 3, gid, rt_dev_mac), ==, RNIC_CMD_OK);
    /* DEL_GID checks the reserved fields SET_GID checks, before acting. */
    qrnic_cmd_init(&cmd, RNIC_CMD_DEL_GID);
    cmd.u.gid.index = cpu_to_le32(3);
    cmd.u.gid.rsvd_34 = cpu_to_le16(1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.gid.rsvd_34 = 0;
    cmd.u.gid.rsvd_5[2] = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.gid.rsvd_5[2] = 0;
    /* The entry outlived both: deleting it works once, then is refused. */
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_HANDLE);

    /* user context and a PD owned by it */
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    g_assert_cmpuint(uctx, ==, 1);
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx, &pdn2), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn2, ==, e.pdn + 1);

    /* SRQ */
    srq_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.u.create_srq.log_size = 5;
    cmd.u.create_srq.max_sge = 2;
    cmd.u.create_srq.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(srq_buf);
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    srqn = out[RNIC_OUT_HANDLE];
    g_assert_cmpuint(srqn, ==, 1);
    qrnic_cmd_init(&cmd, RNIC_CMD_MODIFY_SRQ);
    cmd.u.modify_srq.srqn = cpu_to_le32(srqn);
    cmd.u.modify_srq.limit = cpu_to_le32(4);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);

    /* MW: type 1 or 2 on an existing PD; the handle is the rkey. */
    qrnic_cmd_init(&cmd, RNIC_CMD_ALLOC_MW);
    cmd.u.alloc_mw.pdn = cpu_to_le32(e.pdn);
    cmd.u.alloc_mw.type = 3;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.alloc_mw.type = 1;
    cmd.u.alloc_mw.pdn = cpu_to_le32(99);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_HANDLE);
    cmd.u.alloc_mw.pdn = cpu_to_le32(e.pdn);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    mw = out[RNIC_OUT_HANDLE];
    g_assert_cmphex(mw >> 8, ==, (1u << 23) | 1);
    /* The window holds its PD. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_BUSY);

    /* a second QP gets the next QPN */
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp2, RNIC_QPT_RC, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp2.qpn, ==, e.qp.qpn + 1);

    /* tear everything down in dependency order */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, mw), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_SRQ, 0, srqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, qp2.qpn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, e.mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, uctx, pdn2), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx), ==,
                     RNIC_CMD_OK);

    /* and a destroyed handle is gone */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_ERR_HANDLE);
}

/* QUERY_QP reports what MODIFY_QP set. */
static void test_cmd_modify_query_qp(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_query_qp(e.r, e.qp.qpn, &a), ==, RNIC_CMD_OK);
    g_assert_cmpuint(a.qp_state, ==, RNIC_QPS_RTS);
    g_assert_cmphex(le32_to_cpu(a.dest_qpn), ==, PEER_QPN);
    g_assert_cmphex(le32_to_cpu(a.sq_psn), ==, QP_SQ_PSN);
    g_assert_cmphex(le32_to_cpu(a.rq_psn), ==, QP_RQ_PSN);
    g_assert_cmpuint(a.path_mtu, ==, RNIC_MTU_1024);
    g_assert_cmpuint(a.timeout, ==, 14);
    g_assert_cmpmem(a.av.dmac, 6, rt_peer_mac, 6);
    g_assert_cmpuint(le32_to_cpu(a.max_send_wr), >=, 16);
    g_assert_cmpuint(le32_to_cpu(a.max_recv_wr), >=, 32);
    g_assert_cmpuint(le32_to_cpu(a.max_send_sge), >=, 2);

    /* to ERR and back to RESET */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RESET,
                                  RNIC_QP_ATTR_STATE), ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);
}

/* ---- 2. commands: error paths ---- */

static void test_cmd_bad_opcode(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    static const uint8_t bad[] = { 0x00, 0x09, 0x12, 0x3f, 0x43, 0x55,
                                   0x62, 0x7f, 0xff };
    unsigned i;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        qrnic_cmd_init(&cmd, bad[i]);
        g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_OPCODE);
    }
    /* the queue still works */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, ARRAY_SIZE(bad) + 1);
}

static void test_cmd_bad_reserved(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint32_t out[6];

    rt_env_basic(&e, obj, data);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.flags = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.rsvd_8 = cpu_to_le64(1ull << 63);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_DESTROY_PD);
    cmd.u.handle.handle = cpu_to_le32(e.pdn);
    cmd.u.handle.rsvd_4 = cpu_to_le32(1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = 4;
    cmd.u.create_cq.rsvd_1 = 1;
    cmd.u.create_cq.ring.addr = cpu_to_le64(e.cq.buf);
    cmd.u.create_cq.ring.npages = cpu_to_le32(2);
    cmd.u.create_cq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = 4;
    cmd.u.create_cq.ring.addr = cpu_to_le64(e.cq.buf);
    cmd.u.create_cq.ring.npages = cpu_to_le32(2);
    cmd.u.create_cq.ring.page_shift = 12;
    cmd.u.create_cq.ring.rsvd_14 = cpu_to_le16(1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_SET_GID);
    cmd.u.gid.type = RNIC_GID_ROCE_V2_IPV4;
    cmd.u.gid.gid[10] = cmd.u.gid.gid[11] = 0xff;
    cmd.u.gid.vlan_id = cpu_to_le16(0xffff);
    cmd.u.gid.rsvd_30[1] = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    /* and the refused commands changed nothing: the PD is still there */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_HANDLE], ==, e.pdn + 1);
}

static void test_cmd_bad_uctx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn, uctx1, uctx2;

    rt_env_basic(&e, obj, data);
    /* never allocated, and beyond max-uctx */
    g_assert_cmpuint(qrnic_create_pd(e.r, 1, &pdn), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0xffff, &pdn), ==,
                     RNIC_CMD_ERR_HANDLE);

    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx2), ==, RNIC_CMD_OK);
    g_assert_cmpuint(uctx2, !=, uctx1);
    /* max-uctx=2 */
    {
        uint32_t u3;

        g_assert_cmpuint(qrnic_alloc_uctx(e.r, &u3), ==,
                         RNIC_CMD_ERR_RESOURCE);
    }
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx1, &pdn), ==, RNIC_CMD_OK);
    /* another context may not touch it; the kernel may */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, uctx2, pdn), ==,
                     RNIC_CMD_ERR_ACCESS);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, pdn), ==,
                     RNIC_CMD_OK);

    /* a freed context is not usable */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx2), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx2, &pdn), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx2), ==,
                     RNIC_CMD_ERR_HANDLE);
}

static void test_cmd_bad_handle(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    static const uint8_t ops[] = {
        RNIC_CMD_DESTROY_PD, RNIC_CMD_DESTROY_CQ, RNIC_CMD_DESTROY_QP,
        RNIC_CMD_DEREG_MR, RNIC_CMD_DESTROY_SRQ, RNIC_CMD_DEALLOC_MW,
        RNIC_CMD_DEALLOC_UCTX,
    };
    static const uint32_t handles[] = {
        0, 2, 77, (2 << 8) | 1, 0xffffff, 0xffffffff,
    };
    QRnicCq cq;
    QRnicQp qp;
    unsigned i, j;

    rt_env_basic(&e, obj, data);
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        for (j = 0; j < ARRAY_SIZE(handles); j++) {
            g_assert_cmpuint(qrnic_destroy(e.r, ops[i], 0, handles[j]), ==,
                             RNIC_CMD_ERR_HANDLE);
        }
    }
    /* EQ 1 does not exist; EQN max-eq is out of range */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 1), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 2), ==,
                     RNIC_CMD_ERR_HANDLE);
    /* CQ naming a missing EQ; QP naming a missing PD or CQ */
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 1), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, 99, e.cq.cqn,
                                     e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn, 99,
                                     e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn, e.cq.cqn,
                                     0, 4, 5), ==, RNIC_CMD_ERR_HANDLE);
    /* MODIFY/QUERY of a missing QP */
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = 9 }, RNIC_QPS_INIT,
                                  MASK_TO_INIT), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, 9, e.mr.buf, 128),
                     ==, RNIC_CMD_ERR_HANDLE);
    /* REG_MR on a missing PD */
    {
        QRnicMr mr;

        g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, 42, 0, QRNIC_PAGE), ==,
                         RNIC_CMD_ERR_HANDLE);
    }
    /* GID index out of range */
    {
        uint8_t gid[16];

        rt_ipv4_gid(DEV_IP, gid);
        g_assert_cmpuint(qrnic_set_gid(e.r, 4, gid, rt_dev_mac), ==,
                         RNIC_CMD_ERR_PARAM);
    }
    /* QUERY_PORT of port 2 */
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 2, e.mr.buf, 32),
                     ==, RNIC_CMD_ERR_HANDLE);
}

static void test_cmd_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn;
    QRnicCq cq;
    QRnicQp qp;
    QRnicMr mr;
    QRnicEq eq;
    unsigned i;

    rt_env_basic(&e, obj, data);
    /* max-pd=3: env made one */
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_ERR_RESOURCE);
    /* max-cq=3 */
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==,
                     RNIC_CMD_ERR_RESOURCE);
    /* max-mr=3 */
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_ERR_RESOURCE);
    /* max-qp=4 */
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn,
                                         e.cq.cqn, e.cq.cqn, 2, 2),
                         ==, RNIC_CMD_OK);
    }
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 2, 2),
                     ==, RNIC_CMD_ERR_RESOURCE);
    /* max-eq=2: EQN 1 fits, EQN 2 does not, EQN 1 twice is busy/state */
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 2, 4), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 1, 4), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 1, 4), ==, RNIC_CMD_ERR_STATE);
}

static void test_cmd_busy(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);

    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 0), ==,
                     RNIC_CMD_ERR_BUSY);

    /* the QP still works after the refused destroys */
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_INIT);

    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    /* the MR still holds the PD */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, e.mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 0), ==,
                     RNIC_CMD_OK);
}

static void test_qp_bad_transition(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RESET);

    /* RESET -> RTR, RESET -> RTS, RESET -> SQD are not transitions */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_SQD, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_ERR_STATE);
    /* an unknown state */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, 7, RNIC_QP_ATTR_STATE), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);

    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    /* INIT -> RTS skips RTR */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
    /* RTR -> INIT goes backwards */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_ERR_STATE);
    /* CUR_STATE that does not match */
    {
        struct rnic_qp_attr a;

        rt_attr_for(&a, RNIC_QPS_RTS);
        a.cur_qp_state = RNIC_QPS_INIT;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn,
                                         MASK_TO_RTS |
                                         RNIC_QP_ATTR_CUR_STATE, &a),
                         ==, RNIC_CMD_ERR_STATE);
    }
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

static void test_qp_bad_mask(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RESET);

    /* missing a required attribute */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                                  MASK_TO_INIT & ~RNIC_QP_ATTR_PORT), ==,
                     RNIC_CMD_ERR_PARAM);
    /* one that RESET -> INIT does not allow for RC */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                                  MASK_TO_INIT | RNIC_QP_ATTR_SQ_PSN), ==,
                     RNIC_CMD_ERR_PARAM);
    /* bits beyond the ABI */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                                  MASK_TO_INIT | (1u << 30)), ==,
                     RNIC_CMD_ERR_PARAM);
    /* a bad port */
    {
        struct rnic_qp_attr a;

        rt_attr_for(&a, RNIC_QPS_INIT);
        a.port_num = 2;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_INIT, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);

    /* INIT -> RTR without AV, and with a bad MTU or GID index */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR,
                                  MASK_TO_RTR & ~RNIC_QP_ATTR_AV), ==,
                     RNIC_CMD_ERR_PARAM);
    {
        struct rnic_qp_attr a;

        rt_attr_for(&a, RNIC_QPS_RTR);
        a.path_mtu = 6;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a),
                         ==, RNIC_CMD_ERR_PARAM);
        rt_attr_for(&a, RNIC_QPS_RTR);
        a.av.sgid_index = 3;        /* no GID there */
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);

    /* RTR -> RTS without SQ_PSN, and with retry_cnt out of range */
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTS,
                                  MASK_TO_RTS & ~RNIC_QP_ATTR_SQ_PSN), ==,
                     RNIC_CMD_ERR_PARAM);
    {
        struct rnic_qp_attr a;

        rt_attr_for(&a, RNIC_QPS_RTS);
        a.retry_cnt = 8;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTS, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
}

static void test_cmd_query_short(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint64_t buf;
    uint8_t page[64];
    unsigned i;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qtest_memset(qrnic_qts(e.r), buf, 0xa5, QRNIC_PAGE);

    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_DEVICE, 0, buf,
                                 sizeof(struct rnic_device_attr) - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, buf,
                                 RNIC_PORT_ATTR_MIN_SIZE - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, buf,
                                 sizeof(struct rnic_qp_attr) - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, buf, 0),
                     ==, RNIC_CMD_ERR_PARAM);

    /* nothing was written */
    qtest_memread(qrnic_qts(e.r), buf, page, sizeof(page));
    for (i = 0; i < sizeof(page); i++) {
        g_assert_cmphex(page[i], ==, 0xa5);
    }
}

/* ---- 3. page lists, ring sizes and SGE counts ---- */

static uint8_t create_cq_pbl(Env *e, unsigned log_size, uint64_t addr,
                             uint32_t npages, uint8_t shift, uint8_t levels)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = log_size;
    cmd.u.create_cq.eqn = 0;
    cmd.u.create_cq.ring.addr = cpu_to_le64(addr);
    cmd.u.create_cq.ring.npages = cpu_to_le32(npages);
    cmd.u.create_cq.ring.page_shift = shift;
    cmd.u.create_cq.ring.levels = levels;
    return qrnic_cmd(e->r, &cmd, NULL);
}

/*
 * A CQ of 4M entries (1 << RNIC_CQ_MAX_LOG_SIZE), what ConnectX offers and
 * more than the 256K libfabric's RDM endpoints ask for by default:
 * query_device says so and CREATE_CQ takes it (its 65,537 ring pages all
 * name two real pages here).  A RESIZE_CQ that would carry more than
 * RNIC_CQ_MOVE_MAX unconsumed CQEs is refused and changes nothing; one
 * that carries exactly that many goes through.
 */
static void test_cq_large(void *obj, void *data, QGuestAllocator *alloc)
{
    const unsigned log = RNIC_CQ_MAX_LOG_SIZE;
    const uint32_t npages = 1 + ((RNIC_CQE_SIZE << log) / QRNIC_PAGE);
    const uint32_t nlists = DIV_ROUND_UP(npages, RNIC_PBL_ENTRIES_PER_PAGE);
    g_autofree uint64_t *ents = g_new(uint64_t, RNIC_PBL_ENTRIES_PER_PAGE);
    g_autofree uint64_t *tops = g_new(uint64_t, nlists);
    struct rnic_device_attr attr;
    struct rnic_pbl ring = {};
    uint64_t dbrec, cqes, list0, list, top;
    struct rnic_cmd cmd;
    uint32_t out[6], cqn, i;
    QTestState *qts;
    Env e;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    g_assert_cmpuint(qrnic_query_device(e.r, &attr), ==, RNIC_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(attr.max_cqe), ==, 1u << log);

    dbrec = qrnic_alloc(e.r, QRNIC_PAGE);
    cqes = qrnic_alloc(e.r, QRNIC_PAGE);
    list0 = qrnic_alloc(e.r, QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    top = qrnic_alloc(e.r, QEMU_ALIGN_UP(nlists * 8, QRNIC_PAGE));
    for (i = 0; i < RNIC_PBL_ENTRIES_PER_PAGE; i++) {
        ents[i] = cpu_to_le64(cqes);
    }
    qtest_memwrite(qts, list, ents, QRNIC_PAGE);
    ents[0] = cpu_to_le64(dbrec);
    qtest_memwrite(qts, list0, ents, QRNIC_PAGE);
    for (i = 0; i < nlists; i++) {
        tops[i] = cpu_to_le64(i ? list : list0);
    }
    qtest_memwrite(qts, top, tops, nlists * 8);

    ring.addr = cpu_to_le64(top);
    ring.npages = cpu_to_le32(npages);
    ring.page_shift = 12;
    ring.levels = 2;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = log;
    cmd.u.create_cq.ring = ring;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_ENTRIES], ==, 1u << log);
    cqn = out[RNIC_OUT_HANDLE];

    /* The consumer claims one CQE too many unconsumed: refused. */
    qtest_writel(qts, dbrec, -(RNIC_CQ_MOVE_MAX + 1));
    qrnic_cmd_init(&cmd, RNIC_CMD_RESIZE_CQ);
    cmd.u.resize_cq.cqn = cpu_to_le32(cqn);
    cmd.u.resize_cq.log_size = log;
    cmd.u.resize_cq.ring = ring;        /* the same pages again */
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_STATE);
    qtest_writel(qts, dbrec, -RNIC_CQ_MOVE_MAX);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_MOVED], ==, RNIC_CQ_MOVE_MAX);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, cqn), ==,
                     RNIC_CMD_OK);
}

static uint8_t reg_mr_pbl(Env *e, uint64_t iova, uint64_t len,
                          uint64_t addr, uint32_t npages, uint8_t shift,
                          uint8_t levels)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(e->pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    cmd.u.reg_mr.iova = cpu_to_le64(iova);
    cmd.u.reg_mr.length = cpu_to_le64(len);
    cmd.u.reg_mr.pages.addr = cpu_to_le64(addr);
    cmd.u.reg_mr.pages.npages = cpu_to_le32(npages);
    cmd.u.reg_mr.pages.page_shift = shift;
    cmd.u.reg_mr.pages.levels = levels;
    return qrnic_cmd(e->r, &cmd, NULL);
}

static void test_pbl_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint64_t pages, list;
    struct rnic_device_attr da;
    uint64_t ents[2];

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    pages = qrnic_alloc(e.r, 4 * QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);

    /* CQ: log 4 needs 2 pages (dbrec + one of CQEs) */
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 0, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 3, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 0x80000000u, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages + 8, 2, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 13, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 12, 3), ==,
                     RNIC_CMD_ERR_PARAM);
    /* levels 1 with an unaligned entry */
    ents[0] = cpu_to_le64(pages);
    ents[1] = cpu_to_le64(pages + QRNIC_PAGE + 0x10);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    /* ... and fixed, it works */
    ents[1] = cpu_to_le64(pages + 2 * QRNIC_PAGE);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==, RNIC_CMD_OK);

    /* MR: page_shift out of 12..30, npages 0 or above max-mr-pages */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 11, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 31, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 0, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages,
                                le32_to_cpu(da.max_mr_pages) + 1, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages + 0x200, 1, 12, 0),
                     ==, RNIC_CMD_ERR_PARAM);
    /* length beyond the pages, and iova + length wrapping */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, 2 * QRNIC_PAGE, pages, 1, 12, 0),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, UINT64_MAX - 0x100, QRNIC_PAGE, pages, 1,
                                12, 0), ==, RNIC_CMD_ERR_PARAM);
    /* a 2-level list whose directory points at an unaligned page */
    ents[0] = cpu_to_le64(list + QRNIC_PAGE / 2);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents[0]));
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, list, 1, 12, 2), ==,
                     RNIC_CMD_ERR_PARAM);
    /* good one (max-mr=3: env holds one) */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 12, 0), ==,
                     RNIC_CMD_OK);
}

static void test_ring_size_errors(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t pages;

    rt_env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 4 * QRNIC_PAGE);

    /* CQ log_size 0 and above RNIC_CQ_MAX_LOG_SIZE */
    g_assert_cmpuint(create_cq_pbl(&e, 0, pages, 2, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, RNIC_CQ_MAX_LOG_SIZE + 1, pages, 2, 12,
                                   0), ==, RNIC_CMD_ERR_PARAM);
    /* CQ ring page size must be 4 KiB */
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 13, 0), ==,
                     RNIC_CMD_ERR_PARAM);

    /* EQ log_size 0 and above the maximum */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ);
    cmd.u.eq.eqn = cpu_to_le32(1);
    cmd.u.eq.ring.addr = cpu_to_le64(pages);
    cmd.u.eq.ring.npages = cpu_to_le32(1);
    cmd.u.eq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.eq.log_size = RNIC_EQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* a vector the device does not have (msix-vectors=5) */
    cmd.u.eq.log_size = 4;
    cmd.u.eq.vector = cpu_to_le16(5);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    /* QP: SQ/RQ log sizes too big (0 is a one-entry ring) */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.max_recv_sge = 1;
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(pages);
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    cmd.u.create_qp.rq.addr = cpu_to_le64(pages + QRNIC_PAGE);
    cmd.u.create_qp.rq.npages = cpu_to_le32(1);
    cmd.u.create_qp.rq.page_shift = 12;
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.sq_log_size = RNIC_WQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.rq_log_size = RNIC_WQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* ring bigger than its pages: SQ log 5 is 8 KiB in one page */
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.sq_log_size = 5;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* unknown QP type */
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.qp_type = 9;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* and the good one */
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
}

static void test_sge_count_errors(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t pages;

    rt_env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 2 * QRNIC_PAGE);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(pages);
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    cmd.u.create_qp.rq.addr = cpu_to_le64(pages + QRNIC_PAGE);
    cmd.u.create_qp.rq.npages = cpu_to_le32(1);
    cmd.u.create_qp.rq.page_shift = 12;

    /* max-sge=4 */
    cmd.u.create_qp.max_send_sge = 5;
    cmd.u.create_qp.max_recv_sge = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.max_recv_sge = 5;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_recv_sge = 1;
    cmd.u.create_qp.max_inline = cpu_to_le16(RNIC_MAX_INLINE + 1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_inline = 0;
    cmd.u.create_qp.max_send_sge = 4;
    cmd.u.create_qp.max_recv_sge = 4;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);

    /* SRQ with too many SGEs */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.u.create_srq.log_size = 5;
    cmd.u.create_srq.max_sge = 5;
    cmd.u.create_srq.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(pages);
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
}

/* ---- 4. enable ---- */

static void test_cmd_before_enable(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;
    uint64_t base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << 2);
    uint64_t before = qrnic_counter(r, RNIC_CNT_GUEST_ERR);

    /* queue programmed but ENABLE not set */
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, base);
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_HI, base >> 32);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, 2);
    r->cmdq = base;
    r->cmdq_log_size = 2;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    g_assert_false(qrnic_cmd_wait(r, 0, &resp, 200));
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    0);
    g_assert_cmpuint(qrnic_counter(r, RNIC_CNT_GUEST_ERR), >, before);

    /* enabling later starts from a fresh queue and works */
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/*
 * One refused enable: READY stays clear and a guest error is counted.
 * Clearing ENABLE afterwards resets the device (counters included).
 */
static void bad_enable(QRnic *r, uint64_t base, uint32_t log_size)
{
    uint64_t before = qrnic_counter(r, RNIC_CNT_GUEST_ERR);

    g_assert_cmphex(qrnic_try_enable(r, base, log_size) & RNIC_STATUS_READY,
                    ==, 0);
    g_assert_cmpuint(qrnic_counter(r, RNIC_CNT_GUEST_ERR), >, before);
    qrnic_writel(r, RNIC_REG_CTRL, 0);
}

static void test_enable_bad_log_size(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << 4);
    struct rnic_cmd cmd;

    bad_enable(r, base, 0);
    bad_enable(r, base, RNIC_CMDQ_MAX_LOG_SIZE + 1);
    bad_enable(r, base, 0xffffffff);

    /* enabled with a bad size: a command rung now is ignored */
    g_assert_cmphex(qrnic_try_enable(r, base, 0) & RNIC_STATUS_READY, ==, 0);
    r->cmdq_log_size = 4;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    qrnic_settle(r);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qtest_readb(qrnic_qts(r), base +
                                 offsetof(struct rnic_cmd, resp.done)), ==, 0);

    /* the largest valid size works */
    qrnic_writel(r, RNIC_REG_CTRL, RNIC_CTRL_RESET);
    base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << RNIC_CMDQ_MAX_LOG_SIZE);
    g_assert_cmphex(qrnic_try_enable(r, base, RNIC_CMDQ_MAX_LOG_SIZE) &
                    RNIC_STATUS_READY, ==, RNIC_STATUS_READY);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

static void test_enable_unaligned(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t base = qrnic_alloc(r, 2 * QRNIC_PAGE);

    bad_enable(r, base + 256, 2);
    bad_enable(r, base + 8, 2);
    g_assert_cmphex(qrnic_try_enable(r, base, 2) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
}

/* CMDQ_BASE and CMDQ_LOG_SIZE are locked while enabled. */
static void test_cmdq_regs_locked(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    uint64_t base;

    qrnic_enable(r);
    base = r->cmdq;
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, (uint32_t)base + QRNIC_PAGE);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, 1);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==,
                    (uint32_t)base);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 4);
    /* the queue still runs from the latched base */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* A PI more than the ring size ahead of CI is fatal. */
static void test_cmdq_overrun(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;

    qrnic_enable(r);
    qrnic_writel(r, RNIC_REG_CMDQ_PI, (1u << r->cmdq_log_size) + 1);
    qrnic_settle(r);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    RNIC_STATUS_FATAL);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 1);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);

    /* stopped until reset */
    r->cmdq_pi = 0;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    g_assert_false(qrnic_cmd_wait(r, 0, &resp, 200));

    qrnic_reset(r);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_FATAL | RNIC_STATUS_READY), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 0);
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* Several commands rung with one doorbell complete in order. */
static void test_cmdq_batch(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;
    unsigned i, n = 20;     /* wraps the 16-entry queue */

    qrnic_enable(r);
    for (i = 0; i < n; i++) {
        uint32_t idx;

        if (i % 2) {
            qrnic_cmd_init(&cmd, RNIC_CMD_DESTROY_PD);
            cmd.u.handle.handle = cpu_to_le32(1);
        } else {
            qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
        }
        idx = qrnic_cmd_post(r, &cmd);
        g_assert_true(qrnic_cmd_wait(r, idx, &resp, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
        if (!(i % 2)) {
            g_assert_cmpuint(le32_to_cpu(resp.out[RNIC_OUT_HANDLE]), ==, 1);
        }
    }
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, n);

    /* three at once (max-pd=3) */
    for (i = 0; i < 3; i++) {
        uint32_t idx = r->cmdq_pi & 15;

        qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
        cmd.hdr.cookie = cpu_to_le32(2000 + i);
        qtest_memwrite(qrnic_qts(r), r->cmdq + idx * RNIC_CMD_ENTRY_SIZE,
                       &cmd, sizeof(cmd));
        r->cmdq_pi++;
    }
    qrnic_writel(r, RNIC_REG_CMDQ_PI, r->cmdq_pi);
    for (i = 0; i < 3; i++) {
        g_assert_true(qrnic_cmd_wait(r, (n + i) & 15, &resp,
                                     QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
        g_assert_cmpuint(le32_to_cpu(resp.cookie), ==, 2000 + i);
        g_assert_cmpuint(le32_to_cpu(resp.out[RNIC_OUT_HANDLE]), ==, 1 + i);
    }
}

/* ---- 5/6. MMIO corner cases ---- */

static void test_db_read(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_SQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_CQ), ==, 0);
    g_assert_cmphex(qpci_io_readl(&e.r->dev, e.r->db, RNIC_DB_EQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db,
                                  RNIC_DB_PAGE_SIZE + RNIC_DB_RQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, 0x800), ==, 0);
    /* the device still works */
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

static void test_regs_unknown_write(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QRnic *r = obj;
    static const uint32_t offs[] = {
        RNIC_REG_MAGIC, RNIC_REG_VERSION, RNIC_REG_STATUS, RNIC_REG_DB_PAGES,
        RNIC_REG_MSIX_VECTORS, RNIC_REG_FATAL_CODE, RNIC_REG_CMDQ_CI,
        RNIC_REG_MAC_LO, RNIC_REG_MAC_HI, 0x001c, 0x0034, 0x0040, 0x00fc,
        RNIC_REG_CNT_BASE, RNIC_REG_CNT_BASE + 8 * RNIC_CNT_MAX, 0x0800,
        0x8000, RNIC_REGS_SIZE - 4,
    };
    uint32_t snap[ARRAY_SIZE(offs)];
    struct rnic_cmd cmd;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        snap[i] = qrnic_readl(r, offs[i]);
    }
    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        qrnic_writel(r, offs[i], 0xdeadbeef);
        qpci_io_writeb(&r->dev, r->regs, offs[i] + 1, 0x5a);
    }
    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        if (offs[i] == RNIC_REG_STATUS) {
            continue;
        }
        g_assert_cmphex(qrnic_readl(r, offs[i]), ==, snap[i]);
    }
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    /* still works */
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query(r, RNIC_CMD_QUERY_PORT, 1,
                                 qrnic_alloc(r, QRNIC_PAGE), 32), ==,
                     RNIC_CMD_OK);
}

/* ---- more register guest errors ---- */

/* Misaligned accesses are refused and change nothing. */
static void test_regs_misaligned(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = rt_guest_errs(r);

    g_assert_cmphex(qpci_io_readl(&r->dev, r->regs, RNIC_REG_MAGIC + 2), ==,
                    0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_MAGIC + 1), ==,
                    0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CNT_BASE + 4),
                    ==, 0);
    qpci_io_writel(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO + 2, 0x12345678);
    qpci_io_writeq(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO + 4,
                   0x1111222233334444ull);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 5);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    qrnic_enable(r);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 5);
}

/* Reads of the wrong width or of unknown registers return 0. */
static void test_regs_bad_read(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = rt_guest_errs(r);

    g_assert_cmphex(qpci_io_readb(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_CNT_BASE), ==,
                    0);
    g_assert_cmphex(qpci_io_readb(&r->dev, r->regs, RNIC_REG_CNT_BASE), ==,
                    0);
    g_assert_cmphex(qrnic_readl(r, 0x001c), ==, 0);
    g_assert_cmphex(qrnic_readl(r, 0x0800), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REGS_SIZE - 4), ==, 0);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 9);
    /* the right shapes still read */
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO),
                    ==, 0);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 9);
}

/* Writes to read-only registers and counters are counted and ignored. */
static void test_regs_ro_write(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint32_t cnt = RNIC_REG_CNT_BASE + 8 * RNIC_CNT_GUEST_ERR;
    uint64_t before;

    qrnic_enable(r);
    before = rt_guest_errs(r);
    qrnic_writel(r, RNIC_REG_MAGIC, 0);
    qrnic_writel(r, RNIC_REG_STATUS, 0);
    qrnic_writel(r, RNIC_REG_CMDQ_CI, 5);
    qrnic_writel(r, RNIC_REG_TXQ_BASE_LO + NQ_CI, 5);
    qrnic_writel(r, RNIC_REG_RXQ_BASE_LO + NQ_CI, 5);
    qrnic_writel(r, RNIC_REG_MAC_LO, 0);
    qpci_io_writeq(&r->dev, r->regs, cnt, 0);
    qrnic_writel(r, cnt, 0);
    qrnic_writel(r, cnt + 4, 0xffffffff);
    /* 8-byte write of a register that is not a LO/HI pair */
    qpci_io_writeq(&r->dev, r->regs, RNIC_REG_CMDQ_LOG_SIZE, 3);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 10);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_LO), ==, ldl_le_p(rt_dev_mac));
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 4);
}

/* ---- command DMA errors ---- */

/* A command queue in memory the device cannot read. */
static void test_cmdq_fetch_dma(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;

    g_assert_cmphex(qrnic_try_enable(r, BAD_DMA, 2) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
    qrnic_writel(r, RNIC_REG_CMDQ_PI, 2);
    qrnic_settle(r);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 2);
    g_assert_cmpuint(rt_guest_errs(r), ==, 2);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    0);

    qrnic_reset(r);
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* QUERY_* answers to memory the device cannot write. */
static void test_cmd_out_dma(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_device_attr da;
    uint64_t before;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    before = rt_guest_errs(e.r);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_DEVICE, 0, BAD_DMA,
                                 sizeof(da)), ==, RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, BAD_DMA,
                                 sizeof(struct rnic_port_attr)), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, BAD_DMA,
                                 sizeof(struct rnic_qp_attr)), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 3);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.abi_version), ==, RNIC_ABI_VERSION);
}

/* Page lists the device cannot read, at bad addresses, or that wrap. */
static void test_pbl_list_errors(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint64_t pages, list, before, ents[2];

    rt_env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 2 * QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    ents[0] = cpu_to_le64(pages);
    ents[1] = cpu_to_le64(pages + QRNIC_PAGE);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    before = rt_guest_errs(e.r);

    /* levels 1 and 2 with the list where nothing decodes */
    g_assert_cmpuint(create_cq_pbl(&e, 4, BAD_DMA, 2, 12, 1), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(create_cq_pbl(&e, 4, BAD_DMA, 2, 12, 2), ==,
                     RNIC_CMD_ERR_DMA);
    /* list and directory not 8-byte aligned */
    g_assert_cmpuint(create_cq_pbl(&e, 4, list + 4, 2, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, list + 4, 2, 12, 2), ==,
                     RNIC_CMD_ERR_PARAM);
    /* contiguous pages that run off the end of the address space */
    g_assert_cmpuint(create_cq_pbl(&e, 4, UINT64_MAX - QRNIC_PAGE + 1, 2, 12,
                                   0), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);

    /* the same list, properly given, works */
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 5);
}

/* MODIFY_QP with an alternate path: not supported, QP unchanged. */
static void test_qp_alt_path(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR,
                                  MASK_TO_RTR | RNIC_QP_ATTR_ALT_PATH), ==,
                     RNIC_CMD_ERR_NOT_SUPP);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_INIT);
    g_assert_cmpuint(rt_qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
}

/* A receive WQE with more SGEs than the QP allows fails the message. */

/* ---- registration ---- */

static void register_rnic_test(void)
{
    rt_add("reg-reset", test_reg_reset);
    rt_add("regs-unknown-write", test_regs_unknown_write);
    rt_add("cmd-query", test_cmd_query);
    rt_add("cmd-objects", test_cmd_objects);
    rt_add("cmd-modify-query-qp", test_cmd_modify_query_qp);
    rt_add("cmd-bad-opcode", test_cmd_bad_opcode);
    rt_add("cmd-bad-reserved", test_cmd_bad_reserved);
    rt_add("cmd-bad-uctx", test_cmd_bad_uctx);
    rt_add("cmd-bad-handle", test_cmd_bad_handle);
    rt_add("cmd-limits", test_cmd_limits);
    rt_add("cmd-busy", test_cmd_busy);
    rt_add("cmd-query-short", test_cmd_query_short);
    rt_add("qp-bad-transition", test_qp_bad_transition);
    rt_add("qp-bad-mask", test_qp_bad_mask);
    rt_add("pbl-errors", test_pbl_errors);
    rt_add("ring-size-errors", test_ring_size_errors);
    rt_add("sge-count-errors", test_sge_count_errors);
    rt_add("cmd-before-enable", test_cmd_before_enable);
    rt_add("enable-bad-log-size", test_enable_bad_log_size);
    rt_add("enable-unaligned", test_enable_unaligned);
    rt_add("cmdq-regs-locked", test_cmdq_regs_locked);
    rt_add("cmdq-overrun", test_cmdq_overrun);
    rt_add("cmdq-batch", test_cmdq_batch);
    rt_add("db-read", test_db_read);
    rt_add("regs-misaligned", test_regs_misaligned);
    rt_add("regs-bad-read", test_regs_bad_read);
    rt_add("regs-ro-write", test_regs_ro_write);
    rt_add("cmdq-fetch-dma", test_cmdq_fetch_dma);
    rt_add("cmd-out-dma", test_cmd_out_dma);
    rt_add("pbl-list-errors", test_pbl_list_errors);
    rt_add("qp-alt-path", test_qp_alt_path);
    /* The first node's list of tests is near the qos graph's depth cap. */
    rt_use_node_b(true);
    rt_add("cq-large", test_cq_large);
    rt_use_node_b(false);
}

libqos_init(register_rnic_test);

#endif /* _WIN32 */
