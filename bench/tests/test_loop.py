"""--only loop: its flags, the one-line edit it makes to the real callees,
and the table it writes from its measurements."""

import contextlib
import io
import unittest

from helpers import BENCH, args

from fmbench import cli
from fmbench.config import TARGETS
from fmbench.report import render_md
from fmbench.userloop import BASELINE, EDITED, baseline_commit, commit_of, edited, in_clone, median_of


class Flags(unittest.TestCase):
    def test_only_loop(self):
        a = args("--only", "loop")
        self.assertEqual(a.baseline, BASELINE)
        self.assertEqual(a.results, str(BENCH / "results-loop"))
        self.assertTrue(a.skip_load and a.skip_dispatch and a.app_cold)
        self.assertIn("min", cli.estimate(a))
        a = args("--only", "loop", "--baseline", "abc123", "--no-app-cold")
        self.assertEqual(a.baseline, "abc123")
        self.assertFalse(a.app_cold)
        self.assertGreater(int(cli.estimate(args("--only", "loop")).split()[1]), int(cli.estimate(a).split()[1]))


class Baseline(unittest.TestCase):
    def refusal(self, rev):
        err = io.StringIO()
        with contextlib.redirect_stdout(err), contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
            baseline_commit(BENCH.parent, rev, commit_of(BENCH.parent, "HEAD"))
        return err.getvalue()

    def test_a_revision_that_does_not_exist_is_refused_naming_the_flag(self):
        msg = self.refusal("no-such-rev-0000")
        self.assertIn("--baseline no-such-rev-0000: no such commit", msg)
        self.assertIn("git fetch", msg)

    def test_head_is_refused_by_any_name(self):
        self.assertIn("is HEAD itself", self.refusal("HEAD"))
        self.assertIn("is HEAD itself", self.refusal(commit_of(BENCH.parent, "HEAD")[:9]))


class Edit(unittest.TestCase):
    def test_each_edited_callee_takes_one_new_line_after_its_handler(self):
        for callee in EDITED.values():
            with self.subTest(callee=callee):
                text = (BENCH.parent / "functions" / callee / "src" / "main.rs").read_text()
                one, two = edited(text, 1), edited(text, 2)
                self.assertEqual(len(one.splitlines()), len(text.splitlines()) + 1)
                self.assertNotEqual(one, two)
                at = one.splitlines().index(next(l for l in one.splitlines() if l.startswith("async fn handle")))
                self.assertIn("black_box(1_u32)", one.splitlines()[at + 1])

    def test_a_source_without_a_handler_line_is_none(self):
        self.assertIsNone(edited("fn main() {}\n", 1))


class Steps(unittest.TestCase):
    def test_a_step_is_its_median_run_and_its_highest_rss(self):
        runs = [{"wall_s": w, "peak_rss_mib": r, "fmerge_stages_s": {"link IR": w}} for w, r in ((5.0, 10), (2.0, 30), (3.0, 20))]
        m = median_of(runs)
        self.assertEqual((m["wall_s"], m["peak_rss_mib"]), (3.0, 30))
        self.assertEqual(m["stages_s"], {"link IR": 3.0})

    def test_every_run_in_a_clone_uses_its_own_target_dir(self):
        self.assertEqual(in_clone(BENCH / "out" / "c"), {"CARGO_TARGET_DIR": str(BENCH / "out" / "c" / "target")})


def step(wall, rss=100.0):
    return {"wall_s": wall, "peak_rss_mib": rss, "stages_s": None, "runs": []}


def rev(name, first, own, pair, chain, pair_edit, chain_edit, rss):
    return {"rev": name, "first_command": {"wall_s": first, "fmerge_build_s": own},
            "pair_merge_step": step(pair, rss), "chain_merge_step": step(chain, rss),
            "pair_edit_remerge": step(pair_edit), "chain_edit_remerge": step(chain_edit)}


class Render(unittest.TestCase):
    def render(self, app):
        R = {"started": "s", "finished": "f", "argv": ["--only", "loop"], "src": "head", "src_rev": "r",
             "loadavg_start": [0, 0, 0], "loadavg_end": [0, 0, 0], "targets": TARGETS,
             "machine": {"git_rev": "r", "git_dirty": False, "cores": 2, "cpu": "x", "memory_gib": 1, "os": "o",
                         "rustc": "r"},
             "loop": {"baseline": rev("old", 300.0, 220.0, 5.7, 8.8, 7.2, 11.2, 370.0),
                      "head": rev("new", 250.0, 190.0, 1.6, 2.3, 2.5, 6.0, 250.0),
                      "edited": EDITED, "runs": 3, "app": app}}
        return render_md(R)

    def test_each_step_beside_the_baseline_with_its_ratio_and_verdict(self):
        md = self.render(None)
        self.assertIn("| README's first command, fresh clone | ≤ 180 s | 300.0 s | 250.0 s | 0.83× | **missed** |", md)
        self.assertIn("| merge step, pair | ≤ 2.5 s | 5.7 s | 1.6 s | 0.28× | met |", md)
        self.assertIn("| re-merge after a one-line edit, compose-post's group | ≤ 5 s | 11.2 s | 6.0 s | 0.54× | **missed** |",
                      md)
        self.assertIn("| merge step peak RSS, pair | not above the baseline | 370.0 MiB | 250.0 MiB | 0.68× | met |", md)

    def test_the_plan_against_one_by_one_and_a_baseline_that_refused_it(self):
        timings = {"wall": {"cargo build": 100.0, "merging": 20.0, "image": 0.0, "total": 121.0},
                   "sum": {"read bitcode": 3.0, "codegen": 9.0, "image": 0.0, "total": 12.5},
                   "groups": [{"name": "a-merged", "stages": {"read bitcode": 1.0, "codegen": 4.0, "image": 0.0}, "merge": 6.0,
                               "total": 6.5}]}
        app = {"groups": 7, "plan": {"wall_s": 121.0, "timings": timings}, "one_by_one": {"wall_s": 160.0},
               "wall_ratio": 160.0 / 121.0, "baseline_plan": {"refused": "error: unknown field `lock`\n"}}
        md = self.render(app)
        self.assertIn("1.32× (goal > 1.16×, met)", md)
        self.assertIn("refused this plan file: error: unknown field `lock`", md)
        self.assertIn("| a-merged | 1.0 | 4.0 | 6.0 | 6.5 |", md)
        # A stage with no time in it is left out; the record's total is the last column.
        self.assertIn("| group | read bitcode | codegen | merge | total |", md)
        self.assertIn("| **sum** | 3.0 | 9.0 | | 12.5 |", md)


if __name__ == "__main__":
    unittest.main()
