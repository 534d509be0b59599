"""kiln.scipy.ndimage (as ``jax.scipy.ndimage``): ``map_coordinates`` of order 0 and 1."""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..driver.eager_jit import eager_jit
from ..numpy._util import check_arraylike

__all__ = ["map_coordinates"]


def _floor_mod(i, p: int):
    return jnp.mod(i, p) if p > 0 else jnp.zeros_like(i)


def _mirror(i, n: int):
    """Reflect about the edge samples (not repeating them): period 2 (n - 1)."""
    p = 2 * (n - 1)
    j = _floor_mod(i, p)
    return jnp.where(j >= n, p - j, j)


def _reflect(i, n: int):
    """Reflect about the edges between samples (repeating them): period 2 n."""
    j = _floor_mod(i, 2 * n)
    return jnp.where(j >= n, 2 * n - 1 - j, j)


_MODES = {
    "constant": lambda i, n: i,
    "nearest": lambda i, n: jnp.clip(i, 0, n - 1),
    "wrap": lambda i, n: _floor_mod(i, n),
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(x):
    return x if dtypes.issubdtype(x.dtype, np.integer) else lax.round(x)


# Called eagerly, one compiled program per signature (as JAX jits it): op by op it was 24x slower than JAX's.
@eager_jit("order", "mode", sequences=("coordinates",))
def map_coordinates(input, coordinates: Sequence, order: int, mode: str = "constant", cval=0.0):
    """Sample ``input`` at the (fractional) ``coordinates`` (one array per dimension of ``input``) by
    nearest-neighbour (``order=0``, halves rounded away from zero) or linear (``order=1``) interpolation.

    ``mode`` says how indices beyond the edges map back: 'constant' (those samples are ``cval``),
    'nearest', 'wrap', 'mirror' or 'reflect' (as SciPy). Integer inputs give rounded integers.
    """
    where = "kiln.scipy.ndimage.map_coordinates"
    check_arraylike(where, input)
    x = jnp.asarray(input)
    if not isinstance(coordinates, (list, tuple)) and not hasattr(coordinates, "shape"):
        raise TypeError(f"{where}: coordinates must be a sequence of arrays (one per dimension of input), got "
                        f"{type(coordinates).__name__}")
    coords = [jnp.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise ValueError(f"{where}: coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {x.ndim}")
    if mode not in _MODES:
        raise NotImplementedError(f"{where}: mode {mode!r} is not supported; use one of {sorted(_MODES)}")
    if order not in (0, 1):
        raise NotImplementedError(f"{where}: order must be 0 or 1 (as in JAX), got {order!r}")
    fix = _MODES[mode]
    cval = jnp.asarray(cval, dtype=x.dtype)
    per_dim = []
    for c, n in zip(coords, x.shape):
        if not dtypes.is_inexact(c.dtype):
            c = c.astype(dtypes.default_float_dtype())
        if order == 0:
            nodes = [(_round(c).astype(np.int32), None)]
        else:
            lower = jnp.floor(c)
            frac = c - lower
            i = lower.astype(np.int32)
            nodes = [(i, 1 - frac), (i + 1, frac)]
        per_dim.append([(fix(i, n), (i >= 0) & (i < n) if mode == "constant" else None, w) for i, w in nodes])
    total = None
    for combo in itertools.product(*per_dim):
        idx = tuple(c[0] for c in combo)
        value = x[idx]
        masks = [c[1] for c in combo if c[1] is not None]
        if masks:
            ok = masks[0]
            for m in masks[1:]:
                ok = ok & m
            value = jnp.where(ok, value, cval)
        weights = [c[2] for c in combo if c[2] is not None]
        term = value
        for w in weights:
            term = term * w
        total = term if total is None else total + term
    if dtypes.issubdtype(x.dtype, np.integer):
        total = _round(total)
    return total.astype(x.dtype)
