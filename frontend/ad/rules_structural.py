"""Derivative rules of the structural family (``lax/structural.py``): broadcasts, reshapes, slices, pads,
concatenation, dynamic slices. All are linear: the JVP applies the same op to the tangent."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import structural as st
from .jvp import jvp_rules, linear_jvp, non_differentiable
from .tangents import Zero, instantiate, zeros_like_aval
from .transpose import is_undefined, transpose_rules

# -- structural (all linear: the JVP applies the same op to the tangent) -----------------------------
non_differentiable.add(st.iota_p)
for _p in (st.broadcast_in_dim_p, st.reshape_p, st.transpose_p, st.rev_p, st.slice_p):
    linear_jvp(_p)


def _broadcast_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    # Sum over the new dimensions and over dimensions that were broadcast from size 1.
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(b for d, b in zip(in_shape, broadcast_dimensions) if d == 1 and shape[b] != 1)
    out = lax.reduce_sum(ct, tuple(sorted(summed + expanded)))
    return [lax.reshape(out, in_shape)]


def _reshape_transpose(ct, x, *, new_sizes):
    return [lax.reshape(ct, x.aval.shape)]


def _transpose_transpose(ct, x, *, permutation):
    inverse = tuple(int(i) for i in np.argsort(permutation))
    return [lax.transpose(ct, inverse)]


def _rev_transpose(ct, x, *, dimensions):
    return [lax.rev(ct, dimensions)]


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    in_shape = x.aval.shape
    ct_shape = abstractify(ct).shape
    config = []
    for d, s, st_, n in zip(in_shape, start_indices, strides, ct_shape):
        hi = d - (s + (n - 1) * st_ + 1) if n else d - s
        config.append((s, hi, st_ - 1) if n else (s, hi, 0))
    if any(n == 0 for n in ct_shape):
        return [zeros_like_aval(x.aval)]
    return [lax.pad(ct, lax.literal(0, x.aval.dtype), config)]


transpose_rules[st.broadcast_in_dim_p] = _broadcast_transpose
transpose_rules[st.reshape_p] = _reshape_transpose
transpose_rules[st.transpose_p] = _transpose_transpose
transpose_rules[st.rev_p] = _rev_transpose
transpose_rules[st.slice_p] = _slice_transpose


def _pad_jvp(primals, tangents, *, padding_config):
    (x, v), (tx, tv) = primals, tangents
    return (st.pad_p.bind(x, v, padding_config=padding_config),
            st.pad_p.bind(instantiate(tx), instantiate(tv), padding_config=padding_config))


def _pad_transpose(ct, x, v, *, padding_config):
    shape = x.aval.shape if is_undefined(x) else abstractify(x).shape
    # Undo negative padding by padding back with zeros, then slice out the operand's elements.
    unpad = tuple((max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config)
    full = lax.pad(ct, lax.literal(0, abstractify(ct).dtype), unpad) if any(u != (0, 0, 0) for u in unpad) else ct
    starts = [max(lo, 0) for lo, _, _ in padding_config]
    limits = [s + (d - 1) * (i + 1) + 1 if d else s for s, d, (_, _, i) in zip(starts, shape, padding_config)]
    strides = [i + 1 for _, _, i in padding_config]
    x_ct = lax.slice(full, starts, limits, strides) if all(shape) else zeros_like_aval(abstractify(ct).update(
        shape=shape))
    v_ct = None
    if is_undefined(v):
        v_ct = lax.sub(lax.reduce_sum(ct, tuple(range(len(shape)))), lax.reduce_sum(x_ct, tuple(range(len(shape)))))
    return [x_ct if is_undefined(x) else None, v_ct]


jvp_rules[st.pad_p] = _pad_jvp
transpose_rules[st.pad_p] = _pad_transpose


def _concatenate_jvp(primals, tangents, *, dimension):
    return (st.concatenate_p.bind(*primals, dimension=dimension),
            st.concatenate_p.bind(*[instantiate(t) for t in tangents], dimension=dimension))


def _concatenate_transpose(ct, *xs, dimension):
    out, offset = [], 0
    ct_shape = abstractify(ct).shape
    for x in xs:
        shape = x.aval.shape if is_undefined(x) else abstractify(x).shape
        n = shape[dimension]
        if is_undefined(x):
            starts = [0] * len(ct_shape)
            limits = list(ct_shape)
            starts[dimension], limits[dimension] = offset, offset + n
            out.append(lax.slice(ct, starts, limits))
        else:
            out.append(None)
        offset += n
    return out


jvp_rules[st.concatenate_p] = _concatenate_jvp
transpose_rules[st.concatenate_p] = _concatenate_transpose


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *idx = primals
    out = st.dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
    if isinstance(tangents[0], Zero):
        return out, Zero(abstractify(out))
    return out, st.dynamic_slice_p.bind(tangents[0], *idx, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *idx, slice_sizes):
    zeros = zeros_like_aval(x.aval)
    return [st.dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


def _dynamic_update_slice_jvp(primals, tangents):
    x, u, *idx = primals
    tx, tu = tangents[0], tangents[1]
    out = st.dynamic_update_slice_p.bind(x, u, *idx)
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return out, Zero(abstractify(out))
    return out, st.dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *idx)


def _dynamic_update_slice_transpose(ct, x, u, *idx):
    u_shape = u.aval.shape if is_undefined(u) else abstractify(u).shape
    x_ct = st.dynamic_update_slice_p.bind(ct, zeros_like_aval(abstractify(ct).update(shape=u_shape)), *idx) \
        if is_undefined(x) else None
    u_ct = st.dynamic_slice_p.bind(ct, *idx, slice_sizes=u_shape) if is_undefined(u) else None
    return [x_ct, u_ct] + [None] * len(idx)


jvp_rules[st.dynamic_slice_p] = _dynamic_slice_jvp
transpose_rules[st.dynamic_slice_p] = _dynamic_slice_transpose
jvp_rules[st.dynamic_update_slice_p] = _dynamic_update_slice_jvp
transpose_rules[st.dynamic_update_slice_p] = _dynamic_update_slice_transpose
