"""JAX's docs/new_docs/201/shard-map.md under kiln and under JAX gives the same results (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_shard_map_201.py; the JAX side is the same source with JAX's imports
put back (tests/examples/ported.py). Both need 8 devices, fixed when the backend starts, so each side runs in its own
interpreter (same_as_jax.run_on_eight_cpu_devices), which calls the page's first cell (`jax_num_cpu_devices`, which
JAX takes only before its backends start) and then every other cell once, the network at the page's sizes. It saves
the arrays the cells return (to the .npz) and what they print, the types `jax.typeof` prints, the exceptions' classes
and the collectives in the programs the prose talks about (to the JSON); the tests compare them. The NumPy oracles
are in tests/multidevice/test_docs_shard_map_201.py.

Left out of the comparison, where kiln documents a difference (README "Differences from JAX"): the printed blocks
inside eager shard_maps (JAX prints each device's block, kiln a tracer), the text of the out_specs bug's error and of
the jaxpr (kiln's has no `pvary`: a strict xfail), the scan cell without pcast (JAX raises, kiln computes: tested as
such), and the unreduced/reduced cell (kiln raises NotImplementedError: a strict xfail). The grids that
visualize_array_sharding draws are not compared (JAX's needs `rich`, which the against_jax environment lacks: then
the JAX side skips the drawing).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from same_as_jax import run_on_eight_cpu_devices  # noqa: E402

# Runs the cells under `lib`: {name: array} to the .npz at `npz`, the rest to the JSON at `out`.
SCRIPT = """
import contextlib, io, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load, count_primitives
lib, npz, txt = {lib!r}, {npz!r}, {out!r}
m = load("docs_shard_map_201", lib)
m.config_cell()  # first: JAX takes jax_num_cpu_devices only before its backends start
jax = __import__(lib)
P = jax.P
try:
    import rich  # noqa: F401  (JAX's visualize_array_sharding draws with it)
except ImportError:
    if lib == "jax":
        jax.debug.visualize_array_sharding = lambda *a, **k: None
arrays, res = {{}}, {{"device_count": jax.device_count()}}
NAMES = {{"psum": "psum", "psum_invariant": "psum", "all_gather": "all_gather", "psum_scatter": "psum_scatter",
          "reduce_scatter": "psum_scatter", "ppermute": "ppermute", "all_to_all": "all_to_all"}}
def put(prefix, tree):
    for i, leaf in enumerate(jax.tree_util.tree_leaves(tree)):
        arrays[f"{{prefix}}/{{i}}"] = np.asarray(leaf)
def run(name, fn, *args):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            r = fn(*args)
        res[name + "/raised"] = None
    except Exception as e:
        r, res[name + "/raised"] = None, type(e).__name__
    jax.set_mesh(None)
    res[name + "/printed"] = buf.getvalue()
    return r
def comm(mesh, fn, *args):
    with jax.set_mesh(mesh), contextlib.redirect_stdout(io.StringIO()):
        return dict(count_primitives(jax.make_jaxpr(fn)(*args).jaxpr, names=NAMES))
def body_shapes(closed):
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "shard_map")
    body = eqn.params.get("body", eqn.params.get("jaxpr"))
    body = getattr(body, "jaxpr", body)
    return [list(v.aval.shape) for v in body.invars], [list(v.aval.shape) for v in body.outvars]
def builtin_class(e):  # the first builtin class an exception derives from (kiln's classes are its subclasses)
    return None if e is None else next(b.__name__ for b in type(e).__mro__ if b.__module__ == "builtins")
def error_class(fn, *args):
    try:
        fn(*args)
    except Exception as e:
        return builtin_class(e)

r = run("toy", m.toy_matmul_cells); put("toy", [r["c"], r["c_ref"]]); res["toy/ok"] = [bool(r["ok"]), bool(r["ok_ref"])]
with jax.set_mesh(r["a"].sharding.mesh):
    res["toy/body"] = body_shapes(jax.make_jaxpr(r["matmul_basic"])(r["a"], r["b"]))
res["toy/comm"] = comm(r["a"].sharding.mesh, r["matmul_basic"], r["a"], r["b"])
put("vmap", run("vmap", m.check_vmap_cell)); put("shmap", run("shmap", m.check_shmap_cell))
r = run("specs", m.specs_cells); put("specs", [r[k] for k in ("y1", "y2", "untiled", "y3", "y4", "y5")])
res["specs/mesh_back"] = r["mesh_after_with"] == r["mesh"]
r = run("vma", m.vma_cells)
put("vma", [r[k] for k in ("double_varying", "double_invariant", "psum", "psum_typed", "psum_j", "mul")])
res["vma/out_specs_bug"] = builtin_class(r["out_specs_bug"])
res["vma/pcast"] = r["pcast"] is None
res["vma/body"] = body_shapes(r["jaxpr"])
res["vma/pvary"] = count_primitives(r["jaxpr"].jaxpr, names={{"pvary": "pvary"}})["pvary"]
r = run("scan", m.scan_vma_cells)
res["scan/error"] = builtin_class(r["error"])
put("scan_fixed", r["fixed"])
if "unfixed" in r:
    put("scan_unfixed", r["unfixed"])
r = run("unreduced", m.unreduced_reduced_cell)
if r is not None:
    put("unreduced", r)
r = run("collectives", m.collectives_cells)
put("collectives", [r[k] for k in ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9")])
cargs = {{"f1": np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2]), "f4": np.array([3, 9, 5, 2]),
          "f5": np.array([3, 9, 5, 2]), "f7": np.arange(8), "f2": np.arange(16).reshape(4, 4),
          "f3": np.arange(16).reshape(4, 4)}}
res["collectives/comm"] = {{k: comm(r[k].sharding.mesh, f, cargs.get(k, cargs["f1"])) for k, f in r["fns"].items()}}
r = run("matmul", m.matmul_cells)
put("matmul", [r[k] for k in ("lhs", "rhs", "allgather", "allgather_overlapped", "allgather_overlapped_bidi",
                              "psumscatter", "psumscatter_overlapped", "psumscatter_overlapped_bidi")])
res["matmul/comm"] = {{k: comm(r["lhs"].sharding.mesh, f, *((r["lhs"], r["rhs"]) if k.startswith("allgather")
                                                         else (r["lhs2"], r["rhs2"])))
                      for k, f in r["fns"].items()}}
params, batch = run("init", m.init_cell)
put("init", [params, batch])
r, p, b = run("dp", m.data_parallel_cells, params, batch)
put("dp", [r["loss"], r["loss_dp"], r["grad"]])
res["dp/comm"] = [comm(p[0][0].sharding.mesh, r["loss_dp_fn"], p, b),
                  comm(p[0][0].sharding.mesh, jax.grad(r["loss_dp_fn"]), p, b)]
r, p, b = run("fsdp", m.fsdp_cells, params, batch)
put("fsdp", [r["loss"], r["loss_fsdp"], r["grad"]])
res["fsdp/comm"] = [comm(p[0][0].sharding.mesh, r["loss_fsdp_fn"], p, b),
                    comm(p[0][0].sharding.mesh, jax.grad(r["loss_fsdp_fn"]), p, b)]
loss_tp, p, b = run("tp", m.tp_cells, params, batch)
with jax.set_mesh(p[0][0].sharding.mesh):
    put("tp", [jax.jit(loss_tp)(p, b), jax.jit(jax.grad(loss_tp))(p, b)])
    res["tp/all_reduces"] = jax.jit(loss_tp).lower(p, b).compile().as_text().count("all-reduce(")
res["tp/comm"] = comm(p[0][0].sharding.mesh, loss_tp, p, b)
r, p, b = run("fsdp_tp", m.fsdp_tp_cells, params, batch)
put("fsdp_tp", [r["loss"], r["loss_fsdp_tp"], r["grad"]])
res["fsdp_tp/comm"] = comm(p[0][0].sharding.mesh, r["loss_fsdp_tp_fn"], p, b)
r = run("pp", m.pipeline_cells, p, b); put("pp", [r["loss_pp"], r["grad"], r["params_"], r["batch_"]])

# The prose's claims about errors (their builtin exception classes).
jax.set_mesh(None)
Auto = jax.sharding.AxisType.Auto  # (JAX's Explicit mesh would refuse NumPy arguments not laid out as in_specs)
mesh4 = jax.make_mesh((4,), ("i",), (Auto,))
smap = lambda f, i=P("i"), o=P("i"): jax.shard_map(f, mesh=mesh4, in_specs=i, out_specs=o)
res["claims/errors"] = [
    error_class(smap(lambda x: x), np.arange(10)),
    error_class(smap(lambda x: x.sum()), np.arange(8)),
    error_class(smap(lambda x: jax.lax.all_gather(x, "i", tiled=True), o=P()), np.array([3, 9, 5, 2])),
    error_class(smap(lambda x: jax.lax.ppermute(x, "i", [(0, 1), (1, 1)])), np.arange(8)),
    error_class(smap(lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=False)), np.arange(8).reshape(8, 1))]
put("claims/ppermute_zeros", smap(lambda x: jax.lax.ppermute(x, "i", [(0, 1), (1, 2)]))(np.arange(8)))
put("claims/all_to_all", smap(lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=False))(np.arange(16).reshape(16, 1)))
put("claims/retile", jax.shard_map(lambda x: x, mesh=jax.make_mesh((4, 2), ("i", "j"), (Auto, Auto)),
                                   in_specs=P(("j", "i"), None), out_specs=P("i", "j"))(
    np.tile(np.arange(144).reshape(12, 12), (2, 1))))
np.savez(npz, **arrays)
open(txt, "w").write(json.dumps(res))
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory, run_py):
    return run_on_eight_cpu_devices(run_py, tmp_path_factory.mktemp("docs_shard_map_201"), SCRIPT)


def test_same_arrays(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    # Documented differences: JAX raises in the unfixed scan cell (kiln computes), kiln in the unreduced cell.
    assert sorted(set(k) - set(j)) == ["scan_unfixed/0", "scan_unfixed/1"]
    assert sorted(set(j) - set(k)) == ["unreduced/0"]
    for name in sorted(set(k) & set(j)):
        assert k[name].shape == j[name].shape and k[name].dtype == j[name].dtype, name
        if name.startswith(("init/", "matmul/0", "matmul/1")):  # the PRNG draws: bit for bit
            np.testing.assert_array_equal(k[name], j[name], err_msg=name)
        else:  # NaN where JAX has NaN (the pipeline's inner weights' gradient), equal to float32 rounding elsewhere
            np.testing.assert_allclose(k[name], j[name], rtol=2e-5, atol=2e-5, equal_nan=True, err_msg=name)


# the cells whose printed text is the same in both (the others print blocks inside eager shard_maps)
SAME_TEXT = ["vmap", "shmap", "specs", "matmul", "init", "tp"]


@pytest.mark.parametrize("cell", SAME_TEXT)
def test_same_printed_text(both, cell):
    (_, k), (_, j) = both["kiln"], both["jax"]
    assert k[f"{cell}/printed"] == j[f"{cell}/printed"]
    assert k[f"{cell}/raised"] is j[f"{cell}/raised"] is None


def _lines(text, keep):
    return [line for line in text.splitlines() if keep(line)]


def test_same_printed_types_results_and_losses(both):
    (_, k), (_, j) = both["kiln"], both["jax"]
    is_type = lambda line: line.startswith(("float32[", "int32["))  # noqa: E731
    assert _lines(k["vma/printed"], is_type) == _lines(j["vma/printed"], is_type)
    assert len(_lines(j["vma/printed"], is_type)) == 6
    finals = lambda text: text.split("FINAL RESULT:\n")[1:]  # noqa: E731  (each up to the next BEFORE:)
    assert [f.split("BEFORE:")[0] for f in finals(k["collectives/printed"])] == \
        [f.split("BEFORE:")[0] for f in finals(j["collectives/printed"])]
    for cell in ("dp", "fsdp", "fsdp_tp", "pp"):
        kl, jl = k[f"{cell}/printed"].split(), j[f"{cell}/printed"].split()
        assert len(kl) == len(jl), cell
        for a, b in zip(kl, jl):
            try:
                np.testing.assert_allclose(float(a), float(b), rtol=2e-5, err_msg=cell)
            except ValueError:
                assert a == b, cell


def test_same_results_of_the_checks_and_the_same_blocks(both):
    (_, k), (_, j) = both["kiln"], both["jax"]
    for key in ("device_count", "toy/ok", "toy/body", "specs/mesh_back", "vma/out_specs_bug", "vma/pcast",
                "vma/body", "tp/all_reduces", "claims/errors"):
        assert k[key] == j[key], key
    assert j["vma/out_specs_bug"] == "ValueError" and j["claims/errors"] == ["ValueError"] * 5


def test_same_collectives_in_the_programs(both):
    """The collectives of each program the prose talks about (psum_invariant and reduce_scatter, JAX's names,
    counted as psum and psum_scatter)."""
    (_, k), (_, j) = both["kiln"], both["jax"]
    for key in ("toy/comm", "collectives/comm", "matmul/comm", "dp/comm", "fsdp/comm", "tp/comm", "fsdp_tp/comm"):
        assert k[key] == j[key], key


@pytest.mark.xfail(strict=True, reason="JAX's jaxpr shows the implicit pcast as `pvary` (the page's claim); kiln's IR "
                                       "carries no varying-axes types (README 'shard_map')")
def test_same_jaxpr_with_the_implicit_pvary(both):
    (_, k), (_, j) = both["kiln"], both["jax"]
    assert j["vma/pvary"] == 1
    assert k["vma/pvary"] == j["vma/pvary"]


def test_scan_cell_without_pcast_is_a_documented_difference(both):
    """README: JAX raises (under its Explicit mesh it asks for jax.reshard of the argument not laid out as in_specs,
    and it checks varying axes through scan carries); kiln lays the argument out and computes (two swaps give the
    carries back: the fixed cell's numbers, compared above)."""
    (ka, k), (_, j) = both["kiln"], both["jax"]
    assert j["scan/error"] == "ValueError" and "jax.reshard" in j["scan/printed"]
    assert k["scan/error"] is None and k["scan/printed"] == ""
    np.testing.assert_array_equal(ka["scan_unfixed/0"], ka["scan_fixed/0"])
    np.testing.assert_array_equal(ka["scan_unfixed/1"], ka["scan_fixed/1"])


@pytest.mark.xfail(strict=True, reason="JAX: P(unreduced={'i'}) / P(reduced={'i'}) make unreduced and reduced "
                                       "arrays the body sees as float32[]{U:i} and float32[4]{R:i}; kiln has no "
                                       "unreduced or reduced axes (README 'Sharding': NotImplementedError)")
def test_same_unreduced_and_reduced_cell(both):
    (_, k), (_, j) = both["kiln"], both["jax"]
    assert j["unreduced/printed"].split() == ["float32[4]{V:i}", "float32[4]", "float32[]{U:i}", "float32[4]{R:i}"]
    assert k["unreduced/raised"] is None and k["unreduced/printed"] == j["unreduced/printed"]
