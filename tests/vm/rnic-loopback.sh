#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Loopback in one VM: two processes run ibv_rc_pingpong -c against each
# other on the same rnic device.  The device must deliver the packets
# itself (its loopback counter grows) and the data must verify.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
fail() { echo "rnic-loopback: FAILED: $*"; exit 1; }
c=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters
iters=200
before=$(cat "$c/loopback_pkts")
args=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "$iters" -s 4096)

timeout 300 ibv_rc_pingpong "${args[@]}" >/tmp/server.out 2>&1 &
server=$!
sleep 1
rnic-retry 30 1 timeout 120 ibv_rc_pingpong "${args[@]}" 127.0.0.1 ||
    fail "client failed"
wait "$server" || fail "server failed: $(cat /tmp/server.out)"
cat /tmp/server.out
grep -q "invalid data" /tmp/server.out && fail "received data did not verify"
after=$(cat "$c/loopback_pkts")
echo "rnic-loopback: loopback_pkts $before -> $after"
[ $((after - before)) -ge $((2 * iters)) ] ||
    fail "the device did not loop the packets back ($before -> $after)"
echo "rnic-loopback: OK: $iters x 4096 bytes verified through the device's loopback"
