"""Makes bench/fmbench importable from the tests, and the paths they read;
parses `bench/run` flags as the tests do."""

import contextlib
import io
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
HERE = Path(__file__).resolve().parent

from fmbench import cli  # noqa: E402 (importable once BENCH is on the path)


def args(*argv):
    """parse_args, its error messages kept out of the test output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.parse_args(list(argv), BENCH)
