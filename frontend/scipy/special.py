"""kiln.scipy.special: special functions (as ``jax.scipy.special``), compositions of kiln primitives."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..nn.functions import broadcast_args, float_args, logsumexp_impl
from ..numpy.ufuncs import full_like_

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "digamma", "psi", "xlogy", "xlog1py", "entr",
    "logsumexp", "ndtr",
]


def _unary(fname: str, lax_fn, doc: str):
    where = f"kiln.scipy.special.{fname}"

    def fn(x):
        (x,) = float_args(where, x)
        return lax_fn(x)
    fn.__name__ = fname
    fn.__doc__ = doc
    return fn


erf = _unary("erf", lax.erf, "The error function, ``2/sqrt(pi) * integral of exp(-t**2) from 0 to x``.")
erfc = _unary("erfc", lax.erfc, "The complementary error function ``1 - erf(x)`` (accurate for large x).")
erfinv = _unary("erfinv", lax.erf_inv, "The inverse of the error function on ``(-1, 1)``.")
gammaln = _unary("gammaln", lax.lgamma, "The log of the absolute value of the gamma function.")
digamma = _unary("digamma", lax.digamma, "The digamma function, the derivative of ``gammaln``.")
psi = digamma
expit = _unary("expit", lax.logistic, "The logistic sigmoid ``1 / (1 + exp(-x))``.")


def logit(x):
    """The inverse of :func:`expit`, ``log(x / (1 - x))``."""
    (x,) = float_args("kiln.scipy.special.logit", x)
    return lax.log(lax.div(x, lax.sub(full_like_(x, 1), x)))


def ndtr(x):
    """The standard normal CDF, ``0.5 * erfc(-x / sqrt(2))``."""
    (x,) = float_args("kiln.scipy.special.ndtr", x)
    return lax.mul(full_like_(x, 0.5), lax.erfc(lax.mul(x, full_like_(x, -1 / np.sqrt(2)))))


def _binary(where: str, x: Any, y: Any) -> list[Any]:
    x, y = broadcast_args(where, x, y)
    return float_args(where, x, y, promoted=True)


def xlogy(x, y):
    """``x * log(y)``, and 0 where ``x == 0`` (even where ``log(y)`` is infinite)."""
    x, y = _binary("kiln.scipy.special.xlogy", x, y)
    return lax.select(lax.eq(x, full_like_(x, 0)), full_like_(x, 0), lax.mul(x, lax.log(y)))


def xlog1py(x, y):
    """``x * log1p(y)``, and 0 where ``x == 0``."""
    x, y = _binary("kiln.scipy.special.xlog1py", x, y)
    return lax.select(lax.eq(x, full_like_(x, 0)), full_like_(x, 0), lax.mul(x, lax.log1p(y)))


def entr(x):
    """Elementwise entropy: ``-x * log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    (x,) = float_args("kiln.scipy.special.entr", x)
    zero = full_like_(x, 0)
    out = lax.select(lax.gt(x, zero), lax.neg(lax.mul(x, lax.log(x))),
                     lax.select(lax.eq(x, zero), zero, full_like_(x, -np.inf)))
    return lax.select(lax.ne(x, x), x, out)


def logsumexp(a, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (as ``scipy.special.logsumexp``).

    With ``return_sign``, returns ``(log|sum|, sign(sum))``; otherwise a negative sum gives NaN.
    """
    return logsumexp_impl("kiln.scipy.special.logsumexp", a, axis, b, keepdims, return_sign, where)
