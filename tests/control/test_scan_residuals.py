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
