"""JAX's examples/ scripts under kiln and under JAX give the same numbers (the against_jax session).

The kiln side is tests/examples/jax_ported/ (JAX's mnist_classifier.py, mnist_classifier_fromscratch.py, mnist_vae.py,
differentially_private_sgd.py, advi.py and spmd_mnist_classifier_fromscratch.py with kiln's imports); the JAX side is
the same source with JAX's imports put back. NumPy oracles are in test_jax_examples_ported.py; this only checks that
the two libraries agree: the same PRNG draws bit for bit, parameters after a few training steps to 1e-5.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

jax_lib = pytest.importorskip("jax")
import jax.example_libraries.optimizers as jax_optimizers  # noqa: E402
from ported import load  # noqa: E402

import kiln  # noqa: E402
from kiln.example_libraries import optimizers as kiln_optimizers  # noqa: E402


def _both(name: str) -> tuple[types.ModuleType, types.ModuleType]:
    """(the kiln port, the same source with JAX's imports)."""
    return load(name), load(name, "jax")


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=n)
    images = np.clip(0.6 * np.random.RandomState(99).rand(10, 784)[labels] + 0.4 * rng.rand(n, 784), 0, 1)
    return images.astype(np.float32), np.eye(10, dtype=np.float32)[labels]


def _assert_same(kiln_tree, jax_tree, rtol=1e-5, atol=1e-7) -> None:
    a, b = kiln.tree_util.tree_leaves(kiln_tree), jax_lib.tree_util.tree_leaves(jax_tree)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def _train(lib, optimizers, ex, params, batch, steps=3):
    opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)

    @lib.jit
    def update(i, opt_state, batch):
        return opt_update(i, lib.grad(ex.loss)(get_params(opt_state), batch), opt_state)

    opt_state = opt_init(params)
    for i in range(steps):
        opt_state = update(i, opt_state, batch)
    return get_params(opt_state)


def test_mnist_classifier_matches_jax():
    k, j = _both("mnist_classifier")
    batch = _data(64)
    _, kp = k.init_random_params(kiln.random.key(0), (-1, 784))
    _, jp = j.init_random_params(jax_lib.random.key(0), (-1, 784))
    _assert_same(kp, jp, rtol=0, atol=0)  # the same draws
    kp, jp = _train(kiln, kiln_optimizers, k, kp, batch), _train(jax_lib, jax_optimizers, j, jp, batch)
    _assert_same(kp, jp)
    assert float(k.accuracy(kp, batch)) == float(j.accuracy(jp, batch))


def test_mnist_classifier_fromscratch_matches_jax():
    k, j = _both("mnist_classifier_fromscratch")
    batch = _data(64, seed=1)
    params = k.init_random_params(0.1, [784, 64, 10], rng=np.random.RandomState(0))
    kp = _train(kiln, kiln_optimizers, k, params, batch)
    jp = _train(jax_lib, jax_optimizers, j, params, batch)
    _assert_same(kp, jp)


def test_mnist_vae_matches_jax():
    k, j = _both("mnist_vae")
    images = _data(16, seed=2)[0] > 0.5

    def elbo_and_grad(lib, ex):
        enc_rng, dec_rng = lib.random.split(lib.random.key(2))
        params = ex.encoder_init(enc_rng, (16, 784))[1], ex.decoder_init(dec_rng, (16, 10))[1]
        value_and_grad = lib.jit(lib.value_and_grad(lambda p, x: -ex.elbo(lib.random.key(0), p, x) / 16))
        sampled = lib.jit(ex.image_sample, static_argnums=(2, 3))(lib.random.key(1), params, 2, 3)
        return value_and_grad(params, images), sampled

    (kv, kg), ks = elbo_and_grad(kiln, k)
    (jv, jg), js = elbo_and_grad(jax_lib, j)
    assert float(kv) == pytest.approx(float(jv), rel=1e-6)
    _assert_same(kg, jg, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(ks), np.asarray(js))  # bernoulli draws, bit for bit


def test_differentially_private_sgd_matches_jax():
    k, j = _both("differentially_private_sgd")
    images, labels = _data(4, seed=3)

    def private_grad(lib, ex):
        _, params = ex.init_random_params(lib.random.key(0), (-1, 28, 28, 1))
        batch = ex.shape_as_image(images, labels, dummy_dim=True)
        rng = lib.random.fold_in(lib.random.key(0), 3)
        return lib.jit(ex.private_grad, static_argnums=5)(params, batch, rng, 1.0, 1.1, 4)

    _assert_same(private_grad(kiln, k), private_grad(jax_lib, j), rtol=1e-5, atol=1e-6)


def test_advi_matches_jax():
    k, j = _both("advi")

    def fit(lib, optimizers, ex, steps=8):
        @lib.jit
        def objective(params, t):
            return -ex.batch_elbo(ex.funnel_log_density, lib.random.key(t), params, 40)

        opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)
        update = lib.jit(lambda i, s: opt_update(i, lib.grad(objective)(get_params(s), i), s))
        opt_state, values = opt_init((lib.numpy.zeros(2), lib.numpy.zeros(2))), []
        for t in range(steps):
            opt_state = update(t, opt_state)
            values.append(float(objective(get_params(opt_state), t)))
        return get_params(opt_state), values

    (kp, kv), (jp, jv) = fit(kiln, kiln_optimizers, k), fit(jax_lib, jax_optimizers, j)
    # bit for bit: vmap's unbatched operands reach XLA in JAX's form (test_simplify.py says why it matters here)
    _assert_same(kp, jp, rtol=0, atol=0)
    assert kv == jv


def test_spmd_mnist_classifier_fromscratch_matches_jax():
    k, j = _both("spmd_mnist_classifier_fromscratch")
    batch = _data(32, seed=4)

    def train(lib, ex):
        mesh = lib.make_mesh((1,), ("batch",), axis_types=(lib.sharding.AxisType.Explicit,))
        rep = lib.NamedSharding(mesh, lib.sharding.PartitionSpec())
        data = lib.NamedSharding(mesh, lib.sharding.PartitionSpec("batch"))
        params = lib.device_put(ex.init_random_params(0.1, [784, 32, 10], rng=np.random.RandomState(0)), rep)
        sharded = lib.device_put(batch, data)
        with lib.set_mesh(mesh):
            for _ in range(3):
                params = ex.train_step(params, sharded)
        return params, float(ex.accuracy(params, sharded))

    (kp, ka), (jp, ja) = train(kiln, k), train(jax_lib, j)
    _assert_same(kp, jp)
    assert ka == ja


def test_stateful_computations_page_matches_jax(capsys):
    k, j = _both("stateful_computations")
    printed = capsys.readouterr().out.split()
    assert printed[:12] == printed[12:]  # the two runs printed the same counts
    _assert_same([k.xs, k.ys], [j.xs, j.ys], rtol=0, atol=0)  # the same PRNG draws, bit for bit
    _assert_same(k.params, j.params, rtol=1e-6, atol=1e-7)
