"""What bench/run concludes: sustained or not, the rate ladder, the call
tree's hops, the function tier's CPU, the of-watchdog ratios, and each
target's met / missed."""

import copy
import json
import math
import unittest

from helpers import BENCH

from fmbench.config import TARGETS, critical_hops, hops
from fmbench.load import function_tier_cpu, hop_cost_from_group, in_turn, ladder, median, median_run, nice, paired, ratio, sustained
from fmbench.report import render_md, status, target_rows
from fmbench.targets import CONTROL, UNRESOLVED, against
from fmbench.watchdog import BEHIND, WATCHDOG, watchdog_verdict


def run(success=1.0, offered=100, achieved=100.0, p99=10.0):
    return {"success_rate": success, "offered_rps": offered, "achieved_rps": achieved, "p99_ms": p99}


class Sustained(unittest.TestCase):
    def test_bounds(self):
        self.assertTrue(sustained(run()))
        self.assertTrue(sustained(run(success=0.999, achieved=95.0, p99=50.0)))  # every bound inclusive
        self.assertFalse(sustained(run(success=0.998)))
        self.assertFalse(sustained(run(achieved=94.9)))
        self.assertFalse(sustained(run(p99=50.1)))
        self.assertFalse(sustained(run(p99=None)))
        self.assertFalse(sustained(run(achieved=None)))


class Ladder(unittest.TestCase):
    def test_nice(self):
        self.assertEqual([nice(x) for x in (0, 5.4, 56, 1234, 98765)], [1, 5, 56, 1200, 99000])

    def test_ladder(self):
        # 0.3, 0.6, 0.9, 1.2 × 1000 and 0.6, 0.9, 1.2 × 2000; 1200 is within
        # 12% of 1200 (dropped as a duplicate), 1800 of nothing.
        self.assertEqual(ladder({"unmerged": 1000, "merged": 2000}, None), [300, 600, 900, 1200, 1800, 2400])

    def test_close_rates_dropped(self):
        out = ladder({"unmerged": 1000, "merged": 1050}, None)
        self.assertTrue(all(b >= a * 1.12 for a, b in zip(out, out[1:])), out)

    def test_fixed_rates_win(self):
        self.assertEqual(ladder({"unmerged": 1000}, [500, 100, 500]), [100, 500])


class Arithmetic(unittest.TestCase):
    def test_hops(self):
        self.assertEqual((hops("pair"), critical_hops("pair")), (1, 1))
        self.assertEqual((hops("chain"), critical_hops("chain")), (10, 4))

    def test_ratio_and_median(self):
        self.assertEqual(ratio(3, 2), 1.5)
        self.assertIsNone(ratio(None, 2))
        self.assertIsNone(ratio(3, 0))
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([4, 1, 2, 3]), 2.5)

    def test_function_tier(self):
        c = {"write-home-timeline": 100.0, "social-graph-get-followers": 50.0, "nginx": 70.0, "redis": 30.0,
             "nginx-internal": 20.0}
        merged = {"nginx": 40.0}
        self.assertEqual(function_tier_cpu("pair", "unmerged", c, merged, "shared"), 180.0)  # + nginx's extra 30
        self.assertEqual(function_tier_cpu("pair", "unmerged", c, merged, "pinned"), 170.0)  # + the internal nginx
        self.assertEqual(function_tier_cpu("pair", "merged", {"write-home-timeline-merged": 90.0}, merged, "shared"), 90.0)

    def test_hop_cost(self):
        row = {"rate": 100, "unmerged": {"sustained": True, "p50_ms": 3.0}, "merged": {"sustained": True, "p50_ms": 1.0},
               "cpu_us_per_request": {"unmerged_function_tier": 470.0, "merged_function_tier": 120.0}}
        g = {"fixed_rate": [row], "critical_hops": 4, "hops": 7}
        self.assertEqual(hop_cost_from_group(g, "shared"), {"rate": 100, "latency_ms": 0.5, "cpu_us": 50.0})
        row["merged"]["sustained"] = False
        self.assertIsNone(hop_cost_from_group(g, "shared"))


class Watchdog(unittest.TestCase):
    def fixed(self, direct_cpu, proxy, behind):
        return {"direct": {"cpu_us_per_request": {"social-graph-get-followers": direct_cpu, "redis": 9.0}, "p50_ms": 0.5,
                           "p99_ms": 1.0},
                "watchdog": {"cpu_us_per_request": {WATCHDOG: proxy, BEHIND: behind, "redis": 9.0}, "p50_ms": 1.0,
                             "p99_ms": 3.0}}

    def test_ratios(self):
        closed = {"direct": {"ok_rps": 4000.0}, "watchdog": {"ok_rps": 2000.0}}
        v = watchdog_verdict(self.fixed(100.0, 150.0, 110.0), closed)
        self.assertEqual(v["cpu_us"], {"direct": 100.0, "watchdog_total": 260.0, "of_watchdog": 150.0, "function_behind": 110.0})
        self.assertEqual((v["cpu_ratio"], v["p50_ratio"], v["p99_ratio"], v["closed_loop_ratio"]), (2.6, 2.0, 3.0, 0.5))

    def test_missing_cpu_gives_no_ratio(self):
        f = self.fixed(100.0, 150.0, 110.0)
        f["watchdog"]["cpu_us_per_request"] = None
        closed = {"direct": {"ok_rps": 1.0}, "watchdog": {"ok_rps": 1.0}}
        self.assertIsNone(watchdog_verdict(f, closed)["cpu_ratio"])


class Targets(unittest.TestCase):
    """target_rows on the committed results.json, with single figures moved
    across their goal."""

    @classmethod
    def setUpClass(cls):
        cls.R = json.loads((BENCH / "results.json").read_text())

    def verdict(self, R, label):
        rows = [r for r in target_rows(R) if r[0] == label]
        self.assertEqual(len(rows), 1, label)
        return rows[0][3]

    def test_status(self):
        self.assertEqual([status(None), status(True), status(False)], ["n/a", "met", "**missed**"])

    def verdicts(self, mode, group, key, label, cases):
        """Each (value, verdict) of cases: `key` of a group's load results set
        to the value, and the verdict of the target `label`."""
        R = copy.deepcopy(self.R)
        G = R["load"]["modes"][mode][group]
        for v, want in cases:
            G[key] = v
            self.assertEqual(self.verdict(R, label), want, v)

    def test_p50_ratio(self):
        self.verdicts("shared", "pair", "p50_ratio_worst", "pair p50 merged ÷ unmerged, same rate (shared)",
                      ((TARGETS["pair_p50_ratio"], "met"), (0.51, "**missed**"), (None, "n/a")))

    def test_throughput_ratio(self):
        self.verdicts("pinned", "chain", "max_sustained_ratio", "chain max sustainable throughput merged ÷ unmerged (pinned)",
                      ((4.0, "met"), (3.99, "**missed**"), (None, "n/a")))

    def fused_verdict(self, label, set_runs):
        """The verdict of `label` once set_runs(G) has set the pinned
        chain's runs."""
        R = copy.deepcopy(self.R)
        set_runs(R["load"]["modes"]["pinned"]["chain"])
        return self.verdict(R, label)

    def test_fused_p50_judged_on_the_pairs_of_every_rate(self):
        label = "chain p50 merged ÷ hand-fused, same rate (pinned)"

        def rounds(merged):
            def set_runs(G):
                for row in G["fixed_rate"]:
                    row["fused"]["p50_runs_ms"] = [2.0] * 4
                    row["merged"]["p50_runs_ms"] = [2.0 * merged(k) for k in range(4)]
            return set_runs

        # Ratios 1.00 and 1.02 in turn: the interval is within 1.05.
        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 1.0 + 0.02 * (k % 2))), "met")
        # 1.08 and 1.10: wholly beyond it.
        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 1.08 + 0.02 * (k % 2))), "**missed**")
        # 0.90 and 1.20: a mean of 1.04, but the runs cannot tell.
        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 0.9 + 0.3 * (k % 2))), status(UNRESOLVED))

    def test_fused_p50_ignores_rates_either_did_not_sustain(self):
        label = "chain p50 merged ÷ hand-fused, same rate (pinned)"

        def set_runs(G):
            for row in G["fixed_rate"]:
                row["fused"]["p50_runs_ms"] = [2.0, 2.0]
                row["merged"]["p50_runs_ms"] = [2.0, 2.02] if row["fused"]["sustained"] else [9.0, 9.0]
                row["merged"]["sustained"] &= row["fused"]["sustained"]
        self.assertEqual(self.fused_verdict(label, set_runs), "met")

    def test_fused_throughput_judged_on_closed_loop_pairs(self):
        label = "chain throughput merged ÷ hand-fused, saturated closed loop (pinned)"

        def rounds(merged):
            def set_runs(G):
                G["closed_loop"]["fused"]["ok_runs_rps"] = [1000.0] * 5
                G["closed_loop"]["merged"]["ok_runs_rps"] = [1000.0 * merged(k) for k in range(5)]
            return set_runs

        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 0.98 + 0.01 * (k % 2))), "met")
        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 0.90 + 0.01 * (k % 2))), "**missed**")
        self.assertEqual(self.fused_verdict(label, rounds(lambda k: 0.8 + 0.3 * (k % 2))), status(UNRESOLVED))
        # One run each (results from before the closed loop was repeated): no interval, no verdict.
        self.assertEqual(self.fused_verdict(label, lambda G: None), "n/a")

    def test_dispatch(self):
        R = copy.deepcopy(self.R)
        for v, want in ((1000.0, "met"), (1000.5, "**missed**")):
            R["dispatch"]["overhead_vs_direct_async_fn_ns"] = v
            self.assertEqual(self.verdict(R, "in-process dispatch overhead per call"), want, v)

    def test_merge_step_judged_at_the_last_job_count(self):
        R = copy.deepcopy(self.R)
        steps = R["builds"]["pair"]["merge_step"]
        last = list(steps)[-1]
        label = "merge step (cargo fresh), pair: wall"
        steps[last]["wall_s"] = 6.0
        steps["1"]["wall_s"] = 60.0  # -j 1 is shown, not judged
        self.assertEqual(self.verdict(R, label), "met")
        steps[last]["wall_s"] = 6.1
        self.assertEqual(self.verdict(R, label), "**missed**")

    def test_cold_build(self):
        R = copy.deepcopy(self.R)
        for v, want in ((1.3, "met"), (1.31, "**missed**")):
            R["builds"]["chain"]["cold_ratio"] = v
            self.assertEqual(self.verdict(R, "cold fmerge build ÷ cargo build, chain"), want, v)

    def test_watchdog_rows(self):
        fixed = {"direct": {"cpu_us_per_request": {"social-graph-get-followers": 100.0}, "p50_ms": 0.5, "p99_ms": 1.0,
                            "offered_rps": 500, "achieved_rps": 500.0, "cpu_others_pct": 3.0},
                 "watchdog": {"cpu_us_per_request": {WATCHDOG: 150.0, BEHIND: 110.0}, "p50_ms": 1.0, "p99_ms": 3.0,
                              "offered_rps": 500, "achieved_rps": 499.0, "cpu_others_pct": 4.0}}
        closed = {"direct": {"ok_rps": 4000.0}, "watchdog": {"ok_rps": 2000.0}}
        W = {"function": "social-graph-get-followers", "rate": 500, "fixed_rate": fixed, "closed_loop": closed,
             **watchdog_verdict(fixed, closed)}
        label = "CPU per request, of-watchdog + social-graph-get-followers ÷ our runtime serving it directly (shared)"
        # From an --only watchdog run, and from the load runs.
        R = {k: v for k, v in self.R.items() if k not in ("load", "builds", "dispatch", "sizes")}
        R["watchdog"] = {"shared": W}
        self.assertEqual(self.verdict(R, label), "met")
        md = render_md(R)
        self.assertIn("### Our runtime against of-watchdog in front of it", md)
        self.assertIn("CPU per request 2.60×", md)
        self.assertNotIn("### Latency at fixed rates", md)
        R2 = copy.deepcopy(self.R)
        R2["load"]["modes"]["shared"]["watchdog"] = copy.deepcopy(W)
        R2["load"]["modes"]["shared"]["watchdog"]["cpu_ratio"] = 0.9
        self.assertEqual(self.verdict(R2, label), "**missed**")

    def test_control_run_draws_no_verdict_on_merging(self):
        R = copy.deepcopy(self.R)
        R["control"] = True
        label = "chain p50 merged ÷ hand-fused, same rate (pinned)"
        self.assertEqual(self.verdict(R, label), CONTROL)
        self.assertEqual(self.verdict(R, "chain max sustainable throughput merged ÷ unmerged (pinned)"), CONTROL)
        # Builds are no load figures: judged as ever.
        self.assertEqual(self.verdict(R, "cold fmerge build ÷ cargo build, chain"), self.verdict(self.R, "cold fmerge build ÷ cargo build, chain"))
        self.assertIn("**A/A control run**", render_md(R))
        self.assertNotIn("**A/A control run**", render_md(self.R))

    def test_the_merged_binary_s_lto_mode_and_its_build_are_reported(self):
        R = copy.deepcopy(self.R)
        # Results from before --merged-lto: no mode anywhere, no release build.
        R.pop("merged_lto", None)
        for b in R["builds"].values():
            b.pop("merged_lto", None)
            b.pop("release_merge", None)
        before = copy.deepcopy(R)
        self.assertNotIn("fmerge build --lto", render_md(R))
        chain = R["builds"]["chain"]
        R["merged_lto"] = {"chain": "own"}
        chain["release_merge"] = copy.deepcopy(chain["noop_remerge"])
        chain["release_merge"]["wall_s"] = 12.25
        md = render_md(R)
        self.assertIn("**merged** (fmerge's binary, `fmerge build --lto own`)", md)
        row = next(line for line in md.splitlines() if "release merge step, `--lto own`" in line)
        self.assertIn("| 12.2 s |", row)
        # Older results kept the mode in their builds.
        old = copy.deepcopy(before)
        old["builds"]["chain"]["merged_lto"] = "own"
        self.assertIn("**merged** (fmerge's binary, `fmerge build --lto own`)", render_md(old))

    def test_reused_binaries_say_how_the_merged_one_was_built(self):
        R = copy.deepcopy(self.R)
        R["builds"], R["merged_lto"] = None, {"chain": "own"}  # --reuse-bins: no builds, the mode kept beside the copy
        self.assertIn("**merged** (fmerge's binary, `fmerge build --lto own`)", render_md(R))
        R["merged_lto"] = {}  # copies from before the mode was kept
        self.assertIn("**merged** (fmerge's binary)", render_md(R))

    def test_committed_results_render(self):
        md = render_md(self.R)
        self.assertTrue(md.startswith(f"Measured {self.R['started']}"))
        self.assertIn("| target | goal | measured | |", md)

    def test_repeated_runs_render_every_p50(self):
        R2 = copy.deepcopy(self.R)
        R2["load"]["repeat"] = R2["load"]["closed_repeat"] = 3
        pair = next(m for m in R2["load"]["modes"].values() if "pair" in m)["pair"]
        pair["fixed_rate"][0]["merged"]["p50_runs_ms"] = [1.25, 1.5, 1.75]
        md = render_md(R2)
        self.assertIn("3 rounds of runs per rate", md)
        self.assertIn("(of 1.25, 1.50, 1.75)", md)
        self.assertIn("3 rounds of runs per rate (and of the closed loop)", md)
        R2["load"]["closed_repeat"] = 40
        self.assertIn("3 rounds of runs per rate (40 of the closed loop)", render_md(R2))


class MedianRun(unittest.TestCase):
    def test_one_run_is_itself(self):
        r = {"p50_ms": 2.0}
        self.assertIs(median_run([r]), r)
        self.assertNotIn("p50_runs_ms", r)

    def test_the_run_with_the_median_p50_is_kept_and_every_p50_listed(self):
        runs = [{"p50_ms": 3.0, "tag": "a"}, {"p50_ms": 1.0, "tag": "b"}, {"p50_ms": 2.0, "tag": "c"}]
        m = median_run(runs)
        self.assertEqual(m["tag"], "c")
        self.assertEqual(m["p50_runs_ms"], [3.0, 1.0, 2.0])

    def test_a_run_without_a_p50_counts_as_the_slowest(self):
        runs = [{"p50_ms": None, "tag": "a"}, {"p50_ms": 5.0, "tag": "b"}, {"p50_ms": 4.0, "tag": "c"}]
        self.assertEqual(median_run(runs)["tag"], "b")

    def test_closed_loop_runs_keep_the_median_throughput(self):
        runs = [{"ok_rps": 900.0, "tag": "a"}, {"ok_rps": 1100.0, "tag": "b"}, {"ok_rps": 1000.0, "tag": "c"}]
        m = median_run(runs, "ok_rps")
        self.assertEqual(m["tag"], "c")
        self.assertEqual(m["ok_runs_rps"], [900.0, 1100.0, 1000.0])

    def test_the_order_turns_each_round(self):
        deps = ["unmerged", "merged", "fused"]
        self.assertEqual([in_turn(deps, k)[0] for k in range(4)], ["unmerged", "merged", "fused", "unmerged"])
        self.assertEqual(sorted(in_turn(deps, 2)), sorted(deps))


class Paired(unittest.TestCase):
    def test_identical_runs_read_one_with_no_width(self):
        est = paired([(2.0, 2.0)] * 5)
        self.assertEqual((est["n"], est["ratio"], est["low"], est["high"]), (5, 1.0, 1.0, 1.0))

    def test_interval_is_students_t_on_the_logs(self):
        # Ten pairs whose log-ratios are ±0.1 around log 1.03: mean log 1.03,
        # standard deviation 0.1 * sqrt(10 / 9); t(0.95, 9 df) = 1.833 from the table.
        pairs = [(1.03 * math.exp(0.1 if k % 2 else -0.1), 1.0) for k in range(10)]
        est = paired(pairs)
        half = 1.833 * 0.1 * math.sqrt(10 / 9) / math.sqrt(10)
        self.assertAlmostEqual(est["ratio"], 1.03, places=9)
        self.assertAlmostEqual(est["low"], 1.03 * math.exp(-half), places=3)
        self.assertAlmostEqual(est["high"], 1.03 * math.exp(half), places=3)

    def test_too_few_or_empty_pairs_give_none(self):
        self.assertIsNone(paired([]))
        self.assertIsNone(paired([(1.0, 2.0)]))
        self.assertIsNone(paired([(1.0, 2.0), (None, 2.0)]))

    def test_against_a_goal_on_either_side(self):
        est = {"low": 0.97, "high": 1.04}
        self.assertIs(against(est, 1.05, most=True), True)
        self.assertIs(against(est, 0.95, most=False), True)
        self.assertIs(against(est, 0.96, most=True), False)
        self.assertIs(against(est, 1.06, most=False), False)
        self.assertEqual(against(est, 1.0, most=True), UNRESOLVED)
        self.assertEqual(against(est, 1.0, most=False), UNRESOLVED)
        self.assertIsNone(against(None, 1.0, most=True))



if __name__ == "__main__":
    unittest.main()
