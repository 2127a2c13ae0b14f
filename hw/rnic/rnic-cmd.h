/*
 * rnic: helpers shared by the command handlers (rnic-cmd.c, rnic-qp.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RNIC_CMD_H
#define HW_RNIC_CMD_H

#include "rnic.h"

#define RNIC_GSI_QPN        1
#define RNIC_FIRST_QPN      2
#define RNIC_RING_PAGE      4096

#define RNIC_ACCESS_ALL (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | \
                         RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC | \
                         RNIC_ACCESS_MW_BIND | RNIC_ACCESS_FLUSH_GLOBAL | \
                         RNIC_ACCESS_FLUSH_PERSISTENT)

/* One command being executed: its private copy and where results go. */
typedef struct RnicCmdCtx {
    RnicState *s;
    const struct rnic_cmd *cmd;
    const char *op;             /* opcode name for traces */
    uint16_t uctx;
    uint32_t *out;
} RnicCmdCtx;

/*
 * Each refusal kind has its own trace event; all but RESOURCE and BUSY
 * (device limits and references, not guest mistakes) are guest errors.
 */
uint8_t rnic_cmd_err_rsvd(RnicCmdCtx *c, const char *what);
uint8_t rnic_cmd_err_param(RnicCmdCtx *c, const char *what, uint64_t val,
                           uint64_t cap);
uint8_t rnic_cmd_err_handle(RnicCmdCtx *c, const char *kind, uint32_t h);
uint8_t rnic_cmd_err_access(RnicCmdCtx *c, const char *kind, uint32_t h,
                            uint16_t owner);
uint8_t rnic_cmd_err_state(RnicCmdCtx *c, const char *why, uint32_t h);
uint8_t rnic_cmd_err_resource(RnicCmdCtx *c, const char *kind);
uint8_t rnic_cmd_err_busy(RnicCmdCtx *c, const char *kind, uint32_t h,
                          uint32_t refcnt);
uint8_t rnic_cmd_err_dma(RnicCmdCtx *c, uint64_t addr);

bool rnic_cmd_rsvd_zero(const void *p, size_t len);
uint8_t rnic_cmd_need_kernel(RnicCmdCtx *c);
/* Handle in [1, max], existing, and visible to the command's context. */
uint8_t rnic_cmd_check_obj(RnicCmdCtx *c, const char *kind, uint32_t h,
                           uint32_t max, bool valid, uint16_t owner);
uint8_t rnic_cmd_get_pd(RnicCmdCtx *c, uint32_t pdn);
uint8_t rnic_cmd_get_cq(RnicCmdCtx *c, uint32_t cqn);
uint8_t rnic_cmd_get_srq(RnicCmdCtx *c, uint32_t srqn);
uint8_t rnic_cmd_get_qp(RnicCmdCtx *c, uint32_t qpn, RnicQP **out);
uint8_t rnic_cmd_load_ring(RnicCmdCtx *c, const struct rnic_pbl *desc,
                           uint32_t log_size, uint32_t stride,
                           uint32_t first_page, RnicRing *ring);
/* Writes a query answer to the command's out_addr. */
uint8_t rnic_cmd_write_out(RnicCmdCtx *c, const void *buf, uint32_t size);

/*
 * Object lifetime helpers for the CREATE/ALLOC and DESTROY/DEALLOC
 * handlers.  They keep one guard order in all of them: reserved fields,
 * then the handle and its owner, then references held by other objects.
 */
/* The handle of a DESTROY_* or DEALLOC_* command, reserved bits checked. */
uint8_t rnic_cmd_handle_arg(RnicCmdCtx *c, uint32_t *h);
/* The first free slot in [1, max] of an object table, or RESOURCE. */
uint8_t rnic_cmd_free_slot(RnicCmdCtx *c, const char *kind,
                           const bool *valid0, size_t stride, uint32_t max,
                           uint32_t *slot);
#define RNIC_CMD_FREE_SLOT(c, kind, tbl, max, slot) \
    rnic_cmd_free_slot((c), (kind), &(tbl)[0].valid, sizeof((tbl)[0]), \
                       (max), (slot))
/* Drops a reference one object held on another (PD, CQ, EQ, SRQ). */
void rnic_cmd_refput(uint32_t *refcnt);

/* rnic-qp.c */
uint8_t rnic_cmd_create_qp(RnicCmdCtx *c);
uint8_t rnic_cmd_destroy_qp(RnicCmdCtx *c);
uint8_t rnic_cmd_modify_qp(RnicCmdCtx *c);
uint8_t rnic_cmd_query_qp(RnicCmdCtx *c);
uint8_t rnic_cmd_attach_mcast(RnicCmdCtx *c);
uint8_t rnic_cmd_detach_mcast(RnicCmdCtx *c);
void rnic_qp_free(RnicState *s, RnicQP *qp);

/* rnic-raw.c */
uint8_t rnic_cmd_create_flow(RnicCmdCtx *c);
uint8_t rnic_cmd_destroy_flow(RnicCmdCtx *c);
uint8_t rnic_cmd_set_rss(RnicCmdCtx *c);

uint8_t rnic_cmd_mad_ifc(RnicCmdCtx *c);

#endif /* HW_RNIC_CMD_H */
