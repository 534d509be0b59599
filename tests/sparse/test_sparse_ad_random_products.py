"""kiln's sparse AD wrappers (sparse.grad & co.), random_bcoo and the sparse-sparse products against NumPy:
analytic gradients restricted to the stored entries, layouts of the results, jit, vmap, and the error paths."""
import math

import numpy as np
import pytest
from kiln.frontend.sparse import ad as sparse_ad
from kiln.frontend.sparse.bcoo import BCOO
from kiln.frontend.sparse.products import bcoo_dot_general_sampled, bcoo_multiply_sparse, bcoo_spdot_general
from kiln.frontend.sparse.random import random_bcoo

import kiln
import kiln.numpy as jnp

RNG = np.random.default_rng(0)
MATMUL = (([1], [0]), ([], []))


def _sparse_dense(shape, density=0.5):
    return (RNG.standard_normal(shape) * (RNG.random(shape) < density)).astype(np.float32)


def _at(dense, mat):
    """``dense`` read at the stored indices of the unbatched, n_dense=0 BCOO ``mat`` (0 for padding)."""
    idx = np.asarray(mat.indices)
    ok = np.all(idx < np.asarray(mat.shape), axis=1)
    out = np.zeros(len(idx), dense.dtype)
    out[ok] = dense[tuple(idx[ok].T)]
    return out


def _assert_bcoo_like(g, mat, shape=None):
    assert isinstance(g, BCOO)
    assert g.shape == (mat.shape if shape is None else shape)
    lead = g.shape[:len(g.shape) - mat.ndim]
    np.testing.assert_array_equal(np.asarray(g.indices), np.broadcast_to(np.asarray(mat.indices),
                                                                         lead + tuple(mat.indices.shape)))
    assert g.data.shape == lead + tuple(mat.data.shape) and g.dtype == mat.dtype


# --- sparse.grad and friends -----------------------------------------------------------------------

def test_grad_of_bcoo_is_bcoo_with_analytic_values():
    m = _sparse_dense((3, 4))
    X = BCOO.fromdense(m, nse=8)  # with padding entries: their gradient is 0
    y = RNG.standard_normal(4).astype(np.float32)

    def f(X, y):
        return jnp.sum(jnp.sin(X @ y))
    # d/dX[i, j] sum(sin(X y)) = cos((X y)_i) y_j, read at the stored entries only
    want = _at(np.cos(m @ y)[:, None] * y[None, :], X)
    for fn in (sparse_ad.grad(f), kiln.jit(sparse_ad.grad(f))):
        g = fn(X, y)
        _assert_bcoo_like(g, X)
        assert g.indices_sorted and g.unique_indices
        np.testing.assert_allclose(np.asarray(g.data), want, rtol=1e-5, atol=1e-6)
    value, g = sparse_ad.value_and_grad(f)(X, y)
    np.testing.assert_allclose(float(value), np.sin(m @ y).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g.data), want, rtol=1e-5, atol=1e-6)


def test_grad_of_batched_and_dense_layouts_matches_finite_differences():
    m = _sparse_dense((2, 3, 2))
    for X in (BCOO.fromdense(m, n_batch=1), BCOO.fromdense(m, n_dense=1)):
        @kiln.jit
        def f(data):
            return jnp.sum(BCOO((data, X.indices), shape=X.shape).todense() ** 3)
        g = sparse_ad.grad(lambda X: jnp.sum(X.todense() ** 3))(X)
        _assert_bcoo_like(g, X)
        d0, eps = np.asarray(X.data, np.float64), 1e-3
        fd = np.zeros_like(d0)
        for k in np.ndindex(d0.shape):
            e = np.zeros_like(d0)
            e[k] = eps
            fd[k] = (float(f(jnp.asarray((d0 + e).astype(np.float32))))
                     - float(f(jnp.asarray((d0 - e).astype(np.float32))))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g.data), fd, rtol=2e-2, atol=2e-2)


def test_argnums_mixing_bcoo_and_dense_and_has_aux():
    m = _sparse_dense((3, 4))
    X, y = BCOO.fromdense(m), RNG.standard_normal(4).astype(np.float32)

    def f(X, y):
        out = X @ y
        return jnp.sum(out ** 2), out
    r = m @ y
    gX_want, gy_want = _at(2 * r[:, None] * y[None, :], X), 2 * m.T @ r
    (gX, gy), aux = sparse_ad.grad(f, argnums=(0, 1), has_aux=True)(X, y)
    _assert_bcoo_like(gX, X)
    np.testing.assert_allclose(np.asarray(gX.data), gX_want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gy), gy_want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(aux), r, rtol=1e-5)
    (value, aux), gy = sparse_ad.value_and_grad(f, argnums=1, has_aux=True)(X, y)
    assert not isinstance(gy, BCOO)
    np.testing.assert_allclose(np.asarray(gy), gy_want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(value), (r ** 2).sum(), rtol=1e-5)
    # As JAX's sparse AD: results in argument order, a single one unwrapped even for a tuple argnums.
    gy2, gX2 = None, None
    gX2, gy2 = sparse_ad.grad(lambda *a: f(*a)[0], argnums=(1, 0))(X, y)
    assert isinstance(gX2, BCOO) and not isinstance(gy2, BCOO)
    assert isinstance(sparse_ad.grad(lambda *a: f(*a)[0], argnums=(0,))(X, y), BCOO)
    assert isinstance(sparse_ad.grad(lambda *a: f(*a)[0], argnums=-2)(X, y), BCOO)


def test_grad_of_pytree_with_bcoo_leaf_and_allow_int():
    m = _sparse_dense((3, 3))
    params = {"w": BCOO.fromdense(m), "b": np.ones(3, np.float32)}

    def loss(p, n):
        return jnp.sum((p["w"] @ jnp.ones(3) + p["b"]) ** 2) * n
    g, gn = sparse_ad.grad(loss, argnums=(0, 1), allow_int=True)(params, 2)
    r = m.sum(1) + 1
    _assert_bcoo_like(g["w"], params["w"])
    np.testing.assert_allclose(np.asarray(g["w"].data), _at(np.broadcast_to(4 * r[:, None], (3, 3)), params["w"]),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g["b"]), 4 * r, rtol=1e-5)
    assert gn.dtype == kiln.float0


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian"])
def test_jacobians_are_bcoo_with_output_batch_axes(name):
    m = _sparse_dense((3, 4))
    X, y = BCOO.fromdense(m), RNG.standard_normal(4).astype(np.float32)
    J = getattr(sparse_ad, name)(lambda X, y: X @ y)(X, y)
    _assert_bcoo_like(J, X, shape=(3, 3, 4))
    assert (J.n_batch, J.n_sparse) == (1, 2)
    # d(X y)_o / dX[i, j] = [o == i] y_j
    want = np.einsum("oi,j->oij", np.eye(3), y) * (m != 0)
    np.testing.assert_allclose(np.asarray(J.todense()), want, rtol=1e-6)
    (JX, Jy), aux = getattr(sparse_ad, name)(lambda X, y: (X @ y, 1.0), argnums=(0, 1), has_aux=True)(X, y)
    np.testing.assert_allclose(np.asarray(JX.todense()), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(Jy), m, rtol=1e-6)
    assert float(aux) == 1.0
    blocks = getattr(sparse_ad, name)(lambda X: {"v": X @ y, "s": jnp.sum(X @ y)})(X)  # a pytree of outputs
    np.testing.assert_allclose(np.asarray(blocks["v"].todense()), want, rtol=1e-6)
    _assert_bcoo_like(blocks["s"], X)
    np.testing.assert_allclose(np.asarray(blocks["s"].data), _at(np.broadcast_to(y, (3, 4)), X), rtol=1e-6)


def test_ad_errors():
    X = BCOO.fromdense(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match=r"sparse.grad: argnums 2 is out of range for a function called with 2 "):
        sparse_ad.grad(lambda a, b: 0.0, argnums=2)(X, 1.0)
    with pytest.raises(TypeError, match=r"sparse.jacrev: argnums must be an int or a tuple of ints, got 'x'"):
        sparse_ad.jacrev(lambda a: a, argnums="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        sparse_ad.grad(lambda a: a, bogus=1)
    with pytest.raises(TypeError, match="requires real- or complex-valued inputs"):
        sparse_ad.grad(lambda a: jnp.sum(a.todense()).astype(jnp.float32))(X.astype(jnp.int32))
    with pytest.raises(TypeError, match="must return a scalar"):
        sparse_ad.grad(lambda a: a.todense())(X)


# --- random_bcoo -----------------------------------------------------------------------------------

def _rows(indices):
    """The indices of every batch element, as a list of (nse, n_sparse) NumPy arrays."""
    idx = np.asarray(indices)
    return list(idx.reshape((-1,) + idx.shape[-2:]))


@pytest.mark.parametrize("shape,n_batch,n_dense,nse,want_nse", [
    ((5, 6), 0, 0, 0.2, 6), ((3, 4, 5), 1, 0, 4, 4), ((4, 5, 2), 0, 1, 0.3, 6), ((2, 3, 4, 2), 1, 1, 5, 5)])
def test_random_bcoo_layouts(shape, n_batch, n_dense, nse, want_nse):
    key = kiln.random.key(1)
    m = random_bcoo(key, shape, nse=nse, n_batch=n_batch, n_dense=n_dense)
    n_sparse = len(shape) - n_batch - n_dense
    assert (m.shape, m.nse, m.n_batch, m.n_dense, m.n_sparse) == (shape, want_nse, n_batch, n_dense, n_sparse)
    assert m.data.shape == shape[:n_batch] + (want_nse,) + shape[n_batch + n_sparse:]
    assert m.dtype == np.float32 and m.indices.dtype == np.int32
    assert m.unique_indices and not m.indices_sorted
    sparse_shape = shape[n_batch:n_batch + n_sparse]
    for rows in _rows(m.indices):
        assert np.all((rows >= 0) & (rows < np.asarray(sparse_shape)))
        assert len({tuple(r) for r in rows}) == want_nse  # unique
    data = np.asarray(m.data)
    assert np.all((data >= 0) & (data < 1))
    # the same key gives the same array, under jit too
    jitted = kiln.jit(lambda k: random_bcoo(k, shape, nse=nse, n_batch=n_batch, n_dense=n_dense))(key)
    np.testing.assert_array_equal(np.asarray(jitted.indices), np.asarray(m.indices))
    np.testing.assert_allclose(np.asarray(jitted.data), data)


def test_random_bcoo_sorted_duplicates_dtypes_and_generator():
    key = kiln.random.key(2)
    m = random_bcoo(key, (2, 3, 4), n_batch=1, nse=20, unique_indices=False, sorted_indices=True,
                    dtype=np.float16, indices_dtype=np.int16)
    assert m.indices_sorted and not m.unique_indices and m.nse == 20
    assert m.dtype == np.float16 and m.indices.dtype == np.int16
    for rows in _rows(m.indices):
        assert [tuple(r) for r in rows] == sorted(tuple(r) for r in rows)
        assert len({tuple(r) for r in rows}) < 20  # 20 draws with replacement among 12 positions repeat
    shifted = random_bcoo(key, (30, 30), nse=0.5, minval=2.0, maxval=3.0)
    assert shifted.nse == 450 and np.all((np.asarray(shifted.data) >= 2) & (np.asarray(shifted.data) < 3))
    normal = random_bcoo(key, (40, 40), nse=800, generator=kiln.random.normal)
    assert abs(float(np.mean(np.asarray(normal.data)))) < 0.15 and 0.85 < np.std(np.asarray(normal.data)) < 1.15
    other = random_bcoo(kiln.random.key(3), (30, 30), nse=0.5, minval=2.0, maxval=3.0)
    assert not np.array_equal(np.asarray(other.indices), np.asarray(shifted.indices))


def test_random_bcoo_values_and_positions_are_roughly_uniform():
    m = random_bcoo(kiln.random.key(4), (40, 50), nse=1000)
    data, idx = np.asarray(m.data), np.asarray(m.indices)
    assert abs(data.mean() - 0.5) < 0.05 and abs(data.var() - 1 / 12) < 0.02
    # 1000 distinct positions out of 2000: each row holds ~25 (hypergeometric, sd ~3.5), each column ~20
    rows, cols = np.bincount(idx[:, 0], minlength=40), np.bincount(idx[:, 1], minlength=50)
    assert rows.min() > 8 and rows.max() < 42 and cols.min() > 5 and cols.max() < 35
    dense = np.asarray(m.todense())
    assert np.count_nonzero(dense) == 1000  # unique positions: nothing summed


def test_random_bcoo_matches_jax():
    jax = pytest.importorskip("jax")
    from jax.experimental.sparse import random_bcoo as jax_random_bcoo
    for kw in (dict(shape=(5, 6)), dict(shape=(3, 4, 5), n_batch=1, nse=4, sorted_indices=True)):
        ours, theirs = random_bcoo(kiln.random.key(0), **kw), jax_random_bcoo(jax.random.key(0), **kw)
        np.testing.assert_array_equal(np.asarray(ours.indices), np.asarray(theirs.indices))
        np.testing.assert_array_equal(np.asarray(ours.data), np.asarray(theirs.data))


def test_random_bcoo_errors():
    key = kiln.random.key(0)
    with pytest.raises(ValueError, match=r"invalid n_batch=2, n_dense=1 for shape=\(3, 4\)"):
        random_bcoo(key, (3, 4), n_batch=2, n_dense=1)
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\), got nse=1.5"):
        random_bcoo(key, (3, 4), nse=1.5)
    with pytest.raises(ValueError, match="got nse=13, expected between 0 and 12"):
        random_bcoo(key, (3, 4), nse=13)
    with pytest.raises(TypeError, match="nse must be a Python int, got str"):
        random_bcoo(key, (3, 4), nse="2")
    with pytest.raises(TypeError, match="indices_dtype must be an integer dtype, got float32"):
        random_bcoo(key, (3, 4), indices_dtype=np.float32)
    with pytest.raises(ValueError, match="does not have enough range to index the 400 positions"):
        random_bcoo(key, (20, 20), indices_dtype=np.int8)
    with pytest.raises(TypeError, match="nse must be a static number"):
        kiln.jit(lambda n: random_bcoo(key, (3, 4), nse=n))(2)


# --- bcoo_multiply_sparse --------------------------------------------------------------------------

@pytest.mark.parametrize("nb_l,nb_r,n_dense", [(1, 0, 0), (0, 2, 0), (1, 1, 1)])  # (0, 0, 0): next test
def test_multiply_sparse_layouts(nb_l, nb_r, n_dense):
    a, b = _sparse_dense((2, 3, 4)), _sparse_dense((2, 3, 4))
    A = BCOO.fromdense(a, n_batch=nb_l, n_dense=n_dense)
    B = BCOO.fromdense(b, n_batch=nb_r, n_dense=n_dense, nse=None)
    C = kiln.jit(bcoo_multiply_sparse)(A, B)  # eagerly in the next test
    assert isinstance(C, BCOO) and C.shape == a.shape
    assert (C.n_batch, C.n_dense) == (min(nb_l, nb_r), n_dense)
    # As JAX's: nse = lhs.nse * rhs.nse, each counted with the common n_batch (extra batch axes turn sparse).
    per = [M.nse * math.prod(M.shape[C.n_batch:M.n_batch]) for M in (A, B)]
    assert C.nse == per[0] * per[1]
    np.testing.assert_allclose(np.asarray(C.todense()), a * b, rtol=1e-6)


def test_multiply_sparse_duplicates_padding_vmap_and_grad():
    # lhs holds (0, 1) twice (summed: 1 + 2) and a padding entry; rhs holds (0, 1) and (1, 1)
    A = BCOO((jnp.array([1., 2., 7.]), jnp.array([[0, 1], [0, 1], [2, 2]])), shape=(2, 2))
    B = BCOO((jnp.array([5., 3.]), jnp.array([[0, 1], [1, 1]])), shape=(2, 2), unique_indices=True)
    C = bcoo_multiply_sparse(A, B)
    np.testing.assert_allclose(np.asarray(C.todense()), [[0., 15.], [0., 0.]])
    assert C.nse == 6 and not C.unique_indices
    g = sparse_ad.grad(lambda A: jnp.sum(bcoo_multiply_sparse(A, B).todense()))(A)
    _assert_bcoo_like(g, A)
    np.testing.assert_allclose(np.asarray(g.data), [5., 5., 0.])  # d/dA.data: B's value at each entry's index
    a, b = _sparse_dense((3, 2, 4)), _sparse_dense((3, 2, 4))
    out = kiln.vmap(lambda p, q: bcoo_multiply_sparse(p, q).todense())(BCOO.fromdense(a, n_batch=1),
                                                                     BCOO.fromdense(b, n_batch=1))
    np.testing.assert_allclose(np.asarray(out), a * b, rtol=1e-6)


def test_multiply_sparse_errors():
    A = BCOO.fromdense(np.eye(3, dtype=np.float32))
    with pytest.raises(TypeError, match="rhs must be a BCOO array, got ndarray; for a dense operand use"):
        bcoo_multiply_sparse(A, np.eye(3))
    with pytest.raises(ValueError, match=r"the same shape, got \(3, 3\) and \(3, 4\)"):
        bcoo_multiply_sparse(A, BCOO.fromdense(np.ones((3, 4), np.float32)))
    with pytest.raises(NotImplementedError, match=r"different numbers of dense dimensions \(n_dense=0 and 1\)"):
        bcoo_multiply_sparse(A, BCOO.fromdense(np.eye(3, dtype=np.float32), n_dense=1))


# --- bcoo_dot_general_sampled ----------------------------------------------------------------------

def test_dot_general_sampled_matches_numpy_and_grad():
    A, B = RNG.standard_normal((3, 5)).astype(np.float32), RNG.standard_normal((5, 4)).astype(np.float32)
    M = BCOO.fromdense(_sparse_dense((3, 4)), nse=9)  # with padding: reads 0
    sampled = kiln.jit(lambda A, B, i: bcoo_dot_general_sampled(A, B, i, dimension_numbers=MATMUL))
    for fn in (lambda *a: bcoo_dot_general_sampled(*a, dimension_numbers=MATMUL), sampled):
        np.testing.assert_allclose(np.asarray(fn(A, B, M.indices)), _at(A @ B, M), rtol=1e-5, atol=1e-5)
    w = RNG.standard_normal(M.nse).astype(np.float32)
    gA, gB = kiln.grad(lambda A, B: jnp.sum(w * sampled(A, B, M.indices)), argnums=(0, 1))(A, B)
    W = np.zeros((3, 4), np.float32)  # the cotangent scattered back to the dense product
    ok = np.all(np.asarray(M.indices) < [3, 4], axis=1)
    np.add.at(W, tuple(np.asarray(M.indices)[ok].T), w[ok])
    np.testing.assert_allclose(np.asarray(gA), W @ B.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gB), A.T @ W, rtol=1e-5, atol=1e-5)


def test_dot_general_sampled_batched_and_dense_layouts():
    A, B = RNG.standard_normal((2, 3, 5)).astype(np.float32), RNG.standard_normal((2, 5, 4)).astype(np.float32)
    dims = (([2], [1]), ([0], [0]))
    prod = A @ B
    M = BCOO.fromdense(_sparse_dense((2, 3, 4)), n_batch=1)
    data = bcoo_dot_general_sampled(A, B, M.indices, dimension_numbers=dims)
    assert data.shape == M.data.shape
    want = BCOO((jnp.asarray(data), M.indices), shape=prod.shape).todense()
    np.testing.assert_allclose(np.asarray(want), prod * (np.asarray(M.todense()) != 0), rtol=1e-5, atol=1e-5)
    D = BCOO.fromdense(_sparse_dense((2, 3, 4)), n_dense=1)  # sampled rows, dense trailing axis
    data = bcoo_dot_general_sampled(A, B, D.indices, dimension_numbers=dims)
    assert data.shape == D.data.shape
    np.testing.assert_allclose(np.asarray(data), prod[tuple(np.asarray(D.indices).T)], rtol=1e-5, atol=1e-5)
    shared = jnp.asarray(np.asarray(M.indices)[:1])  # a batch axis of size 1: the indices are shared
    data = bcoo_dot_general_sampled(A, B, shared, dimension_numbers=dims)
    idx = np.asarray(shared)[0]
    ok = np.all(idx < [3, 4], axis=1)
    for b in range(2):
        np.testing.assert_allclose(np.asarray(data)[b][ok], prod[b][tuple(idx[ok].T)], rtol=1e-5, atol=1e-5)


def test_dot_general_sampled_errors():
    A, B = np.ones((3, 5), np.float32), np.ones((5, 4), np.float32)
    idx = jnp.zeros((2, 2), jnp.int32)
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        bcoo_dot_general_sampled(A, B, idx, dimension_numbers=([1], [0]))
    with pytest.raises(TypeError, match="indices must be integers, got float32"):
        bcoo_dot_general_sampled(A, B, jnp.zeros((2, 2)), dimension_numbers=MATMUL)
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(5,\)"):
        bcoo_dot_general_sampled(A, B, idx, dimension_numbers=(([0], [0]), ([], [])))
    with pytest.raises(ValueError, match=r"indices of shape \(2, 3\) \(n_batch=0, n_sparse=3\) do not fit"):
        bcoo_dot_general_sampled(A, B, jnp.zeros((2, 3), jnp.int32), dimension_numbers=MATMUL)
    with pytest.raises(ValueError, match=r"batch dimensions \(2,\) of indices must equal those of the product \(3,\)"):
        bcoo_dot_general_sampled(A, B, jnp.zeros((2, 2, 1), jnp.int32), dimension_numbers=MATMUL)


# --- bcoo_spdot_general ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["matmul", "batched", "vector", "full", "lhs_batch_only"])
def test_spdot_general_matches_numpy(case):
    x, y, xb, yb, v = (_sparse_dense(s) for s in [(3, 4), (4, 5), (2, 3, 4), (2, 4, 5), (4,)])
    lhs, rhs, dims, want = {
        "matmul": (BCOO.fromdense(x), BCOO.fromdense(y), MATMUL, x @ y),
        "batched": (BCOO.fromdense(xb, n_batch=1), BCOO.fromdense(yb, n_batch=1), (([2], [1]), ([0], [0])), xb @ yb),
        "vector": (BCOO.fromdense(x), BCOO.fromdense(v), MATMUL, x @ v),
        "full": (BCOO.fromdense(v), BCOO.fromdense(v), (([0], [0]), ([], [])), v @ v),
        "lhs_batch_only": (BCOO.fromdense(xb, n_batch=1), BCOO.fromdense(y), (([2], [0]), ([], [])), xb @ y),
    }[case]
    out = kiln.jit(lambda a, b: bcoo_spdot_general(a, b, dimension_numbers=dims))(lhs, rhs)  # eagerly below
    assert isinstance(out, BCOO) and out.shape == want.shape
    assert out.indices_sorted and out.unique_indices and out.n_dense == 0
    assert out.n_batch == lhs.n_batch + rhs.n_batch - len(dims[1][0])
    # As JAX's: nse = min(lhs.nse (if a sparse axis is left) * rhs.nse (same), size of the sparse dimensions)
    n_l = lhs.nse if lhs.n_sparse > len(dims[0][0]) else 1
    n_r = rhs.nse if rhs.n_sparse > len(dims[0][1]) else 1
    assert out.nse == min(n_l * n_r, math.prod(out.shape[out.n_batch:]))
    np.testing.assert_allclose(np.asarray(out.todense()), want, rtol=1e-5, atol=1e-6)


def test_spdot_general_padding_grad_and_vmap():
    x, y = _sparse_dense((3, 4)), _sparse_dense((4, 5))
    X, Y = BCOO.fromdense(x, nse=9), BCOO.fromdense(y, nse=12)  # padding entries on both sides
    out = bcoo_spdot_general(X, Y, dimension_numbers=MATMUL, preferred_element_type=np.float32)
    np.testing.assert_allclose(np.asarray(out.todense()), x @ y, rtol=1e-5, atol=1e-6)
    W = RNG.standard_normal((3, 5)).astype(np.float32)

    def loss(X, Y):
        return jnp.sum(bcoo_spdot_general(X, Y, dimension_numbers=MATMUL).todense() * W)
    gX, gY = sparse_ad.grad(loss, argnums=(0, 1))(X, Y)
    _assert_bcoo_like(gX, X)
    _assert_bcoo_like(gY, Y)
    np.testing.assert_allclose(np.asarray(gX.data), _at(W @ y.T, X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gY.data), _at(x.T @ W, Y), rtol=1e-5, atol=1e-5)
    xb, yb = _sparse_dense((2, 3, 4)), _sparse_dense((2, 4, 5))
    out = kiln.vmap(lambda a, b: bcoo_spdot_general(a, b, dimension_numbers=MATMUL).todense())(
        BCOO.fromdense(xb, n_batch=1), BCOO.fromdense(yb, n_batch=1))
    np.testing.assert_allclose(np.asarray(out), xb @ yb, rtol=1e-5, atol=1e-6)


def test_spdot_general_errors():
    X, Y = BCOO.fromdense(np.eye(3, dtype=np.float32)), BCOO.fromdense(np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="rhs must be a BCOO array, got ndarray; with a dense operand use"):
        bcoo_spdot_general(X, np.ones((3, 2)), dimension_numbers=MATMUL)
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(2,\)"):
        bcoo_spdot_general(X, Y, dimension_numbers=(([1], [1]), ([], [])))
    with pytest.raises(ValueError, match="lhs contracting dimension 2 is out of range for an operand of rank 2"):
        bcoo_spdot_general(X, Y, dimension_numbers=(([2], [0]), ([], [])))
    with pytest.raises(NotImplementedError, match=r"dense dimensions \(n_dense=1 and 0\)"):
        bcoo_spdot_general(BCOO.fromdense(np.eye(3, dtype=np.float32), n_dense=1), Y, dimension_numbers=MATMUL)
    Xb = BCOO.fromdense(np.ones((2, 3, 3), np.float32), n_batch=1)
    with pytest.raises(NotImplementedError, match="only sparse dimensions can be contracted"):
        bcoo_spdot_general(Xb, BCOO.fromdense(np.ones(2, np.float32)), dimension_numbers=(([0], [0]), ([], [])))
    with pytest.raises(NotImplementedError, match=r"batch dimensions \(1,\) of the lhs must be batch dimensions"):
        bcoo_spdot_general(Xb, Xb, dimension_numbers=(([2], [2]), ([1], [1])))
    with pytest.raises(ValueError, match="cannot have unused batch dims on rhs"):
        bcoo_spdot_general(X, Xb, dimension_numbers=(([1], [1]), ([], [])))


def test_vmap_of_sparse_grad_and_of_random_bcoo():
    m = _sparse_dense((2, 3, 3))
    X = BCOO.fromdense(m, n_batch=1)
    g = kiln.vmap(sparse_ad.grad(lambda X: jnp.sum(X.todense() ** 2)))(X)  # one unbatched BCOO per example
    _assert_bcoo_like(g, X)
    np.testing.assert_allclose(np.asarray(g.data), 2 * np.asarray(X.data), rtol=1e-6)
    keys = kiln.random.split(kiln.random.key(5), 3)
    stacked = kiln.vmap(lambda k: random_bcoo(k, (4, 5), nse=3))(keys)
    assert (stacked.shape, stacked.n_batch, stacked.nse) == ((3, 4, 5), 1, 3)
    for b in range(3):
        one = random_bcoo(keys[b], (4, 5), nse=3)
        np.testing.assert_array_equal(np.asarray(stacked.indices[b]), np.asarray(one.indices))
