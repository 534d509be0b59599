"""kiln.scipy.stats.chi2: the chi-squared distribution (as ``jax.scipy.stats.chi2``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    """Log density of the chi-squared distribution with ``df`` degrees of freedom."""
    x, df, loc, scale = args("chi2.logpdf", x, df, loc, scale)
    z = standardize(x, loc, scale)
    zs = jnp.where(z < 0, 1.0, z)
    k = df / 2
    out = sc.xlogy(k - 1, zs) - zs / 2 - lax.lgamma(k) - k * np.log(2) - jnp.log(scale)
    return jnp.where(z < 0, -np.inf, out)


def pdf(x, df, loc=0, scale=1):
    """The chi-squared density."""
    return jnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """The chi-squared CDF."""
    x, df, loc, scale = args("chi2.cdf", x, df, loc, scale)
    return sc.gammainc(df / 2, jnp.maximum(standardize(x, loc, scale), 0) / 2)


def logcdf(x, df, loc=0, scale=1):
    """Log of the chi-squared CDF."""
    return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """The chi-squared survival function."""
    x, df, loc, scale = args("chi2.sf", x, df, loc, scale)
    return sc.gammaincc(df / 2, jnp.maximum(standardize(x, loc, scale), 0) / 2)


def logsf(x, df, loc=0, scale=1):
    """Log of the chi-squared survival function."""
    return jnp.log(sf(x, df, loc, scale))
