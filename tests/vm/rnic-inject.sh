#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Device-side faults the host injects, as a verbs program and the driver
# see them, in one VM over the device's loopback:
# 1. wc-error: the launcher arms one RETRY_EXC_ERR completion (QMP
#    rnic-inject-fault); ibv_rc_pingpong must fail with exactly that
#    status, and the next run, the fault spent, must verify every byte.
# 2. fatal: the device posts its fatal event and stops; the driver must
#    log it, reset the device and raise IB_EVENT_DEVICE_FATAL.  After
#    rmmod and modprobe a ping-pong must verify again.
# No kernel warning, BUG or oops at any point.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
. rnic-test-lib rnic-inject
. rnic-cycle-lib
method=rmmod

# pingpong ITERS: server and client of ibv_rc_pingpong on this device;
# the exit codes land in $srv_rc and $cli_rc, the outputs in /tmp.
pingpong() {
    local args=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "$1" -s 4096
                -p "$(test_port 1)")

    timeout 120 ibv_rc_pingpong "${args[@]}" >/tmp/server.out 2>&1 &
    local server=$!
    wait_listen "$(test_port 1)" || fail "the ping-pong server did not listen"
    timeout 120 ibv_rc_pingpong "${args[@]}" 127.0.0.1 >/tmp/client.out 2>&1
    cli_rc=$?
    wait "$server"
    srv_rc=$?
}

good_pingpong() {
    pingpong 200
    [ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] ||
        fail "$1: ping-pong failed: $(cat /tmp/server.out /tmp/client.out)"
    grep -q "invalid data" /tmp/server.out /tmp/client.out &&
        fail "$1: received data did not verify"
    log "$1: 200 x 4096 bytes verified"
}

good_pingpong "before any fault"

# 1. One completion of any QP fails with RETRY_EXC_ERR (status 12).
RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject wc-error status=retry-exc-err
pingpong 200
cat /tmp/server.out /tmp/client.out
[ "$srv_rc" != 0 ] || [ "$cli_rc" != 0 ] ||
    fail "wc-error: the ping-pong did not see the injected error"
grep -q "transport retry counter exceeded (12)" /tmp/server.out /tmp/client.out ||
    fail "wc-error: no completion with status RETRY_EXC_ERR (12)"
log "wc-error: the verbs program saw status 12"
good_pingpong "after wc-error"

# 2. The catastrophic error.
dmesg -C
RNIC_HOST_CHECK_WAIT=3 rnic-host-check inject fatal
for _ in $(seq 1 50); do
    dmesg | grep -q "command queue dead (device fatal event)" && break
    sleep 0.2
done
dmesg | grep "rnic" | tail -5
dmesg | grep -q "command queue dead (device fatal event)" ||
    fail "fatal: the driver did not see the device's fatal event"
# A verbs program on a dead device fails at once rather than hanging.
timeout 60 ibv_devinfo -d "$RNIC_IBDEV" >/dev/null 2>&1
log "fatal: ibv_devinfo on the dead device exited with $?"
timeout 120 rmmod rnic || fail "fatal: rmmod rnic failed"
reload
good_pingpong "after the fatal error and a reload"
fail_on_kernel_warnings "kernel warnings during the injected faults" "hung_task|blocked for more"
log "OK: injected faults reached the verbs program and the driver, and both recovered"
