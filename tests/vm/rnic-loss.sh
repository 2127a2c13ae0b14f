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
# The last message's ACK can be lost after the client, which has every
# message, has exited: the server then retries into a QP that is gone and
# ends with a retry error, as on any RC device.  That one outcome (a
# single RETRY_EXC, on the server's send) is accepted when the client
# says it verified every exchange; anything else fails.
if is_server; then
    signal_wait 1 600 >/tmp/rnic-loss-peer &
    waiter=$!
fi
out=/tmp/rnic-loss-64k.log
ok=verified
RNIC_NO_RPING=1 rnic-pingpong 200 65536 >"$out" 2>&1 || ok=failed
cat "$out"
if is_client; then
    signal_send peer 1 "$ok" || fail "the server is gone"
    [ "$ok" = verified ] || fail "64 KiB ping-pong under loss failed"
else
    wait "$waiter" || fail "no word from the client"
    peer=$(cat /tmp/rnic-loss-peer)
    if [ "$ok" != verified ]; then
        if [ "$peer" = verified ] &&
           [ "$(grep -c 'Failed status' "$out")" = 1 ] &&
           grep -q 'Failed status transport retry counter exceeded (12) for wr_id 2$' "$out"; then
            log "the last ACK was lost after the client left; it verified all 200"
        else
            fail "64 KiB ping-pong under loss failed (client: $peer)"
        fi
    fi
fi
for n in tx_loss_injected retransmits ack_timeouts ooo_kept sr_resends; do
    log "$n $(counter "$n" 2>/dev/null)"
done
rdma statistic show link "$RNIC_IBDEV/1" || true
[ "$(counter tx_loss_injected)" -gt 0 ] || fail "no packet was dropped"
[ "$(counter retransmits)" -gt 0 ] || fail "retransmit counter is zero"
[ "$(counter ooo_kept)" -gt 0 ] || fail "nothing was kept past a hole"
[ "$(counter sr_resends)" -gt 0 ] || fail "no hole was resent alone"
log "OK on $(hostname)"
