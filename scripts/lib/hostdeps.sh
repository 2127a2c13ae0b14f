# SPDX-License-Identifier: GPL-2.0-or-later
#
# Host packages and apt sources needed to build and run rnic.  Everything
# comes from Debian's archive: bookworm (the host), bookworm-backports (a
# recent meson) and trixie source packages (QEMU 10.0 and rdma-core 56.1).

RNIC_APT_SOURCES=/etc/apt/sources.list.d/rnic-extra.sources

rnic_apt_sources_text() {
    cat <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
}

# Packages for building QEMU, rdma-core and the guest image, and for
# running the VMs and the test suite (dkms and debootstrap: the dkms-kernels
# test, scripts/dkms-check.sh; libvirt: the libvirt test).
RNIC_HOST_PACKAGES="
    git ca-certificates dpkg-dev xz-utils zstd rsync
    gcc g++ gcc-multilib make pkg-config ninja-build cmake flex bison
    python3 python3-venv python3-matplotlib
    libglib2.0-dev libpixman-1-dev zlib1g-dev libdeflate-dev libslirp-dev libfdt-dev
    libnl-3-dev libnl-route-3-dev libudev-dev sparse
    debootstrap debian-archive-keyring e2fsprogs dkms
    seabios ipxe-qemu
    libvirt-daemon-system libvirt-clients libvirt-daemon-driver-qemu
"

pkg_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

# Writes the extra apt sources when they differ from what we need and
# refreshes the package lists when needed.  Safe to run again and again.
ensure_apt_sources() {
    local want need_update=0
    want=$(rnic_apt_sources_text)
    if [ ! -f "$RNIC_APT_SOURCES" ] || [ "$(cat "$RNIC_APT_SOURCES")" != "$want" ]; then
        printf '%s\n' "$want" >"$RNIC_APT_SOURCES"
        need_update=1
    fi
    # Lists missing (fresh machine, or lists cleaned)?
    if ! ls /var/lib/apt/lists/*_dists_trixie_main_source_Sources* >/dev/null 2>&1 ||
       ! ls /var/lib/apt/lists/*_dists_bookworm-backports_*Packages* >/dev/null 2>&1; then
        need_update=1
    fi
    if [ "$need_update" = 1 ]; then
        timeout 900 apt-get update
    fi
}

# ensure_packages [-t RELEASE] PKG...: installs the packages not installed yet.
ensure_packages() {
    local release=() missing=() p
    if [ "${1:-}" = -t ]; then
        release=(-t "$2")
        shift 2
    fi
    for p in "$@"; do
        pkg_installed "$p" || missing+=("$p")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y --no-install-recommends \
            "${release[@]}" "${missing[@]}"; then
        # Stale package lists are the usual reason; refresh once and retry.
        timeout 900 apt-get update
        DEBIAN_FRONTEND=noninteractive timeout 1800 apt-get install -y --no-install-recommends \
            "${release[@]}" "${missing[@]}"
    fi
}

step_host_deps() {
    ensure_apt_sources
    # shellcheck disable=SC2086
    ensure_packages $RNIC_HOST_PACKAGES
    ensure_packages -t bookworm-backports meson
    [ -x "$PY" ] || { echo "$PY is missing"; return 1; }
    echo "host packages ready"
}

# Debian 12's own kernel headers, for building the guest kernel module on
# the host as a compile check.  Prints the kernel release it installed.
ensure_host_kernel_headers() {
    ensure_packages linux-headers-amd64 >&2
    local v
    v=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/.*linux-headers-\([^ ,]*\).*/\1/p')
    [ -d "/usr/src/linux-headers-$v" ] || { echo "no headers for $v" >&2; return 1; }
    printf '%s\n' "$v"
}
