"""kiln's JAXSparse base class and its BCSR, COO, CSR and CSC formats against NumPy and scipy.sparse: layouts
(SciPy's indices/indptr, JAX's padding), round trips, products, jit, vmap, grad w.r.t. data and the dense
operand, and the error paths."""
import warnings

import numpy as np
import pytest
import scipy.sparse as ssp
from kiln.frontend.sparse.base import (
    CuSparseEfficiencyWarning,
    JAXSparse,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
)
from kiln.frontend.sparse.bcoo import BCOO
from kiln.frontend.sparse.bcsr import (
    BCSR,
    bcsr_dot_general,
    bcsr_eliminate_zeros,
    bcsr_extract,
    bcsr_fromdense,
    bcsr_sum_duplicates,
    bcsr_todense,
)
from kiln.frontend.sparse.coo_csr import (
    COO,
    CSC,
    CSR,
    coo_fromdense,
    coo_matmat,
    coo_matvec,
    coo_todense,
    csr_fromdense,
    csr_matmat,
    csr_matvec,
    csr_todense,
)

import kiln
import kiln.numpy as jnp

RNG = np.random.default_rng(1)
# One 3x4 matrix with an empty row and an empty column, and its transpose-free products, used throughout.
M = np.array([[0., 2., 0., 0.], [1., 0., 0., 3.], [0., 0., 0., 0.]], np.float32)
X = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
V = np.array([1., -2., 3., 0.5], np.float32)
W = np.array([2., -1., 5.], np.float32)


def _sparse_dense(shape, dtype=np.float32, density=0.4):
    m = RNG.standard_normal(shape) * (RNG.random(shape) < density)
    if np.issubdtype(dtype, np.integer):
        m = np.round(m * 3)
    return m.astype(dtype)


def _np(x):
    return np.asarray(x)


# --- the base class -----------------------------------------------------------------------------------

def test_class_hierarchy_and_base_properties():
    assert issubclass(SparseEfficiencyError, ValueError)
    assert issubclass(CuSparseEfficiencyWarning, SparseEfficiencyWarning)
    assert issubclass(SparseEfficiencyWarning, UserWarning)
    with pytest.raises(TypeError, match="abstract"):
        JAXSparse((), shape=(2, 2))
    for a in (COO.fromdense(M), CSR.fromdense(M), CSC.fromdense(M), BCSR.fromdense(M)):
        assert isinstance(a, JAXSparse)
        assert (a.shape, a.ndim, a.size, len(a), a.dtype, a.nse) == ((3, 4), 2, 12, 3, np.float32, 3)
        assert repr(a) == f"{type(a).__name__}(float32[3, 4], nse=3)"
        assert a.block_until_ready() is a
        with pytest.raises(TypeError):
            hash(a)


def test_operators_a_format_lacks():
    a = CSR.fromdense(M)
    # Binary operators fall back to Python's protocol (TypeError naming the operands), unary ones raise.
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'CSR' and 'int'"):
        a + 1
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for -: 'int' and 'CSR'"):
        1 - a
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*"):
        a * 2
    with pytest.raises(NotImplementedError, match="CSR.__neg__ is not implemented; use -x.todense()"):
        _ = -a
    with pytest.raises(NotImplementedError, match="CSR.sum is not implemented"):
        a.sum()


# --- COO, CSR, CSC: layouts and round trips -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_fromdense_layouts_match_scipy(dtype):
    m = _sparse_dense((5, 4), dtype)
    nnz = int(np.count_nonzero(m))
    coo, ref = COO.fromdense(m), ssp.coo_matrix(m)
    assert (coo.nse, coo.dtype, coo.row.dtype, coo._rows_sorted) == (nnz, np.dtype(dtype), np.int32, True)
    np.testing.assert_array_equal(_np(coo.row), ref.row)
    np.testing.assert_array_equal(_np(coo.col), ref.col)
    np.testing.assert_array_equal(_np(coo.data), ref.data)
    for cls, ref in ((CSR, ssp.csr_matrix(m)), (CSC, ssp.csc_matrix(m))):
        a = cls.fromdense(m)
        assert (a.nse, a.dtype, a.indices.dtype, a.indptr.dtype) == (nnz, np.dtype(dtype), np.int32, np.int32)
        np.testing.assert_array_equal(_np(a.data), ref.data)
        np.testing.assert_array_equal(_np(a.indices), ref.indices)
        np.testing.assert_array_equal(_np(a.indptr), ref.indptr)
    for a in (coo, CSR.fromdense(m), CSC.fromdense(m)):
        np.testing.assert_array_equal(_np(a.todense()), m)
    np.testing.assert_array_equal(_np(coo_todense(coo_fromdense(m))), m)
    np.testing.assert_array_equal(_np(csr_todense(csr_fromdense(m))), m)
    assert CSR.fromdense(m, index_dtype=np.int16).indptr.dtype == np.int16


def test_from_scipy_buffers_with_duplicates():
    # SciPy's own buffers (unsorted columns, a duplicate) give SciPy's dense matrix: duplicates are summed.
    data, indices, indptr = (np.array([1., 2., 5., 7.], np.float32), np.array([2, 0, 2, 1]), np.array([0, 3, 3, 4]))
    ref = ssp.csr_matrix((data, indices, indptr), shape=(3, 3))
    a = CSR((data, indices, indptr), shape=(3, 3))
    np.testing.assert_array_equal(_np(a.todense()), ref.toarray())
    np.testing.assert_allclose(_np(a @ X[:3]), ref @ X[:3])
    c = CSC((data, indices, indptr), shape=(3, 3))
    np.testing.assert_array_equal(_np(c.todense()), ssp.csc_matrix((data, indices, indptr), shape=(3, 3)).toarray())
    coo = ssp.coo_matrix((data, (np.array([0, 0, 2, 0]), indices)), shape=(3, 3))
    b = COO((data, coo.row, coo.col), shape=(3, 3))
    np.testing.assert_array_equal(_np(b.todense()), coo.toarray())
    np.testing.assert_allclose(_np(b @ V[:3]), coo @ V[:3])


def test_padding_and_truncation_as_jax():
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    # JAX's padding: COO at (0, 0), CSR past indptr[-1] with column 0, data 0 (JAX 0.10's layouts).
    coo = COO.fromdense(m, nse=5)
    np.testing.assert_array_equal(_np(coo.data), [2, 1, 4, 0, 0])
    np.testing.assert_array_equal(_np(coo.row), [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(_np(coo.col), [1, 0, 2, 0, 0])
    csr = CSR.fromdense(m, nse=5)
    np.testing.assert_array_equal(_np(csr.indices), [1, 0, 2, 0, 0])
    np.testing.assert_array_equal(_np(csr.indptr), [0, 1, 3])
    m2 = np.array([[3., 2.], [1., 0.]], np.float32)  # (0, 0) nonzero: the padding must not add to it
    for cls in (COO, CSR, CSC):
        a = cls.fromdense(m2, nse=4)
        assert a.nse == 4
        np.testing.assert_array_equal(_np(a.todense()), m2)
        np.testing.assert_allclose(_np(a @ np.ones(2, np.float32)), m2.sum(1))
        # Too small: the last nonzeros are dropped (in row-major order; column-major for CSC: the same two here).
        small = cls.fromdense(m, nse=2)
        np.testing.assert_array_equal(_np(small.todense()), [[0, 2, 0], [1, 0, 0]])


def test_transpose_swaps_formats():
    csr = CSR.fromdense(M)
    csc = csr.T
    assert type(csc) is CSC and csc.shape == (4, 3)
    assert csc.data is csr.data and csc.indices is csr.indices and csc.indptr is csr.indptr
    assert type(csc.T) is CSR and csc.T.shape == (3, 4)
    np.testing.assert_array_equal(_np(csc.todense()), M.T)
    np.testing.assert_array_equal(_np(CSC.fromdense(M).T.todense()), M.T)
    coo = COO.fromdense(M)
    t = coo.T
    assert t.shape == (4, 3) and (t._rows_sorted, t._cols_sorted) == (False, True)
    np.testing.assert_array_equal(_np(t.todense()), M.T)
    s = t._sort_indices()
    assert s._rows_sorted and np.all(np.diff(_np(s.row)) >= 0)
    np.testing.assert_array_equal(_np(s.todense()), M.T)


def test_empty_and_eye_as_jax():
    for k in (-1, 0, 2, 5):
        for cls in (COO, CSR, CSC):
            e = cls._eye(3, 4, k)
            assert e.shape == (3, 4) and e.nse == max(0, min(3, 4 - k) if k > 0 else min(3 + k, 4))
            np.testing.assert_array_equal(_np(e.todense()), np.eye(3, 4, k))
    np.testing.assert_array_equal(_np(CSR._eye(3, 4, 1).indptr), [0, 1, 2, 3])
    np.testing.assert_array_equal(_np(CSC._eye(3, 4, 1).indptr), [0, 0, 1, 2, 3])
    for cls, ptr in ((COO, None), (CSR, 3), (CSC, 5)):
        e = cls._empty((2, 4), dtype=np.int32)
        assert e.nse == 0 and e.dtype == np.int32 and e.shape == (2, 4)
        if ptr:
            np.testing.assert_array_equal(_np(e.indptr), np.zeros(ptr))
        np.testing.assert_array_equal(_np(e.todense()), np.zeros((2, 4)))


# --- COO, CSR, CSC: products, jit, vmap, grad -------------------------------------------------------------

@pytest.mark.parametrize("cls", [COO, CSR, CSC])
def test_products_against_numpy(cls):
    a = cls.fromdense(M)
    cases = [(a @ V, M @ V), (a @ X, M @ X), (W @ a, W @ M), (X.T[:, :3] @ a, X.T[:, :3] @ M),
             (a @ V.astype(np.int32), M @ V.astype(np.int32))]
    for got, want in cases:
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    outs = kiln.jit(lambda b, v, x: (b @ v, b @ x, b.T @ W, b.todense()))(a, V, X)
    for got, want in zip(outs, (M @ V, M @ X, M.T @ W, M)):
        np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    ai = cls.fromdense(M.astype(np.int32))
    assert (ai @ V.astype(np.int32)).dtype == np.int32


def test_matvec_matmat_functions():
    coo, csr = COO.fromdense(M), CSR.fromdense(M)
    np.testing.assert_allclose(_np(coo_matvec(coo, V)), M @ V)
    np.testing.assert_allclose(_np(coo_matvec(coo, W, transpose=True)), M.T @ W)
    np.testing.assert_allclose(_np(coo_matmat(coo, X)), M @ X)
    np.testing.assert_allclose(_np(coo_matmat(coo, X[:3], transpose=True)), M.T @ X[:3])
    np.testing.assert_allclose(_np(csr_matvec(csr, V)), M @ V)
    np.testing.assert_allclose(_np(csr_matvec(csr, W, True)), M.T @ W)
    np.testing.assert_allclose(_np(csr_matmat(csr, X)), M @ X)
    np.testing.assert_allclose(_np(csr_matmat(csr, X[:3], transpose=True)), M.T @ X[:3])


@pytest.mark.parametrize("cls", [COO, CSR, CSC])
def test_grad_wrt_data_and_operand(cls):
    a = cls.fromdense(M, nse=5)  # with two padding entries
    leaves, aux = a.tree_flatten()

    def f(data, x):
        b = cls.tree_unflatten(aux, (data,) + tuple(leaves[1:]))
        return jnp.sum(jnp.asarray(W) * (b @ x))
    gd, gx = kiln.jit(kiln.grad(f, argnums=(0, 1)))(a.data, V)
    # d/d data_i of w . (A v) = w[row_i] * v[col_i] for a stored entry; 0 for CSR/CSC padding (out of range),
    # w[0] * v[0] for COO's padding at (0, 0).
    rows, cols = (np.nonzero(M) if cls is not CSC else np.nonzero(M.T)[::-1])
    want = np.concatenate([W[rows] * V[cols], np.full(2, W[0] * V[0] if cls is COO else 0.)])
    np.testing.assert_allclose(_np(gd), want, rtol=1e-6)
    np.testing.assert_allclose(_np(gx), M.T @ W, rtol=1e-6)


@pytest.mark.parametrize("cls", [CSR, BCSR])
def test_grad_through_fromdense_and_finite_differences(cls):
    def f(m):
        return jnp.sum(jnp.sin(cls.fromdense(m, nse=4) @ jnp.asarray(V)))
    g = _np(kiln.grad(f)(M))
    # Only stored positions carry a derivative (the sparsity pattern is fixed): cos(M v)[r] * v[c] there.
    want = np.where(M != 0, np.cos(M @ V)[:, None] * V[None, :], 0)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    eps, (r, c) = 1e-2, (1, 3)
    bump = np.zeros_like(M)
    bump[r, c] = eps
    fd = (float(f(M + bump)) - float(f(M - bump))) / (2 * eps)
    np.testing.assert_allclose(g[r, c], fd, rtol=1e-3)


def test_vmap_over_operand_and_data():
    a = CSR.fromdense(M)
    xs = np.stack([V, 2 * V, -V])
    np.testing.assert_allclose(_np(kiln.vmap(lambda x: a @ x)(xs)), xs @ M.T, rtol=1e-6)
    datas = np.stack([_np(a.data), 3 * _np(a.data)])

    def build(d):
        return CSR((d, a.indices, a.indptr), shape=a.shape).todense()
    np.testing.assert_allclose(_np(kiln.vmap(build)(datas)), np.stack([M, 3 * M]))
    stacked = kiln.vmap(lambda d: COO((d, COO.fromdense(M).row, COO.fromdense(M).col), shape=(3, 4)))(datas)
    assert isinstance(stacked, COO) and stacked.data.shape == (2, 3)


# --- BCSR ---------------------------------------------------------------------------------------------

def test_bcsr_layout_matches_scipy_and_jax():
    m = _sparse_dense((5, 4))
    a, ref = BCSR.fromdense(m), ssp.csr_matrix(m)
    assert (a.n_batch, a.n_sparse, a.n_dense, a.nse) == (0, 2, 0, ref.nnz)
    np.testing.assert_array_equal(_np(a.indices), ref.indices)
    np.testing.assert_array_equal(_np(a.indptr), ref.indptr)
    np.testing.assert_array_equal(_np(a.data), ref.data)
    np.testing.assert_array_equal(_np(a.todense()), m)
    np.testing.assert_array_equal(_np(bcsr_todense(bcsr_fromdense(m))), m)
    # JAX's padding: column = number of columns, data 0, past indptr[-1]; indices_sorted/unique_indices False.
    p = BCSR.fromdense(np.array([[0., 2., 0.], [1., 0., 4.]], np.float32), nse=5)
    np.testing.assert_array_equal(_np(p.indices), [1, 0, 2, 3, 3])
    np.testing.assert_array_equal(_np(p.indptr), [0, 1, 3])
    np.testing.assert_array_equal(_np(p.data), [2, 1, 4, 0, 0])
    assert (p.indices_sorted, p.unique_indices) == (False, False)
    s = BCSR.from_scipy_sparse(ssp.coo_matrix(m))
    np.testing.assert_array_equal(_np(s.indptr), ref.indptr)
    np.testing.assert_array_equal(_np(s.todense()), m)


def test_bcsr_batched_and_dense_layouts():
    m = np.stack([_sparse_dense((3, 4)), _sparse_dense((3, 4), density=0.8)])
    a = BCSR.fromdense(m, n_batch=1)
    counts = [np.count_nonzero(x) for x in m]
    assert (a.n_batch, a.n_dense, a.nse) == (1, 0, max(counts))
    assert (a.data.shape, a.indices.shape, a.indptr.shape) == ((2, a.nse), (2, a.nse), (2, 4))
    assert repr(a) == f"BCSR(float32[2, 3, 4], nse={a.nse}, n_batch=1)"
    for b in range(2):
        ref = ssp.csr_matrix(m[b])
        np.testing.assert_array_equal(_np(a.indptr[b]), ref.indptr)
        np.testing.assert_array_equal(_np(a.indices[b, :ref.nnz]), ref.indices)
        np.testing.assert_array_equal(_np(a.indices[b, ref.nnz:]), 4)
    np.testing.assert_array_equal(_np(a.todense()), m)
    np.testing.assert_array_equal(_np(kiln.vmap(lambda x: x.todense())(a)), m)
    np.testing.assert_array_equal(_np(kiln.jit(lambda x: x.todense())(a)), m)
    np.testing.assert_array_equal(_np(bcsr_extract(a.indices, a.indptr, m)), _np(a.data))
    # fromdense under vmap stacks unbatched results into n_batch=1, as JAX's batching rule does.
    v = kiln.vmap(lambda x: BCSR.fromdense(x, nse=a.nse))(m)
    assert isinstance(v, BCSR) and (v.shape, v.n_batch, v.nse) == ((2, 3, 4), 1, a.nse)
    np.testing.assert_array_equal(_np(v.indptr), _np(a.indptr))
    np.testing.assert_array_equal(_np(v.todense()), m)
    d = BCSR.fromdense(np.moveaxis(m, 0, -1), n_dense=1)  # (3, 4, 2): a (3, 4) pattern of 2-vectors
    assert (d.n_batch, d.n_dense, d.data.shape[1:]) == (0, 1, (2,))
    assert repr(d) == f"BCSR(float32[3, 4, 2], nse={d.nse}, n_dense=1)"
    np.testing.assert_array_equal(_np(d.todense()), np.moveaxis(m, 0, -1))
    e = BCSR._empty((2, 3, 4), n_batch=1, nse=2)
    np.testing.assert_array_equal(_np(e.indices), np.full((2, 2), 4))
    np.testing.assert_array_equal(_np(e.todense()), np.zeros((2, 3, 4)))


def test_bcsr_bcoo_round_trip_and_pytree():
    m = _sparse_dense((4, 5))
    a = BCSR.fromdense(m, nse=8)
    coo = a.to_bcoo()
    assert isinstance(coo, BCOO) and coo.nse == 8 and coo.indices.shape == (8, 2)
    np.testing.assert_array_equal(_np(coo.indices[:np.count_nonzero(m)]), np.argwhere(m))
    np.testing.assert_array_equal(_np(coo.todense()), m)
    # An unsorted BCOO is sorted on the way in.
    perm = RNG.permutation(coo.nse)
    shuffled = BCOO((coo.data[perm], coo.indices[perm]), shape=coo.shape)
    back = BCSR.from_bcoo(shuffled)
    np.testing.assert_array_equal(_np(back.todense()), m)
    np.testing.assert_array_equal(_np(back.indptr), _np(a.indptr))
    leaves, treedef = kiln.tree_util.tree_flatten(a)
    assert leaves[0] is a.data and len(leaves) == 3
    again = kiln.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(again, BCSR) and again.shape == a.shape


def test_bcsr_sum_duplicates():
    # Row 0 holds column 1 twice and an explicit zero at column 2.
    data = np.array([1., 2., 0., 5.], np.float32)
    indices, indptr = np.array([1, 1, 2, 0]), np.array([0, 3, 4])
    a = BCSR((data, indices, indptr), shape=(2, 3))
    want = np.array([[0., 3., 0.], [5., 0., 0.]], np.float32)
    np.testing.assert_array_equal(_np(a.todense()), want)
    s = a.sum_duplicates()
    assert s.nse == 2
    np.testing.assert_array_equal(_np(s.indices), [1, 0])
    np.testing.assert_array_equal(_np(s.indptr), [0, 1, 2])
    np.testing.assert_array_equal(_np(s.todense()), want)
    k = bcsr_sum_duplicates(a)  # explicit zeros stay
    assert k.nse == 3
    np.testing.assert_array_equal(_np(k.indices), [1, 2, 0])
    np.testing.assert_array_equal(_np(k.todense()), want)
    padded = kiln.jit(lambda b: bcsr_eliminate_zeros(b, nse=4))(a)
    assert padded.nse == 4
    np.testing.assert_array_equal(_np(padded.todense()), want)


def test_bcsr_products_jit_grad():
    a = BCSR.fromdense(M)
    for got, want in ((a @ V, M @ V), (a @ X, M @ X), (W @ a, W @ M), (X.T[:, :3] @ a, X.T[:, :3] @ M)):
        assert got.shape == want.shape
        np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    dn = (([1], [0]), ([], []))
    np.testing.assert_allclose(_np(bcsr_dot_general(a, X, dimension_numbers=dn)), M @ X, rtol=1e-6)
    np.testing.assert_allclose(_np(bcsr_dot_general(M, X, dimension_numbers=dn)), M @ X, rtol=1e-6)

    def f(data, x):
        return jnp.sum(jnp.asarray(W) * (BCSR((data, a.indices, a.indptr), shape=a.shape) @ x))
    gd, gx = kiln.jit(kiln.grad(f, argnums=(0, 1)))(a.data, V)
    rows, cols = np.nonzero(M)
    np.testing.assert_allclose(_np(gd), W[rows] * V[cols], rtol=1e-6)
    np.testing.assert_allclose(_np(gx), M.T @ W, rtol=1e-6)


def test_bcsr_batched_products():
    m = np.stack([M, 2 * M[::-1]])
    a = BCSR.fromdense(m, n_batch=1)
    xs = np.stack([X, -X])
    for got, want in ((a @ V, m @ V), (a @ X, m @ X), (a @ xs, m @ xs), (W @ a, W @ m),
                      (X.T[:, :3] @ a, X.T[:, :3] @ m), (xs.transpose(0, 2, 1)[:, :, :3] @ a,
                                                         xs.transpose(0, 2, 1)[:, :, :3] @ m)):
        assert got.shape == want.shape
        np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    dn = (([2], [1]), ([0], [0]))
    np.testing.assert_allclose(_np(bcsr_dot_general(a, xs, dimension_numbers=dn)), m @ xs, rtol=1e-6)
    np.testing.assert_allclose(_np(kiln.jit(lambda b, x: b @ x)(a, X)), m @ X, rtol=1e-6)
    np.testing.assert_allclose(_np(kiln.vmap(lambda b, x: b @ x)(a, xs)), m @ xs, rtol=1e-6)


# --- error paths --------------------------------------------------------------------------------------

def test_matrix_format_errors():
    d, i = np.ones(2, np.float32), np.array([0, 1])
    cases = [
        (ValueError, r"COO must have ndim=2; got shape=\(2, 2, 2\)", lambda: COO((d, i, i), shape=(2, 2, 2))),
        (ValueError, r"CSR must have ndim=2; got shape=\(4,\)", lambda: CSR((d, i, np.array([0, 2])), shape=4)),
        (ValueError, r"COO: data and row and col must be 1-D arrays of one length \(nse\); got shapes data \(2,\), "
                     r"row \(2,\), col \(3,\)", lambda: COO((d, i, np.arange(3)), shape=(2, 2))),
        (TypeError, "COO: row must be integers, got float32", lambda: COO((d, d, i), shape=(2, 2))),
        (TypeError, r"the triple \(data, indices, indptr\)", lambda: CSR((d, i), shape=(2, 2))),
        (ValueError, r"CSR: indptr must have shape \(3,\) \(the number of rows plus 1\); got \(2,\)",
         lambda: CSR((d, i, np.array([0, 2])), shape=(2, 3))),
        (ValueError, r"CSC: indptr must have shape \(4,\) \(the number of columns plus 1\); got \(3,\)",
         lambda: CSC((d, i, np.array([0, 1, 2])), shape=(2, 3))),
        (TypeError, "CSR: indptr must be integers", lambda: CSR((d, i, np.zeros(3)), shape=(2, 2))),
        (ValueError, r"csr_fromdense: expected a 2-D array, got shape \(2, 2, 2\)",
         lambda: CSR.fromdense(np.ones((2, 2, 2)))),
        (ValueError, r"coo_fromdense: expected a 2-D array, got shape \(3,\)", lambda: COO.fromdense(np.ones(3))),
        (ValueError, r"CSC.fromdense: expected a 2-D array", lambda: CSC.fromdense(np.ones(3))),
        (TypeError, "index_dtype must be an integer dtype", lambda: CSR.fromdense(M, index_dtype=np.float32)),
        (TypeError, "nse must be a Python int, got float", lambda: COO.fromdense(M, nse=1.5)),
        (ValueError, "nse must be non-negative", lambda: CSR.fromdense(M, nse=-1)),
        (ValueError, r"CSR @ x: shapes \(3, 4\) and \(3,\) do not fit: x's first axis must have size 4",
         lambda: CSR.fromdense(M) @ W),
        (NotImplementedError, r"COO @ x: matmul with object of shape \(4, 2, 1\)",
         lambda: COO.fromdense(M) @ np.ones((4, 2, 1))),
        (NotImplementedError, "matmul between two sparse objects", lambda: CSR.fromdense(M) @ CSC.fromdense(M.T)),
        (ValueError, r"x @ CSC: shapes \(4,\) and \(3, 4\) do not fit", lambda: V @ CSC.fromdense(M)),
        (ValueError, r"csr_matvec: v of shape \(3,\) does not fit the matrix: its first axis must have size 4",
         lambda: csr_matvec(CSR.fromdense(M), W)),
        (ValueError, r"coo_matvec: v \(transpose=True\) of shape \(4,\) does not fit the matrix: its first axis "
                     "must have size 3", lambda: coo_matvec(COO.fromdense(M), V, transpose=True)),
        (ValueError, r"csr_matmat: B must be 2-D, got shape \(4,\)", lambda: csr_matmat(CSR.fromdense(M), V)),
        (TypeError, "csr_todense: expected a CSR matrix, got CSC; for a CSC matrix use .todense()",
         lambda: csr_todense(CSC.fromdense(M))),
        (TypeError, "coo_matvec: expected a COO matrix first, got CSR", lambda: coo_matvec(CSR.fromdense(M), V)),
        (NotImplementedError, "CSR.transpose: the axes argument is not supported",
         lambda: CSR.fromdense(M).transpose((1, 0))),
        (ValueError, r"CSC must have ndim=2; got shape=\(2, 3, 4\)", lambda: CSC._empty((2, 3, 4))),
    ]
    for exc, msg, fn in cases:
        with pytest.raises(exc, match=msg):
            fn()
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="pass a concrete value to the nse"):
        kiln.jit(lambda m: CSR.fromdense(m).todense())(M)


def test_bcsr_errors():
    d, i, p = np.ones(2, np.float32), np.array([0, 1]), np.array([0, 1, 2])
    a = BCSR.fromdense(M)
    cases = [
        (ValueError, r"BCSR: indptr shape must match the matrix shape plus 1: expected batch \+ \(rows \+ 1,\) = "
                     r"\(3,\) for shape=\(2, 2\)", lambda: BCSR((d, i, np.array([0, 2])), shape=(2, 2))),
        (ValueError, r"BCSR: BCSR array must have 2 sparse dimensions: indices of shape \(2,\) \(n_batch=0\) need "
                     r"shape of rank at least 2, got shape=\(2,\)", lambda: BCSR((d, i, p), shape=(2,))),
        (ValueError, r"BCSR: data of shape \(3,\) does not fit", lambda: BCSR((np.ones(3), i, p), shape=(2, 2))),
        (ValueError, r"indices batch dimensions \(3,\) differ from those of shape=\(2, 2, 2\)",
         lambda: BCSR((np.ones((3, 2)), np.zeros((3, 2), int), np.zeros((3, 3), int)), shape=(2, 2, 2))),
        (TypeError, "BCSR: indices must be integers", lambda: BCSR((d, d, p), shape=(2, 2))),
        (ValueError, r"bcsr_fromdense: must have 2 sparse dimensions: an input of shape \(2, 3, 4\) with n_batch=0 "
                     "and n_dense=0 has 3", lambda: BCSR.fromdense(np.ones((2, 3, 4)))),
        (NotImplementedError, "BCSR.transpose is not implemented", lambda: a.T),
        (NotImplementedError, r"BCSR.from_bcoo requires n_sparse=2; got n_sparse=3",
         lambda: BCSR.from_bcoo(BCOO.fromdense(np.ones((2, 2, 2))))),
        (TypeError, "BCSR.from_bcoo: expected a BCOO array, got BCSR", lambda: BCSR.from_bcoo(a)),
        (ValueError, r"BCSR.from_scipy_sparse requires a 2-D array", lambda: BCSR.from_scipy_sparse(ssp.coo_array(V))),
        (NotImplementedError, "only n_batch=0 and n_dense=0", lambda: BCSR.from_scipy_sparse(ssp.eye(2), n_batch=1)),
        (ValueError, r"BCSR @ x: shapes \(3, 4\) and \(3,\) do not fit: the contracted axes have sizes 4 \(BCSR\) "
                     r"and 3 \(x\)", lambda: a @ W),
        (NotImplementedError, r"x must be 1-D, 2-D, or have the same batch axes",
         lambda: BCSR.fromdense(np.stack([M, M]), n_batch=1) @ np.ones((3, 4, 2))),
        (NotImplementedError, r"BCSR @ x: a BCSR array with dense dimensions \(n_dense=1\)",
         lambda: BCSR.fromdense(np.ones((2, 3, 2)), n_dense=1) @ np.ones(3)),
        (NotImplementedError, "matmul between two sparse objects", lambda: a @ a),
        (NotImplementedError, "bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs; got ndarray "
                              "and BCSR", lambda: bcsr_dot_general(X.T, a, dimension_numbers=(([1], [1]), ([], [])))),
        (NotImplementedError, r"batch dimensions must be among the batch dimensions in the sparse representation; "
                              r"got lhs_batch=\(0,\), n_batch=0",
         lambda: bcsr_dot_general(a, np.ones((3, 4)), dimension_numbers=(([1], [1]), ([0], [0])))),
        (TypeError, "bcsr_dot_general: dimension_numbers must be", lambda: bcsr_dot_general(a, X, dimension_numbers=1)),
        (TypeError, "bcsr_todense: expected a BCSR array, got CSR", lambda: bcsr_todense(CSR.fromdense(M))),
        (TypeError, "bcsr_sum_duplicates: expected a BCSR array", lambda: bcsr_sum_duplicates(M)),
        (ValueError, r"BCSR._empty: must have 2 sparse dimensions", lambda: BCSR._empty((2, 3, 4))),
        (ValueError, r"bcsr_extract: indptr shape must match", lambda: bcsr_extract(a.indices, a.indptr, X)),
    ]
    for exc, msg, fn in cases:
        with pytest.raises(exc, match=msg):
            fn()
    with pytest.raises(kiln.errors.ConcretizationTypeError, match=r"BCSR.fromdense\(\) to be used in traced"):
        kiln.jit(lambda m: BCSR.fromdense(m).todense())(M)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checks above warn about nothing
        BCSR.fromdense(M)


def test_bcsr_concatenate_and_broadcast_in_dim_go_through_bcoo():
    from kiln.experimental.sparse import bcsr_broadcast_in_dim, bcsr_concatenate
    m = np.array([[1., 0., 2.], [0., 3., 0.]], np.float32)
    a, b = BCSR.fromdense(m), BCSR.fromdense(2 * m[::-1])
    for dimension in (0, 1):
        out = bcsr_concatenate([a, b], dimension=dimension)
        assert isinstance(out, BCSR) and out.nse == a.nse + b.nse
        np.testing.assert_array_equal(out.todense(), np.concatenate([m, 2 * m[::-1]], axis=dimension))
    out = kiln.jit(lambda x: bcsr_broadcast_in_dim(x, shape=(4, 2, 3), broadcast_dimensions=(1, 2)))(a)
    assert isinstance(out, BCSR) and out.n_batch == 1
    np.testing.assert_array_equal(out.todense(), np.broadcast_to(m, (4, 2, 3)))
    with pytest.raises(TypeError, match="bcsr_concatenate: expected a BCSR array, got ndarray"):
        bcsr_concatenate([a, m], dimension=0)
    with pytest.raises(NotImplementedError, match=r"bcoo_broadcast_in_dim: adding sparse dimensions with lengths"):
        bcsr_broadcast_in_dim(a, shape=(2, 3, 4), broadcast_dimensions=(0, 1))
