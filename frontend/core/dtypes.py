"""kiln's dtypes and JAX's type promotion, including weak types.

The module-level dtype names (``bool_``, ``int8``, ..., ``bfloat16``, ..., ``complex128``) are
:class:`numpy.dtype` *objects* (not scalar types): they compare equal to NumPy's dtypes, hash,
and can be passed anywhere a dtype is accepted. ``bfloat16`` is ``np.dtype(ml_dtypes.bfloat16)``.

Promotion follows JAX's lattice ("Type promotion semantics" in JAX's documentation). Python
scalars are *weakly typed*: they sit on the lattice as the weak nodes ``i*``, ``f*``, ``c*``,
so ``float16_array * 2.0`` stays ``float16`` instead of widening as NumPy would. A result is
weak only when the join of the inputs is a weak node.

With ``enable_x64`` off (the default), 64-bit dtypes canonicalize to their 32-bit counterparts
(``int64 -> int32``, ``uint64 -> uint32``, ``float64 -> float32``, ``complex128 -> complex64``).

The narrow dtypes of ml_dtypes (the 8-, 6- and 4-bit floats ``float8_e4m3fn``, ..., ``float4_e2m1fn``
and the 1-, 2- and 4-bit integers ``int1``..``uint4``) sit on the lattice as in JAX: a weak float
(resp. weak int) promotes to each of them, and nothing else does: two different narrow dtypes, or a
narrow dtype and any other strong dtype, have no implicit promotion (:class:`TypePromotionError`).
Their NumPy ``kind`` is ``'V'`` (as bfloat16's); :func:`kind` gives the kind kiln treats them as.
"""
from __future__ import annotations

import difflib
import functools
import warnings
from typing import Any

import ml_dtypes
import numpy as np

from .config import config
from .errors import IntegerOverflowError, KilnError
from .source_info import user_stacklevel

# The Python scalar types that kiln treats as (weakly typed) array values.
PY_SCALARS = (bool, int, float, complex)

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "canonicalize_dtype", "dtype_of_value", "default_int_dtype", "default_uint_dtype",
    "default_float_dtype", "default_complex_dtype", "to_complex_dtype", "promote_types", "result_type",
    "is_weakly_typed", "issubdtype", "is_float", "is_int", "is_signed", "is_unsigned",
    "is_complex", "is_bool", "is_inexact", "finfo", "iinfo", "short_dtype_name", "kind", "is_narrow",
    "supports_inf", "lowest", "highest",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
    "int1", "int2", "int4", "uint1", "uint2", "uint4", "NARROW_FLOATS", "NARROW_INTS",
]

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

# The narrow dtypes of ml_dtypes (JAX's "custom floats" and sub-byte integers).
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
float6_e2m3fn = np.dtype(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = np.dtype(ml_dtypes.float6_e3m2fn)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)
int1 = np.dtype(ml_dtypes.int1)
int2 = np.dtype(ml_dtypes.int2)
int4 = np.dtype(ml_dtypes.int4)
uint1 = np.dtype(ml_dtypes.uint1)
uint2 = np.dtype(ml_dtypes.uint2)
uint4 = np.dtype(ml_dtypes.uint4)

_FLOAT8 = (float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
           float8_e5m2fnuz, float8_e8m0fnu)
_FLOAT6 = (float6_e2m3fn, float6_e3m2fn)
_FLOAT4 = (float4_e2m1fn,)
NARROW_FLOATS = _FLOAT8 + _FLOAT6 + _FLOAT4
_NARROW_SIGNED = (int1, int2, int4)
_NARROW_UNSIGNED = (uint1, uint2, uint4)
NARROW_INTS = _NARROW_SIGNED + _NARROW_UNSIGNED

_SUPPORTED = (bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
              bfloat16, float16, float32, float64, complex64, complex128, *NARROW_FLOATS, *NARROW_INTS)
_SUPPORTED_SET = frozenset(_SUPPORTED)
_VALID_NAMES = tuple(d.name for d in _SUPPORTED)

_TO_32BIT = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

# The kind of ml_dtypes' types (NumPy says 'V', or 'f' for float8_e5m2) as kiln treats them.
_ML_KINDS = {bfloat16: "f", **{d: "f" for d in NARROW_FLOATS}, **{d: "i" for d in _NARROW_SIGNED},
             **{d: "u" for d in _NARROW_UNSIGNED}}


def kind(dtype: Any) -> str:
    """NumPy's kind letter of a kiln dtype (``'b'``, ``'i'``, ``'u'``, ``'f'``, ``'c'``), with ml_dtypes'
    types put where they belong: bfloat16 and the 8-, 6- and 4-bit floats are ``'f'``, int1/int2/int4
    ``'i'`` and uint1/uint2/uint4 ``'u'`` (NumPy gives most of them ``'V'``)."""
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    return _ML_KINDS.get(dt, dt.kind)


def is_narrow(dtype: Any) -> bool:
    """True for the 8-, 6- and 4-bit floats and the 1-, 2- and 4-bit integers of ml_dtypes."""
    return isinstance(dtype, np.dtype) and (dtype in NARROW_FLOATS or dtype in NARROW_INTS)


# ---------------------------------------------------------------------------------------------
# Canonicalization and default dtypes
# ---------------------------------------------------------------------------------------------

def default_int_dtype() -> np.dtype:
    """The dtype of a Python ``int``: int32, or int64 with ``enable_x64``."""
    return int64 if config.enable_x64 else int32


def default_uint_dtype() -> np.dtype:
    """The default unsigned dtype: uint32, or uint64 with ``enable_x64``."""
    return uint64 if config.enable_x64 else uint32


def default_float_dtype() -> np.dtype:
    """The dtype of a Python ``float``: float32, or float64 with ``enable_x64``."""
    return float64 if config.enable_x64 else float32


def default_complex_dtype() -> np.dtype:
    """The dtype of a Python ``complex``: complex64, or complex128 with ``enable_x64``."""
    return complex128 if config.enable_x64 else complex64


def to_complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype holding ``dtype``'s values: complex128 for float64/complex128, else complex64
    (the dtype of ``eig``'s results and of other real-to-complex decompositions)."""
    return complex128 if np.dtype(dtype) in (float64, complex128) else complex64


class DtypeArgumentError(KilnError, TypeError):
    """A dtype argument kiln cannot use (a misspelt name, an unsupported dtype). The message starts with the
    function the dtype was passed to: ``kiln`` where it is raised, and the entry point's name once that entry
    point re-raises it with :meth:`named` (in its error path only: the success path pays nothing)."""

    def __init__(self, detail: str, where: str = "kiln"):
        super().__init__(f"{where}: {detail}")
        self.detail, self.where = detail, where

    def __reduce__(self):
        return type(self), (self.detail, self.where)

    def named(self, where: str) -> DtypeArgumentError:
        """The same error, reported by ``where`` (``"kiln.numpy.zeros"``)."""
        return DtypeArgumentError(self.detail, where)


@functools.lru_cache(maxsize=512)
def _to_supported_dtype(spec: Any) -> np.dtype:
    """``np.dtype(spec)``, checked against the dtypes kiln supports (x64-independent, cached)."""
    try:
        dt = np.dtype(spec)
        # np.dtype maps any unrelated class to the object dtype; that is a wrong dtype, not
        # a request for object arrays.
        if dt.kind == "O" and isinstance(spec, type) and spec not in (object, np.object_):
            raise TypeError
    except (TypeError, ValueError):
        shown = spec if isinstance(spec, str) else getattr(spec, "__name__", spec)
        hint = ""
        if isinstance(spec, str):
            close = difflib.get_close_matches(spec, _VALID_NAMES, n=1)
            if close:
                hint = f" Did you mean '{close[0]}'?"
        raise DtypeArgumentError(f"invalid dtype {str(shown)!r}.{hint} "
                                 f"Valid dtypes: {', '.join(_VALID_NAMES)}.") from None
    if not dt.isnative:  # big-endian data (from a file, say): the same dtype, in this machine's byte order
        dt = dt.newbyteorder("=")
    if dt not in _SUPPORTED_SET:
        raise DtypeArgumentError(f"dtype '{dt.name}' is not supported; kiln arrays hold numeric "
                                 f"or boolean data only. Valid dtypes: {', '.join(_VALID_NAMES)}.")
    return dt


_WIDE_TYPES = frozenset(np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128))


def check_user_dtype(dtype: Any, where: str | None = None) -> np.dtype:
    """:func:`canonicalize_dtype` of a dtype the user asked for explicitly (a ``dtype=`` argument). With
    ``enable_x64`` off a 64-bit dtype warns that it is truncated, as JAX warns (Python's ``float``, ``int`` and
    ``complex`` ask for the default types, and do not). ``where`` (``"kiln.numpy.sum"``) names the function in
    the message of a dtype kiln cannot use."""
    try:
        out = canonicalize_dtype(dtype)
    except DtypeArgumentError as e:
        if where is None:
            raise
        raise e.named(where) from None
    # (`is`, not `in`: np.dtype("float64") == float, and an explicit np.dtype("float64") warns as in JAX)
    if (not config.enable_x64 and out != dtype and not any(dtype is t for t in (float, int, complex))
            and np.dtype(dtype) in _WIDE_TYPES):
        warnings.warn(f"Explicitly requested dtype {np.dtype(dtype)} is not available, and will be truncated to "
                      f"dtype {out}. To enable more dtypes, set kiln.config.update('jax_enable_x64', True) or the "
                      "KILN_ENABLE_X64 environment variable.", UserWarning, stacklevel=user_stacklevel())
    return out


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> np.dtype:
    """Return the :class:`numpy.dtype` kiln uses for ``dtype`` under the current x64 setting.

    Parameters
    ----------
    dtype : anything :class:`numpy.dtype` accepts (a dtype, a scalar type, a name such as
        ``'float32'`` or ``'bfloat16'``, a Python type such as ``float``).

    Returns
    -------
    numpy.dtype
        With ``enable_x64`` off, 64-bit types map to their 32-bit counterparts, as in JAX.

    Raises
    ------
    TypeError
        For a name or object that is not a dtype, or for a dtype kiln does not support
        (object, string, datetime, ...). The message lists the valid dtypes.
    """
    if _is_extended(dtype):
        if allow_extended_dtype:
            return dtype
        raise DtypeArgumentError(f"dtype {dtype} is an extended dtype (a PRNG key type); pass "
                                 "allow_extended_dtype=True to accept it")
    return _canonicalize(dtype, config.enable_x64)


class extended(np.generic):
    """The abstract scalar type of kiln's extended dtypes (PRNG key dtypes):
    ``issubdtype(keys.dtype, kiln.dtypes.extended)`` is True for typed key arrays."""

    def __new__(cls, *args: Any, **kwargs: Any):
        # (NumPy's own refusal names no way out: say what a scalar of these dtypes is instead)
        raise TypeError(f"cannot create '{cls.__name__}' instances: as in JAX, extended dtypes have no scalar "
                        "objects; a single PRNG key is a 0-d key array (kiln.random.key(seed))")


class prng_key(extended):
    """The abstract scalar type of PRNG key dtypes (``issubdtype(keys.dtype, kiln.dtypes.prng_key)``)."""


def _is_extended(dtype: Any) -> bool:
    """A dtype object whose scalar type is under :class:`extended` (kiln's PRNG key dtype)."""
    t = getattr(dtype, "type", None)
    return not isinstance(dtype, (np.dtype, type)) and isinstance(t, type) and issubclass(t, extended)


def itemsize_bits(dtype: Any) -> int:
    """The size in bits of one element of ``dtype`` (``8 * itemsize``; 0 for float0; the width of the
    type for the narrow dtypes of ml_dtypes: 4 for int4 and float4_e2m1fn, 6 for float6_e2m3fn, ...)."""
    if _is_extended(dtype):
        return 8 * dtype.itemsize
    dt = np.dtype(dtype)
    if dt in _NARROW_SIGNED or dt in _NARROW_UNSIGNED:
        return int(ml_dtypes.iinfo(dt).bits)
    if dt in NARROW_FLOATS:
        return int(ml_dtypes.finfo(dt).bits)
    return 8 * dt.itemsize


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) matching the dtype of ``x``."""
    dt = _spec_of(x)
    dt = dtype_of_value(dt)[0] if isinstance(dt, (bool, int, float, complex)) else dt
    if issubdtype(dt, np.bool_):
        return bool
    if issubdtype(dt, np.integer):
        return int
    if issubdtype(dt, np.floating):
        return float
    if issubdtype(dt, np.complexfloating):
        return complex
    raise TypeError(f"kiln.dtypes.scalar_type_of: {x!r:.60} has no scalar type (dtype {dt})")


def _canonicalize(dtype: Any, x64: bool) -> np.dtype:
    # Internal helpers take x64 as an argument: reading the config flag costs more than the
    # rest of a cached canonicalization.
    try:
        dt = _to_supported_dtype(dtype)
    except DtypeArgumentError:
        raise
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        dt = _to_supported_dtype.__wrapped__(dtype)  # e.g. a list spec: not cacheable
    return dt if x64 else _TO_32BIT.get(dt, dt)


# ---------------------------------------------------------------------------------------------
# Values -> (dtype, weak_type)
# ---------------------------------------------------------------------------------------------

_INT_RANGE = {int32: (-(2**31), 2**31 - 1), int64: (-(2**63), 2**63 - 1)}


def int_overflow_error(where: str, value: int, dtype: Any, x64: bool | None = None,
                       source: str = "default") -> IntegerOverflowError:
    """The error for a Python int that does not fit ``dtype``: what, the value, and how to fix it.

    ``source``: where ``dtype`` came from: ``"default"`` (the default integer dtype), ``"array"`` (the
    array the int is combined with) or ``"explicit"`` (a ``dtype=`` argument)."""
    dt = np.dtype(dtype)
    x64 = config.enable_x64 if x64 is None else x64
    if dt.kind in "iu":
        info = np.iinfo(dt)
        rng = f" (range [{info.min}, {info.max}])"
    else:
        rng = ""
    head = f"{where}: Python int {value} is out of range for {dt.name}{rng}"
    try:
        as_float = f"{float(value):.6g}"
    except OverflowError:  # beyond float64 too
        as_float = None
    use_float = (f"use a float ({as_float}) if the exact value does not matter"
                 if as_float is not None else "note that it is beyond the range of float64 as well")
    if not -(2**63) <= value < 2**64:
        return IntegerOverflowError(
            f"{where}: Python int {value} is too large for any integer dtype kiln supports (int64 and "
            f"uint64 with enable_x64, int32 and uint32 otherwise): {use_float}.")
    if source == "explicit":
        return IntegerOverflowError(f"{head}, the dtype asked for: ask for a wider dtype, or {use_float}.")
    if source == "array":
        return IntegerOverflowError(
            f"{head}, the dtype it takes from the array it is combined with: cast the array to a wider "
            f"dtype first, or {use_float}.")
    if not x64:
        fits = "int64" if value < 2**63 else f"uint64: pass it as np.uint64({value})"
        return IntegerOverflowError(
            f"{head}, the default integer dtype without 64-bit types: enable them with "
            f"kiln.config.update('enable_x64', True) (it fits {fits}), or {use_float}.")
    return IntegerOverflowError(  # x64: between 2**63 and 2**64 - 1
        f"{head}, the default integer dtype: pass it as np.uint64({value}) (or an array of dtype "
        f"uint64), or {use_float}.")


def _int_dtype_for(value: int, x64: bool) -> np.dtype:
    dt = int64 if x64 else int32
    lo, hi = _INT_RANGE[dt]
    if not lo <= value <= hi:
        raise int_overflow_error("kiln", value, dt, x64)
    return dt


def dtype_of_value(x: Any) -> tuple[np.dtype, bool]:
    """Return ``(dtype, weak_type)`` for a value, as JAX abstracts it.

    - Python ``bool`` -> ``(bool, False)``; ``int``/``float``/``complex`` -> the default dtype of
      that kind, weakly typed (``True``).
    - NumPy scalars and arrays -> their canonicalized dtype, strongly typed.
    - Objects with ``.dtype`` and ``.weak_type`` (kiln arrays, tracers, abstract values) -> those,
      as they are. Other objects with a NumPy ``.dtype`` -> that dtype canonicalized, strong.

    Raises
    ------
    IntegerOverflowError
        A Python int outside the range of the default integer dtype (an ``OverflowError``).
    TypeError
        Any other value, or an unsupported dtype.
    """
    return _dtype_of_value(x, config.enable_x64)


# Default dtypes of the Python scalar types, by x64 setting.
_PY_DEFAULTS = {False: {float: float32, complex: complex64, int: int32},
                True: {float: float64, complex: complex128, int: int64}}


def _dtype_of_value(x: Any, x64: bool) -> tuple[np.dtype, bool]:
    # NumPy scalars come first: np.float64 is a subclass of Python float.
    if isinstance(x, (np.ndarray, np.generic)):
        return _canonicalize(x.dtype, x64), False
    t = type(x)
    if t is bool:
        return bool_, False
    if t is int:
        return _int_dtype_for(x, x64), True
    if t is float or t is complex:
        return _PY_DEFAULTS[x64][t], True
    dt = getattr(x, "dtype", None)
    if dt is not None:
        weak = getattr(x, "weak_type", None)
        if weak is not None:
            return dt, bool(weak)
        if isinstance(dt, np.dtype):
            return _canonicalize(dt, x64), False
    # Subclasses of the Python scalar types (e.g. IntEnum) behave as their base.
    if isinstance(x, bool):
        return bool_, False
    if isinstance(x, int):
        return _int_dtype_for(int(x), x64), True
    if isinstance(x, float):
        return _PY_DEFAULTS[x64][float], True
    if isinstance(x, complex):
        return _PY_DEFAULTS[x64][complex], True
    raise TypeError(f"kiln: cannot determine a dtype for a value of type {t.__module__}.{t.__qualname__}"
                    f" ({x!r:.80}); expected an array, a NumPy scalar, or a Python bool/int/float/complex.")


def is_weakly_typed(x: Any) -> bool:
    """True for Python int/float/complex values and for objects whose ``.weak_type`` is set."""
    t = type(x)
    if t is int or t is float or t is complex:
        return True
    if isinstance(x, (bool, np.generic, np.ndarray)):
        return False
    return bool(getattr(x, "weak_type", False))


# ---------------------------------------------------------------------------------------------
# The promotion lattice
# ---------------------------------------------------------------------------------------------

# Weak nodes. Python scalars (and weakly typed arrays) enter the lattice as one of these.
_I, _F, _C = "i*", "f*", "c*"


def _lattice(x64: bool) -> dict[Any, list[Any]]:
    """Each node mapped to the nodes immediately above it (JAX's standard lattice).

    Reading it: bool < i* < {u8, i8}; unsigned widths also promote to the next wider signed type
    (u8 -> i16, u16 -> i32, u32 -> i64); the widest integers (u64, i64) meet only at f*, so
    uint64 + int64 is a (weak) float; f* < {bf16, f16, c*}; bf16 and f16 meet at f32. The narrow
    types of ml_dtypes are leaves: i* < {int1, ..., uint4}, f* < {float8_*, float6_*, float4_e2m1fn},
    and nothing is above them, so they meet no other strong type.
    """
    up: dict[Any, list[Any]] = {
        bool_: [_I],
        _I: [uint8, int8, *NARROW_INTS],
        uint8: [int16, uint16],
        uint16: [int32, uint32],
        uint32: [int64, uint64],
        uint64: [_F],
        int8: [int16],
        int16: [int32],
        int32: [int64],
        int64: [_F],
        _F: [*NARROW_FLOATS, bfloat16, float16, _C],
        bfloat16: [float32],
        float16: [float32],
        float32: [float64, complex64],
        float64: [complex128],
        _C: [complex64],
        complex64: [complex128],
        complex128: [],
        # The narrow types: only weak values of their kind (and bool) promote to them.
        **{d: [] for d in NARROW_FLOATS + NARROW_INTS},
    }
    if not x64:
        # Without x64, no promotion may form a 64-bit type from narrower inputs; the only place
        # the lattice does is uint32 x int32 -> int64, which becomes int32 (as in JAX).
        up[uint32] = [int32, uint64]
    return up


def _upper_bounds(lattice: dict[Any, list[Any]]) -> dict[Any, frozenset]:
    """Reflexive-transitive closure: each node -> every node at or above it."""
    ub: dict[Any, frozenset] = {}

    def visit(n: Any) -> frozenset:
        if n not in ub:
            ub[n] = frozenset({n}).union(*(visit(m) for m in lattice[n]))
        return ub[n]

    for n in lattice:
        visit(n)
    return ub


def _join_table(x64: bool) -> dict[tuple[Any, Any], Any]:
    """The least upper bound of every pair of nodes that has one, precomputed once (pairs with a narrow
    type of ml_dtypes may have none)."""
    ub = _upper_bounds(_lattice(x64))
    table = {}
    for a in ub:
        for b in ub:
            common = ub[a] & ub[b]
            least = [c for c in common if common <= ub[c]]
            assert len(least) <= 1, (a, b, least)  # the lattice is well formed
            if least:
                table[a, b] = least[0]
    return table


def _strict_lattice() -> dict[Any, list[Any]]:
    """JAX's strict lattice (``numpy_dtype_promotion='strict'``): no two different strong dtypes meet;
    a weak int fits any integer or inexact type, a weak float any inexact type, a weak complex any
    complex type."""
    ints = [d for d in _SUPPORTED if kind(d) in "iu"]
    floats = [d for d in _SUPPORTED if kind(d) == "f"]
    complexes = [d for d in _SUPPORTED if kind(d) == "c"]
    up: dict[Any, list[Any]] = {d: [] for d in _SUPPORTED}
    up.update({_I: [_F] + ints, _F: [_C] + floats, _C: complexes})
    return up


def _strict_join_table() -> dict[tuple[Any, Any], Any]:
    ub = _upper_bounds(_strict_lattice())
    table = {}
    for a in ub:
        for b in ub:
            common = ub[a] & ub[b]
            least = [c for c in common if common <= ub[c]]
            if least:
                table[a, b] = least[0]
    return table


_JOIN = {True: _join_table(True), False: _join_table(False), "strict": _strict_join_table()}


def _node(dt: np.dtype, weak: bool) -> Any:
    """The lattice node of a (dtype, weak_type) pair. Weak bool is just bool."""
    if not weak or dt == bool_:
        return dt
    # A weak unsigned value joins as a weak int (JAX maps it through its Python scalar type), a weak
    # bfloat16 or narrow float as a weak float.
    return {"i": _I, "u": _I, "f": _F, "c": _C}.get(kind(dt), dt)


def _node_to_dtype(node: Any, x64: bool) -> np.dtype:
    """The concrete dtype of a node: weak nodes take the default dtype of their kind."""
    if not isinstance(node, str):
        return node
    if node == _I:
        return int64 if x64 else int32
    if node == _F:
        return float64 if x64 else float32
    return complex128 if x64 else complex64


_WEAK_NAMES = {_I: "a Python int (weakly typed int)", _F: "a Python float (weakly typed float)",
               _C: "a Python complex (weakly typed complex)"}


def _no_promotion_error(a: Any, b: Any) -> Exception:
    """The error for two lattice nodes with no join (one of them a narrow type of ml_dtypes), worded
    as JAX's: narrow types do not promote implicitly, to avoid unintended promotion."""
    from .errors import TypePromotionError
    names = [_WEAK_NAMES.get(n, getattr(n, "name", str(n))) for n in (a, b)]
    nodes = [n for n in (a, b) if not isinstance(n, str)]
    if any(n in _FLOAT8 for n in nodes):
        what, to = "8-bit floats", "float32"
    elif any(n in _FLOAT6 for n in nodes):
        what, to = "6-bit floats", "float32"
    elif any(n in _FLOAT4 for n in nodes):
        what, to = "4-bit floats", "float32"
    elif any(n in NARROW_INTS for n in nodes):
        what, to = "1-bit, 2-bit and 4-bit integers", "int32"
    else:
        return TypePromotionError(f"kiln: no implicit type promotion between {names[0]} and {names[1]}; "
                                  "cast the operands explicitly.")
    return TypePromotionError(
        f"kiln: no implicit type promotion between {names[0]} and {names[1]}: to avoid unintended "
        f"promotion, {what} do not promote implicitly (as in JAX). Cast explicitly to the dtype you "
        f"want, e.g. x.astype('{to}').")


def _join(nodes: Any, x64: bool, strict: bool = False) -> Any:
    table = _JOIN["strict" if strict else x64]
    it = iter(nodes)
    acc = next(it)
    for n in it:
        try:
            acc = table[acc, n]
        except KeyError:
            if strict:
                from .errors import TypePromotionError
                raise TypePromotionError(
                    f"kiln: no implicit type promotion between {acc} and {n} with numpy_dtype_promotion='strict'; "
                    "cast the operands explicitly (x.astype(...)), or use kiln.numpy_dtype_promotion('standard')"
                ) from None
            raise _no_promotion_error(acc, n) from None
    return acc


def _dtype_and_weak(arg: Any, x64: bool) -> tuple[np.dtype, bool]:
    """(canonical dtype, weak) of one result_type argument: a dtype specifier or a value."""
    if isinstance(arg, np.dtype):
        return _canonicalize(arg, x64), False
    if isinstance(arg, type):
        # The Python scalar types stand for weakly typed values of that kind (as in JAX).
        if arg is int or arg is float or arg is complex:
            return _PY_DEFAULTS[x64][arg], True
        return _canonicalize(arg, x64), False
    if isinstance(arg, str):
        return _canonicalize(arg, x64), False
    if arg is None:  # as in JAX: None stands for the default float dtype
        return _PY_DEFAULTS[x64][float], False
    return _dtype_of_value(arg, x64)


def result_type(*args: Any, return_weak_type_flag: bool = False) -> np.dtype | tuple[np.dtype, bool]:
    """The dtype JAX's promotion rules give to an operation on ``args``.

    Parameters
    ----------
    *args : dtypes or dtype specifiers (strong), the Python types ``int``/``float``/``complex``
        (weak), Python scalars (weak, except bool), NumPy arrays/scalars (strong), or objects
        with ``.dtype`` and ``.weak_type`` (kiln arrays, tracers, abstract values).
    return_weak_type_flag : also return whether the result is weakly typed.

    Returns
    -------
    numpy.dtype, or (numpy.dtype, bool)
        Canonicalized for the current x64 setting. A weak result has the default dtype of its
        kind (int32/float32/complex64 without x64).
    """
    if not args:
        raise ValueError("kiln.result_type: at least one array or dtype is required")
    x64 = config.enable_x64
    strict = config.numpy_dtype_promotion == "strict"
    out, weak = _promote(tuple([_dtype_and_weak(a, x64) for a in args]), x64, strict)
    return (out, weak) if return_weak_type_flag else out


@functools.lru_cache(maxsize=2048)
def _promote(pairs: tuple[tuple[np.dtype, bool], ...], x64: bool, strict: bool = False) -> tuple[np.dtype, bool]:
    """result_type's promotion of ``(dtype, weak)`` pairs; cached, as it is on the eager path."""
    dtypes = {d for d, _ in pairs}
    all_weak = all(w for _, w in pairs)
    if strict and not (len(dtypes) == 1 and not all_weak):
        node = _join({_node(d, w) for d, w in pairs}, x64, strict=True)
        out, weak = _node_to_dtype(node, x64), isinstance(node, str)
    elif len(dtypes) == 1 and not all_weak:
        # Same dtype everywhere and at least one strong input: nothing to promote.
        out, weak = next(iter(dtypes)), False
    elif all_weak:
        # Only weak inputs: join their strong dtypes and mark the result weak, as JAX does.
        # (It differs from joining the weak nodes only for odd inputs such as weak unsigned.)
        out, weak = _node_to_dtype(_join(dtypes, x64), x64), True
    else:
        node = _join({_node(d, w) for d, w in pairs}, x64)
        out, weak = _node_to_dtype(node, x64), isinstance(node, str)
    weak = weak and out != bool_
    if weak:  # a weak result has the default dtype of its kind
        out = _node_to_dtype(_node(out, True), x64)
    out = out if x64 else _TO_32BIT.get(out, out)
    return out, weak


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype a binary operation casts ``a`` and ``b`` to (``jnp.promote_types``).

    ``a`` and ``b`` are dtype specifiers; as in JAX, the Python types ``int``, ``float`` and
    ``complex`` are weak (``promote_types('uint8', int)`` is uint8). Unlike :func:`result_type`,
    the inputs and result are not canonicalized (as ``jnp.promote_types``), but the lattice used
    is the one of the current x64 setting. A weak join is NumPy's dtype of that Python type, as JAX's
    (``promote_types(np.int16, float)`` is float64, also with x64 off).
    """
    nodes = []
    for x in (a, b):
        if x is int or x is float or x is complex:
            nodes.append({int: _I, float: _F, complex: _C}[x])
        else:
            nodes.append(_to_supported_dtype(x))
    x64 = config.enable_x64
    node = _join(nodes, x64, strict=config.numpy_dtype_promotion == "strict")
    if isinstance(node, str):
        return np.dtype({_I: int, _F: float, _C: complex}[node])
    return _node_to_dtype(node, x64)


# ---------------------------------------------------------------------------------------------
# Dtype predicates and info
# ---------------------------------------------------------------------------------------------

# ml_dtypes' scalar types are not under np.floating / np.integer in NumPy's hierarchy (their only base
# is np.generic); these are the abstract types kiln puts above them, as JAX does.
_FLOAT_PARENTS = frozenset({np.floating, np.inexact, np.number, np.generic})
_SIGNED_PARENTS = frozenset({np.signedinteger, np.integer, np.number, np.generic})
_UNSIGNED_PARENTS = frozenset({np.unsignedinteger, np.integer, np.number, np.generic})
_ML_PARENTS = {d.type: {"f": _FLOAT_PARENTS, "i": _SIGNED_PARENTS, "u": _UNSIGNED_PARENTS}[k]
               for d, k in _ML_KINDS.items()}


def _spec_of(x: Any) -> Any:
    """A dtype specifier as is; for a value (array, tracer), its ``.dtype``."""
    return x if isinstance(x, (type, np.dtype, str)) else getattr(x, "dtype", x)


def _scalar_type(x: Any) -> type:
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    if isinstance(x, np.dtype):
        return x.type
    return _to_supported_dtype(x).type if isinstance(x, str) else np.dtype(x).type


@functools.lru_cache(maxsize=1024)
def _issubdtype_cached(a: Any, b: Any) -> bool:
    a_t, b_t = _scalar_type(a), _scalar_type(b)
    parents = _ML_PARENTS.get(a_t)
    if parents is not None:
        return b_t is a_t or b_t in parents
    return bool(np.issubdtype(a_t, b_t))


def issubdtype(a: Any, b: Any) -> bool:
    """``numpy.issubdtype`` that also knows where ml_dtypes' types sit: bfloat16 and the narrow floats
    are floating, int1/int2/int4 signed and uint1/uint2/uint4 unsigned integers.

    ``b`` may be an abstract NumPy type (``np.floating``, ``np.integer``, ``np.inexact``,
    ``np.number``, ``np.complexfloating``, ``np.signedinteger``, ``np.unsignedinteger``,
    ``np.bool_``) or a concrete dtype specifier.
    """
    a = _spec_of(a)
    if _is_extended(a) or _is_extended(b):  # PRNG key dtypes: by their scalar types
        a_t = a.type if _is_extended(a) else _scalar_type(a)
        if _is_extended(b):
            return a == b
        return isinstance(b, type) and issubclass(a_t, b)
    try:
        return _issubdtype_cached(a, b)
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        return _issubdtype_cached.__wrapped__(a, b)


def is_float(dtype: Any) -> bool:
    """True for real floating dtypes (float16, bfloat16, float32, float64)."""
    return issubdtype(dtype, np.floating)


def is_int(dtype: Any) -> bool:
    """True for signed and unsigned integer dtypes (not bool)."""
    return issubdtype(dtype, np.integer)


def is_signed(dtype: Any) -> bool:
    """True for signed integer dtypes."""
    return issubdtype(dtype, np.signedinteger)


def is_unsigned(dtype: Any) -> bool:
    """True for unsigned integer dtypes."""
    return issubdtype(dtype, np.unsignedinteger)


def is_complex(dtype: Any) -> bool:
    """True for complex dtypes."""
    return issubdtype(dtype, np.complexfloating)


def is_bool(dtype: Any) -> bool:
    """True for the boolean dtype."""
    return issubdtype(dtype, np.bool_)


def is_inexact(dtype: Any) -> bool:
    """True for floating and complex dtypes."""
    return issubdtype(dtype, np.inexact)


def finfo(dtype: Any) -> ml_dtypes.finfo:
    """Machine limits of a floating (or complex) dtype, bfloat16 and the 8-, 6- and 4-bit floats
    included (``ml_dtypes.finfo``)."""
    dt = _to_supported_dtype(_spec_of(dtype))
    if not is_inexact(dt):
        raise TypeError(f"kiln.finfo: {dt.name} is not a floating-point or complex dtype; "
                        "use kiln's iinfo for integer dtypes.")
    return ml_dtypes.finfo(dt)


def iinfo(dtype: Any) -> np.iinfo | ml_dtypes.iinfo:
    """Machine limits of an integer dtype (``numpy.iinfo``; ``ml_dtypes.iinfo`` for int1..uint4)."""
    dt = _to_supported_dtype(_spec_of(dtype))
    if not is_int(dt):
        raise TypeError(f"kiln.iinfo: {dt.name} is not an integer dtype; "
                        "use kiln's finfo for floating-point dtypes.")
    return ml_dtypes.iinfo(dt) if dt in NARROW_INTS else np.iinfo(dt)


_NO_INF = frozenset({float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu,
                     float6_e2m3fn, float6_e3m2fn, float4_e2m1fn})


def supports_inf(dtype: Any) -> bool:
    """True for inexact dtypes that have infinities (not the ``fn``/``fnuz`` narrow floats)."""
    dt = np.dtype(dtype)
    return is_inexact(dt) and dt not in _NO_INF


def lowest(dtype: Any) -> Any:
    """The least value of a real dtype, as the identity of ``max``: ``-inf`` for floats that have it,
    else the most negative finite value; ``iinfo.min`` for integers; False for bool."""
    dt = np.dtype(dtype)
    k = kind(dt)
    if k == "b":
        return False
    if k == "f":
        return -np.inf if supports_inf(dt) else float(finfo(dt).min)
    return int(iinfo(dt).min)


def highest(dtype: Any) -> Any:
    """The greatest value of a real dtype, as the identity of ``min`` (see :func:`lowest`)."""
    dt = np.dtype(dtype)
    k = kind(dt)
    if k == "b":
        return True
    if k == "f":
        return np.inf if supports_inf(dt) else float(finfo(dt).max)
    return int(iinfo(dt).max)


_SHORT_NAMES = {bool_: "bool", bfloat16: "bf16"}


def short_dtype_name(dtype: Any) -> str:
    """A compact name for printing IR types: ``f32``, ``i8``, ``u32``, ``bf16``, ``c64``, ``bool``;
    ``i4``, ``u2``, ``f8_e4m3fn``, ... for the narrow types of ml_dtypes."""
    dt = np.dtype(dtype)
    short = _SHORT_NAMES.get(dt)
    if short is None:
        if dt in _ML_KINDS:
            return dt.name.replace("float", "f").replace("uint", "u").replace("int", "i")
        short = f"{dt.kind}{dt.itemsize * 8}"
    return short
