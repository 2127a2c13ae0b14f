#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# An InfiniBand fabric of three HCAs through the emulated switch
# (--fabric ib -n 3: contrib/rnic-ibswitch, one port per VM), with
# Debian's opensm and infiniband-diags, unmodified.  opensm in VM 0 finds
# the switch and the three HCAs, programs the switch's forwarding tables
# and brings every port ACTIVE.  VM 0 then checks the fabric as a user
# would: ibnetdiscover (one switch, three CAs, each on its own switch
# port), iblinkinfo, every LID unique and non-zero, smpquery of the
# switch, ibtracert through it, ibping of VM 1.  VM 1 and VM 2 talk
# through the switch by LID (ibv_rc_pingpong -c) and over IPoIB, whose
# broadcast group the SM put in the switch's multicast table (ping, and
# rping -V over the RDMA CM).  Last, the SM is restarted while ib_send_bw
# runs between VM 1 and VM 2: the connection carries on and the new
# SM's sweep leaves every LID where it was.  Last, VM 2 powers off: the
# switch tells the SM with trap 128, and the SM's sweep drops VM 2.
# vmlaunch: -n 3 --rnic --fabric ib --timeout 1200
set -u
. rnic-test-lib rnic-ib-fabric
. rnic-ib-lib
dev=$RNIC_IBDEV
port=$ib_port
out=$(mktemp)
me=$RNIC_VM_INDEX

on_fail() {
    ibstat "$dev" 2>&1 || true
    [ -f /var/log/opensm.log ] && grep -a "ERR" /var/log/opensm.log | tail -n 20
    # What the device dropped, retried or timed out on.
    grep -H . "$(counter_dir)"/ib_* "$(counter_dir)"/rx_dropped \
        "$(counter_dir)"/retransmits "$(counter_dir)"/ack_timeouts 2>/dev/null
    true
}

# ib_send_bw's QPs wait 1 s (-u 18) for an ACK, not perftest's 67 ms:
# five QEMUs and the switch share two host cores here, and a VM that gets
# no CPU for half a second would otherwise exhaust the requester's retries
# whatever the SM does.  The traffic still has to outlast the restart.
SEND_BW_ARGS=(-D 20 -u 18)

# Waits until the SA knows the whole fabric, the switch and three CAs:
# the SM has swept it.
wait_swept() {
    local i
    for i in $(seq 1 300); do
        [ "$(timeout 30 saquery -N 2>/dev/null | grep -c NodeRecord)" = 4 ] && return 0
        sleep 1
    done
    return 1
}

finish() {
    local n
    for n in ib_rx_dlid_errors ib_rx_pkey_errors; do
        [ "$(counter $n)" = 0 ] || fail "$n is $(counter $n)"
    done
    rnic-dmesg-check || fail "kernel warnings or rnic errors"
    log "all passed on $(hostname)"
}

[ "$(cat "$port/link_layer")" = InfiniBand ] || fail "$dev is not InfiniBand"

case $me in
0)
    ib_start_sm
    ib_wait_active 300 || fail "port not ACTIVE after 300 s of opensm"
    wait_swept || fail "opensm never found the whole fabric"
    lids=$(ib_lid)
    for v in 1 2; do
        l=$(signal_wait "$v" 600) || fail "no word from VM $v"
        lids="$lids $l"
    done
    log "LIDs of VM 0, 1, 2: $lids"
    # shellcheck disable=SC2086
    set -- $lids
    for l in "$@"; do
        [ "$l" -gt 0 ] || fail "a port is ACTIVE without a LID ($lids)"
    done
    [ "$(printf '%s\n' "$@" | sort -u | wc -l)" = 3 ] || fail "LIDs not unique: $lids"

    timeout 60 ibnetdiscover >"$out" 2>&1 || { cat "$out"; fail "ibnetdiscover"; }
    [ "$(grep -c '^Switch' "$out")" = 1 ] && [ "$(grep -c '^Ca' "$out")" = 3 ] ||
        { cat "$out"; fail "ibnetdiscover: not one switch and three CAs"; }
    sw_lid=$(sed -n 's/^Switch.*base port 0 lid \([0-9]*\) .*/\1/p' "$out")
    [ -n "$sw_lid" ] && [ "$sw_lid" -gt 0 ] || { cat "$out"; fail "the switch has no LID"; }
    for l in "$@"; do
        [ "$l" != "$sw_lid" ] || fail "switch and CA share LID $l"
    done
    # Each CA on a switch port of its own, ports 1..3.
    [ "$(grep -cE '^\[[123]\][[:space:]]+"H-' "$out")" = 3 ] ||
        { cat "$out"; fail "ibnetdiscover: the switch's ports do not lead to three CAs"; }
    log "ibnetdiscover: switch (LID $sw_lid) with three CAs on ports 1, 2, 3"
    timeout 60 iblinkinfo >"$out" 2>&1 || { cat "$out"; fail "iblinkinfo"; }
    [ "$(grep -c 'Active/  LinkUp' "$out")" -ge 6 ] ||
        { cat "$out"; fail "iblinkinfo: not every link Active"; }
    timeout 60 smpquery switchinfo "$sw_lid" >"$out" 2>&1 ||
        { cat "$out"; fail "smpquery switchinfo"; }
    grep -q "LinearFdbTop" "$out" || { cat "$out"; fail "smpquery switchinfo: no LFT"; }
    timeout 60 ibtracert "$1" "$3" >"$out" 2>&1 || { cat "$out"; fail "ibtracert $1 $3"; }
    grep -q "rnic-ibswitch" "$out" || { cat "$out"; fail "ibtracert: not through the switch"; }
    log "ibtracert $1 -> $3: $(grep -c '^\[' "$out") hops, through the switch"
    timeout 60 ibping -c 5 -L "$2" >"$out" 2>&1 || { cat "$out"; fail "ibping VM 1"; }
    grep -q "5 packets transmitted, 5 received" "$out" || { cat "$out"; fail "ibping: losses"; }
    log "ibping VM 1: $(grep -o '[0-9]* packets transmitted.*loss' "$out")"
    signal_send 1 3 go 600 || fail "VM 1 did not hear"
    signal_send 2 3 go 600 || fail "VM 2 did not hear"

    ipoib_up
    rnic-retry 30 2 ping -c 3 -W 5 "$(ipoib_addr 2)" >"$out" 2>&1 ||
        { cat "$out"; fail "ping VM 2 over IPoIB through the switch"; }
    log "IPoIB to VM 2: $(grep -E 'packets transmitted' "$out")"

    # The SM goes away and comes back while VM 1 and VM 2 move data.
    signal_wait 4 600 >/dev/null || fail "VM 2 did not start its traffic"
    pkill -x opensm || fail "opensm was not running"
    sleep 2
    ib_start_sm
    wait_swept || fail "the restarted opensm never swept the fabric"
    for l in "$@"; do
        timeout 60 smpquery portinfo "$l" 1 >"$out" 2>&1 ||
            { cat "$out"; fail "smpquery portinfo $l after the restart"; }
        grep -q "^Lid:\.*$l$" "$out" && grep -q "LinkState:.*Active" "$out" ||
            { cat "$out"; fail "LID $l moved or went down in the new sweep"; }
    done
    log "SM restarted: LIDs $* in place, every port Active"
    signal_send 2 5 restarted 600 || fail "VM 2 did not hear"
    signal_wait 6 600 >/dev/null || fail "VM 2 did not finish"

    # VM 2 powers off: its switch port's link goes down, the switch sends
    # the SM trap 128, and the SM's sweep drops VM 2 from the fabric.
    line=$(ib_sm_trap 128 "$sw_lid" 120) || fail "opensm logged no trap 128 from the switch"
    log "opensm: $line"
    for _ in $(seq 1 120); do
        [ "$(timeout 30 saquery -N 2>/dev/null | grep -c NodeRecord)" = 3 ] && break
        sleep 1
    done
    timeout 60 ibnetdiscover >"$out" 2>&1 || { cat "$out"; fail "ibnetdiscover"; }
    [ "$(grep -c '^Ca' "$out")" = 2 ] || { cat "$out"; fail "VM 2 still in the fabric"; }
    timeout 30 saquery -N >"$out" 2>&1
    [ "$(grep -c NodeRecord "$out")" = 3 ] || { cat "$out"; fail "the SA still has VM 2"; }
    log "trap 128: the SM swept VM 2 out; the switch and two CAs remain"
    signal_send 1 7 done 600 || fail "VM 1 did not hear"
    ;;
1)
    ib_wait_active 300 || fail "port not ACTIVE after 300 s"
    timeout 900 ibping -S >/dev/null 2>&1 &
    signal_send 0 1 "$(ib_lid)" 600 || fail "VM 0 did not hear"
    signal_wait 3 600 >/dev/null || fail "no go from VM 0"
    ipoib_up
    timeout 300 ibv_rc_pingpong -d "$dev" -p "$(test_port 10)" -c -n 200 -s 4096 \
        >"$out" 2>&1 || { cat "$out"; fail "ibv_rc_pingpong server"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "rc: data did not verify"; }
    timeout 300 rping -s -a "$(ipoib_addr 1)" -p "$(test_port 11)" -V -C 20 \
        -S 4096 >"$out" 2>&1 || { cat "$out"; fail "rping server"; }
    timeout 300 ib_send_bw -d "$dev" -p "$(test_port 12)" "${SEND_BW_ARGS[@]}" \
        >"$out" 2>&1 || { cat "$out"; fail "ib_send_bw server across the SM restart"; }
    kill %1 2>/dev/null
    # Up, its link too, until VM 0 has seen VM 2 leave the fabric.
    signal_wait 7 600 >/dev/null || fail "VM 0 did not finish"
    ;;
2)
    ib_wait_active 300 || fail "port not ACTIVE after 300 s"
    signal_send 0 2 "$(ib_lid)" 600 || fail "VM 0 did not hear"
    signal_wait 3 600 >/dev/null || fail "no go from VM 0"
    ipoib_up
    rnic-retry 60 2 timeout 120 ibv_rc_pingpong -d "$dev" -p "$(test_port 10)" \
        -c -n 200 -s 4096 "$RNIC_VM1_IP4" >"$out" 2>&1 ||
        { cat "$out"; fail "ibv_rc_pingpong -c through the switch"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "rc: data did not verify"; }
    log "ibv_rc_pingpong -c to VM 1 through the switch: 200 x 4096 bytes verified"
    rnic-retry 30 2 timeout 120 rping -c -a "$(ipoib_addr 1)" -p "$(test_port 11)" \
        -V -C 20 -S 4096 >"$out" 2>&1 || { cat "$out"; fail "rping -V over IPoIB"; }
    log "rping -V to VM 1 over IPoIB: 20 x 4096 bytes verified"

    signal_wait 5 600 >"$out.sm" &
    waiter=$!
    (sleep 3; signal_send 0 4 started 600) &
    rnic-retry 60 2 timeout 300 ib_send_bw -d "$dev" -p "$(test_port 12)" "${SEND_BW_ARGS[@]}" \
        "$RNIC_VM1_IP4" >"$out" 2>&1 || { cat "$out"; fail "ib_send_bw across the SM restart"; }
    grep -qE '^ *65536 +[0-9]+' "$out" || { cat "$out"; fail "ib_send_bw printed no result"; }
    # The restart must have happened while the traffic ran, not after.
    kill -0 "$waiter" 2>/dev/null &&
        fail "the SM restart did not end within ib_send_bw's 20 s"
    wait "$waiter" || fail "VM 0 did not restart its SM"
    [ "$(cat "$out.sm")" = restarted ] || fail "VM 0: $(cat "$out.sm")"
    log "ib_send_bw to VM 1 ran 20 s across the SM restart: $(grep -E '^ *65536' "$out" | tr -s ' ')"
    finish
    signal_send 0 6 done 600 || fail "VM 0 did not hear"
    # Report now: nothing runs after the power goes, which VM 0 checks.
    echo "RNIC-EXIT-STATUS=0"
    sleep 0.2
    echo o >/proc/sysrq-trigger
    sleep 60
    ;;
*)
    fail "a fourth VM has nothing to do here"
    ;;
esac
finish
