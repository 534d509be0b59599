"""The code examples of JAX's sparse documentation (the ``jax.experimental.sparse`` user guide, the docstrings of
``BCOO``, ``sparse.grad``/``value_and_grad`` and ``sparsify``), run under kiln with only the imports changed, and
what a user meets next when porting them (batched layouts, the other formats' gradients, ``vmap`` over a BCOO).

Expected values come from NumPy/SciPy, or are the literal outputs printed in JAX's docs (deterministic, and
checked against JAX 0.10.2)."""
import doctest
import functools

import numpy as np
import pytest
import scipy.optimize

import kiln
import kiln.numpy as jnp
from kiln.experimental import sparse

# The user guide of jax/experimental/sparse/__init__.py and the BCOO docstring, outputs as JAX prints them.
_USER_GUIDE = """
>>> M = jnp.array([[0., 1., 0., 2.],
...                [3., 0., 0., 0.],
...                [0., 0., 4., 0.]])
>>> M_sp = sparse.BCOO.fromdense(M)
>>> M_sp
BCOO(float32[3, 4], nse=4)
>>> M_sp.todense()
Array([[0., 1., 0., 2.],
       [3., 0., 0., 0.],
       [0., 0., 4., 0.]], dtype=float32)
>>> M_sp.data  # Explicitly stored data
Array([1., 2., 3., 4.], dtype=float32)
>>> M_sp.indices # Indices of the stored data
Array([[0, 1],
       [0, 3],
       [1, 0],
       [2, 2]], dtype=int32)
>>> M_sp.ndim
2
>>> M_sp.shape
(3, 4)
>>> M_sp.dtype
dtype('float32')
>>> M_sp.nse  # "number of specified elements"
4
>>> y = jnp.array([3., 6., 5.])
>>> M_sp.T @ y
Array([18.,  3., 20.,  6.], dtype=float32)
>>> M.T @ y  # Compare to dense version
Array([18.,  3., 20.,  6.], dtype=float32)
>>> from kiln import grad, jit
>>> def f(y):
...   return (M_sp.T @ y).sum()
...
>>> jit(grad(f))(y)
Array([3., 3., 4.], dtype=float32)
>>> def f(M, v):
...   return 2 * jnp.dot(jnp.log1p(M.T), v) + 1
...
>>> f(M, y)
Array([17.635532,  5.158883, 17.09438 ,  7.591674], dtype=float32)
>>> f_sp = sparse.sparsify(f)
>>> f_sp(M_sp, y)
Array([17.635532,  5.158883, 17.09438 ,  7.591674], dtype=float32)
>>> M = jnp.array([[0., 2., 0.], [1., 0., 4.]])
>>> M_sp = sparse.BCOO.fromdense(M)
>>> M_sp
BCOO(float32[2, 3], nse=3)
>>> M_sp.data
Array([2., 1., 4.], dtype=float32)
>>> M_sp.indices
Array([[0, 1],
       [1, 0],
       [1, 2]], dtype=int32)
>>> M_sp.todense()
Array([[0., 2., 0.],
       [1., 0., 4.]], dtype=float32)
>>> data = jnp.array([1., 3., 5.])
>>> indices = jnp.array([[0, 0],
...                      [1, 1],
...                      [2, 2]])
>>> mat = sparse.BCOO((data, indices), shape=(3, 3))
>>> mat
BCOO(float32[3, 3], nse=3)
>>> mat.todense()
Array([[1., 0., 0.],
       [0., 3., 0.],
       [0., 0., 5.]], dtype=float32)
>>> X = sparse.BCOO.fromdense(jnp.arange(6.))
>>> y = jnp.ones(6)
>>> sparse.value_and_grad(lambda X, y: X @ y)(X, y)
(Array(15., dtype=float32), BCOO(float32[6], nse=5))
>>> sparse.grad(lambda X, y: X @ y)(X, y)
BCOO(float32[6], nse=5)
>>> @sparse.sparsify
... def f(M, v):
...   return 2 * M.T @ v
>>> M = sparse.BCOO.fromdense(jnp.arange(12).reshape(3, 4))
>>> v = jnp.array([3, 4, 2])
>>> f(M, v)
Array([ 64,  82, 100, 118], dtype=int32)
"""


def test_user_guide_and_docstring_examples_print_as_in_jax():
    test = doctest.DocTestParser().get_doctest(_USER_GUIDE, {"jnp": jnp, "sparse": sparse}, "sparse_docs", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


# --- the user guide's values against NumPy ------------------------------------------------------------

M_NP = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)
Y_NP = np.array([3., 6., 5.], np.float32)


def test_user_guide_transposed_matvec_and_its_gradient():
    M_sp = sparse.BCOO.fromdense(M_NP)
    np.testing.assert_array_equal(np.asarray(M_sp.T @ Y_NP), M_NP.T @ Y_NP)
    # d/dy sum(M.T @ y) = M.sum(1), under jit(grad) and for the sparse matrix closed over.
    got = kiln.jit(kiln.grad(lambda y: (M_sp.T @ y).sum()))(Y_NP)
    np.testing.assert_array_equal(np.asarray(got), M_NP.sum(1))


def test_user_guide_jnp_functions_reject_sparse_input():
    # "jnp.dot(M_sp.T, y) will result in an error" (a TypeError in JAX too).
    with pytest.raises(TypeError, match=r"kiln.numpy.dot: argument 0 of type BCOO .* is not an array"):
        jnp.dot(sparse.BCOO.fromdense(M_NP).T, Y_NP)


def test_user_guide_sparsify_matches_numpy_eager_and_jit():
    def f(M, v):
        return 2 * jnp.dot(jnp.log1p(M.T), v) + 1
    want = 2 * np.log1p(M_NP.T) @ Y_NP + 1
    for fn in (sparse.sparsify(f), kiln.jit(sparse.sparsify(f))):
        out = fn(sparse.BCOO.fromdense(M_NP), Y_NP)
        assert not isinstance(out, sparse.BCOO) and out.shape == (4,) and out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_grad_docstring_gradient_is_the_stored_pattern():
    X = sparse.BCOO.fromdense(jnp.arange(6.))
    value, g = sparse.value_and_grad(lambda X, y: X @ y)(X, jnp.ones(6))
    assert float(value) == 15.0
    assert isinstance(g, sparse.BCOO) and (g.shape, g.nse, g.dtype) == ((6,), 5, np.float32)
    np.testing.assert_array_equal(np.asarray(g.indices), [[1], [2], [3], [4], [5]])  # arange(6) has a zero at 0
    np.testing.assert_array_equal(np.asarray(g.data), np.ones(5))


def test_sparsify_module_example_sin_matvec():
    # The module docstring of transform.py: random inputs (kiln.random), so the expected values come from NumPy on
    # the same inputs. (JAX's docs print nse=8 from an older PRNG; jax 0.10.2 and kiln give 11.)
    mat = kiln.random.uniform(kiln.random.key(1701), (5, 5))
    mat = mat.at[mat < 0.5].set(0)
    vec = kiln.random.uniform(kiln.random.key(42), (5,))

    def f(mat, vec):
        return -(jnp.sin(mat) @ vec)
    mat_np, vec_np = np.asarray(mat), np.asarray(vec)
    mat_sparse = sparse.BCOO.fromdense(mat)
    assert mat_sparse.nse == np.count_nonzero(mat_np)
    want = -(np.sin(mat_np) @ vec_np)
    np.testing.assert_allclose(np.asarray(f(mat, vec)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(sparse.sparsify(f)(mat_sparse, vec)), want, rtol=1e-6)


# --- the user guide's sparse logistic regression ------------------------------------------------------

def _classification_data(n=60, d=6):
    """A stand-in for sklearn's make_classification (not installed): a noisy linear model, 60% of X zero."""
    rng = np.random.default_rng(1701)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.4)
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(np.float32)
    return X.astype(np.float32), y


def _numpy_logreg(X, y):
    """The maximum-likelihood parameters in float64 (SciPy's BFGS with the exact gradient)."""
    A = np.concatenate([np.ones((len(X), 1)), X], axis=1).astype(np.float64)

    def loss_and_grad(p):
        z = A @ p
        loss = np.mean(np.logaddexp(0, z) - y * z)
        return loss, A.T @ (1 / (1 + np.exp(-z)) - y) / len(y)
    return scipy.optimize.minimize(loss_and_grad, np.zeros(A.shape[1]), jac=True, method="BFGS", tol=1e-10).x


def test_sparse_logistic_regression_example():
    from kiln.scipy import optimize

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def y_model(params, X):
        return sigmoid(jnp.dot(X, params[1:]) + params[0])

    def loss(params, X, y):
        y_hat = y_model(params, X)
        return -jnp.mean(y * jnp.log(y_hat) + (1 - y) * jnp.log(1 - y_hat))

    def fit_logreg(X, y):
        params = jnp.zeros(X.shape[1] + 1)
        result = optimize.minimize(functools.partial(loss, X=X, y=y), x0=params, method='BFGS')
        return result.x

    X, y = _classification_data()
    want = _numpy_logreg(X, y)
    params_dense = fit_logreg(X, y)
    Xsp = sparse.BCOO.fromdense(X)
    assert Xsp.nse == np.count_nonzero(X)
    params_sparse = sparse.sparsify(fit_logreg)(Xsp, y)
    assert params_sparse.shape == (X.shape[1] + 1,) and params_sparse.dtype == np.float32
    # float32 BFGS stops near the optimum (JAX's too): agree with the float64 optimum to a few 1e-3.
    np.testing.assert_allclose(np.asarray(params_dense), want, atol=5e-3)
    np.testing.assert_allclose(np.asarray(params_sparse), want, atol=5e-3)


# --- batched BCOO, as the user guide's "batching" describes (n_batch / n_dense layouts) ---------------

B_NP = np.array([[[0., 1.], [2., 0.]], [[3., 0.], [0., 0.]]], np.float32)


@pytest.mark.parametrize("n_batch, n_dense, nse, data_shape, indices_shape", [
    (0, 0, 3, (3,), (3, 3)), (1, 0, 2, (2, 2), (2, 2, 2)), (0, 1, 3, (3, 2), (3, 2)),
    (1, 1, 2, (2, 2, 2), (2, 2, 1)), (2, 0, 1, (2, 2, 1), (2, 2, 1, 1))])
def test_fromdense_layouts(n_batch, n_dense, nse, data_shape, indices_shape):
    a = sparse.BCOO.fromdense(B_NP, n_batch=n_batch, n_dense=n_dense)
    assert (a.n_batch, a.n_sparse, a.n_dense, a.nse) == (n_batch, 3 - n_batch - n_dense, n_dense, nse)
    assert (a.data.shape, a.indices.shape) == (data_shape, indices_shape)
    extra = (f", n_batch={n_batch}" if n_batch else "") + (f", n_dense={n_dense}" if n_dense else "")
    assert repr(a) == f"BCOO(float32[2, 2, 2], nse={nse}{extra})"
    np.testing.assert_array_equal(np.asarray(a.todense()), B_NP)


def test_vmap_over_batch_dimension_and_jit_fromdense():
    a = sparse.BCOO.fromdense(B_NP, n_batch=1)
    v = np.array([1., 2.], np.float32)
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda s: s @ v)(a)), B_NP @ v)
    np.testing.assert_array_equal(np.asarray(a @ v), B_NP @ v)
    stacked = kiln.vmap(lambda b: sparse.BCOO.fromdense(b, nse=2))(B_NP)
    assert repr(stacked) == "BCOO(float32[2, 2, 2], nse=2, n_batch=1)"
    np.testing.assert_array_equal(np.asarray(stacked.todense()), B_NP)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match=r"must pass a concrete value to the nse"):
        kiln.jit(sparse.BCOO.fromdense)(B_NP)


@pytest.mark.parametrize("fmt", ["BCOO", "BCSR"])
def test_vmap_over_unbatched_sparse_array_names_the_problem(fmt):
    # vmap maps every leaf: axis 0 of data/indices of an n_batch=0 array is its entry axis, not a dimension.
    # (It recursed without end in kiln; JAX raises "Cannot map in_axis=0 for BCOO array with n_batch=0".)
    a = getattr(sparse, fmt).fromdense(M_NP)
    for fn in (lambda s: s @ jnp.ones(4), lambda s: s.todense()):
        with pytest.raises(ValueError, match=f"in_axes=0 over a {fmt} with n_batch=0.*in_axes=None"):
            kiln.vmap(fn)(a)
    # in_axes=None (the matrix shared) is the way to map over the dense operand.
    out = kiln.vmap(lambda s, v: s @ v, in_axes=(None, 0))(a, np.eye(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), (M_NP @ np.eye(4)).T)


def test_update_layout_efficiency_error_and_warning():
    a = sparse.BCOO.fromdense(M_NP)
    with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_batch from 0 to 1"):
        a.update_layout(n_batch=1)
    with pytest.warns(sparse.SparseEfficiencyWarning, match="increasing n_dense from 0 to 1"):
        b = sparse.bcoo_update_layout(a, n_dense=1, on_inefficient="warn")
    # One dense row per stored entry, duplicate row indices kept (as JAX's: nse stays 4, not the 3 rows).
    assert (b.n_batch, b.n_dense, b.nse) == (0, 1, 4)
    np.testing.assert_array_equal(np.asarray(b.indices), [[0], [0], [1], [2]])
    np.testing.assert_array_equal(np.asarray(b.todense()), M_NP)


# --- sum_duplicates that removes every entry ------------------------------------------------------------

@pytest.mark.parametrize("n_batch", [0, 1])
def test_sum_duplicates_of_all_zero_entries_gives_nse_0(n_batch):
    # It raised IndexError (a scatter into the empty result); JAX returns nse=0.
    a = sparse.BCOO.fromdense(B_NP, n_batch=n_batch) * 0.
    out = a.sum_duplicates()
    assert out.nse == 0 and out.shape == B_NP.shape and out.indices.shape == (2,) * n_batch + (0, 3 - n_batch)
    np.testing.assert_array_equal(np.asarray(out.todense()), np.zeros_like(B_NP))
    assert sparse.bcoo_eliminate_zeros(a).nse == 0
    assert sparse.BCSR.fromdense(M_NP * 0., nse=2).sum_duplicates().nse == 0
    jitted = kiln.jit(lambda s: s.sum_duplicates(nse=0).todense())(a)
    np.testing.assert_array_equal(np.asarray(jitted), np.zeros_like(B_NP))


# --- sparse + sparse: one array passed twice stores both sets of entries, as in JAX -----------------------

def test_adding_a_sparse_array_to_itself_keeps_both_entry_sets_eagerly_and_under_jit():
    a = sparse.BCOO.fromdense(M_NP)
    results = {"eager": a + a, "eager_sub": a - a, "jit2": kiln.jit(lambda x, y: x + y)(a, a),
               "jit1": kiln.jit(lambda x: x + x)(a), "sparsify2": sparse.sparsify(lambda x, y: x + y)(a, a)}
    for name, out in results.items():
        assert isinstance(out, sparse.BCOO) and out.nse == 2 * a.nse, name
        np.testing.assert_array_equal(np.asarray(out.todense()), 0 * M_NP if name == "eager_sub" else 2 * M_NP)
    # Within one sparsified function the entries are shared: the data add, nse stays (as JAX's).
    same = sparse.sparsify(lambda x: x + x)(a)
    assert same.nse == a.nse
    np.testing.assert_array_equal(np.asarray(same.todense()), 2 * M_NP)
    # Two BCOOs built on one indices array are two arguments too; the data still differentiate.
    def both(d):
        return (sparse.BCOO((d, a.indices), shape=a.shape) + sparse.BCOO((d, a.indices), shape=a.shape)).todense()
    np.testing.assert_array_equal(np.asarray(kiln.grad(lambda d: both(d).sum())(a.data)), 2 * np.ones(a.nse))
    prod = sparse.sparsify(lambda x, y: x * y)(a, a)  # two arguments: a sparse-sparse product
    assert prod.nse == a.nse ** 2
    np.testing.assert_array_equal(np.asarray(prod.todense()), M_NP * M_NP)


# --- sparse.grad and friends for every format -------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["BCSR", "COO", "CSR", "CSC"])
def test_sparse_grad_for_every_format(fmt):
    # JAX's sparse.grad differentiates w.r.t. the data of any sparse format; kiln's took BCOO only. (JAX's CSC
    # gradient is wrong here, [1, 0, 2, 0]: the analytic one is each entry's column.)
    a = getattr(sparse, fmt).fromdense(M_NP)
    v = np.arange(4., dtype=np.float32)
    value, g = sparse.value_and_grad(lambda s: (s @ v).sum())(a)
    assert float(value) == (M_NP @ v).sum()
    assert type(g) is type(a) and g.shape == a.shape and g.nse == a.nse
    leaves, grad_leaves = a.tree_flatten()[0], g.tree_flatten()[0]
    for index, grad_index in zip(leaves[1:], grad_leaves[1:]):
        np.testing.assert_array_equal(np.asarray(grad_index), np.asarray(index))
    # d sum(M @ v) / dM_ij = v_j, on the stored pattern (the gradient's todense puts each entry in its place).
    want = (M_NP != 0) * v
    np.testing.assert_array_equal(np.asarray(g.todense()), want)
    np.testing.assert_array_equal(np.asarray(kiln.jit(sparse.grad(lambda s: (s @ v).sum()))(a).todense()), want)


def test_sparse_jacobian_layouts_and_the_2d_format_error():
    a = sparse.BCSR.fromdense(M_NP)
    jac = sparse.jacobian(lambda s: s @ jnp.arange(4.))(a)
    assert repr(jac) == "BCSR(float32[3, 3, 4], nse=4, n_batch=1)"  # as JAX's
    want = np.eye(3)[:, :, None] * np.arange(4.) * (M_NP != 0)  # d(M @ v)_k / dM_ij = [k == i] v_j on the pattern
    np.testing.assert_array_equal(np.asarray(jac.todense()), want)
    with pytest.raises(NotImplementedError, match="Jacobian w.r.t. a COO argument .* Convert the argument to BCOO"):
        sparse.jacobian(lambda s: s @ jnp.arange(4.))(sparse.COO.fromdense(M_NP))
