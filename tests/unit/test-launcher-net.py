#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's network options, without VMs: the -netdev options, MACs
# and guest environment it makes for --net user and for two launchers
# joined over TCP (--listen, --connect), that the unix-socket pair stays
# as it was, and that the options it refuses are refused.

import contextlib
import io
import sys
import tempfile

from launcher_checks import Checks, vmlaunch

check = Checks()


def launch(argv):
    """[(qemu argv, guest env dict)] of every VM the launcher would start."""
    with tempfile.TemporaryDirectory() as d:
        args = vmlaunch.parse_args(["--cmd", "true", "--qemu", "/bin/true",
                                    "--workdir", d, "-q"] + argv)
        launcher = vmlaunch.Launcher(args)
        net = launcher.choose_net()
        launcher.dgram_ports = [[1, 2], [3, 4]]
        launcher.mcast = [("239.255.1.1", 5000), ("239.255.1.2", 5001)]
        vms = []
        for i in range(launcher.first, launcher.first + args.vms):
            qemu = launcher.qemu_argv(i, net)
            env = dict(line.split("=", 1) for line in
                       launcher.guest_env(i).splitlines())
            vms.append((qemu, env))
        launcher.cleanup()
        return vms


def netdevs(qemu):
    return [qemu[k + 1] for k, a in enumerate(qemu) if a == "-netdev"]


def refused(argv):
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            vmlaunch.parse_args(["--cmd", "true"] + argv)
        except SystemExit as e:
            return e.code == 2
    return False


def main():
    (qemu, env), = launch(["--net", "user", "--rnic"])
    check("--net user: one VM, a user-mode stack per NIC, the rnic's with "
          "QEMU's defaults", netdevs(qemu) == ["user,id=n0,net=10.0.3.0/24",
                                              "user,id=r0,net=10.0.2.0/24"])
    check("--net user: the rnic NIC is 10.0.2.15, no peer",
          env["RNIC_RNIC_IP4"] == "10.0.2.15" and env["RNIC_DATA_IP4"] == "10.0.2.15"
          and "RNIC_PEER_DATA_IP4" not in env)
    (qemu, env), = launch(["--net", "user"])
    check("--net user without --rnic: the virtio NIC has the defaults",
          netdevs(qemu) == ["user,id=n0,net=10.0.2.0/24"] and env["RNIC_IP4"] == "10.0.2.15")

    (qemu, env), = launch(["--rnic", "--listen", "0.0.0.0:5555"])
    check("--listen: VM 0 listens on PORT and PORT+1",
          netdevs(qemu) == [
              "stream,id=n0,server=on,addr.type=inet,addr.host=0.0.0.0,addr.port=5555",
              "stream,id=r0,server=on,addr.type=inet,addr.host=0.0.0.0,addr.port=5556,"
              "coalesce=on"])
    check("--listen: VM 0 of 2, its peer VM 1",
          env["RNIC_VM_INDEX"] == "0" and env["RNIC_NVMS"] == "2"
          and env["RNIC_PEER_DATA_IP4"] == "198.19.0.2" and "-name" in qemu
          and qemu[qemu.index("-name") + 1] == "rnic-vm0")
    (qemu, env), = launch(["--rnic", "--connect", "[::1]:5555"])
    check("--connect: VM 1 connects to PORT and PORT+1, retrying",
          netdevs(qemu) == [
              "stream,id=n0,server=off,addr.type=inet,addr.host=::1,addr.port=5555,"
              "reconnect-ms=500",
              "stream,id=r0,server=off,addr.type=inet,addr.host=::1,addr.port=5556,"
              "reconnect-ms=500,coalesce=on"])
    check("--connect: VM 1 of 2, its own MAC, its peer VM 0",
          env["RNIC_VM_INDEX"] == "1" and env["RNIC_NVMS"] == "2"
          and env["RNIC_RNIC_MAC"] == "52:54:00:52:02:02"
          and env["RNIC_DATA_IP4"] == "198.19.0.2"
          and env["RNIC_PEER_DATA_IP4"] == "198.19.0.1"
          and "mac=52:54:00:52:02:02" in " ".join(qemu))
    (qemu, env), = launch(["--rnic", "--listen", "0.0.0.0:5555", "--coalesce", "off"])
    check("--coalesce off: the rnic NIC's stream netdev writes frame by frame",
          netdevs(qemu)[1] ==
          "stream,id=r0,server=on,addr.type=inet,addr.host=0.0.0.0,addr.port=5556")
    (qemu, env), = launch(["--rnic", "--connect", "h:5555", "--vm-index", "0"])
    check("--connect --vm-index 0: VM 0", env["RNIC_VM_INDEX"] == "0"
          and env["RNIC_PEER_DATA_IP4"] == "198.19.0.2")

    vms = launch(["--rnic"])
    check("--net stream without --listen: two VMs on unix sockets, VM 0 listens",
          len(vms) == 2 and netdevs(vms[0][0])[1].startswith("stream,id=r0,server=on,"
                                                             "addr.type=unix")
          and netdevs(vms[1][0])[1].startswith("stream,id=r0,server=off,addr.type=unix"))

    for argv in (["--listen", "h:5555", "-n", "2"], ["--listen", "h:65535"],
                 ["--listen", "5555"], ["--listen", "h:1", "--connect", "h:1"],
                 ["--listen", "h:1", "--net", "mcast"], ["--vm-index", "1"],
                 ["--net", "user", "--rnic", "--interop"]):
        check("refused: %s" % " ".join(argv), refused(argv))
    return check.status("launcher-net")


if __name__ == "__main__":
    sys.exit(main())
