"""``kiln.experimental.sparse.linalg`` (JAX's ``jax.experimental.sparse.linalg``): ``lobpcg_standard``, the
LOBPCG eigensolver for the largest eigenpairs of a symmetric operator, and ``spsolve``, a linear solve with a CSR
matrix given by its buffers.

Both are compositions of kiln.numpy / kiln.lax ops, so they run eagerly and under ``kiln.jit``:

- ``lobpcg_standard`` follows JAX's variant of LOBPCG step for step (an orthonormal block ``[X, P, R]`` kept with
  SVQB orthonormalization, a Rayleigh-Ritz eigensolve of the projected ``3k x 3k`` matrix, JAX's convergence
  test) in one ``kiln.lax.while_loop``. The operator may be a dense matrix, a kiln sparse matrix (``BCOO``,
  ``BCSR``, ``CSR``, ... anything with ``A @ X``) or a callable on ``(n, k)`` blocks.
- ``spsolve`` scatters the CSR entries into a dense ``(n, n)`` matrix and calls ``kiln.numpy.linalg.solve`` (LU
  with partial pivoting). JAX's is a cuSolver sparse QR on GPU and a SciPy host callback on CPU; kiln keeps the
  whole computation in its IR (no host callback), at the cost of ``n * n`` memory. Derivatives come from kiln's
  autodiff of the scatter and the dense solve, w.r.t. ``data`` and ``b``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..control.loops import while_loop
from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer
from ..driver.eager_jit import eager_jit
from .base import JAXSparse, static_int
from .bcoo import BCOO
from .coo_csr import _csr_rows

__all__ = ["lobpcg_standard", "spsolve"]

_EIGEN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# --- small dense helpers -------------------------------------------------------------------------------

def _dot(a: Any, b: Any) -> Any:
    # Full float32 products on every backend: a reduced-precision (TF32/bf16) pass would break the
    # orthonormality that the whole iteration relies on (JAX asks for HIGHEST too).
    return lax.dot(a, b, precision=lax.Precision.HIGHEST)


def _column_norms(x: Any) -> Any:
    """(k,) Euclidean norms of the columns of an (n, k) block."""
    return jnp.sqrt(jnp.sum(x * x, axis=0))


def _nonzero(norms: Any) -> Any:
    """``norms`` with zeros replaced by 1, to divide columns that may be zero (truncated) by."""
    return jnp.where(norms == 0, jnp.ones_like(norms), norms)


def _eigh_largest_first(a: Any) -> tuple[Any, Any]:
    """Eigenvalues of a symmetric matrix in descending order, with their eigenvectors as columns."""
    w, v = jnp.linalg.eigh(a)
    return w[::-1], v[:, ::-1]


# --- orthonormal bases -----------------------------------------------------------------------------------

def _svqb(x: Any) -> Any:
    """An orthonormal basis of the columns of ``x`` (n, k) by SVQB (Stathopoulos & Wu): one (k, k) Gram matrix,
    its eigendecomposition, and one product, instead of k sequential Gram-Schmidt steps.

    Directions whose Gram eigenvalue falls under ``eps * largest`` are numerically absent: their columns come out
    zero (a rank-deficient ``x`` gives trailing zero columns), never a division by ~0.
    """
    x = x / _nonzero(_column_norms(x))  # unit columns: the Gram matrix has a unit diagonal (no extra scaling)
    gram = _dot(x.T, x)
    w, v = _eigh_largest_first(gram)
    floor = jnp.finfo(x.dtype).eps * w[0]
    # x^T x = v diag(w) v^T, so x v diag(w)^(-1/2) has orthonormal columns; clip w at the floor (and use 1 when
    # x is all zero, floor == 0) so that dropped directions never divide by zero.
    inv_sqrt = jnp.where(floor > 0, jnp.maximum(w, floor), jnp.ones_like(w)) ** -0.5
    basis = _dot(x, v * inv_sqrt[None, :])
    keep = (w > floor) & (jnp.diagonal(gram) > 0)
    basis = basis * keep[None, :].astype(basis.dtype)
    norms = _column_norms(basis)
    keep = keep & (norms > 0)
    return basis / jnp.where(keep, norms, jnp.ones_like(norms))[None, :]


def _orthonormalize(x: Any) -> Any:
    # One SVQB pass leaves an error of about eps * cond(x)^2; a second pass on the nearly orthonormal result
    # brings it down to ~eps ("twice is enough").
    return _svqb(_svqb(x))


def _project_out(basis: Any, u: Any) -> Any:
    """The part of ``u`` (n, k) orthogonal to the orthonormal (zero columns allowed) ``basis`` (n, j), as
    orthonormal columns or zero columns.

    Subtract-then-orthonormalize twice (Kahan's "twice is enough"); then subtract twice more, because the last
    normalization can blow a tiny remainder (near convergence the residuals are ~0) back into ``basis``'s span.
    A column that the final subtractions shrank visibly (norm < 0.99) was mostly inside that span: it is zeroed,
    trading rank for orthogonality, which the Rayleigh-Ritz step needs.
    """
    for _ in range(2):
        u = _orthonormalize(u - _dot(basis, _dot(basis.T, u)))
    for _ in range(2):
        u = u - _dot(basis, _dot(basis.T, u))
    return u * (_column_norms(u) >= 0.99)[None, :].astype(u.dtype)


def _extend_basis(x: Any, m: int) -> Any:
    """``m`` orthonormal columns orthogonal to the orthonormal ``x`` (n, k), with ``k + m <= n``.

    Deterministic (no random start that could overlap ``x``): a block Householder reflector
    ``H = I - 2 w w^T`` maps ``x`` onto a block supported on its first ``k`` rows, so ``H`` applied to the unit
    vectors ``e_k, ..., e_{k+m-1}`` (orthogonal to that block) gives columns orthogonal to ``x``. With
    ``x_top = u diag(s) vt`` (the SVD of the first ``k`` rows), ``y = x + [u vt; 0]`` and
    ``w = y vt^T diag(2 (1 + s))^(-1/2)``.
    """
    n, k = x.shape
    top = x[:k]
    u, s, vt = jnp.linalg.svd(top)
    y = jnp.concatenate([top + _dot(u, vt), x[k:]], axis=0)
    w = _dot(y, vt.T * ((2 * (1 + s)) ** -0.5)[None, :])
    units = jnp.zeros((n, m), x.dtype).at[k:k + m].set(jnp.eye(m, dtype=x.dtype))
    # H e = e - 2 w (w^T e), and w^T e picks rows k..k+m of w.
    return units - 2 * _dot(w, w[k:k + m].T)


def _rayleigh_ritz(apply: Callable, basis: Any) -> tuple[Any, Any]:
    """Eigenpairs (largest first) of the operator restricted to the orthonormal ``basis``:
    ``basis^T A basis = q diag(theta) q^T``."""
    return _eigh_largest_first(_dot(basis.T, apply(basis)))


# --- LOBPCG ----------------------------------------------------------------------------------------------

def _check_block(X: Any) -> Any:
    X = jnp.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"lobpcg_standard: X must be a 2-D (n, k) block of k starting vectors, got shape "
                         f"{tuple(X.shape)}; for one vector write X[:, None]")
    if np.dtype(X.dtype) not in _EIGEN_DTYPES:
        raise TypeError(f"lobpcg_standard: X must be float32 or float64 (kiln's eigh dtypes for this solver), got "
                        f"{X.dtype}; convert it with X.astype(jnp.float32)")
    n, k = X.shape
    if k == 0:
        raise ValueError(f"lobpcg_standard: X has no columns (shape {tuple(X.shape)}); pass at least one starting "
                         "vector (k >= 1)")
    if 5 * k >= n:
        raise ValueError(f"lobpcg_standard: X of shape {tuple(X.shape)} asks for k={k} eigenpairs of an n={n} "
                         f"operator, but LOBPCG needs 5 * k < n (5 * {k} = {5 * k}); use fewer vectors or "
                         "kiln.numpy.linalg.eigh for a small matrix")
    return X


def _check_matrix(A: Any, X: Any) -> None:
    n = X.shape[0]
    if tuple(A.shape) != (n, n):
        raise ValueError(f"lobpcg_standard: A must be a square ({n}, {n}) matrix to match X of shape "
                         f"{tuple(X.shape)}, got shape {tuple(A.shape)}")
    if np.dtype(A.dtype) != np.dtype(X.dtype):
        raise ValueError(f"lobpcg_standard: A and X must have the same dtype, got A {A.dtype} and X {X.dtype}; "
                         f"convert one (e.g. A.astype({X.dtype}))")


def _check_image(AX: Any, X: Any) -> None:
    """The operator's output on the starting block must be a block like it (for a callable A)."""
    if tuple(AX.shape) != tuple(X.shape):
        raise ValueError(f"lobpcg_standard: A(X) must have the shape of X {tuple(X.shape)} (A acts as an (n, n) "
                         f"matrix on an (n, k) block), got {tuple(AX.shape)}")
    if np.dtype(AX.dtype) != np.dtype(X.dtype):
        raise ValueError(f"lobpcg_standard: A(X) must have the dtype of X ({X.dtype}), got {AX.dtype}")


def _lobpcg(apply: Callable, X: Any, m: int, tol: Any) -> tuple[Any, Any, Any]:
    n, k = X.shape
    X = _orthonormalize(X)
    P = _extend_basis(X, k)  # a first search direction orthogonal to X
    AX = apply(X)
    _check_image(AX, X)
    theta = jnp.sum(X * AX, axis=0)  # Rayleigh quotients of the columns
    R = AX - theta[None, :] * X

    def not_done(state):
        i, _, _, _, converged, _ = state
        return (i < m) & (converged < k)

    def step(state):
        i, X, P, R, _, _ = state
        # X, P, R are kept orthonormal blocks (P and R may hold zero columns after truncation, X never).
        R = _project_out(jnp.concatenate([X, P], axis=1), R)
        S = jnp.concatenate([X, P, R], axis=1)
        theta, Q = _rayleigh_ritz(apply, S)
        # New X: the top-k Ritz vectors (S is orthonormal, so S @ B is too, up to rounding: renormalize).
        B = Q[:, :k] / _nonzero(_column_norms(Q[:, :k]))[None, :]
        X = _dot(S, B)
        X = X / _column_norms(X)[None, :]
        # New P: LOBPCG's P spans S[:, k:] @ Q[k:, :k] (the step from the old X). Instead of that product, take
        # the coordinates (0, Q[k:, :k]) made orthogonal to Q[:, :k]: an orthonormal basis of the columns of
        # Q[:k, k:]^T combines the last 2k Ritz vectors into it, and mapping through the orthonormal S keeps
        # it orthonormal.
        q, _ = jnp.linalg.qr(Q[:k, k:].T)
        P = _dot(S, _dot(Q[:, k:], q))
        P = P / _nonzero(_column_norms(P))[None, :]
        AX = apply(X)
        R = AX - theta[None, :k] * X
        # JAX's test: an eigenpair has converged when its residual is below what rounding alone would leave
        # in computing it, tol * 10 * n * (|A x| + theta).
        bound = 10 * n * (_column_norms(AX) + theta[:k])
        converged = jnp.sum(_column_norms(R) < tol * bound)
        return i + 1, X, P, R, converged, theta[:k]

    state = (0, X, P, R, 0, theta)  # Python ints: the count comes out a weakly typed int32, as JAX's
    i, X, _, _, _, theta = while_loop(not_done, step, state)
    return theta, X, i


@eager_jit("m")
def _lobpcg_matrix(A: Any, X: Any, m: int, tol: Any) -> tuple[Any, Any, Any]:
    """LOBPCG for a dense or sparse matrix ``A``: one compiled program per shape when called eagerly (A is an
    argument, not a constant of the program)."""
    if isinstance(A, (BCOO, JAXSparse)):
        return _lobpcg(lambda V: A @ V, X, m, tol)
    return _lobpcg(lambda V: _dot(A, V), X, m, tol)


@eager_jit("A", "m")
def _lobpcg_operator(A: Callable, X: Any, m: int, tol: Any) -> tuple[Any, Any, Any]:
    """LOBPCG for a callable ``A``: one compiled program per (hashable) callable and shape when called eagerly."""
    return _lobpcg(A, X, m, tol)


def lobpcg_standard(A: Any, X: Any, m: int = 100, tol: Any = None) -> tuple[Any, Any, Any]:
    """The ``k`` largest eigenvalues and their eigenvectors of a symmetric operator, by LOBPCG (as
    ``jax.experimental.sparse.linalg.lobpcg_standard``).

    LOBPCG (Locally Optimal Block Preconditioned Conjugate Gradient; Knyazev 2001) refines a block of ``k``
    vectors with a Rayleigh-Ritz eigensolve on ``[X, P, R]`` (current vectors, previous step, residuals) at
    every iteration. As JAX's version: standard problem ``A u = lambda u`` only, largest eigenvalues only (no
    preconditioner, no smallest-k), no locking, the search blocks kept orthonormal, and no derivative rule.

    Parameters
    ----------
    A : array, sparse matrix or callable
        The symmetric ``(n, n)`` operator: a dense matrix, a kiln sparse matrix (``BCOO``, ``BCSR``, ``CSR``...;
        used through ``A @ X``, a kiln addition) or a function mapping an ``(n, j)`` block ``V`` to ``A @ V``.
        Its dtype must be that of ``X``. A callable is a static argument: one compile per callable object.
    X : array, shape (n, k)
        Starting vectors for the ``k`` wanted eigenvectors, numerically independent (they are orthonormalized
        first); float32 or float64. LOBPCG needs ``0 < k`` and ``5 * k < n``.
    m : int
        Maximum number of iterations (static).
    tol : float or scalar array, optional
        Convergence tolerance: an eigenpair ``(theta, v)`` has converged when ``|A v - theta v|`` is below
        ``tol * 10 * n * (|A v| + theta)``; the loop stops when all ``k`` have, or after ``m`` iterations.
        Default: the machine epsilon of ``X.dtype``.

    Returns
    -------
    theta : array, shape (k,)
        The eigenvalue estimates, largest first.
    U : array, shape (n, k)
        The eigenvector estimates (orthonormal columns, each determined up to sign).
    i : int32 scalar array
        The number of iterations run.
    """
    X = _check_block(X)
    m = static_int(m, "m (the maximum number of iterations)", "lobpcg_standard")
    if tol is None:
        tol = float(jnp.finfo(X.dtype).eps)
    if isinstance(A, (BCOO, JAXSparse)):
        _check_matrix(A, X)
        return _lobpcg_matrix(A, X, m, tol)
    if callable(A):
        return _lobpcg_operator(A, X, m, tol)
    A = jnp.asarray(A)
    _check_matrix(A, X)
    return _lobpcg_matrix(A, X, m, tol)


# --- spsolve ---------------------------------------------------------------------------------------------

def _check_csr_system(data: Any, indices: Any, indptr: Any, b: Any) -> None:
    shapes = {"data": data.shape, "indices": indices.shape, "indptr": indptr.shape, "b": b.shape}
    if any(len(s) != 1 for s in shapes.values()):
        listed = ", ".join(f"{name} {tuple(s)}" for name, s in shapes.items())
        raise ValueError(f"spsolve: data, indices, indptr and b must be 1-D arrays, got shapes {listed}")
    if not (dtypes.is_int(indices.dtype) and dtypes.is_int(indptr.dtype)):
        # (a ValueError, as JAX's check of the index dtypes)
        raise ValueError(f"spsolve: indices and indptr must be integers, got {indices.dtype} and {indptr.dtype}")
    if data.shape != indices.shape:
        raise ValueError(f"spsolve: data and indices must have one length (the number of stored entries), got "
                         f"{data.shape[0]} and {indices.shape[0]}")
    n = b.shape[0]
    if indptr.shape[0] != n + 1:
        raise ValueError(f"spsolve: the matrix must be square, n x n with n = b.size = {n}, so indptr must have "
                         f"n + 1 = {n + 1} entries; got {indptr.shape[0]} (a {indptr.shape[0] - 1}-row matrix)")
    if np.dtype(data.dtype) != np.dtype(b.dtype):
        raise ValueError(f"spsolve: data and b must have the same dtype, got {data.dtype} and {b.dtype}; convert "
                         "one of them with .astype")
    if not dtypes.is_inexact(data.dtype):
        raise TypeError(f"spsolve: data and b must be floating point or complex, got {data.dtype}; convert them "
                        "with .astype(jnp.float32)")


def _static_float(value: Any, what: str) -> float:
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(f"spsolve: {what} must be a static Python float, but it is a traced value "
                                      "(under jit, vmap or grad); pass a concrete number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"spsolve: {what} must be a float, got {type(value).__name__} {value!r}") from None


def spsolve(data: Any, indices: Any, indptr: Any, b: Any, tol: float = 1e-6, reorder: int = 1) -> Any:
    """Solve ``A x = b`` for the square CSR matrix ``A = (data, indices, indptr)`` (as
    ``jax.experimental.sparse.linalg.spsolve``).

    kiln builds ``A`` densely, ``(n, n)`` with ``n = b.size``, by a scatter-add of the stored entries
    (duplicates summed; entries past ``indptr[-1]`` ignored, as SciPy does), then solves with
    ``kiln.numpy.linalg.solve`` (LU with partial pivoting). The memory is ``n * n``, not proportional to the
    number of stored entries: it suits matrices that fit densely. Runs eagerly and under ``jit`` and ``vmap``;
    differentiable w.r.t. ``data`` and ``b`` (``indices``/``indptr`` are integers).

    Parameters
    ----------
    data, indices, indptr : 1-D arrays
        The CSR buffers (SciPy's ``csr_matrix`` layout): row ``r`` holds the entries ``indptr[r]:indptr[r+1]``,
        at columns ``indices``. ``data`` has ``b``'s dtype (floating point or complex).
    b : 1-D array, shape (n,)
        The right-hand side.
    tol : float
        cuSolver's singularity threshold in JAX's GPU kernel. Accepted and checked to be a number; the dense
        LU does not use it (JAX's CPU path ignores it too). A singular matrix gives inf/NaN, no error.
    reorder : int
        cuSolver's fill-reducing ordering (0: none, 1: symrcm, 2: symamd, 3: csrmetisnd). Accepted and checked;
        a dense LU has no fill-in to reduce, so it changes nothing.

    Returns
    -------
    x : array, shape (n,), the dtype of ``b``
    """
    data, indices, indptr, b = (jnp.asarray(a) for a in (data, indices, indptr, b))
    _check_csr_system(data, indices, indptr, b)
    _static_float(tol, "tol")
    if isinstance(reorder, Tracer) or reorder not in (0, 1, 2, 3):
        raise ValueError(f"spsolve: reorder must be 0, 1, 2 or 3 (none, symrcm, symamd, csrmetisnd), got "
                         f"{reorder!r}")
    n = b.shape[0]
    rows = _csr_rows(indices, indptr)  # padding past indptr[-1] gets row n: dropped by the scatter
    dense = jnp.zeros((n, n), data.dtype).at[rows, indices].add(data, mode="drop")
    return jnp.linalg.solve(dense, b)
