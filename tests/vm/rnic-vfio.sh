#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The manual is enough to write a driver.  VM 0 hands its rnic to
# vfio-pci and drives it with rnic-vfio (tests/vfio/rnic-vfio.c), a
# userspace driver written from docs/programming.md alone: reset and
# bring-up, the command queue, an EQ, CQ, PD, MR and an RC QP, polled
# completions.  VM 1 runs an ordinary verbs program on the kernel driver
# (rnic-vfio-peer).  Both VMs have an emulated IOMMU, so every DMA of
# both devices is translated: VFIO needs it (Debian's kernels have no
# no-IOMMU mode), and the kernel driver runs behind it too.
#   a. the peer SENDs 4 KiB to the VFIO driver, which checks it;
#   b. the VFIO driver SENDs 4 KiB, the peer checks it;
#   c. the VFIO driver RDMA WRITEs 4 KiB into the peer's buffer;
#   d. the VFIO driver RDMA READs 4 KiB from it;
#   e. the host makes the device fail the VFIO driver's next send WQE
#      (wc-error, RETRY_EXC_ERR): the driver must see that status.
# vmlaunch: -n 2 --rnic --timeout 600 --qemu-arg=-device --qemu-arg=intel-iommu,intremap=off --append=intel_iommu=on
set -u
. rnic-test-lib rnic-vfio
port=$(test_port 1)

case $(role) in
server)
    bdf=$(basename "$(readlink -f "/sys/class/infiniband/$RNIC_IBDEV/device")")
    [ -e "/sys/bus/pci/devices/$bdf/iommu_group" ] ||
        fail "$bdf has no IOMMU group: is the emulated IOMMU on?"
    # The emulated IOMMU runs without interrupt remapping (under KVM that
    # would need a split irqchip), and VFIO's type1 backend refuses to
    # attach a group on such a system unless told that MSI isolation may
    # be done without.  One trusted program in a test VM does not need it.
    modprobe vfio_iommu_type1 allow_unsafe_interrupts=1 ||
        fail "modprobe vfio_iommu_type1"
    modprobe vfio-pci || fail "modprobe vfio-pci"
    echo "$bdf" >"/sys/bus/pci/devices/$bdf/driver/unbind" ||
        fail "cannot unbind $bdf from the rnic driver"
    echo vfio-pci >"/sys/bus/pci/devices/$bdf/driver_override"
    echo "$bdf" >/sys/bus/pci/drivers_probe
    drv=$(basename "$(readlink "/sys/bus/pci/devices/$bdf/driver")")
    [ "$drv" = vfio-pci ] || fail "$bdf is bound to '$drv', not vfio-pci"
    log "$bdf is on vfio-pci, IOMMU group $(basename "$(readlink "/sys/bus/pci/devices/$bdf/iommu_group")")"
    signal_wait 1 300 || fail "the peer did not start"
    rm -f /tmp/inject-go
    timeout 240 rnic-vfio --pci "$bdf" --peer "$RNIC_PEER_IP4:$port" \
        --inject-file /tmp/inject-go >/tmp/vfio.out 2>&1 &
    vfio=$!
    for _ in $(seq 1 900); do
        grep -q 'waiting for injection' /tmp/vfio.out && break
        kill -0 "$vfio" 2>/dev/null || break
        sleep 0.2
    done
    qpn=$(sed -n 's/.*qpn=\([0-9]*\) waiting for injection.*/\1/p' /tmp/vfio.out)
    if [ -z "$qpn" ]; then
        cat /tmp/vfio.out
        fail "rnic-vfio did not reach the injection step"
    fi
    RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject wc-error qpn="$qpn" \
        status=retry-exc-err || fail "the host could not inject the error"
    touch /tmp/inject-go
    wait "$vfio"
    rc=$?
    cat /tmp/vfio.out
    [ "$rc" = 0 ] || fail "rnic-vfio exited $rc"
    for step in a b c d; do
        grep -q "rnic-vfio: step $step:" /tmp/vfio.out ||
            fail "rnic-vfio did not report step $step"
    done
    grep -iE 'injected error seen: .*retry' /tmp/vfio.out ||
        fail "rnic-vfio did not see the injected RETRY_EXC_ERR"
    grep -q 'rnic-vfio: OK' /tmp/vfio.out || fail "rnic-vfio did not finish"
    ;;
client)
    timeout 280 rnic-vfio-peer "$RNIC_IBDEV" "$port" >/tmp/peer.out 2>&1 &
    peer=$!
    wait_listen "$port" || { cat /tmp/peer.out; fail "the peer did not listen"; }
    signal_send 0 1 || fail "no signal to the VFIO VM"
    wait "$peer"
    rc=$?
    cat /tmp/peer.out
    [ "$rc" = 0 ] || fail "rnic-vfio-peer exited $rc"
    ;;
esac
fail_on_kernel_warnings "kernel warnings" "DMAR: \\[DMA|DMA fault|hung_task"
log "OK on $(hostname)"
