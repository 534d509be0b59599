"""The Python array API standard's metadata for ``kiln.numpy`` (https://data-apis.org/array-api/).

``kiln.numpy`` is the namespace: ``x.__array_namespace__()`` returns it, ``__array_api_version__`` says
which revision of the standard it follows, and ``__array_namespace_info__()`` describes its devices,
dtypes and capabilities, as ``jax.numpy``'s do.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import config as _config
from ..core import dtypes
from ..driver import placement
from .dtype_api import DTYPE_KINDS

__array_api_version__ = "2024.12"

# The standard's dtypes; the 64-bit ones exist only with ``enable_x64`` (kiln's default is 32-bit, as JAX's).
_NARROW = ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64")
_WIDE = ("int64", "uint64", "float64", "complex128")


class ArrayNamespaceInfo:
    """What ``kiln.numpy.__array_namespace_info__()`` returns: the namespace's devices, dtypes and
    capabilities. Devices do not change the answers: every kiln backend has the same dtypes."""

    def capabilities(self) -> dict[str, Any]:
        # Inside jit, shapes are static: a boolean mask index or nonzero() without a size has no shape.
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> None:
        """``None``: arrays made without a device are uncommitted, placed where their computation runs."""
        return None

    def devices(self) -> list[Any]:
        """``None`` (uncommitted) followed by every device of the default backend."""
        return [None, *placement.devices()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        del device
        return {"real floating": dtypes.default_float_dtype(), "complex floating": dtypes.default_complex_dtype(),
                "integral": dtypes.default_int_dtype(), "indexing": dtypes.default_int_dtype()}

    def dtypes(self, *, device: Any = None, kind: str | tuple[str, ...] | None = None) -> dict[str, np.dtype]:
        """The standard's dtypes kiln has now (the 64-bit ones with ``enable_x64``), by name, of ``kind``
        (a kind name of ``isdtype`` or a tuple of them; ``None``: every numeric dtype and bool)."""
        del device
        names = _NARROW + (_WIDE if _config.config.enable_x64 else ())
        kinds = ("numeric", "bool") if kind is None else kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if k not in DTYPE_KINDS:
                raise ValueError(f"kiln.numpy.__array_namespace_info__().dtypes: unknown kind {k!r}; expected one "
                                 f"of {', '.join(map(repr, DTYPE_KINDS))} or a tuple of them")
        return {n: np.dtype(n) for n in names if any(DTYPE_KINDS[k](np.dtype(n)) for k in kinds)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    return ArrayNamespaceInfo()


# The public module users import (kiln.numpy), which registers itself when it loads: this package is its
# implementation and sits on a lower floor, so it cannot import it.
_public_namespace: Any = None


def register_public_namespace(module: Any) -> None:
    global _public_namespace
    _public_namespace = module


def array_namespace(api_version: str | None = None) -> Any:
    """What ``x.__array_namespace__(api_version=...)`` returns: the ``kiln.numpy`` module."""
    if api_version is not None and api_version != __array_api_version__:
        raise ValueError(f"x.__array_namespace__: api_version={api_version!r} is not available; kiln.numpy "
                         f"implements version {__array_api_version__!r} of the array API standard (pass that "
                         "or None)")
    if _public_namespace is None:
        raise RuntimeError("x.__array_namespace__: kiln.numpy is not loaded; import kiln first")
    return _public_namespace
