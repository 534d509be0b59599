"""Shape manipulation: reshape, ravel, transpose, swapaxes, moveaxis, squeeze, expand_dims, broadcasting,
joining (concatenate, stack, hstack, ...), splitting, tile, repeat, pad, flips, roll, rot90, triu/tril,
atleast_nd, append, insert, delete, resize."""
from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..batching.api import vmap
from ..core import dtypes
from ..core.errors import BroadcastError, ConcretizationTypeError, ShapeError
from ..core.tracing import Tracer, abstractify, concrete, materialize
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from ..lax.sharding import takes_out_sharding
from . import key_arrays
from ._util import broadcast_shapes as _broadcast_shapes
from ._util import (
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    check_arraylike,
    is_array,
    promote_dtypes,
    sorted_axes,
    static_int,
    static_shape,
)

__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block", "broadcast_arrays",
    "broadcast_shapes", "broadcast_to", "column_stack", "concat", "concatenate", "delete", "dsplit", "dstack",
    "expand_dims", "flip", "fliplr", "flipud", "hsplit", "hstack", "insert", "matrix_transpose", "moveaxis", "ndim",
    "pad", "permute_dims", "ravel", "repeat", "reshape", "resize", "roll", "rollaxis", "rot90", "row_stack", "shape",
    "size", "split", "squeeze", "stack", "swapaxes", "tile", "transpose", "trim_zeros", "tril", "triu", "unstack",
    "vsplit", "vstack",
]


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def _array(fname: str, x):
    check_arraylike(fname, x)
    (x,) = promote_dtypes(fname, x)
    return materialize(x)


def _static_ints(fname: str, what: str, value) -> np.ndarray | None:
    """The concrete integer value of ``value`` (a host array), or None when it is traced without one."""
    if isinstance(value, Tracer):
        value = concrete(value)
        if value is None:
            return None
    if isinstance(value, (float, np.floating)) or (isinstance(value, (Array, np.ndarray)) and
                                                     np.asarray(value).dtype.kind not in "biu"):
        raise TypeError(f"kiln.numpy.{fname}: {what} must be integers, got {value!r:.60}")
    try:
        out = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"kiln.numpy.{fname}: {what} must be integers, got {value!r:.60}") from e
    if out.dtype == np.bool_ and not isinstance(value, (bool, np.bool_)):
        return out
    if out.size == 0 and out.dtype.kind == "f" and not isinstance(value, np.ndarray):
        out = out.astype(np.int64)  # an empty list or tuple
    if out.dtype.kind not in "iub" or out.dtype == object:
        raise TypeError(f"kiln.numpy.{fname}: {what} must be integers, got {value!r:.60}")
    return out.astype(np.int64)


def _slice_axis(x, axis: int, start: int, stop: int, step: int = 1):
    aval = abstractify(x)
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return lax.slice(x, starts, limits, strides)


def _take_static(x, idx: Sequence[int], axis: int):
    """``x`` taken along ``axis`` at static in-range indices ``idx``.

    The index table is split into runs that step by +1, -1 or 0; each run is one slice (reversed or
    broadcast as needed) and the runs are joined by one concatenate, so no gather is needed.
    """
    aval = abstractify(x)
    idx = [int(i) for i in idx]
    if idx == list(range(aval.shape[axis])):
        return x
    if not idx:
        return _slice_axis(x, axis, 0, 0)
    pieces = []
    p, n = 0, len(idx)
    while p < n:
        q, step = p + 1, None
        if q < n and idx[q] - idx[p] in (-1, 0, 1):
            step = idx[q] - idx[p]
            while q + 1 < n and idx[q + 1] - idx[q] == step:
                q += 1
            q += 1
        first, last = idx[p], idx[q - 1]
        if step == 1 or step is None:
            pieces.append(_slice_axis(x, axis, first, last + 1))
        elif step == -1:
            pieces.append(lax.rev(_slice_axis(x, axis, last, first + 1), (axis,)))
        else:
            piece = _slice_axis(x, axis, first, first + 1)
            shape = list(abstractify(piece).shape)
            shape[axis] = q - p
            pieces.append(lax.broadcast_in_dim(piece, tuple(shape), tuple(range(len(shape)))))
        p = q
    return lax.concatenate(pieces, axis)


def _take_traced(x, idx, axis: int):
    """``x`` taken along ``axis`` at traced in-range int32 indices ``idx`` (1-D): one gather."""
    from .index_funcs import take
    return take(x, idx, axis=axis, mode="clip")


# ---------------------------------------------------------------------------------------------
# Shapes and axes
# ---------------------------------------------------------------------------------------------

def shape(a) -> tuple[int, ...]:
    """The shape of ``a`` (an array, a scalar or a nested list)."""
    if is_array(a):
        return abstractify(a).shape
    return np.shape(a)


def ndim(a) -> int:
    """The number of dimensions of ``a``."""
    return len(shape(a))


def size(a, axis: int | tuple[int, ...] | None = None) -> int:
    """The number of elements of ``a`` (along ``axis``, an axis or a tuple of them, if given)."""
    s = shape(a)
    if axis is None:
        return math.prod(s)
    if isinstance(axis, (tuple, list)):
        return math.prod(s[canonical_axis("size", ax, len(s))] for ax in axis)
    return s[canonical_axis("size", axis, len(s))]


@takes_out_sharding
@eager_jit("shape", "order", "newshape", "copy")
def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    """Reshape ``a``; one dimension may be -1 (inferred). ``order='F'`` reshapes column-major."""
    if key_arrays.any_key(a):
        return key_arrays.rule("reshape")(a, shape if shape is not None else newshape, order)
    a = _array("reshape", a)
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("kiln.numpy.reshape: missing the new shape")
    aval = abstractify(a)
    if isinstance(shape, (int, np.integer)) or (is_array(shape) and abstractify(shape).ndim == 0):
        shape = (shape,)
    shape = [static_int("reshape", "each dimension of the new shape", d) for d in shape]
    if shape.count(-1) > 1:
        raise ValueError(f"kiln.numpy.reshape: can only specify one unknown dimension (-1), got {tuple(shape)}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or aval.size % known or builtins.any(d < -1 for d in shape):
            raise ValueError(f"kiln.numpy.reshape: cannot reshape array of size {aval.size} into shape "
                             f"{tuple(shape)}")
        shape[shape.index(-1)] = aval.size // known
    shape = tuple(shape)
    if math.prod(shape) != aval.size or builtins.any(d < 0 for d in shape):
        raise ValueError(f"kiln.numpy.reshape: cannot reshape array of size {aval.size} (shape {aval.shape}) "
                         f"into shape {shape}")
    if order == "F":
        a = lax.transpose(a, tuple(reversed(range(aval.ndim))))
        out = lax.reshape(a, tuple(reversed(shape)))
        return lax.transpose(out, tuple(reversed(range(len(shape)))))
    if order not in ("C", "A"):
        raise ValueError(f"kiln.numpy.reshape: order must be 'C' or 'F', got {order!r}")
    return lax.reshape(a, shape)


@takes_out_sharding
@eager_jit("order")
def ravel(a, order: str = "C"):
    """The flattened array."""
    a = _array("ravel", a)
    return reshape(a, (abstractify(a).size,), order=order)


@eager_jit("axes")
def transpose(a, axes: Sequence[int] | None = None):
    """Permute axes (reverse them by default)."""
    if key_arrays.any_key(a):
        return key_arrays.rule("transpose")(a, axes)
    a = _array("transpose", a)
    nd = abstractify(a).ndim
    if axes is None:
        axes = tuple(reversed(range(nd)))
    axes = tuple(canonical_axis("transpose", ax, nd) for ax in axes)
    if sorted(axes) != list(range(nd)):
        raise ShapeError(f"kiln.numpy.transpose: axes {axes} are not a permutation of the {nd} axes")
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    """Permute axes (the array API's name for :func:`transpose`)."""
    return transpose(a, axes)


def matrix_transpose(x):
    """Swap the last two axes."""
    x = _array("matrix_transpose", x)
    if abstractify(x).ndim < 2:
        raise ValueError(f"kiln.numpy.matrix_transpose: x must be at least 2-D, got shape {abstractify(x).shape}")
    return swapaxes(x, -1, -2)


@eager_jit("axis1", "axis2")
def swapaxes(a, axis1: int, axis2: int):
    """Swap two axes."""
    a = _array("swapaxes", a)
    nd = abstractify(a).ndim
    perm = list(range(nd))
    i, j = canonical_axis("swapaxes", axis1, nd), canonical_axis("swapaxes", axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


@eager_jit("source", "destination")
def moveaxis(a, source, destination):
    """Move axes to new positions, keeping the order of the others."""
    a = _array("moveaxis", a)
    nd = abstractify(a).ndim
    src = canonical_axes("moveaxis", source, nd)
    dst = canonical_axes("moveaxis", destination, nd)
    if len(src) != len(dst):
        raise ValueError(f"kiln.numpy.moveaxis: source {source} and destination {destination} need the same "
                         "number of axes")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


@eager_jit("axis", "start")
def rollaxis(a, axis: int, start: int = 0):
    """Roll ``axis`` backwards until it lies before position ``start`` (prefer :func:`moveaxis`)."""
    a = _array("rollaxis", a)
    nd = abstractify(a).ndim
    axis = canonical_axis("rollaxis", axis, nd)
    start = static_int("rollaxis", "start", start)
    if not -nd <= start <= nd:
        raise ValueError(f"kiln.numpy.rollaxis: start {start} is out of range for an array of dimension {nd}")
    start = start + nd if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start) if nd else a


@eager_jit("axis")
def squeeze(a, axis: int | Sequence[int] | None = None):
    """Remove axes of length one."""
    if key_arrays.any_key(a):
        return key_arrays.rule("squeeze")(a, axis)
    a = _array("squeeze", a)
    shp = abstractify(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shp) if d == 1)
    else:
        axes = sorted_axes("squeeze", axis, len(shp))
        bad = [ax for ax in axes if shp[ax] != 1]
        if bad:
            raise ValueError(f"kiln.numpy.squeeze: cannot select an axis to squeeze out which has size not "
                             f"equal to one (axis {bad[0]} of shape {shp})")
    return lax.reshape(a, tuple(d for i, d in enumerate(shp) if i not in axes))


@eager_jit("axis")
def expand_dims(a, axis: int | Sequence[int]):
    """Insert axes of length one at ``axis``."""
    if key_arrays.any_key(a):
        return key_arrays.rule("expand_dims")(a, axis)
    a = _array("expand_dims", a)
    shp = list(abstractify(a).shape)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)  # (a traced axis: canonical_axis says so)
    out_ndim = len(shp) + len(axes)
    for ax in sorted_axes("expand_dims", axes, out_ndim):
        shp.insert(ax, 1)
    return lax.reshape(a, tuple(shp))


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    return _broadcast_shapes("broadcast_shapes", *shapes)


@takes_out_sharding
def broadcast_to(a, shape):
    """Broadcast ``a`` to ``shape`` (NumPy rules)."""
    if key_arrays.any_key(a):
        return key_arrays.rule("broadcast_to")(a, shape)
    a = _array("broadcast_to", a)
    shape = static_shape("broadcast_to", shape)
    src = abstractify(a).shape
    ok = len(src) <= len(shape) and builtins.all(s in (1, d) for s, d in zip(src[::-1], shape[::-1]))
    if not ok:
        raise BroadcastError(f"kiln.numpy.broadcast_to: cannot broadcast an array of shape {src} to shape {shape}")
    return broadcast_to_shape(a, shape)


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape."""
    args = [_array("broadcast_arrays", a) for a in args]
    shp = _broadcast_shapes("broadcast_arrays", *[abstractify(a).shape for a in args])
    return [broadcast_to_shape(a, shp) for a in args]


# ---------------------------------------------------------------------------------------------
# Joining
# ---------------------------------------------------------------------------------------------

def _sequence(fname: str, arrays) -> list[Any]:
    if is_array(arrays):
        return unstack(arrays) if abstractify(arrays).ndim else [arrays]
    if isinstance(arrays, np.ndarray):
        return list(arrays) if arrays.ndim else [arrays]
    try:
        return list(arrays)
    except TypeError:
        raise TypeError(f"kiln.numpy.{fname}: expected a sequence of arrays, got {type(arrays).__name__}") from None


@eager_jit("axis", "dtype", sequences=("arrays",))
def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first)."""
    arrays = _sequence("concatenate", arrays)
    if key_arrays.any_key(*arrays):
        return key_arrays.rule("concatenate")(arrays, axis)
    if not arrays:
        raise ValueError("kiln.numpy.concatenate: need at least one array to concatenate")
    check_arraylike("concatenate", *arrays)
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes("concatenate", *arrays)
    if dtype is not None:
        from .creation import astype
        arrays = [astype(a, dtype) for a in arrays]
    ndims = {abstractify(a).ndim for a in arrays}
    if len(ndims) != 1:
        shapes = " ".join(str(abstractify(a).shape) for a in arrays)
        raise ShapeError(f"kiln.numpy.concatenate: all arrays must have the same number of dimensions, got "
                         f"shapes {shapes}")
    nd = ndims.pop()
    if nd == 0:
        raise ValueError("kiln.numpy.concatenate: zero-dimensional arrays cannot be concatenated")
    axis = canonical_axis("concatenate", axis, nd)
    shapes = [abstractify(a).shape for a in arrays]
    for s in shapes[1:]:
        if builtins.any(x != y for i, (x, y) in enumerate(zip(s, shapes[0])) if i != axis):
            raise ShapeError(f"kiln.numpy.concatenate: array shapes {shapes[0]} and {s} differ outside the "
                             f"concatenation axis {axis}")
    return lax.concatenate([materialize(a) for a in arrays], axis)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0):
    """Join arrays along an existing axis: the array API's name of :func:`concatenate`."""
    return concatenate(arrays, axis=axis)


@eager_jit("axis", "out", "dtype", sequences=("arrays",))
def stack(arrays: Sequence[Any], axis: int = 0, out=None, dtype=None):
    """Join arrays along a new axis."""
    arrays = _sequence("stack", arrays)
    if key_arrays.any_key(*arrays):
        return key_arrays.rule("stack")(arrays, axis)
    if not arrays:
        raise ValueError("kiln.numpy.stack: need at least one array to stack")
    check_arraylike("stack", *arrays)
    shapes = {abstractify(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"kiln.numpy.stack: all input arrays must have the same shape, got "
                         f"{' '.join(str(abstractify(a).shape) for a in arrays)}")
    nd = len(shapes.pop()) + 1
    axis = canonical_axis("stack", axis, nd)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype)


@eager_jit("axis")
def unstack(x, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (called eagerly: one program for all of them)."""
    x = _array("unstack", x)
    aval = abstractify(x)
    if aval.ndim == 0:
        raise ValueError("kiln.numpy.unstack: the input must be at least 1-D")
    axis = canonical_axis("unstack", axis, aval.ndim)
    out_shape = aval.shape[:axis] + aval.shape[axis + 1:]
    return tuple(lax.reshape(_slice_axis(x, axis, i, i + 1), out_shape) for i in range(aval.shape[axis]))


def _atleast(fname: str, nd: int, arys):
    out = []
    for a in arys:
        a = _array(fname, a)
        s = abstractify(a).shape
        if len(s) < nd:
            if nd == 3 and len(s) == 1:
                s = (1,) + s + (1,)
            elif nd == 3 and len(s) == 2:
                s = s + (1,)
            else:
                s = (1,) * (nd - len(s)) + s
            a = lax.reshape(a, s)
        out.append(a)
    return out[0] if len(out) == 1 else out


@eager_jit()
def atleast_1d(*arys):
    """Each argument as an array of at least one dimension."""
    return _atleast("atleast_1d", 1, arys)


@eager_jit()
def atleast_2d(*arys):
    """Each argument as an array of at least two dimensions (1-D ``(n,)`` becomes ``(1, n)``)."""
    return _atleast("atleast_2d", 2, arys)


@eager_jit()
def atleast_3d(*arys):
    """Each argument with at least three dimensions (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``)."""
    return _atleast("atleast_3d", 3, arys)


@eager_jit("dtype", sequences=("tup",))
def hstack(tup, dtype=None):
    """Join horizontally: along axis 1, or axis 0 for 1-D arrays."""
    arrs = [_atleast("hstack", 1, [a]) for a in _sequence("hstack", tup)]
    if not arrs:
        raise ValueError("kiln.numpy.hstack: need at least one array to stack")
    return concatenate(arrs, axis=0 if abstractify(arrs[0]).ndim == 1 else 1, dtype=dtype)


@eager_jit("dtype", sequences=("tup",))
def vstack(tup, dtype=None):
    """Join vertically: along axis 0, with 1-D arrays as rows."""
    arrs = [_atleast("vstack", 2, [a]) for a in _sequence("vstack", tup)]
    return concatenate(arrs, axis=0, dtype=dtype)


row_stack = vstack


@eager_jit("dtype", sequences=("tup",))
def dstack(tup, dtype=None):
    """Join along the third axis (depth)."""
    arrs = [_atleast("dstack", 3, [a]) for a in _sequence("dstack", tup)]
    return concatenate(arrs, axis=2, dtype=dtype)


@eager_jit(sequences=("tup",))
def column_stack(tup):
    """Join 1-D arrays as columns (and 2-D arrays as they are) into a 2-D array."""
    arrs = []
    for a in _sequence("column_stack", tup):
        a = _array("column_stack", a)
        s = abstractify(a).shape
        if len(s) < 2:
            a = lax.reshape(a, (builtins.max(1, abstractify(a).size), 1) if len(s) == 0 else (s[0], 1))
        arrs.append(a)
    return concatenate(arrs, axis=1)


@eager_jit("axis")
def append(arr, values, axis: int | None = None):
    """``values`` appended to ``arr`` (both flattened when ``axis`` is None)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


# ---------------------------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------------------------

def _split_points(fname: str, n: int, indices_or_sections, even: bool) -> list[tuple[int, int]]:
    value = _static_ints(fname, "indices_or_sections", indices_or_sections)
    if value is None:
        raise ConcretizationTypeError(
            f"kiln.numpy.{fname}: indices_or_sections must be static (the shapes of the pieces depend on it); it "
            "is traced here. Pass a Python int or a list of ints, or mark it static with static_argnums")
    if value.ndim == 0:
        sections = int(value)
        if sections <= 0:
            raise ValueError(f"kiln.numpy.{fname}: the number of sections must be larger than 0, got {sections}")
        if even and n % sections:
            raise ValueError(f"kiln.numpy.{fname}: array split does not result in an equal division: an axis of "
                             f"size {n} into {sections} sections (use kiln.numpy.array_split for unequal parts)")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        return [(int(bounds[i]), int(bounds[i + 1])) for i in range(sections)]
    if value.ndim != 1:
        raise ValueError(f"kiln.numpy.{fname}: indices_or_sections must be an int or a 1-D sequence of ints")
    points = [None] + [int(i) for i in value] + [None]
    out = []
    for lo, hi in zip(points[:-1], points[1:]):
        start, stop, _ = slice(lo, hi).indices(n)
        out.append((start, builtins.max(start, stop)))
    return out


def _split(fname: str, ary, indices_or_sections, axis: int, even: bool) -> list[Any]:
    ary = _array(fname, ary)
    aval = abstractify(ary)
    if aval.ndim == 0:
        raise ValueError(f"kiln.numpy.{fname}: cannot split a 0-d array")
    axis = canonical_axis(fname, axis, aval.ndim)
    return [_slice_axis(ary, axis, lo, hi) for lo, hi in _split_points(fname, aval.shape[axis],
                                                                         indices_or_sections, even)]


@eager_jit("indices_or_sections", "axis")
def split(ary, indices_or_sections, axis: int = 0) -> list[Any]:
    """Split into equal sections (an int that must divide the axis) or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, True)


@eager_jit("indices_or_sections", "axis")
def array_split(ary, indices_or_sections, axis: int = 0) -> list[Any]:
    """Like :func:`split`, but a number of sections need not divide the axis (the first parts get one more)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


@eager_jit("indices_or_sections")
def hsplit(ary, indices_or_sections) -> list[Any]:
    """Split horizontally (axis 1, or axis 0 for 1-D arrays)."""
    ary = _array("hsplit", ary)
    nd = abstractify(ary).ndim
    if nd == 0:
        raise ValueError("kiln.numpy.hsplit: only works on arrays of 1 or more dimensions")
    return _split("hsplit", ary, indices_or_sections, 1 if nd > 1 else 0, True)


@eager_jit("indices_or_sections")
def vsplit(ary, indices_or_sections) -> list[Any]:
    """Split vertically (axis 0); as JAX (unlike NumPy), a 1-D array is split too."""
    ary = _array("vsplit", ary)
    if abstractify(ary).ndim < 1:
        raise ValueError("kiln.numpy.vsplit: only works on arrays of 1 or more dimensions")
    return _split("vsplit", ary, indices_or_sections, 0, True)


@eager_jit("indices_or_sections")
def dsplit(ary, indices_or_sections) -> list[Any]:
    """Split along the third axis an array of at least 3 dimensions."""
    ary = _array("dsplit", ary)
    if abstractify(ary).ndim < 3:
        raise ValueError("kiln.numpy.dsplit: only works on arrays of 3 or more dimensions")
    return _split("dsplit", ary, indices_or_sections, 2, True)


# ---------------------------------------------------------------------------------------------
# Tile, repeat, resize
# ---------------------------------------------------------------------------------------------

@eager_jit("reps")
def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis."""
    A = _array("tile", A)
    value = _static_ints("tile", "reps", reps)
    if value is None:
        raise ConcretizationTypeError("kiln.numpy.tile: reps must be static (it decides the shape); it is traced "
                                      "here. Pass Python ints or mark it static with static_argnums")
    reps = tuple(int(r) for r in np.atleast_1d(value))
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"kiln.numpy.tile: reps must be non-negative, got {reps}")
    s = abstractify(A).shape
    nd = builtins.max(len(s), len(reps))
    s = (1,) * (nd - len(s)) + s
    reps = (1,) * (nd - len(reps)) + reps
    A = lax.reshape(A, s)
    inter = tuple(v for pair in zip(reps, s) for v in pair)
    out = lax.broadcast_in_dim(A, inter, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(out, tuple(r * d for r, d in zip(reps, s)))


@takes_out_sharding
@eager_jit("repeats", "axis", "total_repeat_length")
def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Repeat each element of ``a`` (along ``axis``; flattened when None).

    ``repeats`` is an int or one int per element. Under ``jit`` a traced ``repeats`` decides the output
    length, so it needs the static ``total_repeat_length``: a longer total is padded with the last element
    of ``a``, a shorter one truncates (as JAX).
    """
    a = _array("repeat", a)
    if axis is None:
        a = ravel(a)
        axis = 0
    aval = abstractify(a)
    if aval.ndim == 0:
        a, aval = lax.reshape(a, (1,)), aval.update(shape=(1,))
    axis = canonical_axis("repeat", axis, aval.ndim)
    n = aval.shape[axis]
    total = None
    if total_repeat_length is not None:
        total = static_int("repeat", "total_repeat_length", total_repeat_length)
        if total < 0:
            raise ValueError(f"kiln.numpy.repeat: total_repeat_length must be non-negative, got {total}")
    if not (is_array(repeats) or isinstance(repeats, (int, np.integer, list, tuple, np.ndarray))) or \
            isinstance(repeats, bool):
        raise TypeError(f"kiln.numpy.repeat: repeats must be integers (an int or a sequence of ints), got "
                        f"{repeats!r:.40}")
    reps = _static_ints("repeat", "repeats", repeats)
    if reps is None:
        if total is None:
            raise ConcretizationTypeError(
                "kiln.numpy.repeat: repeats is a traced array here (under jit), so the length of the result "
                "would depend on its values. Pass a static total_repeat_length=... (the result is padded with the "
                "last element or truncated to it), or make repeats static (a Python int or list, or "
                "static_argnums)")
        return _repeat_traced(a, repeats, axis, n, total)
    if reps.ndim > 1 or (reps.ndim == 1 and reps.shape[0] not in (1, n)):
        raise ValueError(f"kiln.numpy.repeat: repeats of shape {reps.shape} does not match the {n} elements "
                         f"along axis {axis} (shape {aval.shape})")
    if (reps < 0).any():
        raise ValueError(f"kiln.numpy.repeat: repeats must be non-negative, got {reps.tolist()}")
    if reps.ndim == 1 and reps.shape[0] == 1:
        reps = reps[0]
    if reps.ndim == 0:
        r = int(reps)
        shp = aval.shape
        big = shp[:axis + 1] + (r,) + shp[axis + 1:]
        out = lax.broadcast_in_dim(a, big, tuple(d for d in range(len(big)) if d != axis + 1))
        out = lax.reshape(out, shp[:axis] + (n * r,) + shp[axis + 1:])
        counts = [r] * n
    else:
        counts = [int(r) for r in reps]
        pieces, start = [], 0
        while start < n:  # elements with the same count in a row repeat together
            stop = start
            while stop < n and counts[stop] == counts[start]:
                stop += 1
            c = counts[start]
            if c:
                block = _slice_axis(a, axis, start, stop)
                s = abstractify(block).shape
                big = s[:axis + 1] + (c,) + s[axis + 1:]
                block = lax.broadcast_in_dim(block, big, tuple(d for d in range(len(big)) if d != axis + 1))
                pieces.append(lax.reshape(block, s[:axis] + ((stop - start) * c,) + s[axis + 1:]))
            start = stop
        out = lax.concatenate(pieces, axis) if pieces else _slice_axis(a, axis, 0, 0)
    length = builtins.sum(counts)
    if total is None or total == length:
        return out
    if total < length:
        return _slice_axis(out, axis, 0, total)
    if n == 0:
        raise ValueError(f"kiln.numpy.repeat: cannot pad to total_repeat_length={total} an axis of size 0")
    last = _slice_axis(a, axis, n - 1, n)
    shp = list(abstractify(last).shape)
    shp[axis] = total - length
    return lax.concatenate([out, lax.broadcast_in_dim(last, tuple(shp), tuple(range(len(shp))))], axis)


def _repeat_traced(a, repeats, axis: int, n: int, total: int):
    """repeat with traced ``repeats`` and a static output length."""
    i32 = dtypes.int32
    r = lax.convert_element_type(repeats, i32)
    rs = abstractify(r).shape
    if rs == () or rs == (1,):
        r = lax.broadcast_in_dim(lax.reshape(r, ()), (n,), ())
    elif rs != (n,):
        raise ValueError(f"kiln.numpy.repeat: repeats of shape {rs} does not match the {n} elements along "
                         f"axis {axis}")
    if n == 0:
        if total:
            raise ValueError(f"kiln.numpy.repeat: cannot pad to total_repeat_length={total} an axis of size 0")
        return a
    # End of each element's block (inclusive cumulative sum), then, for each output position j, the
    # number of blocks that end at or before j is the index of the element it copies.
    lower = lax.le(lax.broadcasted_iota(i32, (n, n), 1), lax.broadcasted_iota(i32, (n, n), 0))
    zero_nn = lax.broadcast_in_dim(lax.literal(0, i32), (n, n), ())
    ends = lax.reduce_sum(lax.select(lower, lax.broadcast_in_dim(r, (n, n), (1,)), zero_nn), (1,))
    done = lax.le(lax.broadcast_in_dim(ends, (total, n), (1,)), lax.broadcasted_iota(i32, (total, n), 0))
    idx = lax.reduce_sum(lax.convert_element_type(done, i32), (1,))
    idx = lax.min(idx, lax.broadcast_in_dim(lax.literal(n - 1, i32), (total,), ()))
    return _take_traced(a, idx, axis)


@eager_jit("new_shape")
def resize(a, new_shape):
    """``a`` flattened, repeated cyclically and cut to fill ``new_shape``."""
    a = _array("resize", a)
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    new_shape = tuple(static_int("resize", "each dimension of new_shape", d) for d in new_shape)
    if builtins.any(d < 0 for d in new_shape):
        raise ValueError(f"kiln.numpy.resize: new_shape must be non-negative, got {new_shape}")
    flat = ravel(a)
    n = abstractify(flat).shape[0]
    total = math.prod(new_shape)
    if n == 0:
        aval = abstractify(a)
        return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), new_shape, ())
    reps = -(-total // n)
    out = tile(flat, reps) if reps != 1 else flat
    return lax.reshape(_slice_axis(out, 0, 0, total), new_shape)


# ---------------------------------------------------------------------------------------------
# Insert and delete (static positions)
# ---------------------------------------------------------------------------------------------

def _static_positions(fname: str, obj, n: int):
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n)), False
    value = _static_ints(fname, "obj", obj)
    if value is None:
        raise ConcretizationTypeError(f"kiln.numpy.{fname}: obj must be static (it decides the shape of the "
                                      "result); it is traced here")
    return value, value.ndim == 0


@eager_jit("obj", "axis", "assume_unique_indices")
def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries at ``obj`` (an int, a slice, a sequence of ints or a boolean mask)."""
    arr = _array("delete", arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    aval = abstractify(arr)
    axis = canonical_axis("delete", axis, aval.ndim)
    n = aval.shape[axis]
    if assume_unique_indices and not isinstance(obj, slice) and _static_ints("delete", "obj", obj) is None:
        return _delete_traced(arr, obj, axis)
    pos, _ = _static_positions("delete", obj, n)
    keep = np.ones(n, bool)
    if pos.dtype == np.bool_:
        if pos.shape != (n,):
            raise ValueError(f"kiln.numpy.delete: boolean obj of shape {pos.shape} does not match the axis of size "
                             f"{n}")
        keep &= ~pos
    else:
        pos = pos.ravel()
        bad = pos[(pos < -n) | (pos >= n)]
        if bad.size:
            raise IndexError(f"kiln.numpy.delete: index {int(bad[0])} is out of bounds for axis {axis} with size {n}")
        keep[pos] = False
    return _take_static(arr, np.nonzero(keep)[0], axis)


def _delete_traced(arr, obj, axis: int):
    """``delete`` at traced integer positions ``obj``, taken as unique (``assume_unique_indices``): the result
    has ``n - obj.size`` entries along ``axis`` (repeated positions would leave stale ones at the end)."""
    aval, oval = abstractify(arr), abstractify(obj)
    if dtypes.kind(oval.dtype) not in "iu":
        raise TypeError(f"kiln.numpy.delete: a traced obj must hold integer positions, got {oval.dtype.name}")
    n, k = aval.shape[axis], oval.size
    if k > n:
        raise ValueError(f"kiln.numpy.delete: {k} unique positions cannot be deleted from an axis of size {n}")
    int_dtype = dtypes.default_int_dtype()
    pos = lax.convert_element_type(lax.reshape(materialize(obj), (k,)), int_dtype)
    pos = lax.select(lax.lt(pos, lax.full((k,), 0, int_dtype)), lax.add(pos, lax.full((k,), n, int_dtype)), pos)
    iota = lax.iota(int_dtype, n)
    hit = lax.eq(lax.broadcast_in_dim(iota, (n, k), (0,)), lax.broadcast_in_dim(pos, (n, k), (1,)))
    gone = lax.convert_element_type(lax.reduce_or(hit, (1,)), int_dtype)
    _, order = lax.sort((gone, iota), dimension=0, is_stable=True, num_keys=1)  # the kept positions first
    kept = lax.slice(order, (0,), (n - k,))
    x = moveaxis(materialize(arr), axis, 0)
    rest = abstractify(x).shape[1:]
    dn = lax.GatherDimensionNumbers(offset_dims=tuple(range(1, len(rest) + 1)), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    out = lax.gather(x, lax.reshape(kept, (n - k, 1)), dn, (1,) + rest)
    return moveaxis(out, 0, axis)


@eager_jit("obj", "axis")
def insert(arr, obj, values, axis: int | None = None):
    """``values`` inserted into ``arr`` before the positions ``obj`` (static) along ``axis``."""
    arr = _array("insert", arr)
    if not isinstance(values, (list, tuple)):
        check_arraylike("insert", values)
    if axis is None:
        arr, axis = ravel(arr), 0
    aval = abstractify(arr)
    axis = canonical_axis("insert", axis, aval.ndim)
    n = aval.shape[axis]
    pos, scalar = _static_positions("insert", obj, n)
    if pos.dtype == np.bool_:
        raise TypeError("kiln.numpy.insert: obj must be integer positions or a slice, not a boolean mask")
    pos = pos.ravel()
    bad = pos[(pos < -n) | (pos > n)]
    if bad.size:
        raise IndexError(f"kiln.numpy.insert: index {int(bad[0])} is out of bounds for axis {axis} with size {n}")
    pos = np.where(pos < 0, pos + n, pos)
    from .creation import array as _mk
    vals = values if is_array(values) else _mk(values)
    vals = lax.convert_element_type(vals, aval.dtype, weak_type=aval.weak_type)
    if pos.size == 1:
        vs = abstractify(vals).shape
        if len(vs) < aval.ndim:
            vals = lax.reshape(vals, (1,) * (aval.ndim - len(vs)) + vs)
        if scalar:
            vals = moveaxis(vals, 0, axis)
        numnew = abstractify(vals).shape[axis]
        pos = np.full(numnew, pos[0])
    numnew = len(pos)
    target = aval.shape[:axis] + (numnew,) + aval.shape[axis + 1:]
    vs = abstractify(vals).shape
    if len(vs) > len(target) or builtins.any(v not in (1, t) for v, t in zip(vs[::-1], target[::-1])):
        raise ValueError(f"kiln.numpy.insert: values of shape {vs} cannot be broadcast to {target}")
    vals = broadcast_to_shape(vals, target)
    order = np.argsort(pos, kind="stable")
    new_pos = pos.copy()
    new_pos[order] += np.arange(numnew)
    table = np.empty(n + numnew, np.int64)
    old = np.ones(n + numnew, bool)
    old[new_pos] = False
    table[old] = np.arange(n)
    table[new_pos] = n + np.arange(numnew)
    return _take_static(lax.concatenate([arr, vals], axis), table, axis)


# ---------------------------------------------------------------------------------------------
# Padding
# ---------------------------------------------------------------------------------------------

def _pad_width(pad_width, nd: int) -> np.ndarray:
    value = _static_ints("pad", "pad_width", pad_width)
    if value is None:
        raise ConcretizationTypeError("kiln.numpy.pad: pad_width must be static (it decides the shape); it is "
                                      "traced here")
    if nd == 0:
        return np.zeros((0, 2), np.int64)
    try:
        value = np.broadcast_to(value, (nd, 2))
    except ValueError:
        raise ValueError(f"kiln.numpy.pad: pad_width of shape {np.shape(value)} must be an int, a (before, after) "
                         f"pair, or one pair per axis for an array of dimension {nd}") from None
    if (value < 0).any():
        raise ValueError(f"kiln.numpy.pad: pad_width must be non-negative, got {np.asarray(pad_width).tolist()}")
    return value


_PAD_OPTIONS = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
                "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
                "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"}}


def _scalar_operand(v, aval):
    """``v`` as a 0-d operand of ``aval``'s dtype (for lax.pad)."""
    if is_array(v):
        if abstractify(v).ndim:
            v = lax.reshape(v, ())
        return lax.convert_element_type(v, aval.dtype, weak_type=aval.weak_type)
    return lax.literal(np.asarray(v).item() if isinstance(v, (np.ndarray, np.generic)) else v,
                       aval.dtype, aval.weak_type)


@eager_jit("pad_width", "mode", "stat_length", "reflect_type")
def pad(array, pad_width, mode: str = "constant", **kwargs):
    """Pad an array (NumPy's modes constant, empty, edge, reflect, symmetric, wrap, maximum, minimum, mean, or
    a function ``mode(vector, (before, after), axis, kwargs)`` returning each padded vector, as JAX's).

    ``pad_width`` is an int, a ``(before, after)`` pair or one pair per axis, and must be static.
    """
    x = _array("pad", array)
    widths = tuple((int(b), int(e)) for b, e in _pad_width(pad_width, abstractify(x).ndim))
    if callable(mode):
        return _pad_callable(x, widths, mode, kwargs)
    if mode not in _PAD_OPTIONS:
        raise NotImplementedError(f"kiln.numpy.pad: mode {mode!r} is not supported; supported modes: "
                                  f"{', '.join(_PAD_OPTIONS)}")
    extra = set(kwargs) - _PAD_OPTIONS[mode]
    if extra:
        raise TypeError(f"kiln.numpy.pad: unsupported keyword argument(s) {sorted(extra)} for mode {mode!r}")
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("kiln.numpy.pad: only reflect_type='even' is supported")
    if mode in ("constant", "empty"):
        return _pad_constant(x, kwargs.get("constant_values", 0) if mode == "constant" else 0, widths=widths)
    return _pad_from_values(x, widths=widths, mode=mode, stat_length=_as_tuples(kwargs.get("stat_length")))


def _pad_callable(x, widths, func, kwargs):
    """NumPy's callable ``mode``: ``x`` zero-padded, then, axis by axis, each 1-D vector along the axis replaced
    by ``func(vector, (before, after), axis, kwargs)``, which must return it (kiln arrays are immutable, so a
    function that pads in place, as NumPy's may, does not work)."""
    x = _pad_constant(x, 0, widths=widths)
    shape = abstractify(x).shape
    for axis, width in enumerate(widths):
        moved = moveaxis(x, axis, -1)
        flat = lax.reshape(moved, (math.prod(shape) // shape[axis], shape[axis]))
        out = vmap(lambda v, width=width, axis=axis: func(v, width, axis, kwargs))(flat)
        if out is None or abstractify(out).shape != abstractify(flat).shape:
            got = "None" if out is None else f"shape {abstractify(out).shape[1:]}"
            raise ValueError(f"kiln.numpy.pad: the mode function must return the padded vector of shape "
                             f"{(shape[axis],)} (arrays are immutable: it cannot pad in place), got {got}")
        x = moveaxis(lax.reshape(out, abstractify(moved).shape), -1, axis)
    return x


def _as_tuples(value):
    """Nested lists as nested tuples: a static option the compiled path can hash."""
    return tuple(map(_as_tuples, value)) if isinstance(value, (list, tuple)) else value


# The padding itself, one compiled program when called eagerly (as JAX's jitted pad): the widths, mode and
# stat_length are static, the array and constant_values operands.
@eager_jit("widths")
def _pad_constant(x, cv, widths: tuple[tuple[int, int], ...]):
    aval = abstractify(x)
    nd = aval.ndim
    if is_array(cv):
        cs = abstractify(cv).shape
        if len(cs) > 2 or builtins.any(c not in (1, t) for c, t in zip(cs[::-1], (2, nd)[::-1])):
            raise ValueError(f"kiln.numpy.pad: constant_values of shape {cs} must be a scalar, a pair or one "
                             f"pair per axis for an array of dimension {nd}")
        cvb = broadcast_to_shape(cv, (nd, 2))
        values = np.empty((nd, 2), object)
        for i in range(nd):
            for j in range(2):
                values[i, j] = lax.reshape(lax.slice(cvb, (i, j), (i + 1, j + 1)), ())
        uniform = cs == ()
    else:
        try:
            values = np.broadcast_to(np.asarray(cv), (nd, 2))
        except ValueError:
            raise ValueError(f"kiln.numpy.pad: constant_values of shape {np.shape(cv)} must be a scalar, a pair "
                             f"or one pair per axis for an array of dimension {nd}") from None
        uniform = bool((values == values.flat[0]).all()) if values.size else True
    if uniform:
        v = cv if is_array(cv) else (values.flat[0] if values.size else 0)
        return lax.pad(x, _scalar_operand(v, aval), [(int(b), int(e), 0) for b, e in widths])
    for ax in range(nd):
        for side in (0, 1):
            if widths[ax][side]:
                cfg = [(0, 0, 0)] * nd
                cfg[ax] = (int(widths[ax][0]), 0, 0) if side == 0 else (0, int(widths[ax][1]), 0)
                x = lax.pad(x, _scalar_operand(values[ax][side], aval), cfg)
    return x


@eager_jit("widths", "mode", "stat_length")
def _pad_from_values(x, widths: tuple[tuple[int, int], ...], mode: str, stat_length):
    nd = abstractify(x).ndim
    for ax in range(nd):
        before, after = int(widths[ax][0]), int(widths[ax][1])
        if not before and not after:
            continue
        n = abstractify(x).shape[ax]
        if n == 0:
            raise ValueError(f"kiln.numpy.pad: can't extend empty axis {ax} using modes other than 'constant' or "
                             "'empty'")
        if mode in ("edge", "reflect", "symmetric", "wrap"):
            table = np.pad(np.arange(n), (before, after), mode=mode)  # static index table of the padded axis
            x = _take_static(x, table, ax)
        else:
            x = _pad_stat(x, ax, before, after, mode, stat_length, nd)
    return x


def _pad_stat(x, ax: int, before: int, after: int, mode: str, stat_length, nd: int):
    from . import reductions as red
    n = abstractify(x).shape[ax]
    if stat_length is None:
        lengths = (n, n)
    else:
        sl = _static_ints("pad", "stat_length", stat_length)
        lengths = tuple(int(v) for v in np.broadcast_to(sl, (nd, 2))[ax])
        if builtins.min(lengths) <= 0:
            raise ValueError(f"kiln.numpy.pad: stat_length must be positive, got {lengths}")
        lengths = tuple(builtins.min(v, n) for v in lengths)
    fn = {"maximum": red.max, "minimum": red.min, "mean": red.mean}[mode]
    dtype = abstractify(x).dtype
    pieces = []
    for side, width, length in ((0, before, lengths[0]), (1, after, lengths[1])):
        if not width:
            pieces.append(None)
            continue
        part = _slice_axis(x, ax, 0, length) if side == 0 else _slice_axis(x, ax, n - length, n)
        stat = fn(part, axis=ax, keepdims=True)
        if mode == "mean" and not dtypes.is_inexact(dtype):
            stat = lax.round(stat, lax.RoundingMethod.TO_NEAREST_EVEN)
        stat = lax.convert_element_type(stat, dtype, weak_type=abstractify(x).weak_type)
        shp = list(abstractify(x).shape)
        shp[ax] = width
        pieces.append(lax.broadcast_in_dim(stat, tuple(shp), tuple(range(nd))))
    parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
    return lax.concatenate(parts, ax)


# ---------------------------------------------------------------------------------------------
# Flips, rolls, rotations, triangles
# ---------------------------------------------------------------------------------------------

@eager_jit("axis")
def flip(m, axis: int | Sequence[int] | None = None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    if key_arrays.any_key(m):
        return key_arrays.rule("flip")(m, axis)
    m = _array("flip", m)
    axes = sorted_axes("flip", axis, abstractify(m).ndim)
    return lax.rev(m, axes)


@eager_jit()
def fliplr(m):
    """Reverse the order of columns (axis 1)."""
    m = _array("fliplr", m)
    if abstractify(m).ndim < 2:
        raise ValueError(f"kiln.numpy.fliplr: the input must be at least 2-D, got shape {abstractify(m).shape}")
    return lax.rev(m, (1,))


@eager_jit()
def flipud(m):
    """Reverse the order of rows (axis 0)."""
    m = _array("flipud", m)
    if abstractify(m).ndim < 1:
        raise ValueError("kiln.numpy.flipud: the input must be at least 1-D")
    return lax.rev(m, (0,))


@eager_jit("axis")
def roll(a, shift, axis: int | Sequence[int] | None = None):
    """Shift elements cyclically along ``axis`` (the flattened array when None). ``shift`` may be traced."""
    a = _array("roll", a)
    aval = abstractify(a)
    if axis is None:
        return lax.reshape(roll(ravel(a), shift, 0), aval.shape)
    axes = canonical_axes("roll", axis, aval.ndim, allow_repeats=True)
    static = _static_ints("roll", "shift", shift) if not is_array(shift) or concrete(shift) is not None else None
    if static is not None:
        try:
            sh, ax = np.broadcast_arrays(static, np.asarray(axes))
        except ValueError:
            raise ValueError(f"kiln.numpy.roll: shift {static.tolist()} and axis {tuple(axes)} must have the same "
                             "length") from None
        totals: dict[int, int] = {}
        for s, x in zip(sh.ravel(), ax.ravel()):
            totals[int(x)] = totals.get(int(x), 0) + int(s)
        for x, s in totals.items():
            n = aval.shape[x]
            if n == 0 or s % n == 0:
                continue
            s %= n
            a = lax.concatenate([_slice_axis(a, x, n - s, n), _slice_axis(a, x, 0, n - s)], x)
        return a
    # Traced shift: slice the array joined to itself at a traced start.
    shift = _array("roll", shift)
    sh_aval = abstractify(shift)
    if sh_aval.dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.roll: shift must be integers, got {sh_aval.dtype.name}")
    shift = lax.convert_element_type(shift, dtypes.int32)
    if sh_aval.ndim == 0:
        shifts = [shift] * len(axes)
    elif sh_aval.ndim == 1 and sh_aval.shape[0] in (1, len(axes)):
        shifts = [lax.reshape(_slice_axis(shift, 0, i if sh_aval.shape[0] > 1 else 0,
                                          (i if sh_aval.shape[0] > 1 else 0) + 1), ()) for i in range(len(axes))]
    else:
        raise ValueError(f"kiln.numpy.roll: shift of shape {sh_aval.shape} and axis {tuple(axes)} must have the "
                         "same length")
    for s, x in zip(shifts, axes):
        n = aval.shape[x]
        if n == 0:
            continue
        s = lax.rem(s, n)
        s = lax.select(lax.lt(s, 0), lax.add(s, n), s)  # in [0, n)
        doubled = lax.concatenate([a, a], x)
        starts: list[Any] = [0] * aval.ndim
        starts[x] = lax.sub(lax.literal(n, dtypes.int32), s)
        a = lax.dynamic_slice(doubled, starts, aval.shape)
    return a


@eager_jit("k", "axes")
def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first axis toward the second)."""
    m = _array("rot90", m)
    nd = abstractify(m).ndim
    k = static_int("rot90", "k", k)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"kiln.numpy.rot90: axes must be two axes, got {axes}")
    a0, a1 = (canonical_axis("rot90", ax, nd) for ax in axes)
    if a0 == a1:
        raise ValueError(f"kiln.numpy.rot90: axes must be different, got {axes}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(m, (a1,)), perm)
    return lax.rev(lax.transpose(m, perm), (a1,))


def _triangle(fname: str, m, k, lower: bool):
    m = _array(fname, m)
    aval = abstractify(m)
    k = static_int(fname, "k", k)
    if aval.ndim < 2:
        raise ValueError(f"kiln.numpy.{fname}: the input must be at least 2-D, got shape {aval.shape}")
    from .creation import _tri_mask
    N, M = aval.shape[-2:]
    mask = _tri_mask(N, M, k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask)
    mask = lax.broadcast_in_dim(mask, aval.shape, (aval.ndim - 2, aval.ndim - 1))
    zero = lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), aval.shape, ())
    return lax.select(mask, m, zero)


@eager_jit("k")
def tril(m, k: int = 0):
    """The lower triangle of the last two axes (at and below the ``k``-th diagonal); zeros elsewhere."""
    return _triangle("tril", m, k, True)


@eager_jit("k")
def triu(m, k: int = 0):
    """The upper triangle of the last two axes (at and above the ``k``-th diagonal); zeros elsewhere."""
    return _triangle("triu", m, k, False)


# ---------------------------------------------------------------------------------------------
# block, trim_zeros
# ---------------------------------------------------------------------------------------------

def _block_depth(arrays, where: str) -> int:
    if isinstance(arrays, tuple):
        raise TypeError(f"kiln.numpy.block: {where} is a tuple; block takes nested lists (tuples are ambiguous)")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"kiln.numpy.block: {where} is an empty list")
    depths = {_block_depth(a, f"{where}[{i}]") for i, a in enumerate(arrays)}
    if len(depths) != 1:
        raise ValueError(f"kiln.numpy.block: the lists in {where} are nested to different depths {sorted(depths)}; "
                         "every leaf must be at the same depth")
    return depths.pop() + 1


def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists are joined along the last
    axis, the next ones along the second-to-last, and so on (blocks get leading 1-dimensions as needed)."""
    depth = _block_depth(arrays, "arrays")
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for y in x:
                collect(y)
        else:
            leaves.append(x)

    collect(arrays)
    check_arraylike("block", *leaves)
    ndim = builtins.max([depth] + [abstractify(x).ndim for x in leaves])

    def build(x, level: int):
        if not isinstance(x, list):
            from .creation import asarray
            x = asarray(x)
            return reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))
        return concatenate([build(y, level + 1) for y in x], axis=level - depth)

    return build(arrays, 0)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``filt`` without its leading (``'f'`` in ``trim``) and trailing (``'b'``) zeros; with ``axis``
    (default: all), the all-zero slices at the edges of those axes. The result's shape depends on the
    values, so they must be concrete (not under ``jit``)."""
    from ..core.errors import ConcretizationTypeError
    from .creation import asarray
    check_arraylike("trim_zeros", filt)
    x = asarray(filt)
    trim = trim.lower() if isinstance(trim, str) else trim
    if not isinstance(trim, str) or not trim or not set(trim) <= {"f", "b"}:
        raise ValueError(f"kiln.numpy.trim_zeros: trim must be a combination of 'f' and 'b', got {trim!r}")
    value = concrete(x) if isinstance(x, Tracer) else x
    if value is None:
        raise ConcretizationTypeError("kiln.numpy.trim_zeros: the result's shape depends on the values, which are "
                                      "not known under jit; call it outside jit")
    v = np.asarray(value)
    nd = v.ndim
    if nd == 0:
        raise ValueError("kiln.numpy.trim_zeros: needs an array of at least one dimension, got a 0-d array")
    axes = range(nd) if axis is None else canonical_axes("trim_zeros", axis, nd)
    nz = np.nonzero(v)
    index = [slice(None)] * nd
    for ax in axes:
        if nz[ax].size == 0:
            index[ax] = slice(0, 0) if trim else slice(None)
            continue
        start = int(nz[ax].min()) if "f" in trim else 0
        stop = int(nz[ax].max()) + 1 if "b" in trim else v.shape[ax]
        index[ax] = slice(start, stop)
    return x[tuple(index)]


ITER_CHUNK = 100  # rows per program when iterating over a concrete array (as JAX's)


def iter_rows(x: Array):
    """``iter(x)`` of a concrete array, as JAX iterates its arrays: at most ``ITER_CHUNK`` rows at a time, each
    chunk a dynamic slice (one program per chunk size, whatever its start) unstacked by one program; not one
    program per row (a program per index would compile anew for every row of a long array)."""
    n = x.shape[0]
    if n <= ITER_CHUNK:
        yield from unstack(x)
        return
    full, tail = divmod(n, ITER_CHUNK)
    for i in range(full):
        yield from unstack(lax.dynamic_slice_in_dim(x, i * ITER_CHUNK, ITER_CHUNK))
    if tail:
        yield from unstack(lax.dynamic_slice_in_dim(x, full * ITER_CHUNK, tail))
