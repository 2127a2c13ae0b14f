#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Open MPI 5 (Debian's openmpi-bin, unmodified, started over ssh by
# mpirun) across two and three VMs over rnic.  rnic-mpi-check (mpi4py)
# checks every byte of a ping-pong and a stream from 8 B to 4 MiB between
# two VMs, then allreduce, alltoall, bcast and allgather among three.
#
# Open MPI puts pml ucx above ob1 only for the kernel drivers its
# pml_ucx_devices parameter names, "mlx*" by default: on every other RDMA
# NIC (bnxt_re, irdma, erdma, rnic) its defaults take ob1 over TCP
# (docs/middleware.md).  So the checks run with the defaults once, then
# with pml ucx (UCX over rnic), NetPIPE (NPopenmpi) with it, and over
# libfabric (pml cm, mtl ofi, the verbs provider); the device's counters
# must show those went over rnic.
# vmlaunch: -n 3 --rnic --timeout 1800
set -u
. rnic-test-lib rnic-mpi
out=$(mktemp)
# The test VMs run everything as root, which mpirun refuses unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mkdir -p -m 0755 /run/sshd
/usr/sbin/sshd || fail "sshd"

if ! is_server; then
    # Stay up, ranks and all, until VM 0 is done with us.
    signal_wait 1 1700 >/dev/null || fail "no word from VM 0"
    rnic-dmesg-check || fail "kernel warnings or rnic errors"
    log "VM $RNIC_VM_INDEX done"
    exit 0
fi

for h in rnic-vm1 rnic-vm2; do
    rnic-retry 60 1 ssh -o ConnectTimeout=5 "$h" true ||
        fail "no ssh to $h"
done

# What the device saw, for a failure's report: its non-zero counters and
# the QPs left.
on_fail() {
    log "non-zero counters: $(grep -v '^0$' -H "$(counter_dir)"/* 2>/dev/null |
        sed 's|.*/||' | tr '\n' ' ')"
    rdma resource show qp 2>&1 | head -20
}

# mpirun ... : one run, which must exit 0 with rnic-mpi-check's OK line.
# Each takes well under a minute here; 300 s bounds a hang.
run() {
    local name=$1 rc
    shift
    timeout 300 mpirun "$@" >"$out" 2>&1
    rc=$?
    grep -a "rnic-mpi-check:" "$out" | head -20
    if [ $rc != 0 ] || grep -aqiE "abort|fatal|error" "$out"; then
        cat "$out"
        fail "$name ($rc)"
    fi
}

run "p2p, Open MPI's defaults" -np 2 -H rnic-vm0,rnic-vm1 \
    python3 /opt/rnic/bin/rnic-mpi-check p2p
grep -aq "rnic-mpi-check: OK" "$out" || fail "p2p with the defaults: no OK"

before=$(counter tx_bytes)
run "p2p, pml ucx" --mca pml ucx -np 2 -H rnic-vm0,rnic-vm1 \
    python3 /opt/rnic/bin/rnic-mpi-check p2p
grep -aq "rnic-mpi-check: OK" "$out" || fail "p2p over UCX: no OK"
sent=$(( $(counter tx_bytes) - before ))
# Rank 0 alone sends over 100 MB in the p2p check.
[ "$sent" -gt 100000000 ] || fail "p2p over UCX sent only $sent bytes over rnic"
log "p2p over UCX moved $sent bytes through $RNIC_IBDEV"

run "collectives, pml ucx" --mca pml ucx -np 3 \
    -H rnic-vm0,rnic-vm1,rnic-vm2 python3 /opt/rnic/bin/rnic-mpi-check coll
grep -aq "rnic-mpi-check: OK" "$out" || fail "collectives: no OK"

# NetPIPE: up to 1 MiB, each size checked by its own ping-pong.
run "NetPIPE" --mca pml ucx -np 2 -H rnic-vm0,rnic-vm1 \
    NPopenmpi -u 1048576 -o /tmp/np.out
awk 'NF >= 3 { n++ } END { exit n < 20 }' /tmp/np.out ||
    { cat /tmp/np.out; fail "NetPIPE wrote too few rows"; }
log "NetPIPE: $(wc -l </tmp/np.out) sizes, peak $(sort -g -k2 /tmp/np.out | tail -1 | awk '{print $2 " Mbps at " $1 " B"}')"

before=$(counter tx_bytes)
# libfabric's registration cache stays on.  UCX's libucm, which Open MPI
# loads, patches sbrk() so that heap trims no longer reach the brk() hook
# of the memory monitor Open MPI gives libfabric: a buffer on a trimmed
# and regrown heap then gets a stale registration and the data lands in
# the old pages, on any verbs device (docs/middleware.md).  With libucm's
# mmap hooks off the monitor sees every trim.
run "p2p, mtl ofi (verbs)" --mca pml cm --mca mtl ofi \
    --mca mtl_ofi_provider_include "verbs;ofi_rxm" \
    -x UCX_MEM_MMAP_HOOK_MODE=none \
    -np 2 -H rnic-vm0,rnic-vm1 python3 /opt/rnic/bin/rnic-mpi-check p2p
grep -aq "rnic-mpi-check: OK" "$out" || fail "p2p over OFI: no OK"
sent=$(( $(counter tx_bytes) - before ))
[ "$sent" -gt 100000000 ] || fail "p2p over OFI sent only $sent bytes over rnic"
log "p2p over libfabric moved $sent bytes through $RNIC_IBDEV"

for i in 1 2; do
    signal_send "$i" 1 done || fail "VM $i did not hear we are done"
done
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "all passed"
