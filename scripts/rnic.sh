#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic.sh: one entry point to fetch, build, test and demo rnic.
#
#   ./scripts/rnic.sh demo [--rxe]    build everything, two VMs exchange verified data
#   ./scripts/rnic.sh bench           rnic vs Soft-RoCE in the same VMs, with ratios
#   ./scripts/rnic.sh test [ARGS]     build what the tests need, run every suite
#                                     (ARGS go to 'meson test', e.g. --suite vm)
#   ./scripts/rnic.sh build           fetch and build everything, run nothing
#   ./scripts/rnic.sh vm ARGS...      scripts/vmlaunch.py with the built artefacts
#   ./scripts/rnic.sh fuzz [SECONDS [TARGET]]  libFuzzer (clang, ASan, UBSan) on
#                                   rnic: generic-fuzz (default), rnic-wire
#                                   or migrate-stream
#   ./scripts/rnic.sh kmod-host       build the kernel module against Debian 12's headers
#   ./scripts/rnic.sh dkms-check      build it with dkms for 6.1, trixie's 6.12 and the newest
#   ./scripts/rnic.sh packages [--suite trixie|bookworm] [--out DIR]
#                                     guest .debs: rnic-dkms and the provider for that suite
#   ./scripts/rnic.sh install [--prefix DIR]  QEMU with rnic, its firmware and the
#                                     launcher in DIR (default /opt/rnic)
#   ./scripts/rnic.sh image [--suite bookworm]  the test image (trixie), or a
#                                     plain guest of that suite in .cache/image-SUITE
#   ./scripts/rnic.sh deps|fetch|qemu|rdma-core   single stages
#
# Everything fetched or built lives in .cache/ of this checkout; each stage
# only redoes work when its inputs changed.  A failing stage prints one line
# "rnic: step '<name>' failed, see .cache/logs/<log>" and exits non-zero.

set -euo pipefail

# A shell started in the background by a non-interactive shell begins with
# SIGINT ignored, and bash cannot trap a signal ignored on entry: restore
# the defaults once so that SIGINT always stops us (and our VMs) cleanly.
if [ -z "${RNIC_SIGNALS_RESET:-}" ]; then
    export RNIC_SIGNALS_RESET=1
    exec env --default-signal=INT,QUIT,TERM,HUP "$0" "$@"
fi

RNIC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export RNIC_ROOT
# shellcheck source=scripts/lib/common.sh
. "$RNIC_ROOT/scripts/lib/common.sh"
# shellcheck source=scripts/lib/hostdeps.sh
. "$RNIC_ROOT/scripts/lib/hostdeps.sh"
# shellcheck source=scripts/lib/sources.sh
. "$RNIC_ROOT/scripts/lib/sources.sh"
# shellcheck source=scripts/lib/build.sh
. "$RNIC_ROOT/scripts/lib/build.sh"
# shellcheck source=scripts/lib/image.sh
. "$RNIC_ROOT/scripts/lib/image.sh"
# shellcheck source=scripts/lib/packages.sh
. "$RNIC_ROOT/scripts/lib/packages.sh"
# shellcheck source=scripts/lib/install.sh
. "$RNIC_ROOT/scripts/lib/install.sh"
# shellcheck source=scripts/lib/fuzz.sh
. "$RNIC_ROOT/scripts/lib/fuzz.sh"

MESON_BUILD=$CACHE/meson-build
export RNIC_CACHE=$CACHE

install_signal_traps

need_root() {
    [ "$(id -u)" = 0 ] || die "this needs root (apt-get, debootstrap, chroot)"
}

do_deps() {
    need_root
    run_step "host packages" host-deps step_host_deps
}

do_fetch_qemu() {
    local want="$QEMU_SUITE $QEMU_VERSION_GLOB"
    if ! stamp_ok qemu-fetch "$want" || ! git -C "$QEMU_SRC" rev-parse -q --verify rnic-baseline >/dev/null 2>&1; then
        stamp_clear qemu-fetch
        stamp_clear qemu-patches
        run_step "fetch qemu source" fetch-qemu step_fetch_qemu
        stamp_set qemu-fetch "$want"
    fi
    run_step "patch qemu" patch-qemu step_patch_qemu
}

do_fetch_rdma_core() {
    local want="$QEMU_SUITE $RDMA_VERSION"
    if ! stamp_ok rdma-core-fetch "$want" || ! git -C "$RDMA_SRC" rev-parse -q --verify rnic-baseline >/dev/null 2>&1; then
        stamp_clear rdma-core-fetch
        stamp_clear rdma-core-patches
        run_step "fetch rdma-core source" fetch-rdma-core step_fetch_rdma_core
        stamp_set rdma-core-fetch "$want"
    fi
    run_step "patch rdma-core" patch-rdma-core step_patch_rdma_core
}

do_qemu() {
    do_fetch_qemu
    run_step "configure qemu" configure-qemu step_configure_qemu
    run_step "build qemu" build-qemu step_build_qemu
}

do_rdma_core() {
    do_fetch_rdma_core
    run_step "build rdma-core" build-rdma-core step_build_rdma_core
}

do_image() {
    run_step "guest base system (debootstrap)" image-base step_image_base
    run_step "guest image" image step_image_final
}

# The plain guests README command 2 tests besides the project's image
# (tests/vm/rnic-bookworm.sh).
PLAIN_SUITES="bookworm"

do_plain_image() {
    local suite=$1
    run_step "$suite base system (debootstrap)" "image-base-$suite" step_plain_base "$suite"
    run_step "$suite guest image" "image-$suite" step_plain_final "$suite"
}

# guest_bases [--dkms] SUITE...: the test image's base system, the plain
# guests' of SUITEs and, with --dkms, the dkms check's chroot and kernel
# headers, side by side: each mostly waits for the network and the disk.
guest_bases() {
    local pids=() what=() suite i rc=0 dkms=""
    if [ "${1:-}" = --dkms ]; then
        dkms=1
        shift
    fi
    step_image_base &
    pids+=("$!")
    what+=("the test image's base system")
    for suite in "$@"; do
        step_plain_base "$suite" >"$LOGS/image-base-$suite.log" 2>&1 &
        pids+=("$!")
        what+=("$suite's base system, see $(rel "$LOGS/image-base-$suite.log")")
    done
    if [ -n "$dkms" ]; then
        "$RNIC_ROOT/scripts/dkms-check.sh" fetch >"$LOGS/dkms-fetch.log" 2>&1 &
        pids+=("$!")
        what+=("the dkms check's headers, see $(rel "$LOGS/dkms-fetch.log")")
    fi
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { echo "failed: ${what[$i]}"; rc=1; }
    done
    return "$rc"
}

# do_build [--dkms] [SUITE...]: everything, the plain guests of SUITEs,
# and with --dkms what the dkms check needs.
do_build() {
    do_deps
    # The dkms check's host part uses apt, which the background must not
    # do beside the foreground's apt-get source.
    [ "${1:-}" != --dkms ] || run_step "kernel headers of the host" host-headers ensure_host_kernel_headers
    # The guests' base systems need nothing QEMU or rdma-core make, and
    # debootstrap mostly waits for the network and the disk: it runs
    # beside their builds, which keep both cores busy.
    run_step_start "guest base systems (debootstrap)" image-base guest_bases "$@"
    [ "${1:-}" != --dkms ] || shift
    do_qemu
    do_rdma_core
    run_step_wait
    # The plain guests' images beside the test image's: both mostly wait
    # for dkms's compiler, mkfs and the disk, one core each.
    [ $# -eq 0 ] || run_step_start "plain guest images ($*)" image-plain plain_finals "$@"
    do_image
    run_step_wait
}

plain_finals() {
    local suite
    for suite in "$@"; do
        step_plain_final "$suite"
    done
}

cmd_image() {
    case ${1:-} in
        "") do_rdma_core; do_image ;;
        --suite)
            case ${2:-} in
                trixie) do_rdma_core; do_image ;;
                bookworm) do_rdma_core; do_plain_image "$2" ;;
                *) die "image: --suite bookworm or trixie" ;;
            esac ;;
        *) die "image: unknown option $1 (--suite SUITE)" ;;
    esac
}

vmlaunch() {
    local fw=() d
    while read -r d; do fw+=(-L "$d"); done < <(qemu_firmware_dirs)
    "$PY" "$RNIC_ROOT/scripts/vmlaunch.py" --qemu "$QEMU_BIN" "${fw[@]}" \
        --kernel "$IMAGE_KERNEL" --initrd "$IMAGE_INITRD" --image "$IMAGE_FILE" "$@"
}

cmd_demo() {
    # The demo runs over the rnic device; 'demo --rxe' (or RNIC_DEMO_MODE=rxe)
    # runs the same exchange over Soft-RoCE on virtio-net for comparison.
    local mode=${RNIC_DEMO_MODE:-rnic}
    [ "${1:-}" = --rnic ] && { mode=rnic; shift; }
    [ "${1:-}" = --rxe ] && { mode=rxe; shift; }
    do_build
    note "demo: two VMs over $mode: ibv_rc_pingpong -c and rping -V (data verified), then ib_write_bw"
    if run_fg demo vmlaunch --name demo "--$mode" --timeout 600 \
        --cmd 'rnic-pingpong 500 4096 && RNIC_BW_ITERS=1000 rnic-write-bw' "$@"; then
        note "demo passed: the two VMs exchanged and verified data over $mode"
    else
        exit 1
    fi
}

cmd_bench() {
    # rnic against Soft-RoCE in the same VMs, in one run (scripts/bench.py):
    # table, CSV and plot under .cache/bench/, or --out DIR.
    do_build
    note "bench: rnic vs rxe in the same VMs (scripts/bench.py $*)"
    local fw=() d
    while read -r d; do fw+=(-L "$d"); done < <(qemu_firmware_dirs)
    run_fg bench "$PY" "$RNIC_ROOT/scripts/bench.py" "$@" -- --qemu "$QEMU_BIN" \
        "${fw[@]}" --kernel "$IMAGE_KERNEL" --initrd "$IMAGE_INITRD" \
        --image "$IMAGE_FILE" || exit 1
}

meson_setup() {
    local opts=(
        -Dqemu_binary="$QEMU_WRAP"
        -Dqemu_build_dir="$QEMU_BUILD"
        -Dguest_kernel="$IMAGE_KERNEL"
        -Dguest_initrd="$IMAGE_INITRD"
        -Dguest_image="$IMAGE_FILE"
        -Dguest_bookworm="$(plain_dir bookworm)"
        -Drdma_core_src="$RDMA_SRC"
        -Drdma_core_build="$RDMA_BUILD"
        -Dkmod_host_check=true
    )
    if [ -x "$QEMU_BUILD/tests/qtest/rnic-test" ]; then
        opts+=(-Dqtest_binary="$QEMU_BUILD/tests/qtest/rnic-test")
    else
        opts+=(-Dqtest_binary=)
    fi
    # Always reconfigure (a second or two): the suites depend on which
    # directories and binaries exist, which meson cannot watch.
    if [ -f "$MESON_BUILD/build.ninja" ]; then
        timeout 600 meson setup --reconfigure "$MESON_BUILD" "$RNIC_ROOT" "${opts[@]}"
    else
        rm -rf "$MESON_BUILD"
        timeout 600 meson setup "$MESON_BUILD" "$RNIC_ROOT" "${opts[@]}"
    fi
    timeout 1800 ninja -C "$MESON_BUILD"
}

# The trixie chroot and kernel headers the dkms-kernels test builds against
# (scripts/dkms-check.sh, in .cache/dkms-check).
do_fetch_dkms() {
    run_step "kernel headers for the dkms check" dkms-fetch "$RNIC_ROOT/scripts/dkms-check.sh" fetch
}

# How many tests meson runs side by side: one per core.  A VM test alone
# leaves much of the machine idle while it waits (for its peer, for
# timers, for a ULP to give up), but boots and guests that poll a CQ keep
# a core busy, and a guest starved of CPU polls longer: more runs than
# cores only make each slower and their timing-sensitive steps riskier.
# A run may hold three VMs of 1 GiB, so memory caps the slots too.
# RNIC_TEST_SLOTS overrides.
test_slots() {
    if [ -n "${RNIC_TEST_SLOTS:-}" ]; then
        echo "$RNIC_TEST_SLOTS"
        return
    fi
    local slots mem_gib
    slots=$(nproc)
    mem_gib=$(awk '/^MemAvailable:/ { print int($2 / 1048576) }' /proc/meminfo)
    [ $((mem_gib / 4)) -lt "$slots" ] && slots=$((mem_gib / 4))
    [ "$slots" -ge 1 ] || slots=1
    echo "$slots"
}

cmd_test() {
    local started
    started=$(date +%s)
    # shellcheck disable=SC2086
    do_build --dkms $PLAIN_SUITES
    do_fetch_dkms
    run_step "meson setup" meson-setup meson_setup
    # Tests that build the module run side by side: install what they
    # would otherwise each ask apt for at once.
    ensure_host_kernel_headers >/dev/null
    note "running the test suites (meson test $*)"
    rm -f "$MESON_BUILD/meson-logs/testlog.json"
    local rc=0
    run_fg "meson test" timeout 7200 meson test -C "$MESON_BUILD" --print-errorlogs \
        --num-processes "$(test_slots)" "$@" || rc=$?
    local summary
    if ! summary=$("$PY" "$RNIC_ROOT/scripts/test-summary.py" --started "$started" \
                   --budget "$RNIC_ROOT/tests/time-budget.json" \
                   "$MESON_BUILD/meson-logs/testlog.json"); then
        summary=""
    fi
    if [ "$rc" -ne 0 ]; then
        printf "rnic: step 'meson test' failed, see %s\n" \
            "$(rel "$MESON_BUILD/meson-logs/testlog.txt")" >&2
        [ -n "$summary" ] && printf '%s\n' "$summary"
        exit 1
    fi
    [ -n "$summary" ] || die "step 'meson test' ran no test, see $(rel "$MESON_BUILD/meson-logs/testlog.txt")"
    printf '%s\n' "$summary"
    case ${summary##*$'\n'} in
        "0 passed"*) exit 1 ;;
        *" 0 failed"|*" 0 failed, "*) ;;
        *) exit 1 ;;
    esac
}

usage() {
    sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
        demo) cmd_demo "$@" ;;
        bench) cmd_bench "$@" ;;
        test) cmd_test "$@" ;;
        fuzz) cmd_fuzz "$@" ;;
        build) do_build ;;
        deps) do_deps ;;
        fetch) do_deps; do_fetch_qemu; do_fetch_rdma_core; do_fetch_dkms ;;
        qemu) do_deps; do_qemu ;;
        rdma-core) do_deps; do_rdma_core ;;
        image) do_deps; cmd_image "$@" ;;
        kmod-host) do_deps; run_step "kernel module host build (Debian 12 headers)" kmod-host step_kmod_host ;;
        packages) do_deps; do_rdma_core; do_packages "$@" ;;
        install) do_deps; do_qemu; do_install "$@" ;;
        dkms-check) do_deps; run_fg dkms-check "$RNIC_ROOT/scripts/dkms-check.sh" || exit 1 ;;
        vm) run_fg vm vmlaunch "$@" ;;
        -h|--help|help|"") usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
