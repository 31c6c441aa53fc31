"""The facts bench/run shares with the Rust side, pinned where a second
language keeps its own copy: the target triple of testkit's function builds
(whose binaries bench/run picks up), and the groups of bench/groups.txt."""

import re
import unittest

from helpers import BENCH

from fmbench import config

ROOT = BENCH.parent


def rust_const(path, name):
    """The value of `pub const NAME: &str = "…";` in a Rust file."""
    m = re.search(rf'pub const {name}: &str = "([^"]*)";', (ROOT / path).read_text())
    assert m, f"{path} defines no &str const {name}"
    return m.group(1)


class Shared(unittest.TestCase):
    def test_the_triple_is_testkits_target(self):
        self.assertEqual(config.TRIPLE, rust_const("functions/testkit/src/build.rs", "TARGET"))

    def test_the_groups_are_bench_groups_txt(self):
        self.assertEqual(list(config.GROUPS), ["pair", "chain"])
        chain = config.GROUPS["chain"]
        self.assertEqual(chain[0], "compose-post")
        self.assertTrue(set(config.GROUPS["pair"]) <= set(chain))
        # Every callee of the call tree is a member of the chain.
        callees = {c for stages in config.CALLS.values() for stage in stages for c in stage}
        self.assertEqual(callees | {chain[0]}, set(chain))


if __name__ == "__main__":
    unittest.main()
