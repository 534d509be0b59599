"""kiln.optim's moment-based optimizers (adamax, amsgrad, adabelief, radam, yogi, adadelta, novograd, adan, the
optimistic ones) against their update equations written in NumPy (float64), eagerly and under kiln.jit."""
import numpy as np
import pytest
from _steps import replay, run

import kiln
import kiln.numpy as jnp
from kiln import optim

RNG = np.random.default_rng(11)
P0 = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in P0.items()} for _ in range(6)]


def _run(opt, jit=False):
    return run(opt, P0, GRADS, jit)


def _ref(step):
    """Runs a NumPy update ``step(g, p, t, st) -> (u, st)`` leaf by leaf (t = 1-based step, st a dict)."""
    return replay(lambda k, g, p, t, st: step(g, p, t, st), P0, GRADS)


def _check(opt, step, rtol=2e-5, atol=2e-6):
    want = _ref(step)
    for jit in (False, True):
        got = _run(opt, jit)
        for i, (w, g) in enumerate(zip(want, got)):
            for k in P0:
                np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol, err_msg=f"step {i + 1}, {k}, jit={jit}")


def _ema(st, key, x, decay):
    st[key] = decay * st.get(key, 0.0) + (1 - decay) * x
    return st[key]


def _nesterov_m_hat(m, g, b1, t):
    return b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1 ** t)


# --- the rescalings, one optimizer each ------------------------------------------------------------------------

def test_adamax_and_adamaxw_with_mask():
    def step(lr, b1, b2, eps, wd=0.0):
        def f(g, p, t, st):
            m = _ema(st, "m", g, b1)
            st["u"] = np.maximum(np.abs(g) + eps, b2 * st.get("u", 0.0))
            return -lr * (m / (1 - b1 ** t) / st["u"] + wd * p), st
        return f
    _check(optim.adamax(0.05), step(0.05, 0.9, 0.999, 1e-8))
    _check(optim.adamax(0.1, b1=0.5, b2=0.8, eps=1e-2), step(0.1, 0.5, 0.8, 1e-2))
    _check(optim.adamaxw(0.05, weight_decay=0.3), step(0.05, 0.9, 0.999, 1e-8, wd=0.3))
    # the mask: weight decay on "w" only
    want_b = _ref(step(0.05, 0.9, 0.999, 1e-8))[-1]["b"]
    want_w = _ref(step(0.05, 0.9, 0.999, 1e-8, wd=0.3))[-1]["w"]
    got = _run(optim.adamaxw(0.05, weight_decay=0.3, mask={"w": True, "b": False}))[-1]
    np.testing.assert_allclose(got["w"], want_w, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got["b"], want_b, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("bc_mu, bc_nu", [(True, True), (False, False), (True, False)])
def test_amsgrad(bc_mu, bc_nu):
    lr, b1, b2, eps, eps_root = 0.05, 0.9, 0.99, 1e-8, 1e-9

    def step(g, p, t, st):
        m, v = _ema(st, "m", g, b1), _ema(st, "v", g * g, b2)
        m_hat = m / (1 - b1 ** t) if bc_mu else m
        v_eff = v / (1 - b2 ** t) if bc_nu else v
        st["v_max"] = np.maximum(st.get("v_max", 0.0), v_eff)
        return -lr * m_hat / (np.sqrt(st["v_max"] + eps_root) + eps), st
    _check(optim.amsgrad(lr, b2=b2, eps_root=eps_root, bias_correction_mu=bc_mu, bias_correction_nu=bc_nu), step)


def test_amsgrad_keeps_the_running_maximum_and_mu_dtype():
    opt = optim.amsgrad(0.1, mu_dtype=jnp.bfloat16)
    params = {k: jnp.asarray(v) for k, v in P0.items()}
    state = opt.init(params)
    assert state[0].mu["w"].dtype == jnp.bfloat16 and state[0].nu["w"].dtype == jnp.float32
    big = {k: 10 * jnp.ones(v.shape) for k, v in P0.items()}
    small = {k: 1e-3 * jnp.ones(v.shape) for k, v in P0.items()}
    _, state = opt.update(big, state, params)
    peak = np.asarray(state[0].nu_max["w"])
    for _ in range(3):
        _, state = opt.update(small, state, params)
        assert state[0].mu["w"].dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(state[0].nu_max["w"]), peak)  # nu decays, nu_max does not
    assert np.all(np.asarray(state[0].nu["w"]) < peak)


@pytest.mark.parametrize("nesterov", [False, True])
def test_adabelief(nesterov):
    lr, b1, b2, eps, eps_root = 0.05, 0.9, 0.999, 1e-8, 1e-10

    def step(g, p, t, st):
        m = _ema(st, "m", g, b1)
        st["s"] = b2 * st.get("s", 0.0) + (1 - b2) * (g - m) ** 2 + eps_root
        m_hat = _nesterov_m_hat(m, g, b1, t) if nesterov else m / (1 - b1 ** t)
        return -lr * m_hat / (np.sqrt(st["s"] / (1 - b2 ** t)) + eps), st
    _check(optim.adabelief(lr, eps=eps, eps_root=eps_root, nesterov=nesterov), step)


def _radam_step(lr, b1, b2, eps, threshold, nesterov=False, branches=None):
    rho_inf = 2 / (1 - b2) - 1

    def step(g, p, t, st):
        m, v = _ema(st, "m", g, b1), _ema(st, "v", g * g, b2)
        m_hat = _nesterov_m_hat(m, g, b1, t) if nesterov else m / (1 - b1 ** t)
        rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if branches is not None:
            branches.add(rho >= threshold)
        if rho < threshold:  # variance not tractable yet: momentum SGD
            return -lr * m_hat, st
        r = np.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        return -lr * r * m_hat / (np.sqrt(v / (1 - b2 ** t)) + eps), st
    return step


@pytest.mark.parametrize("nesterov", [False, True])
def test_radam_takes_both_branches(nesterov):
    branches = set()
    _check(optim.radam(0.05, b2=0.8, threshold=4.0, nesterov=nesterov),
           _radam_step(0.05, 0.9, 0.8, 1e-8, 4.0, nesterov, branches))
    assert branches == {False, True}  # (the parameters chosen so that ro passes the threshold within six steps)
    # the defaults: ro stays under 5 for the first five steps, then crosses it. There ro = 1999 - 1993.0..., a
    # cancellation that float32 (as optax's) computes to about 1e-3 relative: hence the tolerance
    _check(optim.radam(0.05), _radam_step(0.05, 0.9, 0.999, 1e-8, 5.0), rtol=2e-3)


def test_radam_with_injected_hyperparameters_under_jit():
    # b2 a traced float32 (ro's b2 ** count then computed in the program); same numbers as a constant b2
    for jit in (False, True):
        got = _run(optim.inject_hyperparams(optim.radam)(learning_rate=0.05, b2=0.8, threshold=4.0), jit)
        want = _run(optim.radam(0.05, b2=0.8, threshold=4.0), jit)
        np.testing.assert_allclose(got[-1]["w"], want[-1]["w"], rtol=1e-6)


def test_yogi():
    lr, b1, b2, eps, init = 0.05, 0.9, 0.99, 1e-3, 1e-6

    def step(g, p, t, st):
        st["m"] = b1 * st.get("m", init) + (1 - b1) * g
        v = st.get("v", init)
        st["v"] = v - (1 - b2) * np.sign(v - g * g) * g * g
        return -lr * (st["m"] / (1 - b1 ** t)) / (np.sqrt(st["v"] / (1 - b2 ** t)) + eps), st
    _check(optim.yogi(lr, b2=b2), step)
    state = optim.scale_by_yogi(initial_accumulator_value=0.25).init({"a": jnp.zeros(2)})
    np.testing.assert_array_equal(np.asarray(state.mu["a"]), [0.25, 0.25])
    np.testing.assert_array_equal(np.asarray(state.nu["a"]), [0.25, 0.25])


@pytest.mark.parametrize("lr, wd", [(None, 0.0), (0.5, 0.2)])
def test_adadelta(lr, wd):
    rho, eps = 0.8, 1e-6

    def step(g, p, t, st):
        g = g + wd * p
        eg = _ema(st, "eg", g * g, rho)
        dx = np.sqrt(st.get("ex", 0.0) + eps) / np.sqrt(eg + eps) * g
        _ema(st, "ex", dx * dx, rho)
        return (dx if lr is None else -lr * dx), st
    _check(optim.adadelta(lr, rho=rho, eps=eps, weight_decay=wd), step)


def test_adadelta_without_learning_rate_moves_uphill_as_optax():
    # optax's adadelta(learning_rate=None) has no sign flip: its updates follow the gradient
    opt = optim.adadelta()
    u, _ = opt.update({"a": jnp.ones(2)}, opt.init({"a": jnp.zeros(2)}), {"a": jnp.zeros(2)})
    assert np.all(np.asarray(u["a"]) > 0)


def test_novograd():
    lr, b1, b2, eps, eps_root, wd = 0.05, 0.9, 0.5, 1e-6, 1e-7, 0.1

    def step(g, p, t, st):
        sq = np.sum(g * g)
        st["n"] = sq if t == 1 else b2 * st["n"] + (1 - b2) * sq
        u = g / (np.sqrt(st["n"] + eps_root) + eps) + wd * p
        st["m"] = u if t == 1 else b1 * st["m"] + u
        return -lr * st["m"], st
    _check(optim.novograd(lr, b1, b2, eps, eps_root, wd), step)
    state = optim.novograd(lr).init({k: jnp.asarray(v) for k, v in P0.items()})
    assert state[0].nu["w"].shape == () and state[0].nu["w"].dtype == jnp.float32  # one scalar per leaf


@pytest.mark.parametrize("wd", [0.0, 0.05])
def test_adan(wd):
    lr, b1, b2, b3, eps, eps_root = 0.05, 0.98, 0.92, 0.99, 1e-8, 1e-8

    def step(g, p, t, st):
        diff = np.zeros_like(g) if t == 1 else g - st["g"]
        st["g"] = g
        m, v = _ema(st, "m", g, b1), _ema(st, "v", diff, b2)
        n = _ema(st, "n", (g + (1 - b2) * diff) ** 2, b3)
        m_hat, v_hat, n_hat = m / (1 - b1 ** t), v / (1 - b2 ** t), n / (1 - b3 ** t)
        return -lr * ((m_hat + (1 - b2) * v_hat) / (np.sqrt(n_hat + eps_root) + eps) + wd * p), st
    _check(optim.adan(lr, weight_decay=wd), step)


def test_optimistic_gradient_descent():
    lr, alpha, beta = 0.05, 0.7, 0.3

    def step(g, p, t, st):
        prev = st.get("prev", g)
        st["prev"] = g
        return -lr * ((alpha + beta) * g - beta * prev), st
    _check(optim.optimistic_gradient_descent(lr, alpha, beta), step)
    state = optim.scale_by_optimistic_gradient().init({"a": jnp.zeros(2)})
    assert bool(state.is_initial_step)
    _, state = optim.scale_by_optimistic_gradient().update({"a": jnp.ones(2)}, state)
    assert not bool(state.is_initial_step)
    np.testing.assert_array_equal(np.asarray(state.previous_gradient["a"]), [1.0, 1.0])


def _nesterov_adam(b1, b2, eps):
    def rescaled(g, st, t):
        m, v = _ema(st, "m", g, b1), _ema(st, "v", g * g, b2)
        return _nesterov_m_hat(m, g, b1, t) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return rescaled


def test_optimistic_adam_v2_and_deprecated_optimistic_adam():
    lr, alpha, beta = 0.01, 0.5, 2.0
    adam = _nesterov_adam(0.9, 0.999, 1e-8)

    def step_v2(g, p, t, st):
        a = adam(g, st, t)
        prev = st.get("prev", a)
        st["prev"] = a
        return -lr * ((alpha + beta) * a - beta * prev), st
    _check(optim.optimistic_adam_v2(lr, alpha=alpha, beta=beta), step_v2)

    def step_v1(g, p, t, st):  # alpha = learning rate, beta = optimism, then the sign flipped
        a = adam(g, st, t)
        prev = st.get("prev", a)
        st["prev"] = a
        return -((0.01 + 0.03) * a - 0.03 * prev), st
    with pytest.warns(DeprecationWarning, match="use optimistic_adam_v2"):
        opt = optim.optimistic_adam(0.01, optimism=0.03)
    _check(opt, step_v1)


def test_state_layouts_are_optaxs():
    params = {"a": jnp.zeros(3)}
    assert optim.ScaleByAmsgradState._fields == ("count", "mu", "nu", "nu_max")
    assert optim.ScaleByAdaDeltaState._fields == ("e_g", "e_x")
    assert optim.ScaleByAdanState._fields == ("m", "v", "n", "g", "t")
    assert optim.ScaleByBeliefState._fields == ("count", "mu", "nu")
    assert optim.ScaleByNovogradState._fields == ("count", "mu", "nu")
    for make in (optim.scale_by_adamax, optim.scale_by_radam, optim.scale_by_yogi):
        assert type(make().init(params)) is optim.ScaleByAdamState  # (optax reuses Adam's state)
    assert type(optim.scale_by_belief().init(params)) is optim.ScaleByBeliefState
    assert len(optim.adadelta().init(params)) == 3  # weight decay, rescaling, learning rate (identity when None)
    assert len(optim.adan(0.1).init(params)) == 3 and len(optim.optimistic_adam_v2(0.1).init(params)) == 3
    state = optim.scale_by_adan().init(params)
    assert state.t.dtype == jnp.int32 and int(state.t) == 0


def test_complex_gradients_use_the_squared_modulus():
    lr, b1, b2, eps = 0.05, 0.9, 0.999, 1e-8
    p0 = (RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).astype(np.complex64)
    gs = [(RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).astype(np.complex64) for _ in range(4)]
    for jit in (False, True):
        opt = optim.amsgrad(lr)
        p, st = jnp.asarray(p0), opt.init(jnp.asarray(p0))
        update = kiln.jit(opt.update) if jit else opt.update
        want, m, v, v_max = p0.astype(np.complex128), 0, 0, 0
        for t, g in enumerate(gs, 1):
            u, st = update(jnp.asarray(g), st, p)
            p = optim.apply_updates(p, u)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * np.abs(g.astype(np.complex128)) ** 2
            v_max = np.maximum(v_max, v / (1 - b2 ** t))
            want = want - lr * m / (1 - b1 ** t) / (np.sqrt(v_max) + eps)
        assert st[0].nu.dtype == jnp.float32 or st[0].nu.dtype == jnp.complex64
        np.testing.assert_allclose(np.asarray(p), want, rtol=2e-5, atol=2e-6)


# --- inside a jitted training step ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["adamax", "amsgrad", "adabelief", "radam", "yogi", "novograd", "adan",
                                  "optimistic_adam_v2"])
def test_jitted_training_step_with_a_schedule_learning_rate(name):
    """jit(grad + update + apply_updates) with a warmup-cosine learning rate: the same parameters as the eager
    loop, and the loss of a least-squares problem goes down."""
    a = RNG.standard_normal((8, 3)).astype(np.float32)
    y = a @ np.array([1.0, -2.0, 0.5], np.float32)
    schedule = optim.warmup_cosine_decay_schedule(0.0, 0.1, 3, 40, 0.01)
    opt = getattr(optim, name)(schedule)

    def loss(w):
        return jnp.mean((jnp.asarray(a) @ w - y) ** 2)

    def train_step(w, state):
        updates, state = opt.update(kiln.grad(loss)(w), state, w)
        return optim.apply_updates(w, updates), state

    results = []
    for step_fn in (train_step, kiln.jit(train_step)):
        w = jnp.zeros(3)
        state = opt.init(w)
        for _ in range(40):
            w, state = step_fn(w, state)
        results.append(np.asarray(w))
    # (radam: its ro = 2 / (1 - b2) - 1 - 2 t b2**t / (1 - b2**t) cancels to ~1e-3 in float32, and b2**t is a
    # repeated product eagerly but lax.pow under jit, as in optax, so the two loops agree only to that)
    np.testing.assert_allclose(results[1], results[0], rtol=2e-3 if name == "radam" else 1e-5, atol=1e-6)
    assert float(loss(jnp.asarray(results[1]))) < 0.5 * float(loss(jnp.zeros(3)))


def test_weight_decay_schedule():
    lr, b1, b2, eps = 0.05, 0.9, 0.999, 1e-8
    schedule = optim.linear_schedule(0.2, 0.0, 4)

    def step(g, p, t, st):
        m = _ema(st, "m", g, b1)
        st["u"] = np.maximum(np.abs(g) + eps, b2 * st.get("u", 0.0))
        wd = 0.2 * max(0.0, 1 - (t - 1) / 4)
        return -lr * (m / (1 - b1 ** t) / st["u"] + wd * p), st
    _check(optim.adamaxw(lr, weight_decay=schedule), step)


# --- errors -----------------------------------------------------------------------------------------------------

def test_errors():
    params = {"a": jnp.ones(2)}
    opt = optim.novograd(0.1)
    with pytest.raises(ValueError, match=r"scale_by_novograd: update needs the params .*update\(grads, state, "
                                         r"params\)"):
        opt.update(params, opt.init(params))
    opt = optim.adan(0.1, weight_decay=0.1)
    with pytest.raises(ValueError, match="add_decayed_weights: update needs the params"):
        opt.update(params, opt.init(params))
    with pytest.warns(DeprecationWarning), \
            pytest.raises(ValueError, match="optimistic_adam: learning_rate must be a number .*optimistic_adam_v2"):
        optim.optimistic_adam(optim.constant_schedule(0.1))
    with pytest.raises(ValueError, match=r"scale_by_radam: b2 must be < 1 .*got 1.0"):
        optim.radam(0.1, b2=1.0)
    with pytest.raises(ValueError, match="the mask must be a pytree of bools"):
        optim.adamaxw(0.1, mask={"b": True}).init(params)


@pytest.mark.parametrize("name", ["adamax", "amsgrad", "adabelief", "radam", "yogi", "adadelta", "novograd", "adan",
                                  "optimistic_gradient_descent", "optimistic_adam_v2"])
def test_states_pass_through_vmap_and_jit_with_donation(name):
    opt = getattr(optim, name)(0.1)
    g = jnp.asarray(RNG.standard_normal((4, 3)).astype(np.float32))
    p = jnp.asarray(RNG.standard_normal((4, 3)).astype(np.float32))
    u, _ = kiln.vmap(opt.update)({"a": g}, kiln.vmap(opt.init)({"a": p}), {"a": p})
    for i in (0, 3):
        u_i, _ = opt.update({"a": g[i]}, opt.init({"a": p[i]}), {"a": p[i]})
        np.testing.assert_allclose(np.asarray(u["a"][i]), np.asarray(u_i["a"]), rtol=1e-6, atol=1e-7)
    step = kiln.jit(opt.update, donate_argnums=1)  # (yogi's two accumulators must be distinct buffers)
    state = opt.init({"a": p[0]})
    for i in range(3):
        _, state = step({"a": g[i]}, state, {"a": p[0]})
