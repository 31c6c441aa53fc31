"""The stack each application deployment runs: its entries (pods), the
requests and limits they add up to, where a merged pod's figures come from,
the callees a plan drops, and the declared entry points it keeps."""

import unittest

from helpers import BENCH  # noqa: F401  (makes fmbench importable)

from fmbench.appbuild import stack_functions
from fmbench.appstack import (FROM_PLAN, MEMBERS_SUM, declared_entries, deployment_stack, missing_entries,
                              planned_deployment, totals)

MI = 1024 * 1024
FUNCTIONS = [
    {"name": "a", "memory_bytes": 64 * MI, "cpu": 0.2, "requests_memory_bytes": 16 * MI, "requests_cpu": 0.02},
    {"name": "b", "memory_bytes": 32 * MI, "cpu": 0.1, "requests_memory_bytes": 8 * MI, "requests_cpu": 0.01},
    {"name": "c", "memory_bytes": 32 * MI, "cpu": 0.1, "requests_memory_bytes": 8 * MI, "requests_cpu": 0.01},
    {"name": "d", "memory_bytes": 16 * MI, "cpu": 0.1, "requests_memory_bytes": 4 * MI, "requests_cpu": 0.01},
]
GROUP = {"name": "a-merged", "members": ["a", "b", "c"]}


class Stack(unittest.TestCase):
    def test_unmerged_is_every_functions_own_entry(self):
        t = totals(deployment_stack(FUNCTIONS, []))
        self.assertEqual(t["pods"], 4)
        self.assertEqual(t["requests"]["memory"], 36 * MI)
        self.assertAlmostEqual(t["requests"]["cpu"], 0.05)
        self.assertEqual(t["limits"]["memory"], 144 * MI)
        self.assertAlmostEqual(t["limits"]["cpu"], 0.5)

    def test_a_merged_pod_takes_its_callers_place_with_the_members_sum(self):
        s = deployment_stack(FUNCTIONS, [GROUP])
        self.assertEqual([e["name"] for e in s], ["a", "b", "c", "d"])
        self.assertEqual((s[0]["members"], s[0]["source"]), (["a", "b", "c"], MEMBERS_SUM))
        t = totals(s)
        self.assertEqual(t["pods"], 4)  # every callee stays deployed
        self.assertEqual(t["requests"]["memory"], (32 + 8 + 8 + 4) * MI)
        self.assertEqual(t["limits"]["memory"], (128 + 32 + 32 + 16) * MI)

    def test_the_plans_dropped_callees_and_pod_figures_are_what_runs(self):
        planned = {"dropped": ["b", "c"], "pods": {"a": {"requests": {"memory": 20 * MI, "cpu": 0.03},
                                                         "limits": {"memory": 64 * MI, "cpu": 0.2}}}}
        s = deployment_stack(FUNCTIONS, [GROUP], planned)
        self.assertEqual([e["name"] for e in s], ["a", "d"])
        self.assertEqual(s[0]["source"], FROM_PLAN)
        t = totals(s)
        self.assertEqual((t["pods"], t["requests"]["memory"], t["limits"]["memory"]), (2, 24 * MI, 80 * MI))

    def test_a_caller_the_plan_drops_keeps_its_route(self):
        s = deployment_stack(FUNCTIONS, [GROUP], {"dropped": ["a", "b"], "pods": {}})
        self.assertEqual([e["name"] for e in s], ["a", "c", "d"])

    def test_a_figure_some_entry_lacks_adds_up_to_none(self):
        functions = [dict(FUNCTIONS[0]), {"name": "x", "memory_bytes": 8 * MI, "cpu": 0.1}]
        t = totals(deployment_stack(functions, []))
        self.assertIsNone(t["requests"]["memory"])
        self.assertEqual(t["limits"]["memory"], 72 * MI)
        merged = deployment_stack(functions, [{"name": "a-merged", "members": ["a", "x"]}])
        self.assertIsNone(merged[0]["requests"]["memory"])  # fmerge keeps the caller's then: not guessed


class Planned(unittest.TestCase):
    def test_plan_json_without_a_deployment_says_nothing(self):
        self.assertIsNone(planned_deployment({"entries": [], "reserved": []}))
        self.assertIsNone(planned_deployment(None))

    def test_plan_json_deployment_is_read_into_pods_and_dropped(self):
        doc = {"deployment": {"dropped": ["b"], "pods": [
            {"name": "a", "requests": {"memory_bytes": 20 * MI, "cpu": 0.03}, "limits": {"memory_bytes": 64 * MI, "cpu": 0.2}}]}}
        self.assertEqual(planned_deployment(doc), {
            "dropped": ["b"], "pods": {"a": {"requests": {"memory": 20 * MI, "cpu": 0.03},
                                             "limits": {"memory": 64 * MI, "cpu": 0.2}}}})


class Entries(unittest.TestCase):
    def test_every_declared_entry_point_is_a_function_of_the_stack(self):
        names = stack_functions(BENCH.parent / "functions" / "stack.yml")
        declared = declared_entries()
        self.assertEqual([e for e in declared if e not in names], [])
        for e in ("compose-post", "read-home-timeline", "read-user-timeline"):  # the workloads' too
            self.assertIn(e, declared)

    def test_an_entry_point_merged_away_is_missing(self):
        s = deployment_stack(FUNCTIONS, [GROUP], {"dropped": ["b", "c"], "pods": {}})
        self.assertEqual(missing_entries(s, ["a", "b", "d"]), ["b"])
        self.assertEqual(missing_entries(deployment_stack(FUNCTIONS, [GROUP]), ["a", "b", "d"]), [])


if __name__ == "__main__":
    unittest.main()
