/*
 * libFuzzer target "rnic-wire": RoCEv2 frames into an rnic with live QPs
 * and an MR between guard pages (the set-up of tests/qtest/rnic-wire-fuzz.c)
 *
 * The input is a sequence of records: a flags byte, a length byte and
 * that many bytes from the BTH on.  Flags help the fuzzer past what it
 * could hardly guess: RNIC_FZ_QP aims the frame at the live RC or UD QP,
 * RNIC_FZ_PSN puts the PSN the RC QP expects, RNIC_FZ_KEY writes the MR's
 * rkey and an address inside it where a RETH would be, and RNIC_FZ_BAD
 * breaks the ICRC.  After each input the device's answers and completions
 * are drained, broken QPs restarted, and the guard pages checked.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/qgraph.h"
#include "tests/qtest/libqos/rnic.h"
#include "tests/qtest/rnic-wire-fuzz.h"
#include "fuzz.h"
#include "qos_fuzz.h"

#define RNIC_FZ_QP      (1u << 0)
#define RNIC_FZ_UD      (1u << 1)
#define RNIC_FZ_PSN     (1u << 2)
#define RNIC_FZ_KEY     (1u << 3)
#define RNIC_FZ_BAD     (1u << 4)

static int sockfds[2];
static Fz fz;

/*
 * rnic-test-common.c tells qos-test to start a fresh QEMU after a test;
 * the fuzzer keeps its one QEMU, and qos-test.c is not linked in.
 */
void qos_invalidate_command_line(void)
{
}

static void rnic_wire_fuzz(QTestState *s, const unsigned char *data,
                           size_t size)
{
    uint8_t raw[FZ_MAX_FRAME];

    while (size >= 2) {
        uint8_t flags = data[0];
        size_t n = MIN(data[1] * 4u + 12, size - 2);

        memcpy(raw, data + 2, n);
        data += 2 + n;
        size -= 2 + n;
        if (n < BTH_LEN) {
            fz_send(&fz, raw, n, !(flags & RNIC_FZ_BAD));
            continue;
        }
        if (flags & RNIC_FZ_QP) {
            stl_be_p(raw + 4, (flags & RNIC_FZ_UD) ? fz.ud.qpn :
                                                     fz.e.qp.qpn);
        }
        if (flags & RNIC_FZ_PSN) {
            stl_be_p(raw + 8, (ldl_be_p(raw + 8) & 0x80000000u) | QP_RQ_PSN);
        }
        if ((flags & RNIC_FZ_KEY) && n >= BTH_LEN + 16) {
            stq_be_p(raw + BTH_LEN, fz.mr_va + (ldl_be_p(raw + BTH_LEN) &
                                                (QRNIC_PAGE - 1)));
            stl_be_p(raw + BTH_LEN + 8, fz.mr_rkey);
        }
        fz_send(&fz, raw, n, !(flags & RNIC_FZ_BAD));
    }
    fz_cleanup(&fz);
    fz_check_guards(&fz);
}

static void rnic_wire_pre_fuzz(QTestState *s)
{
    qos_init_path(s);
    /* No QEMU process runs its own main loop: waiting must run it. */
    qrnic_wait_hook = flush_events;
    fz.rng = 0x726e6963;
    fz_setup(&fz, fuzz_qos_obj, sockfds);
}

static void *rnic_wire_setup_socket(GString *cmd_line, void *arg)
{
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sockfds), !=, -1);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=hs0 ",
                           sockfds[1]);
    /* Where the firmware is, for example (scripts/lib/fuzz.sh sets it). */
    if (getenv("RNIC_FUZZ_ARGS")) {
        g_string_append_printf(cmd_line, " %s ", getenv("RNIC_FUZZ_ARGS"));
    }
    return arg;
}

static void register_rnic_wire_fuzz_targets(void)
{
    fuzz_add_qos_target(&(FuzzTarget){
            .name = "rnic-wire",
            .description = "RoCEv2 frames into an rnic with live QPs and a "
                           "guarded MR",
            .pre_fuzz = rnic_wire_pre_fuzz,
            .fuzz = rnic_wire_fuzz,
        }, "rnic",
        &(QOSGraphTestOptions){
            .before = rnic_wire_setup_socket,
            .edge.extra_device_opts = LIMIT_OPTS ",msix-vectors=5",
        });
}

fuzz_target_init(register_rnic_wire_fuzz_targets);
