/*
 * rnic: emulated RoCEv2 RNIC -- PCI and QOM glue
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Properties, BARs, MSI-X, the netdev hookup and reset.  Behaviour lives
 * in the other rnic-*.c files (see rnic.h for the split).
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/host-utils.h"
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "rnic.h"
#include "trace.h"

/*
 * Hard caps on the limit properties.  They keep the object tables (all
 * allocated at realize) and the doorbell BAR to a sane size; the ABI caps
 * come from rnic_hw.h.
 */
#define RNIC_CAP_MAX_QP         (1u << 17)
#define RNIC_CAP_MAX_CQ         (1u << 17)
#define RNIC_CAP_MAX_MR         (1u << 20)  /* index fits lkey >> 8 */
#define RNIC_CAP_MAX_PD         (1u << 17)
#define RNIC_CAP_MAX_SRQ        (1u << 17)
#define RNIC_CAP_MAX_MW         (1u << 20)
#define RNIC_CAP_MCAST_GRP      1024
#define RNIC_CAP_MCAST_ATTACH   64
#define RNIC_CAP_MAX_FLOW       4096
#define RNIC_CAP_MAX_UCTX       1023        /* BAR2 of at most 4 MiB */
#define RNIC_CAP_MAX_EQ         1024
#define RNIC_CAP_MAX_MR_PAGES   (1u << 24)
#define RNIC_CAP_MAX_GID        256
#define RNIC_CAP_MAX_RD_ATOM    128
#define RNIC_MIN_MR_SIZE        4096
#define RNIC_MIN_HOST_MEM       (1 * MiB)

static void rnic_realize_fail_range(Error **errp, const char *name,
                                    uint64_t val, uint64_t min, uint64_t max)
{
    error_setg(errp, "rnic: %s=%" PRIu64 " is out of range [%" PRIu64
               ", %" PRIu64 "]", name, val, min, max);
}

static bool rnic_check_props(RnicState *s, Error **errp)
{
    const struct {
        const char *name;
        uint64_t val, min, max;
    } checks[] = {
        { "max-qp", s->prop.max_qp, 1, RNIC_CAP_MAX_QP },
        { "max-cq", s->prop.max_cq, 1, RNIC_CAP_MAX_CQ },
        { "max-mr", s->prop.max_mr, 1, RNIC_CAP_MAX_MR },
        { "max-pd", s->prop.max_pd, 1, RNIC_CAP_MAX_PD },
        { "max-srq", s->prop.max_srq, 0, RNIC_CAP_MAX_SRQ },
        { "max-mw", s->prop.max_mw, 0, RNIC_CAP_MAX_MW },
        { "max-mcast-grp", s->prop.max_mcast_grp, 0, RNIC_CAP_MCAST_GRP },
        { "max-mcast-qp-attach", s->prop.max_mcast_qp_attach, 1,
          RNIC_CAP_MCAST_ATTACH },
        { "max-flow", s->prop.max_flow, 0, RNIC_CAP_MAX_FLOW },
        { "max-uctx", s->prop.max_uctx, 0, RNIC_CAP_MAX_UCTX },
        { "max-eq", s->prop.max_eq, 1, RNIC_CAP_MAX_EQ },
        { "max-sge", s->prop.max_sge, 1,
          MIN(RNIC_SQ_MAX_SGE, RNIC_RQ_MAX_SGE) },
        { "max-qp-wr", s->prop.max_qp_wr, 1, 1u << RNIC_WQ_MAX_LOG_SIZE },
        { "max-cqe", s->prop.max_cqe, 2, 1u << RNIC_CQ_MAX_LOG_SIZE },
        { "max-mr-size", s->prop.max_mr_size, RNIC_MIN_MR_SIZE, UINT64_MAX },
        { "max-mr-pages", s->prop.max_mr_pages, 1, RNIC_CAP_MAX_MR_PAGES },
        { "max-inline", s->prop.max_inline, 0, RNIC_MAX_INLINE },
        { "max-gid", s->prop.max_gid, 1, RNIC_CAP_MAX_GID },
        { "max-rd-atom", s->prop.max_rd_atom, 1, RNIC_CAP_MAX_RD_ATOM },
        { "msix-vectors", s->prop.msix_vectors, 1, RNIC_MAX_MSIX_VECTORS },
        { "loss", s->prop.loss, 0, 100 },
        { "reorder", s->prop.reorder, 0, 100 },
        { "duplicate", s->prop.duplicate, 0, 100 },
        { "corrupt", s->prop.corrupt, 0, 100 },
        { "delay", s->prop.delay, 0, 100 },
        { "delay-us", s->prop.delay_us, 1, 10 * 1000 * 1000 },
        { "ce-mark", s->prop.ce_mark, 0, 100 },
        { "max-host-mem", s->prop.max_host_mem, RNIC_MIN_HOST_MEM,
          UINT64_MAX },
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(checks); i++) {
        if (checks[i].val < checks[i].min || checks[i].val > checks[i].max) {
            rnic_realize_fail_range(errp, checks[i].name, checks[i].val,
                                    checks[i].min, checks[i].max);
            return false;
        }
    }
    if (s->prop.vendor_id == 0 || s->prop.vendor_id == 0xffff) {
        error_setg(errp, "rnic: vendor-id 0x%x is not a valid PCI vendor",
                   s->prop.vendor_id);
        return false;
    }
    if (!s->prop.link_layer || !strcmp(s->prop.link_layer, "ethernet")) {
        s->ib = false;
    } else if (!strcmp(s->prop.link_layer, "infiniband")) {
        s->ib = true;
    } else {
        error_setg(errp, "rnic: link-layer=%s is neither ethernet nor "
                   "infiniband", s->prop.link_layer);
        return false;
    }
    return true;
}

static NetClientInfo rnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = rnic_net_can_receive,
    .receive = rnic_net_receive,
    .link_status_changed = rnic_net_link_status_changed,
};

static void rnic_free_tables(RnicState *s)
{
    g_free(s->uctx);
    g_free(s->pd);
    g_free(s->cq);
    g_free(s->eq);
    g_free(s->mr);
    g_free(s->mw);
    g_free(s->mcast);
    g_free(s->mcast_qpn);
    g_free(s->flow);
    g_free(s->srq);
    g_free(s->qp);
    g_free(s->gid);
    g_free(s->cq_ev);
    s->cq_ev = NULL;
    s->uctx = NULL;
    s->pd = NULL;
    s->cq = NULL;
    s->eq = NULL;
    s->mr = NULL;
    s->mw = NULL;
    s->mcast = NULL;
    s->mcast_qpn = NULL;
    s->flow = NULL;
    s->srq = NULL;
    s->qp = NULL;
    s->gid = NULL;
}

static bool rnic_alloc_tables(RnicState *s, Error **errp)
{
    s->uctx = g_try_new0(RnicUctx, s->prop.max_uctx + 1);
    s->pd = g_try_new0(RnicPD, s->prop.max_pd + 1);
    s->cq = g_try_new0(RnicCQ, s->prop.max_cq + 1);
    s->eq = g_try_new0(RnicEQ, s->prop.max_eq);
    s->mr = g_try_new0(RnicMR, s->prop.max_mr + 1);
    s->mw = g_try_new0(RnicMW, s->prop.max_mw + 1);
    s->mcast = g_try_new0(RnicMcast, MAX(s->prop.max_mcast_grp, 1));
    s->mcast_qpn = g_try_new0(uint32_t, MAX(s->prop.max_mcast_grp, 1) *
                                        s->prop.max_mcast_qp_attach);
    s->flow = g_try_new0(RnicFlow, MAX(s->prop.max_flow, 1));
    s->srq = g_try_new0(RnicSRQ, s->prop.max_srq + 1);
    s->qp = g_try_new0(RnicQP *, s->prop.max_qp + 2);
    s->gid = g_try_new0(RnicGid, s->prop.max_gid);
    s->cq_ev = g_try_new0(unsigned long,
                          BITS_TO_LONGS(s->prop.max_cq + 1));
    if (!s->uctx || !s->pd || !s->cq || !s->eq || !s->mr || !s->mw ||
        !s->mcast || !s->mcast_qpn || !s->flow || !s->srq || !s->qp || !s->gid ||
        !s->cq_ev) {
        rnic_free_tables(s);
        error_setg(errp, "rnic: cannot allocate the object tables");
        return false;
    }
    for (uint32_t i = 0; i < s->prop.max_mcast_grp; i++) {
        s->mcast[i].qpn = &s->mcast_qpn[i * s->prop.max_mcast_qp_attach];
    }
    return true;
}

void rnic_reset(RnicState *s)
{
    trace_rnic_reset();
    qemu_bh_cancel(s->bh);
    rnic_objects_reset(s);
    QTAILQ_INIT(&s->work_list);
    QTAILQ_INIT(&s->dbrec_list);
    bitmap_zero(s->cq_ev, s->prop.max_cq + 1);
    s->cq_ev_any = false;
    s->eq_db_pending = false;
    s->sweep_next = 0;
    s->reset_pending = false;
    s->link_events = 0;
    rnic_ib_reset(s);
    rnic_inject_reset(s);
    rnic_net_reset(s);
    rnic_regs_reset(s);
}

static void rnic_realize(PCIDevice *pdev, Error **errp)
{
    RnicState *s = RNIC(pdev);
    DeviceState *dev = DEVICE(pdev);
    uint64_t db_size;
    unsigned i;

    if (!rnic_check_props(s, errp)) {
        return;
    }

    pci_config_set_vendor_id(pdev->config, s->prop.vendor_id);
    pci_config_set_device_id(pdev->config, s->prop.device_id);
    pci_config_set_interrupt_pin(pdev->config, 0);
    if (pci_pm_init(pdev, 0, errp) < 0) {
        return;
    }
    pci_set_word(pdev->config + pdev->pm_cap + PCI_PM_PMC, PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->wmask + pdev->pm_cap + PCI_PM_CTRL,
                 PCI_PM_CTRL_STATE_MASK);

    memory_region_init_io(&s->regs, OBJECT(s), &rnic_regs_ops, s,
                          "rnic-regs", RNIC_REGS_SIZE);
    pci_register_bar(pdev, RNIC_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);

    db_size = pow2ceil((uint64_t)(s->prop.max_uctx + 1) * RNIC_DB_PAGE_SIZE);
    memory_region_init_io(&s->db, OBJECT(s), &rnic_db_ops, s, "rnic-db",
                          db_size);
    pci_register_bar(pdev, RNIC_BAR_DB,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    if (msix_init_exclusive_bar(pdev, s->prop.msix_vectors, RNIC_BAR_MSIX,
                                errp)) {
        return;
    }
    for (i = 0; i < s->prop.msix_vectors; i++) {
        msix_vector_use(pdev, i);
    }

    if (!rnic_alloc_tables(s, errp)) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        return;
    }

    QTAILQ_INIT(&s->work_list);
    QTAILQ_INIT(&s->dbrec_list);
    rnic_net_init(s);
    rnic_inject_init(s);
    s->bh = qemu_bh_new_guarded(rnic_bh, s, &dev->mem_reentrancy_guard);

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    s->nic = qemu_new_nic(&rnic_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    s->link_up = !qemu_get_queue(s->nic)->link_down;
    s->status = s->link_up ? RNIC_STATUS_LINK_UP : 0;
    rnic_ib_realize(s);

    rnic_net_reset(s);
    rnic_regs_reset(s);
    rnic_migrate_init(s);
}

static void rnic_exit(PCIDevice *pdev)
{
    RnicState *s = RNIC(pdev);

    rnic_migrate_fini(s);
    rnic_reset(s);
    qemu_bh_delete(s->bh);
    s->bh = NULL;
    qemu_del_nic(s->nic);
    rnic_net_fini(s);
    rnic_inject_fini(s);
    rnic_free_tables(s);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void rnic_reset_hold(Object *obj, ResetType type)
{
    rnic_reset(RNIC(obj));
}

/*
 * The fault percentages may change while the VM runs (qom-set), so one boot
 * can go through a whole fault matrix.  A change restarts the generators
 * from their seeds: a setting draws the same sequence however the run got
 * there.
 */
static void rnic_prop_percent_get(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    uint32_t *ptr = object_field_prop_ptr(obj, opaque);

    visit_type_uint32(v, name, ptr, errp);
}

static void rnic_prop_percent_set(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    uint32_t *ptr = object_field_prop_ptr(obj, opaque);
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val > 100) {
        error_setg(errp, "rnic: %s=%u is not a percentage (0-100)", name,
                   val);
        return;
    }
    *ptr = val;
    if (DEVICE(obj)->realized) {
        trace_rnic_fault_set(name, val);
        rnic_net_fault_reseed(RNIC(obj));
    }
}

static const PropertyInfo rnic_prop_percent = {
    .type = "uint32",
    .description = "percentage (0-100), may change at run time",
    .realized_set_allowed = true,
    .get = rnic_prop_percent_get,
    .set = rnic_prop_percent_set,
};

#define DEFINE_PROP_PERCENT(name, field) \
    DEFINE_PROP(name, RnicState, field, rnic_prop_percent, uint32_t)

static const Property rnic_properties[] = {
    DEFINE_NIC_PROPERTIES(RnicState, conf),
    DEFINE_PROP_UINT16("vendor-id", RnicState, prop.vendor_id,
                       RNIC_PCI_VENDOR_ID),
    DEFINE_PROP_UINT16("device-id", RnicState, prop.device_id,
                       RNIC_PCI_DEVICE_ID),
    DEFINE_PROP_UINT32("max-qp", RnicState, prop.max_qp, 1024),
    DEFINE_PROP_UINT32("max-cq", RnicState, prop.max_cq, 1024),
    DEFINE_PROP_UINT32("max-mr", RnicState, prop.max_mr, 4096),
    DEFINE_PROP_UINT32("max-pd", RnicState, prop.max_pd, 1024),
    DEFINE_PROP_UINT32("max-srq", RnicState, prop.max_srq, 256),
    DEFINE_PROP_UINT32("max-mw", RnicState, prop.max_mw, 1024),
    DEFINE_PROP_UINT32("max-mcast-grp", RnicState, prop.max_mcast_grp, 64),
    DEFINE_PROP_UINT32("max-mcast-qp-attach", RnicState,
                       prop.max_mcast_qp_attach, 8),
    DEFINE_PROP_UINT32("max-flow", RnicState, prop.max_flow, 64),
    DEFINE_PROP_UINT32("max-uctx", RnicState, prop.max_uctx, 64),
    DEFINE_PROP_UINT32("max-eq", RnicState, prop.max_eq, 16),
    DEFINE_PROP_UINT32("max-sge", RnicState, prop.max_sge, 6),
    DEFINE_PROP_UINT32("max-qp-wr", RnicState, prop.max_qp_wr,
                       1u << RNIC_WQ_MAX_LOG_SIZE),
    DEFINE_PROP_UINT32("max-cqe", RnicState, prop.max_cqe,
                       1u << RNIC_CQ_MAX_LOG_SIZE),
    DEFINE_PROP_UINT64("max-mr-size", RnicState, prop.max_mr_size,
                       4ULL * GiB),
    DEFINE_PROP_UINT32("max-mr-pages", RnicState, prop.max_mr_pages,
                       1u << 20),
    DEFINE_PROP_UINT32("max-inline", RnicState, prop.max_inline,
                       RNIC_MAX_INLINE),
    DEFINE_PROP_UINT32("max-gid", RnicState, prop.max_gid, 16),
    DEFINE_PROP_UINT32("max-rd-atom", RnicState, prop.max_rd_atom, 16),
    DEFINE_PROP_UINT32("msix-vectors", RnicState, prop.msix_vectors,
                       RNIC_MSIX_VECTOR_DEFAULT),
    DEFINE_PROP_PERCENT("loss", prop.loss),
    DEFINE_PROP_UINT32("loss-seed", RnicState, prop.loss_seed, 0),
    DEFINE_PROP_PERCENT("reorder", prop.reorder),
    DEFINE_PROP_PERCENT("duplicate", prop.duplicate),
    DEFINE_PROP_PERCENT("corrupt", prop.corrupt),
    DEFINE_PROP_PERCENT("delay", prop.delay),
    DEFINE_PROP_UINT32("delay-us", RnicState, prop.delay_us, 2000),
    DEFINE_PROP_UINT32("fault-seed", RnicState, prop.fault_seed, 0),
    DEFINE_PROP_BOOL("ecn", RnicState, prop.ecn, true),
    DEFINE_PROP_BOOL("sq-dbrec", RnicState, prop.sq_dbrec, true),
    DEFINE_PROP_BOOL("selective-repeat", RnicState, prop.selective_repeat,
                     true),
    DEFINE_PROP_PERCENT("ce-mark", prop.ce_mark),
    DEFINE_PROP_SIZE("max-host-mem", RnicState, prop.max_host_mem,
                     256 * MiB),
    DEFINE_PROP_STRING("link-layer", RnicState, prop.link_layer),
    DEFINE_PROP_UINT64("node-guid", RnicState, prop.node_guid, 0),
    DEFINE_PROP_UINT64("port-guid", RnicState, prop.port_guid, 0),
};

/* What `-device rnic,help` says of each property of our own. */
static const struct {
    const char *name;
    const char *desc;
} rnic_prop_desc[] = {
    { "vendor-id", "PCI vendor ID the guest sees" },
    { "device-id", "PCI device ID the guest sees" },
    { "max-qp", "queue pairs the device offers (QPN 2 and up)" },
    { "max-cq", "completion queues" },
    { "max-mr", "memory regions" },
    { "max-pd", "protection domains" },
    { "max-srq", "shared receive queues" },
    { "max-mw", "memory windows (0: no windows)" },
    { "max-mcast-grp", "UD multicast groups" },
    { "max-mcast-qp-attach", "QPs attached to one multicast group" },
    { "max-flow", "flow steering rules of raw packet QPs (0: no raw QPs)" },
    { "max-uctx", "user contexts (doorbell pages for verbs programs)" },
    { "max-eq", "event queues" },
    { "max-sge", "scatter/gather entries per work request" },
    { "max-qp-wr", "work requests per send, receive or shared queue" },
    { "max-cqe", "entries per completion queue" },
    { "max-mr-size", "largest memory region, in bytes" },
    { "max-mr-pages", "pages of one memory region's translation" },
    { "max-inline", "inline data bytes per send work request" },
    { "max-gid", "GID table entries (RoCE v2 addresses)" },
    { "max-rd-atom", "RDMA READ/atomic requests in flight per QP, "
                     "each way" },
    { "msix-vectors", "MSI-X vectors: one for commands and async events, "
                      "the rest for completions" },
    { "loss", "percentage of RoCE frames dropped on transmit, for tests" },
    { "loss-seed", "seed of the loss draws (0: fixed default)" },
    { "reorder", "percentage of transmitted RoCE frames held back behind "
                 "the next one" },
    { "duplicate", "percentage of transmitted RoCE frames sent twice" },
    { "corrupt", "percentage of transmitted RoCE frames with a bit flipped "
                 "(the receiver's ICRC check drops them)" },
    { "delay", "percentage of transmitted RoCE frames delayed by delay-us" },
    { "delay-us", "delay of the frames 'delay' picks, in microseconds" },
    { "fault-seed", "seed of the reorder/duplicate/corrupt/delay draws" },
    { "ecn", "send RoCEv2 packets ECN-capable (ECT(0)) and answer CE marks "
             "with congestion notifications (CNPs)" },
    { "sq-dbrec", "let QPs keep their SQ producer index in memory and "
                  "ring the doorbell only when the device is idle" },
    { "selective-repeat", "RC between rnic devices: the responder keeps "
                          "packets past a gap and the requester resends "
                          "only the gap" },
    { "ce-mark", "percentage of transmitted ECN-capable RoCE frames marked "
                 "CE, as a congested switch would (uses fault-seed)" },
    { "max-host-mem", "host memory the guest's objects may make the device "
                      "allocate (page lists, QP state); more is refused" },
    { "link-layer", "ethernet (RoCE, the default) or infiniband (LRH "
                    "framing, LIDs from a subnet manager)" },
    { "node-guid", "node GUID (0: the MAC's modified EUI-64)" },
    { "port-guid", "port 1's GUID (0: the node GUID)" },
};

static void rnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = rnic_realize;
    pc->exit = rnic_exit;
    pc->config_write = rnic_pm_write_config;
    pc->vendor_id = RNIC_PCI_VENDOR_ID;
    pc->device_id = RNIC_PCI_DEVICE_ID;
    pc->revision = RNIC_PCI_REVISION;
    pc->class_id = PCI_CLASS_NETWORK_ETHERNET;

    rc->phases.hold = rnic_reset_hold;

    dc->desc = "Emulated RoCEv2 RDMA NIC";
    dc->vmsd = &vmstate_rnic;
    device_class_set_props(dc, rnic_properties);
    for (size_t i = 0; i < ARRAY_SIZE(rnic_prop_desc); i++) {
        object_class_property_set_description(klass, rnic_prop_desc[i].name,
                                              rnic_prop_desc[i].desc);
    }
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void rnic_instance_init(Object *obj)
{
    rnic_qom_init(obj);
}

static const TypeInfo rnic_info = {
    .name = TYPE_RNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RnicState),
    .instance_init = rnic_instance_init,
    .class_init = rnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void rnic_register_types(void)
{
    type_register_static(&rnic_info);
}

type_init(rnic_register_types)
