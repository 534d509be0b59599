"""JAX's docs/the-training-cookbook.rst's companion script (docs/the-training-cookbook.py) under kiln and under
JAX 0.10.2 (the against_jax session), with a small Config (2 layers, width 16, 8 heads, 16 tokens, 8 sequences).

The kiln side is tests/examples/jax_ported/training_cookbook.py; the JAX side is the same source with JAX's imports
put back. The script's Config makes a mesh of 8 devices, fixed when the backend starts, so each side runs in its own
interpreter (same_as_jax.run_on_eight_cpu_devices): the initial train state (the same parameters from the same seed:
kiln's Threefry draws are JAX's), the batch, the losses of four float32 steps and the state after them, and one
step in the script's own dtype (bfloat16) go to the .npz, and where each array lives to the JSON. The NumPy oracles,
and the page's other sharding strategies, are in tests/multidevice/test_training_cookbook.py.

The differences (README "Differences from JAX", "Sharding": kiln's avals carry no sharding): `init_train_state`'s
Adam moments come out replicated (JAX's `zeros_like` lays each out as its parameter; after a step kiln's partitioner
lays them out so too), and a result laid out by the partitioner has its spec without trailing Nones (`P('fsdp',)`
where JAX, whose Explicit-mesh types carry the sharding, writes `P('fsdp', None, None)`).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from same_as_jax import run_on_eight_cpu_devices  # noqa: E402

# Runs the script's functions under `lib` as its train_loop does, with Config(**SMALL, CONFIG) for STEPS steps (see
# _run): {name: array} to the .npz at `npz`, each array's dtype, weak type and layout to the JSON at `out`.
SCRIPT = """
import json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load
lib, npz, out = {lib!r}, {npz!r}, {out!r}
m = load("training_cookbook", lib)
jax = __import__(lib)
assert jax.device_count() == 8, jax.devices()
arrays, res = {{}}, {{}}
SMALL = dict(num_layers=2, embed_dim=16, mlp_dim=32, num_heads=8, head_dim=4, seq_length=16, host_batch_size=8)

def put(prefix, tree):
    for path, x in jax.tree_util.tree_leaves_with_path(tree):
        name = prefix + jax.tree_util.keystr(path)
        arrays[name] = np.asarray(x.astype("float32") if x.dtype == jax.numpy.bfloat16 else x)
        res[name] = [str(x.dtype), bool(x.weak_type), str(x.sharding.spec),
                     [str(e) for e in tuple(x.sharding.spec) + (None,) * (x.ndim - len(x.sharding.spec))],
                     sorted([s.device.id, [[i.start, i.stop] for i in s.index]] for s in x.addressable_shards)]

def train(config, steps, prefix):
    state = m.init_train_state(config)
    put(prefix + "init", state)
    refs = jax.tree.map(jax.ref.new_ref, state)
    batch = next(m.get_dataset_on_device(config))
    put(prefix + "batch", batch)
    for step in range(steps):
        put(prefix + f"metrics{{step}}", m.train_step(config, refs, batch))
    put(prefix + "final", jax.tree.map(jax.ref.get, refs))

train(m.Config(**SMALL, {config}), {steps}, "{prefix}/")
np.savez(npz, **arrays)
open(out, "w").write(json.dumps(res))
"""


def _run(run_py, directory, prefix, config, steps):
    script = SCRIPT.replace("{config}", config).replace("{steps}", str(steps)).replace("{prefix}", prefix)
    return run_on_eight_cpu_devices(run_py, directory, script)


@pytest.fixture(scope="module")
def both(tmp_path_factory, run_py):
    """Four float32 steps."""
    return _run(run_py, tmp_path_factory.mktemp("training_cookbook"), "f32", 'dtype="float32", learning_rate=1e-2', 4)


@pytest.fixture(scope="module")
def both_bf16(tmp_path_factory, run_py):
    """One step in the script's own dtype, bfloat16 (a second pair of interpreters: each fixture ~15 s)."""
    return _run(run_py, tmp_path_factory.mktemp("training_cookbook_bf16"), "bf16", "learning_rate=1e-2", 1)


def _names(found, prefix):
    return sorted(k for k in found if k.startswith(prefix))


def test_same_arrays_and_leaves(both):
    (k, kj), (j, jj) = both["kiln"], both["jax"]
    assert sorted(k) == sorted(j) and len(j) > 100
    for name in j:
        assert k[name].shape == j[name].shape and k[name].dtype == j[name].dtype, name
        assert kj[name][:2] == jj[name][:2], name  # dtype, weak type


def test_same_initial_state(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    for prefix in ("f32/init", "f32/batch"):
        for name in _names(j, prefix):
            np.testing.assert_array_equal(k[name], j[name], err_msg=name)


def test_same_float32_losses_and_state_after_the_steps(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    losses = [name for name in _names(j, "f32/metrics") if name.endswith("['train_loss']")]
    assert len(losses) == 4
    for name in losses:
        np.testing.assert_allclose(k[name], j[name], rtol=1e-6, err_msg=name)
    for name in _names(j, "f32/final"):
        # parameters to 1% of an Adam step (lr * 0.28); the moments (~1e-4, ~1e-8) to 1e-4 of their largest entry
        atol = 1e-4 * np.abs(j[name]).max() if name.endswith(("['mu']", "['nu']")) else 3e-5
        np.testing.assert_allclose(k[name], j[name], rtol=0, atol=atol, err_msg=name)


def test_close_bfloat16_step(both_bf16):
    """The script's own dtype: bfloat16 parameters and activations (8 significant bits: the two libraries round
    the same program differently), one step."""
    (k, kj), (j, jj) = both_bf16["kiln"], both_bf16["jax"]
    assert sorted(k) == sorted(j)
    for name in j:
        assert kj[name][:2] == jj[name][:2], name  # dtype, weak type
        if "/init['opt']" not in name:  # (see test_the_differences_sharding_in_types_makes)
            assert kj[name][3:] == jj[name][3:], name
    for name in _names(j, "bf16/init") + _names(j, "bf16/batch"):
        np.testing.assert_array_equal(k[name], j[name], err_msg=name)  # the same bfloat16 draws
    loss = "bf16/metrics0['train_loss']"
    assert k[loss].dtype == np.float32  # (saved as float32)
    np.testing.assert_allclose(k[loss], j[loss], rtol=4e-3)
    far, total = 0, 0
    for name in _names(j, "bf16/final['params']"):
        # Adam's first step moves a parameter by lr * 0.28 (0.0028) times the sign of its gradient: the two agree
        # to a bfloat16 rounding, but for the few gradients so small that their roundings differ in sign
        diff, bound = np.abs(k[name] - j[name]), 2 ** -7 * np.abs(j[name]) + 1e-4
        assert np.all(diff <= bound + 2 * 0.0029), name
        far, total = far + int(np.sum(diff > bound)), total + diff.size
    assert total > 10000 and far <= total // 250, (far, total)  # (26 of 14624: 0.18%)


def test_same_layouts_where_the_types_do_not_decide(both):
    """Every parameter and the batch, before and after the steps, and the optimizer state after them: the same
    spec (trailing Nones written out) and the same block on each device."""
    (_, kj), (j, jj) = both["kiln"], both["jax"]
    names = [n for n in j if "['opt']" not in n or "/final['opt']" in n]
    assert len(names) == 13 * 2 + 2 + 4 + 13 * 3  # params before and after, batch, losses, final optimizer state
    for name in names:
        assert kj[name][3:] == jj[name][3:], name


def test_the_differences_sharding_in_types_makes(both):
    (_, kj), (_, jj) = both["kiln"], both["jax"]
    # init_train_state's moments: JAX's laid out as their parameters, kiln's replicated
    qkv = "f32/init['opt']['layers'][0]['attention']['qkv']['mu']"
    assert jj[qkv][3] == ["None", "fsdp", "None", "None"] and kj[qkv][3] == ["None"] * 4
    # a spec the partitioner chose: trailing Nones left out by kiln, written out by JAX
    out = "f32/final['params']['layers'][0]['attention']['out']"
    assert jj[out][2] == "P('fsdp', None, None)" and kj[out][2] == "P('fsdp',)"
    assert kj[out][3] == jj[out][3]


def test_kiln_reads_bfloat16_arrays_where_jax_is_installed_but_not_imported(run_py):
    """jaxlib's `unsafe_buffer_pointer` tries `import jax`; where jax is installed, that turned jaxlib's tracebacks
    back on mid-call (kiln's hook, runtime/tracebacks.py) and the pointer of an array kiln had made with them off
    was refused ("null user context"): reading a bfloat16 array (the script's dtype) to the host failed."""
    run_py("""
        import sys
        import numpy as np
        import kiln.numpy as jnp
        x = jnp.array([1.5, 2.0], jnp.bfloat16)
        assert np.asarray(x).tolist() == [1.5, 2.0] and np.asarray(x).dtype == jnp.bfloat16
        assert isinstance(jnp.array([1.0, 2.0]).unsafe_buffer_pointer(), int)
        assert "jax" not in sys.modules
    """)
