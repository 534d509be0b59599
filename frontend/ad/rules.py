"""Derivative rules of the foundation primitives: a JVP rule for each differentiable primitive,
a transpose rule for each linear one."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import elementwise as ew
from ..lax import reduction as red
from ..lax import structural as st
from .jvp import jvp_rules, non_differentiable
from .tangents import Zero, add_tangents, instantiate, zeros_like_aval
from .transpose import is_undefined, transpose_rules

U, B = ew.unary_prims, ew.binary_prims


_full_like = lax.full_like


def _mul_t(t, factor):
    """``t * factor`` keeping symbolic zeros."""
    return t if isinstance(t, Zero) else lax.mul(t, factor)


# -- non-differentiable primitives -------------------------------------------------------------
for _p in [ew.stop_gradient_p, U["sign"], U["floor"], U["ceil"], U["not"], U["is_finite"], ew.round_p, st.iota_p,
           red.argmax_p, red.argmin_p,
           *[B[n] for n in ("and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
                            *ew.COMPARISONS)],
           red.reduce_prims["reduce_and"], red.reduce_prims["reduce_or"]]:
    non_differentiable.add(_p)


# -- unary elementwise ---------------------------------------------------------------------------
def unary_jvp(prim, deriv) -> None:
    """Register the JVP rule ``t * deriv(x, out)`` of the unary primitive ``prim``."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        out = prim.bind(x)
        return out, lax.mul(t, deriv(x, out))
    jvp_rules[prim] = rule


def _unary(name, deriv):
    unary_jvp(U[name], deriv)


_unary("exp", lambda x, y: y)
_unary("log", lambda x, y: lax.div(_full_like(x, 1), x))
_unary("log1p", lambda x, y: lax.div(_full_like(x, 1), lax.add(x, _full_like(x, 1))))
_unary("expm1", lambda x, y: lax.add(y, _full_like(y, 1)))
_unary("sin", lambda x, y: lax.cos(x))
_unary("cos", lambda x, y: lax.neg(lax.sin(x)))
_unary("tan", lambda x, y: lax.add(_full_like(y, 1), lax.mul(y, y)))
_unary("tanh", lambda x, y: lax.sub(_full_like(y, 1), lax.mul(y, y)))
_unary("logistic", lambda x, y: lax.mul(y, lax.sub(_full_like(y, 1), y)))
_unary("sqrt", lambda x, y: lax.div(_full_like(y, 0.5), y))
_unary("rsqrt", lambda x, y: lax.mul(_full_like(y, -0.5), lax.div(y, x)))
_unary("cbrt", lambda x, y: lax.div(y, lax.mul(_full_like(x, 3), x)))


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = lax.abs(x)
    if abstractify(x).dtype.kind == "c":  # d|z| = Re(conj(z) dz) / |z|, taken as 0 at z = 0
        zero = _full_like(out, 0)
        at_zero = lax.eq(out, zero)
        scale = lax.select(at_zero, zero, lax.div(_full_like(out, 1), lax.select(at_zero, _full_like(out, 1), out)))
        return out, lax.mul(lax.real(lax.mul(lax.conj(x), t)), scale)
    return out, lax.mul(t, lax.sign(x))


jvp_rules[U["abs"]] = _abs_jvp


def _neg_jvp(primals, tangents):
    return lax.neg(primals[0]), lax.neg(tangents[0])


jvp_rules[U["neg"]] = _neg_jvp
transpose_rules[U["neg"]] = lambda ct, x: [lax.neg(ct)]


# -- binary elementwise ------------------------------------------------------------------------------
def _add_jvp(primals, tangents):
    return lax.add(*primals), add_tangents(*tangents)


def _sub_jvp(primals, tangents):
    tx, ty = tangents
    out = lax.sub(*primals)
    if isinstance(ty, Zero):
        return out, tx
    return out, lax.neg(ty) if isinstance(tx, Zero) else lax.sub(tx, ty)


def _mul_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return lax.mul(x, y), add_tangents(_mul_t(tx, y), _mul_t(ty, x))


def _div_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = lax.div(x, y)
    t = Zero(abstractify(out)) if isinstance(tx, Zero) else lax.div(tx, y)
    if not isinstance(ty, Zero):
        t = add_tangents(t, lax.neg(lax.mul(ty, lax.div(out, y))))
    return out, t


def _rem_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = lax.rem(x, y)
    t = tx
    if not isinstance(ty, Zero):  # d/dy (x - y * trunc(x / y)) = -trunc(x / y)
        q = lax.div(lax.sub(x, out), y)
        t = add_tangents(t, lax.neg(lax.mul(ty, q)))
    return out, t


def _pow_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = lax.pow(x, y)
    t = Zero(abstractify(out))
    if not isinstance(tx, Zero):
        # y * x ** (y - 1), with 0 ** 0 handled as in JAX (derivative 0 where y == 0).
        one = _full_like(y, 1)
        dx = lax.mul(y, lax.pow(x, lax.sub(y, one)))
        dx = lax.select(lax.eq(y, _full_like(y, 0)), _full_like(dx, 0), dx)
        t = lax.mul(tx, dx)
    if not isinstance(ty, Zero):
        # log(x) * x ** y, defined as 0 where x == 0 (the limit for y > 0).
        zero = _full_like(x, 0)
        safe_log = lax.log(lax.select(lax.eq(x, zero), _full_like(x, 1), x))
        t = add_tangents(t, lax.mul(ty, lax.mul(safe_log, out)))
    return out, t


def _minmax_jvp(prim, pick_x):
    def rule(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = prim.bind(x, y)
        # Where x and y tie, each gets half of the tangent (as JAX).
        half = _full_like(out, 0.5)
        x_wins = lax.convert_element_type(pick_x(x, y), abstractify(out).dtype)
        tie = lax.convert_element_type(lax.eq(x, y), abstractify(out).dtype)
        wx = lax.add(x_wins, lax.mul(tie, half))
        wy = lax.sub(_full_like(out, 1), wx)
        return out, add_tangents(_mul_t(tx, wx), _mul_t(ty, wy))
    return rule


def _atan2_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = lax.atan2(x, y)
    denom = lax.add(lax.mul(x, x), lax.mul(y, y))
    t = add_tangents(_mul_t(tx, lax.div(y, denom)), _mul_t(ty, lax.neg(lax.div(x, denom))))
    return out, t


jvp_rules[B["add"]] = _add_jvp
jvp_rules[B["sub"]] = _sub_jvp
jvp_rules[B["mul"]] = _mul_jvp
jvp_rules[B["div"]] = _div_jvp
jvp_rules[B["rem"]] = _rem_jvp
jvp_rules[B["pow"]] = _pow_jvp
jvp_rules[B["max"]] = _minmax_jvp(B["max"], lax.gt)
jvp_rules[B["min"]] = _minmax_jvp(B["min"], lax.lt)
jvp_rules[B["atan2"]] = _atan2_jvp


def _linear_both(ct, x, y, sign=1):
    cx = ct if is_undefined(x) else None
    cy = (ct if sign > 0 else lax.neg(ct)) if is_undefined(y) else None
    return [cx, cy]


transpose_rules[B["add"]] = lambda ct, x, y: _linear_both(ct, x, y)
transpose_rules[B["sub"]] = lambda ct, x, y: _linear_both(ct, x, y, -1)


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise TypeError("kiln: internal error: mul of two linear values is not linear")
    return [lax.mul(ct, y), None] if is_undefined(x) else [None, lax.mul(x, ct)]


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("kiln: internal error: division by a linear value is not linear")
    return [lax.div(ct, y), None]


transpose_rules[B["mul"]] = _mul_transpose
transpose_rules[B["div"]] = _div_transpose


# -- select, convert ---------------------------------------------------------------------------------
def _select_jvp(primals, tangents):
    p, a, b = primals
    _, ta, tb = tangents
    out = lax.select(p, a, b)
    if isinstance(ta, Zero) and isinstance(tb, Zero):
        return out, Zero(abstractify(out))
    return out, lax.select(p, instantiate(ta), instantiate(tb))


def _select_transpose(ct, p, a, b):
    if is_undefined(p):
        raise TypeError("kiln: internal error: the predicate of select cannot be linear")
    zeros = _full_like(ct, 0)
    return [None, lax.select(p, ct, zeros) if is_undefined(a) else None,
            lax.select(p, zeros, ct) if is_undefined(b) else None]


jvp_rules[ew.select_p] = _select_jvp
transpose_rules[ew.select_p] = _select_transpose


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = ew.convert_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if not np.issubdtype(new_dtype, np.inexact) and new_dtype.name != "bfloat16":
        return out, Zero(abstractify(out))
    return out, ew.convert_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    aval = x.aval
    return [ew.convert_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


jvp_rules[ew.convert_p] = _convert_jvp
transpose_rules[ew.convert_p] = _convert_transpose


# -- structural (all linear: the JVP applies the same op to the tangent) -----------------------------
def _linear_jvp(prim):
    def rule(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*[instantiate(t) for t in tangents], **params)
    jvp_rules[prim] = rule


for _p in (st.broadcast_in_dim_p, st.reshape_p, st.transpose_p, st.rev_p, st.slice_p,
           red.reduce_prims["reduce_sum"]):
    _linear_jvp(_p)


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


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [lax.broadcast_in_dim(ct, shape, kept)]


transpose_rules[st.broadcast_in_dim_p] = _broadcast_transpose
transpose_rules[st.reshape_p] = _reshape_transpose
transpose_rules[st.transpose_p] = _transpose_transpose
transpose_rules[st.rev_p] = _rev_transpose
transpose_rules[st.slice_p] = _slice_transpose
transpose_rules[red.reduce_prims["reduce_sum"]] = _reduce_sum_transpose


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


# -- reductions ---------------------------------------------------------------------------------------
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


def _reduce_prod_jvp(primals, tangents, *, axes):
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


jvp_rules[red.reduce_prims["reduce_prod"]] = _reduce_prod_jvp


def _dot_general_jvp(primals, tangents, *, dimension_numbers, preferred_element_type):
    (x, y), (tx, ty) = primals, tangents
    kw = dict(dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type)
    out = red.dot_general_p.bind(x, y, **kw)
    t = Zero(abstractify(out))
    if not isinstance(tx, Zero):
        t = red.dot_general_p.bind(tx, y, **kw)
    if not isinstance(ty, Zero):
        t = add_tangents(t, red.dot_general_p.bind(x, ty, **kw))
    return out, t


def _dot_operand_ct(ct, aval, other, ct_free, other_free, own_batch, other_batch, own_contract, other_contract):
    """Cotangent of one dot_general operand.

    ``ct`` has dimensions (batch, lhs free, rhs free). Contracting ``ct``'s dimensions that belong
    to the *other* operand's free dimensions with those, and batching over the batch dimensions,
    leaves (batch, own free, other's contracting dims in increasing order); the other's contracting
    dims pair with our contracting dims, so a transpose puts everything in our dimension order.
    With the operands of that dot_general swapped, the result comes as (batch, other's contracting,
    own free) instead: whichever order needs no transpose is used.
    """
    own_free = [d for d in range(len(aval.shape)) if d not in own_contract and d not in own_batch]
    contract = [own_contract[other_contract.index(d)] for d in sorted(other_contract)]
    ct_batch = tuple(range(len(own_batch)))
    as_own = list(own_batch) + own_free + contract
    swapped = list(own_batch) + contract + own_free
    if as_own != sorted(as_own) and swapped == sorted(swapped):
        dims = ((tuple(other_free), tuple(ct_free)), (tuple(other_batch), ct_batch))
        out = red.dot_general_p.bind(other, ct, dimension_numbers=dims, preferred_element_type=None)
    else:
        dims = ((tuple(ct_free), tuple(other_free)), (ct_batch, tuple(other_batch)))
        out = red.dot_general_p.bind(ct, other, dimension_numbers=dims, preferred_element_type=None)
        if as_own != sorted(as_own):
            out = lax.transpose(out, tuple(int(i) for i in np.argsort(as_own)))
    if abstractify(out).dtype != aval.dtype:
        out = lax.convert_element_type(out, aval.dtype)
    return out


def _dot_general_transpose(ct, x, y, *, dimension_numbers, preferred_element_type):
    (xc, yc), (xb, yb) = dimension_numbers
    if is_undefined(x) and is_undefined(y):
        raise TypeError("kiln: internal error: dot_general of two linear values is not linear")
    x_aval = x.aval if is_undefined(x) else abstractify(x)
    y_aval = y.aval if is_undefined(y) else abstractify(y)
    nb = len(xb)
    x_free = [d for d in range(x_aval.ndim) if d not in xc and d not in xb]
    y_free = [d for d in range(y_aval.ndim) if d not in yc and d not in yb]
    ct_x_free = list(range(nb, nb + len(x_free)))
    ct_y_free = list(range(nb + len(x_free), nb + len(x_free) + len(y_free)))
    if is_undefined(x):
        return [_dot_operand_ct(ct, x_aval, y, ct_y_free, y_free, xb, yb, list(xc), list(yc)), None]
    return [None, _dot_operand_ct(ct, y_aval, x, ct_x_free, x_free, yb, xb, list(yc), list(xc))]


jvp_rules[red.dot_general_p] = _dot_general_jvp
transpose_rules[red.dot_general_p] = _dot_general_transpose


# -- rules of the other primitive families, one module each ------------------------------------------
from . import rules_conv  # noqa: E402,F401,I001  (one line per family module)
from . import rules_indexing  # noqa: E402,F401
from . import rules_linalg  # noqa: E402,F401
from . import rules_sorting  # noqa: E402,F401
from . import rules_special  # noqa: E402,F401
from . import rules_windowed  # noqa: E402,F401
