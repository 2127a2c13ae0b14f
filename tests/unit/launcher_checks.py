# SPDX-License-Identifier: GPL-2.0-or-later
#
# What the launcher's unit tests share: the launcher's package,
# scripts/rnic_launch, importable from tests/unit, where meson runs them,
# and from anywhere else; the command lines it would start VMs with; and
# what their stand-in QMP servers say.

import contextlib
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))

from rnic_launch.cli import parse_args  # noqa: E402
from rnic_launch.run import Launcher  # noqa: E402


def launch(argv):
    """[(qemu argv, guest env dict)] of every VM the launcher would start."""
    with tempfile.TemporaryDirectory() as d:
        args = parse_args(["--cmd", "true", "--qemu", "/bin/true",
                           "--workdir", d, "-q"] + argv)
        launcher = Launcher(args)
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


def refused(argv):
    """Whether the launcher's command line refuses argv (status 2)."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            parse_args(["--cmd", "true"] + argv)
        except SystemExit as e:
            return e.code == 2
    return False

# The greeting as QEMU 10.0 sends it on a monitor without out-of-band
# commands (qmp-spec: a "version" and a "capabilities" member).
QMP_GREETING = (b'{"QMP": {"version": {"qemu": {"micro": 0, "minor": 0, "major": 10}, '
                b'"package": ""}, "capabilities": []}}\n')


def qmp_reply(cmd, reply):
    """The line that answers cmd with reply (its "return" or "error"):
    with cmd's "id", which a QMP server echoes and QEMU's client matches
    its replies by."""
    if "id" in cmd:
        reply = dict(reply, id=cmd["id"])
    return json.dumps(reply).encode() + b"\n"


def qmp_commands(conn):
    """The commands a client sends on the socket conn, one by one, until
    it hangs up.  QMP is a stream of JSON objects, not of lines: QEMU
    parses it as such, and its own client ends a command with no newline."""
    decoder = json.JSONDecoder()
    buf = ""
    while True:
        data = conn.recv(4096)
        if not data:
            return
        buf += data.decode()
        while buf.strip():
            try:
                cmd, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                break               # the rest of the object is on its way
            buf = buf.lstrip()[end:]
            yield cmd
