#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The rnic NIC's Ethernet function on QEMU's user-mode network (--net user,
# libslirp), as users run a VM: one VM alone on its segment.  The guest
# init gave the rnic netdev slirp's address statically; this takes it away
# and gets it back by DHCP (klibc's ipconfig, the image's only DHCP
# client), then checks the lease (10.0.2.15, gateway 10.0.2.2, DNS
# 10.0.2.3), pings the host's and the DNS server's addresses, and moves
# data to and from a server on the host through 10.0.2.2: a blob fetched
# and checked against its SHA-256, and a random upload whose SHA-256 the
# host sends back.  The netdev's byte counters must show that data.
#
# tests/vm/net-host.py runs it: the HTTP server is on the host's side
# (RNIC_HOST_URL, RNIC_HOST_BLOB_SHA256, RNIC_HOST_BLOB_SIZE).
# vmlaunch: --net user --rnic --timeout 240
set -u
. rnic-test-lib rnic-net-user
url=${RNIC_HOST_URL:?no RNIC_HOST_URL: run this test with tests/vm/net-host.py http}
dev=$RNIC_RNIC_NETDEV
ipconfig=/usr/lib/klibc/bin/ipconfig
[ -x "$ipconfig" ] || fail "no DHCP client ($ipconfig) in the image"

ip -4 addr flush dev "$dev"
ip -4 addr show dev "$dev" | grep -q inet && fail "$dev kept an IPv4 address"
"$ipconfig" -t 30 -c dhcp -d "$dev" || fail "no DHCP lease on $dev"
# shellcheck disable=SC1090
. "/run/net-$dev.conf"
log "DHCP on $dev: $IPV4ADDR/$IPV4NETMASK gateway $IPV4GATEWAY DNS $IPV4DNS0"
[ "$IPV4ADDR/$IPV4NETMASK" = 10.0.2.15/255.255.255.0 ] || fail "leased $IPV4ADDR/$IPV4NETMASK"
[ "$IPV4GATEWAY" = 10.0.2.2 ] || fail "gateway $IPV4GATEWAY"
[ "$IPV4DNS0" = 10.0.2.3 ] || fail "DNS server $IPV4DNS0"
ip -4 addr show dev "$dev" | grep -q "inet 10.0.2.15/24" || fail "10.0.2.15/24 not on $dev"
ip route show default | grep -q "via 10.0.2.2 dev $dev" || fail "no default route via $dev"

ping -c 3 -W 5 -I "$dev" 10.0.2.2 || fail "no answer from the host's address 10.0.2.2"
ping -c 1 -W 5 -I "$dev" 10.0.2.3 || fail "no answer from the DNS address 10.0.2.3"

rx0=$(cat "/sys/class/net/$dev/statistics/rx_bytes")
tx0=$(cat "/sys/class/net/$dev/statistics/tx_bytes")
python3 - "$url" "$RNIC_HOST_BLOB_SHA256" <<'PY' || fail "data to and from the host"
import hashlib, os, sys, urllib.request
url, want = sys.argv[1], sys.argv[2]
blob = urllib.request.urlopen(url + "/blob", timeout=60).read()
got = hashlib.sha256(blob).hexdigest()
print("rnic-net-user: fetched %d bytes from %s/blob, SHA-256 %s" % (len(blob), url, got))
if got != want:
    sys.exit("rnic-net-user: the blob's SHA-256 should be %s" % want)
data = os.urandom(len(blob))
req = urllib.request.Request(url + "/upload", data=data, method="PUT")
echo = urllib.request.urlopen(req, timeout=60).read().decode().strip()
mine = hashlib.sha256(data).hexdigest()
print("rnic-net-user: uploaded %d bytes, the host saw SHA-256 %s" % (len(data), echo))
if echo != mine:
    sys.exit("rnic-net-user: the upload's SHA-256 is %s" % mine)
PY
rx=$(($(cat "/sys/class/net/$dev/statistics/rx_bytes") - rx0))
tx=$(($(cat "/sys/class/net/$dev/statistics/tx_bytes") - tx0))
log "$dev counted $rx bytes received, $tx sent"
[ "$rx" -ge "$RNIC_HOST_BLOB_SIZE" ] || fail "$dev received only $rx bytes"
[ "$tx" -ge "$RNIC_HOST_BLOB_SIZE" ] || fail "$dev sent only $tx bytes"
log "OK: DHCP, the host at 10.0.2.2 and data both ways over $dev"
