"""kiln.scipy.stats.nbinom: the negative binomial distribution (as ``jax.scipy.stats.nbinom``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log probability of ``k - loc`` failures before the ``n``-th success (success rate ``p``)."""
    k, n, p, loc = args("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    ys = jnp.maximum(y, 0)
    comb = lax.lgamma(n + ys) - lax.lgamma(ys + 1) - lax.lgamma(n)
    out = comb + sc.xlogy(n, p) + sc.xlog1py(ys, -p)
    return jnp.where((y < 0) | (y != jnp.floor(y)), -np.inf, out)


def pmf(k, n, p, loc=0):
    """Probability of ``k - loc`` failures before the ``n``-th success."""
    return jnp.exp(logpmf(k, n, p, loc))
