/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the emulated IB switch (contrib/rnic-ibswitch): its SMA
 * as an SM sees it, directed-route SMPs through it, LFT/MFT programming
 * and forwarding, the drops and their counters, and credit-based
 * backpressure that loses nothing.
 *
 * The test plays the subnet manager and the CAs: it builds frames with
 * the link layer (tested in test-rnic-ib.c) and reads the answers back.
 */

#include "qemu/osdep.h"
#include "rnic-ib.h"
#include "rnic-smp.h"
#include "ibswitch.h"
#include "rnic-wire-test-util.h"

#define ETH_HLEN    14
#define MAD_OFF     (ETH_HLEN + 8 + 12 + 8)
#define NPORTS      4
#define SM_PORT     1           /* the SM's CA hangs off port 1 */
#define SM_LID      2
#define SW_LID      1

static IbSwitch sw;

/* An IB frame: Ethernet header, LRH, BTH (UD SEND_ONLY), DETH, payload. */
static size_t frame(uint8_t *f, uint8_t vl, uint16_t dlid, uint16_t slid,
                    uint32_t dqpn, const uint8_t *payload, size_t plen)
{
    RnicLrh lrh = { .vl = vl, .lnh = RNIC_LNH_IBA_LOCAL,
                    .dlid = dlid, .slid = slid };
    uint8_t *bth = f + ETH_HLEN + 8;
    int n;

    memset(f, 0, ETH_HLEN + 8 + 12 + 8);
    memset(f, 0xff, 6);
    f[6] = 0x02;
    f[12] = RNIC_ETHERTYPE_IB >> 8;
    f[13] = RNIC_ETHERTYPE_IB & 0xff;
    rnic_lrh_build(&lrh, f + ETH_HLEN);
    bth[0] = 0x64;
    rnic_st16be(bth + 2, 0xffff);
    bth[5] = dqpn >> 16;
    bth[6] = dqpn >> 8;
    bth[7] = dqpn;
    memcpy(f + MAD_OFF, payload, plen);
    n = rnic_ib_seal(f + ETH_HLEN, 8 + 12 + 8 + plen, IBSW_FRAME_MAX);
    CHECK(n > 0);
    return ETH_HLEN + n;
}

/* A directed-route SMP as the SM's CA puts it on the wire. */
static size_t dr_smp(uint8_t *f, uint8_t method, uint16_t attr, uint32_t mod,
                     const uint8_t *path, unsigned hops, const uint8_t *data)
{
    uint8_t mad[RNIC_MAD_LEN] = { 0 };

    mad[RNIC_MAD_BASE_VERSION] = 1;
    mad[RNIC_MAD_MGMT_CLASS] = RNIC_MGMT_CLASS_SUBN_DR;
    mad[RNIC_MAD_CLASS_VERSION] = 1;
    mad[RNIC_MAD_METHOD] = method;
    /* The sending CA already moved the hop pointer to 1 (C14-9:1). */
    mad[RNIC_MAD_HOP_PTR] = 1;
    mad[RNIC_MAD_HOP_CNT] = hops;
    mad[RNIC_MAD_TID + 7] = 0x42;
    rnic_st16be(mad + RNIC_MAD_ATTR_ID, attr);
    rnic_st32be(mad + RNIC_MAD_ATTR_MOD, mod);
    rnic_st16be(mad + RNIC_SMP_DR_SLID, RNIC_LID_PERMISSIVE);
    rnic_st16be(mad + RNIC_SMP_DR_DLID, RNIC_LID_PERMISSIVE);
    memcpy(mad + RNIC_SMP_INITIAL_PATH, path, hops + 1);
    if (data) {
        memcpy(mad + RNIC_SMP_DATA, data, RNIC_SMP_DATA_LEN);
    }
    return frame(f, RNIC_VL_SMP, RNIC_LID_PERMISSIVE, RNIC_LID_PERMISSIVE, 0,
                 mad, sizeof(mad));
}

/* A LID-routed data packet of LEN payload bytes. */
static size_t data_pkt(uint8_t *f, uint16_t dlid, uint8_t tag)
{
    uint8_t p[64];

    memset(p, tag, sizeof(p));
    return frame(f, 0, dlid, SM_LID, 0x11, p, sizeof(p));
}

/* Take the one frame port PORT has to send; check its CRCs. */
static bool take(unsigned port, uint8_t *out, size_t *len)
{
    const IbswFrame *f = ibsw_peek(&sw, port);
    RnicLrh l;

    if (!f) {
        return false;
    }
    CHECK_EQ(rnic_ib_check(f->data + ETH_HLEN,
                           rnic_ib_frame_pkt_len(f->data, f->len, ETH_HLEN),
                           &l), RNIC_IB_OK);
    memcpy(out, f->data, f->len);
    *len = f->len;
    ibsw_pop(&sw, port);
    return true;
}

static unsigned queued(unsigned port)
{
    return sw.port[port].q_len;
}

static uint64_t total_drops(void)
{
    uint64_t n = 0;
    unsigned i, d;

    for (i = 1; i <= NPORTS; i++) {
        for (d = 0; d < IBSW_DROP__MAX; d++) {
            n += sw.port[i].c.drops[d];
        }
    }
    return n;
}

static void setup(unsigned credits)
{
    IbswConfig cfg = { .nports = NPORTS, .credits = credits,
                       .guid = 0x0011223344556677ull };
    unsigned i;

    ibsw_cleanup(&sw);
    snprintf(cfg.desc, sizeof(cfg.desc), "test switch");
    CHECK_EQ(ibsw_init(&sw, &cfg), 0);
    for (i = 1; i <= NPORTS; i++) {
        ibsw_link(&sw, i, true);
    }
}

/* Get or Set one attribute of the switch over one hop; returns status. */
static uint16_t sma(uint8_t method, uint16_t attr, uint32_t mod, uint8_t *data)
{
    static const uint8_t path[2] = { 0, SM_PORT };
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    size_t len, rlen;
    uint8_t *mad = r + MAD_OFF;

    len = dr_smp(f, method, attr, mod, path, 1, data);
    CHECK_EQ(ibsw_input(&sw, SM_PORT, f, len), IBSW_TAKEN);
    if (!take(SM_PORT, r, &rlen)) {
        CHECK(!"the SMA answered");
        return 0xffff;
    }
    CHECK_EQ(rlen, len);
    CHECK_EQ(mad[RNIC_MAD_METHOD], 0x81);
    CHECK(rnic_ld16be(mad + RNIC_MAD_STATUS) & RNIC_SMP_DIRECTION);
    CHECK_EQ(mad[RNIC_MAD_HOP_PTR], 1);
    CHECK_EQ(mad[RNIC_SMP_RETURN_PATH + 1], SM_PORT);
    CHECK_EQ(mad[RNIC_MAD_TID + 7], 0x42);
    CHECK_EQ(rnic_ld16be(mad + RNIC_MAD_ATTR_ID), attr);
    if (data) {
        memcpy(data, mad + RNIC_SMP_DATA, RNIC_SMP_DATA_LEN);
    }
    return rnic_ld16be(mad + RNIC_MAD_STATUS) & ~RNIC_SMP_DIRECTION;
}

static void set_port_state(unsigned port, uint8_t state)
{
    uint8_t d[64] = { 0 };

    d[RNIC_PI_SPEED_SUP_STATE] = state;
    d[RNIC_PI_NMTU_SMSL] = port ? 5 << 4 : 0;
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PORT_INFO, port, d), 0);
    d[RNIC_PI_SPEED_SUP_STATE] = (d[RNIC_PI_SPEED_SUP_STATE] & 0xf0) | state;
    d[RNIC_PI_PHYS_DOWNDEF] &= 0x0f;
    d[RNIC_PI_NMTU_SMSL] = (d[RNIC_PI_NMTU_SMSL] & 0x0f) | (port ? 5 << 4 : 0);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PORT_INFO, port, d), 0);
    CHECK_EQ(d[RNIC_PI_SPEED_SUP_STATE] & 0xf, state);
}

/* What an SM does on a new fabric: LIDs, LFT, ports ACTIVE. */
static void program(void)
{
    uint8_t d[64] = { 0 };
    unsigned i;

    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PORT_INFO, 0, d), 0);
    rnic_st16be(d + RNIC_PI_LID, SW_LID);
    rnic_st16be(d + RNIC_PI_SM_LID, SM_LID);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PORT_INFO, 0, d), 0);
    CHECK_EQ(rnic_ld16be(d + RNIC_PI_LID), SW_LID);

    memset(d, 0, sizeof(d));
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_SWITCH_INFO, 0, d), 0);
    rnic_st16be(d + RNIC_SI_LFT_TOP, 5);
    rnic_st16be(d + RNIC_SI_MFT_TOP, 0xc000);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_SWITCH_INFO, 0, d), 0);
    CHECK_EQ(rnic_ld16be(d + RNIC_SI_LFT_TOP), 5);

    /* LID 1 is the switch, 2 the SM's CA on port 1, 3 on 2, 4 and 5 on 3. */
    memset(d, IBSW_PORT_NONE, sizeof(d));
    d[1] = 0;
    d[2] = 1;
    d[3] = 2;
    d[4] = 3;
    d[5] = 3;
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_LFT, 0, d), 0);
    CHECK_EQ(d[4], 3);

    for (i = 1; i <= 3; i++) {
        set_port_state(i, IBSW_PS_ARMED);
        set_port_state(i, IBSW_PS_ACTIVE);
    }
    /* Base port 0 is ACTIVE from the start and stays so. */
    CHECK_EQ(sw.port[0].state, IBSW_PS_ACTIVE);
}

/* ---- the SMA ---- */

static void test_sma(void)
{
    uint8_t d[64] = { 0 };
    static const char desc[] = "test switch";

    setup(8);
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_INFO, 0, d), 0);
    CHECK_EQ(d[RNIC_NI_NODE_TYPE], RNIC_NODE_TYPE_SWITCH);
    CHECK_EQ(d[RNIC_NI_NUM_PORTS], NPORTS);
    CHECK_EQ(rnic_ld64be(d + RNIC_NI_NODE_GUID), 0x0011223344556677ull);
    CHECK_EQ(rnic_ld64be(d + RNIC_NI_PORT_GUID), 0x0011223344556677ull);
    CHECK_EQ(d[RNIC_NI_LOCAL_PORT], SM_PORT);

    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_DESC, 0, d), 0);
    CHECK(!memcmp(d, desc, sizeof(desc)));

    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_SWITCH_INFO, 0, d), 0);
    CHECK_EQ(rnic_ld16be(d + RNIC_SI_LFT_CAP), IBSW_LFT_CAP);
    CHECK_EQ(rnic_ld16be(d + RNIC_SI_MFT_CAP), IBSW_MFT_CAP);

    /* A fresh port: linked, INIT, waiting for the SM. */
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PORT_INFO, 3, d), 0);
    /* The port the SMP came in by, not the one it asks about. */
    CHECK_EQ(d[RNIC_PI_LOCAL_PORT], SM_PORT);
    CHECK_EQ(d[RNIC_PI_SPEED_SUP_STATE] & 0xf, IBSW_PS_INIT);
    CHECK_EQ(d[RNIC_PI_PHYS_DOWNDEF] >> 4, IBSW_PHYS_LINKUP);

    /* INIT -> ACTIVE skips ARMED: refused, nothing changes. */
    d[RNIC_PI_SPEED_SUP_STATE] = IBSW_PS_ACTIVE;
    d[RNIC_PI_NMTU_SMSL] = 5 << 4;
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PORT_INFO, 3, d),
             RNIC_MAD_STATUS_BAD_VALUE);
    CHECK_EQ(sw.port[3].state, IBSW_PS_INIT);

    /* Bad modifiers, attributes and methods each get their status. */
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PORT_INFO, NPORTS + 1, d),
             RNIC_MAD_STATUS_BAD_VALUE);
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_SM_INFO, 0, d),
             RNIC_MAD_STATUS_BAD_ATTR);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_NODE_INFO, 0, d),
             RNIC_MAD_STATUS_BAD_ATTR);
    CHECK_EQ(sma(0x03, RNIC_SMP_ATTR_NODE_INFO, 0, d),
             RNIC_MAD_STATUS_BAD_METHOD);
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_LFT,
                 IBSW_LFT_CAP / 64, d), RNIC_MAD_STATUS_BAD_VALUE);
    CHECK(sw.sma_errors >= 6);

    /* P_Key table of an external port: block 0 only. */
    memset(d, 0, sizeof(d));
    rnic_st16be(d, 0xffff);
    rnic_st16be(d + 2, 0x8001);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PKEY_TABLE, 2 << 16, d),
             0);
    CHECK_EQ(rnic_ld16be(d + 2), 0x8001);
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PKEY_TABLE, 2 << 16 | 1,
                 d), RNIC_MAD_STATUS_BAD_VALUE);
    CHECK_EQ(total_drops(), 0);
}

/* ---- directed routes through the switch ---- */

static void test_dr_through(void)
{
    static const uint8_t path[3] = { 0, SM_PORT, 3 };
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    uint8_t *mad;
    size_t len, rlen;
    uint8_t d[64] = { 0 };

    setup(8);
    /* Out: SM -> switch port 1 -> out of port 3 to the CA behind it. */
    len = dr_smp(f, RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_INFO, 0, path, 2,
                 d);
    CHECK_EQ(ibsw_input(&sw, SM_PORT, f, len), IBSW_TAKEN);
    CHECK_EQ(queued(SM_PORT), 0);
    CHECK(take(3, r, &rlen));
    mad = r + MAD_OFF;
    CHECK_EQ(mad[RNIC_MAD_HOP_PTR], 2);
    CHECK_EQ(mad[RNIC_SMP_RETURN_PATH + 1], SM_PORT);
    CHECK(!(rnic_ld16be(mad + RNIC_MAD_STATUS) & RNIC_SMP_DIRECTION));

    /* Back: the CA answers as its kernel would (hop pointer 3 -> 2). */
    mad[RNIC_MAD_METHOD] = 0x81;
    rnic_st16be(mad + RNIC_MAD_STATUS, RNIC_SMP_DIRECTION);
    mad[RNIC_MAD_HOP_PTR] = 2;
    mad[RNIC_SMP_RETURN_PATH + 2] = 1;
    CHECK(rnic_ib_seal(r + ETH_HLEN, rlen - ETH_HLEN - 6, IBSW_FRAME_MAX) > 0);
    CHECK_EQ(ibsw_input(&sw, 3, r, rlen), IBSW_TAKEN);
    CHECK(take(SM_PORT, f, &len));
    CHECK_EQ(f[MAD_OFF + RNIC_MAD_HOP_PTR], 1);
    CHECK_EQ(f[MAD_OFF + RNIC_MAD_METHOD], 0x81);

    /* A path out of a port with no peer goes nowhere, and is counted. */
    ibsw_link(&sw, 4, false);
    {
        static const uint8_t p4[3] = { 0, SM_PORT, 4 };

        len = dr_smp(f, RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_INFO, 0, p4,
                     2, d);
    }
    CHECK_EQ(ibsw_input(&sw, SM_PORT, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[SM_PORT].c.drops[IBSW_DROP_SMP], 1);
    /* A hop pointer the sender did not advance is refused. */
    len = dr_smp(f, RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_INFO, 0, path, 2,
                 d);
    f[MAD_OFF + RNIC_MAD_HOP_PTR] = 0;
    rnic_ib_seal(f + ETH_HLEN, len - ETH_HLEN - 6, IBSW_FRAME_MAX);
    CHECK_EQ(ibsw_input(&sw, SM_PORT, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[SM_PORT].c.drops[IBSW_DROP_SMP], 2);
    CHECK_EQ(queued(3), 0);
}

/* ---- LFT forwarding and its drops ---- */

static void test_lft(void)
{
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    size_t len, rlen;

    setup(8);
    /* Before the SM: data is dropped at the INIT port. */
    len = data_pkt(f, 4, 0xa1);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_PORT_STATE], 1);

    program();
    len = data_pkt(f, 4, 0xa2);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK(take(3, r, &rlen));
    CHECK_EQ(rlen, len);
    CHECK(!memcmp(r, f, len));          /* forwarded untouched */
    len = data_pkt(f, 3, 0xa3);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK(take(2, r, &rlen));

    /* What the device's codec builds, padded ACKs included, goes through. */
    {
        RnicPkt p, q;
        int n;

        memset(&p, 0, sizeof(p));
        memset(p.eth_dst, 0xff, 6);
        p.ib = true;
        p.ib_dlid = 4;
        p.ib_slid = SM_LID;
        p.bth.opcode = RNIC_OPC_RC_ACKNOWLEDGE;
        p.bth.pkey = 0xffff;
        n = rnic_wire_encode(&p, NULL, f, sizeof(f));
        CHECK(n > 0 && n < RNIC_IB_ETH_MIN_FRAME);
        memset(f + n, 0, RNIC_IB_ETH_MIN_FRAME - n);
        CHECK_EQ(ibsw_input(&sw, 1, f, RNIC_IB_ETH_MIN_FRAME), IBSW_TAKEN);
        CHECK(take(3, r, &rlen));
        CHECK_EQ(rlen, RNIC_IB_ETH_MIN_FRAME);
        CHECK_ERR(rnic_wire_parse(r, rlen, &q), RNIC_WIRE_OK);
        CHECK_EQ(q.ib_dlid, 4);
    }

    /* No entry, beyond LinearFDBTop, multicast without MFT entry. */
    len = data_pkt(f, 6, 0xa4);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    len = data_pkt(f, 0x200, 0xa5);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    len = data_pkt(f, 0xc001, 0xa6);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_UNKNOWN_DLID], 3);
    /* Back out of its own port. */
    len = data_pkt(f, 2, 0xa7);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_LOOP], 1);
    /* Port 4 was never brought up by the SM. */
    sw.lft[4] = 4;
    len = data_pkt(f, 4, 0xa8);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_OUT_STATE], 1);
    /* Data for the switch itself: no GSI agent. */
    len = data_pkt(f, SW_LID, 0xa9);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_NO_AGENT], 1);
    /* Broken frames. */
    len = data_pkt(f, 3, 0xaa);
    f[len - 1] ^= 1;
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    f[len - 1] ^= 1;
    f[12] = 0x08;
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[1].c.drops[IBSW_DROP_MALFORMED], 2);
    CHECK_EQ(queued(2) + queued(3) + queued(4), 0);

    /* LID-routed SMP to the switch's LID, answered back by the LFT. */
    {
        uint8_t mad[RNIC_MAD_LEN] = { 1, RNIC_MGMT_CLASS_SUBN_LID, 1,
                                      RNIC_MAD_METHOD_GET };

        rnic_st16be(mad + RNIC_MAD_ATTR_ID, RNIC_SMP_ATTR_NODE_INFO);
        len = frame(f, RNIC_VL_SMP, SW_LID, 3, 0, mad, sizeof(mad));
        CHECK_EQ(ibsw_input(&sw, 2, f, len), IBSW_TAKEN);
        CHECK(take(2, r, &rlen));
        CHECK_EQ(rnic_ld16be(r + ETH_HLEN + 2), 3);            /* DLID */
        CHECK_EQ(rnic_ld16be(r + ETH_HLEN + 6), SW_LID);       /* SLID */
        CHECK_EQ(r[MAD_OFF + RNIC_MAD_METHOD], 0x81);
        CHECK_EQ(r[MAD_OFF + RNIC_SMP_DATA + RNIC_NI_LOCAL_PORT], 2);
    }
}

/* ---- MFT ---- */

static void test_mft(void)
{
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    uint8_t d[64] = { 0 };
    size_t len, rlen;

    setup(8);
    program();
    /* MLID 0xc000: ports 1, 2 and 3 (position 0, block 0, entry 0). */
    rnic_st16be(d, 1 << 1 | 1 << 2 | 1 << 3);
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_MFT, 0, d), 0);
    CHECK_EQ(rnic_ld16be(d), 0x000e);
    /* Position 1 (ports 16..31) does not exist on a 4-port switch. */
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_MFT, 1u << 28, d),
             RNIC_MAD_STATUS_BAD_VALUE);

    len = data_pkt(f, 0xc000, 0xb1);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(queued(1), 0);             /* not back to the sender */
    CHECK(take(2, r, &rlen));
    CHECK(!memcmp(r, f, len));
    CHECK(take(3, r, &rlen));
    CHECK(!memcmp(r, f, len));
    CHECK_EQ(total_drops(), 0);
}

/* ---- credits: a full output holds its input, and nothing is lost ---- */

static void test_backpressure(void)
{
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    size_t len, rlen;
    unsigned sent = 0, got = 0, i;

    setup(4);
    program();
    /* Port 3 does not drain: four frames fit, the fifth is held. */
    for (i = 0; i < 4; i++) {
        len = data_pkt(f, 4, sent++);
        CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    }
    len = data_pkt(f, 4, sent++);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_HELD);
    CHECK(ibsw_input_held(&sw, 1));
    CHECK_EQ(sw.port[1].c.held, 1);
    /* A reader that ignores the hold is refused, not dropped. */
    len = data_pkt(f, 4, sent);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_HELD);
    /* Other inputs to other outputs are not held up. */
    len = data_pkt(f, 3, 0xee);
    CHECK_EQ(ibsw_input(&sw, 4, f, len), IBSW_TAKEN);
    CHECK_EQ(sw.port[4].c.drops[IBSW_DROP_PORT_STATE], 1);
    len = data_pkt(f, 3, 0xef);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_HELD);

    /*
     * Drain slowly while the sender keeps going: 100 frames in order.
     * A held frame belongs to the switch, so it counts as sent.
     */
    sent = 5;
    while (got < 100) {
        while (sent < 100 && !ibsw_input_held(&sw, 1)) {
            len = data_pkt(f, 4, sent++);
            ibsw_input(&sw, 1, f, len);
        }
        CHECK(take(3, r, &rlen));
        CHECK_EQ(r[MAD_OFF], got);      /* the tag: order kept */
        got++;
        CHECK(queued(3) <= 4);
    }
    CHECK_EQ(sent, 100);
    CHECK(!ibsw_input_held(&sw, 1));
    CHECK_EQ(queued(3), 0);
    CHECK_EQ(total_drops(), 1);         /* only port 4's, before ACTIVE */
}

/* ---- link changes: queues flushed, Trap 128 to the SM ---- */

static void test_link_trap(void)
{
    uint8_t f[IBSW_FRAME_MAX], r[IBSW_FRAME_MAX];
    uint8_t *n;
    size_t len, rlen;

    setup(8);
    program();
    len = data_pkt(f, 4, 0xc1);
    CHECK_EQ(ibsw_input(&sw, 1, f, len), IBSW_TAKEN);
    CHECK_EQ(queued(3), 1);
    sw.traps_sent = 0;
    ibsw_link(&sw, 3, false);
    CHECK_EQ(queued(3), 0);
    CHECK_EQ(sw.port[3].state, IBSW_PS_DOWN);
    CHECK_EQ(sw.traps_sent, 1);
    CHECK(take(SM_PORT, r, &rlen));
    CHECK_EQ(rnic_ld16be(r + ETH_HLEN + 2), SM_LID);
    CHECK_EQ(r[MAD_OFF + RNIC_MAD_METHOD], RNIC_MAD_METHOD_TRAP);
    CHECK_EQ(rnic_ld16be(r + MAD_OFF + RNIC_MAD_ATTR_ID), RNIC_SMP_ATTR_NOTICE);
    n = r + MAD_OFF + RNIC_SMP_DATA;
    CHECK_EQ(rnic_ld16be(n + RNIC_NOTICE_TRAP_NUM),
             RNIC_TRAP_LINK_STATE_CHANGE);
    CHECK_EQ(rnic_ld16be(n + RNIC_NOTICE_ISSUER_LID), SW_LID);
    /* The SM sees PortStateChange and clears it by writing one. */
    {
        uint8_t d[64] = { 0 };

        CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_SWITCH_INFO, 0, d), 0);
        CHECK(d[RNIC_SI_LIFE_PSC] & 0x04);
        CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_SWITCH_INFO, 0, d), 0);
        CHECK(!(d[RNIC_SI_LIFE_PSC] & 0x04));
    }
    /* Back up: INIT again, waiting for the SM. */
    ibsw_link(&sw, 3, true);
    CHECK_EQ(sw.port[3].state, IBSW_PS_INIT);
    CHECK_EQ(sw.traps_sent, 2);
}

/* ---- M_Key ---- */

static void test_mkey(void)
{
    uint8_t d[64] = { 0 };
    uint8_t f[IBSW_FRAME_MAX];
    static const uint8_t path[2] = { 0, SM_PORT };
    size_t len;

    setup(8);
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_PORT_INFO, 0, d), 0);
    rnic_st64be(d + RNIC_PI_MKEY, 0x1234);
    d[RNIC_PI_MKEYPROT_LMC] = 1 << 6;
    CHECK_EQ(sma(RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PORT_INFO, 0, d), 0);
    /* A Set without the key: no answer at all. */
    len = dr_smp(f, RNIC_MAD_METHOD_SET, RNIC_SMP_ATTR_PORT_INFO, 0, path, 1,
                 d);
    CHECK_EQ(ibsw_input(&sw, SM_PORT, f, len), IBSW_TAKEN);
    CHECK_EQ(queued(SM_PORT), 0);
    CHECK_EQ(sw.port[SM_PORT].c.drops[IBSW_DROP_SMP], 1);
    /* Protection 1 still answers a Get. */
    CHECK_EQ(sma(RNIC_MAD_METHOD_GET, RNIC_SMP_ATTR_NODE_INFO, 0, d), 0);
}

static const TestGroup groups[] = {
    { "sma", test_sma },
    { "dr-through", test_dr_through },
    { "lft", test_lft },
    { "mft", test_mft },
    { "backpressure", test_backpressure },
    { "link-trap", test_link_trap },
    { "mkey", test_mkey },
};

static void cleanup(void)
{
    ibsw_cleanup(&sw);
}

int main(int argc, char **argv)
{
    atexit(cleanup);
    return test_main(argc, argv, groups, ARRAY_SIZE(groups));
}
