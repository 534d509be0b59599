"""kiln.scipy.stats.cauchy: the Cauchy distribution (as ``jax.scipy.stats.cauchy``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import args, quantile_domain, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """Log density of the Cauchy distribution."""
    x, loc, scale = args("cauchy.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -np.log(np.pi) - jnp.log(scale) - jnp.log1p(z * z)


def pdf(x, loc=0, scale=1):
    """The Cauchy density."""
    return jnp.exp(logpdf(x, loc, scale))


def _cdf(z):
    # 0.5 + atan(z)/pi, written to keep its accuracy in the lower tail: atan(-1/z)/pi for z < -1.
    zs = jnp.where(z < -1, z, -2.0)
    return jnp.where(z < -1, jnp.arctan(-1 / zs) / np.pi, 0.5 + jnp.arctan(z) / np.pi)


def cdf(x, loc=0, scale=1):
    """The Cauchy CDF ``1/2 + atan(z)/pi``."""
    x, loc, scale = args("cauchy.cdf", x, loc, scale)
    return _cdf(standardize(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the Cauchy CDF."""
    return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The Cauchy survival function."""
    x, loc, scale = args("cauchy.sf", x, loc, scale)
    return _cdf(-standardize(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the Cauchy survival function."""
    return jnp.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The Cauchy quantile ``loc + scale * tan(pi (q - 1/2))``."""
    q, loc, scale = args("cauchy.ppf", q, loc, scale)
    return quantile_domain(q, loc + scale * jnp.tan(np.pi * (q - 0.5)))


def isf(q, loc=0, scale=1):
    """The inverse Cauchy survival function."""
    q, loc, scale = args("cauchy.isf", q, loc, scale)
    return quantile_domain(q, loc + scale * jnp.tan(np.pi * (0.5 - q)))
