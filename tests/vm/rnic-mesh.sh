#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Three VMs over rnic on one segment.  (a) A full mesh of RC connections at
# once: every VM serves both others and connects to both others, each
# ordered pair with ibv_rc_pingpong -c (SEND/RECV, every buffer checked)
# and with rping -V (RDMA READ, WRITE and SEND, every round compared), all
# twelve connections running at the same time; every process must exit 0
# and report all of its iterations.  (b) One multicast group joined by all
# three: in turn each VM sends with mckey and the other two must each
# receive the whole count (the sender repeats its burst until both
# receivers have told it over the management network how they ended).
# The VMs are joined by a host Linux bridge (--net tap, as root): on the
# multicast hub, the default for three VMs, the mesh loses so many frames
# that an rping server now and then never sees its client's disconnect.
# vmlaunch: -n 3 --rnic --net tap --timeout 600
set -u
. rnic-test-lib rnic-mesh
[ "${RNIC_NVMS:-}" = 3 ] || fail "needs 3 VMs, has ${RNIC_NVMS:-?}"
me=$RNIC_VM_INDEX
mine=$RNIC_DATA_IP4
others=$(seq 0 2 | grep -vx "$me")
data_ip() { local v=RNIC_VM$1_DATA_IP4; echo "${!v}"; }
logs=$(mktemp -d)

# rping -v prints every round's buffer: keep that one small.
iters=3000 pings=1000
pp=(-d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -e -c -n "$iters" -s 16384)
rp=(-v -V -C "$pings" -S 4096)
# VM s serving VM c listens on test port 10s+c (ibv_rc_pingpong) and
# 100+10s+c (rping).
pp_port() { test_port $((10 * $1 + $2)); }
rping_port() { test_port $((100 + 10 * $1 + $2)); }

# until_connected COMMAND...: a client whose server, in a VM that may boot
# later, is not up or listening yet: only a failure to reach it is tried
# again.
unreached="(ADDR_ERROR|ROUTE_ERROR|REJECTED|UNREACHABLE)"
until_connected() {
    local rc out
    out=$(mktemp)
    for _ in $(seq 1 60); do
        "$@" >"$out" 2>&1
        rc=$?
        cat "$out"
        [ $rc != 0 ] || break
        grep -qE "Couldn't connect to [0-9.]+:|RDMA_CM_EVENT_$unreached" "$out" || break
        sleep 2
    done
    rm -f "$out"
    return $rc
}

# start NAME COMMAND...: COMMAND in the background, its output in $logs/NAME.
declare -A pid
start() {
    local name=$1
    shift
    "$@" >"$logs/$name" 2>&1 &
    pid[$name]=$!
}

# check NAME PATTERN COUNT: NAME exited 0, printed COUNT lines matching
# PATTERN, and reported no invalid data.
bad=0
check() {
    local name=$1 pattern=$2 count=$3 rc n
    wait "${pid[$name]}"
    rc=$?
    n=$(grep -cE "$pattern" "$logs/$name")
    if [ $rc = 0 ] && [ "$n" = "$count" ] && ! grep -q "invalid data" "$logs/$name"; then
        log "$name OK"
    else
        log "$name FAILED (exit $rc, $n of $count lines /$pattern/):"
        tail -n 20 "$logs/$name"
        bad=1
    fi
}

# (a) The mesh: both servers first, then both clients.
for p in $others; do
    start pp-serving-$p timeout 150 ibv_rc_pingpong "${pp[@]}" -p "$(pp_port "$me" "$p")"
    start rping-serving-$p timeout 150 rping -s -a "$mine" -p "$(rping_port "$me" "$p")" "${rp[@]}"
done
for p in $others; do
    start pp-to-$p until_connected timeout 120 ibv_rc_pingpong "${pp[@]}" \
        -p "$(pp_port "$p" "$me")" "$(data_ip "$p")"
    start rping-to-$p until_connected timeout 120 rping -c -a "$(data_ip "$p")" \
        -p "$(rping_port "$p" "$me")" "${rp[@]}"
done
for p in $others; do
    check pp-serving-$p "^$iters iters in" 1
    check pp-to-$p "^$iters iters in" 1
    check rping-serving-$p "^server ping data: rdma-ping-" $pings
    check rping-to-$p "^ping data: rdma-ping-" $pings
done
[ $bad = 0 ] || { grep . "$(counter_dir)"/*; fail "mesh of RC connections"; }
log "mesh OK on $(hostname) in ${SECONDS}s: 4 connections served, 4 made" \
    "($(counter retransmits) retransmits)"

# (b) Multicast: round r, VM r sends and the others receive.  Receiver v
# answers on test port 200+10r+v of VM r's management address; a receiver
# of round r that also received in round r-1 first waits (test port
# 300+r-1) for that round's sender to stop, so its last messages do not
# count here.
group=239.1.2.10
for r in 0 1 2; do
    if [ "$r" = "$me" ]; then
        declare -A waiter=()
        for v in $others; do
            signal_wait $((200 + 10 * r + v)) 240 >"$logs/mc-word-$v" &
            waiter[$v]=$!
        done
        sends=0
        # kill -0 with several ids succeeds while any of them runs.
        while kill -0 "${waiter[@]}" 2>/dev/null; do
            timeout 60 mckey -m $group -b "$mine" -s -C 10 >"$logs/mc-send" 2>&1 ||
                { cat "$logs/mc-send"; fail "mckey sender"; }
            sends=$((sends + 1))
            sleep 1
        done
        for v in $others; do
            wait "${waiter[$v]}"
            word=$(cat "$logs/mc-word-$v")
            [ "$word" = ok ] || fail "multicast receiver VM $v said '$word'"
        done
        log "multicast from $(hostname) reached both others ($sends bursts of 10)"
        [ "$r" -lt 2 ] && { signal_send $(((r + 2) % 3)) $((300 + r)) over 240 ||
            fail "telling VM $(((r + 2) % 3)) that round $r is over"; }
    else
        if [ "$r" -gt 0 ] && [ $((r - 1)) != "$me" ]; then
            signal_wait $((300 + r - 1)) 300 >/dev/null || fail "no end of round $((r - 1))"
        fi
        timeout 120 mckey -m $group -b "$mine" -C 10 >"$logs/mc-recv" 2>&1
        rc=$?
        word=fail
        [ $rc = 0 ] && grep -q "data transfers complete" "$logs/mc-recv" && word=ok
        signal_send "$r" $((200 + 10 * r + me)) $word 240 ||
            fail "telling VM $r how round $r ended"
        [ $word = ok ] || { cat "$logs/mc-recv"; fail "mckey receiver, round $r (exit $rc)"; }
        log "multicast from VM $r received on $(hostname)"
    fi
done

rnic-dmesg-check || fail "kernel log"
log "OK on $(hostname)"
