"""kiln.scipy.stats.uniform: the uniform distribution on [loc, loc + scale] (as ``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the uniform distribution on ``[loc, loc + scale]`` (-inf outside)."""
    x, loc, scale = args("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    """The uniform density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The uniform CDF: ``(x - loc) / scale`` clipped to ``[0, 1]``."""
    x, loc, scale = args("uniform.cdf", x, loc, scale)
    return jnp.clip(standardize(x, loc, scale), 0, 1)


def ppf(q, loc=0, scale=1):
    """The uniform quantile ``loc + q * scale`` (NaN outside ``[0, 1]``)."""
    q, loc, scale = args("uniform.ppf", q, loc, scale)
    return quantile_domain(q, loc + q * scale)
