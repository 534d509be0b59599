"""kiln.scipy.stats.wrapcauchy: the wrapped Cauchy distribution (as ``jax.scipy.stats.wrapcauchy``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._util import args

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """Log density of the wrapped Cauchy distribution with shape ``c`` in (0, 1) (``x`` in [0, 2 pi])."""
    x, c = args("wrapcauchy.logpdf", x, c)
    out = jnp.log1p(-c * c) - np.log(2 * np.pi) - jnp.log1p(c * c - 2 * c * jnp.cos(x))
    out = jnp.where((x < 0) | (x > 2 * np.pi), -np.inf, out)
    return jnp.where((c <= 0) | (c >= 1), np.nan, out)


def pdf(x, c):
    """The wrapped Cauchy density."""
    return jnp.exp(logpdf(x, c))
