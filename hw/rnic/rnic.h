/*
 * rnic: emulated RoCEv2 RNIC -- device-internal interfaces
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The device is split by concern:
 *   rnic.c            PCI/QOM glue: properties, BARs, MSI-X, reset, netdev
 *   rnic-regs.c       BAR0 register table and the command-queue engine
 *   rnic-cmd.c        command dispatch and the commands of non-QP objects
 *   rnic-qp.c         QP commands, the QP state machine, multicast groups
 *   rnic-queue.c      doorbells, CQ/EQ posting, interrupts, the bottom half
 *   rnic-mem.c        page lists, MR table, windows, key checks, SGE copies
 *   rnic-net.c        netdev path: classify, loopback, faults, Ethernet rings
 *   rnic-transport.c  transport dispatcher: RoCE rx/tx, QP calls, SQ dbrecs
 *   rnic-req.c        RoCEv2 requester (SQ -> packets, retransmission)
 *   rnic-comp.c       RoCEv2 completer (ACK/NAK/read responses -> CQEs)
 *   rnic-resp.c       RoCEv2 responder (requests -> memory, ACKs, reads)
 *   rnic-ooo.c        the responder's reorder buffer for selective repeat
 *   rnic-raw.c        raw packet QPs, their flow rules and RSS
 *   rnic-wire.c       pure packet codec, ICRC and PSN math (unit tested)
 *   rnic-qom.c        read-only QOM properties of the state, `info rnic`
 *   rnic-migrate.c    live migration of every object and QP transport
 *   rnic-pm.c         power states, deferred function reset, guarded DMA
 *   rnic-inject.c     device faults the host injects (QMP, HMP)
 *
 * Everything runs under the BQL: MMIO handlers, the bottom half, timers
 * and netdev receive all take it, so object tables need no other lock.
 *
 * Only the bottom half touches guest memory for rings, events and
 * packets, and only within its budget.  MMIO handlers, timers and the
 * netdev receive callback record what happened and schedule it.  The
 * bottom half runs under the device's re-entrancy guard, so a guest that
 * points a ring at one of our own BARs gets a failed DMA, not a nested
 * register write that frees the objects in use.
 */
#ifndef HW_RNIC_H
#define HW_RNIC_H

#include "hw/pci/pci_device.h"
#include "net/net.h"
#include "qemu/timer.h"
#include "qemu/queue.h"
#include "system/runstate.h"
#include "rnic_hw.h"
#include "rnic-smp.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

#define RNIC_MSIX_VECTOR_DEFAULT    8
#define RNIC_MAX_MSIX_VECTORS       64
/* QPs remembered per receive batch for its closing ACKs; more ACK at once. */
#define RNIC_ACK_OWED_MAX           32

/* CQEs RESIZE_CQ moves per work unit (a unit is about one 4 KiB DMA). */
#define RNIC_CQ_MOVE_PER_UNIT       16

/*
 * A guest value was refused: trace, LOG_GUEST_ERROR, count, all three
 * from one statement so that no guard can do one and forget another.
 * 'trace' is the trace event with its arguments, without the trace_
 * prefix:
 *
 *     RNIC_GUEST_ERR(rnic_err_x(qpn, idx), s, "QP 0x%x: ...", qpn);
 *
 * The event and the log line take arguments of their own: the event
 * often carries more (the limit, the owner, the whole access) than the
 * line puts into words, and a shared event names the guard by a string.
 */
#define RNIC_GUEST_ERR(trace, s, fmt, ...)                                 \
    do {                                                                   \
        trace_##trace;                                                     \
        (s)->cnt[RNIC_CNT_GUEST_ERR]++;                                    \
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: " fmt "\n", ## __VA_ARGS__); \
    } while (0)

/* Host copy of a guest page list; translation never re-reads the guest. */
typedef struct RnicPbl {
    uint64_t *pages;            /* DMA address of each page */
    uint32_t npages;
    uint32_t cap;               /* entries allocated (and charged) */
    uint8_t page_shift;
} RnicPbl;

/* Page sizes a page list may use: 4 KiB to 1 GiB. */
#define RNIC_PBL_MIN_SHIFT  12
#define RNIC_PBL_MAX_SHIFT  30

/*
 * What the device refused to do outside D0 or with a reset pending, for
 * the host (QOM "power", `info rnic`).  A function reset wipes the guest
 * visible counters, so these live apart and are never reset.
 */
typedef struct RnicPmStats {
    uint64_t frames_dropped;    /* frames that arrived outside D0 */
    uint64_t doorbells_dropped; /* doorbell writes outside D0 */
    uint64_t work_deferred;     /* bottom-half runs that found us outside D0 */
    uint64_t dma_refused;       /* guest memory accesses refused */
    uint64_t irqs_suppressed;   /* MSI-X messages not sent */
    uint64_t resets;            /* function resets run (D3hot -> D0, CTRL) */
} RnicPmStats;

/* A ring of fixed-size entries in guest memory. */
typedef struct RnicRing {
    RnicPbl pbl;
    uint32_t log_size;          /* entries = 1 << log_size */
    uint32_t stride;            /* bytes per entry */
    uint32_t first_page;        /* CQ rings skip the dbrec page */
} RnicRing;

typedef struct RnicUctx {
    bool valid;
} RnicUctx;

typedef struct RnicPD {
    bool valid;
    uint16_t uctx;
    uint32_t refcnt;            /* QPs, MRs, SRQs, MWs using it */
} RnicPD;

typedef struct RnicEQ {
    bool valid;
    RnicRing ring;
    uint32_t pi;                /* next entry the device writes */
    uint32_t ci;                /* last consumer index from the doorbell */
    bool armed;
    uint16_t vector;
    uint32_t lost;              /* events dropped while full */
    uint32_t refcnt;            /* CQs naming it */
    bool db_pending;            /* doorbell work for the bottom half */
} RnicEQ;

typedef struct RnicCQ {
    bool valid;
    uint16_t uctx;
    RnicRing ring;
    uint32_t pi;                /* next CQE index the device writes */
    uint32_t ci;                /* consumer index last seen */
    uint32_t eqn;
    bool armed;
    bool armed_solicited;
    bool overrun;               /* CQ_ERR raised; no more CQEs */
    uint32_t refcnt;            /* QPs using it */
} RnicCQ;

/*
 * A memory window: a remote key for [va, va + length) of one MR, with
 * rights of its own.  A type 2 window also belongs to the QP that bound
 * it.  Window rkeys carry RNIC_MW_KEY_FLAG, so no MR key is ever one.
 */
#define RNIC_MW_KEY_FLAG        (1u << 31)

/* A multicast group some UD QPs joined; nqp 0 = free slot. */
typedef struct RnicMcast {
    uint8_t gid[16];
    uint32_t nqp;
    uint32_t *qpn;              /* [max_mcast_qp_attach] */
} RnicMcast;

/* SET_RSS state of a raw packet QP that spreads its frames. */
typedef struct RnicRss {
    uint8_t log_tbl_size;
    uint16_t fields;
    uint8_t key[RNIC_RSS_KEY_LEN];
    uint32_t wq_qpn[1u << RNIC_RSS_MAX_LOG_TBL];
} RnicRss;

/* A CREATE_FLOW rule: frames that match go to raw packet QP 'qpn'. */
typedef struct RnicFlow {
    bool valid;
    uint16_t uctx;
    uint32_t qpn;
    struct rnic_flow_match m;
} RnicFlow;

typedef struct RnicMW {
    bool valid;
    bool bound;
    uint8_t type;               /* 1 or 2 */
    uint8_t key;                /* low byte of the rkey */
    uint16_t uctx;
    uint32_t pdn;
    uint32_t mr;                /* index of the MR it is bound to */
    uint32_t qpn;               /* type 2: the QP that bound it */
    uint32_t access;            /* RNIC_ACCESS_REMOTE_* */
    uint64_t va;
    uint64_t length;
} RnicMW;

/*
 * A page-list MR's first page holds iova at offset iova & (page size - 1).
 * FAST_REG MRs come with pbl.pages preallocated for max_pages entries.
 */
typedef struct RnicMR {
    bool valid;
    uint8_t key;                /* low byte of lkey/rkey */
    uint16_t uctx;
    uint32_t pdn;
    uint32_t access;            /* RNIC_ACCESS_* */
    uint32_t flags;             /* RNIC_MR_FLAG_* */
    uint64_t iova;
    uint64_t length;
    RnicPbl pbl;                /* empty for PHYS */
    uint32_t max_pages;         /* FAST_REG capacity */
    bool fr_valid;              /* FAST_REG: registered and not invalidated */
    uint32_t mw_refs;           /* windows bound to it: no dereg until 0 */
} RnicMR;

/* One work queue (SQ, RQ or SRQ); indices are free-running. */
typedef struct RnicWq {
    RnicRing ring;
    uint32_t pi;                /* from the doorbell */
    uint32_t ci;                /* oldest WQE not yet completed */
    uint32_t max_sge;
} RnicWq;

typedef struct RnicSRQ {
    bool valid;
    uint16_t uctx;
    uint32_t pdn;
    RnicWq wq;
    uint32_t limit;
    uint32_t refcnt;
} RnicSRQ;

/* Host-order copy of struct rnic_av plus what the GID table adds. */
typedef struct RnicAV {
    uint8_t dgid[16];
    uint8_t dmac[6];
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint32_t flow_label;
    uint8_t traffic_class;
    uint8_t net_type;
    /* InfiniBand (net_type RNIC_NET_IB); dmac is unused there. */
    uint16_t dlid;
    uint8_t src_path_bits;
    uint8_t ib_flags;           /* RNIC_AV_IB_* */
    uint8_t sl;
} RnicAV;

typedef struct RnicGid {
    bool valid;
    uint8_t type;               /* enum rnic_gid_type */
    uint8_t gid[16];
    uint8_t mac[6];
    uint16_t vlan_id;
} RnicGid;

/* QP0 of an InfiniBand port (RNIC_QPT_SMI); Ethernet ports have none. */
#define RNIC_SMI_QPN        0

typedef struct RnicTransport RnicTransport; /* private to the transport */
typedef struct RnicRxFrame RnicRxFrame;     /* private to rnic-net.c */

typedef struct RnicQP {
    uint32_t qpn;
    uint16_t uctx;
    uint8_t type;               /* enum rnic_qp_type */
    uint8_t state;              /* enum rnic_qp_state */
    uint32_t flags;             /* RNIC_QP_FLAG_* */
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t srqn;              /* 0: none */
    uint16_t max_inline;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;

    /* Attributes from MODIFY_QP, host order. */
    uint32_t qkey;
    uint32_t dest_qpn;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t access_flags;
    uint8_t path_mtu;           /* enum rnic_mtu */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t en_sqd_async_notify;
    uint8_t port_num;
    uint16_t pkey_index;
    RnicAV av;

    RnicWq sq;
    RnicWq rq;                  /* unused with an SRQ */

    bool scheduled;             /* on RnicState.work_list */
    QTAILQ_ENTRY(RnicQP) work_next;
    /*
     * With RNIC_QP_FLAG_SQ_DBREC: what the record's flags hold (the
     * device writes them only when this changes) and the last pi read
     * from it (a bad one is reported once).  Not migrated: the loaded
     * QP runs once, which rewrites both.
     */
    bool sq_dbrec_ring;
    uint16_t sq_dbrec_seen;
    /* On RnicState.dbrec_list while RING is clear. */
    bool sq_dbrec_listed;
    QTAILQ_ENTRY(RnicQP) dbrec_next;

    RnicTransport *tp;
    RnicRss *rss;               /* raw QPs after SET_RSS */
    uint32_t flow_frame;        /* s->flow_frame it last got a copy of */
} RnicQP;

/* The faults rnic-inject.c arms, in the order of the "faults" counters. */
typedef enum RnicInjKind {
    RNIC_INJ_WC_ERROR,
    RNIC_INJ_QP_EVENT,
    RNIC_INJ_CQ_ERROR,
    RNIC_INJ_EQ_OVERFLOW,
    RNIC_INJ_PORT_FLAP,
    RNIC_INJ_FATAL,
    RNIC_INJ_CMD_STALL,
    RNIC_INJ_IRQ_DROP,
    RNIC_INJ_IRQ_DELAY,
    RNIC_INJ_DMA_FAIL,
    RNIC_INJ_CQE_CORRUPT,
    RNIC_INJ_GID_CHANGE,
    RNIC_INJ_MAX
} RnicInjKind;

/* QP events and CQ errors the bottom half still has to raise. */
#define RNIC_INJ_QUEUE      16

typedef struct RnicInjAction {
    uint8_t kind;               /* RNIC_INJ_QP_EVENT, _CQ_ERROR, _GID_CHANGE */
    uint8_t eqe;                /* enum rnic_eqe_type for a QP event */
    uint32_t handle;
    bool remove;                /* GID change: the entry goes */
    uint8_t gid[16];            /* GID change: its new GID */
} RnicInjAction;

/*
 * Device-side faults the host arms (rnic-inject.c).  The monitor command
 * only records them; each takes effect where the device does that work,
 * with a trace event, and is counted in 'done'.  This is host setup, not
 * guest state: it is not migrated, and a function reset ends only what a
 * reset ends on hardware (a command stall, the stopped state).
 */
typedef struct RnicInject {
    uint32_t wc_qpn;            /* 0: any QP */
    uint32_t wc_left;           /* send completions still to fail */
    uint8_t wc_status;          /* enum rnic_wc_status */
    uint8_t wc_percent;         /* 0: each of the next; else this share */
    uint32_t wc_rng;

    RnicInjAction act[RNIC_INJ_QUEUE];
    uint32_t n_act;

    uint32_t eq_lose_eqn;
    uint32_t eq_lose_left;      /* events of that EQ still to lose */

    QEMUTimer *flap_timer;      /* brings the link back up */
    bool port_down;             /* the flap holds the link down */

    bool fatal_due;             /* the bottom half stops the device */
    bool dead;                  /* stopped until a reset */

    bool cmd_stalled;
    QEMUTimer *stall_timer;

    int32_t irq_vector;         /* -1: any */
    uint32_t irq_drop_left;
    uint32_t irq_delay_left;
    uint32_t irq_delay_ms;
    uint64_t irq_late;          /* vectors whose message is held back */
    bool irq_late_due;          /* the timer ran: the bottom half sends */
    QEMUTimer *irq_timer;

    uint32_t dma_fail_left;
    bool dma_fail_any_qp;       /* else only writes for dma_fail_qpn */
    uint32_t dma_fail_qpn;
    uint32_t rx_qpn;            /* QP whose packet is being handled, or */
#define RNIC_INJ_NO_QP UINT32_MAX   /* none: QPNs have 24 bits */

    uint32_t cqe_qpn;           /* 0: any QP */
    uint32_t cqe_left;          /* CQEs still to corrupt */

    uint64_t done[RNIC_INJ_MAX];
} RnicInject;

/*
 * An InfiniBand port's management state, what its SMA reports and the SM
 * sets (PortInfo and the tables).  Unused on Ethernet.
 */
#define RNIC_IB_VLS             4       /* data VLs: VL0..VL3, and VL15 */
#define RNIC_IB_VLARB_ENTRIES   32      /* per VLArbitrationTable block */

/* Port events the bottom half owes EQ 0, RNIC_IB_EV_* bits. */
#define RNIC_IB_EV_ACTIVE       (1u << 0)
#define RNIC_IB_EV_DOWN         (1u << 1)
#define RNIC_IB_EV_LID          (1u << 2)
#define RNIC_IB_EV_PKEY         (1u << 3)
#define RNIC_IB_EV_SM           (1u << 4)
#define RNIC_IB_EV_TRAP         (1u << 5)

typedef struct RnicIbPort {
    uint8_t state;              /* enum rnic_port_state */
    uint8_t lmc;                /* 0..7 */
    uint8_t sm_sl;              /* 0..15 */
    uint8_t mkey_prot;          /* M_KeyProtectBits, 0..3 */
    uint16_t lid;
    uint16_t sm_lid;
    uint16_t mkey_lease;
    uint8_t neighbor_mtu;       /* enum rnic_mtu */
    uint8_t subnet_timeout;
    uint8_t client_rereg;
    uint8_t resp_time;
    uint64_t mkey;
    uint64_t gid_prefix;
    uint16_t mkey_viol;
    uint16_t pkey_viol;
    uint16_t qkey_viol;
    uint16_t pkey[RNIC_PKEY_BLOCK];
    uint8_t sl2vl[16];          /* VL of each SL */
    /* VLArbitrationTable blocks 1..4: low 1-32, low 33-64, high 1-32, ... */
    uint8_t vlarb[4][RNIC_IB_VLARB_ENTRIES * 2];
    uint32_t events;            /* RNIC_IB_EV_*, posted by the bottom half */
    /* What the host set with LOCAL SubnSets (RNIC_MAD_IFC_LOCAL). */
    uint32_t cap_host;          /* RNIC_SMA_CAP_HOST bits */
    uint8_t node_desc[RNIC_SMP_DATA_LEN];
    /* Notices for the SM, oldest first, until the driver takes them. */
    uint8_t traps[RNIC_SMA_TRAPS][RNIC_SMP_DATA_LEN];
    uint8_t ntraps;
    uint32_t trap_tid;          /* the last trap's TransactionID */
} RnicIbPort;

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion db;
    MemoryRegion msix;
    NICState *nic;
    NICConf conf;

    /* Properties (limits reported by QUERY_DEVICE). */
    struct {
        uint16_t vendor_id;
        uint16_t device_id;
        uint32_t max_qp;
        uint32_t max_cq;
        uint32_t max_mr;
        uint32_t max_pd;
        uint32_t max_srq;
        uint32_t max_mw;
        uint32_t max_mcast_grp;
        uint32_t max_mcast_qp_attach;
        uint32_t max_flow;
        uint32_t max_uctx;
        uint32_t max_eq;
        uint32_t max_sge;
        uint32_t max_qp_wr;
        uint32_t max_cqe;
        uint64_t max_mr_size;
        uint32_t max_mr_pages;
        uint32_t max_inline;
        uint32_t max_gid;
        uint32_t max_rd_atom;
        uint32_t msix_vectors;
        uint32_t loss;          /* egress drop percentage, 0..100 */
        uint32_t loss_seed;
        /* Other egress faults, percentages of RoCE frames, one seed. */
        uint32_t reorder;
        uint32_t duplicate;
        uint32_t corrupt;
        uint32_t delay;
        uint32_t delay_us;      /* how long a delayed frame waits */
        uint32_t fault_seed;
        bool ecn;               /* RoCEv2 packets go out ECN-capable */
        bool sq_dbrec;          /* QPs may have SQ doorbell records */
        bool selective_repeat;  /* RC resends only what a NAK names */
        uint32_t ce_mark;       /* of those, percentage marked CE */
        uint64_t max_host_mem;  /* bytes of host memory for guest objects */
        char *link_layer;       /* "ethernet" or "infiniband" */
        uint64_t node_guid;     /* 0: the MAC's EUI-64 */
        uint64_t port_guid;     /* 0: the node GUID */
    } prop;
    bool ib;                    /* link-layer=infiniband */
    uint64_t node_guid;         /* the properties, defaults applied */
    uint64_t port_guid;
    RnicIbPort ibp;             /* the IB port's management state */

    /* Registers. */
    uint32_t ctrl;
    uint32_t status;
    uint32_t fatal_code;
    uint64_t cmdq_base;
    uint32_t cmdq_log_size;
    uint32_t cmdq_pi;
    uint32_t cmdq_ci;
    uint64_t txq_base;
    uint32_t txq_log_size;
    uint32_t txq_pi;
    uint32_t txq_ci;
    uint64_t rxq_base;
    uint32_t rxq_log_size;
    uint32_t rxq_pi;
    uint32_t rxq_ci;
    uint32_t net_ctrl;
    uint32_t net_irq_mask;
    uint32_t net_vector;
    uint32_t cnt_hi_latch;

    uint64_t cnt[RNIC_CNT_MAX];

    /* Object tables, indexed by handle; sized from the properties. */
    RnicUctx *uctx;             /* [max_uctx + 1] */
    RnicPD *pd;                 /* [max_pd + 1] */
    RnicCQ *cq;                 /* [max_cq + 1] */
    RnicEQ *eq;                 /* [max_eq] */
    RnicMR *mr;                 /* [max_mr + 1] */
    RnicMW *mw;                 /* [max_mw + 1] */
    RnicMcast *mcast;           /* [max_mcast_grp] */
    uint32_t *mcast_qpn;        /* [max_mcast_grp * max_mcast_qp_attach] */
    RnicFlow *flow;             /* [max_flow], handle = index + 1 */
    RnicSRQ *srq;               /* [max_srq + 1] */
    RnicQP **qp;                /* [max_qp + 2], allocated on create */
    RnicGid *gid;               /* [max_gid] */

    QEMUBH *bh;                 /* commands, doorbells, ring work */
    bool cmd_pending;
    uint32_t cmd_cost;          /* extra work units of the current command */
    QTAILQ_HEAD(, RnicQP) work_list;
    /* QPs whose SQ doorbell record the bottom half reads on each run. */
    QTAILQ_HEAD(, RnicQP) dbrec_list;
    uint64_t host_mem_used;     /* charged against prop.max_host_mem */

    /* CQs armed by a doorbell whose event the bottom half still owes. */
    unsigned long *cq_ev;       /* bitmap of max_cq + 1 */
    bool cq_ev_any;
    bool eq_db_pending;         /* some EQ has db_pending set */

    uint32_t loss_state;        /* PRNG for the loss property */
    uint32_t fault_state;       /* PRNG for reorder/duplicate/corrupt/delay */
    RnicRxFrame *held;          /* reordered frame waiting for the next */
    QSIMPLEQ_HEAD(, RnicRxFrame) delay_q;
    uint32_t delay_len;
    QEMUTimer *delay_timer;

    bool link_up;               /* link state last reported to the guest */
    bool overrun_sweep;         /* a CQ overran: move its QPs to ERR */
    uint32_t sweep_next;        /* next QPN the sweep looks at */
    /*
     * RoCE frames received from the netdev or looped back to ourselves,
     * handled by the bottom half so that a frame never enters the
     * transport while it is in the middle of sending one.
     */
    QSIMPLEQ_HEAD(, RnicRxFrame) rx_q;
    uint32_t rx_len;
    bool rx_blocked;            /* can_receive said no: flush when drained */
    /* RC QPs whose ACK waits for the end of the receive batch. */
    uint32_t ack_owed[RNIC_ACK_OWED_MAX];
    uint32_t ooo_frames;        /* frames in all QPs' reorder buffers */
    int64_t ooo_swept_ns;       /* when stale kept frames were last freed */
    uint32_t flow_frame;        /* frames flow rules have looked at */
    uint32_t n_ack_owed;

    /*
     * Power management and function reset (rnic-pm.c).  A config-space
     * write can reach the device from its own DMA or MSI-X message (the
     * host bridge's ECAM window is not ours, so the re-entrancy guard does
     * not cover it): it only records the reset, and rnic_pm_run_reset()
     * runs it where no device work is on the stack.
     */
    bool reset_pending;
    /* Link changes the bottom half still reports (a flap is two). */
    uint8_t link_events;
    RnicPmStats pm;             /* host-side; survives function resets */

    RnicInject inj;             /* host-injected faults (rnic-inject.c) */

    /* Live migration (rnic-migrate.c). */
    bool bh_deferred;           /* work arrived while the VM was stopped */
    bool mig_incoming;          /* state loaded, the VM not yet started */
    int32_t mig_cq_bits;        /* bits of cq_ev in the stream */
    uint64_t mig_host_mem_src;  /* the source's host_mem_used */
    VMChangeStateEntry *vmse;
};



/* rnic-migrate.c */
extern const VMStateDescription vmstate_rnic;
void rnic_migrate_init(RnicState *s);   /* realize */
void rnic_migrate_fini(RnicState *s);   /* unrealize */

/* rnic.c: CTRL.RESET, ENABLE cleared, PCI reset: every object freed. */
void rnic_reset(RnicState *s);

/*
 * rnic-pm.c: power state and deferred resets.  Every guest memory access
 * and MSI-X message goes through these, so that a device outside D0, or
 * one whose reset is due, touches nothing of the guest's.
 */
bool rnic_pm_d0(RnicState *s);
/* Not in D0, or a reset is due: do no DMA, raise no interrupt. */
static inline bool rnic_halted(RnicState *s)
{
    return s->reset_pending || s->inj.dead || !rnic_pm_d0(s);
}
void rnic_pm_request_reset(RnicState *s, const char *why);
/* Runs a recorded reset; only where no device work is on the stack. */
bool rnic_pm_run_reset(RnicState *s);
MemTxResult rnic_dma_read(RnicState *s, dma_addr_t addr, void *buf,
                          dma_addr_t len);
MemTxResult rnic_dma_write(RnicState *s, dma_addr_t addr, const void *buf,
                           dma_addr_t len);
void rnic_pm_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                          int len);

/* rnic-sma.c: the InfiniBand port and its management agents. */
void rnic_ib_realize(RnicState *s);     /* GUIDs from the properties */
void rnic_ib_reset(RnicState *s);       /* the port's power-on state */
void rnic_ib_link_changed(RnicState *s, bool up);
void rnic_ib_post_events(RnicState *s); /* bottom half: port events */
void rnic_ib_port_attr(RnicState *s, struct rnic_port_attr *a);
void rnic_ib_port_gid(RnicState *s, uint8_t gid[16]);
/* Trap 257 for a GSI packet whose P_Key the port refused. */
void rnic_ib_trap_bad_pkey(RnicState *s, uint16_t slid, uint8_t sl,
                           uint32_t src_qp, uint16_t pkey);
/* A datagram's Q_Key refused: PortInfo counts it; on QP1, trap 258. */
void rnic_ib_qkey_violation(RnicState *s, uint16_t slid, uint8_t sl,
                            uint32_t src_qp, uint32_t qkey, bool gsi);

/* rnic-inject.c: hooks where the armed faults take effect. */
void rnic_inject_init(RnicState *s);    /* realize */
void rnic_inject_fini(RnicState *s);    /* unrealize */
void rnic_inject_reset(RnicState *s);   /* function reset */
/* Raises recorded QP events, CQ errors, a fatal error, late messages. */
void rnic_inject_run(RnicState *s);
bool rnic_inject_pending(RnicState *s);
/* A send completion of 'qpn' about to succeed: its injected status or 0. */
uint8_t rnic_inject_wc(RnicState *s, uint32_t qpn);
bool rnic_inject_eq_lose(RnicState *s, uint32_t eqn);
bool rnic_inject_cmd_stalled(RnicState *s);
bool rnic_inject_irq(RnicState *s, unsigned vector);  /* true: not sent now */
bool rnic_inject_dma_fail(RnicState *s, dma_addr_t addr, dma_addr_t len);
/* A CQE about to be written: corrupted in place if one is armed. */
void rnic_inject_cqe(RnicState *s, struct rnic_cqe *cqe);
void rnic_inject_hmp_show(Monitor *mon, RnicState *s);
void rnic_inject_get_faults(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp);

/* rnic-regs.c */
extern const MemoryRegionOps rnic_regs_ops;
/* Registers and counters only; rnic_reset() does the rest. */
void rnic_regs_reset(RnicState *s);
void rnic_cmdq_run(RnicState *s, int budget);

/* rnic-cmd.c: one command; returns enum rnic_cmd_status. */
uint8_t rnic_cmd_exec(RnicState *s, const struct rnic_cmd *cmd,
                      uint32_t out[6]);
void rnic_objects_reset(RnicState *s);
const char *rnic_cmd_opc_str(uint8_t opcode);
RnicQP *rnic_qp_get(RnicState *s, uint32_t qpn);
RnicCQ *rnic_cq_get(RnicState *s, uint32_t cqn);
RnicSRQ *rnic_srq_get(RnicState *s, uint32_t srqn);
/* Index of the valid GID of that version with these bytes, or -1. */
int rnic_gid_find(RnicState *s, const uint8_t gid[16], bool roce_v1);

/* rnic-queue.c */
extern const MemoryRegionOps rnic_db_ops;
void rnic_schedule(RnicState *s);
void rnic_bh(void *opaque);
void rnic_qp_schedule(RnicState *s, RnicQP *qp);
/*
 * Widens a 16-bit SQ/RQ/SRQ producer index from a doorbell (or an SQ
 * doorbell record) into wq->pi; false, as a guest error, if it is not
 * one the ring can hold.
 */
bool rnic_wq_doorbell(RnicState *s, const char *what, uint32_t qn,
                      RnicWq *wq, uint32_t idx);
/* Writes one CQE (fields in host order, owner set here); false if full. */
bool rnic_cq_post(RnicState *s, uint32_t cqn, const struct rnic_cqe *cqe);
int rnic_cq_move(RnicState *s, RnicCQ *cq, const RnicRing *ring,
                 uint32_t *moved);
void rnic_eq_post(RnicState *s, uint32_t eqn, uint8_t type, uint32_t obj,
                  uint32_t data);
void rnic_irq(RnicState *s, unsigned vector);
void rnic_irq_send(RnicState *s, unsigned vector);
void rnic_cq_fail(RnicState *s, RnicCQ *cq, uint32_t cqn);
/* Moves a QP to ERR, flushes it and raises the async event (0: none). */
void rnic_qp_fatal(RnicState *s, RnicQP *qp, uint8_t eqe_type);
void rnic_qp_last_wqe(RnicState *s, RnicQP *qp);

/* rnic-mem.c */
typedef enum RnicMemErr {
    RNIC_MEM_OK = 0,
    RNIC_MEM_BAD_KEY,           /* no such key, or key byte differs */
    RNIC_MEM_BAD_PD,            /* MR belongs to another PD */
    RNIC_MEM_NO_ACCESS,         /* access right missing */
    RNIC_MEM_BOUNDS,            /* outside [iova, iova + length) */
    RNIC_MEM_DMA,               /* the guest address did not answer */
} RnicMemErr;
const char *rnic_mem_err_str(RnicMemErr err);

bool rnic_host_mem_charge(RnicState *s, uint64_t bytes);
void rnic_host_mem_uncharge(RnicState *s, uint64_t bytes);
uint8_t rnic_pbl_load(RnicState *s, const struct rnic_pbl *desc,
                      uint32_t max_pages, RnicPbl *out);
/* An empty list with room for 'cap' pages (FAST_REG MRs). */
bool rnic_pbl_alloc_empty(RnicState *s, uint32_t cap, uint8_t page_shift,
                          RnicPbl *out);
void rnic_pbl_free(RnicState *s, RnicPbl *pbl);
/* DMA address of byte 'off' of a page list; false if out of range. */
bool rnic_pbl_addr(const RnicPbl *pbl, uint64_t off, uint64_t *addr,
                   uint64_t *contig);
bool rnic_ring_entry(const RnicRing *ring, uint32_t idx, uint64_t *addr);
bool rnic_ring_read(RnicState *s, const RnicRing *ring, uint32_t idx,
                    void *buf, size_t len);
bool rnic_ring_write(RnicState *s, const RnicRing *ring, uint32_t idx,
                     size_t off, const void *buf, size_t len);

/* What a REG_MR work request asks for (host order). */
typedef struct RnicFastReg {
    uint32_t key;               /* new lkey/rkey: index and key byte */
    uint32_t access;            /* RNIC_ACCESS_* */
    uint64_t iova;
    uint64_t length;
    uint64_t list;              /* DMA address of npages LE64 entries */
    uint32_t npages;
    uint8_t page_shift;
} RnicFastReg;
/*
 * Fast registration and local/remote invalidation of a FAST_REG MR of
 * 'pdn'; false (with a trace and, for a REG_MR, a guest error) if the
 * request does not fit the MR's state.
 */
bool rnic_mr_fast_reg(RnicState *s, uint32_t pdn, const RnicFastReg *fr);
/*
 * LOCAL_INV (qpn 0) or SEND_WITH_INV received on QP 'qpn' of 'pdn': of a
 * fast-reg MR, or of a type 2 window (bound through that QP, if remote).
 */
bool rnic_key_invalidate(RnicState *s, uint32_t pdn, uint32_t qpn,
                         uint32_t key);

/* What a BIND_MW work request asks for (host order). */
typedef struct RnicMwBind {
    uint32_t rkey;              /* the window's index, and its new key byte */
    uint32_t lkey;              /* the MR to bind to */
    uint32_t access;            /* RNIC_ACCESS_REMOTE_* */
    uint64_t va;
    uint64_t length;
} RnicMwBind;
/* NULL when bound, else why not. */
const char *rnic_mw_bind(RnicState *s, uint32_t pdn, uint32_t qpn,
                         const RnicMwBind *b);
RnicMW *rnic_mw_of_key(RnicState *s, uint32_t key);
/* Drops a window's binding (and the MR's reference to it). */
void rnic_mw_unbind(RnicState *s, RnicMW *mw);
/* rnic-qp.c: the group 'gid' names, if any QP joined it. */
RnicMcast *rnic_mcast_find(RnicState *s, const uint8_t *gid);
void rnic_mcast_detach_qp(RnicState *s, uint32_t qpn);

/* rnic-raw.c: raw packet QPs and the flow rules that feed them. */
void rnic_flow_remove_qp(RnicState *s, uint32_t qpn);
void rnic_flow_reset(RnicState *s);
/* Whether some rule takes the frame (from the netdev or our own raw QP). */
bool rnic_flow_wants(RnicState *s, const uint8_t *frame, size_t len);
/* Hands the frame to every raw QP a rule steers it to; false if none. */
bool rnic_flow_deliver(RnicState *s, const uint8_t *frame, size_t len);
/* Sends one frame a raw QP built: to the wire and to our own rules. */
void rnic_raw_tx(RnicState *s, const uint8_t *frame, size_t len);
/* Drops the bindings of the type 2 windows bound through QP 'qpn'. */
void rnic_mw_unbind_qp(RnicState *s, uint32_t qpn);

RnicMemErr rnic_mr_check(RnicState *s, uint32_t key, uint32_t pdn,
                         uint32_t access, uint64_t va, uint64_t len,
                         RnicMR **out);
/*
 * rnic_mr_check for a remote key arriving on QP 'qpn': an MR key, or a
 * window's, whose rights and range apply instead of the MR's.
 */
RnicMemErr rnic_rkey_check(RnicState *s, uint32_t rkey, uint32_t pdn,
                           uint32_t qpn, uint32_t access, uint64_t va,
                           uint64_t len, RnicMR **out);
/* Copies between 'buf' and [va, va + len) of a checked MR. */
/* rnic-qp.c: "RESET" .. "ERR" for an enum rnic_qp_state. */
const char *rnic_qps_str(uint8_t st);
/* rnic-qom.c: the read-only QOM properties that show the device's state. */
void rnic_qom_init(Object *obj);

RnicMemErr rnic_mr_copy(RnicState *s, RnicMR *mr, uint64_t va, void *buf,
                        uint64_t len, bool to_guest);
/* FLUSH to persistence: sync [va, va + len) of the MR to its backing. */
RnicMemErr rnic_mr_persist(RnicState *s, RnicMR *mr, uint64_t va,
                           uint64_t len);

/* Host-order SGE. */
typedef struct RnicSge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} RnicSge;

/*
 * Copies 'len' bytes starting at byte 'off' of the SGE list to or from
 * 'buf', checking every lkey against 'pdn' and 'access'.
 */
RnicMemErr rnic_sgl_copy(RnicState *s, uint32_t pdn, uint32_t access,
                         const RnicSge *sge, unsigned nsge, uint64_t off,
                         void *buf, uint64_t len, bool to_guest);

/* rnic-net.c */
ssize_t rnic_net_receive(NetClientState *nc, const uint8_t *buf, size_t len);
bool rnic_net_can_receive(NetClientState *nc);
/*
 * Sends one RoCE frame: loss injection, loopback, or the netdev.  The
 * transport counts TX_PKTS/TX_BYTES before calling it; this counts
 * TX_LOSS_INJECTED and LOOPBACK_PKTS.  rnic_tp_rx() counts RX_PKTS,
 * RX_BYTES and the frames it drops.
 */
void rnic_net_roce_tx(RnicState *s, const uint8_t *frame, size_t len);
void rnic_net_tx_run(RnicState *s);
void rnic_net_reset(RnicState *s);
void rnic_net_fault_reseed(RnicState *s);
void rnic_net_init(RnicState *s);       /* realize */
void rnic_net_fini(RnicState *s);       /* unrealize */
/* Injected faults: sends due delayed frames and a held reordered one. */
void rnic_net_delay_run(RnicState *s);
void rnic_net_flush_held(RnicState *s);
void rnic_net_link_status_changed(NetClientState *nc);
/* Hands queued RoCE frames to the transport; decrements *budget each. */
void rnic_net_rx_run(RnicState *s, int *budget);
bool rnic_net_rx_pending(RnicState *s);

/*
 * rnic-transport.c: the transport's entry points for the core.  The
 * engines behind them are in rnic-req.c, rnic-comp.c and rnic-resp.c.
 */
bool rnic_tp_qp_init(RnicState *s, RnicQP *qp);      /* at CREATE_QP */
void rnic_tp_qp_fini(RnicState *s, RnicQP *qp);      /* at DESTROY_QP */
/* After MODIFY_QP applied attributes and moved from 'old_state'. */
void rnic_tp_qp_modified(RnicState *s, RnicQP *qp, uint8_t old_state,
                         uint32_t attr_mask);
/*
 * The QP is in ERR: stops its timers and schedules it; rnic_tp_qp_run()
 * then completes every outstanding SQ/RQ WQE with WR_FLUSH_ERR, within
 * the bottom half's budget.
 */
void rnic_tp_qp_flush(RnicState *s, RnicQP *qp);
/*
 * Requester and RQ work for one QP; decrements *budget per WQE/packet.
 * The core puts the QP back on the work list when *budget reached 0;
 * otherwise the transport calls rnic_qp_schedule() when it has more work.
 */
void rnic_tp_qp_run(RnicState *s, RnicQP *qp, int *budget);
/* One RoCEv2 frame addressed to this device. */
void rnic_tp_rx(RnicState *s, const uint8_t *frame, size_t len);
/* The receive batch is over: send the ACKs it owes. */
void rnic_tp_rx_end(RnicState *s);
/* SQ doorbell records (struct rnic_sq_dbrec); the ring starts over. */
void rnic_sq_dbrec_reset(RnicState *s, RnicQP *qp);
/* Takes the QP off the list of those whose record the sweep reads. */
void rnic_sq_dbrec_forget(RnicState *s, RnicQP *qp);
/* Takes a new producer index from the record; true if the SQ grew. */
bool rnic_sq_dbrec_poll(RnicState *s, RnicQP *qp);
/* Reads the records of up to 'n' QPs waiting without RING, in turn. */
void rnic_sq_dbrec_sweep(RnicState *s, unsigned n);

#endif /* HW_RNIC_H */
