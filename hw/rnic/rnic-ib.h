/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: the InfiniBand link layer
 *
 * Pure packet logic for IB mode and for the emulated IB switch
 * (contrib/rnic-ibswitch): the Local Route Header, the two link CRCs
 * (ICRC and VCRC) and the framing of an IB packet on a QEMU netdev.
 * Like rnic-wire.c it touches no device state and allocates nothing, so
 * the device model, the switch and the unit tests share it.
 *
 * An IB packet on the wire of an rnic fabric (docs/infiniband.md):
 *
 *   Ethernet header     14 bytes, EtherType RNIC_ETHERTYPE_IB, so that
 *                       every QEMU netdev, a Linux bridge and tcpdump
 *                       carry it like any other frame
 *   LRH                 8 bytes
 *   GRH                 40 bytes, when LNH says IBA global
 *   BTH, ETHs, payload, pad
 *   ICRC                4 bytes
 *   VCRC                2 bytes
 *
 * LRH.PktLen counts 4-byte words from the first byte of the LRH through
 * the ICRC; the VCRC follows it.  Values in RnicLrh are in host order.
 */

#ifndef HW_RNIC_RNIC_IB_H
#define HW_RNIC_RNIC_IB_H

/*
 * IEEE 802 "local experimental" EtherType 1: the frame is not meant to
 * leave the emulated fabric, and nothing else in it uses this number.
 */
#define RNIC_ETHERTYPE_IB           0x88b5

#define RNIC_LRH_LEN                8
#define RNIC_VCRC_LEN               2
/* Ethernet header + LRH + BTH + ICRC + VCRC: the smallest IBA frame. */
#define RNIC_IB_MIN_FRAME           (14 + RNIC_LRH_LEN + 12 + 4 + RNIC_VCRC_LEN)
/* Ethernet's minimum frame (no FCS): shorter frames arrive padded. */
#define RNIC_IB_ETH_MIN_FRAME       60
/* PktLen is 11 bits of 4-byte words. */
#define RNIC_LRH_PKTLEN_MAX         0x7ff

/* LRH.LVer: the only link version IBA defines. */
#define RNIC_LRH_LVER               0
/* LRH.LNH: what follows the LRH. */
#define RNIC_LNH_RAW                0   /* raw packet: no BTH, no ICRC */
#define RNIC_LNH_IP                 1   /* raw IPv6 packet: no ICRC */
#define RNIC_LNH_IBA_LOCAL          2   /* BTH follows */
#define RNIC_LNH_IBA_GLOBAL         3   /* GRH, then BTH */

/* Subnet management packets travel on VL15 and only there. */
#define RNIC_VL_SMP                 15

#define RNIC_LID_RESERVED           0x0000  /* no LID assigned */
#define RNIC_LID_UCAST_MAX          0xbfff
#define RNIC_LID_MCAST_MIN          0xc000
#define RNIC_LID_MCAST_MAX          0xfffe
#define RNIC_LID_PERMISSIVE         0xffff

typedef struct RnicLrh {
    uint8_t vl;         /* 4 bits */
    uint8_t lver;       /* 4 bits */
    uint8_t sl;         /* 4 bits */
    uint8_t lnh;        /* 2 bits */
    uint16_t dlid;
    uint16_t pkt_len;   /* 11 bits, in 4-byte words */
    uint16_t slid;
} RnicLrh;

/* Why rnic_ib_check() refused a packet; each reason has its counter. */
typedef enum RnicIbErr {
    RNIC_IB_OK = 0,
    RNIC_IB_ERR_SHORT,      /* shorter than an LRH and a VCRC */
    RNIC_IB_ERR_LVER,       /* LVer is not 0 */
    RNIC_IB_ERR_LEN,        /* PktLen disagrees with the frame's length */
    RNIC_IB_ERR_VCRC,
    RNIC_IB_ERR_ICRC,
    RNIC_IB_ERR_VL15,       /* VL15 carrying something other than QP0 */
    RNIC_IB_ERR__MAX,
} RnicIbErr;

const char *rnic_ib_err_str(RnicIbErr err);

static inline bool rnic_lid_is_mcast(uint16_t lid)
{
    return lid >= RNIC_LID_MCAST_MIN && lid <= RNIC_LID_MCAST_MAX;
}

void rnic_lrh_build(const RnicLrh *lrh, uint8_t out[RNIC_LRH_LEN]);
void rnic_lrh_parse(const uint8_t in[RNIC_LRH_LEN], RnicLrh *lrh);

/*
 * The VCRC of an IB packet: CRC-16 with IBA's polynomial 0x100b,
 * initial value 0xffff, over LEN bytes from the LRH through the ICRC.
 */
uint16_t rnic_vcrc(const uint8_t *lrh, size_t len);

/*
 * The ICRC of a packet starting at its LRH, over LEN bytes (through the
 * pad, not the ICRC).  With a GRH (LNH global) the LRH is left out as a
 * router may rewrite it, exactly as RoCE v1 does; without one the LRH is
 * covered except for VL, which a switch may change.  In both the BTH's
 * resv8a byte is masked.  Returns 0 for a packet too short to hold the
 * headers; rnic_ib_check() never passes one.
 */
uint32_t rnic_ib_icrc(const uint8_t *lrh, size_t len);

/*
 * Check an IB packet (LRH through VCRC, LEN bytes): LVer, PktLen against
 * LEN, VCRC, and for IBA packets the ICRC.  Fills *LRH on success.
 */
RnicIbErr rnic_ib_check(const uint8_t *pkt, size_t len, RnicLrh *lrh);

/*
 * The length of the IB packet in a frame of LEN bytes whose IB packet
 * starts at PKT_OFF (after the Ethernet header): LRH.PktLen words and
 * the VCRC.  A frame padded to the Ethernet minimum may carry more bytes
 * than that; any other disagreement, or too short a frame, gives 0.
 */
size_t rnic_ib_frame_pkt_len(const uint8_t *frame, size_t len,
                             size_t pkt_off);

/*
 * Seal a packet whose LRH, headers and payload are in place: set
 * LRH.PktLen, append the ICRC (IBA packets) and the VCRC.  HDR_PAYLOAD is
 * the length from the LRH through the pad, a multiple of 4.  Returns the
 * packet's length with both CRCs, or -1 if SIZE is too small or the
 * packet too long for PktLen.
 */
int rnic_ib_seal(uint8_t *pkt, size_t hdr_payload, size_t size);

/* Recompute only the VCRC, after a switch changed the VL. */
void rnic_ib_reseal_vcrc(uint8_t *pkt, size_t len);

#endif
