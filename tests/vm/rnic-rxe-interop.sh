#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Wire interoperability with Linux Soft-RoCE: VM 0 runs the rnic device,
# VM 1 runs rxe0 on a virtio NIC of the same Ethernet segment.  RC
# ping-pong with every buffer checked on both sides, rping -V
# (RDMA READ/WRITE/SEND both ways, compared byte for byte), then RDMA WRITE
# and READ bandwidth, all between the two implementations.
#
# The ping-pong servers run on the rxe side (RNIC_PP_SERVER=1).  The last
# message of a ping-pong goes from the server to the client, and the client
# exits, destroying its QP, as soon as that message completes.  rxe posts a
# receive completion before it sends the ACK of that message, so when the
# client is rxe the ACK can be lost with the QP, and the server then ends,
# as RC requires, with a retry error on a message that was delivered.
# rnic sends its ACK in the same bottom-half pass that writes the
# completion, before it handles any command of the guest's, so with rnic
# as the client the run's end is deterministic.
# vmlaunch: -n 2 --rnic --interop --timeout 900
set -u
. rnic-test-lib rnic-rxe-interop

on_fail() {
    log "non-zero counters of $RNIC_IBDEV: $(grep -v '^0$' -H \
        "$(counter_dir)"/* 2>/dev/null | sed 's|.*/||' | tr '\n' ' ')"
    rdma resource show qp 2>&1 | head -20
}

export RNIC_PP_SERVER=1
log "$(hostname) uses $RNIC_IBDEV"
rnic-pingpong 200 4096 || fail "4 KiB ping-pong or rping failed"
RNIC_NO_RPING=1 rnic-pingpong 20 1048576 || fail "1 MiB ping-pong failed"
rnic-perf ib_write_bw -s 65536 -n 200 --report_gbits ||
    fail "ib_write_bw failed"
rnic-perf ib_read_bw -s 65536 -n 200 --report_gbits || fail "ib_read_bw failed"
log "OK on $(hostname)"
