"""jaxlib's per-array Python tracebacks are off in a kiln process (runtime/tracebacks.py): they cost about 0.3 µs
per launch and, in jaxlib 0.10, leak memory on every launch kiln makes itself. Each check runs in a fresh
interpreter, as the setting is decided once, at import."""
from __future__ import annotations

import importlib.util
import os
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


def test_given_back_when_jax_is_imported_after_kiln(run_py, tmp_path):
    """jax reads its source locations from these tracebacks: a jax imported after kiln got none (checkify's errors
    failed with an AttributeError, print_saved_residuals lost every location). ``import jax`` of an installed jax
    (here a stand-in package first on the path) turns them on again, once; other imports do not."""
    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text("")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    code = ("import kiln, sys; print(kiln.runtime.tracebacks.enabled()); import jax; "
            "print(kiln.runtime.tracebacks.enabled(), jax.__file__.endswith('__init__.py')); "
            "print(sum(type(f).__name__ == '_GiveBackToJax' for f in sys.meta_path))")
    out = run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0", "PYTHONPATH": path}).stdout.split()
    assert out == ["False", "True", "True", "0"]
    code = "import kiln, sys; import csv; print(kiln.runtime.tracebacks.enabled())"
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["False"]


def test_kept_off_when_jaxlib_looks_for_a_jax_that_is_not_installed(run_py):
    """jaxlib tries ``import jax`` on some paths of its own (the message of some errors): where jax is not
    installed that fails, and the tracebacks stay off (kiln turned them on at the first such error: every later
    launch paid for them). A bfloat16 array imported over DLPack is made with a user context, so reading it back
    needs no such error (it raised "null user context" the first time)."""
    if importlib.util.find_spec("jax") is not None:
        pytest.skip("jax is installed here")
    code = """
        import ml_dtypes, sys, numpy as np
        import kiln, kiln.numpy as knp
        x = knp.linspace(0, 1, 5, dtype=ml_dtypes.bfloat16)
        y = knp.from_dlpack(x.__dlpack__())
        assert y.unsafe_buffer_pointer() and np.asarray(y).tolist() == np.asarray(x).tolist()
        try:
            import jax
        except ImportError:
            pass
        print(kiln.runtime.tracebacks.enabled(), sum(type(f).__name__ == '_GiveBackToJax' for f in sys.meta_path))
    """
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["False", "1"]


def test_left_as_jax_has_them_when_jax_came_first(run_py):
    # jax's process-wide state is jax's: a module standing in for jax's config, loaded before kiln.
    code = "import sys, types; sys.modules['jax._src.config'] = types.ModuleType('jax._src.config'); " + _STATE
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["True"]



def test_memory_profile_names_the_allocating_line_only_with_tracebacks(run_py):
    code = """
        import gzip
        import kiln, kiln.numpy as knp

        def allocate_here():
            return knp.ones((100, 100)) * 2.0

        kept = allocate_here()
        print(b"allocate_here" in gzip.decompress(kiln.profiler.device_memory_profile()))
    """
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "1"}).stdout.split() == ["True"]
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split() == ["False"]

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the resident size from /proc")
def test_launches_transfers_and_waits_do_not_grow_memory(run_py):
    # 100,000 each of eager ops (direct launches: execute_sharded), indexing, transfers to the host and waits
    # (block_until_ready): with jaxlib 0.10's tracebacks on, each loop grew the process by 4-12 MB.
    code = """
        import os
        import numpy as np
        import kiln, kiln.numpy as knp

        def resident_mb():
            return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

        x = kiln.device_put(np.arange(4, dtype=np.float32))
        steps = [lambda: knp.tanh(x), lambda: x[1:3], lambda: np.asarray(x + 1), x.block_until_ready]
        for step in steps:  # warm: compile, caches, allocator pools
            for _ in range(5_000):
                step()
        before = resident_mb()
        for step in steps:
            for _ in range(100_000):
                step()
        print(round(resident_mb() - before, 1))
    """
    grown = float(run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0"}).stdout.split()[-1])
    assert grown < 8, f"400,000 launches, transfers and waits grew the process by {grown} MB"


def test_bench_measures_kiln_with_its_own_setting_when_jax_came_second(run_py, tmp_path):
    """The bench loads jax after kiln (benchmarks/run.py), which turns the tracebacks back on for jax: kiln's
    measurements must still run with kiln's own setting (off), as its users have it without jax; they ran with
    jax's. ``kiln_setting`` is that setting, whatever jax did since."""
    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text("")
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
    path = os.pathsep.join(p for p in (str(tmp_path), bench, os.environ.get("PYTHONPATH", "")) if p)
    code = """
        import kiln, jax
        from frameworks import load_kiln
        print(kiln.runtime.tracebacks.enabled(), kiln.runtime.tracebacks.kiln_setting())
        load_kiln("cpu").enter()
        print(kiln.runtime.tracebacks.enabled())
    """
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "0", "PYTHONPATH": path}).stdout.split() == [
        "True", "False", "False"]
    assert run_py(code, env={"KILN_JAXLIB_TRACEBACKS": "1", "PYTHONPATH": path}).stdout.split() == [
        "True", "True", "True"]
