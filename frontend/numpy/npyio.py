"""Reading and writing arrays, as JAX has them: ``save``/``savez`` are NumPy's own (they accept kiln
arrays through ``__array__``); ``load``, ``frombuffer`` and ``fromstring`` parse with NumPy on the
host and return kiln arrays; ``fromfile``/``fromiter`` are deliberately not provided (they consume
a file or an iterator, a side effect that does not belong in traced code), as in JAX."""
from __future__ import annotations

import os
from typing import IO, Any

import ml_dtypes
import numpy as np

from .creation import asarray

__all__ = ["frombuffer", "fromfile", "fromiter", "fromstring", "load", "save", "savez"]

save = np.save
savez = np.savez


def load(file: IO[bytes] | str | os.PathLike[Any], *args: Any, **kwargs: Any) -> Any:
    """An array saved with ``save`` (``numpy.load``'s arguments), as a kiln array; bfloat16 data, which
    NumPy writes as 2-byte void, comes back as bfloat16. ``.npz`` archives come back as NumPy's lazy
    mapping of NumPy arrays, and dtypes kiln does not support stay NumPy arrays."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):
            out = out.view(ml_dtypes.bfloat16)
        try:
            return asarray(out)
        except TypeError:  # a dtype kiln does not support (strings, objects, ...)
            return out
    return out


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """A 1-D kiln array of the data in ``buffer`` (bytes or any buffer-protocol object) read as
    ``dtype`` (64-bit types become 32-bit unless x64 is enabled)."""
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """A 1-D kiln array of the numbers in the text ``string``, separated by ``sep``."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: use ``kiln.numpy.asarray(numpy.fromfile(...))`` outside traced code."""
    raise NotImplementedError("kiln.numpy.fromfile is not provided (as in JAX): reading a file is a side effect that "
                              "jit would run once, at trace time. Use kiln.numpy.asarray(numpy.fromfile(...)) outside "
                              "jitted functions.")


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: use ``kiln.numpy.asarray(numpy.fromiter(...))`` outside traced code."""
    raise NotImplementedError("kiln.numpy.fromiter is not provided (as in JAX): consuming an iterator is a side "
                              "effect that jit would run once, at trace time. Use "
                              "kiln.numpy.asarray(numpy.fromiter(...)) outside jitted functions.")
