#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Loopback in one VM: two processes run ibv_rc_pingpong, ibv_uc_pingpong,
# ibv_ud_pingpong and ibv_srq_pingpong, all with -c, against each other
# on the same rnic device.  The device must deliver the packets itself
# (its loopback counter grows by at least one per message) and the data
# must verify.
# The VM has an emulated IOMMU (intel-iommu, intel_iommu=on), so every
# DMA of the device goes through the driver's DMA mappings as on a host
# with VT-d: a driver that handed the device physical addresses would
# fail here, and a device that bypassed translation would write the
# wrong pages.
# vmlaunch: -n 1 --rnic --timeout 600 --qemu-arg=-device --qemu-arg=intel-iommu,intremap=off --append=intel_iommu=on
set -u
. rnic-test-lib rnic-loopback
iters=200

dev=$(readlink -f "/sys/class/infiniband/$RNIC_IBDEV/device")
[ -e "$dev/iommu_group" ] ||
    fail "$(basename "$dev") is not behind the IOMMU: $(dmesg | grep -m3 -E 'DMAR|IOMMU')"
log "$(basename "$dev") is in IOMMU group $(basename "$(readlink "$dev/iommu_group")"): $(dmesg | grep -m1 -o 'DMAR: IOMMU enabled')"

# pingpong PROGRAM SIZE: one server and one client of PROGRAM.
pingpong() {
    local prog=$1 size=$2 before after
    local args=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "$iters" -s "$size")

    before=$(counter loopback_pkts)
    timeout 300 "$prog" "${args[@]}" >/tmp/server.out 2>&1 &
    server=$!
    sleep 1
    rnic-retry 30 1 timeout 120 "$prog" "${args[@]}" 127.0.0.1 \
        >/tmp/client.out 2>&1 || fail "$prog client failed: $(cat /tmp/client.out)"
    wait "$server" || fail "$prog server failed: $(cat /tmp/server.out)"
    cat /tmp/server.out
    grep -q "invalid data" /tmp/server.out /tmp/client.out &&
        fail "$prog: received data did not verify"
    after=$(counter loopback_pkts)
    log "$prog: loopback_pkts $before -> $after"
    [ $((after - before)) -ge $((2 * iters)) ] ||
        fail "$prog: the device did not loop the packets back ($before -> $after)"
    log "$prog OK: $iters x $size bytes verified"
}

pingpong ibv_rc_pingpong 4096
pingpong ibv_uc_pingpong 4096
# UD messages fit one MTU with the 40-byte GRH.
pingpong ibv_ud_pingpong 512
pingpong ibv_srq_pingpong 4096
fail_on_kernel_warnings "kernel warnings" "DMAR: \\[DMA|DMA fault"
log "OK: every pingpong verified through the device's loopback, behind the IOMMU"
