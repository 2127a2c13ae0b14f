#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's network options, without VMs: the -netdev options, MACs
# and guest environment it makes for --net user and for two launchers
# joined over TCP (--listen, --connect), that the unix-socket pair stays
# as it was, that --vm-guest boots one VM from another guest's files, and
# that the options it refuses are refused.

import os
import tempfile
import unittest

from launcher_checks import launch, parse_args, refused


def netdevs(qemu):
    return [qemu[k + 1] for k, a in enumerate(qemu) if a == "-netdev"]


class UserNetTest(unittest.TestCase):
    def test_user_rnic(self):
        (qemu, env), = launch(["--net", "user", "--rnic"])
        # One VM, a user-mode stack per NIC, the rnic's with QEMU's defaults.
        self.assertEqual(netdevs(qemu), ["user,id=n0,net=10.0.3.0/24",
                                         "user,id=r0,net=10.0.2.0/24"])
        # The rnic NIC is 10.0.2.15, no peer.
        self.assertEqual(env["RNIC_RNIC_IP4"], "10.0.2.15")
        self.assertEqual(env["RNIC_DATA_IP4"], "10.0.2.15")
        self.assertNotIn("RNIC_PEER_DATA_IP4", env)

    def test_user_without_rnic(self):
        # The virtio NIC has the defaults.
        (qemu, env), = launch(["--net", "user"])
        self.assertEqual(netdevs(qemu), ["user,id=n0,net=10.0.2.0/24"])
        self.assertEqual(env["RNIC_IP4"], "10.0.2.15")


class TcpTest(unittest.TestCase):
    def test_listen(self):
        (qemu, env), = launch(["--rnic", "--listen", "0.0.0.0:5555"])
        # VM 0 listens on PORT and PORT+1.
        self.assertEqual(netdevs(qemu), [
            "stream,id=n0,server=on,addr.type=inet,addr.host=0.0.0.0,addr.port=5555",
            "stream,id=r0,server=on,addr.type=inet,addr.host=0.0.0.0,addr.port=5556,"
            "coalesce=on"])
        # VM 0 of 2, its peer VM 1.
        self.assertEqual(env["RNIC_VM_INDEX"], "0")
        self.assertEqual(env["RNIC_NVMS"], "2")
        self.assertEqual(env["RNIC_PEER_DATA_IP4"], "198.19.0.2")
        self.assertIn("-name", qemu)
        self.assertEqual(qemu[qemu.index("-name") + 1], "rnic-vm0")

    def test_connect(self):
        (qemu, env), = launch(["--rnic", "--connect", "[::1]:5555"])
        # VM 1 connects to PORT and PORT+1, retrying.
        self.assertEqual(netdevs(qemu), [
            "stream,id=n0,server=off,addr.type=inet,addr.host=::1,addr.port=5555,"
            "reconnect-ms=500",
            "stream,id=r0,server=off,addr.type=inet,addr.host=::1,addr.port=5556,"
            "reconnect-ms=500,coalesce=on"])
        # VM 1 of 2, its own MAC, its peer VM 0.
        self.assertEqual(env["RNIC_VM_INDEX"], "1")
        self.assertEqual(env["RNIC_NVMS"], "2")
        self.assertEqual(env["RNIC_RNIC_MAC"], "52:54:00:52:02:02")
        self.assertEqual(env["RNIC_DATA_IP4"], "198.19.0.2")
        self.assertEqual(env["RNIC_PEER_DATA_IP4"], "198.19.0.1")
        self.assertIn("mac=52:54:00:52:02:02", " ".join(qemu))

    def test_coalesce_off(self):
        # The rnic NIC's stream netdev writes frame by frame.
        (qemu, env), = launch(["--rnic", "--listen", "0.0.0.0:5555", "--coalesce", "off"])
        self.assertEqual(netdevs(qemu)[1],
                         "stream,id=r0,server=on,addr.type=inet,addr.host=0.0.0.0,"
                         "addr.port=5556")

    def test_connect_vm_index_0(self):
        (qemu, env), = launch(["--rnic", "--connect", "h:5555", "--vm-index", "0"])
        self.assertEqual(env["RNIC_VM_INDEX"], "0")
        self.assertEqual(env["RNIC_PEER_DATA_IP4"], "198.19.0.2")


class UnixStreamTest(unittest.TestCase):
    def test_pair_on_unix_sockets(self):
        # --net stream without --listen: two VMs on unix sockets, VM 0 listens.
        vms = launch(["--rnic"])
        self.assertEqual(len(vms), 2)
        self.assertTrue(netdevs(vms[0][0])[1].startswith(
            "stream,id=r0,server=on,addr.type=unix"), netdevs(vms[0][0]))
        self.assertTrue(netdevs(vms[1][0])[1].startswith(
            "stream,id=r0,server=off,addr.type=unix"), netdevs(vms[1][0]))


def opt(qemu, name):
    return qemu[qemu.index(name) + 1]


class VmGuestTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        for f in ("vmlinuz", "initrd.img", "rootfs.img"):
            with open(os.path.join(self.dir, f), "w", encoding="utf-8") as fh:
                fh.write(f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_one_vm_boots_the_other_guest(self):
        vms = launch(["--rnic", "--kernel", "/k", "--initrd", "/i", "--image", "/img",
                      "--vm-guest", "0=" + self.dir])
        (q0, _), (q1, _) = vms
        self.assertEqual(opt(q0, "-kernel"), os.path.join(self.dir, "vmlinuz"))
        self.assertEqual(opt(q0, "-initrd"), os.path.join(self.dir, "initrd.img"))
        self.assertIn("file=%s," % os.path.join(self.dir, "rootfs.img"), opt(q0, "-drive"))
        # VM 1 keeps the run's guest.
        self.assertEqual(opt(q1, "-kernel"), "/k")
        self.assertEqual(opt(q1, "-initrd"), "/i")
        self.assertIn("file=/img,", opt(q1, "-drive"))

    def test_guest_files_are_result_inputs(self):
        # A cached pass must not outlive a rebuilt guest.
        args = parse_args(["--cmd", "true", "--vm-guest", "1=" + self.dir])
        for f in ("vmlinuz", "initrd.img", "rootfs.img"):
            self.assertIn(os.path.join(self.dir, f), args.result_input)

    def test_refused(self):
        empty = os.path.join(self.dir, "empty")
        os.mkdir(empty)
        for argv in (["--vm-guest", self.dir], ["--vm-guest", "x=" + self.dir],
                     ["--vm-guest", "2=" + self.dir], ["--vm-guest", "0="],
                     ["--vm-guest", "0=" + empty]):
            with self.subTest(" ".join(argv)):
                self.assertTrue(refused(argv))


class RefusedTest(unittest.TestCase):
    def test_refused(self):
        for argv in (["--listen", "h:5555", "-n", "2"], ["--listen", "h:65535"],
                     ["--listen", "5555"], ["--listen", "h:1", "--connect", "h:1"],
                     ["--listen", "h:1", "--net", "mcast"], ["--vm-index", "1"],
                     ["--net", "user", "--rnic", "--interop"]):
            with self.subTest(" ".join(argv)):
                self.assertTrue(refused(argv))


if __name__ == "__main__":
    unittest.main()
