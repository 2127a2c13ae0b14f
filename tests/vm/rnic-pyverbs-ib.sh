#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-core's pyverbs suite on an InfiniBand port of rnic: two HCAs back
# to back (--fabric ib), opensm in VM 0 bringing both ports ACTIVE, and
# the suite run in VM 0 on its port with GID index 0 (the SM's prefix and
# the port GUID).  Each test makes all its QPs on the one device and
# addresses them by the port's own LID (or GID), which the device loops
# back, and the RDMA CM tests resolve VM 0's IPoIB address to its own
# port.  VM 1 gives the port a link and stays up until VM 0 is done.
# There is no Soft-RoCE baseline: rxe is Ethernet only.  Fails on any
# failure or error and on any skip that neither
# scripts/guest/rnic-pyverbs-skips.txt nor rnic-pyverbs-ib-skips.txt
# lists with its reason (or that one lists but no longer happens).
# vmlaunch: -n 2 --rnic --fabric ib --mem 2048 --timeout 900
set -u
. rnic-test-lib rnic-pyverbs-ib
. rnic-ib-lib

[ "$(cat "$ib_port/link_layer")" = InfiniBand ] || fail "$RNIC_IBDEV is not InfiniBand"

case $(role) in
server)
    # VM 1 waits for a word from here, however this ends.
    on_fail() {
        signal_send 1 1 failed 60 || true
        [ -f /var/log/opensm.log ] && tail -n 30 /var/log/opensm.log
        true
    }
    ib_start_sm
    ib_wait_active || fail "port not ACTIVE after 240 s of opensm"
    log "ACTIVE, LID $(ib_lid), SM LID $(($(cat "$ib_port/sm_lid")))"
    # The RDMA CM tests take the address of the first netdev of the HCA's
    # PCI function: with no Ethernet function on an IB port, IPoIB's ib0.
    ipoib_up
    mountpoint -q /dev/shm || mount -t tmpfs -o size=256m tmpfs /dev/shm
    # 2 MiB huge pages for the huge-page MR tests.
    echo 128 > /proc/sys/vm/nr_hugepages
    ulimit -l unlimited
    rnic-pyverbs --skips /opt/rnic/bin/rnic-pyverbs-skips.txt \
        --skips /opt/rnic/bin/rnic-pyverbs-ib-skips.txt \
        --extra /opt/rnic/bin/test_rnic_srq_resize.py \
        --extra /opt/rnic/bin/test_rnic_timestamp.py \
        "$RNIC_IBDEV:$RNIC_GID_INDEX" || fail "pyverbs suite on the IB port"
    signal_send 1 1 done || fail "VM 1 did not hear"
    ;;
client)
    ib_wait_active || fail "port not ACTIVE after 240 s"
    log "ACTIVE, LID $(ib_lid); up until VM 0 has run the suite"
    word=$(signal_wait 1 840) || fail "no word from VM 0"
    [ "$word" = done ] || fail "VM 0 $word"
    ;;
esac
log "all passed on $(hostname)"
