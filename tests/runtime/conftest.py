"""Shared helpers for the runtime tests: a device fixture and StableHLO snippets (``run_py`` is suite-wide)."""
from __future__ import annotations

import pytest

from kiln import runtime

ADD_F32_4 = """func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""


@pytest.fixture(scope="session")
def add_f32_4() -> str:
    return ADD_F32_4


@pytest.fixture(scope="session")
def cpu0() -> runtime.Device:
    return runtime.local_device("cpu", 0)
