"""kiln.scipy.stats.t: Student's t distribution (as ``jax.scipy.stats.t``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ._util import args, standardize

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """Log density of Student's t distribution with ``df`` degrees of freedom."""
    x, df, loc, scale = args("t.logpdf", x, df, loc, scale)
    z = standardize(x, loc, scale)
    return (lax.lgamma((df + 1) / 2) - lax.lgamma(df / 2) - 0.5 * jnp.log(df * np.pi) - jnp.log(scale)
            - (df + 1) / 2 * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """Student's t density."""
    return jnp.exp(logpdf(x, df, loc, scale))
