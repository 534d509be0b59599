"""kiln.scipy.stats.beta: the beta distribution (as ``jax.scipy.stats.beta``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    """Log density of the beta distribution on ``[loc, loc + scale]`` (-inf outside)."""
    x, a, b, loc, scale = args("beta.logpdf", x, a, b, loc, scale)
    z = standardize(x, loc, scale)
    inside = (z >= 0) & (z <= 1)
    zs = jnp.where(inside, z, 0.5)
    out = sc.xlogy(a - 1, zs) + sc.xlog1py(b - 1, -zs) - sc.betaln(a, b) - jnp.log(scale)
    return jnp.where(inside, out, -np.inf)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """The beta CDF, the regularized incomplete beta function."""
    x, a, b, loc, scale = args("beta.cdf", x, a, b, loc, scale)
    return sc.betainc(a, b, jnp.clip(standardize(x, loc, scale), 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the beta CDF."""
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """The beta survival function ``I_{1-z}(b, a)`` (accurate where it is small)."""
    x, a, b, loc, scale = args("beta.sf", x, a, b, loc, scale)
    return sc.betainc(b, a, 1 - jnp.clip(standardize(x, loc, scale), 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    """Log of the beta survival function."""
    return jnp.log(sf(x, a, b, loc, scale))
