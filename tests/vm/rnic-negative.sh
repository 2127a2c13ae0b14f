#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Requests rnic must refuse, each with the right work completion status or
# errno (scripts/guest/test_rnic_negative.py, run inside rdma-core's pyverbs
# test package): a WRITE without REMOTE_WRITE, READs past the end of an MR
# and of a window, rkeys after dereg and after invalidation, an MR of
# another PD, a bind over an MR without MW_BIND, an unaligned atomic, RNR
# with rnr_retry 0, illegal modify_qp calls, and a UD message with a wrong
# Q_Key (dropped).  rxe runs them beside it.
# vmlaunch: -n 1 --rnic --rxe --timeout 600
set -u
mountpoint -q /dev/shm || mount -t tmpfs -o size=256m tmpfs /dev/shm
ulimit -l unlimited
rnic-pyverbs --only test_rnic_negative \
    --extra /opt/rnic/bin/test_rnic_negative.py \
    "$RNIC_IBDEV:$RNIC_GID_INDEX" "$RNIC_RXE_IBDEV:$RNIC_RXE_GID_INDEX"
