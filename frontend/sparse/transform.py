"""``sparsify``: run a function written for dense arrays on BCOO arrays (``jax.experimental.sparse.sparsify``).

``sparsify(f)(*args)`` traces ``f`` to kiln IR with the *dense* types of its arguments (a BCOO of shape ``s`` and
dtype ``d`` stands for a dense ``d[s]``), then evaluates that IR with an interpreter in which every value is either
dense (an array or tracer: the equation's primitive is applied as usual) or a BCOO array (the primitive's sparse
rule, from :data:`sparse_rules`, computes a BCOO or dense result from the stored entries). The interpreter applies
primitives through kiln's ``bind``, so it runs eagerly or records into the active trace: ``kiln.jit``,
``kiln.grad`` and ``kiln.vmap`` of a sparsified function work.

Control flow whose operands include BCOO values (a ``while_loop`` closing over a sparse matrix, as
``kiln.scipy.optimize.minimize`` does) is rebuilt with ``kiln.lax.while_loop``/``scan``/``switch`` around the body
IR evaluated by the same interpreter; the BCOO operands enter the new loop as their ``(data, indices)`` leaves.
Calls (``jit``, custom derivatives, ``custom_linear_solve``) with a sparse operand are inlined.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..ad.remat import remat_p
from ..control.cond import cond_p, switch
from ..control.loops import while_loop, while_p
from ..control.scan import scan, scan_p
from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.errors import KilnError
from ..core.ir import IR, Literal, Var
from ..core.primitive import registry
from ..core.source_info import at as _at
from ..core.tracing import abstractify, materialize, trace_to_ir
from ..lax import elementwise as _ew
from ..lax.convolution import conv_general_dilated_p
from ..lax.indexing import gather_p
from ..lax.reduction import dot_general_p, reduce_prims
from ..lax.structural import (
    broadcast_in_dim_p,
    concatenate_p,
    dynamic_slice_p,
    reshape_p,
    rev_p,
    slice_p,
    transpose_p,
)
from .bcoo import (
    BCOO,
    TODENSE_CALL,
    _in_range,
    bcoo_dot_general,
    bcoo_multiply_dense,
    bcoo_reduce_sum,
    bcoo_sum_duplicates,
    bcoo_transpose,
    todense,
)
from .conv import bcoo_conv_general_dilated
from .gather import bcoo_gather
from .products import bcoo_multiply_sparse, bcoo_spdot_general

__all__ = ["sparsify", "sparse_rules"]

# Elementwise primitives with f(0) == 0 (JAX's list, in kiln's primitive names). The nonlinear ones need unique
# indices (f(a) + f(b) != f(a + b)); the linear ones apply to duplicate entries as they are.
_ZERO_PRESERVING = ("abs", "asin", "asinh", "atan", "atanh", "expm1", "log1p", "sign", "sin", "sinh", "sqrt",
                    "square", "tan", "tanh", "convert_element_type")
_ZERO_PRESERVING_LINEAR = ("neg", "real", "imag", "conj", "stop_gradient")
# Primitives whose sparse rule is missing on purpose: their result would be dense (f(0) != 0).
_DENSIFYING = ("acos", "acosh", "cos", "cosh", "exp", "log", "logistic", "eq", "ne", "lt", "le", "gt", "ge", "xor",
               "rsqrt", "not")

_mul_p, _div_p = _ew.binary_prims["mul"], _ew.binary_prims["div"]
_add_p, _sub_p = _ew.binary_prims["add"], _ew.binary_prims["sub"]


class SparsifyError(KilnError, NotImplementedError):
    """A primitive met a BCOO operand inside ``sparsify`` and has no sparse rule for it."""


def _unimplemented(eqn: Any) -> SparsifyError:
    prim = eqn.prim
    where = f" (at {eqn.source.short()})" if eqn.source is not None else ""
    if prim.name in _DENSIFYING:
        why = (f"sparse rule for {prim} is not implemented because it would result in dense output{where}. If this "
               "is your intent, convert the sparse operand to a dense array with sparse.todense(x) (or M.todense() "
               "before calling the sparsified function)")
    else:
        why = (f"sparse rule for {prim} is not implemented{where}: kiln.experimental.sparse.sparsify has no rule for "
               f"{prim} with a BCOO operand; convert the operand to a dense array with sparse.todense(x) "
               "(or M.todense() before calling the sparsified function), or sparsify a smaller function")
    return SparsifyError(why)


# --- the interpreter -------------------------------------------------------------------------------

def _is_sparse(x: Any) -> bool:
    return isinstance(x, BCOO)


def eval_sparse(ir: IR, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluate ``ir`` on ``args`` (dense values or BCOO arrays): dense equations are applied with ``bind``,
    equations with a BCOO operand by their sparse rule."""
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    env.update(zip(ir.invars, args))
    # Outputs of broadcast_in_dim, with their operand: the rules of elementwise products and sums use the operand
    # shaped to broadcast NumPy-style (``2 * M`` need not gather a dense array of 2s).
    compact: dict[Var, tuple] = {}

    def read(a: Any) -> Any:
        return a if isinstance(a, Literal) else env[a]

    for eqn in ir.eqns:
        invals = [read(a) for a in eqn.inputs]
        if any(_is_sparse(v) for v in invals):
            rule = sparse_rules.get(eqn.prim)
            if rule is None:
                raise _unimplemented(eqn)
            if eqn.prim in _TAKES_COMPACT:
                invals = [_compact_broadcast(*compact[a]) if isinstance(a, Var) and a in compact else v
                          for a, v in zip(eqn.inputs, invals)]
            invals = [v if _is_sparse(v) else materialize(v) for v in invals]
            try:
                with _at(eqn.source):
                    outs = rule(*invals, **eqn.params)
            except SparsifyError as e:
                if eqn.source is None or "(at " in str(e):
                    raise
                raise SparsifyError(f"{e} (at {eqn.source.short()})") from None
            _check_outputs(eqn, outs)
        else:
            with _at(eqn.source):
                outs = eqn.prim.bind(*invals, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            if eqn.prim is broadcast_in_dim_p and _in_order(eqn.params["broadcast_dimensions"]):
                compact[eqn.outputs[0]] = (invals[0], eqn.params["shape"], eqn.params["broadcast_dimensions"])
        env.update(zip(eqn.outputs, outs))
    return [read(a) if isinstance(a, Var) else materialize(a) for a in ir.outvars]


def _in_order(dims: Sequence[int]) -> bool:
    return list(dims) == sorted(set(dims))


def _compact_broadcast(x: Any, shape: tuple, dims: tuple) -> Any:
    """``x`` reshaped so that NumPy broadcasting gives ``broadcast_in_dim(x, shape, dims)`` (``dims`` in order)."""
    x = materialize(x)
    if not dims:
        return x
    sizes = [1] * len(shape)
    for d, n in zip(dims, abstractify(x).shape):
        sizes[d] = n
    return jnp.reshape(x, tuple(sizes))


def _check_outputs(eqn: Any, outs: Sequence[Any]) -> None:
    for var, out in zip(eqn.outputs, outs):
        shape = out.shape if _is_sparse(out) else abstractify(out).shape
        if tuple(shape) != var.aval.shape:
            raise AssertionError(f"kiln internal error: the sparse rule for {eqn.prim} returned shape {tuple(shape)}, "
                                 f"the dense computation has {var.aval.shape}")


# --- the rules -------------------------------------------------------------------------------------

sparse_rules: dict[Any, Callable[..., list]] = {}


def _rebuild(mat: BCOO, data: Any) -> BCOO:
    """``mat``'s entries (the same ``indices`` object, so that later rules see them as the same) with new data."""
    return BCOO((data, mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def _unique(mat: BCOO) -> BCOO:
    """``mat`` with duplicate indices summed (same nse), so that a nonlinear elementwise map is exact."""
    return mat if mat.unique_indices else bcoo_sum_duplicates(mat, nse=mat.nse)


def _unary(prim: Any, linear: bool) -> Callable[..., list]:
    def rule(x: BCOO, **params: Any) -> list:
        if not linear:
            x = _unique(x)
        return [_rebuild(x, prim.bind(x.data, **params))]
    return rule


for _name in _ZERO_PRESERVING + _ZERO_PRESERVING_LINEAR:
    _p = registry[_name]
    sparse_rules[_p] = _unary(_p, linear=_name in _ZERO_PRESERVING_LINEAR)


def _integer_pow(x: BCOO, *, y: int) -> list:
    if y <= 0:  # 0 ** y is 1 or inf: a dense result
        raise SparsifyError(f"sparsify: x ** {y} of a sparse array would be dense (0 ** {y} is not 0); take it of "
                            "x.todense(), or of x.data for the stored entries only")
    return _unary(registry["integer_pow"], linear=False)(x, y=y)


sparse_rules[registry["integer_pow"]] = _integer_pow


def _dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any, preferred_element_type: Any) -> list:
    if _is_sparse(lhs) and _is_sparse(rhs):
        out = bcoo_spdot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                                 preferred_element_type=preferred_element_type)
        return [out.todense() if out.ndim == 0 else out]  # a full contraction: a dense scalar
    return [bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                             preferred_element_type=preferred_element_type)]


def _conv_general_dilated(lhs: Any, rhs: Any, **params: Any) -> list:
    """A convolution with a BCOO operand: ``bcoo_conv_general_dilated`` (JAX's rule; 1-D, unit strides)."""
    return [bcoo_conv_general_dilated(lhs, rhs, **params)]


def _transpose(x: BCOO, *, permutation: tuple) -> list:
    return [bcoo_transpose(x, permutation=permutation)]


def _reduce_sum(x: BCOO, *, axes: tuple) -> list:
    out = bcoo_reduce_sum(x, axes=axes)
    return [out.todense() if out.ndim == 0 else out]


def _same_entries(x: BCOO, y: BCOO) -> bool:
    return x.indices is y.indices and x.shape == y.shape


def _mul(x: Any, y: Any) -> list:
    if _is_sparse(x) and _is_sparse(y):
        if not _same_entries(x, y):
            if not (x.n_batch or y.n_batch or x.n_dense or y.n_dense):
                return [bcoo_multiply_sparse(x, y)]
            # With batch or dense axes: keep the entries of the operand with fewer, read the other densely.
            sp, de = (x, y) if x.nse <= y.nse else (y, x)
            return [_rebuild(sp, bcoo_multiply_dense(sp, de.todense()))]
        if not x.unique_indices:
            x, y = _unique(x), _unique(y)
        return [_rebuild(x, _mul_p.bind(x.data, y.data))]
    sp, de, left = (x, y, True) if _is_sparse(x) else (y, x, False)
    if abstractify(de).ndim == 0:  # a scalar (broadcast by the dense computation): keep the operand order
        de = jnp.broadcast_to(de, sp.data.shape)
        return [_rebuild(sp, _mul_p.bind(sp.data, de) if left else _mul_p.bind(de, sp.data))]
    return [_rebuild(sp, bcoo_multiply_dense(sp, de))]


def _values_at(mat: BCOO, v: Any) -> Any:
    """The entries of the dense ``v`` (broadcastable to ``mat.shape``) at ``mat``'s stored positions, shaped like
    ``mat.data``; 1 at padding entries."""
    v = jnp.asarray(v)
    if v.ndim == 0:
        return jnp.broadcast_to(v, mat.data.shape)
    got = bcoo_multiply_dense(_rebuild(mat, jnp.ones(mat.data.shape, mat.data.dtype)), v)
    mask = _in_range(mat).reshape(tuple(mat.indices.shape[:-1]) + (1,) * mat.n_dense)
    return jnp.where(mask, got, jnp.ones((), got.dtype))


def _div(x: Any, y: Any) -> list:
    if _is_sparse(y):
        raise SparsifyError("sparse rule for div by a sparse array is not implemented because it would result in "
                            "dense output (x / 0 is not 0); if this is your intent, convert the divisor to a dense "
                            "array with sparse.todense(x)")
    return [_rebuild(x, _div_p.bind(x.data, _values_at(x, y)))]


def _add(x: Any, y: Any, *, prim: Any = _add_p) -> list:
    if _is_sparse(x) and _is_sparse(y):
        if _same_entries(x, y):
            return [_rebuild(x, prim.bind(x.data, y.data))]
        if x.n_batch != y.n_batch or x.n_dense != y.n_dense:
            raise SparsifyError(f"sparse rule for {prim} of two BCOO arrays with different batch/dense dimensions "
                                f"(n_batch {x.n_batch} and {y.n_batch}, n_dense {x.n_dense} and {y.n_dense}) is not "
                                "implemented; convert one operand to a dense array with sparse.todense(x)")
        if prim is _sub_p:
            y = _rebuild(y, _ew.unary_prims["neg"].bind(y.data))
        nb = x.n_batch
        data = jnp.concatenate([x.data, y.data], axis=nb)
        indices = jnp.concatenate([x.indices, y.indices.astype(x.indices.dtype)], axis=nb)
        return [BCOO((data, indices), shape=x.shape)]
    # sparse + dense: the result is dense, as in JAX (the sum has a nonzero wherever the dense operand has one).
    shape = x.shape if _is_sparse(x) else y.shape
    # (JAX raises for a scalar operand, to avoid densifying silently; kiln's IR broadcasts scalars explicitly, as
    # jnp.ones does, so the two cases look alike here and kiln computes both.)
    x, y = (jnp.broadcast_to(v.todense() if _is_sparse(v) else v, shape) for v in (x, y))
    return [prim.bind(x, y)]


# --- structural rules: the sparse dimensions move by index arithmetic; an entry that falls outside the result is
# given an out-of-range index (as padding), which every BCOO operation drops.

def _with_index(indices: Any, j: int, col: Any) -> Any:
    """``indices`` with sparse dimension ``j`` replaced by ``col``."""
    cols = [col if k == j else indices[..., k] for k in range(indices.shape[-1])]
    return jnp.stack([c.astype(indices.dtype) for c in cols], axis=-1)


def _slice(x: BCOO, *, start_indices: tuple, limit_indices: tuple, strides: Any) -> list:
    strides = tuple(strides) if strides is not None else (1,) * x.ndim
    nb, ns = x.n_batch, x.n_sparse
    data, indices = x.data, x.indices
    shape = []
    for d, (lo, hi, st) in enumerate(zip(start_indices, limit_indices, strides)):
        n = len(range(lo, hi, st))
        shape.append(n)
        if (lo, hi, st) == (0, x.shape[d], 1):
            continue
        if d < nb or d >= nb + ns:  # a batch or dense axis: slice the arrays that hold it
            axis = d if d < nb else d - ns + 1
            data = _slice_axis(data, axis, lo, hi, st)
            if d < nb:
                indices = _slice_axis(indices, axis, lo, hi, st)
            continue
        j = d - nb
        i = indices[..., j]
        keep = (i >= lo) & (i < hi) & ((i - lo) % st == 0)
        indices = _with_index(indices, j, jnp.where(keep, (i - lo) // st, n))
    return [BCOO((data, indices), shape=tuple(shape), unique_indices=x.unique_indices)]


def _slice_axis(a: Any, axis: int, lo: int, hi: int, st: int) -> Any:
    index = [slice(None)] * a.ndim
    index[axis] = slice(lo, hi, st)
    return a[tuple(index)]


def _dynamic_slice(x: BCOO, *starts: Any, slice_sizes: tuple) -> list:
    if any(_is_sparse(s) for s in starts):
        raise SparsifyError("sparse rule for dynamic_slice with BCOO start indices is not implemented; pass them "
                            "dense")
    nb, ns = x.n_batch, x.n_sparse
    data, indices = x.data, x.indices
    for d, (start, size) in enumerate(zip(starts, slice_sizes)):
        n = x.shape[d]
        if size == n:
            continue
        start = jnp.clip(jnp.asarray(start), 0, n - size)  # XLA's clamping: the window stays inside
        if d < nb or d >= nb + ns:
            axis = d if d < nb else d - ns + 1
            data = lax.dynamic_slice_in_dim(data, start, size, axis)
            if d < nb:
                indices = lax.dynamic_slice_in_dim(indices, start, size, axis)
            continue
        j = d - nb
        i = indices[..., j]
        start = start.astype(i.dtype)
        keep = (i >= start) & (i < start + size)
        indices = _with_index(indices, j, jnp.where(keep, i - start, size))
    return [BCOO((data, indices), shape=tuple(slice_sizes), unique_indices=x.unique_indices)]


def _broadcast_in_dim(x: BCOO, *, shape: tuple, broadcast_dimensions: tuple) -> list:
    """New leading axes become batch axes (each batch element holds the same entries, as in JAX), new trailing axes
    dense axes; batch and dense axes of size 1 broadcast."""
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    lead = dims[0] if dims else len(shape)
    trail = len(shape) - lead - x.ndim
    nb, ns = x.n_batch, x.n_sparse
    if dims != tuple(range(lead, lead + x.ndim)) or shape[lead + nb:lead + nb + ns] != x.shape[nb:nb + ns]:
        raise SparsifyError(f"sparse rule for broadcast_in_dim of a BCOO of shape {x.shape} to {shape} "
                            f"(broadcast_dimensions={dims}) is implemented only for new leading or trailing axes and "
                            "batch or dense axes of size 1; convert the operand to a dense array with "
                            "sparse.todense(x)")
    batch, dense = shape[:lead + nb], shape[lead + nb + ns:]
    data = x.data.reshape(tuple(x.data.shape) + (1,) * trail)
    data = jnp.broadcast_to(data, batch + (x.nse,) + dense)
    indices = jnp.broadcast_to(x.indices, batch + (x.nse, ns))
    return [BCOO((data, indices), shape=shape, indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)]


def _gather(x: BCOO, idx: Any, *, dimension_numbers: Any, slice_sizes: tuple, **params: Any) -> list:
    """``take`` along one axis (``M[i]``, ``M[:, i]`` with an index array): along a batch or dense axis the arrays
    that hold it are gathered; along a sparse axis each entry is matched against every index (``nse`` grows by the
    number of indices; unmatched copies become padding). Other gathers are ``bcoo_gather``'s."""
    if _is_sparse(idx):
        raise SparsifyError("sparse rule for gather with BCOO indices is not implemented; pass the indices dense")
    dn = dimension_numbers
    n_idx = abstractify(idx).ndim - 1
    axis = dn.start_index_map[0] if len(dn.start_index_map) == 1 else None
    rank = n_idx + x.ndim - 1
    if (axis is None or tuple(dn.collapsed_slice_dims) != (axis,) or dn.operand_batching_dims
            or abstractify(idx).shape[-1] != 1
            or any(s != (1 if d == axis else x.shape[d]) for d, s in enumerate(slice_sizes))
            or tuple(dn.offset_dims) != tuple(d for d in range(rank) if not axis <= d < axis + n_idx)):
        # Any other gather: one dynamic slice of the stored entries per index vector (JAX's rule)
        return [bcoo_gather(x, idx, dn, slice_sizes, **params)]
    nb, ns = x.n_batch, x.n_sparse
    n = x.shape[axis]
    take = jnp.clip(idx[..., 0], 0, n - 1)  # XLA's gather clamps
    shape = x.shape[:axis] + tuple(take.shape) + x.shape[axis + 1:]
    if axis < nb or axis >= nb + ns:
        data_axis = axis if axis < nb else axis - ns + 1
        data = jnp.take(x.data, take, axis=data_axis)
        indices = jnp.take(x.indices, take, axis=axis) if axis < nb else x.indices
        return [BCOO((data, indices), shape=shape, indices_sorted=x.indices_sorted,
                     unique_indices=x.unique_indices)]
    sizes = tuple(take.shape)
    k = int(np.prod(sizes))
    j = axis - nb
    col = x.indices[..., j]  # batch + (nse,)
    hit = col[..., None] == take.reshape(-1).astype(col.dtype)  # batch + (nse, k)
    pos = jnp.where(hit, jnp.arange(k, dtype=col.dtype), k).reshape(tuple(col.shape[:-1]) + (x.nse * k,))
    data = jnp.repeat(x.data, k, axis=nb)
    # Unmatched copies also get zero data (with a 0-d index array the sparse axis goes away, and its index with it).
    data = jnp.where((pos < k).reshape(tuple(pos.shape) + (1,) * x.n_dense), data, jnp.zeros((), data.dtype))
    repeated = jnp.repeat(x.indices, k, axis=nb)
    # The position among the k indices, unravelled into the index array's dimensions (k: padding).
    cols, rest = [], pos
    for size in sizes[::-1]:
        cols.append(jnp.where(pos < k, rest % size, size))
        rest = rest // size
    cols = [repeated[..., c] for c in range(j)] + cols[::-1] + [repeated[..., c] for c in range(j + 1, ns)]
    indices = jnp.stack([c.astype(x.indices.dtype) for c in cols], axis=-1)
    return [BCOO((data, indices), shape=shape)]


def _rev(x: BCOO, *, dimensions: tuple) -> list:
    nb, ns = x.n_batch, x.n_sparse
    data, indices = x.data, x.indices
    for d in dimensions:
        if d < nb or d >= nb + ns:
            axis = d if d < nb else d - ns + 1
            data = jnp.flip(data, axis)
            if d < nb:
                indices = jnp.flip(indices, axis)
            continue
        j, n = d - nb, x.shape[d]
        i = indices[..., j]
        indices = _with_index(indices, j, jnp.where((i >= 0) & (i < n), n - 1 - i, n))
    return [BCOO((data, indices), shape=x.shape, unique_indices=x.unique_indices)]


def _reshape(x: BCOO, *, new_sizes: tuple, **params: Any) -> list:
    new_sizes = tuple(new_sizes)
    if not new_sizes or 0 in new_sizes or 0 in x.shape:
        return [jnp.reshape(x.todense(), new_sizes)]
    if [n for n in x.shape if n != 1] == [n for n in new_sizes if n != 1]:
        return [_squeeze_expand(x, new_sizes)]
    if x.n_batch or x.n_dense:
        raise SparsifyError(f"sparse rule for reshape of a BCOO with batch or dense dimensions (n_batch={x.n_batch}, "
                            f"n_dense={x.n_dense}) is implemented only for adding or removing axes of size 1 "
                            f"(got shape {x.shape} to {new_sizes}); build the array with n_batch=0 and n_dense=0, or "
                            "convert it to a dense array with sparse.todense(x)")
    flat = _flat_index(x)
    size = int(np.prod(x.shape))
    ok = (flat >= 0) & (flat < size)
    cols, rest = [], flat
    for n in new_sizes[::-1]:
        cols.append(rest % n)
        rest = rest // n
    cols = [jnp.where(ok, c, n) for c, n in zip(cols[::-1], new_sizes)]
    indices = jnp.stack([c.astype(x.indices.dtype) for c in cols], axis=-1)
    return [BCOO((x.data, indices), shape=new_sizes, indices_sorted=x.indices_sorted,
                 unique_indices=x.unique_indices)]


def _squeeze_expand(x: BCOO, new_sizes: tuple) -> BCOO:
    """A reshape that only removes and inserts axes of size 1 (``squeeze``, ``x[None]``): the other axes keep their
    kind (batch, sparse, dense); an inserted axis takes the kind of the axis before it (the first kept axis's
    kind when it leads)."""
    nb, ns = x.n_batch, x.n_sparse
    kinds = [0] * nb + [1] * ns + [2] * (x.ndim - nb - ns)
    kept = [d for d, n in enumerate(x.shape) if n != 1]
    new_kinds, it = [], iter(kept)
    for n in new_sizes:
        new_kinds.append(kinds[next(it)] if n != 1 else None)
    first = next((k for k in new_kinds if k is not None), 1)
    for i, k in enumerate(new_kinds):
        if k is None:
            new_kinds[i] = new_kinds[i - 1] if i else min(first, 1 if not nb else 0)
    data, indices = x.data, x.indices
    # Sparse axes of size 1 that go away: an entry with a nonzero index there is padding, zero it.
    gone = [d - nb for d in range(nb, nb + ns) if x.shape[d] == 1]
    if gone:
        bad = functools.reduce(lambda a, b: a | b, [indices[..., j] != 0 for j in gone])
        bad = bad.reshape(tuple(bad.shape) + (1,) * x.n_dense)
        data = jnp.where(bad, jnp.zeros((), data.dtype), data)
    cols = [indices[..., j] for j in range(ns) if x.shape[nb + j] != 1]
    new_cols, it = [], iter(cols)
    zero = jnp.zeros(indices.shape[:-1], indices.dtype)
    for n, k in zip(new_sizes, new_kinds):
        if k == 1:
            new_cols.append(next(it) if n != 1 else zero)
    batch = tuple(n for n, k in zip(new_sizes, new_kinds) if k == 0)
    dense = tuple(n for n, k in zip(new_sizes, new_kinds) if k == 2)
    data = data.reshape(batch + (x.nse,) + dense)
    indices = jnp.stack(new_cols, axis=-1) if new_cols else jnp.zeros(indices.shape[:-1] + (0,), indices.dtype)
    indices = indices.reshape(batch + (x.nse, len(new_cols)))
    return BCOO((data, indices), shape=new_sizes, indices_sorted=x.indices_sorted and not gone,
                unique_indices=x.unique_indices and not gone)


def _flat_index(x: BCOO) -> Any:
    """Each entry's position in the row-major flattening of ``x`` (an unbatched BCOO without dense axes); -1 for
    padding entries."""
    dtype = np.int64 if int(np.prod(x.shape)) > np.iinfo(np.int32).max else x.indices.dtype
    flat = jnp.zeros(x.indices.shape[:-1], dtype)
    for k, n in enumerate(x.shape):
        flat = flat * n + x.indices[..., k].astype(dtype)
    return jnp.where(_in_range(x), flat, -1)


def _concatenate(*xs: Any, dimension: int) -> list:
    if not all(_is_sparse(x) for x in xs):
        raise SparsifyError("sparse rule for concatenate of BCOO and dense arrays is not implemented; convert the "
                            "dense operands with sparse.BCOO.fromdense or the sparse ones with sparse.todense(x)")
    x0 = xs[0]
    nb, ns = x0.n_batch, x0.n_sparse
    if any(x.n_batch != nb or x.n_dense != x0.n_dense for x in xs) or not nb <= dimension < nb + ns:
        raise SparsifyError(f"sparse rule for concatenate is implemented along a sparse dimension of BCOO arrays "
                            f"with equal n_batch and n_dense only (dimension {dimension}, n_batch "
                            f"{[x.n_batch for x in xs]}, n_dense {[x.n_dense for x in xs]}); convert the operands "
                            "with sparse.todense(x)")
    j, total = dimension - nb, sum(x.shape[dimension] for x in xs)
    datas, indices, offset = [], [], 0
    for x in xs:
        col = jnp.where(_in_range(x), x.indices[..., j] + offset, total)
        indices.append(_with_index(x.indices, j, col).astype(x0.indices.dtype))
        datas.append(x.data)
        offset += x.shape[dimension]
    shape = x0.shape[:dimension] + (total,) + x0.shape[dimension + 1:]
    return [BCOO((jnp.concatenate(datas, axis=nb), jnp.concatenate(indices, axis=nb)), shape=shape)]


sparse_rules.update({
    dot_general_p: _dot_general,
    conv_general_dilated_p: _conv_general_dilated,
    transpose_p: _transpose,
    reduce_prims["reduce_sum"]: _reduce_sum,
    slice_p: _slice,
    rev_p: _rev,
    gather_p: _gather,
    broadcast_in_dim_p: _broadcast_in_dim,
    dynamic_slice_p: _dynamic_slice,
    reshape_p: _reshape,
    concatenate_p: _concatenate,
    _mul_p: _mul,
    _div_p: _div,
    _add_p: _add,
    _sub_p: functools.partial(_add, prim=_sub_p),
})
_TAKES_COMPACT = frozenset({_mul_p, _div_p, _add_p, _sub_p})


# --- calls and control flow ------------------------------------------------------------------------

def _inline(param: str) -> Callable[..., list]:
    """Calls (``jit_call``, custom derivatives, ...) with a sparse operand: their body, evaluated in place. (With a
    BCOO operand a custom derivative rule does not apply; kiln differentiates the body.)"""
    def rule(*args: Any, **params: Any) -> list:
        if params.get("name") == TODENSE_CALL:  # sparse.todense(x) inside the sparsified function
            return [todense(args[0])]
        body = params[param]
        return eval_sparse(body.ir, body.consts, args)
    return rule


for _p in registry.values():
    if _p.inline_param is not None:
        sparse_rules[_p] = _inline(_p.inline_param)
sparse_rules[remat_p] = _inline("body")


def _while(*args: Any, cond: Any, body: Any, cond_nconsts: int, body_nconsts: int) -> list:
    cond_consts, body_consts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])

    def cond_fun(val: list) -> Any:
        (pred,) = eval_sparse(cond.ir, cond.consts, [*cond_consts, *val])
        return pred.todense() if _is_sparse(pred) else pred

    def body_fun(val: list) -> list:
        return eval_sparse(body.ir, body.consts, [*body_consts, *val])
    return list(while_loop(cond_fun, body_fun, carry))


def _scan(*args: Any, body: Any, num_consts: int, num_carry: int, length: int, reverse: bool, unroll: int) -> list:
    consts, carry, xs = args[:num_consts], list(args[num_consts:num_consts + num_carry]), \
        list(args[num_consts + num_carry:])
    if any(_is_sparse(x) for x in xs):
        raise SparsifyError("sparse rule for scan over a BCOO array (a sparse xs) is not implemented; pass it as a "
                            "closed-over value or carry, or convert it to a dense array with sparse.todense(x)")

    def step(c: list, x: list) -> tuple:
        outs = eval_sparse(body.ir, body.consts, [*consts, *c, *x])
        ys = outs[num_carry:]
        if any(_is_sparse(y) for y in ys):
            raise SparsifyError("sparse rule for scan whose per-step outputs (ys) are BCOO arrays is not implemented; "
                                "return them dense (sparse.todense(y)) or carry them")
        return outs[:num_carry], ys
    out_carry, ys = scan(step, carry, xs, length=length, reverse=reverse, unroll=unroll)
    return list(out_carry) + list(ys)


def _cond(index: Any, *ops: Any, branches: tuple) -> list:
    def branch(b: Any) -> Callable:
        return lambda *o: eval_sparse(b.ir, b.consts, o)
    return list(switch(index, [branch(b) for b in branches], *ops))


sparse_rules.update({while_p: _while, scan_p: _scan, cond_p: _cond})


# --- the transformation ----------------------------------------------------------------------------

def _distinct_entries(leaves: list) -> list:
    """``leaves`` where no two sparse arguments share an ``indices`` object.

    The rules treat operands with the same ``indices`` object as having the same entries (``x + x`` adds the data
    and keeps ``nse``); that must come from the function's own dataflow, as in JAX, where every argument is a
    separate sparse value: ``A + A`` (one object passed twice) stores both sets of entries eagerly as under ``jit``,
    where the two arguments are different tracers."""
    seen: set[int] = set()
    out = []
    for x in leaves:
        if _is_sparse(x):
            if id(x.indices) in seen:  # an identity op: a new array object with the same values
                x = BCOO((x.data, lax.optimization_barrier(x.indices)), shape=x.shape,
                         indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)
            seen.add(id(x.indices))
        out.append(x)
    return out


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """``f`` made to accept BCOO arrays (as ``jax.experimental.sparse.sparsify``).

    The returned function takes the arguments of ``f`` (any pytrees of dense arrays and BCOO arrays; keyword
    arguments are passed to ``f`` unchanged) and computes what ``f`` computes on the dense equivalents, working on
    the stored entries of the sparse ones: products with ``@``/``dot``/``einsum`` (one sparse operand), elementwise
    products and quotients by dense values or scalars, sums of two sparse arrays (their entries concatenated),
    zero-preserving elementwise functions (``abs``, ``sin``, ``sqrt``, ``log1p``, ``tanh``, ...), ``sum``,
    transposes, casts, slicing and indexing, ``flip``, ``reshape``, ``broadcast_to``, ``concatenate``, and
    ``while_loop``/``scan``/``cond``/``jit`` bodies using them. A sparse plus a dense array is
    dense (as in JAX). Results are BCOO where the computation keeps sparsity, dense otherwise. A primitive without a
    sparse rule raises ``NotImplementedError: sparse rule for <primitive> is not implemented``.

    ``use_tracer``: accepted for JAX compatibility; kiln always uses the interpreter.

    >>> @sparsify
    ... def f(M, v):
    ...     return 2 * M.T @ v
    >>> f(BCOO.fromdense(jnp.arange(12).reshape(3, 4)), jnp.array([3, 4, 2]))
    Array([ 64,  82, 100, 118], dtype=int32)
    """
    if not callable(f):
        raise TypeError(f"sparsify: expected a function, got {type(f).__name__}")
    del use_tracer

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tree_util.tree_flatten(args, is_leaf=_is_sparse)
        if not any(_is_sparse(x) for x in leaves):
            return f(*args, **kwargs)  # nothing sparse: f itself
        leaves = _distinct_entries(leaves)
        avals = [ShapedArray(x.shape, np.dtype(x.dtype), False) if _is_sparse(x) else abstractify(x) for x in leaves]
        out_tree: list = []

        def flat(*tracers: Any) -> list:
            out = f(*tree_util.tree_unflatten(in_tree, tracers), **kwargs)
            out_leaves, tree = tree_util.tree_flatten(out)
            out_tree.append(tree)
            return out_leaves
        closed, _ = trace_to_ir(flat, avals, name=getattr(f, "__name__", "the sparsified function"))
        outs = eval_sparse(closed.ir, closed.consts, leaves)
        return tree_util.tree_unflatten(out_tree[0], outs)
    return wrapped
