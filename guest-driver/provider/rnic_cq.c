// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: completion queues.
 *
 * The CQ buffer is one dbrec page followed by 1 << log_size CQEs.  The
 * device writes each CQE body and then its owner byte; poll_cq owns
 * entry ci & mask when the owner bit differs from the pass parity of ci,
 * copies the entry, validates every field against the provider's own
 * bookkeeping and publishes its consumer index in the dbrec.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "rnic.h"

struct ibv_cq *rnic_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct rnic_create_cq_resp resp = {};
	struct rnic_create_cq_cmd cmd = {};
	struct rnic_cq *cq;
	unsigned int log_size;
	int ret;

	if (cqe <= 0 || (uint32_t)cqe > ctx->max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	/* At least one entry more than asked for, rounded to a power of 2. */
	log_size = rnic_log2_ceil((uint32_t)cqe + 1);
	if (log_size > RNIC_CQ_MAX_LOG_SIZE) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE)) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}

	cq->log_size = log_size;
	cq->buf_size = align(RNIC_CQ_DBREC_PAGE_SIZE +
				     ((size_t)RNIC_CQE_SIZE << log_size),
			     RNIC_PAGE_SIZE);
	cq->buf = rnic_alloc_ring(cq->buf_size);
	if (!cq->buf) {
		ret = ENOMEM;
		goto err_lock;
	}
	cq->dbrec = cq->buf;
	cq->cqes = (struct rnic_cqe *)((uint8_t *)cq->buf +
				       RNIC_CQ_DBREC_PAGE_SIZE);

	cmd.drv.buf_addr = htole64((uintptr_t)cq->buf);
	cmd.drv.buf_size = htole32(cq->buf_size);
	cmd.drv.log_size = htole32(log_size);

	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_buf;

	if (le32toh(resp.drv.log_size) != log_size) {
		verbs_err(&ctx->ibv_ctx,
			  "kernel made CQ %u with log_size %u, asked %u\n",
			  le32toh(resp.drv.cqn), le32toh(resp.drv.log_size),
			  log_size);
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		ret = EPROTO;
		goto err_buf;
	}
	cq->cqn = le32toh(resp.drv.cqn);
	return &cq->vcq.cq;

err_buf:
	rnic_free_ring(cq->buf, cq->buf_size);
err_lock:
	pthread_spin_destroy(&cq->lock);
	free(cq);
	errno = ret;
	return NULL;
}

int rnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	rnic_free_ring(cq->buf, cq->buf_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static bool rnic_wc_opcode(uint8_t op, enum ibv_wc_opcode *out, bool *recv)
{
	*recv = false;
	switch (op) {
	case RNIC_WC_SEND:
		*out = IBV_WC_SEND;
		return true;
	case RNIC_WC_RDMA_WRITE:
		*out = IBV_WC_RDMA_WRITE;
		return true;
	case RNIC_WC_RDMA_READ:
		*out = IBV_WC_RDMA_READ;
		return true;
	case RNIC_WC_COMP_SWAP:
		*out = IBV_WC_COMP_SWAP;
		return true;
	case RNIC_WC_FETCH_ADD:
		*out = IBV_WC_FETCH_ADD;
		return true;
	case RNIC_WC_BIND_MW:
		*out = IBV_WC_BIND_MW;
		return true;
	case RNIC_WC_LOCAL_INV:
		*out = IBV_WC_LOCAL_INV;
		return true;
	case RNIC_WC_RECV:
		*out = IBV_WC_RECV;
		*recv = true;
		return true;
	case RNIC_WC_RECV_RDMA_WITH_IMM:
		*out = IBV_WC_RECV_RDMA_WITH_IMM;
		*recv = true;
		return true;
	default:
		/* RNIC_WC_REG_MR is a kernel-only completion. */
		return false;
	}
}

/*
 * Retire the WQE in 'slot' of wq.  Send queues retire in order, and a
 * completion also retires the unsignaled WQEs before it; receive queues
 * complete strictly in order; SRQ slots complete in any order but each
 * exactly once.  Returns false (and retires nothing) for a slot that is
 * not outstanding.
 */
static bool rnic_wq_retire(struct rnic_wq *wq, uint32_t slot, bool in_order,
			   uint64_t *wr_id)
{
	uint32_t mask = (1u << wq->log_size) - 1;
	bool ok = false;
	uint32_t pos;

	pthread_spin_lock(&wq->lock);
	if (!rnic_wq_slot_outstanding(wq->head, wq->tail, wq->log_size, slot,
				      &pos))
		goto out;

	if (wq->busy) {
		if (!wq->busy[slot])
			goto out;
		wq->busy[slot] = 0;
		while (wq->tail != wq->head && !wq->busy[wq->tail & mask])
			wq->tail++;
	} else if (in_order) {
		if (pos != 0)
			goto out;
		wq->tail++;
	} else {
		wq->tail += pos + 1;
	}
	*wr_id = wq->wr_id[slot];
	ok = true;
out:
	pthread_spin_unlock(&wq->lock);
	return ok;
}

/* Returns true when the CQE is valid and *wc is filled. */
static bool rnic_parse_cqe(struct rnic_context *ctx, struct rnic_cq *cq,
			   const struct rnic_cqe *cqe, struct ibv_wc *wc)
{
	uint32_t qpn = le32toh(cqe->qpn) & RNIC_DB_QN_MASK;
	uint32_t slot = le16toh(cqe->wqe_idx);
	enum ibv_wc_opcode opcode;
	struct rnic_wq *wq;
	struct rnic_qp *qp;
	uint64_t wr_id;
	bool recv;

	qp = rnic_find_qp(ctx, qpn);
	if (!qp) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE for unknown QPN %u dropped\n",
				   cq->cqn, qpn);
		return false;
	}
	if (!rnic_wc_opcode(cqe->opcode, &opcode, &recv)) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE with unknown opcode 0x%x dropped\n",
				   cq->cqn, cqe->opcode);
		return false;
	}
	if ((recv ? qp->recv_cq : qp->send_cq) != cq) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE of QP %u belongs to another CQ\n",
				   cq->cqn, qpn);
		return false;
	}

	if (!recv)
		wq = &qp->sq;
	else if (qp->srq)
		wq = &qp->srq->wq;
	else
		wq = &qp->rq;

	if (!rnic_wq_retire(wq, slot, recv, &wr_id)) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: QP %u %s CQE names slot %u, not outstanding\n",
				   cq->cqn, qpn, recv ? "recv" : "send", slot);
		return false;
	}

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = cqe->status >= RNIC_WC_STATUS_MAX ?
			     IBV_WC_GENERAL_ERR :
			     (enum ibv_wc_status)cqe->status;
	wc->opcode = opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->qp_num = qpn;
	wc->byte_len = le32toh(cqe->byte_len);
	if (recv) {
		if (cqe->flags & RNIC_CQE_WITH_IMM) {
			/* ImmDt bytes are stored in wire order. */
			wc->imm_data = cqe->imm_inv;
			wc->wc_flags |= IBV_WC_WITH_IMM;
		} else if (cqe->flags & RNIC_CQE_WITH_INV) {
			wc->invalidated_rkey = le32toh(cqe->imm_inv);
			wc->wc_flags |= IBV_WC_WITH_INV;
		}
		if (cqe->flags & RNIC_CQE_GRH)
			wc->wc_flags |= IBV_WC_GRH;
		wc->src_qp = le32toh(cqe->src_qp) & RNIC_DB_QN_MASK;
	}
	return true;
}

int rnic_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct rnic_context *ctx = to_rctx(ibcq->context);
	struct rnic_cq *cq = to_rcq(ibcq);
	uint32_t mask = (1u << cq->log_size) - 1;
	uint32_t start;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	start = cq->ci;
	while (n < ne) {
		struct rnic_cqe *hw = &cq->cqes[cq->ci & mask];
		struct rnic_cqe cqe;
		uint8_t owner;

		owner = *(volatile uint8_t *)&hw->owner;
		if (!rnic_owner_is_new(owner, cq->ci, cq->log_size))
			break;
		/* The body was written before the owner byte. */
		udma_from_device_barrier();
		memcpy(&cqe, hw, sizeof(cqe));
		cq->ci++;
		if (rnic_parse_cqe(ctx, cq, &cqe, &wc[n]))
			n++;
	}
	if (cq->ci != start) {
		/* Our reads of the consumed entries come before the device
		 * may reuse them. */
		udma_to_device_barrier();
		*(volatile rnic_le32 *)&cq->dbrec->ci = htole32(cq->ci);
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

int rnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct rnic_context *ctx = to_rctx(ibcq->context);
	struct rnic_cq *cq = to_rcq(ibcq);
	uint64_t val;

	pthread_spin_lock(&cq->lock);
	val = ((uint64_t)cq->cqn & RNIC_DB_QN_MASK) |
	      (solicited_only ? RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM) |
	      ((uint64_t)cq->ci << 32);
	udma_to_device_barrier();
	mmio_write64_le((uint8_t *)ctx->db + RNIC_DB_CQ, htole64(val));
	pthread_spin_unlock(&cq->lock);
	return 0;
}
