"""Block-scaled matrix products (``jax.nn.scaled_matmul``): operands stored in narrow dtypes (float8,
float4) with one scale per block of the contracting dimension, as the MX formats."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..core.tracing import abstractify

__all__ = ["scaled_matmul"]


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any, preferred_element_type: Any = np.float32):
    """``einsum('BMK,BNK->BMN', lhs * repeat(lhs_scales), rhs * repeat(rhs_scales))``: each scale covers
    ``K // K_scale`` consecutive elements of the contracting (last) dimension. The operands are dequantized
    to ``preferred_element_type`` (float32 by default) and multiplied by XLA's dot, on every backend (JAX has
    only the GPU kernels: cuDNN, hipBLASLt)."""
    a, b, sa, sb = (jnp.asarray(v) for v in (lhs, rhs, lhs_scales, rhs_scales))
    shapes = [tuple(abstractify(v).shape) for v in (a, b, sa, sb)]
    if any(len(s) != 3 for s in shapes):
        raise ValueError(f"kiln.nn.scaled_matmul: every input must be 3-D (B, M|N, K), got shapes {shapes}")
    (ba, m, k), (bb, n, kb), (bsa, msa, ksa), (bsb, nsb, ksb) = shapes
    if k != kb or ba != bb:
        raise ValueError(f"kiln.nn.scaled_matmul: lhs {shapes[0]} and rhs {shapes[1]} must share the batch (B) and "
                         "contracting (K) dimensions")
    if ksa != ksb or bsa != bsb or (bsa, msa) != (ba, m) or (bsb, nsb) != (bb, n):
        raise ValueError(f"kiln.nn.scaled_matmul: the scales {shapes[2]} and {shapes[3]} must match the operands' "
                         f"batch and non-contracting dimensions {shapes[0]}, {shapes[1]} and share their K")
    out_type = dtypes.canonicalize_dtype(preferred_element_type)

    def dequantize(x, scale, shape):
        scale = lax.broadcast_block_scale("nn.scaled_matmul", scale, shape, (2,))
        return lax.mul(lax.convert_element_type(x, out_type), lax.convert_element_type(scale, out_type))

    return lax.dot_general(dequantize(a, sa, shapes[0]), dequantize(b, sb, shapes[1]), (((2,), (2,)), ((0,), (0,))),
                           preferred_element_type=out_type)
