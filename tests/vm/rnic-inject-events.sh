#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The device faults a verbs program sees as events, injected into its own
# objects from the host, one VM over the device's loopback: the QP events
# (communication established, last WQE reached, QP fatal, request and
# access errors), the SRQ limit, a CQ error, an EQ overflow that loses a
# completion event, a late interrupt and a DMA write that fails.  For each,
# rnic-fault-events checks the event or completion status a program gets
# on real hardware and that its objects work again afterwards (see the
# program for the steps).  The EQ overflow also needs the driver: the
# event it lost was the one the program sleeps on, so the driver must
# wake the CQs of the overflowed EQ (hw_counters/eq_overflows).
# No kernel warning, BUG, oops or hung task at any point.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
. rnic-test-lib rnic-inject-events

timeout 400 rnic-fault-events "$RNIC_IBDEV" "$RNIC_GID_INDEX" ||
    fail "rnic-fault-events failed (status $?)"
fail_on_kernel_warnings "kernel warnings" "hung_task|blocked for more than"
log "OK on $(hostname)"
