#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-core's pyverbs suite on rnic0 and, in the same VM, on rxe0 (Soft-RoCE
# on the virtio-net interface) as the baseline.  Fails on any rnic failure
# or error and on any rnic skip that scripts/guest/rnic-pyverbs-skips.txt
# does not list with its reason (or that it lists but no longer happens).
# vmlaunch: -n 1 --rnic --rxe --mem 2048 --timeout 2400
set -u
mountpoint -q /dev/shm || mount -t tmpfs -o size=256m tmpfs /dev/shm
# 2 MiB huge pages for the huge-page MR tests.
echo 128 > /proc/sys/vm/nr_hugepages
ulimit -l unlimited
rnic-pyverbs --skips /opt/rnic/bin/rnic-pyverbs-skips.txt \
    --extra /opt/rnic/bin/test_rnic_srq_resize.py \
    --extra /opt/rnic/bin/test_rnic_timestamp.py \
    "$RNIC_IBDEV:$RNIC_GID_INDEX" "$RNIC_RXE_IBDEV:$RNIC_RXE_GID_INDEX"
