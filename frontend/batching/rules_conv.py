"""Batching rule of ``conv_general_dilated``: the batch is folded into a dimension the convolution
already has, as XLA convolutions have no extra batch dimension.

- only the input (lhs) batched: the batch joins the input's batch dimension N;
- only the kernel (rhs) batched: the batch joins the kernel's output features O (one set of output
  features per batch element);
- both batched: the batch joins the input features and the output features, and multiplies the
  feature group count (each batch element is its own group); with a batch group count, it joins
  the input's batch dimension and multiplies the batch group count instead.

Groups are contiguous blocks of a dimension (group-major), so the batch is folded inside each
group: a dimension of G groups of m becomes (G, batch, m).
"""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import convolution as conv
from .core import batch_rules, move_dim


def _fold(x, bd: int, t: int, groups: int, size: int):
    """``x`` with its batch dimension (at ``bd``) folded into its dimension ``t`` (counted without the
    batch): dimension ``t`` of size ``groups * m`` becomes one of size ``groups * size * m``, ordered
    (group, batch element, m)."""
    x = move_dim(x, bd, t, size)  # the batch just before dimension t
    shape = abstractify(x).shape
    n = shape[t + 1]
    if groups > 1:
        x = lax.reshape(x, shape[:t] + (size, groups, n // groups) + shape[t + 2:])
        perm = list(range(len(shape) + 1))
        perm[t], perm[t + 1] = perm[t + 1], perm[t]
        x = lax.transpose(x, perm)
    return lax.reshape(x, shape[:t] + (size * n,) + shape[t + 2:])


def _unfold(y, t: int, groups: int, size: int):
    """The inverse of :func:`_fold` on a result: dimension ``t`` of ``y`` is ordered (group, batch
    element, m); returns ``y`` with the batch as dimension ``t``."""
    shape = abstractify(y).shape
    n = shape[t] // size
    if groups > 1:
        y = lax.reshape(y, shape[:t] + (groups, size, n // groups) + shape[t + 1:])
        perm = list(range(len(shape) + 2))
        perm[t], perm[t + 1] = perm[t + 1], perm[t]
        y = lax.transpose(y, perm)
    return lax.reshape(y, shape[:t] + (size, n) + shape[t + 1:])


def _conv_rule(ctx, args, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params):
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    B = ctx.size
    fgc, bgc = feature_group_count, batch_group_count

    def bind(lhs, rhs, fgc, bgc):
        return conv.conv_general_dilated_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                                                feature_group_count=fgc, batch_group_count=bgc, **params)

    if rd is None:
        # Each batch element is more images: N -> (batch groups, B, N / groups).
        out = bind(_fold(lhs, ld, lhs_spec[0], bgc, B), rhs, fgc, bgc)
        return _unfold(out, out_spec[0], 1, B), out_spec[0]
    if ld is None:
        # Each batch element is more output features: O -> (groups, B, O / groups).
        groups = max(fgc, bgc)
        out = bind(lhs, _fold(rhs, rd, rhs_spec[0], groups, B), fgc, bgc)
        return _unfold(out, out_spec[1], groups, B), out_spec[1]
    new_rhs = _fold(rhs, rd, rhs_spec[0], 1, B)  # O -> (B, O): B times more output feature groups
    if bgc > 1:
        out = bind(_fold(lhs, ld, lhs_spec[0], 1, B), new_rhs, fgc, bgc * B)  # N -> (B, N)
    else:
        out = bind(_fold(lhs, ld, lhs_spec[1], 1, B), new_rhs, fgc * B, bgc)  # C -> (B, C)
    return _unfold(out, out_spec[1], 1, B), out_spec[1]


batch_rules[conv.conv_general_dilated_p] = _conv_rule
