#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The driver can be removed under a running verbs program, again and
# again.  20 cycles of `rmmod rnic` and `modprobe rnic`: in odd cycles
# ib_write_bw streams from VM 1 to VM 0 and the rmmod runs in VM 1, under
# the sender; in even cycles ib_send_bw streams the same way and the rmmod
# runs in VM 0, under the receiver, whose posted receives are pending.
# Then 2 cycles in which the PCI function is removed through sysfs and
# found again by a rescan, the module staying loaded.  Each removal must
# complete within a timeout, the program on that side must exit with an
# error, and once the device is back a data-verifying ping-pong must pass.
# At the end a full ping-pong (with rping), no object of a verbs program
# left in the device as the host sees it (QMP), and no kernel warning.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-rmmod
. rnic-cycle-lib

mapfile -t specs < <(alternating_specs 20 rmmod)
specs+=("21:ib_write_bw:1:pci" "22:ib_send_bw:0:pci")
run_cycles "${specs[@]}"
cycles_end
