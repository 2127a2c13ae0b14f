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
#    retries) or fail and reconnect.
# fio must finish each phase with no error and no bad block, the host
# must have reconnected in phase 1, and neither kernel may warn, oops or
# leave a task hung.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-inject-nvmeof
. rnic-cycle-lib
nqn=rnic-nvmet

case $(role) in
server)
    rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
    signal_wait 1 300 || fail "the host did not start phase 1"
    sleep 3
    RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject fatal
    for _ in $(seq 1 150); do
        dmesg | grep -q "recovered from a fatal error" && break
        sleep 0.2
    done
    dmesg | grep -q "recovered from a fatal error" ||
        fail "the target's device did not come back"
    method=reset reload
    # Unlinking the subsystem disables the port, linking enables it.
    cfg=/sys/kernel/config/nvmet
    rm -f "$cfg/ports/1/subsystems/$nqn"
    ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" ||
        fail "re-enabling the target's port"
    signal_wait 2 300 || fail "the host did not finish phase 1"
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
    rnic-nvmet down
    ;;
client)
    nvme_attach "$RNIC_PEER_DATA_IP4" "$nqn" --reconnect-delay=2 \
        --ctrl-loss-tmo=300
    dev=$nvme_dev

    # phase N SIGNAL: fio through the fault the target injects after
    # the signal.
    phase() {
        local rc
        timeout 400 fio --name="phase$1" --filename="$dev" --direct=1 \
            --ioengine=libaio --rw=randwrite --bs=4k --iodepth=16 --size=16m \
            --verify=crc32c --verify_backlog=64 --runtime=45 --time_based \
            >"/tmp/fio$1.out" 2>&1 &
        local fio=$!
        sleep 2
        signal_send 0 "$2" || fail "phase $1: no signal to the target"
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
        log "phase $1: fio verified every block through the fault"
    }
    phase 1 1
    signal_send 0 2 || fail "phase 1: no signal to the target"
    phase 2 3
    # Before the target goes: a disconnect needs it.
    timeout 60 nvme disconnect -n "$nqn" >/dev/null || fail "nvme disconnect"
    signal_send 0 4 || fail "phase 2: no signal to the target"
    ;;
esac
fail_on_kernel_warnings "kernel warnings" "hung_task|blocked for more"
log "OK on $(hostname)"
