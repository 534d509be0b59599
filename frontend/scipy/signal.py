"""kiln.scipy.signal (as ``jax.scipy.signal``): N-d convolution and correlation (direct, as one XLA
convolution, or through the FFT), detrend, and the FFT-based spectral functions stft/istft/csd/welch.

Window coefficients, segment indices and the FFT-length bookkeeping are static (NumPy at trace time); every
value that depends on the data goes through kiln's ops."""
from __future__ import annotations

import operator
import warnings
from typing import Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..core.tracing import Tracer
from ..numpy import fft as jfft
from ..numpy._util import check_arraylike

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "detrend", "fftconvolve", "stft", "istft",
           "csd", "welch"]


def _where(fname: str) -> str:
    return f"kiln.scipy.signal.{fname}"


def _operands(fname: str, in1, in2):
    """The inputs in their common inexact dtype (integers and bools compute in the default float, as JAX's)."""
    a, v = _inexact_pair(fname, in1, in2)
    if a.ndim != v.ndim:
        raise ValueError(f"{_where(fname)}: in1 and in2 must have the same number of dimensions, got shapes "
                         f"{a.shape} and {v.shape}")
    return a, v


def _check_method(fname: str, method: str) -> None:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{_where(fname)}: method must be 'auto', 'direct' or 'fft', got {method!r}")


def _conv(fname: str, a, v, mode: str, precision):
    """The convolution of ``a`` and ``v`` as JAX computes it: one XLA convolution of the larger input with the
    flipped smaller one (the inputs swap when ``a`` is nowhere larger than ``v``, in every mode, which decides
    the order of the sums); mode 'same' takes ``a``'s shape from the centre of the full result."""
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{_where(fname)}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if a.ndim == 0:
        return a * v
    if 0 in a.shape or 0 in v.shape:
        raise ValueError(f"{_where(fname)}: in1 and in2 must not be empty, got shapes {a.shape} and {v.shape}")
    swap = all(x <= y for x, y in zip(a.shape, v.shape))
    if mode == "valid" and not swap and not all(x >= y for x, y in zip(a.shape, v.shape)):
        raise ValueError(f"{_where(fname)}: with mode='valid', one input must be at least as large as the other "
                         f"in every dimension, got shapes {a.shape} and {v.shape}")
    shape_o = v.shape
    if swap:
        a, v = v, a
    if mode == "valid":
        padding = [(0, 0)] * a.ndim
    elif mode == "full":
        padding = [(k - 1, k - 1) for k in v.shape]
    else:
        padding = [(k - 1 - (k_o - 1) // 2, k - k_o + (k_o - 1) // 2) for k, k_o in zip(v.shape, shape_o)]
    out = lax.conv_general_dilated(a[None, None], jnp.flip(v)[None, None], (1,) * a.ndim, padding,
                                   precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (direct, as one XLA convolution); ``mode``: 'full',
    'same' (``in1``'s shape, centred) or 'valid'. ``method='fft'`` computes it as :func:`fftconvolve`
    (``'auto'`` is ``'direct'``, as in JAX)."""
    _check_method("convolve", method)
    if method == "fft":
        return _fftconvolve("convolve", in1, in2, mode, None)
    a, v = _operands("convolve", in1, in2)
    return _conv("convolve", a, v, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d cross-correlation of ``in1`` and ``in2``: ``convolve(in1, flip(conj(in2)))``."""
    _check_method("correlate", method)
    a, v = _operands("correlate", in1, in2)
    if method == "fft":
        return _fftconvolve("correlate", a, jnp.flip(jnp.conj(v)), mode, None)
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
    # JAX's order of operations (and so its bits): flip in1 rather than in2, and the result back; 'valid' and
    # 'full' with in1 nowhere larger convolve flip(in2) with conj(in1) instead.
    swap = all(x <= y for x, y in zip(a.shape, v.shape))
    if mode == "valid" and swap and a.shape != v.shape:
        return _conv("correlate2d", jnp.flip(v), jnp.conj(a), mode, precision)
    if mode == "full" and swap:
        return jnp.conj(_conv("correlate2d", jnp.flip(v), jnp.conj(a), mode, precision))
    return jnp.flip(_conv("correlate2d", jnp.flip(a), jnp.conj(v), mode, precision))


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


# ----------------------------------------------------------------------------------------------------------
# FFT-based convolution


def _inexact_pair(fname: str, in1, in2):
    check_arraylike(_where(fname), in1, in2)
    dtype = dtypes.result_type(in1, in2)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    return jnp.asarray(in1, dtype=dtype), jnp.asarray(in2, dtype=dtype)


def _fftconvolve(fname: str, in1, in2, mode: str, axes):
    a, v = _inexact_pair(fname, in1, in2)
    if a.ndim != v.ndim:
        raise ValueError(f"{_where(fname)}: in1 and in2 must have the same number of dimensions, got shapes "
                         f"{a.shape} and {v.shape}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{_where(fname)}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if axes is None:
        axes = tuple(range(a.ndim))
    else:
        if isinstance(axes, (int, np.integer)):
            axes = (axes,)
        try:
            axes = tuple(operator.index(ax) for ax in axes)
        except TypeError:
            raise TypeError(f"{_where(fname)}: axes must be an int or a sequence of ints, got {axes!r}") from None
        for ax in axes:
            if not -a.ndim <= ax < a.ndim:
                raise ValueError(f"{_where(fname)}: axis {ax} is out of bounds for arrays of dimension {a.ndim}")
        axes = tuple(sorted({ax % a.ndim for ax in axes}))
    others = [d for d in range(a.ndim) if d not in axes]
    if any(a.shape[d] != v.shape[d] for d in others):
        raise ValueError(f"{_where(fname)}: in1 and in2 must have the same size along the axes not convolved "
                         f"over, got shapes {a.shape} and {v.shape} with axes={axes}")
    if a.size == 0 or v.size == 0:
        raise ValueError(f"{_where(fname)}: in1 and in2 must not be empty, got shapes {a.shape} and {v.shape}")
    if mode == "valid":
        if all(a.shape[d] >= v.shape[d] for d in axes):
            pass
        elif all(a.shape[d] <= v.shape[d] for d in axes):
            a, v = v, a
        else:
            raise ValueError(f"{_where(fname)}: with mode='valid', one input must be at least as large as the other "
                             f"in every convolved axis, got shapes {a.shape} and {v.shape}")
    full = {d: a.shape[d] + v.shape[d] - 1 for d in axes}
    if all(a.shape[d] == 1 or v.shape[d] == 1 for d in axes):
        conv = a * v  # every convolved axis has a single point on one side: a broadcast product
    else:
        lengths = [full[d] for d in axes]
        if dtypes.is_complex(a.dtype):
            conv = jfft.ifftn(jfft.fftn(a, lengths, axes) * jfft.fftn(v, lengths, axes), lengths, axes)
        else:
            conv = jfft.irfftn(jfft.rfftn(a, lengths, axes) * jfft.rfftn(v, lengths, axes), lengths, axes)
            conv = conv.astype(a.dtype)
    index = []
    for d in range(a.ndim):
        if d not in full:
            index.append(slice(None))
            continue
        out = {"full": full[d], "same": a.shape[d], "valid": a.shape[d] - v.shape[d] + 1}[mode]
        start = (full[d] - out) // 2
        index.append(slice(start, start + out))
    return conv[tuple(index)]


def fftconvolve(in1, in2, mode: str = "full", axes: Sequence[int] | None = None):
    """The N-d convolution of ``in1`` and ``in2`` through the FFT; ``mode``: 'full', 'same' or 'valid';
    ``axes``: the axes convolved over (default all; the others must match in size and are mapped over)."""
    return _fftconvolve("fftconvolve", in1, in2, mode, axes)


# ----------------------------------------------------------------------------------------------------------
# Windows and spectral analysis


def _general_cosine(M: int, coefficients: Sequence[float], sym: bool) -> np.ndarray:
    n = M if sym else M + 1
    theta = np.linspace(-np.pi, np.pi, n)
    w = sum(c * np.cos(k * theta) for k, c in enumerate(coefficients))
    return w if sym else w[:-1]


def _window_values(fname: str, window, M: int) -> np.ndarray:
    """SciPy's ``get_window(window, M)`` (periodic, as for spectral analysis) for the windows kiln knows, as a
    static float64 array."""
    name, params = (window[0], tuple(window[1:])) if isinstance(window, tuple) and window else (window, ())
    known = ("hann", "hamming", "blackman", "bartlett", "boxcar", "triang", "cosine", "tukey", "kaiser")
    aliases = {"hanning": "hann", "han": "hann", "hamm": "hamming", "ham": "hamming", "black": "blackman",
               "blk": "blackman", "bart": "bartlett", "brt": "bartlett", "box": "boxcar", "ones": "boxcar",
               "rect": "boxcar", "rectangular": "boxcar", "tri": "triang", "triangle": "triang",
               "halfcosine": "cosine", "tuk": "tukey", "ksr": "kaiser"}
    key = aliases.get(name, name) if isinstance(name, str) else None
    if key not in known:
        raise ValueError(f"{_where(fname)}: unknown window {window!r}; kiln knows {', '.join(known)} (as a name, "
                         "or a tuple such as ('tukey', 0.25) or ('kaiser', beta)), or pass the window as an array")
    needs = {"tukey": (0, 1), "kaiser": (1, 1)}.get(key, (0, 0))
    if not needs[0] <= len(params) <= needs[1]:
        raise ValueError(f"{_where(fname)}: window {window!r} takes {needs[1]} parameter(s) "
                         f"({'required' if needs[0] else 'optional'}), got {len(params)}")
    if M == 1:
        return np.ones(1)
    n = M + 1  # periodic: the symmetric window of M + 1 points without its last point
    if key == "hann":
        w = _general_cosine(M, (0.5, 0.5), False)
    elif key == "hamming":
        w = _general_cosine(M, (0.54, 0.46), False)
    elif key == "blackman":
        w = _general_cosine(M, (0.42, 0.50, 0.08), False)
    elif key == "boxcar":
        w = np.ones(M)
    elif key == "bartlett":
        k = np.arange(n)
        w = np.where(k <= (n - 1) / 2, 2.0 * k / (n - 1), 2.0 - 2.0 * k / (n - 1))[:-1]
    elif key == "triang":
        k = np.arange(1, (n + 1) // 2 + 1)
        if n % 2 == 0:
            half = (2 * k - 1.0) / n
            w = np.concatenate([half, half[::-1]])[:-1]
        else:
            half = 2 * k / (n + 1.0)
            w = np.concatenate([half, half[-2::-1]])[:-1]
    elif key == "cosine":
        w = np.sin(np.pi / n * (np.arange(n) + 0.5))[:-1]
    elif key == "tukey":
        alpha = float(params[0]) if params else 0.5
        if alpha <= 0:
            return np.ones(M)
        if alpha >= 1:
            return _general_cosine(M, (0.5, 0.5), False)
        k = np.arange(n)
        width = int(np.floor(alpha * (n - 1) / 2.0))
        k1, k2, k3 = k[:width + 1], k[width + 1:n - width - 1], k[n - width - 1:]
        w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * k1 / alpha / (n - 1))))
        w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * k3 / alpha / (n - 1))))
        w = np.concatenate([w1, np.ones(k2.shape), w3])[:-1]
    else:  # kaiser
        beta = float(params[0])
        alpha = (n - 1) / 2.0
        k = np.arange(n)
        w = (np.i0(beta * np.sqrt(1 - ((k - alpha) / alpha) ** 2.0)) / np.i0(beta))[:-1]
    return w


def _static(fname: str, what: str, value) -> int:
    if isinstance(value, Tracer):
        raise TypeError(f"{_where(fname)}: {what} must be a static integer, got a traced value; pass a Python int "
                        "(or mark it static under jit)")
    if isinstance(value, (bool, float)):
        raise TypeError(f"{_where(fname)}: {what} must be an integer, got {type(value).__name__} {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{_where(fname)}: {what} must be an integer, got {type(value).__name__} {value!r}") \
            from None


def _complex_dtype(dtype) -> np.dtype:
    return np.dtype(np.complex128) if np.dtype(dtype) in (np.float64, np.complex128) else np.dtype(np.complex64)


def _triage_window(fname: str, window, nperseg, input_length: int, dtype):
    """The window as a kiln array of ``dtype`` and the segment length: a named window has ``nperseg`` points
    (default and at most the input length), an array window its own length."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else nperseg
        if n > input_length:
            warnings.warn(f"{_where(fname)}: nperseg={n} is greater than the input length {input_length}, "
                          f"using nperseg={input_length}", stacklevel=3)
            n = input_length
        return jnp.asarray(_window_values(fname, window, n), dtype=dtype), n
    check_arraylike(_where(fname), window)
    win = jnp.asarray(window, dtype=dtype)
    if win.ndim != 1:
        raise ValueError(f"{_where(fname)}: window must be one-dimensional, got shape {win.shape}")
    if input_length < win.shape[0]:
        raise ValueError(f"{_where(fname)}: the window ({win.shape[0]} points) is longer than the input "
                         f"signal ({input_length} points)")
    if nperseg is not None and nperseg != win.shape[0]:
        raise ValueError(f"{_where(fname)}: nperseg={nperseg} differs from the window's length {win.shape[0]}; "
                         "leave nperseg out or make them agree")
    return win, win.shape[0]


def _odd_ext(x, n: int):
    # n = nperseg // 2 with nperseg at most the input length, so n never exceeds the length minus one
    if n < 1:
        return x
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1:-1], axis=-1)
    return jnp.concatenate([left, x, right], axis=-1)


def _extend(fname: str, x, boundary, n: int):
    widths = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    if boundary == "even":
        return jnp.pad(x, widths, mode="reflect")
    if boundary == "odd":
        return _odd_ext(x, n)
    if boundary == "constant":
        return jnp.pad(x, widths, mode="edge")
    return jnp.pad(x, widths)  # 'zeros'


def _segments_fft(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, twosided: bool):
    """The windowed FFT of each segment of ``x`` along its last axis: shape ``(..., nseg, nfreq)``."""
    step = nperseg - noverlap
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    segs = x[..., starts[:, None] + np.arange(nperseg)[None, :]]  # static gather: (..., nseg, nperseg)
    segs = detrend_func(segs)
    if dtypes.is_complex(win.dtype) and not dtypes.is_complex(segs.dtype):
        segs = segs.astype(win.dtype)
    segs = win * segs
    if twosided:
        return jfft.fft(segs, n=nfft)
    return jfft.rfft(jnp.real(segs), n=nfft)


def _spectral(fname: str, x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided, scaling,
              axis, mode, boundary=None, padded=False):
    """The segment spectra of ``x`` (mode 'stft'), its periodograms or the cross periodograms with ``y``
    (mode 'psd'): ``(freqs, times, result)`` with the segments on the last axis of ``result``."""
    if boundary not in ("even", "odd", "constant", "zeros", None):
        raise ValueError(f"{_where(fname)}: boundary must be 'even', 'odd', 'constant', 'zeros' or None, "
                         f"got {boundary!r}")
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"{_where(fname)}: scaling must be 'density' or 'spectrum', got {scaling!r}")
    if not (isinstance(detrend_type, (str, bool)) or callable(detrend_type) or detrend_type is None):
        raise ValueError(f"{_where(fname)}: detrend must be 'constant', 'linear', False or a function, got "
                         f"{detrend_type!r}")
    if isinstance(detrend_type, str) and detrend_type not in ("constant", "linear"):
        raise ValueError(f"{_where(fname)}: detrend must be 'constant', 'linear', False or a function, got "
                         f"{detrend_type!r}")
    axis_in = _static(fname, "axis", axis)
    if y is None:
        check_arraylike(_where(fname), x)
        x = jnp.asarray(x)
        if not dtypes.is_inexact(x.dtype):
            x = x.astype(dtypes.default_float_dtype())
        ndim = x.ndim
    else:
        x, y = _inexact_pair(fname, x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"{_where(fname)}: x and y must have the same number of dimensions, got shapes "
                             f"{x.shape} and {y.shape}")
        ndim = x.ndim
    if not -max(ndim, 1) <= axis_in < max(ndim, 1):
        raise ValueError(f"{_where(fname)}: axis {axis_in} is out of bounds for an input of dimension {ndim}")
    ax = axis_in % max(ndim, 1)
    if ndim == 0:
        raise ValueError(f"{_where(fname)}: x must have at least one dimension, got a scalar")
    if y is not None:
        outer_x = x.shape[:ax] + x.shape[ax + 1:]
        outer_y = y.shape[:ax] + y.shape[ax + 1:]
        try:
            outer = tuple(np.broadcast_shapes(outer_x, outer_y))
        except ValueError:
            raise ValueError(f"{_where(fname)}: x and y cannot be broadcast together outside axis {axis_in}, got "
                             f"shapes {x.shape} and {y.shape}") from None
    cdtype = _complex_dtype(x.dtype)
    fdtype = np.dtype(np.float64) if cdtype == np.complex128 else np.dtype(np.float32)
    if nperseg is not None:
        nperseg = _static(fname, "nperseg", nperseg)
        if nperseg < 1:
            raise ValueError(f"{_where(fname)}: nperseg must be a positive integer, got {nperseg}")
    length = x.shape[ax] if y is None else max(x.shape[ax], y.shape[ax])
    win, nperseg = _triage_window(fname, window, nperseg, x.shape[ax], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else _static(fname, "noverlap", noverlap)
    nfft = nperseg if nfft is None else _static(fname, "nfft", nfft)
    if x.size == 0 or (y is not None and y.size == 0):
        if y is None:
            shape = x.shape
        else:
            shape = outer[:ax] + (min(x.shape[ax], y.shape[ax]),) + outer[ax:]
        return jnp.zeros(shape, fdtype), jnp.zeros(shape, fdtype), jnp.zeros(shape, cdtype)
    if nfft < nperseg:
        raise ValueError(f"{_where(fname)}: nfft ({nfft}) must be at least nperseg ({nperseg})")
    if not 0 <= noverlap < nperseg:
        raise ValueError(f"{_where(fname)}: noverlap ({noverlap}) must be at least 0 and less than nperseg "
                         f"({nperseg})")
    x = jnp.moveaxis(x, ax, -1)
    if y is not None:
        y = jnp.moveaxis(y, ax, -1)
        if x.shape[-1] < length:
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, length - x.shape[-1])])
        if y.shape[-1] < length:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, length - y.shape[-1])])
    step = nperseg - noverlap
    if boundary is not None:
        x = _extend(fname, x, boundary, nperseg // 2)
        if y is not None:
            y = _extend(fname, y, boundary, nperseg // 2)
    if padded:
        nadd = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, nadd)])
        if y is not None:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, nadd)])
    if isinstance(detrend_type, str):
        def detrend_func(d):
            return detrend(d, axis=-1, type=detrend_type)
    elif callable(detrend_type):
        detrend_func = detrend_type  # it sees the segments, each along the last axis (as SciPy's csd/welch)
    else:
        def detrend_func(d):
            return d
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    else:
        scale = 1.0 / jnp.sum(win) ** 2
    if mode == "stft":
        scale = jnp.sqrt(scale)
    twosided = not return_onesided
    if return_onesided and (dtypes.is_complex(x.dtype) or (y is not None and dtypes.is_complex(y.dtype))):
        warnings.warn(f"{_where(fname)}: the input data is complex, switching to return_onesided=False",
                      stacklevel=3)
        twosided = True
    k = np.fft.fftfreq(nfft) if twosided else np.fft.rfftfreq(nfft)
    freqs = jnp.asarray(k, dtype=fdtype) * jnp.asarray(fs, dtype=fdtype)
    result = _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, twosided)
    if y is not None:
        result = jnp.conj(result) * _segments_fft(y, win, detrend_func, nperseg, noverlap, nfft, twosided)
    elif mode == "psd":
        result = jnp.conj(result) * result
    result = result * scale.astype(result.dtype)
    if not twosided and mode == "psd":
        nfreq = result.shape[-1]
        doubled = np.ones(nfreq)
        doubled[1:nfreq if nfft % 2 else nfreq - 1] = 2.0
        result = result * jnp.asarray(doubled, dtype=fdtype)
    t = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, step)
    if boundary is not None:
        t = t - nperseg / 2
    times = jnp.asarray(t, dtype=fdtype) / jnp.asarray(fs, dtype=fdtype)
    result = result.astype(cdtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    # (..., nseg, nfreq) -> frequencies where the data's axis was, segments last.
    result = jnp.moveaxis(jnp.swapaxes(result, -1, -2), -2, ax)
    return freqs, times, result


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None, nfft: int | None = None,
         detrend=False, return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1):
    """The short-time Fourier transform of ``x``: ``(f, t, Zxx)`` as ``scipy.signal.stft``."""
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, "spectrum",
                     axis, "stft", boundary, padded)


def _median_bias(n: int) -> float:
    k = np.arange(2.0, n, 2)
    return float(1 + np.sum(1.0 / (k + 1) - 1.0 / k))


def csd(x, y, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
        nfft: int | None = None, detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method: ``(f, Pxy)`` (``y=None``: the
    power spectral density of ``x``)."""
    if average not in ("mean", "median"):
        raise ValueError(f"{_where('csd')}: average must be 'mean' or 'median', got {average!r}")
    freqs, _, pxy = _spectral("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                              scaling, axis, "psd")
    if y is not None and not dtypes.is_complex(pxy.dtype):
        pxy = pxy.astype(_complex_dtype(pxy.dtype))
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if dtypes.is_complex(pxy.dtype):
                    pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy), axis=-1)
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            else:
                pxy = jnp.mean(pxy, axis=-1)
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
    """The power spectral density of ``x`` by Welch's method: ``(f, Pxx)``."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft,
                     detrend=detrend, return_onesided=return_onesided, scaling=scaling, axis=axis,
                     average=average)
    return freqs, jnp.real(pxx)


def _overlap_add(frames, step: int, length: int):
    """Sum the frames ``(..., nseg, nperseg)`` placed ``step`` apart into ``(..., length)``."""
    nseg, nperseg = frames.shape[-2:]
    index = (np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]).reshape(-1)
    out = jnp.zeros(frames.shape[:-2] + (length,), frames.dtype)
    return out.at[..., index].add(jnp.reshape(frames, frames.shape[:-2] + (nseg * nperseg,)))


def istft(Zxx, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
    """The inverse short-time Fourier transform (weighted overlap-add): ``(t, x)`` as ``scipy.signal.istft``."""
    fname = "istft"
    check_arraylike(_where(fname), Zxx)
    Z = jnp.asarray(Zxx)
    if Z.ndim < 2:
        raise ValueError(f"{_where(fname)}: Zxx must be at least two-dimensional (frequencies and segments), got "
                         f"shape {Z.shape}")
    axes = []
    for what, a in (("time_axis", time_axis), ("freq_axis", freq_axis)):
        a = _static(fname, what, a)
        if not -Z.ndim <= a < Z.ndim:
            raise ValueError(f"{_where(fname)}: {what}={a} is out of bounds for Zxx of dimension {Z.ndim}")
        axes.append(a % Z.ndim)
    t_ax, f_ax = axes
    if t_ax == f_ax:
        raise ValueError(f"{_where(fname)}: time_axis and freq_axis must differ, both are {t_ax}")
    n_default = 2 * (Z.shape[f_ax] - 1) if input_onesided else Z.shape[f_ax]
    nperseg = n_default if nperseg is None else _static(fname, "nperseg", nperseg)
    if nperseg < 1:
        raise ValueError(f"{_where(fname)}: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = n_default + 1 if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = _static(fname, "nfft", nfft)
    if nfft < nperseg:
        raise ValueError(f"{_where(fname)}: nfft ({nfft}) must be at least nperseg ({nperseg})")
    noverlap = nperseg // 2 if noverlap is None else _static(fname, "noverlap", noverlap)
    if not 0 <= noverlap < nperseg:
        raise ValueError(f"{_where(fname)}: noverlap ({noverlap}) must be at least 0 and less than nperseg "
                         f"({nperseg})")
    step = nperseg - noverlap
    if not dtypes.is_inexact(Z.dtype):
        Z = Z.astype(dtypes.default_float_dtype())
    outer = [d for d in range(Z.ndim) if d not in (t_ax, f_ax)]
    Z = jnp.transpose(Z, outer + [t_ax, f_ax])  # (..., nseg, nfreq)
    if input_onesided:
        frames = jfft.irfft(Z, n=nfft, axis=-1)[..., :nperseg]
    else:
        frames = jfft.ifft(Z, n=nfft, axis=-1)[..., :nperseg]
    if isinstance(window, (str, tuple)):
        win = jnp.asarray(_window_values(fname, window, nperseg), dtype=frames.dtype)
    else:
        check_arraylike(_where(fname), window)
        win = jnp.asarray(window)
        if win.ndim != 1 or win.shape[0] != nperseg:
            raise ValueError(f"{_where(fname)}: window must be one-dimensional with nperseg={nperseg} points, "
                             f"got shape {win.shape}")
    frames = frames * jnp.sum(win)  # undoes stft's 'spectrum' scaling
    nseg = frames.shape[-2]
    length = nperseg + (nseg - 1) * step
    x = _overlap_add(frames * win, step, length)
    norm = _overlap_add(jnp.broadcast_to(win * win, (nseg, nperseg)), step, length)
    if boundary:
        cut = nperseg // 2
        x, norm = x[..., cut:length - cut], norm[..., cut:length - cut]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and t_ax != Z.ndim - 1:
        if f_ax < t_ax:
            t_ax -= 1
        x = jnp.moveaxis(x, -1, t_ax)
    fdtype = np.dtype(np.float64) if x.dtype in (np.float64, np.complex128) else np.dtype(np.float32)
    time = jnp.arange(x.shape[0], dtype=fdtype) / jnp.asarray(fs, dtype=fdtype)
    return time, x
