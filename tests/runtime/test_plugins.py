"""PJRT plugin discovery and failure handling, with a fake (bogus) plugin library."""
from __future__ import annotations

import os

import pytest


@pytest.fixture
def fake_plugin_root(tmp_path) -> str:
    """A directory with ``jax_plugins/xla_fake/xla_fake_plugin.so`` (not a real library)."""
    pkg = tmp_path / "jax_plugins" / "xla_fake"
    pkg.mkdir(parents=True)
    # The plugin's __init__ must never run (real ones import jax): make running it fail loudly.
    (pkg / "__init__.py").write_text("raise RuntimeError('kiln must not import plugin packages')\n")
    (pkg / "xla_fake_plugin.so").write_bytes(b"not an ELF file")
    return str(tmp_path)


CHECK = """
    import sys, warnings
    import numpy as np
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from kiln import runtime
        from kiln.runtime import plugins
        names = [(s.name, s.source) for s in plugins.discover()]
        backends = runtime.available_backends()
    print("DISCOVERED", names)
    print("BACKENDS", backends, runtime.default_backend())
    for w in caught:
        print("WARNING", w.category.__name__, w.message)
    try:
        runtime.get_backend("fake")
    except runtime.BackendError as e:
        print("ERROR", e)
    d = runtime.local_device(None, 0)
    x = np.arange(3.0)
    assert (runtime.to_numpy(runtime.put(x, d)) == x).all()
    assert "xla_fake" not in str(sys.modules.keys()) and "jax_plugins.xla_fake" not in sys.modules
"""


def _check_output(out: str, path: str, source: str) -> None:
    assert f"('fake', '{source}')" in out, out
    assert "BACKENDS ['cpu'] cpu" in out, out
    warning = [line for line in out.splitlines() if line.startswith("WARNING")]
    assert len(warning) == 1, out
    assert "RuntimeWarning" in warning[0] and "'fake'" in warning[0] and path in warning[0], warning
    assert "ERROR Backend 'fake' is not available (failed to load" in out, out
    assert "Available backends: cpu" in out


def test_fake_plugin_in_jax_plugins_namespace(run_py, fake_plugin_root):
    env = {"PYTHONPATH": fake_plugin_root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = run_py(CHECK, env=env)
    so = os.path.join(fake_plugin_root, "jax_plugins", "xla_fake", "xla_fake_plugin.so")
    _check_output(proc.stdout, so, "jax_plugins.xla_fake")


def test_fake_plugin_from_env(run_py, fake_plugin_root):
    so = os.path.join(fake_plugin_root, "jax_plugins", "xla_fake", "xla_fake_plugin.so")
    proc = run_py(CHECK, env={"KILN_PJRT_PLUGINS": f"fake:{so}"})
    _check_output(proc.stdout, so, "KILN_PJRT_PLUGINS")


def test_explicitly_requested_plugin_failure_is_an_error(run_py, fake_plugin_root):
    so = os.path.join(fake_plugin_root, "jax_plugins", "xla_fake", "xla_fake_plugin.so")
    proc = run_py("""
        from kiln import runtime
        try:
            runtime.available_backends()
        except runtime.BackendError as e:
            print("ERROR", e)
    """, env={"KILN_PJRT_PLUGINS": f"fake:{so}", "KILN_PLATFORMS": "fake,cpu"})
    assert "ERROR KILN_PLATFORMS requests 'fake'" in proc.stdout and so in proc.stdout, proc.stdout


def test_cuda_plugin_skipped_without_gpu(run_py, tmp_path):
    if any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg")):
        pytest.skip("this machine has an NVIDIA device")
    pkg = tmp_path / "jax_plugins" / "xla_cuda13"
    pkg.mkdir(parents=True)
    (pkg / "xla_cuda_plugin.so").write_bytes(b"bogus")
    code = """
        import warnings
        warnings.simplefilter("error")  # skipping for lack of hardware is silent
        from kiln import runtime
        from kiln.runtime import plugins
        print([(s.name, s.cuda_major) for s in plugins.discover()], runtime.available_backends())
        try:
            runtime.get_backend("gpu")
        except runtime.BackendError as e:
            print("ERROR", e)
    """
    proc = run_py(code, env={"PYTHONPATH": str(tmp_path)})
    assert "[('cuda', 13)] ['cpu']" in proc.stdout, proc.stdout
    assert "ERROR Backend 'gpu' is not available (cuda: no cuda device found" in proc.stdout, proc.stdout
    # KILN_FORCE_PLUGIN_LOAD=1 tries to load it anyway: a warning, and cpu still works.
    proc = run_py(code.replace('warnings.simplefilter("error")', 'pass'),
                  env={"PYTHONPATH": str(tmp_path), "KILN_FORCE_PLUGIN_LOAD": "1"})
    assert "['cpu']" in proc.stdout and "xla_cuda_plugin.so" in proc.stderr, proc.stderr


def test_bad_env_entry(run_py):
    proc = run_py("""
        from kiln import runtime
        try:
            runtime.available_backends()
        except ValueError as e:
            print("ERROR", e)
    """, env={"KILN_PJRT_PLUGINS": "no-path-here"})
    assert "ERROR KILN_PJRT_PLUGINS entry 'no-path-here' is not of the form" in proc.stdout, proc.stdout
