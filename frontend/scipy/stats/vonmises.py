"""kiln.scipy.stats.vonmises: the von Mises distribution (as ``jax.scipy.stats.vonmises``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from .. import special as sc
from ._util import args

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """Log density of the von Mises distribution with concentration ``kappa`` (``x`` in [-pi, pi])."""
    x, kappa = args("vonmises.logpdf", x, kappa)
    out = kappa * (jnp.cos(x) - 1) - np.log(2 * np.pi) - jnp.log(sc.i0e(kappa))
    return jnp.where((x < -np.pi) | (x > np.pi), -np.inf, out)


def pdf(x, kappa):
    """The von Mises density."""
    return jnp.exp(logpdf(x, kappa))
