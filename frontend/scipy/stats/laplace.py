"""kiln.scipy.stats.laplace: the Laplace distribution (as ``jax.scipy.stats.laplace``)."""
from __future__ import annotations

from ... import numpy as jnp
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the Laplace distribution."""
    x, loc, scale = args("laplace.logpdf", x, loc, scale)
    return -jnp.abs(standardize(x, loc, scale)) - jnp.log(2 * scale)


def pdf(x, loc=0, scale=1):
    """The Laplace density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The Laplace CDF."""
    x, loc, scale = args("laplace.cdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0)), 1 - 0.5 * jnp.exp(-jnp.maximum(z, 0)))
