/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pure ring index arithmetic for the rnic provider.  No rdma-core
 * dependencies, so the host unit test can include it on its own.
 *
 * Producer and consumer indices are free-running 32-bit counters; the
 * ring slot of index i is i & (entries - 1) and entries is a power of two
 * no larger than 2^16, so unsigned wrap-around of the counters is exact.
 */
#ifndef RNIC_RING_H
#define RNIC_RING_H

#include <stdbool.h>
#include <stdint.h>

/* Smallest log2 with (1 << log) >= n; 0 for n <= 1. */
static inline unsigned int rnic_log2_ceil(uint32_t n)
{
	unsigned int log = 0;

	while (log < 32 && (1ULL << log) < n)
		log++;
	return log;
}

/* WQEs posted and not yet retired. */
static inline uint32_t rnic_wq_used(uint32_t head, uint32_t tail)
{
	return head - tail;
}

/* Free slots of a ring of 1 << log_size entries. */
static inline uint32_t rnic_wq_free(uint32_t head, uint32_t tail,
				    unsigned int log_size)
{
	uint32_t used = rnic_wq_used(head, tail);
	uint32_t entries = 1u << log_size;

	return used >= entries ? 0 : entries - used;
}

/*
 * A completion names ring slot 'slot'.  It is acceptable only when the slot
 * lies inside [tail, head) of the ring; then *pos receives its distance
 * from tail (0 = the oldest outstanding WQE).
 */
static inline bool rnic_wq_slot_outstanding(uint32_t head, uint32_t tail,
					    unsigned int log_size,
					    uint32_t slot, uint32_t *pos)
{
	uint32_t mask = (1u << log_size) - 1;
	uint32_t off;

	if (slot > mask)
		return false;
	off = (slot - tail) & mask;
	if (off >= rnic_wq_used(head, tail))
		return false;
	*pos = off;
	return true;
}

/*
 * The free-running SRQ index whose low 16 bits a CQE names: the latest
 * one below head with those bits (an SRQ never has more than 64K
 * receives outstanding, see RNIC_SRQ_SHADOW).
 */
static inline uint32_t rnic_srq_full_index(uint32_t head, uint32_t idx16)
{
	return head - 1 - ((head - 1 - idx16) & 0xffffu);
}

/*
 * CQ/EQ owner bit: the device writes 1 on the first pass over the ring,
 * 0 on the second, and so on.  Entry ci & mask is new when its owner bit
 * differs from the pass parity of ci.
 */
static inline bool rnic_owner_is_new(uint8_t owner, uint32_t ci,
				     unsigned int log_size)
{
	return (owner & 1u) != ((ci >> log_size) & 1u);
}

#endif /* RNIC_RING_H */
