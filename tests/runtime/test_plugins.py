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


# -- the GPU plugin's companion extension and CUDA version checks (fakes: this needs no GPU) ----------

class _Versions:
    """A stand-in for ``jax_cuda13_plugin._versions``: every component at its build version unless told."""

    BUILD = {"cuda_runtime": 13000, "cudnn": 91200, "cufft": 120015, "cupti": 26, "cublas": 130100,
             "cusparse": 12600}

    def __init__(self, **found):
        for comp, build in self.BUILD.items():
            setattr(self, f"{comp}_build_version", lambda b=build: b)
            value = found.get(comp, build)
            setattr(self, f"{comp}_get_version", self._raiser(value) if isinstance(value, Exception)
                    else (lambda v=value: v))

    @staticmethod
    def _raiser(e):
        def get():
            raise e
        return get


def test_cuda_versions_that_match_the_build_pass():
    from kiln.runtime import plugins
    assert plugins.cuda_version_problems(_Versions()) == []
    # A newer patch or minor release is fine; so is an older patch of cuDNN.
    assert plugins.cuda_version_problems(_Versions(cudnn=91201, cublas=130205, cufft=120100)) == []


def test_cuda_version_problems_say_what_and_how_to_fix():
    from kiln.runtime import plugins
    problems = plugins.cuda_version_problems(
        _Versions(cuda_runtime=12000, cudnn=91100, cublas=OSError("libcublas.so.13: cannot open")))
    assert len(problems) == 3, problems
    text = "\n".join(problems)
    assert "CUDA runtime 12000 is installed, but at least 12010 is needed (the plugin was built against 13000)" in text
    assert "cuDNN 91100 is installed, older than the 91200 the plugin was built against; upgrade it" in text
    assert ("cuBLAS could not be loaded (OSError: libcublas.so.13: cannot open); install it, e.g. "
            "pip install 'kiln[cuda13]'") in text


def test_bad_cuda_versions_stop_the_plugin_before_it_loads(monkeypatch):
    from kiln.runtime import plugins
    spec = plugins.PluginSpec("cuda", "/nonexistent/xla_cuda_plugin.so", "test", 13)
    monkeypatch.setattr(plugins, "preload_nvidia_libraries", lambda major: None)
    monkeypatch.delenv("KILN_SKIP_CUDA_CONSTRAINTS_CHECK", raising=False)
    with pytest.raises(RuntimeError, match=r"the installed CUDA libraries cannot run this plugin: cuPTI 10 "
                                           r"is installed, but at least 18 is needed .*"
                                           r"KILN_SKIP_CUDA_CONSTRAINTS_CHECK=1"):
        plugins.make_client(spec, load_extension=lambda name: (None, _Versions(cupti=10)))
    # Skipping the check gets as far as loading the library (which does not exist here).
    monkeypatch.setenv("KILN_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
    with pytest.raises(FileNotFoundError, match="no such file: /nonexistent/xla_cuda_plugin.so"):
        plugins.make_client(spec, load_extension=lambda name: (None, _Versions(cupti=10)))


def test_gpu_extension_registers_handlers_and_ffi_targets():
    """As JAX's CUDA plugin: the extension becomes the CUDA handler of custom calls and FFI types (bound to
    the plugin's C API), and each of its FFI handlers is registered as a typed-FFI target (api_version 1)."""
    from kiln.runtime import plugins
    calls = []

    class Recorder:
        def __getattr__(self, name):
            return lambda *a, **k: calls.append((name, a, k))

    class Extension:
        def register_custom_type(self, c_api, *a):
            calls.append(("ext.type", c_api, a))

        def register_custom_call_target(self, c_api, *a):
            calls.append(("ext.call", c_api, a))

        def ffi_types(self):
            return {"T": "type-capsule"}

        def ffi_handlers(self):
            return {"xla_ffi_python_gpu_callback": "cb-capsule", "cusolver_getrf_ffi": "lu-capsule"}

    plugins.register_gpu_extension("cuda", "C-API", Extension(), xla=Recorder())
    names = [c[0] for c in calls]
    assert names == ["register_custom_type_handler", "register_custom_call_handler", "register_custom_type",
                     "register_custom_call_target", "register_custom_call_target"], names
    type_handler, call_handler = calls[0][1], calls[1][1]
    assert type_handler[0] == "CUDA" and call_handler[0] == "CUDA"
    call_handler[1]("target", "fn")  # the handler forwards to the extension with the plugin's C API
    assert calls[-1] == ("ext.call", "C-API", ("target", "fn"))
    assert calls[2] == ("register_custom_type", ("T", "type-capsule"), {"platform": "CUDA"})
    assert calls[3] == ("register_custom_call_target", ("xla_ffi_python_gpu_callback", "cb-capsule"),
                        {"platform": "CUDA", "api_version": 1})


def test_gpu_extension_absent_is_none():
    import importlib.util

    from kiln.runtime import plugins
    # This machine has no jax_cuda13_plugin / jax_rocm7_plugin: loading goes on without the extension.
    if importlib.util.find_spec("jax_cuda13_plugin") or importlib.util.find_spec("jax_cuda12_plugin"):
        pytest.skip("a CUDA plugin extension is installed here")
    assert plugins.gpu_extension("cuda") == (None, None)
