"""kiln.scipy.stats.gumbel_r: the right-skewed Gumbel distribution (as ``jax.scipy.stats.gumbel_r``)."""
from __future__ import annotations

from ... import numpy as jnp
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the Gumbel distribution."""
    x, loc, scale = args("gumbel_r.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -z - jnp.exp(-z) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The Gumbel density."""
    return jnp.exp(logpdf(x, loc, scale))


def _log_upper(z):
    """log P(Z <= z) for the right-skewed standard Gumbel: -exp(-z)."""
    return -jnp.exp(-z)


def _log_lower(z):
    """log P(Z > z) = log(1 - exp(-exp(-z)))."""
    return jnp.log(-jnp.expm1(-jnp.exp(-z)))


def logcdf(x, loc=0, scale=1):
    """Log of the Gumbel CDF."""
    x, loc, scale = args("gumbel_r.logcdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return _log_upper(z)


def cdf(x, loc=0, scale=1):
    """The Gumbel CDF."""
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the Gumbel survival function."""
    x, loc, scale = args("gumbel_r.logsf", x, loc, scale)
    z = standardize(x, loc, scale)
    return _log_lower(z)


def sf(x, loc=0, scale=1):
    """The Gumbel survival function."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The Gumbel quantile function."""
    q, loc, scale = args("gumbel_r.ppf", q, loc, scale)
    return quantile_domain(q, loc - scale * jnp.log(-jnp.log(q)))
