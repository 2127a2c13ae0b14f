#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ECN: both devices mark 10% of their RoCE packets CE, as a congested
# switch would (ce-mark=10).  ibv_rc_pingpong -c -n 2000 must complete
# with every buffer verified, and each guest's counters must show marked
# requests received, congestion notifications sent and received, and the
# window cuts they caused.
# vmlaunch: -n 2 --rnic --rnic-opt ce-mark=10 --rnic-opt fault-seed=5 --timeout 1200
set -u
. rnic-test-lib rnic-ecn

RNIC_NO_RPING=1 rnic-pingpong 2000 4096 || fail "ping-pong with CE marks failed"
for n in ecn_ce_rcvd cnp_sent cnp_rcvd cwnd_cuts; do
    log "$n $(counter "$n" 2>/dev/null)"
    [ "$(counter "$n" 2>/dev/null)" -gt 0 ] 2>/dev/null || fail "$n is zero"
done
log "OK on $(hostname)"
