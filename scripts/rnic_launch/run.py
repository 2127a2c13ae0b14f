# SPDX-License-Identifier: GPL-2.0-or-later
"""A run: N VMs started with their command lines and the description of
the run they read through fw_cfg, watched until they end, and the verdict."""

import os
import random
import resource
import shlex
import signal
import sys
import tempfile
import time

from .fabric import Fabric
from .kvm import kvm_probe
from .migrate import Migration
from .net import Network, vm_addresses, wire_fault_spec
from .paths import CACHE, rel
from .qmp import HostChecks, qmp_module
from .vm import VM, wait_for_sockets

KEEP_RUNS = 40


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


class Launcher(Network, Fabric, HostChecks, Migration):
    """One run of the launcher.  The networking, the host checks and live
    migration are written as the mixins of their modules; this class holds
    the state they share and drives the VMs."""

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
        if self.args.rnic and self.args.fabric == "ib":
            # The guest finds its HCA by link layer, not by a RoCE GID.
            env["RNIC_FABRIC"] = "ib"
        if self.args.wire_fault:
            # What the guest's network does to RoCE, for the scripts that
            # read the counters (rnic-host-check wire-faults) or say so.
            env["RNIC_WIRE_FAULT"] = wire_fault_spec(self.args.wire_fault)
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
        guest = a.guests.get(i, {"kernel": a.kernel, "initrd": a.initrd,
                                 "image": a.image})
        argv += ["-kernel", guest["kernel"], "-initrd", guest["initrd"], "-append", append,
                 "-drive", "file=%s,if=virtio,format=raw,snapshot=on" % guest["image"],
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
            if self.ib():
                dev += ",link-layer=infiniband"
            for opt in a.rnic_opt:
                dev += "," + opt
            if self.uses_switch():
                nd = self.switch_netdev(i, "r0")
            else:
                nd = self.netdev(i, "r0", 1, net)
            if (net in ("stream", "mcast") or self.uses_switch()) and a.coalesce == "on":
                nd += ",coalesce=on"
            argv += ["-netdev", nd, "-device", dev]
        argv += self.wire_fault_args(i)
        if a.pcap:
            # The switch writes the IB links' captures itself.
            segs = ["n0"] + (["r0"] if a.rnic and not self.uses_switch() else [])
            for seg in segs:
                argv += ["-object", "filter-dump,id=dump-%s,netdev=%s,file=%s"
                         % (seg, seg, os.path.join(os.path.abspath(a.pcap),
                                                   "vm%d-%s.pcap" % (i, seg)))]
        argv += ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path(i)]
        argv += a.qemu_arg
        return argv

    def qmp_path(self, i):
        return os.path.join(self.sockdir, "vm%d.qmp" % i)

    # ---- running -----------------------------------------------------------

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
        if a.wire_fault:
            self.log("wire faults %s on %s (RoCE frames the NICs send)" % (
                wire_fault_spec(a.wire_fault),
                ", ".join(seg for _, seg in self.wire_fault_ids())))
        if not os.access(a.qemu, os.X_OK):
            return self.fail("vm launch", "QEMU binary %s not found" % a.qemu, self.log_path)
        # The host checks and --vcpu-nice speak QMP: without its client
        # a run would fail (or go unniced) half-way, so say it now.
        try:
            qmp_module()
        except RuntimeError as e:
            return self.fail("vm launch", str(e), self.log_path)
        if a.accel == "auto":
            works, why = kvm_probe(a.qemu, kernel=a.kernel,
                                   firmware_dirs=a.firmware_dir)
            self.accel = "kvm" if works else "tcg"
            self.log("accelerator %s (KVM: %s)" % (self.accel, why))
        else:
            self.accel = a.accel
            self.log("accelerator %s (--accel)" % self.accel)
        env = self.env = dict(os.environ, TMPDIR=self.workdir)
        if self.uses_switch():
            why = self.switch_start()
            if why:
                return self.fail("IB switch", why, getattr(self, "switch_log",
                                                          self.log_path))
        t0 = time.monotonic()
        for i in range(self.first, self.first + n):
            vm = VM(i, self.workdir, self.qemu_argv(i, net), self.qmp_path(i),
                    self.host_check)
            self.vms.append(vm)
            self.log("$ " + shlex.join(vm.argv), echo=False)
            vm.start(env)
            if net == "stream" and i == 0 and n > 1:
                socks = [os.path.join(self.sockdir, "n0.sock")]
                if a.rnic and not self.uses_switch():
                    socks.append(os.path.join(self.sockdir, "r0.sock"))
                if not wait_for_sockets(vm, socks):
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
        self.ib_pcaps()
        self.switch_stop()
        self.tap_cleanup()
        try:
            for e in os.listdir(self.sockdir):
                os.unlink(os.path.join(self.sockdir, e))
            os.rmdir(self.sockdir)
        except OSError:
            pass
        self.log_file.close()
