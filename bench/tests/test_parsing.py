"""What bench/run reads: its flags, oha's JSON, /usr/bin/time -v, and the
settings it gives of-watchdog."""

import contextlib
import io
import json
import subprocess
import tempfile
import unittest
from pathlib import Path

from helpers import BENCH, HERE, args

from fmbench import cli
from fmbench.builds import parse_time_v
from fmbench.load import cpu_figures, parse_oha
from fmbench.testbed import nginx_conf
from fmbench.watchdog import watchdog_env


class Flags(unittest.TestCase):
    def test_defaults(self):
        a = args()
        self.assertEqual(a.modes, ["shared", "pinned"])
        self.assertEqual(a.deployments, ["unmerged", "merged", "fused"])
        self.assertEqual(a.groups, ["pair", "chain"])
        self.assertEqual(a.hop_rate, 500)
        self.assertEqual(a.rates, {})
        self.assertTrue(a.watchdog)
        self.assertIsNone(a.only)
        self.assertEqual(a.results, str(BENCH / "results"))

    def test_mode(self):
        self.assertEqual(args("--mode", "shared").modes, ["shared"])
        self.assertEqual(args("--mode", "pinned").modes, ["pinned"])
        self.assertEqual(args("--mode", "both").modes, ["shared", "pinned"])
        with self.assertRaises(SystemExit):
            args("--mode", "isolated")

    def test_no_fused(self):
        self.assertEqual(args("--no-fused").deployments, ["unmerged", "merged"])

    def test_control_needs_the_fused_load_runs(self):
        self.assertTrue(args("--control").control)
        self.assertFalse(args().control)
        for bad in (["--no-fused"], ["--skip-load"], ["--only", "watchdog"]):
            with self.assertRaises(SystemExit, msg=bad):
                args("--control", *bad)

    def test_closed_repeat_defaults_to_repeat(self):
        self.assertEqual(args("--repeat", "4").closed_repeat, 4)
        self.assertEqual(args("--repeat", "4", "--closed-repeat", "40").closed_repeat, 40)
        with self.assertRaises(SystemExit):
            args("--closed-repeat", "0")

    def test_hop_rate(self):
        self.assertEqual(args("--hop-rate", "250").hop_rate, 250)
        with self.assertRaises(SystemExit):
            args("--hop-rate", "fast")

    def test_groups(self):
        self.assertEqual(args("--groups", "chain").groups, ["chain"])
        self.assertEqual(args("--groups", "pair,").groups, ["pair"])
        with self.assertRaises(SystemExit):
            args("--groups", "pair,trio")

    def test_repeat(self):
        self.assertEqual(args().repeat, 1)
        self.assertEqual(args("--repeat", "3").repeat, 3)
        with self.assertRaises(SystemExit):
            args("--repeat", "0")

    def test_rates(self):
        a = args("--rates", "pair=100,200", "--rates", "chain=50")
        self.assertEqual(a.rates, {"pair": [100, 200], "chain": [50]})
        for bad in ("pair", "pair=", "trio=100", "pair=10,x", "pair=0"):
            with self.subTest(bad=bad), self.assertRaises(SystemExit):
                args("--rates", bad)

    def test_only_watchdog(self):
        a = args("--only", "watchdog", "--mode", "shared")
        self.assertTrue(a.watchdog)
        self.assertTrue(a.skip_dispatch)
        self.assertEqual(a.results, str(BENCH / "results-watchdog"))
        self.assertEqual(args("--only", "watchdog", "--results", "/tmp/x").results, "/tmp/x")
        self.assertIn("min", cli.estimate(a))
        for bad in (["--no-watchdog"], ["--skip-load"]):
            with self.subTest(bad=bad), self.assertRaises(SystemExit):
                args("--only", "watchdog", *bad)
        with self.assertRaises(SystemExit):
            args("--only", "everything")

    def test_only_app(self):
        a = args("--only", "app")
        self.assertEqual(a.app_deployments, ["unmerged", "watchdog", "planner", "bounded", "whole"])
        self.assertEqual(a.app_workloads, ["mixed", "compose-post"])
        self.assertEqual(a.modes, ["pinned"])
        self.assertEqual(a.app_rates, {})
        self.assertTrue(a.app_cold and a.watchdog and a.skip_dispatch)
        self.assertEqual(a.results, str(BENCH / "results-app"))
        self.assertIn("min", cli.estimate(a))
        # Unmerged always runs, first: it is seeded and gives the replies.
        a = args("--only", "app", "--app-deployments", "planner", "--app-rates", "mixed=300,100", "--no-app-cold")
        self.assertEqual(a.app_deployments, ["unmerged", "planner"])
        self.assertFalse(a.watchdog or a.app_cold)
        self.assertEqual(a.app_rates, {"mixed": [100, 300]})

    def test_only_app_of_the_generated_application(self):
        a = args("--only", "app", "--app", "genapp")
        self.assertEqual(a.app_deployments, ["unmerged", "planner"])
        self.assertEqual(a.app_workloads, ["mixed"])
        self.assertFalse(a.watchdog)
        self.assertEqual(a.results, str(BENCH / "results-genapp"))

    def test_the_generated_application_bad_input_names_the_flag(self):
        for argv, says in (
                (["--app", "genapp"], "--app genapp chooses the application of --only app: add --only app"),
                (["--only", "app", "--app", "genapp", "--app-workloads", "compose-post"],
                 "--app-workloads: unknown workload compose-post (one of mixed)"),
                (["--only", "app", "--app", "genapp", "--app-rates", "compose-post=100"],
                 "--app-rates compose-post=100")):
            out = io.StringIO()
            with self.subTest(argv=argv), self.assertRaises(SystemExit), contextlib.redirect_stdout(out):
                cli.parse_args(argv, BENCH)
            self.assertIn(says, out.getvalue())

    def test_only_app_bad_input_names_the_flag(self):
        for bad, says in (
                (["--app-deployments", "unmerged,fused"], "--app-deployments: unknown deployment fused"),
                (["--app-workloads", "reads"], "--app-workloads: unknown workload reads"),
                (["--app-rates", "mixed=0"], "--app-rates mixed=0"),
                (["--app-rates", "mixed=fast"], "--app-rates mixed=fast"),
                (["--app-rates", "writes=100"], "--app-rates writes=100"),
                (["--mode", "shared"], "drop --mode shared"),
                (["--skip-load"], "drop --skip-load")):
            out = io.StringIO()
            with self.subTest(bad=bad), self.assertRaises(SystemExit), contextlib.redirect_stdout(out):
                cli.parse_args(["--only", "app", *bad], BENCH)
            self.assertIn(says, out.getvalue())

    def test_no_watchdog(self):
        self.assertFalse(args("--no-watchdog").watchdog)

    def test_estimate_grows_with_what_runs(self):
        full, quick = cli.estimate(args()), cli.estimate(args("--quick", "--skip-dispatch", "--mode", "shared"))
        minutes = [int(s.split()[1]) for s in (full, quick)]
        self.assertGreater(minutes[0], minutes[1])

    def test_render_only_needs_its_json(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            cli.main(BENCH.parent, ["--render-only", "--results", str(Path(d) / "none")])


class Oha(unittest.TestCase):
    def test_real_output(self):
        # Captured from oha 1.16.0: 500 req/s for 10 s, 2 requests cut off at the end.
        raw = (HERE / "oha-sample.json").read_bytes()
        j = json.loads(raw)
        r = parse_oha(raw, 10, rate=500, connections=64)
        self.assertEqual(j["statusCodeDistribution"], {"200": 5000})
        self.assertEqual((r["ok"], r["requests"], r["aborted_at_end"], r["success_rate"]), (5000, 5000, 2, 1.0))
        self.assertEqual(r["ok_rps"], 500.0)
        self.assertEqual((r["offered_rps"], r["connections"], r["duration_s"]), (500, 64, 10))
        self.assertAlmostEqual(r["p50_ms"], j["latencyPercentiles"]["p50"] * 1000)
        self.assertAlmostEqual(r["p99_ms"], j["latencyPercentiles"]["p99"] * 1000)
        self.assertAlmostEqual(r["max_ms"], j["summary"]["slowest"] * 1000)
        self.assertEqual(r["achieved_rps"], j["summary"]["requestsPerSec"])

    def test_cut_off_requests_are_not_failures(self):
        out = json.dumps({
            "summary": {"requestsPerSec": 95.0, "slowest": 0.02, "average": 0.002},
            "latencyPercentiles": {"p50": 0.001, "p90": 0.003, "p99": 0.01},
            "statusCodeDistribution": {"200": 990, "500": 2},
            "errorDistribution": {"aborted due to deadline": 8, "connection reset by peer": 8},
        })
        r = parse_oha(out, 10, rate=100)
        self.assertEqual(r["aborted_at_end"], 8)
        self.assertEqual(r["requests"], 1000)  # 992 answered + 8 errors, the 8 cut off left out
        self.assertAlmostEqual(r["success_rate"], 0.99)
        self.assertAlmostEqual(r["ok_rps"], 99.0)
        self.assertAlmostEqual(r["p90_ms"], 3.0)

    def test_empty_run(self):
        r = parse_oha(json.dumps({"summary": {}, "latencyPercentiles": {}, "statusCodeDistribution": {},
                                  "errorDistribution": {}}), 5)
        self.assertEqual((r["ok"], r["requests"], r["success_rate"]), (0, 0, 0.0))
        self.assertIsNone(r["p50_ms"])

    def test_cpu_per_request(self):
        c = cpu_figures({"redis": 0.5, "fn": 1.5}, ok=1000, total_cpu=4.0, wall=2.0, ncpu=2)
        self.assertEqual(c["cpu_us_per_request"], {"fn": 1500.0, "redis": 500.0})
        self.assertEqual(c["cpu_total_pct"], 100.0)
        self.assertEqual(c["cpu_others_pct"], 50.0)
        self.assertIsNone(cpu_figures({"fn": 1.0}, ok=0, total_cpu=1.0, wall=1.0, ncpu=1)["cpu_us_per_request"])


class TimeV(unittest.TestCase):
    def test_sample(self):
        text = ("\tUser time (seconds): 12.50\n\tSystem time (seconds): 1.25\n"
                "\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02.50\n"
                "\tMaximum resident set size (kbytes): 204800\n")
        with tempfile.NamedTemporaryFile("w", suffix=".time") as f:
            f.write(text)
            f.flush()
            self.assertEqual(parse_time_v(f.name), (62.5, 200.0, 13.75))

    def test_hours(self):
        with tempfile.NamedTemporaryFile("w") as f:
            f.write("Elapsed (wall clock) time (h:mm:ss or m:ss): 1:00:01\n")
            f.flush()
            self.assertEqual(parse_time_v(f.name), (3601.0, None, None))

    @unittest.skipUnless(Path("/usr/bin/time").exists(), "/usr/bin/time is not installed")
    def test_real_time_v(self):
        with tempfile.NamedTemporaryFile() as f:
            subprocess.run(["/usr/bin/time", "-v", "-o", f.name, "sleep", "0.2"], check=True)
            wall, rss, cpu = parse_time_v(f.name)
        self.assertGreaterEqual(wall, 0.2)
        self.assertGreater(rss, 0)
        self.assertGreaterEqual(cpu, 0)


class Configs(unittest.TestCase):
    def test_watchdog_env(self):
        env = watchdog_env(9100, 9200, Path("/b/fn"), Path("/t"), 9300)
        self.assertEqual(env["mode"], "http")
        self.assertEqual(env["port"], "9100")
        self.assertEqual(env["upstream_url"], "http://127.0.0.1:9200")
        # The forked function inherits port=9100: `env` gives it its own,
        # and its runtime a metrics port of its own (of-watchdog holds 8081).
        self.assertEqual(env["fprocess"], "env port=9200 metrics_port=9300 /b/fn")
        self.assertEqual(env["TMPDIR"], "/t")

    def test_nginx_conf_routes(self):
        conf = nginx_conf(Path("/d"), 8000, [("a", 9001), ("b", 9002)], "auto")
        self.assertIn("listen 127.0.0.1:8000", conf)
        self.assertIn("upstream fn1 { server 127.0.0.1:9002", conf)
        self.assertIn("location = /function/a { proxy_pass http://fn0/; }", conf)
        self.assertIn("location /function/b/ { proxy_pass http://fn1/; }", conf)
        self.assertIn("worker_processes auto;", conf)
        # The settings it shares with the tests' gateway (functions/testkit/gateway-proxy.conf).
        self.assertIn("proxy_http_version 1.1;", conf)
        self.assertIn("client_body_temp_path client_body;", conf)


if __name__ == "__main__":
    unittest.main()
