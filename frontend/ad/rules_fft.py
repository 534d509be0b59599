"""Derivative rules of the FFT family (``lax/fft.py``). ``fft`` is linear: its JVP applies the same
transform to the tangent, and its transpose is another transform.

Cotangents pair with values through ``Re(sum(a * b))`` (as everywhere in kiln and JAX), so the
transpose of a complex-linear map is its plain (not conjugate) transpose:

- ``FFT`` and ``IFFT``: the DFT matrix is symmetric, so each is its own transpose.
- ``RFFT`` (real ``x`` of length ``n`` on the last axis to ``m = n // 2 + 1`` complex values):
  ``xbar_j = Re(sum_k ct_k e^{-2 pi i jk/n})``. ``IRFFT`` of ``z`` computes
  ``(1/n) sum_k w_k Re(z_k e^{+2 pi i jk/n})`` with the weights ``w = 2`` except ``w = 1`` at the zero
  frequency and (n even) the Nyquist one, so ``xbar = N * IRFFT(conj(ct) / w)`` (``N`` the product
  of ``fft_lengths``).
- ``IRFFT``: from the same formula, ``zbar_k = (w_k / N) conj(RFFT(ct)_k)``.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.tracing import abstractify
from ..lax import api
from ..lax.fft import FftType, fft_p
from ..lax.special import conj
from .jvp import linear_jvp
from .transpose import transpose_rules

linear_jvp(fft_p)


def _weights(n: int, shape: tuple[int, ...], dtype) -> object:
    """The Hermitian weights ``w`` (see the module docstring) along the last axis, broadcast to ``shape``."""
    m = shape[-1]
    w = np.full((m,), 2.0)
    w[0] = 1.0
    if n % 2 == 0 and m > 1:
        w[-1] = 1.0
    return api.broadcast_in_dim(w.astype(dtype), shape, (len(shape) - 1,))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    size = math.prod(fft_lengths)
    ct_aval = abstractify(ct)
    if fft_type == FftType.RFFT:
        z = api.div(conj(ct), _weights(fft_lengths[-1], ct_aval.shape, ct_aval.dtype))
        out = fft_p.bind(z, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)
        return [api.mul(out, api.full_like(out, float(size)))]
    y = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)  # IRFFT
    y_aval = abstractify(y)
    weights = _weights(fft_lengths[-1], y_aval.shape, y_aval.dtype)
    return [conj(api.mul(y, api.mul(weights, api.full_like(weights, 1.0 / size))))]


transpose_rules[fft_p] = _fft_transpose
