/*
 * QTest cases for rnic: the InfiniBand SMA's traps and the host's Sets
 *
 * The SMA tells the SM of what it saw with traps, which the driver takes
 * with MAD_IFC (RNIC_MAD_IFC_TRAP) after an RNIC_EQE_SMA_TRAP event and
 * sends from QP0: 256 for an SMP the M_Key check refused, 144 for a
 * change the host made with a LOCAL Set (NodeDescription, the host's
 * CapabilityMask bits).  Checked field by field, with the cases that
 * send none: no SM yet, a Set that changes nothing, a full queue.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "libqtest.h"
#include "rnic-ib-common.h"

#ifndef _WIN32

#define OUR_LID         0x0010
#define SM_LID          0x0001
#define MKEY            0xfeedull
#define PI_CAP          20
#define CAP_IS_SM       (1u << 1)
#define CAP_IS_TRAP     (1u << 3)
#define NT_SECURITY     2
#define NT_INFO         4

/* The SM gave the port its LID and its own; the events that posted, read. */
static void trap_env(IbEnv *t, void *obj, void *data)
{
    Mad r;

    ibt_ib_env(t, obj, data);
    g_assert_cmpuint(ibt_port_info_set(t, OUR_LID, SM_LID, 0, 0, &r), ==, 0);
    ibt_expect_eqe(t, RNIC_EQE_LID_CHANGE);
    ibt_expect_eqe(t, RNIC_EQE_SM_CHANGE);
    ibt_expect_no_eqe(t);
}

/* A LOCAL Set: the host's own, as the driver makes it. */
static bool local_set(IbEnv *t, const Mad *m, Mad *r)
{
    bool reply;

    g_assert_cmpuint(ibt_mad_ifc_raw(t, m, 1, RNIC_MAD_IFC_LOCAL, t->in, r,
                                     &reply), ==, RNIC_CMD_OK);
    return reply;
}

static void node_desc_set(IbEnv *t, const char *desc, Mad *r)
{
    Mad m;

    ibt_mad_init(&m, CLASS_LID, SET, A_NODE_DESC, 0);
    pstrcpy((char *)m.b + M_DATA, 64, desc);
    g_assert_true(local_set(t, &m, r));
}

static void cap_set(IbEnv *t, uint32_t cap, Mad *r)
{
    Mad m;

    ibt_mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    stl_be_p(m.b + M_DATA + PI_CAP, cap);
    /* What else a LOCAL PortInfo Set carries is not taken. */
    stw_be_p(m.b + M_DATA + PI_LID, 0x4444);
    m.b[M_DATA + PI_STATE] = RNIC_PORT_DOWN;
    g_assert_true(local_set(t, &m, r));
}

/*
 * Trap 256: an SMP the M_Key check refused, LID routed and directed
 * route, each trapped once with what it asked and who asked it.
 */
static void test_trap_mkey(void *obj, void *data, QGuestAllocator *alloc)
{
    const uint8_t *d;
    IbEnv t;
    Mad m, r;
    uint64_t tid;

    trap_env(&t, obj, data);
    g_assert_false(ibt_take_trap(&t, &r));
    ibt_set_mkey(&t, MKEY, 2, &r);

    ibt_mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    stq_be_p(m.b + M_MKEY, 0x1234);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    ibt_expect_eqe(&t, RNIC_EQE_SMA_TRAP);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, NT_SECURITY, 256, OUR_LID);
    /* The trap carries the port's M_Key, for the SM to check. */
    g_assert_cmphex(ldq_be_p(r.b + M_MKEY), ==, MKEY);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(lduw_be_p(d + 2), ==, 1);           /* the SMP's SLID */
    g_assert_cmphex(d[6], ==, SET);
    g_assert_cmphex(lduw_be_p(d + 8), ==, A_PKEY);
    g_assert_cmphex(ldl_be_p(d + 10), ==, 0);
    g_assert_cmphex(ldq_be_p(d + 14), ==, 0x1234);
    g_assert_cmphex(d[22], ==, 0);                      /* not DR */
    tid = ldq_be_p(r.b + M_TID);
    g_assert_false(ibt_take_trap(&t, &r));

    /* Directed route, two hops: DRSLID and the return path go along. */
    ibt_mad_init(&m, CLASS_DR, GET, A_PORT_INFO, 1);
    m.b[M_HOP_CNT] = 2;
    m.b[M_HOP_PTR] = 3;
    m.b[M_RETURN_PATH + 1] = 7;
    m.b[M_RETURN_PATH + 2] = 1;
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    ibt_expect_eqe(&t, RNIC_EQE_SMA_TRAP);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, NT_SECURITY, 256, OUR_LID);
    g_assert_cmphex(ldq_be_p(r.b + M_TID), ==, tid + 1);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(lduw_be_p(d + 4), ==, 0xffff);      /* DRSLID */
    g_assert_cmphex(d[6], ==, GET);
    g_assert_cmphex(lduw_be_p(d + 8), ==, A_PORT_INFO);
    g_assert_cmphex(d[22], ==, 0x80);                   /* DRNotice */
    g_assert_cmphex(d[23], ==, 2);
    g_assert_cmphex(d[24], ==, 7);
    g_assert_cmphex(d[25], ==, 1);
    g_assert_false(ibt_take_trap(&t, &r));

    /* The right key, and the driver's own queries: no trap. */
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    stq_be_p(m.b + M_MKEY, MKEY);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_MKEY_VIOL), ==, 2);
    g_assert_cmphex(ldl_be_p(r.b + M_DATA + PI_CAP) & CAP_IS_TRAP, ==,
                    CAP_IS_TRAP);
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_QP0 |
                                     RNIC_MAD_IFC_IGNORE_MKEY, t.in, &r,
                                     NULL), ==, RNIC_CMD_OK);
    ibt_assert_resp(&r, 0);
    ibt_expect_no_eqe(&t);
    g_assert_false(ibt_take_trap(&t, &r));
}

/* No SM to send to, no trap; a full queue keeps the oldest. */
static void test_trap_queue(void *obj, void *data, QGuestAllocator *alloc)
{
    IbEnv t;
    Mad m, r, cur;
    unsigned i;

    ibt_ib_env(&t, obj, data);
    ibt_port_info(&t, &cur);
    ibt_set_mkey(&t, MKEY, 2, &r);
    ibt_mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
    g_assert_false(ibt_mad_ifc(&t, &m, &r));
    ibt_expect_no_eqe(&t);
    g_assert_false(ibt_take_trap(&t, &r));

    /* The SM, with the key: LID and SM LID, the M_Key kept. */
    ibt_mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, cur.b + M_DATA, 64);
    stq_be_p(m.b + M_MKEY, MKEY);
    stq_be_p(m.b + M_DATA + PI_MKEY, MKEY);
    m.b[M_DATA + PI_PROT_LMC] = 2 << 6;
    stw_be_p(m.b + M_DATA + PI_LID, OUR_LID);
    stw_be_p(m.b + M_DATA + PI_SM_LID, SM_LID);
    m.b[M_DATA + PI_STATE] = 0;
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);

    for (i = 0; i < RNIC_SMA_TRAPS + 2; i++) {
        ibt_mad_init(&m, CLASS_LID, SET, A_PKEY, 0);
        stl_be_p(m.b + M_MOD, i);
        g_assert_false(ibt_mad_ifc(&t, &m, &r));
    }
    for (i = 0; i < RNIC_SMA_TRAPS; i++) {
        g_assert_true(ibt_take_trap(&t, &r));
        ibt_assert_trap(&r, NT_SECURITY, 256, OUR_LID);
        g_assert_cmpuint(ldl_be_p(r.b + M_DATA + 10 + 10), ==, i);
    }
    g_assert_false(ibt_take_trap(&t, &r));
    /* Every refusal counted, trapped or not. */
    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    stq_be_p(m.b + M_MKEY, MKEY);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    g_assert_cmpuint(lduw_be_p(r.b + M_DATA + PI_MKEY_VIOL), ==,
                     RNIC_SMA_TRAPS + 3);

    /* TRAP takes no other flag. */
    g_assert_cmpuint(ibt_mad_ifc_raw(&t, &m, 1, RNIC_MAD_IFC_TRAP |
                                     RNIC_MAD_IFC_QP0, t.in, &r, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
}

/*
 * Trap 144: the host's node description and CapabilityMask bits, set
 * with LOCAL Sets, which the fabric reads and cannot set itself.
 */
static void test_trap_local(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    const uint8_t *d;
    IbEnv t;
    Mad m, r;

    ibt_ib_env(&t, obj, data);
    /* Before any SM: taken, not trapped. */
    node_desc_set(&t, "vm0 rnic0", &r);
    ibt_assert_resp(&r, 0);
    g_assert_cmpstr((char *)r.b + M_DATA, ==, "vm0 rnic0");
    ibt_mad_init(&m, CLASS_LID, GET, A_NODE_DESC, 0);
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, 0);
    g_assert_cmpstr((char *)r.b + M_DATA, ==, "vm0 rnic0");
    ibt_expect_no_eqe(&t);
    g_assert_false(ibt_take_trap(&t, &r));

    /* The fabric may not set it. */
    ibt_mad_init(&m, CLASS_LID, SET, A_NODE_DESC, 0);
    pstrcpy((char *)m.b + M_DATA, 64, "not yours");
    g_assert_true(ibt_mad_ifc(&t, &m, &r));
    ibt_assert_resp(&r, ST_BAD_ATTR);

    g_assert_cmpuint(ibt_port_info_set(&t, OUR_LID, SM_LID, 0, 0, &r), ==, 0);
    ibt_expect_eqe(&t, RNIC_EQE_LID_CHANGE);
    ibt_expect_eqe(&t, RNIC_EQE_SM_CHANGE);
    node_desc_set(&t, "vm0 rnic0", &r);
    ibt_expect_no_eqe(&t);                  /* the same: nothing changed */
    node_desc_set(&t, "renamed rnic0", &r);
    ibt_assert_resp(&r, 0);
    ibt_expect_eqe(&t, RNIC_EQE_SMA_TRAP);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, NT_INFO, 144, OUR_LID);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(lduw_be_p(d + 2), ==, OUR_LID);
    g_assert_cmphex(d[5], ==, 1);                       /* other changes */
    g_assert_cmphex(ldl_be_p(d + 6) & CAP_IS_SM, ==, 0);
    g_assert_cmphex(lduw_be_p(d + 10), ==, 1);          /* NodeDescription */
    g_assert_false(ibt_take_trap(&t, &r));

    /* IsSM: PortInfo and QUERY_PORT show it; the trap has the new mask. */
    cap_set(&t, CAP_IS_SM, &r);
    ibt_assert_resp(&r, 0);
    g_assert_cmphex(ldl_be_p(r.b + M_DATA + PI_CAP) & CAP_IS_SM, ==,
                    CAP_IS_SM);
    g_assert_cmphex(lduw_be_p(r.b + M_DATA + PI_LID), ==, OUR_LID);
    g_assert_cmpuint(r.b[M_DATA + PI_STATE] & 0xf, ==, RNIC_PORT_INIT);
    ibt_expect_eqe(&t, RNIC_EQE_SMA_TRAP);
    g_assert_true(ibt_take_trap(&t, &r));
    ibt_assert_trap(&r, NT_INFO, 144, OUR_LID);
    d = r.b + M_DATA + 10;
    g_assert_cmphex(d[5], ==, 0);
    g_assert_cmphex(ldl_be_p(d + 6) & (CAP_IS_SM | CAP_IS_TRAP), ==,
                    CAP_IS_SM | CAP_IS_TRAP);
    g_assert_cmphex(lduw_be_p(d + 10), ==, 0);
    ibt_query_port(&t, &pa);
    g_assert_cmphex(le32_to_cpu(pa.port_cap_flags) & CAP_IS_SM, ==,
                    CAP_IS_SM);

    /*
     * Bits the device owns are not the host's to set; the fabric's
     * PortInfo Set leaves the host's bits.
     */
    cap_set(&t, CAP_IS_SM | (1u << 30), &r);
    ibt_assert_resp(&r, ST_BAD_VALUE);
    g_assert_cmpuint(ibt_port_info_set(&t, OUR_LID, SM_LID, 0, 0, &r), ==, 0);
    g_assert_cmphex(ldl_be_p(r.b + M_DATA + PI_CAP) & CAP_IS_SM, ==,
                    CAP_IS_SM);
    cap_set(&t, 0, &r);
    ibt_assert_resp(&r, 0);
    ibt_expect_eqe(&t, RNIC_EQE_SMA_TRAP);
    g_assert_true(ibt_take_trap(&t, &r));
    g_assert_cmphex(ldl_be_p(r.b + M_DATA + 16) & CAP_IS_SM, ==, 0);

    /* LOCAL is for SMPs only. */
    ibt_mad_init(&m, CLASS_PERF, SET, A_PORT_CNT, 0);
    g_assert_false(local_set(&t, &m, &r));
    ibt_expect_no_eqe(&t);
}

static void register_rnic_ib_trap_test(void)
{
    rt_use_node_c(true);
    rt_add_opts("ib-sma-trap-mkey", test_trap_mkey, IB_OPTS);
    rt_add_opts("ib-sma-trap-queue", test_trap_queue, IB_OPTS);
    rt_add_opts("ib-sma-trap-local", test_trap_local, IB_OPTS);
    rt_use_node_c(false);
}

libqos_init(register_rnic_ib_trap_test);

#endif /* _WIN32 */
