/*
 * QTest testcases for the rnic RoCEv2 RNIC, seen from the host and the PCI
 * bus: the descriptions of its properties, its state over QMP (qom-get),
 * and its function reset through the PCI power management capability
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "hw/pci/pci_regs.h"
#include "rnic-test-common.h"

#ifndef _WIN32

/* ---- function-level reset ---- */

/*
 * D3hot -> D0 through the PM capability (No_Soft_Reset clear) resets the
 * function as the CTRL register's reset does: disabled, every object gone;
 * D3hot alone keeps the state.  This is Linux's "pm" reset method.
 */
static void test_pm_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QPCIDevice *dev;
    uint32_t pdn;
    uint8_t pm;
    Env e;

    rt_env_basic(&e, obj, data);
    dev = &e.r->dev;
    pm = qpci_find_capability(dev, PCI_CAP_ID_PM, 0);
    g_assert_cmpuint(pm, !=, 0);
    g_assert_cmphex(qpci_config_readw(dev, pm + PCI_PM_CTRL) &
                    (PCI_PM_CTRL_NO_SOFT_RESET | PCI_PM_CTRL_STATE_MASK),
                    ==, 0);

    qpci_config_writew(dev, pm + PCI_PM_CTRL, 3);
    g_assert_cmphex(qpci_config_readw(dev, pm + PCI_PM_CTRL) &
                    PCI_PM_CTRL_STATE_MASK, ==, 3);
    qpci_config_writew(dev, pm + PCI_PM_CTRL, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_CTRL), ==, 0);
    g_assert_cmphex(qrnic_readl(e.r, RNIC_REG_STATUS) & RNIC_STATUS_READY,
                    ==, 0);
    e.r->cmdq = 0;
    e.r->cmdq_pi = 0;

    /* Enabled again, the device starts from nothing: PD 1 is free. */
    qrnic_enable(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn, ==, e.pdn);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_CQ, 0, e.cq.cqn),
                     ==, RNIC_CMD_ERR_HANDLE);
}

/* ---- the device's state over QMP ---- */

static QDict *rnic_qom_get(QTestState *qts, const char *path,
                           const char *prop)
{
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments':"
                                 " {'path': %s, 'property': %s}}",
                            path, prop);

    g_assert(qdict_haskey(resp, "return"));
    return resp;
}

/*
 * qom-get of "objects", "counters" and "qps" reports what the guest made,
 * split into kernel and user (verbs program) objects, and the counts go
 * back to zero when the objects go; HMP "info rnic" shows the same.
 */
static void test_qom_state(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *qts;
    QDict *resp, *objs, *all, *user;
    QList *qps;
    uint32_t uctx, pdn;
    char *path;
    Env e;

    rt_env_basic(&e, obj, data);
    qts = qrnic_qts(e.r);
    rt_env_rc_qp(&e, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_alloc_uctx(e.r, &uctx), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, uctx, &pdn), ==, RNIC_CMD_OK);
    path = rt_qom_path(qts);

    resp = rnic_qom_get(qts, path, "objects");
    objs = qdict_get_qdict(resp, "return");
    all = qdict_get_qdict(objs, "all");
    user = qdict_get_qdict(objs, "user");
    g_assert_cmpint(qdict_get_int(all, "pd"), ==, 2);
    g_assert_cmpint(qdict_get_int(user, "pd"), ==, 1);
    g_assert_cmpint(qdict_get_int(all, "uctx"), ==, 1);
    g_assert_cmpint(qdict_get_int(all, "cq"), ==, 1);
    g_assert_cmpint(qdict_get_int(all, "eq"), ==, 1);
    g_assert_cmpint(qdict_get_int(all, "mr"), ==, 1);
    g_assert_cmpint(qdict_get_int(all, "qp"), ==, 1);
    g_assert_cmpint(qdict_get_int(user, "qp"), ==, 0);
    g_assert_cmpint(qdict_get_int(objs, "host-mem"), >, 0);
    qobject_unref(resp);

    resp = rnic_qom_get(qts, path, "qps");
    qps = qdict_get_qlist(resp, "return");
    g_assert_cmpuint(qlist_size(qps), ==, 1);
    all = qobject_to(QDict, qlist_peek(qps));
    g_assert_cmpint(qdict_get_int(all, "qpn"), ==, e.qp.qpn);
    g_assert_cmpstr(qdict_get_str(all, "type"), ==, "RC");
    g_assert_cmpstr(qdict_get_str(all, "state"), ==, "RTS");
    qobject_unref(resp);

    resp = rnic_qom_get(qts, path, "counters");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(resp, "return"),
                                  "guest_errors"), ==,
                    qrnic_counter(e.r, RNIC_CNT_GUEST_ERR));
    g_assert_true(qdict_haskey(qdict_get_qdict(resp, "return"), "tx_pkts"));
    qobject_unref(resp);

    /* The same for people: HMP info rnic. */
    {
        g_autofree char *out = qtest_hmp(qts, "info rnic");
        g_autofree char *qp = g_strdup_printf("qp 0x%x: RC RTS, uctx 0",
                                              e.qp.qpn);

        g_assert_nonnull(strstr(out, path));
        g_assert_nonnull(strstr(out, "52:54:00:12:34:66"));
        g_assert_nonnull(strstr(out, qp));
        g_assert_nonnull(strstr(out, "    uctx 1   uctx 0 pd 1 cq 0"));
        g_assert_nonnull(strstr(out, "guest_errors"));
    }

    /* Gone from the device, gone from the counts. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, uctx, pdn), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DEALLOC_UCTX, 0, uctx), ==,
                     RNIC_CMD_OK);
    resp = rnic_qom_get(qts, path, "objects");
    user = qdict_get_qdict(qdict_get_qdict(resp, "return"), "user");
    g_assert_cmpint(qdict_get_int(user, "pd"), ==, 0);
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(qdict_get_qdict(resp,
                    "return"), "all"), "uctx"), ==, 0);
    qobject_unref(resp);
    g_free(path);
}

/* ---- live migration ---- */

/*
 * A second QEMU like the test's, waiting for an incoming migration, with
 * a socket of its own in place of the test's netdev socket; @from/@to
 * replace one device option (NULL: none).
 */
static QTestState *rnic_mig_dest(int *peer_fd, const char *from,
                                 const char *to)
{
    g_autofree char *old_sock = g_strdup_printf("socket,fd=%d,",
                                                rt_cmd_line_fd);
    g_autofree char *new_sock = NULL;
    g_autofree char *cmd = NULL;
    g_auto(GStrv) parts = NULL;
    GString *line;
    QTestState *qts;
    gssize pos;
    int sv[2];

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    new_sock = g_strdup_printf("socket,fd=%d,", sv[1]);
    parts = g_strsplit(rt_cmd_line, old_sock, 2);
    g_assert_nonnull(parts[1]);
    line = g_string_new(parts[0]);
    g_string_append(line, new_sock);
    g_string_append(line, parts[1]);
    if (from) {
        const char *at = strstr(line->str, from);

        g_assert_nonnull(at);
        pos = at - line->str;
        g_string_erase(line, pos, strlen(from));
        g_string_insert(line, pos, to);
    }
    g_string_append(line, " -incoming defer");
    cmd = g_string_free(line, false);
    qts = qtest_init(cmd);
    close(sv[1]);
    *peer_fd = sv[0];
    return qts;
}

/* Migrates @src to @dst over a unix socket; the source's final status. */
static char *rnic_mig_run(QTestState *src, QTestState *dst)
{
    g_autofree char *uri = g_strdup_printf("unix:%s/rnic-mig-%d.sock",
                                           g_get_tmp_dir(), getpid());
    char *status = NULL;
    QDict *resp;
    int i;

    /* The return path tells the source whether the destination loaded. */
    for (i = 0; i < 2; i++) {
        qtest_qmp_assert_success(i ? dst : src,
                                 "{'execute': 'migrate-set-capabilities',"
                                 " 'arguments': {'capabilities': ["
                                 " {'capability': 'return-path',"
                                 "  'state': true}]}}");
    }
    /*
     * The destination would announce the VM's MACs with RARP frames, on
     * the real clock; the test's socket only expects the device's RoCE.
     */
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-set-parameters',"
                                  " 'arguments': {'announce-rounds': 0}}");
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming',"
                                  " 'arguments': {'uri': %s}}", uri);
    qtest_qmp_assert_success(src, "{'execute': 'migrate',"
                                  " 'arguments': {'uri': %s}}", uri);
    for (i = 0; i < 3000 && !status; i++) {
        const char *st;

        resp = qtest_qmp(src, "{'execute': 'query-migrate'}");
        st = qdict_get_try_str(qdict_get_qdict(resp, "return"), "status");
        if (st && (!strcmp(st, "completed") || !strcmp(st, "failed"))) {
            status = g_strdup(st);
        }
        qobject_unref(resp);
        if (!status) {
            g_usleep(10 * 1000);
        }
    }
    unlink(uri + strlen("unix:"));
    g_assert_nonnull(status);
    return status;
}

/*
 * The env's RC QP in RTS with @out SENT (wr_id 0x77, not ACKed) and a
 * RECV of @recv_len bytes at MR offset 0x800 posted (wr_id 0x55): a
 * source with work in flight on both sides.
 */
static QTestState *rnic_mig_busy_qp(Env *e, void *obj, void *data,
                                    const uint8_t *out, size_t len,
                                    uint32_t recv_len)
{
    struct rnic_send_wqe w;
    struct rnic_sge sge;
    QTestState *src;
    Roce f;

    rt_env_basic(e, obj, data);
    rt_env_rc_qp(e, RNIC_QPS_RTS);
    src = qrnic_qts(e->r);
    qtest_memwrite(src, e->mr.buf, out, len);
    rt_sge_of(&sge, &e->mr, 0, len);
    rt_send_wqe(&w, 0x77, RNIC_WR_SEND, 1);
    qrnic_post_send(e->r, &e->qp, &w, &sge, 1);
    qrnic_ring_sq(e->r, &e->qp);
    rt_recv_roce(e, &f);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    rt_sge_of(&sge, &e->mr, 0x800, recv_len);
    qrnic_post_recv(e->r, &e->qp, 0x55, &sge, 1);
    qrnic_ring_rq(e->r, &e->qp);
    qrnic_settle(e->r);
    return src;
}

/*
 * A VM migrates while its RC QP has a SEND in flight (sent, not ACKed)
 * and a RECV posted.  The destination's device goes on as if nothing
 * happened: same counters and QP state, it resends the SEND from the
 * guest memory that came along when its ACK timer fires, completes it
 * on the ACK, and lands an incoming SEND and WRITE where the migrated
 * RQ and MR say.
 */
static void test_migrate_rc(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *src, *dst;
    struct rnic_cqe cqe;
    uint8_t out[48], in[40], got[48];
    g_autofree char *status = NULL;
    g_autofree char *path = NULL;
    QDict *resp, *qp;
    Roce f;
    Env e;
    int fd;

    rt_fill_pattern(out, sizeof(out), 0x5a);
    src = rnic_mig_busy_qp(&e, obj, data, out, sizeof(out), sizeof(in));

    dst = rnic_mig_dest(&fd, NULL, NULL);
    status = rnic_mig_run(src, dst);
    g_assert_cmpstr(status, ==, "completed");
    e.r->dev.bus->qts = dst;
    e.fd = fd;

    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_TX_PKTS), ==, 1);
    path = rt_qom_path(dst);
    resp = rnic_qom_get(dst, path, "qps");
    qp = qobject_to(QDict, qlist_peek(qdict_get_qlist(resp, "return")));
    g_assert_cmpint(qdict_get_int(qp, "qpn"), ==, e.qp.qpn);
    g_assert_cmpstr(qdict_get_str(qp, "state"), ==, "RTS");
    qobject_unref(resp);

    /* The ACK timer came along; the payload comes from migrated RAM. */
    qtest_clock_step(dst, 300 * 1000 * 1000);
    rt_recv_roce(&e, &f);
    g_assert_cmphex(f.opcode, ==, OPC_SEND_ONLY);
    g_assert_cmphex(f.psn, ==, QP_SQ_PSN);
    g_assert_cmpmem(f.payload, f.payload_len, out, sizeof(out));
    g_assert_cmpuint(qrnic_counter(e.r, RNIC_CNT_RETRANSMITS), >=, 1);
    rt_send_ack(&e, QP_SQ_PSN, 1);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RNIC_WC_SEND);

    /* The RECV posted before the move takes a SEND after it. */
    rt_fill_pattern(in, sizeof(in), 0xc3);
    rt_roce_init_payload(&f, OPC_SEND_ONLY, e.qp.qpn, QP_RQ_PSN, in,
                         sizeof(in));
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN);
    g_assert_true(qrnic_cq_wait(e.r, &e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x55);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sizeof(in));
    qtest_memread(dst, e.mr.buf + 0x800, got, sizeof(in));
    g_assert_cmpmem(got, sizeof(in), in, sizeof(in));

    /* A WRITE through the migrated MR's rkey and page list. */
    rt_fill_pattern(got, sizeof(got), 0x19);
    rt_roce_init_payload(&f, OPC_WRITE_ONLY, e.qp.qpn, QP_RQ_PSN + 1, got,
                         sizeof(got));
    f.va = e.mr.buf + 0x400;
    f.rkey = e.mr.rkey;
    f.dma_len = sizeof(got);
    rt_send_roce(&e, &f);
    rt_expect_ack(&e, AETH_ACK(0), QP_RQ_PSN + 1);
    qtest_memread(dst, e.mr.buf + 0x400, out, sizeof(got));
    g_assert_cmpmem(out, sizeof(got), got, sizeof(got));
    g_assert_cmpuint(rt_guest_errs(e.r), ==, 0);

    /* The framework cleans up through the (stopped) source. */
    e.r->dev.bus->qts = src;
    close(fd);
    qtest_quit(dst);
}

/*
 * An InfiniBand port's state goes along: what the SM set through the
 * SMA (a PortInfo Set: LID, SM LID, LMC, ARMED) is the destination's.
 */
static void test_migrate_ib(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rnic_port_attr pa;
    struct rnic_cmd cmd;
    g_autofree char *status = NULL;
    QTestState *src, *dst;
    uint8_t mad[RNIC_MAD_SIZE] = { 1, 0x01, 1, 0x02 };
    uint32_t out[6];
    uint64_t in_buf, out_buf;
    Env e;
    int fd;

    rt_env_init(&e, obj, data);
    qrnic_enable(e.r);
    src = qrnic_qts(e.r);
    in_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    out_buf = qrnic_alloc(e.r, QRNIC_PAGE);
    /* SubnSet(PortInfo) of port 1: LID 0x12, SM LID 1, LMC 1, Armed. */
    stw_be_p(mad + 16, 0x0015);
    stl_be_p(mad + 20, 1);
    stw_be_p(mad + 64 + 16, 0x12);
    stw_be_p(mad + 64 + 18, 1);
    mad[64 + 32] = RNIC_PORT_ARMED;
    mad[64 + 34] = 1;
    qtest_memwrite(src, in_buf, mad, sizeof(mad));
    qrnic_cmd_init(&cmd, RNIC_CMD_MAD_IFC);
    cmd.u.mad_ifc.in_addr = cpu_to_le64(in_buf);
    cmd.u.mad_ifc.out_addr = cpu_to_le64(out_buf);
    cmd.u.mad_ifc.port = 1;
    cmd.u.mad_ifc.flags = RNIC_MAD_IFC_QP0;
    g_assert_cmpuint(qrnic_cmd(e.r, &cmd, out), ==, RNIC_CMD_OK);
    g_assert_cmpuint(out[RNIC_OUT_MAD_REPLY], ==, 1);
    qtest_memread(src, out_buf, mad, sizeof(mad));
    g_assert_cmphex(lduw_be_p(mad + 4), ==, 0);

    dst = rnic_mig_dest(&fd, NULL, NULL);
    status = rnic_mig_run(src, dst);
    g_assert_cmpstr(status, ==, "completed");
    e.r->dev.bus->qts = dst;
    e.fd = fd;

    g_assert_cmpuint(qrnic_query(e.r, RNIC_CMD_QUERY_PORT, 1, out_buf,
                                 sizeof(pa)), ==, RNIC_CMD_OK);
    qtest_memread(dst, out_buf, &pa, sizeof(pa));
    g_assert_cmpuint(pa.link_layer, ==, RNIC_LINK_INFINIBAND);
    g_assert_cmpuint(pa.state, ==, RNIC_PORT_ARMED);
    g_assert_cmpuint(le16_to_cpu(pa.lid), ==, 0x12);
    g_assert_cmpuint(le16_to_cpu(pa.sm_lid), ==, 1);
    g_assert_cmpuint(pa.lmc, ==, 1);
    qtest_quit(dst);
}

/*
 * A destination whose properties cannot hold the source's objects refuses
 * the stream: it exits with an error instead of writing past its tables,
 * and the source goes on with its device intact.
 */
static void test_migrate_mismatch(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    g_autofree char *status = NULL;
    QTestState *src, *dst;
    uint32_t pdn[2];
    Env e;
    int fd;

    rt_env_basic(&e, obj, data);
    src = qrnic_qts(e.r);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn[0]), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn[1]), ==, RNIC_CMD_OK);
    g_assert_cmpuint(pdn[1], ==, 3);

    dst = rnic_mig_dest(&fd, "max-pd=3,", "max-pd=2,");
    qtest_set_expected_status(dst, 1);
    status = rnic_mig_run(src, dst);
    g_assert_cmpstr(status, ==, "failed");
    qtest_quit(dst);
    close(fd);

    /* The source runs on: its PDs are all there, and the table is full. */
    g_assert_cmpuint(qrnic_destroy(e.r, RNIC_CMD_DESTROY_PD, 0, pdn[1]), ==,
                     RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn[1]), ==, RNIC_CMD_OK);
    g_assert_cmpuint(qrnic_create_pd(e.r, 0, &pdn[0]), ==,
                     RNIC_CMD_ERR_RESOURCE);
}

/*
 * Loading a migration stream must not trust it.  A real stream of a
 * device with an RC QP in RTS (a SEND in flight, a RECV posted, an MR,
 * CQ, EQ, PD and GID) is saved to a file, and seeded mutations of its
 * rnic section are loaded into fresh destinations: each is refused, or
 * loads and then runs (the VM started, the clock stepped past the ACK
 * timer) without QEMU dying.  Run under ASan, any out-of-bounds access
 * of a loaded index, size or shift aborts the destination and fails the
 * test.  RNIC_MIG_FUZZ_ITERS and RNIC_MIG_FUZZ_SEED make longer runs.
 */
#define RNIC_MIG_FUZZ_ITERS     60

/* Offsets of the rnic section's body and footer in a saved stream. */
static void rnic_mig_section(const uint8_t *buf, size_t len, size_t *body,
                             size_t *end)
{
    static const char tail[] = "/rnic";
    size_t i, n = strlen(tail);

    for (i = 6; i + n + 8 <= len; i++) {
        uint8_t idlen = buf[i - 1];
        uint32_t sid;
        size_t j;

        /* type 0x04 (full section), section id, idstr length, idstr */
        if (memcmp(buf + i + idlen - n, tail, n) || idlen < n ||
            i + idlen + 8 > len || buf[i - 6] != 0x04 ||
            memchr(buf + i, 0, idlen)) {
            continue;
        }
        sid = ldl_be_p(buf + i - 5);
        *body = i + idlen + 8;             /* instance id, version id */
        for (j = *body; j + 5 <= len; j++) {
            if (buf[j] == 0x7e && ldl_be_p(buf + j + 1) == sid) {
                *end = j;
                return;
            }
        }
    }
    g_assert_not_reached();
}

/*
 * One mutation: a word or a byte of the section set to an edge value.
 * Most of a section is the zeroes of unused shadow WQE and replay slots,
 * while counts, sizes, shifts and indices are mostly not zero, so three
 * mutations in four go to a byte that is not zero (@nz lists them).
 */
static void rnic_mig_mutate(GRand *rnd, uint8_t *sec, size_t len,
                            const GArray *nz)
{
    static const uint32_t words[] = {
        0, 1, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000,
        0xfffffffe, 0xffffffff,
    };
    size_t at = g_rand_int_range(rnd, 0, len);

    if (nz->len && g_rand_int_range(rnd, 0, 4)) {
        at = g_array_index(nz, size_t, g_rand_int_range(rnd, 0, nz->len));
        /* A word that ends with this byte, as a big-endian value would. */
        if (at >= 3 && g_rand_boolean(rnd)) {
            at -= 3;
        }
    }

    switch (g_rand_int_range(rnd, 0, 3)) {
    case 0:
        if (at + 4 <= len) {
            stl_be_p(sec + at, words[g_rand_int_range(rnd, 0,
                                                      ARRAY_SIZE(words))]);
        }
        break;
    case 1:
        sec[at] = g_rand_int_range(rnd, 0, 256);
        break;
    default:
        sec[at] ^= 1u << g_rand_int_range(rnd, 0, 8);
        break;
    }
}

/* Loads @path into a fresh destination; true if it was accepted. */
static bool rnic_mig_load_file(const char *path)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QTestState *dst;
    const char *st = NULL;
    QDict *resp = NULL;
    bool loaded;
    int fd, i;

    dst = rnic_mig_dest(&fd, NULL, NULL);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming',"
                                  " 'arguments': {'uri': %s,"
                                  " 'exit-on-error': false}}", uri);
    for (i = 0; i < 2000; i++) {
        resp = qtest_qmp(dst, "{'execute': 'query-migrate'}");
        st = qdict_get_try_str(qdict_get_qdict(resp, "return"), "status");
        if (st && (!strcmp(st, "completed") || !strcmp(st, "failed"))) {
            break;
        }
        qobject_unref(resp);
        resp = NULL;
        g_usleep(5 * 1000);
    }
    g_assert_nonnull(resp);
    loaded = !strcmp(st, "completed");
    qobject_unref(resp);
    if (loaded) {
        /* Let the loaded device run: its bottom half and its timers. */
        qtest_qmp_assert_success(dst, "{'execute': 'cont'}");
        qtest_clock_step(dst, 500 * 1000 * 1000);
        qtest_clock_step(dst, 500 * 1000 * 1000);
    }
    /* qtest_quit() fails the test if the destination died on a signal. */
    qtest_quit(dst);
    close(fd);
    return loaded;
}

static void test_migrate_mutated(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    const char *env_iters = g_getenv("RNIC_MIG_FUZZ_ITERS");
    const char *env_seed = g_getenv("RNIC_MIG_FUZZ_SEED");
    unsigned iters = env_iters ? g_ascii_strtoull(env_iters, NULL, 0)
                               : RNIC_MIG_FUZZ_ITERS;
    guint32 seed = env_seed ? g_ascii_strtoull(env_seed, NULL, 0)
                            : 0x6d696721;
    g_autofree char *orig_path = NULL, *mut_path = NULL, *uri = NULL;
    g_autofree uint8_t *orig = NULL;
    g_autoptr(GRand) rnd = g_rand_new_with_seed(seed);
    g_autoptr(GArray) nz = NULL;
    unsigned refused = 0, loaded = 0, it;
    size_t len, body, end;
    QTestState *src;
    QDict *resp;
    uint8_t out[48];
    Env e;
    int i;

    rt_fill_pattern(out, sizeof(out), 0x3c);
    src = rnic_mig_busy_qp(&e, obj, data, out, sizeof(out), 64);

    orig_path = g_strdup_printf("%s/rnic-mig-%d.bin", g_get_tmp_dir(),
                                getpid());
    mut_path = g_strdup_printf("%s/rnic-mig-%d-mut.bin", g_get_tmp_dir(),
                               getpid());
    uri = g_strdup_printf("file:%s", orig_path);
    qtest_qmp_assert_success(src, "{'execute': 'migrate',"
                                  " 'arguments': {'uri': %s}}", uri);
    for (i = 0; i < 3000; i++) {
        const char *st;
        bool done;

        resp = qtest_qmp(src, "{'execute': 'query-migrate'}");
        st = qdict_get_try_str(qdict_get_qdict(resp, "return"), "status");
        g_assert_true(!st || strcmp(st, "failed"));
        done = st && !strcmp(st, "completed");
        qobject_unref(resp);
        if (done) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_true(g_file_get_contents(orig_path, (char **)&orig, &len, NULL));
    rnic_mig_section(orig, len, &body, &end);
    g_test_message("stream of %zu bytes, rnic section [%zu, %zu), seed "
                   "0x%x", len, body, end, seed);
    g_assert_cmpuint(end - body, >, 1024);
    nz = g_array_new(false, false, sizeof(size_t));
    for (size_t k = body; k < end; k++) {
        if (orig[k]) {
            size_t off = k - body;

            g_array_append_val(nz, off);
        }
    }

    /* The stream as saved loads: the mutations start from a good one. */
    g_assert_true(rnic_mig_load_file(orig_path));

    for (it = 0; it < iters; it++) {
        g_autofree uint8_t *mut = g_memdup2(orig, len);
        unsigned n = g_rand_int_range(rnd, 1, 4);

        while (n--) {
            rnic_mig_mutate(rnd, mut + body, end - body, nz);
        }
        g_assert_true(g_file_set_contents(mut_path, (char *)mut, len, NULL));
        if (rnic_mig_load_file(mut_path)) {
            loaded++;
        } else {
            refused++;
        }
    }
    g_test_message("%u mutated streams: %u refused, %u loaded and ran; "
                   "%u of the section's bytes are not zero", iters, refused,
                   loaded, nz->len);
    /* Both outcomes happen, or the mutations did not reach the checks. */
    g_assert_cmpuint(refused, >, 0);
    g_assert_cmpuint(loaded, >, 0);
    unlink(orig_path);
    unlink(mut_path);
}

/* ---- device properties ---- */

/*
 * Every property rnic defines says what it does in `-device rnic,help`;
 * only those the PCI device class brings along may lack a description.
 */
static void test_props_described(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const char *const inherited[] = {
        "acpi-index", "busnr", "failover_pair_id", "rombar", "romfile",
        "romsize",
    };
    QTestState *qts = qrnic_qts(obj);
    QDict *resp;
    QList *props;
    QListEntry *ent;
    unsigned ours = 0;

    resp = qtest_qmp(qts, "{'execute': 'device-list-properties',"
                          " 'arguments': {'typename': 'rnic'}}");
    g_assert(qdict_haskey(resp, "return"));
    props = qdict_get_qlist(resp, "return");
    QLIST_FOREACH_ENTRY(props, ent) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(ent));
        const char *name = qdict_get_str(p, "name");
        const char *desc = qdict_get_try_str(p, "description");
        bool skip = false;
        size_t i;

        for (i = 0; i < ARRAY_SIZE(inherited); i++) {
            skip |= !strcmp(name, inherited[i]);
        }
        if (skip) {
            continue;
        }
        if (!desc || !*desc) {
            g_test_message("property %s has no description", name);
        }
        g_assert_true(desc && *desc);
        ours += !strncmp(name, "max-", 4);
    }
    g_assert_cmpuint(ours, >=, 18);
    qobject_unref(resp);
}

static void register_rnic_host_test(void)
{
    rt_add("props-described", test_props_described);
    rt_add("pm-reset", test_pm_reset);
    rt_add("qom-state", test_qom_state);
    rt_add_migrate("migrate-rc", test_migrate_rc);
    rt_add_migrate("migrate-mismatch", test_migrate_mismatch);
    rt_add_migrate_opts("migrate-ib", test_migrate_ib,
                        ",link-layer=infiniband");
    rt_add_migrate("migrate-mutated", test_migrate_mutated);
}

libqos_init(register_rnic_host_test);

#endif /* _WIN32 */
