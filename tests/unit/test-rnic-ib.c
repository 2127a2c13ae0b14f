/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the InfiniBand link layer (hw/rnic/rnic-ib.c): the LRH,
 * the VCRC and the ICRC of local and global packets, sealing and the
 * checks a receiver makes.
 *
 * The references here are bit-at-a-time CRCs written from the
 * polynomials, not the table and library code under test.  The global
 * ICRC is also pinned to the RoCE v1 vector of test-rnic-wire.c: a
 * global IB packet and a RoCE v1 frame carrying the same GRH, BTH and
 * payload must have the same ICRC, since RoCE v1 is IB without its LRH.
 */

#include "qemu/osdep.h"
#include "rnic-ib.h"
#include "rnic-wire-test-util.h"

#define BUF_SIZE 8192

/* Bit-serial CRC-16 of IBA's VCRC: x^16+x^12+x^3+x+1, LSB first. */
static uint16_t ref_vcrc(const uint8_t *p, size_t len)
{
    uint16_t crc = 0xffff;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        for (b = 0; b < 8; b++) {
            unsigned in = (p[i] >> b) & 1;
            unsigned top = crc & 1;

            crc >>= 1;
            if (top ^ in) {
                /* 0x100b, bit-reversed: bits 15, 14, 12 and 3. */
                crc ^= 0xd008;
            }
        }
    }
    return ~crc;
}

/* Bit-serial ICRC of a local (LNH = 2) packet, from the masking rules. */
static uint32_t ref_icrc_local(const uint8_t *pkt, size_t len)
{
    uint8_t m[8 + 12];

    memcpy(m, pkt, sizeof(m));
    m[0] |= 0xf0;           /* LRH.VL */
    m[8 + 4] = 0xff;        /* BTH.resv8a */
    return ~ref_crc32_raw(ref_crc32_raw(0xffffffffu, m, sizeof(m)),
                          pkt + sizeof(m), len - sizeof(m));
}

static void fill(uint8_t *p, size_t len, uint64_t *seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = test_rand(seed);
    }
}

/* LRH + BTH (UD SEND_ONLY) + DETH + payload, sealed; returns its length. */
static int local_pkt(uint8_t *buf, uint16_t dlid, uint16_t slid, uint8_t vl,
                     uint32_t dqpn, size_t payload, uint64_t *seed)
{
    RnicLrh lrh = {
        .vl = vl, .sl = 3, .lnh = RNIC_LNH_IBA_LOCAL,
        .dlid = dlid, .slid = slid,
    };
    uint8_t *bth = buf + RNIC_LRH_LEN;
    size_t pad = (4 - (payload & 3)) & 3;

    rnic_lrh_build(&lrh, buf);
    memset(bth, 0, 12 + 8);
    bth[0] = 0x64;                          /* UD SEND_ONLY */
    bth[1] = pad << 4;
    bth[2] = 0xff;                          /* P_Key 0xffff */
    bth[3] = 0xff;
    bth[5] = dqpn >> 16;
    bth[6] = dqpn >> 8;
    bth[7] = dqpn;
    bth[11] = 0x2a;                         /* PSN */
    fill(bth + 12, 8 + payload, seed);      /* DETH and payload */
    memset(bth + 12 + 8 + payload, 0, pad);
    return rnic_ib_seal(buf, RNIC_LRH_LEN + 12 + 8 + payload + pad, BUF_SIZE);
}

/* ---- LRH ---- */

static void test_lrh(void)
{
    /* VL 15, LVer 0, SL 0, LNH 2, DLID 0x0012, PktLen 0x43, SLID 0xffff */
    static const uint8_t vec[8] = {
        0xf0, 0x02, 0x00, 0x12, 0x00, 0x43, 0xff, 0xff,
    };
    uint64_t seed = 7;
    RnicLrh l, m;
    uint8_t b[8];
    int n;

    rnic_lrh_parse(vec, &l);
    CHECK_EQ(l.vl, 15);
    CHECK_EQ(l.lver, 0);
    CHECK_EQ(l.sl, 0);
    CHECK_EQ(l.lnh, RNIC_LNH_IBA_LOCAL);
    CHECK_EQ(l.dlid, 0x12);
    CHECK_EQ(l.pkt_len, 0x43);
    CHECK_EQ(l.slid, RNIC_LID_PERMISSIVE);
    rnic_lrh_build(&l, b);
    CHECK(!memcmp(b, vec, sizeof(b)));

    /* Every field keeps its width; reserved bits are written as zero. */
    for (n = 0; n < 1000; n++) {
        uint64_t r = test_rand(&seed);

        l.vl = r & 0xf;
        l.lver = (r >> 4) & 0xf;
        l.sl = (r >> 8) & 0xf;
        l.lnh = (r >> 12) & 0x3;
        l.dlid = r >> 16;
        l.pkt_len = (r >> 32) & 0x7ff;
        l.slid = r >> 48;
        rnic_lrh_build(&l, b);
        CHECK_EQ(b[1] & 0x0c, 0);
        CHECK_EQ(b[4] & 0xf8, 0);
        rnic_lrh_parse(b, &m);
        CHECK(!memcmp(&l, &m, sizeof(l)));
    }
    CHECK(rnic_lid_is_mcast(0xc000));
    CHECK(rnic_lid_is_mcast(0xfffe));
    CHECK(!rnic_lid_is_mcast(0xbfff));
    CHECK(!rnic_lid_is_mcast(RNIC_LID_PERMISSIVE));
}

/* ---- VCRC ---- */

static void test_vcrc(void)
{
    static const uint8_t zeros[16];
    uint8_t buf[BUF_SIZE];
    uint64_t seed = 11;
    size_t len;
    int n;

    memset(buf, 0, sizeof(buf));
    CHECK_EQ(rnic_vcrc(buf, 0), 0);
    /*
     * The check value of this CRC (0x100b reflected, 0xffff in and out),
     * as the table-driven VCRC of a packet capture card computes it.
     */
    CHECK_EQ(rnic_vcrc((const uint8_t *)"123456789", 9), 0x0a3d);
    CHECK_EQ(rnic_vcrc(zeros, sizeof(zeros)), ref_vcrc(zeros, sizeof(zeros)));
    for (n = 0; n < 300; n++) {
        len = test_rand(&seed) % 4200;
        fill(buf, len, &seed);
        CHECK_EQ(rnic_vcrc(buf, len), ref_vcrc(buf, len));
    }
    /* A single flipped bit anywhere changes it. */
    fill(buf, 64, &seed);
    for (n = 0; n < 64 * 8; n++) {
        uint16_t before = rnic_vcrc(buf, 64);

        buf[n / 8] ^= 1 << (n % 8);
        CHECK(rnic_vcrc(buf, 64) != before);
        buf[n / 8] ^= 1 << (n % 8);
    }
}

/* ---- ICRC of local packets: a LID-routed packet without a GRH ---- */

static void test_icrc_local(void)
{
    uint8_t buf[BUF_SIZE];
    uint64_t seed = 13;
    RnicLrh l;
    int len, n;

    for (n = 0; n < 200; n++) {
        size_t payload = test_rand(&seed) % 4097;

        len = local_pkt(buf, 0x10 + n, 0x20, n & 7, 0x11, payload, &seed);
        CHECK(len > 0);
        CHECK_EQ(len % 4, 2);
        CHECK_EQ(rnic_ld32le(buf + len - 6), ref_icrc_local(buf, len - 6));
        CHECK_EQ(buf[len - 2] | buf[len - 1] << 8, ref_vcrc(buf, len - 2));
        CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
        CHECK_EQ(l.dlid, 0x10 + n);
        CHECK_EQ(l.pkt_len * 4, len - 2);
    }

    len = local_pkt(buf, 0x10, 0x20, 0, 0x11, 100, &seed);
    /* A switch may change the VL: only the VCRC is redone. */
    buf[0] = (buf[0] & 0x0f) | 0x70;
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_VCRC);
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    CHECK_EQ(l.vl, 7);
    /* So may it touch BTH.resv8a (FECN/BECN). */
    buf[RNIC_LRH_LEN + 4] ^= 0xc0;
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    /* Nothing else: the rest of the LRH is invariant in a subnet. */
    buf[3] ^= 1;                                /* DLID */
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_ICRC);
    buf[3] ^= 1;
    buf[1] ^= 0x10;                             /* SL */
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_ICRC);
    buf[1] ^= 0x10;
    buf[40] ^= 0x80;                            /* payload */
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_ICRC);
}

/* ---- ICRC of global packets, pinned to the RoCE v1 vector ---- */

/*
 * GRH, BTH, payload "hello", pad and ICRC of the RoCE v1 frame in
 * test-rnic-wire.c (its bytes 14 on).
 */
static const uint8_t v1_tail[] = {
    0x61, 0x23, 0x45, 0x67, 0x00, 0x18, 0x1b, 0x40,
    0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
    0x04, 0xb0, 0xff, 0xff, 0x40, 0x00, 0x00, 0x11,
    0x80, 0x00, 0x01, 0x23, 0x68, 0x65, 0x6c, 0x6c,
    0x6f, 0x00, 0x00, 0x00, 0x95, 0xa1, 0xea, 0xb4,
};

static void test_icrc_global(void)
{
    RnicLrh lrh = {
        .vl = 0, .sl = 0, .lnh = RNIC_LNH_IBA_GLOBAL,
        .dlid = 0x0004, .slid = 0x0003,
    };
    size_t body = RNIC_LRH_LEN + sizeof(v1_tail) - 4;
    uint8_t buf[128];
    RnicLrh l;
    int len;

    rnic_lrh_build(&lrh, buf);
    memcpy(buf + RNIC_LRH_LEN, v1_tail, sizeof(v1_tail) - 4);
    len = rnic_ib_seal(buf, body, sizeof(buf));
    CHECK_EQ(len, body + 4 + 2);
    CHECK(!memcmp(buf + body, v1_tail + sizeof(v1_tail) - 4, 4));
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    CHECK_EQ(l.lnh, RNIC_LNH_IBA_GLOBAL);

    /* Routers rewrite the whole LRH and the GRH's TClass/flow/hop limit. */
    buf[0] = 0x50;
    buf[1] = 0xf3;
    buf[2] ^= 0x12;
    buf[7] ^= 0x34;
    buf[RNIC_LRH_LEN + 1] ^= 0xff;
    buf[RNIC_LRH_LEN + 7] = 0x01;
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    /* The GIDs are invariant. */
    buf[RNIC_LRH_LEN + 39] ^= 1;
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_ICRC);
}

/* ---- what a receiver refuses ---- */

static void test_check_errors(void)
{
    uint8_t buf[BUF_SIZE];
    uint64_t seed = 17;
    RnicLrh l;
    int len;

    memset(buf, 0, sizeof(buf));
    CHECK_EQ(rnic_ib_check(buf, 9, &l), RNIC_IB_ERR_SHORT);

    len = local_pkt(buf, 1, 2, 0, 0x11, 64, &seed);
    CHECK_EQ(rnic_ib_check(buf, len - 4, &l), RNIC_IB_ERR_LEN);
    CHECK_EQ(rnic_ib_check(buf, len + 4, &l), RNIC_IB_ERR_LEN);
    buf[len - 1] ^= 0x01;
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_VCRC);
    buf[len - 1] ^= 0x01;
    buf[len - 6] ^= 0x01;                       /* the ICRC itself */
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_ICRC);

    len = local_pkt(buf, 1, 2, 0, 0x11, 64, &seed);
    buf[0] |= 0x01;                             /* LVer 1 */
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_LVER);

    /* VL15 is for QP0 only. */
    len = local_pkt(buf, 1, 2, RNIC_VL_SMP, 0, 256, &seed);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    len = local_pkt(buf, 1, 2, RNIC_VL_SMP, 1, 256, &seed);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_VL15);

    /* A raw packet has no ICRC; on VL15 it is refused. */
    memset(buf, 0, 16);
    buf[1] = RNIC_LNH_RAW;
    len = rnic_ib_seal(buf, 16, BUF_SIZE);
    CHECK_EQ(len, 18);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_OK);
    buf[0] = 0xf0;
    rnic_ib_reseal_vcrc(buf, len);
    CHECK_EQ(rnic_ib_check(buf, len, &l), RNIC_IB_ERR_VL15);

    CHECK(strcmp(rnic_ib_err_str(RNIC_IB_ERR_ICRC), "bad ICRC") == 0);
    CHECK(strcmp(rnic_ib_err_str(RNIC_IB_ERR__MAX), "unknown") == 0);
}

/* ---- sealing ---- */

static void test_seal(void)
{
    uint8_t buf[BUF_SIZE];
    RnicLrh l = { .lnh = RNIC_LNH_IBA_LOCAL, .dlid = 1, .slid = 2 };

    rnic_lrh_build(&l, buf);
    memset(buf + 8, 0, 12);
    CHECK_EQ(rnic_ib_seal(buf, 21, BUF_SIZE), -1);      /* not whole words */
    CHECK_EQ(rnic_ib_seal(buf, 4, BUF_SIZE), -1);       /* shorter than LRH */
    CHECK_EQ(rnic_ib_seal(buf, 20, 25), -1);            /* no room */
    CHECK_EQ(rnic_ib_seal(buf, 20, 26), 26);
    /* PktLen is 11 bits of words: 8188 bytes and the ICRC fit, no more. */
    CHECK_EQ(rnic_ib_seal(buf, 0x7ff * 4 - 4, BUF_SIZE), 0x7ff * 4 + 2);
    rnic_lrh_parse(buf, &l);
    CHECK_EQ(l.pkt_len, 0x7ff);
    CHECK_EQ(rnic_ib_seal(buf, 0x7ff * 4, BUF_SIZE + 8), -1);
}


/* ---- the codec's IB framing (rnic-wire.c) ---- */

static uint8_t ib_payload[4096];

/* An IB packet with every field set to something recognisable. */
static void ib_fill(RnicPkt *p, uint8_t opcode, bool grh, uint32_t plen)
{
    test_fill_pkt(p, opcode, 6, false, plen);
    p->ib = true;
    p->ib_grh = grh;
    p->ib_vl = 3;
    p->ib_sl = 5;
    p->ib_dlid = 0x0123;
    p->ib_slid = 0x0456;
    p->bth.resv6 = 0;
    memset(p->eth_dst, 0xff, 6);
}

static void ib_roundtrip(uint8_t opcode, bool grh, uint32_t plen)
{
    uint8_t buf[BUF_SIZE];
    RnicPkt p, q;
    RnicLrh l;
    int len;

    ib_fill(&p, opcode, grh, plen);
    len = rnic_wire_encode(&p, ib_payload, buf, sizeof(buf));
    CHECK_EQ(len, rnic_wire_frame_len(&p));
    CHECK_EQ(rnic_ld16be(buf + 12), RNIC_ETHERTYPE_IB);
    /* The link layer alone accepts it: LRH, PktLen, VCRC, ICRC. */
    CHECK_EQ(rnic_ib_check(buf + 14, len - 14, &l), RNIC_IB_OK);
    CHECK_EQ(l.lnh, grh ? RNIC_LNH_IBA_GLOBAL : RNIC_LNH_IBA_LOCAL);
    CHECK_EQ(rnic_ld32le(buf + len - 6), grh ?
             rnic_icrc_v1(buf + 14 + 8, len - 14 - 8 - 6) :
             ref_icrc_local(buf + 14, len - 14 - 6));

    CHECK_ERR(rnic_wire_parse(buf, len, &q), RNIC_WIRE_OK);
    CHECK(q.ib);
    CHECK_EQ(q.ib_grh, grh);
    CHECK(!q.roce_v1);
    CHECK_EQ(q.ib_vl, 3);
    CHECK_EQ(q.ib_sl, 5);
    CHECK_EQ(q.ib_dlid, 0x0123);
    CHECK_EQ(q.ib_slid, 0x0456);
    CHECK_EQ(q.bth.opcode, opcode);
    CHECK_EQ(q.bth.dqpn, p.bth.dqpn);
    CHECK_EQ(q.bth.psn, p.bth.psn);
    CHECK_EQ(q.bth.pad, (4 - (plen & 3)) & 3);
    CHECK_EQ(q.payload_len, plen);
    CHECK_EQ(q.frame_len, len);
    CHECK_EQ(q.bth_off, 14 + 8 + (grh ? 40 : 0));
    CHECK(!memcmp(buf + q.payload_off, ib_payload, plen));
    if (grh) {
        CHECK(!memcmp(q.ip_src, p.ip_src, 16));
        CHECK(!memcmp(q.ip_dst, p.ip_dst, 16));
        CHECK_EQ(q.flow_label, p.flow_label);
        CHECK_EQ(q.ttl, p.ttl);
        CHECK_EQ(q.tclass, p.tclass);
    }
    if (rnic_opcode_info(opcode)->flags & RNIC_HDR_DETH) {
        CHECK_EQ(q.deth.qkey, p.deth.qkey);
        CHECK_EQ(q.deth.src_qp, p.deth.src_qp);
    }
    if (rnic_opcode_info(opcode)->flags & RNIC_HDR_RETH) {
        CHECK_EQ(q.reth.va, p.reth.va);
        CHECK_EQ(q.reth.rkey, p.reth.rkey);
    }
}

static void test_codec(void)
{
    static const uint32_t plens[] = { 0, 1, 3, 4, 256, 4096 };
    unsigned opc, i, g;
    size_t k;

    for (k = 0; k < sizeof(ib_payload); k++) {
        ib_payload[k] = k * 13 + 1;
    }
    for (opc = 0; opc < 256; opc++) {
        const RnicOpcodeInfo *info = rnic_opcode_info(opc);

        if (!info) {
            continue;
        }
        for (g = 0; g < 2; g++) {
            for (i = 0; i < ARRAY_SIZE(plens); i++) {
                if (plens[i] && !(info->flags & RNIC_OPF_PAYLOAD)) {
                    break;
                }
                ib_roundtrip(opc, g, plens[i]);
            }
        }
    }
}

static void test_codec_errors(void)
{
    uint8_t buf[BUF_SIZE], f[BUF_SIZE];
    RnicPkt p, q;
    int len;

    /* An ACK is shorter than Ethernet's minimum: padding is accepted. */
    ib_fill(&p, RNIC_OPC_RC_ACKNOWLEDGE, false, 0);
    len = rnic_wire_encode(&p, NULL, buf, sizeof(buf));
    CHECK(len < RNIC_IB_ETH_MIN_FRAME);
    memset(buf + len, 0, RNIC_IB_ETH_MIN_FRAME - len);
    CHECK_ERR(rnic_wire_parse(buf, RNIC_IB_ETH_MIN_FRAME, &q), RNIC_WIRE_OK);
    CHECK_EQ(q.frame_len, len);
    /* ...but not on a frame longer than that minimum. */
    ib_fill(&p, RNIC_OPC_RC_SEND_ONLY, false, 100);
    len = rnic_wire_encode(&p, ib_payload, buf, sizeof(buf));
    CHECK_ERR(rnic_wire_parse(buf, len + 4, &q), RNIC_WIRE_E_IP_LEN);
    CHECK_ERR(rnic_wire_parse(buf, len - 4, &q), RNIC_WIRE_E_IP_LEN);
    CHECK_ERR(rnic_wire_parse(buf, 20, &q), RNIC_WIRE_E_TOO_SHORT);

    /* Each link-layer check has its own reason. */
    memcpy(f, buf, len);
    f[len - 1] ^= 1;
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_VCRC);
    memcpy(f, buf, len);
    f[len - 3] ^= 1;
    rnic_ib_reseal_vcrc(f + 14, len - 14);
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_ICRC);
    memcpy(f, buf, len);
    f[14] |= 0x01;                                  /* LVer 1 */
    rnic_ib_reseal_vcrc(f + 14, len - 14);
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_IB_LRH);
    memcpy(f, buf, len);
    f[15] &= ~0x03;                                 /* LNH raw */
    rnic_ib_reseal_vcrc(f + 14, len - 14);
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_IB_LRH);
    p.ib_vl = RNIC_VL_SMP;                          /* VL15, QP 0xabcdef */
    len = rnic_wire_encode(&p, ib_payload, f, sizeof(f));
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_VL15);

    /* A GRH whose next header is not the BTH. */
    ib_fill(&p, RNIC_OPC_UD_SEND_ONLY, true, 64);
    len = rnic_wire_encode(&p, ib_payload, f, sizeof(f));
    f[14 + 8 + 6] = 0x11;
    CHECK_EQ(rnic_ib_seal(f + 14, len - 14 - 6, sizeof(f) - 14), len - 14);
    CHECK_ERR(rnic_wire_parse(f, len, &q), RNIC_WIRE_E_NOT_ROCE);

    /* The builder: no VLAN on IB, and PktLen's 11 bits. */
    ib_fill(&p, RNIC_OPC_RC_SEND_ONLY, false, 16);
    p.has_vlan = true;
    CHECK_EQ(rnic_wire_frame_len(&p), -EINVAL);
    ib_fill(&p, RNIC_OPC_RC_SEND_ONLY, false, 0x7ff * 4);
    CHECK_EQ(rnic_wire_frame_len(&p), -EMSGSIZE);
    p.payload_len = 0x7ff * 4 - 8 - 12 - 4;
    CHECK_EQ(rnic_wire_frame_len(&p), 14 + 0x7ff * 4 + 2);
}

static const TestGroup groups[] = {
    { "lrh", test_lrh },
    { "vcrc", test_vcrc },
    { "icrc-local", test_icrc_local },
    { "icrc-global", test_icrc_global },
    { "check-errors", test_check_errors },
    { "seal", test_seal },
    { "codec", test_codec },
    { "codec-errors", test_codec_errors },
};

int main(int argc, char **argv)
{
    return test_main(argc, argv, groups, ARRAY_SIZE(groups));
}
