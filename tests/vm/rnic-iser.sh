#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# iSCSI Extensions for RDMA over rnic between two VMs: the LIO target
# (ib_isert, set up through configfs) exports a 256 MiB RAM disk on VM 0
# through an iSER-enabled portal; open-iscsi on VM 1 discovers and logs in
# with the iser transport.  fio then runs 4 KiB random writes and reads
# with crc32c verification (iodepth 32, 4 jobs) and 128 KiB sequential
# writes and reads, the session must say iser, the RoCE counters must
# carry the data, and after a logout a second login must work too.
# Neither kernel may warn or log an rnic error.
# vmlaunch: -n 2 --rnic --mem 1536 --timeout 1200
set -u
. rnic-test-lib rnic-iser

target() {
    rnic-iser target "$RNIC_DATA_IP4" || fail "target set-up"
    signal_send peer 1 ready || fail "initiator unreachable"
    signal_wait 2 1000 >/dev/null || fail "the initiator never finished"
    rnic-iser target-down
}

initiator() {
    local dev tx0 rx0 n
    signal_wait 1 300 >/dev/null || fail "the target never got ready"
    rnic-iser node "$RNIC_PEER_DATA_IP4" || fail "initiator set-up"
    login() {
        dev=$(rnic-iser login "$RNIC_PEER_DATA_IP4") || fail "login"
        log "logged in over iSER: $dev ($(blockdev --getsize64 "$dev") bytes)"
    }
    logout() {
        rnic-iser logout "$RNIC_PEER_DATA_IP4" || fail "logout"
    }

    login
    tx0=$(counter tx_bytes) rx0=$(counter rx_bytes)
    fio --name=rand --filename="$dev" --direct=1 --ioengine=libaio \
        --rw=randwrite --bs=4k --iodepth=32 --numjobs=4 --size=32m \
        --offset_increment=32m --verify=crc32c --do_verify=1 \
        --group_reporting >/tmp/fio1.out 2>&1 ||
        fail "fio 4k randwrite+verify: $(tail -5 /tmp/fio1.out)"
    fio --name=rread --filename="$dev" --direct=1 --ioengine=libaio \
        --rw=randread --bs=4k --iodepth=32 --numjobs=4 --size=32m \
        --offset_increment=32m --verify=crc32c --verify_only \
        --group_reporting >/tmp/fio2.out 2>&1 ||
        fail "fio 4k randread verify: $(tail -5 /tmp/fio2.out)"
    fio --name=seq --filename="$dev" --direct=1 --ioengine=libaio \
        --rw=write --bs=128k --iodepth=8 --size=128m --verify=crc32c \
        --do_verify=1 >/tmp/fio3.out 2>&1 ||
        fail "fio 128k write+read verify: $(tail -5 /tmp/fio3.out)"
    log "fio: 4k random write/read and 128k sequential write/read verified"
    n=$(( $(counter tx_bytes) - tx0 ))
    [ "$n" -gt $((128 << 20)) ] || fail "only $n RoCE bytes sent"
    n=$(( $(counter rx_bytes) - rx0 ))
    [ "$n" -gt $((128 << 20)) ] || fail "only $n RoCE bytes received"
    logout
    login
    fio --name=again --filename="$dev" --direct=1 --ioengine=libaio \
        --rw=randrw --bs=4k --iodepth=16 --size=16m --verify=crc32c \
        --do_verify=1 >/tmp/fio4.out 2>&1 ||
        fail "fio after the second login: $(tail -5 /tmp/fio4.out)"
    logout
    log "logged out, in again and out again"
    signal_send peer 2 || fail "target gone"
}

case $(role) in
server) target ;;
client) initiator ;;
*) exit 0 ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK on $(hostname)"
