"""kiln.numpy's creation functions take JAX's ``device=`` (a device or a sharding): the result is committed there,
eagerly and inside jit, with the values it has without it (it was accepted and ignored)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.sharding import NamedSharding, PartitionSpec

CALLS = {
    "zeros": (lambda d: knp.zeros((4, 2), device=d), np.zeros((4, 2), np.float32)),
    "ones": (lambda d: knp.ones(4, knp.int32, device=d), np.ones(4, np.int32)),
    "empty": (lambda d: knp.empty(4, device=d) * 0, np.zeros(4, np.float32)),
    "full": (lambda d: knp.full((4,), 2.5, device=d), np.full(4, 2.5, np.float32)),
    "zeros_like": (lambda d: knp.zeros_like(knp.arange(4.0), device=d), np.zeros(4, np.float32)),
    "ones_like": (lambda d: knp.ones_like(np.arange(4), device=d), np.ones(4, np.int32)),
    "full_like": (lambda d: knp.full_like(knp.arange(4), 7, device=d), np.full(4, 7, np.int32)),
    "empty_like": (lambda d: knp.empty_like(knp.arange(4.0), device=d) * 0, np.zeros(4, np.float32)),
    "arange": (lambda d: knp.arange(4, device=d), np.arange(4, dtype=np.int32)),
    "linspace": (lambda d: knp.linspace(0, 1, 4, device=d), np.linspace(0, 1, 4, dtype=np.float32)),
    "eye": (lambda d: knp.eye(4, 2, device=d), np.eye(4, 2, dtype=np.float32)),
    "array": (lambda d: knp.array([1.0, 2.0, 3.0, 4.0], device=d), np.arange(1.0, 5.0, dtype=np.float32)),
    "asarray": (lambda d: knp.asarray(np.arange(4.0), device=d), np.arange(4.0, dtype=np.float32)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_device_commits_the_result_there(name):
    make, want = CALLS[name]
    device = kiln.devices()[3]
    out = make(device)
    assert out.device == device and out.committed, name
    np.testing.assert_array_equal(out, want)
    free = make(None)
    assert free.device == kiln.devices()[0] and not free.committed
    np.testing.assert_array_equal(free, want)


@pytest.mark.parametrize("name", ["zeros", "full", "arange", "asarray"])
def test_device_takes_a_sharding(name, mesh):
    make, want = CALLS[name]
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    out = make(sharding)
    assert out.sharding == sharding
    np.testing.assert_array_equal(out, want)


def test_one_program_serves_every_device(primitive_runs):
    a = knp.zeros(3, device=kiln.devices()[1])
    b = knp.zeros(3, device=kiln.devices()[2])
    assert (a.device, b.device) == (kiln.devices()[1], kiln.devices()[2])
    assert primitive_runs == []
    np.testing.assert_array_equal(np.asarray(a) + np.asarray(b), np.zeros(3, np.float32))
