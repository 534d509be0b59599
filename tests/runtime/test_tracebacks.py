"""jaxlib's per-array Python tracebacks are off in a kiln process (runtime/tracebacks.py): they cost about 0.3 µs
per launch and, in jaxlib 0.10, leak memory on every launch kiln makes itself. Each check runs in a fresh
interpreter, as the setting is decided once, at import."""
from __future__ import annotations

import sys

import pytest
from kiln.runtime._jaxlib import _jax

pytestmark = pytest.mark.skipif(not hasattr(_jax, "set_tracebacks_enabled"),
                                reason="this jaxlib has no switch for its tracebacks")

_STATE = "import kiln; print(kiln.runtime.tracebacks.enabled())"


def test_off_after_import(run_py):
    assert run_py(_STATE, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["False"]


def test_environment_variable_keeps_them(run_py):
    assert run_py(_STATE, env={"KILN_JAXLIB_TRACEBACKS": "1"}).stdout.split() == ["True"]


def test_left_as_jax_has_them_when_jax_came_first(run_py):
    # jax's process-wide state is jax's: a module standing in for jax's config, loaded before kiln.
    code = "import sys, types; sys.modules['jax._src.config'] = types.ModuleType('jax._src.config'); " + _STATE
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["True"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the resident size from /proc")
def test_eager_launches_do_not_grow_memory(run_py):
    # 200,000 eager ops (direct launches: execute_sharded) and as many waits (block_until_ready): with jaxlib
    # 0.10's tracebacks on, this grew the process by about 25 MB each.
    code = """
        import os
        import numpy as np
        import kiln, kiln.numpy as knp

        def resident_mb():
            return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

        x = kiln.device_put(np.arange(4, dtype=np.float32))
        for _ in range(20_000):  # warm: compile, caches, allocator pools
            y = knp.tanh(x)
            y.block_until_ready()
        before = resident_mb()
        for _ in range(200_000):
            y = knp.tanh(x)
        for _ in range(200_000):
            y.block_until_ready()
        print(round(resident_mb() - before, 1))
    """
    grown = float(run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split()[-1])
    assert grown < 8, f"400,000 launches and waits grew the process by {grown} MB"
