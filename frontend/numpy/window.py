"""Window functions of kiln.numpy: bartlett, blackman, hamming, hanning, kaiser. ``M`` (the number of
points) is static; the values are computed by kiln in the default float dtype."""
from __future__ import annotations

import math
from typing import Any

from ..core import dtypes
from ._util import check_arraylike, static_int
from .creation import arange, asarray, ones, zeros
from .ufuncs import cos, i0, sqrt, where

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _points(fname: str, M: Any) -> tuple[int, Any]:
    """``M`` as an int, and the symmetric sample positions ``1 - M, 3 - M, ..., M - 1`` (or None when
    the window is empty or a single point)."""
    M = static_int(fname, "M", M)
    if M < 2:
        return M, None
    return M, arange(1 - M, M, 2, dtype=dtypes.default_float_dtype())


def _trivial(M: int) -> Any:
    dtype = dtypes.default_float_dtype()
    return zeros((0,), dtype) if M < 1 else ones((1,), dtype)


def bartlett(M: int) -> Any:
    """The Bartlett (triangular) window of ``M`` points."""
    M, n = _points("bartlett", M)
    if n is None:
        return _trivial(M)
    return where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1))


def _cosine_sum(fname: str, M: Any, coefficients: tuple[float, ...]) -> Any:
    M, n = _points(fname, M)
    if n is None:
        return _trivial(M)
    out = coefficients[0]
    for k, c in enumerate(coefficients[1:], start=1):
        out = out + c * cos(k * math.pi * n / (M - 1))
    return out


def blackman(M: int) -> Any:
    """The Blackman window of ``M`` points."""
    return _cosine_sum("blackman", M, (0.42, 0.5, 0.08))


def hamming(M: int) -> Any:
    """The Hamming window of ``M`` points."""
    return _cosine_sum("hamming", M, (0.54, 0.46))


def hanning(M: int) -> Any:
    """The Hann window of ``M`` points."""
    return _cosine_sum("hanning", M, (0.5, 0.5))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of ``M`` points with shape parameter ``beta`` (which may be traced)."""
    M = static_int("kaiser", "M", M)
    check_arraylike("kaiser", beta)
    if M < 2:
        return _trivial(M)
    dtype = dtypes.default_float_dtype()
    beta = asarray(beta, dtype=dtype) if not dtypes.is_inexact(asarray(beta).dtype) else asarray(beta)
    n = arange(0, M, dtype=dtype)
    alpha = (M - 1) / 2.0
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
