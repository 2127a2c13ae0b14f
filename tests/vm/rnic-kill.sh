#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A verbs process killed in the middle of a transfer leaves the driver and
# the device usable: VM 1's ib_write_bw client is SIGKILLed while it
# streams, then a fresh data-verifying ping-pong must pass, and the kernel
# must not have warned.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
fail() { echo "rnic-kill: FAILED: $*"; exit 1; }
args=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D 30)

case $RNIC_VM_INDEX in
    0)
        # The server fails once its peer is gone; only its exit matters.
        timeout 60 ib_write_bw "${args[@]}" || echo "rnic-kill: server ended ($?)"
        ;;
    1)
        txc=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters/tx_pkts
        # The server may not listen yet: start the client until it streams
        # (or at least stays connected for 8 s).
        pid=""
        for _ in $(seq 1 30); do
            sleep 1
            base=$(cat "$txc")
            timeout 60 ib_write_bw "${args[@]}" "$RNIC_PEER_DATA_IP4" &
            pid=$!
            for _ in $(seq 1 16); do
                kill -0 "$pid" 2>/dev/null || break
                [ $(($(cat "$txc") - base)) -gt 100 ] && break
                sleep 0.5
            done
            kill -0 "$pid" 2>/dev/null && break
            wait "$pid"
            pid=""
        done
        [ -n "$pid" ] || fail "ib_write_bw never connected"
        sleep 2
        tx=$(($(cat "$txc") - base))
        pkill -KILL -x ib_write_bw || fail "no ib_write_bw to kill"
        wait "$pid"
        echo "rnic-kill: killed the client after it sent $tx packets"
        [ "$tx" -gt 100 ] || fail "the transfer had not started"
        ;;
esac
RNIC_NO_RPING=1 rnic-pingpong 100 4096 || fail "ping-pong after the kill failed"
if dmesg | grep -E "WARNING|BUG:|Oops|general protection"; then
    fail "kernel warnings after the kill"
fi
echo "rnic-kill: OK on $(hostname)"
