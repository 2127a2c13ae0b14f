#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs the rnic qtests from an already built QEMU tree; builds nothing.
#
#   tests/qtest/run-rnic-qtests.sh <qemu-build-dir> [filter]
#
# Each test of the qos graph whose path contains "/rnic/" (and the optional
# filter) runs on its own, with its result printed.  The exit status is 0
# only if every test passed and at least one ran.
#
# Environment: QTEST_QEMU_BINARY overrides <build>/qemu-system-x86_64;
# RNIC_QTEST_TIMEOUT is the limit per test in seconds (default 120).

set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 <qemu-build-dir> [filter]" >&2
    exit 2
fi

build=$(cd "$1" && pwd) || exit 2
filter=${2:-}
qos_test="$build/tests/qtest/qos-test"
QTEST_QEMU_BINARY=${QTEST_QEMU_BINARY:-$build/qemu-system-x86_64}
timeout_s=${RNIC_QTEST_TIMEOUT:-120}
export QTEST_QEMU_BINARY
# glibc fills freed and new heap blocks with this byte, so a use after
# free in the device reads garbage and fails loudly instead of passing.
MALLOC_PERTURB_=${MALLOC_PERTURB_:-165}
export MALLOC_PERTURB_

for f in "$qos_test" "$QTEST_QEMU_BINARY"; do
    if [ ! -x "$f" ]; then
        echo "$0: $f is missing; build it first" >&2
        exit 2
    fi
done

paths=$("$qos_test" -l | grep -E '/rnic(-b|-c|-netdev)?(-tests)?/' | grep -e "$filter")
if [ -z "$paths" ]; then
    echo "$0: qos-test lists no rnic test (is the rnic device built in?)" >&2
    exit 1
fi

pass=0
fail=0
failed=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM

for p in $paths; do
    name=${p##*/rnic*-tests/}
    if timeout -k 5 "$timeout_s" "$qos_test" -q -p "$p" >"$log" 2>&1; then
        echo "PASS $name"
        pass=$((pass + 1))
    else
        echo "FAIL $name"
        sed 's/^/    /' "$log" | tail -n 20
        fail=$((fail + 1))
        failed="$failed $name"
    fi
done

echo "rnic qtests: $pass passed, $fail failed"
if [ "$fail" -ne 0 ]; then
    echo "failed:$failed"
    exit 1
fi
exit 0
