"""JAX's docs/new_docs/301/cookbook.md ("The Autodiff Cookbook with JVP and VJP"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_cookbook_301.py), checked against oracles that involve neither JAX nor kiln.

The cells run once, in the page's order (a module fixture), at smaller sizes than the page's where its cells take
seconds on CPU (``SIZES``: the Hessian-vector products on 6x5 instead of 30x40 matrices, 8 and 7 instead of 128
rows for the matrix-Jacobian products). Oracles: a NumPy Threefry-2x32
(threefry_oracle.py) for the key chain's draws; NumPy float64 closed forms for the logistic-regression model's
Jacobian and Hessian, the TD loss's semi-gradient, sum(tanh(X)**2)'s Hessian, the complex functions' real 2x2
Jacobians and Wirtinger derivatives, and the gradient-descent iterates; float64 finite differences for the closed
forms themselves and for the complex Cholesky example; Python loops over rows for the vmapped products; the page's
comments ("True", "False!", "6 - 8j", "rounds like round") and prose (the bilinear pairing identity, conjugation
for descent, the error suggesting vjp for a complex output). The page stores no outputs.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import threefry_oracle
from ported import fd_jacobian, load

import kiln


@pytest.fixture(scope="module")
def nb():
    return load("docs_cookbook_301")


SIZES = dict(shape=(6, 5), num_covecs=8, num_vecs=7)


@pytest.fixture(scope="module")
def cells(nb):
    """{label: (what the cell returns, the lines it printed)}, every cell run once in the page's order."""
    out = {}
    for label, cell in nb.CELLS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            size = nb.SIZED.get(label)
            out[label] = cell(**({size: SIZES[size]} if size else {})), buf.getvalue().splitlines()
    return out


def _f64(x):
    return np.asarray(x, np.float64)


def _close(got, want, rtol=1e-5, atol=1e-7, dtype=np.float32):
    got = np.asarray(got)
    assert got.dtype == dtype, got.dtype
    np.testing.assert_allclose(got.astype(np.complex128 if np.iscomplexobj(got) else np.float64), want, rtol=rtol,
                               atol=atol)


# ------------------------------------------------ NumPy oracles ------------------------------------------------

class Model:
    """The page's logistic regression in float64: predictions, their Jacobian and Hessian in W."""

    def __init__(self, nb, W, b):
        self.X, self.W, self.b = _f64(nb.inputs), _f64(W), float(b)

    def probs(self, W=None, b=None):
        W = self.W if W is None else W
        b = self.b if b is None else b
        return 1 / (1 + np.exp(-(self.X @ W + b)))

    def jac(self, W=None):
        p = self.probs(W)
        return (p * (1 - p))[:, None] * self.X, p * (1 - p)

    def hess(self):
        p = self.probs()
        return (p * (1 - p) * (1 - 2 * p))[:, None, None] * self.X[:, :, None] * self.X[:, None, :]


@pytest.fixture(scope="module")
def model(nb, cells):
    W, b = cells["setup"][0]
    return Model(nb, W, b)


def _tanh2_hvp(X, V):
    """sum(tanh(X)**2) has the diagonal Hessian 2 (1 - t^2)(1 - 3 t^2), t = tanh(X)."""
    t = np.tanh(_f64(X))
    return 2 * (1 - t ** 2) * (1 - 3 * t ** 2) * _f64(V)


def test_closed_forms_agree_with_finite_differences(model):
    np.testing.assert_allclose(fd_jacobian(model.probs, model.W), model.jac()[0], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(fd_jacobian(lambda b: model.probs(b=b), model.b), model.jac()[1], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(fd_jacobian(lambda w: model.jac(w)[0], model.W, 1e-5), model.hess(), rtol=1e-6,
                               atol=1e-10)
    X, V = np.linspace(-2, 2, 12).reshape(3, 4), np.cos(np.arange(12.0)).reshape(3, 4)
    fd = fd_jacobian(lambda x: 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), X)  # the Jacobian of grad sum(tanh^2)
    np.testing.assert_allclose(np.tensordot(fd, V, 2), _tanh2_hvp(X, V), rtol=1e-7, atol=1e-9)


# ------------------------------------------------ Setup and Jacobians ------------------------------------------

def test_setup_draws_from_the_key_chain(nb, cells):
    (W, b), _ = cells["setup"]
    key, W_key, b_key = threefry_oracle.split(np.array([0, 0], np.uint32), 3)
    np.testing.assert_allclose(_f64(W), threefry_oracle.normal(W_key, 3), rtol=1e-6)
    np.testing.assert_allclose(float(b), threefry_oracle.normal(b_key, 1)[0], rtol=1e-6)
    assert W.dtype == b.dtype == np.float32 and W.shape == (3,) and b.shape == ()
    # the jvp cell's tangent: the next split of the threaded key
    _, subkey = threefry_oracle.split(key)
    np.testing.assert_allclose(_f64(cells["jvp"][0][0]), threefry_oracle.normal(subkey, 3), rtol=1e-6)


def test_jacfwd_and_jacrev(cells, model):
    (J_fwd, J_rev), lines = cells["jacobians"]
    for J in (J_fwd, J_rev):  # "the same values (up to machine numerics)"
        assert J.shape == (4, 3)
        _close(J, model.jac()[0])
    assert lines[0] == "jacfwd result, with shape (4, 3)" and lines[5] == "jacrev result, with shape (4, 3)"
    assert "\n".join(lines[6:10]) == str(np.asarray(J_rev))
    J_dict, lines = cells["jacobians_dict"]
    assert list(J_dict) == ["W", "b"]
    _close(J_dict["W"], model.jac()[0])
    _close(J_dict["b"], model.jac()[1])
    assert lines[0] == "Jacobian from W to logits is" and lines[5] == "Jacobian from b to logits is"


def test_hessian(cells, model):
    H, lines = cells["hessian"]
    assert H.shape == (4, 3, 3) and lines[0] == "hessian, with shape (4, 3, 3)"
    _close(H, model.hess(), rtol=1e-4, atol=1e-7)


# ------------------------------------------------ Stopping gradients --------------------------------------------

def test_td_semi_gradient(cells):
    g, lines = cells["td_loss"]
    theta, s_prev, r, s = np.array([0.1, -0.1, 0.0]), np.array([1.0, 2.0, -1.0]), 1.0, np.array([2.0, 1.0, 0.0])
    target = r + theta @ s  # a constant to the derivative
    fd = fd_jacobian(lambda th: -0.5 * (target - th @ s_prev) ** 2, theta)
    _close(g, fd, rtol=1e-6)
    _close(g, [1.2, 2.4, -1.2], rtol=1e-6)
    assert lines == ["[ 1.2  2.4 -1.2]"]
    # "Without the stop_gradient, the gradient would include a second term flowing through target"
    full = fd_jacobian(lambda th: -0.5 * (r + th @ s - th @ s_prev) ** 2, theta)
    assert not np.allclose(full, fd)


def test_straight_through_round(nb, cells):
    (rounded, g), lines = cells["straight_through"]
    assert float(rounded) == 2.0 and float(g) == 1.0 and lines == ["2.0", "1.0"]
    xs = kiln.numpy.array([-1.6, 0.2, 2.5, 3.49])
    np.testing.assert_array_equal(nb.straight_through_round(xs), np.round(np.asarray(xs)))
    np.testing.assert_array_equal(kiln.vmap(kiln.grad(nb.straight_through_round))(xs), np.ones(4))


# ------------------------------------------------ JVPs, VJPs, linearize ------------------------------------------

def test_jvp(cells, model):
    (v, y, u), _ = cells["jvp"]
    _close(y, model.probs())
    _close(u, model.jac()[0] @ _f64(v), atol=1e-6)


def test_vjp(cells, model):
    (u, y, v), _ = cells["vjp"]
    assert isinstance(v, tuple) and len(v) == 1
    _close(y, model.probs())
    _close(v[0], model.jac()[0].T @ _f64(u), atol=1e-6)


def test_linearize(cells, model):
    y, lines = cells["linearize"]
    _close(y, model.probs())
    (v1, v2, t1, t2), lines2 = cells["linearize_apply"]
    J = model.jac()[0]
    _close(t1, J @ _f64(v1), atol=1e-6)
    _close(t2, J @ _f64(v2), atol=1e-6)
    assert lines == [str(np.asarray(y))] and lines2 == [str(np.asarray(t1)), str(np.asarray(t2))]


def test_linear_transpose_is_vjp(cells, model):
    (ours, ref, close), lines = cells["linear_transpose"]
    _close(ours, model.jac()[0].T @ np.ones(4), atol=1e-6)
    _close(ref, model.jac()[0].T @ np.ones(4), atol=1e-6)
    assert bool(close) and lines == ["True"]


def test_vgrad(cells):
    out, lines = cells["vgrad"]
    np.testing.assert_array_equal(out, np.full((2, 2), 6.0, np.float32))
    assert lines == ["[[6. 6.]", " [6. 6.]]"]


# ------------------------------------------------ Hessian-vector products ----------------------------------------

def test_hvp(cells):
    (X, V, ans1, ans2, close), lines = cells["hvp"]
    assert X.shape == V.shape == ans1.shape == ans2.shape == SIZES["shape"]
    expect = _tanh2_hvp(X, V)
    _close(ans1, expect, atol=1e-6)
    _close(ans2, expect, atol=1e-6)
    assert bool(close) and lines == ["True"]


def test_hvp_three_ways_and_the_full_hessian(cells):
    (X, V, *_), _ = cells["hvp"]
    fwdrev, (revfwd,), revrev, naive = cells["hvp_timing"][0]  # (reverse-over-forward: grad of the primals tuple)
    for ans in (fwdrev, revfwd, revrev, naive):
        _close(ans, _tanh2_hvp(X, V), atol=1e-6)
    assert cells["hvp_timing"][1] == ["Forward over reverse", "Reverse over forward", "Reverse over reverse",
                                      "Naive full Hessian materialization"]


# ------------------------------------------------ Composing with vmap -------------------------------------------

def test_matrix_jacobian_products(cells, model):
    (U, loop_vs, vmap_vs), lines = cells["mjp"]
    n = SIZES["num_covecs"]
    assert U.shape == (n, 4) and loop_vs.shape == vmap_vs.shape == (n, 3)
    np.testing.assert_allclose(_f64(U), threefry_oracle.normal(np.array([0, 0], np.uint32), 4 * n).reshape(n, 4),
                               rtol=1e-6)  # key = random.key(0) again
    expect = np.stack([model.jac()[0].T @ ui for ui in _f64(U)])  # one covector at a time
    _close(loop_vs, expect, atol=1e-6)
    _close(vmap_vs, expect, atol=1e-6)
    assert lines == ["Non-vmapped Matrix-Jacobian product", "", "Vmapped Matrix-Jacobian product"]


def test_jacobian_matrix_products(cells, model):
    (S, loop_vs, vmap_vs), _ = cells["jmp"]
    n = SIZES["num_vecs"]
    assert S.shape == (n, 3) and loop_vs.shape == vmap_vs.shape == (n, 4)
    expect = np.stack([model.jac()[0] @ si for si in _f64(S)])
    _close(loop_vs, expect, atol=1e-6)
    _close(vmap_vs, expect, atol=1e-6)


def test_our_jacrev_and_jacfwd(cells, model):
    for label in ("our_jacrev", "our_jacfwd"):
        builtin, ours = cells[label][0]
        _close(builtin, model.jac()[0])
        _close(ours, model.jac()[0])


def test_jit_of_a_vjp_through_python_control_flow(cells):
    (y, (g,)), lines = cells["control_flow"]
    _close(y, 4 * np.pi, rtol=1e-7)  # x = 4 takes the ValueError branch: pi * x
    _close(g, np.pi, rtol=1e-7)
    assert lines == ["(Array(3.1415927, dtype=float32, weak_type=True),)"]


# ------------------------------------------------ Complex numbers -----------------------------------------------

def _uv_jacobian(x, y):
    """u = x^2 + sin y, v = x y: the real 2x2 Jacobian [[du/dx, du/dy], [dv/dx, dv/dy]]."""
    return np.array([[2 * x, np.cos(y)], [y, x]])


def test_jvp_is_the_real_jacobian_in_complex_packaging(cells):
    (J, t_out, t_pair, close), lines = cells["complex_jvp"]
    Jr = _uv_jacobian(1.5, 0.5)
    np.testing.assert_allclose(fd_jacobian(lambda p: np.array([p[0] ** 2 + np.sin(p[1]), p[0] * p[1]]),
                                       np.array([1.5, 0.5])), Jr, rtol=1e-8)
    _close(J, Jr, rtol=1e-6)
    pair = Jr @ np.array([0.7, -0.3])
    _close(t_out, pair[0] + 1j * pair[1], dtype=np.complex64, rtol=1e-6)
    assert bool(close) and lines == ["True"]


def test_vjp_satisfies_the_bilinear_identity(cells):
    (w_out, bilinear, sesquilinear), lines = cells["complex_vjp"]
    Jr, w, t = _uv_jacobian(1.5, 0.5), -0.2 + 1.1j, 0.7 - 0.3j
    # JAX's VJP in coordinates: w -> conj(J^T conj(w)), the transpose for the pairing Re(w t)
    ct = Jr.T @ np.array([w.real, -w.imag])
    want = ct[0] - 1j * ct[1]
    _close(w_out, want, dtype=np.complex64, rtol=1e-6)
    jvp_t = (Jr @ [t.real, t.imag]) @ [1, 1j]
    np.testing.assert_allclose((w * jvp_t).real, (want * t).real, rtol=1e-12)  # the identity, in float64
    assert not np.isclose((np.conj(w) * jvp_t).real, (np.conj(want) * t).real)
    assert bool(bilinear) and not bool(sesquilinear) and lines == ["True", "False"]


def test_holomorphic_jvp_and_vjp_multiply_by_the_derivative(cells):
    (t_out, w_out, jvp_close, vjp_close), lines = cells["holomorphic_sin"]
    z, t, w = 1.5 + 0.5j, 0.7 - 0.3j, -0.2 + 1.1j
    _close(t_out, np.cos(z) * t, dtype=np.complex64, rtol=1e-6)
    _close(w_out, np.cos(z) * w, dtype=np.complex64, rtol=1e-6)
    assert bool(jvp_close) and bool(vjp_close) and lines == ["True", "True"]


def test_grad_of_a_real_function_is_the_conjugate_of_steepest_ascent(cells):
    g, lines = cells["grad_abs2"]
    assert g.dtype == np.complex64 and complex(g) == 6 - 8j and lines == ["(6-8j)"]


def test_descent_needs_the_conjugate(cells):
    (descended, grown), lines = cells["descent"]
    # with the conjugate, z <- 0.9 z; without it, x <- 0.9 x and y <- 1.1 y
    _close(descended, 25 * 0.81 ** 100, rtol=2e-5)
    _close(grown, 9 * 0.81 ** 100 + 16 * 1.21 ** 100, rtol=2e-5)
    assert lines == [str(np.asarray(descended)), str(np.asarray(grown))]


def test_wirtinger_derivatives(cells):
    (dfdz, dfdzbar, t_out, close), lines = cells["wirtinger"]
    Jr = _uv_jacobian(1.5, 0.5)
    fx, fy = Jr[0, 0] + 1j * Jr[1, 0], Jr[0, 1] + 1j * Jr[1, 1]
    _close(dfdz, 0.5 * (fx - 1j * fy), dtype=np.complex64, rtol=1e-6)
    _close(dfdzbar, 0.5 * (fx + 1j * fy), dtype=np.complex64, rtol=1e-6)
    assert bool(close) and lines == ["True"]


def test_holomorphic_grad(cells):
    (g, c), lines = cells["holomorphic_grad"]
    _close(g, np.cos(3 + 4j), dtype=np.complex64, rtol=1e-6)
    assert complex(g) == complex(c) and lines == [str(np.asarray(g))] * 2


def test_holomorphic_grad_of_a_non_holomorphic_function(cells):
    g, _ = cells["not_holomorphic"]
    # "the gradient of the function with the imaginary part of its output discarded": d Re(conj z) / dx = 1
    assert complex(g) == 1 and np.signbit(complex(g).imag) and g.dtype == np.complex64


def test_complex_output_without_holomorphic_suggests_vjp(nb):
    with pytest.raises(TypeError) as e:
        kiln.grad(kiln.numpy.sin)(3.0 + 4j)
    assert "complex64" in str(e.value) and "holomorphic=True" in str(e.value) and "kiln.vjp" in str(e.value)


def test_grad_through_complex_cholesky(nb, cells):
    G, _ = cells["cholesky"]
    assert G.shape == (3, 3) and G.dtype == np.complex64
    A = np.asarray(nb.A).astype(np.complex128)

    def f(X):  # the complex (holomorphic) sum, of the Cholesky factor of the Hermitian part (what cholesky reads)
        L = np.linalg.cholesky((X + X.conj().T) / 2)
        return np.sum((L - np.sin(L)) ** 2)

    # grad(f, holomorphic=True) is the VJP of 1: d Re f / dx - i d Re f / dy, entry by entry
    h = 1e-6
    expect = np.zeros((3, 3), np.complex128)
    for i in np.ndindex(3, 3):
        e = np.zeros((3, 3))
        e[i] = h
        expect[i] = ((f(A + e) - f(A - e)).real - 1j * (f(A + 1j * e) - f(A - 1j * e)).real) / (2 * h)
    np.testing.assert_allclose(G, expect, rtol=1e-5, atol=2e-5)
