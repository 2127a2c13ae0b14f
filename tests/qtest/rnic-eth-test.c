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

/* An IPv4 ICMP echo request from the peer to @dmac: not RoCE. */
static void build_icmp(uint8_t *buf, const uint8_t *dmac, uint8_t seed)
{
    uint8_t *ip = buf + ETH_HLEN;

    memset(buf, 0, ETH_FRAME_LEN);
    memcpy(buf, dmac, 6);
    memcpy(buf + 6, rt_peer_mac, 6);
    rt_st16(buf + 12, 0x0800);
    ip[0] = 0x45;
    rt_st16(ip + 2, ETH_FRAME_LEN - ETH_HLEN);
    ip[8] = 64;
    ip[9] = 1;
    stl_be_p(ip + 12, PEER_IP);
    stl_be_p(ip + 16, DEV_IP);
    rt_st16(ip + 10, rt_ip4_csum(ip));
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

/* ---- registration ---- */

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
}

libqos_init(register_rnic_eth_test);

#endif /* _WIN32 */
