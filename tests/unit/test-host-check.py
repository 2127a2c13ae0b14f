#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's host check against a fake QMP monitor: a guest's
# "RNIC-HOST-CHECK: objects-idle" line makes the launcher qom-get the rnic
# device's "objects"; the check passes when no user-context object is
# left, fails (with the leftovers named) when one is, and fails when the
# monitor cannot be reached or the check is unknown.

import os
import socket
import tempfile
import threading
import unittest

from launcher_checks import QMP_GREETING, qmp_commands, qmp_reply
from rnic_launch.run import Launcher
from rnic_launch.vm import VM

ZERO = {"uctx": 0, "pd": 0, "cq": 0, "eq": 0, "qp": 0, "srq": 0, "mr": 0,
        "mw": 0, "mcast-grp": 0}


def fake_qmp(path, user, seen):
    """Serves one QMP session; records the commands it was sent."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        f = conn.makefile("rwb")
        f.write(QMP_GREETING)
        f.flush()
        for cmd in qmp_commands(conn):
            seen.append(cmd)
            if cmd["execute"] == "qom-get":
                # An event first: the client must skip it.
                f.write(b'{"event": "NIC_RX_FILTER_CHANGED", "data": {}, '
                        b'"timestamp": {"seconds": 1, "microseconds": 0}}\n')
                ret = {"all": dict(ZERO, pd=2), "user": user, "host-mem": 4096}
            else:
                ret = {}
            f.write(qmp_reply(cmd, {"return": ret}))
            f.flush()
            if cmd["execute"] == "qom-get":
                break
        conn.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


class FakeLauncher(Launcher):
    def __init__(self):        # no run directory, no VMs
        self.logged = []

    def log(self, msg, echo=True):
        self.logged.append(msg)


def run_check(d, name, user, what=b"objects-idle", serve=True):
    path = os.path.join(d, name + ".qmp")
    seen = []
    t = fake_qmp(path, user, seen) if serve else None
    launcher = FakeLauncher()
    vm = VM(0, d, [], path, launcher.host_check)
    vm._line(b"rnic-rmmod: ... RNIC-HOST-CHECK: " + what + b"\r", False)
    if t:
        t.join(5)
    return vm, seen


class HostCheckTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def test_idle_device_passes(self):
        vm, seen = run_check(self.dir, "idle", dict(ZERO))
        self.assertIsNone(vm.check_failed)
        self.assertEqual([c["execute"] for c in seen], ["qmp_capabilities", "qom-get"])
        self.assertEqual(seen[-1]["arguments"],
                         {"path": "/machine/peripheral/rnic0", "property": "objects"})

    def test_leftovers_fail_the_check(self):
        vm, _ = run_check(self.dir, "left", dict(ZERO, qp=1, mr=2))
        self.assertTrue(vm.check_failed)
        self.assertIn("'qp': 1", vm.check_failed)
        self.assertIn("'mr': 2", vm.check_failed)

    def test_no_monitor_fails_the_check(self):
        vm, _ = run_check(self.dir, "gone", dict(ZERO), serve=False)
        self.assertTrue(vm.check_failed)
        self.assertIn("host check objects-idle", vm.check_failed)

    def test_unknown_check_fails(self):
        vm, _ = run_check(self.dir, "unknown", dict(ZERO), what=b"something-else",
                          serve=False)
        self.assertTrue(vm.check_failed)
        self.assertIn("unknown check", vm.check_failed)


if __name__ == "__main__":
    unittest.main()
