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

# pkg_provider OUT VERSION LIB RDMA_VERSION SUITE
pkg_provider() {
    local out=$1 ver=$2 lib=$3 rver=$4 suite=$5 stage next
    stage=$(mktemp -d)
    install -D -m 0644 "$lib" "$stage/usr/lib/$PKG_MULTIARCH/libibverbs/$(basename "$lib")"
    strip --strip-unneeded "$stage/usr/lib/$PKG_MULTIARCH/libibverbs/$(basename "$lib")"
    mkdir -p "$stage/etc/libibverbs.d" "$stage/usr/share/doc/ibverbs-provider-rnic"
    echo "driver rnic" >"$stage/etc/libibverbs.d/rnic.driver"
    cp "$RNIC_ROOT/LICENSE" "$stage/usr/share/doc/ibverbs-provider-rnic/copyright"
    # Only the rdma-core release it was built against: libibverbs checks
    # a provider's private ABI, which may change with any release.
    next=${rver%.*}.$((${rver##*.} + 1))
    pkg_control "$stage" ibverbs-provider-rnic "$ver~$suite" "$PKG_ARCH" libs \
        "libc6 (>= 2.34), libibverbs1 (>= $rver), libibverbs1 (<< $next~)" \
        "userspace verbs provider for the rnic emulated RDMA NIC" \
        "The rdma-core provider of rnic, built against rdma-core $rver" \
        "($suite).  It sits next to the providers of ibverbs-providers and" \
        "needs the rnic kernel driver (rnic-dkms)."
    echo "/etc/libibverbs.d/rnic.driver" >"$stage/DEBIAN/conffiles"
    pkg_build "$stage" "$out/ibverbs-provider-rnic_${ver}~${suite}_$PKG_ARCH.deb"
    rm -rf "$stage"
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
    build=$(rdma_core_for_suite "$suite") ||
        die "packages: no provider for $suite without its rdma-core source (rnic-dkms is in $(rel "$out"))"
    lib=$(ls "$build"/lib/librnic-rdmav*.so 2>/dev/null | head -n1)
    [ -n "$lib" ] || die "packages: no rnic provider in $build"
    rver=$(rdma_core_tree_version "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")")
    [ -n "$rver" ] || die "packages: cannot tell the rdma-core version of $build"
    pkg_provider "$out" "$ver" "$lib" "$rver" "$suite"
    note "packages for $suite in $(rel "$out"):"
    ls -1 "$out"
}
