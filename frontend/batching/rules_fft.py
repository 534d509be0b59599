"""Batching rule of the FFT family (``lax/fft.py``): ``fft`` transforms trailing dimensions, so vmap
moves the batch axis to the front."""
from __future__ import annotations

from ..lax.fft import fft_p
from .core import batch_rules, move_dim


def _fft_batch(ctx, args, dims, **params):
    (x,), (d,) = args, dims
    return fft_p.bind(move_dim(x, d, 0, ctx.size), **params), 0


batch_rules[fft_p] = _fft_batch
