# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Guest packages for users' own VMs ('rnic.sh packages'): two .debs a
# Debian guest installs with 'apt install ./*.deb'.
#
#   rnic-dkms                 the kernel module's source and dkms.conf in
#                             /usr/src/rnic-VERSION; dkms builds it on
#                             install for the guest's kernels (and again for
#                             each kernel installed later).  One package for
#                             every suite: dkms-check builds the module for
#                             Debian 12's 6.1, trixie's 6.12 and the newest.
#   ibverbs-provider-rnic     librnic-rdmav34.so and /etc/libibverbs.d/
#                             rnic.driver, next to the distribution's own
#                             providers (it replaces nothing of
#                             ibverbs-providers).  libibverbs loads a provider
#                             built against its own rdma-core release only,
#                             so this one is built per suite, from that
#                             suite's rdma-core source with patches/rdma-core
#                             applied, and depends on that release.
#
# The provider for trixie is the one the tree builds anyway (rdma-core 56.1
# is trixie's).  Another suite's rdma-core source is fetched with apt-get
# source into .cache/src/rdma-core-SUITE and only the provider is built.

PKG_OUT_BASE=$CACHE/packages
PKG_ARCH=amd64
PKG_MULTIARCH=x86_64-linux-gnu

# The module's version (dkms.conf) plus how far the tree is past the
# commit that last changed the guest driver, so each change makes a newer
# package that apt upgrades to.
pkg_version() {
    local base count hash
    base=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$RNIC_ROOT/guest-driver/kernel/dkms.conf")
    [ -n "$base" ] || { echo "no PACKAGE_VERSION in guest-driver/kernel/dkms.conf" >&2; return 1; }
    if count=$(git -C "$RNIC_ROOT" rev-list --count HEAD 2>/dev/null) &&
       hash=$(git -C "$RNIC_ROOT" rev-parse --short=8 HEAD 2>/dev/null); then
        echo "$base+$count.g$hash"
    else
        echo "$base"
    fi
}

# The upstream version of the rdma-core tree in DIR.
rdma_core_tree_version() {
    sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)".*/\1/p' "$1/CMakeLists.txt" | head -n1
}

# pkg_control DIR NAME VERSION ARCH SECTION DEPENDS DESCRIPTION...
pkg_control() {
    local dir=$1 name=$2 version=$3 arch=$4 section=$5 depends=$6
    shift 6
    mkdir -p "$dir/DEBIAN"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: rnic developers <dev@rnic.invalid>"
        echo "Section: $section"
        echo "Priority: optional"
        echo "Depends: $depends"
        echo "Homepage: https://rnic.invalid/"
        echo "Description: $1"
        shift
        local line
        for line in "$@"; do
            echo " $line"
        done
    } >"$dir/DEBIAN/control"
}

# pkg_build DIR OUT: the .deb of the staged tree DIR, into OUT.
pkg_build() {
    local dir=$1 out=$2
    # Files owned by root whoever builds, as in any Debian package, and
    # the tree's top as a file system's root is.
    chmod 0755 "$dir"
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$out" >/dev/null
    dpkg-deb --info "$out" >/dev/null
    echo "built $(basename "$out")"
}

pkg_dkms() {
    local out=$1 ver=$2 stage mver
    mver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$RNIC_ROOT/guest-driver/kernel/dkms.conf")
    stage=$(mktemp -d)
    mkdir -p "$stage/usr/src/rnic-$mver" "$stage/usr/share/doc/rnic-dkms"
    cp -a "$RNIC_ROOT/guest-driver/kernel/." "$stage/usr/src/rnic-$mver/"
    cp "$RNIC_ROOT/LICENSE" "$stage/usr/share/doc/rnic-dkms/copyright"
    # dkms needs the headers of the kernel it builds for; the meta
    # packages pull in the current ones and follow kernel upgrades.
    pkg_control "$stage" rnic-dkms "$ver" all kernel \
        "dkms (>= 3.0), linux-headers-amd64 | linux-headers-generic | linux-headers" \
        "kernel driver for the rnic emulated RDMA NIC (DKMS)" \
        "The Linux driver of rnic, the RoCE RDMA NIC that QEMU emulates with" \
        "'-device rnic': an ib_device for verbs and kernel ULPs and a" \
        "net_device for its Ethernet function.  dkms builds it for the" \
        "installed kernels and for every kernel installed later."
    # Debian's own dkms helper does what dh_dkms packages do: add, build
    # and install for the running and the newest kernel, and remove on
    # package removal.
    cat >"$stage/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
    /usr/lib/dkms/common.postinst rnic $mver "" "" "\$2"
fi
EOF
    cat >"$stage/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
case "\$1" in
    remove|upgrade|deconfigure)
        if dkms status -m rnic -v $mver 2>/dev/null | grep -q .; then
            dkms remove -m rnic -v $mver --all
        fi ;;
esac
EOF
    chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm"
    pkg_build "$stage" "$out/rnic-dkms_${ver}_all.deb"
    rm -rf "$stage"
}

# pkg_provider OUT VERSION LIB RDMA_VERSION SUITE [DEPENDS]
# DEPENDS: the libibverbs1 dependency when LIB was not built from SUITE's
# own rdma-core (suite_libibverbs_depends).
pkg_provider() {
    local out=$1 ver=$2 lib=$3 rver=$4 suite=$5 depends=${6:-} stage next
    stage=$(mktemp -d)
    install -D -m 0644 "$lib" "$stage/usr/lib/$PKG_MULTIARCH/libibverbs/$(basename "$lib")"
    strip --strip-unneeded "$stage/usr/lib/$PKG_MULTIARCH/libibverbs/$(basename "$lib")"
    mkdir -p "$stage/etc/libibverbs.d" "$stage/usr/share/doc/ibverbs-provider-rnic"
    echo "driver rnic" >"$stage/etc/libibverbs.d/rnic.driver"
    cp "$RNIC_ROOT/LICENSE" "$stage/usr/share/doc/ibverbs-provider-rnic/copyright"
    # Only the rdma-core release it was built against: libibverbs checks
    # a provider's private ABI, which may change with any release.
    next=${rver%.*}.$((${rver##*.} + 1))
    [ -n "$depends" ] || depends="libibverbs1 (>= $rver), libibverbs1 (<< $next~)"
    pkg_control "$stage" ibverbs-provider-rnic "$ver~$suite" "$PKG_ARCH" libs \
        "libc6 (>= 2.34), $depends" \
        "userspace verbs provider for the rnic emulated RDMA NIC" \
        "The rdma-core provider of rnic, built against rdma-core $rver" \
        "($suite).  It sits next to the providers of ibverbs-providers and" \
        "needs the rnic kernel driver (rnic-dkms)."
    echo "/etc/libibverbs.d/rnic.driver" >"$stage/DEBIAN/conffiles"
    pkg_build "$stage" "$out/ibverbs-provider-rnic_${ver}~${suite}_$PKG_ARCH.deb"
    rm -rf "$stage"
}

# set_ops_code LIBIBVERBS: the instructions of its verbs_set_ops, without
# addresses.
set_ops_code() {
    objdump -d --no-show-raw-insn --disassemble=verbs_set_ops "$1" |
        grep -P '^\s+[0-9a-f]+:' |
        sed -E 's/^\s*[0-9a-f]+:\s*//; s/[0-9a-f]+ <[^>]*>/L/; s/#.*//'
}

# suite_libibverbs_depends LIB SUITE: prints the libibverbs1 dependency
# of provider LIB on SUITE, or fails if SUITE's libibverbs1 lacks a symbol
# LIB imports from it.
#
# A provider reaches libibverbs through two version nodes: IBVERBS_1.x,
# the public ABI, and IBVERBS_PRIVATE_<n>, the provider interface, whose
# number rdma-core raises whenever that interface changes.  The dynamic
# linker refuses a provider that names a node or symbol the library lacks,
# so LIB loads, with the interface it was built for, wherever every one of
# its imports is exported.  Debian's own symbols file of the suite's
# libibverbs1 gives the first version with each symbol; the dependency is
# the highest of those, as dpkg-shlibdeps would make it.
suite_libibverbs_depends() {
    local lib=$1 suite=$2 dir list lists deb sym node min need="" missing=""
    dir=$(mktemp -d)
    list=$dir/sources.list
    lists=$dir/lists
    mkdir -p "$lists/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" >"$list"
    local apt=(-o "Dir::Etc::sourcelist=$list" -o "Dir::Etc::sourceparts=-"
               -o "Dir::State::Lists=$lists" -o "APT::Sandbox::User=root")
    if ! timeout 600 apt-get -q "${apt[@]}" update >&2 ||
       ! (cd "$dir" && timeout 600 apt-get -q "${apt[@]}" download "libibverbs1/$suite") >&2; then
        echo "cannot fetch $suite's libibverbs1" >&2
        rm -rf "$dir"
        return 1
    fi
    deb=$(ls "$dir"/libibverbs1_*.deb | head -n1)
    dpkg-deb -x "$deb" "$dir/root"
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./symbols >"$dir/symbols"
    objdump -T "$dir"/root/usr/lib/*/libibverbs.so.1.* |
        awk 'NF >= 6 && $0 !~ /\*UND\*/ && $(NF-1) ~ /^\(?IBVERBS_/ {
                 v = $(NF-1); gsub(/[()]/, "", v); print $NF "@" v }' |
        sort -u >"$dir/exported"
    while read -r node sym; do
        node=${node#(}
        node=${node%)}
        if ! grep -qx "$sym@$node" "$dir/exported"; then
            missing+=" $sym@$node"
            continue
        fi
        min=$(awk -v s="$sym@$node" '$1 == s { print $2 }' "$dir/symbols")
        [ -n "$min" ] || { missing+=" $sym@$node(not in the symbols file)"; continue; }
        if [ -z "$need" ] || dpkg --compare-versions "$min" gt "$need"; then
            need=$min
        fi
    done < <(objdump -T "$lib" | awk '$3 == "*UND*" && $(NF-1) ~ /^\(IBVERBS_/ { print $(NF-1), $NF }')
    echo "$suite's libibverbs1 is $(dpkg-deb -f "$deb" Version)" >&2
    # Names are not layouts: libibverbs reads the provider's table of
    # operations in verbs_set_ops, so that function must read the same
    # offsets in the suite's library as in the one the provider was
    # built with.
    local ours code
    ours=$(ls "$RDMA_BUILD"/lib/libibverbs.so.1.* | head -n1)
    code=$(set_ops_code "$ours")
    if [ -z "$code" ] || [ "$code" != "$(set_ops_code "$dir"/root/usr/lib/*/libibverbs.so.1.*)" ]; then
        missing+=" (verbs_set_ops differs from rdma-core $RDMA_VERSION's: the table of operations changed)"
    fi
    rm -rf "$dir"
    if [ -n "$missing" ]; then
        echo "$suite's libibverbs1 lacks:$missing" >&2
        return 1
    fi
    [ -n "$need" ] || { echo "the provider imports nothing from libibverbs?" >&2; return 1; }
    echo "libibverbs1 (>= $need)"
}

# rdma_core_for_suite SUITE: prints the build directory of an rdma-core of
# SUITE with the rnic provider built in it.
rdma_core_for_suite() {
    local suite=$1 src=$SRC/rdma-core-$1 build=$CACHE/rdma-core-build-$1
    if [ "$suite" = "$QEMU_SUITE" ]; then
        echo "$RDMA_BUILD"
        return 0
    fi
    if [ ! -f "$src/CMakeLists.txt" ]; then
        local dl=$SRC/dl-rdma-core-$suite lists=$SRC/dl-rdma-core-$suite.lists tar
        rm -rf "$dl" "$lists"
        mkdir -p "$dl" "$lists"
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
            >"$dl.list"
        local apt=(-o "Dir::Etc::sourcelist=$dl.list" -o "Dir::Etc::sourceparts=-"
                   -o "Dir::State::Lists=$lists")
        timeout 600 apt-get -q "${apt[@]}" update >&2
        (cd "$dl" && timeout 1200 apt-get -q "${apt[@]}" source --download-only --tar-only "rdma-core/$suite") >&2 ||
            { echo "cannot fetch rdma-core's source for $suite (apt-get source rdma-core/$suite)" >&2; return 1; }
        tar=$(ls "$dl"/rdma-core_*.orig.tar.* 2>/dev/null | head -n1)
        [ -n "$tar" ] || { echo "no rdma-core orig tarball for $suite" >&2; return 1; }
        mkdir -p "$dl/unpack"
        tar -xf "$tar" -C "$dl/unpack"
        rm -rf "$src"
        mv "$(find "$dl/unpack" -mindepth 1 -maxdepth 1 -type d | head -n1)" "$src"
        rm -rf "$dl" "$lists" "$dl.list"
        make_baseline "$src" >&2
    fi
    apply_patches "$src" "$RNIC_ROOT/patches/rdma-core" >&2 ||
        { echo "patches/rdma-core does not apply to rdma-core $(rdma_core_tree_version "$src") ($suite)" >&2; return 1; }
    [ "$(readlink "$src/providers/rnic" 2>/dev/null)" = "$RNIC_ROOT/guest-driver/provider" ] ||
        link_into "$src" "$RNIC_ROOT/guest-driver/provider" providers/rnic >&2
    if [ ! -f "$build/build.ninja" ]; then
        timeout 600 cmake -G Ninja -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_STATIC=0 >&2
    fi
    timeout 1800 ninja -C "$build" >&2
    echo "$build"
}

# do_packages [--suite SUITE] [--out DIR]
do_packages() {
    local suite=$QEMU_SUITE out="" ver build lib rver
    while [ $# -gt 0 ]; do
        case $1 in
            --suite) suite=${2:?--suite needs a suite}; shift 2 ;;
            --out) out=${2:?--out needs a directory}; shift 2 ;;
            *) die "packages: unknown option $1 (--suite SUITE, --out DIR)" ;;
        esac
    done
    case $suite in
        bookworm|trixie) ;;
        *) die "packages: suite $suite is not one this project builds for (bookworm, trixie)" ;;
    esac
    out=${out:-$PKG_OUT_BASE/$suite}
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    ver=$(pkg_version)
    rm -f "$out"/rnic-dkms_*.deb "$out"/ibverbs-provider-rnic_*.deb
    pkg_dkms "$out" "$ver"
    local depends="" own=yes
    if ! build=$(rdma_core_for_suite "$suite"); then
        # The suite's rdma-core source cannot be had (the archive no longer
        # serves bookworm's 44.0 tarball): the provider of this tree's
        # rdma-core, if the suite's libibverbs has all it imports.
        note "packages: no rdma-core source for $suite; checking whether its libibverbs takes the provider of rdma-core $RDMA_VERSION"
        build=$RDMA_BUILD
        own=""
    fi
    lib=$(ls "$build"/lib/librnic-rdmav*.so 2>/dev/null | head -n1)
    [ -n "$lib" ] || die "packages: no rnic provider in $build"
    if [ -z "$own" ]; then
        depends=$(suite_libibverbs_depends "$lib" "$suite") ||
            die "packages: no provider for $suite: its libibverbs does not export what the provider needs (rnic-dkms is in $(rel "$out"))"
    fi
    rver=$(rdma_core_tree_version "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")")
    [ -n "$rver" ] || die "packages: cannot tell the rdma-core version of $build"
    pkg_provider "$out" "$ver" "$lib" "$rver" "$suite" "$depends"
    note "packages for $suite in $(rel "$out"):"
    ls -1 "$out"
}
