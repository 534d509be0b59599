"""Shared pieces of the distributions: argument promotion and the standardised variable."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...core.errors import BroadcastError
from ...core.tracing import abstractify
from ..special import _args


def args(where: str, *xs: Any) -> list[Any]:
    """Check, promote to one inexact dtype (the default float for integers) and promote ranks, as JAX's
    promote_args_inexact: where arrays of two ranks meet, the lower ones (scalars too) get leading axes of size 1,
    but none is broadcast to the full shape. A term of loc or scale alone is then computed on their own shape,
    as in JAX (whose numbers differ: XLA rounds a fused full-shape program differently)."""
    fname = f"kiln.scipy.stats.{where}"
    xs = _args(fname, *xs)
    shapes = [abstractify(x).shape for x in xs]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise BroadcastError(f"{fname}: operands could not be broadcast together with shapes "
                             + " ".join(str(s) for s in shapes)) from None
    if len({len(s) for s in shapes if s}) < 2:
        return xs  # one rank (or scalars beside it): the operations broadcast
    return [lax.broadcast_to_rank(x, len(shape)) for x in xs]


def standardize(x, loc, scale):
    return (x - loc) / scale


def outside(cond, value, out):
    """``out`` where ``cond`` is false, ``value`` where it is true."""
    return jnp.where(cond, value, out)


def quantile_domain(q, out):
    """NaN for a probability outside ``[0, 1]`` (or NaN)."""
    return jnp.where((q < 0) | (q > 1) | jnp.isnan(q), np.nan, out)
