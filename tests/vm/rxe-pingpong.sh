#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Soft-RoCE baseline: data-verifying ibv_rc_pingpong -c between two VMs over
# rxe0 on the virtio NIC (VM 0 serves, VM 1 connects to VM 0's IPv4).
# vmlaunch: -n 2 --rxe --timeout 600
set -e
rnic-pingpong 200 4096
