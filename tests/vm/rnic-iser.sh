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
me=rnic-iser
fail() { echo "$me: FAILED: $*"; exit 1; }
log() { echo "$me: $*"; }
iqn=iqn.2026-11.rnic.test:disk0

counter() {
    cat "/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters/$1"
}

# The LIO target through its configfs interface (what targetcli writes).
target() {
    local cfs=/sys/kernel/config/target tpg np
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    modprobe iscsi_target_mod || fail "modprobe iscsi_target_mod"
    modprobe ib_isert || fail "modprobe ib_isert"
    modprobe brd rd_nr=1 rd_size=262144 || fail "modprobe brd"
    w() { echo "$1" >"$2" || fail "writing $1 to ${2#"$cfs"/}"; }
    mkdir -p "$cfs/core/iblock_0/ram0" || fail "backstore"
    w "udev_path=/dev/ram0" "$cfs/core/iblock_0/ram0/control"
    w 1 "$cfs/core/iblock_0/ram0/enable"
    tpg=$cfs/iscsi/$iqn/tpgt_1
    mkdir -p "$tpg/lun/lun_0" || fail "target"
    ln -s "$cfs/core/iblock_0/ram0" "$tpg/lun/lun_0/ram0" || fail "LUN"
    # Our RoCE address only, with iSER on.
    np=$tpg/np/$RNIC_DATA_IP4:3260
    mkdir "$np" || fail "portal"
    w 1 "$np/iser"
    w 0 "$tpg/attrib/authentication"
    w 1 "$tpg/attrib/generate_node_acls"
    w 1 "$tpg/attrib/cache_dynamic_acls"
    w 0 "$tpg/attrib/demo_mode_write_protect"
    w 1 "$tpg/enable"
    [ "$(cat "$np/iser")" = 1 ] || fail "portal without iSER"
    log "target $iqn on $RNIC_DATA_IP4:3260 (iser)"
    rnic-signal send "$RNIC_PEER_IP4" 7201 ready || fail "initiator unreachable"
    rnic-signal wait 7202 1000 >/dev/null || fail "the initiator never finished"
    w 0 "$tpg/enable"
}

initiator() {
    local dev tx0 rx0 n out
    rnic-signal wait 7201 300 >/dev/null || fail "the target never got ready"
    # No udev here to load the disk driver when the LUN appears.
    modprobe ib_iser && modprobe sd_mod || fail "modprobe ib_iser sd_mod"
    [ -s /etc/iscsi/initiatorname.iscsi ] ||
        echo "InitiatorName=iqn.2026-11.rnic.test:init$RNIC_VM_INDEX" \
            >/etc/iscsi/initiatorname.iscsi
    iscsid || fail "iscsid"
    sleep 1
    # Discovery over TCP (to the same portal), the session over iSER.
    iscsiadm -m discovery -t sendtargets -p "$RNIC_PEER_DATA_IP4:3260" \
        >/tmp/disc.out 2>&1 || fail "discovery: $(cat /tmp/disc.out)"
    grep -q "$iqn" /tmp/disc.out || fail "discovery found: $(cat /tmp/disc.out)"
    iscsiadm -m node -T "$iqn" -p "$RNIC_PEER_DATA_IP4:3260" -I iser -o new \
        >/dev/null || fail "no iSER node record"
    iscsiadm -m node -T "$iqn" -p "$RNIC_PEER_DATA_IP4:3260" -I default \
        -o delete >/dev/null 2>&1

    login() {
        iscsiadm -m node -T "$iqn" -p "$RNIC_PEER_DATA_IP4:3260" -I iser \
            --login >/tmp/login.out 2>&1 || fail "login: $(cat /tmp/login.out)"
        # No udev here: the session names its disk.
        dev=""
        for _ in $(seq 1 200); do
            dev=$(iscsiadm -m session -P 3 2>/dev/null |
                  sed -n 's/.*Attached scsi disk \([a-z]*\).*/\1/p' | head -n1)
            [ -n "$dev" ] && [ -b "/dev/$dev" ] && break
            sleep 0.1
        done
        [ -n "$dev" ] && [ -b "/dev/$dev" ] ||
            fail "no disk after the login: $(iscsiadm -m session -P 3 2>&1 | tail -5)"
        dev=/dev/$dev
        out=$(iscsiadm -m session -P 1)
        grep -q "Iface Transport: iser" <<<"$out" ||
            fail "the session is not iSER: $out"
        log "logged in over iSER: $dev ($(blockdev --getsize64 "$dev") bytes)"
    }
    logout() {
        iscsiadm -m node -T "$iqn" -p "$RNIC_PEER_DATA_IP4:3260" -I iser \
            --logout >/dev/null 2>&1 || fail "logout"
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
    rnic-signal send "$RNIC_PEER_IP4" 7202 || fail "target gone"
}

case $RNIC_VM_INDEX in
0) target ;;
1) initiator ;;
*) exit 0 ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
echo "$me: OK on $(hostname)"
