// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: queue pairs, the qpn table, and the kernel
 * bypass post_send/post_recv paths.
 *
 * post_send checks ring space, builds each WQE in its ring slot and then
 * rings the SQ doorbell once with the new free-running producer index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <util/udma_barrier.h>
#include <util/util.h>

#include "rnic.h"

/* ------------------------------------------------------------------ */
/* qpn -> qp table                                                     */
/* ------------------------------------------------------------------ */

struct rnic_qp *rnic_find_qp(struct rnic_context *ctx, uint32_t qpn)
{
	struct rnic_qp **l2;

	qpn &= RNIC_DB_QN_MASK;
	l2 = ctx->qp_table[qpn >> RNIC_QP_TABLE_SHIFT];
	return l2 ? l2[qpn & RNIC_QP_TABLE_MASK] : NULL;
}

int rnic_store_qp(struct rnic_context *ctx, struct rnic_qp *qp)
{
	uint32_t hi = (qp->qpn & RNIC_DB_QN_MASK) >> RNIC_QP_TABLE_SHIFT;
	uint32_t lo = qp->qpn & RNIC_QP_TABLE_MASK;
	int ret = 0;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (!ctx->qp_table[hi]) {
		ctx->qp_table[hi] = calloc(RNIC_QP_TABLE_SIZE,
					   sizeof(struct rnic_qp *));
		if (!ctx->qp_table[hi]) {
			ret = ENOMEM;
			goto out;
		}
	}
	if (ctx->qp_table[hi][lo]) {
		ret = EEXIST;
		goto out;
	}
	ctx->qp_table[hi][lo] = qp;
out:
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

void rnic_clear_qp(struct rnic_context *ctx, struct rnic_qp *qp)
{
	uint32_t hi = (qp->qpn & RNIC_DB_QN_MASK) >> RNIC_QP_TABLE_SHIFT;
	uint32_t lo = qp->qpn & RNIC_QP_TABLE_MASK;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (ctx->qp_table[hi] && ctx->qp_table[hi][lo] == qp)
		ctx->qp_table[hi][lo] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

/* ------------------------------------------------------------------ */
/* Create / modify / query / destroy                                   */
/* ------------------------------------------------------------------ */

/* Largest inline payload a WQE of this QP type has room for. */
static uint32_t rnic_inline_room(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? RNIC_SQ_WQE_SIZE - 128 : RNIC_MAX_INLINE;
}

/* Inline bytes a QP of this type may use on this device. */
static uint32_t rnic_inline_cap(struct rnic_context *ctx,
				enum ibv_qp_type type)
{
	return min_t(uint32_t, ctx->max_inline, rnic_inline_room(type));
}

static uint32_t rnic_sq_sge_room(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? RNIC_UD_MAX_SGE : RNIC_SQ_MAX_SGE;
}

static uint64_t rnic_send_ops_supported(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	case IBV_QPT_UC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	case IBV_QPT_UD:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_QPT_RAW_PACKET:
		return IBV_QP_EX_WITH_SEND;
	default:
		return 0;
	}
}

/*
 * The SQ ring, led by a doorbell record page where the kernel takes one,
 * so that posting rings only while the device is idle.
 */
int rnic_qp_init_sq(struct rnic_context *ctx, struct rnic_qp *qp,
		    struct ibv_pd *pd, unsigned int log_size, uint32_t max_sge)
{
	bool dbrec = ctx->caps & RNIC_UCTX_CAP_SQ_DBREC;
	int ret;

	ret = rnic_wq_init(&qp->sq, pd, RNIC_RES_TYPE_SQ, log_size,
			   RNIC_SQ_WQE_SIZE, max_sge,
			   dbrec ? RNIC_SQ_DBREC_PAGE_SIZE : 0);
	if (ret || !dbrec)
		return ret;
	qp->sq_dbrec = qp->sq.buf;
	/* As the device writes it on create: ring until it says otherwise. */
	qp->sq_dbrec->pi = htole32(0);
	qp->sq_dbrec->flags = htole32(RNIC_SQ_DBREC_RING);
	return 0;
}

/* Size the rings from the requested caps; EINVAL beyond device limits. */
static int rnic_check_qp_caps(struct rnic_context *ctx,
			      struct ibv_qp_init_attr_ex *attr,
			      unsigned int *sq_log, unsigned int *rq_log)
{
	struct ibv_qp_cap *cap = &attr->cap;
	bool srq = attr->srq != NULL;

	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > min_t(uint32_t, ctx->max_sge,
				      rnic_sq_sge_room(attr->qp_type)))
		return EINVAL;
	if (!srq && (cap->max_recv_wr > ctx->max_qp_wr ||
		     cap->max_recv_sge > ctx->max_recv_sge))
		return EINVAL;

	/*
	 * Like every other limit, more inline data than a WQE can carry is
	 * refused: a caller that was silently granted less would later find
	 * its inline sends failing instead of its create.
	 */
	if (cap->max_inline_data > rnic_inline_cap(ctx, attr->qp_type))
		return EINVAL;

	*sq_log = rnic_log2_ceil(max_t(uint32_t, cap->max_send_wr, 1));
	*rq_log = srq ? 0 : rnic_log2_ceil(max_t(uint32_t, cap->max_recv_wr, 1));
	if (*sq_log > RNIC_WQ_MAX_LOG_SIZE || *rq_log > RNIC_WQ_MAX_LOG_SIZE)
		return EINVAL;
	return 0;
}

struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct rnic_create_qp_resp resp = {};
	struct rnic_create_qp_cmd cmd = {};
	unsigned int sq_log, rq_log;
	struct rnic_qp *qp;
	uint32_t comp_mask;
	int ret;

	if (attr->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH |
			       IBV_QP_INIT_ATTR_IND_TABLE))
		return rnic_create_rss_qp(ctx, attr);
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The mask may be set with no flag in it; no flag is supported. */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD &&
	    attr->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~rnic_send_ops_supported(attr->qp_type))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	ret = rnic_check_qp_caps(ctx, attr, &sq_log, &rq_log);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->type = attr->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->send_cq = to_rcq(attr->send_cq);
	qp->recv_cq = to_rcq(attr->recv_cq);
	qp->srq = attr->srq ? to_rsrq(attr->srq) : NULL;

	ret = rnic_qp_init_sq(ctx, qp, attr->pd, sq_log,
			      max_t(uint32_t, attr->cap.max_send_sge, 1));
	if (ret)
		goto err_free;
	if (!qp->srq) {
		ret = rnic_wq_init(&qp->rq, attr->pd, RNIC_RES_TYPE_RQ,
				   rq_log, RNIC_RQ_WQE_SIZE,
				   max_t(uint32_t, attr->cap.max_recv_sge, 1),
				   0);
		if (ret)
			goto err_sq;
	}

	cmd.drv.sq_addr = (uintptr_t)qp->sq.buf;
	cmd.drv.sq_size = qp->sq.buf_size;
	cmd.drv.sq_log_size = sq_log;
	if (qp->sq_dbrec)
		cmd.drv.flags = RNIC_UCREATE_QP_SQ_DBREC;
	if (!qp->srq) {
		cmd.drv.rq_addr = (uintptr_t)qp->rq.buf;
		cmd.drv.rq_size = qp->rq.buf_size;
		cmd.drv.rq_log_size = rq_log;
	}

	/*
	 * The create-flags bit, with no flag in it (checked above), is one the
	 * non-extended command refuses: hide it for the call.
	 */
	comp_mask = attr->comp_mask;
	attr->comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	attr->comp_mask = comp_mask;
	if (ret)
		goto err_rq;

	qp->qpn = resp.drv.qpn;
	if (qp->qpn != qp->vqp.qp.qp_num) {
		verbs_err(&ctx->ibv_ctx, "QPN mismatch %u/%u\n", qp->qpn,
			  qp->vqp.qp.qp_num);
		ret = EPROTO;
		goto err_destroy;
	}
	/* The kernel grants what was asked for; never trust it with more. */
	qp->max_inline = min_t(uint32_t, resp.drv.max_inline,
			       rnic_inline_cap(ctx, qp->type));

	ret = rnic_store_qp(ctx, qp);
	if (ret)
		goto err_destroy;

	/* Report what the rings really hold. */
	attr->cap.max_send_wr = 1u << sq_log;
	attr->cap.max_recv_wr = qp->srq ? 0 : 1u << rq_log;
	attr->cap.max_inline_data = qp->max_inline;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		rnic_qpx_init(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_rq:
	rnic_wq_destroy(&qp->rq);
err_sq:
	rnic_wq_destroy(&qp->sq);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *rnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = rnic_create_qp_ex(pd->context, &attr_ex);
	if (qp)
		memcpy(attr, &attr_ex, sizeof(*attr));
	return qp;
}

/* The producer index a busy device reads instead of the doorbell. */
static void rnic_sq_dbrec_store_pi(struct rnic_qp *qp)
{
	*(volatile rnic_le32 *)&qp->sq_dbrec->pi = htole32(qp->sq.head);
}

/*
 * Hands the WQEs up to sq.head to the device; the caller holds sq.lock.
 * The doorbell write stalls this CPU, so with a doorbell record it is
 * made only while the device says it is idle (struct rnic_sq_dbrec).
 */
void rnic_ring_sq(struct rnic_qp *qp)
{
	struct rnic_context *ctx = to_rctx(qp->vqp.qp.context);
	volatile rnic_le32 *flags;

	if (qp->sq_dbrec) {
		/* The WQEs before the index that hands them over. */
		udma_to_device_barrier();
		rnic_sq_dbrec_store_pi(qp);
		/*
		 * Store-load fence: pi must be visible before flags is read.
		 * The device sets RING and then reads pi; without the fence
		 * each side can miss the other's store, and the WQEs would
		 * wait for the next post.
		 */
		atomic_thread_fence(memory_order_seq_cst);
		flags = &qp->sq_dbrec->flags;
		if (!(le32toh(*flags) & RNIC_SQ_DBREC_RING))
			return;
	}
	rnic_ring_db(ctx, RNIC_DB_SQ, qp->qpn, qp->sq.head);
}

/*
 * The SQ takes work from RTS on.  SQD and SQE keep it, and ERR flushes
 * whatever is posted; before RTS a posted WQE would sit unseen, so it is
 * refused as on other devices.
 */
bool rnic_sq_accepts(enum ibv_qp_state state)
{
	switch (state) {
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
	case IBV_QPS_ERR:
		return true;
	default:
		return false;
	}
}

/* The RQ takes work from INIT on (IBTA C10-97.2.1: not in RESET). */
static bool rnic_rq_accepts(enum ibv_qp_state state)
{
	return state != IBV_QPS_RESET && state != IBV_QPS_UNKNOWN;
}

void rnic_qp_set_state(struct rnic_qp *qp, enum ibv_qp_state state)
{
	/* The device clears its ring indices on any transition to RESET. */
	bool reset = state == IBV_QPS_RESET;

	pthread_spin_lock(&qp->sq.lock);
	if (!qp->srq)
		pthread_spin_lock(&qp->rq.lock);
	qp->state = state;
	if (reset) {
		qp->sq.head = qp->sq.tail = 0;
		/* The device wrote {0, RING}; pi follows head all the same. */
		if (qp->sq_dbrec)
			rnic_sq_dbrec_store_pi(qp);
		if (!qp->srq)
			qp->rq.head = qp->rq.tail = 0;
	}
	if (!qp->srq)
		pthread_spin_unlock(&qp->rq.lock);
	pthread_spin_unlock(&qp->sq.lock);
}

int rnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET &&
	    !qp->rss) {
		/* Completions of the old work must not meet the new work. */
		rnic_cq_clean(qp->send_cq, qp);
		if (qp->recv_cq != qp->send_cq)
			rnic_cq_clean(qp->recv_cq, qp);
	}
	if (mask & IBV_QP_STATE)
		rnic_qp_set_state(qp, attr->qp_state);
	return 0;
}

int rnic_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct ibv_query_qp cmd = {};
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, mask, init_attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	/*
	 * The device moves a QP to ERR on its own; learn that here.  A change
	 * to RESET only ever comes from modify_qp, which already cleared the
	 * rings, so it is not repeated behind a poster's back.
	 */
	if (attr->qp_state != qp->state && attr->qp_state != IBV_QPS_RESET)
		rnic_qp_set_state(qp, attr->qp_state);
	return 0;
}

int rnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct rnic_context *ctx = to_rctx(ibqp->context);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_cq *first, *second;
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	if (qp->rss) {
		/* No CQ, no ring, not in the QP table. */
		pthread_spin_destroy(&qp->sq.lock);
		pthread_spin_destroy(&qp->rq.lock);
		free(qp);
		return 0;
	}

	/*
	 * Hold both CQ locks (in address order) so that no poller is inside
	 * this QP's queues when it leaves the table.
	 */
	first = qp->send_cq;
	second = qp->recv_cq;
	if (first > second) {
		first = qp->recv_cq;
		second = qp->send_cq;
	}
	pthread_spin_lock(&first->lock);
	if (second != first)
		pthread_spin_lock(&second->lock);
	rnic_clear_qp(ctx, qp);
	if (second != first)
		pthread_spin_unlock(&second->lock);
	pthread_spin_unlock(&first->lock);

	rnic_wq_destroy(&qp->rq);
	rnic_wq_destroy(&qp->sq);
	free(qp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Send WQE building, shared by post_send and the ibv_wr_* API          */
/* ------------------------------------------------------------------ */

bool rnic_op_allowed(enum ibv_qp_type type, uint8_t op)
{
	switch (op) {
	case RNIC_WR_SEND:
		return true;
	case RNIC_WR_SEND_IMM:
		/* A raw frame has no header to carry immediate data in. */
		return type != IBV_QPT_RAW_PACKET;
	case RNIC_WR_RDMA_WRITE:
	case RNIC_WR_RDMA_WRITE_IMM:
	case RNIC_WR_LOCAL_INV:
	case RNIC_WR_BIND_MW:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case RNIC_WR_SEND_INV:
	case RNIC_WR_RDMA_READ:
	case RNIC_WR_ATOMIC_CMP_SWP:
	case RNIC_WR_ATOMIC_FETCH_ADD:
	case RNIC_WR_ATOMIC_WRITE:
	case RNIC_WR_FLUSH:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

static bool rnic_op_takes_inline(uint8_t op)
{
	return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM ||
	       op == RNIC_WR_SEND_INV || op == RNIC_WR_RDMA_WRITE ||
	       op == RNIC_WR_RDMA_WRITE_IMM;
}

static uint8_t *rnic_wqe_data(struct rnic_qp *qp, struct rnic_send_wqe *wqe)
{
	return (uint8_t *)wqe + (qp->type == IBV_QPT_UD ? 128 : 64);
}

/*
 * Claim the slot at sq.head for a new WQE and fill its header.  The caller
 * holds sq.lock and rolls sq.head back if it later refuses the WQE.
 */
int rnic_sq_begin(struct rnic_qp *qp, uint8_t op, uint64_t wr_id,
		  unsigned int send_flags, struct rnic_send_wqe **out)
{
	struct rnic_wq *sq = &qp->sq;
	struct rnic_send_wqe *wqe;
	uint32_t slot;
	uint8_t flags = 0;

	if (!rnic_wq_free(sq->head, sq->tail, sq->log_size))
		return ENOMEM;
	if (!rnic_op_allowed(qp->type, op))
		return EINVAL;

	slot = sq->head & ((1u << sq->log_size) - 1);
	wqe = rnic_wq_slot(sq, slot);
	memset(wqe, 0, qp->type == IBV_QPT_UD ? 128 : 64);

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= RNIC_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= RNIC_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= RNIC_WQE_FENCE;

	wqe->wr_id = htole64(wr_id);
	wqe->opcode = op;
	wqe->flags = flags;
	sq->wr_id[slot] = wr_id;
	sq->head++;
	*out = wqe;
	return 0;
}

int rnic_wqe_set_sges(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
		      const struct ibv_sge *sg, size_t num)
{
	struct rnic_sge *sge = (struct rnic_sge *)rnic_wqe_data(qp, wqe);
	size_t i;

	if (num > qp->sq.max_sge || (wqe->flags & RNIC_WQE_INLINE))
		return EINVAL;
	if ((wqe->opcode == RNIC_WR_ATOMIC_CMP_SWP ||
	     wqe->opcode == RNIC_WR_ATOMIC_FETCH_ADD) && num != 1)
		return EINVAL;
	for (i = 0; i < num; i++) {
		sge[i].addr = htole64(sg[i].addr);
		sge[i].length = htole32(sg[i].length);
		sge[i].lkey = htole32(sg[i].lkey);
	}
	wqe->num_sge = num;
	return 0;
}

int rnic_wqe_add_inline(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
			const void *addr, size_t len)
{
	uint32_t used = le32toh(wqe->inline_len);

	if (!rnic_op_takes_inline(wqe->opcode) || wqe->num_sge ||
	    len > qp->max_inline - used)
		return EINVAL;
	memcpy(rnic_wqe_data(qp, wqe) + used, addr, len);
	wqe->inline_len = htole32(used + len);
	wqe->flags |= RNIC_WQE_INLINE;
	return 0;
}

void rnic_wqe_set_ud(struct rnic_send_wqe *wqe, struct ibv_ah *ah,
		     uint32_t remote_qpn, uint32_t remote_qkey)
{
	memcpy((uint8_t *)wqe + sizeof(*wqe), &to_rah(ah)->av,
	       sizeof(struct rnic_av));
	wqe->ud_qpn = htole32(remote_qpn & RNIC_DB_QN_MASK);
	wqe->ud_qkey = htole32(remote_qkey);
}

static int rnic_wr_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_SEND:
		*out = RNIC_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = RNIC_WR_SEND_IMM;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = RNIC_WR_SEND_INV;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*out = RNIC_WR_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = RNIC_WR_RDMA_WRITE_IMM;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = RNIC_WR_RDMA_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = RNIC_WR_ATOMIC_CMP_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = RNIC_WR_ATOMIC_FETCH_ADD;
		return 0;
	case IBV_WR_LOCAL_INV:
		*out = RNIC_WR_LOCAL_INV;
		return 0;
	case IBV_WR_BIND_MW:
		*out = RNIC_WR_BIND_MW;
		return 0;
	default:
		return EINVAL;
	}
}

static int rnic_build_send(struct rnic_qp *qp, struct ibv_send_wr *wr)
{
	struct rnic_send_wqe *wqe;
	uint8_t op;
	int ret, i;

	if (rnic_wr_opcode(wr->opcode, &op))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	if (qp->type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;

	ret = rnic_sq_begin(qp, op, wr->wr_id, wr->send_flags, &wqe);
	if (ret)
		return ret;

	if (op == RNIC_WR_BIND_MW) {
		struct ibv_mw *mw = wr->bind_mw.mw;

		/* Type 1 windows are bound through ibv_bind_mw only. */
		ret = mw && mw->type == IBV_MW_TYPE_2 ?
		      rnic_wqe_set_bind(qp, wqe, mw, wr->bind_mw.rkey,
					&wr->bind_mw.bind_info) : EINVAL;
		if (ret)
			qp->sq.head--;
		else
			mw->rkey = wr->bind_mw.rkey;
		return ret;
	}

	switch (op) {
	case RNIC_WR_SEND_IMM:
	case RNIC_WR_RDMA_WRITE_IMM:
		/* ImmDt stays in wire order. */
		wqe->imm_inv = wr->imm_data;
		break;
	case RNIC_WR_SEND_INV:
	case RNIC_WR_LOCAL_INV:
		wqe->imm_inv = htole32(wr->invalidate_rkey);
		break;
	default:
		break;
	}
	switch (op) {
	case RNIC_WR_RDMA_WRITE:
	case RNIC_WR_RDMA_WRITE_IMM:
	case RNIC_WR_RDMA_READ:
		wqe->rkey = htole32(wr->wr.rdma.rkey);
		wqe->remote_addr = htole64(wr->wr.rdma.remote_addr);
		break;
	case RNIC_WR_ATOMIC_CMP_SWP:
	case RNIC_WR_ATOMIC_FETCH_ADD:
		wqe->rkey = htole32(wr->wr.atomic.rkey);
		wqe->remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->swap = htole64(wr->wr.atomic.swap);
		break;
	default:
		break;
	}
	if (qp->type == IBV_QPT_UD)
		rnic_wqe_set_ud(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				wr->wr.ud.remote_qkey);

	if ((wr->send_flags & IBV_SEND_INLINE) && rnic_op_takes_inline(op)) {
		for (i = 0; i < wr->num_sge && !ret; i++)
			ret = rnic_wqe_add_inline(
				qp, wqe,
				(void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
	} else {
		ret = rnic_wqe_set_sges(qp, wqe, wr->sg_list, wr->num_sge);
	}
	if (ret)
		qp->sq.head--;
	return ret;
}

int rnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	uint32_t start;
	int ret = 0;

	if (qp->rss) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.head;
	if (!rnic_sq_accepts(qp->state)) {
		*bad_wr = wr;
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = rnic_build_send(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	if (qp->sq.head != start)
		rnic_ring_sq(qp);
out:
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

int rnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct rnic_context *ctx = to_rctx(ibqp->context);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *rq = &qp->rq;
	uint32_t start;
	int ret = 0;

	/* An RSS QP receives through the work queues of its table. */
	if (qp->srq || qp->rss) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&rq->lock);
	start = rq->head;
	if (!rnic_rq_accepts(qp->state)) {
		*bad_wr = wr;
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (!rnic_wq_free(rq->head, rq->tail, rq->log_size))
			ret = ENOMEM;
		else
			ret = rnic_build_recv_wqe(rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	if (rq->head != start)
		rnic_ring_db(ctx, RNIC_DB_RQ, qp->qpn, rq->head);
out:
	pthread_spin_unlock(&rq->lock);
	return ret;
}
