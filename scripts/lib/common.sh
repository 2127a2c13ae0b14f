# SPDX-License-Identifier: GPL-2.0-or-later
#
# Shared helpers for the rnic build and test scripts: paths, logged steps,
# input stamps and host package installation.  Sourced by scripts/rnic.sh.

RNIC_ROOT=${RNIC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CACHE=${RNIC_CACHE:-$RNIC_ROOT/.cache}
LOGS=$CACHE/logs
STAMPS=$CACHE/stamps
PY=/usr/bin/python3

mkdir -p "$LOGS" "$STAMPS"

# Print a path relative to the repository root when it lies inside it.
rel() {
    case $1 in
        "$RNIC_ROOT"/*) printf '%s\n' "${1#"$RNIC_ROOT"/}" ;;
        *) printf '%s\n' "$1" ;;
    esac
}

note() { printf 'rnic: %s\n' "$*"; }

die() {
    printf 'rnic: %s\n' "$*" >&2
    exit 1
}

# Child process of the step that is currently running, so that a signal
# can take its whole process group down; and of the one step that may run
# in the background beside it (run_step_start).
RNIC_STEP_PID=
RNIC_BG_PID=
RNIC_BG_NAME=
RNIC_BG_LOG=
RNIC_BG_START=

on_signal() {
    local sig=$1
    trap - INT TERM HUP
    if [ -n "$RNIC_BG_PID" ]; then
        kill -TERM -- "-$RNIC_BG_PID" 2>/dev/null
    fi
    if [ -n "$RNIC_STEP_PID" ]; then
        kill -TERM -- "-$RNIC_STEP_PID" 2>/dev/null
        # Give the step (e.g. the VM launcher) a moment to clean up.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 -- "-$RNIC_STEP_PID" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$RNIC_STEP_PID" 2>/dev/null
    fi
    printf 'rnic: interrupted by SIG%s\n' "$sig" >&2
    exit 130
}

install_signal_traps() {
    trap 'on_signal INT' INT
    trap 'on_signal TERM' TERM
    trap 'on_signal HUP' HUP
}

# run_step NAME LOGNAME COMMAND...
#
# Runs COMMAND (usually a shell function) in its own process group with all
# output sent to .cache/logs/LOGNAME.log.  On failure prints exactly one line
# naming the step and the log file, and exits non-zero.
run_step() {
    local name=$1 logname=$2
    shift 2
    local log=$LOGS/$logname.log
    local start=$SECONDS
    printf 'rnic: %s ...\n' "$name"
    set -m
    ( set -e; "$@" ) >"$log" 2>&1 </dev/null &
    RNIC_STEP_PID=$!
    set +m
    step_end "$RNIC_STEP_PID" "$name" "$log" "$start"
    RNIC_STEP_PID=
}

# step_end PID NAME LOG START: waits for a step's process and prints its
# one line; a failed step also stops a background step and exits.
step_end() {
    local rc
    set +e
    wait "$1"
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        printf "rnic: step '%s' failed, see %s\n" "$2" "$(rel "$3")" >&2
        stop_bg_step
        exit 1
    fi
    printf 'rnic: %s done (%ss)\n' "$2" "$((SECONDS - $4))"
}

# A failing step ends the command: take a background step down with it.
stop_bg_step() {
    if [ -n "$RNIC_BG_PID" ]; then
        kill -TERM -- "-$RNIC_BG_PID" 2>/dev/null
        wait "$RNIC_BG_PID" 2>/dev/null
        RNIC_BG_PID=
    fi
}

# run_step_start NAME LOGNAME COMMAND...
#
# Like run_step, but COMMAND runs in the background while the caller goes
# on; run_step_wait waits for it and reports as run_step does.  For a step
# that mostly waits for the network or the disk (debootstrap) beside one
# that computes (the QEMU build).  One at a time.
run_step_start() {
    RNIC_BG_NAME=$1
    RNIC_BG_LOG=$LOGS/$2.log
    shift 2
    RNIC_BG_START=$SECONDS
    printf 'rnic: %s ... (in the background)\n' "$RNIC_BG_NAME"
    set -m
    ( set -e; "$@" ) >"$RNIC_BG_LOG" 2>&1 </dev/null &
    RNIC_BG_PID=$!
    set +m
}

run_step_wait() {
    local pid=$RNIC_BG_PID
    [ -n "$pid" ] || return 0
    RNIC_BG_PID=
    step_end "$pid" "$RNIC_BG_NAME" "$RNIC_BG_LOG" "$RNIC_BG_START"
}

# run_fg NAME COMMAND...
#
# Like run_step, but the command's output goes to the terminal (used for the
# demo and the test suite, whose output is the point).  The command itself
# is responsible for naming its failing step and log.
run_fg() {
    local name=$1 rc
    shift
    set -m
    "$@" </dev/null &
    RNIC_STEP_PID=$!
    set +m
    set +e
    wait "$RNIC_STEP_PID"
    rc=$?
    set -e
    RNIC_STEP_PID=
    return "$rc"
}

# hash_inputs PATH... -- prints one hash over the names and contents of all
# files below the given paths (missing paths hash as absent).  Extra strings
# may be given with 'str:TEXT'.
hash_inputs() {
    local p
    {
        for p in "$@"; do
            case $p in
                str:*) printf 'string %s\n' "${p#str:}" ;;
                *)
                    if [ -e "$p" ]; then
                        find -L "$p" -type f -not -name '*.pyc' -print0 2>/dev/null |
                            LC_ALL=C sort -z | xargs -0 -r sha256sum
                    else
                        printf 'absent %s\n' "$p"
                    fi
                    ;;
            esac
        done
    } | sed "s|$RNIC_ROOT/||g" | sha256sum | cut -c1-16
}

stamp_ok() { [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_set() { printf '%s\n' "$2" >"$STAMPS/$1"; }
stamp_clear() { rm -f "$STAMPS/$1"; }

# Git identity for the throw-away repositories under .cache/src.
git_local() {
    git -c user.name='rnic build' -c user.email='rnic-build@localhost' -c gc.auto=0 \
        -c advice.detachedHead=false -c init.defaultBranch=main "$@"
}
