# SPDX-License-Identifier: GPL-2.0-or-later
#
# What the launcher's unit tests share: scripts/vmlaunch.py importable as
# "vmlaunch", and a tally of named checks that prints each one and gives
# the test's exit status.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
import vmlaunch  # noqa: E402,F401  (re-exported for the tests)


class Checks:
    def __init__(self):
        self.failures = 0

    def __call__(self, what, ok):
        print("%s: %s" % ("ok" if ok else "FAILED", what))
        self.failures += not ok

    def status(self, name):
        """Prints the summary line; the exit status (1 on any failure)."""
        print("%s: %s" % (name, "OK" if not self.failures
                          else "%d failures" % self.failures))
        return 1 if self.failures else 0
