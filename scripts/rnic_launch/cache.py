# SPDX-License-Identifier: GPL-2.0-or-later
"""The record of passed runs (--result-cache): a run whose inputs all
match those of a run that passed is not run again."""

import glob
import hashlib
import os
import time

from .paths import rel

PACKAGE = os.path.dirname(os.path.abspath(__file__))


def launcher_sources():
    """The launcher's own code, the entry point and every module: a change
    to any of them may change what a run does."""
    return ([os.path.join(os.path.dirname(PACKAGE), "vmlaunch.py")]
            + sorted(glob.glob(os.path.join(PACKAGE, "*.py"))))


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
        texts = launcher_sources()
        if args.script:
            texts.append(args.script)
        for path in texts:
            with open(path, "rb") as f:
                h.update(f.read())
    except OSError:
        return None
    h.update("\0".join(a for a in argv if not a.startswith("--result-cache")).encode())
    return h.hexdigest()[:32]


def pass_stamp(args, argv):
    """The file that records a pass of this run's inputs; None when passes
    are not recorded (no --result-cache, RNIC_TEST_NOCACHE set, or an
    input that cannot be read)."""
    if not args.result_cache or os.environ.get("RNIC_TEST_NOCACHE"):
        return None
    key = result_key(args, argv)
    if not key:
        return None
    return os.path.join(args.result_cache, "%s-%s.pass" % (args.name, key))


def passed_before(stamp):
    """When a run with these inputs passed (the stamp's text), or None."""
    if not stamp or not os.path.exists(stamp):
        return None
    with open(stamp, encoding="utf-8") as f:
        return f.read().strip()


def record_pass(stamp, workdir):
    os.makedirs(os.path.dirname(stamp), exist_ok=True)
    with open(stamp, "w", encoding="utf-8") as f:
        f.write("%s, run directory %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"),
                                             rel(workdir)))
