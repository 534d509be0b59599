"""tests/ffi: builds kernels.cc into a shared library once per test session and registers its handlers.

The tests that use them are skipped when no C++ compiler is found (``$CXX``, ``g++`` or ``c++``) or when
the default backend is not the CPU.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import pytest

import kiln
import kiln.ffi

HERE = os.path.dirname(os.path.abspath(__file__))
# Target names of kernels.cc's handlers as registered for the tests (unique to this test session's process).
TARGETS = {"RmsNorm": "kiln_test_rms_norm", "Attrs": "kiln_test_attrs", "Counter": "kiln_test_counter",
           "Fails": "kiln_test_fails", "Add": "kiln_test_add"}


def _compiler() -> str | None:
    for cxx in (os.environ.get("CXX"), "g++", "c++"):
        if cxx and shutil.which(cxx):
            return shutil.which(cxx)
    return None


@pytest.fixture(scope="session")
def kernels(tmp_path_factory):
    """The loaded library (``ctypes.CDLL``) with kernels.cc's handlers registered under TARGETS' names."""
    if kiln.default_backend() != "cpu":
        pytest.skip("the FFI test kernels are CPU handlers; the default backend here is " + kiln.default_backend())
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler found (set $CXX, or install g++) to build the FFI test kernels")
    out = str(tmp_path_factory.mktemp("ffi") / "kiln_test_kernels.so")
    cmd = [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-I", kiln.ffi.include_dir(),
           os.path.join(HERE, "kernels.cc"), "-o", out]
    built = subprocess.run(cmd, capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"building the FFI test kernels failed:\n{' '.join(cmd)}\n{built.stderr[-4000:]}")
    lib = ctypes.cdll.LoadLibrary(out)
    for symbol, name in TARGETS.items():
        kiln.ffi.register_ffi_target(name, kiln.ffi.pycapsule(getattr(lib, symbol)), platform="cpu")
    lib.kiln_test_counter.restype = ctypes.c_int64
    return lib
