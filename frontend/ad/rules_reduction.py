"""Derivative rules of the reduction family (``lax/reduction.py``): reductions, arg-reductions and
``dot_general``."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import reduction as red
from ..lax.precision import swap_precision
from .jvp import jvp_rules, linear_jvp, non_differentiable
from .tangents import Zero, add_tangents, instantiate
from .transpose import is_undefined, not_linear, transpose_rules

_full_like = lax.full_like


# -- reductions ---------------------------------------------------------------------------------------
for _p in (red.argmax_p, red.argmin_p, red.reduce_prims["reduce_and"], red.reduce_prims["reduce_or"]):
    non_differentiable.add(_p)
linear_jvp(red.reduce_prims["reduce_sum"])


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [lax.broadcast_in_dim(ct, shape, kept)]


transpose_rules[red.reduce_prims["reduce_sum"]] = _reduce_sum_transpose


def _reduce_chooser_jvp(prim):
    """max/min: the tangent of the chosen elements, averaged over ties (as JAX)."""
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        shape = abstractify(x).shape
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        location = lax.convert_element_type(lax.eq(x, lax.broadcast_in_dim(out, shape, kept)),
                                            abstractify(x).dtype)
        counts = lax.reduce_sum(location, axes)
        return out, lax.div(lax.reduce_sum(lax.mul(t, location), axes), counts)
    jvp_rules[prim] = rule


_reduce_chooser_jvp(red.reduce_prims["reduce_max"])
_reduce_chooser_jvp(red.reduce_prims["reduce_min"])


def reduce_prod_jvp(primals, tangents, *, axes):
    """d prod = sum_i t_i * prod_{j != i} x_j, with the product of the others computed without dividing
    (so zeros in x are handled): move the reduced axes to the end, flatten them, and use exclusive
    products from both sides."""
    (x,), (t,) = primals, tangents
    prim = red.reduce_prims["reduce_prod"]
    out = prim.bind(x, axes=axes)
    aval = abstractify(x)
    kept = [i for i in range(aval.ndim) if i not in axes]
    perm = tuple(kept + list(axes))
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    kshape = tuple(aval.shape[i] for i in kept)
    xf = lax.reshape(lax.transpose(x, perm), kshape + (n,))
    tf = lax.reshape(lax.transpose(instantiate(t), perm), kshape + (n,))
    others = _exclusive_products(xf, n)
    return out, lax.reduce_sum(lax.mul(tf, others), (len(kshape),))


def _exclusive_products(xf, n: int):
    """For the last axis of length n: out[..., i] = prod_{j != i} x[..., j] (O(n^2) work, no division)."""
    shape = abstractify(xf).shape
    last = len(shape) - 1
    cols = []
    for i in range(n):
        parts = []
        if i > 0:
            parts.append(lax.reduce_prod(lax.slice(xf, [0] * last + [0], list(shape[:-1]) + [i]), (last,)))
        if i < n - 1:
            parts.append(lax.reduce_prod(lax.slice(xf, [0] * last + [i + 1], list(shape[:-1]) + [n]), (last,)))
        col = parts[0] if parts else _full_like(lax.reduce_sum(xf, (last,)), 1)
        for p in parts[1:]:
            col = lax.mul(col, p)
        cols.append(lax.reshape(col, shape[:-1] + (1,)))
    return lax.concatenate(cols, last) if cols else xf


jvp_rules[red.reduce_prims["reduce_prod"]] = reduce_prod_jvp


def _dot_general_jvp(primals, tangents, *, dimension_numbers, precision, preferred_element_type):
    (x, y), (tx, ty) = primals, tangents
    kw = dict(dimension_numbers=dimension_numbers, precision=precision, preferred_element_type=preferred_element_type)
    out = red.dot_general_p.bind(x, y, **kw)
    t = Zero(abstractify(out))
    if not isinstance(tx, Zero):
        t = red.dot_general_p.bind(tx, y, **kw)
    if not isinstance(ty, Zero):
        t = add_tangents(t, red.dot_general_p.bind(x, ty, **kw))
    return out, t


def _dot_operand_ct(ct, aval, other, ct_free, other_free, own_batch, other_batch, own_contract, other_contract,
                    precision):
    """Cotangent of one dot_general operand.

    ``ct`` has dimensions (batch, lhs free, rhs free). Contracting ``ct``'s dimensions that belong
    to the *other* operand's free dimensions with those, and batching over the batch dimensions,
    leaves (batch, own free, other's contracting dims in increasing order); the other's contracting
    dims pair with our contracting dims, so a transpose puts everything in our dimension order.
    With the operands of that dot_general swapped, the result comes as (batch, other's contracting,
    own free) instead: whichever order needs no transpose is used. (JAX always puts ``ct`` first and
    transposes: under vmap, per-example weight gradients then become a batched dot_general with a
    transposed result, five times slower on CPU; the last bits of a reduction that follows can differ.)
    ``precision`` goes as in JAX's ``dot_general(ct, other, precision=precision)`` (for either operand's
    cotangent): its first entry for ``ct``, its second for ``other``, swapped when ``other`` comes first.
    """
    own_free = [d for d in range(len(aval.shape)) if d not in own_contract and d not in own_batch]
    contract = [own_contract[other_contract.index(d)] for d in sorted(other_contract)]
    ct_batch = tuple(range(len(own_batch)))
    as_own = list(own_batch) + own_free + contract
    swapped = list(own_batch) + contract + own_free
    if abstractify(other).dtype != abstractify(ct).dtype:
        # A wider preferred_element_type: the cotangent has it, the other operand not; JAX's lowering of
        # that mixed dot_general converts the other operand to the cotangent's dtype first.
        other = lax.convert_element_type(other, abstractify(ct).dtype)
    if as_own != sorted(as_own) and swapped == sorted(swapped):
        dims = ((tuple(other_free), tuple(ct_free)), (tuple(other_batch), ct_batch))
        out = red.dot_general_p.bind(other, ct, dimension_numbers=dims, precision=swap_precision(precision),
                                     preferred_element_type=None)
    else:
        dims = ((tuple(ct_free), tuple(other_free)), (ct_batch, tuple(other_batch)))
        out = red.dot_general_p.bind(ct, other, dimension_numbers=dims, precision=precision,
                                     preferred_element_type=None)
        if as_own != sorted(as_own):
            out = lax.transpose(out, tuple(int(i) for i in np.argsort(as_own)))
    if abstractify(out).dtype != aval.dtype:
        out = lax.convert_element_type(out, aval.dtype)
    return out


def _dot_general_transpose(ct, x, y, *, dimension_numbers, precision, preferred_element_type):
    (xc, yc), (xb, yb) = dimension_numbers
    if is_undefined(x) and is_undefined(y):
        raise not_linear("a dot_general of two tangents")
    x_aval = x.aval if is_undefined(x) else abstractify(x)
    y_aval = y.aval if is_undefined(y) else abstractify(y)
    nb = len(xb)
    x_free = [d for d in range(x_aval.ndim) if d not in xc and d not in xb]
    y_free = [d for d in range(y_aval.ndim) if d not in yc and d not in yb]
    ct_x_free = list(range(nb, nb + len(x_free)))
    ct_y_free = list(range(nb + len(x_free), nb + len(x_free) + len(y_free)))
    if is_undefined(x):
        return [_dot_operand_ct(ct, x_aval, y, ct_y_free, y_free, xb, yb, list(xc), list(yc), precision), None]
    return [None, _dot_operand_ct(ct, y_aval, x, ct_x_free, x_free, yb, xb, list(yc), list(xc), precision)]


jvp_rules[red.dot_general_p] = _dot_general_jvp
transpose_rules[red.dot_general_p] = _dot_general_transpose
