# SPDX-License-Identifier: GPL-2.0-or-later
#
# What the launcher's unit tests share: the launcher's package,
# scripts/rnic_launch, importable from tests/unit, where meson runs them,
# and from anywhere else; and what their stand-in QMP servers say.

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))

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
