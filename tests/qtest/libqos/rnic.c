/*
 * libqos driver for the rnic RoCEv2 RNIC
 *
 * The node finds the function by its ABI IDs, maps the register and
 * doorbell BARs and offers a small driver: a command queue in guest
 * memory, typed commands, rings built from guest pages, and CQ/EQ
 * polling with the owner bit.  Everything the device does happens in
 * its bottom half, so every wait here polls guest memory or registers
 * with a deadline.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "../libqtest.h"
#include "rnic.h"

QTestState *qrnic_qts(QRnic *r)
{
    return r->dev.bus->qts;
}

uint32_t qrnic_readl(QRnic *r, uint32_t off)
{
    return qpci_io_readl(&r->dev, r->regs, off);
}

void qrnic_writel(QRnic *r, uint32_t off, uint32_t val)
{
    qpci_io_writel(&r->dev, r->regs, off, val);
}

uint64_t qrnic_counter(QRnic *r, unsigned idx)
{
    g_assert_cmpuint(idx, <, RNIC_CNT_MAX);
    return qpci_io_readq(&r->dev, r->regs, RNIC_REG_CNT_BASE + 8 * idx);
}

void qrnic_doorbell(QRnic *r, unsigned page, uint32_t off, uint64_t val)
{
    qpci_io_writeq(&r->dev, r->db, page * RNIC_DB_PAGE_SIZE + off, val);
}

/*
 * Runs while the helpers below wait for the device.  Against a QEMU
 * process nothing is needed: its main loop runs on its own.  In-process
 * (the fuzzer) it must run the main loop, so the fuzzer sets it.
 */
void (*qrnic_wait_hook)(QTestState *qts);

static void qrnic_pause(QRnic *r, unsigned us)
{
    if (qrnic_wait_hook) {
        qrnic_wait_hook(qrnic_qts(r));
    } else {
        g_usleep(us);
    }
}

void qrnic_settle(QRnic *r)
{
    int i;

    /*
     * A register read is a round trip through the main loop; a pending
     * bottom half runs before the next one is answered.
     */
    for (i = 0; i < 5; i++) {
        qrnic_readl(r, RNIC_REG_STATUS);
        qrnic_pause(r, 2000);
    }
}

uint64_t qrnic_alloc(QRnic *r, size_t size)
{
    static const uint8_t zero[QRNIC_PAGE];
    uint64_t addr = guest_alloc(r->alloc, size);
    size_t off;

    g_assert(addr);
    g_assert_cmphex(addr & (QRNIC_PAGE - 1), ==, 0);
    /*
     * Zeroed a page at a time from a static page: the in-process fuzzer's
     * qtest_memset wrapper leaks a buffer per call.
     */
    for (off = 0; off < size; off += QRNIC_PAGE) {
        qtest_memwrite(qrnic_qts(r), addr + off, zero,
                       MIN(QRNIC_PAGE, size - off));
    }
    return addr;
}

uint32_t qrnic_try_enable(QRnic *r, uint64_t base, unsigned log_size)
{
    int64_t deadline = g_get_monotonic_time() + 100 * 1000;
    uint32_t status;

    qrnic_writel(r, RNIC_REG_CMDQ_BASE_LO, (uint32_t)base);
    qrnic_writel(r, RNIC_REG_CMDQ_BASE_HI, base >> 32);
    qrnic_writel(r, RNIC_REG_CMDQ_LOG_SIZE, log_size);
    qrnic_writel(r, RNIC_REG_CTRL, RNIC_CTRL_ENABLE);
    r->cmdq = base;
    r->cmdq_log_size = log_size;
    r->cmdq_pi = 0;

    /* Allow READY to come a little after the write. */
    do {
        status = qrnic_readl(r, RNIC_REG_STATUS);
        if (status & (RNIC_STATUS_READY | RNIC_STATUS_FATAL)) {
            break;
        }
        qrnic_pause(r, 1000);
    } while (g_get_monotonic_time() < deadline);
    return status;
}

void qrnic_enable(QRnic *r)
{
    unsigned log_size = 4;
    uint64_t base = qrnic_alloc(r, RNIC_CMD_ENTRY_SIZE << log_size);
    uint32_t status = qrnic_try_enable(r, base, log_size);

    g_assert_cmphex(status & (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==,
                    RNIC_STATUS_READY);
}

void qrnic_reset(QRnic *r)
{
    qrnic_writel(r, RNIC_REG_CTRL, RNIC_CTRL_RESET);
    qrnic_settle(r);
    r->cmdq = 0;
    r->cmdq_pi = 0;
}

void qrnic_cmd_init(struct rnic_cmd *cmd, uint8_t opcode)
{
    memset(cmd, 0, sizeof(*cmd));
    cmd->hdr.opcode = opcode;
}

uint32_t qrnic_cmd_post(QRnic *r, struct rnic_cmd *cmd)
{
    uint32_t idx = r->cmdq_pi & ((1u << r->cmdq_log_size) - 1);

    g_assert(r->cmdq);
    cmd->hdr.cookie = cpu_to_le32(++r->cookie);
    memset(&cmd->resp, 0, sizeof(cmd->resp));
    qtest_memwrite(qrnic_qts(r), r->cmdq + idx * RNIC_CMD_ENTRY_SIZE,
                   cmd, sizeof(*cmd));
    r->cmdq_pi++;
    qrnic_writel(r, RNIC_REG_CMDQ_PI, r->cmdq_pi);
    return idx;
}

bool qrnic_cmd_wait(QRnic *r, uint32_t idx, struct rnic_cmd_resp *resp,
                    int timeout_ms)
{
    uint64_t addr = r->cmdq + idx * RNIC_CMD_ENTRY_SIZE +
                    offsetof(struct rnic_cmd, resp);
    int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;

    for (;;) {
        qtest_memread(qrnic_qts(r), addr, resp, sizeof(*resp));
        if (resp->done) {
            return true;
        }
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
        qrnic_pause(r, 200);
    }
}

uint8_t qrnic_cmd(QRnic *r, struct rnic_cmd *cmd, uint32_t out[6])
{
    struct rnic_cmd_resp resp;
    uint32_t idx = qrnic_cmd_post(r, cmd);
    int i;

    g_assert_true(qrnic_cmd_wait(r, idx, &resp, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.done, ==, 1);
    g_assert_cmphex(le32_to_cpu(resp.cookie), ==, le32_to_cpu(cmd->hdr.cookie));
    for (i = 0; out && i < 6; i++) {
        out[i] = le32_to_cpu(resp.out[i]);
    }
    return resp.status;
}

uint8_t qrnic_query(QRnic *r, uint8_t opcode, uint32_t handle,
                    uint64_t out_addr, uint32_t out_len)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, opcode);
    cmd.u.query.out_addr = cpu_to_le64(out_addr);
    cmd.u.query.out_len = cpu_to_le32(out_len);
    cmd.u.query.handle = cpu_to_le32(handle);
    return qrnic_cmd(r, &cmd, NULL);
}

uint8_t qrnic_query_device(QRnic *r, struct rnic_device_attr *attr)
{
    uint64_t buf = qrnic_alloc(r, QRNIC_PAGE);
    uint8_t st = qrnic_query(r, RNIC_CMD_QUERY_DEVICE, 0, buf, sizeof(*attr));

    qtest_memread(qrnic_qts(r), buf, attr, sizeof(*attr));
    guest_free(r->alloc, buf);
    return st;
}

uint8_t qrnic_set_gid(QRnic *r, uint32_t index, const uint8_t gid[16],
                      const uint8_t mac[6])
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_SET_GID);
    cmd.u.gid.index = cpu_to_le32(index);
    cmd.u.gid.type = RNIC_GID_ROCE_V2_IPV4;
    memcpy(cmd.u.gid.gid, gid, 16);
    memcpy(cmd.u.gid.mac, mac, 6);
    cmd.u.gid.vlan_id = cpu_to_le16(0xffff);
    return qrnic_cmd(r, &cmd, NULL);
}

uint8_t qrnic_alloc_uctx(QRnic *r, uint32_t *uctx)
{
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint8_t st;

    qrnic_cmd_init(&cmd, RNIC_CMD_ALLOC_UCTX);
    st = qrnic_cmd(r, &cmd, out);
    *uctx = out[RNIC_OUT_HANDLE];
    return st;
}

uint8_t qrnic_destroy(QRnic *r, uint8_t opcode, uint16_t uctx,
                      uint32_t handle)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, opcode);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    cmd.u.handle.handle = cpu_to_le32(handle);
    return qrnic_cmd(r, &cmd, NULL);
}

static void qrnic_pbl(struct rnic_pbl *pbl, uint64_t addr, uint32_t npages)
{
    pbl->addr = cpu_to_le64(addr);
    pbl->npages = cpu_to_le32(npages);
    pbl->page_shift = 12;
    pbl->levels = 0;
}

static uint32_t qrnic_pages(uint64_t bytes)
{
    return DIV_ROUND_UP(bytes, QRNIC_PAGE);
}

uint8_t qrnic_create_eq(QRnic *r, QRnicEq *eq, uint32_t eqn,
                        unsigned log_size)
{
    uint32_t npages = qrnic_pages((uint64_t)RNIC_EQE_SIZE << log_size);
    struct rnic_cmd cmd;

    memset(eq, 0, sizeof(*eq));
    eq->eqn = eqn;
    eq->log_size = log_size;
    eq->buf = qrnic_alloc(r, npages * QRNIC_PAGE);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ);
    cmd.u.eq.eqn = cpu_to_le32(eqn);
    cmd.u.eq.log_size = log_size;
    qrnic_pbl(&cmd.u.eq.ring, eq->buf, npages);
    return qrnic_cmd(r, &cmd, NULL);
}

uint8_t qrnic_create_pd(QRnic *r, uint16_t uctx, uint32_t *pdn)
{
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint8_t st;

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    cmd.hdr.uctx = cpu_to_le16(uctx);
    st = qrnic_cmd(r, &cmd, out);
    *pdn = out[RNIC_OUT_HANDLE];
    return st;
}

uint8_t qrnic_create_cq(QRnic *r, QRnicCq *cq, unsigned log_size,
                        uint32_t eqn)
{
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint8_t st;

    memset(cq, 0, sizeof(*cq));
    cq->log_size = log_size;
    cq->npages = 1 + qrnic_pages((uint64_t)RNIC_CQE_SIZE << log_size);
    cq->buf = qrnic_alloc(r, cq->npages * QRNIC_PAGE);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ);
    cmd.u.create_cq.log_size = log_size;
    cmd.u.create_cq.eqn = cpu_to_le32(eqn);
    qrnic_pbl(&cmd.u.create_cq.ring, cq->buf, cq->npages);
    st = qrnic_cmd(r, &cmd, out);
    cq->cqn = out[RNIC_OUT_HANDLE];
    return st;
}

uint64_t qrnic_resize_cq_cmd(QRnic *r, const QRnicCq *cq, unsigned log_size,
                             struct rnic_cmd *cmd)
{
    uint32_t npages = 1 + qrnic_pages((uint64_t)RNIC_CQE_SIZE << log_size);
    uint64_t buf = qrnic_alloc(r, npages * QRNIC_PAGE);

    qrnic_cmd_init(cmd, RNIC_CMD_RESIZE_CQ);
    cmd->u.resize_cq.log_size = log_size;
    cmd->u.resize_cq.cqn = cpu_to_le32(cq->cqn);
    qrnic_pbl(&cmd->u.resize_cq.ring, buf, npages);
    return buf;
}

uint8_t qrnic_resize_cq(QRnic *r, QRnicCq *cq, unsigned log_size,
                        uint32_t *moved)
{
    uint32_t npages = 1 + qrnic_pages((uint64_t)RNIC_CQE_SIZE << log_size);
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint64_t buf;
    uint8_t st;

    buf = qrnic_resize_cq_cmd(r, cq, log_size, &cmd);
    st = qrnic_cmd(r, &cmd, out);
    if (st == RNIC_CMD_OK) {
        g_assert_cmpuint(out[RNIC_OUT_ENTRIES], ==, 1u << log_size);
        cq->log_size = log_size;
        cq->buf = buf;
        cq->npages = npages;
        cq->ci = 0;
        *moved = out[RNIC_OUT_MOVED];
    }
    return st;
}

uint8_t qrnic_create_qp(QRnic *r, QRnicQp *qp, uint8_t type,
                        uint32_t pdn, uint32_t send_cqn, uint32_t recv_cqn,
                        unsigned sq_log_size, unsigned rq_log_size)
{
    return qrnic_create_qp_flags(r, qp, type, pdn, send_cqn, recv_cqn,
                                 sq_log_size, rq_log_size, 0);
}

uint8_t qrnic_create_qp_flags(QRnic *r, QRnicQp *qp, uint8_t type,
                              uint32_t pdn, uint32_t send_cqn,
                              uint32_t recv_cqn, unsigned sq_log_size,
                              unsigned rq_log_size, uint32_t flags)
{
    uint32_t sq_pages = qrnic_pages((uint64_t)RNIC_SQ_WQE_SIZE << sq_log_size);
    uint32_t rq_pages = qrnic_pages((uint64_t)RNIC_RQ_WQE_SIZE << rq_log_size);
    bool dbrec = flags & RNIC_QP_FLAG_SQ_DBREC;
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint8_t st;

    memset(qp, 0, sizeof(*qp));
    qp->type = type;
    qp->sq_log_size = sq_log_size;
    qp->rq_log_size = rq_log_size;
    sq_pages += dbrec;
    qp->sq_buf = qrnic_alloc(r, sq_pages * QRNIC_PAGE);
    if (dbrec) {
        qp->sq_dbrec = qp->sq_buf;
        qp->sq_buf += QRNIC_PAGE;
    }
    qp->rq_buf = qrnic_alloc(r, rq_pages * QRNIC_PAGE);

    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP);
    cmd.u.create_qp.qp_type = type;
    cmd.u.create_qp.sq_log_size = sq_log_size;
    cmd.u.create_qp.rq_log_size = rq_log_size;
    cmd.u.create_qp.max_send_sge = 2;
    cmd.u.create_qp.max_recv_sge = 2;
    cmd.u.create_qp.max_inline = cpu_to_le16(64);
    cmd.u.create_qp.pdn = cpu_to_le32(pdn);
    cmd.u.create_qp.send_cqn = cpu_to_le32(send_cqn);
    cmd.u.create_qp.recv_cqn = cpu_to_le32(recv_cqn);
    cmd.u.create_qp.flags = cpu_to_le32(flags);
    qrnic_pbl(&cmd.u.create_qp.sq, dbrec ? qp->sq_dbrec : qp->sq_buf,
              sq_pages);
    qrnic_pbl(&cmd.u.create_qp.rq, qp->rq_buf, rq_pages);
    st = qrnic_cmd(r, &cmd, out);
    qp->qpn = out[RNIC_OUT_HANDLE];
    return st;
}

uint8_t qrnic_modify_qp(QRnic *r, uint32_t qpn, uint32_t mask,
                        const struct rnic_qp_attr *attr)
{
    struct rnic_cmd cmd;

    qrnic_cmd_init(&cmd, RNIC_CMD_MODIFY_QP);
    cmd.u.modify_qp.qpn = cpu_to_le32(qpn);
    cmd.u.modify_qp.attr_mask = cpu_to_le32(mask);
    cmd.u.modify_qp.attr = *attr;
    return qrnic_cmd(r, &cmd, NULL);
}

uint8_t qrnic_query_qp(QRnic *r, uint32_t qpn, struct rnic_qp_attr *attr)
{
    uint64_t buf = qrnic_alloc(r, QRNIC_PAGE);
    uint8_t st = qrnic_query(r, RNIC_CMD_QUERY_QP, qpn, buf, sizeof(*attr));

    qtest_memread(qrnic_qts(r), buf, attr, sizeof(*attr));
    guest_free(r->alloc, buf);
    return st;
}

uint8_t qrnic_reg_mr(QRnic *r, QRnicMr *mr, uint32_t pdn, uint32_t access,
                     uint64_t len)
{
    uint32_t npages = qrnic_pages(len);
    struct rnic_cmd cmd;
    uint32_t out[6];
    uint8_t st;

    memset(mr, 0, sizeof(*mr));
    mr->buf = qrnic_alloc(r, npages * QRNIC_PAGE);
    mr->len = len;

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(pdn);
    cmd.u.reg_mr.access = cpu_to_le32(access);
    cmd.u.reg_mr.iova = cpu_to_le64(mr->buf);
    cmd.u.reg_mr.length = cpu_to_le64(len);
    qrnic_pbl(&cmd.u.reg_mr.pages, mr->buf, npages);
    st = qrnic_cmd(r, &cmd, out);
    mr->lkey = out[RNIC_OUT_LKEY];
    mr->rkey = out[RNIC_OUT_RKEY];
    return st;
}

void qrnic_post_send(QRnic *r, QRnicQp *qp, const struct rnic_send_wqe *wqe,
                     const struct rnic_sge *sge, unsigned nsge)
{
    uint8_t buf[RNIC_SQ_WQE_SIZE] = { 0 };
    uint32_t idx = qp->sq_pi & ((1u << qp->sq_log_size) - 1);

    g_assert_cmpuint(nsge, <=, RNIC_SQ_MAX_SGE);
    memcpy(buf, wqe, sizeof(*wqe));
    memcpy(buf + sizeof(*wqe), sge, nsge * sizeof(*sge));
    qtest_memwrite(qrnic_qts(r), qp->sq_buf + idx * RNIC_SQ_WQE_SIZE,
                   buf, sizeof(buf));
    qp->sq_pi++;
}

void qrnic_post_recv(QRnic *r, QRnicQp *qp, uint64_t wr_id,
                     const struct rnic_sge *sge, unsigned nsge)
{
    uint8_t buf[RNIC_RQ_WQE_SIZE] = { 0 };
    struct rnic_recv_wqe wqe = {
        .wr_id = cpu_to_le64(wr_id),
        .num_sge = nsge,
    };
    uint32_t idx = qp->rq_pi & ((1u << qp->rq_log_size) - 1);

    g_assert_cmpuint(nsge, <=, RNIC_RQ_MAX_SGE);
    memcpy(buf, &wqe, sizeof(wqe));
    memcpy(buf + sizeof(wqe), sge, nsge * sizeof(*sge));
    qtest_memwrite(qrnic_qts(r), qp->rq_buf + idx * RNIC_RQ_WQE_SIZE,
                   buf, sizeof(buf));
    qp->rq_pi++;
}

void qrnic_ring_sq(QRnic *r, QRnicQp *qp)
{
    qrnic_doorbell(r, RNIC_DB_PAGE_KERNEL, RNIC_DB_SQ,
                   qp->qpn | (uint64_t)qp->sq_pi << 32);
}

void qrnic_sq_dbrec_store(QRnic *r, QRnicQp *qp)
{
    uint32_t pi = cpu_to_le32(qp->sq_pi);

    g_assert_cmphex(qp->sq_dbrec, !=, 0);
    qtest_memwrite(qrnic_qts(r),
                   qp->sq_dbrec + offsetof(struct rnic_sq_dbrec, pi),
                   &pi, sizeof(pi));
}

void qrnic_sq_dbrec_read(QRnic *r, QRnicQp *qp, struct rnic_sq_dbrec *rec)
{
    g_assert_cmphex(qp->sq_dbrec, !=, 0);
    qtest_memread(qrnic_qts(r), qp->sq_dbrec, rec, sizeof(*rec));
    rec->pi = le32_to_cpu(rec->pi);
    rec->flags = le32_to_cpu(rec->flags);
}

void qrnic_ring_rq(QRnic *r, QRnicQp *qp)
{
    qrnic_doorbell(r, RNIC_DB_PAGE_KERNEL, RNIC_DB_RQ,
                   qp->qpn | (uint64_t)qp->rq_pi << 32);
}

bool qrnic_cq_poll(QRnic *r, QRnicCq *cq, struct rnic_cqe *cqe)
{
    uint32_t mask = (1u << cq->log_size) - 1;
    uint64_t addr = cq->buf + QRNIC_PAGE + (cq->ci & mask) * RNIC_CQE_SIZE;
    uint8_t want = !((cq->ci >> cq->log_size) & 1);
    struct rnic_cq_dbrec rec = { 0 };

    qtest_memread(qrnic_qts(r), addr, cqe, sizeof(*cqe));
    if ((cqe->owner & RNIC_CQE_OWNER) != want) {
        return false;
    }
    cq->ci++;
    rec.ci = cpu_to_le32(cq->ci);
    qtest_memwrite(qrnic_qts(r), cq->buf, &rec, sizeof(rec));
    return true;
}

bool qrnic_cq_wait(QRnic *r, QRnicCq *cq, struct rnic_cqe *cqe,
                   int timeout_ms)
{
    int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;

    for (;;) {
        if (qrnic_cq_poll(r, cq, cqe)) {
            return true;
        }
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
        qrnic_pause(r, 500);
    }
}

bool qrnic_eq_poll(QRnic *r, QRnicEq *eq, struct rnic_eqe *eqe)
{
    uint32_t mask = (1u << eq->log_size) - 1;
    uint64_t addr = eq->buf + (eq->ci & mask) * RNIC_EQE_SIZE;
    uint8_t want = !((eq->ci >> eq->log_size) & 1);

    qtest_memread(qrnic_qts(r), addr, eqe, sizeof(*eqe));
    if ((eqe->owner & RNIC_EQE_OWNER) != want) {
        return false;
    }
    eq->ci++;
    qrnic_doorbell(r, RNIC_DB_PAGE_KERNEL, RNIC_DB_EQ,
                   eq->eqn | (uint64_t)eq->ci << 32);
    return true;
}

/* ---- qgraph node ---- */

static void *qrnic_get_driver(void *obj, const char *interface)
{
    QRnic *r = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return &r->dev;
    }
    fprintf(stderr, "%s not present in rnic\n", interface);
    g_assert_not_reached();
}

static void qrnic_start_hw(QOSGraphObject *obj)
{
    QRnic *r = (QRnic *)obj;

    qpci_device_enable(&r->dev);
}

static void qrnic_destructor(QOSGraphObject *obj)
{
    QRnic *r = (QRnic *)obj;

    qpci_iounmap(&r->dev, r->db);
    qpci_iounmap(&r->dev, r->regs);
}

static void qrnic_init(QRnic *r, QPCIBus *bus, QGuestAllocator *alloc,
                       QPCIAddress *addr)
{
    qpci_device_init(&r->dev, bus, addr);
    g_assert_cmphex(qpci_config_readw(&r->dev, PCI_VENDOR_ID), ==,
                    RNIC_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&r->dev, PCI_DEVICE_ID), ==,
                    RNIC_PCI_DEVICE_ID);
    r->regs = qpci_iomap(&r->dev, RNIC_BAR_REGS, NULL);
    r->db = qpci_iomap(&r->dev, RNIC_BAR_DB, &r->db_size);
    r->alloc = alloc;
}

void qrnic_init_second(QRnic *r2, QRnic *r, int slot)
{
    QPCIAddress addr = { .devfn = QPCI_DEVFN(slot, 0) };

    memset(r2, 0, sizeof(*r2));
    qrnic_init(r2, r->dev.bus, r->alloc, &addr);
    qpci_device_enable(&r2->dev);
}

void qrnic_fini_second(QRnic *r2)
{
    qpci_iounmap(&r2->dev, r2->db);
    qpci_iounmap(&r2->dev, r2->regs);
}

static void *qrnic_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRnic *r = g_new0(QRnic, 1);

    qrnic_init(r, pci_bus, alloc, addr);

    r->obj.get_driver = qrnic_get_driver;
    r->obj.start_hw = qrnic_start_hw;
    r->obj.destructor = qrnic_destructor;
    return &r->obj;
}

static void qrnic_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(4, 0),
        .vendor_id = RNIC_PCI_VENDOR_ID,
        .device_id = RNIC_PCI_DEVICE_ID,
    };
    /*
     * Every test of this node provides "-netdev ...,id=hs0"; the node does
     * not produce "pci-device" because the generic tests of that interface
     * would start QEMU without that netdev.
     */
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0,netdev=hs0,mac=" QRNIC_MAC_STR,
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("rnic", qrnic_create);
    qos_node_consumes("rnic", "pci-bus", &opts);
    /*
     * The same device again under a second name: qgraph's walk holds the
     * tests of a node and the nodes still to visit on one stack of 128,
     * so some tests hang off this one.
     */
    qos_node_create_driver_named(QRNIC_NODE_B, "rnic", qrnic_create);
    qos_node_consumes(QRNIC_NODE_B, "pci-bus", &opts);
    qos_node_create_driver_named(QRNIC_NODE_C, "rnic", qrnic_create);
    qos_node_consumes(QRNIC_NODE_C, "pci-bus", &opts);
}

libqos_init(qrnic_register_nodes);
