"""kiln.scipy.stats.gumbel_l: the left-skewed Gumbel distribution (as ``jax.scipy.stats.gumbel_l``), the
mirror image of :mod:`gumbel_r`: ``gumbel_l(x; loc) = gumbel_r(-x; -loc)``."""
from __future__ import annotations

from ... import numpy as jnp
from . import gumbel_r as _r
from ._util import args, quantile_domain

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the left-skewed Gumbel distribution."""
    x, loc, scale = args("gumbel_l.logpdf", x, loc, scale)
    return _r.logpdf(-x, -loc, scale)


def pdf(x, loc=0, scale=1):
    """The left-skewed Gumbel density."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the left-skewed Gumbel CDF."""
    x, loc, scale = args("gumbel_l.logcdf", x, loc, scale)
    return _r.logsf(-x, -loc, scale)


def cdf(x, loc=0, scale=1):
    """The left-skewed Gumbel CDF."""
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the left-skewed Gumbel survival function."""
    x, loc, scale = args("gumbel_l.logsf", x, loc, scale)
    return _r.logcdf(-x, -loc, scale)


def sf(x, loc=0, scale=1):
    """The left-skewed Gumbel survival function."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The left-skewed Gumbel quantile function, ``loc + scale log(-log(1 - q))``."""
    q, loc, scale = args("gumbel_l.ppf", q, loc, scale)
    return quantile_domain(q, loc + scale * jnp.log(-jnp.log1p(-q)))
