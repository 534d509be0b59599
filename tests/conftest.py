"""Suite-wide test setup.

- ``KILN_TEST_BACKEND=cuda`` (or ``tpu``, ``cpu``...) makes that backend kiln's default for the whole
  session, so the same suite runs on every backend. Tests that need one specific backend are marked
  ``@pytest.mark.backend("cpu")`` and skip in sessions that test another one.
- A test module's shared random generators (module-level ``numpy.random.Generator`` and ``RandomState``
  objects) are reseeded before each test from the test's id, so a test draws the same numbers whichever
  tests ran before it in its process: under pytest-xdist that order changes from run to run, and a draw
  that hits a tolerance edge would fail one CI run in many instead of every run.
- Every test gets its ``kiln.config`` flags restored afterwards, so a test that turns on
  ``enable_x64`` (and fails halfway) cannot leak 64-bit mode into the tests that follow.
- The persistent compile cache is on, as for users, in a fresh temporary directory per test run (shared
  with the run's subprocesses and, under pytest-xdist, with every worker; removed at the end): hermetic,
  and every executable of the suite goes through the cache (measured: no slower than the cache off).
  ``KILN_TEST_CACHE_DIR=/some/dir`` keeps the entries between runs instead (a second run of tests/control +
  tests/numpy/test_reductions.py: 4 s instead of 27 s).
- Under pytest-xdist (``-n``, what ``nox -s tests`` runs) each worker is a session process of its own. The
  workers share the controller's cache directory rather than making one each: the cache is written for
  several processes at once (whole entries renamed into place, no locks, trimming tolerates other
  writers), a program one worker compiled is a disk hit for the other, and no test reads the shared
  directory's contents or counters (tests/runtime/test_compile_cache.py gives every such test a directory
  of its own). The process that made the directory removes it, once, in its ``pytest_unconfigure``; on the
  controller that runs after every worker has exited.
- The few longest tests (``RUN_FIRST``) run first, so that under pytest-xdist no worker starts one of them in the
  last minute of the run while the others have nothing left to do.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zlib

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Before kiln is imported: the runtime reads the cache directory from the environment.
# _RUN_CACHE_VAR names the directory that the controller of an xdist run made; its workers inherit the
# variable (xdist sets PYTEST_XDIST_WORKER in a worker's environment before this file is imported).
_RUN_CACHE_VAR = "KILN_TEST_RUN_CACHE_DIR"
_SESSION_CACHE = None  # the directory this process made and removes at the end; None: not ours to remove
if os.environ.get("KILN_TEST_CACHE_DIR"):
    os.environ["KILN_CACHE_DIR"] = os.environ["KILN_TEST_CACHE_DIR"]
elif os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_RUN_CACHE_VAR):
    os.environ["KILN_CACHE_DIR"] = os.environ[_RUN_CACHE_VAR]  # an xdist worker: the controller's directory
else:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="kiln-test-cache-")
    os.environ["KILN_CACHE_DIR"] = os.environ[_RUN_CACHE_VAR] = _SESSION_CACHE

TEST_BACKEND = os.environ.get("KILN_TEST_BACKEND", "").strip() or None


def pytest_configure(config):
    config.addinivalue_line("markers", "backend(*names): run only when the backend under test (KILN_TEST_BACKEND, "
                            "else kiln's default) is one of these")
    if TEST_BACKEND is not None:
        import kiln
        try:
            kiln.config.update("default_backend", TEST_BACKEND)
        except kiln.BackendError as e:
            pytest.exit(f"KILN_TEST_BACKEND={TEST_BACKEND!r}: {e}", returncode=4)


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


def backend_under_test() -> str:
    """The backend this session tests: ``KILN_TEST_BACKEND``, else kiln's default backend."""
    import kiln
    return kiln.devices()[0].platform  # canonical: 'gpu' in KILN_TEST_BACKEND means 'cuda' or 'rocm' here


# The suite's longest single tests (25-70 s each on a 2-core machine), run first. pytest collects in alphabetical
# order, tests/test_*.py after every directory, so these two would otherwise start in the last minute of an xdist
# run, and the other worker would sit idle while one of them finishes (measured: 35 s of one worker idle).
RUN_FIRST = ("tests/test_multidevice.py::test_multidevice_suite_on_8_cpu_devices",
             "tests/test_examples.py::test_benchmarks_smoke")


def pytest_collection_modifyitems(config, items):
    current = backend_under_test()
    for item in items:
        marker = item.get_closest_marker("backend")
        if marker is not None and current not in marker.args:
            item.add_marker(pytest.mark.skip(reason=f"needs backend {'/'.join(marker.args)}; "
                                                    f"this session tests {current} (KILN_TEST_BACKEND)"))
    # The same order in every xdist worker (the controller checks that their collections agree).
    first = sorted((item for item in items if item.nodeid in RUN_FIRST), key=lambda item: RUN_FIRST.index(item.nodeid))
    if first:
        items[:] = first + [item for item in items if item.nodeid not in RUN_FIRST]


@pytest.fixture(autouse=True)
def _reseed_module_rng(request, monkeypatch):
    """Give each of the test module's random generators a seed of this test's own (see the module
    docstring)."""
    module = getattr(request, "module", None)
    for name, value in list(vars(module).items()) if module is not None else ():
        seed = zlib.crc32(f"{request.node.nodeid}:{name}".encode())
        if isinstance(value, np.random.Generator):
            monkeypatch.setattr(module, name, np.random.default_rng(seed))
        elif isinstance(value, np.random.RandomState):
            monkeypatch.setattr(module, name, np.random.RandomState(seed))


@pytest.fixture(autouse=True)
def _restore_kiln_config():
    """Restore every ``kiln.config`` flag after each test (even when the test fails)."""
    from kiln import config
    saved = {name: getattr(config, name) for name in config._FLAGS}
    try:
        yield
    finally:
        for name, value in saved.items():
            if getattr(config, name) != value:
                config.update(name, value)


def run_python(code: str, env: dict[str, str] | None = None, check: bool = True,
               cwd: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (fresh backends) with extra environment variables.

    Tests that could crash the interpreter (a segfault, an abort inside XLA) or hang run their code
    this way, so that a crash or a hang fails one test instead of killing the test run.
    """
    full_env = dict(os.environ)
    for k in ("KILN_PLATFORMS", "KILN_NUM_CPU_DEVICES", "KILN_PJRT_PLUGINS", "KILN_FORCE_PLUGIN_LOAD"):
        full_env.pop(k, None)
    full_env.update(env or {})
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, cwd=cwd or REPO,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"subprocess did not finish in {timeout} s (a hang?)\nstdout:\n{e.stdout}\n"
                             f"stderr:\n{e.stderr}") from None
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed (rc={proc.returncode})\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def run_py():
    """``run_py(code, env=None, check=True, timeout=300)``: run code in a fresh interpreter (see
    :func:`run_python`)."""
    return run_python


@pytest.fixture
def primitive_runs(monkeypatch):
    """The names of the primitives executed one at a time (eagerly, not inside a compiled program), in order."""
    from kiln.frontend.core import tracing
    runs = []
    original = tracing._eager.apply

    def counting(prim, args, params):
        runs.append(prim.name)
        return original(prim, args, params)
    monkeypatch.setattr(tracing._eager, "apply", counting)
    return runs
