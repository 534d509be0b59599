"""BCOO operations called eagerly run as one compiled program per signature (frontend/sparse/bcoo.py's
``one_program``, built on eager_jit's ``pytrees=``), not one execution per primitive; those whose result shape
depends on the values (``fromdense``/``sum_duplicates`` without ``nse=``) compute it with one program first.

Each test uses shapes of its own, so that its first call compiles (no other test has made that signature)."""
import logging

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.experimental import sparse
from kiln.experimental.sparse import BCOO

RNG = np.random.default_rng(0)


@pytest.fixture
def programs(caplog, primitive_runs):
    """``programs(fn)``: (the result of ``fn()``, the number of programs its call compiled), checking that no
    primitive ran op by op."""
    caplog.set_level(logging.WARNING, logger="kiln")

    def run(fn):
        with kiln.config.override("log_compiles", True):
            before, ran = len(caplog.records), len(primitive_runs)
            out = fn()
            kiln.block_until_ready(out)
            n = sum("XLA compilation" in r.getMessage() for r in caplog.records[before:])
        assert primitive_runs[ran:] == [], primitive_runs[ran:]
        return out, n
    return run


def _dense(shape, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(shape).astype(np.float32)
    mask = rng.random(shape) < 0.4
    return np.where(mask, m, np.float32(0))


def _sparse(shape, seed=0):
    m = _dense(shape, seed=seed)
    return m, BCOO.fromdense(knp.asarray(m))


def _value(x):
    return np.asarray(x.todense() if isinstance(x, sparse.JAXSparse) else x)


def test_matvec_and_vecmat(programs):
    m, a = _sparse((7, 3))
    x = knp.asarray(RNG.standard_normal(3).astype(np.float32))
    out, n = programs(lambda: a @ x)
    assert n == 1
    np.testing.assert_allclose(out, m @ np.asarray(x), rtol=1e-5, atol=1e-6)
    y = knp.asarray(RNG.standard_normal(7).astype(np.float32))
    out, n = programs(lambda: y @ a)
    assert n == 1
    np.testing.assert_allclose(out, np.asarray(y) @ m, rtol=1e-5, atol=1e-6)


def test_dense_products(programs):
    m, a = _sparse((7, 4))
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    out, n = programs(lambda: sparse.bcoo_dot_general(a, b, dimension_numbers=([[1], [0]], [[], []])))
    assert n == 1  # lists in dimension_numbers: hashed as tuples; a NumPy operand is taken as it is
    np.testing.assert_allclose(out, m @ b, rtol=1e-5, atol=1e-6)
    out, n = programs(lambda: a @ knp.asarray(b))
    assert n == 0  # the same signature: no new program
    np.testing.assert_allclose(out, m @ b, rtol=1e-5, atol=1e-6)
    c = RNG.standard_normal((3, 7)).astype(np.float32)
    out, n = programs(lambda: knp.asarray(c) @ a)
    assert n == 1
    np.testing.assert_allclose(out, c @ m, rtol=1e-5, atol=1e-6)


def test_todense_fromdense(programs):
    m = _dense((7, 5))
    dense = knp.asarray(m)
    a, n = programs(lambda: BCOO.fromdense(dense, nse=int((m != 0).sum())))
    assert n == 1
    out, n = programs(lambda: a.todense())
    assert n == 1
    np.testing.assert_array_equal(out, m)


def test_fromdense_computes_nse_first(programs):
    m = _dense((7, 6))
    b, n = programs(lambda: BCOO.fromdense(knp.asarray(m)))
    assert n == 2  # the number of nonzeros, then the conversion with that static nse
    assert b.nse == int((m != 0).sum())
    np.testing.assert_array_equal(_value(b), m)
    batched = _dense((2, 7, 6), seed=1)
    b, n = programs(lambda: BCOO.fromdense(knp.asarray(batched), n_batch=1))
    assert n == 2
    assert b.nse == int((batched != 0).sum(axis=(1, 2)).max())
    np.testing.assert_array_equal(_value(b), batched)


def test_transpose_sum_reshape(programs):
    m, a = _sparse((7, 8))
    out, n = programs(lambda: a.T)
    assert n == 1
    np.testing.assert_array_equal(_value(out), m.T)
    out, n = programs(lambda: a.sum(0))
    assert n == 1
    np.testing.assert_allclose(_value(out), m.sum(0), rtol=1e-5, atol=1e-6)
    out, n = programs(lambda: a.sum())
    assert n == 1  # the reduction and the dense 0-d result in one program
    np.testing.assert_allclose(out, m.sum(), rtol=1e-5, atol=1e-5)
    out, n = programs(lambda: a.reshape(8, 7))
    assert n == 1
    np.testing.assert_array_equal(_value(out), m.reshape(8, 7))
    out, n = programs(lambda: sparse.bcoo_transpose(a, permutation=[1, 0]))
    assert n == 0  # a list permutation: the tuple's program


def test_getitem(programs):
    m, a = _sparse((9, 4))
    for idx in [np.s_[1:3], np.s_[2], np.s_[::-2, 1], np.s_[..., None, 1:]]:
        out, n = programs(lambda: a[idx])
        assert n == 1, idx
        np.testing.assert_array_equal(_value(out), m[idx])


def test_sum_duplicates(programs):
    data = knp.asarray(np.array([1., 2., 0., 4.], np.float32))
    indices = knp.asarray(np.array([[0, 1], [2, 2], [3, 0], [0, 1]], np.int32))
    a = BCOO((data, indices), shape=(5, 3))
    expect = np.zeros((5, 3), np.float32)
    expect[0, 1], expect[2, 2] = 5., 2.
    out, n = programs(lambda: a.sum_duplicates())
    assert n == 2  # the number of distinct entries, then the sum with that static nse
    assert out.nse == 2
    np.testing.assert_array_equal(_value(out), expect)
    out, n = programs(lambda: a.sum_duplicates(nse=3, remove_zeros=False))
    assert n == 1
    assert out.nse == 3
    np.testing.assert_array_equal(_value(out), expect)


def test_elementwise_products(programs):
    m, a = _sparse((7, 9))
    m2, b = _sparse((7, 9), seed=3)
    out, n = programs(lambda: a * 2.5)
    assert n == 1
    np.testing.assert_allclose(_value(out), m * np.float32(2.5), rtol=1e-6)
    out, n = programs(lambda: a * knp.asarray(m2))
    assert n == 1
    np.testing.assert_allclose(_value(out), m * m2, rtol=1e-6)
    out, n = programs(lambda: a * b)
    assert n == 1
    np.testing.assert_allclose(_value(out), m * m2, rtol=1e-6)


def test_sparse_sparse_product(programs):
    m, a = _sparse((6, 9))
    m2, b = _sparse((9, 4), seed=2)
    out, n = programs(lambda: a @ b)
    assert n == 1
    np.testing.assert_allclose(_value(out), m @ m2, rtol=1e-5, atol=1e-5)


def test_inside_jit_and_errors_unchanged():
    m, a = _sparse((7, 10))
    x = RNG.standard_normal(10).astype(np.float32)
    np.testing.assert_allclose(kiln.jit(lambda a, x: (a @ x, a.T.todense()))(a, x)[0], m @ x, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        sparse.bcoo_dot_general(a, x, dimension_numbers=[1, 0])
    with pytest.raises(ValueError, match=r"permutation \[0, 0\] is not a permutation"):
        sparse.bcoo_transpose(a, permutation=[0, 0])
    with pytest.raises(IndexError, match="out of bounds"):
        a[7]
    with pytest.raises(TypeError, match="expected a BCOO array, got ndarray"):
        sparse.bcoo_todense(m)


def test_structural_ops(programs):
    m = _dense((1, 11, 3), seed=4)
    a = BCOO.fromdense(knp.asarray(m))
    out, n = programs(lambda: sparse.bcoo_squeeze(a, dimensions=[0]))
    assert n == 1
    np.testing.assert_array_equal(_value(out), m[0])
    out, n = programs(lambda: sparse.bcoo_rev(a, [1, 2]))
    assert n == 1
    np.testing.assert_array_equal(_value(out), m[:, ::-1, ::-1])
    out, n = programs(lambda: sparse.bcoo_broadcast_in_dim(a, shape=[2, 1, 11, 3], broadcast_dimensions=[1, 2, 3]))
    assert n == 1
    np.testing.assert_array_equal(_value(out), np.broadcast_to(m, (2, 1, 11, 3)))
    out, n = programs(lambda: sparse.bcoo_extract(a, knp.asarray(2 * m)))
    assert n == 1
    np.testing.assert_array_equal(_value(out), 2 * m)
    out, n = programs(lambda: sparse.bcoo_slice(a, start_indices=[0, 2, 0], limit_indices=[1, 9, 3]))
    assert n == 1
    np.testing.assert_array_equal(_value(out), m[:, 2:9])


def test_bcsr(programs):
    m = _dense((7, 12), seed=5)
    b, n = programs(lambda: sparse.BCSR.fromdense(knp.asarray(m)))
    assert n == 2  # the number of nonzeros, then the conversion
    out, n = programs(lambda: b.todense())
    assert n == 1
    np.testing.assert_array_equal(out, m)
    x = RNG.standard_normal(12).astype(np.float32)
    out, n = programs(lambda: b @ knp.asarray(x))
    assert n == 1
    np.testing.assert_allclose(out, m @ x, rtol=1e-5, atol=1e-6)
    out, n = programs(lambda: sparse.bcsr_dot_general(b, x, dimension_numbers=([[1], [0]], [[], []])))
    assert n == 1
    np.testing.assert_allclose(out, m @ x, rtol=1e-5, atol=1e-6)
    out, n = programs(lambda: b.sum_duplicates())
    assert n == 2
    np.testing.assert_array_equal(_value(out), m)
    with pytest.raises(TypeError, match="bcsr_todense: expected a BCSR array, got ndarray"):
        sparse.bcsr_todense(m)


def test_operators_through_sparsify(programs):
    """``A + B``, ``A - B``, ``abs(A)``, ``A ** 2`` and dense or scalar operands: sparsify of the dense function,
    one program per signature (the sparse rules keep nse static)."""
    m, a = _sparse((6, 9), seed=3)
    n_, b = _sparse((6, 9), seed=4)
    d = knp.asarray(RNG.standard_normal((6, 9)).astype(np.float32))
    cases = [(lambda: a + b, m + n_), (lambda: a - b, m - n_), (lambda: abs(a), np.abs(m)),
             (lambda: a ** 2, m ** 2), (lambda: a + d, m + np.asarray(d)), (lambda: d - a, np.asarray(d) - m)]
    for fn, want in cases:
        out, n = programs(fn)
        assert n == 1
        np.testing.assert_allclose(_value(out), want, rtol=1e-6, atol=1e-6)
        assert programs(fn)[1] == 0  # the same signature again: no new program
    s = a + b
    assert isinstance(s, BCOO) and s.nse == a.nse + b.nse  # both operands' entries stored, as JAX's
    assert type(a ** 3) is BCOO and programs(lambda: a ** 3)[1] == 0  # (compiled by the call before)


def test_indexing_with_integer_arrays(programs):
    # (a shape of its own: the first call of each index compiles)
    m, a = _sparse((5, 7), seed=3)
    for idx in [np.array([0, 2, 4]), (slice(1, None), np.array([[0, 6], [1, 1]])), (None, np.array([4, 0]), 2),
                (Ellipsis, np.array([-1, 0])), knp.asarray([3, 3, 1, 0])]:
        out, n = programs(lambda: a[idx])
        assert n == 1, idx
        assert isinstance(out, BCOO)
        np.testing.assert_array_equal(_value(out), m[np.asarray(idx) if isinstance(idx, kiln.Array) else idx])
        out, n = programs(lambda: a[idx])  # the same signature again: no compile
        assert n == 0
    # a boolean mask: the result's size depends on its values (op by op, as before)
    mask = m[:, 0] != 0
    np.testing.assert_array_equal(_value(a[mask]), m[mask])
