"""kiln.optim.contrib (part A: muon, schedule_free, sam, reduce_on_plateau, ademamix, adopt, madgrad, acprop,
normalize, split_real_and_imaginary, differentially private aggregation) against optax.contrib on the same
inputs: the same parameters bit for bit after 6 steps, eagerly and under jit, and optax's state layout."""
import warnings

import numpy as np
import pytest

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")

import jax.numpy as jjnp  # noqa: E402

import kiln  # noqa: E402
import kiln.numpy as knp  # noqa: E402
import kiln.random as krandom  # noqa: E402
from kiln import optim  # noqa: E402
from kiln.optim import contrib  # noqa: E402

RNG = np.random.default_rng(7)
PARAMS = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32),
          "t": RNG.standard_normal((2, 3, 5)).astype(np.float32)}
GRADS = [{k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(6)]
LOSSES = [3.0, 2.5, 2.6, 2.7, 2.55, 2.8]


def _cases(lib, contrib_lib):
    c = contrib_lib
    dims = {"w": c.MuonDimensionNumbers(), "b": None, "t": c.MuonDimensionNumbers(reduction_axis=(0, 1),
                                                                                   output_axis=2)}
    return {
        "muon": c.muon(0.02),
        "muon wd consistent_rms": c.muon(0.02, weight_decay=0.1, consistent_rms=0.2, adam_learning_rate=0.01),
        "muon not nesterov adaptive": c.muon(0.02, nesterov=False, adaptive=True),
        "muon dion": c.muon(0.02, ns_coeffs="dion"),
        "muon aol": c.muon(0.02, preconditioning="aol", ns_steps=4),
        "muon schatten": c.muon(0.02, preconditioning="schatten"),
        "muon spectral": c.muon(0.02, preconditioning="spectral"),
        "muon dimension numbers": c.muon(0.02, muon_weight_dimension_numbers=dims),
        "muon batch axis": c.muon(0.02, muon_weight_dimension_numbers=lambda p: {
            "w": c.MuonDimensionNumbers(), "b": None, "t": c.MuonDimensionNumbers(1, 2)}),
        "schedule_free_adamw": c.schedule_free_adamw(0.05, warmup_steps=3, weight_decay=0.01),
        "schedule_free_sgd": c.schedule_free_sgd(0.1, weight_decay=0.01),
        "schedule_free adam": c.schedule_free(lib.adam(0.05, b1=0.0), 0.05, b1=0.8),
        "sam": c.sam(lib.sgd(0.1), lib.chain(c.normalize(), lib.sgd(0.05)), sync_period=3),
        "sam keep adv state": c.sam(lib.adam(0.05), lib.adam(0.01), reset_state=False),
        "normalize": lib.chain(c.normalize(), lib.sgd(0.1)),
        "ademamix": c.ademamix(0.01, weight_decay=0.1),
        "ademamix schedules": c.ademamix(0.01, b3=lib.linear_schedule(0.9, 0.999, 4),
                                         alpha=lib.linear_schedule(0.0, 5.0, 4)),
        "simplified_ademamix": c.simplified_ademamix(0.01, alpha=2.0, weight_decay=0.1),
        "adopt": c.adopt(0.01),
        "adopt nesterov no clipping": c.adopt(0.01, nesterov=True, use_clipping=False),
        "madgrad": c.madgrad(0.01, weight_decay=0.01),
        "madgrad schedule": c.madgrad(lib.linear_schedule(0.01, 0.001, 5)),
        "acprop": c.acprop(0.01, weight_decay=0.01),
        "reduce_on_plateau": lib.chain(lib.sgd(0.1), c.reduce_on_plateau(factor=0.5, patience=1, cooldown=1)),
        "reduce_on_plateau accumulate": lib.chain(lib.adam(0.1),
                                                  c.reduce_on_plateau(patience=0, accumulation_size=2)),
    }


NAMES = sorted(_cases(optim, contrib))


def _run(lib, np_mod, opt, jit, params=PARAMS, grads=GRADS, with_loss=False):
    params = {k: np_mod.asarray(v) for k, v in params.items()}
    state = opt.init(params)
    update = jit(opt.update) if jit is not None else opt.update
    for g, loss in zip(grads, LOSSES):
        extra = {"value": loss} if with_loss else {}
        updates, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params, **extra)
        params = lib.apply_updates(params, updates)
    return {k: np.asarray(v) for k, v in params.items()}, state


def _same_structure(got_state, want_state):
    assert repr(kiln.tree_util.tree_structure(got_state)) == repr(jax.tree_util.tree_structure(want_state))


# case -> why it is compared with a tolerance (see each reason)
_CLOSE_ONLY = {}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", NAMES)
def test_bit_identical_to_optax_contrib(name, jitted):
    loss = "plateau" in name
    got, got_state = _run(optim, knp, _cases(optim, contrib)[name], kiln.jit if jitted else None, with_loss=loss)
    want, want_state = _run(optax, jjnp, _cases(optax, optax.contrib)[name], jax.jit if jitted else None,
                            with_loss=loss)
    for k in PARAMS:
        if (name, jitted) in _CLOSE_ONLY or name in _CLOSE_ONLY:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=f"{name}: {k}")
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}: {k}")
    _same_structure(got_state, want_state)


CPARAMS = {"z": (RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))).astype(np.complex64),
           "r": RNG.standard_normal(2).astype(np.float32)}
CGRADS = [{k: (RNG.standard_normal(v.shape) + (1j * RNG.standard_normal(v.shape) if v.dtype.kind == "c" else 0))
           .astype(v.dtype) for k, v in CPARAMS.items()} for _ in range(6)]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("inner", ["adam", "sgd momentum"])
def test_split_real_and_imaginary_bit_identical(inner, jitted):
    def opt(lib, c):
        return c.split_real_and_imaginary(lib.adam(0.05) if inner == "adam" else lib.sgd(0.1, momentum=0.9))
    got, got_state = _run(optim, knp, opt(optim, contrib), kiln.jit if jitted else None, CPARAMS, CGRADS)
    want, want_state = _run(optax, jjnp, opt(optax, optax.contrib), jax.jit if jitted else None, CPARAMS, CGRADS)
    for k in CPARAMS:
        assert got[k].dtype == want[k].dtype
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    _same_structure(got_state, want_state)


PER_EXAMPLE = [{"w": RNG.standard_normal((4, 3, 2)).astype(np.float32),
                "b": (3 * RNG.standard_normal((4, 2))).astype(np.float32)} for _ in range(4)]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("which", ["aggregate", "dpsgd momentum"])
def test_private_aggregation_bit_identical(which, jitted):
    # kiln.random's threefry keys and normal draws are jax.random's, so the noise is the same
    def run(lib, c, np_mod, rnd, jit):
        if which == "aggregate":
            opt = c.differentially_private_aggregate(1.0, 0.5, key=rnd.key(3))
        else:
            opt = c.dpsgd(0.1, 1.0, 0.5, seed=5, momentum=0.9, nesterov=True)
        params = {"w": np_mod.zeros((3, 2), np.float32), "b": np_mod.zeros(2, np.float32)}
        state = opt.init(params)
        update = jit(opt.update) if jit is not None else opt.update
        for g in PER_EXAMPLE:
            u, state = update({k: np_mod.asarray(v) for k, v in g.items()}, state, params)
            params = lib.apply_updates(params, u)
        return {k: np.asarray(v) for k, v in params.items()}, state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (optax's dpsgd passes its deprecated seed=)
        want, want_state = run(optax, optax.contrib, jjnp, jax.random, jax.jit if jitted else None)
    got, got_state = run(optim, contrib, knp, krandom, kiln.jit if jitted else None)
    for k in got:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    key_of = (lambda s: s.rng_key) if which == "aggregate" else (lambda s: s[0].rng_key)
    np.testing.assert_array_equal(np.asarray(krandom.key_data(key_of(got_state))),
                                  np.asarray(jax.random.key_data(key_of(want_state))))
    # the typed key is one leaf, as in JAX
    assert repr(kiln.tree_util.tree_structure(got_state)) == repr(jax.tree_util.tree_structure(want_state))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_sam_opaque_mode_bit_identical(jitted):
    def run(lib, c, np_mod, jit):
        opt = c.sam(lib.sgd(0.1), lib.chain(c.normalize(), lib.sgd(0.05)), sync_period=3, opaque_mode=True)
        params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
        state = opt.init(params)

        def grad_fn(p, i):  # the gradient of sum(p**3) / 3 + i * sum(p)
            return {k: v * v + i for k, v in p.items()}
        update = (lambda u, s, p: opt.update(u, s, p, grad_fn=grad_fn))
        update = jit(update) if jit is not None else update
        for _ in range(4):
            updates, state = update(grad_fn(params, 0), state, params)
            params = lib.apply_updates(params, updates)
        return {k: np.asarray(v) for k, v in params.items()}, state
    got, got_state = run(optim, contrib, knp, kiln.jit if jitted else None)
    want, want_state = run(optax, optax.contrib, jjnp, jax.jit if jitted else None)
    for k in PARAMS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    _same_structure(got_state, want_state)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_schedule_free_eval_params_bit_identical(jitted):
    got_opt, want_opt = contrib.schedule_free_adamw(0.05), optax.contrib.schedule_free_adamw(0.05)
    _, got_state = _run(optim, knp, got_opt, kiln.jit if jitted else None)
    got_p, _ = _run(optim, knp, got_opt, kiln.jit if jitted else None)
    _, want_state = _run(optax, jjnp, want_opt, jax.jit if jitted else None)
    want_p, _ = _run(optax, jjnp, want_opt, jax.jit if jitted else None)
    got = contrib.schedule_free_eval_params(got_state, {k: knp.asarray(v) for k, v in got_p.items()})
    want = optax.contrib.schedule_free_eval_params(want_state, {k: jjnp.asarray(v) for k, v in want_p.items()})
    for k in PARAMS:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)


def test_muon_mu_dtype_and_per_step_coefficients_bit_identical():
    coeffs = ((3.0, -3.2, 1.2), (3.4445, -4.7750, 2.0315), (2.9, -3.0, 1.1))

    def opt(c):
        return c.scale_by_muon(ns_coeffs=coeffs, ns_steps=3, mu_dtype=jjnp.bfloat16, preconditioning="aol",
                               weight_dimension_numbers=lambda u: {"w": c.MuonDimensionNumbers(),
                                                                   "t": c.MuonDimensionNumbers(0, (1, 2))})
    params = {k: PARAMS[k] for k in ("w", "t")}
    grads = [{k: g[k] for k in params} for g in GRADS]
    for jitted in (False, True):
        got, got_state = _run(optim, knp, opt(contrib), kiln.jit if jitted else None, params, grads)
        want, want_state = _run(optax, jjnp, opt(optax.contrib), jax.jit if jitted else None, params, grads)
        for k in params:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{k} jit={jitted}")
        assert got_state.mu["w"].dtype == want_state.mu["w"].dtype == jjnp.bfloat16
        _same_structure(got_state, want_state)
