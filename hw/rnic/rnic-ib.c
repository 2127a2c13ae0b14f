/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: the InfiniBand link layer (see rnic-ib.h)
 */

#include "qemu/osdep.h"
#include <libdeflate.h>

#include "rnic-ib.h"

/* BTH offsets used here; the BTH codec itself is rnic-wire.c's. */
#define IB_BTH_LEN          12
#define IB_BTH_RESV8A       4
#define IB_BTH_DQPN         5
#define IB_GRH_LEN          40
#define IB_ICRC_LEN         4

static const char *const rnic_ib_err_names[RNIC_IB_ERR__MAX] = {
    [RNIC_IB_OK] = "ok",
    [RNIC_IB_ERR_SHORT] = "short packet",
    [RNIC_IB_ERR_LVER] = "bad LVer",
    [RNIC_IB_ERR_LEN] = "PktLen mismatch",
    [RNIC_IB_ERR_VCRC] = "bad VCRC",
    [RNIC_IB_ERR_ICRC] = "bad ICRC",
    [RNIC_IB_ERR_VL15] = "VL15 packet not for QP0",
};

const char *rnic_ib_err_str(RnicIbErr err)
{
    return err < RNIC_IB_ERR__MAX ? rnic_ib_err_names[err] : "unknown";
}

void rnic_lrh_build(const RnicLrh *lrh, uint8_t out[RNIC_LRH_LEN])
{
    out[0] = (lrh->vl & 0xf) << 4 | (lrh->lver & 0xf);
    out[1] = (lrh->sl & 0xf) << 4 | (lrh->lnh & 0x3);
    out[2] = lrh->dlid >> 8;
    out[3] = lrh->dlid;
    out[4] = (lrh->pkt_len >> 8) & 0x7;
    out[5] = lrh->pkt_len;
    out[6] = lrh->slid >> 8;
    out[7] = lrh->slid;
}

void rnic_lrh_parse(const uint8_t in[RNIC_LRH_LEN], RnicLrh *lrh)
{
    lrh->vl = in[0] >> 4;
    lrh->lver = in[0] & 0xf;
    lrh->sl = in[1] >> 4;
    lrh->lnh = in[1] & 0x3;
    lrh->dlid = in[2] << 8 | in[3];
    lrh->pkt_len = (in[4] & 0x7) << 8 | in[5];
    lrh->slid = in[6] << 8 | in[7];
}

/*
 * CRC-16, polynomial 0x100b (x^16 + x^12 + x^3 + x + 1), processed least
 * significant bit first like the ICRC, so the table holds the reflected
 * polynomial 0xd008.  Generated once; a 256-entry table keeps the VCRC,
 * computed over every packet each way, at a byte per step.
 */
static const uint16_t rnic_vcrc_table[256] = {
    0x0000, 0x1ba1, 0x3742, 0x2ce3, 0x6e84, 0x7525, 0x59c6, 0x4267,
    0xdd08, 0xc6a9, 0xea4a, 0xf1eb, 0xb38c, 0xa82d, 0x84ce, 0x9f6f,
    0x1a01, 0x01a0, 0x2d43, 0x36e2, 0x7485, 0x6f24, 0x43c7, 0x5866,
    0xc709, 0xdca8, 0xf04b, 0xebea, 0xa98d, 0xb22c, 0x9ecf, 0x856e,
    0x3402, 0x2fa3, 0x0340, 0x18e1, 0x5a86, 0x4127, 0x6dc4, 0x7665,
    0xe90a, 0xf2ab, 0xde48, 0xc5e9, 0x878e, 0x9c2f, 0xb0cc, 0xab6d,
    0x2e03, 0x35a2, 0x1941, 0x02e0, 0x4087, 0x5b26, 0x77c5, 0x6c64,
    0xf30b, 0xe8aa, 0xc449, 0xdfe8, 0x9d8f, 0x862e, 0xaacd, 0xb16c,
    0x6804, 0x73a5, 0x5f46, 0x44e7, 0x0680, 0x1d21, 0x31c2, 0x2a63,
    0xb50c, 0xaead, 0x824e, 0x99ef, 0xdb88, 0xc029, 0xecca, 0xf76b,
    0x7205, 0x69a4, 0x4547, 0x5ee6, 0x1c81, 0x0720, 0x2bc3, 0x3062,
    0xaf0d, 0xb4ac, 0x984f, 0x83ee, 0xc189, 0xda28, 0xf6cb, 0xed6a,
    0x5c06, 0x47a7, 0x6b44, 0x70e5, 0x3282, 0x2923, 0x05c0, 0x1e61,
    0x810e, 0x9aaf, 0xb64c, 0xaded, 0xef8a, 0xf42b, 0xd8c8, 0xc369,
    0x4607, 0x5da6, 0x7145, 0x6ae4, 0x2883, 0x3322, 0x1fc1, 0x0460,
    0x9b0f, 0x80ae, 0xac4d, 0xb7ec, 0xf58b, 0xee2a, 0xc2c9, 0xd968,
    0xd008, 0xcba9, 0xe74a, 0xfceb, 0xbe8c, 0xa52d, 0x89ce, 0x926f,
    0x0d00, 0x16a1, 0x3a42, 0x21e3, 0x6384, 0x7825, 0x54c6, 0x4f67,
    0xca09, 0xd1a8, 0xfd4b, 0xe6ea, 0xa48d, 0xbf2c, 0x93cf, 0x886e,
    0x1701, 0x0ca0, 0x2043, 0x3be2, 0x7985, 0x6224, 0x4ec7, 0x5566,
    0xe40a, 0xffab, 0xd348, 0xc8e9, 0x8a8e, 0x912f, 0xbdcc, 0xa66d,
    0x3902, 0x22a3, 0x0e40, 0x15e1, 0x5786, 0x4c27, 0x60c4, 0x7b65,
    0xfe0b, 0xe5aa, 0xc949, 0xd2e8, 0x908f, 0x8b2e, 0xa7cd, 0xbc6c,
    0x2303, 0x38a2, 0x1441, 0x0fe0, 0x4d87, 0x5626, 0x7ac5, 0x6164,
    0xb80c, 0xa3ad, 0x8f4e, 0x94ef, 0xd688, 0xcd29, 0xe1ca, 0xfa6b,
    0x6504, 0x7ea5, 0x5246, 0x49e7, 0x0b80, 0x1021, 0x3cc2, 0x2763,
    0xa20d, 0xb9ac, 0x954f, 0x8eee, 0xcc89, 0xd728, 0xfbcb, 0xe06a,
    0x7f05, 0x64a4, 0x4847, 0x53e6, 0x1181, 0x0a20, 0x26c3, 0x3d62,
    0x8c0e, 0x97af, 0xbb4c, 0xa0ed, 0xe28a, 0xf92b, 0xd5c8, 0xce69,
    0x5106, 0x4aa7, 0x6644, 0x7de5, 0x3f82, 0x2423, 0x08c0, 0x1361,
    0x960f, 0x8dae, 0xa14d, 0xbaec, 0xf88b, 0xe32a, 0xcfc9, 0xd468,
    0x4b07, 0x50a6, 0x7c45, 0x67e4, 0x2583, 0x3e22, 0x12c1, 0x0960,
};

uint16_t rnic_vcrc(const uint8_t *lrh, size_t len)
{
    uint16_t crc = 0xffff;
    size_t i;

    for (i = 0; i < len; i++) {
        crc = (crc >> 8) ^ rnic_vcrc_table[(crc ^ lrh[i]) & 0xff];
    }
    return crc ^ 0xffff;
}

/* GRH fields a router may rewrite: traffic class, flow label, hop limit. */
static void rnic_ib_mask_grh(uint8_t *grh)
{
    grh[0] |= 0x0f;
    grh[1] = grh[2] = grh[3] = 0xff;
    grh[7] = 0xff;
}

static const uint8_t rnic_ib_lrh_ones[RNIC_LRH_LEN] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
};

uint32_t rnic_ib_icrc(const uint8_t *lrh, size_t len)
{
    uint8_t masked[RNIC_LRH_LEN + IB_GRH_LEN + IB_BTH_LEN];
    bool global = (lrh[1] & 0x3) == RNIC_LNH_IBA_GLOBAL;
    size_t mlen = RNIC_LRH_LEN + (global ? IB_GRH_LEN : 0) + IB_BTH_LEN;
    uint32_t crc;

    if (len < mlen) {
        return 0;
    }
    memcpy(masked, lrh, mlen);
    if (global) {
        /* A router rewrites the whole LRH: all ones, as in RoCE v1. */
        memcpy(masked, rnic_ib_lrh_ones, RNIC_LRH_LEN);
        rnic_ib_mask_grh(masked + RNIC_LRH_LEN);
    } else {
        masked[0] |= 0xf0;              /* VL: a switch may change it */
    }
    masked[mlen - IB_BTH_LEN + IB_BTH_RESV8A] = 0xff;

    crc = libdeflate_crc32(0, masked, mlen);
    return libdeflate_crc32(crc, lrh + mlen, len - mlen);
}

static bool rnic_lnh_is_iba(uint8_t lnh)
{
    return lnh == RNIC_LNH_IBA_LOCAL || lnh == RNIC_LNH_IBA_GLOBAL;
}

static uint32_t rnic_ib_ld32le(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void rnic_ib_st32le(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

RnicIbErr rnic_ib_check(const uint8_t *pkt, size_t len, RnicLrh *lrh)
{
    RnicLrh l;
    size_t body, bth;

    if (len < RNIC_LRH_LEN + RNIC_VCRC_LEN) {
        return RNIC_IB_ERR_SHORT;
    }
    rnic_lrh_parse(pkt, &l);
    if (l.lver != RNIC_LRH_LVER) {
        return RNIC_IB_ERR_LVER;
    }
    body = len - RNIC_VCRC_LEN;
    if ((size_t)l.pkt_len * 4 != body) {
        return RNIC_IB_ERR_LEN;
    }
    /* The VCRC is stored like the ICRC: least significant byte first. */
    if (rnic_vcrc(pkt, body) != (pkt[body] | pkt[body + 1] << 8)) {
        return RNIC_IB_ERR_VCRC;
    }
    if (!rnic_lnh_is_iba(l.lnh)) {
        if (l.vl == RNIC_VL_SMP) {
            return RNIC_IB_ERR_VL15;
        }
        *lrh = l;
        return RNIC_IB_OK;
    }
    bth = RNIC_LRH_LEN + (l.lnh == RNIC_LNH_IBA_GLOBAL ? IB_GRH_LEN : 0);
    if (body < bth + IB_BTH_LEN + IB_ICRC_LEN) {
        return RNIC_IB_ERR_SHORT;
    }
    if (rnic_ib_icrc(pkt, body - IB_ICRC_LEN) !=
        rnic_ib_ld32le(pkt + body - IB_ICRC_LEN)) {
        return RNIC_IB_ERR_ICRC;
    }
    /* VL15 carries subnet management and nothing else: QP0 only. */
    if (l.vl == RNIC_VL_SMP &&
        (pkt[bth + IB_BTH_DQPN] | pkt[bth + IB_BTH_DQPN + 1] |
         pkt[bth + IB_BTH_DQPN + 2])) {
        return RNIC_IB_ERR_VL15;
    }
    *lrh = l;
    return RNIC_IB_OK;
}

size_t rnic_ib_frame_pkt_len(const uint8_t *frame, size_t len,
                             size_t pkt_off)
{
    size_t want;

    if (len < pkt_off + RNIC_LRH_LEN + RNIC_VCRC_LEN) {
        return 0;
    }
    want = ((frame[pkt_off + 4] & 0x7) << 8 | frame[pkt_off + 5]) * 4 +
           RNIC_VCRC_LEN;
    if (pkt_off + want == len ||
        (pkt_off + want < len && len <= RNIC_IB_ETH_MIN_FRAME)) {
        return want;
    }
    return 0;
}

int rnic_ib_seal(uint8_t *pkt, size_t hdr_payload, size_t size)
{
    bool iba = rnic_lnh_is_iba(pkt[1] & 0x3);
    size_t body = hdr_payload + (iba ? IB_ICRC_LEN : 0);
    uint16_t vcrc;

    if ((hdr_payload & 3) || hdr_payload < RNIC_LRH_LEN ||
        body / 4 > RNIC_LRH_PKTLEN_MAX || body + RNIC_VCRC_LEN > size) {
        return -1;
    }
    pkt[4] = (pkt[4] & ~0x7) | ((body / 4) >> 8);
    pkt[5] = body / 4;
    if (iba) {
        rnic_ib_st32le(pkt + hdr_payload, rnic_ib_icrc(pkt, hdr_payload));
    }
    vcrc = rnic_vcrc(pkt, body);
    pkt[body] = vcrc;
    pkt[body + 1] = vcrc >> 8;
    return body + RNIC_VCRC_LEN;
}

void rnic_ib_reseal_vcrc(uint8_t *pkt, size_t len)
{
    uint16_t vcrc;

    if (len < RNIC_LRH_LEN + RNIC_VCRC_LEN) {
        return;
    }
    vcrc = rnic_vcrc(pkt, len - RNIC_VCRC_LEN);
    pkt[len - 2] = vcrc;
    pkt[len - 1] = vcrc >> 8;
}
