"""kiln.optim's moment-based optimizers (adamax, amsgrad, adabelief, radam, yogi, adadelta, novograd, adan, the
optimistic ones) against optax 0.2.8 on the same inputs: the same parameters bit for bit after six steps, eagerly
and under jit, and the same state layout. The equations themselves are checked in test_moment_optimizers.py."""
import warnings

import numpy as np
import pytest

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
jnp_jax = pytest.importorskip("jax.numpy")

import kiln  # noqa: E402
import kiln.numpy as knp  # noqa: E402
from kiln import optim  # noqa: E402

RNG = np.random.default_rng(7)
PARAMS = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(6)]
SCHEDULE = dict(init_value=0.0, peak_value=0.1, warmup_steps=2, decay_steps=6, end_value=0.01)


def _cases(lib):
    sched = lib.warmup_cosine_decay_schedule(**SCHEDULE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        optimistic_adam = lib.optimistic_adam(0.01, optimism=0.02)
    return {
        "adamax": lib.adamax(0.05),
        "adamax schedule": lib.adamax(sched, b1=0.8, b2=0.99, eps=1e-3),
        "adamaxw": lib.adamaxw(0.05, weight_decay=0.1),
        "adamaxw mask": lib.adamaxw(0.05, weight_decay=0.1, mask={"w": True, "b": False}),
        "adamaxw weight decay schedule": lib.adamaxw(0.05, weight_decay=lib.linear_schedule(0.2, 0.0, 5),
                                                     mask=lambda p: {k: k == "w" for k in p}),
        "amsgrad": lib.amsgrad(0.05),
        "amsgrad no bias correction": lib.amsgrad(0.05, eps_root=1e-8, bias_correction_mu=False,
                                                  bias_correction_nu=False),
        "amsgrad schedule": lib.amsgrad(sched),
        "adabelief": lib.adabelief(0.05),
        "adabelief nesterov": lib.adabelief(0.05, eps=1e-8, nesterov=True),
        "radam": lib.radam(0.05),
        # b2 small enough that ro passes the threshold within six steps (both branches taken)
        "radam rectified": lib.radam(0.05, b2=0.8, threshold=4.0),
        "radam nesterov": lib.radam(0.05, b2=0.8, threshold=4.0, eps_root=1e-8, nesterov=True),
        "yogi": lib.yogi(0.05),
        "yogi schedule": lib.yogi(sched, b2=0.9, eps=1e-4),
        "adadelta": lib.adadelta(),
        "adadelta lr weight decay": lib.adadelta(0.5, rho=0.8, weight_decay=0.1, weight_decay_mask={"w": True,
                                                                                                    "b": False}),
        "novograd": lib.novograd(0.05),
        "novograd weight decay": lib.novograd(0.05, b2=0.5, eps_root=1e-6, weight_decay=0.1),
        "adan": lib.adan(0.05),
        "adan lr schedule weight decay": lib.adan(sched, eps_root=0.0, weight_decay=0.1),
        "adan weight decay schedule": lib.adan(0.05, weight_decay=lib.linear_schedule(0.2, 0.0, 5)),
        "adadelta weight decay schedule": lib.adadelta(weight_decay=lib.linear_schedule(0.2, 0.0, 5)),
        "optimistic_gradient_descent": lib.optimistic_gradient_descent(0.05),
        "optimistic_gradient_descent alpha beta": lib.optimistic_gradient_descent(sched, alpha=0.7, beta=0.3),
        "optimistic_adam": optimistic_adam,
        "optimistic_adam_v2": lib.optimistic_adam_v2(0.01, alpha=0.5, beta=2.0),
        "optimistic_adam_v2 schedule no nesterov": lib.optimistic_adam_v2(sched, nesterov=False),
        "chain scale_by_belief": lib.chain(lib.scale_by_belief(), lib.scale(-0.05)),
        "chain scale_by_radam": lib.chain(lib.scale_by_radam(b2=0.8, threshold=4.0), lib.scale(-0.05)),
    }


def _run(lib, np_mod, jit, opt):
    params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    update = jit(opt.update) if jit is not None else opt.update
    for g in GRADS:
        updates, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
        params = lib.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}, state


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(_cases(optim)))
def test_bit_identical_to_optax_with_optaxs_state_layout(name, jitted):
    got, got_state = _run(optim, knp, kiln.jit if jitted else None, _cases(optim)[name])
    want, want_state = _run(optax, jnp_jax, jax.jit if jitted else None, _cases(optax)[name])
    for k in PARAMS:
        # (not a vacuous comparison: NaNs would compare equal, unmoved parameters too)
        assert np.all(np.isfinite(want[k])) and not np.array_equal(want[k], PARAMS[k]), f"{name}: {k}"
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")
    assert repr(kiln.tree_util.tree_structure(got_state)) == repr(jax.tree_util.tree_structure(want_state))
    # the state's leaves too (moments, counts), not only the parameters they produced
    for a, b in zip(kiln.tree_util.tree_leaves(got_state), jax.tree_util.tree_leaves(want_state)):
        assert np.asarray(a).dtype == np.asarray(b).dtype, name
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


@pytest.mark.parametrize("name", ["adamax", "adamaxw", "amsgrad", "adabelief", "radam", "yogi", "adadelta",
                                  "novograd", "adan", "optimistic_gradient_descent", "optimistic_adam",
                                  "optimistic_adam_v2", "scale_by_adamax", "scale_by_amsgrad", "scale_by_belief",
                                  "scale_by_radam", "scale_by_yogi", "scale_by_adadelta", "scale_by_novograd",
                                  "scale_by_adan", "scale_by_optimistic_gradient"])
def test_same_signature_and_defaults_as_optax(name):
    import inspect
    got, want = inspect.signature(getattr(optim, name)), inspect.signature(getattr(optax, name))
    assert list(got.parameters) == list(want.parameters)
    for p, q in zip(got.parameters.values(), want.parameters.values()):
        assert (p.kind, p.default) == (q.kind, q.default), (name, p.name)


def _run_leaf(lib, np_mod, jit, opt, p, grads):
    p = np_mod.asarray(p)
    state = opt.init(p)
    update = jit(opt.update) if jit is not None else opt.update
    for g in grads:
        u, state = update(np_mod.asarray(g), state, p)
        p = lib.apply_updates(p, u)
    return np.asarray(p)


_FAMILY = ["adamax", "amsgrad", "adabelief", "radam", "yogi", "adadelta", "novograd", "adan", "optimistic_adam_v2"]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("kind", ["complex64", "bfloat16", "inject_hyperparams"])
def test_bit_identical_on_complex_bfloat16_and_injected_hyperparameters(kind, jitted):
    # complex: the per-element-norm moments take |g|**2; bfloat16: the moments stay in the params' dtype;
    # inject_hyperparams: the hyperparameters are float32 arrays (radam's b2 ** count then comes from one)
    rng = np.random.default_rng(3)
    if kind == "complex64":
        p0, *grads = [(rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64) for _ in range(5)]
    else:
        p0, *grads = [rng.standard_normal(6).astype(np.float32) for _ in range(6)]
        if kind == "bfloat16":
            p0, grads = p0.astype(jnp_jax.bfloat16), [g.astype(jnp_jax.bfloat16) for g in grads]
    for name in _FAMILY:
        def make(lib):
            factory = getattr(lib, name)
            return (lib.inject_hyperparams(factory) if kind == "inject_hyperparams" else factory)(learning_rate=0.05)
        got = _run_leaf(optim, knp, kiln.jit if jitted else None, make(optim), p0, grads)
        want = _run_leaf(optax, jnp_jax, jax.jit if jitted else None, make(optax), p0, grads)
        assert got.dtype == want.dtype and np.all(np.isfinite(want)), name
        np.testing.assert_array_equal(got, want, err_msg=f"{name} ({kind})")


def test_amsgrad_mu_dtype_matches_optax():
    opts = [lib.amsgrad(0.05, mu_dtype=np_mod.bfloat16) for lib, np_mod in ((optim, knp), (optax, jnp_jax))]
    got, got_state = _run(optim, knp, None, opts[0])
    want, want_state = _run(optax, jnp_jax, None, opts[1])
    assert np.asarray(got_state[0].mu["w"]).dtype == np.asarray(want_state[0].mu["w"]).dtype == jnp_jax.bfloat16
    for k in PARAMS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
