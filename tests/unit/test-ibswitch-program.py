#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rnic-ibswitch as a program, over the sockets QEMU's stream netdevs use:
# a subnet manager's SMPs answered through a real socket, a fabric
# programmed and forwarding, a port that stops reading holding its
# sender back with nothing lost, a link going down reported to the SM
# with Trap 128, and the counters it writes.
#
# The frames are built here from the IBA layouts with Python's own CRCs
# (zlib's CRC-32 for the ICRC, a bit-serial CRC-16 for the VCRC), not
# with the C code under test.
#
# usage: test-ibswitch-program.py PATH-TO-rnic-ibswitch

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

SWITCH = None

ETH_IB = 0x88b5
SM_PORT, SW_LID, SM_LID = 1, 1, 2


def vcrc(data):
    crc = 0xffff
    for byte in data:
        for bit in range(8):
            top = crc & 1
            crc >>= 1
            if top ^ ((byte >> bit) & 1):
                crc ^= 0xd008
    return crc ^ 0xffff


def icrc_local(pkt):
    m = bytearray(pkt[:20])
    m[0] |= 0xf0                # LRH.VL
    m[8 + 4] = 0xff             # BTH.resv8a
    return zlib.crc32(bytes(m) + pkt[20:]) & 0xffffffff


def ib_frame(vl, dlid, slid, dqpn, payload):
    """Ethernet header + LRH + BTH (UD SEND_ONLY) + DETH + payload + CRCs."""
    pad = (-len(payload)) % 4
    body_len = 8 + 12 + 8 + len(payload) + pad + 4
    lrh = struct.pack(">BBHHH", vl << 4, 2, dlid, body_len // 4, slid)
    bth = struct.pack(">BBHI I", 0x64, pad << 4, 0xffff, dqpn, 0)
    deth = bytes(8)
    pkt = lrh + bth + deth + payload + bytes(pad)
    pkt += struct.pack("<I", icrc_local(pkt))
    pkt += struct.pack("<H", vcrc(pkt))
    eth = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x09" + struct.pack(">H", ETH_IB)
    return eth + pkt


def check_frame(test, f):
    pkt = f[14:]
    test.assertEqual(struct.unpack(">H", f[12:14])[0], ETH_IB)
    test.assertEqual(struct.unpack("<H", pkt[-2:])[0], vcrc(pkt[:-2]))
    test.assertEqual(struct.unpack("<I", pkt[-6:-2])[0], icrc_local(pkt[:-6]))
    test.assertEqual((struct.unpack(">H", pkt[4:6])[0] & 0x7ff) * 4,
                     len(pkt) - 2)


MAD = 14 + 8 + 12 + 8


def dr_smp(method, attr, mod, path, data=bytes(64)):
    mad = bytearray(256)
    mad[0:4] = bytes([1, 0x81, 1, method])
    mad[6], mad[7] = 1, len(path) - 1
    mad[8:16] = struct.pack(">Q", 0x5eed)
    mad[16:18] = struct.pack(">H", attr)
    mad[20:24] = struct.pack(">I", mod)
    mad[32:36] = b"\xff\xff\xff\xff"
    mad[64:128] = data
    mad[128:128 + len(path)] = bytes(path)
    return ib_frame(15, 0xffff, 0xffff, 0, bytes(mad))


def slurp(path):
    with open(path) as f:
        return f.read()


class Port:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        for _ in range(100):
            try:
                self.s.connect(path)
                break
            except OSError:
                time.sleep(0.05)
        self.buf = b""

    def send(self, frame):
        self.s.sendall(struct.pack(">I", len(frame)) + frame)

    def recv(self, timeout=5.0):
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    f, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return f
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("switch closed the link")
            self.buf += chunk

    def close(self):
        self.s.close()


class SwitchTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ibsw-")
        self.stats = os.path.join(self.dir, "stats")
        self.proc = subprocess.Popen(
            [SWITCH, "--ports", "3", "--listen", "unix:%s/sw" % self.dir,
             "--credits", "4", "--stats", self.stats, "--desc", "sw-under-test"])
        self.ports = {i: Port("%s/sw.%d" % (self.dir, i)) for i in (1, 2, 3)}

    def tearDown(self):
        for p in self.ports.values():
            p.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sma(self, method, attr, mod, data=bytes(64)):
        self.ports[SM_PORT].send(dr_smp(method, attr, mod, [0, SM_PORT], data))
        r = self.ports[SM_PORT].recv()
        check_frame(self, r)
        mad = r[MAD:MAD + 256]
        self.assertEqual(mad[3], 0x81)
        self.assertEqual(struct.unpack(">Q", mad[8:16])[0], 0x5eed)
        status = struct.unpack(">H", mad[4:6])[0]
        self.assertTrue(status & 0x8000)
        return status & 0x7fff, bytearray(mad[64:128])

    def set_state(self, port, state):
        st, d = self.sma(1, 0x15, port)
        self.assertEqual(st, 0)
        d[32] = (d[32] & 0xf0) | state
        d[33] &= 0x0f
        if port:
            d[36] = 5 << 4
        st, d = self.sma(2, 0x15, port, bytes(d))
        self.assertEqual(st, 0)
        self.assertEqual(d[32] & 0xf, state)

    def program(self):
        st, d = self.sma(1, 0x15, 0)
        d[16:20] = struct.pack(">HH", SW_LID, SM_LID)
        self.assertEqual(self.sma(2, 0x15, 0, bytes(d))[0], 0)
        st, d = self.sma(1, 0x12, 0)
        d[6:8] = struct.pack(">H", 4)
        self.assertEqual(self.sma(2, 0x12, 0, bytes(d))[0], 0)
        lft = bytearray(b"\xff" * 64)
        lft[1:5] = bytes([0, 1, 2, 3])
        self.assertEqual(self.sma(2, 0x19, 0, bytes(lft))[0], 0)
        for port in (1, 2, 3):
            self.set_state(port, 3)
            self.set_state(port, 4)

    def read_stats(self):
        if os.path.exists(self.stats):
            os.unlink(self.stats)
        self.proc.send_signal(signal.SIGUSR1)
        for _ in range(100):
            if os.path.exists(self.stats) and slurp(self.stats).count("\n") >= 5:
                break
            time.sleep(0.05)
        return slurp(self.stats)

    def test_sma_over_socket(self):
        st, d = self.sma(1, 0x11, 0)
        self.assertEqual(st, 0)
        self.assertEqual(d[2], 2)           # NodeType: switch
        self.assertEqual(d[3], 3)           # NumPorts
        self.assertEqual(d[36], SM_PORT)    # LocalPortNum
        st, d = self.sma(1, 0x10, 0)
        self.assertEqual(bytes(d).rstrip(b"\0"), b"sw-under-test")
        # Through the switch to the CA on port 2, and nothing else.
        self.ports[1].send(dr_smp(1, 0x11, 0, [0, 1, 2]))
        r = self.ports[2].recv()
        check_frame(self, r)
        self.assertEqual(r[MAD + 6], 2)                 # hop pointer
        self.assertEqual(r[MAD + 192 + 1], 1)           # return path

    def test_forward_and_backpressure(self):
        self.program()
        # Port 3 does not read while port 1 sends 600 frames of 4 KiB.
        n, size = 600, 4096
        frames = [ib_frame(0, 4, SM_LID, 0x11, bytes([i & 0xff]) * size)
                  for i in range(n)]
        done = threading.Event()

        def sender():
            for f in frames:
                self.ports[1].send(f)
            done.set()

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        # The switch holds 4 frames, the sockets a few hundred KiB: the
        # sender must be stuck well before 600 x 4 KiB are out.
        time.sleep(1.5)
        self.assertFalse(done.is_set(), "the sender was never held back")
        stats = self.read_stats()
        self.assertRegex(stats, r"port 1 .*held [1-9]")
        for i in range(n):
            f = self.ports[3].recv()
            self.assertEqual(f, frames[i], "frame %d differs" % i)
        t.join(10)
        self.assertTrue(done.is_set())
        stats = self.read_stats()
        port1 = [l for l in stats.splitlines() if l.startswith("port 1 ")][0]
        for counter in ("malformed", "unknown-dlid", "out-port-not-active"):
            self.assertRegex(port1, r"\b%s 0\b" % counter)
        self.assertRegex(stats, r"port 3 state 4 phys 5 rx \d+ tx %d\b" % n)

    def test_drops_counted(self):
        self.program()
        self.ports[1].send(ib_frame(0, 9, SM_LID, 0x11, b"x" * 64))  # no LFT entry
        bad = bytearray(ib_frame(0, 3, SM_LID, 0x11, b"y" * 64))
        bad[-1] ^= 1                                                   # VCRC
        self.ports[1].send(bytes(bad))
        good = ib_frame(0, 3, SM_LID, 0x11, b"z" * 64)
        self.ports[1].send(good)
        self.assertEqual(self.ports[2].recv(), good)
        stats = self.read_stats()
        self.assertRegex(stats, r"port 1 .* malformed 1 .*unknown-dlid 1\b")

    def test_link_down_trap(self):
        self.program()
        self.ports[3].close()
        r = self.ports[SM_PORT].recv()
        check_frame(self, r)
        self.assertEqual(struct.unpack(">H", r[14 + 2:14 + 4])[0], SM_LID)
        mad = r[MAD:MAD + 256]
        self.assertEqual(mad[3], 0x05)                          # Trap
        self.assertEqual(struct.unpack(">H", mad[16:18])[0], 0x0002)
        self.assertEqual(struct.unpack(">H", mad[64 + 4:64 + 6])[0], 128)
        st, d = self.sma(1, 0x15, 3)
        self.assertEqual(d[32] & 0xf, 1)                        # DOWN
        # A peer coming back finds the port in INIT.
        self.ports[3] = Port("%s/sw.3" % self.dir)
        self.ports[SM_PORT].recv()                              # the trap
        st, d = self.sma(1, 0x15, 3)
        self.assertEqual(d[32] & 0xf, 2)

    def test_exit(self):
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(10), 0)
        self.assertFalse(os.path.exists("%s/sw.1" % self.dir))
        self.assertIn("port 1 state", slurp(self.stats))


if __name__ == "__main__":
    SWITCH = os.path.abspath(sys.argv.pop(1))
    unittest.main()
