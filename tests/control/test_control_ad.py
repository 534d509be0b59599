"""Differentiating control flow (the seed's table and beyond): cond/switch and scan in forward and
reverse mode, second order, fori_loop with static bounds in both modes, while_loop and traced-bound
fori_loop in forward mode (reverse mode raises an error naming scan/max_steps), and
``while_loop(..., max_steps=N)`` in reverse mode. Float64; finite differences are the oracle."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


@pytest.fixture(autouse=True)
def _x64():
    with kiln.config.override("enable_x64", True):
        yield


def fd_grad(f, args, argnum=0, eps=1e-6):
    """Central finite differences of scalar ``f`` with respect to ``args[argnum]`` (float64; ``f`` is
    jitted: one compilation serves every evaluation)."""
    f = kiln.jit(f)
    args = [np.array(a, np.float64) for a in args]
    x = args[argnum]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        plus[argnum][idx] += eps
        minus[argnum][idx] -= eps
        g[idx] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
    return g


def close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


# -- cond / switch -----------------------------------------------------------------------------------------

def f_cond(x, w):
    return lax.cond(x > 0, lambda x, w: knp.sin(x) * w ** 2, lambda x, w: knp.cos(x) * 3 + w, x, w)


@pytest.mark.parametrize("x", [0.7, -0.4])
def test_cond_forward_and_reverse_match_finite_differences(x):
    w = 1.3
    for argnum in (0, 1):
        expected = fd_grad(f_cond, (x, w), argnum)
        close(kiln.grad(f_cond, argnums=argnum)(x, w), expected)
        close(kiln.jit(kiln.grad(f_cond, argnums=argnum))(x, w), expected)
        tangents = (1.0, 0.0) if argnum == 0 else (0.0, 1.0)
        close(kiln.jvp(f_cond, (x, w), tangents)[1], expected)


def test_cond_only_the_taken_branch_matters():
    # The untaken branch has a huge (or no) derivative; the result is the taken branch's derivative.
    f = lambda x, p: lax.cond(p, lambda x: x * 2.0, lambda x: x ** 9 * 1e6 + 1.0, x)  # noqa: E731
    assert float(kiln.grad(f)(3.0, True)) == 2.0
    close(kiln.grad(f)(0.5, False), 9 * 0.5 ** 8 * 1e6)
    g = lambda x, p: lax.cond(p, lambda x: x * 2.0, lambda x: 1.0, x)  # noqa: E731
    assert float(kiln.grad(g)(3.0, False)) == 0.0 and float(kiln.jit(kiln.grad(g))(3.0, True)) == 2.0
    assert float(kiln.jvp(lambda x: g(x, False), (3.0,), (1.0,))[1]) == 0.0


def test_cond_branch_constants_are_not_saved_for_the_backward_pass():
    """A branch's x * 2 has the constant 2 broadcast to x's shape; the backward pass makes it again rather than
    take it from the forward cond as a residual (kiln kept a 1 MiB buffer alive across the two conds, where
    JAX's jaxpr multiplies by the scalar literal: nothing to save)."""
    x = np.random.default_rng(3).normal(size=(512, 512)).astype(np.float32)

    def f(x):
        return lax.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, x).sum()
    stats = kiln.jit(kiln.grad(f)).lower(x).compile().memory_analysis()
    assert stats.temp_size_in_bytes < 1024, stats.temp_size_in_bytes
    for sign in (1, -1):
        g = np.asarray(kiln.grad(f)(sign * np.abs(x)))
        np.testing.assert_array_equal(g, np.full_like(x, 2.0 if sign > 0 else 1.0))


def test_switch_forward_and_reverse():
    branches = [knp.sin, knp.cos, lambda x: x ** 3]
    f = lambda x, i: lax.switch(i, branches, x)  # noqa: E731
    jg = kiln.jit(kiln.grad(f))
    for i, expected in ((-1, np.cos(0.4)), (0, np.cos(0.4)), (1, -np.sin(0.4)), (2, 3 * 0.4 ** 2), (9, 0.48)):
        close(kiln.grad(f)(0.4, i), expected)
        close(jg(0.4, i), expected)
        close(kiln.jvp(lambda x: f(x, i), (0.4,), (1.0,))[1], expected)


def test_cond_pytree_and_second_order():
    def f(a, b):
        out = lax.cond(a > 0, lambda a, b: {"x": a * b ** 2, "y": (a,)}, lambda a, b: {"x": a - b, "y": (b,)}, a, b)
        return out["x"] + 3 * out["y"][0]

    for argnum in (0, 1):
        close(kiln.grad(f, argnums=argnum)(1.5, 2.0), fd_grad(f, (1.5, 2.0), argnum))
    close(kiln.grad(kiln.grad(f, argnums=1), argnums=1)(1.5, 2.0), 2 * 1.5)
    h = lambda x: lax.cond(x > 0, lambda x: knp.sin(x) * x, lambda x: x ** 3, x)  # noqa: E731
    close(kiln.grad(kiln.grad(h))(0.8), fd_grad(kiln.grad(h), (0.8,)))
    close(kiln.grad(kiln.grad(h))(-0.8), 6 * -0.8)


# -- scan --------------------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 3)) * 0.5
U = RNG.standard_normal((3, 2))
X = RNG.standard_normal((5, 2))
H0 = RNG.standard_normal(3)


def rnn_loss(W, U, h0, X):
    def body(carry, x):
        h, k = carry
        h = knp.tanh(W @ h + U @ x)
        return (h, k + 1), {"h": h, "s": knp.sum(h)}

    (h, _), ys = lax.scan(body, (h0, 0), X)
    return knp.sum(h ** 2) + knp.sum(ys["h"] * 0.3) + knp.sum(ys["s"])


def test_scan_reverse_mode_matches_finite_differences():
    grads = kiln.jit(kiln.grad(rnn_loss, argnums=(0, 1, 2, 3)))(W, U, H0, X)
    for argnum in range(4):
        expected = fd_grad(rnn_loss, (W, U, H0, X), argnum)
        close(grads[argnum], expected, rtol=1e-5, atol=1e-7)
    close(kiln.grad(rnn_loss, argnums=2)(W, U, H0, X), fd_grad(rnn_loss, (W, U, H0, X), 2), rtol=1e-5, atol=1e-7)


def test_scan_forward_mode_and_vjp_jvp_identity():
    def f(W, X):
        return lax.scan(lambda h, x: (knp.tanh(W @ h + U @ x), h * 2), H0, X)

    v = (RNG.standard_normal((3, 3)), RNG.standard_normal((5, 2)))
    _, (t_carry, t_ys) = kiln.jvp(f, (W, X), v)
    _, pull = kiln.vjp(f, W, X)
    u = (RNG.standard_normal(3), RNG.standard_normal((5, 3)))
    ct_W, ct_X = pull(u)
    lhs = np.sum(u[0] * np.asarray(t_carry)) + np.sum(u[1] * np.asarray(t_ys))  # <u, J v>
    rhs = np.sum(np.asarray(ct_W) * v[0]) + np.sum(np.asarray(ct_X) * v[1])  # <J^T u, v>
    close(lhs, rhs, rtol=1e-10)
    # (grad, i.e. the vjp, is checked against finite differences above, so this pins down the jvp too.)
    # jacfwd and jacrev agree (jacfwd batches the scan's tangents; the primal stays unbatched).
    close(kiln.jit(kiln.jacfwd(f))(W, X)[1], kiln.jit(kiln.jacrev(f))(W, X)[1], rtol=1e-10)


@pytest.mark.parametrize("reverse,unroll", [(False, 1), (True, 1), (False, 2), (True, 3)])
def test_scan_reverse_and_unroll_gradients(reverse, unroll):
    xs = np.linspace(-1, 1, 7)

    def f(w, xs):
        c, ys = lax.scan(lambda c, x: (knp.sin(c) * w + x, c * x), 0.3, xs, reverse=reverse, unroll=unroll)
        return c + knp.sum(ys ** 2)

    for argnum in (0, 1):
        close(kiln.grad(f, argnums=argnum)(0.8, xs), fd_grad(f, (0.8, xs), argnum), rtol=1e-5, atol=1e-7)


def test_second_order_through_scan_and_cond():
    xs = np.array([0.5, -1.0, 0.3, 2.0, -0.2])

    def f(w):
        def body(c, x):
            c = lax.cond(x > 0, lambda c: knp.sin(c * w) + x, lambda c: c * w ** 2, c)
            return c, c
        c, ys = lax.scan(body, 0.5, xs)
        return c + knp.sum(ys)

    close(kiln.grad(f)(0.7), fd_grad(f, (0.7,)), rtol=1e-6)
    close(kiln.grad(kiln.grad(f))(0.7), fd_grad(kiln.grad(f), (0.7,)), rtol=1e-5)
    close(kiln.jit(kiln.grad(kiln.grad(f)))(0.7), fd_grad(kiln.grad(f), (0.7,)), rtol=1e-5)
    close(kiln.hessian(f)(0.7), fd_grad(kiln.grad(f), (0.7,)), rtol=1e-5)


def test_grad_of_nested_scans_and_map():
    def f(w):
        return lax.scan(lambda c, row: (lax.scan(lambda d, y: (d * w + y, None), c, row)[0], c),
                        1.0, np.ones((3, 4)))[0]

    close(kiln.grad(f)(0.9), fd_grad(f, (0.9,)), rtol=1e-6)
    g = lambda x: lax.map(lambda y: knp.sin(y) * y, x, batch_size=2).sum()  # noqa: E731
    x = np.arange(4.0)
    close(kiln.grad(g)(x), np.sin(x) + x * np.cos(x))


# -- fori_loop / while_loop --------------------------------------------------------------------------------

def f_fori(x):
    return lax.fori_loop(0, 5, lambda i, c: knp.sin(c) * x + i, 1.0)


def test_fori_loop_static_bounds_both_modes():
    expected = fd_grad(f_fori, (1.3,))
    close(kiln.grad(f_fori)(1.3), expected)
    close(kiln.jit(kiln.grad(f_fori))(1.3), expected)
    close(kiln.jvp(f_fori, (1.3,), (1.0,))[1], expected)


def wl(x, n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x + 0.1), (0, 1.0))[1]


def fori_traced(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * x + 0.1, 1.0)


def test_while_and_traced_fori_forward_mode():
    for fn in (wl, fori_traced):
        expected = fd_grad(lambda x: fn(x, 4), (1.3,))
        close(kiln.jvp(lambda x: fn(x, 4), (1.3,), (1.0,))[1], expected)
        jitted = kiln.jit(lambda x, n: kiln.jvp(lambda x: fn(x, n), (x,), (1.0,)))
        close(jitted(1.3, 4)[1], expected)
        close(kiln.jacfwd(fn)(1.3, 4), expected)


def test_while_loop_cond_only_dependence_has_zero_derivative():
    # The bound depends on x only through cond_fun: piecewise constant, no reverse pass through the loop.
    f = lambda x: lax.while_loop(lambda c: c < x, lambda c: c + 1.0, 0.0) * x  # noqa: E731
    assert float(kiln.grad(f)(2.5)) == 3.0


def test_reverse_mode_of_unbounded_loops_raises():
    match = r"reverse-mode differentiation.*while_loop.*Use kiln\.lax\.scan.*max_steps"
    with pytest.raises(TypeError, match=match):
        kiln.grad(lambda x: wl(x, 4))(1.3)
    with pytest.raises(TypeError, match=match):
        kiln.jit(kiln.grad(fori_traced))(1.3, 4)
    with pytest.raises(TypeError, match=match):
        kiln.vjp(lambda x: wl(x, 4), 1.3)
    # The same functions still work in forward mode, and reverse mode works with max_steps.
    assert np.isfinite(float(kiln.jvp(lambda x: wl(x, 4), (1.3,), (1.0,))[1]))


def test_while_loop_max_steps_reverse_mode():
    def bounded(x, n, steps=10):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, knp.sin(c[1]) * x + 0.1), (0, 1.0),
                              max_steps=steps)[1]

    def unbounded(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, knp.sin(c[1]) * x + 0.1), (0, 1.0))[1]

    for n in (0, 3, 6):
        close(bounded(1.3, n), unbounded(1.3, n), rtol=1e-12)  # the same values when N is large enough
        expected = fd_grad(lambda x: unbounded(x, n), (1.3,))
        close(kiln.grad(bounded)(1.3, n), expected)
        close(kiln.jit(kiln.grad(bounded))(1.3, n), expected)
    # fori_loop with traced bounds takes the same keyword.
    g = kiln.jit(kiln.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0, max_steps=8)))
    close(g(1.3, 4), 4 * 1.3 ** 3)
