"""kiln.optim's wrappers and combinators (optax's), its newer schedules and optax.microbatching's loops, against
NumPy equations and plain Python logic, eagerly and under kiln.jit. (test_against_optax_combinators.py checks
that optax gives the same numbers, where it is installed.)"""
import functools
import math
import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import optim
from kiln.optim import microbatching as mb

RNG = np.random.default_rng(3)
P0 = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in P0.items()} for _ in range(6)]
TOL = dict(rtol=2e-6, atol=1e-7)


def _tree(d):
    return {k: jnp.asarray(v) for k, v in d.items()}


def _np(d):
    return {k: np.asarray(v) for k, v in d.items()}


def _updates(opt, grads, jitted, params=None):
    """The updates of each step (params kept fixed), and the last state."""
    params = _tree(P0) if params is None else params
    state = opt.init(params)
    update = kiln.jit(opt.update) if jitted else opt.update
    out = []
    for g in grads:
        u, state = update(_tree(g), state, params)
        out.append(_np(u))
    return out, state


both = pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])


# -- skipping updates --------------------------------------------------------------------------------------
def test_skip_functions_count_and_compare():
    g = {"a": jnp.asarray([1.0, np.nan, np.inf]), "b": jnp.asarray([-np.inf, 2.0])}
    skip, state = optim.skip_not_finite(g, jnp.asarray(0), None)
    assert bool(skip) and int(state["num_not_finite"]) == 3 and bool(state["should_skip"])
    skip, state = optim.skip_not_finite(_tree(GRADS[0]), jnp.asarray(0), None)
    assert not bool(skip) and int(state["num_not_finite"]) == 0
    sq = sum(float(np.sum(v.astype(np.float64) ** 2)) for v in GRADS[0].values())
    for bound, want in ((sq * 1.01, False), (sq * 0.99, True)):
        skip, state = optim.skip_large_updates(_tree(GRADS[0]), jnp.asarray(0), None, max_squared_norm=bound)
        assert bool(skip) is want
        np.testing.assert_allclose(float(state["norm_squared"]), sq, rtol=1e-6)
    skip, _ = optim.skip_large_updates({"a": jnp.asarray([np.nan])}, 0, None, max_squared_norm=1.0)
    assert bool(skip)  # a NaN norm is not below the bound


@both
def test_multi_steps_leaves_out_skipped_mini_steps(jitted):
    grads = [dict(g) for g in GRADS]
    grads[1] = {"w": np.full((3, 2), np.nan, np.float32), "b": GRADS[1]["b"]}
    ms = optim.MultiSteps(optim.sgd(1.0), 2, should_skip_update_fn=optim.skip_not_finite)
    params = _tree(P0)
    state = ms.init(params)
    assert _np(state.skip_state) == {"should_skip": False, "num_not_finite": 0}
    update = kiln.jit(ms.update) if jitted else ms.update
    seen = []  # the finite gradients since the last emitted step
    for g in grads:
        u, state = update(_tree(g), state, params)
        finite = all(np.isfinite(v).all() for v in g.values())
        assert bool(state.skip_state["should_skip"]) is (not finite)
        assert int(state.skip_state["num_not_finite"]) == (0 if finite else 6)
        if finite:
            seen.append(g)
        if finite and len(seen) == 2:
            for k in P0:
                np.testing.assert_allclose(np.asarray(u[k]), -(seen[0][k] + seen[1][k]) / 2, **TOL)
            seen = []
        else:
            for k in P0:
                np.testing.assert_array_equal(np.asarray(u[k]), 0)
    assert int(state.gradient_step) == 2 and int(state.mini_step) == 1


def test_multi_steps_checks_the_skip_function():
    with pytest.raises(ValueError, match="should_skip_update_fn must return a boolean scalar array first, got dtype "
                                         "int32"):
        ms = optim.MultiSteps(optim.sgd(1.0), 2, should_skip_update_fn=lambda u, s, p: (jnp.asarray(1), ()))
        ms.update(_tree(GRADS[0]), ms.init(_tree(P0)), _tree(P0))
    with pytest.raises(TypeError, match="MultiSteps: should_skip_update_fn must be a callable"):
        optim.MultiSteps(optim.sgd(1.0), 2, should_skip_update_fn=True)
    # skip_large_updates needs its bound: bind it with functools.partial
    ms = optim.MultiSteps(optim.sgd(1.0), 1, should_skip_update_fn=functools.partial(optim.skip_large_updates,
                                                                                     max_squared_norm=1e-3))
    u, s = ms.update(_tree(GRADS[0]), ms.init(_tree(P0)), _tree(P0))
    assert int(s.gradient_step) == 0 and not np.asarray(u["w"]).any()


# -- moving averages and accumulation ----------------------------------------------------------------------
@both
@pytest.mark.parametrize("debias", [True, False])
def test_ema_is_the_debiased_moving_average(debias, jitted):
    out, state = _updates(optim.ema(0.7, debias=debias), GRADS, jitted)
    avg = {k: np.zeros_like(v, np.float64) for k, v in P0.items()}
    for t, (g, u) in enumerate(zip(GRADS, out), start=1):
        for k in P0:
            avg[k] = 0.3 * g[k] + 0.7 * avg[k]
            want = avg[k] / (1 - 0.7 ** t) if debias else avg[k]
            np.testing.assert_allclose(u[k], want, rtol=1e-5, atol=1e-6)
    assert int(state.count) == len(GRADS) and type(state) is optim.EmaState
    np.testing.assert_allclose(np.asarray(state.ema["w"]), avg["w"], rtol=1e-5, atol=1e-6)
    state = optim.ema(0.9, accumulator_dtype=jnp.bfloat16).init(_tree(P0))
    assert state.ema["w"].dtype == jnp.bfloat16


@both
def test_apply_every_sums_k_steps_then_emits(jitted):
    out, state = _updates(optim.apply_every(3), GRADS, jitted)
    for i, u in enumerate(out):
        for k in P0:
            if i % 3 == 2:
                np.testing.assert_allclose(u[k], GRADS[i - 2][k] + GRADS[i - 1][k] + GRADS[i][k], **TOL)
            else:
                np.testing.assert_array_equal(u[k], 0)
    assert int(state.count) == 0 and type(state) is optim.ApplyEvery
    out, _ = _updates(optim.apply_every(), GRADS[:2], jitted)  # k=1: every step, unchanged
    np.testing.assert_array_equal(out[1]["w"], GRADS[1]["w"])
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match=r"apply_every: k must be an int >= 1"):
            optim.apply_every(bad)


# -- conditional updates -----------------------------------------------------------------------------------
@both
def test_conditionally_mask_and_transform(jitted):
    even = lambda step: step % 2 == 0  # noqa: E731
    out, state = _updates(optim.conditionally_mask(optim.sgd(0.5, momentum=0.9), even), GRADS, jitted)
    trace = {k: 0.0 for k in P0}
    for i, u in enumerate(out):
        for k in P0:
            if i % 2 == 0:
                trace[k] = GRADS[i][k] + 0.9 * trace[k]
                np.testing.assert_allclose(u[k], -0.5 * trace[k], rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(u[k], 0)
    assert type(state) is optim.ConditionallyMaskState and int(state.step) == len(GRADS)
    np.testing.assert_allclose(np.asarray(state.inner_state[0].trace["w"]), trace["w"], rtol=1e-5, atol=1e-6)

    out, state = _updates(optim.conditionally_transform(optim.scale(-2.0), lambda s: s >= 4), GRADS, jitted)
    for i, u in enumerate(out):
        np.testing.assert_allclose(u["w"], GRADS[i]["w"] * (-2.0 if i >= 4 else 1.0), **TOL)
    assert type(state) is optim.ConditionallyTransformState and state._fields == ("inner_state", "step")


def test_conditional_forwards_extra_args_to_the_condition_only_when_asked():
    opt = optim.conditionally_mask(optim.scale(3.0), lambda step, flag: flag, forward_extra_args=True)
    p = {"a": jnp.ones(2)}
    u, _ = opt.update(p, opt.init(p), None, flag=jnp.asarray(False))
    np.testing.assert_array_equal(np.asarray(u["a"]), 0)
    u, _ = kiln.jit(opt.update)(p, opt.init(p), None, flag=jnp.asarray(True))
    np.testing.assert_array_equal(np.asarray(u["a"]), 3)
    with pytest.raises(TypeError, match="conditionally_transform: should_transform_fn must be a callable"):
        optim.conditionally_transform(optim.sgd(0.1), 3)
    with pytest.raises(TypeError, match="conditionally_mask: expected a GradientTransformation"):
        optim.conditionally_mask(lambda u: u, lambda s: True)


# -- freezing, chains, monitoring --------------------------------------------------------------------------
@both
def test_freeze_and_selective_transform(jitted):
    out, _ = _updates(optim.chain(optim.freeze({"w": True, "b": False}), optim.sgd(0.1)), GRADS[:2], jitted)
    np.testing.assert_array_equal(out[1]["w"], 0)
    np.testing.assert_allclose(out[1]["b"], -0.1 * GRADS[1]["b"], **TOL)
    out, _ = _updates(optim.freeze(True), GRADS[:1], jitted)  # a bool freezes everything
    assert not out[0]["w"].any() and not out[0]["b"].any()

    out, state = _updates(optim.selective_transform(optim.sgd(0.1, momentum=0.5), freeze_mask={"w": False, "b": True}),
                          GRADS[:3], jitted)
    trace = GRADS[1]["w"] + 0.5 * GRADS[0]["w"]
    np.testing.assert_allclose(out[2]["w"], -0.1 * (GRADS[2]["w"] + 0.5 * trace), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[2]["b"], 0)
    assert sorted(state.inner_states) == ["freeze", "train"]
    # the frozen parameters have no optimizer state
    assert isinstance(state.inner_states["train"].inner_state[0].trace["b"], optim.MaskedNode)


@both
def test_named_chain_keeps_states_by_name(jitted):
    opt = optim.named_chain(("clip", optim.clip(0.5)), ("sgd", optim.sgd(0.1, momentum=0.9)))
    out, state = _updates(opt, GRADS[:2], jitted)
    assert list(state) == ["clip", "sgd"] and type(state).__name__ == "OrderedDict"
    c0, c1 = (np.clip(g["w"], -0.5, 0.5) for g in GRADS[:2])
    np.testing.assert_allclose(out[1]["w"], -0.1 * (c1 + 0.9 * c0), **TOL)
    with pytest.raises(ValueError, match=r"named_chain: the names must be unique, got \['a', 'a'\]"):
        optim.named_chain(("a", optim.sgd(0.1)), ("a", optim.clip(1.0)))
    with pytest.raises(TypeError, match="named_chain: argument 0 must be a \\(name, transformation\\) pair"):
        optim.named_chain(optim.sgd(0.1))
    with pytest.raises(TypeError, match=r"named_chain: argument 1 \('x'\): expected a GradientTransformation"):
        optim.named_chain(("a", optim.sgd(0.1)), ("x", 3))


@both
def test_stateless_transformations(jitted):
    out, state = _updates(optim.stateless(lambda u, p: {k: 2 * u[k] - p[k] for k in u}), GRADS[:1], jitted)
    np.testing.assert_allclose(out[0]["w"], 2 * GRADS[0]["w"] - P0["w"], **TOL)
    assert state == optim.EmptyState()
    opt = optim.stateless_with_tree_map(lambda g, p: g if p is None else g * p)
    out, _ = _updates(opt, GRADS[:1], jitted)
    np.testing.assert_allclose(out[0]["b"], GRADS[0]["b"] * P0["b"], **TOL)
    u, _ = opt.update(_tree(GRADS[0]), opt.init(None))  # without params: f(g, None)
    np.testing.assert_array_equal(np.asarray(u["b"]), GRADS[0]["b"])
    assert optim.init_empty_state(P0) == optim.EmptyState()
    with pytest.raises(TypeError, match="stateless: f must be a callable"):
        optim.stateless(None)
    with pytest.raises(TypeError, match="stateless_with_tree_map: f must be a callable"):
        optim.stateless_with_tree_map(1.0)


def _norm(tree):
    return math.sqrt(sum(float(np.sum(np.asarray(v, np.float64) ** 2)) for v in tree.values()))


@both
def test_monitor_snapshot_and_measure_with_ema(jitted):
    opt = optim.chain(optim.monitor({"norm": optim.global_norm, "avg": optim.measure_with_ema(optim.global_norm, 0.5)}),
                      optim.snapshot("max", lambda u: jnp.maximum(jnp.max(u["w"]), jnp.max(u["b"]))),
                      optim.sgd(1.0))
    out, state = _updates(opt, GRADS[:3], jitted)
    np.testing.assert_allclose(out[2]["w"], -GRADS[2]["w"], **TOL)  # the updates pass unchanged
    mon, snap = state[0], state[1]
    assert type(mon) is optim.MonitorState and type(snap) is optim.SnapshotState
    norms = [_norm(g) for g in GRADS[:3]]
    np.testing.assert_allclose(float(mon.measurements["norm"]), norms[2], rtol=1e-6)
    avg = 0.0
    for n in norms:
        avg = 0.5 * n + 0.5 * avg
    np.testing.assert_allclose(float(mon.measurements["avg"]), avg / (1 - 0.5 ** 3), rtol=1e-6)
    np.testing.assert_allclose(float(snap.measurement["max"]), max(v.max() for v in GRADS[2].values()))
    assert opt.init(_tree(P0))[0].measurements == {}
    with pytest.raises(TypeError, match="monitor: measures must be a dict"):
        optim.monitor([optim.global_norm])
    with pytest.raises(TypeError, match=r"monitor: measures\['x'\]: expected a GradientTransformation"):
        optim.monitor({"x": 3})
    with pytest.raises(TypeError, match="snapshot: measure must be a callable"):
        optim.snapshot("x", 3)
    with pytest.raises(TypeError, match="measure_with_ema: measure must be a callable"):
        optim.measure_with_ema(None, 0.9)


# -- parameter averaging and lookahead ---------------------------------------------------------------------
def test_periodic_and_incremental_update():
    new, old = _tree(GRADS[0]), _tree(GRADS[1])
    for step in range(5):
        got = kiln.jit(optim.periodic_update, static_argnums=3)(new, old, jnp.asarray(step), 3)
        np.testing.assert_array_equal(np.asarray(got["w"]), (GRADS[0] if step % 3 == 0 else GRADS[1])["w"])
    got = optim.incremental_update(new, old, 0.25)
    np.testing.assert_allclose(np.asarray(got["w"]), 0.25 * GRADS[0]["w"] + 0.75 * GRADS[1]["w"], **TOL)


@both
@pytest.mark.parametrize("reset_state", [False, True])
def test_lookahead_syncs_slow_and_fast_parameters(reset_state, jitted):
    opt = optim.lookahead(optim.sgd(0.1, momentum=0.5), sync_period=2, slow_step_size=0.5, reset_state=reset_state)
    params = optim.LookaheadParams.init_synced(_tree(P0))
    state = opt.init(params)
    update = kiln.jit(opt.update) if jitted else opt.update
    fast = {k: v.astype(np.float64) for k, v in P0.items()}
    slow = dict(fast)
    trace = {k: 0.0 for k in P0}
    for i, g in enumerate(GRADS[:5]):
        u, state = update(_tree(g), state, params)
        params = optim.apply_updates(params, u)
        for k in P0:
            trace[k] = g[k] + 0.5 * trace[k]
            fast[k] = fast[k] - 0.1 * trace[k]
        if i % 2 == 1:  # a synchronization: slow moves half way to fast, fast restarts from slow
            for k in P0:
                slow[k] = slow[k] + 0.5 * (fast[k] - slow[k])
                fast[k] = slow[k]
                if reset_state:
                    trace[k] = 0.0
        for k in P0:
            np.testing.assert_allclose(np.asarray(params.fast[k]), fast[k], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(params.slow[k]), slow[k], rtol=1e-5, atol=1e-6)
    assert int(state.steps_since_sync) == 1 and type(state) is optim.LookaheadState
    with pytest.raises(ValueError, match="lookahead: sync_period must be >= 1, got 0"):
        optim.lookahead(optim.sgd(0.1), 0, 0.5)
    with pytest.raises(ValueError, match="lookahead: update needs the params as LookaheadParams"):
        opt.update(_tree(GRADS[0]), opt.init(params), _tree(P0))


# -- extra keyword arguments reach the inner transformations -----------------------------------------------
def _scale_by_value():
    """A transformation multiplying the updates by its extra argument ``value`` (as line searches take it)."""
    return optim.GradientTransformationExtraArgs(
        optim.init_empty_state, lambda u, s, p=None, *, value: (kiln.tree_util.tree_map(lambda g: g * value, u), s))


@pytest.mark.parametrize("name", ["chain", "masked", "partition", "MultiSteps", "apply_if_finite", "flatten",
                                  "conditionally_mask", "conditionally_transform", "named_chain", "monitor",
                                  "inject_hyperparams"])
def test_extra_args_are_forwarded(name):
    inner = _scale_by_value()
    opt = {
        "chain": lambda: optim.chain(optim.identity(), inner),
        "masked": lambda: optim.masked(inner, {"w": True, "b": True}),
        "partition": lambda: optim.partition({"a": inner}, {"w": "a", "b": "a"}),
        "MultiSteps": lambda: optim.MultiSteps(inner, 1),
        "apply_if_finite": lambda: optim.apply_if_finite(inner, 2),
        "flatten": lambda: optim.flatten(inner),
        "conditionally_mask": lambda: optim.conditionally_mask(inner, lambda s: True),
        "conditionally_transform": lambda: optim.conditionally_transform(inner, lambda s: True),
        "named_chain": lambda: optim.named_chain(("v", inner)),
        "monitor": lambda: optim.chain(optim.monitor({"v": inner}), inner),
        "inject_hyperparams": lambda: optim.inject_hyperparams(lambda lr: optim.chain(inner, optim.scale(lr)))(1.0),
    }[name]()
    for update in (opt.update, kiln.jit(opt.update)):
        u, _ = update(_tree(GRADS[0]), opt.init(_tree(P0)), _tree(P0), value=jnp.asarray(3.0))
        np.testing.assert_allclose(np.asarray(u["w"]), 3.0 * GRADS[0]["w"], **TOL)


def test_masked_masks_compatible_extra_args_when_asked():
    seen = {}

    def update(u, s, p=None, **extra):
        seen.update(extra)
        return u, s
    inner = optim.GradientTransformationExtraArgs(optim.init_empty_state, update)
    g = _tree(GRADS[0])
    for compatible in (False, True):
        opt = optim.masked(inner, {"w": True, "b": False}, mask_compatible_extra_args=compatible)
        opt.update(g, opt.init(g), None, grad=g, other=1.0)
        assert isinstance(seen["grad"]["b"], optim.MaskedNode) is compatible and seen["other"] == 1.0


# -- inject_hyperparams with stateful schedules ------------------------------------------------------------
class _Halving:
    """A stateful schedule: halves at each update, whatever the step count."""

    def init(self):
        return {"v": jnp.asarray(0.8)}

    def update(self, state, **extra_args):
        return {"v": state["v"] / 2}

    def __call__(self, state, **extra_args):
        return state["v"]


@both
def test_inject_hyperparams_keeps_schedule_states(jitted):
    opt = optim.inject_hyperparams(optim.sgd)(learning_rate=optim.linear_schedule(1.0, 0.0, 4), momentum=_Halving())
    assert isinstance(_Halving(), optim.schedules.StatefulSchedule)
    out, state = _updates(opt, GRADS[:3], jitted)
    assert set(state.hyperparams_states) == {"learning_rate", "momentum"}
    assert int(state.hyperparams_states["learning_rate"].count) == 3
    np.testing.assert_allclose(float(state.hyperparams_states["momentum"]["v"]), 0.1)
    trace = 0.0
    for i, g in enumerate(GRADS[:3]):
        trace = g["w"] + 0.8 / 2 ** i * trace
        np.testing.assert_allclose(out[i]["w"], -(1.0 - i / 4) * trace, rtol=1e-5, atol=1e-6)
    # floating hyperparameters take the params' highest dtype (float32 here), ints stay ints
    assert state.hyperparams["learning_rate"].dtype == np.float32
    s = optim.inject_hyperparams(optim.apply_every)(k=2).init(_tree(P0))
    assert s.hyperparams["k"].dtype == np.int32
    s = optim.inject_hyperparams(optim.adam)(0.1).init({"w": jnp.ones(2, jnp.bfloat16)})
    assert s.hyperparams["b1"].dtype == jnp.bfloat16
    s = optim.inject_hyperparams(optim.adam, hyperparam_dtype=jnp.float16)(0.1).init({"w": jnp.ones(2)})
    assert s.hyperparams["b1"].dtype == np.float16
    with pytest.raises(ValueError, match=r"inject_hyperparams: static_args \['bogus'\] are not parameters of sgd"):
        optim.inject_hyperparams(optim.sgd, static_args=("nesterov", "bogus"))
    with pytest.warns(DeprecationWarning, match="inject_stateful_hyperparams is deprecated"):
        opt = optim.inject_stateful_hyperparams(optim.sgd)(0.1)
    assert isinstance(opt.init(_tree(P0)), optim.InjectStatefulHyperparamsState)


def test_wrapped_schedule_counts_steps():
    ws = optim.WrappedSchedule(lambda c: 2 * c)
    s = ws.init()
    assert int(ws(s)) == 0
    s = ws.update(ws.update(s))
    assert int(ws(s)) == 4 and int(s.count) == 2
    with pytest.raises(TypeError, match="WrappedSchedule: schedule_fn must be a callable"):
        optim.WrappedSchedule(0.1)


# -- schedules ---------------------------------------------------------------------------------------------
def _interp(kind, boundaries_values, count):
    """Plain-Python piecewise interpolation between (boundary, value) knots starting at (0, v0)."""
    knots = boundaries_values
    if count >= knots[-1][0]:
        return knots[-1][1]
    for (b0, v0), (b1, v1) in zip(knots, knots[1:]):
        if b0 <= count < b1:
            pct = (count - b0) / max(b1 - b0, 1)
            if kind == "linear":
                return v0 + (v1 - v0) * pct
            return v1 + (v0 - v1) / 2 * (math.cos(math.pi * pct) + 1)
    return 0.0  # before the first knot (negative counts)


def _check_schedule(schedule, formula, steps, rtol=2e-6, atol=1e-7):
    jitted = kiln.jit(schedule)
    for step in steps:
        want = formula(step)
        for got in (schedule(step), schedule(jnp.int32(step)), jitted(jnp.int32(step))):
            np.testing.assert_allclose(float(got), want, rtol=rtol, atol=atol, err_msg=f"at step {step}")


def test_onecycle_schedules_follow_their_knots():
    peak, n = 0.3, 40
    lin = [(0, peak / 25), (12, peak), (34, peak / 25), (40, peak / 25 / 1e4)]
    _check_schedule(optim.linear_onecycle_schedule(n, peak), lambda c: _interp("linear", lin, c), range(-1, 50))
    cos = [(0, peak / 25), (12, peak), (40, peak / 25 / 1e4)]
    _check_schedule(optim.cosine_onecycle_schedule(n, peak), lambda c: _interp("cosine", cos, c), range(-1, 50))
    s = optim.cosine_onecycle_schedule(10, 1.0, pct_start=0.5, div_factor=2.0, final_div_factor=10.0)
    assert float(s(0)) == pytest.approx(0.5) and float(s(5)) == pytest.approx(1.0)
    assert float(s(10)) == pytest.approx(0.05) and float(s(7)) < float(s(6))
    for make in (optim.linear_onecycle_schedule, optim.cosine_onecycle_schedule):
        with pytest.raises(ValueError, match="_onecycle_schedule: transition_steps must be > 0, got 0"):
            make(0, 0.1)


def test_piecewise_interpolate_schedule():
    knots = [(0, 2.0), (5, 1.0), (12, 3.0), (30, 0.0)]
    s = optim.piecewise_interpolate_schedule("linear", 2.0, {12: 3.0, 5: 0.5, 30: 0.0})
    _check_schedule(s, lambda c: _interp("linear", knots, c), range(0, 40))
    s = optim.piecewise_interpolate_schedule("cosine", 2.0, {12: 3.0, 5: 0.5, 30: 0.0})
    _check_schedule(s, lambda c: _interp("cosine", knots, c), range(0, 40))
    _check_schedule(optim.piecewise_interpolate_schedule("linear", 0.7), lambda c: 0.7, range(0, 5))
    with pytest.raises(ValueError, match="interpolate_type must be 'linear' or 'cosine', got 'cubic'"):
        optim.piecewise_interpolate_schedule("cubic", 1.0)
    with pytest.raises(ValueError, match="scale factors must be non-negative, got -0.5 at boundary 3"):
        optim.piecewise_interpolate_schedule("linear", 1.0, {3: -0.5})


def test_warmup_constant_and_sgdr_schedules():
    _check_schedule(optim.warmup_constant_schedule(0.1, 0.5, 4), lambda c: 0.1 + 0.4 * min(max(c, 0), 4) / 4,
                    range(-1, 10))

    def cosine_cycle(c, init, peak, warm, decay, end=0.0):
        if c < warm:
            return init + (peak - init) * c / warm
        t = min(c - warm, decay - warm) / (decay - warm)
        return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * t))
    cycles = [dict(init_value=0.0, peak_value=0.5, warmup_steps=3, decay_steps=10),
              dict(init_value=0.1, peak_value=0.4, warmup_steps=2, decay_steps=8, end_value=0.05)]

    def sgdr(c):
        if c < 10:
            return cosine_cycle(c, 0.0, 0.5, 3, 10)
        return cosine_cycle(c - 10, 0.1, 0.4, 2, 8, 0.05)
    _check_schedule(optim.sgdr_schedule(cycles), sgdr, range(0, 25))
    with pytest.raises(ValueError, match="sgdr_schedule: cosine_kwargs is empty"):
        optim.sgdr_schedule([])
    with pytest.raises(ValueError, match=r"sgdr_schedule: cosine_kwargs\[0\] must be a dict .* with decay_steps"):
        optim.sgdr_schedule([dict(init_value=0.0, peak_value=0.5, warmup_steps=3)])


def test_schedules_submodule_names():
    import kiln.optim.schedules as sched
    for name in ("cosine_onecycle_schedule", "linear_onecycle_schedule", "piecewise_interpolate_schedule",
                 "sgdr_schedule", "warmup_constant_schedule", "inject_hyperparams", "inject_stateful_hyperparams",
                 "WrappedSchedule", "StatefulSchedule", "InjectHyperparamsState", "InjectStatefulHyperparamsState",
                 "Schedule", "join_schedules"):
        assert name in sched.__all__ and hasattr(sched, name)


# -- microbatching -----------------------------------------------------------------------------------------
X = RNG.standard_normal((8, 3)).astype(np.float32)
Y = RNG.standard_normal(8).astype(np.float32)
W = RNG.standard_normal(3).astype(np.float32)


@both
def test_microbatch_accumulators(jitted):
    def run(acc, fun, **kw):
        f = mb.microbatch(fun, argnums=0, microbatch_size=2, accumulator=acc, **kw)
        f = kiln.jit(f) if jitted else f
        return np.asarray(f(jnp.asarray(X)))
    col_sum = lambda x: jnp.sum(x, axis=0)  # noqa: E731
    np.testing.assert_allclose(run(mb.AccumulationType.SUM, col_sum), X.sum(0), rtol=1e-5)
    # 4 microbatches; each returns the sum over its 2 examples
    np.testing.assert_allclose(run(mb.AccumulationType.MEAN, col_sum), X.sum(0) / 4, rtol=1e-5)
    np.testing.assert_allclose(run(mb.AccumulationType.RUNNING_MEAN, col_sum), X.sum(0) / 4, rtol=1e-5)
    np.testing.assert_array_equal(run(mb.AccumulationType.CONCAT, lambda x: x * 2), X * 2)  # the batch's order
    # only the first 3 microbatches (examples i with i % 4 < 3, as reshape_batch_axis slices them)
    np.testing.assert_allclose(run(mb.AccumulationType.SUM, col_sum, num_real_microbatches=3),
                               X[np.arange(8) % 4 < 3].sum(0), rtol=1e-5)
    assert mb.microbatch(col_sum, 0, None) is col_sum
    np.testing.assert_array_equal(np.asarray(mb.reshape_batch_axis(jnp.arange(8), 2)), [[0, 4], [1, 5], [2, 6],
                                                                                        [3, 7]])
    # a pytree of accumulators, one per output
    f = mb.microbatch(lambda x: (jnp.sum(x), x), 0, 4, accumulator=(mb.AccumulationType.SUM,
                                                                     mb.AccumulationType.CONCAT))
    total, same = f(jnp.asarray(X))
    np.testing.assert_allclose(float(total), X.sum(), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(same), X)


@both
def test_micro_grad_gives_per_example_gradients(jitted):
    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)
    g = mb.micro_grad(loss, batch_argnums=(1, 2), microbatch_size=2, metrics_fn=lambda gr: jnp.sum(gr ** 2))
    g = kiln.jit(g) if jitted else g
    total, aux = g(jnp.asarray(W), jnp.asarray(X), jnp.asarray(Y))
    residual = X @ W - Y
    per_example = 2 * residual[:, None] * X  # d/dw (x.w - y)**2
    np.testing.assert_allclose(np.asarray(total), per_example.sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(aux.values), residual ** 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(aux.metrics), (per_example ** 2).sum(1), rtol=1e-5, atol=1e-6)
    assert aux.aux is None and type(aux).__name__ == "Aux"
    clip = mb.micro_grad(loss, batch_argnums=(1, 2), microbatch_size=4, accumulator=mb.AccumulationType.MEAN,
                         transform_fn=lambda gr: gr / jnp.maximum(jnp.linalg.norm(gr), 1.0))
    total, _ = clip(jnp.asarray(W), jnp.asarray(X), jnp.asarray(Y))
    want = per_example / np.maximum(np.linalg.norm(per_example, axis=1, keepdims=True), 1.0)
    np.testing.assert_allclose(np.asarray(total), want.mean(0), rtol=1e-5, atol=1e-6)


def test_micro_vmap_is_vmap_in_pieces():
    v = mb.micro_vmap(lambda x, s, *, k: x * s + k, in_axes=(0, None), microbatch_size=2)
    np.testing.assert_allclose(np.asarray(v(jnp.asarray(X), 2.0, k=jnp.asarray(Y)[:, None] * jnp.ones((8, 3)))),
                               X * 2 + Y[:, None], rtol=1e-6)
    s = mb.micro_vmap(lambda x: jnp.sum(x), microbatch_size=4, accumulator=mb.AccumulationType.SUM)
    np.testing.assert_allclose(float(s(jnp.asarray(X))), X.sum(), rtol=1e-5)
    acc = mb.Accumulator(init=lambda v: jnp.zeros(v.shape, v.dtype), update=lambda c, v, i: jnp.maximum(c, v),
                         finalize=lambda c: c, aggregate=lambda vs: jnp.max(vs, axis=0))
    m = mb.micro_vmap(lambda x: jnp.max(x), microbatch_size=2, accumulator=acc)
    assert float(m(jnp.asarray(X))) == X.max()


def test_microbatching_errors():
    f = mb.microbatch(lambda x, y: x, argnums=(0, 1), microbatch_size=3)
    with pytest.raises(ValueError, match=r"batch_size=8 must be divisible by microbatch_size=3"):
        f(jnp.asarray(X), jnp.asarray(Y))
    with pytest.raises(ValueError, match=r"must have batch axes of one size, found \[8, 6\]"):
        mb.microbatch(lambda x, y: x, argnums=(0, 1), microbatch_size=2)(jnp.asarray(X), jnp.asarray(Y[:6]))
    with pytest.raises(ValueError, match="MEAN and RUNNING_MEAN accumulators need floating-point values"):
        mb.microbatch(lambda x: x, 0, 2, mb.AccumulationType.MEAN)(jnp.arange(8))
    with pytest.raises(ValueError, match="microbatching: unknown accumulator 'sum'"):
        mb.microbatch(lambda x: x, 0, 2, "sum")(jnp.asarray(X))
    with pytest.raises(NotImplementedError, match="micro_vmap: only out_axes=0 is supported"):
        mb.micro_vmap(lambda x: x, out_axes=1)
    with pytest.raises(TypeError, match="microbatch: fun must be callable"):
        mb.microbatch(3, 0, 2)


def test_top_level_names():
    assert optim.microbatch is mb.microbatch
    for name in ("skip_not_finite", "skip_large_updates", "ShouldSkipUpdateFunction", "ema", "EmaState",
                 "apply_every", "ApplyEvery", "conditionally_mask", "ConditionallyMaskState",
                 "conditionally_transform", "ConditionallyTransformState", "ConditionFn", "freeze",
                 "selective_transform", "named_chain", "stateless", "stateless_with_tree_map", "TransformInitFn",
                 "TransformUpdateFn", "TransformUpdateExtraArgsFn", "measure_with_ema", "monitor", "MonitorState",
                 "snapshot", "SnapshotState", "periodic_update", "incremental_update", "lookahead",
                 "LookaheadParams", "LookaheadState", "init_empty_state", "inject_stateful_hyperparams",
                 "WrappedSchedule", "StatefulSchedule", "MaskOrFn", "cosine_onecycle_schedule",
                 "linear_onecycle_schedule", "piecewise_interpolate_schedule", "sgdr_schedule",
                 "warmup_constant_schedule"):
        # (where optax has them: ConditionFn only in optax.transforms, StatefulSchedule in optax.schedules)
        assert any(hasattr(m, name) for m in (optim, optim.transforms, optim.schedules)), name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.inject_hyperparams(optim.sgd)(0.1)  # (only the old name warns)
