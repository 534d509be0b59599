"""kiln.debug.inspect_array_sharding (jax.debug.inspect_array_sharding): the callback gets an array's sharding
eagerly, the one device's when a jitted function is lowered for one device, and the layout XLA's partitioner
chose for the value when it is compiled for a mesh (read back from the partitioner, not from kiln's inputs)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax
from kiln.sharding import NamedSharding, SingleDeviceSharding
from kiln.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def mesh():
    return kiln.make_mesh((4, 2), ("x", "y"))


def test_eager_arrays_report_their_own_sharding(mesh):
    seen = []
    a = kiln.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    b = kiln.device_put(np.ones(3, np.float32), kiln.devices()[2])
    kiln.debug.inspect_array_sharding({"a": a, "b": b}, callback=seen.append)
    assert seen == [a.sharding, b.sharding]
    assert seen[1] == SingleDeviceSharding(kiln.devices()[2])


def test_eager_vmap_and_grad_see_the_values(mesh):
    seen = []

    def f(v):
        kiln.debug.inspect_array_sharding(v, callback=seen.append)
        return knp.sum(v * v)

    x = kiln.device_put(np.arange(4.0, dtype=np.float32), kiln.devices()[1])
    g = kiln.grad(f)(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.arange(4.0))
    assert seen and all(s == SingleDeviceSharding(kiln.devices()[1]) for s in seen)
    seen.clear()
    kiln.vmap(f)(knp.ones((3, 4)))
    assert len(seen) == 1  # once, on the batched value (as JAX's)


def test_jit_on_one_device_reports_when_lowered():
    seen = []

    def f(v):
        kiln.debug.inspect_array_sharding(v * 2, callback=seen.append)
        return v + 1

    jf = kiln.jit(f)
    lowered = jf.lower(knp.ones(4))
    assert seen == [SingleDeviceSharding(kiln.devices()[0])]
    assert "InspectSharding" not in lowered.as_text()  # nothing for the partitioner to report
    np.testing.assert_allclose(np.asarray(jf(knp.ones(4))), 2.0)


def test_partitioned_value_reports_the_partitioners_layout(mesh):
    seen = []

    def f(v, w):
        h = knp.sin(v)  # laid out as v (rows over x)
        kiln.debug.inspect_array_sharding(h, callback=seen.append)
        s = h @ w  # (8, 6) @ (6, 2): rows over x
        kiln.debug.inspect_array_sharding(s, callback=seen.append)
        t = knp.sum(s, axis=0)  # reduced over the rows: replicated
        kiln.debug.inspect_array_sharding(t, callback=seen.append)
        return t

    v = np.arange(48.0, dtype=np.float32).reshape(8, 6) / 48
    w = np.ones((6, 2), np.float32)
    jf = kiln.jit(f, in_shardings=(NamedSharding(mesh, P("x", "y")), NamedSharding(mesh, P())))
    lowered = jf.lower(v, w)
    assert seen == [] and lowered.as_text().count("InspectSharding") == 3  # reported when compiled
    compiled = lowered.compile()
    assert seen == [NamedSharding(mesh, P("x", "y")), NamedSharding(mesh, P("x")), NamedSharding(mesh, P())]
    np.testing.assert_allclose(np.asarray(compiled(v, w)), (np.sin(v) @ w).sum(0), rtol=1e-5)
    # compiled once: calling it again reports nothing new
    compiled(v, w)
    assert len(seen) == 3


def test_a_sharding_constraint_is_what_the_partitioner_reports(mesh):
    seen = []

    def f(v):
        u = lax.with_sharding_constraint(v * 3, NamedSharding(mesh, P(None, "x")))
        kiln.debug.inspect_array_sharding(u, callback=seen.append)
        return u.sum()

    out = kiln.jit(f, in_shardings=NamedSharding(mesh, P("x")))(np.ones((4, 8), np.float32))
    assert float(out) == 96.0
    assert seen == [NamedSharding(mesh, P(None, "x"))]


def test_inside_shard_map_the_blocks_are_manual(mesh):
    seen = []

    def body(b):
        kiln.debug.inspect_array_sharding(b, callback=seen.append)
        return b * 2

    f = kiln.jit(kiln.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    np.testing.assert_allclose(np.asarray(f(np.arange(8.0, dtype=np.float32))), 2 * np.arange(8.0))
    assert seen == [NamedSharding(mesh, P())]


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="inspect_array_sharding: the first argument must be callable"):
        kiln.debug.inspect_array_sharding(knp.ones(2), callback=3)
    with pytest.raises(TypeError, match="inspect_array_sharding: expected kiln arrays, got a ndarray; put it on "
                                        r"a device first \(kiln.device_put\)"):
        kiln.debug.inspect_array_sharding(np.ones(2), callback=print)


def test_a_layout_no_spec_describes_is_a_clear_error():
    mesh1 = kiln.make_mesh((8,), ("d",))

    def f(v):
        kiln.debug.inspect_array_sharding(v.reshape(2, 8), callback=print)  # "d" split over both dimensions
        return v

    jf = kiln.jit(f, in_shardings=NamedSharding(mesh1, P("d")))
    with pytest.raises(NotImplementedError, match=r"inspect_array_sharding: the partitioner laid the value out "
                                                  r"as \{devices=\[2,4\]<=\[8\]\}, which no PartitionSpec"):
        jf.lower(np.arange(16.0, dtype=np.float32)).compile()
    # nothing poisoned: the function without the inspection compiles and runs
    assert kiln.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh1, P("d")))(np.ones(16, np.float32)).sum() == 32
