"""kiln.scipy.stats.betabinom: the beta-binomial distribution (as ``jax.scipy.stats.betabinom``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """Log probability of ``k - loc`` successes in ``n`` trials with a Beta(``a``, ``b``) success rate."""
    k, n, a, b, loc = args("betabinom.logpmf", k, n, a, b, loc)
    y = k - loc
    ys = jnp.clip(y, 0, n)
    comb = -jnp.log1p(n) - sc.betaln(n - ys + 1, ys + 1)
    out = comb + sc.betaln(ys + a, n - ys + b) - sc.betaln(a, b)
    out = jnp.where((ys == 0) & (n == 0), 0.0, out)
    return jnp.where((y >= 0) & (y <= n) & (y == jnp.floor(y)), out, -np.inf)


def pmf(k, n, a, b, loc=0):
    """Probability of ``k - loc`` successes under the beta-binomial distribution."""
    return jnp.exp(logpmf(k, n, a, b, loc))
