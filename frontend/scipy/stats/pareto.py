"""kiln.scipy.stats.pareto: the Pareto distribution (as ``jax.scipy.stats.pareto``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    """Log density of the Pareto distribution with shape ``b`` (-inf below ``loc + scale``)."""
    x, b, loc, scale = args("pareto.logpdf", x, b, loc, scale)
    z = standardize(x, loc, scale)
    zs = jnp.where(z < 1, 1.0, z)
    return jnp.where(z < 1, -np.inf, jnp.log(b) - (b + 1) * jnp.log(zs) - jnp.log(scale))


def pdf(x, b, loc=0, scale=1):
    """The Pareto density."""
    return jnp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    """Log of the Pareto survival function, ``-b log(z)``."""
    x, b, loc, scale = args("pareto.logsf", x, b, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 1, 0.0, -b * jnp.log(jnp.maximum(z, 1)))


def sf(x, b, loc=0, scale=1):
    """The Pareto survival function ``z**-b``."""
    return jnp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """The Pareto CDF ``1 - z**-b``."""
    return -jnp.expm1(logsf(x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
    """Log of the Pareto CDF."""
    return jnp.log(cdf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """The Pareto quantile ``(1 - q)**(-1/b) * scale + loc``."""
    q, b, loc, scale = args("pareto.ppf", q, b, loc, scale)
    return quantile_domain(q, jnp.exp(-jnp.log1p(-q) / b) * scale + loc)
