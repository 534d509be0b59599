"""kiln.experimental.sparse.BCOO against NumPy and scipy.sparse: conversions, products, sum, transpose, under jit,
grad and vmap, and the error paths."""
import numpy as np
import pytest
import scipy.sparse as ssp

import kiln
import kiln.numpy as jnp
from kiln.experimental import sparse
from kiln.experimental.sparse import BCOO

RNG = np.random.default_rng(0)


def _sparse_dense(shape, dtype=np.float32, density=0.4):
    m = RNG.standard_normal(shape) * (RNG.random(shape) < density)
    if np.issubdtype(dtype, np.integer):
        m = np.round(m * 3)
    return m.astype(dtype)


# --- fromdense / todense ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_fromdense_todense_round_trip(shape, dtype):
    m = _sparse_dense(shape, dtype)
    a = BCOO.fromdense(m)
    nnz = int(np.count_nonzero(m))
    assert (a.shape, a.dtype, a.nse, a.ndim) == (shape, np.dtype(dtype), nnz, len(shape))
    assert (a.n_batch, a.n_sparse, a.n_dense) == (0, len(shape), 0)
    assert a.indices_sorted and a.unique_indices
    np.testing.assert_array_equal(np.asarray(a.indices), np.argwhere(m))
    np.testing.assert_array_equal(np.asarray(a.data), m[m != 0])
    np.testing.assert_array_equal(np.asarray(a.todense()), m)
    np.testing.assert_array_equal(np.asarray(sparse.todense(a)), m)
    np.testing.assert_array_equal(np.asarray(sparse.bcoo_todense(sparse.bcoo_fromdense(m))), m)
    jitted = kiln.jit(lambda x: BCOO.fromdense(x, nse=nnz).todense())
    np.testing.assert_array_equal(np.asarray(jitted(m)), m)


def test_fromdense_float64_under_x64():
    with kiln.config.override("enable_x64", True):
        m = _sparse_dense((4, 3), np.float64)
        a = BCOO.fromdense(m, index_dtype=np.int64)
        assert a.dtype == np.float64 and a.indices.dtype == np.int64
        np.testing.assert_array_equal(np.asarray(kiln.jit(lambda b: b.todense())(a)), m)


def test_fromdense_padding_and_truncation():
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    a = BCOO.fromdense(m, nse=5)
    # JAX's padding: index = shape (out of range), data 0; todense and products ignore it.
    np.testing.assert_array_equal(np.asarray(a.indices), [[0, 1], [1, 0], [1, 2], [2, 3], [2, 3]])
    np.testing.assert_array_equal(np.asarray(a.data), [2, 1, 4, 0, 0])
    np.testing.assert_array_equal(np.asarray(a.todense()), m)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(np.asarray(a @ x), m @ x)
    np.testing.assert_allclose(np.asarray(np.ones((4, 2), np.float32) @ a), np.ones((4, 2)) @ m)
    np.testing.assert_allclose(np.asarray(a.sum(0).todense()), m.sum(0))
    np.testing.assert_allclose(np.asarray(a.T.todense()), m.T)
    b = kiln.jit(lambda x: BCOO.fromdense(x, nse=5))(m)
    np.testing.assert_array_equal(np.asarray(b.indices), np.asarray(a.indices))
    small = BCOO.fromdense(m, nse=2)  # too small: the last nonzeros are dropped, as in JAX
    np.testing.assert_array_equal(np.asarray(small.todense()), [[0, 2, 0], [1, 0, 0]])


def test_fromdense_batched_and_dense_layouts():
    m = np.stack([_sparse_dense((3, 4)) for _ in range(2)])
    b = BCOO.fromdense(m, n_batch=1)
    assert (b.n_batch, b.n_sparse, b.n_dense) == (1, 2, 0)
    assert b.nse == max(np.count_nonzero(m[0]), np.count_nonzero(m[1]))
    assert repr(b) == f"BCOO(float32[2, 3, 4], nse={b.nse}, n_batch=1)"
    np.testing.assert_array_equal(np.asarray(b.todense()), m)
    d = BCOO.fromdense(m, n_dense=1)
    assert (d.n_batch, d.n_sparse, d.n_dense) == (0, 2, 1) and d.data.shape == (d.nse, 4)
    np.testing.assert_array_equal(np.asarray(d.todense()), m)
    np.testing.assert_array_equal(np.asarray(d.sum(2).todense()), m.sum(2))


def test_duplicates_are_summed():
    data = np.array([1., 2., 3., 4.], np.float32)
    indices = np.array([[0, 1], [0, 1], [2, 0], [1, 1]], np.int32)
    a = BCOO((data, indices), shape=(3, 2))
    want = np.zeros((3, 2), np.float32)
    np.add.at(want, tuple(indices.T), data)
    np.testing.assert_array_equal(np.asarray(a.todense()), want)
    x = np.array([[1., 2.], [3., 4.]], np.float32)
    np.testing.assert_allclose(np.asarray(kiln.jit(lambda b, y: b @ y)(a, x)), want @ x)


def test_out_of_range_entries_add_nothing():
    # An entry out of range in any dimension is padding (JAX reads 0 for it): also in the contracted one only.
    d, i = jnp.array([1., 2., 7.]), jnp.array([[0, 1], [1, 2], [0, 5]])
    m = np.array([[0., 1., 0.], [0., 0., 2.]], np.float32)
    x, y = np.full((3, 2), 3, np.float32), np.ones(2, np.float32)

    def f(d, x, y):
        a = BCOO((d, i), shape=(2, 3))
        return jnp.sum(a @ x) + jnp.sum(y @ a)
    np.testing.assert_allclose(float(kiln.jit(f)(d, x, y)), np.sum(m @ x) + np.sum(y @ m))
    gd, gx, gy = kiln.grad(f, argnums=(0, 1, 2))(d, x, y)
    np.testing.assert_allclose(np.asarray(gd), [6 + 1, 6 + 1, 0])
    np.testing.assert_allclose(np.asarray(gx), np.broadcast_to(m.sum(0)[:, None], (3, 2)))
    np.testing.assert_allclose(np.asarray(gy), m.sum(1))


def test_repr_attributes_constructors():
    a = BCOO((jnp.array([1., 3., 5.]), jnp.array([[0, 0], [1, 1], [2, 2]])), shape=(3, 3))
    assert repr(a) == "BCOO(float32[3, 3], nse=3)"
    assert (len(a), a.size, a.ndim) == (3, 9, 2)
    np.testing.assert_array_equal(np.asarray(a.todense()), np.diag([1., 3., 5.]))
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(np.asarray(sparse.eye(3, 4, k=k).todense()), np.eye(3, 4, k=k))
    assert sparse.eye(2, k=5).nse == 0
    e = sparse.empty((2, 3), dtype=np.int32, nse=2)
    assert e.dtype == np.int32 and e.nse == 2
    np.testing.assert_array_equal(np.asarray(e.todense()), np.zeros((2, 3)))
    m = _sparse_dense((3, 3))
    b = BCOO.fromdense(m)
    np.testing.assert_allclose(np.asarray((b * 2.0).todense()), m * 2)
    np.testing.assert_allclose(np.asarray((3 * b).todense()), 3 * m)
    np.testing.assert_allclose(np.asarray((-b).todense()), -m)
    np.testing.assert_allclose(np.asarray((b / 2).todense()), m / 2)
    c = b.astype(np.int32)
    assert isinstance(c, BCOO) and c.dtype == np.int32
    assert kiln.tree_util.tree_leaves(b)[0] is b.data


# --- scipy.sparse ----------------------------------------------------------------------------------

def test_from_scipy_sparse():
    m = _sparse_dense((4, 5))
    for mat in (ssp.csr_matrix(m), ssp.coo_matrix(m), ssp.csc_array(m)):
        a = BCOO.from_scipy_sparse(mat)
        assert a.shape == (4, 5) and a.indices.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(a.todense()), m)
    # COO with duplicates: kept as stored entries, summed by todense and products (as scipy does).
    coo = ssp.coo_matrix((np.array([1., 2., 5.], np.float32), (np.array([0, 0, 2]), np.array([1, 1, 0]))),
                         shape=(3, 2))
    a = BCOO.from_scipy_sparse(coo)
    assert a.nse == 3
    np.testing.assert_array_equal(np.asarray(a.todense()), coo.toarray())
    x = np.array([[1., 2.], [3., 4.]], np.float32)
    np.testing.assert_allclose(np.asarray(a @ x), coo @ x)
    assert BCOO.from_scipy_sparse(coo, index_dtype=np.int16).indices.dtype == np.int16


def test_from_scipy_sparse_errors():
    with pytest.raises(TypeError, match="expected a scipy.sparse matrix or array"):
        BCOO.from_scipy_sparse(np.ones((2, 2)))
    with pytest.raises(ValueError, match="expected a 2-D sparse matrix, got shape \\(4,\\)"):
        BCOO.from_scipy_sparse(ssp.coo_array(np.array([0., 1., 0., 2.])))

    class Bad:
        shape, row, col, data = (2, 2), np.array([0, 1]), np.array([0]), np.array([1., 2.])

        def tocoo(self):
            return self
    with pytest.raises(ValueError, match="must be 1-D of one length"):
        BCOO.from_scipy_sparse(Bad())
    with pytest.raises(NotImplementedError, match="only n_batch=0 and n_dense=0"):
        BCOO.from_scipy_sparse(ssp.csr_matrix(np.eye(2)), n_batch=1)


# --- products, transpose, sum ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_matmul_both_sides(dtype):
    m = _sparse_dense((4, 3), dtype)
    a = BCOO.fromdense(m)
    xv, xm = _sparse_dense((3,), dtype, 1.0), _sparse_dense((3, 2), dtype, 1.0)
    yv, ym = _sparse_dense((4,), dtype, 1.0), _sparse_dense((5, 4), dtype, 1.0)
    cases = [(lambda b, x: b @ x, xv, m @ xv), (lambda b, x: b @ x, xm, m @ xm),
             (lambda b, y: y @ b, yv, yv @ m), (lambda b, y: y @ b, ym, ym @ m),
             (lambda b, y: np.asarray(y) @ b, ym, ym @ m)]
    for f, x, want in cases:
        got = f(a, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    outs = kiln.jit(lambda b, x1, x2, y1, y2: (b @ x1, b @ x2, y1 @ b, y2 @ b))(a, xv, xm, yv, ym)
    for got, (_, _, want) in zip(outs, cases):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_matmul_takes_the_index_columns_with_one_gather():
    # The index columns are taken by one gather ahead of the product, which XLA computes in a kernel of its own; read
    # as slices they were fused into the (nse, k) product and computed again for each of its elements (5-8% slower
    # on XLA's CPU compiler, Cora-sized A @ h). Both orientations, and the results still NumPy's.
    m = _sparse_dense((6, 5))
    a, x, y = BCOO.fromdense(m), _sparse_dense((5, 3), density=1.0), _sparse_dense((2, 6), density=1.0)
    for f, arg, want in ((lambda b, v: b @ v, x, m @ x), (lambda b, v: v @ b, y, y @ m)):
        text = kiln.jit(f).lower(a, arg).as_text()
        gathers = [line for line in text.splitlines() if "stablehlo.gather" in line]
        assert len(gathers) == 2, text  # the index columns, then the dense operand's rows
        assert '"stablehlo.gather"(%arg1,' in gathers[0], text  # (a's indices)
        assert "stablehlo.slice %arg1" not in text, text
        np.testing.assert_allclose(np.asarray(kiln.jit(f)(a, arg)), want, rtol=1e-5, atol=1e-5)


def test_matmul_sparse_vector_and_dot_general():
    v = np.array([0., 2., 0., -1.], np.float32)
    s = BCOO.fromdense(v)
    x, y = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(s @ x), v @ x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(s @ y), v @ y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(y.T @ s), y.T @ v, rtol=1e-6)
    m = _sparse_dense((2, 3, 4))
    a = BCOO.fromdense(m)
    z = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    got = sparse.bcoo_dot_general(a, z, dimension_numbers=(([1, 2], [2, 0]), ([], [])))
    np.testing.assert_allclose(np.asarray(got), np.einsum("ijk,kaj->ia", m, z), rtol=1e-5, atol=1e-5)
    got = sparse.bcoo_dot_general(z, a, dimension_numbers=(([2], [1]), ([], [])))
    np.testing.assert_allclose(np.asarray(got), np.einsum("kaj,ijl->kail", z, m), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_batch,n_dense", [(2, 0), (1, 1), (0, 1)])
def test_sum_and_transpose_of_every_layout(n_batch, n_dense):
    m = _sparse_dense((2, 3, 4, 2))
    a = BCOO.fromdense(m, n_batch=n_batch, n_dense=n_dense)
    axes_list = [(0,), (1,), (3,), (0, 2), (1, 2, 3), (0, 1, 2, 3)]
    perms = [p for p in ((1, 0, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2), (1, 0, 3, 2))
             if all((p[i] < n_batch) == (i < n_batch) and (p[i] >= 4 - n_dense) == (i >= 4 - n_dense)
                    for i in range(4))]

    def run(b):
        return ([sparse.bcoo_reduce_sum(b, axes=ax).todense() for ax in axes_list]
                + [b.transpose(p).todense() for p in perms])
    wants = [m.sum(ax) for ax in axes_list] + [m.transpose(p) for p in perms]
    for got in ([run(a)] if n_batch == 1 else []) + [kiln.jit(run)(a)]:  # eager once (it compiles every op)
        for g, want in zip(got, wants):
            np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-5)
    if n_batch:
        s = a.sum(0)
        assert s.n_batch == n_batch - 1 and s.nse == 2 * a.nse  # summed batch axes merge into the entries


def test_matmul_batched_bcoo_broadcasts_like_numpy():
    ms = np.stack([_sparse_dense((4, 5)) for _ in range(3)])
    b = BCOO.fromdense(ms, n_batch=1)
    x1, x2, x3 = (RNG.standard_normal(s).astype(np.float32) for s in ((5,), (5, 2), (3, 5, 2)))
    y1, y2, y3 = (RNG.standard_normal(s).astype(np.float32) for s in ((4,), (2, 4), (3, 2, 4)))
    wants = (ms @ x1, ms @ x2, ms @ x3, y1 @ ms, y2 @ ms, y3 @ ms)
    jitted = kiln.jit(lambda b, *a: (b @ a[0], b @ a[1], b @ a[2], a[3] @ b, a[4] @ b, a[5] @ b))(
        b, x1, x2, x3, y1, y2, y3)
    for j, want in zip(jitted, wants):
        assert j.shape == want.shape
        np.testing.assert_allclose(np.asarray(j), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(b @ x3), wants[2], rtol=1e-5, atol=1e-5)  # eager
    np.testing.assert_allclose(np.asarray(y2 @ b), wants[4], rtol=1e-5, atol=1e-5)
    vecs = BCOO.fromdense(ms[:, 0], n_batch=1)  # a stack of sparse vectors: a (3, 5) matrix
    np.testing.assert_allclose(np.asarray(vecs @ x2), ms[:, 0] @ x2, rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError, match=r"x @ BCOO with a batched BCOO \(n_batch=1, shapes \(3,\) and "
                                                  r"\(3, 5\)\).*kiln.vmap"):
        y1[:3] @ vecs


def test_multiply_dense_broadcasts():
    m = _sparse_dense((3, 4))
    a = BCOO.fromdense(m, nse=9)  # with padding
    vs = [RNG.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (3, 1))] + [np.float32(2)]
    outs = kiln.jit(lambda b, *vs: tuple((b * v).todense() for v in vs) + tuple((v * b).todense() for v in vs))(a, *vs)
    for got, v in zip(outs, vs + vs):
        np.testing.assert_allclose(np.asarray(got), m * v, rtol=1e-6)
    assert isinstance(a * vs[0], BCOO) and (a * vs[0]).nse == 9
    np.testing.assert_allclose(np.asarray(sparse.bcoo_multiply_dense(a, vs[1])),
                               np.asarray(a.data) * np.append(vs[1], 0)[np.minimum(np.asarray(a.indices)[:, 1], 4)])
    ms = np.stack([_sparse_dense((3, 4)) for _ in range(2)])
    b = BCOO.fromdense(ms, n_batch=1)
    for v in (RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 1, 4)), RNG.standard_normal(4)):
        v = v.astype(np.float32)
        np.testing.assert_allclose(np.asarray((b * v).todense()), ms * v, rtol=1e-6)
    # grad w.r.t. the dense factor: d/dv sum((A * v) @ x) = A * x (broadcast rows), summed to v's shape.
    x = RNG.standard_normal(4).astype(np.float32)
    g = kiln.grad(lambda v: jnp.sum((a * v) @ x))(vs[1])
    np.testing.assert_allclose(np.asarray(g), (m * x).sum(0), rtol=1e-5, atol=1e-6)


def test_dot_general_with_batched_bcoo():
    m = _sparse_dense((2, 3, 4))
    b = BCOO.fromdense(m, n_batch=1)
    x, y = RNG.standard_normal((4, 2, 5)).astype(np.float32), RNG.standard_normal((4, 5)).astype(np.float32)
    dims = [(b, x, ((([2], [0]), ([0], [1]))), "bij,jbk->bik"), (x, b, ((([0], [2]), ([1], [0]))), "jbk,bij->bki"),
            (b, y, ((([2], [0]), ([], []))), "bij,jk->bik"), (y.T, b, ((([1], [2]), ([], []))), "kj,bij->kbi")]
    outs = kiln.jit(lambda *ops: [sparse.bcoo_dot_general(l, r, dimension_numbers=dn) for l, r, dn in
                                  zip(ops[0::2], ops[1::2], [d[2] for d in dims])])(*[o for d in dims for o in d[:2]])
    for got, (l, r, _, spec) in zip(outs, dims):
        want = np.einsum(spec, *(np.asarray(o.todense()) if isinstance(o, BCOO) else o for o in (l, r)))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_sort_indices_and_sum_duplicates():
    data = np.array([1., 2., 3., 4., 0., 5.], np.float32)
    indices = np.array([[2, 0], [0, 1], [2, 0], [1, 1], [0, 0], [3, 2]], np.int32)  # the last is padding
    a = BCOO((data, indices), shape=(3, 2))
    dense = np.zeros((3, 2), np.float32)
    np.add.at(dense, tuple(indices[:5].T), data[:5])
    s = a.sort_indices()
    assert s.indices_sorted
    np.testing.assert_array_equal(np.asarray(s.indices), indices[np.lexsort(indices.T[::-1])])
    np.testing.assert_array_equal(np.asarray(s.todense()), dense)
    d = sparse.bcoo_sum_duplicates(a)  # keeps the explicit zero at (0, 0)
    assert d.nse == 4 and d.unique_indices and d.indices_sorted
    np.testing.assert_array_equal(np.asarray(d.indices), [[0, 0], [0, 1], [1, 1], [2, 0]])
    np.testing.assert_array_equal(np.asarray(d.data), [0, 2, 4, 4])
    e = a.sum_duplicates()  # remove_zeros=True
    np.testing.assert_array_equal(np.asarray(e.indices), [[0, 1], [1, 1], [2, 0]])
    np.testing.assert_array_equal(np.asarray(e.todense()), dense)
    f = kiln.jit(lambda b: b.sum_duplicates(nse=6))(a)  # padded with index = shape
    np.testing.assert_array_equal(np.asarray(f.indices)[3:], [[3, 2]] * 3)
    np.testing.assert_array_equal(np.asarray(f.todense()), dense)
    np.testing.assert_array_equal(np.asarray(a.sum_duplicates(nse=2).indices), [[0, 1], [1, 1]])  # truncated
    m = np.stack([_sparse_dense((3, 4)) for _ in range(2)])
    b = BCOO.fromdense(m, n_batch=1)
    twice = BCOO((jnp.concatenate([b.data, b.data], 1), jnp.concatenate([b.indices, b.indices], 1)), shape=b.shape)
    r = twice.sum_duplicates()
    assert r.nse == b.nse
    np.testing.assert_allclose(np.asarray(r.todense()), 2 * m, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(twice.sort_indices().todense()), 2 * m, rtol=1e-6)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="pass a concrete nse="):
        kiln.jit(lambda b: b.sum_duplicates())(a)


def test_transpose_and_sum():
    m = _sparse_dense((2, 3, 4))
    a = BCOO.fromdense(m)
    f = kiln.jit(lambda b: (b.T.todense(), b.transpose((1, 0, 2)).todense(), b.sum(1).todense(),
                            b.sum((0, 2)).todense(), b.sum()))
    for eager, jitted, want in zip(
            (a.T.todense(), a.transpose((1, 0, 2)).todense(), a.sum(axis=1).todense(), a.sum(axis=(0, 2)).todense(),
             a.sum()), f(a),
            (m.T, m.transpose(1, 0, 2), m.sum(1), m.sum((0, 2)), m.sum())):
        np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5, atol=1e-6)
    assert a.T.shape == (4, 3, 2) and not a.T.indices_sorted and a.sum(-1).shape == (2, 3)
    t = sparse.bcoo_transpose(a, permutation=(0, 2, 1))
    np.testing.assert_array_equal(np.asarray(t.todense()), m.transpose(0, 2, 1))
    r = sparse.bcoo_reduce_sum(a, axes=(0, 1, 2))
    assert isinstance(r, BCOO) and r.shape == ()
    np.testing.assert_allclose(np.asarray(r.todense()), m.sum(), rtol=1e-5, atol=1e-6)  # the sum may nearly cancel


# --- transformations -------------------------------------------------------------------------------

def test_grad_wrt_dense_operand_and_data():
    m = _sparse_dense((4, 3))
    a = BCOO.fromdense(m, nse=8)  # with padding entries
    x = RNG.standard_normal((3, 2)).astype(np.float32)

    def loss(data, x):
        return jnp.sum((BCOO((data, a.indices), shape=a.shape) @ x) ** 2)
    gd, gx = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(a.data, x)
    r = m @ x
    np.testing.assert_allclose(np.asarray(gx), 2 * m.T @ r, rtol=1e-5, atol=1e-5)
    rows, cols = np.asarray(a.indices).T
    valid = rows < 4
    want_gd = np.zeros(a.nse, np.float32)
    want_gd[valid] = (2 * r @ x.T)[rows[valid], cols[valid]]
    np.testing.assert_allclose(np.asarray(gd), want_gd, rtol=1e-5, atol=1e-5)
    # x @ A and through fromdense: d/dm sum((x @ A)**2) = 2 x^T (x m), at the nonzeros of m.
    y = RNG.standard_normal((2, 4)).astype(np.float32)
    gm = kiln.grad(lambda mm: jnp.sum((y @ BCOO.fromdense(mm, nse=8)) ** 2))(m)
    np.testing.assert_allclose(np.asarray(gm), (2 * y.T @ (y @ m)) * (m != 0), rtol=1e-5, atol=1e-5)


def test_vmap_over_dense_operand_and_stacked_bcoo():
    m = _sparse_dense((4, 3))
    a = BCOO.fromdense(m)
    xs = RNG.standard_normal((5, 3)).astype(np.float32)
    got = kiln.vmap(lambda x: a @ x)(xs)
    np.testing.assert_allclose(np.asarray(got), np.stack([m @ x for x in xs]), rtol=1e-5, atol=1e-6)
    got = kiln.jit(kiln.vmap(lambda b, x: x @ b, in_axes=(None, 0)))(a, RNG.standard_normal((5, 4), np.float32))
    assert got.shape == (5, 3)
    ms = np.stack([_sparse_dense((4, 3)) for _ in range(3)])
    stacked = BCOO.fromdense(ms, n_batch=1)
    seen = []

    def per_example(b, x):
        seen.append((b.shape, b.n_batch))
        return b @ x
    got = kiln.vmap(per_example)(stacked, xs[:3])
    assert seen == [((4, 3), 0)]
    np.testing.assert_allclose(np.asarray(got), np.stack([mi @ x for mi, x in zip(ms, xs)]), rtol=1e-5, atol=1e-6)
    # vmap producing BCOOs stacks them into n_batch=1, as in JAX.
    out = kiln.vmap(lambda mm: BCOO.fromdense(mm, nse=12))(ms)
    assert isinstance(out, BCOO) and out.shape == (3, 4, 3) and out.n_batch == 1
    np.testing.assert_array_equal(np.asarray(out.todense()), ms)
    f = kiln.jit(lambda b: b)
    assert f(a).shape == a.shape and f(stacked).shape == stacked.shape


# --- errors ----------------------------------------------------------------------------------------

def test_errors():
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    a = BCOO.fromdense(m)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="pass a concrete value to the nse"):
        kiln.jit(lambda x: BCOO.fromdense(x))(m)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="nse must be a static Python int"):
        kiln.jit(lambda x, n: BCOO.fromdense(x, nse=n))(m, 3)
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(4,\)"):
        a @ jnp.ones(4)
    with pytest.raises(TypeError, match=r"same shape, got \(3,\) and \(2,\)"):
        jnp.ones(3) @ a
    b = BCOO.fromdense(np.stack([m, m]), n_batch=1)
    with pytest.raises(NotImplementedError, match=r"contracting over a batch axis of a BCOO \(n_batch=1"):
        sparse.bcoo_dot_general(b, jnp.ones(2), dimension_numbers=(([0], [0]), ([], [])))
    with pytest.raises(NotImplementedError, match=r"batch dimensions \(1,\) of the BCOO operand must be its leading"):
        sparse.bcoo_dot_general(b, jnp.ones((2, 3)), dimension_numbers=(([2], [1]), ([1], [0])))
    with pytest.raises(TypeError, match=r"batch dimensions to have the same shape, got \(2,\) and \(4,\)"):
        sparse.bcoo_dot_general(b, jnp.ones((3, 4)), dimension_numbers=(([2], [0]), ([0], [1])))
    with pytest.raises(NotImplementedError, match="n_dense=1"):
        BCOO.fromdense(m, n_dense=1) @ jnp.ones(3)
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(2,\)"):
        a @ a  # (2, 3) @ (2, 3)
    np.testing.assert_allclose((a @ a.T).todense(), m @ m.T)  # a sparse product of two BCOO arrays
    with pytest.raises(NotImplementedError, match=r"BCOO @ BCOO: supported for 1-D or 2-D operands"):
        BCOO.fromdense(np.stack([m, m])) @ BCOO.fromdense(np.stack([m.T, m.T]))
    with pytest.raises(NotImplementedError, match="BCOO / x is supported for a scalar x only"):
        a / jnp.ones(3)
    with pytest.raises(NotImplementedError, match=r"only implemented where the output shape is the sparse array's; "
                                                  r"got shape=\(2, 3\) and x of shape \(2, 2, 3\)"):
        a * jnp.ones((2, 2, 3))
    np.testing.assert_allclose((a * a).todense(), m * m)  # bcoo_multiply_sparse
    with pytest.raises(TypeError, match="expected a BCOO array first"):
        sparse.bcoo_multiply_dense(m, a)
    with pytest.raises(ValueError, match="data must have shape batch \\+ \\(nse,\\) \\+ dense"):
        BCOO((jnp.ones(2), jnp.zeros((3, 2), jnp.int32)), shape=(3, 3))
    with pytest.raises(TypeError, match="indices must be integers"):
        BCOO((jnp.ones(2), jnp.zeros((2, 2))), shape=(3, 3))
    with pytest.raises(TypeError, match="the pair \\(data, indices\\)"):
        BCOO(jnp.ones(2), shape=(2,))
    with pytest.raises(ValueError, match="exceeds the rank"):
        BCOO.fromdense(m, n_batch=2, n_dense=1)
    for fmt, cls in [("csr", sparse.CSR), ("csc", sparse.CSC), ("coo", sparse.COO)]:  # the other formats' identity
        eye = sparse.eye(3, 4, k=1, sparse_format=fmt)
        assert type(eye) is cls
        np.testing.assert_array_equal(eye.todense(), np.eye(3, 4, k=1))
    with pytest.raises(ValueError, match=r"sparse_format='bcsr' not recognized; must be one of \['bcoo', 'coo'"):
        sparse.eye(3, sparse_format="bcsr")  # (as JAX: no BCSR identity)
    empty = sparse.empty((2, 3, 4), sparse_format="bcsr", n_batch=1, nse=2)
    assert type(empty) is sparse.BCSR and (empty.n_batch, empty.nse) == (1, 2)
    np.testing.assert_array_equal(empty.todense(), np.zeros((2, 3, 4)))
    with pytest.raises(TypeError, match="n_batch"):
        sparse.empty((2, 3), sparse_format="csr", n_batch=1)  # CSR has no batch axes (JAX passes it on alike)
    with pytest.raises(ValueError, match="not recognized"):
        sparse.empty((2,), sparse_format="dok")
    with pytest.raises(NotImplementedError,
                       match=r"moves axes between the batch \(n_batch=0\), sparse \(n_sparse=1\) and dense"):
        BCOO.fromdense(np.ones((2, 3)), n_dense=1).transpose()


def test_matmul_rank_errors():
    a = BCOO.fromdense(np.eye(3, dtype=np.float32))
    with pytest.raises(NotImplementedError, match=r"BCOO @ x: supported for 1-D or 2-D operands, got shapes \(3, 3\) "
                                                  r"and \(2, 3, 3\); for stacked operands use kiln.vmap"):
        a @ jnp.ones((2, 3, 3))
    with pytest.raises(NotImplementedError, match=r"x @ BCOO: .* got shapes \(2, 3, 3\) and \(3, 3\)"):
        jnp.ones((2, 3, 3)) @ a


def test_more_error_messages():
    m = np.array([[0., 2.], [1., 0.]], np.float32)
    a = BCOO.fromdense(m)
    dn = (([1], [0]), ([], []))
    cases = [
        (TypeError, "nse must be a Python int, got float", lambda: BCOO.fromdense(m, nse=1.5)),
        (ValueError, "nse must be non-negative, got -1", lambda: BCOO.fromdense(m, nse=-1)),
        (TypeError, "index_dtype must be an integer dtype", lambda: BCOO.fromdense(m, index_dtype=np.float32)),
        (NotImplementedError, "no sparse dimensions", lambda: BCOO.fromdense(m, n_dense=2)),
        (ValueError, "at least 2-D", lambda: BCOO((jnp.ones(2), jnp.zeros(2, jnp.int32)), shape=(2,))),
        (ValueError, "rank must be at least n_batch \\+ n_sparse",
         lambda: BCOO((jnp.ones(2), jnp.zeros((2, 3), jnp.int32)), shape=(2, 2))),
        (ValueError, "batch dimensions of indices \\(3,\\) differ",
         lambda: BCOO((jnp.ones((3, 2)), jnp.zeros((3, 2, 1), jnp.int32)), shape=(4, 2))),
        (TypeError, "expected a BCOO array, got ndarray", lambda: sparse.bcoo_todense(m)),
        (ValueError, "is not a permutation of the 2 axes", lambda: a.transpose((0, 0))),
        (ValueError, "axis 2 is out of range for an array of rank 2", lambda: a.sum(2)),
        (TypeError, "dimension_numbers must be", lambda: sparse.bcoo_dot_general(a, m, dimension_numbers=(1, 0))),
        (NotImplementedError, "must be its leading batch axes",
         lambda: sparse.bcoo_dot_general(a, m, dimension_numbers=(([1], [1]), ([0], [0])))),
        (TypeError, "1 batch dimension\\(s\\) for one operand but 0",
         lambda: sparse.bcoo_dot_general(a, m, dimension_numbers=(([1], [1]), ([0], [])))),
        (TypeError, "one operand must be a BCOO array", lambda: sparse.bcoo_dot_general(m, m, dimension_numbers=dn)),
        (TypeError, "1 contracting dimension\\(s\\) for the lhs but 2 for the rhs",
         lambda: sparse.bcoo_dot_general(a, m, dimension_numbers=(([1], [0, 1]), ([], [])))),
        (ValueError, "repeated contracting dimensions",
         lambda: sparse.bcoo_dot_general(a, m, dimension_numbers=(([1, 1], [0, 1]), ([], [])))),
        (ValueError, "exceeds the rank of shape=\\(2,\\)", lambda: sparse.empty((2,), n_batch=1, n_dense=1)),
        (TypeError, "must be a static Python int", lambda: kiln.jit(lambda k: sparse.eye(3, k=k))(1)),
    ]
    for cls, msg, fn in cases:
        with pytest.raises(cls, match=msg):
            fn()
    np.testing.assert_allclose(sparse.bcoo_dot_general(a, a, dimension_numbers=dn).todense(), m @ m)  # two BCOO
