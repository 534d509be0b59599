"""kiln.scipy.stats.norm: the normal distribution (as ``jax.scipy.stats.norm``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """Log of the normal density with mean ``loc`` and standard deviation ``scale``."""
    x, loc, scale = args("norm.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -0.5 * z * z - jnp.log(scale) - 0.5 * np.log(2 * np.pi)


def pdf(x, loc=0, scale=1):
    """The normal density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The normal cumulative distribution function."""
    x, loc, scale = args("norm.cdf", x, loc, scale)
    return sc.ndtr(standardize(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the normal CDF, accurate in the lower tail."""
    x, loc, scale = args("norm.logcdf", x, loc, scale)
    return sc.log_ndtr(standardize(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The normal survival function ``1 - cdf``."""
    x, loc, scale = args("norm.sf", x, loc, scale)
    return sc.ndtr(-standardize(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the normal survival function, accurate in the upper tail."""
    x, loc, scale = args("norm.logsf", x, loc, scale)
    return sc.log_ndtr(-standardize(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The normal quantile function (inverse of ``cdf``)."""
    q, loc, scale = args("norm.ppf", q, loc, scale)
    return sc.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse of the normal survival function."""
    q, loc, scale = args("norm.isf", q, loc, scale)
    return -sc.ndtri(q) * scale + loc
