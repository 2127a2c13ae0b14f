#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# 20 function-level resets under traffic (`echo 1 > .../reset`, which
# Linux does through the device's PM capability: D3hot then D0).  Odd
# cycles reset VM 1's device under an ib_write_bw sender, even cycles VM
# 0's under an ib_send_bw receiver.  The driver lets go of the device
# before the reset and probes it again after: the program on that side
# must exit with an error, not hang, the RDMA and network devices must
# come back, and a data-verifying ping-pong must pass each time.  At the
# end a full ping-pong (with rping), no object of a verbs program left in
# the device as the host sees it (QMP), and no kernel warning.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-flr
. rnic-cycle-lib

bdf=$(basename "$(readlink -f "/sys/class/infiniband/$RNIC_IBDEV/device")")
methods=$(cat "/sys/bus/pci/devices/$bdf/reset_method" 2>/dev/null)
[ -e "/sys/bus/pci/devices/$bdf/reset" ] ||
    fail "$bdf has no reset (methods: ${methods:-none})"
log "$bdf resets by: $methods"
mapfile -t specs < <(alternating_specs 20 reset)
run_cycles "${specs[@]}"
cycles_end
