/*
 * QTest testcases for the rnic RoCEv2 RNIC: a seeded fuzz of the receive
 * path, against a device with live QPs and MRs
 *
 * Frames are built from templates of every transport opcode the device
 * knows, and of some it does not, aimed at its RC, UD and GSI QPs, at and
 * around the PSN they expect, with the rkey and addresses of a live MR.
 * Then they are mutated: bit flips in the headers, PSN, QPN, opcode and
 * length rewrites, truncation and extension; most get a correct ICRC so
 * that they reach the transport.  The device must survive every frame,
 * write nothing outside its MR (the guard pages on both sides stay
 * untouched), keep its rings sane, and still carry a clean message at the
 * end.  RNIC_WIRE_FUZZ_ITERS and RNIC_WIRE_FUZZ_SEED change the run; the
 * libFuzzer target rnic-wire (fuzz/rnic_wire_fuzz.c) shares the set-up.
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-wire-fuzz.h"

#ifndef _WIN32

static void test_wire_fuzz(void *obj, void *data, QGuestAllocator *alloc)
{
    const char *it = g_getenv("RNIC_WIRE_FUZZ_ITERS");
    const char *sd = g_getenv("RNIC_WIRE_FUZZ_SEED");
    unsigned iters = it ? atoi(it) : FZ_DEFAULT_ITERS;
    uint8_t raw[FZ_MAX_FRAME];
    uint8_t payload[64], got[64];
    struct rnic_cqe cqe;
    Fz f = { .rng = sd ? g_ascii_strtoull(sd, NULL, 0) : 0x726e6963 };
    unsigned i;
    Roce r;

    fz_setup(&f, obj, data);
    g_test_message("wire fuzz: %u frames, seed 0x%" PRIx64, iters, f.rng);
    for (i = 0; i < iters; i++) {
        size_t n = fz_template(&f, raw);
        bool good = fz_below(&f, 8) != 0;

        if (fz_below(&f, 4)) {
            n = fz_mutate(&f, raw, n);
        }
        fz_send(&f, raw, n, good);
        if (i % FZ_BATCH == FZ_BATCH - 1) {
            fz_cleanup(&f);
            fz_check_guards(&f);
        }
    }
    fz_cleanup(&f);
    fz_check_guards(&f);
    g_assert_cmpuint(qrnic_counter(f.e.r, RNIC_CNT_RX_PKTS) +
                     qrnic_counter(f.e.r, RNIC_CNT_RX_DROPPED) +
                     qrnic_counter(f.e.r, RNIC_CNT_RX_ICRC_ERR), >, 0);

    /* Still a working device: a clean SEND lands where it should. */
    g_assert_cmpuint(qrnic_destroy(f.e.r, RNIC_CMD_DESTROY_QP, 0,
                                   f.e.qp.qpn), ==, RNIC_CMD_OK);
    rt_env_rc_qp(&f.e, RNIC_QPS_RTR);
    {
        struct rnic_sge sge;

        rt_sge_of(&sge, &f.e.mr, 0x100, 64);
        qrnic_post_recv(f.e.r, &f.e.qp, 0xc1ea4, &sge, 1);
        qrnic_ring_rq(f.e.r, &f.e.qp);
    }
    qrnic_settle(f.e.r);
    while (qrnic_cq_poll(f.e.r, &f.e.cq, &cqe)) {
        /* leftovers of the fuzz */
    }
    rt_fill_pattern(payload, sizeof(payload), 0x77);
    rt_roce_init_payload(&r, OPC_SEND_ONLY, f.e.qp.qpn, QP_RQ_PSN, payload,
                         sizeof(payload));
    rt_send_roce(&f.e, &r);
    g_assert_true(qrnic_cq_wait(f.e.r, &f.e.cq, &cqe, QRNIC_TIMEOUT_MS));
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0xc1ea4);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    qtest_memread(f.qts, f.e.mr.buf + 0x100, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), payload, sizeof(payload));
    g_test_message("wire fuzz: %u frames sent (%u with a good ICRC); "
                   "rx_pkts %" PRIu64 " rx_dropped %" PRIu64
                   " icrc_err %" PRIu64, f.sent, f.good_icrc,
                   qrnic_counter(f.e.r, RNIC_CNT_RX_PKTS),
                   qrnic_counter(f.e.r, RNIC_CNT_RX_DROPPED),
                   qrnic_counter(f.e.r, RNIC_CNT_RX_ICRC_ERR));
}

static void register_rnic_fuzz_test(void)
{
    rt_add("wire-fuzz", test_wire_fuzz);
}

libqos_init(register_rnic_fuzz_test);

#endif /* _WIN32 */
