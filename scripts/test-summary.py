#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Print 'N passed, N failed' (', N skipped') from meson's testlog.json."""

import json
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def main(path):
    passed = failed = skipped = 0
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                result = json.loads(line).get("result", "")
                if result in PASS:
                    passed += 1
                elif result in SKIP:
                    skipped += 1
                else:
                    failed += 1
    except OSError as e:
        print("cannot read %s: %s" % (path, e), file=sys.stderr)
        return 1
    if passed + failed + skipped == 0:
        return 1
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
