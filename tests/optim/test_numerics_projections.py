"""kiln.optim's numerics, linear algebra, projections and second-order helpers (optax's names) against NumPy
and SciPy oracles, without JAX."""
import itertools

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
import scipy.stats

import kiln
import kiln.numpy as jnp
import kiln.random as krandom
from kiln import optim
from kiln.optim import projections as proj
from kiln.optim import second_order

RNG = np.random.default_rng(0)


# ----------------------------------------------------------------------------------------------
# Numerics
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.float32, np.float16])
def test_safe_increment_saturates(dtype):
    top = np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else np.finfo(dtype).max
    assert int(optim.safe_increment(jnp.asarray(3, dtype))) == 4
    out = optim.safe_increment(jnp.asarray(top, dtype))
    assert out.dtype == dtype and out == top
    assert optim.safe_int32_increment is optim.safe_increment


def test_safe_increment_under_jit_and_bad_dtype():
    assert int(kiln.jit(optim.safe_increment)(jnp.asarray(2 ** 31 - 1, jnp.int32))) == 2 ** 31 - 1
    with pytest.raises(ValueError, match="count has dtype bool; it must be an integer or floating dtype"):
        optim.safe_increment(jnp.asarray(True))


@pytest.mark.parametrize("ord_, axis", [(None, None), (1, None), (np.inf, None), (None, 1), (2, 0), ("fro", None)])
def test_safe_norm_values(ord_, axis):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    want = np.linalg.norm(x.astype(np.float64), ord=ord_, axis=axis)
    np.testing.assert_allclose(np.asarray(optim.safe_norm(jnp.asarray(x), 0.0, ord=ord_, axis=axis)), want,
                               rtol=1e-6)
    # below the floor the result is min_norm
    np.testing.assert_allclose(np.asarray(optim.safe_norm(jnp.asarray(x), 100.0, ord=ord_, axis=axis)),
                               np.full_like(want, 100.0))
    kept = optim.safe_norm(jnp.asarray(x), 0.0, ord=ord_, axis=axis, keepdims=True)
    assert kept.shape == np.linalg.norm(x, ord=ord_, axis=axis, keepdims=True).shape


def test_safe_norm_and_rms_gradients_are_finite_at_zero():
    g = kiln.grad(lambda x: optim.safe_norm(x, 1e-3))(jnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(g), np.zeros(3))
    g = kiln.grad(lambda x: optim.safe_root_mean_squares(x, 1e-3))(jnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(g), np.zeros(3))
    # away from the floor the gradient is the norm's: x / |x|
    x = np.array([3.0, 4.0], np.float32)
    np.testing.assert_allclose(np.asarray(kiln.grad(lambda v: optim.safe_norm(v, 1e-3))(jnp.asarray(x))), x / 5.0)


def test_safe_root_mean_squares():
    x = (RNG.standard_normal(5) + 1j * RNG.standard_normal(5)).astype(np.complex64)
    want = np.sqrt(np.mean(np.abs(x.astype(np.complex128)) ** 2))
    np.testing.assert_allclose(float(optim.safe_root_mean_squares(jnp.asarray(x), 0.0)), want, rtol=1e-6)
    assert float(optim.safe_root_mean_squares(jnp.asarray(x), 10.0)) == 10.0


def test_multi_normal():
    loc = RNG.standard_normal(3).astype(np.float32)
    log_scale = (0.3 * RNG.standard_normal(3)).astype(np.float32)
    dist = optim.multi_normal(loc, log_scale)
    key = krandom.PRNGKey(1)
    sample = dist.sample((2,), key)
    assert sample.shape == (2, 3)
    want = np.asarray(krandom.normal(key, (2, 3))) * np.exp(log_scale) + loc
    np.testing.assert_allclose(np.asarray(sample), want, rtol=1e-6)
    want_lp = scipy.stats.norm.logpdf(np.asarray(sample), loc, np.exp(log_scale)).sum(-1)
    np.testing.assert_allclose(np.asarray(dist.log_prob(sample)), want_lp, rtol=1e-5)
    assert len(dist.params) == 2
    np.testing.assert_array_equal(np.asarray(dist.log_scale), log_scale)


# ----------------------------------------------------------------------------------------------
# Linear algebra
# ----------------------------------------------------------------------------------------------

def _spd(n, seed):
    b = np.random.default_rng(seed).standard_normal((n, n))
    return (b @ b.T + 0.5 * np.eye(n)).astype(np.float32)


def test_power_iteration_matrix():
    m = _spd(6, 1)
    eig, vec = optim.power_iteration(jnp.asarray(m), num_iters=500)
    w, v = np.linalg.eig(m.astype(np.float64))
    top = np.argmax(np.abs(w))
    np.testing.assert_allclose(float(eig), w[top].real, rtol=1e-4)
    np.testing.assert_allclose(abs(float(np.asarray(vec) @ v[:, top].real)), 1.0, rtol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(vec)), 1.0, rtol=1e-6)


def test_power_iteration_callable_on_a_pytree():
    d = np.array([1.0, -5.0, 2.0], np.float32)
    e = np.array([0.5], np.float32)

    def mvp(t):
        return {"d": t["d"] * d, "e": t["e"] * e}
    v0 = {"d": jnp.ones(3), "e": jnp.ones(1)}
    eig, vec = optim.power_iteration(mvp, v0=v0, num_iters=200)
    np.testing.assert_allclose(float(eig), -5.0, rtol=1e-5)
    np.testing.assert_allclose(abs(float(vec["d"][1])), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="v0 is required when matrix is a function"):
        optim.power_iteration(mvp)


def test_power_iteration_under_jit_and_key():
    m = jnp.asarray(_spd(4, 2))
    eig_jit, _ = kiln.jit(lambda a: optim.power_iteration(a, key=krandom.PRNGKey(5)))(m)
    eig, _ = optim.power_iteration(m, key=krandom.PRNGKey(5))
    np.testing.assert_allclose(float(eig_jit), float(eig), rtol=1e-6)


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_matrix_inverse_pth_root(p):
    m = _spd(5, p)
    root, error = optim.matrix_inverse_pth_root(jnp.asarray(m), p, ridge_epsilon=0.0)
    want = scipy.linalg.fractional_matrix_power(m.astype(np.float64), -1.0 / p).real
    np.testing.assert_allclose(np.asarray(root), want, rtol=2e-3, atol=2e-4)
    assert float(error) < 1e-3
    # the defining property: root**p @ m = I
    np.testing.assert_allclose(np.linalg.matrix_power(np.asarray(root, np.float64), p) @ m, np.eye(5), atol=5e-3)


def test_matrix_inverse_pth_root_one_by_one():
    root, error = optim.matrix_inverse_pth_root(jnp.asarray([[4.0]]), 2, ridge_epsilon=0.0)
    np.testing.assert_allclose(np.asarray(root), [[0.5]], rtol=1e-6)
    assert error == 0


@pytest.mark.parametrize("shape_b", [(7,), (7, 3)])
def test_nnls_matches_scipy(shape_b):
    a = RNG.standard_normal((7, 4)).astype(np.float32)
    b = RNG.standard_normal(shape_b).astype(np.float32)
    x = np.asarray(optim.nnls(jnp.asarray(a), jnp.asarray(b), 3000))
    assert x.shape == (4,) + shape_b[1:] and (x >= 0).all()
    cols = [b] if b.ndim == 1 else list(b.T)
    want = np.stack([scipy.optimize.nnls(a.astype(np.float64), c.astype(np.float64))[0] for c in cols], -1)
    np.testing.assert_allclose(x.reshape(want.shape), want, atol=1e-4)


def test_nnls_zero_matrix_and_jit_and_bad_shapes():
    x = optim.nnls(jnp.zeros((3, 2)), jnp.ones(3), 10)  # L = 0 must not divide by zero
    np.testing.assert_array_equal(np.asarray(x), [0.0, 0.0])
    a, b = jnp.asarray([[1.0, 2.0], [3.0, 4.0]]), jnp.asarray([5.0, 6.0])
    np.testing.assert_allclose(np.asarray(kiln.jit(lambda a, b: optim.nnls(a, b, 1000))(a, b)), [0.0, 1.7],
                               atol=1e-3)
    with pytest.raises(ValueError, match=r"A must be a matrix \(M, N\).*got A of shape \(2, 2\) and b of shape \(3,\)"):
        optim.nnls(a, jnp.ones(3), 10)


# ----------------------------------------------------------------------------------------------
# Projections: each result is in the set, and no point of the set (sampled) is nearer
# ----------------------------------------------------------------------------------------------

X = (2 * RNG.standard_normal(6)).astype(np.float32)
AVEC = RNG.standard_normal(6).astype(np.float32)


def _np_simplex(v, s=1.0):
    # Duchi et al. (2008), in float64
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    k = np.nonzero(u * np.arange(1, len(v) + 1) > css - s)[0][-1]
    return np.maximum(v - (css[k] - s) / (k + 1.0), 0)


def _np_l1_ball(v, s):
    return v if np.abs(v).sum() <= s else np.sign(v) * _np_simplex(np.abs(v), s)


CASES = [
    ("non_negative", lambda x: proj.projection_non_negative(x), lambda x: np.maximum(x, 0)),
    ("box", lambda x: proj.projection_box(x, -0.5, 0.25), lambda x: np.clip(x, -0.5, 0.25)),
    ("hypercube", lambda x: proj.projection_hypercube(x, 0.7), lambda x: np.clip(x, 0, 0.7)),
    ("simplex", lambda x: proj.projection_simplex(x, 2.0), lambda x: _np_simplex(x, 2.0)),
    ("l1_sphere", lambda x: proj.projection_l1_sphere(x, 1.5), lambda x: np.sign(x) * _np_simplex(np.abs(x), 1.5)),
    ("l1_ball", lambda x: proj.projection_l1_ball(x, 1.5), lambda x: _np_l1_ball(x, 1.5)),
    ("l1_ball inside", lambda x: proj.projection_l1_ball(x, 100.0), lambda x: x),
    ("l2_sphere", lambda x: proj.projection_l2_sphere(x, 0.5), lambda x: 0.5 * x / np.linalg.norm(x)),
    ("l2_ball", lambda x: proj.projection_l2_ball(x, 0.5), lambda x: 0.5 * x / np.linalg.norm(x)),
    ("l2_ball inside", lambda x: proj.projection_l2_ball(x, 100.0), lambda x: x),
    ("linf_ball", lambda x: proj.projection_linf_ball(x, 0.3), lambda x: np.clip(x, -0.3, 0.3)),
    ("vector", lambda x: proj.projection_vector(x, jnp.asarray(AVEC)), lambda x: (x @ AVEC) / (AVEC @ AVEC) * AVEC),
    ("hyperplane", lambda x: proj.projection_hyperplane(x, jnp.asarray(AVEC), 0.5),
     lambda x: x + (0.5 - x @ AVEC) / (AVEC @ AVEC) * AVEC),
    ("halfspace outside", lambda x: proj.projection_halfspace(x, jnp.asarray(AVEC), -3.0),
     lambda x: x + min((-3.0 - x @ AVEC) / (AVEC @ AVEC), 0) * AVEC),
    ("halfspace inside", lambda x: proj.projection_halfspace(x, jnp.asarray(AVEC), 100.0), lambda x: x),
]


@pytest.mark.parametrize("name, fn, ref", CASES, ids=[c[0] for c in CASES])
def test_projection_matches_numpy(name, fn, ref):
    want = ref(X.astype(np.float64))
    np.testing.assert_allclose(np.asarray(fn(jnp.asarray(X))), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(fn)(jnp.asarray(X))), want, rtol=1e-5, atol=1e-6)


def test_simplex_projection_is_nearest_point():
    # brute force: many random points of the simplex, none nearer than the projection
    x = X[:3].astype(np.float64)
    p = np.asarray(proj.projection_simplex(jnp.asarray(X[:3])), np.float64)
    assert (p >= 0).all() and abs(p.sum() - 1) < 1e-6
    grid = [np.array([i, j, 40 - i - j]) / 40 for i, j in itertools.product(range(41), range(41)) if i + j <= 40]
    assert np.linalg.norm(x - p) <= min(np.linalg.norm(x - g) for g in grid) + 1e-6


def test_projections_of_pytrees():
    t = {"a": jnp.asarray(X[:4]), "b": (jnp.asarray(X[4:]),)}
    flat = X.astype(np.float64)
    out = proj.projection_simplex(t)
    got = np.concatenate([np.asarray(out["a"]), np.asarray(out["b"][0])])
    np.testing.assert_allclose(got, _np_simplex(flat), atol=1e-6)
    out = proj.projection_l2_ball(t, 0.5)
    got = np.concatenate([np.asarray(out["a"]), np.asarray(out["b"][0])])
    np.testing.assert_allclose(got, 0.5 * flat / np.linalg.norm(flat), rtol=1e-6)
    # scalar bounds apply to every leaf; tree bounds leaf by leaf
    out = proj.projection_hypercube(t, 0.5)
    np.testing.assert_allclose(np.asarray(out["b"][0]), np.clip(X[4:], 0, 0.5))
    out = proj.projection_box(t, {"a": -0.1, "b": (0.0,)}, {"a": 0.1, "b": (1.0,)})
    np.testing.assert_allclose(np.asarray(out["a"]), np.clip(X[:4], -0.1, 0.1))
    with pytest.raises(ValueError, match="tree_broadcast"):
        proj.projection_box(t, {"z": 0.0}, 1.0)


def test_simplex_projection_jacobian():
    # inside the support the Jacobian is I - 11^T / k, zero elsewhere
    jac = np.asarray(kiln.jacobian(proj.projection_simplex)(jnp.asarray(X)))
    p = _np_simplex(X.astype(np.float64))
    s = (p > 0).astype(np.float64)
    want = (np.diag(s) - np.outer(s, s) / s.sum())
    np.testing.assert_allclose(jac, want, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# Second order
# ----------------------------------------------------------------------------------------------

W = RNG.standard_normal((3, 2)).astype(np.float32)
BIAS = RNG.standard_normal(2).astype(np.float32)
INPUTS = RNG.standard_normal((4, 3)).astype(np.float32)
TARGETS = RNG.standard_normal((4, 2)).astype(np.float32)


def _loss(p, x, y):
    return jnp.mean(jnp.tanh(x @ p["w"] + p["b"]) ** 2 - y * (x @ p["w"]))


def _params():
    return {"b": jnp.asarray(BIAS), "w": jnp.asarray(W)}


def _flat_grad(flat):
    p = {"b": jnp.asarray(flat[:2]), "w": jnp.asarray(flat[2:].reshape(3, 2))}
    g = kiln.grad(_loss)(p, INPUTS, TARGETS)
    return np.concatenate([np.asarray(g["b"], np.float64), np.asarray(g["w"], np.float64).ravel()])


def _fd_hessian():
    flat = np.concatenate([BIAS, W.ravel()]).astype(np.float64)
    eps = 1e-2
    cols = [(_flat_grad((flat + eps * e).astype(np.float32)) - _flat_grad((flat - eps * e).astype(np.float32)))
            / (2 * eps) for e in np.eye(8)]
    return np.stack(cols, -1)


def test_hvp_and_hessian_diag_vs_finite_differences():
    h = _fd_hessian()
    v = RNG.standard_normal(8).astype(np.float32)
    got = second_order.hvp(_loss, jnp.asarray(v), _params(), INPUTS, TARGETS)
    flat = np.concatenate([np.asarray(got["b"]), np.asarray(got["w"]).ravel()])
    np.testing.assert_allclose(flat, h @ v, rtol=2e-2, atol=2e-3)
    diag = np.asarray(second_order.hessian_diag(_loss, _params(), INPUTS, TARGETS))
    np.testing.assert_allclose(diag, np.diag(h), rtol=2e-2, atol=2e-3)
    # the exact diagonal equals one HVP per basis vector
    for i in range(8):
        e = np.eye(8, dtype=np.float32)[i]
        hv = second_order.hvp(_loss, jnp.asarray(e), _params(), INPUTS, TARGETS)
        np.testing.assert_allclose(diag[i], np.concatenate([np.asarray(hv["b"]), np.asarray(hv["w"]).ravel()])[i],
                                   rtol=1e-6)


def test_fisher_diag():
    got = np.asarray(second_order.fisher_diag(_loss, _params(), INPUTS, TARGETS))
    g = _flat_grad(np.concatenate([BIAS, W.ravel()]))
    np.testing.assert_allclose(got, g ** 2, rtol=1e-6)


def test_second_order_under_jit():
    f = kiln.jit(lambda p: second_order.hessian_diag(_loss, p, INPUTS, TARGETS))
    np.testing.assert_allclose(np.asarray(f(_params())),
                               np.asarray(second_order.hessian_diag(_loss, _params(), INPUTS, TARGETS)), rtol=1e-6)
