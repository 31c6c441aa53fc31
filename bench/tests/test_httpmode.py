"""--only httpmode: its verdicts against issue 50's targets, its section of
the results, and the per-call lines it reads."""

import sys
import unittest
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from fmbench.config import REQUESTS, TARGETS  # noqa: E402
from fmbench.httpbed import DEPLOYMENTS, namespaced, split  # noqa: E402
from fmbench.httpmode import render_httpmode, verdict  # noqa: E402
from fmbench.process import PERCALL  # noqa: E402
from fmbench.processreport import verdict_row  # noqa: E402


def run(p50, sustained=True, rate=100):
    return {"p50_ms": p50, "p99_ms": 2 * p50, "sustained": sustained, "offered_rps": rate, "tier_cpu_us": 900.0}


def row(rate, u, m, us=True, ms=True):
    return {"rate": rate, "unmerged": run(u, us, rate), "merged": run(m, ms, rate), "p50_ratio": m / u, "p99_ratio": m / u}


def results(rows, rates, kept_us, handled_us=12.0, quote=None):
    res = {"load": {"fixed_rate": rows, "max_sustained_rate": rates, "max_sustained_lower_bound": {}},
            "per_call": {"direct": {"served_kept_us": kept_us, "served_us": 400.0, "handled_kept_us": handled_us},
                         "hop": {"hop_ms": 2.5}},
            "build": {"merge_step_s": 1.5}}
    if quote:
        res["load_quote"] = {"fixed_rate": quote[0], "max_sustained_rate": quote[1], "max_sustained_lower_bound": {}}
    return res


class Verdicts(unittest.TestCase):
    def test_each_target_is_judged(self):
        good = results([row(20, 10.0, 4.0), row(40, 12.0, 5.0)], {"unmerged": 40, "merged": 100}, 30.0)
        v = verdict(good)["verdicts"]
        self.assertAlmostEqual(v["p50_ratio"]["value"], 5.0 / 12.0)
        self.assertTrue(v["p50_ratio"]["ok"])
        self.assertEqual(v["throughput_ratio"]["value"], 2.5)
        self.assertTrue(v["throughput_ratio"]["ok"])
        self.assertTrue(v["served_call_ms"]["ok"])
        self.assertTrue(v["handle_call_ms"]["ok"])
        bad = results([row(20, 10.0, 6.0), row(40, 30.0, 8.0, us=False)], {"unmerged": 40, "merged": 60}, 200.0, 25.0)
        v = verdict(bad)["verdicts"]
        self.assertEqual(v["p50_ratio"]["rates"], [20])
        self.assertFalse(v["p50_ratio"]["ok"])
        self.assertFalse(v["throughput_ratio"]["ok"])
        self.assertFalse(v["served_call_ms"]["ok"])
        self.assertFalse(v["handle_call_ms"]["ok"])
        self.assertEqual(TARGETS["served_call_over_work_ms"], 0.15)
        self.assertEqual(TARGETS["handle_call_over_work_ms"], 0.02)

    def test_the_three_function_chain_is_judged_on_its_own(self):
        # The whole chain misses, the three-function chain meets: each says so.
        res = results([row(20, 10.0, 6.0)], {"unmerged": 40, "merged": 60}, 30.0,
                      quote=([row(20, 10.0, 3.0), row(40, 12.0, 4.0)], {"unmerged": 40, "merged": 120}))
        res.update(verdict(res))
        v = res["verdicts"]
        self.assertFalse(v["p50_ratio"]["ok"])
        self.assertFalse(v["throughput_ratio"]["ok"])
        self.assertAlmostEqual(v["quote_p50_ratio"]["value"], 4.0 / 12.0)
        self.assertTrue(v["quote_p50_ratio"]["ok"])
        self.assertEqual(v["quote_throughput_ratio"]["value"], 3.0)
        self.assertTrue(v["quote_throughput_ratio"]["ok"])
        lines = []
        render_httpmode(lines, {"httpmode": res})
        text = "\n".join(lines)
        for figure in ("three-function chain (`/quote`): p50 merged ÷ unmerged, worst rate both sustained | 0.33 | ≤ 0.5 | met",
                       "whole chain (five functions): p50 merged ÷ unmerged, worst rate both sustained | 0.60 | ≤ 0.5 | **missed**",
                       "| 40 | 12.00 | 4.00 | 0.33 |", "unmerged 40, merged 120"):
            self.assertIn(figure, text)
        self.assertEqual(REQUESTS["httpmode-quote"], REQUESTS["httpmode"])

    def test_the_section_says_every_figure(self):
        res = results([row(20, 10.0, 4.0)], {"unmerged": 40, "merged": 100}, 30.0)
        res.update(verdict(res))
        lines = []
        render_httpmode(lines, {"httpmode": res})
        text = "\n".join(lines)
        for figure in ("kept connection (µs) | 30.0", "replying at once) | 12.0 | ≤ 20 |", "unmerged hop, gateway + of-watchdog (ms) | 2.50",
                       "| 20 | 10.00 | 4.00 | 0.40 |", "unmerged 40, merged 100"):
            self.assertIn(figure, text)


class FixedPart(unittest.TestCase):
    def test_quote_is_split_at_the_rate_of_its_verdict(self):
        quote = {"fixed_rate": [row(20, 2.0, 1.2), row(40, 3.0, 1.5), row(80, 9.0, 2.0, us=False)]}
        at = verdict_row(quote)
        self.assertEqual(at["rate"], 20)  # 0.60, the worst ratio both sustained
        fp = split(at, {"unmerged": run(0.8), "merged": run(0.7)})
        self.assertAlmostEqual(fp["unmerged"]["calls_ms"], 1.2)
        self.assertAlmostEqual(fp["merged"]["calls_ms"], 0.5)
        self.assertAlmostEqual(fp["calls_ratio"], 0.5 / 1.2)
        self.assertAlmostEqual(fp["best_ratio"], 0.7 / 2.0)
        self.assertIsNone(verdict_row({"fixed_rate": [row(80, 9.0, 2.0, us=False)]}))
        res = results([row(20, 10.0, 4.0)], {"unmerged": 40, "merged": 100}, 30.0, quote=(quote["fixed_rate"], {"unmerged": 40, "merged": 100}))
        res["fixed_part"] = fp
        res["fixed_part_whole"] = split(row(20, 10.0, 4.0), {"unmerged": run(0.8), "merged": run(0.9)})
        res.update(verdict(res))
        lines = []
        render_httpmode(lines, {"httpmode": res})
        text = "\n".join(lines)
        for figure in ("unmerged / merged (ms) | 0.80 / 0.70 |", "merged ÷ unmerged | 1.20 / 0.50; 0.42 |",
                       "`/quote`'s p50 ratio at 20 req/s were its merged calls free (merged without calls ÷ unmerged) | 0.35 |",
                       "the whole chain's calls at 20 req/s: its p50 less the above, unmerged / merged (ms); merged ÷ unmerged "
                       "| 9.20 / 3.10; 0.34 |"):
            self.assertIn(figure, text)


class Deployments(unittest.TestCase):
    def test_the_chain_is_the_tests(self):
        # The ports and settings merger/tests/support/httpmode.rs deploys.
        support = (BENCH.parent / "merger" / "tests" / "support" / "httpmode.rs").read_text()
        for name, port, settings in DEPLOYMENTS:
            self.assertIn(f'("{name}", {port}, &[', support)
            for k, v in settings.items():
                self.assertIn(f'("{k}", "{v}")', support)
        self.assertEqual(namespaced("order-front", "PORT"), "ORDER_FRONT__PORT")
        self.assertEqual(REQUESTS["httpmode"], {"item": "book", "look": "plain"})

    def test_percall_served_lines(self):
        m = PERCALL.search("round 1: served-kept 24.6 µs per call (3000 calls); load 0.30\n")
        self.assertEqual(m.groups(), ("1", "served-kept", "24.6", "3000", "0.30"))


if __name__ == "__main__":
    unittest.main()
