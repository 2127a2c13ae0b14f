#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's live migration, without VMs: the destination QEMU's
# command line (migration_argv) and the hand-over of a VM's serial output
# from the source's file to the destination's, a line cut in two by the
# switch included.

import tempfile
import unittest

import launcher_checks  # noqa: F401  (puts the launcher on sys.path)
from rnic_launch.cli import parse_args
from rnic_launch.migrate import migration_argv
from rnic_launch.run import Launcher
from rnic_launch.vm import VM


def source_argv(d):
    """A VM's command line as the launcher makes it."""
    with tempfile.TemporaryDirectory() as pcap:
        args = parse_args(["--cmd", "true", "--qemu", "/bin/true",
                           "--workdir", d, "-q", "--rnic", "-n", "2",
                           "--pcap", pcap])
        launcher = Launcher(args)
        net = launcher.choose_net()
        argv = launcher.qemu_argv(1, net)
        launcher.cleanup()
        return argv


def opt(argv, name):
    return [argv[k + 1] for k, a in enumerate(argv[:-1]) if a == name]


class Done:
    """A stand-in for a QEMU process that has ended."""
    returncode = 0

    def poll(self):
        return 0


class MigrationArgvTest(unittest.TestCase):
    """The destination QEMU's command line."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = self.dir = tmp.name
        self.src = source_argv(d)
        self.dst = migration_argv(self.src, "/tmp/s/vm1.mig1.qmp",
                                  d + "/vm1.mig1.serial.log", "mig1")

    def test_incoming_defer_at_the_end(self):
        self.assertEqual(self.dst[-2:], ["-incoming", "defer"])

    def test_own_qmp_socket_same_options(self):
        self.assertEqual(opt(self.dst, "-qmp"),
                         ["unix:/tmp/s/vm1.mig1.qmp,server=on,wait=off"])

    def test_own_serial_file(self):
        self.assertEqual(opt(self.dst, "-serial"),
                         ["file:" + self.dir + "/vm1.mig1.serial.log"])

    def test_packet_dumps_tagged(self):
        dumps = opt(self.dst, "-object")
        self.assertEqual(len(dumps), 2, dumps)
        self.assertTrue(all(x.endswith(".mig1.pcap") for x in dumps), dumps)

    def test_everything_else_unchanged(self):
        src, dst = self.src, self.dst
        same = [a for k, a in enumerate(src) if src[k - 1] not in ("-qmp", "-serial", "-object")]
        self.assertEqual([a for k, a in enumerate(dst[:-2]) if dst[k - 1] not in
                          ("-qmp", "-serial", "-object")], same)

    def test_source_argv_untouched(self):
        self.assertNotEqual(opt(self.src, "-qmp"), opt(self.dst, "-qmp"))

    def test_second_migration_tags_mig2(self):
        again = migration_argv(self.dst[:-2], "/tmp/s/vm1.mig2.qmp",
                               self.dir + "/vm1.mig2.serial.log", "mig2")
        self.assertTrue(all(x.endswith(".mig2.pcap") and ".mig1" not in x
                            for x in opt(again, "-object")), again)

    def test_no_serial_refused(self):
        with self.assertRaises(ValueError):
            migration_argv(["qemu", "-qmp", "unix:/x,server=on"], "/y", "/z", "m")


class SerialHandOverTest(unittest.TestCase):
    def test_line_cut_by_the_switch(self):
        # The source printed half a line, then stopped; the rest is in the
        # destination's file.
        with tempfile.TemporaryDirectory() as d:
            src = source_argv(d)
            dst = migration_argv(src, "/tmp/s/vm1.mig1.qmp",
                                 d + "/vm1.mig1.serial.log", "mig1")
            seen = []
            vm = VM(1, d, src, on_check=lambda v, w, a: seen.append(w))
            dest = VM(1, d, dst, tag="mig1")
            with open(vm.serial, "wb") as f:
                f.write(b"before\nRNIC-HOST-CHECK: mig")
            with open(dest.serial, "wb") as f:
                f.write(b"rate\nafter\nRNIC-EXIT-STATUS=0\n")
            vm.poll_serial(False)
            # Nothing of the cut line yet.
            self.assertEqual(seen, [])
            self.assertEqual(vm.partial, b"RNIC-HOST-CHECK: mig")
            with open(vm.serial, "ab") as f:
                f.write(b"rate")
            with open(dest.serial, "wb") as f:
                f.write(b"\nafter\nRNIC-EXIT-STATUS=0\n")
            dest.proc = Done()
            vm.take_over(dest)
            vm.poll_serial(False)
            self.assertEqual(seen, ["migrate"], "the line cut by the switch is whole")
            self.assertEqual(vm.status, 0, "the status from the destination's file")
            # The VM follows the destination.
            self.assertEqual(vm.serial, dest.serial)
            self.assertEqual(vm.qmp, dest.qmp)
            self.assertEqual(vm.qemu_log, dest.qemu_log)
            self.assertEqual(vm.argv, dst)
            self.assertFalse(vm.alive())


if __name__ == "__main__":
    unittest.main()
