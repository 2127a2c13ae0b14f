// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: device matching, contexts and the shared ring
 * and doorbell helpers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "rnic.h"

static_assert(offsetof(struct rnic_alloc_context_resp, drv) ==
	      sizeof(struct ib_uverbs_get_context_resp), "context resp");
static_assert(offsetof(struct rnic_create_cq_cmd, drv) ==
	      sizeof(struct ibv_create_cq), "create_cq cmd");
static_assert(offsetof(struct rnic_create_cq_resp, drv) ==
	      sizeof(struct ib_uverbs_create_cq_resp), "create_cq resp");
static_assert(offsetof(struct rnic_create_qp_cmd, drv) ==
	      sizeof(struct ibv_create_qp), "create_qp cmd");
static_assert(offsetof(struct rnic_create_qp_resp, drv) ==
	      sizeof(struct ib_uverbs_create_qp_resp), "create_qp resp");
static_assert(offsetof(struct rnic_create_srq_cmd, drv) ==
	      sizeof(struct ibv_create_srq), "create_srq cmd");
static_assert(offsetof(struct rnic_create_srq_resp, drv) ==
	      sizeof(struct ib_uverbs_create_srq_resp), "create_srq resp");
static_assert(offsetof(struct rnic_create_qp_ex_cmd, drv) ==
	      sizeof(struct ibv_create_qp_ex), "create_qp_ex cmd");
static_assert(offsetof(struct rnic_create_qp_ex_resp, drv) ==
	      sizeof(struct ib_uverbs_ex_create_qp_resp), "create_qp_ex resp");
static_assert(offsetof(struct rnic_create_wq_cmd, drv) ==
	      sizeof(struct ibv_create_wq), "create_wq cmd");
static_assert(offsetof(struct rnic_create_wq_resp, drv) ==
	      sizeof(struct ib_uverbs_ex_create_wq_resp), "create_wq resp");
static_assert(offsetof(struct rnic_create_ah_resp, drv) ==
	      sizeof(struct ib_uverbs_create_ah_resp), "create_ah resp");

/*
 * Ring memory: page aligned and zeroed.  A parent domain's allocator gives it
 * when the object was created in one that has allocators and the allocator
 * does not defer to us; our own is also kept out of fork()ed children.
 */
int rnic_alloc_ring(struct ibv_pd *ibpd, struct rnic_ring_mem *mem)
{
	struct rnic_pd *pd = ibpd ? to_rpd(ibpd) : NULL;
	void *buf;

	mem->size = align(mem->size, RNIC_PAGE_SIZE);
	mem->owner = NULL;
	if (pd && pd->alloc) {
		buf = pd->alloc(ibpd, pd->pd_context, mem->size,
				RNIC_PAGE_SIZE, mem->type);
		if (buf != IBV_ALLOCATOR_USE_DEFAULT) {
			if (!buf)
				return ENOMEM;
			if ((uintptr_t)buf & (RNIC_PAGE_SIZE - 1)) {
				/* The device addresses rings by whole pages. */
				pd->free(ibpd, pd->pd_context, buf, mem->type);
				return EINVAL;
			}
			memset(buf, 0, mem->size);
			mem->owner = pd;
			mem->buf = buf;
			return 0;
		}
	}
	if (posix_memalign(&buf, RNIC_PAGE_SIZE, mem->size))
		return ENOMEM;
	memset(buf, 0, mem->size);
	if (ibv_dontfork_range(buf, mem->size)) {
		free(buf);
		return ENOMEM;
	}
	mem->buf = buf;
	return 0;
}

void rnic_free_ring(struct rnic_ring_mem *mem)
{
	struct rnic_pd *pd = mem->owner;

	if (!mem->buf)
		return;
	if (pd) {
		pd->free(&pd->ibv_pd, pd->pd_context, mem->buf, mem->type);
	} else {
		ibv_dofork_range(mem->buf, mem->size);
		free(mem->buf);
	}
	mem->buf = NULL;
}

static inline struct rnic_ring_mem rnic_wq_mem(struct rnic_wq *wq)
{
	return (struct rnic_ring_mem){ .buf = wq->buf, .size = wq->buf_size,
				       .owner = wq->buf_owner, .type = wq->type };
}

/* @lead bytes of the ring's memory go before its first WQE. */
int rnic_wq_init(struct rnic_wq *wq, struct ibv_pd *pd,
		 enum rnic_res_type type, unsigned int log_size,
		 unsigned int wqe_size, uint32_t max_sge, size_t lead)
{
	uint32_t entries = 1u << log_size;
	struct rnic_ring_mem mem = { .type = type };
	int ret = ENOMEM;

	memset(wq, 0, sizeof(*wq));
	wq->pd = pd;
	wq->log_size = log_size;
	wq->wqe_size = wqe_size;
	wq->max_sge = max_sge;
	wq->type = type;
	wq->lead = lead;
	wq->wr_id = calloc(type == RNIC_RES_TYPE_SRQ ? RNIC_SRQ_SHADOW : entries,
			   sizeof(*wq->wr_id));
	if (!wq->wr_id)
		return ENOMEM;
	if (type == RNIC_RES_TYPE_SRQ) {
		wq->busy = calloc(RNIC_SRQ_SHADOW, sizeof(*wq->busy));
		if (!wq->busy)
			goto err;
	}
	mem.size = lead + (size_t)entries * wqe_size;
	ret = rnic_alloc_ring(pd, &mem);
	if (ret)
		goto err;
	wq->buf = mem.buf;
	wq->buf_size = mem.size;
	wq->buf_owner = mem.owner;
	if (pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE)) {
		rnic_free_ring(&mem);
		wq->buf = NULL;
		ret = ENOMEM;
		goto err;
	}
	rnic_pd_get(pd);
	return 0;
err:
	free(wq->busy);
	free(wq->wr_id);
	wq->busy = NULL;
	wq->wr_id = NULL;
	return ret;
}

void rnic_wq_destroy(struct rnic_wq *wq)
{
	struct rnic_ring_mem mem = rnic_wq_mem(wq);

	if (!wq->buf)
		return;
	pthread_spin_destroy(&wq->lock);
	rnic_free_ring(&mem);
	free(wq->busy);
	free(wq->wr_id);
	wq->buf = NULL;
	rnic_pd_put(wq->pd);
}

/*
 * Build the receive WQE for wr at wq->head (caller holds wq->lock and has
 * checked space).  Returns 0 or EINVAL.
 */
int rnic_build_recv_wqe(struct rnic_wq *wq, struct ibv_recv_wr *wr)
{
	uint32_t slot = wq->head & ((1u << wq->log_size) - 1);
	struct rnic_recv_wqe *wqe;
	struct rnic_sge *sge;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge ||
	    wr->num_sge > RNIC_RQ_MAX_SGE)
		return EINVAL;

	wqe = rnic_wq_slot(wq, slot);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr->wr_id);
	wqe->num_sge = wr->num_sge;
	sge = (struct rnic_sge *)(wqe + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = htole64(wr->sg_list[i].addr);
		sge[i].length = htole32(wr->sg_list[i].length);
		sge[i].lkey = htole32(wr->sg_list[i].lkey);
	}
	if (wq->busy) {
		wq->wr_id[wq->head & (RNIC_SRQ_SHADOW - 1)] = wr->wr_id;
		wq->busy[wq->head & (RNIC_SRQ_SHADOW - 1)] = 1;
	} else {
		wq->wr_id[slot] = wr->wr_id;
	}
	wq->head++;
	return 0;
}

/*
 * One 64-bit doorbell write: queue number in bits 0..23, the new index in
 * bits 32..63.  Everything written to the rings before must be visible to
 * the device first.
 */
void rnic_ring_db(struct rnic_context *ctx, unsigned int offset, uint32_t qn,
		  uint32_t idx)
{
	uint64_t val = ((uint64_t)qn & RNIC_DB_QN_MASK) |
		       ((uint64_t)idx << 32);

	udma_to_device_barrier();
	mmio_write64_le((uint8_t *)ctx->db + offset, htole64(val));
}

static void rnic_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops rnic_ctx_ops = {
	.alloc_mw = rnic_alloc_mw,
	.alloc_parent_domain = rnic_alloc_parent_domain,
	.alloc_pd = rnic_alloc_pd,
	.attach_mcast = rnic_attach_mcast,
	.bind_mw = rnic_bind_mw,
	.create_ah = rnic_create_ah,
	.create_cq = rnic_create_cq,
	.create_cq_ex = rnic_create_cq_ex,
	.create_flow = rnic_create_flow,
	.create_qp = rnic_create_qp,
	.create_qp_ex = rnic_create_qp_ex,
	.create_rwq_ind_table = rnic_create_rwq_ind_table,
	.create_wq = rnic_create_wq,
	.create_srq = rnic_create_srq,
	.dealloc_mw = rnic_dealloc_mw,
	.dealloc_pd = rnic_dealloc_pd,
	.dereg_mr = rnic_dereg_mr,
	.destroy_ah = rnic_destroy_ah,
	.destroy_cq = rnic_destroy_cq,
	.destroy_flow = rnic_destroy_flow,
	.destroy_qp = rnic_destroy_qp,
	.destroy_rwq_ind_table = rnic_destroy_rwq_ind_table,
	.destroy_srq = rnic_destroy_srq,
	.destroy_wq = rnic_destroy_wq,
	.detach_mcast = rnic_detach_mcast,
	.free_context = rnic_free_context,
	.modify_qp = rnic_modify_qp,
	.modify_srq = rnic_modify_srq,
	.modify_wq = rnic_modify_wq,
	.poll_cq = rnic_poll_cq,
	.post_recv = rnic_post_recv,
	.post_send = rnic_post_send,
	.post_srq_recv = rnic_post_srq_recv,
	.query_device_ex = rnic_query_device,
	.query_port = rnic_query_port,
	.query_qp = rnic_query_qp,
	.query_rt_values = rnic_query_rt_values,
	.query_srq = rnic_query_srq,
	.reg_mr = rnic_reg_mr,
	.req_notify_cq = rnic_req_notify_cq,
	.rereg_mr = rnic_rereg_mr,
	.resize_cq = rnic_resize_cq,
};

/* The limits create_qp/create_cq/create_srq validate against. */
static int rnic_load_limits(struct rnic_context *ctx)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	struct ibv_device_attr_ex attr = {};
	struct ibv_port_attr pattr = {};
	int ret;

	ret = ibv_cmd_query_device_any(&ctx->ibv_ctx.context, NULL, &attr,
				       sizeof(attr), &resp, &resp_size);
	if (ret)
		return ret;
	/* The link layer is the device's, fixed for its life. */
	ret = rnic_query_port(&ctx->ibv_ctx.context, 1, &pattr);
	if (ret)
		return ret;
	ctx->ib = pattr.link_layer == IBV_LINK_LAYER_INFINIBAND;
	ctx->max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->max_cqe = attr.orig_attr.max_cqe;
	ctx->max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr.orig_attr.max_srq_sge;
	ctx->has_clock = attr.hca_core_clock != 0;
	/* uverbs reports min(send, recv) SGEs; the send limit came with the
	 * context. */
	ctx->max_recv_sge = min_t(uint32_t, attr.orig_attr.max_sge,
				  RNIC_RQ_MAX_SGE);
	return 0;
}

/* A count up to 'max' from the environment; 'def' when unset or bad. */
static uint64_t rnic_env_num(const char *name, uint64_t def, uint64_t max)
{
	const char *v = getenv(name);
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n > max)
		return def;
	return n;
}

/* A duration in microseconds from the environment, in ns. */
static uint64_t rnic_env_us(const char *name, uint64_t def_us)
{
	return rnic_env_num(name, def_us, RNIC_POLL_MAX_US) * 1000;
}

static struct verbs_context *rnic_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct rnic_alloc_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct rnic_context *ctx;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ctx->db = MAP_FAILED;
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);

	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err;

	if (resp.drv.uverbs_abi != RNIC_UVERBS_ABI_VERSION ||
	    resp.drv.sq_wqe_size != RNIC_SQ_WQE_SIZE ||
	    resp.drv.rq_wqe_size != RNIC_RQ_WQE_SIZE ||
	    resp.drv.cqe_size != RNIC_CQE_SIZE) {
		verbs_err(&ctx->ibv_ctx,
			  "kernel ABI %u (wqe %u/%u, cqe %u) does not match provider ABI %u\n",
			  resp.drv.uverbs_abi,
			  resp.drv.sq_wqe_size,
			  resp.drv.rq_wqe_size,
			  resp.drv.cqe_size, RNIC_UVERBS_ABI_VERSION);
		errno = EPROTONOSUPPORT;
		goto err;
	}

	ctx->uctx = resp.drv.uctx;
	ctx->max_inline = min_t(uint32_t, resp.drv.max_inline,
				RNIC_MAX_INLINE);
	ctx->max_sge = min_t(uint32_t, resp.drv.max_sge,
			     RNIC_SQ_MAX_SGE);
	ctx->caps = resp.drv.caps;
	ctx->poll_spin_ns = rnic_env_us("RNIC_POLL_SPIN_US",
					RNIC_POLL_SPIN_US_DEFAULT);
	ctx->poll_nap_ns = rnic_env_us("RNIC_POLL_NAP_US",
				       RNIC_POLL_NAP_US_DEFAULT);
	ctx->poll_backlog = rnic_env_num("RNIC_POLL_BACKLOG",
					 RNIC_POLL_BACKLOG_DEFAULT, UINT32_MAX);

	verbs_set_ops(&ctx->ibv_ctx, &rnic_ctx_ops);

	if (rnic_load_limits(ctx))
		goto err;

	/* Readable too: the page holds the device clock (RNIC_DB_CLOCK). */
	ctx->db = mmap(NULL, RNIC_DB_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, cmd_fd, resp.drv.db_mmap_key);
	if (ctx->db == MAP_FAILED) {
		verbs_err(&ctx->ibv_ctx, "doorbell mmap failed: %s\n",
			  strerror(errno));
		goto err;
	}

	return &ctx->ibv_ctx;

err:
	rnic_free_context(&ctx->ibv_ctx.context);
	return NULL;
}

static void rnic_free_context(struct ibv_context *ibctx)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	unsigned int i;

	if (ctx->db != MAP_FAILED)
		munmap(ctx->db, RNIC_DB_PAGE_SIZE);
	for (i = 0; i < RNIC_QP_TABLE_SIZE; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *rnic_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct rnic_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void rnic_device_free(struct verbs_device *vdev)
{
	free(container_of(vdev, struct rnic_device, ibv_dev));
}

static const struct verbs_match_ent rnic_match_table[] = {
	VERBS_PCI_MATCH(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID, NULL),
	{},
};

static const struct verbs_device_ops rnic_dev_ops = {
	.name = "rnic",
	.match_min_abi_version = RNIC_UVERBS_ABI_VERSION,
	.match_max_abi_version = RNIC_UVERBS_ABI_VERSION,
	.match_table = rnic_match_table,
	.alloc_device = rnic_device_alloc,
	.uninit_device = rnic_device_free,
	.alloc_context = rnic_alloc_context,
};

PROVIDER_DRIVER(rnic, rnic_dev_ops);
