#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run a command in N rnic test VMs that share one L2 segment.

Every VM boots the guest image's kernel with /sbin/rnic-init as init, gets
the command and a description of the run through fw_cfg, runs the command
and prints RNIC-EXIT-STATUS=<n> on its serial console before powering off.

Network (all VMs on one segment per NIC):
  * a virtio-net NIC on segment "n0":  MAC 52:54:00:52:01:<i+1>,
    198.18.0.<i+1>/24 and fd52:0:0:1::<i+1>/64
  * with --rnic, an rnic NIC on segment "r0": MAC 52:54:00:52:02:<i+1>,
    198.19.0.<i+1>/24 and fd52:0:0:2::<i+1>/64
Two VMs are joined by a unix stream socket (VM 0 listens), more VMs by a
UDP multicast group on 127.0.0.1.  Other ways (--net):
  * user: QEMU's user-mode network (libslirp); every VM alone on segments
    of its own, the rnic NIC's (the virtio NIC's without --rnic) with
    QEMU's defaults: 10.0.2.15/24 (also what its DHCP server hands out),
    the host behind 10.0.2.2, DNS on 10.0.2.3; the other NIC on 10.0.3.0/24
  * stream with --listen HOST:PORT or --connect HOST:PORT: two launchers,
    on one host or two, each run one VM (VM 0 and VM 1) and join them over
    TCP, PORT for the virtio NIC's segment and PORT+1 for the rnic NIC's

A test script may carry launcher options in comment lines such as
    # vmlaunch: --rxe --timeout 600
which apply before the command line's own options.

Exit status: 0 when every VM ran its command with status 0.  Otherwise one
line "rnic: step '...' failed (...), see <log>" on stderr and status 1.
Every QEMU started here is killed when the launcher ends, however it ends
(PR_SET_PDEATHSIG covers SIGKILL of the launcher itself).
"""

import argparse
import hashlib
import json
import ctypes
import os
import random
import re
import resource
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("RNIC_CACHE", os.path.join(ROOT, ".cache"))
MARKER = re.compile(rb"RNIC-EXIT-STATUS=(\d+)")
# A guest asks the launcher to look at its rnic device from the host (over
# QMP) with this line; see rnic-host-check in scripts/guest.
HOST_CHECK = re.compile(rb"RNIC-HOST-CHECK: ([a-z-]+)((?: [a-z-]+=[0-9]+)*)\s*$")
HEADER = re.compile(r"^#\s*vmlaunch:(.*)$")
PR_SET_PDEATHSIG = 1
KEEP_RUNS = 40


class Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def rel(path):
    path = os.path.abspath(path)
    if path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return path


def default_firmware_dirs():
    dirs = ["/usr/share/seabios", "/usr/lib/ipxe/qemu",
            os.path.join(CACHE, "qemu-build", "pc-bios", "optionrom"),
            os.path.join(CACHE, "qemu-build", "pc-bios")]
    return [d for d in dirs if os.path.isdir(d)]


# --net user: the address QEMU's DHCP server hands out first, on the
# segment of the rnic NIC (or the virtio NIC without --rnic) and the other.
SLIRP_DATA_NET, SLIRP_OTHER_NET = "10.0.2.0/24", "10.0.3.0/24"
SLIRP_DATA_IP4, SLIRP_OTHER_IP4 = "10.0.2.15", "10.0.3.15"


def vm_addresses(i, net=None, rnic=False):
    """VM i's MACs and addresses; --net user (net) changes the IPv4 ones."""
    n = i + 1
    a = {
        "MAC": "52:54:00:52:01:%02x" % n,
        "IP4": "198.18.0.%d" % n,
        "IP6": "fd52:0:0:1::%x" % n,
        "RNIC_MAC": "52:54:00:52:02:%02x" % n,
        "RNIC_IP4": "198.19.0.%d" % n,
        "RNIC_IP6": "fd52:0:0:2::%x" % n,
    }
    if net == "user":
        a["IP4"], a["RNIC_IP4"] = ((SLIRP_OTHER_IP4, SLIRP_DATA_IP4) if rnic
                                   else (SLIRP_DATA_IP4, SLIRP_OTHER_IP4))
    return a


def host_port(spec, what):
    """(host, port) of "HOST:PORT" or "[IPV6]:PORT"; ValueError if bad."""
    host, sep, port = spec.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65534:
        raise ValueError("%s wants HOST:PORT with PORT 1..65534, not %r" % (what, spec))
    return host, int(port)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="vmlaunch.py",
        description="Run a command in N rnic test VMs on one L2 segment.")
    what = p.add_argument_group("what to run (one of)")
    what.add_argument("--cmd", help="shell command run in every VM")
    what.add_argument("--script", help="script file run in every VM "
                      "(its '# vmlaunch:' lines add launcher options)")
    what.add_argument("--vm-cmd", action="append", default=[], metavar="I=CMD",
                      help="command for VM I only (overrides --cmd/--script)")
    p.add_argument("-n", "--vms", type=int,
                   help="number of VMs (default 2; 1 with --net user, --listen "
                        "or --connect)")
    p.add_argument("--rnic", action="store_true",
                   help="add an rnic NIC (-device rnic) on a second segment")
    p.add_argument("--rnic-opt", action="append", default=[], metavar="KEY=VAL",
                   help="extra rnic device property (repeatable)")
    p.add_argument("--rxe", action="store_true",
                   help="create Soft-RoCE rxe0 on the virtio NIC before the command "
                   "(with --rnic too: rxe0 next to the rnic device)")
    p.add_argument("--interop", action="store_true",
                   help="with --rnic: VM 1 gets no rnic device; Soft-RoCE rxe0 on a "
                   "virtio NIC on the rnic segment talks to VM 0's rnic device")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VAL",
                   help="extra environment variable for the guest command")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds before all VMs are killed (default 600)")
    p.add_argument("--guest-timeout", type=float,
                   help="timeout of the command inside the guest (default: timeout - 60)")
    p.add_argument("--mem", default=os.environ.get("RNIC_VM_MEM", "1024"), help="MiB per VM")
    p.add_argument("--accel", choices=["auto", "kvm", "tcg"],
                   default=os.environ.get("RNIC_ACCEL", "auto"),
                   help="auto (default): KVM when /dev/kvm answers a probe, "
                        "else TCG")
    p.add_argument("--smp", default="1")
    p.add_argument("--vcpu-nice", type=int, metavar="N",
                   default=int(os.environ.get("RNIC_VCPU_NICE", "0")),
                   help="run the VMs' vCPU threads at nice N (1-19; default 0: "
                        "unchanged).  On a host with fewer cores than busy "
                        "threads, a guest that spins on memory keeps its "
                        "core, and the QEMU main loop that runs the NIC "
                        "waits for the scheduler; a positive N lets the "
                        "device threads go first, as a NIC's hardware never "
                        "waits for a host CPU")
    p.add_argument("--machine", default="q35")
    p.add_argument("--net", choices=["auto", "stream", "mcast", "dgram", "tap", "user"],
                   default="auto",
                   help="how VMs are joined: stream (unix socket, 2 VMs; TCP "
                        "with --listen/--connect), mcast (UDP multicast hub), "
                        "dgram (UDP unicast, 2 VMs), tap (tap devices on a host "
                        "Linux bridge per segment, needs root), user (not joined: "
                        "QEMU's user-mode network per VM, DHCP, the host at "
                        "10.0.2.2); auto: stream for 2, mcast otherwise")
    p.add_argument("--coalesce", choices=["on", "off"],
                   default=os.environ.get("RNIC_COALESCE", "on"),
                   help="on a stream or multicast network, let the rnic "
                        "NIC's netdev send the frames of one main-loop pass "
                        "together (coalesce=on, default); virtio-net's never "
                        "does, as it slows Soft-RoCE")
    tcp = p.add_argument_group(
        "two launchers joined over TCP (--net stream; each runs one VM; "
        "PORT carries the virtio NIC's segment, PORT+1 the rnic NIC's)")
    tcp = tcp.add_mutually_exclusive_group()
    tcp.add_argument("--listen", metavar="HOST:PORT",
                     help="this launcher's VM (VM 0) listens on HOST:PORT "
                          "(0.0.0.0 for every address)")
    tcp.add_argument("--connect", metavar="HOST:PORT",
                     help="this launcher's VM (VM 1) connects to the launcher "
                          "started with --listen on HOST:PORT")
    p.add_argument("--vm-index", type=int, choices=[0, 1],
                   help="with --listen/--connect: the index of this launcher's "
                        "VM (its name, MACs, addresses, RNIC_VM_INDEX; default 0 "
                        "with --listen, 1 with --connect)")
    p.add_argument("--pcap", metavar="DIR",
                   help="write a pcap of each VM's traffic per segment to DIR "
                        "(QEMU filter-dump)")
    p.add_argument("--qemu", default=os.environ.get(
        "RNIC_QEMU", os.path.join(CACHE, "qemu-build", "qemu-system-x86_64")))
    p.add_argument("--kernel", default=os.environ.get(
        "RNIC_KERNEL", os.path.join(CACHE, "image", "vmlinuz")))
    p.add_argument("--initrd", default=os.environ.get(
        "RNIC_INITRD", os.path.join(CACHE, "image", "initrd.img")))
    p.add_argument("--image", default=os.environ.get(
        "RNIC_IMAGE", os.path.join(CACHE, "image", "rootfs.img")))
    p.add_argument("-L", "--firmware-dir", action="append", default=None,
                   help="QEMU firmware directory (repeatable; default: Debian's "
                   "seabios and ipxe-qemu plus the QEMU build's pc-bios)")
    p.add_argument("--append", default="", help="extra kernel command line")
    p.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="extra QEMU argument for every VM (repeatable)")
    p.add_argument("--workdir", help="where logs and sockets go "
                   "(default: a new directory under .cache/runs)")
    p.add_argument("--name", default="run", help="name used for the work directory")
    p.add_argument("--result-cache", metavar="DIR",
                   help="skip the run when a run with identical inputs (QEMU binary, "
                   "kernel, initrd, image, launcher, command, options) passed before, "
                   "and record passes in DIR; RNIC_TEST_NOCACHE=1 always runs")
    p.add_argument("--result-input", action="append", default=[], metavar="PATH",
                   help="another file whose change invalidates cached results "
                   "(e.g. the real QEMU binary behind a wrapper)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="do not echo the serial consoles")
    args = p.parse_args(argv)
    if args.script:
        header = []
        with open(args.script, encoding="utf-8") as f:
            for line in f:
                m = HEADER.match(line.strip())
                if m:
                    header += shlex.split(m.group(1))
        if header:
            args = p.parse_args(header + argv)
    if not (args.cmd or args.script or args.vm_cmd):
        p.error("one of --cmd, --script or --vm-cmd is required")
    if args.cmd and args.script:
        p.error("--cmd and --script exclude each other")
    if args.interop and not args.rnic:
        p.error("--interop needs --rnic")
    args.tcp = None
    if args.listen or args.connect:
        if args.net not in ("auto", "stream"):
            p.error("--listen and --connect join VMs with --net stream")
        args.net = "stream"
        try:
            host, port = host_port(args.listen or args.connect,
                                   "--listen" if args.listen else "--connect")
        except ValueError as e:
            p.error(str(e))
        args.tcp = (host, port, bool(args.listen))
        if args.vms is None:
            args.vms = 1
        if args.vms != 1:
            p.error("--listen and --connect run one VM (give -n 1 after a "
                    "script's '# vmlaunch: -n %d')" % args.vms)
        if args.vm_index is None:
            args.vm_index = 0 if args.listen else 1
    elif args.vm_index is not None:
        p.error("--vm-index goes with --listen or --connect")
    if args.net == "user" and args.interop:
        p.error("--net user gives every VM segments of its own: no --interop")
    if args.vms is None:
        args.vms = 1 if args.net == "user" else 2
    if not 1 <= args.vms <= 250:
        p.error("--vms must be between 1 and 250")
    if not 0 <= args.vcpu_nice <= 19:
        p.error("--vcpu-nice must be between 0 and 19")
    if args.firmware_dir is None:
        args.firmware_dir = default_firmware_dirs()
    if args.guest_timeout is None:
        args.guest_timeout = max(30, args.timeout - 60)
    return args


KVM_PROBE_TIMEOUT = 20
# Bridges and taps pass jumbo frames: the rnic netdev's default MTU is 4200
# (RoCE path MTU 4096), and a bridge drops what exceeds a port's MTU.
TAP_MTU = "9000"


def kvm_probe(qemu, kvm_dev="/dev/kvm", timeout=KVM_PROBE_TIMEOUT, use_cache=True,
              kernel=None, firmware_dirs=()):
    """(works, why): runs a KVM guest in a child QEMU.

    With 'kernel', the guest kernel itself boots until it finds no root
    file system and panics (panic=-1 and -no-reboot make QEMU exit): a
    host can run firmware under KVM for a while and still stop the
    kernel with a "KVM internal error" (emulation failure; the VM then
    sits paused for ever), as nested setups do.  Without one, a bare
    machine runs for a second.  'firmware_dirs' go to -L, as for the
    VMs: a QEMU build tree's binary finds no BIOS without them.  Some hosts have a /dev/kvm that hangs:
    the child is then abandoned after 'timeout' seconds (a task stuck in
    the kernel may not even die).  The answer is kept per boot, QEMU
    binary and kernel, so a test suite probes once.
    """
    if not os.access(kvm_dev, os.R_OK | os.W_OK):
        return False, "no usable %s" % kvm_dev
    ident = ""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as f:
            boot = f.read().strip()
        for path in [qemu] + ([kernel] if kernel else []):
            st = os.stat(path)
            ident += " %s %d %d" % (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        ident += " -L " + " ".join(firmware_dirs)
    except OSError:
        boot = None
    cache = None
    if boot and use_cache:
        key = hashlib.sha256((boot + ident).encode()).hexdigest()[:16]
        cache = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp",
                             "rnic-kvm-probe-%s" % key)
        try:
            with open(cache, encoding="utf-8") as f:
                works, why = f.read().split(" ", 1)
            return works == "yes", why.strip()
        except (OSError, ValueError):
            pass
    argv = [qemu, "-accel", "kvm", "-cpu", "host", "-machine", "q35",
            "-nodefaults", "-no-user-config", "-display", "none"]
    for d in firmware_dirs:
        argv += ["-L", d]
    if kernel:
        argv += ["-m", "256", "-no-reboot", "-kernel", kernel,
                 "-append", "console=ttyS0 panic=-1 root=/dev/rnic-kvm-probe",
                 "-serial", "stdio", "-monitor", "none"]
    else:
        argv += ["-m", "64", "-S", "-monitor", "stdio"]
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        return False, "probe did not start: %s" % e
    if not kernel:
        try:
            child.stdin.write(b"cont\n")
            child.stdin.flush()
            time.sleep(1)
            child.stdin.write(b"quit\n")
            child.stdin.flush()
        except OSError:
            pass
    try:
        out, _ = child.communicate(timeout=timeout)
        rc = child.returncode
        works, why = rc == 0, "probe exited with %d" % rc
        if works and kernel:
            works = b"Kernel panic" in out
            why = ("the guest kernel booted to its expected panic" if works else
                   "QEMU exited without the guest kernel's panic")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        works, why = False, ("%s: no %s in %gs" % (
            kvm_dev, "guest kernel boot" if kernel else "answer", timeout))
    if cache:
        try:
            with open(cache, "w", encoding="utf-8") as f:
                f.write("%s %s\n" % ("yes" if works else "no", why))
        except OSError:
            pass
    return works, why


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
        c = HOST_CHECK.search(line)
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


def prune_runs(runs_dir):
    try:
        entries = sorted((os.path.getmtime(os.path.join(runs_dir, e)), e)
                         for e in os.listdir(runs_dir))
    except OSError:
        return
    for _, e in entries[:-KEEP_RUNS]:
        path = os.path.join(runs_dir, e)
        for dirpath, dirnames, filenames in os.walk(path, topdown=False):
            for fn in filenames:
                try:
                    os.unlink(os.path.join(dirpath, fn))
                except OSError:
                    pass
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


class Launcher:
    def __init__(self, args):
        self.args = args
        self.accel = "tcg"
        self.vms = []
        self.bridges = []
        if args.workdir:
            self.workdir = os.path.abspath(args.workdir)
            os.makedirs(self.workdir, exist_ok=True)
        else:
            runs = os.path.join(CACHE, "runs")
            os.makedirs(runs, exist_ok=True)
            prune_runs(runs)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.workdir = tempfile.mkdtemp(prefix="%s-%s-" % (stamp, args.name), dir=runs)
        # unix socket paths must stay short: keep them in /tmp
        self.sockdir = tempfile.mkdtemp(prefix="rnic-net-", dir="/tmp")
        self.log_path = os.path.join(self.workdir, "launcher.log")
        self.log_file = open(self.log_path, "w", encoding="utf-8")
        # Both: rnic is the primary device, rxe0 on the virtio NIC the
        # baseline next to it (the benchmark compares them in one run).
        self.mode = {(True, True): "both", (True, False): "rnic",
                     (False, True): "rxe"}.get((args.rnic, args.rxe), "none")
        # With --listen/--connect this launcher runs VM <vm_index> of two.
        self.first = args.vm_index or 0
        self.total = 2 if args.tcp else args.vms
        self.net = None

    def addresses(self, i):
        return vm_addresses(i, self.net, self.args.rnic)

    def log(self, msg, echo=True):
        self.log_file.write(msg + "\n")
        self.log_file.flush()
        if echo:
            print("rnic: " + msg, flush=True)

    def fail(self, step, why, log):
        self.log("FAILED: step '%s': %s" % (step, why), echo=False)
        sys.stdout.flush()
        print("rnic: step '%s' failed (%s), see %s" % (step, why, rel(log)),
              file=sys.stderr, flush=True)
        return 1

    # ---- run description -------------------------------------------------

    def guest_command(self, i):
        for spec in self.args.vm_cmd:
            idx, _, cmd = spec.partition("=")
            if idx.strip() == str(i):
                return cmd + "\n"
        if self.args.script:
            with open(self.args.script, encoding="utf-8") as f:
                return f.read()
        return (self.args.cmd or "true") + "\n"

    def guest_env(self, i):
        n = self.total
        env = {"RNIC_VM_INDEX": str(i), "RNIC_NVMS": str(n), "RNIC_MODE": self.vm_mode(i),
               "RNIC_CMD_TIMEOUT": str(int(self.args.guest_timeout))}
        data_key = "RNIC_IP4" if self.args.rnic else "IP4"
        for j in range(n):
            a = self.addresses(j)
            for k, v in a.items():
                if k.startswith("RNIC_") and not self.args.rnic:
                    continue
                env["RNIC_VM%d_%s" % (j, k)] = v
            env["RNIC_VM%d_DATA_IP4" % j] = a[data_key]
        mine = self.addresses(i)
        for k, v in mine.items():
            if k.startswith("RNIC_") and not self.args.rnic:
                continue
            env["RNIC_" + k] = v
        env["RNIC_DATA_IP4"] = mine[data_key]
        peer = 1 if i == 0 else 0
        # --net user: every VM is alone on its segments, no peer to reach.
        if n > 1 and self.net != "user":
            env["RNIC_PEER_IP4"] = self.addresses(peer)["IP4"]
            env["RNIC_PEER_DATA_IP4"] = self.addresses(peer)[data_key]
            if self.args.rnic:
                env["RNIC_PEER_RNIC_IP4"] = self.addresses(peer)["RNIC_IP4"]
        for kv in self.args.env:
            k, _, v = kv.partition("=")
            env[k] = v
        return "".join("%s=%s\n" % (k, shlex.quote(v)) for k, v in sorted(env.items()))

    def vm_mode(self, i):
        # Interop: every VM but VM 0 runs rxe on its NIC of the rnic segment.
        if self.args.interop and i > 0:
            return "rxe-peer"
        return self.mode

    # ---- QEMU command lines ------------------------------------------------

    def netdev(self, i, seg_id, seg_index, net):
        if net == "dgram":
            # Two VMs, each sending to the other's UDP port on the host.
            mine, peer = self.dgram_ports[seg_index][i], self.dgram_ports[seg_index][1 - i]
            return ("dgram,id=%s,local.type=inet,local.host=127.0.0.1,local.port=%d,"
                    "remote.type=inet,remote.host=127.0.0.1,remote.port=%d"
                    % (seg_id, mine, peer))
        if net == "tap":
            return ("tap,id=%s,ifname=%s,script=no,downscript=no"
                    % (seg_id, self.tap_name(i, seg_index)))
        if net == "user":
            # One user-mode stack per NIC; the data NIC's has QEMU's defaults.
            data = 1 if self.args.rnic else 0
            return "user,id=%s,net=%s" % (seg_id, SLIRP_DATA_NET if seg_index == data
                                          else SLIRP_OTHER_NET)
        if net == "stream" and self.args.tcp:
            host, port, server = self.args.tcp
            addr = "addr.type=inet,addr.host=%s,addr.port=%d" % (host, port + seg_index)
            if server:
                return "stream,id=%s,server=on,%s" % (seg_id, addr)
            return "stream,id=%s,server=off,%s,reconnect-ms=500" % (seg_id, addr)
        if net == "stream":
            path = os.path.join(self.sockdir, "%s.sock" % seg_id)
            if i == 0:
                return "stream,id=%s,server=on,addr.type=unix,addr.path=%s" % (seg_id, path)
            return ("stream,id=%s,server=off,addr.type=unix,addr.path=%s,reconnect-ms=500"
                    % (seg_id, path))
        group, port = self.mcast[seg_index]
        return "socket,id=%s,mcast=%s:%d,localaddr=127.0.0.1" % (seg_id, group, port)

    def tap_name(self, i, seg_index):
        return "rnt%d-%d-%d" % (self.tap_id, seg_index, i)

    def bridge_name(self, seg_index):
        return "rnbr%d-%d" % (self.tap_id, seg_index)

    def tap_setup(self, n):
        """A Linux bridge per segment and a tap per VM on it (as root)."""
        self.tap_id = os.getpid() % 10000
        for seg in range(2):
            br = self.bridge_name(seg)
            cmds = [["ip", "link", "add", br, "mtu", TAP_MTU, "type", "bridge"],
                    ["ip", "link", "set", br, "up"]]
            for i in range(n):
                tap = self.tap_name(i, seg)
                cmds += [["ip", "tuntap", "add", "dev", tap, "mode", "tap"],
                         ["ip", "link", "set", tap, "mtu", TAP_MTU],
                         ["ip", "link", "set", tap, "master", br],
                         ["ip", "link", "set", tap, "up"]]
            for c in cmds:
                r = subprocess.run(c, capture_output=True, text=True)
                if r.returncode:
                    return "%s: %s" % (" ".join(c), r.stderr.strip())
            self.bridges.append(br)
        return None

    def tap_cleanup(self):
        for br in self.bridges:
            seg = int(br.rsplit("-", 1)[1])
            for i in range(self.args.vms):
                subprocess.run(["ip", "link", "del", self.tap_name(i, seg)],
                               capture_output=True)
            subprocess.run(["ip", "link", "del", br], capture_output=True)
        self.bridges = []

    def qemu_argv(self, i, net):
        a = self.args
        addrs = self.addresses(i)
        append = ("console=ttyS0 root=/dev/vda rw init=/sbin/rnic-init quiet panic=-1 "
                  "mitigations=off " + a.append).strip()
        cmd_file = os.path.join(self.workdir, "vm%d.cmd" % i)
        env_file = os.path.join(self.workdir, "vm%d.env" % i)
        with open(cmd_file, "w", encoding="utf-8") as f:
            f.write(self.guest_command(i))
        with open(env_file, "w", encoding="utf-8") as f:
            f.write(self.guest_env(i))
        cpu = "host" if self.accel == "kvm" else "max"
        argv = [a.qemu, "-name", "rnic-vm%d" % i,
                "-machine", a.machine, "-accel", self.accel, "-cpu", cpu,
                "-m", str(a.mem), "-smp", str(a.smp),
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]
        for d in a.firmware_dir:
            argv += ["-L", d]
        argv += ["-kernel", a.kernel, "-initrd", a.initrd, "-append", append,
                 "-drive", "file=%s,if=virtio,format=raw,snapshot=on" % a.image,
                 "-serial", "file:" + os.path.join(self.workdir, "vm%d.serial.log" % i),
                 "-fw_cfg", "name=opt/rnic/cmd,file=" + cmd_file,
                 "-fw_cfg", "name=opt/rnic/env,file=" + env_file,
                 "-device", "virtio-rng-pci",
                 "-netdev", self.netdev(i, "n0", 0, net),
                 "-device", "virtio-net-pci,netdev=n0,mac=%s,romfile=" % addrs["MAC"]]
        if a.rnic and self.vm_mode(i) == "rxe-peer":
            # Same MAC and addresses as an rnic NIC would have, so the
            # guest sets it up the same way; rxe0 goes on top of it.
            dev = "virtio-net-pci,netdev=r0,mac=%s,romfile=" % addrs["RNIC_MAC"]
            argv += ["-netdev", self.netdev(i, "r0", 1, net), "-device", dev]
        elif a.rnic:
            dev = "rnic,id=rnic0,netdev=r0,mac=%s" % addrs["RNIC_MAC"]
            for opt in a.rnic_opt:
                dev += "," + opt
            nd = self.netdev(i, "r0", 1, net)
            if net in ("stream", "mcast") and a.coalesce == "on":
                nd += ",coalesce=on"
            argv += ["-netdev", nd, "-device", dev]
        if a.pcap:
            segs = ["n0"] + (["r0"] if a.rnic else [])
            for seg in segs:
                argv += ["-object", "filter-dump,id=dump-%s,netdev=%s,file=%s"
                         % (seg, seg, os.path.join(os.path.abspath(a.pcap),
                                                   "vm%d-%s.pcap" % (i, seg)))]
        argv += ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path(i)]
        argv += a.qemu_arg
        return argv

    def qmp_path(self, i):
        return os.path.join(self.sockdir, "vm%d.qmp" % i)

    # ---- host checks ---------------------------------------------------------

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
        if not self.wait_for_sockets(dest, [dest.qmp]):
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

    # ---- running -----------------------------------------------------------

    def wait_for_sockets(self, vm, paths, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(os.path.exists(p) for p in paths):
                return True
            if not vm.alive():
                return False
            time.sleep(0.05)
        return False

    def choose_net(self):
        """The way the VMs are joined: --net, or what "auto" means for -n."""
        a = self.args
        net = a.net if a.net != "auto" else ("stream" if a.vms == 2 else "mcast")
        if a.vms == 1 and net != "user" and not a.tcp:
            net = "mcast"
        self.net = net
        return net

    def run(self):
        a = self.args
        n = a.vms
        net = self.choose_net()
        rnd = random.Random()
        if net == "dgram" and n != 2:
            return self.fail("vm launch", "--net dgram joins exactly 2 VMs",
                             self.log_path)
        base = rnd.randint(20000, 40000) & ~3
        self.dgram_ports = [[base, base + 1], [base + 2, base + 3]]
        if net == "tap":
            why = self.tap_setup(n)
            if why:
                self.tap_cleanup()
                return self.fail("vm launch", "tap set-up: " + why, self.log_path)
        if a.pcap:
            os.makedirs(a.pcap, exist_ok=True)
        self.mcast = [("239.255.%d.%d" % (rnd.randint(1, 254), rnd.randint(1, 254)),
                       rnd.randint(20000, 60000)) for _ in range(2)]
        how = "%s network" % net
        if a.tcp:
            how = "VM %d of 2, stream network over TCP %s %s:%d" % (
                self.first, "listening on" if a.tcp[2] else "to", a.tcp[0], a.tcp[1])
        self.log("run directory %s (%d VMs, %s, mode %s)"
                 % (rel(self.workdir), n, how, self.mode))
        if not os.access(a.qemu, os.X_OK):
            return self.fail("vm launch", "QEMU binary %s not found" % a.qemu, self.log_path)
        if a.accel == "auto":
            works, why = kvm_probe(a.qemu, kernel=a.kernel,
                                   firmware_dirs=a.firmware_dir)
            self.accel = "kvm" if works else "tcg"
            self.log("accelerator %s (KVM: %s)" % (self.accel, why))
        else:
            self.accel = a.accel
            self.log("accelerator %s (--accel)" % self.accel)
        env = self.env = dict(os.environ, TMPDIR=self.workdir)
        t0 = time.monotonic()
        for i in range(self.first, self.first + n):
            vm = VM(i, self.workdir, self.qemu_argv(i, net), self.qmp_path(i),
                    self.host_check)
            self.vms.append(vm)
            self.log("$ " + shlex.join(vm.argv), echo=False)
            vm.start(env)
            if net == "stream" and i == 0 and n > 1:
                socks = [os.path.join(self.sockdir, "n0.sock")]
                if a.rnic:
                    socks.append(os.path.join(self.sockdir, "r0.sock"))
                if not self.wait_for_sockets(vm, socks):
                    vm.flush_serial(False)
                    for line in vm.qemu_log_tail():
                        print("[%s qemu] %s" % (vm.name, line), file=sys.stderr)
                    return self.fail("vm0 start", "QEMU exited or its network socket "
                                     "did not appear", vm.qemu_log)

        deadline = t0 + a.timeout
        timed_out = False
        first_bad = None
        while True:
            for vm in self.vms:
                vm.poll_serial(not a.quiet)
                if a.vcpu_nice and not vm.vcpu_niced and vm.alive():
                    tids = vm.nice_vcpus(a.vcpu_nice)
                    if tids:
                        self.log("%s: vCPU threads %s at nice %d"
                                 % (vm.name, tids, a.vcpu_nice))
            now = time.monotonic()
            if all(not vm.alive() for vm in self.vms):
                break
            for vm in self.vms:
                if vm.alive() and self.accel == "kvm" and vm.kvm_stuck():
                    self.log("%s: KVM internal error, the VM cannot go on (run with "
                             "--accel tcg): killing it" % vm.name)
                    vm.kill()
                # Marker printed but no power-off: don't wait forever.
                if vm.alive() and vm.status is not None and now - vm.status_time > 30:
                    self.log("%s printed its status but did not power off: killing it"
                             % vm.name)
                    vm.kill()
                if first_bad is None and (
                        (not vm.alive() and vm.status is None)
                        or (vm.status not in (None, 0))):
                    first_bad = (vm, now)
            # A VM that died or failed: give its peers a little time, then stop.
            if first_bad is not None and now - first_bad[1] > 20:
                break
            if now > deadline:
                timed_out = True
                break
            time.sleep(0.2)
        for vm in self.vms:
            vm.kill()
            vm.flush_serial(not a.quiet)
        elapsed = time.monotonic() - t0
        return self.report(timed_out, elapsed)

    def report(self, timed_out, elapsed):
        a = self.args
        summary = []
        for vm in self.vms:
            rc = vm.proc.returncode if vm.proc else None
            summary.append("%s: %s" % (vm.name, "status %d" % vm.status
                                       if vm.status is not None else "no status"
                                       " (qemu %s)" % rc))
        # The CPU the VMs took, next to the wall time: how much a run waits
        # rather than computes, which decides how many runs fit side by side.
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.log("%s after %.0fs (QEMU CPU %.0fs)"
                 % (", ".join(summary), elapsed, ru.ru_utime + ru.ru_stime))
        # The first failure by VM index: a command that failed explains more
        # than a peer that was stopped because of it.
        bad = [vm for vm in self.vms if vm.status not in (None, 0)] or \
              [vm for vm in self.vms if vm.status is None]
        checks = [vm for vm in self.vms if vm.check_failed]
        if not bad and checks:
            return self.fail("%s host check" % checks[0].name,
                             checks[0].check_failed, self.log_path)
        if not bad:
            self.log("all %d VMs ran the command successfully" % len(self.vms))
            return 0
        vm = bad[0]
        if vm.status is not None:
            return self.fail("%s guest command" % vm.name,
                             "exit status %d" % vm.status, vm.serial)
        tail = vm.qemu_log_tail()
        for line in tail:
            print("[%s qemu] %s" % (vm.name, line), file=sys.stderr)
        rc = vm.proc.returncode
        if tail and rc not in (0, -signal.SIGKILL) and os.path.getsize(vm.serial) == 0:
            return self.fail("%s start" % vm.name, "QEMU exited with status %s: %s"
                             % (rc, tail[-1][:200]), vm.qemu_log)
        if timed_out:
            why = "no RNIC-EXIT-STATUS within %.0fs" % a.timeout
        else:
            why = "VM stopped without RNIC-EXIT-STATUS (QEMU status %s)" % rc
        return self.fail("%s run" % vm.name, why, vm.serial)

    def boot_failures(self):
        """VMs whose kernel panicked before rnic-init started: the distro's
        boot (initramfs) failed, before anything of ours ran."""
        bad = []
        for vm in self.vms:
            if vm.migrations:
                continue            # it ran long enough to be migrated
            try:
                with open(vm.serial, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if "rnic-init: started" not in text and "Kernel panic" in text:
                bad.append(vm.name)
        return bad

    def cleanup(self):
        for vm in self.vms:
            vm.kill()
        self.tap_cleanup()
        try:
            for e in os.listdir(self.sockdir):
                os.unlink(os.path.join(self.sockdir, e))
            os.rmdir(self.sockdir)
        except OSError:
            pass
        self.log_file.close()


def result_key(args, argv):
    """Identity of a run's inputs; None when something cannot be read.

    Big artefacts (QEMU, kernel, initrd, image) count by path, size and
    mtime: each is rewritten whenever anything it is built from changes.
    Small files (a QEMU wrapper script) and everything the run reads as
    text count by content.
    """
    h = hashlib.sha256()
    try:
        for path in [args.qemu, args.kernel, args.initrd, args.image] + args.result_input:
            st = os.stat(path)
            if st.st_size < (1 << 20):
                # Small files (wrapper scripts) may be rewritten unchanged.
                with open(path, "rb") as f:
                    h.update(f.read())
                continue
            h.update(("%s %d %d\n" % (os.path.realpath(path), st.st_size,
                                       st.st_mtime_ns)).encode())
        texts = [os.path.abspath(__file__)]
        if args.script:
            texts.append(args.script)
        for path in texts:
            with open(path, "rb") as f:
                h.update(f.read())
    except OSError:
        return None
    h.update("\0".join(a for a in argv if not a.startswith("--result-cache")).encode())
    return h.hexdigest()[:32]


def main(argv):
    args = parse_args(argv)
    stamp = None
    if args.result_cache and not os.environ.get("RNIC_TEST_NOCACHE"):
        key = result_key(args, argv)
        if key:
            stamp = os.path.join(args.result_cache, "%s-%s.pass" % (args.name, key))
            if os.path.exists(stamp):
                with open(stamp, encoding="utf-8") as f:
                    when = f.read().strip()
                print("rnic: %s: passed before with identical inputs (%s); not run "
                      "again (RNIC_TEST_NOCACHE=1 runs it)" % (args.name, when), flush=True)
                return 0

    def on_signal(signum, _frame):
        raise Interrupted(signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    launcher = Launcher(args)
    try:
        rc = launcher.run()
        booted = launcher.boot_failures() if rc else []
        if booted:
            # A rare initramfs race ("run-init: nuking initramfs contents")
            # panics a guest before our code runs: that boot, not the test,
            # failed.  One more try, said loudly; a second one fails the run.
            print("rnic: %s did not boot (kernel panic before rnic-init, see "
                  "%s): running once more" % (", ".join(booted),
                                               rel(launcher.workdir)),
                  file=sys.stderr, flush=True)
            launcher.cleanup()
            launcher = Launcher(args)
            rc = launcher.run()
        if rc == 0 and stamp:
            os.makedirs(os.path.dirname(stamp), exist_ok=True)
            with open(stamp, "w", encoding="utf-8") as f:
                f.write("%s, run directory %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"),
                                                     rel(launcher.workdir)))
        return rc
    except Interrupted as e:
        launcher.cleanup()
        print("rnic: vm launcher interrupted by %s, all VMs killed"
              % signal.Signals(e.signum).name, file=sys.stderr, flush=True)
        return 128 + e.signum
    finally:
        launcher.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
