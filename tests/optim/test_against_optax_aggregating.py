"""kiln.optim.experimental.aggregating against optax.experimental.aggregating on the same inputs (where JAX and
optax are installed): the same parameters, aggregated updates and mean/variance EMAs bit for bit, eagerly and
under jit, and the same state layout and public names. The values themselves are checked against NumPy in
test_aggregating.py."""
import numpy as np
import pytest

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
jnp_jax = pytest.importorskip("jax.numpy")
from optax.experimental import aggregating as optax_agg  # noqa: E402

import kiln  # noqa: E402
import kiln.numpy as knp  # noqa: E402
from kiln import optim  # noqa: E402
from kiln.optim.experimental import aggregating as kiln_agg  # noqa: E402

RNG = np.random.default_rng(5)
BATCH = 6
PARAMS = {"w": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal(3).astype(np.float32),
          "s": np.float32(0.5)}  # a scalar leaf: XLA divides it, while it multiplies the others by a reciprocal
GRADS = [{k: RNG.standard_normal((BATCH, *np.shape(v))).astype(np.float32) for k, v in PARAMS.items()}
         for _ in range(7)]

LIBS = {"kiln": (optim, kiln_agg, knp.asarray, kiln.jit, kiln.tree_util.tree_structure),
        "optax": (optax, optax_agg, jnp_jax.asarray, jax.jit, jax.tree_util.tree_structure)}


def _cases(lib, agg):
    return {
        "average then adam": agg.process(lib.identity(), agg.average_per_element_updates(), lib.adam(0.05)),
        "average over 3 microbatches": agg.process(lib.identity(), agg.average_incrementally_updates(0, 3),
                                                   lib.adam(0.05)),
        "accumulate only": agg.process(lib.identity(), agg.average_incrementally_updates(None, 2), lib.sgd(0.1)),
        "clip per example": agg.process(lib.stateless(lambda g, _: lib.tree_utils.tree_scale(0.5, g)),
                                        agg.average_per_element_updates(), lib.sgd(0.1, 0.9)),
        "mean/variance": agg.add_mean_variance_to_opt(lib.adam(0.05), ema_decay=0.9),
        "mean/variance 3 microbatches": agg.add_mean_variance_to_opt(lib.sgd(0.1), ema_decay=0.8,
                                                                      accumulation_steps=3),
    }


def _run(name, which, jitted):
    lib, agg, asarray, jit, structure = LIBS[which]
    opt = _cases(lib, agg)[name]
    params = {k: asarray(v) for k, v in PARAMS.items()}
    state = opt.init(params)
    update = jit(opt.update) if jitted else opt.update
    history = []
    for g in GRADS:
        updates, state = update({k: asarray(v) for k, v in g.items()}, state, params)
        params = lib.apply_updates(params, updates)
        history.append(({k: np.asarray(v) for k, v in updates.items()}, {k: np.asarray(v) for k, v in params.items()}))
    return history, state, repr(structure(state))


def _assert_same(a, b):
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(optim, kiln_agg)))
def test_same_updates_params_and_state_as_optax(name, jitted):
    k_hist, k_state, k_struct = _run(name, "kiln", jitted)
    o_hist, o_state, o_struct = _run(name, "optax", jitted)
    assert k_struct == o_struct
    for (ku, kp), (ou, op) in zip(k_hist, o_hist):
        _assert_same(ku, ou)
        _assert_same(kp, op)
    for kl, ol in zip(kiln.tree_util.tree_leaves(k_state), jax.tree_util.tree_leaves(o_state)):
        np.testing.assert_array_equal(np.asarray(kl), np.asarray(ol))
    if name.startswith("mean/variance"):
        k_get, o_get = kiln_agg.get_unbiased_mean_and_variance_ema, optax_agg.get_unbiased_mean_and_variance_ema
        if jitted:
            k_get, o_get = kiln.jit(k_get), jax.jit(o_get)
        for km, om in zip(k_get(k_state), o_get(o_state)):
            _assert_same({k: np.asarray(v) for k, v in km.items()}, {k: np.asarray(v) for k, v in om.items()})


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("steps", [1, 3])
def test_same_mean_and_sum_sq_diff_as_optax(steps, jitted):
    outs = {}
    for which in LIBS:
        lib, agg, asarray, jit, structure = LIBS[which]
        t = agg.get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis=0, accumulation_steps=steps)
        state = t.init({k: asarray(v) for k, v in PARAMS.items()})
        update = jit(t.update) if jitted else t.update
        outs[which] = []
        for g in GRADS:
            # (params passed: optax's one-step aggregator requires it positionally)
            (mean, aux), state = update({k: asarray(v) for k, v in g.items()}, state, None)
            outs[which].append((mean, aux["sum_sq_diff_grads"], int(aux["sample_size"])))
        outs[which + " structure"] = repr(structure(state))
    assert outs["kiln structure"] == outs["optax structure"]
    for (km, ks, kn), (om, os_, on) in zip(outs["kiln"], outs["optax"]):
        assert kn == on
        _assert_same({k: np.asarray(v) for k, v in km.items()}, {k: np.asarray(v) for k, v in om.items()})
        _assert_same({k: np.asarray(v) for k, v in ks.items()}, {k: np.asarray(v) for k, v in os_.items()})


def test_same_public_names_as_optax():
    # optax's module also shows its imports (jax, jnp, base, typing names ...); its own names are those defined
    # there or its type aliases
    imported = {"Any", "NamedTuple", "Protocol", "Sequence", "base", "jax", "jnp", "math", "tree", "utils"}
    optax_names = {n for n in dir(optax_agg) if not n.startswith("_")} - imported
    assert set(kiln_agg.__all__) == optax_names
    assert {n for n in dir(kiln_agg) if not n.startswith("_")} == optax_names
    from kiln.optim import experimental
    assert experimental.__all__ == optax.experimental.__all__
