"""kiln.scipy.stats.logistic: the logistic distribution (as ``jax.scipy.stats.logistic``)."""
from __future__ import annotations

from ... import numpy as jnp
from .. import special as sc
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the logistic distribution."""
    x, loc, scale = args("logistic.logpdf", x, loc, scale)
    z = jnp.abs(standardize(x, loc, scale))
    return -z - 2 * jnp.log1p(jnp.exp(-z)) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The logistic density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The logistic CDF, ``expit(z)``."""
    x, loc, scale = args("logistic.cdf", x, loc, scale)
    return sc.expit(standardize(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The logistic survival function, ``expit(-z)``."""
    x, loc, scale = args("logistic.sf", x, loc, scale)
    return sc.expit(-standardize(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The logistic quantile, ``logit(q) * scale + loc``."""
    q, loc, scale = args("logistic.ppf", q, loc, scale)
    return quantile_domain(q, sc.logit(q) * scale + loc)


def isf(q, loc=0, scale=1):
    """The inverse logistic survival function."""
    q, loc, scale = args("logistic.isf", q, loc, scale)
    return quantile_domain(q, -sc.logit(q) * scale + loc)
