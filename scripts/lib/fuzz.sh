# SPDX-License-Identifier: GPL-2.0-or-later
#
# Fuzzing rnic with QEMU's generic-fuzz (libFuzzer, ASan, UBSan): a second
# QEMU build made with clang in .cache/fuzz-build, from the same patched
# source tree, and a campaign that writes its corpus and any crash input
# under .cache/fuzz/.  Every crash found becomes a named qtest.

FUZZ_BUILD=$CACHE/fuzz-build
FUZZ_DIR=$CACHE/fuzz
FUZZ_BIN=$FUZZ_BUILD/qemu-fuzz-x86_64
FUZZ_PACKAGES="clang-14 libclang-rt-14-dev"

step_configure_fuzz() {
    configure_qemu_tree fuzz-configure "$FUZZ_BUILD" --cc=clang-14 \
        --cxx=clang++-14 --enable-fuzzing --enable-asan --enable-ubsan
}

step_build_fuzz() {
    timeout 5400 ninja -C "$FUZZ_BUILD" qemu-fuzz-x86_64
}

# The machine and device the campaign drives: q35, the rnic with small
# limits (so that guest-chosen handles often hit real objects) on a user
# netdev, and Debian's firmware.
fuzz_firmware_args() {
    local d
    for d in /usr/share/seabios /usr/lib/ipxe/qemu "$FUZZ_BUILD/pc-bios"; do
        printf ' -L %s' "$d"
    done
}

fuzz_qemu_args() {
    local args="-machine q35 -nodefaults"
    args+=$(fuzz_firmware_args)
    args+=" -netdev user,id=n0 -device rnic,netdev=n0,max-qp=8,max-cq=8"
    args+=",max-mr=8,max-pd=4,max-srq=4,max-uctx=2,max-eq=4,max-gid=4"
    args+=",max-qp-wr=64,max-cqe=64,max-mr-pages=64,max-host-mem=16M"
    printf '%s' "$args"
}

step_build_fuzz_system() {
    timeout 5400 ninja -C "$FUZZ_BUILD" qemu-system-x86_64
}

# The ASan QEMU as a qtest binary: its name must end in -system-x86_64,
# and it needs the firmware the normal build's wrapper passes.
fuzz_system_wrapper() {
    local w=$FUZZ_DIR/bin/qemu-system-x86_64
    mkdir -p "$FUZZ_DIR/bin"
    printf '#!/bin/sh\nexec %s%s "$@"\n' "$FUZZ_BUILD/qemu-system-x86_64" \
        "$(fuzz_firmware_args)" >"$w"
    chmod +x "$w"
    printf '%s' "$w"
}

# migrate-stream: the qtest migrate-mutated (tests/qtest/rnic-host-test.c)
# against the ASan/UBSan QEMU, about one mutated stream per second.
fuzz_migrate_stream() {
    local secs=$1 qemu path rc=0
    [ -x "$QEMU_BUILD/tests/qtest/qos-test" ] ||
        die "build the qtests first: ./scripts/rnic.sh build"
    run_step "build the ASan qemu-system-x86_64" build-fuzz-system step_build_fuzz_system
    qemu=$(fuzz_system_wrapper)
    path=$(QTEST_QEMU_BINARY=$qemu "$QEMU_BUILD/tests/qtest/qos-test" -l |
           grep '/migrate-mutated$')
    note "migrate-mutated under ASan and UBSan, $secs streams"
    QTEST_QEMU_BINARY=$qemu RNIC_MIG_FUZZ_ITERS=$secs \
    RNIC_MIG_FUZZ_SEED=${RNIC_MIG_FUZZ_SEED:-$(date +%s)} \
    ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
        timeout $((secs * 10 + 600)) "$QEMU_BUILD/tests/qtest/qos-test" \
            -p "$path" --verbose >"$LOGS/fuzz-run.log" 2>&1 || rc=$?
    grep -E "mutated streams|seed|^(not )?ok|ERROR|SUMMARY" "$LOGS/fuzz-run.log" |
        grep -v "starting QEMU" | tail -6
    if [ "$rc" -ne 0 ] || grep -q "runtime error:" "$LOGS/fuzz-run.log"; then
        die "a mutated stream crashed QEMU, see $(rel "$LOGS/fuzz-run.log")"
    fi
}

# cmd_fuzz [SECONDS [TARGET]]: builds the fuzzer and runs TARGET for
# SECONDS (default 60) and fails if it found a crash.  TARGET is
# generic-fuzz (the default: MMIO, PIO, DMA and config space from the
# guest side, on the machine above), rnic-wire (RoCEv2 frames from the
# wire into a device with live QPs and a guarded MR,
# tests/qtest/fuzz/rnic_wire_fuzz.c) or migrate-stream (mutated migration
# streams, SECONDS of them).
cmd_fuzz() {
    local secs=${1:-60} target=${2:-generic-fuzz} rc=0 corpus dict=()
    case $target in
    generic-fuzz)
        corpus=$FUZZ_DIR/corpus
        # Addresses on the function's own ECAM page, for rings and MSI-X.
        dict=(-dict="$RNIC_ROOT/tests/qtest/fuzz/rnic-generic-fuzz.dict") ;;
    rnic-wire) corpus=$FUZZ_DIR/corpus-wire ;;
    migrate-stream) ;;
    *) die "unknown fuzz target $target (generic-fuzz, rnic-wire or migrate-stream)" ;;
    esac
    do_deps
    # shellcheck disable=SC2086
    ensure_packages $FUZZ_PACKAGES
    do_fetch_qemu
    run_step "configure the fuzzing QEMU (clang, ASan, UBSan)" configure-fuzz step_configure_fuzz
    if [ "$target" = migrate-stream ]; then
        fuzz_migrate_stream "$secs"
        return
    fi
    run_step "build qemu-fuzz-x86_64" build-fuzz step_build_fuzz
    mkdir -p "$corpus" "$FUZZ_DIR/crashes"
    note "$target on rnic for ${secs}s (corpus $(rel "$corpus"))"
    QEMU_FUZZ_OBJECTS='rnic*' QEMU_FUZZ_ARGS="$(fuzz_qemu_args)" \
    RNIC_FUZZ_ARGS="$(fuzz_firmware_args)" \
    ASAN_OPTIONS=detect_leaks=0 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
        timeout $((secs + 600)) "$FUZZ_BIN" --fuzz-target="$target" \
            -max_total_time="$secs" -print_final_stats=1 "${dict[@]}" \
            -artifact_prefix="$FUZZ_DIR/crashes/" "$corpus" \
            >"$LOGS/fuzz-run.log" 2>&1 || rc=$?
    grep -E "^(stat::|#[0-9]+ +DONE)|ERROR: |SUMMARY" "$LOGS/fuzz-run.log" | tail -12
    # UBSan findings count as crashes even where the runtime went on.
    if [ "$rc" -ne 0 ] || grep -q "runtime error:" "$LOGS/fuzz-run.log" ||
       ls "$FUZZ_DIR"/crashes/crash-* >/dev/null 2>&1; then
        die "fuzzing found a crash, see $(rel "$LOGS/fuzz-run.log") and $(rel "$FUZZ_DIR/crashes")"
    fi
    note "no crash in ${secs}s"
}
