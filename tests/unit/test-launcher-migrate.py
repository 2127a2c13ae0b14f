#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's live migration, without VMs: the destination QEMU's
# command line (migration_argv) and the hand-over of a VM's serial output
# from the source's file to the destination's, a line cut in two by the
# switch included.

import sys
import tempfile

from launcher_checks import Checks, vmlaunch

check = Checks()


def source_argv(d):
    """A VM's command line as the launcher makes it."""
    with tempfile.TemporaryDirectory() as pcap:
        args = vmlaunch.parse_args(["--cmd", "true", "--qemu", "/bin/true",
                                    "--workdir", d, "-q", "--rnic", "-n", "2",
                                    "--pcap", pcap])
        launcher = vmlaunch.Launcher(args)
        net = launcher.choose_net()
        argv = launcher.qemu_argv(1, net)
        launcher.cleanup()
        return argv


def opt(argv, name):
    return [argv[k + 1] for k, a in enumerate(argv[:-1]) if a == name]


class Done:
    """A stand-in for a QEMU process that has ended."""
    returncode = 0

    def poll(self):
        return 0


def main():
    with tempfile.TemporaryDirectory() as d:
        src = source_argv(d)
        dst = vmlaunch.migration_argv(src, "/tmp/s/vm1.mig1.qmp",
                                      d + "/vm1.mig1.serial.log", "mig1")
        check("-incoming defer at the end", dst[-2:] == ["-incoming", "defer"])
        check("own QMP socket, same options",
              opt(dst, "-qmp") == ["unix:/tmp/s/vm1.mig1.qmp,server=on,wait=off"])
        check("own serial file", opt(dst, "-serial") == ["file:" + d + "/vm1.mig1.serial.log"])
        dumps = opt(dst, "-object")
        check("packet dumps tagged: %s" % dumps,
              len(dumps) == 2 and all(x.endswith(".mig1.pcap") for x in dumps))
        same = [a for k, a in enumerate(src) if src[k - 1] not in ("-qmp", "-serial", "-object")]
        check("everything else unchanged",
              [a for k, a in enumerate(dst[:-2]) if dst[k - 1] not in
               ("-qmp", "-serial", "-object")] == same)
        check("the source's argv untouched", opt(src, "-qmp") != opt(dst, "-qmp"))
        again = vmlaunch.migration_argv(dst[:-2], "/tmp/s/vm1.mig2.qmp",
                                        d + "/vm1.mig2.serial.log", "mig2")
        check("a second migration: mig2 files",
              all(x.endswith(".mig2.pcap") and ".mig1" not in x
                  for x in opt(again, "-object")))
        try:
            vmlaunch.migration_argv(["qemu", "-qmp", "unix:/x,server=on"], "/y", "/z", "m")
            check("no -serial refused", False)
        except ValueError:
            check("no -serial refused", True)

        # Serial hand-over: the source printed half a line, then stopped;
        # the rest is in the destination's file.
        seen = []
        vm = vmlaunch.VM(1, d, src, on_check=lambda v, w, a: seen.append(w))
        dest = vmlaunch.VM(1, d, dst, tag="mig1")
        with open(vm.serial, "wb") as f:
            f.write(b"before\nRNIC-HOST-CHECK: mig")
        with open(dest.serial, "wb") as f:
            f.write(b"rate\nafter\nRNIC-EXIT-STATUS=0\n")
        vm.poll_serial(False)
        check("nothing of the cut line yet", seen == [] and vm.partial == b"RNIC-HOST-CHECK: mig")
        with open(vm.serial, "ab") as f:
            f.write(b"rate")
        with open(dest.serial, "wb") as f:
            f.write(b"\nafter\nRNIC-EXIT-STATUS=0\n")
        dest.proc = Done()
        vm.take_over(dest)
        vm.poll_serial(False)
        check("the line cut by the switch is whole: %s" % seen, seen == ["migrate"])
        check("the status from the destination's file", vm.status == 0)
        check("the VM follows the destination",
              vm.serial == dest.serial and vm.qmp == dest.qmp and
              vm.qemu_log == dest.qemu_log and vm.argv == dst and not vm.alive())
    return check.status("launcher-migrate")


if __name__ == "__main__":
    sys.exit(main())
