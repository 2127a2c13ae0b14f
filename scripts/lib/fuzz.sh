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

# cmd_fuzz [SECONDS [TARGET]]: builds the fuzzer and runs TARGET for
# SECONDS (default 60) and fails if it found a crash.  TARGET is
# generic-fuzz (the default: MMIO, PIO and DMA from the guest side, on the
# machine above) or rnic-wire (RoCEv2 frames from the wire into a device
# with live QPs and a guarded MR, tests/qtest/fuzz/rnic_wire_fuzz.c).
cmd_fuzz() {
    local secs=${1:-60} target=${2:-generic-fuzz} rc=0 corpus
    case $target in
    generic-fuzz) corpus=$FUZZ_DIR/corpus ;;
    rnic-wire) corpus=$FUZZ_DIR/corpus-wire ;;
    *) die "unknown fuzz target $target (generic-fuzz or rnic-wire)" ;;
    esac
    do_deps
    # shellcheck disable=SC2086
    ensure_packages $FUZZ_PACKAGES
    do_fetch_qemu
    run_step "configure the fuzzing QEMU (clang, ASan, UBSan)" configure-fuzz step_configure_fuzz
    run_step "build qemu-fuzz-x86_64" build-fuzz step_build_fuzz
    mkdir -p "$corpus" "$FUZZ_DIR/crashes"
    note "$target on rnic for ${secs}s (corpus $(rel "$corpus"))"
    QEMU_FUZZ_OBJECTS='rnic*' QEMU_FUZZ_ARGS="$(fuzz_qemu_args)" \
    RNIC_FUZZ_ARGS="$(fuzz_firmware_args)" \
    ASAN_OPTIONS=detect_leaks=0 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
        timeout $((secs + 600)) "$FUZZ_BIN" --fuzz-target="$target" \
            -max_total_time="$secs" -print_final_stats=1 \
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
