"""kiln.scipy.stats.multivariate_normal: the multivariate normal distribution (as JAX's)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ...lax import linalg as lax_linalg
from ..special import _args

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular: None = None):
    """Log density of the multivariate normal with ``mean`` (``(..., n)``) and ``cov`` (``(..., n, n)``,
    or a scalar variance shared by all coordinates); ``x`` is ``(..., n)``."""
    if allow_singular is not None:
        raise NotImplementedError("kiln.scipy.stats.multivariate_normal.logpdf: allow_singular is not supported "
                                  "(as in JAX); pass a positive definite cov")
    x, mean, cov = _promote(x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (np.log(2 * np.pi) + jnp.log(cov))
    n = mean.shape[-1]
    if cov.ndim == 0:
        y = x - mean
        return -0.5 * jnp.sum(y * y, axis=-1) / cov - n / 2 * (np.log(2 * np.pi) + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"kiln.scipy.stats.multivariate_normal.logpdf: cov must be a scalar or have shape "
                         f"(..., {n}, {n}) to match mean's shape {mean.shape}, got {cov.shape}")
    L = lax_linalg.cholesky(cov)
    y = x - mean
    batch = np.broadcast_shapes(y.shape[:-1], L.shape[:-2])
    L = jnp.broadcast_to(L, batch + (n, n))
    y = jnp.broadcast_to(y, batch + (n,))
    z = lax_linalg.triangular_solve(L, y[..., None], left_side=True, lower=True)[..., 0]
    logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - n / 2 * np.log(2 * np.pi) - logdet


def pdf(x, mean, cov):
    """The multivariate normal density."""
    return jnp.exp(logpdf(x, mean, cov))


def _promote(x, mean, cov):
    x, mean, cov = _args("kiln.scipy.stats.multivariate_normal.logpdf", x, mean, cov)
    return jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov)
