"""kiln.scipy.stats.norm: the normal distribution (as ``jax.scipy.stats.norm``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

# Called eagerly, each is one compiled program on float32/float64 arguments (as kiln.scipy.special's functions), which
# gives JAX's values (those of its unjitted functions). logpdf and pdf run op by op: XLA's fused program rounds
# their log and division otherwise than the operations one by one, which JAX's unjitted functions run.
one_program_eagerly = sc.one_program_eagerly

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """Log of the normal density with mean ``loc`` and standard deviation ``scale``."""
    x, loc, scale = args("norm.logpdf", x, loc, scale)
    # JAX's formula, (log(2 pi scale^2) + (x - loc)^2 / scale^2) / -2, op for op, for JAX's roundings: and NaN
    # where scale^2 underflows to 0, as JAX (-z^2 / 2 - log(scale) - log(2 pi) / 2 would stay finite).
    scale_sq = jnp.square(scale)
    return (jnp.log(2 * np.pi * scale_sq) + jnp.square(x - loc) / scale_sq) / -2


def pdf(x, loc=0, scale=1):
    """The normal density."""
    return jnp.exp(logpdf(x, loc, scale))


@one_program_eagerly
def cdf(x, loc=0, scale=1):
    """The normal cumulative distribution function."""
    x, loc, scale = args("norm.cdf", x, loc, scale)
    return sc.ndtr(standardize(x, loc, scale))


@one_program_eagerly
def logcdf(x, loc=0, scale=1):
    """Log of the normal CDF, accurate in the lower tail."""
    x, loc, scale = args("norm.logcdf", x, loc, scale)
    return sc.log_ndtr(standardize(x, loc, scale))


@one_program_eagerly
def sf(x, loc=0, scale=1):
    """The normal survival function ``1 - cdf``."""
    x, loc, scale = args("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)  # as JAX (-x + loc rounds as -(x - loc): the same values)


@one_program_eagerly
def logsf(x, loc=0, scale=1):
    """Log of the normal survival function, accurate in the upper tail."""
    x, loc, scale = args("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


@one_program_eagerly
def ppf(q, loc=0, scale=1):
    """The normal quantile function (inverse of ``cdf``), in the default float dtype (as JAX)."""
    args("norm.ppf", q, loc, scale)  # (for the checks only: as JAX, ndtri takes q in its own dtype)
    return jnp.asarray(sc.ndtri(q) * scale + loc, float)


@one_program_eagerly
def isf(q, loc=0, scale=1):
    """The inverse of the normal survival function."""
    args("norm.isf", q, loc, scale)  # (for the checks only: as in ppf, ndtri takes q in its own dtype)
    # -ndtri(q), not JAX's ppf(1 - q): 1 - q rounds to 1 for a small q (isf(1e-10) would be inf, not 6.36)
    return jnp.asarray(-sc.ndtri(q) * scale + loc, float)
