#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Device-side faults the host injects, as a verbs program and the driver
# see them, in one VM over the device's loopback:
# 1. wc-error: the launcher arms one RETRY_EXC_ERR completion (QMP
#    rnic-inject-fault); ibv_rc_pingpong must fail with exactly that
#    status, and the next run, the fault spent, must verify every byte.
# 2. irq-drop: the next MSI-X message is not sent; ibv_rc_pingpong -e,
#    which sleeps on completion events, must still verify every byte, and
#    the driver's watchdog must count the recovery (irq_recovered).  Then
#    three messages are lost under a streaming ib_send_bw -e, which must
#    finish, with the watchdog's count up again.
# 3. fatal: the device posts its fatal event and stops; the driver must
#    reset it, raise IB_EVENT_DEVICE_FATAL, and bring the device back by
#    itself as a new RDMA device, on which a ping-pong verifies.
# 4. cmd-stall: the command queue stops until a reset; the next verbs
#    program's command times out, the driver marks the device dead,
#    resets it and recovers as in 3.
# 5. cqe-corrupt on the kernel's GSI QP (QP 1), which carries rdma_cm's
#    connection MADs: the CQE names a work request the driver never
#    posted, with a garbage wr_id.  The driver must not call through it;
#    it must drop the CQE, reset the device and recover as in 3, and
#    rping must then connect and verify.
# 6. gid-change: the device changes, then drops, the GID entry the tests
#    use; the driver must set it back from the stack's table each time
#    (hw_counters/gid_restored) and a ping-pong must verify.  Then once
#    more under a running rping (rdma_cm): it carries on or ends with an
#    error, never hangs, and a new rping connects and verifies.
# 7. fatal under ib_write_bw: the streaming program must end with an
#    error, not hang, and a second ib_write_bw must run on the recovered
#    device.
# 8. cmd-stall under ib_write_bw: the same, through the command timeout
#    the program's teardown runs into.
# No kernel warning, BUG, oops or hung task at any point.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
. rnic-test-lib rnic-inject
. rnic-cycle-lib

# pingpong ITERS [ARGS...]: server and client of ibv_rc_pingpong on this
# device; the exit codes land in $srv_rc and $cli_rc, the outputs in /tmp.
pingpong() {
    local args=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "$1" -s 4096
                -p "$(test_port 1)" "${@:2}")

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

# 2. One lost interrupt under a program that waits for events.
before=$(counter irq_recovered)
RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject irq-drop count=1
pingpong 200 -e
[ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] ||
    fail "irq-drop: ping-pong with events failed: $(cat /tmp/server.out /tmp/client.out)"
grep -q "invalid data" /tmp/server.out /tmp/client.out &&
    fail "irq-drop: received data did not verify"
after=$(counter irq_recovered)
log "irq-drop: irq_recovered $before -> $after"
[ "$after" -gt "$before" ] || fail "irq-drop: the watchdog recovered nothing"
# ... and three under ib_send_bw -e, which streams and sleeps on events.
before=$after
timeout 120 ib_send_bw -d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -e -F -n 2000 \
    -s 4096 -p "$(test_port 6)" >/tmp/sbw-s.out 2>&1 &
sbw_srv=$!
wait_listen "$(test_port 6)" || fail "ib_send_bw did not listen"
RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject irq-drop count=3
timeout 120 ib_send_bw -d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -e -F -n 2000 \
    -s 4096 -p "$(test_port 6)" 127.0.0.1 >/tmp/sbw-c.out 2>&1 ||
    fail "irq-drop: ib_send_bw -e failed: $(tail -3 /tmp/sbw-c.out)"
wait "$sbw_srv" || fail "irq-drop: ib_send_bw -e server failed: $(tail -3 /tmp/sbw-s.out)"
after=$(counter irq_recovered)
log "irq-drop under ib_send_bw -e: irq_recovered $before -> $after"
[ "$after" -gt "$before" ] || fail "irq-drop: the watchdog recovered nothing under ib_send_bw"

# wait_recovered WHY: the driver logs the recovery, then the device is
# configured as at boot.
wait_recovered() {
    local _
    for _ in $(seq 1 150); do
        dmesg | grep -q "recovered from a fatal error" && break
        sleep 0.2
    done
    dmesg | grep "rnic" | tail -6
    dmesg | grep -q "$1" || fail "the driver did not log: $1"
    dmesg | grep -q "recovered from a fatal error" ||
        fail "the device did not come back after: $1"
    method=reset reload
}

# 3. The catastrophic error.
dmesg -C
RNIC_HOST_CHECK_WAIT=3 rnic-host-check inject fatal
wait_recovered "command queue dead (device fatal event)"
good_pingpong "after the fatal error"

# 4. A command queue that stalls until the reset.
dmesg -C
RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject cmd-stall
# Its first command waits out the driver's 5 s timeout, then fails.
timeout 60 ibv_rc_pingpong -d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -n 1 \
    -p "$(test_port 2)" >/tmp/stall.out 2>&1 &
stalled=$!
wait_recovered "command queue dead (timeout)"
kill "$stalled" 2>/dev/null
wait "$stalled"
good_pingpong "after the command stall"
# 5. A corrupt CQE on a kernel QP.
rping_pair() {
    timeout 60 rping -s -a "$RNIC_RNIC_IP4" -p "$(test_port 3)" -C 5 -V \
        >/tmp/rping-s.out 2>&1 &
    local server=$!
    sleep 1
    timeout 60 rping -c -a "$RNIC_RNIC_IP4" -p "$(test_port 3)" -C 5 -V \
        >/tmp/rping-c.out 2>&1
    rping_rc=$?
    wait "$server"
    rping_srv_rc=$?
}
dmesg -C
RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject cqe-corrupt qpn=1
rping_pair
log "cqe-corrupt: rping during the fault exited $rping_rc (server $rping_srv_rc)"
wait_recovered "command queue dead (CQE for a work request not posted)"
dmesg | grep -q "CQE names slot" || fail "cqe-corrupt: the driver did not report the CQE"
rping_pair
[ "$rping_rc" = 0 ] && [ "$rping_srv_rc" = 0 ] ||
    fail "cqe-corrupt: rping after the recovery failed: $(cat /tmp/rping-s.out /tmp/rping-c.out)"
log "cqe-corrupt: rping connected and verified after the recovery"
# 6. GID entries the device changes by itself.
before=$(counter gid_restored)
RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject gid-change \
    index="$RNIC_GID_INDEX" gid=::ffff:192.0.2.99
good_pingpong "after the device changed GID $RNIC_GID_INDEX"
RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject gid-change \
    index="$RNIC_GID_INDEX" remove=true
good_pingpong "after the device dropped GID $RNIC_GID_INDEX"
# ... and under rdma_cm: the entry rping's connection uses changes while
# rping runs; rping must carry on through it or end with an error, never
# hang, and the entry must be back for the next connection.
timeout 120 rping -s -a "$RNIC_RNIC_IP4" -p "$(test_port 5)" -V -S 4096 \
    >/tmp/rping-gs.out 2>&1 &
gid_srv=$!
sleep 1
timeout 120 rping -c -a "$RNIC_RNIC_IP4" -p "$(test_port 5)" -V -S 4096 \
    >/tmp/rping-gc.out 2>&1 &
gid_cli=$!
sleep 2
kill -0 "$gid_cli" 2>/dev/null ||
    fail "gid-change: rping ended before the change: $(tail -3 /tmp/rping-gc.out)"
RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject gid-change \
    index="$RNIC_GID_INDEX" gid=::ffff:192.0.2.98
sleep 3
if kill -0 "$gid_cli" 2>/dev/null; then
    log "gid-change under rping: rping carried on through the change"
    kill "$gid_cli"
    wait "$gid_cli"
else
    wait "$gid_cli"
    rc=$?
    [ "$rc" != 124 ] || fail "gid-change: rping hung"
    grep -q "invalid data\|data mismatch" /tmp/rping-gc.out &&
        fail "gid-change: rping got wrong data"
    log "gid-change under rping: rping ended with status $rc: $(tail -1 /tmp/rping-gc.out)"
fi
kill "$gid_srv" 2>/dev/null
wait "$gid_srv"
grep -qi "mismatch\|invalid data" /tmp/rping-gs.out /tmp/rping-gc.out &&
    fail "gid-change: rping data did not verify"
rping_pair
[ "$rping_rc" = 0 ] && [ "$rping_srv_rc" = 0 ] ||
    fail "gid-change: rping after the change failed: $(cat /tmp/rping-s.out /tmp/rping-c.out)"
log "gid-change: rping connected and verified after the change"
after=$(counter gid_restored)
log "gid-change: gid_restored $before -> $after"
[ $((after - before)) -eq 3 ] || fail "gid-change: the driver restored $((after - before)) entries, not 3"
# 7. A fatal error under a streaming ib_write_bw.
bw_pair() {
    local args=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D "$1"
                -p "$(test_port 4)")
    timeout 90 ib_write_bw "${args[@]}" >/tmp/bw-s.out 2>&1 &
    bw_server=$!
    wait_listen "$(test_port 4)" || fail "ib_write_bw did not listen"
    timeout 90 ib_write_bw "${args[@]}" 127.0.0.1 >/tmp/bw-c.out 2>&1 &
    bw_client=$!
}
# bw_fault FAULT SECONDS WHY: FAULT injected SECONDS into a 20 s (fatal)
# or 4 s run; neither side may hang, the driver must log WHY and recover,
# and a second ib_write_bw must run.  Sets bw_crc and bw_src.
bw_fault() {
    dmesg -C
    bw_pair "$([ "$1" = fatal ] && echo 20 || echo 4)"
    sleep "$2"
    RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject "$1"
    wait "$bw_client"
    bw_crc=$?
    wait "$bw_server"
    bw_src=$?
    log "$1 under ib_write_bw: client exited $bw_crc, server $bw_src"
    [ "$bw_crc" != 124 ] && [ "$bw_src" != 124 ] ||
        fail "ib_write_bw hung after $1"
    wait_recovered "$3"
    bw_pair 3
    wait "$bw_client" || fail "ib_write_bw after $1: $(tail -3 /tmp/bw-c.out)"
    wait "$bw_server" || fail "ib_write_bw server after $1: $(tail -3 /tmp/bw-s.out)"
    log "$1 under ib_write_bw: the device came back, ib_write_bw ran again"
}
bw_fault fatal 6 "command queue dead (device fatal event)"
[ "$bw_crc" != 0 ] || [ "$bw_src" != 0 ] ||
    fail "ib_write_bw did not notice the fatal error"
# 8. A command stall under a streaming ib_write_bw: the data path needs
#    no command, so the stall shows when the program's teardown destroys
#    its objects; that command times out, the device is reset and comes
#    back, and neither side may hang.
bw_fault cmd-stall 2 "command queue dead (timeout)"
fail_on_kernel_warnings "kernel warnings during the injected faults" "hung_task|blocked for more"
log "OK: injected faults reached the verbs program and the driver, and both recovered"
