"""Derivative rules of the collectives (``lax/collectives.py``): psum is linear (its transpose is psum:
every element's cotangent gathers all of them); all_gather and psum_scatter are linear and each
other's transposes; ppermute is linear (its transpose sends back: the inverted permutation);
all_to_all is linear (its transpose exchanges back: split and concat axes swapped); pmax, pmin and
axis_index are not differentiable.

In a typed backward pass (a shard_map body that checks varying axes, ad/varying_transpose.py) three transpose as
JAX's typed ones: psum to pvary (the cotangent of its result is one value, which each device keeps), pvary to psum
(the devices' cotangents of a value that is the same on all of them, summed) and an all_gather whose result is the
same on every device to a slice of the cotangent (JAX's pscatter)."""
from __future__ import annotations

from ..lax import api as lax
from ..lax import indexing
from ..lax.collectives import (
    _names,
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
    pvary_p,
)
from .jvp import jvp_rules, linear_jvp, non_differentiable
from .tangents import Zero
from .transpose import transpose_rules, typed_transposition


def _psum_jvp(primals, tangents, *, axis_name):
    (x,), (t,) = primals, tangents
    return psum_p.bind(x, axis_name=axis_name), (t if isinstance(t, Zero) else psum_p.bind(t, axis_name=axis_name))


jvp_rules[psum_p] = _psum_jvp


def _psum_transpose(ct, x, *, axis_name):
    if typed_transposition():
        return [pvary_p.bind(ct, axes=_names(axis_name))]
    return [psum_p.bind(ct, axis_name=axis_name)]


def _pvary_transpose(ct, x, *, axes):
    return [psum_p.bind(ct, axis_name=axes) if typed_transposition() else ct]


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, axis_size, to):
    if to == "invarying" and typed_transposition():
        # The cotangent is the same on every device: each takes the block its operand gave.
        idx = axis_index_p.bind(axis_name=axis_name)
        if not tiled:
            return [indexing.dynamic_index_in_dim(ct, idx, axis, keepdims=False)]
        block = x.aval.shape[axis]
        return [indexing.dynamic_slice_in_dim(ct, lax.mul(idx, lax.full_like(idx, block)), block, axis)]
    return [psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=axis, axis_size=axis_size, tiled=tiled)]


transpose_rules[psum_p] = _psum_transpose
linear_jvp(pvary_p)
transpose_rules[pvary_p] = _pvary_transpose
for _prim in (all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p):
    linear_jvp(_prim)
transpose_rules[all_gather_p] = _all_gather_transpose
transpose_rules[psum_scatter_p] = lambda ct, x, *, axis_name, scatter_dimension, axis_size, tiled: [
    all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled, axis_size=axis_size,
                      to="varying")]
transpose_rules[ppermute_p] = lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((dst, src) for src, dst in perm))]
transpose_rules[all_to_all_p] = lambda ct, x, *, axis_name, split_axis, concat_axis, axis_size, tiled: [
    all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis, axis_size=axis_size,
                      tiled=tiled)]
non_differentiable.update({axis_index_p, pmax_p, pmin_p})
