#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# RoCE v1 between two VMs: the driver offers a v1 GID next to each v2 one,
# and ibv_rc_pingpong -c and ibv_ud_pingpong -c run through the v1 GID of
# the data address.  The device's tx/rx_roce_v1_pkts counters on both
# sides prove that the packets went as v1 (EtherType 0x8915), not v2.
# vmlaunch: -n 2 --rnic --timeout 600
set -u
. rnic-test-lib rnic-roce-v1
dev=$RNIC_IBDEV
port=/sys/class/infiniband/$dev/ports/1
peer=${RNIC_PEER_DATA_IP4:-}
out=$(mktemp)

# The index of the RoCE v1 GID ::ffff:$RNIC_DATA_IP4.
v1_index() {
    local want g idx
    want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
           ${RNIC_DATA_IP4//./ })
    for g in "$port"/gids/*; do
        idx=${g##*/}
        [ "$(cat "$g" 2>/dev/null)" = "$want" ] || continue
        [ "$(cat "$port/gid_attrs/types/$idx" 2>/dev/null)" = "IB/RoCE v1" ] &&
            { echo "$idx"; return 0; }
    done
    return 1
}

# The core adds GIDs asynchronously as addresses come up.
for _ in $(seq 1 20); do
    gid=$(v1_index) && break
    sleep 1
done
[ -n "${gid:-}" ] || {
    grep -H . "$port"/gid_attrs/types/* 2>/dev/null
    fail "no RoCE v1 GID for $RNIC_DATA_IP4"
}
log "RoCE v1 GID index $gid ($(cat "$port/gids/$gid"))"
# The core puts the default (link-local) GID first, as v1 then as v2.
[ "$(cat "$port/gid_attrs/types/0")" = "IB/RoCE v1" ] &&
    [ "$(cat "$port/gid_attrs/types/1")" = "RoCE v2" ] &&
    [ "$(cat "$port/gids/0")" = "$(cat "$port/gids/1")" ] ||
    fail "the default GID has no v1 twin at index 0"
tx0=$(counter tx_roce_v1_pkts) rx0=$(counter rx_roce_v1_pkts)

# pingpong GID-INDEX PROGRAM ARGS...: VM 0 serves, VM 1 connects (retried
# until VM 0 listens); -c checks every buffer.
pingpong() {
    local g=$1 rc=0
    shift
    if is_server; then
        timeout 120 "$@" -d "$dev" -g "$g" -c >"$out" 2>&1 || rc=$?
    else
        sleep 1
        rnic-retry 30 2 timeout 60 "$@" -d "$dev" -g "$g" -c "$peer" \
            >"$out" 2>&1 || rc=$?
    fi
    grep -q "invalid data" "$out" && rc=bad-data
    [ "$rc" = 0 ] || { cat "$out"; fail "$1 over GID $g: $rc"; }
    log "$1 over GID $g OK on $(hostname)"
}

pingpong "$gid" ibv_rc_pingpong -n 200 -s 4096
# UD messages fit one MTU with the 40-byte GRH.
pingpong "$gid" ibv_ud_pingpong -n 100 -s 512

tx=$(( $(counter tx_roce_v1_pkts) - tx0 )) rx=$(( $(counter rx_roce_v1_pkts) - rx0 ))
log "$tx RoCE v1 packets sent, $rx received"
# Each side sent and heard at least its 300 messages' worth as v1.
[ "$tx" -ge 300 ] || fail "only $tx RoCE v1 packets sent"
[ "$rx" -ge 300 ] || fail "only $rx RoCE v1 packets received"

# The same through the v2 GID of the address: none of it counts as v1.
tx0=$(counter tx_roce_v1_pkts) rx0=$(counter rx_roce_v1_pkts) all0=$(counter tx_pkts)
pingpong "$RNIC_GID_INDEX" ibv_rc_pingpong -n 50 -s 64
[ "$(counter tx_roce_v1_pkts)" = "$tx0" ] && [ "$(counter rx_roce_v1_pkts)" = "$rx0" ] ||
    fail "RoCE v2 traffic counted as v1"
[ $(( $(counter tx_pkts) - all0 )) -ge 50 ] || fail "no RoCE v2 traffic counted"
log "PASS"
