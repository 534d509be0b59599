"""Emission rule for ``fft``: ``stablehlo.fft``.

On GPUs a multi-dimensional IRFFT is split in two (an inverse complex FFT over the leading transformed
dimensions, then a one-dimensional IRFFT over the last): cuFFT's multi-dimensional complex-to-real
transform assumes Hermitian symmetry in every dimension, whereas XLA's CPU backend and NumPy only use
the last dimension's, and inputs that are not exactly symmetric must give the same result everywhere.
"""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..hlo import op
from ..registry import register
from ..types import element_type


def _fft(x: ir.Value, kind: str, lengths, result_type: ir.Type) -> ir.Value:
    return op("stablehlo.fft", [x], result_type, fft_type=hlo.FftTypeAttr.get(kind),
              fft_length=ir.DenseI64ArrayAttr.get([int(n) for n in lengths]))


def _transpose(x: ir.Value, perm, aval_shape, dtype) -> tuple[ir.Value, list[int]]:
    shape = [aval_shape[p] for p in perm]
    t = ir.RankedTensorType.get(shape, element_type(dtype))
    return op("stablehlo.transpose", [x], t, permutation=ir.DenseI64ArrayAttr.get(list(perm))), shape


@register("fft")
def _fft_rule(ctx, eqn, x):
    p = eqn.params
    kind, lengths = p["fft_type"].name, p["fft_lengths"]
    out_aval, in_aval = eqn.outputs[0].aval, eqn.inputs[0].aval
    out_type = ir.RankedTensorType.get(list(out_aval.shape), element_type(out_aval.dtype))
    if kind != "IRFFT" or len(lengths) == 1 or ctx.platform not in ("cuda", "rocm", "gpu"):
        return _fft(x, kind, lengths, out_type)
    rank, k = in_aval.ndim, len(lengths)
    first = rank - k
    # Bring the last (complex-to-real) dimension in front of the transformed block, IFFT the others.
    perm = list(range(first)) + [rank - 1] + list(range(first, rank - 1))
    y, shape = _transpose(x, perm, in_aval.shape, in_aval.dtype)
    y = _fft(y, "IFFT", lengths[:-1], ir.RankedTensorType.get(shape, element_type(in_aval.dtype)))
    back = list(range(first)) + list(range(first + 1, rank)) + [first]
    y, _ = _transpose(y, back, shape, in_aval.dtype)
    return _fft(y, "IRFFT", lengths[-1:], out_type)
