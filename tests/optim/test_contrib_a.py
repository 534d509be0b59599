"""kiln.optim.contrib (part A) against its update equations written in NumPy (float64), eagerly and under
kiln.jit, and its error messages."""
import importlib

import numpy as np
import pytest
from _steps import replay, run

import kiln
import kiln.numpy as jnp
import kiln.random as krandom
from kiln import optim
from kiln.optim import contrib

muon_module = importlib.import_module("kiln.frontend.optim.contrib._muon")

RNG = np.random.default_rng(0)
P0 = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in P0.items()} for _ in range(5)]


def _run(opt, jit=False, extra=None):
    return run(opt, P0, GRADS, jit, extra=(lambda i, params: extra(i)) if extra else None)


def _ref(step):
    """Runs a NumPy update ``step(k, g, p, t, st) -> (u, st)`` leaf by leaf (t = 1-based step)."""
    return replay(step, P0, GRADS)


def _check(opt, step, rtol=2e-5, atol=2e-6, extra=None):
    want = _ref(step)
    for jit in (False, True):
        got = _run(opt, jit, extra)
        for t, (w, g) in enumerate(zip(want, got), 1):
            for k in P0:
                np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol, err_msg=f"step {t}, {k}, jit={jit}")


def _adopt_step(lr, b1=0.9, b2=0.9999, eps=1e-6, nesterov=False, clipping=True):
    def step(k, g, p, t, st):
        count = t - 1
        if count == 0:
            return 0.0 * g, {"m": np.zeros_like(g), "v": g * g}
        u = g / np.maximum(np.sqrt(st["v"]), eps)
        if clipping:
            u = np.clip(u, -count ** 0.25, count ** 0.25)
        m = (1 - b1) * u + b1 * st["m"]
        out = (1 - b1) * u + b1 * m if nesterov else m
        return -lr * out, {"m": m, "v": (1 - b2) * g * g + b2 * st["v"]}
    return step


def test_adopt():
    _check(contrib.adopt(0.05), _adopt_step(0.05))
    _check(contrib.adopt(0.05, b1=0.8, nesterov=True, use_clipping=False),
           _adopt_step(0.05, b1=0.8, nesterov=True, clipping=False))


def test_acprop():
    b1, b2, eps, eps_root, lr, wd = 0.9, 0.999, 1e-16, 1e-16, 0.01, 0.1

    def step(k, g, p, t, st):
        m0, v0 = st.get("m", 0.0), st.get("v", 0.0)
        v_hat = 1.0 if t == 1 else v0 / (1 - b2 ** (t - 1))  # the previous belief
        u = g / (np.sqrt(v_hat) + eps) + wd * p
        return -lr * u, {"m": (1 - b1) * g + b1 * m0, "v": (1 - b2) * (g - m0) ** 2 + b2 * v0 + eps_root}
    _check(contrib.acprop(lr, weight_decay=wd), step)


def test_madgrad():
    lr, mom, eps, wd = 0.01, 0.9, 1e-6, 0.05

    def step(k, g, p, t, st):
        g = g + wd * p
        lamb = (lr + eps) * np.sqrt(t)
        sq, s = st.get("sq", 0.0) + lamb * g * g, st.get("s", 0.0) + lamb * g
        x0 = P0[k].astype(np.float64)
        z = x0 - s / (np.cbrt(sq) + eps)
        return (1 - mom) * z + mom * p - p, {"sq": sq, "s": s}
    _check(contrib.madgrad(lr, weight_decay=wd), step, rtol=1e-4, atol=1e-5)


def test_ademamix_with_schedules():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.01

    def b3(c):
        return 0.9 + 0.02 * c

    def alpha(c):
        return 1.0 + c

    def step(k, g, p, t, st):
        m1 = (1 - b1) * g + b1 * st.get("m1", 0.0)
        m2 = (1 - b3(t - 1)) * g + b3(t - 1) * st.get("m2", 0.0)
        v = (1 - b2) * g * g + b2 * st.get("v", 0.0)
        u = (m1 / (1 - b1 ** t) + alpha(t - 1) * m2) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        return -lr * u, {"m1": m1, "m2": m2, "v": v}
    _check(contrib.ademamix(lr, b3=b3, alpha=alpha), step)


def test_simplified_ademamix():
    b1, b2, alpha, eps, lr, wd = 0.99, 0.95, 2.0, 1e-8, 0.01, 0.1

    def step(k, g, p, t, st):
        m = g + b1 * st.get("m", 0.0)
        n = (1 - b2) * g * g + b2 * st.get("n", 0.0)
        u = (m + alpha * g) / (np.sqrt(n / (1 - b2 ** t)) + eps) + wd * p
        return -lr * u, {"m": m, "n": n}
    _check(contrib.simplified_ademamix(lr, alpha=alpha, weight_decay=wd), step, rtol=1e-4)


def test_normalize_gives_unit_global_norm():
    g = {k: jnp.asarray(v) for k, v in GRADS[0].items()}
    for update in (contrib.normalize().update, kiln.jit(contrib.normalize().update)):
        u, _ = update(g, contrib.NormalizeState())
        norm = np.sqrt(sum(float(np.sum(np.asarray(x, np.float64) ** 2)) for x in u.values()))
        np.testing.assert_allclose(norm, 1.0, rtol=1e-6)
        total = np.sqrt(sum(np.sum(v.astype(np.float64) ** 2) for v in GRADS[0].values()))
        np.testing.assert_allclose(np.asarray(u["w"]), GRADS[0]["w"] / total, rtol=1e-6)


# ---------------------------------------------------------------------------------------------- muon
STANDARD = (3.4445, -4.7750, 2.0315)


def _np_newton_schulz(x, coeffs=STANDARD, steps=5, eps=1e-8):
    x = np.asarray(x, np.float64)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    x = x / (np.linalg.norm(x) + eps)
    for _ in range(steps):
        a = x @ x.T
        x = coeffs[0] * x + (coeffs[1] * a + coeffs[2] * a @ a) @ x
    return x.T if transposed else x


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5)])
def test_newton_schulz_replays_numpy_and_approaches_polar_factor(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    coeffs = jnp.asarray(STANDARD, jnp.float32)
    for fn in (muon_module._orthogonalize, kiln.jit(muon_module._orthogonalize, static_argnums=(2, 3, 4))):
        got = np.asarray(fn(jnp.asarray(x), coeffs, 5, "frobenius", 1e-8))
        np.testing.assert_allclose(got, _np_newton_schulz(x), rtol=1e-4, atol=1e-5)
        # the iteration maps each singular value into roughly (0.5, 1.5) and keeps the singular vectors: near
        # U V^T, and exactly U S' V^T with S' diagonal
        u, _, vt = np.linalg.svd(x.astype(np.float64), full_matrices=False)
        core = u.T @ got @ vt.T
        assert np.all((np.diag(core) > 0.5) & (np.diag(core) < 1.5)), np.diag(core)
        np.testing.assert_allclose(core - np.diag(np.diag(core)), 0, atol=2e-5)
        np.testing.assert_allclose(got, u @ vt, atol=0.35)


def test_newton_schulz_with_batch_axes_orthogonalises_each_matrix():
    x = RNG.standard_normal((3, 2, 4)).astype(np.float32)  # matrices (axis 0, axis 2), batched along axis 1
    dims = contrib.MuonDimensionNumbers(reduction_axis=0, output_axis=2)
    got = np.asarray(muon_module._orthogonalize(jnp.asarray(x), jnp.asarray(STANDARD, jnp.float32), 5,
                                                "frobenius", 1e-8, dims))
    for i in range(2):
        np.testing.assert_allclose(got[:, i, :], _np_newton_schulz(x[:, i, :]), rtol=1e-4, atol=1e-5)


def test_muon_matrices_by_newton_schulz_others_by_adamw():
    lr, beta, eps, wd = 0.02, 0.95, 1e-8, 0.1

    def step(k, g, p, t, st):
        if k == "b":  # AdamW (b1 0.9, b2 0.999, adam_weight_decay 0), with muon's Nesterov momentum
            m = 0.1 * g + 0.9 * st.get("m", 0.0)
            v = 0.001 * g * g + 0.999 * st.get("v", 0.0)
            mh = 0.9 * m / (1 - 0.9 ** (t + 1)) + 0.1 * g / (1 - 0.9 ** t)
            return -lr * mh / (np.sqrt(v / (1 - 0.999 ** t)) + eps), {"m": m, "v": v}
        m = (1 - beta) * g + beta * st.get("m", 0.0)
        mh = beta * m / (1 - beta ** (t + 1)) + (1 - beta) * g / (1 - beta ** t)
        o = _np_newton_schulz(mh) * np.sqrt(max(1, 2 / 3))  # width scaling: fan_out 2, fan_in 3
        return -lr * (o + wd * p), {"m": m}
    _check(contrib.muon(lr, weight_decay=wd), step, rtol=1e-4, atol=1e-5)


def test_muon_state_and_presets():
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = contrib.muon(0.1, ns_coeffs="dion", ns_steps=5).init(params)
    muon_state = state.inner_states["muon"].inner_state[0]
    assert isinstance(muon_state, contrib.MuonState)
    assert muon_state.ns_coeffs.shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(muon_state.ns_coeffs[0]),
                                  np.asarray([4.0848, -6.8946, 2.9270], np.float32))
    st = contrib.scale_by_muon(ns_coeffs=((1.0, 0.0, 0.0),) * 2, ns_steps=5).init(params["w"])
    assert st.ns_coeffs.shape == (2, 3)


def test_muon_adaptive_scales_by_the_dual_norm():
    g = jnp.asarray(GRADS[0]["w"])
    plain, adaptive = contrib.scale_by_muon(nesterov=False), contrib.scale_by_muon(nesterov=False, adaptive=True)
    u, _ = plain.update(g, plain.init(g))
    ua, _ = adaptive.update(g, adaptive.init(g))
    # (the bias-corrected momentum after one step is the gradient itself)
    np.testing.assert_allclose(np.asarray(ua), np.sum(GRADS[0]["w"] * np.asarray(u)) * np.asarray(u), rtol=1e-5)


# ------------------------------------------------------------------------------------ schedule-free
def test_schedule_free_sgd_and_eval_params():
    lr, b1 = 0.1, 0.9

    def step(k, g, p, t, st):
        z = st.get("z", P0[k].astype(np.float64))
        x = (p - (1 - b1) * z) / b1
        w_sum = st.get("w", 0.0) + lr ** 2
        ck = lr ** 2 / w_sum
        z_new = z - lr * g
        x = (1 - ck) * x + ck * z_new
        return b1 * x + (1 - b1) * z_new - p, {"z": z_new, "w": w_sum}
    _check(contrib.schedule_free_sgd(lr, b1=b1), step)
    opt = contrib.schedule_free_sgd(lr, b1=b1)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    u, state = opt.update({k: jnp.asarray(v) for k, v in GRADS[0].items()}, state, params)
    params = optim.apply_updates(params, u)
    x = contrib.schedule_free_eval_params(state, params)
    # after one step the average x is the first z: the params after one plain SGD step
    np.testing.assert_allclose(np.asarray(x["w"]), P0["w"] - lr * GRADS[0]["w"], rtol=1e-5, atol=1e-6)


def test_schedule_free_warmup_weights_by_max_lr():
    opt = contrib.schedule_free_adamw(0.05, warmup_steps=4)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    assert int(state.step_count) == 1 and float(state.max_lr) == 0.0
    for g in GRADS[:3]:
        _, state = kiln.jit(opt.update)({k: jnp.asarray(v) for k, v in g.items()}, state, params)
    # lr at steps 1, 2, 3 of a 4-step warmup: 0.0125, 0.025, 0.0375; the weights are their squares
    np.testing.assert_allclose(float(state.max_lr), 0.0375, rtol=1e-6)
    np.testing.assert_allclose(float(state.weight_sum), 0.0125 ** 2 + 0.025 ** 2 + 0.0375 ** 2, rtol=1e-5)


# ---------------------------------------------------------------------------------------------- sam
def test_sam_alternates_adversarial_and_outer_steps():
    lr, rho = 0.1, 0.05
    opt = contrib.sam(optim.sgd(lr), optim.chain(contrib.normalize(), optim.sgd(rho)), sync_period=2)
    for jit in (False, True):
        got = _run(opt, jit)
        p = {k: v.astype(np.float64) for k, v in P0.items()}
        for t, g in enumerate(GRADS):
            g = {k: v.astype(np.float64) for k, v in g.items()}
            if t % 2 == 0:  # ascent along the normalised gradient, from the cached params
                cache = {k: v.copy() for k, v in p.items()}
                norm = np.sqrt(sum(np.sum(v * v) for v in g.values()))
                p = {k: p[k] + rho * g[k] / norm for k in p}
            else:  # the gradient at the perturbed params, applied at the cache
                p = {k: cache[k] - lr * g[k] for k in p}
            for k in P0:
                np.testing.assert_allclose(got[t][k], p[k], rtol=1e-5, atol=1e-6, err_msg=f"step {t}, jit={jit}")


def test_sam_opaque_mode_calls_grad_fn():
    calls = []

    def grad_fn(p, i):
        calls.append(i)
        return {k: 2 * v for k, v in p.items()}  # the gradient of sum(p**2)
    opt = contrib.sam(optim.sgd(0.1), optim.sgd(0.05), sync_period=3, opaque_mode=True)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    assert state.cache is None
    u, state = opt.update({k: 2 * v for k, v in params.items()}, state, params, grad_fn=grad_fn)
    assert calls == [0, 1]
    # two ascent steps p <- p + 0.05 * 2p, then the outer step with the gradient there
    want = P0["w"] - 0.1 * 2 * (P0["w"] * 1.1 ** 2)
    np.testing.assert_allclose(np.asarray(optim.apply_updates(params, u)["w"]), want, rtol=1e-6)


# ----------------------------------------------------------------------------------- reduce_on_plateau
def test_reduce_on_plateau_scale_sequence():
    losses = [1.0, 0.5, 0.6, 0.55, 0.7, 0.4, 0.45, 0.46, 0.47]
    opt = contrib.reduce_on_plateau(factor=0.5, patience=2, cooldown=1, min_scale=0.2)
    for update in (opt.update, kiln.jit(opt.update)):
        state = opt.init({"w": jnp.zeros(2)})
        scales = []
        for v in losses:
            u, state = update({"w": jnp.ones(2)}, state, value=jnp.asarray(v))
            scales.append(float(u["w"][0]))
        # plateau after 0.5 (0.6, 0.55): halve; 0.7 in cooldown; 0.4 improves; 0.45, 0.46: halve (to 0.25);
        # 0.47 in cooldown
        assert scales == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25]
        assert float(state.best_value) == pytest.approx(0.4)


def test_reduce_on_plateau_accumulates_and_respects_min_scale():
    opt = contrib.reduce_on_plateau(factor=0.1, patience=1, accumulation_size=2, min_scale=0.05)
    state = opt.init({"w": jnp.zeros(2)})
    seen = []
    for v in [2.0, 4.0, 3.0, 3.5, 3.0, 3.0]:  # averages 3.0, 3.25, 3.0
        _, state = opt.update({"w": jnp.ones(2)}, state, value=v)
        seen.append((int(state.count), float(state.scale)))
    assert seen == [(1, 1.0), (0, 1.0), (1, 1.0), (0, pytest.approx(0.1)), (1, pytest.approx(0.1)),
                    (0, pytest.approx(0.05))]


# ---------------------------------------------------------------------------------- complex values
def test_split_real_and_imaginary_runs_inner_on_each_part():
    z0 = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex64)
    gs = [(RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex64) for _ in range(3)]
    opt = contrib.split_real_and_imaginary(optim.adam(0.1))
    for update in (opt.update, kiln.jit(opt.update)):
        p = jnp.asarray(z0)
        state = opt.init(p)
        for g in gs:
            u, state = update(jnp.asarray(g), state, p)
            p = optim.apply_updates(p, u)
        want = []
        for part in (np.real, np.imag):  # Adam on the real parts and on the imaginary parts separately
            x, m, v = part(z0).astype(np.float64), 0.0, 0.0
            for t, g in enumerate(gs, 1):
                gp = part(g).astype(np.float64)
                m, v = 0.1 * gp + 0.9 * m, 0.001 * gp * gp + 0.999 * v
                x = x - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
            want.append(x)
        assert np.asarray(p).dtype == np.complex64
        np.testing.assert_allclose(np.asarray(p), want[0] + 1j * want[1], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------- privacy
def _per_example(n=4):
    return {"w": RNG.standard_normal((n, 3, 2)).astype(np.float32),
            "b": (3 * RNG.standard_normal((n, 2))).astype(np.float32)}


def test_private_aggregate_without_noise_is_the_clipped_mean():
    g = _per_example()
    opt = contrib.differentially_private_aggregate(l2_norm_clip=1.5, noise_multiplier=0.0, key=krandom.key(1))
    for update in (opt.update, kiln.jit(opt.update)):
        u, _ = update({k: jnp.asarray(v) for k, v in g.items()}, opt.init(None))
        norms = np.sqrt(sum(np.sum(v.reshape(4, -1).astype(np.float64) ** 2, axis=1) for v in g.values()))
        mult = np.minimum(1.5 / norms, 1.0)
        for k in g:
            want = np.tensordot(mult, g[k].astype(np.float64), axes=1) / 4
            np.testing.assert_allclose(np.asarray(u[k]), want, rtol=1e-5, atol=1e-6)


def test_private_aggregate_noise_comes_from_the_split_key():
    g = _per_example()
    key = krandom.key(7)
    opt = contrib.differentially_private_aggregate(1.0, 2.0, key=key)
    noiseless = contrib.differentially_private_aggregate(1.0, 0.0, key=key)
    gk = {k: jnp.asarray(v) for k, v in g.items()}
    u, state = opt.update(gk, opt.init(None))
    u0, _ = noiseless.update(gk, noiseless.init(None))
    new_key, kb, kw = krandom.split(key, 3)  # (the leaves in tree order: "b", then "w")
    np.testing.assert_array_equal(np.asarray(krandom.key_data(state.rng_key)), np.asarray(krandom.key_data(new_key)))
    for k, sub in (("b", kb), ("w", kw)):
        noise = np.asarray(krandom.normal(sub, g[k].shape[1:], jnp.float32))
        np.testing.assert_allclose(np.asarray(u[k]), np.asarray(u0[k]) + 2.0 * noise / 4, rtol=1e-5, atol=1e-6)


def test_dpsgd_is_aggregate_then_sgd():
    g = {k: jnp.asarray(v) for k, v in _per_example().items()}
    params = {"w": jnp.zeros((3, 2)), "b": jnp.zeros(2)}
    opt = contrib.dpsgd(0.1, 1.0, 0.5, seed=3)
    agg = contrib.differentially_private_aggregate(1.0, 0.5, key=3)
    u, state = opt.update(g, opt.init(params), params)
    ua, _ = agg.update(g, agg.init(params))
    for k in params:
        np.testing.assert_allclose(np.asarray(u[k]), -0.1 * np.asarray(ua[k]), rtol=1e-6)


def test_private_aggregate_key_warnings():
    with pytest.warns(DeprecationWarning, match="seed"):
        contrib.differentially_private_aggregate(1.0, 1.0, seed=0)
    with pytest.warns(UserWarning, match="no key given"):
        contrib.differentially_private_aggregate(1.0, 1.0)


# ---------------------------------------------------------------------------------------------- errors
def test_error_messages():
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    grads = {k: jnp.asarray(v) for k, v in GRADS[0].items()}
    with pytest.raises(ValueError, match="sync_period must be >= 1"):
        contrib.sam(optim.sgd(0.1), optim.sgd(0.1), sync_period=0)
    with pytest.raises(TypeError, match="sam: optimizer: expected a GradientTransformation"):
        contrib.sam(lambda: None, optim.sgd(0.1))
    opaque = contrib.sam(optim.sgd(0.1), optim.sgd(0.1), opaque_mode=True)
    with pytest.raises(ValueError, match="opaque_mode=True, update needs grad_fn"):
        opaque.update(grads, opaque.init(params), params)
    with pytest.raises(ValueError, match=r"factor must be in \(0, 1\)"):
        contrib.reduce_on_plateau(factor=1.5)
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        contrib.reduce_on_plateau(atol=-1.0)
    with pytest.raises(ValueError, match="rtol or atol must be positive"):
        contrib.reduce_on_plateau(rtol=0.0, atol=0.0)
    with pytest.raises(ValueError, match="rtol must be <= 1"):
        contrib.reduce_on_plateau(rtol=2.0)
    rop = contrib.reduce_on_plateau()
    with pytest.raises(TypeError, match="value=loss"):
        rop.update(grads, rop.init(params))
    with pytest.raises(ValueError, match="is not a matrix; give it MuonDimensionNumbers"):
        contrib.scale_by_muon().update(grads["b"], contrib.scale_by_muon().init(grads["b"]))
    t = jnp.ones((2, 3, 4))
    overlapping = contrib.scale_by_muon(weight_dimension_numbers=contrib.MuonDimensionNumbers(0, (0, 1)))
    with pytest.raises(ValueError, match="overlap"):
        overlapping.update(t, overlapping.init(t))
    with pytest.raises(ValueError, match=r"ns_coeffs must have shape \(3,\) or \(n, 3\)"):
        contrib.scale_by_muon(ns_coeffs=(1.0, 2.0)).init(params)
    with pytest.raises(ValueError, match="ns_steps=2"):
        contrib.scale_by_muon(ns_coeffs=((1.0, 0.0, 0.0),) * 3, ns_steps=2).init(params)
    with pytest.raises(ValueError, match="unknown ns_coeffs preset 'fast'"):
        contrib.muon(0.1, ns_coeffs="fast")
    with pytest.raises(ValueError, match="unknown preconditioning 'svd'"):
        contrib.scale_by_muon(preconditioning="svd")
    with pytest.raises(ValueError, match="scale_by_madgrad: update needs the params"):
        contrib.scale_by_madgrad(0.1).update(grads, contrib.scale_by_madgrad(0.1).init(params))
    with pytest.raises(ValueError, match="schedule_free_eval_params: state must be the ScheduleFreeState"):
        contrib.schedule_free_eval_params((), params)
    sf = contrib.schedule_free_sgd()
    with pytest.raises(ValueError, match="schedule_free: update needs the params"):
        sf.update(grads, sf.init(params))
    with pytest.raises(ValueError, match="pass key or seed"), pytest.warns(DeprecationWarning):
        contrib.differentially_private_aggregate(1.0, 1.0, key=1, seed=2)
    dp = contrib.differentially_private_aggregate(1.0, 1.0, key=0)
    with pytest.raises(ValueError, match="batch on axis 0"):
        dp.update({"a": jnp.ones(())}, dp.init(None))
    with pytest.raises(TypeError, match="split_real_and_imaginary: expected a GradientTransformation"):
        contrib.split_real_and_imaginary(optim.sgd)
