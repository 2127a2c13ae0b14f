/*
 * rnic: command handlers, object tables and the QP state machine
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each handler receives a private copy of the command entry.  Checks run
 * in the order docs/design.md lists (opcode, reserved fields, context,
 * handles and ownership, sizes, page lists, state), each failure with its
 * own rnic_err_cmd_* trace event and an RNIC_CMD_ERR_* status, and
 * nothing is allocated or changed before every check has passed.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "rnic.h"
#include "rnic-wire.h"
#include "rnic-cmd.h"
#include "trace.h"

#define RNIC_MAX_EQE        (1u << RNIC_EQ_MAX_LOG_SIZE)
#define RNIC_PAGE_SIZE_CAP  0x7ffff000ULL   /* page_shift 12..30 */

/* ---- guard helpers: one trace event per kind of refusal ---- */

uint8_t rnic_cmd_err_rsvd(RnicCmdCtx *c, const char *what)
{
    RNIC_GUEST_ERR(rnic_err_cmd_rsvd(c->op, what), c->s,
                   "%s: reserved field %s not zero", c->op, what);
    return RNIC_CMD_ERR_PARAM;
}

uint8_t rnic_cmd_err_param(RnicCmdCtx *c, const char *what, uint64_t val,
                         uint64_t cap)
{
    RNIC_GUEST_ERR(rnic_err_cmd_param(c->op, what, val, cap), c->s,
                   "%s: %s 0x%" PRIx64 " invalid (limit 0x%" PRIx64 ")", c->op,
                   what, val, cap);
    return RNIC_CMD_ERR_PARAM;
}

uint8_t rnic_cmd_err_handle(RnicCmdCtx *c, const char *kind, uint32_t h)
{
    RNIC_GUEST_ERR(rnic_err_cmd_handle(c->op, kind, h), c->s,
                   "%s: no %s 0x%x", c->op, kind, h);
    return RNIC_CMD_ERR_HANDLE;
}

uint8_t rnic_cmd_err_access(RnicCmdCtx *c, const char *kind, uint32_t h,
                          uint16_t owner)
{
    RNIC_GUEST_ERR(rnic_err_cmd_access(c->op, kind, h, owner, c->uctx), c->s,
                   "%s: %s 0x%x belongs to context %u, not %u", c->op, kind, h,
                   owner, c->uctx);
    return RNIC_CMD_ERR_ACCESS;
}

uint8_t rnic_cmd_err_state(RnicCmdCtx *c, const char *why, uint32_t h)
{
    RNIC_GUEST_ERR(rnic_err_cmd_state(c->op, why, h), c->s,
                   "%s: %s (0x%x)", c->op, why, h);
    return RNIC_CMD_ERR_STATE;
}

/* Limits and references are not guest errors: traced only. */
uint8_t rnic_cmd_err_resource(RnicCmdCtx *c, const char *kind)
{
    trace_rnic_err_cmd_resource(c->op, kind);
    return RNIC_CMD_ERR_RESOURCE;
}

uint8_t rnic_cmd_err_busy(RnicCmdCtx *c, const char *kind, uint32_t h,
                        uint32_t refcnt)
{
    trace_rnic_err_cmd_busy(c->op, kind, h, refcnt);
    return RNIC_CMD_ERR_BUSY;
}

uint8_t rnic_cmd_err_dma(RnicCmdCtx *c, uint64_t addr)
{
    RNIC_GUEST_ERR(rnic_err_cmd_dma(c->op, addr), c->s,
                   "%s: DMA to 0x%" PRIx64 " failed", c->op, addr);
    return RNIC_CMD_ERR_DMA;
}

bool rnic_cmd_rsvd_zero(const void *p, size_t len)
{
    return buffer_is_zero(p, len);
}

/* Kernel-only commands (EQs, GIDs, contexts). */
uint8_t rnic_cmd_need_kernel(RnicCmdCtx *c)
{
    if (c->uctx) {
        return rnic_cmd_err_access(c, "kernel command", c->cmd->hdr.opcode,
                                   c->uctx);
    }
    return RNIC_CMD_OK;
}

/* Index in [1, max], existing, and visible to the command's context. */
uint8_t rnic_cmd_check_obj(RnicCmdCtx *c, const char *kind, uint32_t h,
                         uint32_t max, bool valid, uint16_t owner)
{
    /*
     * Callers say a handle 0 is not valid, as it names nothing, but for
     * QP0 of an IB port.
     */
    if (h > max || !valid) {
        return rnic_cmd_err_handle(c, kind, h);
    }
    if (c->uctx && owner != c->uctx) {
        return rnic_cmd_err_access(c, kind, h, owner);
    }
    return RNIC_CMD_OK;
}

uint8_t rnic_cmd_get_pd(RnicCmdCtx *c, uint32_t pdn)
{
    RnicState *s = c->s;
    bool ok = pdn && pdn <= s->prop.max_pd;

    return rnic_cmd_check_obj(c, "PD", pdn, s->prop.max_pd,
                              ok && s->pd[pdn].valid, ok ? s->pd[pdn].uctx : 0);
}

uint8_t rnic_cmd_get_cq(RnicCmdCtx *c, uint32_t cqn)
{
    RnicState *s = c->s;
    bool ok = cqn && cqn <= s->prop.max_cq;

    return rnic_cmd_check_obj(c, "CQ", cqn, s->prop.max_cq,
                              ok && s->cq[cqn].valid, ok ? s->cq[cqn].uctx : 0);
}

uint8_t rnic_cmd_get_srq(RnicCmdCtx *c, uint32_t srqn)
{
    RnicState *s = c->s;
    bool ok = srqn && srqn <= s->prop.max_srq;

    return rnic_cmd_check_obj(c, "SRQ", srqn, s->prop.max_srq,
                              ok && s->srq[srqn].valid,
                              ok ? s->srq[srqn].uctx : 0);
}

uint8_t rnic_cmd_get_qp(RnicCmdCtx *c, uint32_t qpn, RnicQP **out)
{
    RnicQP *qp = rnic_qp_get(c->s, qpn);

    *out = qp;
    return rnic_cmd_check_obj(c, "QP", qpn, c->s->prop.max_qp + 1, qp != NULL,
                              qp ? qp->uctx : 0);
}

/* Loads a ring of 4 KiB pages that must cover exactly the ring. */
uint8_t rnic_cmd_load_ring(RnicCmdCtx *c, const struct rnic_pbl *desc,
                         uint32_t log_size, uint32_t stride,
                         uint32_t first_page, RnicRing *ring)
{
    uint32_t need = first_page +
        DIV_ROUND_UP((uint64_t)stride << log_size, RNIC_RING_PAGE);
    uint8_t st;

    if (desc->page_shift != 12) {
        return rnic_cmd_err_param(c, "ring page_shift", desc->page_shift, 12);
    }
    if (le32_to_cpu(desc->npages) != need) {
        return rnic_cmd_err_param(c, "ring npages", le32_to_cpu(desc->npages),
                                  need);
    }
    st = rnic_pbl_load(c->s, desc, need, &ring->pbl);
    if (st != RNIC_CMD_OK) {
        trace_rnic_err_cmd_pbl(c->op, st);
        return st;
    }
    ring->log_size = log_size;
    ring->stride = stride;
    ring->first_page = first_page;
    return RNIC_CMD_OK;
}

/* ---- lookups used by the rest of the device ---- */

RnicQP *rnic_qp_get(RnicState *s, uint32_t qpn)
{
    /* QPN 0 is the SMI QP's, which only an IB port creates. */
    if (!s->qp || qpn > s->prop.max_qp + 1) {
        return NULL;
    }
    return s->qp[qpn];
}

RnicCQ *rnic_cq_get(RnicState *s, uint32_t cqn)
{
    if (!s->cq || cqn == 0 || cqn > s->prop.max_cq || !s->cq[cqn].valid) {
        return NULL;
    }
    return &s->cq[cqn];
}

RnicSRQ *rnic_srq_get(RnicState *s, uint32_t srqn)
{
    if (!s->srq || srqn == 0 || srqn > s->prop.max_srq ||
        !s->srq[srqn].valid) {
        return NULL;
    }
    return &s->srq[srqn];
}

int rnic_gid_find(RnicState *s, const uint8_t gid[16], bool roce_v1)
{
    uint32_t i;

    for (i = 0; s->gid && i < s->prop.max_gid; i++) {
        if (s->gid[i].valid && !memcmp(s->gid[i].gid, gid, 16) &&
            (s->gid[i].type == RNIC_GID_ROCE_V1) == roce_v1) {
            return i;
        }
    }
    return -1;
}

/* ---- device, port, GIDs ---- */

uint8_t rnic_cmd_write_out(RnicCmdCtx *c, const void *buf, uint32_t size)
{
    const struct rnic_cmd_query *q = &c->cmd->u.query;
    uint64_t addr = le64_to_cpu(q->out_addr);

    if (le32_to_cpu(q->out_len) < size) {
        return rnic_cmd_err_param(c, "out_len", le32_to_cpu(q->out_len), size);
    }
    if (rnic_dma_write(c->s, addr, buf, size) != MEMTX_OK) {
        return rnic_cmd_err_dma(c, addr);
    }
    return RNIC_CMD_OK;
}

uint8_t rnic_cmd_handle_arg(RnicCmdCtx *c, uint32_t *h)
{
    *h = le32_to_cpu(c->cmd->u.handle.handle);
    if (c->cmd->u.handle.rsvd_4) {
        return rnic_cmd_err_rsvd(c, "rsvd_4");
    }
    return RNIC_CMD_OK;
}

/* Slot 0 is never used, so a zero handle is always invalid. */
uint8_t rnic_cmd_free_slot(RnicCmdCtx *c, const char *kind,
                           const bool *valid0, size_t stride, uint32_t max,
                           uint32_t *slot)
{
    const char *base = (const char *)valid0;
    uint32_t i;

    for (i = 1; i <= max; i++) {
        if (!*(const bool *)(base + (size_t)i * stride)) {
            *slot = i;
            return RNIC_CMD_OK;
        }
    }
    return rnic_cmd_err_resource(c, kind);
}

/* Counts never wrap: a loaded or reset table may already hold zero. */
void rnic_cmd_refput(uint32_t *refcnt)
{
    if (*refcnt) {
        (*refcnt)--;
    }
}

static uint8_t cmd_query_device(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    struct rnic_device_attr a = {};
    uint32_t vec = MAX(1, MIN(s->prop.msix_vectors, s->prop.max_eq) - 1);

    a.abi_version = cpu_to_le32(RNIC_ABI_VERSION);
    a.vendor_id = cpu_to_le32(s->prop.vendor_id);
    a.vendor_part_id = cpu_to_le32(s->prop.device_id);
    a.hw_ver = cpu_to_le32(RNIC_PCI_REVISION);
    a.fw_ver = cpu_to_le64((uint64_t)RNIC_ABI_MAJOR << 32 | RNIC_ABI_MINOR);
    a.node_guid = cpu_to_le64(s->node_guid);
    a.max_mr_size = cpu_to_le64(s->prop.max_mr_size);
    a.page_size_cap = cpu_to_le64(RNIC_PAGE_SIZE_CAP);
    a.max_qp = cpu_to_le32(s->prop.max_qp);
    a.max_qp_wr = cpu_to_le32(s->prop.max_qp_wr);
    a.max_sge = cpu_to_le32(s->prop.max_sge);
    a.max_sge_rd = cpu_to_le32(s->prop.max_sge);
    a.max_cq = cpu_to_le32(s->prop.max_cq);
    a.max_cqe = cpu_to_le32(s->prop.max_cqe);
    a.max_mr = cpu_to_le32(s->prop.max_mr);
    a.max_pd = cpu_to_le32(s->prop.max_pd);
    a.max_qp_rd_atom = cpu_to_le32(s->prop.max_rd_atom);
    a.max_qp_init_rd_atom = cpu_to_le32(s->prop.max_rd_atom);
    a.max_srq = cpu_to_le32(s->prop.max_srq);
    a.max_srq_wr = cpu_to_le32(s->prop.max_qp_wr);
    a.max_srq_sge = cpu_to_le32(MIN(s->prop.max_sge, RNIC_RQ_MAX_SGE));
    a.max_mw = cpu_to_le32(s->prop.max_mw);
    a.max_mcast_grp = cpu_to_le32(s->prop.max_mcast_grp);
    a.max_mcast_qp_attach = cpu_to_le32(s->prop.max_mcast_qp_attach);
    a.max_flow = cpu_to_le32(s->prop.max_flow);
    a.max_fast_reg_page_list_len = cpu_to_le32(s->prop.max_mr_pages);
    a.max_pkeys = cpu_to_le32(1);
    a.max_inline = cpu_to_le32(s->prop.max_inline);
    a.max_uctx = cpu_to_le32(s->prop.max_uctx);
    a.max_eq = cpu_to_le32(s->prop.max_eq);
    a.max_eqe = cpu_to_le32(RNIC_MAX_EQE);
    a.max_gid = cpu_to_le32(s->prop.max_gid);
    a.num_comp_vectors = cpu_to_le32(vec);
    a.cap_flags = cpu_to_le32(RNIC_DEV_CAP_RC | RNIC_DEV_CAP_UC |
                              RNIC_DEV_CAP_UD | RNIC_DEV_CAP_SRQ |
                              RNIC_DEV_CAP_ATOMIC | RNIC_DEV_CAP_FAST_REG |
                              RNIC_DEV_CAP_INLINE | RNIC_DEV_CAP_SRQ_RESIZE |
                              RNIC_DEV_CAP_FLUSH | RNIC_DEV_CAP_ATOMIC_WRITE |
                              RNIC_DEV_CAP_CLOCK |
                              (s->prop.sq_dbrec ? RNIC_DEV_CAP_SQ_DBREC : 0) |
                              (s->prop.max_mw ? RNIC_DEV_CAP_MW : 0) |
                              (s->prop.max_flow && !s->ib ?
                               RNIC_DEV_CAP_RAW_PACKET : 0));
    a.max_mr_pages = cpu_to_le32(s->prop.max_mr_pages);
    a.max_host_mem_mb = cpu_to_le32(MIN(s->prop.max_host_mem / MiB,
                                        UINT32_MAX));
    return rnic_cmd_write_out(c, &a, sizeof(a));
}

static uint8_t cmd_query_port(RnicCmdCtx *c)
{
    uint32_t port = le32_to_cpu(c->cmd->u.query.handle);
    uint32_t len = le32_to_cpu(c->cmd->u.query.out_len);
    struct rnic_port_attr a = {};

    if (port != 1) {
        return rnic_cmd_err_handle(c, "port", port);
    }
    a.state = c->s->link_up ? RNIC_PORT_ACTIVE : RNIC_PORT_DOWN;
    a.max_mtu = RNIC_MTU_4096;
    /* What fits a standard 1500-byte Ethernet MTU, as rxe reports. */
    a.active_mtu = RNIC_MTU_1024;
    a.gid_tbl_len = cpu_to_le32(c->s->prop.max_gid);
    a.max_msg_sz = cpu_to_le32(0x80000000u);
    a.link_speed_mbps = cpu_to_le32(10000);
    if (c->s->ib) {
        rnic_ib_port_attr(c->s, &a);
    }
    /* A driver that knows the 32-byte answer gets just that. */
    return rnic_cmd_write_out(c, &a, MAX(MIN(len, sizeof(a)),
                                         RNIC_PORT_ATTR_MIN_SIZE));
}

/* SET_GID and DEL_GID share the layout and its reserved fields. */
static bool rnic_cmd_gid_rsvd_zero(const struct rnic_cmd_gid *g)
{
    return rnic_cmd_rsvd_zero(g->rsvd_5, sizeof(g->rsvd_5)) &&
           rnic_cmd_rsvd_zero(g->rsvd_30, sizeof(g->rsvd_30)) && !g->rsvd_34;
}

static uint8_t cmd_set_gid(RnicCmdCtx *c)
{
    const struct rnic_cmd_gid *g = &c->cmd->u.gid;
    uint32_t idx = le32_to_cpu(g->index);
    uint16_t vlan = le16_to_cpu(g->vlan_id);
    RnicGid *e;
    uint8_t st;

    if (!rnic_cmd_gid_rsvd_zero(g)) {
        return rnic_cmd_err_rsvd(c, "gid");
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (idx >= c->s->prop.max_gid) {
        return rnic_cmd_err_param(c, "gid index", idx, c->s->prop.max_gid - 1);
    }
    if (g->type != RNIC_GID_ROCE_V2_IPV4 && g->type != RNIC_GID_ROCE_V2_IPV6 &&
        g->type != RNIC_GID_ROCE_V1) {
        return rnic_cmd_err_param(c, "gid type", g->type, RNIC_GID_ROCE_V1);
    }
    if (g->type == RNIC_GID_ROCE_V2_IPV4 && !rnic_ip_is_v4_mapped(g->gid)) {
        return rnic_cmd_err_param(c, "IPv4 gid not v4-mapped", idx, 0);
    }
    if (g->mac[0] & 1) {
        return rnic_cmd_err_param(c, "multicast source MAC", g->mac[0], 0);
    }
    if (vlan != 0xffff && vlan >= 4095) {
        return rnic_cmd_err_param(c, "vlan_id", vlan, 4094);
    }
    e = &c->s->gid[idx];
    e->valid = true;
    e->type = g->type;
    memcpy(e->gid, g->gid, sizeof(e->gid));
    memcpy(e->mac, g->mac, sizeof(e->mac));
    e->vlan_id = vlan;
    trace_rnic_gid_set(idx, g->type, vlan);
    return RNIC_CMD_OK;
}

static uint8_t cmd_del_gid(RnicCmdCtx *c)
{
    const struct rnic_cmd_gid *g = &c->cmd->u.gid;
    uint32_t idx = le32_to_cpu(g->index);
    uint8_t st;

    if (!rnic_cmd_gid_rsvd_zero(g)) {
        return rnic_cmd_err_rsvd(c, "gid");
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (idx >= c->s->prop.max_gid || !c->s->gid[idx].valid) {
        return rnic_cmd_err_handle(c, "GID", idx);
    }
    memset(&c->s->gid[idx], 0, sizeof(RnicGid));
    trace_rnic_gid_del(idx);
    return RNIC_CMD_OK;
}

/* ---- user contexts ---- */

static uint8_t cmd_alloc_uctx(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint8_t st = rnic_cmd_need_kernel(c);
    uint32_t i;

    if (st) {
        return st;
    }
    st = RNIC_CMD_FREE_SLOT(c, "uctx", s->uctx, s->prop.max_uctx, &i);
    if (st) {
        return st;
    }
    s->uctx[i].valid = true;
    c->out[RNIC_OUT_HANDLE] = i;
    return RNIC_CMD_OK;
}

static bool uctx_in_use(RnicState *s, uint16_t u)
{
    uint32_t i;

    for (i = 1; i <= s->prop.max_pd; i++) {
        if (s->pd[i].valid && s->pd[i].uctx == u) {
            return true;
        }
    }
    for (i = 1; i <= s->prop.max_cq; i++) {
        if (s->cq[i].valid && s->cq[i].uctx == u) {
            return true;
        }
    }
    for (i = 1; i <= s->prop.max_mr; i++) {
        if (s->mr[i].valid && s->mr[i].uctx == u) {
            return true;
        }
    }
    for (i = 1; i <= s->prop.max_srq; i++) {
        if (s->srq[i].valid && s->srq[i].uctx == u) {
            return true;
        }
    }
    for (i = 1; i <= s->prop.max_mw; i++) {
        if (s->mw[i].valid && s->mw[i].uctx == u) {
            return true;
        }
    }
    for (i = 0; i <= s->prop.max_qp + 1; i++) {
        if (s->qp[i] && s->qp[i]->uctx == u) {
            return true;
        }
    }
    return false;
}

static uint8_t cmd_dealloc_uctx(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t h;
    uint8_t st = rnic_cmd_handle_arg(c, &h);

    if (st) {
        return st;
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (h == 0 || h > s->prop.max_uctx || !s->uctx[h].valid) {
        return rnic_cmd_err_handle(c, "uctx", h);
    }
    if (uctx_in_use(s, h)) {
        return rnic_cmd_err_busy(c, "uctx", h, 1);
    }
    s->uctx[h].valid = false;
    return RNIC_CMD_OK;
}

/* ---- event queues ---- */

static uint8_t cmd_create_eq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_eq *e = &c->cmd->u.eq;
    uint32_t eqn = le32_to_cpu(e->eqn);
    uint16_t vector = le16_to_cpu(e->vector);
    RnicRing ring = {};
    RnicEQ *eq;
    uint8_t st;

    if (e->rsvd_5) {
        return rnic_cmd_err_rsvd(c, "rsvd_5");
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (eqn >= s->prop.max_eq) {
        return rnic_cmd_err_param(c, "eqn", eqn, s->prop.max_eq - 1);
    }
    if (e->log_size < 1 || e->log_size > RNIC_EQ_MAX_LOG_SIZE) {
        return rnic_cmd_err_param(c, "EQ log_size", e->log_size,
                                  RNIC_EQ_MAX_LOG_SIZE);
    }
    if (vector >= s->prop.msix_vectors) {
        return rnic_cmd_err_param(c, "EQ vector", vector,
                                  s->prop.msix_vectors - 1);
    }
    if (s->eq[eqn].valid) {
        return rnic_cmd_err_state(c, "EQ exists", eqn);
    }
    st = rnic_cmd_load_ring(c, &e->ring, e->log_size, RNIC_EQE_SIZE, 0, &ring);
    if (st) {
        return st;
    }
    eq = &s->eq[eqn];
    memset(eq, 0, sizeof(*eq));
    eq->valid = true;
    eq->ring = ring;
    eq->vector = vector;
    c->out[RNIC_OUT_HANDLE] = eqn;
    trace_rnic_eq_create(eqn, 1u << e->log_size, vector);
    return RNIC_CMD_OK;
}

static uint8_t cmd_destroy_eq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t eqn;
    uint8_t st = rnic_cmd_handle_arg(c, &eqn);

    if (st) {
        return st;
    }
    st = rnic_cmd_need_kernel(c);
    if (st) {
        return st;
    }
    if (eqn >= s->prop.max_eq || !s->eq[eqn].valid) {
        return rnic_cmd_err_handle(c, "EQ", eqn);
    }
    if (s->eq[eqn].refcnt) {
        return rnic_cmd_err_busy(c, "EQ", eqn, s->eq[eqn].refcnt);
    }
    rnic_pbl_free(s, &s->eq[eqn].ring.pbl);
    memset(&s->eq[eqn], 0, sizeof(RnicEQ));
    return RNIC_CMD_OK;
}

/* ---- protection domains ---- */

static uint8_t cmd_create_pd(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t i;
    uint8_t st = RNIC_CMD_FREE_SLOT(c, "PD", s->pd, s->prop.max_pd, &i);

    if (st) {
        return st;
    }
    s->pd[i] = (RnicPD) { .valid = true, .uctx = c->uctx };
    c->out[RNIC_OUT_HANDLE] = i;
    return RNIC_CMD_OK;
}

static uint8_t cmd_destroy_pd(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t pdn;
    uint8_t st = rnic_cmd_handle_arg(c, &pdn);

    if (st) {
        return st;
    }
    st = rnic_cmd_get_pd(c, pdn);
    if (st) {
        return st;
    }
    if (s->pd[pdn].refcnt) {
        return rnic_cmd_err_busy(c, "PD", pdn, s->pd[pdn].refcnt);
    }
    memset(&s->pd[pdn], 0, sizeof(RnicPD));
    return RNIC_CMD_OK;
}

/* ---- completion queues ---- */

static uint8_t cmd_create_cq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_create_cq *q = &c->cmd->u.create_cq;
    uint32_t eqn = le32_to_cpu(q->eqn);
    RnicRing ring = {};
    RnicCQ *cq;
    uint32_t i;
    uint8_t st;

    if (q->rsvd_1 || q->rsvd_2) {
        return rnic_cmd_err_rsvd(c, "create_cq");
    }
    if (eqn >= s->prop.max_eq || !s->eq[eqn].valid) {
        return rnic_cmd_err_handle(c, "EQ", eqn);
    }
    if (q->log_size < 1 || q->log_size > RNIC_CQ_MAX_LOG_SIZE ||
        (1u << q->log_size) > s->prop.max_cqe) {
        return rnic_cmd_err_param(c, "CQ log_size", q->log_size,
                                  s->prop.max_cqe);
    }
    st = RNIC_CMD_FREE_SLOT(c, "CQ", s->cq, s->prop.max_cq, &i);
    if (st) {
        return st;
    }
    st = rnic_cmd_load_ring(c, &q->ring, q->log_size, RNIC_CQE_SIZE,
                            RNIC_CQ_DBREC_PAGE_SIZE / RNIC_RING_PAGE, &ring);
    if (st) {
        return st;
    }
    cq = &s->cq[i];
    memset(cq, 0, sizeof(*cq));
    cq->valid = true;
    cq->uctx = c->uctx;
    cq->ring = ring;
    cq->eqn = eqn;
    s->eq[eqn].refcnt++;
    c->out[RNIC_OUT_HANDLE] = i;
    c->out[RNIC_OUT_ENTRIES] = 1u << q->log_size;
    trace_rnic_cq_create(i, 1u << q->log_size, eqn, c->uctx);
    return RNIC_CMD_OK;
}

static uint8_t cmd_destroy_cq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t cqn;
    RnicCQ *cq;
    uint8_t st = rnic_cmd_handle_arg(c, &cqn);

    if (st) {
        return st;
    }
    st = rnic_cmd_get_cq(c, cqn);
    if (st) {
        return st;
    }
    cq = &s->cq[cqn];
    if (cq->refcnt) {
        return rnic_cmd_err_busy(c, "CQ", cqn, cq->refcnt);
    }
    if (cq->eqn < s->prop.max_eq) {
        rnic_cmd_refput(&s->eq[cq->eqn].refcnt);
    }
    rnic_pbl_free(s, &cq->ring.pbl);
    memset(cq, 0, sizeof(*cq));
    clear_bit(cqn, s->cq_ev);
    return RNIC_CMD_OK;
}

static uint8_t cmd_resize_cq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_resize_cq *q = &c->cmd->u.resize_cq;
    uint32_t cqn = le32_to_cpu(q->cqn);
    RnicPbl old;
    RnicRing ring = {};
    uint32_t moved = 0;
    RnicCQ *cq;
    uint8_t st;
    int ret;

    if (q->rsvd_1 || q->rsvd_2) {
        return rnic_cmd_err_rsvd(c, "resize_cq");
    }
    st = rnic_cmd_get_cq(c, cqn);
    if (st) {
        return st;
    }
    cq = &s->cq[cqn];
    if (cq->overrun) {
        return rnic_cmd_err_state(c, "CQ overrun", cqn);
    }
    if (q->log_size < 1 || q->log_size > RNIC_CQ_MAX_LOG_SIZE ||
        (1u << q->log_size) > s->prop.max_cqe) {
        return rnic_cmd_err_param(c, "CQ log_size", q->log_size,
                                  s->prop.max_cqe);
    }
    st = rnic_cmd_load_ring(c, &q->ring, q->log_size, RNIC_CQE_SIZE,
                            RNIC_CQ_DBREC_PAGE_SIZE / RNIC_RING_PAGE, &ring);
    if (st) {
        return st;
    }
    old = cq->ring.pbl;
    ret = rnic_cq_move(s, cq, &ring, &moved);
    if (ret) {
        rnic_pbl_free(s, &ring.pbl);
        if (ret == -E2BIG) {
            return rnic_cmd_err_param(c, "CQ log_size below its CQEs",
                                      q->log_size, cq->pi - cq->ci);
        }
        if (ret == -EBUSY) {
            return rnic_cmd_err_state(c, "CQ has more unconsumed CQEs than "
                                      "a resize carries", cqn);
        }
        /* Which page failed was traced by the ring access. */
        return rnic_cmd_err_dma(c, 0);
    }
    rnic_pbl_free(s, &old);
    /*
     * Each CQE moved is a read and two writes: charge them as the page
     * list loads are charged, or a guest whose dbrec claims a full ring
     * gets a dozen 64K-CQE moves into one run.
     */
    s->cmd_cost += moved / RNIC_CQ_MOVE_PER_UNIT;
    c->out[RNIC_OUT_ENTRIES] = 1u << q->log_size;
    c->out[RNIC_OUT_MOVED] = moved;
    trace_rnic_cq_resize(cqn, 1u << q->log_size, moved);
    return RNIC_CMD_OK;
}

/* ---- shared receive queues ---- */

static uint8_t cmd_create_srq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_create_srq *q = &c->cmd->u.create_srq;
    uint32_t pdn = le32_to_cpu(q->pdn);
    uint32_t limit = le32_to_cpu(q->limit);
    uint32_t max_sge = MIN(s->prop.max_sge, RNIC_RQ_MAX_SGE);
    RnicRing ring = {};
    RnicSRQ *srq;
    uint32_t i;
    uint8_t st;

    if (q->rsvd_2) {
        return rnic_cmd_err_rsvd(c, "rsvd_2");
    }
    st = rnic_cmd_get_pd(c, pdn);
    if (st) {
        return st;
    }
    if (q->log_size > RNIC_WQ_MAX_LOG_SIZE ||
        (1u << q->log_size) > s->prop.max_qp_wr) {
        return rnic_cmd_err_param(c, "SRQ log_size", q->log_size,
                                  s->prop.max_qp_wr);
    }
    if (q->max_sge < 1 || q->max_sge > max_sge) {
        return rnic_cmd_err_param(c, "SRQ max_sge", q->max_sge, max_sge);
    }
    if (limit >= (1u << q->log_size)) {
        return rnic_cmd_err_param(c, "SRQ limit", limit,
                                  (1u << q->log_size) - 1);
    }
    st = RNIC_CMD_FREE_SLOT(c, "SRQ", s->srq, s->prop.max_srq, &i);
    if (st) {
        return st;
    }
    st = rnic_cmd_load_ring(c, &q->ring, q->log_size, RNIC_RQ_WQE_SIZE, 0,
                            &ring);
    if (st) {
        return st;
    }
    srq = &s->srq[i];
    memset(srq, 0, sizeof(*srq));
    srq->valid = true;
    srq->uctx = c->uctx;
    srq->pdn = pdn;
    srq->wq.ring = ring;
    srq->wq.max_sge = q->max_sge;
    srq->limit = limit;
    s->pd[pdn].refcnt++;
    c->out[RNIC_OUT_HANDLE] = i;
    c->out[RNIC_OUT_ENTRIES] = 1u << q->log_size;
    trace_rnic_srq_create(i, 1u << q->log_size, pdn, c->uctx);
    return RNIC_CMD_OK;
}

static uint8_t cmd_destroy_srq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t srqn;
    RnicSRQ *srq;
    uint8_t st = rnic_cmd_handle_arg(c, &srqn);

    if (st) {
        return st;
    }
    st = rnic_cmd_get_srq(c, srqn);
    if (st) {
        return st;
    }
    srq = &s->srq[srqn];
    if (srq->refcnt) {
        return rnic_cmd_err_busy(c, "SRQ", srqn, srq->refcnt);
    }
    if (srq->pdn <= s->prop.max_pd) {
        rnic_cmd_refput(&s->pd[srq->pdn].refcnt);
    }
    rnic_pbl_free(s, &srq->wq.ring.pbl);
    memset(srq, 0, sizeof(*srq));
    return RNIC_CMD_OK;
}

static uint8_t cmd_modify_srq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t srqn = le32_to_cpu(c->cmd->u.modify_srq.srqn);
    uint32_t limit = le32_to_cpu(c->cmd->u.modify_srq.limit);
    RnicSRQ *srq;
    uint8_t st;

    st = rnic_cmd_get_srq(c, srqn);
    if (st) {
        return st;
    }
    srq = &s->srq[srqn];
    if (limit >= (1u << srq->wq.ring.log_size)) {
        return rnic_cmd_err_param(c, "SRQ limit", limit,
                                  (1u << srq->wq.ring.log_size) - 1);
    }
    srq->limit = limit;
    return RNIC_CMD_OK;
}

/*
 * The driver has copied its outstanding WQEs into the new ring (see the
 * ABI), so only the ring changes; indices, the limit and any WQE a QP
 * already holds are untouched.
 */
static uint8_t cmd_resize_srq(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_resize_srq *q = &c->cmd->u.resize_srq;
    uint32_t srqn = le32_to_cpu(q->srqn);
    RnicRing ring = {};
    RnicSRQ *srq;
    uint8_t st;

    if (q->rsvd_5[0] || q->rsvd_5[1] || q->rsvd_5[2]) {
        return rnic_cmd_err_rsvd(c, "rsvd_5");
    }
    st = rnic_cmd_get_srq(c, srqn);
    if (st) {
        return st;
    }
    srq = &s->srq[srqn];
    if (q->log_size > RNIC_WQ_MAX_LOG_SIZE ||
        (1u << q->log_size) > s->prop.max_qp_wr ||
        q->log_size < srq->wq.ring.log_size) {
        return rnic_cmd_err_param(c, "SRQ log_size", q->log_size,
                                  s->prop.max_qp_wr);
    }
    st = rnic_cmd_load_ring(c, &q->ring, q->log_size, RNIC_RQ_WQE_SIZE, 0,
                            &ring);
    if (st) {
        return st;
    }
    rnic_pbl_free(s, &srq->wq.ring.pbl);
    srq->wq.ring = ring;
    c->out[RNIC_OUT_ENTRIES] = 1u << q->log_size;
    trace_rnic_srq_resize(srqn, 1u << q->log_size);
    return RNIC_CMD_OK;
}

static uint8_t cmd_query_srq(RnicCmdCtx *c)
{
    uint32_t srqn = le32_to_cpu(c->cmd->u.query.handle);
    RnicSRQ *srq;
    uint8_t st;

    st = rnic_cmd_get_srq(c, srqn);
    if (st) {
        return st;
    }
    srq = &c->s->srq[srqn];
    c->out[RNIC_OUT_SRQ_LIMIT] = srq->limit;
    c->out[RNIC_OUT_SRQ_ENTRIES] = 1u << srq->wq.ring.log_size;
    c->out[RNIC_OUT_SRQ_MAX_SGE] = srq->wq.max_sge;
    return RNIC_CMD_OK;
}

/* ---- memory regions and windows ---- */

/* REG_MR into a free slot, or (replace != 0) REREG_MR of that slot. */
static uint8_t rnic_reg_mr_into(RnicCmdCtx *c, const struct rnic_cmd_reg_mr *r,
                                uint32_t replace)
{
    RnicState *s = c->s;
    uint32_t pdn = le32_to_cpu(r->pdn);
    uint32_t access = le32_to_cpu(r->access);
    uint32_t flags = le32_to_cpu(r->flags);
    uint32_t max_pages = le32_to_cpu(r->max_pages);
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t length = le64_to_cpu(r->length);
    RnicPbl pbl = {};
    RnicMR *mr;
    uint32_t i;
    uint8_t st;

    st = rnic_cmd_get_pd(c, pdn);
    if (st) {
        return st;
    }
    if (access & ~RNIC_ACCESS_ALL) {
        return rnic_cmd_err_param(c, "MR access", access, RNIC_ACCESS_ALL);
    }
    /* Remote writes and atomics need local write, as in verbs. */
    if ((access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RNIC_ACCESS_LOCAL_WRITE)) {
        return rnic_cmd_err_param(c, "MR remote write without local write",
                                  access, RNIC_ACCESS_ALL);
    }
    if (flags & ~(RNIC_MR_FLAG_PHYS | RNIC_MR_FLAG_FAST_REG) ||
        flags == (RNIC_MR_FLAG_PHYS | RNIC_MR_FLAG_FAST_REG)) {
        return rnic_cmd_err_param(c, "MR flags", flags, RNIC_MR_FLAG_FAST_REG);
    }
    if ((flags & RNIC_MR_FLAG_PHYS) && c->uctx) {
        /* A physical MR reaches all guest memory: kernel only. */
        return rnic_cmd_err_access(c, "PHYS MR", pdn, 0);
    }

    for (i = 1; !replace && i <= s->prop.max_mr; i++) {
        if (!s->mr[i].valid) {
            break;
        }
    }
    if (replace) {
        i = replace;
    }

    if (flags & RNIC_MR_FLAG_FAST_REG) {
        if (max_pages == 0 || max_pages > s->prop.max_mr_pages) {
            return rnic_cmd_err_param(c, "FAST_REG max_pages", max_pages,
                                      s->prop.max_mr_pages);
        }
        if (i > s->prop.max_mr) {
            return rnic_cmd_err_resource(c, "MR");
        }
        if (!rnic_pbl_alloc_empty(s, max_pages, 12, &pbl)) {
            RNIC_GUEST_ERR(rnic_err_cmd_fr_host_mem(max_pages), s,
                           "FAST_REG MR of %u pages exceeds max-host-mem",
                           max_pages);
            return rnic_cmd_err_resource(c, "FAST_REG page list");
        }
        iova = 0;
        length = 0;
    } else if (flags & RNIC_MR_FLAG_PHYS) {
        /* Length 0 means from iova to the end of the DMA address space. */
        if (!length) {
            length = UINT64_MAX - iova;
        }
        if (iova > UINT64_MAX - (length - 1)) {
            return rnic_cmd_err_param(c, "PHYS MR iova + length", iova, length);
        }
        if (i > s->prop.max_mr) {
            return rnic_cmd_err_resource(c, "MR");
        }
    } else {
        uint8_t shift = r->pages.page_shift;
        uint32_t npages = le32_to_cpu(r->pages.npages);
        uint64_t pgmask, span, need;

        if (length == 0 || length > s->prop.max_mr_size) {
            return rnic_cmd_err_param(c, "MR length", length,
                                      s->prop.max_mr_size);
        }
        if (iova > UINT64_MAX - (length - 1)) {
            return rnic_cmd_err_param(c, "MR iova + length", iova, length);
        }
        if (i > s->prop.max_mr) {
            return rnic_cmd_err_resource(c, "MR");
        }
        /*
         * The list covers iova's offset in the first page plus length,
         * and not one page more: a guest cannot make the host hold a
         * large list for a small region.
         */
        if (shift >= 12 && shift <= 30) {
            pgmask = (1ULL << shift) - 1;
            span = (iova & pgmask) + length;
            need = span < length ? 0 : ((span - 1) >> shift) + 1;
            if (npages != need) {
                return rnic_cmd_err_param(c, "MR npages for its length",
                                          npages, need);
            }
        }
        st = rnic_pbl_load(s, &r->pages, s->prop.max_mr_pages, &pbl);
        if (st) {
            trace_rnic_err_cmd_pbl(c->op, st);
            return st;
        }
    }

    mr = &s->mr[i];
    if (replace) {
        rnic_pbl_free(s, &mr->pbl);
        rnic_cmd_refput(&s->pd[mr->pdn].refcnt);
    } else {
        mr->key++;              /* a reused index gets a new key */
    }
    mr->valid = true;
    mr->uctx = c->uctx;
    mr->pdn = pdn;
    mr->access = access;
    mr->flags = flags;
    mr->iova = iova;
    mr->length = length;
    mr->pbl = pbl;
    mr->max_pages = (flags & RNIC_MR_FLAG_FAST_REG) ? max_pages : 0;
    mr->fr_valid = false;
    s->pd[pdn].refcnt++;
    c->out[RNIC_OUT_LKEY] = i << 8 | mr->key;
    c->out[RNIC_OUT_RKEY] = i << 8 | mr->key;
    trace_rnic_mr_reg(i << 8 | mr->key, pdn, access, flags, iova, length);
    return RNIC_CMD_OK;
}

static uint8_t cmd_reg_mr(RnicCmdCtx *c)
{
    return rnic_reg_mr_into(c, &c->cmd->u.reg_mr, 0);
}

static uint8_t cmd_rereg_mr(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_rereg_mr *r = &c->cmd->u.rereg_mr;
    uint32_t key = le32_to_cpu(r->key);
    uint32_t idx = key >> 8;
    bool ok = idx && idx <= s->prop.max_mr;
    RnicMR *mr;
    uint8_t st;

    if (r->rsvd_52) {
        return rnic_cmd_err_rsvd(c, "rsvd_52");
    }
    st = rnic_cmd_check_obj(c, "MR", idx, s->prop.max_mr,
                            ok && s->mr[idx].valid &&
                            s->mr[idx].key == (key & 0xff),
                            ok ? s->mr[idx].uctx : 0);
    if (st) {
        return st;
    }
    mr = &s->mr[idx];
    if (mr->flags || r->reg.flags) {
        return rnic_cmd_err_param(c, "REREG_MR of a PHYS or FAST_REG MR",
                                  mr->flags | le32_to_cpu(r->reg.flags), 0);
    }
    if (mr->mw_refs) {
        return rnic_cmd_err_busy(c, "MR", idx, mr->mw_refs);
    }
    return rnic_reg_mr_into(c, &r->reg, idx);
}

static uint8_t cmd_dereg_mr(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t key, idx;
    RnicMR *mr;
    uint8_t st = rnic_cmd_handle_arg(c, &key);

    if (st) {
        return st;
    }
    idx = key >> 8;
    /* Fast-reg may have changed the key byte: only the index counts. */
    st = rnic_cmd_check_obj(c, "MR", idx, s->prop.max_mr,
                            idx && idx <= s->prop.max_mr && s->mr[idx].valid,
                            idx && idx <= s->prop.max_mr ? s->mr[idx].uctx : 0);
    if (st) {
        return st;
    }
    mr = &s->mr[idx];
    if (mr->mw_refs) {
        return rnic_cmd_err_busy(c, "MR", idx, mr->mw_refs);
    }
    if (mr->pdn <= s->prop.max_pd) {
        rnic_cmd_refput(&s->pd[mr->pdn].refcnt);
    }
    rnic_pbl_free(s, &mr->pbl);
    {
        uint8_t key_byte = mr->key;

        memset(mr, 0, sizeof(*mr));
        mr->key = key_byte;
    }
    trace_rnic_mr_dereg(key);
    return RNIC_CMD_OK;
}

static uint8_t cmd_alloc_mw(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    const struct rnic_cmd_alloc_mw *m = &c->cmd->u.alloc_mw;
    uint32_t pdn = le32_to_cpu(m->pdn);
    uint32_t i, rkey;
    RnicMW *mw;
    uint8_t st;

    if (!rnic_cmd_rsvd_zero(m->rsvd_5, sizeof(m->rsvd_5))) {
        return rnic_cmd_err_rsvd(c, "rsvd_5");
    }
    st = rnic_cmd_get_pd(c, pdn);
    if (st) {
        return st;
    }
    if (m->type != 1 && m->type != 2) {
        return rnic_cmd_err_param(c, "MW type", m->type, 2);
    }
    st = RNIC_CMD_FREE_SLOT(c, "MW", s->mw, s->prop.max_mw, &i);
    if (st) {
        return st;
    }
    mw = &s->mw[i];
    /* A new key byte, so a stale rkey of the slot's last window misses. */
    *mw = (RnicMW) {
        .valid = true,
        .type = m->type,
        .key = mw->key + 1,
        .uctx = c->uctx,
        .pdn = pdn,
    };
    s->pd[pdn].refcnt++;
    rkey = RNIC_MW_KEY_FLAG | i << 8 | mw->key;
    c->out[RNIC_OUT_HANDLE] = rkey;
    trace_rnic_mw_alloc(rkey, m->type, pdn);
    return RNIC_CMD_OK;
}

/* The handle is the window's rkey; only its index counts. */
static uint8_t cmd_dealloc_mw(RnicCmdCtx *c)
{
    RnicState *s = c->s;
    uint32_t rkey, idx;
    bool ok;
    RnicMW *mw;
    uint8_t st = rnic_cmd_handle_arg(c, &rkey);

    if (st) {
        return st;
    }
    idx = (rkey & ~RNIC_MW_KEY_FLAG) >> 8;
    ok = (rkey & RNIC_MW_KEY_FLAG) && idx && idx <= s->prop.max_mw;
    st = rnic_cmd_check_obj(c, "MW", ok ? idx : 0, s->prop.max_mw,
                            ok && s->mw[idx].valid, ok ? s->mw[idx].uctx : 0);
    if (st) {
        return st;
    }
    mw = &s->mw[idx];
    rnic_mw_unbind(s, mw);
    if (mw->pdn <= s->prop.max_pd) {
        rnic_cmd_refput(&s->pd[mw->pdn].refcnt);
    }
    mw->valid = false;
    return RNIC_CMD_OK;
}

/* ---- dispatch ---- */

typedef struct RnicCmdDesc {
    const char *name;
    uint8_t (*fn)(RnicCmdCtx *c);
} RnicCmdDesc;

static const RnicCmdDesc rnic_cmds[256] = {
    [RNIC_CMD_QUERY_DEVICE] = { "QUERY_DEVICE", cmd_query_device },
    [RNIC_CMD_QUERY_PORT] = { "QUERY_PORT", cmd_query_port },
    [RNIC_CMD_SET_GID] = { "SET_GID", cmd_set_gid },
    [RNIC_CMD_DEL_GID] = { "DEL_GID", cmd_del_gid },
    [RNIC_CMD_ALLOC_UCTX] = { "ALLOC_UCTX", cmd_alloc_uctx },
    [RNIC_CMD_DEALLOC_UCTX] = { "DEALLOC_UCTX", cmd_dealloc_uctx },
    [RNIC_CMD_CREATE_EQ] = { "CREATE_EQ", cmd_create_eq },
    [RNIC_CMD_DESTROY_EQ] = { "DESTROY_EQ", cmd_destroy_eq },
    [RNIC_CMD_CREATE_PD] = { "CREATE_PD", cmd_create_pd },
    [RNIC_CMD_DESTROY_PD] = { "DESTROY_PD", cmd_destroy_pd },
    [RNIC_CMD_CREATE_CQ] = { "CREATE_CQ", cmd_create_cq },
    [RNIC_CMD_DESTROY_CQ] = { "DESTROY_CQ", cmd_destroy_cq },
    [RNIC_CMD_CREATE_QP] = { "CREATE_QP", rnic_cmd_create_qp },
    [RNIC_CMD_DESTROY_QP] = { "DESTROY_QP", rnic_cmd_destroy_qp },
    [RNIC_CMD_MODIFY_QP] = { "MODIFY_QP", rnic_cmd_modify_qp },
    [RNIC_CMD_QUERY_QP] = { "QUERY_QP", rnic_cmd_query_qp },
    [RNIC_CMD_ATTACH_MCAST] = { "ATTACH_MCAST", rnic_cmd_attach_mcast },
    [RNIC_CMD_DETACH_MCAST] = { "DETACH_MCAST", rnic_cmd_detach_mcast },
    [RNIC_CMD_CREATE_FLOW] = { "CREATE_FLOW", rnic_cmd_create_flow },
    [RNIC_CMD_DESTROY_FLOW] = { "DESTROY_FLOW", rnic_cmd_destroy_flow },
    [RNIC_CMD_SET_RSS] = { "SET_RSS", rnic_cmd_set_rss },
    [RNIC_CMD_REG_MR] = { "REG_MR", cmd_reg_mr },
    [RNIC_CMD_REREG_MR] = { "REREG_MR", cmd_rereg_mr },
    [RNIC_CMD_DEREG_MR] = { "DEREG_MR", cmd_dereg_mr },
    [RNIC_CMD_CREATE_SRQ] = { "CREATE_SRQ", cmd_create_srq },
    [RNIC_CMD_DESTROY_SRQ] = { "DESTROY_SRQ", cmd_destroy_srq },
    [RNIC_CMD_RESIZE_CQ] = { "RESIZE_CQ", cmd_resize_cq },
    [RNIC_CMD_MODIFY_SRQ] = { "MODIFY_SRQ", cmd_modify_srq },
    [RNIC_CMD_RESIZE_SRQ] = { "RESIZE_SRQ", cmd_resize_srq },
    [RNIC_CMD_QUERY_SRQ] = { "QUERY_SRQ", cmd_query_srq },
    [RNIC_CMD_ALLOC_MW] = { "ALLOC_MW", cmd_alloc_mw },
    [RNIC_CMD_DEALLOC_MW] = { "DEALLOC_MW", cmd_dealloc_mw },
    [RNIC_CMD_MAD_IFC] = { "MAD_IFC", rnic_cmd_mad_ifc },
};

const char *rnic_cmd_opc_str(uint8_t opcode)
{
    return rnic_cmds[opcode].name ? rnic_cmds[opcode].name : "UNKNOWN";
}

uint8_t rnic_cmd_exec(RnicState *s, const struct rnic_cmd *cmd,
                      uint32_t out[6])
{
    RnicCmdCtx c = {
        .s = s,
        .cmd = cmd,
        .op = rnic_cmd_opc_str(cmd->hdr.opcode),
        .uctx = le16_to_cpu(cmd->hdr.uctx),
        .out = out,
    };
    const RnicCmdDesc *d = &rnic_cmds[cmd->hdr.opcode];

    if (!(s->status & RNIC_STATUS_READY)) {
        RNIC_GUEST_ERR(rnic_err_cmd_not_ready(c.op), s,
                       "%s: device not ready", c.op);
        return RNIC_CMD_ERR_STATE;
    }
    if (!d->fn) {
        RNIC_GUEST_ERR(rnic_err_cmd_opcode(cmd->hdr.opcode), s,
                       "unknown command opcode 0x%x", cmd->hdr.opcode);
        return RNIC_CMD_ERR_OPCODE;
    }
    if (cmd->hdr.flags || cmd->hdr.rsvd_8) {
        return rnic_cmd_err_rsvd(&c, "hdr");
    }
    if (c.uctx && (c.uctx > s->prop.max_uctx || !s->uctx[c.uctx].valid)) {
        RNIC_GUEST_ERR(rnic_err_cmd_uctx(c.op, c.uctx), s,
                       "%s: no user context %u", c.op, c.uctx);
        return RNIC_CMD_ERR_HANDLE;
    }
    return d->fn(&c);
}

void rnic_objects_reset(RnicState *s)
{
    uint32_t i;

    if (s->qp) {
        for (i = 0; i <= s->prop.max_qp + 1; i++) {
            if (s->qp[i]) {
                rnic_qp_free(s, s->qp[i]);
            }
        }
    }
    for (i = 0; s->cq && i <= s->prop.max_cq; i++) {
        rnic_pbl_free(s, &s->cq[i].ring.pbl);
        memset(&s->cq[i], 0, sizeof(RnicCQ));
    }
    for (i = 0; s->eq && i < s->prop.max_eq; i++) {
        rnic_pbl_free(s, &s->eq[i].ring.pbl);
        memset(&s->eq[i], 0, sizeof(RnicEQ));
    }
    for (i = 0; s->srq && i <= s->prop.max_srq; i++) {
        rnic_pbl_free(s, &s->srq[i].wq.ring.pbl);
        memset(&s->srq[i], 0, sizeof(RnicSRQ));
    }
    for (i = 0; s->mr && i <= s->prop.max_mr; i++) {
        rnic_pbl_free(s, &s->mr[i].pbl);
        memset(&s->mr[i], 0, sizeof(RnicMR));
    }
    if (s->mw) {
        memset(s->mw, 0, sizeof(RnicMW) * (s->prop.max_mw + 1));
    }
    for (i = 0; s->mcast && i < s->prop.max_mcast_grp; i++) {
        s->mcast[i].nqp = 0;
    }
    rnic_flow_reset(s);
    if (s->pd) {
        memset(s->pd, 0, sizeof(RnicPD) * (s->prop.max_pd + 1));
    }
    if (s->uctx) {
        memset(s->uctx, 0, sizeof(RnicUctx) * (s->prop.max_uctx + 1));
    }
    if (s->gid) {
        memset(s->gid, 0, sizeof(RnicGid) * s->prop.max_gid);
    }
    s->overrun_sweep = false;
}
