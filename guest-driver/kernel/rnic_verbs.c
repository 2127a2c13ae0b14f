// SPDX-License-Identifier: GPL-2.0
/*
 * rnic verbs: device and port queries, GIDs, user contexts, PDs, CQs,
 * MRs, AHs, counters and the ib_device registration.  QPs, SRQs and the
 * kernel data path are in rnic_qp.c.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>
#ifdef RNIC_HAVE_RDMA_ITER_H
#include <rdma/iter.h>
#endif

#include "rnic.h"

#define RNIC_RING_PAGE		4096
#define RNIC_RING_SHIFT		12
/* Page sizes a page-list MR may use: 4 KiB .. 1 GiB. */
#define RNIC_MR_PGSZ_BITMAP	GENMASK_ULL(30, 12)

/* ---- page lists ---- */

int rnic_kring_alloc(struct rnic_dev *dev, struct rnic_kring *r, size_t bytes)
{
	r->bytes = ALIGN(bytes, RNIC_RING_PAGE);
	r->buf = dma_alloc_coherent(&dev->pdev->dev, r->bytes, &r->dma,
				    GFP_KERNEL);
	return r->buf ? 0 : -ENOMEM;
}

void rnic_kring_free(struct rnic_dev *dev, struct rnic_kring *r)
{
	if (r->buf)
		dma_free_coherent(&dev->pdev->dev, r->bytes, r->buf, r->dma);
	r->buf = NULL;
}

void rnic_kring_pbl(const struct rnic_kring *r, struct rnic_pbl *pbl)
{
	memset(pbl, 0, sizeof(*pbl));
	pbl->addr = cpu_to_le64(r->dma);
	pbl->npages = cpu_to_le32(r->bytes >> RNIC_RING_SHIFT);
	pbl->page_shift = RNIC_RING_SHIFT;
	pbl->levels = 0;
}

void rnic_free_pbl(struct rnic_dev *dev, struct rnic_pbl_buf *buf)
{
	struct device *d = &dev->pdev->dev;
	u32 i;

	if (buf->l2) {
		for (i = 0; i < buf->nl2; i++)
			if (buf->l2[i])
				dma_free_coherent(d, PAGE_SIZE, buf->l2[i],
						  buf->l2_dma[i]);
	}
	kfree(buf->l2);
	kfree(buf->l2_dma);
	if (buf->l1)
		dma_free_coherent(d, buf->l1_bytes, buf->l1, buf->l1_dma);
	memset(buf, 0, sizeof(*buf));
}

/*
 * Describe the first @npages blocks of size @pgsz of @umem (all of them
 * when @npages is 0): levels 1 when the list fits in one page, else 2.
 * The device copies the list at creation, so @buf is freed right after
 * the command.
 */
static int rnic_umem_pbl(struct rnic_dev *dev, struct ib_umem *umem,
			 unsigned long pgsz, u32 npages, struct rnic_pbl *pbl,
			 struct rnic_pbl_buf *buf)
{
	struct device *d = &dev->pdev->dev;
	struct ib_block_iter biter;
	size_t nblocks;
	__le64 *l1;
	u32 i = 0;

	memset(buf, 0, sizeof(*buf));
	memset(pbl, 0, sizeof(*pbl));
	nblocks = ib_umem_num_dma_blocks(umem, pgsz);
	if (!npages)
		npages = nblocks;
	if (!npages || npages > nblocks ||
	    npages > RNIC_PBL_ENTRIES_PER_PAGE * RNIC_PBL_ENTRIES_PER_PAGE)
		return -EINVAL;

	if (npages <= RNIC_PBL_ENTRIES_PER_PAGE) {
		buf->l1_bytes = PAGE_SIZE;
		buf->l1 = dma_alloc_coherent(d, buf->l1_bytes, &buf->l1_dma,
					     GFP_KERNEL);
		if (!buf->l1)
			return -ENOMEM;
		l1 = buf->l1;
		rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
			if (i == npages)
				break;
			l1[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
		}
		pbl->levels = 1;
	} else {
		buf->nl2 = DIV_ROUND_UP(npages, RNIC_PBL_ENTRIES_PER_PAGE);
		buf->l1_bytes = PAGE_ALIGN(buf->nl2 * sizeof(__le64));
		buf->l1 = dma_alloc_coherent(d, buf->l1_bytes, &buf->l1_dma,
					     GFP_KERNEL);
		buf->l2 = kcalloc(buf->nl2, sizeof(*buf->l2), GFP_KERNEL);
		buf->l2_dma = kcalloc(buf->nl2, sizeof(*buf->l2_dma),
				      GFP_KERNEL);
		if (!buf->l1 || !buf->l2 || !buf->l2_dma)
			goto err;
		l1 = buf->l1;
		for (i = 0; i < buf->nl2; i++) {
			buf->l2[i] = dma_alloc_coherent(d, PAGE_SIZE,
							&buf->l2_dma[i],
							GFP_KERNEL);
			if (!buf->l2[i])
				goto err;
			l1[i] = cpu_to_le64(buf->l2_dma[i]);
		}
		i = 0;
		rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
			__le64 *leaf;

			if (i == npages)
				break;
			leaf = buf->l2[i / RNIC_PBL_ENTRIES_PER_PAGE];
			leaf[i % RNIC_PBL_ENTRIES_PER_PAGE] =
				cpu_to_le64(rdma_block_iter_dma_address(&biter));
			i++;
		}
		pbl->levels = 2;
	}
	pbl->addr = cpu_to_le64(buf->l1_dma);
	pbl->npages = cpu_to_le32(npages);
	pbl->page_shift = ilog2(pgsz);
	return 0;

err:
	rnic_free_pbl(dev, buf);
	return -ENOMEM;
}

int rnic_build_umem_pbl(struct rnic_dev *dev, struct ib_umem *umem,
			unsigned long pgsz, struct rnic_pbl *pbl,
			struct rnic_pbl_buf *buf)
{
	return rnic_umem_pbl(dev, umem, pgsz, 0, pbl, buf);
}

/* A user ring: exactly @npages 4 KiB pages from the start of @umem. */
int rnic_build_ring_pbl(struct rnic_dev *dev, struct ib_umem *umem,
			u32 npages, struct rnic_pbl *pbl,
			struct rnic_pbl_buf *buf)
{
	return rnic_umem_pbl(dev, umem, RNIC_RING_PAGE, npages, pbl, buf);
}

/* ---- device and port ---- */

static int rnic_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *a, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	const struct rnic_device_attr *h = &dev->hw;
	u32 caps = le32_to_cpu(h->cap_flags);
	u32 max_sge = min_t(u32, le32_to_cpu(h->max_sge), RNIC_SQ_MAX_SGE);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(a, 0, sizeof(*a));
	a->fw_ver = le64_to_cpu(h->fw_ver);
	a->sys_image_guid = ibdev->node_guid;
	a->max_mr_size = le64_to_cpu(h->max_mr_size);
	a->page_size_cap = le64_to_cpu(h->page_size_cap);
	a->vendor_id = le32_to_cpu(h->vendor_id);
	a->vendor_part_id = le32_to_cpu(h->vendor_part_id);
	a->hw_ver = le32_to_cpu(h->hw_ver);
	a->max_qp = le32_to_cpu(h->max_qp);
	a->max_qp_wr = min_t(u32, le32_to_cpu(h->max_qp_wr),
			     1u << RNIC_WQ_MAX_LOG_SIZE);
	a->max_send_sge = max_sge;
	a->max_recv_sge = min_t(u32, le32_to_cpu(h->max_sge), RNIC_RQ_MAX_SGE);
	a->max_sge_rd = min_t(u32, le32_to_cpu(h->max_sge_rd), max_sge);
	a->max_cq = le32_to_cpu(h->max_cq);
	a->max_cqe = min_t(u32, le32_to_cpu(h->max_cqe),
			   1u << RNIC_CQ_MAX_LOG_SIZE) - 1;
	a->max_mr = le32_to_cpu(h->max_mr);
	a->max_pd = le32_to_cpu(h->max_pd);
	a->max_qp_rd_atom = le32_to_cpu(h->max_qp_rd_atom);
	a->max_qp_init_rd_atom = le32_to_cpu(h->max_qp_init_rd_atom);
	a->max_res_rd_atom = a->max_qp_rd_atom * a->max_qp;
	a->max_srq = (caps & RNIC_DEV_CAP_SRQ) ? le32_to_cpu(h->max_srq) : 0;
	a->max_srq_wr = min_t(u32, le32_to_cpu(h->max_srq_wr),
			      1u << RNIC_WQ_MAX_LOG_SIZE);
	a->max_srq_sge = min_t(u32, le32_to_cpu(h->max_srq_sge),
			       RNIC_RQ_MAX_SGE);
	a->max_mw = (caps & RNIC_DEV_CAP_MW) ? le32_to_cpu(h->max_mw) : 0;
	a->max_mcast_grp = le32_to_cpu(h->max_mcast_grp);
	a->max_mcast_qp_attach = le32_to_cpu(h->max_mcast_qp_attach);
	a->max_total_mcast_qp_attach = a->max_mcast_grp *
				       a->max_mcast_qp_attach;
	/* Raw QPs, and RSS over work queues that are raw QPs themselves. */
	if (caps & RNIC_DEV_CAP_RAW_PACKET) {
		a->max_wq_type_rq = a->max_qp;
		a->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
		a->rss_caps.max_rwq_indirection_tables = a->max_qp;
		a->rss_caps.max_rwq_indirection_table_size =
			BIT(RNIC_RSS_MAX_LOG_TBL);
	}
	a->max_fast_reg_page_list_len =
		le32_to_cpu(h->max_fast_reg_page_list_len);
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->atomic_cap = (caps & RNIC_DEV_CAP_ATOMIC) ? IB_ATOMIC_HCA :
		IB_ATOMIC_NONE;
	a->max_ah = a->max_qp;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_SYS_IMAGE_GUID;
	if (caps & RNIC_DEV_CAP_FAST_REG)
		a->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
	if (caps & RNIC_DEV_CAP_MW)
		a->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
				       IB_DEVICE_MEM_WINDOW_TYPE_2B;
	/* User SRQs only: see rnic_modify_srq. */
	if (caps & RNIC_DEV_CAP_SRQ_RESIZE)
		a->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
#ifdef RNIC_HAVE_IB_FLUSH
	/* Memory placement, for user QPs (the provider builds the WQEs). */
	if (caps & RNIC_DEV_CAP_FLUSH)
		a->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL |
				       IB_DEVICE_FLUSH_PERSISTENT;
	if (caps & RNIC_DEV_CAP_ATOMIC_WRITE)
		a->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
#endif
	/* CQE timestamps: 64-bit nanoseconds, never wrapping in practice. */
	if (caps & RNIC_DEV_CAP_CLOCK) {
		a->hca_core_clock = RNIC_CLOCK_KHZ;
		a->timestamp_mask = U64_MAX;
	}
	return 0;
}

static const struct {
	u32 mbps;
	u16 speed;
	u8 width;
} rnic_speed_table[] = {
	{ 400000, IB_SPEED_NDR, IB_WIDTH_4X },
	{ 200000, IB_SPEED_HDR, IB_WIDTH_4X },
	{ 100000, IB_SPEED_EDR, IB_WIDTH_4X },
	{ 50000, IB_SPEED_HDR, IB_WIDTH_1X },
	{ 40000, IB_SPEED_FDR10, IB_WIDTH_4X },
	{ 25000, IB_SPEED_EDR, IB_WIDTH_1X },
	{ 10000, IB_SPEED_FDR10, IB_WIDTH_1X },
	{ 0, IB_SPEED_SDR, IB_WIDTH_1X },
};

static int rnic_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *a)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	struct net_device *ndev;
	enum ib_mtu max_mtu;
	unsigned int i;
	bool up;

	if (dev->ib)
		return rnic_ib_query_port(dev, a);
	/* ib_core cleared *a. */
	max_mtu = dev->max_mtu >= RNIC_MTU_256 && dev->max_mtu <= RNIC_MTU_4096 ?
		  (enum ib_mtu)dev->max_mtu : IB_MTU_4096;
	a->max_mtu = max_mtu;
	a->gid_tbl_len = dev->gid_tbl_len;
	a->pkey_tbl_len = 1;
	a->max_msg_sz = dev->max_msg_sz ? dev->max_msg_sz : 0x80000000;
	a->port_cap_flags = IB_PORT_CM_SUP;
	a->bad_pkey_cntr = 0;
	a->qkey_viol_cntr = 0;
	a->lid = 0;
	a->sm_lid = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->ip_gids = true;

	for (i = 0; i < ARRAY_SIZE(rnic_speed_table); i++)
		if (dev->link_speed_mbps >= rnic_speed_table[i].mbps)
			break;
	if (i == ARRAY_SIZE(rnic_speed_table))
		i--;
	a->active_speed = rnic_speed_table[i].speed;
	a->active_width = rnic_speed_table[i].width;

	rcu_read_lock();
	ndev = READ_ONCE(dev->ndev);
	up = ndev && netif_carrier_ok(ndev);
	a->active_mtu = ndev ? min(iboe_get_mtu(READ_ONCE(ndev->mtu)), max_mtu) :
		IB_MTU_1024;
	rcu_read_unlock();
	if (!a->active_mtu)
		a->active_mtu = IB_MTU_256;
	a->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	a->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
		IB_PORT_PHYS_STATE_DISABLED;
	return 0;
}

static int rnic_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *im)
{
	struct ib_port_attr attr = {};
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	im->pkey_tbl_len = attr.pkey_tbl_len;
	im->gid_tbl_len = attr.gid_tbl_len;
	/* The core then adds a RoCE v1 GID next to each v2 one. */
	im->core_cap_flags = to_rdev(ibdev)->ib ? RDMA_CORE_PORT_IBA_IB :
			     RDMA_CORE_PORT_IBA_ROCE |
			     RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer rnic_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return to_rdev(ibdev)->ib ? IB_LINK_LAYER_INFINIBAND :
				    IB_LINK_LAYER_ETHERNET;
}

static int rnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (to_rdev(ibdev)->ib)
		return rnic_ib_query_pkey(to_rdev(ibdev), index, pkey);
	if (index > 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

static int rnic_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	const struct ib_gid_attr *attr;

	/* An IB port's GID table is the SM's; the core caches it from here. */
	if (to_rdev(ibdev)->ib)
		return rnic_ib_query_gid(to_rdev(ibdev), index, gid);
	attr = rdma_get_gid_attr(ibdev, port, index);
	if (IS_ERR(attr)) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	memcpy(gid, &attr->gid, sizeof(*gid));
	rdma_put_gid_attr(attr);
	return 0;
}

static int rnic_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rnic_dev *dev = to_rdev(attr->device);
	u16 vlan_id = 0xffff;
	u8 mac[ETH_ALEN];
	u8 type;
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP &&
	    attr->gid_type != IB_GID_TYPE_ROCE)
		return -EINVAL;
	if (attr->index >= dev->gid_tbl_len)
		return -EINVAL;
	err = rdma_read_gid_l2_fields(attr, &vlan_id, mac);
	if (err)
		return err;
	if (vlan_id >= VLAN_N_VID)
		vlan_id = 0xffff;
	if (attr->gid_type == IB_GID_TYPE_ROCE)
		type = RNIC_GID_ROCE_V1;
	else if (ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw))
		type = RNIC_GID_ROCE_V2_IPV4;
	else
		type = RNIC_GID_ROCE_V2_IPV6;
	return rnic_cmd_set_gid(dev, attr->index, type, attr->gid.raw, mac,
				vlan_id);
}

static int rnic_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rnic_dev *dev = to_rdev(attr->device);

	if (attr->index >= dev->gid_tbl_len)
		return -EINVAL;
	/* A dead device has no GID table left to clean. */
	rnic_cmd_del_gid(dev, attr->index);
	return 0;
}

/*
 * The device changed GID entries by itself (GID_CHANGE events).  For
 * RoCE the table is the stack's: each changed index is set back to what
 * ib_core holds for it, or cleared if it holds nothing, and consumers
 * are told with IB_EVENT_GID_CHANGE so they look again.
 */
void rnic_gid_work(struct work_struct *work)
{
	struct rnic_dev *dev = container_of(work, struct rnic_dev, gid_work);
	struct ib_event ev = {
		.device = &dev->ibdev,
		.event = IB_EVENT_GID_CHANGE,
		.element.port_num = RNIC_PORT,
	};
	const struct ib_gid_attr *attr;
	bool any = false;
	u32 i;

	for (i = 0; i < dev->gid_tbl_len; i++) {
		if (!test_and_clear_bit(i, dev->gid_changed))
			continue;
		any = true;
		if (!dev->ib_registered || rnic_dev_dead(dev))
			continue;
		attr = rdma_get_gid_attr(&dev->ibdev, RNIC_PORT, i);
		if (IS_ERR(attr)) {
			rnic_cmd_del_gid(dev, i);
		} else {
			rnic_add_gid(attr, NULL);
			rdma_put_gid_attr(attr);
		}
		atomic64_inc(&dev->drv_cnt[RNIC_DRV_CNT_GID_RESTORED]);
		dev_info(&dev->pdev->dev,
			 "GID index %u changed in the device: restored\n", i);
	}
	if (any && dev->ib_registered)
		ib_dispatch_event(&ev);
}

static void rnic_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 fw = le64_to_cpu(to_rdev(ibdev)->hw.fw_ver);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u",
		 (u32)(fw >> 32), (u32)(fw >> 16) & 0xffff, (u32)fw & 0xffff);
}

/* Called with link_lock held. */
void rnic_port_event(struct rnic_dev *dev, bool active)
{
	struct ib_event ev = {};

	if (!dev->ib_registered || dev->port_active == active) {
		dev->port_active = active;
		return;
	}
	dev->port_active = active;
	ev.device = &dev->ibdev;
	ev.element.port_num = RNIC_PORT;
	ev.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

/* ---- user contexts and mmap ---- */

static int rnic_alloc_ucontext(struct ib_ucontext *ibuc,
			       struct ib_udata *udata)
{
	struct rnic_ucontext *uc = to_ruc(ibuc);
	struct rnic_dev *dev = to_rdev(ibuc->device);
	struct rnic_ualloc_ucontext_resp resp = {};
	struct rnic_user_mmap_entry *entry;
	u32 uctx;
	int err;

	err = rnic_cmd_alloc_uctx(dev, &uctx);
	if (err)
		return err;
	if (!uctx || (dev->db_pages && uctx >= dev->db_pages)) {
		err = -ENOSPC;
		goto err_dealloc;
	}
	uc->uctx = uctx;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_dealloc;
	}
	entry->pfn = (dev->db_bar_start >> PAGE_SHIFT) +
		     uctx * (RNIC_DB_PAGE_SIZE >> PAGE_SHIFT);
	err = rdma_user_mmap_entry_insert(ibuc, &entry->rdma_entry,
					  RNIC_DB_PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_dealloc;
	}
	uc->db_entry = &entry->rdma_entry;

	resp.uverbs_abi = RNIC_UVERBS_ABI_VERSION;
	resp.uctx = uctx;
	resp.db_mmap_key = rdma_user_mmap_get_offset(uc->db_entry);
	resp.sq_wqe_size = RNIC_SQ_WQE_SIZE;
	resp.rq_wqe_size = RNIC_RQ_WQE_SIZE;
	resp.cqe_size = RNIC_CQE_SIZE;
	resp.max_inline = min_t(u32, le32_to_cpu(dev->hw.max_inline),
				RNIC_MAX_INLINE);
	resp.max_sge = min_t(u32, le32_to_cpu(dev->hw.max_sge), RNIC_SQ_MAX_SGE);
	if (le32_to_cpu(dev->hw.cap_flags) & RNIC_DEV_CAP_SQ_DBREC)
		resp.caps |= RNIC_UCTX_CAP_SQ_DBREC;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto err_remove;
	return 0;

err_remove:
	rdma_user_mmap_entry_remove(uc->db_entry);
	uc->db_entry = NULL;
err_dealloc:
	rnic_cmd_dealloc_uctx(dev, uctx);
	return err;
}

/*
 * Only called on device removal, after ib_core has destroyed the
 * context's objects and zapped its mappings.  The only mappings are the
 * doorbell pages, all made through rdma_user_mmap_io() so ib_core can
 * zap them, and the rings are the program's own memory: nothing of the
 * device is left to detach.  Providing the op is what lets ib_core tear
 * down live contexts instead of waiting for every verbs program to exit.
 */
static void rnic_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static void rnic_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct rnic_ucontext *uc = to_ruc(ibuc);

	if (uc->db_entry)
		rdma_user_mmap_entry_remove(uc->db_entry);
	uc->db_entry = NULL;
	rnic_cmd_dealloc_uctx(to_rdev(ibuc->device), uc->uctx);
}

static int rnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct rnic_user_mmap_entry *entry;
	int err;

	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	entry = container_of(rentry, struct rnic_user_mmap_entry, rdma_entry);
	err = rdma_user_mmap_io(ibuc, vma, entry->pfn, RNIC_DB_PAGE_SIZE,
				pgprot_noncached(vma->vm_page_prot), rentry);
	rdma_user_mmap_entry_put(rentry);
	return err;
}

static void rnic_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	kfree(container_of(rentry, struct rnic_user_mmap_entry, rdma_entry));
}

/* ---- protection domains ---- */

static int rnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_pd *pd = to_rpd(ibpd);

	pd->uctx = rnic_udata_uctx(udata);
	return rnic_cmd_create_pd(to_rdev(ibpd->device), pd->uctx, &pd->pdn);
}

static int rnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_pd *pd = to_rpd(ibpd);

	rnic_cmd_destroy_pd(to_rdev(ibpd->device), pd->uctx, pd->pdn);
	return 0;
}

void rnic_fatal_work(struct work_struct *work)
{
	struct rnic_dev *dev = container_of(work, struct rnic_dev, fatal_work);
	struct ib_event ev = {
		.device = &dev->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
		.element.port_num = RNIC_PORT,
	};

	/* The reset device writes no CQE again. */
	rnic_mark_user_cqs_dead(dev);
	if (dev->ib_registered)
		ib_dispatch_event(&ev);
	/* Kernel pollers collect the software flush of their work. */
	rnic_kick_kernel_cqs(dev);
	/* Then the device comes back as new, as after a function reset. */
	rnic_schedule_recovery(dev);
}

/* ---- multicast: the device delivers group frames to the members ---- */

static int rnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct rnic_qp *qp = to_rqp(ibqp);

	return rnic_cmd_mcast(to_rdev(ibqp->device), qp->uctx, true, qp->qpn,
			      gid->raw);
}

static int rnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct rnic_qp *qp = to_rqp(ibqp);

	return rnic_cmd_mcast(to_rdev(ibqp->device), qp->uctx, false, qp->qpn,
			      gid->raw);
}

/* ---- memory windows (bound by WQEs the provider posts) ---- */

static int rnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rnic_mw *mw = container_of(ibmw, struct rnic_mw, ibmw);
	struct rnic_pd *pd = to_rpd(ibmw->pd);

	mw->uctx = rnic_udata_uctx(udata);
	return rnic_cmd_alloc_mw(to_rdev(ibmw->device), mw->uctx, pd->pdn,
				 ibmw->type == IB_MW_TYPE_1 ? 1 : 2,
				 &ibmw->rkey);
}

static int rnic_dealloc_mw(struct ib_mw *ibmw)
{
	struct rnic_mw *mw = container_of(ibmw, struct rnic_mw, ibmw);

	return rnic_cmd_dealloc_mw(to_rdev(ibmw->device), mw->uctx,
				   ibmw->rkey);
}

/* ---- completion queues ---- */

static u32 rnic_max_cqe(struct rnic_dev *dev)
{
	return min_t(u32, le32_to_cpu(dev->hw.max_cqe),
		     1u << RNIC_CQ_MAX_LOG_SIZE);
}

/*
 * Pins the ring a provider allocated for a CQ of at least 'cqe' entries
 * (a dbrec page, then the CQEs) and describes it for the device.  The
 * caller frees *pbuf once the command is done and owns *umem.
 */
static int rnic_cq_pin_user(struct rnic_dev *dev, struct ib_udata *udata,
			    int cqe, u32 *log_size, struct ib_umem **umem,
			    struct rnic_pbl *ring, struct rnic_pbl_buf *pbuf)
{
	struct rnic_ucreate_cq ucmd = {};
	u32 size, npages, log;
	u64 addr;
	int err;

	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	addr = ucmd.buf_addr;
	size = ucmd.buf_size;
	log = ucmd.log_size;
	if (log < 1 || log > RNIC_CQ_MAX_LOG_SIZE ||
	    (1u << log) > rnic_max_cqe(dev) || (1u << log) <= cqe ||
	    !PAGE_ALIGNED(addr))
		return -EINVAL;
	npages = 1 + DIV_ROUND_UP(RNIC_CQE_SIZE << log, RNIC_RING_PAGE);
	if (size < (u64)npages * RNIC_RING_PAGE)
		return -EINVAL;
	*umem = rnic_umem_get(&dev->ibdev, addr, size,
			      IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(*umem)) {
		err = PTR_ERR(*umem);
		*umem = NULL;
		return err;
	}
	err = rnic_build_ring_pbl(dev, *umem, npages, ring, pbuf);
	if (err) {
		ib_umem_release(*umem);
		*umem = NULL;
		return err;
	}
	*log_size = log;
	return 0;
}

static int rnic_create_cq_udata(struct ib_cq *ibcq,
				const struct ib_cq_init_attr *attr,
				struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_cmd_create_cq cmd = {};
	struct rnic_pbl_buf pbuf = {};
	u32 entries;
	int err;

	/* Every CQE has its timestamp; only the provider reads it. */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ||
	    (attr->flags && !(le32_to_cpu(dev->hw.cap_flags) &
			      RNIC_DEV_CAP_CLOCK)))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe >= rnic_max_cqe(dev))
		return -EINVAL;

	spin_lock_init(&cq->lock);
	cq->uctx = rnic_udata_uctx(udata);

	if (udata) {
		struct rnic_ucreate_cq_resp uresp = {};

		err = rnic_cq_pin_user(dev, udata, attr->cqe, &cq->log_size,
				       &cq->umem, &cmd.ring, &pbuf);
		if (err)
			return err;
		cmd.log_size = cq->log_size;
		cq->eqn = rnic_comp_eqn(dev, attr->comp_vector);
		cmd.eqn = cpu_to_le32(cq->eqn);
		err = rnic_cmd_create_cq(dev, cq->uctx, &cmd, &cq->cqn,
					 &entries);
		rnic_free_pbl(dev, &pbuf);
		if (err)
			goto err_umem;

		uresp.cqn = cq->cqn;
		uresp.log_size = cq->log_size;
		err = ib_copy_to_udata(udata, &uresp,
				       min(udata->outlen, sizeof(uresp)));
		if (err)
			goto err_destroy;
	} else {
		cq->log_size = max_t(u32, 1, order_base_2(attr->cqe + 1));
		if ((1u << cq->log_size) > rnic_max_cqe(dev))
			return -EINVAL;
		err = rnic_kring_alloc(dev, &cq->kring, RNIC_CQ_DBREC_PAGE_SIZE +
				       (RNIC_CQE_SIZE << cq->log_size));
		if (err)
			return err;
		cq->dbrec = cq->kring.buf;
		cq->cqes = cq->kring.buf + RNIC_CQ_DBREC_PAGE_SIZE;
		rnic_kring_pbl(&cq->kring, &cmd.ring);
		cmd.log_size = cq->log_size;
		cq->eqn = rnic_comp_eqn(dev, attr->comp_vector);
		cmd.eqn = cpu_to_le32(cq->eqn);
		err = rnic_cmd_create_cq(dev, 0, &cmd, &cq->cqn, &entries);
		if (err)
			goto err_kring;
	}
	ibcq->cqe = (1u << cq->log_size) - 1;

	err = xa_insert_irq(&dev->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (err)
		goto err_destroy;
	return 0;

err_destroy:
	rnic_cmd_destroy_cq(dev, cq->uctx, cq->cqn);
err_kring:
	rnic_kring_free(dev, &cq->kring);
err_umem:
	if (cq->umem)
		ib_umem_release(cq->umem);
	cq->umem = NULL;
	return err;
}

/*
 * The device carries the unpolled CQEs over to the new ring.  The
 * provider holds its CQ lock across the call, so nobody polls the old
 * ring meanwhile.  Kernel CQs would need the same swap under the poller's
 * lock and no ULP asks for it: they are refused.
 */
static int rnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_ucreate_cq_resp uresp = {};
	struct rnic_cmd_resize_cq cmd = {};
	struct rnic_pbl_buf pbuf = {};
	struct ib_umem *umem;
	u32 log_size, entries, moved;
	int err;

	if (!udata)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe >= rnic_max_cqe(dev))
		return -EINVAL;
	err = rnic_cq_pin_user(dev, udata, cqe, &log_size, &umem, &cmd.ring,
			       &pbuf);
	if (err)
		return err;
	cmd.log_size = log_size;
	cmd.cqn = cpu_to_le32(cq->cqn);
	err = rnic_cmd_resize_cq(dev, cq->uctx, &cmd, &entries, &moved);
	rnic_free_pbl(dev, &pbuf);
	if (err) {
		ib_umem_release(umem);
		return err;
	}
	ib_umem_release(cq->umem);
	cq->umem = umem;
	cq->log_size = log_size;
	ibcq->cqe = (1u << log_size) - 1;

	uresp.cqn = cq->cqn;
	uresp.log_size = log_size;
	return ib_copy_to_udata(udata, &uresp,
				min(udata->outlen, sizeof(uresp)));
}

#ifdef RNIC_HAVE_RESIZE_USER_CQ
static int rnic_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
			       struct ib_udata *udata)
{
	return rnic_resize_cq(ibcq, min_t(unsigned int, cqe, INT_MAX), udata);
}
#endif

#ifdef RNIC_HAVE_CREATE_CQ_ATTRS
static int rnic_create_cq(struct ib_cq *ibcq,
			  const struct ib_cq_init_attr *attr,
			  struct uverbs_attr_bundle *attrs)
{
	return rnic_create_cq_udata(ibcq, attr,
				    attrs ? &attrs->driver_udata : NULL);
}
#else
static int rnic_create_cq(struct ib_cq *ibcq,
			  const struct ib_cq_init_attr *attr,
			  struct ib_udata *udata)
{
	return rnic_create_cq_udata(ibcq, attr, udata);
}
#endif

/*
 * Tells the provider polling a user CQ that no CQE will come any more, so
 * that it fails the work still outstanding itself instead of waiting for
 * it forever.  The flag goes into the ring's dbrec page: pinned memory of
 * the program that outlives the device.
 */
static void rnic_cq_mark_dead(struct rnic_cq *cq)
{
	struct rnic_cq_dbrec *d;

	if (!cq->umem)
		return;
	/* The ring starts page aligned with its dbrec page. */
	d = kmap_local_page(sg_page(cq->umem->sgt_append.sgt.sgl));
	WRITE_ONCE(d->state, cpu_to_le32(RNIC_CQ_DBREC_DEAD));
	kunmap_local(d);
}

void rnic_mark_user_cqs_dead(struct rnic_dev *dev)
{
	unsigned long index;
	struct rnic_cq *cq;

	/* destroy_cq erases a CQ from the array before unpinning it. */
	xa_lock_irq(&dev->cq_xa);
	xa_for_each(&dev->cq_xa, index, cq)
		rnic_cq_mark_dead(cq);
	xa_unlock_irq(&dev->cq_xa);
}

void rnic_kick_kernel_cqs(struct rnic_dev *dev)
{
	unsigned long index;
	struct rnic_cq *cq;

	/* As rnic_dispatch_comp(): the lock keeps destroy_cq away. */
	xa_lock_irq(&dev->cq_xa);
	xa_for_each(&dev->cq_xa, index, cq)
		if (!cq->umem && cq->ibcq.comp_handler &&
		    cq->ibcq.poll_ctx != IB_POLL_DIRECT)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	xa_unlock_irq(&dev->cq_xa);
}

static int rnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);

	/*
	 * On removal ib_core destroys the objects of running programs: the
	 * QPs first (their flush CQEs are in the ring by then), then this.
	 */
	if (!dev->ib_registered)
		rnic_cq_mark_dead(cq);
	rnic_cmd_destroy_cq(dev, cq->uctx, cq->cqn);
	/* After this no event handler can still see the CQ. */
	xa_erase_irq(&dev->cq_xa, cq->cqn);
	rnic_kring_free(dev, &cq->kring);
	if (cq->umem)
		ib_umem_release(cq->umem);
	cq->umem = NULL;
	return 0;
}

/* ---- memory regions ---- */

/* REG_MR of @cmd in @ibpd; on success @mr holds the context and keys. */
static int rnic_mr_register(struct ib_pd *ibpd, struct rnic_cmd_reg_mr *cmd,
			    struct rnic_mr *mr)
{
	struct rnic_pd *pd = to_rpd(ibpd);
	u32 lkey, rkey;
	int err;

	cmd->pdn = cpu_to_le32(pd->pdn);
	err = rnic_cmd_reg_mr(to_rdev(ibpd->device), pd->uctx, cmd, &lkey,
			      &rkey);
	if (err)
		return err;
	mr->uctx = pd->uctx;
	mr->ibmr.lkey = lkey;
	mr->ibmr.rkey = rkey;
	return 0;
}

#ifdef RNIC_HAVE_IB_FLUSH
#define RNIC_IB_FLUSH_ACCESS (IB_ACCESS_FLUSH_GLOBAL | IB_ACCESS_FLUSH_PERSISTENT)
#else
#define RNIC_IB_FLUSH_ACCESS 0
#endif
/* The IB access bits the device takes as they are (RNIC_ACCESS_*). */
#define RNIC_IB_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			   IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			   IB_ACCESS_MW_BIND | RNIC_IB_FLUSH_ACCESS)

static struct ib_mr *rnic_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rnic_cmd_reg_mr cmd = {};
	struct rnic_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	cmd.access = cpu_to_le32(access & RNIC_IB_MR_ACCESS);
	cmd.flags = cpu_to_le32(RNIC_MR_FLAG_PHYS);
	/* iova 0 and length 0: the whole DMA address space. */
	err = rnic_mr_register(ibpd, &cmd, mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/*
 * Pins [start, start + length) and describes it for REG_MR or REREG_MR;
 * the caller frees *pbuf after the command and owns *umem.
 */
static int rnic_mr_pin_user(struct rnic_dev *dev, u64 start, u64 length,
			    u64 virt, int access, struct ib_umem **umem,
			    struct rnic_cmd_reg_mr *cmd,
			    struct rnic_pbl_buf *pbuf)
{
	unsigned long pgsz;
	size_t npages;
	int err;

	if (!length || length > le64_to_cpu(dev->hw.max_mr_size))
		return -EINVAL;
	/* Relaxed ordering is a hint the device may ignore. */
	if (access & ~(RNIC_IB_MR_ACCESS | IB_ACCESS_RELAXED_ORDERING))
		return -EOPNOTSUPP;

	*umem = rnic_umem_get(&dev->ibdev, start, length, access);
	if (IS_ERR(*umem)) {
		err = PTR_ERR(*umem);
		*umem = NULL;
		return err;
	}
	pgsz = ib_umem_find_best_pgsz(*umem, RNIC_MR_PGSZ_BITMAP &
				      le64_to_cpu(dev->hw.page_size_cap), virt);
	if (!pgsz)
		pgsz = ib_umem_find_best_pgsz(*umem, SZ_4K, virt);
	npages = pgsz ? ib_umem_num_dma_blocks(*umem, pgsz) : 0;
	if (!pgsz || npages > le32_to_cpu(dev->hw.max_mr_pages)) {
		err = -EINVAL;
		goto err_umem;
	}
	err = rnic_build_umem_pbl(dev, *umem, pgsz, &cmd->pages, pbuf);
	if (err)
		goto err_umem;
	cmd->access = cpu_to_le32(access & RNIC_IB_MR_ACCESS);
	cmd->iova = cpu_to_le64(virt);
	cmd->length = cpu_to_le64(length);
	return 0;

err_umem:
	ib_umem_release(*umem);
	*umem = NULL;
	return err;
}

static struct ib_mr *rnic_reg_user_mr(struct ib_pd *ibpd, u64 start,
				      u64 length, u64 virt, int access,
				      struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibpd->device);
	struct rnic_cmd_reg_mr cmd = {};
	struct rnic_pbl_buf pbuf = {};
	struct rnic_mr *mr;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = rnic_mr_pin_user(dev, start, length, virt, access, &mr->umem,
			       &cmd, &pbuf);
	if (err)
		goto err_free;
	err = rnic_mr_register(ibpd, &cmd, mr);
	rnic_free_pbl(dev, &pbuf);
	if (err)
		goto err_umem;
	mr->access = access;
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

#ifdef RNIC_HAVE_REG_USER_MR_DMAH
/* DMA handles carry PCIe TPH hints, which the device has no use for. */
static struct ib_mr *rnic_reg_user_mr_dmah(struct ib_pd *ibpd, u64 start,
					   u64 length, u64 virt, int access,
					   struct ib_dmah *dmah,
					   struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return rnic_reg_user_mr(ibpd, start, length, virt, access, udata);
}
#endif

/*
 * Re-registration in place: the keys stay, so work requests and peers
 * holding them see the new translation, access and PD at once.  What the
 * flags leave unchanged comes from the MR; on failure it stays as it was.
 */
static struct ib_mr *rnic_rereg_user_mr(struct ib_mr *ibmr, int flags,
					u64 start, u64 length, u64 virt,
					int access, struct ib_pd *ibpd,
					struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibmr->device);
	struct rnic_mr *mr = to_rmr(ibmr);
	struct rnic_cmd_reg_mr cmd = {};
	struct rnic_pbl_buf pbuf = {};
	struct ib_umem *umem;
	int err;

	/* DMA and fast-reg MRs have no user translation to replace. */
	if (!mr->umem)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		virt = ibmr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!ibpd)
		ibpd = ibmr->pd;
	err = rnic_mr_pin_user(dev, start, length, virt, access, &umem, &cmd,
			       &pbuf);
	if (err)
		return ERR_PTR(err);
	cmd.pdn = cpu_to_le32(to_rpd(ibpd)->pdn);
	err = rnic_cmd_rereg_mr(dev, mr->uctx, ibmr->lkey, &cmd);
	rnic_free_pbl(dev, &pbuf);
	if (err) {
		ib_umem_release(umem);
		return ERR_PTR(err);
	}
	ib_umem_release(mr->umem);
	mr->umem = umem;
	mr->access = access;
	return NULL;
}

static struct ib_mr *rnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				   u32 max_num_sg)
{
	struct rnic_dev *dev = to_rdev(ibpd->device);
	struct rnic_cmd_reg_mr cmd = {};
	struct rnic_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(le32_to_cpu(dev->hw.cap_flags) & RNIC_DEV_CAP_FAST_REG))
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg ||
	    max_num_sg > le32_to_cpu(dev->hw.max_fast_reg_page_list_len))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages = dma_alloc_coherent(&dev->pdev->dev,
				       PAGE_ALIGN(max_num_sg * sizeof(__le64)),
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free;
	}
	cmd.flags = cpu_to_le32(RNIC_MR_FLAG_FAST_REG);
	cmd.max_pages = cpu_to_le32(max_num_sg);
	err = rnic_mr_register(ibpd, &cmd, mr);
	if (err)
		goto err_pages;
	return &mr->ibmr;

err_pages:
	dma_free_coherent(&dev->pdev->dev,
			  PAGE_ALIGN(max_num_sg * sizeof(__le64)), mr->pages,
			  mr->pages_dma);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

static int rnic_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct rnic_mr *mr = to_rmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

static int rnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
			  int sg_nents, unsigned int *sg_offset)
{
	struct rnic_mr *mr = to_rmr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rnic_set_page);
}

static int rnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibmr->device);
	struct rnic_mr *mr = to_rmr(ibmr);

	rnic_cmd_dereg_mr(dev, mr->uctx, ibmr->lkey);
	if (mr->pages)
		dma_free_coherent(&dev->pdev->dev,
				  PAGE_ALIGN(mr->max_pages * sizeof(__le64)),
				  mr->pages, mr->pages_dma);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

/* ---- address handles ---- */

static int rnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			  struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibah->device);
	struct rnic_ah *ah = to_rah(ibah);
	int err;

	err = rnic_ah_to_av(dev, init->ah_attr, &ah->av);
	if (err)
		return err;
	if (udata) {
		struct rnic_ucreate_ah_resp resp = {};

		memcpy(resp.dmac, ah->av.dmac, ETH_ALEN);
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
	}
	return err;
}

/*
 * The MAD layer matches a response to its request by the request's AH
 * (rcv_has_same_gid()): without this, every response is taken for
 * another's and dropped.
 */
static int rnic_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	rnic_av_to_ah(to_rdev(ibah->device), &to_rah(ibah)->av, attr);
	return 0;
}

static int rnic_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* ---- counters ---- */

const struct rdma_stat_desc rnic_counter_descs[] = {
	[RNIC_CNT_TX_PKTS].name = "tx_pkts",
	[RNIC_CNT_RX_PKTS].name = "rx_pkts",
	[RNIC_CNT_TX_BYTES].name = "tx_bytes",
	[RNIC_CNT_RX_BYTES].name = "rx_bytes",
	[RNIC_CNT_RETRANSMITS].name = "retransmits",
	[RNIC_CNT_ACK_TIMEOUTS].name = "ack_timeouts",
	[RNIC_CNT_RNR_NAK_RCVD].name = "rnr_nak_rcvd",
	[RNIC_CNT_RNR_NAK_SENT].name = "rnr_nak_sent",
	[RNIC_CNT_SEQ_NAK_RCVD].name = "seq_nak_rcvd",
	[RNIC_CNT_SEQ_NAK_SENT].name = "seq_nak_sent",
	[RNIC_CNT_DUP_REQ].name = "duplicate_request",
	[RNIC_CNT_RX_ICRC_ERR].name = "rx_icrc_errors",
	[RNIC_CNT_RX_DROPPED].name = "rx_dropped",
	[RNIC_CNT_TX_LOSS_INJECTED].name = "tx_loss_injected",
	[RNIC_CNT_LOOPBACK_PKTS].name = "loopback_pkts",
	[RNIC_CNT_CQE_ERR].name = "cqe_errors",
	[RNIC_CNT_ETH_TX_PKTS].name = "eth_tx_pkts",
	[RNIC_CNT_ETH_RX_PKTS].name = "eth_rx_pkts",
	[RNIC_CNT_ETH_RX_DROPPED].name = "eth_rx_dropped",
	[RNIC_CNT_GUEST_ERR].name = "guest_errors",
	[RNIC_CNT_TX_REORDER_INJECTED].name = "tx_reorder_injected",
	[RNIC_CNT_TX_DUP_INJECTED].name = "tx_duplicate_injected",
	[RNIC_CNT_TX_CORRUPT_INJECTED].name = "tx_corrupt_injected",
	[RNIC_CNT_TX_DELAY_INJECTED].name = "tx_delay_injected",
	[RNIC_CNT_CWND_CUTS].name = "cwnd_cuts",
	[RNIC_CNT_TAIL_PROBES].name = "tail_probes",
	[RNIC_CNT_RAW_TX_PKTS].name = "raw_tx_pkts",
	[RNIC_CNT_RAW_RX_PKTS].name = "raw_rx_pkts",
	[RNIC_CNT_RAW_RX_DROPPED].name = "raw_rx_dropped",
	[RNIC_CNT_TX_ROCE_V1].name = "tx_roce_v1_pkts",
	[RNIC_CNT_RX_ROCE_V1].name = "rx_roce_v1_pkts",
	[RNIC_CNT_ECN_CE_RCVD].name = "ecn_ce_rcvd",
	[RNIC_CNT_CNP_SENT].name = "cnp_sent",
	[RNIC_CNT_CNP_RCVD].name = "cnp_rcvd",
	[RNIC_CNT_SQ_DOORBELLS].name = "sq_doorbells",
	[RNIC_CNT_SQ_DBREC_WQES].name = "sq_dbrec_wqes",
	[RNIC_CNT_OOO_KEPT].name = "ooo_kept",
	[RNIC_CNT_SR_RESENDS].name = "sr_resends",
	[RNIC_CNT_IB_TX_NOT_ACTIVE].name = "ib_tx_port_not_active",
	[RNIC_CNT_IB_RX_NOT_ACTIVE].name = "ib_rx_port_not_active",
	[RNIC_CNT_IB_RX_DLID_ERR].name = "ib_rx_dlid_errors",
	[RNIC_CNT_IB_RX_PKEY_ERR].name = "ib_rx_pkey_errors",
	[RNIC_CNT_MAX + RNIC_DRV_CNT_IRQ_RECOVERED].name = "irq_recovered",
	[RNIC_CNT_MAX + RNIC_DRV_CNT_GID_RESTORED].name = "gid_restored",
	[RNIC_CNT_MAX + RNIC_DRV_CNT_EQ_OVERFLOWS].name = "eq_overflows",
};

static_assert(ARRAY_SIZE(rnic_counter_descs) ==
	      RNIC_CNT_MAX + RNIC_DRV_CNT_MAX);

/* The uverbs structs keep the sizes the provider was built with. */
static_assert(sizeof(struct rnic_ualloc_ucontext_resp) == 40);
static_assert(sizeof(struct rnic_ucreate_cq) == 16);
static_assert(sizeof(struct rnic_ucreate_cq_resp) == 8);
static_assert(sizeof(struct rnic_ucreate_qp) == 88);
static_assert(sizeof(struct rnic_ucreate_wq) == 16);
static_assert(sizeof(struct rnic_ucreate_qp_resp) == 8);
static_assert(sizeof(struct rnic_ucreate_srq) == 16);
static_assert(sizeof(struct rnic_ucreate_srq_resp) == 8);
static_assert(sizeof(struct rnic_umodify_srq) == 16);
static_assert(sizeof(struct rnic_ucreate_ah_resp) == 8);

static struct rdma_hw_stats *rnic_alloc_hw_port_stats(struct ib_device *ibdev,
						      u32 port)
{
	return rdma_alloc_hw_stats_struct(rnic_counter_descs,
					  RNIC_CNT_MAX + RNIC_DRV_CNT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int rnic_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	int i;

	for (i = 0; i < RNIC_CNT_MAX && i < stats->num_counters; i++)
		stats->value[i] = rnic_read_counter(dev, i);
	for (i = 0; i < RNIC_DRV_CNT_MAX &&
	     RNIC_CNT_MAX + i < stats->num_counters; i++)
		stats->value[RNIC_CNT_MAX + i] =
			atomic64_read(&dev->drv_cnt[i]);
	return stats->num_counters;
}

/* ---- registration ---- */

static const struct ib_device_ops rnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = RNIC_UVERBS_ABI_VERSION,

	.add_gid = rnic_add_gid,
	.alloc_hw_port_stats = rnic_alloc_hw_port_stats,
	.alloc_mr = rnic_alloc_mr,
	.alloc_mw = rnic_alloc_mw,
	.alloc_pd = rnic_alloc_pd,
	.alloc_ucontext = rnic_alloc_ucontext,
	.attach_mcast = rnic_attach_mcast,
	.create_ah = rnic_create_ah,
	.create_cq = rnic_create_cq,
	.create_flow = rnic_create_flow,
	.create_qp = rnic_create_qp,
	.create_rwq_ind_table = rnic_create_rwq_ind_table,
	.create_srq = rnic_create_srq,
	.create_wq = rnic_create_wq,
	.create_user_ah = rnic_create_ah,
#ifdef RNIC_HAVE_CREATE_USER_CQ
	.create_user_cq = rnic_create_cq,
#endif
	.dealloc_mw = rnic_dealloc_mw,
	.dealloc_pd = rnic_dealloc_pd,
	.dealloc_ucontext = rnic_dealloc_ucontext,
	.del_gid = rnic_del_gid,
	.dereg_mr = rnic_dereg_mr,
	.detach_mcast = rnic_detach_mcast,
	.destroy_ah = rnic_destroy_ah,
	.destroy_cq = rnic_destroy_cq,
	.destroy_flow = rnic_destroy_flow,
	.destroy_qp = rnic_destroy_qp,
	.destroy_rwq_ind_table = rnic_destroy_rwq_ind_table,
	.destroy_srq = rnic_destroy_srq,
	.destroy_wq = rnic_destroy_wq,
	.disassociate_ucontext = rnic_disassociate_ucontext,
	.fill_res_cq_entry = rnic_fill_res_cq_entry,
	.fill_res_mr_entry = rnic_fill_res_mr_entry,
	.fill_res_qp_entry = rnic_fill_res_qp_entry,
	.get_dev_fw_str = rnic_get_dev_fw_str,
	.get_dma_mr = rnic_get_dma_mr,
	.get_hw_stats = rnic_get_hw_stats,
	.get_link_layer = rnic_get_link_layer,
	.get_port_immutable = rnic_get_port_immutable,
	.map_mr_sg = rnic_map_mr_sg,
	.mmap = rnic_mmap,
	.mmap_free = rnic_mmap_free,
	.modify_qp = rnic_modify_qp,
	.modify_srq = rnic_modify_srq,
	.modify_wq = rnic_modify_wq,
	.poll_cq = rnic_poll_cq,
	.post_recv = rnic_post_recv,
	.post_send = rnic_post_send,
	.post_srq_recv = rnic_post_srq_recv,
	.query_ah = rnic_query_ah,
	.query_device = rnic_query_device,
	.query_gid = rnic_query_gid,
	.query_pkey = rnic_query_pkey,
	.query_port = rnic_query_port,
	.query_qp = rnic_query_qp,
	.query_srq = rnic_query_srq,
#ifdef RNIC_HAVE_REG_USER_MR_DMAH
	.reg_user_mr = rnic_reg_user_mr_dmah,
#else
	.reg_user_mr = rnic_reg_user_mr,
#endif
	.rereg_user_mr = rnic_rereg_user_mr,
	.req_notify_cq = rnic_req_notify_cq,
#ifdef RNIC_HAVE_RESIZE_USER_CQ
	.resize_user_cq = rnic_resize_user_cq,
#else
	.resize_cq = rnic_resize_cq,
#endif

	INIT_RDMA_OBJ_SIZE(ib_ah, rnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, rnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, rnic_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, rnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_rwq_ind_table, rnic_ind_table, ibtbl),
	INIT_RDMA_OBJ_SIZE(ib_srq, rnic_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rnic_ucontext, ibuc),
};

int rnic_ib_register(struct rnic_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	int err;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = dev->num_ceqs;
	ibdev->dev.parent = &dev->pdev->dev;
	if (dev->ib) {
		/* An IB HCA's node GUID is the one its SMA reports. */
		ibdev->node_guid = cpu_to_be64(le64_to_cpu(dev->hw.node_guid));
	} else {
		const u8 *mac = dev->ndev->dev_addr;
		u8 guid[8];

		/* EUI-64 from the MAC. */
		guid[0] = mac[0] ^ 2;
		guid[1] = mac[1];
		guid[2] = mac[2];
		guid[3] = 0xff;
		guid[4] = 0xfe;
		guid[5] = mac[3];
		guid[6] = mac[4];
		guid[7] = mac[5];
		memcpy(&ibdev->node_guid, guid, sizeof(guid));
	}
	strscpy(ibdev->node_desc, dev->ib ? "rnic InfiniBand HCA" :
		"rnic RoCEv2 RNIC", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &rnic_dev_ops);
	if (dev->ib)
		rnic_ib_set_ops(dev);

	/* An IB port has no netdev of its own: IPoIB makes one over it. */
	err = dev->ib ? 0 : ib_device_set_netdev(ibdev, dev->ndev, RNIC_PORT);
	if (err)
		return err;
	err = ib_register_device(ibdev, "rnic%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->pdev->dev, "ib_register_device failed: %d\n",
			err);
		return err;
	}
	if (dev->ib) {
		err = rnic_ib_start(dev);
		if (err) {
			ib_unregister_device(ibdev);
			return err;
		}
	}
	mutex_lock(&dev->link_lock);
	dev->ib_registered = true;
	mutex_unlock(&dev->link_lock);
	/* Port events start now; report the state they start from. */
	rnic_net_link_update(dev);
	return 0;
}

/*
 * On removal ib_core destroys the objects of running verbs programs under
 * them.  Their CQ rings are their own memory and stay readable, but
 * nothing would complete there any more, so a program waiting for a
 * completion would wait forever.  Moving each user QP to ERR first makes
 * the device flush every posted WQE into those CQs as a WR_FLUSH_ERR
 * completion: the program sees its work fail and can go.
 */
static void rnic_flush_user_qps(struct rnic_dev *dev)
{
	struct rnic_cmd_modify_qp cmd;
	unsigned long index = 0;
	struct rnic_qp *qp;
	u16 uctx;

	for (;;) {
		/* The xarray lock keeps destroy_qp from freeing the QP. */
		xa_lock_irq(&dev->qp_xa);
		qp = xa_find(&dev->qp_xa, &index, ULONG_MAX, XA_PRESENT);
		while (qp && !qp->user)
			qp = xa_find_after(&dev->qp_xa, &index, ULONG_MAX,
					   XA_PRESENT);
		uctx = qp ? qp->uctx : 0;
		xa_unlock_irq(&dev->qp_xa);
		if (!qp)
			break;

		memset(&cmd, 0, sizeof(cmd));
		cmd.qpn = cpu_to_le32(index);
		cmd.attr_mask = cpu_to_le32(RNIC_QP_ATTR_STATE);
		cmd.attr.qp_state = RNIC_QPS_ERR;
		/* A QP destroyed meanwhile just fails the command. */
		rnic_cmd_modify_qp(dev, uctx, &cmd);
		index++;
	}
}

void rnic_ib_unregister(struct rnic_dev *dev)
{
	if (!dev->ib_registered)
		return;
	mutex_lock(&dev->link_lock);
	dev->ib_registered = false;
	mutex_unlock(&dev->link_lock);
	rnic_flush_user_qps(dev);
	if (dev->ib)
		rnic_ib_stop(dev);
	ib_unregister_device(&dev->ibdev);
}
