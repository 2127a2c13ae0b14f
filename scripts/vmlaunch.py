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

With --fabric ib the rnic NICs are InfiniBand HCAs (link-layer=infiniband):
two VMs back to back on the stream pair, more VMs (or --ib-switch) each on
a port of one emulated IB switch (contrib/rnic-ibswitch) that the launcher
runs beside them.

A test script may carry launcher options in comment lines such as
    # vmlaunch: --rxe --timeout 600
which apply before the command line's own options.

Exit status: 0 when every VM ran its command with status 0.  Otherwise one
line "rnic: step '...' failed (...), see <log>" on stderr and status 1.
Every QEMU started here is killed when the launcher ends, however it ends
(PR_SET_PDEATHSIG covers SIGKILL of the launcher itself).
"""

# The launcher lives in the rnic_launch package next to this file (one
# module per concern, see rnic_launch/__init__.py); this file stays the
# entry point that meson, scripts/rnic.sh, bench.py and net-host.py run.

import sys

from rnic_launch.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
