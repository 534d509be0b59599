"""kiln.scipy.stats.gennorm: the generalized normal distribution (as ``jax.scipy.stats.gennorm``)."""
from __future__ import annotations

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
    """Log density of the generalized normal distribution with shape ``beta``."""
    x, beta = args("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - lax.lgamma(1 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    """The generalized normal density."""
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    """The generalized normal CDF, ``1/2 + sign(x) gammainc(1/beta, |x|**beta) / 2``."""
    x, beta = args("gennorm.cdf", x, beta)
    return 0.5 + 0.5 * jnp.sign(x) * sc.gammainc(1 / beta, jnp.abs(x) ** beta)
