# SPDX-License-Identifier: GPL-2.0-or-later
"""The launcher's command line: its options, those a test script adds in
'# vmlaunch:' lines, and main(), which runs it to an exit status."""

import argparse
import os
import re
import shlex
import signal
import sys

from . import cache
from .fabric import DEFAULT_IBSWITCH
from .net import host_port, parse_wire_fault
from .paths import CACHE, rel
from .run import Launcher

HEADER = re.compile(r"^#\s*vmlaunch:(.*)$")


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP: main() kills the VMs and exits 128+N."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def default_firmware_dirs():
    dirs = ["/usr/share/seabios", "/usr/lib/ipxe/qemu",
            os.path.join(CACHE, "qemu-build", "pc-bios", "optionrom"),
            os.path.join(CACHE, "qemu-build", "pc-bios")]
    return [d for d in dirs if os.path.isdir(d)]


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
    p.add_argument("--wire-fault", metavar="SPEC",
                   help="a faulty wire under every VM's RDMA traffic: a "
                        "filter-wirefault object on each netdev that carries "
                        "RoCE (the rnic NIC's and the virtio NIC's that rxe0 "
                        "uses), on the frames the NIC sends, RoCE frames only. "
                        "SPEC: KEY=N,... of loss, corrupt, ce-mark, delay, "
                        "reorder, duplicate (percentages), delay-us and seed; "
                        "each wire's seed is seed + 2 * VM index + (1 on the "
                        "rnic NIC's). The filters are wf-n0 and wf-r0; a guest's "
                        "'rnic-host-check wire-faults' logs their counters")
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
    p.add_argument("--fabric", choices=["roce", "ib"], default="roce",
                   help="the rnic NICs' link layer: roce (Ethernet, default) "
                        "or ib (InfiniBand, link-layer=infiniband): two VMs "
                        "back to back, more through one emulated IB switch")
    p.add_argument("--ib-switch", action="store_true",
                   help="with --fabric ib: two VMs through the switch too")
    p.add_argument("--ibswitch", metavar="PATH",
                   default=os.environ.get("RNIC_IBSWITCH", DEFAULT_IBSWITCH),
                   help="the IB switch program (default: meson's build of "
                        "contrib/rnic-ibswitch under .cache)")
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
    p.add_argument("--vm-guest", action="append", default=[], metavar="I=DIR",
                   help="VM I boots another guest: DIR's vmlinuz, initrd.img and "
                        "rootfs.img (as 'rnic.sh image --suite' makes them) in "
                        "place of --kernel, --initrd and --image (repeatable)")
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
    if args.fabric == "ib":
        if not args.rnic:
            p.error("--fabric ib needs --rnic")
        if args.interop or args.rxe:
            p.error("--fabric ib has no Soft-RoCE peer: no --rxe or --interop")
        if args.wire_fault is not None:
            p.error("--wire-fault acts on RoCE frames: not with --fabric ib")
        if args.net not in ("auto", "stream", "mcast") or args.listen or args.connect:
            p.error("--fabric ib links VMs by unix stream sockets: not with "
                    "--net %s, --listen or --connect" % args.net)
    elif args.ib_switch:
        p.error("--ib-switch goes with --fabric ib")
    if args.wire_fault is not None:
        try:
            args.wire_fault = parse_wire_fault(args.wire_fault)
        except ValueError as e:
            p.error(str(e))
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
    try:
        args.guests = parse_vm_guests(args.vm_guest, args.vms)
    except ValueError as e:
        p.error(str(e))
    # A run's result depends on every guest it boots.
    for g in args.guests.values():
        args.result_input += [g["kernel"], g["initrd"], g["image"]]
    if args.firmware_dir is None:
        args.firmware_dir = default_firmware_dirs()
    if args.guest_timeout is None:
        args.guest_timeout = max(30, args.timeout - 60)
    return args


def parse_vm_guests(specs, vms):
    """--vm-guest I=DIR options: {I: {"kernel", "initrd", "image"}}."""
    guests = {}
    for spec in specs:
        index, sep, d = spec.partition("=")
        if not sep or not index.isdigit() or not d:
            raise ValueError("--vm-guest %s: give I=DIR" % spec)
        i = int(index)
        if i >= vms:
            raise ValueError("--vm-guest %s: the run has %d VMs" % (spec, vms))
        g = {"kernel": os.path.join(d, "vmlinuz"),
             "initrd": os.path.join(d, "initrd.img"),
             "image": os.path.join(d, "rootfs.img")}
        missing = [f for f in g.values() if not os.path.isfile(f)]
        if missing:
            raise ValueError("--vm-guest %s: no %s" % (spec, ", ".join(missing)))
        guests[i] = g
    return guests


def main(argv):
    args = parse_args(argv)
    stamp = cache.pass_stamp(args, argv)
    when = cache.passed_before(stamp)
    if when is not None:
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
            cache.record_pass(stamp, launcher.workdir)
        return rc
    except Interrupted as e:
        launcher.cleanup()
        print("rnic: vm launcher interrupted by %s, all VMs killed"
              % signal.Signals(e.signum).name, file=sys.stderr, flush=True)
        return 128 + e.signum
    finally:
        launcher.cleanup()
