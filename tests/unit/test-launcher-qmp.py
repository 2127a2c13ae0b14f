#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's QMP work, against a stand-in QMP server: a guest's
# "faults" host check (the fault properties set at run time, one boot for
# the whole fault matrix) and --vcpu-nice (the VM's vCPU threads lowered
# once QMP answers).

import json
import os
import socket
import sys
import tempfile
import threading

from launcher_checks import Checks, vmlaunch

check = Checks()


class FakeQmp(threading.Thread):
    """Answers QMP on a unix socket as QEMU would, for the commands the
    launcher sends; remembers every qom-set."""

    def __init__(self, path, cpu_tids):
        super().__init__(daemon=True)
        self.props = {k: 0 for k in vmlaunch.Launcher.FAULTS}
        self.sets = []
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
        return {"error": {"class": "CommandNotFound", "desc": name}}

    def run(self):
        while True:
            conn, _ = self.sock.accept()
            with conn:
                f = conn.makefile("rwb")
                f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
                f.flush()
                for line in f:
                    f.write(json.dumps(self.answer(json.loads(line))).encode() + b"\n")
                    f.flush()


def main():
    with tempfile.TemporaryDirectory() as d:
        # A thread of ours stands in for a vCPU thread.
        stop = threading.Event()
        vcpu = threading.Thread(target=stop.wait, daemon=True)
        vcpu.start()
        qmp = FakeQmp(os.path.join(d, "vm0.qmp"), [vcpu.native_id])
        qmp.start()

        args = vmlaunch.parse_args(["--cmd", "true", "--qemu", "/bin/true",
                                    "--workdir", d, "-q", "--rnic", "-n", "2"])
        launcher = vmlaunch.Launcher(args)
        vm = vmlaunch.VM(0, d, ["qemu"], qmp.sock.getsockname(), launcher.host_check)

        # The guest's line reaches the check with its arguments.
        with open(vm.serial, "wb") as f:
            f.write(b"RNIC-HOST-CHECK: faults loss=5 reorder=0 corrupt=2\n")
        vm.poll_serial(False)
        check("faults set in the device: %s" % qmp.sets,
              qmp.sets == [("loss", 5), ("reorder", 0), ("corrupt", 2)])
        check("no failure", vm.check_failed is None)

        for line, why in ((b"RNIC-HOST-CHECK: faults max-qp=5\n", "not a fault"),
                          (b"RNIC-HOST-CHECK: faults loss=101\n", "out of range"),
                          (b"RNIC-HOST-CHECK: objects-idle loss=1\n", "no arguments")):
            vm.check_failed = None
            qmp.sets.clear()
            with open(vm.serial, "ab") as f:
                f.write(line)
            vm.poll_serial(False)
            check("%s: refused (%s), nothing set" % (line.strip().decode(), why),
                  vm.check_failed is not None and not qmp.sets)
        vm.check_failed = None
        with open(vm.serial, "ab") as f:
            f.write(b"RNIC-HOST-CHECK: faults loss=5 reorder=x\n")
        vm.poll_serial(False)
        check("a malformed line is no check", vm.check_failed is None and not qmp.sets)

        # --vcpu-nice: the vCPU threads QMP names, and only those.
        before = os.getpriority(os.PRIO_PROCESS, 0)
        tids = vm.nice_vcpus(before + 7)
        check("vCPU threads found: %s" % tids, tids == [vcpu.native_id])
        check("vCPU thread at nice %d" % (before + 7),
              os.getpriority(os.PRIO_PROCESS, vcpu.native_id) == before + 7)
        check("the launcher's own thread untouched",
              os.getpriority(os.PRIO_PROCESS, 0) == before)
        check("done once", vm.vcpu_niced)
        gone = vmlaunch.VM(1, d, ["qemu"], os.path.join(d, "none.qmp"))
        check("no QMP yet: tried again later",
              gone.nice_vcpus(5) is None and not gone.vcpu_niced)
        for bad in ("20", "-1"):
            try:
                vmlaunch.parse_args(["--cmd", "true", "--vcpu-nice", bad])
                check("--vcpu-nice %s refused" % bad, False)
            except SystemExit:
                check("--vcpu-nice %s refused" % bad, True)
        stop.set()
        launcher.cleanup()
    return check.status("launcher-qmp")


if __name__ == "__main__":
    sys.exit(main())
