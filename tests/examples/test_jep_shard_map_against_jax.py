"""JAX's design document docs/jep/14273-shard-map.md under kiln and under JAX 0.10.2 (the against_jax session).

The kiln side is tests/examples/jax_ported/jep_shard_map.py; the JAX side is the same source with JAX's imports
put back. Both need 8 devices, fixed when the backend starts, so each side runs in its own interpreter
(same_as_jax.run_on_eight_cpu_devices): it runs every block and saves the arrays (to the .npz), and what the blocks
print, the specs and devices of the results, the classes of the errors, the collectives in each program's jaxpr and
in its StableHLO (ops, replica groups, manual axes) and the body's block shapes (to the JSON). The NumPy oracles are
in tests/multidevice/test_jep_shard_map.py.

The one difference, documented (README "Differences from JAX", "Mesh axes"): the page's
`jax.make_mesh((4, 2), ('i', 'j'))` has Explicit axes in JAX 0.10.2, which then refuses the TL;DR blocks' arguments
(not laid out over the mesh: a ValueError asking for `jax.reshard`); kiln's axes are Auto and the blocks run. The
blocks are compared on an Auto mesh, where JAX runs them too.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from same_as_jax import run_on_eight_cpu_devices  # noqa: E402

# Runs the page under `lib`: {name: array} to the .npz at `npz`, the rest to the JSON at `out`.
SCRIPT = """
import contextlib, io, json, re, sys, warnings
import numpy as np
sys.path.insert(0, {here!r})
from ported import count_primitives, load
warnings.simplefilter("ignore", DeprecationWarning)  # (jax.experimental.shard_map, the page's import)
lib, npz, out = {lib!r}, {npz!r}, {out!r}
m = load("jep_shard_map", lib)
jax = __import__(lib)
from importlib import import_module
shard_map = import_module(lib + ".experimental.shard_map").shard_map
P = jax.sharding.PartitionSpec
assert jax.device_count() == 8, jax.devices()
arrays, res = {{}}, {{}}
COMM = {{"psum": "psum", "psum_invariant": "psum", "psum_scatter": "psum_scatter", "reduce_scatter": "psum_scatter",
         "all_gather": "all_gather", "all_to_all": "all_to_all", "ppermute": "ppermute"}}
HLO = ("all_reduce", "reduce_scatter", "all_gather", "collective_permute", "all_to_all")

def builtin_class(e):
    return next(b.__name__ for b in type(e).__mro__ if b.__module__ == "builtins")

def run(name, fn, *args, **kwargs):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            r = fn(*args, **kwargs)
        res[name + "/raised"] = None
    except Exception as e:
        r, res[name + "/raised"] = None, builtin_class(e)
    res[name + "/printed"] = buf.getvalue()
    return r

def put(name, x):
    arrays[name] = np.asarray(x)
    if hasattr(x, "sharding"):
        res[name + "/layout"] = [str(getattr(x.sharding, "spec", None)),
                                 sorted(s.device.id for s in x.addressable_shards),
                                 sorted(list(s.data.shape) for s in x.addressable_shards)]

def program(name, fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        closed = jax.make_jaxpr(fn)(*args)
        text = jax.jit(fn).lower(*args).as_text()
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "shard_map")
    body = eqn.params.get("body", eqn.params.get("jaxpr"))
    body = getattr(body, "jaxpr", body)
    res[name + "/comm"] = dict(count_primitives(closed.jaxpr, names=COMM))
    res[name + "/body"] = [[list(v.aval.shape) for v in body.invars], [list(v.aval.shape) for v in body.outvars]]
    res[name + "/hlo"] = {{op: len(re.findall(r"stablehlo\\." + op + r"\\b", text)) for op in HLO}}
    res[name + "/groups"] = re.findall(r"replica_groups = dense<(\\[\\[.*?\\]\\])>", text)
    res[name + "/manual"] = re.findall(r"sdy\\.manual_computation.*manual_axes=\\{{([^}}]*)\\}}", text)

# the page's mesh as written (JAX 0.10.2: Explicit axes), then an Auto mesh
r = run("tldr_page_mesh", m.tldr_cell)
if r is not None:
    put("tldr_page_mesh/c", r["c"])
res["page_mesh_axis_types"] = [t.name for t in jax.make_mesh((4, 2), ("i", "j")).axis_types]
Auto = jax.sharding.AxisType.Auto
mesh = jax.make_mesh((4, 2), ("i", "j"), axis_types=(Auto, Auto))
r = run("tldr", m.tldr_cell, mesh)
a, b = r["a"], r["b"]
put("tldr/a", a); put("tldr/b", b); put("tldr/c", r["c"])
put("tldr/jit", jax.jit(r["matmul_basic"])(a, b))
program("tldr", r["matmul_basic"], a, b)
run("reduce_scatter_page_mesh", m.reduce_scatter_cell, jax.make_mesh((4, 2), ("i", "j")), a, b)
r = run("reduce_scatter", m.reduce_scatter_cell, mesh, a, b)
put("reduce_scatter/c", r["c"])
program("reduce_scatter", r["matmul_reduce_scatter"], a, b)

xs = np.random.default_rng(14273).integers(-9, 10, (8, 5)).astype(np.float32)
run("rank_reducing_page", m.rank_reducing_cell, xs)
r = run("rank_reducing", m.rank_reducing_cell, xs, in_axes=(0,))
for k, v in zip(("lhs", "rhs", "same"), r):
    put("rank_reducing/" + k, v)
r = run("rank_preserving", m.rank_preserving_cell, xs)
for k, v in zip(("lhs", "rhs"), r):
    put("rank_preserving/" + k, v)

r = run("in_specs", m.in_specs_cells, mesh)
m2 = r["m"]
for k in ("y1", "x_", "y2"):
    put("in_specs/" + k, r[k])
program("f1", r["f1"], r["x1"]); program("f2", r["f2"], r["x_"])
for i, z in enumerate(run("untiling", m.untiling_cells, m2)):
    put(f"untiling/{{i}}", z)
r = run("psum_untiling", m.psum_untiling_cells, m2)
for k in ("f3", "f4", "f5"):
    put("psum_untiling/" + k, r["y" + k[1]])
    program(k, r[k], r["x"])

# the prose's claims
X = np.arange(12 * 12).reshape(12, 12)
ident = lambda v: v
put("claims/retile", shard_map(ident, m2, in_specs=P(("j", "i"), None), out_specs=P("i", "j"))(np.tile(X, (2, 1))))
put("claims/closed_over_as_argument",
    shard_map(ident, m2, in_specs=P(None, None), out_specs=P("i", "j"))(np.array([[3.]], np.float32)))
run("claims/unchecked_untile", shard_map(ident, m2, in_specs=P("i", "j"), out_specs=P("i", None)), X)
put("claims/unchecked_untile_off",
    shard_map(ident, m2, in_specs=P("i", "j"), out_specs=P("i", None), check_rep=False)(X))
run("claims/uneven", shard_map(ident, m2, in_specs=P("i", None), out_specs=P("i", None)), X[:10])
run("claims/rank", shard_map(lambda v: v.sum(), m2, in_specs=P("i", "j"), out_specs=P("i")), X)
np.savez(npz, **arrays)
open(out, "w").write(json.dumps(res))
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory, run_py):
    return run_on_eight_cpu_devices(run_py, tmp_path_factory.mktemp("jep_shard_map"), SCRIPT)


def test_the_page_mesh_is_the_one_difference(both):
    (k, kj), (_, jj) = both["kiln"], both["jax"]
    # JAX 0.10.2's make_mesh makes Explicit axes and refuses the TL;DR blocks' arguments; kiln's are Auto
    assert jj["page_mesh_axis_types"] == ["Explicit", "Explicit"] and kj["page_mesh_axis_types"] == ["Auto", "Auto"]
    assert jj["tldr_page_mesh/raised"] == jj["reduce_scatter_page_mesh/raised"] == "ValueError"
    assert kj["tldr_page_mesh/raised"] is kj["reduce_scatter_page_mesh/raised"] is None
    np.testing.assert_array_equal(k["tldr_page_mesh/c"], k["tldr/c"])


def test_same_arrays(both):
    (k, _), (j, _) = both["kiln"], both["jax"]
    assert sorted(set(k) - set(j)) == ["tldr_page_mesh/c"] and not set(j) - set(k)
    assert len(j) > 20
    for name in sorted(j):
        assert k[name].shape == j[name].shape and k[name].dtype == j[name].dtype, name
        np.testing.assert_array_equal(k[name], j[name], err_msg=name)  # integer values: exact in both


def test_same_layouts_printed_text_and_errors(both):
    (_, kj), (_, jj) = both["kiln"], both["jax"]
    keys = [key for key in jj if key.endswith(("/layout", "/printed", "/raised")) and "page_mesh" not in key]
    assert sorted(keys) == sorted(key for key in kj if key.endswith(("/layout", "/printed", "/raised"))
                                  and "page_mesh" not in key)
    for key in keys:
        assert kj[key] == jj[key], key
    # the errors: the page's pmap in_axes list, and the prose's three (all ValueErrors in both)
    raised = {key: v for key, v in jj.items() if key.endswith("/raised") and v and "page_mesh" not in key}
    assert raised == {f"{c}/raised": "ValueError" for c in ("rank_reducing_page", "claims/unchecked_untile",
                                                            "claims/uneven", "claims/rank")}
    assert jj["in_specs/printed"] == "(3, 12)\n(3, 12)\n"
    assert jj["psum_untiling/printed"] == "(12, 6)\n(3, 12)\n(3, 6)\n"


@pytest.mark.parametrize("name", ["tldr", "reduce_scatter", "f1", "f2", "f3", "f4", "f5"])
def test_same_programs(both, name):
    """The same block shapes, collectives in the jaxpr, and StableHLO collectives over the same devices."""
    (_, kj), (_, jj) = both["kiln"], both["jax"]
    for what in ("body", "comm", "hlo", "groups", "manual"):
        assert kj[f"{name}/{what}"] == jj[f"{name}/{what}"], what
