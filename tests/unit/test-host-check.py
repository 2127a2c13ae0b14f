#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's host check against a fake QMP monitor: a guest's
# "RNIC-HOST-CHECK: objects-idle" line makes the launcher qom-get the rnic
# device's "objects"; the check passes when no user-context object is
# left, fails (with the leftovers named) when one is, and fails when the
# monitor cannot be reached or the check is unknown.

import json
import os
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import vmlaunch  # noqa: E402

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
        f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
        f.flush()
        for line in f:
            cmd = json.loads(line)
            seen.append(cmd)
            if cmd["execute"] == "qom-get":
                # An event first: the client must skip it.
                f.write(b'{"event": "NIC_RX_FILTER_CHANGED", "data": {}}\n')
                ret = {"all": dict(ZERO, pd=2), "user": user, "host-mem": 4096}
            else:
                ret = {}
            f.write(json.dumps({"return": ret}).encode() + b"\n")
            f.flush()
            if cmd["execute"] == "qom-get":
                break
        conn.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


class FakeLauncher(vmlaunch.Launcher):
    def __init__(self):        # no run directory, no VMs
        self.logged = []

    def log(self, msg, echo=True):
        self.logged.append(msg)


def run_check(d, name, user, what=b"objects-idle", serve=True):
    path = os.path.join(d, name + ".qmp")
    seen = []
    t = fake_qmp(path, user, seen) if serve else None
    launcher = FakeLauncher()
    vm = vmlaunch.VM(0, d, [], path, launcher.host_check)
    vm._line(b"rnic-rmmod: ... RNIC-HOST-CHECK: " + what + b"\r", False)
    if t:
        t.join(5)
    return vm, seen


def main():
    failures = 0

    def check(cond, what):
        nonlocal failures
        if not cond:
            print("FAILED: " + what)
            failures += 1

    with tempfile.TemporaryDirectory() as d:
        vm, seen = run_check(d, "idle", dict(ZERO))
        check(vm.check_failed is None, "idle device passes: %s" % vm.check_failed)
        check([c["execute"] for c in seen] == ["qmp_capabilities", "qom-get"],
              "commands sent: %s" % seen)
        check(seen and seen[-1]["arguments"] ==
              {"path": "/machine/peripheral/rnic0", "property": "objects"},
              "qom-get arguments: %s" % seen)

        vm, _ = run_check(d, "left", dict(ZERO, qp=1, mr=2))
        check(vm.check_failed and "'qp': 1" in vm.check_failed and
              "'mr': 2" in vm.check_failed,
              "leftovers fail the check: %s" % vm.check_failed)

        vm, _ = run_check(d, "gone", dict(ZERO), serve=False)
        check(vm.check_failed and "host check objects-idle" in vm.check_failed,
              "no monitor fails the check: %s" % vm.check_failed)

        vm, _ = run_check(d, "unknown", dict(ZERO), what=b"something-else",
                          serve=False)
        check(vm.check_failed and "unknown check" in vm.check_failed,
              "an unknown check fails: %s" % vm.check_failed)
    print("host-check: %s" % ("OK" if not failures else "%d failures" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
