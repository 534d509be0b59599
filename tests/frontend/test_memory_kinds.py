"""Memory kinds (JAX's host offloading building blocks): shardings name a memory (``memory_kind='pinned_host'``),
``device_put`` places arrays there (checked on the runtime's buffers, not only on the label), one-device
computations read them from device memory, and a program over a mesh takes and returns arrays in the memories
its in/out shardings name (``mhlo.memory_kind``, ``annotate_device_placement``), as JAX's host-offloading
notebook uses them. NumPy is the oracle for the values."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import runtime
from kiln.ad_checkpoint import checkpoint_name
from kiln.sharding import NamedSharding, SingleDeviceSharding
from kiln.sharding import PartitionSpec as P

DEV = kiln.devices()[0]


def _kind(x) -> str:
    """Where the runtime holds the array's buffer (not what its sharding says)."""
    return runtime.buffer_memory_kind(x._buf)


def test_shardings_name_a_memory():
    host = SingleDeviceSharding(DEV, memory_kind="pinned_host")
    assert host.memory_kind == "pinned_host" and SingleDeviceSharding(DEV).memory_kind == "device"
    assert SingleDeviceSharding(DEV, memory_kind="device") == SingleDeviceSharding(DEV)
    assert host != SingleDeviceSharding(DEV) and hash(host) != hash(SingleDeviceSharding(DEV))
    assert repr(host) == f"SingleDeviceSharding(device={DEV!r}, memory_kind=pinned_host)"
    assert host.with_memory_kind("device") == SingleDeviceSharding(DEV)
    mesh = kiln.make_mesh((1, 1), ("x", "y"))
    named = NamedSharding(mesh, P("x", "y"), memory_kind="device")
    assert named.with_memory_kind("pinned_host") == NamedSharding(mesh, P("x", "y"), memory_kind="pinned_host")
    assert "memory_kind=pinned_host" in repr(named.with_memory_kind("pinned_host"))


def test_unknown_memory_kinds_are_clear_errors():
    with pytest.raises(ValueError, match=r"SingleDeviceSharding: CpuDevice\(id=0\) has no memory of kind 'hbm'; its "
                                         "memory kinds are device, pinned_host, unpinned_host"):
        SingleDeviceSharding(DEV, memory_kind="hbm")
    with pytest.raises(ValueError, match="NamedSharding: CpuDevice"):
        NamedSharding(kiln.make_mesh((1,), ("x",)), P(), memory_kind="hbm")
    with pytest.raises(TypeError, match="memory_kind must be a string such as 'device' or 'pinned_host', got 3"):
        SingleDeviceSharding(DEV, memory_kind=3)
    with pytest.raises(ValueError, match="has no memory of kind 'hbm'"):
        DEV.memory("hbm")
    with pytest.raises(ValueError, match="Space.Any names no memory to place an array in"):
        kiln.device_put(knp.ones(2), kiln.memory.Space.Any)


def test_devices_list_their_memories():
    kinds = [m.kind for m in DEV.addressable_memories()]
    assert kinds[0] == "device" and {"pinned_host", "unpinned_host"} <= set(kinds)
    assert DEV.default_memory().kind == "device"
    pinned = DEV.memory("pinned_host")
    assert pinned.kind == "pinned_host" and DEV in pinned.addressable_by_devices()
    assert str(pinned).startswith("PinnedHostMemory(")


@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host"])
def test_device_put_places_arrays_in_host_memory_and_back(kind):
    value = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    host = kiln.device_put(value, SingleDeviceSharding(DEV, memory_kind=kind))
    assert _kind(host) == kind and host.sharding.memory_kind == kind and host.committed
    np.testing.assert_array_equal(np.asarray(host), value)
    moved = kiln.device_put(knp.asarray(value), SingleDeviceSharding(DEV, memory_kind=kind))  # device to host
    assert _kind(moved) == kind
    back = kiln.device_put(host, DEV)
    assert _kind(back) == "device" and back.sharding == SingleDeviceSharding(DEV)
    np.testing.assert_array_equal(np.asarray(back), value)
    assert _kind(kiln.device_put(host, SingleDeviceSharding(DEV))) == "device"


def test_memory_space_placement():
    x = knp.arange(4.0)
    host = kiln.device_put(x, kiln.memory.Space.Host)
    assert _kind(host) == "pinned_host" and host.sharding.device_set == x.sharding.device_set
    assert _kind(kiln.device_put(host, kiln.memory.Space.Device)) == "device"
    assert _kind(kiln.device_put(np.ones(3, np.float32), kiln.memory.Space.Host)) == "pinned_host"
    assert repr(kiln.memory.Space.Host) == "MemorySpace.Host"


def test_computations_read_host_arrays_from_device_memory():
    value = np.linspace(-1, 1, 8, dtype=np.float32)
    host = kiln.device_put(value, kiln.memory.Space.Host)
    f = kiln.jit(lambda v: knp.cos(v) + v)
    for _ in range(3):  # (the first call compiles; later ones take the fast paths where they may)
        eager = knp.sin(host) * 2
        jitted = f(host)
        np.testing.assert_allclose(np.asarray(eager), np.sin(value) * 2, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jitted), np.cos(value) + value, rtol=1e-6)
        assert _kind(eager) == _kind(jitted) == "device"
    assert _kind(host) == "pinned_host"  # the argument stays where it was


def test_a_program_over_a_mesh_takes_and_returns_arrays_in_their_memories():
    mesh = kiln.make_mesh((1, 1), ("x", "y"))
    s_dev = NamedSharding(mesh, P("x", "y"), memory_kind="device")
    s_host = s_dev.with_memory_kind("pinned_host")
    arr = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    arr_host, arr_dev = kiln.device_put(arr, s_host), kiln.device_put(arr, s_dev)
    assert _kind(arr_host) == "pinned_host" and _kind(arr_dev) == "device"

    to_dev = kiln.jit(lambda v: v + 1, out_shardings=s_dev)
    out = to_dev(arr_host)
    assert _kind(out) == "device" and out.sharding.memory_kind == "device"
    np.testing.assert_array_equal(np.asarray(out), arr + 1)
    assert 'mhlo.memory_kind = "pinned_host"' in to_dev.lower(arr_host).as_text()  # the argument stays in host memory

    to_host = kiln.jit(lambda v: v * 2, out_shardings=s_host)
    lowered = to_host.lower(arr_dev)
    assert "annotate_device_placement" in lowered.as_text() and '_xla_buffer_placement = "pinned_host"' in \
        lowered.as_text()
    for _ in range(2):
        out = to_host(arr_dev)
        assert _kind(out) == "pinned_host" and out.sharding == s_host
        np.testing.assert_array_equal(np.asarray(out), arr * 2)


def test_host_offloading_notebook_gradients():
    """JAX's host-offloading notebook (smaller): parameters in host memory, moved to the device inside the scanned
    layer, activations named for an offload policy; the gradient is the one of the same program without offloading,
    and the forward value NumPy's."""
    mesh = kiln.make_mesh((1, 1), ("x", "y"))
    s_dev = NamedSharding(mesh, P("x", "y"))
    s_host = s_dev.with_memory_kind("pinned_host")
    policy = kiln.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["x"], offload_src="device",
        offload_dst="pinned_host")

    def layer(x, w):
        w1, w2 = kiln.tree.map(lambda a: kiln.device_put(a, s_dev), w)
        x = checkpoint_name(x, "x")
        return (x @ w1) @ w2, None

    def scanned(w, x):
        return knp.sum(kiln.lax.scan(kiln.remat(layer, policy=policy, prevent_cse=False), x, w)[0])

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4), dtype=np.float32)
    w1 = rng.standard_normal((3, 4, 8), dtype=np.float32) / 4
    w2 = rng.standard_normal((3, 8, 4), dtype=np.float32) / 4
    ref = x
    for i in range(3):
        ref = ref @ w1[i] @ w2[i]
    wh = (kiln.device_put(w1, s_host), kiln.device_put(w2, s_host))
    value, grads = kiln.jit(kiln.value_and_grad(scanned))(wh, x)
    np.testing.assert_allclose(float(value), ref.sum(), rtol=1e-5)
    _, plain = kiln.jit(kiln.value_and_grad(scanned))((knp.asarray(w1), knp.asarray(w2)), x)
    for g, p in zip(grads, plain):
        np.testing.assert_allclose(np.asarray(g), np.asarray(p), rtol=1e-5, atol=1e-6)
