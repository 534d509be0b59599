"""Running the training scripts under examples/ in tests: as a program, or their ``main(argv)`` in-process."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ported.py, the helper beside the tests


def _backend_args() -> tuple[str, ...]:
    backend = os.environ.get("KILN_TEST_BACKEND")  # run the example on the backend the suite is testing
    return ("--backend", backend) if backend else ()


class ExampleRuns:
    def __init__(self, capsys):
        self.capsys = capsys

    def script(self, name: str, *args: str) -> subprocess.CompletedProcess:
        """``python examples/NAME args`` in a subprocess, as a user runs it."""
        return subprocess.run([sys.executable, str(EXAMPLES / name), *args, *_backend_args()], cwd=EXAMPLES.parent,
                              capture_output=True, text=True, timeout=300)

    def main(self, module, *args: str) -> subprocess.CompletedProcess:
        """The script's ``main(argv)`` in this process (no seconds of imports), as a CompletedProcess."""
        argv = [*args, *_backend_args()]
        self.capsys.readouterr()
        try:
            rc = module.main(argv)
        except SystemExit as e:  # argparse's errors
            rc = e.code
        out = self.capsys.readouterr()
        return subprocess.CompletedProcess(argv, rc, out.out, out.err)

    @staticmethod
    def summary(proc: subprocess.CompletedProcess, name: str) -> dict[str, str]:
        """The fields of the last ``summary: NAME k=v ...`` line."""
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(f"summary: {name} ")]
        assert lines, f"no summary line\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return dict(re.findall(r"(\w+)=(\S+)", lines[-1]))


@pytest.fixture
def runs(capsys) -> ExampleRuns:
    return ExampleRuns(capsys)
