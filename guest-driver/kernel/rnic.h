/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rnic: Linux driver for the rnic emulated RoCEv2 RNIC.
 *
 * Shared declarations of the PCI, command queue, event queue, verbs and
 * Ethernet parts of the driver.
 */
#ifndef RNIC_H
#define RNIC_H

#include <linux/pci.h>
#include <linux/netdevice.h>
#include <linux/xarray.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/rnic-abi.h>

#include "rnic_hw.h"

/*
 * Doorbells reach the device as single 64-bit writes (it ignores any other
 * width, and a split write would not be atomic), and rings, page lists and
 * the user doorbell pages are laid out in 4 KiB pages.  dkms.conf limits
 * the build to such kernels; these catch any other build.
 */
#ifndef CONFIG_64BIT
#error "rnic needs a 64-bit kernel (doorbells are 64-bit MMIO writes)"
#endif
static_assert(PAGE_SIZE == RNIC_DB_PAGE_SIZE,
	      "rnic needs 4 KiB pages (doorbell and ring page size)");

#define DRV_NAME		"rnic"
/* Reported by ethtool -i and modinfo: PACKAGE_VERSION in dkms.conf. */
#define RNIC_DRV_VERSION	"0.1"

#define RNIC_CMD_TIMEOUT_MS	5000
/*
 * A virtual wire carries jumbo frames, so the netdev starts with room for
 * RoCE path MTU 4096 (iboe_get_mtu() leaves 4104 of 4200): a quarter of
 * the frames of MTU 1024 for the same data, and the per-frame costs
 * dominate.  On a 1500-byte bridge, or towards a peer with a smaller MTU,
 * lower it with "ip link set DEV mtu 1500" as on any NIC.
 */
#define RNIC_NET_DEFAULT_MTU	4200
#define RNIC_NET_MAX_MTU	9000
/* DESTROY_QP of a QP still flushing: retries 1-2 ms apart. */
#define RNIC_DESTROY_QP_TRIES	5000
#define RNIC_CMDQ_LOG_SIZE	5
#define RNIC_EQ_LOG_SIZE	10
/* How often the watchdog looks for EQ entries no interrupt announced. */
#define RNIC_EQ_WATCHDOG_MS	250
/* The largest GID table the driver uses (the device's is capped at it). */
#define RNIC_MAX_GID_TBL	256
#define RNIC_ASYNC_EQN		0
#define RNIC_NET_LOG_SIZE	8
#define RNIC_PORT		1

/* MSI-X vectors, see design.md. */
#define RNIC_VEC_ASYNC		0
#define RNIC_VEC_NET		1
#define RNIC_VEC_COMP_FIRST	2

#include "rnic_cmdq.h"

struct rnic_eq {
	struct rnic_dev *dev;
	struct rnic_eqe *ring;
	dma_addr_t ring_dma;
	size_t ring_bytes;
	u32 eqn;
	u32 log_size;
	u32 ci;
	int vector;			/* MSI-X vector index */
	bool created;			/* CREATE_EQ succeeded */
	bool irq_requested;
	/* The ci the watchdog last saw with an entry pending, plus one. */
	u32 wd_stuck_ci;
	char name[32];
};

/* Ethernet function state, in netdev_priv(). */
struct rnic_net_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;
};

struct rnic_net {
	struct rnic_dev *dev;
	struct net_device *ndev;
	struct napi_struct napi;

	struct rnic_net_desc *txq;
	dma_addr_t txq_dma;
	struct rnic_net_buf *tx_buf;
	u32 tx_pi;
	u32 tx_ci;

	struct rnic_net_desc *rxq;
	dma_addr_t rxq_dma;
	struct rnic_net_buf *rx_buf;
	u32 rx_pi;
	u32 rx_ci;
	u32 rx_buf_len;

	u32 ring_size;
	bool up;			/* between ndo_open and ndo_stop */

	/*
	 * A refill that NAPI could not complete with GFP_ATOMIC is retried
	 * from process context; without it an emptied RX ring raises no
	 * interrupt and never recovers.  refill_enabled, under refill_lock,
	 * keeps the work from being queued while NAPI is being disabled.
	 */
	struct delayed_work refill_work;
	spinlock_t refill_lock;		/* guards refill_enabled */
	bool refill_enabled;
	bool irq_requested;
	char irq_name[32];
};

/*
 * Counters of the driver's own, in hw_counters after the device's:
 * IRQ_RECOVERED counts EQs whose entries waited a whole watchdog period
 * with no interrupt, and which the watchdog then handled; GID_RESTORED
 * counts GID entries the device changed by itself and the driver set
 * back to what the stack holds.
 */
enum rnic_drv_counter {
	RNIC_DRV_CNT_IRQ_RECOVERED,
	RNIC_DRV_CNT_GID_RESTORED,
	RNIC_DRV_CNT_EQ_OVERFLOWS,
	RNIC_DRV_CNT_MAX
};

struct rnic_dev {
	struct ib_device ibdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *kdb;		/* kernel doorbell page (page 0) */
	resource_size_t db_bar_start;
	u32 db_pages;

	struct rnic_cmdq cmdq;
	struct rnic_device_attr hw;	/* little-endian copy from QUERY_DEVICE */
	u32 gid_tbl_len;
	u32 max_msg_sz;
	u32 link_speed_mbps;
	u8 max_mtu;			/* enum rnic_mtu */
	bool ib;			/* link-layer=infiniband (rnic_ib.c) */
	unsigned long ib_events;	/* IB port events for link_work */
	u32 ib_cap_set;			/* port capabilities the stack set */
	struct ib_mad_agent *trap_agent; /* sends the SMA's traps from QP0 */

	int nvec;
	struct rnic_eq async_eq;
	struct rnic_eq *ceqs;
	int num_ceqs;

	struct net_device *ndev;
	struct work_struct link_work;	/* PORT_ACTIVE/PORT_DOWN events */
	struct work_struct gid_work;	/* GID_CHANGE events */
	/* GID indexes the device changed, for gid_work (bit n: index n). */
	DECLARE_BITMAP(gid_changed, RNIC_MAX_GID_TBL);
	struct work_struct fatal_work;	/* IB_EVENT_DEVICE_FATAL */
	struct delayed_work eq_watchdog;	/* lost interrupts */
	atomic64_t drv_cnt[RNIC_DRV_CNT_MAX];
	struct mutex link_lock;		/* carrier, port_active, ndev */
	bool port_active;
	bool ib_registered;

	struct xarray cq_xa;		/* cqn -> rnic_cq, for events */
	struct xarray qp_xa;		/* qpn -> rnic_qp, for events and CQEs */
	struct xarray srq_xa;
};

static inline struct rnic_dev *to_rdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rnic_dev, ibdev);
}

struct rnic_ucontext {
	struct ib_ucontext ibuc;
	u32 uctx;
	struct rdma_user_mmap_entry *db_entry;
};

struct rnic_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	u64 pfn;
};

struct rnic_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u16 uctx;
};

/* The device knows a window by its rkey's index; binds change the key. */
struct rnic_mw {
	struct ib_mw ibmw;
	u16 uctx;
};

/* A ring in kernel memory: contiguous DMA, described with levels 0. */
struct rnic_kring {
	void *buf;
	dma_addr_t dma;
	size_t bytes;
};

struct rnic_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 eqn;			/* where its completion events go */
	u16 uctx;
	u32 log_size;
	spinlock_t lock;		/* kernel CQ: poll vs. arm */
	struct rnic_kring kring;	/* kernel CQ: dbrec page + CQEs */
	struct rnic_cqe *cqes;
	struct rnic_cq_dbrec *dbrec;
	u32 ci;
	struct ib_umem *umem;		/* user CQ */
};

struct rnic_wq {
	struct rnic_kring kring;
	u32 log_size;
	u32 pi;
	u32 ci;
	u32 max_sge;
	struct ib_umem *umem;
	/*
	 * Kernel SQ and RQ: the wr_id of each slot.  A completion names
	 * only the slot; its wr_id comes from here, never from the CQE, so
	 * a faulty device cannot hand a ULP a wr_cqe it did not post.
	 */
	u64 *wr_id;
};

struct rnic_qp {
	struct ib_qp ibqp;
	u32 qpn;
	u16 uctx;
	u8 type;			/* enum rnic_qp_type */
	bool sig_all;
	bool user;
	u32 max_inline;
	u32 qkey;			/* from MODIFY_QP, for UD sends */
	bool has_srq;
	bool sq_dbrec;			/* SQ: struct rnic_sq_dbrec page first */
	struct ib_qp_cap cap;		/* as granted at creation */
	spinlock_t sq_lock;		/* kernel SQ */
	spinlock_t rq_lock;		/* kernel RQ */
	struct rnic_wq sq;
	struct rnic_wq rq;
	enum ib_qp_state state;
};

struct rnic_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	u16 uctx;
	u32 limit;
	/*
	 * The receives that may be outstanding: the ring has room for twice
	 * as many where it can, because SRQ completions come out of order
	 * and a slot is reused only once its own completion is polled.
	 */
	u32 max_wr;
	spinlock_t lock;		/* guards wq (kernel SRQs) and limit */
	struct rnic_wq wq;
	/*
	 * Kernel SRQ: the slots posted and not yet completed.  Completions
	 * come out of order, so the ring's ci says how many slots are free,
	 * not which: a post never reuses a slot still set here (its wr_id
	 * would be lost), and a CQE must name a slot set here.
	 */
	unsigned long *posted;
};

struct rnic_mr {
	struct ib_mr ibmr;
	u16 uctx;
	int access;			/* user MR: as registered */
	struct ib_umem *umem;
	/* FAST_REG: the page array handed to the REG_MR WQE. */
	__le64 *pages;
	dma_addr_t pages_dma;
	u32 max_pages;
	u32 npages;
};

struct rnic_ah {
	struct ib_ah ibah;
	struct rnic_av av;
};

#define to_rcq(c)	container_of(c, struct rnic_cq, ibcq)
#define to_rqp(q)	container_of(q, struct rnic_qp, ibqp)
#define to_rpd(p)	container_of(p, struct rnic_pd, ibpd)
#define to_rmr(m)	container_of(m, struct rnic_mr, ibmr)
#define to_rah(a)	container_of(a, struct rnic_ah, ibah)
#define to_rsrq(s)	container_of(s, struct rnic_srq, ibsrq)
#define to_ruc(u)	container_of(u, struct rnic_ucontext, ibuc)

/* Register and doorbell access. */
static inline u32 rnic_rd32(struct rnic_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void rnic_wr32(struct rnic_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

/*
 * One 8-byte read: the LO-then-HI alternative relies on a HI latch the
 * whole device shares, and the RDMA hw_counters and ethtool -S readers are
 * not serialised against each other.
 */
static inline u64 rnic_read_counter(struct rnic_dev *dev, unsigned int idx)
{
	return readq(dev->regs + RNIC_REG_CNT_BASE + 8 * idx);
}

static inline void rnic_ring_db(struct rnic_dev *dev, u32 off, u32 qn,
				u64 flags, u32 idx)
{
	u64 v = (qn & RNIC_DB_QN_MASK) | flags | ((u64)idx << 32);

	/* The ring entries must be visible before the device sees the index. */
	dma_wmb();
	writeq(v, dev->kdb + off);
}

/* Pins user memory; the call was renamed after 6.12 (Kbuild). */
static inline struct ib_umem *rnic_umem_get(struct ib_device *ibdev,
					    unsigned long addr, size_t size,
					    int access)
{
#ifdef RNIC_HAVE_IB_UMEM_GET_VA
	return ib_umem_get_va(ibdev, addr, size, access);
#else
	return ib_umem_get(ibdev, addr, size, access);
#endif
}

/* rnic_eq.c */
int rnic_eqs_init(struct rnic_dev *dev);
void rnic_eqs_destroy(struct rnic_dev *dev);
u32 rnic_comp_eqn(struct rnic_dev *dev, int comp_vector);

/* Page lists and kernel rings, in rnic_verbs.c. */
struct rnic_pbl_buf {
	void *l1;
	dma_addr_t l1_dma;
	size_t l1_bytes;
	void **l2;
	dma_addr_t *l2_dma;
	u32 nl2;
};

int rnic_build_umem_pbl(struct rnic_dev *dev, struct ib_umem *umem,
			unsigned long pgsz, struct rnic_pbl *pbl,
			struct rnic_pbl_buf *buf);
int rnic_build_ring_pbl(struct rnic_dev *dev, struct ib_umem *umem,
			u32 npages, struct rnic_pbl *pbl,
			struct rnic_pbl_buf *buf);
void rnic_free_pbl(struct rnic_dev *dev, struct rnic_pbl_buf *buf);
int rnic_kring_alloc(struct rnic_dev *dev, struct rnic_kring *r, size_t bytes);
void rnic_kring_free(struct rnic_dev *dev, struct rnic_kring *r);
void rnic_kring_pbl(const struct rnic_kring *r, struct rnic_pbl *pbl);

/* rnic_verbs.c */
/* Names of the RNIC_CNT_* counters, indexed by counter. */
extern const struct rdma_stat_desc rnic_counter_descs[];
int rnic_ib_register(struct rnic_dev *dev);
void rnic_ib_unregister(struct rnic_dev *dev);
void rnic_port_event(struct rnic_dev *dev, bool active);

/* UD, QP1 and QP0 carry datagrams: an AV in each send WQE, a GRH slot. */
static inline bool rnic_qpt_is_dgram(u8 type)
{
	return type == RNIC_QPT_UD || type == RNIC_QPT_GSI ||
	       type == RNIC_QPT_SMI;
}

/* rnic_ib.c: the InfiniBand port */
int rnic_ib_query_port(struct rnic_dev *dev, struct ib_port_attr *a);
int rnic_ib_query_gid(struct rnic_dev *dev, int index, union ib_gid *gid);
int rnic_ib_query_pkey(struct rnic_dev *dev, u16 index, u16 *pkey);
void rnic_ib_set_ops(struct rnic_dev *dev);
void rnic_ib_port_event(struct rnic_dev *dev, u8 eqe_type);
void rnic_ib_dispatch_events(struct rnic_dev *dev);
int rnic_ib_start(struct rnic_dev *dev);
void rnic_ib_stop(struct rnic_dev *dev);
int rnic_ib_ah_to_av(const struct rdma_ah_attr *ah, struct rnic_av *av);
void rnic_ib_av_to_ah(const struct rnic_av *av, struct rdma_ah_attr *ah);

/* rnic_qp.c */
int rnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int rnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata);
int rnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init_attr);
int rnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int rnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int rnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
int rnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int rnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void rnic_av_to_ah(struct rnic_dev *dev, const struct rnic_av *av,
		   struct rdma_ah_attr *ah);
int rnic_ah_to_av(struct rnic_dev *dev, const struct rdma_ah_attr *ah,
		  struct rnic_av *av);
int rnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int rnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int rnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int rnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

/* rnic_qp.c: rings and contexts, shared with rnic_rss.c */
u16 rnic_udata_uctx(struct ib_udata *udata);
void rnic_destroy_device_qp(struct rnic_dev *dev, u16 uctx, u32 qpn);
int rnic_qp_publish(struct rnic_dev *dev, struct rnic_qp *qp,
		    struct ib_udata *udata);
void rnic_wq_free(struct rnic_dev *dev, struct rnic_wq *wq);
int rnic_wq_user(struct rnic_dev *dev, struct rnic_wq *wq, u64 addr,
		 u32 size, u32 stride, struct rnic_pbl *pbl,
		 struct rnic_pbl_buf *pbuf);
int rnic_wq_kernel(struct rnic_dev *dev, struct rnic_wq *wq, u32 stride,
		   struct rnic_pbl *pbl);

/* rnic_rss.c: receive work queues, indirection tables, RSS QPs */
struct rnic_rwq {
	struct ib_wq ibwq;
	u32 qpn;			/* the device raw QP behind it */
	u16 uctx;
	struct rnic_wq sq;		/* one kernel page: never posted to */
	struct rnic_wq rq;
};

struct rnic_ind_table {
	struct ib_rwq_ind_table ibtbl;
};

struct ib_wq *rnic_create_wq(struct ib_pd *ibpd,
			     struct ib_wq_init_attr *attr,
			     struct ib_udata *udata);
int rnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr,
		   u32 attr_mask, struct ib_udata *udata);
int rnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int rnic_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			      struct ib_rwq_ind_table_init_attr *attr,
			      struct ib_udata *udata);
int rnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl);
int rnic_create_rss_qp(struct rnic_qp *qp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);

/* rnic_flow.c */
struct ib_flow *rnic_create_flow(struct ib_qp *ibqp,
				 struct ib_flow_attr *attr,
				 struct ib_udata *udata);
int rnic_destroy_flow(struct ib_flow *ibflow);

/* rnic_netdev.c */
int rnic_net_init(struct rnic_dev *dev);
void rnic_net_destroy(struct rnic_dev *dev);
void rnic_net_link_update(struct rnic_dev *dev);
void rnic_link_work(struct work_struct *work);
void rnic_gid_work(struct work_struct *work);
void rnic_fatal_work(struct work_struct *work);
void rnic_schedule_recovery(struct rnic_dev *dev);
void rnic_kick_qp_cqs(struct rnic_qp *qp);
void rnic_kick_kernel_cqs(struct rnic_dev *dev);
void rnic_mark_user_cqs_dead(struct rnic_dev *dev);
void rnic_qp_purge_cqes(struct rnic_qp *qp);

/* rnic_ethtool.c */
extern const struct ethtool_ops rnic_ethtool_ops;

/* rnic_restrack.c */
int rnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int rnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int rnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

#endif /* RNIC_H */
