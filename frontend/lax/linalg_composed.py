"""``kiln.lax.linalg`` functions built from other kiln operations (no primitive of their own):

- ``tridiagonal_solve``: the Thomas algorithm (forward elimination, back substitution), unrolled over
  the rows (no pivoting: meant for diagonally dominant or otherwise well-conditioned systems).
- ``lu_pivots_to_permutation``: the row swaps of LU's pivots applied to ``0..n-1``.
- ``householder_product`` / ``ormqr``: the unitary ``Q`` of Householder reflectors stored as LAPACK
  stores them (``geqrf``, ``gehrd``, ``sytrd``), formed or applied reflector by reflector.
- ``hessenberg`` / ``tridiagonal``: Householder reductions with LAPACK's conventions (``dlarfg``'s
  reflectors), in LAPACK's packed output format (``gehrd``, ``sytrd``/``hetrd``).
- ``symmetric_product``: ``alpha A A^T + beta C``.
- ``cholesky_update``: the factor of the updated matrix (by a fresh Cholesky factorisation).
- ``qdwh``: the polar decomposition, from an SVD.

The reductions and products run one reflector after another, unrolled: they are meant for small and
medium matrices (the program grows with the matrix size).
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.errors import MatrixShapeError
from ..core.tracing import abstractify, materialize
from . import api
from .special import complex as _complex
from .special import conj, imag, real

__all__ = ["EighImplementation", "SvdAlgorithm", "cholesky_update", "hessenberg", "householder_product",
           "lu_pivots_to_permutation", "ormqr", "qdwh", "symmetric_product", "tridiagonal", "tridiagonal_solve"]


class EighImplementation(enum.Enum):
    """The algorithm of ``eigh`` (as ``jax.lax.linalg.EighImplementation``): accepted and ignored
    (kiln uses LAPACK's ``syevd`` on CPU when enabled, its Jacobi method elsewhere)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """The algorithm of ``svd`` (as ``jax.lax.linalg.SvdAlgorithm``): accepted and ignored (kiln uses
    LAPACK's ``gesdd`` on CPU when enabled, its one-sided Jacobi method elsewhere)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _aval(x):
    return abstractify(x)


def _check(fname: str, x, *, square: bool = False, what: str = "its operand", min_ndim: int = 2):
    a = _aval(x)
    if not dtypes.is_inexact(a.dtype) or a.dtype.itemsize < 4:
        raise TypeError(f"kiln.lax.linalg.{fname}: {what} must be float32, float64, complex64 or complex128, got "
                        f"{a.dtype.name}")
    if a.ndim < min_ndim:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must have at least {min_ndim} dimensions, got "
                               f"shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must be square in its last two dimensions, got "
                               f"shape {a.shape}")
    return a


def _mT(x):
    nd = _aval(x).ndim
    return api.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    xt = _mT(x)
    return conj(xt) if _aval(x).dtype.kind == "c" else xt


def _mm(a, b):
    nb = _aval(a).ndim - 2
    batch = tuple(range(nb))
    return api.dot_general(a, b, (((nb + 1,), (nb,)), (batch, batch)))


def _conj(x):
    return conj(x) if _aval(x).dtype.kind == "c" else x


def _col(a, j: int):
    """Column ``j`` of a stack of matrices, as ``(..., m, 1)``."""
    s = _aval(a).shape
    return api.slice(a, (0,) * (len(s) - 1) + (j,), s[:-1] + (j + 1,))


def _entry(v, i: int):
    """``v[..., i]`` as ``(...,)``."""
    s = _aval(v).shape
    return api.reshape(api.slice(v, (0,) * (len(s) - 1) + (i,), s[:-1] + (i + 1,)), s[:-1])


def _scale_rows(v, s):
    """``v * s`` with ``s`` of shape ``(...,)`` broadcast over the trailing dimensions of ``v``."""
    vs = _aval(v).shape
    nb = len(_aval(s).shape)
    return api.mul(v, api.broadcast_in_dim(s, vs, tuple(range(nb))))


# -- Householder reflectors ------------------------------------------------------------------------

def _reflector_vector(a, j: int, first: int):
    """The reflector stored in column ``j`` of ``a`` below row ``first``: ``v[first] = 1``, ``v[r] =
    a[r, j]`` below, zero above; as ``(..., m, 1)``."""
    shape = _aval(a).shape
    col = _col(a, j)
    rows = api.broadcasted_iota(np.int32, shape[:-1] + (1,), len(shape) - 2)
    one = api.full_like(col, 1)
    zero = api.full_like(col, 0)
    return api.select(api.gt(rows, api.full_like(rows, first)), col,
                      api.select(api.eq(rows, api.full_like(rows, first)), one, zero))


def _apply_left(c, v, tau):
    """``(I - tau v v^H) c``; ``v`` is ``(..., m, 1)``, ``tau`` ``(...,)``."""
    w = _mm(_H(v), c)  # (..., 1, n)
    return api.sub(c, _mm(v, _scale_rows(w, tau)))


def _apply_right(c, v, tau):
    """``c (I - tau v v^H)``."""
    w = _mm(c, v)  # (..., m, 1)
    return api.sub(c, _mm(_scale_rows(w, tau), _H(v)))


def householder_product(a: Any, taus: Any):
    """The first ``n`` columns of ``Q = H_0 H_1 ... H_{k-1}``, ``H_i = I - taus[i] v_i v_i^H``, with the
    reflectors ``v_i`` stored below the diagonal of ``a`` (``(..., m, n)``, ``m >= n``) as LAPACK's
    ``geqrf`` leaves them (``v_i[i] = 1`` implied); ``taus`` is ``(..., k)``, ``k <= n`` (LAPACK's ``orgqr``)."""
    fname = "householder_product"
    av = _check(fname, a, what="a")
    tv = _aval(taus)
    *batch, m, n = av.shape
    k = tv.shape[-1] if tv.ndim else -1
    if tv.ndim != av.ndim - 1 or tuple(tv.shape[:-1]) != tuple(batch) or not k <= n <= m or tv.dtype != av.dtype:
        raise ValueError(f"kiln.lax.linalg.{fname}: a must be (..., m, n) with m >= n and taus (..., k) with k <= n, "
                         f"of one dtype and batch shape, got {av.str_short()} and {tv.str_short()}")
    eye = api.convert_element_type(api.eq(api.broadcasted_iota(np.int32, tuple(batch) + (m, n), len(batch)),
                                          api.broadcasted_iota(np.int32, tuple(batch) + (m, n), len(batch) + 1)),
                                   av.dtype)
    q = eye
    for i in reversed(range(k)):
        q = _apply_left(q, _reflector_vector(a, i, i), _entry(taus, i))
    return q


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False):
    """``Q c``, ``Q^H c`` (``transpose``), ``c Q`` or ``c Q^H`` (``left=False``) with ``Q`` the product of
    the reflectors in ``a`` and ``taus`` (as :func:`householder_product`; LAPACK's ``ormqr``/``unmqr``)."""
    fname = "ormqr"
    av = _check(fname, a, what="a")
    cv = _check(fname, c, what="c")
    k = _aval(taus).shape[-1]
    m = av.shape[-2]
    if (cv.shape[-2] if left else cv.shape[-1]) != m or k > min(av.shape[-2:]):
        raise ValueError(f"kiln.lax.linalg.{fname}: c must have {m} {'rows' if left else 'columns'} to match a of "
                         f"shape {av.shape} (and taus at most min(m, n) long), got c of shape {cv.shape} and "
                         f"{k} taus")
    order = range(k) if left == transpose else reversed(range(k))
    out = c
    for i in order:
        v, tau = _reflector_vector(a, i, i), _entry(taus, i)
        if transpose:
            tau = _conj(tau)
        out = _apply_left(out, v, tau) if left else _apply_right(out, v, tau)
    return out


def _householder(x0, rest_sq):
    """LAPACK's ``xlarfg`` for ``alpha = x0`` and ``||x[1:]||^2 = rest_sq``: ``(beta, tau, scale)`` with
    ``v = [1, x[1:] * scale]``; no reflection (``tau = 0``) when ``x[1:]`` is zero and ``alpha`` real."""
    ar = real(x0) if _aval(x0).dtype.kind == "c" else x0
    ai = imag(x0) if _aval(x0).dtype.kind == "c" else api.full_like(ar, 0)
    norm = api.sqrt(api.add(api.add(api.mul(ar, ar), api.mul(ai, ai)), rest_sq))
    sign = api.select(api.ge(ar, api.full_like(ar, 0)), api.full_like(ar, 1), api.full_like(ar, -1))
    beta = api.neg(api.mul(sign, norm))
    trivial = api.bitwise_and(api.eq(rest_sq, api.full_like(rest_sq, 0)), api.eq(ai, api.full_like(ai, 0)))
    safe_beta = api.select(trivial, api.full_like(beta, 1), beta)
    dt = _aval(x0).dtype
    if dt.kind == "c":
        tau = _complex(api.div(api.sub(safe_beta, ar), safe_beta), api.neg(api.div(ai, safe_beta)))
        denom = api.sub(x0, api.convert_element_type(safe_beta, dt))
    else:
        tau = api.div(api.sub(safe_beta, ar), safe_beta)
        denom = api.sub(x0, safe_beta)
    ones = api.full_like(denom, 1)
    safe_denom = api.select(trivial, ones, denom)
    scale = api.div(ones, safe_denom)
    zero_t = api.full_like(tau, 0)
    return (api.select(trivial, ar, beta), api.select(trivial, zero_t, tau), api.select(trivial, ones, scale))


def _sum_sq_below(col, first: int):
    """``sum |col[r]|^2`` over rows ``r > first`` of a ``(..., m, 1)`` column (real)."""
    shape = _aval(col).shape
    rows = api.broadcasted_iota(np.int32, shape, len(shape) - 2)
    absq = api.mul(col, _conj(col))
    absq = real(absq) if _aval(col).dtype.kind == "c" else absq
    masked = api.select(api.gt(rows, api.full_like(rows, first)), absq, api.full_like(absq, 0))
    return api.reduce_sum(masked, (len(shape) - 2, len(shape) - 1))


def _set_col_below(a, j: int, first: int, values_col):
    """``a`` with rows ``>= first`` of column ``j`` replaced by those of ``values_col`` (``(..., m, 1)``)."""
    shape = _aval(a).shape
    rows = api.broadcasted_iota(np.int32, shape, len(shape) - 2)
    cols = api.broadcasted_iota(np.int32, shape, len(shape) - 1)
    where = api.bitwise_and(api.eq(cols, api.full_like(cols, j)), api.ge(rows, api.full_like(rows, first)))
    spread = api.broadcast_in_dim(api.reshape(values_col, shape[:-1]), shape, tuple(range(len(shape) - 1)))
    return api.select(where, spread, a)


def _reduce_hessenberg(a):
    """Householder reduction to upper Hessenberg form in LAPACK ``gehrd``'s packed format:
    ``(packed, taus, betas)``."""
    av = _aval(a)
    n = av.shape[-1]
    batch = av.shape[:-2]
    taus, betas = [], []
    for i in range(n - 1):
        col = _col(a, i)
        x0 = api.reshape(api.slice(col, (0,) * (len(batch)) + (i + 1, 0), batch + (i + 2, 1)), batch)
        beta, tau, scale = _householder(x0, _sum_sq_below(col, i + 1))
        rows = api.broadcasted_iota(np.int32, batch + (n, 1), len(batch))
        v = api.select(api.gt(rows, api.full_like(rows, i + 1)), _scale_rows(col, scale),
                       api.select(api.eq(rows, api.full_like(rows, i + 1)), api.full_like(col, 1),
                                  api.full_like(col, 0)))
        # A <- H^H A H with H = I - tau v v^H; the columns before i hold earlier reflectors: the left
        # product leaves them alone (LAPACK applies it to the trailing columns only).
        cols = api.broadcasted_iota(np.int32, av.shape, len(batch) + 1)
        a = api.select(api.gt(cols, api.full_like(cols, i)), _apply_left(a, v, _conj(tau)), a)
        a = _apply_right(a, v, tau)
        # column i: beta on the subdiagonal, the reflector below it
        packed_col = api.select(api.eq(rows, api.full_like(rows, i + 1)),
                                api.convert_element_type(api.broadcast_in_dim(beta, batch + (n, 1), tuple(range(len(
                                    batch)))), av.dtype), v)
        a = _set_col_below(a, i, i + 1, packed_col)
        taus.append(tau)
        betas.append(beta)
    return a, taus, betas


def _stack_last(xs, like_shape, dtype):
    if not xs:
        return api.broadcast_in_dim(api.literal(0, dtype), like_shape + (0,), ())
    return api.concatenate([api.reshape(x, like_shape + (1,)) for x in xs], len(like_shape))


def hessenberg(a: Any):
    """Reduce square ``a`` to upper Hessenberg form ``H = Q^H a Q`` (LAPACK's ``gehrd``): returns
    ``(packed, taus)``, with ``H`` in the upper Hessenberg part of ``packed``, the reflectors of ``Q``
    below its subdiagonal and ``taus`` (``n - 1`` of them): ``Q`` is
    ``householder_product(packed[..., 1:, :-1], taus)`` bordered by a leading identity row and column."""
    av = _check("hessenberg", a, square=True)
    packed, taus, _ = _reduce_hessenberg(a)
    return packed, _stack_last(taus, av.shape[:-2], av.dtype)


def tridiagonal(a: Any, *, lower: bool = True):
    """Reduce Hermitian ``a`` (reading its ``lower`` or upper triangle) to real symmetric tridiagonal form
    ``T = Q^H a Q`` (LAPACK's ``sytrd``/``hetrd``): returns ``(packed, d, e, taus)`` with ``d`` the
    diagonal and ``e`` the off-diagonal of ``T``, and the reflectors of ``Q`` in ``packed`` in LAPACK's
    layout (the triangle not read is returned unchanged)."""
    av = _check("tridiagonal", a, square=True)
    nd = av.ndim
    if not lower:  # the upper case is the lower one of the matrix with rows and columns reversed
        packed, d, e, taus = tridiagonal(api.rev(a, (nd - 2, nd - 1)), lower=True)
        return (api.rev(packed, (nd - 2, nd - 1)), api.rev(d, (nd - 2,)), api.rev(e, (nd - 2,)),
                api.rev(taus, (nd - 2,)))
    shape = av.shape
    rows = api.broadcasted_iota(np.int32, shape, nd - 2)
    cols = api.broadcasted_iota(np.int32, shape, nd - 1)
    low = api.select(api.ge(rows, cols), a, api.full_like(a, 0))
    strict = api.select(api.gt(rows, cols), a, api.full_like(a, 0))
    herm = api.add(low, _H(strict))
    if av.dtype.kind == "c":  # the diagonal of a Hermitian matrix is real
        diag_mask = api.eq(rows, cols)
        herm = api.select(diag_mask, api.convert_element_type(real(herm), av.dtype), herm)
    packed, taus, betas = _reduce_hessenberg(herm)
    real_dt = np.dtype(np.float64 if av.dtype in (np.float64, np.complex128) else np.float32)
    batch = shape[:-2]
    eye = api.eq(rows, cols)
    dmat = real(packed) if av.dtype.kind == "c" else packed
    d = api.reduce_sum(api.select(eye, dmat, api.full_like(dmat, 0)), (nd - 1,))
    e = _stack_last([api.convert_element_type(b, real_dt) for b in betas], batch, real_dt)
    # LAPACK leaves the strict upper triangle as it was; the diagonal holds d (real).
    out = api.select(api.lt(rows, cols), a, packed)
    return out, d, e, _stack_last(taus, batch, av.dtype)


# -- solves and products ---------------------------------------------------------------------------

def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False):
    """Solve the tridiagonal system with sub-, main and super-diagonals ``dl``, ``d``, ``du``
    (``(..., m)``; ``dl[..., 0]`` and ``du[..., m-1]`` are ignored) for ``b`` (``(..., m, n)``).

    The Thomas algorithm, without pivoting. With ``perturb_singular``, a zero pivot is replaced by a
    tiny one (the result is then large instead of inf/NaN), as JAX.
    """
    fname = "tridiagonal_solve"
    avs = [_aval(x) for x in (dl, d, du)]
    bv = _aval(b)
    if any(a.shape != avs[1].shape or a.dtype != bv.dtype for a in avs) or bv.ndim < 2 or \
            avs[1].shape != bv.shape[:-1]:
        raise ValueError(f"kiln.lax.linalg.{fname}: dl, d and du must be (..., m) and b (..., m, n), all of one "
                         f"dtype, got {', '.join(a.str_short() for a in avs)} and {bv.str_short()}")
    if not dtypes.is_inexact(bv.dtype):
        raise TypeError(f"kiln.lax.linalg.{fname}: the operands must be floating or complex, got {bv.dtype.name}")
    m = bv.shape[-2]
    nb = bv.ndim - 2

    def row(x, i):  # b's row i: (..., n)
        s = _aval(x).shape
        return api.reshape(api.slice(x, (0,) * nb + (i, 0), s[:-2] + (i + 1, s[-1])), s[:-2] + (s[-1],))

    def scal(v, i):  # a diagonal's entry i: (...,)
        return _entry(v, i)

    def safe(p):
        if not perturb_singular:
            return p
        tiny = float(np.finfo(np.dtype(np.float64 if bv.dtype in (np.float64, np.complex128) else np.float32)).eps)
        return api.select(api.eq(p, api.full_like(p, 0)), api.full_like(p, tiny), p)

    def bscale(r, s):  # row (..., n) times scalar per batch (...,)
        return api.mul(r, api.broadcast_in_dim(s, _aval(r).shape, tuple(range(nb))))

    cp, dp = [], []
    for i in range(m):
        if i == 0:
            denom = safe(scal(d, 0))
            rhs = row(b, 0)
        else:
            denom = safe(api.sub(scal(d, i), api.mul(scal(dl, i), cp[-1])))
            rhs = api.sub(row(b, i), bscale(dp[-1], scal(dl, i)))
        inv = api.div(api.full_like(denom, 1), denom)
        cp.append(api.mul(scal(du, i), inv) if i < m - 1 else None)
        dp.append(bscale(rhs, inv))
    xs = [None] * m
    for i in reversed(range(m)):
        xs[i] = dp[i] if i == m - 1 else api.sub(dp[i], bscale(xs[i + 1], cp[i]))
    if m == 0:
        return b
    return api.concatenate([api.reshape(x, bv.shape[:-2] + (1, bv.shape[-1])) for x in xs], nb)


def lu_pivots_to_permutation(pivots: Any, permutation_size: int):
    """The permutation that LU's ``pivots`` (row ``i`` swapped with row ``pivots[i]``, in order) make of
    ``0 .. permutation_size - 1``; ``pivots`` is ``(..., k)`` int32."""
    pv = _aval(pivots)
    n = int(permutation_size)
    if pv.ndim < 1 or pv.dtype.kind not in "iu" or pv.shape[-1] > n:
        raise ValueError(f"kiln.lax.linalg.lu_pivots_to_permutation: pivots must be an integer array (..., k) with "
                         f"k <= permutation_size ({n}), got {pv.str_short()}")
    batch = pv.shape[:-1]
    nb = len(batch)
    idx = api.broadcasted_iota(np.int32, batch + (n,), nb)
    perm = idx
    piv = api.convert_element_type(pivots, np.int32)
    for i in range(pv.shape[-1]):
        j = api.broadcast_in_dim(_entry(piv, i), batch + (n,), tuple(range(nb)))
        at_j = api.eq(idx, j)
        at_i = api.eq(idx, api.full_like(idx, i))
        p_i = api.broadcast_in_dim(_entry(perm, i), batch + (n,), tuple(range(nb)))
        p_j = api.reduce_sum(api.select(at_j, perm, api.full_like(perm, 0)), (nb,))
        p_j = api.broadcast_in_dim(p_j, batch + (n,), tuple(range(nb)))
        perm = api.select(at_i, p_j, api.select(at_j, p_i, perm))
    return perm


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """``alpha * a @ a^T + beta * c`` (LAPACK's ``syrk``); with ``symmetrize_output`` the result's upper
    triangle is made the transpose of its lower one."""
    av = _check("symmetric_product", a_matrix, what="a_matrix")
    cv = _check("symmetric_product", c_matrix, square=True, what="c_matrix")
    if cv.shape[-1] != av.shape[-2] or cv.dtype != av.dtype:
        raise ValueError(f"kiln.lax.linalg.symmetric_product: c_matrix must be ({av.shape[-2]}, {av.shape[-2]}) of "
                         f"a_matrix's dtype, got {cv.str_short()}")
    out = api.add(api.mul(_mm(a_matrix, _mT(a_matrix)), api.full_like(c_matrix, alpha)),
                  api.mul(c_matrix, api.full_like(c_matrix, beta)))
    if symmetrize_output:
        nd = cv.ndim
        rows = api.broadcasted_iota(np.int32, cv.shape, nd - 2)
        cols = api.broadcasted_iota(np.int32, cv.shape, nd - 1)
        out = api.select(api.ge(rows, cols), out, _mT(out))
    return out


def cholesky_update(r_matrix: Any, w_vector: Any):
    """The upper Cholesky factor of ``R^H R + w w^H`` given the upper factor ``R`` of a matrix (a
    rank-one update), computed by factorising the updated matrix afresh."""
    from .linalg import cholesky_p
    rv = _check("cholesky_update", r_matrix, square=True, what="r_matrix")
    wv = _aval(w_vector)
    if wv.shape != rv.shape[:-1] or wv.dtype != rv.dtype:
        raise ValueError(f"kiln.lax.linalg.cholesky_update: w_vector must be {rv.shape[:-1]} of r_matrix's dtype, "
                         f"got {wv.str_short()}")
    w = api.reshape(w_vector, rv.shape[:-1] + (1,))
    updated = api.add(_mm(_H(r_matrix), r_matrix), _mm(w, _H(w)))
    return _H(cholesky_p.bind(updated))


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None, eps: float | None = None,
         dynamic_shape: Any = None):
    """The polar decomposition ``x = u h`` (``u`` with orthonormal columns, ``h`` Hermitian positive
    semi-definite) of an ``m x n`` matrix, ``m >= n``: returns ``(u, h, num_iters, is_converged)``.

    kiln computes it from an SVD (``u = U V^H``, ``h = V diag(s) V^H``) rather than by JAX's QDWH
    iteration, so ``num_iters`` is 0 and ``is_converged`` True.
    """
    from .linalg import svd
    xv = _check("qdwh", x)
    if xv.shape[-2] < xv.shape[-1]:
        raise MatrixShapeError(f"kiln.lax.linalg.qdwh: x must have at least as many rows as columns, got shape "
                               f"{xv.shape}")
    if dynamic_shape is not None:
        raise NotImplementedError("kiln.lax.linalg.qdwh: dynamic_shape is not supported")
    u, s, vh = svd(x, full_matrices=False)
    v = _H(vh)
    unitary = _mm(u, vh)
    sv = api.convert_element_type(s, xv.dtype)
    h = _mm(api.mul(v, api.broadcast_in_dim(sv, _aval(v).shape, tuple(range(xv.ndim - 2)) + (xv.ndim - 1,))), vh)
    return (unitary, h, materialize(api.literal(0, np.dtype(np.int32))),
            materialize(api.literal(True, np.dtype(np.bool_))))
