"""bcoo_gather (lax.gather of a BCOO operand) and BCOO indexing with index arrays, against NumPy's indexing and
kiln.lax.gather of the dense array."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental.sparse import BCOO, bcoo_gather

RNG = np.random.default_rng(0)
M = (RNG.standard_normal((4, 5, 3)) * (RNG.random((4, 5, 3)) < 0.4)).astype(np.float32)
POINTS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0, 1), start_index_map=(0, 1))
COLUMNS = lax.GatherDimensionNumbers(offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(1,))


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1)])
def test_gather_matches_the_dense_gather(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    for idx, dn, sizes in [(np.array([[0, 1], [3, 4], [2, 2], [9, 0]], np.int32), POINTS, (1, 1, 3)),
                           (np.array([[4], [0]], np.int32), COLUMNS, (4, 1, 3))]:
        out = bcoo_gather(a, idx, dn, sizes)
        want = np.asarray(lax.gather(jnp.asarray(M), idx, dn, sizes))  # (9, 0): clamped into bounds, as XLA's
        assert isinstance(out, BCOO) and out.shape == want.shape and out.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(out.todense()), want)
    # one slice per index vector, stacked along a new batch dimension (JAX's layout)
    assert bcoo_gather(a, np.array([[0, 1], [3, 4]], np.int32), POINTS, (1, 1, 3)).n_batch == 1


def test_gather_under_jit_and_its_gradient():
    a = BCOO.fromdense(M)
    idx = np.array([[0, 1], [3, 4], [2, 2]], np.int32)
    f = kiln.jit(lambda d, i: bcoo_gather(BCOO((d, a.indices), shape=a.shape), i, POINTS, (1, 1, 3)).todense())
    np.testing.assert_array_equal(np.asarray(f(a.data, idx)), M[idx[:, 0], idx[:, 1]])
    # linear in data: the gradient of a weighted sum is the weight at each stored entry's position, if gathered
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    g = np.asarray(kiln.grad(lambda d: jnp.sum(f(d, idx) * w))(a.data))
    want = np.zeros_like(M)
    want[idx[:, 0], idx[:, 1]] = w
    positions = tuple(np.asarray(a.indices).T)
    np.testing.assert_allclose(g, want[positions], rtol=1e-6)


@pytest.mark.parametrize("n_batch", [0, 1])
def test_indexing_with_arrays_matches_numpy(n_batch):
    a = BCOO.fromdense(M, n_batch=n_batch)
    for idx in [np.array([0, 2]), (slice(None), np.array([4, 0, 1])), (np.array([1, 3]), np.array([0, 4])),
                (Ellipsis, np.array([2, 0])), np.array([[1, 2], [0, 3]]), np.array([True, False, True, True]),
                (1, [3, 3]), (np.array([], np.int32),)]:
        out = a[idx]
        assert isinstance(out, BCOO), idx
        np.testing.assert_array_equal(np.asarray(out.todense()), M[idx], err_msg=str(idx))
    out = kiln.jit(lambda b, i: b[:, i].todense())(a, jnp.array([4, 0]))
    np.testing.assert_array_equal(np.asarray(out), M[:, [4, 0]])


def test_index_arrays_beside_slices_that_cut_a_dimension():
    # x[idx, :4]: the gather's windows are shorter than the dimension no index maps (this raised a reshape error).
    # Layouts (nse, n_batch) as JAX 0.10.2's for the same calls.
    m = np.arange(30, dtype=np.float32).reshape(5, 6) * (np.arange(30).reshape(5, 6) % 3 == 0)
    a = BCOO.fromdense(jnp.asarray(m))
    for idx, nse, n_batch in [((np.array([1, 3]), slice(None, 4)), 4, 1), ((np.array([1, 3]), slice(2, 5)), 3, 1),
                              ((slice(1, 3), np.array([0, 5, 2])), 6, 0),
                              ((np.array([4, 0]), slice(None, None, 2)), 1, 2)]:
        out = a[idx]
        np.testing.assert_array_equal(np.asarray(out.todense()), m[idx])
        assert (out.nse, out.n_batch) == (nse, n_batch), idx


def test_errors():
    a = BCOO.fromdense(M)
    with pytest.raises(NotImplementedError, match=r"mode='fill' is not supported .*\(operand.todense\(\)\)"):
        bcoo_gather(a, np.array([[0, 1]], np.int32), POINTS, (1, 1, 3), mode="fill")
    with pytest.raises(NotImplementedError, match=r"start_indices must be a dense array, got a BCOO array"):
        bcoo_gather(a, BCOO.fromdense(np.array([[0, 1]], np.int32)), POINTS, (1, 1, 3))
    with pytest.raises(NotImplementedError, match=r"BCOO index array is not supported .*\(index.todense\(\)\)"):
        a[BCOO.fromdense(np.array([0, 1]))]
    with pytest.raises(TypeError, match="bcoo_gather: expected a BCOO array, got ndarray"):
        bcoo_gather(M, np.array([[0, 1]], np.int32), POINTS, (1, 1, 3))
    with pytest.raises(ValueError, match=r"slice_sizes \(1, 1\) must have one entry per dimension"):  # lax.gather's
        bcoo_gather(a, np.array([[0, 1]], np.int32), POINTS, (1, 1))
