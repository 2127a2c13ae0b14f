#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ibv_devinfo -v shows the rnic device with its port ACTIVE, RoCE v2 and
# v1 GIDs for the netdev's IPv4 and IPv6 addresses, the limits the device
# properties set (each lowered here from its default, so a hard-coded
# value would fail), and the capabilities the device has (the clock, RSS
# over raw packet QPs) with their true values.
# The Ethernet function carries the non-RoCE traffic: the VMs ping each
# other over the rnic netdev on IPv4 and IPv6.
# vmlaunch: -n 2 --rnic --rnic-opt max-qp=200 --rnic-opt max-cq=300 --rnic-opt max-qp-wr=2048 --rnic-opt max-mr=1000 --rnic-opt max-pd=100 --rnic-opt max-srq=50 --rnic-opt max-mw=20 --rnic-opt max-mcast-grp=16 --rnic-opt max-mcast-qp-attach=4 --rnic-opt max-sge=4 --timeout 300
set -u
. rnic-test-lib rnic-devinfo

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
want "max_qp_wr:[[:space:]]+2048\$"
want "max_sge:[[:space:]]+4\$"
want "max_mr:[[:space:]]+1000\$"
want "max_pd:[[:space:]]+100\$"
want "max_srq:[[:space:]]+50\$"
want "max_mw:[[:space:]]+20\$"
want "max_mcast_grp:[[:space:]]+16\$"
want "max_mcast_qp_attach:[[:space:]]+4\$"
want "max_total_mcast_qp_attach:[[:space:]]+64\$"
want "max_ah:[[:space:]]+200\$"
want "completion timestamp_mask:[[:space:]]+0xffffffffffffffff\$"
want "hca_core_clock:[[:space:]]+1000000kHZ\$"
want "max_rwq_indirection_table_size:[[:space:]]+32\$"
want "rx_hash_function:[[:space:]]+0x1\$"
want "rx_hash_fields_mask:[[:space:]]+0xFF\$"
want "max_wq_type_rq:[[:space:]]+200\$"
want "SUPPORT_RAW_PACKET\$"
# ibv_devinfo prints v1 GIDs in hex, without the IPv4-mapped form.
IFS=. read -r o1 o2 o3 o4 <<<"$RNIC_DATA_IP4"
v1gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
        "$o1" "$o2" "$o3" "$o4")
want "GID\\[ *[0-9]+\\]:[[:space:]]+$v1gid, RoCE v1"
# What it does not have is not claimed.
if grep -Eq "max_raw_ethy_qp:[[:space:]]+[1-9]|ON_DEMAND_PAGING|XRC" <<<"$out"; then
    fail "ibv_devinfo -v claims a capability rnic does not have"
fi
want "GID\\[ *[0-9]+\\]:[[:space:]]+::ffff:$RNIC_DATA_IP4, RoCE v2"
want "GID\\[ *[0-9]+\\]:[[:space:]]+$RNIC_RNIC_IP6, RoCE v2"
want "GID\\[ *[0-9]+\\]:[[:space:]]+fe80::"

# The counters the tests read are exposed per port.
c=$(counter_dir)
for n in tx_pkts rx_pkts retransmits loopback_pkts; do
    [ -r "$c/$n" ] || fail "no hw counter $n"
done
rdma link show "$RNIC_IBDEV/1" | grep -q "state ACTIVE" || fail "rdma link is not ACTIVE"
peer=$((1 - RNIC_VM_INDEX))
v4=RNIC_VM${peer}_RNIC_IP4
v6=RNIC_VM${peer}_RNIC_IP6
eth_before=$(counter eth_rx_pkts)
# A VM answers pings only while it runs: neither powers off before the
# other has pinged it (one that finished first used to leave the other
# retrying into the void).
signal_wait 1 240 >/dev/null &
peer_done=$!
rnic-retry 10 1 ping -c 3 -W 2 -I "$RNIC_RNIC_NETDEV" "${!v4}" || fail "no IPv4 ping over the rnic netdev"
rnic-retry 10 1 ping -6 -c 3 -W 2 -I "$RNIC_RNIC_NETDEV" "${!v6}" || fail "no IPv6 ping over the rnic netdev"
signal_send peer 1 || fail "the peer is gone"
wait "$peer_done" || fail "the peer never finished its pings"
eth_after=$(counter eth_rx_pkts)
[ "$eth_after" -gt "$eth_before" ] || fail "Ethernet RX counter did not move"
log "OK on $(hostname)"
