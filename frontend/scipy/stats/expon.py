"""kiln.scipy.stats.expon: the exponential distribution (as ``jax.scipy.stats.expon``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the exponential distribution (-inf below ``loc``)."""
    x, loc, scale = args("expon.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 0, -np.inf, -z - jnp.log(scale))


def pdf(x, loc=0, scale=1):
    """The exponential density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The exponential CDF ``1 - exp(-z)``."""
    x, loc, scale = args("expon.cdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 0, 0.0, -jnp.expm1(-jnp.maximum(z, 0)))


def logcdf(x, loc=0, scale=1):
    """Log of the exponential CDF."""
    x, loc, scale = args("expon.logcdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 0, -np.inf, jnp.log(-jnp.expm1(-jnp.maximum(z, 0))))


def sf(x, loc=0, scale=1):
    """The exponential survival function ``exp(-z)``."""
    return jnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the exponential survival function, ``-z``."""
    x, loc, scale = args("expon.logsf", x, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 0, 0.0, -z)


def ppf(q, loc=0, scale=1):
    """The exponential quantile ``-log(1 - q) * scale + loc``."""
    q, loc, scale = args("expon.ppf", q, loc, scale)
    return quantile_domain(q, -jnp.log1p(-q) * scale + loc)
