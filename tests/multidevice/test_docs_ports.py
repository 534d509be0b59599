"""Regressions found by running JAX's documentation pages under ``import kiln as jax`` (multi-device ones).

The placement guide (docs/new_docs/201/placement.md) puts Python scalars on one-device meshes; their
values must keep the scalar's shape when read back."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P


def test_scalar_on_one_device_mesh_keeps_its_shape():
    m1 = kiln.make_mesh((1,), ("x",), devices=kiln.devices()[1:2])
    a = kiln.device_put(1.5, NamedSharding(m1, P()))
    assert a.shape == ()
    host = np.asarray(a)
    assert host.shape == () and host == np.float32(1.5)
    assert kiln.device_get(a).shape == ()
    assert [s.data.shape for s in a.addressable_shards] == [()]
    assert np.asarray(a + 1.0).shape == ()
    assert float(a) == 1.5


def test_scalar_gathered_from_a_mesh_to_one_device_keeps_its_shape():
    mesh = kiln.make_mesh((8,), ("x",))
    a = kiln.device_put(np.float32(3.0), NamedSharding(mesh, P()))
    b = kiln.device_put(a, kiln.devices()[2])
    assert b.shape == () and np.asarray(b).shape == ()
    assert np.asarray(b) == np.float32(3.0)
    # and as an argument of a one-device computation (moved to its device through the host)
    c = kiln.device_put(np.float32(1.0), kiln.devices()[0])
    out = kiln.jit(lambda u, v: u + v)(a, c)
    assert np.asarray(out).shape == () and np.asarray(out) == np.float32(4.0)


def test_non_contiguous_host_array_on_one_device_mesh():
    m1 = kiln.make_mesh((1,), ("x",), devices=kiln.devices()[:1])
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4).T  # Fortran-ordered view
    a = kiln.device_put(host, NamedSharding(m1, P()))
    np.testing.assert_array_equal(np.asarray(a), host)


def test_partition_spec_under_use_abstract_mesh_names_its_axes():
    # docs/new_docs/201/sharding.md: inside jit, `use_abstract_mesh(AbstractMesh((8,), ('A',)))` views the
    # (4, 2) mesh in context as one axis 'A' over the same devices, and `reshard(x, P('A', None))` uses it.
    mesh = kiln.make_mesh((4, 2), ("X", "Y"))
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    abstract = kiln.sharding.AbstractMesh((8,), ("A",))

    def f(x):
        with kiln.sharding.use_abstract_mesh(abstract):
            return kiln.reshard(x, P("A", None)) * 2

    with kiln.set_mesh(mesh):
        x = kiln.device_put(host, P("X", "Y"))
        z = kiln.jit(f)(x)
        np.testing.assert_array_equal(np.asarray(z), host * 2)
        assert z.sharding.mesh.axis_names == ("A",)
        assert list(z.sharding.mesh.devices.flat) == list(mesh.devices.flat)
        assert z.sharding.spec[0] == "A"
        # outside jit too (a device_put)
        with kiln.sharding.use_abstract_mesh(abstract):
            w = kiln.reshard(x, P("A", None))
        assert w.sharding.mesh.axis_names == ("A",)
        assert [s.data.shape for s in w.addressable_shards] == [(1, 4)] * 8
        np.testing.assert_array_equal(np.asarray(w), host)
        # the concrete mesh's axes are not visible while another abstract mesh is in context
        with kiln.sharding.use_abstract_mesh(abstract):
            with pytest.raises(ValueError, match="names mesh axis 'X', which the mesh does not have"):
                kiln.reshard(x, P("X", None))


def test_host_callback_result_over_a_mesh():
    # docs/new_docs/201/callbacks.md: a pure_callback on a sharded argument under jit gets the whole array once;
    # the partitioner leaves its result on the first device ({maximal device=0}), which kiln lays out replicated.
    calls = []

    def host_fn(x):
        calls.append(np.shape(x))
        return np.asarray(x) * 2

    def f(x):
        return kiln.pure_callback(host_fn, kiln.ShapeDtypeStruct(x.shape, x.dtype), x)

    mesh = kiln.make_mesh((8,), ("i",))
    host = np.arange(8.0, dtype=np.float32)
    with kiln.set_mesh(mesh):
        x = kiln.device_put(host, P("i"))
        out = kiln.jit(f)(x)
        np.testing.assert_array_equal(np.asarray(out), host * 2)
        assert calls == [(8,)]
        assert out.sharding.mesh == mesh and out.sharding.is_fully_replicated
        # usable with other arrays of the mesh, and with a given out_sharding as the user asked
        both = kiln.jit(lambda a, b: (f(a), a + b))(x, x)
        np.testing.assert_array_equal(np.asarray(both[0]), host * 2)
        np.testing.assert_array_equal(np.asarray(both[1]), host * 2)
        np.testing.assert_array_equal(np.asarray(out + x), host * 3)
        split = kiln.jit(f, out_shardings=NamedSharding(mesh, P("i")))(x)
        assert split.sharding.spec == P("i")
        np.testing.assert_array_equal(np.asarray(split), host * 2)
        assert kiln.jit(f).lower(x).compile().output_shardings.is_fully_replicated


def test_partition_spec_unreduced_and_reduced_axes_are_refused_by_name():
    # docs/new_docs/301/sharding-ad.md writes P(None, None, unreduced={'X'}): kiln has no unreduced/reduced axes
    assert P("x", unreduced=frozenset(), reduced=set()) is P("x")
    assert P("x").unreduced == frozenset() and P("x").reduced == frozenset()
    with pytest.raises(NotImplementedError, match=r"PartitionSpec: unreduced=\{'X'\}, reduced=\{\}: kiln has no "
                                                  r"unreduced or reduced axes"):
        P(None, None, unreduced={"X"})
    with pytest.raises(NotImplementedError, match=r"unreduced=\{\}, reduced=\{'X'\}"):
        P(reduced={"X"})
