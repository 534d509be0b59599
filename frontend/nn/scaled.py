"""Block-scaled matrix products (``jax.nn.scaled_matmul``): operands stored in narrow dtypes (float8,
float4) with one scale per block of the contracting dimension, as the MX formats."""
from __future__ import annotations

import dataclasses
import math
import operator
import warnings
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from .. import lax
from .. import numpy as jnp
from ..ad.custom import custom_vjp
from ..core import dtypes
from ..core.tracing import abstractify

__all__ = ["scaled_matmul", "scaled_dot_general", "get_scaled_dot_general_config"]


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


# -- scaled_dot_general: quantize high-precision operands blockwise, then scaled_matmul --------------------------

@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How :func:`scaled_dot_general` quantizes one operand (as JAX's ``BlockScaleConfig``): ``block_size``
    consecutive elements of the contracting dimension share one scale of ``scale_type``; the data is stored in
    ``data_type``; nvfp4 also divides by ``global_scale`` (a float32 array of shape ``(1,)``) first.
    ``infer_only`` is carried along as in JAX (which does not read it either)."""
    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


_MODES = {"mxfp8": np.dtype(ml_dtypes.float8_e8m0fnu), "nvfp4": np.dtype(ml_dtypes.float8_e4m3fn)}  # scale dtypes


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """The :class:`BlockScaleConfig` of ``mode``: ``'mxfp8'`` (float8_e4m3fn data, float8_e8m0fnu scales, blocks
    of 32) or ``'nvfp4'`` (float4_e2m1fn data, float8_e4m3fn scales, blocks of 16, ``global_scale`` defaulting
    to ``ones((1,), float32)``; mxfp8 ignores ``global_scale``), as ``jax.nn.get_scaled_dot_general_config``."""
    if mode == "nvfp4":
        return BlockScaleConfig(mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
                                scale_type=ml_dtypes.float8_e4m3fn,
                                global_scale=jnp.ones((1,), np.float32) if global_scale is None else global_scale,
                                infer_only=False)
    if mode == "mxfp8":
        return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
                                scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None, infer_only=False)
    raise ValueError(f"kiln.nn.get_scaled_dot_general_config: unsupported mode {mode!r}; use 'mxfp8' or 'nvfp4'")


_SDG = "kiln.nn.scaled_dot_general"
_PREFERRED = (np.dtype(np.float32), np.dtype(dtypes.bfloat16), np.dtype(np.float16))


class _Plan(NamedTuple):
    """The static layout of one scaled_dot_general: each operand is transposed by its ``perm`` (batch, free,
    contracting dimensions) and reshaped to 3-D ``(B, M|N, K)``; the result ``(B, M, N)`` is reshaped to
    ``out_shape``."""
    lhs_perm: tuple
    rhs_perm: tuple
    lhs_t_shape: tuple
    rhs_t_shape: tuple
    bmnk: tuple
    out_shape: tuple


def _dims(name: str, dims: Any) -> tuple[int, ...]:
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"{_SDG}: the {name} dimensions must be a sequence of ints, got {dims!r}") from None


def _plan(lshape: tuple, rshape: tuple, dimension_numbers: Any) -> _Plan:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(f"{_SDG}: dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, "
                        f"rhs_batch)), got {dimension_numbers!r}") from None
    lc, rc, lb, rb = (_dims(n, d) for n, d in (("lhs contracting", lc), ("rhs contracting", rc),
                                               ("lhs batch", lb), ("rhs batch", rb)))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError(f"{_SDG}: contracting dimensions {lc}/{rc} and batch dimensions {lb}/{rb} must come in "
                         "pairs (as many for lhs as for rhs)")
    if not lc:
        raise ValueError(f"{_SDG}: at least one contracting dimension is needed (the operands are quantized in "
                         "blocks along it), got dimension_numbers with none")
    for side, shape, dims in (("lhs", lshape, lc + lb), ("rhs", rshape, rc + rb)):
        if any(not 0 <= d < len(shape) for d in dims) or len(set(dims)) != len(dims):
            raise ValueError(f"{_SDG}: the {side} contracting and batch dimensions {dims} must be distinct "
                             f"dimensions of its shape {shape}")
    for a, b in zip(lc + lb, rc + rb):
        if lshape[a] != rshape[b]:
            raise ValueError(f"{_SDG}: lhs dimension {a} ({lshape[a]}) and rhs dimension {b} ({rshape[b]}) are "
                             f"paired but differ in size; shapes {lshape} and {rshape}")
    # Each side's batch and contracting dimensions in lhs's order, rhs's paired with them (JAX's order whenever
    # the pairs are sorted on both sides).
    bpairs, cpairs = sorted(zip(lb, rb)), sorted(zip(lc, rc))
    lb, rb = [a for a, _ in bpairs], [b for _, b in bpairs]
    lc, rc = [a for a, _ in cpairs], [b for _, b in cpairs]
    lfree = [i for i in range(len(lshape)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rshape)) if i not in rc and i not in rb]
    size = lambda shape, ds: math.prod(shape[d] for d in ds)  # noqa: E731
    lperm, rperm = tuple(lb + lfree + lc), tuple(rb + rfree + rc)
    return _Plan(lperm, rperm, tuple(lshape[d] for d in lperm), tuple(rshape[d] for d in rperm),
                 (size(lshape, lb), size(lshape, lfree), size(rshape, rfree), size(lshape, lc)),
                 tuple(lshape[d] for d in lb + lfree) + tuple(rshape[d] for d in rfree))


def _check_configs(configs: Any) -> tuple:
    if not isinstance(configs, (list, tuple)) or len(configs) not in (2, 3):
        raise TypeError(f"{_SDG}: configs must be a list of BlockScaleConfig for lhs, rhs and the gradient (use "
                        f"[kiln.nn.get_scaled_dot_general_config(mode)] * 3), got {configs!r}")
    for i, c in enumerate(configs):
        if not isinstance(c, BlockScaleConfig):
            raise TypeError(f"{_SDG}: configs[{i}] is a {type(c).__name__}, not a BlockScaleConfig (from "
                            "kiln.nn.get_scaled_dot_general_config)")
        if c.mode not in _MODES:
            raise ValueError(f"{_SDG}: configs[{i}] has mode {c.mode!r}; the modes are 'mxfp8' and 'nvfp4'")
        if np.dtype(c.scale_type) != _MODES[c.mode]:
            raise ValueError(f"{_SDG}: configs[{i}] ({c.mode}) must have scale_type {_MODES[c.mode].name}, got "
                             f"{np.dtype(c.scale_type).name}")
        if c.mode == "mxfp8" and c.global_scale is not None:
            raise ValueError(f"{_SDG}: configs[{i}] is mxfp8, which has no global_scale; got {c.global_scale!r}")
        if c.mode == "nvfp4":
            gs = abstractify(jnp.asarray(c.global_scale)) if c.global_scale is not None else None
            if gs is None or gs.dtype != np.float32 or math.prod(gs.shape) != 1:
                raise ValueError(f"{_SDG}: configs[{i}] is nvfp4, whose global_scale must be a float32 array of "
                                 f"one element (shape (1,)), got {c.global_scale!r}")
    if len({c.mode for c in configs}) != 1 or len({c.block_size for c in configs}) != 1:
        raise ValueError(f"{_SDG}: the configs must share one mode and one block_size (quantized operands are "
                         "multiplied block by block), got "
                         + ", ".join(f"{c.mode}/{c.block_size}" for c in configs))
    return tuple(configs)


def _quantize(x: Any, config: BlockScaleConfig, global_scale: Any, what: str):
    """``x`` (B, M, K) as ``config.data_type`` values and one ``config.scale_type`` scale per block of
    ``config.block_size`` along K, as JAX's reference quantizer (mxfp8: the block's absolute maximum over the
    data type's maximum, rounded up to a power of two; nvfp4: after dividing by the global scale, the same ratio
    rounded to float8_e4m3fn).

    Each division by a broadcast value is a multiplication by its reciprocal: XLA's simplifier rewrites JAX's
    divisions so (on every backend, eager or jitted), and writing it out keeps kiln's eager and jitted results
    equal to those."""
    b, m, k = abstractify(x).shape
    block = config.block_size
    if k < block or k % block:
        raise ValueError(f"{_SDG}: {what} has {k} elements along the quantized dimension, which must be a "
                         f"multiple of the block size {block} ({config.mode}); pad the operands")
    dtype = abstractify(x).dtype
    x = jnp.reshape(x, (b, m, k // block, block))
    finfo = ml_dtypes.finfo
    big = np.asarray(finfo(config.data_type).max).astype(dtype)

    def block_scales(v):  # amax / big, as amax * (1 / big) in the promoted dtype
        amax = jnp.max(jnp.abs(v), axis=-1, keepdims=True)
        dt = np.result_type(abstractify(amax).dtype, big.dtype)
        return amax * (np.asarray(1, dt) / big.astype(dt))

    if config.mode == "mxfp8":
        bits = lax.bitcast_convert_type(block_scales(x).astype(np.float32), np.uint32)
        exponent, mantissa = bits >> 23, bits & 0x7FFFFF
        # Round up to the next power of two unless exact; not past the largest exponent, and not for the
        # subnormals of at most half the smallest normal (XLA's f32 -> e8m0 rounding, done on the bits).
        up = (mantissa > 0) & (exponent != 0xFE) & ~((exponent == 0) & (mantissa <= 0x400000))
        scales = jnp.where(up, exponent + 1, exponent).astype(np.uint8)
        # x / 2**(e - 127) as x * 2**(127 - e) in float32: exact, and without JAX's division by the subnormal
        # 2**-127 (flushed to zero by XLA on CPU: NaNs) for blocks of zeros, nor float16's overflow of the
        # reciprocal. Scale 255 is e8m0's NaN (an infinite or NaN block).
        e = scales.astype(np.int32)
        inverse = lax.bitcast_convert_type(jnp.clip(254 - e, 0, 254).astype(np.uint32) << 23, np.float32)
        scaled = x.astype(np.float32) * jnp.where(e == 255, np.float32(np.nan), inverse)
        scales = lax.bitcast_convert_type(scales, config.scale_type)
    else:
        x = x * (1 / global_scale)
        scales = jnp.clip(block_scales(x), 0, np.asarray(finfo(config.scale_type).max).astype(dtype))
        scales = lax.optimization_barrier(scales.astype(config.scale_type))
        scaled = x * (1 / scales.astype(np.float32))
    data = jnp.clip(scaled, -big, big).astype(config.data_type)
    return jnp.reshape(data, (b, m, k)), jnp.reshape(scales, (b, m, k // block))


def _to_3d(x, perm, shape3):
    return jnp.reshape(lax.transpose(x, perm), shape3)


def _from_3d(x3, perm, t_shape):
    return lax.transpose(jnp.reshape(x3, t_shape), tuple(int(i) for i in np.argsort(perm)))


def _swap(x):  # (B, P, Q) -> (B, Q, P)
    return lax.transpose(x, (0, 2, 1))


def _sdg_forward(plan: _Plan, preferred, configs: tuple, lhs, rhs, global_scales):
    bsz, m, n, k = plan.bmnk
    gs = global_scales or (None, None)  # () for mxfp8
    lhs_q, lhs_s = _quantize(_to_3d(lhs, plan.lhs_perm, (bsz, m, k)), configs[0], gs[0], "lhs")
    rhs_q, rhs_s = _quantize(_to_3d(rhs, plan.rhs_perm, (bsz, n, k)), configs[1], gs[1], "rhs")
    if configs[0].mode == "nvfp4":
        out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, preferred_element_type=np.float32)
        out = (out * (gs[0] * gs[1])).astype(preferred)
    else:
        out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, preferred_element_type=preferred)
    return jnp.reshape(out, plan.out_shape)


def _sdg_fwd(plan, preferred, configs, lhs, rhs, global_scales):
    return _sdg_forward(plan, preferred, configs, lhs, rhs, global_scales), (lhs, rhs, global_scales)


def _sdg_bwd(plan: _Plan, preferred, configs: tuple, residuals, g):
    """The cotangents of lhs and rhs as JAX's rule: ``g @ rhs`` and ``g^T @ lhs`` as scaled products with the
    cotangent quantized by ``configs[2]`` (along N, resp. M); with nvfp4 an unquantized product instead, zeroed
    where the forward pass clipped the operand (a straight-through estimator)."""
    lhs, rhs, global_scales = residuals
    if len(configs) < 3:
        raise ValueError(f"{_SDG}: differentiating needs a third config, for the gradient (configs=[lhs, rhs, "
                         "grad]); got two")
    bsz, m, n, k = plan.bmnk
    lhs3, rhs3 = _to_3d(lhs, plan.lhs_perm, (bsz, m, k)), _to_3d(rhs, plan.rhs_perm, (bsz, n, k))
    g3 = jnp.reshape(g, (bsz, m, n))
    if configs[2].mode == "nvfp4":
        lhs_ct = jnp.matmul(g3, rhs3, preferred_element_type=preferred)          # (B, M, K)
        rhs_ct = jnp.matmul(_swap(g3), lhs3, preferred_element_type=preferred)   # (B, N, K)
    else:
        def product(ct, ct_what, other, config, other_what):
            ct_q, ct_s = _quantize(ct, configs[2], None, f"the output cotangent ({ct_what})")
            other_q, other_s = _quantize(other, config, None, other_what)
            return scaled_matmul(ct_q, other_q, ct_s, other_s, preferred_element_type=preferred)

        lhs_ct = product(g3, "lhs gradient", _swap(rhs3), configs[1], "rhs (for the lhs gradient)")
        rhs_ct = product(_swap(g3), "rhs gradient", _swap(lhs3), configs[0], "lhs (for the rhs gradient)")
    lhs_ct = _from_3d(lhs_ct, plan.lhs_perm, plan.lhs_t_shape)
    rhs_ct = _from_3d(rhs_ct, plan.rhs_perm, plan.rhs_t_shape)
    if configs[2].mode == "nvfp4":
        def unclipped(x, config, gs):
            dtype = abstractify(x).dtype
            limit = (np.asarray(ml_dtypes.finfo(config.data_type).max).astype(dtype)
                     * np.asarray(ml_dtypes.finfo(config.scale_type).max).astype(dtype))
            return jnp.abs(x) <= gs * limit
        lhs_ct = jnp.where(unclipped(lhs, configs[0], global_scales[0]), lhs_ct, 0)
        rhs_ct = jnp.where(unclipped(rhs, configs[1], global_scales[1]), rhs_ct, 0)
    return (lhs_ct.astype(abstractify(lhs).dtype), rhs_ct.astype(abstractify(rhs).dtype), None)


_scaled_dot_general = custom_vjp(_sdg_forward, nondiff_argnums=(0, 1, 2))
_scaled_dot_general.defvjp(_sdg_fwd, _sdg_bwd)


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, preferred_element_type: Any = np.float32,
                       configs: Any = None, implementation: Any = None):
    """``lax.dot_general`` of block-quantized operands, as ``jax.nn.scaled_dot_general``: lhs and rhs (high
    precision) are quantized along their contracting dimensions as ``configs[0]`` and ``configs[1]`` say
    (:func:`get_scaled_dot_general_config`), multiplied by :func:`scaled_matmul`, and reshaped to
    ``dot_general``'s result (batch, lhs free, rhs free dimensions). The gradient quantizes the output
    cotangent with ``configs[2]``. ``configs=None`` is plain ``lax.dot_general``. Runs on every backend (the
    quantization and the dequantized product are XLA computations)."""
    if implementation is not None:
        warnings.warn("kiln.nn.scaled_dot_general: implementation= is deprecated and ignored (as in JAX)",
                      DeprecationWarning, stacklevel=2)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    try:
        preferred = np.dtype(preferred_element_type)
    except TypeError:
        preferred = None
    if preferred_element_type is None or preferred not in _PREFERRED:
        raise TypeError(f"{_SDG}: preferred_element_type must be float32, bfloat16 or float16, got "
                        f"{preferred_element_type!r}")
    configs = _check_configs(configs)
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    la, ra = abstractify(lhs), abstractify(rhs)
    for side, a in (("lhs", la), ("rhs", ra)):
        if not dtypes.issubdtype(a.dtype, np.floating):
            raise TypeError(f"{_SDG}: {side} must be a floating-point array (it is quantized), got {a.dtype.name}; "
                            "convert it, e.g. x.astype(jnp.float32)")
    plan = _plan(tuple(la.shape), tuple(ra.shape), dimension_numbers)
    # nvfp4's global scales are arguments (they may be traced), not part of the static configs.
    global_scales = tuple(jnp.asarray(c.global_scale) for c in configs if c.mode == "nvfp4")
    return _scaled_dot_general(plan, preferred, configs, lhs, rhs, global_scales)
