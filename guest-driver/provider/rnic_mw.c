// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: memory windows.
 *
 * The kernel allocates and frees windows; binding is a BIND_MW work
 * request on the QP's send queue, executed by the device in order with the
 * QP's other work requests.  Type 1 windows are bound through
 * ibv_bind_mw, type 2 windows through ibv_post_send or ibv_wr_bind_mw.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <util/util.h>

#include "rnic.h"

/* Local write means nothing for a window; the device takes remote rights. */
#define RNIC_MW_ACCESS	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_ATOMIC)

struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int rnic_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * Fills a claimed BIND_MW slot.  The device checks the MR's rights and
 * range when it executes the WQE; here only what the caller can get
 * wrong before that.
 */
int rnic_wqe_set_bind(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
		      struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *bi)
{
	unsigned int access = bi->mw_access_flags & ~IBV_ACCESS_LOCAL_WRITE;

	if (!mw || rnic_pd_base(mw->pd) != rnic_pd_base(qp->vqp.qp.pd) ||
	    access & ~RNIC_MW_ACCESS)
		return EINVAL;
	if (bi->length &&
	    (!bi->mr || rnic_pd_base(bi->mr->pd) != rnic_pd_base(mw->pd)))
		return EINVAL;
	/* Only the key byte may change: the rest names the window. */
	if ((rkey & ~0xffu) != (mw->rkey & ~0xffu))
		return EINVAL;
	wqe->rkey = htole32(rkey);
	wqe->imm_inv = htole32(access);
	wqe->remote_addr = htole64(bi->addr);
	wqe->swap = htole64(bi->length);
	wqe->compare_add = htole64(bi->length ? bi->mr->lkey : 0);
	return 0;
}

int rnic_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct rnic_send_wqe *wqe;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	pthread_spin_lock(&qp->sq.lock);
	if (!rnic_sq_accepts(qp->state)) {
		ret = EINVAL;
		goto out;
	}
	ret = rnic_sq_begin(qp, RNIC_WR_BIND_MW, mw_bind->wr_id,
			    mw_bind->send_flags, &wqe);
	if (ret)
		goto out;
	ret = rnic_wqe_set_bind(qp, wqe, mw, rkey, &mw_bind->bind_info);
	if (ret) {
		qp->sq.head--;
		goto out;
	}
	rnic_ring_sq(qp);
	mw->rkey = rkey;
out:
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}
