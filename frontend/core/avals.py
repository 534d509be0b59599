"""Abstract values: what tracing knows about an array, ``(shape, dtype, weak_type)``."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import NegativeDimensionError, ShapeError, ShapeTooLargeError  # noqa: F401  (ShapeError: re-exported)

_SHORT_NAMES = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype_name(dtype: np.dtype) -> str:
    """``f32``, ``i32``, ``bf16``... as kiln IR prints them (``i4``, ``f8_e4m3fn``... for ml_dtypes' narrow
    types, as JAX prints them)."""
    name = np.dtype(dtype).name
    short = _SHORT_NAMES.get(name)
    if short is None:
        short = name.replace("float", "f").replace("uint", "u").replace("int", "i")
    return short


# XLA computes an array's byte size as itemsize * d0 * d1 * ... in int64, left to right, and rejects (by
# aborting the process, in the shape constructor its compiler calls) a shape where any partial product
# overflows (ShapeUtil::MakeValidatedShape), even when a later dimension is 0.
INT64_MAX = 2 ** 63 - 1
# ShapedArray checks the exact XLA rule only for shapes with no element, a negative dimension (a negative
# product), or at least this many elements: ordinary shapes pay one math.prod and one min.
_CHECK_FROM = 2 ** 40


def check_shape(shape: tuple[int, ...], dtype: np.dtype, where: str = "kiln") -> None:
    """Raise :class:`ShapeTooLargeError` (or :class:`NegativeDimensionError`) if XLA cannot represent
    an array of ``shape`` and ``dtype``."""
    for axis, d in enumerate(shape):
        if d < 0:
            raise NegativeDimensionError(f"{where}: the shape {shape} has a negative dimension ({d} at axis {axis}); "
                             "dimensions must be non-negative")
    itemsize = max(np.dtype(dtype).itemsize, 1)  # float0 (0 bytes) is stored as one byte per element
    nbytes = itemsize
    for axis, d in enumerate(shape):
        nbytes *= d
        if nbytes <= INT64_MAX and d <= INT64_MAX:
            continue
        what = f"{where}: XLA cannot represent an array of shape {shape} and dtype {np.dtype(dtype).name}"
        limit = f"XLA's limit for one array is 2**63 - 1 = {INT64_MAX} bytes (its sizes are int64)"
        elements = math.prod(shape)
        if d > INT64_MAX:
            raise ShapeTooLargeError(f"{what}: dimension {d} at axis {axis} is larger than 2**63 - 1, the largest "
                             "dimension XLA accepts. Check how the shape was computed.")
        if elements:
            raise ShapeTooLargeError(f"{what}: it would take {elements * itemsize} bytes ({elements} elements of "
                             f"{itemsize} byte{'s' if itemsize > 1 else ''}, {_pow2(elements * itemsize)} "
                             f"bytes), and {limit}. Check how the shape was computed.")
        raise ShapeTooLargeError(f"{what}: although it has no element (a dimension is 0), its dimensions up to axis "
                         f"{axis} already make {nbytes} bytes ({_pow2(nbytes)}), and XLA computes sizes "
                         f"left to right; {limit}. Check how the shape was computed.")


def _pow2(n: int) -> str:
    return f"about 2**{math.log2(n):.1f}"


class ManualAxisType:
    """JAX's ``aval.manual_axis_type``: the mesh axes a value inside a ``shard_map`` varies along (``varying``;
    kiln has no ``unreduced``/``reduced`` values: always empty)."""
    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()) -> None:
        self.varying, self.unreduced, self.reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)

    def __eq__(self, other) -> bool:
        return isinstance(other, ManualAxisType) and (self.varying, self.unreduced, self.reduced) == (
            other.varying, other.unreduced, other.reduced)

    def __hash__(self) -> int:
        return hash((self.varying, self.unreduced, self.reduced))

    def __repr__(self) -> str:
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")


NO_MANUAL_AXES = ManualAxisType()


class ShapedArray:
    """The abstract value of an array: its shape, dtype and whether its dtype is weak.

    A weak type comes from a Python scalar: ``x * 2`` keeps ``x``'s dtype because ``2`` is weak.
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, weak_type: bool = False):
        self.shape = shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        if shape and (not 0 < math.prod(shape) < _CHECK_FROM or min(shape) < 0):
            check_shape(shape, self.dtype)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strengthen(self) -> ShapedArray:
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return self._hash

    manual_axis_type = NO_MANUAL_AXES  # outside a shard_map body nothing varies along mesh axes

    @property
    def sharding(self):
        # JAX's avals carry a sharding (sharding in types, e.g. docs/parallel.md's `jax.typeof(x).sharding`); kiln's
        # do not. Say so and where the layout can be read instead of Python's bare "no attribute" (an
        # AttributeError still, so that getattr(aval, "sharding", None) and hasattr keep working).
        raise AttributeError(
            "kiln.typeof(x).sharding: kiln's types carry no sharding (its mesh axes all behave as AxisType.Auto, so "
            "there is no sharding in types; README 'Differences from JAX'). Outside jit read the array's layout "
            "with x.sharding; inside jit, kiln.debug.inspect_array_sharding(x, callback=print) reports the layout "
            "the compiler chose")

    @property
    def mat(self):
        return self.manual_axis_type

    def _varying_suffix(self) -> str:
        return ""

    def __str__(self) -> str:
        """``float32[2,3]``, as JAX prints an aval (``~float32[]`` when weakly typed; inside a shard_map body:
        ``float32[2,3]{V:i}``)."""
        return f"{'~' if self.weak_type else ''}{self._long_text()}"

    def _long_text(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]{self._varying_suffix()}"

    def str_short(self) -> str:
        """``f32[2,3]`` — the form the IR printer uses."""
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self._long_text()}{weak})"  # long dtype names, as JAX's: ShapedArray(float32[3])




class ManualShapedArray(ShapedArray):
    """A ``ShapedArray`` seen inside a ``shard_map`` body (what ``kiln.typeof`` returns there): it also says
    which mesh axes the value varies along, printed as JAX's ``float32[3]{V:i}``. Equal to the plain aval."""
    __slots__ = ("manual_axis_type", "_axis_order")

    def __init__(self, aval: ShapedArray, varying: frozenset, axis_order: tuple[str, ...]) -> None:
        super().__init__(aval.shape, aval.dtype, aval.weak_type)
        self.manual_axis_type = ManualAxisType(varying=varying)
        self._axis_order = axis_order

    def _varying_suffix(self) -> str:
        names = [a for a in self._axis_order if a in self.manual_axis_type.varying]
        if not names:
            return ""
        return "{V:" + (names[0] if len(names) == 1 else "(" + ",".join(names) + ")") + "}"


class ShapeDtypeStruct:
    """A shape and dtype standing for an array that does not exist (``jax.ShapeDtypeStruct``): what
    :func:`kiln.eval_shape` returns, and what ``eval_shape``, ``jit(f).lower`` / ``.trace`` and
    ``linear_transpose`` accept in place of an array."""

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False):
        try:
            self.shape = tuple(int(d) for d in shape)
        except TypeError:
            raise TypeError(f"kiln.ShapeDtypeStruct: shape must be a sequence of ints, got {shape!r}") from None
        if dtype is None:
            raise TypeError("kiln.ShapeDtypeStruct: dtype must be given (e.g. 'float32')")
        self.dtype = dtype if hasattr(dtype, "impl") else np.dtype(dtype)  # a PRNG key dtype stays as it is
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    def update(self, **kwargs: Any) -> ShapeDtypeStruct:
        """A copy with some of ``shape``, ``dtype``, ``sharding`` and ``weak_type`` replaced (as JAX's)."""
        unknown = set(kwargs) - {"shape", "dtype", "sharding", "weak_type"}
        if unknown:
            raise TypeError(f"kiln.ShapeDtypeStruct.update: unexpected keyword argument {sorted(unknown)[0]!r}; it "
                            "takes shape, dtype, sharding and weak_type")
        return ShapeDtypeStruct(kwargs.get("shape", self.shape), kwargs.get("dtype", self.dtype),
                                sharding=kwargs.get("sharding", self.sharding),
                                weak_type=kwargs.get("weak_type", self.weak_type))

    @classmethod
    def like(cls, x) -> ShapeDtypeStruct:
        """The shape and dtype of ``x`` (an array, a traced value, a ShapeDtypeStruct or a scalar), with its
        sharding when it is committed to one and its weak type (as ``jax.ShapeDtypeStruct.like``)."""
        from .dtypes import dtype_of_value
        aval = getattr(x, "aval", None)
        if isinstance(aval, ShapedArray):
            shape, dtype, weak = aval.shape, aval.dtype, aval.weak_type
        elif hasattr(x, "shape") and hasattr(x, "dtype"):
            shape, dtype, weak = x.shape, x.dtype, bool(getattr(x, "weak_type", False))
        else:
            try:
                dtype, weak = dtype_of_value(x)
            except TypeError:
                raise TypeError(f"kiln.ShapeDtypeStruct.like: expected an array or a scalar, got "
                                f"{type(x).__name__}") from None
            shape = np.shape(x)
        sharding = getattr(x, "sharding", None) if getattr(x, "_committed", True) else None
        return cls(shape, dtype, sharding=sharding, weak_type=weak)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def aval(self) -> ShapedArray:
        """The abstract value kiln traces with (the dtype canonicalized for the x64 setting)."""
        from .dtypes import canonicalize_dtype
        return ShapedArray(self.shape, canonicalize_dtype(self.dtype), self.weak_type)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape and self.dtype == other.dtype
                and self.sharding == other.sharding and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        sharding = "" if self.sharding is None else f", sharding={self.sharding!r}"
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={getattr(self.dtype, 'name', self.dtype)}{sharding}{weak})"
