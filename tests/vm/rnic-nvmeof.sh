#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics over rnic between two VMs: nvmet-rdma exports a RAM
# disk on VM 0, nvme-rdma on VM 1 discovers, connects, runs fio with
# crc32c verification (4 KiB random, 128 KiB sequential), disconnects and
# connects again.  Neither kernel may warn or log an rnic error.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
fail() { echo "rnic-nvmeof: FAILED: $*"; exit 1; }

case $RNIC_VM_INDEX in
0)
    rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
    rnic-signal wait 7001 800 || fail "the host never reported back"
    rnic-nvmet down
    ;;
1)
    rnic-nvme-host "$RNIC_PEER_DATA_IP4"
    rc=$?
    rnic-signal send "$RNIC_VM0_IP4" 7001
    [ $rc -eq 0 ] || fail "host side"
    ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
echo "rnic-nvmeof: OK on $(hostname)"
