"""What the against_jax tests of the ported pages check on both sides: the same results (containers, leaf types,
dtypes, weak types, shapes, values) and the same exception classes. Imported by those tests only, after their
``pytest.importorskip("jax")``."""
from __future__ import annotations

import contextlib
import io
import json
import pathlib

import jax
import numpy as np

import kiln


def quiet(fn, *args, **kwargs):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args, **kwargs)
    return res, buf.getvalue()


def outcome(fn, *args):
    """(what fn returns or the exception it raised, what it printed): a cell that may raise."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            res = fn(*args)
        except Exception as e:  # noqa: BLE001 (the cells that show an error)
            res = e
    return res, buf.getvalue()


def skeleton(lib, tree):
    """``tree`` with its leaves replaced by 0: its containers, to compare between the libraries."""
    return lib.tree_util.tree_map(lambda _: 0, tree)


def assert_same(kiln_tree, jax_tree, rtol=1e-6, atol=1e-7, *, allow_empty=False, signed_zeros=False):
    """The same containers, leaf types, dtypes, weak types and shapes, and the array values to rtol (0: bit for
    bit; atol then too). Typed keys compare by their data; NumPy arrays must stay NumPy arrays, and other leaves
    (Python numbers, strings) of the same type compare equal. ``signed_zeros``: a -0.0 must be one on both sides."""
    assert skeleton(kiln, kiln_tree) == skeleton(jax, jax_tree)
    a, b = kiln.tree_util.tree_leaves(kiln_tree), jax.tree_util.tree_leaves(jax_tree)
    assert len(a) == len(b) and (allow_empty or a), (len(a), len(b))
    for x, y in zip(a, b):
        if isinstance(y, jax.Array) and jax.dtypes.issubdtype(y.dtype, jax.dtypes.prng_key):
            assert type(x).__name__ == "KeyArray" and str(x.dtype) == str(y.dtype) and x.shape == y.shape
            np.testing.assert_array_equal(np.asarray(kiln.random.key_data(x)), np.asarray(jax.random.key_data(y)))
        elif isinstance(y, jax.Array):
            assert type(x).__name__ == "Array", type(x)
            assert (x.dtype, x.shape, x.weak_type) == (y.dtype, y.shape, y.weak_type)
            _assert_close(np.asarray(x), np.asarray(y), rtol, atol, signed_zeros)
        elif isinstance(y, np.ndarray):
            assert type(x) is np.ndarray and (x.dtype, x.shape) == (y.dtype, y.shape), (type(x), x, y)
            _assert_close(x, y, rtol, atol, signed_zeros)
        elif isinstance(y, np.dtype) or type(y).__module__.startswith("jax"):  # a dtype (NumPy's, or a key type)
            assert str(x) == str(y) and repr(x) == repr(y), (x, y)
        else:
            assert type(x) is type(y) and x == y, (x, y)


def _assert_close(x: np.ndarray, y: np.ndarray, rtol: float, atol: float, signed_zeros: bool) -> None:
    if rtol == 0:
        np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)
    if signed_zeros:
        np.testing.assert_array_equal(np.signbit(x), np.signbit(y))


def assert_same_exception(k_exc: BaseException, j_exc: BaseException) -> None:
    """kiln's exception is of JAX's class: the builtin (or NumPy) class itself; for one of JAX's (``jax.errors``,
    a class the JAX side of a port defines) kiln's class of that name. In every case an instance of the builtin
    bases of JAX's class."""
    jt = type(j_exc)
    if not jt.__module__.startswith("jax"):  # one class object for both libraries
        assert isinstance(k_exc, jt), (type(k_exc), jt)
    else:
        kt = getattr(kiln.errors, jt.__name__, None)
        assert type(k_exc).__name__ == jt.__name__ or (kt is not None and isinstance(k_exc, kt)), (type(k_exc), jt)
    for base in jt.__mro__:
        if base.__module__ == "builtins":
            assert isinstance(k_exc, base), (type(k_exc), base)


# The environment of a fresh interpreter with 8 CPU devices, per library (the count is fixed when a backend starts).
EIGHT_CPU_DEVICES = {"jax": {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"},
                     "kiln": {"KILN_NUM_CPU_DEVICES": "8"}}


def run_on_eight_cpu_devices(run_py, directory: pathlib.Path, script: str) -> dict:
    """``{lib: (arrays, results)}``: ``script`` run under each library in a fresh interpreter with 8 CPU devices,
    formatted with ``here`` (tests/examples), ``lib``, and the paths it writes: ``npz`` ({name: array}, read back
    as ``arrays``) and ``out`` (JSON, read back as ``results``)."""
    here = pathlib.Path(__file__).resolve().parent
    found = {}
    for lib, env in EIGHT_CPU_DEVICES.items():
        npz, out = directory / f"{lib}.npz", directory / f"{lib}.json"
        run_py(script.format(here=str(here), lib=lib, npz=str(npz), out=str(out)), env=env, timeout=600)
        with np.load(npz) as f:
            arrays = dict(f)
        found[lib] = arrays, json.loads(out.read_text())
    return found
