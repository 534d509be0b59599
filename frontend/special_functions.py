"""Special functions built from kiln operations (while loops, custom derivatives): the regularized
incomplete gamma and beta functions, the Hurwitz zeta function, polygamma and the exponentially scaled
modified Bessel functions of order 0 and 1.

They are ``kiln.lax``'s ``igamma``, ``igammac``, ``igamma_grad_a``, ``random_gamma_grad``, ``betainc``,
``zeta``, ``polygamma``, ``bessel_i0e`` and ``bessel_i1e`` (re-exported by ``kiln/lax.py``; JAX's
signatures: operands of one floating dtype and one shape, no promotion), and the implementations behind
``kiln.scipy.special``'s ``gammainc``, ``gammaincc``, ``betainc``, ``zeta``, ``polygamma``, ``i0e``,
``i1e`` (which promote and broadcast first). They live on F5, not in ``lax/`` (F2), because they are
made of while loops (F4) and custom derivatives (F3).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import lax
from . import numpy as jnp
from .ad.api import jvp as _jvp
from .ad.custom import custom_jvp
from .control.loops import fori_loop, while_loop
from .core import dtypes
from .core.errors import ShapeError
from .core.tracing import abstractify
from .lax.api import _operands

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc", "zeta", "polygamma",
           "bessel_i0e", "bessel_i1e"]


def _eps(x) -> float:
    return float(np.finfo(abstractify(x).dtype).eps)


def _tiny(x) -> float:
    return float(np.finfo(abstractify(x).dtype).tiny)


def _one(x):
    """A scalar 1 of x's dtype (a loop counter)."""
    return jnp.ones((), abstractify(x).dtype)


def _is64(x) -> bool:
    return abstractify(x).dtype == np.float64


def _with_partials(impl, analytic: dict):
    """``impl(*args)`` as a custom_jvp function whose partial derivative in argument i is
    ``analytic[i](out, *args)`` when given, else found by forward-mode differentiation of ``impl``
    (whose loops are forward-differentiable); every partial is a primal value, so reverse mode only
    transposes products."""
    def positional(*args):  # custom_jvp fills in defaults (as JAX); impl's own (wrt=None) must stay out
        return impl(*args)
    fn = custom_jvp(positional)

    @fn.defjvp
    def _rule(primals, tangents):
        out = impl(*primals)
        total = jnp.zeros_like(out)
        for i, t in enumerate(tangents):
            if i in analytic:
                d = analytic[i](out, *primals)
            else:
                def one(v, i=i):
                    args = list(primals)
                    args[i] = v
                    return impl(*args)
                _, d = _jvp(one, (primals[i],), (jnp.ones_like(primals[i]),))
            total = total + d * t
        return out, total
    return fn


def betaln(a, b):
    """``log(abs(beta(a, b)))``, accurate when one argument is large (``a``, ``b`` of one float dtype)."""
    lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
    direct = lax.lgamma(lo) + lax.lgamma(hi) - lax.lgamma(lo + hi)
    # For large ``hi``, lgamma(hi) - lgamma(lo + hi) cancels: write both by Stirling's formula, so that
    # only the small differences remain.
    big = (hi >= 10) & (lo > 0)
    h = jnp.where(big, hi, 10.0)
    l = jnp.where(big, lo, 1.0)
    diff = (-(h - 0.5) * jnp.log1p(l / h) - l * jnp.log(l + h) + l + _stirling_corr(h) - _stirling_corr(l + h))
    return jnp.where(big, lax.lgamma(l) + diff, direct)


def _stirling_corr(z):
    """``lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2)`` for z >= 10 (the Stirling series)."""
    zi = 1 / z
    z2 = zi * zi
    total = jnp.zeros_like(z)
    for k in range(7, 0, -1):
        total = total * z2 + float(_B[2 * k]) / (2 * k * (2 * k - 1))
    return total * zi


def _loop(cond, body, init, params, tparams=None, *, watch: int, limit: int):
    """``while cond(state): state = body(params, state)``; with ``tparams``, also the state's derivative
    along ``tparams`` (see :func:`_loop_from`, starting from a constant initial state). Returns
    ``(state, tangent_state or None)``; ``state[0]`` counts."""
    if tparams is None:
        return while_loop(cond, lambda st: body(params, st), init), None
    return _loop_from(cond, body, init, (None,) * len(init), params, tparams, watch=watch, limit=limit)


def _igamma_series(a, x, da):
    """P(a, x) by its power series (for x < a + 1), and dP/da when ``da`` is given."""
    eps = _eps(x)
    limit = 4000 if _is64(x) else 1000

    def cond(c):
        n, term, total = c
        return (n < limit) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

    def body(p, c):
        a, x = p
        n, term, total = c
        term = term * x / (a + n)
        return n + 1, term, total + term

    one = jnp.ones_like(x)
    st, ts = _loop(cond, body, (_one(x), one, one), (a, x), None if da is None else (da, jnp.zeros_like(x)),
                   watch=2, limit=limit)
    pref = jnp.exp(a * jnp.log(x) - x - lax.lgamma(a + 1))
    if da is None:
        return pref * st[2], None
    return pref * st[2], pref * (st[2] * (jnp.log(x) - lax.digamma(a + 1)) + ts[2])


def _igammac_cf(a, x, da):
    """Q(a, x) by its continued fraction (for x >= a + 1), modified Lentz's method; and dQ/da."""
    eps, tiny = _eps(x), _tiny(x) * 16
    limit = 4000 if _is64(x) else 1000

    def cond(c):
        return (c[0] < limit) & jnp.any(jnp.abs(c[5] - 1) > eps)

    def body(p, c):
        a, x = p
        i, b, c_, d, h, _ = c
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = jnp.where(jnp.abs(d) < tiny, tiny, d)
        c_ = b + an / c_
        c_ = jnp.where(jnp.abs(c_) < tiny, tiny, c_)
        d = 1 / d
        delta = d * c_
        return i + 1, b, c_, d, h * delta, delta

    def start(a, x):
        b = x + 1 - a
        return (_one(x), b, jnp.full_like(x, 1 / tiny), 1 / b, 1 / b, jnp.full_like(x, 2.0))

    init = start(a, x)
    tinit = None if da is None else _jvp(start, (a, x), (da, jnp.zeros_like(x)))[1]
    if da is None:
        st, ts = _loop(cond, body, init, (a, x), watch=4, limit=limit)
    else:
        st, ts = _loop_from(cond, body, init, tinit, (a, x), (da, jnp.zeros_like(x)), watch=4, limit=limit)
    pref = jnp.exp(a * jnp.log(x) - x - lax.lgamma(a))
    if da is None:
        return pref * st[4], None
    return pref * st[4], pref * (st[4] * (jnp.log(x) - lax.digamma(a)) + ts[4])


def _loop_from(cond, body, init, tinit, params, tparams, *, watch: int, limit: int):
    """The loop of :func:`_loop` with the derivative of its state along ``tparams`` carried beside it
    (forward mode), starting from the tangent ``tinit`` of the initial state (None entries: zero). It
    also runs until the derivative of ``state[watch]`` has converged: a fraction that terminates early
    (e.g. at an integer parameter) still has a moving derivative."""
    eps = _eps(init[watch])

    def dbody(c):
        st, ts, _ = c
        st2, ts2 = _jvp(body, (params, st), (tparams, ts))
        return st2, ts2, ts[watch]

    def dcond(c):
        st, ts, prev = c
        moving = jnp.any(jnp.abs(ts[watch] - prev) > eps * jnp.abs(ts[watch]))
        return cond(st) | ((st[0] < limit) & moving)

    tinit = tuple(jnp.zeros_like(v) if t is None else t for v, t in zip(init, tinit))
    st, ts, _ = while_loop(dcond, dbody, (init, tinit, jnp.full_like(init[watch], np.inf)))
    return st, ts


def _igamma_pq(a, x, with_da: bool = False):
    """(P(a, x), Q(a, x)), each from the series or the continued fraction, whichever converges there;
    with ``with_da`` also (dP/da, dQ/da)."""
    valid = (a > 0) & (x > 0) & jnp.isfinite(x)
    series = valid & (x < a + 1)
    frac = valid & ~series
    da = jnp.ones_like(a) if with_da else None
    p, dp = _igamma_series(jnp.where(series, a, 1.0), jnp.where(series, x, 0.5), da)
    q, dq = _igammac_cf(jnp.where(frac, a, 1.0), jnp.where(frac, x, 2.0), da)
    P = jnp.where(series, p, 1 - q)
    Q = jnp.where(series, 1 - p, q)
    bad = jnp.isnan(a) | jnp.isnan(x) | (a < 0) | (x < 0) | ((a == 0) & (x == 0))
    # Edges as SciPy: P(a, 0) = 0, P(a, inf) = 1, P(0, x > 0) = 1.
    at_zero = (x == 0) & (a > 0)
    at_one = jnp.isposinf(x) | ((a == 0) & (x > 0))
    P = jnp.where(bad, np.nan, jnp.where(at_zero, 0.0, jnp.where(at_one, 1.0, P)))
    Q = jnp.where(bad, np.nan, jnp.where(at_zero, 1.0, jnp.where(at_one, 0.0, Q)))
    if not with_da:
        return P, Q
    dP = jnp.where(series, dp, -dq)
    dP = jnp.where(bad, np.nan, jnp.where(at_zero | at_one, 0.0, dP))
    return P, Q, dP, -dP


def _igamma_dx(a, x):
    return jnp.exp(-x + (a - 1) * jnp.log(x) - lax.lgamma(a))


_gammainc = _with_partials(lambda a, x: _igamma_pq(a, x)[0], {0: lambda out, a, x: _igamma_pq(a, x, True)[2],
                                                              1: lambda out, a, x: _igamma_dx(a, x)})


_gammaincc = _with_partials(lambda a, x: _igamma_pq(a, x)[1], {0: lambda out, a, x: _igamma_pq(a, x, True)[3],
                                                               1: lambda out, a, x: -_igamma_dx(a, x)})


def _betacf(a, b, x, tangents=None):
    """The continued fraction of the incomplete beta function (modified Lentz) in a while loop, and its
    derivative along ``tangents`` (of ``(a, b)``) when given."""
    eps, tiny = _eps(x), _tiny(x) * 16
    limit = 3000 if _is64(x) else 1000

    def clamp(v):
        return jnp.where(jnp.abs(v) < tiny, tiny, v)

    def cond(c):
        return (c[0] < limit) & jnp.any(jnp.abs(c[4] - 1) > eps)

    def body(p, c):
        a, b = p
        m, c_, d, h, _ = c
        qab, qap, qam = a + b, a + 1, a - 1
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 / clamp(1 + aa * d)
        c_ = clamp(1 + aa / c_)
        h = h * d * c_
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 / clamp(1 + aa * d)
        c_ = clamp(1 + aa / c_)
        delta = d * c_
        return m + 1, c_, d, h * delta, delta

    def start(a, b):
        d = 1 / clamp(1 - (a + b) * x / (a + 1))
        return (_one(x), jnp.ones_like(x), d, d, jnp.full_like(x, 2.0))

    init = start(a, b)
    if tangents is None:
        return _loop(cond, body, init, (a, b), watch=3, limit=limit)[0][3], None
    tinit = _jvp(start, (a, b), tangents)[1]
    st, ts = _loop_from(cond, body, init, tinit, (a, b), tangents, watch=3, limit=limit)
    return st[3], ts[3]


def _betainc_impl(a, b, x, wrt: int | None = None):
    valid = (a > 0) & (b > 0) & (x > 0) & (x < 1)
    direct = x < (a + 1) / (a + b + 2)
    # Evaluate the fraction where it converges fast: I_x(a, b) directly, else 1 - I_{1-x}(b, a).
    aa, bb, xx = jnp.where(direct, a, b), jnp.where(direct, b, a), jnp.where(direct, x, 1 - x)
    aa, bb, xx = jnp.where(valid, aa, 1.0), jnp.where(valid, bb, 1.0), jnp.where(valid, xx, 0.5)

    def front(aa, bb):
        return jnp.exp(aa * jnp.log(xx) + bb * jnp.log1p(-xx) - betaln(aa, bb)) / aa

    tangents = None
    if wrt is not None:  # d/da moves aa where direct, bb elsewhere (and the reverse for d/db)
        on, off = jnp.where(direct, 1.0, 0.0).astype(x.dtype), jnp.where(direct, 0.0, 1.0).astype(x.dtype)
        tangents = (on, off) if wrt == 0 else (off, on)
    cf, dcf = _betacf(aa, bb, xx, tangents)
    if wrt is None:
        part = front(aa, bb) * cf
        out = jnp.where(direct, part, 1 - part)
        out = jnp.where(x == 0, 0.0, jnp.where(x == 1, 1.0, out))
    else:
        f, df = _jvp(front, (aa, bb), tangents)
        dpart = df * cf + f * dcf
        out = jnp.where(direct, dpart, -dpart)
        out = jnp.where((x == 0) | (x == 1), 0.0, out)
    bad = jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x) | (a <= 0) | (b <= 0) | (x < 0) | (x > 1)
    return jnp.where(bad, np.nan, out)


_betainc = _with_partials(_betainc_impl, {
    0: lambda out, a, b, x: _betainc_impl(a, b, x, 0),
    1: lambda out, a, b, x: _betainc_impl(a, b, x, 1),
    2: lambda out, a, b, x: jnp.exp((a - 1) * jnp.log(x) + (b - 1) * jnp.log1p(-x) - betaln(a, b))})


def _bernoulli_fractions(n: int) -> list[Fraction]:
    """B_0 .. B_n (with B_1 = -1/2), by the Akiyama-Tanigawa algorithm."""
    out = []
    a = [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    if n >= 1:
        out[1] = -out[1]  # the algorithm gives B_1 = +1/2
    return out


_B = _bernoulli_fractions(40)


def _hurwitz_zeta(s, q):
    """Hurwitz zeta ``sum_k (q + k)**-s`` for s > 1, q > 0 by Euler-Maclaurin summation."""
    N = 12  # direct terms
    total = jnp.zeros_like(q)
    for k in range(N):
        total = total + (q + k) ** -s
    w = q + N
    total = total + w ** (1 - s) / (s - 1) + 0.5 * w ** -s
    # Tail: sum_j B_2j / (2j)! * s (s+1) ... (s+2j-2) * w**(-s-2j+1)
    fact = s * w ** (-s - 1)
    for j in range(1, 13):
        coef = float(_B[2 * j]) / float(np.prod(np.arange(1, 2 * j + 1, dtype=np.float64)))
        total = total + coef * fact
        fact = fact * (s + 2 * j - 1) * (s + 2 * j) / (w * w)
    return total


def _zeta_impl(s, q):
    out = _hurwitz_zeta(jnp.where(s > 1, s, 2.0), jnp.where(q > 0, q, 1.0))
    out = jnp.where(s == 1, np.inf, out)
    # q <= 0: the pole at non-positive integers, NaN elsewhere (as SciPy for s > 1 non-integer).
    pole = (q <= 0) & (q == jnp.floor(q))
    s_int = s == jnp.floor(s)
    neg_q = jnp.where(pole, np.inf, np.nan)
    out = jnp.where(q <= 0, jnp.where(s_int & ~pole, _hurwitz_neg_q(s, q), neg_q), out)
    return jnp.where((s < 1) | jnp.isnan(s) | jnp.isnan(q), np.nan, out)


def _hurwitz_neg_q(s, q):
    # For integer s and q < 0 not an integer: zeta(s, q) = zeta(s, q + m) + sum_{k<m} (q + k)**-s.
    # Done for up to 64 shifts; beyond that (q < -64) the result is NaN.
    m = jnp.ceil(-q)
    total = _hurwitz_zeta(jnp.where(s > 1, s, 2.0), jnp.where(q <= 0, q + m + (q + m == 0), 1.0))
    total = jnp.where(q + m == 0, np.nan, total)
    even = jnp.fmod(s, 2) == 0

    def shift(k, total):
        k = k.astype(q.dtype)
        return total + jnp.where(k < m, jnp.abs(q + k) ** -s * jnp.where(even, 1.0, jnp.sign(q + k)), 0.0)

    total = fori_loop(0, 64, shift, total)
    return jnp.where(m > 64, np.nan, total)


def _zeta_ds(out, s, q):
    return jnp.full_like(out, np.nan)  # not differentiable in s (as JAX)


_zeta = _with_partials(_zeta_impl, {0: _zeta_ds, 1: lambda out, s, q: -s * _zeta_impl(s + 1, q)})


def _bessel_ie(x, nu: int):
    """``exp(-|x|) * I_nu(x)`` for nu in (0, 1): power series below 20, the asymptotic series above."""
    T = 20.0
    ax = jnp.abs(x)
    s = jnp.where(ax <= T, ax, 1.0)
    q = s * s / 4
    term = (s / 2) ** nu if nu else jnp.ones_like(s)
    total = term

    def series_step(k, c):
        term, total = c
        k = k.astype(s.dtype)
        term = term * q / (k * (k + nu))
        return term, total + term

    _, total = fori_loop(1, 70, series_step, (term, total))
    series = total * jnp.exp(-s)
    y = jnp.where(ax > T, ax, T)
    term, total = jnp.ones_like(y), jnp.ones_like(y)

    def asym_step(k, c):
        term, total = c
        k = k.astype(y.dtype)
        term = -term * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k * y)
        return term, total + term

    _, total = fori_loop(1, 30, asym_step, (term, total))
    asym = total / jnp.sqrt(2 * np.pi * y)
    out = jnp.where(ax <= T, series, asym)
    return out if nu == 0 else jnp.sign(x) * out



def polygamma_impl(n, x):
    """The n-th derivative of digamma, for ``n`` and ``x`` of one float dtype and shape (NaN unless
    ``n`` is a non-negative integer)."""
    nn = jnp.where(n >= 1, n, 1.0)
    sign = jnp.where(jnp.fmod(nn, 2) == 0, -1.0, 1.0)
    higher = sign * jnp.exp(lax.lgamma(nn + 1)) * _zeta(nn + 1, x)
    out = jnp.where(n == 0, lax.digamma(x), higher)
    return jnp.where((n < 0) | (n != jnp.floor(n)), np.nan, out).astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# kiln.lax's functions: operands of one floating dtype and one shape (as every kiln.lax function)
# ---------------------------------------------------------------------------------------------

def _lax_operands(name: str, *xs):
    """Python scalars take the arrays' dtype; otherwise one floating dtype and shapes that broadcast as JAX's lax
    does, or a clear error."""
    xs = [jnp.asarray(x) for x in _operands(*xs)]
    avals = [abstractify(x) for x in xs]
    for av in avals:
        if not dtypes.issubdtype(av.dtype, np.floating):
            raise TypeError(f"kiln.lax.{name}: takes floating arrays, got {av.dtype.name} (convert with "
                            "kiln.lax.convert_element_type, or use kiln.scipy.special)")
    if len({av.dtype for av in avals}) > 1:
        got = " and ".join(av.dtype.name for av in avals)
        raise TypeError(f"kiln.lax.{name}: operands must have the same dtype, got {got} (kiln.lax does not "
                        "promote: convert one with kiln.lax.convert_element_type, or use kiln.scipy.special)")
    if len({av.shape for av in avals}) > 1:
        got = " and ".join(str(av.shape) for av in avals)
        raise ShapeError(f"kiln.lax.{name}: operand shapes {got} do not broadcast (kiln.lax broadcasts rank-0 "
                         "operands and axes of size 1, as JAX's lax does; use kiln.numpy.broadcast_arrays, or "
                         "kiln.scipy.special)")
    return xs


def igamma(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``; differentiable in ``a`` and ``x``."""
    a, x = _lax_operands("igamma", a, x)
    return _gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = _lax_operands("igammac", a, x)
    return _gammaincc(a, x)


def igamma_grad_a(a, x):
    """The derivative of :func:`igamma` in ``a`` (carried through the series or continued fraction in
    forward mode)."""
    a, x = _lax_operands("igamma_grad_a", a, x)
    return _igamma_pq(a, x, True)[2]


def random_gamma_grad(a, x, *, dtype=None):
    """The derivative in ``a`` of a sample ``x`` of ``Gamma(a, 1)`` (implicit reparameterization):
    ``-(d igamma / d a) / (d igamma / d x)`` at ``x``; 0 at ``x == 0`` and where the density underflows,
    NaN for ``a <= 0`` or ``x < 0``. ``dtype`` (JAX's keyword), when given, must be ``a``'s dtype."""
    a, x = _lax_operands("random_gamma_grad", a, x)
    if dtype is not None and dtypes.canonicalize_dtype(dtype) != abstractify(a).dtype:
        raise TypeError(f"kiln.lax.random_gamma_grad: dtype={np.dtype(dtype).name} differs from the operands' "
                        f"{abstractify(a).dtype.name}; leave it out or convert the operands")
    dp_da = _igamma_pq(a, x, True)[2]
    dp_dx = _igamma_dx(a, jnp.where(x > 0, x, 1.0))
    out = jnp.where(dp_dx > 0, -dp_da / jnp.where(dp_dx > 0, dp_dx, 1.0), 0.0)
    out = jnp.where(x == 0, 0.0, out)
    return jnp.where(jnp.isnan(a) | jnp.isnan(x) | (a <= 0) | (x < 0), np.nan, out).astype(a.dtype)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``; differentiable in ``a``, ``b`` and ``x``."""
    a, b, x = _lax_operands("betainc", a, b, x)
    return _betainc(a, b, x)


def zeta(x, q):
    """The Hurwitz zeta function ``sum_k (q + k)**-x``; differentiable in ``q``."""
    x, q = _lax_operands("zeta", x, q)
    return _zeta(x, q)


def polygamma(m, x):
    """The ``m``-th derivative of the digamma function (``m`` a non-negative integer value, as a float)."""
    m, x = _lax_operands("polygamma", m, x)
    return polygamma_impl(m, x)


def bessel_i0e(x):
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) * I0(x)``."""
    (x,) = _lax_operands("bessel_i0e", x)
    return _bessel_ie(x, 0)


def bessel_i1e(x):
    """The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) * I1(x)``."""
    (x,) = _lax_operands("bessel_i1e", x)
    return _bessel_ie(x, 1)
