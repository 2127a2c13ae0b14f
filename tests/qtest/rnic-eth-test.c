/*
 * QTest testcases for the rnic RoCEv2 RNIC: the Ethernet function
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-test-common.h"

#ifndef _WIN32

/* ---- Ethernet function ---- */

#define ETH_FRAME_LEN   98          /* IPv4 ICMP echo, 56 data bytes */

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

/*
 * Ethernet and IPv4 headers of a @len-byte frame from the peer's MAC to
 * @dmac; returns the IPv4 header.
 */
static uint8_t *build_eth_ip4(uint8_t *buf, size_t len, const uint8_t *dmac,
                              uint8_t proto, uint32_t sip, uint32_t dip)
{
    uint8_t *ip = buf + ETH_HLEN;

    memset(buf, 0, len);
    memcpy(buf, dmac, 6);
    memcpy(buf + 6, rt_peer_mac, 6);
    rt_st16(buf + 12, 0x0800);
    ip[0] = 0x45;
    rt_st16(ip + 2, len - ETH_HLEN);
    ip[8] = 64;
    ip[9] = proto;
    stl_be_p(ip + 12, sip);
    stl_be_p(ip + 16, dip);
    rt_st16(ip + 10, rt_ip4_csum(ip));
    return ip;
}

/* An IPv4 ICMP echo request from the peer to @dmac: not RoCE. */
static void build_icmp(uint8_t *buf, const uint8_t *dmac, uint8_t seed)
{
    uint8_t *ip = build_eth_ip4(buf, ETH_FRAME_LEN, dmac, 1, PEER_IP, DEV_IP);

    ip[IP4_HLEN] = 8;           /* echo request */
    rt_fill_pattern(ip + IP4_HLEN + 8, ETH_FRAME_LEN - ETH_HLEN - IP4_HLEN - 8,
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

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, buf, 0, 2048);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 1);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 1);

    build_icmp(frame, rt_dev_mac, 0x10);
    rt_sock_send(e.fd, frame, sizeof(frame));
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
    rt_sock_send(e.fd, frame, sizeof(frame));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, 0);
}

/* A frame in guest memory goes out on the wire unchanged. */
static void test_eth_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf;
    ssize_t len;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    build_icmp(frame, rt_peer_mac, 0x20);
    memcpy(frame + 6, rt_dev_mac, 6);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, ring, 0, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 1);

    len = rt_sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_cmpmem(e.frame, len, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, sizeof(frame));
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_TX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 0);
    rt_assert_no_frame(&e, 50);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, 0);
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

    before = rt_guest_errs(r);
    for (i = 0; i < 2; i++) {
        qrnic_writel(r, qs[i], (uint32_t)ring[i] + QRNIC_PAGE);
        qrnic_writel(r, qs[i] + NQ_BASE_HI, 1);
        qrnic_writel(r, qs[i] + NQ_LOG_SIZE, 2);
        /* an 8-byte write is refused for both halves */
        qpci_io_writeq(&r->dev, r->regs, qs[i], ring[i] + 2 * QRNIC_PAGE);
    }
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 10);
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
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 10);
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

    before = rt_guest_errs(r);
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
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 10);

    /* the largest valid ring is accepted */
    for (i = 0; i < 2; i++) {
        net_ring_set(r, qs[i], ring, RNIC_NET_MAX_LOG_SIZE);
        qrnic_writel(r, qs[i] + NQ_PI, 1);
        g_assert_cmpuint(qrnic_readl(r, qs[i] + NQ_PI), ==, 1);
    }
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 10);
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

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    tx = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL,
                 RNIC_NET_CTRL_TX_EN | RNIC_NET_CTRL_RX_EN);

    before = rt_guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 17);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 0xffffffff);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 17);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 0x80000000);
    qrnic_settle(e.r);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 4);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI), ==, 0);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 0);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 0);
    rt_assert_no_frame(&e, 50);

    /* a full ring (PI = CI + 16) is fine, and frames flow */
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 16);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI), ==, 16);
    build_icmp(frame, rt_peer_mac, 0x30);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, tx, 0, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 1);
    len = rt_sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, tx, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 4);
}

/* NET_VECTOR beyond the MSI-X vectors is refused. */
static void test_eth_bad_vector(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *r = obj;
    uint64_t before = rt_guest_errs(r);

    qrnic_writel(r, RNIC_REG_NET_VECTOR, 3);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 3);
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 5);        /* msix-vectors=5 */
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 0xffffffff);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 3);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 2);
    qrnic_writel(r, RNIC_REG_NET_VECTOR, 4);
    g_assert_cmpuint(qrnic_readl(r, RNIC_REG_NET_VECTOR), ==, 4);
    g_assert_cmpuint(rt_guest_errs(r), ==, before + 2);
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

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, 16 * QRNIC_PAGE);
    build_icmp(frame, rt_peer_mac, 0x40);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    for (i = 0; i < n; i++) {
        net_desc_put(e.r, ring, i, buf, bad[i], 0);
    }
    net_desc_put(e.r, ring, n, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    before = rt_guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, n + 1);

    /* only the good one goes out */
    len = rt_sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
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
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + n);
    rt_assert_no_frame(&e, 50);
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

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_TXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    build_icmp(frame, rt_peer_mac, 0x50);
    qtest_memwrite(qrnic_qts(e.r), buf, frame, sizeof(frame));
    net_desc_put(e.r, ring, 0, BAD_DMA, sizeof(frame), 0);
    net_desc_put(e.r, ring, 1, buf, sizeof(frame), 0);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    before = rt_guest_errs(e.r);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 2);

    len = rt_sock_recv(e.fd, e.frame, sizeof(e.frame), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(len, ==, sizeof(frame));
    g_assert_cmpmem(e.frame, len, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);

    /* a ring whose descriptors are not readable: consumed, nothing sent */
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, 0);
    net_ring_set(e.r, RNIC_REG_TXQ_BASE_LO, BAD_DMA, 4);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_TX_EN);
    qrnic_writel(e.r, RNIC_REG_TXQ_BASE_LO + NQ_PI, 2);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_TXQ_BASE_LO + NQ_CI), ==, 2);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 3);
    rt_assert_no_frame(&e, 50);
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

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, buf, 0xabc, ETH_FRAME_LEN - 1);
    net_desc_put(e.r, ring, 1, buf + 0x800, 0, ETH_FRAME_LEN);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 2);
    before = rt_guest_errs(e.r);

    build_icmp(frame, rt_dev_mac, 0x60);
    rt_sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, 0);
    qtest_memread(qrnic_qts(e.r), buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 0);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);

    /* a buffer of exactly the frame's size takes the next one */
    rt_sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, sizeof(frame));
    qtest_memread(qrnic_qts(e.r), buf + 0x800, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), frame, sizeof(frame));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 1);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);
}

/* An RX buffer or descriptor the device cannot reach. */
static void test_eth_rx_bad_addr(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring, buf, before;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    buf = qrnic_alloc(e.r, QRNIC_PAGE);
    net_desc_put(e.r, ring, 0, BAD_DMA, 0, 2048);
    net_desc_put(e.r, ring, 1, buf, 0, 2048);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 2);
    before = rt_guest_errs(e.r);

    build_icmp(frame, rt_dev_mac, 0x70);
    rt_sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, 0);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 1);
    rt_sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 1, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_PKTS), ==, 1);

    /* descriptors not readable: the frame is dropped, the slot consumed */
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, 0);
    net_ring_set(e.r, RNIC_REG_RXQ_BASE_LO, BAD_DMA, 4);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 1);
    rt_sock_send(e.fd, frame, sizeof(frame));
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_RXQ_BASE_LO + NQ_CI), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 2);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, before + 2);
}

/*
 * An RX buffer on the device's own BAR0, where a received frame would
 * write CTRL (its first bytes, our MAC, have RESET set and ENABLE clear).
 * The frame is written from the bottom half, under the device's
 * re-entrancy guard, so the write is refused: the descriptor completes
 * with an error and the device goes on, its counters and state intact.
 * Before, the netdev's receive callback wrote it unguarded and the
 * device reset itself.
 */
static void test_eth_rx_on_own_bar(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Env e;
    struct rnic_net_desc d;
    uint8_t frame[ETH_FRAME_LEN];
    uint64_t ring;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    ring = net_ring_new(e.r, RNIC_REG_RXQ_BASE_LO);
    net_desc_put(e.r, ring, 0, e.r->regs.addr + RNIC_REG_CTRL, 0, 2048);
    qrnic_writel(e.r, RNIC_REG_NET_CTRL, RNIC_NET_CTRL_RX_EN);
    qrnic_writel(e.r, RNIC_REG_RXQ_BASE_LO + NQ_PI, 1);

    build_icmp(frame, rt_dev_mac, 0x71);
    g_assert_true(frame[0] & 2);        /* would set CTRL.RESET */
    rt_sock_send(e.fd, frame, sizeof(frame));
    g_assert_true(net_desc_wait(e.r, ring, 0, &d));
    g_assert_cmphex(d.status, ==, RNIC_NET_DESC_DONE | RNIC_NET_DESC_ERR);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_ETH_RX_DROPPED), ==, 1);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, RNIC_STATUS_READY);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_NET_CTRL), ==,
                    RNIC_NET_CTRL_RX_EN);
}

/* ---- registration ---- */

/* ---- raw packet QPs and flow rules ---- */

#define RAW_FRAME_LEN   74          /* IPv4 UDP, 32 data bytes */
#define RAW_DPORT       5678

static const uint8_t raw_dmac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };

/* An IPv4 UDP frame 1.1.1.1:1234 -> 2.2.2.2:@dport to raw_dmac. */
static void build_udp(uint8_t *f, uint16_t dport, uint8_t seed)
{
    uint8_t *udp = build_eth_ip4(f, RAW_FRAME_LEN, raw_dmac, 17, 0x01010101,
                                 0x02020202) + IP4_HLEN;

    rt_st16(udp, 1234);
    rt_st16(udp + 2, dport);
    rt_st16(udp + 4, RAW_FRAME_LEN - ETH_HLEN - IP4_HLEN);
    rt_fill_pattern(udp + UDP_HLEN, RAW_FRAME_LEN - ETH_HLEN - IP4_HLEN -
                    UDP_HLEN, seed);
}

/* A raw packet QP on the env's PD and CQ, in RTS. */
static void raw_qp(Env *e, QRnicQp *qp)
{
    struct rnic_qp_attr a;

    g_assert_cmpuint(qrnic_create_qp(e->r, qp, RNIC_QPT_RAW_PACKET, e->pdn,
                                     e->cq.cqn, e->cq.cqn, 4, 4),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_INIT);
    /* INIT wants the port and nothing else (no P_Key, no access). */
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PKEY_INDEX |
                                     RNIC_QP_ATTR_PORT, &a),
                     ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PORT, &a), ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(e->r, qp->qpn, RNIC_QP_ATTR_STATE, &a),
                     ==, RNIC_CMD_OK);
}

/* Rule: frames to raw_dmac, IPv4 UDP to @dport. */
static void udp_rule(struct rnic_flow_match *m, uint16_t dport)
{
    memset(m, 0, sizeof(*m));
    memcpy(m->dmac, raw_dmac, 6);
    memset(m->dmac_mask, 0xff, 6);
    m->ip_ver = 4;
    m->ip_proto = 17;
    m->ip_proto_mask = 0xff;
    m->l4 = RNIC_FLOW_L4_UDP;
    rt_st16(m->dst_port, dport);
    rt_st16(m->dst_port_mask, 0xffff);
}

static uint8_t flow_create(Env *e, uint32_t qpn,
                           const struct rnic_flow_match *m, uint32_t *h)
{
    struct rnic_cmd cmd;
    uint32_t out[6] = { 0 };
    uint8_t st;

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_FLOW);
    cmd.u.create_flow.qpn = cpu_to_le32(qpn);
    cmd.u.create_flow.match = *m;
    st = qrnic_cmd(e->r, &cmd, out);
    if (h) {
        *h = out[RNIC_OUT_HANDLE];
    }
    return st;
}

static uint8_t flow_destroy(Env *e, uint32_t h)
{
    return qrnic_destroy(e->r, RNIC_CMD_DESTROY_FLOW, 0, h);
}

static void raw_post_recv(Env *e, QRnicQp *qp, uint64_t wr_id, uint64_t off)
{
    struct rnic_sge sge;

    rt_sge_of(&sge, &e->mr, off, 256);
    qrnic_post_recv(e->r, qp, wr_id, &sge, 1);
    qrnic_ring_rq(e->r, qp);
}

/* The next CQE is @qp's receive of the frame @f, landed at MR offset @off. */
static void raw_expect_recv(Env *e, QRnicQp *qp, uint64_t wr_id,
                            uint64_t off, const uint8_t *f)
{
    uint8_t got[RAW_FRAME_LEN];
    struct rnic_cqe cqe;

    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qp->qpn);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, RAW_FRAME_LEN);
    qtest_memread(qrnic_qts(e->r), e->mr.buf + off, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), f, RAW_FRAME_LEN);
}

/* A rule steers the frames it matches, whole, to the raw QP; no others. */
static void test_raw_flow_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp;
    struct rnic_flow_match m;
    uint8_t f[RAW_FRAME_LEN];
    uint32_t h;

    rt_env_basic(&e, obj, data);
    raw_qp(&e, &qp);
    raw_post_recv(&e, &qp, 0x11, 0);
    udp_rule(&m, RAW_DPORT);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, &h), ==, RNIC_CMD_OK);
    g_assert_cmpuint(h, !=, 0);

    build_udp(f, RAW_DPORT + 1, 1);     /* another port: not ours */
    rt_sock_send(e.fd, f, sizeof(f));
    rt_assert_cq_empty(&e, &e.cq);
    build_udp(f, RAW_DPORT, 2);
    rt_sock_send(e.fd, f, sizeof(f));
    raw_expect_recv(&e, &qp, 0x11, 0, f);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_RX_PKTS), ==, 1);

    /* No receive WQE: the frame is lost and counted, the QP lives on. */
    rt_sock_send(e.fd, f, sizeof(f));
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_RX_DROPPED), ==, 1);
    g_assert_cmpuint(rt_qp_state(&e, &qp), ==, RNIC_QPS_RTS);

    /* Gone with its rule. */
    g_assert_cmpuint(flow_destroy(&e, h), ==, RNIC_CMD_OK);
    raw_post_recv(&e, &qp, 0x12, 256);
    rt_sock_send(e.fd, f, sizeof(f));
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(flow_destroy(&e, h), ==, RNIC_CMD_ERR_HANDLE);
}

/*
 * A SEND on a raw QP puts the gathered bytes on the wire as they are;
 * the device's own rules hear the frame too.
 */
static void test_raw_tx_loopback(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Env e;
    QRnicQp tx, rx;
    struct rnic_flow_match m;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint8_t f[RAW_FRAME_LEN], got[2048];
    ssize_t n;

    rt_env_basic(&e, obj, data);
    raw_qp(&e, &tx);
    raw_qp(&e, &rx);
    raw_post_recv(&e, &rx, 0x21, 512);
    udp_rule(&m, RAW_DPORT);
    g_assert_cmpuint(flow_create(&e, rx.qpn, &m, NULL), ==, RNIC_CMD_OK);
    /* Two rules of one QP that both match: one copy. */
    memset(&m.dmac_mask, 0, sizeof(m.dmac_mask));
    g_assert_cmpuint(flow_create(&e, rx.qpn, &m, NULL), ==, RNIC_CMD_OK);

    build_udp(f, RAW_DPORT, 3);
    qtest_memwrite(qrnic_qts(e.r), e.mr.buf, f, sizeof(f));
    rt_send_wqe(&w, 0x20, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &e.mr, 0, sizeof(f));
    qrnic_post_send(e.r, &tx, &w, &sge, 1);
    qrnic_ring_sq(e.r, &tx);

    n = rt_sock_recv(e.fd, got, sizeof(got), QRNIC_TIMEOUT_MS);
    g_assert_cmpint(n, ==, sizeof(f));
    g_assert_cmpmem(got, n, f, sizeof(f));
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    if (le32_to_cpu(cqe.qpn) == rx.qpn) {
        /* The loopback may complete first. */
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x21);
        g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    } else {
        raw_expect_recv(&e, &rx, 0x21, 512, f);
    }
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, tx.qpn);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x20);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_TX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_RX_PKTS), ==, 1);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_LOOPBACK_PKTS), ==, 1);
}

/* Raw WQEs a raw QP cannot send fail alone, with the right status. */
static void test_raw_bad_wqe(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp;
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    struct rnic_cqe cqe;

    rt_env_basic(&e, obj, data);
    raw_qp(&e, &qp);
    /* Shorter than an Ethernet header. */
    rt_send_wqe(&w, 0x31, RNIC_WR_SEND, 1);
    rt_sge_of(&sge, &e.mr, 0, ETH_HLEN - 1);
    qrnic_post_send(e.r, &qp, &w, &sge, 1);
    qrnic_ring_sq(e.r, &qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x31);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_LEN_ERR);
    rt_assert_no_frame(&e, 50);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_TX_PKTS), ==, 0);
}

/* Rules the device cannot honour are refused, each for its reason. */
static void test_raw_flow_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp;
    struct rnic_flow_match m;
    uint32_t h1, h2;
    uint64_t errs;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    raw_qp(&e, &qp);
    errs = rt_guest_errs(e.r);

    udp_rule(&m, RAW_DPORT);
    g_assert_cmpuint(flow_create(&e, e.qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);           /* an RC QP */
    g_assert_cmpuint(flow_create(&e, 0x3ff, &m, NULL), ==,
                     RNIC_CMD_ERR_HANDLE);          /* no such QP */
    m.ip_ver = 5;
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    udp_rule(&m, RAW_DPORT);
    m.ip_ver = 0;                   /* ports and protocol, but no IP */
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    udp_rule(&m, RAW_DPORT);
    m.l4 = RNIC_FLOW_L4_ANY;        /* ports without TCP or UDP */
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    udp_rule(&m, RAW_DPORT);
    m.dst_ip_mask[8] = 0xff;        /* IPv4 has 4 bytes */
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    udp_rule(&m, RAW_DPORT);
    m.rsvd_108[1] = 1;
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 7);

    /* max-flow=2: a third rule is over the limit until a QP goes. */
    udp_rule(&m, RAW_DPORT);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, &h1), ==, RNIC_CMD_OK);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, &h2), ==, RNIC_CMD_OK);
    g_assert_cmpuint(h1, !=, h2);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==,
                     RNIC_CMD_ERR_RESOURCE);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, qp.qpn),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(flow_destroy(&e, h1), ==, RNIC_CMD_ERR_HANDLE);
    raw_qp(&e, &qp);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==, RNIC_CMD_OK);
    g_assert_cmpuint(flow_create(&e, qp.qpn, &m, NULL), ==, RNIC_CMD_OK);
}

/* max-flow=0 turns raw packet QPs off: there is no way to feed one. */
static void test_raw_off(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp qp;
    struct rnic_device_attr a;

    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(qrnic_query_device(e.r, &a), ==, RNIC_CMD_OK);
    g_assert_cmpuint(le32_to_cpu(a.max_flow), ==, 0);
    g_assert_cmpuint(qrnic_create_qp(e.r, &qp, RNIC_QPT_RAW_PACKET, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 4, 4),
                     ==, RNIC_CMD_ERR_NOT_SUPP);
}

/* ---- receive-side scaling ---- */

/* The key and vectors of the RSS verification suite (IPv4, with ports). */
static const uint8_t rss_key[RNIC_RSS_KEY_LEN] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};
#define RSS_SIP         0x420995bbu     /* 66.9.149.187 */
#define RSS_DIP         0xa18e6450u     /* 161.142.100.80 */
#define RSS_SPORT       2794
#define RSS_DPORT       1766
#define RSS_HASH_IP     0x323e8fc2u     /* addresses only */
#define RSS_HASH_IP_L4  0x51ccc178u     /* addresses and ports */

/* SET_RSS: entry @hot of a 32-entry table is @a, all others @b. */
static uint8_t rss_set(Env *e, uint32_t qpn, uint16_t fields, uint32_t hot,
                       uint32_t a, uint32_t b, uint8_t key_len)
{
    struct rnic_cmd cmd;
    unsigned i;

    qrnic_cmd_init(&cmd, RNIC_CMD_SET_RSS);
    cmd.u.set_rss.qpn = cpu_to_le32(qpn);
    cmd.u.set_rss.log_tbl_size = RNIC_RSS_MAX_LOG_TBL;
    cmd.u.set_rss.key_len = key_len;
    cmd.u.set_rss.fields = cpu_to_le16(fields);
    memcpy(cmd.u.set_rss.key, rss_key, sizeof(rss_key));
    for (i = 0; i < 1u << RNIC_RSS_MAX_LOG_TBL; i++) {
        cmd.u.set_rss.wq_qpn[i] = cpu_to_le32(i == hot ? a : b);
    }
    return qrnic_cmd(e->r, &cmd, NULL);
}

static void rss_frame(uint8_t *f, uint32_t sip)
{
    uint8_t *udp = build_eth_ip4(f, RAW_FRAME_LEN, raw_dmac, 17, sip,
                                 RSS_DIP) + IP4_HLEN;

    rt_st16(udp, RSS_SPORT);
    rt_st16(udp + 2, RSS_DPORT);
    rt_st16(udp + 4, RAW_FRAME_LEN - ETH_HLEN - IP4_HLEN);
}

/*
 * An RSS QP spreads what its rule catches over its table by the Toeplitz
 * hash of the fields it names; it never receives itself, in any state.
 */
static void test_raw_rss(void *obj, void *data, QGuestAllocator *alloc)
{
    Env e;
    QRnicQp a, b, rss, rss2;
    struct rnic_flow_match m;
    uint8_t f[RAW_FRAME_LEN];
    uint64_t errs;

    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_INIT);
    raw_qp(&e, &a);
    raw_qp(&e, &b);
    g_assert_cmpuint(qrnic_create_qp(e.r, &rss, RNIC_QPT_RAW_PACKET, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 0, 0), ==,
                     RNIC_CMD_OK);
    errs = rt_guest_errs(e.r);
    g_assert_cmpuint(rss_set(&e, e.qp.qpn, RNIC_RSS_SRC_IPV4, 2, a.qpn,
                             b.qpn, RNIC_RSS_KEY_LEN), ==,
                     RNIC_CMD_ERR_PARAM);       /* not a raw QP */
    g_assert_cmpuint(rss_set(&e, rss.qpn, RNIC_RSS_SRC_IPV4, 2, a.qpn,
                             e.qp.qpn, RNIC_RSS_KEY_LEN), ==,
                     RNIC_CMD_ERR_PARAM);       /* an RC QP in the table */
    g_assert_cmpuint(rss_set(&e, rss.qpn, RNIC_RSS_SRC_IPV4, 2, a.qpn,
                             b.qpn, RNIC_RSS_KEY_LEN - 1), ==,
                     RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rss_set(&e, rss.qpn, 0x100, 2, a.qpn, b.qpn,
                             RNIC_RSS_KEY_LEN), ==, RNIC_CMD_ERR_PARAM);
    g_assert_cmpuint(rt_guest_errs(e.r), ==, errs + 4);

    /* Addresses only: the vector's hash picks entry 2. */
    g_assert_cmpuint(rss_set(&e, rss.qpn, RNIC_RSS_SRC_IPV4 |
                             RNIC_RSS_DST_IPV4, RSS_HASH_IP & 31, a.qpn,
                             b.qpn, RNIC_RSS_KEY_LEN), ==, RNIC_CMD_OK);
    g_assert_cmpuint(rss_set(&e, rss.qpn, RNIC_RSS_SRC_IPV4, 2, a.qpn,
                             b.qpn, RNIC_RSS_KEY_LEN), ==,
                     RNIC_CMD_ERR_STATE);       /* set once */
    udp_rule(&m, RSS_DPORT);
    g_assert_cmpuint(flow_create(&e, rss.qpn, &m, NULL), ==, RNIC_CMD_OK);
    raw_post_recv(&e, &a, 0xa1, 0);
    raw_post_recv(&e, &b, 0xb1, 256);
    rss_frame(f, RSS_SIP);
    rt_sock_send(e.fd, f, sizeof(f));
    raw_expect_recv(&e, &a, 0xa1, 0, f);
    rss_frame(f, 0x01010101);       /* hash 0xc58f6345: entry 5 */
    rt_sock_send(e.fd, f, sizeof(f));
    raw_expect_recv(&e, &b, 0xb1, 256, f);

    /* With the UDP ports the same frame hashes to entry 24. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_QP, 0, rss.qpn),
                     ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_qp(e.r, &rss2, RNIC_QPT_RAW_PACKET, e.pdn,
                                     e.cq.cqn, e.cq.cqn, 0, 0), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(rss_set(&e, rss2.qpn, RNIC_RSS_SRC_IPV4 |
                             RNIC_RSS_DST_IPV4 | RNIC_RSS_SRC_PORT_UDP |
                             RNIC_RSS_DST_PORT_UDP, RSS_HASH_IP_L4 & 31,
                             a.qpn, b.qpn, RNIC_RSS_KEY_LEN), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(flow_create(&e, rss2.qpn, &m, NULL), ==, RNIC_CMD_OK);
    raw_post_recv(&e, &a, 0xa2, 512);
    rss_frame(f, RSS_SIP);
    rt_sock_send(e.fd, f, sizeof(f));
    raw_expect_recv(&e, &a, 0xa2, 512, f);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RAW_RX_PKTS), ==, 3);
}

static void register_rnic_eth_test(void)
{
    rt_add("eth-rx", test_eth_rx);
    rt_add("eth-tx", test_eth_tx);
    rt_add("eth-ring-locked", test_eth_ring_locked);
    rt_add("eth-ring-invalid", test_eth_ring_invalid);
    rt_add("eth-pi-overrun", test_eth_pi_overrun);
    rt_add("eth-bad-vector", test_eth_bad_vector);
    rt_add("eth-tx-bad-len", test_eth_tx_bad_len);
    rt_add("eth-tx-bad-addr", test_eth_tx_bad_addr);
    rt_add("eth-rx-small-buf", test_eth_rx_small_buf);
    rt_add("eth-rx-bad-addr", test_eth_rx_bad_addr);
    rt_add("eth-rx-on-own-bar", test_eth_rx_on_own_bar);
    rt_add("raw-flow-rx", test_raw_flow_rx);
    rt_add("raw-tx-loopback", test_raw_tx_loopback);
    rt_add("raw-bad-wqe", test_raw_bad_wqe);
    rt_add("raw-rss", test_raw_rss);
    rt_add_opts("raw-flow-bad", test_raw_flow_bad, ",max-flow=2");
    rt_add_opts("raw-off", test_raw_off, ",max-flow=0");
}

libqos_init(register_rnic_eth_test);

#endif /* _WIN32 */
