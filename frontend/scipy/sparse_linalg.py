"""kiln.scipy.sparse.linalg (as ``jax.scipy.sparse.linalg``): the Krylov solvers ``cg``, ``gmres`` and
``bicgstab``.

``A`` (and the preconditioner ``M``) is a square matrix (applied with ``@``) or a function applying a
linear operator to a pytree shaped like ``b``. Each solver is one ``kiln.lax.while_loop`` (GMRES: restarts
around an Arnoldi loop), wrapped in ``custom_linear_solve``: derivatives with respect to ``b`` and to what
``A`` closes over come from the implicit function theorem (one more solve with ``A`` or ``A^T``), never by
differentiating through the iterations. They are only as accurate as those solves converge.

Convergence, as SciPy's (non-legacy) and JAX's: ``norm(b - A x) <= max(tol * norm(b), atol)``, with the
2-norm over all of ``b``'s leaves. The thresholds are computed inside the solve from its own right-hand
side, so the transposed solve of reverse mode is relative to its cotangent.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..control.loops import fori_loop, while_loop
from ..control.solves import custom_linear_solve
from ..core import dtypes, tree_util
from ..core.errors import MatrixShapeError, ShapeError
from ..core.tracing import abstractify
from ..driver.tools import eval_shape
from ..lax import linalg as lax_linalg
from ..lax.precision import Precision
from ..numpy._util import is_array

__all__ = ["cg", "gmres", "bicgstab"]

_HIGHEST = Precision.HIGHEST
_INT32_MAX = int(np.iinfo(np.int32).max)


def _where(fname: str) -> str:
    return f"kiln.scipy.sparse.linalg.{fname}"


# -- pytree vector arithmetic ----------------------------------------------------------------------
# Scalars are computed in the common dtype of the leaves; every leaf keeps its own dtype.

def _tmap(f: Callable, *trees: Any) -> Any:
    return tree_util.tree_map(f, *trees)


def _axpy(a, x, y):
    """``a * x + y`` leaf by leaf (``a`` a scalar)."""
    return _tmap(lambda xl, yl: yl + (a * xl).astype(yl.dtype), x, y)


def _sub(x, y):
    return _tmap(lambda xl, yl: xl - yl, x, y)


def _select(pred, x, y):
    return _tmap(lambda xl, yl: jnp.where(pred, xl, yl), x, y)


def _vdot(x, y):
    """``sum(conj(x) * y)`` over all leaves (complex when the leaves are)."""
    parts = [jnp.vdot(xl, yl, precision=_HIGHEST) for xl, yl in zip(tree_util.tree_leaves(x),
                                                                    tree_util.tree_leaves(y))]
    return sum(parts[1:], parts[0])


def _vdot_real(x, y):
    """The real part of :func:`_vdot` (``z^H M z`` of a Hermitian ``M`` is real)."""
    return jnp.real(_vdot(x, y))


def _norm(x):
    return jnp.sqrt(_vdot_real(x, x))


def _result_dtype(tree) -> np.dtype:
    return dtypes.result_type(*tree_util.tree_leaves(tree))


def _real_dtype(dtype) -> np.dtype:
    return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)


def _safe_normalize(x, thresh):
    """``(x / norm(x), norm(x))``, or ``(0, 0)`` when ``norm(x) <= thresh``."""
    n = _norm(x)
    ok = n > thresh
    inv = jnp.where(ok, 1 / jnp.where(ok, n, 1), 0)
    return _tmap(lambda leaf: leaf * inv.astype(leaf.dtype), x), jnp.where(ok, n, 0)


def _thresholds(b, tol, atol, rdtype):
    """``(norm(b), max(tol * norm(b), atol))`` in the real dtype ``rdtype``."""
    bnorm = _norm(b).astype(rdtype)
    return bnorm, jnp.maximum(jnp.asarray(tol, rdtype) * bnorm, jnp.asarray(atol, rdtype))


# -- conjugate gradients ---------------------------------------------------------------------------

def _cg_solve(A, M, b, x0, *, tol, atol, maxiter):
    rdtype = _real_dtype(_result_dtype(b))
    _, thresh = _thresholds(b, tol, atol, rdtype)
    thresh2 = thresh * thresh
    r0 = _sub(b, A(x0))
    z0 = M(r0)

    def cond(state):
        _, _, _, _, rs, k = state
        return (rs > thresh2) & (k < maxiter)

    def body(state):
        x, r, p, gamma, _, k = state
        ap = A(p)
        alpha = gamma / _vdot_real(p, ap).astype(rdtype)
        x = _axpy(alpha, p, x)
        r = _axpy(-alpha, ap, r)
        z = M(r)
        gamma_new = _vdot_real(r, z).astype(rdtype)
        p = _axpy(gamma_new / gamma, p, z)
        return x, r, p, gamma_new, _vdot_real(r, r).astype(rdtype), k + 1

    init = (x0, r0, z0, _vdot_real(r0, z0).astype(rdtype), _vdot_real(r0, r0).astype(rdtype),
            jnp.asarray(0, jnp.int32))
    return while_loop(cond, body, init)[0]


# -- BiCGSTAB --------------------------------------------------------------------------------------

def _bicgstab_solve(A, M, b, x0, *, tol, atol, maxiter):
    dtype = _result_dtype(b)
    rdtype = _real_dtype(dtype)
    _, thresh = _thresholds(b, tol, atol, rdtype)
    thresh2 = thresh * thresh
    r0 = _sub(b, A(x0))
    zeros = _tmap(jnp.zeros_like, r0)
    one = jnp.asarray(1, dtype)

    def cond(state):
        rs, k, ok = state[-3:]
        return (rs > thresh2) & (k < maxiter) & ok

    def body(state):
        x, r, rhat, p, v, rho, alpha, omega, _, k, _ = state
        rho_new = _vdot(rhat, r).astype(dtype)
        beta = (rho_new / rho) * (alpha / omega)
        p = _axpy(beta, _axpy(-omega, v, p), r)
        phat = M(p)
        v = A(phat)
        alpha = rho_new / _vdot(rhat, v).astype(dtype)
        s = _axpy(-alpha, v, r)
        ss = _vdot_real(s, s).astype(rdtype)
        half = ss <= thresh2  # converged half-way: x + alpha phat is the answer
        shat = M(s)
        t = A(shat)
        omega = _vdot(t, s).astype(dtype) / _vdot(t, t).astype(dtype)
        x_half = _axpy(alpha, phat, x)
        x_new = _select(half, x_half, _axpy(omega, shat, x_half))
        r_new = _select(half, s, _axpy(-omega, t, s))
        # Breakdown (a zero or non-finite rho, alpha or omega) stops the loop, keeping the last good iterate.
        good = jnp.isfinite(alpha) & (half | jnp.isfinite(omega))
        x = _select(good, x_new, x)
        r = _select(good, r_new, r)
        ok = good & (rho_new != 0) & (alpha != 0) & (half | (omega != 0))
        return x, r, rhat, p, v, rho_new, alpha, omega, _vdot_real(r, r).astype(rdtype), k + 1, ok

    init = (x0, r0, r0, zeros, zeros, one, one, one, _vdot_real(r0, r0).astype(rdtype),
            jnp.asarray(0, jnp.int32), jnp.asarray(True))
    return while_loop(cond, body, init)[0]


# -- GMRES -----------------------------------------------------------------------------------------
# Left-preconditioned restarted GMRES: each cycle builds an orthonormal basis V of the Krylov space of
# M A from the preconditioned residual M (b - A x) (Arnoldi, classical Gram-Schmidt applied twice) and
# adds the combination of V that minimises the preconditioned residual. V is stored per leaf with a
# leading axis of restart + 1 vectors (rows not built yet are zero).

def _get(x, i):
    """``x[i]`` for a traced ``i`` (a dynamic slice: cheaper to compile than a gather)."""
    return lax.dynamic_index_in_dim(x, i, 0, keepdims=False)


def _put(x, i, value, axis=0):
    """``x`` with ``value`` at index ``i`` of ``axis`` (a dynamic update slice, not a scatter)."""
    return lax.dynamic_update_index_in_dim(x, jnp.asarray(value).astype(x.dtype), i, axis)


def _first_unit(value, size, dtype):
    """``value`` times the first unit vector of length ``size``."""
    return jnp.concatenate([jnp.reshape(value, (1,)).astype(dtype), jnp.zeros(size - 1, dtype)])


def _flat(leaf, m):
    return leaf.reshape(m, -1)


def _arnoldi_step(j, A, M, V, m, eps):
    """Extend the basis by M A V[j]: returns the new V, the column ``h`` (m + 1 entries: the projections on
    V and, at j + 1, the norm of the new vector) and whether the Krylov space is exhausted (breakdown)."""
    w = M(A(_tmap(lambda Vl: _get(Vl, j), V)))
    w_norm0 = _norm(w)
    h = None
    for _ in range(2):  # "twice is enough": a second pass restores orthogonality lost to rounding
        c = [jnp.matmul(jnp.conj(_flat(Vl, m + 1)), wl.reshape(-1), precision=_HIGHEST)
             for Vl, wl in zip(tree_util.tree_leaves(V), tree_util.tree_leaves(w))]
        c = sum(c[1:], c[0])
        w = _tmap(lambda Vl, wl: wl - jnp.matmul(c, _flat(Vl, m + 1), precision=_HIGHEST)
                  .reshape(wl.shape).astype(wl.dtype), V, w)
        h = c if h is None else h + c
    unit, w_norm = _safe_normalize(w, eps * w_norm0)
    V = _tmap(lambda Vl, ul: _put(Vl, j + 1, ul), V, unit)
    h = _put(h, j + 1, w_norm)
    return V, h, w_norm == 0


def _basis(unit_residual, m):
    return _tmap(lambda u: jnp.concatenate([u[None], jnp.zeros((m,) + u.shape, u.dtype)]), unit_residual)


def _combine(V, y, m):
    """``sum_j y[j] V[j]`` over the first m basis vectors."""
    return _tmap(lambda Vl: jnp.matmul(y, _flat(Vl[:m], m), precision=_HIGHEST).reshape(Vl.shape[1:])
                 .astype(Vl.dtype), V)


def _cycle_batched(A, M, unit_residual, residual_norm, ptol, m, dtype, eps):
    """One restart: m Arnoldi steps (fewer on breakdown), then the least-squares problem by QR."""
    del ptol  # the basis is always built in full: no residual estimate per step
    V = _basis(unit_residual, m)
    H = jnp.eye(m + 1, m, dtype=dtype)  # columns not built stay those of the identity: H keeps full rank

    def cond(state):
        _, _, broke, j = state
        return (j < m) & ~broke

    def body(state):
        V, H, _, j = state
        V, h, broke = _arnoldi_step(j, A, M, V, m, eps)
        return V, _put(H, j, h, axis=1), broke, j + 1

    V, H, _, _ = while_loop(cond, body, (V, H, jnp.asarray(False), jnp.asarray(0, jnp.int32)))
    g = _first_unit(residual_norm, m + 1, dtype)
    wide = _factor_dtype(dtype)
    q, r = lax_linalg.qr(H.astype(wide), full_matrices=False)
    rhs = jnp.matmul(jnp.conj(q).T, g.astype(wide), precision=_HIGHEST)
    y = lax_linalg.triangular_solve(r, rhs[:, None], left_side=True, lower=False)[:, 0]
    return _combine(V, y.astype(dtype), m)


def _factor_dtype(dtype) -> np.dtype:
    """The dtype of the small dense factorisations: at least float32 (LAPACK has no half precision)."""
    return dtypes.promote_types(dtype, np.float32)


def _givens(a, b):
    """``(c, s)`` with ``c a + s b = r`` and ``-conj(s) a + c b = 0`` (``c`` real, stored in a's dtype)."""
    abs_a, abs_b = jnp.abs(a), jnp.abs(b)
    r = jnp.hypot(abs_a, abs_b)
    a_zero, b_zero = abs_a == 0, abs_b == 0
    safe_r = jnp.where(b_zero, 1, r)
    phase_a = jnp.where(a_zero, 1, a / jnp.where(a_zero, 1, abs_a).astype(a.dtype))
    c = jnp.where(b_zero, 1, abs_a / safe_r).astype(a.dtype)
    s_nonzero_a = phase_a * jnp.conj(b) / safe_r.astype(a.dtype)
    s_zero_a = jnp.conj(b) / jnp.where(b_zero, 1, abs_b).astype(a.dtype)
    s = jnp.where(b_zero, 0, jnp.where(a_zero, s_zero_a, s_nonzero_a))
    return c, s


def _rotate(vec, i, c, s):
    pair = lax.dynamic_slice_in_dim(vec, i, 2)
    x, y = pair[0], pair[1]
    return lax.dynamic_update_slice_in_dim(vec, jnp.stack([c * x + s * y, -jnp.conj(s) * x + c * y]), i)


def _cycle_incremental(A, M, unit_residual, residual_norm, ptol, m, dtype, eps):
    """One restart: Arnoldi steps with the QR factorisation of H updated by Givens rotations, which gives
    the residual after each step; stops once it is at most ``ptol`` (always after one step at least)."""
    V = _basis(unit_residual, m)
    R = jnp.eye(m, dtype=dtype)  # columns not built stay those of the identity
    rotations = jnp.zeros((m, 2), dtype)
    g = _first_unit(residual_norm, m + 1, dtype)
    rdtype = _real_dtype(dtype)

    def cond(state):
        _, _, _, _, err, j = state
        return (j < m) & ((j == 0) | (err > ptol))

    def body(state):
        V, R, rotations, g, _, j = state
        V, h, _ = _arnoldi_step(j, A, M, V, m, eps)
        h = fori_loop(0, j, lambda i, h: _rotate(h, i, *_get(rotations, i)), h)
        pair = lax.dynamic_slice_in_dim(h, j, 2)
        c, s = _givens(pair[0], pair[1])
        h = _rotate(h, j, c, s)
        g = _rotate(g, j, c, s)
        rotations = _put(rotations, j, jnp.stack([c, s]))
        return V, _put(R, j, h[:m], axis=1), rotations, g, jnp.abs(_get(g, j + 1)).astype(rdtype), j + 1

    init = (V, R, rotations, g, residual_norm.astype(rdtype), jnp.asarray(0, jnp.int32))
    V, R, _, g, _, steps = while_loop(cond, body, init)
    rhs = jnp.where(jnp.arange(m) < steps, g[:m], 0)  # g[steps] is the residual, not a coefficient
    wide = _factor_dtype(dtype)
    y = lax_linalg.triangular_solve(R.astype(wide), rhs.astype(wide)[:, None], left_side=True, lower=False)[:, 0]
    return _combine(V, y.astype(dtype), m)


def _gmres_solve(A, M, b, x0, *, tol, atol, restart, maxiter, cycle):
    dtype = _result_dtype(b)
    rdtype = _real_dtype(dtype)
    eps = jnp.asarray(dtypes.finfo(rdtype).eps, rdtype)
    bnorm, thresh = _thresholds(b, tol, atol, rdtype)
    # Tolerance of the preconditioned residual inside a cycle: the outer one, relative to M b.
    ratio = jnp.where(bnorm > 0, jnp.minimum(1, thresh / jnp.where(bnorm > 0, bnorm, 1)), 1)
    ptol = _norm(M(b)).astype(rdtype) * ratio

    def residuals(x):
        r = _sub(b, A(x))
        unit, norm = _safe_normalize(M(r), 0)
        return unit, norm.astype(rdtype), _norm(r).astype(rdtype)

    def cond(state):
        _, _, _, rnorm, k = state
        return (rnorm > thresh) & (k < maxiter)

    def body(state):
        x, unit, znorm, _, k = state
        dx = cycle(A, M, unit, znorm, ptol, restart, dtype, eps)
        x = _tmap(lambda xl, dl: xl + dl.astype(xl.dtype), x, dx)
        return (x,) + residuals(x) + (k + 1,)

    init = (x0,) + residuals(x0) + (jnp.asarray(0, jnp.int32),)
    return while_loop(cond, body, init)[0]


# -- arguments ----------------------------------------------------------------------------------------

def _leaf_str(shape, dtype) -> str:
    return f"{np.dtype(dtype).name}{list(shape)}"


def _describe(tree) -> str:
    leaves = tree_util.tree_leaves(tree)
    parts = ", ".join(_leaf_str(abstractify(x).shape, abstractify(x).dtype) for x in leaves)
    return parts if len(leaves) == 1 and not isinstance(tree, (tuple, list, dict)) else \
        f"{tree_util.tree_structure(tree)} with leaves [{parts}]"


def _as_vector(fname: str, what: str, tree) -> Any:
    """The leaves of ``tree`` as kiln arrays of an inexact dtype (integers and bools: the default float)."""
    def convert(leaf):
        if not (is_array(leaf) or isinstance(leaf, (np.ndarray, np.generic)) or
                isinstance(leaf, dtypes.PY_SCALARS)):
            raise TypeError(f"{_where(fname)}: {what} must be an array or a pytree of arrays, but it holds a "
                            f"{type(leaf).__name__} ({leaf!r:.40}); convert it with kiln.numpy.asarray")
        dtype = dtypes.result_type(leaf)
        if not dtypes.is_inexact(dtype):
            dtype = dtypes.default_float_dtype()
        return jnp.asarray(leaf, dtype=dtype)
    if tree_util.tree_structure(tree).num_leaves == 0:
        raise ValueError(f"{_where(fname)}: {what} has no arrays ({tree!r:.60}); pass the right-hand side as "
                         "an array or a pytree of arrays")
    return _tmap(convert, tree)


def _is_matrix_like(op) -> bool:
    return is_array(op) or isinstance(op, np.ndarray)


def _operator(fname: str, what: str, op, b) -> tuple[Callable, Any]:
    """``op`` as a function, and ``b`` converted to the dtype a matrix ``op`` promotes it to."""
    if _is_matrix_like(op) or (hasattr(op, "__matmul__") and hasattr(op, "shape") and not callable(op)):
        shape = tuple(abstractify(op).shape) if _is_matrix_like(op) else tuple(op.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise MatrixShapeError(f"{_where(fname)}: {what} must be a square matrix (n, n) or a function "
                                   f"applying the linear operator, got an array of shape {shape}")
        if not _is_matrix_like(b):
            raise ShapeError(f"{_where(fname)}: {what} is a matrix, so b must be one array of shape ({shape[0]},) "
                             f"or ({shape[0]}, k), got {_describe(b)}; for pytrees pass {what} as a function")
        b_shape = abstractify(b).shape
        if len(b_shape) not in (1, 2) or b_shape[0] != shape[0]:
            raise ShapeError(f"{_where(fname)}: {what} of shape {shape} does not match b of shape {b_shape}: an "
                             f"(n, n) matrix needs b of shape (n,) or (n, k); here b must have shape "
                             f"({shape[0]},) or ({shape[0]}, k)")
        if not _is_matrix_like(op):
            return (lambda x: op @ x), b
        mat = jnp.asarray(op)
        dtype = dtypes.result_type(mat, b)
        if not dtypes.is_inexact(dtype):
            dtype = dtypes.default_float_dtype()
        return (lambda x: jnp.matmul(mat, x, precision=_HIGHEST)), b.astype(dtype)
    if callable(op):
        return op, b
    raise TypeError(f"{_where(fname)}: {what} must be a square matrix (an array) or a function applying the "
                    f"linear operator to a pytree like b, got {type(op).__name__} ({op!r:.40})")


def _check_operator(fname: str, what: str, op: Callable, b) -> None:
    """``op(b)`` must be a pytree of arrays with b's structure, shapes and dtypes."""
    out = eval_shape(op, b)
    b_tree, out_tree = tree_util.tree_structure(b), tree_util.tree_structure(out)
    b_leaves, out_leaves = tree_util.tree_leaves(b), tree_util.tree_leaves(out)
    same = out_tree == b_tree and all(
        tuple(o.shape) == tuple(abstractify(x).shape) and np.dtype(o.dtype) == abstractify(x).dtype
        for o, x in zip(out_leaves, b_leaves))
    if not same:
        got = ", ".join(_leaf_str(o.shape, o.dtype) for o in out_leaves)
        raise ValueError(f"{_where(fname)}: {what}(x) must return a pytree like b ({_describe(b)}), with the same "
                         f"structure, shapes and dtypes, but it returned {out_tree} with leaves [{got}]; make the "
                         f"operator map vectors shaped like b to vectors shaped like b (cast b to the operator's "
                         f"dtype if they differ)")


def _prepare(fname: str, A, b, x0, M, maxiter, iters_per_size: int = 10):
    b = _as_vector(fname, "b", b)
    A, b = _operator(fname, "A", A, b)
    if M is None:
        M = _identity
    else:
        M, b = _operator(fname, "M", M, b)
    _check_operator(fname, "A", A, b)
    if M is not _identity:
        _check_operator(fname, "M", M, b)
    b_tree = tree_util.tree_structure(b)
    if x0 is None:
        x0 = _tmap(jnp.zeros_like, b)
    else:
        x0_tree = tree_util.tree_structure(x0)
        if x0_tree != b_tree:
            raise ValueError(f"{_where(fname)}: x0 and b must have the same pytree structure, got {x0_tree} for x0 "
                             f"and {b_tree} for b; pass x0 shaped like b (or None to start from zeros)")
        x0 = _as_vector(fname, "x0", x0)
        x0_shapes = [abstractify(x).shape for x in tree_util.tree_leaves(x0)]
        b_shapes = [abstractify(x).shape for x in tree_util.tree_leaves(b)]
        if x0_shapes != b_shapes:
            raise ValueError(f"{_where(fname)}: the arrays of x0 and b must have the same shapes, got {x0_shapes} "
                             f"for x0 and {b_shapes} for b")
        x0 = _tmap(lambda x, bl: x.astype(bl.dtype), x0, b)
    size = sum(int(np.prod(abstractify(x).shape, dtype=np.int64)) for x in tree_util.tree_leaves(b))
    if maxiter is None:
        maxiter = iters_per_size * size
    elif not is_array(maxiter):
        try:
            maxiter = operator.index(maxiter)
        except TypeError:
            raise TypeError(f"{_where(fname)}: maxiter must be an integer or None, got {maxiter!r:.40}") from None
    if isinstance(maxiter, int):
        maxiter = min(maxiter, _INT32_MAX)  # the iteration counter is an int32
    return A, b, x0, M, maxiter, size


def _identity(x):
    return x


def _real_leaves(b) -> bool:
    return not any(dtypes.is_complex(abstractify(x).dtype) for x in tree_util.tree_leaves(b))


# -- public functions --------------------------------------------------------------------------------

def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` by the conjugate gradient method (as ``jax.scipy.sparse.linalg.cg``).

    Parameters
    ----------
    A : array or callable
        A Hermitian positive definite operator: a square matrix (applied as ``A @ x``) or a function
        ``x -> A x`` on pytrees shaped like ``b``.
    b : array or pytree of arrays
        The right-hand side (a single vector, possibly split over several arrays).
    x0 : array or pytree of arrays, optional
        The starting guess, shaped like ``b`` (default: zeros).
    tol, atol : float
        Stop when ``norm(b - A x) <= max(tol * norm(b), atol)``.
    maxiter : int, optional
        The most iterations (default: 10 times the size of ``b``).
    M : array or callable, optional
        A preconditioner approximating the inverse of ``A`` (Hermitian positive definite).

    Returns
    -------
    x : the solution, shaped like ``b``.
    info : None
        A placeholder, as in JAX.

    Derivatives (with respect to ``b`` and to what ``A`` closes over) solve with ``A`` again
    (implicit differentiation); they are accurate when that solve converges.
    """
    A, b, x0, M, maxiter, _ = _prepare("cg", A, b, x0, M, maxiter)

    def solve(matvec, rhs):
        return _cg_solve(matvec, M, rhs, x0, tol=tol, atol=atol, maxiter=maxiter)
    # A real positive definite operator is symmetric: the transposed solve is the same solve.
    x = custom_linear_solve(A, b, solve, transpose_solve=solve, symmetric=_real_leaves(b))
    return x, None


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
             M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` by the stabilised bi-conjugate gradient method (as
    ``jax.scipy.sparse.linalg.bicgstab``).

    Parameters
    ----------
    A : array or callable
        A square (not necessarily symmetric) matrix, or a function ``x -> A x`` on pytrees shaped like ``b``.
    b : array or pytree of arrays
        The right-hand side.
    x0 : array or pytree of arrays, optional
        The starting guess, shaped like ``b`` (default: zeros).
    tol, atol : float
        Stop when ``norm(b - A x) <= max(tol * norm(b), atol)``.
    maxiter : int, optional
        The most iterations (default: 10 times the size of ``b``). The iteration also stops on a breakdown
        (a zero inner product), returning the last iterate.
    M : array or callable, optional
        A preconditioner approximating the inverse of ``A``.

    Returns
    -------
    x : the solution, shaped like ``b``.
    info : None
        A placeholder, as in JAX.

    Reverse-mode derivatives solve with the transpose of ``A`` (by the same method).
    """
    A, b, x0, M, maxiter, _ = _prepare("bicgstab", A, b, x0, M, maxiter)

    def solve(matvec, rhs):
        return _bicgstab_solve(matvec, M, rhs, x0, tol=tol, atol=atol, maxiter=maxiter)
    x = custom_linear_solve(A, b, solve, transpose_solve=solve)
    return x, None


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, restart: int = 20,
          maxiter: int | None = None, M: Any = None, solve_method: str = "batched") -> tuple[Any, Any]:
    """Solve ``A x = b`` by restarted GMRES (as ``jax.scipy.sparse.linalg.gmres``).

    Parameters
    ----------
    A : array or callable
        A square matrix, or a function ``x -> A x`` on pytrees shaped like ``b``.
    b : array or pytree of arrays
        The right-hand side.
    x0 : array or pytree of arrays, optional
        The starting guess, shaped like ``b`` (default: zeros).
    tol, atol : float
        Stop when ``norm(b - A x) <= max(tol * norm(b), atol)`` (checked after each restart).
    restart : int
        The dimension of the Krylov space built between restarts (at most the size of ``b``).
    maxiter : int, optional
        The most restarts (default: 10 times the size of ``b``).
    M : array or callable, optional
        A (left) preconditioner approximating the inverse of ``A``.
    solve_method : {'batched', 'incremental'}
        'batched' builds the whole Krylov basis then solves the small least-squares problem (fewer, larger
        operations: faster on accelerators); 'incremental' updates a QR factorisation by Givens rotations at
        each step, which lets a restart stop as soon as its residual is small enough.

    Returns
    -------
    x : the solution, shaped like ``b``.
    info : int array
        0, or -1 when the solution holds NaN (as JAX).

    Reverse-mode derivatives solve with the transpose of ``A`` (by the same method).
    """
    cycles = {"batched": _cycle_batched, "incremental": _cycle_incremental}
    if not isinstance(solve_method, str) or solve_method not in cycles:
        raise ValueError(f"{_where('gmres')}: solve_method must be 'batched' or 'incremental', got "
                         f"{solve_method!r}")
    try:
        restart = operator.index(restart)
    except TypeError:
        raise TypeError(f"{_where('gmres')}: restart must be a positive integer, got {restart!r:.40}") from None
    if restart < 1:
        raise ValueError(f"{_where('gmres')}: restart must be a positive integer (the Krylov space's dimension), "
                         f"got {restart}")
    A, b, x0, M, maxiter, size = _prepare("gmres", A, b, x0, M, maxiter)
    restart = max(min(restart, size), 1)
    cycle = cycles[solve_method]

    def solve(matvec, rhs):
        return _gmres_solve(matvec, M, rhs, x0, tol=tol, atol=atol, restart=restart, maxiter=maxiter, cycle=cycle)
    x = custom_linear_solve(A, b, solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info

