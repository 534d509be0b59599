"""Memory kinds over an 8-device mesh: every piece of an array placed in pinned host memory is there, a program
takes it from there and returns results in the memory its out_shardings name (tests/frontend/test_memory_kinds.py
covers one device and one-device meshes)."""
from __future__ import annotations

import numpy as np

import kiln
import kiln.numpy as knp
from kiln import runtime
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P


def test_pieces_programs_and_results_in_host_memory(mesh):
    host = NamedSharding(mesh, P("data", "model"), memory_kind="pinned_host")
    v = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = kiln.device_put(v, host)
    assert x.sharding == host and runtime.buffer_memory_kind(x._buf) == "pinned_host"
    assert {runtime.buffer_memory_kind(s.data._buf) for s in x.addressable_shards} == {"pinned_host"}
    assert {s.data.sharding.memory_kind for s in x.addressable_shards} == {"pinned_host"}
    to_device = kiln.jit(lambda u: u * 2, out_shardings=host.with_memory_kind("device"))
    y = to_device(x)
    assert runtime.buffer_memory_kind(y._buf) == "device" and y.sharding.memory_kind == "device"
    z = kiln.jit(lambda u: u + 1, out_shardings=host)(y)
    assert runtime.buffer_memory_kind(z._buf) == "pinned_host" and z.sharding == host
    np.testing.assert_array_equal(np.asarray(z), v * 2 + 1)
    assert float(knp.sum(x)) == float(kiln.jit(lambda u: u.sum())(x)) == v.sum()
    back = kiln.device_put(x, host.with_memory_kind("device"))
    assert runtime.buffer_memory_kind(back._buf) == "device"
    np.testing.assert_array_equal(np.asarray(back), v)
