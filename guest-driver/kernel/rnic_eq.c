// SPDX-License-Identifier: GPL-2.0
/*
 * rnic event queues.
 *
 * EQ 0 receives asynchronous events on MSI-X vector 0.  Completion EQs
 * 1..n use vectors 2.. (or share vector 0 when the platform granted too
 * few vectors).  Each interrupt consumes the new entries by owner bit,
 * dispatches them and re-arms the EQ with its consumer index.
 */
#include <linux/interrupt.h>
#include <linux/dma-mapping.h>

#include "rnic.h"

static struct rnic_eqe *rnic_eq_next(struct rnic_eq *eq)
{
	struct rnic_eqe *eqe = &eq->ring[eq->ci & ((1u << eq->log_size) - 1)];
	u8 want = !((eq->ci >> eq->log_size) & 1);

	if ((READ_ONCE(eqe->owner) & RNIC_EQE_OWNER) != want)
		return NULL;
	/* Read the body only after the owner bit says it is ours. */
	dma_rmb();
	return eqe;
}

static void rnic_eq_arm(struct rnic_eq *eq)
{
	rnic_ring_db(eq->dev, RNIC_DB_EQ, eq->eqn, RNIC_DB_ARM, eq->ci);
}

static void rnic_dispatch_comp(struct rnic_dev *dev, u32 cqn)
{
	unsigned long flags;
	struct rnic_cq *cq;

	/* Holding the xarray lock keeps destroy_cq from freeing the CQ. */
	xa_lock_irqsave(&dev->cq_xa, flags);
	cq = xa_load(&dev->cq_xa, cqn);
	if (cq && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	xa_unlock_irqrestore(&dev->cq_xa, flags);
}

static void rnic_dispatch_cq_err(struct rnic_dev *dev, u32 cqn)
{
	struct ib_event ev = {};
	unsigned long flags;
	struct rnic_cq *cq;

	xa_lock_irqsave(&dev->cq_xa, flags);
	cq = xa_load(&dev->cq_xa, cqn);
	if (cq && cq->ibcq.event_handler) {
		ev.device = &dev->ibdev;
		ev.event = IB_EVENT_CQ_ERR;
		ev.element.cq = &cq->ibcq;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	xa_unlock_irqrestore(&dev->cq_xa, flags);
}

static void rnic_dispatch_qp_event(struct rnic_dev *dev, u32 qpn,
				   enum ib_event_type type)
{
	struct ib_event ev = {};
	unsigned long flags;
	struct rnic_qp *qp;

	xa_lock_irqsave(&dev->qp_xa, flags);
	qp = xa_load(&dev->qp_xa, qpn);
	if (qp && qp->ibqp.event_handler) {
		ev.device = &dev->ibdev;
		ev.event = type;
		ev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
	xa_unlock_irqrestore(&dev->qp_xa, flags);
}

static void rnic_dispatch_srq_event(struct rnic_dev *dev, u32 srqn)
{
	struct ib_event ev = {};
	unsigned long flags;
	struct rnic_srq *srq;

	xa_lock_irqsave(&dev->srq_xa, flags);
	srq = xa_load(&dev->srq_xa, srqn);
	if (srq && srq->ibsrq.event_handler) {
		ev.device = &dev->ibdev;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	xa_unlock_irqrestore(&dev->srq_xa, flags);
}

/*
 * An EQ overflowed and the device dropped the events it had no room for.
 * A lost completion event leaves a consumer asleep on a CQ that already
 * has its CQE, for ever; a lost port event leaves the port state stale.
 * Which events were lost is unknown, so every CQ on that EQ gets a
 * completion event, which a consumer takes as "poll now" (an extra one
 * finds the CQ empty and re-arms), and the port state is read again.
 */
static void rnic_eq_overflowed(struct rnic_dev *dev, u32 eqn)
{
	unsigned long flags, index;
	struct rnic_cq *cq;

	atomic64_inc(&dev->drv_cnt[RNIC_DRV_CNT_EQ_OVERFLOWS]);
	xa_lock_irqsave(&dev->cq_xa, flags);
	xa_for_each(&dev->cq_xa, index, cq) {
		if (cq->eqn == eqn && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
	xa_unlock_irqrestore(&dev->cq_xa, flags);
	if (eqn == dev->async_eq.eqn)
		schedule_work(&dev->link_work);
}

static void rnic_handle_eqe(struct rnic_dev *dev, const struct rnic_eqe *eqe)
{
	u32 obj = le32_to_cpu(eqe->obj);

	switch (eqe->type) {
	case RNIC_EQE_COMP:
		rnic_dispatch_comp(dev, obj);
		break;
	case RNIC_EQE_CQ_ERR:
		dev_warn_ratelimited(&dev->pdev->dev, "CQ %u error\n", obj);
		rnic_dispatch_cq_err(dev, obj);
		break;
	case RNIC_EQE_QP_FATAL:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_QP_FATAL);
		break;
	case RNIC_EQE_QP_REQ_ERR:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_QP_REQ_ERR);
		break;
	case RNIC_EQE_QP_ACCESS_ERR:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_QP_ACCESS_ERR);
		break;
	case RNIC_EQE_COMM_EST:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_COMM_EST);
		break;
	case RNIC_EQE_SQ_DRAINED:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_SQ_DRAINED);
		break;
	case RNIC_EQE_QP_LAST_WQE:
		rnic_dispatch_qp_event(dev, obj, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case RNIC_EQE_SRQ_LIMIT:
		rnic_dispatch_srq_event(dev, obj);
		break;
	case RNIC_EQE_LID_CHANGE:
	case RNIC_EQE_PKEY_CHANGE:
	case RNIC_EQE_SM_CHANGE:
	case RNIC_EQE_SMA_TRAP:
		rnic_ib_port_event(dev, eqe->type);
		break;
	case RNIC_EQE_PORT_ACTIVE:
	case RNIC_EQE_PORT_DOWN:
		/* On IB the SM's port state, not the link, makes these. */
		if (dev->ib) {
			rnic_ib_port_event(dev, eqe->type);
			break;
		}
		/*
		 * The state is re-read from STATUS (in process context, for
		 * the port event), so coalesced events still end right.
		 */
		schedule_work(&dev->link_work);
		break;
	case RNIC_EQE_GID_CHANGE:
		if (obj >= dev->gid_tbl_len) {
			dev_warn_ratelimited(&dev->pdev->dev,
					     "GID change of index %u beyond the table\n",
					     obj);
			break;
		}
		set_bit(obj, dev->gid_changed);
		schedule_work(&dev->gid_work);
		break;
	case RNIC_EQE_DEVICE_FATAL:
		/* The device stopped; only a reset brings it back. */
		rnic_cmdq_mark_dead(dev, "device fatal event");
		break;
	case RNIC_EQE_EQ_OVERFLOW:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "EQ %u overflowed, events lost; waking its CQs\n",
				     obj);
		rnic_eq_overflowed(dev, obj);
		break;
	default:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "unknown EQE type 0x%x obj %u\n",
				     eqe->type, obj);
		break;
	}
}

static irqreturn_t rnic_eq_irq(int irq, void *data)
{
	struct rnic_eq *eq = data;
	struct rnic_eqe *eqe;
	unsigned int n = 0;

	while ((eqe = rnic_eq_next(eq))) {
		struct rnic_eqe copy = *eqe;

		eq->ci++;
		rnic_handle_eqe(eq->dev, &copy);
		n++;
	}
	/* Re-arm even when empty: the interrupt may predate our arm. */
	rnic_eq_arm(eq);
	return n ? IRQ_HANDLED : IRQ_NONE;
}

/*
 * A lost interrupt (never sent, or sent and lost) leaves entries in an EQ
 * that nothing will read until the next interrupt, which may never come
 * if a program waits for this very completion.  Each watchdog period
 * looks for pending entries; an EQ whose consumer index has not moved
 * for a whole period with an entry pending lost its interrupt.  Its
 * vector is disabled while the watchdog runs the handler, so the two
 * never race, and IRQs are off as in the handler's own context.
 */
static void rnic_eq_check(struct rnic_dev *dev, struct rnic_eq *eq)
{
	unsigned int irq = pci_irq_vector(dev->pdev, eq->vector);
	unsigned long flags;

	if (!eq->created || !rnic_eq_next(eq)) {
		eq->wd_stuck_ci = 0;
		return;
	}
	if (eq->wd_stuck_ci != eq->ci + 1) {
		/* Seen for the first time: its interrupt may be on its way. */
		eq->wd_stuck_ci = eq->ci + 1;
		return;
	}
	disable_irq(irq);
	if (rnic_eq_next(eq) && eq->wd_stuck_ci == eq->ci + 1) {
		atomic64_inc(&dev->drv_cnt[RNIC_DRV_CNT_IRQ_RECOVERED]);
		dev_warn_ratelimited(&dev->pdev->dev,
				     "EQ %u: entries with no interrupt, handled by the watchdog\n",
				     eq->eqn);
		local_irq_save(flags);
		rnic_eq_irq(irq, eq);
		local_irq_restore(flags);
	}
	eq->wd_stuck_ci = 0;
	enable_irq(irq);
}

static void rnic_eq_watchdog(struct work_struct *work)
{
	struct rnic_dev *dev = container_of(to_delayed_work(work),
					    struct rnic_dev, eq_watchdog);
	int i;

	if (rnic_dev_dead(dev))
		return;
	rnic_eq_check(dev, &dev->async_eq);
	for (i = 0; i < dev->num_ceqs; i++)
		rnic_eq_check(dev, &dev->ceqs[i]);
	schedule_delayed_work(&dev->eq_watchdog,
			      msecs_to_jiffies(RNIC_EQ_WATCHDOG_MS));
}

static int rnic_eq_create(struct rnic_dev *dev, struct rnic_eq *eq, u32 eqn,
			  int vector)
{
	struct pci_dev *pdev = dev->pdev;
	struct rnic_pbl pbl = {};
	int err;

	eq->dev = dev;
	eq->eqn = eqn;
	eq->log_size = RNIC_EQ_LOG_SIZE;
	eq->vector = vector;
	eq->ci = 0;
	eq->ring_bytes = max_t(size_t, RNIC_EQE_SIZE << eq->log_size,
			       PAGE_SIZE);
	eq->ring = dma_alloc_coherent(&pdev->dev, eq->ring_bytes,
				      &eq->ring_dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	snprintf(eq->name, sizeof(eq->name), "rnic-eq%u@%s", eqn,
		 pci_name(pdev));
	err = request_irq(pci_irq_vector(pdev, vector), rnic_eq_irq,
			  IRQF_SHARED, eq->name, eq);
	if (err)
		goto err_free;
	eq->irq_requested = true;

	pbl.addr = cpu_to_le64(eq->ring_dma);
	pbl.npages = cpu_to_le32(eq->ring_bytes >> PAGE_SHIFT);
	pbl.page_shift = PAGE_SHIFT;
	pbl.levels = 0;
	err = rnic_cmd_create_eq(dev, eqn, eq->log_size, vector, &pbl);
	if (err) {
		dev_err(&pdev->dev, "CREATE_EQ %u failed: %d\n", eqn, err);
		goto err_irq;
	}
	eq->created = true;
	rnic_eq_arm(eq);
	return 0;

err_irq:
	free_irq(pci_irq_vector(pdev, vector), eq);
	eq->irq_requested = false;
err_free:
	dma_free_coherent(&pdev->dev, eq->ring_bytes, eq->ring, eq->ring_dma);
	eq->ring = NULL;
	return err;
}

static void rnic_eq_destroy(struct rnic_dev *dev, struct rnic_eq *eq)
{
	struct pci_dev *pdev = dev->pdev;

	if (eq->created)
		rnic_cmd_destroy_eq(dev, eq->eqn);
	eq->created = false;
	if (eq->irq_requested)
		free_irq(pci_irq_vector(pdev, eq->vector), eq);
	eq->irq_requested = false;
	if (eq->ring)
		dma_free_coherent(&pdev->dev, eq->ring_bytes, eq->ring,
				  eq->ring_dma);
	eq->ring = NULL;
}

int rnic_eqs_init(struct rnic_dev *dev)
{
	u32 max_eq = le32_to_cpu(dev->hw.max_eq);
	int want, i, err;

	err = rnic_eq_create(dev, &dev->async_eq, RNIC_ASYNC_EQN,
			     RNIC_VEC_ASYNC);
	if (err)
		return err;

	if (dev->nvec > RNIC_VEC_COMP_FIRST)
		want = dev->nvec - RNIC_VEC_COMP_FIRST;
	else
		want = 1;
	if (max_eq > 1)
		want = min_t(int, want, max_eq - 1);
	else
		want = 0;
	if (!want) {
		dev_err(&dev->pdev->dev, "device offers no completion EQ\n");
		err = -ENODEV;
		goto err_async;
	}

	dev->ceqs = kcalloc(want, sizeof(*dev->ceqs), GFP_KERNEL);
	if (!dev->ceqs) {
		err = -ENOMEM;
		goto err_async;
	}
	for (i = 0; i < want; i++) {
		int vec = dev->nvec > RNIC_VEC_COMP_FIRST ?
			  RNIC_VEC_COMP_FIRST + i : RNIC_VEC_ASYNC;

		err = rnic_eq_create(dev, &dev->ceqs[i], i + 1, vec);
		if (err)
			break;
		dev->num_ceqs++;
	}
	if (!dev->num_ceqs) {
		kfree(dev->ceqs);
		dev->ceqs = NULL;
		goto err_async;
	}
	INIT_DELAYED_WORK(&dev->eq_watchdog, rnic_eq_watchdog);
	schedule_delayed_work(&dev->eq_watchdog,
			      msecs_to_jiffies(RNIC_EQ_WATCHDOG_MS));
	return 0;

err_async:
	rnic_eq_destroy(dev, &dev->async_eq);
	return err;
}

void rnic_eqs_destroy(struct rnic_dev *dev)
{
	int i;

	cancel_delayed_work_sync(&dev->eq_watchdog);
	for (i = 0; i < dev->num_ceqs; i++)
		rnic_eq_destroy(dev, &dev->ceqs[i]);
	kfree(dev->ceqs);
	dev->ceqs = NULL;
	dev->num_ceqs = 0;
	rnic_eq_destroy(dev, &dev->async_eq);
}

u32 rnic_comp_eqn(struct rnic_dev *dev, int comp_vector)
{
	if (comp_vector < 0)
		comp_vector = 0;
	return dev->ceqs[comp_vector % dev->num_ceqs].eqn;
}
