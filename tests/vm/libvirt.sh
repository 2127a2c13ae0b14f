#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# libvirt.sh --kernel K --initrd I --image IMG: two libvirt domains made
# from docs/libvirt/rnic-domain.xml run ibv_rc_pingpong -c between them,
# twice: first with their rnics on one multicast segment, as the file is,
# then on a Linux bridge made here, with the <interface> of
# docs/libvirt/rnic-interface-bridge.xml.  Each time the test reads
# 'info rnic' of each through 'virsh qemu-monitor-command --hmp' and wants
# the device to have moved packets; then everything is destroyed and
# undefined.  (One libvirtd serves both, so the two run in turn.)  It uses Debian's libvirt-daemon-system as it is: a libvirtd
# (and virtlogd) already running, or started here and stopped again.
# The project's guest image needs two things a user's VM does not: its
# run description in fw_cfg (<sysinfo type='fwcfg'>) and, since QEMU runs
# as libvirt's unprivileged user, no relabelling of the test's files
# (<seclabel type='none'/>).  Run on the host by meson (tests/vm/meson.build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "libvirt: FAILED: $*"; exit 1; }
# Each line says how far into the test it is: where the time goes.
log() { echo "libvirt: [+${SECONDS}s] $*"; }

kernel="" initrd="" image=""
while [ $# -gt 0 ]; do
    case $1 in
        --kernel) kernel=$2; shift 2 ;;
        --initrd) initrd=$2; shift 2 ;;
        --image) image=$2; shift 2 ;;
        *) fail "unknown argument $1" ;;
    esac
done
[ -f "$kernel" ] && [ -f "$initrd" ] && [ -f "$image" ] || fail "needs --kernel, --initrd and --image"
command -v virsh >/dev/null && command -v libvirtd >/dev/null ||
    fail "libvirt-daemon-system and libvirt-clients are not installed"

# QEMU runs as libvirt's own user: everything it opens lives in a
# world-readable directory of the test's.
work=$(mktemp -d /tmp/rnic-libvirt.XXXXXX)
chmod 0755 "$work"
virsh=(virsh -q -c qemu:///system)
started=()
names=()
bridge=rnlv$(($$ % 100000))
undefine_all() {
    local n
    for n in "${names[@]}"; do
        "${virsh[@]}" destroy "$n" >/dev/null 2>&1 || true
        "${virsh[@]}" undefine "$n" >/dev/null 2>&1 || true
    done
}
cleanup() {
    undefine_all
    for p in "${started[@]}"; do
        kill "$(cat "$p")" 2>/dev/null || true
    done
    ip link del "$bridge" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

accel=qemu cpu=maximum
if [ -r /dev/kvm ] && [ "${RNIC_ACCEL:-}" = kvm ]; then
    accel=kvm cpu=host-passthrough
fi

# The daemons, unless they run already.  With TCG, the libvirtd started
# here may not use /dev/kvm: libvirt re-probes an emulator on every
# domain it defines while /dev/kvm looks usable but KVM does not work,
# and on a host whose /dev/kvm exists but does not answer each probe
# also waits out a timeout (67 s a define, measured, against 2 s for
# the first define and 0.02 s after).  In libvirtd's own mount namespace
# a null device no one but root may open stands in for it (a device
# node: libvirt moves the mounts under /dev into each domain's /dev).
for d in virtlogd libvirtd; do
    if ! pgrep -x "$d" >/dev/null; then
        if [ "$d" = libvirtd ] && [ "$accel" = qemu ] && [ -e /dev/kvm ]; then
            mknod -m 0000 "$work/no-kvm" c 1 3
            unshare -m --propagation private sh -c \
                'mount --bind "$1" /dev/kvm && shift && exec "$@"' \
                sh "$work/no-kvm" "$d" --daemon --pid-file "$work/$d.pid"
        else
            "$d" --daemon --pid-file "$work/$d.pid"
        fi
        started+=("$work/$d.pid")
    fi
done
for _ in $(seq 1 150); do
    "${virsh[@]}" uri >/dev/null 2>&1 && break
    sleep 0.2
done
"${virsh[@]}" uri >/dev/null || fail "libvirtd does not answer"

prefix=$work/prefix
"$root/scripts/rnic.sh" install --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "rnic.sh install"; }
log "QEMU installed in $prefix"
chmod -R go+rX "$prefix"
install -m 0644 "$kernel" "$work/vmlinuz"
install -m 0644 "$initrd" "$work/initrd.img"

# pair SEGMENT: two domains from the documented XML, their rnics on
# SEGMENT (mcast: as the file is; bridge: on $bridge), a verified
# ping-pong between them and info rnic of each; then both undefined.
pair() {
    local seg=$1 i n p iface="" info rx
    names=("rnic-lv-$seg-0-$$" "rnic-lv-$seg-1-$$")
    if [ "$seg" = bridge ]; then
        # The documented <interface>, with this bridge's name.
        iface=$(sed -e '/^<!--/,/-->$/d' -e "s|'br0'|'$bridge'|" \
            "$root/docs/libvirt/rnic-interface-bridge.xml" | sed 's/^/    /')
        grep -q "<source bridge='$bridge'/>" <<<"$iface" ||
            fail "no bridge <source> in the documented <interface>"
    fi
    for i in 0 1; do
        n=${names[$i]}
        p=$((1 - i))
        cp --sparse=always "$image" "$work/vm$i.img"
        chmod 0666 "$work/vm$i.img"
        cat >"$work/vm$i.env" <<EOF
RNIC_CMD_TIMEOUT=600
RNIC_MODE=rnic
RNIC_NVMS=2
RNIC_VM_INDEX=$i
RNIC_RNIC_MAC=52:54:00:52:0a:0$((i + 1))
RNIC_RNIC_IP4=198.19.0.$((i + 1))
RNIC_RNIC_IP6=fd52:0:0:2::$((i + 1))
RNIC_DATA_IP4=198.19.0.$((i + 1))
RNIC_PEER_DATA_IP4=198.19.0.$((p + 1))
RNIC_PEER_RNIC_IP4=198.19.0.$((p + 1))
RNIC_VM0_RNIC_IP4=198.19.0.1
RNIC_VM1_RNIC_IP4=198.19.0.2
EOF
        # The ping-pong, then time for the host to look at the device.
        printf '%s\n' 'RNIC_NO_RPING=1 rnic-pingpong 200 4096 && echo LIBVIRT-PINGPONG-OK && sleep 300' \
            >"$work/vm$i.cmd"
        : >"$work/vm$i.serial.log"
        chmod 0644 "$work/vm$i.env" "$work/vm$i.cmd"
        chmod 0666 "$work/vm$i.serial.log"
        sed -e "s|@ACCEL@|$accel|; s|@CPU@|$cpu|; s|@NAME@|$n|; s|@PREFIX@|$prefix|" \
            -e "s|@KERNEL@|$work/vmlinuz|; s|@INITRD@|$work/initrd.img|; s|@DISK@|$work/vm$i.img|" \
            -e "s|@MAC@|52:54:00:52:0a:0$((i + 1))|; s|@SERIAL@|$work/vm$i.serial.log|" \
            -e "s|@CMDLINE@|console=ttyS0 root=/dev/vda rw init=/sbin/rnic-init quiet panic=-1 mitigations=off|" \
            -e "s|^  </os>|  </os>\n  <sysinfo type='fwcfg'>\n    <entry name='opt/rnic/cmd' file='$work/vm$i.cmd'/>\n    <entry name='opt/rnic/env' file='$work/vm$i.env'/>\n  </sysinfo>|" \
            -e "s|^</domain>|  <seclabel type='none'/>\n</domain>|" \
            "$root/docs/libvirt/rnic-domain.xml" >"$work/$n.xml"
        if [ -n "$iface" ]; then
            # The multicast <interface> out, the bridge one in.
            awk -v iface="${iface//@MAC@/52:54:00:52:0a:0$((i + 1))}" '
                /^ *<interface type=.mcast.>/ { skip = 1; print iface; next }
                skip && /<\/interface>/ { skip = 0; next }
                !skip' "$work/$n.xml" >"$work/$n.xml.new"
            mv "$work/$n.xml.new" "$work/$n.xml"
            grep -q "<interface type='bridge'>" "$work/$n.xml" || fail "$n.xml has no bridge <interface>"
            grep -q "type='mcast'" "$work/$n.xml" && fail "$n.xml still has the multicast <interface>"
        fi
        grep -q '@[A-Z]*@' "$work/$n.xml" && fail "a placeholder is left in $n.xml"
        "${virsh[@]}" define "$work/$n.xml" >/dev/null || fail "virsh define $n"
    done
    for n in "${names[@]}"; do
        "${virsh[@]}" start "$n" >/dev/null || fail "virsh start $n"
    done
    log "started ${names[*]} from docs/libvirt/rnic-domain.xml"

    # Both guests report the verified ping-pong.
    deadline=$((SECONDS + 600))
    for i in 0 1; do
        until grep -aq LIBVIRT-PINGPONG-OK "$work/vm$i.serial.log"; do
            if grep -aq 'RNIC-EXIT-STATUS=' "$work/vm$i.serial.log" || [ $SECONDS -gt $deadline ]; then
                tail -n 30 "$work/vm$i.serial.log"
                fail "${names[$i]}: no verified ping-pong"
            fi
            sleep 1
        done
        grep -a 'rnic-pingpong: OK' "$work/vm$i.serial.log"
    done
    log "$seg: both domains verified their ping-pong"

    # The host's view of each device, through libvirt's monitor passthrough.
    for n in "${names[@]}"; do
        info=$("${virsh[@]}" qemu-monitor-command --hmp "$n" 'info rnic') ||
            fail "$n: info rnic through virsh"
        echo "$info" | sed -n 1,12p
        rx=$(grep -o '\brx_pkts [0-9]*' <<<"$info" | sed -n 1p | cut -d' ' -f2)
        [ -n "$rx" ] && [ "$rx" -gt 0 ] || fail "$n: info rnic shows no received packets"
    done
    if [ "$seg" = bridge ]; then
        # Both taps libvirt made are on the bridge, at RoCE's MTU.
        p=$(ip -o link show master "$bridge" | grep -c 'mtu 4200') || true
        [ "$p" = 2 ] || { ip -o link show master "$bridge"; fail "$bridge has $p ports at MTU 4200, not 2"; }
    fi
    undefine_all
    log "OK ($seg): ibv_rc_pingpong -c between two libvirt domains, info rnic read through virsh"
}

pair mcast
# The bridge users would have: no address, RoCE-sized frames.  libvirt
# makes each domain's tap and puts it on the bridge.
ip link add "$bridge" mtu 4200 type bridge || fail "cannot make bridge $bridge"
ip link set "$bridge" up
pair bridge
log "OK: both segments"
