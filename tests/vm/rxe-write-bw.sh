#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Soft-RoCE baseline: perftest ib_write_bw between two VMs over rxe0, with
# the RoCE v2 IPv4 GID index found by rnic-gid-index (-x).
# vmlaunch: -n 2 --rxe --timeout 600
set -e
rnic-write-bw
