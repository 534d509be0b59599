"""kiln.numpy's dtype surface: scalar types (``knp.float32``...), abstract types, and the dtype
functions (``dtype``, ``finfo``, ``iinfo``, ``result_type``, ``promote_types``, ``can_cast``,
``issubdtype``, ``isdtype``).

``knp.float32`` is a class (as JAX's): calling it makes a 0-d kiln array (``knp.float32(1)``) or
converts an array (``knp.int8(x)``), and it stands for its dtype wherever a dtype is accepted,
because it carries a ``dtype`` attribute, which ``numpy.dtype`` honours:
``np.dtype(knp.float32) == np.float32`` and ``x.dtype == knp.float32``.
"""
from __future__ import annotations

import builtins
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.tracing import abstractify

__all__ = [
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
    "int1", "int2", "int4", "uint1", "uint2", "uint4",
    "int_", "uint", "half", "single", "double", "csingle", "cdouble",
    "generic", "number", "inexact", "floating", "complexfloating", "integer", "signedinteger",
    "unsignedinteger", "complex_", "float_", "object_", "character", "flexible",
    "dtype", "finfo", "iinfo", "result_type", "promote_types", "can_cast", "issubdtype", "isdtype",
]


class _ScalarMeta(type):
    """Metaclass of kiln's scalar types: callable like a NumPy scalar type, usable as a dtype."""

    dtype: np.dtype

    def __call__(cls, x: Any = 0, /) -> Any:
        from .creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other: Any) -> builtins.bool:
        return cls is other or (not isinstance(other, _ScalarMeta) and cls.dtype.type == other)

    def __ne__(cls, other: Any) -> builtins.bool:
        return not _ScalarMeta.__eq__(cls, other)

    __hash__ = type.__hash__

    def __instancecheck__(cls, instance: Any) -> builtins.bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'kiln.numpy.{cls.__name__}'>"


def _scalar_type(name: str, dt: np.dtype) -> _ScalarMeta:
    doc = (f"kiln's {dt.name} scalar type: ``{name}(x)`` is a 0-d (or converted) kiln array of dtype "
           f"{dt.name}; ``{name}`` itself is accepted wherever a dtype is.")
    return _ScalarMeta(name, (), {"dtype": np.dtype(dt), "__doc__": doc, "__module__": "kiln.numpy"})


bool_ = _scalar_type("bool_", dtypes.bool_)
bool = bool_  # noqa: A001 - NumPy 2's name
int8 = _scalar_type("int8", dtypes.int8)
int16 = _scalar_type("int16", dtypes.int16)
int32 = _scalar_type("int32", dtypes.int32)
int64 = _scalar_type("int64", dtypes.int64)
uint8 = _scalar_type("uint8", dtypes.uint8)
uint16 = _scalar_type("uint16", dtypes.uint16)
uint32 = _scalar_type("uint32", dtypes.uint32)
uint64 = _scalar_type("uint64", dtypes.uint64)
float16 = _scalar_type("float16", dtypes.float16)
bfloat16 = _scalar_type("bfloat16", dtypes.bfloat16)
float32 = _scalar_type("float32", dtypes.float32)
float64 = _scalar_type("float64", dtypes.float64)
complex64 = _scalar_type("complex64", dtypes.complex64)
complex128 = _scalar_type("complex128", dtypes.complex128)
# The narrow types of ml_dtypes: 8-, 6- and 4-bit floats, 1-, 2- and 4-bit integers.
float8_e3m4 = _scalar_type("float8_e3m4", dtypes.float8_e3m4)
float8_e4m3 = _scalar_type("float8_e4m3", dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type("float8_e4m3fn", dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type("float8_e5m2", dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", dtypes.float8_e8m0fnu)
float6_e2m3fn = _scalar_type("float6_e2m3fn", dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", dtypes.float6_e3m2fn)
float4_e2m1fn = _scalar_type("float4_e2m1fn", dtypes.float4_e2m1fn)
int1 = _scalar_type("int1", dtypes.int1)
int2 = _scalar_type("int2", dtypes.int2)
int4 = _scalar_type("int4", dtypes.int4)
uint1 = _scalar_type("uint1", dtypes.uint1)
uint2 = _scalar_type("uint2", dtypes.uint2)
uint4 = _scalar_type("uint4", dtypes.uint4)
# NumPy's aliases (64-bit ones become 32-bit unless enable_x64 is on, as every dtype does).
int_, uint = int64, uint64
half, single, double = float16, float32, float64
csingle, cdouble = complex64, complex128
# NumPy 1's names, kept by JAX: the 64-bit types (32-bit unless enable_x64 is on).
complex_, float_ = complex128, float64

# Abstract types of the hierarchy, for issubdtype: NumPy's own (bfloat16 and the narrow floats count
# as floating, int1..int4 as signed and uint1..uint4 as unsigned integers).
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
# NumPy's types of non-numeric data, for issubdtype checks only (as in JAX, which re-exports them):
# kiln arrays never have these dtypes.
object_ = np.object_
character = np.character
flexible = np.flexible

dtype = np.dtype
finfo = dtypes.finfo
iinfo = dtypes.iinfo


def result_type(*args: Any) -> np.dtype:
    """The dtype JAX's promotion rules give to an operation on ``args`` (arrays, scalars, dtypes)."""
    return dtypes.result_type(*args)


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype to which a binary operation casts dtypes ``a`` and ``b`` (JAX's lattice)."""
    return dtypes.promote_types(a, b)


def issubdtype(arg1: Any, arg2: Any) -> builtins.bool:
    """Whether dtype ``arg1`` is ``arg2`` or below it in the type hierarchy (bfloat16 is floating)."""
    return dtypes.issubdtype(arg1, arg2)


_CASTING = ("no", "equiv", "safe", "same_kind", "unsafe")


def _dtype_arg(fname: str, x: Any) -> np.dtype:
    if isinstance(x, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        raise TypeError(f"kiln.numpy.{fname}: got the Python scalar {x!r}; pass a dtype or an array "
                        "(NumPy 2 no longer accepts Python scalars here)")
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if not isinstance(x, (type, np.dtype, str)) and hasattr(x, "aval"):
        return abstractify(x).dtype
    if not isinstance(x, Hashable):
        raise TypeError(f"kiln.numpy.{fname}: expected a dtype or an array, got {type(x).__name__} {x!r:.40}")
    return dtypes._to_supported_dtype(x)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> builtins.bool:
    """Whether a cast from ``from_`` (a dtype or an array) to dtype ``to`` is allowed by ``casting``
    (``'no'``, ``'equiv'``, ``'safe'``, ``'same_kind'`` or ``'unsafe'``), as ``numpy.can_cast``."""
    if casting not in _CASTING:
        raise ValueError(f"kiln.numpy.can_cast: casting must be one of {', '.join(map(repr, _CASTING))}, "
                         f"got {casting!r}")
    return builtins.bool(np.can_cast(_dtype_arg("can_cast", from_), _dtype_arg("can_cast", to), casting))


# The kind names of the array API standard (isdtype, __array_namespace_info__().dtypes).
DTYPE_KINDS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": dtypes.is_signed,
    "unsigned integer": dtypes.is_unsigned,
    "integral": dtypes.is_int,
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda d: d != np.bool_,
}


def isdtype(dtype: Any, kind: Any) -> builtins.bool:  # noqa: A002 - the array API's name
    """Whether ``dtype`` is of ``kind`` (array API): a kind name (``'bool'``, ``'signed integer'``,
    ``'unsigned integer'``, ``'integral'``, ``'real floating'``, ``'complex floating'``,
    ``'numeric'``), a dtype, or a tuple of them."""
    dt = _dtype_arg("isdtype", dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in DTYPE_KINDS:
                raise ValueError(f"kiln.numpy.isdtype: unknown kind {k!r}; expected a dtype or one of "
                                 f"{', '.join(map(repr, DTYPE_KINDS))}")
            if DTYPE_KINDS[k](dt):
                return True
        elif dt == _dtype_arg("isdtype", k):
            return True
    return False
