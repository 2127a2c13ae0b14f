#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Soft-RoCE baseline between two VMs over rxe0 on the virtio NIC, in one
# boot: data-verifying ibv_rc_pingpong -c and rping -V (VM 0 serves, VM 1
# connects to VM 0's IPv4), then perftest ib_write_bw with the RoCE v2
# IPv4 GID index found by rnic-gid-index (-x).
# vmlaunch: -n 2 --rxe --timeout 600
set -e
rnic-pingpong 200 4096
rnic-write-bw
