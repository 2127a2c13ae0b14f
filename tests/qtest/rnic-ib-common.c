/*
 * QTest cases for rnic: what the InfiniBand port's tests share
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "rnic-ib-common.h"

#ifndef _WIN32

void ibt_mad_init(Mad *m, uint8_t cls, uint8_t method, uint16_t attr,
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

void ibt_ib_env(IbEnv *t, void *obj, void *data)
{
    rt_env_init(&t->e, obj, data);
    qrnic_enable(t->e.r);
    g_assert_cmpuint(qrnic_create_eq(t->e.r, &t->e.eq, 0, 8), ==,
                     RNIC_CMD_OK);
    t->in = qrnic_alloc(t->e.r, QRNIC_PAGE);
    t->out = qrnic_alloc(t->e.r, QRNIC_PAGE);
}

uint8_t ibt_mad_ifc_raw(IbEnv *t, const Mad *in, uint8_t port,
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
bool ibt_mad_ifc(IbEnv *t, const Mad *in, Mad *out)
{
    bool reply;
    uint8_t flags = (in->b[M_CLASS] == CLASS_LID ||
                     in->b[M_CLASS] == CLASS_DR) ? RNIC_MAD_IFC_QP0 : 0;

    g_assert_cmpuint(ibt_mad_ifc_raw(t, in, 1, flags, t->in, out, &reply), ==,
                     RNIC_CMD_OK);
    return reply;
}

/* The answer's header: a GetResp with @status and the request's TID. */
void ibt_assert_resp(const Mad *r, uint16_t status)
{
    g_assert_cmphex(r->b[M_METHOD], ==, GET_RESP);
    g_assert_cmphex(lduw_be_p(r->b + M_STATUS), ==, status);
    g_assert_cmphex(ldq_be_p(r->b + M_TID), ==, 0x1122334455667788ull);
}

void ibt_expect_eqe(IbEnv *t, uint8_t type)
{
    struct rnic_eqe eqe;

    qrnic_settle(t->e.r);
    g_assert_true(qrnic_eq_poll(t->e.r, &t->e.eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, type);
    g_assert_cmphex(le32_to_cpu(eqe.obj), ==, 1);
}

void ibt_expect_no_eqe(IbEnv *t)
{
    struct rnic_eqe eqe;

    qrnic_settle(t->e.r);
    g_assert_false(qrnic_eq_poll(t->e.r, &t->e.eq, &eqe));
}

void ibt_query_port(IbEnv *t, struct rnic_port_attr *pa)
{
    g_assert_cmpuint(qrnic_query(t->e.r, RNIC_CMD_QUERY_PORT, 1, t->out,
                                 sizeof(*pa)), ==, RNIC_CMD_OK);
    qtest_memread(qrnic_qts(t->e.r), t->out, pa, sizeof(*pa));
}

void ibt_port_info(IbEnv *t, Mad *r)
{
    Mad m;

    ibt_mad_init(&m, CLASS_LID, GET, A_PORT_INFO, 1);
    g_assert_true(ibt_mad_ifc(t, &m, r));
    ibt_assert_resp(r, 0);
}

/* A PortInfo Set from the current values with @edit applied. */
uint16_t ibt_port_info_set(IbEnv *t, uint16_t lid, uint16_t sm_lid,
                           uint8_t lmc, uint8_t state, Mad *r)
{
    Mad m, cur;

    ibt_port_info(t, &cur);
    ibt_mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, cur.b + M_DATA, 64);
    stw_be_p(m.b + M_DATA + PI_LID, lid);
    stw_be_p(m.b + M_DATA + PI_SM_LID, sm_lid);
    m.b[M_DATA + PI_PROT_LMC] = lmc;
    m.b[M_DATA + PI_STATE] = state;
    g_assert_true(ibt_mad_ifc(t, &m, r));
    return lduw_be_p(r->b + M_STATUS);
}

void ibt_set_mkey(IbEnv *t, uint64_t key, uint8_t prot, Mad *r)
{
    Mad m, cur;

    ibt_port_info(t, &cur);
    ibt_mad_init(&m, CLASS_LID, SET, A_PORT_INFO, 1);
    memcpy(m.b + M_DATA, cur.b + M_DATA, 64);
    stq_be_p(m.b + M_DATA + PI_MKEY, key);
    m.b[M_DATA + PI_PROT_LMC] = prot << 6;
    m.b[M_DATA + PI_STATE] = 0;
    g_assert_true(ibt_mad_ifc(t, &m, r));
    ibt_assert_resp(r, 0);
}

bool ibt_take_trap(IbEnv *t, Mad *r)
{
    Mad none = { 0 };
    bool reply;

    /* in_addr is not read: 1 would fail a DMA that was tried. */
    g_assert_cmpuint(ibt_mad_ifc_raw(t, &none, 1, RNIC_MAD_IFC_TRAP, 1, r,
                                     &reply), ==, RNIC_CMD_OK);
    return reply;
}

void ibt_assert_trap(const Mad *r, uint8_t type, uint16_t num,
                     uint16_t issuer)
{
    const uint8_t *n = r->b + M_DATA;

    g_assert_cmphex(r->b[0], ==, 1);
    g_assert_cmphex(r->b[M_CLASS], ==, CLASS_LID);
    g_assert_cmphex(r->b[M_CLASS_VER], ==, 1);
    g_assert_cmphex(r->b[M_METHOD], ==, TRAP);
    g_assert_cmphex(lduw_be_p(r->b + M_ATTR), ==, A_NOTICE);
    g_assert_cmphex(ldl_be_p(r->b + M_MOD), ==, 0);
    g_assert_cmphex(n[0], ==, 0x80 | type);             /* IsGeneric */
    g_assert_cmphex(ldl_be_p(n) & 0xffffff, ==, 1);     /* producer: a CA */
    g_assert_cmpuint(lduw_be_p(n + 4), ==, num);
    g_assert_cmphex(lduw_be_p(n + 6), ==, issuer);
}

#endif
