#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's QMP work, against a stand-in QMP server: a guest's
# "faults" host check (the fault properties set at run time, one boot for
# the whole fault matrix), "wire-faults" (the counters of --wire-fault's
# filters, logged) and --vcpu-nice (the VM's vCPU threads lowered once QMP
# answers).

import contextlib
import io
import os
import socket
import tempfile
import threading
import unittest

from launcher_checks import QMP_GREETING, qmp_commands, qmp_reply
from rnic_launch.cli import parse_args
from rnic_launch.run import Launcher
from rnic_launch.vm import VM


class FakeQmp(threading.Thread):
    """Answers QMP on a unix socket as QEMU would, for the commands the
    launcher sends; remembers every qom-set."""

    def __init__(self, path, cpu_tids):
        super().__init__(daemon=True)
        self.props = {k: 0 for k in Launcher.FAULTS}
        # The filters' counters, by QOM path.
        self.objects = {}
        self.sets = []
        self.injected = []
        self.cpu_tids = cpu_tids
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)

    def answer(self, cmd):
        name, args = cmd["execute"], cmd.get("arguments", {})
        if name == "qmp_capabilities":
            return {"return": {}}
        if name == "query-cpus-fast":
            return {"return": [{"cpu-index": i, "thread-id": t}
                               for i, t in enumerate(self.cpu_tids)]}
        if name == "rnic-inject-fault":
            if args.get("fault") not in ("wc-error", "fatal", "gid-change"):
                return {"error": {"class": "GenericError", "desc": "bad fault"}}
            self.injected.append(args)
            return {"return": {}}
        if name == "qom-get" and args == {"path": "/machine/peripheral/rnic0",
                                          "property": "faults"}:
            return {"return": {"wc-error": len(self.injected), "fatal": 0}}
        if name in ("qom-set", "qom-get") and args.get("path") == "/machine/peripheral/rnic0":
            prop = args["property"]
            if prop not in self.props:
                return {"error": {"class": "GenericError", "desc": "no " + prop}}
            if name == "qom-get":
                return {"return": self.props[prop]}
            if not 0 <= args["value"] <= 100:
                return {"error": {"class": "GenericError", "desc": "not a percentage"}}
            self.sets.append((prop, args["value"]))
            self.props[prop] = args["value"]
            return {"return": {}}
        if name == "qom-get" and args.get("path") in self.objects:
            counters = self.objects[args["path"]]
            if args["property"] in counters:
                return {"return": counters[args["property"]]}
        return {"error": {"class": "CommandNotFound", "desc": name}}

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return              # stop() shut the socket down
            with conn:
                f = conn.makefile("rwb")
                f.write(QMP_GREETING)
                f.flush()
                for cmd in qmp_commands(conn):
                    f.write(qmp_reply(cmd, self.answer(cmd)))
                    f.flush()

    def stop(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


class LauncherQmpTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = self.dir = tmp.name
        # A thread of ours stands in for a vCPU thread.
        stop = threading.Event()
        self.vcpu = threading.Thread(target=stop.wait, daemon=True)
        self.vcpu.start()
        self.addCleanup(stop.set)
        self.qmp = FakeQmp(os.path.join(d, "vm0.qmp"), [self.vcpu.native_id])
        self.qmp.start()
        self.addCleanup(self.qmp.stop)

        args = parse_args(["--cmd", "true", "--qemu", "/bin/true",
                           "--workdir", d, "-q", "--rnic", "-n", "2"])
        self.launcher = Launcher(args)
        self.addCleanup(self.launcher.cleanup)
        self.vm = VM(0, d, ["qemu"], self.qmp.sock.getsockname(),
                     self.launcher.host_check)

    def guest_says(self, line):
        """The guest prints line on its serial console."""
        with open(self.vm.serial, "ab") as f:
            f.write(line)
        self.vm.poll_serial(False)

    def test_faults_set_in_the_device(self):
        # The guest's line reaches the check with its arguments.
        self.guest_says(b"RNIC-HOST-CHECK: faults loss=5 reorder=0 corrupt=2\n")
        self.assertEqual(self.qmp.sets, [("loss", 5), ("reorder", 0), ("corrupt", 2)])
        self.assertIsNone(self.vm.check_failed)

    def test_bad_faults_refused(self):
        for line, why in ((b"RNIC-HOST-CHECK: faults max-qp=5\n", "not a fault"),
                          (b"RNIC-HOST-CHECK: faults loss=101\n", "out of range"),
                          (b"RNIC-HOST-CHECK: objects-idle loss=1\n", "no arguments")):
            with self.subTest(why):
                self.vm.check_failed = None
                self.qmp.sets.clear()
                self.guest_says(line)
                self.assertIsNotNone(self.vm.check_failed)
                self.assertEqual(self.qmp.sets, [])

    def test_malformed_line_is_no_check(self):
        self.guest_says(b"RNIC-HOST-CHECK: faults loss=5 reorder=x\n")
        self.assertIsNone(self.vm.check_failed)
        self.assertEqual(self.qmp.sets, [])

    def test_inject_arms_the_fault(self):
        # Enum names stay strings, numbers become numbers.
        self.guest_says(b"RNIC-HOST-CHECK: inject wc-error status=retry-exc-err"
                        b" qpn=0x12 count=3\n")
        self.assertIsNone(self.vm.check_failed)
        self.assertEqual(self.qmp.injected, [{
            "path": "/machine/peripheral/rnic0", "fault": "wc-error",
            "status": "retry-exc-err", "qpn": 0x12, "count": 3}])
        with open(self.launcher.log_path, encoding="utf-8") as f:
            self.assertIn("vm0: rnic0 fault wc-error status=retry-exc-err qpn=0x12 "
                          "count=3 armed; faults so far fatal=0 wc-error=1", f.read())

    def test_inject_gid_and_bool(self):
        # A GID stays a string, true and false become booleans.
        self.guest_says(b"RNIC-HOST-CHECK: inject gid-change index=3 gid=::ffff:192.0.2.9\n")
        self.guest_says(b"RNIC-HOST-CHECK: inject gid-change index=3 remove=true\n")
        self.assertIsNone(self.vm.check_failed)
        self.assertEqual(self.qmp.injected, [
            {"path": "/machine/peripheral/rnic0", "fault": "gid-change",
             "index": 3, "gid": "::ffff:192.0.2.9"},
            {"path": "/machine/peripheral/rnic0", "fault": "gid-change",
             "index": 3, "remove": True}])

    def test_inject_refusals(self):
        # QEMU's refusal fails the run; a line without a fault is no check.
        self.guest_says(b"RNIC-HOST-CHECK: inject no-such-fault\n")
        self.assertIn("bad fault", self.vm.check_failed)
        self.vm.check_failed = None
        self.guest_says(b"RNIC-HOST-CHECK: inject\n")
        self.assertIn("inject needs a fault", self.vm.check_failed)
        self.vm.check_failed = None
        self.guest_says(b"RNIC-HOST-CHECK: inject wc-error status=A;B\n")
        self.assertIsNone(self.vm.check_failed)
        self.assertEqual(self.qmp.injected, [])

    def test_wire_fault_counters_logged(self):
        # A run with --wire-fault: each filter's counters, one line each.
        args = parse_args(["--cmd", "true", "--qemu", "/bin/true", "--workdir",
                           self.dir, "-q", "--rnic", "--wire-fault", "loss=1"])
        launcher = Launcher(args)
        self.addCleanup(launcher.cleanup)
        self.vm.on_check = launcher.host_check
        names = ("frames", "dropped", "corrupted", "ce-marked", "delayed",
                 "reordered", "duplicated")
        for fid, base in (("wf-n0", 100), ("wf-r0", 200)):
            self.qmp.objects["/objects/" + fid] = {k: base + n for n, k in enumerate(names)}
        self.guest_says(b"RNIC-HOST-CHECK: wire-faults\n")
        self.assertIsNone(self.vm.check_failed)
        with open(launcher.log_path, encoding="utf-8") as f:
            lines = [line.strip() for line in f if "wire fault " in line]
        self.assertEqual(lines, [
            "vm0: wire fault wf-n0 on n0: frames=100 dropped=101 corrupted=102 "
            "ce-marked=103 delayed=104 reordered=105 duplicated=106",
            "vm0: wire fault wf-r0 on r0: frames=200 dropped=201 corrupted=202 "
            "ce-marked=203 delayed=204 reordered=205 duplicated=206"])

    def test_wire_faults_without_the_option(self):
        # This launcher has no --wire-fault: the check fails, says why.
        self.guest_says(b"RNIC-HOST-CHECK: wire-faults\n")
        self.assertIn("no --wire-fault", self.vm.check_failed)

    def test_vcpu_nice(self):
        # --vcpu-nice: the vCPU threads QMP names, and only those.
        tid = self.vcpu.native_id
        before = os.getpriority(os.PRIO_PROCESS, 0)
        tids = self.vm.nice_vcpus(before + 7)
        self.assertEqual(tids, [tid])
        self.assertEqual(os.getpriority(os.PRIO_PROCESS, tid), before + 7)
        # The launcher's own thread untouched.
        self.assertEqual(os.getpriority(os.PRIO_PROCESS, 0), before)
        self.assertTrue(self.vm.vcpu_niced, "done once")

    def test_vcpu_nice_before_qmp_answers(self):
        # No QMP yet: tried again later.
        gone = VM(1, self.dir, ["qemu"], os.path.join(self.dir, "none.qmp"))
        self.assertIsNone(gone.nice_vcpus(5))
        self.assertFalse(gone.vcpu_niced)

    def test_vcpu_nice_out_of_range_refused(self):
        for bad in ("20", "-1"):
            with self.subTest(bad), contextlib.redirect_stderr(io.StringIO()):
                with self.assertRaises(SystemExit):
                    parse_args(["--cmd", "true", "--vcpu-nice", bad])


if __name__ == "__main__":
    unittest.main()
