"""kiln.optim.experimental.aggregating (optax.experimental.aggregating) against NumPy: per-example gradients of a
small linear regression, averaged and accumulated over microbatches, their mean and sum of squared differences,
and the EMAs of mean and variance, eagerly and under kiln.jit. (test_against_optax_aggregating.py checks that
optax gives the same numbers, where it is installed.)"""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import optim
from kiln.optim import projections
from kiln.optim.experimental import aggregating as agg

RNG = np.random.default_rng(11)
N_MICRO, BATCH, D, K = 3, 5, 4, 2
XS = RNG.standard_normal((N_MICRO, BATCH, D)).astype(np.float32)
YS = RNG.standard_normal((N_MICRO, BATCH, K)).astype(np.float32)
W0 = RNG.standard_normal((D, K)).astype(np.float32)
B0 = RNG.standard_normal(K).astype(np.float32)
TOL = dict(rtol=2e-5, atol=1e-6)


def _np_per_example_grads(w, b, x, y):
    """Gradients of 0.5 * ||x_i @ w + b - y_i||^2 for each example i, in NumPy."""
    r = x @ w + b - y
    return {"w": np.einsum("nd,nk->ndk", x, r), "b": r}


def _loss(p, x, y):
    return 0.5 * jnp.sum((x @ p["w"] + p["b"] - y) ** 2)


PER_EXAMPLE = kiln.vmap(kiln.grad(_loss), in_axes=(None, 0, 0))
GRADS = [_np_per_example_grads(W0, B0, XS[i], YS[i]) for i in range(N_MICRO)]


def _k(tree):
    return {k: jnp.asarray(v) for k, v in tree.items()}


def _np(tree):
    return {k: np.asarray(v) for k, v in tree.items()}


def _maybe_jit(fn, jitted):
    return kiln.jit(fn) if jitted else fn


def test_per_example_gradients_match_numpy():
    g = PER_EXAMPLE({"w": jnp.asarray(W0), "b": jnp.asarray(B0)}, jnp.asarray(XS[0]), jnp.asarray(YS[0]))
    for k in g:
        np.testing.assert_allclose(np.asarray(g[k]), GRADS[0][k], **TOL)


@pytest.mark.parametrize("jitted", [False, True])
def test_average_per_element_updates(jitted):
    t = agg.average_per_element_updates()
    assert isinstance(t, agg.Aggregator)
    state = t.init(_k({"w": W0, "b": B0}))
    out, new_state = _maybe_jit(t.update, jitted)(_k(GRADS[0]), state)
    assert new_state == state
    for k in out:
        np.testing.assert_allclose(np.asarray(out[k]), GRADS[0][k].mean(0), **TOL)


def test_average_over_several_axes():
    g = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for axis in [(0, 1), [0, 1]]:
        out, _ = agg.average_per_element_updates(axis).update({"g": jnp.asarray(g)}, optim.EmptyState())
        np.testing.assert_allclose(np.asarray(out["g"]), g.mean((0, 1)), **TOL)
    assert agg.get_batch_size_from_per_elt_updates({"g": g}, (0, 1)) == 6
    assert agg.get_batch_size_from_per_elt_updates({"g": g, "h": g[:, 0]}, 0) == 2


@pytest.mark.parametrize("jitted", [False, True])
def test_accumulate_avg_updates(jitted):
    t = agg.accumulate_avg_updates(3)
    means = [_np(GRADS[i]) for i in range(N_MICRO)]
    means = [{k: v.mean(0) for k, v in m.items()} for m in means]
    state = t.init(_k(means[0]))
    update = _maybe_jit(t.update, jitted)
    for _ in range(2):  # the accumulator resets after each output
        for i, m in enumerate(means):
            out, state = update(_k(m), state)
            done = i == N_MICRO - 1
            assert bool(state.ready) == done
            assert int(state.micro_step) == (0 if done else i + 1)
            for k in out:
                want = np.mean([mm[k] for mm in means], 0) if done else np.zeros_like(m[k])
                np.testing.assert_allclose(np.asarray(out[k]), want, **TOL)
    assert agg.accumulate_avg_updates(1).init({"w": W0}) == optim.EmptyState()


@pytest.mark.parametrize("jitted", [False, True])
def test_average_incrementally_updates(jitted):
    t = agg.average_incrementally_updates(per_elt_axis=0, accumulation_steps=N_MICRO)
    assert isinstance(t, agg.Aggregator)
    assert not isinstance(agg.average_incrementally_updates(None, 2), agg.Aggregator)
    state = t.init(_k({"w": W0, "b": B0}))
    update = _maybe_jit(t.update, jitted)
    for g in GRADS:
        out, state = update(_k(g), state)
    for k in out:
        want = np.concatenate([g[k] for g in GRADS]).mean(0)
        np.testing.assert_allclose(np.asarray(out[k]), want, **TOL)


def _np_mean_ssd(grads):
    allg = {k: np.concatenate([g[k] for g in grads]) for k in grads[0]}
    mean = {k: v.mean(0) for k, v in allg.items()}
    return mean, {k: ((v - mean[k]) ** 2).sum(0) for k, v in allg.items()}, len(allg["b"])


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("steps", [1, N_MICRO])
def test_mean_and_sum_sq_diff(steps, jitted):
    t = agg.get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis=0, accumulation_steps=steps)
    state = t.init(_k({"w": W0, "b": B0}))
    update = _maybe_jit(t.update, jitted)
    for i in range(steps):
        (mean, aux), state = update(_k(GRADS[i]), state)
        if i < steps - 1:  # not ready: zeros, and the accumulators in the state
            assert not bool(state.ready) and int(aux["sample_size"]) == 0
            assert all(not np.asarray(v).any() for v in mean.values())
    want_mean, want_ssd, n = _np_mean_ssd(GRADS[:steps])
    assert int(aux["sample_size"]) == n
    for k in mean:
        np.testing.assert_allclose(np.asarray(mean[k]), want_mean[k], **TOL)
        np.testing.assert_allclose(np.asarray(aux["sum_sq_diff_grads"][k]), want_ssd[k], **TOL)


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("steps", [1, 2])
def test_add_mean_variance_to_opt(steps, jitted):
    decay = 0.8
    opt = agg.add_mean_variance_to_opt(optim.sgd(0.1), ema_decay=decay, per_elt_axis=0, accumulation_steps=steps)
    params = {"w": jnp.asarray(W0), "b": jnp.asarray(B0)}
    state = opt.init(params)
    update = _maybe_jit(opt.update, jitted)
    w, b = W0.copy(), B0.copy()
    ema_m = {k: np.zeros_like(v) for k, v in (("w", W0), ("b", B0))}
    ema_v = {k: np.zeros_like(v) for k, v in ema_m.items()}
    outputs = 0
    for i in range(4):
        x, y = XS[i % N_MICRO], YS[i % N_MICRO]
        grads = PER_EXAMPLE(params, jnp.asarray(x), jnp.asarray(y))
        updates, state = update(grads, state, params)
        params = optim.apply_updates(params, updates)
        if (i + 1) % steps:
            continue
        # NumPy: the params only move once per `steps` calls, by the mean over the accumulated microbatches
        gs = [_np_per_example_grads(w, b, XS[j % N_MICRO], YS[j % N_MICRO]) for j in range(i + 1 - steps, i + 1)]
        mean, ssd, n = _np_mean_ssd(gs)
        for k in mean:
            ema_m[k] = (1 - decay) * mean[k] + decay * ema_m[k]
            ema_v[k] = (1 - decay) * ssd[k] / (n - 1) + decay * ema_v[k]
        w, b = w - 0.1 * mean["w"], b - 0.1 * mean["b"]
        outputs += 1
    np.testing.assert_allclose(np.asarray(params["w"]), w, **TOL)
    np.testing.assert_allclose(np.asarray(params["b"]), b, **TOL)
    m_hat, v_hat = agg.get_unbiased_mean_and_variance_ema(state)
    for k in m_hat:
        np.testing.assert_allclose(np.asarray(m_hat[k]), ema_m[k] / (1 - decay ** outputs), **TOL)
        np.testing.assert_allclose(np.asarray(v_hat[k]), ema_v[k] / (1 - decay ** outputs), **TOL)


def test_process_docstring_example():
    # optax's example: clip each example's gradient to the unit l2 ball, average, then adam
    clip_per_sample = kiln.vmap(projections.projection_l2_ball, 0)

    def average_grads(gs):
        return kiln.tree_util.tree_map(lambda g: jnp.mean(g, 0), gs)
    opt = agg.process(optim.stateless(lambda gs, _: clip_per_sample(gs)),
                      agg.Aggregator(init=optim.init_empty_state, update=lambda gs, s, _: (average_grads(gs), s)),
                      optim.adam(learning_rate=1e-1))
    assert isinstance(opt, agg.Aggregator)

    def fun(w, x, y):
        return jnp.sum((x.dot(w) - y) ** 2)
    xs, ys = jnp.asarray(XS[0]), jnp.asarray(YS[0])
    params = jnp.asarray(W0)
    state = opt.init(params)
    value_and_grads = kiln.vmap(kiln.value_and_grad(fun), (None, 0, 0))
    losses = []
    for _ in range(3):
        batch_losses, grads = value_and_grads(params, xs, ys)
        updates, state = opt.update(grads, state)
        params = optim.apply_updates(params, updates)
        losses.append(float(jnp.mean(batch_losses)))
    assert losses[0] > losses[1] > losses[2]
    # the first adam step moves each coordinate by about the learning rate
    first = np.asarray(optim.adam(1e-1).update(average_grads(value_and_grads(jnp.asarray(W0), xs, ys)[1]),
                                               optim.adam(1e-1).init(W0))[0])
    np.testing.assert_allclose(np.abs(first), 0.1, rtol=1e-3)


def test_process_postprocessor_waits_until_ready():
    opt = agg.process(optim.identity(), agg.average_incrementally_updates(0, 2), optim.sgd(1.0))
    state = opt.init(_k({"w": W0, "b": B0}))
    out, state = opt.update(_k(GRADS[0]), state)
    assert all(not np.asarray(v).any() for v in out.values())
    out, state = opt.update(_k(GRADS[1]), state)
    for k in out:
        want = -np.concatenate([GRADS[0][k], GRADS[1][k]]).mean(0)
        np.testing.assert_allclose(np.asarray(out[k]), want, **TOL)
    # a plain transformation as the aggregator gives a plain (extra-args) transformation
    plain = agg.process(optim.identity(), agg.accumulate_avg_updates(2), optim.sgd(1.0))
    assert isinstance(plain, optim.GradientTransformationExtraArgs) and not isinstance(plain, agg.Aggregator)


def test_errors():
    with pytest.raises(ValueError, match="accumulation_steps must be larger than or equal to 1"):
        agg.accumulate_avg_updates(0)
    with pytest.raises(ValueError, match="accumulation_steps must be larger than or equal to 1"):
        agg.get_per_element_mean_and_sum_sq_diff_grads(0, accumulation_steps=0)
    bad = {"w": np.zeros((3, 2), np.float32), "b": np.zeros((4,), np.float32)}
    with pytest.raises(ValueError, match=r"same batch size.*Got: \[4, 3\]"):
        agg.get_batch_size_from_per_elt_updates(bad, 0)
    t = agg.get_per_element_mean_and_sum_sq_diff_grads(0)
    with pytest.raises(ValueError, match="same batch size"):
        t.update(_k(bad), t.init(None))
    adam = optim.adam(0.1)
    with pytest.raises(ValueError, match="must hold a PerElementMeanAndVarianceEMAState"):
        agg.get_unbiased_mean_and_variance_ema(adam.init({"w": jnp.asarray(W0)}))


def test_public_names():
    assert set(agg.__all__) == {n for n in dir(agg) if not n.startswith("_")}
    from kiln.optim import experimental
    assert experimental.aggregating is agg and experimental.__all__ == ["aggregating"]
