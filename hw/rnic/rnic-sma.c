/*
 * rnic: the InfiniBand port's management agents
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * With link-layer=infiniband the device's port has the state a subnet
 * manager reads and sets: a logical state (DOWN, INIT, ARMED, ACTIVE)
 * over the netdev's link, a LID and LMC, the SM's LID and SL, a P_Key
 * table, an M_Key and the SL to VL and VL arbitration tables.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "rnic.h"
#include "trace.h"

#define RNIC_IB_PERMISSIVE_LID  0xffff
#define RNIC_IB_MCAST_LID_MIN   0xc000

/* What the SMA reports of the port's fixed capabilities. */
#define RNIC_SMA_CAP_MASK   (RNIC_PI_CAP_IS_SL_MAPPING | \
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
    for (i = 0; i < ARRAY_SIZE(p->vlarb[0]); i += 2) {
        /* Every data VL, weight 1, in both priorities' first block. */
        if (i / 2 < RNIC_SMA_VLARB_CAP) {
            p->vlarb[0][i] = (i / 2) % (RNIC_SMA_VL_CAP + 1);
            p->vlarb[0][i + 1] = 1;
        }
    }
    memcpy(p->vlarb[2], p->vlarb[0], sizeof(p->vlarb[2]));
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
    a->port_cap_flags = cpu_to_le32(RNIC_SMA_CAP_MASK);
    a->pkey_tbl_len = cpu_to_le16(RNIC_PKEY_BLOCK);
    a->port_guid = cpu_to_le64(s->port_guid);
}
