/*
 * libqos driver for the rnic RoCEv2 RNIC
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QOS_RNIC_H
#define QOS_RNIC_H

#include "qgraph.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "hw/rnic/rnic_hw.h"

/* The MAC the node gives the device (its "mac" property). */
#define QRNIC_MAC           { 0x52, 0x54, 0x00, 0x12, 0x34, 0x66 }
#define QRNIC_MAC_STR       "52:54:00:12:34:66"

/* How long a helper waits for the device before failing the test. */
#define QRNIC_TIMEOUT_MS    5000

#define QRNIC_PAGE          4096

/* A second qgraph node for the rnic device (see qrnic_register_nodes). */
#define QRNIC_NODE_B        "rnic-b"
#define QRNIC_NODE_C        "rnic-c"

typedef struct QRnic {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar regs;               /* BAR0 */
    QPCIBar db;                 /* BAR2 */
    uint64_t db_size;
    QGuestAllocator *alloc;

    /* Command queue, once qrnic_enable() has run. */
    uint64_t cmdq;
    unsigned cmdq_log_size;
    uint32_t cmdq_pi;
    uint32_t cookie;
} QRnic;

/* An event queue in guest memory. */
typedef struct QRnicEq {
    uint32_t eqn;
    unsigned log_size;
    uint64_t buf;
    uint32_t ci;
} QRnicEq;

/* A completion queue: page 0 is the dbrec, CQEs start at page 1. */
typedef struct QRnicCq {
    uint32_t cqn;
    unsigned log_size;
    uint64_t buf;
    uint32_t npages;            /* dbrec page included */
    uint32_t ci;
} QRnicCq;

typedef struct QRnicQp {
    uint32_t qpn;
    uint8_t type;
    unsigned sq_log_size;
    unsigned rq_log_size;
    uint64_t sq_buf;            /* the WQEs */
    uint64_t rq_buf;
    uint64_t sq_dbrec;          /* struct rnic_sq_dbrec, 0: none */
    uint32_t sq_pi;
    uint32_t rq_pi;
} QRnicQp;

typedef struct QRnicMr {
    uint32_t lkey;
    uint32_t rkey;
    uint64_t buf;               /* first page */
    uint64_t len;
} QRnicMr;

/* Called while waiting for the device, if set (the in-process fuzzer). */
extern void (*qrnic_wait_hook)(QTestState *qts);

QTestState *qrnic_qts(QRnic *r);

/*
 * A second rnic in PCI slot 'slot' of the same machine as 'r' (its
 * command line added by the test), sharing r's allocator.
 */
void qrnic_init_second(QRnic *r2, QRnic *r, int slot);
void qrnic_fini_second(QRnic *r2);

/* BAR0 and BAR2 access. */
uint32_t qrnic_readl(QRnic *r, uint32_t off);
void qrnic_writel(QRnic *r, uint32_t off, uint32_t val);
uint64_t qrnic_counter(QRnic *r, unsigned idx);
void qrnic_doorbell(QRnic *r, unsigned page, uint32_t off, uint64_t val);

/* Gives the device a moment to run its bottom half. */
void qrnic_settle(QRnic *r);

/* Zeroed, page-aligned guest memory. */
uint64_t qrnic_alloc(QRnic *r, size_t size);

/*
 * Programs a command queue of 1 << log_size entries and sets CTRL.ENABLE;
 * returns STATUS.  qrnic_enable() asserts READY.
 */
uint32_t qrnic_try_enable(QRnic *r, uint64_t base, unsigned log_size);
void qrnic_enable(QRnic *r);
/* CTRL.RESET; forgets the command queue. */
void qrnic_reset(QRnic *r);

/*
 * Writes @cmd (cookie and response filled in here) into the next entry
 * and rings CMDQ_PI.  Returns the entry index.
 */
uint32_t qrnic_cmd_post(QRnic *r, struct rnic_cmd *cmd);
/* Waits for entry @idx; false on timeout. */
bool qrnic_cmd_wait(QRnic *r, uint32_t idx, struct rnic_cmd_resp *resp,
                    int timeout_ms);
/*
 * Post and wait; asserts that the response arrives with the right cookie
 * and returns its status.  @out may be NULL.
 */
uint8_t qrnic_cmd(QRnic *r, struct rnic_cmd *cmd, uint32_t out[6]);
void qrnic_cmd_init(struct rnic_cmd *cmd, uint8_t opcode);

/* Typed commands; each returns the command status. */
uint8_t qrnic_query(QRnic *r, uint8_t opcode, uint32_t handle,
                    uint64_t out_addr, uint32_t out_len);
uint8_t qrnic_query_device(QRnic *r, struct rnic_device_attr *attr);
uint8_t qrnic_set_gid(QRnic *r, uint32_t index, const uint8_t gid[16],
                      const uint8_t mac[6]);
uint8_t qrnic_alloc_uctx(QRnic *r, uint32_t *uctx);
uint8_t qrnic_destroy(QRnic *r, uint8_t opcode, uint16_t uctx,
                      uint32_t handle);
uint8_t qrnic_create_eq(QRnic *r, QRnicEq *eq, uint32_t eqn,
                        unsigned log_size);
uint8_t qrnic_create_pd(QRnic *r, uint16_t uctx, uint32_t *pdn);
uint8_t qrnic_create_cq(QRnic *r, QRnicCq *cq, unsigned log_size,
                        uint32_t eqn);
/* On success the CQ is the new ring's, consumer index 0. */
uint8_t qrnic_resize_cq(QRnic *r, QRnicCq *cq, unsigned log_size,
                        uint32_t *moved);
/* A RESIZE_CQ command for a new ring, not posted; returns the ring. */
uint64_t qrnic_resize_cq_cmd(QRnic *r, const QRnicCq *cq, unsigned log_size,
                             struct rnic_cmd *cmd);
uint8_t qrnic_create_qp(QRnic *r, QRnicQp *qp, uint8_t type,
                        uint32_t pdn, uint32_t send_cqn, uint32_t recv_cqn,
                        unsigned sq_log_size, unsigned rq_log_size);
/* The same with RNIC_QP_FLAG_* @flags (SQ_DBREC adds the record page). */
uint8_t qrnic_create_qp_flags(QRnic *r, QRnicQp *qp, uint8_t type,
                              uint32_t pdn, uint32_t send_cqn,
                              uint32_t recv_cqn, unsigned sq_log_size,
                              unsigned rq_log_size, uint32_t flags);
uint8_t qrnic_modify_qp(QRnic *r, uint32_t qpn, uint32_t mask,
                        const struct rnic_qp_attr *attr);
uint8_t qrnic_query_qp(QRnic *r, uint32_t qpn, struct rnic_qp_attr *attr);
/* A @len-byte MR over fresh contiguous pages, page list in levels 0. */
uint8_t qrnic_reg_mr(QRnic *r, QRnicMr *mr, uint32_t pdn, uint32_t access,
                     uint64_t len);

/* Send and receive queues. */
void qrnic_post_send(QRnic *r, QRnicQp *qp, const struct rnic_send_wqe *wqe,
                     const struct rnic_sge *sge, unsigned nsge);
void qrnic_post_recv(QRnic *r, QRnicQp *qp, uint64_t wr_id,
                     const struct rnic_sge *sge, unsigned nsge);
void qrnic_ring_sq(QRnic *r, QRnicQp *qp);
/* The SQ doorbell record: store sq_pi there; read what it holds. */
void qrnic_sq_dbrec_store(QRnic *r, QRnicQp *qp);
void qrnic_sq_dbrec_read(QRnic *r, QRnicQp *qp, struct rnic_sq_dbrec *rec);
void qrnic_ring_rq(QRnic *r, QRnicQp *qp);

/* Next CQE, if the device has written one (consumes it). */
bool qrnic_cq_poll(QRnic *r, QRnicCq *cq, struct rnic_cqe *cqe);
/* Waits for the next CQE; false on timeout. */
bool qrnic_cq_wait(QRnic *r, QRnicCq *cq, struct rnic_cqe *cqe,
                   int timeout_ms);
bool qrnic_eq_poll(QRnic *r, QRnicEq *eq, struct rnic_eqe *eqe);

#endif
