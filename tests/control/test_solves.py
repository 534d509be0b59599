"""kiln.lax.custom_linear_solve and kiln.lax.custom_root: values, implicit derivatives (against
numpy.linalg.solve's analytic derivatives and closed forms), iterative solvers with loops, vmap, pytrees,
has_aux, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import lax

RNG = np.random.default_rng(0)
M = RNG.standard_normal((4, 4))
A = (M @ M.T + 4 * np.eye(4)).astype(np.float32)  # symmetric positive definite
G = (RNG.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)  # general
B = RNG.standard_normal(4).astype(np.float32)


def _close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), b, rtol=tol, atol=tol)


def cg(matvec, b):
    """Conjugate gradients: a fixed number of steps in a fori_loop (not differentiable in reverse mode)."""
    def body(i, state):
        x, r, p, rs = state
        ap = matvec(p)
        pap = jnp.vdot(p, ap)
        alpha = jnp.where(pap > 0, rs / jnp.where(pap > 0, pap, 1), 0)  # 0 once converged exactly
        x, r = x + alpha * p, r - alpha * ap
        rs_new = jnp.vdot(r, r)
        beta = jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1), 0)
        return x, r, r + beta * p, rs_new
    return lax.fori_loop(0, 8, body, (jnp.zeros_like(b), b, b, jnp.vdot(b, b)))[0]


def dense_solve(m, b):
    return lax.custom_linear_solve(lambda x: m @ x, b, lambda mv, r: jnp.linalg.solve(m, r),
                                   lambda vm, r: jnp.linalg.solve(m.T, r))


def cg_solve(m, b):
    return lax.custom_linear_solve(lambda x: m @ x, b, cg, symmetric=True)


def _loss_grads(m, b):
    """d/dm, d/db of sum(sin(x)) with x = m^-1 b, in closed form: w = m^-T cos(x); db = w, dm = -w x^T."""
    x = np.linalg.solve(m.astype(np.float64), b)
    w = np.linalg.solve(m.T.astype(np.float64), np.cos(x))
    return -np.outer(w, x), w


@pytest.mark.parametrize("solve,m", [(dense_solve, G), (cg_solve, A)])
def test_values_and_gradients(solve, m):
    x = solve(m, B)
    _close(x, np.linalg.solve(m, B))
    _close(kiln.jit(solve)(m, B), np.linalg.solve(m, B))
    dm, db = _loss_grads(m, B)
    for f in (kiln.grad(lambda m, b: jnp.sum(jnp.sin(solve(m, b))), argnums=(0, 1)),
              kiln.jit(kiln.grad(lambda m, b: jnp.sum(jnp.sin(solve(m, b))), argnums=(0, 1)))):
        gm, gb = f(m, B)
        _close(gm, dm)
        _close(gb, db)
    # forward mode: dx = m^-1 (db - dm x)
    dmt, dbt = RNG.standard_normal((4, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    _, t = kiln.jvp(solve, (m, B), (dmt, dbt))
    x64 = np.linalg.solve(m.astype(np.float64), B)
    _close(t, np.linalg.solve(m.astype(np.float64), dbt - dmt @ x64))


def test_vmap():
    ms = np.stack([A, 2 * A, A + np.eye(4, dtype=np.float32)])
    bs = RNG.standard_normal((3, 4)).astype(np.float32)
    _close(kiln.vmap(cg_solve)(ms, bs), np.stack([np.linalg.solve(m, b) for m, b in zip(ms, bs)]))
    _close(kiln.vmap(cg_solve, in_axes=(None, 0))(A, bs), np.linalg.solve(A, bs.T).T)
    _close(kiln.vmap(dense_solve, in_axes=(0, None))(ms, B), np.stack([np.linalg.solve(m, B) for m in ms]))


def test_pytree_and_aux():
    b = {"u": B, "v": B[:2]}
    out, aux = lax.custom_linear_solve(lambda x: {"u": 2 * x["u"], "v": 3 * x["v"]}, b,
                                       lambda mv, r: ({"u": r["u"] / 2, "v": r["v"] / 3}, jnp.float32(7)),
                                       has_aux=True)
    _close(out["u"], B / 2)
    _close(out["v"], B[:2] / 3)
    assert float(aux) == 7.0


def test_custom_root():
    def newton(f, x0):
        def body(i, x):
            fx, slope = kiln.jvp(f, (x,), (jnp.ones_like(x),))
            return x - fx / slope
        return lax.fori_loop(0, 30, body, x0)

    def sqrt(a):
        return lax.custom_root(lambda x: x * x - a, jnp.ones_like(a), newton, lambda g, y: y / g(jnp.ones_like(y)))
    _close(sqrt(2.0), np.sqrt(2.0), 1e-6)
    _close(kiln.grad(sqrt)(2.0), 0.5 / np.sqrt(2.0), 1e-6)
    _close(kiln.jit(kiln.grad(sqrt))(3.0), 0.5 / np.sqrt(3.0), 1e-6)
    a = np.array([1.0, 4.0, 9.0], np.float32)
    _close(kiln.vmap(sqrt)(a), np.sqrt(a), 1e-6)
    _close(kiln.vmap(kiln.grad(sqrt))(a), 0.5 / np.sqrt(a), 1e-6)
    # a vector root with a linear tangent solve and aux output: x = m^-1 c (f(x) = m x - c)
    def root(m, c):
        sol, aux = lax.custom_root(lambda x: m @ x - c, jnp.zeros(4),
                                   lambda f, x0: (jnp.linalg.solve(m, c), jnp.float32(1)),
                                   lambda g, y: jnp.linalg.solve(m, y), has_aux=True)
        return sol
    _close(root(G, B), np.linalg.solve(G, B))
    dm, db = _loss_grads(G, B)
    gm, gb = kiln.grad(lambda m, c: jnp.sum(jnp.sin(root(m, c))), argnums=(0, 1))(G, B)
    _close(gm, dm)
    _close(gb, db)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: kiln.grad(lambda b: jnp.sum(lax.custom_linear_solve(lambda x: A @ x, b, cg)))(B), TypeError,
     "needs transpose_solve"),
    (lambda: lax.custom_linear_solve(lambda x: x[:2], B, cg), TypeError, "matvec must return arrays like b"),
    (lambda: lax.custom_linear_solve(lambda x: A @ x, B, lambda mv, r: (r, r)), TypeError,
     "solve must return the structure of b"),
    (lambda: lax.custom_linear_solve(lambda x: A @ x, B, lambda mv, r: r, has_aux=True), TypeError,
     r"must return a pair \(solution, aux\)"),
    (lambda: lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y), TypeError,
     "f must return the structure of initial_guess"),
    (lambda: lax.custom_root(lambda x: x, 1.0, lambda f, x: (x, x), lambda g, y: y), TypeError,
     "solve must return the structure of initial_guess"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
