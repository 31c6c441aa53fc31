"""The application bench's figures over rounds: the interval of a figure,
the rates every deployment sustained in every round, which round's scrape
prices another round's projection (out of sample), and the highest
sustained rate and the mean latency gain per round."""

import copy
import unittest

from helpers import BENCH  # noqa: F401  (makes fmbench importable)

from fmbench.appstats import common_rate, hop_source, interval, mean_gains, runs_at, steady_rates, throughput
from test_app import mix_run, results


class Interval(unittest.TestCase):
    def test_mean_and_students_t_interval_of_three_rounds(self):
        x = interval([1.0, 2.0, 3.0])
        self.assertEqual((x["n"], x["mean"], x["min"], x["max"]), (3, 2.0, 1.0, 3.0))
        # t(0.975, 2) = 4.303, sd 1, √3: ±2.484.
        self.assertAlmostEqual(x["low"], 2.0 - 4.3027 / 3 ** 0.5, places=3)
        self.assertAlmostEqual(x["high"], 2.0 + 4.3027 / 3 ** 0.5, places=3)

    def test_two_rounds_use_the_exact_t_of_one_degree_of_freedom(self):
        x = interval([1.0, 3.0])  # sd √2 over √2 rounds: the half-width is t itself
        self.assertAlmostEqual(x["high"] - x["mean"], 12.7062, places=3)

    def test_one_value_has_a_mean_and_no_interval(self):
        x = interval([5.0, None])
        self.assertEqual((x["n"], x["mean"], x["low"], x["high"]), (1, 5.0, None, None))

    def test_no_value_gives_none(self):
        self.assertIsNone(interval([None, None]))
        self.assertIsNone(interval([]))

    def test_equal_rounds_give_a_zero_width_interval(self):
        x = interval([2.0, 2.0, 2.0])
        self.assertEqual((x["low"], x["high"]), (2.0, 2.0))


class OutOfSample(unittest.TestCase):
    def test_each_round_takes_the_next_rounds_hop_costs(self):
        self.assertEqual([hop_source(k, {0, 1, 2}, 3) for k in range(3)], [1, 2, 0])

    def test_a_round_never_prices_itself(self):
        self.assertIsNone(hop_source(0, {0}, 3))
        self.assertIsNone(hop_source(0, {0}, 1))

    def test_a_round_without_a_scrape_at_that_rate_is_skipped(self):
        self.assertEqual(hop_source(0, {0, 2}, 3), 2)
        self.assertEqual(hop_source(2, {1, 2}, 3), 1)


TWO_ROUNDS = results([[mix_run(100, 4.0), mix_run(200, 5.0), mix_run(400, 90.0, sustained=False)],
                      [mix_run(100, 4.0), mix_run(200, 90.0, sustained=False)]],
                     [[mix_run(100, 1.0), mix_run(200, 2.0), mix_run(400, 2.0)],
                      [mix_run(100, 2.0), mix_run(200, 2.0), mix_run(400, 3.0), mix_run(800, 90.0, sustained=False)]])


class Rounds(unittest.TestCase):
    def test_steady_rates_are_those_every_deployment_sustained_in_every_round(self):
        self.assertEqual(steady_rates(TWO_ROUNDS, "mixed", ["planner"]), [100, 200, 400])
        self.assertEqual(steady_rates(TWO_ROUNDS, "mixed", ["planner", "unmerged"]), [100])
        self.assertEqual(steady_rates(TWO_ROUNDS, "mixed", ["nobody"]), [])

    def test_the_profile_rate_falls_back_to_the_lowest_every_round_ran(self):
        self.assertEqual(common_rate(TWO_ROUNDS, "mixed", ["planner", "unmerged"]), 100)
        never = results([mix_run(100, 90.0, sustained=False)], [mix_run(100, 1.0)])
        self.assertEqual(common_rate(never, "mixed", ["planner", "unmerged"]), 100)
        self.assertIsNone(common_rate(never, "mixed", ["nobody"]))

    def test_throughput_per_round_and_its_ratio_to_unmerged_round_by_round(self):
        t = throughput(TWO_ROUNDS, "planner", "mixed")
        self.assertEqual(t["per_round"], [400, 400])
        self.assertEqual(t["ratio"]["mean"], 3.0)  # 400/200 and 400/100
        self.assertIsNone(throughput(TWO_ROUNDS, "unmerged", "mixed")["ratio"])

    def test_the_gain_is_unmerged_mean_less_this_one_in_the_same_round(self):
        g = mean_gains(TWO_ROUNDS, "planner", "mixed", 100, "compose-post")
        self.assertEqual(g, {"mean_ms": [1.0, 2.0], "gain_ms": [3.0, 2.0], "requests": [10.0, 10.0]})
        # The means, not the p50s: the plan projects expected latency.
        res = copy.deepcopy(TWO_ROUNDS)
        res["deployments"]["planner"]["mixed"]["rounds"][0]["runs"][0]["entries"]["compose-post"]["mean_ms"] = 1.5
        g = mean_gains(res, "planner", "mixed", 100, "compose-post")
        self.assertEqual(g["gain_ms"], [2.5, 2.0])

    def test_the_run_at_a_rate_in_each_round(self):
        runs = runs_at(TWO_ROUNDS, "unmerged", "mixed", 400)
        self.assertEqual([r and r["rate"] for r in runs], [400, None])


if __name__ == "__main__":
    unittest.main()
