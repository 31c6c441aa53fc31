"""The planner's figures beside the application bench's: RSS samples, the
runtime scrapes, the projected gain against the measured one and its
verdict, what a deployment reserves, and the report's tables. `fmerge plan`
is played by a stand-in that writes plan.json from what it is given."""

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

from fmbench.appmodel import agreement, entry_gains, memory, planner_reserved, projections, reserved
from fmbench.appreport import render_memory, render_projection
from fmbench.apptier import rss_figures, rss_kib, scrape, tree_rss_kib
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
out.mkdir(parents=True, exist_ok=True)
copies = plan.count(",") + 1
(out / "plan.json").write_text(json.dumps({
    "entries": [{"function": e, "latency_gain_ms": g, "latency_gain_max_ms": 2 * g} for e, g in gains.items()],
    "reserved": [{"what": "memory limits", "base": 100.0, "copies": 10.0 * copies, "total": 100.0 + 10.0 * copies}]}))
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


FUNCTIONS = [{"name": "a", "memory_bytes": 64 * MI, "cpu": 0.2}, {"name": "b", "memory_bytes": 32 * MI, "cpu": 0.1},
             {"name": "c", "memory_bytes": 16 * MI, "cpu": 0.1}]


class Reserved(unittest.TestCase):
    def test_every_function_stays_deployed_and_each_group_adds_its_callees(self):
        groups = [{"name": "a-merged", "members": ["a", "b", "c"]}, {"name": "b-merged", "members": ["b", "c"]}]
        r = reserved(FUNCTIONS, groups)
        self.assertEqual(r["memory limits"], (112 + 48 + 16) * MI)
        self.assertAlmostEqual(r["cpu limits"], 0.4 + 0.2 + 0.1)
        self.assertEqual(reserved(FUNCTIONS, [])["memory limits"], 112 * MI)

    def test_a_figure_some_function_lacks_is_left_out(self):
        self.assertNotIn("memory requests", reserved(FUNCTIONS, []))

    def test_the_planners_totals_and_base(self):
        doc = {"reserved": [{"what": "memory limits", "base": 1.0, "copies": 2.0, "total": 3.0}]}
        self.assertEqual(planner_reserved(doc), ({"memory limits": 3.0}, {"memory limits": 1.0}))


def with_scrapes(run, d, gains):
    """run with the two scrape files unmerged's run leaves (the stand-in
    reads its gains from the second)."""
    before, after = Path(d) / f"{run['rate']}.before", Path(d) / f"{run['rate']}.after"
    before.write_text("{}")
    after.write_text(json.dumps(gains))
    run["metrics"] = [str(before), str(after)]
    return run


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
                       "planner": [{"name": "a-merged", "members": ["a", "b", "c"]}]}
        gains = {"read-home-timeline": 1.0, "read-user-timeline": 4.0, "compose-post": 0.1}
        unmerged = [with_scrapes(mix_run(100, 3.0), d, gains), with_scrapes(mix_run(200, 3.0), d, gains),
                    mix_run(400, 50.0, sustained=False)]
        planner = [mix_run(100, 2.0), mix_run(200, 2.15), mix_run(400, 2.0)]
        for i, r in enumerate(planner):
            r.update({"rss_mib_mean": 50.0 + i, "rss_mib_peak": 60.0})
        for i, r in enumerate(unmerged):
            r.update({"rss_mib_mean": 100.0 + i, "rss_mib_peak": 110.0})
        self.load = results(unmerged, planner)

    def tearDown(self):
        self.dir.cleanup()

    def test_each_rate_both_sustained_is_projected_from_its_own_scrapes(self):
        rows = projections(self.ctx, self.fmerge, self.builds, self.load)
        self.assertEqual(sorted({r["rate"] for r in rows}), [100, 200])
        at = {(r["rate"], r["entry"]): r for r in rows}
        r = at[(100, "read-home-timeline")]
        self.assertEqual((r["measured_gain_ms"], r["projected_gain_ms"], r["projected_gain_max_ms"]), (1.0, 1.0, 2.0))
        self.assertEqual((r["ratio"], r["within"]), (1.0, True))
        r = at[(200, "read-home-timeline")]
        self.assertAlmostEqual(r["measured_gain_ms"], 0.85)
        self.assertAlmostEqual(r["ratio"], 1 / 0.85)
        self.assertTrue(r["within"])
        self.assertFalse(at[(100, "read-user-timeline")]["within"])  # 4 ms projected, 1 measured
        self.assertFalse(at[(100, "compose-post")]["within"])
        self.load["projection"] = rows
        L = []
        render_projection(L, self.load)
        text = "\n".join(L)
        self.assertIn("| planner | mixed | 100 | read-home-timeline | 3.00 | 2.00 | 1.00 | 1.00 (2.00) | 1.00× | within |", text)
        self.assertIn("| planner | mixed | 100 | read-user-timeline | 3.00 | 2.00 | 1.00 | 4.00 (8.00) | 4.00× | **miss** |", text)

    def test_memory_at_the_highest_common_rate_beside_the_planners_reservation(self):
        m = memory(self.ctx, self.fmerge, self.builds, self.load)
        self.assertEqual(m["rate"], 200)
        p, u = m["deployments"]["planner"], m["deployments"]["unmerged"]
        self.assertEqual((p["rss_mib_mean"], u["rss_mib_mean"]), (51.0, 101.0))
        self.assertAlmostEqual(p["rss_change"], 51.0 / 101.0 - 1)
        self.assertEqual(p["reserved"]["memory limits"], (112 + 48) * MI)
        self.assertEqual(u["reserved"]["memory limits"], 112 * MI)
        self.assertEqual(p["planner_reserved"], {"memory limits": 120.0})  # the stand-in's two callees
        self.assertEqual(u["planner_reserved"], {"memory limits": 100.0})  # the planner's base
        self.load["memory"] = m
        L = []
        render_memory(L, self.load)
        text = "\n".join(L)
        self.assertIn("| planner | 51 / 60 MiB | -49.5% | 160Mi / 0Mi |", text)
        self.assertIn("| unmerged | 101 / 110 MiB |  | 112Mi / 0Mi |", text)


if __name__ == "__main__":
    unittest.main()
