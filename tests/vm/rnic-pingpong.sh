#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# RC SEND/RECV between two VMs over the rnic device with every received
# buffer checked (ibv_rc_pingpong -c) at 1 B, 4 KiB and 1 MiB, plus rping -V
# (RDMA READ, WRITE and SEND of a pattern, compared byte for byte).
# vmlaunch: -n 2 --rnic --timeout 900
set -e
RNIC_NO_RPING=1 rnic-pingpong 100 1
rnic-pingpong 200 4096
RNIC_NO_RPING=1 rnic-pingpong 20 1048576
