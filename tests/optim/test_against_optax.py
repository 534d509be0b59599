"""kiln.optim against optax on the same gradients, where JAX and optax are installed (the bench session's
environment: ``nox -s bench`` installs both). The expected values are the NumPy equations in test_optim.py; this
file only checks that optax's own implementation agrees with kiln's on the same inputs."""
import numpy as np
import pytest

optax = pytest.importorskip("optax")
jnp_jax = pytest.importorskip("jax.numpy")

import kiln.numpy as knp  # noqa: E402
from kiln import optim  # noqa: E402

RNG = np.random.default_rng(1)
PARAMS = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(6)]
SCHEDULE = dict(init_value=0.0, peak_value=0.1, warmup_steps=2, decay_steps=6, end_value=0.01)


def _cases(lib):
    return {
        "sgd": lib.sgd(0.1),
        "sgd momentum nesterov": lib.sgd(0.1, momentum=0.9, nesterov=True),
        "adam": lib.adam(0.05),
        "adamw schedule": lib.adamw(lib.warmup_cosine_decay_schedule(**SCHEDULE), weight_decay=0.1),
        "adagrad": lib.adagrad(0.1),
        "rmsprop": lib.rmsprop(0.01, momentum=0.9),
        "lamb": lib.lamb(0.01),
        "lion": lib.lion(0.01),
        "nadam": lib.nadam(0.01),
        "chain clip": lib.chain(lib.clip_by_global_norm(1.0), lib.clip(0.5), lib.adam(0.05)),
        "inject_hyperparams": lib.inject_hyperparams(lib.adam)(learning_rate=0.02),
        "apply_if_finite": lib.apply_if_finite(lib.sgd(0.1), 2),
        "flatten": lib.flatten(lib.adam(0.05)),
        "masked": lib.masked(lib.adam(0.05), {"w": True, "b": False}),
        "adam nesterov": lib.adam(0.05, nesterov=True),
        "rmsprop eps outside sqrt": lib.rmsprop(0.01, eps_in_sqrt=False),
        "rmsprop centered bias_correction": lib.rmsprop(0.01, centered=True, bias_correction=True),
        "partition": lib.partition({"a": lib.adam(0.05), "s": lib.sgd(0.1)}, {"w": "a", "b": "s"}),
        "multi_transform": lib.multi_transform({"a": lib.adam(0.05), "z": lib.set_to_zero()},
                                               lambda p: {k: "a" if k == "w" else "z" for k in p}),
    }


def _run(lib, np_mod, opt):
    params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    for g in GRADS:
        updates, state = opt.update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
        params = lib.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}


@pytest.mark.parametrize("name", sorted(_cases(optim)))
def test_same_parameters_as_optax(name):
    got = _run(optim, knp, _cases(optim)[name])
    want = _run(optax, jnp_jax, _cases(optax)[name])
    for k in PARAMS:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-6, err_msg=f"{name}: {k}")


def _run_exactly(lib, np_mod, jit, opt):
    params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    update = jit(opt.update) if jit is not None else opt.update
    for g in GRADS:
        updates, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
        params = lib.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}, state


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("name", sorted(_cases(optim)))
def test_bit_identical_to_optax_with_optaxs_state_layout(name, jitted):
    # optax's order of operations (its bias correction a jitted function, rsqrt(nu + eps) * g, ...), so eager
    # updates too round as optax's; and its state layout (sgd without momentum has two parts, ...)
    import jax
    if name in _NOT_BIT_IDENTICAL:
        pytest.skip(_NOT_BIT_IDENTICAL[name])
    import kiln
    got, got_state = _run_exactly(optim, knp, kiln.jit if jitted else None, _cases(optim)[name])
    want, want_state = _run_exactly(optax, jnp_jax, jax.jit if jitted else None, _cases(optax)[name])
    for k in PARAMS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")
    if name not in _OTHER_STATE_LAYOUT:
        assert repr(kiln.tree_util.tree_structure(got_state)) == repr(jax.tree_util.tree_structure(want_state))


_NOT_BIT_IDENTICAL = {}
_OTHER_STATE_LAYOUT = {}


@pytest.mark.parametrize("name", ["l2_loss", "huber_loss", "log_cosh", "sigmoid_binary_cross_entropy",
                                  "softmax_cross_entropy", "safe_softmax_cross_entropy", "cosine_similarity"])
def test_same_losses_as_optax(name):
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    b = np.abs(RNG.standard_normal((5, 4)).astype(np.float32))
    b = b / b.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(getattr(optim, name)(a, b)), np.asarray(getattr(optax, name)(a, b)),
                               rtol=2e-5, atol=2e-6)


def test_same_integer_label_cross_entropy_as_optax():
    logits = RNG.standard_normal((6, 5)).astype(np.float32)
    labels = RNG.integers(0, 5, 6).astype(np.int32)
    np.testing.assert_allclose(np.asarray(optim.softmax_cross_entropy_with_integer_labels(logits, labels)),
                               np.asarray(optax.softmax_cross_entropy_with_integer_labels(logits, labels)),
                               rtol=2e-5, atol=2e-6)
