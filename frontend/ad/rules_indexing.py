"""Derivative rules of ``gather`` and the scatter family.

The primitives have XLA's out-of-bounds semantics: a gather clamps its start indices, a scatter drops
a window that is not entirely in bounds. The rules keep those semantics exact: the transpose of a
gather scatters into the clamped positions, the transpose of a scatter gathers only from windows the
scatter applied (the others get zero cotangents).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import indexing as ix
from ..lax.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
from .jvp import jvp_rules
from .tangents import Zero, add_tangents, instantiate
from .transpose import is_undefined, transpose_rules


def _aval(x):
    return x.aval if is_undefined(x) else abstractify(x)


def _zeros(aval):
    return lax.broadcast_in_dim(lax.literal(0, aval.dtype), aval.shape, ())


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes a gather's output windows back where the gather read them."""
    return ScatterDimensionNumbers(update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
                                   scatter_dims_to_operand_dims=dn.start_index_map,
                                   operand_batching_dims=dn.operand_batching_dims,
                                   scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather that reads, for every update element, the operand element it scatters to."""
    return GatherDimensionNumbers(offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
                                  start_index_map=dn.scatter_dims_to_operand_dims,
                                  operand_batching_dims=dn.operand_batching_dims,
                                  start_indices_batching_dims=dn.scatter_indices_batching_dims)


# -- gather ---------------------------------------------------------------------------------------
def _gather_jvp(primals, tangents, **params):
    (x, idx), (t, _) = primals, tangents
    return ix.gather_p.bind(x, idx, **params), ix.gather_p.bind(t, idx, **params)


def _gather_transpose(ct, x, idx, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices):
    if is_undefined(idx):
        raise TypeError("kiln: internal error: the indices of a gather cannot be linear")
    aval = x.aval
    zeros = _zeros(aval)
    if aval.size == 0 or abstractify(ct).size == 0:
        return [zeros, None]
    # The gather clamped its start indices; scatter to the same (clamped) places.
    idx = ix._clamp_indices(idx, aval.shape, dimension_numbers.start_index_map, slice_sizes)
    out = ix.scatter_add_p.bind(zeros, idx, ct, dimension_numbers=_scatter_dnums_of(dimension_numbers),
                                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return [out, None]


jvp_rules[ix.gather_p] = _gather_jvp
transpose_rules[ix.gather_p] = _gather_transpose


# -- helpers for the scatters --------------------------------------------------------------------------
def _window(op_aval, upd_aval, dn) -> tuple[int, ...]:
    return tuple(ix._scatter_windows(op_aval, upd_aval, dn))


def _at_updates(operand, idx, upd_aval, dn, indices_are_sorted, unique_indices):
    """For every update element, the element of ``operand`` it is scattered to (clamped when the window is
    out of bounds: combine with :func:`_applied`)."""
    op_aval = abstractify(operand)
    return ix.gather_p.bind(operand, idx, dimension_numbers=_gather_dnums_of(dn),
                            slice_sizes=_window(op_aval, upd_aval, dn), indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices)


def _applied(idx, op_aval, upd_aval, dn):
    """bool[updates shape]: whether the scatter applied each update element (its window is in bounds)."""
    mask = ix._in_bounds_mask(idx, op_aval.shape, dn.scatter_dims_to_operand_dims, _window(op_aval, upd_aval, dn))
    scatter_dims = tuple(d for d in range(upd_aval.ndim) if d not in dn.update_window_dims)
    return lax.broadcast_in_dim(mask, upd_aval.shape, scatter_dims)


def _gather_updates_ct(ct, idx, upd_aval, dn, indices_are_sorted, unique_indices):
    """The cotangent of a scatter's updates: ``ct`` at their positions, zero where the scatter dropped them."""
    ct_aval = abstractify(ct)
    if upd_aval.size == 0 or ct_aval.size == 0:
        return _zeros(upd_aval.update(dtype=ct_aval.dtype))
    g = _at_updates(ct, idx, upd_aval, dn, indices_are_sorted, unique_indices)
    return lax.select(_applied(idx, ct_aval, upd_aval, dn), g, _zeros(abstractify(g)))


# -- scatter_add (linear in operand and updates) ---------------------------------------------------------
def _scatter_add_jvp(primals, tangents, **params):
    (x, idx, u), (tx, _, tu) = primals, tangents
    out = ix.scatter_add_p.bind(x, idx, u, **params)
    return out, ix.scatter_add_p.bind(instantiate(tx), idx, instantiate(tu), **params)


def _scatter_add_transpose(ct, x, idx, u, *, dimension_numbers, indices_are_sorted, unique_indices):
    if is_undefined(idx):
        raise TypeError("kiln: internal error: the indices of a scatter cannot be linear")
    u_ct = None
    if is_undefined(u):
        u_ct = _gather_updates_ct(ct, idx, u.aval, dimension_numbers, indices_are_sorted, unique_indices)
    return [ct if is_undefined(x) else None, None, u_ct]


jvp_rules[ix.scatter_add_p] = _scatter_add_jvp
transpose_rules[ix.scatter_add_p] = _scatter_add_transpose


# -- scatter (overwrite) -----------------------------------------------------------------------------
def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices):
    (x, idx, u), (tx, _, tu) = primals, tangents
    dn = dimension_numbers
    params = dict(dimension_numbers=dn, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    if unique_indices:  # every operand element is written at most once: the tangents scatter the same way
        return (ix.scatter_p.bind(x, idx, u, **params),
                ix.scatter_p.bind(instantiate(tx), idx, instantiate(tu), **params))
    # With repeated indices, which update wins is up to XLA. Scatter update ids to find out, then
    # compute the primal and the tangent with the same winners (a scatter_add of masked values).
    op_aval, upd_aval = abstractify(x), abstractify(u)
    id_dtype = np.dtype(np.int32)
    scatter_dims = tuple(d for d in range(upd_aval.ndim) if d not in dn.update_window_dims)
    scatter_shape = tuple(upd_aval.shape[d] for d in scatter_dims)
    n = int(np.prod(scatter_shape, dtype=np.int64))
    ids = lax.add(lax.broadcasted_iota(id_dtype, (n,), 0), 1)
    ids = lax.broadcast_in_dim(lax.reshape(ids, scatter_shape), upd_aval.shape, scatter_dims)
    winners = ix.scatter_p.bind(_zeros(op_aval.update(dtype=id_dtype)), idx, ids, **params)
    won = lax.eq(_at_updates(winners, idx, upd_aval, dn, indices_are_sorted, unique_indices), ids)
    kept = lax.eq(winners, lax.broadcast_in_dim(lax.literal(0, id_dtype), op_aval.shape, ()))

    def combine(operand, updates):
        operand = lax.select(kept, operand, _zeros(abstractify(operand)))
        updates = lax.select(won, updates, _zeros(abstractify(updates)))
        return ix.scatter_add_p.bind(operand, idx, updates, **params)
    return combine(x, u), combine(instantiate(tx), instantiate(tu))


def _scatter_transpose(ct, x, idx, u, *, dimension_numbers, indices_are_sorted, unique_indices):
    if not unique_indices:
        raise TypeError("kiln: internal error: scatter is linear only with unique indices")
    if is_undefined(idx):
        raise TypeError("kiln: internal error: the indices of a scatter cannot be linear")
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices)
    u_aval = _aval(u)
    x_ct = None
    if is_undefined(x):  # the elements the scatter overwrote do not reach the output
        x_ct = ix.scatter_p.bind(ct, idx, _zeros(u_aval.update(dtype=abstractify(ct).dtype)), **params)
    u_ct = None
    if is_undefined(u):
        u_ct = _gather_updates_ct(ct, idx, u_aval, dimension_numbers, indices_are_sorted, unique_indices)
    return [x_ct, None, u_ct]


jvp_rules[ix.scatter_p] = _scatter_jvp
transpose_rules[ix.scatter_p] = _scatter_transpose


# -- scatter_mul ---------------------------------------------------------------------------------------
def _scatter_mul_jvp(primals, tangents, **params):
    (x, idx, u), (tx, _, tu) = primals, tangents
    out = ix.scatter_mul_p.bind(x, idx, u, **params)
    # Linear in the operand: its tangent is scaled by the same products.
    t = Zero(abstractify(out)) if isinstance(tx, Zero) else ix.scatter_mul_p.bind(tx, idx, u, **params)
    if not isinstance(tu, Zero):
        if not params["unique_indices"]:
            raise NotImplementedError(
                "kiln: the derivative of kiln.lax.scatter_mul with respect to its updates is only implemented "
                "for unique_indices=True (with repeated indices each update's derivative is the product of the "
                "others); pass unique_indices=True if the indices are unique, or differentiate with respect to "
                "the operand only")
        # x * u at each written element: d = x * du there.
        t = add_tangents(t, lax.mul(x, ix.scatter_add_p.bind(_zeros(abstractify(x)), idx, tu, **params)))
    return out, t


def _scatter_mul_transpose(ct, x, idx, u, **params):
    if is_undefined(u) or is_undefined(idx):
        raise TypeError("kiln: internal error: scatter_mul is linear in its operand only")
    return [ix.scatter_mul_p.bind(ct, idx, u, **params), None, None]


jvp_rules[ix.scatter_mul_p] = _scatter_mul_jvp
transpose_rules[ix.scatter_mul_p] = _scatter_mul_transpose


# -- scatter_min / scatter_max ----------------------------------------------------------------------------
def _scatter_extremum_jvp(prim):
    """The tangent of the winning value; where several values tie (operand and updates), their tangents are
    averaged (as ``reduce_max``'s rule)."""
    def rule(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices):
        (x, idx, u), (tx, _, tu) = primals, tangents
        dn = dimension_numbers
        params = dict(dimension_numbers=dn, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
        out = prim.bind(x, idx, u, **params)
        op_aval, upd_aval = abstractify(x), abstractify(u)
        dtype = op_aval.dtype
        x_wins = lax.convert_element_type(lax.eq(x, out), dtype)
        u_hits = lax.eq(u, _at_updates(out, idx, upd_aval, dn, indices_are_sorted, unique_indices))
        u_wins = lax.convert_element_type(lax.select(_applied(idx, op_aval, upd_aval, dn), u_hits,
                                                     _zeros(upd_aval.update(dtype=np.dtype(bool)))), dtype)
        count = ix.scatter_add_p.bind(x_wins, idx, u_wins, **params)
        one = lax.broadcast_in_dim(lax.literal(1, dtype), op_aval.shape, ())
        count = lax.select(lax.eq(count, _zeros(op_aval)), one, count)  # NaN results: no winner
        t = Zero(abstractify(out)) if isinstance(tx, Zero) else lax.mul(tx, x_wins)
        if not isinstance(tu, Zero):
            t = add_tangents(t, ix.scatter_add_p.bind(_zeros(op_aval), idx, lax.mul(tu, u_wins), **params))
        return out, lax.div(t, count)
    return rule


jvp_rules[ix.scatter_min_p] = _scatter_extremum_jvp(ix.scatter_min_p)
jvp_rules[ix.scatter_max_p] = _scatter_extremum_jvp(ix.scatter_max_p)


def _scatter_apply_jvp(primals, tangents, **params):
    raise NotImplementedError("kiln: differentiation of kiln.lax.scatter_apply (and .at[].apply) is not "
                              "implemented; express the update with .at[].set/.add/.multiply, or with "
                              "kiln.numpy.where over a mask")


jvp_rules[ix.scatter_apply_p] = _scatter_apply_jvp
