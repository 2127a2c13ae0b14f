/*
 * rnic: BAR0 registers and the command-queue engine
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Register accesses go through one table indexed by offset.  Misaligned,
 * wrong-width, unknown and read-only accesses are refused, each with its
 * own trace event, and never change state.  Counters are 64-bit and may
 * be read with one 8-byte access or LO then HI (HI latched by LO).
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "rnic.h"
#include "trace.h"

#define RNIC_REGF_RO    (1u << 0)   /* writes refused */
#define RNIC_REGF_W64   (1u << 1)   /* LO of a LO/HI pair: 8-byte ok */

#define RNIC_CNT_END    (RNIC_REG_CNT_BASE + 8 * RNIC_CNT_MAX)

typedef struct RnicReg {
    const char *name;
    uint32_t flags;
    uint32_t (*read)(RnicState *s);
    void (*write)(RnicState *s, uint32_t val);
} RnicReg;

/* ---- command queue ---- */

static uint32_t rnic_cmdq_size(RnicState *s)
{
    return 1u << s->cmdq_log_size;
}

static bool rnic_cmdq_valid(RnicState *s)
{
    uint64_t bytes;

    /* Checked before it is used as a shift count (found by generic-fuzz). */
    if (s->cmdq_log_size < 1 || s->cmdq_log_size > RNIC_CMDQ_MAX_LOG_SIZE) {
        RNIC_GUEST_ERR(rnic_err_cmdq_config("log_size", s->cmdq_log_size), s,
                       "CMDQ_LOG_SIZE %u out of range", s->cmdq_log_size);
        return false;
    }
    bytes = (uint64_t)RNIC_CMD_ENTRY_SIZE << s->cmdq_log_size;
    if ((s->cmdq_base & 0xfff) ||
        s->cmdq_base > UINT64_MAX - bytes) {
        RNIC_GUEST_ERR(rnic_err_cmdq_config("base", s->cmdq_base), s,
                       "CMDQ_BASE 0x%" PRIx64 " invalid", s->cmdq_base);
        return false;
    }
    return true;
}

/*
 * Runs commands until 'budget' work units are spent: one per command,
 * plus one per 512 page-list entries it loaded.  What is left waits for
 * the next bottom-half run.
 */
void rnic_cmdq_run(RnicState *s, int budget)
{
    s->cmd_pending = false;

    while ((s->status & RNIC_STATUS_READY) &&
           !(s->status & RNIC_STATUS_FATAL) && s->cmdq_ci != s->cmdq_pi &&
           !rnic_halted(s) && !rnic_inject_cmd_stalled(s)) {
        uint64_t addr = s->cmdq_base + (uint64_t)RNIC_CMD_ENTRY_SIZE *
                        (s->cmdq_ci & (rnic_cmdq_size(s) - 1));
        uint64_t resp_addr = addr + offsetof(struct rnic_cmd, resp);
        struct rnic_cmd cmd;
        struct rnic_cmd_resp resp = {};
        uint32_t out[6] = {};
        uint8_t st;
        int i;

        if (budget <= 0) {
            s->cmd_pending = true;
            break;
        }
        s->cmd_cost = 0;

        if (rnic_dma_read(s, addr, &cmd, sizeof(cmd)) != MEMTX_OK) {
            RNIC_GUEST_ERR(rnic_err_cmd_dma("fetch", addr), s,
                           "command at 0x%" PRIx64 " not readable", addr);
            memset(&cmd, 0, sizeof(cmd));
            st = RNIC_CMD_ERR_DMA;
        } else {
            trace_rnic_cmd(s->cmdq_ci, rnic_cmd_opc_str(cmd.hdr.opcode),
                           cmd.hdr.opcode, le32_to_cpu(cmd.hdr.cookie),
                           le16_to_cpu(cmd.hdr.uctx));
            st = rnic_cmd_exec(s, &cmd, out);
        }

        resp.status = st;
        resp.cookie = cmd.hdr.cookie;
        for (i = 0; i < 6; i++) {
            resp.out[i] = cpu_to_le32(out[i]);
        }
        /* Everything first, then 'done' alone: the driver polls it. */
        if (rnic_dma_write(s, resp_addr, &resp, sizeof(resp))
            != MEMTX_OK) {
            trace_rnic_err_cmd_dma("response", resp_addr);
        } else {
            resp.done = 1;
            rnic_dma_write(s,
                           resp_addr + offsetof(struct rnic_cmd_resp, done),
                           &resp.done, 1);
        }
        trace_rnic_cmd_done(s->cmdq_ci, rnic_cmd_opc_str(cmd.hdr.opcode), st,
                            out[0], out[1]);
        s->cmdq_ci++;
        budget -= 1 + (int)MIN(s->cmd_cost, (uint32_t)INT_MAX / 2);
    }
}

/* ---- register handlers ---- */

static uint32_t rd_magic(RnicState *s)
{
    return RNIC_MAGIC;
}

static uint32_t rd_version(RnicState *s)
{
    return RNIC_ABI_VERSION;
}

static uint32_t rd_ctrl(RnicState *s)
{
    return s->ctrl & RNIC_CTRL_ENABLE;
}

static void wr_ctrl(RnicState *s, uint32_t val)
{
    if (val & ~(RNIC_CTRL_ENABLE | RNIC_CTRL_RESET)) {
        trace_rnic_ub_ctrl_bits(val);
    }
    if (val & RNIC_CTRL_RESET) {
        trace_rnic_ctrl_reset();
        rnic_pm_request_reset(s, "CTRL.RESET");
        rnic_pm_run_reset(s);
        return;
    }
    if ((val & RNIC_CTRL_ENABLE) && !(s->ctrl & RNIC_CTRL_ENABLE)) {
        s->ctrl |= RNIC_CTRL_ENABLE;
        if (rnic_cmdq_valid(s)) {
            s->status |= RNIC_STATUS_READY;
            s->cmdq_pi = 0;
            s->cmdq_ci = 0;
        }
        trace_rnic_ctrl_enable(s->cmdq_base, s->cmdq_log_size,
                               !!(s->status & RNIC_STATUS_READY));
    } else if (!(val & RNIC_CTRL_ENABLE) && (s->ctrl & RNIC_CTRL_ENABLE)) {
        trace_rnic_ctrl_disable();
        rnic_pm_request_reset(s, "CTRL.ENABLE cleared");
        rnic_pm_run_reset(s);
    }
}

static uint32_t rd_status(RnicState *s)
{
    return s->status;
}

static uint32_t rd_db_pages(RnicState *s)
{
    return s->prop.max_uctx + 1;
}

static uint32_t rd_msix_vectors(RnicState *s)
{
    return s->prop.msix_vectors;
}

static uint32_t rd_fatal_code(RnicState *s)
{
    return s->fatal_code;
}

static bool cmdq_cfg_writable(RnicState *s, const char *reg)
{
    if (s->ctrl & RNIC_CTRL_ENABLE) {
        RNIC_GUEST_ERR(rnic_err_mmio_locked(reg), s,
                       "%s written while enabled", reg);
        return false;
    }
    return true;
}

static uint32_t rd_cmdq_base_lo(RnicState *s)
{
    return s->cmdq_base;
}

static void wr_cmdq_base_lo(RnicState *s, uint32_t val)
{
    if (cmdq_cfg_writable(s, "CMDQ_BASE_LO")) {
        s->cmdq_base = deposit64(s->cmdq_base, 0, 32, val);
    }
}

static uint32_t rd_cmdq_base_hi(RnicState *s)
{
    return s->cmdq_base >> 32;
}

static void wr_cmdq_base_hi(RnicState *s, uint32_t val)
{
    if (cmdq_cfg_writable(s, "CMDQ_BASE_HI")) {
        s->cmdq_base = deposit64(s->cmdq_base, 32, 32, val);
    }
}

static uint32_t rd_cmdq_log_size(RnicState *s)
{
    return s->cmdq_log_size;
}

static void wr_cmdq_log_size(RnicState *s, uint32_t val)
{
    if (cmdq_cfg_writable(s, "CMDQ_LOG_SIZE")) {
        s->cmdq_log_size = val;
    }
}

static uint32_t rd_cmdq_pi(RnicState *s)
{
    return s->cmdq_pi;
}

static void wr_cmdq_pi(RnicState *s, uint32_t val)
{
    if (!(s->status & RNIC_STATUS_READY)) {
        RNIC_GUEST_ERR(rnic_err_cmdq_not_ready(val), s,
                       "command doorbell 0x%x while not ready", val);
        return;
    }
    if (s->status & RNIC_STATUS_FATAL) {
        RNIC_GUEST_ERR(rnic_err_cmdq_fatal(val), s,
                       "command doorbell 0x%x after a fatal error", val);
        return;
    }
    if (val - s->cmdq_ci > rnic_cmdq_size(s)) {
        RNIC_GUEST_ERR(rnic_err_cmdq_overrun(val, s->cmdq_ci,
                                             rnic_cmdq_size(s)), s,
                       "CMDQ_PI 0x%x too far ahead of CI 0x%x", val,
                       s->cmdq_ci);
        s->status |= RNIC_STATUS_FATAL;
        s->fatal_code = RNIC_FATAL_CMDQ_OVERRUN;
        return;
    }
    trace_rnic_cmdq_doorbell(val, s->cmdq_ci);
    s->cmdq_pi = val;
    s->cmd_pending = true;
    rnic_schedule(s);
}

static uint32_t rd_cmdq_ci(RnicState *s)
{
    return s->cmdq_ci;
}

/* ---- Ethernet rings ---- */

static bool net_cfg_writable(RnicState *s, uint32_t en, const char *reg)
{
    if (s->net_ctrl & en) {
        RNIC_GUEST_ERR(rnic_err_mmio_locked(reg), s,
                       "%s written while the ring is enabled", reg);
        return false;
    }
    return true;
}

/* A ring's base or size changed: it starts again from index 0. */
#define NET_RING_REGS(q, en, NAME)                                          \
static uint32_t rd_##q##_base_lo(RnicState *s)                              \
{                                                                           \
    return s->q##_base;                                                     \
}                                                                           \
static void wr_##q##_base_lo(RnicState *s, uint32_t val)                    \
{                                                                           \
    if (net_cfg_writable(s, en, NAME "_BASE_LO")) {                         \
        s->q##_base = deposit64(s->q##_base, 0, 32, val);                   \
        s->q##_pi = s->q##_ci = 0;                                          \
    }                                                                       \
}                                                                           \
static uint32_t rd_##q##_base_hi(RnicState *s)                              \
{                                                                           \
    return s->q##_base >> 32;                                               \
}                                                                           \
static void wr_##q##_base_hi(RnicState *s, uint32_t val)                    \
{                                                                           \
    if (net_cfg_writable(s, en, NAME "_BASE_HI")) {                         \
        s->q##_base = deposit64(s->q##_base, 32, 32, val);                  \
        s->q##_pi = s->q##_ci = 0;                                          \
    }                                                                       \
}                                                                           \
static uint32_t rd_##q##_log_size(RnicState *s)                             \
{                                                                           \
    return s->q##_log_size;                                                 \
}                                                                           \
static void wr_##q##_log_size(RnicState *s, uint32_t val)                   \
{                                                                           \
    if (net_cfg_writable(s, en, NAME "_LOG_SIZE")) {                        \
        s->q##_log_size = val;                                              \
        s->q##_pi = s->q##_ci = 0;                                          \
    }                                                                       \
}                                                                           \
static uint32_t rd_##q##_pi(RnicState *s)                                   \
{                                                                           \
    return s->q##_pi;                                                       \
}                                                                           \
static uint32_t rd_##q##_ci(RnicState *s)                                   \
{                                                                           \
    return s->q##_ci;                                                       \
}

NET_RING_REGS(txq, RNIC_NET_CTRL_TX_EN, "TXQ")
NET_RING_REGS(rxq, RNIC_NET_CTRL_RX_EN, "RXQ")

static bool net_ring_ok(RnicState *s, const char *q, uint64_t base,
                        uint32_t log_size)
{
    if (log_size < 1 || log_size > RNIC_NET_MAX_LOG_SIZE ||
        (base & (sizeof(struct rnic_net_desc) - 1)) ||
        base > UINT64_MAX - (sizeof(struct rnic_net_desc) << log_size)) {
        RNIC_GUEST_ERR(rnic_err_net_ring(q, base, log_size), s,
                       "%s ring 0x%" PRIx64 "/%u invalid", q, base, log_size);
        return false;
    }
    return true;
}

static void wr_txq_pi(RnicState *s, uint32_t val)
{
    if (!net_ring_ok(s, "TXQ", s->txq_base, s->txq_log_size)) {
        return;
    }
    if (val - s->txq_ci > (1u << s->txq_log_size)) {
        RNIC_GUEST_ERR(rnic_err_net_pi("TXQ", val, s->txq_ci), s,
                       "TXQ_PI 0x%x too far ahead of CI 0x%x", val, s->txq_ci);
        return;
    }
    s->txq_pi = val;
    rnic_schedule(s);
}

static void wr_rxq_pi(RnicState *s, uint32_t val)
{
    if (!net_ring_ok(s, "RXQ", s->rxq_base, s->rxq_log_size)) {
        return;
    }
    if (val - s->rxq_ci > (1u << s->rxq_log_size)) {
        RNIC_GUEST_ERR(rnic_err_net_pi("RXQ", val, s->rxq_ci), s,
                       "RXQ_PI 0x%x too far ahead of CI 0x%x", val, s->rxq_ci);
        return;
    }
    s->rxq_pi = val;
}

static uint32_t rd_net_ctrl(RnicState *s)
{
    return s->net_ctrl;
}

static void wr_net_ctrl(RnicState *s, uint32_t val)
{
    const uint32_t known = RNIC_NET_CTRL_RX_EN | RNIC_NET_CTRL_TX_EN |
                           RNIC_NET_CTRL_PROMISC | RNIC_NET_CTRL_ALLMULTI;

    if (val & ~known) {
        trace_rnic_ub_net_ctrl_bits(val);
    }
    /* An InfiniBand port has no Ethernet function: IP is IPoIB's. */
    if (s->ib && (val & (RNIC_NET_CTRL_RX_EN | RNIC_NET_CTRL_TX_EN))) {
        RNIC_GUEST_ERR(rnic_err_net_ib(val), s,
                       "NET_CTRL 0x%x: no Ethernet function on an "
                       "InfiniBand port", val);
        val = 0;
    }
    s->net_ctrl = val & known;
    if (s->net_ctrl & RNIC_NET_CTRL_TX_EN) {
        rnic_schedule(s);
    }
}

static uint32_t rd_net_irq_mask(RnicState *s)
{
    return s->net_irq_mask;
}

static void wr_net_irq_mask(RnicState *s, uint32_t val)
{
    s->net_irq_mask = val & 1;
}

static uint32_t rd_net_vector(RnicState *s)
{
    return s->net_vector;
}

static void wr_net_vector(RnicState *s, uint32_t val)
{
    if (val >= s->prop.msix_vectors) {
        RNIC_GUEST_ERR(rnic_err_net_vector(val, s->prop.msix_vectors), s,
                       "NET_VECTOR %u beyond %u vectors", val,
                       s->prop.msix_vectors);
        return;
    }
    s->net_vector = val;
}

static uint32_t rd_mac_lo(RnicState *s)
{
    return ldl_le_p(s->conf.macaddr.a);
}

static uint32_t rd_mac_hi(RnicState *s)
{
    return lduw_le_p(s->conf.macaddr.a + 4);
}

#define REG(off, n, fl, r, w) [(off) / 4] = { n, fl, r, w }

static const RnicReg rnic_regs[RNIC_REG_CNT_BASE / 4] = {
    REG(RNIC_REG_MAGIC, "MAGIC", RNIC_REGF_RO, rd_magic, NULL),
    REG(RNIC_REG_VERSION, "VERSION", RNIC_REGF_RO, rd_version, NULL),
    REG(RNIC_REG_CTRL, "CTRL", 0, rd_ctrl, wr_ctrl),
    REG(RNIC_REG_STATUS, "STATUS", RNIC_REGF_RO, rd_status, NULL),
    REG(RNIC_REG_DB_PAGES, "DB_PAGES", RNIC_REGF_RO, rd_db_pages, NULL),
    REG(RNIC_REG_MSIX_VECTORS, "MSIX_VECTORS", RNIC_REGF_RO,
        rd_msix_vectors, NULL),
    REG(RNIC_REG_FATAL_CODE, "FATAL_CODE", RNIC_REGF_RO, rd_fatal_code, NULL),
    REG(RNIC_REG_CMDQ_BASE_LO, "CMDQ_BASE_LO", RNIC_REGF_W64,
        rd_cmdq_base_lo, wr_cmdq_base_lo),
    REG(RNIC_REG_CMDQ_BASE_HI, "CMDQ_BASE_HI", 0, rd_cmdq_base_hi,
        wr_cmdq_base_hi),
    REG(RNIC_REG_CMDQ_LOG_SIZE, "CMDQ_LOG_SIZE", 0, rd_cmdq_log_size,
        wr_cmdq_log_size),
    REG(RNIC_REG_CMDQ_PI, "CMDQ_PI", 0, rd_cmdq_pi, wr_cmdq_pi),
    REG(RNIC_REG_CMDQ_CI, "CMDQ_CI", RNIC_REGF_RO, rd_cmdq_ci, NULL),
    REG(RNIC_REG_TXQ_BASE_LO, "TXQ_BASE_LO", RNIC_REGF_W64, rd_txq_base_lo,
        wr_txq_base_lo),
    REG(RNIC_REG_TXQ_BASE_HI, "TXQ_BASE_HI", 0, rd_txq_base_hi,
        wr_txq_base_hi),
    REG(RNIC_REG_TXQ_LOG_SIZE, "TXQ_LOG_SIZE", 0, rd_txq_log_size,
        wr_txq_log_size),
    REG(RNIC_REG_TXQ_PI, "TXQ_PI", 0, rd_txq_pi, wr_txq_pi),
    REG(RNIC_REG_TXQ_CI, "TXQ_CI", RNIC_REGF_RO, rd_txq_ci, NULL),
    REG(RNIC_REG_RXQ_BASE_LO, "RXQ_BASE_LO", RNIC_REGF_W64, rd_rxq_base_lo,
        wr_rxq_base_lo),
    REG(RNIC_REG_RXQ_BASE_HI, "RXQ_BASE_HI", 0, rd_rxq_base_hi,
        wr_rxq_base_hi),
    REG(RNIC_REG_RXQ_LOG_SIZE, "RXQ_LOG_SIZE", 0, rd_rxq_log_size,
        wr_rxq_log_size),
    REG(RNIC_REG_RXQ_PI, "RXQ_PI", 0, rd_rxq_pi, wr_rxq_pi),
    REG(RNIC_REG_RXQ_CI, "RXQ_CI", RNIC_REGF_RO, rd_rxq_ci, NULL),
    REG(RNIC_REG_NET_CTRL, "NET_CTRL", 0, rd_net_ctrl, wr_net_ctrl),
    REG(RNIC_REG_NET_IRQ_MASK, "NET_IRQ_MASK", 0, rd_net_irq_mask,
        wr_net_irq_mask),
    REG(RNIC_REG_NET_VECTOR, "NET_VECTOR", 0, rd_net_vector, wr_net_vector),
    REG(RNIC_REG_MAC_LO, "MAC_LO", RNIC_REGF_RO, rd_mac_lo, NULL),
    REG(RNIC_REG_MAC_HI, "MAC_HI", RNIC_REGF_RO, rd_mac_hi, NULL),
};

#undef REG

static const RnicReg *rnic_reg_lookup(hwaddr addr)
{
    if (addr >= RNIC_REG_CNT_BASE || (addr & 3) ||
        !rnic_regs[addr / 4].name) {
        return NULL;
    }
    return &rnic_regs[addr / 4];
}

/* ---- counters ---- */

static uint64_t rnic_cnt_read(RnicState *s, hwaddr addr, unsigned size)
{
    unsigned idx = (addr - RNIC_REG_CNT_BASE) / 8;
    bool hi = (addr - RNIC_REG_CNT_BASE) & 4;
    uint64_t v = s->cnt[idx];

    if (size == 8) {
        return v;
    }
    if (hi) {
        return s->cnt_hi_latch;
    }
    s->cnt_hi_latch = v >> 32;
    return (uint32_t)v;
}

/* ---- MMIO entry points ---- */

static bool rnic_mmio_shape_ok(RnicState *s, hwaddr addr, unsigned size,
                               bool write)
{
    if (addr & (size - 1)) {
        RNIC_GUEST_ERR(rnic_ub_mmio_misaligned(write, addr, size), s,
                       "misaligned %u-byte %s at 0x%" HWADDR_PRIx, size,
                       write ? "write" : "read", addr);
        return false;
    }
    return true;
}

static uint64_t rnic_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    RnicState *s = opaque;
    const RnicReg *reg;
    uint64_t val;

    /* The guard keeps BAR handlers out of the bottom half: reset here. */
    rnic_pm_run_reset(s);
    if (!rnic_mmio_shape_ok(s, addr, size, false)) {
        return 0;
    }
    if (addr >= RNIC_REG_CNT_BASE && addr < RNIC_CNT_END) {
        if (size != 4 && size != 8) {
            RNIC_GUEST_ERR(rnic_ub_mmio_width(false, addr, size), s,
                           "%u-byte counter read at 0x%" HWADDR_PRIx, size,
                           addr);
            return 0;
        }
        val = rnic_cnt_read(s, addr, size);
        trace_rnic_mmio_read("COUNTER", addr, size, val);
        return val;
    }
    reg = rnic_reg_lookup(addr);
    if (!reg) {
        RNIC_GUEST_ERR(rnic_ub_mmio_unknown(false, addr, size), s,
                       "read of unknown register 0x%" HWADDR_PRIx, addr);
        return 0;
    }
    if (size != 4 && !(size == 8 && (reg->flags & RNIC_REGF_W64))) {
        RNIC_GUEST_ERR(rnic_ub_mmio_width(false, addr, size), s,
                       "%u-byte read of %s", size, reg->name);
        return 0;
    }
    val = reg->read(s);
    if (size == 8) {
        val |= (uint64_t)rnic_regs[addr / 4 + 1].read(s) << 32;
    }
    trace_rnic_mmio_read(reg->name, addr, size, val);
    return val;
}

static void rnic_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    RnicState *s = opaque;
    const RnicReg *reg;

    rnic_pm_run_reset(s);
    if (!rnic_mmio_shape_ok(s, addr, size, true)) {
        return;
    }
    if (addr >= RNIC_REG_CNT_BASE && addr < RNIC_CNT_END) {
        RNIC_GUEST_ERR(rnic_err_mmio_ro("COUNTER", addr, val), s,
                       "write to counter 0x%" HWADDR_PRIx, addr);
        return;
    }
    reg = rnic_reg_lookup(addr);
    if (!reg) {
        RNIC_GUEST_ERR(rnic_ub_mmio_unknown(true, addr, size), s,
                       "write of unknown register 0x%" HWADDR_PRIx, addr);
        return;
    }
    if (size != 4 && !(size == 8 && (reg->flags & RNIC_REGF_W64))) {
        RNIC_GUEST_ERR(rnic_ub_mmio_width(true, addr, size), s,
                       "%u-byte write of %s", size, reg->name);
        return;
    }
    if (reg->flags & RNIC_REGF_RO) {
        RNIC_GUEST_ERR(rnic_err_mmio_ro(reg->name, addr, val), s,
                       "write to read-only %s", reg->name);
        return;
    }
    trace_rnic_mmio_write(reg->name, addr, size, val);
    reg->write(s, (uint32_t)val);
    if (size == 8) {
        rnic_regs[addr / 4 + 1].write(s, val >> 32);
    }
}

const MemoryRegionOps rnic_regs_ops = {
    .read = rnic_regs_read,
    .write = rnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* Let every shape through so that refusals are traced, not dropped. */
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

void rnic_regs_reset(RnicState *s)
{
    s->ctrl = 0;
    s->status &= RNIC_STATUS_LINK_UP;
    s->fatal_code = 0;
    s->cmdq_base = 0;
    s->cmdq_log_size = 0;
    s->cmdq_pi = 0;
    s->cmdq_ci = 0;
    s->txq_base = 0;
    s->txq_log_size = 0;
    s->txq_pi = 0;
    s->txq_ci = 0;
    s->rxq_base = 0;
    s->rxq_log_size = 0;
    s->rxq_pi = 0;
    s->rxq_ci = 0;
    s->net_ctrl = 0;
    s->net_irq_mask = 0;
    s->net_vector = 0;
    s->cnt_hi_latch = 0;
    s->cmd_pending = false;
    memset(s->cnt, 0, sizeof(s->cnt));
}
