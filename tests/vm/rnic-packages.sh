#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest packages, as a user handles them.  The image's driver and
# provider came from them (scripts/lib/image.sh); this test removes them
# with apt and installs them again from the .debs kept in /opt/rnic/debs:
#   - installed: dpkg knows both, rnic0 answers ibv_devinfo;
#   - removed: no rnic module or library is left (the driver file, a
#     configuration file, goes with a purge), libibverbs warns of nothing,
#     the distribution's own providers are all still there, and Soft-RoCE
#     on the virtio NIC still passes a verified ibv_rc_pingpong -c;
#   - the provider installed again with 'apt install ./*.deb', and the
#     module the image's rnic-dkms built loaded again, rnic0 passes a
#     verified ibv_rc_pingpong -c over its own address.
# rnic-dkms is not installed again here: its dkms build takes minutes of
# CPU under TCG (eight, once, beside other tests).  The image build runs
# that same install, apt and the package's dkms postinst, natively.
# vmlaunch: -n 1 --rnic --timeout 600
set -u
. rnic-test-lib rnic-packages
libdir=/usr/lib/x86_64-linux-gnu/libibverbs

# pingpong_self DEV GID: a verified RC ping-pong between two processes of
# this VM over DEV.
pingpong_self() {
    local dev=$1 gid=$2 port srv
    port=$(test_port "$3")
    ibv_rc_pingpong -d "$dev" -g "$gid" -c -n 50 -s 4096 -p "$port" >/tmp/srv.out 2>&1 &
    srv=$!
    wait_listen "$port" || fail "$dev: the ping-pong server never listened"
    ibv_rc_pingpong -d "$dev" -g "$gid" -c -n 50 -s 4096 -p "$port" 127.0.0.1 >/tmp/cli.out 2>&1 ||
        { cat /tmp/srv.out /tmp/cli.out; fail "$dev: ibv_rc_pingpong -c"; }
    wait "$srv" || { cat /tmp/srv.out; fail "$dev: ibv_rc_pingpong -c server"; }
    log "$dev: 50 x 4096 bytes exchanged and verified"
}

providers_before=$(ls "$libdir")
for p in rnic-dkms ibverbs-provider-rnic; do
    dpkg-query -W -f='${Status} ${Version}\n' "$p" | grep -q '^install ok installed' ||
        fail "$p is not installed in the image"
done
ibv_devinfo -d "$RNIC_IBDEV" >/dev/null || fail "ibv_devinfo -d $RNIC_IBDEV"
ls /opt/rnic/debs/rnic-dkms_*.deb /opt/rnic/debs/ibverbs-provider-rnic_*.deb >/dev/null ||
    fail "no .debs in /opt/rnic/debs"

# The module the image's rnic-dkms built, for the provider's turn below.
ko=/tmp/$(basename "$(modinfo -F filename rnic)")
cp "$(modinfo -F filename rnic)" "$ko" || fail "no rnic module file"

# Removed: the device has no driver; the rest of rdma-core is untouched.
ip link set "$RNIC_RNIC_NETDEV" down
rmmod rnic || fail "rmmod rnic"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q rnic-dkms ibverbs-provider-rnic ||
    fail "apt-get remove"
modinfo rnic >/dev/null 2>&1 && fail "the rnic module is still installed after removal"
ls "$libdir"/librnic-* 2>/dev/null && fail "the rnic provider library is left"
# Its driver file is a configuration file: kept until a purge, and
# harmless meanwhile (libibverbs finds no library for it).
out=$(ibv_devices 2>&1) || fail "ibv_devices after removal: $out"
grep -qi 'warn\|error\|rnic' <<<"$out" && fail "ibv_devices after removal: $out"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ibverbs-provider-rnic ||
    fail "apt-get purge"
[ -e /etc/libibverbs.d/rnic.driver ] && fail "the rnic driver file is left after a purge"
dpkg-query -W rnic-dkms ibverbs-provider-rnic 2>/dev/null | grep -q . &&
    fail "dpkg still knows the packages after a purge"
left=$(comm -23 <(echo "$providers_before" | grep -v '^librnic-') <(ls "$libdir"))
[ -z "$left" ] || fail "providers of the distribution went with the packages: $left"
dpkg-query -W -f='${Status}\n' ibverbs-providers | grep -q 'installed' ||
    fail "ibverbs-providers is no longer installed"
log "removed: no rnic file left, $(echo "$providers_before" | grep -vc '^librnic-') distribution providers kept"

modprobe rdma_rxe || fail "modprobe rdma_rxe"
rdma link add rxe0 type rxe netdev "$RNIC_NETDEV" || fail "rdma link add rxe0"
pingpong_self rxe0 "$(rnic-gid-index rxe0)" 1
rdma link delete rxe0

# The provider installed again, the way the README tells users.
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    /opt/rnic/debs/ibverbs-provider-rnic_*.deb || fail "apt-get install ./ibverbs-provider-rnic_*.deb"
[ -e /etc/libibverbs.d/rnic.driver ] || fail "no driver file after the reinstall"
insmod "$ko" || fail "insmod $ko"
dev=""
for _ in $(seq 1 100); do
    dev=$(basename "$(ls -d /sys/class/net/"$RNIC_RNIC_NETDEV"/device/infiniband/* 2>/dev/null | head -n1)" 2>/dev/null)
    [ -n "$dev" ] && [ "$dev" != . ] && break
    sleep 0.1
done
[ -n "$dev" ] || fail "the reinstalled driver made no RDMA device"
ip link set "$RNIC_RNIC_NETDEV" up
ip addr replace "$RNIC_RNIC_IP4/24" dev "$RNIC_RNIC_NETDEV"
gid=""
for _ in $(seq 1 100); do
    gid=$(rnic-gid-index "$dev" 2>/dev/null) && [ -n "$gid" ] && break
    sleep 0.1
done
[ -n "$gid" ] || fail "$dev has no RoCE v2 IPv4 GID"
pingpong_self "$dev" "$gid" 2
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "OK: removed with apt, the provider installed again, both device kinds verified"
