// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test for the provider's ring index helpers (rnic_ring.h).
 * Build and run: make -C guest-driver/provider/tests
 */
#include <stdio.h>
#include <stdlib.h>

#include "../rnic_ring.h"

static int failures;

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,  \
				__LINE__, #cond);                         \
			failures++;                                       \
		}                                                         \
	} while (0)

static void test_log2(void)
{
	CHECK(rnic_log2_ceil(0) == 0);
	CHECK(rnic_log2_ceil(1) == 0);
	CHECK(rnic_log2_ceil(2) == 1);
	CHECK(rnic_log2_ceil(3) == 2);
	CHECK(rnic_log2_ceil(4) == 2);
	CHECK(rnic_log2_ceil(5) == 3);
	CHECK(rnic_log2_ceil(65536) == 16);
	CHECK(rnic_log2_ceil(65537) == 17);
	/* CQ sizing: at least one entry more than asked for. */
	CHECK(rnic_log2_ceil(15 + 1) == 4);
	CHECK(rnic_log2_ceil(16 + 1) == 5);
}

static void test_free(void)
{
	CHECK(rnic_wq_free(0, 0, 3) == 8);
	CHECK(rnic_wq_free(8, 0, 3) == 0);
	CHECK(rnic_wq_free(5, 1, 3) == 4);
	/* Across the 32-bit wrap of the free-running counters. */
	CHECK(rnic_wq_free(3, 0xfffffffcu, 3) == 1);
	CHECK(rnic_wq_free(4, 0xfffffffcu, 3) == 0);
	/* A corrupt tail ahead of head must not report space. */
	CHECK(rnic_wq_free(0, 1, 3) == 0);
}

static void test_slot(void)
{
	uint32_t pos = 99;

	/* Empty ring: nothing is outstanding. */
	CHECK(!rnic_wq_slot_outstanding(0, 0, 3, 0, &pos));
	/* head 5, tail 2: slots 2, 3, 4 are outstanding. */
	CHECK(rnic_wq_slot_outstanding(5, 2, 3, 2, &pos) && pos == 0);
	CHECK(rnic_wq_slot_outstanding(5, 2, 3, 4, &pos) && pos == 2);
	CHECK(!rnic_wq_slot_outstanding(5, 2, 3, 5, &pos));
	CHECK(!rnic_wq_slot_outstanding(5, 2, 3, 1, &pos));
	/* Beyond the ring. */
	CHECK(!rnic_wq_slot_outstanding(5, 2, 3, 8 + 2, &pos));
	/* Wrapped: tail 6, head 11 (slots 6, 7, 0, 1, 2). */
	CHECK(rnic_wq_slot_outstanding(11, 6, 3, 7, &pos) && pos == 1);
	CHECK(rnic_wq_slot_outstanding(11, 6, 3, 0, &pos) && pos == 2);
	CHECK(rnic_wq_slot_outstanding(11, 6, 3, 2, &pos) && pos == 4);
	CHECK(!rnic_wq_slot_outstanding(11, 6, 3, 3, &pos));
	CHECK(!rnic_wq_slot_outstanding(11, 6, 3, 5, &pos));
	/* Full ring: every slot is outstanding. */
	CHECK(rnic_wq_slot_outstanding(16, 8, 3, 7, &pos) && pos == 7);
	/* Across the 32-bit wrap. */
	CHECK(rnic_wq_slot_outstanding(2, 0xfffffffeu, 3, 6, &pos) && pos == 0);
	CHECK(rnic_wq_slot_outstanding(2, 0xfffffffeu, 3, 1, &pos) && pos == 3);
	CHECK(!rnic_wq_slot_outstanding(2, 0xfffffffeu, 3, 2, &pos));
}

static void test_owner(void)
{
	unsigned int log = 2;	/* 4 entries */
	uint32_t ci;

	/* Zeroed ring: nothing new on the first pass. */
	for (ci = 0; ci < 4; ci++)
		CHECK(!rnic_owner_is_new(0, ci, log));
	/* First pass: the device writes owner 1. */
	for (ci = 0; ci < 4; ci++)
		CHECK(rnic_owner_is_new(1, ci, log));
	/* Second pass: entries left from pass one (owner 1) are old. */
	for (ci = 4; ci < 8; ci++) {
		CHECK(!rnic_owner_is_new(1, ci, log));
		CHECK(rnic_owner_is_new(0, ci, log));
	}
	/* Only bit 0 counts. */
	CHECK(rnic_owner_is_new(0xff, 0, log));
	CHECK(!rnic_owner_is_new(0xfe, 0, log));
	/* Across the 32-bit wrap of ci (2^32 is a multiple of 2 passes). */
	CHECK(rnic_owner_is_new(1, 0xfffffffcu + 4, log));
	CHECK(rnic_owner_is_new(0, 0xfffffffcu, log));
}

/* Simulate device and provider over many ring wraps. */
static void test_simulation(void)
{
	enum { LOG = 3, N = 1 << LOG };
	uint8_t owner[N] = { 0 };
	uint32_t dev_pi = 0, ci = 0, seen = 0;
	unsigned int round;

	for (round = 0; round < 1000; round++) {
		unsigned int burst = (round * 7) % (N + 1), i;

		/* The device never overruns: at most N unconsumed entries. */
		for (i = 0; i < burst && dev_pi - ci < N; i++, dev_pi++)
			owner[dev_pi & (N - 1)] = !((dev_pi >> LOG) & 1);
		while (rnic_owner_is_new(owner[ci & (N - 1)], ci, LOG)) {
			ci++;
			seen++;
		}
		CHECK(ci == dev_pi);
	}
	CHECK(seen == dev_pi);
}

int main(void)
{
	test_log2();
	test_free();
	test_slot();
	test_owner();
	test_simulation();
	if (failures) {
		fprintf(stderr, "ring-test: %d failure(s)\n", failures);
		return EXIT_FAILURE;
	}
	printf("ring-test: OK\n");
	return EXIT_SUCCESS;
}
