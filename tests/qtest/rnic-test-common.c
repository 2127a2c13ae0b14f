/*
 * Shared helpers of the rnic qtests
 *
 * RoCEv2 frames are built and checked here by a small codec that is
 * independent of the device's own (hw/rnic/rnic-wire.c), ICRC included.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "hw/pci/pci_regs.h"
#include "libqos/rnic.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "rnic-test-common.h"

#ifndef _WIN32

#include <poll.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>

const uint8_t rt_dev_mac[6] = QRNIC_MAC;
const uint8_t rt_peer_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };

/* ---- RoCEv2 codec (test side) ---- */

static bool opc_has_reth(uint8_t opc)
{
    return opc == OPC_WRITE_ONLY || opc == OPC_READ_REQ ||
           opc == OPC_FLUSH || opc == OPC_ATOMIC_WRITE;
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

uint16_t rt_ip4_csum(const uint8_t *hdr)
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

void rt_st16(uint8_t *p, uint16_t v)
{
    stw_be_p(p, v);
}

static void st24(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = v;
}

uint32_t rt_ld24(const uint8_t *p)
{
    return p[0] << 16 | p[1] << 8 | p[2];
}

/* A frame from the peer to the device, with default addressing. */
void rt_roce_init(Roce *f, uint8_t opcode, uint32_t dqpn, uint32_t psn)
{
    memset(f, 0, sizeof(*f));
    memcpy(f->dmac, rt_dev_mac, 6);
    memcpy(f->smac, rt_peer_mac, 6);
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

void rt_roce_init_payload(Roce *f, uint8_t opcode, uint32_t dqpn,
                          uint32_t psn, const uint8_t *payload, size_t len)
{
    rt_roce_init(f, opcode, dqpn, psn);
    f->payload = payload;
    f->payload_len = len;
}

/* Builds @f into @buf; returns the frame length. */
size_t rt_roce_build(const Roce *f, uint8_t *buf, size_t size)
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
    rt_st16(buf + 12, 0x0800);

    if (f->opcode == OPC_FLUSH) {
        stl_be_p(p, f->feth);       /* the FETH precedes the RETH */
        p += 4;
    }
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
    /* SEND_LAST/ONLY_WITH_INVALIDATE carry the key in an IETH. */
    if (f->opcode == OPC_SEND_LAST_INV || f->opcode == OPC_SEND_ONLY_INV) {
        stl_be_p(p, f->rkey);
        p += 4;
    }
    memcpy(p, f->payload, f->payload_len);
    p += f->payload_len + pad;

    bth[0] = f->opcode;
    bth[1] = (f->se ? 0x80 : 0) | pad << 4;
    rt_st16(bth + 2, f->pkey);
    bth[4] = f->resv6 & 0x3f;
    st24(bth + 5, f->dqpn);
    bth[8] = f->ack_req ? 0x80 : 0;
    st24(bth + 9, f->psn);

    ip_len = (p + 4) - ip;
    ip[0] = 0x45;
    ip[1] = f->tos;
    rt_st16(ip + 2, ip_len);
    rt_st16(ip + 6, 0x4000);
    ip[8] = f->ttl;
    ip[9] = 17;
    stl_be_p(ip + 12, f->sip);
    stl_be_p(ip + 16, f->dip);
    rt_st16(ip + 10, rt_ip4_csum(ip));

    rt_st16(udp, f->sport);
    rt_st16(udp + 2, f->dport);
    rt_st16(udp + 4, ip_len - IP4_HLEN);

    stl_le_p(p, roce_icrc(ip, p - ip));
    len = L3_OFF + ip_len;
    return MAX(len, 60);
}

/*
 * A frame from the peer to the device around @n raw bytes from the BTH on
 * (transport headers, payload, pad; no ICRC): Ethernet, IPv4 and UDP as
 * rt_roce_init() addresses them, then an ICRC that is right when @good.
 */
size_t rt_roce_raw(const uint8_t *bth, size_t n, bool good, uint8_t *buf,
                   size_t size)
{
    uint8_t *ip = buf + L3_OFF;
    uint8_t *udp = ip + IP4_HLEN;
    size_t ip_len = IP4_HLEN + UDP_HLEN + n + 4;

    g_assert_cmpuint(L3_OFF + ip_len, <=, size);
    memset(buf, 0, L3_OFF + ip_len);
    memcpy(buf, rt_dev_mac, 6);
    memcpy(buf + 6, rt_peer_mac, 6);
    rt_st16(buf + 12, 0x0800);
    ip[0] = 0x45;
    rt_st16(ip + 2, ip_len);
    rt_st16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 17;
    stl_be_p(ip + 12, PEER_IP);
    stl_be_p(ip + 16, DEV_IP);
    rt_st16(ip + 10, rt_ip4_csum(ip));
    rt_st16(udp, 0xc123);
    rt_st16(udp + 2, ROCE_PORT);
    rt_st16(udp + 4, ip_len - IP4_HLEN);
    memcpy(udp + UDP_HLEN, bth, n);
    if (n >= BTH_LEN) {
        uint32_t icrc = roce_icrc(ip, ip_len - 4);

        stl_le_p(ip + ip_len - 4, good ? icrc : ~icrc);
    }
    return MAX(L3_OFF + ip_len, 60);
}

/*
 * Parses a frame the device sent and checks everything below the IBA
 * headers, ICRC included.  @f->payload points into @buf.
 */
void rt_roce_parse(const uint8_t *buf, size_t len, Roce *f)
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
    g_assert_cmphex(lduw_be_p(ip + 10), ==, rt_ip4_csum(ip));
    f->ttl = ip[8];
    f->tos = ip[1];
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
    f->resv6 = bth[4] & 0x3f;
    f->dqpn = rt_ld24(bth + 5);
    f->ack_req = bth[8] & 0x80;
    f->psn = rt_ld24(bth + 9);

    if (f->opcode == OPC_FLUSH) {
        f->feth = ldl_be_p(p);
        p += 4;
    }
    if (opc_has_reth(f->opcode)) {
        f->va = ldq_be_p(p);
        f->rkey = ldl_be_p(p + 8);
        f->dma_len = ldl_be_p(p + 12);
        p += 16;
    }
    if (opc_has_aeth(f->opcode)) {
        f->syndrome = p[0];
        f->msn = rt_ld24(p + 1);
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

void rt_sock_send(int fd, const uint8_t *buf, size_t len)
{
    uint32_t be_len = htonl(len);
    ssize_t ret;

    ret = send(fd, &be_len, sizeof(be_len), 0);
    g_assert_cmpint(ret, ==, sizeof(be_len));
    ret = send(fd, buf, len, 0);
    g_assert_cmpint(ret, ==, len);
}

/* Bytes a datagram socket holds, without waiting. */
int rt_sock_pending(int fd)
{
    int n = 0;

    g_assert_cmpint(ioctl(fd, FIONREAD, &n), ==, 0);
    return n;
}

/* Next frame from the device within @timeout_ms, or -1. */
ssize_t rt_sock_recv(int fd, uint8_t *buf, size_t size, int timeout_ms)
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

/* Next RoCEv2 frame from the device, parsed; only its source checked. */
void rt_recv_roce_any(Env *e, Roce *f)
{
    ssize_t len = rt_sock_recv(e->fd, e->frame, sizeof(e->frame),
                               QRNIC_TIMEOUT_MS);

    g_assert_cmpint(len, >, 0);
    e->frame_len = len;
    rt_roce_parse(e->frame, len, f);
    g_assert_cmphex(f->sip, ==, DEV_IP);
    g_assert_cmpmem(f->smac, 6, rt_dev_mac, 6);
    g_assert_cmphex(f->pkey, ==, 0xffff);
}

/* Next RoCEv2 frame from the device, for the peer. */
void rt_recv_roce(Env *e, Roce *f)
{
    rt_recv_roce_any(e, f);
    g_assert_cmphex(f->dip, ==, PEER_IP);
    g_assert_cmpmem(f->dmac, 6, rt_peer_mac, 6);
    g_assert_cmphex(f->dqpn, ==, PEER_QPN);
}

void rt_expect_ack(Env *e, uint8_t syndrome, uint32_t psn)
{
    Roce f;

    rt_recv_roce(e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_ACK);
    if (syndrome >> 5 == 0) {
        g_assert_cmphex(f.syndrome >> 5, ==, 0);
    } else {
        g_assert_cmphex(f.syndrome, ==, syndrome);
    }
    g_assert_cmphex(f.psn, ==, psn);
}

void rt_assert_no_frame(Env *e, int timeout_ms)
{
    g_assert_cmpint(rt_sock_recv(e->fd, e->frame, sizeof(e->frame),
                                 timeout_ms), ==, -1);
}

void rt_send_roce(Env *e, const Roce *f)
{
    uint8_t buf[2048];
    size_t len = rt_roce_build(f, buf, sizeof(buf));

    rt_sock_send(e->fd, buf, len);
}

void rt_send_ack(Env *e, uint32_t psn, uint32_t msn)
{
    Roce ack;

    rt_roce_init(&ack, OPC_ACK, e->qp.qpn, psn);
    ack.ack_req = false;
    ack.syndrome = AETH_ACK(0x1f);
    ack.msn = msn;
    rt_send_roce(e, &ack);
}

/* ---- common set-up ---- */

void rt_ipv4_gid(uint32_t ip, uint8_t gid[16])
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(gid + 12, ip);
}

void rt_env_init(Env *e, void *obj, void *data)
{
    memset(e, 0, sizeof(*e));
    e->r = obj;
    e->fd = ((int *)data)[0];
}

/* Enabled device with EQ 0, GID 0, a PD, one CQ and an MR. */
void rt_env_basic(Env *e, void *obj, void *data)
{
    uint8_t gid[16];

    rt_env_init(e, obj, data);
    qrnic_enable(e->r);
    g_assert_cmpuint(qrnic_create_eq(e->r, &e->eq, 0, 8), ==, RNIC_CMD_OK);
    rt_ipv4_gid(DEV_IP, gid);
    g_assert_cmpuint(qrnic_set_gid(e->r, 0, gid, rt_dev_mac), ==, RNIC_CMD_OK);
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

void rt_attr_for(struct rnic_qp_attr *a, uint8_t state)
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
    rt_ipv4_gid(PEER_IP, a->av.dgid);
    memcpy(a->av.dmac, rt_peer_mac, 6);
    a->av.sgid_index = 0;
    a->av.hop_limit = 64;
    a->av.net_type = RNIC_NET_IPV4;
    a->sq_psn = cpu_to_le32(QP_SQ_PSN);
    a->timeout = 14;            /* about 67 ms of virtual time */
    a->retry_cnt = 7;
    a->rnr_retry = 7;
    a->max_rd_atomic = 1;
}

uint8_t rt_qp_modify(Env *e, QRnicQp *qp, uint8_t state, uint32_t mask)
{
    struct rnic_qp_attr a;

    rt_attr_for(&a, state);
    return qrnic_modify_qp(e->r, qp->qpn, mask, &a);
}

/* An RC QP on the env's PD and CQ, moved to @state (INIT, RTR or RTS). */
void rt_env_rc_qp(Env *e, uint8_t state)
{
    g_assert_cmpuint(qrnic_create_qp(e->r, &e->qp, RNIC_QPT_RC, e->pdn,
                                     e->cq.cqn, e->cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(e->qp.qpn, >=, 2);
    rt_qp_up(e, &e->qp, state);
}

/*
 * A CQ of 1 << cq_log entries in @scq, and the env's RC QP in INIT with
 * @scq as its send CQ and an SQ of 1 << sq_log WQEs.
 */
void rt_env_init_qp_on_cq(Env *e, QRnicCq *scq, unsigned cq_log,
                          unsigned sq_log)
{
    g_assert_cmpuint(qrnic_create_cq(e->r, scq, cq_log, 0), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(e->r, &e->qp, RNIC_QPT_RC, e->pdn,
                                     scq->cqn, e->cq.cqn, sq_log, 4),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(e, &e->qp, RNIC_QPS_INIT, MASK_TO_INIT),
                     ==, RNIC_CMD_OK);
}

void rt_qp_up(Env *e, QRnicQp *qp, uint8_t state)
{
    if (state >= RNIC_QPS_INIT) {
        g_assert_cmpuint(rt_qp_modify(e, qp, RNIC_QPS_INIT, MASK_TO_INIT),
                         ==, RNIC_CMD_OK);
    }
    if (state >= RNIC_QPS_RTR) {
        g_assert_cmpuint(rt_qp_modify(e, qp, RNIC_QPS_RTR, MASK_TO_RTR),
                         ==, RNIC_CMD_OK);
    }
    if (state >= RNIC_QPS_RTS) {
        g_assert_cmpuint(rt_qp_modify(e, qp, RNIC_QPS_RTS, MASK_TO_RTS),
                         ==, RNIC_CMD_OK);
    }
}

uint8_t rt_qp_state(Env *e, QRnicQp *qp)
{
    struct rnic_qp_attr a;

    g_assert_cmpuint(qrnic_query_qp(e->r, qp->qpn, &a), ==, RNIC_CMD_OK);
    return a.qp_state;
}

void rt_sge_of(struct rnic_sge *sge, QRnicMr *mr, uint64_t off,
               uint32_t len)
{
    sge->addr = cpu_to_le64(mr->buf + off);
    sge->length = cpu_to_le32(len);
    sge->lkey = cpu_to_le32(mr->lkey);
}

void rt_send_wqe(struct rnic_send_wqe *w, uint64_t wr_id, uint8_t opc,
                 unsigned nsge)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = cpu_to_le64(wr_id);
    w->opcode = opc;
    w->flags = RNIC_WQE_SIGNALED;
    w->num_sge = nsge;
}

void rt_fill_pattern(uint8_t *buf, size_t len, uint8_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = seed + i * 7;
    }
}

/* The next @n CQEs on @cq have @status and wr_ids @first, @first + 1... */
void rt_expect_cqes(Env *e, QRnicCq *cq, uint64_t first, uint32_t n,
                    uint8_t status)
{
    struct rnic_cqe cqe;
    uint32_t i;

    for (i = 0; i < n; i++) {
        g_assert_true(qrnic_cq_wait(e->r, cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, status);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, first + i);
    }
}

void rt_assert_cq_empty(Env *e, QRnicCq *cq)
{
    struct rnic_cqe cqe;

    qrnic_settle(e->r);
    g_assert_false(qrnic_cq_poll(e->r, cq, &cqe));
}

uint64_t rt_guest_errs(QRnic *r)
{
    return qrnic_counter(r, RNIC_CNT_GUEST_ERR);
}

/* ---- registration ---- */

static void data_test_clear(void *sockets)
{
    int *test_sockets = sockets;

    close(test_sockets[0]);
    qos_invalidate_command_line();
    if (test_sockets[1] >= 0) {
        close(test_sockets[1]);
    }
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

/*
 * The device on a stream netdev over a socketpair whose QEMU end has a
 * small send buffer, so that a burst of frames fills it.
 */
static void *stream_test_init_with(GString *cmd_line, const char *opts)
{
    int *test_sockets = g_new(int, 2);
    int sndbuf = RT_STREAM_SNDBUF;

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, test_sockets), !=, -1);
    g_assert_cmpint(setsockopt(test_sockets[1], SOL_SOCKET, SO_SNDBUF,
                               &sndbuf, sizeof(sndbuf)), ==, 0);
    g_string_append_printf(cmd_line, " -netdev stream,id=hs0,server=off,"
                           "addr.type=fd,addr.str=%d%s ", test_sockets[1], opts);
    g_test_queue_destroy(data_test_clear, test_sockets);
    return test_sockets;
}

static void *stream_test_init(GString *cmd_line, void *arg)
{
    return stream_test_init_with(cmd_line, "");
}

static void *stream_coalesce_test_init(GString *cmd_line, void *arg)
{
    return stream_test_init_with(cmd_line, ",coalesce=on");
}

/*
 * The command line of the QEMU a test runs in, for a test that starts a
 * second one like it (a migration destination).
 */
char *rt_cmd_line;
int rt_cmd_line_fd;

static void *migrate_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = data_test_init(cmd_line, arg);

    g_free(rt_cmd_line);
    rt_cmd_line = g_strdup(cmd_line->str);
    rt_cmd_line_fd = test_sockets[1];
    return test_sockets;
}

void rt_add(const char *name, QOSTestFunc fn)
{
    rt_add_opts(name, fn, "");
}

static const char *rt_node = "rnic";

void rt_use_node_b(bool on)
{
    rt_node = on ? QRNIC_NODE_B : "rnic";
}

void rt_use_node_c(bool on)
{
    rt_node = on ? QRNIC_NODE_C : "rnic";
}

/* Registers @fn on the current node, set up by @before, with @dev_opts. */
static void rt_add_with(const char *name, QOSTestFunc fn,
                        QOSBeforeTest before, const char *dev_opts)
{
    QOSGraphTestOptions opts = {
        .before = before,
        .edge.extra_device_opts = g_strdup_printf(LIMIT_OPTS
                                                  ",msix-vectors=5%s",
                                                  dev_opts),
    };

    qos_add_test(name, rt_node, fn, &opts);
}

void rt_add_opts(const char *name, QOSTestFunc fn, const char *dev_opts)
{
    rt_add_with(name, fn, data_test_init, dev_opts);
}

void rt_add_stream(const char *name, QOSTestFunc fn, bool coalesce)
{
    rt_add_with(name, fn, coalesce ? stream_coalesce_test_init
                                   : stream_test_init, "");
}

void rt_add_migrate(const char *name, QOSTestFunc fn)
{
    rt_add_with(name, fn, migrate_test_init, "");
}

void rt_add_migrate_opts(const char *name, QOSTestFunc fn,
                         const char *dev_opts)
{
    rt_add_with(name, fn, migrate_test_init, dev_opts);
}

/*
 * The device on a socket-multicast segment on the loopback interface, as
 * the launcher joins three or more VMs.  The test's socket sends to the
 * group (plain datagrams, no length prefix) without joining it.
 */
static void *mcast_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = g_new(int, 2);
    struct in_addr lo = { .s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in group = { .sin_family = AF_INET };
    int fd, one = 1;

    group.sin_port = htons(g_random_int_range(20000, 40000));
    group.sin_addr.s_addr = htonl(0xefff0000u |
                                  g_random_int_range(0x101, 0xfefe));
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo,
                               sizeof(lo)), ==, 0);
    g_assert_cmpint(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one,
                               sizeof(one)), ==, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&group, sizeof(group)),
                    ==, 0);
    test_sockets[0] = fd;
    test_sockets[1] = -1;
    g_string_append_printf(cmd_line, " -netdev socket,id=hs0,mcast=%s:%u,"
                           "localaddr=127.0.0.1 ", inet_ntoa(group.sin_addr),
                           ntohs(group.sin_port));
    g_test_queue_destroy(data_test_clear, test_sockets);
    return test_sockets;
}

void rt_add_mcast(const char *name, QOSTestFunc fn)
{
    rt_add_with(name, fn, mcast_test_init, "");
}

/*
 * A UDP unicast (dgram) netdev; the test's socket is connected to the
 * netdev's local address, which sends to the test's.
 */
static void *dgram_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = g_new(int, 2);
    struct sockaddr_in me = { .sin_family = AF_INET }, qemu = me;
    socklen_t len = sizeof(me);
    int fd;

    me.sin_addr.s_addr = qemu.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&me, sizeof(me)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&me, &len), ==, 0);
    qemu.sin_port = htons(g_random_int_range(20000, 40000));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&qemu, sizeof(qemu)),
                    ==, 0);
    test_sockets[0] = fd;
    test_sockets[1] = -1;
    g_string_append_printf(cmd_line, " -netdev dgram,id=hs0,"
                           "local.type=inet,local.host=127.0.0.1,"
                           "local.port=%u,remote.type=inet,"
                           "remote.host=127.0.0.1,remote.port=%u ",
                           ntohs(qemu.sin_port), ntohs(me.sin_port));
    g_test_queue_destroy(data_test_clear, test_sockets);
    return test_sockets;
}

void rt_add_dgram(const char *name, QOSTestFunc fn)
{
    rt_add_with(name, fn, dgram_test_init, "");
}

char *rt_stream_path;

static void stream_server_test_clear(void *sockets)
{
    unlink(rt_stream_path);
    g_free(rt_stream_path);
    rt_stream_path = NULL;
    data_test_clear(sockets);
}

/*
 * A listening stream netdev (server=on, coalesce=on) on a unix socket at
 * rt_stream_path; the test connects (and reconnects) itself, so the env's
 * fd starts as -1.
 */
static void *stream_server_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = g_new(int, 2);

    rt_stream_path = g_strdup_printf("%s/rnic-qtest-%d-%u.sock",
                                     g_get_tmp_dir(), getpid(),
                                     g_random_int());
    test_sockets[0] = -1;
    test_sockets[1] = -1;
    g_string_append_printf(cmd_line, " -netdev stream,id=hs0,server=on,"
                           "addr.type=unix,addr.path=%s,coalesce=on ",
                           rt_stream_path);
    g_test_queue_destroy(stream_server_test_clear, test_sockets);
    return test_sockets;
}

void rt_add_stream_server(const char *name, QOSTestFunc fn)
{
    rt_add_with(name, fn, stream_server_test_init, "");
}

/*
 * The same with coalesce=on; the second test socket is a member of the
 * group that takes GRO batches, so that it sees how frames were sent.
 * What the device sends waits in a filter-buffer until the virtual clock
 * passes RT_MCAST_FILTER_US.
 */
static void *mcast_coalesce_test_init(GString *cmd_line, void *arg)
{
    int *test_sockets = mcast_test_init(cmd_line, arg);
    struct sockaddr_in group;
    socklen_t glen = sizeof(group);
    struct ip_mreq mreq = { .imr_interface.s_addr = htonl(INADDR_LOOPBACK) };
    int fd, one = 1;

    g_assert_cmpint(getpeername(test_sockets[0], (struct sockaddr *)&group,
                                &glen), ==, 0);
    mreq.imr_multiaddr = group.sin_addr;
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
                               sizeof(one)), ==, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&group, sizeof(group)), ==, 0);
    g_assert_cmpint(setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
                               sizeof(mreq)), ==, 0);
    g_assert_cmpint(setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)),
                    ==, 0);
    test_sockets[1] = fd;
    /* mcast_test_init() ended the netdev's options with a space. */
    g_string_truncate(cmd_line, cmd_line->len - 1);
    g_string_append_printf(cmd_line, ",coalesce=on -object filter-buffer,"
                           "id=rt-fb,netdev=hs0,queue=rx,interval=%d ",
                           RT_MCAST_FILTER_US);
    return test_sockets;
}

void rt_add_mcast_coalesce(const char *name, QOSTestFunc fn)
{
    rt_add_with(name, fn, mcast_coalesce_test_init, "");
}



/* Two rnics on one hub: frames from one reach the other synchronously. */
static void *hub_test_init(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line,
                    " -netdev hubport,id=hs0,hubid=7"
                    " -netdev hubport,id=hs1,hubid=7"
                    " -device rnic,addr=05.0,netdev=hs1,mac=" RT_MAC2_STR
                    "," LIMIT_OPTS ",msix-vectors=5 ");
    return arg;
}

void rt_add_pair(const char *name, QOSTestFunc fn, const char *dev_opts)
{
    rt_add_with(name, fn, hub_test_init, dev_opts);
}

/* The QOM path of the (only) rnic device, which -device made without id. */
char *rt_qom_path(QTestState *qts)
{
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-list', 'arguments':"
                                 " {'path': '/machine/peripheral-anon'}}");
    QListEntry *ent;
    char *path = NULL;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(resp, "return"), ent) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(ent));

        if (!strcmp(qdict_get_str(p, "type"), "child<rnic>")) {
            path = g_strdup_printf("/machine/peripheral-anon/%s",
                                   qdict_get_str(p, "name"));
        }
    }
    qobject_unref(resp);
    g_assert_nonnull(path);
    return path;
}

void rt_qp_to_self(Env *e)
{
    struct rnic_qp_attr a;

    rt_env_rc_qp(e, RNIC_QPS_INIT);
    rt_attr_for(&a, RNIC_QPS_RTR);
    rt_ipv4_gid(DEV_IP, a.av.dgid);
    memcpy(a.av.dmac, rt_dev_mac, 6);
    a.dest_qpn = cpu_to_le32(e->qp.qpn);
    a.rq_psn = cpu_to_le32(QP_SQ_PSN);
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    a.qp_state = RNIC_QPS_RTS;
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTS, &a), ==,
                     RNIC_CMD_OK);
}

void rt_msix_entry(QRnic *r, unsigned vec, uint64_t addr, uint32_t data)
{
    QPCIDevice *d = &r->dev;
    uint64_t off = d->msix_table_off + vec * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_LOWER_ADDR,
                   (uint32_t)addr);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(d, d->msix_table_bar, off + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}


/* An SRQ of 1 << log entries in @ring for the env's PD; its number. */
uint32_t rt_create_srq(Env *e, uint16_t uctx, unsigned log, uint64_t ring)
{
    struct rnic_cmd cmd;
    uint32_t out[6];

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    cmd.u.create_srq.log_size = log;
    cmd.u.create_srq.max_sge = 2;
    cmd.u.create_srq.pdn = cpu_to_le32(e->pdn);
    cmd.u.create_srq.ring.addr = cpu_to_le64(ring);
    cmd.u.create_srq.ring.npages = cpu_to_le32(1);
    cmd.u.create_srq.ring.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    return out[RNIC_OUT_HANDLE];
}

/* An RC QP in INIT that receives from SRQ @srqn; its number. */
uint32_t rt_create_srq_qp(Env *e, uint32_t srqn)
{
    struct rnic_cmd cmd;
    uint32_t out[6], qpn;

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = RNIC_QPT_RC;
    cmd.u.create_qp.sq_log_size = 4;
    cmd.u.create_qp.max_send_sge = 1;
    cmd.u.create_qp.flags = cpu_to_le32(RNIC_QP_FLAG_HAS_SRQ);
    cmd.u.create_qp.pdn = cpu_to_le32(e->pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(e->cq.cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(e->cq.cqn);
    cmd.u.create_qp.srqn = cpu_to_le32(srqn);
    cmd.u.create_qp.sq.addr = cpu_to_le64(qrnic_alloc(e->r, QRNIC_PAGE));
    cmd.u.create_qp.sq.npages = cpu_to_le32(1);
    cmd.u.create_qp.sq.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(e->r, &cmd, out), ==, RNIC_CMD_OK);
    qpn = out[RNIC_OUT_HANDLE];
    g_assert_cmpuint(rt_qp_modify(e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_INIT,
                                  MASK_TO_INIT), ==, RNIC_CMD_OK);
    return qpn;
}

/* SEND 48 bytes of pattern @seed at @psn to @qpn; its receive CQE. */
void rt_srq_send(Env *e, uint32_t qpn, uint32_t psn, uint8_t seed,
                 struct rnic_cqe *cqe)
{
    uint8_t payload[48];
    Roce f;

    rt_fill_pattern(payload, sizeof(payload), seed);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, qpn, psn, payload,
                         sizeof(payload));
    rt_send_roce(e, &f);
    g_assert_true(qrnic_cq_wait(e->r, &e->cq, cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(cqe->status, ==, RNIC_WC_SUCCESS);
    rt_expect_ack(e, AETH_ACK(0), psn);
}

#endif /* _WIN32 */
