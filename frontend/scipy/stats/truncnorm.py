"""kiln.scipy.stats.truncnorm: the truncated normal distribution (as ``jax.scipy.stats.truncnorm``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_mass(a, b):
    """log(ndtr(b) - ndtr(a)) for a < b, computed in the tail where it is accurate."""
    # Both above 0: use the survival side; otherwise the CDF side.
    upper = a > 0
    la, lb = sc.log_ndtr(jnp.where(upper, -b, a)), sc.log_ndtr(jnp.where(upper, -a, b))
    return lb + jnp.log1p(-jnp.exp(la - lb))


def logpdf(x, a, b, loc=0, scale=1):
    """Log density of the normal distribution truncated to ``[a, b]`` (in standard units)."""
    x, a, b, loc, scale = args("truncnorm.logpdf", x, a, b, loc, scale)
    z = standardize(x, loc, scale)
    out = -0.5 * z * z - 0.5 * np.log(2 * np.pi) - _log_mass(a, b) - jnp.log(scale)
    return jnp.where((z < a) | (z > b), -np.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    """The truncated normal density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal CDF."""
    x, a, b, loc, scale = args("truncnorm.logcdf", x, a, b, loc, scale)
    z = jnp.clip(standardize(x, loc, scale), a, b)
    out = _log_mass(a, jnp.where(z > a, z, b)) - _log_mass(a, b)
    return jnp.where(z <= a, -np.inf, jnp.where(z >= b, 0.0, out))


def cdf(x, a, b, loc=0, scale=1):
    """The truncated normal CDF."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal survival function."""
    x, a, b, loc, scale = args("truncnorm.logsf", x, a, b, loc, scale)
    z = jnp.clip(standardize(x, loc, scale), a, b)
    out = _log_mass(jnp.where(z < b, z, a), b) - _log_mass(a, b)
    return jnp.where(z >= b, -np.inf, jnp.where(z <= a, 0.0, out))


def sf(x, a, b, loc=0, scale=1):
    """The truncated normal survival function."""
    return jnp.exp(logsf(x, a, b, loc, scale))
