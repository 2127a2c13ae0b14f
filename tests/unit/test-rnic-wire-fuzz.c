/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Deterministic robustness test for the rnic wire codec.
 *
 * Valid frames are mutated (bit flips, byte and length-field rewrites,
 * truncation, extension) and fed to the parser from exactly-sized heap
 * buffers, so that under AddressSanitizer any read past the frame is
 * fatal.  Half of the mutants get their IPv4 checksum and ICRC repaired
 * so that the parser is pushed past its integrity checks.  The builder is
 * exercised with random packet descriptions: whatever it accepts must
 * parse back cleanly.  Usage: test-rnic-wire-fuzz [iterations [seed]].
 */

#include "qemu/osdep.h"
#include "rnic-wire-test-util.h"

#define MAX_FRAME   (RNIC_WIRE_MAX_HLEN + 2048 + RNIC_WIRE_MAX_TRAILER)
#define MAX_SEEDS   1024

static uint8_t seeds[MAX_SEEDS][MAX_FRAME];
static size_t seed_len[MAX_SEEDS];
static unsigned nseeds;
static uint8_t payload[2048];
static unsigned result_hist[RNIC_WIRE_E__MAX];

static void make_seeds(uint64_t *rng)
{
    static const uint32_t plens[] = { 0, 1, 3, 4, 17, 256, 1024 };
    unsigned opc, v, i;
    RnicPkt p;
    int len;

    for (opc = 0; opc < 256; opc++) {
        const RnicOpcodeInfo *info = rnic_opcode_info(opc);

        if (!info) {
            continue;
        }
        for (v = 0; v < 4; v++) {
            for (i = 0; i < ARRAY_SIZE(plens); i++) {
                uint32_t pl = plens[i];

                if (pl && !(info->flags & RNIC_OPF_PAYLOAD)) {
                    break;
                }
                if (nseeds == MAX_SEEDS) {
                    return;
                }
                test_fill_pkt(&p, opc, (v & 1) ? 6 : 4, v & 2, pl);
                p.bth.psn = test_rand(rng) & RNIC_PSN_MASK;
                /* v == 2, 3: InfiniBand, local and global, in place of VLAN. */
                if (v & 2) {
                    p.has_vlan = false;
                    p.ib = true;
                    p.ib_grh = v & 1;
                    p.ib_dlid = test_rand(rng);
                    p.ib_slid = test_rand(rng);
                }
                len = rnic_wire_encode(&p, payload, seeds[nseeds], MAX_FRAME);
                CHECK(len > 0);
                if (len > 0) {
                    seed_len[nseeds++] = len;
                }
            }
        }
    }
}

static size_t mutate(uint8_t *f, size_t len, uint64_t *rng)
{
    unsigned n = 1 + test_rand(rng) % 4;
    /* Bias edits towards the headers, where the parser makes decisions. */
    size_t hdr = MIN(len, (size_t)RNIC_WIRE_MAX_HLEN);

    while (n--) {
        uint64_t r = test_rand(rng);
        size_t pos;

        hdr = MIN(hdr, len);
        pos = hdr ? (r >> 8) % (((r >> 4) & 3) ? hdr : len) : 0;

        switch (r & 7) {
        case 0:
        case 1:
            if (len) {
                f[pos] ^= 1 << ((r >> 40) & 7);
            }
            break;
        case 2:
            if (len) {
                f[pos] = r >> 32;
            }
            break;
        case 3:
            /* Truncate anywhere. */
            len = (r >> 16) % (len + 1);
            break;
        case 4:
            /* Extend with random bytes. */
            if (len < MAX_FRAME) {
                size_t add = MIN((size_t)((r >> 16) % 16 + 1),
                                 MAX_FRAME - len);
                size_t k;

                for (k = 0; k < add; k++) {
                    f[len + k] = test_rand(rng);
                }
                len += add;
            }
            break;
        case 5:
            /* Plausible-looking 16-bit value at a random even offset. */
            if (len >= 2) {
                pos = ((r >> 8) % (hdr > 1 ? hdr - 1 : 1)) & ~(size_t)1;
                rnic_st16be(f + pos, (r >> 32) % 160);
            }
            break;
        case 6:
            /* Rewrite a length field: IPv4 total / IPv6 payload / UDP. */
            if (len >= 64) {
                static const size_t offs[] = { 16, 18, 20, 22, 38, 42, 58, 62 };

                rnic_st16be(f + offs[(r >> 8) % ARRAY_SIZE(offs)],
                            (r >> 32) & 0xffff);
            }
            break;
        default:
            /* Random opcode, pad count and TVer in the BTH. */
            if (len >= 68) {
                static const size_t bth_offs[] = { 42, 46, 62, 66 };
                size_t b = bth_offs[(r >> 8) % ARRAY_SIZE(bth_offs)];

                f[b] = r >> 16;
                /* Mostly keep TVer 0 so the opcode checks get exercised. */
                f[b + 1] = (r >> 24) & ((r & (1ull << 63)) ? 0xff : 0xf0);
            }
            break;
        }
    }
    return len;
}

/*
 * Repair the integrity checks of a mutant so the parser goes past them:
 * RoCE with the reference code, IB by resealing the packet at its
 * length (PktLen, ICRC, VCRC).
 */
static void fix_frame(uint8_t *f, size_t len)
{
    if (len >= 14 + 8 + 6 && rnic_ld16be(f + 12) == RNIC_ETHERTYPE_IB) {
        rnic_ib_seal(f + 14, (len - 14 - 6) & ~(size_t)3, len - 14);
        return;
    }
    ref_fix_frame(f, len);
}

static void check_parsed(const RnicPkt *q, size_t len)
{
    const RnicOpcodeInfo *info = rnic_opcode_info(q->bth.opcode);

    CHECK(info != NULL);
    if (!info) {
        return;
    }
    CHECK(q->frame_len <= len);
    CHECK_EQ(q->payload_off, q->bth_off + info->hdr_len);
    CHECK_EQ((size_t)q->payload_off + q->payload_len + q->bth.pad +
             RNIC_ICRC_LEN + (q->ib ? RNIC_VCRC_LEN : 0), q->frame_len);
    CHECK(q->ib ? (q->ib_grh ? q->ip_ver == 6 : q->ip_ver == 0)
                : (q->ip_ver == 4 || q->ip_ver == 6));
    CHECK(q->bth.dqpn <= RNIC_QPN_MASK && q->bth.psn <= RNIC_PSN_MASK);
}

static void fuzz_parser(unsigned iters, uint64_t *rng)
{
    uint8_t work[MAX_FRAME];
    unsigned it;
    RnicPkt q;

    for (it = 0; it < iters; it++) {
        unsigned s = test_rand(rng) % nseeds;
        size_t len = seed_len[s];
        RnicWireErr err;
        uint8_t *heap;

        memcpy(work, seeds[s], len);
        len = mutate(work, len, rng);
        if (test_rand(rng) & 1) {
            fix_frame(work, len);
        }
        /* Exact-size heap copy: one byte too far is an ASan report. */
        heap = malloc(len ? len : 1);
        memcpy(heap, work, len);
        err = rnic_wire_parse(heap, len, &q);
        CHECK((unsigned)err < RNIC_WIRE_E__MAX);
        if ((unsigned)err < RNIC_WIRE_E__MAX) {
            result_hist[err]++;
        }
        if (err == RNIC_WIRE_OK) {
            check_parsed(&q, len);
        }
        free(heap);
    }
}

static void fuzz_builder(unsigned iters, uint64_t *rng)
{
    static uint8_t buf[70000];
    unsigned it;
    RnicPkt p, q;

    for (it = 0; it < iters; it++) {
        uint64_t r = test_rand(rng);
        size_t size = (r >> 32) % 2400;
        uint8_t *heap;
        int len, flen;

        test_fill_pkt(&p, r & 0xff, (r & 0x100) ? 6 : ((r & 0x200) ? 4 : 5),
                      r & 0x400, (r >> 11) % (sizeof(payload) + 1));
        if (!(r & 0x800)) {
            p.payload_len = 0;
        }
        p.bth.pad = r >> 20;            /* must be ignored */
        p.bth.tver = (r & 0xf000) ? 0 : (r >> 24) & 0xf;
        p.bth.psn = test_rand(rng);     /* upper bits must be ignored */
        p.bth.dqpn = test_rand(rng);
        p.flow_label = test_rand(rng);

        flen = rnic_wire_frame_len(&p);
        heap = malloc(size ? size : 1);
        len = rnic_wire_encode(&p, payload, heap, size);
        if (flen < 0) {
            CHECK_EQ(len, flen);
        } else if ((size_t)flen > size) {
            CHECK_EQ(len, -ENOSPC);
        } else {
            CHECK_EQ(len, flen);
        }
        if (len > 0) {
            RnicWireErr err = rnic_wire_parse(heap, len, &q);

            if (p.bth.tver) {
                CHECK_ERR(err, RNIC_WIRE_E_TVER);
            } else {
                CHECK_ERR(err, RNIC_WIRE_OK);
                CHECK_EQ(q.payload_len, p.payload_len);
                CHECK_EQ(q.bth.psn, p.bth.psn & RNIC_PSN_MASK);
                CHECK_EQ(q.bth.dqpn, p.bth.dqpn & RNIC_QPN_MASK);
                CHECK(p.ip_ver != 6 ||
                      q.flow_label == (p.flow_label & 0xfffff));
            }
        }
        free(heap);
    }
    /* Oversized payloads never touch the buffer. */
    test_fill_pkt(&p, RNIC_OPC_RC_SEND_FIRST, 4, false, 70000);
    CHECK_EQ(rnic_wire_encode(&p, NULL, buf, sizeof(buf)), -EMSGSIZE);
}

int main(int argc, char **argv)
{
    unsigned iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
    uint64_t rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed0f0cafe;
    unsigned i;

    if (!rng) {
        rng = 1;                        /* xorshift must not start at 0 */
    }
    for (i = 0; i < sizeof(payload); i++) {
        payload[i] = i ^ (i >> 3);
    }
    make_seeds(&rng);
    CHECK(nseeds > 100);
    fuzz_parser(iters, &rng);
    fuzz_builder(iters / 4, &rng);

    /* The mutants must reach every stage of the parser. */
    for (i = 0; i < RNIC_WIRE_E__MAX; i++) {
        printf("  %-36s %u\n", rnic_wire_err_str(i), result_hist[i]);
    }
    CHECK(result_hist[RNIC_WIRE_OK] > 0);
    CHECK(result_hist[RNIC_WIRE_E_ICRC] > 0);
    CHECK(result_hist[RNIC_WIRE_E_OPCODE] > 0);
    CHECK(result_hist[RNIC_WIRE_E_HDR_TRUNC] > 0);
    return test_report(argv[0]);
}
