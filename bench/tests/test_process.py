"""`--only process`: its flags, the namespace's hosts file, the CPU of
reaped children, the per-call arithmetic, the replies check, the verdicts
against issue 49's targets, and its section of the results."""

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from helpers import BENCH, args

from fmbench import cli
from fmbench.config import TARGETS, write_atomic
from fmbench.process import PERCALL, count_ldd, parse_fmerge_stdout, worker_failed
from fmbench.processbed import hosts_text, partial_out, reaped_ticks
from fmbench.processcalls import derive, percentile, same_replies, summary
from fmbench.processreport import refine_rows, throughput_verdict, verdict
from fmbench.report import render_md
from fmbench.targets import UNRESOLVED


class Flags(unittest.TestCase):
    def test_only_process(self):
        a = args("--only", "process")
        self.assertEqual(a.results, str(BENCH / "results-process"))
        self.assertEqual(a.calls, 300)
        self.assertTrue(a.skip_dispatch)
        self.assertEqual(args("--only", "process", "--rates", "pair=10,20").rates, {"pair": [10, 20]})

    def test_only_process_refuses_what_contradicts_it(self):
        for bad in (["--skip-load"], ["--no-watchdog"], ["--reuse-bins"], ["--calls", "0"]):
            with self.assertRaises(SystemExit, msg=bad):
                args("--only", "process", *bad)


class Namespace(unittest.TestCase):
    def test_hosts_with_and_without_the_trailing_dot(self):
        text = hosts_text(["gateway.openfaas.svc.cluster.local."])
        self.assertIn("127.0.0.1 localhost\n", text)
        self.assertIn("127.0.0.1 gateway.openfaas.svc.cluster.local gateway.openfaas.svc.cluster.local.\n", text)

    def test_reaped_ticks_are_cutime_and_cstime(self):
        # pid (comm with ") " inside) state ppid ... utime=14 stime=15 cutime=16 cstime=17 (fields 14-17)
        stat = "123 (of-watchdog) x) S 1 2 3 4 5 6 7 8 9 10 100 200 30 40 20 0 1"
        self.assertEqual(reaped_ticks(stat), 70)


def medians(**over):
    m = {"true": 0.5, "rust_idle": 0.6, "callee_idle": 1.5, "caller_idle": 1.6, "merged_idle": 1.8, "callee": 2.5, "member": 2.8,
         "hop": 4.0, "caller_unmerged": 7.0, "caller_merged": 5.5, "merged_idle_forked": 2.0, "caller_merged_forked": 6.0,
         "merged_idle_warm": 0.9, "caller_merged_warm": 4.4}
    m.update(over)
    return m


class PerCall(unittest.TestCase):
    def test_derive(self):
        d = derive(medians())
        self.assertAlmostEqual(d["callee_work_ms"], 1.0)
        self.assertAlmostEqual(d["unmerged_hop_over_work_ms"], 3.0)
        self.assertAlmostEqual(d["saved_per_call_ms"], 1.5)
        # hop − saved − (merged_idle − caller_idle) = 4.0 − 1.5 − 0.2
        self.assertAlmostEqual(d["merged_path_ms"], 2.3)
        self.assertAlmostEqual(d["merged_path_over_work_ms"], 1.3)
        # The forked runs: hop − (7.0 − 6.0) − (2.0 − 1.6)
        self.assertAlmostEqual(d["forked_path_ms"], 2.6)
        self.assertAlmostEqual(d["forked_path_over_work_ms"], 1.6)
        self.assertAlmostEqual(d["member_process_over_work_ms"], 1.8)
        self.assertAlmostEqual(d["merged_start_over_callee_start_ms"], 0.3)
        self.assertAlmostEqual(d["warm_start_saved_ms"], 0.9)
        self.assertAlmostEqual(d["warm_request_saved_ms"], 1.1)

    def test_summary(self):
        xs = [i / 1000 for i in range(1, 12)]  # 1..11 ms
        s = summary(xs)
        self.assertEqual(s["n"], 11)
        self.assertAlmostEqual(s["median_ms"], 6.0)
        self.assertAlmostEqual(s["p10_ms"], 2.0)
        self.assertAlmostEqual(s["p90_ms"], 10.0)
        self.assertEqual(percentile([3.0], 0.9), 3.0)

    def test_same_replies(self):
        ok = {"callee": b"f", "member": b"f", "hop": b"f", "caller_unmerged": b"u", "caller_merged": b"u",
              "caller_merged_forked": b"u", "caller_merged_warm": b"u"}
        self.assertEqual(same_replies(ok), "")
        self.assertIn("forked", same_replies(dict(ok, caller_merged_forked=b"v")))
        self.assertIn("warm", same_replies(dict(ok, caller_merged_warm=b"v")))
        self.assertIn("member", same_replies(dict(ok, member=b"g")))
        self.assertIn("caller", same_replies(dict(ok, caller_merged=b"v")))
        self.assertIn("callee", same_replies(dict(ok, callee=b"", member=b"", hop=b"")))


def run(p50, sustained=True, rate=100):
    return {"p50_ms": p50, "p99_ms": 2 * p50, "sustained": sustained, "offered_rps": rate, "tier_cpu_us": 900.0}


def results(rows, rates, lower, over=1.0, inside=0.04):
    return {
        "check": {"unmerged": {"reply": '{"updated":50}', "gateway_calls_per_request": 1},
                  "merged": {"reply": '{"updated":50}', "gateway_calls_per_request": 0}},
        "load": {"fixed_rate": rows, "max_sustained_rate": rates, "max_sustained_lower_bound": lower,
                 "refine": {"unmerged": [], "merged": [run(9.0, False, 130)]},
                 "closed_loop": {d: {"ok_rps": 120.0, "p50_ms": 200.0} for d in ("unmerged", "merged")}},
        "per_call": {"rounds": 3, "seconds": 1.0, "loadavg": [[0.5, 0, 0], [0.6, 0, 0]], "kinds": {k: {"median_ms": v, "p10_ms": v, "p90_ms": v} for k, v in medians().items()},
                     "derived": derive(medians()),
                     "direct": {"in_process_us": 1e3 * inside, "forked_us": 1e3 * over,
                                "runs": {"inner": [{"us": 1e3 * inside, "calls": 3000, "load": "0.5"}],
                                         "echo": [{"us": 1e3 * over, "calls": 1000, "load": "0.5"}]}}},
        "build": {"merge_step_s": 1.2, "shared_libraries": 32, "sizes_bytes": {"merged": 2**20, "WriteHomeTimeline": 2**20,
                                                       "SocialGraphGetFollowers": 2**20}},
        "args": {"duration": 5, "connections": 64, "closed_connections": 32, "closed_duration": 5},
    }


def row(rate, u, m, us=True, ms=True):
    return {"rate": rate, "unmerged": run(u, us, rate), "merged": run(m, ms, rate), "p50_ratio": m / u, "p99_ratio": m / u}


class WorkerOutput(unittest.TestCase):
    def test_written_whole_and_in_place(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "results.json"
            out.write_text("the run before\n")
            write_atomic(out, "this run\n")
            self.assertEqual(out.read_text(), "this run\n")
            self.assertEqual(sorted(p.name for p in Path(d).iterdir()), ["results.json"])

    def test_a_failed_worker_says_what_it_kept(self):
        with tempfile.TemporaryDirectory() as d:
            plan = {"out": str(Path(d) / "httpmode-worker.json")}
            said = worker_failed("httpmode", 1, plan, Path(d))
            self.assertEqual(said, f"the httpmode worker failed (1); its logs are under {d}")
            write_atomic(partial_out(plan), json.dumps({"check": {}, "hop": {}, "load": {}}))
            said = worker_failed("httpmode", 1, plan, Path(d))
            self.assertIn(f"what it measured before it failed (check, hop, load) is in {partial_out(plan)}", said)
            self.assertTrue(said.endswith(f"its logs are under {d}"), said)


class Orphans(unittest.TestCase):
    def test_a_subreaper_ends_the_orphans_a_killed_child_left(self):
        # In a process of its own: being a subreaper lasts for the process.
        prog = """
import os, subprocess, sys, time
from fmbench.processes import become_subreaper, children_of, kill_adopted
become_subreaper("the test")
kept = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# A shell that leaves a shell running with a sleep of its own, as a killed
# worker leaves its watchdogs with their functions.
said = sys.argv[1]
out = subprocess.run(["sh", "-c", f"sh -c 'sleep 60 >/dev/null 2>&1 & echo $!; wait' >{said} 2>/dev/null & echo $!"],
                     capture_output=True, text=True).stdout
orphan = int(out)
for _ in range(100):
    if os.path.exists(said) and open(said).read().strip():
        break
    time.sleep(0.05)
grandchild = int(open(said).read())
for _ in range(100):
    if orphan in children_of(os.getpid()):
        break
    time.sleep(0.05)
adopted = orphan in children_of(os.getpid())
kill_adopted(keep={kept.pid})
left = children_of(os.getpid())
kept.kill()
print(adopted, os.path.exists(f"/proc/{orphan}"), os.path.exists(f"/proc/{grandchild}"), left == [kept.pid])"""
        with tempfile.TemporaryDirectory() as d:
            said = Path(d) / "grandchild"
            out = subprocess.run([sys.executable, "-c", prog, str(said)], cwd=BENCH, capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual(out.stdout.split(), ["True", "False", "False", "True"], out.stderr)


class Verdicts(unittest.TestCase):
    def test_p50_is_judged_at_the_worst_rate_both_sustained(self):
        rows = [row(20, 10.0, 5.0), row(40, 10.0, 7.0), row(80, 40.0, 8.0, us=False)]
        v = verdict(results(rows, {"unmerged": 40, "merged": 80}, {}))["verdicts"]
        self.assertAlmostEqual(v["p50_ratio"]["value"], 0.7)
        self.assertEqual(v["p50_ratio"]["rates"], [20, 40])
        self.assertFalse(v["p50_ratio"]["ok"])
        self.assertEqual(v["throughput_ratio"]["value"], 2.0)
        self.assertTrue(v["throughput_ratio"]["ok"])
        self.assertTrue(v["call_over_work_ms"]["ok"])
        self.assertTrue(v["inprocess_call_over_work_ms"]["ok"])
        v = verdict(results([row(20, 10.0, 5.0)], {"unmerged": 20, "merged": 20}, {}, over=2.5, inside=0.3))["verdicts"]
        self.assertTrue(v["p50_ratio"]["ok"])
        self.assertFalse(v["throughput_ratio"]["ok"])
        self.assertFalse(v["call_over_work_ms"]["ok"])
        self.assertFalse(v["inprocess_call_over_work_ms"]["ok"])
        self.assertEqual(TARGETS["process_call_over_work_ms"], 2.0)
        self.assertEqual(TARGETS["inprocess_call_over_work_ms"], 0.05)

    def test_p50_over_rounds_is_paired(self):
        r = row(20, 10.0, 5.0)
        r["unmerged"]["p50_runs_ms"], r["merged"]["p50_runs_ms"] = [10.0, 10.0, 10.0], [5.0, 6.0, 4.0]
        est = verdict(results([r], {"unmerged": 20, "merged": 20}, {}))["verdicts"]["p50_ratio"]["paired"]
        self.assertEqual(est["n"], 3)
        self.assertAlmostEqual(est["ratio"], (0.5 * 0.6 * 0.4) ** (1 / 3))
        self.assertIsNone(verdict(results([row(20, 10.0, 5.0)], {"unmerged": 20, "merged": 20}, {}))["verdicts"]["p50_ratio"]["paired"])

    def test_no_rate_both_sustained_is_na(self):
        v = verdict(results([row(20, 10.0, 5.0, us=False)], {"unmerged": None, "merged": 20}, {}))["verdicts"]
        self.assertIsNone(v["p50_ratio"]["ok"])
        self.assertIsNone(v["throughput_ratio"]["ok"])

    def test_throughput_lower_bounds(self):
        goal = 1.5
        self.assertEqual(throughput_verdict({"unmerged": 100, "merged": 120}, {"merged": True}, goal), (1.2, UNRESOLVED))
        self.assertEqual(throughput_verdict({"unmerged": 100, "merged": 120}, {"unmerged": True}, goal), (1.2, False))
        self.assertEqual(throughput_verdict({"unmerged": 100, "merged": 200}, {"unmerged": True}, goal), (2.0, UNRESOLVED))
        self.assertEqual(throughput_verdict({"unmerged": 100, "merged": 200}, {"merged": True}, goal), (2.0, True))


class Render(unittest.TestCase):
    def test_section(self):
        P = results([row(20, 10.0, 5.0)], {"unmerged": 20, "merged": 20}, {"merged": True})
        P.update(verdict(P))
        R = {"started": "2026-11-28 15:00", "finished": "2026-11-28 15:10", "argv": ["--only", "process"], "src": "worktree",
             "src_rev": "abc", "loadavg_start": [0.5, 0.5, 0.5], "loadavg_end": [0.6, 0.6, 0.6], "targets": TARGETS,
             "machine": {"cores": 2, "cpu": "x", "memory_gib": 4, "os": "linux", "rustc": "rustc", "git_rev": "abc",
                         "git_dirty": False},
             "process": P}
        md = render_md(R)
        self.assertIn("### Watchdog-process functions, merged", md)
        self.assertIn("| 130 |  |  |  | 9.00 ✗ |", md)  # a refining run: merged only
        self.assertIn("20 ÷ 20 req/s", md.replace("20+", "20"))
        self.assertIn("Merge step (`--force`, cargo fresh, one run): 1.20 s", md)

    def test_refine_rows_one_per_rate_off_the_ladder(self):
        lo = {"fixed_rate": [row(20, 10.0, 5.0)],
              "refine": {"unmerged": [run(9.0, True, 24), run(9.0, True, 20)], "merged": [run(8.0, False, 24)]}}
        rows = refine_rows(lo)
        self.assertEqual([(r["rate"], sorted(k for k in r if k != "rate")) for r in rows], [(24, ["merged", "unmerged"])])

    def test_ldd(self):
        text = ("\tlinux-vdso.so.1 (0x1)\n\tlibcurl.so.4 => /lib/libcurl.so.4 (0x2)\n"
                "\tlibc.so.6 => /lib/libc.so.6 (0x3)\n\t/lib64/ld-linux-x86-64.so.2 (0x4)\n")
        self.assertEqual(count_ldd(text), 2)

    def test_percall_lines(self):
        # The line percall.rs prints, as it writes it, and one it printed.
        source = (BENCH.parent / "functions" / "shim" / "tests" / "percall.rs").read_text()
        self.assertIn('"round {round}: {} µs per call ({calls} calls); load {}"', source)
        m = PERCALL.search("round 2: inner 31.0 µs per call (3000 calls); load 0.41\n")
        self.assertEqual(m.groups(), ("2", "inner", "31.0", "3000", "0.41"))

    def test_fmerge_stdout(self):
        self.assertEqual(parse_fmerge_stdout("a\n/x/y-merged\n\n"), Path("/x/y-merged"))
        with self.assertRaises(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            parse_fmerge_stdout("")


if __name__ == "__main__":
    unittest.main()
