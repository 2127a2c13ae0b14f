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

/* The QOM path of the (only) rnic device, which -device made without id. */
static char *rnic_qom_path(QTestState *qts)
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
    path = rnic_qom_path(qts);

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
}

libqos_init(register_rnic_host_test);

#endif /* _WIN32 */
