"""kiln.numpy's dtype surface: scalar types, abstract types and dtype functions."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
         "bfloat16", "float32", "float64", "complex64", "complex128"]


def _np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(getattr(np, name))


@pytest.mark.parametrize("name", NAMES)
def test_scalar_types_are_dtypes(name):
    t = getattr(knp, name)
    expected = _np_dtype(name)
    assert isinstance(t, type)
    assert t.dtype == expected
    assert np.dtype(t) == expected
    assert expected == t and t == expected.type and expected.type == t
    assert not (t != expected.type)
    assert hash(t) == hash(t) and {t: 1}[t] == 1
    assert kiln.frontend.core.dtypes.canonicalize_dtype(t) == kiln.frontend.core.dtypes.canonicalize_dtype(expected)
    assert repr(t) == f"<class 'kiln.numpy.{name}'>"


def test_scalar_types_across_the_api():
    x = knp.zeros(3, knp.float32)
    assert x.dtype == knp.float32 and x.dtype == np.float32
    assert knp.ones((2,), dtype=knp.int8).dtype == np.int8
    assert x.astype(knp.int16).dtype == np.int16
    assert knp.astype(x, knp.bfloat16).dtype == ml_dtypes.bfloat16
    assert knp.arange(4, dtype=knp.uint8).dtype == np.uint8
    assert knp.asarray([1, 2], dtype=knp.float16).dtype == np.float16
    assert knp.full((2,), 3, knp.complex64).dtype == np.complex64
    assert knp.float32 != knp.int32 and knp.float32 == knp.float32 and knp.float32 != np.int32
    assert knp.sum(np.ones(3, np.float32), dtype=knp.int32).dtype == np.int32
    assert kiln.lax.convert_element_type(x, knp.int32).dtype == np.int32
    assert np.zeros(2, dtype=knp.float16).dtype == np.float16  # NumPy accepts them too


def test_scalar_types_are_callable():
    a = knp.float32(1)
    assert isinstance(a, kiln.Array) and a.shape == () and a.dtype == np.float32 and not a.weak_type
    assert float(a) == 1.0
    b = knp.int8(np.array([1.7, -2.2, 3.0]))
    assert b.dtype == np.int8
    np.testing.assert_array_equal(np.asarray(b), np.int8([1, -2, 3]))
    c = knp.bool_(knp.asarray([0.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(c), [False, True])
    assert knp.complex64(1 + 2j).dtype == np.complex64
    assert knp.uint32().dtype == np.uint32 and int(knp.uint32()) == 0
    assert knp.bfloat16(1.5).dtype == ml_dtypes.bfloat16
    out = kiln.jit(lambda x: knp.int32(x) + knp.float32(0.5))(np.float32([1.9, -1.9]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), [1.5, -0.5])


def test_64_bit_types_follow_x64():
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):  # (as JAX's)
        assert knp.float64(1).dtype == np.float32  # canonicalized, as JAX without x64
    with pytest.warns(UserWarning, match="Explicitly requested dtype int64"):
        assert knp.zeros(2, knp.int64).dtype == np.int32
    with kiln.config.override("enable_x64", True):
        assert knp.float64(1).dtype == np.float64
        assert knp.zeros(2, knp.int64).dtype == np.int64
        assert knp.complex128(1j).dtype == np.complex128
    assert knp.int_ is knp.int64 and knp.double is knp.float64 and knp.single is knp.float32
    assert knp.half is knp.float16 and knp.csingle is knp.complex64 and knp.cdouble is knp.complex128
    assert knp.uint is knp.uint64 and knp.bool is knp.bool_


def test_isinstance_with_scalar_types():
    assert isinstance(np.float32(1), knp.float32)
    assert not isinstance(np.float32(1), knp.int32)
    assert isinstance(np.True_, knp.bool_)


def test_abstract_types_and_issubdtype():
    assert knp.issubdtype(knp.float32, knp.floating)
    assert knp.issubdtype(knp.bfloat16, knp.floating) and knp.issubdtype(knp.bfloat16, knp.inexact)
    assert knp.issubdtype(knp.int8, knp.signedinteger) and knp.issubdtype(knp.int8, knp.integer)
    assert not knp.issubdtype(knp.uint8, knp.signedinteger) and knp.issubdtype(knp.uint8, knp.unsignedinteger)
    assert knp.issubdtype(knp.complex64, knp.complexfloating) and knp.issubdtype(knp.complex64, knp.number)
    assert knp.issubdtype(knp.bool_, knp.bool_) and knp.issubdtype(knp.bool_, knp.generic)
    assert not knp.issubdtype(knp.bool_, knp.number)
    assert knp.issubdtype(np.float32, knp.float32) and knp.issubdtype("int32", knp.integer)
    assert knp.issubdtype(knp.floating, knp.inexact)
    assert knp.issubdtype(knp.asarray(np.float32(1)).dtype, knp.floating)


def test_dtype_functions():
    assert knp.dtype("float32") == knp.float32 and knp.dtype(knp.int8) == np.int8
    assert knp.finfo(knp.float32).eps == np.finfo(np.float32).eps
    assert knp.finfo(knp.bfloat16).bits == 16
    assert knp.finfo(knp.asarray(np.float16(1))).max == np.finfo(np.float16).max
    assert knp.iinfo(knp.int8).min == -128 and knp.iinfo(knp.uint16).max == 65535
    assert knp.result_type(knp.int8, knp.uint8) == np.int16
    assert knp.result_type(knp.float16, 2.0) == np.float16  # weak Python scalar
    assert knp.result_type(knp.int32, knp.float32) == np.float32
    assert knp.result_type(np.ones(2, np.int8), knp.bfloat16) == ml_dtypes.bfloat16
    assert knp.result_type(knp.asarray(np.float32(1)), 1) == np.float32
    assert knp.promote_types(knp.int8, knp.uint8) == np.int16
    assert knp.promote_types(knp.bfloat16, knp.float16) == np.float32
    assert knp.promote_types("uint8", int) == np.uint8


def test_can_cast():
    assert knp.can_cast(knp.int8, knp.int16)
    assert not knp.can_cast(knp.int16, knp.int8)
    assert knp.can_cast(knp.int16, knp.int8, casting="unsafe")
    assert knp.can_cast(knp.float32, knp.float16, casting="same_kind")
    assert not knp.can_cast(knp.float32, knp.int32, casting="same_kind")
    assert knp.can_cast(knp.bfloat16, knp.float32) and not knp.can_cast(knp.float32, knp.bfloat16)
    assert knp.can_cast(np.ones(2, np.int8), knp.float32)
    assert knp.can_cast(knp.asarray(np.int8(1)), "int32")
    assert knp.can_cast(knp.float32, knp.float32, casting="no")
    with pytest.raises(ValueError, match=r"kiln.numpy.can_cast: casting must be one of .* got 'sometimes'"):
        knp.can_cast(knp.int8, knp.int16, casting="sometimes")
    with pytest.raises(TypeError, match=r"kiln.numpy.can_cast: got the Python scalar 1"):
        knp.can_cast(1, knp.int16)
    with pytest.raises(TypeError, match=r"invalid dtype 'flaot32'. Did you mean 'float32'"):
        knp.can_cast("flaot32", knp.int16)


def test_isdtype():
    assert knp.isdtype(knp.float32, "real floating") and knp.isdtype(knp.bfloat16, "real floating")
    assert not knp.isdtype(knp.float32, "integral") and knp.isdtype(knp.uint8, "integral")
    assert knp.isdtype(knp.int8, "signed integer") and knp.isdtype(knp.uint8, "unsigned integer")
    assert knp.isdtype(knp.complex64, "complex floating") and knp.isdtype(knp.complex64, "numeric")
    assert knp.isdtype(knp.bool_, "bool") and not knp.isdtype(knp.bool_, "numeric")
    assert knp.isdtype(knp.int8, ("real floating", "signed integer"))
    assert knp.isdtype(knp.int8, knp.int8) and not knp.isdtype(knp.int8, (knp.int16, "bool"))
    assert knp.isdtype(knp.asarray(np.float32(1)).dtype, "real floating")
    with pytest.raises(ValueError, match=r"kiln.numpy.isdtype: unknown kind 'floating'"):
        knp.isdtype(knp.float32, "floating")


def test_invalid_dtypes():
    with pytest.raises(TypeError, match=r"kiln\.numpy\.zeros: dtype 'object' is not supported"):
        knp.zeros(2, object)
    with pytest.raises(TypeError, match=r"kiln.finfo: int32 is not a floating-point or complex dtype"):
        knp.finfo(knp.int32)
    with pytest.raises(TypeError, match=r"kiln.iinfo: float32 is not an integer dtype"):
        knp.iinfo(knp.float32)
