"""Tests for kiln.frontend.core.dtypes: canonicalization, weak types, JAX's promotion table."""
import itertools

import ml_dtypes
import numpy as np
import pytest
from kiln.frontend.core import dtypes
from kiln.frontend.core.config import config

# JAX's type promotion table ("Type promotion semantics", x64 enabled). Codes: u1 = uint8,
# u2 = uint16, u4 = uint32, u8 = uint64 (bytes, as in JAX's docs), likewise i*, f2 = float16,
# bf = bfloat16, c4 = complex64, c8 = complex128; i*, f*, c* are the weak (Python scalar) types.
PROMOTION_TABLE = """
     b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c4  c8  i*  f*  c*
b1   b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c4  c8  i*  f*  c*
u1   u1  u1  u2  u4  u8  i2  i2  i4  i8  bf  f2  f4  f8  c4  c8  u1  f*  c*
u2   u2  u2  u2  u4  u8  i4  i4  i4  i8  bf  f2  f4  f8  c4  c8  u2  f*  c*
u4   u4  u4  u4  u4  u8  i8  i8  i8  i8  bf  f2  f4  f8  c4  c8  u4  f*  c*
u8   u8  u8  u8  u8  u8  f*  f*  f*  f*  bf  f2  f4  f8  c4  c8  u8  f*  c*
i1   i1  i2  i4  i8  f*  i1  i2  i4  i8  bf  f2  f4  f8  c4  c8  i1  f*  c*
i2   i2  i2  i4  i8  f*  i2  i2  i4  i8  bf  f2  f4  f8  c4  c8  i2  f*  c*
i4   i4  i4  i4  i8  f*  i4  i4  i4  i8  bf  f2  f4  f8  c4  c8  i4  f*  c*
i8   i8  i8  i8  i8  f*  i8  i8  i8  i8  bf  f2  f4  f8  c4  c8  i8  f*  c*
bf   bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  f4  f4  f8  c4  c8  bf  bf  c4
f2   f2  f2  f2  f2  f2  f2  f2  f2  f2  f4  f2  f4  f8  c4  c8  f2  f2  c4
f4   f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f8  c4  c8  f4  f4  c4
f8   f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  c8  c8  f8  f8  c8
c4   c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c8  c4  c8  c4  c4  c4
c8   c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8
i*   i*  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c4  c8  i*  f*  c*
f*   f*  f*  f*  f*  f*  f*  f*  f*  f*  bf  f2  f4  f8  c4  c8  f*  f*  c*
c*   c*  c*  c*  c*  c*  c*  c*  c*  c*  c4  c4  c4  c8  c4  c8  c*  c*  c*
"""

STRONG = {
    "b1": np.dtype(bool), "u1": np.dtype("uint8"), "u2": np.dtype("uint16"),
    "u4": np.dtype("uint32"), "u8": np.dtype("uint64"), "i1": np.dtype("int8"),
    "i2": np.dtype("int16"), "i4": np.dtype("int32"), "i8": np.dtype("int64"),
    "bf": np.dtype(ml_dtypes.bfloat16), "f2": np.dtype("float16"), "f4": np.dtype("float32"),
    "f8": np.dtype("float64"), "c4": np.dtype("complex64"), "c8": np.dtype("complex128"),
}
# A weak code stands for a Python scalar of that kind.
WEAK_VALUES = {"i*": 1, "f*": 1.0, "c*": 1j}
WEAK_DTYPES_X64 = {"i*": np.dtype("int64"), "f*": np.dtype("float64"), "c*": np.dtype("complex128")}
_32 = {np.dtype("int64"): np.dtype("int32"), np.dtype("uint64"): np.dtype("uint32"),
       np.dtype("float64"): np.dtype("float32"), np.dtype("complex128"): np.dtype("complex64")}


def _parse_table():
    header, *rows = [line.split() for line in PROMOTION_TABLE.strip().splitlines()]
    table = {}
    for row in rows:
        for col, entry in zip(header, row[1:], strict=True):
            table[row[0], col] = entry
    return header, table


CODES, TABLE = _parse_table()


def _arg(code):
    return WEAK_VALUES[code] if code in WEAK_VALUES else STRONG[code]


def _expected_x64(code):
    if code in WEAK_DTYPES_X64:
        return WEAK_DTYPES_X64[code], True
    return STRONG[code], False


def test_table_is_square_and_symmetric():
    assert len(CODES) == 18 and len(TABLE) == 18 * 18
    for a, b in itertools.product(CODES, CODES):
        assert TABLE[a, b] == TABLE[b, a], (a, b)


@pytest.mark.parametrize("a", CODES)
def test_promotion_table_x64(a):
    with config.override("enable_x64", True):
        for b in CODES:
            got = dtypes.result_type(_arg(a), _arg(b), return_weak_type_flag=True)
            assert got == _expected_x64(TABLE[a, b]), f"{a} x {b}: expected {TABLE[a, b]}, got {got}"


NARROW_CODES = [c for c in CODES if c not in ("u8", "i8", "f8", "c8")]


@pytest.mark.parametrize("a", NARROW_CODES)
def test_promotion_table_x32_canonicalizes(a):
    # Without x64, inputs that are not 64-bit promote to the canonicalized x64 result.
    for b in NARROW_CODES:
        dt, weak = _expected_x64(TABLE[a, b])
        got = dtypes.result_type(_arg(a), _arg(b), return_weak_type_flag=True)
        assert got == (_32.get(dt, dt), weak), f"{a} x {b}"
        assert got[0].itemsize <= 8


def test_x32_never_returns_64bit():
    for a, b in itertools.product(CODES, CODES):
        dt = dtypes.result_type(_arg(a), _arg(b))
        assert dt not in _32, (a, b, dt)
    # 64-bit inputs are canonicalized before promotion.
    assert dtypes.result_type(np.int64) == np.int32
    assert dtypes.result_type(np.uint64, np.int8) == np.int32
    assert dtypes.result_type(np.zeros(3, np.float64)) == np.float32


def test_promote_types_matches_table_for_strong_types():
    with config.override("enable_x64", True):
        for a, b in itertools.product(STRONG, STRONG):
            exp = TABLE[a, b]
            if exp in WEAK_VALUES:  # uint64 x int64 joins at the weak float node
                assert dtypes.promote_types(STRONG[a], STRONG[b]) == np.float64
            else:
                assert dtypes.promote_types(STRONG[a], STRONG[b]) == STRONG[exp]
    assert dtypes.promote_types("uint8", int) == np.uint8
    assert dtypes.promote_types("float16", float) == np.float16
    # A weak join is NumPy's dtype of that Python type, as in JAX, also with x64 off (not canonicalized).
    assert dtypes.promote_types(int, float) == np.float64 and dtypes.promote_types(int, int) == np.int64
    assert dtypes.promote_types(np.int16, float) == np.float64 and dtypes.promote_types(bool, int) == np.int64
    assert dtypes.promote_types(np.int8, np.uint64) == np.float64
    assert dtypes.promote_types("bfloat16", "float16") == np.float32
    # Without x64 the lattice avoids forming int64 from 32-bit inputs.
    assert dtypes.promote_types("uint32", "int32") == np.int32
    with config.override("enable_x64", True):
        assert dtypes.promote_types("uint32", "int32") == np.int64


# --- weak types --------------------------------------------------------------------------------

class FakeArray:
    """Stands in for a kiln array or tracer: anything with .dtype and .weak_type."""

    def __init__(self, dtype, weak_type=False):
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type


def test_weak_flags():
    assert dtypes.result_type(np.int8, 1.0, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(np.float16, 2.0, return_weak_type_flag=True) == (np.float16, False)
    assert dtypes.result_type(1, 2.0, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(1, return_weak_type_flag=True) == (np.int32, True)
    assert dtypes.result_type(True, 1, return_weak_type_flag=True) == (np.int32, True)
    assert dtypes.result_type(True, return_weak_type_flag=True) == (np.bool_, False)
    assert dtypes.result_type(np.uint8, 300, return_weak_type_flag=True) == (np.uint8, False)
    assert dtypes.result_type(1j, np.float64) == np.complex64
    # Python types stand for weak values, as in JAX.
    assert dtypes.result_type(float, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(np.float32) == np.float32
    assert dtypes.result_type(None) == np.float32


def test_weakly_typed_arrays():
    weak_f16 = FakeArray("float16", weak_type=True)
    strong_i8 = FakeArray("int8")
    # A weak array of any float width is the weak float node; the result takes the default.
    assert dtypes.result_type(weak_f16, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(weak_f16, strong_i8, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(weak_f16, FakeArray("bfloat16"), return_weak_type_flag=True) == (
        dtypes.bfloat16, False)
    assert dtypes.result_type(weak_f16, FakeArray("float16")) == np.float16
    assert dtypes.result_type(FakeArray("int32", True), 2.5, return_weak_type_flag=True) == (
        np.float32, True)
    with config.override("enable_x64", True):
        assert dtypes.result_type(FakeArray("int32", True), 2, return_weak_type_flag=True) == (
            np.int64, True)
        assert dtypes.result_type(np.uint64, np.int64, return_weak_type_flag=True) == (
            np.float64, True)


def test_is_weakly_typed():
    assert dtypes.is_weakly_typed(1) and dtypes.is_weakly_typed(1.0) and dtypes.is_weakly_typed(1j)
    assert not dtypes.is_weakly_typed(True)
    assert not dtypes.is_weakly_typed(np.float32(1))
    assert not dtypes.is_weakly_typed(np.float64(1))  # a subclass of float, but a NumPy scalar
    assert not dtypes.is_weakly_typed(np.ones(2))
    assert dtypes.is_weakly_typed(FakeArray("float32", True))
    assert not dtypes.is_weakly_typed(FakeArray("float32", False))


# --- scalars -----------------------------------------------------------------------------------

def test_dtype_of_value():
    assert dtypes.dtype_of_value(True) == (np.bool_, False)
    assert dtypes.dtype_of_value(3) == (np.int32, True)
    assert dtypes.dtype_of_value(3.0) == (np.float32, True)
    assert dtypes.dtype_of_value(3j) == (np.complex64, True)
    assert dtypes.dtype_of_value(np.float64(3)) == (np.float32, False)
    assert dtypes.dtype_of_value(np.bool_(True)) == (np.bool_, False)
    assert dtypes.dtype_of_value(np.zeros(2, np.int16)) == (np.int16, False)
    assert dtypes.dtype_of_value(np.zeros(2, ml_dtypes.bfloat16)) == (dtypes.bfloat16, False)
    assert dtypes.dtype_of_value(FakeArray("float16", True)) == (np.float16, True)
    with config.override("enable_x64", True):
        assert dtypes.dtype_of_value(3) == (np.int64, True)
        assert dtypes.dtype_of_value(3.0) == (np.float64, True)
        assert dtypes.dtype_of_value(np.float64(3)) == (np.float64, False)


def test_dtype_of_value_errors():
    with pytest.raises(TypeError, match="cannot determine a dtype for a value of type builtins.str"):
        dtypes.dtype_of_value("abc")
    with pytest.raises(TypeError, match="builtins.list"):
        dtypes.dtype_of_value([1, 2])
    with pytest.raises(TypeError, match="dtype 'object' is not supported"):
        dtypes.dtype_of_value(np.array([object()]))


def test_int_overflow():
    assert dtypes.dtype_of_value(2**31 - 1) == (np.int32, True)
    assert dtypes.dtype_of_value(-(2**31)) == (np.int32, True)
    with pytest.raises(OverflowError, match=r"Python int 2147483648 is out of range for int32 .*enable_x64"):
        dtypes.dtype_of_value(2**31)
    with pytest.raises(OverflowError, match="enable_x64"):
        dtypes.result_type(np.float32, -(2**31) - 1)
    with config.override("enable_x64", True):
        assert dtypes.dtype_of_value(2**31) == (np.int64, True)
        with pytest.raises(OverflowError, match=r"Python int 9223372036854775808 .* int64"):
            dtypes.dtype_of_value(2**63)


# --- canonicalize_dtype ------------------------------------------------------------------------

def test_canonicalize_dtype():
    assert dtypes.canonicalize_dtype("bfloat16") == dtypes.bfloat16
    assert dtypes.canonicalize_dtype(ml_dtypes.bfloat16) == dtypes.bfloat16
    assert dtypes.canonicalize_dtype(np.int64) == np.int32
    assert dtypes.canonicalize_dtype("uint64") == np.uint32
    assert dtypes.canonicalize_dtype(float) == np.float32
    assert dtypes.canonicalize_dtype(np.complex128) == np.complex64
    assert dtypes.canonicalize_dtype("int8") == np.int8
    assert isinstance(dtypes.canonicalize_dtype("f4"), np.dtype)
    with config.override("enable_x64", True):
        assert dtypes.canonicalize_dtype(np.int64) == np.int64
        assert dtypes.canonicalize_dtype(float) == np.float64
    assert dtypes.canonicalize_dtype(np.int64) == np.int32  # the override was undone


def test_invalid_dtype_messages():
    with pytest.raises(TypeError, match=r"kiln: invalid dtype 'flaot32'\. Did you mean 'float32'\? "
                                        r"Valid dtypes: bool, uint8, .*bfloat16"):
        dtypes.canonicalize_dtype("flaot32")
    with pytest.raises(TypeError, match="invalid dtype 'Foo'"):
        dtypes.canonicalize_dtype(type("Foo", (), {}))
    with pytest.raises(TypeError, match="dtype 'object' is not supported"):
        dtypes.canonicalize_dtype(object)
    with pytest.raises(TypeError, match=r"dtype '<U3' is not supported|dtype 'str96' is not supported"):
        dtypes.canonicalize_dtype("U3")
    with pytest.raises(TypeError, match=r"dtype 'datetime64\[s\]' is not supported"):
        dtypes.canonicalize_dtype("datetime64[s]")
    with pytest.raises(TypeError, match="is not supported"):
        dtypes.canonicalize_dtype(np.longdouble)
    with pytest.raises(TypeError, match="invalid dtype"):
        dtypes.result_type("flaot32", np.int8)


def test_default_dtypes():
    assert (dtypes.default_int_dtype(), dtypes.default_float_dtype(),
            dtypes.default_complex_dtype()) == (np.int32, np.float32, np.complex64)
    with config.override("enable_x64", True):
        assert (dtypes.default_int_dtype(), dtypes.default_float_dtype(),
                dtypes.default_complex_dtype()) == (np.int64, np.float64, np.complex128)


def test_exported_names_are_dtypes():
    names = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
    for name in names:
        assert isinstance(getattr(dtypes, name), np.dtype), name
    assert dtypes.bfloat16 == np.dtype(ml_dtypes.bfloat16)


# --- predicates and info -----------------------------------------------------------------------

def test_issubdtype():
    bf = dtypes.bfloat16
    for parent in (np.floating, np.inexact, np.number, np.generic):
        assert dtypes.issubdtype(bf, parent)
        assert dtypes.issubdtype("bfloat16", parent)
        assert dtypes.issubdtype(ml_dtypes.bfloat16, parent)
    for other in (np.integer, np.complexfloating, np.bool_, np.float32, np.signedinteger):
        assert not dtypes.issubdtype(bf, other)
    assert dtypes.issubdtype(bf, bf)
    assert dtypes.issubdtype(np.uint8, np.unsignedinteger)
    assert not dtypes.issubdtype(np.uint8, np.signedinteger)
    assert dtypes.issubdtype(np.int8, np.integer) and dtypes.issubdtype("int8", np.number)
    assert not dtypes.issubdtype(np.bool_, np.integer)
    assert dtypes.issubdtype(np.bool_, np.bool_)
    assert dtypes.issubdtype(np.complex64, np.complexfloating)
    assert dtypes.issubdtype(np.complex64, np.inexact)
    assert not dtypes.issubdtype(np.float32, np.float64)
    assert dtypes.issubdtype(np.zeros(2, np.float32), np.floating)  # values with a .dtype


def test_predicates():
    table = {  # dtype: (float, int, unsigned, complex, bool, inexact)
        "bool": (0, 0, 0, 0, 1, 0), "uint8": (0, 1, 1, 0, 0, 0), "int32": (0, 1, 0, 0, 0, 0),
        "bfloat16": (1, 0, 0, 0, 0, 1), "float16": (1, 0, 0, 0, 0, 1), "float64": (1, 0, 0, 0, 0, 1),
        "complex64": (0, 0, 0, 1, 0, 1),
    }
    preds = (dtypes.is_float, dtypes.is_int, dtypes.is_unsigned, dtypes.is_complex, dtypes.is_bool,
             dtypes.is_inexact)
    for name, expected in table.items():
        assert tuple(int(p(np.dtype(name))) for p in preds) == expected, name
    assert dtypes.is_signed(np.int8) and not dtypes.is_signed(np.uint8)


def test_finfo_iinfo():
    fi = dtypes.finfo(dtypes.bfloat16)
    assert fi.bits == 16 and fi.eps == 2.0**-7 and fi.nmant == 7
    assert dtypes.finfo("float32").eps == np.finfo(np.float32).eps
    assert dtypes.finfo(np.float16).max == np.finfo(np.float16).max
    assert dtypes.iinfo(np.int8).min == -128 and dtypes.iinfo("uint16").max == 65535
    with pytest.raises(TypeError, match="int32 is not a floating-point"):
        dtypes.finfo(np.int32)
    with pytest.raises(TypeError, match="float32 is not an integer dtype"):
        dtypes.iinfo(np.float32)


def test_short_dtype_name():
    assert [dtypes.short_dtype_name(d) for d in ("float32", "bfloat16", "bool", "uint8", "complex64")] \
        == ["f32", "bf16", "bool", "u8", "c64"]
