"""JAX's own examples/ scripts, ported by changing imports (tests/examples/jax_ported/), trained a few steps under kiln.

One test per script: mnist_classifier.py, mnist_classifier_fromscratch.py, mnist_vae.py,
differentially_private_sgd.py, advi.py, spmd_mnist_classifier_fromscratch.py. Each restates the script's
``__main__`` loop at a tiny size on synthetic MNIST-shaped data (the scripts download MNIST) and checks what a
sceptic would: the loss falls, the accuracy the script computes is the one NumPy computes from the returned
parameters, shapes, and the same numbers again for the same key. The oracles are NumPy or Python loops.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from ported import load

import kiln as jax
import kiln.numpy as jnp
from kiln import grad, jit, lax, random
from kiln.example_libraries import optimizers
from kiln.sharding import AxisType, NamedSharding
from kiln.sharding import PartitionSpec as P


def _mnist_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(n, 784) float32 images in [0, 1] whose class shows in a template, one-hot float32 labels (datasets.mnist's)."""
    rng = np.random.RandomState(seed)
    templates = np.random.RandomState(99).rand(10, 784)
    labels = rng.randint(0, 10, size=n)
    images = np.clip(0.6 * templates[labels] + 0.4 * rng.rand(n, 784), 0, 1).astype(np.float32)
    return images, np.eye(10, dtype=np.float32)[labels]


def _np_accuracy(logits: np.ndarray, targets: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits, 1) == np.argmax(targets, 1)))


def _np_mlp(params, x, act):
    """Forward pass of a list of (w, b) layers with ``act`` between them, in float64 NumPy."""
    for w, b in params[:-1]:
        x = act(x @ np.asarray(w, np.float64) + np.asarray(b, np.float64))
    return x @ np.asarray(params[-1][0], np.float64) + np.asarray(params[-1][1], np.float64)


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def test_mnist_classifier():
    """examples/mnist_classifier.py: stax MLP, optimizers.momentum, jit(grad)."""
    ex = load("mnist_classifier")
    images, labels = _mnist_like(96)

    def train(key, steps=4):
        opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)

        @jit
        def update(i, opt_state, batch):
            params = get_params(opt_state)
            return opt_update(i, grad(ex.loss)(params, batch), opt_state)

        _, init_params = ex.init_random_params(key, (-1, 28 * 28))
        opt_state, itercount, losses = opt_init(init_params), itertools.count(), []
        for _ in range(steps):
            losses.append(float(ex.loss(get_params(opt_state), (images, labels))))
            opt_state = update(next(itercount), opt_state, (images, labels))
        return get_params(opt_state), losses

    params, losses = train(random.key(0))
    assert [w.shape for w, b in params[::2]] == [(784, 1024), (1024, 1024), (1024, 10)]
    assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
    dense = [params[0], params[2], params[4]]
    np_logits = _np_mlp(dense, images, lambda h: np.maximum(h, 0))
    assert float(ex.accuracy(params, (images, labels))) == pytest.approx(_np_accuracy(np_logits, labels), abs=1e-6)
    np_logp = np_logits - np.log(np.exp(np_logits - np_logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - np_logits.max(1, keepdims=True)
    assert float(ex.loss(params, (images, labels))) == pytest.approx(-np.mean(np.sum(np_logp * labels, 1)), rel=1e-5)
    again, _ = train(random.key(0))
    assert all(np.array_equal(a, b) for a, b in zip(_leaves(params), _leaves(again)))


def test_mnist_classifier_fromscratch():
    """examples/mnist_classifier_fromscratch.py: NumPy-initialised tanh MLP, logsumexp, plain SGD under jit."""
    ex = load("mnist_classifier_fromscratch")
    images, labels = _mnist_like(64, seed=1)
    step_size = 0.01

    @jit
    def update(params, batch):
        grads = grad(ex.loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    params = ex.init_random_params(0.1, [784, 64, 64, 10], rng=np.random.RandomState(0))
    init = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]
    losses = []
    for _ in range(4):
        losses.append(float(ex.loss(params, (images, labels))))
        params = update(params, (images, labels))
    assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
    assert [p.dtype for p in _leaves(params)] == [np.float32] * 6  # float64 NumPy parameters enter as float32
    preds = np.asarray(ex.predict(params, images))
    np.testing.assert_allclose(np.exp(preds).sum(1), 1, rtol=1e-5)  # log-probabilities
    np_logits = _np_mlp(params, images, np.tanh)
    assert float(ex.accuracy(params, (images, labels))) == pytest.approx(_np_accuracy(np_logits, labels), abs=1e-6)
    # the first step is SGD on the NumPy model's gradient: finite differences of the NumPy loss along one weight
    def np_loss(ps):
        z = _np_mlp(ps, images, np.tanh)
        z = z - z.max(1, keepdims=True)
        return -np.mean(np.sum((z - np.log(np.exp(z).sum(1, keepdims=True))) * labels, 1))
    first = update(ex.init_random_params(0.1, [784, 64, 64, 10], rng=np.random.RandomState(0)), (images, labels))
    eps, (i, j) = 1e-4, (3, 5)
    bumped = [(w.copy(), b.copy()) for w, b in init]
    bumped[2][0][i, j] += eps
    fd = (np_loss(bumped) - np_loss(init)) / eps
    assert (init[2][0][i, j] - float(first[2][0][i, j])) / step_size == pytest.approx(fd, rel=2e-2, abs=1e-4)


def test_mnist_vae():
    """examples/mnist_vae.py: stax FanOut/parallel encoder, random.bernoulli binarisation, fori_loop epochs."""
    ex = load("mnist_vae")
    train_images, _ = _mnist_like(64, seed=2)
    test_images, _ = _mnist_like(32, seed=3)
    batch_size, nrow, ncol = 16, 2, 3
    num_batches = train_images.shape[0] // batch_size
    test_rng = random.key(1)
    opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)

    def binarize_batch(rng, i, images):
        i = i % num_batches
        batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
        return random.bernoulli(rng, batch)

    @jit
    def run_epoch(rng, opt_state, images):
        def body_fun(i, opt_state):
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = binarize_batch(data_rng, i, images)
            loss = lambda params: -ex.elbo(elbo_rng, params, batch) / batch_size
            g = grad(loss)(get_params(opt_state))
            return opt_update(i, g, opt_state)
        return lax.fori_loop(0, num_batches, body_fun, opt_state)

    @jit
    def evaluate(opt_state, images):
        params = get_params(opt_state)
        elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
        binarized_test = random.bernoulli(data_rng, images)
        test_elbo = ex.elbo(elbo_rng, params, binarized_test) / images.shape[0]
        sampled_images = ex.image_sample(image_rng, params, nrow, ncol)
        return test_elbo, sampled_images

    def train(epochs=3):
        enc_init_rng, dec_init_rng = random.split(random.key(2))
        _, init_encoder_params = ex.encoder_init(enc_init_rng, (batch_size, 28 * 28))
        _, init_decoder_params = ex.decoder_init(dec_init_rng, (batch_size, 10))
        opt_state = opt_init((init_encoder_params, init_decoder_params))
        elbos = [float(evaluate(opt_state, test_images)[0])]
        for epoch in range(epochs):
            opt_state = run_epoch(random.key(epoch), opt_state, train_images)
            test_elbo, sampled_images = evaluate(opt_state, test_images)
            elbos.append(float(test_elbo))
        return get_params(opt_state), elbos, sampled_images

    params, elbos, sampled = train()
    assert elbos[-1] > elbos[0], elbos  # the bound rises
    assert sampled.shape == (28 * ncol, 28 * nrow) and sampled.dtype == np.bool_  # image_grid transposes
    mu, sigmasq = (np.asarray(a, np.float64) for a in jit(ex.encode)(params[0], test_images))
    assert mu.shape == sigmasq.shape == (32, 10) and (sigmasq > 0).all()  # Softplus variances
    kl = -0.5 * np.sum(1 + np.log(sigmasq) - mu ** 2 - sigmasq)
    assert float(jit(ex.gaussian_kl)(mu.astype(np.float32), sigmasq.astype(np.float32))) == pytest.approx(kl, rel=1e-5)
    vecs = np.arange(6 * 784, dtype=np.float32).reshape(6, 784)
    grid = np.asarray(ex.image_grid(2, 3, jnp.asarray(vecs), (28, 28)))
    rows = [np.hstack([vecs[r * 3 + c].reshape(28, 28).T for c in range(3)][::-1]) for r in range(2)]
    np.testing.assert_array_equal(grid, np.vstack(rows).T)
    again = train()
    assert again[1] == elbos and np.array_equal(np.asarray(again[2]), np.asarray(sampled))


def test_differentially_private_sgd():
    """examples/differentially_private_sgd.py: vmap of a clipped per-example grad over a conv net, noised sums."""
    ex = load("differentially_private_sgd")
    images, labels = _mnist_like(6, seed=4)
    key = random.key(0)
    _, params = ex.init_random_params(key, (-1, 28, 28, 1))
    l2_norm_clip, batch_size = 0.05, 6
    batch = ex.shape_as_image(images, labels, dummy_dim=True)
    assert batch[0].shape == (6, 1, 28, 28, 1)
    # oracle: per-example gradients one example at a time (no vmap), clipped in NumPy, summed, averaged (the tests
    # jit what the script runs eagerly: each eager operation of a conv net compiles once, seconds in all)
    example_grad = jit(grad(ex.loss))
    per_example = [_leaves(example_grad(params, (batch[0][i], batch[1][i]))) for i in range(batch_size)]
    norms = [np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in gs)) for gs in per_example]
    assert min(norms) > l2_norm_clip  # every example is clipped
    expected = [sum(gs[k] / max(n / l2_norm_clip, 1.0) for gs, n in zip(per_example, norms)) / batch_size
                for k in range(len(per_example[0]))]
    # private_grad as the script runs it, under jit (one compilation: the noise multiplier is traced)
    private_grad = jit(ex.private_grad, static_argnums=5)
    rng = random.key(3)
    noiseless = _leaves(private_grad(params, batch, rng, l2_norm_clip, 0.0, batch_size))
    for got, want in zip(noiseless, expected):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-7)
    noisy = _leaves(private_grad(params, batch, rng, l2_norm_clip, 1.1, batch_size))
    rngs = random.split(rng, len(noisy))
    for k in (0, 1):  # the noise is each leaf's own normal draw, scaled (the first conv's; each shape compiles)
        draw = np.asarray(random.normal(rngs[k], noisy[k].shape))
        np.testing.assert_allclose(noisy[k] - noiseless[k], l2_norm_clip * 1.1 * draw / batch_size, rtol=1e-3,
                                   atol=1e-6)

    # the script's private_update, its jit left to the private_grad above (a second compilation costs seconds)
    opt_init, opt_update, get_params = optimizers.sgd(0.15)

    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        return opt_update(i, private_grad(params, batch, rng, 1.0, 0.1, batch_size), opt_state)

    @jit
    def evaluate(params, batch):
        return ex.loss(params, batch), ex.accuracy(params, batch), ex.predict(params, batch[0])

    opt_state, flat = opt_init(params), ex.shape_as_image(images, labels)
    losses = [float(evaluate(params, flat)[0])]
    for i in range(4):
        opt_state = private_update(key, i, opt_state, batch)
        losses.append(float(evaluate(get_params(opt_state), flat)[0]))
    assert losses[-1] < losses[0], losses
    _, acc, logits = evaluate(get_params(opt_state), flat)
    assert float(acc) == pytest.approx(_np_accuracy(np.asarray(logits), labels), abs=1e-6)


def test_advi():
    """examples/advi.py: vmap over split keys of an ELBO of scipy.stats.norm.logpdf, momentum on its gradient."""
    ex = load("advi")
    num_samples = 40  # the script's (with 8 the fit diverges to nan, under JAX too)

    @jit
    def objective(params, t):
        rng = random.key(t)
        return -ex.batch_elbo(ex.funnel_log_density, rng, params, num_samples)

    def np_logpdf(x, loc, scale):
        return -0.5 * np.log(2 * np.pi * scale ** 2) - (x - loc) ** 2 / (2 * scale ** 2)

    params = (jnp.array([0.3, -0.2]), jnp.array([0.1, -0.4]))
    mean, log_std = (np.asarray(p, np.float64) for p in params)
    samples = np.asarray(jax.vmap(ex.diag_gaussian_sample, in_axes=(0, None, None))(
        random.split(random.key(5), num_samples), *params), np.float64)
    terms = [np_logpdf(s[0], 0, np.exp(s[1])) + np_logpdf(s[1], 0, 1.35)
             - np.sum(np_logpdf(s, mean, np.exp(log_std))) for s in samples]  # a Python loop over the samples
    assert float(objective(params, 5)) == pytest.approx(-np.mean(terms), rel=1e-5)

    x_limits, y_limits, ticks = (-2, 2), (-4, 2), 7
    X, Y, Z = ex.mesh_eval(lambda x, p: jnp.exp(ex.diag_gaussian_logpdf(x, *p)), x_limits, y_limits, params, ticks)
    gx, gy = np.meshgrid(np.linspace(*x_limits, ticks), np.linspace(*y_limits, ticks))
    want = np.exp(np_logpdf(gx, mean[0], np.exp(log_std[0])) + np_logpdf(gy, mean[1], np.exp(log_std[1])))
    np.testing.assert_allclose(np.asarray(Z), want, rtol=1e-5, atol=1e-7)

    def fit(steps=30):
        opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)

        @jit
        def update(i, opt_state):
            params = get_params(opt_state)
            gradient = grad(objective)(params, i)
            return opt_update(i, gradient, opt_state)

        opt_state = opt_init((jnp.zeros(2), jnp.zeros(2)))
        values = []
        for t in range(steps):
            opt_state = update(t, opt_state)
            values.append(float(objective(get_params(opt_state), t)))
        return get_params(opt_state), values

    fitted, values = fit()
    assert np.mean(values[-5:]) < np.mean(values[:5]), values  # the negative bound falls (noisily)
    again, values_again = fit()
    assert values_again == values and all(np.array_equal(a, b) for a, b in zip(_leaves(fitted), _leaves(again)))


def test_spmd_mnist_classifier_fromscratch():
    """examples/spmd_mnist_classifier_fromscratch.py: an Explicit data mesh, donated replicated parameters."""
    ex = load("spmd_mnist_classifier_fromscratch")
    n = jax.device_count()
    images, labels = _mnist_like(16 * n, seed=5)
    mesh = jax.make_mesh((n,), ("batch",), axis_types=(AxisType.Explicit,))
    replicated_sharding, data_sharding = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    params = jax.device_put(ex.init_random_params(0.1, [784, 32, 10], rng=np.random.RandomState(0)),
                            replicated_sharding)
    batch = jax.device_put(images, data_sharding), jax.device_put(labels, data_sharding)
    losses, first = [], params
    for _ in range(3):
        losses.append(float(ex.loss(params, batch)))
        with jax.set_mesh(mesh):
            params = ex.train_step(params, batch)
    assert first[0][0].is_deleted()  # donate_argnums=0
    assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
    assert all(p.sharding.is_equivalent_to(replicated_sharding, p.ndim) for p in jax.tree_util.tree_leaves(params))
    sharded_images = jax.sharding.reshard(images, data_sharding)
    assert sharded_images.sharding.is_equivalent_to(data_sharding, 2)
    acc = ex.accuracy(params, (sharded_images, jax.sharding.reshard(labels, data_sharding)))
    assert float(acc) == pytest.approx(_np_accuracy(_np_mlp(params, images, np.tanh), labels), abs=1e-6)
