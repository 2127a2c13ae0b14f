#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# style-check.sh qemu|kernel|sparse|shell
#
# What upstream reviewers run first, run here as tests:
#   qemu    QEMU's scripts/checkpatch.pl on patches/qemu and, as files, on
#           hw/rnic, the IB switch and the rnic qtests: no error (warnings
#           are reported);
#   kernel  the kernel's scripts/checkpatch.pl --strict on the guest
#           driver's own sources and the uverbs uapi header: no error,
#           warning or check.  The device ABI header copy is QEMU-styled
#           and left out (docs/upstreaming.md);
#   sparse  the module built with sparse (make C=2) against the host's
#           kernel headers: no sparse report;
#   shell   every shell script parses (bash -n), and none that sets
#           pipefail pipes into head: head leaves early, the writer dies
#           of SIGPIPE and pipefail turns that into a failure that comes
#           and goes with the size of the output.
# The kernel's checkpatch comes from Debian's linux-source-6.1 package
# (three files of it, kept in .cache/tools).

set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=$top/.cache
fail=0

note() { echo "style-check: $*"; }

check_qemu() {
    local cp=$cache/src/qemu/scripts/checkpatch.pl f out
    [ -x "$cp" ] || { note "no QEMU source tree with checkpatch.pl at $cp"; exit 1; }
    for f in "$top"/patches/qemu/*.patch; do
        out=$("$cp" --no-tree "$f" 2>&1) || { echo "$out"; fail=1; }
        note "$(basename "$f"): $(grep '^total:' <<<"$out")"
    done
    # Relative paths: some rules depend on where a file lives (tests/).
    cd "$top"
    for f in hw/rnic/*.[ch] contrib/rnic-ibswitch/*.[ch] \
             tests/qtest/rnic*.[ch] tests/qtest/libqos/rnic.[ch] \
             tests/qtest/fuzz/rnic*.c; do
        out=$("$cp" --no-tree -f "$f" 2>&1) || { echo "$out"; fail=1; }
        grep -q '^total: 0 errors, 0 warnings' <<<"$out" ||
            note "$f: $(grep '^total:' <<<"$out")"
    done
}

kernel_checkpatch() {
    local dir=$cache/tools/linux-checkpatch deb
    if [ ! -x "$dir/scripts/checkpatch.pl" ]; then
        mkdir -p "$dir" "$cache/debs"
        (cd "$cache/debs" && timeout 600 apt-get download -q linux-source-6.1 >/dev/null)
        deb=$(ls -t "$cache"/debs/linux-source-6.1_*.deb | sed -n 1p)
        dpkg-deb --fsys-tarfile "$deb" |
            tar -xO --wildcards './usr/src/linux-source-6.1.tar.xz' |
            tar -xJ -C "$dir" --strip-components=1 --wildcards \
                'linux-source-6.1/scripts/checkpatch.pl' \
                'linux-source-6.1/scripts/spelling.txt' \
                'linux-source-6.1/scripts/const_structs.checkpatch'
    fi
    echo "$dir/scripts/checkpatch.pl"
}

check_kernel() {
    local cp f out
    cp=$(kernel_checkpatch)
    for f in "$top"/guest-driver/kernel/*.[ch] "$top"/include/uapi/rdma/rnic-abi.h; do
        out=$("$cp" --strict --no-tree --terse --show-types -f "$f" 2>/dev/null |
              grep -v '^total:' || true)
        if [ -n "$out" ]; then
            echo "$out"
            fail=1
        fi
    done
    [ $fail = 0 ] && note "kernel checkpatch --strict: guest-driver/kernel clean"
    return 0
}

check_sparse() {
    local kver kdir work out
    command -v sparse >/dev/null || { note "sparse is not installed"; exit 1; }
    kver=$(ls /lib/modules | sort -V | tail -n1)
    kdir=/lib/modules/$kver/build
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    cp -r "$top"/guest-driver/kernel/. "$work"/
    out=$(make -s -C "$kdir" M="$work" C=2 modules 2>&1) || { echo "$out"; fail=1; return 0; }
    out=$(grep -E '(warning|error):' <<<"$out" || true)
    if [ -n "$out" ]; then
        echo "$out"
        fail=1
    else
        note "sparse on $kver: no report"
    fi
}

check_shell() {
    local f n=0 bad
    while IFS= read -r f; do
        n=$((n + 1))
        bash -n "$f" || fail=1
        grep -q 'pipefail' "$f" || continue
        bad=$(grep -nE '\|[[:space:]]*head([[:space:]]|$)' "$f" | grep -vE '^[0-9]+:[[:space:]]*#' || true)
        [ -z "$bad" ] || { echo "$f: pipes into head under pipefail:"; echo "$bad"; fail=1; }
    done < <(cd "$top" && git ls-files '*.sh' | sed "s|^|$top/|")
    note "shell: $n scripts checked"
}

case ${1:-} in
    qemu) check_qemu ;;
    shell) check_shell ;;
    kernel) check_kernel ;;
    sparse) check_sparse ;;
    *) echo "usage: $0 qemu|kernel|sparse|shell" >&2; exit 2 ;;
esac
exit $fail
