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
#include "rnic-test-common.h"

#ifndef _WIN32

#define IB_OPTS         ",link-layer=infiniband"
#define NODE_GUID       0x0002c90300a0b0c0ull
#define PORT_GUID       0x0002c90300a0b0c1ull
#define GUID_OPTS       IB_OPTS ",node-guid=0x0002c90300a0b0c0," \
                        "port-guid=0x0002c90300a0b0c1"

/* MAD offsets and codes, as the IBA numbers them. */
#define M_CLASS         1
#define M_CLASS_VER     2
#define M_METHOD        3
#define M_STATUS        4
#define M_HOP_PTR       6
#define M_HOP_CNT       7
#define M_TID           8
#define M_ATTR          16
#define M_MOD           20
#define M_MKEY          24
#define M_DR_SLID       32
#define M_DR_DLID       34
#define M_DATA          64
#define M_RETURN_PATH   192

#define CLASS_LID       0x01
#define CLASS_DR        0x81
#define CLASS_PERF      0x04
#define GET             0x01
#define SET             0x02
#define GET_RESP        0x81

#define ST_BAD_VERSION  0x0004
#define ST_BAD_METHOD   0x0008
#define ST_BAD_ATTR     0x000c
#define ST_BAD_VALUE    0x001c
#define ST_D            0x8000

#define A_NODE_DESC     0x0010
#define A_NODE_INFO     0x0011
#define A_SWITCH_INFO   0x0012
#define A_GUID_INFO     0x0014
#define A_PORT_INFO     0x0015
#define A_PKEY          0x0016
#define A_SL2VL         0x0017
#define A_VLARB         0x0018
#define A_CPI           0x0001
#define A_PORT_CNT      0x0012
#define A_PORT_CNT_EXT  0x001d

/* PortInfo offsets in the data */
#define PI_MKEY         0
#define PI_LID          16
#define PI_SM_LID       18
#define PI_STATE        32
#define PI_PHYS         33
#define PI_PROT_LMC     34
#define PI_NMTU_SMSL    36
#define PI_MKEY_VIOL    44

typedef struct Mad {
    uint8_t b[RNIC_MAD_SIZE];
} Mad;

static void mad_init(Mad *m, uint8_t cls, uint8_t method, uint16_t attr,
                     uint32_t mod)
{
    memset(m, 0, sizeof(*m));
    m->b[0] = 1;
    m->b[M_CLASS] = cls;
    m->b[M_CLASS_VER] = 1;
    m->b[M_METHOD] = method;
    stq_be_p(m->b + M_TID, 0x1122334455667788ull);
    stw_be_p(m->b + M_ATTR, attr);
    stl_be_p(m->b + M_MOD, mod);
    if (cls == CLASS_DR) {
        stw_be_p(m->b + M_DR_SLID, 0xffff);
        stw_be_p(m->b + M_DR_DLID, 0xffff);
    }
}

typedef struct IbEnv {
    Env e;
    uint64_t in, out;
} IbEnv;

static void ib_env(IbEnv *t, void *obj, void *data)
{
    rt_env_init(&t->e, obj, data);
    qrnic_enable(t->e.r);
    g_assert_cmpuint(qrnic_create_eq(t->e.r, &t->e.eq, 0, 8), ==,
                     RNIC_CMD_OK);
    t->in = qrnic_alloc(t->e.r, QRNIC_PAGE);
    t->out = qrnic_alloc(t->e.r, QRNIC_PAGE);
}

static uint8_t mad_ifc_raw(IbEnv *t, const Mad *in, uint8_t port,
                           uint8_t flags, uint64_t in_addr, Mad *out,
                           bool *reply)
{
    struct rnic_cmd cmd;
    uint32_t res[6];
    uint8_t st;

    qtest_memwrite(qrnic_qts(t->e.r), t->in, in->b, sizeof(in->b));
    qtest_memset(qrnic_qts(t->e.r), t->out, 0xa5, RNIC_MAD_SIZE);
    qrnic_cmd_init(&cmd, RNIC_CMD_MAD_IFC);
    cmd.u.mad_ifc.in_addr = cpu_to_le64(in_addr);
    cmd.u.mad_ifc.out_addr = cpu_to_le64(t->out);
    cmd.u.mad_ifc.port = port;
    cmd.u.mad_ifc.flags = flags;
    cmd.u.mad_ifc.slid = cpu_to_le16(1);
    st = qrnic_cmd(t->e.r, &cmd, res);
    if (out) {
        qtest_memread(qrnic_qts(t->e.r), t->out, out->b, sizeof(out->b));
    }
    if (reply) {
        *reply = st == RNIC_CMD_OK && res[RNIC_OUT_MAD_REPLY];
    }
    return st;
}

/* A MAD from the wire on QP0 (SMPs) or QP1 (others): the response. */
static bool mad_ifc(IbEnv *t, const Mad *in, Mad *out)
{
    bool reply;
    uint8_t flags = (in->b[M_CLASS] == CLASS_LID ||
                     in->b[M_CLASS] == CLASS_DR) ? RNIC_MAD_IFC_QP0 : 0;

    g_assert_cmpuint(mad_ifc_raw(t, in, 1, flags, t->in, out, &reply), ==,
                     RNIC_CMD_OK);
    return reply;
}

/* The answer's header: a GetResp with @status and the request's TID. */
static void assert_resp(const Mad *r, uint16_t status)
{
    g_assert_cmphex(r->b[M_METHOD], ==, GET_RESP);
    g_assert_cmphex(lduw_be_p(r->b + M_STATUS), ==, status);
    g_assert_cmphex(ldq_be_p(r->b + M_TID), ==, 0x1122334455667788ull);
}

static void expect_eqe(IbEnv *t, uint8_t type)
{
    struct rnic_eqe eqe;

    qrnic_settle(t->e.r);
    g_assert_true(qrnic_eq_poll(t->e.r, &t->e.eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, type);
    g_assert_cmphex(le32_to_cpu(eqe.obj), ==, 1);
}

static void expect_no_eqe(IbEnv *t)
{
    struct rnic_eqe eqe;

    qrnic_settle(t->e.r);
    g_assert_false(qrnic_eq_poll(t->e.r, &t->e.eq, &eqe));
}

static void query_port(IbEnv *t, struct rnic_port_attr *pa)
{
    g_assert_cmpuint(qrnic_query(t->e.r, RNIC_CMD_QUERY_PORT, 1, t->out,
                                 sizeof(*pa)), ==, RNIC_CMD_OK);
    qtest_memread(qrnic_qts(t->e.r), t->out, pa, sizeof(*pa));
}

static void port_info(IbEnv *t, Mad *r)
{
    Mad m;

    mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_true(mad_ifc(t, &m, r));
    assert_resp(r, 0);
}

/* A PortInfo Set from the current values with @edit applied. */
static uint16_t port_info_set(IbEnv *t, uint16_t lid, uint16_t sm_lid,
                              uint8_t lmc, uint8_t state, Mad *r)
{
    Mad m, cur;

    port_info(t, &cur);
    mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, cur.b + M_DATA, 64);
    stw_be_p(m.b + M_DATA + PI_LID, lid);
    stw_be_p(m.b + M_DATA + PI_SM_LID, sm_lid);
    m.b[M_DATA + PI_PROT_LMC] = lmc;
    m.b[M_DATA + PI_STATE] = state;
    g_assert_true(mad_ifc(t, &m, r));
    return lduw_be_p(r->b + M_STATUS);
}

/* ---- QUERY_DEVICE and QUERY_PORT ---- */

static void test_query(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    uint8_t tail[16];
    IbEnv t;
    unsigned i;

    ib_env(&t, obj, data);
    g_assert_cmpuint(qrnic_query_device(t.e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le64_to_cpu(da.node_guid), ==, NODE_GUID);

    query_port(&t, &pa);
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
    expect_no_eqe(&t);
}

/* Ethernet: the old answer, bytes 16 on zero, GUID from the MAC. */
static void test_query_eth(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t zero[32];
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    IbEnv t;
    Mad m;

    ib_env(&t, obj, data);
    g_assert_cmpuint(qrnic_query_device(t.e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le64_to_cpu(da.node_guid), ==, 0x505400fffe123466ull);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);
    g_assert_cmpuint(pa.active_mtu, ==, RNIC_MTU_1024);
    g_assert_cmpmem((uint8_t *)&pa + 16, 32, zero, 32);

    /* No management agents on an Ethernet port. */
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, t.in, NULL,
                                 NULL), ==, RNIC_CMD_ERR_STATE);
}

/* ---- the SMA ---- */

static void test_node(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    const uint8_t *d = r.b + M_DATA;

    ib_env(&t, obj, data);
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
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

    mad_init(&m, CLASS_LID, GET, A_NODE_DESC, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmpstr((const char *)r.b + M_DATA, ==, "rnic");

    mad_init(&m, CLASS_LID, GET, A_GUID_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA), ==, PORT_GUID);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + 8), ==, 0);
    mad_init(&m, CLASS_LID, GET, A_GUID_INFO, 1);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VALUE);

    /* Read-only and unknown attributes, methods, versions. */
    mad_init(&m, CLASS_LID, SET, A_NODE_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_ATTR);
    mad_init(&m, CLASS_LID, GET, A_SWITCH_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_ATTR);
    mad_init(&m, CLASS_LID, 0x06, A_NODE_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_METHOD);
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    m.b[M_CLASS_VER] = 2;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VERSION);
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    m.b[0] = 2;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VERSION);
    /* Responses are not answered, nor SMPs that came by QP1. */
    mad_init(&m, CLASS_LID, GET_RESP, A_NODE_INFO, 0);
    g_assert_false(mad_ifc(&t, &m, &r));
    g_assert_cmphex(r.b[0], ==, 0xa5);
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    {
        bool reply = true;

        g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, 0, t.in, NULL, &reply), ==,
                         RNIC_CMD_OK);
        g_assert_false(reply);
        /* The driver's own query needs no QP0. */
        g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_IGNORE_MKEY,
                                     t.in, &r, &reply), ==, RNIC_CMD_OK);
        g_assert_true(reply);
        assert_resp(&r, 0);
    }
}

/* The SM's bring-up: LID, SM LID, ARMED, ACTIVE, with their events. */
static void test_port_info(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    IbEnv t;
    Mad r;
    const uint8_t *d = r.b + M_DATA;

    ib_env(&t, obj, data);
    port_info(&t, &r);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(d[PI_PHYS] >> 4, ==, RNIC_PHYS_LINK_UP);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 0);
    g_assert_cmphex(ldl_be_p(d + 20), !=, 0);          /* CapabilityMask */
    g_assert_cmpuint(d[28], ==, 1);                     /* LocalPortNum */

    /* ACTIVE straight from INIT is refused, and changes nothing. */
    g_assert_cmphex(port_info_set(&t, 5, 1, 2, RNIC_PORT_ACTIVE, &r), ==,
                    ST_BAD_VALUE);
    assert_resp(&r, ST_BAD_VALUE);
    expect_no_eqe(&t);
    /* So is a multicast LID. */
    g_assert_cmphex(port_info_set(&t, 0xc001, 1, 2, 0, &r), ==,
                    ST_BAD_VALUE);
    port_info(&t, &r);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 0);

    g_assert_cmphex(port_info_set(&t, 5, 1, 2, RNIC_PORT_ARMED, &r), ==, 0);
    assert_resp(&r, 0);
    g_assert_cmpuint(lduw_be_p(d + PI_LID), ==, 5);
    g_assert_cmpuint(lduw_be_p(d + PI_SM_LID), ==, 1);
    g_assert_cmpuint(d[PI_PROT_LMC] & 7, ==, 2);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_ARMED);
    expect_eqe(&t, RNIC_EQE_LID_CHANGE);
    expect_eqe(&t, RNIC_EQE_SM_CHANGE);
    expect_no_eqe(&t);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ARMED);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 5);
    g_assert_cmpuint(le16_to_cpu(pa.sm_lid), ==, 1);
    g_assert_cmpuint(pa.lmc, ==, 2);

    /* The same values again: no events. */
    g_assert_cmphex(port_info_set(&t, 5, 1, 2, RNIC_PORT_ACTIVE, &r), ==, 0);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_ACTIVE);
    expect_eqe(&t, RNIC_EQE_PORT_ACTIVE);
    expect_no_eqe(&t);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);

    /* An ACTIVE port cannot be ARMED again; Down retrains to INIT. */
    g_assert_cmphex(port_info_set(&t, 5, 1, 2, RNIC_PORT_ARMED, &r), ==,
                    ST_BAD_VALUE);
    g_assert_cmphex(port_info_set(&t, 5, 1, 2, RNIC_PORT_DOWN, &r), ==, 0);
    g_assert_cmpuint(d[PI_STATE] & 0xf, ==, RNIC_PORT_INIT);
    expect_eqe(&t, RNIC_EQE_PORT_DOWN);
    expect_no_eqe(&t);
    /* PortInfo of port 2 does not exist on a CA. */
    {
        Mad m;

        mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 2);
        g_assert_true(mad_ifc(&t, &m, &r));
        assert_resp(&r, ST_BAD_VALUE);
    }
}

/* The netdev's link: DOWN when it goes, INIT when it comes back. */
static void test_link(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    QDict *resp;
    IbEnv t;
    Mad r;

    ib_env(&t, obj, data);
    port_info_set(&t, 7, 1, 0, RNIC_PORT_ARMED, &r);
    port_info_set(&t, 7, 1, 0, RNIC_PORT_ACTIVE, &r);
    expect_eqe(&t, RNIC_EQE_LID_CHANGE);
    expect_eqe(&t, RNIC_EQE_SM_CHANGE);
    expect_eqe(&t, RNIC_EQE_PORT_ACTIVE);

    resp = qtest_qmp(qrnic_qts(t.e.r), "{'execute': 'set_link', 'arguments':"
                     " {'name': 'hs0', 'up': false}}");
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    expect_eqe(&t, RNIC_EQE_PORT_DOWN);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_DOWN);
    g_assert_cmpuint(pa.phys_state, ==, RNIC_PHYS_POLLING);
    /* The LID stays for the SM's next sweep. */
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 7);

    resp = qtest_qmp(qrnic_qts(t.e.r), "{'execute': 'set_link', 'arguments':"
                     " {'name': 'hs0', 'up': true}}");
    g_assert_true(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    /* Up is not ACTIVE: the SM has to arm the port again. */
    expect_no_eqe(&t);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(pa.phys_state, ==, RNIC_PHYS_LINK_UP);
}

static void test_mkey(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r, cur;
    bool reply;

    ib_env(&t, obj, data);
    port_info(&t, &cur);
    mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, cur.b + M_DATA, 64);
    stq_be_p(m.b + M_DATA + PI_MKEY, 0xfeedull);
    m.b[M_DATA + PI_PROT_LMC] = 2 << 6;
    m.b[M_DATA + PI_STATE] = 0;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + PI_MKEY), ==, 0xfeed);

    /* Protection 2: a Get without the key is dropped and counted. */
    mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_false(mad_ifc(&t, &m, &r));
    mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    g_assert_false(mad_ifc(&t, &m, &r));
    mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    stq_be_p(m.b + M_MKEY, 0xfeed);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_MKEY_VIOL), ==, 2);
    /* The driver's own queries pass. */
    mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_IGNORE_MKEY, t.in,
                                 &r, &reply), ==, RNIC_CMD_OK);
    g_assert_true(reply);

    /* Protection 1: the Get passes, the M_Key reads as zero. */
    memcpy(m.b + M_DATA, r.b + M_DATA, 64);
    mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, r.b + M_DATA, 64);
    stq_be_p(m.b + M_MKEY, 0xfeed);
    m.b[M_DATA + PI_PROT_LMC] = 1 << 6;
    m.b[M_DATA + PI_STATE] = 0;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(ldq_be_p(r.b + M_DATA + PI_MKEY), ==, 0);
}

static void test_tables(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    unsigned i;

    ib_env(&t, obj, data);
    /* P_Key table: 0xffff at index 0, the rest empty. */
    mad_init(&m, CLASS_LID, GET, A_PKEY, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(lduw_be_p(r.b + M_DATA), ==, 0xffff);
    for (i = 1; i < 32; i++) {
        g_assert_cmphex(lduw_be_p(r.b + M_DATA + 2 * i), ==, 0);
    }
    mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    stw_be_p(m.b + M_DATA, 0xffff);
    stw_be_p(m.b + M_DATA + 2, 0x8001);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(lduw_be_p(r.b + M_DATA + 2), ==, 0x8001);
    expect_eqe(&t, RNIC_EQE_PKEY_CHANGE);
    g_assert_true(mad_ifc(&t, &m, &r));
    expect_no_eqe(&t);
    mad_init(&m, CLASS_LID, GET, A_PKEY, 1);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VALUE);

    /* SL to VL: VL0..VL3 or 15; anything else refused. */
    mad_init(&m, CLASS_LID, SET, A_SL2VL, 0);
    for (i = 0; i < 8; i++) {
        m.b[M_DATA + i] = (i % 4) << 4 | 0xf;
    }
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(r.b[M_DATA + 3], ==, 0x3f);
    m.b[M_DATA + 5] = 0x45;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VALUE);
    mad_init(&m, CLASS_LID, GET, A_SL2VL, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmphex(r.b[M_DATA + 5], ==, 0x1f);

    /* VL arbitration: blocks 1..4. */
    mad_init(&m, CLASS_LID, SET, A_VLARB, 3u << 16);
    m.b[M_DATA] = 2;
    m.b[M_DATA + 1] = 0x40;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    mad_init(&m, CLASS_LID, GET, A_VLARB, 3u << 16);
    g_assert_true(mad_ifc(&t, &m, &r));
    g_assert_cmphex(r.b[M_DATA], ==, 2);
    g_assert_cmphex(r.b[M_DATA + 1], ==, 0x40);
    mad_init(&m, CLASS_LID, GET, A_VLARB, 5u << 16);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VALUE);
}

/* Directed-route SMPs at a CA. */
static void test_dr(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;

    ib_env(&t, obj, data);
    /* Zero hops: the SM's own node. */
    mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_D);
    g_assert_cmpuint(r.b[M_DATA + 2], ==, 1);

    /* One hop, at its end: the in-port goes into the return path. */
    mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    m.b[M_HOP_CNT] = 1;
    m.b[M_HOP_PTR] = 1;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_D);
    g_assert_cmpuint(r.b[M_RETURN_PATH + 1], ==, 1);
    g_assert_cmpuint(r.b[M_HOP_PTR], ==, 1);

    /* Past its end by one: for us, too. */
    m.b[M_HOP_PTR] = 2;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_D);

    /* A CA forwards nothing; bad pointers and LID-routed tails drop. */
    m.b[M_HOP_CNT] = 2;
    m.b[M_HOP_PTR] = 1;
    g_assert_false(mad_ifc(&t, &m, &r));
    m.b[M_HOP_PTR] = 0;
    g_assert_false(mad_ifc(&t, &m, &r));
    m.b[M_HOP_PTR] = 5;
    g_assert_false(mad_ifc(&t, &m, &r));
    m.b[M_HOP_CNT] = 1;
    m.b[M_HOP_PTR] = 1;
    stw_be_p(m.b + M_DR_DLID, 3);
    g_assert_false(mad_ifc(&t, &m, &r));
    /* Returning SMPs are the SM's, which is here only at hop 0. */
    mad_init(&m, CLASS_DR, GET, A_NODE_INFO, 0);
    stw_be_p(m.b + M_STATUS, ST_D);
    m.b[M_HOP_CNT] = 2;
    m.b[M_HOP_PTR] = 2;
    g_assert_false(mad_ifc(&t, &m, &r));
}

/* ---- the PMA ---- */

static void test_pma(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r;
    const uint8_t *d = r.b + M_DATA;
    uint64_t tx_bytes, tx_pkts, rx_bytes, rx_pkts;
    uint8_t payload[64];
    Roce f;

    /* Traffic first, so that the counters the PMA reports are not 0. */
    rt_env_basic(&t.e, obj, data);
    rt_env_rc_qp(&t.e, RNIC_QPS_RTS);
    rt_fill_pattern(payload, sizeof(payload), 3);
    rt_roce_init_payload(&f, OPC_WRITE_ONLY, t.e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    f.va = t.e.mr.buf;
    f.rkey = t.e.mr.rkey;
    f.dma_len = sizeof(payload);
    rt_send_roce(&t.e, &f);
    rt_expect_ack(&t.e, AETH_ACK(0), QP_RQ_PSN);
    t.in = qrnic_alloc(t.e.r, QRNIC_PAGE);
    t.out = qrnic_alloc(t.e.r, QRNIC_PAGE);

    mad_init(&m, CLASS_PERF, GET, A_CPI, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmpuint(d[0], ==, 1);
    g_assert_cmpuint(d[1], ==, 1);
    g_assert_cmphex(lduw_be_p(d + 2), ==, 1u << 9);     /* extended width */

    tx_bytes = qrnic_counter(t.e.r, RNIC_CNT_TX_BYTES);
    tx_pkts = qrnic_counter(t.e.r, RNIC_CNT_TX_PKTS);
    rx_bytes = qrnic_counter(t.e.r, RNIC_CNT_RX_BYTES);
    rx_pkts = qrnic_counter(t.e.r, RNIC_CNT_RX_PKTS);
    g_assert_cmpuint(tx_pkts, ==, 1);           /* the ACK */
    g_assert_cmpuint(rx_pkts, ==, 1);           /* the WRITE */
    g_assert_cmpuint(rx_bytes, >=, sizeof(payload));
    mad_init(&m, CLASS_PERF, GET, A_PORT_CNT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmpuint(d[1], ==, 1);
    g_assert_cmpuint(lduw_be_p(d + 8), ==, 0);          /* PortRcvErrors */
    g_assert_cmpuint(ldl_be_p(d + 24), ==, tx_bytes / 4);
    g_assert_cmpuint(ldl_be_p(d + 28), ==, rx_bytes / 4);
    g_assert_cmpuint(ldl_be_p(d + 32), ==, 1);
    g_assert_cmpuint(ldl_be_p(d + 36), ==, 1);
    mad_init(&m, CLASS_PERF, GET, A_PORT_CNT_EXT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, 0);
    g_assert_cmpuint(ldq_be_p(d + 8), ==, tx_bytes / 4);
    g_assert_cmpuint(ldq_be_p(d + 16), ==, rx_bytes / 4);
    g_assert_cmpuint(ldq_be_p(d + 24), ==, 1);
    g_assert_cmpuint(ldq_be_p(d + 32), ==, 1);

    m.b[M_DATA + 1] = 2;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_VALUE);
    mad_init(&m, CLASS_PERF, SET, A_PORT_CNT, 0);
    m.b[M_DATA + 1] = 1;
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_METHOD);
    mad_init(&m, CLASS_PERF, GET, 0x0011, 0);
    g_assert_true(mad_ifc(&t, &m, &r));
    assert_resp(&r, ST_BAD_ATTR);
    /* GSI classes never come by QP0. */
    mad_init(&m, CLASS_PERF, GET, A_CPI, 0);
    {
        bool reply = true;

        g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, t.in,
                                     NULL, &reply), ==, RNIC_CMD_OK);
        g_assert_false(reply);
    }
}

/* ---- bad commands ---- */

static void test_cmd_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_cmd cmd;
    uint32_t uctx;
    uint64_t guest_err;
    IbEnv t;
    Mad m;

    ib_env(&t, obj, data);
    mad_init(&m, CLASS_LID, GET, A_NODE_INFO, 0);
    guest_err = qrnic_counter(t.e.r, RNIC_CNT_GUEST_ERR);
    g_assert_cmpuint(mad_ifc_raw(&t, &m, 2, RNIC_MAD_IFC_QP0, t.in, NULL,
                                 NULL), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, 0x80, t.in, NULL, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0, BAD_DMA, NULL,
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
    g_assert_true(mad_ifc(&t, &m, NULL));
}

/* A reset forgets what the SM set. */
static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    IbEnv t;
    Mad r;

    ib_env(&t, obj, data);
    port_info_set(&t, 9, 1, 1, RNIC_PORT_ARMED, &r);
    assert_resp(&r, 0);
    qrnic_reset(t.e.r);
    ib_env(&t, obj, data);
    query_port(&t, &pa);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_INIT);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 0);
    g_assert_cmpuint(pa.lmc, ==, 0);
    expect_no_eqe(&t);
}

static void register_rnic_ib_test(void)
{
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
}

libqos_init(register_rnic_ib_test);

#endif /* _WIN32 */
