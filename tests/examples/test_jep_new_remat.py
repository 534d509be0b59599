"""JAX's design document docs/jep/11830-new-remat-checkpoint.md (the new ``jax.checkpoint``), ported to kiln by
changing imports (tests/examples/jax_ported/jep_new_remat.py), checked against oracles that do not involve JAX.

The page shows no outputs; what it claims is checked instead: ``checkpoint_dots`` saves only the matrix products
(the residual listing, and the backward pass recomputes the sin and cos the plain function saves); a constant that
does not depend on the argument is recomputed, not saved (nothing is saved, where the function without checkpoint
saves it); ``concrete=`` is gone and ``jax_new_checkpoint`` too (the exceptions, and messages that say what to do);
``static_argnums`` replaces ``concrete``, and with ``ensure_compile_time_eval`` jax.numpy on a static argument runs
while tracing (nothing of it in the jaxpr). The values and gradients are NumPy float64 closed forms, vouched for by
central differences. tests/examples/test_autodiff_remat.py covers the other policies and the tutorial's listings;
test_jep_new_remat_against_jax.py compares the cells with JAX.
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from ported import count_primitives, load

import kiln
import kiln.numpy as jnp

RNG = np.random.default_rng(11830)
N = 10_000  # the port's constant: jnp.arange(10_000)


@pytest.fixture(scope="module")
def nb():
    return load("jep_new_remat")


def _printed(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue()


def _listing(text):
    """A print_saved_residuals listing as (what, function) pairs: ('f32[4] output of dot_general', 'apply_layer')
    or ('f32[4] from the argument x', None)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.*?) from \S+?:\d+(?::\d+)? \((\S+)\)$", line)
        rows.append((m[1], m[2]) if m else (line, None))
    return rows


def _fd_grad(fun, x, h=1e-6):
    """Central differences of a scalar float64 function, entry by entry."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        grad[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return grad


# ------------------------------------------------ the removed option ------------------------------------------------

def test_new_checkpoint_option_is_gone(nb):
    err = nb.new_checkpoint_option_cell()
    # "As of jax==0.3.17 the jax_new_checkpoint config option is no longer available": JAX raises AttributeError
    # (kiln's is a ValueError too, as its other configuration errors)
    assert isinstance(err, AttributeError) and isinstance(err, ValueError)
    assert "unknown flag 'jax_new_checkpoint'" in str(err) and "known flags: " in str(err)


# ------------------------------------------------ policies ------------------------------------------------

def _np_predict(params, x, ct):
    """predict = W_L sin(W_{L-1} ... sin(W_1 x)) and its vjp with cotangent ct: (y, ([dW...], dx))."""
    *Ws, last = [np.asarray(W, np.float64) for W in params]
    hs, zs = [np.asarray(x, np.float64)], []
    for W in Ws:
        zs.append(W @ hs[-1])
        hs.append(np.sin(zs[-1]))
    y = last @ hs[-1]
    ct = np.asarray(ct, np.float64)
    grads, d = [np.outer(ct, hs[-1])], last.T @ ct
    for W, z, h in zip(Ws[::-1], zs[::-1], hs[-2::-1]):
        dz = d * np.cos(z)
        grads.append(np.outer(dz, h))
        d = W.T @ dz
    return y, (grads[::-1], d)


def _params():
    return [RNG.normal(size=s).astype(np.float32) / 2 for s in ((5, 4), (6, 5), (3, 6))]


def test_numpy_predict_agrees_with_finite_differences():
    params, x, ct = _params(), RNG.normal(size=4), RNG.normal(size=3)
    _, (dWs, dx) = _np_predict(params, x, ct)
    for i in range(3):
        fd = _fd_grad(lambda w: _np_predict(params[:i] + [w] + params[i + 1:], x, ct)[0] @ ct, params[i])
        np.testing.assert_allclose(dWs[i], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, _fd_grad(lambda v: _np_predict(params, v, ct)[0] @ ct, x), rtol=1e-6, atol=1e-8)


def test_checkpoint_dots_saves_only_the_matrix_products(nb):
    params, x = _params(), RNG.normal(size=4).astype(np.float32)
    rows = _listing(_printed(nb.predict_residuals_cell, params, x))
    args = [(f"f32[{s}] from the argument {n}", None) for s, n in (("5,4", "params[0]"), ("6,5", "params[1]"),
                                                                    ("3,6", "params[2]"), ("4", "x"))]
    # the two inner layers' dots (the last dot's value is not needed backward); no sin, no cos
    assert rows == args + [("f32[5] output of dot_general", "apply_layer"), ("f32[6] output of dot_general",
                                                                               "apply_layer")]
    assert kiln.checkpoint_policies.checkpoint_dots is kiln.checkpoint_policies.dots_saveable  # JAX's alias


def test_checkpoint_dots_recomputes_sin_and_cos(nb):
    """"The Jacobian coefficient values from cos applications, and the values of sin applications needed to compute
    them, are not saved from the forward pass and are instead recomputed during the backward pass"."""
    params, x, ct = _params(), RNG.normal(size=4).astype(np.float32), RNG.normal(size=3).astype(np.float32)
    y, pullback = kiln.vjp(nb.predict, params, x)
    back = count_primitives(kiln.make_jaxpr(pullback)(ct).jaxpr)
    assert (back["sin"], back["cos"], back["dot_general"]) == (2, 2, 6)
    forward = count_primitives(kiln.make_jaxpr(lambda p, v: kiln.vjp(nb.predict, p, v)[0])(params, x).jaxpr)
    assert (forward["sin"], forward["cos"], forward["dot_general"]) == (2, 0, 3)
    plain = nb.predict.__wrapped__  # the function without checkpoint: its backward pass only multiplies and dots
    y_plain, pullback_plain = kiln.vjp(plain, params, x)
    back = count_primitives(kiln.make_jaxpr(pullback_plain)(ct).jaxpr)
    assert (back["sin"], back["cos"], back["dot_general"]) == (0, 0, 6)
    # the numbers are the same as without checkpoint, and NumPy's
    want_y, (want_dWs, want_dx) = _np_predict(params, x, ct)
    for got_y, got in ((y, pullback(ct)), (y_plain, pullback_plain(ct))):
        np.testing.assert_allclose(got_y, want_y, rtol=2e-5, atol=2e-6)
        (dWs, dx) = got
        assert [d.dtype for d in dWs] == [np.float32] * 3 and dx.dtype == np.float32
        for d, w in zip([*dWs, dx], [*want_dWs, want_dx]):
            np.testing.assert_allclose(d, w, rtol=2e-5, atol=2e-6)


# ------------------------------------------------ constants ------------------------------------------------

def _sum_sin(n: int) -> float:
    """sum_{k<n} sin(k), in closed form."""
    return np.sin(n / 2) * np.sin((n - 1) / 2) / np.sin(0.5)


def test_constant_is_recomputed_not_saved(nb):
    np.testing.assert_allclose(_sum_sin(N), np.sum(np.sin(np.arange(N, dtype=np.float64))), rtol=1e-9)
    # nothing is saved: `a` is recomputed, and x is not needed (a * x is linear in x)
    assert _printed(nb.constant_residuals_cell, np.float32(3.0)) == ""
    # the old behaviour, which the function without checkpoint still has: `a` is saved
    def plain(x):
        return nb.some_function(jnp.arange(N)) * x
    assert _listing(_printed(nb.print_saved_residuals, plain, np.float32(3.0))) == [
        (f"f32[{N}] output of sin", "some_function")]
    loss = lambda x: jnp.sum(nb.f(x))  # noqa: E731
    counts = count_primitives(kiln.make_jaxpr(kiln.grad(loss))(3.0).jaxpr)
    assert (counts["iota"], counts["sin"]) == (2, 2)  # made and used forward, made again backward
    assert count_primitives(kiln.make_jaxpr(kiln.grad(lambda x: jnp.sum(plain(x))))(3.0).jaxpr)["sin"] == 1
    grad = kiln.grad(loss)(3.0)
    assert grad.dtype == np.float32 and grad.shape == ()
    np.testing.assert_allclose(grad, _sum_sin(N), rtol=1e-4, atol=1e-4)
    y = nb.f(np.float32(3.0))
    np.testing.assert_allclose(y, 3.0 * np.sin(np.arange(N, dtype=np.float64)), rtol=1e-5, atol=1e-5)


# ------------------------------------------------ concrete=True and static_argnums ----------------------------------

def test_concrete_option_is_refused(nb):
    err = nb.concrete_cell()
    assert isinstance(err, NotImplementedError)  # as JAX 0.10.2
    msg = str(err)
    assert "`concrete` option was removed" in msg and "static_argnums" in msg and "ensure_compile_time_eval" in msg


def test_static_argnums_replaces_concrete(nb):
    xs = np.array([-1.3, 0.2, 2.1], np.float32)
    for x in xs:
        np.testing.assert_allclose(nb.foo(x, True), np.sin(np.float64(x)), rtol=1e-6)
        np.testing.assert_allclose(nb.foo(x, False), np.cos(np.float64(x)), rtol=1e-6)
        np.testing.assert_allclose(kiln.grad(nb.foo)(x, True), np.cos(np.float64(x)), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(kiln.grad(nb.foo)(x, False), -np.sin(np.float64(x)), rtol=1e-6, atol=1e-7)
    # under vmap the static flag stays a Python bool; only x is saved
    np.testing.assert_allclose(kiln.vmap(kiln.grad(nb.foo), in_axes=(0, None))(xs, True), np.cos(xs), rtol=1e-6)
    assert _listing(_printed(nb.print_saved_residuals, lambda x: nb.foo(x, True), np.float32(0.5))) == [
        ("f32[] from the argument x", None)]


def test_static_argnums_with_ensure_compile_time_eval(nb):
    # scaled(x, n) = x * sum(range(n)) when that sum exceeds 3, else -x
    for n, scale in ((4, 6.0), (5, 10.0), (3, -1.0), (2, -1.0)):
        np.testing.assert_allclose(nb.scaled(np.float32(1.5), n), 1.5 * scale)
        np.testing.assert_allclose(kiln.grad(nb.scaled)(1.5, n), scale)
    # the sum was computed while tracing: no iota, no reduction in the program, the constant 6 folded in
    counts = count_primitives(kiln.make_jaxpr(lambda x: nb.scaled(x, 4))(1.5).jaxpr)
    assert counts["iota"] == counts["reduce_sum"] == 0 and counts["mul"] == 1
