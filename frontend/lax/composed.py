"""``kiln.lax`` functions built from other primitives (no primitive of their own): shape helpers
(``squeeze``, ``expand_dims``, ``tile``, ``split``, ``stack``, ``unstack``, ``collapse``, broadcasting),
constructors (``full``, ``empty``), ``dtype``, ``mulhi``, ``scatter_sub``, ``approx_max_k`` /
``approx_min_k`` (exact), and the type aliases JAX exports for annotations.

Their derivatives and batching follow from the primitives they are made of.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple, Sequence, Tuple, Union

import numpy as np

from ..core import dtypes
from ..core.errors import AxisError, BroadcastError, ShapeError
from ..core.tracing import abstractify
from . import api, special
from .indexing import GatherScatterMode, ScatterDimensionNumbers, scatter_add
from .precision import DotAlgorithm, DotAlgorithmPreset, Precision, canonicalize_precision
from .sharding import takes_out_sharding
from .sorting import _sort_descending, sort

__all__ = [
    "DotDimensionNumbers", "PrecisionLike", "RaggedDotDimensionNumbers", "approx_max_k", "approx_min_k",
    "broadcast_block_scale", "broadcast_like", "broadcast_shapes", "broadcast_to_rank", "collapse", "composite",
    "dtype", "empty", "expand_dims", "full", "mulhi", "ragged_dot", "ragged_dot_general", "scaled_dot", "scatter_sub",
    "shape_as_value", "split", "squeeze", "stack", "stage", "tile", "unstack",
]

# Type aliases (as ``jax.lax``'s), for annotations.
DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]], Tuple[Sequence[int], Sequence[int]]]
PrecisionLike = Union[None, str, Precision, Tuple[str, str], Tuple[Precision, Precision], DotAlgorithm,
                      DotAlgorithmPreset]


def _axis(fname: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"kiln.lax.{fname}: axis must be an int, got {type(axis).__name__} {axis!r}")
    if not -ndim <= axis < ndim:
        raise AxisError(f"kiln.lax.{fname}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return int(axis) % ndim


def _shape(fname: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"kiln.lax.{fname}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"kiln.lax.{fname}: shape {out} has a negative dimension")
    return out


def squeeze(array: Any, dimensions: Sequence[int]):
    """Remove the size-1 ``dimensions`` of ``array``."""
    aval = abstractify(array)
    dims = sorted({_axis("squeeze", d, aval.ndim) for d in dimensions})
    bad = [d for d in dims if aval.shape[d] != 1]
    if bad:
        raise ValueError(f"kiln.lax.squeeze: dimensions {tuple(bad)} of an array of shape {aval.shape} do not have "
                         "size 1, so they cannot be squeezed")
    return api.reshape(array, tuple(s for i, s in enumerate(aval.shape) if i not in dims))


def expand_dims(array: Any, dimensions: Sequence[int]):
    """Insert size-1 dimensions at ``dimensions`` (positions in the result)."""
    aval = abstractify(array)
    nd_out = aval.ndim + len(dimensions)
    dims = [_axis("expand_dims", d, nd_out) for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"kiln.lax.expand_dims: repeated axis in dimensions {tuple(dimensions)}")
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    return api.broadcast_in_dim(array, tuple(shape), tuple(i for i in range(nd_out) if i not in dims))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (of ``dtype``, else ``fill_value``'s)."""
    shape = _shape("full", shape)
    try:
        fill_shape = abstractify(fill_value).shape
    except TypeError:
        fill_shape = np.shape(fill_value)
    if fill_shape:
        raise TypeError(f"kiln.lax.full: fill_value must be a scalar, got one of shape {fill_shape}; use "
                        "kiln.numpy.broadcast_to for arrays")
    extended = dtype if dtype is not None else getattr(fill_value, "dtype", None)
    if dtypes._is_extended(extended):  # a PRNG key dtype fills its own way (its keys' data), as JAX's _rules.full
        return extended.full(shape, fill_value)
    if dtype is None:
        dt, weak = dtypes.dtype_of_value(fill_value)
    else:
        dt, weak = dtypes.canonicalize_dtype(dtype), False
    value = api.convert_element_type(fill_value, dt, weak_type=weak)
    return api.broadcast_in_dim(value, shape, ())


@takes_out_sharding
def empty(shape: Sequence[int], dtype: Any):
    """An array of ``shape`` and ``dtype`` whose contents are unspecified (kiln fills it with zeros)."""
    return full(shape, 0, dtype)


def tile(operand: Any, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along each dimension ``i`` (one entry per dimension)."""
    aval = abstractify(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != aval.ndim:
        raise TypeError(f"kiln.lax.tile: reps must have one entry per dimension of the operand ({aval.ndim}), got "
                        f"{reps}; kiln.numpy.tile accepts other lengths")
    if any(r < 0 for r in reps):
        raise ValueError(f"kiln.lax.tile: reps must be non-negative, got {reps}")
    # (d0, d1, ...) -> (r0, d0, r1, d1, ...) -> (r0 d0, r1 d1, ...)
    pairs = tuple(v for r, d in zip(reps, aval.shape) for v in (r, d))
    spread = api.broadcast_in_dim(operand, pairs, tuple(range(1, 2 * aval.ndim, 2)))
    return api.reshape(spread, tuple(r * d for r, d in zip(reps, aval.shape)))


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list:
    """Cut ``operand`` along ``axis`` into pieces of ``sizes`` (which must add up to its length)."""
    aval = abstractify(operand)
    ax = _axis("split", axis, aval.ndim)
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != aval.shape[ax]:
        raise ValueError(f"kiln.lax.split: sizes {tuple(sizes)} must be non-negative and add up to dimension {ax} "
                         f"of the operand (shape {aval.shape})")
    out, start = [], 0
    for s in sizes:
        lo, hi = [0] * aval.ndim, list(aval.shape)
        lo[ax], hi[ax] = start, start + s
        out.append(api.slice(operand, lo, hi))
        start += s
    return out


def stack(operands: Sequence[Any], axis: int = 0):
    """Join arrays of one shape and dtype along a new ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError("kiln.lax.stack: needs at least one array")
    shapes = [abstractify(o).shape for o in operands]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError("kiln.lax.stack: all arrays must have the same shape, got "
                         + ", ".join(str(s) for s in shapes))
    ax = _axis("stack", axis, len(shapes[0]) + 1)
    return api.concatenate([expand_dims(o, (ax,)) for o in operands], ax)


def unstack(x: Any, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple of arrays without that axis."""
    aval = abstractify(x)
    ax = _axis("unstack", axis, aval.ndim)
    return tuple(squeeze(p, (ax,)) for p in split(x, [1] * aval.shape[ax], ax))


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None):
    """Merge dimensions ``start_dimension`` to ``stop_dimension`` (exclusive; the end when None) into one."""
    shape = abstractify(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"kiln.lax.collapse: invalid dimension range [{start_dimension}:{stop_dimension}] for an "
                         f"operand of shape {shape}")
    return api.reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to (NumPy's rules)."""
    if not shapes:
        raise ValueError("kiln.lax.broadcast_shapes: needs at least one shape")
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise BroadcastError("kiln.lax.broadcast_shapes: incompatible shapes for broadcasting: "
                             + ", ".join(str(s) for s in shapes)) from None


def _broadcast_to(x: Any, shape: tuple[int, ...], fname: str):
    aval = abstractify(x)
    lead = len(shape) - aval.ndim
    if lead < 0 or any(s not in (1, d) for s, d in zip(aval.shape, shape[lead:])):
        raise BroadcastError(f"kiln.lax.{fname}: cannot broadcast an array of shape {aval.shape} to {shape}")
    keep = [i for i, s in enumerate(aval.shape) if s == shape[lead + i]]
    if len(keep) != aval.ndim:
        x = api.reshape(x, tuple(aval.shape[i] for i in keep))
    return api.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def broadcast_like(arr: Any, like_arr: Any):
    """``arr`` broadcast (NumPy's rules) to the shape of ``like_arr``."""
    return _broadcast_to(arr, abstractify(like_arr).shape, "broadcast_like")


def broadcast_to_rank(x: Any, rank: int):
    """``x`` with leading size-1 dimensions added up to ``rank`` dimensions."""
    aval = abstractify(x)
    if rank < aval.ndim:
        raise ValueError(f"kiln.lax.broadcast_to_rank: rank {rank} is less than the array's {aval.ndim} dimensions")
    if rank == aval.ndim:
        return x
    return api.broadcast(x, (1,) * (rank - aval.ndim))


def dtype(x: Any) -> np.dtype:
    """The (canonical) dtype of a value or of a dtype-like: ``float64`` becomes ``float32`` unless x64 is on."""
    if isinstance(x, (str, type, np.dtype)):
        return dtypes.canonicalize_dtype(x)
    try:
        return dtypes.dtype_of_value(x)[0]
    except TypeError:
        raise TypeError(f"kiln.lax.dtype: cannot determine the dtype of {type(x).__name__} {x!r:.40}") from None


def mulhi(x: Any, y: Any):
    """The high half of the double-width product of two integer arrays of one dtype (elementwise)."""
    x, y = api._operands(x, y)
    xa, ya = abstractify(x), abstractify(y)
    if xa.dtype != ya.dtype or xa.dtype.kind not in "iu":
        raise TypeError(f"kiln.lax.mulhi: operands must be integers of one dtype, got {xa.dtype.name} and "
                        f"{ya.dtype.name}")
    dt = xa.dtype
    bits = 8 * dt.itemsize
    signed = dt.kind == "i"
    if bits <= 32:  # a product in the double-width type (special.mulhi_p)
        return special.mulhi_p.bind(x, y)
    # 64 bits: schoolbook multiplication of half-width digits in the unsigned type of the same width, then a
    # signed correction.
    half = bits // 2
    ut = np.dtype(f"u{dt.itemsize}")
    xu, yu = api.convert_element_type(x, ut), api.convert_element_type(y, ut)

    def c(v, like):
        return api.full_like(like, v)
    mask, sh = (1 << half) - 1, half
    x_lo, x_hi = api.bitwise_and(xu, c(mask, xu)), api.shift_right_logical(xu, c(sh, xu))
    y_lo, y_hi = api.bitwise_and(yu, c(mask, yu)), api.shift_right_logical(yu, c(sh, yu))
    lo_lo, lo_hi = api.mul(x_lo, y_lo), api.mul(x_lo, y_hi)
    hi_lo, hi_hi = api.mul(x_hi, y_lo), api.mul(x_hi, y_hi)
    cross = api.add(api.add(api.bitwise_and(lo_hi, c(mask, lo_hi)), api.bitwise_and(hi_lo, c(mask, hi_lo))),
                    api.shift_right_logical(lo_lo, c(sh, lo_lo)))
    high = api.add(hi_hi, api.add(api.shift_right_logical(lo_hi, c(sh, lo_hi)),
                                  api.add(api.shift_right_logical(hi_lo, c(sh, hi_lo)),
                                          api.shift_right_logical(cross, c(sh, cross)))))
    high = api.convert_element_type(high, dt)
    if signed:  # signed high = unsigned high - (x < 0 ? y : 0) - (y < 0 ? x : 0)
        x_neg = api.shift_right_arithmetic(x, c(bits - 1, x))  # -1 where x < 0, else 0
        y_neg = api.shift_right_arithmetic(y, c(bits - 1, y))
        high = api.add(high, api.add(api.mul(x_neg, y), api.mul(y_neg, x)))
    return high


def scatter_sub(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """``operand`` with ``updates`` subtracted at ``scatter_indices`` (every duplicate index is applied)."""
    return scatter_add(operand, scatter_indices, api.neg(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


def _approx_k(fname: str, operand: Any, k: int, reduction_dimension: int, largest: bool):
    aval = abstractify(operand)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"kiln.lax.{fname}: k must be a static int, got {type(k).__name__} {k!r}")
    if aval.ndim == 0:
        raise ValueError(f"kiln.lax.{fname}: the operand must have at least one dimension")
    dim = _axis(fname, reduction_dimension, aval.ndim)
    n = aval.shape[dim]
    if not 0 <= k <= n:
        raise ValueError(f"kiln.lax.{fname}: k={k} must be between 0 and the size of dimension {dim} ({n})")
    if aval.dtype.kind == "c":
        raise TypeError(f"kiln.lax.{fname}: complex arrays have no order")
    idx = api.broadcasted_iota(np.int32, aval.shape, dim)
    if largest:
        values, indices = _sort_descending((operand, idx), dim)
    else:
        values, indices = sort((operand, idx), dimension=dim, num_keys=1)
    if k < n:
        limit = list(aval.shape)
        limit[dim] = k
        values, indices = api.slice(values, [0] * aval.ndim, limit), api.slice(indices, [0] * aval.ndim, limit)
    return values, indices


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` largest entries along ``reduction_dimension`` and their indices, largest first.

    kiln computes them exactly (recall 1, by a sort), whatever ``recall_target``; JAX's TPU kernel may
    return approximate results.
    """
    return _approx_k("approx_max_k", operand, k, reduction_dimension, True)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` smallest entries along ``reduction_dimension`` and their indices, smallest first (exact,
    as :func:`approx_max_k`)."""
    return _approx_k("approx_min_k", operand, k, reduction_dimension, False)


def shape_as_value(shape: Sequence[int]):
    """A (static) shape as a 1-D integer array (int32, or int64 for dimensions that need it)."""
    shape = tuple(int(d) for d in shape)
    dtype = np.int64 if any(d > np.iinfo(np.int32).max for d in shape) else np.int32
    return np.asarray(shape, dtype=dtype)


def composite(decomposition: Callable, name: str, version: int = 0):
    """``decomposition`` as a named composite operation (as ``jax.lax.composite``).

    kiln calls ``decomposition`` (positional arguments are the operands, keyword arguments the
    attributes): the program computes the same values, but no ``stablehlo.composite`` op is emitted,
    so backends cannot substitute a fused implementation recognised by ``name``.
    """
    if not callable(decomposition):
        raise TypeError(f"kiln.lax.composite: decomposition must be callable, got {type(decomposition).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"kiln.lax.composite: name must be a non-empty string, got {name!r}")

    @functools.wraps(decomposition)
    def fn(*args, **kwargs):
        return decomposition(*args, **kwargs)
    return fn


class RaggedDotDimensionNumbers(NamedTuple):
    """Dimension numbers of :func:`ragged_dot_general` (as ``jax.lax.RaggedDotDimensionNumbers``):
    ``dot_dimension_numbers`` as :func:`dot_general`'s, the lhs ragged dimension and the rhs group
    dimension (empty unless the ragged dimension is a non-contracting one)."""
    dot_dimension_numbers: Any
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


def _group_mask(group_sizes: Any, length: int):
    """``mask[g, p]``: position ``p`` of the ragged dimension belongs to group ``g`` (groups are
    consecutive runs of ``group_sizes[g]`` positions from 0; positions after the last group are in none)."""
    from .windowed import cumsum
    aval = abstractify(group_sizes)
    g = aval.shape[0]
    ends = cumsum(group_sizes, 0)
    starts = api.sub(ends, group_sizes)
    pos = api.broadcasted_iota(aval.dtype, (g, length), 1)
    lo = api.broadcast_in_dim(starts, (g, length), (0,))
    hi = api.broadcast_in_dim(ends, (g, length), (0,))
    return api.bitwise_and(api.ge(pos, lo), api.lt(pos, hi))


@takes_out_sharding(positional=True)
def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any, ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None, group_offset: Any = None):
    """Ragged matrix multiplication (as ``jax.lax.ragged_dot_general``), in its three modes: the lhs
    ragged dimension is a non-contracting dimension (each group of its positions multiplies its own rhs
    slice along the rhs group dimension), a contracting dimension (one product per group, stacked in a
    new leading dimension), or a batch dimension.

    kiln computes it densely: every group's product over the whole ragged dimension, masked to the
    group's positions and summed (``g`` times the work of one product; the values are exact).
    ``group_sizes`` must be 1-D (``[g]``); ``group_offset`` is not supported.
    """
    fname = "ragged_dot_general"
    if group_offset is not None:
        raise NotImplementedError(f"kiln.lax.{fname}: group_offset is not supported; slice group_sizes instead")
    canonicalize_precision(f"lax.{fname}", precision)
    gs = abstractify(group_sizes)
    if gs.ndim != 1 or gs.dtype.kind not in "iu":
        raise TypeError(f"kiln.lax.{fname}: group_sizes must be a 1-D integer array (one size per group), got "
                        f"{gs.str_short()}")
    dn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in v) for v in (lc, rc, lb, rb))
    ragged, groups = tuple(dn.lhs_ragged_dimensions), tuple(dn.rhs_group_dimensions)
    la, ra = abstractify(lhs), abstractify(rhs)
    if len(ragged) != 1:
        raise ValueError(f"kiln.lax.{fname}: exactly one lhs ragged dimension is supported, got {ragged}")
    r = int(ragged[0]) % la.ndim
    g = gs.shape[0]
    mask = _group_mask(group_sizes, la.shape[r])  # [g, R]
    if r in lc or r in lb:
        if groups:
            raise ValueError(f"kiln.lax.{fname}: rhs_group_dimensions must be empty when the lhs ragged dimension "
                             f"{r} is a contracting or batch dimension, got {groups}")
        pet = preferred_element_type
        if r in lb:  # ragged batch: positions after the last group give zeros
            out = api.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), precision=precision, preferred_element_type=pet)
            inside = api.reduce_or(mask, (0,))
            out_shape = abstractify(out).shape
            keep = api.broadcast_in_dim(inside, out_shape, (lb.index(r),))
            return api.select(keep, out, api.full_like(out, 0))
        # ragged contracting: [g, batch..., lhs free..., rhs free...]
        m = api.convert_element_type(mask, la.dtype)
        masked = api.mul(api.broadcast_in_dim(lhs, (g,) + la.shape, tuple(range(1, la.ndim + 1))),
                         api.broadcast_in_dim(m, (g,) + la.shape, (0, r + 1)))
        rhs_g = api.broadcast_in_dim(rhs, (g,) + ra.shape, tuple(range(1, ra.ndim + 1)))
        return api.dot_general(masked, rhs_g, ((tuple(d + 1 for d in lc), tuple(d + 1 for d in rc)),
                                               ((0,) + tuple(d + 1 for d in lb), (0,) + tuple(d + 1 for d in rb))),
                               precision=precision, preferred_element_type=pet)
    # ragged non-contracting: the rhs group dimension is free in the full product, then masked and summed
    if len(groups) != 1:
        raise ValueError(f"kiln.lax.{fname}: with a non-contracting ragged dimension, rhs needs exactly one group "
                         f"dimension, got rhs_group_dimensions={groups}")
    gd = int(groups[0]) % ra.ndim
    if ra.shape[gd] != g:
        raise ValueError(f"kiln.lax.{fname}: the rhs group dimension {gd} has size {ra.shape[gd]} but group_sizes has "
                         f"{g} groups")
    full_out = api.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), precision=precision,
                               preferred_element_type=preferred_element_type)
    lhs_free = [d for d in range(la.ndim) if d not in lc and d not in lb]
    rhs_free = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    r_pos = len(lb) + lhs_free.index(r)
    g_pos = len(lb) + len(lhs_free) + rhs_free.index(gd)
    out_aval = abstractify(full_out)
    m = api.convert_element_type(mask, out_aval.dtype)
    if g_pos > r_pos:  # broadcast_in_dim keeps the operand's dimension order
        m = api.broadcast_in_dim(api.transpose(m, (1, 0)), out_aval.shape, (r_pos, g_pos))
    else:
        m = api.broadcast_in_dim(m, out_aval.shape, (g_pos, r_pos))
    return api.reduce_sum(api.mul(full_out, m), (g_pos,))


@takes_out_sharding(positional=True)
def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None, preferred_element_type: Any = None,
               group_offset: Any = None):
    """``lhs[m, k]`` times ``rhs[g, k, n]`` with the rows of ``lhs`` in consecutive groups of
    ``group_sizes[g]``: row ``i`` of group ``g`` is ``lhs[i] @ rhs[g]``; rows after the last group are zero.
    Computed densely (see :func:`ragged_dot_general`)."""
    la, ra = abstractify(lhs), abstractify(rhs)
    if la.ndim != 2 or ra.ndim != 3:
        raise ValueError(f"kiln.lax.ragged_dot: lhs must be (m, k) and rhs (g, k, n), got shapes {la.shape} and "
                         f"{ra.shape}")
    dn = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    return ragged_dot_general(lhs, rhs, group_sizes, dn, precision=precision,
                              preferred_element_type=preferred_element_type, group_offset=group_offset)


def stage(x: Any, /):
    """``x`` itself, as a value of the active trace (a Python scalar or NumPy array becomes a traced
    constant), or as a kiln array outside any trace."""
    from ..core.tracing import Tracer, current_builder
    builder = current_builder()
    if builder is not None:
        return Tracer(builder, builder.atom(x))
    if isinstance(x, Tracer) or hasattr(x, "aval") and not isinstance(x, np.ndarray):
        return x
    from ..driver.placement import device_put
    if api._is_py_scalar(x):
        dt, weak = dtypes.dtype_of_value(x)
        return api.convert_element_type(x, dt, weak_type=weak)
    return device_put(np.asarray(x, dtypes.canonicalize_dtype(np.asarray(x).dtype)))


def broadcast_block_scale(fname: str, scale: Any, operand_shape: tuple[int, ...], contracting: Sequence[int]):
    """``scale`` repeated blockwise along the ``contracting`` dimensions to ``operand_shape`` (each scale entry
    covers ``operand_size // scale_size`` consecutive elements); the other dimensions must match."""
    shape = tuple(abstractify(scale).shape)
    if len(shape) != len(operand_shape):
        raise ShapeError(f"kiln.{fname}: a scale has shape {shape} for an operand of shape {operand_shape}; it must "
                         "have the operand's rank")
    for i, (s, n) in enumerate(zip(shape, operand_shape)):
        if i in contracting and (s < 1 or n % s):
            raise ShapeError(f"kiln.{fname}: contracting dimension {i} of the operand ({n}) is not a multiple of the "
                             f"scale's ({s}); shapes {operand_shape} and {shape}")
        if i not in contracting and s != n:
            raise ShapeError(f"kiln.{fname}: dimension {i} of the scale ({s}) differs from the operand's ({n}); only "
                             f"contracting dimensions may be blocked. Shapes {operand_shape} and {shape}")
    # Each blocked dimension gains a block axis right after it (broadcast), then the two merge (reshape).
    blocked, out_dims = [], []
    for s, n in zip(shape, operand_shape):
        out_dims.append(len(blocked))
        blocked += [s, n // s] if s != n else [s]
    return api.reshape(api.broadcast_in_dim(scale, tuple(blocked), tuple(out_dims)), operand_shape)


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: Any = None, preferred_element_type: Any = None):
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` by ``dot_general``: block-scaled operands (MX formats: float8
    data, float8_e8m0fnu scales), each scale entry covering a block of a contracting dimension. As JAX's
    reference decomposition, the operands are scaled in bfloat16; the result has ``preferred_element_type``
    (default bfloat16)."""
    lhs_shape, rhs_shape = tuple(abstractify(lhs).shape), tuple(abstractify(rhs).shape)
    if dimension_numbers is None:
        n = len(lhs_shape)
        if n < 2:
            raise TypeError("kiln.lax.scaled_dot: 0-d and 1-d operands need explicit dimension_numbers")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lhs_contracting, rhs_contracting), _ = dimension_numbers
    out_type = dtypes.bfloat16 if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)

    def scaled(x, scale, shape, contracting):
        x = api.convert_element_type(x, dtypes.bfloat16)
        if scale is None:
            return x
        scale = broadcast_block_scale("lax.scaled_dot", scale, shape, tuple(contracting))
        return api.mul(x, api.convert_element_type(scale, dtypes.bfloat16))

    return api.dot_general(scaled(lhs, lhs_scale, lhs_shape, lhs_contracting),
                           scaled(rhs, rhs_scale, rhs_shape, rhs_contracting),
                           dimension_numbers, preferred_element_type=out_type)
