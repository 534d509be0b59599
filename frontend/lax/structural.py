"""Primitives that move data without arithmetic: broadcast, reshape, transpose, slices,
concatenate, pad, iota."""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.errors import NegativeDimensionError, ShapeError
from ..core.primitive import Primitive


def _check_nonnegative(fname: str, shape: tuple[int, ...]) -> None:
    if any(d < 0 for d in shape):
        raise NegativeDimensionError(f"kiln.lax.{fname}: negative dimensions are not allowed, got shape {shape}")


def _broadcast_rule(x: ShapedArray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]):
    _check_nonnegative("broadcast_in_dim", shape)
    if len(broadcast_dimensions) != x.ndim:
        raise ShapeError(f"kiln.lax.broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must have "
                         f"one entry per operand dimension (operand shape {x.shape})")
    if any(b >= len(shape) or b < 0 for b in broadcast_dimensions) or \
            list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise ShapeError(f"kiln.lax.broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
                         f"strictly increasing dimensions of the result shape {shape}")
    for d, b in zip(x.shape, broadcast_dimensions):
        if d not in (1, shape[b]):
            raise ShapeError(f"kiln.lax.broadcast_in_dim: cannot broadcast operand shape {x.shape} to {shape} "
                             f"with broadcast_dimensions {broadcast_dimensions}")
    return ShapedArray(shape, x.dtype, x.weak_type)


broadcast_in_dim_p = Primitive("broadcast_in_dim", _broadcast_rule)


def _reshape_rule(x: ShapedArray, *, new_sizes: tuple[int, ...]):
    _check_nonnegative("reshape", new_sizes)
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise ValueError(f"kiln.lax.reshape: cannot reshape an array of shape {x.shape} (size {x.size}) "
                         f"into shape {new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = Primitive("reshape", _reshape_rule)


def _transpose_rule(x: ShapedArray, *, permutation: tuple[int, ...]):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(f"kiln.lax.transpose: permutation {permutation} is not a permutation of the "
                         f"{x.ndim} axes of an array of shape {x.shape}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose", _transpose_rule)


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise ShapeError(f"kiln.lax.slice: start_indices, limit_indices and strides need one entry per "
                         f"dimension of the operand shape {x.shape}")
    shape = []
    for d, (s, l, st) in enumerate(zip(start_indices, limit_indices, strides)):
        if not (0 <= s <= l <= x.shape[d]) or st < 1:
            raise ShapeError(f"kiln.lax.slice: invalid slice {s}:{l}:{st} for dimension {d} of size "
                             f"{x.shape[d]} (operand shape {x.shape})")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


slice_p = Primitive("slice", _slice_rule)


def _check_indices(name: str, x: ShapedArray, indices: tuple[ShapedArray, ...]) -> None:
    if len(indices) != x.ndim:
        raise ValueError(f"kiln.lax.{name}: needs {x.ndim} start indices for an operand of shape {x.shape}, "
                         f"got {len(indices)}")
    for i in indices:
        if i.shape != () or i.dtype.kind not in "iu":
            raise TypeError(f"kiln.lax.{name}: start indices must be integer scalars, got {i.str_short()}")


def _dynamic_slice_rule(x: ShapedArray, *indices: ShapedArray, slice_sizes: tuple[int, ...]):
    _check_indices("dynamic_slice", x, indices)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise ShapeError(f"kiln.lax.dynamic_slice: slice_sizes {slice_sizes} must fit in the operand "
                         f"shape {x.shape}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


dynamic_slice_p = Primitive("dynamic_slice", _dynamic_slice_rule)


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray, *indices: ShapedArray):
    _check_indices("dynamic_update_slice", x, indices)
    if update.dtype != x.dtype:
        raise TypeError(f"kiln.lax.dynamic_update_slice: update dtype {update.dtype.name} differs from "
                        f"operand dtype {x.dtype.name}")
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise ShapeError(f"kiln.lax.dynamic_update_slice: update shape {update.shape} does not fit in "
                         f"operand shape {x.shape}")
    return x


dynamic_update_slice_p = Primitive("dynamic_update_slice", _dynamic_update_slice_rule)


def _concatenate_rule(*xs: ShapedArray, dimension: int):
    if not xs:
        raise ValueError("kiln.lax.concatenate: needs at least one operand")
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise ShapeError(f"kiln.lax.concatenate: dimension {dimension} is out of range for operands of "
                         f"rank {x0.ndim}")
    for x in xs[1:]:
        if x.dtype != x0.dtype:
            raise TypeError(f"kiln.lax.concatenate: operands must have one dtype, got {x0.dtype.name} and "
                            f"{x.dtype.name}")
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise ShapeError(f"kiln.lax.concatenate: shapes {x0.shape} and {x.shape} differ outside "
                             f"dimension {dimension}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), x0.dtype, all(x.weak_type for x in xs))


concatenate_p = Primitive("concatenate", _concatenate_rule)


def _pad_rule(x: ShapedArray, padding_value: ShapedArray, *, padding_config):
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        raise TypeError(f"kiln.lax.pad: the padding value must be a scalar of the operand's dtype "
                        f"{x.dtype.name}, got {padding_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"kiln.lax.pad: padding_config needs one (low, high, interior) triple per "
                         f"dimension of shape {x.shape}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"kiln.lax.pad: interior padding must be >= 0, got {interior}")
        size = lo + hi + d + max(d - 1, 0) * interior
        if size < 0:
            raise ValueError(f"kiln.lax.pad: padding {(lo, hi, interior)} gives a negative size")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


pad_p = Primitive("pad", _pad_rule)


def _iota_rule(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int):
    _check_nonnegative("iota", shape)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"kiln.lax.iota: dimension {dimension} is out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


iota_p = Primitive("iota", _iota_rule)


def _rev_rule(x: ShapedArray, *, dimensions: tuple[int, ...]):
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise ShapeError(f"kiln.lax.rev: dimensions {dimensions} are not distinct axes of shape {x.shape}")
    return x


rev_p = Primitive("rev", _rev_rule)
