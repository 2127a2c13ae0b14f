// SPDX-License-Identifier: GPL-2.0
/*
 * rnic QPs and SRQs, and the kernel data path: WQE building for kernel
 * QPs, CQ polling and arming for kernel CQs.  User QPs and CQs are driven
 * by the rdma-core provider; the kernel only creates them.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "rnic.h"

#define RNIC_RING_PAGE		4096
#define RNIC_SQ_DBREC_PAGES	(RNIC_SQ_DBREC_PAGE_SIZE / RNIC_RING_PAGE)
#define RNIC_UD_SGE_OFF		128
#define RNIC_UD_MAX_INLINE	(RNIC_SQ_WQE_SIZE - RNIC_UD_SGE_OFF)
/* MODIFY_QP mask bits this device understands (same values as IB_QP_*). */
#define RNIC_QP_ATTR_ALL	GENMASK(20, 0)

u16 rnic_udata_uctx(struct ib_udata *udata)
{
	struct rnic_ucontext *uc;

	if (!udata)
		return 0;
	uc = rdma_udata_to_drv_context(udata, struct rnic_ucontext, ibuc);
	return uc ? uc->uctx : 0;
}

static u32 rnic_ring_pages(u32 stride, u32 log_size)
{
	return DIV_ROUND_UP((u64)stride << log_size, RNIC_RING_PAGE);
}

void rnic_wq_free(struct rnic_dev *dev, struct rnic_wq *wq)
{
	kvfree(wq->wr_id);
	wq->wr_id = NULL;
	rnic_kring_free(dev, &wq->kring);
	if (wq->umem)
		ib_umem_release(wq->umem);
	wq->umem = NULL;
}

/* Pin the first @npages ring pages of a user buffer for the device. */
static int rnic_wq_pin(struct rnic_dev *dev, struct rnic_wq *wq, u64 addr,
		       u32 size, u32 npages, struct rnic_pbl *pbl,
		       struct rnic_pbl_buf *pbuf)
{
	int err;

	if (!PAGE_ALIGNED(addr) || size < (u64)npages * RNIC_RING_PAGE)
		return -EINVAL;
	wq->umem = rnic_umem_get(&dev->ibdev, addr, size,
				 IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(wq->umem)) {
		err = PTR_ERR(wq->umem);
		wq->umem = NULL;
		return err;
	}
	err = rnic_build_ring_pbl(dev, wq->umem, npages, pbl, pbuf);
	if (err) {
		ib_umem_release(wq->umem);
		wq->umem = NULL;
	}
	return err;
}

/* Pin a user ring of 1 << log_size entries of @stride bytes. */
int rnic_wq_user(struct rnic_dev *dev, struct rnic_wq *wq, u64 addr,
		 u32 size, u32 stride, struct rnic_pbl *pbl,
		 struct rnic_pbl_buf *pbuf)
{
	return rnic_wq_pin(dev, wq, addr, size,
			   rnic_ring_pages(stride, wq->log_size), pbl, pbuf);
}

/* The wr_id shadow of a kernel work queue (see struct rnic_wq). */
static int rnic_wq_shadow_alloc(struct rnic_wq *wq)
{
	wq->wr_id = kvcalloc(1u << wq->log_size, sizeof(*wq->wr_id),
			     GFP_KERNEL);
	return wq->wr_id ? 0 : -ENOMEM;
}

int rnic_wq_kernel(struct rnic_dev *dev, struct rnic_wq *wq, u32 stride,
		   struct rnic_pbl *pbl)
{
	int err;

	err = rnic_wq_shadow_alloc(wq);
	if (err)
		return err;
	err = rnic_kring_alloc(dev, &wq->kring, (size_t)stride << wq->log_size);
	if (err) {
		kvfree(wq->wr_id);
		wq->wr_id = NULL;
		return err;
	}
	rnic_kring_pbl(&wq->kring, pbl);
	return 0;
}

/* ---- address vectors ---- */

int rnic_ah_to_av(struct rnic_dev *dev, const struct rdma_ah_attr *ah,
		  struct rnic_av *av)
{
	const struct ib_global_route *grh;
	enum rdma_network_type nt;

	if (dev->ib)
		return rnic_ib_ah_to_av(ah, av);
	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	if (!grh->sgid_attr)
		return -EINVAL;
	nt = rdma_gid_attr_network_type(grh->sgid_attr);
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	memcpy(av->dmac, ah->roce.dmac, ETH_ALEN);
	av->sgid_index = grh->sgid_attr->index;
	av->hop_limit = grh->hop_limit;
	av->flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(ah);
	switch (nt) {
	case RDMA_NETWORK_ROCE_V1:
		av->net_type = RNIC_NET_ROCE_V1;
		break;
	case RDMA_NETWORK_IPV4:
		av->net_type = RNIC_NET_IPV4;
		break;
	case RDMA_NETWORK_IPV6:
		av->net_type = RNIC_NET_IPV6;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

void rnic_av_to_ah(struct rnic_dev *dev, const struct rnic_av *av,
		   struct rdma_ah_attr *ah)
{
	union ib_gid dgid;

	if (dev->ib) {
		rnic_ib_av_to_ah(av, ah);
		return;
	}
	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	rdma_ah_set_port_num(ah, RNIC_PORT);
	rdma_ah_set_sl(ah, av->sl);
	rdma_ah_set_grh(ah, &dgid, le32_to_cpu(av->flow_label),
			av->sgid_index, av->hop_limit, av->traffic_class);
	memcpy(ah->roce.dmac, av->dmac, ETH_ALEN);
}

/* ---- QP creation and destruction ---- */

/*
 * The last step of a create: the provider learns the QPN, and event
 * handlers can find the QP.
 */
int rnic_qp_publish(struct rnic_dev *dev, struct rnic_qp *qp,
		    struct ib_udata *udata)
{
	if (udata) {
		struct rnic_ucreate_qp_resp uresp = {};
		int err;

		uresp.qpn = qp->qpn;
		uresp.max_inline = qp->max_inline;
		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err)
			return err;
	}
	return xa_insert_irq(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
}

/*
 * A kernel QP's SQ ring.  On a device with SQ doorbell records it starts
 * with the record's page, as a provider's does: ULPs post from many
 * CPUs at high rates, and each doorbell write stalls the posting CPU.
 */
static int rnic_ksq_alloc(struct rnic_dev *dev, struct rnic_qp *qp,
			  struct rnic_pbl *pbl)
{
	size_t lead;
	int err;

	qp->sq_dbrec = le32_to_cpu(dev->hw.cap_flags) & RNIC_DEV_CAP_SQ_DBREC;
	lead = qp->sq_dbrec ? RNIC_SQ_DBREC_PAGE_SIZE : 0;
	err = rnic_wq_shadow_alloc(&qp->sq);
	if (err)
		return err;
	err = rnic_kring_alloc(dev, &qp->sq.kring,
			       lead + ((size_t)RNIC_SQ_WQE_SIZE << qp->sq.log_size));
	if (err) {
		kvfree(qp->sq.wr_id);
		qp->sq.wr_id = NULL;
		return err;
	}
	rnic_kring_pbl(&qp->sq.kring, pbl);
	return 0;
}

/* Slot @idx of a kernel QP's SQ, past the doorbell record if it has one. */
static void *rnic_ksq_slot(struct rnic_qp *qp, u32 idx)
{
	size_t lead = qp->sq_dbrec ? RNIC_SQ_DBREC_PAGE_SIZE : 0;

	idx &= (1u << qp->sq.log_size) - 1;
	return qp->sq.kring.buf + lead + (size_t)idx * RNIC_SQ_WQE_SIZE;
}

/*
 * Hands a kernel SQ's WQEs up to sq.pi to the device; the caller holds
 * sq_lock.  With a doorbell record the doorbell is written only while the
 * device says it is idle (struct rnic_sq_dbrec).
 */
static void rnic_ksq_ring(struct rnic_dev *dev, struct rnic_qp *qp)
{
	struct rnic_sq_dbrec *rec = qp->sq.kring.buf;

	if (qp->sq_dbrec) {
		/* The WQEs before the index that hands them over. */
		dma_wmb();
		WRITE_ONCE(rec->pi, cpu_to_le32(qp->sq.pi));
		/*
		 * Store-load: pi must be visible before flags is read.  The
		 * device sets RING and then reads pi again; without a full
		 * barrier each side could miss the other's store and the
		 * WQEs would wait for the next post.
		 */
		mb();
		if (!(le32_to_cpu(READ_ONCE(rec->flags)) & RNIC_SQ_DBREC_RING))
			return;
	}
	rnic_ring_db(dev, RNIC_DB_SQ, qp->qpn, 0, qp->sq.pi);
}

/*
 * Pins the rings a provider allocated for a user QP.  An SQ with a
 * doorbell record starts with the record's page, which the device skips
 * for WQEs.  The caller frees the page lists once the command is done and
 * owns the rings.
 */
static int rnic_qp_user_rings(struct rnic_dev *dev, struct rnic_qp *qp,
			      const struct rnic_ucreate_qp *ucmd,
			      struct rnic_cmd_create_qp *cmd,
			      struct rnic_pbl_buf *sq_pbuf,
			      struct rnic_pbl_buf *rq_pbuf)
{
	u32 sq_pages = rnic_ring_pages(RNIC_SQ_WQE_SIZE, qp->sq.log_size);
	int err;

	if (ucmd->flags & ~RNIC_UCREATE_QP_SQ_DBREC)
		return -EINVAL;
	qp->sq_dbrec = ucmd->flags & RNIC_UCREATE_QP_SQ_DBREC;
	if (qp->sq_dbrec) {
		/* alloc_ucontext offers the record only on such devices. */
		if (!(le32_to_cpu(dev->hw.cap_flags) & RNIC_DEV_CAP_SQ_DBREC))
			return -EOPNOTSUPP;
		sq_pages += RNIC_SQ_DBREC_PAGES;
	}
	err = rnic_wq_pin(dev, &qp->sq, ucmd->sq_addr, ucmd->sq_size,
			  sq_pages, &cmd->sq, sq_pbuf);
	if (err || qp->has_srq)
		return err;
	return rnic_wq_user(dev, &qp->rq, ucmd->rq_addr, ucmd->rq_size,
			    RNIC_RQ_WQE_SIZE, &cmd->rq, rq_pbuf);
}

int rnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_pd *pd = to_rpd(ibqp->pd);
	const struct rnic_device_attr *h = &dev->hw;
	struct rnic_pbl_buf sq_pbuf = {}, rq_pbuf = {};
	struct rnic_cmd_create_qp cmd = {};
	struct ib_qp_cap *cap = &init->cap;
	u32 max_wr, send_sge_cap, recv_sge_cap, inline_cap;
	bool ud;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
		qp->type = RNIC_QPT_RC;
		break;
	case IB_QPT_UC:
		qp->type = RNIC_QPT_UC;
		break;
	case IB_QPT_UD:
		qp->type = RNIC_QPT_UD;
		break;
	case IB_QPT_GSI:
		if (udata)
			return -EINVAL;
		qp->type = RNIC_QPT_GSI;
		break;
	case IB_QPT_SMI:
		/* QP0 exists on an IB port only, for the MAD layer. */
		if (udata || !dev->ib)
			return -EOPNOTSUPP;
		qp->type = RNIC_QPT_SMI;
		break;
	case IB_QPT_RAW_PACKET:
		/* Only verbs programs build whole frames. */
		if (!udata || !(le32_to_cpu(h->cap_flags) &
				RNIC_DEV_CAP_RAW_PACKET))
			return -EOPNOTSUPP;
		qp->type = RNIC_QPT_RAW_PACKET;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->rwq_ind_tbl)
		return rnic_create_rss_qp(qp, init, udata);
	ud = rnic_qpt_is_dgram(qp->type);

	max_wr = min_t(u32, le32_to_cpu(h->max_qp_wr),
		       1u << RNIC_WQ_MAX_LOG_SIZE);
	send_sge_cap = min_t(u32, le32_to_cpu(h->max_sge),
			     ud ? RNIC_UD_MAX_SGE : RNIC_SQ_MAX_SGE);
	recv_sge_cap = min_t(u32, le32_to_cpu(h->max_sge), RNIC_RQ_MAX_SGE);
	inline_cap = min_t(u32, le32_to_cpu(h->max_inline),
			   ud ? RNIC_UD_MAX_INLINE : RNIC_MAX_INLINE);
	if (cap->max_send_wr > max_wr || cap->max_recv_wr > max_wr ||
	    cap->max_send_sge > send_sge_cap ||
	    cap->max_recv_sge > recv_sge_cap ||
	    cap->max_inline_data > inline_cap)
		return -EINVAL;

	qp->uctx = rnic_udata_uctx(udata);
	qp->user = !!udata;
	qp->has_srq = !!init->srq;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_inline = cap->max_inline_data;
	qp->sq.max_sge = max_t(u32, cap->max_send_sge, 1);
	qp->rq.max_sge = max_t(u32, cap->max_recv_sge, 1);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);

	if (udata) {
		struct rnic_ucreate_qp ucmd = {};

		if (udata->inlen < sizeof(ucmd))
			return -EINVAL;
		err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
		if (err)
			return err;
		qp->sq.log_size = ucmd.sq_log_size;
		qp->rq.log_size = qp->has_srq ? 0 : ucmd.rq_log_size;
		if (qp->sq.log_size > RNIC_WQ_MAX_LOG_SIZE ||
		    qp->rq.log_size > RNIC_WQ_MAX_LOG_SIZE ||
		    (1u << qp->sq.log_size) > max_wr ||
		    (1u << qp->rq.log_size) > max_wr ||
		    (1u << qp->sq.log_size) < cap->max_send_wr ||
		    (!qp->has_srq && (1u << qp->rq.log_size) < cap->max_recv_wr))
			return -EINVAL;
		err = rnic_qp_user_rings(dev, qp, &ucmd, &cmd, &sq_pbuf,
					 &rq_pbuf);
		if (err)
			goto err_rings;
	} else {
		qp->sq.log_size = order_base_2(max_t(u32, cap->max_send_wr, 1));
		qp->rq.log_size = qp->has_srq ? 0 :
			order_base_2(max_t(u32, cap->max_recv_wr, 1));
		err = rnic_ksq_alloc(dev, qp, &cmd.sq);
		if (err)
			return err;
		if (!qp->has_srq) {
			err = rnic_wq_kernel(dev, &qp->rq, RNIC_RQ_WQE_SIZE,
					     &cmd.rq);
			if (err)
				goto err_rings;
		}
	}

	cmd.qp_type = qp->type;
	cmd.sq_log_size = qp->sq.log_size;
	cmd.rq_log_size = qp->rq.log_size;
	cmd.max_send_sge = qp->sq.max_sge;
	cmd.max_recv_sge = qp->has_srq ? 0 : qp->rq.max_sge;
	cmd.max_inline = cpu_to_le16(qp->max_inline);
	cmd.flags = cpu_to_le32((qp->sig_all ? RNIC_QP_FLAG_SIG_ALL : 0) |
				(qp->has_srq ? RNIC_QP_FLAG_HAS_SRQ : 0) |
				(qp->sq_dbrec ? RNIC_QP_FLAG_SQ_DBREC : 0));
	cmd.pdn = cpu_to_le32(pd->pdn);
	cmd.send_cqn = cpu_to_le32(to_rcq(init->send_cq)->cqn);
	cmd.recv_cqn = cpu_to_le32(to_rcq(init->recv_cq)->cqn);
	if (qp->has_srq)
		cmd.srqn = cpu_to_le32(to_rsrq(init->srq)->srqn);
	err = rnic_cmd_create_qp(dev, qp->uctx, &cmd, &qp->qpn);
	rnic_free_pbl(dev, &sq_pbuf);
	rnic_free_pbl(dev, &rq_pbuf);
	if (err)
		goto err_rings;
	ibqp->qp_num = qp->qpn;
	qp->state = IB_QPS_RESET;

	cap->max_send_wr = 1u << qp->sq.log_size;
	cap->max_recv_wr = qp->has_srq ? 0 : 1u << qp->rq.log_size;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = qp->has_srq ? 0 : qp->rq.max_sge;
	cap->max_inline_data = qp->max_inline;
	qp->cap = *cap;

	err = rnic_qp_publish(dev, qp, udata);
	if (err)
		goto err_destroy;
	return 0;

err_destroy:
	rnic_cmd_destroy_qp(dev, qp->uctx, qp->qpn);
err_rings:
	rnic_free_pbl(dev, &sq_pbuf);
	rnic_free_pbl(dev, &rq_pbuf);
	rnic_wq_free(dev, &qp->sq);
	rnic_wq_free(dev, &qp->rq);
	return err;
}

/*
 * A QP in ERR still flushing its WQEs is answered BUSY: its users (a
 * verbs program whose device is going away, among others) wait for those
 * completions.  The flush takes a few device runs.
 */
void rnic_destroy_device_qp(struct rnic_dev *dev, u16 uctx, u32 qpn)
{
	int tries;

	for (tries = 0; tries < RNIC_DESTROY_QP_TRIES; tries++) {
		if (rnic_cmd_destroy_qp(dev, uctx, qpn) != -EBUSY)
			break;
		usleep_range(1000, 2000);
	}
}

int rnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);

	rnic_destroy_device_qp(dev, qp->uctx, qp->qpn);
	/* After this no event handler can still see the QP. */
	xa_erase_irq(&dev->qp_xa, qp->qpn);
	rnic_qp_purge_cqes(qp);
	rnic_wq_free(dev, &qp->sq);
	rnic_wq_free(dev, &qp->rq);
	return 0;
}

/* ---- modify and query ---- */

int rnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_cmd_modify_qp cmd = {};
	struct rnic_qp_attr *a = &cmd.attr;
	enum ib_qp_state cur, next;
	int err;

	if (attr_mask & ~RNIC_QP_ATTR_ALL)
		return -EOPNOTSUPP;
	cur = (attr_mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (attr_mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask))
		return -EINVAL;
	if ((attr_mask & IB_QP_PORT) && attr->port_num != RNIC_PORT)
		return -EINVAL;
	if ((attr_mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((attr_mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > le32_to_cpu(dev->hw.max_qp_init_rd_atom))
		return -EINVAL;
	if ((attr_mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > le32_to_cpu(dev->hw.max_qp_rd_atom))
		return -EINVAL;
	if ((attr_mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;

	if (rnic_dev_dead(dev)) {
		/*
		 * The reset device holds no QP, which is as good as ERR:
		 * ib_drain_qp() and ULP teardown move QPs there and must
		 * succeed.  Their WQEs are flushed by the poller.
		 */
		if (next != IB_QPS_ERR && next != IB_QPS_RESET)
			return -EIO;
		qp->state = next;
		if (!qp->user)
			rnic_kick_qp_cqs(qp);
		/*
		 * What the device would say on this QP's way to ERR: it takes
		 * nothing more from its SRQ.  ib_drain_qp() waits for that.
		 */
		if (next == IB_QPS_ERR && qp->has_srq && ibqp->event_handler) {
			struct ib_event ev = {
				.device = ibqp->device,
				.event = IB_EVENT_QP_LAST_WQE_REACHED,
				.element.qp = ibqp,
			};

			ibqp->event_handler(&ev, ibqp->qp_context);
		}
		return 0;
	}

	cmd.qpn = cpu_to_le32(qp->qpn);
	cmd.attr_mask = cpu_to_le32(attr_mask & RNIC_QP_ATTR_ALL);
	a->qp_state = next;
	a->cur_qp_state = cur;
	if (attr_mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (attr_mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (attr_mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (attr_mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (attr_mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (attr_mask & IB_QP_PKEY_INDEX)
		a->pkey_index = cpu_to_le16(attr->pkey_index);
	if (attr_mask & IB_QP_QKEY)
		a->qkey = cpu_to_le32(attr->qkey);
	if (attr_mask & IB_QP_DEST_QPN)
		a->dest_qpn = cpu_to_le32(attr->dest_qp_num);
	if (attr_mask & IB_QP_RQ_PSN)
		a->rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	if (attr_mask & IB_QP_SQ_PSN)
		a->sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	if (attr_mask & IB_QP_ACCESS_FLAGS)
		a->access_flags = cpu_to_le32(attr->qp_access_flags &
					      (RNIC_ACCESS_LOCAL_WRITE |
					       RNIC_ACCESS_REMOTE_WRITE |
					       RNIC_ACCESS_REMOTE_READ |
					       RNIC_ACCESS_REMOTE_ATOMIC |
					       RNIC_ACCESS_MW_BIND));
	if (attr_mask & IB_QP_AV) {
		err = rnic_ah_to_av(dev, &attr->ah_attr, &a->av);
		if (err)
			return err;
	}

	err = rnic_cmd_modify_qp(dev, qp->uctx, &cmd);
	if (err)
		return err;
	if (attr_mask & IB_QP_QKEY)
		WRITE_ONCE(qp->qkey, attr->qkey);
	qp->state = next;
	if (next == IB_QPS_RESET && !qp->user) {
		rnic_qp_purge_cqes(qp);
		/* The device cleared its ring indices; so do we. */
		spin_lock_irq(&qp->sq_lock);
		qp->sq.pi = 0;
		WRITE_ONCE(qp->sq.ci, 0);
		spin_unlock_irq(&qp->sq_lock);
		spin_lock_irq(&qp->rq_lock);
		qp->rq.pi = 0;
		WRITE_ONCE(qp->rq.ci, 0);
		spin_unlock_irq(&qp->rq_lock);
	}
	return 0;
}

int rnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_qp_attr *a;
	int err;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	err = rnic_cmd_query_qp(dev, qp->uctx, qp->qpn, a);
	if (err)
		goto out;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = min_t(u8, a->qp_state, IB_QPS_ERR);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = clamp_t(u8, a->path_mtu, IB_MTU_256, IB_MTU_4096);
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(a->qkey);
	attr->rq_psn = le32_to_cpu(a->rq_psn);
	attr->sq_psn = le32_to_cpu(a->sq_psn);
	attr->dest_qp_num = le32_to_cpu(a->dest_qpn);
	attr->qp_access_flags = le32_to_cpu(a->access_flags);
	attr->pkey_index = le16_to_cpu(a->pkey_index);
	attr->en_sqd_async_notify = a->en_sqd_async_notify;
	attr->sq_draining = a->sq_draining;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = RNIC_PORT;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	if (qp->type == RNIC_QPT_RC || qp->type == RNIC_QPT_UC)
		rnic_av_to_ah(dev, &a->av, &attr->ah_attr);
	attr->cap = qp->cap;

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	qp->state = attr->qp_state;
out:
	kfree(a);
	return err;
}

/* ---- kernel send path ---- */

static int rnic_wr_opcode(const struct ib_send_wr *wr, bool ud, u8 *op)
{
	switch (wr->opcode) {
	case IB_WR_SEND:
		*op = RNIC_WR_SEND;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		*op = RNIC_WR_SEND_IMM;
		return 0;
	default:
		break;
	}
	if (ud)
		return -EINVAL;
	switch (wr->opcode) {
	case IB_WR_SEND_WITH_INV:
		*op = RNIC_WR_SEND_INV;
		return 0;
	case IB_WR_RDMA_WRITE:
		*op = RNIC_WR_RDMA_WRITE;
		return 0;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*op = RNIC_WR_RDMA_WRITE_IMM;
		return 0;
	case IB_WR_RDMA_READ:
		*op = RNIC_WR_RDMA_READ;
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*op = RNIC_WR_ATOMIC_CMP_SWP;
		return 0;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*op = RNIC_WR_ATOMIC_FETCH_ADD;
		return 0;
	case IB_WR_LOCAL_INV:
		*op = RNIC_WR_LOCAL_INV;
		return 0;
	case IB_WR_REG_MR:
		*op = RNIC_WR_REG_MR;
		return 0;
	default:
		return -EINVAL;
	}
}

static int rnic_build_send_wqe(struct rnic_qp *qp, const struct ib_send_wr *wr,
			       void *slot)
{
	struct rnic_send_wqe *w = slot;
	bool ud = rnic_qpt_is_dgram(qp->type);
	u32 data_off = ud ? RNIC_UD_SGE_OFF : sizeof(*w);
	u32 max_sge = ud ? RNIC_UD_MAX_SGE : RNIC_SQ_MAX_SGE;
	u8 op;
	int i, err;

	err = rnic_wr_opcode(wr, ud, &op);
	if (err)
		return err;

	memset(slot, 0, RNIC_SQ_WQE_SIZE);
	w->wr_id = cpu_to_le64(wr->wr_id);
	w->opcode = op;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		w->flags |= RNIC_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		w->flags |= RNIC_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		w->flags |= RNIC_WQE_FENCE;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		/* ImmDt stays in wire byte order. */
		w->imm_inv = (__force __le32)wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		w->imm_inv = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		w->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		w->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		w->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		w->compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		w->swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case IB_WR_REG_MR: {
		struct rnic_mr *mr = to_rmr(reg_wr(wr)->mr);

		w->remote_addr = cpu_to_le64(mr->ibmr.iova);
		w->rkey = cpu_to_le32(reg_wr(wr)->key);
		w->imm_inv = cpu_to_le32(reg_wr(wr)->access & 0x1f);
		w->compare_add = cpu_to_le64(mr->pages_dma);
		w->inline_len = cpu_to_le32(mr->npages);
		w->swap = cpu_to_le64(mr->ibmr.length);
		w->rsvd_11 = ilog2(mr->ibmr.page_size);
		return 0;
	}
	case IB_WR_LOCAL_INV:
		return 0;
	default:
		break;
	}

	if (ud) {
		struct rnic_av *av = slot + sizeof(*w);
		u32 qkey = ud_wr(wr)->remote_qkey;

		/* A qkey with the top bit set asks for the QP's own qkey. */
		if (qkey & IB_QP_SET_QKEY)
			qkey = qp->type == RNIC_QPT_GSI ? IB_QP1_QKEY :
			       qp->type == RNIC_QPT_SMI ? 0 : qp->qkey;
		*av = to_rah(ud_wr(wr)->ah)->av;
		w->ud_qpn = cpu_to_le32(ud_wr(wr)->remote_qpn);
		w->ud_qkey = cpu_to_le32(qkey);
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		u32 len = 0;

		for (i = 0; i < wr->num_sge; i++) {
			u32 l = wr->sg_list[i].length;

			if (len + l > qp->max_inline ||
			    data_off + len + l > RNIC_SQ_WQE_SIZE)
				return -EINVAL;
			memcpy(slot + data_off + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr, l);
			len += l;
		}
		w->flags |= RNIC_WQE_INLINE;
		w->inline_len = cpu_to_le32(len);
		return 0;
	}

	if (wr->num_sge > qp->sq.max_sge || wr->num_sge > max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		struct rnic_sge *s = slot + data_off + i * sizeof(*s);

		s->addr = cpu_to_le64(wr->sg_list[i].addr);
		s->length = cpu_to_le32(wr->sg_list[i].length);
		s->lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	w->num_sge = wr->num_sge;
	return 0;
}

int rnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	u32 entries = 1u << qp->sq.log_size;
	unsigned long flags;
	bool posted = false;
	int err = 0;

	if (qp->user)
		return -EINVAL;
	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT ||
	    qp->state == IB_QPS_RTR) {
		err = -EINVAL;
		*bad_wr = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		void *slot;

		if (qp->sq.pi - READ_ONCE(qp->sq.ci) >= entries) {
			err = -ENOMEM;
			*bad_wr = wr;
			break;
		}
		slot = rnic_ksq_slot(qp, qp->sq.pi);
		err = rnic_build_send_wqe(qp, wr, slot);
		if (err) {
			*bad_wr = wr;
			break;
		}
		qp->sq.wr_id[qp->sq.pi & (entries - 1)] = wr->wr_id;
		qp->sq.pi++;
		posted = true;
	}
	if (posted && !rnic_dev_dead(dev))
		rnic_ksq_ring(dev, qp);
out:
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	/* A dead device completes nothing: the poller flushes them. */
	if (posted && rnic_dev_dead(dev))
		rnic_kick_qp_cqs(qp);
	return err;
}

/* ---- kernel receive path ---- */

static int rnic_build_recv_wqe(const struct ib_recv_wr *wr, u32 max_sge,
			       void *slot)
{
	struct rnic_recv_wqe *w = slot;
	int i;

	if (wr->num_sge > max_sge || wr->num_sge > RNIC_RQ_MAX_SGE)
		return -EINVAL;
	memset(slot, 0, RNIC_RQ_WQE_SIZE);
	w->wr_id = cpu_to_le64(wr->wr_id);
	w->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		struct rnic_sge *s = slot + sizeof(*w) + i * sizeof(*s);

		s->addr = cpu_to_le64(wr->sg_list[i].addr);
		s->length = cpu_to_le32(wr->sg_list[i].length);
		s->lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	return 0;
}

/* @busy: a kernel SRQ's outstanding slots (struct rnic_srq), or NULL. */
static int rnic_post_wq_recv(struct rnic_dev *dev, struct rnic_wq *wq,
			     spinlock_t *lock, u32 db, u32 qn,
			     unsigned long *busy,
			     const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad_wr)
{
	u32 entries = 1u << wq->log_size;
	unsigned long flags;
	bool posted = false;
	int err = 0;

	spin_lock_irqsave(lock, flags);
	for (; wr; wr = wr->next) {
		u32 idx = wq->pi & (entries - 1);
		void *slot;

		/*
		 * The device takes an SRQ's slots in ring order: one whose
		 * receive has not completed yet cannot be skipped, so the
		 * queue is full until it does.
		 */
		if (wq->pi - READ_ONCE(wq->ci) >= entries ||
		    (busy && test_bit(idx, busy))) {
			err = -ENOMEM;
			*bad_wr = wr;
			break;
		}
		slot = wq->kring.buf + idx * RNIC_RQ_WQE_SIZE;
		err = rnic_build_recv_wqe(wr, wq->max_sge, slot);
		if (err) {
			*bad_wr = wr;
			break;
		}
		if (wq->wr_id)
			wq->wr_id[idx] = wr->wr_id;
		if (busy)
			set_bit(idx, busy);
		wq->pi++;
		posted = true;
	}
	if (posted && !rnic_dev_dead(dev))
		rnic_ring_db(dev, db, qn, 0, wq->pi);
	spin_unlock_irqrestore(lock, flags);
	return err;
}

int rnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	int err;

	if (qp->user || qp->has_srq || qp->state == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	err = rnic_post_wq_recv(dev, &qp->rq, &qp->rq_lock, RNIC_DB_RQ,
				qp->qpn, NULL, wr, bad_wr);
	if (rnic_dev_dead(dev))
		rnic_kick_qp_cqs(qp);
	return err;
}

/* ---- kernel CQ polling ---- */

/* Frees @n SRQ slots whose receives completed (or were purged). */
static void rnic_srq_retire(struct rnic_srq *srq, u32 n)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	WRITE_ONCE(srq->wq.ci, srq->wq.ci + n);
	spin_unlock_irqrestore(&srq->lock, flags);
}

/* A purged receive of a kernel SRQ: its slot may be posted again. */
static void rnic_srq_unpost(struct rnic_srq *srq, u16 wqe_idx)
{
	if (srq->posted)
		clear_bit(wqe_idx & ((1u << srq->wq.log_size) - 1),
			  srq->posted);
}

/*
 * Drops kernel QP @qp's CQEs from @cq when it is destroyed or reset, so
 * that neither a later QP with the same QPN nor the same QP after RESET
 * takes them for its own.  The others keep their order: they slide
 * towards the newest entry and the consumer index moves past the freed
 * slots.  Purged receives of an SRQ QP still free their SRQ slots.  User
 * CQs are the provider's to clean.
 */
static void rnic_kcq_purge(struct rnic_cq *cq, struct rnic_qp *qp)
{
	u32 mask, end, src, removed = 0, srq_freed = 0;
	unsigned long flags;

	if (cq->umem || !cq->cqes)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	mask = (1u << cq->log_size) - 1;
	for (end = cq->ci; end - cq->ci <= mask; end++) {
		struct rnic_cqe *e = &cq->cqes[end & mask];
		u8 want = !((end >> cq->log_size) & 1);

		if ((READ_ONCE(e->owner) & RNIC_CQE_OWNER) != want)
			break;
	}
	/* Bodies only after the owner bits. */
	dma_rmb();
	for (src = end; src-- != cq->ci;) {
		struct rnic_cqe *e = &cq->cqes[src & mask];

		if (le32_to_cpu(e->qpn) == qp->qpn) {
			if (qp->has_srq && (e->opcode & RNIC_WC_RECV)) {
				rnic_srq_unpost(to_rsrq(qp->ibqp.srq),
						le16_to_cpu(e->wqe_idx));
				srq_freed++;
			}
			removed++;
		} else if (removed) {
			struct rnic_cqe *d = &cq->cqes[(src + removed) & mask];
			u8 owner = d->owner;

			*d = *e;
			d->owner = owner;
		}
	}
	if (removed) {
		cq->ci += removed;
		WRITE_ONCE(cq->dbrec->ci, cpu_to_le32(cq->ci));
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	if (srq_freed)
		rnic_srq_retire(to_rsrq(qp->ibqp.srq), srq_freed);
}

void rnic_qp_purge_cqes(struct rnic_qp *qp)
{
	struct rnic_cq *scq = to_rcq(qp->ibqp.send_cq);
	struct rnic_cq *rcq = to_rcq(qp->ibqp.recv_cq);

	if (qp->user)
		return;
	rnic_kcq_purge(scq, qp);
	if (rcq != scq)
		rnic_kcq_purge(rcq, qp);
}

static struct rnic_cqe *rnic_cq_next(struct rnic_cq *cq)
{
	struct rnic_cqe *cqe = &cq->cqes[cq->ci & ((1u << cq->log_size) - 1)];
	u8 want = !((cq->ci >> cq->log_size) & 1);

	if ((READ_ONCE(cqe->owner) & RNIC_CQE_OWNER) != want)
		return NULL;
	/* Read the body only after the owner bit. */
	dma_rmb();
	return cqe;
}

static enum ib_wc_status rnic_wc_status(u8 st)
{
	switch (st) {
	case RNIC_WC_SUCCESS:
	case RNIC_WC_LOC_LEN_ERR:
	case RNIC_WC_LOC_QP_OP_ERR:
	case RNIC_WC_LOC_PROT_ERR:
	case RNIC_WC_WR_FLUSH_ERR:
	case RNIC_WC_MW_BIND_ERR:
	case RNIC_WC_BAD_RESP_ERR:
	case RNIC_WC_LOC_ACCESS_ERR:
	case RNIC_WC_REM_INV_REQ_ERR:
	case RNIC_WC_REM_ACCESS_ERR:
	case RNIC_WC_REM_OP_ERR:
	case RNIC_WC_RETRY_EXC_ERR:
	case RNIC_WC_RNR_RETRY_EXC_ERR:
	case RNIC_WC_FATAL_ERR:
	case RNIC_WC_GENERAL_ERR:
		return (enum ib_wc_status)st;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

static bool rnic_wc_opcode(u8 op, enum ib_wc_opcode *out)
{
	switch (op) {
	case RNIC_WC_SEND:
	case RNIC_WC_RDMA_WRITE:
	case RNIC_WC_RDMA_READ:
	case RNIC_WC_COMP_SWAP:
	case RNIC_WC_FETCH_ADD:
	case RNIC_WC_BIND_MW:
	case RNIC_WC_LOCAL_INV:
	case RNIC_WC_REG_MR:
	case RNIC_WC_RECV:
	case RNIC_WC_RECV_RDMA_WITH_IMM:
		*out = (enum ib_wc_opcode)op;
		return true;
	default:
		return false;
	}
}

/*
 * A CQE names work the driver never posted: the device and the driver no
 * longer agree on the queue, every later CQE of it is suspect, and the
 * device may be writing where it should not.  Stop it and start again.
 */
static bool rnic_cqe_not_posted(struct rnic_dev *dev, struct rnic_qp *qp,
				const char *what, u32 idx, u32 ci, u32 pi)
{
	dev_warn_ratelimited(&dev->pdev->dev,
			     "QP %u: %s CQE names slot %u, not outstanding (ci %u pi %u); dropped\n",
			     qp->qpn, what, idx, ci, pi);
	rnic_cmdq_mark_dead(dev, "CQE for a work request not posted");
	return false;
}

/*
 * The wr_id of the WQE a CQE completes, from the driver's own shadow: the
 * CQE's index must name a slot that is outstanding (for an RQ, the next
 * one in ring order; for an SRQ, whose receives complete out of order, a
 * slot posted and not completed yet).
 */
static bool rnic_cqe_wr_id(struct rnic_dev *dev, struct rnic_qp *qp,
			   const struct rnic_cqe *c, bool recv, u64 *wr_id)
{
	struct rnic_wq *wq = recv ? &qp->rq : &qp->sq;
	u32 mask, ci, pi, idx;

	if (recv && qp->has_srq) {
		struct rnic_srq *srq = to_rsrq(qp->ibqp.srq);

		wq = &srq->wq;
		idx = le16_to_cpu(c->wqe_idx) & ((1u << wq->log_size) - 1);
		/*
		 * The slot stays the CQE's until its bit is cleared: read the
		 * wr_id first, as a post may reuse the slot right after.
		 */
		if (srq->posted && wq->wr_id)
			*wr_id = wq->wr_id[idx];
		if (!srq->posted || !wq->wr_id ||
		    !test_and_clear_bit(idx, srq->posted))
			return rnic_cqe_not_posted(dev, qp, "SRQ receive", idx,
						   READ_ONCE(wq->ci),
						   READ_ONCE(wq->pi));
		return true;
	}
	mask = (1u << wq->log_size) - 1;
	ci = READ_ONCE(wq->ci);
	pi = READ_ONCE(wq->pi);
	idx = le16_to_cpu(c->wqe_idx) & mask;
	if (!wq->wr_id || ((idx - ci) & mask) >= pi - ci ||
	    (recv && idx != (ci & mask)))
		return rnic_cqe_not_posted(dev, qp, recv ? "receive" : "send",
					   idx, ci, pi);
	*wr_id = wq->wr_id[idx];
	return true;
}

/* Fill @wc from a private copy of a CQE; false if the CQE is unusable. */
static bool rnic_cqe_to_wc(struct rnic_dev *dev, const struct rnic_cqe *c,
			   struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(c->qpn);
	enum ib_wc_opcode op;
	struct rnic_qp *qp;
	bool recv;

	qp = xa_load(&dev->qp_xa, qpn);
	if (!qp || qp->user) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CQE for unknown QP %u dropped\n", qpn);
		return false;
	}
	memset(wc, 0, sizeof(*wc));
	wc->status = rnic_wc_status(c->status);
	if (!rnic_wc_opcode(c->opcode, &op)) {
		op = (c->opcode & RNIC_WC_RECV) ? IB_WC_RECV : IB_WC_SEND;
		wc->status = IB_WC_GENERAL_ERR;
	}
	if (!rnic_cqe_wr_id(dev, qp, c, op & IB_WC_RECV, &wc->wr_id))
		return false;
	wc->opcode = op;
	wc->vendor_err = c->vendor_err;
	wc->byte_len = le32_to_cpu(c->byte_len);
	wc->qp = &qp->ibqp;
	wc->port_num = RNIC_PORT;
	recv = op & IB_WC_RECV;

	if (recv) {
		if (c->flags & RNIC_CQE_WITH_IMM) {
			wc->ex.imm_data = (__force __be32)c->imm_inv;
			wc->wc_flags |= IB_WC_WITH_IMM;
		} else if (c->flags & RNIC_CQE_WITH_INV) {
			wc->ex.invalidate_rkey = le32_to_cpu(c->imm_inv);
			wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		if (rnic_qpt_is_dgram(qp->type)) {
			wc->src_qp = le32_to_cpu(c->src_qp) & 0xffffff;
			if (c->flags & RNIC_CQE_GRH)
				wc->wc_flags |= IB_WC_GRH;
			if (c->net_type == RNIC_NET_IB) {
				/* The MAD layer answers to this SLID. */
				wc->slid = le16_to_cpu(c->slid);
				wc->sl = c->sl & 0xf;
				wc->dlid_path_bits = c->dlid_path_bits;
			} else if (c->net_type == RNIC_NET_IPV4) {
				wc->network_hdr_type = RDMA_NETWORK_IPV4;
				wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			} else if (c->net_type == RNIC_NET_IPV6) {
				wc->network_hdr_type = RDMA_NETWORK_IPV6;
				wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			} else if (c->net_type == RNIC_NET_ROCE_V1) {
				wc->network_hdr_type = RDMA_NETWORK_ROCE_V1;
				wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			}
		}
		/*
		 * RQ completions come in ring order; an SRQ slot is freed by
		 * each completion (the kernel SRQ is sized with slack).
		 */
		if (qp->has_srq) {
			/*
			 * QPs on other CQs share the SRQ: their pollers update
			 * it too, so the CQ lock alone does not cover it.
			 */
			rnic_srq_retire(to_rsrq(qp->ibqp.srq), 1);
		} else {
			WRITE_ONCE(qp->rq.ci, qp->rq.ci + 1);
		}
	} else {
		u32 mask = (1u << qp->sq.log_size) - 1;
		u32 ci = READ_ONCE(qp->sq.ci);
		u32 idx = le16_to_cpu(c->wqe_idx) & mask;

		/* This CQE retires every WQE up to and including idx. */
		WRITE_ONCE(qp->sq.ci, ci + ((idx - ci) & mask) + 1);
	}
	return true;
}

/*
 * The software flush after a fatal error.  The reset device writes no
 * CQE again, yet kernel ULPs wait for every work request they posted: a
 * drain, a MAD send that holds its CM ID, an NVMe command.  As a device
 * flushes a QP in ERR, the driver completes each outstanding WQE of the
 * kernel QPs on the CQ with IB_WC_WR_FLUSH_ERR, oldest first, with the
 * wr_id of its shadow.  The CQ's lock covers the queues' ci here, as in
 * the poll of real CQEs.
 */
static int rnic_flush_wq(struct rnic_qp *qp, struct rnic_wq *wq, bool recv,
			 struct ib_wc *wc, int budget)
{
	u32 mask = (1u << wq->log_size) - 1;
	u32 pi = READ_ONCE(wq->pi);
	int n = 0;

	/* The slots' wr_ids were stored before the index that covers them. */
	smp_rmb();
	while (n < budget && wq->ci != pi) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = wq->wr_id[wq->ci & mask];
		wc[n].status = IB_WC_WR_FLUSH_ERR;
		wc[n].opcode = recv ? IB_WC_RECV : IB_WC_SEND;
		wc[n].qp = &qp->ibqp;
		wc[n].port_num = RNIC_PORT;
		WRITE_ONCE(wq->ci, wq->ci + 1);
		n++;
	}
	return n;
}

static int rnic_poll_flush(struct rnic_dev *dev, struct rnic_cq *cq,
			   struct ib_wc *wc, int budget)
{
	unsigned long index;
	struct rnic_qp *qp;
	int n = 0;

	xa_lock(&dev->qp_xa);
	xa_for_each(&dev->qp_xa, index, qp) {
		if (qp->user || n >= budget)
			continue;
		if (qp->sq.wr_id && to_rcq(qp->ibqp.send_cq) == cq)
			n += rnic_flush_wq(qp, &qp->sq, false, wc + n, budget - n);
		if (!qp->has_srq && qp->rq.wr_id &&
		    to_rcq(qp->ibqp.recv_cq) == cq)
			n += rnic_flush_wq(qp, &qp->rq, true, wc + n, budget - n);
	}
	xa_unlock(&dev->qp_xa);
	return n;
}

/* Has a kernel QP on @cq work that only the software flush can end? */
static bool rnic_cq_flushable(struct rnic_dev *dev, struct rnic_cq *cq)
{
	unsigned long index;
	struct rnic_qp *qp;
	bool any = false;

	xa_lock(&dev->qp_xa);
	xa_for_each(&dev->qp_xa, index, qp) {
		if (qp->user)
			continue;
		if ((to_rcq(qp->ibqp.send_cq) == cq &&
		     READ_ONCE(qp->sq.pi) != qp->sq.ci) ||
		    (!qp->has_srq && to_rcq(qp->ibqp.recv_cq) == cq &&
		     READ_ONCE(qp->rq.pi) != qp->rq.ci)) {
			any = true;
			break;
		}
	}
	xa_unlock(&dev->qp_xa);
	return any;
}

/* Not a CQ its owner polls directly: its handler warns if called. */
static void rnic_kick_cq(struct ib_cq *ibcq)
{
	if (ibcq && ibcq->comp_handler && ibcq->poll_ctx != IB_POLL_DIRECT)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* After a fatal error: the QP's pollers have flushes to collect. */
void rnic_kick_qp_cqs(struct rnic_qp *qp)
{
	rnic_kick_cq(qp->ibqp.send_cq);
	if (qp->ibqp.recv_cq != qp->ibqp.send_cq)
		rnic_kick_cq(qp->ibqp.recv_cq);
}

int rnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct rnic_dev *dev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->umem)
		return -EINVAL;
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries) {
		struct rnic_cqe *cqe = rnic_cq_next(cq);
		struct rnic_cqe copy;

		if (!cqe)
			break;
		copy = *cqe;
		cq->ci++;
		if (rnic_cqe_to_wc(dev, &copy, &wc[n]))
			n++;
	}
	if (n < num_entries && rnic_dev_dead(dev))
		n += rnic_poll_flush(dev, cq, wc + n, num_entries - n);
	WRITE_ONCE(cq->dbrec->ci, cpu_to_le32(cq->ci));
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int rnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rnic_dev *dev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	unsigned long irqflags;
	u64 arm;
	int ret = 0;

	if (cq->umem)
		return -EINVAL;
	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM;
	spin_lock_irqsave(&cq->lock, irqflags);
	WRITE_ONCE(cq->dbrec->ci, cpu_to_le32(cq->ci));
	if (rnic_dev_dead(dev)) {
		/* No event will come: report what the flush still owes. */
		if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
		    (rnic_cq_next(cq) || rnic_cq_flushable(dev, cq)))
			ret = 1;
		spin_unlock_irqrestore(&cq->lock, irqflags);
		return ret;
	}
	rnic_ring_db(dev, RNIC_DB_CQ, cq->cqn, arm, cq->ci);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && rnic_cq_next(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* ---- shared receive queues ---- */

/*
 * What an SRQ reports as its max_wr: the request rounded up to a power of
 * two, not the ring, which is twice that where the device allows it.  A
 * consumer that keeps the whole ring posted (UCX posts what max_wr says)
 * would otherwise find the next slot still held by a receive that
 * completes out of order, and get ENOMEM from post_srq_recv.
 */
static u32 rnic_srq_usable(u32 requested, u32 log_size)
{
	return min_t(u32, roundup_pow_of_two(requested), 1u << log_size);
}

int rnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_pd *pd = to_rpd(ibsrq->pd);
	const struct rnic_device_attr *h = &dev->hw;
	struct rnic_cmd_create_srq cmd = {};
	struct rnic_pbl_buf pbuf = {};
	struct ib_srq_attr *a = &init->attr;
	u32 max_wr, max_sge;
	int err;

	if (!(le32_to_cpu(h->cap_flags) & RNIC_DEV_CAP_SRQ))
		return -EOPNOTSUPP;
	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	max_wr = min_t(u32, le32_to_cpu(h->max_srq_wr),
		       1u << RNIC_WQ_MAX_LOG_SIZE);
	max_sge = min_t(u32, le32_to_cpu(h->max_srq_sge), RNIC_RQ_MAX_SGE);
	if (!a->max_wr || a->max_wr > max_wr || a->max_sge > max_sge ||
	    a->srq_limit > a->max_wr)
		return -EINVAL;

	spin_lock_init(&srq->lock);
	srq->uctx = rnic_udata_uctx(udata);
	srq->wq.max_sge = max_t(u32, a->max_sge, 1);
	srq->limit = a->srq_limit;

	if (udata) {
		struct rnic_ucreate_srq ucmd = {};
		struct rnic_ucreate_srq_resp uresp = {};

		if (udata->inlen < sizeof(ucmd))
			return -EINVAL;
		err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
		if (err)
			return err;
		srq->wq.log_size = ucmd.log_size;
		if (srq->wq.log_size > RNIC_WQ_MAX_LOG_SIZE ||
		    (1u << srq->wq.log_size) > max_wr ||
		    (1u << srq->wq.log_size) < a->max_wr)
			return -EINVAL;
		err = rnic_wq_user(dev, &srq->wq, ucmd.buf_addr, ucmd.buf_size,
				   RNIC_RQ_WQE_SIZE, &cmd.ring, &pbuf);
		if (err)
			return err;
		cmd.log_size = srq->wq.log_size;
		cmd.max_sge = srq->wq.max_sge;
		cmd.pdn = cpu_to_le32(pd->pdn);
		cmd.limit = cpu_to_le32(srq->limit);
		err = rnic_cmd_create_srq(dev, srq->uctx, &cmd, &srq->srqn);
		rnic_free_pbl(dev, &pbuf);
		if (err)
			goto err_wq;
		uresp.srqn = srq->srqn;
		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err)
			goto err_destroy;
	} else {
		/* Slack for out-of-order SRQ completions, see poll_cq. */
		srq->wq.log_size = order_base_2(a->max_wr) + 1;
		if (srq->wq.log_size > RNIC_WQ_MAX_LOG_SIZE)
			srq->wq.log_size = RNIC_WQ_MAX_LOG_SIZE;
		err = rnic_wq_kernel(dev, &srq->wq, RNIC_RQ_WQE_SIZE, &cmd.ring);
		if (err)
			return err;
		srq->posted = bitmap_zalloc(1u << srq->wq.log_size, GFP_KERNEL);
		if (!srq->posted) {
			err = -ENOMEM;
			goto err_wq;
		}
		cmd.log_size = srq->wq.log_size;
		cmd.max_sge = srq->wq.max_sge;
		cmd.pdn = cpu_to_le32(pd->pdn);
		cmd.limit = cpu_to_le32(srq->limit);
		err = rnic_cmd_create_srq(dev, 0, &cmd, &srq->srqn);
		if (err)
			goto err_wq;
	}
	srq->max_wr = rnic_srq_usable(a->max_wr, srq->wq.log_size);
	a->max_wr = srq->max_wr;
	a->max_sge = srq->wq.max_sge;

	err = xa_insert_irq(&dev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	if (err)
		goto err_destroy;
	return 0;

err_destroy:
	rnic_cmd_destroy_srq(dev, srq->uctx, srq->srqn);
err_wq:
	bitmap_free(srq->posted);
	srq->posted = NULL;
	rnic_wq_free(dev, &srq->wq);
	return err;
}

/*
 * A user SRQ grows into a new ring the provider has filled with its
 * outstanding WQEs (see RESIZE_SRQ); the old ring is unpinned once the
 * device has let go of it.  Kernel SRQs are sized once.
 */
static int rnic_resize_user_srq(struct rnic_dev *dev, struct rnic_srq *srq,
				u32 max_wr, struct ib_udata *udata)
{
	struct rnic_cmd_resize_srq cmd = {};
	struct rnic_umodify_srq ucmd = {};
	struct rnic_pbl_buf pbuf = {};
	struct rnic_wq nwq = {};
	int err;

	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	nwq.log_size = ucmd.log_size;
	if (nwq.log_size > RNIC_WQ_MAX_LOG_SIZE ||
	    nwq.log_size < srq->wq.log_size ||
	    (1u << nwq.log_size) > le32_to_cpu(dev->hw.max_srq_wr) ||
	    (1u << nwq.log_size) < max_wr)
		return -EINVAL;
	err = rnic_wq_user(dev, &nwq, ucmd.buf_addr, ucmd.buf_size,
			   RNIC_RQ_WQE_SIZE, &cmd.ring, &pbuf);
	if (err)
		return err;
	cmd.srqn = cpu_to_le32(srq->srqn);
	cmd.log_size = nwq.log_size;
	err = rnic_cmd_resize_srq(dev, srq->uctx, &cmd);
	rnic_free_pbl(dev, &pbuf);
	if (err) {
		rnic_wq_free(dev, &nwq);
		return err;
	}
	ib_umem_release(srq->wq.umem);
	srq->wq.umem = nwq.umem;
	srq->wq.log_size = nwq.log_size;
	srq->max_wr = rnic_srq_usable(max_wr, nwq.log_size);
	return 0;
}

int rnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		if (!udata || !srq->wq.umem)
			return -EOPNOTSUPP;
		if (!attr->max_wr)
			return -EINVAL;
		err = rnic_resize_user_srq(dev, srq, attr->max_wr, udata);
		if (err)
			return err;
	}
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->max_wr)
		return -EINVAL;
	err = rnic_cmd_modify_srq(dev, srq->uctx, srq->srqn, attr->srq_limit);
	if (!err)
		srq->limit = attr->srq_limit;
	return err;
}

int rnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int rnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);

	rnic_cmd_destroy_srq(dev, srq->uctx, srq->srqn);
	xa_erase_irq(&dev->srq_xa, srq->srqn);
	bitmap_free(srq->posted);
	rnic_wq_free(dev, &srq->wq);
	return 0;
}

int rnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);

	if (srq->wq.umem) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return rnic_post_wq_recv(to_rdev(ibsrq->device), &srq->wq, &srq->lock,
				 RNIC_DB_SRQ, srq->srqn, srq->posted, wr,
				 bad_wr);
}
