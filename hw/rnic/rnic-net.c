/*
 * rnic: netdev path -- classification, loopback, loss injection and the
 * Ethernet function's descriptor rings
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One netdev carries both functions.  Frames that are RoCEv2 for one of
 * our GIDs go to the transport and never to the Ethernet ring; every
 * other frame is the Ethernet driver's.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "net/net.h"
#include "net/wirefault.h"
#include "rnic.h"
#include "rnic-wire.h"
#include "trace.h"

/*
 * Bounds the host memory queued RoCE frames take.  A full queue stops
 * the netdev (can_receive) until the bottom half drains it; frames we
 * send to ourselves are dropped and counted instead.
 */
#define RNIC_RX_MAX_FRAMES      1024
/* Any non-zero start for the loss PRNG when loss-seed is 0. */
#define RNIC_LOSS_SEED_DEFAULT  0x2545f491u
/* And for the other faults' PRNG when fault-seed is 0. */
#define RNIC_FAULT_SEED_DEFAULT 0x9e3779b9u

struct RnicRxFrame {
    QSIMPLEQ_ENTRY(RnicRxFrame) next;
    int64_t due;                /* delayed egress: when to send, in us */
    bool eth;                   /* received: for the Ethernet RX ring */
    size_t len;
    uint8_t data[];
};

/* ---- classification ---- */

static bool rnic_mac_is_ours(RnicState *s, const uint8_t *mac)
{
    return !memcmp(mac, s->conf.macaddr.a, RNIC_ETH_ALEN);
}

static bool rnic_net_is_roce_v1(const uint8_t *buf, size_t len)
{
    uint16_t type = rnic_ld16be(buf + 12);

    if (type == RNIC_ETHERTYPE_VLAN && len >= RNIC_ETH_HLEN + RNIC_VLAN_HLEN) {
        type = rnic_ld16be(buf + 16);
    }
    return type == RNIC_ETHERTYPE_ROCE_V1;
}

/*
 * An IB packet framed for the netdev (docs/infiniband.md): every such
 * frame an IB port hears is the transport's, which checks the DLID and
 * counts what is not for the port.
 */
static bool rnic_net_is_ib(const uint8_t *buf, size_t len)
{
    return len >= RNIC_ETH_HLEN + RNIC_LRH_LEN &&
           rnic_ld16be(buf + 12) == RNIC_ETHERTYPE_IB;
}

/*
 * Whether an IB packet this port sends is its own to hear too: to one of
 * its LIDs (loopback, which never leaves the port), or to a multicast
 * LID, which the port's own group members hear as well.
 */
static bool rnic_net_ib_local(RnicState *s, const uint8_t *frame,
                              size_t len, bool *leaves)
{
    uint16_t dlid = rnic_ld16be(frame + RNIC_ETH_HLEN + 2);
    uint16_t base = ~((1u << s->ibp.lmc) - 1);

    if (rnic_lid_is_mcast(dlid)) {
        const uint8_t *lrh = frame + RNIC_ETH_HLEN;

        /* The group is the GRH's DGID, 24 bytes into the GRH. */
        *leaves = true;
        return (lrh[1] & 3) == RNIC_LNH_IBA_GLOBAL &&
               len >= RNIC_ETH_HLEN + RNIC_LRH_LEN + 40 &&
               rnic_mcast_find(s, lrh + RNIC_LRH_LEN + 24);
    }
    *leaves = s->ibp.lid == RNIC_LID_RESERVED ||
              (dlid & base) != (s->ibp.lid & base);
    return !*leaves;
}

/*
 * True for IPv4/IPv6 UDP to port 4791 whose destination IP is one of our
 * valid v2 GIDs, and for RoCE v1 (EtherType 0x8915) whose GRH names one
 * of our v1 GIDs.  Only the headers needed to decide are looked at; the
 * transport parses and checks the whole frame.
 */
static bool rnic_net_roce_for_us(RnicState *s, const uint8_t *buf, size_t len)
{
    size_t off = RNIC_ETH_HLEN;
    uint16_t type;
    const uint8_t *ip, *udp;
    uint8_t dst[16];
    bool v1 = false;

    /* An IB port speaks no RoCE (its packets: rnic_net_is_ib()). */
    if (s->ib || len < RNIC_ETH_HLEN) {
        return false;
    }
    type = rnic_ld16be(buf + 12);
    if (type == RNIC_ETHERTYPE_VLAN) {
        if (len < RNIC_ETH_HLEN + RNIC_VLAN_HLEN) {
            return false;
        }
        type = rnic_ld16be(buf + 16);
        off += RNIC_VLAN_HLEN;
    }
    ip = buf + off;
    if (type == RNIC_ETHERTYPE_IPV4) {
        size_t ihl;

        if (len < off + RNIC_IPV4_HLEN || (ip[0] >> 4) != 4) {
            return false;
        }
        ihl = (ip[0] & 0xf) * 4;
        /* Fragments (MF set or an offset) are never RoCE. */
        if (ihl < RNIC_IPV4_HLEN || len < off + ihl + RNIC_UDP_HLEN ||
            ip[9] != RNIC_IPPROTO_UDP || (rnic_ld16be(ip + 6) & 0x3fff)) {
            return false;
        }
        rnic_ipv4_to_mapped(rnic_ld32be(ip + 16), dst);
        udp = ip + ihl;
    } else if (type == RNIC_ETHERTYPE_IPV6) {
        if (len < off + RNIC_IPV6_HLEN + RNIC_UDP_HLEN || (ip[0] >> 4) != 6 ||
            ip[6] != RNIC_IPPROTO_UDP) {
            return false;
        }
        memcpy(dst, ip + 24, sizeof(dst));
        udp = ip + RNIC_IPV6_HLEN;
    } else if (type == RNIC_ETHERTYPE_ROCE_V1) {
        if (len < off + RNIC_GRH_LEN || ip[6] != RNIC_GRH_NXTHDR_IBA) {
            return false;
        }
        memcpy(dst, ip + 24, sizeof(dst));
        udp = NULL;
        v1 = true;
    } else {
        return false;
    }
    if (udp && rnic_ld16be(udp + 2) != RNIC_ROCE_UDP_PORT) {
        return false;
    }
    if (rnic_gid_find(s, dst, v1) >= 0) {
        return true;
    }
    /* Group frames are for us when one of our UD QPs joined the group. */
    return (buf[0] & 1) && rnic_mcast_find(s, dst);
}

/* ---- Ethernet RX ring ---- */

static bool rnic_net_ring_ok(uint64_t base, uint32_t log_size)
{
    return log_size >= 1 && log_size <= RNIC_NET_MAX_LOG_SIZE &&
           !(base & (sizeof(struct rnic_net_desc) - 1)) &&
           base <= UINT64_MAX - (sizeof(struct rnic_net_desc) << log_size);
}

static uint64_t rnic_net_desc_addr(uint64_t base, uint32_t log_size,
                                   uint32_t idx)
{
    return base + sizeof(struct rnic_net_desc) *
           (uint64_t)(idx & ((1u << log_size) - 1));
}

/* Writes len then status, so DONE is the last thing the driver sees. */
static void rnic_net_desc_complete(RnicState *s, uint64_t daddr, uint16_t len,
                                   uint8_t status, bool set_len)
{
    uint16_t len_le = cpu_to_le16(len);

    if (set_len) {
        rnic_dma_write(s, daddr + offsetof(struct rnic_net_desc, len),
                       &len_le, sizeof(len_le));
    }
    rnic_dma_write(s, daddr + offsetof(struct rnic_net_desc, status),
                   &status, 1);
}

static void rnic_net_eth_irq(RnicState *s)
{
    if (!(s->net_irq_mask & 1)) {
        rnic_irq(s, s->net_vector);
    }
}

static void rnic_net_rx_eth(RnicState *s, const uint8_t *buf, size_t len)
{
    struct rnic_net_desc d;
    uint64_t daddr;
    uint8_t status = RNIC_NET_DESC_DONE;

    if (!(s->net_ctrl & RNIC_NET_CTRL_RX_EN) ||
        !rnic_net_ring_ok(s->rxq_base, s->rxq_log_size) ||
        s->rxq_ci == s->rxq_pi) {
        s->cnt[RNIC_CNT_ETH_RX_DROPPED]++;
        trace_rnic_net_rx_eth_drop(len, s->rxq_ci, s->rxq_pi);
        return;
    }
    daddr = rnic_net_desc_addr(s->rxq_base, s->rxq_log_size, s->rxq_ci);
    s->rxq_ci++;
    if (rnic_dma_read(s, daddr, &d, sizeof(d)) != MEMTX_OK) {
        RNIC_GUEST_ERR(rnic_err_dma(daddr, sizeof(d)), s,
                       "RX descriptor at 0x%" PRIx64 " not readable", daddr);
        s->cnt[RNIC_CNT_ETH_RX_DROPPED]++;
        return;
    }
    if (len > le16_to_cpu(d.buf_len)) {
        RNIC_GUEST_ERR(rnic_err_net_rx_buf(len, le16_to_cpu(d.buf_len)), s,
                       "RX buffer of %u bytes for a %zu-byte frame",
                       le16_to_cpu(d.buf_len), len);
        status |= RNIC_NET_DESC_ERR;
        len = 0;
    } else if (rnic_dma_write(s, le64_to_cpu(d.addr), buf, len)
               != MEMTX_OK) {
        RNIC_GUEST_ERR(rnic_err_dma(le64_to_cpu(d.addr), len), s,
                       "RX buffer at 0x%" PRIx64 " not writable",
                       (uint64_t)le64_to_cpu(d.addr));
        status |= RNIC_NET_DESC_ERR;
        len = 0;
    }
    rnic_net_desc_complete(s, daddr, len, status, true);
    if (status & RNIC_NET_DESC_ERR) {
        s->cnt[RNIC_CNT_ETH_RX_DROPPED]++;
    } else {
        s->cnt[RNIC_CNT_ETH_RX_PKTS]++;
    }
    trace_rnic_net_rx_eth(len, s->rxq_ci - 1, status);
    rnic_net_eth_irq(s);
}

/*
 * Queues a received frame for the bottom half, which does all guest DMA:
 * a RoCE or flow-rule frame (@eth false) or one for the Ethernet RX ring.
 * False if it was dropped.
 */
static bool rnic_net_rx_queue_as(RnicState *s, const uint8_t *buf,
                                 size_t len, bool eth)
{
    RnicRxFrame *f;

    if (s->rx_len >= RNIC_RX_MAX_FRAMES) {
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        trace_rnic_net_rx_full(len);
        return false;
    }
    f = g_try_malloc(sizeof(*f) + len);
    if (!f) {
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        return false;
    }
    f->len = len;
    f->eth = eth;
    memcpy(f->data, buf, len);
    QSIMPLEQ_INSERT_TAIL(&s->rx_q, f, next);
    s->rx_len++;
    trace_rnic_net_rx_queued(len, s->rx_len);
    rnic_schedule(s);
    return true;
}

static bool rnic_net_rx_queue(RnicState *s, const uint8_t *buf, size_t len)
{
    return rnic_net_rx_queue_as(s, buf, len, false);
}

bool rnic_net_can_receive(NetClientState *nc)
{
    RnicState *s = qemu_get_nic_opaque(nc);

    /*
     * Frames without an Ethernet descriptor are dropped (by the bottom
     * half), so only a full queue holds the netdev back; the bottom half
     * flushes it.
     */
    if (s->rx_len >= RNIC_RX_MAX_FRAMES) {
        s->rx_blocked = true;
        return false;
    }
    return true;
}

ssize_t rnic_net_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    RnicState *s = qemu_get_nic_opaque(nc);
    bool ours, group;

    if (len < RNIC_ETH_HLEN) {
        trace_rnic_net_rx_runt(len);
        return len;
    }
    if (rnic_halted(s)) {
        /* Outside D0 the port hears nothing; the reset drops the rest. */
        s->pm.frames_dropped++;
        trace_rnic_pm_frame_dropped(len);
        return len;
    }
    if (s->ib) {
        /* IB frames only: the port has no Ethernet function. */
        if (!rnic_net_is_ib(buf, len)) {
            trace_rnic_net_rx_not_ib(len);
            s->cnt[RNIC_CNT_RX_DROPPED]++;
            return len;
        }
        trace_rnic_net_rx_roce(len);
        rnic_net_rx_queue(s, buf, len);
        return len;
    }
    ours = rnic_mac_is_ours(s, buf);
    group = buf[0] & 1;
    if ((ours || group) && rnic_net_roce_for_us(s, buf, len)) {
        trace_rnic_net_rx_roce(len);
        rnic_net_rx_queue(s, buf, len);
        return len;
    }
    /* Flow rules look at every frame the port hears, as they ask. */
    if (rnic_flow_wants(s, buf, len)) {
        trace_rnic_net_rx_raw(len);
        rnic_net_rx_queue(s, buf, len);
        return len;
    }
    /*
     * No host stack speaks RoCE v1, so a v1 frame that is not for one of
     * our GIDs is the RoCE engine's to drop; promiscuous mode still lets
     * the driver see it.
     */
    if ((ours || group) && rnic_net_is_roce_v1(buf, len)) {
        trace_rnic_net_rx_v1_unknown(len);
        s->cnt[RNIC_CNT_RX_DROPPED]++;
        if (!(s->net_ctrl & RNIC_NET_CTRL_PROMISC)) {
            return len;
        }
    }
    /* No multicast filter table: every group frame is accepted. */
    if (!ours && !group && !(s->net_ctrl & RNIC_NET_CTRL_PROMISC)) {
        trace_rnic_net_rx_filtered(len);
        return len;
    }
    rnic_net_rx_queue_as(s, buf, len, true);
    return len;
}

/* ---- RoCE egress: fault injection, loopback, netdev ---- */

static bool rnic_loss_drop(RnicState *s)
{
    return wirefault_hit(&s->loss_state, s->prop.loss);
}

/* True for 'pct' percent of the calls; draws nothing when pct is 0. */
static bool rnic_fault(RnicState *s, uint32_t pct)
{
    return wirefault_hit(&s->fault_state, pct);
}

static RnicRxFrame *rnic_frame_copy(const uint8_t *buf, size_t len)
{
    RnicRxFrame *f = g_try_malloc(sizeof(*f) + len);

    if (f) {
        f->len = len;
        f->eth = false;
        f->due = 0;
        memcpy(f->data, buf, len);
    }
    return f;
}

/* Puts a finished frame on the netdev, or back to ourselves. */
static void rnic_net_emit(RnicState *s, const uint8_t *frame, size_t len)
{
    bool leaves;

    if (s->ib && rnic_net_is_ib(frame, len)) {
        if (!rnic_net_ib_local(s, frame, len, &leaves)) {
            trace_rnic_net_tx_roce(len);
            qemu_send_packet(qemu_get_queue(s->nic), frame, len);
            return;
        }
        if (leaves) {
            trace_rnic_net_tx_roce(len);
            qemu_send_packet(qemu_get_queue(s->nic), frame, len);
        }
        if (rnic_net_rx_queue(s, frame, len)) {
            s->cnt[RNIC_CNT_LOOPBACK_PKTS]++;
        }
        return;
    }
    if (!rnic_mac_is_ours(s, frame)) {
        trace_rnic_net_tx_roce(len);
        qemu_send_packet(qemu_get_queue(s->nic), frame, len);
        /* Our own members of the group hear it too, as on a real port. */
        if ((frame[0] & 1) && rnic_net_roce_for_us(s, frame, len) &&
            rnic_net_rx_queue(s, frame, len)) {
            s->cnt[RNIC_CNT_LOOPBACK_PKTS]++;
        }
        return;
    }
    /* To ourselves: through the receive queue like any other frame. */
    if (rnic_net_rx_queue(s, frame, len)) {
        s->cnt[RNIC_CNT_LOOPBACK_PKTS]++;
    }
}

/*
 * 'reorder': a frame is held back and goes out right after the next one
 * (or at the end of the bottom-half run, if no other frame follows).
 */
static void rnic_net_out(RnicState *s, const uint8_t *frame, size_t len)
{
    if (!s->held && rnic_fault(s, s->prop.reorder)) {
        s->held = rnic_frame_copy(frame, len);
        if (s->held) {
            s->cnt[RNIC_CNT_TX_REORDER_INJECTED]++;
            trace_rnic_net_fault("reorder", len);
            rnic_schedule(s);
            return;
        }
    }
    rnic_net_emit(s, frame, len);
    rnic_net_flush_held(s);
}

void rnic_net_flush_held(RnicState *s)
{
    RnicRxFrame *f = s->held;

    if (f) {
        s->held = NULL;
        rnic_net_emit(s, f->data, f->len);
        g_free(f);
    }
}

static void rnic_delay_timer_cb(void *opaque)
{
    /* Sending is the bottom half's business, like all device work. */
    rnic_schedule(opaque);
}

void rnic_net_delay_run(RnicState *s)
{
    int64_t now = qemu_clock_get_us(QEMU_CLOCK_VIRTUAL);
    RnicRxFrame *f;

    while ((f = QSIMPLEQ_FIRST(&s->delay_q)) && f->due <= now) {
        QSIMPLEQ_REMOVE_HEAD(&s->delay_q, next);
        s->delay_len--;
        rnic_net_out(s, f->data, f->len);
        g_free(f);
    }
    if (f) {
        timer_mod(s->delay_timer, f->due);
    }
}

void rnic_net_roce_tx(RnicState *s, const uint8_t *frame, size_t len)
{
    g_autofree uint8_t *bad = NULL;

    if (len < RNIC_ETH_HLEN || len > RNIC_NET_MAX_FRAME) {
        trace_rnic_net_tx_roce_bad_len(len);
        return;
    }
    /*
     * The transport counted TX_PKTS/TX_BYTES: a lost frame was sent and
     * vanished "on the wire".
     */
    if (rnic_loss_drop(s)) {
        s->cnt[RNIC_CNT_TX_LOSS_INJECTED]++;
        trace_rnic_net_tx_roce_lost(len);
        return;
    }
    if (rnic_fault(s, s->prop.corrupt)) {
        bad = g_memdup2(frame, len);
        /* One bit the ICRC covers: in the BTH, its extensions or payload. */
        wirefault_corrupt(bad, len, wirefault_next(&s->fault_state));
        frame = bad;
        s->cnt[RNIC_CNT_TX_CORRUPT_INJECTED]++;
        trace_rnic_net_fault("corrupt", len);
    }
    if (rnic_fault(s, s->prop.ce_mark)) {
        if (!bad) {
            bad = g_memdup2(frame, len);
            frame = bad;
        }
        if (wirefault_mark_ce(bad, len)) {
            trace_rnic_net_fault("ce-mark", len);
        }
    }
    if (rnic_fault(s, s->prop.delay) && s->delay_len < RNIC_RX_MAX_FRAMES) {
        RnicRxFrame *f = rnic_frame_copy(frame, len);

        if (f) {
            f->due = qemu_clock_get_us(QEMU_CLOCK_VIRTUAL) + s->prop.delay_us;
            if (QSIMPLEQ_EMPTY(&s->delay_q)) {
                timer_mod(s->delay_timer, f->due);
            }
            QSIMPLEQ_INSERT_TAIL(&s->delay_q, f, next);
            s->delay_len++;
            s->cnt[RNIC_CNT_TX_DELAY_INJECTED]++;
            trace_rnic_net_fault("delay", len);
            return;
        }
    }
    rnic_net_out(s, frame, len);
    if (rnic_fault(s, s->prop.duplicate)) {
        s->cnt[RNIC_CNT_TX_DUP_INJECTED]++;
        trace_rnic_net_fault("duplicate", len);
        rnic_net_out(s, frame, len);
    }
}

void rnic_raw_tx(RnicState *s, const uint8_t *frame, size_t len)
{
    trace_rnic_net_tx_raw(len);
    qemu_send_packet(qemu_get_queue(s->nic), frame, len);
    /* Our own rules hear it too, through the receive queue. */
    if (rnic_flow_wants(s, frame, len) && rnic_net_rx_queue(s, frame, len)) {
        s->cnt[RNIC_CNT_LOOPBACK_PKTS]++;
    }
}

bool rnic_net_rx_pending(RnicState *s)
{
    return !QSIMPLEQ_EMPTY(&s->rx_q);
}

void rnic_net_rx_run(RnicState *s, int *budget)
{
    while (*budget > 0 && !QSIMPLEQ_EMPTY(&s->rx_q)) {
        RnicRxFrame *f = QSIMPLEQ_FIRST(&s->rx_q);

        QSIMPLEQ_REMOVE_HEAD(&s->rx_q, next);
        s->rx_len--;
        (*budget)--;
        if (f->eth) {
            rnic_net_rx_eth(s, f->data, f->len);
        /* Our GIDs may have changed while the frame waited. */
        } else if ((s->ib && rnic_net_is_ib(f->data, f->len)) ||
                   rnic_net_roce_for_us(s, f->data, f->len)) {
            trace_rnic_net_rx_deliver(f->len);
            rnic_tp_rx(s, f->data, f->len);
        } else if (rnic_flow_deliver(s, f->data, f->len)) {
            trace_rnic_net_rx_deliver(f->len);
        } else {
            s->cnt[RNIC_CNT_RX_DROPPED]++;
            trace_rnic_net_rx_drop_stale(f->len);
        }
        g_free(f);
    }
    rnic_tp_rx_end(s);
    if (s->rx_blocked && s->rx_len < RNIC_RX_MAX_FRAMES / 2) {
        s->rx_blocked = false;
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

/* ---- Ethernet TX ring ---- */

void rnic_net_tx_run(RnicState *s)
{
    bool sent = false;
    uint32_t budget;

    if (!(s->net_ctrl & RNIC_NET_CTRL_TX_EN) ||
        !rnic_net_ring_ok(s->txq_base, s->txq_log_size)) {
        return;
    }
    /* The doorbell kept PI within one ring of CI. */
    budget = 1u << s->txq_log_size;
    while (s->txq_ci != s->txq_pi && budget--) {
        uint64_t daddr = rnic_net_desc_addr(s->txq_base, s->txq_log_size,
                                            s->txq_ci);
        uint8_t status = RNIC_NET_DESC_DONE;
        struct rnic_net_desc d;
        uint16_t len;

        s->txq_ci++;
        sent = true;
        if (rnic_dma_read(s, daddr, &d, sizeof(d)) != MEMTX_OK) {
            RNIC_GUEST_ERR(rnic_err_dma(daddr, sizeof(d)), s,
                           "TX descriptor at 0x%" PRIx64 " not readable",
                           daddr);
            continue;
        }
        len = le16_to_cpu(d.len);
        if (len < RNIC_ETH_HLEN || len > RNIC_NET_MAX_FRAME) {
            RNIC_GUEST_ERR(rnic_err_net_tx_len(len), s,
                           "TX frame of %u bytes", len);
            status |= RNIC_NET_DESC_ERR;
        } else {
            g_autofree uint8_t *buf = g_malloc(len);

            if (rnic_dma_read(s, le64_to_cpu(d.addr), buf, len)
                != MEMTX_OK) {
                RNIC_GUEST_ERR(rnic_err_dma(le64_to_cpu(d.addr), len), s,
                               "TX buffer at 0x%" PRIx64 " not readable",
                               (uint64_t)le64_to_cpu(d.addr));
                status |= RNIC_NET_DESC_ERR;
            } else {
                trace_rnic_net_tx_eth(len, s->txq_ci - 1);
                qemu_send_packet(qemu_get_queue(s->nic), buf, len);
                s->cnt[RNIC_CNT_ETH_TX_PKTS]++;
            }
        }
        rnic_net_desc_complete(s, daddr, 0, status, false);
    }
    if (sent) {
        rnic_net_eth_irq(s);
    }
}

/* ---- link and reset ---- */

void rnic_net_init(RnicState *s)
{
    QSIMPLEQ_INIT(&s->rx_q);
    QSIMPLEQ_INIT(&s->delay_q);
    s->delay_timer = timer_new_us(QEMU_CLOCK_VIRTUAL, rnic_delay_timer_cb, s);
}

void rnic_net_fini(RnicState *s)
{
    timer_free(s->delay_timer);
    s->delay_timer = NULL;
}

void rnic_net_link_status_changed(NetClientState *nc)
{
    RnicState *s = qemu_get_nic_opaque(nc);
    bool up = !nc->link_down;

    if (up == s->link_up) {
        return;
    }
    s->link_up = up;
    if (up) {
        s->status |= RNIC_STATUS_LINK_UP;
    } else {
        s->status &= ~RNIC_STATUS_LINK_UP;
    }
    trace_rnic_net_link(up);
    if (s->ib) {
        /* The port's state, not the link's, makes an IB port's events. */
        rnic_ib_link_changed(s, up);
        return;
    }
    /*
     * A QMP set_link is no place for DMA: the event is the bottom half's,
     * which posts the state the link has when it runs.
     */
    if (s->eq && s->eq[0].valid) {
        s->link_events = MIN(s->link_events + 1, 2);
        rnic_schedule(s);
    }
}

void rnic_net_reset(RnicState *s)
{
    while (!QSIMPLEQ_EMPTY(&s->rx_q)) {
        RnicRxFrame *f = QSIMPLEQ_FIRST(&s->rx_q);

        QSIMPLEQ_REMOVE_HEAD(&s->rx_q, next);
        g_free(f);
    }
    s->rx_len = 0;
    if (s->rx_blocked && s->nic) {
        s->rx_blocked = false;
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
    g_free(s->held);
    s->held = NULL;
    while (!QSIMPLEQ_EMPTY(&s->delay_q)) {
        RnicRxFrame *f = QSIMPLEQ_FIRST(&s->delay_q);

        QSIMPLEQ_REMOVE_HEAD(&s->delay_q, next);
        g_free(f);
    }
    s->delay_len = 0;
    if (s->delay_timer) {
        timer_del(s->delay_timer);
    }
    rnic_net_fault_reseed(s);
}

void rnic_net_fault_reseed(RnicState *s)
{
    s->loss_state = s->prop.loss_seed ? s->prop.loss_seed :
                    RNIC_LOSS_SEED_DEFAULT;
    s->fault_state = s->prop.fault_seed ? s->prop.fault_seed :
                     RNIC_FAULT_SEED_DEFAULT;
}
