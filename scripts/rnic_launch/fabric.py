# SPDX-License-Identifier: GPL-2.0-or-later
"""--fabric ib: the rnic NICs in InfiniBand mode (link-layer=infiniband).
Two VMs are linked back to back, the simplest IB fabric; more VMs, or
--ib-switch, go through one emulated switch (contrib/rnic-ibswitch), a
host process the launcher starts before the VMs and stops after them.
Its port i+1 is VM i's link: a unix socket the VM's stream netdev
connects to."""

import os
import signal
import struct
import subprocess
import time

from .paths import CACHE

# IB frames cross a netdev behind an Ethernet header with this EtherType
# (docs/infiniband.md); pcap's link type for bare IB packets.
IB_ETHERTYPE = 0x88b5
LINKTYPE_INFINIBAND = 247

DEFAULT_IBSWITCH = os.path.join(CACHE, "meson-build", "contrib", "rnic-ibswitch",
                                "rnic-ibswitch")


class Fabric:
    """The Launcher's IB fabric: it needs self.args, self.sockdir and
    self.workdir."""

    def ib(self):
        return self.args.fabric == "ib"

    def uses_switch(self):
        return self.ib() and (self.args.ib_switch or self.args.vms > 2)

    def switch_prefix(self):
        return os.path.join(self.sockdir, "ibsw")

    def switch_port_path(self, i):
        """The socket of VM i's switch port (ports count from 1)."""
        return "%s.%d" % (self.switch_prefix(), i + 1)

    def switch_netdev(self, i, seg_id):
        return ("stream,id=%s,server=off,addr.type=unix,addr.path=%s,reconnect-ms=500"
                % (seg_id, self.switch_port_path(i)))

    def switch_argv(self):
        a = self.args
        argv = [a.ibswitch, "--ports", str(a.vms),
                "--listen", "unix:" + self.switch_prefix(),
                "--stats", os.path.join(self.workdir, "ibswitch.stats")]
        if a.pcap:
            argv += ["--pcap", os.path.abspath(a.pcap)]
        return argv

    def switch_start(self):
        """Starts the switch and waits for its ports; None, or why not."""
        if not os.access(self.args.ibswitch, os.X_OK):
            return ("the IB switch %s is not built (meson compiles it: "
                    "./scripts/rnic.sh test, or --ibswitch PATH)" % self.args.ibswitch)
        argv = self.switch_argv()
        self.switch_log = os.path.join(self.workdir, "ibswitch.log")
        self.log("$ " + " ".join(argv), echo=False)
        with open(self.switch_log, "w", encoding="utf-8") as out:
            self.switch = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                           start_new_session=True)
        deadline = time.monotonic() + 10
        paths = [self.switch_port_path(i) for i in range(self.args.vms)]
        while not all(os.path.exists(p) for p in paths):
            if self.switch.poll() is not None:
                return "the IB switch exited with status %d" % self.switch.returncode
            if time.monotonic() > deadline:
                return "the IB switch's port sockets did not appear"
            time.sleep(0.05)
        self.log("IB switch with %d ports (%s)" % (self.args.vms, self.switch_prefix()))
        return None

    def ib_pcaps(self):
        """Back to back, QEMU's filter-dump captured each VM's IB link as
        Ethernet frames: once the VMs are gone, vmI-r0-ib.pcap holds the
        same packets as an InfiniBand capture (the switch writes its own)."""
        a = self.args
        if (not a.pcap or not self.ib() or self.uses_switch()
                or getattr(self, "ib_pcaps_done", False)):
            return
        self.ib_pcaps_done = True
        for vm in self.vms:
            src = os.path.join(os.path.abspath(a.pcap), "vm%d-r0.pcap" % vm.index)
            if os.path.exists(src):
                try:
                    ib_pcap(src, src[:-len(".pcap")] + "-ib.pcap")
                except (OSError, ValueError) as e:
                    self.log("%s: no InfiniBand capture: %s" % (vm.name, e))

    def switch_stop(self):
        """SIGTERM: the switch writes its counters (ibswitch.stats) and ends."""
        sw = getattr(self, "switch", None)
        if sw is None:
            return
        if sw.poll() is None:
            sw.send_signal(signal.SIGTERM)
            try:
                sw.wait(5)
            except subprocess.TimeoutExpired:
                sw.kill()
                sw.wait()
        self.switch = None


def ib_pcap(src, dst):
    """Rewrites QEMU's capture of an IB link (filter-dump: Ethernet frames)
    as an InfiniBand capture that tcpdump and Wireshark decode: the frames
    of IB's EtherType without their Ethernet header and padding, each cut
    to its LRH's packet length plus the VCRC.  Returns the packets kept."""
    with open(src, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError("%s: no pcap header" % src)
    magic = struct.unpack_from("<I", data)[0]
    if magic != 0xa1b2c3d4:
        raise ValueError("%s: not a little-endian pcap (magic %#x)" % (src, magic))
    out = [struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535,
                       LINKTYPE_INFINIBAND)]
    kept = 0
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) < 14 + 8 or struct.unpack_from(">H", frame, 12)[0] != IB_ETHERTYPE:
            continue
        pkt = frame[14:]
        # PktLen: 11 bits of 4-byte words, LRH through ICRC.
        size = (((pkt[2] & 0x07) << 8) | pkt[3]) * 4 + 2
        pkt = pkt[:size]
        out.append(struct.pack("<IIII", sec, usec, len(pkt), len(pkt)) + pkt)
        kept += 1
    with open(dst, "wb") as f:
        f.write(b"".join(out))
    return kept
