"""Makes bench/fmbench importable from the tests, and the paths they read."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
HERE = Path(__file__).resolve().parent
