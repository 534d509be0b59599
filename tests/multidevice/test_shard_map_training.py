"""Parallel training patterns written with kiln.shard_map (the ones JAX's shard_map tutorial teaches), each against
the same computation on one device: data parallelism with pmean, fully sharded parameters gathered just in time
(re-gathered on the backward pass under remat), and a ring matmul that overlaps ppermute with local products."""
from __future__ import annotations

import functools

import numpy as np

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P

SIZES = (16, 32, 32, 8)


def _data(batch=32):
    rng = np.random.default_rng(3)
    params = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a), rng.standard_normal(b).astype(np.float32))
              for a, b in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((batch, SIZES[-1])).astype(np.float32)
    return params, (x, y)


def _predict(params, x):
    for w, b in params[:-1]:
        x = kiln.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def _loss(params, batch):
    x, y = batch
    return knp.mean(knp.sum((_predict(params, x) - y) ** 2, axis=-1))


def _close(a, b, tol=1e-4):
    for u, v in zip(kiln.tree_util.tree_leaves(a), kiln.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


def test_data_parallel_loss_and_grads():
    mesh = kiln.make_mesh((8,), ("batch",))
    params, batch = _data()
    params_r = kiln.device_put(params, NamedSharding(mesh, P()))
    batch_s = kiln.device_put(batch, NamedSharding(mesh, P("batch")))

    def loss_dp(params, batch):  # in_specs from the arguments' layouts
        return kiln.shard_map(lambda p, b: lax.pmean(_loss(p, b), "batch"), mesh=mesh, out_specs=P())(params, batch)
    _close(kiln.jit(loss_dp)(params_r, batch_s), _loss(params, batch))
    _close(kiln.jit(kiln.grad(loss_dp))(params_r, batch_s), kiln.grad(_loss)(params, batch))


def test_fully_sharded_parameters_gathered_under_remat():
    mesh = kiln.make_mesh((4,), ("batch",))
    params, batch = _data()

    @functools.partial(kiln.remat, policy=lambda prim, *_, **__: str(prim) != "all_gather")
    def predict_fsdp(frags, x):
        full = [(lax.all_gather(w, "batch", tiled=True), lax.all_gather(b, "batch", tiled=True)) for w, b in frags]
        return _predict(full, x)

    def loss_fsdp(frags, batch):
        def local(frags, batch):
            x, y = batch
            return lax.pmean(knp.mean(knp.sum((predict_fsdp(frags, x) - y) ** 2, axis=-1)), "batch")
        return kiln.shard_map(local, mesh=mesh, in_specs=(P("batch"), P("batch")), out_specs=P())(frags, batch)
    _close(kiln.jit(loss_fsdp)(params, batch), _loss(params, batch))
    _close(kiln.jit(kiln.grad(loss_fsdp))(params, batch), kiln.grad(_loss)(params, batch))


def test_ring_matmul_with_ppermute():
    mesh = kiln.make_mesh((4,), ("i",))
    rng = np.random.default_rng(5)
    lhs, rhs = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)

    def ring(lhs_block, rhs_block):  # lhs rows and rhs rows split: rotate rhs blocks round the ring
        size, idx = lax.axis_size("i"), lax.axis_index("i")
        width = lhs_block.shape[1] // size
        out = lax.dynamic_slice_in_dim(lhs_block, idx * width, width, 1) @ rhs_block
        for k in range(1, size):
            rhs_block = lax.ppermute(rhs_block, "i", [(j, (j + 1) % size) for j in range(size)])
            out = out + lax.dynamic_slice_in_dim(lhs_block, ((idx - k) % size) * width, width, 1) @ rhs_block
        return out
    f = kiln.jit(kiln.shard_map(ring, mesh=mesh, in_specs=(P("i"), P("i")), out_specs=P("i")))
    np.testing.assert_allclose(np.asarray(f(lhs, rhs)), lhs @ rhs, rtol=1e-5, atol=1e-5)
    g = kiln.jit(kiln.grad(lambda a, b: knp.sum(f(a, b) ** 2), argnums=(0, 1)))(lhs, rhs)
    ga, gb = 2 * (lhs @ rhs) @ rhs.T, 2 * lhs.T @ (lhs @ rhs)
    np.testing.assert_allclose(np.asarray(g[0]), ga, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(g[1]), gb, rtol=1e-4, atol=1e-4)
