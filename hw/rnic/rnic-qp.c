/*
 * rnic: QP commands and the QP state machine
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * CREATE/DESTROY/MODIFY/QUERY_QP.  MODIFY_QP checks each transition
 * against the IBTA table of allowed states and of required and optional
 * attributes per QP type, then the attribute values, and only then
 * changes the QP.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "rnic.h"
#include "rnic-wire.h"
#include "rnic-cmd.h"
#include "trace.h"

uint8_t rnic_cmd_create_qp(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_create_qp *q = &c->cmd->u.create_qp;
    uint32_t flags = le32_to_cpu(q->flags);
    uint32_t pdn = le32_to_cpu(q->pdn);
    uint32_t scqn = le32_to_cpu(q->send_cqn);
    uint32_t rcqn = le32_to_cpu(q->recv_cqn);
    uint32_t srqn = le32_to_cpu(q->srqn);
    uint16_t max_inline = le16_to_cpu(q->max_inline);
    bool ud = q->qp_type == RNIC_QPT_UD || q->qp_type == RNIC_QPT_GSI ||
              q->qp_type == RNIC_QPT_SMI;
    uint32_t send_sge_cap = MIN(s->prop.max_sge,
                                ud ? RNIC_UD_MAX_SGE : RNIC_SQ_MAX_SGE);
    uint32_t recv_sge_cap = MIN(s->prop.max_sge, RNIC_RQ_MAX_SGE);
    uint32_t inline_cap = MIN(s->prop.max_inline, RNIC_MAX_INLINE);
    bool has_srq = flags & RNIC_QP_FLAG_HAS_SRQ;
    RnicRing sq = {}, rq = {};
    uint32_t qpn;
    RnicQP *qp;
    uint8_t st;

    if (q->rsvd_5 || q->rsvd_28) {
        return rnic_cmd_err_rsvd(c, "create_qp");
    }
    if (q->qp_type < RNIC_QPT_RC || q->qp_type > RNIC_QPT_SMI) {
        return rnic_cmd_err_param(c, "qp_type", q->qp_type, RNIC_QPT_SMI);
    }
    /* Only an IB port has a subnet management interface. */
    if (q->qp_type == RNIC_QPT_SMI && !s->ib) {
        trace_rnic_err_cmd_param(c->op, "SMI QP on an Ethernet port", 0, 0);
        return RNIC_CMD_ERR_NOT_SUPP;
    }
    /* Without flow rules a raw QP could send but never receive. */
    if (q->qp_type == RNIC_QPT_RAW_PACKET && !s->prop.max_flow) {
        trace_rnic_err_cmd_param(c->op, "raw QP with max-flow=0", 0, 0);
        return RNIC_CMD_ERR_NOT_SUPP;
    }
    /* Ethernet frames are not what an InfiniBand port carries. */
    if (q->qp_type == RNIC_QPT_RAW_PACKET && s->ib) {
        trace_rnic_err_cmd_param(c->op, "raw QP on an InfiniBand port", 0, 0);
        return RNIC_CMD_ERR_NOT_SUPP;
    }
    if (flags & ~(RNIC_QP_FLAG_SIG_ALL | RNIC_QP_FLAG_HAS_SRQ |
                  RNIC_QP_FLAG_SQ_DBREC)) {
        return rnic_cmd_err_param(c, "QP flags", flags, RNIC_QP_FLAG_SQ_DBREC);
    }
    if ((flags & RNIC_QP_FLAG_SQ_DBREC) && !s->prop.sq_dbrec) {
        trace_rnic_err_cmd_param(c->op, "SQ dbrec", flags, s->prop.sq_dbrec);
        return RNIC_CMD_ERR_NOT_SUPP;
    }
    if (q->qp_type == RNIC_QPT_GSI || q->qp_type == RNIC_QPT_SMI) {
        st = rnic_cmd_need_kernel(c);
        if (st) {
            return st;
        }
    }
    st = rnic_cmd_get_pd(c, pdn);
    if (!st) {
        st = rnic_cmd_get_cq(c, scqn);
    }
    if (!st) {
        st = rnic_cmd_get_cq(c, rcqn);
    }
    if (!st && has_srq) {
        st = rnic_cmd_get_srq(c, srqn);
    } else if (!st && srqn) {
        return rnic_cmd_err_param(c, "srqn without HAS_SRQ", srqn, 0);
    }
    if (st) {
        return st;
    }
    if (q->sq_log_size > RNIC_WQ_MAX_LOG_SIZE ||
        (1u << q->sq_log_size) > s->prop.max_qp_wr) {
        return rnic_cmd_err_param(c, "sq_log_size", q->sq_log_size,
                                  s->prop.max_qp_wr);
    }
    if (has_srq && q->rq_log_size) {
        return rnic_cmd_err_param(c, "rq_log_size with SRQ", q->rq_log_size, 0);
    }
    if (q->rq_log_size > RNIC_WQ_MAX_LOG_SIZE ||
        (1u << q->rq_log_size) > s->prop.max_qp_wr) {
        return rnic_cmd_err_param(c, "rq_log_size", q->rq_log_size,
                                  s->prop.max_qp_wr);
    }
    if (q->max_send_sge > send_sge_cap) {
        return rnic_cmd_err_param(c, "max_send_sge", q->max_send_sge,
                                  send_sge_cap);
    }
    if (q->max_recv_sge > recv_sge_cap) {
        return rnic_cmd_err_param(c, "max_recv_sge", q->max_recv_sge,
                                  recv_sge_cap);
    }
    if (max_inline > inline_cap) {
        return rnic_cmd_err_param(c, "max_inline", max_inline, inline_cap);
    }

    if (q->qp_type == RNIC_QPT_GSI) {
        if (s->qp[RNIC_GSI_QPN]) {
            return rnic_cmd_err_state(c, "GSI QP exists", RNIC_GSI_QPN);
        }
        qpn = RNIC_GSI_QPN;
    } else if (q->qp_type == RNIC_QPT_SMI) {
        if (s->qp[RNIC_SMI_QPN]) {
            return rnic_cmd_err_state(c, "SMI QP exists", RNIC_SMI_QPN);
        }
        qpn = RNIC_SMI_QPN;
    } else {
        for (qpn = RNIC_FIRST_QPN; qpn <= s->prop.max_qp + 1; qpn++) {
            if (!s->qp[qpn]) {
                break;
            }
        }
        if (qpn > s->prop.max_qp + 1) {
            return rnic_cmd_err_resource(c, "QP");
        }
    }

    st = rnic_cmd_load_ring(c, &q->sq, q->sq_log_size, RNIC_SQ_WQE_SIZE,
                            (flags & RNIC_QP_FLAG_SQ_DBREC) ? 1 : 0,
                            &sq);
    if (st) {
        return st;
    }
    if (!has_srq) {
        st = rnic_cmd_load_ring(c, &q->rq, q->rq_log_size, RNIC_RQ_WQE_SIZE, 0,
                                &rq);
        if (st) {
            rnic_pbl_free(s, &sq.pbl);
            return st;
        }
    }

    qp = rnic_host_mem_charge(s, sizeof(*qp)) ? g_try_new0(RnicQP, 1) : NULL;
    if (!qp) {
        rnic_pbl_free(s, &sq.pbl);
        rnic_pbl_free(s, &rq.pbl);
        return rnic_cmd_err_resource(c, "QP memory");
    }
    qp->qpn = qpn;
    qp->uctx = c->uctx;
    qp->type = q->qp_type;
    qp->state = RNIC_QPS_RESET;
    qp->flags = flags;
    qp->pdn = pdn;
    qp->send_cqn = scqn;
    qp->recv_cqn = rcqn;
    qp->srqn = has_srq ? srqn : 0;
    qp->max_inline = max_inline;
    qp->max_send_sge = q->max_send_sge;
    qp->max_recv_sge = q->max_recv_sge;
    /*
     * Datagram QPs have no path MTU attribute: a message may fill the
     * largest payload the device sends, and the guest keeps it within the
     * port MTU it reports (ibv_query_port), as with hardware RNICs.
     */
    qp->path_mtu = ud ? RNIC_MTU_4096 : RNIC_MTU_1024;
    qp->port_num = 1;
    qp->sq.ring = sq;
    qp->sq.max_sge = q->max_send_sge;
    qp->rq.ring = rq;
    qp->rq.max_sge = q->max_recv_sge;

    if (!rnic_tp_qp_init(s, qp)) {
        rnic_pbl_free(s, &sq.pbl);
        rnic_pbl_free(s, &rq.pbl);
        g_free(qp);
        rnic_host_mem_uncharge(s, sizeof(*qp));
        return rnic_cmd_err_resource(c, "QP transport state");
    }
    s->qp[qpn] = qp;
    rnic_sq_dbrec_reset(s, qp);
    s->pd[pdn].refcnt++;
    s->cq[scqn].refcnt++;
    s->cq[rcqn].refcnt++;
    if (has_srq) {
        s->srq[srqn].refcnt++;
    }
    c->out[RNIC_OUT_HANDLE] = qpn;
    c->out[RNIC_OUT_ENTRIES] = 1u << q->sq_log_size;
    c->out[RNIC_OUT_RQ_ENTRIES] = has_srq ? 0 : 1u << q->rq_log_size;
    trace_rnic_qp_create(qpn, q->qp_type, 1u << q->sq_log_size,
                         has_srq ? 0 : 1u << q->rq_log_size, c->uctx);
    return RNIC_CMD_OK;
}

static void rnic_qp_unschedule(RnicState *s, RnicQP *qp)
{
    if (qp->scheduled) {
        QTAILQ_REMOVE(&s->work_list, qp, work_next);
        qp->scheduled = false;
    }
}

void rnic_qp_free(RnicState *s, RnicQP *qp)
{
    rnic_tp_qp_fini(s, qp);
    rnic_qp_unschedule(s, qp);
    rnic_sq_dbrec_forget(s, qp);
    rnic_pbl_free(s, &qp->sq.ring.pbl);
    rnic_pbl_free(s, &qp->rq.ring.pbl);
    if (qp->rss) {
        rnic_host_mem_uncharge(s, sizeof(RnicRss));
    }
    g_free(qp->rss);
    s->qp[qp->qpn] = NULL;
    g_free(qp);
    rnic_host_mem_uncharge(s, sizeof(*qp));
}

uint8_t rnic_cmd_destroy_qp(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t qpn;
    RnicQP *qp;
    uint8_t st = rnic_cmd_handle_arg(c, &qpn);

    if (st) {
        return st;
    }
    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    /*
     * A QP in ERR owes flush completions for every WQE it still holds;
     * they go out over budgeted runs.  Destroying it before that would
     * drop them and leave its user waiting: BUSY until they are out.
     * WQEs posted through the SQ doorbell record count too.
     */
    if (qp->state == RNIC_QPS_ERR && rnic_sq_dbrec_poll(s, qp)) {
        rnic_qp_schedule(s, qp);
    }
    if (qp->state == RNIC_QPS_ERR &&
        ((uint16_t)qp->sq.ci != (uint16_t)qp->sq.pi ||
         (!qp->srqn && (uint16_t)qp->rq.ci != (uint16_t)qp->rq.pi))) {
        return rnic_cmd_err_busy(c, "QP flushing", qpn, 1);
    }
    rnic_cmd_refput(&s->pd[qp->pdn].refcnt);
    rnic_cmd_refput(&s->cq[qp->send_cqn].refcnt);
    rnic_cmd_refput(&s->cq[qp->recv_cqn].refcnt);
    if (qp->srqn) {
        rnic_cmd_refput(&s->srq[qp->srqn].refcnt);
    }
    trace_rnic_qp_destroy(qpn);
    /* Its QPN will be reused: no later QP may inherit its windows. */
    rnic_mw_unbind_qp(s, qpn);
    rnic_mcast_detach_qp(s, qpn);
    rnic_flow_remove_qp(s, qpn);
    rnic_qp_free(s, qp);
    return RNIC_CMD_OK;
}

/* ---- multicast groups ---- */

static bool rnic_gid_is_mcast(const uint8_t *gid)
{
    static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

    if (!memcmp(gid, v4mapped, sizeof(v4mapped))) {
        return (gid[12] & 0xf0) == 0xe0;        /* 224.0.0.0/4 */
    }
    return gid[0] == 0xff;
}

RnicMcast *rnic_mcast_find(RnicState *s, const uint8_t *gid)
{
    uint32_t i;

    for (i = 0; i < s->prop.max_mcast_grp; i++) {
        if (s->mcast[i].nqp && !memcmp(s->mcast[i].gid, gid, 16)) {
            return &s->mcast[i];
        }
    }
    return NULL;
}

static void rnic_mcast_remove(RnicMcast *g, uint32_t k)
{
    g->qpn[k] = g->qpn[--g->nqp];
}

void rnic_mcast_detach_qp(RnicState *s, uint32_t qpn)
{
    uint32_t i, k;

    for (i = 0; i < s->prop.max_mcast_grp; i++) {
        for (k = 0; k < s->mcast[i].nqp; k++) {
            if (s->mcast[i].qpn[k] == qpn) {
                rnic_mcast_remove(&s->mcast[i], k);
                break;
            }
        }
    }
}

static uint8_t rnic_cmd_mcast(RnicCmdCtx *c, bool attach)
{
    RnicState *s = c->s;
    const struct rnic_cmd_mcast *m = &c->cmd->u.mcast;
    uint32_t qpn = le32_to_cpu(m->qpn);
    RnicMcast *g;
    RnicQP *qp;
    uint32_t i, k = 0;
    uint8_t st;

    if (m->rsvd_4) {
        return rnic_cmd_err_rsvd(c, "rsvd_4");
    }
    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    if (qp->type != RNIC_QPT_UD) {
        return rnic_cmd_err_param(c, "multicast on a QP type", qp->type,
                                  RNIC_QPT_UD);
    }
    if (!rnic_gid_is_mcast(m->gid)) {
        return rnic_cmd_err_param(c, "GID not multicast", m->gid[0], 0xff);
    }
    g = rnic_mcast_find(s, m->gid);
    while (g && k < g->nqp && g->qpn[k] != qpn) {
        k++;
    }
    if (!attach) {
        if (!g || k == g->nqp) {
            return rnic_cmd_err_param(c, "QP not in the group", qpn, 0);
        }
        rnic_mcast_remove(g, k);
        trace_rnic_mcast(qpn, "detach", g->nqp);
        return RNIC_CMD_OK;
    }
    if (g && k < g->nqp) {
        return RNIC_CMD_OK;     /* a member already */
    }
    if (!g) {
        for (i = 0; i < s->prop.max_mcast_grp && s->mcast[i].nqp; i++) {
            ;
        }
        if (i == s->prop.max_mcast_grp) {
            return rnic_cmd_err_resource(c, "multicast group");
        }
        g = &s->mcast[i];
        memcpy(g->gid, m->gid, sizeof(g->gid));
    }
    if (g->nqp >= s->prop.max_mcast_qp_attach) {
        return rnic_cmd_err_resource(c, "multicast group member");
    }
    g->qpn[g->nqp++] = qpn;
    trace_rnic_mcast(qpn, "attach", g->nqp);
    return RNIC_CMD_OK;
}

uint8_t rnic_cmd_attach_mcast(RnicCmdCtx *c)
{
    return rnic_cmd_mcast(c, true);
}

uint8_t rnic_cmd_detach_mcast(RnicCmdCtx *c)
{
    return rnic_cmd_mcast(c, false);
}

/*
 * Which attributes each transition requires and allows, per QP type,
 * following IBTA vol 1 table 91 (as Linux's ib_modify_qp_is_ok() does).
 * Index 0 of req/opt is unused; 1..6 are enum rnic_qp_type.  Raw packet
 * QPs name their port on the way to INIT and take nothing else; QP0
 * (SMI) takes what QP1 (GSI) does.
 */
typedef struct RnicQpTrans {
    bool valid;
    uint32_t req[RNIC_QPT_SMI + 1];
    uint32_t opt[RNIC_QPT_SMI + 1];
} RnicQpTrans;

#define A(x)        RNIC_QP_ATTR_##x
#define PER_TYPE(rc, uc, ud, gsi)   { 0, (rc), (uc), (ud), (gsi), 0, (gsi) }
#define PER_TYPE_RAW(rc, uc, ud, gsi, raw) \
    { 0, (rc), (uc), (ud), (gsi), (raw), (gsi) }

static const RnicQpTrans rnic_qp_trans[RNIC_QPS_ERR + 1][RNIC_QPS_ERR + 1] = {
    [RNIC_QPS_RESET] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_INIT] = {
            .valid = true,
            .req = PER_TYPE_RAW(A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                                A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                                A(PKEY_INDEX) | A(PORT) | A(QKEY),
                                A(PKEY_INDEX) | A(QKEY), A(PORT)),
        },
    },
    [RNIC_QPS_INIT] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_INIT] = {
            .valid = true,
            .opt = PER_TYPE_RAW(A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                                A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                                A(PKEY_INDEX) | A(PORT) | A(QKEY),
                                A(PKEY_INDEX) | A(QKEY), A(PORT)),
        },
        [RNIC_QPS_RTR] = {
            .valid = true,
            .req = PER_TYPE(A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                            A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                            A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
                            0, 0),
            .opt = PER_TYPE(A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                            A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                            A(PKEY_INDEX) | A(QKEY),
                            A(PKEY_INDEX) | A(QKEY)),
        },
    },
    [RNIC_QPS_RTR] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .req = PER_TYPE(A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                            A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
                            A(SQ_PSN), A(SQ_PSN), A(SQ_PSN)),
            .opt = PER_TYPE(A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                            A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                            A(PATH_MIG_STATE),
                            A(CUR_STATE) | A(QKEY),
                            A(CUR_STATE) | A(QKEY)),
        },
    },
    [RNIC_QPS_RTS] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .opt = PER_TYPE(A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
                            A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
                            A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
                            A(PATH_MIG_STATE),
                            A(CUR_STATE) | A(QKEY),
                            A(CUR_STATE) | A(QKEY)),
        },
        [RNIC_QPS_SQD] = {
            .valid = true,
            .opt = PER_TYPE(A(EN_SQD_ASYNC), A(EN_SQD_ASYNC),
                            A(EN_SQD_ASYNC), A(EN_SQD_ASYNC)),
        },
    },
    [RNIC_QPS_SQD] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .opt = PER_TYPE(A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                            A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                            A(PATH_MIG_STATE),
                            A(CUR_STATE) | A(QKEY),
                            A(CUR_STATE) | A(QKEY)),
        },
        [RNIC_QPS_SQD] = {
            .valid = true,
            .opt = PER_TYPE(A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
                            A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                            A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
                            A(ACCESS_FLAGS) | A(PKEY_INDEX) |
                            A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                            A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                            A(PKEY_INDEX) | A(PATH_MIG_STATE),
                            A(PKEY_INDEX) | A(QKEY),
                            A(PKEY_INDEX) | A(QKEY)),
        },
    },
    [RNIC_QPS_SQE] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            /* RC never enters SQE; its row stays empty (not allowed). */
            .opt = PER_TYPE(0, A(CUR_STATE) | A(ACCESS_FLAGS),
                            A(CUR_STATE) | A(QKEY),
                            A(CUR_STATE) | A(QKEY)),
        },
    },
    [RNIC_QPS_ERR] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
    },
};

static const char *const rnic_qps_names[] = {
    "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

const char *rnic_qps_str(uint8_t st)
{
    return st < ARRAY_SIZE(rnic_qps_names) ? rnic_qps_names[st] : "?";
}

/*
 * An IB port's path: RNIC_NET_IB, a unicast DLID (multicast is for UD
 * WQEs), and with a GRH, the port's one GID as the source.
 */
static uint8_t rnic_qp_check_ib_av(RnicCmdCtx *c, const struct rnic_av *av)
{
    uint16_t dlid = le16_to_cpu(av->ib.dlid);

    if (av->net_type != RNIC_NET_IB) {
        return rnic_cmd_err_param(c, "av.net_type", av->net_type,
                                  RNIC_NET_IB);
    }
    if (av->ib.flags & ~RNIC_AV_IB_FLAGS) {
        return rnic_cmd_err_param(c, "av.ib.flags", av->ib.flags,
                                  RNIC_AV_IB_FLAGS);
    }
    if (!rnic_cmd_rsvd_zero(av->ib.rsvd_4, sizeof(av->ib.rsvd_4))) {
        return rnic_cmd_err_rsvd(c, "av.ib.rsvd_4");
    }
    if (dlid == RNIC_LID_RESERVED || dlid > RNIC_LID_UCAST_MAX) {
        return rnic_cmd_err_param(c, "av.ib.dlid", dlid, RNIC_LID_UCAST_MAX);
    }
    if (av->ib.src_path_bits > 0x7f) {
        return rnic_cmd_err_param(c, "av.ib.src_path_bits",
                                  av->ib.src_path_bits, 0x7f);
    }
    if ((av->ib.flags & RNIC_AV_IB_GRH) && av->sgid_index != 0) {
        return rnic_cmd_err_param(c, "av.sgid_index", av->sgid_index, 0);
    }
    if (av->sl > 15) {
        return rnic_cmd_err_param(c, "av.sl", av->sl, 15);
    }
    return RNIC_CMD_OK;
}

/* Checks the values of the attributes in 'mask' (all already allowed). */
static uint8_t check_qp_attr_values(RnicCmdCtx *c, RnicQP *qp,
                                    const struct rnic_qp_attr *a,
                                    uint32_t mask)
{
    RnicState *s = c->s;

    if ((mask & A(PKEY_INDEX)) &&
        le16_to_cpu(a->pkey_index) >= (s->ib ? RNIC_PKEY_BLOCK : 1)) {
        return rnic_cmd_err_param(c, "pkey_index", le16_to_cpu(a->pkey_index),
                                  s->ib ? RNIC_PKEY_BLOCK - 1 : 0);
    }
    if ((mask & A(PORT)) && a->port_num != 1) {
        return rnic_cmd_err_param(c, "port_num", a->port_num, 1);
    }
    if ((mask & A(ACCESS_FLAGS)) &&
        (le32_to_cpu(a->access_flags) & ~RNIC_ACCESS_ALL)) {
        return rnic_cmd_err_param(c, "access_flags",
                                  le32_to_cpu(a->access_flags),
                                  RNIC_ACCESS_ALL);
    }
    if (mask & A(AV)) {
        const struct rnic_av *av = &a->av;

        if (av->rsvd_31) {
            return rnic_cmd_err_rsvd(c, "av.rsvd_31");
        }
        if (s->ib) {
            uint8_t err = rnic_qp_check_ib_av(c, av);

            if (err != RNIC_CMD_OK) {
                return err;
            }
        } else if (av->sgid_index >= s->prop.max_gid ||
                   !s->gid[av->sgid_index].valid) {
            return rnic_cmd_err_param(c, "av.sgid_index", av->sgid_index,
                                      s->prop.max_gid - 1);
        } else if (av->net_type != RNIC_NET_IPV4 &&
                   av->net_type != RNIC_NET_IPV6 &&
                   av->net_type != RNIC_NET_ROCE_V1) {
            return rnic_cmd_err_param(c, "av.net_type", av->net_type,
                                      RNIC_NET_IPV6);
        }
        if (le32_to_cpu(av->flow_label) > 0xfffff) {
            return rnic_cmd_err_param(c, "av.flow_label",
                                      le32_to_cpu(av->flow_label), 0xfffff);
        }
    }
    if ((mask & A(PATH_MTU)) &&
        (a->path_mtu < RNIC_MTU_256 || a->path_mtu > RNIC_MTU_4096)) {
        return rnic_cmd_err_param(c, "path_mtu", a->path_mtu, RNIC_MTU_4096);
    }
    if ((mask & A(TIMEOUT)) && a->timeout > 31) {
        return rnic_cmd_err_param(c, "timeout", a->timeout, 31);
    }
    if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7) {
        return rnic_cmd_err_param(c, "retry_cnt", a->retry_cnt, 7);
    }
    if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7) {
        return rnic_cmd_err_param(c, "rnr_retry", a->rnr_retry, 7);
    }
    if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31) {
        return rnic_cmd_err_param(c, "min_rnr_timer", a->min_rnr_timer, 31);
    }
    if ((mask & A(RQ_PSN)) && le32_to_cpu(a->rq_psn) > RNIC_PSN_MASK) {
        return rnic_cmd_err_param(c, "rq_psn", le32_to_cpu(a->rq_psn),
                                  RNIC_PSN_MASK);
    }
    if ((mask & A(SQ_PSN)) && le32_to_cpu(a->sq_psn) > RNIC_PSN_MASK) {
        return rnic_cmd_err_param(c, "sq_psn", le32_to_cpu(a->sq_psn),
                                  RNIC_PSN_MASK);
    }
    if ((mask & A(DEST_QPN)) && le32_to_cpu(a->dest_qpn) > RNIC_QPN_MASK) {
        return rnic_cmd_err_param(c, "dest_qpn", le32_to_cpu(a->dest_qpn),
                                  RNIC_QPN_MASK);
    }
    if ((mask & A(MAX_QP_RD_ATOMIC)) &&
        a->max_rd_atomic > s->prop.max_rd_atom) {
        return rnic_cmd_err_param(c, "max_rd_atomic", a->max_rd_atomic,
                                  s->prop.max_rd_atom);
    }
    if ((mask & A(MAX_DEST_RD_ATOMIC)) &&
        a->max_dest_rd_atomic > s->prop.max_rd_atom) {
        return rnic_cmd_err_param(c, "max_dest_rd_atomic",
                                  a->max_dest_rd_atomic, s->prop.max_rd_atom);
    }
    if (mask & A(ALT_PATH)) {
        trace_rnic_err_cmd_not_supp("MODIFY_QP alternate path");
        return RNIC_CMD_ERR_NOT_SUPP;
    }
    return RNIC_CMD_OK;
}

static void apply_qp_attr(RnicQP *qp, const struct rnic_qp_attr *a,
                          uint32_t mask)
{
    bool ib;

    if (mask & A(EN_SQD_ASYNC)) {
        qp->en_sqd_async_notify = a->en_sqd_async_notify;
    }
    if (mask & A(ACCESS_FLAGS)) {
        qp->access_flags = le32_to_cpu(a->access_flags);
    }
    if (mask & A(PKEY_INDEX)) {
        qp->pkey_index = le16_to_cpu(a->pkey_index);
    }
    if (mask & A(PORT)) {
        qp->port_num = a->port_num;
    }
    if (mask & A(QKEY)) {
        qp->qkey = le32_to_cpu(a->qkey);
    }
    if (mask & A(AV)) {
        memcpy(qp->av.dgid, a->av.dgid, sizeof(qp->av.dgid));
        memcpy(qp->av.dmac, a->av.dmac, sizeof(qp->av.dmac));
        qp->av.sgid_index = a->av.sgid_index;
        qp->av.hop_limit = a->av.hop_limit;
        qp->av.flow_label = le32_to_cpu(a->av.flow_label);
        qp->av.traffic_class = a->av.traffic_class;
        qp->av.net_type = a->av.net_type;
        qp->av.sl = a->av.sl & 0xf;
        ib = a->av.net_type == RNIC_NET_IB;   /* only on an IB port */
        qp->av.dlid = ib ? le16_to_cpu(a->av.ib.dlid) : 0;
        qp->av.src_path_bits = ib ? a->av.ib.src_path_bits : 0;
        qp->av.ib_flags = ib ? a->av.ib.flags : 0;
    }
    if (mask & A(PATH_MTU)) {
        qp->path_mtu = a->path_mtu;
    }
    if (mask & A(TIMEOUT)) {
        qp->timeout = a->timeout;
    }
    if (mask & A(RETRY_CNT)) {
        qp->retry_cnt = a->retry_cnt;
    }
    if (mask & A(RNR_RETRY)) {
        qp->rnr_retry = a->rnr_retry;
    }
    if (mask & A(RQ_PSN)) {
        qp->rq_psn = le32_to_cpu(a->rq_psn);
    }
    if (mask & A(MAX_QP_RD_ATOMIC)) {
        qp->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & A(MIN_RNR_TIMER)) {
        qp->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & A(SQ_PSN)) {
        qp->sq_psn = le32_to_cpu(a->sq_psn);
    }
    if (mask & A(MAX_DEST_RD_ATOMIC)) {
        qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & A(DEST_QPN)) {
        qp->dest_qpn = le32_to_cpu(a->dest_qpn);
    }
}

uint8_t rnic_cmd_modify_qp(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_modify_qp *m = &c->cmd->u.modify_qp;
    const struct rnic_qp_attr *a = &m->attr;
    uint32_t qpn = le32_to_cpu(m->qpn);
    uint32_t mask = le32_to_cpu(m->attr_mask);
    const RnicQpTrans *t;
    uint8_t cur, next;
    uint32_t req, opt;
    RnicQP *qp;
    uint8_t st;

    if (a->rsvd_14 || a->rsvd_36 ||
        !rnic_cmd_rsvd_zero(a->rsvd_92, sizeof(a->rsvd_92))) {
        return rnic_cmd_err_rsvd(c, "qp_attr");
    }
    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    cur = qp->state;
    if (mask & A(CUR_STATE)) {
        if (a->cur_qp_state != cur) {
            return rnic_cmd_err_state(c, "cur_qp_state does not match", qpn);
        }
    }
    next = (mask & A(STATE)) ? a->qp_state : cur;
    if (next > RNIC_QPS_ERR) {
        return rnic_cmd_err_param(c, "qp_state", next, RNIC_QPS_ERR);
    }
    t = &rnic_qp_trans[cur][next];
    if (!t->valid ||
        (cur == RNIC_QPS_SQE && next == RNIC_QPS_RTS &&
         qp->type == RNIC_QPT_RC)) {
        RNIC_GUEST_ERR(rnic_err_cmd_qp_trans(qpn, rnic_qps_str(cur),
                                             rnic_qps_str(next)), s,
                       "QP 0x%x: %s -> %s not allowed", qpn, rnic_qps_str(cur),
                       rnic_qps_str(next));
        return RNIC_CMD_ERR_STATE;
    }
    req = t->req[qp->type];
    opt = t->opt[qp->type];
    if ((mask & req) != req) {
        RNIC_GUEST_ERR(rnic_err_cmd_qp_attr(qpn, rnic_qps_str(cur),
                                            rnic_qps_str(next), mask, req, opt),
                       s, "QP 0x%x: %s -> %s misses attributes 0x%x",
                       qpn, rnic_qps_str(cur), rnic_qps_str(next),
                       req & ~mask);
        return RNIC_CMD_ERR_PARAM;
    }
    if (mask & ~(req | opt | A(STATE))) {
        RNIC_GUEST_ERR(rnic_err_cmd_qp_attr(qpn, rnic_qps_str(cur),
                                            rnic_qps_str(next), mask, req, opt),
                       s, "QP 0x%x: %s -> %s does not allow attributes 0x%x",
                       qpn, rnic_qps_str(cur), rnic_qps_str(next),
                       mask & ~(req | opt | A(STATE)));
        return RNIC_CMD_ERR_PARAM;
    }
    st = check_qp_attr_values(c, qp, a, mask);
    if (st) {
        return st;
    }

    apply_qp_attr(qp, a, mask);
    qp->state = next;
    if (next == RNIC_QPS_RESET) {
        /* The rings start over; the guest reuses them from index 0. */
        qp->sq.pi = qp->sq.ci = 0;
        qp->rq.pi = qp->rq.ci = 0;
        rnic_qp_unschedule(s, qp);
        rnic_sq_dbrec_reset(s, qp);
    }
    trace_rnic_qp_modify(qpn, rnic_qps_str(cur), rnic_qps_str(next), mask);
    rnic_tp_qp_modified(s, qp, cur, mask);
    if (next == RNIC_QPS_ERR && cur != RNIC_QPS_ERR) {
        rnic_tp_qp_flush(s, qp);
        rnic_qp_last_wqe(s, qp);
    }
    if (next != RNIC_QPS_RESET) {
        /* New state may let queued WQEs move (or be flushed). */
        rnic_qp_schedule(s, qp);
    }
    return RNIC_CMD_OK;
}

uint8_t rnic_cmd_query_qp(RnicCmdCtx *c)
{
    uint32_t qpn = le32_to_cpu(c->cmd->u.query.handle);
    struct rnic_qp_attr a = {};
    RnicQP *qp;
    uint8_t st;

    st = rnic_cmd_get_qp(c, qpn, &qp);
    if (st) {
        return st;
    }
    a.qp_state = qp->state;
    a.cur_qp_state = qp->state;
    a.path_mtu = qp->path_mtu;
    a.timeout = qp->timeout;
    a.retry_cnt = qp->retry_cnt;
    a.rnr_retry = qp->rnr_retry;
    a.min_rnr_timer = qp->min_rnr_timer;
    a.max_rd_atomic = qp->max_rd_atomic;
    a.max_dest_rd_atomic = qp->max_dest_rd_atomic;
    a.sq_draining = qp->state == RNIC_QPS_SQD && qp->sq.ci != qp->sq.pi;
    a.en_sqd_async_notify = qp->en_sqd_async_notify;
    a.port_num = qp->port_num;
    a.pkey_index = cpu_to_le16(qp->pkey_index);
    a.qkey = cpu_to_le32(qp->qkey);
    a.dest_qpn = cpu_to_le32(qp->dest_qpn);
    a.rq_psn = cpu_to_le32(qp->rq_psn);
    a.sq_psn = cpu_to_le32(qp->sq_psn);
    a.access_flags = cpu_to_le32(qp->access_flags);
    memcpy(a.av.dgid, qp->av.dgid, sizeof(a.av.dgid));
    memcpy(a.av.dmac, qp->av.dmac, sizeof(a.av.dmac));
    a.av.sgid_index = qp->av.sgid_index;
    a.av.hop_limit = qp->av.hop_limit;
    a.av.flow_label = cpu_to_le32(qp->av.flow_label);
    a.av.traffic_class = qp->av.traffic_class;
    a.av.net_type = qp->av.net_type;
    a.av.sl = qp->av.sl;
    if (qp->av.net_type == RNIC_NET_IB) {
        a.av.ib.dlid = cpu_to_le16(qp->av.dlid);
        a.av.ib.src_path_bits = qp->av.src_path_bits;
        a.av.ib.flags = qp->av.ib_flags;
    }
    a.max_send_wr = cpu_to_le32(1u << qp->sq.ring.log_size);
    a.max_recv_wr = cpu_to_le32(qp->srqn ? 0 : 1u << qp->rq.ring.log_size);
    a.max_send_sge = cpu_to_le32(qp->max_send_sge);
    a.max_recv_sge = cpu_to_le32(qp->max_recv_sge);
    a.max_inline = cpu_to_le32(qp->max_inline);
    return rnic_cmd_write_out(c, &a, sizeof(a));
}

#undef A
#undef PER_TYPE
#undef PER_TYPE_RAW
