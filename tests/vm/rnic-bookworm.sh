#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic in a guest the project did not tailor.  VM 0 is plain Debian 12
# (rnic.sh image --suite bookworm): debootstrap's bookworm with its own
# kernel (6.1) and rdma-core (44.0), and the two guest packages of
# 'rnic.sh packages --suite bookworm' installed with 'apt install ./*.deb',
# which brought in dkms and the kernel headers.  VM 1 is the test image
# (trixie, 6.12, rdma-core 56.1).  Between them, both ways:
#   - ibv_rc_pingpong -c (RC SEND/RECV, data verified);
#   - rping -V (RDMA CM; RDMA READ, WRITE and SEND, verified);
#   - ib_write_bw.
# Then VM 0 removes both packages with apt: no rnic file is left, the
# distribution's providers are all still there, libibverbs warns of
# nothing, and Soft-RoCE on the virtio NIC passes a verified ping-pong.
# vmlaunch: -n 2 --rnic --timeout 600
set -u
. rnic-test-lib rnic-bookworm
dev=$RNIC_IBDEV
gid=$RNIC_GID_INDEX
libdir=/usr/lib/x86_64-linux-gnu/libibverbs
me=$RNIC_VM_INDEX
out=/tmp/rnic-bookworm.out

# pair SERVER_VM WHAT -- SERVER_ARGS... -- CLIENT_ARGS...: one exchange,
# served by VM SERVER_VM; the other VM is its client, which retries until
# the server listens.  Prints and checks the output for "invalid data".
pair() {
    local server=$1 what=$2 sargs=() cargs=()
    shift 2
    [ "$1" = -- ] && shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    cargs=("$@")
    if [ "$me" = "$server" ]; then
        timeout 300 "${sargs[@]}" >"$out" 2>&1 || { cat "$out"; fail "$what: server in VM $me"; }
    else
        sleep 1
        rnic-retry 60 2 timeout 120 "${cargs[@]}" >"$out" 2>&1 ||
            { cat "$out"; fail "$what: client in VM $me"; }
    fi
    grep -qi "invalid data" "$out" && { cat "$out"; fail "$what: data did not verify"; }
    log "$what, served by VM $server: done"
}

# Which guest this is, and that it is what the test says it is.
. /etc/os-release
kver=$(uname -r)
ibv=$(dpkg-query -W -f='${Version}' libibverbs1)
log "VM $me: $PRETTY_NAME, kernel $kver, libibverbs1 $ibv, device $dev, GID index $gid"
if [ "$me" = 0 ]; then
    [ "$VERSION_ID" = 12 ] || fail "VM 0 is not Debian 12: $PRETTY_NAME"
    case $kver in 6.1.*) ;; *) fail "VM 0 runs kernel $kver, not bookworm's 6.1" ;; esac
    case $ibv in 44.*) ;; *) fail "VM 0 has libibverbs1 $ibv, not bookworm's 44" ;; esac
    for p in rnic-dkms ibverbs-provider-rnic; do
        dpkg-query -W -f='${Status}\n' "$p" | grep -q '^install ok installed' ||
            fail "$p is not installed"
    done
    dpkg-query -W -f='${Version}\n' ibverbs-provider-rnic | grep -q '~bookworm$' ||
        fail "the provider package is not the one for bookworm"
    modinfo -F vermagic rnic | grep -q "^$kver " ||
        fail "the rnic module was not built for $kver"
else
    [ "$VERSION_ID" = 13 ] || fail "VM 1 is not the trixie test image: $PRETTY_NAME"
fi
info=$(ibv_devinfo -d "$dev" 2>&1) || { echo "$info"; fail "ibv_devinfo -d $dev"; }
grep -q "PORT_ACTIVE" <<<"$info" || { echo "$info"; fail "$dev: port not active"; }
grep -q "transport:.*InfiniBand" <<<"$info" || { echo "$info"; fail "$dev: transport"; }
grep -qi "warn\|error" <<<"$info" && { echo "$info"; fail "ibv_devinfo warned"; }

for s in 0 1; do
    peer=$RNIC_PEER_DATA_IP4
    pair "$s" "ibv_rc_pingpong -c, 200 x 4096 B" \
        -- ibv_rc_pingpong -d "$dev" -g "$gid" -c -n 200 -s 4096 -p "$(test_port $((s * 10 + 1)))" \
        -- ibv_rc_pingpong -d "$dev" -g "$gid" -c -n 200 -s 4096 -p "$(test_port $((s * 10 + 1)))" "$peer"
    pair "$s" "rping -V, 20 x 4096 B" \
        -- rping -s -a "$RNIC_DATA_IP4" -p "$(test_port $((s * 10 + 2)))" -V -C 20 -S 4096 \
        -- rping -c -a "$peer" -p "$(test_port $((s * 10 + 2)))" -V -C 20 -S 4096
    pair "$s" "ib_write_bw, 500 x 64 KiB" \
        -- ib_write_bw -d "$dev" -x "$gid" -p "$(test_port $((s * 10 + 3)))" -s 65536 -n 500 \
        -- ib_write_bw -d "$dev" -x "$gid" -p "$(test_port $((s * 10 + 3)))" -s 65536 -n 500 "$peer"
    [ "$me" = "$s" ] || grep -E '^ *65536 +500 ' "$out" ||
        { cat "$out"; fail "ib_write_bw printed no result line"; }
done
rnic-dmesg-check || fail "kernel warnings or rnic errors"

if [ "$me" = 1 ]; then
    log "OK: bookworm's rnic served and was served by this trixie VM, both ways"
    exit 0
fi

# The packages removed, as a user removes them.
providers_before=$(ls "$libdir")
ip link set "$RNIC_RNIC_NETDEV" down
rmmod rnic || fail "rmmod rnic"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q rnic-dkms ibverbs-provider-rnic >"$out" 2>&1 ||
    { cat "$out"; fail "apt-get purge"; }
modinfo rnic >/dev/null 2>&1 && fail "the rnic module is still installed after removal"
ls "$libdir"/librnic-* /etc/libibverbs.d/rnic.driver 2>/dev/null && fail "rnic files are left"
left=$(comm -23 <(echo "$providers_before" | grep -v '^librnic-') <(ls "$libdir"))
[ -z "$left" ] || fail "providers of the distribution went with the packages: $left"
dpkg-query -W -f='${Status}\n' ibverbs-providers | grep -q 'install ok installed' ||
    fail "ibverbs-providers is no longer installed"
list=$(ibv_devices 2>&1) || fail "ibv_devices after removal: $list"
grep -qi 'warn\|error\|rnic' <<<"$list" && fail "ibv_devices after removal: $list"
log "removed: no rnic file left, $(echo "$providers_before" | grep -vc '^librnic-') distribution providers kept"

modprobe rdma_rxe || fail "modprobe rdma_rxe"
rdma link add rxe0 type rxe netdev "$RNIC_NETDEV" || fail "rdma link add rxe0"
rgid=""
for _ in $(seq 1 100); do
    rgid=$(rnic-gid-index rxe0 2>/dev/null) && [ -n "$rgid" ] && break
    sleep 0.1
done
[ -n "$rgid" ] || fail "rxe0 has no RoCE v2 IPv4 GID"
port=$(test_port 30)
ibv_rc_pingpong -d rxe0 -g "$rgid" -c -n 50 -s 4096 -p "$port" >/tmp/srv.out 2>&1 &
srv=$!
wait_listen "$port" || fail "rxe0: the ping-pong server never listened"
ibv_rc_pingpong -d rxe0 -g "$rgid" -c -n 50 -s 4096 -p "$port" 127.0.0.1 >"$out" 2>&1 ||
    { cat /tmp/srv.out "$out"; fail "rxe0: ibv_rc_pingpong -c"; }
wait "$srv" || { cat /tmp/srv.out; fail "rxe0: ibv_rc_pingpong -c server"; }
grep -qi "invalid data" /tmp/srv.out "$out" && fail "rxe0: data did not verify"
fail_on_kernel_warnings "kernel warnings after removal"
log "OK: plain Debian 12 with the two packages talks to trixie both ways; removed, rxe still works"
