/*
 * QTest cases for rnic: device-side faults injected from the host
 *
 * Each fault is armed over QMP rnic-inject-fault (one over HMP
 * rnic_inject), and the test checks what the guest sees: CQE statuses,
 * EQEs, registers, MSI-X messages written to guest memory, and the
 * device's "faults" counters.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "hw/pci/pci_regs.h"
#include "hw/pci/msix.h"
#include "rnic-test-common.h"

#ifndef _WIN32

#define MSIX_MAGIC      0x5a5a1234u

/* Arms a fault; 'args' is the rest of the arguments' JSON object. */
static QDict *inject(Env *e, const char *path, const char *fault,
                     const char *args)
{
    g_autofree char *json =
        g_strdup_printf("{'path': '%s', 'fault': '%s'%s%s}", path, fault,
                        args ? ", " : "", args ? args : "");
    QObject *arguments = qobject_from_json(json, &error_abort);

    return qtest_qmp(qrnic_qts(e->r), "{'execute': 'rnic-inject-fault',"
                     " 'arguments': %p}", arguments);
}

static void inject_ok(Env *e, const char *path, const char *fault,
                      const char *args)
{
    QDict *resp = inject(e, path, fault, args);

    if (!qdict_haskey(resp, "return")) {
        g_error("rnic-inject-fault %s %s refused: %s", fault,
                args ? args : "",
                qdict_get_str(qdict_get_qdict(resp, "error"), "desc"));
    }
    qobject_unref(resp);
}

/* A refusal whose message names 'what'. */
static void inject_refused(Env *e, const char *path, const char *fault,
                           const char *args, const char *what)
{
    QDict *resp = inject(e, path, fault, args);
    QDict *err = qdict_get_qdict(resp, "error");

    g_assert_nonnull(err);
    g_assert_nonnull(strstr(qdict_get_str(err, "desc"), what));
    qobject_unref(resp);
}

static QDict *faults(Env *e, const char *path)
{
    QDict *resp = qtest_qmp(qrnic_qts(e->r), "{'execute': 'qom-get',"
                            " 'arguments': {'path': %s, 'property':"
                            " 'faults'}}", path);
    QDict *ret = qdict_get_qdict(resp, "return");

    qobject_ref(ret);
    qobject_unref(resp);
    return ret;
}

static uint64_t fault_count(Env *e, const char *path, const char *kind)
{
    QDict *f = faults(e, path);
    uint64_t n = qdict_get_int(f, kind);

    qobject_unref(f);
    return n;
}

static bool fault_flag(Env *e, const char *path, const char *flag)
{
    QDict *f = faults(e, path);
    bool b = qdict_get_bool(f, flag);

    qobject_unref(f);
    return b;
}

/* The device with its RC QP connected to itself; its QOM path. */
static char *env_self(Env *e, void *obj, void *data)
{
    rt_env_basic(e, obj, data);
    rt_qp_to_self(e);
    return rt_qom_path(qrnic_qts(e->r));
}

/* A QP event of e->qp. */
static void inject_qp_event(Env *e, const char *path, const char *event)
{
    g_autofree char *args = g_strdup_printf("'handle': %u, 'event': '%s'",
                                            e->qp.qpn, event);

    inject_ok(e, path, "qp-event", args);
}

/* WRITE 'len' bytes of pattern 'seed' from offset 0 to offset 2048. */
static void post_write(Env *e, uint64_t wr_id, uint32_t len, uint8_t seed)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    uint8_t buf[256];

    g_assert_cmpuint(len, <=, sizeof(buf));
    rt_fill_pattern(buf, len, seed);
    qtest_memwrite(qrnic_qts(e->r), e->mr.buf, buf, len);
    rt_sge_of(&sge, &e->mr, 0, len);
    rt_send_wqe(&w, wr_id, RNIC_WR_RDMA_WRITE, 1);
    w.remote_addr = cpu_to_le64(e->mr.buf + 2048);
    w.rkey = cpu_to_le32(e->mr.rkey);
    qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
}

static void expect_cqe(Env *e, uint64_t wr_id, uint8_t status)
{
    struct rnic_cqe cqe;

    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
}

static void expect_eqe(Env *e, uint8_t type, uint32_t obj, uint32_t data)
{
    struct rnic_eqe eqe;

    qrnic_settle(e->r);
    g_assert_true(qrnic_eq_poll(e->r, &e->eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, type);
    g_assert_cmphex(le32_to_cpu(eqe.obj), ==, obj);
    g_assert_cmpuint(le32_to_cpu(eqe.data), ==, data);
}

static void expect_no_eqe(Env *e)
{
    struct rnic_eqe eqe;

    qrnic_settle(e->r);
    g_assert_false(qrnic_eq_poll(e->r, &e->eq, &eqe));
}

/*
 * wc-error: the first WRITE succeeds, the injected one completes with
 * RETRY_EXC_ERR and takes the QP to ERR, and the one behind it is
 * flushed, as after a real transport error.
 */
static void test_wc_error(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    uint8_t want[64], got[64];
    Env e;

    path = env_self(&e, obj, data);

    post_write(&e, 1, 64, 1);
    qrnic_ring_sq(e.r, &e.qp);
    expect_cqe(&e, 1, RNIC_WC_SUCCESS);
    rt_fill_pattern(want, sizeof(want), 1);
    qtest_memread(qrnic_qts(e.r), e.mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));

    args = g_strdup_printf("'qpn': %u, 'status': 'retry-exc-err'",
                           e.qp.qpn);
    inject_ok(&e, path, "wc-error", args);
    post_write(&e, 2, 64, 2);
    post_write(&e, 3, 64, 3);
    qrnic_ring_sq(e.r, &e.qp);
    expect_cqe(&e, 2, RNIC_WC_RETRY_EXC_ERR);
    expect_cqe(&e, 3, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(fault_count(&e, path, "wc-error"), ==, 1);
    rt_assert_cq_empty(&e, &e.cq);
}

/* The soak form: percent=P with a seed fails a repeatable completion. */
static void test_wc_error_percent(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    uint32_t rng = 7, first = 0;
    uint64_t i;
    Env e;

    path = env_self(&e, obj, data);

    /* The device draws xorshift32 from the seed, one draw per CQE. */
    for (;;) {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        first++;
        if (rng % 100 < 30) {
            break;
        }
    }
    g_assert_cmpuint(first, <, 32);
    args = g_strdup_printf("'status': 'rem-op-err', 'percent': 30,"
                           " 'seed': 7, 'count': 100");
    inject_ok(&e, path, "wc-error", args);
    for (i = 1; i <= first; i++) {
        post_write(&e, i, 16, i);
        qrnic_ring_sq(e.r, &e.qp);
        expect_cqe(&e, i, i == first ? RNIC_WC_REM_OP_ERR : RNIC_WC_SUCCESS);
    }
    g_assert_cmpuint(fault_count(&e, path, "wc-error"), ==, 1);

    inject_refused(&e, path, "wc-error", "'status': 'general-err',"
                   " 'percent': 101", "percent");
    inject_refused(&e, path, "wc-error", "'status': 'general-err',"
                   " 'qpn': 4095", "QP 0xfff");
}

/* The HMP form arms the same fault, with the same checks. */
static void test_hmp(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *out = NULL;
    Env e;

    path = env_self(&e, obj, data);

    out = qtest_hmp(qrnic_qts(e.r), "rnic_inject %s wc-error qpn=%u,"
                    "status=loc-prot-err", path, e.qp.qpn);
    g_assert_cmpstr(out, ==, "");
    post_write(&e, 1, 32, 1);
    qrnic_ring_sq(e.r, &e.qp);
    expect_cqe(&e, 1, RNIC_WC_LOC_PROT_ERR);
    g_free(out);

    out = qtest_hmp(qrnic_qts(e.r), "rnic_inject %s qp-event handle=99,"
                    "event=comm-est", path);
    g_assert_nonnull(strstr(out, "QP 0x63 does not exist"));
    g_free(out);
    out = qtest_hmp(qrnic_qts(e.r), "rnic_inject %s no-such-fault", path);
    g_assert_nonnull(strstr(out, "no-such-fault"));
    g_free(out);
    out = qtest_hmp(qrnic_qts(e.r), "rnic_inject nothing fatal");
    g_assert_nonnull(strstr(out, "not an rnic device"));
    g_free(out);

    out = qtest_hmp(qrnic_qts(e.r), "info rnic");
    g_assert_nonnull(strstr(out, "wc-error 1 "));
}

/* qp-event: the error events take the QP to ERR, the others only tell. */
static void test_qp_event(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    Env e;

    path = env_self(&e, obj, data);

    inject_qp_event(&e, path, "comm-est");
    expect_eqe(&e, RNIC_EQE_COMM_EST, e.qp.qpn, 0);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
    inject_qp_event(&e, path, "last-wqe");
    expect_eqe(&e, RNIC_EQE_QP_LAST_WQE, e.qp.qpn, 0);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);

    /* The QP's posted WRITE is flushed once the fatal event moves it. */
    inject_qp_event(&e, path, "access-error");
    expect_eqe(&e, RNIC_EQE_QP_ACCESS_ERR, e.qp.qpn, 0);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    post_write(&e, 9, 16, 9);
    qrnic_ring_sq(e.r, &e.qp);
    expect_cqe(&e, 9, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(fault_count(&e, path, "qp-event"), ==, 3);

    inject_refused(&e, path, "qp-event", "'handle': 1, 'event': 'srq-limit'",
                   "SRQ 0x1 does not exist");
    inject_refused(&e, path, "qp-event", "'handle': 77, 'event': 'qp-fatal'",
                   "QP 0x4d does not exist");
}

/* cq-error: the CQ error event, then the QP on that CQ is in ERR. */
static void test_cq_error(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    Env e;

    path = env_self(&e, obj, data);

    args = g_strdup_printf("'cqn': %u", e.cq.cqn);
    inject_ok(&e, path, "cq-error", args);
    expect_eqe(&e, RNIC_EQE_CQ_ERR, e.cq.cqn, 0);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_ERR);
    /* No CQE reaches a failed CQ, not even a flush. */
    post_write(&e, 1, 16, 1);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    rt_assert_cq_empty(&e, &e.cq);
    g_assert_cmpuint(fault_count(&e, path, "cq-error"), ==, 1);
    inject_refused(&e, path, "cq-error", "'cqn': 3", "CQ 0x3");
}

/* eq-overflow: the next event is lost and reported as lost at once. */
static void test_eq_overflow(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    Env e;

    path = env_self(&e, obj, data);

    inject_ok(&e, path, "eq-overflow", "'eqn': 0, 'count': 2");
    inject_qp_event(&e, path, "comm-est");
    expect_eqe(&e, RNIC_EQE_EQ_OVERFLOW, 0, 1);
    expect_no_eqe(&e);
    inject_qp_event(&e, path, "comm-est");
    expect_eqe(&e, RNIC_EQE_EQ_OVERFLOW, 0, 1);
    /* Two were lost: the third event arrives. */
    inject_qp_event(&e, path, "comm-est");
    expect_eqe(&e, RNIC_EQE_COMM_EST, e.qp.qpn, 0);
    g_assert_cmpuint(fault_count(&e, path, "eq-overflow"), ==, 2);
    inject_refused(&e, path, "eq-overflow", "'eqn': 1", "EQ 1");
}

/*
 * port-flap: LINK_UP clears with PORT_DOWN, a WRITE sent meanwhile is
 * lost on the wire, and after down-ms the link comes back with
 * PORT_ACTIVE and the WRITE's retransmission lands.
 */
static void test_port_flap(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    uint8_t want[32], got[32];
    Env e;

    rt_env_basic(&e, obj, data);
    path = rt_qom_path(qrnic_qts(e.r));
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, RNIC_STATUS_LINK_UP);
    inject_ok(&e, path, "port-flap", "'down-ms': 50");
    expect_eqe(&e, RNIC_EQE_PORT_DOWN, 1, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, 0);
    /* Our peer is the socket: nothing crosses a link that is down. */
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_write(&e, 1, 32, 1);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    rt_assert_no_frame(&e, 100);

    qtest_clock_step(qrnic_qts(e.r), 50 * 1000 * 1000);
    expect_eqe(&e, RNIC_EQE_PORT_ACTIVE, 1, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, RNIC_STATUS_LINK_UP);
    g_assert_cmpuint(fault_count(&e, path, "port-flap"), ==, 1);
    /* The link is back: the WRITE's retransmission reaches the peer. */
    qtest_clock_step(qrnic_qts(e.r), 100 * 1000 * 1000);
    {
        Roce f;

        rt_recv_roce_any(&e, &f);
        g_assert_cmpuint(f.opcode, ==, OPC_WRITE_ONLY);
        rt_fill_pattern(want, sizeof(want), 1);
        g_assert_cmpuint(f.payload_len, ==, sizeof(want));
        memcpy(got, f.payload, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    }
}

/*
 * fatal: DEVICE_FATAL on EQ 0, STATUS.FATAL with FATAL_CODE 2, and the
 * device stops: a command is not executed and a WRITE does not go out.
 * A reset brings it back.
 */
static void test_fatal(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    struct rnic_cmd cmd;
    uint32_t pi;
    Env e;

    rt_env_basic(&e, obj, data);
    path = rt_qom_path(qrnic_qts(e.r));
    rt_env_rc_qp(&e, RNIC_QPS_RTS);

    inject_ok(&e, path, "fatal", NULL);
    expect_eqe(&e, RNIC_EQE_DEVICE_FATAL, 0, RNIC_FATAL_INTERNAL);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL,
                    ==, RNIC_STATUS_FATAL);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_FATAL_CODE), ==,
                     RNIC_FATAL_INTERNAL);
    g_assert_true(fault_flag(&e, path, "stopped"));

    post_write(&e, 1, 16, 1);
    qrnic_ring_sq(e.r, &e.qp);
    qrnic_settle(e.r);
    rt_assert_no_frame(&e, 100);
    rt_assert_cq_empty(&e, &e.cq);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    pi = qrnic_readl(e.r, RNIC_REG_CMDQ_CI);
    qrnic_cmd_post(e.r, &cmd);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, pi);

    qrnic_reset(e.r);
    g_assert_false(fault_flag(&e, path, "stopped"));
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL,
                    ==, 0);
    rt_env_basic(&e, obj, data);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    post_write(&e, 2, 16, 2);
    qrnic_ring_sq(e.r, &e.qp);
    {
        Roce f;

        rt_recv_roce(&e, &f);
        g_assert_cmpuint(f.opcode, ==, OPC_WRITE_ONLY);
    }
    g_assert_cmpuint(fault_count(&e, path, "fatal"), ==, 1);
}

/* cmd-stall: commands wait for the stall, or for the reset. */
static void test_cmd_stall(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    struct rnic_cmd_resp resp;
    struct rnic_cmd cmd;
    uint32_t idx, ci;
    Env e;

    rt_env_basic(&e, obj, data);
    path = rt_qom_path(qrnic_qts(e.r));

    inject_ok(&e, path, "cmd-stall", "'ms': 30");
    g_assert_true(fault_flag(&e, path, "commands-stalled"));
    ci = qrnic_readl(e.r, RNIC_REG_CMDQ_CI);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    idx = qrnic_cmd_post(e.r, &cmd);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, ci);
    qtest_clock_step(qrnic_qts(e.r), 30 * 1000 * 1000);
    g_assert_true(qrnic_cmd_wait(e.r, idx, &resp, QRNIC_TIMEOUT_MS));
    g_assert_cmpuint(resp.status, ==, RNIC_CMD_OK);
    g_assert_false(fault_flag(&e, path, "commands-stalled"));

    /* Without ms, until the reset: not even seconds later. */
    inject_ok(&e, path, "cmd-stall", NULL);
    ci = qrnic_readl(e.r, RNIC_REG_CMDQ_CI);
    qrnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD);
    qrnic_cmd_post(e.r, &cmd);
    qtest_clock_step(qrnic_qts(e.r), 5ll * 1000 * 1000 * 1000);
    qrnic_settle(e.r);
    g_assert_cmpuint(qrnic_readl(e.r, RNIC_REG_CMDQ_CI), ==, ci);
    qrnic_reset(e.r);
    g_assert_false(fault_flag(&e, path, "commands-stalled"));
    rt_env_basic(&e, obj, data);
    g_assert_cmpuint(fault_count(&e, path, "cmd-stall"), ==, 2);
}

/* An armed EQ 0 and one COMM_EST: one message of vector 0, if sent. */
static void eq0_event(Env *e, const char *path)
{
    struct rnic_eqe eqe;

    qrnic_doorbell(e->r, 0, RNIC_DB_EQ,
                   ((uint64_t)e->eq.ci << 32) | RNIC_DB_ARM | 0);
    inject_qp_event(e, path, "comm-est");
    qrnic_settle(e->r);
    g_assert_true(qrnic_eq_poll(e->r, &e->eq, &eqe));
    g_assert_cmpuint(eqe.type, ==, RNIC_EQE_COMM_EST);
}

/* irq-drop and irq-delay, seen where vector 0's message writes. */
static void test_irq(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    QTestState *qts;
    uint64_t mbox;
    Env e;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    path = rt_qom_path(qts);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    mbox = qrnic_alloc(e.r, 64);
    qtest_writel(qts, mbox, 0);
    qpci_msix_enable(&e.r->dev);
    rt_msix_entry(e.r, 0, mbox, MSIX_MAGIC);

    eq0_event(&e, path);
    g_assert_cmphex(qtest_readl(qts, mbox), ==, MSIX_MAGIC);

    qtest_writel(qts, mbox, 0);
    inject_ok(&e, path, "irq-drop", "'vector': 0");
    eq0_event(&e, path);
    g_assert_cmphex(qtest_readl(qts, mbox), ==, 0);
    eq0_event(&e, path);
    g_assert_cmphex(qtest_readl(qts, mbox), ==, MSIX_MAGIC);
    g_assert_cmpuint(fault_count(&e, path, "irq-drop"), ==, 1);

    qtest_writel(qts, mbox, 0);
    inject_ok(&e, path, "irq-delay", "'count': 1, 'ms': 20");
    eq0_event(&e, path);
    g_assert_cmphex(qtest_readl(qts, mbox), ==, 0);
    qtest_clock_step(qts, 20 * 1000 * 1000);
    qrnic_settle(e.r);
    g_assert_cmphex(qtest_readl(qts, mbox), ==, MSIX_MAGIC);
    g_assert_cmpuint(fault_count(&e, path, "irq-delay"), ==, 1);
    inject_refused(&e, path, "irq-drop", "'vector': 5", "vector 5");
}

/*
 * With one DMA failure armed, a WRITE to the self-connected QP fails: the
 * requester sees an error, the target memory keeps its zeros, the fault
 * is counted once and the QP is in ERR.
 */
static void expect_write_lost(Env *e, const char *path)
{
    uint8_t zero[64] = {}, got[64];
    struct rnic_cqe cqe;

    post_write(e, 1, 64, 1);
    qrnic_ring_sq(e->r, &e->qp);
    g_assert_true(qrnic_cq_wait(e->r, &e->cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 1);
    g_assert_cmpuint(cqe.status, !=, RNIC_WC_SUCCESS);
    qtest_memread(qrnic_qts(e->r), e->mr.buf + 2048, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    g_assert_cmpuint(fault_count(e, path, "dma-fail"), ==, 1);
    g_assert_cmpuint(rt_qp_state(e, &e->qp), ==, RNIC_QPS_ERR);
}

/*
 * dma-fail: the WRITE's data cannot land in the target's memory, the
 * responder fails the request and the requester sees the error; the
 * memory keeps its old contents.
 */
static void test_dma_fail(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    Env e;

    path = env_self(&e, obj, data);

    inject_ok(&e, path, "dma-fail", "'count': 1");
    expect_write_lost(&e, path);
}

/*
 * dma-fail aimed at a QP: a command's response, written by DMA outside
 * any packet of that QP, still lands; the WRITE's data, written while the
 * device handles the QP's packet, does not.  A QP that does not exist is
 * refused.
 */
static void test_dma_fail_qp(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    Env e;

    path = env_self(&e, obj, data);

    inject_refused(&e, path, "dma-fail", "'qpn': 999", "QP 0x3e7");
    args = g_strdup_printf("'qpn': %u, 'count': 1", e.qp.qpn);
    inject_ok(&e, path, "dma-fail", args);
    g_assert_cmpuint(rt_qp_state(&e, &e.qp), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(fault_count(&e, path, "dma-fail"), ==, 0);
    expect_write_lost(&e, path);
}

/*
 * cqe-corrupt: the CQE names the slot half the SQ away and a wr_id the
 * guest never posted; the CQE after it is intact.
 */
static void test_cqe_corrupt(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    unsigned half;
    struct rnic_cqe cqe;
    Env e;

    path = env_self(&e, obj, data);
    half = 1u << (e.qp.sq_log_size - 1);
    args = g_strdup_printf("'qpn': %u", e.qp.qpn);
    inject_ok(&e, path, "cqe-corrupt", args);
    post_write(&e, 1, 16, 1);
    post_write(&e, 2, 16, 2);
    qrnic_ring_sq(e.r, &e.qp);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xbad0bad0bad0bad0ull);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, half);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    expect_cqe(&e, 2, RNIC_WC_SUCCESS);
    g_assert_cmpuint(fault_count(&e, path, "cqe-corrupt"), ==, 1);
    inject_refused(&e, path, "cqe-corrupt", "'qpn': 99", "QP 0x63");
}

/*
 * cqe-corrupt on a receive from an SRQ: the index moves half the SRQ
 * away, unmasked as SRQ indices are; the next receive's CQE is intact.
 */
static void test_cqe_corrupt_srq(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *args = NULL;
    QRnicQp srq = { .rq_log_size = 3 };
    struct rnic_sge sge;
    struct rnic_cqe cqe;
    uint32_t srqn, qpn, i;
    Env e;

    path = env_self(&e, obj, data);
    srq.rq_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    srqn = rt_create_srq(&e, 0, srq.rq_log_size, srq.rq_buf);
    qpn = rt_create_srq_qp(&e, srqn);
    g_assert_cmpuint(rt_qp_modify(&e, &(QRnicQp) { .qpn = qpn }, RNIC_QPS_RTR,
                                  MASK_TO_RTR), ==, RNIC_CMD_OK);
    for (i = 0; i < 2; i++) {
        rt_sge_of(&sge, &e.mr, i * 64, 64);
        qrnic_post_recv(e.r, &srq, 0x200 + i, &sge, 1);
    }
    qrnic_doorbell(e.r, 0, RNIC_DB_SRQ, srqn | (uint64_t)srq.rq_pi << 32);
    args = g_strdup_printf("'qpn': %u", qpn);
    inject_ok(&e, path, "cqe-corrupt", args);
    rt_srq_send(&e, qpn, QP_RQ_PSN, 1, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xbad0bad0bad0bad0ull);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 0 + 4);
    rt_srq_send(&e, qpn, QP_RQ_PSN + 1, 2, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x201);
    g_assert_cmpuint(le16_to_cpu(cqe.wqe_idx), ==, 1);
    g_assert_cmpuint(fault_count(&e, path, "cqe-corrupt"), ==, 1);
}

/*
 * gid-change: the entry changes, goes and comes back, each time with a
 * GID_CHANGE event naming its index; `info rnic` shows the table.
 */
/* Injects a GID change of @index; `info rnic` must then show @line. */
static void gid_change(Env *e, const char *path, const char *args,
                       uint32_t index, const char *line)
{
    char *out;

    inject_ok(e, path, "gid-change", args);
    expect_eqe(e, RNIC_EQE_GID_CHANGE, index, 0);
    out = qtest_hmp(qrnic_qts(e->r), "info rnic");
    if (line[0] == '!') {
        g_assert_null(strstr(out, line + 1));
    } else {
        g_assert_nonnull(strstr(out, line));
    }
    g_free(out);
}

/*
 * gid-change: the entry changes, goes, and an empty one appears, each
 * time with a GID_CHANGE event naming its index.
 */
static void test_gid_change(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = NULL;
    g_autofree char *out = NULL;
    Env e;

    rt_env_basic(&e, obj, data);
    path = rt_qom_path(qrnic_qts(e.r));
    out = qtest_hmp(qrnic_qts(e.r), "info rnic");
    g_assert_nonnull(strstr(out, "gid 0: ::ffff:10.0.0.1 (RoCE v2)"));

    gid_change(&e, path, "'index': 0, 'gid': '::ffff:10.0.0.9'", 0,
               "gid 0: ::ffff:10.0.0.9 (RoCE v2)");
    gid_change(&e, path, "'index': 0, 'remove': true", 0, "!gid 0:");
    /* An empty entry comes back as RoCE v2 with the device's MAC. */
    gid_change(&e, path, "'index': 2, 'gid': 'fe80::1'", 2,
               "gid 2: fe80::1 (RoCE v2)");
    g_assert_cmpuint(fault_count(&e, path, "gid-change"), ==, 3);

    inject_refused(&e, path, "gid-change", "'index': 4, 'remove': true",
                   "GID index 4");
    inject_refused(&e, path, "gid-change", "'index': 1, 'gid': 'nope'",
                   "not a GID");
    inject_refused(&e, path, "gid-change", "'index': 1", "either");
}

static void register_rnic_inject_test(void)
{
    rt_use_node_c(true);
    rt_add("inject-wc-error", test_wc_error);
    rt_add("inject-wc-error-percent", test_wc_error_percent);
    rt_add("inject-hmp", test_hmp);
    rt_add("inject-qp-event", test_qp_event);
    rt_add("inject-cq-error", test_cq_error);
    rt_add("inject-eq-overflow", test_eq_overflow);
    rt_add("inject-port-flap", test_port_flap);
    rt_add("inject-fatal", test_fatal);
    rt_add("inject-cmd-stall", test_cmd_stall);
    rt_add("inject-irq", test_irq);
    rt_add("inject-dma-fail", test_dma_fail);
    rt_add("inject-dma-fail-qp", test_dma_fail_qp);
    rt_add("inject-cqe-corrupt", test_cqe_corrupt);
    rt_add("inject-cqe-corrupt-srq", test_cqe_corrupt_srq);
    rt_add("inject-gid-change", test_gid_change);
    rt_use_node_c(false);
}

libqos_init(register_rnic_inject_test);

#endif /* _WIN32 */
