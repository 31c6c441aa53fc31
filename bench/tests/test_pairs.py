"""bench/pairs refuses what it cannot measure before it starts anything,
naming the argument and the fix."""

import subprocess
import sys
import unittest

from helpers import BENCH

PAIRS = BENCH / "pairs"


def pairs(*argv):
    return subprocess.run([sys.executable, str(PAIRS), *argv], capture_output=True, text=True, timeout=60)


class BadInput(unittest.TestCase):
    def refused(self, argv, says):
        r = pairs(*argv)
        self.assertNotEqual(r.returncode, 0, argv)
        self.assertIn(says, r.stderr, argv)
        self.assertNotIn("Traceback", r.stderr, argv)

    def test_one_binary_has_nothing_to_pair_with(self):
        self.refused(["a=/bin/true"], "give two or more NAME=BINARY")

    def test_an_argument_without_a_name(self):
        self.refused(["a=/bin/true", "/bin/true"], "/bin/true: not NAME=BINARY")
        self.refused(["a=/bin/true", "=/bin/true"], "=/bin/true: not NAME=BINARY")

    def test_a_binary_that_is_not_an_executable_file(self):
        self.refused(["a=/bin/true", f"b={BENCH / 'README.md'}"], f"b={BENCH / 'README.md'}: no executable file")
        self.refused(["a=/bin/true", "b=/nonexistent/fmerge"], "no executable file at /nonexistent/fmerge")
        self.refused(["a=/bin/true", "b=/bin"], "no executable file at /bin")

    def test_a_name_given_twice(self):
        self.refused(["a=/bin/true", "a=/bin/false"], "a name given twice in a, a")

    def test_counts_too_small_to_measure(self):
        self.refused(["--rounds", "1", "a=/bin/true", "b=/bin/true"], "--rounds 1: an interval needs 2 or more")
        self.refused(["--duration", "0", "a=/bin/true", "b=/bin/true"], "--duration 0: give 1 or more")
        self.refused(["--rate", "0", "a=/bin/true", "b=/bin/true"], "--rate 0: give 1 or more")


if __name__ == "__main__":
    unittest.main()
