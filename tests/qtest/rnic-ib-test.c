/*
 * QTest cases for rnic: the InfiniBand port and its management agents
 *
 * A device with link-layer=infiniband: what QUERY_DEVICE and QUERY_PORT
 * report, the port's states over the netdev's link, and the answers of
 * the SMA and the PMA to MADs passed with MAD_IFC, byte by byte, with
 * the port events they post and the statuses of bad commands and MADs.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "rnic-ib-common.h"

#ifndef _WIN32

/* ---- QUERY_DEVICE and QUERY_PORT ---- */

static void test_query(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    uint8_t tail[16];
    IbEnv t;
    unsigned i;

    ibt_ib_env(&t, obj, data);
    g_assert_cmpuint(qrnic_query_device(t.e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le64_to_cpu(da.node_guid), ==, NODE_GUID);

    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.link_layer, ==, RNIC_LINK_INFINIBAND);
    /* The link is up; no SM has armed the port. */
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(pa.phys_state, ==, RNIC_PHYS_LINK_UP);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 0);
    g_assert_cmpuint(le16_to_cpu(pa.sm_lid), ==, 0);
    g_assert_cmpuint(pa.lmc, ==, 0);
    g_assert_cmpuint(le16_to_cpu(pa.pkey_tbl_len), ==, 32);
    g_assert_cmphex(le32_to_cpu(pa.port_cap_flags), !=, 0);
    g_assert_cmphex(le64_to_cpu(pa.port_guid), ==, PORT_GUID);
    g_assert_cmpuint(pa.active_mtu, ==, RNIC_MTU_4096);
    g_assert_cmphex(le64_to_cpu(pa.rsvd_40), ==, 0);

    /* A 32-byte answer for a driver that asks for 32: nothing past it. */
    qtest_memset(qrnic_qts(t.e.r), t.out, 0xa5, 64);
    g_assert_cmpuint(qrnic_query(t.e.r, RNIC_CMD_QUERY_PORT, 1, t.out,
                                 RNIC_PORT_ATTR_MIN_SIZE), ==, RNIC_CMD_OK);
    qtest_memread(qrnic_qts(t.e.r), t.out + 32, tail, sizeof(tail));
    for (i = 0; i < sizeof(tail); i++) {
        g_assert_cmphex(tail[i], ==, 0xa5);
    }
    g_assert_cmpuint(qrnic_query(t.e.r, RNIC_CMD_QUERY_PORT, 1, t.out,
                                 RNIC_PORT_ATTR_MIN_SIZE - 1), ==,
                     RNIC_CMD_ERR_PARAM);
    ibt_expect_no_eqe(&t);
}

/* Ethernet: the old answer, bytes 16 on zero, GUID from the MAC. */
static void test_query_eth(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t zero[32];
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    IbEnv t;
    Mad m;

    ibt_ib_env(&t, obj, data);
    g_assert_cmpuint(qrnic_query_device(t.e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le64_to_cpu(da.node_guid), ==, 0x505400fffe123466ull);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);
    g_assert_cmpuint(pa.active_mtu, ==, RNIC_MTU_1024);
    g_assert_cmpmem((uint8_t *)&pa + 16, 32, zero, 32);

    /* No management agents on an Ethernet port. */
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, t.in, NULL,
                                     NULL), ==, RNIC_CMD_ERR_STATE);
}

/* ---- the SMA ---- */

static void test_node(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    const uint8_t *d = r.b + M_DATA;

    ibt_ib_env(&t, obj, data);
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(d[0], ==, 1);              /* BaseVersion */
    g_assert_cmpuint(d[1], ==, 1);              /* ClassVersion */
    g_assert_cmpuint(d[2], ==, 1);              /* NodeType: CA */
    g_assert_cmpuint(d[3], ==, 1);              /* NumPorts */
    g_assert_cmphex(ldq_be_p(d + 4), ==, NODE_GUID);   /* SystemImageGUID */
    g_assert_cmphex(ldq_be_p(d + 12), ==, NODE_GUID);
    g_assert_cmphex(ldq_be_p(d + 20), ==, PORT_GUID);
    g_assert_cmpuint(lduw_be_p(d + 28), ==, 32);       /* PartitionCap */
    g_assert_cmphex(lduw_be_p(d + 30), ==, RNIC_PCI_DEVICE_ID);
    g_assert_cmpuint(d[36], ==, 1);             /* LocalPortNum */
    g_assert_cmphex(ldl_be_p(d + 36) & 0xffffff, ==, RNIC_PCI_VENDOR_ID);

    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_DESC, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpstr((const char *)r.b + M_DATA, ==, "rnic");

    ibt_mad_init(&m, CLASS_LID, GET, A_GUID_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA), ==, PORT_GUID);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + 8), ==, 0);
    ibt_mad_init(&m, CLASS_LID, GET, A_GUID_INFO, 1);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VALUE);

    /* Read-only and unknown attributes, methods, versions. */
    ibt_mad_init(&m, CLASS_LID, SET, A_NODE_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_ATTR);
    ibt_mad_init(&m, CLASS_LID, GET, A_SWITCH_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_ATTR);
    ibt_mad_init(&m, CLASS_LID, 0x06, A_NODE_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_METHOD);
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    m.b[M_CLASS_VER] = 2;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VERSION);
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    m.b[0] = 2;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VERSION);
    /* Responses are not answered, nor SMPs that came by QP1. */
    ibt_mad_init(&m, CLASS_LID, GET_RESP, A_NODE_INFO, 0);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    g_assert_cmphex(r.b[0], ==, 0xa5);
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    {
        bool reply = true;

        g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, 0, t.in, NULL, &reply), ==,
                         RNIC_CMD_OK);
        g_assert_false(reply);
        /* The driver's own query needs no QP0. */
        g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_IGNORE_MKEY,
                                         t.in, &r, &reply), ==, RNIC_CMD_OK);
        g_assert_true(reply);
        ibt_assert_resp(&r, 0);
    }
}

/* The SM's bring-up: LID, SM LID, ARMED, ACTIVE, with their events. */
static void test_port_info(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    IbEnv t;
    Mad r;
    const uint8_t *d = r.b + M_DATA;

    ibt_ib_env(&t, obj, data);
    ibt_port_info(&t, &r);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(d[PI_PHYS] >> 4, ==, RNIC_PHYS_LINK_UP);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 0);
    g_assert_cmphex(ldl_be_p(d + 20), !=, 0);          /* CapabilityMask */
    g_assert_cmpuint(d[28], ==, 1);                     /* LocalPortNum */

    /* ACTIVE straight from INIT is refused, and changes nothing. */
    g_assert_cmphex(ibt_port_info_set(&t, 5, 1, 2, RNIC_PORT_ACTIVE, &r), ==,
                    ST_BAD_VALUE);
    ibt_assert_resp(&r, ST_BAD_VALUE);
    ibt_expect_no_eqe(&t);
    /* So is a multicast LID. */
    g_assert_cmphex(ibt_port_info_set(&t, 0xc001, 1, 2, 0, &r), ==,
                    ST_BAD_VALUE);
    ibt_port_info(&t, &r);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 0);

    g_assert_cmphex(ibt_port_info_set(&t, 5, 1, 2, RNIC_PORT_ARMED, &r), ==, 0);
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 5);
    g_assert_cmpuint(lduw_be_p(d + PI_SM_LID), ==, 1);
    g_assert_cmpuint(d[PI_PROT_LMC] & 7, ==, 2);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_ARMED);
    ibt_expect_eqe(&t, RNIC_EQE_LID_CHANGE);
    ibt_expect_eqe(&t, RNIC_EQE_SM_CHANGE);
    ibt_expect_no_eqe(&t);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ARMED);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 5);
    g_assert_cmpuint(le16_to_cpu(pa.sm_lid), ==, 1);
    g_assert_cmpuint(pa.lmc, ==, 2);

    /* The same values again: no events. */
    g_assert_cmphex(ibt_port_info_set(&t, 5, 1, 2, RNIC_PORT_ACTIVE, &r),
                    ==, 0);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_ACTIVE);
    ibt_expect_eqe(&t, RNIC_EQE_PORT_ACTIVE);
    ibt_expect_no_eqe(&t);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);

    /* An ACTIVE port cannot be ARMED again; Down retrains to INIT. */
    g_assert_cmphex(ibt_port_info_set(&t, 5, 1, 2, RNIC_PORT_ARMED, &r), ==,
                    ST_BAD_VALUE);
    g_assert_cmphex(ibt_port_info_set(&t, 5, 1, 2, RNIC_PORT_DOWN, &r), ==, 0);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_INIT);
    ibt_expect_eqe(&t, RNIC_EQE_PORT_DOWN);
    ibt_expect_no_eqe(&t);
    /* PortInfo of port 2 does not exist on a CA. */
    {
        Mad m;

        ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 2);
        g_assert_true(ibt_mad_ifc(&t, &m, &r));
        ibt_assert_resp(&r, ST_BAD_VALUE);
    }
}

/* The netdev's link: DOWN when it goes, INIT when it comes back. */
static void test_link(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    QDict *resp;
    IbEnv t;
    Mad r;

    ibt_ib_env(&t, obj, data);
    ibt_port_info_set(&t, 7, 1, 0, RNIC_PORT_ARMED, &r);
    ibt_port_info_set(&t, 7, 1, 0, RNIC_PORT_ACTIVE, &r);
    ibt_expect_eqe(&t, RNIC_EQE_LID_CHANGE);
    ibt_expect_eqe(&t, RNIC_EQE_SM_CHANGE);
    ibt_expect_eqe(&t, RNIC_EQE_PORT_ACTIVE);

    resp = qtest_qmp(qrnic_qts(t.e.r), "{'execute': 'set_link', 'arguments':"
                     " {'name': 'hs0', 'up': false}}");
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    ibt_expect_eqe(&t, RNIC_EQE_PORT_DOWN);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_DOWN);
    g_assert_cmpuint(pa.phys_state, ==, RNIC_PHYS_POLLING);
    /* The LID stays for the SM's next sweep. */
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 7);

    resp = qtest_qmp(qrnic_qts(t.e.r), "{'execute': 'set_link', 'arguments':"
                     " {'name': 'hs0', 'up': true}}");
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    /* Up is not ACTIVE: the SM has to arm the port again. */
    ibt_expect_no_eqe(&t);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(pa.phys_state, ==, RNIC_PHYS_LINK_UP);
}

static void test_mkey(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    bool reply;

    ibt_ib_env(&t, obj, data);
    ibt_set_mkey(&t, 0xfeedull, 2, &r);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + PI_MKEY), ==, 0xfeed);

    /* Protection 2: a Get without the key is dropped and counted. */
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    ibt_mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    stq_be_p(m.b + M_MKEY, 0xfeed);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_MKEY_VIOL), ==, 2);
    /* The driver's own queries pass. */
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_IGNORE_MKEY, t.in,
                                     &r, &reply), ==, RNIC_CMD_OK);
    g_assert_true(reply);

    /* Protection 1: the Get passes, the M_Key reads as zero. */
    memcpy(m.b + M_DATA, r.b + M_DATA, 64);
    ibt_mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, r.b + M_DATA, 64);
    stq_be_p(m.b + M_MKEY, 0xfeed);
    m.b[M_DATA + PI_PROT_LMC] = 1 << 6;
    m.b[M_DATA + PI_STATE] = 0;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + PI_MKEY), ==, 0);
}

static void test_tables(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    unsigned i;

    ibt_ib_env(&t, obj, data);
    /* P_Key table: 0xffff at index 0, the rest empty. */
    ibt_mad_init(&m, CLASS_LID, GET, A_PKEY, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(lduw_be_p(r.b + M_DATA), ==, 0xffff);
    for (i = 1; i < 32; i++) {
        g_assert_cmphex(lduw_be_p(r.b + M_DATA + 2 * i), ==, 0);
    }
    ibt_mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    stw_be_p(m.b + M_DATA, 0xffff);
    stw_be_p(m.b + M_DATA + 2, 0x8001);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(lduw_be_p(r.b + M_DATA + 2), ==, 0x8001);
    ibt_expect_eqe(&t, RNIC_EQE_PKEY_CHANGE);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_expect_no_eqe(&t);
    ibt_mad_init(&m, CLASS_LID, GET, A_PKEY, 1);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VALUE);

    /* SL to VL: VL0..VL3 or 15; anything else refused. */
    ibt_mad_init(&m, CLASS_LID, SET, A_SL2VL, 0);
    for (i = 0; i < 8; i++) {
        m.b[M_DATA + i] = (i % 4) << 4 | 0xf;
    }
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(r.b[M_DATA + 3], ==, 0x3f);
    m.b[M_DATA + 5] = 0x45;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VALUE);
    ibt_mad_init(&m, CLASS_LID, GET, A_SL2VL, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(r.b[M_DATA + 5], ==, 0x1f);

    /* VL arbitration: blocks 1..4. */
    ibt_mad_init(&m, CLASS_LID, SET, A_VLARB, 3u << 16);
    m.b[M_DATA] = 2;
    m.b[M_DATA + 1] = 0x40;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    ibt_mad_init(&m, CLASS_LID, GET, A_VLARB, 3u << 16);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    g_assert_cmphex(r.b[M_DATA], ==, 2);
    g_assert_cmphex(r.b[M_DATA + 1], ==, 0x40);
    ibt_mad_init(&m, CLASS_LID, GET, A_VLARB, 5u << 16);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VALUE);
}

/* Directed-route SMPs at a CA. */
static void test_dr(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;

    ibt_ib_env(&t, obj, data);
    /* Zero hops: the SM's own node. */
    ibt_mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_D);
    g_assert_cmpuint(r.b[M_DATA + 2], ==, 1);

    /* One hop, at its end: the in-port goes into the return path. */
    ibt_mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    m.b[M_HOP_CNT] = 1;
    m.b[M_HOP_PTR] = 1;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_D);
    g_assert_cmpuint(r.b[M_RETURN_PATH + 1], ==, 1);
    g_assert_cmpuint(r.b[M_HOP_PTR], ==, 1);

    /* Past its end by one: for us, too. */
    m.b[M_HOP_PTR] = 2;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_D);

    /* A CA forwards nothing; bad pointers and LID-routed tails drop. */
    m.b[M_HOP_CNT] = 2;
    m.b[M_HOP_PTR] = 1;
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    m.b[M_HOP_PTR] = 0;
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    m.b[M_HOP_PTR] = 5;
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    m.b[M_HOP_CNT] = 1;
    m.b[M_HOP_PTR] = 1;
    stw_be_p(m.b + M_DR_DLID, 3);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    /* Returning SMPs are the SM's, which is here only at hop 0. */
    ibt_mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    stw_be_p(m.b + M_STATUS, ST_D);
    m.b[M_HOP_CNT] = 2;
    m.b[M_HOP_PTR] = 2;
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
}


/* ---- bad commands ---- */

static void test_cmd_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_cmd cmd;
    uint32_t uctx;
    uint64_t guest_err;
    IbEnv t;
    Mad m;

    ibt_ib_env(&t, obj, data);
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    guest_err = qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 2, RNIC_MAD_IFC_QP0, t.in, NULL,
                                     NULL), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, 0x80, t.in, NULL, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, BAD_DMA, NULL,
                                     NULL), ==, RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR), ==,
                     guest_err + 3);

    qrnic_cmd_init(&cmd, RNIC_CMD_MAD_IFC);
    cmd.u.mad_ifc.in_addr = cpu_to_le64(t.in);
    cmd.u.mad_ifc.out_addr = cpu_to_le64(BAD_DMA);
    cmd.u.mad_ifc.port = 1;
    cmd.u.mad_ifc.flags = RNIC_MAD_IFC_QP0;
    g_assert_cmpuint(qrnic_cmd(t.e.r, &cmd, NULL), ==, RNIC_CMD_ERR_DMA);
    cmd.u.mad_ifc.out_addr = cpu_to_le64(t.out);
    cmd.u.mad_ifc.rsvd_20 = cpu_to_le32(1);
    g_assert_cmpuint(qrnic_cmd(t.e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.mad_ifc.rsvd_20 = 0;
    /* Kernel only. */
    g_assert_cmpuint(qrnic_alloc_uctx(t.e.r, &uctx), ==, RNIC_CMD_OK);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    g_assert_cmpuint(qrnic_cmd(t.e.r, &cmd, NULL), ==, RNIC_CMD_ERR_ACCESS);
    /* The device still answers. */
    g_assert_true(ibt_mad_ifc(&t, &m, NULL));
}

/* A reset forgets what the SM set. */
static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    IbEnv t;
    Mad r;

    ibt_ib_env(&t, obj, data);
    ibt_port_info_set(&t, 9, 1, 1, RNIC_PORT_ARMED, &r);
    ibt_assert_resp(&r, 0);
    qrnic_reset(t.e.r);
    ibt_ib_env(&t, obj, data);
    ibt_query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 0);
    g_assert_cmpuint(pa.lmc, ==, 0);
    ibt_expect_no_eqe(&t);
}


/* ---- the data path: IB frames on the wire ---- */

#define OUR_LID         0x0010          /* LMC 1: 0x10 and 0x11 */
#define PEER_LID        0x0022
#define SM_LID          0x0001
#define OPC_RC_SEND     0x04
#define OPC_RC_ACK      0x11
#define OPC_UD_SEND     0x64
#define LNH_LOCAL       2
#define LNH_GLOBAL      3
#define IB_LRH          8
#define IB_GRH          40
#define IB_BTH          12
#define IB_DETH         8
#define IB_AETH         4
#define IB_ETHERTYPE    0x88b5
#define PEER_GUID       0x0002c90300ddee01ull
#define IB_UD_QKEY      0x11223344u
#define GRH_SLOT        40              /* a UD buffer's first bytes */
#define PI_PKEY_VIOL    46
#define PI_QKEY_VIOL    48
#define PKEY_TABLE      32              /* the P_Key table's entries */

/* What the test puts on, or reads off, the wire. */
typedef struct IbFrame {
    uint8_t vl, sl, lnh;
    uint16_t dlid, slid, pkt_len;
    uint8_t sgid[16], dgid[16];
    uint8_t opcode, pad;
    uint16_t pkey;
    uint32_t dqpn, psn;
    uint8_t ext[IB_DETH];       /* DETH or AETH, by opcode */
    size_t ext_len;
    const uint8_t *payload;
    size_t payload_len;
    bool bad_icrc, bad_vcrc;
} IbFrame;

/* Bit-serial CRCs, independent of the device's table-driven ones. */
static uint32_t ib_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    int k;

    while (len--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return crc;
}

static uint16_t ib_crc16(const uint8_t *p, size_t len)
{
    uint16_t crc = 0xffff;
    int k;

    while (len--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xd008 & -(crc & 1));   /* 0x100b reflected */
        }
    }
    return crc ^ 0xffff;
}

/*
 * The ICRC as IBA 7.8.1 defines it: over the packet from the LRH to the
 * end of the payload and pad, with the variant fields as ones: VL of a
 * local packet, the whole LRH of a global one, the GRH's traffic class,
 * flow label and hop limit, and the BTH's resv8a.
 */
static uint32_t ib_icrc(const uint8_t *pkt, size_t len)
{
    uint8_t hdr[IB_LRH + IB_GRH + IB_BTH];
    bool global = (pkt[1] & 3) == LNH_GLOBAL;
    size_t hlen = IB_LRH + (global ? IB_GRH : 0) + IB_BTH;
    uint8_t *bth = hdr + hlen - IB_BTH;

    memcpy(hdr, pkt, hlen);
    if (global) {
        memset(hdr, 0xff, IB_LRH);
        hdr[IB_LRH] |= 0x0f;
        memset(hdr + IB_LRH + 1, 0xff, 3);
        hdr[IB_LRH + 7] = 0xff;
    } else {
        hdr[0] |= 0xf0;
    }
    bth[4] = 0xff;
    return ~ib_crc32(ib_crc32(~0u, hdr, hlen), pkt + hlen, len - hlen);
}

static void ib_port_gid(uint8_t gid[16], uint64_t guid)
{
    stq_be_p(gid, 0xfe80000000000000ull);
    stq_be_p(gid + 8, guid);
}

static size_t ib_build(const IbFrame *f, uint8_t *buf, size_t size)
{
    size_t n = f->payload_len, pad = (4 - (n & 3)) & 3;
    bool global = f->lnh == LNH_GLOBAL;
    size_t hlen = IB_LRH + (global ? IB_GRH : 0) + IB_BTH + f->ext_len;
    size_t plen = hlen + n + pad + 4;
    uint8_t *p = buf + 14, *bth = p + hlen - IB_BTH - f->ext_len;

    g_assert_cmpuint(14 + plen + 2, <=, size);
    memset(buf, 0, 14 + plen + 2);
    memset(buf, 0xff, 6);
    memcpy(buf + 6, rt_peer_mac, 6);
    stw_be_p(buf + 12, IB_ETHERTYPE);
    p[0] = f->vl << 4;
    p[1] = f->sl << 4 | f->lnh;
    stw_be_p(p + 2, f->dlid);
    stw_be_p(p + 4, plen / 4);
    stw_be_p(p + 6, f->slid);
    if (global) {
        uint8_t *g = p + IB_LRH;

        g[0] = 0x60;
        stw_be_p(g + 4, plen - IB_LRH - IB_GRH);
        g[6] = 0x1b;
        g[7] = 1;
        memcpy(g + 8, f->sgid, 16);
        memcpy(g + 24, f->dgid, 16);
    }
    bth[0] = f->opcode;
    bth[1] = pad << 4;
    stw_be_p(bth + 2, f->pkey);
    stl_be_p(bth + 4, f->dqpn & 0xffffff);
    stl_be_p(bth + 8, (f->psn & 0xffffff) | 0x80000000u);
    memcpy(bth + IB_BTH, f->ext, f->ext_len);
    memcpy(p + hlen, f->payload, n);
    stl_le_p(p + plen - 4, ib_icrc(p, plen - 4) ^ (f->bad_icrc ? 1 : 0));
    stw_le_p(p + plen, ib_crc16(p, plen) ^ (f->bad_vcrc ? 1 : 0));
    return 14 + plen + 2;
}

/* A UD SEND from the peer's QP 0x33 to @dqpn. */
static void ib_ud_init(IbFrame *f, uint16_t dlid, uint32_t dqpn,
                       const uint8_t *payload, size_t len)
{
    memset(f, 0, sizeof(*f));
    f->sl = 5;
    f->lnh = LNH_LOCAL;
    f->dlid = dlid;
    f->slid = PEER_LID;
    f->opcode = OPC_UD_SEND;
    f->pkey = 0xffff;
    f->dqpn = dqpn;
    stl_be_p(f->ext, IB_UD_QKEY);
    stl_be_p(f->ext + 4, 0x33);
    f->ext_len = IB_DETH;
    f->payload = payload;
    f->payload_len = len;
}

static void ib_send(IbEnv *t, const IbFrame *f)
{
    uint8_t buf[2048];

    rt_sock_send(t->e.fd, buf, ib_build(f, buf, sizeof(buf)));
}

/*
 * The next frame from the device: an IB packet whose link fields,
 * PktLen, ICRC and VCRC are right.  Fills @f; payload points into the
 * env's frame buffer, after @ext_len bytes of extension headers.
 */
static void ib_recv(IbEnv *t, IbFrame *f, size_t ext_len)
{
    const uint8_t *b = t->e.frame, *p = b + 14, *bth;
    ssize_t len = rt_sock_recv(t->e.fd, t->e.frame, sizeof(t->e.frame),
                               QRNIC_TIMEOUT_MS);
    size_t plen, hlen;

    g_assert_cmpint(len, >=, 60);
    memset(f, 0, sizeof(*f));
    g_assert_cmphex(lduw_be_p(b + 12), ==, IB_ETHERTYPE);
    g_assert_cmphex(b[0] & b[1] & b[2] & b[3] & b[4] & b[5], ==, 0xff);
    f->vl = p[0] >> 4;
    g_assert_cmpuint(p[0] & 0xf, ==, 0);                /* LVer */
    f->sl = p[1] >> 4;
    f->lnh = p[1] & 3;
    f->dlid = lduw_be_p(p + 2);
    f->pkt_len = lduw_be_p(p + 4) & 0x7ff;
    f->slid = lduw_be_p(p + 6);
    plen = f->pkt_len * 4;
    g_assert_cmpuint(14 + plen + 2, <=, len);
    g_assert_cmphex((uint32_t)ldl_le_p(p + plen - 4), ==, ib_icrc(p, plen - 4));
    g_assert_cmphex(lduw_le_p(p + plen), ==, ib_crc16(p, plen));
    hlen = IB_LRH;
    if (f->lnh == LNH_GLOBAL) {
        g_assert_cmphex(p[IB_LRH] >> 4, ==, 6);
        g_assert_cmphex(p[IB_LRH + 6], ==, 0x1b);
        g_assert_cmpuint(lduw_be_p(p + IB_LRH + 4), ==, plen - IB_LRH - IB_GRH);
        memcpy(f->sgid, p + IB_LRH + 8, 16);
        memcpy(f->dgid, p + IB_LRH + 24, 16);
        hlen += IB_GRH;
    } else {
        g_assert_cmpuint(f->lnh, ==, LNH_LOCAL);
    }
    bth = p + hlen;
    f->opcode = bth[0];
    f->pad = (bth[1] >> 4) & 3;
    f->pkey = lduw_be_p(bth + 2);
    f->dqpn = ldl_be_p(bth + 4) & 0xffffff;
    f->psn = ldl_be_p(bth + 8) & 0xffffff;
    memcpy(f->ext, bth + IB_BTH, ext_len);
    f->ext_len = ext_len;
    hlen += IB_BTH + ext_len;
    f->payload = p + hlen;
    f->payload_len = plen - 4 - hlen - f->pad;
}

/* An enabled IB port the SM made ACTIVE: LID 0x10, LMC 1, and a PD, CQ, MR. */
static void ib_data_env(IbEnv *t, void *obj, void *data, bool active)
{
    Mad r;

    ibt_ib_env(t, obj, data);
    g_assert_cmpuint(qrnic_create_pd(t->e.r, 0, &t->e.pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(t->e.r, &t->e.cq, 7, 0), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(t->e.r, &t->e.mr, t->e.pdn,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
    if (!active) {
        return;
    }
    g_assert_cmpuint(ibt_port_info_set(t, OUR_LID, SM_LID, 1,
                                       RNIC_PORT_ARMED, &r), ==, 0);
    g_assert_cmpuint(ibt_port_info_set(t, OUR_LID, SM_LID, 1,
                                       RNIC_PORT_ACTIVE, &r), ==, 0);
}

static void ib_attr(struct rnic_qp_attr *a, uint8_t state)
{
    rt_attr_for(a, state);
    memset(&a->av, 0, sizeof(a->av));
    a->av.net_type = RNIC_NET_IB;
    a->av.ib.dlid = cpu_to_le16(PEER_LID);
    a->av.sl = 3;
}

/* A datagram QP of @type (UD, or QP0/QP1) in RTS. */
static void ib_dgram_qp(IbEnv *t, QRnicQp *qp, uint8_t type)
{
    uint32_t port = type == RNIC_QPT_UD ? RNIC_QP_ATTR_PORT : 0;
    struct rnic_qp_attr a;

    g_assert_cmpuint(qrnic_create_qp(t->e.r, qp, type, t->e.pdn,
                                     t->e.cq.cqn, t->e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_INIT);
    a.qkey = cpu_to_le32(IB_UD_QKEY);
    g_assert_cmpuint(qrnic_modify_qp(t->e.r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PKEY_INDEX |
                                     RNIC_QP_ATTR_QKEY | port,
                                     &a), ==, RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(t->e.r, qp->qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(t->e.r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_SQ_PSN, &a), ==,
                     RNIC_CMD_OK);
}

static void ib_ud_qp(IbEnv *t, QRnicQp *qp)
{
    ib_dgram_qp(t, qp, RNIC_QPT_UD);
}

/* A UD SEND of @len bytes from the MR's start, to @av. */
static void ib_post_ud(IbEnv *t, QRnicQp *qp, uint64_t wr_id,
                       const struct rnic_av *av, uint32_t dqpn, uint32_t len)
{
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t idx = qp->sq_pi & ((1u << qp->sq_log_size) - 1);

    rt_send_wqe(&w, wr_id, RNIC_WR_SEND, 1);
    w.ud_qpn = cpu_to_le32(dqpn);
    w.ud_qkey = cpu_to_le32(IB_UD_QKEY);
    rt_sge_of(&sge, &t->e.mr, 0, len);
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + 64, av, sizeof(*av));
    memcpy(buf + 128, &sge, sizeof(sge));
    qtest_memwrite(qrnic_qts(t->e.r), qp->sq_buf + idx * RNIC_SQ_WQE_SIZE,
                   buf, sizeof(buf));
    qp->sq_pi++;
    qrnic_ring_sq(t->e.r, qp);
}

/* Posts a receive for the MR's second half. */
static void ib_post_recv(IbEnv *t, QRnicQp *qp, uint64_t wr_id)
{
    struct rnic_sge sge;

    rt_sge_of(&sge, &t->e.mr, 2048, 2048);
    qtest_memset(qrnic_qts(t->e.r), t->e.mr.buf + 2048, 0xa5, 2048);
    qrnic_post_recv(t->e.r, qp, wr_id, &sge, 1);
    qrnic_ring_rq(t->e.r, qp);
}

static void ib_sl2vl_set(IbEnv *t)
{
    Mad m, r;

    /* SL 3 on VL 2, every other SL on VL 0. */
    ibt_mad_init(&m, CLASS_LID, SET, A_SL2VL, 0);
    m.b[M_DATA + 1] = 0x02;
    g_assert_true(ibt_mad_ifc(t, &m, &r));
    ibt_assert_resp(&r, 0);
}

/*
 * UD over LIDs: a SEND leaves as LRH (VL from SL2VL, SLID with the AV's
 * path bit) + BTH + DETH with both CRCs right; with the GRH flag, as
 * LRH + GRH from the port's GID.  Received UD SENDs complete with the
 * LRH's SLID, SL and path bits, and with the GRH in the buffer only when
 * the packet had one.
 */
static void test_ud_lid(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t payload[48], got[GRH_SLOT + 48], gid[16], peer[16];
    struct rnic_av av = { 0 };
    struct rnic_cqe cqe;
    unsigned i, recvd = 0;
    IbFrame f;
    QRnicQp qp;
    IbEnv t;

    ib_data_env(&t, obj, data, true);
    ib_sl2vl_set(&t);
    ib_ud_qp(&t, &qp);
    rt_fill_pattern(payload, sizeof(payload), 0x5a);
    qtest_memwrite(qrnic_qts(t.e.r), t.e.mr.buf, payload, sizeof(payload));

    av.net_type = RNIC_NET_IB;
    av.ib.dlid = cpu_to_le16(PEER_LID);
    av.ib.src_path_bits = 1;
    av.sl = 3;
    ib_post_ud(&t, &qp, 0x701, &av, 0x33, sizeof(payload));
    ib_recv(&t, &f, IB_DETH);
    g_assert_cmpuint(f.vl, ==, 2);
    g_assert_cmpuint(f.sl, ==, 3);
    g_assert_cmpuint(f.lnh, ==, LNH_LOCAL);
    g_assert_cmphex(f.dlid, ==, PEER_LID);
    g_assert_cmphex(f.slid, ==, OUR_LID | 1);
    g_assert_cmpuint(f.pkt_len, ==, (IB_LRH + IB_BTH + IB_DETH + 48 + 4) / 4);
    g_assert_cmphex(f.opcode, ==, OPC_UD_SEND);
    g_assert_cmphex(f.pkey, ==, 0xffff);
    g_assert_cmphex(f.dqpn, ==, 0x33);
    g_assert_cmphex(ldl_be_p(f.ext), ==, IB_UD_QKEY);
    g_assert_cmphex(ldl_be_p(f.ext + 4) & 0xffffff, ==, qp.qpn);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x701);

    /* With a GRH: from the port's GID (default prefix, port GUID). */
    ib_port_gid(peer, PEER_GUID);
    memcpy(av.dgid, peer, 16);
    av.ib.flags = RNIC_AV_IB_GRH;
    av.ib.src_path_bits = 0;
    av.hop_limit = 1;
    ib_post_ud(&t, &qp, 0x702, &av, 0x33, sizeof(payload));
    ib_recv(&t, &f, IB_DETH);
    g_assert_cmpuint(f.lnh, ==, LNH_GLOBAL);
    g_assert_cmphex(f.slid, ==, OUR_LID);
    ib_port_gid(gid, PORT_GUID);
    g_assert_cmpmem(f.sgid, 16, gid, 16);
    g_assert_cmpmem(f.dgid, 16, peer, 16);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    /* Receive without a GRH, to the port's second LID. */
    ib_post_recv(&t, &qp, 0x801);
    ib_ud_init(&f, OUR_LID | 1, qp.qpn, payload, sizeof(payload));
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x801);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, GRH_SLOT + 48);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, 0x33);
    g_assert_cmpuint(cqe.net_type, ==, RNIC_NET_IB);
    g_assert_cmphex(le16_to_cpu(cqe.slid), ==, PEER_LID);
    g_assert_cmpuint(cqe.sl, ==, 5);
    g_assert_cmpuint(cqe.dlid_path_bits, ==, 1);
    g_assert_cmpuint(cqe.flags & RNIC_CQE_GRH, ==, 0);
    qtest_memread(qrnic_qts(t.e.r), t.e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got + GRH_SLOT, 48, payload, 48);

    /* With a GRH: the GRH lands in the first 40 bytes. */
    ib_post_recv(&t, &qp, 0x802);
    ib_ud_init(&f, OUR_LID, qp.qpn, payload, sizeof(payload));
    f.lnh = LNH_GLOBAL;
    memcpy(f.sgid, peer, 16);
    memcpy(f.dgid, gid, 16);
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x802);
    g_assert_cmpuint(cqe.flags & RNIC_CQE_GRH, ==, RNIC_CQE_GRH);
    g_assert_cmpuint(cqe.dlid_path_bits, ==, 0);
    qtest_memread(qrnic_qts(t.e.r), t.e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmphex(got[0] >> 4, ==, 6);
    g_assert_cmpmem(got + 8, 16, peer, 16);
    g_assert_cmpmem(got + 24, 16, gid, 16);
    g_assert_cmpmem(got + GRH_SLOT, 48, payload, 48);

    /* To the port's own LID: loopback, nothing on the wire. */
    ib_post_recv(&t, &qp, 0x803);
    av.ib.flags = 0;
    av.ib.dlid = cpu_to_le16(OUR_LID);
    ib_post_ud(&t, &qp, 0x703, &av, qp.qpn, sizeof(payload));
    for (i = 0; i < 2; i++) {
        g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        if (cqe.opcode == RNIC_WC_RECV) {
            g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x803);
            g_assert_cmphex(le16_to_cpu(cqe.slid), ==, OUR_LID);
            g_assert_cmpuint(cqe.sl, ==, 3);
            recvd++;
        } else {
            g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x703);
        }
    }
    g_assert_cmpuint(recvd, ==, 1);
    qtest_memread(qrnic_qts(t.e.r), t.e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got + GRH_SLOT, 48, payload, 48);
    rt_assert_no_frame(&t.e, 50);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_LOOPBACK_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_DROPPED), ==, 0);
}

/*
 * What an IB port drops, each counted: everything before the SM makes
 * it ACTIVE (both ways), a DLID that is not the port's, a P_Key that
 * does not match the QP's (also in PortInfo:P_KeyViolations), a bad
 * ICRC or VCRC, and RoCE.  A good packet still arrives after them.
 */
static void test_ib_drops(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_av av = { 0 };
    uint8_t payload[16], buf[256];
    struct rnic_cqe cqe;
    const uint8_t *d;
    IbFrame f;
    QRnicQp qp, gsi;
    IbEnv t;
    Roce rf;
    Mad r;

    ib_data_env(&t, obj, data, false);
    ib_ud_qp(&t, &qp);
    rt_fill_pattern(payload, sizeof(payload), 0x21);
    ib_post_recv(&t, &qp, 0x901);

    /* INIT: nothing in, nothing out; the UD send completes, lost. */
    ib_ud_init(&f, OUR_LID, qp.qpn, payload, sizeof(payload));
    ib_send(&t, &f);
    av.net_type = RNIC_NET_IB;
    av.ib.dlid = cpu_to_le16(PEER_LID);
    ib_post_ud(&t, &qp, 0x711, &av, 0x33, 16);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x711);
    rt_assert_no_frame(&t.e, 50);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_NOT_ACTIVE), ==, 1);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_TX_NOT_ACTIVE), ==, 1);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_TX_PKTS), ==, 0);

    /* ARMED is not yet ACTIVE either. */
    g_assert_cmpuint(ibt_port_info_set(&t, OUR_LID, SM_LID, 1,
                                       RNIC_PORT_ARMED, &r), ==, 0);
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_NOT_ACTIVE), ==, 2);
    g_assert_cmpuint(ibt_port_info_set(&t, OUR_LID, SM_LID, 1,
                                       RNIC_PORT_ACTIVE, &r), ==, 0);

    /* Another port's LID, a multicast LID without a GRH, the permissive LID. */
    f.dlid = OUR_LID + 2;
    ib_send(&t, &f);
    f.dlid = 0xc001;
    ib_send(&t, &f);
    f.dlid = 0xffff;
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_DLID_ERR), ==, 3);

    /* A P_Key of another partition. */
    f.dlid = OUR_LID;
    f.pkey = 0x8001;
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_PKEY_ERR), ==, 1);
    ibt_port_info(&t, &r);
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_PKEY_VIOL), ==, 1);
    /* A UD QP's violation is counted; only QP1's is trapped (257). */
    g_assert_false(ibt_take_trap(&t, &r));
    ib_dgram_qp(&t, &gsi, RNIC_QPT_GSI);
    f.dqpn = gsi.qpn;
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_PKEY_ERR), ==, 2);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, 2, 257, OUR_LID);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(lduw_be_p(d + 2), ==, PEER_LID);
    g_assert_cmphex(lduw_be_p(d + 4), ==, OUR_LID);
    g_assert_cmphex(ldl_be_p(d + 6), ==, 0x8001);
    g_assert_cmphex(ldl_be_p(d + 10), ==, 5u << 28 | 0x33);   /* SL, QP */
    g_assert_cmphex(ldl_be_p(d + 14), ==, 1);
    g_assert_false(ibt_take_trap(&t, &r));

    /* Q_Keys: QP1 takes only the GSI one; both count, QP1's is trapped. */
    f.pkey = 0xffff;
    stl_be_p(f.ext, 0x1234);
    ib_send(&t, &f);
    f.dqpn = qp.qpn;
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    ibt_port_info(&t, &r);
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_QKEY_VIOL), ==, 2);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, 2, 258, OUR_LID);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(lduw_be_p(d + 2), ==, PEER_LID);
    g_assert_cmphex(ldl_be_p(d + 6), ==, 0x1234);
    g_assert_cmphex(ldl_be_p(d + 10), ==, 5u << 28 | 0x33);
    g_assert_false(ibt_take_trap(&t, &r));
    stl_be_p(f.ext, IB_UD_QKEY);

    /* Broken CRCs. */
    f.bad_icrc = true;
    ib_send(&t, &f);
    f.bad_icrc = false;
    f.bad_vcrc = true;
    ib_send(&t, &f);
    f.bad_vcrc = false;
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);

    /* RoCE is not for an IB port. */
    rt_roce_init_payload(&rf, OPC_UD_SEND, qp.qpn, 0, buf, 24);
    rt_send_roce(&t.e, &rf);
    qrnic_settle(t.e.r);

    g_assert_false(qrnic_cq_poll(t.e.r, &t.e.cq, &cqe));
    /* Only the two with a wrong Q_Key reached a QP. */
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_PKTS), ==, 2);
    /* The RoCE frame was dropped: an IB port has no Ethernet function. */
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_DROPPED), ==, 12);

    /* And a good packet still gets through. */
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x901);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_PKTS), ==, 3);
}

/*
 * An InfiniBand port has no Ethernet function: no raw packet QPs, the
 * netdev's rings cannot be enabled (a guest error), and a frame that is
 * not IB, even one to the device's MAC, is dropped and counted.
 */
static void test_ib_no_eth(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x66 };
    struct rnic_device_attr da;
    uint8_t frame[64] = { 0 };
    uint64_t errs, drops;
    QRnicQp qp;
    IbEnv t;

    ib_data_env(&t, obj, data, true);
    g_assert_cmpuint(qrnic_query_device(t.e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_RAW_PACKET, ==,
                    0);
    g_assert_cmpuint(qrnic_create_qp(t.e.r, &qp, RNIC_QPT_RAW_PACKET,
                                     t.e.pdn, t.e.cq.cqn, t.e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_ERR_NOT_SUPP);

    errs = qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR);
    qrnic_writel(t.e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN |
                 RNIC_NET_CTRL_TX_EN | RNIC_NET_CTRL_PROMISC);
    g_assert_cmphex(qrnic_readl(t.e.r, RNIC_REG_NET_CTRL), ==, 0);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR), ==, errs + 1);
    /* Filters alone are no Ethernet function, and no error. */
    qrnic_writel(t.e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_PROMISC);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR), ==, errs + 1);

    /* An IPv4 frame to our MAC: the port is IB, it goes nowhere. */
    drops = qrnic_counter(t.e.r, RNIC_CNT_RX_DROPPED);
    memcpy(frame, mac, 6);
    memcpy(frame + 6, "\x02\x00\x00\x00\x00\x01", 6);
    stw_be_p(frame + 12, 0x0800);
    rt_sock_send(t.e.fd, frame, sizeof(frame));
    qrnic_settle(t.e.r);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_DROPPED), ==, drops + 1);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 0);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_RX_PKTS), ==, 0);
}

/*
 * RC over LIDs: the SEND goes to the path's DLID; the peer's ACK comes
 * back by LID.  A request from a LID that is not the connected peer's is
 * dropped unanswered; from the peer it is ACKed by LID and received.
 */
static void test_rc_lid(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t payload[64], got[64];
    struct rnic_qp_attr a;
    struct rnic_sge sge;
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;
    IbFrame f, in;
    IbEnv t;

    ib_data_env(&t, obj, data, true);
    g_assert_cmpuint(qrnic_create_qp(t.e.r, &t.e.qp, RNIC_QPT_RC, t.e.pdn,
                                     t.e.cq.cqn, t.e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_INIT);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, MASK_TO_INIT, &a),
                     ==, RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, MASK_TO_RTR, &a),
                     ==, RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, MASK_TO_RTS, &a),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query_qp(t.e.r, t.e.qp.qpn, &a), ==, RNIC_CMD_OK);
    g_assert_cmpuint(a.av.net_type, ==, RNIC_NET_IB);
    g_assert_cmphex(le16_to_cpu(a.av.ib.dlid), ==, PEER_LID);
    g_assert_cmpuint(a.av.sl, ==, 3);

    rt_fill_pattern(payload, sizeof(payload), 0x77);
    qtest_memwrite(qrnic_qts(t.e.r), t.e.mr.buf, payload, sizeof(payload));
    rt_send_wqe(&w, 0xa01, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &t.e.mr, 0, sizeof(payload));
    qrnic_post_send(t.e.r, &t.e.qp, &w, &sge, 1);
    qrnic_ring_sq(t.e.r, &t.e.qp);
    ib_recv(&t, &f, 0);
    g_assert_cmphex(f.opcode, ==, OPC_RC_SEND);
    g_assert_cmphex(f.dlid, ==, PEER_LID);
    g_assert_cmphex(f.slid, ==, OUR_LID);
    g_assert_cmpuint(f.sl, ==, 3);
    g_assert_cmphex(f.dqpn, ==, PEER_QPN);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));

    memset(&in, 0, sizeof(in));
    in.lnh = LNH_LOCAL;
    in.dlid = OUR_LID;
    in.slid = PEER_LID;
    in.pkey = 0xffff;
    in.opcode = OPC_RC_ACK;
    in.dqpn = t.e.qp.qpn;
    in.psn = QP_SQ_PSN;
    in.ext[0] = AETH_ACK(31);
    in.ext[3] = 1;                              /* MSN */
    in.ext_len = IB_AETH;
    ib_send(&t, &in);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xa01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    /* A SEND from the wrong LID: dropped, not ACKed. */
    ib_post_recv(&t, &t.e.qp, 0xb01);
    in.opcode = OPC_RC_SEND;
    in.psn = QP_RQ_PSN;
    in.ext_len = 0;
    in.payload = payload;
    in.payload_len = sizeof(payload);
    in.slid = PEER_LID + 1;
    ib_send(&t, &in);
    rt_assert_no_frame(&t.e, 100);
    g_assert_false(qrnic_cq_poll(t.e.r, &t.e.cq, &cqe));

    in.slid = PEER_LID;
    ib_send(&t, &in);
    ib_recv(&t, &f, IB_AETH);
    g_assert_cmphex(f.opcode, ==, OPC_RC_ACK);
    g_assert_cmphex(f.dlid, ==, PEER_LID);
    g_assert_cmphex(f.slid, ==, OUR_LID);
    g_assert_cmphex(f.psn, ==, QP_RQ_PSN);
    g_assert_cmphex(f.ext[0] & 0xe0, ==, 0);        /* an ACK */
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xb01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    qtest_memread(qrnic_qts(t.e.r), t.e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));
}

/*
 * MODIFY_QP's path on an IB port is RNIC_NET_IB with a unicast DLID,
 * known flags, zero reserved bytes, and GID 0 for a GRH; RoCE paths are
 * refused there, and IB paths on an Ethernet port.  The P_Key index may
 * name any entry of the table.
 */
static void test_ib_av_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_qp_attr a;
    IbEnv t;
    uint64_t errs;
    uint32_t m = MASK_TO_RTR;

    ib_data_env(&t, obj, data, true);
    g_assert_cmpuint(qrnic_create_qp(t.e.r, &t.e.qp, RNIC_QPT_RC, t.e.pdn,
                                     t.e.cq.cqn, t.e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_OK);
    ib_attr(&a, RNIC_QPS_INIT);
    a.pkey_index = cpu_to_le16(PKEY_TABLE);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, MASK_TO_INIT, &a),
                     ==, RNIC_CMD_ERR_PARAM);
    a.pkey_index = cpu_to_le16(PKEY_TABLE - 1);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, MASK_TO_INIT, &a),
                     ==, RNIC_CMD_OK);
    errs = qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR);

    ib_attr(&a, RNIC_QPS_RTR);
    a.av.net_type = RNIC_NET_IPV4;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    ib_attr(&a, RNIC_QPS_RTR);
    a.av.ib.dlid = 0;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    a.av.ib.dlid = cpu_to_le16(0xc001);
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    ib_attr(&a, RNIC_QPS_RTR);
    a.av.ib.flags = 0x80;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    ib_attr(&a, RNIC_QPS_RTR);
    a.av.ib.rsvd_4[1] = 1;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    ib_attr(&a, RNIC_QPS_RTR);
    a.av.ib.flags = RNIC_AV_IB_GRH;
    a.av.sgid_index = 1;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    ib_attr(&a, RNIC_QPS_RTR);
    a.av.sl = 16;
    g_assert_cmpuint(qrnic_modify_qp(t.e.r, t.e.qp.qpn, m, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR), ==, errs + 7);
    g_assert_cmpuint(rt_qp_state(&t.e, &t.e.qp), ==, RNIC_QPS_INIT);
}

/*
 * QP0: subnet management packets go out on VL15 with the permissive LID
 * before the SM gave one and P_Key 0xffff, in INIT; they come
 * in on VL15, to the permissive LID or the port's, in INIT too.  QP0 on a
 * data VL, and data for a port that is not ACTIVE, are dropped.  Only the
 * kernel, only once and only on an IB port makes QP0.
 */
static void test_smi(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t mad[256], got[GRH_SLOT + 256];
    struct rnic_av av = { 0 };
    struct rnic_cmd cmd;
    struct rnic_cqe cqe;
    QRnicQp qp0, dup;
    uint32_t uctx;
    IbFrame f;
    IbEnv t;
    Mad r;

    ib_data_env(&t, obj, data, false);
    ib_dgram_qp(&t, &qp0, RNIC_QPT_SMI);
    g_assert_cmpuint(qp0.qpn, ==, 0);
    g_assert_cmpuint(qrnic_create_qp(t.e.r, &dup, RNIC_QPT_SMI, t.e.pdn,
                                     t.e.cq.cqn, t.e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(qrnic_alloc_uctx(t.e.r, &uctx), ==, RNIC_CMD_OK);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    cmd.u.create_qp.qp_type = RNIC_QPT_SMI;
    g_assert_cmpuint(qrnic_cmd(t.e.r, &cmd, NULL), ==, RNIC_CMD_ERR_ACCESS);

    /* Out, in INIT, by directed route: permissive to permissive, VL15. */
    rt_fill_pattern(mad, sizeof(mad), 0x81);
    qtest_memwrite(qrnic_qts(t.e.r), t.e.mr.buf, mad, sizeof(mad));
    av.net_type = RNIC_NET_IB;
    av.ib.dlid = cpu_to_le16(0xffff);
    ib_post_ud(&t, &qp0, 0xc01, &av, 0, sizeof(mad));
    ib_recv(&t, &f, IB_DETH);
    g_assert_cmpuint(f.vl, ==, 15);
    g_assert_cmphex(f.dlid, ==, 0xffff);
    g_assert_cmphex(f.slid, ==, 0xffff);
    g_assert_cmphex(f.dqpn, ==, 0);
    g_assert_cmphex(f.pkey, ==, 0xffff);
    g_assert_cmphex(ldl_be_p(f.ext), ==, IB_UD_QKEY);   /* the WQE's */
    g_assert_cmphex(ldl_be_p(f.ext + 4) & 0xffffff, ==, 0);
    g_assert_cmpmem(f.payload, f.payload_len, mad, sizeof(mad));
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xc01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    /* In, in INIT: to the permissive LID; any Q_Key and P_Key. */
    ib_post_recv(&t, &qp0, 0xd01);
    ib_ud_init(&f, 0xffff, 0, mad, sizeof(mad));
    f.vl = 15;
    f.slid = 0xffff;
    f.pkey = 0x8001;
    stl_be_p(f.ext, 0x1234);
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xd01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, 0);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, GRH_SLOT + sizeof(mad));
    g_assert_cmphex(le16_to_cpu(cqe.slid), ==, 0xffff);
    qtest_memread(qrnic_qts(t.e.r), t.e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got + GRH_SLOT, sizeof(mad), mad, sizeof(mad));

    /* QP0 on VL0, or to a LID the port does not have yet: dropped. */
    ib_post_recv(&t, &qp0, 0xd02);
    f.vl = 0;
    ib_send(&t, &f);
    f.vl = 15;
    f.dlid = OUR_LID;
    ib_send(&t, &f);
    qrnic_settle(t.e.r);
    g_assert_false(qrnic_cq_poll(t.e.r, &t.e.cq, &cqe));
    g_assert_cmpuint(qrnic_counter(t.e.r, RNIC_CNT_IB_RX_DLID_ERR), ==, 1);

    /* With a LID: from it, and to it. */
    g_assert_cmpuint(ibt_port_info_set(&t, OUR_LID, SM_LID, 1,
                                       RNIC_PORT_ARMED, &r), ==, 0);
    av.ib.dlid = cpu_to_le16(SM_LID);
    ib_post_ud(&t, &qp0, 0xc02, &av, 0, 64);
    ib_recv(&t, &f, IB_DETH);
    g_assert_cmphex(f.slid, ==, OUR_LID);
    g_assert_cmphex(f.dlid, ==, SM_LID);
    g_assert_cmpuint(f.vl, ==, 15);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    ib_ud_init(&f, OUR_LID | 1, 0, mad, 64);
    f.vl = 15;
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xd02);
    g_assert_cmphex(le16_to_cpu(cqe.slid), ==, PEER_LID);
    g_assert_cmpuint(cqe.dlid_path_bits, ==, 1);
}

static void test_smi_on_eth(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnicQp qp0;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp0, RNIC_QPT_SMI, e.pdn, e.cq.cqn,
                                     e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_NOT_SUPP);
}

static void test_ib_av_on_eth(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_qp_attr a;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_OK);
    rt_qp_up(&e, &e.qp, RNIC_QPS_INIT);
    ib_attr(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_ERR_PARAM);
    /* RoCE ports have one P_Key. */
    rt_attr_for(&a, RNIC_QPS_INIT);
    a.pkey_index = cpu_to_le16(1);
    g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_INIT, &a), ==,
                     RNIC_CMD_ERR_PARAM);
}

/* ---- the PMA ---- */

static void test_pma(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    const uint8_t *d = r.b + M_DATA;
    uint64_t tx_bytes, tx_pkts, rx_bytes, rx_pkts;
    uint8_t payload[64];
    struct rnic_av av = { 0 };
    struct rnic_cqe cqe;
    IbFrame f;
    QRnicQp qp;

    /* Traffic first, so that the counters the PMA reports are not 0. */
    ib_data_env(&t, obj, data, true);
    ib_ud_qp(&t, &qp);
    ib_post_recv(&t, &qp, 1);
    rt_fill_pattern(payload, sizeof(payload), 3);
    ib_ud_init(&f, OUR_LID, qp.qpn, payload, sizeof(payload));
    ib_send(&t, &f);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    av.net_type = RNIC_NET_IB;
    av.ib.dlid = cpu_to_le16(PEER_LID);
    ib_post_ud(&t, &qp, 2, &av, 0x33, sizeof(payload));
    ib_recv(&t, &f, IB_DETH);
    g_assert_true(qrnic_cq_wait(t.e.r, &t.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);

    ibt_mad_init(&m, CLASS_PERF, GET, A_CPI, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(d[0], ==, 1);
    g_assert_cmpuint(d[1], ==, 1);
    g_assert_cmphex(lduw_be_p(d + 2), ==, 1u << 9);     /* extended width */

    tx_bytes = qrnic_counter(t.e.r, RNIC_CNT_TX_BYTES);
    tx_pkts = qrnic_counter(t.e.r, RNIC_CNT_TX_PKTS);
    rx_bytes = qrnic_counter(t.e.r, RNIC_CNT_RX_BYTES);
    rx_pkts = qrnic_counter(t.e.r, RNIC_CNT_RX_PKTS);
    g_assert_cmpuint(tx_pkts, ==, 1);           /* the UD SEND */
    g_assert_cmpuint(rx_pkts, ==, 1);           /* the peer's UD SEND */
    g_assert_cmpuint(rx_bytes, >=, sizeof(payload));
    ibt_mad_init(&m, CLASS_PERF, GET, A_PORT_CNT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(d[1], ==, 1);
    g_assert_cmpuint(lduw_be_p(d + 8), ==, 0);          /* PortRcvErrors */
    g_assert_cmpuint(ldl_be_p(d + 24), ==, tx_bytes / 4);
    g_assert_cmpuint(ldl_be_p(d + 28), ==, rx_bytes / 4);
    g_assert_cmpuint(ldl_be_p(d + 32), ==, 1);
    g_assert_cmpuint(ldl_be_p(d + 36), ==, 1);
    ibt_mad_init(&m, CLASS_PERF, GET, A_PORT_CNT_EXT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(ldq_be_p(d + 8), ==, tx_bytes / 4);
    g_assert_cmpuint(ldq_be_p(d + 16), ==, rx_bytes / 4);
    g_assert_cmpuint(ldq_be_p(d + 24), ==, 1);
    g_assert_cmpuint(ldq_be_p(d + 32), ==, 1);

    m.b[M_DATA + 1] = 2;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_VALUE);
    ibt_mad_init(&m, CLASS_PERF, SET, A_PORT_CNT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_METHOD);
    ibt_mad_init(&m, CLASS_PERF, GET, 0x0011, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_ATTR);
    /* GSI classes never come by QP0. */
    ibt_mad_init(&m, CLASS_PERF, GET, A_CPI, 0);
    {
        bool reply = true;

        g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, t.in,
                                         NULL, &reply), ==, RNIC_CMD_OK);
        g_assert_false(reply);
    }
}

static void register_rnic_ib_test(void)
{
    /* On the third node: the other two fill qgraph's stack. */
    rt_use_node_c(true);
    rt_add_opts("ib-query", test_query, GUID_OPTS);
    rt_add("ib-query-eth", test_query_eth);
    rt_add_opts("ib-sma-node", test_node, GUID_OPTS);
    rt_add_opts("ib-sma-port-info", test_port_info, IB_OPTS);
    rt_add_opts("ib-link", test_link, IB_OPTS);
    rt_add_opts("ib-sma-mkey", test_mkey, IB_OPTS);
    rt_add_opts("ib-sma-tables", test_tables, IB_OPTS);
    rt_add_opts("ib-sma-dr", test_dr, IB_OPTS);
    rt_add_opts("ib-pma", test_pma, IB_OPTS);
    rt_add_opts("ib-mad-ifc-errors", test_cmd_errors, IB_OPTS);
    rt_add_opts("ib-reset", test_reset, IB_OPTS);
    rt_add_opts("ib-ud-lid", test_ud_lid, GUID_OPTS);
    rt_add_opts("ib-drops", test_ib_drops, GUID_OPTS);
    rt_add_opts("ib-rc-lid", test_rc_lid, GUID_OPTS);
    rt_add_opts("ib-no-eth", test_ib_no_eth, GUID_OPTS);
    rt_add_opts("ib-av-errors", test_ib_av_errors, GUID_OPTS);
    rt_add("ib-av-on-eth", test_ib_av_on_eth);
    rt_add_opts("ib-smi", test_smi, GUID_OPTS);
    rt_add("ib-smi-on-eth", test_smi_on_eth);
    rt_use_node_c(false);
}

libqos_init(register_rnic_ib_test);

#endif /* _WIN32 */
