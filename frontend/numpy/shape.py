"""Shape manipulation: reshape, ravel, transpose, swapaxes, squeeze, expand_dims, broadcast_to,
concatenate, stack."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import lax
from ..tracing import abstractify
from ._util import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    check_arraylike,
    promote_dtypes,
    static_int,
)


def _array(fname: str, x):
    check_arraylike(fname, x)
    (x,) = promote_dtypes(fname, x)
    from ..tracing import materialize
    return materialize(x)


def reshape(a, shape=None, order: str = "C", *, newshape=None):
    """Reshape ``a``; one dimension may be -1 (inferred). ``order='F'`` reshapes column-major."""
    a = _array("reshape", a)
    if shape is None:
        shape = newshape
    aval = abstractify(a)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [static_int("reshape", "each dimension of the new shape", d) for d in shape]
    if shape.count(-1) > 1:
        raise ValueError(f"kiln.numpy.reshape: can only specify one unknown dimension (-1), got {tuple(shape)}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or aval.size % known:
            raise ValueError(f"kiln.numpy.reshape: cannot reshape array of size {aval.size} into shape "
                             f"{tuple(shape)}")
        shape[shape.index(-1)] = aval.size // known
    shape = tuple(shape)
    if int(np.prod(shape, dtype=np.int64)) != aval.size or any(d < 0 for d in shape):
        raise ValueError(f"kiln.numpy.reshape: cannot reshape array of size {aval.size} (shape {aval.shape}) "
                         f"into shape {shape}")
    if order == "F":
        a = lax.transpose(a, tuple(reversed(range(aval.ndim))))
        out = lax.reshape(a, tuple(reversed(shape)))
        return lax.transpose(out, tuple(reversed(range(len(shape)))))
    if order != "C":
        raise ValueError(f"kiln.numpy.reshape: order must be 'C' or 'F', got {order!r}")
    return lax.reshape(a, shape)


def ravel(a, order: str = "C"):
    """The flattened array."""
    a = _array("ravel", a)
    return reshape(a, (abstractify(a).size,), order=order)


def transpose(a, axes: Sequence[int] | None = None):
    """Permute axes (reverse them by default)."""
    a = _array("transpose", a)
    ndim = abstractify(a).ndim
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    axes = tuple(canonical_axis("transpose", ax, ndim) for ax in axes)
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"kiln.numpy.transpose: axes {axes} are not a permutation of the {ndim} axes")
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    return transpose(a, axes)


def swapaxes(a, axis1: int, axis2: int):
    """Swap two axes."""
    a = _array("swapaxes", a)
    ndim = abstractify(a).ndim
    perm = list(range(ndim))
    i, j = canonical_axis("swapaxes", axis1, ndim), canonical_axis("swapaxes", axis2, ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a, source, destination):
    """Move axes to new positions, keeping the order of the others."""
    a = _array("moveaxis", a)
    ndim = abstractify(a).ndim
    src = [canonical_axis("moveaxis", s, ndim) for s in ((source,) if isinstance(source, int) else source)]
    dst = [canonical_axis("moveaxis", d, ndim) for d in ((destination,) if isinstance(destination, int)
                                                          else destination)]
    if len(src) != len(dst):
        raise ValueError("kiln.numpy.moveaxis: source and destination need the same number of axes")
    order = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def squeeze(a, axis: int | Sequence[int] | None = None):
    """Remove axes of length one."""
    a = _array("squeeze", a)
    shape = abstractify(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = canonical_axes("squeeze", axis, len(shape))
        bad = [ax for ax in axes if shape[ax] != 1]
        if bad:
            raise ValueError(f"kiln.numpy.squeeze: cannot select an axis to squeeze out which has size not "
                             f"equal to one (axis {bad[0]} of shape {shape})")
    return lax.reshape(a, tuple(d for i, d in enumerate(shape) if i not in axes))


def expand_dims(a, axis: int | Sequence[int]):
    """Insert axes of length one at ``axis``."""
    a = _array("expand_dims", a)
    shape = list(abstractify(a).shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = len(shape) + len(axes)
    for ax in sorted(canonical_axis("expand_dims", x, out_ndim) for x in axes):
        shape.insert(ax, 1)
    return lax.reshape(a, tuple(shape))


def broadcast_to(a, shape):
    """Broadcast ``a`` to ``shape`` (NumPy rules)."""
    a = _array("broadcast_to", a)
    shape = tuple(int(d) for d in ((shape,) if isinstance(shape, int) else shape))
    src = abstractify(a).shape
    if broadcast_shapes("broadcast_to", src, shape) != shape:
        raise ValueError(f"kiln.numpy.broadcast_to: cannot broadcast shape {src} to {shape}")
    return broadcast_to_shape(a, shape)


def broadcast_arrays(*args):
    args = [_array("broadcast_arrays", a) for a in args]
    shape = broadcast_shapes("broadcast_arrays", *[abstractify(a).shape for a in args])
    return [broadcast_to_shape(a, shape) for a in args]


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first)."""
    arrays = list(arrays)
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
        raise ValueError(f"kiln.numpy.concatenate: all arrays must have the same number of dimensions, got "
                         f"shapes {shapes}")
    ndim = ndims.pop()
    if ndim == 0:
        raise ValueError("kiln.numpy.concatenate: zero-dimensional arrays cannot be concatenated")
    axis = canonical_axis("concatenate", axis, ndim)
    from ..tracing import materialize
    return lax.concatenate([materialize(a) for a in arrays], axis)


def stack(arrays: Sequence[Any], axis: int = 0, dtype=None):
    """Join arrays along a new axis."""
    arrays = list(arrays)
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
