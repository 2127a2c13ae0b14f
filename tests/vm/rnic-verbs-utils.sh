#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The other rdma-core example programs between two VMs over rnic, VM 0
# serving and VM 1 connecting: ibv_uc_pingpong, ibv_ud_pingpong and
# ibv_srq_pingpong (all with -c, which checks the data), ucmatose with
# several connections, udaddy, rstream, riostream and rping -V over the RDMA
# CM, and mckey to a multicast group.  Each program's own exit status and
# "invalid data" report decide.
# vmlaunch: -n 2 --rnic --timeout 900
set -u
. rnic-test-lib rnic-verbs-utils
dev=$RNIC_IBDEV
gid=$RNIC_GID_INDEX
me=$RNIC_DATA_IP4
peer=${RNIC_PEER_DATA_IP4:-}
out=$(mktemp)

# run NAME SERVER-COMMAND CLIENT-COMMAND: the server in VM 0, the client
# (retried while the server is not listening yet) in VM 1.
run() {
    local name=$1 server=$2 client=$3
    case $(role) in
        server) timeout 180 bash -c "$server" >"$out" 2>&1 ;;
        client) sleep 1
                rnic-retry 30 2 timeout 120 bash -c "$client" >"$out" 2>&1 ;;
        *) return 0 ;;
    esac
    rc=$?
    # rnic-retry's own "try N failed" lines (a server not listening yet)
    # are no failure of the program.
    if [ $rc != 0 ] ||
       grep -v '^rnic-retry: ' "$out" | grep -q "invalid data\|Failed\|failed"; then
        cat "$out"
        fail "$name ($rc)"
    fi
    log "$name OK on $(hostname)"
}

pp="-d $dev -g $gid -c -n 100"
run ibv_uc_pingpong "ibv_uc_pingpong $pp" "ibv_uc_pingpong $pp $peer"
# UD messages fit one MTU with the 40-byte GRH.
run ibv_ud_pingpong "ibv_ud_pingpong $pp -s 512" "ibv_ud_pingpong $pp -s 512 $peer"
run ibv_srq_pingpong "ibv_srq_pingpong $pp -q 4" "ibv_srq_pingpong $pp -q 4 $peer"
run ucmatose "ucmatose -b $me -c 4 -C 20" "ucmatose -s $peer -c 4 -C 20"
run udaddy "udaddy -b $me -c 2 -C 20" "udaddy -s $peer -c 2 -C 20"
run rstream "rstream -b $me -S 65536 -C 100" "rstream -s $peer -S 65536 -C 100"
run riostream "riostream -b $me -S 65536 -C 100" "riostream -s $peer -S 65536 -C 100"
# rping -V: RDMA READ, WRITE and SEND of a pattern, every round compared
# byte for byte; the client must also have printed all 1000 rounds (it
# exits 0 on a disconnect).
run rping "rping -s -a $me -V -C 1000" \
    "set -o pipefail; rping -c -a $peer -V -v -C 1000 |
     awk '/^ping data: rdma-ping-/ {n++} END {print n + 0, \"rounds\"; exit n != 1000}'"

# mckey: VM 0 joins and waits for 10 messages; VM 1 keeps sending rounds
# of 10 until VM 0 has had time to join.
case $(role) in
    server) timeout 120 mckey -m 239.1.2.3 -b "$me" -C 10 >"$out" 2>&1 ||
                { cat "$out"; fail "mckey receiver"; } ;;
    client) sleep 5
            for i in 1 2 3 4 5 6; do
                timeout 30 mckey -m 239.1.2.3 -b "$me" -s -C 10 >"$out" 2>&1 ||
                    { cat "$out"; fail "mckey sender"; }
                sleep 2
            done ;;
esac
log "mckey OK on $(hostname)"
log "OK on $(hostname)"
