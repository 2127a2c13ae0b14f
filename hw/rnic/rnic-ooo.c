/*
 * rnic: the RC responder's reorder buffer, for selective repeat
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Go-back-N makes one lost packet cost every packet sent after it: the
 * responder drops them and the requester sends them all again.  A
 * requester that sets RNIC_BTH_X_SR resends only the hole a NAK names,
 * so its responder keeps what arrives past a gap (up to RNIC_OOO_SLOTS
 * PSNs, RNIC_OOO_QP_FRAMES frames per QP and RNIC_OOO_DEV_FRAMES per
 * device, each within the path MTU and charged to max-host-mem) and runs
 * it, in PSN order, once the gap is filled.  Frames whose gap stays open
 * for RNIC_OOO_MAX_AGE_NS are given up, so that idle QPs, or a peer that
 * never fills its gaps, cannot hold the pool.  Nothing is executed
 * early: a kept request takes exactly the path it would have taken in
 * order, so SENDs, READs and atomics need nothing special.  A peer
 * without the bit (rxe, real NICs) gets plain go-back-N.
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "rnic-transport.h"
#include "trace.h"

static bool rnic_ooo_wanted(RnicState *s, RnicQP *qp, const RnicPkt *p)
{
    return s->prop.selective_repeat && qp->type == RNIC_QPT_RC &&
           (p->bth.resv6 & RNIC_BTH_X_SR);
}

/* Takes the frame out of its slot; the caller owns (and frees) it. */
static uint8_t *rnic_ooo_take(RnicState *s, RnicOoo *o, RnicOooSlot *sl)
{
    uint8_t *frame = sl->frame;

    sl->frame = NULL;
    o->count--;
    s->ooo_frames--;
    rnic_host_mem_uncharge(s, sl->len);
    return frame;
}

static void rnic_ooo_free_slot(RnicState *s, RnicOoo *o, RnicOooSlot *sl)
{
    g_free(rnic_ooo_take(s, o, sl));
}

/* Frees @tp's frames kept before @cutoff. */
static void rnic_ooo_age_qp(RnicState *s, RnicTransport *tp, int64_t cutoff)
{
    RnicOoo *o = tp->ooo;
    unsigned i;

    if (!o || o->draining) {
        return;
    }
    for (i = 0; i < RNIC_OOO_SLOTS && o->count; i++) {
        RnicOooSlot *sl = &o->slot[i];

        if (sl->frame && sl->kept_ns < cutoff) {
            trace_rnic_tp_ooo(tp->qp->qpn, "aged out", sl->pkt.bth.psn,
                              tp->resp.epsn);
            rnic_ooo_free_slot(s, o, sl);
        }
    }
}

/* Now and then, the whole device: what idle QPs keep goes too. */
static void rnic_ooo_sweep(RnicState *s, int64_t now)
{
    uint32_t i;

    if (!s->ooo_frames || now - s->ooo_swept_ns < RNIC_OOO_SWEEP_NS) {
        return;
    }
    s->ooo_swept_ns = now;
    for (i = 0; i < s->prop.max_qp + 2 && s->ooo_frames; i++) {
        RnicQP *qp = s->qp[i];

        if (qp && qp->tp) {
            rnic_ooo_age_qp(s, qp->tp, now - RNIC_OOO_MAX_AGE_NS);
        }
    }
}

bool rnic_ooo_keep(RnicState *s, RnicQP *qp, const RnicPkt *p,
                   const uint8_t *frame, size_t len, uint32_t flags,
                   int32_t diff)
{
    RnicTransport *tp = qp->tp;
    RnicOoo *o = tp->ooo;
    uint32_t mtu = rnic_mtu_to_bytes(qp->path_mtu);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    RnicOooSlot *sl;

    if (!rnic_ooo_wanted(s, qp, p) || diff <= 0 || diff >= RNIC_OOO_SLOTS) {
        return false;
    }
    /* Only what could be run in order: nothing past the path MTU. */
    if (p->payload_len > mtu || len > mtu + RNIC_OOO_HDR_ROOM) {
        trace_rnic_tp_ooo(qp->qpn, "larger than the path MTU", p->bth.psn,
                          tp->resp.epsn);
        return false;
    }
    rnic_ooo_sweep(s, now);
    if (!o) {
        /* Charged like the QP's own state, which it belongs to. */
        if (!rnic_host_mem_charge(s, sizeof(*o))) {
            return false;
        }
        o = tp->ooo = g_try_new0(RnicOoo, 1);
        if (!o) {
            rnic_host_mem_uncharge(s, sizeof(*o));
            return false;
        }
    }
    sl = &o->slot[p->bth.psn & (RNIC_OOO_SLOTS - 1)];
    if (sl->frame) {
        if (sl->pkt.bth.psn == p->bth.psn) {
            return true;                /* a duplicate of one we keep */
        }
        rnic_ooo_free_slot(s, o, sl);   /* stale: behind epsn by now */
    }
    if (o->count >= RNIC_OOO_QP_FRAMES) {
        trace_rnic_tp_ooo(qp->qpn, "QP's share full", p->bth.psn,
                          tp->resp.epsn);
        return false;
    }
    if (s->ooo_frames >= RNIC_OOO_DEV_FRAMES) {
        trace_rnic_tp_ooo(qp->qpn, "device buffer full", p->bth.psn,
                          tp->resp.epsn);
        return false;
    }
    if (!rnic_host_mem_charge(s, len)) {
        trace_rnic_tp_ooo(qp->qpn, "max-host-mem reached", p->bth.psn,
                          tp->resp.epsn);
        return false;
    }
    sl->frame = g_try_malloc(len);
    if (!sl->frame) {
        rnic_host_mem_uncharge(s, len);
        return false;
    }
    memcpy(sl->frame, frame, len);
    sl->len = len;
    sl->kept_ns = now;
    sl->pkt = *p;
    sl->flags = flags;
    o->count++;
    s->ooo_frames++;
    s->cnt[RNIC_CNT_OOO_KEPT]++;
    trace_rnic_tp_ooo(qp->qpn, "kept", p->bth.psn, tp->resp.epsn);
    return true;
}

uint8_t rnic_ooo_hole(RnicTransport *tp)
{
    RnicOoo *o = tp->ooo;
    uint32_t epsn = tp->resp.epsn;
    uint32_t d;

    if (!o || !o->count) {
        return 0;
    }
    for (d = 1; d < RNIC_OOO_SLOTS && d <= RNIC_BTH_RESV6_MASK; d++) {
        RnicOooSlot *sl = &o->slot[(epsn + d) & (RNIC_OOO_SLOTS - 1)];

        if (sl->frame && sl->pkt.bth.psn == rnic_psn_add(epsn, d)) {
            return d;
        }
    }
    /* Kept frames, but further away than the field can say. */
    return RNIC_BTH_RESV6_MASK;
}

/* Frees what epsn has passed: the requester resent it, or it moved. */
static void rnic_ooo_purge(RnicState *s, RnicTransport *tp)
{
    RnicOoo *o = tp->ooo;
    unsigned i;

    for (i = 0; i < RNIC_OOO_SLOTS && o->count; i++) {
        RnicOooSlot *sl = &o->slot[i];

        if (sl->frame && rnic_psn_lt(sl->pkt.bth.psn, tp->resp.epsn)) {
            rnic_ooo_free_slot(s, o, sl);
        }
    }
}

void rnic_ooo_drain(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    RnicOoo *o = tp->ooo;
    uint32_t start = tp->resp.epsn;

    if (!o || !o->count || o->draining) {
        return;
    }
    o->draining = true;
    while (o->count && !tp->resp.nak_sent &&
           (qp->state == RNIC_QPS_RTR || qp->state == RNIC_QPS_RTS ||
            qp->state == RNIC_QPS_SQD)) {
        uint32_t epsn = tp->resp.epsn;
        RnicOooSlot *sl = &o->slot[epsn & (RNIC_OOO_SLOTS - 1)];
        g_autofree uint8_t *frame = NULL;
        RnicOooSlot run;

        if (!sl->frame || sl->pkt.bth.psn != epsn) {
            break;
        }
        run = *sl;
        frame = rnic_ooo_take(s, o, sl);
        trace_rnic_tp_ooo(qp->qpn, "run", epsn, epsn);
        rnic_resp_request(s, qp, &run.pkt, frame, run.len, run.flags);
        if (tp->resp.epsn == epsn) {
            break;      /* not taken (RNR, error): the requester resends */
        }
    }
    o->draining = false;
    if (!o->count) {
        return;
    }
    rnic_ooo_purge(s, tp);
    /*
     * Past the next hole more is kept: name it now, as the answer to the
     * resent packets, instead of waiting for the next one to arrive.
     */
    if (o->count && tp->resp.epsn != start && !tp->resp.nak_sent &&
        qp->state != RNIC_QPS_ERR) {
        rnic_resp_nak_seq(s, qp);
    }
}

void rnic_ooo_free(RnicTransport *tp)
{
    if (tp->ooo) {
        rnic_ooo_clear(tp);
        g_free(tp->ooo);
        tp->ooo = NULL;
        rnic_host_mem_uncharge(tp->s, sizeof(RnicOoo));
    }
}

void rnic_ooo_clear(RnicTransport *tp)
{
    RnicOoo *o = tp->ooo;
    unsigned i;

    if (!o) {
        return;
    }
    for (i = 0; i < RNIC_OOO_SLOTS && o->count; i++) {
        if (o->slot[i].frame) {
            rnic_ooo_free_slot(tp->s, o, &o->slot[i]);
        }
    }
}
