"""``kiln.flatten_util.ravel_pytree``: a pytree of arrays as one flat 1-D array, and back."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import lax
from .core import dtypes, tree_util
from .core.tracing import abstractify
from .numpy import creation as _creation
from .numpy.shape import concatenate as _concatenate
from .numpy.shape import ravel as _ravel

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: ``flat`` is the 1-D concatenation of every leaf raveled, in the common dtype of
    the leaves (their promoted type), and ``unravel(flat)`` rebuilds the pytree, each leaf in its own
    shape and dtype. ``unravel`` takes a 1-D array of the same length and dtype."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    arrays = [_creation.asarray(x) for x in leaves]
    avals = [abstractify(a) for a in arrays]
    dtype = dtypes.result_type(*arrays) if arrays else dtypes.default_float_dtype()
    sizes = [a.size for a in avals]
    if arrays:
        flat = _concatenate([lax.convert_element_type(_ravel(a), dtype) for a in arrays])
    else:
        flat = _creation.zeros((0,), dtype)
    total = int(np.sum(sizes)) if sizes else 0

    def unravel(arr: Any) -> Any:
        aval = abstractify(arr)
        if aval.shape != (total,):
            raise ValueError(f"kiln.flatten_util.ravel_pytree's unravel: expected a 1-D array of length {total}, "
                             f"got shape {aval.shape}")
        if aval.dtype != dtype:
            raise TypeError(f"kiln.flatten_util.ravel_pytree's unravel: expected an array of dtype {dtype.name} "
                            f"(the raveled dtype), got {aval.dtype.name}; cast it with .astype({dtype.name!r})")
        pieces, start = [], 0
        for a, n in zip(avals, sizes):
            piece = lax.reshape(lax.slice(arr, (start,), (start + n,)), a.shape)
            if a.dtype != dtype:
                if dtypes.is_complex(dtype) and not dtypes.is_complex(a.dtype):
                    piece = lax.real(piece)  # the imaginary part of a real leaf is dropped
                piece = lax.convert_element_type(piece, a.dtype)
            pieces.append(piece)
            start += n
        return tree_util.tree_unflatten(treedef, pieces)
    return flat, unravel
