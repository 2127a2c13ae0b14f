/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * rnic uverbs ABI: the driver-private data (udata) that the rnic kernel
 * driver and its rdma-core provider exchange through uverbs.  The device
 * never sees these; its ABI is hw/rnic/rnic_hw.h.
 *
 * This file is the source of truth; the copies in guest-driver/kernel/uapi
 * and guest-driver/provider/uapi are made by scripts/sync-abi.sh.  In the
 * kernel it belongs in include/uapi/rdma/, in rdma-core in
 * kernel-headers/rdma/.
 */
#ifndef RNIC_USER_ABI_H
#define RNIC_USER_ABI_H

#include <linux/types.h>

/* Version of these structs, matched by the provider. */
#define RNIC_UVERBS_ABI_VERSION 1

struct rnic_ualloc_ucontext_resp {
	__u32 uverbs_abi;		/* RNIC_UVERBS_ABI_VERSION */
	__u32 uctx;
	__aligned_u64 db_mmap_key;	/* mmap offset of the doorbell page */
	__u32 sq_wqe_size;
	__u32 rq_wqe_size;
	__u32 cqe_size;
	__u32 max_inline;
	__u32 max_sge;
	__u32 caps;			/* RNIC_UCTX_CAP_* */
};

enum rnic_uctx_caps {
	/* The driver takes RNIC_UCREATE_QP_SQ_DBREC. */
	RNIC_UCTX_CAP_SQ_DBREC = 1 << 0,
};

struct rnic_ucreate_cq {
	__aligned_u64 buf_addr;		/* dbrec page + CQE pages, page aligned */
	__u32 buf_size;
	__u32 log_size;
};

struct rnic_ucreate_cq_resp {
	__u32 cqn;
	__u32 log_size;
};

struct rnic_ucreate_qp {
	__aligned_u64 sq_addr;		/* page aligned */
	__u32 sq_size;
	__u8 sq_log_size;
	__u8 rq_log_size;
	__u16 flags;			/* RNIC_UCREATE_QP_* */
	__aligned_u64 rq_addr;		/* page aligned, 0 with an SRQ */
	__u32 rq_size;
	__u32 reserved2;
	/*
	 * A raw packet QP over a receive WQ indirection table (RSS): no
	 * rings above, and how frames are spread (the device's SET_RSS).
	 */
	__aligned_u64 rx_hash_fields_mask;	/* IB_UVERBS_RX_HASH_* */
	__u8 rx_hash_function;		/* IB_UVERBS_RX_HASH_FUNC_TOEPLITZ */
	__u8 rx_key_len;
	__u16 reserved3;
	__u32 reserved4;
	__u8 rx_hash_key[40];
};

enum rnic_ucreate_qp_flags {
	/*
	 * sq_addr starts with the SQ doorbell record page (the device's
	 * struct rnic_sq_dbrec); the WQEs follow it.
	 */
	RNIC_UCREATE_QP_SQ_DBREC = 1 << 0,
};

struct rnic_ucreate_qp_resp {
	__u32 qpn;
	__u32 max_inline;
};

struct rnic_ucreate_srq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u8 log_size;
	__u8 reserved[3];
};

struct rnic_ucreate_srq_resp {
	__u32 srqn;
	__u32 reserved;
};

/* modify_srq with IB_SRQ_MAX_WR: the new ring (the device's RESIZE_SRQ). */
struct rnic_umodify_srq {
	__aligned_u64 buf_addr;
	__u32 buf_size;
	__u8 log_size;
	__u8 reserved[3];
};

/* A receive work queue (ibv_create_wq): its ring, as a QP's RQ. */
struct rnic_ucreate_wq {
	__aligned_u64 rq_addr;		/* page aligned */
	__u32 rq_size;
	__u8 rq_log_size;
	__u8 reserved[3];
};

struct rnic_ucreate_wq_resp {
	__u32 wqn;
	__u32 reserved;
};

/* UD address handles are built by the provider; the kernel hands it the MAC. */
struct rnic_ucreate_ah_resp {
	__u8 dmac[6];
	__u16 reserved;
};

#endif /* RNIC_USER_ABI_H */
