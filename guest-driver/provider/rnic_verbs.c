// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: device queries, PDs, MRs and address handles.
 * All of these go through the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <util/mmio.h>
#include <util/util.h>

#include "rnic.h"

int rnic_query_device(struct ibv_context *ctx,
		      const struct ibv_query_device_ex_input *input,
		      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)((fw >> 32) & 0xffff),
		 (unsigned int)((fw >> 16) & 0xffff),
		 (unsigned int)(fw & 0xffff));
	/* The kernel knows the tables; how frames are hashed is ours. */
	if (attr_size >= offsetof(struct ibv_device_attr_ex, rss_caps) +
			 sizeof(attr->rss_caps) &&
	    attr->rss_caps.max_rwq_indirection_table_size) {
		attr->rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		attr->rss_caps.rx_hash_fields_mask = RNIC_RX_HASH_FIELDS;
	}
	return 0;
}

int rnic_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

/*
 * The device clock, read from the doorbell page without a system call.
 * As with the other providers, raw_clock holds the raw count in tv_nsec
 * and 0 in tv_sec; rnic counts nanoseconds, so summing the two as a
 * timespec gives the same number.
 */
int rnic_query_rt_values(struct ibv_context *ibctx, struct ibv_values_ex *values)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	uint32_t comp_mask = 0;

	if (values->comp_mask & ~IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (!ctx->has_clock)
			return EOPNOTSUPP;
#if SIZEOF_LONG == 8
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = le64toh(mmio_read64_le(
			(uint8_t *)ctx->db + RNIC_DB_CLOCK));
		comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
#else
		/* The device answers single 8-byte reads only. */
		return EOPNOTSUPP;
#endif
	}
	values->comp_mask = comp_mask;
	return 0;
}

struct ibv_pd *rnic_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct rnic_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_pd(ctx, &pd->ibv_pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	atomic_init(&pd->refcount, 1);
	return &pd->ibv_pd;
}

#define RNIC_PARENT_DOMAIN_MASK (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
				 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

struct ibv_pd *rnic_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr)
{
	struct rnic_pd *pd, *base;

	/* rnic has no thread domains: every queue takes its own lock. */
	if (attr->comp_mask & ~RNIC_PARENT_DOMAIN_MASK || attr->td) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->pd || attr->pd->context != ctx ||
	    to_rpd(attr->pd)->protection_domain) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS &&
	    (!attr->alloc || !attr->free)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	base = to_rpd(attr->pd);
	pd->ibv_pd.context = ctx;
	pd->ibv_pd.handle = base->ibv_pd.handle;
	pd->protection_domain = base;
	atomic_init(&pd->refcount, 1);
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&base->refcount, 1);
	return &pd->ibv_pd;
}

/* Flow rules: the kernel driver turns the specs into a device rule. */
struct ibv_flow *rnic_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *attr)
{
	struct ibv_flow *flow;
	int ret;

	flow = calloc(1, sizeof(*flow));
	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_flow(qp, flow, attr, NULL, 0);
	if (ret) {
		free(flow);
		errno = ret;
		return NULL;
	}
	return flow;
}

int rnic_destroy_flow(struct ibv_flow *flow)
{
	int ret;

	ret = ibv_cmd_destroy_flow(flow);
	if (ret)
		return ret;
	free(flow);
	return 0;
}

int rnic_dealloc_pd(struct ibv_pd *ibpd)
{
	struct rnic_pd *pd = to_rpd(ibpd);
	int ret;

	/* Parent domains and the objects in them hold a reference. */
	if (atomic_load(&pd->refcount) > 1)
		return EBUSY;
	if (pd->protection_domain) {
		atomic_fetch_sub(&pd->protection_domain->refcount, 1);
		free(pd);
		return 0;
	}
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

struct ibv_mr *rnic_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			   uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* Registered anew in place: the handle and the keys stay. */
int rnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int rnic_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/* ::ffff:a.b.c.d */
static bool rnic_gid_is_v4mapped(const uint8_t *gid)
{
	static const uint8_t prefix[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/*
 * An InfiniBand AH addresses by LID, with a GRH only when the caller
 * asks for one (is_global); the port has one GID, index 0.
 */
static void rnic_ib_av(struct rnic_av *av, const struct ibv_ah_attr *attr)
{
	memset(av, 0, sizeof(*av));
	av->net_type = RNIC_NET_IB;
	av->ib.dlid = htole16(attr->dlid);
	av->ib.src_path_bits = attr->src_path_bits & 0x7f;
	av->sl = attr->sl & 0xf;
	if (!attr->is_global)
		return;
	av->ib.flags = RNIC_AV_IB_GRH;
	memcpy(av->dgid, attr->grh.dgid.raw, sizeof(av->dgid));
	av->sgid_index = attr->grh.sgid_index;
	av->hop_limit = attr->grh.hop_limit;
	av->flow_label = htole32(attr->grh.flow_label & 0xfffff);
	av->traffic_class = attr->grh.traffic_class;
}

/*
 * RoCEv2 AHs always carry a GRH.  The kernel resolves the destination MAC;
 * the rest of the address vector is built here and copied into every UD
 * WQE that uses this AH.
 */
struct ibv_ah *rnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rnic_context *ctx = to_rctx(pd->context);
	struct rnic_create_ah_resp resp = {};
	struct rnic_ah *ah;
	int ret;

	if (!attr->is_global && !ctx->ib) {
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}

	if (ctx->ib) {
		rnic_ib_av(&ah->av, attr);
		return &ah->ibv_ah;
	}
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.drv.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.flow_label = htole32(attr->grh.flow_label & 0xfffff);
	ah->av.traffic_class = attr->grh.traffic_class;
	ah->av.net_type = rnic_gid_is_v4mapped(attr->grh.dgid.raw) ?
				  RNIC_NET_IPV4 : RNIC_NET_IPV6;
	ah->av.sl = attr->sl;
	return &ah->ibv_ah;
}

int rnic_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_rah(ibah));
	return 0;
}

/* The kernel tells the device which UD QPs joined which group. */
int rnic_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

int rnic_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}
