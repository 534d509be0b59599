"""Shared helpers for the runtime tests: a device fixture, StableHLO snippets, subprocess runner."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from kiln import runtime

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ADD_F32_4 = """func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""


def run_python(code: str, env: dict[str, str] | None = None, check: bool = True,
               cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (fresh backends) with extra environment variables."""
    full_env = dict(os.environ)
    for k in ("KILN_PLATFORMS", "KILN_NUM_CPU_DEVICES", "KILN_PJRT_PLUGINS", "KILN_FORCE_PLUGIN_LOAD"):
        full_env.pop(k, None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed (rc={proc.returncode})\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def run_py():
    """``run_py(code, env=None, check=True)``: run code in a fresh interpreter (see :func:`run_python`)."""
    return run_python


@pytest.fixture(scope="session")
def add_f32_4() -> str:
    return ADD_F32_4


@pytest.fixture(scope="session")
def cpu0() -> runtime.Device:
    return runtime.local_device("cpu", 0)
