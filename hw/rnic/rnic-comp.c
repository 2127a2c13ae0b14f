/*
 * rnic: RoCEv2 completer -- ACKs, NAKs and read/atomic responses to
 * send completions, plus the local ACK and RNR timers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The completer owns comp.psn, the oldest PSN not yet acknowledged.
 * Acknowledgements are cumulative: an ACK for PSN p covers every PSN up
 * to p, and a read or atomic response implicitly acknowledges every
 * request before it.  WQEs are retired strictly in SQ order; an error on
 * one WQE completes it with that status and moves the QP to ERR, which
 * flushes everything behind it.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "rnic-transport.h"
#include "trace.h"

/* ---- Retiring WQEs ---- */

static void rnic_comp_post(RnicState *s, RnicQP *qp, RnicSwqe *w,
                           uint8_t status)
{
    struct rnic_cqe cqe = {
        .wr_id = w->wr_id,
        .qpn = qp->qpn,
        .byte_len = w->length,
        .wqe_idx = w->idx & ((1u << qp->sq.ring.log_size) - 1),
        .opcode = rnic_wr_to_wc_opcode(w->opcode),
        .status = status,
    };

    trace_rnic_tp_send_cqe(qp->qpn, w->idx, cqe.opcode, status);
    rnic_cq_post(s, qp->send_cqn, &cqe);
}

void rnic_comp_advance(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    bool progress = false;

    while ((uint16_t)qp->sq.ci != tp->req.fetch_idx &&
           qp->state != RNIC_QPS_ERR) {
        RnicSwqe *w = rnic_tp_swqe(tp, qp->sq.ci);
        uint16_t behind;
        uint8_t injected = 0;

        if (w->state == RNIC_SWQE_DONE) {
            injected = rnic_inject_wc(s, qp->qpn);
        }
        if (injected) {
            /* Host-injected: retired as if the WQE itself had failed. */
            w->state = RNIC_SWQE_ERROR;
            w->status = injected;
        }
        if (w->state == RNIC_SWQE_DONE) {
            if ((w->flags & RNIC_WQE_SIGNALED) ||
                (qp->flags & RNIC_QP_FLAG_SIG_ALL)) {
                rnic_comp_post(s, qp, w, RNIC_WC_SUCCESS);
            }
        } else if (w->state == RNIC_SWQE_ERROR) {
            /* Error completions are reported even when unsignaled. */
            rnic_comp_post(s, qp, w, w->status);
        } else {
            break;
        }
        if (w->started && rnic_wr_is_rd_atomic(w->opcode) &&
            tp->req.rd_outstanding) {
            tp->req.rd_outstanding--;
        }
        qp->sq.ci = qp->sq.ci + 1;
        behind = rnic_idx_diff(qp->sq.ci, tp->req.send_idx);
        if (behind && behind <= RNIC_TP_MAX_INFLIGHT) {
            tp->req.send_idx = qp->sq.ci;
            tp->req.send_pkt = 0;
        }
        w->state = RNIC_SWQE_FREE;
        progress = true;
        if (w->status != RNIC_WC_SUCCESS) {
            rnic_comp_stop_timers(tp);
            if (qp->state != RNIC_QPS_ERR) {
                rnic_qp_fatal(s, qp, 0);
            }
            return;
        }
    }
    if (qp->state == RNIC_QPS_SQD && !tp->comp.sqd_notified &&
        (uint16_t)qp->sq.ci == tp->req.fetch_idx) {
        tp->comp.sqd_notified = true;
        if (qp->en_sqd_async_notify) {
            rnic_eq_post(s, 0, RNIC_EQE_SQ_DRAINED, qp->qpn, 0);
        }
    }
    if (progress) {
        /* Slots and credits were freed: the requester may continue. */
        rnic_qp_schedule(s, qp);
    }
}

/* Fails the oldest WQE with 'status'; retiring it kills the QP. */
static void rnic_comp_fail_head(RnicState *s, RnicQP *qp, uint8_t status)
{
    RnicTransport *tp = qp->tp;
    RnicSwqe *w;

    if ((uint16_t)qp->sq.ci == tp->req.fetch_idx) {
        rnic_qp_fatal(s, qp, 0);
        return;
    }
    w = rnic_tp_swqe(tp, qp->sq.ci);
    w->state = RNIC_SWQE_ERROR;
    w->status = status;
    rnic_comp_advance(s, qp);
}

/* ---- Timers ---- */

static bool rnic_comp_outstanding(RnicTransport *tp)
{
    return rnic_psn_lt(tp->comp.psn, tp->req.max_psn);
}

static void rnic_comp_ack_timer_del(RnicTransport *tp)
{
    timer_del(tp->comp.ack_timer);
    tp->comp.ack_expired = false;
}

static uint64_t rnic_comp_probe_ns(RnicTransport *tp)
{
    if (!tp->comp.srtt_ns) {
        return RNIC_TP_PROBE_NS;
    }
    return MIN(MAX(tp->comp.srtt_ns + 4 * tp->comp.rttvar_ns,
                   RNIC_TP_PROBE_MIN_NS), RNIC_TP_PROBE_NS);
}

void rnic_comp_rtt_start(RnicTransport *tp, uint32_t psn)
{
    if (!tp->comp.rtt_busy) {
        tp->comp.rtt_busy = true;
        tp->comp.rtt_psn = psn;
        tp->comp.rtt_t0 = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    }
}

/* RFC 6298's smoothing: gains 1/8 for the mean, 1/4 for the deviation. */
static void rnic_comp_rtt_sample(RnicQP *qp, uint32_t ack_psn)
{
    RnicComp *comp = &qp->tp->comp;
    int64_t r;

    if (!comp->rtt_busy || rnic_psn_lt(ack_psn, comp->rtt_psn)) {
        return;
    }
    comp->rtt_busy = false;
    r = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - comp->rtt_t0;
    if (r <= 0) {
        return;
    }
    if (!comp->srtt_ns) {
        comp->srtt_ns = r;
        comp->rttvar_ns = r / 2;
    } else {
        int64_t err = r - comp->srtt_ns;

        comp->rttvar_ns += ((err < 0 ? -err : err) - comp->rttvar_ns) / 4;
        comp->srtt_ns += err / 8;
    }
    trace_rnic_tp_rtt(qp->qpn, r, comp->srtt_ns, comp->rttvar_ns);
}

void rnic_comp_arm_ack_timer(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    uint64_t ns;

    if (qp->type != RNIC_QPT_RC || !qp->timeout ||
        tp->comp.wait != RNIC_COMP_RUN ||
        (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD)) {
        return;
    }
    if (!rnic_comp_outstanding(tp)) {
        rnic_comp_ack_timer_del(tp);
        return;
    }
    if (timer_pending(tp->comp.ack_timer)) {
        return;
    }
    ns = MAX(rnic_ack_timeout_ns(qp->timeout), RNIC_TP_MIN_ACK_TIMEOUT_NS);
    if (tp->comp.probes < RNIC_TP_MAX_PROBES) {
        ns = MIN(ns, rnic_comp_probe_ns(tp) << tp->comp.probes);
    }
    timer_mod(tp->comp.ack_timer,
              qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + ns);
}

/* A whole window acknowledged without a loss: one packet more. */
static void rnic_comp_cwnd_grow(RnicTransport *tp)
{
    RnicReq *req = &tp->req;

    if (req->cwnd < RNIC_TP_WINDOW &&
        rnic_psn_diff(tp->comp.psn, req->cwnd_psn) >=
        (int32_t)(req->cwnd / RNIC_TP_CWND_GROW_DIV)) {
        req->cwnd++;
        req->cwnd_psn = tp->comp.psn;
    }
}

/* A loss (one per rewind: later gaps of the abandoned run do not count). */
static void rnic_comp_cwnd_cut(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint32_t cwnd = MAX(req->cwnd * 3 / 4, RNIC_TP_CWND_MIN);

    if (cwnd < req->cwnd) {
        trace_rnic_tp_cwnd(qp->qpn, req->cwnd, cwnd);
        req->cwnd = cwnd;
        s->cnt[RNIC_CNT_CWND_CUTS]++;
    }
    req->cwnd_psn = tp->comp.psn;
}

void rnic_comp_cnp(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint32_t cwnd = MAX(req->cwnd / 2, RNIC_TP_CWND_MIN);

    s->cnt[RNIC_CNT_CNP_RCVD]++;
    if (rnic_psn_lt(tp->comp.psn, req->cnp_psn)) {
        return;         /* caused by packets sent before the last cut */
    }
    req->cnp_psn = req->max_psn;
    req->cwnd_psn = tp->comp.psn;
    if (cwnd < req->cwnd) {
        trace_rnic_tp_cwnd(qp->qpn, req->cwnd, cwnd);
        req->cwnd = cwnd;
        s->cnt[RNIC_CNT_CWND_CUTS]++;
    }
}

/* Forward progress: the retry budgets start over, the timer restarts. */
static void rnic_comp_progress(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    rnic_comp_cwnd_grow(tp);

    tp->comp.retry_left = qp->retry_cnt;
    tp->comp.rnr_left = qp->rnr_retry;
    tp->comp.rewound = false;
    tp->comp.probes = 0;
    rnic_comp_ack_timer_del(tp);
    rnic_comp_arm_ack_timer(s, qp);
    /* The window moved: the requester may have packets to send. */
    rnic_qp_schedule(s, qp);
}

/*
 * Resends from comp.psn; false if the retry budget was exhausted.
 * Timeouts and sequence NAKs consume a retry.  A gap seen in a read
 * response stream does not: it is a hint that saves waiting for the
 * timer, and only a packet from the peer can trigger it.  'cut': the
 * loss also cuts the congestion window.
 */
static bool rnic_comp_retry_cut(RnicState *s, RnicQP *qp, const char *why,
                                bool consume, bool cut)
{
    RnicTransport *tp = qp->tp;

    if (consume) {
        if (!tp->comp.retry_left) {
            trace_rnic_tp_retransmit(qp->qpn, "retries exhausted",
                                     tp->comp.psn, 0);
            rnic_comp_fail_head(s, qp, RNIC_WC_RETRY_EXC_ERR);
            return false;
        }
        tp->comp.retry_left--;
    }
    if (cut) {
        rnic_comp_cwnd_cut(s, qp);
    }
    /* Out-of-order packets of the run just abandoned must not retrigger. */
    tp->comp.rewound = true;
    tp->comp.rtt_busy = false;
    trace_rnic_tp_retransmit(qp->qpn, why, tp->comp.psn,
                             tp->comp.retry_left);
    rnic_req_rewind(s, qp, tp->comp.psn);
    rnic_comp_ack_timer_del(tp);
    rnic_qp_schedule(s, qp);
    return true;
}

static bool rnic_comp_retry(RnicState *s, RnicQP *qp, const char *why,
                            bool consume)
{
    return rnic_comp_retry_cut(s, qp, why, consume, true);
}

/*
 * Whether the first probe of a stall may resend just the last packet:
 * only when nothing is being resent (the requester's position is its
 * high-water mark), that packet fits the congestion window, and it is
 * not part of a multi-packet READ, whose re-request from its last PSN
 * would not match what the responder remembers.
 */
static bool rnic_comp_can_probe_last(RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    uint32_t psn = rnic_psn_add(tp->req.max_psn, -1);
    uint16_t idx;

    if (tp->req.psn != tp->req.max_psn || tp->comp.rewound ||
        rnic_psn_diff(psn, tp->comp.psn) >= (int32_t)tp->req.cwnd) {
        return false;
    }
    for (idx = qp->sq.ci; idx != tp->req.fetch_idx; idx++) {
        RnicSwqe *w = rnic_tp_swqe(tp, idx);

        if (!w->started || w->state == RNIC_SWQE_ERROR) {
            break;
        }
        if (rnic_psn_lt(psn, w->first_psn) || rnic_psn_gt(psn, w->last_psn)) {
            continue;
        }
        return w->opcode != RNIC_WR_RDMA_READ || w->npkts == 1;
    }
    return false;
}

/*
 * The first probe of a stall resends only the last packet sent, asking
 * for an ACK: the answer is an ACK of everything when the window merely
 * arrived late, or a sequence NAK that resends from the gap.  Neither a
 * late window nor a lost tail is taken as congestion here; the NAK is,
 * and it spends no retry either: a probe answered it.
 */
static void rnic_comp_probe_last(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    uint32_t psn = rnic_psn_add(tp->req.max_psn, -1);

    trace_rnic_tp_retransmit(qp->qpn, "tail-loss probe", psn,
                             tp->comp.retry_left);
    tp->comp.rtt_busy = false;
    rnic_req_rewind(s, qp, psn);
    rnic_comp_arm_ack_timer(s, qp);
    rnic_qp_schedule(s, qp);
}

static void rnic_comp_ack_timeout(void *opaque)
{
    RnicTransport *tp = opaque;

    /*
     * A retry may complete WQEs and post events: guest DMA that must
     * happen under the bottom half's re-entrancy guard, not here.
     */
    tp->comp.ack_expired = true;
    rnic_qp_schedule(tp->s, tp->qp);
}

void rnic_comp_timer_run(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;

    if (!tp->comp.ack_expired) {
        return;
    }
    tp->comp.ack_expired = false;
    if ((qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) ||
        !rnic_comp_outstanding(tp)) {
        return;
    }
    if (tp->comp.probes < RNIC_TP_MAX_PROBES) {
        s->cnt[RNIC_CNT_TAIL_PROBES]++;
        if (!tp->comp.probes++ && rnic_comp_can_probe_last(qp)) {
            rnic_comp_probe_last(s, qp);
            return;
        }
        rnic_comp_retry(s, qp, "tail-loss probe", false);
        tp->comp.rewound = false;
        return;
    }
    s->cnt[RNIC_CNT_ACK_TIMEOUTS]++;
    if (rnic_comp_retry(s, qp, "ack timeout", true)) {
        /* Nothing is in flight any more: the next gap is a new loss. */
        tp->comp.rewound = false;
    }
}

static void rnic_comp_rnr_expired(void *opaque)
{
    RnicTransport *tp = opaque;

    if (tp->comp.wait == RNIC_COMP_RNR_WAIT) {
        tp->comp.wait = RNIC_COMP_RUN;
        rnic_qp_schedule(tp->s, tp->qp);
    }
}

void rnic_comp_init_timers(RnicTransport *tp)
{
    tp->comp.ack_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                      rnic_comp_ack_timeout, tp);
    tp->comp.rnr_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                      rnic_comp_rnr_expired, tp);
}

void rnic_comp_stop_timers(RnicTransport *tp)
{
    rnic_comp_ack_timer_del(tp);
    timer_del(tp->comp.rnr_timer);
    tp->comp.wait = RNIC_COMP_RUN;
}

void rnic_comp_reset(RnicTransport *tp)
{
    RnicQP *qp = tp->qp;

    rnic_comp_stop_timers(tp);
    tp->comp.psn = qp->sq_psn & RNIC_PSN_MASK;
    tp->comp.retry_left = qp->retry_cnt;
    tp->comp.rnr_left = qp->rnr_retry;
    tp->comp.rewound = false;
    tp->comp.probes = 0;
    tp->comp.sqd_notified = false;
    /* A new connection may take a different path. */
    tp->comp.rtt_busy = false;
    tp->comp.srtt_ns = 0;
    tp->comp.rttvar_ns = 0;
}

/* ---- Acknowledgements ---- */

/*
 * The peer acknowledged past the requester's position.  In the middle
 * of a resent hole, the rest of the hole is still owed and after it
 * sending goes on from where it was; otherwise from comp.psn.
 */
static void rnic_comp_catch_up(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    RnicReq *req = &tp->req;
    uint32_t end = req->sr_end, front = req->sr_front;

    if (!req->sr_active) {
        rnic_req_rewind(s, qp, tp->comp.psn);
    } else if (rnic_psn_lt(tp->comp.psn, end)) {
        rnic_req_resend_hole(s, qp, tp->comp.psn,
                             rnic_psn_diff(end, tp->comp.psn), front);
    } else {
        rnic_req_rewind(s, qp, rnic_psn_gt(tp->comp.psn, front) ?
                               tp->comp.psn : front);
    }
}

/*
 * Applies a cumulative acknowledgement of every PSN up to 'ack_psn'.
 * A READ or ATOMIC cannot be completed by an ACK: reaching one whose
 * response is still missing means the response was lost, so it is
 * requested again.
 */
static void rnic_comp_ack_to(RnicState *s, RnicQP *qp, uint32_t ack_psn)
{
    RnicTransport *tp = qp->tp;
    uint32_t mtu = rnic_tp_mtu(qp);
    bool progress = false;
    uint16_t idx;

    if (rnic_psn_lt(ack_psn, tp->comp.psn)) {
        return;                         /* old news */
    }
    rnic_comp_rtt_sample(qp, ack_psn);
    for (idx = qp->sq.ci; idx != tp->req.fetch_idx; idx++) {
        RnicSwqe *w = rnic_tp_swqe(tp, idx);

        if (!w->started || w->state == RNIC_SWQE_ERROR) {
            break;
        }
        if (w->state == RNIC_SWQE_DONE) {
            continue;
        }
        if (rnic_wr_is_rd_atomic(w->opcode)) {
            uint32_t want = w->opcode == RNIC_WR_RDMA_READ ?
                rnic_psn_add(w->first_psn, w->read_off / mtu) : w->first_psn;

            if (rnic_psn_ge(ack_psn, want)) {
                if (progress) {
                    rnic_comp_progress(s, qp);
                }
                if (!tp->comp.rewound) {
                    rnic_comp_retry(s, qp, "response missing", false);
                }
                rnic_comp_advance(s, qp);
                return;
            }
            break;
        }
        if (rnic_psn_lt(ack_psn, w->first_psn)) {
            break;
        }
        if (rnic_psn_ge(ack_psn, w->last_psn)) {
            w->state = RNIC_SWQE_DONE;
            tp->comp.psn = rnic_psn_add(w->last_psn, 1);
            progress = true;
            continue;
        }
        tp->comp.psn = rnic_psn_add(ack_psn, 1);
        progress = true;
        break;
    }
    if (progress) {
        /* The requester may be behind what the peer has already seen. */
        if (rnic_psn_lt(tp->req.psn, tp->comp.psn)) {
            rnic_comp_catch_up(s, qp);
        }
        rnic_comp_progress(s, qp);
    }
    rnic_comp_advance(s, qp);
}

static void rnic_comp_nak(RnicState *s, RnicQP *qp, const RnicPkt *p)
{
    RnicTransport *tp = qp->tp;
    uint8_t syn = p->aeth.syndrome;
    uint32_t psn = p->bth.psn;
    bool probed = tp->comp.probes;
    uint32_t front, hole;

    /* Everything before the NAK'd PSN arrived. */
    rnic_comp_ack_to(s, qp, rnic_psn_add(psn, -1));
    if (qp->state == RNIC_QPS_ERR) {
        return;
    }

    switch (rnic_aeth_type(syn)) {
    case RNIC_AETH_RNR_NAK:
        s->cnt[RNIC_CNT_RNR_NAK_RCVD]++;
        if (psn != tp->comp.psn) {
            return;                     /* stale */
        }
        if (qp->rnr_retry != 7) {
            if (!tp->comp.rnr_left) {
                rnic_comp_fail_head(s, qp, RNIC_WC_RNR_RETRY_EXC_ERR);
                return;
            }
            tp->comp.rnr_left--;
        }
        trace_rnic_tp_retransmit(qp->qpn, "rnr nak", psn, tp->comp.rnr_left);
        tp->comp.rtt_busy = false;
        rnic_req_rewind(s, qp, psn);
        tp->comp.wait = RNIC_COMP_RNR_WAIT;
        rnic_comp_ack_timer_del(tp);
        timer_mod(tp->comp.rnr_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  (int64_t)rnic_rnr_timer_us(rnic_aeth_value(syn)) * SCALE_US);
        return;
    case RNIC_AETH_NAK:
        break;
    default:
        trace_rnic_tp_bad_resp(qp->qpn, "reserved AETH type", psn);
        return;
    }

    switch (rnic_aeth_value(syn)) {
    case RNIC_NAK_PSN_SEQ_ERR:
        s->cnt[RNIC_CNT_SEQ_NAK_RCVD]++;
        if (psn != tp->comp.psn || tp->comp.rewound) {
            return;                     /* already resending from there */
        }
        front = tp->req.psn;
        hole = qp->type == RNIC_QPT_RC && s->prop.selective_repeat ?
               p->bth.resv6 & RNIC_BTH_RESV6_MASK : 0;
        /*
         * One packet lost with its followers kept is noise on the path,
         * not a queue overflowing, and costs one packet: no window cut.
         */
        if (rnic_comp_retry_cut(s, qp, "sequence nak", !probed, hole != 1) &&
            hole) {
            /* The responder kept what follows the hole: resend only it. */
            rnic_req_resend_hole(s, qp, psn, hole, front);
            if (tp->req.sr_active) {
                s->cnt[RNIC_CNT_SR_RESENDS]++;
            }
        }
        return;
    case RNIC_NAK_INVALID_REQ:
        rnic_comp_fail_head(s, qp, RNIC_WC_REM_INV_REQ_ERR);
        return;
    case RNIC_NAK_REMOTE_ACCESS_ERR:
        rnic_comp_fail_head(s, qp, RNIC_WC_REM_ACCESS_ERR);
        return;
    case RNIC_NAK_REMOTE_OP_ERR:
    case RNIC_NAK_INVALID_RD_REQ:
        rnic_comp_fail_head(s, qp, RNIC_WC_REM_OP_ERR);
        return;
    default:
        trace_rnic_tp_bad_resp(qp->qpn, "unknown NAK code", psn);
        return;
    }
}

/*
 * The oldest WQE if it is a started READ/ATOMIC awaiting its response.
 * A READ response also answers FLUSH and ATOMIC WRITE (empty).
 */
static RnicSwqe *rnic_comp_head_rd(RnicQP *qp, uint8_t want_op)
{
    RnicTransport *tp = qp->tp;
    RnicSwqe *w;

    if ((uint16_t)qp->sq.ci == tp->req.fetch_idx) {
        return NULL;
    }
    w = rnic_tp_swqe(tp, qp->sq.ci);
    if (!w->started || w->state == RNIC_SWQE_DONE ||
        w->state == RNIC_SWQE_ERROR) {
        return NULL;
    }
    if (want_op == RNIC_WR_RDMA_READ ?
        (w->opcode != RNIC_WR_RDMA_READ && !rnic_wr_is_place(w->opcode)) :
        (w->opcode != RNIC_WR_ATOMIC_CMP_SWP &&
         w->opcode != RNIC_WR_ATOMIC_FETCH_ADD)) {
        return NULL;
    }
    return w;
}

static void rnic_comp_read_resp(RnicState *s, RnicQP *qp, const RnicPkt *p,
                                const uint8_t *frame, uint32_t flags)
{
    RnicTransport *tp = qp->tp;
    uint32_t mtu = rnic_tp_mtu(qp);
    uint32_t psn = p->bth.psn;
    uint32_t want, remaining, n;
    RnicMemErr err;
    RnicSwqe *w;

    rnic_comp_rtt_sample(qp, psn);
    rnic_comp_ack_to(s, qp, rnic_psn_add(psn, -1));
    w = rnic_comp_head_rd(qp, RNIC_WR_RDMA_READ);
    if (!w || qp->state == RNIC_QPS_ERR) {
        trace_rnic_tp_bad_resp(qp->qpn, "read response without READ", psn);
        return;
    }
    want = rnic_psn_add(w->first_psn, w->read_off / mtu);
    if (psn != want) {
        if (rnic_psn_gt(psn, want) && !tp->comp.rewound) {
            rnic_comp_retry(s, qp, "read response gap", false);
        }
        trace_rnic_tp_resp_psn(qp->qpn, "read response out of order", psn,
                               want);
        return;
    }
    remaining = w->length - w->read_off;
    n = MIN(mtu, remaining);
    if (p->payload_len != n || !!(flags & RNIC_OPF_LAST) != (n == remaining)) {
        trace_rnic_tp_bad_resp(qp->qpn, "read response length", psn);
        return;
    }
    if ((flags & RNIC_HDR_AETH) &&
        rnic_aeth_type(p->aeth.syndrome) != RNIC_AETH_ACK) {
        trace_rnic_tp_bad_resp(qp->qpn, "read response with NAK", psn);
        return;
    }
    err = rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, w->sge,
                        w->num_sge, w->read_off,
                        (void *)(frame + p->payload_off), n, true);
    if (err != RNIC_MEM_OK) {
        rnic_comp_fail_head(s, qp, RNIC_WC_LOC_PROT_ERR);
        return;
    }
    w->read_off += n;
    tp->comp.psn = rnic_psn_add(psn, 1);
    if (w->read_off == w->length) {
        w->state = RNIC_SWQE_DONE;
    }
    rnic_comp_progress(s, qp);
    rnic_comp_advance(s, qp);
}

static void rnic_comp_atomic_ack(RnicState *s, RnicQP *qp, const RnicPkt *p)
{
    RnicTransport *tp = qp->tp;
    uint64_t orig = cpu_to_le64(p->atomic_orig);
    RnicSwqe *w;

    rnic_comp_rtt_sample(qp, p->bth.psn);
    rnic_comp_ack_to(s, qp, rnic_psn_add(p->bth.psn, -1));
    w = rnic_comp_head_rd(qp, RNIC_WR_ATOMIC_CMP_SWP);
    if (!w || qp->state == RNIC_QPS_ERR || w->first_psn != p->bth.psn) {
        trace_rnic_tp_bad_resp(qp->qpn, "unexpected atomic ack", p->bth.psn);
        return;
    }
    if (rnic_aeth_type(p->aeth.syndrome) != RNIC_AETH_ACK) {
        rnic_comp_nak(s, qp, p);
        return;
    }
    if (rnic_sgl_copy(s, qp->pdn, RNIC_ACCESS_LOCAL_WRITE, w->sge, 1, 0,
                      &orig, 8, true) != RNIC_MEM_OK) {
        rnic_comp_fail_head(s, qp, RNIC_WC_LOC_PROT_ERR);
        return;
    }
    w->state = RNIC_SWQE_DONE;
    tp->comp.psn = rnic_psn_add(p->bth.psn, 1);
    rnic_comp_progress(s, qp);
    rnic_comp_advance(s, qp);
}

void rnic_comp_rx(RnicState *s, RnicQP *qp, const RnicPkt *p,
                  const uint8_t *frame)
{
    RnicTransport *tp = qp->tp;
    const RnicOpcodeInfo *info = rnic_opcode_info(p->bth.opcode);
    uint32_t psn = p->bth.psn;

    if (qp->type != RNIC_QPT_RC || !info) {
        trace_rnic_tp_rx_drop(qp->qpn, "response on a non-RC QP");
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        return;
    }
    /* Only PSNs this QP has sent can be acknowledged. */
    if (!rnic_psn_lt(psn, tp->req.max_psn) ||
        rnic_psn_diff(psn, tp->comp.psn) < -(int32_t)RNIC_TP_MAX_MSG_PKTS) {
        trace_rnic_tp_resp_psn(qp->qpn, "response outside window", psn,
                               tp->comp.psn);
        return;
    }
    if (info->flags & RNIC_HDR_AETH) {
        trace_rnic_tp_ack_rx(qp->qpn, rnic_aeth_str(p->aeth.syndrome), psn,
                             p->aeth.msn);
    }
    if (info->flags & RNIC_OPF_READ) {
        rnic_comp_read_resp(s, qp, p, frame, info->flags);
    } else if (info->flags & RNIC_HDR_ATOMIC_ACK_ETH) {
        rnic_comp_atomic_ack(s, qp, p);
    } else if (rnic_aeth_type(p->aeth.syndrome) == RNIC_AETH_ACK) {
        rnic_comp_ack_to(s, qp, psn);
    } else {
        rnic_comp_nak(s, qp, p);
    }
}

/* ---- Flush ---- */

void rnic_sq_flush(RnicState *s, RnicQP *qp, int *budget)
{
    RnicTransport *tp = qp->tp;
    uint32_t n = 0;

    /* The doorbell never lets pi run more than a ring ahead of ci. */
    while ((uint16_t)qp->sq.ci != (uint16_t)qp->sq.pi) {
        uint16_t idx = qp->sq.ci;

        if (*budget <= 0) {
            trace_rnic_tp_flush(qp->qpn, n, 0);
            return;             /* the core runs the QP again */
        }
        (*budget)--;
        struct rnic_cqe cqe = {
            .qpn = qp->qpn,
            .wqe_idx = idx & ((1u << qp->sq.ring.log_size) - 1),
            .status = RNIC_WC_WR_FLUSH_ERR,
        };

        uint16_t ahead = rnic_idx_diff(tp->req.fetch_idx, idx);

        if (ahead && ahead <= RNIC_TP_MAX_INFLIGHT) {
            RnicSwqe *w = rnic_tp_swqe(tp, idx);

            /* Shadowed: never read the guest's copy again. */
            cqe.wr_id = w->wr_id;
            cqe.opcode = rnic_wr_to_wc_opcode(w->opcode);
            w->state = RNIC_SWQE_FREE;
        } else {
            struct rnic_send_wqe hdr;

            if (rnic_ring_read(s, &qp->sq.ring, idx, &hdr, sizeof(hdr))) {
                cqe.wr_id = le64_to_cpu(hdr.wr_id);
                cqe.opcode = rnic_wr_to_wc_opcode(hdr.opcode);
            }
            tp->req.fetch_idx = idx + 1;
        }
        trace_rnic_tp_send_cqe(qp->qpn, idx, cqe.opcode, cqe.status);
        rnic_cq_post(s, qp->send_cqn, &cqe);
        qp->sq.ci = qp->sq.ci + 1;
        n++;
    }
    tp->req.fetch_idx = qp->sq.ci;
    tp->req.send_idx = qp->sq.ci;
    tp->req.send_pkt = 0;
    tp->req.rd_outstanding = 0;
    if (n) {
        trace_rnic_tp_flush(qp->qpn, n, 0);
    }
}
