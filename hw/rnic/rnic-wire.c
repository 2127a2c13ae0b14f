/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: RoCE v2 and v1 wire format
 *
 * Parsing treats every frame as hostile: each read is preceded by a length
 * check against what is left of the frame, and lengths taken from headers
 * are only ever compared against the frame length, never trusted to size
 * a read on their own.
 */

#include "qemu/osdep.h"
#include <libdeflate.h>

#include "rnic-wire.h"

/* ---- Opcode table ---- */

#define RNIC_HLEN(f) \
    (RNIC_BTH_LEN + \
     (((f) & RNIC_HDR_DETH) ? RNIC_DETH_LEN : 0) + \
     (((f) & RNIC_HDR_FETH) ? RNIC_FETH_LEN : 0) + \
     (((f) & RNIC_HDR_RETH) ? RNIC_RETH_LEN : 0) + \
     (((f) & RNIC_HDR_ATOMIC_ETH) ? RNIC_ATOMIC_ETH_LEN : 0) + \
     (((f) & RNIC_HDR_AETH) ? RNIC_AETH_LEN : 0) + \
     (((f) & RNIC_HDR_ATOMIC_ACK_ETH) ? RNIC_ATOMIC_ACK_ETH_LEN : 0) + \
     (((f) & RNIC_HDR_IMMDT) ? RNIC_IMMDT_LEN : 0) + \
     (((f) & RNIC_HDR_IETH) ? RNIC_IETH_LEN : 0))

#define OP(opc, str, f) \
    [opc] = { .name = str, .flags = (f), .hdr_len = RNIC_HLEN(f) }

#define REQ_PL      (RNIC_OPF_REQUEST | RNIC_OPF_PAYLOAD)
#define SEND_F      (REQ_PL | RNIC_OPF_SEND)
#define WRITE_F     (REQ_PL | RNIC_OPF_WRITE)
#define RRESP_F     (RNIC_OPF_RESPONSE | RNIC_OPF_PAYLOAD | RNIC_OPF_READ)

static const RnicOpcodeInfo rnic_opcodes[256] = {
    OP(RNIC_OPC_RC_SEND_FIRST, "RC_SEND_FIRST",
       SEND_F | RNIC_OPF_FIRST),
    OP(RNIC_OPC_RC_SEND_MIDDLE, "RC_SEND_MIDDLE",
       SEND_F | RNIC_OPF_MIDDLE),
    OP(RNIC_OPC_RC_SEND_LAST, "RC_SEND_LAST",
       SEND_F | RNIC_OPF_LAST),
    OP(RNIC_OPC_RC_SEND_LAST_WITH_IMMEDIATE, "RC_SEND_LAST_WITH_IMMEDIATE",
       SEND_F | RNIC_OPF_LAST | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_RC_SEND_ONLY, "RC_SEND_ONLY",
       SEND_F | RNIC_OPF_ONLY),
    OP(RNIC_OPC_RC_SEND_ONLY_WITH_IMMEDIATE, "RC_SEND_ONLY_WITH_IMMEDIATE",
       SEND_F | RNIC_OPF_ONLY | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_RC_RDMA_WRITE_FIRST, "RC_RDMA_WRITE_FIRST",
       WRITE_F | RNIC_OPF_FIRST | RNIC_HDR_RETH),
    OP(RNIC_OPC_RC_RDMA_WRITE_MIDDLE, "RC_RDMA_WRITE_MIDDLE",
       WRITE_F | RNIC_OPF_MIDDLE),
    OP(RNIC_OPC_RC_RDMA_WRITE_LAST, "RC_RDMA_WRITE_LAST",
       WRITE_F | RNIC_OPF_LAST),
    OP(RNIC_OPC_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
       "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
       WRITE_F | RNIC_OPF_LAST | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_RC_RDMA_WRITE_ONLY, "RC_RDMA_WRITE_ONLY",
       WRITE_F | RNIC_OPF_ONLY | RNIC_HDR_RETH),
    OP(RNIC_OPC_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
       "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
       WRITE_F | RNIC_OPF_ONLY | RNIC_HDR_RETH | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_RC_RDMA_READ_REQUEST, "RC_RDMA_READ_REQUEST",
       RNIC_OPF_REQUEST | RNIC_OPF_READ | RNIC_OPF_ONLY | RNIC_HDR_RETH),
    OP(RNIC_OPC_RC_RDMA_READ_RESPONSE_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
       RRESP_F | RNIC_OPF_FIRST | RNIC_HDR_AETH),
    OP(RNIC_OPC_RC_RDMA_READ_RESPONSE_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
       RRESP_F | RNIC_OPF_MIDDLE),
    OP(RNIC_OPC_RC_RDMA_READ_RESPONSE_LAST, "RC_RDMA_READ_RESPONSE_LAST",
       RRESP_F | RNIC_OPF_LAST | RNIC_HDR_AETH),
    OP(RNIC_OPC_RC_RDMA_READ_RESPONSE_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
       RRESP_F | RNIC_OPF_ONLY | RNIC_HDR_AETH),
    OP(RNIC_OPC_RC_ACKNOWLEDGE, "RC_ACKNOWLEDGE",
       RNIC_OPF_RESPONSE | RNIC_OPF_ACK | RNIC_OPF_ONLY | RNIC_HDR_AETH),
    OP(RNIC_OPC_RC_ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE",
       RNIC_OPF_RESPONSE | RNIC_OPF_ACK | RNIC_OPF_ATOMIC | RNIC_OPF_ONLY |
       RNIC_HDR_AETH | RNIC_HDR_ATOMIC_ACK_ETH),
    OP(RNIC_OPC_RC_COMPARE_SWAP, "RC_COMPARE_SWAP",
       RNIC_OPF_REQUEST | RNIC_OPF_ATOMIC | RNIC_OPF_ONLY |
       RNIC_HDR_ATOMIC_ETH),
    OP(RNIC_OPC_RC_FETCH_ADD, "RC_FETCH_ADD",
       RNIC_OPF_REQUEST | RNIC_OPF_ATOMIC | RNIC_OPF_ONLY |
       RNIC_HDR_ATOMIC_ETH),
    OP(RNIC_OPC_RC_SEND_LAST_WITH_INVALIDATE, "RC_SEND_LAST_WITH_INVALIDATE",
       SEND_F | RNIC_OPF_LAST | RNIC_HDR_IETH),
    OP(RNIC_OPC_RC_SEND_ONLY_WITH_INVALIDATE, "RC_SEND_ONLY_WITH_INVALIDATE",
       SEND_F | RNIC_OPF_ONLY | RNIC_HDR_IETH),
    OP(RNIC_OPC_RC_FLUSH, "RC_FLUSH",
       RNIC_OPF_REQUEST | RNIC_OPF_PLACE | RNIC_OPF_ONLY | RNIC_HDR_FETH |
       RNIC_HDR_RETH),
    OP(RNIC_OPC_RC_ATOMIC_WRITE, "RC_ATOMIC_WRITE",
       REQ_PL | RNIC_OPF_PLACE | RNIC_OPF_ONLY | RNIC_HDR_RETH),

    OP(RNIC_OPC_UC_SEND_FIRST, "UC_SEND_FIRST",
       SEND_F | RNIC_OPF_FIRST),
    OP(RNIC_OPC_UC_SEND_MIDDLE, "UC_SEND_MIDDLE",
       SEND_F | RNIC_OPF_MIDDLE),
    OP(RNIC_OPC_UC_SEND_LAST, "UC_SEND_LAST",
       SEND_F | RNIC_OPF_LAST),
    OP(RNIC_OPC_UC_SEND_LAST_WITH_IMMEDIATE, "UC_SEND_LAST_WITH_IMMEDIATE",
       SEND_F | RNIC_OPF_LAST | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_UC_SEND_ONLY, "UC_SEND_ONLY",
       SEND_F | RNIC_OPF_ONLY),
    OP(RNIC_OPC_UC_SEND_ONLY_WITH_IMMEDIATE, "UC_SEND_ONLY_WITH_IMMEDIATE",
       SEND_F | RNIC_OPF_ONLY | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_UC_RDMA_WRITE_FIRST, "UC_RDMA_WRITE_FIRST",
       WRITE_F | RNIC_OPF_FIRST | RNIC_HDR_RETH),
    OP(RNIC_OPC_UC_RDMA_WRITE_MIDDLE, "UC_RDMA_WRITE_MIDDLE",
       WRITE_F | RNIC_OPF_MIDDLE),
    OP(RNIC_OPC_UC_RDMA_WRITE_LAST, "UC_RDMA_WRITE_LAST",
       WRITE_F | RNIC_OPF_LAST),
    OP(RNIC_OPC_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
       "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
       WRITE_F | RNIC_OPF_LAST | RNIC_HDR_IMMDT),
    OP(RNIC_OPC_UC_RDMA_WRITE_ONLY, "UC_RDMA_WRITE_ONLY",
       WRITE_F | RNIC_OPF_ONLY | RNIC_HDR_RETH),
    OP(RNIC_OPC_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
       "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
       WRITE_F | RNIC_OPF_ONLY | RNIC_HDR_RETH | RNIC_HDR_IMMDT),

    OP(RNIC_OPC_CNP, "CNP", RNIC_OPF_CNP | RNIC_OPF_PAYLOAD),

    OP(RNIC_OPC_UD_SEND_ONLY, "UD_SEND_ONLY",
       SEND_F | RNIC_OPF_ONLY | RNIC_HDR_DETH),
    OP(RNIC_OPC_UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_WITH_IMMEDIATE",
       SEND_F | RNIC_OPF_ONLY | RNIC_HDR_DETH | RNIC_HDR_IMMDT),
};

QEMU_BUILD_BUG_ON(RNIC_HLEN(RNIC_HDR_ATOMIC_ETH) != RNIC_MAX_TRANSPORT_HLEN);
QEMU_BUILD_BUG_ON(RNIC_HLEN(RNIC_HDR_RETH | RNIC_HDR_IMMDT) >
                  RNIC_MAX_TRANSPORT_HLEN);

const RnicOpcodeInfo *rnic_opcode_info(uint8_t opcode)
{
    const RnicOpcodeInfo *info = &rnic_opcodes[opcode];

    return info->name ? info : NULL;
}

const char *rnic_bth_opc_str(uint8_t opcode)
{
    const RnicOpcodeInfo *info = rnic_opcode_info(opcode);

    return info ? info->name : "UNKNOWN";
}

static const char *const rnic_wire_err_names[RNIC_WIRE_E__MAX] = {
    [RNIC_WIRE_OK] = "ok",
    [RNIC_WIRE_E_TOO_SHORT] = "frame too short",
    [RNIC_WIRE_E_NOT_IP] = "not IPv4/IPv6",
    [RNIC_WIRE_E_IP_HDR] = "bad IP header",
    [RNIC_WIRE_E_IP_CSUM] = "bad IPv4 header checksum",
    [RNIC_WIRE_E_IP_LEN] = "IP length inconsistent with frame",
    [RNIC_WIRE_E_NOT_UDP] = "not UDP",
    [RNIC_WIRE_E_UDP_LEN] = "UDP length inconsistent with IP",
    [RNIC_WIRE_E_NOT_ROCE] = "UDP port is not RoCEv2",
    [RNIC_WIRE_E_TVER] = "bad BTH transport version",
    [RNIC_WIRE_E_OPCODE] = "unsupported BTH opcode",
    [RNIC_WIRE_E_HDR_TRUNC] = "transport headers truncated",
    [RNIC_WIRE_E_PAD] = "pad count exceeds payload",
    [RNIC_WIRE_E_PAYLOAD] = "payload on opcode without payload",
    [RNIC_WIRE_E_ICRC] = "ICRC mismatch",
    [RNIC_WIRE_E_IB_LRH] = "bad LRH or not an IBA packet",
    [RNIC_WIRE_E_VCRC] = "VCRC mismatch",
    [RNIC_WIRE_E_VL15] = "VL15 packet not for QP0",
};

const char *rnic_wire_err_str(RnicWireErr err)
{
    if ((unsigned)err >= RNIC_WIRE_E__MAX) {
        return "unknown error";
    }
    return rnic_wire_err_names[err];
}

/* ---- Checksums ---- */

/* Ones-complement sum of big-endian 16-bit words, not yet folded. */
static uint32_t rnic_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += rnic_ld16be(p + i);
    }
    if (len & 1) {
        sum += (uint32_t)p[len - 1] << 8;
    }
    /* Fold early so that long inputs cannot overflow the accumulator. */
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

static uint16_t rnic_csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

uint16_t rnic_ipv4_hdr_csum(const uint8_t *hdr, size_t hlen)
{
    uint32_t sum;

    /* Sum around the checksum field (bytes 10-11) rather than zeroing it. */
    sum = rnic_csum_add(0, hdr, 10);
    sum = rnic_csum_add(sum, hdr + 12, hlen - 12);
    return rnic_csum_fold(sum);
}

uint16_t rnic_udp6_csum(const uint8_t src[16], const uint8_t dst[16],
                        const uint8_t *udp, size_t udp_len)
{
    uint32_t sum;
    uint16_t csum;

    sum = rnic_csum_add(0, src, 16);
    sum = rnic_csum_add(sum, dst, 16);
    sum += (uint32_t)(udp_len >> 16) + (uint32_t)(udp_len & 0xffff);
    sum += RNIC_IPPROTO_UDP;
    sum = rnic_csum_add(sum, udp, 6);
    sum = rnic_csum_add(sum, udp + 8, udp_len - 8);
    csum = rnic_csum_fold(sum);
    /* Zero means "no checksum", which IPv6 forbids; send all-ones. */
    return csum ? csum : 0xffff;
}

/*
 * The ICRC is the IEEE CRC-32 of the packet as it would look on an
 * InfiniBand link with every field that routers may rewrite forced to
 * ones: 8 bytes standing in for the LRH, the IP header without TOS/TTL/
 * checksum (IPv4) or traffic class/flow label/hop limit (IPv6), the UDP
 * header without its checksum, and the BTH without the byte holding
 * FECN/BECN.  libdeflate's crc32 (carry-less multiply where the CPU has
 * it: the ICRC is computed for every frame each way, and a table-driven
 * CRC costs more than copying the payload) applies the same initial and
 * final inversion as IBTA, and a little-endian store yields the on-wire
 * byte order; the unit tests check this against frames captured from
 * RoCE hardware.
 *
 * IPv4 options are covered as part of the IP header, as IBTA specifies.
 */
static const uint8_t rnic_lrh_ones[8] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
};

/* IPv6 header and GRH alike: traffic class, flow label, hop limit. */
static void rnic_icrc_mask_ip6(uint8_t *h)
{
    h[0] |= 0x0f;
    h[1] = h[2] = h[3] = 0xff;
    h[7] = 0xff;
}

uint32_t rnic_icrc(const uint8_t *ip, size_t ip_hlen, size_t len)
{
    uint8_t masked[RNIC_IPV4_MAX_HLEN + RNIC_UDP_HLEN + RNIC_BTH_LEN];
    size_t mlen = ip_hlen + RNIC_UDP_HLEN + RNIC_BTH_LEN;
    uint32_t crc;

    /* The parser and the builder never pass these; refuse, don't trust. */
    if (ip_hlen > RNIC_IPV4_MAX_HLEN || len < mlen) {
        return 0;
    }

    memcpy(masked, ip, mlen);
    if ((ip[0] >> 4) == 4) {
        masked[1] = 0xff;                   /* TOS */
        masked[8] = 0xff;                   /* TTL */
        masked[10] = masked[11] = 0xff;     /* header checksum */
    } else {
        rnic_icrc_mask_ip6(masked);
    }
    masked[ip_hlen + 6] = masked[ip_hlen + 7] = 0xff;  /* UDP checksum */
    masked[ip_hlen + RNIC_UDP_HLEN + 4] = 0xff;        /* FECN/BECN/resv */

    crc = libdeflate_crc32(0, rnic_lrh_ones, sizeof(rnic_lrh_ones));
    crc = libdeflate_crc32(crc, masked, mlen);
    return libdeflate_crc32(crc, ip + mlen, len - mlen);
}

/*
 * RoCE v1 carries the IB packet minus its LRH, so this is IBTA's own
 * ICRC: the same all-ones LRH stand-in, the GRH with the fields routers
 * rewrite masked, and the BTH with resv8a masked.
 */
uint32_t rnic_icrc_v1(const uint8_t *grh, size_t len)
{
    uint8_t masked[RNIC_GRH_LEN + RNIC_BTH_LEN];
    uint32_t crc;

    if (len < sizeof(masked)) {
        return 0;
    }
    memcpy(masked, grh, sizeof(masked));
    rnic_icrc_mask_ip6(masked);
    masked[RNIC_GRH_LEN + 4] = 0xff;

    crc = libdeflate_crc32(0, rnic_lrh_ones, sizeof(rnic_lrh_ones));
    crc = libdeflate_crc32(crc, masked, sizeof(masked));
    return libdeflate_crc32(crc, grh + sizeof(masked), len - sizeof(masked));
}

/* ---- Parser ---- */

static void rnic_parse_bth(const uint8_t *b, RnicBth *bth)
{
    bth->opcode = b[0];
    bth->se = b[1] & 0x80;
    bth->mig = b[1] & 0x40;
    bth->pad = (b[1] >> 4) & 3;
    bth->tver = b[1] & 0x0f;
    bth->pkey = rnic_ld16be(b + 2);
    bth->fecn = b[4] & 0x80;
    bth->becn = b[4] & 0x40;
    bth->resv6 = b[4] & RNIC_BTH_RESV6_MASK;
    bth->dqpn = rnic_ld24be(b + 5);
    bth->ack_req = b[8] & 0x80;
    bth->psn = rnic_ld24be(b + 9);
}

/* Decode the extension headers; the caller has checked their length. */
static void rnic_parse_ext(const uint8_t *p, uint32_t flags, RnicPkt *out)
{
    if (flags & RNIC_HDR_DETH) {
        out->deth.qkey = rnic_ld32be(p);
        out->deth.src_qp = rnic_ld24be(p + 5);
        p += RNIC_DETH_LEN;
    }
    if (flags & RNIC_HDR_FETH) {
        out->feth = rnic_ld32be(p);
        p += RNIC_FETH_LEN;
    }
    if (flags & RNIC_HDR_RETH) {
        out->reth.va = rnic_ld64be(p);
        out->reth.rkey = rnic_ld32be(p + 8);
        out->reth.dma_len = rnic_ld32be(p + 12);
        p += RNIC_RETH_LEN;
    }
    if (flags & RNIC_HDR_ATOMIC_ETH) {
        out->atomic.va = rnic_ld64be(p);
        out->atomic.rkey = rnic_ld32be(p + 8);
        out->atomic.swap_add = rnic_ld64be(p + 12);
        out->atomic.compare = rnic_ld64be(p + 20);
        p += RNIC_ATOMIC_ETH_LEN;
    }
    if (flags & RNIC_HDR_AETH) {
        out->aeth.syndrome = p[0];
        out->aeth.msn = rnic_ld24be(p + 1);
        p += RNIC_AETH_LEN;
    }
    if (flags & RNIC_HDR_ATOMIC_ACK_ETH) {
        out->atomic_orig = rnic_ld64be(p);
        p += RNIC_ATOMIC_ACK_ETH_LEN;
    }
    if (flags & RNIC_HDR_IMMDT) {
        out->imm = rnic_ld32be(p);
        p += RNIC_IMMDT_LEN;
    }
    if (flags & RNIC_HDR_IETH) {
        out->ieth_rkey = rnic_ld32be(p);
    }
}

/* The fields an IPv6 header and a GRH share. */
static void rnic_parse_ip6(const uint8_t *ip, RnicPkt *out)
{
    out->ip_ver = 6;
    out->tclass = (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    out->flow_label = rnic_ld24be(ip + 1) & 0xfffff;
    out->ttl = ip[7];
    memcpy(out->ip_src, ip + 8, 16);
    memcpy(out->ip_dst, ip + 24, 16);
}

/* RoCE v1: the GRH stands where v2 has the IP and UDP headers. */
static RnicWireErr rnic_parse_grh(const uint8_t *grh, size_t avail,
                                  RnicPkt *out, size_t *l3_len)
{
    if (avail < RNIC_GRH_LEN) {
        return RNIC_WIRE_E_TOO_SHORT;
    }
    if ((grh[0] >> 4) != 6) {
        return RNIC_WIRE_E_IP_HDR;
    }
    out->roce_v1 = true;
    rnic_parse_ip6(grh, out);
    if (grh[6] != RNIC_GRH_NXTHDR_IBA) {
        return RNIC_WIRE_E_NOT_ROCE;
    }
    *l3_len = RNIC_GRH_LEN + rnic_ld16be(grh + 4);
    return RNIC_WIRE_OK;
}

/*
 * The BTH, extension headers, pad and payload of AVAIL bytes at BTH
 * (through the ICRC): common to every link.
 */
static RnicWireErr rnic_parse_transport(const uint8_t *frame,
                                        const uint8_t *bth, size_t avail,
                                        RnicPkt *out)
{
    const RnicOpcodeInfo *info;
    size_t pay;

    if (avail < RNIC_BTH_LEN + RNIC_ICRC_LEN) {
        return RNIC_WIRE_E_HDR_TRUNC;
    }
    rnic_parse_bth(bth, &out->bth);
    if (out->bth.tver != RNIC_BTH_TVER) {
        return RNIC_WIRE_E_TVER;
    }
    info = rnic_opcode_info(out->bth.opcode);
    if (!info) {
        return RNIC_WIRE_E_OPCODE;
    }
    if (avail < (size_t)info->hdr_len + RNIC_ICRC_LEN) {
        return RNIC_WIRE_E_HDR_TRUNC;
    }
    rnic_parse_ext(bth + RNIC_BTH_LEN, info->flags, out);

    pay = avail - info->hdr_len - RNIC_ICRC_LEN;
    if (out->bth.pad > pay) {
        return RNIC_WIRE_E_PAD;
    }
    if (pay && !(info->flags & RNIC_OPF_PAYLOAD)) {
        return RNIC_WIRE_E_PAYLOAD;
    }
    out->bth_off = bth - frame;
    out->payload_off = out->bth_off + info->hdr_len;
    out->payload_len = pay - out->bth.pad;
    return RNIC_WIRE_OK;
}

/*
 * InfiniBand: the link layer checks (LVer, PktLen, VCRC, ICRC, VL15)
 * come first, as a port makes them before the transport sees anything.
 */
static RnicWireErr rnic_parse_ib(const uint8_t *frame, size_t len,
                                 RnicPkt *out)
{
    static const RnicWireErr ib_err[RNIC_IB_ERR__MAX] = {
        [RNIC_IB_ERR_SHORT] = RNIC_WIRE_E_TOO_SHORT,
        [RNIC_IB_ERR_LVER] = RNIC_WIRE_E_IB_LRH,
        [RNIC_IB_ERR_LEN] = RNIC_WIRE_E_IP_LEN,
        [RNIC_IB_ERR_VCRC] = RNIC_WIRE_E_VCRC,
        [RNIC_IB_ERR_ICRC] = RNIC_WIRE_E_ICRC,
        [RNIC_IB_ERR_VL15] = RNIC_WIRE_E_VL15,
    };
    const uint8_t *pkt = frame + RNIC_ETH_HLEN, *bth;
    size_t pkt_len = rnic_ib_frame_pkt_len(frame, len, RNIC_ETH_HLEN);
    size_t avail, l3_len;
    RnicIbErr ierr;
    RnicLrh lrh;
    RnicWireErr err;

    out->ib = true;
    out->l3_off = RNIC_ETH_HLEN;
    if (!pkt_len) {
        return len < RNIC_ETH_HLEN + RNIC_LRH_LEN + RNIC_VCRC_LEN ?
               RNIC_WIRE_E_TOO_SHORT : RNIC_WIRE_E_IP_LEN;
    }
    ierr = rnic_ib_check(pkt, pkt_len, &lrh);
    if (ierr != RNIC_IB_OK) {
        return ib_err[ierr];
    }
    if (lrh.lnh != RNIC_LNH_IBA_LOCAL && lrh.lnh != RNIC_LNH_IBA_GLOBAL) {
        return RNIC_WIRE_E_IB_LRH;
    }
    out->ib_vl = lrh.vl;
    out->ib_sl = lrh.sl;
    out->ib_dlid = lrh.dlid;
    out->ib_slid = lrh.slid;
    /* From after the LRH through the ICRC. */
    avail = pkt_len - RNIC_LRH_LEN - RNIC_VCRC_LEN;
    bth = pkt + RNIC_LRH_LEN;
    if (lrh.lnh == RNIC_LNH_IBA_GLOBAL) {
        /* rnic_parse_grh() would call this RoCE v1: undo that. */
        err = rnic_parse_grh(bth, avail, out, &l3_len);
        out->roce_v1 = false;
        if (err != RNIC_WIRE_OK) {
            return err;
        }
        if (l3_len != avail) {
            return RNIC_WIRE_E_IP_LEN;
        }
        out->ib_grh = true;
        bth += RNIC_GRH_LEN;
        avail -= RNIC_GRH_LEN;
    }
    err = rnic_parse_transport(frame, bth, avail, out);
    if (err != RNIC_WIRE_OK) {
        return err;
    }
    out->frame_len = RNIC_ETH_HLEN + pkt_len;
    out->icrc = rnic_ld32le(bth + avail - RNIC_ICRC_LEN);
    return RNIC_WIRE_OK;
}

RnicWireErr rnic_wire_parse(const uint8_t *frame, size_t len, RnicPkt *out)
{
    const uint8_t *ip, *udp, *bth;
    size_t off = RNIC_ETH_HLEN;
    size_t ip_hlen, ip_len, udp_len, avail;
    uint16_t ethertype;
    RnicWireErr err;

    memset(out, 0, sizeof(*out));

    /* Ethernet (+ one optional 802.1Q tag) */
    if (len < RNIC_ETH_HLEN) {
        return RNIC_WIRE_E_TOO_SHORT;
    }
    memcpy(out->eth_dst, frame, RNIC_ETH_ALEN);
    memcpy(out->eth_src, frame + RNIC_ETH_ALEN, RNIC_ETH_ALEN);
    ethertype = rnic_ld16be(frame + 12);
    if (ethertype == RNIC_ETHERTYPE_VLAN) {
        if (len < RNIC_ETH_HLEN + RNIC_VLAN_HLEN) {
            return RNIC_WIRE_E_TOO_SHORT;
        }
        out->has_vlan = true;
        out->vlan_tci = rnic_ld16be(frame + 14);
        ethertype = rnic_ld16be(frame + 16);
        off += RNIC_VLAN_HLEN;
    }
    if (ethertype == RNIC_ETHERTYPE_IB) {
        /* An IB link has no VLANs: a tagged IB frame is not ours. */
        return out->has_vlan ? RNIC_WIRE_E_NOT_IP
                             : rnic_parse_ib(frame, len, out);
    }
    out->l3_off = off;
    ip = frame + off;
    avail = len - off;

    /* IP */
    if (ethertype == RNIC_ETHERTYPE_IPV4) {
        if (avail < RNIC_IPV4_HLEN) {
            return RNIC_WIRE_E_TOO_SHORT;
        }
        ip_hlen = (ip[0] & 0x0f) * 4;
        if ((ip[0] >> 4) != 4 || ip_hlen < RNIC_IPV4_HLEN) {
            return RNIC_WIRE_E_IP_HDR;
        }
        if (avail < ip_hlen) {
            return RNIC_WIRE_E_TOO_SHORT;
        }
        /* RoCE never fragments (DF); a fragment cannot be a whole packet. */
        if (rnic_ld16be(ip + 6) & 0x3fff) {
            return RNIC_WIRE_E_IP_HDR;
        }
        if (rnic_ld16be(ip + 10) != rnic_ipv4_hdr_csum(ip, ip_hlen)) {
            return RNIC_WIRE_E_IP_CSUM;
        }
        ip_len = rnic_ld16be(ip + 2);
        if (ip_len < ip_hlen) {
            return RNIC_WIRE_E_IP_LEN;
        }
        out->ip_ver = 4;
        out->tclass = ip[1];
        out->ip_id = rnic_ld16be(ip + 4);
        out->ttl = ip[8];
        out->ip_src[10] = out->ip_src[11] = 0xff;
        out->ip_dst[10] = out->ip_dst[11] = 0xff;
        memcpy(out->ip_src + 12, ip + 12, 4);
        memcpy(out->ip_dst + 12, ip + 16, 4);
        if (ip[9] != RNIC_IPPROTO_UDP) {
            return RNIC_WIRE_E_NOT_UDP;
        }
    } else if (ethertype == RNIC_ETHERTYPE_IPV6) {
        if (avail < RNIC_IPV6_HLEN) {
            return RNIC_WIRE_E_TOO_SHORT;
        }
        if ((ip[0] >> 4) != 6) {
            return RNIC_WIRE_E_IP_HDR;
        }
        ip_hlen = RNIC_IPV6_HLEN;
        ip_len = ip_hlen + rnic_ld16be(ip + 4);
        rnic_parse_ip6(ip, out);
        /* Extension headers are not used by RoCEv2. */
        if (ip[6] != RNIC_IPPROTO_UDP) {
            return RNIC_WIRE_E_NOT_UDP;
        }
    } else if (ethertype == RNIC_ETHERTYPE_ROCE_V1) {
        err = rnic_parse_grh(ip, avail, out, &ip_len);
        if (err != RNIC_WIRE_OK) {
            return err;
        }
        ip_hlen = RNIC_GRH_LEN;
    } else {
        return RNIC_WIRE_E_NOT_IP;
    }

    /*
     * The IP length must cover exactly the rest of the frame, except that
     * a frame shorter than the Ethernet minimum may carry padding.
     */
    if (ip_len > avail ||
        (ip_len < avail &&
         len > RNIC_ETH_MIN_FRAME + (out->has_vlan ? RNIC_VLAN_HLEN : 0))) {
        return RNIC_WIRE_E_IP_LEN;
    }

    if (out->roce_v1) {
        bth = ip + ip_hlen;
        avail = ip_len - ip_hlen;
    } else {
        /* UDP */
        if (ip_len - ip_hlen < RNIC_UDP_HLEN) {
            return RNIC_WIRE_E_TOO_SHORT;
        }
        udp = ip + ip_hlen;
        udp_len = rnic_ld16be(udp + 4);
        if (udp_len != ip_len - ip_hlen) {
            return RNIC_WIRE_E_UDP_LEN;
        }
        out->udp_sport = rnic_ld16be(udp);
        out->udp_dport = rnic_ld16be(udp + 2);
        if (out->udp_dport != RNIC_ROCE_UDP_PORT) {
            return RNIC_WIRE_E_NOT_ROCE;
        }
        bth = udp + RNIC_UDP_HLEN;
        avail = udp_len - RNIC_UDP_HLEN;
    }

    err = rnic_parse_transport(frame, bth, avail, out);
    if (err != RNIC_WIRE_OK) {
        return err;
    }
    out->frame_len = out->l3_off + ip_len;

    /* ICRC last: it is the most expensive check. */
    out->icrc = rnic_ld32le(frame + out->frame_len - RNIC_ICRC_LEN);
    if ((out->roce_v1 ? rnic_icrc_v1(ip, ip_len - RNIC_ICRC_LEN)
                      : rnic_icrc(ip, ip_hlen, ip_len - RNIC_ICRC_LEN))
        != out->icrc) {
        return RNIC_WIRE_E_ICRC;
    }
    return RNIC_WIRE_OK;
}

/* ---- Builder ---- */

int rnic_wire_hdr_len(const RnicPkt *p)
{
    const RnicOpcodeInfo *info = rnic_opcode_info(p->bth.opcode);
    int len = RNIC_ETH_HLEN + RNIC_UDP_HLEN;

    if (!info) {
        return -EINVAL;
    }
    if (p->ib) {
        /* An IB link has no VLANs. */
        if (p->has_vlan) {
            return -EINVAL;
        }
        return RNIC_ETH_HLEN + RNIC_LRH_LEN +
               (p->ib_grh ? RNIC_GRH_LEN : 0) + info->hdr_len;
    }
    if (p->roce_v1) {
        len = RNIC_ETH_HLEN + RNIC_GRH_LEN;
    } else if (p->ip_ver == 4) {
        len += RNIC_IPV4_HLEN;
    } else if (p->ip_ver == 6) {
        len += RNIC_IPV6_HLEN;
    } else {
        return -EINVAL;
    }
    if (p->has_vlan) {
        len += RNIC_VLAN_HLEN;
    }
    return len + info->hdr_len;
}

static unsigned rnic_pad_len(uint32_t payload_len)
{
    return (4 - (payload_len & 3)) & 3;
}

int rnic_wire_frame_len(const RnicPkt *p)
{
    int hlen = rnic_wire_hdr_len(p);
    size_t l3_off = RNIC_ETH_HLEN + (p->has_vlan ? RNIC_VLAN_HLEN : 0);
    uint64_t total;

    if (hlen < 0) {
        return hlen;
    }
    if (p->payload_len &&
        !(rnic_opcode_info(p->bth.opcode)->flags & RNIC_OPF_PAYLOAD)) {
        return -EINVAL;
    }
    total = (uint64_t)hlen + p->payload_len + rnic_pad_len(p->payload_len) +
            RNIC_ICRC_LEN;
    if (p->ib) {
        /* PktLen counts the words from the LRH through the ICRC. */
        if ((total - l3_off) / 4 > RNIC_LRH_PKTLEN_MAX) {
            return -EMSGSIZE;
        }
        return (int)(total + RNIC_VCRC_LEN);
    }
    /* IPv4 total length, IPv6 and GRH payload length are all 16 bits. */
    if (total - l3_off - (p->roce_v1 || p->ip_ver == 6 ? RNIC_IPV6_HLEN : 0)
        > 0xffff) {
        return -EMSGSIZE;
    }
    return (int)total;
}

static uint8_t *rnic_build_ext(const RnicPkt *p, uint32_t flags, uint8_t *b)
{
    if (flags & RNIC_HDR_DETH) {
        rnic_st32be(b, p->deth.qkey);
        b[4] = 0;
        rnic_st24be(b + 5, p->deth.src_qp);
        b += RNIC_DETH_LEN;
    }
    if (flags & RNIC_HDR_FETH) {
        rnic_st32be(b, p->feth);
        b += RNIC_FETH_LEN;
    }
    if (flags & RNIC_HDR_RETH) {
        rnic_st64be(b, p->reth.va);
        rnic_st32be(b + 8, p->reth.rkey);
        rnic_st32be(b + 12, p->reth.dma_len);
        b += RNIC_RETH_LEN;
    }
    if (flags & RNIC_HDR_ATOMIC_ETH) {
        rnic_st64be(b, p->atomic.va);
        rnic_st32be(b + 8, p->atomic.rkey);
        rnic_st64be(b + 12, p->atomic.swap_add);
        rnic_st64be(b + 20, p->atomic.compare);
        b += RNIC_ATOMIC_ETH_LEN;
    }
    if (flags & RNIC_HDR_AETH) {
        b[0] = p->aeth.syndrome;
        rnic_st24be(b + 1, p->aeth.msn);
        b += RNIC_AETH_LEN;
    }
    if (flags & RNIC_HDR_ATOMIC_ACK_ETH) {
        rnic_st64be(b, p->atomic_orig);
        b += RNIC_ATOMIC_ACK_ETH_LEN;
    }
    if (flags & RNIC_HDR_IMMDT) {
        rnic_st32be(b, p->imm);
        b += RNIC_IMMDT_LEN;
    }
    if (flags & RNIC_HDR_IETH) {
        rnic_st32be(b, p->ieth_rkey);
        b += RNIC_IETH_LEN;
    }
    return b;
}

/* An IPv6 header or a GRH (same layout); finalize sets the length. */
static uint8_t *rnic_build_ip6(const RnicPkt *p, uint8_t nxthdr, uint8_t *b)
{
    rnic_st32be(b, 6u << 28 | (uint32_t)p->tclass << 20 |
                   (p->flow_label & 0xfffff));
    rnic_st16be(b + 4, 0);
    b[6] = nxthdr;
    b[7] = p->ttl;
    memcpy(b + 8, p->ip_src, 16);
    memcpy(b + 24, p->ip_dst, 16);
    return b + RNIC_IPV6_HLEN;
}

int rnic_wire_build_hdr(const RnicPkt *p, uint8_t *buf, size_t size)
{
    int total = rnic_wire_frame_len(p);
    const RnicOpcodeInfo *info;
    uint8_t *b = buf;

    if (total < 0) {
        return total;
    }
    if ((size_t)total > size) {
        return -ENOSPC;
    }
    info = rnic_opcode_info(p->bth.opcode);

    memcpy(b, p->eth_dst, RNIC_ETH_ALEN);
    memcpy(b + 6, p->eth_src, RNIC_ETH_ALEN);
    b += 12;
    if (p->has_vlan) {
        rnic_st16be(b, RNIC_ETHERTYPE_VLAN);
        rnic_st16be(b + 2, p->vlan_tci);
        b += RNIC_VLAN_HLEN;
    }

    if (p->ib) {
        RnicLrh lrh = {
            .vl = p->ib_vl, .sl = p->ib_sl,
            .lnh = p->ib_grh ? RNIC_LNH_IBA_GLOBAL : RNIC_LNH_IBA_LOCAL,
            .dlid = p->ib_dlid, .slid = p->ib_slid,
        };

        rnic_st16be(b, RNIC_ETHERTYPE_IB);
        rnic_lrh_build(&lrh, b + 2);        /* PktLen: finalize */
        b += 2 + RNIC_LRH_LEN;
        if (p->ib_grh) {
            b = rnic_build_ip6(p, RNIC_GRH_NXTHDR_IBA, b);
        }
    } else if (p->roce_v1) {
        rnic_st16be(b, RNIC_ETHERTYPE_ROCE_V1);
        b = rnic_build_ip6(p, RNIC_GRH_NXTHDR_IBA, b + 2);
    } else if (p->ip_ver == 4) {
        rnic_st16be(b, RNIC_ETHERTYPE_IPV4);
        b += 2;
        b[0] = 0x45;
        b[1] = p->tclass;
        rnic_st16be(b + 2, 0);              /* total length: finalize */
        rnic_st16be(b + 4, p->ip_id);
        rnic_st16be(b + 6, 0x4000);         /* DF, as rxe sends */
        b[8] = p->ttl;
        b[9] = RNIC_IPPROTO_UDP;
        rnic_st16be(b + 10, 0);             /* checksum: finalize */
        memcpy(b + 12, p->ip_src + 12, 4);
        memcpy(b + 16, p->ip_dst + 12, 4);
        b += RNIC_IPV4_HLEN;
    } else {
        rnic_st16be(b, RNIC_ETHERTYPE_IPV6);
        b = rnic_build_ip6(p, RNIC_IPPROTO_UDP, b + 2);
    }

    if (!p->roce_v1 && !p->ib) {
        rnic_st16be(b, p->udp_sport);
        rnic_st16be(b + 2, RNIC_ROCE_UDP_PORT);
        rnic_st32be(b + 4, 0);              /* length, checksum: finalize */
        b += RNIC_UDP_HLEN;
    }

    b[0] = p->bth.opcode;
    b[1] = (p->bth.se ? 0x80 : 0) | (p->bth.mig ? 0x40 : 0) |
           (p->bth.tver & 0x0f);
    rnic_st16be(b + 2, p->bth.pkey);
    b[4] = (p->bth.fecn ? 0x80 : 0) | (p->bth.becn ? 0x40 : 0) |
           (p->bth.resv6 & RNIC_BTH_RESV6_MASK);
    rnic_st24be(b + 5, p->bth.dqpn);
    b[8] = p->bth.ack_req ? 0x80 : 0;
    rnic_st24be(b + 9, p->bth.psn);
    b += RNIC_BTH_LEN;

    b = rnic_build_ext(p, info->flags, b);
    return b - buf;
}

int rnic_wire_finalize(const RnicPkt *p, uint8_t *buf, size_t size)
{
    int total = rnic_wire_frame_len(p);
    int hlen = rnic_wire_hdr_len(p);
    size_t l3_off = RNIC_ETH_HLEN + (p->has_vlan ? RNIC_VLAN_HLEN : 0);
    size_t ip_hlen = p->ip_ver == 4 ? RNIC_IPV4_HLEN : RNIC_IPV6_HLEN;
    unsigned pad = rnic_pad_len(p->payload_len);
    uint8_t *ip, *udp, *bth, *end;
    size_t udp_len;

    if (total < 0) {
        return total;
    }
    if ((size_t)total > size) {
        return -ENOSPC;
    }
    ip = buf + l3_off;
    end = buf + hlen + p->payload_len;
    memset(end, 0, pad);
    if (p->ib) {
        /* ip is the LRH here; the GRH, if any, follows it. */
        bth = ip + RNIC_LRH_LEN + (p->ib_grh ? RNIC_GRH_LEN : 0);
        bth[1] = (bth[1] & ~0x30) | pad << 4;
        if (p->ib_grh) {
            /* PayLen: from the BTH through the ICRC. */
            rnic_st16be(ip + RNIC_LRH_LEN + 4,
                        end + pad + RNIC_ICRC_LEN - bth);
        }
        return rnic_ib_seal(ip, end + pad - ip, size - l3_off) < 0 ?
               -EMSGSIZE : total;
    }
    if (p->roce_v1) {
        bth = ip + RNIC_GRH_LEN;
        bth[1] = (bth[1] & ~0x30) | pad << 4;
        rnic_st16be(ip + 4, buf + total - bth);
        rnic_st32le(end + pad, rnic_icrc_v1(ip, end + pad - ip));
        return total;
    }
    udp = ip + ip_hlen;
    bth = udp + RNIC_UDP_HLEN;
    udp_len = buf + total - udp;

    bth[1] = (bth[1] & ~0x30) | pad << 4;
    rnic_st16be(udp + 4, udp_len);

    if (p->ip_ver == 4) {
        rnic_st16be(ip + 2, ip_hlen + udp_len);
        rnic_st16be(ip + 10, rnic_ipv4_hdr_csum(ip, ip_hlen));
        rnic_st16be(udp + 6, 0);
    } else {
        rnic_st16be(ip + 4, udp_len);
    }

    /* The ICRC must be in place before the UDP checksum covers it. */
    rnic_st32le(end + pad, rnic_icrc(ip, ip_hlen, end + pad - ip));

    if (p->ip_ver == 6) {
        rnic_st16be(udp + 6, rnic_udp6_csum(ip + 8, ip + 24, udp, udp_len));
    }
    return total;
}

int rnic_wire_encode(const RnicPkt *p, const void *payload,
                     uint8_t *buf, size_t size)
{
    int hlen = rnic_wire_build_hdr(p, buf, size);

    if (hlen < 0) {
        return hlen;
    }
    if (p->payload_len) {
        memcpy(buf + hlen, payload, p->payload_len);
    }
    return rnic_wire_finalize(p, buf, size);
}

/* ---- Addressing helpers ---- */

void rnic_ipv4_to_mapped(uint32_t addr, uint8_t out[16])
{
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    rnic_st32be(out + 12, addr);
}

bool rnic_ip_is_v4_mapped(const uint8_t ip[16])
{
    static const uint8_t prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };

    return !memcmp(ip, prefix, sizeof(prefix));
}

uint16_t rnic_udp_sport_from_qpn(uint32_t qpn)
{
    /* Top 14 bits of a 32-bit golden-ratio multiplicative hash. */
    uint32_t h = (qpn * 0x61c88647u) >> (32 - 14);

    return RNIC_ROCE_SPORT_MIN + (h & 0x3fff);
}

uint32_t rnic_flow_label_calc(uint32_t lqpn, uint32_t rqpn)
{
    uint64_t v = (uint64_t)lqpn * rqpn;

    v ^= v >> 20;
    v ^= v >> 40;
    return v & 0xfffff;
}

uint16_t rnic_udp_sport_from_flow_label(uint32_t flow_label)
{
    /* Fold the 6 bits above the low 14 into them, keep the top 2 set. */
    uint32_t lo = flow_label & 0x3fff;
    uint32_t hi = (flow_label & 0xfc000) >> 14;

    return RNIC_ROCE_SPORT_MIN | (lo ^ hi);
}

/* ---- AETH ---- */

const char *rnic_aeth_str(uint8_t syndrome)
{
    static const char *const nak[] = {
        "NAK_PSN_SEQ_ERR", "NAK_INVALID_REQ", "NAK_REMOTE_ACCESS_ERR",
        "NAK_REMOTE_OP_ERR", "NAK_INVALID_RD_REQ",
    };
    unsigned v = rnic_aeth_value(syndrome);

    if (syndrome & 0x80) {
        return "RESERVED";
    }
    switch (rnic_aeth_type(syndrome)) {
    case RNIC_AETH_ACK:
        return "ACK";
    case RNIC_AETH_RNR_NAK:
        return "RNR_NAK";
    case RNIC_AETH_NAK:
        return v < ARRAY_SIZE(nak) ? nak[v] : "NAK_RESERVED";
    default:
        return "RESERVED";
    }
}

/* ---- Timers and MTU ---- */

/* IBTA vol 1 table 45 (RNR NAK timer field encoding), in microseconds. */
static const uint32_t rnic_rnr_us[32] = {
    655360,     10,     20,     30,     40,     60,     80,    120,
       160,    240,    320,    480,    640,    960,   1280,   1920,
      2560,   3840,   5120,   7680,  10240,  15360,  20480,  30720,
     40960,  61440,  81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t rnic_rnr_timer_us(uint8_t timer)
{
    return rnic_rnr_us[timer & 0x1f];
}

uint8_t rnic_rnr_timer_encode(uint32_t us)
{
    uint8_t t;

    for (t = 1; t < ARRAY_SIZE(rnic_rnr_us); t++) {
        if (rnic_rnr_us[t] >= us) {
            return t;
        }
    }
    return 0;
}

uint64_t rnic_ack_timeout_ns(uint8_t timeout)
{
    timeout &= 0x1f;
    return timeout ? (uint64_t)4096 << timeout : 0;
}

uint32_t rnic_mtu_to_bytes(uint8_t mtu)
{
    return (mtu >= 1 && mtu <= 5) ? 128u << mtu : 0;
}

uint8_t rnic_mtu_from_bytes(uint32_t bytes)
{
    uint8_t mtu;

    for (mtu = 5; mtu >= 1; mtu--) {
        if (bytes >= (128u << mtu)) {
            return mtu;
        }
    }
    return 0;
}
