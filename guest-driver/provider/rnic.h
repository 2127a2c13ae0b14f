/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rnic userspace provider: private objects.
 */
#ifndef RNIC_H
#define RNIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#include <ccan/minmax.h>
#include <rdma/rnic-abi.h>

#include "rnic_hw.h"
#include "rnic_ring.h"

#define RNIC_PAGE_SIZE		4096

/* qpn -> qp: two levels of 4096 pointers cover the 24-bit QPN space. */
#define RNIC_QP_TABLE_SHIFT	12
#define RNIC_QP_TABLE_SIZE	(1u << RNIC_QP_TABLE_SHIFT)
#define RNIC_QP_TABLE_MASK	(RNIC_QP_TABLE_SIZE - 1)

/* uverbs command and response layouts: core struct, then our udata. */
struct rnic_alloc_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct rnic_ualloc_ucontext_resp drv;
};

struct rnic_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct rnic_ucreate_cq drv;
};

struct rnic_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct rnic_ucreate_cq_resp drv;
};

struct rnic_resize_cq_cmd {
	struct ibv_resize_cq ibv_cmd;
	struct rnic_ucreate_cq drv;
};

struct rnic_resize_cq_resp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct rnic_ucreate_cq_resp drv;
};

struct rnic_create_cq_ex_cmd {
	struct ibv_create_cq_ex ibv_cmd;
	struct rnic_ucreate_cq drv;
};

struct rnic_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct rnic_ucreate_cq_resp drv;
};

struct rnic_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct rnic_ucreate_qp drv;
};

/* The extended create: RSS QPs (indirection table, hash) need it. */
struct rnic_create_qp_ex_cmd {
	struct ibv_create_qp_ex ibv_cmd;
	struct rnic_ucreate_qp drv;
};

struct rnic_create_qp_ex_resp {
	struct ib_uverbs_ex_create_qp_resp ibv_resp;
	struct rnic_ucreate_qp_resp drv;
};

struct rnic_create_wq_cmd {
	struct ibv_create_wq ibv_cmd;
	struct rnic_ucreate_wq drv;
};

struct rnic_create_wq_resp {
	struct ib_uverbs_ex_create_wq_resp ibv_resp;
	struct rnic_ucreate_wq_resp drv;
};

struct rnic_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct rnic_ucreate_qp_resp drv;
};

struct rnic_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct rnic_ucreate_srq drv;
};

struct rnic_modify_srq_cmd {
	struct ibv_modify_srq ibv_cmd;
	struct rnic_umodify_srq drv;
};

struct rnic_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct rnic_ucreate_srq_resp drv;
};

struct rnic_create_ah_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct rnic_ucreate_ah_resp drv;
};

struct rnic_device {
	struct verbs_device ibv_dev;
};

/*
 * Empty polls spin this long, then nap this long each (see
 * rnic_cq_poll_idle); RNIC_POLL_SPIN_US and RNIC_POLL_NAP_US override
 * them, and a nap of 0 spins for ever.
 */
#define RNIC_POLL_SPIN_US_DEFAULT	600
#define RNIC_POLL_NAP_US_DEFAULT	10
#define RNIC_POLL_MAX_US		1000000
/*
 * An empty poll of a CQ whose send queue had at least this many WQEs
 * still outstanding at its last send completion naps at once
 * (RNIC_POLL_BACKLOG overrides; 0 turns it off).
 */
#define RNIC_POLL_BACKLOG_DEFAULT	16

struct rnic_context {
	struct verbs_context ibv_ctx;
	void *db;			/* this context's doorbell page */
	uint32_t uctx;

	/* Limits, from the kernel at context creation. */
	uint32_t max_inline;
	uint32_t max_sge;		/* send */
	uint32_t max_recv_sge;
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	bool has_clock;			/* RNIC_DB_CLOCK and CQE timestamps */
	bool ib;			/* the port's link layer is InfiniBand */
	uint32_t caps;			/* RNIC_UCTX_CAP_* */
	/* Empty polls: how long they spin, then how long each naps (ns). */
	uint64_t poll_spin_ns;
	uint64_t poll_nap_ns;
	uint32_t poll_backlog;		/* WQEs; 0: never nap at once */
	/* CLOCK_MONOTONIC ns of the first of a run of empty polls; 0: none. */
	_Atomic uint64_t idle_since;

	pthread_mutex_t qp_table_mutex;
	struct rnic_qp **qp_table[RNIC_QP_TABLE_SIZE];
};

/*
 * A protection domain, or a parent domain over one.  A parent domain shares
 * its protection domain's kernel handle, so every command that names it acts
 * on the protection domain; what it adds are the allocators that ring memory
 * of the objects created in it comes from.
 */
struct rnic_pd {
	struct ibv_pd ibv_pd;
	struct rnic_pd *protection_domain;	/* NULL: this is one */
	atomic_int refcount;		/* parent domains, custom rings */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/*
 * The resource_type a parent domain's allocator is called with: which ring
 * is being allocated.
 */
enum rnic_res_type {
	RNIC_RES_TYPE_SQ = 1,
	RNIC_RES_TYPE_RQ,
	RNIC_RES_TYPE_SRQ,
	RNIC_RES_TYPE_CQ,
};

/* Ring memory and where it came from, so that it goes back there. */
struct rnic_ring_mem {
	void *buf;
	size_t size;
	struct rnic_pd *owner;		/* parent domain whose allocator gave it */
	enum rnic_res_type type;
};

struct rnic_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	void *buf;			/* dbrec page, then the CQEs */
	size_t buf_size;
	struct rnic_pd *buf_owner;	/* see struct rnic_ring_mem */
	struct rnic_pd *parent_domain;	/* the CQ's, for a resize */
	struct rnic_cq_dbrec *dbrec;
	struct rnic_cqe *cqes;
	uint32_t cqn;
	unsigned int log_size;
	uint32_t ci;			/* free-running consumer index */
	/* Extended polling: the completion start/next_poll last parsed. */
	struct ibv_wc cur;
	/*
	 * The timestamp of the last CQE parsed; a completion we make up for
	 * a dead device keeps it, since the device can no longer tell.
	 */
	uint64_t cur_ts;
	/*
	 * WQEs its send queue still held when the last send completion was
	 * parsed here; under lock.  Unsignaled WQEs may leave it stale
	 * until the next send completion, which only costs a nap.
	 */
	uint32_t sq_backlog;
};

/* One work queue as the provider sees it; indices are free-running. */
struct rnic_wq {
	pthread_spinlock_t lock;
	void *buf;
	size_t buf_size;
	struct rnic_pd *buf_owner;	/* see struct rnic_ring_mem */
	size_t lead;			/* bytes of buf before the first WQE */
	struct ibv_pd *pd;		/* held while the WQ lives */
	enum rnic_res_type type;
	unsigned int log_size;
	unsigned int wqe_size;
	uint32_t head;			/* next index to post */
	/*
	 * SQ and RQ: the oldest index not yet retired.  SRQ: every index
	 * below it the device has taken (it takes SRQ WQEs in ring order,
	 * copying each as it takes it), so ring slots below it are free.
	 */
	uint32_t tail;
	uint32_t max_sge;
	/*
	 * Per ring slot; an SRQ's per 16-bit index (RNIC_SRQ_SHADOW), the
	 * index its CQEs carry, so that a receive a QP holds for long does
	 * not pin its ring slot: only its shadow entry, 64K posts away.
	 */
	uint64_t *wr_id;
	uint8_t *busy;			/* SRQ only: posted, not completed */
};

#define RNIC_SRQ_SHADOW (1u << 16)

static inline void *rnic_wq_slot(struct rnic_wq *wq, uint32_t slot)
{
	return (uint8_t *)wq->buf + wq->lead + (size_t)slot * wq->wqe_size;
}

struct rnic_srq {
	struct verbs_srq vsrq;
	struct rnic_wq wq;
	uint32_t srqn;
};

struct rnic_qp {
	struct verbs_qp vqp;
	struct rnic_wq sq;
	struct rnic_sq_dbrec *sq_dbrec;	/* NULL: every post rings */
	struct rnic_wq rq;		/* unused with an SRQ */
	struct rnic_srq *srq;
	struct rnic_cq *send_cq;
	struct rnic_cq *recv_cq;
	uint32_t qpn;
	uint32_t max_inline;
	enum ibv_qp_type type;
	bool sq_sig_all;
	bool rss;			/* receives through a WQ table only */
	/*
	 * Last state set by modify_qp or reported by query_qp: posting is
	 * refused in states whose queues take no work.  Written with sq.lock
	 * (and rq.lock) held, so each post path reads it under its own lock.
	 */
	enum ibv_qp_state state;

	/* Extended send API (ibv_wr_*) state between wr_start and complete. */
	uint32_t wr_start_head;
	struct rnic_send_wqe *wr_cur;
	int wr_err;
};

struct rnic_ah {
	struct ibv_ah ibv_ah;
	struct rnic_av av;
};

static inline struct rnic_context *to_rctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rnic_context, ibv_ctx.context);
}

static inline struct rnic_cq *to_rcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct rnic_cq, vcq.cq);
}

static inline struct rnic_qp *to_rqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct rnic_qp, vqp.qp);
}

static inline struct rnic_qp *qpx_to_rqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct rnic_qp, vqp.qp_ex);
}

static inline struct rnic_srq *to_rsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct rnic_srq, vsrq.srq);
}

static inline struct rnic_pd *to_rpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct rnic_pd, ibv_pd);
}

/* The protection domain a PD or parent domain stands for. */
static inline struct rnic_pd *rnic_pd_base(struct ibv_pd *ibpd)
{
	struct rnic_pd *pd = to_rpd(ibpd);

	return pd->protection_domain ? pd->protection_domain : pd;
}

/*
 * A parent domain stays allocated while an object created in it lives: its
 * allocator owns their rings and a resize allocates again.
 */
static inline void rnic_pd_get(struct ibv_pd *ibpd)
{
	if (ibpd && to_rpd(ibpd)->protection_domain)
		atomic_fetch_add(&to_rpd(ibpd)->refcount, 1);
}

static inline void rnic_pd_put(struct ibv_pd *ibpd)
{
	if (ibpd && to_rpd(ibpd)->protection_domain)
		atomic_fetch_sub(&to_rpd(ibpd)->refcount, 1);
}

static inline struct rnic_ah *to_rah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct rnic_ah, ibv_ah);
}

/* rnic_verbs.c */
int rnic_query_device(struct ibv_context *ctx,
		      const struct ibv_query_device_ex_input *input,
		      struct ibv_device_attr_ex *attr, size_t attr_size);
int rnic_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr);
int rnic_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
struct ibv_pd *rnic_alloc_pd(struct ibv_context *ctx);
struct ibv_pd *rnic_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr);
int rnic_dealloc_pd(struct ibv_pd *pd);
struct ibv_flow *rnic_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *attr);
int rnic_destroy_flow(struct ibv_flow *flow);
struct ibv_mr *rnic_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			   uint64_t hca_va, int access);
int rnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int rnic_dereg_mr(struct verbs_mr *vmr);
struct ibv_ah *rnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int rnic_destroy_ah(struct ibv_ah *ah);
int rnic_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);
int rnic_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);

/* rnic_cq.c */
struct ibv_cq *rnic_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
int rnic_resize_cq(struct ibv_cq *cq, int cqe);
void rnic_cq_clean(struct rnic_cq *cq, struct rnic_qp *qp);
void rnic_cqx_init(struct rnic_cq *cq);
int rnic_destroy_cq(struct ibv_cq *cq);
int rnic_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int rnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* rnic_qp.c */
struct ibv_qp *rnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);
int rnic_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int rnic_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr);
int rnic_destroy_qp(struct ibv_qp *qp);
int rnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int rnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
struct rnic_qp *rnic_find_qp(struct rnic_context *ctx, uint32_t qpn);
int rnic_store_qp(struct rnic_context *ctx, struct rnic_qp *qp);
void rnic_clear_qp(struct rnic_context *ctx, struct rnic_qp *qp);
void rnic_qp_set_state(struct rnic_qp *qp, enum ibv_qp_state state);
int rnic_qp_init_sq(struct rnic_context *ctx, struct rnic_qp *qp,
		    struct ibv_pd *pd, unsigned int log_size, uint32_t max_sge);
void rnic_ring_sq(struct rnic_qp *qp);

/* rnic_rss.c: receive work queues, indirection tables, RSS QPs */
/* The hash fields the device takes; the same bits as RNIC_RSS_*. */
#define RNIC_RX_HASH_FIELDS (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | \
			     IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | \
			     IBV_RX_HASH_SRC_PORT_TCP | \
			     IBV_RX_HASH_DST_PORT_TCP | \
			     IBV_RX_HASH_SRC_PORT_UDP | \
			     IBV_RX_HASH_DST_PORT_UDP)

struct ibv_qp *rnic_create_rss_qp(struct rnic_context *ctx,
				  struct ibv_qp_init_attr_ex *attr);
struct ibv_wq *rnic_create_wq(struct ibv_context *ctx,
			      struct ibv_wq_init_attr *attr);
int rnic_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int rnic_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *
rnic_create_rwq_ind_table(struct ibv_context *ctx,
			  struct ibv_rwq_ind_table_init_attr *attr);
int rnic_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);
bool rnic_op_allowed(enum ibv_qp_type type, uint8_t op);
bool rnic_sq_accepts(enum ibv_qp_state state);
int rnic_sq_begin(struct rnic_qp *qp, uint8_t op, uint64_t wr_id,
		  unsigned int send_flags, struct rnic_send_wqe **out);
int rnic_wqe_set_sges(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
		      const struct ibv_sge *sg, size_t num);
int rnic_wqe_add_inline(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
			const void *addr, size_t len);
void rnic_wqe_set_ud(struct rnic_send_wqe *wqe, struct ibv_ah *ah,
		     uint32_t remote_qpn, uint32_t remote_qkey);

/* rnic_wr.c: the ibv_wr_* extended send API */
void rnic_qpx_init(struct rnic_qp *qp, uint64_t ops);

/* rnic_mw.c */
struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rnic_dealloc_mw(struct ibv_mw *mw);
int rnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
int rnic_wqe_set_bind(struct rnic_qp *qp, struct rnic_send_wqe *wqe,
		      struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *bi);

/* rnic_srq.c */
struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int rnic_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int rnic_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rnic_destroy_srq(struct ibv_srq *srq);
int rnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

/* Shared helpers. */
int rnic_alloc_ring(struct ibv_pd *pd, struct rnic_ring_mem *mem);
void rnic_free_ring(struct rnic_ring_mem *mem);
int rnic_wq_init(struct rnic_wq *wq, struct ibv_pd *pd,
		 enum rnic_res_type type, unsigned int log_size,
		 unsigned int wqe_size, uint32_t max_sge, size_t lead);
void rnic_wq_destroy(struct rnic_wq *wq);
int rnic_build_recv_wqe(struct rnic_wq *wq, struct ibv_recv_wr *wr);
void rnic_ring_db(struct rnic_context *ctx, unsigned int offset, uint32_t qn,
		  uint32_t idx);

#endif /* RNIC_H */
