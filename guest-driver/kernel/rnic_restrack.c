// SPDX-License-Identifier: GPL-2.0
/*
 * rnic restrack: the driver attributes `rdma resource show qp|cq|mr -dd`
 * prints.
 *
 * ib_core reports the generic attributes itself (QPN, type, state, PD,
 * owner, and the keys to CAP_NET_ADMIN only, which is why they are not
 * repeated here).  These add what only the driver knows: the device
 * context, the device's CQ number, the ring sizes and, for kernel queues,
 * the ring indices the driver tracks, which tell a stuck queue from an
 * idle one.  User queues' indices live in the provider.
 *
 * ib_core holds a reference on the object but does not keep destroy_qp or
 * destroy_cq from running meanwhile, nor rereg_user_mr: only fields of the
 * object itself are read, never memory it points to.
 */
#include <net/netlink.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "rnic.h"

/* pi moves under the queue's lock; the CQ poller moves ci with WRITE_ONCE. */
static void rnic_res_wq_idx(struct rnic_wq *wq, spinlock_t *lock, u32 *pi,
			    u32 *ci)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	*pi = wq->pi;
	*ci = READ_ONCE(wq->ci);
	spin_unlock_irqrestore(lock, flags);
}

/* Closes the driver table, or drops it when the message ran out of room. */
static int rnic_res_end(struct sk_buff *msg, struct nlattr *table, int err)
{
	if (err) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

static int rnic_res_put_qp(struct sk_buff *msg, struct rnic_qp *qp)
{
	u32 pi, ci;

	if (rdma_nl_put_driver_u32(msg, "uctx", qp->uctx) ||
	    rdma_nl_put_driver_u32(msg, "sq_log_size", qp->sq.log_size) ||
	    rdma_nl_put_driver_u32(msg, "sq_max_sge", qp->sq.max_sge) ||
	    rdma_nl_put_driver_u32(msg, "max_inline", qp->max_inline) ||
	    rdma_nl_put_driver_u32(msg, "srq", qp->has_srq))
		return -EMSGSIZE;
	/* With an SRQ the QP has no receive queue of its own. */
	if (!qp->has_srq &&
	    (rdma_nl_put_driver_u32(msg, "rq_log_size", qp->rq.log_size) ||
	     rdma_nl_put_driver_u32(msg, "rq_max_sge", qp->rq.max_sge)))
		return -EMSGSIZE;
	if (rnic_qpt_is_dgram(qp->type) &&
	    rdma_nl_put_driver_u32_hex(msg, "qkey", READ_ONCE(qp->qkey)))
		return -EMSGSIZE;
	if (qp->user)
		return 0;

	rnic_res_wq_idx(&qp->sq, &qp->sq_lock, &pi, &ci);
	if (rdma_nl_put_driver_u32(msg, "sq_pi", pi) ||
	    rdma_nl_put_driver_u32(msg, "sq_ci", ci))
		return -EMSGSIZE;
	if (qp->has_srq)
		return 0;
	rnic_res_wq_idx(&qp->rq, &qp->rq_lock, &pi, &ci);
	if (rdma_nl_put_driver_u32(msg, "rq_pi", pi) ||
	    rdma_nl_put_driver_u32(msg, "rq_ci", ci))
		return -EMSGSIZE;
	return 0;
}

int rnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	return rnic_res_end(msg, table, rnic_res_put_qp(msg, to_rqp(ibqp)));
}

static int rnic_res_put_cq(struct sk_buff *msg, struct rnic_cq *cq)
{
	unsigned long flags;
	u32 ci;

	/* ib_core's cqn is its own object ID, not the device's number. */
	if (rdma_nl_put_driver_u32(msg, "hw_cqn", cq->cqn) ||
	    rdma_nl_put_driver_u32(msg, "uctx", cq->uctx) ||
	    rdma_nl_put_driver_u32(msg, "log_size", cq->log_size) ||
	    rdma_nl_put_driver_u32(msg, "eqn", cq->eqn))
		return -EMSGSIZE;
	if (!rdma_is_kernel_res(&cq->ibcq.res))
		return 0;

	spin_lock_irqsave(&cq->lock, flags);
	ci = cq->ci;
	spin_unlock_irqrestore(&cq->lock, flags);
	return rdma_nl_put_driver_u32(msg, "ci", ci) ? -EMSGSIZE : 0;
}

int rnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	return rnic_res_end(msg, table, rnic_res_put_cq(msg, to_rcq(ibcq)));
}

static int rnic_res_put_mr(struct sk_buff *msg, struct rnic_mr *mr)
{
	/*
	 * pages (fast-reg) and umem (user) are set at creation and never
	 * cleared while the MR is listed; rereg only swaps umem for another.
	 */
	const char *type = mr->pages ? "fast_reg" : mr->umem ? "user" : "dma";

	if (rdma_nl_put_driver_u32(msg, "uctx", mr->uctx) ||
	    rdma_nl_put_driver_string(msg, "mr_type", type))
		return -EMSGSIZE;
	/* Only user MRs keep theirs: fast-reg ones take it from each REG_MR WR. */
	if (mr->umem &&
	    rdma_nl_put_driver_u32_hex(msg, "access", READ_ONCE(mr->access)))
		return -EMSGSIZE;
	if (mr->pages &&
	    (rdma_nl_put_driver_u32(msg, "max_pages", mr->max_pages) ||
	     rdma_nl_put_driver_u32(msg, "npages", READ_ONCE(mr->npages)) ||
	     rdma_nl_put_driver_u32(msg, "page_size",
				    READ_ONCE(mr->ibmr.page_size))))
		return -EMSGSIZE;
	return 0;
}

int rnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	return rnic_res_end(msg, table, rnic_res_put_mr(msg, to_rmr(ibmr)));
}
