// SPDX-License-Identifier: GPL-2.0
/*
 * rnic receive-side scaling: receive work queues (ib_wq), their
 * indirection tables, and the raw packet QPs that spread the frames their
 * flow rules catch over a table's WQs.  The device has no WQ object: a WQ
 * is a raw packet QP of its own that only ever receives, so its receive
 * ring, completions and state machine are a QP's.
 */
#include <rdma/uverbs_ioctl.h>

#include "rnic.h"
#include "rnic_cmdq.h"

#define RNIC_RSS_HASH_TOEPLITZ	BIT(0)	/* IB_UVERBS_RX_HASH_FUNC_TOEPLITZ */

static atomic_t rnic_ind_tbl_seq = ATOMIC_INIT(0);

static inline struct rnic_rwq *to_rrwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct rnic_rwq, ibwq);
}

/* Moves the WQ's device QP: RESET, or RESET -> INIT -> RTR for RDY. */
static int rnic_rwq_move(struct rnic_dev *dev, struct rnic_rwq *rwq,
			 enum ib_qp_state cur, enum ib_qp_state next)
{
	struct rnic_cmd_modify_qp cmd = {};
	int err;

	cmd.qpn = cpu_to_le32(rwq->qpn);
	if (next == IB_QPS_RTR && cur == IB_QPS_RESET) {
		cmd.attr_mask = cpu_to_le32(IB_QP_STATE | IB_QP_PORT);
		cmd.attr.qp_state = IB_QPS_INIT;
		cmd.attr.cur_qp_state = IB_QPS_RESET;
		cmd.attr.port_num = RNIC_PORT;
		err = rnic_cmd_modify_qp(dev, rwq->uctx, &cmd);
		if (err)
			return err;
		cur = IB_QPS_INIT;
	}
	cmd.attr_mask = cpu_to_le32(IB_QP_STATE);
	cmd.attr.qp_state = next;
	cmd.attr.cur_qp_state = cur;
	return rnic_cmd_modify_qp(dev, rwq->uctx, &cmd);
}

static enum ib_qp_state rnic_wq_to_qp_state(enum ib_wq_state s)
{
	switch (s) {
	case IB_WQS_RDY:
		return IB_QPS_RTR;
	case IB_WQS_ERR:
		return IB_QPS_ERR;
	default:
		return IB_QPS_RESET;
	}
}

struct ib_wq *rnic_create_wq(struct ib_pd *ibpd,
			     struct ib_wq_init_attr *attr,
			     struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibpd->device);
	const struct rnic_device_attr *h = &dev->hw;
	struct rnic_pbl_buf rq_pbuf = {};
	struct rnic_cmd_create_qp cmd = {};
	struct rnic_ucreate_wq_resp uresp = {};
	struct rnic_ucreate_wq ucmd = {};
	u32 max_wr = min_t(u32, le32_to_cpu(h->max_qp_wr),
			   1u << RNIC_WQ_MAX_LOG_SIZE);
	u32 max_sge = min_t(u32, le32_to_cpu(h->max_sge), RNIC_RQ_MAX_SGE);
	struct rnic_rwq *rwq;
	int err;

	if (!udata || !(le32_to_cpu(h->cap_flags) & RNIC_DEV_CAP_RAW_PACKET))
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->wq_type != IB_WQT_RQ || attr->create_flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->max_wr || attr->max_wr > max_wr || attr->max_sge > max_sge)
		return ERR_PTR(-EINVAL);
	if (udata->inlen < sizeof(ucmd))
		return ERR_PTR(-EINVAL);
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return ERR_PTR(err);
	if (ucmd.rq_log_size > RNIC_WQ_MAX_LOG_SIZE ||
	    (1u << ucmd.rq_log_size) > max_wr ||
	    (1u << ucmd.rq_log_size) < attr->max_wr)
		return ERR_PTR(-EINVAL);

	rwq = kzalloc(sizeof(*rwq), GFP_KERNEL);
	if (!rwq)
		return ERR_PTR(-ENOMEM);
	rwq->uctx = rnic_udata_uctx(udata);
	rwq->rq.log_size = ucmd.rq_log_size;
	rwq->rq.max_sge = max_t(u32, attr->max_sge, 1);
	err = rnic_wq_kernel(dev, &rwq->sq, RNIC_SQ_WQE_SIZE, &cmd.sq);
	if (err)
		goto err_free;
	err = rnic_wq_user(dev, &rwq->rq, ucmd.rq_addr, ucmd.rq_size,
			   RNIC_RQ_WQE_SIZE, &cmd.rq, &rq_pbuf);
	if (err)
		goto err_rings;

	cmd.qp_type = RNIC_QPT_RAW_PACKET;
	cmd.rq_log_size = rwq->rq.log_size;
	cmd.max_send_sge = 1;
	cmd.max_recv_sge = rwq->rq.max_sge;
	cmd.pdn = cpu_to_le32(to_rpd(ibpd)->pdn);
	cmd.send_cqn = cpu_to_le32(to_rcq(attr->cq)->cqn);
	cmd.recv_cqn = cmd.send_cqn;
	err = rnic_cmd_create_qp(dev, rwq->uctx, &cmd, &rwq->qpn);
	rnic_free_pbl(dev, &rq_pbuf);
	if (err)
		goto err_rings;

	uresp.wqn = rwq->qpn;
	err = ib_copy_to_udata(udata, &uresp, min(udata->outlen,
						  sizeof(uresp)));
	if (err)
		goto err_destroy;
	rwq->ibwq.wq_num = rwq->qpn;
	attr->max_wr = 1u << rwq->rq.log_size;
	attr->max_sge = rwq->rq.max_sge;
	return &rwq->ibwq;

err_destroy:
	rnic_cmd_destroy_qp(dev, rwq->uctx, rwq->qpn);
err_rings:
	rnic_wq_free(dev, &rwq->rq);
	rnic_wq_free(dev, &rwq->sq);
err_free:
	kfree(rwq);
	return ERR_PTR(err);
}

int rnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr,
		   u32 attr_mask, struct ib_udata *udata)
{
	struct rnic_rwq *rwq = to_rrwq(ibwq);
	enum ib_wq_state cur, next;
	int err;

	if (attr_mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE))
		return -EOPNOTSUPP;
	cur = (attr_mask & IB_WQ_CUR_STATE) ? attr->curr_wq_state : ibwq->state;
	next = (attr_mask & IB_WQ_STATE) ? attr->wq_state : cur;
	if (cur > IB_WQS_ERR || next > IB_WQS_ERR)
		return -EINVAL;
	if (cur == next)
		return 0;
	/* Out of ERR only through RESET, as for a QP. */
	if (cur == IB_WQS_ERR && next == IB_WQS_RDY)
		return -EINVAL;
	err = rnic_rwq_move(to_rdev(ibwq->device), rwq,
			    rnic_wq_to_qp_state(cur), rnic_wq_to_qp_state(next));
	if (err)
		return err;
	ibwq->state = next;
	return 0;
}

int rnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibwq->device);
	struct rnic_rwq *rwq = to_rrwq(ibwq);

	rnic_destroy_device_qp(dev, rwq->uctx, rwq->qpn);
	rnic_wq_free(dev, &rwq->rq);
	rnic_wq_free(dev, &rwq->sq);
	kfree(rwq);
	return 0;
}

int rnic_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			      struct ib_rwq_ind_table_init_attr *attr,
			      struct ib_udata *udata)
{
	if (attr->log_ind_tbl_size > RNIC_RSS_MAX_LOG_TBL)
		return -EINVAL;
	/* The table lives in the RSS QPs made over it (SET_RSS). */
	ibtbl->ind_tbl_num = atomic_inc_return(&rnic_ind_tbl_seq);
	return 0;
}

int rnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl)
{
	return 0;
}

int rnic_create_rss_qp(struct rnic_qp *qp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(qp->ibqp.device);
	struct ib_rwq_ind_table *tbl = init->rwq_ind_tbl;
	struct rnic_cmd_create_qp cmd = {};
	struct rnic_cmd_set_rss rss = {};
	struct rnic_ucreate_qp ucmd = {};
	u32 i, n = 1u << tbl->log_ind_tbl_size;
	int err;

	if (!udata || qp->type != RNIC_QPT_RAW_PACKET)
		return -EOPNOTSUPP;
	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.rx_hash_function != RNIC_RSS_HASH_TOEPLITZ ||
	    ucmd.rx_hash_fields_mask & ~(u64)RNIC_RSS_FIELDS)
		return -EOPNOTSUPP;
	/* It has no SQ the provider could lead with a doorbell record. */
	if (ucmd.rx_key_len != RNIC_RSS_KEY_LEN || ucmd.sq_addr ||
	    ucmd.rq_addr || ucmd.flags)
		return -EINVAL;

	qp->uctx = rnic_udata_uctx(udata);
	qp->user = true;
	qp->sq.max_sge = 1;
	qp->rq.max_sge = 1;
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	/* One-page rings nothing is ever posted to. */
	err = rnic_wq_kernel(dev, &qp->sq, RNIC_SQ_WQE_SIZE, &cmd.sq);
	if (!err)
		err = rnic_wq_kernel(dev, &qp->rq, RNIC_RQ_WQE_SIZE, &cmd.rq);
	if (err)
		goto err_rings;
	cmd.qp_type = RNIC_QPT_RAW_PACKET;
	cmd.max_send_sge = 1;
	cmd.max_recv_sge = 1;
	cmd.pdn = cpu_to_le32(to_rpd(qp->ibqp.pd)->pdn);
	/* It never completes anything; a CQ of its table stands in. */
	cmd.send_cqn = cpu_to_le32(to_rcq(tbl->ind_tbl[0]->cq)->cqn);
	cmd.recv_cqn = cmd.send_cqn;
	err = rnic_cmd_create_qp(dev, qp->uctx, &cmd, &qp->qpn);
	if (err)
		goto err_rings;

	rss.qpn = cpu_to_le32(qp->qpn);
	rss.log_tbl_size = tbl->log_ind_tbl_size;
	rss.key_len = ucmd.rx_key_len;
	rss.fields = cpu_to_le16(ucmd.rx_hash_fields_mask);
	memcpy(rss.key, ucmd.rx_hash_key, sizeof(rss.key));
	for (i = 0; i < n; i++)
		rss.wq_qpn[i] = cpu_to_le32(to_rrwq(tbl->ind_tbl[i])->qpn);
	err = rnic_cmd_set_rss(dev, qp->uctx, &rss);
	if (err)
		goto err_destroy;

	qp->ibqp.qp_num = qp->qpn;
	qp->state = IB_QPS_RESET;
	memset(&qp->cap, 0, sizeof(qp->cap));
	err = rnic_qp_publish(dev, qp, udata);
	if (err)
		goto err_destroy;
	return 0;

err_destroy:
	rnic_cmd_destroy_qp(dev, qp->uctx, qp->qpn);
err_rings:
	rnic_wq_free(dev, &qp->sq);
	rnic_wq_free(dev, &qp->rq);
	return err;
}
