#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A storage ULP when its peer's machine dies mid-I/O.  RNIC_ULP picks it:
#   nvme   VM 0 exports a RAM disk with nvmet-rdma; VM 1 connects with
#          fast_io_fail_tmo 5 s (the default);
#   nfs    VM 0 runs nfsd with an RDMA listener; VM 1 mounts it soft, so
#          the I/O fails after its retransmissions instead of waiting for
#          the server forever;
#   iser   VM 0 runs the LIO target with iSER; VM 1 logs in with a 10 s
#          session replacement timeout.
# VM 1 runs fio, then VM 0 powers off at once, as if its plug were pulled:
# no disconnect, no goodbye on the wire.  fio must end with an I/O error
# well before its 300 s, tearing the ULP down (nvme disconnect, umount,
# iSCSI logout) must not hang, and neither may any task: the kernel log
# stays free of warnings and rnic errors.  Then the rnic still works: a loopback
# ib_write_bw over rnic0 moves data.
#
# With RNIC_PEER_FAULT=fatal VM 0 stays up and the host injects a fatal
# error into its rnic instead: its driver resets the device and brings it
# back as a new one, which a ULP's target may or may not listen on again.
# RNIC_ULP may then name several ULPs ("nfs,iser"), all at once on one
# fault.  Each fio (40 s, every block checked) must either carry on to
# its end with no bad block or fail with an I/O error; nothing may hang
# or warn on either side.
# vmlaunch: -n 2 --rnic --timeout 600
set -u
ulps=${RNIC_ULP:-nvme}
ulps=${ulps//,/ }
ulp=${ulps%% *}
fault=${RNIC_PEER_FAULT:-power}
if [ "$fault" = power ]; then
    . rnic-test-lib "rnic-peer-kill-$ulp"
else
    . rnic-test-lib "rnic-peer-$fault-${ulps// /-}"
fi
nqn=rnic-nvmet
mnt=/mnt/nfs

# ---- VM 0: the target, until the power goes ---------------------------------

target() {
    for ulp in $ulps; do
        case $ulp in
            nvme) rnic-nvmet up "$RNIC_DATA_IP4" 64 ;;
            nfs) rnic-nfs-server up "$RNIC_PEER_DATA_IP4" 256m ;;
            iser) rnic-iser target "$RNIC_DATA_IP4" ;;
        esac || fail "$ulp target set-up"
    done
    signal_send peer 1 ready || fail "host unreachable"
    signal_wait 2 300 >/dev/null || fail "the host never started I/O"
    if [ "$fault" = fatal ]; then
        dmesg -C
        RNIC_HOST_CHECK_WAIT=2 rnic-host-check inject fatal
        for _ in $(seq 1 150); do
            dmesg | grep -q "recovered from a fatal error" && break
            sleep 0.2
        done
        dmesg | grep -q "recovered from a fatal error" ||
            fail "the target's device did not come back"
        log "the target's device came back after the fatal error"
        signal_wait 3 600 >/dev/null || fail "the host did not finish"
        fail_on_kernel_warnings "kernel warnings on the target" "hung_task|blocked for more"
        return 0
    fi
    # Report success now: nothing runs after the power goes.
    echo "RNIC-EXIT-STATUS=0"
    sleep 0.2
    echo o >/proc/sysrq-trigger
    sleep 60
}

# ---- VM 1: attach, I/O, and what is left after the peer died -------------

# attach: sets target (what fio works on) and state (a file whose content
# tells how the ULP sees its peer, or "").
attach() {
    state=""
    case $ulp in
    nvme)
        nvme_attach "$RNIC_PEER_DATA_IP4" "$nqn" --fast_io_fail_tmo=5 \
            --ctrl-loss-tmo=20 --reconnect-delay=2
        target=$nvme_dev
        local c
        for c in /sys/class/nvme/nvme*; do
            [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && state=$c/state
        done
        [ -n "$state" ] || fail "no controller"
        ;;
    nfs)
        modprobe rpcrdma || fail "modprobe rpcrdma"
        mkdir -p "$mnt"
        # soft: an RPC fails after timeo (3 s) and 2 retransmissions.
        mount -t nfs4 -o vers=4.2,proto=rdma,port=20049,soft,timeo=30,retrans=2 \
            "$RNIC_PEER_DATA_IP4:/" "$mnt" || fail "mount"
        grep " $mnt " /proc/mounts | grep -q "proto=rdma" || fail "not an RDMA mount"
        target=$mnt/data
        head -c 64M /dev/zero >"$target" || fail "creating the file"
        ;;
    iser)
        rnic-iser node "$RNIC_PEER_DATA_IP4" \
            node.session.timeo.replacement_timeout=10 || fail "initiator set-up"
        target=$(rnic-iser login "$RNIC_PEER_DATA_IP4") || fail "login"
        ;;
    esac
    log "attached: $target"
}

# detach: give the ULP up; must end within its bound.
detach() {
    case $ulp in
    nvme)
        # Reconnect attempts to a dead peer last as long as the RDMA CM's
        # connect timeouts; giving the controller up must not hang either.
        timeout 120 nvme disconnect -n "$nqn" >/dev/null ||
            fail "nvme disconnect hung or failed ($?)"
        local c=${state%/state}
        for _ in $(seq 1 100); do
            [ -e "$c" ] || break
            sleep 0.2
        done
        [ -e "$c" ] && fail "controller still there after the disconnect ($(cat "$state"))"
        ;;
    nfs)
        timeout 120 umount -f "$mnt" || timeout 60 umount -l "$mnt" ||
            fail "umount hung or failed ($?)"
        grep -q " $mnt " /proc/mounts && fail "still mounted"
        ;;
    iser)
        timeout 120 rnic-iser logout "$RNIC_PEER_DATA_IP4" ||
            fail "logout hung or failed ($?)"
        iscsiadm -m session >/dev/null 2>&1 && fail "a session is left"
        ;;
    esac
}

# host_fault: every ULP of $ulps through one fatal error of the target's
# device: each fio carries on to its end with every block verified, or
# fails with an I/O error; either way each ULP is given up without a
# hang.
host_fault() {
    local pids=() rc t0 u running
    signal_wait 1 300 >/dev/null || fail "the target never got ready"
    for ulp in $ulps; do
        attach
        fio --name="busy-$ulp" --filename="$target" --direct=1 --ioengine=libaio \
            --rw=randwrite --bs=4k --iodepth=16 --size=32m --runtime=40 --time_based \
            --verify=crc32c --verify_backlog=64 >"/tmp/fio-$ulp.out" 2>&1 &
        pids+=("$!")
    done
    sleep 5
    for u in "${!pids[@]}"; do
        kill -0 "${pids[$u]}" 2>/dev/null || fail "fio ended early: $(tail -5 /tmp/fio-*.out)"
    done
    signal_send peer 2 go || fail "target unreachable"
    t0=$(date +%s)
    for _ in $(seq 1 1500); do
        running=""
        for u in "${!pids[@]}"; do
            kill -0 "${pids[$u]}" 2>/dev/null && running=1
        done
        [ -n "$running" ] || break
        sleep 0.2
    done
    [ -z "$running" ] || fail "fio still runs $(( $(date +%s) - t0 )) s after the fault"
    u=0
    for ulp in $ulps; do
        wait "${pids[$u]}"
        rc=$?
        u=$((u + 1))
        grep -E "err=|verify" "/tmp/fio-$ulp.out" | head -5
        grep -qE "verify: bad|bad magic" "/tmp/fio-$ulp.out" && fail "$ulp: fio read back a bad block"
        if [ "$rc" = 0 ]; then
            log "$ulp: fio carried on through the target's fatal error, every block verified"
        else
            grep -qiE "error|err=" "/tmp/fio-$ulp.out" || fail "$ulp: fio failed ($rc) with no I/O error"
            log "$ulp: fio failed cleanly with an I/O error ($rc)"
        fi
    done
    log "every fio ended $(( $(date +%s) - t0 )) s after the fault"
    for ulp in $ulps; do
        detach
    done
    signal_send peer 3 done || fail "target unreachable at the end"
    rnic-dmesg-check || fail "kernel warnings or rnic errors"
    if dmesg | grep -E "INFO: task|hung_task"; then
        fail "hung tasks"
    fi
}

host() {
    local fio_pid t0 t1 t2 rc seen st
    signal_wait 1 300 >/dev/null || fail "the target never got ready"
    attach
    fio --name=busy --filename="$target" --direct=1 --ioengine=libaio \
        --rw=randrw --bs=4k --iodepth=16 --size=64m --runtime=300 --time_based \
        >/tmp/fio.out 2>&1 &
    fio_pid=$!
    sleep 5
    kill -0 "$fio_pid" 2>/dev/null || fail "fio ended early: $(tail -5 /tmp/fio.out)"
    signal_send peer 2 go || fail "target gone too early"
    t0=$(date +%s)
    log "target told to power off; fio runs"

    # Where the ULP shows its peer's state (NVMe), it must notice and try
    # again; fio must end with errors, well before its 300 s.
    seen=""
    for _ in $(seq 1 1200); do
        kill -0 "$fio_pid" 2>/dev/null || break
        if [ -n "$state" ]; then
            st=$(cat "$state" 2>/dev/null) || st=deleted
            case " $seen " in *" $st "*) ;; *) seen+=" $st" ;; esac
        fi
        sleep 0.2
    done
    kill -0 "$fio_pid" 2>/dev/null && fail "fio still runs $(( $(date +%s) - t0 )) s after the power-off"
    wait "$fio_pid"
    rc=$?
    t1=$(date +%s)
    log "fio ended with $rc after $((t1 - t0)) s${seen:+; controller states:$seen}"
    [ "$rc" != 0 ] || fail "fio succeeded although its target died"
    grep -qiE "error|err=" /tmp/fio.out || fail "fio reported no I/O error"
    if [ -n "$state" ]; then
        case "$seen" in
            *connecting*|*resetting*|*deleted*) ;;
            *) fail "the controller never tried to reconnect:$seen" ;;
        esac
    fi
    t2=$(date +%s)
    detach
    log "$ulp given up in $(( $(date +%s) - t2 )) s"
    rnic-dmesg-check || fail "kernel warnings or rnic errors"
    if dmesg | grep -E "INFO: task|hung_task"; then
        fail "hung tasks"
    fi
    # The device itself is fine: loopback traffic over rnic0.
    local lb=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -s 65536 -n 200)
    timeout 60 ib_write_bw "${lb[@]}" >/dev/null 2>&1 &
    wait_listen 18515 || fail "loopback ib_write_bw server never listened"
    timeout 60 ib_write_bw "${lb[@]}" "$RNIC_DATA_IP4" >/tmp/bw.out 2>&1 ||
        fail "loopback ib_write_bw after the peer died: $(tail -3 /tmp/bw.out)"
    wait
    log "loopback traffic over $RNIC_IBDEV still flows"
}

for u in $ulps; do
    case $u in nvme|nfs|iser) ;; *) fail "unknown RNIC_ULP $u" ;; esac
done
case $fault in power|fatal) ;; *) fail "unknown RNIC_PEER_FAULT $fault" ;; esac
[ "$fault" = fatal ] || [ "$ulps" = "$ulp" ] || fail "one RNIC_ULP at a time when the power goes"
case $(role) in
server) target ;;
client) if [ "$fault" = fatal ]; then host_fault; else host; fi ;;
*) exit 0 ;;
esac
log "OK on $(hostname)"
