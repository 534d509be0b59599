"""kiln.scipy.stats.gamma: the gamma distribution (as ``jax.scipy.stats.gamma``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    """Log density of the gamma distribution with shape ``a`` (-inf below ``loc``)."""
    x, a, loc, scale = args("gamma.logpdf", x, a, loc, scale)
    z = standardize(x, loc, scale)
    zs = jnp.where(z < 0, 1.0, z)
    out = sc.xlogy(a - 1, zs) - zs - lax.lgamma(a) - jnp.log(scale)
    return jnp.where(z < 0, -np.inf, out)


def pdf(x, a, loc=0, scale=1):
    """The gamma density."""
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """The gamma CDF, the regularized lower incomplete gamma function."""
    x, a, loc, scale = args("gamma.cdf", x, a, loc, scale)
    return sc.gammainc(a, jnp.maximum(standardize(x, loc, scale), 0))


def logcdf(x, a, loc=0, scale=1):
    """Log of the gamma CDF."""
    return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """The gamma survival function, the regularized upper incomplete gamma function."""
    x, a, loc, scale = args("gamma.sf", x, a, loc, scale)
    return sc.gammaincc(a, jnp.maximum(standardize(x, loc, scale), 0))


def logsf(x, a, loc=0, scale=1):
    """Log of the gamma survival function."""
    return jnp.log(sf(x, a, loc, scale))
