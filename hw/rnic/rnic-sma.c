/*
 * rnic: the InfiniBand port's management agents
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * With link-layer=infiniband the device's port has the state a subnet
 * manager reads and sets: a logical state (DOWN, INIT, ARMED, ACTIVE)
 * over the netdev's link, a LID and LMC, the SM's LID and SL, a P_Key
 * table, an M_Key and the SL to VL and VL arbitration tables.  The
 * MAD_IFC command hands this file one management datagram, which the
 * subnet management agent (SMA) or the performance management agent
 * (PMA) answers, as a real HCA's firmware does.
 *
 * Two kinds of refusal: a bad command (wrong port, unknown flags, a DMA
 * address that fails) is the guest's error and gets an RNIC_CMD_ERR_*
 * status; a bad MAD came from the fabric, so it gets a MAD status in
 * the response, or no response where the IBA says to drop it, and a
 * trace event either way.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "rnic.h"
#include "rnic-cmd.h"
#include "trace.h"

#define RNIC_IB_PERMISSIVE_LID  0xffff
#define RNIC_IB_MCAST_LID_MIN   0xc000
#define RNIC_IB_DEFAULT_GID_PREFIX 0xfe80000000000000ull

/* What the SMA reports of the port's fixed capabilities. */
#define RNIC_SMA_CAP_MASK   (RNIC_PI_CAP_IS_TRAP | \
                             RNIC_PI_CAP_IS_SL_MAPPING | \
                             RNIC_PI_CAP_IS_SYS_IMAGE_GUID | \
                             RNIC_PI_CAP_IS_CM | \
                             RNIC_PI_CAP_IS_DEVICE_MGMT | \
                             RNIC_PI_CAP_IS_CLIENT_REREG)
#define RNIC_SMA_WIDTH_4X   2
#define RNIC_SMA_SPEEDS     7       /* SDR, DDR, QDR */
#define RNIC_SMA_SPEED_QDR  4
#define RNIC_SMA_VL_CAP     3       /* VL0..VL3 */
#define RNIC_SMA_VLARB_CAP  8       /* entries of each priority */
#define RNIC_SMA_DOWN_POLL  2       /* LinkDownDefaultState: polling */

/* Until the host sets one: what NodeDescription says of the node. */
#define RNIC_SMA_NODE_DESC  "rnic"

/* PortInfo:PortState of a Set: 0 leaves it. */
#define RNIC_PI_STATE_NOP   0

/* PerfMgt attributes and layouts (data after a 64-byte header). */
#define RNIC_PMA_ATTR_CLASS_PORT_INFO   0x0001
#define RNIC_PMA_ATTR_PORT_COUNTERS     0x0012
#define RNIC_PMA_ATTR_PORT_COUNTERS_EXT 0x001d
#define RNIC_PMA_DATA                   64
#define RNIC_PMA_CAP_EXT_WIDTH          (1u << 9)
#define RNIC_PMA_RESP_TIME              18

/* ---- the port ---- */

static uint64_t rnic_mac_eui64(RnicState *s)
{
    const uint8_t *m = s->conf.macaddr.a;

    /* Modified EUI-64: U/L bit flipped, ff:fe in the middle. */
    return (uint64_t)(m[0] ^ 2) << 56 | (uint64_t)m[1] << 48 |
           (uint64_t)m[2] << 40 | 0xffULL << 32 | 0xfeULL << 24 |
           (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

/* Power-on and reset state: no LID, no SM, the default P_Key. */
void rnic_ib_reset(RnicState *s)
{
    RnicIbPort *p = &s->ibp;
    unsigned i;

    memset(p, 0, sizeof(*p));
    p->state = s->link_up ? RNIC_PORT_INIT : RNIC_PORT_DOWN;
    p->neighbor_mtu = RNIC_MTU_4096;
    p->subnet_timeout = 18;
    p->resp_time = RNIC_PMA_RESP_TIME;
    p->pkey[0] = 0xffff;
    /* IBA's default subnet prefix (link-local), until an SM sets one. */
    p->gid_prefix = RNIC_IB_DEFAULT_GID_PREFIX;
    for (i = 0; i < ARRAY_SIZE(p->vlarb[0]); i += 2) {
        /* Every data VL, weight 1, in both priorities' first block. */
        if (i / 2 < RNIC_SMA_VLARB_CAP) {
            p->vlarb[0][i] = (i / 2) % (RNIC_SMA_VL_CAP + 1);
            p->vlarb[0][i + 1] = 1;
        }
    }
    memcpy(p->vlarb[2], p->vlarb[0], sizeof(p->vlarb[2]));
    pstrcpy((char *)p->node_desc, sizeof(p->node_desc), RNIC_SMA_NODE_DESC);
}

void rnic_ib_realize(RnicState *s)
{
    s->node_guid = s->prop.node_guid ? s->prop.node_guid : rnic_mac_eui64(s);
    s->port_guid = s->prop.port_guid ? s->prop.port_guid : s->node_guid;
    rnic_ib_reset(s);
}

static void rnic_ib_set_state(RnicState *s, uint8_t state)
{
    RnicIbPort *p = &s->ibp;

    if (p->state == state) {
        return;
    }
    trace_rnic_ib_port_state(p->state, state);
    if (state == RNIC_PORT_ACTIVE) {
        p->events |= RNIC_IB_EV_ACTIVE;
    } else if (p->state == RNIC_PORT_ACTIVE) {
        p->events |= RNIC_IB_EV_DOWN;
    }
    p->state = state;
    if (p->events) {
        rnic_schedule(s);
    }
}

/*
 * The netdev's link came up or went down.  Up, the link trains and the
 * port waits in INIT for the SM; down, the port is DOWN whatever the SM
 * made of it, and keeps its LID for the SM's next sweep.
 */
void rnic_ib_link_changed(RnicState *s, bool up)
{
    if (up) {
        if (s->ibp.state == RNIC_PORT_DOWN) {
            rnic_ib_set_state(s, RNIC_PORT_INIT);
        }
    } else {
        rnic_ib_set_state(s, RNIC_PORT_DOWN);
    }
}

/* The bottom half posts what the port owes EQ 0, in a fixed order. */
void rnic_ib_post_events(RnicState *s)
{
    static const struct {
        uint32_t ev;
        uint8_t type;
    } order[] = {
        { RNIC_IB_EV_DOWN, RNIC_EQE_PORT_DOWN },
        { RNIC_IB_EV_LID, RNIC_EQE_LID_CHANGE },
        { RNIC_IB_EV_PKEY, RNIC_EQE_PKEY_CHANGE },
        { RNIC_IB_EV_SM, RNIC_EQE_SM_CHANGE },
        { RNIC_IB_EV_ACTIVE, RNIC_EQE_PORT_ACTIVE },
        { RNIC_IB_EV_TRAP, RNIC_EQE_SMA_TRAP },
    };
    uint32_t ev = s->ibp.events;
    size_t i;

    s->ibp.events = 0;
    if (!s->eq || !s->eq[0].valid) {
        return;
    }
    for (i = 0; i < ARRAY_SIZE(order); i++) {
        if (ev & order[i].ev) {
            rnic_eq_post(s, 0, order[i].type, 1, 0);
        }
    }
}

/* QUERY_PORT's InfiniBand fields. */
void rnic_ib_port_attr(RnicState *s, struct rnic_port_attr *a)
{
    const RnicIbPort *p = &s->ibp;

    a->state = p->state;
    a->active_mtu = p->neighbor_mtu;
    a->link_layer = RNIC_LINK_INFINIBAND;
    a->phys_state = s->link_up ? RNIC_PHYS_LINK_UP : RNIC_PHYS_POLLING;
    a->lmc = p->lmc;
    a->sm_sl = p->sm_sl;
    a->lid = cpu_to_le16(p->lid);
    a->sm_lid = cpu_to_le16(p->sm_lid);
    a->port_cap_flags = cpu_to_le32(RNIC_SMA_CAP_MASK | p->cap_host);
    a->pkey_tbl_len = cpu_to_le16(RNIC_PKEY_BLOCK);
    /* GUIDInfo has one GUID, so the port has one GID: prefix and GUID. */
    a->gid_tbl_len = cpu_to_le32(1);
    a->port_guid = cpu_to_le64(s->port_guid);
}

/* ---- the subnet management agent ---- */

/* One MAD, with the handler's verdict. */
typedef struct RnicMad {
    uint8_t b[RNIC_MAD_SIZE];
    uint16_t status;            /* MAD status of the answer */
    bool reply;                 /* false: dropped, nothing written */
    bool ignore_mkey;
    bool local;                 /* RNIC_MAD_IFC_LOCAL */
    uint16_t slid;              /* the LRH's SLID it came with */
} RnicMad;

static uint16_t mad_get16(const RnicMad *m, unsigned off)
{
    return lduw_be_p(m->b + off);
}

static uint32_t mad_get32(const RnicMad *m, unsigned off)
{
    return ldl_be_p(m->b + off);
}

static uint64_t mad_get64(const RnicMad *m, unsigned off)
{
    return ldq_be_p(m->b + off);
}

static void mad_fail(RnicMad *m, uint16_t status, const char *why)
{
    trace_rnic_sma_status(m->b[RNIC_MAD_MGMT_CLASS],
                          mad_get16(m, RNIC_MAD_ATTR_ID),
                          mad_get32(m, RNIC_MAD_ATTR_MOD), status, why);
    m->status = status;
}

static void mad_drop(RnicMad *m, const char *why)
{
    trace_rnic_sma_drop(m->b[RNIC_MAD_MGMT_CLASS], m->b[RNIC_MAD_METHOD],
                        mad_get16(m, RNIC_MAD_ATTR_ID), why);
    m->reply = false;
}

/* ---- traps ---- */

/*
 * Queues a Notice for the SM, which the driver takes with MAD_IFC and
 * sends from QP0, as HCA firmware hands its traps to mlx4's driver.  No
 * SM yet (no LID, or no MasterSMLID), nobody to tell: IBA sends traps
 * to the SM only.  Each is sent once; the SM's TrapRepress is taken and
 * needs no action.  A full queue drops the newest trap, traced.
 */
static uint8_t *sma_trap(RnicState *s, uint8_t type, uint16_t num)
{
    RnicIbPort *p = &s->ibp;
    uint8_t *n;

    if (!p->lid || !p->sm_lid || p->state == RNIC_PORT_DOWN) {
        trace_rnic_sma_trap_drop(num, "no subnet manager to send to");
        return NULL;
    }
    if (p->ntraps == RNIC_SMA_TRAPS) {
        trace_rnic_sma_trap_drop(num, "trap queue full");
        return NULL;
    }
    trace_rnic_sma_trap(num, p->sm_lid);
    n = p->traps[p->ntraps++];
    memset(n, 0, RNIC_SMP_DATA_LEN);
    n[RNIC_NOTICE_GENERIC_TYPE] = RNIC_NOTICE_GENERIC | type;
    /* ProducerType: this node's type, in 24 bits. */
    stw_be_p(n + RNIC_NOTICE_PRODUCER + 1, RNIC_NODE_TYPE_CA);
    stw_be_p(n + RNIC_NOTICE_TRAP_NUM, num);
    stw_be_p(n + RNIC_NOTICE_ISSUER_LID, p->lid);
    p->events |= RNIC_IB_EV_TRAP;
    rnic_schedule(s);
    return n + RNIC_NOTICE_DETAILS;
}

/* Trap 144: NodeDescription (other local changes) or CapabilityMask. */
static void sma_trap_local_changes(RnicState *s, bool node_desc)
{
    uint8_t *d = sma_trap(s, RNIC_NOTICE_TYPE_INFO, RNIC_TRAP_LOCAL_CHANGES);

    if (!d) {
        return;
    }
    stw_be_p(d + 2, s->ibp.lid);
    d[5] = node_desc ? RNIC_TRAP144_OTHER_LOCAL : 0;
    stl_be_p(d + 6, RNIC_SMA_CAP_MASK | s->ibp.cap_host);
    stw_be_p(d + 10, node_desc ? RNIC_TRAP144_NODE_DESC : 0);
}

/* Trap 256: who sent the SMP the M_Key check refused, and what it was. */
static void sma_trap_bad_mkey(RnicState *s, const uint8_t *mad, uint16_t slid)
{
    uint8_t *d = sma_trap(s, RNIC_NOTICE_TYPE_SECURITY, RNIC_TRAP_BAD_MKEY);
    uint8_t hops;

    if (!d) {
        return;
    }
    stw_be_p(d + 2, slid);
    d[6] = mad[RNIC_MAD_METHOD];
    memcpy(d + 8, mad + RNIC_MAD_ATTR_ID, 2);
    memcpy(d + 10, mad + RNIC_MAD_ATTR_MOD, 4);
    memcpy(d + 14, mad + RNIC_SMP_MKEY, 8);
    if (mad[RNIC_MAD_MGMT_CLASS] == RNIC_MGMT_CLASS_SUBN_DR) {
        /* DRSLID, and as much of the return path as the Notice holds. */
        hops = MIN(mad[RNIC_MAD_HOP_CNT], RNIC_SMP_MAX_HOPS);
        memcpy(d + 4, mad + RNIC_SMP_DR_SLID, 2);
        d[22] = 0x80;                               /* DRNotice */
        d[23] = (hops > 30 ? 0x40 : 0) | hops;      /* truncated, count */
        memcpy(d + 24, mad + RNIC_SMP_RETURN_PATH + 1, MIN(hops, 30));
    }
}

/* Traps 257 and 258 share a layout: who sent what to QP1 with which key. */
static void sma_trap_bad_key(RnicState *s, uint16_t num, uint16_t slid,
                             uint8_t sl, uint32_t src_qp, uint32_t key)
{
    uint8_t *d = sma_trap(s, RNIC_NOTICE_TYPE_SECURITY, num);

    if (!d) {
        return;
    }
    stw_be_p(d + 2, slid);                          /* LID1: the sender */
    stw_be_p(d + 4, s->ibp.lid);                    /* LID2: this port */
    stl_be_p(d + 6, key);
    stl_be_p(d + 10, (uint32_t)sl << 28 | (src_qp & 0xffffff));
    stl_be_p(d + 14, 1);                            /* QP2: the GSI QP */
}

void rnic_ib_trap_bad_pkey(RnicState *s, uint16_t slid, uint8_t sl,
                           uint32_t src_qp, uint16_t pkey)
{
    sma_trap_bad_key(s, RNIC_TRAP_BAD_PKEY, slid, sl, src_qp, pkey);
}

void rnic_ib_qkey_violation(RnicState *s, uint16_t slid, uint8_t sl,
                            uint32_t src_qp, uint32_t qkey, bool gsi)
{
    s->ibp.qkey_viol = MIN(s->ibp.qkey_viol + 1, UINT16_MAX);
    if (gsi) {
        sma_trap_bad_key(s, RNIC_TRAP_BAD_QKEY, slid, sl, src_qp, qkey);
    }
}

/* MAD_IFC with RNIC_MAD_IFC_TRAP: the oldest trap, as a SubnTrap MAD. */
static bool sma_take_trap(RnicState *s, uint8_t *mad)
{
    RnicIbPort *p = &s->ibp;

    if (!p->ntraps) {
        return false;
    }
    memset(mad, 0, RNIC_MAD_SIZE);
    mad[RNIC_MAD_BASE_VERSION] = 1;
    mad[RNIC_MAD_MGMT_CLASS] = RNIC_MGMT_CLASS_SUBN_LID;
    mad[RNIC_MAD_CLASS_VERSION] = 1;
    mad[RNIC_MAD_METHOD] = RNIC_MAD_METHOD_TRAP;
    stq_be_p(mad + RNIC_MAD_TID, ++p->trap_tid);
    stw_be_p(mad + RNIC_MAD_ATTR_ID, RNIC_SMP_ATTR_NOTICE);
    stq_be_p(mad + RNIC_SMP_MKEY, p->mkey);
    memcpy(mad + RNIC_SMP_DATA, p->traps[0], RNIC_SMP_DATA_LEN);
    p->ntraps--;
    memmove(p->traps[0], p->traps[1], p->ntraps * RNIC_SMP_DATA_LEN);
    return true;
}

static void sma_node_info(RnicState *s, uint8_t *d)
{
    d[RNIC_NI_BASE_VERSION] = 1;
    d[RNIC_NI_CLASS_VERSION] = 1;
    d[RNIC_NI_NODE_TYPE] = RNIC_NODE_TYPE_CA;
    d[RNIC_NI_NUM_PORTS] = 1;
    stq_be_p(d + RNIC_NI_SYS_GUID, s->node_guid);
    stq_be_p(d + RNIC_NI_NODE_GUID, s->node_guid);
    stq_be_p(d + RNIC_NI_PORT_GUID, s->port_guid);
    stw_be_p(d + RNIC_NI_PARTITION_CAP, RNIC_PKEY_BLOCK);
    stw_be_p(d + RNIC_NI_DEVICE_ID, s->prop.device_id);
    stl_be_p(d + RNIC_NI_REVISION, RNIC_PCI_REVISION);
    /* LocalPortNum and VendorID share a word: port 1, then 24 bits. */
    stl_be_p(d + RNIC_NI_LOCAL_PORT, 1u << 24 | s->prop.vendor_id);
}

static void sma_port_info(RnicState *s, uint8_t *d, bool hide_mkey)
{
    const RnicIbPort *p = &s->ibp;
    uint8_t phys = s->link_up ? RNIC_PHYS_LINK_UP : RNIC_PHYS_POLLING;

    stq_be_p(d + RNIC_PI_MKEY, hide_mkey ? 0 : p->mkey);
    stq_be_p(d + RNIC_PI_GID_PREFIX, p->gid_prefix);
    stw_be_p(d + RNIC_PI_LID, p->lid);
    stw_be_p(d + RNIC_PI_SM_LID, p->sm_lid);
    stl_be_p(d + RNIC_PI_CAP_MASK, RNIC_SMA_CAP_MASK | p->cap_host);
    stw_be_p(d + RNIC_PI_MKEY_LEASE, p->mkey_lease);
    d[RNIC_PI_LOCAL_PORT] = 1;
    d[RNIC_PI_WIDTH_ENABLED] = RNIC_SMA_WIDTH_4X;
    d[RNIC_PI_WIDTH_SUPPORTED] = RNIC_SMA_WIDTH_4X;
    d[RNIC_PI_WIDTH_ACTIVE] = RNIC_SMA_WIDTH_4X;
    d[RNIC_PI_SPEED_SUP_STATE] = RNIC_SMA_SPEEDS << 4 | p->state;
    d[RNIC_PI_PHYS_DOWNDEF] = phys << 4 | RNIC_SMA_DOWN_POLL;
    d[RNIC_PI_MKEYPROT_LMC] = p->mkey_prot << 6 | p->lmc;
    d[RNIC_PI_SPEED_ACT_EN] = RNIC_SMA_SPEED_QDR << 4 | RNIC_SMA_SPEEDS;
    d[RNIC_PI_NMTU_SMSL] = p->neighbor_mtu << 4 | p->sm_sl;
    d[RNIC_PI_VLCAP_INIT] = RNIC_SMA_VL_CAP << 4;
    d[RNIC_PI_VLARB_HIGH_CAP] = RNIC_SMA_VLARB_CAP;
    d[RNIC_PI_VLARB_LOW_CAP] = RNIC_SMA_VLARB_CAP;
    d[RNIC_PI_INITREPLY_MTUCAP] = RNIC_MTU_4096;
    d[RNIC_PI_OPVLS_ENF] = RNIC_SMA_VL_CAP << 4;
    stw_be_p(d + RNIC_PI_MKEY_VIOL, p->mkey_viol);
    stw_be_p(d + RNIC_PI_PKEY_VIOL, p->pkey_viol);
    stw_be_p(d + RNIC_PI_QKEY_VIOL, p->qkey_viol);
    d[RNIC_PI_GUID_CAP] = 1;
    d[RNIC_PI_REREG_TIMEOUT] = p->subnet_timeout & 0x1f;
    d[RNIC_PI_RESP_TIME] = p->resp_time & 0x1f;
}

/*
 * A Set of PortInfo: every field is checked before any is applied, so a
 * refused Set changes nothing.  PortState follows the IBA's rules: Down
 * from any state (the link retrains, so the port is back in INIT if the
 * link is up), Armed from INIT or ARMED, Active from ARMED or ACTIVE.
 */
static void sma_set_port_info(RnicState *s, RnicMad *m, const uint8_t *d)
{
    RnicIbPort *p = &s->ibp;
    uint16_t lid = lduw_be_p(d + RNIC_PI_LID);
    uint16_t sm_lid = lduw_be_p(d + RNIC_PI_SM_LID);
    uint8_t state = d[RNIC_PI_SPEED_SUP_STATE] & 0xf;
    uint8_t lmc = d[RNIC_PI_MKEYPROT_LMC] & 7;
    uint8_t sm_sl = d[RNIC_PI_NMTU_SMSL] & 0xf;
    uint8_t nmtu = d[RNIC_PI_NMTU_SMSL] >> 4;
    uint8_t next = p->state;

    if (lid >= RNIC_IB_MCAST_LID_MIN) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "LID is multicast");
        return;
    }
    if (sm_lid >= RNIC_IB_MCAST_LID_MIN) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "SM LID is multicast");
        return;
    }
    if (nmtu && (nmtu < RNIC_MTU_256 || nmtu > RNIC_MTU_4096)) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "NeighborMTU");
        return;
    }
    switch (state) {
    case RNIC_PI_STATE_NOP:
        break;
    case RNIC_PORT_DOWN:
        next = s->link_up ? RNIC_PORT_INIT : RNIC_PORT_DOWN;
        break;
    case RNIC_PORT_ARMED:
        if (p->state != RNIC_PORT_INIT && p->state != RNIC_PORT_ARMED) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "Armed not from Init");
            return;
        }
        next = RNIC_PORT_ARMED;
        break;
    case RNIC_PORT_ACTIVE:
        if (p->state != RNIC_PORT_ARMED && p->state != RNIC_PORT_ACTIVE) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "Active not from Armed");
            return;
        }
        next = RNIC_PORT_ACTIVE;
        break;
    default:
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "PortState");
        return;
    }

    if (lid != p->lid || lmc != p->lmc) {
        p->events |= RNIC_IB_EV_LID;
    }
    if (sm_lid != p->sm_lid || sm_sl != p->sm_sl) {
        p->events |= RNIC_IB_EV_SM;
    }
    p->mkey = ldq_be_p(d + RNIC_PI_MKEY);
    p->gid_prefix = ldq_be_p(d + RNIC_PI_GID_PREFIX);
    p->lid = lid;
    p->sm_lid = sm_lid;
    p->mkey_lease = lduw_be_p(d + RNIC_PI_MKEY_LEASE);
    p->mkey_prot = d[RNIC_PI_MKEYPROT_LMC] >> 6;
    p->lmc = lmc;
    p->sm_sl = sm_sl;
    if (nmtu) {
        p->neighbor_mtu = nmtu;
    }
    p->subnet_timeout = d[RNIC_PI_REREG_TIMEOUT] & 0x1f;
    trace_rnic_sma_port_info_set(lid, lmc, sm_lid, sm_sl, next);
    /* Events before a state change, which may schedule them. */
    if (p->events) {
        rnic_schedule(s);
    }
    rnic_ib_set_state(s, next);
}

/*
 * A LOCAL Set (RNIC_MAD_IFC_LOCAL): the host's node description, or of
 * PortInfo only the host's CapabilityMask bits.  A change is the local
 * change trap 144 tells the SM of.
 */
static void sma_local_set(RnicState *s, RnicMad *m, uint16_t attr,
                          uint8_t *d)
{
    RnicIbPort *p = &s->ibp;
    uint32_t cap;

    switch (attr) {
    case RNIC_SMP_ATTR_NODE_DESC:
        if (memcmp(p->node_desc, d, RNIC_SMP_DATA_LEN)) {
            memcpy(p->node_desc, d, RNIC_SMP_DATA_LEN);
            sma_trap_local_changes(s, true);
        }
        return;
    case RNIC_SMP_ATTR_PORT_INFO:
        cap = ldl_be_p(d + RNIC_PI_CAP_MASK) & ~RNIC_SMA_CAP_MASK;
        if (cap & ~RNIC_SMA_CAP_HOST) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "CapabilityMask bits");
            return;
        }
        if (cap != p->cap_host) {
            p->cap_host = cap;
            sma_trap_local_changes(s, false);
        }
        memset(d, 0, RNIC_SMP_DATA_LEN);
        sma_port_info(s, d, false);
        return;
    default:
        mad_fail(m, RNIC_MAD_STATUS_BAD_ATTR, "LOCAL Set of attribute");
    }
}

static void sma_pkey_table(RnicState *s, RnicMad *m, uint8_t *d, bool set)
{
    RnicIbPort *p = &s->ibp;
    unsigned i;

    if (mad_get32(m, RNIC_MAD_ATTR_MOD) != 0) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "P_Key block");
        return;
    }
    if (set) {
        bool changed = false;

        for (i = 0; i < RNIC_PKEY_BLOCK; i++) {
            uint16_t k = lduw_be_p(d + 2 * i);

            changed |= k != p->pkey[i];
            p->pkey[i] = k;
        }
        if (changed) {
            p->events |= RNIC_IB_EV_PKEY;
            rnic_schedule(s);
        }
    }
    for (i = 0; i < RNIC_PKEY_BLOCK; i++) {
        stw_be_p(d + 2 * i, p->pkey[i]);
    }
}

static void sma_sl2vl(RnicState *s, RnicMad *m, uint8_t *d, bool set)
{
    RnicIbPort *p = &s->ibp;
    unsigned i;

    if (mad_get32(m, RNIC_MAD_ATTR_MOD) != 0) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "SL2VL modifier");
        return;
    }
    if (set) {
        /* Each VL an operational one, or 15: packets of that SL drop. */
        for (i = 0; i < 16; i++) {
            uint8_t vl = (d[i / 2] >> (i & 1 ? 0 : 4)) & 0xf;

            if (vl > RNIC_SMA_VL_CAP && vl != 15) {
                mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "SL2VL VL");
                return;
            }
        }
        for (i = 0; i < 16; i++) {
            p->sl2vl[i] = (d[i / 2] >> (i & 1 ? 0 : 4)) & 0xf;
        }
    }
    for (i = 0; i < 8; i++) {
        d[i] = p->sl2vl[2 * i] << 4 | p->sl2vl[2 * i + 1];
    }
}

static void sma_vlarb(RnicState *s, RnicMad *m, uint8_t *d, bool set)
{
    RnicIbPort *p = &s->ibp;
    uint32_t mod = mad_get32(m, RNIC_MAD_ATTR_MOD);
    uint32_t block = mod >> 16;
    unsigned i;

    /* Blocks 1..4; a CA's port field is ignored. */
    if (block < 1 || block > 4) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "VLArbitration block");
        return;
    }
    if (set) {
        for (i = 0; i < RNIC_IB_VLARB_ENTRIES; i++) {
            if ((d[2 * i] & 0xf) > RNIC_SMA_VL_CAP) {
                mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "VLArbitration VL");
                return;
            }
        }
        for (i = 0; i < RNIC_IB_VLARB_ENTRIES; i++) {
            p->vlarb[block - 1][2 * i] = d[2 * i] & 0xf;
            p->vlarb[block - 1][2 * i + 1] = d[2 * i + 1];
        }
    }
    memcpy(d, p->vlarb[block - 1], sizeof(p->vlarb[0]));
}

/*
 * M_Key (IBA 14.2.4): with a nonzero M_Key and a MAD that does not carry
 * it, a Set fails, and so does a Get when the protection bits are 2 or
 * more; protection bits 1 let the Get through with the M_Key hidden.
 * Failures are dropped unanswered and counted in PortInfo.
 */
static bool sma_mkey_ok(RnicState *s, RnicMad *m, bool *hide)
{
    RnicIbPort *p = &s->ibp;
    bool set = m->b[RNIC_MAD_METHOD] == RNIC_MAD_METHOD_SET;

    *hide = false;
    if (m->ignore_mkey || m->local || !p->mkey ||
        mad_get64(m, RNIC_SMP_MKEY) == p->mkey) {
        return true;
    }
    if (!set && p->mkey_prot == 0) {
        return true;
    }
    if (!set && p->mkey_prot == 1) {
        *hide = true;
        return true;
    }
    if (p->mkey_viol < UINT16_MAX) {
        p->mkey_viol++;
    }
    sma_trap_bad_mkey(s, m->b, m->slid);
    mad_drop(m, "M_Key mismatch");
    return false;
}

/*
 * Directed-route SMPs at a CA, which forwards nothing (IBA 14.2.2).
 * Outbound (D clear) the SMP is for us when the hop pointer is one past
 * the hop count, or equal to it with a permissive DrDLID (the directed
 * part ends here; we write the in-port into the return path).  Returning
 * (D set) it is for us, as the SM's node, when the hop pointer is 0, or
 * 1 with a permissive DrSLID.  Anything else is dropped.
 */
static bool sma_dr_ok(RnicMad *m, uint8_t in_port)
{
    uint8_t ptr = m->b[RNIC_MAD_HOP_PTR];
    uint8_t cnt = m->b[RNIC_MAD_HOP_CNT];
    bool returning = mad_get16(m, RNIC_MAD_STATUS) & RNIC_SMP_DIRECTION;

    if (cnt > RNIC_SMP_MAX_HOPS) {
        mad_drop(m, "hop count over 63");
        return false;
    }
    if (!returning) {
        if (cnt && ptr == 0) {
            mad_drop(m, "outbound hop pointer 0");
            return false;
        }
        if (ptr == cnt) {
            if (mad_get16(m, RNIC_SMP_DR_DLID) != RNIC_IB_PERMISSIVE_LID) {
                mad_drop(m, "LID-routed part after a CA");
                return false;
            }
            if (cnt) {
                m->b[RNIC_SMP_RETURN_PATH + ptr] = in_port;
            }
            return true;
        }
        if (ptr == cnt + 1) {
            return true;
        }
        mad_drop(m, ptr < cnt ? "a CA does not forward" : "hop pointer");
        return false;
    }
    if (ptr == 0) {
        return true;
    }
    if (ptr == 1 && cnt &&
        mad_get16(m, RNIC_SMP_DR_SLID) == RNIC_IB_PERMISSIVE_LID) {
        return true;
    }
    mad_drop(m, "returning SMP not for a CA");
    return false;
}

static void sma_handle(RnicState *s, RnicMad *m, uint8_t in_port)
{
    uint8_t cls = m->b[RNIC_MAD_MGMT_CLASS];
    uint8_t method = m->b[RNIC_MAD_METHOD];
    uint16_t attr = mad_get16(m, RNIC_MAD_ATTR_ID);
    uint32_t mod = mad_get32(m, RNIC_MAD_ATTR_MOD);
    uint8_t *d = m->b + RNIC_SMP_DATA;
    bool set = method == RNIC_MAD_METHOD_SET;
    bool hide;

    if (cls == RNIC_MGMT_CLASS_SUBN_DR && !sma_dr_ok(m, in_port)) {
        return;
    }
    if (m->b[RNIC_MAD_CLASS_VERSION] != 1) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VERSION, "class version");
        return;
    }
    if (method != RNIC_MAD_METHOD_GET && !set) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_METHOD, "method");
        return;
    }
    if (!sma_mkey_ok(s, m, &hide)) {
        return;
    }
    if (set && m->local) {
        sma_local_set(s, m, attr, d);
        return;
    }
    if (!set) {
        memset(d, 0, RNIC_SMP_DATA_LEN);
    }
    switch (attr) {
    case RNIC_SMP_ATTR_NODE_DESC:
        if (set) {
            break;
        }
        memcpy(d, s->ibp.node_desc, RNIC_SMP_DATA_LEN);
        return;
    case RNIC_SMP_ATTR_NODE_INFO:
        if (set) {
            break;
        }
        sma_node_info(s, d);
        return;
    case RNIC_SMP_ATTR_GUID_INFO:
        if (mod != 0) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "GUIDInfo block");
            return;
        }
        /* GUIDCap is 1: a Set has only the read-only entry 0 to set. */
        memset(d, 0, RNIC_SMP_DATA_LEN);
        stq_be_p(d, s->port_guid);
        return;
    case RNIC_SMP_ATTR_PORT_INFO:
        /* 0 is the port the SMP came in by; a CA has port 1 only. */
        if (mod > 1) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "PortInfo port");
            return;
        }
        if (set) {
            sma_set_port_info(s, m, d);
            if (m->status) {
                return;
            }
            memset(d, 0, RNIC_SMP_DATA_LEN);
        }
        sma_port_info(s, d, hide);
        return;
    case RNIC_SMP_ATTR_PKEY_TABLE:
        sma_pkey_table(s, m, d, set);
        return;
    case RNIC_SMP_ATTR_SL2VL_TABLE:
        sma_sl2vl(s, m, d, set);
        return;
    case RNIC_SMP_ATTR_VL_ARB_TABLE:
        sma_vlarb(s, m, d, set);
        return;
    default:
        break;
    }
    mad_fail(m, RNIC_MAD_STATUS_BAD_ATTR, set ? "Set of attribute" :
             "attribute");
}

/* ---- the performance management agent ---- */

static uint32_t pma_sat32(uint64_t v)
{
    return MIN(v, UINT32_MAX);
}

static uint64_t pma_cnt(RnicState *s, unsigned idx)
{
    return s->cnt[idx];
}

static void pma_port_counters(RnicState *s, uint8_t *d)
{
    uint64_t rcv_err = pma_cnt(s, RNIC_CNT_RX_ICRC_ERR) +
                       pma_cnt(s, RNIC_CNT_RX_DROPPED);

    stw_be_p(d + 8, MIN(rcv_err, UINT16_MAX));
    stw_be_p(d + 14, MIN(pma_cnt(s, RNIC_CNT_TX_LOSS_INJECTED), UINT16_MAX));
    /* Data counters count 32-bit words, and stop at their maximum. */
    stl_be_p(d + 24, pma_sat32(pma_cnt(s, RNIC_CNT_TX_BYTES) / 4));
    stl_be_p(d + 28, pma_sat32(pma_cnt(s, RNIC_CNT_RX_BYTES) / 4));
    stl_be_p(d + 32, pma_sat32(pma_cnt(s, RNIC_CNT_TX_PKTS)));
    stl_be_p(d + 36, pma_sat32(pma_cnt(s, RNIC_CNT_RX_PKTS)));
}

static void pma_port_counters_ext(RnicState *s, uint8_t *d)
{
    stq_be_p(d + 8, pma_cnt(s, RNIC_CNT_TX_BYTES) / 4);
    stq_be_p(d + 16, pma_cnt(s, RNIC_CNT_RX_BYTES) / 4);
    stq_be_p(d + 24, pma_cnt(s, RNIC_CNT_TX_PKTS));
    stq_be_p(d + 32, pma_cnt(s, RNIC_CNT_RX_PKTS));
}

/*
 * Get only: the counters are the device's own, which the host reads too,
 * so a PerfMgt Set (clear) is refused as an unsupported method.
 */
static void pma_handle(RnicState *s, RnicMad *m)
{
    uint16_t attr = mad_get16(m, RNIC_MAD_ATTR_ID);
    uint8_t *d = m->b + RNIC_PMA_DATA;
    uint8_t port_select = d[1];

    if (m->b[RNIC_MAD_CLASS_VERSION] != 1) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VERSION, "class version");
        return;
    }
    if (m->b[RNIC_MAD_METHOD] != RNIC_MAD_METHOD_GET) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_METHOD, "method");
        return;
    }
    switch (attr) {
    case RNIC_PMA_ATTR_CLASS_PORT_INFO:
        memset(d, 0, RNIC_MAD_SIZE - RNIC_PMA_DATA);
        d[0] = 1;
        d[1] = 1;
        stw_be_p(d + 2, RNIC_PMA_CAP_EXT_WIDTH);
        stl_be_p(d + 4, RNIC_PMA_RESP_TIME);
        return;
    case RNIC_PMA_ATTR_PORT_COUNTERS:
    case RNIC_PMA_ATTR_PORT_COUNTERS_EXT:
        if (port_select != 1) {
            mad_fail(m, RNIC_MAD_STATUS_BAD_VALUE, "PortSelect");
            return;
        }
        memset(d + 2, 0, RNIC_MAD_SIZE - RNIC_PMA_DATA - 2);
        if (attr == RNIC_PMA_ATTR_PORT_COUNTERS) {
            pma_port_counters(s, d);
        } else {
            pma_port_counters_ext(s, d);
        }
        return;
    default:
        mad_fail(m, RNIC_MAD_STATUS_BAD_ATTR, "attribute");
    }
}

/* ---- MAD_IFC ---- */

static void mad_process(RnicState *s, RnicMad *m, bool qp0, uint16_t slid)
{
    uint8_t cls = m->b[RNIC_MAD_MGMT_CLASS];
    uint8_t method = m->b[RNIC_MAD_METHOD];
    bool smp = cls == RNIC_MGMT_CLASS_SUBN_LID ||
               cls == RNIC_MGMT_CLASS_SUBN_DR;
    uint16_t st;

    trace_rnic_sma_mad(cls, method, mad_get16(m, RNIC_MAD_ATTR_ID),
                       mad_get32(m, RNIC_MAD_ATTR_MOD), slid, qp0);
    m->reply = true;
    m->status = 0;
    /* Responses and trap represses need no answer; no agent sent one. */
    if (method & RNIC_MAD_METHOD_RESP ||
        method == RNIC_MAD_METHOD_TRAP_REPRESS) {
        mad_drop(m, "response method");
        return;
    }
    if (smp && !qp0 && !m->ignore_mkey && !m->local) {
        mad_drop(m, "SMP not on QP0");
        return;
    }
    if (!smp && (qp0 || m->local)) {
        mad_drop(m, qp0 ? "GSI class on QP0" : "LOCAL MAD not an SMP");
        return;
    }
    if (m->b[RNIC_MAD_BASE_VERSION] != 1) {
        mad_fail(m, RNIC_MAD_STATUS_BAD_VERSION, "base version");
    } else if (smp) {
        sma_handle(s, m, 1);
    } else if (cls == RNIC_MGMT_CLASS_PERF) {
        pma_handle(s, m);
    } else {
        /* No agent of this class: the driver's own MAD layer answers. */
        mad_drop(m, "no agent for the class");
    }
    if (!m->reply) {
        return;
    }
    m->b[RNIC_MAD_METHOD] = RNIC_MAD_METHOD_GET | RNIC_MAD_METHOD_RESP;
    st = m->status;
    if (cls == RNIC_MGMT_CLASS_SUBN_DR) {
        st |= RNIC_SMP_DIRECTION;
    }
    stw_be_p(m->b + RNIC_MAD_STATUS, st);
}

uint8_t rnic_cmd_mad_ifc(RnicCmdCtx *c)
{
    const struct rnic_cmd_mad_ifc *a = &c->cmd->u.mad_ifc;
    RnicState *s = c->s;
    uint64_t in = le64_to_cpu(a->in_addr);
    uint64_t out = le64_to_cpu(a->out_addr);
    RnicMad m;
    uint8_t st;

    if (a->rsvd_20) {
        return rnic_cmd_err_rsvd(c, "rsvd_20");
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (a->flags & ~RNIC_MAD_IFC_FLAGS) {
        return rnic_cmd_err_param(c, "flags", a->flags, RNIC_MAD_IFC_FLAGS);
    }
    if (a->port != 1) {
        return rnic_cmd_err_handle(c, "port", a->port);
    }
    if (!s->ib) {
        return rnic_cmd_err_state(c, "port is Ethernet, not InfiniBand",
                                  a->port);
    }
    if (a->flags & RNIC_MAD_IFC_TRAP) {
        if (a->flags != RNIC_MAD_IFC_TRAP) {
            return rnic_cmd_err_param(c, "flags beside TRAP", a->flags,
                                      RNIC_MAD_IFC_TRAP);
        }
        m.reply = sma_take_trap(s, m.b);
    } else {
        if (rnic_dma_read(s, in, m.b, sizeof(m.b)) != MEMTX_OK) {
            return rnic_cmd_err_dma(c, in);
        }
        m.ignore_mkey = a->flags & RNIC_MAD_IFC_IGNORE_MKEY;
        m.local = a->flags & RNIC_MAD_IFC_LOCAL;
        m.slid = le16_to_cpu(a->slid);
        mad_process(s, &m, a->flags & RNIC_MAD_IFC_QP0, m.slid);
    }
    if (!m.reply) {
        c->out[RNIC_OUT_MAD_REPLY] = 0;
        return RNIC_CMD_OK;
    }
    if (rnic_dma_write(s, out, m.b, sizeof(m.b)) != MEMTX_OK) {
        return rnic_cmd_err_dma(c, out);
    }
    c->out[RNIC_OUT_MAD_REPLY] = 1;
    return RNIC_CMD_OK;
}
