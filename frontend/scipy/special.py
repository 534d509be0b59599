"""kiln.scipy.special: special functions (as ``jax.scipy.special``), compositions of kiln primitives."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..ad.custom import custom_jvp
from ..control.loops import fori_loop, while_loop
from ..core import dtypes
from ..core.ir import Literal
from ..core.tracing import materialize
from ..driver.eager_jit import eager_jit
from ..nn import functions as _nn
from ..nn.functions import broadcast_args, float_args, logsumexp_impl, narrow_float_arg
from ..numpy._util import check_arraylike
from ..numpy.ufuncs import full_like_
from ..special_functions import (
    _B,
    _bernoulli_fractions,
    _bessel_ie,
    _betainc,
    _eps,
    _gammainc,
    _gammaincc,
    _is64,
    _loop,
    _loop_from,
    _one,
    _tiny,
    _with_partials,
    _zeta,
    polygamma_impl,
)
from ..special_functions import betaln as _betaln

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "digamma", "psi", "xlogy", "xlog1py", "entr",
    "logsumexp", "ndtr",
    "gamma", "gammasgn", "loggamma", "betaln", "beta", "factorial", "comb", "poch", "gammainc", "gammaincc",
    "betainc", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx", "exp1", "expi",
    "expn", "kl_div", "rel_entr", "softmax", "log_softmax", "multigammaln", "boxcox", "boxcox1p", "bernoulli",
    "bessel_jn", "spence", "owens_t", "wofz", "dawsn", "fresnel", "sici", "hyp1f1", "hyp2f1", "sph_harm_y",
]



def _any_narrow_float(args: tuple, kwargs: dict) -> bool:
    """Whether an argument is float16 or bfloat16: such calls run op by op eagerly, as JAX's (which does not jit
    most of these functions), each operation rounding to that dtype; one compiled program would keep XLA's fused
    chain in float32 and round once (see kiln.nn's ``narrow_float_arg``)."""
    return any(getattr(a, "dtype", None) in (dtypes.float16, dtypes.bfloat16) for a in (*args, *kwargs.values()))


# The special functions called eagerly on float32/float64 arguments: one compiled program per signature rather than
# one execution per operation (ndtr was 17, owens_t 85).
one_program_eagerly = eager_jit(op_by_op=_any_narrow_float, ints_to_inexact=True)

def _unary(fname: str, lax_fn, doc: str):
    where = f"kiln.scipy.special.{fname}"

    def fn(x):
        (x,) = float_args(where, x)
        return lax_fn(x)
    fn.__name__ = fname
    fn.__doc__ = doc
    return one_program_eagerly(fn)


erf = _unary("erf", lax.erf, "The error function, ``2/sqrt(pi) * integral of exp(-t**2) from 0 to x``.")
erfc = _unary("erfc", lax.erfc, "The complementary error function ``1 - erf(x)`` (accurate for large x).")
erfinv = _unary("erfinv", lax.erf_inv, "The inverse of the error function on ``(-1, 1)``.")
gammaln = _unary("gammaln", lax.lgamma, "The log of the absolute value of the gamma function.")
digamma = _unary("digamma", lax.digamma, "The digamma function, the derivative of ``gammaln``.")
psi = digamma
expit = _unary("expit", lax.logistic, "The logistic sigmoid ``1 / (1 + exp(-x))``.")


@one_program_eagerly
def logit(x):
    """The inverse of :func:`expit`, ``log(x / (1 - x))``."""
    (x,) = float_args("kiln.scipy.special.logit", x)
    return lax.log(lax.div(x, lax.sub(full_like_(x, 1), x)))


@one_program_eagerly
def ndtr(x):
    """The standard normal CDF, ``(1 + erf(w)) / 2`` for ``w = x / sqrt(2)``: ``1 + erf(w)`` near 0, ``2 -
    erfc(|w|)`` or ``erfc(|w|)`` in the tails (JAX's formula, branch for branch, for JAX's roundings)."""
    (x,) = float_args("kiln.scipy.special.ndtr", x)
    half_sqrt_2 = full_like_(x, 0.5 * np.sqrt(2.0))
    w = lax.mul(x, half_sqrt_2)
    z = lax.abs(w)
    tail = lax.select(lax.gt(w, full_like_(x, 0)), lax.sub(full_like_(x, 2), lax.erfc(z)), lax.erfc(z))
    near_0 = lax.add(full_like_(x, 1), lax.erf(w))
    return lax.mul(full_like_(x, 0.5), lax.select(lax.lt(z, half_sqrt_2), near_0, tail))


def _binary(where: str, x: Any, y: Any) -> list[Any]:
    x, y = broadcast_args(where, x, y)
    return float_args(where, x, y, promoted=True)


@one_program_eagerly
def xlogy(x, y):
    """``x * log(y)``, and 0 where ``x == 0`` (even where ``log(y)`` is infinite)."""
    x, y = _binary("kiln.scipy.special.xlogy", x, y)
    return lax.select(lax.eq(x, full_like_(x, 0)), full_like_(x, 0), lax.mul(x, lax.log(y)))


@one_program_eagerly
def xlog1py(x, y):
    """``x * log1p(y)``, and 0 where ``x == 0``."""
    x, y = _binary("kiln.scipy.special.xlog1py", x, y)
    return lax.select(lax.eq(x, full_like_(x, 0)), full_like_(x, 0), lax.mul(x, lax.log1p(y)))


@one_program_eagerly
def entr(x):
    """Elementwise entropy: ``-x * log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    (x,) = float_args("kiln.scipy.special.entr", x)
    zero = full_like_(x, 0)
    out = lax.select(lax.gt(x, zero), lax.neg(lax.mul(x, lax.log(x))),
                     lax.select(lax.eq(x, zero), zero, full_like_(x, -np.inf)))
    return lax.select(lax.ne(x, x), x, out)


@eager_jit("axis", "keepdims", "return_sign", op_by_op=narrow_float_arg)  # (as kiln.nn.logsumexp)
def logsumexp(a, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (as ``scipy.special.logsumexp``).

    With ``return_sign``, returns ``(log|sum|, sign(sum))``; otherwise a negative sum gives NaN.
    """
    return logsumexp_impl("kiln.scipy.special.logsumexp", a, axis, b, keepdims, return_sign, where)


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def _args(where: str, *xs: Any, broadcast: bool = False) -> list[Any]:
    """Promote to one inexact (real) dtype; with ``broadcast`` also to one shape (loops need that)."""
    if broadcast:
        xs = broadcast_args(where, *xs)
        xs = float_args(where, *xs, promoted=True)
    else:
        xs = float_args(where, *xs)
    return [materialize(x) if isinstance(x, Literal) else x for x in xs]












# ---------------------------------------------------------------------------------------------
# Gamma and beta functions
# ---------------------------------------------------------------------------------------------

@eager_jit()
def gammasgn(x):
    """The sign of the gamma function: NaN at the poles (0 is +-1 by its sign bit), -inf and NaN."""
    (x,) = _args("kiln.scipy.special.gammasgn", x)
    fl = jnp.floor(x)
    neg = x < 0
    nan = (neg & (x == fl)) | jnp.isnan(x)
    minus = (neg & (jnp.fmod(fl, 2) != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.where(nan, np.nan, jnp.where(minus, -1.0, 1.0)).astype(x.dtype)


@one_program_eagerly
def gamma(x):
    """The gamma function (real inputs), ``gammasgn(x) * exp(gammaln(x))``."""
    (x,) = _args("kiln.scipy.special.gamma", x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


@one_program_eagerly
def loggamma(x):
    """The log of the gamma function for real ``x > 0`` (NaN for ``x <= 0``; complex input is not supported)."""
    (x,) = _args("kiln.scipy.special.loggamma", x)
    return jnp.where(x > 0, lax.lgamma(x), np.nan)






@one_program_eagerly
def betaln(a, b):
    """``log(abs(beta(a, b)))``, accurate when one argument is large."""
    a, b = _args("kiln.scipy.special.betaln", a, b)
    return _betaln(a, b)


@one_program_eagerly
def beta(a, b):
    """The beta function ``gamma(a) * gamma(b) / gamma(a + b)``."""
    a, b = _args("kiln.scipy.special.beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(betaln(a, b))


def factorial(n, exact: bool = False):
    """``n!`` as a float (``gamma(n + 1)``), 0 for negative n. ``exact=True`` is not supported (as JAX)."""
    if exact:
        raise NotImplementedError("kiln.scipy.special.factorial: exact=True is not supported (kiln has no "
                                  "arbitrary-precision integers); use exact=False")
    (n,) = _args("kiln.scipy.special.factorial", n)
    return jnp.where(n < 0, 0.0, jnp.exp(lax.lgamma(n + 1))).astype(n.dtype)


def comb(N, k, *, exact: bool = False, repetition: bool = False):
    """The number of combinations of N things taken k at a time, as a float; 0 outside ``0 <= k <= N``."""
    if exact:
        raise NotImplementedError("kiln.scipy.special.comb: exact=True is not supported; use exact=False")
    N, k = _args("kiln.scipy.special.comb", N, k)
    if repetition:
        return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k)).astype(N.dtype)
    ok = (k <= N) & (N >= 0) & (k >= 0)
    sN, sk = jnp.where(ok, N, 0.0), jnp.where(ok, k, 0.0)
    out = jnp.exp(lax.lgamma(sN + 1) - lax.lgamma(sk + 1) - lax.lgamma(sN - sk + 1))
    return jnp.where(ok, out, 0.0).astype(N.dtype)


@one_program_eagerly
def poch(z, m):
    """The Pochhammer symbol ``gamma(z + m) / gamma(z)`` (rising factorial)."""
    z, m = _args("kiln.scipy.special.poch", z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    out = sign * jnp.exp(lax.lgamma(z + m) - lax.lgamma(z))
    # m == 0 is 1 even at poles of z; a pole of z alone gives 0 (as SciPy).
    pole_z = (z <= 0) & (z == jnp.floor(z))
    pole_zm = ((z + m) <= 0) & ((z + m) == jnp.floor(z + m))
    out = jnp.where(pole_z & ~pole_zm, 0.0, out)
    return jnp.where(m == 0, 1.0, out).astype(z.dtype)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a static positive int)."""
    try:
        d = int(d)
    except TypeError:
        raise TypeError("kiln.scipy.special.multigammaln: d must be a static Python int (the dimension), got "
                        f"{type(d).__name__}") from None
    if d < 1:
        raise ValueError(f"kiln.scipy.special.multigammaln: d must be >= 1, got {d}")
    (a,) = _args("kiln.scipy.special.multigammaln", a)
    j = np.arange(d, dtype=np.float64) / 2
    terms = lax.lgamma(jnp.expand_dims(a, -1) - j.astype(a.dtype))
    return jnp.sum(terms, axis=-1) + (d * (d - 1) / 4 * np.log(np.pi))


# ---------------------------------------------------------------------------------------------
# Regularized incomplete gamma and beta functions
# ---------------------------------------------------------------------------------------------















@one_program_eagerly
def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)`` (``a > 0``, ``x >= 0``).

    A power series for ``x < a + 1`` and a continued fraction otherwise, each a while loop that stops
    when every element has converged. Differentiable in ``x`` and ``a`` (the derivative in ``a`` is
    carried through the loops in forward mode).
    """
    a, x = _args("kiln.scipy.special.gammainc", a, x, broadcast=True)
    return _gammainc(a, x)


@one_program_eagerly
def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, accurate where it is small."""
    a, x = _args("kiln.scipy.special.gammaincc", a, x, broadcast=True)
    return _gammaincc(a, x)








@one_program_eagerly
def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (``a, b > 0``, ``0 <= x <= 1``).

    A continued fraction (in a while loop until every element converges); differentiable in ``x``
    and in ``a`` and ``b`` (carried through the loop in forward mode).
    """
    a, b, x = _args("kiln.scipy.special.betainc", a, b, x, broadcast=True)
    return _betainc(a, b, x)


# ---------------------------------------------------------------------------------------------
# Zeta and polygamma
# ---------------------------------------------------------------------------------------------





def bernoulli(n):
    """The Bernoulli numbers ``B_0 .. B_n`` (``n`` a static int), with ``B_1 = -1/2`` as SciPy."""
    try:
        n = int(n)
    except TypeError:
        raise TypeError(f"kiln.scipy.special.bernoulli: n must be a static Python int, got {type(n).__name__}") \
            from None
    if n < 0:
        raise ValueError(f"kiln.scipy.special.bernoulli: n must be >= 0, got {n}")
    values = _bernoulli_fractions(n) if n > 40 else _B[:n + 1]
    dtype = np.float64 if jnp.zeros(()).dtype == np.float64 else np.float32
    return jnp.asarray(np.array([float(v) for v in values]), dtype=dtype)












@one_program_eagerly
def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_k (q + k)**-x`` (``x > 1``); ``q=None`` is the Riemann zeta ``q = 1``.

    Euler-Maclaurin summation; differentiable in ``q``.
    """
    if q is None:
        (x,) = _args("kiln.scipy.special.zeta", x)
        q = jnp.ones_like(x)
    x, q = _args("kiln.scipy.special.zeta", x, q, broadcast=True)
    return _zeta(x, q)


@one_program_eagerly
def polygamma(n, x):
    """The n-th derivative of the digamma function (``n`` a non-negative integer)."""
    n, x = _args("kiln.scipy.special.polygamma", n, x, broadcast=True)
    return polygamma_impl(n, x)


# ---------------------------------------------------------------------------------------------
# Normal distribution: log_ndtr, ndtri, erfcx
# ---------------------------------------------------------------------------------------------

def _exp_square(y):
    """exp(y * y) without the rounding error of y * y (y split into a short head and a tail)."""
    head = jnp.floor(y * 64) / 64
    tail = y - head
    return jnp.exp(head * head) * jnp.exp(tail * (2 * head + tail))


def _erfcx_impl(x):
    big = 12.0 if _is64(x) else 8.0
    ax = jnp.abs(x)
    small = jnp.where(ax < big, ax, 0.0)
    direct = _exp_square(small) * lax.erfc(small)
    # Asymptotic series 1/(y sqrt(pi)) * sum (-1)^n (2n-1)!! / (2y^2)^n for y >= big.
    y = jnp.where(ax < big, big, ax)
    inv = 1 / (2 * y * y)
    term, total = jnp.ones_like(y), jnp.ones_like(y)
    for n in range(1, 16):
        term = -term * (2 * n - 1) * inv
        total = total + term
    asym = total / (y * np.sqrt(np.pi))
    pos = jnp.where(ax < big, direct, asym)
    neg = 2 * _exp_square(jnp.minimum(ax, 27.0 if _is64(x) else 9.5)) - pos
    neg = jnp.where(ax > (26.7 if _is64(x) else 9.4), np.inf, neg)
    return jnp.where(x >= 0, pos, neg)


_erfcx = _with_partials(_erfcx_impl, {0: lambda out, x: 2 * x * out - 2 / np.sqrt(np.pi)})


@one_program_eagerly
def erfcx(x):
    """The scaled complementary error function ``exp(x**2) * erfc(x)``, accurate for large x."""
    (x,) = _args("kiln.scipy.special.erfcx", x)
    return _erfcx(x)


def _log_ndtr_impl(x):
    # x >= -1: log1p(-ndtr(-x)); below, log(erfcx(-x/sqrt2)/2) - x**2/2 (no underflow).
    upper = jnp.log1p(-0.5 * lax.erfc(jnp.where(x >= -1, x, 0.0) / np.sqrt(2)))
    xl = jnp.where(x < -1, x, -1.0)
    lower = jnp.log(0.5 * _erfcx_impl(-xl / np.sqrt(2))) - 0.5 * xl * xl
    return jnp.where(x >= -1, upper, lower)


def _norm_logpdf(x):
    return -0.5 * x * x - 0.5 * np.log(2 * np.pi)


_log_ndtr = _with_partials(_log_ndtr_impl, {0: lambda out, x: jnp.exp(_norm_logpdf(x) - out)})


@eager_jit("series_order", op_by_op=_any_narrow_float, ints_to_inexact=True)
def log_ndtr(x, series_order: int = 3):
    """``log(ndtr(x))``, accurate far into both tails (``series_order`` is accepted for JAX's signature)."""
    if not isinstance(series_order, int) or series_order < 0 or series_order > 30:
        raise ValueError(f"kiln.scipy.special.log_ndtr: series_order must be an int in [0, 30], got "
                         f"{series_order!r}")
    (x,) = _args("kiln.scipy.special.log_ndtr", x)
    return _log_ndtr(x)


def _ndtri_impl(p):
    q = jnp.where(p > 0.5, 1 - p, p)
    qs = jnp.where((q > 0) & (q <= 0.5), q, 0.25)
    # Abramowitz & Stegun 26.2.23 as the start, then Newton steps on log(ndtr(z)) = log(q).
    t = jnp.sqrt(-2 * jnp.log(qs))
    z = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t
                                                               + 0.001308 * t * t * t))
    logq = jnp.log(qs)
    for _ in range(3):
        lz = _log_ndtr_impl(z)
        z = z - (lz - logq) * jnp.exp(lz - _norm_logpdf(z))
    z = jnp.where(p > 0.5, -z, z)
    z = jnp.where(p == 0, -np.inf, jnp.where(p == 1, np.inf, z))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), np.nan, z)


_ndtri = _with_partials(_ndtri_impl, {0: lambda out, p: jnp.exp(-_norm_logpdf(out))})


@one_program_eagerly
def ndtri(p):
    """The inverse of :func:`ndtr`: the standard normal quantile of ``p`` (NaN outside ``[0, 1]``)."""
    (p,) = _args("kiln.scipy.special.ndtri", p)
    return _ndtri(p)


# ---------------------------------------------------------------------------------------------
# Modified Bessel functions of order 0 and 1
# ---------------------------------------------------------------------------------------------



@one_program_eagerly
def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) * i0(x)``."""
    (x,) = _args("kiln.scipy.special.i0e", x)
    return _bessel_ie(x, 0)


@one_program_eagerly
def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    (x,) = _args("kiln.scipy.special.i0", x)
    return jnp.exp(jnp.abs(x)) * _bessel_ie(x, 0)


@one_program_eagerly
def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) * i1(x)``."""
    (x,) = _args("kiln.scipy.special.i1e", x)
    return _bessel_ie(x, 1)


@one_program_eagerly
def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = _args("kiln.scipy.special.i1", x)
    return jnp.exp(jnp.abs(x)) * _bessel_ie(x, 1)


# ---------------------------------------------------------------------------------------------
# Exponential integrals
# ---------------------------------------------------------------------------------------------

_EULER = 0.5772156649015329


def _expn_impl(n, x):
    """E_n(x) for integer n >= 0 and x >= 0: the series for x <= 1, a continued fraction above."""
    eps, tiny = _eps(x), _tiny(x) * 16
    limit = 1000
    small = (x <= 1)
    # Continued fraction (modified Lentz) for x > 1.
    xc = jnp.where(small, 2.0, x)
    b = xc + n
    d = 1 / b

    def cond(c):
        i, b, c_, d, h, delta = c
        return (i < limit) & jnp.any(jnp.abs(delta - 1) > eps)

    def body(c):
        i, b, c_, d, h, _ = c
        an = -i * (n - 1 + i)
        b = b + 2
        d = 1 / (an * d + b)
        c_ = b + an / c_
        delta = c_ * d
        return i + 1, b, c_, d, h * delta, delta

    init = (_one(x), b, jnp.full_like(x, 1 / tiny), d, d, jnp.full_like(x, 2.0))
    cf = while_loop(cond, body, init)[4] * jnp.exp(-xc)
    # Power series for 0 < x <= 1.
    xs = jnp.where(small & (x > 0), x, 0.5)
    psi = lax.digamma(jnp.maximum(n, 1.0))
    total = jnp.where(n == 1, -jnp.log(xs) - _EULER, 1 / jnp.where(n == 1, 1.0, n - 1))
    fact = jnp.ones_like(xs)

    def series_step(i, c):
        fact, total = c
        i = i.astype(xs.dtype)
        fact = -fact * xs / i
        at_pole = (n - 1) == i
        delta = jnp.where(at_pole, fact * (-jnp.log(xs) + psi), -fact / jnp.where(at_pole, 1.0, i - n + 1))
        return fact, total + delta

    _, total = fori_loop(1, 40, series_step, (fact, total))
    out = jnp.where(small, total, cf)
    out = jnp.where(n == 0, jnp.exp(-x) / x, out)
    out = jnp.where((x == 0) & (n > 0), jnp.where(n > 1, 1 / jnp.maximum(n - 1, 1.0), np.inf), out)
    out = jnp.where(jnp.isposinf(x), 0.0, out)
    return jnp.where((x < 0) | (n < 0) | jnp.isnan(x) | jnp.isnan(n), np.nan, out)


@one_program_eagerly
def expn(n, x):
    """The generalized exponential integral ``E_n(x) = integral of exp(-x t) / t**n for t >= 1``.

    ``n`` is a non-negative integer (NaN otherwise); differentiable in ``x`` (``-E_{n-1}(x)``).
    """
    n, x = _args("kiln.scipy.special.expn", n, x, broadcast=True)
    n = jnp.where(n == jnp.floor(n), n, np.nan)
    return _expn(n, x)


_expn = _with_partials(_expn_impl, {0: lambda out, n, x: jnp.full_like(out, np.nan),
                                    1: lambda out, n, x: -_expn_impl(n - 1, x)})


@one_program_eagerly
def exp1(x):
    """The exponential integral ``E_1(x)`` for ``x >= 0`` (NaN for negative x)."""
    (x,) = _args("kiln.scipy.special.exp1", x)
    return _expn(jnp.ones_like(x), x)


def _expi_impl(x):
    eps = _eps(x)
    big = 40.0
    ax = jnp.where((x > 0) & (x <= big), x, 1.0)

    def cond(c):
        k, term, total = c
        return (k < 1000) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

    def body(c):
        k, term, total = c
        term = term * ax * k / ((k + 1) * (k + 1))  # x**k / (k k!)
        return k + 1, term, total + term

    _, _, s = while_loop(cond, body, (_one(ax), ax, ax))
    series = _EULER + jnp.log(ax) + s
    y = jnp.where(x > big, x, big)
    term, total = jnp.ones_like(y), jnp.ones_like(y)

    def asym_step(k, c):
        term, total = c
        term = term * k.astype(y.dtype) / y
        return term, total + term

    _, total = fori_loop(1, 40, asym_step, (term, total))
    asym = jnp.exp(y) / y * total
    pos = jnp.where(x <= big, series, asym)
    neg = -_expn_impl(jnp.ones_like(x), jnp.where(x < 0, -x, 1.0))
    out = jnp.where(x > 0, pos, jnp.where(x < 0, neg, -np.inf))
    return jnp.where(jnp.isposinf(x), np.inf, jnp.where(jnp.isneginf(x), 0.0, out))


_expi = _with_partials(_expi_impl, {0: lambda out, x: jnp.exp(x) / x})


@one_program_eagerly
def expi(x):
    """The exponential integral ``Ei(x)`` (principal value); ``Ei(x) = -E_1(-x)`` for negative x."""
    (x,) = _args("kiln.scipy.special.expi", x)
    return _expi(x)


# ---------------------------------------------------------------------------------------------
# Entropies, softmax, Box-Cox
# ---------------------------------------------------------------------------------------------

@one_program_eagerly
def rel_entr(p, q):
    """Elementwise relative entropy: ``p log(p/q)`` for p, q > 0; 0 for p == 0, q >= 0; inf otherwise."""
    p, q = _args("kiln.scipy.special.rel_entr", p, q)
    both = (p > 0) & (q > 0)
    safe_p, safe_q = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    out = jnp.where(both, safe_p * jnp.log(safe_p / safe_q), jnp.where((p == 0) & (q >= 0), 0.0, np.inf))
    return jnp.where(jnp.isnan(p) | jnp.isnan(q), np.nan, out).astype(p.dtype)


@one_program_eagerly
def kl_div(p, q):
    """Elementwise ``p log(p/q) - p + q`` (for p, q > 0); ``q`` for p == 0, q >= 0; inf otherwise."""
    p, q = _args("kiln.scipy.special.kl_div", p, q)
    both = (p > 0) & (q > 0)
    safe_p, safe_q = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    out = jnp.where(both, safe_p * jnp.log(safe_p / safe_q) - safe_p + safe_q,
                    jnp.where((p == 0) & (q >= 0), q, np.inf))
    return jnp.where(jnp.isnan(p) | jnp.isnan(q), np.nan, out).astype(p.dtype)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (default: all axes, as SciPy)."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (default: all axes, as SciPy)."""
    return _nn.log_softmax(x, axis=axis)


@one_program_eagerly
def boxcox(x, lmbda):
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda``, ``log(x)`` for ``lmbda == 0``."""
    x, lmbda = _args("kiln.scipy.special.boxcox", x, lmbda)
    return _boxcox_core(jnp.log(x), lmbda)


@one_program_eagerly
def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``: ``((1 + x)**lmbda - 1) / lmbda``, ``log1p(x)`` for ``lmbda == 0``."""
    x, lmbda = _args("kiln.scipy.special.boxcox1p", x, lmbda)
    return _boxcox_core(jnp.log1p(x), lmbda)


def _boxcox_core(logx, lmbda):
    safe = jnp.where(lmbda == 0, 1.0, lmbda)
    return jnp.where(lmbda == 0, logx, jnp.expm1(safe * logx) / safe)


# ---------------------------------------------------------------------------------------------
# Bessel J of integer order, the dilogarithm, Owen's T
# ---------------------------------------------------------------------------------------------

@eager_jit("v", "n_iter")
def bessel_jn(z, *, v: int, n_iter: int = 50):
    """``J_0(z) .. J_v(z)`` (shape ``(v + 1, *z.shape)``) for real floating ``z``, by Miller's backward
    recurrence from order ``max(n_iter, v + 20)`` (rescaled as it goes, so it cannot overflow), normalized
    with ``J_0 + 2 (J_2 + J_4 + ...) = 1``. Accurate while ``n_iter`` comfortably exceeds ``|z|``."""
    where = "kiln.scipy.special.bessel_jn"
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
        raise TypeError(f"{where}: v must be a non-negative Python int (the largest order), got {v!r}")
    if not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"{where}: n_iter must be a positive int, got {n_iter!r}")
    z = jnp.asarray(z)
    if not dtypes.is_inexact(z.dtype) or z.dtype.kind == "c":
        raise ValueError(f"{where}: z must be real floating point, got {z.dtype.name}; convert it with "
                         ".astype(float)")
    top = max(int(n_iter), int(v) + 20)
    top += top % 2
    zs = jnp.where(z == 0, 1.0, z)
    f_next, f = jnp.zeros_like(zs), jnp.full_like(zs, 1e-30)
    total = jnp.zeros_like(zs)
    kept: list[Any] = [None] * (v + 1)
    for k in range(top, 0, -1):
        if k <= v:
            kept[k] = f
        if k % 2 == 0:
            total = total + 2 * f
        f_next, f = f, (2 * k / zs) * f - f_next
        scale = jnp.where(jnp.abs(f) > 1e10, 1 / jnp.abs(f), 1.0)
        f, f_next, total = f * scale, f_next * scale, total * scale
        kept = [None if x is None else x * scale for x in kept]
    kept[0] = f
    total = total + f
    out = jnp.stack([x / total for x in kept])
    at_zero = jnp.asarray((np.arange(v + 1) == 0).astype(np.float64), dtype=z.dtype)
    return jnp.where(z == 0, jnp.reshape(at_zero, (v + 1,) + (1,) * z.ndim), out)


def _dilog_series(w):
    """Li2(w) for |w| <= 1/2 by its power series."""

    def step(k, c):
        term, total = c
        term = term * w
        k = k.astype(w.dtype)
        return term, total + term / (k * k)

    return fori_loop(1, 60, step, (jnp.ones_like(w), jnp.zeros_like(w)))[1]


def _dilog(w):
    """The dilogarithm Li2(w) for real w <= 1."""
    pi2_6 = np.pi ** 2 / 6
    a = jnp.abs(w) <= 0.5
    hi = w > 0.5  # Li2(w) = pi^2/6 - log(w) log(1 - w) - Li2(1 - w)
    mid = (w < -0.5) & (w >= -1)  # Li2(w) = -Li2(w / (w - 1)) - log(1 - w)^2 / 2
    low = w < -1  # Li2(w) = -pi^2/6 - log(-w)^2 / 2 - Li2(1 / w), and 1/w in (-1, 0)
    wh = jnp.where(hi, w, 0.75)
    wm = jnp.where(mid, w, -0.75)
    wl = jnp.where(low, w, -2.0)
    inv = 1 / wl  # in (-1, 0): fold once more when below -1/2
    inv_mid = inv < -0.5
    li_inv = jnp.where(inv_mid, -_dilog_series(jnp.where(inv_mid, inv / (inv - 1), 0.0))
                       - 0.5 * jnp.log1p(-inv) ** 2, _dilog_series(jnp.where(inv_mid, 0.0, inv)))
    out = jnp.where(a, _dilog_series(jnp.where(a, w, 0.0)), 0.0)
    out = jnp.where(hi, pi2_6 - jnp.log(wh) * jnp.log1p(-wh) - _dilog_series(1 - wh), out)
    out = jnp.where(hi & (w == 1), pi2_6, out)
    out = jnp.where(mid, -_dilog_series(wm / (wm - 1)) - 0.5 * jnp.log1p(-wm) ** 2, out)
    return jnp.where(low, -pi2_6 - 0.5 * jnp.log(-wl) ** 2 - li_inv, out)


@one_program_eagerly
def spence(x):
    """Spence's function ``integral from 1 to x of log(t) / (1 - t) dt`` for ``x >= 0`` (``Li2(1 - x)``);
    NaN for negative or infinite x (as SciPy)."""
    (x,) = _args("kiln.scipy.special.spence", x)
    out = _dilog(1 - jnp.where(x >= 0, x, 1.0))
    return jnp.where((x < 0) | jnp.isnan(x) | jnp.isinf(x), np.nan, out)  # SciPy: spence(inf) is NaN


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)


def _owens_t_small_a(h, a):
    """T(h, a) for 0 <= a <= 1 by 48-point Gauss-Legendre quadrature of its integral over [0, a]."""
    t = (jnp.asarray(_GL_NODES, dtype=h.dtype) + 1) / 2  # nodes on [0, 1]
    w = jnp.asarray(_GL_WEIGHTS / 2, dtype=h.dtype)
    x = a[..., None] * t
    f = jnp.exp(-0.5 * (h * h)[..., None] * (1 + x * x)) / (1 + x * x)
    return a * jnp.sum(w * f, axis=-1) / (2 * np.pi)


@one_program_eagerly
def owens_t(h, a):
    """Owen's T function ``1/(2 pi) integral from 0 to a of exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``.

    Gauss-Legendre quadrature for ``|a| <= 1``; larger ``|a|`` use ``T(h, a) = (Phi(h) Q(ah) +
    Phi(ah) Q(h)) / 2 - T(ah, 1/a)``.
    """
    h, a = _args("kiln.scipy.special.owens_t", h, a, broadcast=True)
    ah, aa = jnp.abs(h), jnp.abs(a)
    small = aa <= 1
    t_small = _owens_t_small_a(ah, jnp.where(small, aa, 0.0))
    ab = jnp.where(small, 2.0, aa)
    p_h, q_h = ndtr(ah), ndtr(-ah)
    p_ah, q_ah = ndtr(ab * ah), ndtr(-ab * ah)
    t_big = 0.5 * (p_h * q_ah + p_ah * q_h) - _owens_t_small_a(ab * ah, 1 / ab)
    out = jnp.sign(a) * jnp.where(small, t_small, t_big)
    out = jnp.where(jnp.isinf(aa), jnp.sign(a) * 0.5 * ndtr(-ah), out)
    return jnp.where(jnp.isnan(h) | jnp.isnan(a), np.nan, out)


# ---------------------------------------------------------------------------------------------
# The Faddeeva function and what follows from it: wofz, dawsn, fresnel
# ---------------------------------------------------------------------------------------------

def _weideman_coefficients(n: int) -> tuple[float, np.ndarray]:
    """Weideman's (1994) rational approximation of w(z) in the upper half plane: the scale L and the
    polynomial coefficients (highest degree first), from the FFT of exp(-t^2) (L^2 + t^2) sampled at
    t = L tan(theta / 2) (computed here with NumPy, once, as constants)."""
    m = 2 * n
    L = np.sqrt(n / np.sqrt(2))
    k = np.arange(-m + 1, m)
    t = L * np.tan(k * np.pi / m / 2)
    f = np.concatenate([[0.0], np.exp(-t * t) * (L * L + t * t)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return L, a[1:n + 1][::-1].copy()


_WEIDEMAN = {np.dtype(np.float32): _weideman_coefficients(20), np.dtype(np.float64): _weideman_coefficients(44)}


def _wofz_upper(z, real_dtype):
    """w(z) for Im z >= 0."""
    L, coef = _WEIDEMAN[np.dtype(real_dtype)]
    denom = L - 1j * z
    Z = (L + 1j * z) / denom
    p = jnp.zeros_like(z)
    for c in coef:
        p = p * Z + c
    return 2 * p / (denom * denom) + (1 / np.sqrt(np.pi)) / denom


def _wofz(z):
    real_dtype = np.float64 if z.dtype == np.complex128 else np.float32
    upper = jnp.imag(z) >= 0
    zu = jnp.where(upper, z, -z)
    w = _wofz_upper(zu, real_dtype)
    return jnp.where(upper, w, 2 * jnp.exp(-z * z) - w)


@one_program_eagerly
def wofz(z):
    """The Faddeeva function ``w(z) = exp(-z^2) erfc(-i z)`` (complex; real input is made complex), by
    Weideman's rational approximation (``w(z) = 2 exp(-z^2) - w(-z)`` below the real axis)."""
    check_arraylike("kiln.scipy.special.wofz", z)
    z = jnp.asarray(z)
    if z.dtype.kind != "c":
        if not dtypes.is_inexact(z.dtype):
            z = z.astype(dtypes.default_float_dtype())
        z = z.astype(np.complex128 if z.dtype == np.float64 else np.complex64)
    return _wofz(z)


def _dawsn_impl(x):
    c = jnp.asarray(x).astype(np.complex128 if x.dtype == np.float64 else np.complex64)
    return (np.sqrt(np.pi) / 2) * jnp.imag(_wofz_upper(c, x.dtype)).astype(x.dtype)


_dawsn = _with_partials(_dawsn_impl, {0: lambda out, x: 1 - 2 * x * out})


@one_program_eagerly
def dawsn(x):
    """Dawson's integral ``exp(-x^2) * integral from 0 to x of exp(t^2) dt`` (``sqrt(pi)/2 Im w(x)``)."""
    (x,) = _args("kiln.scipy.special.dawsn", x)
    return _dawsn(x)


def _fresnel_impl(x):
    ax = jnp.abs(x)
    ctype = np.complex128 if x.dtype == np.float64 else np.complex64
    # C + iS = (1 + i)/2 erf(z), z = sqrt(pi)/2 (1 - i) x, and erf(z) = 1 - exp(-z^2) w(iz) with
    # exp(-z^2) = exp(i pi x^2 / 2) and iz = sqrt(pi)/2 (1 + i) x in the upper half plane.
    iz = (np.sqrt(np.pi) / 2) * (1 + 1j) * ax.astype(ctype)
    phase = (np.pi / 2) * ax * ax
    e = jnp.cos(phase).astype(ctype) + 1j * jnp.sin(phase).astype(ctype)
    erf = 1 - e * _wofz_upper(iz, x.dtype)
    cs = (0.5 + 0.5j) * erf
    sign = jnp.sign(x)
    S, C = sign * jnp.imag(cs).astype(x.dtype), sign * jnp.real(cs).astype(x.dtype)
    return jnp.where(jnp.isinf(x), sign * 0.5, S), jnp.where(jnp.isinf(x), sign * 0.5, C)


@custom_jvp
def _fresnel(x):
    return _fresnel_impl(x)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _fresnel_impl(x)
    phase = (np.pi / 2) * x * x
    return out, (jnp.sin(phase) * t, jnp.cos(phase) * t)


@one_program_eagerly
def fresnel(x):
    """The Fresnel integrals ``(S(x), C(x))``: integrals from 0 to x of ``sin(pi t^2 / 2)`` and ``cos(pi t^2 / 2)``."""
    (x,) = _args("kiln.scipy.special.fresnel", x)
    return _fresnel(x)


# ---------------------------------------------------------------------------------------------
# Sine and cosine integrals
# ---------------------------------------------------------------------------------------------

def _sici_impl(x):
    ax = jnp.abs(x)
    small = ax <= 2
    # Power series for |x| <= 2.
    xs = jnp.where(small, ax, 1.0)
    si, ci = jnp.zeros_like(xs), jnp.zeros_like(xs)
    term = xs  # (-1)^k x^(2k+1) / (2k+1)!
    for k in range(20):
        si = si + term / (2 * k + 1)
        term_c = -term * xs / (2 * k + 2)  # (-1)^(k+1) x^(2k+2) / (2k+2)!
        ci = ci + term_c / (2 * k + 2)
        term = term_c * xs / (2 * k + 3)
    ci = ci + _EULER + jnp.log(xs)
    # Continued fraction of E1(ix) = -Ci(x) + i (Si(x) - pi/2) for x > 2 (modified Lentz, complex).
    xl = jnp.where(small | ~jnp.isfinite(ax), 3.0, ax)
    ctype = np.complex128 if x.dtype == np.float64 else np.complex64
    eps, tiny = _eps(x), _tiny(x) * 16
    b = 1 + 1j * xl.astype(ctype)
    d = 1 / b

    def cond(c):
        return (c[0] < 500) & jnp.any(jnp.abs(c[5] - 1) > eps)

    def body(c):
        i, b, c_, d, h, _ = c
        a = -(i - 1) ** 2
        b = b + 2
        d = 1 / (a * d + b)
        c_ = b + a / c_
        delta = c_ * d
        return i + 1, b, c_, d, h * delta, delta

    init = (jnp.full((), 2.0, x.dtype), b, jnp.full_like(b, 1 / tiny), d, d, jnp.full_like(b, 2.0))
    h = while_loop(cond, body, init)[4]
    h = (jnp.cos(xl) - 1j * jnp.sin(xl)).astype(ctype) * h
    si_big, ci_big = np.pi / 2 + jnp.imag(h).astype(x.dtype), -jnp.real(h).astype(x.dtype)
    si = jnp.where(small, si, jnp.where(jnp.isinf(ax), np.pi / 2, si_big))
    ci = jnp.where(small, ci, jnp.where(jnp.isinf(ax), 0.0, ci_big))
    si = jnp.sign(x) * si
    ci = jnp.where(x == 0, -np.inf, jnp.where(jnp.isneginf(x), np.nan, ci))
    return si, ci


@custom_jvp
def _sici(x):
    return _sici_impl(x)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = _sici_impl(x)
    return out, (jnp.where(x == 0, 1.0, jnp.sin(x) / x) * t, jnp.cos(x) / x * t)


@one_program_eagerly
def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))``: power series for ``|x| <= 2``, a continued
    fraction of ``E1(ix)`` above. ``Ci(-x) = Ci(x)`` (the real part, as SciPy)."""
    (x,) = _args("kiln.scipy.special.sici", x)
    return _sici(x)


# ---------------------------------------------------------------------------------------------
# Hypergeometric functions 1F1 and 2F1
# ---------------------------------------------------------------------------------------------

def _hyp_series(nums: list, dens: list, z, tangents=None):
    """``sum_k prod (num)_k / prod (den)_k z^k / k!`` in a while loop until every term is negligible, and
    its derivative along ``tangents`` (one per parameter, nums then dens) when given."""
    eps = _eps(z)
    limit = 20000 if _is64(z) else 5000

    def cond(c):
        k, term, total = c
        return (k < limit) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

    def body(p, c):
        k, term, total = c
        ratio = z / (k + 1)
        for v in p[:len(nums)]:
            ratio = ratio * (v + k)
        for v in p[len(nums):]:
            ratio = ratio / (v + k)
        term = term * ratio
        return k + 1, term, total + term

    one = jnp.ones_like(z)
    init = (jnp.zeros((), z.dtype), one, one)
    params = tuple(nums) + tuple(dens)
    if tangents is None:
        return _loop(cond, body, init, params, watch=2, limit=limit)[0][2], None
    st, ts = _loop_from(cond, body, init, (None, None, None), params, tuple(tangents), watch=2, limit=limit)
    return st[2], ts[2]


def _nonpositive_int(v):
    return (v <= 0) & (v == jnp.floor(v))


def _hyp1f1_impl(a, b, x, wrt=None):
    neg = x < 0  # Kummer's transformation: 1F1(a; b; x) = exp(x) 1F1(b - a; b; -x), no cancellation
    a2 = jnp.where(neg, b - a, a)
    tangents = None
    if wrt == 0:
        tangents = (jnp.where(neg, -1.0, 1.0).astype(x.dtype), jnp.zeros_like(x))
    elif wrt == 1:
        tangents = (jnp.where(neg, 1.0, 0.0).astype(x.dtype), jnp.ones_like(x))
    bad_b = _nonpositive_int(b)
    val, dval = _hyp_series([a2], [jnp.where(bad_b, 1.0, b)], jnp.abs(x), tangents)
    scale = jnp.where(neg, jnp.exp(x), 1.0)
    if wrt is None:
        out = scale * val
        out = jnp.where(a == 0, 1.0, jnp.where(a == b, jnp.exp(x), out))
        return jnp.where(bad_b & (a != 0), np.inf, out)
    return jnp.where(bad_b, np.nan, scale * dval)


_hyp1f1 = _with_partials(_hyp1f1_impl, {
    0: lambda out, a, b, x: _hyp1f1_impl(a, b, x, 0),
    1: lambda out, a, b, x: _hyp1f1_impl(a, b, x, 1),
    2: lambda out, a, b, x: a / b * _hyp1f1_impl(a + 1, b + 1, x)})


@one_program_eagerly
def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function ``1F1(a; b; x)`` (real arguments): its power series in a
    while loop (Kummer's transformation for negative x). Differentiable in all three arguments."""
    a, b, x = _args("kiln.scipy.special.hyp1f1", a, b, x, broadcast=True)
    return _hyp1f1(a, b, x)


def _hyp2f1_impl(a, b, c, x, wrt=None):
    neg = x < 0  # Pfaff's transformation: (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)), the argument in [0, 1)
    z = jnp.where(neg, x / (x - 1), x)
    b2 = jnp.where(neg, c - b, b)
    one, zero = jnp.ones_like(x), jnp.zeros_like(x)
    sgn = jnp.where(neg, -1.0, 1.0).astype(x.dtype)
    tangents = {None: None, 0: (one, zero, zero), 1: (zero, sgn, zero),
                2: (zero, jnp.where(neg, 1.0, 0.0).astype(x.dtype), one)}[wrt]
    inside = (z >= 0) & (z < 1)
    bad_c = _nonpositive_int(c)
    val, dval = _hyp_series([a, b2], [jnp.where(bad_c, 1.0, c)], jnp.where(inside, z, 0.0), tangents)
    pref = jnp.where(neg, jnp.exp(-a * jnp.log1p(-jnp.where(neg, x, 0.0))), 1.0)
    if wrt is None:
        out = pref * val
        # x == 1: Gauss's theorem where it converges.
        gauss = jnp.exp(lax.lgamma(c) + lax.lgamma(c - a - b) - lax.lgamma(c - a) - lax.lgamma(c - b)) * \
            gammasgn(c) * gammasgn(c - a - b) * gammasgn(c - a) * gammasgn(c - b)
        out = jnp.where(x == 1, jnp.where(c - a - b > 0, gauss, np.inf), out)
        out = jnp.where(x > 1, np.inf, out)  # as SciPy's real 2F1
        out = jnp.where((a == 0) | (b == 0), 1.0, out)
        return jnp.where(bad_c, np.inf, out)
    dpref = jnp.where(neg & (wrt == 0), -jnp.log1p(-jnp.where(neg, x, 0.0)) * pref, 0.0)
    return jnp.where(bad_c | (x >= 1), np.nan, pref * dval + dpref * val)


_hyp2f1 = _with_partials(_hyp2f1_impl, {
    0: lambda out, a, b, c, x: _hyp2f1_impl(a, b, c, x, 0),
    1: lambda out, a, b, c, x: _hyp2f1_impl(a, b, c, x, 1),
    2: lambda out, a, b, c, x: _hyp2f1_impl(a, b, c, x, 2),
    3: lambda out, a, b, c, x: a * b / c * _hyp2f1_impl(a + 1, b + 1, c + 1, x)})


@one_program_eagerly
def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function ``2F1(a, b; c; x)`` for real ``x <= 1``: its power series in a
    while loop (Pfaff's transformation for negative x, Gauss's theorem at 1; inf above 1, as SciPy). Convergence
    slows as ``x`` (or ``x / (x - 1)``) nears 1. Differentiable in all four arguments."""
    a, b, c, x = _args("kiln.scipy.special.hyp2f1", a, b, c, x, broadcast=True)
    return _hyp2f1(a, b, c, x)


# ---------------------------------------------------------------------------------------------
# Spherical harmonics
# ---------------------------------------------------------------------------------------------

def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonic ``Y_n^m(theta, phi)`` (``theta`` the polar angle in [0, pi], ``phi`` the
    azimuth; SciPy's normalization and Condon-Shortley phase), complex.

    ``n_max`` (static; by default the largest ``n``, which must then be concrete) bounds the degree
    recurrence (a degree above it is computed as ``n_max``, as JAX); ``|m| > n`` gives 0. The normalized
    associated Legendre functions come from the stable three-term recurrence in the degree.
    """
    where = "kiln.scipy.special.sph_harm_y"
    if diff_n is not None:
        raise NotImplementedError(f"{where}: diff_n (derivatives) is not supported, as in JAX")
    if n_max is None:
        try:
            n_max = int(np.max(np.asarray(n)))
        except Exception:
            raise TypeError(f"{where}: n is traced, so pass n_max (the largest degree) as a static int") from None
    n_max = int(n_max)
    check_arraylike(where, n, m, theta, phi)
    theta_f, phi_f = _args(where, theta, phi, broadcast=True)
    n_arr, m_arr, theta_f, phi_f = jnp.broadcast_arrays(jnp.asarray(n), jnp.asarray(m), theta_f, phi_f)
    if theta_f.ndim == 0:
        n_arr, m_arr, theta_f, phi_f = (v[None] for v in (n_arr, m_arr, theta_f, phi_f))
    dtype = theta_f.dtype
    nn = jnp.minimum(n_arr, n_max).astype(dtype)
    mm = m_arr.astype(dtype)
    am = jnp.abs(mm)
    x, s = jnp.cos(theta_f), jnp.sin(theta_f)
    # Q_m^m = (-1)^m sqrt((2m + 1)/(4 pi) * Gamma(m + 1/2) / (sqrt(pi) m!)) sin(theta)^m
    log_mm = 0.5 * (jnp.log((2 * am + 1) / (4 * np.pi)) + lax.lgamma(am + 0.5) - 0.5 * np.log(np.pi)
                    - lax.lgamma(am + 1))
    sign_m = jnp.where(jnp.fmod(am, 2) == 1, -1.0, 1.0)
    q_prev = sign_m * jnp.exp(log_mm) * s ** am  # degree m
    q = x * jnp.sqrt(2 * am + 3) * q_prev  # degree m + 1
    result = jnp.where(nn == am, q_prev, jnp.where(nn == am + 1, q, 0.0))
    for j in range(2, n_max + 1):
        d = am + j
        a = jnp.sqrt((4 * d * d - 1) / jnp.maximum(d * d - am * am, 1.0))
        b = jnp.sqrt(((d - 1) ** 2 - am * am) / (4 * (d - 1) ** 2 - 1))
        q_prev, q = q, a * (x * q - b * q_prev)
        result = jnp.where(nn == d, q, result)
    result = jnp.where(am > nn, 0.0, result)
    # Y_n^{-m} = (-1)^m conj(Y_n^m): the same Legendre factor times (-1)^|m| and exp(i m phi).
    result = jnp.where(mm < 0, sign_m * result, result)
    ctype = np.complex128 if dtype == np.float64 else np.complex64
    return result.astype(ctype) * (jnp.cos(mm * phi_f) + 1j * jnp.sin(mm * phi_f)).astype(ctype)
