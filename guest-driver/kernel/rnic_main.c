// SPDX-License-Identifier: GPL-2.0
/*
 * rnic: PCI driver for the rnic emulated RoCEv2 RNIC.
 *
 * Probe maps the BARs, resets the device, allocates MSI-X vectors,
 * brings up the command queue and the event queues, then registers the
 * Ethernet function and the RDMA device (order from docs/design.md).
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/delay.h>

#include "rnic.h"

static const struct pci_device_id rnic_pci_table[] = {
	{ PCI_DEVICE(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, rnic_pci_table);

static void rnic_hw_reset(struct rnic_dev *dev)
{
	rnic_wr32(dev, RNIC_REG_CTRL, RNIC_CTRL_RESET);
	/* Reset is synchronous; read back to flush the posted write. */
	rnic_rd32(dev, RNIC_REG_STATUS);
}

static int rnic_check_identity(struct rnic_dev *dev)
{
	u32 magic = rnic_rd32(dev, RNIC_REG_MAGIC);
	u32 ver = rnic_rd32(dev, RNIC_REG_VERSION);

	if (magic != RNIC_MAGIC) {
		dev_err(&dev->pdev->dev, "bad magic 0x%08x\n", magic);
		return -ENODEV;
	}
	if ((ver >> 16) != RNIC_ABI_MAJOR) {
		dev_err(&dev->pdev->dev,
			"unsupported device ABI %u.%u (driver %u.%u)\n",
			ver >> 16, ver & 0xffff, RNIC_ABI_MAJOR,
			RNIC_ABI_MINOR);
		return -ENODEV;
	}
	return 0;
}

static int rnic_alloc_vectors(struct rnic_dev *dev)
{
	u32 hw = rnic_rd32(dev, RNIC_REG_MSIX_VECTORS);
	int want, n;

	want = RNIC_VEC_COMP_FIRST + num_online_cpus();
	if (hw)
		want = min_t(int, want, hw);
	want = max(want, 1);
	n = pci_alloc_irq_vectors(dev->pdev, 1, want, PCI_IRQ_MSIX);
	if (n < 0) {
		dev_err(&dev->pdev->dev, "no MSI-X vectors: %d\n", n);
		return n;
	}
	dev->nvec = n;
	if (n <= RNIC_VEC_COMP_FIRST)
		dev_info(&dev->pdev->dev,
			 "only %d MSI-X vectors, sharing vector 0\n", n);
	return 0;
}

static int rnic_query_hw(struct rnic_dev *dev)
{
	struct rnic_port_attr pattr;
	int err;

	err = rnic_cmd_query_device(dev, &dev->hw);
	if (err) {
		dev_err(&dev->pdev->dev, "QUERY_DEVICE failed: %d\n", err);
		return err;
	}
	err = rnic_cmd_query_port(dev, RNIC_PORT, &pattr);
	if (err) {
		dev_err(&dev->pdev->dev, "QUERY_PORT failed: %d\n", err);
		return err;
	}
	dev->gid_tbl_len = le32_to_cpu(pattr.gid_tbl_len);
	dev->max_msg_sz = le32_to_cpu(pattr.max_msg_sz);
	dev->link_speed_mbps = le32_to_cpu(pattr.link_speed_mbps);
	dev->max_mtu = pattr.max_mtu;
	dev->ib = pattr.link_layer == RNIC_LINK_INFINIBAND;
	if (!dev->gid_tbl_len)
		dev->gid_tbl_len = le32_to_cpu(dev->hw.max_gid);
	/* More than the driver tracks would only be unused entries. */
	dev->gid_tbl_len = min_t(u32, dev->gid_tbl_len, RNIC_MAX_GID_TBL);
	return 0;
}

static int rnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct rnic_dev *dev;
	int err;

	dev = ib_alloc_device(rnic_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->pdev = pdev;
	pci_set_drvdata(pdev, dev);
	xa_init_flags(&dev->cq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srq_xa, XA_FLAGS_LOCK_IRQ);
	INIT_WORK(&dev->link_work, rnic_link_work);
	INIT_WORK(&dev->gid_work, rnic_gid_work);
	INIT_WORK(&dev->fatal_work, rnic_fatal_work);
	mutex_init(&dev->link_lock);

	err = pci_enable_device(pdev);
	if (err)
		goto err_dealloc;
	pci_set_master(pdev);
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		goto err_disable;
	err = pci_request_regions(pdev, DRV_NAME);
	if (err)
		goto err_disable;

	dev->regs = pci_iomap(pdev, RNIC_BAR_REGS, RNIC_REGS_SIZE);
	dev->kdb = pci_iomap_range(pdev, RNIC_BAR_DB,
				   RNIC_DB_PAGE_KERNEL * RNIC_DB_PAGE_SIZE,
				   RNIC_DB_PAGE_SIZE);
	if (!dev->regs || !dev->kdb) {
		err = -ENOMEM;
		goto err_unmap;
	}
	dev->db_bar_start = pci_resource_start(pdev, RNIC_BAR_DB);

	err = rnic_check_identity(dev);
	if (err)
		goto err_unmap;
	dev->db_pages = rnic_rd32(dev, RNIC_REG_DB_PAGES);
	rnic_hw_reset(dev);

	err = rnic_alloc_vectors(dev);
	if (err)
		goto err_unmap;
	err = rnic_cmdq_init(dev);
	if (err)
		goto err_vectors;
	err = rnic_query_hw(dev);
	if (err)
		goto err_cmdq;
	err = rnic_eqs_init(dev);
	if (err)
		goto err_cmdq;
	/* An InfiniBand port has no Ethernet function: IPoIB is its IP. */
	err = dev->ib ? 0 : rnic_net_init(dev);
	if (err)
		goto err_eqs;
	err = rnic_ib_register(dev);
	if (err)
		goto err_net;

	dev_info(&pdev->dev, "%s: %d MSI-X vectors, %d completion EQs\n",
		 dev_name(&dev->ibdev.dev), dev->nvec, dev->num_ceqs);
	return 0;

err_net:
	rnic_net_destroy(dev);
err_eqs:
	rnic_eqs_destroy(dev);
err_cmdq:
	cancel_work_sync(&dev->link_work);
	cancel_work_sync(&dev->gid_work);
	cancel_work_sync(&dev->fatal_work);
	rnic_hw_reset(dev);
	rnic_cmdq_destroy(dev);
err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	if (dev->kdb)
		pci_iounmap(pdev, dev->kdb);
	if (dev->regs)
		pci_iounmap(pdev, dev->regs);
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_dealloc:
	pci_set_drvdata(pdev, NULL);
	ib_dealloc_device(&dev->ibdev);
	return err;
}

static void rnic_remove(struct pci_dev *pdev)
{
	struct rnic_dev *dev = pci_get_drvdata(pdev);

	/* Gone already: a function reset the device did not survive. */
	if (!dev)
		return;
	rnic_ib_unregister(dev);
	rnic_net_destroy(dev);
	rnic_eqs_destroy(dev);
	/* An EQE may have queued the link work after the netdev went. */
	cancel_work_sync(&dev->link_work);
	cancel_work_sync(&dev->gid_work);
	cancel_work_sync(&dev->fatal_work);
	rnic_hw_reset(dev);
	rnic_cmdq_destroy(dev);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, dev->kdb);
	pci_iounmap(pdev, dev->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	WARN_ON(!xa_empty(&dev->cq_xa) || !xa_empty(&dev->qp_xa));
	xa_destroy(&dev->cq_xa);
	xa_destroy(&dev->qp_xa);
	xa_destroy(&dev->srq_xa);
	pci_set_drvdata(pdev, NULL);
	ib_dealloc_device(&dev->ibdev);
}

/*
 * A function reset (/sys/bus/pci/devices/.../reset) wipes the device's
 * state under the driver, so the driver lets go of all of it first, as on
 * removal: verbs programs see their work flushed and the device fatal,
 * ULPs see the device go.  Afterwards it comes back as on a fresh probe,
 * with new RDMA and network devices.
 */
static void rnic_reset_prepare(struct pci_dev *pdev)
{
	rnic_remove(pdev);
}

static void rnic_reset_done(struct pci_dev *pdev)
{
	int err = rnic_probe(pdev, NULL);

	if (err)
		dev_err(&pdev->dev, "device not back after its reset: %d\n",
			err);
}

/*
 * Recovery from a fatal error (a fatal event, a command timeout): the
 * device has been reset and IB_EVENT_DEVICE_FATAL raised.  The driver
 * then lets go of everything as on removal (ib_core disassociates the
 * verbs programs' contexts, ULPs see the device go) and probes the
 * function again, which registers new RDMA and network devices.  It runs
 * from a work item of its own, not the device's, because removal frees
 * the device and waits for the device's work items.
 */
struct rnic_recovery {
	struct work_struct work;
	struct pci_dev *pdev;
	struct rnic_dev *dev;		/* the instance that failed */
};

static struct workqueue_struct *rnic_recovery_wq;
static atomic_t rnic_recoveries = ATOMIC_INIT(0);

static void rnic_recovery_work(struct work_struct *work)
{
	struct rnic_recovery *r = container_of(work, struct rnic_recovery,
					       work);
	struct pci_dev *pdev = r->pdev;
	int err;

	device_lock(&pdev->dev);
	/* Unbound, removed or reset meanwhile: nothing left to recover. */
	if (pdev->dev.driver && pci_get_drvdata(pdev) == r->dev) {
		dev_info(&pdev->dev, "recovering from a fatal error\n");
		rnic_remove(pdev);
		err = rnic_probe(pdev, NULL);
		if (err)
			dev_err(&pdev->dev, "device not back after a fatal error: %d\n",
				err);
		else
			dev_info(&pdev->dev, "recovered from a fatal error (%d so far)\n",
				 atomic_inc_return(&rnic_recoveries));
	}
	device_unlock(&pdev->dev);
	pci_dev_put(pdev);
	kfree(r);
}

void rnic_schedule_recovery(struct rnic_dev *dev)
{
	struct rnic_recovery *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return;
	INIT_WORK(&r->work, rnic_recovery_work);
	r->pdev = pci_dev_get(dev->pdev);
	r->dev = dev;
	queue_work(rnic_recovery_wq, &r->work);
}

static const struct pci_error_handlers rnic_err_handlers = {
	.reset_prepare = rnic_reset_prepare,
	.reset_done = rnic_reset_done,
};

static void rnic_shutdown(struct pci_dev *pdev)
{
	struct rnic_dev *dev = pci_get_drvdata(pdev);

	/* Stop all DMA before the next kernel takes over. */
	if (dev)
		rnic_hw_reset(dev);
}

static struct pci_driver rnic_pci_driver = {
	.name = DRV_NAME,
	.id_table = rnic_pci_table,
	.probe = rnic_probe,
	.remove = rnic_remove,
	.shutdown = rnic_shutdown,
	.err_handler = &rnic_err_handlers,
};

static int __init rnic_init(void)
{
	int err;

	rnic_recovery_wq = alloc_ordered_workqueue("rnic_recovery", 0);
	if (!rnic_recovery_wq)
		return -ENOMEM;
	err = pci_register_driver(&rnic_pci_driver);
	if (err)
		destroy_workqueue(rnic_recovery_wq);
	return err;
}

static void __exit rnic_exit(void)
{
	pci_unregister_driver(&rnic_pci_driver);
	/* Recoveries still queued find no driver bound and end. */
	destroy_workqueue(rnic_recovery_wq);
}

module_init(rnic_init);
module_exit(rnic_exit);

MODULE_DESCRIPTION("rnic emulated RoCEv2 RNIC driver");
MODULE_LICENSE("GPL");
MODULE_VERSION(RNIC_DRV_VERSION);
MODULE_AUTHOR("rnic developers");
