#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A verbs process killed in the middle of a transfer leaves the driver and
# the device usable.  First 100 cycles, 50 in each VM at once: an
# ib_write_bw pair over rnic0's own address (the device's loopback)
# streams, and SIGKILL hits the client, the server, or both at once, in
# turn; each cycle must have moved data before the kill.  Then across the
# VMs: VM 1's client is
# SIGKILLed while it streams to VM 0.  A fresh data-verifying ping-pong
# must pass, the host must find no object of a verbs program left in
# either device (QMP), and the kernel must not have warned.
#
# README command 2 runs the cycles as two tests side by side
# (tests/vm/meson.build): RNIC_KILL_CYCLES=FIRST-LAST picks this run's
# cycles of the 50, and RNIC_KILL_ACROSS=0 leaves the kill across the VMs
# to the other.  Unset, one boot runs it all.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-kill
args=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D 30)
cycles=${RNIC_KILL_CYCLES:-1-50}
first=${cycles%-*}
last=${cycles#*-}
case "$first:$last" in
    *[!0-9:]* | :* | *:) fail "RNIC_KILL_CYCLES '$cycles' is not FIRST-LAST" ;;
esac
[ "$first" -ge 1 ] && [ "$last" -le 50 ] && [ "$first" -le "$last" ] ||
    fail "RNIC_KILL_CYCLES '$cycles' is not within 1-50"

# Kill cycles over this VM's own device, each on a port of its own
# (test_port 101 to 150).
loopback_cycles() {
    lb=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -s 65536 -D 20)
    for c in $(seq "$first" "$last"); do
        port=$(test_port $((100 + c)))
        base=$(counter tx_pkts)
        # No timeout(1) wrapper: the kill must hit the verbs program.
        ib_write_bw "${lb[@]}" -p "$port" >/dev/null 2>&1 &
        srv=$!
        wait_listen "$port" || fail "cycle $c: the server never listened"
        ib_write_bw "${lb[@]}" -p "$port" "$RNIC_DATA_IP4" >/dev/null 2>&1 &
        cli=$!
        moved=0
        for _ in $(seq 1 100); do
            moved=$(($(counter tx_pkts) - base))
            [ "$moved" -gt 50 ] && break
            kill -0 "$cli" 2>/dev/null || break
            sleep 0.1
        done
        [ "$moved" -gt 50 ] || fail "cycle $c: no traffic ($moved packets)"
        case $((c % 3)) in
            0) kill -KILL "$cli" ;;
            1) kill -KILL "$srv" ;;
            2) kill -KILL "$cli" "$srv" ;;
        esac
        # The survivor sees its peer go and ends (with an error).
        for pid in "$srv" "$cli"; do
            for _ in $(seq 1 600); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null &&
                fail "cycle $c: a survivor still runs after 60 s"
            { wait "$pid"; } 2>/dev/null
        done
    done
    log "$((last - first + 1)) loopback cycles ($cycles) killed mid-transfer"
}

loopback_cycles
case $(role)-${RNIC_KILL_ACROSS:-1} in
    *-0)
        # Both VMs' cycles end before either checks the devices.
        if is_server; then
            signal_wait 1 600 >/dev/null || fail "VM 1's loopback cycles never ended"
        else
            signal_send peer 1 done 600 || fail "VM 0 unreachable"
        fi
        ;;
    server-*)
        signal_wait 1 600 >/dev/null || fail "VM 1's loopback cycles never ended"
        # The server fails once its peer is gone; only its exit matters.
        timeout 60 ib_write_bw "${args[@]}" || log "server ended ($?)"
        ;;
    client-*)
        signal_send peer 1 done 600 || fail "VM 0 unreachable"

        # The server may not listen yet: start the client until it streams
        # (or at least stays connected for 8 s).
        pid=""
        for _ in $(seq 1 30); do
            sleep 1
            base=$(counter tx_pkts)
            timeout 60 ib_write_bw "${args[@]}" "$RNIC_PEER_DATA_IP4" &
            pid=$!
            for _ in $(seq 1 16); do
                kill -0 "$pid" 2>/dev/null || break
                [ $(($(counter tx_pkts) - base)) -gt 100 ] && break
                sleep 0.5
            done
            kill -0 "$pid" 2>/dev/null && break
            wait "$pid"
            pid=""
        done
        [ -n "$pid" ] || fail "ib_write_bw never connected"
        sleep 2
        tx=$(($(counter tx_pkts) - base))
        pkill -KILL -x ib_write_bw || fail "no ib_write_bw to kill"
        wait "$pid"
        log "killed the client after it sent $tx packets"
        [ "$tx" -gt 100 ] || fail "the transfer had not started"
        ;;
esac
RNIC_NO_RPING=1 rnic-pingpong 100 4096 || fail "ping-pong after the kill failed"
rnic-host-check objects-idle
fail_on_kernel_warnings "kernel warnings after the kill"
log "OK on $(hostname)"
