/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the rnic wire unit tests.
 */

#include "qemu/osdep.h"
#include "rnic-wire-test-util.h"

unsigned test_failures;
unsigned test_checks;

uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

uint32_t ref_crc32_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    size_t i;
    int bit;

    for (i = 0; i < len; i++) {
        crc ^= p[i];
        for (bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ ((crc & 1) ? 0xedb88320u : 0);
        }
    }
    return crc;
}

static unsigned be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

bool ref_locate(const uint8_t *frame, size_t len, size_t *l3_off,
                size_t *ip_hlen, size_t *ip_end)
{
    size_t off = 14;
    unsigned type;

    if (len < 14) {
        return false;
    }
    type = be16(frame + 12);
    if (type == 0x8100) {
        if (len < 18) {
            return false;
        }
        type = be16(frame + 16);
        off = 18;
    }
    if (type == 0x0800) {
        if (len < off + 20) {
            return false;
        }
        *ip_hlen = (frame[off] & 0xf) * 4;
        if (*ip_hlen < 20) {
            return false;
        }
        *ip_end = off + be16(frame + off + 2);
    } else if (type == 0x86dd) {
        if (len < off + 40) {
            return false;
        }
        *ip_hlen = 40;
        *ip_end = off + 40 + be16(frame + off + 4);
    } else {
        return false;
    }
    *l3_off = off;
    /* Room for IP + UDP + BTH + ICRC, all inside the frame. */
    return *ip_end <= len && *ip_end >= off + *ip_hlen + 8 + 12 + 4;
}

bool ref_icrc(const uint8_t *frame, size_t len, uint32_t *icrc)
{
    size_t l3, hl, end, n, u;
    uint8_t *buf;
    uint32_t crc;

    if (!ref_locate(frame, len, &l3, &hl, &end)) {
        return false;
    }
    n = 8 + (end - 4 - l3);
    buf = malloc(n);
    memset(buf, 0xff, 8);
    memcpy(buf + 8, frame + l3, n - 8);
    if (hl == 40 && (buf[8] >> 4) == 6) {
        /* Traffic class (8 bits) and flow label (20 bits) -> ones. */
        buf[8] |= 0x0f;
        buf[9] = buf[10] = buf[11] = 0xff;
        buf[8 + 7] = 0xff;                      /* hop limit */
    } else {
        buf[8 + 1] = 0xff;                      /* TOS */
        buf[8 + 8] = 0xff;                      /* TTL */
        buf[8 + 10] = buf[8 + 11] = 0xff;       /* checksum */
    }
    u = 8 + hl;
    buf[u + 6] = buf[u + 7] = 0xff;             /* UDP checksum */
    buf[u + 8 + 4] = 0xff;                      /* BTH FECN/BECN/resv6 */
    crc = ~ref_crc32_raw(0xffffffffu, buf, n);
    free(buf);
    *icrc = crc;
    return true;
}

bool ref_ipv4_csum_ok(const uint8_t *hdr, size_t hlen)
{
    uint32_t sum = 0;
    size_t i;

    for (i = 0; i < hlen; i += 2) {
        sum += be16(hdr + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum == 0xffff;
}

bool ref_udp6_csum_ok(const uint8_t *ip6, const uint8_t *udp, size_t udp_len)
{
    uint32_t sum = 0;
    size_t i;

    for (i = 8; i < 40; i += 2) {
        sum += be16(ip6 + i);               /* source and destination */
    }
    sum += (uint32_t)udp_len + 17;
    for (i = 0; i + 1 < udp_len; i += 2) {
        sum += be16(udp + i);
    }
    if (udp_len & 1) {
        sum += udp[udp_len - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum == 0xffff && be16(udp + 6) != 0;
}

bool ref_fix_frame(uint8_t *frame, size_t len)
{
    size_t l3, hl, end, i;
    uint32_t icrc, sum = 0;
    uint8_t *ip;

    if (!ref_locate(frame, len, &l3, &hl, &end)) {
        return false;
    }
    ip = frame + l3;
    if ((ip[0] >> 4) == 4 && hl <= 60) {
        ip[10] = ip[11] = 0;
        for (i = 0; i < hl; i += 2) {
            sum += be16(ip + i);
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum = ~sum & 0xffff;
        ip[10] = sum >> 8;
        ip[11] = sum;
    }
    if (!ref_icrc(frame, len, &icrc)) {
        return false;
    }
    frame[end - 4] = icrc;
    frame[end - 3] = icrc >> 8;
    frame[end - 2] = icrc >> 16;
    frame[end - 1] = icrc >> 24;
    return true;
}

void test_fill_pkt(RnicPkt *p, uint8_t opcode, int ip_ver, bool vlan,
                   uint32_t payload_len)
{
    static const uint8_t dst[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    static const uint8_t src[6] = { 0x02, 0x00, 0x5e, 0xaa, 0xbb, 0xcc };
    static const uint8_t v6s[16] = {
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff,
        0xfe, 0x12, 0x34, 0x56
    };
    static const uint8_t v6d[16] = {
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x42
    };

    memset(p, 0, sizeof(*p));
    memcpy(p->eth_dst, dst, 6);
    memcpy(p->eth_src, src, 6);
    p->has_vlan = vlan;
    p->vlan_tci = 0xa00b;               /* PCP 5, VID 11 */
    p->ip_ver = ip_ver;
    if (ip_ver == 6) {
        memcpy(p->ip_src, v6s, 16);
        memcpy(p->ip_dst, v6d, 16);
        p->flow_label = 0xabcde;
    } else {
        rnic_ipv4_to_mapped(0xc0a87a01, p->ip_src);    /* 192.168.122.1 */
        rnic_ipv4_to_mapped(0x0a000002, p->ip_dst);    /* 10.0.0.2 */
        p->ip_id = 0x1234;
    }
    p->ttl = 64;
    p->tclass = 0x6a;
    p->udp_sport = 0xc123;
    p->udp_dport = RNIC_ROCE_UDP_PORT;
    p->bth.opcode = opcode;
    p->bth.se = true;
    p->bth.mig = true;
    p->bth.pkey = 0xffff;
    p->bth.fecn = false;
    p->bth.becn = true;
    p->bth.dqpn = 0xabcdef;
    p->bth.ack_req = true;
    p->bth.psn = 0xfedcba;
    p->reth.va = 0x0123456789abcdefull;
    p->reth.rkey = 0xdeadbeef;
    p->reth.dma_len = 0x10000;
    p->aeth.syndrome = rnic_aeth_ack(RNIC_AETH_CREDITS_INVALID);
    p->aeth.msn = 0x00c0de;
    p->imm = 0x11223344;
    p->ieth_rkey = 0x55667788;
    p->feth = 0x00000021;       /* MR level, global visibility */
    p->deth.qkey = 0x80010000;
    p->deth.src_qp = 0x000011;
    p->atomic.va = 0xffff880012345678ull;
    p->atomic.rkey = 0x01020304;
    p->atomic.swap_add = 0x0a0b0c0d0e0f1011ull;
    p->atomic.compare = 0x2122232425262728ull;
    p->atomic_orig = 0x3132333435363738ull;
    p->payload_len = payload_len;
}

int test_report(const char *name)
{
    if (test_failures) {
        fprintf(stderr, "%s: %u of %u checks FAILED\n",
                name, test_failures, test_checks);
        return 1;
    }
    printf("%s: all %u checks passed\n", name, test_checks);
    return 0;
}

int test_main(int argc, char **argv, const TestGroup *groups, size_t n)
{
    size_t i;
    int a;

    for (a = 1; a < argc; a++) {
        for (i = 0; i < n && strcmp(argv[a], groups[i].name); i++) {
            continue;
        }
        if (i == n) {
            fprintf(stderr, "unknown test group '%s'\n", argv[a]);
            return 2;
        }
        groups[i].fn();
    }
    if (argc < 2) {
        for (i = 0; i < n; i++) {
            groups[i].fn();
        }
    }
    return test_report(argv[argc - 1]);
}
