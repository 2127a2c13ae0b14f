// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: shared receive queues.
 *
 * WQEs are posted in ring order and the device takes them in that order,
 * copying each as it takes it, but receives on different QPs complete out
 * of order, and one a QP holds (a message waiting for a retransmission)
 * may complete long after thousands of newer ones.  A completion of index
 * i shows the device took every index up to i, so the ring slots up to i
 * are free again, whether or not their own completions came; the wr_id of
 * each receive waits in a shadow indexed as the CQEs name it (16 bits),
 * which only a receive still held 64K posts later blocks.
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
	ret = rnic_wq_init(&srq->wq, pd, RNIC_RES_TYPE_SRQ, log_size,
			   RNIC_RQ_WQE_SIZE,
			   max_t(uint32_t, attr->attr.max_sge, 1), 0);
	if (ret)
		goto err_free;

	cmd.drv.buf_addr = (uintptr_t)srq->wq.buf;
	cmd.drv.buf_size = srq->wq.buf_size;
	cmd.drv.log_size = log_size;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_wq;

	srq->srqn = resp.drv.srqn;
	return &srq->vsrq.srq;

err_wq:
	rnic_wq_destroy(&srq->wq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * Grow the ring under the WQ lock: every WQE the device may not have taken
 * yet moves to the slot its free-running index has in the larger ring,
 * which is where the device looks for it.  The wr_id shadow, indexed by
 * the CQEs' unmasked indices, stays as it is.
 */
static int rnic_resize_srq(struct rnic_srq *srq, struct ibv_srq_attr *attr,
			   int mask, unsigned int log_size)
{
	struct rnic_modify_srq_cmd cmd = {};
	struct rnic_wq *wq = &srq->wq;
	uint32_t entries = 1u << log_size;
	uint32_t omask = (1u << wq->log_size) - 1;
	uint32_t nmask = entries - 1;
	struct rnic_ring_mem mem = {
		.size = (size_t)entries * wq->wqe_size,
		.type = RNIC_RES_TYPE_SRQ,
	};
	struct rnic_ring_mem old;
	uint32_t idx;
	void *buf;
	int ret;

	ret = rnic_alloc_ring(srq->vsrq.srq.pd, &mem);
	if (ret)
		return ret;
	buf = mem.buf;

	pthread_spin_lock(&wq->lock);
	for (idx = wq->tail; idx != wq->head; idx++)
		memcpy((uint8_t *)buf + (size_t)(idx & nmask) * wq->wqe_size,
		       (uint8_t *)wq->buf + (size_t)(idx & omask) * wq->wqe_size,
		       wq->wqe_size);
	cmd.drv.buf_addr = (uintptr_t)buf;
	cmd.drv.buf_size = mem.size;
	cmd.drv.log_size = log_size;
	ret = ibv_cmd_modify_srq(&srq->vsrq.srq, attr, mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (!ret) {
		old = (struct rnic_ring_mem){ .buf = wq->buf,
					      .size = wq->buf_size,
					      .owner = wq->buf_owner,
					      .type = wq->type };
		rnic_free_ring(&old);
		wq->buf = buf;
		wq->buf_size = mem.size;
		wq->buf_owner = mem.owner;
		wq->log_size = log_size;
	}
	pthread_spin_unlock(&wq->lock);
	if (!ret)
		return 0;
	rnic_free_ring(&mem);
	return ret;
}

int rnic_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct rnic_context *ctx = to_rctx(ibsrq->context);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_modify_srq_cmd cmd = {};
	unsigned int log_size;

	if (mask & IBV_SRQ_MAX_WR) {
		if (attr->max_wr == 0 || attr->max_wr > ctx->max_srq_wr)
			return EINVAL;
		/* With the same slack as at creation. */
		log_size = rnic_log2_ceil(attr->max_wr);
		if (log_size < RNIC_WQ_MAX_LOG_SIZE &&
		    (2u << log_size) <= ctx->max_srq_wr)
			log_size++;
		if (log_size > RNIC_WQ_MAX_LOG_SIZE)
			return EINVAL;
		/* The ring never shrinks; one this large already does. */
		if (log_size > srq->wq.log_size)
			return rnic_resize_srq(srq, attr, mask, log_size);
		mask &= ~IBV_SRQ_MAX_WR;
		if (!mask)
			return 0;
	}
	return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd.ibv_cmd, sizeof(cmd));
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
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (; wr; wr = wr->next) {
		/*
		 * The ring slot must hold no WQE the device may still take,
		 * and the shadow entry no receive still outstanding.
		 */
		if (!rnic_wq_free(wq->head, wq->tail, wq->log_size) ||
		    wq->busy[wq->head & (RNIC_SRQ_SHADOW - 1)])
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
