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
fail() { echo "rnic-ecn: FAILED: $*"; exit 1; }
c=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters

RNIC_NO_RPING=1 rnic-pingpong 2000 4096 || fail "ping-pong with CE marks failed"
for n in ecn_ce_rcvd cnp_sent cnp_rcvd cwnd_cuts; do
    echo "rnic-ecn: $n $(cat "$c/$n" 2>/dev/null)"
    [ "$(cat "$c/$n" 2>/dev/null)" -gt 0 ] 2>/dev/null || fail "$n is zero"
done
echo "rnic-ecn: OK on $(hostname)"
