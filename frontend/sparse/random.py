"""Random BCOO arrays (``jax.experimental.sparse.random_bcoo``).

The same recipe as JAX's, on kiln's threefry PRNG (bit-exact with JAX's): the key is split into one key for the
values and one per batch element for the positions; the positions are ``kiln.random.choice`` draws of flat
indices into the sparse dimensions (without replacement for unique indices), unravelled into ``n_sparse``
columns. So, for the default ``generator``, the arrays equal JAX's for the same key.
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import numpy as jnp
from .. import random as krandom
from ..batching.api import vmap
from ..core import dtypes
from ..core.tracing import Tracer
from .bcoo import BCOO, bcoo_sort_indices

__all__ = ["random_bcoo"]


def _static_int(value: Any, what: str) -> int:
    if isinstance(value, Tracer):
        raise TypeError(f"random_bcoo: {what} must be a static Python int, got a traced value (under jit, vmap or "
                        "grad); pass it as a static argument")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"random_bcoo: {what} must be a Python int, got {type(value).__name__} {value!r}") from None


def _nse_count(nse: Any, sparse_size: int, unique_indices: bool) -> int:
    """``nse`` as a count: a float in (0, 1) is the fraction of the sparse positions (rounded up), as JAX's."""
    if isinstance(nse, Tracer):
        raise TypeError("random_bcoo: nse must be a static number (an int count or a float fraction in (0, 1)), "
                        "got a traced value")
    if isinstance(nse, numbers.Real) and not isinstance(nse, numbers.Integral):
        if not 0 < nse < 1:
            raise ValueError(f"random_bcoo: a float nse is the fraction of the {sparse_size} sparse positions to "
                             f"store and must lie in (0, 1), got nse={nse}; for a count pass an int")
        return int(math.ceil(nse * sparse_size))
    count = _static_int(nse, "nse")
    limit = sparse_size if unique_indices else math.inf
    if not 0 <= count <= limit:
        raise ValueError(f"random_bcoo: got nse={count}, expected between 0 and {sparse_size} (the number of "
                         f"positions in the sparse dimensions); with more entries pass unique_indices=False")
    return count


def random_bcoo(key: Any, shape: Sequence[int], *, dtype: Any = None, indices_dtype: Any = None,
                nse: float | int = 0.2, n_batch: int = 0, n_dense: int = 0, unique_indices: bool = True,
                sorted_indices: bool = False, generator: Callable[..., Any] = krandom.uniform,
                **kwds: Any) -> BCOO:
    """A random BCOO array (as ``jax.experimental.sparse.random_bcoo``).

    Parameters
    ----------
    key : a PRNG key, for ``generator`` and for the positions.
    shape : the shape of the array: ``n_batch`` batch axes, then the sparse ones, then ``n_dense`` dense ones.
    dtype : the dtype of ``data`` (default: kiln's default float, float32 or float64 with x64).
    indices_dtype : the dtype of ``indices`` (default: kiln's default int).
    nse : the number of stored entries per batch element, or, as a float in (0, 1), the fraction of the positions
        in the sparse dimensions (rounded up). Default 0.2.
    n_batch, n_dense : the numbers of batch and dense axes.
    unique_indices : draw the positions without replacement (default) or with.
    sorted_indices : sort each batch element's entries by index.
    generator : called as ``generator(key, shape=data_shape, dtype=dtype, **kwds)`` for ``data``; default
        ``kiln.random.uniform``.

    Returns
    -------
    A BCOO array with ``data`` of shape ``batch + (nse,) + dense`` and ``indices`` of shape
    ``batch + (nse, n_sparse)``.
    """
    shape = tuple(_static_int(s, "each entry of shape") for s in shape)
    n_batch, n_dense = _static_int(n_batch, "n_batch"), _static_int(n_dense, "n_dense")
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"random_bcoo: invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}: both must be "
                         f"non-negative with n_batch + n_dense <= {len(shape)} (the rank)")
    n_sparse = len(shape) - n_batch - n_dense
    batch_shape, sparse_shape = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    dense_shape = shape[n_batch + n_sparse:]
    sparse_size = math.prod(sparse_shape)
    nse = _nse_count(nse, sparse_size, unique_indices)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    indices_dtype = dtypes.default_int_dtype() if indices_dtype is None else np.dtype(indices_dtype)
    if not dtypes.is_int(indices_dtype):
        raise TypeError(f"random_bcoo: indices_dtype must be an integer dtype, got {indices_dtype}")
    if sparse_size > dtypes.iinfo(indices_dtype).max:
        raise ValueError(f"random_bcoo: indices_dtype={indices_dtype} does not have enough range to index the "
                         f"{sparse_size} positions of the sparse dimensions {sparse_shape}; pass a wider "
                         "indices_dtype")

    def positions(k):
        if not sparse_shape:
            return jnp.zeros((nse, 0), indices_dtype)
        flat = krandom.choice(k, sparse_size, shape=(nse,), replace=not unique_indices).astype(indices_dtype)
        return jnp.stack(jnp.unravel_index(flat, sparse_shape), axis=1)

    keys = krandom.split(key, math.prod(batch_shape) + 1)
    data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)
    indices = vmap(positions)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
    mat = BCOO((data, indices), shape=shape, unique_indices=unique_indices)
    return bcoo_sort_indices(mat) if sorted_indices else mat
