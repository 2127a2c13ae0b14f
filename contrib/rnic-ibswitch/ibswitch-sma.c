/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic-ibswitch: the switch's subnet management agent and the
 * directed-route rules
 *
 * What an SM finds at port 0 of a real switch: NodeInfo, NodeDescription,
 * SwitchInfo, GUIDInfo, PortInfo of every port, P_KeyTable, SL-to-VL and
 * VL arbitration tables, and the linear and multicast forwarding tables
 * it programs.  Directed-route SMPs pass through the switch hop by hop as
 * IBA 14.2.2 describes: outbound, the switch records the port an SMP came
 * in on in its return path and sends it out of the port its initial path
 * names; inbound, it follows the return path back.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rnic-ib.h"
#include "rnic-smp.h"
#include "rnic-wire.h"
#include "ibswitch.h"

#define ETH_HLEN        14
#define BTH_LEN         12
#define DETH_LEN        8
/* Where the MAD starts in a frame: SMPs never carry a GRH. */
#define MAD_OFF         (ETH_HLEN + RNIC_LRH_LEN + BTH_LEN + DETH_LEN)
#define SMP_FRAME_LEN   (MAD_OFF + RNIC_MAD_LEN + 4 + RNIC_VCRC_LEN)

/* What this switch reports of its links: 4x QDR, MTU 4096, VL0 only. */
#define SW_WIDTH_SUPPORTED  0x03    /* 1x, 4x */
#define SW_WIDTH_ACTIVE     0x02    /* 4x */
#define SW_SPEED_SUPPORTED  0x07    /* 2.5, 5, 10 Gb/s */
#define SW_SPEED_ACTIVE     0x04    /* 10 Gb/s */
#define SW_MTU_CAP          5       /* 4096 */
#define SW_VL_CAP           1       /* VL0 */
#define SW_VLARB_CAP        8
#define SW_PKEY_BLOCKS      1
#define SW_DEVICE_ID        0x0001
#define SW_PARTITION_CAP    (SW_PKEY_BLOCKS * RNIC_PKEY_BLOCK)
/*
 * Port 0 CapabilityMask: IsTrapSupported, IsSLMappingSupported and
 * IsSystemImageGUIDSupported.  Switch external ports report none.
 */
#define SW_CAP_MASK         (RNIC_PI_CAP_IS_TRAP | RNIC_PI_CAP_IS_SL_MAPPING | \
                             RNIC_PI_CAP_IS_SYS_IMAGE_GUID)

/* ---- attributes ---- */

static void get_node_info(IbSwitch *sw, unsigned in_port, uint8_t *d)
{
    d[RNIC_NI_BASE_VERSION] = 1;
    d[RNIC_NI_CLASS_VERSION] = 1;
    d[RNIC_NI_NODE_TYPE] = RNIC_NODE_TYPE_SWITCH;
    d[RNIC_NI_NUM_PORTS] = sw->cfg.nports;
    rnic_st64be(d + RNIC_NI_SYS_GUID, sw->cfg.guid);
    rnic_st64be(d + RNIC_NI_NODE_GUID, sw->cfg.guid);
    /* A switch has one port GUID, its management port's. */
    rnic_st64be(d + RNIC_NI_PORT_GUID, sw->cfg.guid);
    rnic_st16be(d + RNIC_NI_PARTITION_CAP, SW_PARTITION_CAP);
    rnic_st16be(d + RNIC_NI_DEVICE_ID, SW_DEVICE_ID);
    rnic_st32be(d + RNIC_NI_REVISION, 1);
    d[RNIC_NI_LOCAL_PORT] = in_port;
}

static void get_switch_info(IbSwitch *sw, uint8_t *d)
{
    rnic_st16be(d + RNIC_SI_LFT_CAP, IBSW_LFT_CAP);
    rnic_st16be(d + RNIC_SI_MFT_CAP, IBSW_MFT_CAP);
    rnic_st16be(d + RNIC_SI_LFT_TOP, sw->lft_top);
    d[RNIC_SI_DEFAULT_PORT] = sw->default_port;
    d[RNIC_SI_DEF_MCAST_PRI] = IBSW_PORT_NONE;
    d[RNIC_SI_DEF_MCAST_NOT_PRI] = IBSW_PORT_NONE;
    d[RNIC_SI_LIFE_PSC] = (sw->life_time & 0x1f) << 3 |
                          (sw->port_state_change ? 0x04 : 0);
    rnic_st16be(d + RNIC_SI_LIDS_PER_PORT, 1);
    rnic_st16be(d + RNIC_SI_PART_ENF_CAP, 0);
    rnic_st16be(d + RNIC_SI_MFT_TOP, sw->mft_top);
}

static int set_switch_info(IbSwitch *sw, const uint8_t *d)
{
    uint16_t lft_top = rnic_ld16be(d + RNIC_SI_LFT_TOP);

    if (lft_top >= IBSW_LFT_CAP) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    sw->lft_top = lft_top;
    /* Stored for the SM to read back; forwarding does not use it. */
    sw->mft_top = rnic_ld16be(d + RNIC_SI_MFT_TOP);
    sw->default_port = d[RNIC_SI_DEFAULT_PORT];
    sw->life_time = d[RNIC_SI_LIFE_PSC] >> 3;
    /* PortStateChange is cleared by writing one to it. */
    if (d[RNIC_SI_LIFE_PSC] & 0x04) {
        sw->port_state_change = false;
    }
    return 0;
}

/*
 * LocalPortNum is the port the SMP came in by, whichever port it asks
 * about: an SM walking the fabric compares the two to tell the port that
 * leads back to itself from the ones to probe further.
 */
static void get_port_info(IbSwitch *sw, unsigned in_port, unsigned port,
                          uint8_t *d)
{
    const IbswPort *p = &sw->port[port];
    const IbswPort *mgmt = &sw->port[0];

    if (port == 0) {
        rnic_st64be(d + RNIC_PI_MKEY, mgmt->m_key);
        rnic_st64be(d + RNIC_PI_GID_PREFIX, mgmt->subnet_prefix);
        rnic_st32be(d + RNIC_PI_CAP_MASK, SW_CAP_MASK);
        rnic_st16be(d + RNIC_PI_LID, mgmt->lid);
        rnic_st16be(d + RNIC_PI_SM_LID, mgmt->sm_lid);
        rnic_st16be(d + RNIC_PI_MKEY_LEASE, mgmt->m_key_lease);
        d[RNIC_PI_MKEYPROT_LMC] = (mgmt->m_key_protect & 3) << 6 |
                                  (mgmt->lmc & 7);
        d[RNIC_PI_NMTU_SMSL] = mgmt->sm_sl & 0xf;
        d[RNIC_PI_GUID_CAP] = 1;
        d[RNIC_PI_REREG_TIMEOUT] = mgmt->subnet_timeout & 0x1f;
        d[RNIC_PI_RESP_TIME] = 16;
    }
    d[RNIC_PI_LOCAL_PORT] = in_port;
    d[RNIC_PI_WIDTH_ENABLED] = p->link_width_enabled;
    d[RNIC_PI_WIDTH_SUPPORTED] = SW_WIDTH_SUPPORTED;
    d[RNIC_PI_WIDTH_ACTIVE] = SW_WIDTH_ACTIVE;
    d[RNIC_PI_SPEED_SUP_STATE] = SW_SPEED_SUPPORTED << 4 | (p->state & 0xf);
    d[RNIC_PI_PHYS_DOWNDEF] = p->phys << 4 | (p->link_down_default & 0xf);
    d[RNIC_PI_SPEED_ACT_EN] = SW_SPEED_ACTIVE << 4 |
                              (p->link_speed_enabled & 0xf);
    if (port) {
        d[RNIC_PI_NMTU_SMSL] = (p->neighbor_mtu & 0xf) << 4;
    }
    d[RNIC_PI_VLCAP_INIT] = SW_VL_CAP << 4 | (p->init_type & 0xf);
    d[RNIC_PI_VL_HIGH_LIMIT] = p->vl_high_limit;
    d[RNIC_PI_VLARB_HIGH_CAP] = SW_VLARB_CAP;
    d[RNIC_PI_VLARB_LOW_CAP] = SW_VLARB_CAP;
    d[RNIC_PI_INITREPLY_MTUCAP] = SW_MTU_CAP;
    d[RNIC_PI_STALL_HOQ] = (p->vl_stall & 7) << 5 | (p->hoq_life & 0x1f);
    d[RNIC_PI_OPVLS_ENF] = (p->op_vls & 0xf) << 4;
    d[RNIC_PI_ERR_THRESHOLDS] = (p->local_phy_errors & 0xf) << 4 |
                                (p->overrun_errors & 0xf);
}

/* The PortState transitions an SM may ask for (IBA 7.2). */
static bool port_state_ok(uint8_t cur, uint8_t want)
{
    if (want == cur) {
        return true;                /* written back as read: no change */
    }
    switch (want) {
    case IBSW_PS_NOP:
    case IBSW_PS_DOWN:
        return true;
    case IBSW_PS_ARMED:
        return cur == IBSW_PS_INIT || cur == IBSW_PS_ARMED;
    case IBSW_PS_ACTIVE:
        return cur == IBSW_PS_ARMED || cur == IBSW_PS_ACTIVE;
    default:
        return false;
    }
}

static int set_port_info(IbSwitch *sw, unsigned port, const uint8_t *d)
{
    IbswPort *p = &sw->port[port];
    uint8_t want = d[RNIC_PI_SPEED_SUP_STATE] & 0xf;
    uint8_t phys = d[RNIC_PI_PHYS_DOWNDEF] >> 4;
    uint8_t mtu = d[RNIC_PI_NMTU_SMSL] >> 4;
    uint8_t op_vls = d[RNIC_PI_OPVLS_ENF] >> 4;

    /* An SM that writes back what it read means "no change". */
    if (phys == p->phys || phys == IBSW_PHYS_LINKUP) {
        phys = 0;
    }

    /* Base port 0 is always ACTIVE: a state written to it changes nothing. */
    if (port == 0) {
        want = IBSW_PS_NOP;
        phys = 0;
    }
    /* Check everything before changing anything. */
    if (!port_state_ok(p->state, want) ||
        (phys && phys != IBSW_PHYS_POLLING && phys != IBSW_PHYS_DISABLED) ||
        (port && (mtu < 1 || mtu > SW_MTU_CAP)) ||
        op_vls > SW_VL_CAP) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    if (port == 0) {
        p->m_key = rnic_ld64be(d + RNIC_PI_MKEY);
        p->subnet_prefix = rnic_ld64be(d + RNIC_PI_GID_PREFIX);
        p->lid = rnic_ld16be(d + RNIC_PI_LID);
        p->sm_lid = rnic_ld16be(d + RNIC_PI_SM_LID);
        p->m_key_lease = rnic_ld16be(d + RNIC_PI_MKEY_LEASE);
        p->m_key_protect = d[RNIC_PI_MKEYPROT_LMC] >> 6;
        p->lmc = d[RNIC_PI_MKEYPROT_LMC] & 7;
        p->sm_sl = d[RNIC_PI_NMTU_SMSL] & 0xf;
        p->subnet_timeout = d[RNIC_PI_REREG_TIMEOUT] & 0x1f;
    } else {
        p->neighbor_mtu = mtu;
    }
    if (d[RNIC_PI_WIDTH_ENABLED]) {
        p->link_width_enabled = d[RNIC_PI_WIDTH_ENABLED] == 0xff ?
                                SW_WIDTH_SUPPORTED : d[RNIC_PI_WIDTH_ENABLED];
    }
    if (d[RNIC_PI_SPEED_ACT_EN] & 0xf) {
        p->link_speed_enabled = (d[RNIC_PI_SPEED_ACT_EN] & 0xf) == 0xf ?
                                SW_SPEED_SUPPORTED :
                                d[RNIC_PI_SPEED_ACT_EN] & 0xf;
    }
    if (d[RNIC_PI_PHYS_DOWNDEF] & 0xf) {
        p->link_down_default = d[RNIC_PI_PHYS_DOWNDEF] & 0xf;
    }
    p->init_type = d[RNIC_PI_VLCAP_INIT] & 0xf;
    p->vl_high_limit = d[RNIC_PI_VL_HIGH_LIMIT];
    p->vl_stall = d[RNIC_PI_STALL_HOQ] >> 5;
    p->hoq_life = d[RNIC_PI_STALL_HOQ] & 0x1f;
    if (op_vls) {
        p->op_vls = op_vls;
    }
    p->local_phy_errors = d[RNIC_PI_ERR_THRESHOLDS] >> 4;
    p->overrun_errors = d[RNIC_PI_ERR_THRESHOLDS] & 0xf;

    if (port && phys == IBSW_PHYS_DISABLED) {
        p->phys = IBSW_PHYS_DISABLED;
        p->state = IBSW_PS_DOWN;
    } else if (port && phys == IBSW_PHYS_POLLING &&
               p->phys == IBSW_PHYS_DISABLED) {
        p->phys = p->linked ? IBSW_PHYS_LINKUP : IBSW_PHYS_POLLING;
        p->state = p->linked ? IBSW_PS_INIT : IBSW_PS_DOWN;
    } else if (want == IBSW_PS_DOWN) {
        /* The link retrains: back to INIT if a peer is there. */
        p->state = (!port || p->linked) ? IBSW_PS_INIT : IBSW_PS_DOWN;
    } else if (want != IBSW_PS_NOP && (port == 0 || p->linked)) {
        p->state = want;
    }
    return 0;
}

static int pkey_table(IbSwitch *sw, uint32_t mod, uint8_t *d, bool set)
{
    unsigned port = mod >> 16, block = mod & 0xffff, i;

    if (port > sw->cfg.nports || block >= SW_PKEY_BLOCKS) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    for (i = 0; i < RNIC_PKEY_BLOCK; i++) {
        if (set) {
            sw->port[port].pkeys[i] = rnic_ld16be(d + 2 * i);
        }
        rnic_st16be(d + 2 * i, sw->port[port].pkeys[i]);
    }
    return 0;
}

static int sl2vl_table(IbSwitch *sw, uint32_t mod, uint8_t *d, bool set)
{
    /*
     * One table per output port: VL0 only leaves nothing to vary by
     * input port.  Bit 16 of the modifier means every output port.
     */
    unsigned out = mod & 0xff, i;

    if (out > sw->cfg.nports || ((mod >> 8) & 0xff) > sw->cfg.nports) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    if (set) {
        for (i = 0; i <= sw->cfg.nports; i++) {
            if (i == out || (mod & RNIC_SL2VL_ALL_OUT)) {
                memcpy(sw->port[i].sl2vl, d, 8);
            }
        }
    }
    memcpy(d, sw->port[out].sl2vl, 8);
    return 0;
}

static int vlarb_table(IbSwitch *sw, uint32_t mod, uint8_t *d, bool set)
{
    unsigned block = mod >> 16, port = mod & 0xffff;

    if (block < 1 || block > 4 || port > sw->cfg.nports) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    if (set) {
        memcpy(sw->port[port].vlarb[block - 1], d, 64);
    }
    memcpy(d, sw->port[port].vlarb[block - 1], 64);
    return 0;
}

static int lft_block(IbSwitch *sw, uint32_t mod, uint8_t *d, bool set)
{
    unsigned base = mod * RNIC_LFT_BLOCK, i;

    if (mod >= IBSW_LFT_CAP / RNIC_LFT_BLOCK) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    if (set) {
        for (i = 0; i < RNIC_LFT_BLOCK; i++) {
            /* A port that does not exist forwards nowhere. */
            sw->lft[base + i] = d[i] <= sw->cfg.nports ? d[i]
                                                        : IBSW_PORT_NONE;
        }
    }
    memcpy(d, sw->lft + base, RNIC_LFT_BLOCK);
    return 0;
}

static int mft_block(IbSwitch *sw, uint32_t mod, uint8_t *d, bool set)
{
    unsigned pos = mod >> 28, block = mod & 0x1ff, i;
    unsigned shift = pos * RNIC_MFT_POSITION_PORTS;
    uint64_t keep = ~(0xffffull << shift);

    if (block >= IBSW_MFT_CAP / RNIC_MFT_BLOCK ||
        shift > sw->cfg.nports) {
        return RNIC_MAD_STATUS_BAD_VALUE;
    }
    for (i = 0; i < RNIC_MFT_BLOCK; i++) {
        uint64_t *m = &sw->mft[block * RNIC_MFT_BLOCK + i];

        if (set) {
            uint64_t ports = (uint64_t)rnic_ld16be(d + 2 * i) << shift;

            /* Only ports that exist; port 0 may be a member. */
            ports &= (2ull << sw->cfg.nports) - 1;
            *m = (*m & keep) | ports;
        }
        rnic_st16be(d + 2 * i, *m >> shift);
    }
    return 0;
}

/* Answer one SMP for the SMA in place; returns the MAD status. */
static uint16_t sma_process(IbSwitch *sw, unsigned in_port, uint8_t *mad)
{
    uint8_t method = mad[RNIC_MAD_METHOD];
    uint16_t attr = rnic_ld16be(mad + RNIC_MAD_ATTR_ID);
    uint32_t mod = rnic_ld32be(mad + RNIC_MAD_ATTR_MOD);
    uint8_t *d = mad + RNIC_SMP_DATA;
    bool set = method == RNIC_MAD_METHOD_SET;
    uint8_t req[RNIC_SMP_DATA_LEN];
    int st = 0;

    if (mad[RNIC_MAD_BASE_VERSION] != 1 || mad[RNIC_MAD_CLASS_VERSION] != 1) {
        return RNIC_MAD_STATUS_BAD_VERSION;
    }
    if (method != RNIC_MAD_METHOD_GET && !set) {
        return RNIC_MAD_STATUS_BAD_METHOD;
    }
    set ? sw->sma_sets++ : sw->sma_gets++;
    memcpy(req, d, sizeof(req));
    if (!set) {
        memset(d, 0, RNIC_SMP_DATA_LEN);
    }

    switch (attr) {
    case RNIC_SMP_ATTR_NODE_DESC:
        if (set) {
            return RNIC_MAD_STATUS_BAD_ATTR;
        }
        memcpy(d, sw->cfg.desc, strnlen(sw->cfg.desc, sizeof(sw->cfg.desc)));
        break;
    case RNIC_SMP_ATTR_NODE_INFO:
        if (set) {
            return RNIC_MAD_STATUS_BAD_ATTR;
        }
        get_node_info(sw, in_port, d);
        break;
    case RNIC_SMP_ATTR_SWITCH_INFO:
        st = set ? set_switch_info(sw, req) : 0;
        if (st) {
            break;
        }
        memset(d, 0, RNIC_SMP_DATA_LEN);
        get_switch_info(sw, d);
        break;
    case RNIC_SMP_ATTR_GUID_INFO:
        if (set || mod != 0) {
            return set ? RNIC_MAD_STATUS_BAD_ATTR : RNIC_MAD_STATUS_BAD_VALUE;
        }
        rnic_st64be(d, sw->cfg.guid);
        break;
    case RNIC_SMP_ATTR_PORT_INFO:
        /* Bit 31 asks for extended speeds, which this switch has not. */
        mod &= 0x7fffffff;
        if (mod > sw->cfg.nports) {
            st = RNIC_MAD_STATUS_BAD_VALUE;
            break;
        }
        st = set ? set_port_info(sw, mod, req) : 0;
        if (st) {
            break;
        }
        memset(d, 0, RNIC_SMP_DATA_LEN);
        get_port_info(sw, in_port, mod, d);
        break;
    case RNIC_SMP_ATTR_PKEY_TABLE:
        st = pkey_table(sw, mod, d, set);
        break;
    case RNIC_SMP_ATTR_SL2VL_TABLE:
        st = sl2vl_table(sw, mod, d, set);
        break;
    case RNIC_SMP_ATTR_VL_ARB_TABLE:
        st = vlarb_table(sw, mod, d, set);
        break;
    case RNIC_SMP_ATTR_LFT:
        st = lft_block(sw, mod, d, set);
        break;
    case RNIC_SMP_ATTR_MFT:
        st = mft_block(sw, mod, d, set);
        break;
    default:
        st = RNIC_MAD_STATUS_BAD_ATTR;
        break;
    }
    return st;
}

/* ---- packets ---- */

/* Reseal an SMP frame after the MAD changed: ICRC and VCRC. */
static void smp_reseal(IbswFrame *f)
{
    f->len = ETH_HLEN +
             rnic_ib_seal(f->data + ETH_HLEN,
                          RNIC_LRH_LEN + BTH_LEN + DETH_LEN + RNIC_MAD_LEN,
                          sizeof(f->data) - ETH_HLEN);
}

/* The frame header of packets the switch makes itself. */
static void frame_header(const IbSwitch *sw, uint8_t *frame)
{
    memset(frame, 0xff, 6);
    memcpy(frame + 6, sw->mac, 6);
    frame[12] = RNIC_ETHERTYPE_IB >> 8;
    frame[13] = RNIC_ETHERTYPE_IB & 0xff;
}

/* A fresh SMP frame: LRH (VL15), BTH (UD SEND_ONLY to QP0), DETH. */
static uint8_t *smp_frame(const IbSwitch *sw, IbswFrame *f, uint16_t dlid,
                          uint16_t slid)
{
    RnicLrh lrh = {
        .vl = RNIC_VL_SMP, .lnh = RNIC_LNH_IBA_LOCAL,
        .dlid = dlid, .slid = slid,
    };
    uint8_t *bth = f->data + ETH_HLEN + RNIC_LRH_LEN;

    memset(f->data, 0, SMP_FRAME_LEN);
    frame_header(sw, f->data);
    rnic_lrh_build(&lrh, f->data + ETH_HLEN);
    bth[0] = 0x64;                  /* UD SEND_ONLY */
    rnic_st16be(bth + 2, 0xffff);          /* default P_Key */
    return f->data + MAD_OFF;
}

static bool port_usable(const IbSwitch *sw, unsigned port)
{
    return port >= 1 && port <= sw->cfg.nports && sw->port[port].linked &&
           sw->port[port].phys == IBSW_PHYS_LINKUP;
}

/*
 * M_Key: a Set with the wrong key, or a Get when protection says so,
 * is not answered (IBA 14.2.4).  Trap 256 is not sent: see the docs.
 */
static bool mkey_ok(const IbSwitch *sw, const uint8_t *mad)
{
    const IbswPort *mgmt = &sw->port[0];

    if (!mgmt->m_key || rnic_ld64be(mad + RNIC_SMP_MKEY) == mgmt->m_key) {
        return true;
    }
    return mad[RNIC_MAD_METHOD] == RNIC_MAD_METHOD_GET &&
           mgmt->m_key_protect < 2;
}

/* Turn the request in F into the SMA's answer; false: no answer. */
static bool sma_answer(IbSwitch *sw, unsigned in_port, uint8_t *mad)
{
    uint16_t st;

    if (mad[RNIC_MAD_METHOD] == RNIC_MAD_METHOD_TRAP_REPRESS) {
        return false;               /* traps are sent once; nothing to stop */
    }
    if (!mkey_ok(sw, mad)) {
        sw->sma_errors++;
        return false;
    }
    st = sma_process(sw, in_port, mad);
    if (st) {
        sw->sma_errors++;
    }
    mad[RNIC_MAD_METHOD] = RNIC_MAD_METHOD_RESP | RNIC_MAD_METHOD_GET;
    rnic_st16be(mad + RNIC_MAD_STATUS,
         (rnic_ld16be(mad + RNIC_MAD_STATUS) & RNIC_SMP_DIRECTION) | st);
    return true;
}

static uint64_t smp_dr(IbSwitch *sw, unsigned in_port, IbswFrame *f)
{
    uint8_t *mad = f->data + MAD_OFF;
    uint8_t *lrh = f->data + ETH_HLEN;
    uint8_t hp = mad[RNIC_MAD_HOP_PTR], hc = mad[RNIC_MAD_HOP_CNT];
    bool back = rnic_ld16be(mad + RNIC_MAD_STATUS) & RNIC_SMP_DIRECTION;
    unsigned out;

    if (hc == 0 || hc > RNIC_SMP_MAX_HOPS) {
        return 0;                   /* zero hops never leave the SM's node */
    }
    if (!back) {
        if (hp == 0 || hp > hc) {
            return 0;
        }
        mad[RNIC_SMP_RETURN_PATH + hp] = in_port;
        if (hp < hc) {
            /* An intermediate hop: on along the initial path. */
            out = mad[RNIC_SMP_INITIAL_PATH + hp + 1];
            mad[RNIC_MAD_HOP_PTR] = hp + 1;
        } else {
            /* The end of the path: this switch is the destination. */
            if (rnic_ld16be(mad + RNIC_SMP_DR_DLID) != RNIC_LID_PERMISSIVE) {
                return 0;           /* DR then LID-routed: not modelled */
            }
            mad[RNIC_MAD_HOP_PTR] = hp + 1;
            if (!sma_answer(sw, in_port, mad)) {
                return 0;
            }
            rnic_st16be(mad + RNIC_MAD_STATUS,
                 rnic_ld16be(mad + RNIC_MAD_STATUS) | RNIC_SMP_DIRECTION);
            mad[RNIC_MAD_HOP_PTR] = hc;
            out = mad[RNIC_SMP_RETURN_PATH + hc];
            /* Answers leave with this switch's LID, if it has one. */
            lrh[6] = sw->port[0].lid ? sw->port[0].lid >> 8 : 0xff;
            lrh[7] = sw->port[0].lid ? sw->port[0].lid & 0xff : 0xff;
        }
    } else {
        if (hp < 2 || hp > hc) {
            return 0;               /* an SM on this switch, or nonsense */
        }
        out = mad[RNIC_SMP_RETURN_PATH + hp - 1];
        mad[RNIC_MAD_HOP_PTR] = hp - 1;
    }
    if (!port_usable(sw, out)) {
        return 0;
    }
    smp_reseal(f);
    return 1ull << out;
}

static uint64_t smp_lid_routed(IbSwitch *sw, unsigned in_port, IbswFrame *f)
{
    uint8_t *lrh = f->data + ETH_HLEN;
    uint8_t *mad = f->data + MAD_OFF;
    RnicLrh l;
    unsigned out;

    rnic_lrh_parse(lrh, &l);
    out = ibsw_route_ucast(sw, l.dlid);
    if (out != 0) {
        /* Passing through: SMPs may cross ports that are not ACTIVE. */
        if (out == IBSW_PORT_NONE || out == in_port || !port_usable(sw, out)) {
            return 0;
        }
        return 1ull << out;
    }
    if (mad[RNIC_MAD_MGMT_CLASS] != RNIC_MGMT_CLASS_SUBN_LID ||
        (mad[RNIC_MAD_METHOD] & RNIC_MAD_METHOD_RESP) ||
        !sma_answer(sw, in_port, mad)) {
        return 0;
    }
    l.dlid = l.slid;
    l.slid = sw->port[0].lid;
    rnic_lrh_build(&l, lrh);
    out = ibsw_route_ucast(sw, l.dlid);
    if (out == 0 || out == IBSW_PORT_NONE) {
        out = in_port;              /* no route back yet: where it came from */
    }
    if (!port_usable(sw, out)) {
        return 0;
    }
    smp_reseal(f);
    return 1ull << out;
}

uint64_t ibsw_smp(IbSwitch *sw, unsigned in_port, IbswFrame *f)
{
    const uint8_t *lrh = f->data + ETH_HLEN;

    if ((lrh[1] & 3) != RNIC_LNH_IBA_LOCAL || f->len != SMP_FRAME_LEN) {
        return 0;                   /* SMPs have no GRH, and one size */
    }
    if (f->data[MAD_OFF + RNIC_MAD_MGMT_CLASS] == RNIC_MGMT_CLASS_SUBN_DR) {
        return smp_dr(sw, in_port, f);
    }
    return smp_lid_routed(sw, in_port, f);
}

uint64_t ibsw_trap_port_change(IbSwitch *sw, IbswFrame *f)
{
    const IbswPort *mgmt = &sw->port[0];
    uint8_t *mad, *n;
    unsigned out;

    if (!mgmt->lid || !mgmt->sm_lid) {
        return 0;
    }
    out = ibsw_route_ucast(sw, mgmt->sm_lid);
    if (out == 0 || !port_usable(sw, out)) {
        return 0;
    }
    mad = smp_frame(sw, f, mgmt->sm_lid, mgmt->lid);
    mad[RNIC_MAD_BASE_VERSION] = 1;
    mad[RNIC_MAD_MGMT_CLASS] = RNIC_MGMT_CLASS_SUBN_LID;
    mad[RNIC_MAD_CLASS_VERSION] = 1;
    mad[RNIC_MAD_METHOD] = RNIC_MAD_METHOD_TRAP;
    /* "rap" and a count: a transaction ID the SM will not see twice. */
    rnic_st64be(mad + RNIC_MAD_TID,
                0x7261700000000000ull | (sw->traps_sent + 1));
    rnic_st16be(mad + RNIC_MAD_ATTR_ID, RNIC_SMP_ATTR_NOTICE);
    n = mad + RNIC_SMP_DATA;
    n[RNIC_NOTICE_GENERIC_TYPE] = 0x80 | 1;     /* generic, urgent */
    n[RNIC_NOTICE_PRODUCER] = 0;
    rnic_st16be(n + RNIC_NOTICE_PRODUCER + 1, RNIC_NODE_TYPE_SWITCH);
    rnic_st16be(n + RNIC_NOTICE_TRAP_NUM, RNIC_TRAP_LINK_STATE_CHANGE);
    rnic_st16be(n + RNIC_NOTICE_ISSUER_LID, mgmt->lid);
    rnic_st16be(n + RNIC_NOTICE_DETAILS, mgmt->lid);
    smp_reseal(f);
    return 1ull << out;
}
