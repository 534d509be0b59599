"""``kiln.test_util``: check derivatives against finite differences (as ``jax.test_util``).

The checks look in one random direction (NumPy's ``RandomState(0)``), so they stay cheap for large
inputs: ``check_jvp`` compares the JVP with a central difference ``(f(x + eps t) - f(x - eps t)) / 2eps``;
``check_vjp`` checks the VJP against that difference through the identity ``<t, vjp(c)> = <jvp(t), c>``;
``check_grads`` does both, and recursively for higher orders. The comparisons run on the host (NumPy),
on values kiln computed. (PYTEST_DONT_REWRITE: pytest must not rewrite this module's asserts.)
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from .ad.api import jvp, linearize, vjp
from .core import dtypes, tree_util

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

# Default tolerances of derivative checks, per dtype (atol and rtol alike).
_GRAD_TOL = {
    np.dtype(dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _is_py_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _dtype_of(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if _is_py_scalar(x):
        return dtypes.dtype_of_value(x)[0]
    return np.asarray(x).dtype


def _tol(dtype: np.dtype, tol: Any) -> float:
    if tol is None:
        return _GRAD_TOL.get(dtype, 0.0)
    if isinstance(tol, dict):
        merged = dict(_GRAD_TOL)
        merged.update({np.dtype(k): v for k, v in tol.items()})
        return merged.get(dtype, 0.0)
    return float(tol)


def _host(x: Any) -> np.ndarray:
    return np.asarray(x)


def _check_close(xs: Any, ys: Any, atol: Any, rtol: Any, what: str) -> None:
    x_leaves, x_tree = tree_util.tree_flatten(xs)
    y_leaves, y_tree = tree_util.tree_flatten(ys)
    if x_tree != y_tree:
        raise AssertionError(f"{what}: structures differ: {x_tree} and {y_tree}")
    for i, (x, y) in enumerate(zip(x_leaves, y_leaves)):
        a, b = _host(x), _host(y)
        if a.shape != b.shape:
            raise AssertionError(f"{what}: leaf {i} has shape {a.shape}, expected {b.shape}")
        da, db = _dtype_of(x), _dtype_of(y)
        at, rt = max(_tol(da, atol), _tol(db, atol)), max(_tol(da, rtol), _tol(db, rtol))
        np.testing.assert_allclose(_wide(a), _wide(b), atol=at, rtol=rt, err_msg=what)


def _wide(z: np.ndarray) -> np.ndarray:
    """float64/complex128 for comparing (float0 tangents of integer values are zeros)."""
    if z.dtype.kind == "V":
        return np.zeros(z.shape)
    return z.astype(np.complex128 if z.dtype.kind == "c" else np.float64)


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    dtype = _dtype_of(x)
    shape = np.shape(x)
    out = np.asarray(rng.randn(*shape), dtype)
    if dtype.kind == "c":
        out = out + np.asarray(1j * rng.randn(*shape), dtype)
    return out.item() if _is_py_scalar(x) else out


def _leafwise(f: Callable, *trees: Any) -> Any:
    return tree_util.tree_map(f, *trees)


def _axpy(a: float, t: Any, x: Any) -> Any:
    """``x + a t`` leafwise, in each leaf's dtype (a Python scalar stays one)."""
    def one(xi, ti):
        dt = _dtype_of(xi)
        out = np.asarray(_host(xi) + np.asarray(a, dt) * _host(ti), dt)
        return out.item() if _is_py_scalar(xi) else out
    return _leafwise(one, x, t)


def _numerical_jvp(f: Callable, primals: tuple, tangents: tuple, eps: float) -> Any:
    plus = f(*_axpy(eps, tangents, primals))
    minus = f(*_axpy(-eps, tangents, primals))

    def diff(p, m):
        dt = _dtype_of(p)
        p, m = _host(p), _host(m)
        with np.errstate(invalid="ignore"):  # inf - inf is taken as 0
            d = np.where(p == m, np.zeros((), dt), (p - m).astype(dt))
        return np.asarray(d * np.asarray(0.5 / eps, dt), dt)
    return _leafwise(diff, plus, minus)


def _inner(xs: Any, ys: Any) -> float:
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
        total += float(np.real(np.vdot(_host(x).astype(np.complex128).ravel(), _host(y).astype(np.complex128).ravel())))
    return total


def _conj(xs: Any) -> Any:
    return _leafwise(lambda x: np.conj(_host(x)) if _host(x).dtype.kind == "c" else x, xs)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: Any = None, rtol: Any = None,
              eps: float = EPS, err_msg: str = "") -> None:
    """Check ``f_jvp`` (usually ``functools.partial(kiln.jvp, f)``) against a central difference of ``f`` at
    ``args`` in one random direction. Raises ``AssertionError`` on a mismatch."""
    args = tuple(args)
    tangent = _leafwise(functools.partial(_rand_like, np.random.RandomState(0)), args)
    v_out, t_out = f_jvp(args, tangent)
    prefix = f"{err_msg} " if err_msg else ""
    _check_close(v_out, f(*args), atol, rtol, prefix + "primal")
    _check_close(t_out, _numerical_jvp(f, args, tangent, eps), atol, rtol, prefix + "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: Any = None, rtol: Any = None,
              eps: float = EPS, err_msg: str = "") -> None:
    """Check ``f_vjp`` (usually ``functools.partial(kiln.vjp, f)``) against a central difference of ``f``: for
    random ``t`` and ``c``, ``<t, vjp(c)>`` must equal ``<(f(x + eps t) - f(x - eps t)) / 2eps, c>``."""
    args = tuple(args)
    rng = np.random.RandomState(0)
    v_out, vjp_fun = f_vjp(*args)
    prefix = f"{err_msg} " if err_msg else ""
    _check_close(v_out, f(*args), atol, rtol, prefix + "primal")
    tangent = _leafwise(functools.partial(_rand_like, rng), args)
    tangent_out = _numerical_jvp(f, args, tangent, eps)
    cotangent = _leafwise(functools.partial(_rand_like, rng), v_out)
    cotangent_in = _conj(vjp_fun(_conj(cotangent)))
    _check_close(_inner(tangent, cotangent_in), _inner(tangent_out, cotangent), atol, rtol,
                 prefix + "cotangent projection")


def check_grads(f: Callable, args: Sequence[Any], order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol: Any = None, rtol: Any = None, eps: float | None = None) -> None:
    """Check the derivatives of ``f`` at ``args`` up to ``order`` against finite differences, in forward
    mode (``"fwd"``), reverse mode (``"rev"``) and/or through ``linearize`` (``"lin"``). Raises
    ``AssertionError`` on a mismatch."""
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"kiln.test_util.check_grads: order must be a positive int, got {order!r}")
    unknown = [m for m in modes if m not in ("fwd", "rev", "lin")]
    if unknown:
        raise ValueError(f"kiln.test_util.check_grads: unknown mode(s) {unknown}; use 'fwd', 'rev' and/or 'lin'")
    eps = eps or EPS

    def jvp_of(fun):
        return lambda primals, tangents: jvp(fun, primals, tangents)

    def lin_of(fun):
        def run(primals, tangents):
            out, f_lin = linearize(fun, *primals)
            return out, f_lin(*tangents)
        return run

    def rec(fun, fargs, k, msg):
        if "fwd" in modes:
            m = f"JVP of {msg}" if msg else "JVP"
            check_jvp(fun, jvp_of(fun), fargs, atol, rtol, eps, m)
            if k > 1:
                rec(jvp_of(fun), (fargs, fargs), k - 1, m)
        if "rev" in modes:
            m = f"VJP of {msg}" if msg else "VJP"
            check_vjp(fun, functools.partial(vjp, fun), fargs, atol, rtol, eps, m)
            if k > 1:
                def f_vjp(*a):
                    out, pull = vjp(fun, *a)
                    return pull(out)
                rec(f_vjp, fargs, k - 1, m)
        if "lin" in modes:
            m = f"LIN of {msg}" if msg else "LIN"
            check_jvp(fun, lin_of(fun), fargs, atol, rtol, eps, m)
            if k > 1:
                rec(lin_of(fun), (fargs, fargs), k - 1, m)
    rec(f, tuple(args), order, "")
