# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# 'rnic.sh install [--prefix DIR]': the QEMU with rnic as a program of its
# own, in DIR (default /opt/rnic), beside and never over the distribution's
# QEMU:
#
#   DIR/bin/qemu-system-x86_64     QEMU 10.0 with the rnic device
#   DIR/share/qemu/                its data: keymaps, trace events, and the
#                                  firmware it boots PCs with (SeaBIOS and
#                                  iPXE from Debian's packages, the option
#                                  ROMs from the QEMU build)
#   DIR/lib/rnic/                  the VM launcher (scripts/vmlaunch.py) and
#                                  QEMU's qemu.qmp package it talks QMP with
#   DIR/bin/rnic-vmlaunch          the launcher, with the installed QEMU
#
# QEMU finds DIR/share/qemu from where its binary is (../share/qemu), so
# the plain QEMU lines of the README work with DIR/bin/qemu-system-x86_64
# and no -L option.

INSTALL_PREFIX_DEFAULT=/opt/rnic

install_guard_prefix() {
    local prefix=$1 f owner
    case $prefix in
        /*) ;;
        *) die "install: --prefix wants an absolute directory, not $prefix" ;;
    esac
    # Never over a packaged QEMU: dpkg knows every file it installed.
    for f in "$prefix/bin/qemu-system-x86_64" "$prefix/share/qemu/bios-256k.bin"; do
        [ -e "$f" ] || continue
        if owner=$(dpkg-query -S "$f" 2>/dev/null); then
            die "install: $f belongs to the package ${owner%%:*}; choose another --prefix"
        fi
    done
}

do_install() {
    local prefix=$INSTALL_PREFIX_DEFAULT
    while [ $# -gt 0 ]; do
        case $1 in
            --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
            *) die "install: unknown option $1 (--prefix DIR)" ;;
        esac
    done
    prefix=${prefix%/}
    install_guard_prefix "$prefix"

    # QEMU's own install into a staging tree; its prefix (/usr/local) is
    # only a name there.
    local stage
    stage=$(mktemp -d)
    # The build makes only what the tests run; the install also wants the
    # merged trace-event list.
    timeout 600 ninja -C "$QEMU_BUILD" trace/trace-events-all >/dev/null
    timeout 600 meson install -C "$QEMU_BUILD" --no-rebuild --quiet --destdir "$stage" >/dev/null
    local built=$stage/usr/local
    [ -x "$built/bin/qemu-system-x86_64" ] || die "install: QEMU's install made no qemu-system-x86_64"
    install -d "$prefix/bin" "$prefix/share/qemu" "$prefix/lib/rnic"
    install -m 0755 "$built/bin/qemu-system-x86_64" "$prefix/bin/"
    cp -a "$built/share/qemu/." "$prefix/share/qemu/"
    rm -rf "$stage"

    # The firmware the build does not install (--disable-install-blobs):
    # where the wrapper's -L options point.
    local d f
    while read -r d; do
        for f in "$d"/*.bin "$d"/*.rom "$d"/*.aml; do
            [ -f "$f" ] && install -m 0644 "$f" "$prefix/share/qemu/"
        done
    done < <(qemu_firmware_dirs)

    # The launcher and a command that runs it with this QEMU.
    cp -a "$RNIC_ROOT/scripts/vmlaunch.py" "$prefix/lib/rnic/"
    if [ -d "$RNIC_ROOT/scripts/rnic_launch" ]; then
        rm -rf "$prefix/lib/rnic/rnic_launch"
        cp -a "$RNIC_ROOT/scripts/rnic_launch" "$prefix/lib/rnic/"
    fi
    # Its QMP client is QEMU's own qemu.qmp, from the QEMU source tree,
    # which an install must not need.
    rm -rf "$prefix/lib/rnic/qemu"
    mkdir -p "$prefix/lib/rnic/qemu"
    cp -a "$QEMU_SRC/python/qemu/qmp" "$prefix/lib/rnic/qemu/"
    find "$prefix/lib/rnic" -name __pycache__ -prune -exec rm -rf {} +
    cat >"$prefix/bin/rnic-vmlaunch" <<EOF
#!/bin/sh
# The rnic VM launcher with the QEMU and the firmware installed next to it.
exec /usr/bin/python3 "$prefix/lib/rnic/vmlaunch.py" --qemu "$prefix/bin/qemu-system-x86_64" \\
    -L "$prefix/share/qemu" "\$@"
EOF
    chmod 0755 "$prefix/bin/rnic-vmlaunch"
    "$prefix/bin/qemu-system-x86_64" -device help | grep -q '"rnic"' ||
        die "install: the installed QEMU has no rnic device"
    note "installed in $prefix: $("$prefix/bin/qemu-system-x86_64" --version | head -n1)"
}
