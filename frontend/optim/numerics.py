"""Numerically safe helpers (optax's top-level numerics): overflow-free counters, norms with finite gradients
at zero, a diagonal normal distribution, and optax's top-level aliases of the tree moment updates."""
from __future__ import annotations

from typing import Any

from .. import lax, random
from .. import numpy as jnp
from ..scipy.stats import norm as _normal
from .tree_utils import tree_bias_correction as bias_correction
from .tree_utils import tree_map_params as tree_map_params
from .tree_utils import tree_update_infinity_moment as update_infinity_moment
from .tree_utils import tree_update_moment as update_moment
from .tree_utils import tree_update_moment_per_elem_norm as update_moment_per_elem_norm

__all__ = [
    "safe_increment", "safe_int32_increment", "safe_norm", "safe_root_mean_squares", "multi_normal",
    "update_moment", "update_moment_per_elem_norm", "update_infinity_moment",
    "bias_correction", "tree_map_params",
]


def safe_increment(count: Any) -> Any:
    """``count + 1`` in ``count``'s dtype, saturating at the dtype's largest value instead of overflowing."""
    dtype = jnp.asarray(count).dtype
    if jnp.issubdtype(dtype, jnp.integer):
        top = jnp.iinfo(dtype).max
    elif jnp.issubdtype(dtype, jnp.floating):
        top = jnp.finfo(dtype).max
    else:
        raise ValueError(f"safe_increment: count has dtype {dtype}; it must be an integer or floating dtype "
                         "(start it as jnp.zeros([], jnp.int32)).")
    top = jnp.array(top, dtype)
    return jnp.where(count < top, count + jnp.array(1, dtype), top)


# optax's name, kept for old code: the same function (not transforms._increment, which always returns int32)
safe_int32_increment = safe_increment


def _abs_sq(x):
    return jnp.real(jnp.conj(x) * x)


def safe_norm(x: Any, min_norm: Any, ord: Any = None, axis: Any = None,  # noqa: A002 (optax's name)
              keepdims: bool = False) -> Any:
    """``maximum(linalg.norm(x), min_norm)`` whose gradient is 0 (not NaN) where the norm is below ``min_norm``."""
    norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    # where the norm is small, differentiate the norm of ones instead, whose gradient is finite
    x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
    norm = norm if keepdims else jnp.squeeze(norm, axis=axis)
    masked = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked)


def safe_root_mean_squares(x: Any, min_rms: Any) -> Any:
    """``maximum(sqrt(mean(|x|**2)), min_rms)`` whose gradient is 0 (not NaN) where the rms is small."""
    rms = jnp.sqrt(jnp.mean(_abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(_abs_sq(x))))


class MultiNormalDiagFromLogScale:
    """A normal distribution with independent coordinates, mean ``loc`` and standard deviation ``exp(log_scale)``."""

    def __init__(self, loc: Any, log_scale: Any):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = lax.broadcast_shapes(self._mean.shape, self._scale.shape)

    def sample(self, shape: Any, key: Any) -> Any:
        """Draws of shape ``shape + param_shape``."""
        draws = random.normal(key, shape=tuple(shape) + self._param_shape)
        return draws * self._scale + self._mean

    def log_prob(self, x: Any) -> Any:
        """Log density of ``x``, summed over the parameter axes."""
        per_coordinate = _normal.logpdf(x, loc=self._mean, scale=self._scale)
        return jnp.sum(per_coordinate, axis=[-(i + 1) for i in range(len(self._param_shape))])

    @property
    def log_scale(self) -> Any:
        return self._log_scale

    @property
    def params(self) -> list:
        return [self._mean, self._log_scale]


def multi_normal(loc: Any, log_scale: Any) -> MultiNormalDiagFromLogScale:
    """A diagonal normal distribution with mean ``loc`` and log standard deviation ``log_scale``."""
    return MultiNormalDiagFromLogScale(loc=loc, log_scale=log_scale)
