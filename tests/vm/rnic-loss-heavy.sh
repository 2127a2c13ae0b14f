#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# 20% of every RoCE frame lost on both devices: each transfer either
# completes, or fails with a transport retry error (RETRY_EXC_ERR) once
# the QP's retries are spent.  It never hangs (each run is bounded well
# above timeout x retry_cnt) and ibv_rc_pingpong -c never sees wrong data.
# vmlaunch: -n 2 --rnic --rnic-opt loss=20 --rnic-opt loss-seed=3 --timeout 900
set -u
. rnic-test-lib rnic-loss-heavy
out=$(mktemp)

# run NAME COMMAND...: the outcome must be success or a retry error.
run() {
    local name=$1 rc
    shift
    "$@" >"$out" 2>&1
    rc=$?
    cat "$out"
    grep -qE "invalid data|data mismatch" "$out" &&
        fail "$name: data did not verify"
    [ $rc -eq 124 ] && fail "$name: hung"
    if [ $rc -ne 0 ]; then
        # The side whose QP ran out of retries reports status 12; its
        # peer only sees the other end go away.
        log "$name ended with an error ($rc)"
        if is_client; then
            grep -qE "status (12|transport retry)|retry counter exceeded" "$out" ||
                fail "$name: the client failed without a retry error"
        fi
    else
        log "$name completed"
    fi
}

# until_listening COMMAND...: runs COMMAND again only while its server is
# not listening yet; a transfer that started is never repeated.
until_listening() {
    local i
    for i in $(seq 1 30); do
        "$@" >"$out.try" 2>&1
        rc=$?
        cat "$out.try"
        grep -qE "Couldn't connect|RDMA_CM_EVENT_(REJECTED|UNREACHABLE)" "$out.try" ||
            return $rc
        sleep 2
    done
    return $rc
}

# One-sided transfers: the client has work in flight until it completes
# or its retries run out, and the server ends when the client does.
# Each tool has its own port.
args=(-d "$RNIC_IBDEV" -x "$RNIC_GID_INDEX" -F -n 100)
write_port=$(test_port 1) read_port=$(test_port 2)
case $(role) in
    server)
        run "ib_write_bw" timeout 240 ib_write_bw "${args[@]}" -s 65536 -p "$write_port"
        run "ib_read_bw" timeout 240 ib_read_bw "${args[@]}" -s 16384 -p "$read_port"
        rnic-pingpong-pair 4096 200 lossy || fail "ping-pong"
        ;;
    client)
        peer=$RNIC_PEER_DATA_IP4
        run "ib_write_bw" until_listening timeout 240 ib_write_bw "${args[@]}" -s 65536 -p "$write_port" "$peer"
        run "ib_read_bw" until_listening timeout 240 ib_read_bw "${args[@]}" -s 16384 -p "$read_port" "$peer"
        rnic-pingpong-pair 4096 200 lossy || fail "ping-pong"
        ;;
esac
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK on $(hostname)"
