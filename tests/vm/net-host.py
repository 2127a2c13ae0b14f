#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The host's side of the network tests that need one.

  net-host.py http [--size BYTES] -- LAUNCHER ARGS...
      An HTTP server on 127.0.0.1 (slirp's 10.0.2.2 in a --net user guest)
      for the launcher's run: GET /blob answers random bytes, PUT /upload
      answers the SHA-256 of what it got.  The guest learns the server from
      RNIC_HOST_URL, RNIC_HOST_BLOB_SHA256 and RNIC_HOST_BLOB_SIZE.  Passes
      when the launcher passes and the server got a whole upload.

  net-host.py pair [--host HOST] [--port PORT] [--workdir DIR] -- LAUNCHER ARGS...
      Two launchers, one with --listen HOST:PORT (VM 0), one with
      --connect HOST:PORT (VM 1), as two hosts would run them; PORT and
      PORT+1 must be free (default: a free pair on 127.0.0.1).  With
      --workdir, their run directories are DIR/listen and DIR/connect.
      Passes when both launchers pass.

LAUNCHER is scripts/vmlaunch.py (run with this Python); ARGS go to it.
"""

import argparse
import ctypes
import hashlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1


def term_with_parent():
    """preexec_fn: a launcher gets SIGTERM (and cleans up) when we die."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Children:
    """Launchers we started; SIGTERM/SIGINT end them, then us."""

    def __init__(self):
        self.procs = []
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, self.on_signal)

    def start(self, argv):
        print("net-host: $ " + " ".join(argv), flush=True)
        p = subprocess.Popen([sys.executable] + argv, preexec_fn=term_with_parent)
        self.procs.append(p)
        return p

    def on_signal(self, signum, _frame):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        sys.exit(128 + signum)


def cmd_http(opts, argv):
    blob = os.urandom(opts.size)
    blob_sha = hashlib.sha256(blob).hexdigest()
    uploads = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self, code, body):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path != "/blob":
                return self.reply(404, b"")
            return self.reply(200, blob)

        def do_PUT(self):
            if self.path != "/upload":
                return self.reply(404, b"")
            want = int(self.headers.get("Content-Length", "0"))
            data = self.rfile.read(want)
            sha = hashlib.sha256(data).hexdigest()
            if len(data) == want:
                uploads.append((len(data), sha))
            return self.reply(200, sha.encode() + b"\n")

        def log_message(self, fmt, *args):
            print("net-host: http: %s %s" % (self.client_address[0], fmt % args),
                  flush=True)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("net-host: HTTP server on 127.0.0.1:%d (10.0.2.2:%d for the guest), "
          "blob of %d bytes, SHA-256 %s" % (port, port, len(blob), blob_sha), flush=True)
    env = ["--env", "RNIC_HOST_URL=http://10.0.2.2:%d" % port,
           "--env", "RNIC_HOST_BLOB_SHA256=" + blob_sha,
           "--env", "RNIC_HOST_BLOB_SIZE=%d" % len(blob)]
    rc = Children().start(argv + env).wait()
    server.shutdown()
    if rc == 0 and not uploads:
        print("net-host: FAILED: the launcher passed, but no upload reached the host",
              file=sys.stderr, flush=True)
        return 1
    for size, sha in uploads:
        print("net-host: the guest uploaded %d bytes, SHA-256 %s" % (size, sha))
    return rc


def free_port_pair(host):
    """A port P with P and P+1 both free on host (for a moment)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(50):
        with socket.socket(fam) as a, socket.socket(fam) as b:
            a.bind((host, 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            try:
                b.bind((host, port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two free neighbouring ports on %s" % host)


def cmd_pair(opts, argv):
    port = opts.port or free_port_pair(opts.host)
    where = "%s:%d" % ("[%s]" % opts.host if ":" in opts.host else opts.host, port)
    kids = Children()
    procs = []
    for side in ("listen", "connect"):
        extra = ["--" + side, where]
        if opts.workdir:
            extra += ["--workdir", os.path.join(opts.workdir, side)]
        procs.append((side, kids.start(argv + extra)))
    rcs = [(side, p.wait()) for side, p in procs]
    print("net-host: " + ", ".join("the --%s launcher ended with status %d" % r
                                   for r in rcs), flush=True)
    return 0 if all(rc == 0 for _, rc in rcs) else 1


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    cut = sys.argv.index("--")
    argv = sys.argv[cut + 1:]
    p = argparse.ArgumentParser(prog="net-host.py",
                                description="The host's side of network tests.")
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("http", help="an HTTP server for a --net user guest")
    h.add_argument("--size", type=int, default=2 << 20, help="blob bytes (default 2 MiB)")
    t = sub.add_parser("pair", help="two launchers joined over TCP")
    t.add_argument("--host", default="127.0.0.1")
    t.add_argument("--port", type=int)
    t.add_argument("--workdir")
    opts = p.parse_args(sys.argv[1:cut])
    if not argv:
        p.error("no launcher after --")
    return (cmd_http if opts.cmd == "http" else cmd_pair)(opts, argv)


if __name__ == "__main__":
    sys.exit(main())
