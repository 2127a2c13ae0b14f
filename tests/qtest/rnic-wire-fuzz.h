/*
 * rnic wire fuzzing, shared by the seeded qtest (rnic-fuzz-test.c) and
 * the libFuzzer target (fuzz/rnic_wire_fuzz.c): a device with live QPs
 * and an MR between guard pages, frames built from templates and mutated,
 * and the clean-up and checks between batches.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RNIC_WIRE_FUZZ_H
#define RNIC_WIRE_FUZZ_H

#include "rnic-test-common.h"

#define GUARD_BYTE      0xa5
#define FZ_DEFAULT_ITERS 3000
#define FZ_BATCH        32              /* frames between clean-ups */
#define FZ_MAX_FRAME    1400
#define UD_QKEY         0x11223344u

typedef struct Fz {
    Env e;
    QTestState *qts;
    uint64_t rng;
    uint64_t region;            /* guard page, MR page, guard page */
    uint64_t mr_va;
    uint32_t mr_lkey, mr_rkey;
    QRnicQp ud;
    uint32_t sent, good_icrc;
} Fz;

uint32_t fz_rand(Fz *f);
uint32_t fz_below(Fz *f, uint32_t n);
/* The device (enabled by rt_env_basic), its QPs and the guarded MR. */
void fz_setup(Fz *f, void *obj, void *data);
/* Transport headers and payload of a nearly valid frame, into @b. */
size_t fz_template(Fz *f, uint8_t *b);
/* Mutates @n bytes at @b (room for FZ_MAX_FRAME); the new length. */
size_t fz_mutate(Fz *f, uint8_t *b, size_t n);
/* Sends @n transport bytes wrapped in a frame, with a good ICRC or not. */
void fz_send(Fz *f, const uint8_t *raw, size_t n, bool good);
/* Drains answers and CQEs, restarts broken QPs, checks the device. */
void fz_cleanup(Fz *f);
/* The pages on both sides of the MR are as they were. */
void fz_check_guards(Fz *f);

#endif
