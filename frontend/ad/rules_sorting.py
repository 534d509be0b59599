"""Derivative rule of ``sort``: sort an iota along with the operands to get the permutation, then
gather every tangent through it (a gather is linear, so reverse mode transposes it to a scatter_add)."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import indexing as ix
from ..lax import sorting as so
from .jvp import jvp_rules
from .tangents import Zero, tangent_aval


def permute_along(x, perm, dimension: int):
    """``x`` reordered along ``dimension`` by the integer array ``perm`` (of ``x``'s shape):
    ``out[..., i, ...] = x[..., perm[..., i, ...], ...]``."""
    shape = abstractify(x).shape
    nd = len(shape)
    index_shape = shape + (1,)
    parts = [lax.reshape(perm if d == dimension else lax.broadcasted_iota(np.int32, shape, d), index_shape)
             for d in range(nd)]
    indices = lax.concatenate(parts, nd)
    dn = ix.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(nd)),
                                   start_index_map=tuple(range(nd)))
    return ix.gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=(1,) * nd, indices_are_sorted=False,
                            unique_indices=True)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = abstractify(primals[0]).shape
    iota = lax.broadcasted_iota(np.int32, shape, dimension)
    outs = so.sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    perm = outs[-1]
    touts = [t if isinstance(t, Zero) else permute_along(t, perm, dimension) for t in tangents]
    return list(outs[:-1]), touts


jvp_rules[so.sort_p] = _sort_jvp


def take_last(x, idx):
    """``out[..., j] = x[..., idx[..., j]]`` (``idx`` of ``x``'s shape but for its last dimension)."""
    shape = abstractify(idx).shape
    nd = len(shape)
    parts = [lax.reshape(idx if d == nd - 1 else lax.broadcasted_iota(np.int32, shape, d), shape + (1,))
             for d in range(nd)]
    dn = ix.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(nd)),
                                   start_index_map=tuple(range(nd)))
    return ix.gather_p.bind(x, lax.concatenate(parts, nd), dimension_numbers=dn, slice_sizes=(1,) * nd,
                            indices_are_sorted=False, unique_indices=True)


def _top_k_jvp(primals, tangents, *, k):
    values, indices = so.top_k_p.bind(primals[0], k=k)
    t = tangents[0]
    return [values, indices], [Zero(abstractify(values)) if isinstance(t, Zero) else take_last(t, indices),
                               Zero(tangent_aval(abstractify(indices)))]


jvp_rules[so.top_k_p] = _top_k_jvp
