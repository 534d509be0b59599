"""kiln.scipy.stats.dirichlet: the Dirichlet distribution (as ``jax.scipy.stats.dirichlet``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special as sc
from ..special import _args

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    """Log density of the Dirichlet distribution with concentrations ``alpha`` (``(K,)``) at ``x``, whose
    first axis has K entries (or K - 1: the last is then ``1 - sum``); -inf off the simplex."""
    x, alpha = (jnp.asarray(v) for v in _args("kiln.scipy.stats.dirichlet.logpdf", x, alpha))
    if alpha.ndim != 1:
        raise ValueError(f"kiln.scipy.stats.dirichlet.logpdf: alpha must be one-dimensional, got shape "
                         f"{alpha.shape}")
    K = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (K, K - 1):
        raise ValueError(f"kiln.scipy.stats.dirichlet.logpdf: x's first axis must have {K} or {K - 1} entries "
                         f"to match alpha of shape {alpha.shape}, got x of shape {x.shape}")
    if x.shape[0] == K - 1:
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    a = jnp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    log_norm = jnp.sum(lax.lgamma(alpha)) - lax.lgamma(jnp.sum(alpha))
    out = jnp.sum(sc.xlogy(a - 1, x), axis=0) - log_norm
    simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(simplex, out, -np.inf)


def pdf(x, alpha):
    """The Dirichlet density."""
    return jnp.exp(logpdf(x, alpha))
