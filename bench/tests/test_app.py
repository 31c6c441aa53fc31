"""The application benchmark's pure parts: reading the stack and the plan,
the groups merged whole per entry point, what fmerge's JSON lines say,
the merged callees' settings, the workload split, the bisection, the
verdicts against unmerged and the report they make."""

import tempfile
import types
import unittest
from pathlib import Path

from helpers import BENCH

from fmbench.app import common_rows, deployment_processes, merged_env, next_rates, same_groups, split, verdicts
from fmbench.appstack import deployment_stack
from fmbench.appbuild import closure, merged_groups, read_plan, stack_functions, whole_plan
from fmbench.appreport import render_app
from fmbench.config import APP_DEPLOYMENTS, APP_ENTRIES, APP_WORKLOADS

ROOT = BENCH.parent


class Stack(unittest.TestCase):
    def test_the_repositorys_stack_has_the_26_functions(self):
        names = stack_functions(ROOT / "functions" / "stack.yml")
        self.assertEqual(len(names), 26, names)
        self.assertEqual(len(set(names)), 26)
        for e in APP_ENTRIES:
            self.assertIn(e, names)
        self.assertNotIn("environment", names)  # deeper keys are not functions

    def test_keys_after_the_functions_block_are_not_functions(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "stack.yml"
            p.write_text("version: 1.0\nfunctions:\n  a:\n    lang: x\n  b-c:\n    lang: x\nconfiguration:\n  d:\n    x: 1\n")
            self.assertEqual(stack_functions(p), ["a", "b-c"])


EDGES = [
    {"from": "compose-post", "to": "text-service"},
    {"from": "text-service", "to": "url-shorten"},
    {"from": "text-service", "to": None},  # a name built at run time
    {"from": "read-home-timeline", "to": "read-posts"},
    {"from": "read-user-timeline", "to": "read-posts"},
    {"from": "url-shorten", "to": "text-service"},  # a cycle ends
]
GRAPH = {"functions": [{"name": n} for n in ("compose-post", "text-service", "url-shorten", "read-home-timeline",
                                              "read-user-timeline", "read-posts", "media")],
         "edges": EDGES}


class Whole(unittest.TestCase):
    def test_closure_follows_literal_callees_only(self):
        self.assertEqual(closure(EDGES, "compose-post"), ["compose-post", "text-service", "url-shorten"])
        self.assertEqual(closure(EDGES, "media"), ["media"])

    def test_a_group_per_entry_point_that_calls_someone(self):
        text, groups = whole_plan(GRAPH, ["read-home-timeline", "media", "compose-post"], "/x/stack.yml")
        self.assertEqual(groups, [["read-home-timeline", "read-posts"], ["compose-post", "text-service", "url-shorten"]])
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "plan.toml"
            p.write_text(text)
            self.assertEqual(read_plan(p), [("read-home-timeline", ["read-posts"], "read-home-timeline-whole"),
                                            ("compose-post", ["text-service", "url-shorten"], "compose-post-whole")])

    def test_an_unknown_entry_point_is_refused(self):
        with self.assertRaises(SystemExit):
            whole_plan(GRAPH, ["nope"], "/x/stack.yml")


class FmergeOutput(unittest.TestCase):
    def test_settings_belong_to_the_next_merged_line(self):
        lines = [
            {"reason": "stage", "stage": "cargo", "seconds": 1.0},
            {"reason": "setting", "function": "read-posts", "key": "REDIS_URL", "variable": "READ_POSTS__REDIS_URL"},
            {"reason": "merged", "name": "a-merged", "members": ["a", "read-posts"], "binary": "/b/a", "cached": False},
            {"reason": "setting", "function": "x", "key": "REDIS_URL", "variable": "REDIS_URL"},
            {"reason": "merged", "name": "x-merged", "members": ["x", "y"], "binary": "/b/x", "cached": True},
        ]
        g = merged_groups(lines)
        self.assertEqual([x["name"] for x in g], ["a-merged", "x-merged"])
        self.assertEqual([s["variable"] for s in g[0]["settings"]], ["READ_POSTS__REDIS_URL"])
        self.assertEqual([s["variable"] for s in g[1]["settings"]], ["REDIS_URL"])

    def test_only_the_callees_settings_are_set_with_this_testbeds_values(self):
        group = {"settings": [
            {"function": "c", "key": "REDIS_URL", "variable": "REDIS_URL"},
            {"function": "u", "key": "REDIS_URL", "variable": "U__REDIS_URL"},
            {"function": "u", "key": "MACHINE_ID", "variable": "U__MACHINE_ID", "default": "1"},
            {"function": "v", "key": "OTHER", "variable": "V__OTHER", "default": "d"},
        ]}
        self.assertEqual(merged_env(group, {"REDIS_URL": "redis://127.0.0.1:1", "MACHINE_ID": "7"}),
                         {"U__REDIS_URL": "redis://127.0.0.1:1", "U__MACHINE_ID": "7", "V__OTHER": "d"})

    def test_a_group_serves_its_callers_route(self):
        g = {"name": "a-merged", "members": ["a", "b"]}
        functions = [{"name": n} for n in ("a", "b", "c")]
        routes = deployment_processes(deployment_stack(functions, [g]), [g])
        self.assertEqual(routes, {"a": ("merged", g), "b": ("function", "b"), "c": ("function", "c")})
        self.assertEqual(deployment_processes(deployment_stack(functions[:2], []), []),
                         {"a": ("function", "a"), "b": ("function", "b")})

    def test_a_callee_the_plan_drops_is_not_started(self):
        g = {"name": "a-merged", "members": ["a", "b"]}
        functions = [{"name": n} for n in ("a", "b", "c")]
        stack = deployment_stack(functions, [g], {"dropped": ["b"], "pods": {}})
        self.assertEqual(deployment_processes(stack, [g]), {"a": ("merged", g), "c": ("function", "c")})


class SameGroups(unittest.TestCase):
    def test_equal_members_for_the_entry_points_make_the_same_deployment(self):
        planner = [{"members": ["compose-post", "a", "b"]}, {"members": ["read-posts", "x"]},
                   {"members": ["read-home-timeline", "read-posts"]}]
        whole = [{"members": ["read-home-timeline", "read-posts"]}, {"members": ["compose-post", "b", "a"]}]
        bounded = [{"members": ["compose-post", "a"]}, {"members": ["read-home-timeline", "read-posts"]}]
        builds = {"planner": planner, "whole": whole, "bounded": bounded}
        self.assertTrue(same_groups(builds, "whole", "planner"))  # order and non-entry groups do not matter
        self.assertFalse(same_groups(builds, "bounded", "planner"))
        self.assertFalse(same_groups({"planner": planner}, "whole", "planner"))  # nothing built is never the same


class Rates(unittest.TestCase):
    def test_the_mixed_split_keeps_the_shares(self):
        self.assertEqual(split(APP_WORKLOADS, "mixed", 1000), {"read-home-timeline": 600, "read-user-timeline": 300, "compose-post": 100})
        self.assertEqual(split(APP_WORKLOADS, "mixed", 5), {"read-home-timeline": 3, "read-user-timeline": 2, "compose-post": 1})
        self.assertAlmostEqual(sum(APP_WORKLOADS["mixed"].values()), 1.0)

    def test_bisection_between_the_best_sustained_and_the_first_failure(self):
        self.assertEqual(next_rates({100: True, 200: True, 400: False}), 300)
        self.assertEqual(next_rates({100: True, 200: True, 300: True, 400: False}), 350)
        self.assertIsInstance(next_rates({750: True, 1100: False}), int)  # a rate oha and the report print whole
        self.assertIsNone(next_rates({100: False}))  # nothing sustained: nothing to narrow
        self.assertIsNone(next_rates({100: True, 200: True}))  # never failed
        self.assertIsNone(next_rates({100: True, 101: False}))  # adjacent


def mix_run(rate, p50, sustained=True, tier=100.0):
    entries = {e: {"mean_ms": p50, "p50_ms": p50, "p99_ms": 4 * p50, "achieved_rps": rate * w, "ok": rate * w, "offered_rps": rate * w}
               for e, w in APP_WORKLOADS["mixed"].items()}
    return {"rate": rate, "sustained": sustained, "entries": entries, "function_tier_cpu_us": tier, "cpu_others_pct": 1.0}


def one_round(runs):
    best = max([r["rate"] for r in runs if r["sustained"]], default=None)
    return {"runs": runs, "max_sustained": best, "lower_bound": False}


def results(unmerged, planner, **others):
    """App results with one deployment per argument: each a list of rounds,
    each round a list of runs (a list of runs alone is one round)."""
    deps = {}
    for d, rs in (("unmerged", unmerged), ("planner", planner), *others.items()):
        if rs and isinstance(rs[0], dict):
            rs = [rs]
        deps[d] = {"gateway_calls_per_request": {e: 1.0 if d == "unmerged" else 0.0 for e in APP_ENTRIES},
                   "mixed": {"rounds": [one_round(runs) for runs in rs]}}
    return {"deployments": deps, "seed": {"users": 5, "degree": 2, "posts": 3}, "redis_keys": 10, "duration_s": 6,
            "connections_per_entry": 64, "rounds": len(deps["unmerged"]["mixed"]["rounds"])}


class Verdicts(unittest.TestCase):
    def test_ratios_at_rates_both_sustained(self):
        res = results([mix_run(100, 4.0, tier=400), mix_run(200, 5.0, tier=300), mix_run(400, 90.0, sustained=False)],
                      [mix_run(100, 1.0), mix_run(200, 2.0), mix_run(400, 2.0), mix_run(800, 80.0, sustained=False)])
        self.assertEqual([r[0] for r in common_rows(res, "mixed", "planner", "unmerged")], [100, 200])
        v = verdicts(res)["mixed/planner"]
        self.assertEqual(v["throughput_ratio"]["mean"], 2.0)
        self.assertEqual(v["p50_ratio_worst"]["mean"], 0.4)  # 2.0 / 5.0 at 200/s, the worst of both rates
        self.assertEqual(v["rates_compared"], [100, 200])
        self.assertEqual(v["tier_cpu_unmerged_over_this"]["mean"], 4.0)  # median of 3.0 and 4.0: the upper middle

    def test_ratios_over_rounds_pair_each_round_with_unmerged_s_same_round(self):
        res = results([[mix_run(100, 4.0), mix_run(200, 90.0, sustained=False)],
                       [mix_run(100, 4.0), mix_run(200, 5.0), mix_run(400, 90.0, sustained=False)]],
                      [[mix_run(100, 2.0), mix_run(200, 2.0), mix_run(400, 90.0, sustained=False)],
                       [mix_run(100, 1.0), mix_run(200, 2.0), mix_run(400, 90.0, sustained=False)]])
        v = verdicts(res)["mixed/planner"]
        self.assertEqual(v["throughput_ratio"]["n"], 2)
        self.assertEqual(v["throughput_ratio"]["mean"], 1.5)  # 200/100 in round 1, 200/200 in round 2
        self.assertEqual(v["rates_compared"], [100])  # 200/s: unmerged did not sustain it in round 1
        self.assertEqual((v["p50_ratio_worst"]["min"], v["p50_ratio_worst"]["max"]), (0.25, 0.5))

    def test_nothing_sustained_gives_no_ratio(self):
        v = verdicts(results([mix_run(100, 60.0, sustained=False)], [mix_run(100, 1.0)]))["mixed/planner"]
        self.assertIsNone(v["throughput_ratio"])
        self.assertIsNone(v["p50_ratio_worst"])

    def test_the_report_says_met_or_missed(self):
        res = results([mix_run(100, 4.0), mix_run(200, 5.0), mix_run(400, 90.0, sustained=False)],
                      [mix_run(100, 1.0), mix_run(200, 2.0), mix_run(400, 2.0), mix_run(800, 80.0, sustained=False)])
        res["verdicts"] = verdicts(res)
        R = {"app": {"load": res, "builds": {"functions": ["x"] * 26, "planner": [{"name": "a-merged", "members": ["a", "b"]}]},
                     "timings": {"cold": {"groups": 1, "wall_ratio": 1.5,
                                          "plan": {"wall_s": 100.0, "cpu_s": 150.0, "peak_rss_mib": 500.0},
                                          "one_by_one": {"wall_s": 150.0, "cpu_s": 200.0, "peak_rss_mib": 400.0,
                                                         "groups": {"a": {"wall_s": 150.0}}}}}}}
        L = []
        render_app(L, R)
        text = "\n".join(L)
        self.assertIn("| 0.40× | met |", text)  # p50 2.0 ÷ 5.0
        self.assertIn("| 2.00× | 0.40× |", text)  # throughput 400 ÷ 200, beside it
        self.assertIn("`a-merged` = a + b", text)
        self.assertIn("unmerged 200/s (200); planner 400/s (400)", text)
        self.assertIn("One after another ÷ `--plan`, wall: 1.50×", text)
        for d in APP_DEPLOYMENTS[:1]:
            self.assertIn(f"| {d} |", text.replace("| 100 | unmerged |", "| unmerged |"))

    def test_results_from_before_rounds_say_which_bench_renders_them(self):
        res = results([mix_run(100, 4.0)], [mix_run(100, 1.0)])
        del res["rounds"]
        L = []
        render_app(L, {"src_rev": "abc123", "app": {"load": res, "builds": {"functions": []}, "timings": {}}})
        self.assertIn("predate rounds: render them with the bench of their revision (abc123)", "\n".join(L))


class RoundsLoop(unittest.TestCase):
    """app_load's loop, with the testbed played by stand-ins: each round
    starts every deployment afresh, in turn, and keeps its runs per round."""

    def test_every_deployment_runs_once_per_round_and_the_same_groups_once(self):
        from unittest import mock

        import fmbench.app as app

        started = []

        class FakeApp:
            def __init__(self, ctx, args, builds, kind, watchdog=None, rnd=0):
                self.kind, self.routes = kind, builds["stacks"][kind]
                started.append((rnd, kind))

            def restore(self, snap):
                pass

            def mix(self, *a):
                return {}

        def runs(a, oha, workload, snap, requests, args, rnd=0):
            return one_round([mix_run(100, 1.0 + rnd)])

        same = [{"members": ["compose-post", "x"]}]
        builds = {"planner": same, "whole": same, "stacks": {k: [{"name": "f"}] for k in ("unmerged", "planner", "whole")}}
        args = types.SimpleNamespace(app_deployments=["unmerged", "planner", "whole"], app_workloads=["mixed"], app_rounds=2,
                                     duration=1, connections=1)
        ctx = types.SimpleNamespace(out=Path("/nonexistent"), procs=types.SimpleNamespace(stop_all=lambda: None))
        with mock.patch.object(app, "App", FakeApp), mock.patch.object(app, "seed_once", return_value=({}, {})), \
                mock.patch.object(app, "check", return_value=({e: b"r" for e in APP_ENTRIES}, {e: 0.0 for e in APP_ENTRIES})), \
                mock.patch.object(app, "workload_runs", runs):
            res = app.app_load(ctx, args, builds, None, None)
        self.assertEqual(started, [(0, "unmerged"), (0, "planner"), (1, "unmerged"), (1, "planner")])
        self.assertEqual(res["rounds"], 2)
        self.assertEqual([r["runs"][0]["entries"]["compose-post"]["p50_ms"] for r in res["deployments"]["planner"]["mixed"]["rounds"]],
                         [1.0, 2.0])
        self.assertEqual(res["deployments"]["planner"]["same_as"], ["whole"])
        self.assertNotIn("whole", res["deployments"])


if __name__ == "__main__":
    unittest.main()
