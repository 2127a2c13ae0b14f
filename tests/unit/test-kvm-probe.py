#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's KVM probe against fake QEMUs: KVM is chosen only when the
# probe quits cleanly and, given a guest kernel, only when that kernel got
# as far as its expected panic; a QEMU that hangs (as on hosts whose
# /dev/kvm hangs), one stuck on a "KVM internal error" in the guest
# kernel, one that aborts, and a missing or unusable device give TCG.

import gc
import os
import tempfile
import time
import unittest
import warnings

import launcher_checks  # noqa: F401  (puts the launcher on sys.path)
from rnic_launch.kvm import kvm_probe

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


class KvmProbeTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = tmp.name
        self.dev = os.path.join(d, "kvm")
        self.none = os.path.join(d, "none")
        with open(self.dev, "w"):
            pass
        self.fakes = {}
        for name, body in FAKES.items():
            path = os.path.join(d, "qemu-" + name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(path, 0o755)
            self.fakes[name] = path
        self.kernel = os.path.join(d, "vmlinuz")
        with open(self.kernel, "w"):
            pass

    def probe(self, fake, kvm_dev, kernel, want, firmware_dirs=()):
        """The probe's answer is 'want', and comes well within the time
        the suite gives it, however the fake behaves."""
        t0 = time.monotonic()
        # The probe abandons a child that hangs, unreaped, by design (one
        # stuck in the kernel may not even die): no warning for that.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            works, why = kvm_probe(self.fakes[fake], kvm_dev=kvm_dev, timeout=3,
                                   use_cache=False, kernel=kernel,
                                   firmware_dirs=firmware_dirs)
            gc.collect()
        secs = time.monotonic() - t0
        self.assertEqual(works, want, why)
        self.assertLess(secs, 10, why)

    def test_without_kernel(self):
        cases = [("works", "works", self.dev, True),
                 ("hangs", "hangs", self.dev, False),
                 ("aborts", "aborts", self.dev, False),
                 ("no device", "works", self.none, False)]
        for name, fake, dev, want in cases:
            with self.subTest(name):
                self.probe(fake, dev, None, want)

    def test_with_kernel(self):
        cases = [("kernel boots", "boots", self.dev, True),
                 ("kernel hits an internal error", "internal-error", self.dev, False),
                 ("kernel silent", "silent", self.dev, False),
                 ("kernel hangs", "hangs", self.dev, False),
                 ("kernel, no device", "boots", self.none, False)]
        for name, fake, dev, want in cases:
            with self.subTest(name):
                self.probe(fake, dev, self.kernel, want)

    def test_firmware_dirs(self):
        with self.subTest("firmware dirs passed"):
            self.probe("needs-bios", self.dev, self.kernel, True, ["/fw"])
        with self.subTest("firmware dirs missing"):
            self.probe("needs-bios", self.dev, self.kernel, False, [])


if __name__ == "__main__":
    unittest.main()
