#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# dkms-check.sh [fetch|build]
#
# Builds the guest kernel module with dkms, through guest-driver/kernel/
# dkms.conf as users do (dkms add, dkms build), for three Debian kernels:
#
#   Debian 12's 6.1   bookworm's linux-headers-amd64, on this host (bookworm),
#                     with its gcc-12;
#   trixie's 6.12     trixie's linux-headers-amd64, in a trixie chroot,
#                     with trixie's gcc-14;
#   the newest        the highest linux-headers-amd64 in trixie and
#                     trixie-backports (the archive: the suites the project
#                     uses, plus backports; not sid or experimental), in
#                     the same chroot.
#
# Why a chroot: trixie's kbuild tools (modpost, objtool) need glibc 2.38
# (bookworm has 2.36), and the trixie kernels' configuration passes gcc-14
# options (-fmin-function-alignment) that neither bookworm's gcc-12 nor
# its clang-14 accepts.  The chroot is debootstrap --variant=minbase
# trixie with gcc-14, make and dkms; the trixie headers are unpacked into
# it from their .debs (apt-get download, dpkg-deb -x), one root per kernel
# under /kernels, since installing them would pull in the kernel images.
#
#   fetch   make the chroot (.cache/dkms-check/trixie) and fetch the headers;
#           the kernel versions are looked up again once a day
#           (RNIC_DKMS_REFRESH=1: now), and the ones fetched before are
#           used when the archive cannot be reached;
#   build   fetch (see above), then build for the three kernels; fails if
#           any build fails.
#
# Needs root (apt-get, debootstrap, chroot).  Everything but the host's
# Debian packages (dkms, linux-headers-amd64) stays in .cache/dkms-check.

set -euo pipefail
RNIC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export RNIC_ROOT
# shellcheck source=scripts/lib/common.sh
. "$RNIC_ROOT/scripts/lib/common.sh"
# shellcheck source=scripts/lib/hostdeps.sh
. "$RNIC_ROOT/scripts/lib/hostdeps.sh"
# shellcheck source=scripts/lib/image.sh
. "$RNIC_ROOT/scripts/lib/image.sh"

DK=$CACHE/dkms-check
CH=$DK/trixie
KLIST=$DK/kernels
CH_SUITE=trixie
CH_PACKAGES=gcc-14,make,dkms,kmod,openssl,pahole,libelf1t64,libssl3t64,zlib1g
# Bump to make the chroot again when the recipe below changes.
CH_RECIPE=1
KMOD=$RNIC_ROOT/guest-driver/kernel

say() { echo "dkms-check: $*"; }

# A command in the chroot, with /proc (objtool reads it) mounted in a mount
# namespace of its own, so that nothing stays mounted afterwards.
ch() {
    # shellcheck disable=SC2016
    unshare --mount --propagation private \
        sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$CH" "$@" </dev/null
}

make_chroot() {
    local want="$CH_SUITE $CH_PACKAGES $CH_RECIPE"
    if [ -x "$CH/usr/sbin/dkms" ] && [ "$(cat "$DK/chroot.stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    say "making the $CH_SUITE chroot (debootstrap)"
    rm -f "$DK/chroot.stamp" "$KLIST"
    chroot_unmount "$CH.tmp"
    rm -rf "$CH" "$CH.tmp"
    timeout 1800 nice debootstrap --variant=minbase --merged-usr --components=main \
        --include="$CH_PACKAGES" "$CH_SUITE" "$CH.tmp" "$GUEST_MIRROR" \
        >"$DK/debootstrap.log" 2>&1 || { tail -n 30 "$DK/debootstrap.log"; return 1; }
    chroot_unmount "$CH.tmp"
    chroot "$CH.tmp" apt-get clean
    cat >"$CH.tmp/etc/apt/sources.list.d/backports.sources" <<EOF
Types: deb
URIs: $GUEST_MIRROR
Suites: $CH_SUITE-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    mv "$CH.tmp" "$CH"
    printf '%s\n' "$want" >"$DK/chroot.stamp"
}

# A package's Depends in the chroot's archive: apt_depends PKG VERSION.
apt_depends() {
    ch apt-cache show "$1=$2" | sed -n 's/^Depends: //p' | sed -n 1p
}

# kernel_entry LABEL SUITE VERSION: the line of $KLIST for the kernel of
# linux-headers-amd64 VERSION: label, suite, version, release, compiler
# package and the packages holding the headers.
kernel_entry() {
    local label=$1 suite=$2 ver=$3 hdr deps cc common kbuild
    hdr=$(apt_depends linux-headers-amd64 "$ver" | grep -o 'linux-headers-[^ ,]*' | sed -n 1p)
    [ -n "$hdr" ] || { say "no headers package behind linux-headers-amd64 $ver" >&2; return 1; }
    deps=$(apt_depends "$hdr" "$ver")
    common=$(grep -o 'linux-headers-[^ ,]*-common' <<<"$deps" | sed -n 1p)
    kbuild=$(grep -o 'linux-kbuild-[^ ,]*' <<<"$deps" | sed -n 1p)
    cc=$(grep -Eo 'gcc-[0-9]+(-for-host)?' <<<"$deps" | sed -n 1p)
    if [ -z "$common" ] || [ -z "$kbuild" ] || [ -z "$cc" ]; then
        say "unexpected dependencies of $hdr: $deps" >&2
        return 1
    fi
    echo "$label $suite $ver ${hdr#linux-headers-} $cc $hdr $common $kbuild"
}

# Looks up trixie's kernel and the newest one (into $KLIST.new).
resolve_kernels() {
    local ver rest suite tver="" nver="" nsuite=""
    timeout 900 chroot "$CH" apt-get -q update >"$DK/apt.log" 2>&1 ||
        { tail -n 20 "$DK/apt.log"; return 1; }
    # "linux-headers-amd64 | 7.3.4-1~bpo13+1 | http://... trixie-backports/main amd64 Packages"
    while IFS='|' read -r _ ver rest; do
        ver=${ver// /}
        suite=$(awk '{ print $2 }' <<<"$rest")
        suite=${suite%%/*}
        if [ "$suite" = "$CH_SUITE" ] &&
           { [ -z "$tver" ] || dpkg --compare-versions "$ver" gt "$tver"; }; then
            tver=$ver
        fi
        if [ -z "$nver" ] || dpkg --compare-versions "$ver" gt "$nver"; then
            nver=$ver
            nsuite=$suite
        fi
    done < <(ch apt-cache madison linux-headers-amd64)
    [ -n "$tver" ] || { say "no linux-headers-amd64 in $CH_SUITE"; return 1; }
    # (Called as a condition: set -e does not act in here.)
    kernel_entry trixie "$CH_SUITE" "$tver" >"$KLIST.new" || return 1
    if [ "$nver" = "$tver" ]; then
        say "trixie's kernel is the newest one too"
    else
        kernel_entry newest "$nsuite" "$nver" >>"$KLIST.new" || return 1
    fi
}

# Unpacks the headers of each kernel of $KLIST.new into /kernels/RELEASE
# in the chroot (with /lib/modules/RELEASE/build pointing there, where
# users' systems have them) and installs the compiler they ask for.
fetch_headers() {
    local label suite ver kver cc pkgs root d p args
    while read -r label suite ver kver cc pkgs; do
        root=$CH/kernels/$kver
        [ "$(cat "$root/.fetched" 2>/dev/null)" = "$ver" ] && continue
        say "fetching the headers of $kver ($suite $ver)"
        rm -rf "$root.new" "$CH/var/cache/rnic-headers"
        mkdir -p "$root.new" "$CH/var/cache/rnic-headers"
        args=()
        for p in $pkgs; do args+=("$p=$ver"); done
        timeout 1200 chroot "$CH" sh -c 'cd /var/cache/rnic-headers && apt-get -q download "$@"' \
            sh "${args[@]}" >>"$DK/apt.log" 2>&1 || { tail -n 20 "$DK/apt.log"; return 1; }
        for d in "$CH"/var/cache/rnic-headers/*.deb; do
            dpkg-deb -x "$d" "$root.new" || return 1
        done
        rm -rf "$CH/var/cache/rnic-headers"
        # The flavour's Makefile includes the common one by absolute path.
        sed -i "s#/usr/src/#/kernels/$kver/usr/src/#" \
            "$root.new/usr/src/linux-headers-$kver/Makefile" || return 1
        DEBIAN_FRONTEND=noninteractive timeout 1800 chroot "$CH" \
            apt-get -q install -y --no-install-recommends -t "$suite" "$cc" >>"$DK/apt.log" 2>&1 ||
            { tail -n 20 "$DK/apt.log"; return 1; }
        chroot "$CH" apt-get clean
        echo "$ver" >"$root.new/.fetched"
        rm -rf "$root"
        mv "$root.new" "$root" || return 1
        mkdir -p "$CH/lib/modules/$kver"
        ln -sfn "/kernels/$kver/usr/src/linux-headers-$kver" "$CH/lib/modules/$kver/build"
    done <"$KLIST.new"
    # Drop the kernels no longer wanted.
    for d in "$CH"/kernels/*; do
        [ -d "$d" ] || continue
        grep -q " ${d##*/} " "$KLIST.new" && continue
        rm -rf "$d" "$CH/lib/modules/${d##*/}"
    done
}

do_fetch() {
    # The host's part: dkms and Debian 12's own headers.
    ensure_packages dkms
    ensure_host_kernel_headers >/dev/null
    make_chroot
    if [ -s "$KLIST" ] && [ -z "${RNIC_DKMS_REFRESH:-}" ] &&
       [ -n "$(find "$KLIST" -mmin -1440)" ]; then
        return 0
    fi
    if resolve_kernels && fetch_headers; then
        mv "$KLIST.new" "$KLIST"
    elif [ -s "$KLIST" ]; then
        say "could not refresh the kernel list: using the kernels fetched before"
        touch "$KLIST"
    else
        return 1
    fi
    say "kernels for the chroot: $(awk '{ print $1 ": " $4 " (" $2 ")" }' "$KLIST" | paste -sd, - | sed 's/,/, /g')"
}

# dkms_conf KEY: a value of guest-driver/kernel/dkms.conf.
dkms_conf() {
    sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}.*/\1/p" "$KMOD/dkms.conf" | sed -n 1p
}

# report RELEASE WHAT DIR SECONDS RC: one line for a build, and its log
# when it failed.  DIR is the dkms tree's $name/$version.
report() {
    local kver=$1 what=$2 dir=$3 secs=$4 rc=$5 ko vm log warn
    ko=$(find "$dir/$kver" -name "$NAME.ko*" 2>/dev/null | sed -n 1p || true)
    if [ "$rc" = 0 ] && [ -n "$ko" ]; then
        vm=$(modinfo -F vermagic "$ko" 2>/dev/null || true)
        if [ "${vm%% *}" = "$kver" ]; then
            log=$(find "$dir/$kver" -name make.log 2>/dev/null | sed -n 1p || true)
            warn=$(grep -s 'warning:' "$log" || true)
            say "OK   $kver ($what): $(basename "$ko") in ${secs}s, $(grep -c . <<<"$warn" || true) warning(s)"
            [ -z "$warn" ] || printf '%s\n' "$warn" | sed 's/^/    /'
            BUILT+=("$kver")
            return 0
        fi
        say "FAIL $kver ($what): $(basename "$ko") has vermagic '$vm'"
    else
        say "FAIL $kver ($what): dkms build failed after ${secs}s"
        [ -f "$dir/build/make.log" ] && tail -n 60 "$dir/build/make.log" | sed 's/^/    /'
    fi
    FAILED+=("$kver")
}

# The host's Debian 12 kernel, with a dkms tree, source tree and MOK key of
# our own so that nothing outside .cache is touched.
build_host() {
    local kver v t cc rc=0 h=$DK/host
    kver=$(ensure_host_kernel_headers)
    v=$(dpkg-query -W -f='${Version}' linux-headers-amd64)
    rm -rf "$h/dkms" "$h/source"
    mkdir -p "$h/dkms" "$h/source"
    stage_kmod_tree "$h/source/$NAME-$VER"
    t=$SECONDS
    dkms add -m "$NAME" -v "$VER" --sourcetree "$h/source" --dkmstree "$h/dkms" >"$h/dkms.log" 2>&1 &&
        mok_signing_key=$h/mok.key mok_certificate=$h/mok.pub \
        nice dkms build -m "$NAME" -v "$VER" -k "$kver" --kernelsourcedir "/usr/src/linux-headers-$kver" \
            --sourcetree "$h/source" --dkmstree "$h/dkms" >>"$h/dkms.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || tail -n 20 "$h/dkms.log"
    cc=$(dpkg-query -W -f='${Depends}' "linux-headers-$kver" | grep -Eo 'gcc-[0-9]+' | sed -n 1p)
    report "$kver" "bookworm linux-headers-amd64 $v, $cc, host dkms $(dkms --version | sed 's/dkms-//')" \
        "$h/dkms/$NAME/$VER" "$((SECONDS - t))" "$rc"
}

build_chroot() {
    local label suite ver kver cc pkgs t rc dv
    rm -rf "$CH/var/lib/dkms/$NAME" "$CH/usr/src/$NAME-"*
    stage_kmod_tree "$CH/usr/src/$NAME-$VER"
    ch dkms add -m "$NAME" -v "$VER" >"$DK/chroot-dkms.log" 2>&1 ||
        { cat "$DK/chroot-dkms.log"; FAILED+=(trixie-chroot); return 0; }
    dv=$(ch dkms --version | sed 's/dkms-//')
    while read -r label suite ver kver cc pkgs; do
        t=$SECONDS
        rc=0
        ch nice dkms build -m "$NAME" -v "$VER" -k "$kver" \
            --kernelsourcedir "/kernels/$kver/usr/src/linux-headers-$kver" \
            >>"$DK/chroot-dkms.log" 2>&1 || rc=$?
        report "$kver" "$label: $suite linux-headers-amd64 $ver, $cc, trixie chroot dkms $dv" \
            "$CH/var/lib/dkms/$NAME/$VER" "$((SECONDS - t))" "$rc"
    done <"$KLIST"
}

do_build() {
    [ -f "$KMOD/dkms.conf" ] || { say "no guest-driver/kernel/dkms.conf"; exit 1; }
    NAME=$(dkms_conf PACKAGE_NAME)
    VER=$(dkms_conf PACKAGE_VERSION)
    BUILT=()
    FAILED=()
    do_fetch
    build_host
    build_chroot
    if [ "${#FAILED[@]}" -gt 0 ]; then
        say "$NAME $VER failed to build for ${FAILED[*]}"
        exit 1
    fi
    say "$NAME $VER built with dkms for ${BUILT[*]}"
}

[ "$(id -u)" = 0 ] || { say "needs root (apt-get, debootstrap, chroot)"; exit 1; }
mkdir -p "$DK"
exec 9>"$DK/lock"
flock 9
case ${1:-build} in
    fetch) do_fetch ;;
    build) do_build ;;
    *) echo "usage: $0 [fetch|build]" >&2; exit 2 ;;
esac
