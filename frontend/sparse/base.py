"""``JAXSparse``, the abstract base class of kiln's sparse arrays, and the sparse efficiency errors and warnings
(as ``jax.experimental.sparse``'s ``_base.py`` and ``util.py``).

A sparse format subclasses :class:`JAXSparse`, stores its leaves as attributes (``data`` first), its ``shape``
as a tuple of ints, and defines ``dtype``, ``nse``, ``tree_flatten``, ``tree_unflatten``, ``transpose`` and
``todense``; the base class supplies ``ndim``, ``size``, ``len``, ``T``, ``repr`` and ``block_until_ready``.

Operators a format does not define behave as if the class had none: binary operators return ``NotImplemented``
(so Python tries the other operand, then raises its ``TypeError: unsupported operand type(s)``) and there is no
``__getitem__``. JAX raises ``NotImplementedError`` there instead; kiln keeps Python's protocol so that a class
which never had these methods (kiln's ``BCOO``) can become a subclass without any change of behaviour.
"""
from __future__ import annotations

import abc
import math
import operator
from typing import Any, Sequence

import numpy as np

from ..core.errors import ConcretizationTypeError, KilnError
from ..core.tracing import Tracer

__all__ = ["CuSparseEfficiencyWarning", "JAXSparse", "SparseEfficiencyError", "SparseEfficiencyWarning"]


class SparseEfficiencyError(KilnError, ValueError):
    """An operation would need a dense intermediate or an unbounded number of stored elements."""


class SparseEfficiencyWarning(UserWarning):
    """An operation falls back to a less efficient implementation."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """A cuSPARSE/hipSPARSE kernel is not available for an operation (JAX's GPU lowerings; kiln has none)."""


def static_int(value: Any, what: str, where: str, hint: str = " Pass a concrete int.") -> int:
    """``value`` as a static non-negative Python int: a traced value gets ConcretizationTypeError (ending with
    ``hint``), anything else that is not an integer a TypeError, a negative one a ValueError, each naming ``what``
    and ``where``."""
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(f"{where}: {what} must be a static Python int, but it is a traced value "
                                      f"(under jit, vmap or grad).{hint}")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{where}: {what} must be a Python int, got {type(value).__name__} {value!r}") from None
    if out < 0:
        raise ValueError(f"{where}: {what} must be non-negative, got {out}")
    return out


def mapped_nse_axis_error(mat: Any, min_index_ndim: int) -> ValueError | None:
    """The error for a sparse array whose index leaves lost their ``nse`` axis, or None when they have it.

    That happens when ``kiln.vmap`` maps ``in_axes=0`` over an array with ``n_batch=0``: vmap maps every leaf, so
    axis 0 of ``data`` and ``indices`` is the entry axis, not a dimension of the array (JAX refuses this too)."""
    indices = mat.indices
    if getattr(indices, "ndim", min_index_ndim) >= min_index_ndim:
        return None
    name = type(mat).__name__
    return ValueError(
        f"{name}: indices of shape {tuple(indices.shape)} have lost their nse axis ({name} of shape {mat.shape}). "
        f"kiln.vmap mapped in_axes=0 over a {name} with n_batch=0, whose axis 0 holds the stored entries: in_axes "
        f"of a {name} must correspond to one of its batch dimensions. Store the mapped axis as a batch dimension "
        f"({name}.fromdense(x, n_batch=1), or sparse.bcoo_update_layout(mat, n_batch=1) for a BCOO), or pass "
        "in_axes=None for this argument")


def canonical_shape(shape: Any, where: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of static non-negative ints."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        entries = tuple(shape)
    except TypeError:
        raise TypeError(f"{where}: shape must be a sequence of ints, got {type(shape).__name__} {shape!r}") from None
    return tuple(static_int(s, "each entry of shape", where) for s in entries)


class JAXSparse(abc.ABC):
    """Base class of kiln's sparse arrays (as ``jax.experimental.sparse.JAXSparse``)."""
    data: Any
    shape: tuple[int, ...]
    # Set by tree_unflatten when the index leaves lost their nse axis (see mapped_nse_axis_error); raised by
    # n_batch, so that rebuilding such an array (tree_map to placeholders, sums) still works.
    _lost_nse_axis: ValueError | None = None

    __hash__ = None  # type: ignore[assignment]
    __array_ufunc__ = None  # NumPy returns NotImplemented for ``ndarray @ sparse``, so the sparse class decides

    def __init__(self, args: tuple, *, shape: Sequence[int]):
        del args  # the subclass stores its leaves
        self.shape = canonical_shape(shape, type(self).__name__)

    # --- layout ------------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def dtype(self) -> np.dtype: ...

    @property
    @abc.abstractmethod
    def nse(self) -> int: ...

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        name = type(self).__name__
        try:
            text = f"{name}({np.dtype(self.dtype).name}{list(self.shape)}, nse={self.nse}{self._repr_extra()})"
        except Exception:  # rebuilt around non-array leaves (tree_map placeholders)
            text = f"{name}(<invalid>)"
        if isinstance(getattr(self, "data", None), Tracer):
            text = f"{type(self.data).__name__}[{text}]"
        return text

    def _repr_extra(self) -> str:
        """What a format adds to its repr after ``nse`` (e.g. BCSR's ``, n_batch=1``)."""
        return ""

    # --- pytree and conversion -----------------------------------------------------------------------
    @abc.abstractmethod
    def tree_flatten(self): ...

    @classmethod
    @abc.abstractmethod
    def tree_unflatten(cls, aux_data, children): ...

    @abc.abstractmethod
    def transpose(self, axes: Any = None) -> JAXSparse: ...

    @abc.abstractmethod
    def todense(self) -> Any: ...

    @property
    def T(self) -> JAXSparse:
        return self.transpose()

    def block_until_ready(self) -> JAXSparse:
        for leaf in self.tree_flatten()[0]:
            leaf.block_until_ready()
        return self

    # --- what JAX's base class refuses (binary operators: see the module docstring) -------------------
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.sum is not implemented; use .todense().sum()")

    def __neg__(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.__neg__ is not implemented; use -x.todense()")

    def __pos__(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.__pos__ is not implemented; use +x.todense()")
