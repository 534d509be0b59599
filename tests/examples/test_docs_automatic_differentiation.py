"""JAX's docs page docs/automatic-differentiation.md ("Automatic differentiation": grad, higher derivatives, argnums,
pytrees, value_and_grad, checking against finite differences, check_grads), ported to kiln by changing imports
(tests/examples/jax_ported/docs_automatic_differentiation.py), checked against oracles that do not involve JAX:
float64 central differences of NumPy functions for every derivative (of tanh; of the logistic regression's loss, in
NumPy on the page's data; of the closed forms of the higher derivatives, themselves checked step by step), the
page's own values (4, 10, 6, 0 for the polynomial at 1), a NumPy Threefry (threefry_oracle.py) for the draws of W,
b and the random direction, and NumPy's printing of the expected values for the printed lines.

The older notebook docs/notebooks/autodiff_cookbook.md has the same first cells (tests/examples/
test_autodiff_cookbook.py); here they are checked for this page's claims: grad is a function that stacks into
higher derivatives, grad(f, i) is the partial derivative in argument i, dicts of parameters give dicts of
gradients, value_and_grad gives the value of the function, the float32 finite differences of the page agree with
autodiff to within their rounding, and check_grads passes the page's loss (and fails a function whose first or
second derivative is wrong).
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
import threefry_oracle
from ported import fd_jacobian, load

import kiln
import kiln.numpy as jnp


@pytest.fixture(scope="module")
def page():
    return load("docs_automatic_differentiation")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _shown(x) -> str:
    """How JAX shows (repr) an Array of these float32 values: NumPy's repr, renamed."""
    return repr(np.asarray(x, np.float32)).replace("array(", "Array(")


def _text(x) -> str:
    """How JAX prints (str) an Array of these float32 values: NumPy's str."""
    return str(np.asarray(x, np.float32))


# ---------------------------------------------- NumPy oracles ------------------------------------------------------

def _np_data(page):
    return np.asarray(page.inputs, np.float64), np.asarray(page.targets, np.float64)


def _np_loss(page, W, b):
    """The page's negative log-likelihood in float64 NumPy."""
    inputs, targets = _np_data(page)
    preds = 0.5 * (np.tanh((inputs @ np.asarray(W, np.float64) + b) / 2) + 1)
    return -np.sum(np.log(preds * targets + (1 - preds) * (1 - targets)))


def _np_grads(page, W, b):
    """(dloss/dW, dloss/db) by float64 central differences."""
    W, b = np.asarray(W, np.float64), float(b)
    return (fd_jacobian(lambda w: _np_loss(page, w, b), W),
            float(fd_jacobian(lambda v: _np_loss(page, W, v), np.float64(b))))


def _draws():
    """key(0) -> split 3 for W, b; split again for the random direction: the NumPy Threefry's draws."""
    key, kW, kb = threefry_oracle.split(np.zeros(2, np.uint32), 3)
    key2, kv = threefry_oracle.split(key)
    return key, threefry_oracle.normal(kW, 3), threefry_oracle.normal(kb, 1)[0], key2, threefry_oracle.normal(kv, 3)


def _sech2(x):
    return 1 / np.cosh(x) ** 2


def _d1_tanh(x):
    return _sech2(x)


def _d2_tanh(x):
    return -2 * np.tanh(x) * _sech2(x)


def _d3_tanh(x):
    return 4 * np.tanh(x) ** 2 * _sech2(x) - 2 * _sech2(x) ** 2


def test_closed_forms_of_tanh_derivatives_against_central_differences():
    """The oracle of the tanh cells, checked: each closed form is the central difference of the one before it."""
    xs = np.array([-1.5, 0.3, 2.0])
    for fn, d in ((np.tanh, _d1_tanh), (_d1_tanh, _d2_tanh), (_d2_tanh, _d3_tanh)):
        np.testing.assert_allclose([fd_jacobian(fn, np.float64(x)) for x in xs], d(xs), rtol=1e-7, atol=1e-9)


# ---------------------------------------------- 1. Taking gradients with `jax.grad` ------------------------------

def test_grad_of_tanh_is_a_function(page):
    grad_tanh, out = _run(page.grad_tanh_block)
    assert callable(grad_tanh) and not isinstance(grad_tanh, kiln.Array)  # "takes a function and returns a function"
    np.testing.assert_allclose(float(out), fd_jacobian(np.tanh, np.float64(2.0)), rtol=1e-6)
    assert out == f"{_text(grad_tanh(2.0))}\n"  # the float32 value, as NumPy prints it
    for x in (-1.5, 0.0, 0.3):
        d = grad_tanh(x)
        assert (d.dtype, d.shape, d.weak_type) == (np.float32, (), True)
        np.testing.assert_allclose(float(d), fd_jacobian(np.tanh, np.float64(x)), rtol=1e-6, atol=1e-7)


def test_grad_of_grad_of_tanh(page):
    res, out = _run(page.higher_order_tanh_block)
    assert res is None
    second, third = (float(v) for v in out.split())
    np.testing.assert_allclose([second, third], [_d2_tanh(2.0), _d3_tanh(2.0)], rtol=1e-5)
    # as many times as you like: at other points, and the closed forms' central differences
    g2, g3 = kiln.grad(kiln.grad(jnp.tanh)), kiln.grad(kiln.grad(kiln.grad(jnp.tanh)))
    for x in (-1.5, 0.3):
        np.testing.assert_allclose(float(g2(x)), fd_jacobian(_d1_tanh, np.float64(x)), rtol=1e-5)
        np.testing.assert_allclose(float(g3(x)), fd_jacobian(_d2_tanh, np.float64(x)), rtol=1e-5)


def test_polynomial_derivatives(page):
    res, out = _run(page.polynomial_derivatives_block)
    assert res is None
    assert out.split() == ["4.0", "10.0", "6.0", "0.0"]  # the page's f'(1), f''(1), f'''(1), f''''(1)

    def f(x):
        return x ** 3 + 2 * x ** 2 - 3 * x + 1
    closed = [lambda x: 3 * x ** 2 + 4 * x - 3, lambda x: 6 * x + 4, lambda x: 6.0 + 0 * x, lambda x: 0.0 * x]
    for lower, upper in zip([f] + closed[:3], closed):  # the page's formulas, by central differences
        for x in (-2.0, 0.5, 1.0):
            np.testing.assert_allclose(fd_jacobian(lower, np.float64(x)), upper(x), atol=1e-6)
    for fn, want in zip((page.dfdx, page.d2fdx, page.d3fdx, page.d4fdx), closed):
        for x in (-2.0, 0.5, 3.0):
            np.testing.assert_allclose(float(fn(x)), want(x), rtol=1e-6)
    np.testing.assert_allclose(float(page.f(1.0)), f(1.0))


# ---------------------------------------------- 2. Linear logistic regression ------------------------------------

def test_the_draws_of_W_and_b(page):
    key, W, b = page.init_block(page.key)
    _, W_np, b_np, _, _ = _draws()
    assert (W.dtype, W.shape, b.dtype, b.shape) == (np.float32, (3,), np.float32, ())
    np.testing.assert_allclose(np.asarray(W, np.float64), W_np, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(float(b), b_np, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(kiln.random.key_data(key), threefry_oracle.split(np.zeros(2, np.uint32), 3)[0])
    assert page.inputs.dtype == np.float32 and page.targets.dtype == np.bool_ and page.inputs.shape == (4, 3)


@pytest.fixture(scope="module")
def params(page):
    _, W, b = page.init_block(page.key)
    return W, b


def test_argnums(page, params):
    W, b = params
    (W_grad, b_grad), out = _run(page.argnums_block, W, b)
    fd_W, fd_b = _np_grads(page, W, b)
    assert (W_grad.dtype, W_grad.shape, b_grad.dtype, b_grad.shape) == (np.float32, (3,), np.float32, ())
    np.testing.assert_allclose(np.asarray(W_grad, np.float64), fd_W, rtol=1e-5)
    np.testing.assert_allclose(float(b_grad), fd_b, rtol=1e-5)
    # argnums=0, the default, and the tuple (0, 1) print the same W_grad; 1 and the tuple the same b_grad
    lines = out.splitlines()
    assert lines == [f"W_grad={_shown(W_grad)}"] * 2 + [f"b_grad={_shown(b_grad)}", f"W_grad={_shown(W_grad)}",
                                                         f"b_grad={_shown(b_grad)}"]
    # grad(f, i) is the partial derivative in argument i, at another point too
    W2, b2 = np.array([0.5, -1.0, 2.0], np.float32), np.float32(-0.25)
    fd_W, fd_b = _np_grads(page, W2, b2)
    np.testing.assert_allclose(np.asarray(kiln.grad(page.loss, 0)(W2, b2), np.float64), fd_W, rtol=1e-5)
    np.testing.assert_allclose(float(kiln.grad(page.loss, 1)(W2, b2)), fd_b, rtol=1e-5)


def test_argnums_errors(page, params):
    """An argnums past the arguments, or a non-float argument, is an error that says so."""
    W, b = params
    with pytest.raises(TypeError, match="argnums") as info:
        kiln.grad(page.loss, 2)(W, b)
    assert "2" in str(info.value)
    with pytest.raises(TypeError, match="(?i)int32.*float|float.*int32"):
        kiln.grad(page.loss, 1)(W, 1)


# ---------------------------------------------- 3. Nested lists, tuples, and dicts -------------------------------

def test_grad_of_a_dict_of_params(page, params):
    W, b = params
    g, out = _run(page.loss2_block, W, b)
    fd_W, fd_b = _np_grads(page, W, b)
    assert type(g) is dict and list(g) == ["W", "b"]
    np.testing.assert_allclose(np.asarray(g["W"], np.float64), fd_W, rtol=1e-5)
    np.testing.assert_allclose(float(g["b"]), fd_b, rtol=1e-5)
    assert out == f"{{'W': {_shown(g['W'])}, 'b': {_shown(g['b'])}}}\n"
    # lists and nested tuples too: the same numbers in the same containers
    g2 = kiln.grad(lambda p: page.loss(p[0], p[1][0]))([W, (b,)])
    assert type(g2) is list and type(g2[1]) is tuple
    np.testing.assert_allclose(np.asarray(g2[0], np.float64), fd_W, rtol=1e-5)
    np.testing.assert_allclose(float(g2[1][0]), fd_b, rtol=1e-5)


# ---------------------------------------------- 4. `jax.value_and_grad` ------------------------------------------

def test_value_and_grad(page, params):
    W, b = params
    (loss_value, (W_grad, b_grad)), out = _run(page.value_and_grad_block, W, b)
    np.testing.assert_allclose(float(loss_value), _np_loss(page, W, b), rtol=1e-6)
    assert out == f"loss value {_text(loss_value)}\n" * 2  # the value is loss(W, b)'s
    fd_W, fd_b = _np_grads(page, W, b)
    np.testing.assert_allclose(np.asarray(W_grad, np.float64), fd_W, rtol=1e-5)
    np.testing.assert_allclose(float(b_grad), fd_b, rtol=1e-5)


# ---------------------------------------------- 5. Checking against numerical differences -------------------------

def test_numerical_differences(page, params):
    W, b = params
    k0, *_ = page.init_block(page.key)
    (key, unitvec, b_num, W_num), out = _run(page.numerical_differences_block, W, b, k0)
    _, _, _, key_np, vec = _draws()
    np.testing.assert_array_equal(kiln.random.key_data(key), key_np)
    np.testing.assert_allclose(np.asarray(unitvec, np.float64), vec / np.linalg.norm(vec), rtol=1e-5, atol=1e-6)
    fd_W, fd_b = _np_grads(page, W, b)
    fd_dir = float(fd_W @ np.asarray(unitvec, np.float64))
    printed = dict(ln.rsplit(" ", 1) for ln in out.splitlines())
    assert list(printed) == ["b_grad_numerical", "b_grad_autodiff", "W_dirderiv_numerical", "W_dirderiv_autodiff"]
    assert printed["b_grad_numerical"] == _text(b_num) and printed["W_dirderiv_numerical"] == _text(W_num)
    # autodiff: the derivative to float32 rounding
    np.testing.assert_allclose(float(printed["b_grad_autodiff"]), fd_b, rtol=1e-5)
    np.testing.assert_allclose(float(printed["W_dirderiv_autodiff"]), fd_dir, rtol=1e-5)
    # the page's float32 differences with eps=1e-4: the loss's rounding (|loss| ~ 3, ulp 2.4e-7) over eps, at most
    # a few 1e-3 off; the same differences in float64 agree with the derivative to O(eps^2)
    assert abs(float(b_num) - fd_b) < 5e-3 and abs(float(W_num) - fd_dir) < 5e-3
    eps, W64, b64, u64 = 1e-4, np.asarray(W, np.float64), float(b), np.asarray(unitvec, np.float64)
    np.testing.assert_allclose((_np_loss(page, W64, b64 + eps / 2) - _np_loss(page, W64, b64 - eps / 2)) / eps,
                               fd_b, rtol=1e-7)
    np.testing.assert_allclose((_np_loss(page, W64 + eps / 2 * u64, b64) - _np_loss(page, W64 - eps / 2 * u64, b64))
                               / eps, fd_dir, rtol=1e-7)


def test_check_grads_passes_the_pages_loss(page, params):
    W, b = params
    assert page.check_grads_block(W, b) is None  # "check up to 2nd order derivatives": no error


def test_check_grads_catches_wrong_first_and_second_derivatives():
    """check_grads compares with numerical differences: a wrong first derivative fails order=1; a first derivative
    right to first order but not differentiable in x (its second derivative 0) passes order=1 and fails order=2."""
    from kiln.test_util import check_grads

    @kiln.custom_jvp
    def wrong(x):
        return jnp.sin(x)
    wrong.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), 2.0 * jnp.cos(primals[0]) * tangents[0]))

    @kiln.custom_jvp
    def first_order_only(x):
        return jnp.sin(x)
    first_order_only.defjvp(lambda primals, tangents: (
        jnp.sin(primals[0]), kiln.lax.stop_gradient(jnp.cos(primals[0])) * tangents[0]))

    x = (jnp.float32(0.7),)
    with pytest.raises(AssertionError, match="(?i)not equal|mismatch"):
        check_grads(wrong, x, order=1)
    check_grads(first_order_only, x, order=1)
    with pytest.raises(AssertionError, match="(?i)not equal|mismatch"):
        check_grads(first_order_only, x, order=2)


def test_run_is_the_pages_order(page):
    """The port's `run`: the cells in the page's order, the key threaded through, every printed line."""
    res, out = _run(page.run)
    assert set(res) == {"grad_tanh", "higher_order_tanh", "polynomial_derivatives", "init", "argnums", "loss2",
                        "value_and_grad", "numerical_differences", "check_grads"}
    lines = out.splitlines()
    assert len(lines) == 3 + 4 + 5 + 1 + 2 + 4
    assert lines[3:7] == ["4.0", "10.0", "6.0", "0.0"]
    assert re.fullmatch(r"W_grad=Array\(\[.*\], dtype=float32\)", lines[7])
