/*
 * rnic: the transport dispatcher -- where received RoCE frames and the
 * core's per-QP calls enter the transport
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * This is the device's single transport dispatcher, the part that
 * igb_receive_internal() plays in hw/net/igb_core.c.  Below it sit the
 * link layers: RoCE v1 and RoCE v2, which address a packet from the GID
 * entry of its QP, and InfiniBand (link-layer=infiniband), which
 * addresses it by LID from the port the subnet manager set up; both
 * build and send the frame through the same codec.  Above it sit the
 * engines of rnic-req.c,
 * rnic-comp.c and rnic-resp.c.  Every frame the netdev path hands over
 * is parsed here, checked against the QP it names (or each QP of a
 * multicast group) and given to the completer or the responder; the
 * core creates, modifies, flushes and runs QPs through here, and the
 * SQ doorbell records that spare posters a doorbell are kept here, as
 * they follow the requester's runs.  A second link layer then joins
 * under one entry instead of reaching into each engine.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "rnic-transport.h"
#include "trace.h"

/* ---- Link layer: InfiniBand addressing ---- */

/* The port's one GID: the SM's subnet prefix and the port GUID. */
void rnic_ib_port_gid(RnicState *s, uint8_t gid[16])
{
    stq_be_p(gid, s->ibp.gid_prefix);
    stq_be_p(gid + 8, s->port_guid);
}

/* The QP's P_Key: its entry of the port's table (index 0 if out of it). */
static uint16_t rnic_ib_qp_pkey(RnicState *s, const RnicQP *qp)
{
    return s->ibp.pkey[qp->pkey_index < RNIC_PKEY_BLOCK ? qp->pkey_index : 0];
}

/*
 * IBA 10.9.3: two P_Keys match when their low 15 bits are equal, the
 * base is not the invalid 0, and at least one of them is a full member
 * (bit 15): two limited members cannot talk.
 */
static bool rnic_ib_pkey_match(uint16_t a, uint16_t b)
{
    return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) &&
           ((a | b) & 0x8000);
}

/*
 * An LRH from the port's base LID (plus the AV's path bits, below the
 * LMC) to the AV's DLID, on the VL the SL2VL table gives the AV's SL,
 * and a GRH from the port's GID only when the AV asks for one.  The
 * Ethernet header only carries the frame over the netdev
 * (docs/infiniband.md): broadcast, from the device's MAC.
 */
static bool rnic_tp_pkt_init_ib(RnicState *s, RnicQP *qp, const RnicAV *av,
                                RnicPkt *p)
{
    const RnicIbPort *port = &s->ibp;
    uint16_t paths = (1u << port->lmc) - 1;

    if (av->net_type != RNIC_NET_IB) {
        return false;
    }
    p->ib = true;
    memset(p->eth_dst, 0xff, RNIC_ETH_ALEN);
    memcpy(p->eth_src, s->conf.macaddr.a, RNIC_ETH_ALEN);
    p->ib_sl = av->sl & 0xf;
    p->ib_vl = port->sl2vl[p->ib_sl];
    p->ib_dlid = av->dlid;
    p->ib_slid = (port->lid & ~paths) | (av->src_path_bits & paths);
    if (qp->type == RNIC_QPT_SMI) {
        /* SMPs travel on VL15, from the permissive LID until one is set. */
        p->ib_vl = RNIC_VL_SMP;
        if (port->lid == RNIC_LID_RESERVED) {
            p->ib_slid = RNIC_LID_PERMISSIVE;
        }
    }
    if (av->ib_flags & RNIC_AV_IB_GRH) {
        if (av->sgid_index != 0) {
            return false;
        }
        p->ib_grh = true;
        p->ip_ver = 6;
        rnic_ib_port_gid(s, p->ip_src);
        memcpy(p->ip_dst, av->dgid, 16);
        p->ttl = av->hop_limit;
        p->tclass = av->traffic_class;
        p->flow_label = av->flow_label & 0xfffff;
    }
    p->bth.pkey = qp->type == RNIC_QPT_SMI ? RNIC_DEFAULT_PKEY
                                           : rnic_ib_qp_pkey(s, qp);
    p->bth.tver = RNIC_BTH_TVER;
    return true;
}

/* ---- Link layer: RoCE v1/v2 addressing, frame build and send ---- */

bool rnic_tp_pkt_init(RnicState *s, RnicQP *qp, const RnicAV *av,
                      RnicPkt *p)
{
    const RnicGid *gid;

    memset(p, 0, sizeof(*p));
    if (s->ib) {
        return rnic_tp_pkt_init_ib(s, qp, av, p);
    }
    if (av->net_type == RNIC_NET_IB) {
        return false;
    }
    if (av->sgid_index >= s->prop.max_gid) {
        return false;
    }
    gid = &s->gid[av->sgid_index];
    if (!gid->valid) {
        return false;
    }
    memcpy(p->eth_dst, av->dmac, RNIC_ETH_ALEN);
    memcpy(p->eth_src, gid->mac, RNIC_ETH_ALEN);
    if (gid->vlan_id < 4096) {
        p->has_vlan = true;
        p->vlan_tci = gid->vlan_id;
    }
    if (gid->type == RNIC_GID_ROCE_V1) {
        /* The GRH is IPv6-shaped and carries any GID, mapped or not. */
        p->roce_v1 = true;
        p->ip_ver = 6;
    } else if (gid->type == RNIC_GID_ROCE_V2_IPV4) {
        /* An IPv4 source cannot reach an IPv6 destination. */
        if (!rnic_ip_is_v4_mapped(av->dgid)) {
            return false;
        }
        p->ip_ver = 4;
    } else {
        p->ip_ver = 6;
    }
    memcpy(p->ip_src, gid->gid, 16);
    memcpy(p->ip_dst, av->dgid, 16);
    p->ttl = av->hop_limit ? av->hop_limit : 64;
    p->tclass = av->traffic_class;
    if (s->prop.ecn && !p->roce_v1) {
        p->tclass = (p->tclass & ~RNIC_ECN_MASK) | RNIC_ECN_ECT0;
    }
    p->flow_label = av->flow_label & 0xfffff;
    p->ip_id = qp->tp ? qp->tp->req.ip_id++ : 0;
    p->udp_sport = p->flow_label ?
                   rnic_udp_sport_from_flow_label(p->flow_label) :
                   rnic_udp_sport_from_qpn(qp->qpn);
    p->udp_dport = RNIC_ROCE_UDP_PORT;
    p->bth.pkey = RNIC_DEFAULT_PKEY;
    p->bth.tver = RNIC_BTH_TVER;
    return true;
}

bool rnic_tp_xmit(RnicState *s, RnicQP *qp, RnicPkt *p, const void *payload)
{
    uint8_t buf[RNIC_TP_FRAME_MAX];
    int hlen, flen;

    /*
     * An IB port sends data only once the SM made it ACTIVE, and never
     * on VL15 (an SL the SL2VL table maps there is not to be used): the
     * packet is lost on the link as on a real port, and RC retries it.
     * Subnet management (QP0, VL15) goes out in any state but DOWN, as
     * the SM needs it to bring the port up.
     */
    if (p->ib && (qp->type == RNIC_QPT_SMI ?
                  s->ibp.state == RNIC_PORT_DOWN :
                  s->ibp.state != RNIC_PORT_ACTIVE ||
                  p->ib_vl == RNIC_VL_SMP)) {
        s->cnt[RNIC_CNT_IB_TX_NOT_ACTIVE]++;
        trace_rnic_tp_ib_tx_drop(qp->qpn, p->ib_dlid, s->ibp.state,
                                 p->ib_vl);
        return true;
    }
    hlen = rnic_wire_build_hdr(p, buf, sizeof(buf));
    if (hlen < 0) {
        trace_rnic_tp_rx_drop(qp->qpn, "cannot build frame");
        return false;
    }
    if (p->payload_len) {
        memcpy(buf + hlen, payload, p->payload_len);
    }
    flen = rnic_wire_finalize(p, buf, sizeof(buf));
    if (flen < 0) {
        trace_rnic_tp_rx_drop(qp->qpn, "cannot finalize frame");
        return false;
    }
    if (flen < RNIC_ETH_MIN_FRAME) {
        memset(buf + flen, 0, RNIC_ETH_MIN_FRAME - flen);
        flen = RNIC_ETH_MIN_FRAME;
    }
    trace_rnic_tp_tx(qp->qpn, rnic_bth_opc_str(p->bth.opcode), p->bth.dqpn,
                     p->bth.psn, p->payload_len);
    s->cnt[RNIC_CNT_TX_PKTS]++;
    s->cnt[RNIC_CNT_TX_BYTES] += flen;
    if (p->roce_v1) {
        s->cnt[RNIC_CNT_TX_ROCE_V1]++;
    }
    rnic_net_roce_tx(s, buf, flen);
    return true;
}

/* ---- Receive dispatch ---- */

static bool rnic_opcode_fits_qp(const RnicQP *qp, uint8_t opcode)
{
    switch (qp->type) {
    case RNIC_QPT_RC:
        return rnic_opcode_transport(opcode) == RNIC_OPC_RC;
    case RNIC_QPT_UC:
        return rnic_opcode_transport(opcode) == RNIC_OPC_UC;
    case RNIC_QPT_UD:
    case RNIC_QPT_GSI:
    case RNIC_QPT_SMI:
        return rnic_opcode_transport(opcode) == RNIC_OPC_UD;
    default:
        return false;
    }
}

static void rnic_rx_drop(RnicState *s, uint32_t qpn, const char *why)
{
    trace_rnic_tp_rx_drop(qpn, why);
    s->cnt[RNIC_CNT_RX_DROPPED]++;
}

/*
 * The same on an IB port.  The P_Key is the QP's entry of the port's
 * table, as the SM set it (QP1 takes any P_Key of the table), and a
 * mismatch counts in PortInfo's P_KeyViolations.  A connected QP hears
 * from its peer's LID, and when its path has a GRH, from the peer's
 * GID to ours.
 */
static const char *rnic_rx_source_check_ib(RnicState *s, const RnicQP *qp,
                                           const RnicPkt *p)
{
    uint8_t gid[16];
    bool ok = false;
    unsigned i;

    if (qp->type == RNIC_QPT_SMI) {
        return NULL;            /* SMPs' P_Key is not checked (IBA 14.2.3) */
    }
    if (qp->type == RNIC_QPT_GSI) {
        for (i = 0; i < RNIC_PKEY_BLOCK && !ok; i++) {
            ok = rnic_ib_pkey_match(s->ibp.pkey[i], p->bth.pkey);
        }
    } else {
        ok = rnic_ib_pkey_match(rnic_ib_qp_pkey(s, qp), p->bth.pkey);
    }
    if (!ok) {
        s->ibp.pkey_viol = MIN(s->ibp.pkey_viol + 1, UINT16_MAX);
        s->cnt[RNIC_CNT_IB_RX_PKEY_ERR]++;
        if (qp->type == RNIC_QPT_GSI) {
            /* Management traffic in a partition we are not in: tell the SM. */
            rnic_ib_trap_bad_pkey(s, p->ib_slid, p->ib_sl, p->deth.src_qp,
                                  p->bth.pkey);
        }
        return "P_Key mismatch";
    }
    if (qp->type != RNIC_QPT_RC && qp->type != RNIC_QPT_UC) {
        return NULL;
    }
    if (p->ib_slid != qp->av.dlid) {
        return "SLID is not the connected peer's LID";
    }
    if (!(qp->av.ib_flags & RNIC_AV_IB_GRH) != !p->ib_grh) {
        return "GRH where the path has none, or none where it has one";
    }
    if (p->ib_grh) {
        rnic_ib_port_gid(s, gid);
        if (memcmp(p->ip_src, qp->av.dgid, 16) || memcmp(p->ip_dst, gid, 16)) {
            return "GRH is not the connected path's";
        }
    }
    return NULL;
}

/*
 * Whether a packet may enter 'qp' at all: its P_Key must match the
 * port's one entry (0xffff, a full member, so only the low 15 bits are
 * compared), and a connected QP only hears from the peer its address
 * vector names, at the GID it sends from.  The UDP source port is not
 * part of it: RoCEv2 makes it an entropy field that peers derive from
 * the flow label or the QPNs as they see fit.  RC and UC BTHs carry no
 * source QPN to compare with dest_qpn.  The RoCE version is part of it:
 * a QP whose source GID is v1 talks v1 only.
 */
static const char *rnic_rx_source_check(RnicState *s, const RnicQP *qp,
                                        const RnicPkt *p)
{
    const RnicGid *g;

    if (s->ib) {
        return rnic_rx_source_check_ib(s, qp, p);
    }
    if ((p->bth.pkey & 0x7fff) != (RNIC_DEFAULT_PKEY & 0x7fff)) {
        return "P_Key mismatch";
    }
    if (qp->type != RNIC_QPT_RC && qp->type != RNIC_QPT_UC) {
        return NULL;
    }
    if (memcmp(p->ip_src, qp->av.dgid, 16)) {
        return "source GID is not the connected peer";
    }
    g = qp->av.sgid_index < s->prop.max_gid ? &s->gid[qp->av.sgid_index]
                                             : NULL;
    if (!g || !g->valid || memcmp(p->ip_dst, g->gid, 16)) {
        return "destination GID is not the QP's source GID";
    }
    if ((g->type == RNIC_GID_ROCE_V1) != p->roce_v1) {
        return "RoCE version is not the QP's source GID's";
    }
    return NULL;
}

/* A CNP names the RC requester that should slow down. */
static void rnic_tp_rx_cnp(RnicState *s, RnicQP *qp, const RnicPkt *p,
                           size_t len)
{
    const char *why;

    if (qp->type != RNIC_QPT_RC) {
        rnic_rx_drop(s, qp->qpn, "CNP for a QP that is not RC");
        return;
    }
    if (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) {
        rnic_rx_drop(s, qp->qpn, "CNP in wrong QP state");
        return;
    }
    why = rnic_rx_source_check(s, qp, p);
    if (why) {
        rnic_rx_drop(s, qp->qpn, why);
        return;
    }
    if (p->payload_len != RNIC_CNP_RSVD_LEN) {
        rnic_rx_drop(s, qp->qpn, "CNP of the wrong length");
        return;
    }
    trace_rnic_tp_cnp(qp->qpn, "received", p->bth.dqpn);
    s->cnt[RNIC_CNT_RX_PKTS]++;
    s->cnt[RNIC_CNT_RX_BYTES] += len;
    rnic_comp_cnp(s, qp);
}

/* One packet for one QP: the checks every QP makes, then its role. */
static void rnic_tp_rx_qp_role(RnicState *s, RnicQP *qp, const RnicPkt *p,
                               const uint8_t *frame, size_t len,
                               const RnicOpcodeInfo *info)
{
    if (info->flags & RNIC_OPF_CNP) {
        rnic_tp_rx_cnp(s, qp, p, len);
        return;
    }
    if (!rnic_opcode_fits_qp(qp, p->bth.opcode)) {
        rnic_rx_drop(s, qp->qpn, "opcode of another transport");
        return;
    }
    if (qp->state != RNIC_QPS_RESET && qp->state != RNIC_QPS_INIT) {
        const char *why = rnic_rx_source_check(s, qp, p);

        if (why) {
            rnic_rx_drop(s, qp->qpn, why);
            return;
        }
    }
    trace_rnic_tp_rx(qp->qpn, info->name, p->bth.psn, p->payload_len);

    if (info->flags & RNIC_OPF_RESPONSE) {
        if (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) {
            rnic_rx_drop(s, qp->qpn, "response in wrong QP state");
            return;
        }
        s->cnt[RNIC_CNT_RX_PKTS]++;
        s->cnt[RNIC_CNT_RX_BYTES] += len;
        rnic_comp_rx(s, qp, p, frame);
        return;
    }
    if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS &&
        qp->state != RNIC_QPS_SQD) {
        rnic_rx_drop(s, qp->qpn, "request in wrong QP state");
        return;
    }
    s->cnt[RNIC_CNT_RX_PKTS]++;
    s->cnt[RNIC_CNT_RX_BYTES] += len;
    if (!p->roce_v1 && !p->ib &&
        (p->tclass & RNIC_ECN_MASK) == RNIC_ECN_CE) {
        rnic_resp_ce(s, qp);
    }
    rnic_resp_request(s, qp, p, frame, len, info->flags);
    if (qp->tp->ooo) {
        rnic_ooo_drain(s, qp);
    }
}

/* The DMA-fail fault may be aimed at the writes made for one QP's packets. */
static void rnic_tp_rx_qp(RnicState *s, RnicQP *qp, const RnicPkt *p,
                          const uint8_t *frame, size_t len,
                          const RnicOpcodeInfo *info)
{
    s->inj.rx_qpn = qp->qpn;
    rnic_tp_rx_qp_role(s, qp, p, frame, len, info);
    s->inj.rx_qpn = RNIC_INJ_NO_QP;
}

static bool rnic_ib_lid_is_ours(const RnicIbPort *port, uint16_t dlid)
{
    uint16_t base = ~((1u << port->lmc) - 1);

    return dlid != RNIC_LID_RESERVED && port->lid != RNIC_LID_RESERVED &&
           !rnic_lid_is_mcast(dlid) && dlid != RNIC_LID_PERMISSIVE &&
           (dlid & base) == (port->lid & base);
}

/*
 * What an IB port checks before it looks for a QP: that the SM has made
 * it ACTIVE, and that the DLID is one of its 2^LMC LIDs, or a multicast
 * LID with a GRH naming the group.  Subnet management packets (QP0, and
 * only on VL15) are taken in every state but DOWN, to the permissive
 * LID or one of the port's: that is how the SM brings the port up.
 */
static bool rnic_tp_rx_ib_port(RnicState *s, const RnicPkt *p)
{
    const RnicIbPort *port = &s->ibp;

    if (p->bth.dqpn == RNIC_SMI_QPN || p->ib_vl == RNIC_VL_SMP) {
        if (p->bth.dqpn != RNIC_SMI_QPN || p->ib_vl != RNIC_VL_SMP) {
            rnic_rx_drop(s, p->bth.dqpn, "QP0 packet on a data VL");
            return false;
        }
        if (port->state == RNIC_PORT_DOWN) {
            s->cnt[RNIC_CNT_IB_RX_NOT_ACTIVE]++;
            rnic_rx_drop(s, p->bth.dqpn, "IB port is DOWN");
            return false;
        }
        if (p->ib_dlid == RNIC_LID_PERMISSIVE ||
            rnic_ib_lid_is_ours(port, p->ib_dlid)) {
            return true;
        }
        s->cnt[RNIC_CNT_IB_RX_DLID_ERR]++;
        rnic_rx_drop(s, p->bth.dqpn, "DLID is not the port's");
        return false;
    }
    if (port->state != RNIC_PORT_ACTIVE) {
        s->cnt[RNIC_CNT_IB_RX_NOT_ACTIVE]++;
        rnic_rx_drop(s, p->bth.dqpn, "IB port is not ACTIVE");
        return false;
    }
    if (rnic_lid_is_mcast(p->ib_dlid)) {
        if (p->ib_grh && p->bth.dqpn == RNIC_QPN_MASK) {
            return true;
        }
    } else if (rnic_ib_lid_is_ours(port, p->ib_dlid)) {
        return true;
    }
    s->cnt[RNIC_CNT_IB_RX_DLID_ERR]++;
    rnic_rx_drop(s, p->bth.dqpn, "DLID is not the port's");
    return false;
}

void rnic_tp_rx(RnicState *s, const uint8_t *frame, size_t len)
{
    const RnicOpcodeInfo *info;
    RnicWireErr err;
    RnicMcast *g;
    RnicPkt p;
    RnicQP *qp;
    uint32_t k;

    err = rnic_wire_parse(frame, len, &p);
    if (err != RNIC_WIRE_OK) {
        if (err == RNIC_WIRE_E_ICRC) {
            s->cnt[RNIC_CNT_RX_ICRC_ERR]++;
        }
        rnic_rx_drop(s, err == RNIC_WIRE_E_ICRC ? p.bth.dqpn : 0,
                     rnic_wire_err_str(err));
        return;
    }
    if (p.ib != s->ib) {
        rnic_rx_drop(s, p.bth.dqpn, p.ib ? "IB packet on an Ethernet port"
                                         : "RoCE packet on an IB port");
        return;
    }
    if (p.ib && !rnic_tp_rx_ib_port(s, &p)) {
        return;
    }
    info = rnic_opcode_info(p.bth.opcode);
    if (!info) {
        rnic_rx_drop(s, p.bth.dqpn, "opcode not implemented");
        return;
    }
    if (p.roce_v1) {
        s->cnt[RNIC_CNT_RX_ROCE_V1]++;
    }
    if (p.bth.dqpn == RNIC_QPN_MASK) {
        /* Multicast: a copy for every QP of the group (UD ones only). */
        g = rnic_mcast_find(s, p.ip_dst);
        if (!g) {
            rnic_rx_drop(s, p.bth.dqpn, "no such multicast group");
            return;
        }
        for (k = 0; k < g->nqp; k++) {
            qp = rnic_qp_get(s, g->qpn[k]);
            if (qp && qp->tp) {
                rnic_tp_rx_qp(s, qp, &p, frame, len, info);
            }
        }
        return;
    }
    qp = rnic_qp_get(s, p.bth.dqpn);
    if (!qp || !qp->tp) {
        rnic_rx_drop(s, p.bth.dqpn, "unknown QP");
        return;
    }
    rnic_tp_rx_qp(s, qp, &p, frame, len, info);
}

void rnic_tp_rx_end(RnicState *s)
{
    rnic_resp_flush_owed_acks(s);
}

/* ---- SQ doorbell records (see struct rnic_sq_dbrec) ---- */

static bool rnic_sq_dbrec_addr(RnicQP *qp, uint64_t *addr)
{
    return (qp->flags & RNIC_QP_FLAG_SQ_DBREC) &&
           rnic_pbl_addr(&qp->sq.ring.pbl, 0, addr, NULL);
}

/*
 * Single 32-bit accesses: the producer stores pi while we read it.  The
 * cached flags change only once they are in memory, so a failed write
 * is tried again on the next run rather than believed.
 */
static void rnic_sq_dbrec_set(RnicState *s, RnicQP *qp, bool ring)
{
    uint32_t flags = cpu_to_le32(ring ? RNIC_SQ_DBREC_RING : 0);
    uint64_t addr;

    if (qp->sq_dbrec_ring == ring || !rnic_sq_dbrec_addr(qp, &addr)) {
        return;
    }
    /* Through the power-state guard, like every other guest access. */
    if (rnic_dma_write(s, addr + offsetof(struct rnic_sq_dbrec, flags),
                       &flags, sizeof(flags)) != MEMTX_OK) {
        trace_rnic_err_sq_dbrec_dma(qp->qpn, addr);
        return;
    }
    qp->sq_dbrec_ring = ring;
    trace_rnic_sq_dbrec_ring(qp->qpn, ring);
    if (ring) {
        rnic_sq_dbrec_forget(s, qp);
    } else if (!qp->sq_dbrec_listed) {
        QTAILQ_INSERT_TAIL(&s->dbrec_list, qp, dbrec_next);
        qp->sq_dbrec_listed = true;
    }
}

void rnic_sq_dbrec_forget(RnicState *s, RnicQP *qp)
{
    if (qp->sq_dbrec_listed) {
        QTAILQ_REMOVE(&s->dbrec_list, qp, dbrec_next);
        qp->sq_dbrec_listed = false;
    }
}

/*
 * A WQE posted while RING is clear waits for its QP's next run.  With
 * many QPs that each hold a little, that run may be an ACK away, so
 * every bottom-half run also reads the records of some such QPs (a
 * 4-byte read each, next to the frames the run moves anyway), taking
 * them in turn, at most 'n' of them.
 */
void rnic_sq_dbrec_sweep(RnicState *s, unsigned n)
{
    RnicQP *qp;

    while (n-- && (qp = QTAILQ_FIRST(&s->dbrec_list))) {
        QTAILQ_REMOVE(&s->dbrec_list, qp, dbrec_next);
        QTAILQ_INSERT_TAIL(&s->dbrec_list, qp, dbrec_next);
        if (!qp->scheduled && rnic_sq_dbrec_poll(s, qp)) {
            rnic_qp_schedule(s, qp);
        }
    }
}

bool rnic_sq_dbrec_poll(RnicState *s, RnicQP *qp)
{
    uint32_t old = qp->sq.pi;
    uint32_t pi;
    uint64_t addr;

    if (!rnic_sq_dbrec_addr(qp, &addr)) {
        return false;
    }
    if (rnic_dma_read(s, addr + offsetof(struct rnic_sq_dbrec, pi), &pi,
                      sizeof(pi)) != MEMTX_OK) {
        trace_rnic_err_sq_dbrec_dma(qp->qpn, addr);
        return false;
    }
    pi = le32_to_cpu(pi);
    if ((uint16_t)pi == qp->sq_dbrec_seen) {
        return false;
    }
    qp->sq_dbrec_seen = pi;
    if (!rnic_wq_doorbell(s, "SQ dbrec", qp->qpn, &qp->sq, pi)) {
        return false;
    }
    s->cnt[RNIC_CNT_SQ_DBREC_WQES] += qp->sq.pi - old;
    return qp->sq.pi != old;
}

/* On create and reset: the ring starts over, and posting must ring. */
void rnic_sq_dbrec_reset(RnicState *s, RnicQP *qp)
{
    struct rnic_sq_dbrec rec = {
        .pi = 0,
        .flags = cpu_to_le32(RNIC_SQ_DBREC_RING),
    };
    uint64_t addr;

    qp->sq_dbrec_ring = true;
    qp->sq_dbrec_seen = 0;
    rnic_sq_dbrec_forget(s, qp);
    if (rnic_sq_dbrec_addr(qp, &addr) &&
        rnic_dma_write(s, addr, &rec, sizeof(rec)) != MEMTX_OK) {
        trace_rnic_err_sq_dbrec_dma(qp->qpn, addr);
    }
}

/* Before the requester runs: posts need no doorbell now. */
static void rnic_sq_dbrec_busy(RnicState *s, RnicQP *qp)
{
    rnic_sq_dbrec_set(s, qp, false);
    rnic_sq_dbrec_poll(s, qp);
}

/*
 * Packets in flight that let a WQE posted now wait for the next ACK:
 * one AckReq interval keeps the path busy meanwhile.  With fewer (a
 * QP of many that each hold a WQE or two) the wait would idle the QP,
 * and the doorbell is worth its cost.
 */
#define RNIC_TP_DBREC_MIN_INFLIGHT  RNIC_TP_ACKREQ_EVERY

/*
 * Whether the QP will run again without a doorbell soon enough for a
 * WQE posted now: it is queued, a timer will queue it, or enough
 * packets are in flight that their ACK will.
 */
static bool rnic_tp_sq_busy(RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    if (qp->scheduled || tp->comp.ack_expired ||
        timer_pending(tp->comp.rnr_timer)) {
        return true;
    }
    return timer_pending(tp->comp.ack_timer) &&
           rnic_psn_diff(tp->req.max_psn, tp->comp.psn) >=
           RNIC_TP_DBREC_MIN_INFLIGHT;
}

/*
 * After it ran: posting needs no doorbell while the QP is queued, or
 * while enough packets wait for their ACK (whose arrival runs the QP,
 * and whose timer does if it never comes).  A WQE posted then waits for
 * that ACK (a round trip; a probe interval if it was lost), where a
 * doorbell would have stopped the poster until the bottom half let go
 * of the lock.  The record is read
 * once more after RING is visible: a WQE stored before the producer
 * could see RING would otherwise wait for a doorbell that never comes.
 */
static void rnic_sq_dbrec_idle(RnicState *s, RnicQP *qp, bool requeued)
{
    if (!(qp->flags & RNIC_QP_FLAG_SQ_DBREC) || requeued ||
        rnic_tp_sq_busy(qp)) {
        return;
    }
    rnic_sq_dbrec_set(s, qp, true);
    /* Our RING store before our pi load; pairs with the producer's. */
    smp_mb();
    if (rnic_sq_dbrec_poll(s, qp)) {
        rnic_sq_dbrec_set(s, qp, false);
        rnic_qp_schedule(s, qp);
    }
}

/* ---- Per-QP entry points from the core ---- */

bool rnic_tp_qp_init(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp;

    if (!rnic_host_mem_charge(s, sizeof(*tp))) {
        return false;
    }
    tp = g_try_new0(RnicTransport, 1);
    if (!tp) {
        rnic_host_mem_uncharge(s, sizeof(*tp));
        return false;
    }
    tp->s = s;
    tp->qp = qp;
    qp->tp = tp;
    rnic_comp_init_timers(tp);
    rnic_req_reset(tp);
    rnic_comp_reset(tp);
    rnic_resp_reset(tp);
    return true;
}

void rnic_tp_qp_fini(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    if (!tp) {
        return;
    }
    timer_free(tp->comp.ack_timer);
    timer_free(tp->comp.rnr_timer);
    rnic_ooo_free(tp);
    g_free(tp);
    rnic_host_mem_uncharge(s, sizeof(*tp));
    qp->tp = NULL;
}

void rnic_tp_qp_modified(RnicState *s, RnicQP *qp, uint8_t old_state,
                         uint32_t attr_mask)
{
    RnicTransport *tp = qp->tp;

    if (!tp) {
        return;
    }
    trace_rnic_tp_state(qp->qpn, old_state, qp->state, qp->sq_psn,
                        qp->rq_psn);
    /* Kept frames passed the source check of the old address vector. */
    if (attr_mask & RNIC_QP_ATTR_AV) {
        rnic_ooo_clear(tp);
    }
    switch (qp->state) {
    case RNIC_QPS_RESET:
    case RNIC_QPS_INIT:
        rnic_comp_stop_timers(tp);
        rnic_req_reset(tp);
        rnic_comp_reset(tp);
        rnic_resp_reset(tp);
        break;
    case RNIC_QPS_RTR:
        if (old_state != RNIC_QPS_RTR || (attr_mask & RNIC_QP_ATTR_RQ_PSN)) {
            rnic_resp_reset(tp);
        }
        break;
    case RNIC_QPS_RTS:
        if (old_state == RNIC_QPS_RTR) {
            /* Nothing was fetched before RTS. */
            rnic_req_reset(tp);
            rnic_comp_reset(tp);
        } else if (attr_mask & RNIC_QP_ATTR_SQ_PSN &&
                   tp->req.send_idx == qp->sq.ci) {
            rnic_req_reset(tp);
            rnic_comp_reset(tp);
        }
        if (attr_mask & RNIC_QP_ATTR_RQ_PSN) {
            rnic_ooo_clear(tp);
            tp->resp.epsn = qp->rq_psn & RNIC_PSN_MASK;
        }
        if (attr_mask & RNIC_QP_ATTR_RETRY_CNT) {
            tp->comp.retry_left = qp->retry_cnt;
        }
        if (attr_mask & RNIC_QP_ATTR_RNR_RETRY) {
            tp->comp.rnr_left = qp->rnr_retry;
        }
        rnic_qp_schedule(s, qp);
        break;
    case RNIC_QPS_SQD:
        tp->comp.sqd_notified = false;
        rnic_comp_advance(s, qp);
        break;
    case RNIC_QPS_ERR:
        rnic_tp_qp_flush(s, qp);
        break;
    default:
        break;
    }
}

void rnic_tp_qp_flush(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    if (!tp) {
        return;
    }
    rnic_comp_stop_timers(tp);
    /* A ring of 32K WQEs is flushed a budget at a time, by the BH. */
    rnic_qp_schedule(s, qp);
}

void rnic_tp_qp_run(RnicState *s, RnicQP *qp, int *budget)
{
    if (!qp->tp) {
        return;
    }
    switch (qp->state) {
    case RNIC_QPS_ERR:
        /* Outstanding WQEs, and any posted since, complete as flushed. */
        rnic_rq_flush(s, qp, budget);
        rnic_sq_dbrec_busy(s, qp);
        rnic_sq_flush(s, qp, budget);
        rnic_sq_dbrec_idle(s, qp, *budget <= 0);
        return;
    case RNIC_QPS_RTR:
        rnic_comp_timer_run(s, qp);
        rnic_resp_run(s, qp, budget);
        return;
    case RNIC_QPS_RTS:
    case RNIC_QPS_SQD:
        rnic_comp_timer_run(s, qp);
        rnic_resp_run(s, qp, budget);
        rnic_sq_dbrec_busy(s, qp);
        rnic_req_run(s, qp, budget);
        rnic_sq_dbrec_idle(s, qp, *budget <= 0);
        return;
    default:
        return;
    }
}
