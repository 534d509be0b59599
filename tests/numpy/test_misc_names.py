"""kiln.numpy's constants, dtype aliases, index expressions, print options, isscalar, concat and the
file functions (load/save/savez/frombuffer/fromstring; fromfile/fromiter refuse, as in JAX)."""
from __future__ import annotations

import io
import math

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_constants_are_numpys():
    assert knp.pi == math.pi and knp.e == math.e and knp.euler_gamma == np.euler_gamma
    assert knp.inf == math.inf and math.isnan(knp.nan)
    assert knp.newaxis is None
    assert knp.ones((2,))[:, knp.newaxis].shape == (2, 1)


def test_dtype_aliases():
    assert np.dtype(knp.float_) == np.float64 and np.dtype(knp.complex_) == np.complex128
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):  # (as JAX's)
        assert knp.float_(1.5).dtype == np.float32  # 64-bit types are 32-bit without x64, as every dtype
    with kiln.config.override("enable_x64", True):
        assert knp.complex_(1).dtype == np.complex128
    assert knp.object_ is np.object_ and knp.character is np.character and knp.flexible is np.flexible
    assert not knp.issubdtype(knp.float32, knp.flexible) and knp.issubdtype(np.str_, knp.character)
    assert knp.ComplexWarning is np.exceptions.ComplexWarning


def test_isscalar_counts_0d_arrays():
    for v in (1, 1.5, 1j, True, np.float32(1), np.array(2.0), knp.asarray(3), knp.float32(1)):
        assert knp.isscalar(v), v
    for v in (None, [1], (), slice(3), knp.ones(1), np.ones((2, 2))):
        assert not knp.isscalar(v), v
    assert kiln.jit(lambda x: x if knp.isscalar(x) else -x)(knp.asarray(2.0)) == 2.0
    assert knp.iterable([1]) and not knp.iterable(1)


def test_index_expressions_index_kiln_arrays():
    x = np.arange(12).reshape(3, 4)
    assert np.array_equal(knp.asarray(x)[knp.s_[1:, ::2]], x[1:, ::2])
    assert np.array_equal(knp.asarray(x)[knp.index_exp[::-1]], x[::-1])


def test_printoptions_govern_kiln_arrays():
    x = knp.asarray([1.0 / 3.0])
    with knp.printoptions(precision=2):
        assert "0.33]" in repr(x) and knp.get_printoptions()["precision"] == 2
    assert knp.get_printoptions()["precision"] == np.get_printoptions()["precision"]
    assert knp.array_str(knp.arange(3)) == "[0 1 2]"
    assert knp.array_repr(knp.arange(3)) == repr(knp.arange(3))  # NumPy defers to the array's repr
    assert knp.set_printoptions is np.set_printoptions


def test_concat():
    a, b = np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)
    out = kiln.jit(lambda a, b: knp.concat([a, b], axis=1))(a, b)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(np.asarray(knp.concat([a, a], axis=None)), np.ones(12))
    with pytest.raises(TypeError):
        knp.concat([a, b], 1)  # axis is keyword-only (array API)


def test_save_load_roundtrip_restores_bfloat16():
    for x in (knp.arange(4, dtype=knp.bfloat16), knp.linspace(0, 1, 5), knp.arange(6).reshape(2, 3)):
        f = io.BytesIO()
        knp.save(f, x)
        f.seek(0)
        y = knp.load(f)
        assert isinstance(y, kiln.Array) and y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(np.asarray(y, np.float32), np.asarray(x, np.float32))
    f = io.BytesIO()
    knp.savez(f, a=knp.ones(2))
    f.seek(0)
    np.testing.assert_array_equal(knp.load(f)["a"], np.ones(2))
    f = io.BytesIO()
    np.save(f, np.array(["text"]))
    f.seek(0)
    assert isinstance(knp.load(f), np.ndarray)  # a dtype kiln has no arrays of stays NumPy's


def test_frombuffer_fromstring():
    out = knp.frombuffer(np.arange(5, dtype=np.int16).tobytes(), dtype=np.int16, count=3, offset=2)
    assert isinstance(out, kiln.Array) and out.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])
    assert knp.frombuffer(np.ones(2).tobytes()).dtype == np.float32  # float64 data, 32-bit without x64
    out = knp.fromstring("1, 2, 3.5", sep=",")
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3.5])
    assert out.dtype == np.float32
    assert ml_dtypes.bfloat16  # (ml_dtypes is the source of bfloat16 for load)


def test_fromfile_fromiter_refuse_with_a_hint():
    with pytest.raises(NotImplementedError, match=r"fromfile is not provided.*asarray\(numpy.fromfile"):
        knp.fromfile("x.bin")
    with pytest.raises(NotImplementedError, match=r"fromiter is not provided.*asarray\(numpy.fromiter"):
        knp.fromiter(range(3), float)
