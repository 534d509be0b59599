"""kiln.experimental.sparse's structural BCOO operations (slice, dynamic_slice, reshape, squeeze, rev, concatenate,
broadcast_in_dim, update_layout, extract, indexing) against NumPy on the dense form: values, the result's layout
(nse, n_batch, n_dense, derived by hand from JAX's rules), jit, vmap, grad w.r.t. data, and the error paths."""
import warnings

import numpy as np
import pytest
from kiln.frontend.core.errors import ConcretizationTypeError
from kiln.frontend.sparse.bcoo_structure import (
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_dynamic_slice,
    bcoo_extract,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
    bcoo_update_layout,
)

import kiln
import kiln.numpy as jnp
from kiln.experimental.sparse import BCOO

RNG = np.random.default_rng(0)
LAYOUTS = [(0, 0), (1, 1), (2, 0)]  # (n_batch, n_dense) of a rank-3 array


def _sparse_dense(shape, density=0.4):
    return (RNG.standard_normal(shape) * (RNG.random(shape) < density)).astype(np.float32)


M = _sparse_dense((3, 4, 5))


def _check(out, want, n_batch, n_dense, nse=None):
    assert isinstance(out, BCOO)
    assert out.shape == want.shape and out.dtype == want.dtype
    assert (out.n_batch, out.n_dense) == (n_batch, n_dense)
    if nse is not None:
        assert out.nse == nse
    np.testing.assert_array_equal(np.asarray(out.todense()), want)


def _same(a, b):
    """Two BCOO results (eager and jitted) with the same layout and values."""
    assert (a.shape, a.nse, a.n_batch, a.n_dense) == (b.shape, b.nse, b.n_batch, b.n_dense)
    np.testing.assert_array_equal(np.asarray(a.todense()), np.asarray(b.todense()))


def _linear_grad_check(f, mat):
    """grad w.r.t. data of sum(todense(f(mat)) * W) against central differences (exact: f is linear in data)."""
    w = jnp.asarray(RNG.standard_normal(f(mat).shape).astype(np.float32))
    g = kiln.jit(lambda d: jnp.sum(f(BCOO((d, mat.indices), shape=mat.shape)).todense() * w))
    grad = np.asarray(kiln.grad(g)(mat.data)).reshape(-1)
    d0 = np.asarray(mat.data).reshape(-1)
    for k in range(0, d0.size, max(1, d0.size // 5)):
        e = np.zeros_like(d0)
        e[k] = 0.5
        fd = (float(g((d0 + e).reshape(mat.data.shape))) - float(g((d0 - e).reshape(mat.data.shape)))) / 1.0
        np.testing.assert_allclose(grad[k], fd, rtol=1e-4, atol=1e-4)


# --- bcoo_slice ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_slice_values_and_layout(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    for start, limit, strides in [((1, 1, 2), (3, 3, 5), None), ((0, 0, 0), (3, 4, 5), (2, 3, 2)),
                                  ((0, 2, 2), (3, 2, 5), None)]:
        out = bcoo_slice(a, start_indices=start, limit_indices=limit, strides=strides)
        want = M[tuple(slice(s, e, st) for s, e, st in zip(start, limit, strides or (1, 1, 1)))]
        # JAX's rule: nse is kept unless it exceeds the number of positions of the sliced sparse dimensions.
        positions = int(np.prod(want.shape[n_batch:3 - n_dense]))
        _check(out, want, n_batch, n_dense, nse=min(a.nse, positions))
    jitted = kiln.jit(lambda b: bcoo_slice(b, start_indices=(1, 1, 2), limit_indices=(3, 3, 5)))(a)
    _same(jitted, bcoo_slice(a, start_indices=(1, 1, 2), limit_indices=(3, 3, 5)))


def test_slice_sums_duplicates_when_nse_exceeds_positions():
    # Four entries, two at (1, 1): a 2 x 2 slice has 4 positions, so nse stays 4; a 1 x 2 one sums to nse=2.
    data = np.array([1., 2., 3., 4.], np.float32)
    indices = np.array([[1, 1], [0, 0], [1, 1], [1, 2]], np.int32)
    a = BCOO((data, indices), shape=(2, 3))
    dense = np.zeros((2, 3), np.float32)
    np.add.at(dense, tuple(indices.T), data)
    out = bcoo_slice(a, start_indices=(0, 0), limit_indices=(2, 2))
    _check(out, dense[:2, :2], 0, 0, nse=4)
    out = bcoo_slice(a, start_indices=(1, 1), limit_indices=(2, 3))
    _check(out, dense[1:, 1:], 0, 0, nse=2)
    empty = bcoo_slice(a, start_indices=(1, 1), limit_indices=(1, 3))
    _check(empty, dense[1:1, 1:], 0, 0, nse=0)


def test_slice_grad_and_vmap():
    a = BCOO.fromdense(M, n_batch=1)
    _linear_grad_check(lambda b: bcoo_slice(b, start_indices=(0, 1, 0), limit_indices=(3, 4, 5), strides=(2, 1, 2)), a)
    out = kiln.vmap(lambda b: bcoo_slice(b, start_indices=(1, 2), limit_indices=(3, 5)).todense())(a)
    np.testing.assert_array_equal(np.asarray(out), M[:, 1:3, 2:5])


def test_slice_errors():
    a = BCOO.fromdense(M)
    with pytest.raises(ValueError, match=r"one entry per dimension .* got 2, 3 and 3 entries"):
        bcoo_slice(a, start_indices=(0, 0), limit_indices=(1, 1, 1))
    with pytest.raises(ValueError, match=r"strides must be positive integers; got strides=\[1, 0, 1\]"):
        bcoo_slice(a, start_indices=(0, 0, 0), limit_indices=(1, 1, 1), strides=(1, 0, 1))
    with pytest.raises(ValueError, match=r"0 <= start <= limit <= size; .* shape=\(3, 4, 5\)"):
        bcoo_slice(a, start_indices=(0, 0, 0), limit_indices=(4, 1, 1))
    with pytest.raises(TypeError, match="bcoo_slice: expected a BCOO array, got ndarray"):
        bcoo_slice(M, start_indices=(0, 0, 0), limit_indices=(1, 1, 1))
    with pytest.raises(TypeError, match="start_indices must be a sequence of ints"):
        bcoo_slice(a, start_indices=(0.5, 0, 0), limit_indices=(1, 1, 1))
    with pytest.raises(ConcretizationTypeError, match="use bcoo_dynamic_slice"):
        kiln.jit(lambda i: bcoo_slice(a, start_indices=(i, 0, 0), limit_indices=(1, 1, 1)))(0)


# --- bcoo_dynamic_slice ----------------------------------------------------------------------------

def _np_dynamic_slice(m, starts, sizes):
    """XLA's dynamic_slice in NumPy: negative starts count from the end, then clamp into range."""
    out = []
    for s, z, n in zip(starts, sizes, m.shape):
        s = s + n if s < 0 else s
        s = min(max(s, 0), n - z)
        out.append(slice(s, s + z))
    return m[tuple(out)]


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_dynamic_slice_values_layout_and_jit(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    f = kiln.jit(lambda b, i, j: bcoo_dynamic_slice(b, (i, j, 1), (2, 2, 3)))
    for starts, sizes in [((1, -2, 3), (2, 2, 2)), ((5, 5, 5), (1, 3, 2)), ((0, 1, 0), (3, 0, 5))]:
        want = _np_dynamic_slice(M, starts, sizes)
        positions = int(np.prod(want.shape[n_batch:3 - n_dense]))
        _check(bcoo_dynamic_slice(a, starts, sizes), want, n_batch, n_dense, nse=min(a.nse, positions))
    for i, j in [(0, 0), (2, 3), (-1, -3)]:
        want = _np_dynamic_slice(M, (i, j, 1), (2, 2, 3))
        _check(f(a, i, j), want, n_batch, n_dense)


def test_dynamic_slice_vmap_over_starts_and_grad():
    a = BCOO.fromdense(M, n_dense=1)
    starts = jnp.array([0, 1, 2])
    out = kiln.vmap(lambda i: bcoo_dynamic_slice(a, (i, i, 0), (1, 2, 5)).todense())(starts)
    want = np.stack([_np_dynamic_slice(M, (i, i, 0), (1, 2, 5)) for i in range(3)])
    np.testing.assert_array_equal(np.asarray(out), want)
    _linear_grad_check(lambda b: bcoo_dynamic_slice(b, (1, 1, 0), (2, 2, 4)), a)


def test_dynamic_slice_errors():
    a = BCOO.fromdense(M)
    with pytest.raises(TypeError, match=r"one entry per dimension .* got 2 and 3 entries"):
        bcoo_dynamic_slice(a, (0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match=r"slice_sizes must be non-negative and at most .* \(1, 5, 1\)"):
        bcoo_dynamic_slice(a, (0, 0, 0), (1, 5, 1))
    with pytest.raises(TypeError, match="start index 1 must be an integer scalar, got an array of shape"):
        bcoo_dynamic_slice(a, (0, jnp.array([0, 1]), 0), (1, 1, 1))
    with pytest.raises(TypeError, match="start index 0 must be an integer scalar.*float32"):
        bcoo_dynamic_slice(a, (jnp.float32(0), 0, 0), (1, 1, 1))


# --- bcoo_reshape ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense,new_sizes,dimensions,layout", [
    (0, 0, (12, 5), None, (0, 0)),
    (0, 0, (60,), None, (0, 0)),
    (0, 0, (1, 3, 20, 1), None, (1, 0)),  # leading size-1 dimensions join the batch group (as JAX)
    (0, 0, (4, 3, 5), (1, 0, 2), (0, 0)),
    (1, 0, (3, 2, 10), None, (1, 0)),
    (1, 0, (3, 20), (0, 2, 1), (1, 0)),
    (0, 1, (2, 6, 5), None, (0, 1)),
    (0, 2, (3, 2, 10), None, (0, 2)),
    (2, 0, (12, 5), None, (1, 0)),
    (2, 0, (4, 3, 5), (1, 0, 2), (2, 0)),
])
def test_reshape_values_and_layout(n_batch, n_dense, new_sizes, dimensions, layout):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    want = (M if dimensions is None else M.transpose(dimensions)).reshape(new_sizes)
    out = bcoo_reshape(a, new_sizes=new_sizes, dimensions=dimensions)
    _check(out, want, *layout, nse=a.nse)
    if n_batch:  # jit once per kind of case (each compile costs)
        _same(out, kiln.jit(lambda b: bcoo_reshape(b, new_sizes=new_sizes, dimensions=dimensions))(a))


def test_reshape_keeps_padding_and_grad():
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    a = BCOO.fromdense(m, nse=5)  # two padding entries (index = shape)
    out = bcoo_reshape(a, new_sizes=(3, 2))
    np.testing.assert_array_equal(np.asarray(out.indices)[3:], [[3, 2], [3, 2]])
    _check(out, m.reshape(3, 2), 0, 0, nse=5)
    ones = bcoo_reshape(BCOO.fromdense(m[:, :1], n_batch=1, nse=2), new_sizes=(2,))  # the size-1 sparse dim goes
    _check(ones, m[:, 0], 1, 0, nse=2)
    _linear_grad_check(lambda b: bcoo_reshape(b, new_sizes=(3, 20), dimensions=(0, 2, 1)),
                       BCOO.fromdense(M, n_batch=1))


def test_reshape_method():
    a = BCOO.fromdense(M)
    _check(a.reshape(12, -1), M.reshape(12, 5), 0, 0, nse=a.nse)
    _check(a.reshape((-1,)), M.reshape(-1), 0, 0)
    _check(a.reshape([5, 12], order="F"), M.reshape(5, 12, order="F"), 0, 0)
    assert a.reshape(3, 4, 5) is a
    with pytest.raises(ValueError, match="can only specify one unknown dimension"):
        a.reshape(-1, -1)
    with pytest.raises(ValueError, match=r"cannot reshape an array of shape \(3, 4, 5\) into shape \(7, -1\)"):
        a.reshape(7, -1)
    with pytest.raises(NotImplementedError, match="order='A' is not supported"):
        a.reshape(60, order="A")


def test_reshape_errors():
    b = BCOO.fromdense(M, n_batch=1)
    with pytest.raises(ValueError, match=r"cannot mix batch and sparse dimensions.*n_batch=1.*batch size 3"):
        bcoo_reshape(b, new_sizes=(6, 10))
    with pytest.raises(ValueError, match=r"cannot mix sparse and dense dimensions.*n_dense=1"):
        bcoo_reshape(BCOO.fromdense(M, n_dense=1), new_sizes=(3, 20))
    with pytest.raises(TypeError, match=r"total size must be unchanged, got new_sizes=\[3, 4\]"):
        bcoo_reshape(b, new_sizes=(3, 4))
    with pytest.raises(ValueError, match="must be non-negative.*use BCOO.reshape"):
        bcoo_reshape(b, new_sizes=(3, -1))
    with pytest.raises(NotImplementedError, match=r"dimensions=\[1, 0, 2\] moves axes between the batch"):
        bcoo_reshape(b, new_sizes=(60,), dimensions=(1, 0, 2))
    with pytest.raises(TypeError, match=r"dimensions=\[0, 0, 1\] is not a permutation"):
        bcoo_reshape(b, new_sizes=(60,), dimensions=(0, 0, 1))


# --- bcoo_squeeze ----------------------------------------------------------------------------------

M1 = _sparse_dense((3, 1, 1, 4), density=0.6)


@pytest.mark.parametrize("n_batch,n_dense,dims,layout", [
    (0, 0, (1, 2), (0, 0)), (2, 0, (1,), (1, 0)), (3, 0, (1, -2), (1, 0)), (0, 2, (1, 2), (0, 1)),
    (1, 1, (2,), (1, 1)),
])
def test_squeeze_values_and_layout(n_batch, n_dense, dims, layout):
    a = BCOO.fromdense(M1, n_batch=n_batch, n_dense=n_dense)
    out = bcoo_squeeze(a, dimensions=dims)
    _check(out, np.squeeze(M1, dims), *layout, nse=a.nse)
    if n_batch == 3:
        _same(out, kiln.jit(lambda b: bcoo_squeeze(b, dimensions=dims))(a))


def test_squeeze_keeps_flags_and_padding():
    a = BCOO.fromdense(M1, n_batch=2)
    out = bcoo_squeeze(a, dimensions=(1,))  # a batch axis: indices untouched
    assert out.indices_sorted and out.unique_indices
    # An entry at index 1 of a size-1 sparse dimension is padding: after the squeeze it must stay padding.
    data, indices = np.array([5., 7.], np.float32), np.array([[0, 2], [1, 3]], np.int32)
    p = BCOO((data, indices), shape=(1, 4))
    out = bcoo_squeeze(p, dimensions=(0,))
    _check(out, np.asarray(p.todense())[0], 0, 0, nse=2)
    np.testing.assert_array_equal(np.asarray(out.todense()), [0, 0, 5, 0])


def test_squeeze_errors():
    a = BCOO.fromdense(M1)
    with pytest.raises(ValueError, match=r"size not equal to one, got shape=\(3, 1, 1, 4\) and dimensions=\(0,\)"):
        bcoo_squeeze(a, dimensions=(0,))
    with pytest.raises(ValueError, match="axis 4 is out of range for an array of rank 4"):
        bcoo_squeeze(a, dimensions=(4,))
    with pytest.raises(ValueError, match=r"dimensions must be unique, got \[1, -3\]"):
        bcoo_squeeze(a, dimensions=[1, -3])


# --- bcoo_rev --------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_rev_values_and_layout(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense, nse=None)
    for dims in [(0,), (1,), (0, 2), (0, 1, 2), ()]:
        _check(bcoo_rev(a, dims), np.flip(M, dims) if dims else M, n_batch, n_dense, nse=a.nse)
    _same(bcoo_rev(a, (1, 2)), kiln.jit(lambda b: bcoo_rev(b, (1, 2)))(a))


def test_rev_padding_and_errors():
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    a = BCOO.fromdense(m, nse=4)
    out = bcoo_rev(a, [1])
    np.testing.assert_array_equal(np.asarray(out.indices)[-1], [2, 3])  # padding stays at index = shape
    _check(out, m[:, ::-1], 0, 0, nse=4)
    _linear_grad_check(lambda b: bcoo_rev(b, (0, 1)), a)
    with pytest.raises(TypeError, match=r"dimensions must be unique, got \[1, 1\]"):
        bcoo_rev(a, (1, 1))
    with pytest.raises(TypeError, match=r"dimensions \[2\] must all be in \[0, 2\)"):
        bcoo_rev(a, (2,))


# --- bcoo_concatenate ------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1)])
def test_concatenate_values_and_layout(n_batch, n_dense):
    for dim, other in [(0, (2, 4, 5)), (1, (3, 2, 5))]:
        if dim >= 3 - n_dense:
            continue
        m2 = _sparse_dense(other)
        a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
        b = BCOO.fromdense(m2, n_batch=n_batch, n_dense=n_dense)
        out = bcoo_concatenate([a, b], dimension=dim)
        # Along a batch dimension the operands share the larger nse; along a sparse one their entries add up.
        nse = max(a.nse, b.nse) if dim < n_batch else a.nse + b.nse
        _check(out, np.concatenate([M, m2], axis=dim), n_batch, n_dense, nse=nse)
        _same(out, kiln.jit(lambda x, y, d=dim: bcoo_concatenate([x, y], dimension=d))(a, b))


def test_concatenate_padding_mixed_batch_and_grad():
    # Padding of the first operand (index 2 = its size) must not land on the second operand's row 0.
    a = BCOO((jnp.array([1., 9.]), jnp.array([[0, 1], [2, 0]])), shape=(2, 3))
    b = BCOO.fromdense(np.array([[0., 5., 0.]], np.float32))
    out = bcoo_concatenate([a, b], dimension=0)
    _check(out, np.concatenate([np.asarray(a.todense()), np.asarray(b.todense())]), 0, 0, nse=3)
    # As JAX: an unbatched operand with a leading size-1 dimension joins batched ones (n_batch 0 -> 1).
    c = BCOO.fromdense(M[:1], n_batch=1)
    out = bcoo_concatenate([c, BCOO.fromdense(M[1:2])], dimension=0)
    _check(out, M[:2], 1, 0)
    x = BCOO.fromdense(M, n_dense=1)
    _linear_grad_check(lambda d: bcoo_concatenate([d, d], dimension=1), x)


def test_concatenate_errors():
    a, b = BCOO.fromdense(M), BCOO.fromdense(M, n_dense=1)
    with pytest.raises(ValueError, match="non-empty sequence of BCOO arrays, got \\['BCOO', 'ndarray'\\]"):
        bcoo_concatenate([a, M], dimension=0)
    with pytest.raises(ValueError, match=r"matching dense dimensions, got n_dense \[0, 1\]"):
        bcoo_concatenate([a, b], dimension=0)
    with pytest.raises(ValueError, match=r"matching batch dimensions, got n_batch \[0, 1\]"):
        bcoo_concatenate([a, BCOO.fromdense(M, n_batch=1)], dimension=0)
    with pytest.raises(NotImplementedError, match="along a dense dimension"):
        bcoo_concatenate([b, b], dimension=2)
    with pytest.raises(TypeError, match="differ in dimensions other than the one being concatenated"):
        bcoo_concatenate([a, BCOO.fromdense(M[:, :2])], dimension=0)
    with pytest.raises(TypeError, match=r"dimension 3 is out of bounds .* in \[0, 3\)"):
        bcoo_concatenate([a, a], dimension=3)
    with pytest.raises(TypeError, match=r"same dtype, got \['float32', 'int32'\]"):
        bcoo_concatenate([a, a.astype(np.int32)], dimension=0)


# --- bcoo_broadcast_in_dim -------------------------------------------------------------------------

M2 = _sparse_dense((1, 3, 4), density=0.5)


@pytest.mark.parametrize("n_batch,n_dense,shape,dims,layout", [
    (0, 0, (2, 1, 3, 4), (1, 2, 3), (1, 0)),  # a new leading dimension is a batch dimension
    (0, 1, (1, 3, 4, 2), (0, 1, 2), (0, 2)),  # a new trailing one (after dense ones) is dense
    (0, 0, (1, 3, 1, 4), (0, 1, 3), (0, 0)),  # a new size-1 sparse dimension
    (1, 0, (5, 3, 4), (0, 1, 2), (1, 0)),  # a size-1 batch dimension broadcasts
    (1, 1, (2, 5, 3, 4), (1, 2, 3), (2, 1)),
    (0, 2, (1, 3, 4), (0, 1, 2), (0, 2)),
])
def test_broadcast_in_dim_values_and_layout(n_batch, n_dense, shape, dims, layout):
    a = BCOO.fromdense(M2, n_batch=n_batch, n_dense=n_dense)
    want = np.asarray(kiln.lax.broadcast_in_dim(jnp.asarray(M2), shape, dims))
    np.testing.assert_array_equal(want, np.broadcast_to(np.expand_dims(
        M2, tuple(d for d in range(len(shape)) if d not in dims)), shape))
    out = bcoo_broadcast_in_dim(a, shape=shape, broadcast_dimensions=dims)
    _check(out, want, *layout, nse=a.nse)
    if n_batch:
        _same(out, kiln.jit(lambda b: bcoo_broadcast_in_dim(b, shape=shape, broadcast_dimensions=dims))(a))


def test_broadcast_in_dim_errors():
    a = BCOO.fromdense(M2, n_batch=1)
    with pytest.raises(ValueError, match=r"mat.shape=\(1, 3, 4\) and broadcast_dimensions=\[0, 1\] must have the same"):
        bcoo_broadcast_in_dim(a, shape=(1, 3, 4), broadcast_dimensions=(0, 1))
    with pytest.raises(TypeError, match="strictly increasing"):
        bcoo_broadcast_in_dim(a, shape=(1, 3, 4), broadcast_dimensions=(0, 2, 1))
    with pytest.raises(TypeError, match=r"cannot broadcast an array of shape \(1, 3, 4\) to shape \(1, 3, 5\)"):
        bcoo_broadcast_in_dim(a, shape=(1, 3, 5), broadcast_dimensions=(0, 1, 2))
    with pytest.raises(NotImplementedError, match="adding sparse dimensions with lengths != 1"):
        bcoo_broadcast_in_dim(a, shape=(1, 3, 2, 4), broadcast_dimensions=(0, 1, 3))


# --- bcoo_update_layout ----------------------------------------------------------------------------

M3 = _sparse_dense((2, 3, 4))


@pytest.mark.parametrize("start", [(1, 1), (0, 2)])
def test_update_layout_all_targets(start):
    a = BCOO.fromdense(M3, n_batch=start[0], n_dense=start[1])
    for nb in range(3):
        for nd in range(3 - nb):
            out = bcoo_update_layout(a, n_batch=nb, n_dense=nd, on_inefficient=None)
            # nse: JAX's steps in order (fewer dense, fewer batch: the moved sizes multiply nse; more dense or
            # batch: nse unchanged).
            nse, cur_nb, cur_nd = a.nse, a.n_batch, a.n_dense
            nse *= int(np.prod(M3.shape[3 - cur_nd:3 - nd])) if nd < cur_nd else 1
            nse *= int(np.prod(M3.shape[nb:cur_nb])) if nb < cur_nb else 1
            _check(out, M3, nb, nd, nse=nse)
    assert bcoo_update_layout(a) is a


def test_update_layout_efficiency_errors_and_jit():
    a = BCOO.fromdense(M3)
    with pytest.raises(SparseEfficiencyError, match=r"increasing n_batch from 0 to 1 results in inefficient"):
        a.update_layout(n_batch=1)
    with pytest.raises(SparseEfficiencyError, match=r"increasing n_dense from 0 to 1 .* 'warn' or None"):
        bcoo_update_layout(a, n_dense=1)
    with pytest.warns(SparseEfficiencyWarning, match="on_inefficient argument of bcoo_update_layout to None"):
        out = bcoo_update_layout(a, n_dense=2, on_inefficient="warn")
    _check(out, M3, 0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # size-1 dimensions are no loss: no warning
        _check(BCOO.fromdense(M3[:1]).update_layout(n_batch=1), M3[:1], 1, 0)
    assert issubclass(SparseEfficiencyError, ValueError) and issubclass(SparseEfficiencyWarning, UserWarning)
    with pytest.raises(ValueError, match=r"on_inefficient='raise'; expected one of \['error', 'warn', None\]"):
        bcoo_update_layout(a, n_batch=1, on_inefficient="raise")
    with pytest.raises(ValueError, match="must be non-negative; got n_batch=-1"):
        bcoo_update_layout(a, n_batch=-1)
    with pytest.raises(ValueError, match=r"sum of n_batch=2 and n_dense=2 cannot be larger than mat.ndim=3"):
        bcoo_update_layout(a, n_batch=2, n_dense=2, on_inefficient=None)
    b = BCOO.fromdense(M3, n_batch=2)
    _same(bcoo_update_layout(b, n_batch=0, n_dense=1, on_inefficient=None),
          kiln.jit(lambda x: x.update_layout(n_batch=0, n_dense=1, on_inefficient=None))(b))
    _linear_grad_check(lambda x: bcoo_update_layout(x, n_batch=1, n_dense=1, on_inefficient=None),
                       BCOO.fromdense(M3, n_batch=2))


# --- bcoo_extract ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_extract_values(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense, nse=None)
    x = RNG.standard_normal(M.shape).astype(np.float32)
    out = bcoo_extract(a, x)
    assert out.nse == a.nse and out.indices is a.indices
    assert (out.indices_sorted, out.unique_indices) == (a.indices_sorted, a.unique_indices)
    mask = np.asarray(BCOO((jnp.ones_like(a.data), a.indices), shape=a.shape).todense()) != 0
    _check(out, np.where(mask, x, 0), n_batch, n_dense)
    _same(out, kiln.jit(bcoo_extract)(a, x))


def test_extract_duplicates_padding_grad_and_vmap():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    indices = np.array([[0, 1], [1, 2], [0, 1], [2, 3]], np.int32)  # a duplicate, and a padding entry
    a = BCOO((jnp.ones(4), indices), shape=(2, 3))
    np.testing.assert_array_equal(np.asarray(bcoo_extract(a, x).data), [2, 6, 0, 0])  # a.unique_indices: False
    np.testing.assert_array_equal(np.asarray(bcoo_extract(a, x, assume_unique=True).data), [2, 6, 2, 0])
    np.testing.assert_array_equal(np.asarray(bcoo_extract(a, x, assume_unique=False).todense()),
                                  [[0, 2, 0], [0, 0, 6]])
    w = jnp.array([1., 2., 3., 4.])
    grad = kiln.grad(lambda y: jnp.sum(bcoo_extract(a, y, assume_unique=False).data * w))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(grad), [[0, 1, 0], [0, 0, 2]])  # the duplicate gets nothing
    b = BCOO.fromdense(M, n_batch=1)
    out = kiln.vmap(lambda s, y: bcoo_extract(s, y).todense())(b, 2 * M)
    np.testing.assert_array_equal(np.asarray(out), 2 * M)


def test_extract_errors():
    a = BCOO.fromdense(M)
    with pytest.raises(ValueError, match=r"shape mismatch: sparr.shape=\(3, 4, 5\) but arr.shape=\(3, 4\)"):
        bcoo_extract(a, M[..., 0])
    with pytest.raises(TypeError, match="bcoo_extract: expected a BCOO array, got ndarray"):
        bcoo_extract(M, M)


# --- indexing --------------------------------------------------------------------------------------

INDICES = [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, None, slice(1, 3)),
           (slice(None, None, -1),), (slice(2, None, -2), 0), (1, 2, 3), (Ellipsis, None),
           (slice(None), slice(None, None, 2), slice(4, 0, -1)), (slice(1, 2), None, slice(0, 5, 2))]


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1)])
def test_getitem_matches_numpy(n_batch, n_dense):
    a = BCOO.fromdense(M, n_batch=n_batch, n_dense=n_dense)
    for idx in INDICES[n_batch::2]:
        out = a[idx]
        assert isinstance(out, BCOO) and out.shape == M[idx].shape
        np.testing.assert_array_equal(np.asarray(out.todense()), M[idx])
    f = kiln.jit(lambda b, i: b[i, 1:].todense())
    for i in (1, -1):
        np.testing.assert_array_equal(np.asarray(f(a, i)), M[i, 1:])
    rows = [np.asarray(r.todense()) for r in a]
    np.testing.assert_array_equal(np.stack(rows), M)


def test_getitem_layout_and_errors():
    a = BCOO.fromdense(M, n_batch=1)
    # As JAX: a new axis before the sparse ones is a batch axis; an integer on a batch axis keeps nse.
    assert (a[None].n_batch, a[:, None].n_batch, a[0].n_batch, a[0].nse) == (2, 2, 0, a.nse)
    b = BCOO.fromdense(M)
    # An integer is a slice then a squeeze: nse is kept unless it exceeds the positions left (5 in b[1, 2]).
    assert (b[None].n_batch, b[1].nse, b[1, 2].nse) == (1, b.nse, 5) and b.nse > 5
    with pytest.raises(IndexError, match="index 3 out of bounds for axis 0 with size 3"):
        a[3]
    with pytest.raises(IndexError, match="too many indices for array: array is 3-dimensional, but 4 were indexed"):
        a[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., 0, ...]
    with pytest.raises(NotImplementedError, match="step 1 or -1 only"):
        kiln.jit(lambda x, i: x[i, ::2])(a, 0)
    with pytest.raises(TypeError, match="iteration over a 0-d BCOO array"):
        iter(a[0, 0, 0])


# --- other BCOO methods ----------------------------------------------------------------------------

def test_arithmetic_methods_through_sparsify():
    m = np.array([[0., -2., 0.], [1., 0., -4.]], np.float32)
    a = BCOO.fromdense(m)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _check(abs(a), np.abs(m), 0, 0)
    _check(a + BCOO.fromdense(m), 2 * m, 0, 0)
    _check(a - a, 0 * m, 0, 0)
    _check(a ** 2, m ** 2, 0, 0)
    np.testing.assert_array_equal(np.asarray(a + x), m + x)
    np.testing.assert_array_equal(np.asarray(x - a), x - m)
    np.testing.assert_array_equal(np.asarray(x + a), x + m)
    with pytest.raises(NotImplementedError, match="div by a sparse array"):
        2.0 / a


def test_structure_functions_under_vmap():
    a = BCOO.fromdense(M, n_batch=1)

    def f(b):
        return bcoo_rev(bcoo_reshape(b[1:, ::2], new_sizes=(9,)), (0,)).todense()
    out = kiln.vmap(f)(a)
    want = np.stack([M[k, 1:, ::2].reshape(9)[::-1] for k in range(3)])
    np.testing.assert_array_equal(np.asarray(out), want)


def test_layouts_match_jax():
    jsp = pytest.importorskip("jax.experimental.sparse")
    cases = [
        lambda s, x: s.bcoo_slice(x, start_indices=(1, 0, 1), limit_indices=(3, 2, 5), strides=(1, 1, 2)),
        lambda s, x: s.bcoo_reshape(x, new_sizes=(3, 2, 10)) if x.n_dense == 0 else s.bcoo_rev(x, (0,)),
        lambda s, x: s.bcoo_update_layout(x, n_batch=0, n_dense=1, on_inefficient=None),
        lambda s, x: s.bcoo_concatenate([x, x], dimension=1),
        lambda s, x: x[1, None, 2:],
    ]
    from kiln.frontend.sparse import bcoo_structure
    for nb, nd in [(0, 0), (1, 0), (1, 1)]:
        j = jsp.BCOO.fromdense(M, n_batch=nb, n_dense=nd)
        k = BCOO.fromdense(M, n_batch=nb, n_dense=nd)
        for case in cases:
            jr, kr = case(jsp, j), case(bcoo_structure, k)
            assert (kr.nse, kr.n_batch, kr.n_dense, kr.shape) == (jr.nse, jr.n_batch, jr.n_dense, jr.shape)
            np.testing.assert_array_equal(np.asarray(kr.todense()), np.asarray(jr.todense()))
