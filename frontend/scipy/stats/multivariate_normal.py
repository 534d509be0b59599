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
    # JAX's formulas, op for op, for its roundings: log(2 pi) is taken in the arguments' dtype (a NumPy float64
    # scalar would be rounded from float64, and promote float16 arguments), squared norms are einsums.
    if mean.ndim == 0:
        return -1 / 2 * jnp.square(x - mean) / cov - 1 / 2 * (jnp.log(2 * np.pi) + jnp.log(cov))
    n = mean.shape[-1]
    if cov.ndim == 0:
        y = x - mean
        return -1 / 2 * jnp.einsum("...i,...i->...", y, y) / cov - n / 2 * (jnp.log(2 * np.pi) + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"kiln.scipy.stats.multivariate_normal.logpdf: cov must be a scalar or have shape "
                         f"(..., {n}, {n}) to match mean's shape {mean.shape}, got {cov.shape}")
    L = lax_linalg.cholesky(cov)
    y = _solve_rows(L, x - mean)
    return (-1 / 2 * jnp.einsum("...i,...i->...", y, y) - n / 2 * jnp.log(2 * np.pi)
            - jnp.log(L.diagonal(axis1=-1, axis2=-2)).sum(-1))


def _solve_rows(L, b):
    """The rows ``y`` with ``y @ L.T = b``, solved as JAX's vectorized solve is, for its roundings: against one
    ``L``, all the rows of ``b`` at once (its batching rule stacks them); else each row against its ``L``."""
    if L.ndim == 2:
        n = L.shape[-1]
        y = lax_linalg.triangular_solve(L, jnp.reshape(b, (-1, n)), lower=True, transpose_a=True)
        return jnp.reshape(y, b.shape)
    return jnp.vectorize(_solve_row, signature="(n,n),(n)->(n)")(L, b)


def _solve_row(L, b):
    return lax_linalg.triangular_solve(L, b[None, :], lower=True, transpose_a=True)[0]


def pdf(x, mean, cov):
    """The multivariate normal density."""
    return jnp.exp(logpdf(x, mean, cov))


def _promote(x, mean, cov):
    x, mean, cov = _args("kiln.scipy.stats.multivariate_normal.logpdf", x, mean, cov)
    return jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov)
