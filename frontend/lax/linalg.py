"""Linear-algebra primitives: ``kiln.lax.linalg`` (as ``jax.lax.linalg``).

Primitives (each takes a stack of matrices: any leading batch dimensions, the matrix in the last two)
----------------------------------------------------------------------------------------------------
- ``cholesky``: lower Cholesky factor of a Hermitian positive-definite matrix (reads the lower triangle).
- ``lu``: LU with partial pivoting, ``a[perm] = L @ U``; results ``(lu, pivots, permutation)``.
- ``qr``: Householder QR, ``(q, r)``, complete or reduced.
- ``eigh``: eigenvalues (ascending) and eigenvectors of a Hermitian matrix (reads one triangle).
- ``svd``: singular values (descending) and optionally the singular vectors.
- ``triangular_solve``: solves ``op(a) @ x = b`` or ``x @ op(a) = b`` for triangular ``a``.

How they run (chosen when the program is lowered for a device; see ``kiln.lowering.rules.linalg``):

- **CPU**: jaxlib's LAPACK kernels (``getrf``, ``potrf``, ``geqrf``+``orgqr``, ``syevd``/``heevd``,
  ``gesdd``, ``trsm``) as typed-FFI custom calls, which ``kiln.runtime`` registers with XLA on first use.
  jaxlib binds those kernels to SciPy's LAPACK, so this path needs SciPy installed.
- **Everywhere else** (GPU, TPU; or CPU without SciPy): kiln's portable implementations, written in
  plain StableHLO with ``stablehlo.while`` loops over the matrix size (no size limit, no unrolling):
  right-looking LU with partial pivoting, Cholesky, row-by-row substitution, Householder QR, parallel
  (round-robin) two-sided Jacobi for ``eigh``, one-sided Jacobi for ``svd``. They are meant for small
  and medium matrices (the Jacobi methods cost O(n^3) per sweep and take ~10 sweeps) and support real
  dtypes only.

Failures follow JAX, not NumPy: nothing raises at run time. A singular matrix gives an LU factor with a
zero on the diagonal (so ``det`` is 0 and ``inv``/``solve`` give inf/NaN); ``cholesky`` of a matrix
that is not positive definite, and ``eigh``/``svd`` when LAPACK reports no convergence, give NaN.
"""
from __future__ import annotations

from .. import dtypes
from ..core import ShapedArray
from ..errors import MatrixShapeError
from ..primitive import Primitive
from ..tracing import abstractify
from . import api

__all__ = ["cholesky", "lu", "qr", "eigh", "svd", "triangular_solve"]

_SUPPORTED = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)
_REAL = {dtypes.float32: dtypes.float32, dtypes.float64: dtypes.float64,
         dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}


def _check_matrix(fname: str, x: ShapedArray, *, square: bool = False, what: str = "") -> None:
    what = what or "its operand"
    if x.dtype not in _SUPPORTED:
        raise TypeError(f"kiln.lax.linalg.{fname}: {what} must be float32, float64, complex64 or complex128, "
                        f"got {x.dtype.name} (convert it first; lax does no implicit promotion)")
    if x.ndim < 2:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must have at least 2 dimensions (a stack of "
                               f"matrices), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must be square in its last two dimensions, got "
                               f"shape {x.shape}")


def _matrix(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, False)


# -- cholesky ------------------------------------------------------------------------------------

def _cholesky_rule(x: ShapedArray) -> ShapedArray:
    _check_matrix("cholesky", x, square=True)
    return _matrix(x)


cholesky_p = Primitive("cholesky", _cholesky_rule)


def _symmetrize(x):
    """``(x + x^H) / 2`` over the last two dimensions."""
    aval = abstractify(x)
    perm = tuple(range(aval.ndim - 2)) + (aval.ndim - 1, aval.ndim - 2)
    xt = api.transpose(x, perm)
    if aval.dtype.kind == "c":
        from .special import conj
        xt = conj(xt)
    return api.mul(api.add(x, xt), 0.5)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower-triangular Cholesky factor ``L`` with ``x = L @ L^H``.

    With ``symmetrize_input`` (the default, as JAX) the factor of ``(x + x^H) / 2`` is computed;
    otherwise only the lower triangle of ``x`` is read. A matrix that is not positive definite gives
    NaNs (no exception).
    """
    aval = abstractify(x)
    _check_matrix("cholesky", aval, square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


# -- lu ------------------------------------------------------------------------------------------

def _lu_rule(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lu", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    return [_matrix(x), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


lu_p = Primitive("lu", _lu_rule, multiple_results=True)


def lu(x):
    """LU decomposition with partial pivoting of a stack of ``m x n`` matrices.

    Returns ``(lu, pivots, permutation)``: ``lu`` holds ``L`` (unit lower triangle, diagonal implied)
    and ``U`` (upper triangle); ``pivots[i]`` is the row swapped with row ``i`` at step ``i``
    (0-based, int32); ``permutation`` is the resulting row order, so that ``x[..., permutation, :] ==
    L @ U``.
    """
    return tuple(lu_p.bind(x))


# -- qr ------------------------------------------------------------------------------------------

def _qr_rule(x: ShapedArray, *, full_matrices: bool) -> list[ShapedArray]:
    _check_matrix("qr", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = m if full_matrices else min(m, n)
    return [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]


qr_p = Primitive("qr", _qr_rule, multiple_results=True)


def qr(x, *, full_matrices: bool = True, pivoting: bool = False):
    """QR decomposition ``x = q @ r`` of a stack of ``m x n`` matrices (Householder reflections).

    ``full_matrices=True``: ``q`` is ``m x m`` and ``r`` is ``m x n``; otherwise ``q`` is ``m x k`` and
    ``r`` is ``k x n`` with ``k = min(m, n)``. Signs follow LAPACK on CPU (the diagonal of ``r`` may be
    negative).
    """
    if pivoting:
        raise NotImplementedError("kiln.lax.linalg.qr: pivoting=True (column-pivoted QR) is not supported")
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# -- eigh ----------------------------------------------------------------------------------------

def _eigh_rule(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("eigh", x, square=True)
    return [_matrix(x), ShapedArray(x.shape[:-1], _REAL[x.dtype])]


eigh_p = Primitive("eigh", _eigh_rule, multiple_results=True)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True):
    """Eigendecomposition of a Hermitian matrix: returns ``(v, w)`` with ``x @ v == v * w``.

    ``w`` (real, ascending) are the eigenvalues and the columns of ``v`` the eigenvectors. Only the
    ``lower`` (or upper) triangle is read, after symmetrizing with ``(x + x^H) / 2`` when
    ``symmetrize_input`` (the default, as JAX).
    """
    if not sort_eigenvalues:
        raise NotImplementedError("kiln.lax.linalg.eigh: sort_eigenvalues=False is not supported (the "
                                  "eigenvalues always come in ascending order)")
    _check_matrix("eigh", abstractify(x), square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    return tuple(eigh_p.bind(x, lower=bool(lower)))


# -- svd -----------------------------------------------------------------------------------------

def _svd_rule(x: ShapedArray, *, full_matrices: bool, compute_uv: bool) -> list[ShapedArray]:
    _check_matrix("svd", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    s = ShapedArray(batch + (k,), _REAL[x.dtype])
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, ku), x.dtype), ShapedArray(batch + (kv, n), x.dtype)]


svd_p = Primitive("svd", _svd_rule, multiple_results=True)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition ``x = u @ diag(s) @ vh`` of a stack of ``m x n`` matrices.

    Returns ``(u, s, vh)`` (``s`` real and descending), or only ``s`` when ``compute_uv=False``.
    ``full_matrices=False`` gives the reduced ``u`` (``m x k``) and ``vh`` (``k x n``), ``k = min(m, n)``.
    """
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


# -- triangular_solve ----------------------------------------------------------------------------

def _triangular_solve_rule(a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool, transpose_a: bool,
                           conjugate_a: bool, unit_diagonal: bool) -> ShapedArray:
    _check_matrix("triangular_solve", a, square=True, what="a")
    _check_matrix("triangular_solve", b, what="b")
    if a.dtype != b.dtype:
        raise TypeError(f"kiln.lax.linalg.triangular_solve: a and b must have one dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"kiln.lax.linalg.triangular_solve: a and b must have the same batch dimensions, got "
                         f"shapes {a.shape} and {b.shape}")
    n = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != n:
        side = "rows" if left_side else "columns"
        raise ValueError(f"kiln.lax.linalg.triangular_solve: b must have {n} {side} to match a of shape "
                         f"{a.shape} (left_side={left_side}), got shape {b.shape}")
    return _matrix(b)


triangular_solve_p = Primitive("triangular_solve", _triangular_solve_rule)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """Solve a triangular system: ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` (JAX's default).

    ``op(a)`` is ``a``, its transpose (``transpose_a``), its conjugate (``conjugate_a``) or both; only the
    ``lower`` (or upper) triangle of ``a`` is read, and its diagonal is taken as ones when
    ``unit_diagonal``. ``a`` is ``(..., n, n)``, ``b`` is ``(..., n, k)`` (left side) or ``(..., k, n)``.
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# -- transformation rules --------------------------------------------------------------------------

def _batch_rule(prim: Primitive):
    """vmap: every operand takes the batch axis in front (the primitives accept leading batch dimensions)."""
    def rule(ctx, args, dims, **params):
        from ..batching.core import move_dim
        args = [move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    return rule


# Matrix helpers for the derivative rules (stacks: leading batch dimensions).

def _shape(x) -> tuple[int, ...]:
    return abstractify(x).shape


def _dtype(x):
    return abstractify(x).dtype


def _mT(x):
    nd = len(_shape(x))
    return api.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    """Conjugate transpose (plain transpose for real dtypes)."""
    xt = _mT(x)
    if _dtype(xt).kind == "c":
        from .special import conj
        xt = conj(xt)
    return xt


def _mm(a, b):
    nb = len(_shape(a)) - 2
    batch = tuple(range(nb))
    return api.dot_general(a, b, (((nb + 1,), (nb,)), (batch, batch)))


def _zeros(x):
    return api.broadcast_in_dim(api.literal(0, _dtype(x)), _shape(x), ())


def _tri_mask(shape, k: int, lower: bool):
    nd = len(shape)
    rows = api.broadcasted_iota(dtypes.int32, shape, nd - 2)
    cols = api.add(api.broadcasted_iota(dtypes.int32, shape, nd - 1), -k)
    return api.ge(rows, cols) if lower else api.le(rows, cols)


def _tril(x, k: int = 0):
    return api.select(_tri_mask(_shape(x), k, True), x, _zeros(x))


def _triu(x, k: int = 0):
    return api.select(_tri_mask(_shape(x), k, False), x, _zeros(x))


def _eye_mask(shape):
    nd = len(shape)
    return api.eq(api.broadcasted_iota(dtypes.int32, shape, nd - 2), api.broadcasted_iota(dtypes.int32, shape, nd - 1))


def _diag_part(x):
    """The diagonal of a stack of square matrices as a matrix (zero elsewhere)."""
    return api.select(_eye_mask(_shape(x)), x, _zeros(x))


def _hermitian_from(x, lower: bool):
    """The Hermitian matrix a primitive that reads one triangle of ``x`` sees."""
    if lower:
        return api.add(_tril(x), _H(_tril(x, -1)))
    return api.add(_triu(x), _H(_triu(x, 1)))


def _real_part(x):
    if _dtype(x).kind == "c":
        from .special import real
        return real(x)
    return x


def _as(x, dtype):
    return api.convert_element_type(x, dtype) if _dtype(x) != dtype else x


def _row_vector(v, rows: int):
    """``(..., n) -> (..., rows, n)``, constant along rows."""
    shape = _shape(v)
    nb = len(shape) - 1
    return api.broadcast_in_dim(v, shape[:-1] + (rows, shape[-1]), tuple(range(nb)) + (nb + 1,))


def _col_vector(v, cols: int):
    shape = _shape(v)
    return api.broadcast_in_dim(v, shape + (cols,), tuple(range(len(shape))))


def _inv_gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (real)."""
    n = _shape(w)[-1]
    diff = api.sub(_row_vector(w, n), _col_vector(w, n))
    eye = _eye_mask(_shape(diff))
    ones = api.broadcast_in_dim(api.literal(1, _dtype(w)), _shape(diff), ())
    return api.select(eye, _zeros(diff), api.div(ones, api.select(eye, ones, diff)))


def _not_differentiable(what: str):
    from ..ad.jvp import DifferentiationError
    return DifferentiationError(f"kiln: differentiation of kiln.lax.linalg.{what} is not implemented")


def _cholesky_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    low = cholesky_p.bind(x)
    sigma = _hermitian_from(dx, lower=True)  # the primitive reads the lower triangle
    # dL = L phi(L^-1 dA L^-H), phi: lower triangle with the diagonal halved
    tmp = triangular_solve_p.bind(low, sigma, left_side=False, lower=True, transpose_a=True, conjugate_a=True,
                                  unit_diagonal=False)
    inner = triangular_solve_p.bind(low, tmp, left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                                    unit_diagonal=False)
    phi = api.sub(_tril(inner), api.mul(_diag_part(inner), 0.5))
    return low, _mm(low, phi)


def _lu_jvp(primals, tangents):
    from ..ad.tangents import Zero, tangent_aval
    (x,), (dx,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(x)
    *batch, m, n = _shape(x)
    if m != n:
        raise _not_differentiable(f"lu of non-square matrices (shape {_shape(x)})")
    batch = tuple(batch)
    dtype = _dtype(x)
    # P @ dA with P[i, k] = (perm[i] == k): a one-hot product keeps the rule linear in dA.
    nb = len(batch)
    perm_rows = api.broadcast_in_dim(perm, batch + (m, m), tuple(range(nb + 1)))
    p = _as(api.eq(perm_rows, api.broadcasted_iota(dtypes.int32, batch + (m, m), nb + 1)), dtype)
    eye = _as(_eye_mask(batch + (m, m)), dtype)
    lower = api.add(_tril(lu_, -1), eye)
    upper = _triu(lu_)
    la = triangular_solve_p.bind(lower, _mm(p, dx), left_side=True, lower=True, transpose_a=False,
                                 conjugate_a=False, unit_diagonal=True)
    lau = triangular_solve_p.bind(upper, la, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                                  unit_diagonal=False)
    d_lu = api.add(_mm(lower, _tril(lau, -1)), _mm(_triu(lau), upper))
    return [lu_, pivots, perm], [d_lu, Zero(tangent_aval(abstractify(pivots))), Zero(tangent_aval(abstractify(perm)))]


def _qr_jvp(primals, tangents, *, full_matrices):
    (x,), (dx,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    *_, m, n = _shape(x)
    if m < n or (full_matrices and m != n):
        raise _not_differentiable(f"qr for shape {_shape(x)} with full_matrices={full_matrices} (supported: "
                                  "m >= n with full_matrices=False, or square)")
    # dA = dQ R + Q dR; with X = Q^H dA R^-1: Q^H dQ = skew completion of tril(X, -1), dR = (X - Q^H dQ) R.
    dx_rinv = triangular_solve_p.bind(r, dx, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                                      unit_diagonal=False)
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    omega = api.sub(low, _H(low))
    if _dtype(x).kind == "c":  # R's diagonal is real: Q^H dQ carries the imaginary part of X's diagonal
        diag = _diag_part(qt_dx_rinv)
        omega = api.add(omega, api.sub(diag, _as(_real_part(diag), _dtype(x))))
    dq = api.add(_mm(q, api.sub(omega, qt_dx_rinv)), dx_rinv)
    dr = _mm(api.sub(qt_dx_rinv, omega), r)
    return [q, r], [dq, dr]


def _eigh_jvp(primals, tangents, *, lower):
    (x,), (dx,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower)
    sigma = _hermitian_from(dx, lower)
    vdv = _mm(_mm(_H(v), sigma), v)
    dw = _real_part(api.reduce_sum(_diag_part(vdv), (len(_shape(vdv)) - 1,)))
    dv = _mm(v, api.mul(_as(_inv_gaps(w), _dtype(x)), vdv))
    return [v, w], [dv, dw]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (x,), (dx,) = primals, tangents
    *_, m, n = _shape(x)
    if compute_uv and full_matrices and m != n:
        raise _not_differentiable(f"svd with full_matrices=True of a non-square matrix (shape {_shape(x)}); use "
                                  "full_matrices=False")
    # (for a square matrix the full factors are the reduced ones)
    s, u, vh = svd_p.bind(x, full_matrices=bool(full_matrices and compute_uv), compute_uv=True)
    dtype, k = _dtype(x), _shape(s)[-1]
    v = _H(vh)
    ds_mat = _mm(_mm(_H(u), dx), v)  # U^H dA V  (k x k)
    ds = _real_part(api.reduce_sum(_diag_part(ds_mat), (len(_shape(ds_mat)) - 1,)))
    if not compute_uv:
        return [s], [ds]
    s_row = _row_vector(s, k)  # s[j] in column j
    s_col = _col_vector(s, k)  # s[i] in row i
    # F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal
    gaps = _inv_gaps(api.mul(s, s))
    f = _as(gaps, dtype)
    ds_s = api.mul(ds_mat, _as(s_row, dtype))   # dS S   (column j scaled by s_j)
    s_ds = api.mul(_as(s_col, dtype), ds_mat)   # S dS   (row i scaled by s_i)
    zero_s = api.eq(s, api.broadcast_in_dim(api.literal(0, _dtype(s)), _shape(s), ()))
    ones = api.broadcast_in_dim(api.literal(1, _dtype(s)), _shape(s), ())
    s_inv = api.select(zero_s, api.sub(ones, ones), api.div(ones, api.select(zero_s, ones, s)))
    s_inv_diag = api.select(_eye_mask(_shape(ds_mat)), _as(_row_vector(s_inv, k), dtype), _zeros(ds_mat))
    # For complex inputs, the imaginary part of U^H dU's diagonal (the phase gauge) as JAX fixes it.
    du_diag = api.mul(api.mul(api.sub(ds_mat, _H(ds_mat)), 0.5), s_inv_diag)
    du = _mm(u, api.add(api.mul(f, api.add(ds_s, _H(ds_s))), du_diag))
    dv = _mm(v, api.mul(f, api.add(s_ds, _H(s_ds))))
    if m > k:  # the part of dA V outside U's span
        dav = _mm(dx, v)
        du = api.add(du, api.div(api.sub(dav, _mm(u, _mm(_H(u), dav))), _as(_row_vector(s, m), dtype)))
    if n > k:
        dahu = _mm(_H(dx), u)
        dv = api.add(dv, api.div(api.sub(dahu, _mm(v, _mm(vh, dahu))), _as(_row_vector(s, n), dtype)))
    return [s, u, vh], [ds, du, _H(dv)]


def _triangular_solve_jvp(primals, tangents, **params):
    from ..ad.tangents import Zero, instantiate
    (a, b), (da, db) = primals, tangents
    x = triangular_solve_p.bind(a, b, **params)
    rhs = None if isinstance(db, Zero) else db
    if not isinstance(da, Zero):
        da = _tril(da) if params["lower"] else _triu(da)
        if params["unit_diagonal"]:
            da = api.sub(da, _diag_part(da))
        if params["conjugate_a"] and _dtype(da).kind == "c":
            from .special import conj
            da = conj(da)
        if params["transpose_a"]:
            da = _mT(da)
        term = _mm(da, x) if params["left_side"] else _mm(x, da)
        rhs = api.neg(term) if rhs is None else api.sub(rhs, term)
    return x, triangular_solve_p.bind(a, instantiate(rhs), **params)


def _triangular_solve_transpose(ct, a, b, **params):
    from ..ad.tangents import Zero
    from ..ad.transpose import is_undefined
    if is_undefined(a):
        raise TypeError("kiln: internal error: triangular_solve is linear in b only")
    if isinstance(ct, Zero):
        return [None, None]
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..ad.transpose import transpose_rules
    from ..batching.core import batch_rules
    for prim in (cholesky_p, lu_p, qr_p, eigh_p, svd_p, triangular_solve_p):
        batch_rules[prim] = _batch_rule(prim)
    jvp_rules[cholesky_p] = _cholesky_jvp
    jvp_rules[lu_p] = _lu_jvp
    jvp_rules[qr_p] = _qr_jvp
    jvp_rules[eigh_p] = _eigh_jvp
    jvp_rules[svd_p] = _svd_jvp
    jvp_rules[triangular_solve_p] = _triangular_solve_jvp
    transpose_rules[triangular_solve_p] = _triangular_solve_transpose


_register_rules()
