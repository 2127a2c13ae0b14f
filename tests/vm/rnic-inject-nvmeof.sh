#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics through device faults the host injects on the
# target's rnic (VM 0), while the host (VM 1) runs fio with every block
# checked (crc32c):
# 1. fatal: the target's device stops; its driver resets it and brings
#    it back as a new device.  nvmet-rdma drops a port whose device went
#    away and does not listen again by itself (as after any RDMA device's
#    removal), so the target re-enables its port as an administrator
#    would; nvme-rdma on the host reconnects on its own.
# 2. port-flap: the target's link is down for 3 s (its port must be seen
#    DOWN, then ACTIVE again); the host's queues either ride it out by
#    retransmission (nvme-rdma's ACK timeout is about a second, seven
#    retries) or fail and reconnect.  An rping (rdma_cm, data verified)
#    runs across the flap too: it carries on or ends with an error, never
#    hangs, and a new rping connects and verifies after it.
# 3. cqe-corrupt on a queue of the target armed while the host is idle,
#    so that the queue's next completion is the receive of a command from
#    the SRQ (the target runs nvmet-rdma with use_srq=1 throughout): the
#    CQE names a slot of the SRQ that is not posted and a wr_id no one
#    gave.  The target's driver must drop it rather than call through
#    it, then reset and recover as in 1.
# 4. cmd-stall on the target: its command queue stops until a reset.
#    NVMe I/O issues no commands, so the target then starts a verbs
#    program, whose first command waits out the driver's 5 s timeout;
#    the driver marks the device dead, resets it and recovers as in 1,
#    while fio keeps running on the host.
# fio must finish each phase with no error and no bad block, the host
# must have reconnected in phases 1, 3 and 4, and neither kernel may
# warn, oops or leave a task hung.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-inject-nvmeof
. rnic-cycle-lib
nqn=rnic-nvmet
# A failure shows what the kernel said last.
on_fail() { echo w >/proc/sysrq-trigger; sleep 1; dmesg | tail -n 60; }

# The target's device came back after its N-th recovery: its port
# listens again.
target_back() {
    local n=$1
    for _ in $(seq 1 150); do
        [ "$(dmesg | grep -c "recovered from a fatal error")" -ge "$n" ] && break
        sleep 0.2
    done
    [ "$(dmesg | grep -c "recovered from a fatal error")" -ge "$n" ] ||
        fail "the target's device did not come back"
    method=reset reload
    # Unlinking the subsystem disables the port, linking enables it.
    cfg=/sys/kernel/config/nvmet
    rm -f "$cfg/ports/1/subsystems/$nqn"
    ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" ||
        fail "re-enabling the target's port"
}

case $(role) in
server)
    # Kernel SRQs: every queue of the target receives from one.
    modprobe nvmet-rdma use_srq=1 || fail "modprobe nvmet-rdma use_srq=1"
    rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
    signal_wait 1 300 || fail "the host did not start phase 1"
    sleep 3
    RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject fatal
    target_back 1
    signal_wait 2 300 || fail "the host did not finish phase 1"
    # Phase 2's rping server, for every connection until it is killed.
    timeout 300 rping -s -P -a "$RNIC_DATA_IP4" -p "$(test_port 8)" -V -S 4096 \
        >/tmp/rping-s.out 2>&1 &
    rping_srv=$!
    signal_wait 3 300 || fail "the host did not start phase 2"
    sleep 3
    RNIC_HOST_CHECK_WAIT=0 rnic-host-check inject port-flap down-ms=3000
    port=/sys/class/infiniband/$RNIC_IBDEV/ports/1/state
    for _ in $(seq 1 50); do
        grep -q DOWN "$port" && break
        sleep 0.1
    done
    grep -q DOWN "$port" || fail "the port never went down: $(cat "$port")"
    for _ in $(seq 1 150); do
        grep -q ACTIVE "$port" && break
        sleep 0.1
    done
    grep -q ACTIVE "$port" || fail "the port did not come back: $(cat "$port")"
    log "port-flap: the port went DOWN and came back ACTIVE"
    signal_wait 4 300 || fail "the host did not finish phase 2"
    kill "$rping_srv" 2>/dev/null
    wait "$rping_srv"
    grep -qi "mismatch\|invalid data" /tmp/rping-s.out &&
        fail "phase 2: the rping server saw data that did not verify"
    signal_wait 5 300 || fail "the host did not get idle for phase 3"
    # Every RC QP here is nvmet-rdma's; none has a command outstanding.
    qpn=$(rdma resource show qp link "$RNIC_IBDEV/1" 2>/dev/null |
          awk '/type RC/ { for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }' |
          sort -n | head -n1)
    [ -n "$qpn" ] || fail "no nvmet-rdma QP: $(rdma resource show qp link "$RNIC_IBDEV/1")"
    log "cqe-corrupt on QP $qpn"
    dmesg -C
    RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject cqe-corrupt qpn="$qpn"
    signal_send 1 7 || fail "phase 3: no signal to the host"
    target_back 1
    dmesg | grep -E "QP $qpn: SRQ receive CQE names slot" ||
        fail "the driver did not report the SRQ receive CQE: $(dmesg | grep -i 'cqe' | tail -3)"
    signal_wait 6 300 || fail "the host did not finish phase 3"
    signal_wait 8 300 || fail "the host did not start phase 4"
    sleep 3
    dmesg -C
    RNIC_HOST_CHECK_WAIT=1 rnic-host-check inject cmd-stall
    timeout 60 ibv_rc_pingpong -d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -n 1 \
        -p "$(test_port 9)" >/tmp/stall.out 2>&1 &
    stalled=$!
    target_back 1
    dmesg | grep -q "command queue dead (timeout)" ||
        fail "phase 4: the driver did not time the command out: $(dmesg | grep rnic | tail -3)"
    kill "$stalled" 2>/dev/null
    wait "$stalled"
    log "cmd-stall: the command timed out and the device came back"
    signal_wait 9 300 || fail "the host did not finish phase 4"
    rnic-nvmet down
    ;;
client)
    nvme_attach "$RNIC_PEER_DATA_IP4" "$nqn" --reconnect-delay=2 \
        --ctrl-loss-tmo=300
    dev=$nvme_dev

    # phase N [SIGNAL]: fio through the fault the target injects after
    # the signal (or has armed already).
    phase() {
        local rc
        timeout 400 fio --name="phase$1" --filename="$dev" --direct=1 \
            --ioengine=libaio --rw=randwrite --bs=4k --iodepth=16 --size=16m \
            --verify=crc32c --verify_backlog=64 --runtime=30 --time_based \
            >"/tmp/fio$1.out" 2>&1 &
        local fio=$!
        sleep 2
        [ -z "$2" ] || signal_send 0 "$2" || fail "phase $1: no signal to the target"
        wait "$fio"
        rc=$?
        grep -E "err=|verify" "/tmp/fio$1.out" | sed "s/^/[phase$1] /"
        [ $rc -eq 0 ] || fail "phase $1: fio exited $rc: $(tail -5 "/tmp/fio$1.out")"
        grep -qE "err= *[1-9]|verify: bad|bad magic" "/tmp/fio$1.out" &&
            fail "phase $1: fio reported errors"
        dmesg | grep -E "nvme nvme[0-9]+:" | tail -4
        local n
        n=$(dmesg | grep -cE "nvme nvme[0-9]+: Successfully reconnected")
        log "phase $1: $n reconnects so far"
        [ "$1" != 1 ] || [ "$n" -ge 1 ] ||
            fail "phase 1: the host did not reconnect"
        [ "$1" != 3 ] || [ "$n" -ge 2 ] ||
            fail "phase 3: the host did not reconnect"
        [ "$1" != 4 ] || [ "$n" -ge 3 ] ||
            fail "phase 4: the host did not reconnect"
        log "phase $1: fio verified every block through the fault"
    }
    phase 1 1
    signal_send 0 2 || fail "phase 1: no signal to the target"
    # An rping across the flap, with no end of its own.
    rping_args=(-c -a "$RNIC_PEER_DATA_IP4" -p "$(test_port 8)" -V -S 4096)
    rnic-retry 10 1 timeout 5 rping "${rping_args[@]}" -C 1 >/dev/null 2>&1 ||
        fail "phase 2: no rping to the target"
    timeout 300 rping "${rping_args[@]}" >/tmp/rping-c.out 2>&1 &
    rping_cli=$!
    sleep 1
    phase 2 3
    if kill -0 "$rping_cli" 2>/dev/null; then
        log "phase 2: rping carried on through the flap"
        kill "$rping_cli"
        wait "$rping_cli"
    else
        wait "$rping_cli"
        rc=$?
        [ "$rc" != 124 ] || fail "phase 2: rping hung"
        log "phase 2: rping ended with status $rc in the flap: $(tail -1 /tmp/rping-c.out)"
    fi
    grep -qi "mismatch\|invalid data" /tmp/rping-c.out && fail "phase 2: rping data did not verify"
    rnic-retry 10 1 timeout 60 rping "${rping_args[@]}" -C 20 >/tmp/rping-c2.out 2>&1 ||
        fail "phase 2: rping after the flap: $(tail -3 /tmp/rping-c2.out)"
    log "phase 2: a new rping connected and verified 20 rounds after the flap"
    signal_send 0 4 || fail "phase 2: no signal to the target"
    signal_send 0 5 || fail "phase 3: no signal to the target"
    signal_wait 7 300 || fail "phase 3: the target did not arm its fault"
    phase 3 ""
    signal_send 0 6 || fail "phase 3: no signal to the target"
    phase 4 8
    # Before the target goes: a disconnect needs it.
    timeout 60 nvme disconnect -n "$nqn" >/dev/null || fail "nvme disconnect"
    signal_send 0 9 || fail "phase 4: no signal to the target"
    ;;
esac
fail_on_kernel_warnings "kernel warnings" "hung_task|blocked for more"
log "OK on $(hostname)"
