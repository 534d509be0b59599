"""kiln.scipy.signal: direct N-d convolution and correlation, and detrend (as ``jax.scipy.signal``)."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..numpy._util import check_arraylike

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "detrend"]


def _where(fname: str) -> str:
    return f"kiln.scipy.signal.{fname}"


def _operands(fname: str, in1, in2):
    check_arraylike(_where(fname), in1, in2)
    dtype = dtypes.result_type(in1, in2)
    if dtype == np.bool_:
        raise TypeError(f"{_where(fname)}: boolean inputs are not supported; convert them to a numeric dtype")
    a, v = jnp.asarray(in1, dtype=dtype), jnp.asarray(in2, dtype=dtype)
    if a.ndim != v.ndim:
        raise ValueError(f"{_where(fname)}: in1 and in2 must have the same number of dimensions, got shapes "
                         f"{a.shape} and {v.shape}")
    return a, v


def _check_method(fname: str, method: str) -> None:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{_where(fname)}: method must be 'auto', 'direct' or 'fft', got {method!r}")
    if method == "fft":
        raise NotImplementedError(f"{_where(fname)}: method='fft' is not supported yet; use 'direct' (or 'auto')")


def _conv(fname: str, a, v, mode: str, precision, same_start=lambda k: (k - 1) // 2):
    """Convolution of ``a`` and ``v`` (``v`` already flipped for a correlation's sake or not). Mode 'same'
    takes ``a``'s shape from the full result, from offset ``same_start(kernel size)`` in each dimension."""
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{_where(fname)}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if a.ndim == 0:
        return a * v
    if 0 in a.shape or 0 in v.shape:
        raise ValueError(f"{_where(fname)}: in1 and in2 must not be empty, got shapes {a.shape} and {v.shape}")
    if mode == "valid":
        if all(x >= y for x, y in zip(a.shape, v.shape)):
            pass
        elif all(x <= y for x, y in zip(a.shape, v.shape)):
            a, v = v, a
        else:
            raise ValueError(f"{_where(fname)}: with mode='valid', one input must be at least as large as the other "
                             f"in every dimension, got shapes {a.shape} and {v.shape}")
        padding = [(0, 0)] * a.ndim
    elif mode == "full":
        padding = [(k - 1, k - 1) for k in v.shape]
    else:
        padding = [(k - 1 - same_start(k), same_start(k)) for k in v.shape]
    kernel = jnp.flip(v)
    out = lax.conv_general_dilated(a[None, None], kernel[None, None], (1,) * a.ndim, padding,
                                   precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (direct, as one XLA convolution); ``mode``: 'full',
    'same' (``in1``'s shape, centred) or 'valid'. ``method='fft'`` is not supported yet."""
    _check_method("convolve", method)
    a, v = _operands("convolve", in1, in2)
    return _conv("convolve", a, v, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d cross-correlation of ``in1`` and ``in2``: ``convolve(in1, flip(conj(in2)))``."""
    _check_method("correlate", method)
    a, v = _operands("correlate", in1, in2)
    if mode == "valid" and a.ndim and not all(x >= y for x, y in zip(a.shape, v.shape)) \
            and all(x <= y for x, y in zip(a.shape, v.shape)):
        # SciPy swaps the inputs (and so reverses and conjugates the output) when in2 is the larger one.
        return jnp.conj(jnp.flip(_conv("correlate", v, jnp.flip(jnp.conj(a)), mode, precision)))
    return _conv("correlate", a, jnp.flip(jnp.conj(v)), mode, precision)


def _check_2d(fname: str, a, v, boundary: str, fillvalue) -> None:
    if a.ndim != 2 or v.ndim != 2:
        raise ValueError(f"{_where(fname)}: in1 and in2 must be two-dimensional, got shapes {a.shape} and {v.shape}")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{_where(fname)}: only boundary='fill' with fillvalue=0 is supported (as in "
                                  f"JAX), got boundary={boundary!r}, fillvalue={fillvalue!r}")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """The 2-d convolution of ``in1`` and ``in2`` (zero boundary)."""
    a, v = _operands("convolve2d", in1, in2)
    _check_2d("convolve2d", a, v, boundary, fillvalue)
    return _conv("convolve2d", a, v, mode, precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """The 2-d cross-correlation of ``in1`` and ``in2`` (zero boundary)."""
    a, v = _operands("correlate2d", in1, in2)
    _check_2d("correlate2d", a, v, boundary, fillvalue)
    # As SciPy: the convolution with the flipped, conjugated kernel; 'same' starts at offset k // 2 of the
    # full result (correlate's 'same' starts at (k - 1) // 2).
    return _conv("correlate2d", a, jnp.flip(jnp.conj(v)), mode, precision, same_start=lambda k: k // 2)


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
    """Remove the mean (``type='constant'``) or the least-squares line (``'linear'``, piecewise between the
    static breakpoints ``bp``) along ``axis``."""
    if type not in ("constant", "linear"):
        raise ValueError(f"kiln.scipy.signal.detrend: type must be 'constant' or 'linear', got {type!r}")
    check_arraylike(_where("detrend"), data)
    x = jnp.asarray(data)
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(dtypes.default_float_dtype())
    if type == "constant":
        return x - jnp.mean(x, axis=axis, keepdims=True)
    x = jnp.moveaxis(x, axis, -1)
    n = x.shape[-1]
    bps = np.unique(np.concatenate([[0], np.atleast_1d(np.asarray(bp, dtype=int)), [n]]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError(f"kiln.scipy.signal.detrend: breakpoints must lie in [0, {n}], got {bp!r}")
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = x[..., lo:hi]
        m = hi - lo
        t = np.arange(1, m + 1, dtype=np.float64) / m
        design = np.stack([t, np.ones(m)], axis=1)
        proj = jnp.asarray(design @ np.linalg.pinv(design), dtype=x.dtype)  # static least-squares projector
        pieces.append(seg - jnp.einsum("ij,...j->...i", proj, seg))
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)
