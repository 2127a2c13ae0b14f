#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# perftest over the rnic device between two VMs: WRITE, READ and SEND
# bandwidth over all sizes (-a, 2 B to 8 MiB), READ/SEND/WRITE latency,
# atomics, and the other modes perftest offers: UC and UD transports (-c),
# connections through rdma_cm (-R), bidirectional traffic (-b) and 8 QPs
# (-q 8).  perftest fails on any work completion that is not a success;
# the data itself is verified by rnic-pingpong and rnic-mtu.
# vmlaunch: -n 2 --rnic --timeout 1200
set -e
. rnic-test-lib rnic-perftest
rnic-perf ib_write_bw -a -n 20 --report_gbits
rnic-perf ib_read_bw -a -n 20 --report_gbits
rnic-perf ib_send_bw -a -n 20 --report_gbits
rnic-perf ib_send_lat -n 200
rnic-perf ib_write_lat -n 200
rnic-perf ib_read_lat -n 200
rnic-perf ib_atomic_bw -n 200
rnic-perf ib_atomic_lat -n 200
# UC: SEND and WRITE; UD: SEND up to the port MTU (4096 by default).
rnic-perf ib_write_bw -c UC -s 65536 -n 200 --report_gbits
rnic-perf ib_send_bw -c UC -s 4096 -n 200 --report_gbits
rnic-perf ib_send_bw -c UD -s 4096 -n 200 --report_gbits
rnic-perf ib_send_lat -c UD -s 1024 -n 200
rnic-perf ib_write_bw -R -s 65536 -n 200 --report_gbits
rnic-perf ib_send_bw -R -s 65536 -n 200 --report_gbits
rnic-perf ib_write_bw -b -s 65536 -n 200 --report_gbits
rnic-perf ib_read_bw -b -s 65536 -n 200 --report_gbits
rnic-perf ib_write_bw -q 8 -s 65536 -n 200 --report_gbits
rnic-perf ib_send_bw -q 8 -s 4096 -n 200 --report_gbits
# The provider posts through the SQ doorbell record: while a full AckReq
# interval of packets waits for its ACK, the writer (VM 1) skips the
# doorbell and the device takes the WQE from the record.  A 64 KiB WRITE
# is 16 packets at the 4096-byte MTU, one AckReq interval, so a post
# finds the path busy whenever one earlier WRITE is still unacknowledged,
# whatever the host's load.  With 4 KiB WRITEs it depended on timing: 61%
# of posts used the record alone, 8% beside another test and a busy loop.
# Measured at 64 KiB: 98% alone, 99.7% beside another test and a busy
# loop; the check asks for one WQE in ten, as the device's policy
# promises, and the deterministic cases are in the qtests (rnic-db-test).
db0=$(counter sq_doorbells) rec0=$(counter sq_dbrec_wqes)
rnic-perf ib_write_bw -s 65536 -n 2000 --report_gbits
db=$(( $(counter sq_doorbells) - db0 )) rec=$(( $(counter sq_dbrec_wqes) - rec0 ))
log "2000 WRITEs of 64 KiB: $db SQ doorbells, $rec WQEs from the record"
if is_client && { [ "$rec" -lt 200 ] || [ "$db" -gt 1800 ]; }; then
    fail "the SQ doorbell record carried too few WQEs"
fi
log "OK on $(hostname)"
