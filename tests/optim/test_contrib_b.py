"""kiln.optim.contrib's parameter-free and second-order optimizers (prodigy, dadapt_adamw, dog, dowg, mechanize,
cocob, momo, momo_adam, sophia, galore) against their update equations written in NumPy (float64), eagerly and
under kiln.jit, and their error messages."""
import numpy as np
import pytest
from _steps import replay, run

import kiln
import kiln.numpy as jnp
from kiln import optim
from kiln.optim import contrib

RNG = np.random.default_rng(7)
P0 = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32)}
# a common direction plus noise: consistent gradients, so that the distance-based step sizes grow
DRIFT = {k: RNG.standard_normal(v.shape) for k, v in P0.items()}
GRADS = [{k: (DRIFT[k] + 0.5 * RNG.standard_normal(v.shape)).astype(np.float32) for k, v in P0.items()}
         for _ in range(5)]
KEYS = sorted(P0)

# each case jits a new optimizer's update, made from the same code: retracing is expected
pytestmark = pytest.mark.filterwarnings("ignore::kiln.frontend.driver.retrace.RetraceWarning")


def _loss64(p):
    return 1.0 + 0.5 * sum(float(np.sum(np.asarray(v, np.float64) ** 2)) for v in p.values())


def _run(opt, jit=False, with_value=False, fixed=None):
    """kiln's parameters after each step (``fixed``: extra keyword arguments bound before jitting)."""
    bound = optim.GradientTransformationExtraArgs(opt.init, lambda u, s, p, **kw: opt.update(u, s, p, **(fixed or {}),
                                                                                               **kw))
    value = (lambda i, params: {"value": jnp.asarray(_loss64(params), dtype=jnp.float32)}) if with_value else None
    return run(bound, P0, GRADS, jit, extra=value)


def _ref(step):
    """A NumPy ``step(t, g, p, st) -> updates`` over whole parameter dicts (float64; t is 1-based; ``st`` a
    dict it keeps its state in)."""
    return replay(lambda g, p, t, st: (step(t, g, p, st), st), {k: P0[k] for k in KEYS}, GRADS, whole_tree=True)


def _check(opt, step, rtol=2e-5, atol=2e-6, **run_kw):
    want = _ref(step)
    for jit in (False, True):
        got = _run(opt, jit, **run_kw)
        for i, (w, g) in enumerate(zip(want, got)):
            for k in KEYS:
                np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol, err_msg=f"step {i + 1}, {k}, jit={jit}")


def _dot(a, b):
    return sum(float(np.sum(a[k] * b[k])) for k in KEYS)


def _norm(a):
    return np.sqrt(_dot(a, a))


def _zeros():
    return {k: np.zeros(v.shape) for k, v in P0.items()}


# --- prodigy / dadapt_adamw ---------------------------------------------------------------------------------------

def _prodigy_step(lr=1.0, b1=0.9, b2=0.999, beta3=None, eps=1e-8, d0=1e-6, coef=1.0, wd=0.0, safeguard=False):
    beta3 = np.sqrt(b2) if beta3 is None else beta3

    def step(t, g, p, st):
        if not st:
            st.update(m=_zeros(), v=_zeros(), s=_zeros(), p0={k: p[k].copy() for k in KEYS}, d=d0, num=0.0)
        d = st["d"]
        sched = lr(t - 1) if callable(lr) else lr
        dlr = d * sched * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        acum = _dot(g, {k: st["p0"][k] - p[k] for k in KEYS})
        for k in KEYS:
            dg = d * g[k]
            st["m"][k] = b1 * st["m"][k] + (1 - b1) * dg
            st["v"][k] = b2 * st["v"][k] + (1 - b2) * dg * dg
            st["s"][k] = beta3 * st["s"][k] + (d if safeguard else dlr) * dg / d0
        st["num"] = beta3 * st["num"] + (d / d0) * dlr * acum
        st["d"] = max(d, coef * st["num"] / sum(np.abs(st["s"][k]).sum() for k in KEYS))
        return {k: -wd * dlr * p[k] - dlr * st["m"][k] / (np.sqrt(st["v"][k]) + st["d"] * eps) for k in KEYS}
    return step


# D's estimate (a ratio of sums) amplifies float32's rounding; the parameters pass near 0: an absolute tolerance
D_TOL = dict(rtol=2e-5, atol=2e-5)


def test_prodigy():
    _check(contrib.prodigy(estim_lr0=0.05), _prodigy_step(d0=0.05), **D_TOL)
    _check(contrib.prodigy(0.5, betas=(0.8, 0.99), beta3=0.9, estim_lr0=0.02, estim_lr_coef=2.0, weight_decay=0.1),
           _prodigy_step(0.5, 0.8, 0.99, 0.9, d0=0.02, coef=2.0, wd=0.1), **D_TOL)
    _check(contrib.prodigy(lambda c: 1.0 / (1.0 + c), estim_lr0=0.05, safeguard_warmup=True),
           _prodigy_step(lambda c: 1.0 / (1.0 + c), d0=0.05, safeguard=True), **D_TOL)


def test_prodigy_state_and_d_growth():
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    opt = contrib.prodigy(estim_lr0=1e-3)
    state = opt.init(params)
    assert isinstance(state, contrib.ProdigyState)
    assert state.estim_lr.dtype == jnp.float32 and state.count.dtype == jnp.int32
    for g in GRADS:
        u, state = opt.update({k: jnp.asarray(v) for k, v in g.items()}, state, params)
        params = optim.apply_updates(params, u)
    assert float(state.estim_lr) > 1e-3  # D only grows
    assert int(state.count) == len(GRADS)


def _dadapt_step(lr=1.0, b1=0.9, b2=0.999, eps=1e-8, d0=1e-6, wd=0.0):
    sb2 = np.sqrt(b2)

    def step(t, g, p, st):
        if not st:
            st.update(m=_zeros(), v=_zeros(), s=_zeros(), d=d0, num=0.0)
        dlr = st["d"] * lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        acum = _dot(g, {k: st["s"][k] / (np.sqrt(st["v"][k]) + eps) for k in KEYS})
        for k in KEYS:
            st["m"][k] = b1 * st["m"][k] + (1 - b1) * dlr * g[k]
            st["v"][k] = b2 * st["v"][k] + (1 - b2) * g[k] ** 2
            st["s"][k] = sb2 * st["s"][k] + (1 - sb2) * dlr * g[k]
        st["num"] = sb2 * st["num"] + (1 - sb2) * dlr * acum
        l1 = sum(np.abs(st["s"][k]).sum() for k in KEYS)
        st["d"] = max(st["d"], st["num"] / ((1 - sb2) * l1))
        return {k: -wd * dlr * p[k] - st["m"][k] / (np.sqrt(st["v"][k]) + eps) for k in KEYS}
    return step


def test_dadapt_adamw():
    _check(contrib.dadapt_adamw(estim_lr0=0.05), _dadapt_step(d0=0.05), **D_TOL)
    _check(contrib.dadapt_adamw(0.5, betas=(0.8, 0.99), estim_lr0=0.1, weight_decay=0.1),
           _dadapt_step(0.5, 0.8, 0.99, d0=0.1, wd=0.1), **D_TOL)


# --- dog / dowg ---------------------------------------------------------------------------------------------------

def _dog_step(lr=1.0, kind="heuristic", value=1e-6, eps=1e-8, wd=None):
    def step(t, g, p, st):
        if not st:
            r0 = {"distance": value, "heuristic": value * (1 + _norm(p)), "learning_rate": 0.0}[kind]
            st.update(x0={k: p[k].copy() for k in KEYS}, r=r0, G=0.0)
        if wd is not None:
            g = {k: g[k] + wd * p[k] for k in KEYS}
        st["r"] = max(st["r"], _norm({k: st["x0"][k] - p[k] for k in KEYS}))
        st["G"] += _dot(g, g)
        eta = value if kind == "learning_rate" and t == 1 else st["r"] / np.sqrt(st["G"] + eps)
        return {k: -lr * eta * g[k] for k in KEYS}
    return step


def test_dog():
    _check(contrib.dog(), _dog_step())
    _check(contrib.dog(init_step=("heuristic", 1e-2)), _dog_step(value=1e-2))
    _check(contrib.dog(0.5, init_step=("distance", 0.1), weight_decay=0.1), _dog_step(0.5, "distance", 0.1, wd=0.1))
    _check(contrib.dog(init_step=("learning_rate", 0.05)), _dog_step(kind="learning_rate", value=0.05))


def test_dog_weight_decay_mask():
    def step(t, g, p, st):  # decay on w only
        return _dog_step(wd=0.1)(t, {"w": g["w"], "b": g["b"] - 0.1 * p["b"]}, p, st)
    _check(contrib.dog(weight_decay=0.1, mask={"w": True, "b": False}), step)


def _dowg_step(lr=1.0, d2_0=None, eps=1e-4, wd=None):
    def step(t, g, p, st):
        if not st:
            st.update(x0={k: p[k].copy() for k in KEYS}, d2=eps if d2_0 is None else d2_0, W=0.0)
        if wd is not None:
            g = {k: g[k] + wd * p[k] for k in KEYS}
        diff = {k: st["x0"][k] - p[k] for k in KEYS}
        st["d2"] = max(st["d2"], _dot(diff, diff))
        st["W"] += st["d2"] * _dot(g, g)
        eta = st["d2"] / (np.sqrt(st["W"]) + eps)
        return {k: -lr * eta * g[k] for k in KEYS}
    return step


def test_dowg():
    _check(contrib.dowg(), _dowg_step())
    _check(contrib.dowg(0.5, init_estim_sq_dist=0.2, eps=1e-3, weight_decay=0.05), _dowg_step(0.5, 0.2, 1e-3, 0.05))


# --- cocob --------------------------------------------------------------------------------------------------------

def _cocob_step(lr=1.0, alpha=100.0, eps=1e-8, wd=0.0):
    def step(t, g, p, st):
        if not st:
            st.update(p0={k: p[k].copy() for k in KEYS}, C=_zeros(), L={k: eps * np.ones(p[k].shape) for k in KEYS},
                      G=_zeros(), R=_zeros())
        out = {}
        for k in KEYS:
            c = lr * (g[k] + wd * p[k])
            st["L"][k] = np.maximum(st["L"][k], np.abs(c))
            st["G"][k] = st["G"][k] + np.abs(c)
            st["R"][k] = np.maximum(st["R"][k] - c * (p[k] - st["p0"][k]), 0)
            st["C"][k] = st["C"][k] - c
            L, G, R = st["L"][k], st["G"][k], st["R"][k]
            out[k] = st["p0"][k] + st["C"][k] / (L * np.maximum(G + L, alpha * L)) * (L + R) - p[k]
        return out
    return step


def test_cocob():
    _check(contrib.cocob(), _cocob_step())
    _check(contrib.cocob(0.5, alpha=10.0, eps=1e-3, weight_decay=0.1), _cocob_step(0.5, 10.0, 1e-3, 0.1))


def test_scale_by_cocob_state():
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = contrib.scale_by_cocob(eps=0.5).init(params)
    assert isinstance(state, contrib.COCOBState)
    np.testing.assert_array_equal(np.asarray(state.scale["w"]), np.full((4, 3), 0.5, np.float32))
    np.testing.assert_array_equal(np.asarray(state.init_particles["b"]), P0["b"])


# --- mechanize ----------------------------------------------------------------------------------------------------

def _mechanic_step(base, wd=1e-2, eps=1e-8, s_init=1e-6, n=6):
    betas = np.array([1.0 - 0.1 ** k for k in range(1, n + 1)])

    def step(t, g, p, st):
        if not st:
            st.update(r=np.zeros(n), m=np.zeros(n), v=np.zeros(n), s=np.full(n, s_init), x0=None, base={})
        neg = base(t, g, p, st["base"])
        if st["x0"] is None:
            st["x0"] = {k: p[k].copy() for k in KEYS}
        x0, s_sum = st["x0"], st["s"].sum()
        gw = {k: g[k] + wd * s_sum * _norm(g) / (_norm(p) + eps) * p[k] for k in KEYS}
        delta_prev = {k: (x0[k] - p[k]) / (s_sum + eps) for k in KEYS}
        h = _dot(gw, delta_prev)
        clipped = np.clip(h, -st["m"], st["m"])
        st["m"] = np.maximum(betas * st["m"], abs(h) + eps)
        st["v"] = betas ** 2 * st["v"] + h ** 2
        st["r"] = betas * st["r"] + clipped * st["s"]
        st["s"] = (s_init / n * st["m"] + np.maximum(0.0, st["r"])) / (np.sqrt(st["v"]) + eps)
        return {k: x0[k] - st["s"].sum() * (delta_prev[k] - neg[k]) - p[k] for k in KEYS}
    return step


def _sgd_momentum(lr, mom):
    def step(t, g, p, st):
        st["tr"] = {k: g[k] + mom * st.get("tr", _zeros())[k] for k in KEYS}
        return {k: -lr * st["tr"][k] for k in KEYS}
    return step


def test_mechanize():
    _check(contrib.mechanize(optim.sgd(1.0)), _mechanic_step(_sgd_momentum(1.0, 0.0)))
    _check(contrib.mechanize(optim.sgd(0.1), weight_decay=0.5, s_init=0.1),
           _mechanic_step(_sgd_momentum(0.1, 0.0), wd=0.5, s_init=0.1))
    _check(contrib.mechanize(optim.sgd(0.5, momentum=0.9), weight_decay=0.0, s_init=1e-3, num_betas=3),
           _mechanic_step(_sgd_momentum(0.5, 0.9), wd=0.0, s_init=1e-3, n=3))


def test_mechanize_passes_extra_args_and_keeps_base_state():
    seen = []

    def init(params):
        return optim.EmptyState()

    def update(u, s, params=None, **extra):
        seen.append(sorted(extra))
        return u, s
    opt = contrib.mechanize(optim.GradientTransformationExtraArgs(init, update))
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    assert state.s.shape == (6,) and state.base_optimizer_state == optim.EmptyState()
    opt.update(params, state, params, value=jnp.asarray(1.0))
    assert seen == [["value"]]


# --- momo / momo_adam ---------------------------------------------------------------------------------------------

def _momo_step(lr=1.0, beta=0.9, lb0=0.0, wd=0.0, adapt=False):
    def step(t, g, p, st):
        if not st:
            st.update(m=_zeros(), barf=0.0, gamma=0.0, lb=lb0)
        bt = 0.0 if t == 1 else beta
        a = lr(t - 1) if callable(lr) else lr
        st["barf"] = bt * st["barf"] + (1 - bt) * _loss64(p)
        st["m"] = {k: bt * st["m"][k] + (1 - bt) * g[k] for k in KEYS}
        st["gamma"] = bt * st["gamma"] + (1 - bt) * _dot(g, p)
        nrm, ip = _dot(st["m"], st["m"]), _dot(st["m"], p)
        lb = st["lb"]
        if adapt:
            cap = (1 + a * wd) * (st["barf"] - st["gamma"]) + ip
            lb = max(cap / (2 * (1 + a * wd)), lb0) if cap < (1 + a * wd) * st["lb"] else st["lb"]
        t1 = 0.0 if nrm <= np.finfo(float).eps else max((1 + a * wd) * (st["barf"] - lb - st["gamma"]) + ip, 0) / nrm
        tau = min(a, t1)
        if adapt:
            st["lb"] = max(st["barf"] + ip - st["gamma"] - 0.5 * tau * nrm, lb0)
        return {k: -(a * wd) / (1 + a * wd) * p[k] - tau * st["m"][k] for k in KEYS}
    return step


def test_momo():
    _check(contrib.momo(), _momo_step(), with_value=True)
    _check(contrib.momo(0.1, beta=0.8, weight_decay=0.1), _momo_step(0.1, 0.8, wd=0.1), with_value=True)
    _check(contrib.momo(0.5, lower_bound=0.5, adapt_lower_bound=True, weight_decay=0.05),
           _momo_step(0.5, lb0=0.5, wd=0.05, adapt=True), with_value=True)
    _check(contrib.momo(lambda c: 0.5 / (1.0 + c)), _momo_step(lambda c: 0.5 / (1.0 + c)), with_value=True)


def _momo_adam_step(lr=1e-2, b1=0.9, b2=0.999, eps=1e-8, lb0=0.0, wd=0.0, adapt=False):
    def step(t, g, p, st):
        if not st:
            st.update(m=_zeros(), v=_zeros(), barf=0.0, gamma=0.0, lb=lb0)
        a = lr
        st["barf"] = b1 * st["barf"] + (1 - b1) * _loss64(p)
        st["m"] = {k: b1 * st["m"][k] + (1 - b1) * g[k] for k in KEYS}
        st["v"] = {k: b2 * st["v"][k] + (1 - b2) * g[k] ** 2 for k in KEYS}
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        pre = {k: eps + np.sqrt(st["v"][k] / bc2) for k in KEYS}
        nrm = _dot(st["m"], {k: st["m"][k] / pre[k] for k in KEYS})
        st["gamma"] = b1 * st["gamma"] + (1 - b1) * _dot(g, p)
        ip = _dot(st["m"], p)
        lb = st["lb"]
        if adapt:
            cap = (1 + a * wd) * (st["barf"] - st["gamma"]) + ip
            if cap < (1 + a * wd) * bc1 * st["lb"]:
                lb = max(cap / (2 * bc1 * (1 + a * wd)), lb0)
        t1 = max((1 + a * wd) * (st["barf"] - bc1 * lb - st["gamma"]) + ip, 0) / nrm
        tau = min(a / bc1, t1)
        if adapt:
            st["lb"] = max((st["barf"] + ip - st["gamma"] - 0.5 * tau * nrm) / bc1, lb0)
        return {k: -(a * wd) / (1 + a * wd) * p[k] - tau * st["m"][k] / pre[k] for k in KEYS}
    return step


def test_momo_adam():
    _check(contrib.momo_adam(), _momo_adam_step(), with_value=True)
    _check(contrib.momo_adam(0.5, b1=0.8, b2=0.99, weight_decay=0.1), _momo_adam_step(0.5, 0.8, 0.99, wd=0.1),
           with_value=True)
    _check(contrib.momo_adam(1.0, lower_bound=0.5, adapt_lower_bound=True, weight_decay=0.05),
           _momo_adam_step(1.0, lb0=0.5, wd=0.05, adapt=True), with_value=True)


def test_momo_takes_no_step_at_a_zero_momentum():
    params = {"x": jnp.asarray([1.0, 2.0])}
    opt = contrib.momo()
    u, state = opt.update({"x": jnp.zeros(2)}, opt.init(params), params, value=jnp.asarray(2.5))
    np.testing.assert_array_equal(np.asarray(u["x"]), np.zeros(2, np.float32))
    assert isinstance(state, contrib.MomoState) and int(state.count) == 1


# --- sophia -------------------------------------------------------------------------------------------------------

# a diagonal quadratic: Hutchinson's estimate r * (H r) is exactly H's diagonal C whatever the signs r
C = {k: np.abs(RNG.standard_normal(v.shape)).astype(np.float32) + 0.5 for k, v in P0.items()}


def _quadratic(p):
    return sum(0.5 * jnp.sum(jnp.asarray(C[k]) * p[k] ** 2) for k in KEYS)


def _sophia_step(lr, b1=0.965, b2=0.99, eps=1e-8, wd=1e-4, gamma=0.01, clip=1.0, interval=10):
    def step(t, g, p, st):
        if not st:
            st.update(mu=_zeros(), nu=_zeros())
        st["mu"] = {k: (1 - b1) * g[k] + b1 * st["mu"][k] for k in KEYS}
        u = {k: st["mu"][k] / (1 - b1 ** t) / np.maximum(gamma * st["nu"][k], eps) for k in KEYS}
        if clip is not None:
            u = {k: np.clip(u[k], -clip, clip) for k in KEYS}
        if (t - 1) % interval == 0:
            st["nu"] = {k: (1 - b2) * C[k].astype(np.float64) + b2 * st["nu"][k] for k in KEYS}
        return {k: -lr * (u[k] + wd * p[k]) for k in KEYS}
    return step


def test_sophia():
    fixed = {"obj_fn": _quadratic}
    _check(contrib.sophia(0.1), _sophia_step(0.1), fixed=fixed)
    # (a Hessian EMA large enough that only some updates are clipped)
    _check(contrib.sophia(0.1, b2=0.5, gamma=1.0, update_interval=3), _sophia_step(0.1, b2=0.5, gamma=1.0, interval=3),
           fixed=fixed)
    _check(contrib.sophia(0.05, b1=0.9, b2=0.9, gamma=0.05, weight_decay=0.01, clip_threshold=None, update_interval=2),
           _sophia_step(0.05, 0.9, 0.9, wd=0.01, gamma=0.05, clip=None, interval=2), fixed=fixed)
    _check(contrib.sophia(0.1, clip_threshold=0.3, update_interval=1,
                          hessian_diagonal_fn=contrib.hutchinson_estimator_diag_hessian(kiln.random.PRNGKey(5))),
           _sophia_step(0.1, clip=0.3, interval=1), fixed=fixed)


def test_hutchinson_estimator_is_signs_times_hessian_vector_product():
    A = RNG.standard_normal((5, 5))
    A = (A + A.T).astype(np.float32)  # a full (not diagonal) Hessian: the estimate depends on the draws

    def obj(p):
        return 0.5 * p["x"] @ (jnp.asarray(A) @ p["x"]) + jnp.sum(p["y"] ** 3)
    params = {"x": jnp.asarray(RNG.standard_normal(5).astype(np.float32)), "y": jnp.asarray([0.5, -1.0])}
    est = contrib.hutchinson_estimator_diag_hessian(kiln.random.PRNGKey(3))
    state = est.init(params)
    for _ in range(2):
        key, sub = kiln.random.split(state.key)
        kx, ky = kiln.random.split(sub, 2)  # one key per leaf, in the params' leaf order
        rx = np.asarray(kiln.random.rademacher(kx, (5,), dtype=jnp.float32), np.float64)
        ry = np.asarray(kiln.random.rademacher(ky, (2,), dtype=jnp.float32), np.float64)
        diag, state = est.update(None, state, params, obj_fn=obj)
        np.testing.assert_allclose(np.asarray(diag["x"]), rx * (A.astype(np.float64) @ rx), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(diag["y"]), ry * (6 * np.asarray(params["y"], np.float64) * ry),
                                   rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(state.key), np.asarray(key))
    assert isinstance(state, contrib.HutchinsonState)
    np.testing.assert_array_equal(np.asarray(contrib.hutchinson_estimator_diag_hessian().init(params).key),
                                  np.asarray(kiln.random.PRNGKey(0)))


def test_sophia_state_and_mu_dtype():
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = contrib.sophia(0.1, mu_dtype=jnp.bfloat16).init(params)
    inner = state[0]
    assert isinstance(inner, contrib.SophiaState) and isinstance(inner.hessian_fn_state, contrib.HutchinsonState)
    assert inner.mu["w"].dtype == jnp.bfloat16 and inner.nu["w"].dtype == jnp.float32
    _, state = contrib.sophia(0.1, mu_dtype=jnp.bfloat16).update(params, state, params, obj_fn=_quadratic)
    assert state[0].mu["w"].dtype == jnp.bfloat16


def test_sophia_verbose_prints_the_win_rate(capfd):
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    opt = contrib.sophia(0.1, verbose=True, print_win_rate_every_n_steps=1)
    opt.update(params, opt.init(params), params, obj_fn=_quadratic)
    assert "Sophia optimizer win rate" in capfd.readouterr().out


# --- galore -------------------------------------------------------------------------------------------------------

def _adam_np(b1=0.9, b2=0.999, eps=1e-8):
    def step(t, g, st, key):
        m = (1 - b1) * g + b1 * st.get(("m", key), 0.0)
        v = (1 - b2) * g * g + b2 * st.get(("v", key), 0.0)
        st[("m", key)], st[("v", key)] = m, v
        return (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return step


def _galore_step(lr, rank, gap, base, scale=1.0, wd=0.0, matrix_of=None):
    """GaLore in NumPy: ``matrix_of[k]`` gives (to_matrix, from_matrix) for the projected leaves."""
    matrix_of = matrix_of or {"w": (lambda x: x, lambda x: x)}

    def step(t, g, p, st):
        out = {}
        for k in KEYS:
            if k not in matrix_of:
                out[k] = base(t, g[k], st, k)
                continue
            to_m, from_m = matrix_of[k]
            G = to_m(g[k])
            m, n = G.shape
            r = min(rank, m, n)
            if (t - 1) % gap == 0:
                U, _, Vt = np.linalg.svd(G, full_matrices=False)
                st[("P", k)] = U[:, :r] if m >= n else Vt[:r].T
            P = st[("P", k)]
            low = base(t, P.T @ G if m >= n else G @ P, st, k)
            out[k] = scale * from_m(P @ low if m >= n else low @ P.T)
        return {k: -lr * (out[k] + wd * p[k]) for k in KEYS}
    return step


def test_galore_adam_one_projection():
    # one SVD (at step 1): Adam is odd in its input, so P's singular vectors' signs do not matter
    _check(contrib.galore(0.05, rank=2, update_proj_gap=100), _galore_step(0.05, 2, 100, _adam_np()), rtol=1e-4,
           atol=1e-5)
    _check(contrib.galore(0.05, rank=1, update_proj_gap=100, scale=0.5, weight_decay=0.1,
                          base_optimizer=optim.scale_by_adam(b1=0.8)),
           _galore_step(0.05, 1, 100, _adam_np(b1=0.8), scale=0.5, wd=0.1), rtol=1e-4, atol=1e-5)


def test_galore_stateless_base_reprojects_every_step():
    # with plain SGD each update is P P.T G, which does not depend on the singular vectors' signs
    _check(contrib.galore(0.1, rank=2, update_proj_gap=1, base_optimizer=optim.sgd(1.0)),
           _galore_step(0.1, 2, 1, lambda t, g, st, k: -g), rtol=1e-4, atol=1e-5)


def test_galore_dimension_numbers_and_state_shapes():
    # w (4, 3) seen as its transpose (3 x 4, wide: right projection); b not projected
    dims = {"w": contrib.GaLoreDimensionNumbers(reduction_axis=1, output_axis=0), "b": None}
    _check(contrib.galore(0.05, rank=2, update_proj_gap=100, weight_dimension_numbers=dims),
           _galore_step(0.05, 2, 100, _adam_np(), matrix_of={"w": (lambda x: x.T, lambda x: x.T)}), rtol=1e-4,
           atol=1e-5)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = contrib.scale_by_galore(rank=2, weight_dimension_numbers=dims).init(params)
    assert isinstance(state, contrib.GaLoreState)
    assert state.projector["w"].shape == (4, 2) and state.projector["b"].shape == (0, 0)
    assert state.base_optimizer_state.mu["w"].shape == (3, 2) and state.base_optimizer_state.mu["b"].shape == (3,)


def test_galore_three_dimensional_weights():
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    g = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    dims = contrib.GaLoreDimensionNumbers(reduction_axis=(0,), output_axis=(1, 2))
    for spec in (dims, {"a": dims}, lambda p: {"a": dims}):
        opt = contrib.scale_by_galore(rank=2, base_optimizer=optim.sgd(1.0), weight_dimension_numbers=spec)
        params = {"a": jnp.asarray(x)}
        u, _ = opt.update({"a": jnp.asarray(g)}, opt.init(params), params)
        G = g.reshape(4, 6).astype(np.float64)
        U = np.linalg.svd(G, full_matrices=False)[0][:, :2]
        np.testing.assert_allclose(np.asarray(u["a"]), -(U @ U.T @ G).reshape(4, 2, 3), rtol=1e-4, atol=1e-5)


def test_galore_empty_params():
    opt = contrib.galore(0.1)
    state = opt.init({})
    u, _ = opt.update({}, state, {})
    assert u == {}


# --- errors -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["prodigy", "dadapt_adamw", "dog", "dowg", "cocob", "mechanize", "momo",
                                  "momo_adam", "sophia"])
def test_update_without_params_says_how_to_pass_them(name):
    opt = {"mechanize": lambda: contrib.mechanize(optim.sgd(1.0)), "sophia": lambda: contrib.sophia(0.1)}.get(
        name, getattr(contrib, name))()
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    with pytest.raises(ValueError, match=r"update needs the (current )?params.*update\(grads, state, params"):
        opt.update(params, opt.init(params), None, value=jnp.asarray(1.0), obj_fn=_quadratic)


@pytest.mark.parametrize("name", ["momo", "momo_adam"])
def test_momo_without_value_says_how_to_pass_it(name):
    opt = getattr(contrib, name)()
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    with pytest.raises(ValueError, match=rf"{name}: update needs the loss.*value=loss"):
        opt.update(params, opt.init(params), params)


def test_sophia_without_obj_fn_says_how_to_pass_it():
    opt = contrib.sophia(0.1)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    with pytest.raises(ValueError, match=r"needs obj_fn.*obj_fn=lambda p"):
        opt.update(params, opt.init(params), params)


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match=r"dog: init_step must be a pair \(kind, value\)"):
        contrib.dog(init_step=("sometimes", 1.0))
    with pytest.raises(ValueError, match=r"dog: init_step must be a pair"):
        contrib.dog(init_step=0.1)
    with pytest.raises(TypeError, match=r"mechanize: expected a GradientTransformation"):
        contrib.mechanize(lambda g: g)
    with pytest.raises(ValueError, match=r"mechanize: num_betas must be an int >= 1"):
        contrib.mechanize(optim.sgd(1.0), num_betas=0)
    with pytest.raises(ValueError, match=r"sophia: update_interval must be an int >= 1"):
        contrib.sophia(0.1, update_interval=0)
    with pytest.raises(ValueError, match=r"sophia: verbose=True .* must then be >= 1"):
        contrib.sophia(0.1, verbose=True)
    with pytest.raises(TypeError, match=r"sophia: hessian_diagonal_fn: expected a GradientTransformation"):
        contrib.sophia(0.1, hessian_diagonal_fn=lambda p: p)
    with pytest.raises(TypeError, match=r"galore: rank must be an int"):
        contrib.galore(0.1, rank=2.0)
    with pytest.raises(ValueError, match=r"galore: rank must be positive"):
        contrib.galore(0.1, rank=0)
    with pytest.raises(ValueError, match=r"galore: update_proj_gap must be an int >= 1"):
        contrib.galore(0.1, update_proj_gap=0)
    with pytest.raises(TypeError, match=r"galore: base_optimizer: expected a GradientTransformation"):
        contrib.galore(0.1, base_optimizer="adam")


def test_galore_bad_dimension_numbers():
    params = {"a": jnp.zeros((2, 3, 4))}
    for dims, msg in [(contrib.GaLoreDimensionNumbers(0, (0, 1)), "overlap"),
                      (contrib.GaLoreDimensionNumbers(0, 1), "leave axes of shape"),
                      ({"a": contrib.GaLoreDimensionNumbers()}, "leave axes")]:
        with pytest.raises(ValueError, match=rf"galore: .*{msg}"):
            contrib.galore(0.1, weight_dimension_numbers=dims).init(params)
    with pytest.raises(ValueError, match=r"galore: only parameters of rank >= 2 can be projected"):
        contrib.galore(0.1, weight_dimension_numbers={"b": contrib.GaLoreDimensionNumbers()}).init(
            {"b": jnp.zeros(3)})
