/*
 * QTest testcases for the rnic RoCEv2 RNIC
 *
 * The device sits on a socketpair netdev, so a test reads every frame the
 * device sends and injects frames of its own.  RoCEv2 frames are built and
 * checked here by a small codec that is independent of the device's own
 * (hw/rnic/rnic-wire.c), ICRC included.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"

#ifndef _WIN32

#include <poll.h>

/* ---- addressing used by the tests ---- */

static const uint8_t dev_mac[6] = QRNIC_MAC;
static const uint8_t peer_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
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
    OPC_SEND_ONLY = 0x04,
    OPC_SEND_ONLY_IMM = 0x05,
    OPC_WRITE_ONLY = 0x0a,
    OPC_READ_REQ = 0x0c,
    OPC_READ_RESP_ONLY = 0x10,
    OPC_ACK = 0x11,
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
    uint8_t opcode;
    bool se;
    bool ack_req;
    uint8_t pad;
    uint16_t pkey;
    uint32_t dqpn;
    uint32_t psn;
    /* extension headers, by opcode */
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
    uint8_t syndrome;
    uint32_t msn;
    uint32_t imm;
    const uint8_t *payload;
    uint32_t payload_len;
    uint32_t icrc;
} Roce;

static bool opc_has_reth(uint8_t opc)
{
    return opc == OPC_WRITE_ONLY || opc == OPC_READ_REQ;
}

static bool opc_has_aeth(uint8_t opc)
{
    return opc == OPC_ACK || opc == OPC_READ_RESP_ONLY;
}

static bool opc_has_imm(uint8_t opc)
{
    return opc == OPC_SEND_ONLY_IMM;
}

static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t len)
{
    int k;

    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

/* ICRC of an IPv4 RoCEv2 datagram; @len stops before the ICRC field. */
static uint32_t roce_icrc(const uint8_t *ip, size_t len)
{
    uint8_t ones[8];
    uint8_t hdr[IP4_HLEN + UDP_HLEN + BTH_LEN];
    uint32_t crc;

    memset(ones, 0xff, sizeof(ones));
    memcpy(hdr, ip, sizeof(hdr));
    hdr[1] = 0xff;                          /* TOS */
    hdr[8] = 0xff;                          /* TTL */
    hdr[10] = hdr[11] = 0xff;               /* header checksum */
    hdr[IP4_HLEN + 6] = hdr[IP4_HLEN + 7] = 0xff;   /* UDP checksum */
    hdr[IP4_HLEN + UDP_HLEN + 4] = 0xff;    /* FECN, BECN, reserved */

    crc = crc32_le(0, ones, sizeof(ones));
    crc = crc32_le(crc, hdr, sizeof(hdr));
    return crc32_le(crc, ip + sizeof(hdr), len - sizeof(hdr));
}

static uint16_t ip4_csum(const uint8_t *hdr)
{
    uint32_t sum = 0;
    int i;

    for (i = 0; i < IP4_HLEN; i += 2) {
        if (i != 10) {
            sum += hdr[i] << 8 | hdr[i + 1];
        }
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

static void st16(uint8_t *p, uint16_t v)
{
    stw_be_p(p, v);
}

static void st24(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = v;
}

static uint32_t ld24(const uint8_t *p)
{
    return p[0] << 16 | p[1] << 8 | p[2];
}

/* A frame from the peer to the device, with default addressing. */
static void roce_init(Roce *f, uint8_t opcode, uint32_t dqpn, uint32_t psn)
{
    memset(f, 0, sizeof(*f));
    memcpy(f->dmac, dev_mac, 6);
    memcpy(f->smac, peer_mac, 6);
    f->sip = PEER_IP;
    f->dip = DEV_IP;
    f->sport = 0xc123;
    f->dport = ROCE_PORT;
    f->ttl = 64;
    f->opcode = opcode;
    f->pkey = 0xffff;
    f->dqpn = dqpn;
    f->psn = psn;
    f->ack_req = true;
}

/* Builds @f into @buf; returns the frame length. */
static size_t roce_build(const Roce *f, uint8_t *buf, size_t size)
{
    uint8_t *ip = buf + L3_OFF;
    uint8_t *udp = ip + IP4_HLEN;
    uint8_t *bth = udp + UDP_HLEN;
    uint8_t *p = bth + BTH_LEN;
    unsigned pad = (4 - (f->payload_len & 3)) & 3;
    size_t ip_len, len;

    g_assert_cmpuint(size, >=, BTH_OFF + BTH_LEN + 32 + f->payload_len + 8);
    memset(buf, 0, size);

    memcpy(buf, f->dmac, 6);
    memcpy(buf + 6, f->smac, 6);
    st16(buf + 12, 0x0800);

    if (opc_has_reth(f->opcode)) {
        stq_be_p(p, f->va);
        stl_be_p(p + 8, f->rkey);
        stl_be_p(p + 12, f->dma_len);
        p += 16;
    }
    if (opc_has_aeth(f->opcode)) {
        p[0] = f->syndrome;
        st24(p + 1, f->msn);
        p += 4;
    }
    if (opc_has_imm(f->opcode)) {
        stl_be_p(p, f->imm);
        p += 4;
    }
    memcpy(p, f->payload, f->payload_len);
    p += f->payload_len + pad;

    bth[0] = f->opcode;
    bth[1] = (f->se ? 0x80 : 0) | pad << 4;
    st16(bth + 2, f->pkey);
    st24(bth + 5, f->dqpn);
    bth[8] = f->ack_req ? 0x80 : 0;
    st24(bth + 9, f->psn);

    ip_len = (p + 4) - ip;
    ip[0] = 0x45;
    st16(ip + 2, ip_len);
    st16(ip + 6, 0x4000);
    ip[8] = f->ttl;
    ip[9] = 17;
    stl_be_p(ip + 12, f->sip);
    stl_be_p(ip + 16, f->dip);
    st16(ip + 10, ip4_csum(ip));

    st16(udp, f->sport);
    st16(udp + 2, f->dport);
    st16(udp + 4, ip_len - IP4_HLEN);

    stl_le_p(p, roce_icrc(ip, p - ip));
    len = L3_OFF + ip_len;
    return MAX(len, 60);
}

/*
 * Parses a frame the device sent and checks everything below the IBA
 * headers, ICRC included.  @f->payload points into @buf.
 */
static void roce_parse(const uint8_t *buf, size_t len, Roce *f)
{
    const uint8_t *ip = buf + L3_OFF;
    const uint8_t *udp = ip + IP4_HLEN;
    const uint8_t *bth = udp + UDP_HLEN;
    const uint8_t *p = bth + BTH_LEN;
    size_t ip_len, end;

    memset(f, 0, sizeof(*f));
    g_assert_cmpuint(len, >=, BTH_OFF + BTH_LEN + 4);
    memcpy(f->dmac, buf, 6);
    memcpy(f->smac, buf + 6, 6);
    g_assert_cmphex(lduw_be_p(buf + 12), ==, 0x0800);

    g_assert_cmphex(ip[0], ==, 0x45);
    ip_len = lduw_be_p(ip + 2);
    g_assert_cmpuint(L3_OFF + ip_len, <=, len);
    g_assert_cmphex(lduw_be_p(ip + 6) & 0x3fff, ==, 0);  /* no fragment */
    g_assert_cmpuint(ip[9], ==, 17);
    g_assert_cmphex(lduw_be_p(ip + 10), ==, ip4_csum(ip));
    f->ttl = ip[8];
    f->sip = ldl_be_p(ip + 12);
    f->dip = ldl_be_p(ip + 16);

    f->sport = lduw_be_p(udp);
    f->dport = lduw_be_p(udp + 2);
    g_assert_cmpuint(f->dport, ==, ROCE_PORT);
    g_assert_cmpuint(lduw_be_p(udp + 4), ==, ip_len - IP4_HLEN);

    f->opcode = bth[0];
    f->se = bth[1] & 0x80;
    f->pad = (bth[1] >> 4) & 3;
    g_assert_cmpuint(bth[1] & 0x0f, ==, 0);                /* TVer */
    f->pkey = lduw_be_p(bth + 2);
    f->dqpn = ld24(bth + 5);
    f->ack_req = bth[8] & 0x80;
    f->psn = ld24(bth + 9);

    if (opc_has_reth(f->opcode)) {
        f->va = ldq_be_p(p);
        f->rkey = ldl_be_p(p + 8);
        f->dma_len = ldl_be_p(p + 12);
        p += 16;
    }
    if (opc_has_aeth(f->opcode)) {
        f->syndrome = p[0];
        f->msn = ld24(p + 1);
        p += 4;
    }
    if (opc_has_imm(f->opcode)) {
        f->imm = ldl_be_p(p);
        p += 4;
    }

    end = L3_OFF + ip_len - 4;
    g_assert_cmpuint(p - buf + f->pad, <=, end);
    f->payload = p;
    f->payload_len = end - (p - buf) - f->pad;
    f->icrc = ldl_le_p(buf + end);
    g_assert_cmphex(f->icrc, ==, roce_icrc(ip, end - L3_OFF));
}

/* ---- the socket side ---- */

typedef struct Env {
    QRnic *r;
    int fd;
    QRnicEq eq;
    uint32_t pdn;
    QRnicCq cq;
    QRnicQp qp;
    QRnicMr mr;
    uint8_t frame[2048];
    size_t frame_len;
} Env;

static void sock_send(int fd, const uint8_t *buf, size_t len)
{
    uint32_t be_len = htonl(len);
    ssize_t ret;

    ret = send(fd, &be_len, sizeof(be_len), 0);
    g_assert_cmpint(ret, ==, sizeof(be_len));
    ret = send(fd, buf, len, 0);
    g_assert_cmpint(ret, ==, len);
}

/* Next frame from the device within @timeout_ms, or -1. */
static ssize_t sock_recv(int fd, uint8_t *buf, size_t size, int timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    uint32_t be_len;
    size_t len;
    ssize_t ret;

    if (poll(&pfd, 1, timeout_ms) <= 0) {
        return -1;
    }
    ret = recv(fd, &be_len, sizeof(be_len), MSG_WAITALL);
    g_assert_cmpint(ret, ==, sizeof(be_len));
    len = ntohl(be_len);
    g_assert_cmpuint(len, <=, size);
    ret = recv(fd, buf, len, MSG_WAITALL);
    g_assert_cmpint(ret, ==, len);
    return len;
}

/* Next RoCEv2 frame from the device, parsed and checked. */
static void recv_roce(Env *e, Roce *f)
{
    ssize_t len = sock_recv(e->fd, e->frame, sizeof(e->frame),
                            QRNIC_TIMEOUT_MS);

    g_assert_cmpint(len, >, 0);
    e->frame_len = len;
    roce_parse(e->frame, len, f);
    g_assert_cmphex(f->sip, ==, DEV_IP);
    g_assert_cmphex(f->dip, ==, PEER_IP);
    g_assert_cmpmem(f->smac, 6, dev_mac, 6);
    g_assert_cmpmem(f->dmac, 6, peer_mac, 6);
    g_assert_cmphex(f->pkey, ==, 0xffff);
    g_assert_cmphex(f->dqpn, ==, PEER_QPN);
}

static void assert_no_frame(Env *e, int timeout_ms)
{
    g_assert_cmpint(sock_recv(e->fd, e->frame, sizeof(e->frame),
                              timeout_ms), ==, -1);
}

static void send_roce(Env *e, const Roce *f)
{
    uint8_t buf[2048];
    size_t len = roce_build(f, buf, sizeof(buf));

    sock_send(e->fd, buf, len);
}

/* ---- common set-up ---- */

static void ipv4_gid(uint32_t ip, uint8_t gid[16])
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(gid + 12, ip);
}

static void env_init(Env *e, void *obj, void *data)
{
    memset(e, 0, sizeof(*e));
    e->r = obj;
    e->fd = ((int *)data)[0];
}

/* Enabled device with EQ 0, GID 0, a PD, one CQ and an MR. */
static void env_basic(Env *e, void *obj, void *data)
{
    uint8_t gid[16];

    env_init(e, obj, data);
    qrnic_enable(e->r);
    g_assert_cmpuint(qrnic_create_eq(e->r, &e->eq, 0, 8), ==, RNIC_CMD_OK);
    ipv4_gid(DEV_IP, gid);
    g_assert_cmpuint(qrnic_set_gid(e->r, 0, gid, dev_mac), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e->r, 0, &e->pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(e->pdn, !=, 0);
    g_assert_cmpuint(qrnic_create_cq(e->r, &e->cq, 7, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(e->cq.cqn, !=, 0);
    g_assert_cmpuint(qrnic_reg_mr(e->r, &e->mr, e->pdn,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE |
                                  RNIC_ACCESS_REMOTE_READ, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
}

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

static void attr_for(struct rnic_qp_attr *a, uint8_t state)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = state;
    a->port_num = 1;
    a->access_flags = cpu_to_le32(RNIC_ACCESS_REMOTE_WRITE |
                                  RNIC_ACCESS_REMOTE_READ);
    a->path_mtu = RNIC_MTU_1024;
    a->dest_qpn = cpu_to_le32(PEER_QPN);
    a->rq_psn = cpu_to_le32(QP_RQ_PSN);
    a->max_dest_rd_atomic = 1;
    a->min_rnr_timer = 12;
    ipv4_gid(PEER_IP, a->av.dgid);
    memcpy(a->av.dmac, peer_mac, 6);
    a->av.sgid_index = 0;
    a->av.hop_limit = 64;
    a->av.net_type = RNIC_NET_IPV4;
    a->sq_psn = cpu_to_le32(QP_SQ_PSN);
    a->timeout = 14;            /* about 67 ms of virtual time */
    a->retry_cnt = 7;
    a->rnr_retry = 7;
    a->max_rd_atomic = 1;
}

static uint8_t qp_modify(Env *e, QRnicQp *qp, uint8_t state, uint32_t mask)
{
    struct rnic_qp_attr a;

    attr_for(&a, state);
    return qrnic_modify_qp(e->r, qp->qpn, mask, &a);
}

/* An RC QP on the env's PD and CQ, moved to @state (INIT, RTR or RTS). */
static void env_rc_qp(Env *e, uint8_t state)
{
    g_assert_cmpuint(qrnic_create_qp(e->r, &e->qp, RNIC_QPT_RC, e->pdn,
                                     e->cq.cqn, e->cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(e->qp.qpn, >=, 2);
    if (state >= RNIC_QPS_INIT) {
        g_assert_cmpuint(qp_modify(e, &e->qp, RNIC_QPS_INIT, MASK_TO_INIT),
                         ==, RNIC_CMD_OK);
    }
    if (state >= RNIC_QPS_RTR) {
        g_assert_cmpuint(qp_modify(e, &e->qp, RNIC_QPS_RTR, MASK_TO_RTR),
                         ==, RNIC_CMD_OK);
    }
    if (state >= RNIC_QPS_RTS) {
        g_assert_cmpuint(qp_modify(e, &e->qp, RNIC_QPS_RTS, MASK_TO_RTS),
                         ==, RNIC_CMD_OK);
    }
}

static uint8_t qp_state(Env *e, QRnicQp *qp)
{
    struct rnic_qp_attr a;

    g_assert_cmpuint(qrnic_query_qp(e->r, qp->qpn, &a), ==, RNIC_CMD_OK);
    return a.qp_state;
}

static void sge_of(struct rnic_sge *sge, QRnicMr *mr, uint64_t off,
                   uint32_t len)
{
    sge->addr = cpu_to_le64(mr->buf + off);
    sge->length = cpu_to_le32(len);
    sge->lkey = cpu_to_le32(mr->lkey);
}

static void send_wqe(struct rnic_send_wqe *w, uint64_t wr_id, uint8_t opc,
                     unsigned nsge)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = cpu_to_le64(wr_id);
    w->opcode = opc;
    w->flags = RNIC_WQE_SIGNALED;
    w->num_sge = nsge;
}

static void fill_pattern(uint8_t *buf, size_t len, uint8_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = seed + i * 7;
    }
}

static void assert_cq_empty(Env *e, QRnicCq *cq)
{
    struct rnic_cqe cqe;

    qrnic_settle(e->r);
    g_assert_false(qrnic_cq_poll(e->r, cq, &cqe));
}

/* ---- 1. register reset values ---- */

static void test_reg_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint32_t status, pages;
    unsigned i;

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_VERSION), ==, RNIC_ABI_VERSION);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CTRL), ==, 0);
    status = qrnic_readl(r, RNIC_REG_STATUS);
    g_assert_cmphex(status & ~RNIC_STATUS_LINK_UP, ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 0);

    /* max-uctx=2: pages 0..2 at least, and all inside BAR2. */
    pages = qrnic_readl(r, RNIC_REG_DB_PAGES);
    g_assert_cmpuint(pages, >=, 3);
    g_assert_cmpuint((uint64_t)pages * RNIC_DB_PAGE_SIZE, <=, r->db_size);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_MSIX_VECTORS), ==, 5);

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_LO), ==, ldl_le_p(dev_mac));
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_HI), ==,
                    lduw_le_p(dev_mac + 4));

    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_TXQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_TXQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_RXQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_RXQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_NET_CTRL), ==, 0);

    for (i = 0; i < RNIC_CNT_MAX; i++) {
        g_assert_cmpuint(qrnic_counter(r, i), ==, 0);
    }
    /* A counter read as LO then HI (HI latched on LO) is zero too. */
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CNT_BASE), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CNT_BASE + 4), ==, 0);
}

/* ---- 2. commands: success paths ---- */

static void test_cmd_query(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_device_attr da;
    struct rnic_port_attr pa;
    uint64_t buf;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.abi_version), ==, RNIC_ABI_VERSION);
    g_assert_cmphex(le32_to_cpu(da.vendor_id), ==, RNIC_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(da.vendor_part_id), ==, RNIC_PCI_DEVICE_ID);
    g_assert_cmpuint(le32_to_cpu(da.max_pd), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_cq), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_qp), ==, 4);
    g_assert_cmpuint(le32_to_cpu(da.max_mr), ==, 3);
    g_assert_cmpuint(le32_to_cpu(da.max_uctx), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_eq), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_sge), ==, 4);
    g_assert_cmpuint(le32_to_cpu(da.max_srq), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_mw), ==, 2);
    g_assert_cmpuint(le32_to_cpu(da.max_gid), ==, 4);
    g_assert_cmphex(le32_to_cpu(da.cap_flags) & RNIC_DEV_CAP_RC, ==,
                    RNIC_DEV_CAP_RC);
    g_assert_cmphex(le64_to_cpu(da.page_size_cap) & 0x1000, ==, 0x1000);
    g_assert_cmpuint(le64_to_cpu(da.node_guid), !=, 0);

    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, buf,
                                 sizeof(pa)), ==, RNIC_CMD_OK);
    qtest_memread(qrnic_qts(e.r), buf, &pa, sizeof(pa));
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ACTIVE);
    g_assert_cmpuint(le32_to_cpu(pa.gid_tbl_len), ==, 4);
    g_assert_cmpuint(pa.active_mtu, >=, RNIC_MTU_256);
    g_assert_cmpuint(pa.active_mtu, <=, pa.max_mtu);
    g_assert_cmpuint(pa.max_mtu, <=, RNIC_MTU_4096);
}

/* Every create/destroy pair, and handles come back in order. */
static void test_cmd_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp2;
    struct rnic_cmd cmd;
    uint32_t out[6], uctx, pdn2, srqn, mw;
    uint64_t srq_buf;
    uint8_t gid[16];

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RESET);

    /* second EQ, a GID and its removal */
    {
        QRnicEq eq1;

        g_assert_cmpuint(qrnic_create_eq(e.r, &eq1, 1, 4), ==, RNIC_CMD_OK);
        g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 1), ==,
                         RNIC_CMD_OK);
        /* EQN 1 is free again */
        g_assert_cmpuint(qrnic_create_eq(e.r, &eq1, 1, 4), ==, RNIC_CMD_OK);
    }
    ipv4_gid(0x0a000009, gid);
    g_assert_cmpuint(qrnic_set_gid(e.r, 3, gid, dev_mac), ==, RNIC_CMD_OK);
    qrnic_cmd_init(&cmd, RNIC_CMD_DEL_GID);
    cmd.u.gid.index = cpu_to_le32(3);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);

    /* user context and a PD owned by it */
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    g_assert_cmpuint(uctx, ==, 1);
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx, &pdn2), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn2, ==, e.pdn + 1);

    /* SRQ */
    srq_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.u.create_srq.log_size = 5;
    cmd.u.create_srq.max_sge = 2;
    cmd.u.create_srq.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(srq_buf);
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    srqn = out[RNIC_OUT_HANDLE];
    g_assert_cmpuint(srqn, ==, 1);
    qrnic_cmd_init(&cmd, RNIC_CMD_MODIFY_SRQ);
    cmd.u.modify_srq.srqn = cpu_to_le32(srqn);
    cmd.u.modify_srq.limit = cpu_to_le32(4);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);

    /*
     * MW: not advertised in cap_flags, so ALLOC_MW answers NOT_SUPP after
     * its checks, and there is never a window to free.
     */
    qrnic_cmd_init(&cmd, RNIC_CMD_ALLOC_MW);
    cmd.u.alloc_mw.pdn = cpu_to_le32(e.pdn);
    cmd.u.alloc_mw.type = 3;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.alloc_mw.type = 1;
    cmd.u.alloc_mw.pdn = cpu_to_le32(99);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_HANDLE);
    cmd.u.alloc_mw.pdn = cpu_to_le32(e.pdn);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_ERR_NOT_SUPP);
    mw = 1 << 8;

    /* a second QP gets the next QPN */
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp2, RNIC_QPT_RC, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp2.qpn, ==, e.qp.qpn + 1);

    /* tear everything down in dependency order */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_MW, 0, mw), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_SRQ, 0, srqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, qp2.qpn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, e.mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, uctx, pdn2), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx), ==,
                     RNIC_CMD_OK);

    /* and a destroyed handle is gone */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_ERR_HANDLE);
}

/* QUERY_QP reports what MODIFY_QP set. */
static void test_cmd_modify_query_qp(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    struct rnic_qp_attr a;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_query_qp(e.r, e.qp.qpn, &a), ==, RNIC_CMD_OK);
    g_assert_cmpuint(a.qp_state, ==, RNIC_QPS_RTS);
    g_assert_cmphex(le32_to_cpu(a.dest_qpn), ==, PEER_QPN);
    g_assert_cmphex(le32_to_cpu(a.sq_psn), ==, QP_SQ_PSN);
    g_assert_cmphex(le32_to_cpu(a.rq_psn), ==, QP_RQ_PSN);
    g_assert_cmpuint(a.path_mtu, ==, RNIC_MTU_1024);
    g_assert_cmpuint(a.timeout, ==, 14);
    g_assert_cmpmem(a.av.dmac, 6, peer_mac, 6);
    g_assert_cmpuint(le32_to_cpu(a.max_send_wr), >=, 16);
    g_assert_cmpuint(le32_to_cpu(a.max_recv_wr), >=, 32);
    g_assert_cmpuint(le32_to_cpu(a.max_send_sge), >=, 2);

    /* to ERR and back to RESET */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RESET, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);
}

/* ---- 2. commands: error paths ---- */

static void test_cmd_bad_opcode(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    static const uint8_t bad[] = { 0x00, 0x09, 0x12, 0x34, 0x42, 0x54,
                                   0x62, 0x7f, 0xff };
    unsigned i;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        qrnic_cmd_init(&cmd, bad[i]);
        g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_OPCODE);
    }
    /* the queue still works */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, ARRAY_SIZE(bad) + 1);
}

static void test_cmd_bad_reserved(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint32_t out[6];

    env_basic(&e, obj, data);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.flags = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.rsvd_8 = cpu_to_le64(1ull << 63);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_DESTROY_PD);
    cmd.u.handle.handle = cpu_to_le32(e.pdn);
    cmd.u.handle.rsvd_4 = cpu_to_le32(1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = 4;
    cmd.u.create_cq.rsvd_1 = 1;
    cmd.u.create_cq.ring.addr = cpu_to_le64(e.cq.buf);
    cmd.u.create_cq.ring.npages = cpu_to_le32(2);
    cmd.u.create_cq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = 4;
    cmd.u.create_cq.ring.addr = cpu_to_le64(e.cq.buf);
    cmd.u.create_cq.ring.npages = cpu_to_le32(2);
    cmd.u.create_cq.ring.page_shift = 12;
    cmd.u.create_cq.ring.rsvd_14 = cpu_to_le16(1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    qrnic_cmd_init(&cmd, RNIC_CMD_SET_GID);
    cmd.u.gid.type = RNIC_GID_ROCE_V2_IPV4;
    cmd.u.gid.gid[10] = cmd.u.gid.gid[11] = 0xff;
    cmd.u.gid.vlan_id = cpu_to_le16(0xffff);
    cmd.u.gid.rsvd_30[1] = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    /* and the refused commands changed nothing: the PD is still there */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_HANDLE], ==, e.pdn + 1);
}

static void test_cmd_bad_uctx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn, uctx1, uctx2;

    env_basic(&e, obj, data);
    /* never allocated, and beyond max-uctx */
    g_assert_cmpuint(qrnic_create_pd(e.r, 1, &pdn), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0xffff, &pdn), ==,
                     RNIC_CMD_ERR_HANDLE);

    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx2), ==, RNIC_CMD_OK);
    g_assert_cmpuint(uctx2, !=, uctx1);
    /* max-uctx=2 */
    {
        uint32_t u3;

        g_assert_cmpuint(qrnic_alloc_uctx(e.r, &u3), ==,
                         RNIC_CMD_ERR_RESOURCE);
    }
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx1, &pdn), ==, RNIC_CMD_OK);
    /* another context may not touch it; the kernel may */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, uctx2, pdn), ==,
                     RNIC_CMD_ERR_ACCESS);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, pdn), ==,
                     RNIC_CMD_OK);

    /* a freed context is not usable */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx2), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx2, &pdn), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx2), ==,
                     RNIC_CMD_ERR_HANDLE);
}

static void test_cmd_bad_handle(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    static const uint8_t ops[] = {
        RNIC_CMD_DESTROY_PD, RNIC_CMD_DESTROY_CQ, RNIC_CMD_DESTROY_QP,
        RNIC_CMD_DEREG_MR, RNIC_CMD_DESTROY_SRQ, RNIC_CMD_DEALLOC_MW,
        RNIC_CMD_DEALLOC_UCTX,
    };
    static const uint32_t handles[] = {
        0, 2, 77, (2 << 8) | 1, 0xffffff, 0xffffffff,
    };
    QRnicCq cq;
    QRnicQp qp;
    unsigned i, j;

    env_basic(&e, obj, data);
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        for (j = 0; j < ARRAY_SIZE(handles); j++) {
            g_assert_cmpuint(qrnic_destroy(e.r, ops[i], 0, handles[j]), ==,
                             RNIC_CMD_ERR_HANDLE);
        }
    }
    /* EQ 1 does not exist; EQN max-eq is out of range */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 1), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 2), ==,
                     RNIC_CMD_ERR_HANDLE);
    /* CQ naming a missing EQ; QP naming a missing PD or CQ */
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 1), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, 99, e.cq.cqn,
                                     e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn, 99,
                                     e.cq.cqn, 4, 5), ==,
                     RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn, e.cq.cqn,
                                     0, 4, 5), ==, RNIC_CMD_ERR_HANDLE);
    /* MODIFY/QUERY of a missing QP */
    g_assert_cmpuint(qp_modify(&e, &(QRnicQp) { .qpn = 9 }, RNIC_QPS_INIT,
                               MASK_TO_INIT), ==, RNIC_CMD_ERR_HANDLE);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, 9, e.mr.buf, 128),
                     ==, RNIC_CMD_ERR_HANDLE);
    /* REG_MR on a missing PD */
    {
        QRnicMr mr;

        g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, 42, 0, QRNIC_PAGE), ==,
                         RNIC_CMD_ERR_HANDLE);
    }
    /* GID index out of range */
    {
        uint8_t gid[16];

        ipv4_gid(DEV_IP, gid);
        g_assert_cmpuint(qrnic_set_gid(e.r, 4, gid, dev_mac), ==,
                         RNIC_CMD_ERR_PARAM);
    }
    /* QUERY_PORT of port 2 */
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 2, e.mr.buf, 32),
                     ==, RNIC_CMD_ERR_HANDLE);
}

static void test_cmd_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn;
    QRnicCq cq;
    QRnicQp qp;
    QRnicMr mr;
    QRnicEq eq;
    unsigned i;

    env_basic(&e, obj, data);
    /* max-pd=3: env made one */
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_ERR_RESOURCE);
    /* max-cq=3 */
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==,
                     RNIC_CMD_ERR_RESOURCE);
    /* max-mr=3 */
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &mr, e.pdn, 0, QRNIC_PAGE), ==,
                     RNIC_CMD_ERR_RESOURCE);
    /* max-qp=4 */
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn,
                                         e.cq.cqn, e.cq.cqn, 2, 2),
                         ==, RNIC_CMD_OK);
    }
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RC, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 2, 2),
                     ==, RNIC_CMD_ERR_RESOURCE);
    /* max-eq=2: EQN 1 fits, EQN 2 does not, EQN 1 twice is busy/state */
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 2, 4), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 1, 4), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_eq(e.r, &eq, 1, 4), ==, RNIC_CMD_ERR_STATE);
}

static void test_cmd_busy(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);

    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 0), ==,
                     RNIC_CMD_ERR_BUSY);

    /* the QP still works after the refused destroys */
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_INIT);

    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, e.qp.qpn), ==,
                     RNIC_CMD_OK);
    /* the MR still holds the PD */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_ERR_BUSY);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEREG_MR, 0, e.mr.lkey), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, e.pdn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_EQ, 0, 0), ==,
                     RNIC_CMD_OK);
}

static void test_qp_bad_transition(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RESET);

    /* RESET -> RTR, RESET -> RTS, RESET -> SQD are not transitions */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_SQD, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_ERR_STATE);
    /* an unknown state */
    g_assert_cmpuint(qp_modify(&e, &e.qp, 7, RNIC_QP_ATTR_STATE), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);

    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    /* INIT -> RTS skips RTR */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_ERR_STATE);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
    /* RTR -> INIT goes backwards */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_ERR_STATE);
    /* CUR_STATE that does not match */
    {
        struct rnic_qp_attr a;

        attr_for(&a, RNIC_QPS_RTS);
        a.cur_qp_state = RNIC_QPS_INIT;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn,
                                         MASK_TO_RTS |
                                         RNIC_QP_ATTR_CUR_STATE, &a),
                         ==, RNIC_CMD_ERR_STATE);
    }
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

static void test_qp_bad_mask(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RESET);

    /* missing a required attribute */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                               MASK_TO_INIT & ~RNIC_QP_ATTR_PORT), ==,
                     RNIC_CMD_ERR_PARAM);
    /* one that RESET -> INIT does not allow for RC */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                               MASK_TO_INIT | RNIC_QP_ATTR_SQ_PSN), ==,
                     RNIC_CMD_ERR_PARAM);
    /* bits beyond the ABI */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT,
                               MASK_TO_INIT | (1u << 30)), ==,
                     RNIC_CMD_ERR_PARAM);
    /* a bad port */
    {
        struct rnic_qp_attr a;

        attr_for(&a, RNIC_QPS_INIT);
        a.port_num = 2;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_INIT, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RESET);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);

    /* INIT -> RTR without AV, and with a bad MTU or GID index */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR,
                               MASK_TO_RTR & ~RNIC_QP_ATTR_AV), ==,
                     RNIC_CMD_ERR_PARAM);
    {
        struct rnic_qp_attr a;

        attr_for(&a, RNIC_QPS_RTR);
        a.path_mtu = 6;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a),
                         ==, RNIC_CMD_ERR_PARAM);
        attr_for(&a, RNIC_QPS_RTR);
        a.av.sgid_index = 3;        /* no GID there */
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTR, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);

    /* RTR -> RTS without SQ_PSN, and with retry_cnt out of range */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS,
                               MASK_TO_RTS & ~RNIC_QP_ATTR_SQ_PSN), ==,
                     RNIC_CMD_ERR_PARAM);
    {
        struct rnic_qp_attr a;

        attr_for(&a, RNIC_QPS_RTS);
        a.retry_cnt = 8;
        g_assert_cmpuint(qrnic_modify_qp(e.r, e.qp.qpn, MASK_TO_RTS, &a),
                         ==, RNIC_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RTR);
}

static void test_cmd_query_short(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint64_t buf;
    uint8_t page[64];
    unsigned i;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qtest_memset(qrnic_qts(e.r), buf, 0xa5, QRNIC_PAGE);

    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_DEVICE, 0, buf,
                                 sizeof(struct rnic_device_attr) - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, buf,
                                 sizeof(struct rnic_port_attr) - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, buf,
                                 sizeof(struct rnic_qp_attr) - 1),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, buf, 0),
                     ==, RNIC_CMD_ERR_PARAM);

    /* nothing was written */
    qtest_memread(qrnic_qts(e.r), buf, page, sizeof(page));
    for (i = 0; i < sizeof(page); i++) {
        g_assert_cmphex(page[i], ==, 0xa5);
    }
}

/* ---- 3. page lists, ring sizes and SGE counts ---- */

static uint8_t create_cq_pbl(Env *e, unsigned log_size, uint64_t addr,
                             uint32_t npages, uint8_t shift, uint8_t levels)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = log_size;
    cmd.u.create_cq.eqn = 0;
    cmd.u.create_cq.ring.addr = cpu_to_le64(addr);
    cmd.u.create_cq.ring.npages = cpu_to_le32(npages);
    cmd.u.create_cq.ring.page_shift = shift;
    cmd.u.create_cq.ring.levels = levels;
    return qrnic_cmd(e->r, &cmd, NULL);
}

static uint8_t reg_mr_pbl(Env *e, uint64_t iova, uint64_t len,
                          uint64_t addr, uint32_t npages, uint8_t shift,
                          uint8_t levels)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(e->pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    cmd.u.reg_mr.iova = cpu_to_le64(iova);
    cmd.u.reg_mr.length = cpu_to_le64(len);
    cmd.u.reg_mr.pages.addr = cpu_to_le64(addr);
    cmd.u.reg_mr.pages.npages = cpu_to_le32(npages);
    cmd.u.reg_mr.pages.page_shift = shift;
    cmd.u.reg_mr.pages.levels = levels;
    return qrnic_cmd(e->r, &cmd, NULL);
}

static void test_pbl_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint64_t pages, list;
    struct rnic_device_attr da;
    uint64_t ents[2];

    env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    pages = qrnic_alloc(e.r, 4 * QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);

    /* CQ: log 4 needs 2 pages (dbrec + one of CQEs) */
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 0, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 3, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 0x80000000u, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages + 8, 2, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 13, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 12, 3), ==,
                     RNIC_CMD_ERR_PARAM);
    /* levels 1 with an unaligned entry */
    ents[0] = cpu_to_le64(pages);
    ents[1] = cpu_to_le64(pages + QRNIC_PAGE + 0x10);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    /* ... and fixed, it works */
    ents[1] = cpu_to_le64(pages + 2 * QRNIC_PAGE);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==, RNIC_CMD_OK);

    /* MR: page_shift out of 12..30, npages 0 or above max-mr-pages */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 11, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 31, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 0, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages,
                                le32_to_cpu(da.max_mr_pages) + 1, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages + 0x200, 1, 12, 0),
                     ==, RNIC_CMD_ERR_PARAM);
    /* length beyond the pages, and iova + length wrapping */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, 2 * QRNIC_PAGE, pages, 1, 12, 0),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(reg_mr_pbl(&e, UINT64_MAX - 0x100, QRNIC_PAGE, pages, 1,
                                12, 0), ==, RNIC_CMD_ERR_PARAM);
    /* a 2-level list whose directory points at an unaligned page */
    ents[0] = cpu_to_le64(list + QRNIC_PAGE / 2);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents[0]));
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, list, 1, 12, 2), ==,
                     RNIC_CMD_ERR_PARAM);
    /* good one (max-mr=3: env holds one) */
    g_assert_cmpuint(reg_mr_pbl(&e, pages, QRNIC_PAGE, pages, 1, 12, 0), ==,
                     RNIC_CMD_OK);
}

static void test_ring_size_errors(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t pages;

    env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 4 * QRNIC_PAGE);

    /* CQ log_size 0 and above RNIC_CQ_MAX_LOG_SIZE */
    g_assert_cmpuint(create_cq_pbl(&e, 0, pages, 2, 12, 0), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, RNIC_CQ_MAX_LOG_SIZE + 1, pages, 2, 12,
                                   0), ==, RNIC_CMD_ERR_PARAM);
    /* CQ ring page size must be 4 KiB */
    g_assert_cmpuint(create_cq_pbl(&e, 4, pages, 2, 13, 0), ==,
                     RNIC_CMD_ERR_PARAM);

    /* EQ log_size 0 and above the maximum */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ);
    cmd.u.eq.eqn = cpu_to_le32(1);
    cmd.u.eq.ring.addr = cpu_to_le64(pages);
    cmd.u.eq.ring.npages = cpu_to_le32(1);
    cmd.u.eq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.eq.log_size = RNIC_EQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* a vector the device does not have (msix-vectors=5) */
    cmd.u.eq.log_size = 4;
    cmd.u.eq.vector = cpu_to_le16(5);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);

    /* QP: SQ/RQ log sizes too big (0 is a one-entry ring) */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.max_recv_sge = 1;
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(pages);
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    cmd.u.create_qp.rq.addr = cpu_to_le64(pages + QRNIC_PAGE);
    cmd.u.create_qp.rq.npages = cpu_to_le32(1);
    cmd.u.create_qp.rq.page_shift = 12;
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.sq_log_size = RNIC_WQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.rq_log_size = RNIC_WQ_MAX_LOG_SIZE + 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* ring bigger than its pages: SQ log 5 is 8 KiB in one page */
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.sq_log_size = 5;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* unknown QP type */
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.qp_type = 9;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    /* and the good one */
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);
}

static void test_sge_count_errors(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t pages;

    env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 2 * QRNIC_PAGE);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.rq_log_size = 5;
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(pages);
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    cmd.u.create_qp.rq.addr = cpu_to_le64(pages + QRNIC_PAGE);
    cmd.u.create_qp.rq.npages = cpu_to_le32(1);
    cmd.u.create_qp.rq.page_shift = 12;

    /* max-sge=4 */
    cmd.u.create_qp.max_send_sge = 5;
    cmd.u.create_qp.max_recv_sge = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.max_recv_sge = 5;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_recv_sge = 1;
    cmd.u.create_qp.max_inline = cpu_to_le16(RNIC_MAX_INLINE + 1);
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
    cmd.u.create_qp.max_inline = 0;
    cmd.u.create_qp.max_send_sge = 4;
    cmd.u.create_qp.max_recv_sge = 4;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_OK);

    /* SRQ with too many SGEs */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.u.create_srq.log_size = 5;
    cmd.u.create_srq.max_sge = 5;
    cmd.u.create_srq.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(pages);
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, NULL), ==, RNIC_CMD_ERR_PARAM);
}

/* ---- 4. enable ---- */

static void test_cmd_before_enable(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;
    uint64_t base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << 2);
    uint64_t before = qrnic_counter(r, RNIC_CNT_GUEST_ERR);

    /* queue programmed but ENABLE not set */
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, base);
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_HI, base >> 32);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, 2);
    r->cmdq = base;
    r->cmdq_log_size = 2;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    g_assert_false(qrnic_cmd_wait(r, 0, &resp, 200));
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    0);
    g_assert_cmpuint(qrnic_counter(r, RNIC_CNT_GUEST_ERR), >, before);

    /* enabling later starts from a fresh queue and works */
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/*
 * One refused enable: READY stays clear and a guest error is counted.
 * Clearing ENABLE afterwards resets the device (counters included).
 */
static void bad_enable(QRnic *r, uint64_t base, uint32_t log_size)
{
    uint64_t before = qrnic_counter(r, RNIC_CNT_GUEST_ERR);

    g_assert_cmphex(qrnic_try_enable(r, base, log_size) & RNIC_STATUS_READY,
                    ==, 0);
    g_assert_cmpuint(qrnic_counter(r, RNIC_CNT_GUEST_ERR), >, before);
    qrnic_writel(r, RNIC_REG_CTRL, 0);
}

static void test_enable_bad_log_size(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << 4);
    struct rnic_cmd cmd;

    bad_enable(r, base, 0);
    bad_enable(r, base, RNIC_CMDQ_MAX_LOG_SIZE + 1);
    bad_enable(r, base, 0xffffffff);

    /* enabled with a bad size: a command rung now is ignored */
    g_assert_cmphex(qrnic_try_enable(r, base, 0) & RNIC_STATUS_READY, ==, 0);
    r->cmdq_log_size = 4;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    qrnic_settle(r);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qtest_readb(qrnic_qts(r), base +
                                 offsetof(struct rnic_cmd, resp.done)), ==, 0);

    /* the largest valid size works */
    qrnic_writel(r, RNIC_REG_CTRL, RNIC_CTRL_RESET);
    base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << RNIC_CMDQ_MAX_LOG_SIZE);
    g_assert_cmphex(qrnic_try_enable(r, base, RNIC_CMDQ_MAX_LOG_SIZE) &
                    RNIC_STATUS_READY, ==, RNIC_STATUS_READY);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

static void test_enable_unaligned(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t base = qrnic_alloc(r, 2 * QRNIC_PAGE);

    bad_enable(r, base + 256, 2);
    bad_enable(r, base + 8, 2);
    bad_enable(r, 0, 2);
    g_assert_cmphex(qrnic_try_enable(r, base, 2) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
}

/* CMDQ_BASE and CMDQ_LOG_SIZE are locked while enabled. */
static void test_cmdq_regs_locked(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    uint64_t base;

    qrnic_enable(r);
    base = r->cmdq;
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, (uint32_t)base + QRNIC_PAGE);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, 1);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==,
                    (uint32_t)base);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 4);
    /* the queue still runs from the latched base */
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* A PI more than the ring size ahead of CI is fatal. */
static void test_cmdq_overrun(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;

    qrnic_enable(r);
    qrnic_writel(r, RNIC_REG_CMDQ_PI, (1u << r->cmdq_log_size) + 1);
    qrnic_settle(r);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    RNIC_STATUS_FATAL);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 1);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);

    /* stopped until reset */
    r->cmdq_pi = 0;
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(r, &cmd);
    g_assert_false(qrnic_cmd_wait(r, 0, &resp, 200));

    qrnic_reset(r);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_FATAL | RNIC_STATUS_READY), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_FATAL_CODE), ==, 0);
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* Several commands rung with one doorbell complete in order. */
static void test_cmdq_batch(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;
    struct rnic_cmd_resp resp;
    unsigned i, n = 20;     /* wraps the 16-entry queue */

    qrnic_enable(r);
    for (i = 0; i < n; i++) {
        uint32_t idx;

        if (i % 2) {
            qrnic_cmd_init(&cmd, RNIC_CMD_DESTROY_PD);
            cmd.u.handle.handle = cpu_to_le32(1);
        } else {
            qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
        }
        idx = qrnic_cmd_post(r, &cmd);
        g_assert_true(qrnic_cmd_wait(r, idx, &resp, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
        if (!(i % 2)) {
            g_assert_cmpuint(le32_to_cpu(resp.out[RNIC_OUT_HANDLE]), ==, 1);
        }
    }
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, n);

    /* three at once (max-pd=3) */
    for (i = 0; i < 3; i++) {
        uint32_t idx = r->cmdq_pi & 15;

        qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
        cmd.hdr.cookie = cpu_to_le32(2000 + i);
        qtest_memwrite(qrnic_qts(r), r->cmdq + idx * RNIC_CMD_ENTRY_SIZE,
                       &cmd, sizeof(cmd));
        r->cmdq_pi++;
    }
    qrnic_writel(r, RNIC_REG_CMDQ_PI, r->cmdq_pi);
    for (i = 0; i < 3; i++) {
        g_assert_true(qrnic_cmd_wait(r, (n + i) & 15, &resp,
                                     QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
        g_assert_cmpuint(le32_to_cpu(resp.cookie), ==, 2000 + i);
        g_assert_cmpuint(le32_to_cpu(resp.out[RNIC_OUT_HANDLE]), ==, 1 + i);
    }
}

/* ---- 5/6. MMIO corner cases ---- */

static void test_db_read(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_SQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, RNIC_DB_CQ), ==, 0);
    g_assert_cmphex(qpci_io_readl(&e.r->dev, e.r->db, RNIC_DB_EQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db,
                                  RNIC_DB_PAGE_SIZE + RNIC_DB_RQ), ==, 0);
    g_assert_cmphex(qpci_io_readq(&e.r->dev, e.r->db, 0x800), ==, 0);
    /* the device still works */
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
}

static void test_regs_unknown_write(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QRnic *r = obj;
    static const uint32_t offs[] = {
        RNIC_REG_MAGIC, RNIC_REG_VERSION, RNIC_REG_STATUS, RNIC_REG_DB_PAGES,
        RNIC_REG_MSIX_VECTORS, RNIC_REG_FATAL_CODE, RNIC_REG_CMDQ_CI,
        RNIC_REG_MAC_LO, RNIC_REG_MAC_HI, 0x001c, 0x0034, 0x0040, 0x00fc,
        RNIC_REG_CNT_BASE, RNIC_REG_CNT_BASE + 8 * RNIC_CNT_MAX, 0x0800,
        0x8000, RNIC_REGS_SIZE - 4,
    };
    uint32_t snap[ARRAY_SIZE(offs)];
    struct rnic_cmd cmd;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        snap[i] = qrnic_readl(r, offs[i]);
    }
    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        qrnic_writel(r, offs[i], 0xdeadbeef);
        qpci_io_writeb(&r->dev, r->regs, offs[i] + 1, 0x5a);
    }
    for (i = 0; i < ARRAY_SIZE(offs); i++) {
        if (offs[i] == RNIC_REG_STATUS) {
            continue;
        }
        g_assert_cmphex(qrnic_readl(r, offs[i]), ==, snap[i]);
    }
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    /* still works */
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_query(r, RNIC_CMD_QUERY_PORT, 1,
                                 qrnic_alloc(r, QRNIC_PAGE), 32), ==,
                     RNIC_CMD_OK);
}

/* ---- doorbell guest errors ---- */

static void test_db_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    send_wqe(&w, 1, RNIC_WR_SEND, 1);
    sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);

    before = qrnic_counter(e.r, RNIC_CNT_GUEST_ERR);
    /* unknown QPN, a user page that does not own the QP, a 32-bit write */
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, 77 | 1ull << 32);
    qrnic_doorbell(e.r, 1, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qpci_io_writel(&e.r->dev, e.r->db, RNIC_DB_SQ, e.qp.qpn);
    /* a producer index too far ahead of the ring (16 entries) */
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 100ull << 32);
    /* unknown doorbell offset */
    qrnic_doorbell(e.r, 0, 0x100, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_GUEST_ERR), >=, before + 5);
    assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);

    /* the right doorbell still sends */
    qrnic_ring_sq(e.r, &e.qp);
    {
        Roce f;

        recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    }
}

/* ---- 7. bad WQEs ---- */

static void test_wqe_bad_opcode(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    sge_of(&sge, &e.mr, 0, 16);
    send_wqe(&w, 0x1111, 0x3f, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    send_wqe(&w, 0x2222, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);

    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x1111);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);

    /* the QP is in ERR, so the good WQE behind it is flushed */
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x2222);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 1);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_CQE_ERR), ==, 2);
    assert_no_frame(&e, 50);

    /* a WQE posted while in ERR is flushed as well */
    send_wqe(&w, 0x3333, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x3333);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
}

static void test_wqe_bad_lkey(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    sge_of(&sge, &e.mr, 0, 16);
    sge.lkey = cpu_to_le32(e.mr.lkey + 0x100);
    send_wqe(&w, 0x77, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
    assert_no_frame(&e, 50);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

static void test_wqe_bounds(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    /* SGE runs past the end of the MR */
    sge_of(&sge, &e.mr, QRNIC_PAGE - 8, 16);
    send_wqe(&w, 0x88, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x88);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
    assert_no_frame(&e, 50);
}

static void test_wqe_too_many_sge(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge[3];
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);     /* max_send_sge 2 */
    sge_of(&sge[0], &e.mr, 0, 4);
    sge_of(&sge[1], &e.mr, 4, 4);
    sge_of(&sge[2], &e.mr, 8, 4);
    send_wqe(&w, 0x99, RNIC_WR_SEND, 3);
    qrnic_post_send(e.r, &e.qp, &w, sge, 3);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x99);
    g_assert_true(cqe.status == RNIC_WC_LOC_QP_OP_ERR ||
                  cqe.status == RNIC_WC_LOC_LEN_ERR);
    assert_no_frame(&e, 50);
}

static void test_wqe_inline_too_long(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);     /* max_inline 64 */
    send_wqe(&w, 0xaa, RNIC_WR_SEND, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(65);
    qrnic_post_send(e.r, &e.qp, &w, NULL, 0);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xaa);
    g_assert_true(cqe.status == RNIC_WC_LOC_QP_OP_ERR ||
                  cqe.status == RNIC_WC_LOC_LEN_ERR);
    assert_no_frame(&e, 50);
}

/* A doorbell on a QP in RESET or INIT sends nothing. */
static void test_sq_not_ready(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);
    sge_of(&sge, &e.mr, 0, 16);
    send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    assert_no_frame(&e, 100);
    assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
}

/* ---- 8. RC SEND on the wire ---- */

static void test_rc_send_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge[2];
    struct rnic_cqe cqe;
    uint8_t payload[100];
    Roce f, ack;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    fill_pattern(payload, sizeof(payload), 0x31);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf + 0x100, payload, 60);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf + 0x800, payload + 60, 40);
    sge_of(&sge[0], &e.mr, 0x100, 60);
    sge_of(&sge[1], &e.mr, 0x800, 40);
    send_wqe(&w, 0xabcdef01, RNIC_WR_SEND, 2);
    qrnic_post_send(e.r, &e.qp, &w, sge, 2);
    qrnic_ring_sq(e.r, &e.qp);

    recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_true(f.ack_req);
    g_assert_cmpuint(f.sport, >=, 0xc000);
    g_assert_cmpuint(f.ttl, ==, 64);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));
    /* one frame on the wire, counted once */
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_BYTES), ==, e.frame_len);

    /* not complete before the ACK */
    assert_cq_empty(&e, &e.cq);

    roce_init(&ack, OPC_ACK, e.qp.qpn, QP_SQ_PSN);
    ack.ack_req = false;
    ack.syndrome = AETH_ACK(0x1f);
    ack.msn = 1;
    send_roce(&e, &ack);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xabcdef01);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 1);
}

/* Two messages, and an inline one: consecutive PSNs. */
static void test_rc_send_tx_inline(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    struct rnic_send_wqe w;
    struct rnic_cqe cqe;
    uint8_t payload[48];
    Roce f, ack;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    fill_pattern(payload, sizeof(payload), 0x77);

    send_wqe(&w, 5, RNIC_WR_SEND_IMM, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(sizeof(payload));
    stl_be_p(&w.imm_inv, 0x11223344);     /* as on the wire */
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + sizeof(w), payload, sizeof(payload));
    qtest_memwrite(qrnic_qts(e.r), e.qp.sq_buf, buf, sizeof(buf));
    e.qp.sq_pi = 1;
    qrnic_ring_sq(e.r, &e.qp);

    recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY_IMM);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmphex(f.imm, ==, 0x11223344);
    g_assert_cmpmem(f.payload, f.payload_len, payload, sizeof(payload));

    roce_init(&ack, OPC_ACK, e.qp.qpn, QP_SQ_PSN);
    ack.ack_req = false;
    ack.syndrome = AETH_ACK(0x1f);
    ack.msn = 1;
    send_roce(&e, &ack);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 5);
}

/* No ACK: the local ACK timer (virtual clock) resends the same PSN. */
static void test_rc_retransmit(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce f1, f2;
    uint8_t p1[32];

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    sge_of(&sge, &e.mr, 0, 32);
    fill_pattern(p1, sizeof(p1), 3);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, p1, sizeof(p1));
    send_wqe(&w, 9, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    recv_roce(&e, &f1);
    g_assert_cmphex(f1.psn, ==, QP_SQ_PSN);

    /* timeout 14 is 4.096 us << 14, about 67 ms */
    qtest_clock_step(qrnic_qts(e.r), 200 * 1000 * 1000);
    recv_roce(&e, &f2);
    g_assert_cmphex(f2.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f2.psn, ==, QP_SQ_PSN);
    g_assert_cmpmem(f2.payload, f2.payload_len, p1, sizeof(p1));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), >=, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ACK_TIMEOUTS), >=, 1);
}

/* A PSN sequence NAK rewinds; a remote access NAK fails the WQE. */
static void test_rc_nak_rcvd(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    Roce f, nak;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    sge_of(&sge, &e.mr, 0, 8);
    send_wqe(&w, 0x51, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);

    roce_init(&nak, OPC_ACK, e.qp.qpn, QP_SQ_PSN);
    nak.ack_req = false;
    nak.syndrome = AETH_NAK(NAK_PSN_SEQ);
    send_roce(&e, &nak);
    recv_roce(&e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_RCVD), ==, 1);

    nak.syndrome = AETH_NAK(NAK_REM_ACCESS);
    send_roce(&e, &nak);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x51);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

/* ---- 9. RC SEND received ---- */

static void post_recv_buf(Env *e, uint64_t wr_id, uint64_t off, uint32_t len)
{
    struct rnic_sge sge;

    sge_of(&sge, &e->mr, off, len);
    qrnic_post_recv(e->r, &e->qp, wr_id, &sge, 1);
    qrnic_ring_rq(e->r, &e->qp);
}

/* An ACK (any credit count) or the exact NAK/RNR NAK @syndrome. */
static void expect_ack(Env *e, uint8_t syndrome, uint32_t psn)
{
    Roce f;

    recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ACK);
    if (syndrome >> 5 == 0) {
        g_assert_cmphex(f.syndrome >> 5, ==, 0);
    } else {
        g_assert_cmphex(f.syndrome, ==, syndrome);
    }
    g_assert_cmphex(f.psn, ==, psn);
}

static void test_rc_send_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[77], got[128], zero[128] = { 0 };
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0xfeed, 0x200, 128);
    qrnic_settle(e.r);

    fill_pattern(payload, sizeof(payload), 0x90);
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);

    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xfeed);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, e.qp.qpn);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0);

    qtest_memread(qrnic_qts(e.r), e.mr.buf + 0x200, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(payload), payload, sizeof(payload));
    /* nothing beyond the message was written */
    g_assert_cmpmem(got + sizeof(payload), sizeof(got) - sizeof(payload),
                    zero, sizeof(got) - sizeof(payload));

    expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_BYTES), >=,
                     sizeof(payload));
}

static void test_rc_send_rx_bad_icrc(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[40], buf[256], got[40], zero[40] = { 0 };
    size_t len;
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 1, 0, 64);
    qrnic_settle(e.r);

    fill_pattern(payload, sizeof(payload), 0x10);
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    len = roce_build(&f, buf, sizeof(buf));
    /* flip one ICRC bit */
    buf[L3_OFF + lduw_be_p(buf + L3_OFF + 2) - 1] ^= 0x10;
    sock_send(e.fd, buf, len);
    qrnic_settle(e.r);

    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);
    assert_cq_empty(&e, &e.cq);
    assert_no_frame(&e, 50);
    qtest_memread(qrnic_qts(e.r), e.mr.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));

    /* a payload bit flipped: the ICRC catches that too */
    len = roce_build(&f, buf, sizeof(buf));
    buf[BTH_OFF + BTH_LEN + 3] ^= 1;
    sock_send(e.fd, buf, len);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_ICRC_ERR), ==, 2);
    assert_cq_empty(&e, &e.cq);

    /* the good frame is then accepted */
    send_roce(&e, &f);
    {
        struct rnic_cqe cqe;

        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(payload));
    }
}

/* Frames that are not for a QP of ours are dropped and counted. */
static void test_rx_dropped(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint8_t buf[256];
    size_t len;
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 1, 0, 64);
    qrnic_settle(e.r);

    /* unknown QPN */
    roce_init(&f, OPC_SEND_ONLY, 0x777, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    /* unknown BTH opcode (ICRC correct) */
    roce_init(&f, 0x1f, e.qp.qpn, QP_RQ_PSN);
    send_roce(&e, &f);
    /* truncated: IP length says more than the frame has */
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    len = roce_build(&f, buf, sizeof(buf));
    sock_send(e.fd, buf, BTH_OFF + 6);
    /* bad IPv4 header checksum */
    buf[L3_OFF + 10] ^= 0xff;
    sock_send(e.fd, buf, len);
    qrnic_settle(e.r);

    /* the first two are RoCE for us; the last two may count as Ethernet */
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), >=, 2);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) +
                     qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 4);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);
    assert_cq_empty(&e, &e.cq);
    assert_no_frame(&e, 50);
}

/* Out of order, duplicate and RNR cases of the responder. */
static void test_rc_rx_psn(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    fill_pattern(payload, sizeof(payload), 0x42);
    post_recv_buf(&e, 0x10, 0, 64);
    qrnic_settle(e.r);

    /* ahead of the expected PSN: one sequence NAK naming the expected PSN */
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + 5);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    expect_ack(&e, AETH_NAK(NAK_PSN_SEQ), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_SENT), ==, 1);
    /* ... and only one per gap */
    f.psn = QP_RQ_PSN + 6;
    send_roce(&e, &f);
    assert_no_frame(&e, 100);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_SEQ_NAK_SENT), ==, 1);
    assert_cq_empty(&e, &e.cq);

    /* in order: accepted */
    f.psn = QP_RQ_PSN;
    send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x10);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);

    /* the same PSN again is a duplicate: re-ACKed, no second CQE */
    send_roce(&e, &f);
    expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_DUP_REQ), ==, 1);
    assert_cq_empty(&e, &e.cq);

    /* next PSN with no receive WQE posted: RNR NAK with min_rnr_timer */
    f.psn = QP_RQ_PSN + 1;
    send_roce(&e, &f);
    expect_ack(&e, AETH_RNR(12), QP_RQ_PSN + 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RNR_NAK_SENT), ==, 1);
    assert_cq_empty(&e, &e.cq);

    /* once a WQE is posted, the retried packet lands */
    post_recv_buf(&e, 0x11, 64, 64);
    qrnic_settle(e.r);
    send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x11);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 1);
    expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 1);
}

/* A message larger than the receive buffer fails with LOC_LEN_ERR. */
static void test_rc_rx_too_long(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;
    uint8_t payload[64];
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0x21, 0, 32);
    qrnic_settle(e.r);
    fill_pattern(payload, sizeof(payload), 1);
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x21);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_LEN_ERR);
    recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ACK);
    g_assert_cmphex(f.syndrome, ==, AETH_NAK(NAK_INV_REQ));
}

/* ---- 10. RDMA WRITE ---- */

static void test_rc_write_bad_rkey(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[32], got[64], zero[64] = { 0 };
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    fill_pattern(payload, sizeof(payload), 0xc0);

    roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = e.mr.buf + 16;
    f.rkey = e.mr.rkey ^ 0x01;         /* wrong key byte */
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);

    qtest_memread(qrnic_qts(e.r), e.mr.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
}

static void test_rc_write_bounds(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint8_t payload[32], got[32], zero[32] = { 0 };
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    fill_pattern(payload, sizeof(payload), 0xc0);

    /* runs 16 bytes past the end of the MR */
    roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = e.mr.buf + QRNIC_PAGE - 16;
    f.rkey = e.mr.rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + QRNIC_PAGE - 16, got, 16);
    g_assert_cmpmem(got, 16, zero, 16);
}

static void test_rc_write_no_access(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Env e;
    QRnicMr ro;
    uint8_t payload[16], got[16], zero[16] = { 0 };
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    /* an MR without REMOTE_WRITE */
    g_assert_cmpuint(qrnic_reg_mr(e.r, &ro, e.pdn, RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_READ, QRNIC_PAGE),
                     ==, RNIC_CMD_OK);
    fill_pattern(payload, sizeof(payload), 0xd0);
    roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = ro.buf;
    f.rkey = ro.rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    expect_ack(&e, AETH_NAK(NAK_REM_ACCESS), QP_RQ_PSN);
    qtest_memread(qrnic_qts(e.r), ro.buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
}

/* A good WRITE lands across a two-page MR given as a levels-1 list. */
static void test_rc_write_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint64_t p0, p1, list, ents[2], iova = 0x7f0000000000ull;
    uint32_t out[6], rkey;
    uint8_t payload[64], got[64];
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    p1 = qrnic_alloc(e.r, QRNIC_PAGE);
    p0 = qrnic_alloc(e.r, QRNIC_PAGE);      /* not contiguous with p1 */
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    ents[0] = cpu_to_le64(p0);
    ents[1] = cpu_to_le64(p1);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(e.pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE |
                                      RNIC_ACCESS_REMOTE_WRITE);
    cmd.u.reg_mr.iova = cpu_to_le64(iova);
    cmd.u.reg_mr.length = cpu_to_le64(2 * QRNIC_PAGE);
    cmd.u.reg_mr.pages.addr = cpu_to_le64(list);
    cmd.u.reg_mr.pages.npages = cpu_to_le32(2);
    cmd.u.reg_mr.pages.page_shift = 12;
    cmd.u.reg_mr.pages.levels = 1;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    rkey = out[RNIC_OUT_RKEY];

    fill_pattern(payload, sizeof(payload), 0xe0);
    roce_init(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.va = iova + QRNIC_PAGE - 24;
    f.rkey = rkey;
    f.dma_len = sizeof(payload);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);

    qtest_memread(qrnic_qts(e.r), p0 + QRNIC_PAGE - 24, got, 24);
    qtest_memread(qrnic_qts(e.r), p1, got + 24, 40);
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));
    /* a WRITE without immediate makes no CQE */
    assert_cq_empty(&e, &e.cq);
}

/* ---- QP to ERR flushes posted receives ---- */

static void test_qp_err_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);
    post_recv_buf(&e, 0x61, 0, 64);
    post_recv_buf(&e, 0x62, 64, 64);
    qrnic_settle(e.r);
    assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x61);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x62);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
    assert_cq_empty(&e, &e.cq);
}

/* ---- CQ overrun is never silent ---- */

static void test_cq_overrun(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicCq small;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_eqe eqe;
    bool cq_err = false;
    unsigned i;

    env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_cq(e.r, &small, 1, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, e.pdn,
                                     small.cqn, small.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    /* 4 bad WQEs on a 2-entry CQ that nobody consumes */
    sge_of(&sge, &e.mr, 0, 8);
    sge.lkey = cpu_to_le32(0xdead00);
    for (i = 0; i < 4; i++) {
        send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_ERR, RNIC_QP_ATTR_STATE),
                     ==, RNIC_CMD_OK);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    while (qrnic_eq_poll(e.r, &e.eq, &eqe)) {
        if (eqe.type == RNIC_EQE_CQ_ERR) {
            g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, small.cqn);
            cq_err = true;
        }
    }
    g_assert_true(cq_err);
}

/* ---- 11. reset ---- */

static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t pdn, old_qpn;
    QRnicCq cq;
    Roce f;
    unsigned i;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    old_qpn = e.qp.qpn;
    sge_of(&sge, &e.mr, 0, 8);
    send_wqe(&w, 1, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    recv_roce(&e, &f);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);

    qrnic_reset(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CTRL), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    for (i = 0; i < RNIC_CNT_MAX; i++) {
        g_assert_cmpuint(qrnic_counter(e.r, i), ==, 0);
    }

    /* no retransmission of the QP that no longer exists */
    qtest_clock_step(qrnic_qts(e.r), 500 * 1000 * 1000);
    assert_no_frame(&e, 100);

    /* handles start again from the bottom */
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_eq(e.r, &e.eq, 0, 4), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, e.pdn);
    g_assert_cmpuint(qrnic_create_cq(e.r, &cq, 4, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(cq.cqn, ==, e.cq.cqn);
    g_assert_cmpuint(qrnic_create_qp(e.r, &e.qp, RNIC_QPT_RC, pdn, cq.cqn,
                                     cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    g_assert_cmpuint(e.qp.qpn, ==, old_qpn);
    /* the old GID is gone: an AV naming it is refused */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_ERR_PARAM);
}

/* Clearing ENABLE without RESET does the same. */
static void test_disable(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t pdn;

    env_basic(&e, obj, data);
    qrnic_writel(e.r, RNIC_REG_CTRL, 0);
    qrnic_settle(e.r);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, 0);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, 1);
}

/* ---- GSI QP ---- */

static void test_gsi_qp(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp gsi, gsi2;

    env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_create_qp(e.r, &gsi, RNIC_QPT_GSI, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(gsi.qpn, ==, 1);
    g_assert_cmpuint(qrnic_create_qp(e.r, &gsi2, RNIC_QPT_GSI, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 5),
                     !=, RNIC_CMD_OK);
    env_rc_qp(&e, RNIC_QPS_RESET);
    g_assert_cmpuint(e.qp.qpn, ==, 2);
}

/* ---- UD and GSI send: the DETH ---- */

/* Where no memory or device decodes: DMA there fails. */
#define BAD_DMA         0x7f0000000000ull

#define OPC_UD_SEND_ONLY    0x64
#define DETH_LEN            8
#define GSI_QKEY            0x80010000u
#define UD_QKEY             0x11223344u

/* A UD/GSI QP on the env's PD and CQ, moved to RTS with @qkey. */
static void env_ud_qp(Env *e, QRnicQp *qp, uint8_t type, uint32_t qkey)
{
    struct rnic_qp_attr a;
    uint32_t port = type == RNIC_QPT_UD ? RNIC_QP_ATTR_PORT : 0;

    g_assert_cmpuint(qrnic_create_qp(e->r, qp, type, e->pdn, e->cq.cqn,
                                     e->cq.cqn, 4, 5), ==, RNIC_CMD_OK);
    attr_for(&a, RNIC_QPS_INIT);
    a.qkey = cpu_to_le32(qkey);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PKEY_INDEX |
                                     RNIC_QP_ATTR_QKEY | port, &a),
                     ==, RNIC_CMD_OK);
    attr_for(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    attr_for(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_SQ_PSN, &a),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qp_state(e, qp), ==, RNIC_QPS_RTS);
}

/*
 * Posts and rings a signaled UD SEND of @len bytes from the MR at offset
 * 0 to PEER_QPN, with the address vector at offset 64 of the WQE.
 */
static void post_ud_send(Env *e, QRnicQp *qp, uint64_t wr_id, uint32_t qkey,
                         uint8_t sgid_index, uint32_t len)
{
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    struct rnic_send_wqe w;
    struct rnic_av av = { 0 };
    struct rnic_sge sge;
    uint32_t idx = qp->sq_pi & ((1u << qp->sq_log_size) - 1);

    send_wqe(&w, wr_id, RNIC_WR_SEND, 1);
    w.ud_qpn = cpu_to_le32(PEER_QPN);
    w.ud_qkey = cpu_to_le32(qkey);
    ipv4_gid(PEER_IP, av.dgid);
    memcpy(av.dmac, peer_mac, 6);
    av.sgid_index = sgid_index;
    av.hop_limit = 64;
    av.net_type = RNIC_NET_IPV4;
    sge_of(&sge, &e->mr, 0, len);
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + 64, &av, sizeof(av));
    memcpy(buf + 128, &sge, sizeof(sge));
    qtest_memwrite(qrnic_qts(e->r), qp->sq_buf + idx * RNIC_SQ_WQE_SIZE,
                   buf, sizeof(buf));
    qp->sq_pi++;
    qrnic_ring_sq(e->r, qp);
}

/* The next frame is a UD SEND from @qp with @qkey, and it completes. */
static void expect_ud_send(Env *e, QRnicQp *qp, uint64_t wr_id, uint32_t qkey,
                           const uint8_t *payload, uint32_t len)
{
    struct rnic_cqe cqe;
    Roce f;

    recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_UD_SEND_ONLY);
    g_assert_cmpuint(f.payload_len, ==, DETH_LEN + len);
    g_assert_cmphex((uint32_t)ldl_be_p(f.payload), ==, qkey);
    g_assert_cmphex(ld24(f.payload + 5), ==, qp->qpn);
    g_assert_cmpmem(f.payload + DETH_LEN, len, payload, len);

    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qp->qpn);
}

/*
 * A UD/GSI WQE qkey with the top bit set means the QP's own: the fixed
 * GSI qkey for QP1 (whatever MODIFY_QP set), the MODIFY_QP one for UD.
 * A qkey with the top bit clear goes out as it is.
 */
static void test_ud_gsi_qkey(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp gsi, ud;
    uint8_t payload[32];

    env_basic(&e, obj, data);
    fill_pattern(payload, sizeof(payload), 0x42);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, payload, sizeof(payload));

    env_ud_qp(&e, &gsi, RNIC_QPT_GSI, 0x1234);
    g_assert_cmpuint(gsi.qpn, ==, 1);
    post_ud_send(&e, &gsi, 0x101, 0x80000000u, 0, sizeof(payload));
    expect_ud_send(&e, &gsi, 0x101, GSI_QKEY, payload, sizeof(payload));
    post_ud_send(&e, &gsi, 0x102, 0x5678, 0, sizeof(payload));
    expect_ud_send(&e, &gsi, 0x102, 0x5678, payload, sizeof(payload));

    env_ud_qp(&e, &ud, RNIC_QPT_UD, UD_QKEY);
    g_assert_cmpuint(ud.qpn, >=, 2);
    post_ud_send(&e, &ud, 0x201, 0x80000000u, 0, sizeof(payload));
    expect_ud_send(&e, &ud, 0x201, UD_QKEY, payload, sizeof(payload));
    post_ud_send(&e, &ud, 0x202, 0x7654321, 0, sizeof(payload));
    expect_ud_send(&e, &ud, 0x202, 0x7654321, payload, sizeof(payload));

    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 4);
    assert_no_frame(&e, 50);
}

/* A UD WQE whose AV names a GID that does not exist sends nothing. */
static void test_ud_bad_sgid(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp ud;
    struct rnic_cqe cqe;

    env_basic(&e, obj, data);
    env_ud_qp(&e, &ud, RNIC_QPT_UD, UD_QKEY);
    post_ud_send(&e, &ud, 0x301, UD_QKEY, 3, 16);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x301);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    assert_no_frame(&e, 50);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
}

/* ---- Ethernet function ---- */

/* Register offsets relative to a ring's BASE_LO. */
#define NQ_BASE_HI      0x04
#define NQ_LOG_SIZE     0x08
#define NQ_PI           0x0c
#define NQ_CI           0x10
#define ETH_FRAME_LEN   98          /* IPv4 ICMP echo, 56 data bytes */

static uint64_t guest_errs(QRnic *r)
{
    return qrnic_counter(r, RNIC_CNT_GUEST_ERR);
}

/* Programs ring @q (RNIC_REG_TXQ_BASE_LO or RNIC_REG_RXQ_BASE_LO). */
static void net_ring_set(QRnic *r, uint32_t q, uint64_t base,
                         uint32_t log_size)
{
    qrnic_writel(r, q, (uint32_t)base);
    qrnic_writel(r, q + NQ_BASE_HI, base >> 32);
    qrnic_writel(r, q + NQ_LOG_SIZE, log_size);
}

/* A fresh 16-entry ring for @q; returns its guest address. */
static uint64_t net_ring_new(QRnic *r, uint32_t q)
{
    uint64_t ring = qrnic_alloc(r, QRNIC_PAGE);

    net_ring_set(r, q, ring, 4);
    return ring;
}

static void net_desc_put(QRnic *r, uint64_t ring, uint32_t idx, uint64_t addr,
                         uint16_t len, uint16_t buf_len)
{
    struct rnic_net_desc d = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le16(len),
        .buf_len = cpu_to_le16(buf_len),
    };

    qtest_memwrite(qrnic_qts(r), ring + idx * sizeof(d), &d, sizeof(d));
}

/* Waits for DONE in descriptor @idx; false on timeout. */
static bool net_desc_wait(QRnic *r, uint64_t ring, uint32_t idx,
                          struct rnic_net_desc *d)
{
    int64_t deadline = g_get_monotonic_time() + QRNIC_TIMEOUT_MS * 1000;

    for (;;) {
        qtest_memread(qrnic_qts(r), ring + idx * sizeof(*d), d, sizeof(*d));
        if (d->status & RNIC_NET_DESC_DONE) {
            return true;
        }
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
        g_usleep(200);
    }
}

/* An IPv4 ICMP echo request from the peer to @dmac: not RoCE. */
static void build_icmp(uint8_t *buf, const uint8_t *dmac, uint8_t seed)
{
    uint8_t *ip = buf + ETH_HLEN;

    memset(buf, 0, ETH_FRAME_LEN);
    memcpy(buf, dmac, 6);
    memcpy(buf + 6, peer_mac, 6);
    st16(buf + 12, 0x0800);
    ip[0] = 0x45;
    st16(ip + 2, ETH_FRAME_LEN - ETH_HLEN);
    ip[8] = 64;
    ip[9] = 1;
    stl_be_p(ip + 12, PEER_IP);
    stl_be_p(ip + 16, DEV_IP);
    st16(ip + 10, ip4_csum(ip));
    ip[IP4_HLEN] = 8;           /* echo request */
    fill_pattern(ip + IP4_HLEN + 8, ETH_FRAME_LEN - ETH_HLEN - IP4_HLEN - 8,
                 seed);
}

/* A non-RoCE frame lands in the posted RX buffer with its length. */
static void test_eth_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN], got[ETH_FRAME_LEN + 16];
    uint8_t zero[16] = { 0 };
    uint64_t ring, buf;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, buf, 0, 2048);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 1);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 1);

    build_icmp(frame, dev_mac, 0x10);
    sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, sizeof(frame));
    g_assert_cmpuint(le16_to_cpu(d.buf_len), ==, 2048);
    qtest_memread(qrnic_qts(e.r), buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(frame), frame, sizeof(frame));
    g_assert_cmpmem(got + sizeof(frame), 16, zero, 16);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_PKTS), ==, 0);

    /* no descriptor left: the next frame is dropped and counted */
    sock_send(e.fd, frame, sizeof(frame));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(guest_errs(e.r), ==, 0);
}

/* A frame in guest memory goes out on the wire unchanged. */
static void test_eth_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf;
    ssize_t len;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    build_icmp(frame, peer_mac, 0x20);
    memcpy(frame + 6, dev_mac, 6);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, ring, 0, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 1);

    len = sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_cmpmem(e.frame, len, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, sizeof(frame));
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_TX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
    assert_no_frame(&e, 50);
    g_assert_cmpuint(guest_errs(e.r), ==, 0);
}

/* Ring base and size are locked while the ring is enabled. */
static void test_eth_ring_locked(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const uint32_t qs[] = { RNIC_REG_TXQ_BASE_LO,
                                   RNIC_REG_RXQ_BASE_LO };
    QRnic *r = obj;
    uint64_t ring[2], before;
    unsigned i;

    for (i = 0; i < 2; i++) {
        ring[i] = net_ring_new(r, qs[i]);
    }
    qrnic_writel(r, RNIC_REG_NET_CTRL,
                 RNIC_NET_CTRL_TX_EN | RNIC_NET_CTRL_RX_EN);
    qrnic_writel(r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 0);
    qrnic_writel(r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 2);

    before = guest_errs(r);
    for (i = 0; i < 2; i++) {
        qrnic_writel(r, qs[i], (uint32_t)ring[i] + QRNIC_PAGE);
        qrnic_writel(r, qs[i] + NQ_BASE_HI, 1);
        qrnic_writel(r, qs[i] + NQ_LOG_SIZE, 2);
        /* an 8-byte write is refused for both halves */
        qpci_io_writeq(&r->dev, r->regs, qs[i], ring[i] + 2 * QRNIC_PAGE);
    }
    g_assert_cmpuint(guest_errs(r), ==, before + 10);
    for (i = 0; i < 2; i++) {
        g_assert_cmphex(qrnic_readl(r, qs[i]), ==, (uint32_t)ring[i]);
        g_assert_cmphex(qrnic_readl(r, qs[i] + NQ_BASE_HI), ==,
                        ring[i] >> 32);
        g_assert_cmpuint(qrnic_readl(r, qs[i] + NQ_LOG_SIZE), ==, 4);
    }
    /* the refused writes did not restart the RX ring */
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 2);

    /* with the rings disabled the same writes go through */
    qrnic_writel(r, RNIC_REG_NET_CTRL, 0);
    qrnic_writel(r, RNIC_REG_RXQ_BASE_LO + NQ_LOG_SIZE, 2);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_RXQ_BASE_LO + NQ_LOG_SIZE), ==,
                     2);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 0);
    g_assert_cmpuint(guest_errs(r), ==, before + 10);
}

/* A PI write on a badly programmed ring is refused. */
static void test_eth_ring_invalid(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    static const uint32_t qs[] = { RNIC_REG_TXQ_BASE_LO,
                                   RNIC_REG_RXQ_BASE_LO };
    QRnic *r = obj;
    uint64_t ring = qrnic_alloc(r, QRNIC_PAGE), before;
    unsigned i;

    before = guest_errs(r);
    for (i = 0; i < 2; i++) {
        /* never programmed: log_size 0, base 0 */
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        net_ring_set(r, qs[i], ring, 0);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        net_ring_set(r, qs[i], ring, RNIC_NET_MAX_LOG_SIZE + 1);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        net_ring_set(r, qs[i], ring + 8, 4);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        net_ring_set(r, qs[i], UINT64_MAX - 0xff, 4);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        g_assert_cmpuint(qrnic_readl(r, qs[i] + NQ_PI), ==, 0);
    }
    g_assert_cmpuint(guest_errs(r), ==, before + 10);

    /* the largest valid ring is accepted */
    for (i = 0; i < 2; i++) {
        net_ring_set(r, qs[i], ring, RNIC_NET_MAX_LOG_SIZE);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        g_assert_cmpuint(qrnic_readl(r, qs[i] + NQ_PI), ==, 1);
    }
    g_assert_cmpuint(guest_errs(r), ==, before + 10);
}

/* A PI more than a ring ahead of CI is refused; the ring keeps working. */
static void test_eth_pi_overrun(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t tx, buf, before;
    ssize_t len;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    tx = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL,
                 RNIC_NET_CTRL_TX_EN | RNIC_NET_CTRL_RX_EN);

    before = guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 17);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 0xffffffff);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 17);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 0x80000000);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 4);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI), ==, 0);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 0);
    assert_no_frame(&e, 50);

    /* a full ring (PI = CI + 16) is fine, and frames flow */
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 16);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 16);
    build_icmp(frame, peer_mac, 0x30);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, tx, 0, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 1);
    len = sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, tx, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 4);
}

/* NET_VECTOR beyond the MSI-X vectors is refused. */
static void test_eth_bad_vector(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = guest_errs(r);

    qrnic_writel(r, RNIC_REG_NET_VECTOR, 3);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 3);
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 5);        /* msix-vectors=5 */
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 0xffffffff);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 3);
    g_assert_cmpuint(guest_errs(r), ==, before + 2);
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 4);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 4);
    g_assert_cmpuint(guest_errs(r), ==, before + 2);
}

/* TX descriptors of length 0, below a header or above the maximum. */
static void test_eth_tx_bad_len(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint16_t bad[] = { 0, ETH_HLEN - 1, RNIC_NET_MAX_FRAME + 1,
                                    0xffff };
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf, before;
    unsigned i, n = ARRAY_SIZE(bad);
    ssize_t len;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, 16 * QRNIC_PAGE);
    build_icmp(frame, peer_mac, 0x40);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    for (i = 0; i < n; i++) {
        net_desc_put(e.r, ring, i, buf, bad[i], 0);
    }
    net_desc_put(e.r, ring, n, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    before = guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, n + 1);

    /* only the good one goes out */
    len = sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_cmpmem(e.frame, len, frame, sizeof(frame));
    for (i = 0; i < n; i++) {
        g_assert_true(net_desc_wait(e.r, ring, i, &d));
        g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
        g_assert_cmpuint(le16_to_cpu(d.len), ==, bad[i]);
    }
    g_assert_true(net_desc_wait(e.r, ring, n, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, n + 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_TX_PKTS), ==, 1);
    g_assert_cmpuint(guest_errs(e.r), ==, before + n);
    assert_no_frame(&e, 50);
}

/* A TX buffer or descriptor the device cannot read. */
static void test_eth_tx_bad_addr(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf, before;
    ssize_t len;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    build_icmp(frame, peer_mac, 0x50);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, ring, 0, BAD_DMA, sizeof(frame), 0);
    net_desc_put(e.r, ring, 1, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    before = guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 2);

    len = sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_cmpmem(e.frame, len, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);

    /* a ring whose descriptors are not readable: consumed, nothing sent */
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, 0);
    net_ring_set(e.r, RNIC_REG_TXQ_BASE_LO, BAD_DMA, 4);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 2);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 2);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 3);
    assert_no_frame(&e, 50);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_TX_PKTS), ==, 1);
}

/* An RX buffer smaller than the frame: DONE | ERR, nothing written. */
static void test_eth_rx_small_buf(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN], got[ETH_FRAME_LEN];
    uint8_t zero[ETH_FRAME_LEN] = { 0 };
    uint64_t ring, buf, before;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, buf, 0xabc, ETH_FRAME_LEN - 1);
    net_desc_put(e.r, ring, 1, buf + 0x800, 0, ETH_FRAME_LEN);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 2);
    before = guest_errs(e.r);

    build_icmp(frame, dev_mac, 0x60);
    sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, 0);
    qtest_memread(qrnic_qts(e.r), buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 0);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);

    /* a buffer of exactly the frame's size takes the next one */
    sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, sizeof(frame));
    qtest_memread(qrnic_qts(e.r), buf + 0x800, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), frame, sizeof(frame));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 1);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);
}

/* An RX buffer or descriptor the device cannot reach. */
static void test_eth_rx_bad_addr(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf, before;

    env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, BAD_DMA, 0, 2048);
    net_desc_put(e.r, ring, 1, buf, 0, 2048);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 2);
    before = guest_errs(e.r);

    build_icmp(frame, dev_mac, 0x70);
    sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);
    sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 1);

    /* descriptors not readable: the frame is dropped, the slot consumed */
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, 0);
    net_ring_set(e.r, RNIC_REG_RXQ_BASE_LO, BAD_DMA, 4);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 1);
    sock_send(e.fd, frame, sizeof(frame));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 2);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);
}

/* ---- more doorbell guest errors ---- */

/* Any doorbell before the device is enabled is refused. */
static void test_db_not_ready(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint64_t before;

    env_init(&e, obj, data);
    before = guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, 2 | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 3);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_eq(e.r, &e.eq, 0, 4), ==, RNIC_CMD_OK);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 3);
}

/* SQ and RQ doorbells of a QP in RESET are refused, not remembered. */
static void test_db_qp_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RESET);
    send_wqe(&w, 1, RNIC_WR_SEND, 1);
    sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    before = guest_errs(e.r);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_doorbell(e.r, 0, RNIC_DB_RQ, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);

    /* at RTS the refused doorbell has not queued the WQE */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_INIT, MASK_TO_INIT), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    assert_no_frame(&e, 100);
    qrnic_ring_sq(e.r, &e.qp);
    recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);
}

/* A producer index behind the last one is refused. */
static void test_db_backwards(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint64_t before;
    unsigned i;
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);
    sge_of(&sge, &e.mr, 0, 16);
    for (i = 0; i < 3; i++) {
        send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    before = guest_errs(e.r);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, e.qp.qpn | 2ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);
    /* the same PI again is fine */
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);

    /* all three WQEs go out once the QP can send */
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    for (i = 0; i < 3; i++) {
        recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
    }
    assert_no_frame(&e, 50);
}

/* A user doorbell page may not ring a kernel QP. */
static void test_db_qp_owner(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint32_t uctx;
    uint64_t before;
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    send_wqe(&w, 1, RNIC_WR_SEND, 1);
    sge_of(&sge, &e.mr, 0, 16);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    before = guest_errs(e.r);
    qrnic_doorbell(e.r, uctx, RNIC_DB_SQ, e.qp.qpn | 1ull << 32);
    qrnic_doorbell(e.r, uctx, RNIC_DB_RQ, e.qp.qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);
    assert_no_frame(&e, 100);

    qrnic_ring_sq(e.r, &e.qp);
    recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 2);
}

/* An SRQ for the env's PD; returns its number. */
static uint32_t create_srq(Env *e, uint16_t uctx)
{
    struct rnic_cmd cmd;
    uint32_t out[6];

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    cmd.u.create_srq.log_size = 5;
    cmd.u.create_srq.max_sge = 2;
    cmd.u.create_srq.pdn = cpu_to_le32(e->pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(qrnic_alloc(e->r, QRNIC_PAGE));
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    return out[RNIC_OUT_HANDLE];
}

/* An RQ doorbell for a QP that receives from an SRQ is refused. */
static void test_db_rq_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_cmd cmd;
    uint32_t out[6], srqn, qpn;
    uint64_t before;

    env_basic(&e, obj, data);
    srqn = create_srq(&e, 0);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.flags = cpu_to_le32(RNIC_QP_FLAG_HAS_SRQ);
    cmd.u.create_qp.pdn = cpu_to_le32(e.pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e.cq.cqn);
    cmd.u.create_qp.srqn = cpu_to_le32(srqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(qrnic_alloc(e.r, QRNIC_PAGE));
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    qpn = out[RNIC_OUT_HANDLE];
    g_assert_cmpuint(qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_INIT,
                               MASK_TO_INIT), ==, RNIC_CMD_OK);

    before = guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_RQ, qpn | 1ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);
    /* the SRQ and the SQ doorbells are fine */
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SQ, qpn);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);
}

/* SRQ doorbells: no such SRQ, another context's SRQ, PI too far. */
static void test_db_srq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t srqn, uctx;
    uint64_t before;

    env_basic(&e, obj, data);
    srqn = create_srq(&e, 0);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, (srqn + 1) | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, 0 | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, 0xffffff | 1ull << 32);
    qrnic_doorbell(e.r, uctx, RNIC_DB_SRQ, srqn | 1ull << 32);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 33ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 32ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
    /* and once at 32, going back is refused too */
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | 31ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 6);
}

/* CQ doorbells: no such CQ, another context's CQ, CI beyond PI. */
static void test_db_cq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t uctx;
    uint64_t before;

    env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = guest_errs(e.r);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn + 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 0);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, 0xffffff);
    qrnic_doorbell(e.r, uctx, RNIC_DB_CQ, e.cq.cqn | RNIC_DB_ARM);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn | 5ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_CQ, e.cq.cqn | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
}

/* EQ doorbells: on a user page, no such EQ, CI beyond PI. */
static void test_db_eq_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    uint32_t uctx;
    uint64_t before;

    env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    before = guest_errs(e.r);
    qrnic_doorbell(e.r, uctx, RNIC_DB_EQ, 0 | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 1);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 1);          /* max-eq=2, not made */
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 2);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0xffffff);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0 | 7ull << 32);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
    qrnic_doorbell(e.r, 0, RNIC_DB_EQ, 0 | RNIC_DB_ARM);
    qrnic_settle(e.r);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
}

/* ---- more register guest errors ---- */

/* Misaligned accesses are refused and change nothing. */
static void test_regs_misaligned(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = guest_errs(r);

    g_assert_cmphex(qpci_io_readl(&r->dev, r->regs, RNIC_REG_MAGIC + 2), ==,
                    0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_MAGIC + 1), ==,
                    0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CNT_BASE + 4),
                    ==, 0);
    qpci_io_writel(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO + 2, 0x12345678);
    qpci_io_writeq(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO + 4,
                   0x1111222233334444ull);
    g_assert_cmpuint(guest_errs(r), ==, before + 5);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 0);
    qrnic_enable(r);
    g_assert_cmpuint(guest_errs(r), ==, before + 5);
}

/* Reads of the wrong width or of unknown registers return 0. */
static void test_regs_bad_read(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = guest_errs(r);

    g_assert_cmphex(qpci_io_readb(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CMDQ_PI), ==, 0);
    g_assert_cmphex(qpci_io_readw(&r->dev, r->regs, RNIC_REG_CNT_BASE), ==,
                    0);
    g_assert_cmphex(qpci_io_readb(&r->dev, r->regs, RNIC_REG_CNT_BASE), ==,
                    0);
    g_assert_cmphex(qrnic_readl(r, 0x001c), ==, 0);
    g_assert_cmphex(qrnic_readl(r, 0x0800), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REGS_SIZE - 4), ==, 0);
    g_assert_cmpuint(guest_errs(r), ==, before + 9);
    /* the right shapes still read */
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qpci_io_readq(&r->dev, r->regs, RNIC_REG_CMDQ_BASE_LO),
                    ==, 0);
    g_assert_cmpuint(guest_errs(r), ==, before + 9);
}

/* Writes to read-only registers and counters are counted and ignored. */
static void test_regs_ro_write(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint32_t cnt = RNIC_REG_CNT_BASE + 8 * RNIC_CNT_GUEST_ERR;
    uint64_t before;

    qrnic_enable(r);
    before = guest_errs(r);
    qrnic_writel(r, RNIC_REG_MAGIC, 0);
    qrnic_writel(r, RNIC_REG_STATUS, 0);
    qrnic_writel(r, RNIC_REG_CMDQ_CI, 5);
    qrnic_writel(r, RNIC_REG_TXQ_BASE_LO + NQ_CI, 5);
    qrnic_writel(r, RNIC_REG_RXQ_BASE_LO + NQ_CI, 5);
    qrnic_writel(r, RNIC_REG_MAC_LO, 0);
    qpci_io_writeq(&r->dev, r->regs, cnt, 0);
    qrnic_writel(r, cnt, 0);
    qrnic_writel(r, cnt + 4, 0xffffffff);
    /* 8-byte write of a register that is not a LO/HI pair */
    qpci_io_writeq(&r->dev, r->regs, RNIC_REG_CMDQ_LOG_SIZE, 3);
    g_assert_cmpuint(guest_errs(r), ==, before + 10);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_MAC_LO), ==, ldl_le_p(dev_mac));
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_LOG_SIZE), ==, 4);
}

/* ---- command DMA errors ---- */

/* A command queue in memory the device cannot read. */
static void test_cmdq_fetch_dma(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    QRnic *r = obj;
    struct rnic_cmd cmd;

    g_assert_cmphex(qrnic_try_enable(r, BAD_DMA, 2) & RNIC_STATUS_READY, ==,
                    RNIC_STATUS_READY);
    qrnic_writel(r, RNIC_REG_CMDQ_PI, 2);
    qrnic_settle(r);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_CMDQ_CI), ==, 2);
    g_assert_cmpuint(guest_errs(r), ==, 2);
    g_assert_cmphex(qrnic_readl(r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL, ==,
                    0);

    qrnic_reset(r);
    qrnic_enable(r);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    g_assert_cmpuint(qrnic_cmd(r, &cmd, NULL), ==, RNIC_CMD_OK);
}

/* QUERY_* answers to memory the device cannot write. */
static void test_cmd_out_dma(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_device_attr da;
    uint64_t before;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);
    before = guest_errs(e.r);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_DEVICE, 0, BAD_DMA,
                                 sizeof(da)), ==, RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, BAD_DMA,
                                 sizeof(struct rnic_port_attr)), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_QP, e.qp.qpn, BAD_DMA,
                                 sizeof(struct rnic_qp_attr)), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 3);
    g_assert_cmpuint(qrnic_query_device(e.r, &da), ==, RNIC_CMD_OK);
    g_assert_cmphex(le32_to_cpu(da.abi_version), ==, RNIC_ABI_VERSION);
}

/* Page lists the device cannot read, at bad addresses, or that wrap. */
static void test_pbl_list_errors(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    uint64_t pages, list, before, ents[2];

    env_basic(&e, obj, data);
    pages = qrnic_alloc(e.r, 2 * QRNIC_PAGE);
    list = qrnic_alloc(e.r, QRNIC_PAGE);
    ents[0] = cpu_to_le64(pages);
    ents[1] = cpu_to_le64(pages + QRNIC_PAGE);
    qtest_memwrite(qrnic_qts(e.r), list, ents, sizeof(ents));
    before = guest_errs(e.r);

    /* levels 1 and 2 with the list where nothing decodes */
    g_assert_cmpuint(create_cq_pbl(&e, 4, BAD_DMA, 2, 12, 1), ==,
                     RNIC_CMD_ERR_DMA);
    g_assert_cmpuint(create_cq_pbl(&e, 4, BAD_DMA, 2, 12, 2), ==,
                     RNIC_CMD_ERR_DMA);
    /* list and directory not 8-byte aligned */
    g_assert_cmpuint(create_cq_pbl(&e, 4, list + 4, 2, 12, 1), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(create_cq_pbl(&e, 4, list + 4, 2, 12, 2), ==,
                     RNIC_CMD_ERR_PARAM);
    /* contiguous pages that run off the end of the address space */
    g_assert_cmpuint(create_cq_pbl(&e, 4, UINT64_MAX - QRNIC_PAGE + 1, 2, 12,
                                   0), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);

    /* the same list, properly given, works */
    g_assert_cmpuint(create_cq_pbl(&e, 4, list, 2, 12, 1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(guest_errs(e.r), ==, before + 5);
}

/* MODIFY_QP with an alternate path: not supported, QP unchanged. */
static void test_qp_alt_path(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_INIT);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR,
                               MASK_TO_RTR | RNIC_QP_ATTR_ALT_PATH), ==,
                     RNIC_CMD_ERR_NOT_SUPP);
    g_assert_cmpuint(qp_state(&e, &e.qp), ==, RNIC_QPS_INIT);
    g_assert_cmpuint(qp_modify(&e, &e.qp, RNIC_QPS_RTR, MASK_TO_RTR), ==,
                     RNIC_CMD_OK);
}

/* A receive WQE with more SGEs than the QP allows fails the message. */
static void test_rc_rx_too_many_sge(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Env e;
    struct rnic_sge sge[3];
    struct rnic_cqe cqe;
    uint8_t payload[16];
    Roce f;

    env_basic(&e, obj, data);
    env_rc_qp(&e, RNIC_QPS_RTR);     /* max_recv_sge 2 */
    sge_of(&sge[0], &e.mr, 0, 8);
    sge_of(&sge[1], &e.mr, 8, 8);
    sge_of(&sge[2], &e.mr, 16, 8);
    qrnic_post_recv(e.r, &e.qp, 0x71, sge, 3);
    qrnic_ring_rq(e.r, &e.qp);
    qrnic_settle(e.r);

    fill_pattern(payload, sizeof(payload), 3);
    roce_init(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN);
    f.payload = payload;
    f.payload_len = sizeof(payload);
    send_roce(&e, &f);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x71);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_LEN_ERR);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
}

/* ---- registration ---- */

static void data_test_clear(void *sockets)
{
    int *test_sockets = sockets;

    close(test_sockets[0]);
    qos_invalidate_command_line();
    close(test_sockets[1]);
    g_free(test_sockets);
}

static void *data_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = g_new(int, 2);
    int ret = socketpair(PF_UNIX, SOCK_STREAM, 0, test_sockets);

    g_assert_cmpint(ret, !=, -1);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=hs0 ",
                           test_sockets[1]);
    g_test_queue_destroy(data_test_clear, test_sockets);
    return test_sockets;
}

static void add(const char *name, QOSTestFunc fn)
{
    QOSGraphTestOptions opts = {
        .before = data_test_init,
        .edge.extra_device_opts = LIMIT_OPTS ",msix-vectors=5",
    };

    qos_add_test(name, "rnic", fn, &opts);
}

static void register_rnic_test(void)
{
    add("reg-reset", test_reg_reset);
    add("regs-unknown-write", test_regs_unknown_write);
    add("cmd-query", test_cmd_query);
    add("cmd-objects", test_cmd_objects);
    add("cmd-modify-query-qp", test_cmd_modify_query_qp);
    add("cmd-bad-opcode", test_cmd_bad_opcode);
    add("cmd-bad-reserved", test_cmd_bad_reserved);
    add("cmd-bad-uctx", test_cmd_bad_uctx);
    add("cmd-bad-handle", test_cmd_bad_handle);
    add("cmd-limits", test_cmd_limits);
    add("cmd-busy", test_cmd_busy);
    add("cmd-query-short", test_cmd_query_short);
    add("qp-bad-transition", test_qp_bad_transition);
    add("qp-bad-mask", test_qp_bad_mask);
    add("pbl-errors", test_pbl_errors);
    add("ring-size-errors", test_ring_size_errors);
    add("sge-count-errors", test_sge_count_errors);
    add("cmd-before-enable", test_cmd_before_enable);
    add("enable-bad-log-size", test_enable_bad_log_size);
    add("enable-unaligned", test_enable_unaligned);
    add("cmdq-regs-locked", test_cmdq_regs_locked);
    add("cmdq-overrun", test_cmdq_overrun);
    add("cmdq-batch", test_cmdq_batch);
    add("db-read", test_db_read);
    add("db-bad", test_db_bad);
    add("wqe-bad-opcode", test_wqe_bad_opcode);
    add("wqe-bad-lkey", test_wqe_bad_lkey);
    add("wqe-bounds", test_wqe_bounds);
    add("wqe-too-many-sge", test_wqe_too_many_sge);
    add("wqe-inline-too-long", test_wqe_inline_too_long);
    add("sq-not-ready", test_sq_not_ready);
    add("rc-send-tx", test_rc_send_tx);
    add("rc-send-tx-inline", test_rc_send_tx_inline);
    add("rc-retransmit", test_rc_retransmit);
    add("rc-nak-rcvd", test_rc_nak_rcvd);
    add("rc-send-rx", test_rc_send_rx);
    add("rc-send-rx-bad-icrc", test_rc_send_rx_bad_icrc);
    add("rx-dropped", test_rx_dropped);
    add("rc-rx-psn", test_rc_rx_psn);
    add("rc-rx-too-long", test_rc_rx_too_long);
    add("rc-write-bad-rkey", test_rc_write_bad_rkey);
    add("rc-write-bounds", test_rc_write_bounds);
    add("rc-write-no-access", test_rc_write_no_access);
    add("rc-write-rx", test_rc_write_rx);
    add("qp-err-flush", test_qp_err_flush);
    add("cq-overrun", test_cq_overrun);
    add("reset", test_reset);
    add("disable", test_disable);
    add("gsi-qp", test_gsi_qp);
    add("ud-gsi-qkey", test_ud_gsi_qkey);
    add("ud-bad-sgid", test_ud_bad_sgid);
    add("eth-rx", test_eth_rx);
    add("eth-tx", test_eth_tx);
    add("eth-ring-locked", test_eth_ring_locked);
    add("eth-ring-invalid", test_eth_ring_invalid);
    add("eth-pi-overrun", test_eth_pi_overrun);
    add("eth-bad-vector", test_eth_bad_vector);
    add("eth-tx-bad-len", test_eth_tx_bad_len);
    add("eth-tx-bad-addr", test_eth_tx_bad_addr);
    add("eth-rx-small-buf", test_eth_rx_small_buf);
    add("eth-rx-bad-addr", test_eth_rx_bad_addr);
    add("db-not-ready", test_db_not_ready);
    add("db-qp-reset", test_db_qp_reset);
    add("db-backwards", test_db_backwards);
    add("db-qp-owner", test_db_qp_owner);
    add("db-rq-srq", test_db_rq_srq);
    add("db-srq-bad", test_db_srq_bad);
    add("db-cq-bad", test_db_cq_bad);
    add("db-eq-bad", test_db_eq_bad);
    add("regs-misaligned", test_regs_misaligned);
    add("regs-bad-read", test_regs_bad_read);
    add("regs-ro-write", test_regs_ro_write);
    add("cmdq-fetch-dma", test_cmdq_fetch_dma);
    add("cmd-out-dma", test_cmd_out_dma);
    add("pbl-list-errors", test_pbl_list_errors);
    add("qp-alt-path", test_qp_alt_path);
    add("rc-rx-too-many-sge", test_rc_rx_too_many_sge);
}

libqos_init(register_rnic_test);

#endif /* _WIN32 */
