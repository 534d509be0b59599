"""kiln.optim's other optimizers, scaling rules and clipping transforms (adafactor, sign methods, lars, sm3,
fromage, rprop, noisy and Polyak sgd, DoG, block and unit-wise clipping) against their equations written in NumPy
(float64), eagerly and under kiln.jit, and their errors."""
import numpy as np
import pytest
from _steps import replay, run

import kiln
import kiln.numpy as jnp
from kiln import optim

RNG = np.random.default_rng(7)
# a matrix, a vector and a rank-3 array: the three cases of the factored and per-axis rules
P0 = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32),
      "c": RNG.standard_normal((2, 5, 3)).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in P0.items()} for _ in range(6)]
VALUES = [3.0 - 0.4 * i for i in range(len(GRADS))]  # the losses given to Polyak's step size


def _run(opt, jit=False, with_value=False):
    value = (lambda i, params: {"value": jnp.asarray(np.float32(VALUES[i]))}) if with_value else None
    return run(opt, P0, GRADS, jit, extra=value)


def _ref(step, whole_tree=False):
    """Runs a NumPy update over the steps. Leaf by leaf: ``step(k, g, p, t, st) -> (u, st)``, t the 1-based
    step; ``whole_tree``: ``step(g, p, t, st) -> (u, st)`` on dicts (rules that couple the leaves)."""
    return replay(step, P0, GRADS, whole_tree)


def _check(opt, step, whole_tree=False, with_value=False, rtol=2e-5, atol=2e-6):
    want = _ref(step, whole_tree)
    for jit in (False, True):
        got = _run(opt, jit, with_value)
        for t, (w, g) in enumerate(zip(want, got), 1):
            for k in P0:
                np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol, err_msg=f"step {t}, {k}, jit={jit}")


def _rms(x):
    return np.sqrt(np.mean(x * x))


def _norm(x):
    return np.sqrt(np.sum(x * x))


# -- adafactor ----------------------------------------------------------------------------------------------------

def _factored_second_moment(g, st, t, min_dim, eps=1e-30, offset=0):
    """Adafactor's estimate of E[g**2] at step t: full for vectors (or small matrices), else the outer product of
    row and column means over their mean (the two largest axes; Shazeer and Stern 2018, Alg. 4)."""
    decay = 1.0 - (t - offset) ** -0.8
    g2 = g * g + eps
    big = sorted(range(g.ndim), key=lambda a: g.shape[a])[-2:] if g.ndim >= 2 else []
    if len(big) < 2 or g.shape[big[0]] < min_dim:
        st["v"] = decay * st.get("v", 0.0) + (1 - decay) * g2
        return st["v"]
    second, largest = big
    st["r"] = decay * st.get("r", 0.0) + (1 - decay) * g2.mean(axis=largest, keepdims=True)
    st["c"] = decay * st.get("c", 0.0) + (1 - decay) * g2.mean(axis=second, keepdims=True)
    return st["r"] * st["c"] / st["r"].mean(axis=second, keepdims=True)


def test_adafactor_factored_and_not():
    def step(k, g, p, t, st):
        u = g / np.sqrt(_factored_second_moment(g, st, t, min_dim=2))
        u = u / max(1.0, _rms(u))  # clipping_threshold=1
        return -u * max(_rms(p), 1e-3), st
    _check(optim.adafactor(min_dim_size_to_factor=2), step)


def test_adafactor_learning_rate_momentum_weight_decay():
    # min_dim_size_to_factor=3: "w" (4, 3) and "c" (2, 5, 3) factored, the vector not
    def step(k, g, p, t, st):
        u = g / np.sqrt(_factored_second_moment(g, st, t, min_dim=3, offset=-2))
        u = 0.05 * (u / max(1.0, _rms(u) / 0.5)) * max(_rms(p), 1e-3)
        st["m"] = 0.9 * st.get("m", 0.0) + 0.1 * u
        return -(st["m"] + 0.01 * p), st
    _check(optim.adafactor(0.05, min_dim_size_to_factor=3, decay_offset=-2, clipping_threshold=0.5, momentum=0.9,
                           weight_decay_rate=0.01), step)


def test_adafactor_without_factoring_clipping_or_parameter_scale():
    def step(k, g, p, t, st):
        return -0.05 * g / np.sqrt(_factored_second_moment(g, st, t, min_dim=10 ** 9)), st
    _check(optim.adafactor(0.05, factored=False, clipping_threshold=None, multiply_by_parameter_scale=False), step)


def test_factored_state_layout():
    state = optim.scale_by_factored_rms(min_dim_size_to_factor=2).init({k: jnp.asarray(v) for k, v in P0.items()})
    assert isinstance(state, optim.FactoredState) and state._fields == ("count", "v_row", "v_col", "v")
    shapes = {f: {k: tuple(v.shape) for k, v in getattr(state, f).items()} for f in ("v_row", "v_col", "v")}
    # a leaf not factored keeps a (1,) placeholder in v_row and v_col, a factored one in v
    assert shapes == {"v_row": {"w": (3,), "b": (1,), "c": (2, 3)}, "v_col": {"w": (4,), "b": (1,), "c": (2, 5)},
                      "v": {"w": (1,), "b": (3,), "c": (1,)}}


# -- sign methods, lars, fromage ------------------------------------------------------------------------------------

def test_sign_sgd_and_signum():
    _check(optim.sign_sgd(0.1), lambda k, g, p, t, st: (-0.1 * np.sign(g), st))

    def signum(k, g, p, t, st):
        st["m"] = 0.8 * st.get("m", 0.0) + 0.2 * g
        return -0.1 * np.sign(st["m"]), st
    _check(optim.signum(0.1, beta=0.8), signum)


def _trust_ratio(u, p, coefficient=1.0, eps=0.0, min_norm=0.0):
    pn, un = max(_norm(p), min_norm), max(_norm(u), min_norm)
    return 1.0 if pn == 0 or un == 0 else coefficient * pn / (un + eps)


@pytest.mark.parametrize("nesterov", [False, True])
def test_lars(nesterov):
    def step(k, g, p, t, st):
        u = g + (0.01 * p if k != "b" else 0.0)
        u = -0.1 * u * (_trust_ratio(u, p, 0.001) if k != "c" else 1.0)
        st["m"] = u + 0.9 * st.get("m", 0.0)
        return (u + 0.9 * st["m"] if nesterov else st["m"]), st
    opt = optim.lars(0.1, weight_decay=0.01, weight_decay_mask={"w": True, "b": False, "c": True},
                     trust_ratio_mask={"w": True, "b": True, "c": False}, nesterov=nesterov)
    _check(opt, step)


def test_fromage_constant_and_schedule():
    def step_for(lr_at):
        def step(k, g, p, t, st):
            lr = lr_at(t - 1)
            mult = 1 / np.sqrt(1 + lr ** 2)
            return -lr * mult * g * _trust_ratio(g, p, min_norm=1e-6) + (mult - 1) * p, st
        return step
    _check(optim.fromage(0.1), step_for(lambda c: 0.1))
    _check(optim.fromage(optim.linear_schedule(0.2, 0.05, 4)), step_for(lambda c: 0.2 - 0.15 * min(c, 4) / 4))


# -- sm3, rprop -----------------------------------------------------------------------------------------------------

def _sm3_step(lr, b1, b2, eps=1e-8):
    def step(k, g, p, t, st):
        axes = range(g.ndim)
        if "mu" not in st:
            st["mu"], st["nu"] = [np.zeros(n) for n in g.shape], np.zeros_like(g)
        cover = [m.reshape([-1 if a == i else 1 for a in axes]) for i, m in enumerate(st["mu"])]
        acc = (1.0 - b2 if b2 != 1 else 1.0) * g * g + b2 * np.minimum.reduce(np.broadcast_arrays(*cover))
        scaled = np.where(acc > 0, g / np.sqrt(np.where(acc > 0, acc, 1.0) + eps), 0.0)
        st["nu"] = (1 - b1) * scaled + b1 * st["nu"]
        st["mu"] = [acc.max(axis=tuple(a for a in axes if a != i)) for i in axes]
        return -lr * st["nu"], st
    return step


def test_sm3():
    _check(optim.sm3(0.1), _sm3_step(0.1, 0.9, 1.0))
    _check(optim.chain(optim.scale_by_sm3(0.5, 0.95, 1e-6), optim.scale(-0.2)), _sm3_step(0.2, 0.5, 0.95, 1e-6))


def test_sm3_state_holds_one_accumulator_per_axis():
    state = optim.scale_by_sm3().init({k: jnp.asarray(v) for k, v in P0.items()})
    assert isinstance(state, optim.ScaleBySM3State) and state._fields == ("mu", "nu")
    assert {k: [tuple(m.shape) for m in v] for k, v in state.mu.items()} == {
        "w": [(4,), (3,)], "b": [(3,)], "c": [(2,), (5,), (3,)]}


def test_rprop():
    # as optax 0.2.8: each step emits the previous step's step_size * sign(g) (zero at a sign flip)
    def step(k, g, p, t, st):
        if "s" not in st:
            st["s"], st["prev"] = np.full_like(g, 0.1), np.zeros_like(g)
        prod = g * st["prev"]
        grown = np.clip(st["s"] * np.where(prod > 0, 1.2, 0.5), 1e-6, 50.0)
        st["s"] = np.where(prod == 0, st["s"], grown)
        out = np.where(prod < 0, 0.0, st["prev"])
        st["prev"] = np.where(prod < 0, 0.0, st["s"] * np.sign(g))
        return -out, st
    _check(optim.rprop(0.1), step)


def test_rprop_grows_and_shrinks_step_sizes():
    t = optim.scale_by_rprop(0.1, max_step_size=0.13)
    state = t.init(jnp.zeros(2))
    for g in ([1.0, 1.0], [1.0, -1.0], [1.0, 1.0]):
        _, state = t.update(jnp.asarray(g), state)
    # first element: 0.1 (first step) -> 0.12 -> 0.13 (capped); second: 0.1 -> 0.05 (flip) -> 0.05 (no sign)
    np.testing.assert_allclose(np.asarray(state.step_sizes), [0.13, 0.05], rtol=1e-6)


# -- noise, Polyak, DoG ---------------------------------------------------------------------------------------------

def test_noisy_sgd_adds_annealed_noise_from_its_key():
    key = kiln.random.key(42)
    opt = optim.noisy_sgd(0.1, eta=0.3, gamma=0.55, key=key)
    got = _run(opt)
    # the noise: per step, split the key into (next, sample), then one normal draw per leaf, in leaf order
    params = {k: v.astype(np.float64) for k, v in P0.items()}
    for t, g in enumerate(GRADS, 1):
        key, sample = kiln.random.split(key)
        keys = kiln.random.split(sample, len(P0))
        std = np.sqrt(0.3 / t ** 0.55)
        for sub, k in zip(keys, sorted(P0)):
            noise = np.asarray(kiln.random.normal(sub, P0[k].shape, jnp.float32), np.float64)
            params[k] = params[k] - 0.1 * (g[k] + std * noise)
            np.testing.assert_allclose(got[t - 1][k], params[k], rtol=2e-5, atol=2e-6)


def test_noisy_sgd_keys_and_seeds():
    want = _run(optim.noisy_sgd(0.1, key=kiln.random.key(3)))[-1]
    for same in (optim.noisy_sgd(0.1, key=3), optim.noisy_sgd(0.1, seed=3),
                 optim.noisy_sgd(0.1, key=kiln.random.PRNGKey(3))):  # (raw key data too)
        for k in P0:
            np.testing.assert_array_equal(_run(same)[-1][k], want[k])
    other = _run(optim.noisy_sgd(0.1, key=4))[-1]
    assert not np.array_equal(other["w"], want["w"])
    state = optim.add_noise(0.1, 0.5, 0).init(P0)
    assert isinstance(state, optim.AddNoiseState) and state._fields == ("count", "rng_key")


@pytest.mark.parametrize("variant", ["sps", "sps+"])
def test_polyak_sgd(variant):
    f_min, scaling, max_lr, eps = 2.5, 0.5, 0.8, 1e-3

    def step(g, p, t, st):
        u = {k: -scaling * v for k, v in g.items()}
        sq = sum(np.sum(v * v) for v in u.values())
        gap = VALUES[t - 1] - f_min
        gap = max(gap, 0.0) if variant == "sps+" else gap
        s = 0.0 if sq + eps <= np.finfo(float).eps else min(gap / (sq + eps), max_lr)
        return {k: s * v for k, v in u.items()}, st
    opt = optim.polyak_sgd(max_lr, scaling, f_min, eps, variant)
    assert isinstance(opt, optim.GradientTransformationExtraArgs)
    _check(opt, step, whole_tree=True, with_value=True)


def test_polyak_no_step_for_a_vanishing_gradient():
    t = optim.scale_by_polyak()
    u, _ = t.update({"a": jnp.zeros(3)}, t.init(None), value=1.0)
    np.testing.assert_array_equal(np.asarray(u["a"]), np.zeros(3))


def test_scale_by_distance_over_gradients():
    def step(k, g, p, t, st):
        if "p0" not in st:
            st["p0"], st["d"], st["s"] = p.copy(), 1e-4 * (1 + _norm(p)), 0.0
        st["d"] = max(st["d"], _norm(p - st["p0"]))
        st["s"] += np.sum(g * g)
        return -0.5 * st["d"] / np.sqrt(st["s"] + 1e-8) * g, st
    _check(optim.chain(optim.scale_by_distance_over_gradients(reps_rel=1e-4, global_scale=0.5), optim.scale(-1.0)),
           step)


# -- block-wise scaling and clipping, centring, normalizing -------------------------------------------------------

def test_param_block_norm_and_rms_scaling_and_block_rms_clipping():
    _check(optim.chain(optim.scale_by_param_block_norm(), optim.scale(-0.1)),
           lambda k, g, p, t, st: (-0.1 * g * max(_norm(p), 1e-3), st))
    _check(optim.chain(optim.clip_by_block_rms(0.7), optim.scale_by_param_block_rms(0.01), optim.scale(-0.1)),
           lambda k, g, p, t, st: (-0.1 * g / max(1.0, _rms(g) / 0.7) * max(_rms(p), 0.01), st))


def test_param_block_scaling_floors_at_min_scale():
    t = optim.scale_by_param_block_rms(0.5)
    u, _ = t.update({"a": jnp.ones(2)}, t.init(None), {"a": jnp.full(2, 0.1)})
    np.testing.assert_allclose(np.asarray(u["a"]), [0.5, 0.5])
    t = optim.scale_by_param_block_norm(0.5)
    u, _ = t.update({"a": jnp.ones(2)}, t.init(None), {"a": jnp.zeros(2)})
    np.testing.assert_allclose(np.asarray(u["a"]), [0.5, 0.5])


def _unit_norm(x):
    axes = {1: None, 2: (0,), 3: (0,), 4: (0, 1, 2), 5: (0, 1, 2, 3)}[x.ndim]
    return np.broadcast_to(np.sqrt(np.sum(x * x, axis=axes, keepdims=True)), x.shape)


def test_adaptive_grad_clip():
    def step(k, g, p, t, st):
        gn, limit = _unit_norm(g), 0.05 * np.maximum(_unit_norm(p), 1e-3)
        return -0.1 * np.where(gn < limit, g, g * limit / np.maximum(gn, 1e-6)), st
    _check(optim.chain(optim.adaptive_grad_clip(0.05), optim.sgd(0.1)), step)


def test_adaptive_grad_clip_floors_the_parameter_norm_at_eps():
    t = optim.adaptive_grad_clip(0.5, eps=0.1)
    u, _ = t.update({"w": jnp.full((2, 2), 3.0)}, t.init(None), {"w": jnp.zeros((2, 2))})
    # each column (unit) clipped to norm 0.5 * 0.1: elements 0.05 / sqrt(2)
    np.testing.assert_allclose(np.asarray(u["w"]), np.full((2, 2), 0.05 / np.sqrt(2)), rtol=1e-6)


def test_centralize_and_normalize_by_update_norm():
    def centred(k, g, p, t, st):
        return -0.1 * (g - g.mean(axis=tuple(range(1, g.ndim)), keepdims=True) if g.ndim > 1 else g), st
    _check(optim.chain(optim.centralize(), optim.sgd(0.1)), centred)

    def normalized(g, p, t, st):
        n = np.sqrt(sum(np.sum(v * v) for v in g.values()))
        return {k: -0.3 * v / (n + 1e-6) for k, v in g.items()}, st
    _check(optim.normalize_by_update_norm(-0.3), normalized, whole_tree=True)


def test_keep_params_nonnegative():
    def step(k, g, p, t, st):
        u = -0.5 * g
        return np.where(p + u < 0, -p, u), st
    # (the first step moves the negative initial parameters to 0; from then on none goes below 0)
    _check(optim.chain(optim.sgd(0.5), optim.keep_params_nonnegative()), step)
    assert min(v.min() for v in _run(optim.chain(optim.sgd(0.5), optim.keep_params_nonnegative()))[-1].values()) >= 0


# -- unit-wise norms, per-example clipping, gradient scaling --------------------------------------------------------

@pytest.mark.parametrize("shape", [(3,), (1, 4), (4, 3), (2, 3, 4), (2, 2, 3, 4), (2, 2, 2, 3, 2)])
def test_unitwise_norm(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    want = _unit_norm(np.squeeze(x)).reshape(shape) if shape == (1, 4) else _unit_norm(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(optim.transforms.unitwise_norm(jnp.asarray(x))), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(optim.transforms.unitwise_norm(jnp.asarray(x), axis=-1)),
                               np.broadcast_to(np.sqrt(np.sum(x.astype(np.float64) ** 2, -1, keepdims=True)), shape),
                               rtol=1e-6)


def test_unitwise_clip():
    g, norm, limit = jnp.asarray([3.0, 1.0]), jnp.asarray([5.0, 1.0]), jnp.asarray([2.5, 2.0])
    np.testing.assert_allclose(np.asarray(optim.transforms.unitwise_clip(norm, limit, g)), [1.5, 1.0])


def _per_example(grads, clip):
    norms = np.sqrt(sum(np.sum(v.reshape(len(v), -1).astype(np.float64) ** 2, axis=1) for v in grads.values()))
    mult = np.minimum(clip / norms, 1.0)
    return {k: np.tensordot(mult, v.astype(np.float64), axes=1) for k, v in grads.items()}, int(np.sum(mult < 1))


@pytest.mark.parametrize("clip", [0.5, 2.0, 1e6])
@pytest.mark.parametrize("jit", [False, True])
def test_per_example_clipping(clip, jit):
    grads = {"a": RNG.standard_normal((5, 4, 3)).astype(np.float32),
             "b": RNG.standard_normal((5, 2)).astype(np.float32)}
    maybe_jit = kiln.jit if jit else (lambda f: f)
    got, n = maybe_jit(optim.per_example_global_norm_clip)({k: jnp.asarray(v) for k, v in grads.items()}, clip)
    want, want_n = _per_example(grads, clip)
    assert int(n) == want_n
    for k in grads:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=2e-5, atol=2e-6)
    for uniform in (True, False):
        got, n = maybe_jit(lambda g, u=uniform: optim.per_example_layer_norm_clip(g, clip, u))(
            {k: jnp.asarray(v) for k, v in grads.items()})
        sizes = {k: v[0].size for k, v in grads.items()}
        for k in grads:
            share = 0.5 if uniform else sizes[k] / sum(sizes.values())
            want, want_n = _per_example({k: grads[k]}, clip * np.sqrt(share))
            np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=2e-5, atol=2e-6)
            assert int(n[k]) == want_n


def test_scale_gradient():
    def loss(x, s):
        return jnp.sum(optim.scale_gradient({"x": x}, s)["x"] ** 2)
    x = jnp.asarray([1.0, -2.0])
    for s in (3.0, 1.0, 0.0, jnp.asarray(-0.5)):
        np.testing.assert_allclose(np.asarray(kiln.grad(loss)(x, s)), 2 * np.asarray(x) * float(s))
        np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(loss))(x, s)), 2 * np.asarray(x) * float(s))
    np.testing.assert_array_equal(np.asarray(optim.scale_gradient(x, 3.0)), np.asarray(x))


# -- a jitted training step -------------------------------------------------------------------------------------------

def test_jitted_training_step_with_adafactor_and_agc():
    target = RNG.standard_normal((4, 3)).astype(np.float32)

    def loss(p):
        return jnp.mean((p["w"] - target) ** 2)
    opt = optim.chain(optim.adaptive_grad_clip(0.5), optim.adafactor(0.1, min_dim_size_to_factor=2))

    @kiln.jit
    def train_step(params, state):
        value, grads = kiln.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value
    params = {"w": jnp.asarray(P0["w"])}
    state = opt.init(params)
    first = float(loss(params))
    for _ in range(30):
        params, state, _ = train_step(params, state)
    assert float(loss(params)) < 0.5 * first
    assert int(state[1][0].count) == 30


def test_jitted_training_step_with_polyak_value():
    def loss(p):
        return jnp.sum((p["w"] - 1.0) ** 2)
    opt = optim.polyak_sgd()

    @kiln.jit
    def train_step(params, state):
        value, grads = kiln.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params, value=value)
        return optim.apply_updates(params, updates), state
    params, state = {"w": jnp.zeros(3)}, opt.init({"w": jnp.zeros(3)})
    params, state = train_step(params, state)
    # the Polyak step on a quadratic with minimum 0 halves the distance: 0.5 * (1 - 0) away from 1
    np.testing.assert_allclose(np.asarray(params["w"]), [0.5, 0.5, 0.5], rtol=1e-6)


# -- errors ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: optim.scale_by_factored_rms(), lambda: optim.adafactor(), lambda: optim.scale_by_param_block_rms(),
    lambda: optim.scale_by_param_block_norm(), lambda: optim.adaptive_grad_clip(0.1),
    lambda: optim.keep_params_nonnegative(), lambda: optim.scale_by_distance_over_gradients()])
def test_transformations_that_need_params_say_so(make):
    t = make()
    params = {"w": jnp.ones((3, 2))}
    with pytest.raises(ValueError, match=r"update needs the params; call optimizer.update\(grads, state, params\)"):
        t.update(params, t.init(params))


def test_polyak_needs_the_loss_value_and_a_known_variant():
    t = optim.polyak_sgd()
    params = {"w": jnp.ones(2)}
    with pytest.raises(TypeError, match=r"scale_by_polyak: update needs the loss .* value=loss"):
        t.update(params, t.init(params), params)
    with pytest.raises(ValueError, match="variant must be 'sps' or 'sps\\+', got 'sps-'"):
        optim.scale_by_polyak(variant="sps-")


def test_sm3_rejects_scalar_and_complex_params():
    with pytest.raises(ValueError, match=r"scale_by_sm3: .*cannot scale a scalar parameter; give scalars shape"):
        optim.sm3(0.1).init({"s": jnp.asarray(1.0)})
    with pytest.raises(ValueError, match="scale_by_sm3: complex parameters are not supported"):
        optim.sm3(0.1).init({"z": jnp.ones(2, jnp.complex64)})


def test_sm3_update_of_another_shape():
    t = optim.scale_by_sm3()
    with pytest.raises(ValueError, match=r"scale_by_sm3: an update of shape \(2, 2, 2\) meets a state made for 2"):
        t.update(jnp.ones((2, 2, 2)), t.init(jnp.ones((2, 2))))


def test_sm3_and_rprop_take_constant_learning_rates():
    with pytest.raises(TypeError, match=r"sm3: learning_rate must be a number \(as optax's, it takes no schedule\)"):
        optim.sm3(optim.constant_schedule(0.1))
    with pytest.raises(TypeError, match="scale_by_rprop: learning_rate must be a number"):
        optim.rprop(lambda count: 0.1)


def test_add_noise_key_errors():
    with pytest.raises(ValueError, match="add_noise: give either key or seed"):
        optim.add_noise(0.1, 0.5, key=1, seed=2)
    with pytest.raises(TypeError, match=r"add_noise: key must be a random key \(kiln.random.key\(seed\)\) or an int"):
        optim.noisy_sgd(0.1, key="0")
    with pytest.raises(TypeError, match="add_noise: key must be .* of dtype float32 and shape"):
        optim.add_noise(0.1, 0.5, key=jnp.zeros(2))


def test_unitwise_errors():
    with pytest.raises(ValueError, match=r"unitwise_norm: no default units for an array of shape \(1, 2, 1, 2, 1, 2\)"
                                         r".*pass axis="):
        optim.transforms.unitwise_norm(jnp.ones((1, 2, 1, 2, 1, 2)))
    with pytest.raises(ValueError, match=r"unitwise_clip: g_norm and grad must have the same shape, got \(2,\) and"):
        optim.transforms.unitwise_clip(jnp.ones(2), jnp.ones(2), jnp.ones((2, 2)))


@pytest.mark.parametrize("grads", [{"a": jnp.ones(()), "b": jnp.ones(3)}, {"a": jnp.ones((4, 2)), "b": jnp.ones(3)}])
def test_per_example_clipping_needs_a_common_batch_axis(grads):
    for fn in (optim.per_example_global_norm_clip, optim.per_example_layer_norm_clip):
        with pytest.raises(ValueError, match=f"{fn.__name__}: expects per-example gradients, every leaf with the "
                                             "batch on axis 0"):
            fn(grads, 1.0)


def test_state_aliases_are_empty_state():
    for name in ("ScaleState", "ClipState", "ClipByGlobalNormState", "AddDecayedWeightsState",
                 "AdaptiveGradClipState", "NonNegativeParamsState"):
        assert getattr(optim, name) is optim.EmptyState
