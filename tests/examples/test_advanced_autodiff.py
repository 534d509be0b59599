"""JAX's "Advanced automatic differentiation" pages (docs/higher-order.md's applications and
docs/jacobian-vector-products.md), ported to kiln by changing imports (tests/examples/jax_ported/advanced_autodiff.py),
checked against oracles that do not involve JAX.

The cells run once, in the pages' order and with their key, W and b threaded from cell to cell (the port's ``run``),
at small sizes: the Hessian-vector products on 3x4 instead of 30x40 matrices and 6/5 instead of 128 rows for the
matrix-Jacobian products. Oracles: closed forms in NumPy float64 (the TD(0) update and the naive pseudo-loss's
gradient, the logistic model's Jacobian and Hessian, the Hessians behind the Hessian-vector products), themselves
checked once against float64 central finite differences; Python loops over the batch for the per-example
gradients and over rows for the vmapped products; a NumPy Threefry (threefry_oracle.py) for the draws; the values
the pages print or state where they do not depend on random draws (the TD(0) update [1.2, 2.4, -1.2], the
straight-through estimator's four lines, vgrad's 6s, the vjp through Python control flow). The TD(0) cells are
also rerun in float64 and at other points. test_advanced_autodiff_against_jax.py compares the same cells with JAX.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import threefry_oracle
from ported import fd_jacobian, load

import kiln
import kiln.numpy as jnp

SIZES = dict(shape=(3, 4), num_covecs=6, num_vecs=5)


@pytest.fixture(scope="module")
def nb():
    return load("advanced_autodiff")


@pytest.fixture(scope="module")
def out(nb):
    """What every cell returns (``run``), and everything they printed under "stdout"."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = nb.run(**SIZES)
    res["stdout"] = buf.getvalue()
    return res


def _f64(x):
    return np.asarray(x, np.float64)


# ------------------------------------------------ NumPy oracles ------------------------------------------------

def _np_td_error(theta, s_tm1, r_t, s_t):
    return _f64(r_t) + _f64(theta) @ _f64(s_t) - _f64(theta) @ _f64(s_tm1)


def _np_td_update(theta, s_tm1, r_t, s_t):
    """The TD(0) update (r + v(s_t) - v(s_tm1)) grad v(s_tm1), for the linear v(s) = theta . s."""
    return _np_td_error(theta, s_tm1, r_t, s_t) * _f64(s_tm1)


def _np_naive_td_loss(theta, s_tm1, r_t, s_t):
    return -0.5 * _np_td_error(theta, s_tm1, r_t, s_t) ** 2


def _np_naive_td_grad(theta, s_tm1, r_t, s_t):
    """The gradient of the pseudo-loss with the target's dependence on theta kept: -delta (s_t - s_tm1)."""
    return -_np_td_error(theta, s_tm1, r_t, s_t) * (_f64(s_t) - _f64(s_tm1))


def _probs(nb, W, b):
    return 1.0 / (1.0 + np.exp(-(_f64(nb.inputs) @ _f64(W) + _f64(b))))


def _np_jac(nb, W, b):
    """d predict / dW: p (1 - p) x_i in row i; d predict / db: p (1 - p)."""
    p = _probs(nb, W, b)
    return (p * (1 - p))[:, None] * _f64(nb.inputs), p * (1 - p)


def _np_hess(nb, W, b):
    """d^2 predict_i / dW^2 = p (1 - p) (1 - 2p) x_i x_i^T."""
    X, p = _f64(nb.inputs), _probs(nb, W, b)
    return (p * (1 - p) * (1 - 2 * p))[:, None, None] * X[:, :, None] * X[:, None, :]


def _np_hvp_tanh2(X, V):
    """f(X) = sum(tanh(X)**2) has the diagonal Hessian 2 (1 - t^2)(1 - 3 t^2), t = tanh(X)."""
    t = np.tanh(_f64(X))
    return 2 * (1 - t**2) * (1 - 3 * t**2) * _f64(V)


A_CUBIC = np.array([[2.0, -1.0, 0.5], [0.0, 1.0, 3.0], [1.5, 0.25, -2.0]])


def _cubic(lib_np, x):
    """A function with a full Hessian: x^T A x / 2 + sum(x^3) + x0 x1 x2."""
    return 0.5 * x @ (lib_np.asarray(A_CUBIC, x.dtype) @ x) + lib_np.sum(x**3) + x[0] * x[1] * x[2]


def _np_cubic_hessian(x):
    x = _f64(x)
    H = (A_CUBIC + A_CUBIC.T) / 2 + np.diag(6 * x)
    H += np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
    return H


def test_numpy_oracles_agree_with_finite_differences(nb, out):
    # the closed forms are themselves checked once, in float64, before they judge kiln
    rng = np.random.default_rng(0)
    th, s0, r, s1 = rng.normal(size=3), rng.normal(size=3), rng.normal(), rng.normal(size=3)
    np.testing.assert_allclose(fd_jacobian(lambda t: _np_naive_td_loss(t, s0, r, s1), th),
                               _np_naive_td_grad(th, s0, r, s1), rtol=1e-7, atol=1e-9)
    # the TD(0) update is the gradient of the pseudo-loss with the target held fixed
    target = r + th @ s1
    np.testing.assert_allclose(fd_jacobian(lambda t: -0.5 * (target - t @ s0) ** 2, th), _np_td_update(th, s0, r, s1),
                               rtol=1e-7, atol=1e-9)
    W, b = _f64(out["W"]), _f64(out["b"])
    J, Jb = _np_jac(nb, W, b)
    np.testing.assert_allclose(fd_jacobian(lambda w: _probs(nb, w, b), W), J, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fd_jacobian(lambda c: _probs(nb, W, c), b), Jb, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fd_jacobian(lambda w: _np_jac(nb, w, b)[0], W, h=1e-5), _np_hess(nb, W, b), rtol=1e-6,
                               atol=1e-9)
    X = np.linspace(-2, 2, 12).reshape(3, 4)
    V = np.cos(np.arange(12.0)).reshape(3, 4)
    fd = fd_jacobian(lambda x: 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), X)  # the Jacobian of grad sum(tanh^2)
    np.testing.assert_allclose(np.tensordot(fd, V, 2), _np_hvp_tanh2(X, V), rtol=1e-7, atol=1e-9)
    x = np.array([0.3, -1.2, 0.7])
    fd = fd_jacobian(lambda y: fd_jacobian(lambda z: _cubic(np, z), y, h=1e-5), x, h=1e-4)
    np.testing.assert_allclose(fd, _np_cubic_hessian(x), rtol=1e-5, atol=1e-6)


# ------------------------------------------------ Stopping gradients ------------------------------------------------

def test_td_updates(nb, out):
    args = (nb.theta, nb.s_tm1, nb.r_t, nb.s_t)
    naive, td, original = out["naive_td"], out["td"], out["original"]
    for g in (naive, td, original):
        assert g.shape == (3,) and g.dtype == np.float32 and not g.weak_type
    np.testing.assert_allclose(_f64(naive), _np_naive_td_grad(*args), rtol=1e-6)
    np.testing.assert_allclose(_f64(naive), [-1.2, 1.2, -1.2], rtol=1e-6)
    # stop_gradient gives the TD(0) update: the page's [1.2, 2.4, -1.2], "same as `delta_theta`"
    np.testing.assert_allclose(_f64(td), _np_td_update(*args), rtol=1e-6)
    np.testing.assert_allclose(_f64(td), [1.2, 2.4, -1.2], rtol=1e-6)
    np.testing.assert_allclose(_f64(original), [1.2, 2.4, -1.2], rtol=1e-6)
    np.testing.assert_allclose(_f64(original), _f64(td), rtol=1e-7)


def test_td_updates_at_other_points(nb):
    rng = np.random.default_rng(1)
    for _ in range(3):
        th, s0, s1 = (rng.normal(size=3).astype(np.float32) for _ in range(3))
        r = np.float32(rng.normal())
        args = (jnp.asarray(th), jnp.asarray(s0), jnp.asarray(r), jnp.asarray(s1))
        np.testing.assert_allclose(_f64(nb.naive_td_update_cell(*args)), _np_naive_td_grad(th, s0, r, s1), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(_f64(nb.td_update_cell(*args)), _np_td_update(th, s0, r, s1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_f64(nb.original_calculation_cell(*args)), _np_td_update(th, s0, r, s1),
                                   rtol=1e-5, atol=1e-5)


def test_td_updates_in_float64(nb):
    with kiln.config.override("enable_x64", True):
        args = tuple(jnp.asarray(_f64(a)) for a in (nb.theta, nb.s_tm1, nb.r_t, nb.s_t))
        res = nb.naive_td_update_cell(*args), nb.td_update_cell(*args), nb.original_calculation_cell(*args)
        *_, perex = nb.per_example_gradients_cells(*args)
    assert all(g.dtype == np.float64 for g in (*res, *perex))
    f64args = tuple(_f64(a) for a in args)
    np.testing.assert_allclose(_f64(res[0]), _np_naive_td_grad(*f64args), rtol=1e-15, atol=1e-15)
    for g in (res[1], res[2], *perex):
        np.testing.assert_allclose(_f64(g), np.broadcast_to(_np_td_update(*f64args), g.shape), rtol=1e-15,
                                   atol=1e-15)


# ------------------------------------------ Straight-through estimator ------------------------------------------

def test_straight_through_estimator(out):
    f, st, fx, stx, gf, gst = out["straight_through"]
    # the page's four lines
    assert out["stdout"].splitlines()[:4] == ["f(x):  3.0", "straight_through_f(x): 3.0", "grad(f)(x): 0.0",
                                              "grad(straight_through_f)(x): 1.0"]
    assert [float(v) for v in (fx, stx, gf, gst)] == [3.0, 3.0, 0.0, 1.0]
    assert all(v.dtype == np.float32 and v.shape == () for v in (fx, stx, gf, gst))


def test_straight_through_is_exactly_round_with_an_exactly_one_gradient(out):
    # "an exactly-zero expression with Sterbenz lemma that has an exactly-one gradient", away from 3.2 too
    f, st = out["straight_through"][:2]
    xs = np.array([3.2, -3.2, 0.5, 1.5, 2.5, -0.5, -2.5, 1e-30, -7.75, 123456.5, 8388607.5, 1e30, 0.0],
                  np.float32)
    np.testing.assert_array_equal(np.asarray(st(jnp.asarray(xs))), np.round(xs))  # half to even, as NumPy
    np.testing.assert_array_equal(np.asarray(kiln.jit(st)(jnp.asarray(xs))), np.round(xs))
    np.testing.assert_array_equal(np.asarray(kiln.vmap(kiln.grad(st))(jnp.asarray(xs))), np.ones_like(xs))
    np.testing.assert_array_equal(np.asarray(kiln.vmap(kiln.grad(f))(jnp.asarray(xs))), np.zeros_like(xs))
    # forward mode agrees: the tangent passes through unchanged
    y, t = kiln.jvp(st, (jnp.asarray(xs),), (jnp.arange(13.0),))
    np.testing.assert_array_equal(np.asarray(y), np.round(xs))
    np.testing.assert_array_equal(np.asarray(t), np.arange(13.0, dtype=np.float32))


# ---------------------------------------------- Per-example gradients ----------------------------------------------

def test_per_example_gradients(nb, out):
    first, single, almost, inefficient, jitted, timed_inefficient, timed_jitted = out["perex"]
    args = (nb.theta, nb.s_tm1, nb.r_t, nb.s_t)
    row = _np_td_update(*args)
    np.testing.assert_allclose(_f64(single), row, rtol=1e-6)
    assert single.shape == (3,)
    # the batch is the one transition twice: a Python loop over it, row by row
    expect = np.stack([_np_td_update(nb.theta, s0, r, s1) for s0, r, s1 in
                       zip(_f64([nb.s_tm1] * 2), _f64([nb.r_t] * 2), _f64([nb.s_t] * 2))])
    for g in (first, almost, inefficient, jitted, timed_inefficient, timed_jitted):
        assert g.shape == (2, 3) and g.dtype == np.float32
        np.testing.assert_allclose(_f64(g), expect, rtol=1e-6)


def test_per_example_gradients_of_distinct_examples(nb, out):
    dtdloss_dtheta, almost_perex_grads, inefficient_perex_grads, perex_grads = out["perex_fns"]
    rng = np.random.default_rng(2)
    n = 5
    thetas, s0, s1 = (rng.normal(size=(n, 3)).astype(np.float32) for _ in range(3))
    r = rng.normal(size=n).astype(np.float32)
    batch = (jnp.asarray(s0), jnp.asarray(r), jnp.asarray(s1))
    # one theta for all: a Python loop over the examples, with the closed form and with the unbatched gradient
    loop = np.stack([_np_td_update(thetas[0], s0[i], r[i], s1[i]) for i in range(n)])
    for fn in (inefficient_perex_grads, perex_grads):
        g = fn(jnp.asarray(thetas[0]), *batch)
        assert g.shape == (n, 3)
        np.testing.assert_allclose(_f64(g), loop, rtol=1e-5, atol=1e-6)
    unbatched = np.stack([_f64(dtdloss_dtheta(jnp.asarray(thetas[0]), *(jnp.asarray(a[i]) for a in (s0, r, s1))))
                          for i in range(n)])
    np.testing.assert_allclose(_f64(perex_grads(jnp.asarray(thetas[0]), *batch)), unbatched, rtol=1e-6, atol=1e-7)
    # a theta per example (almost_perex_grads maps every argument)
    loop = np.stack([_np_td_update(thetas[i], s0[i], r[i], s1[i]) for i in range(n)])
    np.testing.assert_allclose(_f64(almost_perex_grads(jnp.asarray(thetas), *batch)), loop, rtol=1e-5, atol=1e-6)


# ---------------------------------------------- Hessian-vector products ----------------------------------------------

def test_hessian_vector_products_of_a_function_with_a_full_hessian(nb):
    # the pages' four hvp functions (grad-of-grad, forward-over-reverse, reverse-over-forward, reverse-over-reverse)
    f = lambda x: _cubic(jnp, x)  # noqa: E731
    x, v = jnp.array([0.3, -1.2, 0.7]), jnp.array([1.0, -0.5, 2.0])
    expect = _np_cubic_hessian(x) @ _f64(v)
    results = [nb.hvp_grad_of_grad(f, x, v), nb.hvp(f, (x,), (v,)), nb.hvp_revfwd(f, (x,), (v,))[0],
               nb.hvp_revrev(f, (x,), (v,)), jnp.tensordot(nb.hessian(f)(x), v, 1)]
    for h in results:
        assert h.shape == (3,) and h.dtype == np.float32
        np.testing.assert_allclose(_f64(h), expect, rtol=1e-5, atol=1e-5)


def test_forward_over_reverse_hvp_of_containers(nb):
    # the page: hvp "works with arrays of any shape and with arbitrary container types"
    def f(p):
        return _cubic(jnp, p["x"]) + jnp.sum(jnp.tanh(p["m"]) ** 2)
    m = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)
    x = jnp.array([0.3, -1.2, 0.7])
    v = {"x": jnp.array([1.0, -0.5, 2.0]), "m": jnp.cos(jnp.arange(6.0)).reshape(2, 3)}
    h = nb.hvp(f, ({"x": x, "m": m},), (v,))
    assert sorted(h) == ["m", "x"] and h["m"].shape == (2, 3)
    np.testing.assert_allclose(_f64(h["x"]), _np_cubic_hessian(x) @ _f64(v["x"]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_f64(h["m"]), _np_hvp_tanh2(m, v["m"]), rtol=1e-5, atol=1e-6)


def test_hvp_cell(out):
    ans1, ans2, close = out["hvp"]
    X, V = out["X"], out["V"]
    assert X.shape == V.shape == ans1.shape == ans2.shape == SIZES["shape"]
    expect = _np_hvp_tanh2(X, V)
    np.testing.assert_allclose(_f64(ans1), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_f64(ans2), expect, rtol=1e-5, atol=1e-6)
    assert bool(close) and close.dtype == np.bool_ and "True" in out["stdout"].splitlines()


def test_hvp_three_ways_and_the_full_hessian(out):
    expect = _np_hvp_tanh2(out["X"], out["V"])
    fwdrev, (revfwd,), revrev, naive = out["hvp_timing"]  # reverse-over-forward returns grad's tuple of primals
    for ans in (fwdrev, revfwd, revrev, naive):
        assert ans.shape == SIZES["shape"] and ans.dtype == np.float32
        np.testing.assert_allclose(_f64(ans), expect, rtol=1e-5, atol=1e-6)
    for title in ("Forward over reverse", "Reverse over forward", "Reverse over reverse",
                  "Naive full Hessian materialization"):
        assert title in out["stdout"]


# --------------------------------------------------- The draws ---------------------------------------------------

def test_draws_follow_the_pages_key(out):
    # key(0) -> split 3 for W, b; split for the jvp's v; split for the vjp's u; split 3 for X, V; key(0) for U and S
    def normal(key, shape):
        return threefry_oracle.normal(key, int(np.prod(shape))).reshape(shape)
    k0 = np.zeros(2, np.uint32)
    k1, kW, kb = threefry_oracle.split(k0, 3)
    k2, kv = threefry_oracle.split(k1)
    k3, ku = threefry_oracle.split(k2)
    _, kX, kV = threefry_oracle.split(k3, 3)
    pairs = [(out["W"], normal(kW, (3,))), (out["b"], normal(kb, ())), (out["jvp"][0], normal(kv, (3,))),
             (out["vjp"][0], normal(ku, (4,))), (out["X"], normal(kX, SIZES["shape"])),
             (out["V"], normal(kV, SIZES["shape"])), (out["mjp"][0], normal(k0, (SIZES["num_covecs"], 4))),
             (out["jmp"][0], normal(k0, (SIZES["num_vecs"], 3)))]
    for got, want in pairs:
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(_f64(got), want, rtol=2e-6, atol=1e-6)


# ---------------------------------------------- Jacobians and Hessians ----------------------------------------------

def test_jacfwd_and_jacrev(nb, out):
    J, Jb = _np_jac(nb, out["W"], out["b"])
    J_fwd, J_rev = out["jacobians"]
    for Jk in (J_fwd, J_rev):
        assert Jk.shape == (4, 3) and Jk.dtype == np.float32
        np.testing.assert_allclose(_f64(Jk), J, rtol=1e-5, atol=1e-7)
    J_dict = out["jacobians_dict"]
    assert list(J_dict) == ["W", "b"] and J_dict["b"].shape == (4,)
    np.testing.assert_allclose(_f64(J_dict["W"]), J, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_f64(J_dict["b"]), Jb, rtol=1e-5, atol=1e-7)
    stdout = out["stdout"]
    for line in ("jacfwd result, with shape (4, 3)", "jacrev result, with shape (4, 3)", "Jacobian from W to logits is",
                 "Jacobian from b to logits is"):
        assert line in stdout.splitlines()


def test_hessian(nb, out):
    H = out["hessian"]
    assert H.shape == (4, 3, 3) and H.dtype == np.float32
    np.testing.assert_allclose(_f64(H), _np_hess(nb, out["W"], out["b"]), rtol=1e-4, atol=1e-6)
    assert "hessian, with shape (4, 3, 3)" in out["stdout"].splitlines()


def test_hessian_of_a_scalar_function_of_a_python_float(nb):
    # jacfwd(jacrev(f)) of x^3 at 2.0: 6x = 12, exactly
    h = nb.hessian(lambda x: x**3)(2.0)
    assert h.shape == () and h.dtype == np.float32 and float(h) == 12.0


# ------------------------------------------------ JVPs and VJPs ------------------------------------------------

def test_jvp(nb, out):
    v, y, u = out["jvp"]
    J, _ = _np_jac(nb, out["W"], out["b"])
    assert v.shape == (3,) and y.shape == (4,) and u.shape == (4,)
    np.testing.assert_allclose(_f64(y), _probs(nb, out["W"], out["b"]), rtol=1e-5)
    np.testing.assert_allclose(_f64(u), J @ _f64(v), rtol=1e-5, atol=1e-6)


def test_vjp(nb, out):
    u, y, v = out["vjp"]
    J, _ = _np_jac(nb, out["W"], out["b"])
    assert u.shape == (4,) and isinstance(v, tuple) and len(v) == 1 and v[0].shape == (3,)
    np.testing.assert_allclose(_f64(y), _probs(nb, out["W"], out["b"]), rtol=1e-5)
    np.testing.assert_allclose(_f64(v[0]), J.T @ _f64(u), rtol=1e-5, atol=1e-6)


def test_vector_valued_gradient(out):
    g = out["vgrad"]
    np.testing.assert_array_equal(np.asarray(g), np.full((2, 2), 6.0, np.float32))
    assert g.dtype == np.float32 and "[[6. 6.]\n [6. 6.]]" in out["stdout"]


# ------------------------------------------ Composing VJPs, JVPs and vmap -------------------------------------------

def test_matrix_jacobian_products(nb, out):
    U, loop_vs, vmap_vs = out["mjp"]
    J, _ = _np_jac(nb, out["W"], out["b"])
    assert U.shape == (SIZES["num_covecs"], 4) and loop_vs.shape == vmap_vs.shape == (SIZES["num_covecs"], 3)
    expect = np.stack([J.T @ ui for ui in _f64(U)])  # one covector at a time
    np.testing.assert_allclose(_f64(loop_vs), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_f64(vmap_vs), expect, rtol=1e-5, atol=1e-6)


def test_jacobian_matrix_products(nb, out):
    S, loop_vs, vmap_vs = out["jmp"]
    J, _ = _np_jac(nb, out["W"], out["b"])
    assert S.shape == (SIZES["num_vecs"], 3) and loop_vs.shape == vmap_vs.shape == (SIZES["num_vecs"], 4)
    expect = np.stack([J @ si for si in _f64(S)])
    np.testing.assert_allclose(_f64(loop_vs), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_f64(vmap_vs), expect, rtol=1e-5, atol=1e-6)
    stdout = out["stdout"]
    for title in ("Non-vmapped Matrix-Jacobian product", "Vmapped Matrix-Jacobian product",
                  "Non-vmapped Jacobian-Matrix product", "Vmapped Jacobian-Matrix product"):
        assert title in stdout.splitlines()


def test_our_jacrev_and_jacfwd(nb, out):
    J, _ = _np_jac(nb, out["W"], out["b"])
    for builtin, ours in (out["our_jacrev"], out["our_jacfwd"]):
        assert builtin.shape == ours.shape == (4, 3)
        np.testing.assert_allclose(_f64(builtin), J, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(_f64(ours), J, rtol=1e-5, atol=1e-7)


def test_jit_of_a_vjp_through_python_control_flow(out):
    y, (g,) = out["control_flow"]
    np.testing.assert_allclose(float(y), 4 * np.pi, rtol=1e-6)  # x = 4 takes the ValueError branch: pi * x
    np.testing.assert_allclose(float(g), np.pi, rtol=1e-6)
    assert g.dtype == np.float32
    assert out["stdout"].splitlines()[-1] == "(Array(3.1415927, dtype=float32, weak_type=True),)"
