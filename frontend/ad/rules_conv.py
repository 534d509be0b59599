"""Derivative rules of ``conv_general_dilated`` (bilinear: the JVP is the product rule, the transposes
are convolutions).

Per spatial dimension, with the input dilated by ``ld`` and padded by ``(lo, hi)``, the kernel dilated by
``rd`` and the window stride ``s``, output ``y`` reads the padded input at ``y*s + k*rd`` for kernel
offset ``k``. Hence:

- the input's cotangent at padded position ``p`` collects ``ct[y] * kernel[k]`` over ``y*s + k*rd = p``:
  a convolution of ``ct`` dilated by ``s`` with the spatially reversed kernel (input and output
  features swapped), padded by ``(w-1)*rd - lo`` in front, read with stride ``ld``;
- the kernel's cotangent at offset ``k`` collects ``ct[y] * input[y*s + k*rd]`` over ``y`` and the
  batch: a convolution of the input (batch and features swapped) with ``ct`` as the kernel, dilated
  by ``s``, with window stride ``rd``.

Feature groups and batch groups swap roles between the forward convolution and the transposed ones.
Both transposes keep the operand slots of JAX's (``ct`` first for the input's, second for the kernel's), so
``precision`` passes on unchanged, as in JAX.
"""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import convolution as cv
from .jvp import jvp_rules
from .tangents import Zero, add_tangents
from .transpose import is_undefined, not_linear, transpose_rules

conv_p = cv.conv_general_dilated_p


def _split_major(x, dim: int, groups: int):
    """Split axis ``dim`` into ``(groups, size // groups)`` (the group index varying slowest)."""
    shape = list(abstractify(x).shape)
    shape[dim:dim + 1] = [groups, shape[dim] // groups]
    return lax.reshape(x, tuple(shape))


def _merge_major(x, src: int, dst: int):
    """Merge axis ``src`` into axis ``dst`` as its slowest-varying part; ``src`` disappears."""
    shape = abstractify(x).shape
    order = [d for d in range(len(shape)) if d != src]
    pos = order.index(dst)
    order.insert(pos, src)
    new_shape = [shape[d] for d in order if d != src]
    new_shape[pos] *= shape[src]
    if order != sorted(order):
        x = lax.transpose(x, tuple(order))
    return lax.reshape(x, tuple(new_shape))


def _move_groups_to_in_features(rhs, rhs_spec, groups: int):
    """Kernel ``O = G * O_g`` (out) x ``I`` (in) -> ``O_g`` x ``G * I``, same layout."""
    o, i = rhs_spec[0], rhs_spec[1]
    split = _split_major(rhs, o, groups)
    return _merge_major(split, o, i + 1 if i > o else i)


def _swap(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _as_dtype(x, dtype):
    return x if abstractify(x).dtype == dtype else lax.convert_element_type(x, dtype)


def _conv_jvp(primals, tangents, **params):
    (lhs, rhs), (tl, tr) = primals, tangents
    out = conv_p.bind(lhs, rhs, **params)
    t = Zero(abstractify(out))
    if not isinstance(tl, Zero):
        t = conv_p.bind(tl, rhs, **params)
    if not isinstance(tr, Zero):
        t = add_tangents(t, conv_p.bind(lhs, tr, **params))
    return out, t


def _lhs_ct(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
            feature_group_count, batch_group_count, precision):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = abstractify(rhs).shape
    ct_shape = abstractify(ct).shape
    in_sp = [lhs_aval.shape[d] for d in lhs_spec[2:]]
    k_sp = [rhs_shape[d] for d in rhs_spec[2:]]
    out_sp = [ct_shape[d] for d in out_spec[2:]]
    pads = tuple(((w - 1) * rd - lo, (n - 1) * ld + lo - (m - 1) * s)
                 for n, w, m, s, (lo, _), ld, rd in zip(in_sp, k_sp, out_sp, window_strides, padding, lhs_dilation,
                                                        rhs_dilation))
    groups = max(feature_group_count, batch_group_count)
    kernel = lax.rev(rhs, tuple(rhs_spec[2:]))
    if groups > 1:
        kernel = _move_groups_to_in_features(kernel, rhs_spec, groups)
    out = conv_p.bind(ct, kernel, window_strides=tuple(lhs_dilation), padding=pads, lhs_dilation=tuple(window_strides),
                      rhs_dilation=tuple(rhs_dilation),
                      dimension_numbers=cv.ConvDimensionNumbers(out_spec, _swap(rhs_spec), lhs_spec),
                      feature_group_count=groups, batch_group_count=1, precision=precision,
                      preferred_element_type=None)
    if batch_group_count > 1:  # features G * C -> the batch groups G * N_g
        out = _merge_major(_split_major(out, lhs_spec[1], batch_group_count), lhs_spec[1],
                           lhs_spec[0] + (1 if lhs_spec[0] > lhs_spec[1] else 0))
    return out


def _rhs_ct(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
            feature_group_count, batch_group_count, precision):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape = abstractify(lhs).shape
    ct_shape = abstractify(ct).shape
    in_sp = [lhs_shape[d] for d in lhs_spec[2:]]
    k_sp = [rhs_aval.shape[d] for d in rhs_spec[2:]]
    out_sp = [ct_shape[d] for d in out_spec[2:]]
    pads = tuple((lo, (w - 1) * rd + (m - 1) * s - lo - (n - 1) * ld)
                 for n, w, m, s, (lo, _), ld, rd in zip(in_sp, k_sp, out_sp, window_strides, padding, lhs_dilation,
                                                        rhs_dilation))
    return conv_p.bind(lhs, ct, window_strides=tuple(rhs_dilation), padding=pads, lhs_dilation=tuple(lhs_dilation),
                       rhs_dilation=tuple(window_strides),
                       dimension_numbers=cv.ConvDimensionNumbers(_swap(lhs_spec), _swap(out_spec), _swap(rhs_spec)),
                       feature_group_count=batch_group_count, batch_group_count=feature_group_count,
                       precision=precision, preferred_element_type=None)


def _conv_transpose(ct, lhs, rhs, *, preferred_element_type, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise not_linear("a conv_general_dilated of two tangents")
    if is_undefined(lhs):
        aval = lhs.aval
        if aval.size == 0 or abstractify(ct).size == 0 or abstractify(rhs).size == 0:
            return [lax.broadcast_in_dim(lax.literal(0, aval.dtype), aval.shape, ()), None]
        return [_lhs_ct(_as_dtype(ct, aval.dtype), aval, rhs, **params), None]
    aval = rhs.aval
    if aval.size == 0 or abstractify(ct).size == 0 or abstractify(lhs).size == 0:
        return [None, lax.broadcast_in_dim(lax.literal(0, aval.dtype), aval.shape, ())]
    return [None, _rhs_ct(_as_dtype(ct, aval.dtype), lhs, aval, **params)]


jvp_rules[conv_p] = _conv_jvp
transpose_rules[conv_p] = _conv_transpose
