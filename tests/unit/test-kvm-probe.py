#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's KVM probe against fake QEMUs: KVM is chosen only when the
# probe quits cleanly and, given a guest kernel, only when that kernel got
# as far as its expected panic; a QEMU that hangs (as on hosts whose
# /dev/kvm hangs), one stuck on a "KVM internal error" in the guest
# kernel, one that aborts, and a missing or unusable device give TCG.

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
    # Boots the guest kernel, which panics without a root file system.
    "boots": 'echo "[    1.2] Kernel panic - not syncing: VFS: Unable to mount root fs"; exit 0',
    # Stops the guest kernel with an emulation failure, then sits paused.
    "internal-error": 'echo "KVM internal error. Suberror: 1" >&2; exec sleep 60',
    # Exits at once, the kernel never having printed a thing.
    "silent": "exit 0",
    # A build tree's binary: no BIOS unless -L names the firmware.
    "needs-bios": 'case " $* " in *" -L /fw "*) ;; *) exit 1 ;; esac; '
                  'echo "Kernel panic - not syncing"; exit 0',
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
        kernel = os.path.join(d, "vmlinuz")
        with open(kernel, "w"):
            pass
        cases = [
            ("works", fakes["works"], dev, None, True),
            ("hangs", fakes["hangs"], dev, None, False),
            ("aborts", fakes["aborts"], dev, None, False),
            ("no device", fakes["works"], os.path.join(d, "none"), None, False),
            ("kernel boots", fakes["boots"], dev, kernel, True),
            ("kernel hits an internal error", fakes["internal-error"], dev, kernel, False),
            ("kernel silent", fakes["silent"], dev, kernel, False),
            ("kernel hangs", fakes["hangs"], dev, kernel, False),
            ("kernel, no device", fakes["boots"], os.path.join(d, "none"), kernel, False),
            ("firmware dirs passed", fakes["needs-bios"], dev, kernel, True, ["/fw"]),
            ("firmware dirs missing", fakes["needs-bios"], dev, kernel, False, []),
        ]
        for name, qemu, kvm_dev, kern, want, *fw in cases:
            t0 = time.monotonic()
            works, why = vmlaunch.kvm_probe(qemu, kvm_dev=kvm_dev, timeout=3,
                                            use_cache=False, kernel=kern,
                                            firmware_dirs=fw[0] if fw else ())
            secs = time.monotonic() - t0
            ok = works == want and secs < 10
            print("%s: %s (%s, %.1fs)" % ("ok" if ok else "FAILED", name, why, secs))
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
