"""Derivative rules of the elementwise family (``lax/elementwise.py``): unary and binary arithmetic,
select, convert; the JVPs and the transposes of the linear ones."""
from __future__ import annotations

from .. import lax
from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import elementwise as ew
from ..lax.sorting import clamp_p
from .jvp import jvp_rules, non_differentiable
from .tangents import Zero, add_tangents, instantiate
from .transpose import is_undefined, not_linear, transpose_rules

U, B = ew.unary_prims, ew.binary_prims


_full_like = lax.full_like


def _mul_t(t, factor):
    """``t * factor`` keeping symbolic zeros."""
    return t if isinstance(t, Zero) else lax.mul(t, factor)


# -- non-differentiable primitives -------------------------------------------------------------
for _p in [ew.stop_gradient_p, U["sign"], U["floor"], U["ceil"], U["not"], U["is_finite"], ew.round_p,
           *[B[n] for n in ("and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
                            *ew.COMPARISONS)]]:
    non_differentiable.add(_p)


# -- unary elementwise ---------------------------------------------------------------------------
def unary_jvp(prim, deriv) -> None:
    """Register the JVP rule ``t * deriv(x, out)`` of the unary primitive ``prim``."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        out = prim.bind(x)
        return out, lax.mul(t, deriv(x, out))
    jvp_rules[prim] = rule


def tangent_jvp(prim, tangent) -> None:
    """Register the JVP rule of the unary primitive ``prim`` whose tangent is ``tangent(t, x, out)``: for the
    rules JAX writes in another order than ``t * derivative`` (floating-point results then match JAX's bits)."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        out = prim.bind(x)
        return out, tangent(t, x, out)
    jvp_rules[prim] = rule


def _unary(name, deriv):
    unary_jvp(U[name], deriv)


_unary("exp", lambda x, y: y)
_unary("square", lambda x, y: lax.mul(_full_like(x, 2), x))  # JAX's t * (2 * x)


def _divided_jvp(prim, denominator):
    """Register the JVP rule ``t / denominator(x)`` of ``prim`` (one division, where ``t * (1 / d)`` would
    leave a reciprocal for the backward pass to keep and multiply by: JAX's rule, and one fusion fewer)."""
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return prim.bind(x), lax.div(t, denominator(x))
    jvp_rules[prim] = rule


_divided_jvp(U["log"], lambda x: x)
_divided_jvp(U["log1p"], lambda x: lax.add(x, _full_like(x, 1)))
_unary("expm1", lambda x, y: lax.add(y, _full_like(y, 1)))
_unary("sin", lambda x, y: lax.cos(x))
_unary("cos", lambda x, y: lax.neg(lax.sin(x)))
_unary("tan", lambda x, y: lax.add(_full_like(y, 1), lax.mul(y, y)))
# (t + t*y) * (1 - y), JAX's order (t * (1 - y*y) rounds differently)
tangent_jvp(U["tanh"], lambda t, x, y: lax.mul(lax.add(t, lax.mul(t, y)), lax.sub(_full_like(y, 1), y)))
_unary("logistic", lambda x, y: lax.mul(y, lax.sub(_full_like(y, 1), y)))
_unary("sqrt", lambda x, y: lax.div(_full_like(y, 0.5), y))
_unary("rsqrt", lambda x, y: lax.mul(_full_like(y, -0.5), lax.div(y, x)))
_unary("cbrt", lambda x, y: lax.mul(_full_like(x, 1 / 3), lax.integer_pow(y, -2)))  # JAX's (1/3) * y**-2


def _abs_jvp(primals, tangents):
    """JAX's rule, operation for operation (its bits): ``t`` where x >= 0, else ``-t`` (so 1 at 0, as JAX's grad of
    abs); for complex x, ``Re(t * conj(x) / |x|)`` with |x| = 0 taken as 1."""
    (x,), (t,) = primals, tangents
    out = lax.abs(x)
    if abstractify(x).dtype.kind == "c":
        magnitude = lax.convert_element_type(out, abstractify(x).dtype)
        one = _full_like(magnitude, 1)
        safe = lax.select(lax.eq(magnitude, _full_like(magnitude, 0)), one, magnitude)
        return out, lax.real(lax.mul(t, lax.div(lax.conj(x), safe)))
    return out, lax.select(lax.ge(x, _full_like(x, 0)), t, lax.neg(t))


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
        # -ty * x * y**-2 in JAX's order, y**-2 being 1 / (y * y): each rounding as JAX's, so the float
        # results are bit-identical (-ty * (out / y) rounds differently in the last place).
        t = add_tangents(t, lax.mul(lax.mul(lax.neg(ty), x), lax.integer_pow(y, -2)))
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


def _clamp_jvp(primals, tangents):
    """JAX's rule: x's tangent passes strictly inside the bounds, min's where it is above x (and below max), max's
    where it is below x (so at a bound, or where min > max, the derivative differs from that of min(max(..)))."""
    (lo, x, hi), (tlo, tx, thi) = primals, tangents
    out = clamp_p.bind(lo, x, hi)
    zero = _full_like(out, 0)

    def passed(where, t):
        return t if isinstance(t, Zero) else lax.select(where(), t, zero)
    return out, add_tangents(add_tangents(passed(lambda: lax.bitwise_and(lax.gt(lo, x), lax.lt(lo, hi)), tlo),
                                          passed(lambda: lax.bitwise_and(lax.gt(x, lo), lax.lt(x, hi)), tx)),
                             passed(lambda: lax.lt(hi, x), thi))


jvp_rules[clamp_p] = _clamp_jvp


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
        raise not_linear("a product of two tangents (mul)")
    return [lax.mul(ct, y), None] if is_undefined(x) else [None, lax.mul(x, ct)]


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise not_linear("a division by a tangent (div)")
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
    if not dtypes.is_inexact(new_dtype):
        return out, Zero(abstractify(out))
    return out, ew.convert_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    aval = x.aval
    return [ew.convert_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


jvp_rules[ew.convert_p] = _convert_jvp
transpose_rules[ew.convert_p] = _convert_transpose
