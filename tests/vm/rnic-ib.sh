#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# InfiniBand between two VMs linked back to back (--fabric ib), with
# Debian's opensm and infiniband-diags, unmodified.  opensm in VM 0 finds
# both HCAs with directed-route SMPs through QP0, gives each port a LID
# and brings it ACTIVE; then, from VM 0, the diagnostics read the fabric
# (ibstat, sminfo, ibnetdiscover: two CAs linked, no switch; smpquery and
# perfquery of both ports by LID; saquery's node records), and the two
# VMs exchange verified data over LID-routed verbs: ibv_rc_pingpong -c
# and ibv_ud_pingpong -c without -g, ib_write_bw without -x.  Then IPoIB
# (ib_ipoib, which joins the SM's broadcast group): ping and a 16 MiB TCP
# transfer checked by SHA-256, and the RDMA CM over IPoIB addresses
# (path records from the SA): rping -V, ucmatose, ib_send_bw -R, and NVMe over Fabrics (nvmet-rdma
# on VM 0, nvme-rdma and fio with crc32c verification on VM 1).  The
# SMA's traps reach opensm: VM 1 renames its node (trap 144, after which
# the SA has the new name), and, with opensm restarted to protect every
# port with an M_Key, a query without the key is refused (trap 256).
# vmlaunch: -n 2 --rnic --fabric ib --timeout 900
set -u
. rnic-test-lib rnic-ib
. rnic-ib-lib
dev=$RNIC_IBDEV
port=$ib_port
out=$(mktemp)

on_fail() {
    ibstat "$dev" 2>&1 || true
    [ -f /var/log/opensm.log ] && tail -n 60 /var/log/opensm.log
    ls "$(counter_dir)" >/dev/null 2>&1 &&
        grep -H . "$(counter_dir)"/ib_* "$(counter_dir)"/rx_dropped 2>/dev/null
    true
}

# Receives one TCP stream on the IPoIB address; prints its length and the
# first 128 bits of its SHA-256 (what fits in an rnic-signal word).
tcp_sink() {
    python3 - "$(ipoib_addr 0)" "$(test_port 5)" <<'PY'
import hashlib, socket, sys
s = socket.create_server((sys.argv[1], int(sys.argv[2])))
s.settimeout(300)
c, _ = s.accept()
c.settimeout(300)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest()[:32])
PY
}

# Sends 16 MiB of a fixed pattern over IPoIB; prints as tcp_sink does.
tcp_source() {
    python3 - "$(ipoib_addr 0)" "$(test_port 5)" <<'PY'
import hashlib, random, socket, sys, time
data = random.Random(7).randbytes(16 << 20)
for _ in range(120):
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
        break
    except OSError:
        time.sleep(1)
else:
    sys.exit("no TCP server on the IPoIB address")
c.sendall(data)
c.close()
print(len(data), hashlib.sha256(data).hexdigest()[:32])
PY
}

RENAMED="rnic-ib vm1 renamed"
MKEY=0x00000000c0ffee01

# opensm again, now protecting every port with an M_Key (protection
# level 2: even a Get needs the key).  VM 1's port takes the key from the
# SM; a query without it goes unanswered, and VM 1's SMA tells the SM of
# it with trap 256, which opensm logs; with the key, the query works.
mkey_run() {
    local peer=$1 guid i line
    pkill -x opensm
    for i in $(seq 1 50); do pgrep -x opensm >/dev/null || break; sleep 0.2; done
    printf 'm_key %s\nm_key_protection_level 2\nm_key_lease_period 0\n' \
        "$MKEY" >/tmp/opensm-mkey.conf
    guid=$(tr -d : <"/sys/class/infiniband/$dev/node_guid")
    opensm -B -g "0x$guid" -F /tmp/opensm-mkey.conf -f /var/log/opensm.log \
        >/dev/null 2>&1 || fail "opensm with an M_Key did not start"
    for i in $(seq 1 120); do
        timeout 30 smpquery -y "$MKEY" portinfo "$peer" 1 >"$out" 2>&1 &&
            grep -q "^ProtectBits:\.*2$" "$out" && break
        sleep 1
    done
    grep -q "^ProtectBits:\.*2$" "$out" || { cat "$out"; fail "the SM set no M_Key on LID $peer"; }
    timeout 60 smpquery portinfo "$peer" 1 >"$out" 2>&1 &&
        { cat "$out"; fail "LID $peer answered a Get without its M_Key"; }
    line=$(ib_sm_trap 256 "$peer") || fail "opensm logged no trap 256 from LID $peer"
    timeout 30 smpquery -y "$MKEY" portinfo "$peer" 1 >"$out" 2>&1 ||
        { cat "$out"; fail "smpquery with the M_Key"; }
    grep -q "^MkeyViolations:\.*[1-9]" "$out" || { cat "$out"; fail "no M_Key violation counted"; }
    log "M_Key: opensm protected LID $peer; a Get without the key was refused and trapped (256)"
    log "opensm: $line"
}

[ "$(cat "$port/link_layer")" = InfiniBand ] || fail "$dev is not InfiniBand"
# No Ethernet function: the PCI function's only net devices are IPoIB's
# (ARPHRD_INFINIBAND, 32), as on an IB HCA.
for n in /sys/class/infiniband/"$dev"/device/net/*; do
    [ -e "$n" ] || continue
    [ "$(cat "$n/type")" = 32 ] ||
        fail "the InfiniBand rnic has a non-IB interface ${n##*/}, type $(cat "$n/type")"
done

case $(role) in
server)
    # VM 1's port may be ACTIVE by the time it looks: check it here.
    case $(cat "$port/state") in
        *INIT*) log "port INIT before any SM, LID $(cat "$port/lid")" ;;
        *) fail "port $(cat "$port/state") before any SM" ;;
    esac
    ib_start_sm
    ib_wait_active || fail "port not ACTIVE after 240 s of opensm"
    lid=$(ib_lid)
    [ "$lid" -gt 0 ] || fail "ACTIVE without a LID"
    log "ACTIVE, LID $lid, SM LID $(($(cat "$port/sm_lid")))"
    peer=$(signal_wait 1 300) || fail "no word from VM 1"
    [ "$peer" -gt 0 ] && [ "$peer" != "$lid" ] ||
        fail "LIDs $lid and $peer are not two distinct LIDs"

    ibstat "$dev" >"$out" 2>&1 || { cat "$out"; fail "ibstat"; }
    grep -q "State: Active" "$out" && grep -q "Link layer: InfiniBand" "$out" ||
        { cat "$out"; fail "ibstat: not an Active InfiniBand port"; }
    ibstatus "$dev" >/dev/null || fail "ibstatus"
    timeout 60 sminfo >"$out" 2>&1 || { cat "$out"; fail "sminfo"; }
    grep -q "sminfo: sm lid $lid " "$out" || { cat "$out"; fail "sminfo: not this SM"; }
    timeout 60 ibnetdiscover >"$out" 2>&1 || { cat "$out"; fail "ibnetdiscover"; }
    cas=$(grep -c '^Ca' "$out")
    switches=$(grep -c '^Switch' "$out")
    links=$(grep -c '^\[1\].*lid' "$out")
    [ "$cas" = 2 ] && [ "$switches" = 0 ] && [ "$links" = 2 ] ||
        { cat "$out"; fail "ibnetdiscover: $cas CAs, $switches switches, $links linked ports"; }
    log "ibnetdiscover: 2 CAs linked port 1 to port 1, no switch"
    for l in "$lid" "$peer"; do
        timeout 60 smpquery nodeinfo "$l" >"$out" 2>&1 || { cat "$out"; fail "smpquery nodeinfo $l"; }
        grep -q "NodeType:.*Channel Adapter" "$out" || { cat "$out"; fail "smpquery: LID $l is no CA"; }
        timeout 60 smpquery portinfo "$l" 1 >"$out" 2>&1 || { cat "$out"; fail "smpquery portinfo $l"; }
        grep -q "LinkState:.*Active" "$out" && grep -q "^Lid:\.*$l$" "$out" ||
            { cat "$out"; fail "smpquery portinfo: LID $l not Active at $l"; }
        timeout 60 perfquery "$l" 1 >"$out" 2>&1 || { cat "$out"; fail "perfquery $l"; }
        grep -q "PortXmitPkts" "$out" || { cat "$out"; fail "perfquery $l: no counters"; }
    done
    log "smpquery and perfquery answered for LIDs $lid and $peer"
    timeout 60 saquery >"$out" 2>&1 || { cat "$out"; fail "saquery"; }
    nodes=$(grep -c 'NodeRecord' "$out")
    [ "$nodes" = 2 ] || { cat "$out"; fail "saquery: $nodes node records"; }
    log "saquery: 2 node records"

    # VM 1's new node description reaches the SM by trap 144, which makes
    # opensm read it again: its SA's node record shows it.
    signal_wait 11 120 >/dev/null || fail "VM 1 did not rename its node"
    for _ in $(seq 1 60); do
        timeout 30 saquery NodeRecord "$peer" 2>/dev/null | grep -q "$RENAMED" && break
        sleep 1
    done
    timeout 30 saquery NodeRecord "$peer" >"$out" 2>&1
    grep -q "$RENAMED" "$out" || { cat "$out"; fail "the SA never saw VM 1's node description"; }
    line=$(ib_sm_trap 144 "$peer" 1) || fail "opensm logged no trap 144 from LID $peer"
    log "trap 144: opensm re-read VM 1's node description, '$RENAMED'"
    log "opensm: $line"

    timeout 300 ibv_rc_pingpong -d "$dev" -p "$(test_port 1)" -c -n 200 -s 4096 \
        >"$out" 2>&1 || { cat "$out"; fail "ibv_rc_pingpong server"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "rc: data did not verify"; }
    timeout 300 ibv_ud_pingpong -d "$dev" -p "$(test_port 2)" -c -n 200 -s 2048 \
        >"$out" 2>&1 || { cat "$out"; fail "ibv_ud_pingpong server"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "ud: data did not verify"; }
    timeout 300 ib_write_bw -d "$dev" -p "$(test_port 3)" -s 65536 -n 200 \
        >"$out" 2>&1 || { cat "$out"; fail "ib_write_bw server"; }

    ipoib_up
    got=$(tcp_sink) || fail "TCP over IPoIB: nothing received"
    want=$(signal_wait 6 300) || fail "no word from VM 1"
    [ "$got" = "$want" ] || fail "TCP over IPoIB: got '$got', sent '$want'"
    log "TCP over IPoIB: ${got% *} bytes, SHA-256 as sent"
    timeout 300 rping -s -a "$(ipoib_addr 0)" -p "$(test_port 7)" -V -C 20 \
        -S 4096 >"$out" 2>&1 || { cat "$out"; fail "rping server"; }
    timeout 300 ucmatose -b "$(ipoib_addr 0)" -p "$(test_port 9)" -c 4 -C 50 \
        -S 4096 >"$out" 2>&1 || { cat "$out"; fail "ucmatose server"; }
    timeout 300 ib_send_bw -d "$dev" -R -p "$(test_port 10)" -s 65536 -n 200 \
        >"$out" 2>&1 || { cat "$out"; fail "ib_send_bw -R server"; }
    rnic-nvmet up "$(ipoib_addr 0)" 64 || fail "NVMe target on the IPoIB address"
    signal_send 1 8 ready 300 || fail "VM 1 did not hear"
    signal_wait 4 800 >/dev/null || fail "VM 1 did not finish"
    rnic-nvmet down
    mkey_run "$peer"
    signal_send 1 12 done 300 || fail "VM 1 did not hear"
    ;;
client)
    ib_wait_active || fail "port not ACTIVE after 240 s"
    lid=$(ib_lid)
    [ "$lid" -gt 0 ] || fail "ACTIVE without a LID"
    log "ACTIVE, LID $lid, SM LID $(($(cat "$port/sm_lid")))"
    signal_send 0 1 "$lid" || fail "VM 0 did not hear"
    # What rdma-ndd does with a host name: sysfs, to the driver, to the SMA.
    printf '%s' "$RENAMED" >"/sys/class/infiniband/$dev/node_desc" ||
        fail "node_desc not writable"
    [ "$(cat "/sys/class/infiniband/$dev/node_desc")" = "$RENAMED" ] ||
        fail "node_desc did not take"
    signal_send 0 11 renamed || fail "VM 0 did not hear"

    rnic-retry 60 2 timeout 120 ibv_rc_pingpong -d "$dev" -p "$(test_port 1)" \
        -c -n 200 -s 4096 "$RNIC_VM0_IP4" >"$out" 2>&1 ||
        { cat "$out"; fail "ibv_rc_pingpong -c by LID"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "rc: data did not verify"; }
    log "ibv_rc_pingpong -c: 200 x 4096 bytes by LID, verified"
    rnic-retry 60 2 timeout 120 ibv_ud_pingpong -d "$dev" -p "$(test_port 2)" \
        -c -n 200 -s 2048 "$RNIC_VM0_IP4" >"$out" 2>&1 ||
        { cat "$out"; fail "ibv_ud_pingpong -c by LID"; }
    grep -q "invalid data" "$out" && { cat "$out"; fail "ud: data did not verify"; }
    log "ibv_ud_pingpong -c: 200 x 2048 bytes by LID, verified"
    rnic-retry 60 2 timeout 120 ib_write_bw -d "$dev" -p "$(test_port 3)" \
        -s 65536 -n 200 "$RNIC_VM0_IP4" >"$out" 2>&1 ||
        { cat "$out"; fail "ib_write_bw by LID"; }
    grep -q "Link type *: IB" "$out" || { cat "$out"; fail "ib_write_bw: not an IB link"; }
    log "ib_write_bw: $(grep -E '^ *65536' "$out" | tr -s ' ')"

    ipoib_up
    rnic-retry 30 2 ping -c 3 -W 5 "$(ipoib_addr 0)" >"$out" 2>&1 ||
        { cat "$out"; fail "ping over IPoIB"; }
    log "IPoIB: $(grep -E 'packets transmitted' "$out")"
    sent=$(tcp_source) || fail "TCP over IPoIB: send"
    signal_send 0 6 "$sent" || fail "VM 0 did not hear"
    rnic-retry 30 2 timeout 120 rping -c -a "$(ipoib_addr 0)" -p "$(test_port 7)" \
        -V -C 20 -S 4096 >"$out" 2>&1 || { cat "$out"; fail "rping -V over IPoIB"; }
    log "rping -V over IPoIB: 20 x 4096 bytes READ/WRITE/SEND verified"
    rnic-retry 30 2 timeout 120 ucmatose -s "$(ipoib_addr 0)" -p "$(test_port 9)" \
        -c 4 -C 50 -S 4096 >"$out" 2>&1 || { cat "$out"; fail "ucmatose over IPoIB"; }
    grep -q "data transfers complete" "$out" && grep -q "return status 0" "$out" ||
        { cat "$out"; fail "ucmatose did not complete"; }
    log "ucmatose: 4 RDMA CM connections, 50 x 4096-byte sends each way"
    rnic-retry 30 2 timeout 120 ib_send_bw -d "$dev" -R -p "$(test_port 10)" \
        -s 65536 -n 200 "$(ipoib_addr 0)" >"$out" 2>&1 ||
        { cat "$out"; fail "ib_send_bw -R over IPoIB"; }
    grep -q "Data ex. method *: rdma_cm" "$out" && grep -q "Link type *: IB" "$out" ||
        { cat "$out"; fail "ib_send_bw -R: not rdma_cm over IB"; }
    log "ib_send_bw -R: $(grep -E '^ *65536' "$out" | tr -s ' ')"
    signal_wait 8 300 >/dev/null || fail "no NVMe target on VM 0"
    rnic-nvme-host "$(ipoib_addr 0)" || { signal_send 0 4 failed; fail "NVMe over Fabrics"; }
    log "NVMe over Fabrics over IB: fio verified, disconnected and connected again"
    signal_send 0 4 done || fail "VM 0 did not hear"
    # Up until VM 0 is done with this port (the M_Key run).
    signal_wait 12 600 >/dev/null || fail "VM 0 did not finish"
    ;;
esac
for n in ib_rx_dlid_errors ib_rx_pkey_errors; do
    [ "$(counter $n)" = 0 ] || fail "$n is $(counter $n)"
done
rnic-dmesg-check || fail "kernel warnings or rnic errors"
log "all passed on $(hostname)"
