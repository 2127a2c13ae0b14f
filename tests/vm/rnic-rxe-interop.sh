#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Wire interoperability with Linux Soft-RoCE: VM 0 runs the rnic device,
# VM 1 runs rxe0 on a virtio NIC of the same Ethernet segment.  RC
# ping-pong with every buffer checked (rnic receives and verifies), rping -V
# (RDMA READ/WRITE/SEND both ways, compared byte for byte), then RDMA WRITE
# and READ bandwidth, all between the two implementations.
# vmlaunch: -n 2 --rnic --interop --timeout 900
set -e
. rnic-test-lib rnic-rxe-interop
log "$(hostname) uses $RNIC_IBDEV"
rnic-pingpong 200 4096
RNIC_NO_RPING=1 rnic-pingpong 20 1048576
rnic-perf ib_write_bw -s 65536 -n 200 --report_gbits
rnic-perf ib_read_bw -s 65536 -n 200 --report_gbits
log "OK on $(hostname)"
