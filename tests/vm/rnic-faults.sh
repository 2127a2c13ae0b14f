#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Transfers under injected faults, in one boot: the device's fault
# properties (loss, reorder, duplicate, corrupt, delay) change at run time,
# so the launcher sets each step of the matrix on both devices over QMP
# (rnic-host-check faults): each fault alone at 1%, 5% and 10%, then all
# five at 2%, with fixed seeds (a change restarts the generators).  At each
# step ibv_rc_pingpong -c must verify every byte (rnic-pingpong-pair
# explains the one retry error allowed at the end), and ib_write_bw and
# ib_read_bw must complete.  Each device's injection counters must show
# that exactly the step's faults happened, and the kernel must not warn.
# (rping -V is left out: under reordering it hung once in about six runs,
# not understood yet.)
#
# The matrix runs as two tests side by side (tests/vm/meson.build), each
# with its part: RNIC_FAULTS names the faults whose 1/5/10% steps it runs,
# and RNIC_FAULTS_ALL=1 adds the step with all five.  Unset, one boot runs
# it all.
# vmlaunch: -n 2 --rnic --timeout 900 --rnic-opt loss-seed=7 --rnic-opt fault-seed=11
set -u
. rnic-test-lib rnic-faults
faults=(loss reorder duplicate corrupt delay)

steps=()
for f in ${RNIC_FAULTS:-${faults[*]}}; do
    case " ${faults[*]} " in
        *" $f "*) ;;
        *) fail "RNIC_FAULTS: no fault '$f'" ;;
    esac
    for pct in 1 5 10; do
        steps+=("$f=$pct")
    done
done
if [ "${RNIC_FAULTS_ALL:-1}" = 1 ]; then
    steps+=("loss=2 reorder=2 duplicate=2 corrupt=2 delay=2")
fi

injected() { counter "tx_$1_injected"; }

step=0
for want in "${steps[@]}"; do
    step=$((step + 1))
    # Every fault named, so the last step's faults end here.
    set=()
    for f in "${faults[@]}"; do
        pct=0
        for w in $want; do [ "${w%=*}" = "$f" ] && pct=${w#*=}; done
        set+=("$f=$pct")
    done
    RNIC_HOST_CHECK_WAIT=2 rnic-host-check faults "${set[@]}"
    # Neither VM sends before both devices have the step's setting (a
    # port of its own each step).
    if is_server; then
        signal_wait "$step" 120 >/dev/null || fail "step $step: VM 1 never came"
    else
        signal_send peer "$step" || fail "step $step: VM 0 unreachable"
    fi
    log "step $step: $want"
    declare -A before=()
    for f in "${faults[@]}"; do before[$f]=$(injected "$f"); done

    rnic-pingpong-pair 4096 100 || fail "$want: 4 KiB ping-pong"
    rnic-pingpong-pair 65536 10 || fail "$want: 64 KiB ping-pong"
    rnic-perf ib_write_bw -s 65536 -n 50 --report_gbits >/dev/null ||
        fail "$want: ib_write_bw"
    rnic-perf ib_read_bw -s 16384 -n 50 --report_gbits >/dev/null ||
        fail "$want: ib_read_bw"

    line=""
    hit=0
    for f in "${faults[@]}"; do
        d=$(($(injected "$f") - before[$f]))
        line+=" $f+$d"
        case " $want " in
            *" $f="*) hit=$((hit + d)) ;;
            *) [ "$d" = 0 ] || fail "$want: $d frames got $f, which is off" ;;
        esac
    done
    log "$want: injected$line"
    [ "$hit" -gt 0 ] || fail "$want: no fault was injected"
done

for n in retransmits rx_icrc_errors duplicate_request; do
    log "$n $(counter "$n")"
done
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK on $(hostname), ${#steps[@]} fault settings"
