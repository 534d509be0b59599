"""Reverse mode of scan stores per-step residuals, but not copies of the loop's constants."""
import numpy as np

import kiln
import kiln.numpy as knp
from kiln import lax


def _rnn_loss(w, xs):
    def step(h, x):
        h = knp.tanh(h @ w + x)
        return h, h
    _, hs = lax.scan(step, knp.zeros(8), xs)
    return knp.sum(hs ** 2)


def test_loop_constants_are_not_stacked():
    w = knp.asarray(np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32) * 0.3)
    xs = knp.asarray(np.random.default_rng(1).normal(size=(50, 8)).astype(np.float32))
    text = kiln.jit(kiln.grad(_rnn_loss)).lower(w, xs).as_text()
    assert "tensor<50x8x8xf32>" not in text  # w would be stacked once per step
    # and the gradient is still right (central differences on one entry)
    g = np.asarray(kiln.grad(_rnn_loss)(w, xs))
    eps = 1e-2
    e = np.zeros((8, 8), np.float32)
    e[2, 3] = eps
    fd = (float(_rnn_loss(w + e, xs)) - float(_rnn_loss(w - e, xs))) / (2 * eps)
    np.testing.assert_allclose(g[2, 3], fd, rtol=2e-2)


def _rnn2_loss(params, xs, reverse=False, loop=False):
    """h = tanh(h @ w + (x @ u) * 1.0) on a batch of 2: the 1.0 is a broadcast constant in the body; x is a
    slice of xs."""
    w, u = params

    def step(h, x):
        h = knp.tanh(h @ w + (x @ u) * 1.0)
        return h, h
    if loop:  # the same recurrence as a Python loop: no scan, the oracle for the scan's gradient
        h, hs = knp.zeros((2, 8)), []
        for x in (xs[::-1] if reverse else xs):
            h, y = step(h, x)
            hs.append(y)
        hs = knp.stack(hs[::-1] if reverse else hs)
    else:
        _, hs = lax.scan(step, knp.zeros((2, 8)), xs, reverse=reverse)
    return knp.mean(hs * hs)


def test_xs_and_constants_are_not_stacked():
    """Residuals that are slices of the scan's own xs are read from xs, and constants computed from literals
    are computed again in the backward loop: neither is stacked per step (JAX stacks neither)."""
    rng = np.random.default_rng(2)
    params = (knp.asarray(rng.normal(size=(8, 8)).astype(np.float32) * 0.3),
              knp.asarray(rng.normal(size=(4, 8)).astype(np.float32) * 0.3))
    xs = knp.asarray(rng.normal(size=(30, 2, 4)).astype(np.float32))
    for reverse in (False, True):
        text = kiln.jit(kiln.grad(lambda p, xs: _rnn2_loss(p, xs, reverse))).lower(params, xs).as_text()
        # stacked by the forward loop: the hs (its output, which is also tanh's residual: read by the backward
        # loop, not stacked twice; its derivative's 1 - y is computed again from it) and the previous h; no x, no ones
        assert text.count("stablehlo.dynamic_update_slice") == 2, reverse
        assert "tensor<30x2x4xf32>" in text
        got = kiln.jit(kiln.grad(lambda p, xs: _rnn2_loss(p, xs, reverse)))(params, xs)
        want = kiln.grad(lambda p, xs: _rnn2_loss(p, xs, reverse, loop=True))(params, xs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def test_scan_counter_is_not_multiplied_by_one():
    """The step index of a scan without unrolling is the loop counter itself (no ``i * 1`` in every trip)."""
    f = kiln.jit(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs))
    xs = np.arange(5.0, dtype=np.float32)
    assert "stablehlo.multiply" not in f.lower(xs).as_text()
    g = kiln.jit(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=2))
    assert "stablehlo.multiply" in g.lower(xs).as_text()  # trip i starts at step 2 * i
    for fn in (f, g):
        carry, ys = fn(xs)
        assert float(carry) == 10.0
        np.testing.assert_array_equal(ys, [0, 0, 1, 3, 6])


def _rnn3_loss(params, xs, loop=False):
    """A body that transforms its weights: w * 0.5 and the gain g broadcast to the batch are loop-invariant."""
    w, g = params

    def step(h, x):
        h = knp.tanh((h @ (w * 0.5)) * g + x)
        return h, h
    if loop:
        h, hs = knp.zeros((2, 8)), []
        for x in xs:
            h, y = step(h, x)
            hs.append(y)
        hs = knp.stack(hs)
    else:
        _, hs = lax.scan(step, knp.zeros((2, 8)), xs)
    return knp.mean(hs * hs)


def test_loop_invariant_residuals_are_computed_once():
    """Residuals computed from the loop's constants alone (w * 0.5, g broadcast to (2, 8)) are computed once
    before the loop, not once per step and stacked (as JAX hoists them)."""
    rng = np.random.default_rng(3)
    params = (knp.asarray(rng.normal(size=(8, 8)).astype(np.float32) * 0.5),
              knp.asarray(rng.normal(size=(8,)).astype(np.float32)))
    xs = knp.asarray(rng.normal(size=(30, 2, 8)).astype(np.float32))
    text = kiln.jit(kiln.grad(_rnn3_loss)).lower(params, xs).as_text()
    assert "tensor<30x8x8xf32>" not in text  # w * 0.5, stacked once per step
    # stacked: the hs (also tanh's residual; 1 - tanh computed again), the previous h and (h @ w') for g's
    # gradient; not the broadcast g
    assert text.count("stablehlo.dynamic_update_slice") == 3
    got = kiln.jit(kiln.grad(_rnn3_loss))(params, xs)
    want = kiln.grad(lambda p, xs: _rnn3_loss(p, xs, loop=True))(params, xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_residual_read_from_the_ys_with_unroll_and_reverse():
    # tanh's output is both a ys output and a residual: the backward loop reads the forward loop's ys (one stacked
    # array fewer), whatever the unrolling and direction.
    rng = np.random.default_rng(5)
    w = knp.asarray(rng.normal(size=(3, 3)).astype(np.float32) * 0.5)
    xs = knp.asarray(rng.normal(size=(7, 3)).astype(np.float32))

    def loss(w, xs, unroll, reverse):
        def step(h, x):
            h = knp.tanh(h @ w + x)
            return h, h
        _, ys = lax.scan(step, knp.zeros(3), xs, unroll=unroll, reverse=reverse)
        return knp.sum(ys ** 2)

    def loop_loss(w, xs, reverse):
        h, total = knp.zeros(3), 0.0
        for x in (xs[::-1] if reverse else xs):
            h = knp.tanh(h @ w + x)
            total = total + knp.sum(h ** 2)
        return total
    text = kiln.jit(kiln.grad(loss), static_argnums=(2, 3)).lower(w, xs, 1, False).as_text()
    assert text.count("stablehlo.dynamic_update_slice") == 2  # the ys (h) and the previous h
    for unroll in (1, 2, 7):
        for reverse in (False, True):
            got = kiln.jit(kiln.grad(loss), static_argnums=(2, 3))(w, xs, unroll, reverse)
            want = kiln.grad(loop_loss)(w, xs, reverse)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
