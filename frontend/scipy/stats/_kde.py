"""kiln.scipy.stats.gaussian_kde: kernel density estimation with Gaussian kernels (as JAX's)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...core import dtypes
from ...core.tree_util import register_pytree_node_class
from ...nn.functions import logsumexp
from ...numpy import linalg as _nla
from ...random import keys as _keys
from ...random import samplers as _samplers
from ..special import ndtr

__all__ = ["gaussian_kde"]

_WHERE = "kiln.scipy.stats.gaussian_kde"


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian kernel density estimate of ``dataset`` (``(d, n)``: n points in d dimensions, or ``(n,)``).

    ``bw_method``: 'scott' (default), 'silverman', a scalar factor, or a callable taking this object and
    returning the factor; ``weights``: one per point. Attributes as SciPy's: ``dataset``, ``weights``,
    ``neff``, ``factor``, ``covariance``, ``inv_cov``, ``d``, ``n``. A pytree, so it passes through ``jit``.
    """

    __slots__ = ("dataset", "weights", "neff", "factor", "covariance", "inv_cov")

    def __init__(self, dataset, bw_method: Any = None, weights=None):
        x = jnp.atleast_2d(jnp.asarray(dataset))
        if x.dtype.kind == "c":
            raise NotImplementedError(f"{_WHERE}: complex data is not supported")
        if not dtypes.is_inexact(x.dtype):
            x = x.astype(dtypes.default_float_dtype())
        d, n = x.shape
        if x.size <= 1:
            raise ValueError(f"{_WHERE}: dataset must have more than one element, got shape {x.shape}")
        if weights is None:
            w = jnp.full((n,), 1.0 / n, dtype=x.dtype)
        else:
            w = jnp.asarray(weights, dtype=x.dtype)
            if w.ndim != 1:
                raise ValueError(f"{_WHERE}: weights must be one-dimensional, got shape {w.shape}")
            if w.shape[0] != n:
                raise ValueError(f"{_WHERE}: weights must have one entry per point ({n}), got {w.shape[0]}")
            w = w / jnp.sum(w)
        object.__setattr__(self, "dataset", x)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "neff", 1 / jnp.sum(w * w))
        if bw_method is None or bw_method == "scott":
            factor = self.neff ** (-1.0 / (d + 4))
        elif bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str):
            raise ValueError(f"{_WHERE}: bw_method must be 'scott', 'silverman', a scalar or a callable, got "
                             f"{bw_method!r}")
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            factor = bw_method
        factor = jnp.asarray(factor, dtype=x.dtype)
        mean = jnp.sum(x * w, axis=1, keepdims=True)
        centred = x - mean
        data_cov = (centred * w) @ centred.T / (1 - jnp.sum(w * w))
        cov = data_cov * factor ** 2
        object.__setattr__(self, "factor", factor)
        object.__setattr__(self, "covariance", cov)
        object.__setattr__(self, "inv_cov", _nla.inv(cov))

    def __setattr__(self, name, value):
        raise AttributeError(f"{_WHERE} is immutable; make a new one instead of setting {name}")

    def tree_flatten(self):
        return (self.dataset, self.weights, self.neff, self.factor, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        for name, value in zip(cls.__slots__, children):
            object.__setattr__(obj, name, value)
        return obj

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def _points(self, points):
        p = jnp.atleast_2d(jnp.asarray(points, dtype=self.dataset.dtype))
        if p.shape[0] != self.d:
            if p.shape[0] == 1 and p.shape[1] == self.d:
                return p.T
            raise ValueError(f"{_WHERE}: points have dimension {p.shape[0]}, the data has dimension {self.d}")
        return p

    def _log_kernel_sums(self, points, cov, inv_cov, data, weights):
        """log sum_i w_i N(points; data_i, cov) for each point."""
        diff = data[:, :, None] - points[:, None, :]  # (d, n, m)
        mahal = jnp.einsum("inm,ij,jnm->nm", diff, inv_cov, diff)
        _, logdet = _nla.slogdet(2 * np.pi * cov)
        return logsumexp(-0.5 * mahal - 0.5 * logdet, axis=0, b=weights[:, None])

    def logpdf(self, x):
        """The log of the estimated density at the points ``x`` (``(d, m)``)."""
        p = self._points(x)
        return self._log_kernel_sums(p, self.covariance, self.inv_cov, self.dataset, self.weights)

    def evaluate(self, points):
        """The estimated density at ``points`` (``(d, m)``, or ``(m,)`` for one-dimensional data)."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate
    pdf = evaluate

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times the Gaussian with ``mean`` (``(d,)``) and ``cov`` (``(d, d)``)."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean, dtype=self.dataset.dtype)))
        cov = jnp.atleast_2d(jnp.asarray(cov, dtype=self.dataset.dtype))
        if mean.shape != (self.d,):
            raise ValueError(f"{_WHERE}.integrate_gaussian: mean must have dimension {self.d}, got {mean.shape}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"{_WHERE}.integrate_gaussian: cov must have shape ({self.d}, {self.d}), got "
                             f"{cov.shape}")
        total = self.covariance + cov
        out = self._log_kernel_sums(mean[:, None], total, _nla.inv(total), self.dataset, self.weights)
        return jnp.exp(out[0])

    def integrate_box_1d(self, low, high):
        """The integral of a one-dimensional density over ``[low, high]``."""
        if self.d != 1:
            raise ValueError(f"{_WHERE}.integrate_box_1d: only for one-dimensional data, this has d={self.d}")
        sd = jnp.sqrt(self.covariance[0, 0])
        x = self.dataset[0]
        return jnp.sum(self.weights * (ndtr((high - x) / sd) - ndtr((low - x) / sd)))

    def integrate_kde(self, other: gaussian_kde):
        """The integral of the product of this density and ``other``'s."""
        if other.d != self.d:
            raise ValueError(f"{_WHERE}.integrate_kde: the estimates have dimensions {self.d} and {other.d}")
        total = self.covariance + other.covariance
        logs = self._log_kernel_sums(other.dataset, total, _nla.inv(total), self.dataset, self.weights)
        return jnp.sum(other.weights * jnp.exp(logs))

    def resample(self, key, shape=()):
        """Draws from the estimated density: ``(d, *shape)``; ``key`` is a kiln.random key."""
        shape = tuple(shape)
        k1, k2 = _keys.split(key)
        ind = _samplers.choice(k1, self.n, shape=shape, p=self.weights)
        eps = _samplers.multivariate_normal(k2, jnp.zeros((self.d,), self.dataset.dtype), self.covariance, shape,
                                            dtype=self.dataset.dtype)
        return self.dataset[:, ind] + jnp.moveaxis(eps, -1, 0)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError(f"{_WHERE}.integrate_box is not supported (as in JAX); for one-dimensional "
                                  "data use integrate_box_1d")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError(f"{_WHERE}.set_bandwidth is not supported (the estimate is immutable, as in "
                                  "JAX); make a new gaussian_kde with the bw_method")
