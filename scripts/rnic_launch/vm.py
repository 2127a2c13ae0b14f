# SPDX-License-Identifier: GPL-2.0-or-later
"""One VM: its QEMU process (killed with the launcher) and its serial
console, read for the guest's status and its requests for host checks."""

import ctypes
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from .qmp import qmp_command

MARKER = re.compile(rb"RNIC-EXIT-STATUS=(\d+)")
# A guest asks the launcher to look at its rnic device from the host (over
# QMP) with this line; see rnic-host-check in scripts/guest.
HOST_CHECK = re.compile(rb"RNIC-HOST-CHECK: ([a-z-]+)((?: [a-z-]+=[0-9]+)*)\s*$")
# "inject FAULT KEY=VAL...": values are numbers, QAPI enum names, true
# or false, or GIDs in IPv6 notation.
HOST_INJECT = re.compile(rb"RNIC-HOST-CHECK: (inject)((?: [a-z-]+)"
                         rb"(?: [a-z-]+=(?:0x[0-9a-f]+|[0-9]+|[a-z-]+|"
                         rb"[0-9a-f:.]+))*)\s*$")
PR_SET_PDEATHSIG = 1


def set_pdeathsig():
    """preexec_fn: the child gets SIGKILL when the launcher dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class VM:
    def __init__(self, index, workdir, argv, qmp=None, on_check=None, tag=None):
        self.index = index
        self.qmp = qmp              # the VM's QMP socket
        self.on_check = on_check    # called with (vm, what, args) for a host check
        self.check_failed = None
        self.name = "vm%d" % index
        self.argv = argv
        # tag: a QEMU that takes the VM over by live migration ("mig1").
        files = self.name + ("." + tag if tag else "")
        self.serial = os.path.join(workdir, files + ".serial.log")
        self.qemu_log = os.path.join(workdir, files + ".qemu.log")
        self.proc = None
        self.status = None      # guest command status from the marker
        self.status_time = None
        self.pos = 0
        self.partial = b""
        self.start_time = None
        self.migrations = 0
        self.incoming = None    # the destination QEMU while migrating
        self.next_serials = []  # serial files of QEMUs that took over
        self.vcpu_niced = False

    def start(self, env):
        open(self.serial, "wb").close()
        with open(self.qemu_log, "wb") as qlog:
            qlog.write(("$ " + shlex.join(self.argv) + "\n").encode())
            qlog.flush()
            self.start_time = time.monotonic()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=qlog, stderr=subprocess.STDOUT,
                                         preexec_fn=set_pdeathsig, env=env)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def nice_vcpus(self, nice):
        """Once QMP answers: every vCPU thread of this QEMU to nice."""
        try:
            cpus = qmp_command(self.qmp, "query-cpus-fast", timeout=2)
            for cpu in cpus:
                os.setpriority(os.PRIO_PROCESS, cpu["thread-id"], nice)
        except (OSError, ValueError, RuntimeError, KeyError):
            return None         # not up yet (or gone): the next pass tries
        self.vcpu_niced = True
        return [cpu["thread-id"] for cpu in cpus]

    def poll_serial(self, echo):
        self._read_serial(echo)
        while self.next_serials:
            # The VM moved to another QEMU: the rest of what the source
            # printed before it stopped comes first.  The guest's serial
            # stream goes on in the next file, partial line and all.
            self._read_serial(echo)
            self.serial, self.pos = self.next_serials.pop(0), 0
            self._read_serial(echo)

    def _read_serial(self, echo):
        try:
            with open(self.serial, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return
        if not data:
            return
        self.pos += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            self._line(line, echo)

    def flush_serial(self, echo):
        self.poll_serial(echo)
        if self.partial:
            self._line(self.partial, echo)
            self.partial = b""

    def _line(self, line, echo):
        line = line.rstrip(b"\r")
        m = MARKER.search(line)
        if m and self.status is None:
            self.status = int(m.group(1))
            self.status_time = time.monotonic()
        c = HOST_CHECK.search(line) or HOST_INJECT.search(line)
        if c and self.on_check:
            self.on_check(self, c.group(1).decode(), c.group(2).decode().split())
        if echo:
            text = line.decode("utf-8", "replace")
            sys.stdout.write("[%s] %s\n" % (self.name, text))
            sys.stdout.flush()

    def take_over(self, dest):
        """dest, a QEMU that received this VM by migration, is the VM now;
        the source must have stopped for good."""
        self.proc, self.argv, self.qmp = dest.proc, dest.argv, dest.qmp
        self.qemu_log, self.start_time = dest.qemu_log, dest.start_time
        self.vcpu_niced = False
        self.next_serials.append(dest.serial)
        self.incoming = None

    def kill(self):
        for proc in (self.proc, self.incoming and self.incoming.proc):
            if proc is None:
                continue
            if proc.poll() is None:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def kvm_stuck(self):
        """Whether KVM stopped this VM for good: after a "KVM internal
        error" QEMU pauses it and nothing will make it run again."""
        try:
            size = os.path.getsize(self.qemu_log)
        except OSError:
            return False
        if size == getattr(self, "_log_seen", -1):
            return False
        self._log_seen = size
        return any("KVM internal error" in line for line in self.qemu_log_tail(200))

    def qemu_log_tail(self, n=15):
        try:
            with open(self.qemu_log, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            return []
        return lines[-n:]


def wait_for_sockets(vm, paths, timeout=30):
    """Whether the files at paths (the sockets of vm's QEMU) appeared
    while it ran, within timeout seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(os.path.exists(p) for p in paths):
            return True
        if not vm.alive():
            return False
        time.sleep(0.05)
    return False
