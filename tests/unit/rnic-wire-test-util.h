/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the rnic wire unit tests.
 *
 * The reference routines here deliberately avoid the codec under test
 * (and zlib) so that agreement between the two means something.
 */

#ifndef RNIC_WIRE_TEST_UTIL_H
#define RNIC_WIRE_TEST_UTIL_H

#include "qemu/osdep.h"
#include "rnic-wire.h"

extern unsigned test_failures;
extern unsigned test_checks;

#define CHECK(cond) \
    do { \
        test_checks++; \
        if (!(cond)) { \
            test_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", \
                    __FILE__, __LINE__, #cond); \
        } \
    } while (0)

#define CHECK_EQ(a, b) \
    do { \
        unsigned long long a_ = (unsigned long long)(a); \
        unsigned long long b_ = (unsigned long long)(b); \
        test_checks++; \
        if (a_ != b_) { \
            test_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s " \
                    "(0x%llx != 0x%llx)\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_); \
        } \
    } while (0)

#define CHECK_ERR(a, b) \
    do { \
        RnicWireErr a_ = (a), b_ = (b); \
        test_checks++; \
        if (a_ != b_) { \
            test_failures++; \
            fprintf(stderr, "%s:%d: %s: got \"%s\", want \"%s\"\n", \
                    __FILE__, __LINE__, #a, rnic_wire_err_str(a_), \
                    rnic_wire_err_str(b_)); \
        } \
    } while (0)

/* Deterministic PRNG (xorshift64*), so failures reproduce exactly. */
uint64_t test_rand(uint64_t *state);

/* Plain bit-at-a-time reflected CRC-32 (poly 0xedb88320), no inversion. */
uint32_t ref_crc32_raw(uint32_t crc, const uint8_t *p, size_t len);

/*
 * Locate the IP header and datagram end of a frame without the codec.
 * Returns false if the frame is too malformed to say.
 */
bool ref_locate(const uint8_t *frame, size_t len, size_t *l3_off,
                size_t *ip_hlen, size_t *ip_end);

/* Reference ICRC of a frame, written from the IBTA description. */
bool ref_icrc(const uint8_t *frame, size_t len, uint32_t *icrc);

/* Rewrite the IPv4 header checksum and the ICRC after editing a frame. */
bool ref_fix_frame(uint8_t *frame, size_t len);

/* Ones-complement sum check: true if the IPv4 header sums to 0xffff. */
bool ref_ipv4_csum_ok(const uint8_t *hdr, size_t hlen);

/* True if an IPv6 UDP datagram's checksum (incl. pseudo header) is valid. */
bool ref_udp6_csum_ok(const uint8_t *ip6, const uint8_t *udp, size_t udp_len);

/* A fully populated packet description with recognisable field values. */
void test_fill_pkt(RnicPkt *p, uint8_t opcode, int ip_ver, bool vlan,
                   uint32_t payload_len);

int test_report(const char *name);

/* A named group of checks; test_main() runs those named, or all. */
typedef struct TestGroup {
    const char *name;
    void (*fn)(void);
} TestGroup;

int test_main(int argc, char **argv, const TestGroup *groups, size_t n);

#endif
