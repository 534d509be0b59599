"""kiln.optim's wrappers, combinators, schedules and microbatching against optax's on the same inputs (where JAX and
optax are installed): the same parameters bit for bit after several steps, eagerly and under jit, and the same
state layout. The expected values themselves are checked against NumPy in test_combinators.py."""
import functools

import numpy as np
import pytest

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
jnp_jax = pytest.importorskip("jax.numpy")

import kiln  # noqa: E402
import kiln.numpy as knp  # noqa: E402
from kiln import optim  # noqa: E402
from kiln.optim import microbatching as kiln_mb  # noqa: E402

RNG = np.random.default_rng(7)
PARAMS = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(7)]
GRADS_NAN = [dict(g) for g in GRADS]
GRADS_NAN[2] = {"w": GRADS[2]["w"].copy(), "b": GRADS[2]["b"].copy()}
GRADS_NAN[2]["w"][1, 1] = np.nan
GRADS_NAN[4] = {"w": GRADS[4]["w"].copy(), "b": np.full(3, np.inf, np.float32)}


def _halve(u, p):
    return {k: v * 0.5 for k, v in u.items()}


def _cases(lib):
    """name -> (transformation, gradients)."""
    mask = {"w": True, "b": False}
    return {
        "ema": (lib.chain(lib.ema(0.9), lib.sgd(0.1)), GRADS),
        "ema no debias": (lib.chain(lib.ema(0.8, debias=False), lib.sgd(0.1)), GRADS),
        "apply_every 3": (lib.chain(lib.sgd(0.1), lib.apply_every(3)), GRADS),
        "conditionally_mask": (lib.conditionally_mask(lib.adam(0.05), lambda s: s % 2 == 0), GRADS),
        "conditionally_transform": (lib.chain(lib.conditionally_transform(lib.scale_by_adam(), lambda s: s >= 2),
                                              lib.sgd(0.1)), GRADS),
        "freeze": (lib.chain(lib.freeze(mask), lib.adam(0.05)), GRADS),
        "selective_transform": (lib.selective_transform(lib.adam(0.05), freeze_mask=mask), GRADS),
        "named_chain": (lib.named_chain(("clip", lib.clip_by_global_norm(1.0)), ("adam", lib.adam(0.05))), GRADS),
        "monitor": (lib.chain(lib.monitor({"norm": lib.global_norm,
                                           "avg": lib.measure_with_ema(lib.global_norm, 0.9)}), lib.sgd(0.1)), GRADS),
        "snapshot": (lib.chain(lib.snapshot("norm", lib.global_norm), lib.sgd(0.1)), GRADS),
        "stateless": (lib.chain(lib.stateless(_halve), lib.sgd(0.1)), GRADS),
        "stateless_with_tree_map": (lib.chain(lib.stateless_with_tree_map(lambda g, p: g + 0.01 * p),
                                              lib.sgd(0.1)), GRADS),
        "masked callable": (lib.masked(lib.adam(0.05), lambda u: {"w": True, "b": False}), GRADS),
        "inject_hyperparams schedule": (lib.inject_hyperparams(lib.adam)(
            learning_rate=lib.linear_schedule(0.1, 0.01, 5), b1=0.8), GRADS),
        "inject_hyperparams static": (lib.inject_hyperparams(lib.sgd, static_args="nesterov")(
            lib.cosine_onecycle_schedule(6, 0.1), momentum=0.9, nesterov=True), GRADS),
        "MultiSteps skip_not_finite": (lib.MultiSteps(lib.adam(0.05), 2, should_skip_update_fn=lib.skip_not_finite)
                                       .gradient_transformation(), GRADS_NAN),
        "MultiSteps skip_large_updates": (lib.MultiSteps(lib.sgd(0.1, 0.9), 2, should_skip_update_fn=functools.partial(
            lib.skip_large_updates, max_squared_norm=14.0)).gradient_transformation(), GRADS),
        "apply_if_finite": (lib.apply_if_finite(lib.adam(0.05), 1), GRADS_NAN),
    }


def _run(lib, np_mod, jit, opt, grads):
    params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    update = jit(opt.update) if jit is not None else opt.update
    for g in grads:
        updates, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
        params = lib.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}, state


def _same_structure(got_state, want_state):
    assert repr(kiln.tree_util.tree_structure(got_state)) == repr(jax.tree_util.tree_structure(want_state))


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("name", sorted(_cases(optim)))
def test_bit_identical_to_optax(name, jitted):
    opt, grads = _cases(optim)[name]
    got, got_state = _run(optim, knp, kiln.jit if jitted else None, opt, grads)
    opt, grads = _cases(optax)[name]
    want, want_state = _run(optax, jnp_jax, jax.jit if jitted else None, opt, grads)
    for k in PARAMS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")
    _same_structure(got_state, want_state)


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("reset_state", [False, True])
def test_lookahead_bit_identical_to_optax(reset_state, jitted):
    def run(lib, np_mod, jit):
        opt = lib.lookahead(lib.adam(0.05), sync_period=3, slow_step_size=0.5, reset_state=reset_state)
        params = lib.LookaheadParams.init_synced({k: np_mod.asarray(v) for k, v in PARAMS.items()})
        state = opt.init(params)
        update = jit(opt.update) if jit is not None else opt.update
        for g in GRADS:
            updates, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
            params = lib.apply_updates(params, updates)
        return params, state
    got, got_state = run(optim, knp, kiln.jit if jitted else None)
    want, want_state = run(optax, jnp_jax, jax.jit if jitted else None)
    for part in ("fast", "slow"):
        for k in PARAMS:
            np.testing.assert_array_equal(np.asarray(getattr(got, part)[k]), np.asarray(getattr(want, part)[k]))
    _same_structure(got_state, want_state)


def test_parameter_averaging_bit_identical_to_optax():
    new, old = GRADS[0], GRADS[1]
    for step in range(4):
        got = optim.periodic_update({k: knp.asarray(v) for k, v in new.items()},
                                    {k: knp.asarray(v) for k, v in old.items()}, knp.asarray(step), 2)
        want = optax.periodic_update(new, old, jnp_jax.asarray(step), 2)
        for k in new:
            np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    got = optim.incremental_update({k: knp.asarray(v) for k, v in new.items()},
                                   {k: knp.asarray(v) for k, v in old.items()}, 0.3)
    want = optax.incremental_update(new, old, 0.3)
    for k in new:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))


def _schedules(lib):
    return {
        "warmup_constant": lib.warmup_constant_schedule(0.01, 0.5, 7),
        "linear_onecycle": lib.linear_onecycle_schedule(40, 0.3),
        "linear_onecycle custom": lib.linear_onecycle_schedule(33, 1.0, pct_start=0.2, pct_final=0.7,
                                                               div_factor=10.0, final_div_factor=100.0),
        "cosine_onecycle": lib.cosine_onecycle_schedule(40, 0.3),
        "cosine_onecycle custom": lib.cosine_onecycle_schedule(17, 2.0, pct_start=0.5, div_factor=4.0),
        "piecewise_interpolate linear": lib.piecewise_interpolate_schedule("linear", 1.0, {5: 0.5, 12: 3.0,
                                                                                          12.5: 0.1, 30: 0.0}),
        "piecewise_interpolate cosine": lib.piecewise_interpolate_schedule("cosine", 2.0, {3: 0.25, 10: 4.0}),
        "piecewise_interpolate empty": lib.piecewise_interpolate_schedule("linear", 0.7),
        "sgdr": lib.sgdr_schedule([dict(init_value=0.0, peak_value=0.5, warmup_steps=3, decay_steps=10),
                                   dict(init_value=0.1, peak_value=0.4, warmup_steps=2, decay_steps=8, end_value=0.05),
                                   dict(init_value=0.0, peak_value=0.2, warmup_steps=0, decay_steps=6,
                                        exponent=2.0)]),
    }


@pytest.mark.parametrize("how", ["python int", "int32 array", "jit"])
@pytest.mark.parametrize("name", sorted(_schedules(optim)))
def test_schedules_bit_identical_to_optax(name, how):
    got_fn, want_fn = _schedules(optim)[name], _schedules(optax)[name]
    if how == "jit":
        got_fn, want_fn = kiln.jit(got_fn), jax.jit(want_fn)
    for step in range(-2, 50):
        got_step, want_step = (step, step) if how == "python int" else (knp.int32(step), jnp_jax.int32(step))
        got, want = np.asarray(got_fn(got_step)), np.asarray(want_fn(want_step))
        assert got.dtype == want.dtype, f"{name} at step {step}"
        np.testing.assert_array_equal(got, want, err_msg=f"{name} at step {step}")


def test_submodules_have_optaxs_names():
    public = [n for n in dir(optax.schedules) if not n.startswith("_") and not isinstance(
        getattr(optax.schedules, n), type(optax))]
    assert sorted(n for n in public if not hasattr(optim.schedules, n)) == []
    public = [n for n in dir(optax.microbatching) if not n.startswith("_") and not isinstance(
        getattr(optax.microbatching, n), type(optax))]
    assert sorted(n for n in public if not hasattr(kiln_mb, n)) == []
    assert optim.microbatch is kiln_mb.microbatch


X = RNG.standard_normal((8, 3)).astype(np.float32)
Y = RNG.standard_normal(8).astype(np.float32)
W = RNG.standard_normal(3).astype(np.float32)


def _loss(np_mod):
    return lambda w, x, y: np_mod.mean((x @ w - y) ** 2)


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("acc", ["SUM", "MEAN", "RUNNING_MEAN"])
def test_micro_grad_bit_identical_to_optax(acc, jitted):
    def run(mb, np_mod, jit):
        g = mb.micro_grad(_loss(np_mod), batch_argnums=(1, 2), microbatch_size=2,
                          accumulator=getattr(mb.AccumulationType, acc),
                          metrics_fn=lambda gr: np_mod.sum(gr ** 2))
        g = jit(g) if jitted else g
        r, aux = g(np_mod.asarray(W), np_mod.asarray(X), np_mod.asarray(Y))
        return np.asarray(r), np.asarray(aux.values), np.asarray(aux.metrics), (r, aux)
    got = run(kiln_mb, knp, kiln.jit)
    want = run(optax.microbatching, jnp_jax, jax.jit)
    for a, b in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(a, b)
    _same_structure(got[3], want[3])


@pytest.mark.parametrize("acc", ["SUM", "MEAN", "RUNNING_MEAN", "CONCAT"])
def test_microbatch_and_micro_vmap_bit_identical_to_optax(acc):
    def run(mb, np_mod):
        a = getattr(mb.AccumulationType, acc)
        f = mb.microbatch(lambda x, y: (np_mod.sum(x * 1.5, axis=0) if acc != "CONCAT" else x * 1.5, y + 1.0),
                          argnums=(0, 1), microbatch_size=4, accumulator=a)
        v = mb.micro_vmap(lambda x, s: x * s, in_axes=(0, None), microbatch_size=2, accumulator=a)
        early = mb.microbatch(lambda x: np_mod.sum(x, axis=0), 0, 2, num_real_microbatches=3)
        out = f(np_mod.asarray(X), np_mod.asarray(Y))
        return [np.asarray(o) for o in (*out, v(np_mod.asarray(X), 2.0), early(np_mod.asarray(X)),
                                        mb.reshape_batch_axis(np_mod.asarray(X), 2, axis=0))]
    for a, b in zip(run(kiln_mb, knp), run(optax.microbatching, jnp_jax)):
        np.testing.assert_array_equal(a, b)
