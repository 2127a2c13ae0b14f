#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The end of README command 2 (scripts/test-summary.py): its timing table,
its count and the time-budget check, on made-up meson test logs; and the
budget file kept in the repo, which must say what the README promises."""

import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

_spec = importlib.util.spec_from_file_location(
    "test_summary", os.path.join(ROOT, "scripts", "test-summary.py"))
summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary)


def rec(suite, name, start, duration, result="OK"):
    return {"name": "rnic:%s / %s" % (suite, name), "result": result,
            "starttime": start, "duration": duration}


def results(*recs):
    return [summary.Result(r) for r in recs]


BUDGET = {"total_s": 3300, "slowest_vm_test_s": 300}


class SummaryTest(unittest.TestCase):
    def test_side_by_side_suite_wall_time(self):
        # Two VM tests of 100 s each, started 50 s apart: 150 s of wall
        # time, not 200.
        rs = results(rec("vm", "a", 1000.0, 100.0), rec("vm", "b", 1050.0, 100.0),
                     rec("unit", "u", 990.0, 5.0))
        walls = summary.suite_walls(rs)
        self.assertAlmostEqual(walls["vm"], 150.0)
        self.assertAlmostEqual(walls["unit"], 5.0)

    def test_counts_and_order(self):
        rs = results(rec("vm", "fast", 0, 10.0), rec("vm", "slow", 0, 200.0),
                     rec("unit", "bad", 0, 1.0, "FAIL"), rec("unit", "skip", 0, 0, "SKIP"))
        lines, passed, failed, skipped = summary.report(rs)
        self.assertEqual((passed, failed, skipped), (2, 1, 1))
        self.assertEqual(lines[-1], "2 passed, 1 failed, 1 skipped")
        slow = [i for i, l in enumerate(lines) if l.endswith(" slow")]
        fast = [i for i, l in enumerate(lines) if l.endswith(" fast")]
        self.assertTrue(slow and fast and slow[0] < fast[0], lines)

    def test_budget_met_counts_as_a_pass(self):
        rs = results(rec("vm", "a", 0, 299.0), rec("unit", "u", 0, 400.0))
        lines, passed, failed, _ = summary.report(rs, total=3000, budget=BUDGET)
        self.assertEqual((passed, failed), (3, 0))
        self.assertTrue(any(l.startswith("time-budget: ok") for l in lines), lines)

    def test_slow_vm_test_fails_the_run(self):
        # A unit test over 300 s is not a VM test; the VM test over it is.
        rs = results(rec("vm", "a", 0, 301.0), rec("unit", "u", 0, 900.0))
        lines, passed, failed, _ = summary.report(rs, total=1000, budget=BUDGET)
        self.assertEqual((passed, failed), (2, 1))
        self.assertIn("VM test a took 301 s", "\n".join(lines))
        self.assertEqual(lines[-1], "2 passed, 1 failed")

    def test_long_total_fails_the_run(self):
        rs = results(rec("vm", "a", 0, 10.0))
        lines, passed, failed, _ = summary.report(rs, total=3301, budget=BUDGET)
        self.assertEqual((passed, failed), (1, 1))
        self.assertIn("command 2 took 3301 s", "\n".join(lines))

    def test_main_prints_count_last(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "testlog.json")
            with open(log, "w", encoding="utf-8") as f:
                for r in (rec("vm", "a", 0, 1.0), rec("unit", "b", 0, 1.0)):
                    f.write(json.dumps(r) + "\n")
            self.assertEqual(summary.main([log]), 0)
            self.assertEqual(summary.main([os.path.join(d, "missing.json")]), 1)

    def test_repo_budget_keeps_the_readme_promise(self):
        # Command 2 must end within 60 minutes, build included.
        with open(os.path.join(ROOT, "tests", "time-budget.json"), encoding="utf-8") as f:
            budget = json.load(f)
        self.assertLessEqual(budget["total_s"], 3600)
        self.assertLess(budget["slowest_vm_test_s"], budget["total_s"])


if __name__ == "__main__":
    unittest.main()
