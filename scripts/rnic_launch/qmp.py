# SPDX-License-Identifier: GPL-2.0-or-later
"""QMP access to the VMs' QEMUs, and the host checks a guest asks for
with a line "RNIC-HOST-CHECK: WHAT [KEY=VAL...]" on its console."""

import json
import socket


def qmp_command(path, command, arguments=None, timeout=10):
    """One QMP command on the monitor socket at path; its "return" value."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        f = sock.makefile("rwb")

        def reply():
            while True:
                msg = json.loads(f.readline())
                if "event" not in msg:
                    return msg

        reply()                                 # the greeting
        for cmd in ({"execute": "qmp_capabilities"},
                    dict({"execute": command},
                         **({"arguments": arguments} if arguments else {}))):
            f.write(json.dumps(cmd).encode() + b"\n")
            f.flush()
            msg = reply()
            if "error" in msg:
                raise RuntimeError("%s: %s" % (cmd["execute"], msg["error"]))
        return msg["return"]


class HostChecks:
    """The Launcher's host checks: it needs self.log, and self.migrate
    (migrate.Migration) for the "migrate" check."""

    def host_check(self, vm, what, args=()):
        """
        A guest script asked for a look from the host at its rnic device.
        "objects-idle": no verbs program runs there now, so the device must
        hold no object of any user context (the QOM "objects" property).
        "migrate": live-migrate the VM to a new QEMU (see migrate()).
        "faults KEY=PCT...": set the device's fault percentages.
        """
        checks = {"objects-idle": self.check_objects_idle,
                  "migrate": self.migrate,
                  "faults": lambda vm: self.set_faults(vm, args)}
        try:
            if what not in checks:
                raise RuntimeError("unknown check %r" % what)
            if args and what != "faults":
                raise RuntimeError("%s takes no arguments" % what)
            checks[what](vm)
        except (OSError, ValueError, RuntimeError) as e:
            vm.check_failed = "host check %s: %s" % (what, e)
        if vm.check_failed:
            self.log("%s: %s" % (vm.name, vm.check_failed))

    FAULTS = ("loss", "reorder", "duplicate", "corrupt", "delay", "ce-mark")

    def set_faults(self, vm, args):
        """The device's fault properties may change at run time (qom-set):
        one boot goes through a whole fault matrix."""
        for arg in args:
            key, val = arg.split("=")
            if key not in self.FAULTS:
                raise RuntimeError("%s is not a fault property" % key)
            qmp_command(vm.qmp, "qom-set", {"path": "/machine/peripheral/rnic0",
                                            "property": key, "value": int(val)})
        now = {k: qmp_command(vm.qmp, "qom-get", {"path": "/machine/peripheral/rnic0",
                                                  "property": k})
               for k in self.FAULTS}
        self.log("%s: rnic0 faults now %s" % (vm.name, " ".join(
            "%s=%d" % kv for kv in now.items())))

    def rnic_objects(self, vm):
        return qmp_command(vm.qmp, "qom-get", {"path": "/machine/peripheral/rnic0",
                                               "property": "objects"})

    def check_objects_idle(self, vm):
        objs = self.rnic_objects(vm)
        left = {k: v for k, v in objs["user"].items() if v}
        self.log("%s: host sees rnic objects %s, of user contexts %s"
                 % (vm.name, objs["all"], left or "none"))
        if left:
            vm.check_failed = ("host check objects-idle: user objects left in "
                               "the device: %s" % left)
