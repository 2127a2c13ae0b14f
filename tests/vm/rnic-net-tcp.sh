#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Two launchers, each with one VM, joined over TCP as VMs on two hosts
# would be (--net stream --listen HOST:PORT in one, --connect HOST:PORT in
# the other; tests/vm/net-host.py pair starts both).  Each VM must know
# its place (index, addresses, the peer's), reach its peer on the virtio
# segment, then run RoCE over rnic with the peer: ibv_rc_pingpong -c and
# rping -V (data checked on arrival).
# vmlaunch: --rnic --timeout 240
set -eu
. rnic-test-lib rnic-net-tcp
n=$((RNIC_VM_INDEX + 1))
peer=$((2 - RNIC_VM_INDEX))
[ "$RNIC_NVMS" = 2 ] || fail "RNIC_NVMS=$RNIC_NVMS, not 2"
[ "$(hostname)" = "rnic-vm$RNIC_VM_INDEX" ] || fail "hostname $(hostname)"
[ "$RNIC_RNIC_MAC" = "52:54:00:52:02:0$n" ] || fail "rnic MAC $RNIC_RNIC_MAC"
[ "$RNIC_DATA_IP4" = "198.19.0.$n" ] || fail "data address $RNIC_DATA_IP4"
[ "$RNIC_PEER_DATA_IP4" = "198.19.0.$peer" ] || fail "peer's data address $RNIC_PEER_DATA_IP4"
log "VM $RNIC_VM_INDEX of 2, $RNIC_DATA_IP4, peer $RNIC_PEER_DATA_IP4"
rnic-retry 60 1 ping -c 1 -W 2 "$RNIC_PEER_IP4" >/dev/null ||
    fail "peer $RNIC_PEER_IP4 not reachable on the virtio segment"
rnic-pingpong 100 4096
log "OK on $(hostname)"
