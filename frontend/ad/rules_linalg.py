"""Derivative rules of the linear-algebra family (``kiln.lax.linalg``): JVPs of the decompositions and
the triangular solve, and the solve's transpose."""
from __future__ import annotations

from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import api
from ..lax.linalg import cholesky_p, eig_p, eigh_p, lu_p, qr_p, schur_p, svd_p, triangular_solve_p
from ..lax.special import complex as _complex
from ..lax.special import conj, imag, real
from .jvp import DifferentiationError, jvp_rules
from .tangents import Zero, instantiate, tangent_aval
from .transpose import is_undefined, transpose_rules

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
    return DifferentiationError(f"kiln: differentiation of kiln.lax.linalg.{what} is not implemented")


def _cholesky_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    low = cholesky_p.bind(x)
    # dL = L phi(L^-1 dA L^-H), phi: lower triangle with the diagonal halved. The whole tangent dA, as JAX's
    # rule has it, though the primitive reads only the lower triangle: for a symmetric dA (what every symmetric
    # input gives) the two agree, and for the rest JAX's numbers are the ones users compare against.
    tmp = triangular_solve_p.bind(low, dx, left_side=False, lower=True, transpose_a=True, conjugate_a=True,
                                  unit_diagonal=False)
    inner = triangular_solve_p.bind(low, tmp, left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                                    unit_diagonal=False)
    phi = api.sub(_tril(inner), api.mul(_diag_part(inner), 0.5))
    return low, _mm(low, phi)


def _lu_jvp(primals, tangents):
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


def _inverse(v):
    """``v^-1`` of a stack of square matrices (a primal value: LU with partial pivoting and two solves)."""
    lu_, _, perm = lu_p.bind(v)
    *batch, n, _ = _shape(v)
    batch = tuple(batch)
    nb = len(batch)
    dtype = _dtype(v)
    perm_rows = api.broadcast_in_dim(perm, batch + (n, n), tuple(range(nb + 1)))
    p = _as(api.eq(perm_rows, api.broadcasted_iota(dtypes.int32, batch + (n, n), nb + 1)), dtype)  # P[i, perm[i]]
    y = triangular_solve_p.bind(lu_, p, left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                                unit_diagonal=True)
    return triangular_solve_p.bind(lu_, y, left_side=True, lower=False, transpose_a=False, conjugate_a=False,
                                   unit_diagonal=False)


def _diag_vector(x):
    return api.reduce_sum(_diag_part(x), (len(_shape(x)) - 1,))


def _eigvec_tangent(w, v, vinv, da):
    """Tangents of the eigenvalues and of the LAPACK-normalised eigenvectors ``v`` (columns) of ``a``
    (``a v = v diag(w)``) along ``da``, for distinct eigenvalues. First-order perturbation theory gives
    ``dv = v (F * P) + v diag(c)`` with ``P = v^-1 da v`` and ``F[i, j] = 1 / (w_j - w_i)``; ``c`` keeps
    each column at unit norm with its largest-magnitude component real (the normalisation of geev)."""
    p = _mm(_mm(vinv, da), v)
    dw = _diag_vector(p)
    u = _mm(v, api.mul(_inv_gaps(w), p))
    shape = _shape(v)
    nd = len(shape)
    k = api.argmax(api.abs(v), nd - 2)  # the row of each column's largest component (a primal choice)
    kk = api.broadcast_in_dim(k, shape, tuple(range(nd - 2)) + (nd - 1,))
    mask = api.eq(api.broadcasted_iota(dtypes.int32, shape, nd - 2), kk)
    u_k = api.reduce_sum(api.select(mask, u, _zeros(u)), (nd - 2,))
    v_k = real(api.reduce_sum(api.select(mask, v, _zeros(v)), (nd - 2,)))
    re = api.neg(real(api.reduce_sum(api.mul(conj(v), u), (nd - 2,))))
    im = api.neg(api.div(imag(u_k), v_k))
    c = _complex(re, im)
    return dw, api.add(u, api.mul(v, _row_vector(c, shape[-2])))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs,
             implementation):
    (x,), (dx,) = primals, tangents
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "kiln.lax.linalg.eig: derivatives of nonsymmetric eigenvectors are valid only for distinct eigenvalues, "
            "which kiln cannot check; pass enable_eigvec_derivs=True to kiln.lax.linalg.eig to opt in (as in JAX), "
            "or differentiate only the eigenvalues (compute_left_eigenvectors=False, "
            "compute_right_eigenvectors=False; kiln.numpy.linalg.eigvals)")
    # The eigenvalues' tangent does not depend on how the eigenvectors are scaled, so their own derivatives
    # (needed for higher orders) are enabled here whatever the caller chose.
    outs = eig_p.bind(x, compute_left_eigenvectors=compute_left_eigenvectors, compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs or not vectors, implementation=implementation)
    w, vr = outs[0], outs[-1]
    cdt = _dtype(w)
    da = _as(dx, cdt)
    vinv = _inverse(vr)
    if not vectors:
        # dw_j = (vr^-1 da vr)_jj
        return [w], [api.reduce_sum(api.mul(_mm(vinv, da), _mT(vr)), (len(_shape(vr)) - 1,))]
    dw, dvr = _eigvec_tangent(w, vr, vinv, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        vl = outs[1]  # the right eigenvectors of a^H, eigenvalues conj(w)
        _, dvl = _eigvec_tangent(conj(w), vl, _inverse(vl), _H(da))
        primal_out.append(vl)
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


def _schur_jvp(primals, tangents, **params):
    raise NotImplementedError("kiln.lax.linalg.schur is not differentiable (as in JAX, which has no derivative "
                               "rule for the Schur decomposition); so neither are kiln.scipy.linalg.schur, sqrtm, "
                               "funm, rsf2csf of its output, or solve_sylvester(method='schur')")


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (da, db) = primals, tangents
    x = triangular_solve_p.bind(a, b, **params)
    rhs = None if isinstance(db, Zero) else db
    if not isinstance(da, Zero):
        da = _tril(da) if params["lower"] else _triu(da)
        if params["unit_diagonal"]:
            da = api.sub(da, _diag_part(da))
        if params["conjugate_a"] and _dtype(da).kind == "c":
                da = conj(da)
        if params["transpose_a"]:
            da = _mT(da)
        term = _mm(da, x) if params["left_side"] else _mm(x, da)
        rhs = api.neg(term) if rhs is None else api.sub(rhs, term)
    return x, triangular_solve_p.bind(a, instantiate(rhs), **params)


def _triangular_solve_transpose(ct, a, b, **params):
    if is_undefined(a):
        raise TypeError("kiln: internal error: triangular_solve is linear in b only")
    if isinstance(ct, Zero):
        return [None, None]
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


jvp_rules[cholesky_p] = _cholesky_jvp
jvp_rules[lu_p] = _lu_jvp
jvp_rules[qr_p] = _qr_jvp
jvp_rules[eigh_p] = _eigh_jvp
jvp_rules[svd_p] = _svd_jvp
jvp_rules[eig_p] = _eig_jvp
jvp_rules[schur_p] = _schur_jvp
jvp_rules[triangular_solve_p] = _triangular_solve_jvp
transpose_rules[triangular_solve_p] = _triangular_solve_transpose
