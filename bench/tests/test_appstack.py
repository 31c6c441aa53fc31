"""The stack each application deployment runs: its entries (pods), the
requests and limits they add up to, where a merged pod's figures come from,
the callees a plan drops, and the declared entry points it keeps."""

import tempfile
import unittest
from pathlib import Path

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
    def test_plan_json_without_a_cluster_says_nothing(self):
        self.assertIsNone(planned_deployment({"entries": [], "reserved": []}))
        self.assertIsNone(planned_deployment(None))

    def test_plan_json_cluster_is_read_into_pods_and_dropped(self):
        figure = lambda amount, source: {"amount": amount, "from": source}  # noqa: E731
        doc = {"cluster": {"dropped": ["b"], "pods": [
            {"caller": "a", "requests": {"memory": figure(20 * MI, "measured"), "cpu": figure(0.03, "measured")},
             "limits": {"memory": figure(64 * MI, "stack"), "cpu": figure(None, "stack")}}]}}
        self.assertEqual(planned_deployment(doc), {
            "dropped": ["b"], "pods": {"a": {
                "requests": {"memory": 20 * MI, "cpu": 0.03}, "limits": {"memory": 64 * MI, "cpu": None},
                "from": {"requests": {"memory": "measured", "cpu": "measured"},
                         "limits": {"memory": "stack", "cpu": "stack"}}}}})

    def test_a_planned_pod_says_where_its_figures_came_from(self):
        figure = lambda amount, source: {"amount": amount, "from": source}  # noqa: E731
        doc = {"cluster": {"dropped": [], "pods": [
            {"caller": "a", "requests": {"memory": figure(20 * MI, "measured"), "cpu": figure(0.03, "mixed")},
             "limits": {"memory": figure(128 * MI, "stack"), "cpu": figure(0.4, "stack")}}]}}
        s = deployment_stack(FUNCTIONS, [GROUP], planned_deployment(doc))
        self.assertEqual(s[0]["requests"], {"memory": 20 * MI, "cpu": 0.03})
        self.assertEqual(s[0]["source"], f"{FROM_PLAN} (measured, mixed, stack)")


STACK = """provider:
  name: openfaas
functions:
  front:
    lang: rust
    labels:
      com.openfaas.fmerge.entry: "true"
  inner:
    lang: rust
    labels:
      com.openfaas.fmerge.entry: "false"
  quoted:
    labels:
      com.openfaas.fmerge.entry: 'true'  # the login page calls it
  bare:
    labels:
      com.openfaas.fmerge.entry: true
configuration:
  copy: [x]
"""


class Entries(unittest.TestCase):
    def test_the_stack_label_declares_the_entry_points_in_stack_order(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "stack.yml"
            path.write_text(STACK)
            self.assertEqual(declared_entries(path), ["front", "quoted", "bare"])

    def test_the_applications_stack_declares_its_front_end(self):
        stack = BENCH.parent / "functions" / "stack.yml"
        declared = declared_entries(stack)
        self.assertEqual([e for e in declared if e not in stack_functions(stack)], [])
        for e in ("compose-post", "read-home-timeline", "read-user-timeline", "register-user", "user-login"):
            self.assertIn(e, declared)  # the workloads' and those they do not exercise
        self.assertNotIn("text-service", declared)  # only compose-post calls it

    def test_an_entry_point_merged_away_is_missing(self):
        s = deployment_stack(FUNCTIONS, [GROUP], {"dropped": ["b", "c"], "pods": {}})
        self.assertEqual(missing_entries(s, ["a", "b", "d"]), ["b"])
        self.assertEqual(missing_entries(deployment_stack(FUNCTIONS, [GROUP]), ["a", "b", "d"]), [])


if __name__ == "__main__":
    unittest.main()
