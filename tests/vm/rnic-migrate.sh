#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Live migration under traffic: VM 1 is moved to a new QEMU (the launcher's
# "migrate" host check) while two verbs programs run against VM 0, an
# ib_write_bw stream of 64 KiB writes and a data-verifying
# ibv_rc_pingpong -c.  Both must end successfully: frames in flight at the
# switch are lost and RC retransmission has to recover them.  Afterwards a
# fresh ping-pong must work.  The guest cannot see the switch; the launcher
# fails the run when the migration did not complete or the device on the
# destination lost the programs' QPs.  The durations leave the programs
# running well past the switch (a migration takes a few seconds under TCG).
# vmlaunch: -n 2 --rnic --timeout 600
set -u
. rnic-test-lib rnic-migrate
bw=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D 40 -p "$(test_port 1)" --report_gbits)
pp=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "${RNIC_MIGRATE_PP_ITERS:-12000}" -s 4096 -p "$(test_port 2)")
bw_out=/tmp/rnic-migrate-bw.out
pp_out=/tmp/rnic-migrate-pp.out

# The programs' results: exit status 0, ping-pong data verified, a
# positive bandwidth from ib_write_bw.
check_results() {
    local bw_rc=$1 pp_rc=$2
    log "ib_write_bw:"; cat "$bw_out"
    log "ibv_rc_pingpong:"; cat "$pp_out"
    [ "$bw_rc" = 0 ] || fail "ib_write_bw exited with $bw_rc"
    [ "$pp_rc" = 0 ] || fail "ibv_rc_pingpong exited with $pp_rc"
    grep -q "invalid data" "$pp_out" && fail "ping-pong data did not verify"
    gbits=$(awk '$1 == 65536 && NF >= 5 { print $4 }' "$bw_out" | tail -1)
    awk -v g="${gbits:-0}" 'BEGIN { exit !(g > 0) }' ||
        fail "ib_write_bw reported no bandwidth (${gbits:-none})"
    log "ib_write_bw averaged $gbits Gb/s across the switch"
}

counters() {
    local c out=""
    for c in tx_pkts rx_pkts retransmits ack_timeouts seq_nak_sent seq_nak_rcvd \
             duplicate_request rx_dropped tail_probes; do
        out+=" $c=$(counter "$c")"
    done
    echo "$out"
}

case $(role) in
server)
    timeout 300 ib_write_bw "${bw[@]}" >"$bw_out" 2>&1 &
    bw_pid=$!
    timeout 300 ibv_rc_pingpong "${pp[@]}" >"$pp_out" 2>&1 &
    pp_pid=$!
    wait "$bw_pid"; bw_rc=$?
    wait "$pp_pid"; pp_rc=$?
    check_results "$bw_rc" "$pp_rc"
    RNIC_NO_RPING=1 rnic-pingpong 200 4096 || fail "ping-pong after the switch failed"
    word=$(signal_wait 3 300) || fail "no word from VM 1"
    [ "$word" = ok ] || fail "VM 1 ended $word"
    log "counters:$(counters)"
    ;;
client)
    # VM 0 waits for word of how this side ended, a failure too.
    on_fail() { signal_send 0 3 failed 5; }
    sleep 1
    # The servers in VM 0 may not listen yet.  Line-buffered: the loop
    # below reads when they connected.
    rnic-retry 30 1 timeout 300 stdbuf -oL ib_write_bw "${bw[@]}" "$RNIC_PEER_DATA_IP4" >"$bw_out" 2>&1 &
    bw_pid=$!
    rnic-retry 30 1 timeout 300 stdbuf -oL ibv_rc_pingpong "${pp[@]}" "$RNIC_PEER_DATA_IP4" >"$pp_out" 2>&1 &
    pp_pid=$!
    # Both connected (their QPs exist and move data) before the switch.
    for _ in $(seq 1 60); do
        grep -q "remote address" "$bw_out" && grep -q "remote address" "$pp_out" && break
        sleep 1
    done
    grep -q "remote address" "$bw_out" || fail "ib_write_bw did not connect"
    grep -q "remote address" "$pp_out" || fail "ibv_rc_pingpong did not connect"
    sleep 5
    log "counters before the switch:$(counters)"
    # The launcher migrates the VM while this waits; the guest runs on.
    RNIC_HOST_CHECK_WAIT=${RNIC_MIGRATE_WAIT:-10} rnic-host-check migrate
    log "counters after the switch:$(counters)"
    for p in "$bw_pid" "$pp_pid"; do
        kill -0 "$p" 2>/dev/null ||
            fail "a program ended before the switch; give it more to do"
    done
    base=$(counter tx_pkts)
    wait "$bw_pid"; bw_rc=$?
    wait "$pp_pid"; pp_rc=$?
    sent=$(($(counter tx_pkts) - base))
    log "$sent packets sent after the switch; counters:$(counters)"
    check_results "$bw_rc" "$pp_rc"
    [ "$sent" -gt 100 ] || fail "only $sent packets sent after the switch"
    RNIC_NO_RPING=1 rnic-pingpong 200 4096 || fail "ping-pong after the switch failed"
    signal_send 0 3 ok || fail "VM 0 unreachable"
    ;;
*) exit 0 ;;
esac
fail_on_kernel_warnings "kernel warnings"
log "OK on $(hostname)"
