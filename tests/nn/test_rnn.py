"""kiln.experimental.rnn (jax.experimental.rnn's LSTM with cuDNN's packed weights) against a NumPy LSTM: packed
layout, ragged sequence lengths, several layers, both directions, gradients and errors."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln.experimental import rnn

RNG = np.random.default_rng(0)
IN, H = 3, 4


def _sig(z):
    return 1 / (1 + np.exp(-z))


def _np_direction(xs, h, c, w_ih, w_hh, b_ih, b_hh, lengths):
    """One direction of one layer, batch-first xs (B, T, I); sequences end at lengths (outputs zero after)."""
    b, t_max = xs.shape[:2]
    ys = np.zeros((b, t_max, h.shape[-1]))
    h_n, c_n = h.copy(), c.copy()
    for r in range(b):
        hr, cr = h[r].astype(np.float64), c[r].astype(np.float64)
        for t in range(lengths[r]):
            z = w_ih @ xs[r, t] + b_ih + w_hh @ hr + b_hh
            i, f, g, o = np.split(z, 4)
            cr = _sig(f) * cr + _sig(i) * np.tanh(g)
            hr = _sig(o) * np.tanh(cr)
            ys[r, t] = hr
        h_n[r], c_n[r] = hr, cr
    return ys, h_n, c_n


def _np_lstm(x, h0, c0, weights, lengths, layers, bidirectional):
    """The LSTM in NumPy, cutting the packed weights by hand: all matrices (W_ih, W_hh per pseudo-layer), then
    all biases (b_ih, b_hh per pseudo-layer)."""
    d = 2 if bidirectional else 1
    w = np.asarray(weights, np.float64)
    mats, off = [], 0
    for p in range(layers * d):
        inputs = IN if p < d else d * H
        for shape in [(4 * H, inputs), (4 * H, H)]:
            mats.append(w[off:off + np.prod(shape)].reshape(shape))
            off += np.prod(shape)
    biases = w[off:].reshape(layers * d * 2, 4 * H)
    assert off + biases.size == w.size
    layer_in, hs, cs = x.astype(np.float64), [], []
    for layer in range(layers):
        outs = []
        for direction in range(d):
            p = layer * d + direction
            args = (mats[2 * p], mats[2 * p + 1], biases[2 * p], biases[2 * p + 1], lengths)
            if direction == 0:
                ys, h, c = _np_direction(layer_in, h0[p], c0[p], *args)
            else:  # each sequence reversed within its length
                rev = layer_in.copy()
                for r, n in enumerate(lengths):
                    rev[r, :n] = layer_in[r, :n][::-1]
                ys, h, c = _np_direction(rev, h0[p], c0[p], *args)
                for r, n in enumerate(lengths):
                    ys[r, :n] = ys[r, :n][::-1].copy()
            outs.append(ys)
            hs.append(h)
            cs.append(c)
        layer_in = np.concatenate(outs, axis=-1)
    return layer_in, np.stack(hs), np.stack(cs)


@pytest.mark.parametrize("layers,bidirectional", [(2, False), (1, True), (2, True)])
def test_lstm_matches_numpy(layers, bidirectional):
    d = 2 if bidirectional else 1
    n = rnn.get_num_params_in_lstm(IN, H, layers, bidirectional)
    # the packed length, counted by hand: per pseudo-layer 4H x inputs + 4H x H weights and two 4H biases
    assert n == sum(4 * H * ((IN if p < d else d * H) + H) + 8 * H for p in range(layers * d))
    w = rnn.init_lstm_weight(kiln.random.key(1), IN, H, layers, bidirectional)
    assert w.shape == (n,) and w.dtype == np.float32 and float(jnp.max(jnp.abs(w))) <= np.sqrt(1 / H)
    x = RNG.standard_normal((3, 5, IN)).astype(np.float32)
    h0 = RNG.standard_normal((layers * d, 3, H)).astype(np.float32)
    c0 = RNG.standard_normal((layers * d, 3, H)).astype(np.float32)
    lengths = np.array([5, 2, 4], np.int32)
    y, h_n, c_n = rnn.lstm(x, h0, c0, w, lengths, input_size=IN, hidden_size=H, num_layers=layers, dropout=0.0,
                           bidirectional=bidirectional)
    want = _np_lstm(x, h0, c0, np.asarray(w), lengths, layers, bidirectional)
    assert y.shape == (3, 5, d * H) and h_n.shape == c_n.shape == (layers * d, 3, H)
    for got, exp in zip((y, h_n, c_n), want):
        np.testing.assert_allclose(np.asarray(got), exp, rtol=2e-5, atol=2e-6)
    # lstm_ref on the unpacked weights is the same computation; under jit too
    ref = rnn.lstm_ref(x, h0, c0, *rnn.unpack_lstm_weights(w, IN, H, layers, bidirectional), lengths, IN, H, layers,
                       0.0, bidirectional)
    np.testing.assert_array_equal(np.asarray(ref[0]), np.asarray(y))
    jitted = kiln.jit(rnn.lstm, static_argnums=(5, 6, 7, 8, 9))(x, h0, c0, w, lengths, IN, H, layers, 0.0,
                                                               bidirectional)
    np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(h_n), rtol=1e-5, atol=1e-6)


def test_unpack_and_swap_gates():
    w = jnp.arange(rnn.get_num_params_in_lstm(IN, H, 1, False), dtype=jnp.float32)
    w_ih, w_hh, b_ih, b_hh = rnn.unpack_lstm_weights(w, IN, H, 1, False)
    assert w_ih[0].shape == (4 * H, IN) and w_hh[0].shape == (4 * H, H) and b_ih[0].shape == b_hh[0].shape == (4 * H,)
    assert float(w_hh[0][0, 0]) == 4 * H * IN and float(b_ih[0][0]) == 4 * H * (IN + H)
    swapped = rnn.swap_lstm_gates(w, IN, H, 1, False)
    s_ih = rnn.unpack_lstm_weights(swapped, IN, H, 1, False)[0][0]
    np.testing.assert_array_equal(np.asarray(s_ih[2 * H:3 * H]), np.asarray(w_ih[0][3 * H:]))
    np.testing.assert_array_equal(np.asarray(rnn.swap_lstm_gates(swapped, IN, H, 1, False)), np.asarray(w))


def test_gradient_against_finite_differences():
    w = rnn.init_lstm_weight(kiln.random.key(2), IN, H, 1, True)
    x = RNG.standard_normal((2, 4, IN)).astype(np.float32)
    lengths = np.array([4, 3], np.int32)

    def loss(weights, inputs):
        h0 = jnp.zeros((2, 2, H), inputs.dtype)
        y, h_n, _ = rnn.lstm(inputs, h0, h0, weights, lengths, IN, H, 1, 0.0, True)
        return jnp.sum(y ** 2) + jnp.sum(h_n)
    gw, gx = kiln.grad(loss, argnums=(0, 1))(w, x)
    with kiln.config.override("enable_x64", True):
        w64, x64 = np.asarray(w, np.float64), x.astype(np.float64)
        f = kiln.jit(loss)
        for k in (0, 37, 150, 287):
            e = np.zeros_like(w64)
            e[k] = 1e-5
            fd = (float(f(w64 + e, x64)) - float(f(w64 - e, x64))) / 2e-5
            np.testing.assert_allclose(float(gw[k]), fd, rtol=2e-3, atol=2e-4)
        e = np.zeros_like(x64)
        e[1, 2, 0] = 1e-5
        fd = (float(f(w64, x64 + e)) - float(f(w64, x64 - e))) / 2e-5
        np.testing.assert_allclose(float(gx[1, 2, 0]), fd, rtol=2e-3, atol=2e-4)
    assert float(jnp.abs(gx[1, 3]).sum()) == 0.0  # past its length a step does not count


def test_errors():
    w = rnn.init_lstm_weight(kiln.random.key(0), IN, H, 1, False)
    x = np.ones((2, 3, IN), np.float32)
    h0 = np.zeros((1, 2, H), np.float32)
    lengths = np.array([3, 3], np.int32)
    with pytest.raises(NotImplementedError, match=r"dropout=0.5 between layers is not supported.*pass dropout=0.0"):
        rnn.lstm(x, h0, h0, w, lengths, IN, H, 1, 0.5, False)
    with kiln.config.override("enable_x64", True):
        with pytest.raises(NotImplementedError, match=r"seq_lengths must be int32 .* got int64"):
            rnn.lstm(x, h0, h0, w, np.array([3, 3], np.int64), IN, H, 1, 0.0, False)
    with pytest.raises(ValueError, match=r"packed weights .* have shape \(144,\), got \(10,\); get_num_params_in_lstm"):
        rnn.lstm(x, h0, h0, w[:10], lengths, IN, H, 1, 0.0, False)
    with pytest.raises(ValueError, match=r"h_0 must have shape \(num_layers \* directions, batch, hidden_size\) = "
                                         r"\(2, 2, 4\), got \(1, 2, 4\)"):
        rnn.lstm(x, h0, h0, rnn.init_lstm_weight(kiln.random.key(0), IN, H, 1, True), lengths, IN, H, 1, 0.0, True)
    with pytest.raises(ValueError, match=r"x must be \(batch, time, input_size=3\), got shape \(3, 3\)"):
        rnn.lstm(x[0], h0, h0, w, lengths, IN, H, 1, 0.0, False)
