/*
 * QTest cases for rnic: what the InfiniBand port's tests share
 *
 * MAD offsets and codes as the IBA numbers them, and MAD_IFC with the
 * port events it may post, for rnic-ib-test.c and rnic-ib-trap-test.c.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RNIC_IB_COMMON_H
#define RNIC_IB_COMMON_H

#include "rnic-test-common.h"

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

#define TRAP            0x05
#define A_NOTICE        0x0002
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

typedef struct IbEnv {
    Env e;
    uint64_t in, out;
} IbEnv;

void ibt_mad_init(Mad *m, uint8_t cls, uint8_t method, uint16_t attr,
                  uint32_t mod);
void ibt_ib_env(IbEnv *t, void *obj, void *data);
uint8_t ibt_mad_ifc_raw(IbEnv *t, const Mad *in, uint8_t port,
                        uint8_t flags, uint64_t in_addr, Mad *out,
                        bool *reply);
/* A MAD from the wire on QP0 (SMPs) or QP1 (others): the response. */
bool ibt_mad_ifc(IbEnv *t, const Mad *in, Mad *out);
/* The answer's header: a GetResp with @status and the request's TID. */
void ibt_assert_resp(const Mad *r, uint16_t status);
void ibt_expect_eqe(IbEnv *t, uint8_t type);
void ibt_expect_no_eqe(IbEnv *t);
void ibt_query_port(IbEnv *t, struct rnic_port_attr *pa);
void ibt_port_info(IbEnv *t, Mad *r);
/* A PortInfo Set from the current values with @edit applied. */
uint16_t ibt_port_info_set(IbEnv *t, uint16_t lid, uint16_t sm_lid,
                           uint8_t lmc, uint8_t state, Mad *r);
/*
 * A PortInfo Set of the current values with M_Key @key and protection
 * bits @prot, from a port whose M_Key is not yet set; the answer in @r.
 */
void ibt_set_mkey(IbEnv *t, uint64_t key, uint8_t prot, Mad *r);
/* MAD_IFC with RNIC_MAD_IFC_TRAP: true and the trap in @r if one waited. */
bool ibt_take_trap(IbEnv *t, Mad *r);
/* A taken trap's header and Notice: SubnTrap(Notice), generic @type. */
void ibt_assert_trap(const Mad *r, uint8_t type, uint16_t num,
                     uint16_t issuer);

#endif
