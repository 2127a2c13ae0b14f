/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic-vfio: a minimal userspace driver for the "rnic" emulated PCI RDMA
 * NIC, run through VFIO (type1 IOMMU).  It brings the function up, connects
 * one RC QP to a peer over RoCE v2 with link-local IPv6 GIDs (no ARP),
 * checks RECV, SEND, RDMA WRITE and RDMA READ byte by byte, checks an error
 * completion the host injects, and tears everything down again.
 *
 * It was written from the device's programmer's reference manual,
 * docs/programming.md, alone: no device or driver source was consulted.
 * Section numbers in comments ("§6") are that manual's.  The structure
 * layouts are transcribed from its tables and checked against the sizes it
 * gives (§18) with static assertions.
 *
 * Usage: rnic-vfio --pci BDF --peer HOST:PORT [--port N] [--inject-file PATH]
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rnic fields are little-endian (§1); this program stores them natively"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ==== Device ABI, transcribed from the manual ==== */

/* §2, §19 */
enum {
    RNIC_BAR_REGS = 0, RNIC_BAR_DB = 2,
    RNIC_REGS_SIZE = 0x10000, RNIC_DB_PAGE_SIZE = 4096,
    RNIC_ABI_MAJOR = 2,
};
#define RNIC_MAGIC 0x43494e52u

/* §3: BAR0 registers (32-bit, naturally aligned 4-byte accesses) */
enum {
    RNIC_REG_MAGIC = 0x0000, RNIC_REG_VERSION = 0x0004,
    RNIC_REG_CTRL = 0x0008, RNIC_REG_STATUS = 0x000c,
    RNIC_REG_DB_PAGES = 0x0010, RNIC_REG_MSIX_VECTORS = 0x0014,
    RNIC_REG_FATAL_CODE = 0x0018,
    RNIC_REG_CMDQ_BASE_LO = 0x0020, RNIC_REG_CMDQ_BASE_HI = 0x0024,
    RNIC_REG_CMDQ_LOG_SIZE = 0x0028, RNIC_REG_CMDQ_PI = 0x002c,
    RNIC_REG_CMDQ_CI = 0x0030,
    RNIC_REG_MAC_LO = 0x00b0, RNIC_REG_MAC_HI = 0x00b4,
    RNIC_REG_CNT_BASE = 0x0100,         /* counter i at 0x100 + 8 * i */
};
enum { RNIC_CTRL_ENABLE = 1 << 0, RNIC_CTRL_RESET = 1 << 1 };
enum {
    RNIC_STATUS_READY = 1 << 0, RNIC_STATUS_FATAL = 1 << 1,
    RNIC_STATUS_LINK_UP = 1 << 2,
};
enum {
    RNIC_CNT_TX_PKTS = 0, RNIC_CNT_RX_PKTS = 1, RNIC_CNT_RETRANSMITS = 4,
    RNIC_CNT_RX_DROPPED = 12, RNIC_CNT_CQE_ERR = 15, RNIC_CNT_GUEST_ERR = 19,
};

/* §8: doorbells, offsets in a doorbell page, and the 64-bit value */
enum { RNIC_DB_SQ = 0x000, RNIC_DB_RQ = 0x008, RNIC_DB_EQ = 0x020 };
#define RNIC_DB_QN_MASK 0x0000000000ffffffull
#define RNIC_DB_ARM     (1ull << 24)

/* §6: command queue */
enum {
    RNIC_CMD_ENTRY_SIZE = 256, RNIC_CMD_PAYLOAD_SIZE = 208,
    RNIC_OUT_HANDLE = 0, RNIC_OUT_LKEY = 0, RNIC_OUT_RKEY = 1,
    RNIC_OUT_ENTRIES = 1, RNIC_OUT_RQ_ENTRIES = 2,
    RNIC_CMD_OK = 0x00, RNIC_CMD_ERR_HANDLE = 0x03, RNIC_CMD_ERR_BUSY = 0x06,
};

/* §7: opcodes of the commands this program uses */
enum {
    RNIC_CMD_QUERY_DEVICE = 0x01, RNIC_CMD_QUERY_PORT = 0x02,
    RNIC_CMD_SET_GID = 0x03, RNIC_CMD_DEL_GID = 0x04,
    RNIC_CMD_CREATE_EQ = 0x07, RNIC_CMD_DESTROY_EQ = 0x08,
    RNIC_CMD_CREATE_PD = 0x10, RNIC_CMD_DESTROY_PD = 0x11,
    RNIC_CMD_CREATE_CQ = 0x20, RNIC_CMD_DESTROY_CQ = 0x21,
    RNIC_CMD_CREATE_QP = 0x30, RNIC_CMD_DESTROY_QP = 0x31,
    RNIC_CMD_MODIFY_QP = 0x32, RNIC_CMD_QUERY_QP = 0x33,
    RNIC_CMD_REG_MR = 0x40, RNIC_CMD_DEREG_MR = 0x41,
};

/* §7 values; §5 access flags */
enum {
    RNIC_GID_ROCE_V2_IPV6 = 2, RNIC_PORT_ACTIVE = 4, RNIC_MTU_1024 = 3,
    RNIC_QPT_RC = 1, RNIC_NET_IPV6 = 6, RNIC_DEV_CAP_RC = 1 << 0,
    RNIC_ACCESS_LOCAL_WRITE = 1 << 0, RNIC_ACCESS_REMOTE_WRITE = 1 << 1,
    RNIC_ACCESS_REMOTE_READ = 1 << 2,
};

/* §12: QP states and MODIFY_QP attribute mask bits */
enum {
    RNIC_QPS_RESET = 0, RNIC_QPS_INIT = 1, RNIC_QPS_RTR = 2,
    RNIC_QPS_RTS = 3, RNIC_QPS_ERR = 6,
};
enum {
    RNIC_QP_ATTR_STATE = 1 << 0, RNIC_QP_ATTR_ACCESS_FLAGS = 1 << 3,
    RNIC_QP_ATTR_PKEY_INDEX = 1 << 4, RNIC_QP_ATTR_PORT = 1 << 5,
    RNIC_QP_ATTR_AV = 1 << 7, RNIC_QP_ATTR_PATH_MTU = 1 << 8,
    RNIC_QP_ATTR_TIMEOUT = 1 << 9, RNIC_QP_ATTR_RETRY_CNT = 1 << 10,
    RNIC_QP_ATTR_RNR_RETRY = 1 << 11, RNIC_QP_ATTR_RQ_PSN = 1 << 12,
    RNIC_QP_ATTR_MAX_QP_RD_ATOMIC = 1 << 13,
    RNIC_QP_ATTR_MIN_RNR_TIMER = 1 << 15, RNIC_QP_ATTR_SQ_PSN = 1 << 16,
    RNIC_QP_ATTR_MAX_DEST_RD_ATOMIC = 1 << 17,
    RNIC_QP_ATTR_DEST_QPN = 1 << 20,
};

/* §10 work requests, §11 completions, §13 events */
enum {
    RNIC_SQ_WQE_SIZE = 256, RNIC_RQ_WQE_SIZE = 128,
    RNIC_WR_SEND = 0x00, RNIC_WR_RDMA_WRITE = 0x03, RNIC_WR_RDMA_READ = 0x05,
    RNIC_WQE_SIGNALED = 1 << 0,
    RNIC_CQE_SIZE = 64,
    RNIC_WC_SEND = 0, RNIC_WC_RDMA_WRITE = 1, RNIC_WC_RDMA_READ = 2,
    RNIC_WC_RECV = 128,
    RNIC_WC_SUCCESS = 0, RNIC_WC_WR_FLUSH_ERR = 5, RNIC_WC_STATUS_MAX = 22,
    RNIC_CQE_WITH_IMM = 1 << 0, RNIC_CQE_WITH_INV = 1 << 1,
    RNIC_EQE_SIZE = 16,
    RNIC_EQE_CQ_ERR = 0x02, RNIC_EQE_DEVICE_FATAL = 0x0d,
    RNIC_EQE_GID_CHANGE = 0x0e,
};

/* §5 */
struct rnic_pbl {
    uint64_t addr;
    uint32_t npages;
    uint8_t page_shift, levels;
    uint16_t rsvd_14;
};

/* §10 */
struct rnic_sge {
    uint64_t addr;
    uint32_t length, lkey;
};

/* §6 */
struct rnic_cmd_hdr {
    uint8_t opcode, flags;
    uint16_t uctx;
    uint32_t cookie;
    uint64_t rsvd_8;
};

struct rnic_cmd_resp {
    uint8_t status, rsvd_1[2], done;
    uint32_t cookie;
    uint32_t out[6];
};

struct rnic_cmd {
    struct rnic_cmd_hdr hdr;
    uint8_t u[RNIC_CMD_PAYLOAD_SIZE];
    struct rnic_cmd_resp resp;
};

/* §7 */
struct rnic_cmd_query {
    uint64_t out_addr;
    uint32_t out_len, handle;
};

struct rnic_cmd_handle {
    uint32_t handle, rsvd_4;
};

struct rnic_device_attr {
    uint32_t abi_version, vendor_id, vendor_part_id, hw_ver;
    uint64_t fw_ver, node_guid, max_mr_size, page_size_cap;
    uint32_t max_qp, max_qp_wr, max_sge, max_sge_rd, max_cq, max_cqe;
    uint32_t max_mr, max_pd, max_qp_rd_atom, max_qp_init_rd_atom;
    uint32_t max_srq, max_srq_wr, max_srq_sge, max_mw;
    uint32_t max_fast_reg_page_list_len, max_pkeys, max_inline, max_uctx;
    uint32_t max_eq, max_eqe, max_gid, num_comp_vectors, cap_flags;
    uint32_t max_mr_pages, max_host_mem_mb, max_mcast_grp;
    uint32_t max_mcast_qp_attach, max_flow;
};

struct rnic_port_attr {
    uint8_t state, max_mtu, active_mtu, rsvd_3;
    uint32_t gid_tbl_len, max_msg_sz, link_speed_mbps, rsvd_16[4];
};

struct rnic_cmd_gid {
    uint32_t index;
    uint8_t type, rsvd_5[3], gid[16], mac[6], rsvd_30[2];
    uint16_t vlan_id, rsvd_34;
};

struct rnic_cmd_eq {
    uint32_t eqn;
    uint8_t log_size, rsvd_5;
    uint16_t vector;
    struct rnic_pbl ring;
};

struct rnic_cmd_create_cq {
    uint8_t log_size, rsvd_1;
    uint16_t rsvd_2;
    uint32_t eqn;
    struct rnic_pbl ring;
};

struct rnic_cmd_create_qp {
    uint8_t qp_type, sq_log_size, rq_log_size, max_send_sge, max_recv_sge;
    uint8_t rsvd_5;
    uint16_t max_inline;
    uint32_t flags, pdn, send_cqn, recv_cqn, srqn, rsvd_28;
    struct rnic_pbl sq, rq;
};

struct rnic_av {
    uint8_t dgid[16], dmac[6], sgid_index, hop_limit;
    uint32_t flow_label;
    uint8_t traffic_class, net_type, sl, rsvd_31;
};

struct rnic_qp_attr {
    uint8_t qp_state, cur_qp_state, path_mtu, timeout, retry_cnt, rnr_retry;
    uint8_t min_rnr_timer, max_rd_atomic, max_dest_rd_atomic, sq_draining;
    uint8_t en_sqd_async_notify, port_num;
    uint16_t pkey_index, rsvd_14;
    uint32_t qkey, dest_qpn, rq_psn, sq_psn, access_flags, rsvd_36;
    struct rnic_av av;
    uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
    uint32_t rsvd_92[9];
};

struct rnic_cmd_modify_qp {
    uint32_t qpn, attr_mask;
    struct rnic_qp_attr attr;
};

struct rnic_cmd_reg_mr {
    uint32_t pdn, access, flags, max_pages;
    uint64_t iova, length;
    struct rnic_pbl pages;
};

/* §8 */
struct rnic_cq_dbrec {
    uint32_t ci, state;
};

/* §10 */
struct rnic_send_wqe {
    uint64_t wr_id;
    uint8_t opcode, flags, num_sge, rsvd_11;
    uint32_t imm_inv, inline_len, rkey;
    uint64_t remote_addr, compare_add, swap;
    uint32_t ud_qpn, ud_qkey;
    uint64_t rsvd_56;
};

struct rnic_recv_wqe {
    uint64_t wr_id;
    uint8_t num_sge, rsvd_9[7];
};

/* §11 */
struct rnic_cqe {
    uint64_t wr_id;
    uint32_t qpn, byte_len, imm_inv, src_qp;
    uint16_t wqe_idx;
    uint8_t opcode, status, flags, vendor_err, net_type, rsvd_31;
    uint64_t timestamp;
    uint8_t rsvd_40[23], owner;
};

/* §13 */
struct rnic_eqe {
    uint8_t type, rsvd_1[3];
    uint32_t obj, data;
    uint8_t rsvd_12[3], owner;
};

/* §18: the sizes the header asserts, and the offsets we rely on most */
#define ABI_SIZE(s, n)      _Static_assert(sizeof(struct s) == (n), #s)
#define ABI_OFF(s, f, n)    _Static_assert(offsetof(struct s, f) == (n), #f)
ABI_SIZE(rnic_pbl, 16); ABI_SIZE(rnic_sge, 16); ABI_SIZE(rnic_cmd, 256);
ABI_SIZE(rnic_cmd_query, 16); ABI_SIZE(rnic_device_attr, 160);
ABI_SIZE(rnic_port_attr, 32); ABI_SIZE(rnic_cmd_gid, 36);
ABI_SIZE(rnic_cmd_eq, 24); ABI_SIZE(rnic_cmd_create_cq, 24);
ABI_SIZE(rnic_cmd_create_qp, 64); ABI_SIZE(rnic_av, 32);
ABI_SIZE(rnic_qp_attr, 128); ABI_SIZE(rnic_cmd_modify_qp, 136);
ABI_SIZE(rnic_cmd_reg_mr, 48); ABI_SIZE(rnic_cq_dbrec, 8);
ABI_SIZE(rnic_send_wqe, 64); ABI_SIZE(rnic_recv_wqe, 16);
ABI_SIZE(rnic_cqe, 64); ABI_SIZE(rnic_eqe, 16);
ABI_OFF(rnic_cmd, resp, 224); ABI_OFF(rnic_cmd_resp, done, 3);
ABI_OFF(rnic_device_attr, max_qp, 48); ABI_OFF(rnic_device_attr, max_eq, 120);
ABI_OFF(rnic_cmd_gid, vlan_id, 32); ABI_OFF(rnic_cmd_create_qp, sq, 32);
ABI_OFF(rnic_av, flow_label, 24); ABI_OFF(rnic_qp_attr, port_num, 11);
ABI_OFF(rnic_qp_attr, av, 40); ABI_OFF(rnic_qp_attr, max_send_wr, 72);
ABI_OFF(rnic_cqe, wqe_idx, 24); ABI_OFF(rnic_cqe, owner, 63);

/* ==== Program parameters and state ==== */

/*
 * All DMA memory is one anonymous mapping at one IOVA range, so each ring
 * is contiguous for the device and a levels-0 page list of 4 KiB pages
 * describes it (§5).
 */
#define DMA_IOVA        0x100000000ull
#define DMA_SIZE        0x20000
#define OFF_CMDQ        0x00000     /* command ring (§6), one page */
#define OFF_QUERY       0x01000     /* answers of QUERY_* (§7) */
#define OFF_EQ          0x02000     /* EQ 0 ring, one page */
#define OFF_CQ          0x03000     /* CQ: record page, then CQE page (§5) */
#define OFF_SQ          0x05000     /* SQ ring, one page, no SQ record */
#define OFF_RQ          0x06000     /* RQ ring, one page */
#define OFF_BUF         0x10000     /* the 64 KiB buffer of the MR */
#define BUF_SIZE        0x10000u
#define PAGE_4K         4096u

#define CMDQ_LOG        4           /* 16 x 256 B = one page (§4 step 4) */
#define EQ_LOG          8           /* 256 x 16 B = one page */
#define CQ_LOG_MAX      6           /* 64 x 64 B = one page of CQEs */
#define WQ_LOG_MAX      4           /* SQ 16 x 256 B, RQ 16 x 128 B */

#define MSG_LEN         4096u
#define SEC             1000000000ull
#define WAIT_NS         (10 * SEC)  /* any wait for the device */
#define PEER_WAIT_S     30          /* TCP connect, or a line from the peer */

/* Buffer offsets of the data steps */
#define OFF_A           0
#define OFF_B           16384
#define OFF_C           20480
#define OFF_D           24576
#define OFF_INJ         28672
#define INJ_LEN         64

typedef struct PeerInfo {
    uint32_t qpn, psn, rkey, len;
    uint64_t addr;
    uint8_t gid[16];
} PeerInfo;

typedef struct Rnic {
    const char *bdf;
    int container, group, device, sock;
    FILE *peer_in;
    uint64_t cfg_off;
    uint16_t pci_cmd_saved;
    volatile uint8_t *bar0, *bar2;
    size_t bar0_size, bar2_size;
    uint8_t *dma;

    uint32_t cmd_pi, cmd_cookie;
    struct rnic_device_attr dev;
    struct rnic_port_attr port;
    unsigned port_num;
    uint8_t mac[6], gid[16];

    unsigned cq_log, sq_log, rq_log;
    uint32_t eq_ci, cq_ci, sq_pi, rq_pi;    /* free-running (§1) */
    uint32_t pdn, cqn, mr_key, qpn, psn;
} Rnic;

static Rnic rn = { .container = -1, .group = -1, .device = -1, .sock = -1 };

/* ==== Small helpers ==== */

/*
 * Barriers, named for the ownership rules they implement.  The emulated
 * device reads and writes guest memory coherently, so CPU fences suffice.
 */
static inline void wmb_before_doorbell(void)
{
    /* §6 step 2, §8: entries and WQEs in memory before PI or doorbell */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void rmb_after_owner(void)
{
    /* §9, §6 step 4: read owner/done first, the rest only after it */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    __asm__ __volatile__("" ::: "memory");
}

static inline void mb_before_release(void)
{
    /* finish reading an entry before handing its slot back (§9) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static uint32_t reg_rd32(uint32_t off)
{
    return *(volatile uint32_t *)(rn.bar0 + off);
}

static void reg_wr32(uint32_t off, uint32_t val)
{
    *(volatile uint32_t *)(rn.bar0 + off) = val;
}

static uint64_t counter(unsigned idx)
{
    /* §3: a single aligned 8-byte read per counter */
    return *(volatile uint64_t *)(rn.bar0 + RNIC_REG_CNT_BASE + 8 * idx);
}

static void db_write(uint32_t off, uint32_t qn, uint32_t idx, uint64_t bits)
{
    /* §8: one aligned 8-byte write; page 0 is the kernel's (uctx 0) */
    *(volatile uint64_t *)(rn.bar2 + off) =
        (qn & RNIC_DB_QN_MASK) | bits | ((uint64_t)idx << 32);
}

#define DMA_PTR(off)    ((void *)(rn.dma + (off)))
#define DMA_IOVA_OF(off) (DMA_IOVA + (off))

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    printf("rnic-vfio: FAIL: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (rn.bar0) {
        printf("rnic-vfio: STATUS 0x%x FATAL_CODE %u CMDQ_PI %u CMDQ_CI %u "
               "guest_err %" PRIu64 " cqe_err %" PRIu64 " rx_dropped %"
               PRIu64 "\n", reg_rd32(RNIC_REG_STATUS),
               reg_rd32(RNIC_REG_FATAL_CODE), rn.cmd_pi,
               reg_rd32(RNIC_REG_CMDQ_CI), counter(RNIC_CNT_GUEST_ERR),
               counter(RNIC_CNT_CQE_ERR), counter(RNIC_CNT_RX_DROPPED));
        /*
         * §14: reset the function before freeing memory it may still
         * write; process exit then drops the VFIO mappings.
         */
        reg_wr32(RNIC_REG_CTRL, RNIC_CTRL_RESET);
        (void)reg_rd32(RNIC_REG_STATUS);
    }
    fflush(stdout);
    exit(1);
}

/* die() unless cond holds; the message arguments are evaluated only then */
#define ensure(cond, ...) \
    do { if (!(cond)) { die(__VA_ARGS__); } } while (0)

static const char *cmd_name(uint8_t op)
{
    static const char *const names[] = {
        [0x01] = "QUERY_DEVICE", [0x02] = "QUERY_PORT", [0x03] = "SET_GID",
        [0x04] = "DEL_GID", [0x07] = "CREATE_EQ", [0x08] = "DESTROY_EQ",
        [0x10] = "CREATE_PD", [0x11] = "DESTROY_PD", [0x20] = "CREATE_CQ",
        [0x21] = "DESTROY_CQ", [0x30] = "CREATE_QP", [0x31] = "DESTROY_QP",
        [0x32] = "MODIFY_QP", [0x33] = "QUERY_QP", [0x40] = "REG_MR",
        [0x41] = "DEREG_MR",
    };

    return op < ARRAY_SIZE(names) && names[op] ? names[op] : "?";
}

static const char *cmd_status_name(uint8_t st)
{
    static const char *const names[] = {
        "RNIC_CMD_OK", "RNIC_CMD_ERR_OPCODE", "RNIC_CMD_ERR_STATE",
        "RNIC_CMD_ERR_HANDLE", "RNIC_CMD_ERR_PARAM", "RNIC_CMD_ERR_RESOURCE",
        "RNIC_CMD_ERR_BUSY", "RNIC_CMD_ERR_DMA", "RNIC_CMD_ERR_NOT_SUPP",
        "RNIC_CMD_ERR_ACCESS",
    };

    return st < ARRAY_SIZE(names) ? names[st] : "unknown status";
}

static const char *wc_status_name(uint8_t st)
{
    /* §11; the values 3, 14..18 and 20 have no name in the manual */
    static const char *const names[RNIC_WC_STATUS_MAX] = {
        [0] = "RNIC_WC_SUCCESS", [1] = "RNIC_WC_LOC_LEN_ERR",
        [2] = "RNIC_WC_LOC_QP_OP_ERR", [4] = "RNIC_WC_LOC_PROT_ERR",
        [5] = "RNIC_WC_WR_FLUSH_ERR", [6] = "RNIC_WC_MW_BIND_ERR",
        [7] = "RNIC_WC_BAD_RESP_ERR", [8] = "RNIC_WC_LOC_ACCESS_ERR",
        [9] = "RNIC_WC_REM_INV_REQ_ERR", [10] = "RNIC_WC_REM_ACCESS_ERR",
        [11] = "RNIC_WC_REM_OP_ERR", [12] = "RNIC_WC_RETRY_EXC_ERR",
        [13] = "RNIC_WC_RNR_RETRY_EXC_ERR", [19] = "RNIC_WC_FATAL_ERR",
        [21] = "RNIC_WC_GENERAL_ERR",
    };

    return st < RNIC_WC_STATUS_MAX && names[st] ? names[st] : "unnamed";
}

static const char *eqe_name(uint8_t type)
{
    static const char *const names[] = {
        NULL, "COMP", "CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR",
        "COMM_EST", "SQ_DRAINED", "QP_LAST_WQE", "SRQ_LIMIT", "PORT_ACTIVE",
        "PORT_DOWN", "EQ_OVERFLOW", "DEVICE_FATAL", "GID_CHANGE",
    };

    return type < ARRAY_SIZE(names) ? names[type] : NULL;
}

/* §9: a consumer at free-running index i owns the slot when owner == this */
static uint8_t owner_for(uint32_t idx, unsigned log)
{
    return !((idx >> log) & 1);
}

/* §5: pages a ring of 2^log entries of `size` bytes needs */
static uint32_t ring_pages(uint32_t size, unsigned log)
{
    return (uint32_t)((((uint64_t)size << log) + PAGE_4K - 1) / PAGE_4K);
}

static struct rnic_pbl pbl_contig(uint64_t off, uint32_t npages)
{
    /* §5: levels 0 (contiguous), 4 KiB pages (rings require shift 12) */
    return (struct rnic_pbl) {
        .addr = DMA_IOVA_OF(off), .npages = npages, .page_shift = 12,
    };
}

static unsigned log2_floor_capped(uint32_t v, unsigned cap)
{
    unsigned l = 31 - __builtin_clz(v);     /* v >= 1 */

    return l < cap ? l : cap;
}

/* ==== VFIO and PCI ==== */

static void cfg_rw(bool write, uint32_t off, void *buf, size_t len)
{
    ssize_t n = write ? pwrite(rn.device, buf, len, rn.cfg_off + off)
                      : pread(rn.device, buf, len, rn.cfg_off + off);

    ensure(n == (ssize_t)len, "config space %s at 0x%x: %s",
           write ? "write" : "read", off, strerror(errno));
}

static volatile uint8_t *map_bar(unsigned index, size_t min, size_t *size)
{
    struct vfio_region_info ri = { .argsz = sizeof(ri), .index = index };
    void *p;

    ensure(ioctl(rn.device, VFIO_DEVICE_GET_REGION_INFO, &ri) == 0,
           "region info of BAR%u: %s", index, strerror(errno));
    ensure(ri.size >= min && (ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
           "BAR%u: size 0x%llx (need 0x%zx), flags 0x%x: not mappable",
           index, (unsigned long long)ri.size, min, ri.flags);
    p = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, rn.device,
             ri.offset);
    ensure(p != MAP_FAILED, "mmap of BAR%u: %s", index, strerror(errno));
    *size = ri.size;
    return p;
}

static void vfio_open(void)
{
    char path[256], link[128];
    struct vfio_group_status gs = { .argsz = sizeof(gs) };
    struct vfio_device_info di = { .argsz = sizeof(di) };
    struct vfio_region_info ri = {
        .argsz = sizeof(ri), .index = VFIO_PCI_CONFIG_REGION_INDEX,
    };
    struct vfio_iommu_type1_dma_map map = {
        .argsz = sizeof(map), .iova = DMA_IOVA, .size = DMA_SIZE,
        .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
    };
    const char *grp;
    ssize_t n;
    int type = VFIO_TYPE1v2_IOMMU;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group",
             rn.bdf);
    n = readlink(path, link, sizeof(link) - 1);
    ensure(n > 0, "%s: %s (is the IOMMU on?)", path, strerror(errno));
    link[n] = '\0';
    grp = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;

    rn.container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
    ensure(rn.container >= 0 &&
           ioctl(rn.container, VFIO_GET_API_VERSION) == VFIO_API_VERSION,
           "/dev/vfio/vfio unusable: %s", strerror(errno));
    if (ioctl(rn.container, VFIO_CHECK_EXTENSION, type) <= 0) {
        type = VFIO_TYPE1_IOMMU;
        ensure(ioctl(rn.container, VFIO_CHECK_EXTENSION, type) > 0,
               "VFIO type1 IOMMU not supported");
    }
    snprintf(path, sizeof(path), "/dev/vfio/%s", grp);
    rn.group = open(path, O_RDWR | O_CLOEXEC);
    ensure(rn.group >= 0, "%s: %s (is %s bound to vfio-pci?)", path,
           strerror(errno), rn.bdf);
    ensure(ioctl(rn.group, VFIO_GROUP_GET_STATUS, &gs) == 0 &&
           (gs.flags & VFIO_GROUP_FLAGS_VIABLE),
           "IOMMU group %s is not viable: bind all its devices to vfio-pci",
           grp);
    ensure(ioctl(rn.group, VFIO_GROUP_SET_CONTAINER, &rn.container) == 0 &&
           ioctl(rn.container, VFIO_SET_IOMMU, type) == 0,
           "attaching group %s to the container: %s", grp, strerror(errno));
    rn.device = ioctl(rn.group, VFIO_GROUP_GET_DEVICE_FD, rn.bdf);
    ensure(rn.device >= 0, "VFIO_GROUP_GET_DEVICE_FD %s: %s", rn.bdf,
           strerror(errno));
    ensure(ioctl(rn.device, VFIO_DEVICE_GET_INFO, &di) == 0 &&
           (di.flags & VFIO_DEVICE_FLAGS_PCI) &&
           di.num_regions > VFIO_PCI_CONFIG_REGION_INDEX &&
           ioctl(rn.device, VFIO_DEVICE_GET_REGION_INFO, &ri) == 0,
           "%s is not a usable VFIO PCI device", rn.bdf);
    rn.cfg_off = ri.offset;

    /* DMA memory: zeroed (rings must start zeroed, §9), mapped at DMA_IOVA */
    rn.dma = mmap(NULL, DMA_SIZE, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ensure(rn.dma != MAP_FAILED, "mmap of DMA memory: %s", strerror(errno));
    memset(rn.dma, 0, DMA_SIZE);
    map.vaddr = (uintptr_t)rn.dma;
    ensure(ioctl(rn.container, VFIO_IOMMU_MAP_DMA, &map) == 0,
           "VFIO_IOMMU_MAP_DMA at 0x%llx: %s", (unsigned long long)DMA_IOVA,
           strerror(errno));
}

/*
 * §4 bring-up step 1.  vfio-pci already put the function in D0 when the
 * device was opened; what is left is memory decoding and bus mastering
 * ("without bus mastering every DMA of the device fails").  MSI-X stays
 * disabled: this program polls, and §2 says a message the device wants to
 * send while MSI-X is disabled is simply dropped.
 */
static void pci_enable(uint16_t *vendor, uint16_t *device)
{
    uint16_t cmd;

    cfg_rw(false, PCI_VENDOR_ID, vendor, 2);
    cfg_rw(false, PCI_DEVICE_ID, device, 2);
    cfg_rw(false, PCI_COMMAND, &cmd, 2);
    rn.pci_cmd_saved = cmd;
    cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    cfg_rw(true, PCI_COMMAND, &cmd, 2);
}

/* ==== Command queue (§6) ==== */

/*
 * Run one command synchronously and return its status; out[] receives the
 * response's result words.  Only one command is ever outstanding, so
 * PI - CI never exceeds 1 (§4 "The fatal state").
 */
static uint8_t cmd_exec(uint8_t op, const void *payload, size_t len,
                        uint32_t out[6])
{
    struct rnic_cmd *e = (struct rnic_cmd *)DMA_PTR(OFF_CMDQ) +
                         (rn.cmd_pi & ((1u << CMDQ_LOG) - 1));
    struct rnic_cmd_resp resp;
    uint32_t cookie = 0x52430000u + ++rn.cmd_cookie;   /* never 0 (§6) */
    uint64_t deadline = now_ns() + WAIT_NS;

    /* §6 step 1: header, payload, the rest of u zero, resp.done 0 */
    memset(e, 0, sizeof(*e));
    e->hdr.opcode = op;
    e->hdr.uctx = 0;
    e->hdr.cookie = cookie;
    if (len) {
        memcpy(e->u, payload, len);
    }
    /* §6 step 2: write barrier, then the new free-running PI */
    wmb_before_doorbell();
    rn.cmd_pi++;
    reg_wr32(RNIC_REG_CMDQ_PI, rn.cmd_pi);

    /* §6 step 4: poll resp.done (there is no completion interrupt) */
    while (*(volatile uint8_t *)&e->resp.done != 1) {
        ensure(!(reg_rd32(RNIC_REG_STATUS) & RNIC_STATUS_FATAL),
               "device entered the fatal state during %s", cmd_name(op));
        ensure(now_ns() < deadline, "timed out after 10 s waiting for "
               "command %s to complete", cmd_name(op));
        usleep(20);
    }
    rmb_after_owner();
    memcpy(&resp, &e->resp, sizeof(resp));

    /* the entry may be reused once CMDQ_CI has passed it (§6 step 4) */
    while ((int32_t)(reg_rd32(RNIC_REG_CMDQ_CI) - rn.cmd_pi) < 0) {
        ensure(now_ns() < deadline, "CMDQ_CI did not pass the entry of %s",
               cmd_name(op));
        usleep(20);
    }
    ensure(resp.cookie == cookie, "%s: response cookie 0x%x, expected 0x%x "
           "(status %s)", cmd_name(op), resp.cookie, cookie,
           cmd_status_name(resp.status));
    if (out) {
        memcpy(out, resp.out, sizeof(resp.out));
    }
    return resp.status;
}

static void cmd_ok(uint8_t op, const void *payload, size_t len,
                   uint32_t out[6])
{
    uint8_t st = cmd_exec(op, payload, len, out);

    ensure(st == RNIC_CMD_OK, "command %s failed: status 0x%02x (%s)",
           cmd_name(op), st, cmd_status_name(st));
}

/* QUERY_DEVICE/PORT/QP (§7): the answer is DMA-written to the query page */
static void cmd_query(uint8_t op, uint32_t handle, void *answer, size_t size)
{
    struct rnic_cmd_query q = {
        .out_addr = DMA_IOVA_OF(OFF_QUERY), .out_len = PAGE_4K,
        .handle = handle,
    };

    memset(DMA_PTR(OFF_QUERY), 0, PAGE_4K);
    cmd_ok(op, &q, sizeof(q), NULL);
    memcpy(answer, DMA_PTR(OFF_QUERY), size);
}

static void destroy(uint8_t op, uint32_t handle)
{
    struct rnic_cmd_handle h = { .handle = handle };

    cmd_ok(op, &h, sizeof(h), NULL);
}

/*
 * §7 SET_GID / DEL_GID.  Our only entry is index 0: fe80::/64 + the
 * modified EUI-64 of the MAC (§4 step 9), RoCE v2 over IPv6.
 */
static uint8_t set_gid(uint32_t index, bool set)
{
    struct rnic_cmd_gid g = { .index = index };

    if (set) {
        g.type = RNIC_GID_ROCE_V2_IPV6;
        memcpy(g.gid, rn.gid, 16);
        memcpy(g.mac, rn.mac, 6);   /* "use the port's MAC" (§7 SET_GID) */
        g.vlan_id = 0xffff;         /* untagged; 0 would mean VLAN 0 */
    }
    return cmd_exec(set ? RNIC_CMD_SET_GID : RNIC_CMD_DEL_GID, &g, sizeof(g),
                    NULL);
}

/* ==== EQ 0 and the CQ (§9, §11, §13) ==== */

/*
 * Consume whatever EQ 0 holds, then give the entries back with an EQ
 * doorbell: the only way the device learns of consumed EQEs (§8).
 */
static void eq_poll(void)
{
    struct rnic_eqe *ring = DMA_PTR(OFF_EQ), ev;
    uint32_t start = rn.eq_ci;

    for (;;) {
        struct rnic_eqe *slot = &ring[rn.eq_ci & ((1u << EQ_LOG) - 1)];

        if ((*(volatile uint8_t *)&slot->owner & 1) !=
            owner_for(rn.eq_ci, EQ_LOG)) {
            break;
        }
        rmb_after_owner();
        memcpy(&ev, slot, sizeof(ev));
        rn.eq_ci++;
        ensure(eqe_name(ev.type), "EQ 0 entry %u has unknown type 0x%02x",
               rn.eq_ci - 1, ev.type);
        printf("rnic-vfio: event %s obj %u data %u\n", eqe_name(ev.type),
               ev.obj, ev.data);
        ensure(ev.type != RNIC_EQE_DEVICE_FATAL,
               "device reported an internal error (code %u)", ev.data);
        ensure(ev.type != RNIC_EQE_CQ_ERR || ev.obj != rn.cqn,
               "CQ %u overran or could not be written (§14)", rn.cqn);
        if (ev.type == RNIC_EQE_GID_CHANGE) {
            /* §13: set the entry again from our record, or clear it */
            uint8_t st = set_gid(ev.obj, ev.obj == 0);

            ensure(st == RNIC_CMD_OK ||
                   (ev.obj != 0 && st == RNIC_CMD_ERR_HANDLE),
                   "restoring GID %u failed: %s", ev.obj, cmd_status_name(st));
        }
    }
    if (rn.eq_ci != start) {
        mb_before_release();
        db_write(RNIC_DB_EQ, 0, rn.eq_ci, 0);
    }
}

/* Take the next CQE if the device has written it */
static bool cq_poll_one(struct rnic_cqe *out)
{
    struct rnic_cq_dbrec *rec = DMA_PTR(OFF_CQ);
    struct rnic_cqe *ring = DMA_PTR(OFF_CQ + PAGE_4K);  /* page 1 on (§5) */
    struct rnic_cqe *slot = &ring[rn.cq_ci & ((1u << rn.cq_log) - 1)];

    if ((*(volatile uint8_t *)&slot->owner & 1) !=
        owner_for(rn.cq_ci, rn.cq_log)) {
        return false;
    }
    rmb_after_owner();
    memcpy(out, slot, sizeof(*out));
    rn.cq_ci++;
    /* §8 "CQ doorbell records": the record frees slots, no doorbell */
    mb_before_release();
    *(volatile uint32_t *)&rec->ci = rn.cq_ci;
    return true;
}

static void wait_cqe(struct rnic_cqe *cqe, const char *what)
{
    uint64_t deadline = now_ns() + WAIT_NS;

    while (!cq_poll_one(cqe)) {
        eq_poll();
        ensure(!(reg_rd32(RNIC_REG_STATUS) & RNIC_STATUS_FATAL),
               "device entered the fatal state while waiting for %s", what);
        ensure(now_ns() < deadline, "timed out after 10 s waiting for %s "
               "(CQ %u, ci %u)", what, rn.cqn, rn.cq_ci);
        usleep(20);
    }
}

/*
 * The device is untrusted (§14 "cqe-corrupt"): a CQE must name our QP,
 * the one WQE we have outstanding (by slot and by wr_id) and its opcode.
 * Send CQEs keep the opcode of the WR even with an error status (§11).
 */
static void check_cqe(const struct rnic_cqe *c, const char *what,
                      uint8_t opcode, uint64_t wr_id, uint16_t slot)
{
    ensure(c->qpn == rn.qpn, "%s: CQE for QP %u, expected %u", what, c->qpn,
           rn.qpn);
    ensure(c->wqe_idx == slot && c->wr_id == wr_id, "%s: CQE names wqe_idx "
           "%u wr_id 0x%" PRIx64 ", but the WQE outstanding is %u / 0x%"
           PRIx64, what, c->wqe_idx, c->wr_id, slot, wr_id);
    ensure(c->opcode == opcode, "%s: CQE opcode %u, expected %u (status %u "
           "%s)", what, c->opcode, opcode, c->status,
           wc_status_name(c->status));
    ensure(c->status < RNIC_WC_STATUS_MAX, "%s: CQE status %u out of range",
           what, c->status);
}

static void require_success(const struct rnic_cqe *c, const char *what)
{
    ensure(c->status == RNIC_WC_SUCCESS, "%s completed with status %u (%s)",
           what, c->status, wc_status_name(c->status));
    /* §11: data bytes of SEND, WRITE and READ; bytes placed for a RECV */
    ensure(c->byte_len == MSG_LEN, "%s: byte_len %u, expected %u", what,
           c->byte_len, MSG_LEN);
}

/* ==== Work requests (§10) ==== */

static uint16_t post_send(uint8_t opcode, uint64_t wr_id, uint32_t off,
                          uint32_t len, uint64_t raddr, uint32_t rkey)
{
    uint16_t slot = rn.sq_pi & ((1u << rn.sq_log) - 1);
    uint8_t *w = (uint8_t *)DMA_PTR(OFF_SQ) + slot * RNIC_SQ_WQE_SIZE;
    struct rnic_send_wqe *h = (struct rnic_send_wqe *)w;
    struct rnic_sge *sge = (struct rnic_sge *)(w + 64);  /* RC: at 64 */

    memset(w, 0, RNIC_SQ_WQE_SIZE);
    h->wr_id = wr_id;
    h->opcode = opcode;
    h->flags = RNIC_WQE_SIGNALED;
    h->num_sge = 1;
    h->rkey = rkey;
    h->remote_addr = raddr;
    sge->addr = DMA_IOVA_OF(OFF_BUF) + off;     /* the MR's iova = IOVA */
    sge->length = len;
    sge->lkey = rn.mr_key;

    /* §8: the WQE in memory behind a write barrier, then the doorbell */
    wmb_before_doorbell();
    rn.sq_pi++;
    db_write(RNIC_DB_SQ, rn.qpn, rn.sq_pi, 0);
    return slot;
}

static uint16_t post_recv(uint64_t wr_id, uint32_t off, uint32_t len)
{
    uint16_t slot = rn.rq_pi & ((1u << rn.rq_log) - 1);
    uint8_t *w = (uint8_t *)DMA_PTR(OFF_RQ) + slot * RNIC_RQ_WQE_SIZE;
    struct rnic_recv_wqe *h = (struct rnic_recv_wqe *)w;
    struct rnic_sge *sge = (struct rnic_sge *)(w + 16);  /* §10: at 16 */

    memset(w, 0, RNIC_RQ_WQE_SIZE);
    h->wr_id = wr_id;
    h->num_sge = 1;
    sge->addr = DMA_IOVA_OF(OFF_BUF) + off;
    sge->length = len;
    sge->lkey = rn.mr_key;

    wmb_before_doorbell();
    rn.rq_pi++;
    db_write(RNIC_DB_RQ, rn.qpn, rn.rq_pi, 0);
    return slot;
}

static void fill_pattern(uint32_t off, unsigned k)
{
    uint8_t *p = (uint8_t *)DMA_PTR(OFF_BUF) + off;

    for (uint32_t i = 0; i < MSG_LEN; i++) {
        p[i] = (uint8_t)(i * 7 + k);
    }
}

static void check_pattern(uint32_t off, unsigned k, const char *step)
{
    const uint8_t *p = (const uint8_t *)DMA_PTR(OFF_BUF) + off;

    for (uint32_t i = 0; i < MSG_LEN; i++) {
        ensure(p[i] == (uint8_t)(i * 7 + k), "step %s: byte %u is 0x%02x, "
               "expected 0x%02x (P%u)", step, i, p[i], (uint8_t)(i * 7 + k),
               k);
    }
}

/* ==== TCP side channel ==== */

static void tcp_connect(const char *hostport)
{
    char host[256], *port;
    uint64_t deadline = now_ns() + PEER_WAIT_S * SEC;
    struct timeval tv = { .tv_sec = PEER_WAIT_S };
    const char *why = "no address";
    int one = 1;

    snprintf(host, sizeof(host), "%s", hostport);
    port = strrchr(host, ':');
    ensure(port && port != host, "bad --peer %s (want HOST:PORT)", hostport);
    *port++ = '\0';

    while (rn.sock < 0) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
        int rc = getaddrinfo(host, port, &hints, &res);

        why = rc ? gai_strerror(rc) : why;
        for (ai = rc ? NULL : res; ai && rn.sock < 0; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                            ai->ai_protocol);

            if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                rn.sock = fd;
            } else {
                why = strerror(errno);
                if (fd >= 0) {
                    close(fd);
                }
            }
        }
        if (rc == 0) {
            freeaddrinfo(res);
        }
        if (rn.sock < 0) {
            ensure(now_ns() < deadline, "could not connect to %s within "
                   "30 s: %s", hostport, why);
            usleep(500000);
        }
    }
    /* lines are read through stdio; a receive timeout bounds every read */
    setsockopt(rn.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(rn.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    rn.peer_in = fdopen(dup(rn.sock), "r");
    ensure(rn.peer_in, "fdopen: %s", strerror(errno));
}

static void send_line(const char *line)
{
    size_t len = strlen(line), done = 0;

    while (done < len) {
        ssize_t n = send(rn.sock, line + done, len - done, MSG_NOSIGNAL);

        ensure(n > 0 || errno == EINTR, "sending to the peer: %s",
               strerror(errno));
        done += n > 0 ? (size_t)n : 0;
    }
}

static void read_line(char *buf, size_t size, const char *what)
{
    size_t n;

    errno = 0;
    ensure(fgets(buf, (int)size, rn.peer_in), "no %s from the peer: %s", what,
           errno == EAGAIN ? "timed out after 30 s" :
           errno ? strerror(errno) : "connection closed");
    n = strlen(buf);
    /* glibc's fgets returns a partial line on a timeout after some bytes */
    ensure(n && buf[n - 1] == '\n', "the peer's %s line is incomplete or "
           "too long", what);
    buf[--n] = '\0';
    if (n && buf[n - 1] == '\r') {
        buf[n - 1] = '\0';
    }
}

static void expect_line(const char *want)
{
    char buf[128];

    read_line(buf, sizeof(buf), want);
    ensure(!strcmp(buf, want), "the peer sent \"%s\", expected \"%s\"", buf,
           want);
}

static void parse_peer(const char *line, PeerInfo *p)
{
    char gid[33];
    int end = -1;

    ensure(sscanf(line, "qpn=%" SCNu32 " psn=%" SCNu32 " gid=%32[0-9a-fA-F] "
                  "addr=%" SCNx64 " rkey=%" SCNx32 " len=%" SCNu32 "%n",
                  &p->qpn, &p->psn, gid, &p->addr, &p->rkey, &p->len,
                  &end) == 6 && end > 0 && line[end] == '\0' &&
           strlen(gid) == 32 && p->qpn <= 0xffffff && p->psn <= 0xffffff,
           "cannot parse the peer's line \"%s\"", line);
    for (int i = 0; i < 16; i++) {
        sscanf(gid + 2 * i, "%2hhx", &p->gid[i]);
    }
    /* we touch [addr, addr + 4096) and [addr + 8192, addr + 12288) */
    ensure(p->len >= 8192 + MSG_LEN && p->addr + p->len >= p->addr,
           "the peer's buffer (addr 0x%" PRIx64 " len %u) is too small",
           p->addr, p->len);
}

/* ==== Bring-up (§4) and objects ==== */

static void bring_up(void)
{
    uint16_t vendor, device;
    uint32_t version, db_pages, msix, st, mac_lo, mac_hi, out[6];
    struct rnic_cmd_eq eq = { 0 };
    struct rnic_device_attr *d = &rn.dev;
    uint64_t deadline;

    /* §4 step 1: PCI */
    pci_enable(&vendor, &device);
    rn.bar0 = map_bar(RNIC_BAR_REGS, RNIC_REGS_SIZE, &rn.bar0_size);
    rn.bar2 = map_bar(RNIC_BAR_DB, RNIC_DB_PAGE_SIZE, &rn.bar2_size);

    /* §4 step 2: identity (§2: MAGIC, then the major ABI version) */
    ensure(reg_rd32(RNIC_REG_MAGIC) == RNIC_MAGIC, "MAGIC reads 0x%08x: "
           "%04x:%04x is not an rnic", reg_rd32(RNIC_REG_MAGIC), vendor,
           device);
    version = reg_rd32(RNIC_REG_VERSION);
    ensure(version >> 16 == RNIC_ABI_MAJOR, "ABI version 0x%08x: major %u "
           "not supported", version, version >> 16);
    db_pages = reg_rd32(RNIC_REG_DB_PAGES);
    msix = reg_rd32(RNIC_REG_MSIX_VECTORS);
    ensure(db_pages >= 1 && msix >= 1, "DB_PAGES %u, MSIX_VECTORS %u",
           db_pages, msix);

    /* §4 step 3: reset, complete when the write completes (§1) */
    reg_wr32(RNIC_REG_CTRL, RNIC_CTRL_RESET);
    st = reg_rd32(RNIC_REG_STATUS);
    ensure(!(st & (RNIC_STATUS_READY | RNIC_STATUS_FATAL)),
           "STATUS 0x%x after CTRL.RESET", st);

    /* §4 step 4: zeroed 4 KiB-aligned ring of 256 << n bytes, 1 <= n <= 10 */
    memset(DMA_PTR(OFF_CMDQ), 0, RNIC_CMD_ENTRY_SIZE << CMDQ_LOG);
    reg_wr32(RNIC_REG_CMDQ_BASE_LO, (uint32_t)DMA_IOVA_OF(OFF_CMDQ));
    reg_wr32(RNIC_REG_CMDQ_BASE_HI, (uint32_t)(DMA_IOVA_OF(OFF_CMDQ) >> 32));
    reg_wr32(RNIC_REG_CMDQ_LOG_SIZE, CMDQ_LOG);

    /* §4 step 5: ENABLE must set READY; it zeroes CMDQ_PI and CMDQ_CI (§3) */
    reg_wr32(RNIC_REG_CTRL, RNIC_CTRL_ENABLE);
    st = reg_rd32(RNIC_REG_STATUS);
    ensure(st & RNIC_STATUS_READY, "STATUS.READY not set after CTRL.ENABLE "
           "(STATUS 0x%x)", st);
    rn.cmd_pi = 0;

    /* §4 step 6: EQ 0 (a CQ needs an existing EQ, §7), then arm it */
    eq.eqn = 0;
    eq.log_size = EQ_LOG;
    eq.vector = 0;
    eq.ring = pbl_contig(OFF_EQ, ring_pages(RNIC_EQE_SIZE, EQ_LOG));
    cmd_ok(RNIC_CMD_CREATE_EQ, &eq, sizeof(eq), out);
    ensure(out[RNIC_OUT_HANDLE] == 0, "CREATE_EQ returned EQ %u, not 0",
           out[RNIC_OUT_HANDLE]);
    db_write(RNIC_DB_EQ, 0, rn.eq_ci, RNIC_DB_ARM);

    /* §4 step 7: discovery; check every limit this program relies on */
    cmd_query(RNIC_CMD_QUERY_DEVICE, 0, d, sizeof(*d));
    ensure(d->abi_version >> 16 == RNIC_ABI_MAJOR &&
           (d->cap_flags & RNIC_DEV_CAP_RC), "QUERY_DEVICE: abi 0x%x caps "
           "0x%x", d->abi_version, d->cap_flags);
    ensure(d->max_qp >= 1 && d->max_cq >= 1 && d->max_pd >= 1 &&
           d->max_mr >= 1 && d->max_sge >= 1 && d->max_qp_wr >= 1 &&
           d->max_cqe >= 2 && d->max_gid >= 1 && d->max_mr_size >= BUF_SIZE &&
           d->max_mr_pages >= BUF_SIZE / PAGE_4K && d->max_qp_rd_atom >= 1 &&
           d->max_qp_init_rd_atom >= 1,
           "QUERY_DEVICE limits are too small for this program");
    /* ring sizes: ours, within max_cqe and max_qp_wr (§7 "Limits") */
    rn.cq_log = log2_floor_capped(d->max_cqe, CQ_LOG_MAX);
    rn.sq_log = log2_floor_capped(d->max_qp_wr, WQ_LOG_MAX);
    rn.rq_log = rn.sq_log;

    cmd_query(RNIC_CMD_QUERY_PORT, rn.port_num, &rn.port, sizeof(rn.port));
    deadline = now_ns() + WAIT_NS;
    while (rn.port.state != RNIC_PORT_ACTIVE) {
        ensure(now_ns() < deadline, "the port is not active after 10 s "
               "(state %u)", rn.port.state);
        eq_poll();
        usleep(10000);
        cmd_query(RNIC_CMD_QUERY_PORT, rn.port_num, &rn.port,
                  sizeof(rn.port));
    }
    ensure(rn.port.active_mtu >= RNIC_MTU_1024 && rn.port.gid_tbl_len >= 1,
           "QUERY_PORT: active_mtu %u gid_tbl_len %u", rn.port.active_mtu,
           rn.port.gid_tbl_len);

    /* §3: MAC byte 0 in MAC_LO bits 7..0, byte 4 in MAC_HI bits 7..0 */
    mac_lo = reg_rd32(RNIC_REG_MAC_LO);
    mac_hi = reg_rd32(RNIC_REG_MAC_HI);
    memcpy(rn.mac, &mac_lo, 4);         /* little-endian host (§1) */
    memcpy(rn.mac + 4, &mac_hi, 2);

    printf("rnic-vfio: %s %04x:%04x hw %u fw %u.%u abi 0x%08x db_pages %u "
           "msix %u; max_qp %u max_qp_wr %u max_sge %u max_cqe %u max_mr %u "
           "max_pd %u max_gid %u max_rd_atom %u; using cq %u sq %u rq %u; "
           "port %u state %u mtu %u; mac %02x:%02x:%02x:%02x:%02x:%02x\n",
           rn.bdf, vendor, device, d->hw_ver, (unsigned)(d->fw_ver >> 32),
           (unsigned)d->fw_ver, d->abi_version, db_pages, msix, d->max_qp,
           d->max_qp_wr, d->max_sge, d->max_cqe, d->max_mr, d->max_pd,
           d->max_gid, d->max_qp_init_rd_atom, 1u << rn.cq_log,
           1u << rn.sq_log, 1u << rn.rq_log, rn.port_num, rn.port.state,
           128u << rn.port.active_mtu, rn.mac[0], rn.mac[1], rn.mac[2],
           rn.mac[3], rn.mac[4], rn.mac[5]);

    /* §4 step 9: GID 0 = fe80::/64 + the modified EUI-64 of the MAC */
    memcpy(rn.gid, (uint8_t[16]) {
        0xfe, 0x80, [8] = rn.mac[0] ^ 0x02, rn.mac[1], rn.mac[2], 0xff, 0xfe,
        rn.mac[3], rn.mac[4], rn.mac[5] }, 16);
    st = set_gid(0, true);
    ensure(st == RNIC_CMD_OK, "command SET_GID failed: %s",
           cmd_status_name(st));
}

static void create_objects(void)
{
    struct rnic_cmd_create_cq cq = {
        /* §5: the ring is a record page, then CQE pages; zeroed, ci 0 */
        .log_size = rn.cq_log, .eqn = 0,
        .ring = pbl_contig(OFF_CQ, 1 + ring_pages(RNIC_CQE_SIZE, rn.cq_log)),
    };
    struct rnic_cmd_reg_mr mr = {
        /* §7 REG_MR: a page-list MR whose iova is the buffer's IOVA */
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                  RNIC_ACCESS_REMOTE_READ,
        .flags = 0, .iova = DMA_IOVA_OF(OFF_BUF), .length = BUF_SIZE,
        .pages = pbl_contig(OFF_BUF, BUF_SIZE / PAGE_4K),
    };
    struct rnic_cmd_create_qp qp = {
        /* §7 CREATE_QP: RC, one SGE, no inline, no SRQ, no SQ record */
        .qp_type = RNIC_QPT_RC, .sq_log_size = rn.sq_log,
        .rq_log_size = rn.rq_log, .max_send_sge = 1, .max_recv_sge = 1,
        .sq = pbl_contig(OFF_SQ, ring_pages(RNIC_SQ_WQE_SIZE, rn.sq_log)),
        .rq = pbl_contig(OFF_RQ, ring_pages(RNIC_RQ_WQE_SIZE, rn.rq_log)),
    };
    struct rnic_cmd_modify_qp m = { 0 };
    uint32_t out[6];

    cmd_ok(RNIC_CMD_CREATE_PD, NULL, 0, out);
    rn.pdn = out[RNIC_OUT_HANDLE];
    ensure(rn.pdn >= 1 && rn.pdn <= rn.dev.max_pd, "CREATE_PD returned PD "
           "%u", rn.pdn);

    cmd_ok(RNIC_CMD_CREATE_CQ, &cq, sizeof(cq), out);
    rn.cqn = out[RNIC_OUT_HANDLE];
    ensure(rn.cqn >= 1 && rn.cqn <= rn.dev.max_cq &&
           out[RNIC_OUT_ENTRIES] == 1u << rn.cq_log,
           "CREATE_CQ returned CQ %u with %u entries", rn.cqn,
           out[RNIC_OUT_ENTRIES]);

    mr.pdn = rn.pdn;
    cmd_ok(RNIC_CMD_REG_MR, &mr, sizeof(mr), out);
    rn.mr_key = out[RNIC_OUT_LKEY];
    /* §5: lkey == rkey == (index << 8) | key byte, index 1..max-mr */
    ensure(out[RNIC_OUT_RKEY] == rn.mr_key && !(rn.mr_key & 0x80000000u) &&
           (rn.mr_key >> 8) >= 1 && (rn.mr_key >> 8) <= rn.dev.max_mr,
           "REG_MR returned lkey 0x%x rkey 0x%x", out[RNIC_OUT_LKEY],
           out[RNIC_OUT_RKEY]);

    qp.pdn = rn.pdn;
    qp.send_cqn = rn.cqn;
    qp.recv_cqn = rn.cqn;
    cmd_ok(RNIC_CMD_CREATE_QP, &qp, sizeof(qp), out);
    rn.qpn = out[RNIC_OUT_HANDLE];
    ensure(rn.qpn >= 2 && rn.qpn <= rn.dev.max_qp + 1 &&
           out[RNIC_OUT_ENTRIES] == 1u << rn.sq_log &&
           out[RNIC_OUT_RQ_ENTRIES] == 1u << rn.rq_log,
           "CREATE_QP returned QP %u with %u/%u entries", rn.qpn,
           out[RNIC_OUT_ENTRIES], out[RNIC_OUT_RQ_ENTRIES]);

    /* §12: RC RESET -> INIT requires PKEY_INDEX, PORT, ACCESS_FLAGS */
    m.qpn = rn.qpn;
    m.attr_mask = RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_PKEY_INDEX |
                  RNIC_QP_ATTR_PORT | RNIC_QP_ATTR_ACCESS_FLAGS;
    m.attr.qp_state = RNIC_QPS_INIT;
    m.attr.pkey_index = 0;
    m.attr.port_num = rn.port_num;
    /* §5: only the REMOTE_* bits matter; the peer writes and reads us */
    m.attr.access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ;
    cmd_ok(RNIC_CMD_MODIFY_QP, &m, sizeof(m), NULL);
}

static uint8_t query_qp_state(void)
{
    struct rnic_qp_attr a;

    cmd_query(RNIC_CMD_QUERY_QP, rn.qpn, &a, sizeof(a));
    ensure(a.qp_state == a.cur_qp_state, "QUERY_QP: qp_state %u but "
           "cur_qp_state %u (§7: both are the current state)", a.qp_state,
           a.cur_qp_state);
    return a.qp_state;
}

static void connect_qp(const PeerInfo *peer)
{
    struct rnic_cmd_modify_qp m = { 0 };
    struct rnic_av *av = &m.attr.av;
    uint8_t st;

    /*
     * No ARP or ND: the peer's GID must be link-local with an EUI-64
     * interface ID, from which its MAC follows the way Linux derives it
     * (bytes 8..10 and 13..15, bit 0x02 of the first one flipped).
     */
    ensure(peer->gid[0] == 0xfe && (peer->gid[1] & 0xc0) == 0x80 &&
           peer->gid[11] == 0xff && peer->gid[12] == 0xfe,
           "the peer's GID is not link-local EUI-64: no MAC to derive");

    /* §12: RC INIT -> RTR */
    m.qpn = rn.qpn;
    m.attr_mask = RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_AV |
                  RNIC_QP_ATTR_PATH_MTU | RNIC_QP_ATTR_DEST_QPN |
                  RNIC_QP_ATTR_RQ_PSN | RNIC_QP_ATTR_MAX_DEST_RD_ATOMIC |
                  RNIC_QP_ATTR_MIN_RNR_TIMER;
    m.attr.qp_state = RNIC_QPS_RTR;
    m.attr.path_mtu = RNIC_MTU_1024;
    m.attr.dest_qpn = peer->qpn;
    m.attr.rq_psn = peer->psn;
    m.attr.max_dest_rd_atomic = rn.dev.max_qp_rd_atom < 4 ?
                                rn.dev.max_qp_rd_atom : 4;
    m.attr.min_rnr_timer = 12;      /* IBA encoding: 0.64 ms */
    memcpy(av->dgid, peer->gid, 16);
    memcpy(av->dmac, &peer->gid[8], 3);
    memcpy(av->dmac + 3, &peer->gid[13], 3);
    av->dmac[0] ^= 0x02;
    av->sgid_index = 0;
    av->hop_limit = 64;
    av->net_type = RNIC_NET_IPV6;   /* matches GID 0's type */
    cmd_ok(RNIC_CMD_MODIFY_QP, &m, sizeof(m), NULL);

    /* §12: RC RTR -> RTS */
    memset(&m, 0, sizeof(m));
    m.qpn = rn.qpn;
    m.attr_mask = RNIC_QP_ATTR_STATE | RNIC_QP_ATTR_TIMEOUT |
                  RNIC_QP_ATTR_RETRY_CNT | RNIC_QP_ATTR_RNR_RETRY |
                  RNIC_QP_ATTR_SQ_PSN | RNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
    m.attr.qp_state = RNIC_QPS_RTS;
    m.attr.timeout = 14;            /* 4.096 us << 14 = 67 ms (§15) */
    m.attr.retry_cnt = 7;
    m.attr.rnr_retry = 7;           /* no limit; our 10 s waits bound it */
    m.attr.sq_psn = rn.psn;
    m.attr.max_rd_atomic = rn.dev.max_qp_init_rd_atom < 4 ?
                           rn.dev.max_qp_init_rd_atom : 4;
    cmd_ok(RNIC_CMD_MODIFY_QP, &m, sizeof(m), NULL);

    st = query_qp_state();
    ensure(st == RNIC_QPS_RTS, "QP %u is in state %u after RTR -> RTS",
           rn.qpn, st);
    printf("rnic-vfio: pd %u cq %u mr 0x%x qp %u in RTS, peer qpn %u\n",
           rn.pdn, rn.cqn, rn.mr_key, rn.qpn, peer->qpn);
}

/* ==== Data steps ==== */

static void data_steps(const PeerInfo *peer)
{
    struct rnic_cqe c;
    uint16_t slot;

    /* a: RECV P1 into offset 0 */
    memset((uint8_t *)DMA_PTR(OFF_BUF) + OFF_A, 0, MSG_LEN);
    slot = post_recv(0xa1, OFF_A, MSG_LEN);
    send_line("ready1\n");
    wait_cqe(&c, "the receive completion of step a");
    check_cqe(&c, "step a", RNIC_WC_RECV, 0xa1, slot);
    require_success(&c, "step a RECV");
    ensure(!(c.flags & (RNIC_CQE_WITH_IMM | RNIC_CQE_WITH_INV)),
           "step a: unexpected CQE flags 0x%x", c.flags);
    check_pattern(OFF_A, 1, "a");
    printf("rnic-vfio: step a: RECV of 4096 bytes verified\n");

    /* b: SEND P2 from offset 16384 */
    fill_pattern(OFF_B, 2);
    slot = post_send(RNIC_WR_SEND, 0xb2, OFF_B, MSG_LEN, 0, 0);
    wait_cqe(&c, "the send completion of step b");
    check_cqe(&c, "step b", RNIC_WC_SEND, 0xb2, slot);
    require_success(&c, "step b SEND");
    expect_line("ok2");
    printf("rnic-vfio: step b: SEND of 4096 bytes verified\n");

    /* c: RDMA WRITE P3 from offset 20480 to the peer's addr + 0 */
    fill_pattern(OFF_C, 3);
    slot = post_send(RNIC_WR_RDMA_WRITE, 0xc3, OFF_C, MSG_LEN, peer->addr,
                     peer->rkey);
    wait_cqe(&c, "the RDMA WRITE completion of step c");
    check_cqe(&c, "step c", RNIC_WC_RDMA_WRITE, 0xc3, slot);
    require_success(&c, "step c RDMA WRITE");
    send_line("wrote3\n");
    expect_line("ok3");
    printf("rnic-vfio: step c: RDMA WRITE of 4096 bytes verified\n");

    /* d: RDMA READ P4 from the peer's addr + 8192 into offset 24576 */
    memset((uint8_t *)DMA_PTR(OFF_BUF) + OFF_D, 0, MSG_LEN);
    slot = post_send(RNIC_WR_RDMA_READ, 0xd4, OFF_D, MSG_LEN,
                     peer->addr + 8192, peer->rkey);
    wait_cqe(&c, "the RDMA READ completion of step d");
    check_cqe(&c, "step d", RNIC_WC_RDMA_READ, 0xd4, slot);
    require_success(&c, "step d RDMA READ");
    check_pattern(OFF_D, 4, "d");
    printf("rnic-vfio: step d: RDMA READ of 4096 bytes verified\n");
}

static void injection_step(const char *inject_file)
{
    uint64_t deadline = now_ns() + 60 * SEC;
    struct rnic_cqe c;
    struct stat sb;
    uint16_t slot;
    uint8_t st;

    printf("rnic-vfio: qpn=%u waiting for injection\n", rn.qpn);
    fflush(stdout);
    while (stat(inject_file, &sb) != 0) {
        ensure(now_ns() < deadline, "timed out after 60 s waiting for %s to "
               "exist", inject_file);
        eq_poll();
        usleep(100000);
    }

    memset((uint8_t *)DMA_PTR(OFF_BUF) + OFF_INJ, 0x5a, INJ_LEN);
    slot = post_send(RNIC_WR_SEND, 0xe5, OFF_INJ, INJ_LEN, 0, 0);
    wait_cqe(&c, "the completion of the SEND after the injection");
    check_cqe(&c, "injected SEND", RNIC_WC_SEND, 0xe5, slot);
    ensure(c.status != RNIC_WC_SUCCESS,
           "the SEND after the injection completed successfully");
    printf("rnic-vfio: injected error seen: status %u (%s)\n", c.status,
           wc_status_name(c.status));

    /* §11, §14: after any status but success the QP is in ERR */
    deadline = now_ns() + WAIT_NS;
    while ((st = query_qp_state()) != RNIC_QPS_ERR) {
        ensure(now_ns() < deadline, "QP %u is in state %u, not ERR, after "
               "the error completion", rn.qpn, st);
        usleep(10000);
    }
    printf("rnic-vfio: qp %u is in ERR (QUERY_QP)\n", rn.qpn);
}

/* ==== Teardown ==== */

static void teardown(void)
{
    struct rnic_cmd_handle h = { .handle = rn.qpn };
    struct vfio_iommu_type1_dma_unmap unmap = {
        .argsz = sizeof(unmap), .iova = DMA_IOVA, .size = DMA_SIZE,
    };
    uint64_t deadline = now_ns() + WAIT_NS, guest_err;
    struct rnic_cqe c;
    uint8_t st;

    /*
     * §7 DESTROY_QP: a QP in ERR that still owes flush CQEs is BUSY; keep
     * consuming the CQ until it is not.  Nothing of ours is outstanding,
     * so a CQE here can only be a flush.
     */
    while ((st = cmd_exec(RNIC_CMD_DESTROY_QP, &h, sizeof(h), NULL)) !=
           RNIC_CMD_OK) {
        ensure(st == RNIC_CMD_ERR_BUSY, "command DESTROY_QP failed: status "
               "0x%02x (%s)", st, cmd_status_name(st));
        while (cq_poll_one(&c)) {
            ensure(c.qpn == rn.qpn && c.status == RNIC_WC_WR_FLUSH_ERR,
                   "unexpected CQE (QP %u, status %u) while destroying",
                   c.qpn, c.status);
        }
        eq_poll();
        ensure(now_ns() < deadline, "DESTROY_QP still busy after 10 s");
        usleep(1000);
    }
    /*
     * §7 "busy" rules give the order: the MR, the CQ (no QP uses it), the
     * PD (no QP or MR uses it), the GID, then EQ 0 (no CQ names it).
     */
    destroy(RNIC_CMD_DEREG_MR, rn.mr_key);
    destroy(RNIC_CMD_DESTROY_CQ, rn.cqn);
    destroy(RNIC_CMD_DESTROY_PD, rn.pdn);
    st = set_gid(0, false);
    ensure(st == RNIC_CMD_OK, "command DEL_GID failed: %s",
           cmd_status_name(st));
    eq_poll();
    destroy(RNIC_CMD_DESTROY_EQ, 0);

    /* §1: a guest error means this driver broke a rule (reset clears it) */
    guest_err = counter(RNIC_CNT_GUEST_ERR);
    printf("rnic-vfio: counters: tx_pkts %" PRIu64 " rx_pkts %" PRIu64
           " retransmits %" PRIu64 " cqe_err %" PRIu64 " guest_err %" PRIu64
           "\n", counter(RNIC_CNT_TX_PKTS), counter(RNIC_CNT_RX_PKTS),
           counter(RNIC_CNT_RETRANSMITS), counter(RNIC_CNT_CQE_ERR),
           guest_err);
    ensure(guest_err == 0, "the device counted %" PRIu64 " guest errors "
           "(see its -d guest_errors log)", guest_err);

    /* §4: after the reset the device holds no reference to our memory */
    reg_wr32(RNIC_REG_CTRL, RNIC_CTRL_RESET);
    ensure(!(reg_rd32(RNIC_REG_STATUS) & RNIC_STATUS_READY) &&
           reg_rd32(RNIC_REG_CTRL) == 0,
           "the device is still enabled after CTRL.RESET");
    cfg_rw(true, PCI_COMMAND, &rn.pci_cmd_saved, 2);
    munmap((void *)rn.bar0, rn.bar0_size);
    munmap((void *)rn.bar2, rn.bar2_size);
    rn.bar0 = rn.bar2 = NULL;
    ensure(ioctl(rn.container, VFIO_IOMMU_UNMAP_DMA, &unmap) == 0,
           "VFIO_IOMMU_UNMAP_DMA: %s", strerror(errno));
    munmap(rn.dma, DMA_SIZE);
    close(rn.device);
    ioctl(rn.group, VFIO_GROUP_UNSET_CONTAINER);
    close(rn.group);
    close(rn.container);
    fclose(rn.peer_in);
    close(rn.sock);
}

/* ==== main ==== */

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pci", required_argument, NULL, 'p' },
        { "peer", required_argument, NULL, 'P' },
        { "port", required_argument, NULL, 'n' },
        { "inject-file", required_argument, NULL, 'i' },
        { NULL, 0, NULL, 0 },
    };
    const char *peer_arg = NULL, *inject_file = NULL;
    char bdf[64], line[512], hex[33];
    PeerInfo peer = { 0 };
    int opt;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rn.port_num = 1;            /* §7 QUERY_PORT: port 1 is the only one */
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            /* accept "00:04.0" as well as "0000:00:04.0" */
            snprintf(bdf, sizeof(bdf), "%s%s",
                     strchr(optarg, ':') == strrchr(optarg, ':') ? "0000:" : "",
                     optarg);
            rn.bdf = bdf;
            break;
        case 'P':
            peer_arg = optarg;
            break;
        case 'n':
            rn.port_num = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'i':
            inject_file = optarg;
            break;
        default:
            rn.bdf = NULL;
            optind = argc + 1;
            break;
        }
    }
    if (!rn.bdf || !peer_arg || optind != argc) {
        fprintf(stderr, "usage: rnic-vfio --pci BDF --peer HOST:PORT "
                "[--port N] [--inject-file PATH]\n");
        return 2;
    }
    if (getrandom(&rn.psn, sizeof(rn.psn), 0) != sizeof(rn.psn)) {
        rn.psn = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 8);
    }
    rn.psn &= 0xffffff;         /* PSNs are 24 bits (§7) */

    /* 1-3: VFIO, bring-up and discovery, GID, objects */
    vfio_open();
    bring_up();
    create_objects();

    /* 4: exchange connection data with the peer, us first */
    tcp_connect(peer_arg);
    for (int i = 0; i < 16; i++) {
        sprintf(hex + 2 * i, "%02x", rn.gid[i]);
    }
    snprintf(line, sizeof(line), "qpn=%u psn=%u gid=%s addr=%" PRIx64
             " rkey=%x len=%u\n", rn.qpn, rn.psn, hex,
             (uint64_t)DMA_IOVA_OF(OFF_BUF), rn.mr_key, BUF_SIZE);
    printf("rnic-vfio: local  %s", line);
    send_line(line);
    read_line(line, sizeof(line), "connection line");
    printf("rnic-vfio: remote %s\n", line);
    parse_peer(line, &peer);
    connect_qp(&peer);

    /* 5: data; 6: injected error */
    data_steps(&peer);
    if (inject_file) {
        injection_step(inject_file);
    }
    send_line("done\n");

    /* 7: teardown */
    teardown();
    printf("rnic-vfio: OK\n");
    return 0;
}
