#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Path MTU 1024 and 4096: data-verifying ping-pong, then WRITE, READ and
# SEND bandwidth and SEND/WRITE latency, with the QPs' path MTU forced
# (-m).  4096 needs a jumbo netdev MTU first.
# vmlaunch: -n 2 --rnic --timeout 900
set -e
. rnic-test-lib rnic-mtu

# perftest at one path MTU; 64 KiB messages span many packets at either.
perf_at() {
    local m=$1
    rnic-perf ib_write_bw -m "$m" -s 65536 -n 200 --report_gbits
    rnic-perf ib_read_bw -m "$m" -s 65536 -n 200 --report_gbits
    rnic-perf ib_send_bw -m "$m" -s 65536 -n 200 --report_gbits
    rnic-perf ib_send_lat -m "$m" -s 8192 -n 100
    rnic-perf ib_write_lat -m "$m" -s 8192 -n 100
}

RNIC_PP_ARGS="-m 1024" RNIC_NO_RPING=1 rnic-pingpong 100 65536
perf_at 1024

ip link set "$RNIC_RNIC_NETDEV" mtu 9000
for i in $(seq 1 50); do
    ibv_devinfo -d "$RNIC_IBDEV" | grep -q "active_mtu:.*4096" && break
    sleep 0.1
done
ibv_devinfo -d "$RNIC_IBDEV" | grep -q "active_mtu:.*4096" ||
    fail "active_mtu did not follow the netdev MTU of 9000"
RNIC_PP_ARGS="-m 4096" RNIC_NO_RPING=1 rnic-pingpong 100 65536
perf_at 4096
log "OK on $(hostname)"
