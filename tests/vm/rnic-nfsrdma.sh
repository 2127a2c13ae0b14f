#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NFS over RDMA over rnic between two VMs.  VM 0 runs nfsd with an RDMA
# listener (port 20049) exporting a tmpfs; VM 1 mounts it with proto=rdma.
# VM 1 writes 256 MiB of random data and reads it back after a remount
# (cold cache): the sha256 must match what it wrote, and what VM 0 finds
# in its tmpfs.  Then a metadata-heavy pass: /usr/include (2,765 files,
# directories and symlinks) untarred onto the mount and compared with
# `diff -r --no-dereference` on both VMs (its symlinks point out of it).
# The mount must really use RDMA (mountstats, and the rnic's RoCE byte
# counters), and neither kernel may warn or log an rnic error.
# vmlaunch: -n 2 --rnic --mem 2048 --timeout 1200
set -u
. rnic-test-lib rnic-nfsrdma

server() {
    rnic-nfs-server up "$RNIC_PEER_DATA_IP4" || fail "nfsd set-up"
    signal_send peer 1 ready || fail "client unreachable"

    sum=$(signal_wait 2 900) || fail "the client never sent its sha256"
    [ "${#sum}" = 64 ] || fail "client: $sum"
    local_sum=$(sha256sum /srv/nfs/data.bin | cut -d' ' -f1)
    [ "$local_sum" = "$sum" ] ||
        fail "sha256 on the server $local_sum, the client wrote $sum"
    log "server sees the client's 256 MiB intact ($sum)"

    signal_wait 3 900 >/dev/null || fail "the client never finished"
    diff -r --no-dereference /usr/include /srv/nfs/tree/include >/tmp/diff.out 2>&1 ||
        fail "tree differs on the server: $(head -5 /tmp/diff.out)"
    log "server sees the client's tree intact"
    rnic-nfs-server down
}

client() {
    local mnt=/mnt/nfs tx0 rx0 sum back n xprt

    signal_wait 1 300 >/dev/null || fail "the server never got ready"
    modprobe rpcrdma || fail "modprobe rpcrdma"
    mkdir -p "$mnt"
    mount_it() {
        mount -t nfs4 -o vers=4.2,proto=rdma,port=20049 \
            "$RNIC_PEER_DATA_IP4:/" "$mnt" || fail "mount"
    }
    mount_it
    grep " $mnt " /proc/mounts | grep -q "proto=rdma" ||
        fail "not an RDMA mount: $(grep " $mnt " /proc/mounts)"
    tx0=$(counter tx_bytes) rx0=$(counter rx_bytes)

    head -c 256M /dev/urandom >/dev/shm/data.bin
    sum=$(sha256sum /dev/shm/data.bin | cut -d' ' -f1)
    cp /dev/shm/data.bin "$mnt/data.bin" || fail "write"
    sync
    umount "$mnt" || fail "umount"
    mount_it
    back=$(sha256sum "$mnt/data.bin" | cut -d' ' -f1)
    [ "$back" = "$sum" ] || fail "read back $back, wrote $sum"
    log "256 MiB written and read back over NFS/RDMA ($sum)"
    rm -f /dev/shm/data.bin
    signal_send peer 2 "$sum" || fail "server gone"

    # Both ways past the data, on the RoCE path (not the virtio one).
    n=$(( $(counter tx_bytes) - tx0 ))
    [ "$n" -gt $((256 << 20)) ] || fail "only $n RoCE bytes sent"
    n=$(( $(counter rx_bytes) - rx0 ))
    [ "$n" -gt $((256 << 20)) ] || fail "only $n RoCE bytes received"
    xprt=$(awk -v m="$mnt" '$1 == "device" { mine = ($5 == m) }
                            mine && $1 == "xprt:" { print $2 }' /proc/self/mountstats)
    [ "$xprt" = rdma ] || fail "mountstats shows transport '$xprt', not rdma"

    mkdir "$mnt/tree" || fail "mkdir"
    tar -C /usr -cf - include | tar -C "$mnt/tree" -xf - || fail "untar"
    umount "$mnt" || fail "umount"
    mount_it
    diff -r --no-dereference /usr/include "$mnt/tree/include" >/tmp/diff.out 2>&1 ||
        fail "tree differs: $(head -5 /tmp/diff.out)"
    log "$(find "$mnt/tree" | wc -l) entries untarred and compared over NFS/RDMA"
    umount "$mnt" || fail "umount"
    signal_send peer 3 || fail "server gone"
}

case $(role) in
server) server ;;
client) client ;;
*) exit 0 ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK on $(hostname)"
