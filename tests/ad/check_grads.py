"""``check_grads``: a test utility that checks kiln's derivatives of a function against independent
oracles, in float64.

- forward mode: ``kiln.jvp`` against central finite differences ``(f(x + eps v) - f(x - eps v)) / 2 eps``;
- reverse mode: ``kiln.vjp`` against the same finite differences through the inner-product identity
  ``<u, J v> = <J^T u, v>`` for random ``u`` and ``v`` (the pairing is ``Re(sum(a * b))``, which makes
  the transpose of complex-linear maps the one kiln and JAX compute);
- second order (``order=2``): the same checks applied to the function ``(x, v) -> jvp(f, x, v)`` and to
  ``x -> vjp(f, x)[1](f(x))``;
- ``jit=True`` runs the transformations inside ``kiln.jit`` (forward: jit of jvp; reverse: jit of the
  vjp of the jitted function), one compile each.

Arguments may be pytrees; integer leaves are held fixed (their tangents are float0 zeros).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from kiln.frontend.ad.tangents import float0

import kiln
from kiln import tree_util

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp", "rand_like", "float0"]


def _is_inexact(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.inexact)


def _np(x):
    return np.asarray(x)


def rand_like(rng: np.random.Generator, tree: Any) -> Any:
    """Random normal values of every inexact leaf's shape and dtype; float0 zeros for the others."""
    def leaf(x):
        x = _np(x)
        if not _is_inexact(x):
            return np.zeros(x.shape, float0)
        v = rng.standard_normal(x.shape)
        if np.iscomplexobj(x):
            v = v + 1j * rng.standard_normal(x.shape)
        return v.astype(x.dtype)
    return tree_util.tree_map(leaf, tree)


def _inner(a: Any, b: Any) -> float:
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        x, y = _np(x), _np(y)
        if x.dtype == float0 or y.dtype == float0 or not _is_inexact(x) or not _is_inexact(y):
            continue
        total += float(np.real(np.sum(x.astype(np.complex128) * y.astype(np.complex128))))
    return total


def _perturb(x, v, scale: float):
    x = _np(x)
    if not _is_inexact(x):
        return x
    return (x + scale * _np(v)).astype(x.dtype)


def numerical_jvp(f: Callable, args: Sequence[Any], tangents: Sequence[Any], eps: float) -> Any:
    """Central finite differences of ``f`` at ``args`` along ``tangents`` (inexact outputs only)."""
    plus = [tree_util.tree_map(lambda x, v: _perturb(x, v, eps), a, t) for a, t in zip(args, tangents)]
    minus = [tree_util.tree_map(lambda x, v: _perturb(x, v, -eps), a, t) for a, t in zip(args, tangents)]
    fp, fm = f(*plus), f(*minus)

    def diff(p, m):
        p, m = _np(p), _np(m)
        if not _is_inexact(p):
            return np.zeros(p.shape, float0)
        return ((p.astype(np.complex128 if np.iscomplexobj(p) else np.float64) - m) / (2 * eps)).astype(p.dtype)
    return tree_util.tree_map(diff, fp, fm)


def _assert_tree_close(actual: Any, expected: Any, atol: float, rtol: float, what: str) -> None:
    a_leaves, a_tree = tree_util.tree_flatten(actual)
    e_leaves, e_tree = tree_util.tree_flatten(expected)
    assert a_tree == e_tree, f"{what}: structure {a_tree} != {e_tree}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        a, e = _np(a), _np(e)
        assert a.shape == e.shape, f"{what}: leaf {i} has shape {a.shape}, expected {e.shape}"
        if e.dtype == float0 or a.dtype == float0:
            continue
        np.testing.assert_allclose(a, e, atol=atol, rtol=rtol, err_msg=f"{what}: leaf {i}")


def check_jvp(f: Callable, args: Sequence[Any], *, rng: np.random.Generator, eps: float = 1e-4,
              atol: float = 1e-5, rtol: float = 1e-5, jit: bool = False) -> None:
    """``kiln.jvp(f, args, v)`` against ``f(args)`` and central finite differences, for a random ``v``."""
    args = tuple(args)
    tangents = tuple(rand_like(rng, a) for a in args)
    if jit:
        out, t_out = kiln.jit(lambda p, t: kiln.jvp(f, p, t))(args, tangents)
    else:
        out, t_out = kiln.jvp(f, args, tangents)
    _assert_tree_close(out, f(*args), atol, rtol, "jvp primal output")
    _assert_tree_close(t_out, numerical_jvp(f, args, tangents, eps), atol, rtol, "jvp tangent vs finite differences")


def check_vjp(f: Callable, args: Sequence[Any], *, rng: np.random.Generator, eps: float = 1e-4,
              atol: float = 1e-5, rtol: float = 1e-5, jit: bool = False) -> None:
    """``<u, J v> == <J^T u, v>`` with ``J^T u`` from ``kiln.vjp`` and ``J v`` from finite differences."""
    args = tuple(args)
    out = f(*args)
    u = rand_like(rng, out)
    if jit:
        f_jit = kiln.jit(f)
        out_vjp, cts = kiln.jit(lambda a, ct: (f_jit(*a), kiln.vjp(f_jit, *a)[1](ct)))(args, u)
    else:
        out_vjp, f_vjp = kiln.vjp(f, *args)
        cts = f_vjp(u)
    _assert_tree_close(out_vjp, out, atol, rtol, "vjp primal output")
    assert tree_util.tree_structure(cts) == tree_util.tree_structure(args), "vjp: cotangents have the wrong structure"
    v = tuple(rand_like(rng, a) for a in args)
    jv = numerical_jvp(f, args, v, eps)
    lhs, rhs = _inner(u, jv), _inner(cts, v)
    scale = max(1.0, abs(lhs), abs(rhs))
    assert abs(lhs - rhs) <= atol * 10 + rtol * 10 * scale, (
        f"vjp: <u, J v> = {lhs!r} (finite differences) but <J^T u, v> = {rhs!r} (kiln.vjp)")


def check_grads(f: Callable, args: Sequence[Any], order: int = 2, modes: Sequence[str] = ("fwd", "rev"), *,
                eps: float = 1e-4, atol: float = 1e-5, rtol: float = 1e-5, jit: bool = False,
                seed: int = 0) -> None:
    """Check the derivatives of ``f`` at ``args`` up to ``order``, in forward and/or reverse mode.

    Runs with ``enable_x64`` on; float32 (complex64) leaves of ``args`` are promoted to float64
    (complex128) so that finite differences are accurate.
    """
    rng = np.random.default_rng(seed)

    def promote(x):
        x = _np(x)
        if x.dtype == np.float32:
            return x.astype(np.float64)
        if x.dtype == np.complex64:
            return x.astype(np.complex128)
        return x

    with kiln.config.override("enable_x64", True):
        args64 = tuple(tree_util.tree_map(promote, a) for a in args)
        _check(f, args64, order, tuple(modes), rng, dict(eps=eps, atol=atol, rtol=rtol, jit=jit))


def _check(f, args, order, modes, rng, kw):
    if "fwd" in modes:
        check_jvp(f, args, rng=rng, **kw)
    if "rev" in modes:
        check_vjp(f, args, rng=rng, **kw)
    if order <= 1:
        return
    flat, tree = tree_util.tree_flatten(args)
    inexact = [_is_inexact(x) for x in flat]
    if "fwd" in modes:
        n = len(args)
        # Tangents of the inexact leaves become arguments; integer leaves keep float0 tangents inside.
        tangents = tuple(rand_like(rng, x) for x, d in zip(flat, inexact) if d)

        def f_jvp(*pt):
            it = iter(pt[n:])
            flat_p = tree_util.tree_leaves(pt[:n])
            flat_t = [next(it) if d else np.zeros(np.shape(x), float0) for x, d in zip(flat_p, inexact)]
            return kiln.jvp(f, pt[:n], tree_util.tree_unflatten(tree, flat_t))
        _check(f_jvp, args + tangents, order - 1, ("fwd", "rev") if "rev" in modes else ("fwd",), rng, kw)
    if "rev" in modes:
        def f_vjp(*a):
            out, pullback = kiln.vjp(f, *a)
            cts = tree_util.tree_leaves(pullback(out))
            return [c for c, d in zip(cts, inexact) if d]
        _check(f_vjp, args, order - 1, ("rev",), rng, kw)
