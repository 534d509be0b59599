"""JAX's ``jax.experimental.layout``: ``Layout`` (the order of an array's dimensions in memory, XLA's tiling),
``Format`` (a layout with a sharding) and ``with_layout_constraint``.

kiln places every array in XLA's default layout (row-major: ``major_to_minor == (0, 1, ..., ndim - 1)``, no
tiling) and compiles programs for it. So the default layout and ``Layout.AUTO`` (the compiler's choice, which
for kiln is always the default) are accepted wherever JAX accepts them, and a custom layout raises
``NotImplementedError``. :func:`array_format` is an array's format (``x.format`` in JAX) and :func:`resolve_format`
turns a ``Format`` given as a placement into its sharding, for ``jit``'s ``in_shardings``/``out_shardings`` and
``device_put``.
"""
from __future__ import annotations

from typing import Any

from ..core import tree_util
from ..core.tracing import abstractify
from .sharding import Sharding


class AutoLayout:
    """``Layout.AUTO``: let the compiler choose the layout (for kiln: the default layout)."""

    def __repr__(self) -> str:
        return "AUTO"


class Layout:
    """The order of an array's dimensions in memory, major to minor, with XLA's ``tiling`` (None: untiled) and
    the bit width of sub-byte elements (0: the dtype's own). Compared by value."""

    AUTO = AutoLayout()

    def __init__(self, major_to_minor: tuple[int, ...], tiling: tuple[tuple[int, ...], ...] | None = None,
                 sub_byte_element_size_in_bits: int = 0) -> None:
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def update(self, **kwargs: Any) -> Layout:
        """A copy with some of ``major_to_minor``, ``tiling``, ``sub_byte_element_size_in_bits`` replaced."""
        fields = {"major_to_minor": self.major_to_minor, "tiling": self.tiling,
                  "sub_byte_element_size_in_bits": self.sub_byte_element_size_in_bits}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"kiln.experimental.layout.Layout.update: unknown fields {sorted(unknown)}; the fields "
                            f"are {sorted(fields)}")
        return Layout(**{**fields, **kwargs})

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        """Raise ``ValueError`` unless the layout is for arrays of ``aval_shape``'s rank."""
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError(f"Length of major_to_minor and the rank of the value should match. Got "
                             f"major_to_minor={self.major_to_minor} and shape={tuple(aval_shape)}")

    def _key(self) -> tuple:
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")


def default_layout(ndim: int) -> Layout:
    """XLA's default layout of an ``ndim``-d array, the one kiln uses (row-major, untiled: tiling ``()`` as XLA
    reports it for CPU and GPU arrays)."""
    return Layout(tuple(range(ndim)), ())


def is_default(layout: Layout, ndim: int) -> bool:
    """Whether ``layout`` is the default layout of ``ndim``-d arrays (an untiled one given as None or ``()``)."""
    return (layout.major_to_minor == tuple(range(ndim)) and not layout.tiling
            and layout.sub_byte_element_size_in_bits == 0)


def unsupported_layout(layout: Layout, where: str) -> NotImplementedError:
    return NotImplementedError(
        f"{where}: the layout {layout} is not XLA's default layout, and kiln places arrays and compiles programs "
        "in the default layout only (row-major: major_to_minor=(0, 1, ..., ndim - 1), no tiling). Leave the "
        "layout out (None), or pass Layout.AUTO or the default layout; the values are the same in every layout.")


class Format:
    """A layout (None: the default, ``Layout.AUTO``: the compiler's choice, or a :class:`Layout`, which needs a
    concrete sharding) with a sharding (None or a ``kiln.sharding`` Sharding)."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout: Layout | AutoLayout | None = None, sharding: Sharding | None = None) -> None:
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
                             "kiln.sharding.NamedSharding or kiln.sharding.SingleDeviceSharding to the sharding "
                             f"argument. Got sharding {sharding}")
        if not isinstance(layout, (Layout, AutoLayout, type(None))):
            raise TypeError("Invalid value received for the layout argument. Expected values are `None`, "
                            f"`Layout.AUTO` or an instance of `Layout`. Got {layout} of type {type(layout)}")
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError("Invalid value received for the sharding argument. Expected values are `None` or an "
                            f"instance of kiln.sharding.Sharding. Got {sharding} of type {type(sharding)}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)

    def __hash__(self) -> int:
        return hash((self.layout, self.sharding))

    def __repr__(self) -> str:
        return f"Format(layout={self.layout}, sharding={self.sharding})"


def formats_of(shardings: list, avals: list) -> list[Format]:
    """The formats of values of ``avals`` laid out by ``shardings`` (the default layout of each one's rank): what
    a compiled program's ``input_formats``/``output_formats`` list."""
    return [Format(default_layout(len(a.shape)), s) for s, a in zip(shardings, avals)]


def array_format(x: Any) -> Format:
    """The format of a kiln array (JAX's ``x.format``): the default layout of its rank, and its sharding."""
    return Format(default_layout(len(x.shape)), x.sharding)


def resolve_format(placement: Any, ndim: int | None, where: str) -> Any:
    """A placement with a :class:`Format` replaced by its sharding (other placements are returned as they are),
    after checking that its layout is one kiln uses: None, ``Layout.AUTO`` or the default layout of ``ndim``-d
    arrays (any rank when ``ndim`` is None); a custom layout raises ``NotImplementedError``."""
    if not isinstance(placement, Format):
        return placement
    layout = placement.layout
    if isinstance(layout, Layout) and not (is_default(layout, len(layout.major_to_minor) if ndim is None else ndim)):
        raise unsupported_layout(layout, where)
    return placement.sharding


def with_layout_constraint(x: Any, layouts: Any) -> Any:
    """``x`` (a pytree of arrays) constrained to ``layouts`` (one :class:`Layout` or a pytree prefix of ``x`` of
    them). The default layout is what kiln uses anyway, so ``x`` is returned as it is, eagerly and under
    ``jit``, ``grad`` and ``vmap``; any other layout raises ``NotImplementedError``."""
    where = "kiln.experimental.layout.with_layout_constraint"
    leaves, treedef = tree_util.tree_flatten(x)
    targets, target_tree = tree_util.tree_flatten(layouts, is_leaf=lambda v: v is None)
    try:
        parts = tree_util.flatten_prefix(target_tree, x)
    except ValueError as e:
        raise ValueError(f"{where}: layouts is not a pytree prefix of x ({treedef}): {e}") from None
    per_leaf = [t for part, t in zip(parts, targets) for _ in tree_util.tree_leaves(part)]
    if any(not isinstance(t, Layout) for t in per_leaf):
        raise ValueError(f"layouts passed to `with_layout_constraint` must be of type `Layout`. Got "
                         f"{[type(t) for t in per_leaf]} ({where}: give a Layout, e.g. Layout((0, 1)) for a matrix)")
    for leaf, layout in zip(leaves, per_leaf):
        shape = abstractify(leaf).shape
        layout.check_compatible_aval(shape)
        if not is_default(layout, len(shape)):
            raise unsupported_layout(layout, where)
    return x
