#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics when the target's machine dies mid-I/O.  VM 0 exports
# a RAM disk with nvmet-rdma; VM 1 connects (fast_io_fail_tmo 5 s) and
# runs fio; then VM 0 powers off at once, as if its plug were pulled: no
# disconnect, no goodbye on the wire.  VM 1 must try to reconnect, fail
# the outstanding I/O with an error (fio ends, it does not hang), give
# the controller up on `nvme disconnect` within a timeout, and log no
# kernel warning or hung task.  Then its rnic still works: a loopback
# ib_write_bw over rnic0 moves data.
# vmlaunch: -n 2 --rnic --timeout 600
set -u
me=rnic-peer-kill
fail() { echo "$me: FAILED: $*"; exit 1; }
log() { echo "$me: $*"; }
nqn=rnic-nvmet

case $RNIC_VM_INDEX in
0)
    rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
    rnic-signal send "$RNIC_PEER_IP4" 7401 ready || fail "host unreachable"
    rnic-signal wait 7402 300 >/dev/null || fail "the host never started I/O"
    # Report success now: nothing runs after the power goes.
    echo "RNIC-EXIT-STATUS=0"
    sleep 0.2
    echo o >/proc/sysrq-trigger
    sleep 60
    ;;
1)
    rnic-signal wait 7401 300 >/dev/null || fail "the target never got ready"
    modprobe nvme-rdma
    rnic-retry 30 2 timeout 60 nvme discover -t rdma -a "$RNIC_PEER_DATA_IP4" \
        -s 4420 | grep -q "subnqn: *$nqn" || fail "discovery"
    timeout 90 nvme connect -t rdma -n "$nqn" -a "$RNIC_PEER_DATA_IP4" -s 4420 \
        --fast_io_fail_tmo=5 --ctrl-loss-tmo=20 --reconnect-delay=2 ||
        fail "connect"
    ctrl=""
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && ctrl=$c
    done
    [ -n "$ctrl" ] || fail "no controller"
    dev=""
    for _ in $(seq 1 50); do
        for b in /sys/block/nvme*n1; do
            [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$nqn" ] &&
                dev=/dev/${b##*/}
        done
        [ -n "$dev" ] && [ -b "$dev" ] && break
        sleep 0.2
    done
    [ -b "$dev" ] || fail "no namespace"
    log "connected: $(basename "$ctrl"), $dev"

    fio --name=busy --filename="$dev" --direct=1 --ioengine=libaio \
        --rw=randrw --bs=4k --iodepth=16 --runtime=300 --time_based \
        >/tmp/fio.out 2>&1 &
    fio_pid=$!
    sleep 5
    kill -0 "$fio_pid" 2>/dev/null || fail "fio ended early: $(tail -5 /tmp/fio.out)"
    rnic-signal send "$RNIC_PEER_IP4" 7402 go || fail "target gone too early"
    t0=$(date +%s)
    log "target told to power off; fio runs"

    # The controller must notice and try again.
    seen=""
    for _ in $(seq 1 300); do
        st=$(cat "$ctrl/state" 2>/dev/null) || { seen+=" deleted"; break; }
        case " $seen " in *" $st "*) ;; *) seen+=" $st" ;; esac
        kill -0 "$fio_pid" 2>/dev/null || break
        sleep 0.2
    done
    # fio must end with errors, well before its 300 s.
    for _ in $(seq 1 600); do
        kill -0 "$fio_pid" 2>/dev/null || break
        sleep 0.2
    done
    kill -0 "$fio_pid" 2>/dev/null && fail "fio still runs $(( $(date +%s) - t0 )) s after the power-off"
    wait "$fio_pid"
    rc=$?
    t1=$(date +%s)
    log "fio ended with $rc after $((t1 - t0)) s; controller states:$seen"
    [ "$rc" != 0 ] || fail "fio succeeded although its target died"
    grep -qiE "error|err=" /tmp/fio.out || fail "fio reported no I/O error"
    case "$seen" in
        *connecting*|*resetting*|*deleted*) ;;
        *) fail "the controller never tried to reconnect:$seen" ;;
    esac
    # Reconnect attempts to a dead peer last as long as the RDMA CM's
    # connect timeouts; giving the controller up must not hang either.
    t2=$(date +%s)
    timeout 120 nvme disconnect -n "$nqn" >/dev/null ||
        fail "nvme disconnect hung or failed ($?)"
    for _ in $(seq 1 100); do
        [ -e "$ctrl" ] || break
        sleep 0.2
    done
    [ -e "$ctrl" ] && fail "controller still there after the disconnect ($(cat "$ctrl/state"))"
    log "controller given up by nvme disconnect in $(( $(date +%s) - t2 )) s"
    if dmesg | grep -E "WARNING|BUG:|Oops|general protection|INFO: task|hung_task"; then
        fail "kernel warnings"
    fi
    # The device itself is fine: loopback traffic over rnic0.
    lb=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -s 65536 -n 200)
    timeout 60 ib_write_bw "${lb[@]}" >/dev/null 2>&1 &
    sleep 0.5
    timeout 60 ib_write_bw "${lb[@]}" "$RNIC_DATA_IP4" >/tmp/bw.out 2>&1 ||
        fail "loopback ib_write_bw after the peer died: $(tail -3 /tmp/bw.out)"
    wait
    log "loopback traffic over $RNIC_IBDEV still flows"
    ;;
*)
    exit 0
    ;;
esac
echo "$me: OK on $(hostname)"
