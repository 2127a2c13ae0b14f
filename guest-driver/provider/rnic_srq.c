// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: shared receive queues.
 *
 * WQEs are posted in ring order and the device consumes them in that
 * order, but receives on different QPs may complete out of order, so each
 * slot stays busy until its own completion is polled and the tail only
 * moves over completed slots.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <util/util.h>

#include "rnic.h"

struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct rnic_context *ctx = to_rctx(pd->context);
	struct rnic_create_srq_resp resp = {};
	struct rnic_create_srq_cmd cmd = {};
	struct rnic_srq *srq;
	unsigned int log_size;
	int ret;

	if (attr->attr.max_wr == 0 || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > min_t(uint32_t, ctx->max_srq_sge,
				       RNIC_RQ_MAX_SGE)) {
		errno = EINVAL;
		return NULL;
	}
	log_size = rnic_log2_ceil(attr->attr.max_wr);
	if (log_size > RNIC_WQ_MAX_LOG_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Receives on different QPs complete out of order and a slot is only
	 * reused once its own completion is polled, so the ring gets twice
	 * the room where the device allows it.
	 */
	if (log_size < RNIC_WQ_MAX_LOG_SIZE &&
	    (2u << log_size) <= ctx->max_srq_wr)
		log_size++;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = rnic_wq_init(&srq->wq, log_size, RNIC_RQ_WQE_SIZE,
			   max_t(uint32_t, attr->attr.max_sge, 1), true);
	if (ret)
		goto err_free;

	cmd.drv.buf_addr = htole64((uintptr_t)srq->wq.buf);
	cmd.drv.buf_size = htole32(srq->wq.buf_size);
	cmd.drv.log_size = log_size;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_wq;

	srq->srqn = le32toh(resp.drv.srqn);
	return &srq->vsrq.srq;

err_wq:
	rnic_wq_destroy(&srq->wq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

int rnic_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct ibv_modify_srq cmd = {};

	/* The ring cannot be resized; only the limit may change. */
	if (mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd, sizeof(cmd));
}

int rnic_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int rnic_destroy_srq(struct ibv_srq *ibsrq)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	rnic_wq_destroy(&srq->wq);
	free(srq);
	return 0;
}

int rnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct rnic_context *ctx = to_rctx(ibsrq->context);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_wq *wq = &srq->wq;
	uint32_t mask = (1u << wq->log_size) - 1;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (; wr; wr = wr->next) {
		/* The next slot may still be held by an uncompleted WQE. */
		if (!rnic_wq_free(wq->head, wq->tail, wq->log_size) ||
		    wq->busy[wq->head & mask])
			ret = ENOMEM;
		else
			ret = rnic_build_recv_wqe(wq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	if (wq->head != start)
		rnic_ring_db(ctx, RNIC_DB_SRQ, srq->srqn, wq->head);
	pthread_spin_unlock(&wq->lock);
	return ret;
}
