"""The generated second application (fmbench.genapp): that it has what
issue 51's item 8 asks of it, that what it writes out is the application it
describes, and the checks its bench run is judged by."""

import fnmatch
import re
import tempfile
import unittest
from pathlib import Path

from helpers import BENCH

from fmbench import genapp
from fmbench.appchecks import checks, failure_check, share_check
from fmbench.appstack import declared_entries


def reachable(start, edges):
    seen, todo = set(), [start]
    while todo:
        f = todo.pop()
        for c in edges.get(f, []):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


class Shape(unittest.TestCase):
    def test_it_has_forty_functions_and_every_callee_is_one_of_them(self):
        self.assertGreaterEqual(len(genapp.SPEC), 40)
        edges = genapp.callees()
        for caller, names in edges.items():
            for c in names:
                self.assertIn(c, genapp.SPEC, f"{caller} calls {c}")
        reached = set().union(*(reachable(e, edges) for e in genapp.ENTRIES)) | set(genapp.ENTRIES)
        self.assertEqual(reached, set(genapp.SPEC), "every function is reached from an entry point")

    def test_it_has_a_cycle_a_cpu_bound_fan_out_and_io_bound_callees(self):
        edges = genapp.callees()
        self.assertTrue(any(f in reachable(f, edges) for f in genapp.SPEC), "a cycle")
        cpu = {n for n, f in genapp.SPEC.items() if f["cpu"] >= 200 and f["io"] == 0}
        io = {n for n, f in genapp.SPEC.items() if f["io"] >= 2 and f["cpu"] <= 10}
        fans = [s[1] for f in genapp.SPEC.values() for s in f["calls"] if s[0] == "par"]
        self.assertTrue(any(len(set(names) & cpu) >= 2 for names in fans), "CPU-bound callees called at once")
        self.assertTrue(any(set(names) & io for names in fans), "an I/O-bound callee in a fan-out")
        self.assertGreaterEqual(len(io), 3)

    def test_a_call_is_made_on_one_entry_points_path_and_not_on_anothers(self):
        steps = [(n, s) for n, f in genapp.SPEC.items() for s in f["calls"] if s[0] == "if_path"]
        self.assertTrue(steps)
        edges = genapp.callees()
        for caller, (_, path, callee) in steps:
            entries = [e for e in genapp.ENTRIES if caller in reachable(e, edges)]
            paths = {genapp.ENTRIES[e]["path"] for e in entries}
            self.assertIn(path, paths, f"{caller} → {callee}: some entry point takes path {path}")
            self.assertTrue(paths - {path}, f"{caller} → {callee}: some entry point reaches {caller} on another path")

    def test_callers_outside_the_planned_part_call_into_it(self):
        outside = [n for n in genapp.SPEC if not fnmatch.fnmatchcase(n, genapp.PLANNED)]
        self.assertTrue(outside)
        for n in outside:
            self.assertIn(n, genapp.ENTRIES)
            self.assertTrue(any(fnmatch.fnmatchcase(c, genapp.PLANNED) for c in genapp.callees()[n]),
                            f"{n} calls into the planned part")

    def test_the_workload_covers_every_entry_point(self):
        shares = genapp.WORKLOADS["mixed"]
        self.assertEqual(set(shares), set(genapp.ENTRIES))
        self.assertAlmostEqual(sum(shares.values()), 1.0)


class Written(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.stack = genapp.generate(Path(cls.tmp.name) / "genapp", BENCH.parent)
        cls.dir = cls.stack.parent

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_function_calls_its_callees_by_literal_name(self):
        for name, callees in genapp.callees().items():
            src = (self.dir / name / "src" / "main.rs").read_text()
            self.assertEqual(sorted(set(re.findall(r'rt::invoke\("([^"]+)"', src))), sorted(callees), name)
            self.assertIn("rt::function!(json handle);", src)

    def test_the_stack_declares_the_entry_points_and_the_workspace_every_function(self):
        self.assertEqual(sorted(declared_entries(self.stack)), sorted(genapp.ENTRIES))
        cargo = (self.dir / "Cargo.toml").read_text()
        for name in genapp.SPEC:
            self.assertIn(f'"{name}"', cargo)
            self.assertIn(f"  {name}:\n", self.stack.read_text())
        self.assertIn("[profile.release]", cargo)
        self.assertTrue((self.dir / "Cargo.lock").is_file())

    def test_writing_it_again_touches_nothing_unchanged_and_removes_what_is_gone(self):
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "genapp"
            genapp.generate(dest, BENCH.parent)
            main = dest / "ga-shop" / "src" / "main.rs"
            before = main.stat().st_mtime_ns
            (dest / "ga-gone" / "src").mkdir(parents=True)
            (dest / "ga-cat-db" / "src" / "main.rs").write_text("edited")
            genapp.generate(dest, BENCH.parent)
            self.assertEqual(main.stat().st_mtime_ns, before)
            self.assertFalse((dest / "ga-gone").exists())
            self.assertIn("rt::function!", (dest / "ga-cat-db" / "src" / "main.rs").read_text())

    def test_every_key_a_function_reads_is_seeded(self):
        keys = genapp.seed_keys()
        for name, f in genapp.SPEC.items():
            for i in range(f["io"]):
                self.assertIn(f"ga:{name}:{i}", keys)
            src = (self.dir / name / "src" / "main.rs").read_text()
            self.assertEqual(f"ga:{name}:" in src, f["io"] > 0, name)


def row(entry, ratio, within, rate=100, requests=500):
    return {"deployment": "planner", "rate": rate, "entry": entry, "ratio": ratio, "within": within,
            "modelled": True, "all_sustain": True, "requests": requests}


def run(rate, entries, sustained=True):
    return {"rate": rate, "sustained": sustained, "entries": entries}


class Checks(unittest.TestCase):
    def test_the_share_within_tolerance_and_the_worst_factor_are_judged_apart(self):
        rows = [row(f"e{i}", 1.1, True) for i in range(8)] + [row("e8", 1.4, False), row("e9", 2.5, False)]
        share, far = share_check({"projection": rows})
        self.assertEqual((share["measured"], share["met"]), ("8 of 10", True))
        self.assertEqual((far["measured"], far["met"]), (1, False))
        self.assertIn("planner 100/s e9", far["detail"])
        rows[0] = row("e0", None, False)  # none projected: off by more than any factor
        share, far = share_check({"projection": rows})
        self.assertEqual((share["measured"], share["met"], far["measured"]), ("7 of 10", False, 2))
        self.assertIn("planner 100/s e0 none projected", share["detail"])
        rows[0]["projected_gain_ms"] = {"mean": 1.0}
        self.assertIn("planner 100/s e0 no gain measured", share_check({"projection": rows})[0]["detail"])

    def test_a_row_of_too_few_requests_is_counted_apart_not_judged(self):
        rows = [row("ga-shop", 1.0, True), row("ga-cron", 5.0, False, requests=15)]
        share, far = share_check({"projection": rows})
        self.assertEqual((share["measured"], share["met"], far["met"]), ("1 of 1", True, True))
        self.assertIn("not judged (fewer than 100 requests): 1", share["detail"])

    def test_a_failed_request_at_a_sustained_rate_is_named(self):
        ok = {"ok": 1000, "success_rate": 1.0}
        res = {"deployments": {"planner": {"mixed": {"rounds": [{"runs": [
            run(100, {"ga-shop": ok, "gx-audit": ok}),
            run(150, {"ga-shop": ok, "gx-audit": {"ok": 999, "success_rate": 0.999}}),
            run(220, {"ga-shop": {"ok": 10, "success_rate": 0.5}, "gx-audit": ok}, sustained=False)]}]}}}}
        (c,) = failure_check(res)
        self.assertEqual((c["measured"], c["met"], c["detail"]), (1, False, "gx-audit 1"))

    def test_the_generated_application_is_judged_by_its_own_checks(self):
        res = {"application": {"name": genapp.NAME}, "projection": [row("ga-shop", 1.0, True)], "verdicts": {},
               "deployments": {"planner": {"mixed": {"rounds": [{"runs": [
                   run(100, {"ga-shop": {"ok": 5, "success_rate": 1.0}})]}]}}}}
        names = [c["check"] for c in checks(res)]
        self.assertEqual(len(names), 3)
        self.assertTrue(names[-1].startswith("requests failed"))
        res["resources"] = {"declared_entries": ["ga-shop"], "deployments": {
            k: {"requests": {"memory": 100 * 2 ** 20}, "pods": 43, "missing_entries": [], "merged_pods": {}}
            for k in ("unmerged", "planner")}}
        names = [c["check"] for c in checks(res)]
        self.assertEqual(names[0], "declared entry points planner keeps deployed")
        self.assertFalse([n for n in names if "÷ unmerged" in n], "socialNetwork's goals are not its own")


if __name__ == "__main__":
    unittest.main()
