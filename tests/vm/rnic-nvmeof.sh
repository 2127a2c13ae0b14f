#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NVMe over Fabrics over rnic between two VMs: nvmet-rdma exports a RAM
# disk on VM 0, nvme-rdma on VM 1 discovers, connects, runs fio with
# crc32c verification (4 KiB random, 128 KiB sequential), disconnects and
# connects again.  Neither kernel may warn or log an rnic error.  The
# target's kernel QPs must have handed some WQEs over by their SQ doorbell
# records instead of doorbell writes (counters sq_dbrec_wqes, sq_doorbells).
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-nvmeof

case $(role) in
server)
    rnic-nvmet up "$RNIC_DATA_IP4" 64 || fail "target set-up"
    signal_wait 1 800 || fail "the host never reported back"
    rnic-nvmet down
    log "target sq_doorbells=$(counter sq_doorbells)" \
         "sq_dbrec_wqes=$(counter sq_dbrec_wqes)"
    [ "$(counter sq_dbrec_wqes)" -gt 0 ] ||
        fail "no WQE came from an SQ doorbell record"
    ;;
client)
    rnic-nvme-host "$RNIC_PEER_DATA_IP4"
    rc=$?
    signal_send 0 1
    log "host sq_doorbells=$(counter sq_doorbells)" \
         "sq_dbrec_wqes=$(counter sq_dbrec_wqes)"
    [ $rc -eq 0 ] || fail "host side"
    ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK on $(hostname)"
