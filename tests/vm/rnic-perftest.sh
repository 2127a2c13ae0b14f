#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# perftest over the rnic device between two VMs: WRITE, READ and SEND
# bandwidth over all sizes (-a, 2 B to 8 MiB) and SEND/WRITE latency.
# perftest fails on any work completion that is not a success; the data
# itself is verified by rnic-pingpong and rnic-mtu.
# vmlaunch: -n 2 --rnic --timeout 1200
set -e
rnic-perf ib_write_bw -a -n 20 --report_gbits
rnic-perf ib_read_bw -a -n 20 --report_gbits
rnic-perf ib_send_bw -a -n 20 --report_gbits
rnic-perf ib_send_lat -n 200
rnic-perf ib_write_lat -n 200
echo "rnic-perftest: OK on $(hostname)"
