// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: the ibv_wr_* extended send API.
 *
 * wr_start takes the SQ lock and remembers the producer index; each
 * wr_<opcode> claims the next slot and the setters fill it; wr_complete
 * rings the doorbell once (or, after any error, drops every WQE of the
 * batch and reports the first error); wr_abort drops the batch.
 */
#include <errno.h>
#include <string.h>

#include <util/util.h>

#include "rnic.h"

static struct rnic_send_wqe *rnic_wr_begin(struct ibv_qp_ex *qpx, uint8_t op)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe;
	int ret;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	ret = rnic_sq_begin(qp, op, qpx->wr_id, qpx->wr_flags, &wqe);
	if (ret) {
		qp->wr_err = ret;
		return NULL;
	}
	qp->wr_cur = wqe;
	return wqe;
}

/* The WQE the setters apply to, or NULL (with wr_err set) if none. */
static struct rnic_send_wqe *rnic_wr_cur(struct rnic_qp *qp)
{
	if (qp->wr_err)
		return NULL;
	if (!qp->wr_cur)
		qp->wr_err = EINVAL;
	return qp->wr_cur;
}

static void rnic_wr_send(struct ibv_qp_ex *qpx)
{
	rnic_wr_begin(qpx, RNIC_WR_SEND);
}

static void rnic_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_SEND_IMM);

	if (wqe)
		wqe->imm_inv = (__force rnic_le32)imm;
}

static void rnic_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_SEND_INV);

	if (wqe)
		wqe->imm_inv = htole32(rkey);
}

static void rnic_wr_rdma(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey,
			 uint64_t remote_addr, __be32 imm)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, op);

	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	if (op == RNIC_WR_RDMA_WRITE_IMM)
		wqe->imm_inv = (__force rnic_le32)imm;
}

static void rnic_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	rnic_wr_rdma(qpx, RNIC_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void rnic_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm)
{
	rnic_wr_rdma(qpx, RNIC_WR_RDMA_WRITE_IMM, rkey, remote_addr, imm);
}

static void rnic_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	rnic_wr_rdma(qpx, RNIC_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void rnic_wr_atomic(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey,
			   uint64_t remote_addr, uint64_t compare_add,
			   uint64_t swap)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, op);

	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	wqe->compare_add = htole64(compare_add);
	wqe->swap = htole64(swap);
}

static void rnic_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	rnic_wr_atomic(qpx, RNIC_WR_ATOMIC_CMP_SWP, rkey, remote_addr, compare,
		       swap);
}

static void rnic_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	rnic_wr_atomic(qpx, RNIC_WR_ATOMIC_FETCH_ADD, rkey, remote_addr, add,
		       0);
}

/* The 8 bytes travel in the WQE, in memory order. */
static void rnic_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, const void *atomic_wr)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_ATOMIC_WRITE);

	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	memcpy(&wqe->compare_add, atomic_wr, sizeof(wqe->compare_add));
}

/*
 * A type the MR does not allow is the responder's to refuse, so that the
 * requester sees REM_ACCESS_ERR as between any two RNICs; only values
 * the FLUSH header cannot carry fail here.
 */
static void rnic_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			  uint64_t remote_addr, size_t len, uint8_t type,
			  uint8_t level)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_FLUSH);

	if (!wqe)
		return;
	if (!type || (type & ~(IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT)) ||
	    (level != IBV_FLUSH_RANGE && level != IBV_FLUSH_MR)) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	wqe->swap = htole64(len);
	wqe->imm_inv = htole32((type & RNIC_FLUSH_TYPE_MASK) |
			       ((uint32_t)level << RNIC_FLUSH_LEVEL_SHIFT &
				RNIC_FLUSH_LEVEL_MASK));
}

static void rnic_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_LOCAL_INV);

	if (wqe)
		wqe->imm_inv = htole32(rkey);
}

static void rnic_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_begin(qpx, RNIC_WR_BIND_MW);

	if (!wqe)
		return;
	if (!mw || mw->type != IBV_MW_TYPE_2)
		qp->wr_err = EINVAL;
	else
		qp->wr_err = rnic_wqe_set_bind(qp, wqe, mw, rkey, bind_info);
	if (!qp->wr_err)
		mw->rkey = rkey;
}

static void rnic_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_cur(qp);

	if (!wqe)
		return;
	if (qp->type != IBV_QPT_UD || !ah) {
		qp->wr_err = EINVAL;
		return;
	}
	rnic_wqe_set_ud(wqe, ah, remote_qpn, remote_qkey);
}

static void rnic_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_cur(qp);
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };
	int ret;

	if (!wqe)
		return;
	ret = rnic_wqe_set_sges(qp, wqe, &sge, 1);
	if (ret)
		qp->wr_err = ret;
}

static void rnic_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_cur(qp);
	int ret;

	if (!wqe)
		return;
	ret = rnic_wqe_set_sges(qp, wqe, sg_list, num_sge);
	if (ret)
		qp->wr_err = ret;
}

static void rnic_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				    size_t length)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_cur(qp);
	int ret;

	if (!wqe)
		return;
	ret = rnic_wqe_add_inline(qp, wqe, addr, length);
	if (ret)
		qp->wr_err = ret;
}

static void rnic_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	struct rnic_send_wqe *wqe = rnic_wr_cur(qp);
	size_t i;
	int ret = 0;

	if (!wqe)
		return;
	for (i = 0; i < num_buf && !ret; i++)
		ret = rnic_wqe_add_inline(qp, wqe, buf_list[i].addr,
					  buf_list[i].length);
	if (ret)
		qp->wr_err = ret;
}

static void rnic_wr_start(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start_head = qp->sq.head;
	qp->wr_cur = NULL;
	/* Before RTS nothing may be posted: the batch ends in EINVAL. */
	qp->wr_err = rnic_sq_accepts(qp->state) ? 0 : EINVAL;
}

static int rnic_wr_complete(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);
	int ret = qp->wr_err;

	if (ret)
		qp->sq.head = qp->wr_start_head;
	else if (qp->sq.head != qp->wr_start_head)
		rnic_ring_sq(qp);
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static void rnic_wr_abort(struct ibv_qp_ex *qpx)
{
	struct rnic_qp *qp = qpx_to_rqp(qpx);

	qp->sq.head = qp->wr_start_head;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

void rnic_qpx_init(struct rnic_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (ops & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = rnic_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = rnic_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = rnic_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = rnic_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = rnic_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = rnic_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = rnic_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = rnic_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = rnic_wr_atomic_write;
	if (ops & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = rnic_wr_flush;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = rnic_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = rnic_wr_bind_mw;

	qpx->wr_set_ud_addr = rnic_wr_set_ud_addr;
	qpx->wr_set_sge = rnic_wr_set_sge;
	qpx->wr_set_sge_list = rnic_wr_set_sge_list;
	qpx->wr_set_inline_data = rnic_wr_set_inline_data;
	qpx->wr_set_inline_data_list = rnic_wr_set_inline_data_list;
	qpx->wr_start = rnic_wr_start;
	qpx->wr_complete = rnic_wr_complete;
	qpx->wr_abort = rnic_wr_abort;
}
