"""kiln.scipy.stats.bernoulli: the Bernoulli distribution (as ``jax.scipy.stats.bernoulli``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    """Log probability of ``k - loc`` in {0, 1} (-inf elsewhere)."""
    k, p, loc = args("bernoulli.logpmf", k, p, loc)
    x = k - loc
    out = sc.xlogy(x, p) + sc.xlog1py(1 - x, -p)
    return jnp.where((x == 0) | (x == 1), out, -np.inf)


def pmf(k, p, loc=0):
    """Probability of ``k - loc`` in {0, 1}."""
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """The Bernoulli CDF: 0 below 0, ``1 - p`` on [0, 1), 1 from 1 (NaN for p outside [0, 1])."""
    k, p = args("bernoulli.cdf", k, p)
    out = jnp.where(k < 0, 0.0, jnp.where(k < 1, 1 - p, 1.0))
    return jnp.where(jnp.isnan(k) | (p < 0) | (p > 1), np.nan, out)


def ppf(q, p):
    """The Bernoulli quantile: 0 for ``q <= 1 - p``, else 1 (NaN outside [0, 1])."""
    q, p = args("bernoulli.ppf", q, p)
    out = jnp.where(q <= 1 - p, 0.0, 1.0)
    return jnp.where((q < 0) | (q > 1) | jnp.isnan(q) | (p < 0) | (p > 1), np.nan, out)
