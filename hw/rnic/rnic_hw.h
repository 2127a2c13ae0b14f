/* SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause) */
/*
 * rnic device ABI: the one contract between the QEMU device model, the
 * Linux driver and the rdma-core provider.
 *
 * This file is the source of truth.  The driver's copy (in kernel style,
 * in guest-driver/kernel) and the provider's (in guest-driver/provider)
 * are made by scripts/sync-abi.sh; edit this one and re-run the script
 * (a unit test fails on drift).
 *
 * Rules: every field is fixed-width and little-endian, every struct is
 * explicitly padded and size-asserted, and there are no C bitfields:
 * multi-bit fields are named masks and shifts.
 * Reserved fields are named by their byte offset and must be zero.
 *
 * The data the driver and the provider exchange through uverbs (never
 * seen by the device) is in include/uapi/rdma/rnic-abi.h.
 *
 * docs/design.md describes the semantics behind these layouts.
 */
#ifndef RNIC_HW_H
#define RNIC_HW_H

#if defined(__KERNEL__)
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/types.h>
#define RNIC_ABI_ASSERT(cond, msg) static_assert(cond, msg)
typedef __le16 rnic_le16;
typedef __le32 rnic_le32;
typedef __le64 rnic_le64;
#else
#include <stdint.h>
#include <assert.h>
#define RNIC_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
typedef uint16_t rnic_le16;
typedef uint32_t rnic_le32;
typedef uint64_t rnic_le64;
#endif

#define RNIC_SIZE_CHECK(type, size) \
    RNIC_ABI_ASSERT(sizeof(type) == (size), "ABI size of " #type)

/* ------------------------------------------------------------------ */
/* Identity                                                            */
/* ------------------------------------------------------------------ */

/* Defaults; both IDs are device properties and the driver matches them. */
#define RNIC_PCI_VENDOR_ID          0x1234
#define RNIC_PCI_DEVICE_ID          0x7263
#define RNIC_PCI_REVISION           0x01

#define RNIC_MAGIC                  0x43494e52u /* "RNIC" read as LE32 */
/* Major 2: 64-byte CQEs with a device timestamp. */
#define RNIC_ABI_MAJOR              2
#define RNIC_ABI_MINOR              0
#define RNIC_ABI_VERSION            ((RNIC_ABI_MAJOR << 16) | RNIC_ABI_MINOR)

/* ------------------------------------------------------------------ */
/* BARs                                                                */
/* ------------------------------------------------------------------ */

#define RNIC_BAR_REGS               0   /* registers, 64 KiB */
#define RNIC_BAR_DB                 2   /* doorbell pages, 4 KiB each */
#define RNIC_BAR_MSIX               4   /* MSI-X table and PBA */

#define RNIC_REGS_SIZE              0x10000
#define RNIC_DB_PAGE_SIZE           4096
/* Doorbell page 0 belongs to the kernel driver; page N to user context N. */
#define RNIC_DB_PAGE_KERNEL         0

/* ------------------------------------------------------------------ */
/* Registers (BAR0).  32-bit unless noted; counters are 64-bit.         */
/* ------------------------------------------------------------------ */

#define RNIC_REG_MAGIC              0x0000  /* RO: RNIC_MAGIC */
#define RNIC_REG_VERSION            0x0004  /* RO: RNIC_ABI_VERSION */
#define RNIC_REG_CTRL               0x0008  /* RW */
#define RNIC_REG_STATUS             0x000c  /* RO */
#define RNIC_REG_DB_PAGES           0x0010  /* RO: doorbell pages in BAR2 */
#define RNIC_REG_MSIX_VECTORS       0x0014  /* RO */
#define RNIC_REG_FATAL_CODE         0x0018  /* RO: why STATUS.FATAL is set */

#define RNIC_CTRL_ENABLE            (1u << 0)
/* Write-1: return every object to its initial state; reads as zero. */
#define RNIC_CTRL_RESET             (1u << 1)

#define RNIC_STATUS_READY           (1u << 0)
#define RNIC_STATUS_FATAL           (1u << 1)
#define RNIC_STATUS_LINK_UP         (1u << 2)

/* FATAL_CODE values: why the device stopped. */
enum rnic_fatal_code {
    RNIC_FATAL_CMDQ_OVERRUN = 1,    /* CMDQ_PI too far ahead: commands stop */
    RNIC_FATAL_INTERNAL = 2,        /* internal error: everything stops */
};

/*
 * Command queue.  BASE and LOG_SIZE may only be written while CTRL.ENABLE
 * is clear; the device latches them when ENABLE is set.  PI is the
 * free-running producer index written by the driver; CI the consumer
 * index the device has reached.
 */
#define RNIC_REG_CMDQ_BASE_LO       0x0020
#define RNIC_REG_CMDQ_BASE_HI       0x0024
#define RNIC_REG_CMDQ_LOG_SIZE      0x0028
#define RNIC_REG_CMDQ_PI            0x002c  /* WO doorbell, reads last PI */
#define RNIC_REG_CMDQ_CI            0x0030  /* RO */

/* Ethernet function: one TX and one RX descriptor ring. */
#define RNIC_REG_TXQ_BASE_LO        0x0060
#define RNIC_REG_TXQ_BASE_HI        0x0064
#define RNIC_REG_TXQ_LOG_SIZE       0x0068
#define RNIC_REG_TXQ_PI             0x006c  /* WO doorbell */
#define RNIC_REG_TXQ_CI             0x0070  /* RO */
#define RNIC_REG_RXQ_BASE_LO        0x0080
#define RNIC_REG_RXQ_BASE_HI        0x0084
#define RNIC_REG_RXQ_LOG_SIZE       0x0088
#define RNIC_REG_RXQ_PI             0x008c  /* WO: buffers posted up to PI */
#define RNIC_REG_RXQ_CI             0x0090  /* RO */
#define RNIC_REG_NET_CTRL           0x00a0
#define RNIC_REG_NET_IRQ_MASK       0x00a4  /* bit 0 set: no net interrupt */
#define RNIC_REG_NET_VECTOR         0x00a8  /* MSI-X vector for TX/RX */
#define RNIC_REG_MAC_LO             0x00b0  /* RO: MAC bytes 0..3 */
#define RNIC_REG_MAC_HI             0x00b4  /* RO: MAC bytes 4..5 */

#define RNIC_NET_CTRL_RX_EN         (1u << 0)
#define RNIC_NET_CTRL_TX_EN         (1u << 1)
#define RNIC_NET_CTRL_PROMISC       (1u << 2)
#define RNIC_NET_CTRL_ALLMULTI      (1u << 3)

/*
 * Statistics: RNIC_CNT_MAX 64-bit counters at RNIC_REG_CNT_BASE + 8 * idx.
 * Read them with one 8-byte access, or LO then HI (HI is latched on LO).
 */
#define RNIC_REG_CNT_BASE           0x0100

enum rnic_counter {
    RNIC_CNT_TX_PKTS = 0,       /* RoCE packets sent (incl. retransmits) */
    RNIC_CNT_RX_PKTS,           /* RoCE packets accepted */
    RNIC_CNT_TX_BYTES,
    RNIC_CNT_RX_BYTES,
    RNIC_CNT_RETRANSMITS,       /* packets sent again after timeout/NAK */
    RNIC_CNT_ACK_TIMEOUTS,      /* local ACK timer expiries */
    RNIC_CNT_RNR_NAK_RCVD,
    RNIC_CNT_RNR_NAK_SENT,
    RNIC_CNT_SEQ_NAK_RCVD,
    RNIC_CNT_SEQ_NAK_SENT,
    RNIC_CNT_DUP_REQ,           /* duplicate requests seen by responder */
    RNIC_CNT_RX_ICRC_ERR,
    RNIC_CNT_RX_DROPPED,        /* malformed or unmatched RoCE frames */
    RNIC_CNT_TX_LOSS_INJECTED,  /* dropped by the "loss" property */
    RNIC_CNT_LOOPBACK_PKTS,     /* delivered without the netdev */
    RNIC_CNT_CQE_ERR,           /* CQEs written with status != SUCCESS */
    RNIC_CNT_ETH_TX_PKTS,       /* Ethernet function */
    RNIC_CNT_ETH_RX_PKTS,
    RNIC_CNT_ETH_RX_DROPPED,    /* no RX descriptor posted */
    RNIC_CNT_GUEST_ERR,         /* guest values refused */
    RNIC_CNT_TX_REORDER_INJECTED,   /* the fault-injection properties */
    RNIC_CNT_TX_DUP_INJECTED,
    RNIC_CNT_TX_CORRUPT_INJECTED,
    RNIC_CNT_TX_DELAY_INJECTED,
    RNIC_CNT_CWND_CUTS,         /* RC congestion window cut on a loss */
    RNIC_CNT_TAIL_PROBES,       /* early resends before the ACK timeout */
    RNIC_CNT_RAW_TX_PKTS,       /* frames sent by raw packet QPs */
    RNIC_CNT_RAW_RX_PKTS,       /* frames flow rules steered to a raw QP */
    RNIC_CNT_RAW_RX_DROPPED,    /* steered, but the QP could not take it */
    RNIC_CNT_TX_ROCE_V1,        /* RoCE v1 packets among TX_PKTS */
    RNIC_CNT_RX_ROCE_V1,        /* RoCE v1 packets received intact */
    RNIC_CNT_ECN_CE_RCVD,       /* requests that arrived marked CE */
    RNIC_CNT_CNP_SENT,          /* congestion notifications sent */
    RNIC_CNT_CNP_RCVD,          /* congestion notifications received */
    RNIC_CNT_SQ_DOORBELLS,      /* SQ doorbell writes taken */
    RNIC_CNT_SQ_DBREC_WQES,     /* WQEs learnt from SQ doorbell records */
    RNIC_CNT_OOO_KEPT,          /* requests kept past a gap (reorder buffer) */
    RNIC_CNT_SR_RESENDS,        /* NAKs answered by resending only the hole */
    /* InfiniBand link layer (link-layer=infiniband) */
    RNIC_CNT_IB_TX_NOT_ACTIVE,  /* not sent: the port is not ACTIVE */
    RNIC_CNT_IB_RX_NOT_ACTIVE,  /* dropped: the port is not ARMED/ACTIVE */
    RNIC_CNT_IB_RX_DLID_ERR,    /* dropped: DLID is not the port's */
    RNIC_CNT_IB_RX_PKEY_ERR,    /* dropped: P_Key is not the QP's */
    RNIC_CNT_MAX
};

/* ------------------------------------------------------------------ */
/* Doorbells (BAR2).  64-bit writes only, one page per context.          */
/* ------------------------------------------------------------------ */

#define RNIC_DB_SQ                  0x000   /* qpn | pi */
#define RNIC_DB_RQ                  0x008   /* qpn | pi */
#define RNIC_DB_CQ                  0x010   /* cqn | arm | ci */
#define RNIC_DB_SRQ                 0x018   /* srqn | pi */
#define RNIC_DB_EQ                  0x020   /* eqn | arm | ci, kernel page */
/*
 * RO, on every page: the device clock, in nanoseconds, read with one
 * 8-byte access.  It is the clock CQE timestamps come from, so a program
 * can relate them to "now" without a system call.
 */
#define RNIC_DB_CLOCK               0x040
#define RNIC_CLOCK_KHZ              1000000     /* ticks are nanoseconds */

#define RNIC_DB_QN_MASK             0x0000000000ffffffULL
#define RNIC_DB_ARM                 (1ULL << 24)    /* CQ/EQ: event on next */
#define RNIC_DB_ARM_SOLICITED       (1ULL << 25)    /* CQ: solicited/error */
#define RNIC_DB_IDX_MASK            0xffffffff00000000ULL

/* ------------------------------------------------------------------ */
/* Guest memory descriptors                                            */
/* ------------------------------------------------------------------ */

/*
 * A page list.  levels 0: addr is the start of npages contiguous pages.
 * levels 1: addr points at a contiguous array of npages LE64 page
 * addresses.  levels 2: addr points at a contiguous array of
 * ceil(npages / 512) LE64 addresses of 4 KiB pages, each holding up to
 * 512 LE64 page addresses.  Every page address is aligned to the page
 * size, 1 << page_shift.
 */
struct rnic_pbl {
    rnic_le64 addr;
    rnic_le32 npages;
    uint8_t page_shift;         /* 12 .. 30 */
    uint8_t levels;             /* 0, 1 or 2 */
    rnic_le16 rsvd_14;
};

RNIC_SIZE_CHECK(struct rnic_pbl, 16);

#define RNIC_PBL_ENTRIES_PER_PAGE   512
#define RNIC_PBL_MAX_LEVELS         2

struct rnic_sge {
    rnic_le64 addr;
    rnic_le32 length;
    rnic_le32 lkey;
};

RNIC_SIZE_CHECK(struct rnic_sge, 16);

/* ------------------------------------------------------------------ */
/* Command queue                                                       */
/* ------------------------------------------------------------------ */

enum rnic_cmd_opcode {
    RNIC_CMD_QUERY_DEVICE   = 0x01,
    RNIC_CMD_QUERY_PORT     = 0x02,
    RNIC_CMD_SET_GID        = 0x03,
    RNIC_CMD_DEL_GID        = 0x04,
    RNIC_CMD_ALLOC_UCTX     = 0x05,
    RNIC_CMD_DEALLOC_UCTX   = 0x06,
    RNIC_CMD_CREATE_EQ      = 0x07,
    RNIC_CMD_DESTROY_EQ     = 0x08,
    RNIC_CMD_CREATE_PD      = 0x10,
    RNIC_CMD_DESTROY_PD     = 0x11,
    RNIC_CMD_CREATE_CQ      = 0x20,
    RNIC_CMD_DESTROY_CQ     = 0x21,
    RNIC_CMD_RESIZE_CQ      = 0x22,
    RNIC_CMD_CREATE_QP      = 0x30,
    RNIC_CMD_DESTROY_QP     = 0x31,
    RNIC_CMD_MODIFY_QP      = 0x32,
    RNIC_CMD_QUERY_QP       = 0x33,
    RNIC_CMD_ATTACH_MCAST   = 0x34,
    RNIC_CMD_DETACH_MCAST   = 0x35,
    RNIC_CMD_CREATE_FLOW    = 0x36,
    RNIC_CMD_DESTROY_FLOW   = 0x37,
    RNIC_CMD_SET_RSS        = 0x38,
    RNIC_CMD_REG_MR         = 0x40,
    RNIC_CMD_DEREG_MR       = 0x41,
    RNIC_CMD_REREG_MR       = 0x42,
    RNIC_CMD_CREATE_SRQ     = 0x50,
    RNIC_CMD_DESTROY_SRQ    = 0x51,
    RNIC_CMD_MODIFY_SRQ     = 0x52,
    RNIC_CMD_QUERY_SRQ      = 0x53,
    RNIC_CMD_RESIZE_SRQ     = 0x54,
    RNIC_CMD_ALLOC_MW       = 0x60,
    RNIC_CMD_DEALLOC_MW     = 0x61,
    RNIC_CMD_MAD_IFC        = 0x70,
};

/* Command completion status, in rnic_cmd_resp.status. */
enum rnic_cmd_status {
    RNIC_CMD_OK             = 0x00,
    RNIC_CMD_ERR_OPCODE     = 0x01, /* unknown opcode */
    RNIC_CMD_ERR_STATE      = 0x02, /* device or object in the wrong state */
    RNIC_CMD_ERR_HANDLE     = 0x03, /* object does not exist */
    RNIC_CMD_ERR_PARAM      = 0x04, /* a field out of range or inconsistent */
    RNIC_CMD_ERR_RESOURCE   = 0x05, /* a device limit is reached */
    RNIC_CMD_ERR_BUSY       = 0x06, /* object still referenced */
    RNIC_CMD_ERR_DMA        = 0x07, /* guest memory could not be accessed */
    RNIC_CMD_ERR_NOT_SUPP   = 0x08, /* defined by the ABI, not implemented */
    RNIC_CMD_ERR_ACCESS     = 0x09, /* object owned by another context */
};

#define RNIC_CMD_ENTRY_SIZE         256
#define RNIC_CMDQ_MAX_LOG_SIZE      10

struct rnic_cmd_hdr {
    uint8_t opcode;             /* enum rnic_cmd_opcode */
    uint8_t flags;              /* must be zero */
    rnic_le16 uctx;             /* owning context, 0 = kernel */
    rnic_le32 cookie;           /* echoed in the response */
    rnic_le64 rsvd_8;
};

RNIC_SIZE_CHECK(struct rnic_cmd_hdr, 16);

/* Output of QUERY_DEVICE, written to rnic_cmd_query.out_addr. */
struct rnic_device_attr {
    rnic_le32 abi_version;
    rnic_le32 vendor_id;
    rnic_le32 vendor_part_id;
    rnic_le32 hw_ver;
    rnic_le64 fw_ver;
    rnic_le64 node_guid;        /* EUI-64 from the MAC */
    rnic_le64 max_mr_size;
    rnic_le64 page_size_cap;
    rnic_le32 max_qp;
    rnic_le32 max_qp_wr;
    rnic_le32 max_sge;          /* send and receive */
    rnic_le32 max_sge_rd;
    rnic_le32 max_cq;
    rnic_le32 max_cqe;
    rnic_le32 max_mr;
    rnic_le32 max_pd;
    rnic_le32 max_qp_rd_atom;
    rnic_le32 max_qp_init_rd_atom;
    rnic_le32 max_srq;
    rnic_le32 max_srq_wr;
    rnic_le32 max_srq_sge;
    rnic_le32 max_mw;
    rnic_le32 max_fast_reg_page_list_len;
    rnic_le32 max_pkeys;
    rnic_le32 max_inline;
    rnic_le32 max_uctx;
    rnic_le32 max_eq;
    rnic_le32 max_eqe;
    rnic_le32 max_gid;
    rnic_le32 num_comp_vectors;
    rnic_le32 cap_flags;        /* RNIC_DEV_CAP_* */
    rnic_le32 max_mr_pages;     /* page-list entries of one MR */
    /*
     * Host memory the device lets guest objects (page lists, QP state)
     * take, in MiB: creates beyond it fail with RNIC_CMD_ERR_RESOURCE.
     */
    rnic_le32 max_host_mem_mb;
    rnic_le32 max_mcast_grp;        /* multicast groups UD QPs can join */
    rnic_le32 max_mcast_qp_attach;  /* QPs per group */
    rnic_le32 max_flow;             /* CREATE_FLOW steering rules */
};

RNIC_SIZE_CHECK(struct rnic_device_attr, 160);

#define RNIC_DEV_CAP_RC             (1u << 0)
#define RNIC_DEV_CAP_UC             (1u << 1)
#define RNIC_DEV_CAP_UD             (1u << 2)
#define RNIC_DEV_CAP_SRQ            (1u << 3)
#define RNIC_DEV_CAP_ATOMIC         (1u << 4)
#define RNIC_DEV_CAP_MW             (1u << 5)
#define RNIC_DEV_CAP_FAST_REG       (1u << 6)
#define RNIC_DEV_CAP_INLINE         (1u << 7)
#define RNIC_DEV_CAP_SRQ_RESIZE     (1u << 8)   /* RESIZE_SRQ */
#define RNIC_DEV_CAP_FLUSH          (1u << 9)   /* RNIC_WR_FLUSH, both types */
#define RNIC_DEV_CAP_ATOMIC_WRITE   (1u << 10)  /* RNIC_WR_ATOMIC_WRITE */
#define RNIC_DEV_CAP_RAW_PACKET     (1u << 11)  /* RNIC_QPT_RAW_PACKET, flows */
#define RNIC_DEV_CAP_CLOCK          (1u << 12)  /* RNIC_DB_CLOCK, timestamps */
#define RNIC_DEV_CAP_SQ_DBREC       (1u << 13)  /* RNIC_QP_FLAG_SQ_DBREC */

/* The IBA's logical port states; Ethernet uses only DOWN and ACTIVE. */
enum rnic_port_state {
    RNIC_PORT_DOWN = 1,
    RNIC_PORT_INIT = 2,         /* InfiniBand: link up, not yet armed */
    RNIC_PORT_ARMED = 3,        /* InfiniBand: armed by the SM */
    RNIC_PORT_ACTIVE = 4,
};

/* rnic_port_attr.link_layer, the device's link-layer property. */
enum rnic_link_layer {
    RNIC_LINK_ETHERNET = 0,
    RNIC_LINK_INFINIBAND = 1,
};

/* rnic_port_attr.phys_state: the IBA's PortPhysicalState values. */
enum rnic_phys_state {
    RNIC_PHYS_POLLING = 2,      /* no link */
    RNIC_PHYS_LINK_UP = 5,
};

/*
 * Output of QUERY_PORT.  The device writes MIN(out_len, 48) bytes and
 * takes any out_len from RNIC_PORT_ATTR_MIN_SIZE up: a driver that knows
 * only the first 32 bytes gets exactly what it always got.  Bytes 16 on
 * are zero when link_layer is RNIC_LINK_ETHERNET.
 */
struct rnic_port_attr {
    uint8_t state;              /* enum rnic_port_state */
    uint8_t max_mtu;            /* enum rnic_mtu */
    uint8_t active_mtu;
    uint8_t rsvd_3;
    rnic_le32 gid_tbl_len;
    rnic_le32 max_msg_sz;
    rnic_le32 link_speed_mbps;
    uint8_t link_layer;         /* enum rnic_link_layer */
    uint8_t phys_state;         /* enum rnic_phys_state; IB only */
    uint8_t lmc;                /* IB: LID mask count, 0..7 */
    uint8_t sm_sl;              /* IB: SL to reach the SM */
    rnic_le16 lid;              /* IB: base LID, 0 until the SM sets it */
    rnic_le16 sm_lid;           /* IB: the subnet manager's LID */
    rnic_le32 port_cap_flags;   /* IB: PortInfo.CapabilityMask */
    rnic_le16 pkey_tbl_len;     /* IB: P_Key table entries */
    rnic_le16 rsvd_30;
    rnic_le64 port_guid;        /* IB: the port-guid property */
    rnic_le64 rsvd_40;
};

RNIC_SIZE_CHECK(struct rnic_port_attr, 48);

#define RNIC_PORT_ATTR_MIN_SIZE     32

enum rnic_mtu {
    RNIC_MTU_256 = 1,
    RNIC_MTU_512 = 2,
    RNIC_MTU_1024 = 3,
    RNIC_MTU_2048 = 4,
    RNIC_MTU_4096 = 5,
};

/* QUERY_DEVICE, QUERY_PORT, QUERY_QP, QUERY_SRQ. */
struct rnic_cmd_query {
    rnic_le64 out_addr;         /* DMA address the answer is written to */
    rnic_le32 out_len;          /* at least the answer's size */
    rnic_le32 handle;           /* port number, qpn or srqn */
};

RNIC_SIZE_CHECK(struct rnic_cmd_query, 16);

/*
 * MAD_IFC: the device's management agents (the SMA and the PMA of an
 * InfiniBand port) answer one management datagram.  The driver passes
 * a MAD it received, or one of its own, and gets the response MAD.
 *
 * RNIC_MAD_IFC_LOCAL marks a SubnSet of what the host owns, as HCA
 * firmware takes it from its driver: NodeDescription, and of PortInfo
 * the CapabilityMask bits the host's software sets (RNIC_SMA_CAP_HOST:
 * IsSM and the like) and nothing else.  M_Key is not checked.
 *
 * RNIC_MAD_IFC_TRAP takes no MAD in (in_addr is not read) and alone:
 * the SMA's oldest pending trap, a SubnTrap(Notice) to the SM's LID, is
 * written to out_addr, or nothing when none is pending.  The driver
 * sends it from QP0 to PortInfo:MasterSMLID at MasterSMSL.  The SMA
 * holds RNIC_SMA_TRAPS of them; RNIC_EQE_SMA_TRAP says one is waiting.
 */
#define RNIC_MAD_SIZE               256

#define RNIC_MAD_IFC_QP0            (1u << 0)   /* arrived on QP0 */
#define RNIC_MAD_IFC_IGNORE_MKEY    (1u << 1)   /* the driver's own query */
#define RNIC_MAD_IFC_LOCAL          (1u << 2)   /* the host's own Set */
#define RNIC_MAD_IFC_TRAP           (1u << 3)   /* take a pending trap */
#define RNIC_MAD_IFC_FLAGS \
    (RNIC_MAD_IFC_QP0 | RNIC_MAD_IFC_IGNORE_MKEY | RNIC_MAD_IFC_LOCAL | \
     RNIC_MAD_IFC_TRAP)

/* PortInfo:CapabilityMask bits a LOCAL Set may change. */
#define RNIC_SMA_CAP_HOST \
    ((1u << 1) |    /* IsSM */ \
     (1u << 10) |   /* IsSMdisabled */ \
     (1u << 16) |   /* IsCommunicationManagementSupported */ \
     (1u << 17) |   /* IsSNMPTunnelingSupported */ \
     (1u << 19) |   /* IsDeviceManagementSupported */ \
     (1u << 20) |   /* IsVendorClassSupported */ \
     (1u << 23))    /* IsBootManagementSupported */
#define RNIC_SMA_TRAPS              8

struct rnic_cmd_mad_ifc {
    rnic_le64 in_addr;          /* RNIC_MAD_SIZE bytes: the MAD */
    rnic_le64 out_addr;         /* RNIC_MAD_SIZE bytes: the response */
    uint8_t port;               /* 1 */
    uint8_t flags;              /* RNIC_MAD_IFC_* */
    rnic_le16 slid;             /* the LRH's SLID the MAD came with */
    rnic_le32 rsvd_20;
};

RNIC_SIZE_CHECK(struct rnic_cmd_mad_ifc, 24);

/* MAD_IFC's rnic_cmd_resp.out[RNIC_OUT_MAD_REPLY]: a response was written. */
#define RNIC_OUT_MAD_REPLY          0

/*
 * A v1 GID holds any 16 bytes (an IPv4-mapped, IPv6 or link-local GID);
 * QPs and AHs whose source GID is v1 send RoCE v1 (EtherType 0x8915).
 */
enum rnic_gid_type {
    RNIC_GID_ROCE_V2_IPV4 = 1,  /* ::ffff:a.b.c.d */
    RNIC_GID_ROCE_V2_IPV6 = 2,
    RNIC_GID_ROCE_V1 = 3,
};

struct rnic_cmd_gid {
    rnic_le32 index;
    uint8_t type;               /* enum rnic_gid_type, SET_GID only */
    uint8_t rsvd_5[3];
    uint8_t gid[16];            /* network order */
    uint8_t mac[6];             /* source MAC used with this GID */
    uint8_t rsvd_30[2];
    rnic_le16 vlan_id;          /* 0xffff: untagged */
    rnic_le16 rsvd_34;
};

RNIC_SIZE_CHECK(struct rnic_cmd_gid, 36);

struct rnic_cmd_eq {
    rnic_le32 eqn;
    uint8_t log_size;           /* entries = 1 << log_size */
    uint8_t rsvd_5;
    rnic_le16 vector;           /* MSI-X vector raised for this EQ */
    struct rnic_pbl ring;       /* RNIC_EQE_SIZE entries */
};

RNIC_SIZE_CHECK(struct rnic_cmd_eq, 24);

/* DESTROY_* and DEALLOC_* and DEREG_MR: one handle. */
struct rnic_cmd_handle {
    rnic_le32 handle;
    rnic_le32 rsvd_4;
};

RNIC_SIZE_CHECK(struct rnic_cmd_handle, 8);

struct rnic_cmd_create_cq {
    uint8_t log_size;           /* CQEs = 1 << log_size */
    uint8_t rsvd_1;
    rnic_le16 rsvd_2;
    rnic_le32 eqn;              /* EQ receiving this CQ's events */
    /*
     * Page 0 of the ring holds struct rnic_cq_dbrec; CQEs start at page 1.
     * Pages are 4 KiB (page_shift 12).
     */
    struct rnic_pbl ring;
};

RNIC_SIZE_CHECK(struct rnic_cmd_create_cq, 24);

/*
 * RESIZE_CQ moves a CQ to a new ring (same layout as CREATE_CQ's).  The
 * CQEs not yet consumed (from the ci in the old ring's dbrec up to the
 * device's pi) are copied to entries 0.. of the new ring, whose consumer
 * index starts at 0; RNIC_OUT_MOVED tells how many.  PARAM when they do
 * not fit, STATE after an overrun.  The old ring is the driver's again
 * once the command completes.
 */
struct rnic_cmd_resize_cq {
    uint8_t log_size;
    uint8_t rsvd_1;
    rnic_le16 rsvd_2;
    rnic_le32 cqn;
    struct rnic_pbl ring;
};

RNIC_SIZE_CHECK(struct rnic_cmd_resize_cq, 24);

enum rnic_qp_type {
    RNIC_QPT_RC = 1,
    RNIC_QPT_UC = 2,
    RNIC_QPT_UD = 3,
    RNIC_QPT_GSI = 4,           /* QP1, carried as UD */
    /*
     * Whole Ethernet frames: a SEND's gather list is one frame, sent as
     * it is; frames that CREATE_FLOW rules steer to the QP land, from
     * the destination MAC on, in its receive WQEs.
     */
    RNIC_QPT_RAW_PACKET = 5,
    /*
     * QP0 of an InfiniBand port, carried as UD: subnet management packets
     * on VL15, in every port state but DOWN, to the permissive LID or the
     * port's own.  Kernel only; the port's SMA answers through MAD_IFC.
     */
    RNIC_QPT_SMI = 6,
};

#define RNIC_QP_FLAG_SIG_ALL        (1u << 0)   /* every WQE signaled */
#define RNIC_QP_FLAG_HAS_SRQ        (1u << 1)
/* Page 0 of the SQ ring is struct rnic_sq_dbrec; WQEs start at page 1. */
#define RNIC_QP_FLAG_SQ_DBREC       (1u << 2)

struct rnic_cmd_create_qp {
    uint8_t qp_type;            /* enum rnic_qp_type */
    uint8_t sq_log_size;        /* SQ WQEs = 1 << sq_log_size */
    uint8_t rq_log_size;        /* 0 with an SRQ */
    uint8_t max_send_sge;
    uint8_t max_recv_sge;
    uint8_t rsvd_5;
    rnic_le16 max_inline;
    rnic_le32 flags;            /* RNIC_QP_FLAG_* */
    rnic_le32 pdn;
    rnic_le32 send_cqn;
    rnic_le32 recv_cqn;
    rnic_le32 srqn;
    rnic_le32 rsvd_28;
    struct rnic_pbl sq;         /* 4 KiB pages of RNIC_SQ_WQE_SIZE WQEs */
    struct rnic_pbl rq;         /* 4 KiB pages of RNIC_RQ_WQE_SIZE WQEs */
};

RNIC_SIZE_CHECK(struct rnic_cmd_create_qp, 64);

/* QP states; values match the verbs enum ib_qp_state. */
enum rnic_qp_state {
    RNIC_QPS_RESET = 0,
    RNIC_QPS_INIT = 1,
    RNIC_QPS_RTR = 2,
    RNIC_QPS_RTS = 3,
    RNIC_QPS_SQD = 4,
    RNIC_QPS_SQE = 5,
    RNIC_QPS_ERR = 6,
};

/* MODIFY_QP attribute mask; bit values match the verbs IB_QP_* mask. */
#define RNIC_QP_ATTR_STATE              (1u << 0)
#define RNIC_QP_ATTR_CUR_STATE          (1u << 1)
#define RNIC_QP_ATTR_EN_SQD_ASYNC       (1u << 2)
#define RNIC_QP_ATTR_ACCESS_FLAGS       (1u << 3)
#define RNIC_QP_ATTR_PKEY_INDEX         (1u << 4)
#define RNIC_QP_ATTR_PORT               (1u << 5)
#define RNIC_QP_ATTR_QKEY               (1u << 6)
#define RNIC_QP_ATTR_AV                 (1u << 7)
#define RNIC_QP_ATTR_PATH_MTU           (1u << 8)
#define RNIC_QP_ATTR_TIMEOUT            (1u << 9)
#define RNIC_QP_ATTR_RETRY_CNT          (1u << 10)
#define RNIC_QP_ATTR_RNR_RETRY          (1u << 11)
#define RNIC_QP_ATTR_RQ_PSN             (1u << 12)
#define RNIC_QP_ATTR_MAX_QP_RD_ATOMIC   (1u << 13)
#define RNIC_QP_ATTR_ALT_PATH           (1u << 14)
#define RNIC_QP_ATTR_MIN_RNR_TIMER      (1u << 15)
#define RNIC_QP_ATTR_SQ_PSN             (1u << 16)
#define RNIC_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define RNIC_QP_ATTR_PATH_MIG_STATE     (1u << 18)
#define RNIC_QP_ATTR_CAP                (1u << 19)
#define RNIC_QP_ATTR_DEST_QPN           (1u << 20)

/* QP and MR access flags; values match the verbs IB_ACCESS_* flags. */
#define RNIC_ACCESS_LOCAL_WRITE     (1u << 0)
#define RNIC_ACCESS_REMOTE_WRITE    (1u << 1)
#define RNIC_ACCESS_REMOTE_READ     (1u << 2)
#define RNIC_ACCESS_REMOTE_ATOMIC   (1u << 3)
#define RNIC_ACCESS_MW_BIND         (1u << 4)
/* MR only: the placement types a remote FLUSH may ask of the MR. */
#define RNIC_ACCESS_FLUSH_GLOBAL    (1u << 8)
#define RNIC_ACCESS_FLUSH_PERSISTENT (1u << 9)

/*
 * On Ethernet the source GID's type decides the wire format and an AV
 * may say either RoCE type.  On an InfiniBand port (QUERY_PORT's
 * link_layer) every AV says RNIC_NET_IB, and only there.
 */
enum rnic_net_type {
    RNIC_NET_ROCE_V1 = 1,
    RNIC_NET_IB = 2,            /* LRH to the DLID; a GRH if RNIC_AV_IB_GRH */
    RNIC_NET_IPV4 = 4,
    RNIC_NET_IPV6 = 6,
};

/* struct rnic_av's ib.flags */
#define RNIC_AV_IB_GRH              (1u << 0)   /* send a GRH (dgid, ...) */
#define RNIC_AV_IB_FLAGS            RNIC_AV_IB_GRH

/* An IB address vector's link half, where RoCE has the next hop's MAC. */
struct rnic_av_ib {
    rnic_le16 dlid;
    uint8_t src_path_bits;      /* below the port's LMC */
    uint8_t flags;              /* RNIC_AV_IB_* */
    uint8_t rsvd_4[2];
};

RNIC_SIZE_CHECK(struct rnic_av_ib, 6);

/*
 * Address vector: where the packets of a QP (or a UD WQE) go.  RoCE
 * addresses the next hop by MAC; InfiniBand by LID, in the same bytes.
 * The GRH fields (dgid, sgid_index, hop_limit, flow_label, traffic
 * class) are always used on RoCE, and on IB only with RNIC_AV_IB_GRH.
 */
struct rnic_av {
    uint8_t dgid[16];           /* network order; IPv4 as ::ffff:a.b.c.d */
    union {
        uint8_t dmac[6];        /* RoCE */
        struct rnic_av_ib ib;   /* RNIC_NET_IB */
    };
    uint8_t sgid_index;
    uint8_t hop_limit;
    rnic_le32 flow_label;       /* 20 bits */
    uint8_t traffic_class;
    uint8_t net_type;           /* enum rnic_net_type */
    uint8_t sl;
    uint8_t rsvd_31;
};

RNIC_SIZE_CHECK(struct rnic_av, 32);

/* MODIFY_QP input and QUERY_QP output. */
struct rnic_qp_attr {
    uint8_t qp_state;           /* enum rnic_qp_state */
    uint8_t cur_qp_state;
    uint8_t path_mtu;           /* enum rnic_mtu */
    uint8_t timeout;            /* local ACK timeout: 4.096 us << timeout */
    uint8_t retry_cnt;          /* 0 .. 7 */
    uint8_t rnr_retry;          /* 0 .. 7, 7 = infinite */
    uint8_t min_rnr_timer;      /* 5-bit RNR NAK timer code */
    uint8_t max_rd_atomic;      /* outstanding READ/ATOMIC as requester */
    uint8_t max_dest_rd_atomic; /* ... and as responder */
    uint8_t sq_draining;        /* QUERY_QP only */
    uint8_t en_sqd_async_notify;
    uint8_t port_num;
    rnic_le16 pkey_index;
    rnic_le16 rsvd_14;
    rnic_le32 qkey;
    rnic_le32 dest_qpn;
    rnic_le32 rq_psn;
    rnic_le32 sq_psn;
    rnic_le32 access_flags;     /* RNIC_ACCESS_REMOTE_* */
    rnic_le32 rsvd_36;
    struct rnic_av av;
    /* QUERY_QP only: the QP's sizes. */
    rnic_le32 max_send_wr;
    rnic_le32 max_recv_wr;
    rnic_le32 max_send_sge;
    rnic_le32 max_recv_sge;
    rnic_le32 max_inline;
    rnic_le32 rsvd_92[9];
};

RNIC_SIZE_CHECK(struct rnic_qp_attr, 128);

struct rnic_cmd_modify_qp {
    rnic_le32 qpn;
    rnic_le32 attr_mask;        /* RNIC_QP_ATTR_* */
    struct rnic_qp_attr attr;
};

RNIC_SIZE_CHECK(struct rnic_cmd_modify_qp, 136);

#define RNIC_MR_FLAG_PHYS           (1u << 0)   /* iova == DMA address */
#define RNIC_MR_FLAG_FAST_REG       (1u << 1)   /* empty, filled by WQE */

struct rnic_cmd_reg_mr {
    rnic_le32 pdn;
    rnic_le32 access;           /* RNIC_ACCESS_* */
    rnic_le32 flags;            /* RNIC_MR_FLAG_* */
    rnic_le32 max_pages;        /* FAST_REG: page-list capacity */
    rnic_le64 iova;
    rnic_le64 length;
    struct rnic_pbl pages;      /* unused with PHYS and FAST_REG */
};

RNIC_SIZE_CHECK(struct rnic_cmd_reg_mr, 48);

/*
 * REREG_MR registers an existing user MR anew in place: new PD, access,
 * iova, length and pages (flags 0), same lkey and rkey.  BUSY while
 * windows are bound to it; on any error the MR is left as it was.
 */
struct rnic_cmd_rereg_mr {
    struct rnic_cmd_reg_mr reg;
    rnic_le32 key;              /* lkey of the MR */
    rnic_le32 rsvd_52;
};

RNIC_SIZE_CHECK(struct rnic_cmd_rereg_mr, 56);

struct rnic_cmd_create_srq {
    uint8_t log_size;
    uint8_t max_sge;
    rnic_le16 rsvd_2;
    rnic_le32 pdn;
    rnic_le32 cqn;              /* unused for RC; XRC later */
    rnic_le32 limit;            /* SRQ_LIMIT event threshold, 0 = off */
    struct rnic_pbl ring;       /* 4 KiB pages of RNIC_RQ_WQE_SIZE WQEs */
};

RNIC_SIZE_CHECK(struct rnic_cmd_create_srq, 32);

struct rnic_cmd_modify_srq {
    rnic_le32 srqn;
    rnic_le32 limit;
};

RNIC_SIZE_CHECK(struct rnic_cmd_modify_srq, 8);

/*
 * RESIZE_SRQ swaps the SRQ's ring for a larger one.  Indices stay
 * free-running: before the command the driver copies every WQE it has
 * posted and not seen complete from slot (index & (old entries - 1)) of
 * the old ring to slot (index & (new entries - 1)) of the new one, so the
 * WQEs the device has not taken yet are found where it looks for them.
 * The ring cannot shrink.
 */
struct rnic_cmd_resize_srq {
    rnic_le32 srqn;
    uint8_t log_size;
    uint8_t rsvd_5[3];
    struct rnic_pbl ring;       /* 4 KiB pages of RNIC_RQ_WQE_SIZE WQEs */
};

RNIC_SIZE_CHECK(struct rnic_cmd_resize_srq, 24);

/*
 * ATTACH_MCAST / DETACH_MCAST: a UD QP joins or leaves a multicast group,
 * named by its GID (IPv4-mapped 224.0.0.0/4 or IPv6 ff00::/8).  Frames
 * to the group (BTH destination QP 0xffffff) reach every QP attached,
 * including the ones of the sender's own device.
 */
struct rnic_cmd_mcast {
    rnic_le32 qpn;
    rnic_le32 rsvd_4;
    uint8_t gid[16];
};

RNIC_SIZE_CHECK(struct rnic_cmd_mcast, 24);

/*
 * CREATE_FLOW steers received frames to a raw packet QP.  A frame matches
 * when every field, under its mask, equals the frame's: a zero mask
 * matches anything.  Values and masks are in network byte order, as on
 * the wire.  ip_ver 4 or 6 restricts the rule to that IP version (and is
 * needed for the IP and port fields to mean anything); l4 restricts it to
 * TCP or UDP the same way.  A frame that matches a rule goes to that
 * rule's QP, to every such QP once, and no longer to the Ethernet
 * function: that includes frames the device's own raw QPs send.  RoCE
 * frames for the device's GIDs are never steered.
 */
enum rnic_flow_l4 {
    RNIC_FLOW_L4_ANY = 0,
    RNIC_FLOW_L4_TCP = 1,
    RNIC_FLOW_L4_UDP = 2,
};

struct rnic_flow_match {
    uint8_t dmac[6];
    uint8_t dmac_mask[6];
    uint8_t smac[6];
    uint8_t smac_mask[6];
    uint8_t ethertype[2];       /* after a VLAN tag, if any */
    uint8_t ethertype_mask[2];
    uint8_t vlan_tci[2];        /* a frame without a tag has TCI 0 */
    uint8_t vlan_tci_mask[2];
    uint8_t src_ip[16];         /* IPv4: the first 4 bytes */
    uint8_t src_ip_mask[16];
    uint8_t dst_ip[16];
    uint8_t dst_ip_mask[16];
    uint8_t src_port[2];
    uint8_t src_port_mask[2];
    uint8_t dst_port[2];
    uint8_t dst_port_mask[2];
    uint8_t ip_ver;             /* 0: any frame, 4 or 6 */
    uint8_t ip_proto;           /* IPv4 protocol, IPv6 next header */
    uint8_t ip_proto_mask;
    uint8_t l4;                 /* enum rnic_flow_l4 */
    uint8_t rsvd_108[4];
};

RNIC_SIZE_CHECK(struct rnic_flow_match, 112);

/*
 * SET_RSS makes a raw packet QP spread what its flow rules steer to it
 * over other raw QPs (the work queues of its indirection table): a
 * Toeplitz hash with 'key' over the frame's fields that 'fields' selects
 * (source address, destination address, source port, destination port,
 * in that order, of the IP version and L4 protocol the frame has) picks
 * entry hash & ((1 << log_tbl_size) - 1).  The QP itself then never
 * receives and need not leave RESET; the chosen QP must be receiving.
 * Field bits are those of the verbs' IBV_RX_HASH_*.
 */
#define RNIC_RSS_SRC_IPV4           (1u << 0)
#define RNIC_RSS_DST_IPV4           (1u << 1)
#define RNIC_RSS_SRC_IPV6           (1u << 2)
#define RNIC_RSS_DST_IPV6           (1u << 3)
#define RNIC_RSS_SRC_PORT_TCP       (1u << 4)
#define RNIC_RSS_DST_PORT_TCP       (1u << 5)
#define RNIC_RSS_SRC_PORT_UDP       (1u << 6)
#define RNIC_RSS_DST_PORT_UDP       (1u << 7)
#define RNIC_RSS_FIELDS             0xffu
#define RNIC_RSS_KEY_LEN            40
#define RNIC_RSS_MAX_LOG_TBL        5

struct rnic_cmd_set_rss {
    rnic_le32 qpn;
    uint8_t log_tbl_size;       /* at most RNIC_RSS_MAX_LOG_TBL */
    uint8_t key_len;            /* RNIC_RSS_KEY_LEN */
    rnic_le16 fields;           /* RNIC_RSS_* */
    uint8_t key[RNIC_RSS_KEY_LEN];
    rnic_le32 wq_qpn[1u << RNIC_RSS_MAX_LOG_TBL];
};

RNIC_SIZE_CHECK(struct rnic_cmd_set_rss, 176);

/* CREATE_FLOW answers the flow's handle in out[RNIC_OUT_HANDLE]. */
struct rnic_cmd_create_flow {
    rnic_le32 qpn;
    rnic_le32 rsvd_4;
    struct rnic_flow_match match;
};

RNIC_SIZE_CHECK(struct rnic_cmd_create_flow, 120);

struct rnic_cmd_alloc_mw {
    rnic_le32 pdn;
    uint8_t type;               /* 1 or 2 */
    uint8_t rsvd_5[3];
};

RNIC_SIZE_CHECK(struct rnic_cmd_alloc_mw, 8);

/*
 * Response, in the last 32 bytes of the entry.  The device writes every
 * other field first and 'done' last, so the driver may poll 'done'.
 */
struct rnic_cmd_resp {
    uint8_t status;             /* enum rnic_cmd_status */
    uint8_t rsvd_1[2];
    uint8_t done;               /* 1 when the response is valid */
    rnic_le32 cookie;
    rnic_le32 out[6];           /* see rnic_cmd_out_* below */
};

RNIC_SIZE_CHECK(struct rnic_cmd_resp, 32);

/* Indices into rnic_cmd_resp.out. */
/* uctx, pdn, cqn, qpn, srqn, eqn, mw rkey, flow */
#define RNIC_OUT_HANDLE     0
#define RNIC_OUT_LKEY       0   /* REG_MR */
#define RNIC_OUT_RKEY       1   /* REG_MR */
#define RNIC_OUT_ENTRIES    1   /* CQ/QP-SQ/SRQ: entries made */
#define RNIC_OUT_RQ_ENTRIES 2   /* CREATE_QP */
#define RNIC_OUT_MOVED      2   /* RESIZE_CQ: CQEs carried to the new ring */
/*
 * QUERY_SRQ answers in out[] (no out_addr buffer): the limit, the number
 * of entries and max_sge.
 */
#define RNIC_OUT_SRQ_LIMIT      0
#define RNIC_OUT_SRQ_ENTRIES    1
#define RNIC_OUT_SRQ_MAX_SGE    2

#define RNIC_CMD_PAYLOAD_SIZE \
    (RNIC_CMD_ENTRY_SIZE - sizeof(struct rnic_cmd_hdr) - \
     sizeof(struct rnic_cmd_resp))

struct rnic_cmd {
    struct rnic_cmd_hdr hdr;
    union {
        struct rnic_cmd_query query;
        struct rnic_cmd_gid gid;
        struct rnic_cmd_eq eq;
        struct rnic_cmd_handle handle;
        struct rnic_cmd_create_cq create_cq;
        struct rnic_cmd_resize_cq resize_cq;
        struct rnic_cmd_create_qp create_qp;
        struct rnic_cmd_modify_qp modify_qp;
        struct rnic_cmd_reg_mr reg_mr;
        struct rnic_cmd_rereg_mr rereg_mr;
        struct rnic_cmd_create_srq create_srq;
        struct rnic_cmd_modify_srq modify_srq;
        struct rnic_cmd_resize_srq resize_srq;
        struct rnic_cmd_alloc_mw alloc_mw;
        struct rnic_cmd_mcast mcast;
        struct rnic_cmd_create_flow create_flow;
        struct rnic_cmd_set_rss set_rss;
        struct rnic_cmd_mad_ifc mad_ifc;
        uint8_t raw[208];
    } u;
    struct rnic_cmd_resp resp;
};

RNIC_SIZE_CHECK(struct rnic_cmd, RNIC_CMD_ENTRY_SIZE);

/* ------------------------------------------------------------------ */
/* Event queues                                                        */
/* ------------------------------------------------------------------ */

enum rnic_eqe_type {
    RNIC_EQE_COMP = 0x01,           /* obj = cqn */
    RNIC_EQE_CQ_ERR = 0x02,         /* obj = cqn, overrun or DMA fault */
    RNIC_EQE_QP_FATAL = 0x03,       /* obj = qpn */
    RNIC_EQE_QP_REQ_ERR = 0x04,
    RNIC_EQE_QP_ACCESS_ERR = 0x05,
    RNIC_EQE_COMM_EST = 0x06,
    RNIC_EQE_SQ_DRAINED = 0x07,
    RNIC_EQE_QP_LAST_WQE = 0x08,
    RNIC_EQE_SRQ_LIMIT = 0x09,      /* obj = srqn */
    RNIC_EQE_PORT_ACTIVE = 0x0a,    /* obj = port */
    RNIC_EQE_PORT_DOWN = 0x0b,
    RNIC_EQE_EQ_OVERFLOW = 0x0c,    /* obj = eqn whose events were lost */
    RNIC_EQE_DEVICE_FATAL = 0x0d,   /* obj = 0, data = FATAL_CODE; on EQ 0 */
    RNIC_EQE_GID_CHANGE = 0x0e,     /* obj = GID index the device changed */
    /* InfiniBand ports only; obj = port. */
    RNIC_EQE_LID_CHANGE = 0x0f,     /* the SM set the LID or the LMC */
    RNIC_EQE_PKEY_CHANGE = 0x10,    /* the SM changed the P_Key table */
    RNIC_EQE_SM_CHANGE = 0x11,      /* the SM set the SM LID or SM SL */
    RNIC_EQE_SMA_TRAP = 0x12,       /* a trap waits: MAD_IFC with _TRAP */
};

#define RNIC_EQE_SIZE               16
#define RNIC_EQ_MAX_LOG_SIZE        16
#define RNIC_EQE_OWNER              (1u << 0)

/*
 * The device writes 'owner' last.  It holds bit 0 = 1 on the first pass
 * over the ring, 0 on the second, and so on: an entry is new when
 * (owner & 1) == !((ci >> log_size) & 1).
 */
struct rnic_eqe {
    uint8_t type;                   /* enum rnic_eqe_type */
    uint8_t rsvd_1[3];
    rnic_le32 obj;
    rnic_le32 data;
    uint8_t rsvd_12[3];
    uint8_t owner;
};

RNIC_SIZE_CHECK(struct rnic_eqe, RNIC_EQE_SIZE);

/* ------------------------------------------------------------------ */
/* Work queue entries                                                  */
/* ------------------------------------------------------------------ */

#define RNIC_SQ_WQE_SIZE            256
#define RNIC_RQ_WQE_SIZE            128
#define RNIC_SQ_MAX_SGE             12
#define RNIC_UD_MAX_SGE             8
#define RNIC_RQ_MAX_SGE             7
#define RNIC_MAX_INLINE             192
#define RNIC_WQ_MAX_LOG_SIZE        15

enum rnic_wr_opcode {
    RNIC_WR_SEND = 0x00,
    RNIC_WR_SEND_IMM = 0x01,
    RNIC_WR_SEND_INV = 0x02,
    RNIC_WR_RDMA_WRITE = 0x03,
    RNIC_WR_RDMA_WRITE_IMM = 0x04,
    RNIC_WR_RDMA_READ = 0x05,
    RNIC_WR_ATOMIC_CMP_SWP = 0x06,
    RNIC_WR_ATOMIC_FETCH_ADD = 0x07,
    RNIC_WR_LOCAL_INV = 0x08,
    RNIC_WR_REG_MR = 0x09,
    RNIC_WR_BIND_MW = 0x0a,
    RNIC_WR_ATOMIC_WRITE = 0x0b,    /* RC only */
    RNIC_WR_FLUSH = 0x0c,           /* RC only */
};

/*
 * RNIC_WR_FLUSH: imm_inv holds the FLUSH extended header as the wire
 * carries it: the placement types in its low bits (RNIC_FLUSH_GLOBAL,
 * RNIC_FLUSH_PERSISTENT) and the selectivity level above them.
 */
#define RNIC_FLUSH_GLOBAL           (1u << 0)
#define RNIC_FLUSH_PERSISTENT       (1u << 1)
#define RNIC_FLUSH_TYPE_MASK        0x0fu
#define RNIC_FLUSH_LEVEL_SHIFT      4
#define RNIC_FLUSH_LEVEL_MASK       0x30u
#define RNIC_FLUSH_LEVEL_RANGE      0   /* the RETH's range */
#define RNIC_FLUSH_LEVEL_MR         1   /* the whole MR of the rkey */

#define RNIC_WQE_SIGNALED           (1u << 0)
#define RNIC_WQE_SOLICITED          (1u << 1)
#define RNIC_WQE_FENCE              (1u << 2)
#define RNIC_WQE_INLINE             (1u << 3)

/*
 * Send WQE: a 64-byte header, then SGEs or inline data.  UD WQEs put a
 * struct rnic_av at offset 64 and SGEs from offset 128.
 *
 * Inline data (RNIC_WQE_INLINE, num_sge = 0) sits where the SGEs would:
 * from offset 64, or from offset 128 in a UD WQE, so a UD WQE holds at
 * most RNIC_SQ_WQE_SIZE - 128 inline bytes.
 *
 * imm_inv with an IMM opcode holds the four ImmDt bytes in wire order
 * (the verbs imm_data value stored unchanged, not byte-swapped); with
 * SEND_INV and LOCAL_INV it holds the key as an LE32 number.  CQEs use
 * the same convention (RNIC_CQE_WITH_IMM / RNIC_CQE_WITH_INV).
 */
struct rnic_send_wqe {
    rnic_le64 wr_id;
    uint8_t opcode;                 /* enum rnic_wr_opcode */
    uint8_t flags;                  /* RNIC_WQE_* */
    uint8_t num_sge;
    uint8_t rsvd_11;
    rnic_le32 imm_inv;              /* imm data (as on the wire) or rkey */
    rnic_le32 inline_len;
    rnic_le32 rkey;
    rnic_le64 remote_addr;
    rnic_le64 compare_add;
    rnic_le64 swap;
    rnic_le32 ud_qpn;               /* UD: destination QP */
    rnic_le32 ud_qkey;
    rnic_le64 rsvd_56;
};

RNIC_SIZE_CHECK(struct rnic_send_wqe, 64);

/*
 * REG_MR WQE overlay of struct rnic_send_wqe:
 *   remote_addr = iova, rkey = new key, imm_inv = access flags,
 *   compare_add = DMA address of an LE64 page array, inline_len = npages,
 *   swap = length, rsvd_11 = page_shift.
 * LOCAL_INV and SEND_INV: imm_inv = the key to invalidate (an MR's, or a
 * type 2 window's).
 * BIND_MW overlay (RC and UC QPs):
 *   rkey = the window's rkey with its new key byte, imm_inv = its access
 *   (RNIC_ACCESS_REMOTE_* only), remote_addr = va, swap = length,
 *   compare_add = lkey of the MR (it needs RNIC_ACCESS_MW_BIND, and local
 *   write for remote write or atomic).  A zero length unbinds a type 1
 *   window; a type 2 window must be unbound (invalidated) first.  Failures
 *   complete with RNIC_WC_MW_BIND_ERR.
 * Window rkeys are never MR keys; DEALLOC_MW takes the rkey as handle.
 * ATOMIC_WRITE overlay: rkey, remote_addr (8-byte aligned), compare_add =
 *   the 8 bytes to write, in memory order; no SGEs.
 * FLUSH overlay: rkey, remote_addr, swap = length, imm_inv = the FLUSH
 *   header (see RNIC_FLUSH_*); no SGEs.
 */

struct rnic_recv_wqe {
    rnic_le64 wr_id;
    uint8_t num_sge;
    uint8_t rsvd_9[7];
};

RNIC_SIZE_CHECK(struct rnic_recv_wqe, 16);

RNIC_ABI_ASSERT(sizeof(struct rnic_send_wqe) +
                RNIC_SQ_MAX_SGE * sizeof(struct rnic_sge) == RNIC_SQ_WQE_SIZE,
                "send WQE stride");
RNIC_ABI_ASSERT(sizeof(struct rnic_send_wqe) + sizeof(struct rnic_av) * 2 +
                RNIC_UD_MAX_SGE * sizeof(struct rnic_sge) == RNIC_SQ_WQE_SIZE,
                "UD send WQE stride");
RNIC_ABI_ASSERT(sizeof(struct rnic_recv_wqe) +
                RNIC_RQ_MAX_SGE * sizeof(struct rnic_sge) == RNIC_RQ_WQE_SIZE,
                "recv WQE stride");

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

/* Values match the verbs enum ib_wc_opcode. */
enum rnic_wc_opcode {
    RNIC_WC_SEND = 0,
    RNIC_WC_RDMA_WRITE = 1,
    RNIC_WC_RDMA_READ = 2,
    RNIC_WC_COMP_SWAP = 3,
    RNIC_WC_FETCH_ADD = 4,
    RNIC_WC_BIND_MW = 5,
    RNIC_WC_LOCAL_INV = 6,
    RNIC_WC_REG_MR = 8,
    RNIC_WC_FLUSH = 9,
    RNIC_WC_ATOMIC_WRITE = 10,
    RNIC_WC_RECV = 128,
    RNIC_WC_RECV_RDMA_WITH_IMM = 129,
};

/* Values match the verbs enum ib_wc_status. */
enum rnic_wc_status {
    RNIC_WC_SUCCESS = 0,
    RNIC_WC_LOC_LEN_ERR = 1,
    RNIC_WC_LOC_QP_OP_ERR = 2,
    RNIC_WC_LOC_PROT_ERR = 4,
    RNIC_WC_WR_FLUSH_ERR = 5,
    RNIC_WC_MW_BIND_ERR = 6,
    RNIC_WC_BAD_RESP_ERR = 7,
    RNIC_WC_LOC_ACCESS_ERR = 8,
    RNIC_WC_REM_INV_REQ_ERR = 9,
    RNIC_WC_REM_ACCESS_ERR = 10,
    RNIC_WC_REM_OP_ERR = 11,
    RNIC_WC_RETRY_EXC_ERR = 12,
    RNIC_WC_RNR_RETRY_EXC_ERR = 13,
    RNIC_WC_FATAL_ERR = 19,
    RNIC_WC_GENERAL_ERR = 21,
    RNIC_WC_STATUS_MAX = 22,    /* consumers clamp anything above */
};

#define RNIC_CQE_SIZE               64
/*
 * Up to 4M entries per CQ, as ConnectX offers: libfabric's RDM endpoints
 * ask for 256K by default.  query_device's max_cqe is the device's limit
 * (the max-cqe property), at most 1 << RNIC_CQ_MAX_LOG_SIZE.
 */
#define RNIC_CQ_MAX_LOG_SIZE        22
/*
 * RESIZE_CQ carries the unconsumed CQEs over to the new ring; it refuses
 * (RNIC_CMD_ERR_STATE) when more than this many are unconsumed, which
 * keeps one command's work bounded.  Consume first, then resize.
 */
#define RNIC_CQ_MOVE_MAX            (1u << 16)

#define RNIC_CQE_WITH_IMM           (1u << 0)
#define RNIC_CQE_WITH_INV           (1u << 1)
#define RNIC_CQE_GRH                (1u << 2)   /* UD: GRH/IP header at 0 */
#define RNIC_CQE_SOLICITED          (1u << 3)

#define RNIC_CQE_OWNER              (1u << 0)

/*
 * Same owner-bit convention as struct rnic_eqe; 'owner' is written last.
 * wqe_idx is the ring slot of the completed WQE: its free-running index
 * masked with (entries - 1) of the SQ or RQ it came from.  For an SRQ WQE
 * it is the low 16 bits of the free-running index, unmasked, because an
 * SRQ may be resized between the completion and its poll.
 * timestamp is the device clock (RNIC_DB_CLOCK) when the device wrote the
 * CQE; RESIZE_CQ carries it over unchanged.
 */
struct rnic_cqe {
    rnic_le64 wr_id;
    rnic_le32 qpn;
    rnic_le32 byte_len;
    rnic_le32 imm_inv;              /* as on the wire */
    rnic_le32 src_qp;               /* UD */
    rnic_le16 wqe_idx;              /* SQ/RQ/SRQ index of the completed WQE */
    /*
     * enum rnic_wc_opcode, low 8 bits; set in error CQEs too: RECV* for
     * RQ/SRQ WQEs, else the send opcode.
     */
    uint8_t opcode;
    uint8_t status;                 /* enum rnic_wc_status */
    uint8_t flags;                  /* RNIC_CQE_* */
    uint8_t vendor_err;
    uint8_t net_type;               /* UD: enum rnic_net_type of the source */
    uint8_t rsvd_31;
    rnic_le64 timestamp;            /* ns of the device clock */
    /* UD on an InfiniBand port: the LRH's SLID and SL, DLID path bits. */
    rnic_le16 slid;
    uint8_t sl;
    uint8_t dlid_path_bits;
    uint8_t rsvd_44[19];
    uint8_t owner;                  /* the last byte, written last */
};

RNIC_SIZE_CHECK(struct rnic_cqe, RNIC_CQE_SIZE);

/*
 * Page 0 of every CQ ring.  The consumer stores its free-running
 * consumer index here; the device reads it only when the ring looks full.
 * 'state' is between the kernel driver and the provider: the driver sets
 * RNIC_CQ_DBREC_DEAD when the device is removed or fails, after which no
 * CQE will ever arrive and the provider completes outstanding work itself.
 */
struct rnic_cq_dbrec {
    rnic_le32 ci;
    rnic_le32 state;            /* RNIC_CQ_DBREC_*; the device ignores it */
};

RNIC_SIZE_CHECK(struct rnic_cq_dbrec, 8);

#define RNIC_CQ_DBREC_PAGE_SIZE     4096
#define RNIC_CQ_DBREC_DEAD          (1u << 0)

/*
 * Page 0 of an SQ ring created with RNIC_QP_FLAG_SQ_DBREC.  A doorbell
 * write stalls the posting CPU behind everything else the device's
 * register path serializes with, so the producer stores its index here
 * and rings only while the device says it is idle:
 *
 *   producer: write the WQEs; write barrier; store pi; full barrier;
 *             if flags has RNIC_SQ_DBREC_RING, ring the SQ doorbell.
 *   device:   clears RING while it has SQ work and will look at pi again
 *             by itself (it is sending, or waits for ACKs or responses);
 *             before it goes idle it sets RING, then (full barrier)
 *             reads pi once more, so a WQE posted meanwhile is not lost.
 *
 * pi is the doorbell's producer index (16 significant bits) and is
 * checked the same way.  The device writes {0, RING} when it creates or
 * resets the QP; it never writes pi otherwise.
 */
struct rnic_sq_dbrec {
    rnic_le32 pi;               /* the producer's */
    rnic_le32 flags;            /* the device's: RNIC_SQ_DBREC_* */
};

RNIC_SIZE_CHECK(struct rnic_sq_dbrec, 8);

#define RNIC_SQ_DBREC_PAGE_SIZE     4096
#define RNIC_SQ_DBREC_RING          (1u << 0)

/* ------------------------------------------------------------------ */
/* Ethernet descriptors                                                */
/* ------------------------------------------------------------------ */

#define RNIC_NET_DESC_DONE          (1u << 0)
#define RNIC_NET_DESC_ERR           (1u << 1)
#define RNIC_NET_MAX_LOG_SIZE       12
#define RNIC_NET_MAX_FRAME          9216

/* One frame per descriptor.  The device sets DONE in 'status' last. */
struct rnic_net_desc {
    rnic_le64 addr;
    rnic_le16 len;                  /* TX: frame length; RX: written */
    rnic_le16 buf_len;              /* RX: buffer size */
    uint8_t rsvd_12[3];
    uint8_t status;                 /* RNIC_NET_DESC_* */
};

RNIC_SIZE_CHECK(struct rnic_net_desc, 16);

#endif /* RNIC_HW_H */
