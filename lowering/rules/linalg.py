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
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..module import LoweringError, op
from ..registry import register
from ..types import element_type
from .elementwise import compare

# == A small value wrapper for writing the algorithms ==========================================


class V:
    """An ``ir.Value`` with its static shape and NumPy dtype; arithmetic emits StableHLO."""

    __slots__ = ("v", "shape", "dtype")

    def __init__(self, v: ir.Value, shape: Sequence[int], dtype) -> None:
        self.v, self.shape, self.dtype = v, tuple(shape), np.dtype(dtype)

    @property
    def type(self) -> ir.RankedTensorType:
        return _ttype(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _other(self, o) -> V:
        return o if isinstance(o, V) else full(o, self.shape, self.dtype)

    def _bin(self, name: str, o, swap: bool = False) -> V:
        o = self._other(o)
        a, b = (o, self) if swap else (self, o)
        return V(op(f"stablehlo.{name}", [a.v, b.v], self.type), self.shape, self.dtype)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("subtract", o)
    def __rsub__(self, o): return self._bin("subtract", o, True)
    def __mul__(self, o): return self._bin("multiply", o)
    def __rmul__(self, o): return self._bin("multiply", o, True)
    def __truediv__(self, o): return self._bin("divide", o)
    def __rtruediv__(self, o): return self._bin("divide", o, True)
    def __mod__(self, o): return self._bin("remainder", o)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __neg__(self): return self._unary("negate")

    def _unary(self, name: str) -> V:
        return V(op(f"stablehlo.{name}", [self.v], self.type), self.shape, self.dtype)

    def _cmp(self, o, direction: str) -> V:
        o = self._other(o)
        return V(compare(self.v, o.v, direction, self.dtype), self.shape, np.bool_)

    def __lt__(self, o): return self._cmp(o, "LT")
    def __le__(self, o): return self._cmp(o, "LE")
    def __gt__(self, o): return self._cmp(o, "GT")
    def __ge__(self, o): return self._cmp(o, "GE")
    def eq(self, o) -> V: return self._cmp(o, "EQ")
    def ne(self, o) -> V: return self._cmp(o, "NE")
    __hash__ = None  # type: ignore[assignment]


def _ttype(shape: Sequence[int], dtype) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element_type(np.dtype(dtype)))


def const(value, dtype) -> V:
    """A constant array (any shape)."""
    arr = np.array(value, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    attr = ir.DenseElementsAttr.get(arr, type=_ttype(arr.shape, arr.dtype))
    return V(ir.Operation.create("stablehlo.constant", results=[_ttype(arr.shape, arr.dtype)],
                                 attributes={"value": attr}).result, arr.shape, arr.dtype)


def full(value, shape: Sequence[int], dtype) -> V:
    return bcast(const(value, dtype), shape, ())


def bcast(x: V, shape: Sequence[int], dims: Sequence[int]) -> V:
    """``broadcast_in_dim``: operand dimension i becomes result dimension ``dims[i]``."""
    shape = tuple(shape)
    if shape == x.shape and tuple(dims) == tuple(range(x.ndim)):
        return x
    return V(op("stablehlo.broadcast_in_dim", [x.v], _ttype(shape, x.dtype),
                broadcast_dimensions=ir.DenseI64ArrayAttr.get(list(dims))), shape, x.dtype)


def iota(shape: Sequence[int], dim: int, dtype=np.int32) -> V:
    shape = tuple(shape)
    dim = dim % len(shape)
    return V(op("stablehlo.iota", [], _ttype(shape, dtype),
                iota_dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)), shape, dtype)


def select(pred: V, a, b) -> V:
    ref = a if isinstance(a, V) else b
    a = a if isinstance(a, V) else full(a, ref.shape, ref.dtype)
    b = b if isinstance(b, V) else full(b, ref.shape, ref.dtype)
    if pred.shape != a.shape and pred.shape != ():
        raise AssertionError("select shapes")
    return V(op("stablehlo.select", [pred.v, a.v, b.v], a.type), a.shape, a.dtype)


def unary(name: str, x: V) -> V:
    return x._unary(name)


def sqrt(x: V) -> V:
    return unary("sqrt", x)


def absv(x: V) -> V:
    return unary("abs", x)


def logical_not(x: V) -> V:
    return unary("not", x)


def maximum(a: V, b) -> V:
    return a._bin("maximum", b)


def convert(x: V, dtype) -> V:
    if x.dtype == np.dtype(dtype):
        return x
    return V(op("stablehlo.convert", [x.v], _ttype(x.shape, dtype)), x.shape, dtype)


def reshape(x: V, shape: Sequence[int]) -> V:
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return V(op("stablehlo.reshape", [x.v], _ttype(shape, x.dtype)), shape, x.dtype)


def transpose(x: V, perm: Sequence[int]) -> V:
    shape = tuple(x.shape[p] for p in perm)
    return V(op("stablehlo.transpose", [x.v], _ttype(shape, x.dtype),
                permutation=ir.DenseI64ArrayAttr.get(list(perm))), shape, x.dtype)


def mT(x: V) -> V:
    """Swap the last two dimensions."""
    nd = x.ndim
    return transpose(x, list(range(nd - 2)) + [nd - 1, nd - 2])


def slice_(x: V, start: Sequence[int], limit: Sequence[int]) -> V:
    shape = tuple(l - s for s, l in zip(start, limit))
    return V(op("stablehlo.slice", [x.v], _ttype(shape, x.dtype),
                start_indices=ir.DenseI64ArrayAttr.get(list(start)),
                limit_indices=ir.DenseI64ArrayAttr.get(list(limit)),
                strides=ir.DenseI64ArrayAttr.get([1] * x.ndim)), shape, x.dtype)


def _index(i) -> V:
    return i if isinstance(i, V) else const(i, np.int32)


def dyn_slice(x: V, starts: Sequence, sizes: Sequence[int]) -> V:
    starts = [_index(s).v for s in starts]
    return V(op("stablehlo.dynamic_slice", [x.v, *starts], _ttype(sizes, x.dtype),
                slice_sizes=ir.DenseI64ArrayAttr.get(list(sizes))), sizes, x.dtype)


def dyn_update(x: V, update: V, starts: Sequence) -> V:
    starts = [_index(s).v for s in starts]
    return V(op("stablehlo.dynamic_update_slice", [x.v, update.v, *starts], x.type), x.shape, x.dtype)


def concat(xs: Sequence[V], dim: int) -> V:
    dim = dim % xs[0].ndim
    shape = list(xs[0].shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    return V(op("stablehlo.concatenate", [x.v for x in xs], _ttype(shape, xs[0].dtype),
                dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)), shape, xs[0].dtype)


def _scalar_type(dtype) -> ir.RankedTensorType:
    return _ttype((), dtype)


def reduce(x: V, axes: Sequence[int], kind: str) -> V:
    """Reduce ``x`` over ``axes`` with ``kind`` in add / maximum / minimum / and / or."""
    axes = sorted(a % x.ndim for a in axes)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if kind == "add":
        init = 0
    elif kind in ("maximum", "minimum"):
        if x.dtype.kind == "f":
            init = -np.inf if kind == "maximum" else np.inf
        else:
            info = np.iinfo(x.dtype)
            init = info.min if kind == "maximum" else info.max
    else:
        init = kind == "and"
    st = _scalar_type(x.dtype)
    red = ir.Operation.create("stablehlo.reduce", results=[_ttype(shape, x.dtype)],
                              operands=[x.v, const(init, x.dtype).v],
                              attributes={"dimensions": ir.DenseI64ArrayAttr.get(axes)}, regions=1)
    block = red.regions[0].blocks.append(st, st)
    with ir.InsertionPoint(block):
        ir.Operation.create("stablehlo.return", operands=[op(f"stablehlo.{kind}", list(block.arguments), st)])
    return V(red.result, shape, x.dtype)


def rsum(x: V, axis: int = -1) -> V:
    return reduce(x, [axis], "add")


def _precision_attr() -> ir.Attribute:
    return ir.ArrayAttr.get([hlo.PrecisionAttr.get("HIGHEST")] * 2)


def dot(x: V, y: V, contract: tuple[Sequence[int], Sequence[int]], batch: tuple[Sequence[int], Sequence[int]]) -> V:
    """``dot_general`` at HIGHEST precision; result dims: batch, x free, y free."""
    (xc, yc), (xb, yb) = contract, batch
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(xb), rhs_batching_dimensions=list(yb),
                                     lhs_contracting_dimensions=list(xc), rhs_contracting_dimensions=list(yc))
    shape = tuple(x.shape[a] for a in xb) + tuple(d for i, d in enumerate(x.shape) if i not in xc and i not in xb) \
        + tuple(d for i, d in enumerate(y.shape) if i not in yc and i not in yb)
    return V(op("stablehlo.dot_general", [x.v, y.v], _ttype(shape, x.dtype), dot_dimension_numbers=dn,
                precision_config=_precision_attr()), shape, x.dtype)


def matmul(x: V, y: V) -> V:
    """Batched ``x @ y`` for ``(..., m, k) @ (..., k, n)`` with equal batch dimensions."""
    nb = x.ndim - 2
    return dot(x, y, ([nb + 1], [nb]), (list(range(nb)), list(range(nb))))


def matvec(x: V, v: V) -> V:
    """Batched ``x @ v`` for ``(..., m, k)`` and ``(..., k)``."""
    nb = x.ndim - 2
    return dot(x, v, ([nb + 1], [nb]), (list(range(nb)), list(range(nb))))


def vecmat(v: V, x: V) -> V:
    """Batched ``v @ x`` for ``(..., m)`` and ``(..., m, n)``."""
    nb = x.ndim - 2
    return dot(v, x, ([nb], [nb]), (list(range(nb)), list(range(nb))))


def while_loop(init: Sequence[V], cond: Callable[..., V], body: Callable[..., Sequence[V]]) -> list[V]:
    """``stablehlo.while`` over the carried values ``init`` (values from outside are not captured:
    everything the regions need is carried or created inside them)."""
    types = [x.type for x in init]
    w = ir.Operation.create("stablehlo.while", results=types, operands=[x.v for x in init], regions=2)
    for region, fn in ((w.regions[0], cond), (w.regions[1], body)):
        block = region.blocks.append(*types)
        with ir.InsertionPoint(block):
            args = [V(a, x.shape, x.dtype) for a, x in zip(block.arguments, init)]
            out = fn(*args)
            outs = [out] if isinstance(out, V) else list(out)
            ir.Operation.create("stablehlo.return", operands=[o.v for o in outs])
    return [V(r, x.shape, x.dtype) for r, x in zip(w.results, init)]


def fori_loop(n: int, init: Sequence[V], body: Callable[..., Sequence[V]]) -> list[V]:
    """``for i in range(n): carry = body(i, *carry)`` as a while loop (``i`` is an int32 scalar)."""
    if n == 0:
        return list(init)

    def cond(i, *_):
        return i < n

    def step(i, *carry):
        return [i + 1, *body(i, *carry)]

    return while_loop([const(0, np.int32), *init], cond, step)[1:]


def sort_along_last(keys: V, values: Sequence[V], descending: bool) -> list[V]:
    """Stable sort of ``keys`` and ``values`` (same shape) along the last dimension by ``keys``."""
    ops = [keys, *values]
    dim = keys.ndim - 1
    s = ir.Operation.create("stablehlo.sort", results=[x.type for x in ops], operands=[x.v for x in ops],
                            attributes={"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim),
                                        "is_stable": ir.BoolAttr.get(True)}, regions=1)
    scalars = []
    for x in ops:
        scalars += [_scalar_type(x.dtype)] * 2
    block = s.regions[0].blocks.append(*scalars)
    with ir.InsertionPoint(block):
        a, b = block.arguments[0], block.arguments[1]
        ir.Operation.create("stablehlo.return", operands=[compare(a, b, "GT" if descending else "LT", keys.dtype)])
    return [V(r, x.shape, x.dtype) for r, x in zip(s.results, ops)]


# -- matrix helpers (batched: leading dims of every operand are batch dims) ------------------------

def rows_iota(shape: Sequence[int]) -> V:
    return iota(shape, len(shape) - 2)


def cols_iota(shape: Sequence[int]) -> V:
    return iota(shape, len(shape) - 1)


def column(x: V, j) -> V:
    """Column ``j`` of a stack of matrices: ``(..., m, n) -> (..., m)``."""
    *b, m, _ = x.shape
    return reshape(dyn_slice(x, [0] * len(b) + [0, j], (*b, m, 1)), (*b, m))


def row(x: V, i) -> V:
    """Row ``i``: ``(..., m, n) -> (..., n)``."""
    *b, _, n = x.shape
    return reshape(dyn_slice(x, [0] * len(b) + [i, 0], (*b, 1, n)), (*b, n))


def element(v: V, i) -> V:
    """Entry ``i`` of a stack of vectors: ``(..., n) -> (...)``."""
    *b, _ = v.shape
    return reshape(dyn_slice(v, [0] * len(b) + [i], (*b, 1)), tuple(b))


def as_col(v: V, n: int) -> V:
    """``(..., m) -> (..., m, n)``, constant along the last dimension."""
    nb = v.ndim - 1
    return bcast(v, (*v.shape, n), list(range(nb + 1)))


def as_row(v: V, m: int) -> V:
    """``(..., n) -> (..., m, n)``, constant along rows."""
    nb = v.ndim - 1
    return bcast(v, (*v.shape[:-1], m, v.shape[-1]), list(range(nb)) + [nb + 1])


def over(v: V, shape: Sequence[int]) -> V:
    """Broadcast a batch-shaped value ``(...)`` to ``(..., *rest)``."""
    return bcast(v, shape, list(range(v.ndim)))


def outer(u: V, w: V) -> V:
    return as_col(u, w.shape[-1]) * as_row(w, u.shape[-1])


def diagonal(x: V) -> V:
    return rsum(select(rows_iota(x.shape).eq(cols_iota(x.shape)), x, 0), -1)


def eye_like(batch: Sequence[int], m: int, n: int, dtype) -> V:
    shape = (*batch, m, n)
    return convert(rows_iota(shape).eq(cols_iota(shape)), dtype)


def nan_where_not(ok: V, x: V) -> V:
    """``x`` where the batch flag ``ok`` holds, NaN elsewhere."""
    return select(over(ok, x.shape), x, np.nan)


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
                results: Sequence[tuple[tuple[int, ...], np.dtype, bool]], attrs: dict[str, str]) -> list[V]:
    """A typed-FFI (api_version 4) custom call; ``results`` are ``(shape, dtype, is_matrix)``, ``attrs``
    are one-character LAPACK options passed as ``ui8`` attributes."""
    u8 = ir.IntegerType.get_unsigned(8)
    attributes = {
        "call_target_name": ir.StringAttr.get(name),
        "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        "operand_layouts": ir.ArrayAttr.get([_layout_attr(_layout(x.ndim, m))
                                             for x, m in zip(operands, matrix_operands)]),
        "result_layouts": ir.ArrayAttr.get([_layout_attr(_layout(len(s), m)) for s, _, m in results]),
        "backend_config": ir.DictAttr.get({k: ir.IntegerAttr.get(u8, ord(v)) for k, v in attrs.items()}),
    }
    created = ir.Operation.create("stablehlo.custom_call", results=[_ttype(s, d) for s, d, _ in results],
                                  operands=[x.v for x in operands], attributes=attributes)
    return [V(r, s, d) for r, (s, d, _) in zip(created.results, results)]


def _real_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return np.dtype(np.float64) if dtype == np.complex128 else (
        np.dtype(np.float32) if dtype == np.complex64 else dtype)


def _no_portable(fname: str, dtype) -> None:
    if np.dtype(dtype).kind == "c":
        raise LoweringError(f"kiln.lax.linalg.{fname}: complex matrices are supported only on CPU with LAPACK "
                            f"(opt in with kiln.config.update('cpu_lapack', True) or KILN_CPU_LAPACK=1; jaxlib's "
                            f"LAPACK kernels need SciPy); kiln's portable implementation is real-only (got "
                            f"{np.dtype(dtype).name})")


def _conj(x: V) -> V:
    if x.dtype.kind != "c":
        return x
    rt = _real_dtype(x.dtype)
    re = V(op("stablehlo.real", [x.v], _ttype(x.shape, rt)), x.shape, rt)
    im = V(op("stablehlo.imag", [x.v], _ttype(x.shape, rt)), x.shape, rt)
    return V(op("stablehlo.complex", [re.v, (-im).v], x.type), x.shape, x.dtype)


def _wrap(eqn, values) -> list[V]:
    return [V(v, a.aval.shape, a.aval.dtype) for v, a in zip(values, eqn.inputs)]


# == cholesky ====================================================================================

@register("cholesky")
def _cholesky(ctx, eqn, x_):
    (x,) = _wrap(eqn, [x_])
    *batch, n, _ = x.shape
    if x.shape and min(x.shape) == 0:
        return x.v
    target = _lapack(ctx, x.dtype, "potrf")
    if target is not None:
        out, info = custom_call(target, [x], [True], [(x.shape, x.dtype, True), (tuple(batch), np.int32, False)],
                                {"uplo": "L"})
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
    (x,) = _wrap(eqn, [x_])
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    if min(x.shape) == 0:
        return [x.v, iota((*batch, k), -1).v, iota((*batch, m), -1).v]
    target = _lapack(ctx, x.dtype, "getrf")
    if target is not None:
        lu, ipiv, _info = custom_call(target, [x], [True],
                                      [(x.shape, x.dtype, True), ((*batch, k), np.int32, False),
                                       (batch, np.int32, False)], {})
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
    real = _real_dtype(x.dtype)

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
    a, b = _wrap(eqn, [a_, b_])
    p = eqn.params
    if min(a.shape) == 0 or min(b.shape) == 0:
        return b.v
    target = _lapack(ctx, a.dtype, "trsm")
    if target is not None:
        transpose_a, conjugate_a = p["transpose_a"], p["conjugate_a"] and a.dtype.kind == "c"
        if conjugate_a and not transpose_a:
            a, conjugate_a = _conj(a), False
        trans = ("C" if conjugate_a else "T") if transpose_a else "N"
        (out,) = custom_call(target, [a, b], [True, True],
                             [(b.shape, b.dtype, True)],
                             {"side": "L" if p["left_side"] else "R", "uplo": "L" if p["lower"] else "U",
                              "trans_x": trans, "diag": "U" if p["unit_diagonal"] else "N"})
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
    (x,) = _wrap(eqn, [x_])
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
        a, tau = custom_call(geqrf, [x], [True], [(x.shape, x.dtype, True), ((*batch, k), x.dtype, False)], {})
        if kq > n:  # complete Q of a tall matrix: orgqr on the reflectors padded with zero columns
            q_in = concat([a, full(0, (*batch, m, kq - n), x.dtype)], -1)
        elif kq < n:
            q_in = slice_(a, [0] * (len(batch) + 2), [*batch, m, kq])
        else:
            q_in = a
        (q,) = custom_call(orgqr, [q_in, tau], [True, False], [(q_in.shape, x.dtype, True)], {})
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
    (x,) = _wrap(eqn, [x_])
    lower = eqn.params["lower"]
    *batch, n, _ = x.shape
    batch = tuple(batch)
    real = _real_dtype(x.dtype)
    if min(x.shape) == 0:
        return [x.v, full(0, (*batch, n), real).v]
    target = _lapack(ctx, x.dtype, "syevd", "heevd")
    if target is not None:
        v, w, info = custom_call(target, [x], [True],
                                 [(x.shape, x.dtype, True), ((*batch, n), real, False), (batch, np.int32, False)],
                                 {"uplo": "L" if lower else "U", "mode": "V"})
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
    (x,) = _wrap(eqn, [x_])
    full_matrices, compute_uv = eqn.params["full_matrices"], eqn.params["compute_uv"]
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    real = _real_dtype(x.dtype)
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
             (vt_shape, x.dtype, True), (batch, np.int32, False)], {"mode": mode})
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
