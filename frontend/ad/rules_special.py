"""Derivative rules of the elementwise primitives of ``kiln.lax.special``: inverse trigonometric and
hyperbolic functions, special functions (erf, lgamma, digamma, ...), complex parts, ``nextafter``;
bit-level primitives are declared non-differentiable."""
from __future__ import annotations

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from ..lax import special as sp
from .jvp import jvp_rules, non_differentiable
from .rules_elementwise import tangent_jvp, unary_jvp
from .tangents import Zero, instantiate
from .transpose import is_undefined, transpose_rules

S = sp.special_unary_prims

non_differentiable.update({S["population_count"], S["clz"], sp.bitcast_convert_type_p, sp.mulhi_p})


_full_like = lax.full_like


def _unary(name, deriv):
    unary_jvp(S[name], deriv)


def _one_minus_sq(x):
    return lax.sub(_full_like(x, 1), lax.mul(x, x))


def _one_plus_sq(x):
    return lax.add(_full_like(x, 1), lax.mul(x, x))


_TWO_OVER_SQRT_PI = 2.0 / np.sqrt(np.pi)

_unary("asin", lambda x, y: lax.rsqrt(_one_minus_sq(x)))
_unary("acos", lambda x, y: lax.neg(lax.rsqrt(_one_minus_sq(x))))
tangent_jvp(S["atan"], lambda t, x, y: lax.div(t, _one_plus_sq(x)))  # JAX's t / (1 + x*x)
_unary("sinh", lambda x, y: sp.cosh(x))
_unary("cosh", lambda x, y: sp.sinh(x))
_unary("asinh", lambda x, y: lax.rsqrt(_one_plus_sq(x)))
# 1 / (sqrt(x - 1) sqrt(x + 1)): the principal branch for complex x as well.
_unary("acosh", lambda x, y: lax.div(_full_like(x, 1), lax.mul(lax.sqrt(lax.sub(x, _full_like(x, 1))),
                                                              lax.sqrt(lax.add(x, _full_like(x, 1))))))
# JAX's orders: (1 / (1 + x)) * (t / (1 - x)), and c * (t * exp(-x*x)) for erf and erfc
tangent_jvp(S["atanh"], lambda t, x, y: lax.mul(lax.div(_full_like(x, 1), lax.add(_full_like(x, 1), x)),
                                                lax.div(t, lax.sub(_full_like(x, 1), x))))
tangent_jvp(S["erf"], lambda t, x, y: lax.mul(_full_like(x, _TWO_OVER_SQRT_PI),
                                              lax.mul(t, lax.exp(lax.neg(lax.mul(x, x))))))
tangent_jvp(S["erfc"], lambda t, x, y: lax.mul(_full_like(x, -_TWO_OVER_SQRT_PI),
                                               lax.mul(t, lax.exp(lax.neg(lax.mul(x, x))))))
# d/dx erf^-1(x) = 1 / erf'(y) = sqrt(pi) / 2 * exp(y^2) with y = erf^-1(x).
tangent_jvp(S["erf_inv"], lambda t, x, y: lax.mul(_full_like(y, 1 / _TWO_OVER_SQRT_PI),
                                                   lax.mul(t, lax.exp(lax.mul(y, y)))))
_unary("lgamma", lambda x, y: sp.digamma(x))


def trigamma(x):
    """The trigamma function psi'(x), the derivative of digamma, composed from differentiable primitives.

    For x > 0: the recurrence psi'(x) = psi'(x + 1) + 1/x^2 moves the argument up to z = x + N, where
    the asymptotic series 1/z + 1/(2z^2) + sum_k B_2k / z^(2k+1) converges fast. For x <= 0 the
    reflection psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) applies (infinite at the poles 0, -1, ...).
    """
    n = 10

    def positive(x):
        acc = _full_like(x, 0)
        for k in range(n):
            xk = lax.add(x, _full_like(x, float(k)))
            acc = lax.add(acc, lax.div(_full_like(x, 1), lax.mul(xk, xk)))
        z = lax.add(x, _full_like(x, float(n)))
        r = lax.div(_full_like(z, 1), z)
        r2 = lax.mul(r, r)
        # 1/z + 1/(2z^2) + 1/(6z^3) - 1/(30z^5) + 1/(42z^7) - 1/(30z^9) + 5/(66z^11)
        poly = _full_like(z, 5 / 66)
        for c in (-1 / 30, 1 / 42, -1 / 30, 1 / 6):
            poly = lax.add(lax.mul(poly, r2), _full_like(z, c))
        series = lax.add(lax.add(r, lax.mul(_full_like(z, 0.5), r2)), lax.mul(lax.mul(poly, r2), r))
        return lax.add(acc, series)

    negative = lax.le(x, _full_like(x, 0))
    one = _full_like(x, 1)
    reflected = lax.sub(one, x)
    arg = lax.select(negative, reflected, x)
    value = positive(arg)
    s = lax.sin(lax.mul(_full_like(x, np.pi), x))
    refl = lax.sub(lax.div(_full_like(x, np.pi ** 2), lax.mul(s, s)), value)
    return lax.select(negative, refl, value)


_unary("digamma", lambda x, y: trigamma(x))


# -- nextafter: a step of one ulp; its derivative is that of x1 (x2 only picks the direction) ------------
def _nextafter_jvp(primals, tangents):
    (x1, x2), (t1, _) = primals, tangents
    out = sp.nextafter_p.bind(x1, x2)
    return out, (Zero(abstractify(out)) if isinstance(t1, Zero) else t1)


jvp_rules[sp.nextafter_p] = _nextafter_jvp


# -- complex parts (linear). Cotangents pair with values through Re(sum(a * b)), as in JAX. -------------
def _real_jvp(primals, tangents):
    return sp.real_p.bind(primals[0]), sp.real_p.bind(tangents[0])


def _imag_jvp(primals, tangents):
    return sp.imag_p.bind(primals[0]), sp.imag_p.bind(tangents[0])


def _complex_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return sp.complex_p.bind(x, y), sp.complex_p.bind(instantiate(tx), instantiate(ty))


def _strong_zeros_like(x):
    """Zeros of ``x``'s shape and dtype, strongly typed: as in JAX, the cotangent a complex input gets back
    through ``real``/``imag`` is not weak even when the real cotangent is."""
    aval = abstractify(x)
    return lax.full(aval.shape, 0, aval.dtype)


def _real_transpose(ct, x):
    return [sp.complex_p.bind(ct, _strong_zeros_like(ct))]


def _imag_transpose(ct, x):
    return [sp.complex_p.bind(_strong_zeros_like(ct), lax.neg(ct))]


def _conj_jvp(primals, tangents):
    return sp.conj_p.bind(primals[0]), sp.conj_p.bind(tangents[0])


def _conj_transpose(ct, x):
    return [sp.conj_p.bind(ct)]


def _complex_transpose(ct, x, y):
    return [sp.real_p.bind(ct) if is_undefined(x) else None,
            lax.neg(sp.imag_p.bind(ct)) if is_undefined(y) else None]


jvp_rules[sp.real_p] = _real_jvp
jvp_rules[sp.imag_p] = _imag_jvp
jvp_rules[sp.complex_p] = _complex_jvp
transpose_rules[sp.real_p] = _real_transpose
transpose_rules[sp.imag_p] = _imag_transpose
transpose_rules[sp.complex_p] = _complex_transpose
jvp_rules[sp.conj_p] = _conj_jvp


def _integer_pow_jvp(primals, tangents, *, y):
    (x,), (t,) = primals, tangents
    out = sp.integer_pow_p.bind(x, y=y)
    if y == 0:
        return out, Zero(abstractify(out))
    # JAX's t * (y * x**(y - 1))
    return out, lax.mul(t, lax.mul(_full_like(x, y), sp.integer_pow_p.bind(x, y=y - 1)))


jvp_rules[sp.integer_pow_p] = _integer_pow_jvp
transpose_rules[sp.conj_p] = _conj_transpose
