"""kiln.scipy.stats.poisson: the Poisson distribution (as ``jax.scipy.stats.poisson``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
    """Log probability of ``k - loc`` under Poisson(``mu``) (-inf for negative or non-integer values)."""
    k, mu, loc = args("poisson.logpmf", k, mu, loc)
    x = k - loc
    xs = jnp.where(x < 0, 0.0, x)
    out = sc.xlogy(xs, mu) - lax.lgamma(xs + 1) - mu
    return jnp.where((x < 0) | (x != jnp.floor(x)), -np.inf, out)


def pmf(k, mu, loc=0):
    """Probability of ``k - loc`` under Poisson(``mu``)."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """The Poisson CDF, ``gammaincc(floor(k - loc) + 1, mu)``."""
    k, mu, loc = args("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, 0.0, sc.gammaincc(jnp.floor(jnp.maximum(x, 0)) + 1, mu))


def entropy(mu, loc=0):
    """The entropy of Poisson(``mu``): the sum of ``-p log p`` over 320 terms for ``mu < 100``, the
    Stirling series above (``loc`` only shifts the distribution)."""
    mu, loc = args("poisson.entropy", mu, loc)
    k = jnp.arange(320, dtype=mu.dtype)
    m = jnp.expand_dims(jnp.where(mu < 100, mu, 1.0), -1)
    logp = sc.xlogy(k, m) - lax.lgamma(k + 1) - m
    direct = jnp.sum(jnp.where(jnp.isneginf(logp), 0.0, -jnp.exp(logp) * logp), axis=-1)
    big = jnp.where(mu < 100, 100.0, mu)
    asym = (0.5 * jnp.log(2 * np.pi * np.e * big) - 1 / (12 * big) - 1 / (24 * big ** 2)
            - 19 / (360 * big ** 3))
    out = jnp.where(mu < 100, direct, asym)
    return jnp.where(mu == 0, 0.0, jnp.where(mu < 0, np.nan, out))
