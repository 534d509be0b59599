"""JAX's docs notebook autodiff_cookbook.md, ported to kiln by changing imports (tests/examples/jax_ported/
autodiff_cookbook.py), checked against oracles that do not involve JAX.

The cells run once, in the notebook's order and with its key, W and b threaded from cell to cell (the port's
``run``), at small sizes: the Hessian-vector products on 3x4 instead of 30x40 matrices and 6/5 instead of 128
rows for the matrix-Jacobian products. Oracles: closed forms in NumPy float64 for the logistic-regression loss,
its gradient, the Jacobian and Hessian of its predictions and the Hessian of sum(tanh(X)**2); central finite
differences in float64 (the notebook's own check rerun with x64 on, and NumPy's for the complex Cholesky
example); a Python loop over rows for the vmapped products; the values the notebook prints where they do not
depend on its random draws (its W-dependent outputs come from an older PRNG and are not used).
test_autodiff_cookbook_against_jax.py compares the same cells with JAX number for number.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from ported import fd_jacobian, load

import kiln
import kiln.numpy as jnp

SIZES = dict(shape=(3, 4), num_covecs=6, num_vecs=5)


@pytest.fixture(scope="module")
def nb():
    return load("autodiff_cookbook")


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

def _data(nb):
    return _f64(nb.inputs), _f64(nb.targets)


def _probs(nb, W, b):
    X, _ = _data(nb)
    return 1.0 / (1.0 + np.exp(-(X @ _f64(W) + _f64(b))))


def _np_loss(nb, W, b):
    _, t = _data(nb)
    p = _probs(nb, W, b)
    return -np.sum(np.log(p * t + (1 - p) * (1 - t)))


def _np_grads(nb, W, b):
    """d loss / dW = X^T (p - t), d loss / db = sum(p - t)."""
    X, t = _data(nb)
    r = _probs(nb, W, b) - t
    return X.T @ r, np.sum(r)


def _np_jac(nb, W, b):
    """d predict / dW: p (1 - p) x_i in row i; d predict / db: p (1 - p)."""
    X, _ = _data(nb)
    p = _probs(nb, W, b)
    return (p * (1 - p))[:, None] * X, p * (1 - p)


def _np_hess(nb, W, b):
    """d^2 predict_i / dW^2 = p (1 - p) (1 - 2p) x_i x_i^T."""
    X, _ = _data(nb)
    p = _probs(nb, W, b)
    return (p * (1 - p) * (1 - 2 * p))[:, None, None] * X[:, :, None] * X[:, None, :]


def test_numpy_oracles_agree_with_finite_differences(nb, out):
    # the closed forms are themselves checked once, in float64, before they judge kiln
    W, b = _f64(out["W"]), _f64(out["b"])
    gW, gb = _np_grads(nb, W, b)
    np.testing.assert_allclose(fd_jacobian(lambda w: _np_loss(nb, w, b), W), gW, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fd_jacobian(lambda c: _np_loss(nb, W, c), b), gb, rtol=1e-7, atol=1e-9)
    J, Jb = _np_jac(nb, W, b)
    np.testing.assert_allclose(fd_jacobian(lambda w: _probs(nb, w, b), W), J, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fd_jacobian(lambda c: _probs(nb, W, c), b), Jb, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fd_jacobian(lambda w: _np_jac(nb, w, b)[0], W, h=1e-5), _np_hess(nb, W, b), rtol=1e-6,
                               atol=1e-9)
    X = np.linspace(-2, 2, 12).reshape(3, 4)
    V = np.cos(np.arange(12.0)).reshape(3, 4)
    fd = fd_jacobian(lambda x: 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), X)  # the Jacobian of grad sum(tanh^2)
    np.testing.assert_allclose(np.tensordot(fd, V, 2), _np_hvp_tanh2(X, V), rtol=1e-7, atol=1e-9)


# ------------------------------------------------ Gradients ------------------------------------------------

def test_grad_of_tanh_to_third_order(out):
    d1, d2, d3 = out["grad_tanh"]
    t = np.tanh(2.0)
    np.testing.assert_allclose([float(d1), float(d2), float(d3)],
                               [1 - t**2, -2 * t * (1 - t**2), -2 * (1 - t**2) * (1 - 3 * t**2)], rtol=1e-5)
    # the notebook's printed values (0.070650935, -0.13621889, 0.2526544)
    np.testing.assert_allclose([float(d1), float(d2), float(d3)], [0.070650935, -0.13621889, 0.2526544], rtol=2e-5)
    assert all(d.dtype == np.float32 and d.shape == () for d in (d1, d2, d3))
    lines = out["stdout"].splitlines()
    np.testing.assert_allclose([float(s) for s in lines[:3]], [float(d1), float(d2), float(d3)], rtol=1e-6)


def test_model_setup(nb, out):
    W, b = out["W"], out["b"]
    assert W.shape == (3,) and b.shape == () and W.dtype == b.dtype == np.float32
    assert len({*_f64(W).tolist(), float(b)}) == 4  # four different draws
    assert nb.targets.dtype == np.bool_ and nb.inputs.shape == (4, 3)
    # the loss is what its definition says, at the drawn point and at another one
    np.testing.assert_allclose(float(nb.loss(W, b)), _np_loss(nb, W, b), rtol=1e-5)
    np.testing.assert_allclose(float(nb.loss(jnp.array([0.5, -1.0, 2.0]), 0.25)),
                               _np_loss(nb, [0.5, -1.0, 2.0], 0.25), rtol=1e-5)


def test_grad_argnums(nb, out):
    W_grad0, W_grad_default, b_grad1, (W_grad, b_grad) = out["argnums"]
    gW, gb = _np_grads(nb, out["W"], out["b"])
    for g in (W_grad0, W_grad_default, W_grad):
        assert g.shape == (3,) and g.dtype == np.float32
        np.testing.assert_allclose(_f64(g), gW, rtol=1e-5, atol=1e-6)
    for g in (b_grad1, b_grad):
        assert g.shape == () and g.dtype == np.float32
        np.testing.assert_allclose(float(g), gb, rtol=1e-5, atol=1e-6)
    assert [ln.split()[0] for ln in out["stdout"].splitlines()[3:8]] == ["W_grad", "W_grad", "b_grad", "W_grad",
                                                                          "b_grad"]


def test_grad_of_dict(nb, out):
    g = out["dict"]
    assert isinstance(g, dict) and sorted(g) == ["W", "b"]
    gW, gb = _np_grads(nb, out["W"], out["b"])
    np.testing.assert_allclose(_f64(g["W"]), gW, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(g["b"]), gb, rtol=1e-5, atol=1e-6)


def test_value_and_grad(nb, out):
    loss_value, (gW_, gb_), loss_again = out["value_and_grad"]
    expect = _np_loss(nb, out["W"], out["b"])
    np.testing.assert_allclose([float(loss_value), float(loss_again)], [expect, expect], rtol=1e-5)
    gW, gb = _np_grads(nb, out["W"], out["b"])
    np.testing.assert_allclose(_f64(gW_), gW, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(gb_), gb, rtol=1e-5, atol=1e-6)
    printed = [ln for ln in out["stdout"].splitlines() if ln.startswith("loss value")]
    assert len(printed) == 2 and all(abs(float(ln.split()[-1]) - expect) < 1e-5 for ln in printed)


def test_numerical_differences_cell(nb, out):
    unitvec, b_num, b_auto, W_num, W_auto = out["numerical"]
    gW, gb = _np_grads(nb, out["W"], out["b"])
    np.testing.assert_allclose(np.linalg.norm(_f64(unitvec)), 1.0, rtol=1e-6)
    np.testing.assert_allclose(float(b_auto), gb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(W_auto), gW @ _f64(unitvec), rtol=1e-5, atol=1e-6)
    # float32 differences of a loss near 3 with a step of 1e-4: good to about 1e-2 (the notebook's are 3e-3 off)
    assert abs(float(b_num) - gb) < 2e-2 and abs(float(W_num) - gW @ _f64(unitvec)) < 2e-2


def test_numerical_differences_cell_in_float64(nb, out):
    # the notebook's check rerun with x64 on: the differences agree with autodiff to the step's O(eps^2)
    with kiln.config.override("enable_x64", True):
        W, b = jnp.asarray(_f64(out["W"])), jnp.asarray(_f64(out["b"]))
        assert W.dtype == np.float64
        with contextlib.redirect_stdout(io.StringIO()):
            _, unitvec, b_num, b_auto, W_num, W_auto = nb.numerical_differences_cell(W, b, kiln.random.key(1))
        loss_value, (gW_, gb_), _ = nb.value_and_grad_cell(W, b)
    assert all(x.dtype == np.float64 for x in (unitvec, b_num, b_auto, W_num, W_auto, loss_value, gW_, gb_))
    gW, gb = _np_grads(nb, W, b)
    u = _f64(unitvec)
    np.testing.assert_allclose(np.linalg.norm(u), 1.0, rtol=1e-14)
    np.testing.assert_allclose([float(b_auto), float(W_auto)], [gb, gW @ u], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose([float(b_num), float(W_num)], [gb, gW @ u], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(float(loss_value), _np_loss(nb, W, b), rtol=1e-13)
    np.testing.assert_allclose(_f64(gW_), gW, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(float(gb_), gb, rtol=1e-12, atol=1e-14)


def test_check_grads(nb, out):
    assert "hessian, with shape" in out["stdout"]  # run() got past check_grads_cell(W, b), order 2, without raising

    # and check_grads is not a no-op: a wrong derivative rule fails it
    @kiln.custom_jvp
    def wrong_sigmoid(x):
        return nb.sigmoid(x)

    wrong_sigmoid.defjvp(lambda p, t: (nb.sigmoid(p[0]), 2.0 * t[0]))
    with pytest.raises(AssertionError):
        nb.check_grads(wrong_sigmoid, (out["W"],), order=1)


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
    assert "jacfwd result, with shape (4, 3)" in out["stdout"] and "jacrev result, with shape (4, 3)" in out["stdout"]
    assert "Jacobian from W to logits is" in out["stdout"] and "Jacobian from b to logits is" in out["stdout"]


def test_hessian(nb, out):
    H = out["hessian"]
    assert H.shape == (4, 3, 3) and H.dtype == np.float32
    np.testing.assert_allclose(_f64(H), _np_hess(nb, out["W"], out["b"]), rtol=1e-4, atol=1e-6)
    assert "hessian, with shape (4, 3, 3)" in out["stdout"]


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
    np.testing.assert_array_equal(np.asarray(out["vgrad"]), np.full((2, 2), 6.0, np.float32))  # the notebook's output
    assert out["vgrad"].dtype == np.float32


# --------------------------------------------- Hessian-vector products ----------------------------------------------

def _np_hvp_tanh2(X, V):
    """f(X) = sum(tanh(X)**2) has the diagonal Hessian 2 (1 - t^2)(1 - 3 t^2), t = tanh(X)."""
    t = np.tanh(_f64(X))
    return 2 * (1 - t**2) * (1 - 3 * t**2) * _f64(V)


def test_hvp_forward_over_reverse(out):
    ans1, ans2, close = out["hvp"]
    X, V = out["X"], out["V"]
    assert X.shape == V.shape == ans1.shape == ans2.shape == SIZES["shape"]
    assert not np.array_equal(np.asarray(X), np.asarray(V))
    expect = _np_hvp_tanh2(X, V)
    np.testing.assert_allclose(_f64(ans1), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_f64(ans2), expect, rtol=1e-5, atol=1e-6)
    assert bool(close) and close.dtype == np.bool_
    assert out["stdout"].splitlines().count("True") == 1 + 3  # the hvp cell's and the three jvp checks'


def test_hvp_three_ways_and_the_full_hessian(out):
    expect = _np_hvp_tanh2(out["X"], out["V"])
    fwdrev, (revfwd,), revrev, naive = out["hvp_timing"]  # reverse-over-forward returns grad's tuple of primals
    for ans in (fwdrev, revfwd, revrev, naive):
        assert ans.shape == SIZES["shape"] and ans.dtype == np.float32
        np.testing.assert_allclose(_f64(ans), expect, rtol=1e-5, atol=1e-6)
    for title in ("Forward over reverse", "Reverse over forward", "Reverse over reverse",
                  "Naive full Hessian materialization"):
        assert title in out["stdout"]


def test_hvp_of_containers(nb, out):
    # the notebook's claim: the forward-over-reverse hvp "works with arbitrary container types"
    W, b = out["W"], out["b"]
    v = {"W": jnp.array([0.3, -1.0, 0.5]), "b": jnp.array(2.0)}
    h = nb.hvp(nb.loss2, ({"W": W, "b": b},), (v,))
    # loss Hessian: sum_i p_i (1 - p_i) z_i z_i^T with z_i = (x_i, 1)
    X, _ = _data(nb)
    p = _probs(nb, W, b)
    Z = np.concatenate([X, np.ones((4, 1))], axis=1)
    Hv = (Z.T * (p * (1 - p))) @ Z @ np.array([0.3, -1.0, 0.5, 2.0])
    np.testing.assert_allclose(_f64(h["W"]), Hv[:3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(h["b"]), Hv[3], rtol=1e-5, atol=1e-6)


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
    assert "(Array(3.1415927, dtype=float32" in out["stdout"]  # the notebook's output


# ------------------------------------------ Complex numbers ------------------------------------------

def test_complex_jvp_check(out):
    # fun(z) = u + i v with u = a x + b y and v = c x + d y, where (late binding) c, d are the tangent's
    for ans, expected, coeffs in out["check_jvp"]:
        a, b, c, d, x, y = (float(t) for t in coeffs)
        assert ans.dtype == np.complex64 and 0 <= min(a, b, c, d, x, y) and max(a, b, c, d, x, y) < 1
        truth = (a * c + b * d) + 1j * (c * c + d * d)
        np.testing.assert_allclose(complex(ans), truth, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(complex(expected), truth, rtol=1e-5, atol=1e-6)
    seeds = [tuple(float(t) for t in r[2]) for r in out["check_jvp"]]
    assert len(set(seeds)) == 3


def test_complex_vjp_check(out):
    # the notebook's rule: (c + di)* df = [c, -d] [[du/dx, du/dy], [dv/dx, dv/dy]] [1, -i]^T
    for ans, expected, coeffs in out["check_vjp"]:
        a, b, c, d, x, y = (float(t) for t in coeffs)
        assert ans.dtype == np.complex64
        truth = (a * c - c * d) + 1j * (d * d - b * c)
        np.testing.assert_allclose(complex(ans), truth, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(complex(expected), truth, rtol=1e-5, atol=1e-6)


def test_grad_of_complex_to_real(out):
    g = out["complex_to_real"]
    assert g.dtype == np.complex64
    assert complex(g) == 6 - 8j  # d/dx - i d/dy of x^2 + y^2 at 3 + 4i; the notebook's output


def test_holomorphic_grad(out):
    g = out["holomorphic"]
    assert g.dtype == np.complex64
    np.testing.assert_allclose(complex(g), np.cos(3 + 4j), rtol=1e-6)
    np.testing.assert_allclose(complex(g), -27.034945 - 3.8511531j, rtol=1e-6)  # the notebook's output


def test_holomorphic_grad_of_a_non_holomorphic_function(out):
    g = complex(out["non_holomorphic"])
    assert g == 1 and np.signbit(g.imag)  # the notebook's 1.-0.j: the derivative of the real part


def test_complex_output_needs_holomorphic(nb):
    # "otherwise, JAX will raise an error when grad is used for a complex-output function"
    with pytest.raises(TypeError):
        nb.grad(nb.jnp.sin)(3.0 + 4j)
    # a real function that uses complex numbers inside gets the real answer (the notebook's upshot 3)
    g = nb.grad(lambda x: nb.jnp.real(nb.jnp.exp(1j * x)))(1.0)
    np.testing.assert_allclose(float(g), -np.sin(1.0), rtol=1e-6)


def test_grad_through_complex_cholesky(nb, out):
    G = np.asarray(out["cholesky"])
    assert G.shape == (3, 3) and G.dtype == np.complex64
    A = np.asarray(nb.A).astype(np.complex128)

    def f(X):  # jnp.linalg.cholesky reads the Hermitian part of its input
        return np.sum((lambda L: (L - np.sin(L)) ** 2)(np.linalg.cholesky((X + X.conj().T) / 2))).real

    h = 1e-6
    expect = np.zeros((3, 3), np.complex128)
    for i in np.ndindex(3, 3):
        e = np.zeros((3, 3))
        e[i] = h
        expect[i] = (f(A + e) - f(A - e)) / (2 * h) - 1j * (f(A + 1j * e) - f(A - 1j * e)) / (2 * h)
    np.testing.assert_allclose(G, expect, rtol=1e-5, atol=2e-5)
    notebook = np.array([[-0.75342447 + 0.j, -3.0509021 - 10.940544j, 5.989684 + 3.5422976j],
                         [-3.0509021 + 10.940544j, -8.904487 + 0.j, -5.1351547 - 6.5593696j],
                         [5.989684 - 3.5422976j, -5.1351547 + 6.5593696j, 0.01320434 + 0.j]])
    np.testing.assert_allclose(G, notebook, rtol=2e-5, atol=2e-5)
