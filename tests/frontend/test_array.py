"""kiln.Array: metadata, host conversion, printing, operators, indexing, placement, immutability.

NumPy is the oracle for values; JAX's printed forms are the oracle for repr.
"""
from __future__ import annotations

import operator
import pickle

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
TO_32 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@pytest.fixture
def x64():
    """Turn on 64-bit mode for one test (the conftest fixture restores it even if the test fails)."""
    kiln.config.update("enable_x64", True)
    yield
    kiln.config.update("enable_x64", False)


# -- metadata ---------------------------------------------------------------------------------

def test_metadata():
    h = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = knp.asarray(h)
    assert isinstance(x, kiln.Array)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24 and len(x) == 2
    assert x.dtype == np.float32 and x.dtype == knp.float32
    assert x.T.shape == (4, 3, 2)
    np.testing.assert_array_equal(np.asarray(x.T), h.T)
    s = knp.asarray(np.float32(2.0))
    assert s.shape == () and s.ndim == 0 and s.size == 1
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(s)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(s)
    z = knp.zeros((0, 3))
    assert z.size == 0 and z.shape == (0, 3) and len(z) == 0 and list(z) == []


def test_iteration_yields_rows():
    h = np.arange(6, dtype=np.int32).reshape(3, 2)
    rows = list(knp.asarray(h))
    assert len(rows) == 3
    for r, e in zip(rows, h):
        assert isinstance(r, kiln.Array)
        np.testing.assert_array_equal(np.asarray(r), e)


# -- host conversion --------------------------------------------------------------------------

def test_array_protocol_and_immutability_of_views():
    h = np.array([1.5, -2.0, 3.25], np.float32)
    x = knp.asarray(h)
    h[0] = 100.0  # the kiln array copied its input
    assert float(x[0]) == 1.5
    view = np.asarray(x)
    assert view.dtype == np.float32
    np.testing.assert_array_equal(view, [1.5, -2.0, 3.25])
    if not view.flags.writeable:
        with pytest.raises(ValueError, match="read-only"):
            view[0] = 7.0
    copy = np.array(x)
    copy[0] = 7.0  # a copy is writable and independent
    assert float(x[0]) == 1.5
    np.testing.assert_array_equal(np.asarray(x, dtype=np.int32), [1, -2, 3])
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), h.astype(np.float64) * 0 + [1.5, -2.0, 3.25])


def test_host_layouts_and_byte_orders():
    """Strided, transposed, Fortran-ordered, broadcast and big-endian NumPy inputs all arrive intact."""
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = kiln.jit(lambda z: z + 0)
    views = [h[:, ::2], h.T, np.asfortranarray(h), h[::-1], np.broadcast_to(h[0], (3, 4)), h.astype(">f4"),
             h.astype(">i2"), np.float32(3).astype(">f4")]
    for v in views:
        for x in (knp.asarray(v), kiln.device_put(v), f(v), knp.asarray(v) * 1):
            assert x.dtype == v.dtype.newbyteorder("=") and x.dtype.isnative
            np.testing.assert_array_equal(np.asarray(x), v)
    assert knp.zeros(2, dtype=">f4").dtype == np.float32


def test_item_tolist_and_python_scalars():
    assert knp.asarray(np.float32(2.5)).item() == 2.5
    assert isinstance(knp.asarray(np.int32(3)).item(), int)
    assert knp.arange(6).reshape(2, 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert knp.asarray(np.array([True, False])).tolist() == [True, False]
    assert knp.arange(6).reshape(2, 3).item(4) == 4
    assert float(knp.asarray(np.float32(2.5))) == 2.5
    assert int(knp.asarray(np.int32(-7))) == -7
    assert complex(knp.asarray(np.complex64(1 + 2j))) == 1 + 2j
    assert bool(knp.asarray(np.array([0.5]))) is True
    assert bool(knp.asarray(np.float32(0.0))) is False
    assert [10, 20, 30][knp.asarray(np.int32(2))] == 30  # __index__
    assert f"{knp.asarray(np.float32(3.14159)):.2f}" == "3.14"
    with pytest.raises(ValueError, match="truth value of an array with 2 elements is ambiguous"):
        bool(knp.ones(2))
    with pytest.raises(TypeError, match="only integer arrays can be used as an index"):
        [1, 2][knp.asarray(np.float32(1.0))]


def test_unhashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(knp.ones(2))
    with pytest.raises(TypeError, match="unhashable"):
        {knp.ones(2): 1}


def test_pickle_round_trip():
    x = knp.asarray(np.array([[1, 2], [3, 4]], np.int16))
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, kiln.Array) and y.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


# -- printing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make,expected", [
    (lambda: knp.array([1., 2.]), "Array([1., 2.], dtype=float32)"),
    (lambda: knp.array(1.), "Array(1., dtype=float32, weak_type=True)"),
    (lambda: knp.array(3), "Array(3, dtype=int32, weak_type=True)"),
    (lambda: knp.array(np.float32(1.)), "Array(1., dtype=float32)"),
    (lambda: knp.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: knp.arange(6).reshape(2, 3), "Array([[0, 1, 2],\n       [3, 4, 5]], dtype=int32)"),
    (lambda: knp.zeros((0,)), "Array([], shape=(0,), dtype=float32)"),
    (lambda: knp.zeros((0, 3)), "Array([], shape=(0, 3), dtype=float32)"),
    (lambda: knp.array([1 + 2j], dtype=knp.complex64), "Array([1.+2.j], dtype=complex64)"),
    (lambda: knp.array([1.5, 2], dtype=knp.bfloat16), "Array([1.5, 2], dtype=bfloat16)"),
    (lambda: knp.ones(2) * 2, "Array([2., 2.], dtype=float32)"),
])
def test_repr(make, expected):
    assert repr(make()) == expected


_TEN = np.array([-147.84032, 12.5, 3.25, -0.001, 1e3, 7.123456, -99.99, 0.5, 42.0, -1.0], np.float32)


# Expected strings are what JAX 0.10.2 prints for the same arrays: NumPy lays the numbers out with a
# trailing ',' as the suffix, and the dtype goes after it on the last line, preceded by one space, or
# by len("Array(") spaces when one space would take the line past the line width (on the same line:
# JAX's rule, which these strings pin).
@pytest.mark.parametrize("make,options,expected", [
    (lambda: knp.array(_TEN), {},
     "Array([-1.4784032e+02,  1.2500000e+01,  3.2500000e+00, -1.0000000e-03,\n"
     "        1.0000000e+03,  7.1234560e+00, -9.9989998e+01,  5.0000000e-01,\n"
     "        4.2000000e+01, -1.0000000e+00], dtype=float32)"),
    (lambda: knp.arange(30.), {},
     "Array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.,\n"
     "       13., 14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25.,\n"
     "       26., 27., 28., 29.], dtype=float32)"),
    (lambda: knp.arange(30), {},
     "Array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16,\n"
     "       17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], dtype=int32)"),
    (lambda: knp.arange(13.), {},
     "Array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.],      dtype=float32)"),
    (lambda: knp.arange(2000.), {},
     "Array([0.000e+00, 1.000e+00, 2.000e+00, ..., 1.997e+03, 1.998e+03,\n"
     "       1.999e+03], dtype=float32)"),
    (lambda: knp.arange(2000).reshape(40, 50), {},
     "Array([[   0,    1,    2, ...,   47,   48,   49],\n"
     "       [  50,   51,   52, ...,   97,   98,   99],\n"
     "       [ 100,  101,  102, ...,  147,  148,  149],\n"
     "       ...,\n"
     "       [1850, 1851, 1852, ..., 1897, 1898, 1899],\n"
     "       [1900, 1901, 1902, ..., 1947, 1948, 1949],\n"
     "       [1950, 1951, 1952, ..., 1997, 1998, 1999]], dtype=int32)"),
    (lambda: knp.arange(24.).reshape(2, 3, 4), {},
     "Array([[[ 0.,  1.,  2.,  3.],\n"
     "        [ 4.,  5.,  6.,  7.],\n"
     "        [ 8.,  9., 10., 11.]],\n"
     "\n"
     "       [[12., 13., 14., 15.],\n"
     "        [16., 17., 18., 19.],\n"
     "        [20., 21., 22., 23.]]], dtype=float32)"),
    (lambda: knp.zeros((2, 0), knp.int32), {}, "Array([], shape=(2, 0), dtype=int32)"),
    (lambda: knp.broadcast_to(knp.array(2.), (0,)), {}, "Array([], shape=(0,), dtype=float32, weak_type=True)"),
    (lambda: knp.array([True, False] * 20), {},
     "Array([ True, False,  True, False,  True, False,  True, False,  True,\n"
     "       False,  True, False,  True, False,  True, False,  True, False,\n"
     "        True, False,  True, False,  True, False,  True, False,  True,\n"
     "       False,  True, False,  True, False,  True, False,  True, False,\n"
     "        True, False,  True, False], dtype=bool)"),
    (lambda: knp.arange(10.) * (1 + 2j), {},
     "Array([0. +0.j, 1. +2.j, 2. +4.j, 3. +6.j, 4. +8.j, 5.+10.j, 6.+12.j,\n"
     "       7.+14.j, 8.+16.j, 9.+18.j], dtype=complex64)"),
    (lambda: knp.arange(20, dtype=knp.bfloat16), {},
     "Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,\n"
     "       19], dtype=bfloat16)"),
    (lambda: knp.broadcast_to(knp.array(1.5), (13,)), {},
     "Array([1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5],      dtype=float32, weak_type=True)"),
    (lambda: knp.broadcast_to(knp.array(7), (20,)), {},
     "Array([7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7],      dtype=int32, weak_type=True)"),
    (lambda: knp.arange(12.), {"linewidth": 40},
     "Array([ 0.,  1.,  2.,  3.,  4.,  5.,\n"
     "        6.,  7.,  8.,  9., 10., 11.],      dtype=float32)"),
    (lambda: knp.array(2.5), {"linewidth": 10}, "Array(2.5,      dtype=float32, weak_type=True)"),
    (lambda: knp.arange(30.), {"linewidth": 120},
     "Array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., "
     "13., 14., 15., 16., 17., 18., 19., 20., 21.,\n"
     "       22., 23., 24., 25., 26., 27., 28., 29.], dtype=float32)"),
    (lambda: knp.linspace(0, 1, 17), {"precision": 3, "threshold": 10, "edgeitems": 2},
     "Array([0.   , 0.062, ..., 0.938, 1.   ], dtype=float32)"),
])
def test_repr_line_wrapping_matches_jax(make, options, expected):
    x = make()
    with np.printoptions(**options):
        assert repr(x) == expected


def test_str_is_numpy_str():
    x = knp.arange(6).reshape(2, 3)
    assert str(x) == str(np.arange(6).reshape(2, 3)) == "[[0 1 2]\n [3 4 5]]"
    assert str(knp.array(1.5)) == "1.5"


def test_repr_of_deleted_array():
    x = knp.ones(3)
    x.delete()
    assert x.is_deleted()
    assert repr(x) == "Array(<deleted>, shape=(3,), dtype=float32)"
    with pytest.raises(kiln.DeletedBufferError, match="deleted"):
        np.asarray(x)


# -- operators --------------------------------------------------------------------------------

_A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
_B = np.array([[2.0, 1.0, -3.0], [0.25, 2.0, 5.0]], np.float32)
_I = np.array([5, -7, 12], np.int32)
_J = np.array([3, 2, -5], np.int32)

BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.lt,
              operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
INT_OPS = [operator.floordiv, operator.mod, operator.and_, operator.or_, operator.xor, operator.lshift,
           operator.rshift]


def _close(got, expected, rtol=1e-6):
    assert isinstance(got, kiln.Array), type(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol)


@pytest.mark.parametrize("op", BINARY_OPS, ids=lambda o: o.__name__)
def test_binary_operators_and_reflected_forms(op):
    a, b_ = knp.asarray(_A), knp.asarray(_B)
    pos = np.abs(_A)
    with np.errstate(invalid="ignore"):
        _close(op(a, b_) if op is not operator.pow else op(knp.asarray(pos), b_),
               op(_A, _B) if op is not operator.pow else op(pos, _B))
        # Python scalars on either side (weak: the result stays float32)
        _close(op(a, 2), op(_A, np.float32(2)))
        _close(op(2, a) if op is not operator.pow else op(2, a), op(np.float32(2), _A))
        _close(op(a, 0.5), op(_A, np.float32(0.5)))
        _close(op(3.0, a) if op is not operator.pow else op(3.0, a), op(np.float32(3.0), _A))
        # NumPy arrays on either side: kiln wins (its __array_priority__) and returns a kiln Array
        _close(op(_A, b_) if op is not operator.pow else op(pos, b_),
               op(_A, _B) if op is not operator.pow else op(pos, _B))


@pytest.mark.parametrize("op", INT_OPS, ids=lambda o: o.__name__)
def test_integer_operators(op):
    i, j = knp.asarray(_I), knp.asarray(_J)
    if op in (operator.lshift, operator.rshift):
        shifts = np.array([1, 3, 0], np.int32)
        _close(op(i, knp.asarray(shifts)), op(_I, shifts))
        _close(op(i, 2), op(_I, np.int32(2)))
        _close(op(1, knp.asarray(shifts)), op(np.int32(1), shifts))
        return
    _close(op(i, j), op(_I, _J))
    _close(op(i, 3), op(_I, np.int32(3)))
    _close(op(100, j), op(np.int32(100), _J))


def test_reflected_sub_pow_matmul():
    x = knp.array([1., 2., 3.])
    _close(2 - x, np.float32([1., 0., -1.]))
    _close(2 ** x, np.float32([2., 4., 8.]))
    _close(x ** 2, np.float32([1., 4., 9.]))
    _close(1 / x, np.float32([1., 0.5, 1 / 3]))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    km = knp.asarray(m)
    _close(km @ x, m @ np.float32([1, 2, 3]))
    _close(m @ knp.asarray(m.T.copy()), m @ m.T)          # NumPy @ kiln -> __rmatmul__
    _close(km @ knp.asarray(m.T.copy()), m @ m.T)
    _close(-x, np.float32([-1., -2., -3.]))
    _close(+x, np.float32([1., 2., 3.]))
    _close(abs(knp.array([-1.5, 2.])), np.float32([1.5, 2.]))
    _close(~knp.asarray(np.array([True, False])), np.array([False, True]))
    _close(~knp.asarray(_I), ~_I)
    q, r = divmod(knp.asarray(_I), 4)
    _close(q, _I // 4)
    _close(r, _I % 4)
    q, r = divmod(17, knp.asarray(_J))
    _close(q, 17 // _J)
    _close(r, 17 % _J)


def test_weak_types_keep_array_dtype():
    for dt in ("float16", "bfloat16", "float32"):
        x = knp.ones(3, dtype=dt)
        assert (x * 2).dtype == np_dtype(dt)
        assert (2.5 + x).dtype == np_dtype(dt)
        assert not (x * 2).weak_type
    i8 = knp.ones(3, dtype="int8")
    assert (i8 + 1).dtype == np.int8
    assert (i8 * 2.0).dtype == np.float32  # int array * python float -> default float
    # two weak values stay weak
    w = knp.array(1.5) * 2
    assert w.dtype == np.float32 and w.weak_type
    # a strong NumPy scalar is not weak: float16 * np.float32 promotes
    assert (knp.ones(3, dtype="float16") * np.float32(2)).dtype == np.float32
    assert (knp.ones(3, dtype="float16") * knp.asarray(np.float32(2))).dtype == np.float32


def test_scalar_type_constructors_are_strong():
    """``knp.float32(2)`` is a strongly typed 0-d array: it promotes, where a Python scalar would not."""
    two = knp.float32(2)
    assert isinstance(two, kiln.Array) and two.dtype == np.float32 and not two.weak_type and two.shape == ()
    assert (knp.ones(3, dtype=knp.float16) * two).dtype == np.float32
    assert (knp.ones(3, dtype=knp.float16) * 2.0).dtype == np.float16
    assert not (two * 2).weak_type and float(two * 2.5) == 5.0
    assert knp.int8(3).dtype == np.int8 and (knp.int8(3) + 1).dtype == np.int8
    assert kiln.jit(lambda x: x * knp.float32(2))(knp.ones(2, dtype=knp.bfloat16)).dtype == np.float32
    assert knp.ones(2, knp.float32).dtype == knp.float32 and np.dtype(knp.float32) == np.float32


def test_bool_arithmetic_as_numpy():
    t = np.array([True, False, True])
    f = np.array([True, True, False])
    kt, kf = knp.asarray(t), knp.asarray(f)
    _close(kt + kf, t + f)      # logical or
    _close(kt * kf, t * f)      # logical and
    _close(kt & kf, t & f)
    _close(kt | kf, t | f)
    _close(kt ^ kf, t ^ f)
    _close(kt + 1, np.array([2, 1, 2], np.int32))  # bool with a Python int: int (weak)
    assert (kt + 1).weak_type
    with pytest.raises(TypeError, match=r"kiln\.numpy\.subtract: boolean subtract .* is not supported"):
        kt - kf


def test_comparison_results_are_bool_arrays():
    x = knp.array([1., 2., 3.])
    r = x == 2
    assert isinstance(r, kiln.Array) and r.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(r), [False, True, False])
    np.testing.assert_array_equal(np.asarray(1 < x), [False, True, True])  # reflected via __gt__
    np.testing.assert_array_equal(np.asarray(x != knp.array([1., 0., 3.])), [False, True, False])


# -- methods ----------------------------------------------------------------------------------

def test_astype_and_reshape():
    h = np.array([[1.7, -1.7, 0.0], [2.5, 0.2, -0.0]], np.float32)
    x = knp.asarray(h)
    for dt in ("int32", "bool", "float16", "uint8", "bfloat16", knp.int8, np.float32, float, int, bool):
        got = x.astype(dt) if dt not in ("uint8",) else knp.abs(x).astype(dt)
        src = h if dt not in ("uint8",) else np.abs(h)
        want = src.astype(np_dtype(dt) if isinstance(dt, str) else dt)
        want = want.astype(TO_32.get(want.dtype.name, want.dtype))  # float -> float32 without x64
        assert got.dtype == want.dtype, dt
        np.testing.assert_array_equal(np.asarray(got), want)
        assert not got.weak_type
    np.testing.assert_array_equal(np.asarray(x.reshape(3, 2)), h.reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(x.reshape((3, -1))), h.reshape(3, -1))
    np.testing.assert_array_equal(np.asarray(x.reshape(-1)), h.reshape(-1))
    np.testing.assert_array_equal(np.asarray(x.reshape((6,), order="F")), h.reshape((6,), order="F"))
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 .*into shape \(4, 2\)"):
        x.reshape(4, 2)
    with pytest.raises(TypeError, match="invalid dtype 'flaot32'. Did you mean 'float32'"):
        x.astype("flaot32")


# -- indexing ---------------------------------------------------------------------------------

H = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
BASIC_INDICES = [
    0, -1, 2, (1, 2), (1, 2, 3), (-1, -2, -3), slice(None), slice(1, 3), slice(None, None, 2),
    slice(None, None, -1), slice(None, None, -2), slice(2, 0, -1), slice(-1, -4, -1), slice(5, 1, -2),
    slice(1, 1), slice(3, 1), slice(-100, 100), (slice(None), 1), (Ellipsis, 1), (1, Ellipsis),
    (None, 1), (1, None, 2), (Ellipsis, None), (None, Ellipsis, None), (slice(None, None, -1), Ellipsis, 0),
    (1, slice(3, None, -2), slice(None, None, 3)), (np.int32(1), np.int64(-1)), (), Ellipsis,
    (slice(0, 3, 2), slice(None), slice(4, None, -4)),
]


def test_basic_indexing_matches_numpy():
    x = knp.asarray(H)
    for idx in BASIC_INDICES:
        got = x[idx]
        want = H[idx]
        assert got.shape == want.shape, idx
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(idx))


def test_basic_indexing_under_jit():
    idxs = BASIC_INDICES[:12]

    @kiln.jit
    def f(x):
        return [x[i] for i in idxs]

    for idx, got in zip(idxs, f(H)):
        np.testing.assert_array_equal(np.asarray(got), H[idx], err_msg=str(idx))


def test_out_of_bounds_int_index_clamps_as_jax():
    x = knp.arange(10)
    assert int(x[11]) == 9
    assert int(x[10]) == 9
    assert int(x[-11]) == 0
    assert int(x[-100]) == 0
    y = knp.asarray(H)
    np.testing.assert_array_equal(np.asarray(y[5, -9]), H[2, 0])


def test_integer_array_scalar_index_eager_and_traced():
    x = knp.asarray(H)
    np.testing.assert_array_equal(np.asarray(x[knp.asarray(np.int32(1))]), H[1])
    np.testing.assert_array_equal(np.asarray(x[knp.asarray(np.int32(-1))]), H[-1])

    @kiln.jit
    def f(a, i, j):
        return a[i], a[i, j], a[:, j]

    for i, j in [(0, 0), (2, 3), (-1, -2), (-3, 1), (7, 9), (-7, -9)]:
        ci, cj = min(max(i + 3 if i < 0 else i, 0), 2), min(max(j + 4 if j < 0 else j, 0), 3)
        r1, r2, r3 = f(x, np.int32(i), np.int32(j))
        np.testing.assert_array_equal(np.asarray(r1), H[ci], err_msg=f"{i}")
        np.testing.assert_array_equal(np.asarray(r2), H[ci, cj], err_msg=f"{i},{j}")
        np.testing.assert_array_equal(np.asarray(r3), H[:, cj], err_msg=f"{j}")


def test_indexing_errors():
    x = knp.asarray(H)
    with pytest.raises(IndexError, match="too many indices for array: array is 3-dimensional, but 4 were indexed"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="indices must be integers"):
        x[1.5]
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        knp.zeros((0, 2))[0]
    with pytest.raises(IndexError, match="unsupported index"):
        x["a"]


# -- immutability -----------------------------------------------------------------------------

def test_setitem_raises_pointing_to_at():
    x = knp.arange(5)
    with pytest.raises(TypeError, match=r"immutable.*\.at\[0\]\.set"):
        x[0] = 10
    with pytest.raises(TypeError, match=r"\.at\["):
        x[1:3] = 0
    np.testing.assert_array_equal(np.asarray(x), np.arange(5))  # unchanged

    @kiln.jit
    def f(a):
        a[0] = 1.0
        return a

    with pytest.raises(TypeError, match=r"immutable.*\.at\["):
        f(knp.ones(3))


def test_no_attribute_assignment():
    x = knp.ones(2)
    with pytest.raises(AttributeError):
        x.shape = (1, 2)
    with pytest.raises(AttributeError):
        x.foo = 1


# -- devices ----------------------------------------------------------------------------------

def test_device_methods_and_readiness():
    dev = kiln.devices()[0]
    x = knp.ones((4, 4)) @ knp.ones((4, 4))
    assert x.device == dev
    assert x.devices() == {dev}
    assert x.block_until_ready() is x
    assert x.is_ready()
    assert not x.is_deleted()
    assert kiln.block_until_ready({"a": x, "b": [x, 1]})["a"] is x


def test_device_put_commits_and_device_get_pytrees():
    dev = kiln.devices()[0]
    h = np.arange(4, dtype=np.float32)
    u = kiln.device_put(h)
    assert isinstance(u, kiln.Array) and not u.committed and u.device == dev
    c = kiln.device_put(h, dev)
    assert c.committed and c.device == dev
    np.testing.assert_array_equal(np.asarray(c), h)
    assert kiln.device_put(u, dev).committed
    assert (c + 1).committed  # computations on committed arrays give committed results
    assert not (u + 1).committed
    tree = kiln.device_put({"w": h, "b": [np.float32(1.0), (h, None)]}, dev)
    assert tree["b"][1][1] is None
    assert all(leaf.committed for leaf in kiln.tree_util.tree_leaves(tree))
    host = kiln.device_get({"w": c, "b": [u, (3, "text")], "n": None})
    assert isinstance(host["w"], np.ndarray) and isinstance(host["b"][0], np.ndarray)
    np.testing.assert_array_equal(host["w"], h)
    assert host["b"][1] == (3, "text") and host["n"] is None
    with pytest.raises(TypeError, match="kiln.device_put: device must be a kiln device"):
        kiln.device_put(h, 0)
    with pytest.raises(kiln.BackendError, match="Available backends"):
        kiln.device_put(h, "nosuchbackend")


# -- dtypes round trip ------------------------------------------------------------------------

def _sample(name):
    dt = np_dtype(name)
    if dt.kind == "b":
        return np.array([True, False, True])
    if dt.kind == "c":
        return np.array([1 + 2j, -0.5j, 3], dt)
    if dt.kind == "u":
        return np.array([0, 7, np.iinfo(dt).max], dt)
    if dt.kind == "i":
        return np.array([np.iinfo(dt).min, -1, np.iinfo(dt).max], dt)
    return np.array([-1.5, 0.0, 2.25], dt)


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_round_trip_x32(name):
    h = _sample(name)
    want = np_dtype(TO_32.get(name, name))
    for x in (kiln.device_put(h), knp.asarray(h), knp.array(h)):
        assert x.dtype == want, name
        back = np.asarray(x)
        assert back.dtype == want
        if name not in TO_32:
            np.testing.assert_array_equal(back, h)
    y = kiln.jit(lambda a: a)(h)
    assert y.dtype == want


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_round_trip_x64(name, x64):
    h = _sample(name)
    x = kiln.device_put(h)
    assert x.dtype == np_dtype(name)
    np.testing.assert_array_equal(np.asarray(x), h)
    y = kiln.jit(lambda a: a)(h)
    assert y.dtype == np_dtype(name)
    np.testing.assert_array_equal(np.asarray(y), h)


def test_dtype_arithmetic_eager_and_jit():
    """One op per dtype, eagerly and under jit (in one compilation)."""
    names = [n for n in ALL_DTYPES if n not in TO_32]
    samples = [_sample(n) for n in names]

    def ops(xs):
        return [x == x for x in xs] + [knp.maximum(x, x) for x in xs] + [
            x * x for x, n in zip(xs, names) if n != "bool"]

    eager = ops([knp.asarray(s) for s in samples])
    jitted = kiln.jit(ops)(samples)
    with np.errstate(over="ignore"):
        want = [s == s for s in samples] + [np.maximum(s, s) for s in samples] + [
            s * s for s, n in zip(samples, names) if n != "bool"]
    for e, j, w in zip(eager, jitted, want):
        for got in (e, j):
            assert got.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(got), w)


def test_x64_switch(x64):
    assert knp.ones(2).dtype == np.float64
    assert knp.arange(3).dtype == np.int64
    assert (knp.array(1.5) * 2).dtype == np.float64
    assert knp.array(2**40).item() == 2**40
    assert kiln.jit(lambda a: a * 2)(1.5).dtype == np.float64
    kiln.config.update("enable_x64", False)
    assert knp.ones(2).dtype == np.float32
    assert kiln.device_put(np.float64(1.5)).dtype == np.float32
    with pytest.raises(OverflowError, match="is out of range for int32.*enable_x64"):
        knp.array(2**40)
