"""The algebraic simplification pass (``kiln.frontend.core.passes.simplify``) and the size of the module the
gradient of an MLP lowers to."""
from __future__ import annotations

import collections
import re

import numpy as np
from kiln.frontend.core import passes

import kiln
import kiln.numpy as knp
from kiln import lax


def _ops(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"stablehlo\.([a-z_]+)", text))


def _lowered(f, *args) -> collections.Counter:
    return _ops(kiln.jit(f).lower(*args).as_text())


def test_transpose_of_transpose():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    f = lambda x: lax.transpose(lax.transpose(x, (1, 0, 2)), (1, 0, 2))  # noqa: E731
    assert _lowered(f, x)["transpose"] == 0
    np.testing.assert_array_equal(kiln.jit(f)(x), x)
    g = lambda x: lax.transpose(lax.transpose(x, (1, 2, 0)), (1, 2, 0))  # noqa: E731
    assert _lowered(g, x)["transpose"] == 1
    np.testing.assert_array_equal(kiln.jit(g)(x), x.transpose(1, 2, 0).transpose(1, 2, 0))


def test_reshape_and_broadcast_chains():
    x = np.arange(6.0, dtype=np.float32)
    f = lambda x: lax.reshape(lax.reshape(lax.reshape(x, (2, 3)), (3, 2)), (6,))  # noqa: E731
    assert _lowered(f, x)["reshape"] == 0
    np.testing.assert_array_equal(kiln.jit(f)(x), x)
    g = lambda x: lax.reshape(lax.reshape(x, (2, 3)), (3, 2))  # noqa: E731
    assert _lowered(g, x)["reshape"] == 1
    np.testing.assert_array_equal(kiln.jit(g)(x), x.reshape(3, 2))
    v = np.arange(3.0, dtype=np.float32)
    h = lambda v: lax.broadcast_in_dim(lax.broadcast_in_dim(v, (2, 3), (1,)), (4, 2, 3), (1, 2))  # noqa: E731
    assert _lowered(h, v)["broadcast_in_dim"] == 1
    np.testing.assert_array_equal(kiln.jit(h)(v), np.broadcast_to(v, (4, 2, 3)))
    s = lambda v: lax.broadcast_in_dim(lax.broadcast_in_dim(v, (3, 1), (0,)), (3, 5), (0, 1))  # size-1 expanded
    assert _lowered(s, v)["broadcast_in_dim"] == 2  # kept: see test_vmap_unbatched_operand_broadcasts_as_jax
    np.testing.assert_array_equal(kiln.jit(s)(v), np.broadcast_to(v[:, None], (3, 5)))


def test_vmap_unbatched_operand_broadcasts_as_jax():
    """An unbatched operand of an elementwise operation under vmap reaches XLA as JAX's does: broadcast to a
    batch dimension of size 1, then widened (JAX's rule leaves the widening to the primitive's implicit
    broadcasting), and simplify keeps the pair. XLA's simplifier rewrites ``a / widen(b)`` into a product with a
    reciprocal where it does not rewrite ``a / broadcast(b)``, so the one-broadcast form rounded differently from
    JAX (JAX's advi example: a jitted ELBO 12.655097 against JAX's 12.655095)."""
    x = np.linspace(-1, 2, 8, dtype=np.float32).reshape(4, 2)
    s = np.array([0.3, -0.7], np.float32)
    f = kiln.vmap(lambda x, s: (x - s) ** 2 / knp.exp(s) ** 2, (0, None))
    text = kiln.jit(f).lower(x, s).as_text()
    bcast = r"stablehlo\.broadcast_in_dim"
    to_ones = re.findall(rf"(%\w+) = {bcast} \S+, dims = \[1\] : \(tensor<2xf32>\) -> tensor<1x2xf32>", text)
    widened = re.findall(rf"= {bcast} (%\w+), dims = \[0, 1\] : \(tensor<1x2xf32>\) -> tensor<4x2xf32>", text)
    assert len(to_ones) == 2 and sorted(widened) == sorted(to_ones), text
    want = (x.astype(np.float64) - s) ** 2 / np.exp(s.astype(np.float64)) ** 2
    np.testing.assert_allclose(kiln.jit(f)(x, s), want, rtol=1e-6)
    np.testing.assert_allclose(f(x, s), want, rtol=1e-6)
    y = np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4)  # batched along 1: moved to the front first
    np.testing.assert_allclose(kiln.jit(kiln.vmap(lambda y, s: y * s, (1, None)))(y, s), y.T * s, rtol=1e-7)


def test_neutral_elements_and_double_negation():
    x = np.array([1.5, -2.0, 0.25], np.float32)
    f = lambda x: lax.neg(lax.neg(x * 1.0 + 0.0)) - knp.zeros(3) + 0.0 * x  # noqa: E731
    ops = _lowered(f, x)
    assert ops["negate"] == 0 and ops["subtract"] == 0
    assert ops["multiply"] == 1 and ops["add"] == 1  # only the 0.0 * x term remains (it is not x: NaN * 0)
    np.testing.assert_array_equal(kiln.jit(f)(x), x)
    # an addition of zero that changes the dtype or the weak type is kept
    assert kiln.jit(lambda s: s + 0.0)(2.0).weak_type


def test_simplify_on_ir_directly():
    closed = kiln.make_ir(lambda x: lax.transpose(lax.transpose(x * 1.0, (1, 0)), (1, 0)))(np.ones((2, 3), np.float32))
    out = passes.eliminate_dead_code(passes.simplify(closed.ir))
    assert not out.eqns and out.outvars == out.invars


def _mlp_loss(params, x, labels):
    h = x
    for w, b in params[:-1]:
        h = knp.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    shifted = logits - knp.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - knp.log(knp.sum(knp.exp(shifted), axis=-1, keepdims=True))
    return -knp.mean(knp.sum(labels * log_probs, axis=-1))


def test_mlp_gradient_module_is_lean():
    """jit(grad(mlp)) lowers without transposes (weight cotangents come out of dot_general in the weights'
    layout), without reshape-of-reshape or broadcast-of-broadcast chains; it has the forward's and the
    backward's 8 dot_generals. (JAX 0.10.2 lowers the same function to 128 ops, 3 of them transposes.)"""
    rng = np.random.default_rng(0)
    sizes = (16, 8, 8, 4)
    params = [(rng.standard_normal((i, o), dtype=np.float32), np.zeros(o, np.float32))
              for i, o in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((5, 16), dtype=np.float32)
    labels = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 5)]
    text = kiln.jit(kiln.grad(_mlp_loss)).lower(params, x, labels).as_text()
    ops = _ops(text)
    assert ops["transpose"] == 0
    assert ops["dot_general"] == 8
    assert sum(ops.values()) <= 85, ops
    for producer in ("reshape", "broadcast_in_dim"):
        defined = set(re.findall(rf"(%\w+) = stablehlo\.{producer} ", text))
        chained = re.findall(rf"= stablehlo\.{producer} (%\w+)", text)
        assert not defined.intersection(chained), f"a {producer} of a {producer} is left"


def test_log_derivative_is_one_division():
    """d log(x) = t / x, as JAX's rule: no reciprocal 1 / x kept for the backward pass and multiplied by (the
    log-softmax backward then fuses into one kernel, as JAX's)."""
    x = np.array([0.5, 2.0, 4.0], np.float32)
    c = np.array([1.0, -3.0, 0.25], np.float32)
    for log, deriv in ((knp.log, lambda x: 1 / x), (knp.log1p, lambda x: 1 / (1 + x))):
        f = lambda x, c: knp.sum(log(x) * c)  # noqa: E731
        ops = _lowered(kiln.grad(f), x, c)
        assert ops["divide"] == 1 and ops["multiply"] == 0, (log, ops)
        np.testing.assert_allclose(kiln.jit(kiln.grad(f))(x, c), c * deriv(x), rtol=1e-6)
