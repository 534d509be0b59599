"""JAX's docs notebook shard_map.md under kiln and under JAX gives the same numbers (the against_jax session).

The kiln side is tests/examples/jax_ported/shard_map_notebook.py; the JAX side is the same source with JAX's imports
put back (tests/examples/ported.py). Both need 8 devices, fixed when the backend starts, so each side runs in its own
interpreter: JAX with XLA_FLAGS=--xla_force_host_platform_device_count=8, kiln with KILN_NUM_CPU_DEVICES=8. Each runs
every cell once (the network at a reduced size, as tests/multidevice/test_shard_map_notebook.py does) and saves the
arrays it returns to an .npz; the test compares them. The NumPy oracles are in tests/multidevice/
test_shard_map_notebook.py. Left out of the comparison, where kiln documents a difference (README "Differences from
JAX"): the scan cell without pcast (JAX raises, kiln computes), the printed blocks inside eager shard_maps (JAX prints
each device's block, kiln a tracer), the error text of the out_specs bug and the jaxpr's text. The sharding grids
that visualize_array_sharding draws are not compared (JAX's needs `rich`, which the against_jax environment may
lack: then the JAX side skips the drawing).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from same_as_jax import run_on_eight_cpu_devices  # noqa: E402

# Runs the cells under `lib`: {name: array} to the .npz at `npz`, the printed "True"/"False"s to the json at `out`.
SCRIPT = """
import contextlib, io, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load
lib, npz, txt = {lib!r}, {npz!r}, {out!r}
m = load("shard_map_notebook", lib)
jax = __import__(lib)
try:
    import rich  # noqa: F401  (JAX's visualize_array_sharding draws with it)
except ImportError:
    if lib == "jax":
        jax.debug.visualize_array_sharding = lambda *a, **k: None
out, prints = {{}}, {{}}
def put(prefix, tree):
    for i, leaf in enumerate(jax.tree_util.tree_leaves(tree)):
        out[f"{{prefix}}/{{i}}"] = np.asarray(leaf)
def run(name, fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = fn(*args)
    jax.set_mesh(None)
    prints[name] = [w for w in buf.getvalue().split() if w in ("True", "False")]
    return r
r = run("toy", m.toy_matmul); put("toy", [r["c"], r["c_ref"]])
put("vmap", run("vmap", m.check_vmap_cell)); put("shmap", run("shmap", m.check_shmap_cell))
r = run("in_specs", m.in_specs_cells); put("in_specs", [r["y1"], r["y2"]])
put("untile", run("untile", m.out_specs_untile_cells))
r = run("psum_out", m.psum_out_specs_cells); put("psum_out", [r["y3"], r["y4"], r["y5"]])
r = run("vma", m.vma_cells)
put("vma", [r[k] for k in ("double_varying", "double_invariant", "psum", "psum_typed", "psum_j", "mul")])
prints["vma_types"] = [str(t) for t in r["types"]]
prints["vma_error"] = [isinstance(r["out_specs_bug"], ValueError)]  # kiln's ShardMapError is a ValueError
put("psum", run("psum", m.psum_cells))
put("collectives", run("collectives", m.gather_scatter_permute_cells))
put("matmul", run("matmul", m.matmul_cells))
params, batch = run("init", m.init_cell, (16, 16, 16, 16, 8), 32)
put("init", [params, batch])
r, _, _ = run("dp", m.data_parallel_cells, params, batch); put("dp", r)
r, _, _ = run("fsdp", m.fsdp_cells, params, batch); put("fsdp", r)
loss_tp, p, b = run("tp", m.tp_cells, params, batch)
jax.set_mesh(p[0][0].sharding.mesh)
put("tp", [jax.jit(loss_tp)(p, b), jax.jit(jax.grad(loss_tp))(p, b)])
jax.set_mesh(None)
r, _, _ = run("fsdp_tp", m.fsdp_tp_cells, params, batch); put("fsdp_tp", r)
r = run("pp", m.pipeline_cells, params, batch, 32); put("pp", [r["loss_pp"], r["grad"]])
np.savez(npz, **out)
open(txt, "w").write(json.dumps(prints))
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory, run_py):
    return run_on_eight_cpu_devices(run_py, tmp_path_factory.mktemp("shard_map_notebook"), SCRIPT)


def test_same_arrays(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    assert sorted(k) == sorted(j)
    for name in sorted(j):
        assert k[name].shape == j[name].shape and k[name].dtype == j[name].dtype, name
        if name.startswith("init/"):  # the PRNG draws: bit for bit
            np.testing.assert_array_equal(k[name], j[name], err_msg=name)
        else:  # NaN where JAX has NaN (the pipeline's inner weights' gradient), equal to float32 rounding elsewhere
            np.testing.assert_allclose(k[name], j[name], rtol=2e-5, atol=2e-6, equal_nan=True, err_msg=name)


def test_same_prints_types_and_error_class(both):
    """The cells' printed True/False, the printed jax.typeof types, and that the out_specs bug raises a ValueError."""
    (_, kp), (_, jp) = both["kiln"], both["jax"]
    assert kp == jp
