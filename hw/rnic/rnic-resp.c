/*
 * rnic: RoCEv2 responder -- incoming requests to memory and receive
 * completions, ACK/NAK generation, read/atomic responses and CNPs
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The responder owns resp.epsn, the next request PSN it expects.  A
 * request at epsn is executed; one behind it is a duplicate (the ACK was
 * lost): it is acknowledged again, or its read/atomic response replayed;
 * one ahead of it means packets were lost: a single sequence NAK asks the
 * requester to go back.  READ responses are produced from rnic_tp_qp_run
 * a bounded number of packets at a time, so a large READ never stalls
 * the main loop; ACKs for later requests wait behind them to keep the
 * response stream in PSN order.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "rnic-transport.h"
#include "trace.h"

/* Read response packets generated at once when a READ arrives. */
#define RNIC_TP_RD_INLINE_BUDGET    16

/*
 * CQE imm_inv holds ImmDt in wire byte order once rnic_cq_post() has
 * stored it little-endian.
 */
static uint32_t rnic_imm_to_cqe(uint32_t imm)
{
    uint8_t b[4];

    stl_be_p(b, imm);
    return ldl_le_p(b);
}

/* Requests with responses to send: all, or only first-time ones. */
static unsigned rnic_resp_rd_npending(RnicTransport *tp, bool first_only)
{
    unsigned i, n = 0;

    for (i = 0; i < RNIC_TP_RD_RING; i++) {
        const RnicRdReq *rd = &tp->resp.rd[i];

        if (rd->valid && rd->pending && !(first_only && rd->replay)) {
            n++;
        }
    }
    return n;
}

static bool rnic_resp_rd_pending(RnicTransport *tp)
{
    return rnic_resp_rd_npending(tp, false) != 0;
}

/* ---- ACK/NAK ---- */

static void rnic_resp_send_ack(RnicState *s, RnicQP *qp, uint8_t syndrome,
                               uint32_t psn, uint8_t hole)
{
    RnicTransport *tp = qp->tp;
    RnicPkt p;

    if (!rnic_tp_pkt_init(s, qp, &qp->av, &p)) {
        trace_rnic_tp_resp_err(qp->qpn, "no usable source GID for ACK", psn);
        return;
    }
    p.bth.opcode = RNIC_OPC_RC_ACKNOWLEDGE;
    p.bth.dqpn = qp->dest_qpn;
    p.bth.psn = psn;
    p.aeth.syndrome = syndrome;
    p.aeth.msn = tp->resp.msn;
    p.bth.resv6 = hole;
    trace_rnic_tp_ack_tx(qp->qpn, rnic_aeth_str(syndrome), psn, tp->resp.msn);
    rnic_tp_xmit(s, qp, &p, NULL);
    tp->resp.pkts_since_ack = 0;
    tp->resp.ack_owed = false;
}

/*
 * Sends an ACK/NAK now, or after the queued read responses so that the
 * requester sees responses in PSN order.  A later one replaces an
 * earlier deferred one: ACKs are cumulative.
 */
static void rnic_resp_ack_hole(RnicState *s, RnicQP *qp, uint8_t syndrome,
                               uint32_t psn, uint8_t hole)
{
    RnicTransport *tp = qp->tp;

    if (qp->type != RNIC_QPT_RC) {
        return;
    }
    /* This one, sent or deferred, covers what the batch owed. */
    tp->resp.ack_owed = false;
    if (rnic_resp_rd_pending(tp)) {
        tp->resp.ack_deferred = true;
        tp->resp.ack_syndrome = syndrome;
        tp->resp.ack_psn = psn;
        tp->resp.ack_hole = hole;
        return;
    }
    rnic_resp_send_ack(s, qp, syndrome, psn, hole);
}

static void rnic_resp_ack(RnicState *s, RnicQP *qp, uint8_t syndrome,
                          uint32_t psn)
{
    rnic_resp_ack_hole(s, qp, syndrome, psn, 0);
}

void rnic_resp_nak_seq(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    tp->resp.nak_sent = true;
    s->cnt[RNIC_CNT_SEQ_NAK_SENT]++;
    rnic_resp_ack_hole(s, qp, rnic_aeth_nak(RNIC_NAK_PSN_SEQ_ERR),
                       tp->resp.epsn, rnic_ooo_hole(tp));
}

/*
 * An ACK that in-sequence packets ask for waits for the end of the
 * receive batch: ACKs are cumulative, and one ACK for a burst of small
 * messages saves the requester as many frames to receive and handle as
 * it saves us to send.  The batch is what the netdev delivered at once,
 * so the wait is no longer than handling it.
 */
static void rnic_resp_owe_ack(RnicState *s, RnicQP *qp)
{
    RnicResp *resp = &qp->tp->resp;

    if (resp->ack_owed) {
        return;
    }
    if (s->n_ack_owed == RNIC_ACK_OWED_MAX) {
        rnic_resp_ack(s, qp, rnic_aeth_ack(RNIC_AETH_CREDITS_INVALID),
                      rnic_psn_add(resp->epsn, -1));
        return;
    }
    resp->ack_owed = true;
    s->ack_owed[s->n_ack_owed++] = qp->qpn;
}

/* The receive batch is over: every QP it left owing an ACK sends it. */
void rnic_resp_flush_owed_acks(RnicState *s)
{
    uint32_t i;

    for (i = 0; i < s->n_ack_owed; i++) {
        RnicQP *qp = rnic_qp_get(s, s->ack_owed[i]);

        /* A NAK or a state change since took the ACK's place. */
        if (!qp || !qp->tp || !qp->tp->resp.ack_owed ||
            qp->state == RNIC_QPS_ERR || qp->state == RNIC_QPS_RESET) {
            continue;
        }
        rnic_resp_ack(s, qp, rnic_aeth_ack(RNIC_AETH_CREDITS_INVALID),
                      rnic_psn_add(qp->tp->resp.epsn, -1));
        qp->tp->resp.ack_owed = false;
    }
    s->n_ack_owed = 0;
}

/* A request the QP cannot execute: NAK it and move the QP to ERR. */
static void rnic_resp_fatal(RnicState *s, RnicQP *qp, uint32_t psn,
                            unsigned nak, uint8_t eqe, const char *why)
{
    RnicTransport *tp = qp->tp;

    trace_rnic_tp_resp_err(qp->qpn, why, psn);
    if (qp->type == RNIC_QPT_RC) {
        /* Pending read responses will never go out: NAK right away. */
        memset(tp->resp.rd, 0, sizeof(tp->resp.rd));
        tp->resp.ack_deferred = false;
        rnic_resp_send_ack(s, qp, rnic_aeth_nak(nak), psn, 0);
    }
    if (qp->state != RNIC_QPS_ERR) {
        rnic_qp_fatal(s, qp, eqe);
    }
}

/* ---- Receive WQEs ---- */

void rnic_resp_recv_cqe(RnicState *s, RnicQP *qp, struct rnic_cqe *cqe)
{
    RnicTransport *tp = qp->tp;
    RnicRwqe *r = &tp->resp.rwqe;

    cqe->wr_id = r->wr_id;
    cqe->qpn = qp->qpn;
    cqe->wqe_idx = r->idx & r->slot_mask;
    trace_rnic_tp_recv_cqe(qp->qpn, r->idx, cqe->opcode, cqe->status,
                           cqe->byte_len);
    rnic_cq_post(s, qp->recv_cqn, cqe);
    if (!r->from_srq) {
        qp->rq.ci = qp->rq.ci + 1;
    }
    r->valid = false;
}

/* Completes the held receive WQE with an error status. */
void rnic_resp_recv_err(RnicState *s, RnicQP *qp, uint8_t status)
{
    struct rnic_cqe cqe = {
        .opcode = RNIC_WC_RECV,
        .status = status,
    };

    if (qp->tp->resp.rwqe.valid) {
        rnic_resp_recv_cqe(s, qp, &cqe);
    }
    qp->tp->resp.msg = RNIC_RESP_MSG_NONE;
}

/* Copies the next RQ (or SRQ) WQE into resp.rwqe and validates it. */
RnicRwqeGet rnic_resp_get_rwqe(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    RnicRwqe *r = &tp->resp.rwqe;
    uint8_t raw[RNIC_RQ_WQE_SIZE];
    struct rnic_recv_wqe hdr;
    const RnicRing *ring;
    uint32_t max_sge;
    bool ok;
    unsigned i;

    if (r->valid) {
        return RNIC_RWQE_OK;
    }
    memset(r, 0, sizeof(*r));
    if (qp->srqn) {
        RnicSRQ *srq = rnic_srq_get(s, qp->srqn);

        if (!srq || rnic_idx_diff(srq->wq.pi, srq->wq.ci) == 0) {
            return RNIC_RWQE_NONE;
        }
        ring = &srq->wq.ring;
        /* Unmasked: the SRQ may be resized before the CQE is polled. */
        r->slot_mask = UINT16_MAX;
        max_sge = srq->wq.max_sge;
        r->from_srq = true;
        r->idx = srq->wq.ci;
        /* Claimed now: other QPs sharing the SRQ must not take it. */
        srq->wq.ci = srq->wq.ci + 1;
        if (srq->limit && rnic_idx_diff(srq->wq.pi, srq->wq.ci) <
            srq->limit) {
            srq->limit = 0;         /* one-shot, re-armed by MODIFY_SRQ */
            rnic_eq_post(s, 0, RNIC_EQE_SRQ_LIMIT, qp->srqn, 0);
        }
    } else {
        if (rnic_idx_diff(qp->rq.pi, qp->rq.ci) == 0) {
            return RNIC_RWQE_NONE;
        }
        ring = &qp->rq.ring;
        r->slot_mask = (1u << ring->log_size) - 1;
        max_sge = qp->max_recv_sge;
        r->idx = qp->rq.ci;
    }
    r->valid = true;
    ok = rnic_ring_read(s, ring, r->idx, raw, sizeof(raw));
    /* Nothing of a WQE that could not be read is used, not even zeros. */
    if (ok) {
        memcpy(&hdr, raw, sizeof(hdr));
        r->wr_id = le64_to_cpu(hdr.wr_id);
        r->num_sge = hdr.num_sge;
    }
    if (!ok || r->num_sge > MIN(max_sge, RNIC_RQ_MAX_SGE)) {
        trace_rnic_err_tp_rwqe(qp->qpn, r->idx,
                               ok ? "num_sge above max" : "not readable");
        rnic_resp_recv_err(s, qp, ok ? RNIC_WC_LOC_LEN_ERR :
                                       RNIC_WC_LOC_QP_OP_ERR);
        return RNIC_RWQE_BAD;
    }
    for (i = 0; i < r->num_sge; i++) {
        struct rnic_sge sge;

        memcpy(&sge, raw + sizeof(hdr) + i * sizeof(sge), sizeof(sge));
        r->sge[i].addr = le64_to_cpu(sge.addr);
        r->sge[i].length = le32_to_cpu(sge.length);
        r->sge[i].lkey = le32_to_cpu(sge.lkey);
        r->total += r->sge[i].length;
    }
    return RNIC_RWQE_OK;
}

void rnic_rq_flush(RnicState *s, RnicQP *qp, int *budget)
{
    RnicTransport *tp = qp->tp;
    uint32_t n = 0;

    if (tp->resp.rwqe.valid && tp->resp.rwqe.from_srq) {
        rnic_resp_recv_err(s, qp, RNIC_WC_WR_FLUSH_ERR);
        n++;
    }
    tp->resp.rwqe.valid = false;
    tp->resp.msg = RNIC_RESP_MSG_NONE;
    memset(tp->resp.rd, 0, sizeof(tp->resp.rd));
    tp->resp.ack_deferred = false;
    tp->resp.ack_owed = false;
    if (qp->srqn) {
        goto out;
    }
    while ((uint16_t)qp->rq.ci != (uint16_t)qp->rq.pi && *budget > 0) {
        struct rnic_recv_wqe hdr;
        struct rnic_cqe cqe = {
            .qpn = qp->qpn,
            .wqe_idx = qp->rq.ci & ((1u << qp->rq.ring.log_size) - 1),
            .opcode = RNIC_WC_RECV,
            .status = RNIC_WC_WR_FLUSH_ERR,
        };

        if (rnic_ring_read(s, &qp->rq.ring, qp->rq.ci, &hdr, sizeof(hdr))) {
            cqe.wr_id = le64_to_cpu(hdr.wr_id);
        }
        trace_rnic_tp_recv_cqe(qp->qpn, qp->rq.ci, cqe.opcode, cqe.status, 0);
        rnic_cq_post(s, qp->recv_cqn, &cqe);
        qp->rq.ci = qp->rq.ci + 1;
        n++;
        (*budget)--;
    }
out:
    if (n) {
        trace_rnic_tp_flush(qp->qpn, 0, n);
    }
}

/* ---- SEND ---- */

static void rnic_resp_send(RnicState *s, RnicQP *qp, const RnicPkt *p,
                           const uint8_t *frame, uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    RnicResp *resp = &tp->resp;
    RnicRwqe *r = &resp->rwqe;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint32_t n = p->payload_len;
    RnicMemErr err;

    if (flags & RNIC_OPF_FIRST) {
        if (resp->msg != RNIC_RESP_MSG_NONE) {
            if (qp->type == RNIC_QPT_UC) {
                /* UC: the unfinished message is simply abandoned. */
                resp->msg = RNIC_RESP_MSG_NONE;
                if (r->valid) {
                    r->off = 0;
                }
            } else {
                rnic_resp_recv_err(s, qp, RNIC_WC_REM_INV_REQ_ERR);
                rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                                RNIC_EQE_QP_REQ_ERR, "SEND_FIRST mid-message");
                return;
            }
        }
        switch (rnic_resp_get_rwqe(s, qp)) {
        case RNIC_RWQE_OK:
            break;
        case RNIC_RWQE_NONE:
            if (qp->type == RNIC_QPT_RC) {
                trace_rnic_tp_resp_psn(qp->qpn, "rnr", p->bth.psn, resp->epsn);
                s->cnt[RNIC_CNT_RNR_NAK_SENT]++;
                resp->nak_sent = true;
                rnic_resp_ack(s, qp, rnic_aeth_rnr_nak(qp->min_rnr_timer),
                              p->bth.psn);
            } else {
                trace_rnic_tp_rx_drop(qp->qpn, "no receive WQE");
                s->cnt[RNIC_CNT_RX_DROPPED]++;
            }
            return;
        default:
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_OP_ERR,
                            RNIC_EQE_QP_FATAL, "bad receive WQE");
            return;
        }
        r->off = 0;
        resp->msg = RNIC_RESP_MSG_SEND;
    } else if (resp->msg != RNIC_RESP_MSG_SEND || !r->valid) {
        if (qp->type == RNIC_QPT_UC) {
            trace_rnic_tp_rx_drop(qp->qpn, "UC SEND without FIRST");
            s->cnt[RNIC_CNT_RX_DROPPED]++;
            resp->epsn = rnic_psn_add(p->bth.psn, 1);
            return;
        }
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "SEND without FIRST");
        return;
    }

    if (n > mtu || (!(flags & RNIC_OPF_LAST) && n != mtu)) {
        rnic_resp_recv_err(s, qp, RNIC_WC_REM_INV_REQ_ERR);
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "SEND packet length");
        return;
    }
    if (r->off + n > r->total) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_LEN_ERR);
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "SEND longer than receive WQE");
        return;
    }
    err = rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, r->sge,
                        r->num_sge, r->off, (void *)(frame + p->payload_off),
                        n, true);
    if (err != RNIC_MEM_OK) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_PROT_ERR);
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_OP_ERR,
                        RNIC_EQE_QP_FATAL, rnic_mem_err_str(err));
        return;
    }
    r->off += n;
    resp->epsn = rnic_psn_add(p->bth.psn, 1);

    if (flags & RNIC_OPF_LAST) {
        struct rnic_cqe cqe = {
            .opcode = RNIC_WC_RECV,
            .status = RNIC_WC_SUCCESS,
            .byte_len = r->off,
        };

        /*
         * A key the peer may not invalidate ends the message in error
         * (IBA class J): reporting WITH_INV would tell the consumer that
         * a registration is gone while it still admits remote access.
         */
        if ((flags & RNIC_HDR_IETH) &&
            !rnic_key_invalidate(s, qp->pdn, qp->qpn, p->ieth_rkey)) {
            rnic_resp_recv_err(s, qp, RNIC_WC_REM_INV_REQ_ERR);
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                            RNIC_EQE_QP_REQ_ERR,
                            "SEND_INV of a key it may not invalidate");
            return;
        }

        if (flags & RNIC_HDR_IMMDT) {
            cqe.flags |= RNIC_CQE_WITH_IMM;
            cqe.imm_inv = rnic_imm_to_cqe(p->imm);  /* stored as on the wire */
        }
        if (flags & RNIC_HDR_IETH) {
            cqe.flags |= RNIC_CQE_WITH_INV;
            cqe.imm_inv = p->ieth_rkey;
        }
        if (p->bth.se) {
            cqe.flags |= RNIC_CQE_SOLICITED;
        }
        rnic_resp_recv_cqe(s, qp, &cqe);
        resp->msg = RNIC_RESP_MSG_NONE;
        resp->msn = rnic_msn_add(resp->msn, 1);
    }
}

/* ---- RDMA WRITE ---- */

static void rnic_resp_write(RnicState *s, RnicQP *qp, const RnicPkt *p,
                            const uint8_t *frame, uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    RnicResp *resp = &tp->resp;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint32_t n = p->payload_len;
    RnicMemErr err;
    RnicMR *mr;

    /*
     * With immediate data a receive WQE is needed before touching memory
     * or message state, so that an RNR retry finds everything unchanged.
     */
    if (flags & RNIC_HDR_IMMDT) {
        switch (rnic_resp_get_rwqe(s, qp)) {
        case RNIC_RWQE_OK:
            break;
        case RNIC_RWQE_NONE:
            if (qp->type == RNIC_QPT_RC) {
                s->cnt[RNIC_CNT_RNR_NAK_SENT]++;
                resp->nak_sent = true;
                rnic_resp_ack(s, qp, rnic_aeth_rnr_nak(qp->min_rnr_timer),
                              p->bth.psn);
            } else {
                s->cnt[RNIC_CNT_RX_DROPPED]++;
                resp->msg = RNIC_RESP_MSG_NONE;
                resp->epsn = rnic_psn_add(p->bth.psn, 1);
            }
            return;
        default:
            resp->msg = RNIC_RESP_MSG_NONE;
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_OP_ERR,
                            RNIC_EQE_QP_FATAL, "bad receive WQE");
            return;
        }
    }
    if (flags & RNIC_OPF_FIRST) {
        if (resp->msg != RNIC_RESP_MSG_NONE && qp->type == RNIC_QPT_RC) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                            RNIC_EQE_QP_REQ_ERR, "WRITE_FIRST mid-message");
            return;
        }
        resp->msg = RNIC_RESP_MSG_NONE;
        if (!(qp->access_flags & RNIC_ACCESS_REMOTE_WRITE)) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                            RNIC_EQE_QP_ACCESS_ERR, "QP lacks REMOTE_WRITE");
            return;
        }
        if (p->reth.dma_len &&
            rnic_rkey_check(s, p->reth.rkey, qp->pdn, qp->qpn,
                            RNIC_ACCESS_REMOTE_WRITE, p->reth.va,
                            p->reth.dma_len, NULL) != RNIC_MEM_OK) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                            RNIC_EQE_QP_ACCESS_ERR, "bad rkey for WRITE");
            return;
        }
        resp->write_va = p->reth.va;
        resp->write_rkey = p->reth.rkey;
        resp->write_resid = p->reth.dma_len;
        resp->write_len = p->reth.dma_len;
        resp->msg = RNIC_RESP_MSG_WRITE;
    } else if (resp->msg != RNIC_RESP_MSG_WRITE) {
        if (qp->type == RNIC_QPT_UC) {
            trace_rnic_tp_rx_drop(qp->qpn, "UC WRITE without FIRST");
            s->cnt[RNIC_CNT_RX_DROPPED]++;
            resp->epsn = rnic_psn_add(p->bth.psn, 1);
            return;
        }
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "WRITE without FIRST");
        return;
    }

    if (n > mtu || n > resp->write_resid ||
        (!(flags & RNIC_OPF_LAST) && n != mtu) ||
        ((flags & RNIC_OPF_LAST) && n != resp->write_resid)) {
        resp->msg = RNIC_RESP_MSG_NONE;
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "WRITE packet length");
        return;
    }
    if (n) {
        /* Checked per packet too: the MR may have gone since FIRST. */
        err = rnic_rkey_check(s, resp->write_rkey, qp->pdn, qp->qpn,
                              RNIC_ACCESS_REMOTE_WRITE, resp->write_va, n,
                              &mr);
        if (err == RNIC_MEM_OK) {
            err = rnic_mr_copy(s, mr, resp->write_va,
                               (void *)(frame + p->payload_off), n, true);
        }
        if (err != RNIC_MEM_OK) {
            resp->msg = RNIC_RESP_MSG_NONE;
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                            RNIC_EQE_QP_ACCESS_ERR, rnic_mem_err_str(err));
            return;
        }
    }
    resp->write_va += n;
    resp->write_resid -= n;
    resp->epsn = rnic_psn_add(p->bth.psn, 1);

    if (flags & RNIC_OPF_LAST) {
        resp->msg = RNIC_RESP_MSG_NONE;
        resp->msn = rnic_msn_add(resp->msn, 1);
        if (flags & RNIC_HDR_IMMDT) {
            struct rnic_cqe cqe = {
                .opcode = RNIC_WC_RECV_RDMA_WITH_IMM,
                .status = RNIC_WC_SUCCESS,
                .byte_len = resp->write_len,
                .flags = RNIC_CQE_WITH_IMM,
                .imm_inv = rnic_imm_to_cqe(p->imm),
            };

            if (p->bth.se) {
                cqe.flags |= RNIC_CQE_SOLICITED;
            }
            rnic_resp_recv_cqe(s, qp, &cqe);
        }
    }
}

/* ---- RDMA READ and ATOMIC ---- */

/*
 * A slot for a new READ or ATOMIC; NULL if the QP allows none, or if
 * max_dest_rd_atomic requests seen for the first time still wait for
 * their responses: a requester keeping to the limit never gets there.
 * Replays for duplicates do not count (the ring remembers the last
 * RNIC_TP_RD_RING requests for them), and a new request may take the
 * slot of one: the requester has moved past it.
 */
static RnicRdReq *rnic_resp_rd_alloc(RnicTransport *tp)
{
    RnicQP *qp = tp->qp;
    RnicRdReq *rd = &tp->resp.rd[tp->resp.rd_head % RNIC_TP_RD_RING];

    if (!qp->max_dest_rd_atomic ||
        rnic_resp_rd_npending(tp, true) >= qp->max_dest_rd_atomic ||
        (rd->valid && rd->pending && !rd->replay)) {
        return NULL;
    }
    tp->resp.rd_head++;
    memset(rd, 0, sizeof(*rd));
    rd->valid = true;
    return rd;
}

/* A one-packet request at @psn was executed: send its response now. */
static void rnic_resp_rd_answer_one(RnicState *s, RnicQP *qp, RnicRdReq *rd,
                                    uint32_t psn)
{
    RnicTransport *tp = qp->tp;
    int budget = 1;

    rd->psn = psn;
    rd->cur_psn = psn;
    rd->npkts = 1;
    rd->cur_first = true;
    rd->pending = true;
    tp->resp.epsn = rnic_psn_add(psn, 1);
    tp->resp.msn = rnic_msn_add(tp->resp.msn, 1);
    rnic_resp_run(s, qp, &budget);
}

static void rnic_resp_read(RnicState *s, RnicQP *qp, const RnicPkt *p)
{
    RnicTransport *tp = qp->tp;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint32_t len = p->reth.dma_len;
    uint32_t npkts = rnic_tp_npkts(len, mtu);
    RnicRdReq *rd;
    int budget = RNIC_TP_RD_INLINE_BUDGET;

    if (!(qp->access_flags & RNIC_ACCESS_REMOTE_READ)) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, "QP lacks REMOTE_READ");
        return;
    }
    if (len && rnic_rkey_check(s, p->reth.rkey, qp->pdn, qp->qpn,
                               RNIC_ACCESS_REMOTE_READ, p->reth.va, len,
                               NULL) != RNIC_MEM_OK) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, "bad rkey for READ");
        return;
    }
    if (npkts > RNIC_TP_MAX_MSG_PKTS) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "READ too long");
        return;
    }
    rd = rnic_resp_rd_alloc(tp);
    if (!rd) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "too many outstanding READs");
        return;
    }
    rd->psn = p->bth.psn;
    rd->npkts = npkts;
    rd->va = p->reth.va;
    rd->rkey = p->reth.rkey;
    rd->len = len;
    rd->cur_psn = p->bth.psn;
    rd->cur_va = p->reth.va;
    rd->cur_len = len;
    rd->cur_first = true;
    rd->pending = true;
    tp->resp.epsn = rnic_psn_add(p->bth.psn, npkts);
    tp->resp.msn = rnic_msn_add(tp->resp.msn, 1);
    /* Small reads answer at once; the rest continues from the BH. */
    rnic_resp_run(s, qp, &budget);
    if (rnic_resp_rd_pending(tp)) {
        rnic_qp_schedule(s, qp);
    }
}

static void rnic_resp_atomic(RnicState *s, RnicQP *qp, const RnicPkt *p)
{
    RnicTransport *tp = qp->tp;
    const RnicAtomicEth *a = &p->atomic;
    uint64_t val, orig;
    RnicRdReq *rd;
    RnicMemErr err;
    RnicMR *mr;

    if (!(qp->access_flags & RNIC_ACCESS_REMOTE_ATOMIC)) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, "QP lacks REMOTE_ATOMIC");
        return;
    }
    if (a->va & 7) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "misaligned atomic");
        return;
    }
    err = rnic_rkey_check(s, a->rkey, qp->pdn, qp->qpn,
                          RNIC_ACCESS_REMOTE_ATOMIC, a->va, 8, &mr);
    if (err == RNIC_MEM_OK) {
        err = rnic_mr_copy(s, mr, a->va, &val, 8, false);
    }
    if (err != RNIC_MEM_OK) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, "bad rkey for ATOMIC");
        return;
    }
    rd = rnic_resp_rd_alloc(tp);
    if (!rd) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "too many outstanding ATOMICs");
        return;
    }
    /* The BQL serialises every access the device makes. */
    orig = le64_to_cpu(val);
    if (p->bth.opcode == RNIC_OPC_RC_COMPARE_SWAP) {
        val = orig == a->compare ? a->swap_add : orig;
    } else {
        val = orig + a->swap_add;
    }
    val = cpu_to_le64(val);
    if (rnic_mr_copy(s, mr, a->va, &val, 8, true) != RNIC_MEM_OK) {
        rd->valid = false;
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, "ATOMIC write failed");
        return;
    }
    rd->atomic = true;
    rd->atomic_orig = orig;
    rnic_resp_rd_answer_one(s, qp, rd, p->bth.psn);
}

/*
 * FLUSH and ATOMIC WRITE (the memory placement extensions): checked like
 * the READ and ATOMIC they resemble, executed once, and answered by an
 * empty READ response that a duplicate gets again without a second
 * execution.  Everything the device writes reaches guest memory at once,
 * so global visibility needs nothing more; persistence syncs the range
 * to the guest RAM's backing store.
 */
static void rnic_resp_place(RnicState *s, RnicQP *qp, const RnicPkt *p,
                            const uint8_t *frame)
{
    RnicTransport *tp = qp->tp;
    bool flush = p->bth.opcode == RNIC_OPC_RC_FLUSH;
    uint32_t type = p->feth & RNIC_FLUSH_TYPE_MASK;
    uint32_t level = (p->feth & RNIC_FLUSH_LEVEL_MASK) >>
                     RNIC_FLUSH_LEVEL_SHIFT;
    uint64_t va = p->reth.va, len = p->reth.dma_len;
    uint32_t access;
    RnicRdReq *rd;
    RnicMemErr err;
    RnicMR *mr;

    if (flush) {
        if (!type || (type & ~(RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT)) ||
            level > RNIC_FLUSH_LEVEL_MR) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                            RNIC_EQE_QP_REQ_ERR, "bad FLUSH header");
            return;
        }
        access = ((type & RNIC_FLUSH_GLOBAL) ? RNIC_ACCESS_FLUSH_GLOBAL : 0) |
                 ((type & RNIC_FLUSH_PERSISTENT) ?
                  RNIC_ACCESS_FLUSH_PERSISTENT : 0);
        if (level == RNIC_FLUSH_LEVEL_MR) {
            len = 0;            /* the whole MR: no range to check */
        }
    } else {
        access = RNIC_ACCESS_REMOTE_WRITE;
        if (!(qp->access_flags & RNIC_ACCESS_REMOTE_WRITE)) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                            RNIC_EQE_QP_ACCESS_ERR, "QP lacks REMOTE_WRITE");
            return;
        }
        if (len != 8 || p->payload_len != 8 || (va & 7)) {
            rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                            RNIC_EQE_QP_REQ_ERR,
                            "ATOMIC WRITE not 8 aligned bytes");
            return;
        }
    }
    err = rnic_rkey_check(s, p->reth.rkey, qp->pdn, qp->qpn, access, va,
                          len, &mr);
    if (err != RNIC_MEM_OK) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, flush ?
                        "bad rkey for FLUSH" : "bad rkey for ATOMIC WRITE");
        return;
    }
    rd = rnic_resp_rd_alloc(tp);
    if (!rd) {
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_INVALID_REQ,
                        RNIC_EQE_QP_REQ_ERR, "too many outstanding READs");
        return;
    }
    if (!flush) {
        err = rnic_mr_copy(s, mr, va, (void *)(frame + p->payload_off), 8,
                           true);
    } else if (type & RNIC_FLUSH_PERSISTENT) {
        err = level == RNIC_FLUSH_LEVEL_MR ?
              rnic_mr_persist(s, mr, mr->iova, mr->length) :
              rnic_mr_persist(s, mr, va, len);
    }
    if (err != RNIC_MEM_OK) {
        rd->valid = false;
        rnic_resp_fatal(s, qp, p->bth.psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                        RNIC_EQE_QP_ACCESS_ERR, rnic_mem_err_str(err));
        return;
    }
    trace_rnic_tp_place(qp->qpn, flush ? "FLUSH" : "ATOMIC_WRITE",
                        p->bth.psn, va, len);
    rd->place = true;
    rnic_resp_rd_answer_one(s, qp, rd, p->bth.psn);
}

/* Sends the next response packet of 'rd'; false if the QP failed. */
static bool rnic_resp_rd_step(RnicState *s, RnicQP *qp, RnicRdReq *rd)
{
    RnicTransport *tp = qp->tp;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint8_t payload[4096];
    RnicPkt p;
    uint32_t n;
    bool last;

    if (!rnic_tp_pkt_init(s, qp, &qp->av, &p)) {
        trace_rnic_tp_resp_err(qp->qpn, "no usable source GID", rd->cur_psn);
        rd->pending = false;
        return true;
    }
    p.bth.dqpn = qp->dest_qpn;
    p.bth.psn = rd->cur_psn;
    p.aeth.syndrome = rnic_aeth_ack(RNIC_AETH_CREDITS_INVALID);
    p.aeth.msn = tp->resp.msn;

    if (rd->atomic) {
        p.bth.opcode = RNIC_OPC_RC_ATOMIC_ACKNOWLEDGE;
        p.atomic_orig = rd->atomic_orig;
        rd->pending = false;
        rnic_tp_xmit(s, qp, &p, NULL);
        return true;
    }

    n = MIN(mtu, rd->cur_len);
    last = n == rd->cur_len;
    if (rd->cur_first) {
        p.bth.opcode = last ? RNIC_OPC_RC_RDMA_READ_RESPONSE_ONLY :
                              RNIC_OPC_RC_RDMA_READ_RESPONSE_FIRST;
    } else {
        p.bth.opcode = last ? RNIC_OPC_RC_RDMA_READ_RESPONSE_LAST :
                              RNIC_OPC_RC_RDMA_READ_RESPONSE_MIDDLE;
    }
    if (n) {
        RnicMR *mr;
        RnicMemErr err = rnic_rkey_check(s, rd->rkey, qp->pdn, qp->qpn,
                                         RNIC_ACCESS_REMOTE_READ, rd->cur_va,
                                         n, &mr);

        if (err == RNIC_MEM_OK) {
            err = rnic_mr_copy(s, mr, rd->cur_va, payload, n, false);
        }
        if (err != RNIC_MEM_OK) {
            rnic_resp_fatal(s, qp, rd->cur_psn, RNIC_NAK_REMOTE_ACCESS_ERR,
                            RNIC_EQE_QP_ACCESS_ERR, rnic_mem_err_str(err));
            return false;
        }
    }
    p.payload_len = n;
    rnic_tp_xmit(s, qp, &p, payload);
    rd->cur_first = false;
    rd->cur_psn = rnic_psn_add(rd->cur_psn, 1);
    rd->cur_va += n;
    rd->cur_len -= n;
    if (last) {
        rd->pending = false;
    }
    return true;
}

/* Oldest queued request with responses still to send. */
static RnicRdReq *rnic_resp_rd_next(RnicTransport *tp)
{
    unsigned i;

    for (i = 0; i < RNIC_TP_RD_RING; i++) {
        RnicRdReq *rd = &tp->resp.rd[(tp->resp.rd_head + i) %
                                     RNIC_TP_RD_RING];

        if (rd->valid && rd->pending) {
            return rd;
        }
    }
    return NULL;
}

void rnic_resp_run(RnicState *s, RnicQP *qp, int *budget)
{
    RnicTransport *tp = qp->tp;
    RnicRdReq *rd;

    if (qp->type != RNIC_QPT_RC) {
        return;
    }
    while (*budget > 0 && (rd = rnic_resp_rd_next(tp))) {
        (*budget)--;
        if (!rnic_resp_rd_step(s, qp, rd)) {
            return;
        }
    }
    if (tp->resp.ack_deferred && !rnic_resp_rd_pending(tp)) {
        tp->resp.ack_deferred = false;
        rnic_resp_send_ack(s, qp, tp->resp.ack_syndrome, tp->resp.ack_psn,
                           tp->resp.ack_hole);
    }
}

/* ---- Duplicates ---- */

static void rnic_resp_duplicate(RnicState *s, RnicQP *qp, const RnicPkt *p,
                                uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    uint32_t mtu = rnic_tp_mtu(qp);
    unsigned i;

    s->cnt[RNIC_CNT_DUP_REQ]++;
    trace_rnic_tp_resp_psn(qp->qpn, "duplicate", p->bth.psn, tp->resp.epsn);
    if (!(flags & (RNIC_OPF_READ | RNIC_OPF_ATOMIC | RNIC_OPF_PLACE))) {
        /*
         * A retransmitted run of packets asks for an ACK at least on each
         * message's last packet; answering only those keeps a timeout
         * from turning into an ACK storm.
         */
        if (p->bth.ack_req) {
            rnic_resp_ack(s, qp, rnic_aeth_ack(RNIC_AETH_CREDITS_INVALID),
                          rnic_psn_add(tp->resp.epsn, -1));
        }
        return;
    }
    for (i = 0; i < RNIC_TP_RD_RING; i++) {
        RnicRdReq *rd = &tp->resp.rd[i];
        int32_t k = rnic_psn_diff(p->bth.psn, rd->psn);

        if (!rd->valid || k < 0 || (uint32_t)k >= rd->npkts) {
            continue;
        }
        if (rd->place) {
            if (!(flags & RNIC_OPF_PLACE) || k) {
                break;
            }
            rd->pending = true;     /* answer again, do not redo */
            rd->replay = true;
            rd->cur_psn = rd->psn;
            rd->cur_first = true;
        } else if (rd->atomic) {
            if (!(flags & RNIC_OPF_ATOMIC) || k) {
                break;
            }
            rd->pending = true;     /* replay the stored result */
            rd->replay = true;
            rd->cur_psn = rd->psn;
        } else {
            uint64_t skip = (uint64_t)k * mtu;

            /* A re-request asks for the tail of the original READ. */
            if (!(flags & RNIC_OPF_READ) || skip > rd->len ||
                p->reth.va != rd->va + skip ||
                p->reth.dma_len != rd->len - skip) {
                break;
            }
            rd->cur_psn = p->bth.psn;
            rd->cur_va = p->reth.va;
            rd->cur_len = p->reth.dma_len;
            rd->cur_first = true;
            rd->pending = true;
            rd->replay = true;
        }
        rnic_qp_schedule(s, qp);
        return;
    }
    trace_rnic_tp_rx_drop(qp->qpn, "duplicate READ/ATOMIC not remembered");
}

/* ---- UD receive ---- */

static void rnic_resp_ud(RnicState *s, RnicQP *qp, const RnicPkt *p,
                         const uint8_t *frame, uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    RnicRwqe *r = &tp->resp.rwqe;
    uint8_t grh[RNIC_TP_GRH_LEN] = { 0 };
    struct rnic_cqe cqe = {
        .opcode = RNIC_WC_RECV,
        .status = RNIC_WC_SUCCESS,
        .src_qp = p->deth.src_qp,
        .flags = RNIC_CQE_GRH,
        .net_type = p->roce_v1 ? RNIC_NET_ROCE_V1 :
                    p->ip_ver == 4 ? RNIC_NET_IPV4 : RNIC_NET_IPV6,
    };
    uint32_t want_qkey = qp->type == RNIC_QPT_GSI ? RNIC_TP_GSI_QKEY : qp->qkey;
    RnicMemErr err;

    /* QP0 has no Q_Key to check (IBA 14.2.3). */
    if (qp->type != RNIC_QPT_SMI && p->deth.qkey != want_qkey) {
        trace_rnic_tp_rx_drop(qp->qpn, "qkey mismatch");
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        if (p->ib) {
            rnic_ib_qkey_violation(s, p->ib_slid, p->ib_sl, p->deth.src_qp,
                                   p->deth.qkey, qp->type == RNIC_QPT_GSI);
        }
        return;
    }
    if (rnic_resp_get_rwqe(s, qp) != RNIC_RWQE_OK) {
        trace_rnic_tp_rx_drop(qp->qpn, "no receive WQE");
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        return;
    }
    /*
     * The GRH slot carries the IP header, IPv4 in its last 20 bytes, or
     * the GRH itself (RoCE v1 is IPv6-shaped: ip_ver 6).  On IB it holds
     * the GRH when the packet had one; the CQE names the sender by LID.
     */
    if (p->ib) {
        cqe.net_type = RNIC_NET_IB;
        cqe.slid = cpu_to_le16(p->ib_slid);
        cqe.sl = p->ib_sl;
        cqe.dlid_path_bits = p->ib_dlid & ((1u << s->ibp.lmc) - 1);
        if (p->ib_grh) {
            memcpy(grh, frame + p->l3_off + RNIC_LRH_LEN, RNIC_IPV6_HLEN);
        } else {
            cqe.flags &= ~RNIC_CQE_GRH;
        }
    } else if (p->ip_ver == 4) {
        memcpy(grh + 20, frame + p->l3_off, RNIC_IPV4_HLEN);
    } else {
        memcpy(grh, frame + p->l3_off, RNIC_IPV6_HLEN);
    }
    if ((uint64_t)p->payload_len + RNIC_TP_GRH_LEN > r->total) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_LEN_ERR);
        return;
    }
    err = rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, r->sge,
                        r->num_sge, 0, grh, sizeof(grh), true);
    if (err == RNIC_MEM_OK) {
        err = rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, r->sge,
                            r->num_sge, RNIC_TP_GRH_LEN,
                            (void *)(frame + p->payload_off), p->payload_len,
                            true);
    }
    if (err != RNIC_MEM_OK) {
        rnic_resp_recv_err(s, qp, RNIC_WC_LOC_PROT_ERR);
        rnic_qp_fatal(s, qp, RNIC_EQE_QP_FATAL);
        return;
    }
    cqe.byte_len = p->payload_len + RNIC_TP_GRH_LEN;
    if (flags & RNIC_HDR_IMMDT) {
        cqe.flags |= RNIC_CQE_WITH_IMM;
        cqe.imm_inv = rnic_imm_to_cqe(p->imm);
    }
    if (p->bth.se) {
        cqe.flags |= RNIC_CQE_SOLICITED;
    }
    rnic_resp_recv_cqe(s, qp, &cqe);
}

/* ---- Requests ---- */

void rnic_resp_request(RnicState *s, RnicQP *qp, const RnicPkt *p,
                       const uint8_t *frame, size_t len, uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    RnicResp *resp = &tp->resp;
    int32_t diff;

    if (qp->state == RNIC_QPS_RTR && !resp->comm_est) {
        resp->comm_est = true;
        rnic_eq_post(s, 0, RNIC_EQE_COMM_EST, qp->qpn, 0);
    }
    if (qp->type == RNIC_QPT_UD || qp->type == RNIC_QPT_GSI ||
        qp->type == RNIC_QPT_SMI) {
        rnic_resp_ud(s, qp, p, frame, flags);
        return;
    }

    diff = rnic_psn_diff(p->bth.psn, resp->epsn);
    if (qp->type == RNIC_QPT_UC) {
        /* UC: no retransmission; a gap abandons the current message. */
        if (diff != 0) {
            resp->msg = RNIC_RESP_MSG_NONE;
            if (resp->rwqe.valid) {
                resp->rwqe.off = 0;
            }
            if (!(flags & RNIC_OPF_FIRST)) {
                trace_rnic_tp_resp_psn(qp->qpn, "UC gap", p->bth.psn,
                                       resp->epsn);
                resp->epsn = rnic_psn_add(p->bth.psn, 1);
                return;
            }
        }
    } else if (diff < 0) {
        rnic_resp_duplicate(s, qp, p, flags);
        return;
    } else if (diff > 0) {
        trace_rnic_tp_resp_psn(qp->qpn, "ahead", p->bth.psn, resp->epsn);
        rnic_ooo_keep(s, qp, p, frame, len, flags, diff);
        /*
         * One NAK per gap, unless a packet seen ahead already comes again
         * asking for an answer: that is a tail-loss probe, which must
         * learn of a gap whose first NAK was lost.
         */
        if (!resp->nak_sent ||
            (p->bth.ack_req && rnic_psn_le(p->bth.psn, resp->ahead_max))) {
            rnic_resp_nak_seq(s, qp);
        }
        if (rnic_psn_gt(p->bth.psn, resp->ahead_max)) {
            resp->ahead_max = p->bth.psn;
        }
        return;
    }
    resp->nak_sent = false;
    resp->ahead_max = p->bth.psn;

    if (flags & RNIC_OPF_SEND) {
        rnic_resp_send(s, qp, p, frame, flags);
    } else if (flags & RNIC_OPF_WRITE) {
        rnic_resp_write(s, qp, p, frame, flags);
    } else if (flags & RNIC_OPF_READ) {
        rnic_resp_read(s, qp, p);
        return;                 /* the response is the acknowledgement */
    } else if (flags & RNIC_OPF_ATOMIC) {
        rnic_resp_atomic(s, qp, p);
        return;
    } else if (flags & RNIC_OPF_PLACE) {
        rnic_resp_place(s, qp, p, frame);
        return;
    }
    if (qp->state == RNIC_QPS_ERR || resp->nak_sent ||
        resp->epsn != rnic_psn_add(p->bth.psn, 1)) {
        return;                 /* failed, or an RNR NAK went out instead */
    }
    if (p->bth.ack_req || ++resp->pkts_since_ack >= RNIC_TP_ACK_EVERY) {
        rnic_resp_owe_ack(s, qp);
    }
}

/* ---- Congestion notification ---- */

/*
 * A request arrived marked CE: tell its requester with a CNP, at most
 * one per RNIC_TP_CNP_GAP_NS, so that a burst of marked packets does not
 * turn into a burst of notifications.
 */
void rnic_resp_ce(RnicState *s, RnicQP *qp)
{
    static const uint8_t rsvd[RNIC_CNP_RSVD_LEN];
    RnicResp *resp = &qp->tp->resp;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    RnicPkt p;

    s->cnt[RNIC_CNT_ECN_CE_RCVD]++;
    if (!s->prop.ecn || qp->type != RNIC_QPT_RC || now < resp->cnp_next_ns) {
        return;
    }
    if (!rnic_tp_pkt_init(s, qp, &qp->av, &p)) {
        return;
    }
    resp->cnp_next_ns = now + RNIC_TP_CNP_GAP_NS;
    p.tclass &= ~RNIC_ECN_MASK;         /* a CNP is not ECN-capable */
    p.bth.opcode = RNIC_OPC_CNP;
    p.bth.dqpn = qp->dest_qpn;
    p.payload_len = RNIC_CNP_RSVD_LEN;
    trace_rnic_tp_cnp(qp->qpn, "sent", qp->dest_qpn);
    if (rnic_tp_xmit(s, qp, &p, rsvd)) {
        s->cnt[RNIC_CNT_CNP_SENT]++;
    }
}

void rnic_resp_reset(RnicTransport *tp)
{
    RnicQP *qp = tp->qp;

    rnic_ooo_clear(tp);
    memset(&tp->resp, 0, sizeof(tp->resp));
    tp->resp.epsn = qp->rq_psn & RNIC_PSN_MASK;
    tp->resp.ahead_max = tp->resp.epsn;
}
