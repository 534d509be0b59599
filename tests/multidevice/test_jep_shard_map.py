"""JAX's design document docs/jep/14273-shard-map.md ("`shmap` (`shard_map`) for simple per-device code"), ported to
kiln (tests/examples/jax_ported/jep_shard_map.py), every block against NumPy on 8 CPU devices: the global results
(matmuls, tilings, sums of blocks over mesh axes, the rank-reducing and rank-preserving maps written as NumPy loops),
the block each device holds (worked out from the mesh's device grid and the PartitionSpec, compared with the
array's addressable shards), the block shapes the comments and prints give (and the API section's formula for them),
the collectives the page says each program uses (counted in kiln's jaxpr, and in the StableHLO: one
`sdy.manual_computation`, "switching into 'manual SPMD mode'", and exactly the communication the body writes, over
the devices its mesh axes group), and the prose's claims about errors (class and message). Compared with JAX 0.10.2
in tests/examples/test_jep_shard_map_against_jax.py.

Where kiln differs from JAX (README "Differences from JAX"): the page's `jax.make_mesh((4, 2), ('i', 'j'))` has
Auto axes in kiln, so its TL;DR blocks run as the page says; JAX 0.10.2's are Explicit, and it refuses the blocks'
arguments (not laid out over that mesh) with a ValueError that asks for `jax.reshard`.
"""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import re

import numpy as np
import pytest
from ported_pages import block_bounds, device_ids, run_printing
from ported_pages import collectives as count_collectives

import kiln
from kiln.experimental.shard_map import shard_map
from kiln.sharding import PartitionSpec as P

PORT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "jax_ported" / "jep_shard_map.py"
A = np.arange(8 * 16.).reshape(8, 16)
B = np.arange(16 * 32.).reshape(16, 32)
X = np.arange(12 * 12).reshape(12, 12)
HLO_COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "collective_permute", "all_to_all")


@pytest.fixture(scope="module")
def nb():
    spec = importlib.util.spec_from_file_location("jax_ported_jep_shard_map", PORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------ oracles ------------------------------------------------

def _check_blocks(arr, host, spec):
    """`arr` is `host`, each device of its mesh holding the block `spec` gives it."""
    host = np.asarray(host)
    assert arr.shape == host.shape and np.asarray(arr).dtype == host.dtype, (arr.shape, arr.dtype, host.dtype)
    np.testing.assert_array_equal(np.asarray(arr), host)
    mesh = arr.sharding.mesh
    shards = arr.addressable_shards
    assert sorted(s.device.id for s in shards) == sorted(device_ids(mesh).flat)
    for s in shards:
        block = tuple(slice(a, b) for a, b in block_bounds(host.shape, mesh, spec, s.device.id))
        np.testing.assert_array_equal(np.asarray(s.data), host[block], err_msg=str(s.device))


def _api_block_shape(shape, spec, mesh):
    """The API section's formula for the shape of a body's argument (spec padded with None to the rank)."""
    spec = tuple(spec) + (None,) * (len(shape) - len(spec))
    return tuple(sz // (1 if n is None else mesh.shape[n]) for sz, n in zip(shape, spec))


def _body(fn, *args):
    """The (first) shard_map body of fn's program: its arguments' and results' shapes."""
    eqn = next(e for e in kiln.make_jaxpr(fn)(*args).jaxpr.eqns if e.primitive.name == "shard_map")
    body = getattr(eqn.params["body"], "jaxpr", eqn.params["body"])
    return [tuple(v.aval.shape) for v in body.invars], [tuple(v.aval.shape) for v in body.outvars]


def _groups(mesh, axes):
    """The device ids each reduction over mesh `axes` combines: the devices along those axes, the others fixed."""
    ids = device_ids(mesh)
    along = [mesh.axis_names.index(a) for a in axes]
    rest = [k for k in range(ids.ndim) if k not in along]
    return np.transpose(ids, rest + along).reshape(-1, int(np.prod([ids.shape[k] for k in along]))).tolist()


def _stablehlo(fn, *args):
    """(collective op counts, the replica groups of each, the manual_computations' manual axes) of fn's StableHLO."""
    text = kiln.jit(fn).lower(*args).as_text()
    counts = {op: len(re.findall(rf"stablehlo\.{op}\b", text)) for op in HLO_COLLECTIVES}
    groups = [ast.literal_eval(g) for g in re.findall(r"replica_groups = dense<(\[\[.*?\]\])>", text)]
    manual = re.findall(r"sdy\.manual_computation.*manual_axes=\{([^}]*)\}", text)
    return {op: n for op, n in counts.items() if n}, groups, manual


def _f(x):
    """The port's `f` in NumPy."""
    x = np.asarray(x, np.float64)
    return x.sum() + np.arange(21.).reshape(3, 7) * x.max()


# ------------------------------------------------ TL;DR ------------------------------------------------

@pytest.fixture(scope="module")
def tldr(nb):
    return nb.tldr_cell()


def test_tldr_matmul_basic(tldr):
    mesh, c = tldr["mesh"], tldr["c"]
    assert isinstance(c, kiln.Array)  # "the result is a jax.Array"
    assert mesh.axis_types == (kiln.sharding.AxisType.Auto,) * 2  # (JAX 0.10.2: Explicit; see the docstring)
    # c: f32[8, 32], rows split along 'i', the same block on both devices along 'j'; exact (integers below 2**24)
    _check_blocks(c, (A @ B).astype(np.float32), P("i", None))
    assert c.sharding.spec == P("i", None)
    # "this same code works efficiently inside a pjit/jit"
    np.testing.assert_array_equal(np.asarray(kiln.jit(tldr["matmul_basic"])(tldr["a"], tldr["b"])), A @ B)


def test_tldr_block_shapes_are_the_comments_and_the_api_formula(tldr):
    mesh, a, b = tldr["mesh"], tldr["a"], tldr["b"]
    ins, outs = _body(tldr["matmul_basic"], a, b)
    assert ins == [(2, 8), (8, 32)] == [_api_block_shape(a.shape, P("i", "j"), mesh),
                                        _api_block_shape(b.shape, P("j", None), mesh)]
    assert outs == [(2, 32)]


def test_tldr_communicates_once_along_j(tldr):
    mesh, fn, args = tldr["mesh"], tldr["matmul_basic"], (tldr["a"], tldr["b"])
    assert count_collectives(kiln.make_jaxpr(fn)(*args)) == {"psum": 1}
    # lowered: manual mode over both axes, one all-reduce over the pairs of devices along 'j', nothing else
    counts, groups, manual = _stablehlo(fn, *args)
    assert counts == {"all_reduce": 1} and groups == [_groups(mesh, ["j"])] == [[[0, 1], [2, 3], [4, 5], [6, 7]]]
    assert manual == ['"i", "j"']


def test_matmul_reduce_scatter(nb, tldr):
    mesh, a, b = tldr["mesh"], tldr["a"], tldr["b"]
    r = nb.reduce_scatter_cell(mesh, a, b)
    # c fully sharded: device (i, j) holds rows block i, columns block j
    _check_blocks(r["c"], (A @ B).astype(np.float32), P("i", "j"))
    assert r["c"].sharding.spec == P("i", "j")
    # c_partialsum: f32[8/X, 32], c_block: f32[8/X, 32/Y] (X, Y = 4, 2)
    assert _body(r["matmul_reduce_scatter"], a, b)[1] == [(2, 16)]
    assert count_collectives(kiln.make_jaxpr(r["matmul_reduce_scatter"])(a, b)) == {"psum_scatter": 1}
    counts, groups, manual = _stablehlo(r["matmul_reduce_scatter"], a, b)
    assert counts == {"reduce_scatter": 1} and groups == [_groups(mesh, ["j"])] and manual == ['"i", "j"']


# ------------------------------------- rank-reducing vs rank-preserving maps -------------------------------------

XS = np.random.default_rng(14273).integers(-9, 10, (8, 5)).astype(np.float32)  # f32[8,5], integer-valued


def test_rank_reducing_block_as_written_is_refused_as_in_jax(nb):
    # pmap's in_axes is a prefix of the tuple of positional arguments: a list is not one (JAX's pmap refuses it too;
    # vmap alone takes a list as the tuple)
    with pytest.raises(ValueError, match=r"in_axes=\[0\] is a list, .*write in_axes=\(0,\)"):
        nb.rank_reducing_cell(XS)


def test_rank_reducing_map_is_a_stack(nb):
    lhs, rhs, same = nb.rank_reducing_cell(XS, in_axes=(0,))
    want = np.stack([_f(x) for x in XS])  # each f(x) f32[3,7]: pmap(f)(xs) f32[8,3,7]
    for got in (lhs, rhs):
        assert got.shape == (8, 3, 7) and got.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(same).all() and same.shape == (8, 3, 7)


def test_rank_preserving_map_is_a_concatenation(nb):
    lhs, rhs = nb.rank_preserving_cell(XS)
    want = np.concatenate([_f(XS[2 * k:2 * k + 2]) for k in range(4)])  # blocks f32[2,5]: f32[12,7]
    for got in (lhs, rhs):
        assert got.shape == (12, 7) and got.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), want)
    # 4 logical applications: the mesh's 4 devices (the first four), one block of 3 rows each
    assert sorted(s.device.id for s in lhs.addressable_shards) == [0, 1, 2, 3]
    assert all(s.data.shape == (3, 7) for s in lhs.addressable_shards)


# ------------------------------------------------ in_specs ------------------------------------------------

@pytest.fixture(scope="module")
def in_specs(nb, tldr):
    return run_printing(nb.in_specs_cells, tldr["mesh"])


def test_in_specs_f1_splits_along_i_only(in_specs):
    r, printed = in_specs
    assert printed == "(3, 12)\n(3, 12)\n"  # f1's block, then f2's: "prints (3,12)" both
    # out_specs P('i', 'j') concatenates along both axes: (12, 24); device (i, j) holds x1's rows block i
    _check_blocks(r["y1"], np.tile(X, (1, 2)).astype(np.int32), P("i", "j"))
    assert _body(r["f1"], r["x1"])[0] == [_api_block_shape(X.shape, P("i", None), r["m"])] == [(3, 12)]


def test_in_specs_f2_of_the_tiled_input_is_f1(in_specs):
    r, _ = in_specs
    np.testing.assert_array_equal(np.asarray(r["x_"]), np.tile(X, (1, 2)))  # x_ has shape (12, 24)
    _check_blocks(r["y2"], np.tile(X, (1, 2)).astype(np.int32), P("i", "j"))  # "f1(x) == f2(x_)"
    assert _body(r["f2"], r["x_"])[0] == [(3, 12)]


def test_tiling_along_the_first_axis_instead(in_specs):
    # "we could also have tiled along the first axis, and used the pspec P(('j', 'i'), None)"
    r, _ = in_specs
    f2_rows = shard_map(lambda x_block: x_block, r["m"], in_specs=P(("j", "i"), None), out_specs=P("i", "j"))
    _check_blocks(f2_rows(np.tile(X, (2, 1))), np.tile(X, (1, 2)).astype(np.int32), P("i", "j"))


# ------------------------------------------------ out_specs ------------------------------------------------

def test_untiling_a_closed_over_value(nb, in_specs):
    m = in_specs[0]["m"]
    zs, printed = run_printing(nb.untiling_cells, m)
    x = np.array([[3.]], np.float32)
    wants = [np.tile(x, (4, 2)), np.tile(x, (4, 1)), x]
    for z, want, spec in zip(zs, wants, [P("i", "j"), P("i", None), P(None, None)]):
        _check_blocks(z, want, spec)
    assert printed == "".join(f"{w}\n" for w in wants)  # "prints the same as jnp.tile(x, ...)"
    # "the body function closing over an array value is equivalent to passing it as an argument with P(None, None)"
    passed = shard_map(lambda v: v, m, in_specs=P(None, None), out_specs=P("i", "j"))(x)
    _check_blocks(passed, wants[0], P("i", "j"))


@pytest.fixture(scope="module")
def untiled_sums(nb, in_specs):
    return run_printing(nb.psum_untiling_cells, in_specs[0]["m"])


def test_psum_then_untile(untiled_sums):
    r, printed = untiled_sums
    assert printed == "(12, 6)\n(3, 12)\n(3, 6)\n"
    blocks = X.reshape(4, 3, 2, 6).transpose(0, 2, 1, 3)  # [i, j]: device (i, j)'s f32[3,6] block
    # f3: the sum over 'j' of each row of blocks, concatenated along 'i'; f4: the sum over 'i', along 'j'; f5: all
    _check_blocks(r["y3"], np.concatenate(list(blocks.sum(1))).astype(np.int32), P("i", None))
    _check_blocks(r["y4"], np.concatenate(list(blocks.sum(0)), axis=1).astype(np.int32), P(None, "j"))
    _check_blocks(r["y5"], blocks.sum((0, 1)).astype(np.int32), P(None, None))


@pytest.mark.parametrize("name, axes", [("f3", ["j"]), ("f4", ["i"]), ("f5", ["i", "j"])])
def test_psum_then_untile_communicates_once(untiled_sums, name, axes):
    r, _ = untiled_sums
    fn, mesh = r[name], r["y3"].sharding.mesh
    assert count_collectives(kiln.make_jaxpr(fn)(X)) == {"psum": 1}
    # the output untiling moves no data: one all-reduce, over the devices along the psum's axes
    counts, groups, _ = _stablehlo(fn, X)
    assert counts == {"all_reduce": 1} and groups == [_groups(mesh, axes)]


# ------------------------------------------------ the prose's errors ------------------------------------------------

def test_unchecked_untiling_is_refused_statically(in_specs):
    # "we can provide a static check mechanism which raises an error on all potentially-incorrect programs": a
    # block that varies along 'j' returned with out_specs that do not mention 'j'
    m = in_specs[0]["m"]
    f = shard_map(lambda x_block: x_block, m, in_specs=P("i", "j"), out_specs=P("i", None))
    with pytest.raises(ValueError, match=r"P\('i', None\) promises the value is the same along mesh axes \['j'\]") as e:
        f(X)
    assert "psum" in str(e.value) and "check_vma=False" in str(e.value)
    # unchecked, "only one block along that axis is used in the output": the first device's along 'j'
    unchecked = shard_map(lambda x_block: x_block, m, in_specs=P("i", "j"), out_specs=P("i", None), check_rep=False)
    np.testing.assert_array_equal(np.asarray(unchecked(X)), X[:, :6])


def test_mesh_axis_must_divide_the_input_axis(in_specs):
    f = shard_map(lambda x_block: x_block, in_specs[0]["m"], in_specs=P("i", None), out_specs=P("i", None))
    with pytest.raises(ValueError, match=r"splits dimension 0 of i32\[10,12\] into 4 blocks, but 4 does not divide "
                                         r"10; pad the array"):
        f(X[:10])


def test_output_rank_must_cover_its_out_specs(in_specs):
    f = shard_map(lambda x_block: x_block.sum(), in_specs[0]["m"], in_specs=P("i", "j"), out_specs=P("i"))
    with pytest.raises(ValueError, match=r"out_specs entry for output is P\('i',\), which has 1 entries, but the "
                                         r"value is i32\[\] with 0 dimensions; give at most one entry"):
        f(X)
