# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a VM to a new QEMU on this host, the "migrate" host
check: the destination's command line, the migration over QMP, and the
hand-over of the VM to the new QEMU."""

import json
import os
import re
import shlex
import time

from .paths import rel
from .qmp import qmp_command
from .vm import VM, wait_for_sockets


def migration_argv(argv, qmp, serial, tag):
    """The command line of a QEMU that receives a VM by live migration: the
    source's argv with a QMP socket and serial file of its own (-serial
    file: truncates), packet dumps in files tagged with tag, and waiting
    for the incoming state (-incoming defer, then migrate-incoming)."""
    out = list(argv)
    seen = set()
    for k, arg in enumerate(out[:-1]):
        val = out[k + 1]
        if arg == "-qmp" and val.startswith("unix:"):
            out[k + 1] = "unix:%s,%s" % (qmp, val.split(",", 1)[1])
            seen.add(arg)
        elif arg == "-serial" and val.startswith("file:"):
            out[k + 1] = "file:" + serial
            seen.add(arg)
        elif arg == "-object" and val.startswith("filter-dump,"):
            out[k + 1] = re.sub(r"(\.mig\d+)?\.pcap$", ".%s.pcap" % tag, val)
    missing = {"-qmp", "-serial"} - seen
    if missing:
        raise ValueError("no %s to move in the source's command line"
                         % " or ".join(sorted(missing)))
    return out + ["-incoming", "defer"]


class Migration:
    """The Launcher's live migration: it needs self.args, self.workdir,
    self.sockdir, self.env, self.log, self.vm_mode and self.rnic_objects."""

    def migrate(self, vm, timeout=180):
        """
        Live-migrate the VM to a new QEMU on this host with the same command
        line (migration_argv), over a unix socket; the guest runs on
        meanwhile (this blocks the launcher, the other VMs' serial output
        waits in its files).  On success the new QEMU is the VM and the
        source is gone; with the rnic device, the device on the destination
        must hold the QPs of the verbs programs that run across the switch.
        On failure the source runs on and the check fails.

        Only RAM and device state move: the two QEMUs have throwaway
        overlays of their own on the same base image (-drive snapshot=on),
        so what the guest wrote to its root disk stays behind.  The guest
        keeps /tmp, /run and /dev/shm in tmpfs (RAM); tests must not rely
        on root-disk writes across the switch.
        """
        vm.migrations += 1
        tag = "mig%d" % vm.migrations
        uri = "unix:" + os.path.join(self.sockdir, "%s.%s.sock" % (vm.name, tag))
        qmp = os.path.join(self.sockdir, "%s.%s.qmp" % (vm.name, tag))
        dest = VM(vm.index, self.workdir, None, qmp, tag=tag)
        dest.argv = migration_argv(vm.argv, qmp, dest.serial, tag)
        self.log("%s: live migration %s to a new QEMU" % (vm.name, tag))
        self.log("$ " + shlex.join(dest.argv), echo=False)
        vm.incoming = dest
        dest.start(self.env)
        try:
            info = self.run_migration(vm, dest, uri, timeout)
        except (OSError, ValueError, RuntimeError) as e:
            vm.check_failed = "host check migrate: %s" % e
            info = None
        if info is None:
            tail = dest.qemu_log_tail(5)
            if tail:
                vm.check_failed += "; destination QEMU log: " + " | ".join(tail)
            dest.kill()
            vm.incoming = None
            try:
                # A source that completed waits paused for a "cont".
                if qmp_command(vm.qmp, "query-status").get("status") == "postmigrate":
                    qmp_command(vm.qmp, "cont")
            except (OSError, ValueError, RuntimeError):
                pass
            return
        # The source stopped at the switch and has nothing left to save
        # (its disk overlay is thrown away); its links to the peers must
        # go at once for theirs to lead to the destination: SIGKILL is
        # quicker than an orderly quit.
        vm.proc.kill()
        vm.proc.wait()
        vm.take_over(dest)
        self.log("%s: migrated in %.1f s (QEMU total-time %s ms, downtime %s ms, "
                 "%.0f MiB of RAM sent; the source gone %.0f ms after it "
                 "completed); now runs in %s"
                 % (vm.name, info["wall"], info.get("total-time"),
                    info.get("downtime"),
                    info.get("ram", {}).get("transferred", 0) / 2**20,
                    (time.monotonic() - info["end"]) * 1000, rel(dest.qemu_log)))
        if self.args.rnic and self.vm_mode(vm.index) != "rxe-peer":
            self.check_migrated_device(vm)

    def run_migration(self, vm, dest, uri, timeout):
        """query-migrate's last answer (plus "wall", its length in seconds,
        and "end") once the destination runs; None with vm.check_failed set
        if not."""
        if not wait_for_sockets(dest, [dest.qmp]):
            vm.check_failed = "host check migrate: the destination QEMU did not start"
            return None
        qmp_command(dest.qmp, "migrate-incoming", {"uri": uri})
        t0 = time.monotonic()
        qmp_command(vm.qmp, "migrate", {"uri": uri})
        while True:
            info = qmp_command(vm.qmp, "query-migrate")
            status = info.get("status")
            why = "migration " + str(status)
            if status in ("completed", "failed", "cancelled"):
                break
            if not dest.alive():
                why = "the destination QEMU exited (%s)" % dest.proc.returncode
                break
            if time.monotonic() - t0 > timeout:
                try:
                    qmp_command(vm.qmp, "migrate_cancel")
                except (OSError, ValueError, RuntimeError):
                    pass
                why = "migration not completed after %d s (%s)" % (timeout, status)
                break
            # From the switch until the source is gone, what the peers send
            # to the VM is lost (their links still lead to the source): a
            # verbs program's QP gives up after a few retries (ibv_rc_pingpong:
            # 7 x 67 ms).  So notice the end at once.
            time.sleep(0.05)
        end = time.monotonic()
        self.log("%s: %s after %.1f s: %s" % (vm.name, why, end - t0,
                                               json.dumps(info, sort_keys=True)),
                 echo=False)
        if status != "completed":
            vm.check_failed = "host check migrate: %s%s" % (
                why, (": " + info["error-desc"]) if "error-desc" in info else "")
            return None
        info.update(end=end, wall=end - t0)
        # The destination starts the guest once the last state is in.
        for _ in range(500):
            run = qmp_command(dest.qmp, "query-status")
            if run.get("status") == "running":
                return info
            time.sleep(0.02)
        vm.check_failed = ("host check migrate: completed, but the destination "
                           "is %s, not running" % run.get("status"))
        return None

    def check_migrated_device(self, vm):
        """The verbs programs' QPs, and their states, went with the VM."""
        objs = self.rnic_objects(vm)
        try:
            qps = qmp_command(vm.qmp, "qom-get", {"path": "/machine/peripheral/rnic0",
                                                  "property": "qps"})
            states = ", ".join("%#x %s %s" % (q["qpn"], q["type"], q["state"])
                               for q in qps if q["uctx"]) or "none"
        except (OSError, ValueError, RuntimeError) as e:
            states = "unknown (%s)" % e
        self.log("%s: after the migration the host sees rnic objects %s, of user "
                 "contexts %s; their QPs: %s"
                 % (vm.name, objs["all"], objs["user"], states))
        if not objs["user"]["qp"]:
            vm.check_failed = ("host check migrate: the device on the destination "
                               "holds no QP of a verbs program")
