/*
 * rnic: device-side faults injected from the host (QMP, HMP)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A driver's error paths run only when the device fails, and real NICs
 * fail only by accident.  rnic-inject-fault makes the device fail on
 * command: completion errors, QP and CQ errors, lost events, a link
 * flap, a catastrophic error, a stalled command queue, lost or late
 * interrupts and failed DMA writes.
 *
 * The monitor command runs under the BQL like an MMIO write, and like
 * one it only records: a fault takes effect where the device does that
 * work (the completer, the EQ writer, the interrupt path, the DMA
 * helper) or in the bottom half, never from the monitor.  Each one that
 * takes effect is traced and counted in inj.done, which the read-only
 * "faults" property and `info rnic` show.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rnic.h"
#include "qapi/qapi-visit-rnic.h"
#include "qapi/qobject-input-visitor.h"
#include "qobject/qdict.h"
#include "qapi/visitor.h"
#include "qemu/keyval.h"
#include "qemu/cutils.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qom/object.h"
#include "hw/qdev-core.h"
#include "rnic-wire.h"
#include "rnic.h"
#include "trace.h"

static const char *const rnic_inj_names[RNIC_INJ_MAX] = {
    [RNIC_INJ_WC_ERROR] = "wc-error",
    [RNIC_INJ_QP_EVENT] = "qp-event",
    [RNIC_INJ_CQ_ERROR] = "cq-error",
    [RNIC_INJ_EQ_OVERFLOW] = "eq-overflow",
    [RNIC_INJ_PORT_FLAP] = "port-flap",
    [RNIC_INJ_FATAL] = "fatal",
    [RNIC_INJ_CMD_STALL] = "cmd-stall",
    [RNIC_INJ_IRQ_DROP] = "irq-drop",
    [RNIC_INJ_IRQ_DELAY] = "irq-delay",
    [RNIC_INJ_DMA_FAIL] = "dma-fail",
    [RNIC_INJ_CQE_CORRUPT] = "cqe-corrupt",
    [RNIC_INJ_GID_CHANGE] = "gid-change",
};

/* RnicWcStatus, in its QAPI order, as the device ABI numbers it. */
static const uint8_t rnic_inj_wc_status[RNIC_WC_STATUS__MAX] = {
    [RNIC_WC_STATUS_LOC_LEN_ERR] = RNIC_WC_LOC_LEN_ERR,
    [RNIC_WC_STATUS_LOC_QP_OP_ERR] = RNIC_WC_LOC_QP_OP_ERR,
    [RNIC_WC_STATUS_LOC_PROT_ERR] = RNIC_WC_LOC_PROT_ERR,
    [RNIC_WC_STATUS_WR_FLUSH_ERR] = RNIC_WC_WR_FLUSH_ERR,
    [RNIC_WC_STATUS_MW_BIND_ERR] = RNIC_WC_MW_BIND_ERR,
    [RNIC_WC_STATUS_BAD_RESP_ERR] = RNIC_WC_BAD_RESP_ERR,
    [RNIC_WC_STATUS_LOC_ACCESS_ERR] = RNIC_WC_LOC_ACCESS_ERR,
    [RNIC_WC_STATUS_REM_INV_REQ_ERR] = RNIC_WC_REM_INV_REQ_ERR,
    [RNIC_WC_STATUS_REM_ACCESS_ERR] = RNIC_WC_REM_ACCESS_ERR,
    [RNIC_WC_STATUS_REM_OP_ERR] = RNIC_WC_REM_OP_ERR,
    [RNIC_WC_STATUS_RETRY_EXC_ERR] = RNIC_WC_RETRY_EXC_ERR,
    [RNIC_WC_STATUS_RNR_RETRY_EXC_ERR] = RNIC_WC_RNR_RETRY_EXC_ERR,
    [RNIC_WC_STATUS_FATAL_ERR] = RNIC_WC_FATAL_ERR,
    [RNIC_WC_STATUS_GENERAL_ERR] = RNIC_WC_GENERAL_ERR,
};

/* RnicQpEvent as EQE types; the first three move the QP to ERR. */
static const uint8_t rnic_inj_qp_eqe[RNIC_QP_EVENT__MAX] = {
    [RNIC_QP_EVENT_QP_FATAL] = RNIC_EQE_QP_FATAL,
    [RNIC_QP_EVENT_REQ_ERROR] = RNIC_EQE_QP_REQ_ERR,
    [RNIC_QP_EVENT_ACCESS_ERROR] = RNIC_EQE_QP_ACCESS_ERR,
    [RNIC_QP_EVENT_COMM_EST] = RNIC_EQE_COMM_EST,
    [RNIC_QP_EVENT_LAST_WQE] = RNIC_EQE_QP_LAST_WQE,
    [RNIC_QP_EVENT_SRQ_LIMIT] = RNIC_EQE_SRQ_LIMIT,
};

static void rnic_inj_done(RnicState *s, RnicInjKind kind, uint32_t what)
{
    s->inj.done[kind]++;
    trace_rnic_inject_done(rnic_inj_names[kind], what);
}

/* ---- hooks on the device's own paths ---- */

/* xorshift32: the soak form's choice, repeatable from its seed. */
static uint32_t rnic_inj_rand(uint32_t *state)
{
    uint32_t x = *state ? *state : 1;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

uint8_t rnic_inject_wc(RnicState *s, uint32_t qpn)
{
    RnicInject *inj = &s->inj;

    if (!inj->wc_left || (inj->wc_qpn && inj->wc_qpn != qpn)) {
        return 0;
    }
    if (inj->wc_percent && rnic_inj_rand(&inj->wc_rng) % 100 >=
        inj->wc_percent) {
        return 0;
    }
    inj->wc_left--;
    rnic_inj_done(s, RNIC_INJ_WC_ERROR, qpn);
    return inj->wc_status;
}

bool rnic_inject_eq_lose(RnicState *s, uint32_t eqn)
{
    RnicInject *inj = &s->inj;

    if (!inj->eq_lose_left || inj->eq_lose_eqn != eqn) {
        return false;
    }
    inj->eq_lose_left--;
    rnic_inj_done(s, RNIC_INJ_EQ_OVERFLOW, eqn);
    return true;
}

bool rnic_inject_cmd_stalled(RnicState *s)
{
    return s->inj.cmd_stalled;
}

static bool rnic_inj_vector_matches(RnicInject *inj, unsigned vector)
{
    return inj->irq_vector < 0 || (unsigned)inj->irq_vector == vector;
}

bool rnic_inject_irq(RnicState *s, unsigned vector)
{
    RnicInject *inj = &s->inj;

    if (inj->irq_drop_left && rnic_inj_vector_matches(inj, vector)) {
        inj->irq_drop_left--;
        rnic_inj_done(s, RNIC_INJ_IRQ_DROP, vector);
        return true;
    }
    if (inj->irq_delay_left && rnic_inj_vector_matches(inj, vector) &&
        vector < 64) {
        inj->irq_delay_left--;
        rnic_inj_done(s, RNIC_INJ_IRQ_DELAY, vector);
        /* Messages of one vector merge while held, as pending bits do. */
        inj->irq_late |= 1ull << vector;
        if (!timer_pending(inj->irq_timer)) {
            timer_mod(inj->irq_timer,
                      qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) +
                      inj->irq_delay_ms);
        }
        return true;
    }
    return false;
}

bool rnic_inject_dma_fail(RnicState *s, dma_addr_t addr, dma_addr_t len)
{
    RnicInject *inj = &s->inj;

    if (!inj->dma_fail_left) {
        return false;
    }
    if (!inj->dma_fail_any_qp && inj->rx_qpn != inj->dma_fail_qpn) {
        return false;
    }
    inj->dma_fail_left--;
    trace_rnic_inject_dma_fail(addr, len);
    rnic_inj_done(s, RNIC_INJ_DMA_FAIL,
                  inj->rx_qpn == RNIC_INJ_NO_QP ? 0 : inj->rx_qpn);
    return true;
}

/*
 * A broken device's CQE: the WQE index half the queue away from the one
 * completed, which a driver cannot have outstanding next, and a wr_id no
 * driver gave.  A driver that trusts the CQE calls through garbage.  For
 * a receive from an SRQ the queue is the SRQ's, whose indices the CQE
 * carries unmasked (see rnic_resp_get_rwqe).
 */
void rnic_inject_cqe(RnicState *s, struct rnic_cqe *cqe)
{
    RnicInject *inj = &s->inj;
    RnicSRQ *srq;
    RnicQP *qp;
    uint8_t log_size;

    if (!inj->cqe_left || (inj->cqe_qpn && inj->cqe_qpn != cqe->qpn)) {
        return;
    }
    qp = rnic_qp_get(s, cqe->qpn);
    if (!qp) {
        return;
    }
    log_size = (cqe->opcode & RNIC_WC_RECV) ? qp->rq.ring.log_size :
               qp->sq.ring.log_size;
    srq = (cqe->opcode & RNIC_WC_RECV) && qp->srqn ?
          rnic_srq_get(s, qp->srqn) : NULL;
    inj->cqe_left--;
    rnic_inj_done(s, RNIC_INJ_CQE_CORRUPT, cqe->qpn);
    if (srq && srq->wq.ring.log_size) {
        cqe->wqe_idx += 1u << (srq->wq.ring.log_size - 1);
    } else if (log_size) {
        cqe->wqe_idx = (cqe->wqe_idx + (1u << (log_size - 1))) &
                       ((1u << log_size) - 1);
    } else {
        cqe->wqe_idx ^= 1;
    }
    cqe->wr_id = 0xbad0bad0bad0bad0ull;
}

/* ---- timers: they only record, the bottom half acts ---- */

static void rnic_inj_flap_up(void *opaque)
{
    RnicState *s = opaque;
    NetClientState *nc = qemu_get_queue(s->nic);

    s->inj.port_down = false;
    nc->link_down = false;
    /* Records the change; the bottom half posts PORT_ACTIVE. */
    rnic_net_link_status_changed(nc);
}

static void rnic_inj_stall_end(void *opaque)
{
    RnicState *s = opaque;

    s->inj.cmd_stalled = false;
    trace_rnic_inject_stall(false);
    s->cmd_pending = true;
    rnic_schedule(s);
}

static void rnic_inj_irq_due(void *opaque)
{
    RnicState *s = opaque;

    s->inj.irq_late_due = true;
    rnic_schedule(s);
}

/* ---- the bottom half's part ---- */

bool rnic_inject_pending(RnicState *s)
{
    return s->inj.n_act || s->inj.fatal_due || s->inj.irq_late_due;
}

static void rnic_inj_qp_event(RnicState *s, const RnicInjAction *a)
{
    RnicQP *qp;

    if (a->eqe == RNIC_EQE_SRQ_LIMIT) {
        if (a->handle == 0 || a->handle > s->prop.max_srq ||
            !s->srq[a->handle].valid) {
            trace_rnic_inject_gone("SRQ", a->handle);
            return;
        }
        /* As when the SRQ falls below it: the limit is one-shot. */
        s->srq[a->handle].limit = 0;
        rnic_eq_post(s, 0, RNIC_EQE_SRQ_LIMIT, a->handle, 0);
        rnic_inj_done(s, RNIC_INJ_QP_EVENT, a->handle);
        return;
    }
    qp = rnic_qp_get(s, a->handle);
    if (!qp) {
        trace_rnic_inject_gone("QP", a->handle);
        return;
    }
    rnic_inj_done(s, RNIC_INJ_QP_EVENT, a->handle);
    switch (a->eqe) {
    case RNIC_EQE_QP_FATAL:
    case RNIC_EQE_QP_REQ_ERR:
    case RNIC_EQE_QP_ACCESS_ERR:
        if (qp->state != RNIC_QPS_RESET && qp->state != RNIC_QPS_ERR) {
            /* The error state, its flush and the event, as on a fault. */
            rnic_qp_fatal(s, qp, a->eqe);
            return;
        }
        break;
    default:
        break;
    }
    rnic_eq_post(s, 0, a->eqe, a->handle, 0);
}

static void rnic_inj_cq_error(RnicState *s, uint32_t cqn)
{
    RnicCQ *cq = rnic_cq_get(s, cqn);

    if (!cq) {
        trace_rnic_inject_gone("CQ", cqn);
        return;
    }
    rnic_inj_done(s, RNIC_INJ_CQ_ERROR, cqn);
    if (!cq->overrun) {
        rnic_cq_fail(s, cq, cqn);
    }
}

/*
 * The device changes its own GID entry, as a device might after an
 * internal reset of its table, and says which.  A driver restores what
 * its stack holds for that index.
 */
static void rnic_inj_gid_change(RnicState *s, const RnicInjAction *a)
{
    RnicGid *e;

    if (a->handle >= s->prop.max_gid) {
        return;
    }
    e = &s->gid[a->handle];
    if (a->remove) {
        e->valid = false;
    } else {
        if (!e->valid) {
            e->valid = true;
            e->type = RNIC_GID_ROCE_V2_IPV6;
            memcpy(e->mac, s->conf.macaddr.a, sizeof(e->mac));
            e->vlan_id = 0xffff;
        }
        memcpy(e->gid, a->gid, sizeof(e->gid));
        if (e->type != RNIC_GID_ROCE_V1) {
            e->type = rnic_ip_is_v4_mapped(e->gid) ? RNIC_GID_ROCE_V2_IPV4 :
                      RNIC_GID_ROCE_V2_IPV6;
        }
    }
    rnic_inj_done(s, RNIC_INJ_GID_CHANGE, a->handle);
    rnic_eq_post(s, 0, RNIC_EQE_GID_CHANGE, a->handle, 0);
}

/*
 * The catastrophic error: the last thing the device does is tell the
 * driver, on EQ 0, then it stops.  STATUS.FATAL tells a driver that
 * polls; nothing but a reset (CTRL.RESET, FLR) starts it again.
 */
static void rnic_inj_fatal(RnicState *s)
{
    s->inj.fatal_due = false;
    if (s->inj.dead) {
        return;
    }
    rnic_inj_done(s, RNIC_INJ_FATAL, RNIC_FATAL_INTERNAL);
    s->status |= RNIC_STATUS_FATAL;
    s->fatal_code = RNIC_FATAL_INTERNAL;
    if (s->eq && s->eq[0].valid) {
        s->eq[0].armed = true;  /* a fatal event always interrupts */
        rnic_eq_post(s, 0, RNIC_EQE_DEVICE_FATAL, 0, RNIC_FATAL_INTERNAL);
    }
    s->inj.dead = true;
}

void rnic_inject_run(RnicState *s)
{
    RnicInject *inj = &s->inj;
    uint32_t i;

    for (i = 0; i < inj->n_act && !rnic_halted(s); i++) {
        const RnicInjAction *a = &inj->act[i];

        if (a->kind == RNIC_INJ_CQ_ERROR) {
            rnic_inj_cq_error(s, a->handle);
        } else if (a->kind == RNIC_INJ_GID_CHANGE) {
            rnic_inj_gid_change(s, a);
        } else {
            rnic_inj_qp_event(s, a);
        }
    }
    inj->n_act = 0;
    if (inj->irq_late_due && !rnic_halted(s)) {
        uint64_t late = inj->irq_late;

        inj->irq_late_due = false;
        inj->irq_late = 0;
        while (late) {
            unsigned v = ctz64(late);

            late &= late - 1;
            trace_rnic_inject_irq_late(v);
            rnic_irq_send(s, v);
        }
    }
    if (inj->fatal_due && !rnic_halted(s)) {
        rnic_inj_fatal(s);
    }
}

/* A reset ends the stopped state and a stall; armed faults stay armed. */
void rnic_inject_reset(RnicState *s)
{
    RnicInject *inj = &s->inj;

    inj->dead = false;
    inj->fatal_due = false;
    inj->n_act = 0;
    inj->cmd_stalled = false;
    timer_del(inj->stall_timer);
    inj->irq_late = 0;
    inj->irq_late_due = false;
    timer_del(inj->irq_timer);
}

void rnic_inject_init(RnicState *s)
{
    RnicInject *inj = &s->inj;

    inj->irq_vector = -1;
    inj->rx_qpn = RNIC_INJ_NO_QP;
    inj->flap_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, rnic_inj_flap_up, s);
    inj->stall_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, rnic_inj_stall_end,
                                    s);
    inj->irq_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, rnic_inj_irq_due, s);
}

void rnic_inject_fini(RnicState *s)
{
    timer_free(s->inj.flap_timer);
    timer_free(s->inj.stall_timer);
    timer_free(s->inj.irq_timer);
    s->inj.flap_timer = s->inj.stall_timer = s->inj.irq_timer = NULL;
}

/* ---- the monitor commands ---- */

static RnicState *rnic_inj_find(const char *path, Error **errp)
{
    Object *obj = object_resolve_path_type(path, TYPE_RNIC, NULL);

    if (!obj) {
        /* An id: -device rnic,id=rnic0 lives under /machine/peripheral. */
        g_autofree char *full = g_strdup_printf("/machine/peripheral/%s",
                                                path);

        obj = object_resolve_path_type(full, TYPE_RNIC, NULL);
    }
    if (!obj) {
        error_setg(errp, "'%s' is not an rnic device", path);
        return NULL;
    }
    if (!DEVICE(obj)->realized) {
        error_setg(errp, "rnic device '%s' is not realized", path);
        return NULL;
    }
    return RNIC(obj);
}

static bool rnic_inj_queue(RnicState *s, RnicInjKind kind, uint8_t eqe,
                           uint32_t handle, Error **errp)
{
    RnicInject *inj = &s->inj;

    if (inj->n_act >= RNIC_INJ_QUEUE) {
        error_setg(errp, "%u injected events are still waiting for the "
                   "device", inj->n_act);
        return false;
    }
    inj->act[inj->n_act++] = (RnicInjAction) {
        .kind = kind, .eqe = eqe, .handle = handle,
    };
    rnic_schedule(s);
    return true;
}

static bool rnic_inj_arm_wc(RnicState *s, const RnicFaultWc *w, Error **errp)
{
    RnicInject *inj = &s->inj;

    if (w->has_qpn && !rnic_qp_get(s, w->qpn)) {
        error_setg(errp, "QP 0x%x does not exist", w->qpn);
        return false;
    }
    if (w->has_percent && (w->percent < 1 || w->percent > 100)) {
        error_setg(errp, "percent must be 1 to 100");
        return false;
    }
    inj->wc_qpn = w->has_qpn ? w->qpn : 0;
    inj->wc_status = rnic_inj_wc_status[w->status];
    inj->wc_left = w->has_count ? w->count : 1;
    inj->wc_percent = w->has_percent ? w->percent : 0;
    inj->wc_rng = w->has_seed && w->seed ? w->seed : 1;
    return true;
}

static bool rnic_inj_arm_qp_event(RnicState *s, const RnicFaultQpEvent *e,
                                  Error **errp)
{
    if (e->event == RNIC_QP_EVENT_SRQ_LIMIT) {
        if (e->handle == 0 || e->handle > s->prop.max_srq ||
            !s->srq[e->handle].valid) {
            error_setg(errp, "SRQ 0x%x does not exist", e->handle);
            return false;
        }
    } else if (!rnic_qp_get(s, e->handle)) {
        error_setg(errp, "QP 0x%x does not exist", e->handle);
        return false;
    }
    return rnic_inj_queue(s, RNIC_INJ_QP_EVENT, rnic_inj_qp_eqe[e->event],
                          e->handle, errp);
}

static bool rnic_inj_arm_gid(RnicState *s, const RnicFaultGid *g,
                             Error **errp)
{
    RnicInject *inj = &s->inj;
    RnicInjAction *a;
    uint8_t gid[16];
    bool remove = g->has_remove && g->remove;

    if (g->index >= s->prop.max_gid) {
        error_setg(errp, "GID index %u: the table has %u entries", g->index,
                   s->prop.max_gid);
        return false;
    }
    if (remove == (g->gid != NULL)) {
        error_setg(errp, "give either gid or remove=true");
        return false;
    }
    if (g->gid && inet_pton(AF_INET6, g->gid, gid) != 1) {
        error_setg(errp, "'%s' is not a GID in IPv6 notation", g->gid);
        return false;
    }
    if (!rnic_inj_queue(s, RNIC_INJ_GID_CHANGE, 0, g->index, errp)) {
        return false;
    }
    a = &inj->act[inj->n_act - 1];
    a->remove = remove;
    if (!remove) {
        memcpy(a->gid, gid, sizeof(a->gid));
    }
    return true;
}

static bool rnic_inj_arm_flap(RnicState *s, const RnicFaultPort *p)
{
    NetClientState *nc = qemu_get_queue(s->nic);
    uint32_t ms = p->has_down_ms ? p->down_ms : 1000;

    rnic_inj_done(s, RNIC_INJ_PORT_FLAP, ms);
    s->inj.port_down = true;
    /* The link as set_link sets it: the netdev drops what crosses it. */
    nc->link_down = true;
    rnic_net_link_status_changed(nc);
    timer_mod(s->inj.flap_timer, qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + ms);
    return true;
}

static void rnic_inj_arm_stall(RnicState *s, const RnicFaultStall *st)
{
    uint32_t ms = st->has_ms ? st->ms : 0;

    rnic_inj_done(s, RNIC_INJ_CMD_STALL, ms);
    s->inj.cmd_stalled = true;
    trace_rnic_inject_stall(true);
    if (ms) {
        timer_mod(s->inj.stall_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + ms);
    } else {
        timer_del(s->inj.stall_timer);
    }
}

static bool rnic_inj_arm_irq(RnicState *s, RnicFault f, const RnicFaultIrq *q,
                             Error **errp)
{
    RnicInject *inj = &s->inj;
    uint32_t count = q->has_count ? q->count : 1;

    if (q->has_vector && q->vector >= s->prop.msix_vectors) {
        error_setg(errp, "vector %u: the device has %u", q->vector,
                   s->prop.msix_vectors);
        return false;
    }
    inj->irq_vector = q->has_vector ? q->vector : -1;
    if (f == RNIC_FAULT_IRQ_DROP) {
        inj->irq_drop_left = count;
    } else {
        inj->irq_delay_left = count;
        inj->irq_delay_ms = q->has_ms ? q->ms : 100;
    }
    return true;
}

void qmp_rnic_inject_fault(RnicFaultSpec *f, Error **errp)
{
    RnicState *s = rnic_inj_find(f->path, errp);

    if (!s) {
        return;
    }
    trace_rnic_inject_arm(RnicFault_str(f->fault));
    switch (f->fault) {
    case RNIC_FAULT_WC_ERROR:
        rnic_inj_arm_wc(s, &f->u.wc_error, errp);
        break;
    case RNIC_FAULT_QP_EVENT:
        rnic_inj_arm_qp_event(s, &f->u.qp_event, errp);
        break;
    case RNIC_FAULT_CQ_ERROR:
        if (!rnic_cq_get(s, f->u.cq_error.cqn)) {
            error_setg(errp, "CQ 0x%x does not exist", f->u.cq_error.cqn);
            return;
        }
        rnic_inj_queue(s, RNIC_INJ_CQ_ERROR, 0, f->u.cq_error.cqn, errp);
        break;
    case RNIC_FAULT_EQ_OVERFLOW:
        if (f->u.eq_overflow.eqn >= s->prop.max_eq ||
            !s->eq[f->u.eq_overflow.eqn].valid) {
            error_setg(errp, "EQ %u does not exist", f->u.eq_overflow.eqn);
            return;
        }
        s->inj.eq_lose_eqn = f->u.eq_overflow.eqn;
        s->inj.eq_lose_left = f->u.eq_overflow.has_count ?
                              f->u.eq_overflow.count : 1;
        break;
    case RNIC_FAULT_PORT_FLAP:
        rnic_inj_arm_flap(s, &f->u.port_flap);
        break;
    case RNIC_FAULT_FATAL:
        s->inj.fatal_due = true;
        rnic_schedule(s);
        break;
    case RNIC_FAULT_CMD_STALL:
        rnic_inj_arm_stall(s, &f->u.cmd_stall);
        break;
    case RNIC_FAULT_IRQ_DROP:
    case RNIC_FAULT_IRQ_DELAY:
        rnic_inj_arm_irq(s, f->fault, &f->u.irq_drop, errp);
        break;
    case RNIC_FAULT_DMA_FAIL:
        if (f->u.dma_fail.has_qpn &&
            !rnic_qp_get(s, f->u.dma_fail.qpn)) {
            error_setg(errp, "QP 0x%x does not exist", f->u.dma_fail.qpn);
            return;
        }
        s->inj.dma_fail_any_qp = !f->u.dma_fail.has_qpn;
        s->inj.dma_fail_qpn = f->u.dma_fail.qpn;
        s->inj.dma_fail_left = f->u.dma_fail.has_count ?
                               f->u.dma_fail.count : 1;
        break;
    case RNIC_FAULT_GID_CHANGE:
        rnic_inj_arm_gid(s, &f->u.gid_change, errp);
        break;
    case RNIC_FAULT_CQE_CORRUPT:
        if (f->u.cqe_corrupt.has_qpn &&
            !rnic_qp_get(s, f->u.cqe_corrupt.qpn)) {
            error_setg(errp, "QP 0x%x does not exist", f->u.cqe_corrupt.qpn);
            return;
        }
        s->inj.cqe_qpn = f->u.cqe_corrupt.has_qpn ? f->u.cqe_corrupt.qpn : 0;
        s->inj.cqe_left = f->u.cqe_corrupt.has_count ?
                          f->u.cqe_corrupt.count : 1;
        break;
    default:
        /*
         * QAPI has checked the name; a fault added to the schema but not
         * here is refused, never an abort of the VM.
         */
        error_setg(errp, "fault '%s' is not implemented",
                   RnicFault_str(f->fault));
        break;
    }
}

/* HMP: rnic_inject PATH FAULT [key=value,...], parsed as the QMP input. */
void hmp_rnic_inject(Monitor *mon, const QDict *qdict)
{
    const char *args = qdict_get_try_str(qdict, "args");
    g_autoptr(QDict) in = NULL;
    RnicFaultSpec *spec = NULL;
    Visitor *v;
    Error *err = NULL;

    if (args) {
        in = keyval_parse(args, NULL, NULL, &err);
        if (err) {
            goto out;
        }
    } else {
        in = qdict_new();
    }
    qdict_put_str(in, "path", qdict_get_str(qdict, "path"));
    qdict_put_str(in, "fault", qdict_get_str(qdict, "fault"));
    v = qobject_input_visitor_new_keyval(QOBJECT(in));
    visit_type_RnicFaultSpec(v, NULL, &spec, &err);
    visit_free(v);
    if (!err) {
        qmp_rnic_inject_fault(spec, &err);
    }
    qapi_free_RnicFaultSpec(spec);
out:
    hmp_handle_error(mon, err);
}

void rnic_inject_hmp_show(Monitor *mon, RnicState *s)
{
    int i;

    monitor_printf(mon, "  injected faults:");
    for (i = 0; i < RNIC_INJ_MAX; i++) {
        monitor_printf(mon, " %s %" PRIu64, rnic_inj_names[i],
                       s->inj.done[i]);
    }
    monitor_printf(mon, "%s%s\n", s->inj.dead ? "; stopped (fatal)" : "",
                   s->inj.cmd_stalled ? "; commands stalled" : "");
}

/* "faults": how many of each injected fault took effect (never reset). */
void rnic_inject_get_faults(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    bool ok = true;
    int i;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (i = 0; i < RNIC_INJ_MAX && ok; i++) {
        ok = visit_type_uint64(v, rnic_inj_names[i], &s->inj.done[i], errp);
    }
    if (ok) {
        ok = visit_type_bool(v, "stopped", &s->inj.dead, errp) &&
             visit_type_bool(v, "commands-stalled", &s->inj.cmd_stalled,
                             errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}
