"""kiln.scipy.stats.geom: the geometric distribution (as ``jax.scipy.stats.geom``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """Log probability of ``k - loc`` (trials until the first success, from 1) under success rate ``p``
    (-inf below 1 and between integers, as SciPy)."""
    k, p, loc = args("geom.logpmf", k, p, loc)
    x = k - loc
    out = sc.xlog1py(x - 1, -p) + jnp.log(p)
    return jnp.where((x < 1) | (x != jnp.floor(x)), -np.inf, out)


def pmf(k, p, loc=0):
    """Probability of ``k - loc`` under the geometric distribution."""
    return jnp.exp(logpmf(k, p, loc))
