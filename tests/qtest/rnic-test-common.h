/*
 * Shared helpers of the rnic qtests
 *
 * The set-up of a test's device ("Env"), the test side RoCEv2 frame codec
 * (ICRC included) and the socketpair netdev helpers, used by every
 * rnic-*-test.c file.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RNIC_TEST_COMMON_H
#define RNIC_TEST_COMMON_H

#include "libqos/qgraph.h"
#include "libqos/rnic.h"

/* ---- addressing used by the tests ---- */

extern const uint8_t rt_dev_mac[6];
extern const uint8_t rt_peer_mac[6];
#define DEV_IP          0x0a000001u     /* 10.0.0.1, GID index 0 */
#define PEER_IP         0x0a000002u     /* 10.0.0.2 */
#define PEER_QPN        0x000011u
#define QP_SQ_PSN       0x123456u
#define QP_RQ_PSN       0x000100u
#define ROCE_PORT       4791

/* Small limits so that "limit reached" tests stay short. */
#define LIMIT_OPTS      "max-pd=3,max-cq=3,max-qp=4,max-mr=3,max-uctx=2," \
                        "max-eq=2,max-sge=4,max-srq=2,max-mw=2,max-gid=4"

/* ---- RoCEv2 codec (test side) ---- */

#define ETH_HLEN        14
#define IP4_HLEN        20
#define UDP_HLEN        8
#define BTH_LEN         12
#define L3_OFF          ETH_HLEN
#define BTH_OFF         (ETH_HLEN + IP4_HLEN + UDP_HLEN)

enum {
    OPC_SEND_FIRST = 0x00,
    OPC_SEND_MIDDLE = 0x01,
    OPC_SEND_LAST = 0x02,
    OPC_SEND_ONLY = 0x04,
    OPC_SEND_ONLY_IMM = 0x05,
    OPC_WRITE_ONLY = 0x0a,
    OPC_READ_REQ = 0x0c,
    OPC_READ_RESP_ONLY = 0x10,
    OPC_ACK = 0x11,
    OPC_SEND_LAST_INV = 0x16,
    OPC_SEND_ONLY_INV = 0x17,
    OPC_FLUSH = 0x1c,
    OPC_ATOMIC_WRITE = 0x1d,
};

#define AETH_ACK(credits)   (0x00 | ((credits) & 0x1f))
#define AETH_RNR(timer)     (0x20 | ((timer) & 0x1f))
#define AETH_NAK(code)      (0x60 | ((code) & 0x1f))
#define NAK_PSN_SEQ         0
#define NAK_INV_REQ         1
#define NAK_REM_ACCESS      2

typedef struct Roce {
    uint8_t dmac[6];
    uint8_t smac[6];
    uint32_t sip;
    uint32_t dip;
    uint16_t sport;
    uint16_t dport;
    uint8_t ttl;
    uint8_t tos;            /* the ECN field is its low two bits */
    uint8_t opcode;
    bool se;
    bool ack_req;
    uint8_t pad;
    uint16_t pkey;
    uint8_t resv6;          /* BTH byte 4's reserved bits: selective repeat */
    uint32_t dqpn;
    uint32_t psn;
    /* extension headers, by opcode */
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
    uint32_t feth;          /* FLUSH */
    uint8_t syndrome;
    uint32_t msn;
    uint32_t imm;
    const uint8_t *payload;
    uint32_t payload_len;
    uint32_t icrc;
} Roce;

/* ---- the socket side ---- */

typedef struct Env {
    QRnic *r;
    int fd;
    QRnicEq eq;
    uint32_t pdn;
    QRnicCq cq;
    QRnicQp qp;
    QRnicMr mr;
    uint8_t frame[4352];        /* a whole frame at path MTU 4096 */
    size_t frame_len;
} Env;

#define MASK_TO_INIT    (RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_PKEY_INDEX | \
                         RNIC_QP_ATTR_PORT | RNIC_QP_ATTR_ACCESS_FLAGS)
#define MASK_TO_RTR     (RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_AV | \
                         RNIC_QP_ATTR_PATH_MTU | RNIC_QP_ATTR_DEST_QPN | \
                         RNIC_QP_ATTR_RQ_PSN | \
                         RNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | \
                         RNIC_QP_ATTR_MIN_RNR_TIMER)
#define MASK_TO_RTS     (RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_SQ_PSN | \
                         RNIC_QP_ATTR_TIMEOUT | RNIC_QP_ATTR_RETRY_CNT | \
                         RNIC_QP_ATTR_RNR_RETRY | \
                         RNIC_QP_ATTR_MAX_QP_RD_ATOMIC)

/* Where no memory or device decodes: DMA there fails. */
#define BAD_DMA         0x7f0000000000ull

/* Register offsets relative to a ring's BASE_LO. */
#define NQ_BASE_HI      0x04
#define NQ_LOG_SIZE     0x08
#define NQ_PI           0x0c
#define NQ_CI           0x10

/* ---- the RoCEv2 codec ---- */

uint16_t rt_ip4_csum(const uint8_t *hdr);
void rt_st16(uint8_t *p, uint16_t v);
uint32_t rt_ld24(const uint8_t *p);
void rt_roce_init(Roce *f, uint8_t opcode, uint32_t dqpn, uint32_t psn);
/* rt_roce_init() for a frame that carries 'len' bytes of 'payload'. */
void rt_roce_init_payload(Roce *f, uint8_t opcode, uint32_t dqpn,
                          uint32_t psn, const uint8_t *payload, size_t len);
size_t rt_roce_build(const Roce *f, uint8_t *buf, size_t size);
void rt_roce_parse(const uint8_t *buf, size_t len, Roce *f);
/* A frame around raw bytes from the BTH on; the ICRC is right if @good. */
size_t rt_roce_raw(const uint8_t *bth, size_t n, bool good, uint8_t *buf,
                   size_t size);

/* ---- the socket side ---- */

void rt_sock_send(int fd, const uint8_t *buf, size_t len);
ssize_t rt_sock_recv(int fd, uint8_t *buf, size_t size, int timeout_ms);
int rt_sock_pending(int fd);
void rt_recv_roce(Env *e, Roce *f);
void rt_recv_roce_any(Env *e, Roce *f);
void rt_assert_no_frame(Env *e, int timeout_ms);
/* The next frame is an ACK (any credits) or exactly the NAK 'syndrome'. */
void rt_expect_ack(Env *e, uint8_t syndrome, uint32_t psn);
void rt_send_roce(Env *e, const Roce *f);
/* The peer ACKs the env's QP up to @psn, MSN @msn, with full credits. */
void rt_send_ack(Env *e, uint32_t psn, uint32_t msn);

/* ---- common set-up ---- */

void rt_ipv4_gid(uint32_t ip, uint8_t gid[16]);
void rt_env_init(Env *e, void *obj, void *data);
void rt_env_basic(Env *e, void *obj, void *data);
void rt_attr_for(struct rnic_qp_attr *a, uint8_t state);
uint8_t rt_qp_modify(Env *e, QRnicQp *qp, uint8_t state, uint32_t mask);
/* SRQs: an SRQ in @ring, an RC QP in INIT on it, a SEND that lands in it. */
uint32_t rt_create_srq(Env *e, uint16_t uctx, unsigned log, uint64_t ring);
uint32_t rt_create_srq_qp(Env *e, uint32_t srqn);
void rt_srq_send(Env *e, uint32_t qpn, uint32_t psn, uint8_t seed,
                 struct rnic_cqe *cqe);
void rt_env_rc_qp(Env *e, uint8_t state);
/* RESET -> INIT -> RTR -> RTS with the test attributes, up to 'state'. */
void rt_env_init_qp_on_cq(Env *e, QRnicCq *scq, unsigned cq_log,
                          unsigned sq_log);
void rt_qp_up(Env *e, QRnicQp *qp, uint8_t state);
/* e->qp as an RC QP in RTS connected to itself through the loopback. */
void rt_qp_to_self(Env *e);
/* MSI-X vector 'vec' writes 'data' to guest address 'addr', unmasked. */
void rt_msix_entry(QRnic *r, unsigned vec, uint64_t addr, uint32_t data);
uint8_t rt_qp_state(Env *e, QRnicQp *qp);
void rt_sge_of(struct rnic_sge *sge, QRnicMr *mr, uint64_t off,
               uint32_t len);
void rt_send_wqe(struct rnic_send_wqe *w, uint64_t wr_id, uint8_t opc,
                 unsigned nsge);
void rt_fill_pattern(uint8_t *buf, size_t len, uint8_t seed);
/* The next @n CQEs on @cq have @status and wr_ids @first, @first + 1... */
void rt_expect_cqes(Env *e, QRnicCq *cq, uint64_t first, uint32_t n,
                    uint8_t status);
void rt_assert_cq_empty(Env *e, QRnicCq *cq);
uint64_t rt_guest_errs(QRnic *r);
/* The QOM path of the (only) rnic device, which -device made without id. */
char *rt_qom_path(QTestState *qts);
/* Registers test @name on the "rnic" qos node, with its socketpair netdev. */
void rt_add(const char *name, QOSTestFunc fn);
/* Tests registered from now on go on the second rnic node, or not. */
void rt_use_node_b(bool on);
/* The same for a third name, when both are full. */
void rt_use_node_c(bool on);
/* The same with ",opt=val..." appended to the device's options. */
void rt_add_opts(const char *name, QOSTestFunc fn, const char *dev_opts);
/*
 * rt_add() for a test that migrates: rt_cmd_line is then its QEMU's
 * command line, whose socket netdev is "fd=<rt_cmd_line_fd>".
 */
void rt_add_migrate(const char *name, QOSTestFunc fn);
/* The same with more device options, starting with a comma. */
void rt_add_migrate_opts(const char *name, QOSTestFunc fn,
                         const char *dev_opts);

/*
 * As rt_add(), the netdev a stream (with coalesce=on if @coalesce) whose
 * send buffer is RT_STREAM_SNDBUF.
 */
#define RT_STREAM_SNDBUF        8192
void rt_add_stream(const char *name, QOSTestFunc fn, bool coalesce);
/* On a socket-multicast segment: the env's fd sends datagrams to it. */
void rt_add_mcast(const char *name, QOSTestFunc fn);
/* On a UDP unicast (dgram) netdev, the env's fd its peer. */
void rt_add_dgram(const char *name, QOSTestFunc fn);
/*
 * On a listening stream netdev (coalesce=on) at rt_stream_path: the test
 * connects itself (the env's fd is -1 until it does).
 */
extern char *rt_stream_path;
void rt_add_stream_server(const char *name, QOSTestFunc fn);
/*
 * The same with coalesce=on; the test data's second socket is a member of
 * the group that takes UDP GRO batches.  The device's frames wait in a
 * filter-buffer until the virtual clock passes RT_MCAST_FILTER_US.
 */
#define RT_MCAST_FILTER_US      1000
void rt_add_mcast_coalesce(const char *name, QOSTestFunc fn);
extern char *rt_cmd_line;
extern int rt_cmd_line_fd;
/*
 * The device and a second rnic (slot 5, MAC RT_MAC2_STR) on one hub, no
 * socket: 'data' is unused.  qrnic_init_second() reaches the second one.
 */
#define RT_MAC2_STR     "52:54:00:12:34:67"
#define RT_SLOT2        5
void rt_add_pair(const char *name, QOSTestFunc fn, const char *dev_opts);

#endif /* RNIC_TEST_COMMON_H */
