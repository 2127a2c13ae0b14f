/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: RoCE wire format: v2 (Ethernet / IPv4 or IPv6 / UDP / IBA transport)
 * and v1 (Ethernet / GRH / IBA transport)
 *
 * Pure packet logic shared by the rnic transport engine: opcode table,
 * frame parser and builder, ICRC, PSN arithmetic and AETH helpers.
 * Nothing here touches device state or allocates memory, so it can be
 * unit tested outside QEMU.
 *
 * Multi-byte values in the structures below are in host order; the codec
 * does all big-endian conversion.
 */

#ifndef HW_RNIC_RNIC_WIRE_H
#define HW_RNIC_RNIC_WIRE_H

#include "rnic-ib.h"

/* ---- Ethernet / IP / UDP ---- */

#define RNIC_ETH_ALEN               6
#define RNIC_ETH_HLEN               14
#define RNIC_VLAN_HLEN              4
/* Minimum Ethernet frame without FCS; shorter frames get padded. */
#define RNIC_ETH_MIN_FRAME          60

#define RNIC_ETHERTYPE_IPV4         0x0800
#define RNIC_ETHERTYPE_IPV6         0x86dd
#define RNIC_ETHERTYPE_VLAN         0x8100
#define RNIC_ETHERTYPE_ROCE_V1      0x8915

#define RNIC_IPV4_HLEN              20
#define RNIC_IPV4_MAX_HLEN          60
#define RNIC_IPV6_HLEN              40
#define RNIC_IPPROTO_UDP            17
#define RNIC_UDP_HLEN               8
/* The IBA global route header: IPv6-shaped, next header names the BTH. */
#define RNIC_GRH_LEN                40
#define RNIC_GRH_NXTHDR_IBA         0x1b

#define RNIC_ROCE_UDP_PORT          4791
/* RoCEv2 source ports carry flow entropy in this range. */
#define RNIC_ROCE_SPORT_MIN         0xc000

/* ---- IBA transport headers ---- */

#define RNIC_BTH_LEN                12
#define RNIC_RETH_LEN               16
#define RNIC_AETH_LEN               4
#define RNIC_IMMDT_LEN              4
#define RNIC_IETH_LEN               4
#define RNIC_FETH_LEN               4
#define RNIC_DETH_LEN               8
#define RNIC_ATOMIC_ETH_LEN         28
#define RNIC_ATOMIC_ACK_ETH_LEN     8
#define RNIC_ICRC_LEN               4

#define RNIC_BTH_TVER               0
/*
 * BTH byte 4 is FECN, BECN and six reserved bits, all masked out of the
 * ICRC.  rnic's selective repeat (docs/design.md) uses the six: a
 * request with RNIC_BTH_X_SR comes from a requester that resends only
 * the hole a NAK names, and a PSN sequence NAK whose six bits are not 0
 * comes from a responder that kept what followed the hole and names its
 * length in packets.  Other RoCE peers send 0 and ignore them.
 */
#define RNIC_BTH_RESV6_MASK         0x3f
#define RNIC_BTH_X_SR               0x01
#define RNIC_DEFAULT_PKEY           0xffff
#define RNIC_PSN_MASK               0xffffffu
#define RNIC_MSN_MASK               0xffffffu
#define RNIC_QPN_MASK               0xffffffu

/* Largest BTH + extension header stack (BTH + AtomicETH). */
#define RNIC_MAX_TRANSPORT_HLEN     (RNIC_BTH_LEN + RNIC_ATOMIC_ETH_LEN)
/* Largest header stack the builder can emit before the payload. */
#define RNIC_WIRE_MAX_HLEN          (RNIC_ETH_HLEN + RNIC_VLAN_HLEN + \
                                     RNIC_IPV6_HLEN + RNIC_UDP_HLEN + \
                                     RNIC_MAX_TRANSPORT_HLEN)
/* Bytes a frame needs beyond its header stack and payload (pad + ICRC). */
#define RNIC_WIRE_MAX_TRAILER       (3 + RNIC_ICRC_LEN)

/*
 * BTH opcodes.  The top three bits select the transport service, the low
 * five the operation (IBTA vol 1, table 38).
 */
#define RNIC_OPC_TRANSPORT_MASK     0xe0
#define RNIC_OPC_RC                 0x00
#define RNIC_OPC_UC                 0x20
#define RNIC_OPC_UD                 0x60
/*
 * RoCEv2 Congestion Notification Packet (IBTA RoCEv2 annex A17): a BTH
 * naming the QP that should slow down, 16 reserved bytes, the ICRC.
 */
#define RNIC_OPC_CNP                0x81
#define RNIC_CNP_RSVD_LEN           16

/* The ECN field: the low two bits of the IPv4 TOS or IPv6 traffic class. */
#define RNIC_ECN_MASK               0x03
#define RNIC_ECN_ECT0               0x02
#define RNIC_ECN_CE                 0x03

enum {
    RNIC_OPC_SEND_FIRST                     = 0x00,
    RNIC_OPC_SEND_MIDDLE                    = 0x01,
    RNIC_OPC_SEND_LAST                      = 0x02,
    RNIC_OPC_SEND_LAST_WITH_IMMEDIATE       = 0x03,
    RNIC_OPC_SEND_ONLY                      = 0x04,
    RNIC_OPC_SEND_ONLY_WITH_IMMEDIATE       = 0x05,
    RNIC_OPC_RDMA_WRITE_FIRST               = 0x06,
    RNIC_OPC_RDMA_WRITE_MIDDLE              = 0x07,
    RNIC_OPC_RDMA_WRITE_LAST                = 0x08,
    RNIC_OPC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
    RNIC_OPC_RDMA_WRITE_ONLY                = 0x0a,
    RNIC_OPC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
    RNIC_OPC_RDMA_READ_REQUEST              = 0x0c,
    RNIC_OPC_RDMA_READ_RESPONSE_FIRST       = 0x0d,
    RNIC_OPC_RDMA_READ_RESPONSE_MIDDLE      = 0x0e,
    RNIC_OPC_RDMA_READ_RESPONSE_LAST        = 0x0f,
    RNIC_OPC_RDMA_READ_RESPONSE_ONLY        = 0x10,
    RNIC_OPC_ACKNOWLEDGE                    = 0x11,
    RNIC_OPC_ATOMIC_ACKNOWLEDGE             = 0x12,
    RNIC_OPC_COMPARE_SWAP                   = 0x13,
    RNIC_OPC_FETCH_ADD                      = 0x14,
    RNIC_OPC_SEND_LAST_WITH_INVALIDATE      = 0x16,
    RNIC_OPC_SEND_ONLY_WITH_INVALIDATE      = 0x17,
    RNIC_OPC_FLUSH                          = 0x1c,
    RNIC_OPC_ATOMIC_WRITE                   = 0x1d,
};

#define RNIC_OPC_RC_(op)    (RNIC_OPC_RC | RNIC_OPC_##op)
#define RNIC_OPC_UC_(op)    (RNIC_OPC_UC | RNIC_OPC_##op)

enum {
    RNIC_OPC_RC_SEND_FIRST = RNIC_OPC_RC_(SEND_FIRST),
    RNIC_OPC_RC_SEND_MIDDLE = RNIC_OPC_RC_(SEND_MIDDLE),
    RNIC_OPC_RC_SEND_LAST = RNIC_OPC_RC_(SEND_LAST),
    RNIC_OPC_RC_SEND_LAST_WITH_IMMEDIATE = RNIC_OPC_RC_(SEND_LAST_WITH_IMMEDIATE),
    RNIC_OPC_RC_SEND_ONLY = RNIC_OPC_RC_(SEND_ONLY),
    RNIC_OPC_RC_SEND_ONLY_WITH_IMMEDIATE = RNIC_OPC_RC_(SEND_ONLY_WITH_IMMEDIATE),
    RNIC_OPC_RC_RDMA_WRITE_FIRST = RNIC_OPC_RC_(RDMA_WRITE_FIRST),
    RNIC_OPC_RC_RDMA_WRITE_MIDDLE = RNIC_OPC_RC_(RDMA_WRITE_MIDDLE),
    RNIC_OPC_RC_RDMA_WRITE_LAST = RNIC_OPC_RC_(RDMA_WRITE_LAST),
    RNIC_OPC_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE =
        RNIC_OPC_RC_(RDMA_WRITE_LAST_WITH_IMMEDIATE),
    RNIC_OPC_RC_RDMA_WRITE_ONLY = RNIC_OPC_RC_(RDMA_WRITE_ONLY),
    RNIC_OPC_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE =
        RNIC_OPC_RC_(RDMA_WRITE_ONLY_WITH_IMMEDIATE),
    RNIC_OPC_RC_RDMA_READ_REQUEST = RNIC_OPC_RC_(RDMA_READ_REQUEST),
    RNIC_OPC_RC_RDMA_READ_RESPONSE_FIRST = RNIC_OPC_RC_(RDMA_READ_RESPONSE_FIRST),
    RNIC_OPC_RC_RDMA_READ_RESPONSE_MIDDLE =
        RNIC_OPC_RC_(RDMA_READ_RESPONSE_MIDDLE),
    RNIC_OPC_RC_RDMA_READ_RESPONSE_LAST = RNIC_OPC_RC_(RDMA_READ_RESPONSE_LAST),
    RNIC_OPC_RC_RDMA_READ_RESPONSE_ONLY = RNIC_OPC_RC_(RDMA_READ_RESPONSE_ONLY),
    RNIC_OPC_RC_ACKNOWLEDGE = RNIC_OPC_RC_(ACKNOWLEDGE),
    RNIC_OPC_RC_ATOMIC_ACKNOWLEDGE = RNIC_OPC_RC_(ATOMIC_ACKNOWLEDGE),
    RNIC_OPC_RC_COMPARE_SWAP = RNIC_OPC_RC_(COMPARE_SWAP),
    RNIC_OPC_RC_FETCH_ADD = RNIC_OPC_RC_(FETCH_ADD),
    RNIC_OPC_RC_SEND_LAST_WITH_INVALIDATE = RNIC_OPC_RC_(SEND_LAST_WITH_INVALIDATE),
    RNIC_OPC_RC_SEND_ONLY_WITH_INVALIDATE = RNIC_OPC_RC_(SEND_ONLY_WITH_INVALIDATE),
    RNIC_OPC_RC_FLUSH = RNIC_OPC_RC_(FLUSH),
    RNIC_OPC_RC_ATOMIC_WRITE = RNIC_OPC_RC_(ATOMIC_WRITE),

    RNIC_OPC_UC_SEND_FIRST = RNIC_OPC_UC_(SEND_FIRST),
    RNIC_OPC_UC_SEND_MIDDLE = RNIC_OPC_UC_(SEND_MIDDLE),
    RNIC_OPC_UC_SEND_LAST = RNIC_OPC_UC_(SEND_LAST),
    RNIC_OPC_UC_SEND_LAST_WITH_IMMEDIATE = RNIC_OPC_UC_(SEND_LAST_WITH_IMMEDIATE),
    RNIC_OPC_UC_SEND_ONLY = RNIC_OPC_UC_(SEND_ONLY),
    RNIC_OPC_UC_SEND_ONLY_WITH_IMMEDIATE = RNIC_OPC_UC_(SEND_ONLY_WITH_IMMEDIATE),
    RNIC_OPC_UC_RDMA_WRITE_FIRST = RNIC_OPC_UC_(RDMA_WRITE_FIRST),
    RNIC_OPC_UC_RDMA_WRITE_MIDDLE = RNIC_OPC_UC_(RDMA_WRITE_MIDDLE),
    RNIC_OPC_UC_RDMA_WRITE_LAST = RNIC_OPC_UC_(RDMA_WRITE_LAST),
    RNIC_OPC_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE =
        RNIC_OPC_UC_(RDMA_WRITE_LAST_WITH_IMMEDIATE),
    RNIC_OPC_UC_RDMA_WRITE_ONLY = RNIC_OPC_UC_(RDMA_WRITE_ONLY),
    RNIC_OPC_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE =
        RNIC_OPC_UC_(RDMA_WRITE_ONLY_WITH_IMMEDIATE),

    RNIC_OPC_UD_SEND_ONLY = RNIC_OPC_UD | RNIC_OPC_SEND_ONLY,
    RNIC_OPC_UD_SEND_ONLY_WITH_IMMEDIATE =
        RNIC_OPC_UD | RNIC_OPC_SEND_ONLY_WITH_IMMEDIATE,
};

/*
 * Opcode attributes.  The RNIC_HDR_* bits name the extension headers that
 * follow the BTH (they are always laid out in IBTA order: DETH, FETH, RETH,
 * AtomicETH, AETH, AtomicAckETH, ImmDt, IETH); the RNIC_OPF_* bits
 * classify the packet.  RNIC_OPF_ONLY is FIRST|LAST so that "starts a
 * message" and "ends a message" are single-bit tests.
 */
#define RNIC_HDR_RETH               (1u << 0)
#define RNIC_HDR_AETH               (1u << 1)
#define RNIC_HDR_IMMDT              (1u << 2)
#define RNIC_HDR_IETH               (1u << 3)
#define RNIC_HDR_DETH               (1u << 4)
#define RNIC_HDR_ATOMIC_ETH         (1u << 5)
#define RNIC_HDR_ATOMIC_ACK_ETH     (1u << 6)
#define RNIC_HDR_FETH               (1u << 7)
#define RNIC_HDR_MASK               0xffu

#define RNIC_OPF_PAYLOAD            (1u << 8)
#define RNIC_OPF_FIRST              (1u << 9)
#define RNIC_OPF_MIDDLE             (1u << 10)
#define RNIC_OPF_LAST               (1u << 11)
#define RNIC_OPF_ONLY               (RNIC_OPF_FIRST | RNIC_OPF_LAST)
#define RNIC_OPF_REQUEST            (1u << 12)
#define RNIC_OPF_RESPONSE           (1u << 13)
#define RNIC_OPF_SEND               (1u << 14)
#define RNIC_OPF_WRITE              (1u << 15)
#define RNIC_OPF_READ               (1u << 16)
#define RNIC_OPF_ATOMIC             (1u << 17)
#define RNIC_OPF_ACK                (1u << 18)
/* FLUSH and ATOMIC WRITE: answered by an empty RDMA READ response. */
#define RNIC_OPF_PLACE              (1u << 19)
/* A congestion notification: its reserved bytes travel as payload. */
#define RNIC_OPF_CNP                (1u << 20)

typedef struct RnicOpcodeInfo {
    const char *name;       /* e.g. "RC_SEND_FIRST" */
    uint32_t flags;         /* RNIC_HDR_* | RNIC_OPF_* */
    uint8_t hdr_len;        /* BTH plus extension headers */
} RnicOpcodeInfo;

/* Returns NULL for opcodes rnic does not implement. */
const RnicOpcodeInfo *rnic_opcode_info(uint8_t opcode);
/* Never NULL; "UNKNOWN" for unimplemented opcodes. */
const char *rnic_bth_opc_str(uint8_t opcode);

static inline uint8_t rnic_opcode_transport(uint8_t opcode)
{
    return opcode & RNIC_OPC_TRANSPORT_MASK;
}

/* ---- Parsed / to-be-built packet ---- */

typedef struct RnicBth {
    uint8_t opcode;
    bool se;                /* solicited event */
    bool mig;               /* MigReq */
    uint8_t pad;            /* pad count 0..3; set by rnic_wire_finalize() */
    uint8_t tver;
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint8_t resv6;          /* RNIC_BTH_RESV6_MASK: see RNIC_BTH_X_SR */
    uint32_t dqpn;          /* 24 bits */
    bool ack_req;
    uint32_t psn;           /* 24 bits */
} RnicBth;

typedef struct RnicReth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
} RnicReth;

typedef struct RnicAeth {
    uint8_t syndrome;       /* see rnic_aeth_*() below */
    uint32_t msn;           /* 24 bits */
} RnicAeth;

typedef struct RnicDeth {
    uint32_t qkey;
    uint32_t src_qp;        /* 24 bits */
} RnicDeth;

typedef struct RnicAtomicEth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;      /* swap value (CmpSwap) or add value (FetchAdd) */
    uint64_t compare;
} RnicAtomicEth;

typedef struct RnicPkt {
    uint8_t eth_dst[RNIC_ETH_ALEN];
    uint8_t eth_src[RNIC_ETH_ALEN];
    bool has_vlan;
    uint16_t vlan_tci;      /* PCP/DEI/VID as on the wire */

    /*
     * RoCE v1: EtherType 0x8915 and a GRH where v2 has IP and UDP.  The
     * GRH is IPv6-shaped, so ip_ver is 6 and the ip_ and flow fields
     * below are its SGID, DGID, hop limit, traffic class and flow label.
     * The builder ignores ip_ver and the udp_ fields of a v1 packet.
     */
    bool roce_v1;
    uint8_t ip_ver;         /* 4 or 6 */
    /* IPv4 addresses are IPv4-mapped (::ffff:a.b.c.d), like RoCEv2 GIDs. */
    uint8_t ip_src[16];
    uint8_t ip_dst[16];
    uint8_t ttl;            /* IPv4 TTL or IPv6 hop limit */
    uint8_t tclass;         /* IPv4 TOS byte or IPv6 traffic class */
    uint32_t flow_label;    /* IPv6 only, 20 bits */
    uint16_t ip_id;         /* IPv4 only */

    uint16_t udp_sport;
    uint16_t udp_dport;     /* the builder always uses RNIC_ROCE_UDP_PORT */

    /*
     * InfiniBand (rnic-ib.h): EtherType RNIC_ETHERTYPE_IB, an LRH, a GRH
     * only when ib_grh is set (its fields are the ip_ and flow fields, as
     * for RoCE v1), and a VCRC after the ICRC.  The builder ignores
     * roce_v1, ip_ver and the udp_ fields of an IB packet.
     */
    bool ib;
    bool ib_grh;
    uint8_t ib_vl;
    uint8_t ib_sl;
    uint16_t ib_dlid;
    uint16_t ib_slid;

    RnicBth bth;
    /* Only the extension headers named in opcode_info()->flags are valid. */
    RnicReth reth;
    RnicAeth aeth;
    uint32_t imm;           /* ImmDt as a big-endian number */
    uint32_t ieth_rkey;
    RnicDeth deth;
    RnicAtomicEth atomic;
    uint64_t atomic_orig;   /* AtomicAckETH original remote value */
    uint32_t feth;          /* FLUSH: RNIC_FLUSH_* type and level bits */

    /*
     * Layout.  The parser fills all of these; the builder only reads
     * payload_len.  payload_len excludes pad bytes and ICRC; frame_len is
     * the packet length (ICRC included, Ethernet padding excluded).
     */
    uint16_t l3_off;
    uint16_t bth_off;
    uint16_t payload_off;
    uint32_t payload_len;
    uint32_t frame_len;
    uint32_t icrc;          /* as received (parser only) */
} RnicPkt;

/* ---- Parser ---- */

typedef enum RnicWireErr {
    RNIC_WIRE_OK = 0,
    RNIC_WIRE_E_TOO_SHORT,      /* shorter than Ethernet/IP/UDP headers */
    RNIC_WIRE_E_NOT_IP,         /* EtherType not IPv4, IPv6 or RoCE v1 */
    RNIC_WIRE_E_IP_HDR,         /* bad version/IHL, or a fragment */
    RNIC_WIRE_E_IP_CSUM,        /* IPv4 header checksum mismatch */
    RNIC_WIRE_E_IP_LEN,         /* IP/GRH length disagrees with frame's */
    RNIC_WIRE_E_NOT_UDP,
    RNIC_WIRE_E_UDP_LEN,        /* UDP length disagrees with IP length */
    RNIC_WIRE_E_NOT_ROCE,       /* UDP port not 4791, GRH next hdr not BTH */
    RNIC_WIRE_E_TVER,           /* BTH transport version is not 0 */
    RNIC_WIRE_E_OPCODE,         /* opcode not implemented */
    RNIC_WIRE_E_HDR_TRUNC,      /* datagram too short for its headers */
    RNIC_WIRE_E_PAD,            /* pad count exceeds payload */
    RNIC_WIRE_E_PAYLOAD,        /* payload on an opcode that has none */
    RNIC_WIRE_E_ICRC,           /* invariant CRC mismatch */
    RNIC_WIRE_E_IB_LRH,         /* IB: bad LVer, or not an IBA packet */
    RNIC_WIRE_E_VCRC,           /* IB: variant CRC mismatch */
    RNIC_WIRE_E_VL15,           /* IB: VL15 for a QP other than QP0 */
    RNIC_WIRE_E__MAX,
} RnicWireErr;

const char *rnic_wire_err_str(RnicWireErr err);

/*
 * Parse and validate a RoCE v2, RoCE v1 or InfiniBand frame (no FCS).
 * On RNIC_WIRE_OK every field of @out is filled.  On RNIC_WIRE_E_ICRC a
 * RoCE frame's headers have been fully decoded, which helps diagnostics
 * (an IB frame's link checks come first); on other errors @out is
 * unspecified.  The UDP checksum is not verified: the ICRC already
 * covers the datagram, and rxe sends zero checksums even over IPv6.
 */
RnicWireErr rnic_wire_parse(const uint8_t *frame, size_t len, RnicPkt *out);

/* ---- Builder ---- */

/*
 * Length of the Ethernet..extension header stack for @p (uses has_vlan,
 * ib, ib_grh, roce_v1, ip_ver and bth.opcode), or -EINVAL.
 */
int rnic_wire_hdr_len(const RnicPkt *p);

/*
 * Total frame length for @p including pad and ICRC (and an IB packet's
 * VCRC), or a negative errno: -EINVAL for a bad opcode/IP version or
 * payload on a payload-less opcode, -EMSGSIZE if the datagram does not
 * fit in IP, or an IB packet in LRH.PktLen.
 */
int rnic_wire_frame_len(const RnicPkt *p);

/*
 * Write the header stack described by @p into @buf and return its length
 * (the payload offset), or a negative errno; -ENOSPC if the whole frame
 * (rnic_wire_frame_len()) would not fit in @size.  Lengths, checksums, pad
 * count and ICRC are left for rnic_wire_finalize(); the caller copies
 * p->payload_len payload bytes to buf + return value in between.
 */
int rnic_wire_build_hdr(const RnicPkt *p, uint8_t *buf, size_t size);

/*
 * Complete a frame started by rnic_wire_build_hdr() with the same @p:
 * zero pad bytes to a 4-byte boundary, set the BTH pad count, IP and UDP
 * lengths, the IPv4 header checksum (UDP checksum 0) or the IPv6 UDP
 * checksum, and append the ICRC; for IB set PktLen and the GRH length
 * and append the ICRC and VCRC.  Returns the frame length or a negative
 * errno.
 */
int rnic_wire_finalize(const RnicPkt *p, uint8_t *buf, size_t size);

/* build_hdr + copy of a contiguous payload + finalize. */
int rnic_wire_encode(const RnicPkt *p, const void *payload,
                     uint8_t *buf, size_t size);

/* ---- Checksums ---- */

/*
 * ICRC over an IP datagram: @ip points at the IP header (version taken
 * from its first nibble), @ip_hlen is the IP header length and @len the
 * byte count from the IP header up to, not including, the ICRC field.
 * The value goes on the wire little-endian (rnic_st32le()), which is how
 * rxe and RoCE hardware place it.  Requires len >= ip_hlen + UDP + BTH.
 */
uint32_t rnic_icrc(const uint8_t *ip, size_t ip_hlen, size_t len);

/*
 * ICRC of a RoCE v1 packet: @grh points at the GRH and @len counts from
 * there up to, not including, the ICRC.  Requires len >= GRH + BTH.
 */
uint32_t rnic_icrc_v1(const uint8_t *grh, size_t len);

/*
 * The checksum an IPv4 header of @hlen bytes should carry.  The current
 * checksum field is ignored, so this both generates and verifies.
 */
uint16_t rnic_ipv4_hdr_csum(const uint8_t *hdr, size_t hlen);

/* UDP checksum over IPv6 (@udp_len bytes at @udp), never 0. */
uint16_t rnic_udp6_csum(const uint8_t src[16], const uint8_t dst[16],
                        const uint8_t *udp, size_t udp_len);

/* ---- Addressing helpers ---- */

void rnic_ipv4_to_mapped(uint32_t addr, uint8_t out[16]);
bool rnic_ip_is_v4_mapped(const uint8_t ip[16]);

/* rxe's per-QP source port: 0xc000 + 14-bit multiplicative hash of the QPN. */
uint16_t rnic_udp_sport_from_qpn(uint32_t qpn);
/* IBTA RoCEv2 flow label from the QPN pair, and its UDP source port fold. */
uint32_t rnic_flow_label_calc(uint32_t lqpn, uint32_t rqpn);
uint16_t rnic_udp_sport_from_flow_label(uint32_t flow_label);

/* ---- PSN / MSN arithmetic (24-bit, modular) ---- */

static inline uint32_t rnic_psn_add(uint32_t psn, int32_t n)
{
    return (psn + (uint32_t)n) & RNIC_PSN_MASK;
}

/* Signed distance a - b in [-2^23, 2^23). */
static inline int32_t rnic_psn_diff(uint32_t a, uint32_t b)
{
    uint32_t d = (a - b) & RNIC_PSN_MASK;

    return (d & 0x800000u) ? (int32_t)d - 0x1000000 : (int32_t)d;
}

static inline bool rnic_psn_lt(uint32_t a, uint32_t b)
{
    return rnic_psn_diff(a, b) < 0;
}

static inline bool rnic_psn_le(uint32_t a, uint32_t b)
{
    return rnic_psn_diff(a, b) <= 0;
}

static inline bool rnic_psn_gt(uint32_t a, uint32_t b)
{
    return rnic_psn_diff(a, b) > 0;
}

static inline bool rnic_psn_ge(uint32_t a, uint32_t b)
{
    return rnic_psn_diff(a, b) >= 0;
}

/* True if psn lies in [base, base + size) modulo 2^24. */
static inline bool rnic_psn_in_window(uint32_t psn, uint32_t base,
                                      uint32_t size)
{
    return ((psn - base) & RNIC_PSN_MASK) < size;
}

static inline uint32_t rnic_msn_add(uint32_t msn, uint32_t n)
{
    return (msn + n) & RNIC_MSN_MASK;
}

/* ---- AETH syndrome ---- */

enum {
    RNIC_AETH_ACK = 0,
    RNIC_AETH_RNR_NAK = 1,
    RNIC_AETH_RESERVED = 2,
    RNIC_AETH_NAK = 3,
};

enum {
    RNIC_NAK_PSN_SEQ_ERR = 0,
    RNIC_NAK_INVALID_REQ = 1,
    RNIC_NAK_REMOTE_ACCESS_ERR = 2,
    RNIC_NAK_REMOTE_OP_ERR = 3,
    RNIC_NAK_INVALID_RD_REQ = 4,
};

/* Credit count meaning "no end-to-end flow control"; what rxe sends. */
#define RNIC_AETH_CREDITS_INVALID   0x1f

static inline uint8_t rnic_aeth_syndrome(unsigned type, unsigned value)
{
    return ((type & 3) << 5) | (value & 0x1f);
}

static inline uint8_t rnic_aeth_ack(unsigned credits)
{
    return rnic_aeth_syndrome(RNIC_AETH_ACK, credits);
}

static inline uint8_t rnic_aeth_rnr_nak(unsigned timer)
{
    return rnic_aeth_syndrome(RNIC_AETH_RNR_NAK, timer);
}

static inline uint8_t rnic_aeth_nak(unsigned code)
{
    return rnic_aeth_syndrome(RNIC_AETH_NAK, code);
}

static inline unsigned rnic_aeth_type(uint8_t syndrome)
{
    return (syndrome >> 5) & 3;
}

/* Credit count, RNR timer or NAK code depending on the type. */
static inline unsigned rnic_aeth_value(uint8_t syndrome)
{
    return syndrome & 0x1f;
}

const char *rnic_aeth_str(uint8_t syndrome);

/* ---- Timers and MTU ---- */

/* RNR NAK timer field (0..31) to microseconds; 0 encodes 655.36 ms. */
uint32_t rnic_rnr_timer_us(uint8_t timer);
/*
 * Encoding of the shortest RNR delay that is at least @us; beyond
 * 491.52 ms that is encoding 0 (655.36 ms), which also saturates.
 */
uint8_t rnic_rnr_timer_encode(uint32_t us);
/* Local ACK timeout 4.096 us * 2^timeout in ns; 0 means no timeout. */
uint64_t rnic_ack_timeout_ns(uint8_t timeout);
/* Path MTU enum (1..5) to bytes (256..4096); 0 if invalid. */
uint32_t rnic_mtu_to_bytes(uint8_t mtu);
/* Largest MTU enum not above @bytes; 0 if below 256. */
uint8_t rnic_mtu_from_bytes(uint32_t bytes);

/* ---- Byte order helpers (unaligned) ---- */

static inline uint16_t rnic_ld16be(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rnic_ld24be(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t rnic_ld32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rnic_ld64be(const uint8_t *p)
{
    return (uint64_t)rnic_ld32be(p) << 32 | rnic_ld32be(p + 4);
}

static inline uint32_t rnic_ld32le(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
           (uint32_t)p[1] << 8 | p[0];
}

static inline void rnic_st16be(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static inline void rnic_st24be(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = v;
}

static inline void rnic_st32be(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

static inline void rnic_st64be(uint8_t *p, uint64_t v)
{
    rnic_st32be(p, v >> 32);
    rnic_st32be(p + 4, (uint32_t)v);
}

static inline void rnic_st32le(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

#endif /* HW_RNIC_RNIC_WIRE_H */
