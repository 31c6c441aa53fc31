"""The state of one bench run, passed to every step instead of module globals:
where things are, the processes it started, and what fmerge reported."""

from pathlib import Path

from .processes import Processes


class Context:
    def __init__(self, root):
        self.root = Path(root)
        self.bench = self.root / "bench"
        self.out = self.bench / "out"
        self.tools = self.bench / ".tools"
        # The source tree that is built and measured: the work tree, or a
        # snapshot of HEAD (--src head) set up by cli.main.
        self.src = self.root
        self.tool_target = self.root / "target"
        self.procs = Processes(self.out / "run" / "logs")
        # The variables each merged group's callees read (from fmerge's
        # output, so the bench never copies the runtime's namespacing rule).
        self.settings = {}

    @property
    def run_dir(self):
        """Where the testbeds keep their configs and logs."""
        return self.out / "run"
