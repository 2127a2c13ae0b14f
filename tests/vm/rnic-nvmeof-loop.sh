#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics over rnic in one VM: target and host on the same rnic
# device, every frame looped back inside the device.  Same checks as
# rnic-nvmeof.sh.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
. rnic-test-lib rnic-nvmeof-loop

rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
rnic-nvme-host "$RNIC_DATA_IP4" || fail "host side"
rnic-nvmet down
c=$(counter_dir)
grep . "$c"/* | sed "s|$c/||"
lb=$(counter loopback_pkts)
log "$lb frames looped back"
[ "$lb" -gt 1000 ] || fail "the traffic did not go through the device"
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK"
