"""kiln.scipy.stats.multinomial: the multinomial distribution (as ``jax.scipy.stats.multinomial``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ..special import _args

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """Log probability of the counts ``x`` (last axis: K categories) in ``n`` trials with category
    probabilities ``p``; -inf unless the counts sum to ``n``."""
    x, n, p = (jnp.asarray(v) for v in _args("kiln.scipy.stats.multinomial.logpmf", x, n, p))
    logprobs = lax.lgamma(n + 1) + jnp.sum(sc.xlogy(x, p) - lax.lgamma(x + 1), axis=-1)
    return jnp.where(jnp.sum(x, axis=-1) == n, logprobs, -np.inf)


def pmf(x, n, p):
    """The multinomial probability of the counts ``x``."""
    return jnp.exp(logpmf(x, n, p))
