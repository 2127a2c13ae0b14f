# SPDX-License-Identifier: GPL-2.0-or-later
"""How the VMs are joined: their MACs and addresses, the -netdev of each
NIC for every kind of segment (unix or TCP stream, UDP dgram, multicast,
tap on a host bridge, QEMU's user-mode network), and the faulty wire
(--wire-fault) between each NIC and its netdev."""

import os
import subprocess

# Bridges and taps pass jumbo frames: the rnic netdev's default MTU is 4200
# (RoCE path MTU 4096), and a bridge drops what exceeds a port's MTU.
TAP_MTU = "9000"

# --net user: the address QEMU's DHCP server hands out first, on the
# segment of the rnic NIC (or the virtio NIC without --rnic) and the other.
SLIRP_DATA_NET, SLIRP_OTHER_NET = "10.0.2.0/24", "10.0.3.0/24"
SLIRP_DATA_IP4, SLIRP_OTHER_IP4 = "10.0.2.15", "10.0.3.15"


def vm_addresses(i, net=None, rnic=False):
    """VM i's MACs and addresses; --net user (net) changes the IPv4 ones."""
    n = i + 1
    a = {
        "MAC": "52:54:00:52:01:%02x" % n,
        "IP4": "198.18.0.%d" % n,
        "IP6": "fd52:0:0:1::%x" % n,
        "RNIC_MAC": "52:54:00:52:02:%02x" % n,
        "RNIC_IP4": "198.19.0.%d" % n,
        "RNIC_IP6": "fd52:0:0:2::%x" % n,
    }
    if net == "user":
        a["IP4"], a["RNIC_IP4"] = ((SLIRP_OTHER_IP4, SLIRP_DATA_IP4) if rnic
                                   else (SLIRP_DATA_IP4, SLIRP_OTHER_IP4))
    return a


# --wire-fault: the filter-wirefault options it takes; the percentages
# (0-100), then the delay and the seed (any uint32).
WIRE_FAULT_PCT = ("loss", "corrupt", "ce-mark", "delay", "reorder", "duplicate")
WIRE_FAULT_KEYS = WIRE_FAULT_PCT + ("delay-us", "seed")
# Its counters, read with qom-get (the "wire-faults" host check).
WIRE_FAULT_COUNTERS = ("frames", "dropped", "corrupted", "ce-marked", "delayed",
                       "reordered", "duplicated")


def parse_wire_fault(spec):
    """{key: int} of "loss=1,seed=3"; ValueError if bad."""
    faults = {}
    for item in spec.split(","):
        key, sep, val = item.strip().partition("=")
        if key not in WIRE_FAULT_KEYS:
            raise ValueError("--wire-fault: %r is not one of %s"
                             % (key, ", ".join(WIRE_FAULT_KEYS)))
        if not sep or not val.isdigit() or int(val) >= 1 << 32:
            raise ValueError("--wire-fault: %s wants a number, not %r" % (key, val))
        if key in WIRE_FAULT_PCT and int(val) > 100:
            raise ValueError("--wire-fault: %s is a percentage, not %s" % (key, val))
        faults[key] = int(val)
    return faults


def wire_fault_spec(faults):
    """The SPEC of --wire-fault for {key: int}, in its options' order."""
    return ",".join("%s=%d" % (k, faults[k]) for k in WIRE_FAULT_KEYS if k in faults)


def host_port(spec, what):
    """(host, port) of "HOST:PORT" or "[IPV6]:PORT"; ValueError if bad."""
    host, sep, port = spec.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65534:
        raise ValueError("%s wants HOST:PORT with PORT 1..65534, not %r" % (what, spec))
    return host, int(port)


class Network:
    """The Launcher's networking: it needs self.args, self.sockdir and
    self.bridges, and self.dgram_ports and self.mcast once run() chose them."""

    def choose_net(self):
        """The way the VMs are joined: --net, or what "auto" means for -n."""
        a = self.args
        net = a.net if a.net != "auto" else ("stream" if a.vms == 2 else "mcast")
        if a.vms == 1 and net != "user" and not a.tcp:
            net = "mcast"
        self.net = net
        return net

    def netdev(self, i, seg_id, seg_index, net):
        if net == "dgram":
            # Two VMs, each sending to the other's UDP port on the host.
            mine, peer = self.dgram_ports[seg_index][i], self.dgram_ports[seg_index][1 - i]
            return ("dgram,id=%s,local.type=inet,local.host=127.0.0.1,local.port=%d,"
                    "remote.type=inet,remote.host=127.0.0.1,remote.port=%d"
                    % (seg_id, mine, peer))
        if net == "tap":
            return ("tap,id=%s,ifname=%s,script=no,downscript=no"
                    % (seg_id, self.tap_name(i, seg_index)))
        if net == "user":
            # One user-mode stack per NIC; the data NIC's has QEMU's defaults.
            data = 1 if self.args.rnic else 0
            return "user,id=%s,net=%s" % (seg_id, SLIRP_DATA_NET if seg_index == data
                                          else SLIRP_OTHER_NET)
        if net == "stream" and self.args.tcp:
            host, port, server = self.args.tcp
            addr = "addr.type=inet,addr.host=%s,addr.port=%d" % (host, port + seg_index)
            if server:
                return "stream,id=%s,server=on,%s" % (seg_id, addr)
            return "stream,id=%s,server=off,%s,reconnect-ms=500" % (seg_id, addr)
        if net == "stream":
            path = os.path.join(self.sockdir, "%s.sock" % seg_id)
            if i == 0:
                return "stream,id=%s,server=on,addr.type=unix,addr.path=%s" % (seg_id, path)
            return ("stream,id=%s,server=off,addr.type=unix,addr.path=%s,reconnect-ms=500"
                    % (seg_id, path))
        group, port = self.mcast[seg_index]
        return "socket,id=%s,mcast=%s:%d,localaddr=127.0.0.1" % (seg_id, group, port)

    def wire_fault_ids(self):
        """[(filter id, netdev id)] of every VM's faulty wires: one per
        netdev that can carry RoCE, so that every RDMA device of the VM
        sees the same faults: the rnic NIC's segment r0 (rxe's in an
        --interop peer) and the virtio NIC's n0, which rxe0 uses."""
        if not self.args.wire_fault:
            return []
        return [("wf-" + seg, seg) for seg in ["n0"] + (["r0"] if self.args.rnic else [])]

    def wire_fault_args(self, i):
        """VM i's -object filter-wirefault options: on the frames its NICs
        send (queue=rx: the netdev receives them), RoCE only, so that the
        management traffic (ssh, the guests' signals) passes as it is.
        Each filter draws from a seed of its own, derived from the given
        one (default 0) by the VM index and the segment, so that a run
        repeats frame for frame and no two wires lose the same frames."""
        faults = self.args.wire_fault or {}
        argv = []
        for seg_index, (fid, seg) in enumerate(self.wire_fault_ids()):
            opts = dict(faults, seed=(faults.get("seed", 0) + 2 * i + seg_index) % (1 << 32))
            argv += ["-object", "filter-wirefault,id=%s,netdev=%s,queue=rx,roce-only=on,%s"
                     % (fid, seg, wire_fault_spec(opts))]
        return argv

    def tap_name(self, i, seg_index):
        return "rnt%d-%d-%d" % (self.tap_id, seg_index, i)

    def bridge_name(self, seg_index):
        return "rnbr%d-%d" % (self.tap_id, seg_index)

    def tap_setup(self, n):
        """A Linux bridge per segment and a tap per VM on it (as root)."""
        self.tap_id = os.getpid() % 10000
        for seg in range(2):
            br = self.bridge_name(seg)
            cmds = [["ip", "link", "add", br, "mtu", TAP_MTU, "type", "bridge"],
                    ["ip", "link", "set", br, "up"]]
            for i in range(n):
                tap = self.tap_name(i, seg)
                cmds += [["ip", "tuntap", "add", "dev", tap, "mode", "tap"],
                         ["ip", "link", "set", tap, "mtu", TAP_MTU],
                         ["ip", "link", "set", tap, "master", br],
                         ["ip", "link", "set", tap, "up"]]
            for c in cmds:
                r = subprocess.run(c, capture_output=True, text=True)
                if r.returncode:
                    return "%s: %s" % (" ".join(c), r.stderr.strip())
            self.bridges.append(br)
        return None

    def tap_cleanup(self):
        for br in self.bridges:
            seg = int(br.rsplit("-", 1)[1])
            for i in range(self.args.vms):
                subprocess.run(["ip", "link", "del", self.tap_name(i, seg)],
                               capture_output=True)
            subprocess.run(["ip", "link", "del", br], capture_output=True)
        self.bridges = []
