/*
 * rnic: raw packet QPs and the flow rules that steer frames to them
 *
 * A raw packet QP sends whole Ethernet frames its SEND WQEs gather, and
 * receives the frames CREATE_FLOW rules pick out of what the port hears
 * (and of what the device's own raw QPs send, as a NIC's internal switch
 * loops them back).  Rules are matched when a frame arrives, to decide
 * whether the Ethernet function gets it, and again in the bottom half,
 * where the frame is written to guest memory: a rule may be gone by then.
 *
 * Copyright (c) 2026 The rnic authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "rnic.h"
#include "rnic-wire.h"
#include "rnic-cmd.h"
#include "rnic-transport.h"
#include "trace.h"

#define RNIC_IPPROTO_TCP    6

/* The header fields a rule can look at, parsed once per frame. */
typedef struct RnicFrameKey {
    const uint8_t *dmac;
    const uint8_t *smac;
    uint8_t ethertype[2];
    uint8_t vlan_tci[2];
    uint8_t ip_ver;             /* 0: not IP, or too short */
    uint8_t ip_proto;
    uint8_t src_ip[16];
    uint8_t dst_ip[16];
    uint8_t l4;                 /* enum rnic_flow_l4; ANY: no ports */
    uint8_t src_port[2];
    uint8_t dst_port[2];
} RnicFrameKey;

static bool rnic_frame_key(const uint8_t *buf, size_t len, RnicFrameKey *k)
{
    size_t off = RNIC_ETH_HLEN;
    const uint8_t *ip, *l4 = NULL;
    size_t l4_len = 0;

    memset(k, 0, sizeof(*k));
    if (len < RNIC_ETH_HLEN) {
        return false;
    }
    k->dmac = buf;
    k->smac = buf + RNIC_ETH_ALEN;
    memcpy(k->ethertype, buf + 12, 2);
    if (rnic_ld16be(buf + 12) == RNIC_ETHERTYPE_VLAN) {
        if (len < RNIC_ETH_HLEN + RNIC_VLAN_HLEN) {
            return false;
        }
        memcpy(k->vlan_tci, buf + 14, 2);
        memcpy(k->ethertype, buf + 16, 2);
        off += RNIC_VLAN_HLEN;
    }
    ip = buf + off;
    switch ((k->ethertype[0] << 8) | k->ethertype[1]) {
    case RNIC_ETHERTYPE_IPV4: {
        size_t ihl;

        if (len < off + RNIC_IPV4_HLEN || (ip[0] >> 4) != 4) {
            return true;
        }
        ihl = (ip[0] & 0xf) * 4;
        if (ihl < RNIC_IPV4_HLEN || len < off + ihl) {
            return true;
        }
        k->ip_ver = 4;
        k->ip_proto = ip[9];
        memcpy(k->src_ip, ip + 12, 4);
        memcpy(k->dst_ip, ip + 16, 4);
        /* Only a first fragment carries the ports. */
        if (!(rnic_ld16be(ip + 6) & 0x1fff)) {
            l4 = ip + ihl;
            l4_len = len - off - ihl;
        }
        break;
    }
    case RNIC_ETHERTYPE_IPV6:
        if (len < off + RNIC_IPV6_HLEN || (ip[0] >> 4) != 6) {
            return true;
        }
        k->ip_ver = 6;
        k->ip_proto = ip[6];
        memcpy(k->src_ip, ip + 8, 16);
        memcpy(k->dst_ip, ip + 24, 16);
        l4 = ip + RNIC_IPV6_HLEN;
        l4_len = len - off - RNIC_IPV6_HLEN;
        break;
    default:
        return true;
    }
    if (l4 && l4_len >= 4 &&
        (k->ip_proto == RNIC_IPPROTO_TCP || k->ip_proto == RNIC_IPPROTO_UDP)) {
        k->l4 = k->ip_proto == RNIC_IPPROTO_TCP ? RNIC_FLOW_L4_TCP
                                                : RNIC_FLOW_L4_UDP;
        memcpy(k->src_port, l4, 2);
        memcpy(k->dst_port, l4 + 2, 2);
    }
    return true;
}

static bool rnic_masked_eq(const uint8_t *frame, const uint8_t *val,
                           const uint8_t *mask, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if ((frame[i] ^ val[i]) & mask[i]) {
            return false;
        }
    }
    return true;
}

static bool rnic_flow_matches(const struct rnic_flow_match *m,
                              const RnicFrameKey *k)
{
    if (!rnic_masked_eq(k->dmac, m->dmac, m->dmac_mask, 6) ||
        !rnic_masked_eq(k->smac, m->smac, m->smac_mask, 6) ||
        !rnic_masked_eq(k->ethertype, m->ethertype, m->ethertype_mask, 2) ||
        !rnic_masked_eq(k->vlan_tci, m->vlan_tci, m->vlan_tci_mask, 2)) {
        return false;
    }
    if (!m->ip_ver) {
        return true;
    }
    if (k->ip_ver != m->ip_ver ||
        !rnic_masked_eq(k->src_ip, m->src_ip, m->src_ip_mask, 16) ||
        !rnic_masked_eq(k->dst_ip, m->dst_ip, m->dst_ip_mask, 16) ||
        !rnic_masked_eq(&k->ip_proto, &m->ip_proto, &m->ip_proto_mask, 1)) {
        return false;
    }
    if (m->l4 == RNIC_FLOW_L4_ANY) {
        return true;
    }
    return k->l4 == m->l4 &&
           rnic_masked_eq(k->src_port, m->src_port, m->src_port_mask, 2) &&
           rnic_masked_eq(k->dst_port, m->dst_port, m->dst_port_mask, 2);
}

static bool rnic_any_set(const uint8_t *p, size_t n)
{
    return !rnic_cmd_rsvd_zero(p, n);
}

/* ---- commands ---- */

uint8_t rnic_cmd_create_flow(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_create_flow *f = &c->cmd->u.create_flow;
    const struct rnic_flow_match *m = &f->match;
    uint32_t qpn = le32_to_cpu(f->qpn);
    RnicQP *qp;
    uint32_t i;
    uint8_t st;

    if (f->rsvd_4 || rnic_any_set(m->rsvd_108, sizeof(m->rsvd_108))) {
        return rnic_cmd_err_rsvd(c, "create_flow");
    }
    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    if (qp->type != RNIC_QPT_RAW_PACKET) {
        return rnic_cmd_err_param(c, "flow on a QP type", qp->type,
                                  RNIC_QPT_RAW_PACKET);
    }
    if (m->ip_ver != 0 && m->ip_ver != 4 && m->ip_ver != 6) {
        return rnic_cmd_err_param(c, "flow ip_ver", m->ip_ver, 6);
    }
    if (m->l4 > RNIC_FLOW_L4_UDP) {
        return rnic_cmd_err_param(c, "flow l4", m->l4, RNIC_FLOW_L4_UDP);
    }
    /* Fields a rule cannot look at must not pretend to be matched. */
    if (!m->ip_ver &&
        (rnic_any_set(m->src_ip_mask, 16) || rnic_any_set(m->dst_ip_mask, 16) ||
         m->ip_proto_mask || m->l4)) {
        return rnic_cmd_err_param(c, "IP fields without ip_ver", 0, 0);
    }
    if (m->ip_ver == 4 && (rnic_any_set(m->src_ip_mask + 4, 12) ||
                           rnic_any_set(m->dst_ip_mask + 4, 12))) {
        return rnic_cmd_err_param(c, "IPv4 mask beyond 4 bytes", 0, 0);
    }
    if (m->l4 == RNIC_FLOW_L4_ANY &&
        (rnic_any_set(m->src_port_mask, 2) ||
         rnic_any_set(m->dst_port_mask, 2))) {
        return rnic_cmd_err_param(c, "ports without l4", 0, 0);
    }
    for (i = 0; i < s->prop.max_flow && s->flow[i].valid; i++) {
        ;
    }
    if (i == s->prop.max_flow) {
        return rnic_cmd_err_resource(c, "flow");
    }
    s->flow[i].valid = true;
    s->flow[i].uctx = c->uctx;
    s->flow[i].qpn = qpn;
    s->flow[i].m = *m;
    c->out[RNIC_OUT_HANDLE] = i + 1;
    trace_rnic_flow(i + 1, qpn, "create");
    return RNIC_CMD_OK;
}

uint8_t rnic_cmd_destroy_flow(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t h;
    bool ok;
    uint8_t st = rnic_cmd_handle_arg(c, &h);

    if (st) {
        return st;
    }
    ok = h && h <= s->prop.max_flow;
    st = rnic_cmd_check_obj(c, "flow", h, s->prop.max_flow,
                            ok && s->flow[h - 1].valid,
                            ok ? s->flow[h - 1].uctx : 0);
    if (st) {
        return st;
    }
    trace_rnic_flow(h, s->flow[h - 1].qpn, "destroy");
    memset(&s->flow[h - 1], 0, sizeof(RnicFlow));
    return RNIC_CMD_OK;
}

void rnic_flow_remove_qp(RnicState *s, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < s->prop.max_flow; i++) {
        if (s->flow[i].valid && s->flow[i].qpn == qpn) {
            trace_rnic_flow(i + 1, qpn, "removed with its QP");
            memset(&s->flow[i], 0, sizeof(RnicFlow));
        }
    }
}

void rnic_flow_reset(RnicState *s)
{
    if (s->flow) {
        memset(s->flow, 0, sizeof(RnicFlow) * MAX(s->prop.max_flow, 1));
    }
}

uint8_t rnic_cmd_set_rss(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_set_rss *r = &c->cmd->u.set_rss;
    uint32_t qpn = le32_to_cpu(r->qpn);
    uint16_t fields = le16_to_cpu(r->fields);
    uint32_t i, n = 1u << MIN(r->log_tbl_size, RNIC_RSS_MAX_LOG_TBL);
    RnicQP *qp, *wq;
    RnicRss *rss;
    uint8_t st;

    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    if (qp->type != RNIC_QPT_RAW_PACKET) {
        return rnic_cmd_err_param(c, "RSS on a QP type", qp->type,
                                  RNIC_QPT_RAW_PACKET);
    }
    if (qp->rss) {
        return rnic_cmd_err_state(c, "RSS already set", qpn);
    }
    if (r->log_tbl_size > RNIC_RSS_MAX_LOG_TBL) {
        return rnic_cmd_err_param(c, "RSS log_tbl_size", r->log_tbl_size,
                                  RNIC_RSS_MAX_LOG_TBL);
    }
    if (r->key_len != RNIC_RSS_KEY_LEN) {
        return rnic_cmd_err_param(c, "RSS key_len", r->key_len,
                                  RNIC_RSS_KEY_LEN);
    }
    if (fields & ~RNIC_RSS_FIELDS) {
        return rnic_cmd_err_param(c, "RSS fields", fields, RNIC_RSS_FIELDS);
    }
    for (i = 0; i < ARRAY_SIZE(r->wq_qpn); i++) {
        uint32_t w = le32_to_cpu(r->wq_qpn[i]);

        if (i >= n) {
            if (w) {
                return rnic_cmd_err_rsvd(c, "wq_qpn beyond the table");
            }
            continue;
        }
        /* A spreading QP cannot be a target: no second round. */
        st = rnic_cmd_get_qp(c, w, &wq);
        if (st) {
            return st;
        }
        if (wq->type != RNIC_QPT_RAW_PACKET || wq == qp || wq->rss) {
            return rnic_cmd_err_param(c, "RSS target QP", w, 0);
        }
    }
    if (!rnic_host_mem_charge(s, sizeof(*rss))) {
        return rnic_cmd_err_resource(c, "host memory");
    }
    rss = g_new0(RnicRss, 1);
    rss->log_tbl_size = r->log_tbl_size;
    rss->fields = fields;
    memcpy(rss->key, r->key, sizeof(rss->key));
    for (i = 0; i < n; i++) {
        rss->wq_qpn[i] = le32_to_cpu(r->wq_qpn[i]);
    }
    qp->rss = rss;
    trace_rnic_rss(qpn, n, fields);
    return RNIC_CMD_OK;
}

/* ---- data path ---- */

/*
 * The Toeplitz hash of receive-side scaling: for every set bit of the
 * input, the 32 key bits starting at that bit position are XORed in.
 */
static uint32_t rnic_toeplitz(const uint8_t *key, const uint8_t *in,
                              size_t len)
{
    uint32_t hash = 0, window = ldl_be_p(key);
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        uint8_t next = i + 4 < RNIC_RSS_KEY_LEN ? key[i + 4] : 0;

        for (b = 7; b >= 0; b--) {
            if (in[i] & (1u << b)) {
                hash ^= window;
            }
            window = (window << 1) | ((next >> b) & 1);
        }
    }
    return hash;
}

/* The work queue an RSS QP hands the frame to, or NULL. */
static RnicQP *rnic_rss_pick(RnicState *s, const RnicQP *qp,
                             const RnicFrameKey *k)
{
    const RnicRss *r = qp->rss;
    uint8_t in[36];
    size_t n = 0, alen = k->ip_ver == 6 ? 16 : 4;
    uint16_t src = k->ip_ver == 6 ? RNIC_RSS_SRC_IPV6 : RNIC_RSS_SRC_IPV4;
    uint16_t dst = k->ip_ver == 6 ? RNIC_RSS_DST_IPV6 : RNIC_RSS_DST_IPV4;
    uint16_t sport = k->l4 == RNIC_FLOW_L4_TCP ? RNIC_RSS_SRC_PORT_TCP
                                               : RNIC_RSS_SRC_PORT_UDP;
    uint16_t dport = k->l4 == RNIC_FLOW_L4_TCP ? RNIC_RSS_DST_PORT_TCP
                                               : RNIC_RSS_DST_PORT_UDP;
    uint32_t idx = 0;
    RnicQP *wq;

    if (k->ip_ver) {
        if (r->fields & src) {
            memcpy(in + n, k->src_ip, alen);
            n += alen;
        }
        if (r->fields & dst) {
            memcpy(in + n, k->dst_ip, alen);
            n += alen;
        }
        if (k->l4 && (r->fields & sport)) {
            memcpy(in + n, k->src_port, 2);
            n += 2;
        }
        if (k->l4 && (r->fields & dport)) {
            memcpy(in + n, k->dst_port, 2);
            n += 2;
        }
    }
    /* Frames without the fields all land in entry 0. */
    if (n) {
        idx = rnic_toeplitz(r->key, in, n) &
              ((1u << r->log_tbl_size) - 1);
    }
    wq = rnic_qp_get(s, r->wq_qpn[idx]);
    /* Its number may have been reused by a QP of another kind. */
    if (!wq || wq->type != RNIC_QPT_RAW_PACKET || wq->rss ||
        wq->uctx != qp->uctx) {
        return NULL;
    }
    return wq;
}

bool rnic_flow_wants(RnicState *s, const uint8_t *frame, size_t len)
{
    RnicFrameKey k;
    uint32_t i;

    if (!s->flow || !rnic_frame_key(frame, len, &k)) {
        return false;
    }
    for (i = 0; i < s->prop.max_flow; i++) {
        if (s->flow[i].valid && rnic_flow_matches(&s->flow[i].m, &k)) {
            return true;
        }
    }
    return false;
}

/*
 * One frame a flow rule steered to raw QP 'qp', written from its
 * destination MAC on.  False if the QP could not take it: not receiving
 * yet, or no receive WQE posted (a raw QP has no RNR: the frame is lost,
 * as on an Ethernet port).
 */
static bool rnic_raw_rx_qp(RnicState *s, RnicQP *qp, const uint8_t *frame,
                           size_t len)
{
    RnicRwqe *r = &qp->tp->resp.rwqe;
    struct rnic_cqe cqe = {
        .opcode = RNIC_WC_RECV,
        .status = RNIC_WC_SUCCESS,
        .byte_len = len,
    };
    RnicMemErr err;

    if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS &&
        qp->state != RNIC_QPS_SQD && qp->state != RNIC_QPS_SQE) {
        trace_rnic_tp_rx_drop(qp->qpn, "raw QP not receiving");
        return false;
    }
    if (rnic_resp_get_rwqe(s, qp) != RNIC_RWQE_OK) {
        trace_rnic_tp_rx_drop(qp->qpn, "no receive WQE");
        return false;
    }
    if (len > r->total) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_LEN_ERR);
        return true;
    }
    err = rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, r->sge,
                        r->num_sge, 0, (void *)frame, len, true);
    if (err != RNIC_MEM_OK) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_PROT_ERR);
        rnic_qp_fatal(s, qp, RNIC_EQE_QP_FATAL);
        return true;
    }
    rnic_resp_recv_cqe(s, qp, &cqe);
    return true;
}

bool rnic_flow_deliver(RnicState *s, const uint8_t *frame, size_t len)
{
    RnicFrameKey k;
    bool any = false;
    uint32_t i;

    if (!s->flow || !rnic_frame_key(frame, len, &k)) {
        return false;
    }
    /*
     * One copy per QP, however many of its rules match: each QP notes the
     * frame it last got, so the walk stays linear in max-flow.
     */
    if (++s->flow_frame == 0) {
        s->flow_frame = 1;      /* 0 is what a new QP starts with */
    }
    for (i = 0; i < s->prop.max_flow; i++) {
        const RnicFlow *f = &s->flow[i];
        RnicQP *qp;

        if (!f->valid || !rnic_flow_matches(&f->m, &k)) {
            continue;
        }
        any = true;
        qp = rnic_qp_get(s, f->qpn);
        if (qp) {
            if (qp->flow_frame == s->flow_frame) {
                continue;
            }
            qp->flow_frame = s->flow_frame;
        }
        if (qp && qp->rss) {
            qp = rnic_rss_pick(s, qp, &k);
        }
        if (!qp || !rnic_raw_rx_qp(s, qp, frame, len)) {
            s->cnt[RNIC_CNT_RAW_RX_DROPPED]++;
            continue;
        }
        s->cnt[RNIC_CNT_RAW_RX_PKTS]++;
    }
    return any;
}
