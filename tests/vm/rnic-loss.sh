#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Retransmission: both devices drop 5% of their RoCE packets (loss=5, a
# fixed seed).  ibv_rc_pingpong -c -n 2000 must still complete with every
# buffer verified, and the retransmit counter each guest reads from its
# device must be non-zero.  Then 64 KiB messages (16 packets each, verified
# too): a packet lost within one leaves later ones arriving, so both
# halves of selective repeat must have worked on each device, the
# responder keeping what followed a hole (ooo_kept) and the requester
# resending only the hole (sr_resends).
# vmlaunch: -n 2 --rnic --rnic-opt loss=5 --rnic-opt loss-seed=7 --timeout 1200
set -u
. rnic-test-lib rnic-loss

RNIC_NO_RPING=1 rnic-pingpong 2000 4096 || fail "ping-pong under loss failed"
RNIC_NO_RPING=1 rnic-pingpong 200 65536 || fail "64 KiB ping-pong under loss failed"
for n in tx_loss_injected retransmits ack_timeouts ooo_kept sr_resends; do
    log "$n $(counter "$n" 2>/dev/null)"
done
rdma statistic show link "$RNIC_IBDEV/1" || true
[ "$(counter tx_loss_injected)" -gt 0 ] || fail "no packet was dropped"
[ "$(counter retransmits)" -gt 0 ] || fail "retransmit counter is zero"
[ "$(counter ooo_kept)" -gt 0 ] || fail "nothing was kept past a hole"
[ "$(counter sr_resends)" -gt 0 ] || fail "no hole was resent alone"
log "OK on $(hostname)"
