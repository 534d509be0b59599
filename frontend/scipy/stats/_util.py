"""Shared pieces of the distributions: argument promotion and the standardised variable."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import _args


def args(where: str, *xs: Any) -> list[Any]:
    """Check, broadcast and promote to one inexact dtype (the default float for integers)."""
    return _args(f"kiln.scipy.stats.{where}", *xs, broadcast=True)


def standardize(x, loc, scale):
    return (x - loc) / scale


def outside(cond, value, out):
    """``out`` where ``cond`` is false, ``value`` where it is true."""
    return jnp.where(cond, value, out)


def quantile_domain(q, out):
    """NaN for a probability outside ``[0, 1]`` (or NaN)."""
    return jnp.where((q < 0) | (q > 1) | jnp.isnan(q), np.nan, out)
