#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The driver can be removed under a running verbs program.  Cycle 1:
# ib_write_bw streams from VM 1 to VM 0 and `rmmod rnic` runs in VM 1, under
# the sender.  Cycle 2: ib_send_bw streams the same way and the rmmod runs
# in VM 0, under the receiver, whose posted receives are pending.  Cycle 3:
# as cycle 1, but the PCI function is removed through sysfs instead, with
# the module staying loaded.  The removal must complete within a timeout,
# the program on that side must exit with an error, and once the device is
# back (`modprobe rnic` or a PCI rescan) a fresh data-verifying ping-pong
# must pass.  The kernel must not have warned.
# vmlaunch: -n 2 --rnic --timeout 600
set -u
me=rnic-rmmod
fail() { echo "$me: FAILED: $*"; exit 1; }
log() { echo "$me: $*"; }

counter() {
    cat "/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters/$1" 2>/dev/null || echo 0
}

# The RDMA device on the rnic netdev, found anew after every reload.
find_ibdev() {
    local d f
    for d in /sys/class/infiniband/*; do
        for f in "$d"/ports/1/gid_attrs/ndevs/*; do
            [ "$(cat "$f" 2>/dev/null)" = "$RNIC_RNIC_NETDEV" ] && { basename "$d"; return 0; }
        done
    done
    return 1
}

# Bring the device back (modprobe rnic, or a PCI rescan with "pci"), then
# configure the netdev as the guest init did and wait for the RDMA device
# and its RoCE v2 IPv4 GID.
reload() {
    local _ n
    if [ "$method" = pci ]; then
        echo 1 >/sys/bus/pci/rescan || fail "PCI rescan failed"
    else
        modprobe rnic || fail "modprobe rnic failed"
    fi
    RNIC_RNIC_NETDEV=""
    for _ in $(seq 1 100); do
        for n in /sys/class/net/*; do
            [ "$(cat "$n/address" 2>/dev/null)" = "${RNIC_RNIC_MAC,,}" ] &&
                RNIC_RNIC_NETDEV=$(basename "$n")
        done
        [ -n "$RNIC_RNIC_NETDEV" ] && break
        sleep 0.1
    done
    [ -n "$RNIC_RNIC_NETDEV" ] || fail "no netdev with MAC $RNIC_RNIC_MAC after modprobe"
    ip link set "$RNIC_RNIC_NETDEV" up
    ip addr add "$RNIC_RNIC_IP4/24" dev "$RNIC_RNIC_NETDEV"
    RNIC_IBDEV="" RNIC_GID_INDEX=""
    for _ in $(seq 1 200); do
        RNIC_IBDEV=$(find_ibdev) &&
            RNIC_GID_INDEX=$(rnic-gid-index "$RNIC_IBDEV" 1 "$RNIC_RNIC_IP4") && break
        sleep 0.1
    done
    [ -n "$RNIC_GID_INDEX" ] || fail "no RDMA device with an IPv4 GID after modprobe"
    export RNIC_RNIC_NETDEV RNIC_IBDEV RNIC_GID_INDEX
    log "device back: $RNIC_IBDEV on $RNIC_RNIC_NETDEV, GID index $RNIC_GID_INDEX"
}

bw() {
    timeout 120 "$tool" -d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -s 65536 -D 30 "$@"
}

# wait_traffic PID COUNTER: true once COUNTER grew by 200 while PID runs.
wait_traffic() {
    local pid=$1 name=$2 base _
    base=$(counter "$name")
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || return 1
        [ $(($(counter "$name") - base)) -ge 200 ] && return 0
        sleep 0.5
    done
    return 1
}

# Start the ib_write_bw client in the background (pid in $bw_pid) and
# wait until it streams; retried while the server is not listening yet.
start_client() {
    local _
    for _ in $(seq 1 30); do
        bw "$RNIC_PEER_DATA_IP4" >/tmp/bw.out 2>&1 &
        bw_pid=$!
        wait_traffic "$bw_pid" tx_pkts && return 0
        wait "$bw_pid"
        sleep 1
    done
    cat /tmp/bw.out
    fail "$tool never started streaming"
}

# Remove the device under the running program $bw_pid (rmmod, or with
# "pci" a sysfs remove of the function); the program must fail, not hang.
remove_under() {
    local t0 t1 rc bdf what
    t0=$(date +%s)
    if [ "$method" = pci ]; then
        bdf=$(basename "$(readlink -f "/sys/class/infiniband/$RNIC_IBDEV/device")")
        what="PCI remove of $bdf"
        timeout 60 sh -c "echo 1 >/sys/bus/pci/devices/$bdf/remove" ||
            fail "$what failed or hung ($?)"
    else
        what="rmmod rnic"
        timeout 60 rmmod rnic || fail "$what failed or hung ($?)"
    fi
    t1=$(date +%s)
    log "$what took $((t1 - t0)) s with $tool running"
    wait "$bw_pid"
    rc=$?
    grep -iE 'error|fail' /tmp/bw.out | sed 's/^/  | /'
    [ "$rc" = 124 ] && fail "$tool did not end after rmmod"
    [ "$rc" != 0 ] || fail "$tool succeeded although its device went away"
    log "$tool exited with $rc after $(($(date +%s) - t1)) s"
}

# cycle:program:VM that removes its device:how
for spec in 1:ib_write_bw:1:rmmod 2:ib_send_bw:0:rmmod 3:ib_write_bw:1:pci; do
    IFS=: read -r cycle tool remover method <<<"$spec"
    log "cycle $cycle: $tool, $method in VM $remover"
    case $RNIC_VM_INDEX in
        0)
            if [ "$remover" = 0 ]; then
                bw >/tmp/bw.out 2>&1 &
                bw_pid=$!
                wait_traffic "$bw_pid" rx_pkts || { cat /tmp/bw.out; fail "no traffic arrived"; }
                remove_under
                reload
            else
                # The peer vanishing fails the server; only its end matters.
                bw >/tmp/bws.out 2>&1
                rc=$?
                [ "$rc" = 124 ] && fail "$tool server did not end after the client's rmmod"
                log "server ended ($rc)"
            fi
            ;;
        1)
            start_client
            if [ "$remover" = 1 ]; then
                remove_under
                reload
            else
                # Its responder gone, the client exhausts its retries.
                wait "$bw_pid"
                rc=$?
                [ "$rc" = 124 ] && fail "$tool client did not end after the server's rmmod"
                log "client ended ($rc)"
            fi
            ;;
        *)
            exit 0
            ;;
    esac
    if [ "$cycle" = 3 ]; then
        rnic-pingpong 100 4096 || fail "ping-pong after cycle $cycle failed"
    else
        RNIC_NO_RPING=1 rnic-pingpong 100 4096 || fail "ping-pong after cycle $cycle failed"
    fi
done
if dmesg | grep -E "WARNING|BUG:|Oops|general protection|INFO: task|hung_task"; then
    fail "kernel warnings"
fi
echo "$me: OK on $(hostname)"
