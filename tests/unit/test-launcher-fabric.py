#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's --fabric ib, without VMs: the rnic devices in InfiniBand
# mode, two VMs back to back and more through the emulated switch, the
# options it refuses, the InfiniBand captures of a back-to-back link, and
# the switch's life: started with a port per VM,
# each port a socket a VM's netdev connects to, stopped with its counters
# written.  The switch program is argv[1] (meson passes its build).

import os
import socket
import struct
import sys
import tempfile
import unittest

from launcher_checks import launch, parse_args, refused
from rnic_launch.fabric import ib_pcap
from rnic_launch.run import Launcher

IBSWITCH = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None


def netdevs(qemu):
    return [qemu[k + 1] for k, a in enumerate(qemu) if a == "-netdev"]


def rnic_device(qemu):
    devs = [qemu[k + 1] for k, a in enumerate(qemu)
            if a == "-device" and qemu[k + 1].startswith("rnic,")]
    assert len(devs) == 1, devs
    return devs[0]


class ArgvTest(unittest.TestCase):
    def test_back_to_back(self):
        vms = launch(["--rnic", "--fabric", "ib"])
        self.assertEqual(len(vms), 2)
        for i, (qemu, _) in enumerate(vms):
            self.assertIn(",link-layer=infiniband", rnic_device(qemu))
            r0 = netdevs(qemu)[1]
            # The same unix stream pair as a RoCE run: VM 0 listens.
            self.assertTrue(r0.startswith("stream,id=r0,server=%s,addr.type=unix,"
                                          % ("on" if i == 0 else "off")), r0)
            self.assertNotIn("ibsw", r0)

    def test_switch_for_three(self):
        vms = launch(["-n", "3", "--rnic", "--fabric", "ib"])
        for i, (qemu, _) in enumerate(vms):
            self.assertIn(",link-layer=infiniband", rnic_device(qemu))
            r0 = netdevs(qemu)[1]
            self.assertRegex(r0, r"^stream,id=r0,server=off,addr.type=unix,"
                             r"addr.path=.*/ibsw\.%d,reconnect-ms=500,coalesce=on$"
                             % (i + 1))

    def test_switch_for_two(self):
        vms = launch(["--rnic", "--fabric", "ib", "--ib-switch"])
        self.assertEqual([netdevs(q)[1].split("addr.path=")[1].split(",")[0]
                          .rsplit("/", 1)[1] for q, _ in vms], ["ibsw.1", "ibsw.2"])

    def test_roce_unchanged(self):
        (qemu, _), _ = launch(["--rnic"])
        self.assertNotIn("link-layer", rnic_device(qemu))

    def test_refused(self):
        for argv in (["--fabric", "ib"],
                     ["--rnic", "--fabric", "ib", "--rxe"],
                     ["--rnic", "--fabric", "ib", "--interop"],
                     ["--rnic", "--fabric", "ib", "--net", "user"],
                     ["--rnic", "--fabric", "ib", "--net", "tap"],
                     ["--rnic", "--fabric", "ib", "--wire-fault", "loss=1"],
                     ["--rnic", "--fabric", "ib", "--listen", "127.0.0.1:5000"],
                     ["--rnic", "--ib-switch"]):
            self.assertTrue(refused(argv), argv)


def pcap(linktype, frames):
    out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, linktype)
    for k, f in enumerate(frames):
        out += struct.pack("<IIII", 100 + k, 0, len(f), len(f)) + f
    return out


class PcapTest(unittest.TestCase):
    def test_ib_pcap(self):
        eth = b"\xff" * 6 + b"\x52\x54\x00\x52\x02\x01"
        # A 26-byte IB packet (LRH, BTH, ICRC: PktLen 6 words, and VCRC),
        # padded by Ethernet to 60 bytes, and an IPv6 frame.
        lrh = bytes([0x02, 0x00, 0x00, 0x06, 0x00, 0x02, 0x00, 0x01])
        ib = lrh + bytes(range(12)) + b"ICRC" + b"VC"
        frames = [eth + b"\x88\xb5" + ib + bytes(60 - 14 - len(ib)),
                  eth + b"\x86\xdd" + bytes(46)]
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "in.pcap"), os.path.join(d, "out.pcap")
            with open(src, "wb") as f:
                f.write(pcap(1, frames))
            self.assertEqual(ib_pcap(src, dst), 1)
            with open(dst, "rb") as f:
                got = f.read()
        # LINKTYPE_INFINIBAND, the IB packet alone, with its timestamp.
        self.assertEqual(got, pcap(247, [ib]))

    def test_not_pcap(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "in.pcap")
            with open(src, "wb") as f:
                f.write(b"\x0a\x0d\x0d\x0a" + bytes(40))
            with self.assertRaises(ValueError):
                ib_pcap(src, os.path.join(d, "out.pcap"))


@unittest.skipIf(IBSWITCH is None, "no switch program given")
class SwitchTest(unittest.TestCase):
    def test_life(self):
        with tempfile.TemporaryDirectory() as d:
            args = parse_args(["--cmd", "true", "--qemu", "/bin/true",
                               "--workdir", d, "-q", "-n", "3", "--rnic",
                               "--fabric", "ib", "--ibswitch", IBSWITCH])
            launcher = Launcher(args)
            try:
                self.assertIsNone(launcher.switch_start())
                # A VM's netdev connects to its port: the link comes up.
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(launcher.switch_port_path(1))
                launcher.switch_stop()
                with open(os.path.join(d, "ibswitch.stats"), encoding="utf-8") as f:
                    stats = f.read()
                # One port per VM, and the counters were written at the end.
                self.assertIn(" ports 3 ", stats)
                for port in (1, 2, 3):
                    self.assertRegex(stats, r"(?m)^port %d state " % port)
            finally:
                launcher.cleanup()

    def test_missing(self):
        with tempfile.TemporaryDirectory() as d:
            args = parse_args(["--cmd", "true", "--qemu", "/bin/true",
                               "--workdir", d, "-q", "-n", "3", "--rnic",
                               "--fabric", "ib", "--ibswitch", "/nonexistent"])
            launcher = Launcher(args)
            try:
                self.assertIn("not built", launcher.switch_start())
            finally:
                launcher.cleanup()


if __name__ == "__main__":
    unittest.main()
