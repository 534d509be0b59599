"""JAX's docs/new_docs/201/placement.md ("Data placement") ported to kiln (tests/examples/jax_ported/
docs_placement_201.py), every cell on 8 CPU devices against oracles that do not involve JAX: the meshes' device
grids (the devices the page slices out of `full`), the block of the global array each device holds (worked out in
NumPy from the mesh's device grid and the PartitionSpec by ported_pages.block_bounds, and compared with the
array's addressable shards), the values in NumPy float64 (the pipeline's four `sin(x) + 1` stages iterated in
NumPy), and the page's claims: what the cells print, which arrays are committed, the cells that raise (the
exception class, and that the message says what went wrong and how to fix it), computations following committed
data, and the notes at its end (device_put without a target, `donate=True`, `np.asarray`).

Where kiln differs from JAX, documented in README "Differences from JAX" (Sharding): kiln's mesh axes are all Auto
and its types carry no sharding, so `jax.typeof(xa)` prints `float32[8]` where the page shows `float32[8@x]` and a
mesh prints `axis_types=(Auto,)` (strict xfails state JAX's). The page's note that `jax.device_put(x)` without a
target gives an uncommitted result holds for host values and uncommitted arrays; a committed array is returned as
it is, as JAX 0.10.2 does (tests/examples/test_docs_placement_201_against_jax.py compares the two libraries).
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from ported_pages import block_bounds, device_ids, run_printing

import kiln
from kiln.sharding import AxisType, NamedSharding
from kiln.sharding import PartitionSpec as P

PORT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "jax_ported" / "docs_placement_201.py"
NO_TYPE_SHARDING = ("kiln's mesh axes all behave as Auto and its avals carry no sharding (README 'Differences from "
                    "JAX': Sharding): JAX's make_mesh axes are Explicit and its types show the mesh axis")


@pytest.fixture(scope="module")
def nb():
    spec = importlib.util.spec_from_file_location("jax_ported_docs_placement_201", PORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def meshes(nb):
    full = nb.full_mesh_cell()
    return (full, *nb.submeshes_cell(full))


def _ids(mesh):
    return device_ids(mesh).ravel().tolist()


def _check_blocks(arr, host, spec):
    """`arr` is `host` laid out by `spec` over its mesh: every device of the mesh holds the block the spec gives it."""
    host = np.asarray(host)
    mesh = arr.sharding.mesh
    assert arr.shape == host.shape and arr.sharding.spec == spec
    assert sorted(s.device.id for s in arr.addressable_shards) == sorted(_ids(mesh))
    for s in arr.addressable_shards:
        block = tuple(slice(a, b) for a, b in block_bounds(host.shape, mesh, spec, s.device.id))
        np.testing.assert_array_equal(np.asarray(s.data), host[block], err_msg=str(s.device))
    np.testing.assert_array_equal(np.asarray(arr), host)


# ------------------------------------------------ the meshes ------------------------------------------------

def test_config_cell_gives_the_eight_devices(nb):
    nb.config_cell()  # kiln takes the count its backend already has (JAX: only before its backends start)
    assert kiln.device_count() == 8


def test_full_mesh_is_every_device_along_one_axis(meshes):
    full = meshes[0]
    assert full.shape == {"x": 8} and full.axis_names == ("x",)
    assert _ids(full) == list(range(8))
    # the cell shows the mesh: JAX's repr, sizes and names as the constructor takes them
    assert repr(full) == f"Mesh(axis_sizes=(8,), axis_names=('x',), axis_types={full.axis_types})"


@pytest.mark.xfail(strict=True, reason=NO_TYPE_SHARDING)
def test_make_mesh_axes_are_explicit(meshes):
    assert meshes[0].axis_types == (AxisType.Explicit,)


def test_submeshes_are_slices_of_the_full_mesh(meshes):
    _, mesh_a, mesh_b, m0, m1 = meshes
    assert [_ids(m) for m in (mesh_a, mesh_b, m0, m1)] == [[0, 1, 2, 3], [4, 5, 6, 7], [0], [1]]
    assert all(m.axis_names == ("x",) for m in (mesh_a, mesh_b, m0, m1))
    assert mesh_a != mesh_b and m0 != m1  # same axes, other devices: other meshes


# ---------------------------------------- default placement, and commitment -----------------------------------------

def test_default_placement_is_uncommitted_on_the_first_device(nb):
    x, printed = run_printing(nb.default_placement_cell)
    assert printed == "False\nSingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)\n"
    assert not x.committed and x.devices() == {kiln.devices()[0]}
    np.testing.assert_array_equal(np.asarray(x), np.arange(4.0))
    assert x.dtype == np.float32


def test_device_put_commits_to_the_mesh(nb, meshes):
    mesh_a = meshes[1]
    xa, printed = run_printing(nb.device_put_cell, mesh_a)
    lines = printed.splitlines()
    assert lines[0] == "True" and xa.committed
    assert lines[1].startswith("float32[8") and xa.shape == (8,) and xa.dtype == np.float32
    _check_blocks(xa, np.arange(8.0), P("x"))
    assert [block_bounds((8,), mesh_a, P("x"), d) for d in range(4)] == [((2 * d, 2 * d + 2),) for d in range(4)]
    # "Computations follow their data: an operation on xa runs on mesh_a's devices"
    doubled = xa * 2
    assert doubled.committed and doubled.sharding.mesh == mesh_a
    _check_blocks(doubled, 2 * np.arange(8.0), P("x"))


@pytest.mark.xfail(strict=True, reason=NO_TYPE_SHARDING)
def test_device_put_type_shows_the_mesh_axis(nb, meshes):
    _, printed = run_printing(nb.device_put_cell, meshes[1])
    assert printed.splitlines()[1] == "float32[8@x]"  # the page: "the `@x` in `float32[8@x]`"


def test_committed_to_different_meshes_is_an_error(nb, meshes):
    m0, m1 = meshes[3:]
    a, b = nb.committed_scalars_cell(m0, m1)
    for v, mesh, value in ((a, m0, 1.0), (b, m1, 2.0)):
        assert v.committed and v.sharding == NamedSharding(mesh, P()) and v.shape == ()
        assert np.asarray(v) == np.float32(value)
    with pytest.raises(ValueError) as e:  # "an error, not an implicit transfer"
        nb.add_across_meshes_cell(a, b)
    msg = str(e.value)
    assert "devices [0]" in msg and "devices [1]" in msg  # which meshes: their devices (their axes print alike)
    assert "same mesh" in msg and "kiln.device_put" in msg  # what is wrong, and how to move the values


def test_uncommitted_values_follow_committed_ones(nb, meshes):
    m0, m1 = meshes[3:]
    a, _ = nb.committed_scalars_cell(m0, m1)
    c, printed = run_printing(nb.uncommitted_follows_cell, a)
    assert not c.committed and c.dtype == np.float32
    assert printed == f"{NamedSharding(m0, P())!r}\n"
    assert printed.startswith("NamedSharding(mesh=Mesh('x': 1, ") and "spec=P()" in printed
    total = a + c  # runs on m0, where a is committed
    assert total.committed and total.sharding == NamedSharding(m0, P()) and np.asarray(total) == np.float32(4.0)


# -------------------------------------------- moving data between meshes --------------------------------------------

def test_device_put_moves_to_another_mesh(nb, meshes):
    _, mesh_a, mesh_b = meshes[:3]
    xa = run_printing(nb.device_put_cell, mesh_a)[0]
    xb, printed = run_printing(nb.move_cell, xa, mesh_b)
    assert printed == "True\n" and xb.committed
    _check_blocks(xb, np.arange(8.0), P("x"))  # devices 4..7, two elements each
    assert sorted(d.id for d in xb.devices()) == [4, 5, 6, 7]
    _check_blocks(xa, np.arange(8.0), P("x"))  # the source stays where it was
    assert sorted(d.id for d in xa.devices()) == [0, 1, 2, 3]


def test_reordered_mesh_moves_every_element(nb, meshes):
    full = meshes[0]
    (mesh_rev, x, y), printed = run_printing(nb.reorder_cell, full)
    assert _ids(mesh_rev) == list(range(7, -1, -1)) and mesh_rev != full
    # device d holds the element of the block its place in the mesh gives it
    want_x = [float(block_bounds((8,), full, P("x"), d)[0][0]) for d in range(8)]
    want_y = [float(block_bounds((8,), mesh_rev, P("x"), d)[0][0]) for d in range(8)]
    assert want_x == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and want_y == want_x[::-1]
    assert printed == f"{want_x}\n{want_y}\n"  # "device 0 held 0.0 before and holds 7.0 after"
    _check_blocks(x, np.arange(8.0), P("x"))
    _check_blocks(y, np.arange(8.0), P("x"))  # the same value
    with pytest.raises(ValueError, match=r"devices \[0, 1, 2, 3, 4, 5, 6, 7\].*devices \[7, 6, 5, 4, 3, 2, 1, 0\]"):
        x + y  # "combining them in one operation would be an error, exactly as above"


def test_device_put_to_another_mesh_inside_jit_is_an_error(nb, meshes):
    _, mesh_a, mesh_b = meshes[:3]
    xa = run_printing(nb.device_put_cell, mesh_a)[0]
    with pytest.raises(ValueError) as e:
        nb.jit_cross_mesh_cell(xa, mesh_b)
    msg = str(e.value)
    assert "devices [0, 1, 2, 3]" in msg and "devices [4, 5, 6, 7]" in msg
    assert "one mesh" in msg and "outside jit" in msg


def test_inside_jit_device_put_changes_the_layout_on_the_same_mesh(meshes):
    """The prose: under jax.jit "you can change an array's *layout* on the mesh" (device_put to the same mesh with
    another spec lays the result out as it says, as a sharding constraint)."""
    mesh_a = meshes[1]
    xa = kiln.device_put(np.arange(8.0), NamedSharding(mesh_a, P("x")))
    out = kiln.jit(lambda v: kiln.device_put(v * 2, NamedSharding(mesh_a, P())))(xa)
    assert out.sharding.mesh == mesh_a and out.sharding.is_fully_replicated
    _check_blocks(out, 2 * np.arange(8.0), P())
    with kiln.set_mesh(mesh_a):  # a PartitionSpec with the mesh in context, as in sharding.md
        back = kiln.jit(lambda v: kiln.device_put(v, P("x")))(out)
    _check_blocks(back, 2 * np.arange(8.0), P("x"))


def test_pipeline_runs_each_microbatch_through_the_four_stages(nb, meshes):
    full = meshes[0]
    (stage_meshes, results), printed = run_printing(nb.pipeline_cell, full)
    assert printed == "True\n"
    assert [_ids(m) for m in stage_meshes] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert len(results) == 8
    for i, r in enumerate(results):
        want = np.float64(i)
        for _ in stage_meshes:  # float64 NumPy: the four stages, sin(x) + 1 each
            want = np.sin(want) + 1.0
        assert r.dtype == np.float32 and r.committed and r.sharding.mesh == stage_meshes[-1]
        assert r.sharding.spec == P("x")
        for s in r.addressable_shards:  # rows 0..127 on device 6, 128..255 on device 7
            (rows, cols) = block_bounds((256, 256), stage_meshes[-1], P("x"), s.device.id)
            assert rows == ((0, 128) if s.device.id == 6 else (128, 256)) and cols == (0, 256)
            np.testing.assert_allclose(np.asarray(s.data), np.full((128, 256), want), rtol=1e-6)


# ------------------------------------------------ the notes ------------------------------------------------

def test_device_put_without_a_target(meshes):
    """"jax.device_put(x) with no target is (at most) a transfer to the default placement, and the result is
    uncommitted": so for host values and uncommitted arrays. A committed array is returned as it is (JAX 0.10.2
    does so too)."""
    host = kiln.device_put(np.arange(3.0))
    assert not host.committed and host.devices() == {kiln.devices()[0]}
    np.testing.assert_array_equal(np.asarray(host), np.arange(3.0))
    assert kiln.device_put(host) is host
    xa = kiln.device_put(np.arange(8.0), NamedSharding(meshes[1], P("x")))
    assert kiln.device_put(xa) is xa and xa.committed
    on1 = kiln.device_put(np.arange(3.0), kiln.devices()[1])
    assert kiln.device_put(on1) is on1 and on1.devices() == {kiln.devices()[1]}


def test_device_put_takes_donate(meshes):
    """"jax.device_put accepts donate=True to reuse the input's buffers when possible": the move happens;
    kiln reuses nothing, so the input stays valid (as JAX's on the CPU)."""
    _, mesh_a, mesh_b = meshes[:3]
    xa = kiln.device_put(np.arange(8.0), NamedSharding(mesh_a, P("x")))
    xb = kiln.device_put(xa, NamedSharding(mesh_b, P("x")), donate=True)
    _check_blocks(xb, np.arange(8.0), P("x"))
    assert sorted(d.id for d in xb.devices()) == [4, 5, 6, 7]
    assert not xa.is_deleted()
    with pytest.raises(ValueError, match="may_alias and donate cannot be True at the same time"):
        kiln.device_put(xa, NamedSharding(mesh_b, P("x")), donate=True, may_alias=True)


def test_np_asarray_copies_back_to_the_host(meshes):
    xa = kiln.device_put(np.arange(8.0), NamedSharding(meshes[1], P("x")))
    host = np.asarray(xa)
    assert type(host) is np.ndarray and host.dtype == np.float32
    np.testing.assert_array_equal(host, np.arange(8.0))
