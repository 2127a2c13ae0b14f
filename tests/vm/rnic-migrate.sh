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
me=rnic-migrate
bw=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D 40 -p 18600 --report_gbits)
pp=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -c -n "${RNIC_MIGRATE_PP_ITERS:-12000}" -s 4096 -p 18601)
bw_out=/tmp/$me-bw.out
pp_out=/tmp/$me-pp.out

# The programs' results: exit status 0, ping-pong data verified, a
# positive bandwidth from ib_write_bw.
check_results() {
    local bw_rc=$1 pp_rc=$2
    echo "$me: ib_write_bw:"; cat "$bw_out"
    echo "$me: ibv_rc_pingpong:"; cat "$pp_out"
    [ "$bw_rc" = 0 ] || fail "ib_write_bw exited with $bw_rc"
    [ "$pp_rc" = 0 ] || fail "ibv_rc_pingpong exited with $pp_rc"
    grep -q "invalid data" "$pp_out" && fail "ping-pong data did not verify"
    gbits=$(awk '$1 == 65536 && NF >= 5 { print $4 }' "$bw_out" | tail -1)
    awk -v g="${gbits:-0}" 'BEGIN { exit !(g > 0) }' ||
        fail "ib_write_bw reported no bandwidth (${gbits:-none})"
    echo "$me: ib_write_bw averaged $gbits Gb/s across the switch"
}

counters() {
    local d=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters c out=""
    for c in tx_pkts rx_pkts retransmits ack_timeouts seq_nak_sent seq_nak_rcvd \
             duplicate_request rx_dropped tail_probes; do
        out+=" $c=$(cat "$d/$c")"
    done
    echo "$out"
}

case $RNIC_VM_INDEX in
0)
    fail() { echo "$me: FAILED: $*"; exit 1; }
    timeout 300 ib_write_bw "${bw[@]}" >"$bw_out" 2>&1 &
    bw_pid=$!
    timeout 300 ibv_rc_pingpong "${pp[@]}" >"$pp_out" 2>&1 &
    pp_pid=$!
    wait "$bw_pid"; bw_rc=$?
    wait "$pp_pid"; pp_rc=$?
    check_results "$bw_rc" "$pp_rc"
    RNIC_NO_RPING=1 rnic-pingpong 200 4096 || fail "ping-pong after the switch failed"
    word=$(rnic-signal wait 7501 300) || fail "no word from VM 1"
    [ "$word" = ok ] || fail "VM 1 ended $word"
    echo "$me: counters:$(counters)"
    ;;
1)
    fail() {
        echo "$me: FAILED: $*"
        rnic-signal send "$RNIC_VM0_IP4" 7501 failed 5
        exit 1
    }
    txc=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters/tx_pkts
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
    echo "$me: counters before the switch:$(counters)"
    # The launcher migrates the VM while this waits; the guest runs on.
    RNIC_HOST_CHECK_WAIT=${RNIC_MIGRATE_WAIT:-10} rnic-host-check migrate
    echo "$me: counters after the switch:$(counters)"
    for p in "$bw_pid" "$pp_pid"; do
        kill -0 "$p" 2>/dev/null ||
            fail "a program ended before the switch; give it more to do"
    done
    base=$(cat "$txc")
    wait "$bw_pid"; bw_rc=$?
    wait "$pp_pid"; pp_rc=$?
    sent=$(($(cat "$txc") - base))
    echo "$me: $sent packets sent after the switch; counters:$(counters)"
    check_results "$bw_rc" "$pp_rc"
    [ "$sent" -gt 100 ] || fail "only $sent packets sent after the switch"
    RNIC_NO_RPING=1 rnic-pingpong 200 4096 || fail "ping-pong after the switch failed"
    rnic-signal send "$RNIC_VM0_IP4" 7501 ok || fail "VM 0 unreachable"
    ;;
*) exit 0 ;;
esac
if dmesg | grep -E "WARNING|BUG:|Oops|general protection"; then
    fail "kernel warnings"
fi
echo "$me: OK on $(hostname)"
