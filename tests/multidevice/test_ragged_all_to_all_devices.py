"""kiln.lax.ragged_all_to_all across 4 CPU devices inside shard_map (XLA's own ragged-all-to-all has no CPU
implementation, so JAX cannot run this on CPU): random exchanges against the NumPy model of JAX's pseudocode, and
its gradient against the vmap-axis version's (tests/lax/test_ragged_all_to_all.py checks that one)."""
from __future__ import annotations

import os
import sys

import numpy as np

import kiln
from kiln import lax
from kiln.sharding import PartitionSpec as P

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "lax"))
from test_ragged_all_to_all import exchange, numpy_model, random_exchange  # noqa: E402


def _sharded(mesh):
    def body(operand, output, *sizes):
        return lax.ragged_all_to_all(operand[0], output[0], *(s[0] for s in sizes), axis_name="data")[None]
    return kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data")))


def test_exchanges_across_devices_against_numpy(mesh):
    rng = np.random.default_rng(4)
    f = _sharded(mesh)
    for per_peer, tail in ((1, ()), (2, (3,))):
        args = random_exchange(rng, 4, per_peer, rows_in=8 * per_peer + 1, rows_out=8 * per_peer + 3, tail=tail)
        out = f(*args)
        np.testing.assert_array_equal(np.asarray(out), numpy_model(*args))
        assert out.sharding.spec == P("data")  # each device of the data axis computed its own block


def test_grad_across_devices_matches_the_vmap_version(mesh):
    rng = np.random.default_rng(5)
    operands, outputs, *sizes = random_exchange(rng, 4, 1, rows_in=7, rows_out=9, tail=(2,))
    weights = rng.standard_normal(outputs.shape).astype(np.float32)
    f = _sharded(mesh)

    def loss(exchange_fn, a, b):
        return (exchange_fn(a, b, *sizes) * weights).sum()
    got = kiln.jit(kiln.grad(lambda a, b: loss(f, a, b), argnums=(0, 1)))(operands, outputs)
    want = kiln.grad(lambda a, b: loss(exchange, a, b), argnums=(0, 1))(operands, outputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
