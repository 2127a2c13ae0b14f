/*
 * rnic: doorbells, CQ and EQ posting, interrupts and the bottom half
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Doorbells only record indices and schedule the bottom half; all ring
 * processing happens there, within a budget, so no guest write can keep
 * the main loop busy for long.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/bitmap.h"
#include "qemu/timer.h"
#include "hw/pci/msix.h"
#include "rnic.h"
#include "trace.h"

/* WQEs or packets one QP may handle per bottom-half run. */
#define RNIC_QP_BUDGET          64
/* WQEs, packets and flushed entries of all QPs together per run. */
#define RNIC_QPS_BUDGET         1024
/* Received RoCE frames handed to the transport per run. */
#define RNIC_RX_BUDGET          256
/* SQ doorbell records read per run besides those of the QPs run. */
#define RNIC_DBREC_SWEEP_BUDGET 64
/* Command work units (a command, or 512 page-list entries) per run. */
#define RNIC_CMD_BUDGET         32
/* CQ events and EQ doorbells handled per run. */
#define RNIC_DB_BUDGET          256
/* QP table slots the CQ-overrun sweep looks at per run. */
#define RNIC_SWEEP_BUDGET       4096

static const char *const rnic_eqe_names[] = {
    [RNIC_EQE_COMP] = "COMP",
    [RNIC_EQE_CQ_ERR] = "CQ_ERR",
    [RNIC_EQE_QP_FATAL] = "QP_FATAL",
    [RNIC_EQE_QP_REQ_ERR] = "QP_REQ_ERR",
    [RNIC_EQE_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
    [RNIC_EQE_COMM_EST] = "COMM_EST",
    [RNIC_EQE_SQ_DRAINED] = "SQ_DRAINED",
    [RNIC_EQE_QP_LAST_WQE] = "QP_LAST_WQE",
    [RNIC_EQE_SRQ_LIMIT] = "SRQ_LIMIT",
    [RNIC_EQE_PORT_ACTIVE] = "PORT_ACTIVE",
    [RNIC_EQE_PORT_DOWN] = "PORT_DOWN",
    [RNIC_EQE_EQ_OVERFLOW] = "EQ_OVERFLOW",
    [RNIC_EQE_DEVICE_FATAL] = "DEVICE_FATAL",
    [RNIC_EQE_GID_CHANGE] = "GID_CHANGE",
    [RNIC_EQE_LID_CHANGE] = "LID_CHANGE",
    [RNIC_EQE_PKEY_CHANGE] = "PKEY_CHANGE",
    [RNIC_EQE_SM_CHANGE] = "SM_CHANGE",
};

static const char *eqe_str(uint8_t type)
{
    if (type < ARRAY_SIZE(rnic_eqe_names) && rnic_eqe_names[type]) {
        return rnic_eqe_names[type];
    }
    return "?";
}

/* ---- interrupts ---- */

static bool rnic_irq_allowed(RnicState *s, unsigned vector)
{
    if (rnic_halted(s)) {
        /* Not even the device's own config space may see a message now. */
        s->pm.irqs_suppressed++;
        trace_rnic_pm_irq_suppressed(vector);
        return false;
    }
    if (vector >= s->prop.msix_vectors || !msix_enabled(PCI_DEVICE(s))) {
        trace_rnic_irq_skipped(vector);
        return false;
    }
    return true;
}

/* Sends a message now, past any injected loss or delay. */
void rnic_irq_send(RnicState *s, unsigned vector)
{
    if (rnic_irq_allowed(s, vector)) {
        trace_rnic_irq(vector);
        msix_notify(PCI_DEVICE(s), vector);
    }
}

void rnic_irq(RnicState *s, unsigned vector)
{
    if (rnic_irq_allowed(s, vector) && !rnic_inject_irq(s, vector)) {
        trace_rnic_irq(vector);
        msix_notify(PCI_DEVICE(s), vector);
    }
}

/* ---- event queues ---- */

static uint8_t rnic_owner_bit(uint32_t idx, uint32_t log_size)
{
    return !((idx >> log_size) & 1);
}

/* Writes one EQE if there is room; false when the EQ is full or broken. */
static bool rnic_eq_write(RnicState *s, RnicEQ *eq, uint8_t type,
                          uint32_t obj, uint32_t data)
{
    uint32_t size = 1u << eq->ring.log_size;
    struct rnic_eqe e = {};

    if (eq->pi - eq->ci >= size) {
        return false;
    }
    e.type = type;
    e.obj = cpu_to_le32(obj);
    e.data = cpu_to_le32(data);
    if (!rnic_ring_write(s, &eq->ring, eq->pi, 0, &e,
                         offsetof(struct rnic_eqe, owner))) {
        trace_rnic_err_ring("EQ", (uint32_t)(eq - s->eq), eq->pi);
        return false;
    }
    e.owner = rnic_owner_bit(eq->pi, eq->ring.log_size);
    if (!rnic_ring_write(s, &eq->ring, eq->pi,
                         offsetof(struct rnic_eqe, owner), &e.owner, 1)) {
        return false;
    }
    eq->pi++;
    if (eq->armed) {
        eq->armed = false;
        rnic_irq(s, eq->vector);
    }
    return true;
}

/* Reports lost events once the guest has made room. */
static void rnic_eq_report_lost(RnicState *s, uint32_t eqn)
{
    RnicEQ *eq = &s->eq[eqn];
    RnicEQ *eq0 = &s->eq[0];

    if (!eq->lost || !eq0->valid) {
        return;
    }
    if (rnic_eq_write(s, eq0, RNIC_EQE_EQ_OVERFLOW, eqn, eq->lost)) {
        eq->lost = 0;
    }
}

void rnic_eq_post(RnicState *s, uint32_t eqn, uint8_t type, uint32_t obj,
                  uint32_t data)
{
    RnicEQ *eq;

    if (!s->eq || eqn >= s->prop.max_eq || !s->eq[eqn].valid) {
        trace_rnic_eq_post_dropped(eqn, eqe_str(type), obj);
        return;
    }
    eq = &s->eq[eqn];
    trace_rnic_eq_post(eqn, eqe_str(type), obj, data, eq->pi);
    if (rnic_inject_eq_lose(s, eqn)) {
        /* Lost as on a full EQ, and reported at once: there is room. */
        eq->lost++;
        trace_rnic_eq_overflow(eqn, eq->lost);
        rnic_eq_report_lost(s, eqn);
        return;
    }
    if (!rnic_eq_write(s, eq, type, obj, data)) {
        /* Counted; reported by an EQ_OVERFLOW EQE once there is room. */
        eq->lost++;
        trace_rnic_eq_overflow(eqn, eq->lost);
    }
}

/* ---- the device clock ---- */

/*
 * The virtual clock: it is monotonic (the host clock may be set back),
 * stops while the VM is stopped, as the guest's own clocks do, is the
 * clock of the device's ACK and RNR timers, and advances only under
 * qtest's control, so tests can predict every timestamp.
 */
static uint64_t rnic_clock_ns(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* ---- completion queues ---- */

/* Re-reads the consumer's index from the dbrec page; true if room now. */
static bool rnic_cq_refresh_ci(RnicState *s, RnicCQ *cq)
{
    uint32_t size = 1u << cq->ring.log_size;
    struct rnic_cq_dbrec rec;
    uint32_t ci;

    if (!cq->ring.pbl.npages ||
        rnic_dma_read(s, cq->ring.pbl.pages[0], &rec,
                     sizeof(rec)) != MEMTX_OK) {
        return false;
    }
    ci = le32_to_cpu(rec.ci);
    /* Only an index within [pi - size, pi] is believable. */
    if (cq->pi - ci <= size) {
        cq->ci = ci;
    }
    return cq->pi - cq->ci < size;
}

static void rnic_cq_event(RnicState *s, RnicCQ *cq, uint32_t cqn)
{
    cq->armed = false;
    cq->armed_solicited = false;
    rnic_eq_post(s, cq->eqn, RNIC_EQE_COMP, cqn, 0);
}

/* The CQ error: it takes no more CQEs, and its QPs go to ERR. */
void rnic_cq_fail(RnicState *s, RnicCQ *cq, uint32_t cqn)
{
    cq->overrun = true;
    rnic_eq_post(s, 0, RNIC_EQE_CQ_ERR, cqn, 0);
    /* The QPs go to ERR from the bottom half, not in the middle of a post. */
    /* From the start: QPs the current pass went by may use this CQ. */
    s->overrun_sweep = true;
    s->sweep_next = 0;
    rnic_schedule(s);
}

static void rnic_cq_overrun(RnicState *s, RnicCQ *cq, uint32_t cqn)
{
    RNIC_GUEST_ERR(rnic_cq_overrun(cqn, cq->pi, cq->ci), s,
                   "CQ 0x%x overrun", cqn);
    rnic_cq_fail(s, cq, cqn);
}

bool rnic_cq_post(RnicState *s, uint32_t cqn, const struct rnic_cqe *in)
{
    RnicCQ *cq = rnic_cq_get(s, cqn);
    struct rnic_cqe e;
    uint32_t size;
    uint8_t owner;

    if (!cq) {
        trace_rnic_cq_post_dropped(cqn, "no such CQ");
        return false;
    }
    if (cq->overrun) {
        trace_rnic_cq_post_dropped(cqn, "overrun");
        return false;
    }
    size = 1u << cq->ring.log_size;
    if (cq->pi - cq->ci >= size && !rnic_cq_refresh_ci(s, cq)) {
        rnic_cq_overrun(s, cq, cqn);
        return false;
    }

    e = *in;
    rnic_inject_cqe(s, &e);
    e.wr_id = cpu_to_le64(e.wr_id);
    e.qpn = cpu_to_le32(in->qpn);
    e.byte_len = cpu_to_le32(in->byte_len);
    e.imm_inv = cpu_to_le32(in->imm_inv);
    e.src_qp = cpu_to_le32(in->src_qp);
    e.wqe_idx = cpu_to_le16(e.wqe_idx);
    e.timestamp = cpu_to_le64(rnic_clock_ns());
    e.owner = 0;
    if (!rnic_ring_write(s, &cq->ring, cq->pi, 0, &e,
                         offsetof(struct rnic_cqe, owner))) {
        trace_rnic_err_ring("CQ", cqn, cq->pi);
        rnic_cq_overrun(s, cq, cqn);
        return false;
    }
    owner = rnic_owner_bit(cq->pi, cq->ring.log_size);
    if (!rnic_ring_write(s, &cq->ring, cq->pi,
                         offsetof(struct rnic_cqe, owner), &owner, 1)) {
        rnic_cq_overrun(s, cq, cqn);
        return false;
    }
    trace_rnic_cq_post(cqn, cq->pi, in->qpn, in->opcode, in->status,
                       in->wqe_idx, le64_to_cpu(e.timestamp));
    cq->pi++;
    if (in->status != RNIC_WC_SUCCESS) {
        s->cnt[RNIC_CNT_CQE_ERR]++;
    }
    if (cq->armed &&
        (!cq->armed_solicited || (in->flags & RNIC_CQE_SOLICITED) ||
         in->status != RNIC_WC_SUCCESS)) {
        rnic_cq_event(s, cq, cqn);
    }
    return true;
}

/*
 * Carries the CQEs not yet consumed over to 'ring', as its entries 0..n-1
 * with the new ring's owner bits, and makes it the CQ's ring; the caller
 * frees the old page list.  Nothing changes on failure: -E2BIG when the
 * entries do not fit, -EBUSY when there are more than RNIC_CQ_MOVE_MAX,
 * -EIO when a ring cannot be accessed.
 */
int rnic_cq_move(RnicState *s, RnicCQ *cq, const RnicRing *ring,
                 uint32_t *moved)
{
    uint32_t n, k;

    rnic_cq_refresh_ci(s, cq);
    n = cq->pi - cq->ci;
    if (n > (1u << ring->log_size)) {
        return -E2BIG;
    }
    if (n > RNIC_CQ_MOVE_MAX) {
        return -EBUSY;
    }
    for (k = 0; k < n; k++) {
        uint8_t owner = rnic_owner_bit(k, ring->log_size);
        struct rnic_cqe e;

        if (!rnic_ring_read(s, &cq->ring, cq->ci + k, &e, sizeof(e))) {
            return -EIO;
        }
        /* As in rnic_cq_post: the owner byte goes last. */
        if (!rnic_ring_write(s, ring, k, 0, &e,
                             offsetof(struct rnic_cqe, owner)) ||
            !rnic_ring_write(s, ring, k, offsetof(struct rnic_cqe, owner),
                             &owner, 1)) {
            return -EIO;
        }
    }
    cq->ring = *ring;
    cq->pi = n;
    cq->ci = 0;
    *moved = n;
    return 0;
}

/*
 * Moves every QP of an overrun CQ to ERR, a slice of the QP table per
 * run; the flushes themselves happen in each QP's budgeted run.
 */
static void rnic_overrun_sweep(RnicState *s)
{
    uint32_t n = RNIC_SWEEP_BUDGET;

    while (n-- && s->overrun_sweep) {
        uint32_t i = s->sweep_next;
        RnicQP *qp;

        s->sweep_next++;
        if (s->sweep_next > s->prop.max_qp + 1) {
            s->sweep_next = 0;
            s->overrun_sweep = false;
        }
        qp = s->qp[i];
        if (qp) {
            RnicCQ *scq = rnic_cq_get(s, qp->send_cqn);
            RnicCQ *rcq = rnic_cq_get(s, qp->recv_cqn);

            if ((scq && scq->overrun) || (rcq && rcq->overrun)) {
                rnic_qp_fatal(s, qp, RNIC_EQE_QP_FATAL);
            }
        }
    }
}

/* ---- QPs ---- */

void rnic_qp_fatal(RnicState *s, RnicQP *qp, uint8_t eqe_type)
{
    uint8_t old = qp->state;

    /* A QP in RESET has nothing to flush; one in ERR was flushed already. */
    if (old == RNIC_QPS_ERR || old == RNIC_QPS_RESET) {
        return;
    }
    trace_rnic_qp_fatal(qp->qpn, old, eqe_str(eqe_type));
    qp->state = RNIC_QPS_ERR;
    rnic_tp_qp_modified(s, qp, old, RNIC_QP_ATTR_STATE);
    rnic_tp_qp_flush(s, qp);
    if (eqe_type) {
        rnic_eq_post(s, 0, eqe_type, qp->qpn, 0);
    }
    rnic_qp_last_wqe(s, qp);
    rnic_qp_schedule(s, qp);
}

/*
 * A QP that receives from an SRQ has just entered ERR: it takes no more
 * WQEs from the SRQ, and says so, as the IBA's Last WQE Reached event.
 * A consumer that drains such a QP (ib_drain_qp) waits for this event,
 * not for a flushed receive: the SRQ's WQEs are not the QP's to flush.
 */
void rnic_qp_last_wqe(RnicState *s, RnicQP *qp)
{
    if (qp->srqn) {
        rnic_eq_post(s, 0, RNIC_EQE_QP_LAST_WQE, qp->qpn, 0);
    }
}

void rnic_qp_schedule(RnicState *s, RnicQP *qp)
{
    if (!qp->scheduled) {
        qp->scheduled = true;
        QTAILQ_INSERT_TAIL(&s->work_list, qp, work_next);
    }
    qemu_bh_schedule(s->bh);
}

void rnic_schedule(RnicState *s)
{
    qemu_bh_schedule(s->bh);
}

/* ---- doorbells (BAR2) ---- */

/*
 * SQ/RQ/SRQ producer indices carry 16 significant bits; widen them
 * against the device's free-running consumer index.
 */
bool rnic_wq_doorbell(RnicState *s, const char *what, uint32_t qn,
                      RnicWq *wq, uint32_t idx)
{
    uint32_t size = 1u << wq->ring.log_size;
    uint16_t delta = (uint16_t)(idx - wq->ci);
    uint16_t cur = (uint16_t)(wq->pi - wq->ci);

    if (delta > size) {
        RNIC_GUEST_ERR(rnic_err_db_index(what, qn, idx, wq->ci, size), s,
                       "%s 0x%x doorbell %u: more than %u WQEs past %u", what,
                       qn, idx, size, wq->ci);
        return false;
    }
    if (delta < cur) {
        RNIC_GUEST_ERR(rnic_err_db_backwards(what, qn, idx, wq->pi), s,
                       "%s 0x%x doorbell %u behind %u", what, qn, idx, wq->pi);
        return false;
    }
    wq->pi = wq->ci + delta;
    trace_rnic_db_wq(what, qn, wq->pi);
    return true;
}

static RnicQP *rnic_db_qp(RnicState *s, uint16_t uctx, uint32_t qn)
{
    RnicQP *qp = rnic_qp_get(s, qn);

    if (!qp) {
        RNIC_GUEST_ERR(rnic_err_db_handle("QP", qn, uctx), s,
                       "doorbell for QP 0x%x that does not exist", qn);
        return NULL;
    }
    if (qp->uctx != uctx) {
        RNIC_GUEST_ERR(rnic_err_db_owner("QP", qn, qp->uctx, uctx), s,
                       "doorbell page %u rang QP 0x%x of context %u", uctx, qn,
                       qp->uctx);
        return NULL;
    }
    return qp;
}

static void rnic_db_sq_rq(RnicState *s, uint16_t uctx, uint32_t qn,
                          uint32_t idx, bool sq)
{
    RnicQP *qp = rnic_db_qp(s, uctx, qn);

    if (!qp) {
        return;
    }
    if (!sq && qp->srqn) {
        RNIC_GUEST_ERR(rnic_err_db_handle("RQ of an SRQ QP", qn, uctx), s,
                       "RQ doorbell for QP 0x%x which uses an SRQ", qn);
        return;
    }
    if (qp->state == RNIC_QPS_RESET) {
        RNIC_GUEST_ERR(rnic_err_db_state(qn, qp->state), s,
                       "doorbell for QP 0x%x in RESET", qn);
        return;
    }
    if (rnic_wq_doorbell(s, sq ? "SQ" : "RQ", qn, sq ? &qp->sq : &qp->rq,
                         idx)) {
        s->cnt[RNIC_CNT_SQ_DOORBELLS] += sq;
        rnic_qp_schedule(s, qp);
    }
}

static void rnic_db_srq(RnicState *s, uint16_t uctx, uint32_t qn, uint32_t idx)
{
    RnicSRQ *srq = rnic_srq_get(s, qn);

    if (!srq) {
        RNIC_GUEST_ERR(rnic_err_db_handle("SRQ", qn, uctx), s,
                       "doorbell for SRQ 0x%x that does not exist", qn);
        return;
    }
    if (srq->uctx != uctx) {
        RNIC_GUEST_ERR(rnic_err_db_owner("SRQ", qn, srq->uctx, uctx), s,
                       "doorbell page %u rang SRQ 0x%x of context %u", uctx, qn,
                       srq->uctx);
        return;
    }
    /*
     * Nothing waits for SRQ WQEs: receive WQEs are taken when a request
     * arrives, and a peer we sent an RNR NAK retries on its own timer.
     */
    rnic_wq_doorbell(s, "SRQ", qn, &srq->wq, idx);
}

static void rnic_db_cq(RnicState *s, uint16_t uctx, uint32_t qn, uint64_t val)
{
    RnicCQ *cq = rnic_cq_get(s, qn);
    uint32_t ci = val >> 32;

    if (!cq) {
        RNIC_GUEST_ERR(rnic_err_db_handle("CQ", qn, uctx), s,
                       "doorbell for CQ 0x%x that does not exist", qn);
        return;
    }
    if (cq->uctx != uctx) {
        RNIC_GUEST_ERR(rnic_err_db_owner("CQ", qn, cq->uctx, uctx), s,
                       "doorbell page %u rang CQ 0x%x of context %u", uctx, qn,
                       cq->uctx);
        return;
    }
    if (cq->pi - ci > (1u << cq->ring.log_size)) {
        RNIC_GUEST_ERR(rnic_err_db_index("CQ", qn, ci, cq->pi,
                                         1u << cq->ring.log_size), s,
                       "CQ 0x%x doorbell ci %u not within pi %u", qn, ci,
                       cq->pi);
        return;
    }
    cq->ci = ci;
    trace_rnic_db_cq(qn, ci, !!(val & RNIC_DB_ARM),
                     !!(val & RNIC_DB_ARM_SOLICITED));
    if (val & (RNIC_DB_ARM | RNIC_DB_ARM_SOLICITED)) {
        cq->armed = true;
        cq->armed_solicited = !(val & RNIC_DB_ARM) &&
                              (val & RNIC_DB_ARM_SOLICITED);
        /*
         * CQEs the consumer has not seen yet: the bottom half fires the
         * event rather than lose the wake-up (possibly spurious for a
         * solicited-only arm).
         */
        if (cq->pi != cq->ci) {
            set_bit(qn, s->cq_ev);
            s->cq_ev_any = true;
            rnic_schedule(s);
        }
    }
}

static void rnic_db_eq(RnicState *s, uint16_t uctx, uint32_t qn, uint64_t val)
{
    uint32_t ci = val >> 32;
    RnicEQ *eq;

    if (uctx != 0) {
        RNIC_GUEST_ERR(rnic_err_db_owner("EQ", qn, 0, uctx), s,
                       "EQ doorbell on user page %u", uctx);
        return;
    }
    if (qn >= s->prop.max_eq || !s->eq[qn].valid) {
        RNIC_GUEST_ERR(rnic_err_db_handle("EQ", qn, uctx), s,
                       "doorbell for EQ 0x%x that does not exist", qn);
        return;
    }
    eq = &s->eq[qn];
    if (eq->pi - ci > (1u << eq->ring.log_size)) {
        RNIC_GUEST_ERR(rnic_err_db_index("EQ", qn, ci, eq->pi,
                                         1u << eq->ring.log_size), s,
                       "EQ 0x%x doorbell ci %u not within pi %u", qn, ci,
                       eq->pi);
        return;
    }
    eq->ci = ci;
    trace_rnic_db_eq(qn, ci, !!(val & RNIC_DB_ARM));
    if (val & RNIC_DB_ARM) {
        eq->armed = true;
    }
    /* Lost-event reports and the interrupt come from the bottom half. */
    eq->db_pending = true;
    s->eq_db_pending = true;
    rnic_schedule(s);
}

/* The doorbell work the MMIO handlers left for the bottom half. */
static void rnic_db_run(RnicState *s)
{
    unsigned long nbits = s->prop.max_cq + 1;
    unsigned budget = RNIC_DB_BUDGET;
    uint32_t i;

    while (s->cq_ev_any) {
        unsigned long cqn = find_first_bit(s->cq_ev, nbits);
        RnicCQ *cq;

        if (cqn >= nbits) {
            s->cq_ev_any = false;
            break;
        }
        if (!budget--) {
            break;
        }
        clear_bit(cqn, s->cq_ev);
        cq = rnic_cq_get(s, cqn);
        if (cq && cq->armed && cq->pi != cq->ci) {
            rnic_cq_event(s, cq, cqn);
        }
    }
    if (!s->eq_db_pending) {
        return;
    }
    s->eq_db_pending = false;
    for (i = 0; i < s->prop.max_eq; i++) {
        RnicEQ *eq = &s->eq[i];

        if (!eq->valid || !eq->db_pending) {
            continue;
        }
        eq->db_pending = false;
        rnic_eq_report_lost(s, i);
        if (i != 0) {
            rnic_eq_report_lost(s, 0);
        }
        if (eq->armed && eq->pi != eq->ci) {
            eq->armed = false;
            rnic_irq(s, eq->vector);
        }
    }
}

/* The one readable doorbell register: the clock, on every page. */
static uint64_t rnic_db_read(void *opaque, hwaddr addr, unsigned size)
{
    uint32_t page = addr / RNIC_DB_PAGE_SIZE;
    uint64_t now;

    if (addr % RNIC_DB_PAGE_SIZE != RNIC_DB_CLOCK || size != 8) {
        trace_rnic_ub_db_read(addr, size);
        return 0;
    }
    now = rnic_clock_ns();
    trace_rnic_db_clock(page, now);
    return now;
}

static void rnic_db_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    RnicState *s = opaque;
    uint32_t page = addr / RNIC_DB_PAGE_SIZE;
    uint32_t off = addr % RNIC_DB_PAGE_SIZE;
    uint32_t qn = val & RNIC_DB_QN_MASK;
    uint16_t uctx;

    /* The guard keeps BAR handlers out of the bottom half: reset here. */
    rnic_pm_run_reset(s);
    if (!rnic_pm_d0(s)) {
        /* QEMU unmaps the BARs outside D0; be sure all the same. */
        s->pm.doorbells_dropped++;
        trace_rnic_pm_doorbell_dropped(addr, val);
        return;
    }
    if (size != 8 || (addr & 7)) {
        RNIC_GUEST_ERR(rnic_ub_db_width(addr, size), s,
                       "%u-byte doorbell write at 0x%" HWADDR_PRIx, size, addr);
        return;
    }
    if (!(s->status & RNIC_STATUS_READY)) {
        RNIC_GUEST_ERR(rnic_err_db_not_ready(addr, val), s,
                       "doorbell while the device is not ready");
        return;
    }
    if (page > s->prop.max_uctx ||
        (page != RNIC_DB_PAGE_KERNEL && !s->uctx[page].valid)) {
        RNIC_GUEST_ERR(rnic_err_db_page(page), s,
                       "doorbell on page %u with no context", page);
        return;
    }
    uctx = page;
    trace_rnic_db(page, off, val);

    switch (off) {
    case RNIC_DB_SQ:
        rnic_db_sq_rq(s, uctx, qn, val >> 32, true);
        break;
    case RNIC_DB_RQ:
        rnic_db_sq_rq(s, uctx, qn, val >> 32, false);
        break;
    case RNIC_DB_CQ:
        rnic_db_cq(s, uctx, qn, val);
        break;
    case RNIC_DB_SRQ:
        rnic_db_srq(s, uctx, qn, val >> 32);
        break;
    case RNIC_DB_EQ:
        rnic_db_eq(s, uctx, qn, val);
        break;
    case RNIC_DB_CLOCK:
        RNIC_GUEST_ERR(rnic_ub_db_ro(page, off), s,
                       "write to the read-only clock");
        break;
    default:
        RNIC_GUEST_ERR(rnic_ub_db_offset(page, off), s,
                       "doorbell at unknown offset 0x%x", off);
        break;
    }
}

const MemoryRegionOps rnic_db_ops = {
    .read = rnic_db_read,
    .write = rnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---- bottom half ---- */

/*
 * The one place where the device does its work.  Each kind of work has
 * its own budget per run; what is left reschedules the bottom half, so
 * the main loop (and other devices) get their turn in between.
 */
void rnic_bh(void *opaque)
{
    RnicState *s = opaque;
    int rx_budget = RNIC_RX_BUDGET;
    int total = RNIC_QPS_BUDGET;
    bool again;
    unsigned n;

    /* Nothing of the device is on the stack yet: a due reset runs now. */
    rnic_pm_run_reset(s);
    /* Picked up again by rnic_vm_state_change() when the VM runs. */
    if (!runstate_is_running()) {
        s->bh_deferred = true;
        return;
    }
    if (!rnic_pm_d0(s)) {
        /* The work waits; D0 entry resets the function anyway. */
        s->pm.work_deferred++;
        trace_rnic_pm_work_deferred();
        return;
    }
    if (s->inj.dead) {
        /* Stopped by a fatal error: only a reset clears what waits. */
        return;
    }
    /* A flap since the last run: the way there, then where it is now. */
    while (s->link_events) {
        bool up = s->link_up ^ (s->link_events == 2);

        s->link_events--;
        rnic_eq_post(s, 0, up ? RNIC_EQE_PORT_ACTIVE : RNIC_EQE_PORT_DOWN,
                     1, 0);
    }
    if (s->ibp.events) {
        rnic_ib_post_events(s);
    }
    rnic_db_run(s);
    /* Injected faults before the work they may fail. */
    rnic_inject_run(s);
    if (s->overrun_sweep && !rnic_halted(s)) {
        rnic_overrun_sweep(s);
    }

    /* Received ACKs first: they open windows for the requesters below. */
    if (!rnic_halted(s)) {
        rnic_net_rx_run(s, &rx_budget);
    }
    if (!rnic_halted(s)) {
        rnic_sq_dbrec_sweep(s, RNIC_DBREC_SWEEP_BUDGET);
    }

    /* Only the QPs queued now: ones re-queued below wait for the next run. */
    n = 0;
    {
        RnicQP *qp;

        QTAILQ_FOREACH(qp, &s->work_list, work_next) {
            n++;
        }
    }
    /*
     * A write of the device's own (to its config space, say) may have
     * halted it at any point above or below: stop at the next step, then
     * reset at the end, with no object of ours in use.
     */
    while (n-- && total > 0 && !QTAILQ_EMPTY(&s->work_list) &&
           !rnic_halted(s)) {
        RnicQP *qp = QTAILQ_FIRST(&s->work_list);
        int budget = MIN(RNIC_QP_BUDGET, total);

        QTAILQ_REMOVE(&s->work_list, qp, work_next);
        qp->scheduled = false;
        total -= budget;
        rnic_tp_qp_run(s, qp, &budget);
        /*
         * What the QP left, or what it overspent: a REG_MR WQE charges
         * its page list and may drive the budget far below zero, and the
         * run pays for all of it, not only for the QP's share.
         */
        total += budget;
        if (budget <= 0 && !qp->scheduled) {
            qp->scheduled = true;
            QTAILQ_INSERT_TAIL(&s->work_list, qp, work_next);
        }
    }

    /*
     * Commands after the work queues: a WQE whose doorbell the guest rang
     * before posting a command has then completed, as a driver expects
     * (RESIZE_CQ must count its CQE, for one).
     */
    if (s->cmd_pending && !rnic_halted(s)) {
        rnic_cmdq_run(s, RNIC_CMD_BUDGET);
    }

    if (!rnic_halted(s)) {
        rnic_net_tx_run(s);
        rnic_net_delay_run(s);
        /* A frame held back for reordering waits no longer than this run. */
        rnic_net_flush_held(s);
    }

    if (rnic_pm_run_reset(s) || !rnic_pm_d0(s) || s->inj.dead) {
        return;
    }
    again = !QTAILQ_EMPTY(&s->work_list) || rnic_net_rx_pending(s) ||
            s->cmd_pending || s->overrun_sweep || s->cq_ev_any ||
            s->eq_db_pending || rnic_inject_pending(s);
    if (again) {
        qemu_bh_schedule(s->bh);
    }
}
