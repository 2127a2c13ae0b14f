/*
 * QTest testcases for the netdev work rnic relies on: the socket, dgram
 * and stream netdev changes of patches/qemu (bursts, coalescing, own
 * echoes, empty datagrams, reconnection), with the rnic as their NIC,
 * and the filter-wirefault netfilter on another NIC, virtio-net.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/un.h>
#include "qemu/bswap.h"
#include "qemu/iov.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "qemu/host-utils.h"
#include "libqtest-single.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "libqos/virtio.h"
#include "libqos/virtio-net.h"
#include "standard-headers/linux/virtio_net.h"
#include "rnic-test-common.h"
#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/udp.h>

#ifndef _WIN32

/* ---- stream and datagram netdevs (patches/qemu 0004-0009) ---- */

/* The netdev connects from a thread; frames sent before are dropped. */
static void stream_wait_connected(QTestState *qts)
{
    int i;

    for (i = 0; i < QRNIC_TIMEOUT_MS / 10; i++) {
        char *info = qtest_hmp(qts, "info network");
        bool up = !strstr(info, "connecting");

        g_free(info);
        if (up) {
            return;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/* The env's QP on its own send CQ, in RTS at path MTU 4096. */
static void rts_mtu_4096(Env *e, QRnicCq *scq)
{
    struct rnic_qp_attr a;

    rt_env_init_qp_on_cq(e, scq, 7, 6);
    rt_attr_for(&a, RNIC_QPS_RTR);
    a.path_mtu = RNIC_MTU_4096;
    g_assert_cmpuint(qrnic_modify_qp(e->r, e->qp.qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(e, &e->qp, RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
}

/* SENDs 0..n-1 completed in order, their @pkts packets each sent once. */
static void expect_sends_done(Env *e, QRnicCq *scq, int n, int pkts)
{
    rt_expect_cqes(e, scq, 0, n, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_TX_PKTS), ==, pkts);
}

/*
 * A stream netdev holds what the socket cannot take; with coalesce=on it
 * also writes the frames of one main-loop pass together.  64 SENDs of
 * 4 KiB (path MTU 4096) posted with one doorbell leave in one pass: more
 * than the netdev buffers, into a socket whose send buffer takes a few.  Read back
 * slowly, every frame must come whole, in PSN order, and once; and no
 * frame may have needed a resend.
 */
static void test_stream_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { N = 64, LEN = 4096 };
    Env e;
    QRnicCq scq;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t pat[LEN];
    struct pollfd pfd;
    Roce f;
    int i, queued = 0, before = -1;

    rt_env_basic(&e, obj, data);
    stream_wait_connected(qrnic_qts(e.r));
    rts_mtu_4096(&e, &scq);
    rt_fill_pattern(pat, LEN, 7);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, pat, LEN);
    rt_sge_of(&sge, &e.mr, 0, LEN);
    for (i = 0; i < N; i++) {
        rt_send_wqe(&w, i, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    qrnic_ring_sq(e.r, &e.qp);

    /* Wait until the socket holds a steady part of the burst. */
    pfd = (struct pollfd) { .fd = e.fd, .events = POLLIN };
    g_assert_cmpint(poll(&pfd, 1, QRNIC_TIMEOUT_MS), ==, 1);
    while (queued != before) {
        before = queued;
        qrnic_settle(e.r);
        g_assert_cmpint(ioctl(e.fd, FIONREAD, &queued), ==, 0);
    }
    g_assert_cmpint(queued, >=, RT_STREAM_SNDBUF);
    g_assert_cmpint(queued, <, N * LEN / 4);

    for (i = 0; i < N; i++) {
        rt_recv_roce(&e, &f);
        g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
        g_assert_cmpmem(f.payload, f.payload_len, pat, LEN);
    }
    rt_assert_no_frame(&e, 100);

    rt_send_ack(&e, QP_SQ_PSN + N - 1, N);
    expect_sends_done(&e, &scq, N, N);
}

/* A client of the listening stream netdev at rt_stream_path. */
static int stream_connect(QTestState *qts)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), i;

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(sa.sun_path, rt_stream_path, sizeof(sa.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    /* Connected once QEMU has accepted: it no longer says "listening". */
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10; i++) {
        char *info = qtest_hmp(qts, "info network");
        bool up = !strstr(info, "listening");

        g_free(info);
        if (up) {
            return fd;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/*
 * A stream connection that drops while the netdev refuses frames (its
 * socket and its own buffer full) used to leave the netdev refusing for
 * good: the NIC's frames then waited in the queue for ever, even on the
 * next connection.  Here two QPs' 64 SENDs of 4 KiB each, more than the
 * socket and the netdev's buffer hold, go to a client that never reads;
 * the client goes, a new one connects and ACKs them all, and the next
 * SEND must reach it.  (The connection a server accepts was also
 * blocking: the first full socket stopped all of QEMU in write().)
 */
static void test_stream_reconnect(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { N = 64, LEN = 4096 };
    QTestState *qts;
    QRnicCq scq;
    QRnicQp qp[2];
    struct rnic_qp_attr a;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    Roce f;
    Env e;
    int i, k, queued = 0, before = -1;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    e.fd = stream_connect(qts);
    rts_mtu_4096(&e, &scq);
    qp[0] = e.qp;
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp[1], RNIC_QPT_RC, e.pdn,
                                     scq.cqn, e.cq.cqn, 6, 4), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &qp[1], RNIC_QPS_INIT, MASK_TO_INIT),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    a.path_mtu = RNIC_MTU_4096;
    g_assert_cmpuint(qrnic_modify_qp(e.r, qp[1].qpn, MASK_TO_RTR, &a), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rt_qp_modify(&e, &qp[1], RNIC_QPS_RTS, MASK_TO_RTS), ==,
                     RNIC_CMD_OK);
    rt_sge_of(&sge, &e.mr, 0, LEN);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < N; i++) {
            rt_send_wqe(&w, k * N + i, RNIC_WR_SEND, 1);
            qrnic_post_send(e.r, &qp[k], &w, &sge, 1);
        }
        qrnic_ring_sq(e.r, &qp[k]);
    }
    while (queued != before) {
        before = queued;
        qrnic_settle(e.r);
        g_assert_cmpint(ioctl(e.fd, FIONREAD, &queued), ==, 0);
    }
    /* Not all of it fitted: the netdev holds the rest back. */
    g_assert_cmpint(queued, <, 2 * N * LEN);

    close(e.fd);
    e.fd = stream_connect(qts);
    for (k = 0; k < 2; k++) {
        e.qp = qp[k];
        rt_send_ack(&e, QP_SQ_PSN + N - 1, N);
    }
    for (i = 0; i < 2 * N; i++) {
        struct rnic_cqe cqe;

        g_assert_true(qrnic_cq_wait(e.r, &scq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    }
    e.qp = qp[0];
    rt_send_wqe(&w, 2 * N, RNIC_WR_SEND, 1);
    qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &e.qp);
    do {
        rt_recv_roce(&e, &f);
    } while (f.psn != QP_SQ_PSN + N);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmpuint(f.payload_len, ==, LEN);
    close(e.fd);
}

/*
 * Sends the device a SEND for a QP that does not exist (0x777), and waits
 * until its RX_DROPPED counter reaches @want.
 */
static void send_unmatched(Env *e, uint64_t want)
{
    static const uint8_t payload[16];
    uint8_t buf[256];
    size_t len;
    Roce f;
    int i;

    rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, 0, payload,
                         sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e->fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e->r, RNIC_CNT_RX_DROPPED) < want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(qrnic_counter(e->r, RNIC_CNT_RX_DROPPED), ==, want);
}

/*
 * An empty datagram is a datagram like any other on a socket or dgram
 * netdev, not the end of a connection; it used to turn reading off for
 * good.  After one, a frame still arrives (counted as a dropped RoCE
 * frame, as its QP does not exist).
 */
static void test_dgram_empty(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t none = 0;
    Env e;

    rt_env_basic(&e, obj, data);
    g_assert_cmpint(send(e.fd, &none, 0, 0), ==, 0);
    qrnic_settle(e.r);
    send_unmatched(&e, 1);
}

/*
 * A multicast segment is a hub without backpressure: a burst that comes
 * while the receiving QEMU is busy (here: stopped) waits in its socket's
 * receive buffer or is lost.  200 frames of 4 KiB, about four times what
 * the usual default buffer (212,992 bytes) holds, must all reach the
 * device once it runs (patches/qemu/0005): each, for a QP that does not
 * exist, is counted as a dropped RoCE frame.
 */
static void test_mcast_burst(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { N = 200, LEN = 4000 };
    static const uint8_t payload[LEN];
    uint8_t buf[LEN + 128];
    Env e;
    Roce f;
    size_t len;
    int i;

    rt_env_basic(&e, obj, data);
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'stop'}"));
    for (i = 0; i < N; i++) {
        rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, i, payload, LEN);
        len = rt_roce_build(&f, buf, sizeof(buf));
        g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    }
    qobject_unref(qtest_qmp(qrnic_qts(e.r), "{'execute': 'cont'}"));
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < N; i++) {
        g_usleep(10 * 1000);
    }
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, N);
}

/*
 * On a multicast segment the socket hears its own frames back; a socket
 * filter drops those whose source is the device's address before they
 * cost a read (patches/qemu/0006).  Of a foreign frame, five with the
 * device's own source address and another foreign one, all for a QP that
 * does not exist, only the two foreign frames may reach the device.
 */
static void test_mcast_own_echo(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t payload[64];
    uint8_t buf[256];
    Env e;
    Roce f;
    size_t len;
    int i;

    rt_env_basic(&e, obj, data);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, 0x777, 0, payload,
                         sizeof(payload));
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < 1; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 1);

    memcpy(f.smac, rt_dev_mac, 6);
    for (i = 1; i <= 5; i++) {
        f.psn = i;
        len = rt_roce_build(&f, buf, sizeof(buf));
        g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    }
    memcpy(f.smac, rt_peer_mac, 6);
    f.psn = 6;
    len = rt_roce_build(&f, buf, sizeof(buf));
    g_assert_cmpint(send(e.fd, buf, len, 0), ==, len);
    for (i = 0; i < QRNIC_TIMEOUT_MS / 10 &&
                qrnic_counter(e.r, RNIC_CNT_RX_DROPPED) < 2; i++) {
        g_usleep(10 * 1000);
    }
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RX_DROPPED), ==, 2);
}

/*
 * Reads datagrams from the group member @fd, cutting GRO batches at the
 * size the kernel names, until @n frames from the device came: their
 * lengths go to @len, their bytes to @buf at @stride apart.  Returns how
 * many reads carried more than one frame.
 */
static int mcast_gro_recv(int fd, int n, uint8_t *buf, size_t stride,
                          size_t *len)
{
    static uint8_t dgram[65536];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { .iov_base = dgram, .iov_len = sizeof(dgram) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    struct cmsghdr *cm;
    ssize_t size, off, seg;
    int got = 0, batches = 0, in_read, gso;
    Roce f;

    while (got < n) {
        g_assert_cmpint(poll(&pfd, 1, QRNIC_TIMEOUT_MS), ==, 1);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        size = recvmsg(fd, &msg, 0);
        g_assert_cmpint(size, >, 0);
        g_assert_false(msg.msg_flags & MSG_TRUNC);
        seg = size;
        for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
                memcpy(&gso, CMSG_DATA(cm), sizeof(gso));
                seg = gso;
            }
        }
        in_read = 0;
        for (off = 0; off < size; off += seg) {
            size_t l = MIN(seg, size - off);

            rt_roce_parse(dgram + off, l, &f);
            if (memcmp(f.smac, rt_dev_mac, 6)) {
                continue;       /* the test's own frame */
            }
            g_assert_cmpint(got, <, n);
            g_assert_cmpuint(l, <=, stride);
            memcpy(buf + got * stride, dgram + off, l);
            len[got++] = l;
            in_read++;
        }
        batches += in_read > 1;
    }
    return batches;
}

/*
 * coalesce=on on a multicast segment (patches/qemu/0007).  Four SENDs at
 * path MTU 4096 (32 KiB, 100 B, 100 B, 16 KiB: 14 frames of two sizes)
 * leave in GSO batches: a member taking GRO batches gets several frames
 * in one read, and cut where the kernel says they are every frame, whole
 * and in PSN order.  The other way, a GSO batch of six SENDs reaches the
 * device as six frames, each in its receive WQE.
 */
static void test_mcast_coalesce(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { N = 14, MTU = 4096, BIG = 8 * MTU, M = 6, MLEN = 512 };
    static const uint32_t msg_len[] = { BIG, 100, 100, 4 * MTU };
    static uint8_t frames[N][4352], pat[BIG];
    size_t flen[N], blen = 0, off = 0;
    uint8_t out[M * 640], got[MLEN], want[MLEN], opc;
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl = {};
    struct iovec iov = { .iov_base = out };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
    };
    struct cmsghdr *cm;
    int rx = ((int *)data)[1];
    struct rnic_cqe cqe;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint16_t seg;
    QRnicCq scq;
    QRnicMr big;
    Env e;
    Roce f;
    size_t len;
    int i, m;

    rt_env_basic(&e, obj, data);
    rts_mtu_4096(&e, &scq);
    g_assert_cmpuint(qrnic_reg_mr(e.r, &big, e.pdn, RNIC_ACCESS_LOCAL_WRITE,
                                  BIG), ==, RNIC_CMD_OK);
    rt_fill_pattern(pat, BIG, 9);
    qtest_memwrite(qrnic_qts(e.r), big.buf, pat, BIG);
    for (m = 0; m < ARRAY_SIZE(msg_len); m++) {
        rt_sge_of(&sge, &big, 0, msg_len[m]);
        rt_send_wqe(&w, m, RNIC_WR_SEND, 1);
        qrnic_post_send(e.r, &e.qp, &w, &sge, 1);
    }
    /*
     * Under qtest the device builds a frame every few microseconds, about
     * the netdev's quiet gap, so some would go alone.  A filter-buffer
     * holds them until the virtual clock passes its interval and then
     * hands them on back to back, as a busy device does.
     */
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    g_assert_cmpint(rt_sock_pending(rx), ==, 0);
    qtest_clock_step(qrnic_qts(e.r), RT_MCAST_FILTER_US * 1000);

    /*
     * The first frame goes alone (quiet before it), the rest of the long
     * message and the first short frame go together (a shorter frame ends
     * a batch), the second short frame alone (a longer one follows), and
     * the last message's four frames together.
     */
    g_assert_cmpint(mcast_gro_recv(rx, N, frames[0], sizeof(frames[0]), flen),
                    ==, 2);
    for (i = 0, m = 0; i < N; i++) {
        rt_roce_parse(frames[i], flen[i], &f);
        g_assert_cmphex(f.psn, ==, QP_SQ_PSN + i);
        len = MIN(MTU, msg_len[m] - off);
        if (msg_len[m] <= MTU) {
            opc = OPC_SEND_ONLY;
        } else {
            opc = !off ? OPC_SEND_FIRST :
                  off + len == msg_len[m] ? OPC_SEND_LAST : OPC_SEND_MIDDLE;
        }
        g_assert_cmphex(f.opcode, ==, opc);
        g_assert_cmpmem(f.payload, f.payload_len, pat + off, len);
        off += len;
        if (off == msg_len[m]) {
            off = 0;
            m++;
        }
    }
    g_assert_cmpint(m, ==, ARRAY_SIZE(msg_len));
    rt_roce_init(&f, OPC_ACK, e.qp.qpn, QP_SQ_PSN + N - 1);
    f.ack_req = false;
    f.syndrome = AETH_ACK(0x1f);
    f.msn = ARRAY_SIZE(msg_len);
    len = rt_roce_build(&f, out, sizeof(out));
    g_assert_cmpint(send(e.fd, out, len, 0), ==, len);
    expect_sends_done(&e, &scq, ARRAY_SIZE(msg_len), N);

    for (i = 0; i < M; i++) {
        rt_sge_of(&sge, &e.mr, i * MLEN, MLEN);
        qrnic_post_recv(e.r, &e.qp, 0x80 + i, &sge, 1);
    }
    qrnic_ring_rq(e.r, &e.qp);
    for (i = 0; i < M; i++) {
        rt_fill_pattern(want, MLEN, 0x20 + i);
        rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN + i,
                             want, MLEN);
        len = rt_roce_build(&f, out + blen, sizeof(out) - blen);
        g_assert_true(i == 0 || len == blen / i);
        blen += len;
    }
    iov.iov_len = blen;
    seg = blen / M;
    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(seg));
    memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
    g_assert_cmpint(sendmsg(e.fd, &msg, 0), ==, blen);
    for (i = 0; i < M; i++) {
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x80 + i);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, MLEN);
        rt_fill_pattern(want, MLEN, 0x20 + i);
        qtest_memread(qrnic_qts(e.r), e.mr.buf + i * MLEN, got, MLEN);
        g_assert_cmpmem(got, MLEN, want, MLEN);
    }
}

/*
 * coalesce= belongs to the datagram sockets: a stream socket netdev
 * (listen=) with it is refused with a message, and a multicast one with
 * it is taken (netdev_add goes through the same checks as -netdev).
 */
static void test_socket_coalesce_opts(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    QTestState *qts = qrnic_qts(obj);
    QDict *resp;
    char *mcast;

    resp = qtest_qmp(qts, "{'execute': 'netdev_add', 'arguments':"
                     " {'type': 'socket', 'id': 'rt-bad',"
                     " 'listen': '127.0.0.1:0', 'coalesce': true}}");
    g_assert_true(qdict_haskey(resp, "error"));
    g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(resp, "error"),
                                          "desc"),
                            "coalesce= is only valid with mcast= or udp="));
    qobject_unref(resp);
    mcast = g_strdup_printf("239.255.77.79:%d",
                            g_random_int_range(20000, 40000));
    qtest_qmp_assert_success(qts, "{'execute': 'netdev_add', 'arguments':"
                             " {'type': 'socket', 'id': 'rt-ok',"
                             " 'mcast': %s, 'localaddr': '127.0.0.1',"
                             " 'coalesce': true}}", mcast);
    g_free(mcast);
    qtest_qmp_assert_success(qts, "{'execute': 'netdev_del', 'arguments':"
                             " {'id': 'rt-ok'}}");
}

/* ---- filter-wirefault on virtio-net ---- */

#define WF_FRAMES       40
#define WF_FRAME_LEN    64
#define WF_BUF_LEN      128
#define WF_VNET_HDR     sizeof(struct virtio_net_hdr_mrg_rxbuf)
#define WF_TIMEOUT_US   (10 * 1000 * 1000)

typedef struct WfRx {
    QTestState *qts;
    QVirtioNet *net;
    int fd;                     /* the test's end of the stream netdev */
    uint64_t buf[WF_FRAMES * 2];
    uint32_t head[WF_FRAMES * 2];
} WfRx;

static void wirefault_cleanup(void *sockets)
{
    int *sv = sockets;

    close(sv[0]);
    qos_invalidate_command_line();
    close(sv[1]);
    g_free(sv);
}

/* A stream netdev for the test, with the filter on what it delivers. */
static void *wirefault_setup(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), !=, -1);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=hs0"
                           " -object filter-wirefault,id=wf0,netdev=hs0,"
                           "queue=tx,seed=7,%s ", sv[1], (const char *)arg);
    g_test_queue_destroy(wirefault_cleanup, sv);
    return sv;
}

/* Receive buffers for twice the frames the test sends. */
static void wf_rx_init(WfRx *w, void *obj, void *data, QGuestAllocator *alloc)
{
    QVirtQueue *vq;

    w->net = obj;
    w->qts = global_qtest;
    w->fd = ((int *)data)[0];
    vq = w->net->queues[0];
    for (int i = 0; i < ARRAY_SIZE(w->buf); i++) {
        w->buf[i] = guest_alloc(alloc, WF_BUF_LEN);
        w->head[i] = qvirtqueue_add(w->qts, vq, w->buf[i], WF_BUF_LEN, true,
                                    false);
        /* A kick makes one chain available. */
        qvirtqueue_kick(w->qts, w->net->vdev, vq, w->head[i]);
    }
}

/* Frame @seq: broadcast, EtherType @type, the payload all @seq. */
static void wf_send(WfRx *w, uint16_t type, uint8_t seq)
{
    uint8_t f[WF_FRAME_LEN];
    uint32_t be_len = htonl(sizeof(f));
    struct iovec iov[] = {
        { .iov_base = &be_len, .iov_len = sizeof(be_len) },
        { .iov_base = f, .iov_len = sizeof(f) },
    };

    memset(f, 0xff, 6);
    memcpy(f + 6, "\x52\x54\x00\x12\x34\x99", 6);
    stw_be_p(f + 12, type);
    memset(f + 14, seq, sizeof(f) - 14);
    g_assert_cmpint(iov_send(w->fd, iov, 2, 0, sizeof(be_len) + sizeof(f)),
                    ==, sizeof(be_len) + sizeof(f));
}

static uint64_t wf_counter(WfRx *w, const char *name)
{
    QDict *resp = qtest_qmp(w->qts, "{'execute': 'qom-get', 'arguments':"
                            " {'path': '/objects/wf0', 'property': %s}}",
                            name);
    uint64_t v = qdict_get_int(resp, "return");

    qobject_unref(resp);
    return v;
}

/* Waits for @n frames the filter saw; then the NIC has what passed. */
static void wf_wait_frames(WfRx *w, uint64_t n)
{
    for (int i = 0; i < 1000 && wf_counter(w, "frames") < n; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(wf_counter(w, "frames"), ==, n);
}

/* The next frame the guest got, or false after @timeout_us. */
static bool wf_recv(WfRx *w, uint8_t *frame, int64_t timeout_us)
{
    QVirtQueue *vq = w->net->queues[0];
    int64_t end = g_get_monotonic_time() + timeout_us;
    uint32_t idx, len;

    while (!qvirtqueue_get_buf(w->qts, vq, &idx, &len)) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        qtest_clock_step(w->qts, 100);
        g_usleep(1000);
    }
    g_assert_cmpuint(len, ==, WF_VNET_HDR + WF_FRAME_LEN);
    for (int i = 0; i < ARRAY_SIZE(w->head); i++) {
        if (w->head[i] == idx) {
            qtest_memread(w->qts, w->buf[i] + WF_VNET_HDR, frame,
                          WF_FRAME_LEN);
            return true;
        }
    }
    g_assert_not_reached();
}

/* The sequence number of a frame that came through unchanged. */
static int wf_seq(const uint8_t *f)
{
    for (int i = 15; i < WF_FRAME_LEN; i++) {
        if (f[i] != f[14]) {
            return -1;
        }
    }
    return f[14];
}

/*
 * loss=50: about half the frames never reach the guest; the rest arrive
 * whole and in order, and the counter says how many were dropped.
 */
static void test_wirefault_loss(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t f[WF_FRAME_LEN];
    uint64_t dropped;
    int got = 0, last = -1;
    WfRx w;

    wf_rx_init(&w, obj, data, alloc);
    for (int i = 0; i < WF_FRAMES; i++) {
        wf_send(&w, 0x88b5, i);
    }
    wf_wait_frames(&w, WF_FRAMES);
    dropped = wf_counter(&w, "dropped");
    g_assert_cmpuint(dropped, >, 0);
    g_assert_cmpuint(dropped, <, WF_FRAMES);
    while (wf_recv(&w, f, got < WF_FRAMES - dropped ? WF_TIMEOUT_US : 100000)) {
        g_assert_cmpint(wf_seq(f), >, last);
        last = wf_seq(f);
        got++;
    }
    g_assert_cmpint(got, ==, WF_FRAMES - dropped);
}

/*
 * corrupt=100,duplicate=100: every frame arrives twice, the two copies
 * alike, each with exactly one bit flipped past the MAC header.
 */
static void test_wirefault_corrupt_dup(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    uint8_t f[2][WF_FRAME_LEN];
    WfRx w;

    wf_rx_init(&w, obj, data, alloc);
    for (int i = 0; i < 4; i++) {
        wf_send(&w, 0x88b5, 0x10 + i);
    }
    wf_wait_frames(&w, 4);
    for (int i = 0; i < 4; i++) {
        int flipped = 0;

        g_assert_true(wf_recv(&w, f[0], WF_TIMEOUT_US));
        g_assert_true(wf_recv(&w, f[1], WF_TIMEOUT_US));
        g_assert_cmpmem(f[0], WF_FRAME_LEN, f[1], WF_FRAME_LEN);
        g_assert_cmphex(lduw_be_p(f[0] + 12), ==, 0x88b5);
        for (int k = 14; k < WF_FRAME_LEN; k++) {
            flipped += ctpop8(f[0][k] ^ (0x10 + i));
        }
        g_assert_cmpint(flipped, ==, 1);
    }
    g_assert_false(wf_recv(&w, f[0], 100000));
    g_assert_cmpuint(wf_counter(&w, "corrupted"), ==, 4);
    g_assert_cmpuint(wf_counter(&w, "duplicated"), ==, 4);
}

/*
 * roce-only=on,loss=100,delay=...: RoCE v1 frames (EtherType 0x8915)
 * are all dropped, the rest passes untouched and is not counted.
 */
static void test_wirefault_roce_only(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    uint8_t f[WF_FRAME_LEN];
    WfRx w;

    wf_rx_init(&w, obj, data, alloc);
    for (int i = 0; i < 8; i++) {
        wf_send(&w, i & 1 ? 0x8915 : 0x88b5, i);
    }
    for (int i = 0; i < 8; i += 2) {
        g_assert_true(wf_recv(&w, f, WF_TIMEOUT_US));
        g_assert_cmpint(wf_seq(f), ==, i);
    }
    g_assert_false(wf_recv(&w, f, 100000));
    g_assert_cmpuint(wf_counter(&w, "frames"), ==, 4);
    g_assert_cmpuint(wf_counter(&w, "dropped"), ==, 4);
}

/*
 * delay=100: a frame waits delay-us of virtual time, and frames keep
 * their order.
 */
static void test_wirefault_delay(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QVirtQueue *vq;
    uint8_t f[WF_FRAME_LEN];
    uint32_t idx, len;
    WfRx w;

    wf_rx_init(&w, obj, data, alloc);
    vq = w.net->queues[0];
    wf_send(&w, 0x88b5, 1);
    wf_send(&w, 0x88b5, 2);
    wf_wait_frames(&w, 2);
    qtest_clock_step(w.qts, 4000 * 1000);
    g_assert_false(qvirtqueue_get_buf(w.qts, vq, &idx, &len));
    qtest_clock_step(w.qts, 2000 * 1000);
    for (int i = 1; i <= 2; i++) {
        g_assert_true(wf_recv(&w, f, WF_TIMEOUT_US));
        g_assert_cmpint(wf_seq(f), ==, i);
    }
    g_assert_cmpuint(wf_counter(&w, "delayed"), ==, 2);
}

static void wf_add(const char *name, QOSTestFunc fn, const char *faults)
{
    QOSGraphTestOptions opts = {
        .before = wirefault_setup,
        .arg = (void *)faults,
    };

    qos_add_test(name, "virtio-net", fn, &opts);
}

static void register_rnic_netdev_test(void)
{
    rt_use_node_b(true);
    rt_add_stream("stream-backpressure", test_stream_backpressure, false);
    rt_add_stream("stream-coalesce", test_stream_backpressure, true);
    rt_add_mcast("mcast-burst", test_mcast_burst);
    rt_add_mcast("mcast-own-echo", test_mcast_own_echo);
    rt_add_mcast_coalesce("mcast-coalesce", test_mcast_coalesce);
    rt_add("socket-coalesce-opts", test_socket_coalesce_opts);
    rt_add_stream_server("stream-reconnect", test_stream_reconnect);
    rt_add_mcast("mcast-empty-datagram", test_dgram_empty);
    rt_add_dgram("dgram-empty-datagram", test_dgram_empty);
    rt_use_node_b(false);

    /* Under virtio-net's own test node, with rnic-netdev-tests/ names. */
    wf_add("rnic-netdev-tests/wirefault-loss", test_wirefault_loss,
           "loss=50");
    wf_add("rnic-netdev-tests/wirefault-corrupt-dup",
           test_wirefault_corrupt_dup, "corrupt=100,duplicate=100");
    wf_add("rnic-netdev-tests/wirefault-roce-only", test_wirefault_roce_only,
           "roce-only=on,loss=100");
    wf_add("rnic-netdev-tests/wirefault-delay", test_wirefault_delay,
           "delay=100,delay-us=5000");
}

libqos_init(register_rnic_netdev_test);

#endif /* _WIN32 */
