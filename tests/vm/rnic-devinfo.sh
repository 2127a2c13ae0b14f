#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ibv_devinfo -v shows the rnic device with its port ACTIVE, RoCE v2 GIDs
# for the netdev's IPv4 and IPv6 addresses, and the limits the device
# properties set (max-qp is lowered here to prove query_device reports it).
# The Ethernet function carries the non-RoCE traffic: the VMs ping each
# other over the rnic netdev on IPv4 and IPv6.
# vmlaunch: -n 2 --rnic --rnic-opt max-qp=200 --rnic-opt max-cq=300 --timeout 300
set -u
fail() { echo "rnic-devinfo: FAILED: $*"; exit 1; }

out=$(ibv_devinfo -v -d "$RNIC_IBDEV") || fail "ibv_devinfo failed"
echo "$out"
want() {
    grep -Eq "$1" <<<"$out" || fail "ibv_devinfo -v has no line matching '$1'"
}
want "hca_id:[[:space:]]+$RNIC_IBDEV\$"
want "vendor_id:[[:space:]]+0x1234\$"
want "vendor_part_id:[[:space:]]+29283\$"
want "state:[[:space:]]+PORT_ACTIVE"
want "link_layer:[[:space:]]+Ethernet"
want "max_qp:[[:space:]]+200\$"
want "max_cq:[[:space:]]+300\$"
want "GID\\[ *[0-9]+\\]:[[:space:]]+::ffff:$RNIC_DATA_IP4, RoCE v2"
want "GID\\[ *[0-9]+\\]:[[:space:]]+$RNIC_RNIC_IP6, RoCE v2"
want "GID\\[ *[0-9]+\\]:[[:space:]]+fe80::"

# The counters the tests read are exposed per port.
c=/sys/class/infiniband/$RNIC_IBDEV/ports/1/hw_counters
for n in tx_pkts rx_pkts retransmits loopback_pkts; do
    [ -r "$c/$n" ] || fail "no hw counter $n"
done
rdma link show "$RNIC_IBDEV/1" | grep -q "state ACTIVE" || fail "rdma link is not ACTIVE"
peer=$((1 - RNIC_VM_INDEX))
v4=RNIC_VM${peer}_RNIC_IP4
v6=RNIC_VM${peer}_RNIC_IP6
eth_before=$(cat "$c/eth_rx_pkts")
rnic-retry 10 1 ping -c 3 -W 2 -I "$RNIC_RNIC_NETDEV" "${!v4}" || fail "no IPv4 ping over the rnic netdev"
rnic-retry 10 1 ping -6 -c 3 -W 2 -I "$RNIC_RNIC_NETDEV" "${!v6}" || fail "no IPv6 ping over the rnic netdev"
eth_after=$(cat "$c/eth_rx_pkts")
[ "$eth_after" -gt "$eth_before" ] || fail "Ethernet RX counter did not move"
echo "rnic-devinfo: OK on $(hostname)"
