/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic-ibswitch: forwarding, credits and port state (see ibswitch.h)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rnic-ib.h"
#include "ibswitch.h"

#define ETH_HLEN        14

static const char *const drop_names[IBSW_DROP__MAX] = {
    [IBSW_DROP_MALFORMED] = "malformed",
    [IBSW_DROP_PORT_STATE] = "in-port-not-active",
    [IBSW_DROP_UNKNOWN_DLID] = "unknown-dlid",
    [IBSW_DROP_OUT_STATE] = "out-port-not-active",
    [IBSW_DROP_LOOP] = "loop",
    [IBSW_DROP_SMP] = "smp-refused",
    [IBSW_DROP_NO_AGENT] = "no-agent",
};

const char *ibsw_drop_str(IbswDrop d)
{
    return d < IBSW_DROP__MAX ? drop_names[d] : "unknown";
}

static void port_defaults(IbswPort *p, unsigned num)
{
    unsigned i;

    /* Port 0 of a base switch has no link: it is always up and ACTIVE. */
    p->state = num ? IBSW_PS_DOWN : IBSW_PS_ACTIVE;
    p->phys = num ? IBSW_PHYS_POLLING : IBSW_PHYS_LINKUP;
    p->neighbor_mtu = 5;                /* 4096 */
    p->op_vls = 1;                      /* VL0 */
    p->m_key_lease = 15;
    p->hoq_life = 16;
    p->vl_stall = 7;
    p->link_down_default = 2;           /* Polling */
    p->link_width_enabled = 0xff;       /* "set to supported" */
    p->link_speed_enabled = 0xf;
    p->subnet_timeout = 18;
    /* Default partition, full membership, as a new port has. */
    p->pkeys[0] = 0xffff;
    for (i = 0; i < 4; i++) {
        memset(p->vlarb[i], 0, sizeof(p->vlarb[i]));
    }
}

int ibsw_init(IbSwitch *sw, const IbswConfig *cfg)
{
    unsigned i;

    if (cfg->nports < 1 || cfg->nports > IBSW_MAX_PORTS ||
        cfg->credits < 1 || cfg->credits > IBSW_CREDITS_MAX) {
        return -1;
    }
    memset(sw, 0, sizeof(*sw));
    sw->cfg = *cfg;
    /* A locally administered MAC from the GUID's low bytes. */
    sw->mac[0] = 0x02;
    for (i = 1; i < 6; i++) {
        sw->mac[i] = cfg->guid >> (8 * (5 - i));
    }
    memset(sw->lft, IBSW_PORT_NONE, sizeof(sw->lft));
    sw->default_port = IBSW_PORT_NONE;
    sw->life_time = 18;
    for (i = 0; i <= cfg->nports; i++) {
        IbswPort *p = &sw->port[i];

        port_defaults(p, i);
        if (i) {
            p->q = calloc(cfg->credits, sizeof(*p->q));
            if (!p->q) {
                ibsw_cleanup(sw);
                return -1;
            }
        }
    }
    return 0;
}

void ibsw_cleanup(IbSwitch *sw)
{
    unsigned i, j;

    for (i = 1; i <= sw->cfg.nports; i++) {
        IbswPort *p = &sw->port[i];

        for (j = 0; p->q && j < p->q_len; j++) {
            free(p->q[(p->q_head + j) % sw->cfg.credits]);
        }
        free(p->q);
        free(p->held);
        p->q = NULL;
        p->held = NULL;
    }
}

static bool has_room(const IbSwitch *sw, uint64_t mask)
{
    unsigned i;

    for (i = 1; i <= sw->cfg.nports; i++) {
        if ((mask >> i & 1) && sw->port[i].q_len >= sw->cfg.credits) {
            return false;
        }
    }
    return true;
}

static bool enqueue(IbSwitch *sw, unsigned port, const IbswFrame *f)
{
    IbswPort *p = &sw->port[port];
    IbswFrame *c = malloc(offsetof(IbswFrame, data) + f->len);

    if (!c) {
        return false;
    }
    c->len = f->len;
    memcpy(c->data, f->data, f->len);
    p->q[(p->q_head + p->q_len) % sw->cfg.credits] = c;
    p->q_len++;
    return true;
}

/* Send F to every port in MASK, or hold it at IN_PORT until there is room. */
static IbswResult deliver(IbSwitch *sw, unsigned in_port, const IbswFrame *f,
                          uint64_t mask)
{
    IbswPort *in = &sw->port[in_port];
    unsigned i;

    if (!has_room(sw, mask)) {
        in->held = malloc(sizeof(*in->held));
        if (!in->held) {
            return IBSW_TAKEN;
        }
        in->held->len = f->len;
        memcpy(in->held->data, f->data, f->len);
        in->held_mask = mask;
        in->c.held++;
        return IBSW_HELD;
    }
    for (i = 1; i <= sw->cfg.nports; i++) {
        if (mask >> i & 1) {
            enqueue(sw, i, f);
        }
    }
    return IBSW_TAKEN;
}

static IbswResult drop(IbSwitch *sw, unsigned port, IbswDrop why)
{
    sw->port[port].c.drops[why]++;
    return IBSW_TAKEN;
}

unsigned ibsw_route_ucast(const IbSwitch *sw, uint16_t dlid)
{
    const IbswPort *mgmt = &sw->port[0];
    uint16_t base = mgmt->lid & ~((1u << mgmt->lmc) - 1);

    if (mgmt->lid && (dlid & ~((1u << mgmt->lmc) - 1)) == base) {
        return 0;
    }
    if (dlid == RNIC_LID_RESERVED || dlid > RNIC_LID_UCAST_MAX ||
        dlid > sw->lft_top) {
        return sw->default_port;
    }
    return sw->lft[dlid] != IBSW_PORT_NONE ? sw->lft[dlid] : sw->default_port;
}

/* A data packet: forward by the LFT or the MFT. */
static IbswResult forward_data(IbSwitch *sw, unsigned in_port,
                               const RnicLrh *lrh)
{
    IbswPort *in = &sw->port[in_port];
    uint64_t mask;
    unsigned out, i;

    if (in->state != IBSW_PS_ARMED && in->state != IBSW_PS_ACTIVE) {
        return drop(sw, in_port, IBSW_DROP_PORT_STATE);
    }
    /* An ARMED port goes ACTIVE on its first data packet (IBA 7.2). */
    if (in->state == IBSW_PS_ARMED) {
        in->state = IBSW_PS_ACTIVE;
        sw->port_state_change = true;
    }
    if (rnic_lid_is_mcast(lrh->dlid)) {
        unsigned idx = lrh->dlid - RNIC_LID_MCAST_MIN;

        /*
         * MulticastFDBTop is kept for the SM but not enforced: port 0
         * does not claim IsMulticastFDBTopSupported, so every entry the
         * SM wrote counts.
         */
        if (idx >= IBSW_MFT_CAP) {
            return drop(sw, in_port, IBSW_DROP_UNKNOWN_DLID);
        }
        /* Never back out of the port it came in on. */
        mask = sw->mft[idx] & ~(1ull << in_port) & ~1ull;
        for (i = 1; i <= sw->cfg.nports; i++) {
            if ((mask >> i & 1) && sw->port[i].state != IBSW_PS_ACTIVE) {
                mask &= ~(1ull << i);
            }
        }
        if (!mask) {
            return drop(sw, in_port, IBSW_DROP_UNKNOWN_DLID);
        }
        return deliver(sw, in_port, &sw->scratch, mask);
    }
    out = ibsw_route_ucast(sw, lrh->dlid);
    if (out == 0) {
        /* The switch has no GSI agent (PMA, SA clients) of its own yet. */
        return drop(sw, in_port, IBSW_DROP_NO_AGENT);
    }
    if (out == IBSW_PORT_NONE || out > sw->cfg.nports) {
        return drop(sw, in_port, IBSW_DROP_UNKNOWN_DLID);
    }
    if (out == in_port) {
        return drop(sw, in_port, IBSW_DROP_LOOP);
    }
    if (sw->port[out].state != IBSW_PS_ACTIVE) {
        return drop(sw, in_port, IBSW_DROP_OUT_STATE);
    }
    return deliver(sw, in_port, &sw->scratch, 1ull << out);
}

IbswResult ibsw_input(IbSwitch *sw, unsigned port, const uint8_t *frame,
                      size_t len)
{
    IbswPort *in;
    RnicLrh lrh;
    const uint8_t *pkt;
    size_t pkt_len;
    uint64_t mask;

    if (port < 1 || port > sw->cfg.nports) {
        return IBSW_TAKEN;
    }
    in = &sw->port[port];
    if (in->held) {
        /* The caller was told to stop reading; keep order, refuse. */
        return IBSW_HELD;
    }
    in->c.rx_pkts++;
    in->c.rx_bytes += len;
    if (len < ETH_HLEN || len > IBSW_FRAME_MAX ||
        (frame[12] << 8 | frame[13]) != RNIC_ETHERTYPE_IB) {
        return drop(sw, port, IBSW_DROP_MALFORMED);
    }
    pkt = frame + ETH_HLEN;
    /* A short packet may come padded to Ethernet's minimum: keep it so. */
    pkt_len = rnic_ib_frame_pkt_len(frame, len, ETH_HLEN);
    if (!pkt_len || rnic_ib_check(pkt, pkt_len, &lrh) != RNIC_IB_OK) {
        return drop(sw, port, IBSW_DROP_MALFORMED);
    }
    sw->scratch.len = len;
    memcpy(sw->scratch.data, frame, len);

    if (lrh.vl == RNIC_VL_SMP) {
        /* rnic_ib_check() let VL15 through only for QP0: an SMP. */
        mask = ibsw_smp(sw, port, &sw->scratch);
        if (!mask) {
            return drop(sw, port, IBSW_DROP_SMP);
        }
        return deliver(sw, port, &sw->scratch, mask);
    }
    return forward_data(sw, port, &lrh);
}

bool ibsw_input_held(const IbSwitch *sw, unsigned port)
{
    return port >= 1 && port <= sw->cfg.nports && sw->port[port].held;
}

const IbswFrame *ibsw_peek(const IbSwitch *sw, unsigned port)
{
    const IbswPort *p;

    if (port < 1 || port > sw->cfg.nports) {
        return NULL;
    }
    p = &sw->port[port];
    return p->q_len ? p->q[p->q_head] : NULL;
}

/* Credits came back: let held inputs go, oldest port number first. */
static void release_held(IbSwitch *sw)
{
    unsigned i, j;

    for (i = 1; i <= sw->cfg.nports; i++) {
        IbswPort *in = &sw->port[i];

        if (!in->held || !has_room(sw, in->held_mask)) {
            continue;
        }
        for (j = 1; j <= sw->cfg.nports; j++) {
            if (in->held_mask >> j & 1) {
                enqueue(sw, j, in->held);
            }
        }
        free(in->held);
        in->held = NULL;
        in->held_mask = 0;
    }
}

void ibsw_pop(IbSwitch *sw, unsigned port)
{
    IbswPort *p;
    IbswFrame *f;

    if (port < 1 || port > sw->cfg.nports || !sw->port[port].q_len) {
        return;
    }
    p = &sw->port[port];
    f = p->q[p->q_head];
    p->c.tx_pkts++;
    p->c.tx_bytes += f->len;
    free(f);
    p->q_head = (p->q_head + 1) % sw->cfg.credits;
    p->q_len--;
    release_held(sw);
}

void ibsw_link(IbSwitch *sw, unsigned port, bool up)
{
    IbswPort *p;
    uint8_t old;

    if (port < 1 || port > sw->cfg.nports) {
        return;
    }
    p = &sw->port[port];
    old = p->state;
    p->linked = up;
    if (up) {
        p->phys = IBSW_PHYS_LINKUP;
        p->state = IBSW_PS_INIT;
    } else {
        unsigned j;

        p->phys = IBSW_PHYS_POLLING;
        p->state = IBSW_PS_DOWN;
        /* What waited for this link can no longer leave through it. */
        for (j = 0; j < p->q_len; j++) {
            free(p->q[(p->q_head + j) % sw->cfg.credits]);
        }
        p->q_head = p->q_len = 0;
        free(p->held);
        p->held = NULL;
        p->held_mask = 0;
        for (j = 1; j <= sw->cfg.nports; j++) {
            sw->port[j].held_mask &= ~(1ull << port);
        }
        release_held(sw);
    }
    if (old != p->state) {
        uint64_t mask;

        sw->port_state_change = true;
        mask = ibsw_trap_port_change(sw, &sw->scratch);
        if (mask && has_room(sw, mask)) {
            enqueue(sw, __builtin_ctzll(mask), &sw->scratch);
            sw->traps_sent++;
        }
    }
}
