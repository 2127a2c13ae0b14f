#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The standard tools see the rnic driver.  ethtool -i names the driver, its
# version (the module's), the device's firmware and ABI version and the
# PCI function the netdev and the RDMA device sit on.  ethtool -S lists
# every counter of the RDMA port's hw_counters, reads the same values, and
# adds the netdev's own counts; RoCE and Ethernet counters move when the
# VMs ping each other and run a ping-pong.  `rdma resource show -dd` prints
# the driver's attributes: for the QP, CQ and MR of a running verbs program
# (its device context, ring sizes, access flags; no ring indices, which the
# provider keeps), and for the kernel's GSI QP and CQ (ring indices, which
# the RDMA CM connection of rnic-pingpong's rping has moved).
# vmlaunch: -n 2 --rnic --timeout 300
set -u
. rnic-test-lib rnic-tooling

ndev=$RNIC_RNIC_NETDEV
hwc=$(counter_dir)

# field LINE KEY: the value after KEY in a "key value key value" line.
field() {
    grep -oE "(^| )(drv_)?$2 [^ ]+" <<<"$1" | head -n1 | awk '{print $2}'
}

# `rdma -dd resource show ARGS`, one line per object: the tool wraps an
# object's attributes (the driver's drv_* ones last) onto indented lines.
rdma_records() {
    rdma -dd resource show "$@" |
        awk '/^[^ \t]/ { if (r != "") print r; r = $0; next }
             { r = r " " $0 } END { if (r != "") print r }'
}

# estat SNAPSHOT NAME: the value of NAME in an `ethtool -S` output.
estat() {
    awk -v n="$2" '$1 == n ":" {print $2; found = 1} END {exit !found}' <<<"$1"
}

# ---- ethtool -i ----

info=$(ethtool -i "$ndev") || fail "ethtool -i $ndev failed"
echo "$info"
bus=$(basename "$(readlink -f "/sys/class/net/$ndev/device")")
ibbus=$(basename "$(readlink -f "/sys/class/infiniband/$RNIC_IBDEV/device")")
[ "$bus" = "$ibbus" ] || fail "netdev on $bus but $RNIC_IBDEV on $ibbus"
grep -Fqx "driver: rnic" <<<"$info" || fail "ethtool -i does not name the rnic driver"
grep -Fqx "bus-info: $bus" <<<"$info" || fail "ethtool -i bus-info is not $bus"
grep -Fqx "supports-statistics: yes" <<<"$info" || fail "ethtool -i: no statistics"
modver=$(modinfo -F version rnic) || fail "modinfo rnic failed"
[ -n "$modver" ] || fail "the rnic module has no version"
grep -Fqx "version: $modver" <<<"$info" || fail "ethtool -i version is not the module's $modver"
fwver=$(ibv_devinfo -d "$RNIC_IBDEV" | awk '$1 == "fw_ver:" {print $2}')
[ -n "$fwver" ] || fail "ibv_devinfo shows no fw_ver"
grep -qE "^firmware-version: $fwver abi [0-9]+\.[0-9]+\$" <<<"$info" ||
    fail "ethtool -i firmware-version is not '$fwver abi MAJOR.MINOR'"

# ---- ethtool -S: names and values ----

snap=$(ethtool -S "$ndev") || fail "ethtool -S $ndev failed"
echo "$snap"
n=0
for f in "$hwc"/*; do
    name=$(basename "$f")
    [ "$name" = lifespan ] && continue
    estat "$snap" "$name" >/dev/null || fail "ethtool -S has no $name"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no hw_counters in $hwc"
# Everything else must be the netdev's own counts.
extra=$(awk -F: 'NR > 1 {gsub(/ /, "", $1); print $1}' <<<"$snap" |
    while read -r name; do
        [ -e "$hwc/$name" ] || echo "$name"
    done)
for name in $extra; do
    case $name in netdev_*) ;; *) fail "ethtool -S has $name, not a device counter" ;; esac
done
for name in netdev_rx_packets netdev_tx_packets netdev_rx_bytes netdev_tx_bytes; do
    estat "$snap" "$name" >/dev/null || fail "ethtool -S has no $name"
done
log "ethtool -S: the $n device counters and $(wc -w <<<"$extra") netdev counts"

# The counters only grow: a reading between two sysfs readings lies between
# them if ethtool reads the counter the name says.  The sleep outlasts the
# RDMA core's cache of the sysfs values.
for name in tx_pkts rx_pkts eth_tx_pkts eth_rx_pkts guest_errors; do
    s1=$(counter "$name")
    sleep 0.1
    e=$(estat "$(ethtool -S "$ndev")" "$name")
    sleep 0.1
    s2=$(counter "$name")
    if ! { [ "$s1" -le "$e" ] && [ "$e" -le "$s2" ]; }; then
        fail "ethtool -S $name $e is not between the sysfs readings $s1 and $s2"
    fi
done

# ---- the counters move with traffic ----

before=$(ethtool -S "$ndev")
rnic-retry 10 1 ping -c 3 -W 2 -I "$ndev" "$RNIC_PEER_RNIC_IP4" ||
    fail "no ping over $ndev"
rnic-pingpong 10 4096 || fail "ping-pong failed"
after=$(ethtool -S "$ndev")
for name in netdev_tx_packets netdev_rx_packets netdev_tx_bytes netdev_rx_bytes \
            eth_tx_pkts eth_rx_pkts tx_pkts rx_pkts tx_bytes rx_bytes; do
    b=$(estat "$before" "$name") a=$(estat "$after" "$name")
    log "$name $b -> $a"
    [ "$a" -gt "$b" ] || fail "ethtool -S $name did not grow ($b -> $a)"
done

# ---- rdma resource show ----

# A server waiting for a client that never comes holds its QP, CQ, MR and
# PD open for as long as needed.
ibv_rc_pingpong -d "$RNIC_IBDEV" -g "$RNIC_GID_INDEX" -p "$(test_port 1)" -r 300 >/tmp/tooling-pp.out 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
qps=""
for _ in $(seq 1 100); do
    qps=$(rdma_records qp link "$RNIC_IBDEV")
    grep -q " pid $pid " <<<"$qps" && break
    kill -0 "$pid" 2>/dev/null || fail "ibv_rc_pingpong exited: $(cat /tmp/tooling-pp.out)"
    sleep 0.1
done
echo "$qps"
uqp=$(grep " pid $pid " <<<"$qps") || fail "rdma resource show qp has no QP of pid $pid"
for k in uctx sq_log_size sq_max_sge max_inline srq rq_log_size rq_max_sge; do
    [ -n "$(field "$uqp" "$k")" ] || fail "the user QP shows no $k"
done
uctx=$(field "$uqp" uctx)
[ "$uctx" -gt 0 ] || fail "the user QP's uctx is $uctx"
[ "$(field "$uqp" srq)" = 0 ] || fail "the user QP claims an SRQ"
[ $((1 << $(field "$uqp" rq_log_size))) -ge 300 ] ||
    fail "rq_log_size $(field "$uqp" rq_log_size) holds fewer than the 300 receives asked for"
[ -z "$(field "$uqp" sq_pi)" ] || fail "the user QP shows kernel ring indices"

gsi=$(grep " type GSI " <<<"$qps") || fail "rdma resource show qp has no GSI QP"
[ "$(field "$gsi" uctx)" = 0 ] || fail "the GSI QP is not the kernel's"
for k in sq_pi sq_ci rq_pi rq_ci; do
    [ -n "$(field "$gsi" "$k")" ] || fail "the GSI QP shows no $k"
done
sq_pi=$(field "$gsi" sq_pi) sq_ci=$(field "$gsi" sq_ci)
rq_pi=$(field "$gsi" rq_pi) rq_ci=$(field "$gsi" rq_ci)
# rping's connection went through the GSI QP; the MAD layer keeps
# receives posted.
[ "$sq_pi" -gt 0 ] || fail "the GSI QP sent nothing (sq_pi $sq_pi)"
[ $((sq_pi - sq_ci)) -ge 0 ] || fail "GSI sq_ci $sq_ci is past sq_pi $sq_pi"
[ $((rq_pi - rq_ci)) -gt 0 ] || fail "the GSI QP has no receive posted ($rq_ci..$rq_pi)"

cqs=$(rdma_records cq dev "$RNIC_IBDEV")
echo "$cqs"
ucq=$(grep " pid $pid " <<<"$cqs" | head -n1) || fail "rdma resource show cq has no CQ of pid $pid"
[ -n "$(field "$ucq" hw_cqn)" ] || fail "the user CQ shows no hw_cqn"
[ "$(field "$ucq" uctx)" = "$uctx" ] || fail "the user CQ is not in the QP's uctx $uctx"
log_size=$(field "$ucq" log_size) cqe=$(field "$ucq" cqe)
if [ -z "$log_size" ] || [ $((1 << log_size)) != $((cqe + 1)) ]; then
    fail "the user CQ's log_size '$log_size' does not match its cqe $cqe"
fi
[ -z "$(field "$ucq" ci)" ] || fail "the user CQ shows a kernel consumer index"
moved=0
while read -r kcq; do
    ci=$(field "$kcq" ci)
    [ -n "$ci" ] || fail "a kernel CQ shows no ci: $kcq"
    [ "$ci" -gt 0 ] && moved=1
done < <(grep -v " pid " <<<"$cqs" | grep " cqn ")
[ "$moved" = 1 ] || fail "no kernel CQ was ever polled"

mrs=$(rdma_records mr dev "$RNIC_IBDEV")
echo "$mrs"
umr=$(grep " pid $pid " <<<"$mrs" | head -n1) || fail "rdma resource show mr has no MR of pid $pid"
[ "$(field "$umr" mr_type)" = user ] || fail "the user MR is not of type user"
[ "$(field "$umr" uctx)" = "$uctx" ] || fail "the user MR is not in the QP's uctx $uctx"
access=$(field "$umr" access)
if [ -z "$access" ] || [ $((access & 1)) != 1 ]; then
    fail "the user MR's access '$access' lacks LOCAL_WRITE"
fi

pds=$(rdma resource show pd dev "$RNIC_IBDEV")
echo "$pds"
grep -q " pid $pid " <<<"$pds" || fail "rdma resource show pd has no PD of pid $pid"

kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
trap - EXIT
fail_on_kernel_warnings "kernel warnings"
log "OK on $(hostname)"
