"""Helpers for the tests of kiln.numpy's composite functions: derivatives against central finite
differences (float64, x64 on) and ``vmap`` against a Python loop."""
from __future__ import annotations

import numpy as np

import kiln
import kiln.numpy as knp


def check_grad(f, *args, argnum: int = 0, eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """``kiln.grad`` of the scalar ``sum(f(*args))`` with respect to ``args[argnum]`` against central finite
    differences, all in float64 (under ``kiln.jit``: eager evaluation would compile every primitive)."""
    with kiln.config.override("enable_x64", True):
        args = [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else a for a in args]

        def scalar(*a):
            return knp.sum(f(*a))

        fd = kiln.jit(scalar)  # one compilation for all the finite-difference evaluations
        x = np.array(args[argnum], dtype=np.float64)
        expected = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            up, down = x.copy(), x.copy()
            up[i] += eps
            down[i] -= eps
            a_up = list(args)
            a_up[argnum] = up
            a_down = list(args)
            a_down[argnum] = down
            expected[i] = (float(fd(*a_up)) - float(fd(*a_down))) / (2 * eps)
        g = kiln.jit(kiln.grad(scalar, argnums=argnum))
        np.testing.assert_allclose(np.asarray(g(*args)), expected, rtol=rtol, atol=atol)


def check_vmap(f, *batched, in_axes=0, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """``kiln.vmap(f)`` over the leading axis of each argument against a Python loop of ``f`` (both jitted)."""
    out = kiln.jit(kiln.vmap(f, in_axes=in_axes))(*batched)
    n = np.shape(batched[0])[0]
    single = kiln.jit(f)  # one example at a time (jitted: eagerly, every primitive would compile)
    loop = [single(*[b[i] for b in batched]) for i in range(n)]
    if isinstance(out, (tuple, list)):
        for k, o in enumerate(out):
            np.testing.assert_allclose(np.asarray(o), np.stack([np.asarray(r[k]) for r in loop]), rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(r) for r in loop]), rtol=rtol, atol=atol)


def close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6, dtype=None) -> None:
    """``actual`` is a kiln array equal (close, for inexact data) to NumPy's ``expected``."""
    assert isinstance(actual, kiln.Array), type(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtype is not None:
        assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(np.asarray(actual), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(np.asarray(actual), expected)
