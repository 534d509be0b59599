"""kiln.scipy.stats.binom: the binomial distribution (as ``jax.scipy.stats.binom``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log probability of ``k - loc`` successes in ``n`` trials of success rate ``p``."""
    k, n, p, loc = args("binom.logpmf", k, n, p, loc)
    y = k - loc
    ys = jnp.clip(y, 0, n)
    comb = lax.lgamma(n + 1) - lax.lgamma(ys + 1) - lax.lgamma(n - ys + 1)
    out = comb + sc.xlogy(ys, p) + sc.xlog1py(n - ys, -p)
    return jnp.where((y >= 0) & (y <= n) & (y == jnp.floor(y)), out, -np.inf)


def pmf(k, n, p, loc=0):
    """Probability of ``k - loc`` successes in ``n`` trials."""
    return jnp.exp(logpmf(k, n, p, loc))
