#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# RoCEv2 over IPv6: the QPs use the GID of the rnic netdev's IPv6 address,
# so every frame is Ethernet/IPv6/UDP.  Data-verified RC ping-pong,
# rping -V through the RDMA connection manager on the IPv6 address, and
# WRITE bandwidth.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-ipv6
base=/sys/class/infiniband/$RNIC_IBDEV/ports/1
g6=""
# The address has a RoCE v1 GID too (docs/roce-v1.md); this test is v2's.
for g in "$base"/gids/*; do
    [ "$(cat "$base/gid_attrs/types/${g##*/}" 2>/dev/null)" = "RoCE v2" ] ||
        continue
    case $(cat "$g" 2>/dev/null) in
        fd52:0000:0000:0002:*) g6=${g##*/}; break ;;
    esac
done
[ -n "$g6" ] || fail "no GID for $RNIC_RNIC_IP6"
log "IPv6 GID index $g6 on $RNIC_IBDEV"

RNIC_GID_INDEX=$g6 RNIC_NO_RPING=1 rnic-pingpong 200 4096 || fail "ping-pong"
RNIC_PERF_GID=$g6 rnic-perf ib_write_bw -s 65536 -n 200 --report_gbits || fail "ib_write_bw"

server6=RNIC_VM0_RNIC_IP6
case $(role) in
    server) timeout 120 rping -s -a "${!server6}" -V -C 20 -S 4096 || fail "rping server" ;;
    client) sleep 1
            rnic-retry 30 2 timeout 60 rping -c -a "${!server6}" -V -C 20 -S 4096 || fail "rping client" ;;
esac
log "OK on $(hostname)"
