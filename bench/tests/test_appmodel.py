"""The planner's figures beside the application bench's: RSS samples, the
runtime scrapes, the projected gain (out of sample, over rounds) against the
measured one and its verdict, each deployment's stack, pods, requests,
limits and RSS, and the report's tables. `fmerge plan` is played by a
stand-in that writes plan.json from what it is given."""

import http.server
import json
import os
import sys
import tempfile
import threading
import types
import unittest
from pathlib import Path

from helpers import BENCH  # noqa: F401  (makes fmbench importable)

from fmbench.appchecks import checks
from fmbench.appmodel import (agreement, deployment_stacks, entry_gains, merged_pods, planner_reserved, projections,
                              resources)
from fmbench.appreport import render_checks, render_projection, render_resources
from fmbench.apptier import rss_figures, rss_kib, scrape, stamped, tree_rss_kib
from fmbench.config import SOCIALNETWORK
from test_app import mix_run, results

MI = 1024 * 1024

# `fmerge plan --evaluate … --out DIR [--metrics B --metrics A]`: writes
# DIR/plan.json; the projected gains are read from the last scrape (JSON
# here), the reserved figures count the plan file's callees.
FAKE_FMERGE = """#!/usr/bin/env python3
import json, sys
from pathlib import Path
a = sys.argv[1:]
out = Path(a[a.index("--out") + 1])
plan = Path(a[a.index("--evaluate") + 1]).read_text()
metrics = [a[i + 1] for i, x in enumerate(a) if x == "--metrics"]
gains = json.loads(Path(metrics[-1]).read_text()) if metrics else {}
# As the real one, a plan of part of the stack has entries of that part alone.
if "--filter" in a:
    import fnmatch
    gains = {e: g for e, g in gains.items() if fnmatch.fnmatch(e, a[a.index("--filter") + 1])}
out.mkdir(parents=True, exist_ok=True)
(out / "argv.json").write_text(json.dumps(a))
copies = plan.count(",") + 1
(out / "plan.json").write_text(json.dumps({
    "entries": [{"function": e, "latency_gain_ms": g, "latency_gain_max_ms": 2 * g} for e, g in gains.items()],
    "reserved": [{"what": "memory limits", "before": 100.0, "after": 100.0 + 10.0 * copies, "cap": None}],
    # As the real one: the cluster it would deploy, whatever the plan file says.
    "cluster": {"dropped": ["b", "c"], "pods": [{
        "caller": "a",
        "requests": {"memory": {"amount": 20 * 2 ** 20, "from": "measured"}, "cpu": {"amount": 0.03, "from": "measured"}},
        "limits": {"memory": {"amount": 192 * 2 ** 20, "from": "stack"}, "cpu": {"amount": 0.6, "from": "stack"}}}]}}))
"""


class Rss(unittest.TestCase):
    def test_vmrss_is_read_and_a_zombie_has_none(self):
        self.assertEqual(rss_kib("Name:\tx\nVmPeak:\t 900 kB\nVmRSS:\t    1234 kB\nVmData: 5 kB\n"), 1234)
        self.assertIsNone(rss_kib("Name:\tx\nState:\tZ (zombie)\n"))

    def test_mean_and_peak_of_the_total_and_each_process(self):
        r = rss_figures([{"a": 1024, "b": 2048}, {"a": 3072, "b": 2048}])
        self.assertEqual((r["rss_mib_mean"], r["rss_mib_peak"], r["rss_samples"]), (4.0, 5.0, 2))
        self.assertEqual(r["rss_mib_by_process"], {"a": 2.0, "b": 2.0})
        self.assertIsNone(rss_figures([])["rss_mib_mean"])

    def test_a_process_tree_counts_its_children(self):
        own = tree_rss_kib(os.getpid())
        self.assertGreater(own, 0)
        self.assertEqual(tree_rss_kib(2 ** 22 + 12345), 0)  # no such process


class Scrape(unittest.TestCase):
    def test_every_runtimes_metrics_are_joined_one_line_after_another(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = f"http_requests_total{{function=\"{self.server.name}\"}} 1".encode()  # no final newline
                self.send_response(200 if self.path == "/metrics" else 404)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        servers = {}
        for name in ("b", "a"):
            s = http.server.HTTPServer(("127.0.0.1", 0), Handler)
            s.name = name
            threading.Thread(target=s.serve_forever, daemon=True).start()
            servers[name] = s
        try:
            with tempfile.TemporaryDirectory() as d:
                path = scrape({n: s.server_address[1] for n, s in servers.items()}, Path(d) / "m" / "x.prom")
                self.assertEqual(Path(path).read_text(),
                                 'http_requests_total{function="a"} 1\nhttp_requests_total{function="b"} 1\n')
        finally:
            for s in servers.values():
                s.shutdown()
                s.server_close()


    def test_process_samples_carry_the_time_they_were_read(self):
        # fmerge plan takes the window between two scrapes from these
        # timestamps, never from the files' times; a sample stamped already
        # and every other series are left as they are.
        text = "http_requests_total{function=\"a\"} 1\nprocess_cpu_seconds_total 1.5\nprocess_resident_memory_bytes 10 99\n# EOF"
        self.assertEqual(stamped(text, 7), "http_requests_total{function=\"a\"} 1\nprocess_cpu_seconds_total 1.5 7\n"
                                           "process_resident_memory_bytes 10 99\n# EOF\n")


class Agreement(unittest.TestCase):
    def test_within_a_quarter_either_way(self):
        self.assertEqual(agreement(1.0, 1.0), (1.0, True))
        self.assertEqual(agreement(1.25, 1.0), (1.25, True))
        self.assertEqual(agreement(0.5, 1.0), (0.5, False))
        r, ok = agreement(2.0, 1.0)
        self.assertEqual((r, ok), (2.0, False))

    def test_no_gain_measured_or_projected_is_a_miss_without_ratio(self):
        for projected, measured in ((1.0, 0.0), (1.0, -0.2), (0.0, 1.0), (None, 1.0), (1.0, None)):
            self.assertEqual(agreement(projected, measured), (None, False), (projected, measured))

    def test_plan_json_gains_by_entry(self):
        doc = {"entries": [{"function": "a", "latency_gain_ms": 0.5, "latency_gain_max_ms": 1.5}]}
        self.assertEqual(entry_gains(doc), {"a": (0.5, 1.5)})


FUNCTIONS = [{"name": n, "memory_bytes": 64 * MI, "cpu": 0.2, "requests_memory_bytes": 16 * MI, "requests_cpu": 0.02}
             for n in ("a", "b", "c")]


class MergedPods(unittest.TestCase):
    STACK = [{"name": "a", "group": "a-merged", "requests": {"memory": 8 * MI}},
             {"name": "d", "requests": {"memory": 16 * MI}}]

    def test_each_merged_pod_beside_the_most_its_process_held(self):
        runs = [{"rss_mib_by_process": {"a-merged": 5.0, "d": 4.0}}, None, {"rss_mib_by_process": {"a-merged": 6.5}}]
        self.assertEqual(merged_pods(self.STACK, runs), {"a": {"group": "a-merged", "request_mib": 8.0, "rss_mib": 6.5}})

    def test_a_pod_over_its_request_is_a_miss_named(self):
        from fmbench.appchecks import pod_check
        ok = pod_check({"a": {"group": "a-merged", "request_mib": 8.0, "rss_mib": 6.5}}, "planner")[0]
        self.assertEqual((ok["measured"], ok["met"]), ("1 of 1", True))
        over = pod_check({"a": {"group": "a-merged", "request_mib": 8.0, "rss_mib": 9.0},
                          "b": {"group": "b-merged", "request_mib": 8.0, "rss_mib": None}}, "planner")[0]
        self.assertEqual((over["measured"], over["met"]), ("0 of 1", False))
        self.assertIn("a 9.0 > 8.0 MiB", over["detail"])


class PlannerFigures(unittest.TestCase):
    def test_the_planners_totals_and_base(self):
        doc = {"reserved": [{"what": "memory limits", "before": 1.0, "after": 3.0, "cap": None}]}
        self.assertEqual(planner_reserved(doc), ({"memory limits": 3.0}, {"memory limits": 1.0}))


def with_scrapes(run, d, gains, rnd):
    """run with the two scrape files unmerged's run leaves in round rnd (the
    stand-in reads its gains from the second)."""
    before, after = Path(d) / f"{rnd}-{run['rate']}.before", Path(d) / f"{rnd}-{run['rate']}.after"
    before.write_text("{}")
    after.write_text(json.dumps(gains))
    run["metrics"] = [str(before), str(after)]
    return run


# What the stand-in projects from each round's scrapes, and the p50s each
# round measures (unmerged 3.0 ms everywhere).
GAINS = [{"read-home-timeline": 1.0, "read-user-timeline": 4.0, "compose-post": 0.1},
         {"read-home-timeline": 1.2, "read-user-timeline": 4.0, "compose-post": 0.1}]
PLANNER_P50 = [2.0, 1.8]


class Projection(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = Path(self.dir.name)
        fake = d / "fmerge"
        fake.write_text(FAKE_FMERGE.replace("/usr/bin/env python3", sys.executable))
        fake.chmod(0o755)
        plan = d / "plan.toml"
        plan.write_text('[[group]]\ncaller = "a"\ncallees = ["b", "c"]\n')
        self.ctx = types.SimpleNamespace(out=d / "out", src=d)
        self.fmerge = fake
        self.builds = {"plan_files": {"planner": str(plan)}, "graph": {"functions": FUNCTIONS},
                       "stack": str(BENCH.parent / "functions" / "stack.yml"),
                       "planner": [{"name": "a-merged", "members": ["a", "b", "c"]}]}
        unmerged, planner, watchdog = [], [], []
        for k in range(2):
            u = [with_scrapes(mix_run(100, 3.0), d, GAINS[k], k), with_scrapes(mix_run(200, 3.0), d, GAINS[k], k),
                 mix_run(400, 50.0, sustained=False)]
            p = [mix_run(100, PLANNER_P50[k]), mix_run(200, PLANNER_P50[k]), mix_run(400, 2.0)]
            w = [mix_run(100, 3.5), mix_run(200, 60.0, sustained=False)]
            for i, r in enumerate(p):
                r.update({"rss_mib_mean": 50.0 + 10 * k + i, "rss_mib_peak": 60.0 + k})
            for i, r in enumerate(u + w):
                r.update({"rss_mib_mean": 100.0 + i, "rss_mib_peak": 110.0})
            unmerged.append(u)
            planner.append(p)
            watchdog.append(w)
        self.load = results(unmerged, planner, watchdog=watchdog)

    def tearDown(self):
        self.dir.cleanup()

    def test_a_plan_of_part_of_the_stack_is_evaluated_over_that_part(self):
        # The drops of the deployment and the gains projected are those of
        # the part the plan was made of (genapp: `--filter 'ga-*'`), never of
        # the whole stack, whose callers are all known (every entry point is
        # in the part here: none is priced over the whole stack).
        self.builds["application"] = {**SOCIALNETWORK, "plan_args": ["--filter", "*-*"]}
        deployment_stacks(self.ctx, self.fmerge, self.builds, ["unmerged", "planner"])
        projections(self.ctx, self.fmerge, self.builds, self.load)
        runs = sorted((self.ctx.out / "app").rglob("argv.json"))
        self.assertGreater(len(runs), 1)
        for run in runs:
            argv = json.loads(run.read_text())
            self.assertEqual(argv[argv.index("--filter") + 1], "*-*", run)

    def test_an_entry_point_outside_the_planned_part_is_priced_over_the_whole_stack(self):
        # genapp's gx-* call into the planned part's merged pods: the plan's
        # own evaluation has no entry for them, the whole stack's has.
        self.builds["application"] = {**SOCIALNETWORK, "plan_args": ["--filter", "read-*"]}
        rows = projections(self.ctx, self.fmerge, self.builds, self.load)
        at = {(r["deployment"], r["rate"], r["entry"]): r for r in rows}
        self.assertEqual(at[("planner", 100, "compose-post")]["per_round"]["projected_gain_ms"], [0.1, 0.1])
        self.assertEqual(at[("planner", 100, "read-home-timeline")]["per_round"]["projected_gain_ms"], [1.2, 1.0])
        for run in sorted((self.ctx.out / "app" / "projection").rglob("argv.json")):
            argv = json.loads(run.read_text())
            self.assertEqual("--filter" in argv, not run.parent.name.endswith("-whole-stack"), run)

    def test_each_rounds_projection_is_priced_with_another_rounds_hop_costs(self):
        rows = projections(self.ctx, self.fmerge, self.builds, self.load)
        at = {(r["deployment"], r["rate"], r["entry"]): r for r in rows}
        r = at[("planner", 100, "read-home-timeline")]
        self.assertEqual(r["hop_rounds"], [1, 0])
        # Round 1's gain (1.0 measured) priced by round 2's scrape (1.2), and the other way round.
        self.assertEqual(r["per_round"]["projected_gain_ms"], [1.2, 1.0])
        self.assertEqual(r["per_round"]["measured_gain_ms"], [1.0, 1.2])
        self.assertAlmostEqual(r["projected_gain_ms"]["mean"], 1.1)
        self.assertAlmostEqual(r["measured_gain_ms"]["mean"], 1.1)
        self.assertEqual(r["within"], True)
        self.assertFalse(at[("planner", 100, "read-user-timeline")]["within"])  # 4 ms projected, about 1.1 measured

    def test_rates_every_deployment_sustained_in_every_round_are_marked(self):
        rows = projections(self.ctx, self.fmerge, self.builds, self.load)
        self.assertEqual(sorted({(r["deployment"], r["rate"], r["all_sustain"]) for r in rows}),
                         [("planner", 100, True), ("planner", 200, False), ("watchdog", 100, True)])

    def test_a_deployment_without_groups_projects_nothing_and_is_not_judged(self):
        rows = projections(self.ctx, self.fmerge, self.builds, self.load)
        w = [r for r in rows if r["deployment"] == "watchdog"]
        self.assertTrue(w)
        for r in w:
            self.assertEqual((r["modelled"], r["within"], r["projected_gain_ms"]["mean"]), (False, None, 0.0))
        self.assertAlmostEqual(w[0]["measured_gain_ms"]["mean"], -0.5)

    def test_the_projection_table_says_where_the_hop_costs_came_from(self):
        self.load["projection"] = projections(self.ctx, self.fmerge, self.builds, self.load)
        L = []
        render_projection(L, self.load)
        text = "\n".join(L)
        self.assertIn("| planner | mixed | 100* | read-home-timeline | 3.00 [3.00, 3.00] | 1.90 [0.63, 3.17] | "
                      "1.10 [-0.17, 2.37] | 1.10 [-0.17, 2.37] (2.20 [-0.34, 4.74]) | 1←2, 2←1 | 1.00× (1.20, 0.83) | within |",
                      text)
        self.assertIn("| not modelled |", text)

    def test_pods_requests_limits_and_rss_per_deployment(self):
        deployment_stacks(self.ctx, self.fmerge, self.builds, ["unmerged", "watchdog", "planner"])
        m = resources(self.builds, self.load)
        self.assertEqual(m["rate"], 100)  # the highest rate all three sustained in both rounds
        p, u, w = (m["deployments"][k] for k in ("planner", "unmerged", "watchdog"))
        self.assertEqual((u["pods"], w["pods"], p["pods"]), (3, 3, 3))  # every callee stays: plan.json drops none
        self.assertEqual(p["requests"]["memory"], (16 * 3 + 16 + 16) * MI)  # the members' sum in a's place
        self.assertEqual(p["sources"], ["members' sum"])
        self.assertEqual(u["limits"]["memory"], 3 * 64 * MI)
        self.assertEqual((p["rss_mib"]["mean"], p["rss_mib"]["n"]), (55.0, 2))  # 50 and 60 at 100/s
        self.assertAlmostEqual(p["rss_change"], 55.0 / 100.0 - 1)
        self.assertEqual(p["missing_entries"], u["missing_entries"])  # a, b, c are none of socialNetwork's

    def test_a_plan_fmerge_plan_wrote_deploys_its_cluster(self):
        plan = Path(self.builds["plan_files"]["planner"])
        plan.write_text('dropped = ["b", "c"]\n\n[[group]]\ncaller = "a"\ncallees = ["b", "c"]\n'
                        '[group.requests]\nmemory = "20Mi"\n')
        deployment_stacks(self.ctx, self.fmerge, self.builds, ["unmerged", "planner"])
        m = resources(self.builds, self.load)
        p = m["deployments"]["planner"]
        self.assertEqual(p["pods"], 1)  # b and c only run in a's pod
        self.assertEqual(p["requests"]["memory"], 20 * MI)
        self.assertEqual(p["sources"], ["plan.json (measured, stack)"])
        self.assertEqual(p["planner_deployment"]["dropped"], ["b", "c"])

    def test_the_checks_give_each_goal_its_measured_figure(self):
        deployment_stacks(self.ctx, self.fmerge, self.builds, ["unmerged", "planner"])
        self.load["projection"] = projections(self.ctx, self.fmerge, self.builds, self.load)
        self.load["resources"] = resources(self.builds, self.load)
        from fmbench.app import verdicts
        self.load["verdicts"] = verdicts(self.load)
        c = {x["check"]: x for x in checks(self.load)}
        mem = c["memory requests, planner ÷ unmerged"]
        self.assertAlmostEqual(mem["measured"], 80 / 48)
        self.assertFalse(mem["met"])
        self.assertEqual((c["pods, planner ÷ unmerged"]["measured"], c["pods, planner ÷ unmerged"]["met"]), (1.0, False))
        t = c["mixed workload, highest sustained rate, planner ÷ unmerged"]
        self.assertEqual((t["measured"]["mean"], t["met"]), (2.0, True))
        proj = next(x for k, x in c.items() if k.startswith("projected"))
        self.assertFalse(proj["met"])
        self.assertIn("planner mixed 100/s read-user-timeline", proj["detail"])
        self.assertIn("not modelled (no groups, 0 projected): watchdog", proj["detail"])
        self.load["checks"] = list(c.values())
        L = []
        render_checks(L, self.load)
        self.assertIn("| memory requests, planner ÷ unmerged | ≤ 0.5 | 1.67× | **missed** | 80Mi of 48Mi |", "\n".join(L))
        L = []
        render_resources(L, self.load)
        self.assertIn("| planner | 3 | 80Mi |", "\n".join(L))


if __name__ == "__main__":
    unittest.main()
