"""kiln.scipy.integrate (as ``jax.scipy.integrate``)."""
from __future__ import annotations

from .. import numpy as jnp
from ..core import dtypes
from ..numpy._util import canonical_axis, check_arraylike

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at the sample points ``x`` (a 1-d
    array along ``axis``, or one of ``y``'s shape) or with the spacing ``dx``."""
    where = "kiln.scipy.integrate.trapezoid"
    check_arraylike(where, y, *(() if x is None else (x,)))
    y = jnp.asarray(y)
    if not dtypes.is_inexact(y.dtype):
        y = y.astype(dtypes.default_float_dtype())
    axis = canonical_axis(where, axis, y.ndim)
    y = jnp.moveaxis(y, axis, -1)
    if x is None:
        d = dx
    else:
        x = jnp.asarray(x)
        if x.ndim == 1:
            if x.shape[0] != y.shape[-1]:
                raise ValueError(f"{where}: x has {x.shape[0]} points but y has {y.shape[-1]} along axis {axis}")
            d = x[1:] - x[:-1]
        else:
            x = jnp.moveaxis(x, axis, -1)
            d = x[..., 1:] - x[..., :-1]
    return jnp.sum(d * (y[..., 1:] + y[..., :-1]), axis=-1) / 2
