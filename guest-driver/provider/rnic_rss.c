// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic provider: receive-side scaling.  A receive work queue (ibv_wq) is,
 * to the device, a raw packet QP that only receives: the provider keeps
 * a QP of its own behind each WQ so that posting and polling are the
 * QP paths.  An RSS QP has no rings at all; the device spreads the frames
 * its flow rules catch over the WQs of its indirection table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic.h"

struct rnic_rwq {
	struct ibv_wq ibwq;
	struct rnic_qp qp;
};

static inline struct rnic_rwq *to_rrwq(struct ibv_wq *ibwq)
{
	return container_of(ibwq, struct rnic_rwq, ibwq);
}

static int rnic_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	return rnic_post_recv(&to_rrwq(ibwq)->qp.vqp.qp, wr, bad_wr);
}

struct ibv_wq *rnic_create_wq(struct ibv_context *ibctx,
			      struct ibv_wq_init_attr *attr)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct rnic_create_wq_resp resp = {};
	struct rnic_create_wq_cmd cmd = {};
	struct rnic_rwq *rwq;
	struct rnic_qp *qp;
	unsigned int log_size;
	int ret;

	if (attr->wq_type != IBV_WQT_RQ ||
	    attr->comp_mask & ~IBV_WQ_INIT_ATTR_FLAGS ||
	    (attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS && attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->pd || !attr->cq || !attr->max_wr ||
	    attr->max_wr > ctx->max_qp_wr ||
	    attr->max_sge > min_t(uint32_t, ctx->max_recv_sge,
				  RNIC_RQ_MAX_SGE)) {
		errno = EINVAL;
		return NULL;
	}
	log_size = rnic_log2_ceil(attr->max_wr);
	if (log_size > RNIC_WQ_MAX_LOG_SIZE) {
		errno = EINVAL;
		return NULL;
	}

	rwq = calloc(1, sizeof(*rwq));
	if (!rwq) {
		errno = ENOMEM;
		return NULL;
	}
	qp = &rwq->qp;
	qp->vqp.qp.context = ibctx;
	qp->type = IBV_QPT_RAW_PACKET;
	qp->state = IBV_QPS_RESET;
	qp->send_cq = to_rcq(attr->cq);
	qp->recv_cq = qp->send_cq;
	/* The QP paths take the SQ lock to change state; there is no SQ. */
	if (pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE)) {
		ret = ENOMEM;
		goto err_free;
	}
	ret = rnic_wq_init(&qp->rq, attr->pd, RNIC_RES_TYPE_RQ, log_size,
			   RNIC_RQ_WQE_SIZE, max_t(uint32_t, attr->max_sge, 1),
			   0);
	if (ret)
		goto err_lock;

	cmd.drv.rq_addr = (uintptr_t)qp->rq.buf;
	cmd.drv.rq_size = qp->rq.buf_size;
	cmd.drv.rq_log_size = log_size;
	ret = ibv_cmd_create_wq(ibctx, attr, &rwq->ibwq, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_rq;
	qp->qpn = resp.drv.wqn;
	if (qp->qpn != rwq->ibwq.wq_num) {
		ret = EPROTO;
		goto err_destroy;
	}
	qp->vqp.qp.qp_num = qp->qpn;
	ret = rnic_store_qp(ctx, qp);
	if (ret)
		goto err_destroy;

	rwq->ibwq.post_recv = rnic_post_wq_recv;
	attr->max_wr = 1u << log_size;
	attr->max_sge = qp->rq.max_sge;
	return &rwq->ibwq;

err_destroy:
	ibv_cmd_destroy_wq(&rwq->ibwq);
err_rq:
	rnic_wq_destroy(&qp->rq);
err_lock:
	pthread_spin_destroy(&qp->sq.lock);
err_free:
	free(rwq);
	errno = ret;
	return NULL;
}

int rnic_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct rnic_qp *qp = &to_rrwq(ibwq)->qp;
	struct ibv_modify_wq cmd = {};
	enum ibv_qp_state state;
	int ret;

	if (attr->attr_mask & ~(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP;
	ret = ibv_cmd_modify_wq(ibwq, attr, &cmd, sizeof(cmd));
	if (ret || !(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return ret;
	switch (attr->wq_state) {
	case IBV_WQS_RDY:
		state = IBV_QPS_RTR;
		break;
	case IBV_WQS_ERR:
		state = IBV_QPS_ERR;
		break;
	default:
		state = IBV_QPS_RESET;
		/* Completions of the old work must not meet the new work. */
		rnic_cq_clean(qp->recv_cq, qp);
	}
	rnic_qp_set_state(qp, state);
	return 0;
}

int rnic_destroy_wq(struct ibv_wq *ibwq)
{
	struct rnic_context *ctx = to_rctx(ibwq->context);
	struct rnic_rwq *rwq = to_rrwq(ibwq);
	struct rnic_qp *qp = &rwq->qp;
	int ret;

	ret = ibv_cmd_destroy_wq(ibwq);
	if (ret)
		return ret;
	/* No poller may be inside the WQ when it leaves the table. */
	pthread_spin_lock(&qp->recv_cq->lock);
	rnic_clear_qp(ctx, qp);
	pthread_spin_unlock(&qp->recv_cq->lock);
	rnic_wq_destroy(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	free(rwq);
	return 0;
}

struct ibv_rwq_ind_table *
rnic_create_rwq_ind_table(struct ibv_context *ctx,
			  struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl;
	int ret;

	if (attr->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	tbl = calloc(1, sizeof(*tbl));
	if (!tbl) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_rwq_ind_table(ctx, attr, tbl, &resp,
					   sizeof(resp));
	if (ret) {
		free(tbl);
		errno = ret;
		return NULL;
	}
	return tbl;
}

int rnic_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int ret;

	ret = ibv_cmd_destroy_rwq_ind_table(tbl);
	if (ret)
		return ret;
	free(tbl);
	return 0;
}

static_assert(RNIC_RX_HASH_FIELDS == RNIC_RSS_FIELDS, "RSS field bits");

struct ibv_qp *rnic_create_rss_qp(struct rnic_context *ctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;
	struct rnic_create_qp_ex_resp resp = {};
	struct rnic_create_qp_ex_cmd cmd = {};
	struct rnic_qp *qp;
	int ret;

	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_RX_HASH |
				IBV_QP_INIT_ATTR_IND_TABLE) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    attr->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    !attr->rwq_ind_tbl || attr->srq || attr->recv_cq ||
	    attr->cap.max_send_wr || attr->cap.max_recv_wr) {
		errno = EINVAL;
		return NULL;
	}
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    h->rx_hash_fields_mask & ~(uint64_t)RNIC_RX_HASH_FIELDS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (h->rx_hash_key_len != RNIC_RSS_KEY_LEN || !h->rx_hash_key) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->type = IBV_QPT_RAW_PACKET;
	qp->state = IBV_QPS_RESET;
	qp->rss = true;
	if (pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE)) {
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE)) {
		ret = ENOMEM;
		goto err_lock;
	}
	cmd.drv.rx_hash_fields_mask = h->rx_hash_fields_mask;
	cmd.drv.rx_hash_function = h->rx_hash_function;
	cmd.drv.rx_key_len = h->rx_hash_key_len;
	memcpy(cmd.drv.rx_hash_key, h->rx_hash_key, RNIC_RSS_KEY_LEN);

	ret = ibv_cmd_create_qp_ex2(&ctx->ibv_ctx.context, &qp->vqp, attr,
				    &cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				    sizeof(resp));
	if (ret)
		goto err_locks;
	qp->qpn = resp.drv.qpn;
	if (qp->qpn != qp->vqp.qp.qp_num) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		ret = EPROTO;
		goto err_locks;
	}
	return &qp->vqp.qp;

err_locks:
	pthread_spin_destroy(&qp->rq.lock);
err_lock:
	pthread_spin_destroy(&qp->sq.lock);
	free(qp);
	errno = ret;
	return NULL;
}
