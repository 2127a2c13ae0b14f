/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rnic command queue: the engine state and one typed wrapper per
 * command.  Wrappers return 0 or a negative errno; -EIO once the queue
 * is dead.
 */
#ifndef RNIC_CMDQ_H
#define RNIC_CMDQ_H

#include <linux/types.h>
#include <linux/mutex.h>

#include "rnic_hw.h"

struct rnic_dev;

/* The command queue engine: one command in flight at a time. */
struct rnic_cmdq {
	struct mutex lock;		/* serialises commands */
	struct rnic_cmd *ring;
	dma_addr_t ring_dma;
	u32 log_size;
	u32 pi;
	u32 cookie;
	void *out;			/* DMA buffer for query answers */
	dma_addr_t out_dma;
	bool dead;			/* a timeout or fatal error was seen */
};

int rnic_cmdq_init(struct rnic_dev *dev);
void rnic_cmdq_destroy(struct rnic_dev *dev);
bool rnic_dev_dead(struct rnic_dev *dev);
/* Resets the device and raises IB_EVENT_DEVICE_FATAL, once. */
void rnic_cmdq_mark_dead(struct rnic_dev *dev, const char *why);
int rnic_cmd_query_device(struct rnic_dev *dev, struct rnic_device_attr *attr);
int rnic_cmd_query_port(struct rnic_dev *dev, u32 port,
			struct rnic_port_attr *attr);
int rnic_cmd_mad_ifc(struct rnic_dev *dev, u8 flags, u16 slid,
		     const void *in, void *out, bool *reply);
int rnic_cmd_set_gid(struct rnic_dev *dev, u32 index, u8 type, const u8 *gid,
		     const u8 *mac, u16 vlan_id);
int rnic_cmd_del_gid(struct rnic_dev *dev, u32 index);
int rnic_cmd_alloc_uctx(struct rnic_dev *dev, u32 *uctx);
int rnic_cmd_dealloc_uctx(struct rnic_dev *dev, u32 uctx);
int rnic_cmd_create_eq(struct rnic_dev *dev, u32 eqn, u32 log_size,
		       u16 vector, const struct rnic_pbl *ring);
int rnic_cmd_destroy_eq(struct rnic_dev *dev, u32 eqn);
int rnic_cmd_create_pd(struct rnic_dev *dev, u16 uctx, u32 *pdn);
int rnic_cmd_destroy_pd(struct rnic_dev *dev, u16 uctx, u32 pdn);
int rnic_cmd_alloc_mw(struct rnic_dev *dev, u16 uctx, u32 pdn, u8 type,
		      u32 *rkey);
int rnic_cmd_dealloc_mw(struct rnic_dev *dev, u16 uctx, u32 rkey);
int rnic_cmd_mcast(struct rnic_dev *dev, u16 uctx, bool attach, u32 qpn,
		   const u8 *gid);
int rnic_cmd_create_flow(struct rnic_dev *dev, u16 uctx,
			 const struct rnic_cmd_create_flow *in, u32 *handle);
int rnic_cmd_destroy_flow(struct rnic_dev *dev, u16 uctx, u32 handle);
int rnic_cmd_set_rss(struct rnic_dev *dev, u16 uctx,
		     const struct rnic_cmd_set_rss *in);
int rnic_cmd_create_cq(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_create_cq *in, u32 *cqn,
		       u32 *entries);
int rnic_cmd_resize_cq(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_resize_cq *in, u32 *entries,
		       u32 *moved);
int rnic_cmd_destroy_cq(struct rnic_dev *dev, u16 uctx, u32 cqn);
int rnic_cmd_create_qp(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_create_qp *in, u32 *qpn);
int rnic_cmd_destroy_qp(struct rnic_dev *dev, u16 uctx, u32 qpn);
int rnic_cmd_modify_qp(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_modify_qp *in);
int rnic_cmd_query_qp(struct rnic_dev *dev, u16 uctx, u32 qpn,
		      struct rnic_qp_attr *out);
int rnic_cmd_reg_mr(struct rnic_dev *dev, u16 uctx,
		    const struct rnic_cmd_reg_mr *in, u32 *lkey, u32 *rkey);
int rnic_cmd_rereg_mr(struct rnic_dev *dev, u16 uctx, u32 lkey,
		      const struct rnic_cmd_reg_mr *in);
int rnic_cmd_dereg_mr(struct rnic_dev *dev, u16 uctx, u32 lkey);
int rnic_cmd_create_srq(struct rnic_dev *dev, u16 uctx,
			const struct rnic_cmd_create_srq *in, u32 *srqn);
int rnic_cmd_destroy_srq(struct rnic_dev *dev, u16 uctx, u32 srqn);
int rnic_cmd_modify_srq(struct rnic_dev *dev, u16 uctx, u32 srqn, u32 limit);
int rnic_cmd_resize_srq(struct rnic_dev *dev, u16 uctx,
			const struct rnic_cmd_resize_srq *in);

#endif /* RNIC_CMDQ_H */
