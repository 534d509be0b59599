"""kiln.sharding on 8 devices: meshes, partition specs, layouts (against NumPy slicing), device_put to a
NamedSharding, shards, gathering (issue 15)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

P = PartitionSpec


def test_partition_spec_is_interned_and_canonical():
    assert P("x") is P("x") and P(("x",)) is P("x") and P(["x", "y"]) is P(("x", "y"))
    assert P(()) is P(None) and P("x") is not P("x", None)
    assert kiln.P is PartitionSpec
    assert repr(P("a", None, ("b", "c"))) == "P('a', None, ('b', 'c'))" and repr(P()) == "P()"
    assert len(P("a", None)) == 2 and P("a", None)[1] is None and list(P("a", "b")) == ["a", "b"]
    assert P("a") + ("b",) is P("a", "b") and ("z",) + P("a") is P("z", "a")
    assert P("a", None).index(None) == 1 and P("a", "a").count("a") == 2


def test_make_mesh_and_mesh():
    mesh = kiln.make_mesh((4, 2), ("data", "model"))
    assert mesh.shape == {"data": 4, "model": 2} and mesh.axis_names == ("data", "model") and mesh.size == 8
    assert [d.id for d in mesh.devices.flat] == [d.id for d in kiln.devices()]
    assert mesh.devices.shape == (4, 2) and mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert mesh == Mesh(np.array(kiln.devices()).reshape(4, 2), ("data", "model"))
    assert str(mesh) == "Mesh('data': 4, 'model': 2, axis_types=(Auto, Auto))"
    # JAX's repr (docs/new_docs/201/placement.md displays a mesh): sizes and names as the constructor takes them
    assert repr(mesh) == "Mesh(axis_sizes=(4, 2), axis_names=('data', 'model'), axis_types=(Auto, Auto))"
    assert repr(NamedSharding(mesh, P("data"))).startswith("NamedSharding(mesh=Mesh('data': 4, 'model': 2, ")
    with mesh as m:
        assert m is mesh and kiln.sharding.get_mesh() is mesh
    assert kiln.sharding.get_mesh() is None


@pytest.mark.parametrize("spec", [P(), P("a"), P("a", "b"), P("b", "a"), P(None, "b"), P(("a", "b")),
                                  P(("b", "a"), None), P(None, ("a", "b"))])
def test_devices_indices_map_cuts_the_array_like_numpy(spec):
    """Each device's slice, and the pieces a device_put leaves there, against NumPy slicing; every element is
    held by mesh-size / pieces devices."""
    mesh = kiln.make_mesh((4, 2), ("a", "b"))
    sharding = NamedSharding(mesh, spec)
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    indices = sharding.devices_indices_map(x.shape)
    counts = np.zeros(x.shape, int)
    for idx in indices.values():
        counts[idx] += 1
    pieces = int(np.prod([8 // sharding.shard_shape(x.shape)[0], 16 // sharding.shard_shape(x.shape)[1]]))
    assert (counts == 8 // pieces).all()
    arr = kiln.device_put(x, sharding)
    assert arr.sharding is sharding and arr.committed and arr.shape == x.shape and arr.dtype == np.float32
    assert arr.is_fully_replicated == (pieces == 1) and arr.devices() == set(kiln.devices())
    shards = arr.addressable_shards
    assert [s.device for s in shards] == list(mesh.devices.flat)
    for s in shards:
        assert s.index == indices[s.device] and s.data.device == s.device
        np.testing.assert_array_equal(np.asarray(s.data), x[s.index])
    replica_ids = {}
    for s in shards:
        replica_ids.setdefault(str(s.index), []).append(s.replica_id)
    assert all(sorted(r) == list(range(len(r))) for r in replica_ids.values())
    np.testing.assert_array_equal(np.asarray(arr), x)
    np.testing.assert_array_equal(kiln.device_get(arr), x)
    assert str(arr) == str(x) and repr(arr).startswith("Array([[  0.,   1.,")


def test_hlo_sharding_matches_xla_tile_order():
    from kiln.frontend.driver.sharding import hlo_sharding_string
    mesh = kiln.make_mesh((4, 2), ("a", "b"))
    assert hlo_sharding_string(NamedSharding(mesh, P()), 2) == "{replicated}"
    assert hlo_sharding_string(NamedSharding(mesh, P("a", "b")), 2) == "{devices=[4,2]0,1,2,3,4,5,6,7}"
    assert hlo_sharding_string(NamedSharding(mesh, P("b", "a")), 2) == "{devices=[2,4]0,2,4,6,1,3,5,7}"
    assert (hlo_sharding_string(NamedSharding(mesh, P(None, "b")), 2)
            == "{devices=[1,2,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}")


def test_one_device_array_and_shardings():
    x = knp.arange(6.0)
    assert x.sharding == SingleDeviceSharding(kiln.devices()[0]) and x.device == kiln.devices()[0]
    (shard,) = x.addressable_shards
    assert shard.index == (slice(None),) and shard.replica_id == 0 and shard.data is x
    on3 = kiln.device_put(np.arange(4), SingleDeviceSharding(kiln.devices()[3]))
    assert on3.device == kiln.devices()[3] and on3.committed


def test_device_of_a_sharded_array_is_its_sharding_and_gathering_back():
    mesh = kiln.make_mesh((8,), ("i",))
    s = NamedSharding(mesh, P("i"))
    x = kiln.device_put(knp.arange(16.0), s)
    assert x.device is s
    y = kiln.device_put(x, kiln.devices()[5])
    assert y.device == kiln.devices()[5] and y.sharding == SingleDeviceSharding(kiln.devices()[5])
    np.testing.assert_array_equal(np.asarray(y + 1), np.arange(16.0) + 1)
    assert kiln.device_put(x, s) is x
    z = kiln.device_put({"a": np.ones((8, 2)), "b": 3.0}, NamedSharding(mesh, P()))
    assert z["a"].is_fully_replicated and z["b"].shape == ()


def test_one_device_mesh_works_unchanged():
    mesh = kiln.make_mesh((1,), ("i",), devices=kiln.devices()[2:3])
    x = kiln.device_put(np.arange(4.0), NamedSharding(mesh, P("i")))
    assert x.sharding.mesh is mesh and x.device == kiln.devices()[2]
    np.testing.assert_array_equal(np.asarray(kiln.jit(lambda v: v * 2)(x)), np.arange(4.0) * 2)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: kiln.make_mesh((4, 4), ("a", "b")), ValueError, r"needs 16 devices but only 8 are available"),
    (lambda m: kiln.make_mesh((0,), ("a",)), ValueError, "axis_shapes must be positive integers"),
    (lambda m: Mesh(np.array(kiln.devices()), ("a", "b")), ValueError, r"1 dimensions \(8,\) but 2 axis names"),
    (lambda m: Mesh(np.array(kiln.devices()).reshape(2, 4), ("a", "a")), ValueError, "axis names must be distinct"),
    (lambda m: Mesh(np.array([kiln.devices()[0]] * 2), ("a",)), ValueError, "appears more than once"),
    (lambda m: Mesh(np.arange(2), ("a",)), TypeError, "devices must be kiln devices"),
    (lambda m: NamedSharding(m, P("q")), ValueError, r"names mesh axis 'q', which the mesh does not have"),
    (lambda m: NamedSharding(m, P("a", "a")), ValueError, "uses mesh axis 'a' more than once"),
    (lambda m: NamedSharding(m, "a"), TypeError, "spec must be a kiln.sharding.PartitionSpec"),
    (lambda m: P(1), TypeError, "a dimension's entry must be None, a mesh axis name"),
    (lambda m: kiln.device_put(np.arange(6.0), NamedSharding(m, P("a"))), ValueError,
     r"splits dimension 0 of shape \(6,\) into 4 pieces, which does not divide its size 6"),
    (lambda m: kiln.device_put(np.float32(1), NamedSharding(m, P("a"))), ValueError,
     r"applies to arrays of rank 1 or more; this array has rank 0 \(for a scalar the spec must be P\(\)\)"),
    (lambda m: kiln.device_put(np.ones(3), 7), TypeError, "must be a kiln device .*, a kiln.sharding Sharding"),
])
def test_errors(call, error, message):
    mesh = kiln.make_mesh((4, 2), ("a", "b"))
    with pytest.raises(error, match=message):
        call(mesh)


def test_processes_and_making_arrays_from_pieces():
    assert kiln.process_index() == 0 and kiln.process_count() == 1 and kiln.process_indices() == [0]
    mesh = kiln.make_mesh((4, 2), ("a", "b"))
    s = NamedSharding(mesh, P("a", "b"))
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    seen = []

    def piece(index):
        seen.append(index)
        return x[index]
    a = kiln.make_array_from_callback(x.shape, s, piece)
    assert len(seen) == 8 and a.sharding == s
    np.testing.assert_array_equal(np.asarray(a), x)
    pieces = [kiln.device_put(x[s.devices_indices_map(x.shape)[d]], d) for d in mesh.devices.flat]
    b = kiln.make_array_from_single_device_arrays(x.shape, s, pieces)
    np.testing.assert_array_equal(np.asarray(b), x)
    c = kiln.make_array_from_process_local_data(s, x)
    assert c.sharding == s
    np.testing.assert_array_equal(np.asarray(c), x)
    with pytest.raises(ValueError, match=r"the piece for .* has shape \(1, 3\), but .* a piece of shape \(2, 3\)"):
        kiln.make_array_from_callback(x.shape, s, lambda idx: x[:1, :3])
    with pytest.raises(ValueError, match="7 arrays for the 8 devices"):
        kiln.make_array_from_single_device_arrays(x.shape, s, pieces[:7])
    with pytest.raises(ValueError, match=r"the array for .*id=0.* is on .*id=1"):
        kiln.make_array_from_single_device_arrays(x.shape, s, pieces[1:2] + pieces[1:])
    with pytest.raises(ValueError, match=r"belong to this process, so the local data is the whole array"):
        kiln.make_array_from_process_local_data(s, x[:4], global_shape=(8, 6))


def test_process_local_data_takes_pytrees_and_partition_specs(mesh):
    # JAX's training cookbook: make_array_from_process_local_data(P('data'), {'ids': ..., 'mask': ...})
    batch = {"ids": np.arange(32, dtype=np.int32).reshape(8, 4), "mask": np.ones((8,), np.bool_)}
    with kiln.set_mesh(mesh):
        out = kiln.make_array_from_process_local_data(PartitionSpec("data"), batch)
        assert set(out) == {"ids", "mask"}
        for k in batch:
            assert out[k].sharding.spec == PartitionSpec("data")
            np.testing.assert_array_equal(np.asarray(out[k]), batch[k])
        # a prefix pytree of shardings (one per leaf here) and of global shapes
        specs = {"ids": PartitionSpec("data", "model"), "mask": NamedSharding(mesh, PartitionSpec())}
        out = kiln.make_array_from_process_local_data(specs, batch, {"ids": (8, 4), "mask": None})
        assert out["ids"].sharding.spec == PartitionSpec("data", "model")
        assert out["mask"].sharding.spec == PartitionSpec()
        with pytest.raises(ValueError, match="sharding must be one value or a pytree prefix of local_data"):
            kiln.make_array_from_process_local_data([PartitionSpec("data")], batch)
    with pytest.raises(ValueError, match=r"a PartitionSpec \(P\('data',\)\) needs a mesh in context"):
        kiln.make_array_from_process_local_data(PartitionSpec("data"), batch["ids"])
