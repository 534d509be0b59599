"""JAX's docs/new_docs/201/shard-map.md ("Manual parallelism with `shard_map`") ported to kiln (tests/examples/
jax_ported/docs_shard_map_201.py), every cell against NumPy on 8 CPU devices: the global arrays, each device's
block (worked out here from the mesh's device grid and the PartitionSpec, and compared with the array's
addressable shards), the page's `collective_ref` reference semantics written in NumPy, the shapes and types its
comments print, the collectives its prose says a program contains (counted in kiln's jaxprs), and its prose claims
about errors (the exception class and that the message says what went wrong and what to do). The neural-network
section runs at the page's sizes (784, five layers of 128, 8; batch 32): its losses and gradients are checked
against a float64 NumPy forward and backward pass (itself checked by float64 finite differences).

Where kiln differs from JAX, documented in README "Differences from JAX": a `print` inside an eager shard_map
shows a tracer (JAX runs the body device by device and prints each block); the scan cell that JAX refuses computes
(kiln lays out an argument as `in_specs` says where JAX's Explicit mesh asks for `jax.reshard`, and does not check
varying axes through scan carries); make_mesh's axes are Auto; jaxprs carry no varying-axes types, so the page's
`pvary` is absent (a strict xfail); PartitionSpec has no unreduced/reduced axes (the cell raises
NotImplementedError: a strict xfail states JAX's types). Compared with JAX in
tests/examples/test_docs_shard_map_201_against_jax.py.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import pathlib
import re

import numpy as np
import pytest
from ported_pages import block_bounds, count_primitives, device_ids, mlp_forward_backward, run_printing
from ported_pages import collectives as count_collectives

import kiln
from kiln.sharding import PartitionSpec as P

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
PORT = EXAMPLES / "jax_ported" / "docs_shard_map_201.py"
X16 = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
SIZES = (784, 128, 128, 128, 128, 128, 8)  # the page's network
BATCH = 32


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nb():
    return _load(PORT, "jax_ported_docs_shard_map_201")


def _np(x):
    return np.asarray(x)


# ------------------------------------------------ oracles ------------------------------------------------

def _block(shape, mesh, spec, device_id):
    """The slices of the block that `device_id` holds under `spec`."""
    return tuple(slice(a, b) for a, b in block_bounds(shape, mesh, spec, device_id))


def _check_blocks(arr, host, spec, rtol=0.0):
    """`arr` holds `host` on every device of its mesh, each device the block `spec` gives it."""
    host = np.asarray(host)
    mesh = arr.sharding.mesh
    assert arr.shape == host.shape
    shards = arr.addressable_shards
    assert sorted(s.device.id for s in shards) == sorted(device_ids(mesh).flat)
    for s in shards:
        want = host[_block(host.shape, mesh, spec, s.device.id)]
        if rtol:
            np.testing.assert_allclose(_np(s.data), want, rtol=rtol, atol=rtol, err_msg=str(s.device))
        else:
            np.testing.assert_array_equal(_np(s.data), want, err_msg=str(s.device))


def _drawn_grid(printed):
    """The device sets visualize_array_sharding draws, row by row."""
    rows = [re.findall(r"CPU ([\d,]+)", line) for line in printed.splitlines()]
    return [[{int(i) for i in cell.split(",")} for cell in row] for row in rows if row]


def _body(closed_jaxpr):
    """The jaxpr of the (first) shard_map in a program."""
    eqn = next(e for e in closed_jaxpr.jaxpr.eqns if e.primitive.name == "shard_map")
    body = eqn.params["body"]
    return getattr(body, "jaxpr", body)


def _collectives(closed_jaxpr):
    """How many of each collective a program has, nested bodies included."""
    return count_collectives(closed_jaxpr)


# ------------------------------------------------ overview ------------------------------------------------

def test_config_cell_asks_for_the_eight_devices_the_process_has(nb):
    # JAX accepts jax_num_cpu_devices only before its backends start (the against-JAX test calls the cell first in a
    # fresh process); kiln also accepts the count its backend already has, which changes nothing.
    nb.config_cell()
    assert kiln.device_count() == 8
    with pytest.raises(ValueError, match="only before the backends start") as e:
        kiln.config.update("jax_num_cpu_devices", 4)
    assert "KILN_NUM_CPU_DEVICES" in str(e.value)


A = np.arange(8 * 16.).reshape(8, 16)
B = np.arange(16 * 4.).reshape(16, 4)


def test_toy_matmul_its_blocks_and_their_layout(nb):
    out, printed = run_printing(nb.toy_matmul_cells)
    _check_blocks(out["a"], A, P("x", "y"))
    _check_blocks(out["b"], B, P("y", None))
    for key in ("c", "c_ref"):  # sharded along its rows, replicated along 'y'
        _check_blocks(out[key], A @ B, P("x", None))
    assert out["c"].sharding.spec == P("x", None)
    assert bool(out["ok"]) and bool(out["ok_ref"])
    # The drawn grids: c's (cell 5), then a's, b's and c's under their titles (cell 7).
    c_first, rest = printed.split("a blocks:\n")
    a_text, rest = rest.split("b blocks:\n")
    b_text, c_text = rest.split("c blocks:\n")
    assert _drawn_grid(c_first) == _drawn_grid(c_text) == [[{0, 1}], [{2, 3}], [{4, 5}], [{6, 7}]]
    assert _drawn_grid(a_text) == [[{0}, {1}], [{2}, {3}], [{4}, {5}], [{6}, {7}]]
    assert _drawn_grid(b_text) == [[{0, 2, 4, 6}], [{1, 3, 5, 7}]]
    # The cell's comments: a_block f32[2, 8], b_block f32[8, 4], c_block f32[2, 4], c f32[8, 4]; one psum.
    with kiln.set_mesh(out["a"].sharding.mesh):
        jaxpr = kiln.make_jaxpr(out["matmul_basic"])(out["a"], out["b"])
    body = _body(jaxpr)
    assert [(v.aval.shape, str(v.aval.dtype)) for v in body.invars] == [((2, 8), "float32"), ((8, 4), "float32")]
    assert [v.aval.shape for v in body.outvars] == [(2, 4)] and out["c"].shape == (8, 4)
    assert _collectives(jaxpr) == {"psum": 1}


# ---------------------------------------- slow down, start with the basics ----------------------------------------

def test_rank_reducing_and_rank_preserving_maps(nb):
    (ans, expected), printed = run_printing(nb.check_vmap_cell)
    xs = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(_np(ans), np.einsum("ij,ij->i", xs, xs))
    np.testing.assert_array_equal(_np(expected), np.einsum("ij,ij->i", xs, xs))
    (ans, expected), printed2 = run_printing(nb.check_shmap_cell)
    y = np.arange(32).reshape(8, 4)
    want = np.concatenate([blk.T @ blk for blk in np.split(y, 4)])  # 4 instances, one per device, each (4, 4)
    _check_blocks(ans, want, P("i"))
    np.testing.assert_array_equal(_np(expected), want)
    assert printed == printed2 == "True\n"


def test_the_prose_shapes_of_vmap_and_shard_map():
    """xs f32[8,5] and f(x) f32[3,7]: vmap(f)(xs) is f32[8,3,7]; shard_map over 4 devices: y_blk f32[2,5], the
    result f32[12,7]."""
    xs = np.arange(40.).reshape(8, 5)
    f = lambda x: kiln.numpy.zeros((3, 7)) + x.sum()  # noqa: E731
    np.testing.assert_array_equal(_np(kiln.vmap(f)(xs)), np.broadcast_to(xs.sum(1)[:, None, None], (8, 3, 7)))
    mesh = kiln.make_mesh((4,), ("i",))
    blocks = []
    out = kiln.shard_map(lambda b: (blocks.append(b.shape), f(b))[1], mesh=mesh, in_specs=P("i"),
                         out_specs=P("i"))(xs)
    assert blocks == [(2, 5)]
    np.testing.assert_array_equal(_np(out), np.repeat([blk.sum() for blk in np.split(xs, 4)], 3)[:, None]
                                  * np.ones((12, 7)))


X144 = np.arange(144).reshape(12, 12)


@pytest.fixture(scope="module")
def specs(nb):
    return run_printing(nb.specs_cells)


def test_in_specs_split_and_tile(specs):
    out, printed = specs
    # f1 prints (3, 12) (its comment); f2's comment says (3,12), but the cell device_puts x, not the tiled x_, so
    # its blocks are (3, 6) (as under JAX).
    assert printed.splitlines()[:2] == ["(3, 12)", "(3, 6)"]
    # f1: each device (i, j) returns its whole row block, concatenated along both axes: (12, 24) as the prose says.
    assert out["y1"].shape == (12, 24)
    _check_blocks(out["y1"], np.tile(X144, (1, 2)), P("i", "j"))
    # f2 (of x, see above): x back, (12, 12).
    _check_blocks(out["y2"], X144, P("i", "j"))


def test_the_other_tiling_the_prose_names():
    """'we could also have tiled along the first axis, and used the pspec P(('j', 'i'), None)': the blocks of
    jnp.tile(x, (2, 1)) under it are f1's blocks, so the result is f1's."""
    mesh = kiln.make_mesh((4, 2), ("i", "j"))
    seen = []
    y = kiln.shard_map(lambda b: (seen.append(b.shape), b)[1], mesh=mesh, in_specs=P(("j", "i"), None),
                       out_specs=P("i", "j"))(np.tile(X144, (2, 1)))
    assert seen == [(3, 12)]
    _check_blocks(y, np.tile(X144, (1, 2)), P("i", "j"))


def test_out_specs_untile_and_psum(specs):
    out, printed = specs
    x = np.array([[3.]])
    reps = [(4, 2), (4, 1), (1, 1)]
    for z, r in zip(out["untiled"], reps):
        np.testing.assert_array_equal(_np(z), np.tile(x, r))
    # `with jax.set_mesh(auto_mesh)` put the cell's mesh back.
    assert out["mesh_after_with"] == out["mesh"] and out["mesh_after_with"].axis_names == ("i", "j")
    blocks = X144.reshape(4, 3, 2, 6)  # (i, rows, j, cols): device (i, j)'s block is blocks[i, :, j, :]
    _check_blocks(out["y3"], blocks.sum(2).reshape(12, 6), P("i", None))  # psum over j: equal along j
    _check_blocks(out["y4"], blocks.sum(0).reshape(3, 12), P(None, "j"))
    _check_blocks(out["y5"], blocks.sum((0, 2)), P(None, None))
    want = "".join(f"{np.tile(x, r)}\n" for r in reps) + "(12, 6)\n(3, 12)\n(3, 6)\n"
    assert printed.split("\n", 2)[2] == want


def test_the_errors_the_specs_prose_describes():
    mesh = kiln.make_mesh((4,), ("i",))
    # "It's an error if the corresponding mesh axis size does not evenly divide the input array axis size."
    with pytest.raises(ValueError, match="4 does not divide 10") as e:
        kiln.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(np.arange(10))
    assert "in_specs" in str(e.value) and "pad the array" in str(e.value)
    # "It's an error if an output block shape has a rank too small for the concatenation of the output pspec."
    with pytest.raises(ValueError, match="0 dimensions") as e:
        kiln.shard_map(lambda x: x.sum(), mesh=mesh, in_specs=P("i"), out_specs=P("i"))(np.arange(8))
    assert "out_specs" in str(e.value) and "at most one entry per dimension" in str(e.value)


# ------------------------------------------------ check_vma ------------------------------------------------

X6 = np.arange(6.)
Y3 = np.arange(3.)
TYPE = re.compile(r"float32\[[\d,]*\](\{.*\})?")


@pytest.fixture(scope="module")
def vma(nb):
    return run_printing(nb.vma_cells)


def test_varying_and_invariant_values(vma):
    out, printed = vma
    _check_blocks(out["double_varying"], 2 * X6, P("i"))
    _check_blocks(out["double_invariant"], 2 * X6, P())
    for key in ("psum", "psum_typed"):  # the two devices' blocks summed, the same on both
        _check_blocks(out[key], X6[:3] + X6[3:], P())
    x2 = np.arange(8 * 4.).reshape(8, 4)
    _check_blocks(out["psum_j"], x2[:, :2] + x2[:, 2:], P("i"))
    # README: a print in an eager shard_map body shows a tracer (JAX prints each device's block): its block type.
    assert printed.splitlines()[:3] == ["JitTracer(float32[3])", "JitTracer(float32[6])", "JitTracer(float32[3])"]


def test_the_printed_types(vma):
    _, printed = vma
    # The page's comments (JAX prints float32 where they write f32), in order; the cell with the 2-D mesh also
    # asserts manual_axis_type.varying == {'i'} for the psum over 'j'.
    assert [line for line in printed.splitlines() if TYPE.fullmatch(line)] == [
        "float32[3]{V:i}", "float32[3]", "float32[2,2]{V:(i,j)}", "float32[2,2]{V:i}", "float32[6]",
        "float32[6]{V:i}"]


def test_the_out_specs_bug_is_caught(vma):
    out, printed = vma
    err = out["out_specs_bug"]
    assert isinstance(err, ValueError) and str(err) in printed
    msg = str(err)
    assert "out_specs entry P()" in msg and "['i']" in msg                      # what and along which axis
    assert "kiln.lax.psum" in msg and "check_vma=False" in msg                  # how to fix it
    assert out["pcast"] is None


def test_without_check_vma_the_out_specs_bug_goes_unnoticed():
    """'with check_vma=False there is no exception and instead we get silent undefined behavior': one of the
    blocks (kiln takes the first device's)."""
    mesh = kiln.make_mesh((2,), ("i",))
    y = kiln.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P(), check_vma=False)(X6)
    assert y.shape == (3,) and any(np.array_equal(_np(y), blk) for blk in np.split(X6, 2))


def test_the_jaxpr_with_an_implicit_pcast(vma):
    out, printed = vma
    assert str(out["jaxpr"]) in printed
    assert [v.aval.shape for v in out["jaxpr"].jaxpr.invars] == [(6,), (3,)]
    body = _body(out["jaxpr"])
    assert [v.aval.shape for v in body.invars] == [(3,), (3,)]
    assert [e.primitive.name for e in body.eqns if e.primitive.name != "pvary"] == ["mul"]
    _check_blocks(out["mul"], X6 * np.tile(Y3, 2), P("i"))


@pytest.mark.xfail(strict=True, reason="JAX: the body reads `f:f32[3]{V:i} = pvary[axes=('i',)] e` before the mul "
                                       "(the page: 'these jax.lax.pcast calls show up as pvary'); kiln's IR carries "
                                       "no varying-axes types (README 'shard_map'), so its body is the mul alone")
def test_the_jaxpr_shows_the_implicit_pvary(vma):
    out, _ = vma
    assert count_primitives(out["jaxpr"].jaxpr, names={"pvary": "pvary"}) == {"pvary": 1}


def test_scan_with_a_varying_and_an_unvarying_carry(nb):
    out, printed = run_printing(nb.scan_vma_cells)
    # README "Differences from JAX": the first cell computes where JAX raises (JAX's Explicit mesh refuses the
    # argument laid out otherwise than in_specs, and JAX checks varying axes through scan carries); two swaps give
    # the carries back, so both cells compute the same.
    assert out["error"] is None and printed == ""
    for key in ("unfixed", "fixed"):
        x_, y_ = out[key]
        _check_blocks(x_, X6, P("i"))
        _check_blocks(y_, np.tile(Y3, 2), P("i"))  # each device's y, concatenated by out_specs P('i')


@pytest.mark.xfail(strict=True, raises=NotImplementedError,
                   reason="JAX: P(unreduced={'i'}) / P(reduced={'i'}) make an unreduced einsum result and a reduced "
                          "array, which the body sees as float32[]{U:i} and float32[4]{R:i}; kiln has no unreduced "
                          "or reduced axes (README 'Sharding': PartitionSpec raises NotImplementedError)")
def test_unreduced_and_reduced_manual_types(nb):
    out, printed = run_printing(nb.unreduced_reduced_cell)
    assert printed.split() == ["float32[4]{V:i}", "float32[4]", "float32[]{U:i}", "float32[4]{R:i}"]
    _check_blocks(out, np.arange(8.), P("i"))


def test_unreduced_partition_spec_says_what_to_do_instead(nb):
    with pytest.raises(NotImplementedError, match=r"unreduced=\{'i'\}") as e:
        run_printing(nb.unreduced_reduced_cell)
    assert "no unreduced or reduced axes" in str(e.value) and "psum" in str(e.value)


def test_the_table_of_collectives():
    """The summary table: each collective's varying-axes type, its collective in StableHLO, its transpose's."""
    mesh = kiln.make_mesh((4,), ("i",))
    lax = kiln.lax
    types = []

    def body(b):
        for y in (lax.psum(b, "i"), lax.pcast(lax.psum(b, "i"), "i", to="varying"),
                  lax.all_to_all(b, "i", 0, 0, tiled=True), lax.axis_index("i"),
                  lax.psum_scatter(b, "i", tiled=True), lax.all_gather(b, "i", tiled=True)):
            types.append(str(kiln.typeof(y)))
        return b

    x16 = np.arange(16.).astype(np.float32)
    kiln.make_jaxpr(kiln.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x16)
    assert types == ["float32[4]", "float32[4]{V:i}", "float32[4]{V:i}", "int32[]{V:i}", "float32[1]{V:i}",
                     "float32[16]{V:i}"]
    hlo_ops = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")
    table = {  # collective: (out_specs, its StableHLO collective, the collectives of its transpose)
        "psum": (P(), ["all_reduce"], {}),  # JAX's transpose: a pvary, which communicates nothing
        "pvary": (P("i"), [], {"psum": 1}),
        "all_to_all": (P("i"), ["all_to_all"], {"all_to_all": 1}),
        "psum_scatter": (P("i"), ["reduce_scatter"], {"all_gather": 1}),
        "all_gather": (P("i"), ["all_gather"], {"psum_scatter": 1}),
    }
    fns = {"psum": lambda b: lax.psum(b, "i"), "pvary": lambda b: lax.pcast(b, "i", to="varying"),
           "all_to_all": lambda b: lax.all_to_all(b, "i", 0, 0, tiled=True),
           "psum_scatter": lambda b: lax.psum_scatter(b, "i", tiled=True),
           "all_gather": lambda b: lax.all_gather(b, "i", tiled=True)}
    for name, (out_spec, ops, transposed) in table.items():
        f = kiln.shard_map(fns[name], mesh=mesh, in_specs=P() if name == "pvary" else P("i"), out_specs=out_spec)
        text = kiln.jit(f).lower(x16).as_text()
        assert [op for op in hlo_ops if f"stablehlo.{op}" in text] == ops, name
        ct = kiln.eval_shape(f, x16)
        t = kiln.make_jaxpr(kiln.linear_transpose(f, x16))(np.ones(ct.shape, np.float32))
        assert _collectives(t) == transposed, name


# ------------------------------------------------ collectives tutorial ------------------------------------------------

# The page's `collective_ref` reference semantics, in NumPy: each takes the blocks and returns each device's result.

def _psum_ref(blocks):
    tot = sum(blocks)
    return [tot] * len(blocks)


def _all_gather_ref(blocks, tiled=False):
    combine = np.concatenate if tiled else np.stack
    return [combine(blocks)] * len(blocks)


def _psum_scatter_ref(blocks, tiled=False):
    tot = sum(blocks)
    if tiled:
        tot = tot.reshape(len(blocks), -1, *tot.shape[1:])
    return [tot[i] for i in range(tot.shape[0])]


def _ppermute_ref(blocks, perm):
    results = [np.zeros_like(blocks[0])] * len(blocks)
    for src, dst in perm:
        results[dst] = blocks[src]
    return results


def _all_to_all_ref(blocks, tiled=False):
    if tiled:
        splits = [np.array_split(x, len(blocks)) for x in blocks]
        return [np.concatenate(s) for s in zip(*splits)]
    return [np.stack(s) for s in zip(*[list(x) for x in blocks])]


@pytest.fixture(scope="module")
def collectives(nb):
    return run_printing(nb.collectives_cells)


def _sections(printed, title):
    """The text printed after each `title` (up to the next BEFORE/AFTER/FINAL RESULT)."""
    return [part.split("\nBEFORE:")[0].split("\nAFTER:")[0].split("\nFINAL RESULT:")[0].rstrip("\n")
            for part in printed.split(f"{title}:\n ")[1:]]


def test_collectives_values_and_blocks(collectives):
    out, printed = collectives
    q = np.split(X16, 4)
    x44 = np.arange(16).reshape(4, 4)
    b22 = [[blk for blk in np.split(r, 2, axis=1)] for r in np.split(x44, 2)]  # b22[i][j]: device (i, j)'s block
    four = np.array([3, 9, 5, 2])
    perm = [(i, (i + 1) % 4) for i in range(4)]
    want = {  # each device's result block (1-D mesh), from the reference semantics
        "f1": _psum_ref(q), "f4": _all_gather_ref(np.split(four, 4), tiled=True),
        "f5": _all_gather_ref(np.split(four, 4)), "f6": _psum_scatter_ref(q, tiled=True),
        "f7": _ppermute_ref(np.split(np.arange(8), 4), perm), "f8": _psum_scatter_ref(q, tiled=True),
        "f9": _all_to_all_ref(q, tiled=True)}
    specs = {"f1": P(None), "f4": P("i"), "f5": P("i"), "f6": P("i"), "f7": P("i"), "f8": P("i"), "f9": P("i")}
    finals = {}
    for name, blocks in want.items():
        glob = blocks[0] if specs[name] == P(None) else np.concatenate(blocks)
        _check_blocks(out[name], glob, specs[name])
        finals[name] = glob
    # 2-D mesh: psum over 'i' (equal along i, out_specs P(None, 'j')), and over both axes.
    f2 = np.concatenate([b22[0][j] + b22[1][j] for j in range(2)], axis=1)
    f3 = sum(b22[i][j] for i in range(2) for j in range(2))
    _check_blocks(out["f2"], f2, P(None, "j"))
    _check_blocks(out["f3"], f3, P(None, None))
    finals.update(f2=f2, f3=f3)
    # f8, the page's psum_scatter written with ppermutes, gives psum_scatter's numbers; f6's output equals f1's
    # "because here we use out_specs=P('i')".
    np.testing.assert_array_equal(_np(out["f6"]), _np(out["f1"]))
    order = ["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"]
    assert _sections(printed, "FINAL RESULT") == [str(finals[k]) for k in order]


def test_collectives_block_shapes_printed(collectives):
    """The BEFORE/AFTER prints show each instance's block (JAX: the blocks' values device by device; kiln, whose
    eager shard_map traces its body, a tracer of the block's type: README)."""
    _, printed = collectives
    shapes = lambda title: [re.fullmatch(r"JitTracer\(int32\[([\d,]*)\]\)", t).group(1)  # noqa: E731
                            for t in _sections(printed, title)]
    assert shapes("BEFORE") == ["4", "2,2", "2,2", "1", "1", "4", "2", "4", "4"]
    assert shapes("AFTER") == ["4", "2,2", "2,2", "4", "4,1", "1", "2", "1", "4"]


def test_collectives_programs(collectives):
    """Each cell's program has the collective the section is about; f8 builds psum_scatter from 3 ppermutes."""
    out, _ = collectives
    args = {"f1": X16, "f2": np.arange(16).reshape(4, 4), "f3": np.arange(16).reshape(4, 4),
            "f4": np.array([3, 9, 5, 2]), "f5": np.array([3, 9, 5, 2]), "f6": X16, "f7": np.arange(8), "f8": X16,
            "f9": X16}
    want = {"f1": {"psum": 1}, "f2": {"psum": 1}, "f3": {"psum": 1}, "f4": {"all_gather": 1},
            "f5": {"all_gather": 1}, "f6": {"psum_scatter": 1}, "f7": {"ppermute": 1}, "f8": {"ppermute": 3},
            "f9": {"all_to_all": 1}}
    for name, fn in out["fns"].items():
        mesh = out[name].sharding.mesh
        with kiln.set_mesh(mesh), contextlib.redirect_stdout(io.StringIO()):
            assert _collectives(kiln.make_jaxpr(fn)(args[name])) == want[name], name


def test_the_collectives_prose_claims():
    mesh = kiln.make_mesh((4,), ("i",))
    lax = kiln.lax
    smap = lambda f, out_specs=P("i"): kiln.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=out_specs)  # noqa: E731
    # "we actually can't set out_specs=P() here": all_gather's output counts as varying.
    with pytest.raises(ValueError, match=r"out_specs entry P\(\)"):
        smap(lambda b: lax.all_gather(b, "i", tiled=True), P())(np.array([3, 9, 5, 2]))
    # ppermute: "If an index does not appear as a destination, then the ... result is an array of zeros."
    perm = [(0, 1), (1, 2)]
    got = smap(lambda b: lax.ppermute(b, "i", perm))(np.arange(8))
    np.testing.assert_array_equal(_np(got), np.concatenate(_ppermute_ref(np.split(np.arange(8), 4), perm)))
    # "Source indices and destination indices can't be repeated."
    with pytest.raises(ValueError, match="repeats the destination index 1") as e:
        smap(lambda b: lax.ppermute(b, "i", [(0, 1), (1, 1)]))(np.arange(8))
    assert "at most once" in str(e.value)
    # all_to_all, tiled=False: split_axis's size must equal the axis size; a new axis at concat_axis.
    got = smap(lambda b: lax.all_to_all(b, "i", 0, 0, tiled=False))(np.arange(16).reshape(16, 1))
    np.testing.assert_array_equal(
        _np(got), np.concatenate(_all_to_all_ref(np.split(np.arange(16).reshape(16, 1), 4))).reshape(16, 1))
    with pytest.raises(ValueError, match="must equal the size 4 of axis 'i'") as e:
        smap(lambda b: lax.all_to_all(b, "i", 0, 0, tiled=False))(np.arange(8).reshape(8, 1))
    assert "tiled=True" in str(e.value)


# ------------------------------------------------ matrix multiplies ------------------------------------------------

@pytest.fixture(scope="module")
def matmuls(nb):
    return run_printing(nb.matmul_cells)


MATMULS = {"allgather": {"all_gather": 1}, "allgather_overlapped": {"ppermute": 3},
           "allgather_overlapped_bidi": {"ppermute": 6}, "psumscatter": {"psum_scatter": 1},
           "psumscatter_overlapped": {"ppermute": 3}, "psumscatter_overlapped_bidi": {"ppermute": 6}}


def test_collective_matmuls(matmuls):
    out, printed = matmuls
    lhs, rhs = _np(out["lhs"]).astype(np.float64), _np(out["rhs"]).astype(np.float64)
    assert lhs.shape == (8, 8) and rhs.shape == (8, 4)
    _check_blocks(out["lhs"], lhs, P("i", None))
    _check_blocks(out["rhs"], rhs, P("i", None))
    _check_blocks(out["lhs2"], lhs, P(None, "i"))  # Example 2: lhs sharded along its contracting dimension
    for name in MATMULS:
        _check_blocks(out[name], lhs @ rhs, P("i", None), rtol=1e-5)
    assert printed.split() == ["True"] * 6


def test_collective_matmul_programs(matmuls):
    """The all-gather and psum_scatter versions have that one collective; the overlapped ones replace it by 3
    ppermutes around the ring (one per step), the bidirectional ones by 3 in each direction."""
    out, _ = matmuls
    with kiln.set_mesh(out["lhs"].sharding.mesh):
        for name, want in MATMULS.items():
            args = (out["lhs"], out["rhs"]) if name.startswith("allgather") else (out["lhs2"], out["rhs2"])
            assert _collectives(kiln.make_jaxpr(out["fns"][name])(*args)) == want, name


# ------------------------------------------------ neural networks ------------------------------------------------


@pytest.fixture(scope="module")
def net(nb):
    (params, batch), printed = run_printing(nb.init_cell, SIZES, BATCH)
    assert printed == ""
    host = ([(_np(w), _np(b)) for w, b in params], (_np(batch[0]), _np(batch[1])))
    return params, batch, host, mlp_forward_backward(*host)


def test_init_shapes_and_the_numpy_oracle(net):
    """The page's network: 6 layers (784 -> 128 x5 -> 8), batch 32; the oracle's gradient against float64 central
    differences at a few entries of the first, a middle and the last layer."""
    _, _, (params, batch), (_, grads) = net
    assert [w.shape for w, _ in params] == list(zip(SIZES[:-1], SIZES[1:]))
    assert [b.shape for _, b in params] == [(n,) for n in SIZES[1:]]
    assert batch[0].shape == (BATCH, 784) and batch[1].shape == (BATCH, 8)
    params = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    rng = np.random.default_rng(0)
    eps = 1e-6
    for layer in (0, 3, 5):
        for which in (0, 1):
            idx = tuple(rng.integers(0, n) for n in params[layer][which].shape)
            moved = []
            for sign in (1, -1):
                p = [[v.copy() for v in wb] for wb in params]
                p[layer][which][idx] += sign * eps
                moved.append(mlp_forward_backward(p, batch)[0])
            np.testing.assert_allclose(grads[layer][which][idx], (moved[0] - moved[1]) / (2 * eps), rtol=1e-6,
                                       atol=1e-9)


def _close_grads(got, want, spec=None, tol=2e-4):
    """Each parameter's gradient (and, with spec, its blocks laid out as the parameter is)."""
    assert len(got) == len(want)
    for (gw, gb), (ww, wb) in zip(got, want):
        for g, w in ((gw, ww), (gb, wb)):
            np.testing.assert_allclose(_np(g), w, rtol=tol, atol=tol)
            if spec is not None:
                _check_blocks(g, w, spec, rtol=tol)


def _printed_losses(printed, loss):
    lines = printed.split()
    np.testing.assert_allclose([float(v) for v in lines[:2]], [loss, loss], rtol=1e-5)
    assert lines[2:] == ["True"]


def test_data_parallel(nb, net):
    params, batch, _, (loss, grads) = net
    (out, params_s, batch_s), printed = run_printing(nb.data_parallel_cells, params, batch)
    _check_blocks(batch_s[0], _np(batch[0]), P("batch"))  # the batch sharded over the 8 devices
    _check_blocks(params_s[0][0], _np(params[0][0]), P())  # the params replicated
    np.testing.assert_allclose([float(out["loss"]), float(out["loss_dp"])], [loss, loss], rtol=1e-5)
    _close_grads(out["grad"], grads)
    _printed_losses(printed, loss)
    # "the collective all-reduce-sum operations happen where we'd expect: at the end of the forward pass ..., and
    # in the backward pass to compute the total parameter gradients": one psum forward, one per parameter back.
    mesh = params_s[0][0].sharding.mesh
    with kiln.set_mesh(mesh):
        assert _collectives(kiln.make_jaxpr(out["loss_dp_fn"])(params_s, batch_s)) == {"psum": 1}
        assert _collectives(kiln.make_jaxpr(kiln.grad(out["loss_dp_fn"]))(params_s, batch_s)) == {"psum": 1 + 12}


def test_fully_sharded_data_parallel(nb, net):
    params, batch, _, (loss, grads) = net
    (out, params_s, batch_s), printed = run_printing(nb.fsdp_cells, params, batch)
    for (w, b), (w0, b0) in zip(params_s, params):  # each parameter sharded along its first axis over 4 devices
        _check_blocks(w, _np(w0), P("batch"))
        _check_blocks(b, _np(b0), P("batch"))
    np.testing.assert_allclose([float(out["loss"]), float(out["loss_fsdp"])], [loss, loss], rtol=1e-5)
    _close_grads(out["grad"], grads, P("batch"))  # the fragments' gradient: the whole gradient, in 4 blocks
    _printed_losses(printed, loss)
    # The remat policy saves no all_gather: the 12 forward gathers, then the backward pass gathers again the 5
    # weight matrices it needs (layer 0's input cotangent is not asked for; biases are not needed), and
    # psum_scatters each parameter's cotangent (all_gather's transpose).
    with kiln.set_mesh(params_s[0][0].sharding.mesh):
        fwd = _collectives(kiln.make_jaxpr(out["loss_fsdp_fn"])(params_s, batch_s))
        bwd = _collectives(kiln.make_jaxpr(kiln.grad(out["loss_fsdp_fn"]))(params_s, batch_s))
    assert fwd == {"all_gather": 12, "psum": 1}
    assert bwd == {"all_gather": 12 + 5, "psum_scatter": 12, "psum": 1}


def test_tensor_parallel(nb, net):
    params, batch, _, (loss, grads) = net
    (loss_tp, params_s, batch_s), printed = run_printing(nb.tp_cells, params, batch)
    assert printed == ""
    _check_blocks(batch_s[0], _np(batch[0]), P(None, "feats"))
    _check_blocks(params_s[0][0], _np(params[0][0]), P("feats"))
    try:
        kiln.set_mesh(params_s[0][0].sharding.mesh)  # as the page leaves it in context
        np.testing.assert_allclose(float(kiln.jit(loss_tp)(params_s, batch_s)), loss, rtol=1e-5)
        _close_grads(kiln.jit(kiln.grad(loss_tp))(params_s, batch_s), grads)
        # each gemm_tp is one shard_map with one psum_scatter; the jnp.sum over the feature-sharded predictions
        # is left to the compiler, which sums across devices ("NOTE psum!"): an all-reduce in the compiled program
        assert _collectives(kiln.make_jaxpr(loss_tp)(params_s, batch_s)) == {"psum_scatter": 6}
        assert "all-reduce(" in kiln.jit(loss_tp).lower(params_s, batch_s).compile().as_text()
    finally:
        kiln.set_mesh(None)


@pytest.fixture(scope="module")
def fsdp_tp(nb, net):
    params, batch, _, _ = net
    return run_printing(nb.fsdp_tp_cells, params, batch)


def test_fsdp_and_tensor_parallel(net, fsdp_tp):
    params, batch, _, (loss, grads) = net
    (out, params_s, batch_s), printed = fsdp_tp
    _check_blocks(batch_s[0], _np(batch[0]), P("batch", "feats"))
    _check_blocks(params_s[0][0], _np(params[0][0]), P(("feats", "batch")))
    np.testing.assert_allclose([float(out["loss"]), float(out["loss_fsdp_tp"])], [loss, loss], rtol=1e-5)
    _close_grads(out["grad"], grads, P(("feats", "batch")))
    _printed_losses(printed, loss)
    # "we have to do two collective reductions: one over 'feats' and one over 'batch'"
    with kiln.set_mesh(params_s[0][0].sharding.mesh):
        fwd = _collectives(kiln.make_jaxpr(out["loss_fsdp_tp_fn"])(params_s, batch_s))
    assert fwd == {"all_gather": 12, "psum_scatter": 6, "psum": 2}


def test_spmd_pipeline(nb, net, fsdp_tp):
    params, _, _, (loss, grads) = net
    (_, params_s, batch_s), _ = fsdp_tp  # the page's params and batch at this point
    out, printed = run_printing(nb.pipeline_cells, params_s, batch_s, BATCH)
    assert printed.splitlines()[:2] == ["2 stages, 2 layer(s) per stage, 4 pipelined layers total",
                                        "8 examples per microbatch, 4 microbatches total"]
    np.testing.assert_allclose(float(out["loss_pp"]), loss, rtol=1e-5)
    np.testing.assert_allclose(float(printed.splitlines()[2]), loss, rtol=1e-5)
    first, (ws, bs), last = out["params_"]
    _check_blocks(ws, np.stack([_np(w) for w, _ in params[1:-1]]), P("stages"))  # 2 inner layers per stage
    _check_blocks(bs, np.stack([_np(b) for _, b in params[1:-1]]), P("stages"))
    g_first, (g_ws, g_bs), g_last = out["grad"]
    _close_grads([g_first, g_last], [grads[0], grads[-1]])
    np.testing.assert_allclose(_np(g_bs), np.stack([b for _, b in grads[1:-1]]), rtol=2e-4, atol=2e-4)
    # The page only asks that the gradient not crash: the pipeline's bubbles start as NaN (zeros * nan), and an
    # inner weight's cotangent x.T @ ct with a NaN input x is NaN even where ct is 0. Only the first inner layer
    # (stage 0's first) always gets real inputs; the other three meet a bubble, so their weights' gradients are
    # NaN (JAX's too: the against-JAX test compares the NaNs' places).
    g_ws, want = _np(g_ws), np.stack([w for w, _ in grads[1:-1]])
    np.testing.assert_allclose(g_ws[0], want[0], rtol=2e-4, atol=2e-4)
    assert np.isnan(g_ws[1:]).all()
