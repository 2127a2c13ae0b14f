/*
 * rnic: the device's state for the host, as read-only QOM properties that
 * `qom-get` reads over QMP: "objects" (how many of each object exist, and
 * how many belong to verbs programs), "counters" and "qps"; and the same
 * for people, per device, from the HMP command `info rnic`.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qom/object.h"
#include "qemu/cutils.h"
#include "monitor/monitor.h"
#include "monitor/hmp.h"
#include "net/net.h"
#include "rnic.h"

/* The names the guest driver gives the same counters. */
static const char *const rnic_cnt_names[RNIC_CNT_MAX] = {
    [RNIC_CNT_TX_PKTS] = "tx_pkts",
    [RNIC_CNT_RX_PKTS] = "rx_pkts",
    [RNIC_CNT_TX_BYTES] = "tx_bytes",
    [RNIC_CNT_RX_BYTES] = "rx_bytes",
    [RNIC_CNT_RETRANSMITS] = "retransmits",
    [RNIC_CNT_ACK_TIMEOUTS] = "ack_timeouts",
    [RNIC_CNT_RNR_NAK_RCVD] = "rnr_nak_rcvd",
    [RNIC_CNT_RNR_NAK_SENT] = "rnr_nak_sent",
    [RNIC_CNT_SEQ_NAK_RCVD] = "seq_nak_rcvd",
    [RNIC_CNT_SEQ_NAK_SENT] = "seq_nak_sent",
    [RNIC_CNT_DUP_REQ] = "duplicate_request",
    [RNIC_CNT_RX_ICRC_ERR] = "rx_icrc_errors",
    [RNIC_CNT_RX_DROPPED] = "rx_dropped",
    [RNIC_CNT_TX_LOSS_INJECTED] = "tx_loss_injected",
    [RNIC_CNT_LOOPBACK_PKTS] = "loopback_pkts",
    [RNIC_CNT_CQE_ERR] = "cqe_errors",
    [RNIC_CNT_ETH_TX_PKTS] = "eth_tx_pkts",
    [RNIC_CNT_ETH_RX_PKTS] = "eth_rx_pkts",
    [RNIC_CNT_ETH_RX_DROPPED] = "eth_rx_dropped",
    [RNIC_CNT_GUEST_ERR] = "guest_errors",
    [RNIC_CNT_TX_REORDER_INJECTED] = "tx_reorder_injected",
    [RNIC_CNT_TX_DUP_INJECTED] = "tx_duplicate_injected",
    [RNIC_CNT_TX_CORRUPT_INJECTED] = "tx_corrupt_injected",
    [RNIC_CNT_TX_DELAY_INJECTED] = "tx_delay_injected",
    [RNIC_CNT_CWND_CUTS] = "cwnd_cuts",
    [RNIC_CNT_TAIL_PROBES] = "tail_probes",
    [RNIC_CNT_RAW_TX_PKTS] = "raw_tx_pkts",
    [RNIC_CNT_RAW_RX_PKTS] = "raw_rx_pkts",
    [RNIC_CNT_RAW_RX_DROPPED] = "raw_rx_dropped",
    [RNIC_CNT_TX_ROCE_V1] = "tx_roce_v1_pkts",
    [RNIC_CNT_RX_ROCE_V1] = "rx_roce_v1_pkts",
    [RNIC_CNT_ECN_CE_RCVD] = "ecn_ce_rcvd",
    [RNIC_CNT_CNP_SENT] = "cnp_sent",
    [RNIC_CNT_CNP_RCVD] = "cnp_rcvd",
    [RNIC_CNT_SQ_DOORBELLS] = "sq_doorbells",
    [RNIC_CNT_SQ_DBREC_WQES] = "sq_dbrec_wqes",
    [RNIC_CNT_OOO_KEPT] = "ooo_kept",
    [RNIC_CNT_SR_RESENDS] = "sr_resends",
    [RNIC_CNT_IB_TX_NOT_ACTIVE] = "ib_tx_port_not_active",
    [RNIC_CNT_IB_RX_NOT_ACTIVE] = "ib_rx_port_not_active",
    [RNIC_CNT_IB_RX_DLID_ERR] = "ib_rx_dlid_errors",
    [RNIC_CNT_IB_RX_PKEY_ERR] = "ib_rx_pkey_errors",
};

/* The tables exist from realize on. */
static bool rnic_qom_ready(Object *obj, Error **errp)
{
    if (!DEVICE(obj)->realized) {
        error_setg(errp, "rnic: device not realized yet");
        return false;
    }
    return true;
}

typedef struct RnicCounts {
    uint32_t uctx, pd, cq, eq, qp, srq, mr, mw, mcast_grp, flow;
} RnicCounts;

/*
 * Every object in *all; in *user those of a user context (verbs
 * programs), or with only_uctx != 0 those of that one context only.
 */
static void rnic_count_uctx(RnicState *s, RnicCounts *all, RnicCounts *user,
                            uint16_t only_uctx)
{
    uint32_t i;

    memset(all, 0, sizeof(*all));
    memset(user, 0, sizeof(*user));
#define RNIC_COUNT(field, obj_valid, obj_uctx)                  \
    do {                                                        \
        if (obj_valid) {                                        \
            all->field++;                                       \
            user->field += only_uctx ? (obj_uctx) == only_uctx  \
                                     : (obj_uctx) != 0;         \
        }                                                       \
    } while (0)
    for (i = 1; i <= s->prop.max_uctx; i++) {
        RNIC_COUNT(uctx, s->uctx[i].valid, i);
    }
    for (i = 1; i <= s->prop.max_pd; i++) {
        RNIC_COUNT(pd, s->pd[i].valid, s->pd[i].uctx);
    }
    for (i = 1; i <= s->prop.max_cq; i++) {
        RNIC_COUNT(cq, s->cq[i].valid, s->cq[i].uctx);
    }
    for (i = 0; i < s->prop.max_eq; i++) {
        RNIC_COUNT(eq, s->eq[i].valid, 0);
    }
    for (i = 0; i < s->prop.max_qp + 2; i++) {
        RNIC_COUNT(qp, s->qp[i] != NULL, s->qp[i] ? s->qp[i]->uctx : 0);
    }
    for (i = 1; i <= s->prop.max_srq; i++) {
        RNIC_COUNT(srq, s->srq[i].valid, s->srq[i].uctx);
    }
    for (i = 1; i <= s->prop.max_mr; i++) {
        RNIC_COUNT(mr, s->mr[i].valid, s->mr[i].uctx);
    }
    for (i = 1; i <= s->prop.max_mw; i++) {
        RNIC_COUNT(mw, s->mw[i].valid, s->mw[i].uctx);
    }
    for (i = 0; i < s->prop.max_mcast_grp; i++) {
        RNIC_COUNT(mcast_grp, s->mcast[i].nqp != 0, 0);
    }
    for (i = 0; i < s->prop.max_flow; i++) {
        RNIC_COUNT(flow, s->flow[i].valid, s->flow[i].uctx);
    }
#undef RNIC_COUNT
}

static void rnic_count(RnicState *s, RnicCounts *all, RnicCounts *user)
{
    rnic_count_uctx(s, all, user, 0);
}

static bool rnic_visit_counts(Visitor *v, const char *name, RnicCounts *c,
                              Error **errp)
{
    bool ok;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return false;
    }
    ok = visit_type_uint32(v, "uctx", &c->uctx, errp) &&
         visit_type_uint32(v, "pd", &c->pd, errp) &&
         visit_type_uint32(v, "cq", &c->cq, errp) &&
         visit_type_uint32(v, "eq", &c->eq, errp) &&
         visit_type_uint32(v, "qp", &c->qp, errp) &&
         visit_type_uint32(v, "srq", &c->srq, errp) &&
         visit_type_uint32(v, "mr", &c->mr, errp) &&
         visit_type_uint32(v, "mw", &c->mw, errp) &&
         visit_type_uint32(v, "mcast-grp", &c->mcast_grp, errp) &&
         visit_type_uint32(v, "flow", &c->flow, errp);
    if (ok) {
        ok = visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
    return ok;
}

/*
 * "objects": {"all": {...}, "user": {...}, "host-mem": bytes}.  With no
 * verbs program running, "user" is all zeros: a check that teardown left
 * nothing behind in the device.
 */
static void rnic_get_objects(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    RnicCounts all, user;
    uint64_t mem = s->host_mem_used;
    bool ok;

    if (!rnic_qom_ready(obj, errp)) {
        return;
    }

    rnic_count(s, &all, &user);
    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    ok = rnic_visit_counts(v, "all", &all, errp) &&
         rnic_visit_counts(v, "user", &user, errp) &&
         visit_type_uint64(v, "host-mem", &mem, errp);
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

static void rnic_get_counters(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    bool ok = true;
    unsigned i;

    if (!rnic_qom_ready(obj, errp)) {
        return;
    }
    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    for (i = 0; i < RNIC_CNT_MAX && ok; i++) {
        uint64_t val = s->cnt[i];

        ok = visit_type_uint64(v, rnic_cnt_names[i], &val, errp);
    }
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

/*
 * "power": the PMCSR state and what the device refused to do outside D0
 * or with a reset due (rnic-pm.c).  Never reset, unlike "counters".
 */
static void rnic_get_power(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    char *state;
    bool pending;
    bool ok;

    if (!rnic_qom_ready(obj, errp)) {
        return;
    }
    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    state = (char *)(rnic_pm_d0(s) ? "D0" : "D3hot");
    pending = s->reset_pending;
    ok = visit_type_str(v, "state", &state, errp) &&
         visit_type_bool(v, "reset-pending", &pending, errp) &&
         visit_type_uint64(v, "frames-dropped", &s->pm.frames_dropped,
                           errp) &&
         visit_type_uint64(v, "doorbells-dropped", &s->pm.doorbells_dropped,
                           errp) &&
         visit_type_uint64(v, "work-deferred", &s->pm.work_deferred, errp) &&
         visit_type_uint64(v, "dma-refused", &s->pm.dma_refused, errp) &&
         visit_type_uint64(v, "irqs-suppressed", &s->pm.irqs_suppressed,
                           errp) &&
         visit_type_uint64(v, "resets", &s->pm.resets, errp);
    if (ok) {
        visit_check_struct(v, errp);
    }
    visit_end_struct(v, NULL);
}

static const char *const rnic_qpt_names[] = {
    [RNIC_QPT_RC] = "RC", [RNIC_QPT_UC] = "UC", [RNIC_QPT_UD] = "UD",
    [RNIC_QPT_GSI] = "GSI", [RNIC_QPT_RAW_PACKET] = "RAW",
    [RNIC_QPT_SMI] = "SMI",
};

/* "qps": [{"qpn", "type", "state", "uctx"}, ...] in QPN order. */
static void rnic_get_qps(Object *obj, Visitor *v, const char *name,
                         void *opaque, Error **errp)
{
    RnicState *s = RNIC(obj);
    bool ok = true;
    uint32_t i;

    if (!rnic_qom_ready(obj, errp)) {
        return;
    }
    if (!visit_start_list(v, name, NULL, 0, errp)) {
        return;
    }
    for (i = 0; i < s->prop.max_qp + 2 && ok; i++) {
        RnicQP *qp = s->qp[i];
        uint32_t qpn, uctx;
        char *type, *state;

        if (!qp) {
            continue;
        }
        qpn = qp->qpn;
        uctx = qp->uctx;
        type = (char *)(qp->type < ARRAY_SIZE(rnic_qpt_names) &&
                        rnic_qpt_names[qp->type] ?
                        rnic_qpt_names[qp->type] : "?");
        state = (char *)rnic_qps_str(qp->state);
        ok = visit_start_struct(v, NULL, NULL, 0, errp);
        if (!ok) {
            break;
        }
        ok = visit_type_uint32(v, "qpn", &qpn, errp) &&
             visit_type_str(v, "type", &type, errp) &&
             visit_type_str(v, "state", &state, errp) &&
             visit_type_uint32(v, "uctx", &uctx, errp);
        if (ok) {
            ok = visit_check_struct(v, errp);
        }
        visit_end_struct(v, NULL);
    }
    if (ok) {
        visit_check_list(v, errp);
    }
    visit_end_list(v, NULL);
}

void rnic_qom_init(Object *obj)
{
    object_property_add(obj, "objects", "RnicObjects", rnic_get_objects,
                        NULL, NULL, NULL);
    object_property_set_description(obj, "objects",
        "read-only: objects in the device, all and those of verbs programs, "
        "and the host memory they hold");
    object_property_add(obj, "counters", "RnicCounters", rnic_get_counters,
                        NULL, NULL, NULL);
    object_property_set_description(obj, "counters",
        "read-only: the device's statistics counters");
    object_property_add(obj, "power", "RnicPower", rnic_get_power, NULL,
                        NULL, NULL);
    object_property_set_description(obj, "power",
        "read-only: power state, and what the device refused while outside "
        "D0 or with a function reset due (never reset)");
    object_property_add(obj, "qps", "RnicQPs", rnic_get_qps, NULL, NULL,
                        NULL);
    object_property_add(obj, "faults", "RnicFaults", rnic_inject_get_faults,
                        NULL, NULL, NULL);
    object_property_set_description(obj, "faults",
        "read-only: how many of each host-injected fault took effect, "
        "and whether the device is stopped or its commands stalled");
    object_property_set_description(obj, "qps",
        "read-only: each queue pair's number, type, state and user context");
}

/* ---- HMP: info rnic ---- */

static void rnic_hmp_counts(Monitor *mon, const char *what,
                            const RnicCounts *c)
{
    monitor_printf(mon, "    %-8s uctx %u pd %u cq %u eq %u qp %u srq %u "
                   "mr %u mw %u mcast-grp %u flow %u\n", what, c->uctx, c->pd,
                   c->cq, c->eq, c->qp, c->srq, c->mr, c->mw, c->mcast_grp,
                   c->flow);
}

static void rnic_hmp_one(Monitor *mon, RnicState *s)
{
    NetClientState *nc = qemu_get_queue(s->nic);
    RnicCounts all, user;
    char gid[INET6_ADDRSTRLEN];
    uint32_t i;

    monitor_printf(mon, "%s: netdev %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, "
                   "link %s, %s\n",
                   object_get_canonical_path(OBJECT(s)),
                   nc->peer ? nc->peer->name : "(none)",
                   s->conf.macaddr.a[0], s->conf.macaddr.a[1],
                   s->conf.macaddr.a[2], s->conf.macaddr.a[3],
                   s->conf.macaddr.a[4], s->conf.macaddr.a[5],
                   s->link_up ? "up" : "down",
                   (s->status & RNIC_STATUS_READY) ? "enabled" : "disabled");
    for (i = 0; i < s->prop.max_gid; i++) {
        if (s->gid[i].valid &&
            inet_ntop(AF_INET6, s->gid[i].gid, gid, sizeof(gid))) {
            monitor_printf(mon, "  gid %u: %s (RoCE %s)\n", i, gid,
                           s->gid[i].type == RNIC_GID_ROCE_V1 ? "v1" : "v2");
        }
    }
    monitor_printf(mon, "  objects (host memory %" PRIu64 " of %" PRIu64
                   " bytes):\n", s->host_mem_used, s->prop.max_host_mem);
    rnic_count(s, &all, &user);
    rnic_hmp_counts(mon, "all", &all);
    rnic_hmp_counts(mon, "kernel", &(RnicCounts) {
        .pd = all.pd - user.pd, .cq = all.cq - user.cq, .eq = all.eq,
        .qp = all.qp - user.qp, .srq = all.srq - user.srq,
        .mr = all.mr - user.mr, .mw = all.mw - user.mw,
        .mcast_grp = all.mcast_grp, .flow = all.flow - user.flow,
    });
    for (i = 1; i <= s->prop.max_uctx; i++) {
        char what[16];

        if (!s->uctx[i].valid) {
            continue;
        }
        rnic_count_uctx(s, &all, &user, i);
        snprintf(what, sizeof(what), "uctx %u", i);
        user.uctx = 0;
        rnic_hmp_counts(mon, what, &user);
    }
    for (i = 0; i < s->prop.max_qp + 2; i++) {
        RnicQP *qp = s->qp[i];

        if (qp) {
            monitor_printf(mon, "  qp 0x%x: %s %s, uctx %u, sq pi %u ci %u\n",
                           qp->qpn,
                           qp->type < ARRAY_SIZE(rnic_qpt_names) &&
                           rnic_qpt_names[qp->type] ?
                           rnic_qpt_names[qp->type] : "?",
                           rnic_qps_str(qp->state), qp->uctx, qp->sq.pi,
                           qp->sq.ci);
        }
    }
    monitor_printf(mon, "  power: %s%s, outside D0 or halted: frames "
                   "dropped %" PRIu64 ", doorbells dropped %" PRIu64
                   ", runs deferred %" PRIu64 ", DMA refused %" PRIu64
                   ", interrupts suppressed %" PRIu64 "; resets %" PRIu64
                   "\n", rnic_pm_d0(s) ? "D0" : "D3hot",
                   s->reset_pending ? " (reset due)" : "",
                   s->pm.frames_dropped, s->pm.doorbells_dropped,
                   s->pm.work_deferred, s->pm.dma_refused,
                   s->pm.irqs_suppressed, s->pm.resets);
    rnic_inject_hmp_show(mon, s);
    monitor_printf(mon, "  counters:");
    for (i = 0; i < RNIC_CNT_MAX; i++) {
        monitor_printf(mon, "%s %s %" PRIu64, i % 4 ? "," : "\n   ",
                       rnic_cnt_names[i], s->cnt[i]);
    }
    monitor_printf(mon, "\n");
}

typedef struct RnicHmpWalk {
    Monitor *mon;
    unsigned found;
} RnicHmpWalk;

static int rnic_hmp_walk(Object *obj, void *opaque)
{
    RnicState *s = (RnicState *)object_dynamic_cast(obj, TYPE_RNIC);
    RnicHmpWalk *w = opaque;

    if (s && DEVICE(s)->realized) {
        rnic_hmp_one(w->mon, s);
        w->found++;
    }
    return 0;
}

void hmp_info_rnic(Monitor *mon, const QDict *qdict)
{
    RnicHmpWalk w = { .mon = mon };

    object_child_foreach_recursive(object_get_root(), rnic_hmp_walk, &w);
    if (!w.found) {
        monitor_printf(mon, "no rnic device\n");
    }
}
