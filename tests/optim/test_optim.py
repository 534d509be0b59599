"""kiln.optim against its update equations written in NumPy, schedules against their formulas."""
import math

import numpy as np
import pytest
from _steps import replay, run

import kiln
import kiln.numpy as jnp
from kiln import optim

RNG = np.random.default_rng(0)
P0 = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in P0.items()} for _ in range(4)]


def _run(opt, jit=False):
    return run(opt, P0, GRADS, jit)


def _ref(step):
    """Runs a NumPy update ``step(k, g, p, t, st) -> (u, st)`` leaf by leaf (t = 1-based step)."""
    return replay(step, P0, GRADS)


def _check(opt, step, rtol=2e-5, atol=2e-6):
    want = _ref(step)
    for jit in (False, True):
        got = _run(opt, jit)
        for w, g in zip(want, got):
            for k in P0:
                np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol)


def test_sgd_plain_momentum_nesterov():
    _check(optim.sgd(0.1), lambda k, g, p, t, st: (-0.1 * g, st))

    def mom(nesterov):
        def step(k, g, p, t, st):
            tr = g + 0.9 * st.get("tr", 0.0)
            return -0.1 * (g + 0.9 * tr if nesterov else tr), {"tr": tr}
        return step
    _check(optim.sgd(0.1, momentum=0.9), mom(False))
    _check(optim.sgd(0.1, momentum=0.9, nesterov=True), mom(True))


def _adam_step(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, mask=None, nesterov=False):
    def step(k, g, p, t, st):
        m = (1 - b1) * g + b1 * st.get("m", 0.0)
        v = (1 - b2) * g * g + b2 * st.get("v", 0.0)
        mh = (b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1 ** t)) if nesterov else m / (1 - b1 ** t)
        u = mh / (np.sqrt(v / (1 - b2 ** t)) + eps)
        if mask is None or mask[k]:
            u = u + wd * p
        rate = lr(t - 1) if callable(lr) else lr
        return -rate * u, {"m": m, "v": v}
    return step


def test_adam_and_adamw_with_mask_and_schedule():
    _check(optim.adam(0.05), _adam_step(0.05))
    _check(optim.adam(0.05, b1=0.8, b2=0.99, nesterov=True), _adam_step(0.05, 0.8, 0.99, nesterov=True))
    _check(optim.adamw(0.05, weight_decay=0.1), _adam_step(0.05, wd=0.1))
    mask = {"w": True, "b": False}
    _check(optim.adamw(0.05, weight_decay=0.1, mask=mask), _adam_step(0.05, wd=0.1, mask=mask))
    _check(optim.adamw(0.05, weight_decay=0.1, mask=lambda p: {k: v.ndim > 1 for k, v in p.items()}),
           _adam_step(0.05, wd=0.1, mask=mask))
    sched_np = lambda c: 0.1 * 0.5 ** (c / 2)  # noqa: E731
    _check(optim.adam(optim.exponential_decay(0.1, 2, 0.5)), _adam_step(sched_np))


def _global_norm_np(g):
    return math.sqrt(sum(float(np.sum(g[k].astype(np.float64) ** 2)) for k in g))


def test_clip_by_global_norm_clip_and_global_norm():
    for g in GRADS:
        np.testing.assert_allclose(float(optim.global_norm({k: jnp.asarray(v) for k, v in g.items()})),
                                   _global_norm_np(g), rtol=1e-6)

    def step(k, g, p, t, st):
        n = _global_norm_np(GRADS[t - 1])
        return -0.1 * (g if n < 1.0 else g / n * 1.0), st
    _check(optim.chain(optim.clip_by_global_norm(1.0), optim.scale(-0.1)), step)
    _check(optim.chain(optim.clip_by_global_norm(100.0), optim.scale(-0.1)), lambda k, g, p, t, st: (-0.1 * g, st))
    _check(optim.chain(optim.clip(0.3), optim.scale_by_learning_rate(0.2)),
           lambda k, g, p, t, st: (-0.2 * np.clip(g, -0.3, 0.3), st))


def test_add_decayed_weights_scale_by_schedule_identity():
    _check(optim.chain(optim.add_decayed_weights(0.5), optim.scale(-0.1)),
           lambda k, g, p, t, st: (-0.1 * (g + 0.5 * p), st))
    _check(optim.chain(optim.identity(), optim.scale_by_schedule(lambda c: -0.1 * (c + 1))),
           lambda k, g, p, t, st: (-0.1 * t * g, st))
    _check(optim.scale_by_learning_rate(0.3, flip_sign=False), lambda k, g, p, t, st: (0.3 * g, st))
    _check(optim.sgd(optim.linear_schedule(0.1, 0.0, 4)), lambda k, g, p, t, st: (-0.1 * (1 - (t - 1) / 4) * g, st))


def test_states_are_pytrees_through_jit_with_donation_and_vmap():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(0.01, mask={"w": True, "b": False}))
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)

    @kiln.jit
    def direct(params, state, g):
        u, state = opt.update(g, state, params)
        return optim.apply_updates(params, u), state

    def step(params, state, g):
        u, state = opt.update(g, state, params)
        return optim.apply_updates(params, u), state
    donated = kiln.jit(step, donate_argnums=(0, 1))
    p1, s1 = params, state
    p2, s2 = {k: jnp.array(v) for k, v in P0.items()}, opt.init(params)
    for g in GRADS:
        g = {k: jnp.asarray(v) for k, v in g.items()}
        p1, s1 = direct(p1, s1, g)
        p2, s2 = donated(p2, s2, g)
    assert kiln.tree_util.tree_structure(s1) == kiln.tree_util.tree_structure(state)
    for a, b in zip(kiln.tree_util.tree_leaves((p1, s1)), kiln.tree_util.tree_leaves((p2, s2))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    # vmap over a batch of parameter sets: each row matches its own run.
    sgd = optim.sgd(0.1, momentum=0.9)
    ps = jnp.asarray(np.stack([P0["b"], 2 * P0["b"]]))
    gs = jnp.asarray(np.stack([GRADS[0]["b"], GRADS[1]["b"]]))

    def one(p, g):
        u, _ = sgd.update(g, sgd.init(p), p)
        return optim.apply_updates(p, u)
    got = kiln.vmap(one)(ps, gs)
    want = np.stack([one(ps[i], gs[i]) for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_tiny_mlp_loss_decreases():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
    params = {"w1": jnp.asarray(rng.standard_normal((3, 16)).astype(np.float32) * 0.5), "b1": jnp.zeros(16),
              "w2": jnp.asarray(rng.standard_normal((16, 1)).astype(np.float32) * 0.5), "b2": jnp.zeros(1)}

    def loss(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)
    opt = optim.chain(optim.clip_by_global_norm(1.0),
                      optim.adamw(optim.warmup_cosine_decay_schedule(0.0, 0.05, 5, 60), weight_decay=1e-4))
    state = opt.init(params)

    @kiln.jit
    def step(params, state):
        l, g = kiln.value_and_grad(loss)(params)
        u, state = opt.update(g, state, params)
        return optim.apply_updates(params, u), state, l
    first = None
    for _ in range(60):
        params, state, l = step(params, state)
        first = float(l) if first is None else first
    assert float(loss(params)) < 0.5 * first


def test_schedules_against_formulas():
    counts = np.arange(0, 14)

    def check(sched, f):
        want = np.array([f(c) for c in counts], dtype=np.float64)
        np.testing.assert_allclose(np.array([float(sched(int(c))) for c in counts]), want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(kiln.jit(kiln.vmap(sched))(jnp.asarray(counts))), want, rtol=1e-5,
                                   atol=1e-7)
    check(optim.constant_schedule(0.3), lambda c: 0.3)
    check(optim.linear_schedule(1.0, 0.2, 8, transition_begin=2),
          lambda c: 1.0 + (0.2 - 1.0) * min(max(c - 2, 0), 8) / 8)
    check(optim.polynomial_schedule(1.0, 0.1, 2, 10), lambda c: 0.9 * (1 - min(c, 10) / 10) ** 2 + 0.1)
    check(optim.exponential_decay(1.0, 3, 0.5), lambda c: 0.5 ** (c / 3))
    check(optim.exponential_decay(1.0, 3, 0.5, transition_begin=2, staircase=True, end_value=0.2),
          lambda c: 1.0 if c <= 2 else max(0.5 ** math.floor((c - 2) / 3), 0.2))
    check(optim.cosine_decay_schedule(0.8, 10, alpha=0.1),
          lambda c: 0.8 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(c, 10) / 10)) + 0.1))
    check(optim.cosine_decay_schedule(0.8, 10, exponent=2.0),
          lambda c: 0.8 * (0.5 * (1 + math.cos(math.pi * min(c, 10) / 10))) ** 2)
    check(optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 12, end_value=0.1),
          lambda c: c / 4 if c < 4 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(c - 4, 8) / 8)))
    check(optim.join_schedules([optim.constant_schedule(1.0), optim.linear_schedule(1.0, 0.0, 4)], [5]),
          lambda c: 1.0 if c < 5 else 1.0 - min(c - 5, 4) / 4)
    check(optim.linear_schedule(0.5, 0.0, 0), lambda c: 0.5)


def test_errors():
    with pytest.raises(ValueError, match="decay_steps must be > 0"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="decay_rate must be different from 0"):
        optim.exponential_decay(1.0, 3, 0.0)
    # a negative transition_begin starts the transition at step 0, as optax's (which logs a warning)
    with pytest.warns(UserWarning, match="transition_begin must be >= 0, got -1; the transition starts at step 0"):
        s = optim.exponential_decay(1.0, 4, 0.5, transition_begin=-1)
    np.testing.assert_allclose(float(s(2)), 0.5 ** 0.5, rtol=1e-6)
    with pytest.warns(UserWarning, match="transition_begin must be >= 0"):
        s = optim.polynomial_schedule(1.0, 0.0, 1, 4, transition_begin=-1)
    np.testing.assert_allclose(float(s(1)), 0.75, rtol=1e-6)
    with pytest.raises(ValueError, match="one more schedule than boundaries"):
        optim.join_schedules([optim.constant_schedule(1.0)], [3])
    with pytest.raises(TypeError, match="expected a GradientTransformation"):
        optim.chain(optim.scale(1.0), lambda g: g)
    with pytest.raises(TypeError, match="expected a GradientTransformation"):
        optim.masked(None, {})
    with pytest.raises(TypeError, match="must be a callable of the step count"):
        optim.scale_by_schedule(0.1)
    opt = optim.chain(optim.scale(1.0))
    with pytest.raises(ValueError, match="the state has 2 parts but the chain has 1"):
        opt.update({"a": jnp.ones(2)}, (optim.EmptyState(), optim.EmptyState()))
    with pytest.raises(ValueError, match="update needs the params"):
        optim.add_decayed_weights(0.1).update({"a": jnp.ones(2)}, optim.EmptyState())
    m = optim.masked(optim.scale(2.0), {"a": True, "c": False})
    with pytest.raises(ValueError, match="the mask must be a pytree of bools"):
        m.init({"a": jnp.ones(2), "b": jnp.ones(2)})


def test_compare_with_optax_when_installed():
    """A cross-check with optax itself (the oracle above stays NumPy); skips where optax/JAX are absent."""
    optax = pytest.importorskip("optax")
    mask = {"w": True, "b": False}
    want = _ref(_adam_step(0.05, wd=0.1, mask=mask))[-1]
    ours = _run(optim.adamw(0.05, weight_decay=0.1, mask=mask))[-1]
    opt = optax.adamw(0.05, weight_decay=0.1, mask=mask)
    params = dict(P0)
    state = opt.init(params)
    for g in GRADS:
        u, state = opt.update(g, state, params)
        params = optax.apply_updates(params, u)
    for k in P0:
        np.testing.assert_allclose(ours[k], want[k], rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(ours[k], np.asarray(params[k]), rtol=2e-5, atol=2e-6)


def test_adagrad_rmsprop_lion_lamb():
    def adagrad(k, g, p, t, st):
        s = g * g + st.get("s", 0.1)
        return -0.1 * g / np.sqrt(s + 1e-7), {"s": s}
    _check(optim.adagrad(0.1), adagrad)

    def rms(centered, momentum=None, nesterov=False, bias=False, eps_in_sqrt=True):
        def step(k, g, p, t, st):
            nu = 0.1 * g * g + 0.9 * st.get("nu", 0.0)
            mu = 0.1 * g + 0.9 * st.get("mu", 0.0)
            bc = (1 - 0.9 ** t) if bias else 1.0
            var = nu / bc - (mu / bc) ** 2 if centered else nu / bc
            u = -0.01 * (g / np.sqrt(var + 1e-8) if eps_in_sqrt else g / (np.sqrt(var) + 1e-8))
            tr = st.get("tr", 0.0)
            if momentum is not None:
                tr = u + momentum * tr
                u = u + momentum * tr if nesterov else tr
            return u, {"nu": nu, "mu": mu, "tr": tr}
        return step
    _check(optim.rmsprop(0.01), rms(False))
    _check(optim.rmsprop(0.01, eps_in_sqrt=False, bias_correction=True), rms(False, bias=True, eps_in_sqrt=False))
    _check(optim.rmsprop(0.01, centered=True, momentum=0.5, nesterov=True), rms(True, 0.5, True), rtol=1e-4)

    def lion(k, g, p, t, st):
        m = st.get("m", 0.0)
        u = np.sign(0.1 * g + 0.9 * m) + 0.01 * p
        return -0.02 * u, {"m": 0.01 * g + 0.99 * m}
    _check(optim.lion(0.02, weight_decay=0.01), lion)

    def lamb(k, g, p, t, st):
        m = 0.1 * g + 0.9 * st.get("m", 0.0)
        v = 0.001 * g * g + 0.999 * st.get("v", 0.0)
        u = (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-6) + 0.01 * p
        ratio = np.linalg.norm(p) / np.linalg.norm(u)
        return -0.05 * ratio * u, {"m": m, "v": v}
    _check(optim.lamb(0.05, weight_decay=0.01), lamb, rtol=1e-4)


def test_inject_hyperparams_schedule_and_changed_value():
    opt = optim.inject_hyperparams(optim.adam)(learning_rate=optim.linear_schedule(0.1, 0.0, 4), b1=0.8)
    _check(opt, _adam_step(lambda c: 0.1 * (1 - c / 4), b1=0.8))
    sgd = optim.inject_hyperparams(optim.sgd, static_args="nesterov")(0.1, momentum=0.9, nesterov=True)
    params = {"a": jnp.ones(3)}
    state = sgd.init(params)
    assert set(state.hyperparams) == {"learning_rate", "momentum"}
    state.hyperparams["learning_rate"] = jnp.asarray(0.5)
    u, state = kiln.jit(sgd.update)({"a": jnp.ones(3)}, state, params)
    np.testing.assert_allclose(np.asarray(u["a"]), -0.5 * 1.9 * np.ones(3), rtol=1e-6)
    assert int(state.count) == 1
    with pytest.raises(TypeError, match="inject_hyperparams: the arguments do not fit"):
        optim.inject_hyperparams(optim.sgd)(0.1, bogus=1)


def test_multi_steps_accumulates_mean_and_sum():
    for mean in (True, False):
        ms = optim.MultiSteps(optim.sgd(0.1, momentum=0.5), every_k_schedule=2, use_grad_mean=mean)
        params = {k: jnp.asarray(v) for k, v in P0.items()}
        state = ms.init(params)
        upd = kiln.jit(ms.update)
        want = {k: v.astype(np.float64) for k, v in P0.items()}
        tr = {k: 0.0 for k in P0}
        for i, g in enumerate(GRADS):
            u, state = upd({k: jnp.asarray(v) for k, v in g.items()}, state, params)
            params = optim.apply_updates(params, u)
            if i % 2 == 0:
                assert not bool(ms.has_updated(state))
                for k in P0:
                    np.testing.assert_array_equal(np.asarray(u[k]), 0)
            else:
                assert bool(ms.has_updated(state))
                for k in P0:
                    acc = GRADS[i - 1][k].astype(np.float64) + g[k]
                    acc = acc / 2 if mean else acc
                    tr[k] = acc + 0.5 * tr[k]
                    want[k] = want[k] - 0.1 * tr[k]
                    np.testing.assert_allclose(np.asarray(params[k]), want[k], rtol=2e-5, atol=2e-6)
        assert int(state.gradient_step) == 2
    gt = optim.MultiSteps(optim.sgd(0.1), every_k_schedule=lambda s: 1).gradient_transformation()
    u, _ = gt.update({"a": jnp.ones(2)}, gt.init({"a": jnp.ones(2)}))
    np.testing.assert_allclose(np.asarray(u["a"]), -0.1)
    with pytest.raises(ValueError, match="every_k_schedule must be an int >= 1"):
        optim.MultiSteps(optim.sgd(0.1), 0)
    with pytest.raises(ValueError, match="scale_by_trust_ratio: update needs the params"):
        optim.scale_by_trust_ratio().update({"a": jnp.ones(2)}, optim.ScaleByTrustRatioState())


def test_dtypes_are_kept_and_masks_may_be_prefixes():
    for dt in (np.float16, jnp.bfloat16, np.float32):
        params = {"w": jnp.ones((2, 3), dt), "b": jnp.zeros(3, dt)}
        grads = {"w": jnp.full((2, 3), 0.5, dt), "b": jnp.ones(3, dt)}
        for opt in (optim.adamw(0.1, mask={"w": True, "b": False}), optim.sgd(0.1, 0.9), optim.lion(0.1),
                    optim.chain(optim.clip_by_global_norm(0.5), optim.rmsprop(0.1))):
            state = opt.init(params)
            u, state = kiln.jit(opt.update)(grads, state, params)
            new = optim.apply_updates(params, u)
            assert all(v.dtype == dt for v in kiln.tree_util.tree_leaves(new)), (dt, opt)
        # the last one: rmsprop after one step is lr * g / sqrt(0.1 * g**2), whatever the clipping did to g
        np.testing.assert_allclose(np.asarray(new["w"], np.float32), 1 - 0.1 / np.sqrt(0.1), rtol=1e-2)
    # A mask that is a prefix of the params: one bool for a whole sub-dict.
    params = {"enc": {"w": jnp.ones(2), "b": jnp.ones(2)}, "dec": {"w": jnp.ones(2)}}
    grads = kiln.tree_util.tree_map(jnp.zeros_like, params)
    opt = optim.add_decayed_weights(0.5, mask={"enc": True, "dec": False})
    u, _ = opt.update(grads, opt.init(params), params)
    np.testing.assert_allclose(np.asarray(u["enc"]["w"]), 0.5)
    np.testing.assert_allclose(np.asarray(u["enc"]["b"]), 0.5)
    np.testing.assert_allclose(np.asarray(u["dec"]["w"]), 0.0)


def test_grad_through_an_update_step():
    # d/dlr of sum((p - lr * g)**2) is -2 * sum((p - lr * g) * g).
    p = jnp.asarray(P0["w"])
    g = jnp.asarray(GRADS[0]["w"])

    def after_step(lr):
        opt = optim.sgd(lr)
        u, _ = opt.update(g, opt.init(p), p)
        return jnp.sum(optim.apply_updates(p, u) ** 2)
    lr = 0.3
    want = -2 * np.sum((P0["w"] - lr * GRADS[0]["w"]) * GRADS[0]["w"])
    np.testing.assert_allclose(float(kiln.grad(after_step)(lr)), want, rtol=1e-5)
    np.testing.assert_allclose(float(kiln.jit(kiln.grad(after_step))(lr)), want, rtol=1e-5)


def test_nadam_set_to_zero_zero_nans_and_more_schedules():
    _check(optim.nadam(0.05), _adam_step(0.05, nesterov=True))
    _check(optim.nadamw(0.05, weight_decay=0.1), _adam_step(0.05, wd=0.1, nesterov=True))
    _check(optim.chain(optim.set_to_zero(), optim.scale(-1.0)), lambda k, g, p, t, st: (0 * g, st))
    opt = optim.zero_nans()
    g = {"a": jnp.asarray([1.0, np.nan, 2.0]), "b": jnp.ones(2)}
    for fn in (opt.update, kiln.jit(opt.update)):
        u, st = fn(g, opt.init(g))
        np.testing.assert_array_equal(np.asarray(u["a"]), [1.0, 0.0, 2.0])
        assert bool(st.found_nan["a"]) and not bool(st.found_nan["b"])
    counts = np.arange(0, 14)

    def check(sched, f):
        want = np.array([f(c) for c in counts], dtype=np.float64)
        np.testing.assert_allclose(np.array([float(sched(int(c))) for c in counts]), want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(kiln.jit(kiln.vmap(sched))(jnp.asarray(counts))), want, rtol=1e-5)
    check(optim.piecewise_constant_schedule(0.1, {3: 0.5, 8: 0.1}),
          lambda c: 0.1 * (0.5 if c >= 3 else 1) * (0.1 if c >= 8 else 1))
    check(optim.piecewise_constant_schedule(0.1), lambda c: 0.1)
    check(optim.warmup_exponential_decay_schedule(0.0, 1.0, 4, 3, 0.5, end_value=0.3),
          lambda c: c / 4 if c < 4 else max(0.5 ** ((c - 4) / 3), 0.3))
    with pytest.raises(ValueError, match="scale factors must be non-negative"):
        optim.piecewise_constant_schedule(0.1, {3: -0.5})


def test_adam_mu_dtype():
    opt = optim.adam(0.05, mu_dtype=jnp.bfloat16)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    assert state[0].mu["w"].dtype == jnp.bfloat16 and state[0].nu["w"].dtype == np.float32
    u, state = kiln.jit(opt.update)({k: jnp.asarray(v) for k, v in GRADS[0].items()}, state, params)
    assert u["w"].dtype == np.float32 and state[0].mu["w"].dtype == jnp.bfloat16
    # the first Adam step is -lr * g / (|g| + eps) up to the bf16 rounding of mu
    np.testing.assert_allclose(np.asarray(u["w"]), -0.05 * np.sign(GRADS[0]["w"]), rtol=1e-2)


def test_partition_applies_one_transformation_per_label():
    params = {"w": jnp.array([1.0, 2.0]), "b": jnp.array([3.0])}
    grads = {"w": jnp.array([0.5, -0.5]), "b": jnp.array([1.0])}
    for make in (optim.partition, optim.multi_transform):
        tx = make({"fast": optim.sgd(1.0), "frozen": optim.set_to_zero()}, {"w": "fast", "b": "frozen"})
        state = tx.init(params)
        assert isinstance(state, optim.PartitionState) and set(state.inner_states) == {"fast", "frozen"}
        updates, state = tx.update(grads, state, params)
        np.testing.assert_array_equal(updates["w"], [-0.5, 0.5])
        np.testing.assert_array_equal(updates["b"], [0.0])
    # labels from a function of the params; a prefix of the params' structure
    tx = optim.partition({"a": optim.sgd(0.5)}, lambda p: kiln.tree_util.tree_map(lambda _: "a", p))
    np.testing.assert_array_equal(tx.update(grads, tx.init(params), params)[0]["b"], [-0.5])
    pair = ({"w": jnp.ones(2)}, jnp.ones(3))
    tx = optim.partition({"g": optim.sgd(1.0), "d": optim.sgd(2.0)}, ("g", "d"))
    out, _ = tx.update(pair, tx.init(pair), pair)
    np.testing.assert_array_equal(out[1], [-2.0, -2.0, -2.0])
    with pytest.raises(ValueError, match=r"partition: some parameters have no transformation: labels \['fast', "
                                         r"'other'\], but transforms has keys \['fast'\]"):
        optim.partition({"fast": optim.sgd(1.0)}, {"w": "fast", "b": "other"}).init(params)


def test_optax_state_layouts_and_defaults():
    p = jnp.zeros(3)
    assert len(optim.sgd(0.1).init(p)) == 2  # identity() in the momentum's place, as optax
    assert len(optim.rmsprop(0.1).init(p)) == 3
    assert type(optim.scale_by_rms().init(p)) is optim.ScaleByRmsState
    assert type(optim.scale_by_rms(bias_correction=True).init(p)) is optim.ScaleByRmsWithCountState
    assert type(optim.scale_by_stddev().init(p)).__name__ == "ScaleByRStdDevState"
    assert optim.lamb(0.1).init(p)[2] == optim.EmptyState()
    # inject_hyperparams keeps the factory's defaults as hyperparameters (float32 arrays)
    state = optim.inject_hyperparams(optim.adam)(learning_rate=0.1).init(p)
    assert sorted(state.hyperparams) == ["b1", "b2", "eps", "eps_root", "learning_rate"]
    assert state.hyperparams["b1"].dtype == np.float32 and float(state.hyperparams["b1"]) == np.float32(0.9)
    assert state.hyperparams_states == {}
    # MultiSteps has not updated on a fresh state; it has after the k-th step
    ms = optim.MultiSteps(optim.sgd(0.1), 2)
    s = ms.init(jnp.ones(2))
    assert not bool(ms.has_updated(s))
    _, s = ms.update(jnp.ones(2), s, jnp.ones(2))
    assert not bool(ms.has_updated(s))
    _, s = ms.update(jnp.ones(2), s, jnp.ones(2))
    assert bool(ms.has_updated(s))
    # a piecewise constant schedule without boundaries is its value as given
    assert optim.piecewise_constant_schedule(0.5)(3) == 0.5


def test_multi_steps_accumulates_in_float32_by_default():
    # as optax: the accumulator is float32 (accumulator_dtype) whatever the gradients' dtype; the inner
    # optimizer gets the mean cast back to the gradients' dtype; the state has optax's skip_state field
    p = {"w": jnp.ones(4, jnp.bfloat16)}
    ms = optim.MultiSteps(optim.sgd(1.0), 2)
    s = ms.init(p)
    assert s.acc_grads["w"].dtype == np.float32 and s.skip_state == ()
    g = {"w": jnp.full(4, 0.1, jnp.bfloat16)}
    u, s = ms.update(g, s, p)
    assert u["w"].dtype == jnp.bfloat16 and not np.asarray(u["w"], np.float32).any()
    u, s = ms.update(g, s, p)
    np.testing.assert_array_equal(np.asarray(u["w"], np.float32), -np.float32(jnp.bfloat16(0.1)))
    assert optim.MultiSteps(optim.sgd(1.0), 2, accumulator_dtype=jnp.bfloat16).init(p).acc_grads["w"].dtype == \
        jnp.bfloat16
