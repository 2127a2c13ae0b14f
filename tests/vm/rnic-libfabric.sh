#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# libfabric (Debian's libfabric-bin, unmodified, default settings) over
# rnic: fi_info must list the verbs provider on the device for msg, rdm
# (verbs;ofi_rxm) and dgram endpoints, then fi_pingpong, VM 0 serving and
# VM 1 connecting, checks every byte (-c) from 8 B to 1 MiB over msg and
# rdm endpoints, and over the dgram provider on UD where it applies.
# vmlaunch: -n 2 --rnic --timeout 1200
set -u
. rnic-test-lib rnic-libfabric
peer=${RNIC_VM0_RNIC_IP4:-}
out=$(mktemp)

for ep in FI_EP_MSG FI_EP_RDM; do
    fi_info -p verbs -t "$ep" >"$out" 2>&1 || { cat "$out"; fail "fi_info -t $ep"; }
    grep -q "domain: *$RNIC_IBDEV" "$out" || { cat "$out"; fail "fi_info -t $ep lists no $RNIC_IBDEV"; }
done
log "fi_info lists $RNIC_IBDEV for msg and rdm"

# pp N PROVIDER EP SIZE ITERS: fi_pingpong with data checks, on
# test_port N.
pp() {
    local port prov=$2 ep=$3 size=$4 iters=$5 rc i
    local args=(-p "$prov" -e "$ep" -c -S "$size" -I "$iters")
    port=$(test_port "$1") || fail "no port $1"
    case $(role) in
        server)
            timeout 300 fi_pingpong "${args[@]}" -B "$port" >"$out" 2>&1
            rc=$? ;;
        client)
            # Until the server is up and listening, connecting fails: again.
            for i in $(seq 1 60); do
                timeout 240 fi_pingpong "${args[@]}" -P "$port" "$peer" \
                    >"$out" 2>&1
                rc=$?
                grep -q "failed to connect" "$out" || break
                sleep 1
            done ;;
        *) return 0 ;;
    esac
    if [ $rc != 0 ] || grep -qiE "error|fail" "$out"; then
        cat "$out"
        fail "fi_pingpong -p '$prov' -e $ep -S $size ($rc)"
    fi
    log "$prov $ep ${size}B: $(tail -1 "$out" | tr -s ' ')"
}

# A port of its own for every run: n counts them.
n=0
for size in 8 4096 65536 1048576; do
    for pe in "verbs msg" "verbs;ofi_rxm rdm"; do
        set -- $pe
        n=$((n + 1))
        pp "$n" "$1" "$2" "$size" 100
    done
done
# Datagrams: one MTU each (UD carries no more).
n=$((n + 1))
pp "$n" "verbs;ofi_rxd" rdm 4096 100
n=$((n + 1))
pp "$n" verbs dgram 1024 100
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "all passed on $(hostname)"
