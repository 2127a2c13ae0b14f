# SPDX-License-Identifier: GPL-2.0-or-later
"""QMP access to the VMs' QEMUs, and the host checks a guest asks for
with a line "RNIC-HOST-CHECK: WHAT [KEY=VAL...]" on its console.

QMP goes through QEMU's own client, the qemu.qmp package of the QEMU
source tree the build uses: it follows the protocol as QEMU speaks it
(command ids, events between replies, capabilities negotiation), which a
client of our own would have to track."""

import asyncio
import importlib
import os
import sys

from .net import WIRE_FAULT_COUNTERS
from .paths import CACHE, ROOT

_qmp = None


def qemu_python_dirs():
    """Where QEMU's Python packages may be, in order: beside this package
    (where an install puts them), then the QEMU source tree in the cache
    ($RNIC_CACHE, else the checkout's .cache)."""
    beside = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [os.path.join(c, "src", "qemu", "python")
             for c in (CACHE, os.path.join(ROOT, ".cache"))]
    return list(dict.fromkeys([beside] + trees))


def qmp_module():
    """QEMU's qemu.qmp, imported on first use (the command line and the
    network need none); RuntimeError with a one-line reason if absent."""
    global _qmp
    if _qmp is None:
        dirs = qemu_python_dirs()
        for d in dirs:
            if os.path.isfile(os.path.join(d, "qemu", "qmp", "__init__.py")):
                # First on the path: the QEMU tree's package, not another
                # version that may be installed.
                if d not in sys.path:
                    sys.path.insert(0, d)
                break
        try:
            _qmp = importlib.import_module("qemu.qmp")
        except ImportError as e:
            raise RuntimeError("QEMU's Python package qemu.qmp not found in %s (%s); "
                               "'scripts/rnic.sh fetch' puts the QEMU source there"
                               % (" or ".join(dirs[1:]), e)) from None
    return _qmp


def qmp_command(path, command, arguments=None, timeout=10):
    """One QMP command on the monitor socket at path, in a session of its
    own; its "return" value.  Fails with OSError (no monitor there, or no
    answer within timeout seconds) or RuntimeError (QEMU refused the
    command, or the session broke), which is what the callers catch."""
    qmp = qmp_module()
    broke = []              # why the session broke, if it did

    async def session():
        client = qmp.QMPClient()
        await client.connect(path)
        try:
            return await client.execute(command, arguments or None)
        finally:
            try:
                await client.disconnect()
            except (EOFError, OSError, qmp.QMPError) as e:
                broke.append(e)     # matters only if no reply came

    # One deadline for the whole session: a QEMU that accepts the
    # connection but never greets must not hold the launcher.
    try:
        return asyncio.run(asyncio.wait_for(session(), timeout))
    except asyncio.TimeoutError:
        raise TimeoutError("QMP %s: no answer in %g s" % (command, timeout)) from None
    except qmp.ExecuteError as e:
        raise RuntimeError("%s: %s" % (command, e.received["error"])) from None
    except qmp.ConnectError as e:
        if isinstance(e.exc, OSError):
            raise e.exc from None   # e.g. no socket: the QEMU is not up, or gone
        raise RuntimeError("QMP %s: %s" % (command, one_line(e))) from None
    except qmp.QMPError as e:
        raise RuntimeError("QMP %s: %s" % (command, one_line(broke[0] if broke else e))) \
            from None


def one_line(e):
    """An exception as the one line a failed step reports."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class HostChecks:
    """The Launcher's host checks: it needs self.log, self.migrate
    (migrate.Migration) for the "migrate" check and self.wire_fault_ids
    (net.Network) for "wire-faults"."""

    def host_check(self, vm, what, args=()):
        """
        A guest script asked for a look from the host at its rnic device.
        "objects-idle": no verbs program runs there now, so the device must
        hold no object of any user context (the QOM "objects" property).
        "migrate": live-migrate the VM to a new QEMU (see migrate()).
        "faults KEY=PCT...": set the device's fault percentages.
        "inject FAULT KEY=VAL...": arm a device-side fault (QMP
        rnic-inject-fault), e.g. "inject wc-error status=retry-exc-err".
        "wire-faults": log the counters of the VM's faulty wires
        (--wire-fault), one line per filter.
        """
        checks = {"objects-idle": self.check_objects_idle,
                  "migrate": self.migrate,
                  "faults": lambda vm: self.set_faults(vm, args),
                  "inject": lambda vm: self.inject_fault(vm, args),
                  "wire-faults": self.log_wire_faults}
        try:
            if what not in checks:
                raise RuntimeError("unknown check %r" % what)
            if args and what not in ("faults", "inject"):
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

    def inject_fault(self, vm, args):
        """Arms one device-side fault: the first argument names it, the
        rest are its KEY=VAL arguments (numbers as numbers).  Logs what
        the device counted of each fault so far.  Values: numbers,
        true and false, else strings (enum names, GIDs)."""
        if not args:
            raise RuntimeError("inject needs a fault")
        arguments = {"path": "/machine/peripheral/rnic0", "fault": args[0]}
        for arg in args[1:]:
            key, sep, val = arg.partition("=")
            if not sep or not key:
                raise RuntimeError("%r is not KEY=VAL" % arg)
            if val in ("true", "false"):
                arguments[key] = val == "true"
            elif val.isdigit() or val.startswith("0x"):
                arguments[key] = int(val, 0)
            else:
                arguments[key] = val
        qmp_command(vm.qmp, "rnic-inject-fault", arguments)
        done = qmp_command(vm.qmp, "qom-get", {"path": "/machine/peripheral/rnic0",
                                               "property": "faults"})
        self.log("%s: rnic0 fault %s armed; faults so far %s" % (
            vm.name, " ".join(args), " ".join(
                "%s=%s" % kv for kv in sorted(done.items()))))

    def log_wire_faults(self, vm):
        """One line per filter of --wire-fault, which scripts/bench.py reads:
        "vmI: wire fault ID on NETDEV: frames=N dropped=N ..."."""
        ids = self.wire_fault_ids()
        if not ids:
            raise RuntimeError("the run has no --wire-fault")
        for fid, seg in ids:
            counts = [(k, qmp_command(vm.qmp, "qom-get", {"path": "/objects/" + fid,
                                                         "property": k}))
                      for k in WIRE_FAULT_COUNTERS]
            self.log("%s: wire fault %s on %s: %s" % (vm.name, fid, seg, " ".join(
                "%s=%d" % kv for kv in counts)))

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
