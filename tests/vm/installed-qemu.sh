#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# installed-qemu.sh LAUNCHER-ARGS...: the QEMU that 'rnic.sh install'
# puts in a prefix of its own runs rnic VMs by itself.
#   1. From outside the checkout, with an empty environment and no -L, the
#      installed QEMU starts a q35 machine with a kernel and an rnic: it
#      finds its BIOS and option ROMs in the prefix's share/qemu.
#   2. The installed rnic-vmlaunch (which gives QEMU only the prefix's
#      firmware) runs rnic-pingpong between two VMs.
# Run on the host by meson (tests/vm/meson.build), with the launcher's
# guest arguments (--kernel, --initrd, --image).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "installed-qemu: FAILED: $*"; exit 1; }
prefix=$(mktemp -d /tmp/rnic-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT

"$root/scripts/rnic.sh" install --prefix "$prefix"

kernel=""
args=("$@")
for i in "${!args[@]}"; do
    [ "${args[$i]}" = --kernel ] && kernel=${args[$((i + 1))]}
done
[ -n "$kernel" ] || fail "no --kernel among the arguments"
out=$(cd / && printf 'info qtree\nquit\n' |
      env -i timeout 60 "$prefix/bin/qemu-system-x86_64" -M q35 -accel tcg -nodefaults \
          -display none -S -monitor stdio -kernel "$kernel" \
          -netdev user,id=r0 -device rnic,netdev=r0 2>&1) ||
    fail "the installed QEMU did not start on its own: $out"
grep -q 'dev: rnic' <<<"$out" || fail "no rnic in the installed QEMU's machine: $out"

work=$prefix/run
"$prefix/bin/rnic-vmlaunch" "$@" --workdir "$work" --name rnic-installed-qemu \
    --script "$root/tests/vm/rnic-pingpong.sh"
# The VMs had the prefix's firmware and nothing else.
if grep -o -- '-L [^ ]*' "$work/launcher.log" | grep -v -- "-L $prefix/share/qemu\$"; then
    fail "the VMs were given firmware from outside the prefix"
fi
echo "installed-qemu: OK: $("$prefix/bin/qemu-system-x86_64" --version | sed -n 1p), installed in a prefix of its own"
