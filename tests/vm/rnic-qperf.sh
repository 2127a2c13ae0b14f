#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qperf (Debian's, unmodified) over rnic: every RC test it offers, through
# the RDMA CM (-cm1).  RoCE needs a GRH in every address, and qperf makes
# one only through the CM, which it uses for RC alone: its UC and UD tests
# build addresses without a GRH, which every RoCE device refuses (EINVAL,
# docs/middleware.md).  That stays checked here, so the page stays true.
# VM 0 runs the qperf server, VM 1 the tests; each RC test must report a
# result.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-qperf
out=$(mktemp)
tests="rc_bw rc_lat rc_bi_bw rc_rdma_read_bw rc_rdma_read_lat
       rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat
       rc_compare_swap_mr rc_fetch_add_mr"

case $(role) in
server)
    qperf >"$out" 2>&1 &
    signal_wait 1 800 >/dev/null || fail "no word from VM 1"
    kill %1 2>/dev/null
    ;;
client)
    for t in $tests; do
        rnic-retry 30 1 timeout 120 qperf -cm1 -t 2 "$RNIC_VM0_RNIC_IP4" \
            "$t" >"$out" 2>&1 || { cat "$out"; fail "$t"; }
        grep -qE "(bw|latency|msg_rate) *= *[0-9.]+" "$out" ||
            { cat "$out"; fail "$t printed no result"; }
        log "$t: $(grep -E '= ' "$out" | head -1 | tr -s ' ')"
    done
    # UC and UD: refused for want of a GRH, as on any RoCE device.
    for t in uc_bw ud_lat; do
        timeout 60 qperf -cm1 -t 2 "$RNIC_VM0_RNIC_IP4" "$t" >"$out" 2>&1 &&
            { cat "$out"; fail "$t ran: update docs/middleware.md"; }
        grep -qE "failed to (modify QP to RTR|create address handle): Invalid argument" "$out" ||
            { cat "$out"; fail "$t failed otherwise than documented"; }
        log "$t: refused without a GRH, as documented"
    done
    signal_send 0 1 done || fail "VM 0 did not hear"
    ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "all passed on $(hostname)"
