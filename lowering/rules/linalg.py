"""Emission rules for the linear-algebra primitives (``kiln.frontend.lax.linalg``).

Two implementations per primitive, chosen per lowering:

- **LAPACK** (``ctx.platform == 'cpu'`` and the runtime has registered jaxlib's LAPACK targets): one
  ``stablehlo.custom_call @lapack_<t><routine>_ffi`` (typed FFI, ``api_version = 4``, attributes in
  ``mhlo.backend_config`` as ``ui8`` characters), with column-major operand/result layouts
  (``minor_to_major = [r-2, r-1, r-3, ..., 0]``: the matrix column-major, batch dimensions major), plus a
  little StableHLO around it (masking the unused triangle, NaN on failure as JAX, pivots to a permutation).
- **Portable** (any other platform, or CPU without LAPACK): plain StableHLO with ``stablehlo.while`` loops
  whose trip counts depend on the static matrix size (the program stays small for any size):

  ===================  ======================================================================
  cholesky             right-looking column Cholesky, one column per iteration
  lu                   right-looking LU with partial pivoting, one column per iteration
  triangular_solve     row-by-row substitution (forward or backward)
  qr                   Householder QR, Q accumulated explicitly
  eigh                 two-sided Jacobi, parallel round-robin ordering (n/2 rotations per step)
  svd                  one-sided (Hestenes) Jacobi, same ordering; U completed/re-orthogonalised by QR
  ===================  ======================================================================

  Every dot product uses ``precision = HIGHEST`` (no TF32 on GPUs). Real dtypes only.

The algorithms are written on :class:`~kiln.lowering.hlo.V` values with the helpers of ``lowering/hlo.py``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from jaxlib.mlir import ir

from ..hlo import (
    V,
    absv,
    as_col,
    as_row,
    bcast,
    cols_iota,
    column,
    concat,
    conj,
    const,
    convert,
    diagonal,
    dyn_slice,
    dyn_update,
    element,
    eye_like,
    fori_loop,
    full,
    i32_attr,
    iota,
    logical_not,
    matmul,
    matvec,
    maximum,
    mT,
    nan_where_not,
    op,
    outer,
    over,
    real_dtype,
    reduce,
    reshape,
    row,
    rows_iota,
    rsum,
    select,
    slice_,
    sort_along_last,
    sqrt,
    vecmat,
    while_loop,
    wrap_inputs,
)
from ..module import LoweringError
from ..registry import register
from ..types import ranked_type
from .ffi import output_operand_aliases

# == LAPACK through typed-FFI custom calls ======================================================

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
           np.dtype(np.complex128): "z"}


def _lapack(ctx, dtype, real_name: str, complex_name: str | None = None) -> str | None:
    """The LAPACK FFI target for this routine and dtype, if it can be used in this lowering."""
    if getattr(ctx, "platform", None) != "cpu" or not hasattr(ctx, "has_custom_call_target"):
        return None
    dtype = np.dtype(dtype)
    base = complex_name if (dtype.kind == "c" and complex_name) else real_name
    name = f"lapack_{_PREFIX[dtype]}{base}_ffi"
    return name if ctx.has_custom_call_target(name) else None


def _layout(rank: int, matrix: bool) -> list[int]:
    """XLA minor-to-major: a matrix column-major (LAPACK), batch dims major; vectors row-major."""
    if matrix and rank >= 2:
        return [rank - 2, rank - 1] + list(range(rank - 3, -1, -1))
    return list(range(rank - 1, -1, -1))


def _layout_attr(layout: list[int]) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.asarray(layout, np.int64), type=ir.IndexType.get())


def custom_call(name: str, operands: Sequence[V], matrix_operands: Sequence[bool],
                results: Sequence[tuple[tuple[int, ...], np.dtype, bool]], attrs: dict[str, str],
                overwrites: tuple[int, int] | None = None) -> list[V]:
    """A typed-FFI (api_version 4) custom call; ``results`` are ``(shape, dtype, is_matrix)``, ``attrs``
    are one-character LAPACK options passed as ``ui8`` attributes. ``overwrites=(operand, result)``: the LAPACK
    routine works in place, so the result is given the operand's buffer (as JAX's lowerings do: without it the
    kernel copies the operand into a separate result buffer first)."""
    u8 = ir.IntegerType.get_unsigned(8)
    attributes = {
        "call_target_name": ir.StringAttr.get(name),
        "api_version": i32_attr(4),
        "operand_layouts": ir.ArrayAttr.get([_layout_attr(_layout(x.ndim, m))
                                             for x, m in zip(operands, matrix_operands)]),
        "result_layouts": ir.ArrayAttr.get([_layout_attr(_layout(len(s), m)) for s, _, m in results]),
        "backend_config": ir.DictAttr.get({k: ir.IntegerAttr.get(u8, ord(v)) for k, v in attrs.items()}),
    }
    if overwrites is not None:
        attributes["output_operand_aliases"] = output_operand_aliases([overwrites], len(results) > 1)
    created = op("stablehlo.custom_call", [x.v for x in operands], [ranked_type(s, d) for s, d, _ in results],
                 **attributes)
    return [V(r, s, d) for r, (s, d, _) in zip(created, results)]


def _no_portable(fname: str, dtype) -> None:
    if np.dtype(dtype).kind == "c":
        raise LoweringError(f"kiln.lax.linalg.{fname}: complex matrices are supported only on CPU with LAPACK "
                            f"(opt in with kiln.config.update('cpu_lapack', True) or KILN_CPU_LAPACK=1; jaxlib's "
                            f"LAPACK kernels need SciPy); kiln's portable implementation is real-only (got "
                            f"{np.dtype(dtype).name})")


# == cholesky ====================================================================================

@register("cholesky")
def _cholesky(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    *batch, n, _ = x.shape
    if x.shape and min(x.shape) == 0:
        return x.v
    target = _lapack(ctx, x.dtype, "potrf")
    if target is not None:
        out, info = custom_call(target, [x], [True], [(x.shape, x.dtype, True), (tuple(batch), np.int32, False)],
                                {"uplo": "L"}, overwrites=(0, 0))
        lower = select(rows_iota(x.shape) >= cols_iota(x.shape), out, 0)
        return nan_where_not(info.eq(0), lower).v
    _no_portable("cholesky", x.dtype)
    return _cholesky_portable(x).v


def _cholesky_portable(x: V) -> V:
    *batch, n, _ = x.shape
    batch = tuple(batch)
    vec = (*batch, n)
    ok0 = full(True, batch, np.bool_)

    def body(j, a, ok):
        ri = iota(vec, -1)
        col = column(a, j)
        cjj = element(col, j)
        d = sqrt(cjj)
        below = ri > bcast(j, vec, ())
        lcol = select(below, col / over(d, vec), select(ri.eq(bcast(j, vec, ())), over(d, vec), 0))
        lb = select(below, lcol, 0)
        a = a - outer(lb, lb)
        a = select(cols_iota(a.shape).eq(bcast(j, a.shape, ())), as_col(lcol, n), a)
        return [a, ok & (cjj > 0)]

    a, ok = fori_loop(n, [x, ok0], body)
    lower = select(rows_iota(x.shape) >= cols_iota(x.shape), a, 0)
    return nan_where_not(ok, lower)


# == lu ==========================================================================================

@register("lu")
def _lu(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    if min(x.shape) == 0:
        return [x.v, iota((*batch, k), -1).v, iota((*batch, m), -1).v]
    target = _lapack(ctx, x.dtype, "getrf")
    if target is not None:
        lu, ipiv, _info = custom_call(target, [x], [True],
                                      [(x.shape, x.dtype, True), ((*batch, k), np.int32, False),
                                       (batch, np.int32, False)], {}, overwrites=(0, 0))
        pivots = ipiv - 1  # LAPACK pivots are 1-based
        return [lu.v, pivots.v, _pivots_to_permutation(pivots, m).v]
    _no_portable("lu", x.dtype)
    return [v.v for v in _lu_portable(x)]


def _pivots_to_permutation(pivots: V, m: int) -> V:
    """Apply the row swaps ``i <-> pivots[i]`` in order to ``0..m-1``."""
    *batch, k = pivots.shape
    vec = (*batch, m)

    def body(j, perm):
        ri = iota(vec, -1)
        p = element(pivots, j)
        pv = over(p, vec)
        at_j = element(perm, j)
        at_p = rsum(select(ri.eq(pv), perm, 0), -1)
        return [select(ri.eq(bcast(j, vec, ())), over(at_p, vec), select(ri.eq(pv), over(at_j, vec), perm))]

    (perm,) = fori_loop(k, [iota(vec, -1)], body)
    return perm


def _lu_portable(x: V) -> list[V]:
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    vec_m, vec_n, vec_k = (*batch, m), (*batch, n), (*batch, k)
    real = real_dtype(x.dtype)

    def body(j, a, perm, piv):
        jm = bcast(j, vec_m, ())
        ri = iota(vec_m, -1)
        rows, cols = rows_iota(a.shape), cols_iota(a.shape)
        col = column(a, j)
        cand = select(ri >= jm, convert(absv(col), real), -1)
        mx = reduce(cand, [-1], "maximum")
        p = reduce(select(cand.eq(over(mx, vec_m)), ri, m), [-1], "minimum")
        p = select(p >= m, bcast(j, batch, ()), p)
        pm = over(p, a.shape)
        row_j = row(a, j)
        row_p = rsum(select(rows.eq(pm), a, 0), -2)
        a = select(rows.eq(bcast(j, a.shape, ())), as_row(row_p, m), select(rows.eq(pm), as_row(row_j, m), a))
        pv = over(p, vec_m)
        perm_j, perm_p = element(perm, j), rsum(select(ri.eq(pv), perm, 0), -1)
        perm = select(ri.eq(jm), over(perm_p, vec_m), select(ri.eq(pv), over(perm_j, vec_m), perm))
        piv = select(iota(vec_k, -1).eq(bcast(j, vec_k, ())), over(p, vec_k), piv)
        # eliminate below the pivot
        col = column(a, j)
        pivot = element(row_p, j)
        below = (ri > jm) & over(pivot.ne(0), vec_m)
        lcol = select(below, col / over(pivot, vec_m), 0)
        urow = select(iota(vec_n, -1) > bcast(j, vec_n, ()), row_p, 0)
        a = a - outer(lcol, urow)
        a = select((rows > bcast(j, a.shape, ())) & cols.eq(bcast(j, a.shape, ())), as_col(lcol, n), a)
        return [a, perm, piv]

    a, perm, piv = fori_loop(k, [x, iota(vec_m, -1), iota(vec_k, -1)], body)
    return [a, piv, perm]


# == triangular_solve ============================================================================

@register("triangular_solve")
def _triangular_solve(ctx, eqn, a_, b_):
    a, b = wrap_inputs(eqn, [a_, b_])
    p = eqn.params
    if min(a.shape) == 0 or min(b.shape) == 0:
        return b.v
    target = _lapack(ctx, a.dtype, "trsm")
    if target is not None:
        transpose_a, conjugate_a = p["transpose_a"], p["conjugate_a"] and a.dtype.kind == "c"
        if conjugate_a and not transpose_a:
            a, conjugate_a = conj(a), False
        trans = ("C" if conjugate_a else "T") if transpose_a else "N"
        (out,) = custom_call(target, [a, b], [True, True],
                             [(b.shape, b.dtype, True)],
                             {"side": "L" if p["left_side"] else "R", "uplo": "L" if p["lower"] else "U",
                              "trans_x": trans, "diag": "U" if p["unit_diagonal"] else "N"}, overwrites=(1, 0))
        return out.v
    _no_portable("triangular_solve", a.dtype)
    return _triangular_solve_portable(a, b, **p).v


def _triangular_solve_portable(a: V, b: V, *, left_side: bool, lower: bool, transpose_a: bool,
                               conjugate_a: bool, unit_diagonal: bool) -> V:
    # Normal form: m @ x = rhs with m = op(a) triangular. x @ op(a) = b  <=>  op(a)^T @ x^T = b^T.
    if not left_side:
        b = mT(b)
        transpose_a = not transpose_a
    m = mT(a) if transpose_a else a
    lower = lower != transpose_a
    *batch, n, _ = m.shape
    k = b.shape[-1]
    vec_n, vec_k = (*batch, n), (*batch, k)

    def body(i, x):
        r = i if lower else (n - 1) - i
        mrow = row(m, r)
        ci = iota(vec_n, -1)
        rv = bcast(r, vec_n, ())
        diag = element(mrow, r)
        mrow = select(ci < rv if lower else ci > rv, mrow, 0)
        acc = vecmat(mrow, x)
        xr = row(b, r) - acc
        if not unit_diagonal:
            xr = xr / over(diag, vec_k)
        return [dyn_update(x, reshape(xr, (*batch, 1, k)), [0] * len(batch) + [r, 0])]

    (x,) = fori_loop(n, [full(0, b.shape, b.dtype)], body)
    return x if left_side else mT(x)


# == qr ==========================================================================================

@register("qr")
def _qr(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    full_matrices = eqn.params["full_matrices"]
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    kq = m if full_matrices else k
    if min(x.shape) == 0:
        return [eye_like(batch, m, kq, x.dtype).v, full(0, (*batch, kq, n), x.dtype).v]
    geqrf = _lapack(ctx, x.dtype, "geqrf")
    orgqr = _lapack(ctx, x.dtype, "orgqr", "ungqr")
    if geqrf is not None and orgqr is not None:
        a, tau = custom_call(geqrf, [x], [True], [(x.shape, x.dtype, True), ((*batch, k), x.dtype, False)], {},
                             overwrites=(0, 0))
        if kq > n:  # complete Q of a tall matrix: orgqr on the reflectors padded with zero columns
            q_in = concat([a, full(0, (*batch, m, kq - n), x.dtype)], -1)
        elif kq < n:
            q_in = slice_(a, [0] * (len(batch) + 2), [*batch, m, kq])
        else:
            q_in = a
        (q,) = custom_call(orgqr, [q_in, tau], [True, False], [(q_in.shape, x.dtype, True)], {}, overwrites=(0, 0))
        r = select(rows_iota(a.shape) <= cols_iota(a.shape), a, 0)
        if kq < m:
            r = slice_(r, [0] * (len(batch) + 2), [*batch, kq, n])
        return [q.v, r.v]
    _no_portable("qr", x.dtype)
    q, r = _qr_portable(x, full_matrices)
    return [q.v, r.v]


def _qr_portable(x: V, full_matrices: bool) -> tuple[V, V]:
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    vec_m = (*batch, m)

    def body(j, a, q):
        ri = iota(vec_m, -1)
        jm = bcast(j, vec_m, ())
        col = column(a, j)
        xv = select(ri >= jm, col, 0)
        alpha = element(col, j)
        norm = sqrt(rsum(xv * xv, -1))
        beta = select(alpha >= 0, -norm, norm)
        v = select(ri.eq(jm), over(alpha - beta, vec_m), xv)
        vn2 = rsum(v * v, -1)
        scale = select(vn2 > 0, 2 / select(vn2 > 0, vn2, 1), 0)
        sv = v * over(scale, vec_m)
        a = a - outer(sv, vecmat(v, a))
        a = select((rows_iota(a.shape) > bcast(j, a.shape, ())) & cols_iota(a.shape).eq(bcast(j, a.shape, ())),
                   full(0, a.shape, a.dtype), a)
        q = q - outer(matvec(q, v), sv)
        return [a, q]

    a, q = fori_loop(k, [x, eye_like(batch, m, m, x.dtype)], body)
    r = select(rows_iota(a.shape) <= cols_iota(a.shape), a, 0)
    if not full_matrices and k < m:
        q = slice_(q, [0] * (len(batch) + 2), [*batch, m, k])
        r = slice_(r, [0] * (len(batch) + 2), [*batch, k, n])
    return q, r


# == eigh ========================================================================================

@register("eigh")
def _eigh(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    lower = eqn.params["lower"]
    *batch, n, _ = x.shape
    batch = tuple(batch)
    real = real_dtype(x.dtype)
    if min(x.shape) == 0:
        return [x.v, full(0, (*batch, n), real).v]
    target = _lapack(ctx, x.dtype, "syevd", "heevd")
    if target is not None:
        v, w, info = custom_call(target, [x], [True],
                                 [(x.shape, x.dtype, True), ((*batch, n), real, False), (batch, np.int32, False)],
                                 {"uplo": "L" if lower else "U", "mode": "V"}, overwrites=(0, 0))
        ok = info.eq(0)
        return [nan_where_not(ok, v).v, nan_where_not(ok, w).v]
    _no_portable("eigh", x.dtype)
    v, w = _eigh_portable(x, lower)
    return [v.v, w.v]


def _round_robin(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The parallel Jacobi ordering: per round, each index's partner and role (+1 first / -1 second /
    0 idle) so that every pair of ``0..n-1`` meets once in ``n - 1`` (``n`` even) or ``n`` rounds."""
    n2 = n + (n % 2)
    rounds = max(n2 - 1, 1)
    partner = np.tile(np.arange(n, dtype=np.int32), (rounds, 1))
    role = np.zeros((rounds, n), np.int32)
    others = list(range(1, n2))
    for r in range(rounds):
        players = [0] + others[r:] + others[:r] if others else [0]
        for i in range(n2 // 2):
            a, b = players[i], players[n2 - 1 - i]
            p, q = min(a, b), max(a, b)
            if q >= n:  # the idle slot when n is odd
                continue
            partner[r, p], partner[r, q] = q, p
            role[r, p], role[r, q] = 1, -1
    return partner, role


def _round_tables(n: int, r: V, shape: Sequence[int]) -> tuple[V, V]:
    """This round's partner and role rows, broadcast to ``(..., n)`` (``shape``)."""
    partner_t, role_t = _round_robin(n)
    partner = reshape(dyn_slice(const(partner_t, np.int32), [r, 0], (1, n)), (n,))
    role = reshape(dyn_slice(const(role_t, np.int32), [r, 0], (1, n)), (n,))
    nd = len(shape)
    return bcast(partner, shape, [nd - 1]), bcast(role, shape, [nd - 1])


def _jacobi_rotation(app: V, aqq: V, apq: V, role: V) -> tuple[V, V]:
    """(c, s) zeroing the off-diagonal of [[app, apq], [apq, aqq]] (Golub & Van Loan 8.4.1); idle -> (1, 0)."""
    active = role.ne(0) & apq.ne(0)
    safe = select(active, apq, 1)
    tau = (aqq - app) / (2 * safe)
    sgn = select(tau >= 0, full(1, tau.shape, tau.dtype), -1)
    t = sgn / (absv(tau) + sqrt(1 + tau * tau))
    c = 1 / sqrt(1 + t * t)
    s = t * c
    return select(active, c, 1), select(active, s, 0)


def _rotation_matrix(c: V, s: V, partner: V, role: V) -> V:
    """J with J[a, a] = c[a] and J[a, partner[a]] = role[a] * s[a] (so J[p, q] = s, J[q, p] = -s)."""
    n = c.shape[-1]
    shape = (*c.shape, n)
    rows, cols = rows_iota(shape), cols_iota(shape)
    sr = s * convert(role, s.dtype)
    return select(rows.eq(cols), as_col(c, n), select(cols.eq(as_col(partner, n)), as_col(sr, n), 0))


def _partner_values(v: V, partner: V) -> V:
    """``v[..., partner[a]]`` for each ``a`` (exact: select and sum)."""
    n = v.shape[-1]
    shape = (*v.shape, n)
    return rsum(select(cols_iota(shape).eq(as_col(partner, n)), as_row(v, n), 0), -1)


_MAX_SWEEPS = 40


def _eigh_portable(x: V, lower: bool) -> tuple[V, V]:
    *batch, n, _ = x.shape
    batch = tuple(batch)
    vec = (*batch, n)
    rows, cols = rows_iota(x.shape), cols_iota(x.shape)
    a0 = select(rows >= cols if lower else rows <= cols, x, mT(x))
    rounds = max(n + (n % 2) - 1, 1)
    eps = float(np.finfo(x.dtype).eps)
    frob2 = rsum(rsum(a0 * a0, -1), -1)
    tol2 = frob2 * (eps * eps)

    def off2(a):
        return rsum(rsum(select(rows_iota(a.shape).ne(cols_iota(a.shape)), a * a, 0), -1), -1)

    def cond(it, a, v, off, tol):
        busy = reduce(off > tol, list(range(len(batch))), "or") if batch else off > tol
        return (it < _MAX_SWEEPS * rounds) & busy

    def body(it, a, v, off, tol):
        r = it % rounds
        partner, role = _round_tables(n, r, vec)
        d = diagonal(a)
        d_partner = _partner_values(d, partner)
        apq = rsum(select(cols_iota(a.shape).eq(as_col(partner, n)), a, 0), -1)
        first = role > 0
        app, aqq = select(first, d, d_partner), select(first, d_partner, d)
        c, s = _jacobi_rotation(app, aqq, apq, role)
        j = _rotation_matrix(c, s, partner, role)
        a = matmul(mT(j), matmul(a, j))
        a = (a + mT(a)) * 0.5
        v = matmul(v, j)
        return [it + 1, a, v, off2(a), tol]

    _, a, v, _, _ = while_loop([const(0, np.int32), a0, eye_like(batch, n, n, x.dtype), off2(a0), tol2], cond, body)
    w = diagonal(a)
    (w_sorted,) = sort_along_last(w, [], descending=False)
    _, v_sorted = sort_along_last(as_row(w, n), [v], descending=False)
    return v_sorted, w_sorted


# == svd =========================================================================================

@register("svd")
def _svd(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    full_matrices, compute_uv = eqn.params["full_matrices"], eqn.params["compute_uv"]
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    real = real_dtype(x.dtype)
    ku, kv = (m, n) if full_matrices else (k, k)
    if min(x.shape) == 0:
        s = full(0, (*batch, k), real)
        if not compute_uv:
            return [s.v]
        return [s.v, eye_like(batch, m, ku, x.dtype).v, eye_like(batch, kv, n, x.dtype).v]
    target = _lapack(ctx, x.dtype, "gesdd")
    if target is not None:
        mode = "N" if not compute_uv else ("A" if full_matrices else "S")
        u_shape = (*batch, m, ku) if compute_uv else (*batch, 1, 1)
        vt_shape = (*batch, kv, n) if compute_uv else (*batch, 1, 1)
        _, s, u, vt, info = custom_call(
            target, [x], [True],
            [(x.shape, x.dtype, True), ((*batch, k), real, False), (u_shape, x.dtype, True),
             (vt_shape, x.dtype, True), (batch, np.int32, False)], {"mode": mode}, overwrites=(0, 0))
        ok = info.eq(0)
        if not compute_uv:
            return [nan_where_not(ok, s).v]
        return [nan_where_not(ok, s).v, nan_where_not(ok, u).v, nan_where_not(ok, vt).v]
    _no_portable("svd", x.dtype)
    return [v.v for v in _svd_portable(x, full_matrices, compute_uv)]


def _svd_portable(x: V, full_matrices: bool, compute_uv: bool) -> list[V]:
    *batch, m, n = x.shape
    batch = tuple(batch)
    swap = m < n
    g0 = mT(x) if swap else x
    big, small = g0.shape[-2], g0.shape[-1]  # big >= small
    vec = (*batch, small)
    rounds = max(small + (small % 2) - 1, 1)
    eps = float(np.finfo(x.dtype).eps)
    tol = eps * max(big, 1) ** 0.5

    def cond(it, g, v, sweep_max, done):
        return (it < _MAX_SWEEPS * rounds) & logical_not(done)

    def body(it, g, v, sweep_max, done):
        r = it % rounds
        partner, role = _round_tables(small, r, vec)
        norms = rsum(g * g, -2)
        norms_partner = _partner_values(norms, partner)
        perm = convert(rows_iota((*batch, small, small)).eq(as_row(partner, small)), g.dtype)
        g_partner = matmul(g, perm)  # column partner[a] of g in column a (one-hot, exact at HIGHEST)
        gamma = rsum(g * g_partner, -2)
        first = role > 0
        app, aqq = select(first, norms, norms_partner), select(first, norms_partner, norms)
        c, s = _jacobi_rotation(app, aqq, gamma, role)
        j = _rotation_matrix(c, s, partner, role)
        g = matmul(g, j)
        v = matmul(v, j)
        denom = sqrt(app * aqq)
        rel = select(role.ne(0) & (denom > 0), absv(gamma) / select(denom > 0, denom, 1), 0)
        cur = reduce(rel, list(range(rel.ndim)), "maximum")
        sweep_max = select(r.eq(0), cur, maximum(sweep_max, cur))
        done = r.eq(rounds - 1) & (sweep_max <= tol)
        return [it + 1, g, v, sweep_max, done]

    init = [const(0, np.int32), g0, eye_like(batch, small, small, x.dtype), const(0, x.dtype), const(False, np.bool_)]
    _, g, v, _, _ = while_loop(init, cond, body)
    s = sqrt(rsum(g * g, -2))
    (s_sorted,) = sort_along_last(s, [], descending=True)
    if not compute_uv:
        return [s_sorted]
    _, g = sort_along_last(as_row(s, big), [g], descending=True)
    _, v = sort_along_last(as_row(s, small), [v], descending=True)
    positive = as_row(s_sorted > 0, big)
    u = select(positive, g / as_row(select(s_sorted > 0, s_sorted, 1), big), 0)
    # Complete (full_matrices) and re-orthogonalise U: Householder QR of U; Q's columns equal U's up to
    # sign where U's are orthonormal, and extend them to an orthonormal basis elsewhere.
    q, rr = _qr_portable(u, full_matrices)
    d = diagonal(slice_(rr, [0] * (len(batch) + 2), [*batch, small, small]))
    sign = select(d < 0, full(-1, d.shape, d.dtype), 1)
    if q.shape[-1] > small:
        sign = concat([sign, full(1, (*batch, q.shape[-1] - small), d.dtype)], -1)
    u = q * as_row(sign, big)
    vh = mT(v)
    if swap:  # x^T = u s vh  =>  x = vh^T s u^T
        u, vh = mT(vh), mT(u)
    return [s_sorted, u, vh]


# == eig and schur: LAPACK only ==================================================================

def _lapack_only(ctx, fname: str, dtype, real_name: str) -> str:
    """The LAPACK target of a routine kiln has no portable implementation of, or a clear error."""
    target = _lapack(ctx, dtype, real_name)
    if target is not None:
        return target
    platform = getattr(ctx, "platform", None)
    if platform == "cpu":
        from kiln.frontend.core.config import config
        reason = ("jaxlib's LAPACK kernels are turned off (kiln.config 'cpu_lapack' is False or KILN_CPU_LAPACK=0); "
                  "turn them on with kiln.config.update('cpu_lapack', True)" if not config.cpu_lapack else
                  "jaxlib could not load its LAPACK kernels (they need SciPy installed)")
    else:
        reason = (f"this computation is compiled for {platform!r}, and kiln has no {fname} for it; move it to the "
                  "CPU: put the operands there with kiln.device_put(x, kiln.devices('cpu')[0]), or compile the "
                  "function with kiln.jit(f, backend='cpu')")
    raise LoweringError(f"kiln.lax.linalg.{fname}: needs LAPACK on the CPU (there is no portable implementation "
                        f"of this nonsymmetric eigensolver); {reason}")


@register("eig")
def _eig(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    p = eqn.params
    left, right = p["compute_left_eigenvectors"], p["compute_right_eigenvectors"]
    *batch, n, _ = x.shape
    batch = tuple(batch)
    cdt = np.dtype(np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128)
    target = _lapack_only(ctx, "eig", x.dtype, "geev")
    if n == 0:
        outs = [full(0, (*batch, 0), cdt)] + [full(0, x.shape, cdt)] * (int(left) + int(right))
        return [o.v for o in outs]
    real = x.dtype.kind != "c"
    vec = ((*batch, n), x.dtype, False)
    results = ([vec, vec] if real else [vec]) + [(x.shape, cdt, True), (x.shape, cdt, True), (batch, np.int32, False)]
    *w, vl, vr, info = custom_call(target, [x], [True], results,
                                   {"compute_left": "V" if left else "N", "compute_right": "V" if right else "N"})
    w = V(op("stablehlo.complex", [w[0].v, w[1].v], [ranked_type(w[0].shape, cdt)])[0], w[0].shape, cdt) \
        if real else w[0]
    ok = info.eq(0)
    outs = [nan_where_not(ok, w)]
    if left:
        outs.append(nan_where_not(ok, vl))
    if right:
        outs.append(nan_where_not(ok, vr))
    return [o.v for o in outs]


@register("schur")
def _schur(ctx, eqn, x_):
    (x,) = wrap_inputs(eqn, [x_])
    vectors = eqn.params["compute_schur_vectors"]
    *batch, n, _ = x.shape
    batch = tuple(batch)
    target = _lapack_only(ctx, "schur", x.dtype, "gees")
    if n == 0:
        return [x.v] * (2 if vectors else 1)
    vec = ((*batch, n), x.dtype, False)
    ints = [(batch, np.int32, False), (batch, np.int32, False)]  # sdim, info
    results = [(x.shape, x.dtype, True), (x.shape, x.dtype, True)] + \
        ([vec, vec] if x.dtype.kind != "c" else [vec]) + ints
    t, q, *_, info = custom_call(target, [x], [True], results, {"mode": "V" if vectors else "N", "sort": "N"},
                                 overwrites=(0, 0))
    ok = info.eq(0)
    return [nan_where_not(ok, t).v] + ([nan_where_not(ok, q).v] if vectors else [])
