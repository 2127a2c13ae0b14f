#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's KVM probe against fake QEMUs: KVM is chosen only when the
# probe quits cleanly; a QEMU that hangs (as on hosts whose /dev/kvm
# hangs), one that aborts, and a missing or unusable device give TCG.

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import vmlaunch  # noqa: E402

FAKES = {
    # Answers the monitor: quits when told to.
    "works": 'while read -r l; do [ "$l" = quit ] && exit 0; done; exit 1',
    # Never answers.
    "hangs": "exec sleep 60",
    # Aborts at the first vCPU register load.
    "aborts": "kill -ABRT $$",
}


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        dev = os.path.join(d, "kvm")
        with open(dev, "w"):
            pass
        fakes = {}
        for name, body in FAKES.items():
            path = os.path.join(d, "qemu-" + name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(path, 0o755)
            fakes[name] = path
        cases = [
            ("works", fakes["works"], dev, True),
            ("hangs", fakes["hangs"], dev, False),
            ("aborts", fakes["aborts"], dev, False),
            ("no device", fakes["works"], os.path.join(d, "none"), False),
        ]
        for name, qemu, kvm_dev, want in cases:
            t0 = time.monotonic()
            works, why = vmlaunch.kvm_probe(qemu, kvm_dev=kvm_dev, timeout=3,
                                            use_cache=False)
            secs = time.monotonic() - t0
            ok = works == want and secs < 10
            print("%s: %s (%s, %.1fs)" % ("ok" if ok else "FAILED", name, why, secs))
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
