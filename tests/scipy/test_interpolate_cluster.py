"""kiln.scipy.interpolate.RegularGridInterpolator against scipy.interpolate.RegularGridInterpolator, and
kiln.scipy.cluster.vq.vq against scipy.cluster.vq.vq: 1-D to 3-D grids, trailing value dimensions, out-of-bounds
fill and extrapolation, float32/float64, jit, vmap (against a Python loop), grad (against finite differences),
the pytree, and the error messages."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.vq as scv
import scipy.interpolate as si

import kiln
import kiln.numpy as jnp
from kiln.scipy.cluster.vq import vq
from kiln.scipy.interpolate import RegularGridInterpolator

rng = np.random.default_rng(11)


@pytest.fixture
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def close(x, y, tol=1e-5):
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol)


def _grid(*sizes):
    """Non-uniform strictly ascending points, one array per size."""
    return tuple(np.cumsum(rng.uniform(0.2, 1.0, n)) - 0.5 for n in sizes)


def _inside(points, shape):
    """Query points strictly inside the grid (random, so no point lies on a midpoint or a grid line)."""
    return np.stack([rng.uniform(p[0], p[-1], shape) for p in points], axis=-1)


def _ours_and_scipy(points, values, xi, **options):
    ours = RegularGridInterpolator(tuple(jnp.asarray(p) for p in points), jnp.asarray(values), **options)
    theirs = si.RegularGridInterpolator(points, values, bounds_error=False, **options)
    return ours(jnp.asarray(xi)), theirs(xi)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("sizes,trailing", [((7,), ()), ((5, 6), ()), ((4, 5, 3), ()), ((5, 4), (3,)),
                                            ((3, 4, 2), (2, 3))])
def test_matches_scipy(x64, method, sizes, trailing):
    points = _grid(*sizes)
    values = rng.standard_normal(sizes + trailing)
    xi = _inside(points, (2, 5))
    ours, theirs = _ours_and_scipy(points, values, xi, method=method)
    assert ours.shape == (2, 5) + trailing == theirs.shape
    assert ours.dtype == np.float64
    close(ours, theirs, 1e-12)


def test_grid_points_and_edges_are_exact(x64):
    points = _grid(4, 3)
    values = rng.standard_normal((4, 3))
    mesh = np.stack(np.meshgrid(*points, indexing="ij"), axis=-1)
    for method in ("linear", "nearest"):
        close(RegularGridInterpolator(points, values, method=method)(mesh), values, 1e-12)


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_out_of_bounds_fill_and_extrapolation(x64, method):
    points = _grid(5, 4)
    values = rng.standard_normal((5, 4))
    lo, hi = [p[0] for p in points], [p[-1] for p in points]
    xi = np.concatenate([_inside(points, (6,)),
                         np.array([[lo[0] - 0.7, (lo[1] + hi[1]) / 2], [(lo[0] + hi[0]) / 2, hi[1] + 0.3],
                                   [hi[0] + 1.1, lo[1] - 2.0], [lo[0] - 0.1, hi[1] + 0.2]])])
    for fill in (np.nan, -3.5, None):
        ours, theirs = _ours_and_scipy(points, values, xi, method=method, fill_value=fill)
        close(ours, theirs, 1e-12)
        if fill is not None:
            assert np.all(np.asarray(ours)[6:] == fill) or np.all(np.isnan(np.asarray(ours)[6:]))


def test_fill_with_trailing_dimensions():
    points = _grid(3)
    values = rng.standard_normal((3, 2, 2)).astype(np.float32)
    out = RegularGridInterpolator(points, values, fill_value=7.0)(np.array([points[0][0] - 1, points[0][-1] + 1]))
    assert out.shape == (2, 2, 2) and out.dtype == np.float32
    close(out, np.full((2, 2, 2), 7.0))


def test_method_override_at_call(x64):
    points = _grid(6, 5)
    values = rng.standard_normal((6, 5))
    xi = _inside(points, (8,))
    interp = RegularGridInterpolator(points, values)
    for method in ("linear", "nearest"):
        ref = si.RegularGridInterpolator(points, values, method=method)(xi)
        close(interp(xi, method=method), ref, 1e-12)
        close(RegularGridInterpolator(points, values, method="nearest")(xi, method), ref, 1e-12)
    assert interp.method == "linear"


def test_query_forms(x64):
    """A tuple of coordinate arrays broadcast together, a 1-D xi read as consecutive points, a single point."""
    points = _grid(5, 6)
    values = rng.standard_normal((5, 6))
    theirs = si.RegularGridInterpolator(points, values)
    xs = rng.uniform(points[0][0], points[0][-1], 4)
    ys = rng.uniform(points[1][0], points[1][-1], 3)
    ours = RegularGridInterpolator(points, values)
    out = ours((jnp.asarray(xs)[:, None], jnp.asarray(ys)[None, :]))
    assert out.shape == (4, 3)
    close(out, theirs((xs[:, None], ys[None, :])), 1e-12)
    close(ours(((xs[:, None], ys[None, :]),)), theirs((xs[:, None], ys[None, :])), 1e-12)  # wrapped in a 1-tuple
    close(ours((float(xs[0]), float(ys[0]))), theirs((xs[0], ys[0])), 1e-12)
    flat = np.stack([xs[:3], ys], axis=-1).reshape(-1)
    close(ours(flat), theirs(flat.reshape(-1, 2)), 1e-12)
    one_d = RegularGridInterpolator(points[:1], values[:, 0])
    out = one_d(jnp.asarray(xs))
    assert out.shape == (4,)
    close(out, si.RegularGridInterpolator(points[:1], values[:, 0])(xs), 1e-12)


def test_float32_and_integer_inputs():
    points = _grid(5, 4)
    values = rng.standard_normal((5, 4))
    xi = _inside(points, (7,))
    out = RegularGridInterpolator(points, values.astype(np.float32))(xi.astype(np.float32))
    assert out.dtype == np.float32
    close(out, si.RegularGridInterpolator(points, values)(xi), 1e-5)
    ints = rng.integers(-5, 5, (5, 4))
    out = RegularGridInterpolator((np.arange(5), np.arange(4)), ints)(xi.astype(np.float32) % 3)
    assert out.dtype == np.float32
    close(out, si.RegularGridInterpolator((np.arange(5.0), np.arange(4.0)), ints.astype(float))(xi % 3), 1e-5)


def test_single_point_axis_for_nearest(x64):
    values = rng.standard_normal((1, 4))
    points = (np.array([0.5]), np.arange(4.0))
    xi = np.array([[0.5, 1.2], [0.5, 2.7]])
    close(RegularGridInterpolator(points, values, method="nearest")(xi), values[0, [1, 3]], 1e-12)


def test_jit_and_pytree(x64):
    points = _grid(5, 4)
    values = rng.standard_normal((5, 4, 2))
    xi = _inside(points, (6,))
    interp = RegularGridInterpolator(points, values, fill_value=None)
    leaves, treedef = kiln.tree_util.tree_flatten(interp)
    assert len(leaves) == 3  # two grids and the values; fill_value None is no leaf
    rebuilt = kiln.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt, RegularGridInterpolator) and rebuilt.method == "linear" and rebuilt.fill_value is None
    ref = si.RegularGridInterpolator(points, values)(xi)
    close(kiln.jit(lambda it, x: it(x))(interp, xi), ref, 1e-12)
    close(kiln.jit(lambda it, x: it(x, "nearest"))(interp, xi),
          si.RegularGridInterpolator(points, values, method="nearest")(xi), 1e-12)
    # built inside the traced function, from traced points and values
    built = kiln.jit(lambda p0, p1, v, x: RegularGridInterpolator((p0, p1), v)(x))(*points, values, xi)
    close(built, ref, 1e-12)
    half = kiln.tree_util.tree_map(lambda leaf: leaf / 2, interp)
    assert isinstance(half, RegularGridInterpolator)


def test_vmap_matches_a_loop(x64):
    points = _grid(4, 5)
    values = rng.standard_normal((3, 4, 5))
    xi = _inside(points, (3, 6))
    loop = np.stack([si.RegularGridInterpolator(points, values[b])(xi[b]) for b in range(3)])
    # batched values and queries, the interpolator built inside
    out = kiln.vmap(lambda v, x: RegularGridInterpolator(points, v)(x))(values, xi)
    close(out, loop, 1e-12)
    # a batch of interpolators passed as a pytree, stacked leaf by leaf
    interps = [RegularGridInterpolator(points, values[b]) for b in range(3)]
    stacked = kiln.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *interps)
    close(kiln.vmap(lambda it, x: it(x))(stacked, xi), loop, 1e-12)
    # one interpolator, batched queries only
    one = interps[0]
    close(kiln.vmap(one)(xi), np.stack([si.RegularGridInterpolator(points, values[0])(xi[b]) for b in range(3)]),
          1e-12)
    close(kiln.jit(kiln.vmap(lambda it, x: it(x, "nearest"), in_axes=(None, 0)))(one, xi),
          np.stack([si.RegularGridInterpolator(points, values[0], method="nearest")(xi[b]) for b in range(3)]),
          1e-12)


def _finite_difference(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = eps
        grad[k] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return grad


def test_grad_linear_wrt_values_and_xi(x64):
    points = _grid(4, 3)
    values = rng.standard_normal((4, 3))
    xi = _inside(points, (5,))
    weights = rng.standard_normal(5)

    def loss(v, x):
        return jnp.sum(RegularGridInterpolator(points, v)(x) * weights)

    g_values, g_xi = kiln.grad(loss, argnums=(0, 1))(values, xi)
    jitted = kiln.jit(loss)
    close(g_values, _finite_difference(lambda v: jitted(v, xi), values), 1e-6)
    close(g_xi, _finite_difference(lambda x: jitted(values, x), xi), 1e-6)
    # through jit, and with the interpolator itself as the differentiated pytree
    interp = RegularGridInterpolator(points, values)
    g_tree = kiln.jit(kiln.grad(lambda it: jnp.sum(it(xi) * weights)))(interp)
    close(g_tree.values, g_values, 1e-12)
    # nearest: piecewise constant in xi, linear (a selection) in values
    g_nearest = kiln.grad(lambda v: jnp.sum(RegularGridInterpolator(points, v, method="nearest")(xi)))(values)
    assert np.asarray(g_nearest).sum() == 5.0


def test_errors():
    points = (np.arange(4.0), np.arange(3.0))
    values = np.zeros((4, 3))
    interp = RegularGridInterpolator(points, values)
    with pytest.raises(ValueError, match=r"xi have dimension 3 .*has dimension 2; xi must have shape \(\.\.\., 2\)"):
        interp(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"1-D xi of 3 values cannot be read as points of dimension 2"):
        interp(np.zeros(3))
    with pytest.raises(ValueError, match=r"xi is a scalar; the sample points must have shape \(\.\.\., 2\)"):
        interp(np.float32(1.0))
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(4,\), which do not broadcast together"):
        interp((np.zeros(3), np.zeros(4)))
    with pytest.raises(TypeError, match=r"xi is a list; .*wrap it with kiln.numpy.asarray"):
        interp([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"there are 4 points in dimension 0, but values has 5"):
        RegularGridInterpolator(points, np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"there are 2 point arrays, but values has 1 dimensions"):
        RegularGridInterpolator(points, np.zeros(4))
    with pytest.raises(ValueError, match=r"points\[1\] has shape \(3, 1\); each entry of points must be 1-D"):
        RegularGridInterpolator((points[0], np.zeros((3, 1))), values)
    with pytest.raises(ValueError, match=r"points\[1\] must be strictly ascending.*reverse it"):
        RegularGridInterpolator((points[0], np.array([0.0, 2.0, 1.0])), values)
    with pytest.raises(ValueError, match=r"method 'cubic' is not defined; use 'linear' or 'nearest'"):
        RegularGridInterpolator(points, values, method="cubic")
    with pytest.raises(ValueError, match=r"__call__: method 'spline' is not defined"):
        interp(np.zeros((1, 2)), method="spline")
    with pytest.raises(NotImplementedError, match=r"bounds_error=True is not supported .*under jit"):
        RegularGridInterpolator(points, values, bounds_error=True)
    with pytest.raises(ValueError, match=r"1 points in dimension 0, but method 'linear' requires at least 2"):
        RegularGridInterpolator((np.array([0.0]),), np.zeros(1))
    with pytest.raises(ValueError, match=r"1 points in dimension 0, but method 'linear' requires at least 2"):
        RegularGridInterpolator((np.array([0.0]),), np.zeros(1), method="nearest")(np.zeros(1), "linear")
    with pytest.raises(ValueError, match=r"fill_value must be either None or of a type compatible with values"):
        RegularGridInterpolator(points, values, fill_value=1j)
    with pytest.raises(TypeError, match=r"values is a list"):
        RegularGridInterpolator(points, [[0.0] * 3] * 4)
    with pytest.raises(TypeError, match=r"points must be a tuple of 1-D arrays"):
        RegularGridInterpolator(None, values)
    with pytest.raises(TypeError, match=r"got an array of shape \(4,\); for a 1-D grid write \(x,\)"):
        RegularGridInterpolator(np.arange(4.0), np.zeros(4))


def test_vq_matches_scipy(x64):
    obs = rng.standard_normal((40, 3))
    code_book = rng.standard_normal((6, 3))
    code, dist = vq(obs, code_book)
    ref_code, ref_dist = scv.vq(obs, code_book)
    np.testing.assert_array_equal(np.asarray(code), ref_code)
    close(dist, ref_dist, 1e-12)
    assert code.shape == dist.shape == (40,) and np.asarray(code).dtype.kind == "i"
    # 1-D: each entry is an observation (code) of one feature
    obs1, code_book1 = rng.standard_normal(9), rng.standard_normal(4)
    code, dist = vq(obs1, code_book1)
    ref_code, ref_dist = scv.vq(obs1, code_book1)
    np.testing.assert_array_equal(np.asarray(code), ref_code)
    close(dist, ref_dist, 1e-12)


def test_vq_float32_integers_jit_vmap_grad():
    obs = rng.standard_normal((20, 2)).astype(np.float32)
    code_book = rng.standard_normal((5, 2)).astype(np.float32)
    ref_code, ref_dist = scv.vq(obs.astype(np.float64), code_book.astype(np.float64))
    code, dist = kiln.jit(vq)(obs, code_book)
    assert dist.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(code), ref_code)
    close(dist, ref_dist, 1e-5)
    code, dist = vq(np.array([[0, 0], [3, 4]]), np.array([[0, 1], [3, 3]]))
    np.testing.assert_array_equal(np.asarray(code), [0, 1])
    close(dist, [1.0, 1.0])
    batch = rng.standard_normal((3, 7, 2)).astype(np.float32)
    codes, dists = kiln.vmap(vq, in_axes=(0, None))(batch, code_book)
    for b in range(3):
        ref_code, ref_dist = scv.vq(batch[b].astype(np.float64), code_book.astype(np.float64))
        np.testing.assert_array_equal(np.asarray(codes[b]), ref_code)
        close(dists[b], ref_dist, 1e-5)
    # d dist / d obs is the unit vector from the nearest code to the observation
    g = kiln.grad(lambda o: jnp.sum(vq(o, code_book)[1]))(obs)
    nearest = code_book[scv.vq(obs.astype(np.float64), code_book.astype(np.float64))[0]]
    unit = (obs - nearest) / np.linalg.norm(obs - nearest, axis=-1, keepdims=True)
    close(g, unit, 1e-4)


def test_vq_errors():
    with pytest.raises(ValueError, match=r"should have the same rank, got obs of shape \(4, 2\) and code_book of "
                                         r"shape \(3,\)"):
        vq(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match=r"obs has 2 features per observation .* but code_book has 3 per code"):
        vq(np.zeros((4, 2)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"ndim different than 1 or 2 are not supported: .* 3 dimensions"):
        vq(np.zeros((4, 2, 1)), np.zeros((5, 2, 1)))
    with pytest.raises(ValueError, match=r"code_book has no codes"):
        vq(np.zeros((4, 2)), np.zeros((0, 2)))
    with pytest.raises(TypeError, match=r"obs is a list; .*kiln.numpy.asarray"):
        vq([[0.0, 1.0]], np.zeros((1, 2)))
