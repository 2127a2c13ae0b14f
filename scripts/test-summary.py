#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The end of README command 2: timings, the time budget, and the count.

    test-summary.py TESTLOG.json [--started EPOCH] [--budget FILE]

Reads meson's testlog.json and prints

  * each suite's wall time (first start to last end; tests of a suite run
    side by side), slowest first, and the slowest tests;
  * with --started (when command 2 began, build included) its total time;
  * with --budget, a check named time-budget: it fails when the slowest VM
    test or the total passes the limits kept in that file, so that the
    suite's growth shows on the day it happens, not when CI's hard stop
    cuts a run short;
  * last, 'N passed, N failed' (', N skipped'), the time-budget check
    counted among them.
"""

import argparse
import json
import sys
import time

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}
SLOWEST_SHOWN = 12


class Result:
    """One test of the log: its suite, name, outcome and times."""

    def __init__(self, rec):
        full = rec.get("name", "?")
        # meson names a test "project:suite / name".
        head, _, name = full.partition(" / ")
        self.suite = head.split(":")[-1] if name else "?"
        self.name = name or full
        self.result = rec.get("result", "")
        self.start = float(rec.get("starttime") or 0.0)
        self.duration = float(rec.get("duration") or 0.0)

    @property
    def end(self):
        return self.start + self.duration


def load(path):
    results = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                results.append(Result(json.loads(line)))
    return results


def suite_walls(results):
    """{suite: seconds from its first start to its last end}."""
    spans = {}
    for r in results:
        lo, hi = spans.get(r.suite, (r.start, r.end))
        spans[r.suite] = (min(lo, r.start), max(hi, r.end))
    return {s: hi - lo for s, (lo, hi) in spans.items()}


def check_budget(results, total, budget):
    """(ok, text): the slowest VM test and the total against the limits."""
    vm = [r for r in results if r.suite == "vm"]
    slowest = max(vm, key=lambda r: r.duration, default=None)
    problems = []
    parts = []
    limit = budget.get("slowest_vm_test_s")
    if limit is not None and slowest is not None:
        parts.append("slowest VM test %s %.0f s (limit %d s)"
                     % (slowest.name, slowest.duration, limit))
        if slowest.duration > limit:
            problems.append("VM test %s took %.0f s, over %d s"
                            % (slowest.name, slowest.duration, limit))
    limit = budget.get("total_s")
    if limit is not None and total is not None:
        parts.append("total %.0f s (limit %d s)" % (total, limit))
        if total > limit:
            problems.append("command 2 took %.0f s, over %d s" % (total, limit))
    if problems:
        return False, "time-budget: FAILED: " + "; ".join(problems)
    return True, "time-budget: ok: " + ", ".join(parts or ["nothing to check"])


def report(results, total=None, budget=None):
    """(lines, passed, failed, skipped) for the whole run."""
    lines = ["wall time per suite:"]
    for suite, wall in sorted(suite_walls(results).items(), key=lambda kv: -kv[1]):
        n = sum(1 for r in results if r.suite == suite)
        lines.append("  %7.1f s  %-6s (%d test%s)" % (wall, suite, n, "" if n == 1 else "s"))
    lines.append("slowest tests:")
    for r in sorted(results, key=lambda r: -r.duration)[:SLOWEST_SHOWN]:
        lines.append("  %7.1f s  %-6s %s" % (r.duration, r.suite, r.name))
    if total is not None:
        lines.append("command total: %.0f s (%.1f min), build included" % (total, total / 60))

    passed = sum(1 for r in results if r.result in PASS)
    skipped = sum(1 for r in results if r.result in SKIP)
    failed = len(results) - passed - skipped
    if budget is not None:
        ok, text = check_budget(results, total, budget)
        lines.append(text)
        passed += ok
        failed += not ok
    count = "%d passed, %d failed" % (passed, failed)
    if skipped:
        count += ", %d skipped" % skipped
    lines.append(count)
    return lines, passed, failed, skipped


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("testlog")
    p.add_argument("--started", type=float, help="epoch seconds command 2 began")
    p.add_argument("--budget", help="JSON file with the time limits")
    a = p.parse_args(argv)
    try:
        results = load(a.testlog)
        budget = None
        if a.budget:
            with open(a.budget, encoding="utf-8") as f:
                budget = json.load(f)
    except (OSError, ValueError) as e:
        print("test-summary: %s" % e, file=sys.stderr)
        return 1
    if not results:
        return 1
    total = time.time() - a.started if a.started else None
    lines, _, _, _ = report(results, total, budget)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
