/*
 * rnic: RoCEv2 requester -- SQ WQEs to packets and their retransmission
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each SQ WQE is read from guest memory once into a shadow slot
 * (RnicSwqe), validated there, and every packet of it -- including
 * retransmissions -- is built from the shadow.  Payload bytes are gathered
 * from the SGEs each time a packet is built, as a hardware RNIC would.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "rnic-transport.h"
#include "trace.h"

uint8_t rnic_wr_to_wc_opcode(uint8_t wr_opcode)
{
    switch (wr_opcode) {
    case RNIC_WR_RDMA_WRITE:
    case RNIC_WR_RDMA_WRITE_IMM:
        return RNIC_WC_RDMA_WRITE;
    case RNIC_WR_RDMA_READ:
        return RNIC_WC_RDMA_READ;
    case RNIC_WR_ATOMIC_CMP_SWP:
        return RNIC_WC_COMP_SWAP;
    case RNIC_WR_ATOMIC_FETCH_ADD:
        return RNIC_WC_FETCH_ADD;
    case RNIC_WR_LOCAL_INV:
        return RNIC_WC_LOCAL_INV;
    case RNIC_WR_REG_MR:
        return RNIC_WC_REG_MR;
    case RNIC_WR_BIND_MW:
        return RNIC_WC_BIND_MW;
    case RNIC_WR_ATOMIC_WRITE:
        return RNIC_WC_ATOMIC_WRITE;
    case RNIC_WR_FLUSH:
        return RNIC_WC_FLUSH;
    default:
        return RNIC_WC_SEND;
    }
}

static bool rnic_qp_is_ud(const RnicQP *qp)
{
    return qp->type == RNIC_QPT_UD || qp->type == RNIC_QPT_GSI ||
           qp->type == RNIC_QPT_SMI;
}

/* Work requests that act on this device's memory keys, not the wire. */
static bool rnic_wr_is_local(uint8_t op)
{
    return op == RNIC_WR_REG_MR || op == RNIC_WR_LOCAL_INV ||
           op == RNIC_WR_BIND_MW;
}

/* Which work requests each QP type carries (the rest: LOC_QP_OP_ERR). */
static bool rnic_wr_valid_for_qp(const RnicQP *qp, uint8_t op)
{
    switch (qp->type) {
    case RNIC_QPT_RC:
        return op <= RNIC_WR_ATOMIC_FETCH_ADD || rnic_wr_is_place(op);
    case RNIC_QPT_UC:
        return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM ||
               op == RNIC_WR_RDMA_WRITE || op == RNIC_WR_RDMA_WRITE_IMM;
    case RNIC_QPT_UD:
    case RNIC_QPT_GSI:
    case RNIC_QPT_SMI:
        return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM;
    case RNIC_QPT_RAW_PACKET:
        return op == RNIC_WR_SEND;
    default:
        return false;
    }
}

/* ---- WQE fetch and validation ---- */

static void rnic_av_from_abi(RnicAV *av, const struct rnic_av *in)
{
    memcpy(av->dgid, in->dgid, 16);
    memcpy(av->dmac, in->dmac, 6);
    av->sgid_index = in->sgid_index;
    av->hop_limit = in->hop_limit;
    av->flow_label = le32_to_cpu(in->flow_label) & 0xfffff;
    av->traffic_class = in->traffic_class;
    av->net_type = in->net_type;
    av->sl = in->sl & 0xf;
    if (in->net_type == RNIC_NET_IB) {
        av->dlid = le16_to_cpu(in->ib.dlid);
        av->src_path_bits = in->ib.src_path_bits;
        av->ib_flags = in->ib.flags;
    } else {
        av->dlid = 0;
        av->src_path_bits = 0;
        av->ib_flags = 0;
    }
}

/* Marks a shadow slot failed; the completer reports it in SQ order. */
static void rnic_swqe_fail(RnicQP *qp, RnicSwqe *w, uint8_t status,
                           const char *why)
{
    trace_rnic_err_tp_wqe(qp->qpn, w->idx, why);
    w->state = RNIC_SWQE_ERROR;
    w->status = status;
}

/*
 * Copies SQ WQE 'fetch_idx' into its shadow slot and validates the copy.
 * Returns false if the WQE failed (the slot is then in ERROR).
 */
static bool rnic_req_fetch(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    uint16_t idx = tp->req.fetch_idx;
    RnicSwqe *w = rnic_tp_swqe(tp, idx);
    uint8_t raw[RNIC_SQ_WQE_SIZE];
    struct rnic_send_wqe hdr;
    bool ud = rnic_qp_is_ud(qp);
    unsigned sge_off = ud ? 128 : sizeof(hdr);
    unsigned max_sge = MIN(qp->max_send_sge,
                           ud ? RNIC_UD_MAX_SGE : RNIC_SQ_MAX_SGE);
    unsigned max_inl = MIN(qp->max_inline, RNIC_SQ_WQE_SIZE - sge_off);
    bool is_raw = qp->type == RNIC_QPT_RAW_PACKET;
    /* A raw SEND is one frame, as long as the port takes. */
    uint32_t mtu = is_raw ? RNIC_NET_MAX_FRAME : rnic_tp_mtu(qp);
    uint64_t len = 0;
    unsigned i;

    memset(w, 0, offsetof(RnicSwqe, sge));
    w->idx = idx;
    w->state = RNIC_SWQE_PENDING;
    tp->req.fetch_idx++;

    if (!rnic_ring_read(s, &qp->sq.ring, idx, raw, sizeof(raw))) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_QP_OP_ERR, "WQE not readable");
        return false;
    }
    memcpy(&hdr, raw, sizeof(hdr));
    w->wr_id = le64_to_cpu(hdr.wr_id);
    w->opcode = hdr.opcode;
    w->flags = hdr.flags;
    w->num_sge = hdr.num_sge;
    memcpy(&w->imm_inv, &hdr.imm_inv, 4);     /* kept as raw bytes */
    w->rkey = le32_to_cpu(hdr.rkey);
    w->remote_addr = le64_to_cpu(hdr.remote_addr);
    w->compare_add = le64_to_cpu(hdr.compare_add);
    w->swap = le64_to_cpu(hdr.swap);
    w->ud_qpn = le32_to_cpu(hdr.ud_qpn) & RNIC_QPN_MASK;
    w->ud_qkey = le32_to_cpu(hdr.ud_qkey);
    if (ud) {
        struct rnic_av av;

        memcpy(&av, raw + sizeof(hdr), sizeof(av));
        rnic_av_from_abi(&w->av, &av);
    }

    if (rnic_wr_is_local(w->opcode)) {
        /* Any QP type; nothing of it goes on the wire. */
        w->fr_npages = le32_to_cpu(hdr.inline_len);
        w->fr_shift = hdr.rsvd_11;
        w->flags &= ~RNIC_WQE_INLINE;
        w->num_sge = 0;
        w->npkts = 0;
        trace_rnic_tp_wqe(qp->qpn, idx, w->opcode, 0, tp->req.psn, 0);
        return true;
    }
    if (!rnic_wr_valid_for_qp(qp, w->opcode)) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_QP_OP_ERR,
                       "opcode not supported on this QP type");
        return false;
    }

    if (rnic_wr_is_place(w->opcode)) {
        /* Everything is in the WQE: no SGEs, no payload to gather. */
        w->flags &= ~RNIC_WQE_INLINE;
        w->num_sge = 0;
        if (w->opcode == RNIC_WR_FLUSH && w->swap > UINT32_MAX &&
            !(ldl_le_p(&w->imm_inv) & RNIC_FLUSH_LEVEL_MASK)) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR,
                           "FLUSH range above 4 GiB");
            return false;
        }
    }
    if (w->flags & RNIC_WQE_INLINE) {
        uint32_t ilen = le32_to_cpu(hdr.inline_len);

        if (rnic_wr_is_rd_atomic(w->opcode)) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_QP_OP_ERR,
                           "inline READ/ATOMIC");
            return false;
        }
        if (ilen > max_inl) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR,
                           "inline data above max_inline");
            return false;
        }
        w->inline_data = true;
        w->num_sge = 0;
        memcpy(w->inl, raw + sge_off, ilen);
        len = ilen;
    } else {
        if (w->num_sge > max_sge) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR,
                           "num_sge above max_send_sge");
            return false;
        }
        for (i = 0; i < w->num_sge; i++) {
            struct rnic_sge sge;

            memcpy(&sge, raw + sge_off + i * sizeof(sge), sizeof(sge));
            w->sge[i].addr = le64_to_cpu(sge.addr);
            w->sge[i].length = le32_to_cpu(sge.length);
            w->sge[i].lkey = le32_to_cpu(sge.lkey);
            len += w->sge[i].length;       /* 12 x 32 bits: cannot wrap */
        }
    }

    if (w->opcode == RNIC_WR_ATOMIC_CMP_SWP ||
        w->opcode == RNIC_WR_ATOMIC_FETCH_ADD) {
        if (w->num_sge < 1 || w->sge[0].length < 8) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR,
                           "atomic needs an 8-byte SGE");
            return false;
        }
        /*
         * A misaligned remote address is the responder's to refuse (an
         * invalid-request NAK, so REM_INV_REQ_ERR here), as on the wire
         * between any two RNICs.
         */
        w->num_sge = 1;
        w->sge[0].length = 8;
        len = 8;
    }
    if (len > 0x80000000ULL) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR, "message above 2 GiB");
        return false;
    }
    w->length = len;
    if (ud && len > mtu) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR, "UD message above MTU");
        return false;
    }
    if (is_raw && (len < RNIC_ETH_HLEN || len > mtu)) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR, "raw frame length");
        return false;
    }
    /* An atomic takes one PSN; a READ one per response packet. */
    if (rnic_wr_is_rd_atomic(w->opcode) && w->opcode != RNIC_WR_RDMA_READ) {
        w->npkts = 1;
    } else {
        w->npkts = rnic_tp_npkts(len, mtu);
    }
    if (w->npkts > RNIC_TP_MAX_MSG_PKTS) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_LEN_ERR, "message too many packets");
        return false;
    }

    /*
     * Check the local keys now so that a bad key fails the WQE before
     * anything reaches the wire.  Gathering checks them again.
     */
    for (i = 0; i < w->num_sge; i++) {
        uint32_t access = rnic_wr_is_rd_atomic(w->opcode) ?
                          RNIC_ACCESS_LOCAL_WRITE : 0;

        if (!w->sge[i].length) {
            continue;
        }
        if (rnic_mr_check(s, w->sge[i].lkey, qp->pdn, access,
                          w->sge[i].addr, w->sge[i].length, NULL) !=
            RNIC_MEM_OK) {
            rnic_swqe_fail(qp, w, RNIC_WC_LOC_PROT_ERR, "bad lkey");
            return false;
        }
    }
    trace_rnic_tp_wqe(qp->qpn, idx, w->opcode, w->length, tp->req.psn,
                      w->npkts);
    return true;
}

/* ---- Sending ---- */

static uint8_t rnic_req_opcode(RnicQP *qp, RnicSwqe *w, uint32_t pkt)
{
    bool first = pkt == 0;
    bool last = pkt + 1 == w->npkts;
    uint8_t base = qp->type == RNIC_QPT_UC ? RNIC_OPC_UC : RNIC_OPC_RC;

    switch (w->opcode) {
    case RNIC_WR_SEND:
    case RNIC_WR_SEND_IMM:
    case RNIC_WR_SEND_INV:
        if (rnic_qp_is_ud(qp)) {
            return w->opcode == RNIC_WR_SEND_IMM ?
                   RNIC_OPC_UD_SEND_ONLY_WITH_IMMEDIATE :
                   RNIC_OPC_UD_SEND_ONLY;
        }
        if (!last) {
            return base | (first ? RNIC_OPC_SEND_FIRST : RNIC_OPC_SEND_MIDDLE);
        }
        if (w->opcode == RNIC_WR_SEND_IMM) {
            return base | (first ? RNIC_OPC_SEND_ONLY_WITH_IMMEDIATE :
                                   RNIC_OPC_SEND_LAST_WITH_IMMEDIATE);
        }
        if (w->opcode == RNIC_WR_SEND_INV) {
            return base | (first ? RNIC_OPC_SEND_ONLY_WITH_INVALIDATE :
                                   RNIC_OPC_SEND_LAST_WITH_INVALIDATE);
        }
        return base | (first ? RNIC_OPC_SEND_ONLY : RNIC_OPC_SEND_LAST);
    case RNIC_WR_RDMA_WRITE:
    case RNIC_WR_RDMA_WRITE_IMM:
        if (!last) {
            return base | (first ? RNIC_OPC_RDMA_WRITE_FIRST :
                                   RNIC_OPC_RDMA_WRITE_MIDDLE);
        }
        if (w->opcode == RNIC_WR_RDMA_WRITE_IMM) {
            return base | (first ? RNIC_OPC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
                                   RNIC_OPC_RDMA_WRITE_LAST_WITH_IMMEDIATE);
        }
        return base | (first ? RNIC_OPC_RDMA_WRITE_ONLY :
                               RNIC_OPC_RDMA_WRITE_LAST);
    case RNIC_WR_RDMA_READ:
        return RNIC_OPC_RC_RDMA_READ_REQUEST;
    case RNIC_WR_ATOMIC_CMP_SWP:
        return RNIC_OPC_RC_COMPARE_SWAP;
    case RNIC_WR_ATOMIC_WRITE:
        return RNIC_OPC_RC_ATOMIC_WRITE;
    case RNIC_WR_FLUSH:
        return RNIC_OPC_RC_FLUSH;
    default:
        return RNIC_OPC_RC_FETCH_ADD;
    }
}

/*
 * Executes a REG_MR, LOCAL_INV or BIND_MW when the requester reaches it,
 * so that it takes effect in order with the QP's other work requests.
 * Returns false if it failed (the slot is then in ERROR).
 */
static bool rnic_req_local_op(RnicState *s, RnicQP *qp, RnicSwqe *w,
                              int *budget)
{
    const char *why = NULL;
    bool ok;

    if (w->opcode == RNIC_WR_REG_MR) {
        RnicFastReg fr = {
            .key = w->rkey,
            .access = ldl_le_p(&w->imm_inv),
            .iova = w->remote_addr,
            .length = w->swap,
            .list = w->compare_add,
            .npages = w->fr_npages,
            .page_shift = w->fr_shift,
        };

        /* Reading the page list is work like sending packets. */
        *budget -= MIN(fr.npages / RNIC_PBL_ENTRIES_PER_PAGE, 1u << 16);
        ok = rnic_mr_fast_reg(s, qp->pdn, &fr);
    } else if (w->opcode == RNIC_WR_BIND_MW) {
        RnicMwBind b = {
            .rkey = w->rkey,
            .lkey = (uint32_t)w->compare_add,
            .access = ldl_le_p(&w->imm_inv),
            .va = w->remote_addr,
            .length = w->swap,
        };

        /* Windows are for the connected transports. */
        why = qp->type == RNIC_QPT_RC || qp->type == RNIC_QPT_UC ?
              rnic_mw_bind(s, qp->pdn, qp->qpn, &b) :
              "BIND_MW on a QP type without windows";
        if (why) {
            RNIC_GUEST_ERR(rnic_err_tp_mw_bind(qp->qpn, b.rkey, why), s,
                           "BIND_MW of rkey 0x%x on QP 0x%x: %s", b.rkey,
                           qp->qpn, why);
            rnic_swqe_fail(qp, w, RNIC_WC_MW_BIND_ERR, why);
            return false;
        }
        ok = true;
    } else {
        ok = rnic_key_invalidate(s, qp->pdn, 0, ldl_le_p(&w->imm_inv));
    }
    if (!ok) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_QP_OP_ERR,
                       w->opcode == RNIC_WR_REG_MR ? "REG_MR refused" :
                                                     "LOCAL_INV refused");
        return false;
    }
    w->state = RNIC_SWQE_DONE;
    return true;
}

/*
 * Sends packet 'send_pkt' of the current WQE.  Returns false if the WQE
 * failed while gathering (the slot is then in ERROR).
 */
/* A raw packet QP's SEND: the gathered bytes are the frame. */
static bool rnic_req_send_raw(RnicState *s, RnicQP *qp, RnicSwqe *w)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    g_autofree uint8_t *frame = g_malloc(w->length);
    RnicMemErr err = RNIC_MEM_OK;

    if (w->inline_data) {
        memcpy(frame, w->inl, w->length);
    } else {
        err = rnic_sgl_copy(s, qp->pdn, 0, w->sge, w->num_sge, 0, frame,
                            w->length, false);
    }
    if (err != RNIC_MEM_OK) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_PROT_ERR, rnic_mem_err_str(err));
        return false;
    }
    rnic_raw_tx(s, frame, w->length);
    s->cnt[RNIC_CNT_RAW_TX_PKTS]++;
    /* PSNs mean nothing on the wire here; they keep completion order. */
    req->psn = rnic_psn_add(req->psn, 1);
    req->max_psn = req->psn;
    req->send_idx++;
    req->send_pkt = 0;
    w->state = RNIC_SWQE_DONE;
    tp->comp.psn = req->psn;
    return true;
}

static bool rnic_req_send_pkt(RnicState *s, RnicQP *qp, RnicSwqe *w)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint8_t payload[4096];
    const RnicAV *av = rnic_qp_is_ud(qp) ? &w->av : &qp->av;
    const RnicOpcodeInfo *info;
    RnicPkt p;
    uint32_t pkt = req->send_pkt;
    uint32_t off = 0, n = 0;
    bool last;

    if (!rnic_tp_pkt_init(s, qp, av, &p)) {
        rnic_swqe_fail(qp, w, RNIC_WC_LOC_QP_OP_ERR, "no usable source GID");
        return false;
    }
    p.bth.opcode = rnic_req_opcode(qp, w, pkt);
    info = rnic_opcode_info(p.bth.opcode);
    p.bth.dqpn = rnic_qp_is_ud(qp) ? w->ud_qpn : qp->dest_qpn;
    p.bth.psn = req->psn;
    if (qp->type == RNIC_QPT_RC && s->prop.selective_repeat) {
        p.bth.resv6 = RNIC_BTH_X_SR;
    }

    if (w->opcode == RNIC_WR_RDMA_READ) {
        /* A re-request after a partial response asks only for the rest. */
        p.reth.va = w->remote_addr + w->read_off;
        p.reth.rkey = w->rkey;
        p.reth.dma_len = w->length - w->read_off;
        last = true;
    } else {
        last = pkt + 1 == w->npkts;
        off = pkt * mtu;
        n = MIN(mtu, w->length - off);
        if (info->flags & RNIC_HDR_RETH) {
            p.reth.va = w->remote_addr;
            p.reth.rkey = w->rkey;
            p.reth.dma_len = w->length;
        }
        if (info->flags & RNIC_HDR_ATOMIC_ETH) {
            p.atomic.va = w->remote_addr;
            p.atomic.rkey = w->rkey;
            if (w->opcode == RNIC_WR_ATOMIC_CMP_SWP) {
                p.atomic.swap_add = w->swap;
                p.atomic.compare = w->compare_add;
            } else {
                p.atomic.swap_add = w->compare_add;
            }
            n = 0;
        }
        if (w->opcode == RNIC_WR_FLUSH) {
            p.reth.dma_len = MIN(w->swap, UINT32_MAX);
            p.feth = ldl_le_p(&w->imm_inv) &
                     (RNIC_FLUSH_TYPE_MASK | RNIC_FLUSH_LEVEL_MASK);
        } else if (w->opcode == RNIC_WR_ATOMIC_WRITE) {
            /* The 8 bytes go out as they lie in memory. */
            p.reth.dma_len = 8;
            stq_le_p(payload, w->compare_add);
            n = 8;
        }
        if (info->flags & RNIC_HDR_IMMDT) {
            p.imm = ldl_be_p(&w->imm_inv);
        }
        if (info->flags & RNIC_HDR_IETH) {
            p.ieth_rkey = ldl_le_p(&w->imm_inv);
        }
        if (info->flags & RNIC_HDR_DETH) {
            /* A qkey with the top bit set means "use the QP's". */
            uint32_t own = qp->type == RNIC_QPT_GSI ? RNIC_TP_GSI_QKEY :
                           qp->type == RNIC_QPT_SMI ? 0 : qp->qkey;

            p.deth.qkey = (w->ud_qkey & 0x80000000u) ? own : w->ud_qkey;
            p.deth.src_qp = qp->qpn;
        }
        if (n && w->opcode != RNIC_WR_ATOMIC_WRITE) {
            RnicMemErr err = RNIC_MEM_OK;

            if (w->inline_data) {
                memcpy(payload, w->inl + off, n);
            } else {
                err = rnic_sgl_copy(s, qp->pdn, 0, w->sge, w->num_sge, off,
                                    payload, n, false);
            }
            if (err != RNIC_MEM_OK) {
                rnic_swqe_fail(qp, w, RNIC_WC_LOC_PROT_ERR,
                               rnic_mem_err_str(err));
                return false;
            }
        }
    }
    p.payload_len = n;
    /* Only messages that consume a receive WQE can be solicited. */
    if (last && (w->flags & RNIC_WQE_SOLICITED) &&
        w->opcode != RNIC_WR_RDMA_WRITE && !rnic_wr_is_rd_atomic(w->opcode)) {
        p.bth.se = true;
    }
    /*
     * The last packet of a resent run asks too: it may be a tail-loss
     * probe, which is answered by an ACK or a NAK; so does the last of a
     * resent hole, whose answer tells what the responder still lacks.
     */
    if (qp->type == RNIC_QPT_RC &&
        (last || ++req->noack_pkts >= RNIC_TP_ACKREQ_EVERY ||
         rnic_psn_add(req->psn, 1) == req->max_psn ||
         (req->sr_active && rnic_psn_add(req->psn, 1) == req->sr_end))) {
        p.bth.ack_req = true;
        req->noack_pkts = 0;
        if (!rnic_psn_lt(req->psn, req->max_psn)) {
            rnic_comp_rtt_start(tp, req->psn);
        }
    }

    if (rnic_psn_lt(req->psn, req->max_psn)) {
        s->cnt[RNIC_CNT_RETRANSMITS]++;
    }
    rnic_tp_xmit(s, qp, &p, payload);

    if (w->opcode == RNIC_WR_RDMA_READ) {
        req->psn = rnic_psn_add(w->last_psn, 1);
    } else {
        req->psn = rnic_psn_add(req->psn, 1);
    }
    if (rnic_psn_gt(req->psn, req->max_psn)) {
        req->max_psn = req->psn;
    }
    req->send_pkt++;
    if (last) {
        req->send_idx++;
        req->send_pkt = 0;
        /* UC and UD have no acknowledgements: sent means done. */
        w->state = qp->type == RNIC_QPT_RC ? RNIC_SWQE_SENT : RNIC_SWQE_DONE;
        if (qp->type != RNIC_QPT_RC) {
            tp->comp.psn = req->psn;
        }
    }
    if (req->sr_active && !rnic_psn_lt(req->psn, req->sr_end)) {
        /* The hole is resent: on from where sending was. */
        rnic_req_rewind(s, qp, req->sr_front);
    }
    return true;
}

/*
 * Moves the send position back (or forward) to 'psn', which must be the
 * oldest unacknowledged PSN: every packet from there is sent again.
 */
void rnic_req_rewind(RnicState *s, RnicQP *qp, uint32_t psn)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint16_t idx;

    req->sr_active = false;
    for (idx = qp->sq.ci; idx != req->fetch_idx; idx++) {
        RnicSwqe *w = rnic_tp_swqe(tp, idx);
        uint16_t j;

        if (!w->started || w->state == RNIC_SWQE_ERROR) {
            break;
        }
        /* Moving forward, past WQEs a resent hole left pending. */
        if (w->state == RNIC_SWQE_PENDING && rnic_psn_gt(psn, w->last_psn)) {
            w->state = RNIC_SWQE_SENT;
        }
        if (w->state == RNIC_SWQE_DONE || rnic_psn_lt(psn, w->first_psn) ||
            rnic_psn_gt(psn, w->last_psn)) {
            continue;
        }
        req->send_idx = idx;
        req->send_pkt = rnic_wr_is_rd_atomic(w->opcode) ?
                        0 : rnic_psn_diff(psn, w->first_psn);
        req->psn = psn;
        req->noack_pkts = 0;
        for (j = idx; j != req->fetch_idx; j++) {
            RnicSwqe *wj = rnic_tp_swqe(tp, j);

            if (wj->started && wj->state == RNIC_SWQE_SENT) {
                wj->state = RNIC_SWQE_PENDING;
            }
        }
        return;
    }
    /* Everything started is acknowledged: continue with what is next. */
    req->send_idx = idx;
    req->send_pkt = 0;
    req->psn = psn;
}

void rnic_req_resend_hole(RnicState *s, RnicQP *qp, uint32_t psn,
                          uint32_t n, uint32_t front)
{
    RnicReq *req = &qp->tp->req;
    uint32_t end = rnic_psn_add(psn, n);

    rnic_req_rewind(s, qp, psn);
    /* A hole that reaches where sending was is a plain rewind. */
    if (n && rnic_psn_lt(end, front)) {
        trace_rnic_tp_sr_resend(qp->qpn, psn, n, front);
        req->sr_active = true;
        req->sr_end = end;
        req->sr_front = front;
    }
}

void rnic_req_reset(RnicTransport *tp)
{
    RnicQP *qp = tp->qp;

    memset(&tp->req, 0, sizeof(tp->req));
    tp->req.fetch_idx = qp->sq.ci;
    tp->req.send_idx = qp->sq.ci;
    tp->req.psn = qp->sq_psn & RNIC_PSN_MASK;
    tp->req.max_psn = tp->req.psn;
    tp->req.cwnd = RNIC_TP_CWND_INIT;
    tp->req.cwnd_psn = tp->req.psn;
    tp->req.cnp_psn = tp->req.psn;
    memset(tp->swqe, 0, sizeof(tp->swqe));
}

void rnic_req_run(RnicState *s, RnicQP *qp, int *budget)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint32_t max_rd = MAX(qp->max_rd_atomic, 1);

    if (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) {
        return;
    }
    if (tp->comp.wait != RNIC_COMP_RUN) {
        return;
    }
    while (*budget > 0 && qp->state != RNIC_QPS_ERR) {
        RnicSwqe *w;

        if (req->send_idx == req->fetch_idx) {
            /* SQD finishes what it started but fetches nothing new. */
            if (qp->state != RNIC_QPS_RTS ||
                rnic_idx_diff(qp->sq.pi, req->fetch_idx) == 0 ||
                rnic_idx_diff(req->fetch_idx, qp->sq.ci) >=
                RNIC_TP_MAX_INFLIGHT) {
                break;
            }
            (*budget)--;
            if (!rnic_req_fetch(s, qp)) {
                rnic_comp_advance(s, qp);
                break;
            }
        }
        w = rnic_tp_swqe(tp, req->send_idx);
        if (w->state == RNIC_SWQE_ERROR) {
            break;
        }
        if (w->state != RNIC_SWQE_PENDING) {
            req->send_idx++;
            req->send_pkt = 0;
            continue;
        }
        if (qp->type == RNIC_QPT_RC &&
            rnic_psn_diff(req->psn, tp->comp.psn) >= (int32_t)req->cwnd) {
            break;
        }
        if (!w->started) {
            bool rd = rnic_wr_is_rd_atomic(w->opcode);

            if ((w->flags & RNIC_WQE_FENCE) && req->rd_outstanding) {
                break;
            }
            if (rd && req->rd_outstanding >= max_rd) {
                break;
            }
            w->started = true;
            w->first_psn = req->psn;
            w->last_psn = rnic_psn_add(req->psn, w->npkts - 1);
            if (rd) {
                req->rd_outstanding++;
            }
        }
        (*budget)--;
        if (rnic_wr_is_local(w->opcode)) {
            req->send_idx++;
            req->send_pkt = 0;
            rnic_req_local_op(s, qp, w, budget);
            rnic_comp_advance(s, qp);
            continue;
        }
        if (qp->type == RNIC_QPT_RAW_PACKET ? !rnic_req_send_raw(s, qp, w)
                                            : !rnic_req_send_pkt(s, qp, w)) {
            rnic_comp_advance(s, qp);
            break;
        }
        if (w->state == RNIC_SWQE_DONE) {
            rnic_comp_advance(s, qp);
        }
    }
    rnic_comp_arm_ack_timer(s, qp);
}
