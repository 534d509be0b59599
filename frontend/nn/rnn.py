"""``kiln.experimental.rnn``: the LSTM of ``jax.experimental.rnn``, with its packed weights, on every backend.

JAX's ``lstm`` calls cuDNN and runs on NVIDIA GPUs only; kiln's runs the same recurrence (PyTorch's and cuDNN's
LSTM with two biases, batch-first, gates in the order input, forget, cell, output) as a ``lax.scan`` per layer and
direction, so it runs wherever kiln does and differentiates through the scan.

The weights are one flat array in cuDNN's order: the matrices of every pseudo-layer (a layer of a bidirectional
LSTM is two: forward then reverse), ``W_ih`` then ``W_hh`` for each, then their biases, ``b_ih`` then ``b_hh``
for each. ``W_ih`` stacks the four gates' input matrices along its first axis, ``(4 * hidden, inputs)``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..control.api import scan
from ..random.samplers import uniform
from .functions import sigmoid


def _directions(bidirectional: bool) -> int:
    return 2 if bidirectional else 1


def _shapes(input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> list[tuple[int, ...]]:
    """The shapes of the packed weights, in their order (see the module's docstring)."""
    d = _directions(bidirectional)
    matrices, biases = [], []
    for pseudo in range(num_layers * d):
        inputs = input_size if pseudo < d else d * hidden_size  # layers after the first read the one below
        matrices += [(4 * hidden_size, inputs), (4 * hidden_size, hidden_size)]
        biases += [(4 * hidden_size,), (4 * hidden_size,)]
    return matrices + biases


def get_num_params_in_lstm(input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> int:
    """The length of the packed weight array of an LSTM of these sizes."""
    return sum(math.prod(s) for s in _shapes(input_size, hidden_size, num_layers, bidirectional))


def init_lstm_weight(rng: Any, input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> Any:
    """Packed float32 weights drawn from U(-k, k), ``k = sqrt(1 / hidden_size)`` (as JAX's)."""
    k = float(np.sqrt(1.0 / hidden_size))
    n = get_num_params_in_lstm(input_size, hidden_size, num_layers, bidirectional)
    return uniform(rng, (n,), jnp.float32, minval=-k, maxval=k)


def unpack_lstm_weights(weights: Any, input_size: int, hidden_size: int, num_layers: int,
                        bidirectional: bool) -> tuple[dict, dict, dict, dict]:
    """``(W_ih, W_hh, b_ih, b_hh)``: dicts from pseudo-layer index (``layer * directions + direction``) to that
    pseudo-layer's matrix or bias, cut out of the packed ``weights``."""
    shapes = _shapes(input_size, hidden_size, num_layers, bidirectional)
    weights = jnp.asarray(weights)
    want = sum(math.prod(s) for s in shapes)
    if weights.shape != (want,):
        raise ValueError(f"kiln.experimental.rnn: the packed weights of an LSTM with input_size={input_size}, "
                         f"hidden_size={hidden_size}, num_layers={num_layers}, bidirectional={bidirectional} have "
                         f"shape ({want},), got {tuple(weights.shape)}; get_num_params_in_lstm gives the length")
    parts, offset = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(weights[offset:offset + size].reshape(shape))
        offset += size
    n = len(shapes) // 4  # pseudo-layers
    matrices, biases = parts[:2 * n], parts[2 * n:]
    return ({p: matrices[2 * p] for p in range(n)}, {p: matrices[2 * p + 1] for p in range(n)},
            {p: biases[2 * p] for p in range(n)}, {p: biases[2 * p + 1] for p in range(n)})


def swap_lstm_gates(weights: Any, input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> Any:
    """The packed weights with the third and fourth gate blocks (cell and output) swapped in every matrix and bias:
    weights of a framework that orders the gates input, forget, output, cell, made cuDNN's (and back)."""
    weights = jnp.asarray(weights)
    blocks, offset = [], 0
    for shape in _shapes(input_size, hidden_size, num_layers, bidirectional):
        size = math.prod(shape)
        i, f, g, o = jnp.split(weights[offset:offset + size].reshape(shape), 4, axis=0)
        blocks.append(jnp.concatenate([i, f, o, g], axis=0).reshape(-1))
        offset += size
    return jnp.concatenate(blocks + [weights[offset:]])


def _cell(carry: tuple, x: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, precision: Any) -> tuple:
    h, c = carry
    z = (jnp.matmul(x, w_ih.T, precision=precision) + b_ih + jnp.matmul(h, w_hh.T, precision=precision) + b_hh)
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * jnp.tanh(g)
    h = sigmoid(o) * jnp.tanh(c)
    return h, c


def _run(xs: Any, h0: Any, c0: Any, weights: tuple, seq_lengths: Any, precision: Any) -> tuple:
    """One direction of one layer over time-major ``xs``: outputs zeroed past each sequence's length, and the
    state at each sequence's last step."""
    def step(carry, x):
        carry = _cell(carry, x, *weights, precision)
        return carry, carry
    _, (hs, cs) = scan(step, (h0, c0), xs)
    rows = jnp.arange(xs.shape[1])
    last = seq_lengths - 1
    valid = jnp.arange(xs.shape[0], dtype=jnp.int32)[:, None] < seq_lengths[None, :]
    return jnp.where(valid[..., None], hs, 0), hs[last, rows], cs[last, rows]


def _reverse_valid(xs: Any, seq_lengths: Any) -> Any:
    """Each sequence of time-major ``xs`` reversed within its length, its padding left at the end."""
    steps = xs.shape[0]
    t = jnp.arange(steps, dtype=jnp.int32)[:, None]
    source = jnp.where(t < seq_lengths[None, :], seq_lengths[None, :] - 1 - t, t)  # (steps, batch)
    return jnp.take_along_axis(xs, source[..., None], axis=0)


def lstm_ref(x: Any, h_0: Any, c_0: Any, W_ih: dict, W_hh: dict, b_ih: dict, b_hh: dict, seq_lengths: Any,
             input_size: int, hidden_size: int, num_layers: int, dropout: float, bidirectional: bool) -> tuple:
    """The LSTM of unpacked weights (see :func:`unpack_lstm_weights`): ``(y, h_n, c_n)`` as :func:`lstm`."""
    return _lstm(x, h_0, c_0, (W_ih, W_hh, b_ih, b_hh), seq_lengths, input_size, hidden_size, num_layers, dropout,
                 bidirectional, None)


def _lstm(x: Any, h_0: Any, c_0: Any, unpacked: tuple, seq_lengths: Any, input_size: int, hidden_size: int,
          num_layers: int, dropout: float, bidirectional: bool, precision: Any) -> tuple:
    W_ih, W_hh, b_ih, b_hh = unpacked
    seq_lengths = jnp.asarray(seq_lengths)
    if seq_lengths.dtype != np.int32:
        raise NotImplementedError(f"kiln.experimental.rnn: seq_lengths must be int32 (as JAX's), got "
                                  f"{seq_lengths.dtype}; pass seq_lengths.astype('int32')")
    if dropout != 0.0:
        raise NotImplementedError(f"kiln.experimental.rnn: dropout={dropout} between layers is not supported (JAX's "
                                  "reference neither: cuDNN's dropout masks cannot be reproduced); pass dropout=0.0")
    d = _directions(bidirectional)
    x = jnp.asarray(x)
    if x.ndim != 3 or x.shape[2] != input_size:
        raise ValueError(f"kiln.experimental.rnn: x must be (batch, time, input_size={input_size}), got shape "
                         f"{tuple(x.shape)}")
    want = (num_layers * d, x.shape[0], hidden_size)
    for name, state in (("h_0", h_0), ("c_0", c_0)):
        if tuple(jnp.shape(state)) != want:
            raise ValueError(f"kiln.experimental.rnn: {name} must have shape (num_layers * directions, batch, "
                             f"hidden_size) = {want}, got {tuple(jnp.shape(state))}")
    layer_in = jnp.swapaxes(x, 0, 1)  # time-major
    final_h, final_c = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(d):
            p = layer * d + direction
            weights = (W_ih[p], W_hh[p], b_ih[p], b_hh[p])
            xs = layer_in if direction == 0 else _reverse_valid(layer_in, seq_lengths)
            ys, h, c = _run(xs, h_0[p], c_0[p], weights, seq_lengths, precision)
            outs.append(ys if direction == 0 else _reverse_valid(ys, seq_lengths))
            final_h.append(h)
            final_c.append(c)
        layer_in = outs[0] if d == 1 else jnp.concatenate(outs, axis=-1)
    return jnp.swapaxes(layer_in, 0, 1), jnp.stack(final_h), jnp.stack(final_c)


def lstm(x: Any, h_0: Any, c_0: Any, weights: Any, seq_lengths: Any, input_size: int, hidden_size: int,
         num_layers: int, dropout: float, bidirectional: bool, precision: Any = None) -> tuple:
    """A multi-layer LSTM (as ``jax.experimental.rnn.lstm``), batch-first.

    ``x``: ``(batch, time, input_size)``; ``h_0``, ``c_0``: ``(num_layers * directions, batch, hidden_size)``;
    ``weights``: packed (:func:`init_lstm_weight`); ``seq_lengths``: int32 ``(batch,)``, each sequence's length
    (outputs past it are zero, and ``h_n``/``c_n`` are the states at its last step). Returns ``(y, h_n, c_n)``,
    ``y`` of shape ``(batch, time, directions * hidden_size)``."""
    unpacked = unpack_lstm_weights(weights, input_size, hidden_size, num_layers, bidirectional)
    return _lstm(x, h_0, c_0, unpacked, seq_lengths, input_size, hidden_size, num_layers, dropout, bidirectional,
                 precision)
