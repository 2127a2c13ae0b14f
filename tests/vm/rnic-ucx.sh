#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# UCX (Debian's ucx-utils and libucx0, unmodified) over rnic: ucx_info must
# list the rc_verbs and ud_verbs transports on the device, then
# ucx_perftest runs, VM 0 serving and VM 1 connecting, every test it has
# over the RC transport (tag matching from 8 B eager to 4 MiB rendezvous
# with RDMA READ, streams, puts, gets and atomics), the main ones over UD,
# and one with UCX's defaults; then two processes in one VM through the
# device's own loopback.  Every run must exit 0 and print its result, no
# process may abort or print "Fatal", and the device's counters must show
# the traffic went over rnic.
# vmlaunch: -n 2 --rnic --timeout 1200
set -u
. rnic-test-lib rnic-ucx
dev=$RNIC_IBDEV
peer=${RNIC_VM0_RNIC_IP4:-}
out=$(mktemp)

# ucx_info must see the device's RC and UD transports.
ucx_info -d >"$out" 2>&1 || { cat "$out"; fail "ucx_info -d"; }
for tl in rc_verbs ud_verbs; do
    awk -v tl="$tl" -v dev="$dev:1" '
        /Transport:/ { t = $NF } /Device:/ { if (t == tl && $NF == dev) ok = 1 }
        END { exit !ok }' "$out" || { cat "$out"; fail "ucx_info lists no $tl on $dev:1"; }
done
log "ucx_info lists rc_verbs and ud_verbs on $dev:1"

# The runs: "TLS TEST SIZE ITERS" per line; TLS "-" means UCX's defaults.
runs=$(cat <<'EOF'
rc tag_lat 8 2000
rc tag_bw 8 5000
rc tag_bw 4096 2000
rc tag_bw 65536 500
rc tag_bw 4194304 20
rc stream_bw 65536 500
rc ucp_put_bw 65536 500
rc ucp_put_lat 8 2000
rc ucp_get 65536 500
rc ucp_add 8 2000
rc ucp_fadd 8 2000
rc ucp_swap 8 2000
rc ucp_cswap 8 2000
ud tag_lat 8 2000
ud tag_bw 65536 200
ud stream_bw 4096 500
ud ucp_put_bw 4096 500
ud ucp_get 4096 500
ud ucp_fadd 8 1000
- tag_bw 65536 500
EOF
)

# The output's error lines, less one that UCX prints on every RC device but
# ConnectX: its generic verbs memory domain has no key for remote flush
# (uct_ib_verbs_md_open sets none; only the mlx5 one has), so the RMA
# tests' closing remote flush is refused, after the data has moved.
errors() {
    grep -v -e "flush(remote) is not supported" \
        -e "error during flush: Unsupported operation" "$out"
}

# run_one N TLS TEST SIZE ITERS [HOST]: one ucx_perftest process on
# test_port N, the server without HOST.  No output may hold an error, and
# the client's must end with its result.
run_one() {
    local port tls=$2 test=$3 size=$4 iters=$5 host=${6:-} rc i
    port=$(test_port "$1") || fail "no port $1"
    local env=() args=(-P 0 -p "$port" -t "$test" -s "$size" -n "$iters" -w 10)
    [ "$tls" != - ] && env=(UCX_TLS="$tls,self")
    if [ -n "$host" ]; then
        # Until the server is up and listening, connect() fails: again.
        for i in $(seq 1 60); do
            env "${env[@]}" timeout 300 ucx_perftest "$host" "${args[@]}" \
                >"$out" 2>&1
            rc=$?
            grep -q "client failed. connect() failed" "$out" || break
            sleep 1
        done
    else
        env "${env[@]}" timeout 360 ucx_perftest "${args[@]}" >"$out" 2>&1
        rc=$?
    fi
    if [ $rc != 0 ] || errors | grep -qiE "fatal|abort|error" ||
       { [ -n "$host" ] && ! grep -q "^Final:" "$out"; }; then
        cat "$out"
        fail "$tls $test ${size}B on $(hostname) ($rc)"
    fi
    [ -n "$host" ] &&
        log "$tls $test ${size}B: $(grep '^Final:' "$out" | tr -s ' ')"
    return 0
}

before=$(counter tx_bytes)
# A port of its own for every run: n counts them.
n=0
while read -r tls test size iters; do
    [ -n "$tls" ] || continue
    n=$((n + 1))
    case $(role) in
        server) run_one "$n" "$tls" "$test" "$size" "$iters" ;;
        client) run_one "$n" "$tls" "$test" "$size" "$iters" "$peer" ;;
    esac
done <<<"$runs"
sent=$(( $(counter tx_bytes) - before ))
# 500 x 64 KiB at least went each way over the device.
[ "$sent" -gt $((500 * 65536)) ] || fail "only $sent bytes went over $dev"
log "$sent bytes sent over $dev"

# Two processes in one VM, through the device (no shared memory).
if is_server; then
    before=$(counter loopback_pkts 2>/dev/null || echo 0)
    for t in "tag_bw 65536 500" "ucp_get 65536 500" "tag_lat 8 1000"; do
        set -- $t
        n=$((n + 1))
        # The server in a subshell with an output file of its own.
        ( out=$(mktemp)
          UCX_TLS=rc_verbs,ud_verbs,self run_one "$n" - "$1" "$2" "$3" ) &
        spid=$!
        UCX_TLS=rc_verbs,ud_verbs,self run_one "$n" - "$1" "$2" "$3" \
            "$RNIC_RNIC_IP4" || fail "loopback $1"
        wait $spid || fail "loopback server $1"
    done
    looped=$(( $(counter loopback_pkts 2>/dev/null || echo 0) - before ))
    [ "$looped" -gt 1000 ] || fail "only $looped packets looped back on $dev"
    log "loopback runs passed, $looped packets looped back"
fi
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "all passed on $(hostname)"
