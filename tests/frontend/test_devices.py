"""Placement: computation follows its inputs' devices.

Multi-device behaviour runs in a subprocess with ``KILN_NUM_CPU_DEVICES=2`` (the device count is fixed
when the CPU backend starts, so it cannot change inside this test process).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs in a fresh interpreter with two CPU devices; every check is an assert, and "OK" is printed at the end.
TWO_DEVICE_SCRIPT = r'''
import re
import numpy as np
import pytest
import kiln, kiln.numpy as knp

d0, d1 = kiln.devices()
assert kiln.device_count() == 2 and d0 != d1

# device_put commits; the value arrives intact
h = np.arange(6, dtype=np.float32)
x = kiln.device_put(h, d1)
assert x.device == d1 and x.committed and x.devices() == {d1}
np.testing.assert_array_equal(np.asarray(x), h)

# eager ops follow the committed input; uncommitted inputs (and NumPy values) follow it too
u = knp.ones(6)
assert u.device == d0 and not u.committed
for out in (x + 1, x * u, u - x, x[1:3], x.sum(), knp.tanh(x), h + x, x.reshape(2, 3).T):
    assert out.device == d1 and out.committed, out.device
np.testing.assert_array_equal(np.asarray(x * u), h)

# jit follows the committed input too, and retraces (new target) only once per device
traces = []
@kiln.jit
def f(a, b):
    traces.append(1)
    return a * 2 + b
r0 = f(u, u)
assert r0.device == d0 and not r0.committed
r1 = f(x, u)
assert r1.device == d1 and r1.committed
np.testing.assert_array_equal(np.asarray(r1), h * 2 + 1)
r1 = f(u, x)
assert r1.device == d1
assert len(traces) == 2, len(traces)
f(x, x)
assert len(traces) == 2

# jit(device=...) moves its arguments; results are committed there
g = kiln.jit(lambda a: a + 1, device=d1)
for arg in (h, u, kiln.device_put(h, d0)):
    out = g(arg)
    assert out.device == d1 and out.committed
    np.testing.assert_array_equal(np.asarray(out), np.asarray(arg) + 1)

# chained computations stay on the device
y = x
for _ in range(3):
    y = f(y, y)
assert y.device == d1

# committed to different devices: a clear error naming both devices, then everything still works
z = kiln.device_put(h, d0)
with pytest.raises(ValueError, match=r"committed to different devices: .* is on CpuDevice\(id=1\) and .* is on "
                                     r"CpuDevice\(id=0\).*kiln\.device_put"):
    x + z
with pytest.raises(ValueError, match=r"kiln\.jit\(f\): arguments are committed to different devices: a is on "
                                     r"CpuDevice\(id=1\) and b is on CpuDevice\(id=0\)"):
    f(x, z)
with pytest.raises(ValueError, match=r"b\['k'\] is on CpuDevice\(id=0\)"):
    kiln.jit(lambda a, b: a + b["k"])(x, {"k": z})
np.testing.assert_array_equal(np.asarray(f(x, u)), h * 2 + 1)
np.testing.assert_array_equal(np.asarray(f(z, u)), h * 2 + 1)
assert f(z, u).device == d0
np.testing.assert_array_equal(np.asarray(kiln.device_put(z, d1) + x), h * 2)

# moving back and forth
w = kiln.device_put(x, d0)
assert w.device == d0 and w.committed
np.testing.assert_array_equal(np.asarray(w), h)

# device index out of range names the count
with pytest.raises(kiln.DeviceError, match=r"Device index 2 is out of range for backend 'cpu', which has 2 "
                                           r"devices \(valid indices 0\.\.1\)"):
    kiln.runtime.local_device("cpu", 2)
print("OK")
'''


def _run_two_devices(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for k in ("KILN_PLATFORMS", "KILN_DEFAULT_BACKEND", "KILN_TEST_BACKEND"):
        env.pop(k, None)
    env.update(KILN_NUM_CPU_DEVICES="2", KILN_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def test_computation_follows_committed_inputs_on_two_devices():
    proc = _run_two_devices(TWO_DEVICE_SCRIPT)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


def test_single_device_placement():
    dev = kiln.devices()[0]
    assert kiln.device_count() == len(kiln.devices()) >= 1
    assert kiln.local_devices() == kiln.devices()
    assert kiln.default_backend() == dev.platform
    x = knp.arange(4)
    assert x.device == dev and not x.committed
    c = kiln.device_put(x, dev)
    assert c.committed and c.device == dev
    np.testing.assert_array_equal(np.asarray(c), np.arange(4))
    assert kiln.device_put(c, dev) is c  # already there and committed: no copy
    assert kiln.device_put(x) is x


def test_device_put_without_a_target_keeps_an_arrays_placement():
    """As JAX's: an array is returned as it is, committed or not (before, kiln moved a committed array to the
    default device and uncommitted it); host values go to the default device uncommitted."""
    dev = kiln.devices()[0]
    c = kiln.device_put(np.arange(3.0), dev)
    assert kiln.device_put(c) is c and c.committed
    tree = kiln.device_put({"c": c, "h": np.ones(2)})
    assert tree["c"] is c and not tree["h"].committed and tree["h"].device == dev


def test_device_put_donate_may_alias_and_src_as_jax():
    """JAX's keyword arguments (docs/new_docs/201/placement.md mentions donate=True): donation is best effort and kiln
    never reuses the buffer (the input stays valid, as JAX's on the CPU); may_alias=False gives buffers of their own;
    donate and may_alias together are JAX's ValueError."""
    dev = kiln.devices()[0]
    c = kiln.device_put(np.arange(3.0), dev)
    d = kiln.device_put(c, dev, donate=True, src=dev)
    assert not c.is_deleted() and d.committed
    np.testing.assert_array_equal(np.asarray(d), np.arange(3.0))
    assert kiln.device_put(c, dev, may_alias=True) is c
    fresh = kiln.device_put(c, dev, may_alias=False)
    assert fresh is not c and fresh.committed and fresh.device == dev and fresh.dtype == c.dtype
    c.delete()  # the copy keeps its value
    np.testing.assert_array_equal(np.asarray(fresh), np.arange(3.0))
    w = kiln.device_put(2.0, may_alias=False)  # a weak scalar stays weak
    assert w.weak_type and float(w) == 2.0
    with pytest.raises(ValueError, match="may_alias and donate cannot be True at the same time"):
        kiln.device_put(fresh, donate=True, may_alias=True)
    with pytest.raises(TypeError, match="kiln.device_put: donate must be a bool, got"):
        kiln.device_put(fresh, donate=[True])


def test_default_backend_setting_selects_devices():
    kiln.config.update("default_backend", "cpu")
    assert kiln.default_backend() == "cpu"
    assert kiln.devices() == kiln.devices("cpu") and kiln.device_count() == len(kiln.devices("cpu"))
    assert knp.ones(2).device.platform == "cpu"
    assert kiln.jit(lambda a: a + 1)(np.ones(2, np.float32)).device.platform == "cpu"


@pytest.mark.backend("cpu")
def test_device_repr_and_identity():
    dev = kiln.devices("cpu")[0]
    assert repr(dev) == "CpuDevice(id=0)"
    assert dev.platform == "cpu" and dev.id == 0
    assert kiln.devices("cpu")[0] is dev
    assert {dev: 1}[kiln.devices()[0]] == 1


def test_device_memory_stats_and_ids_as_jax():
    dev = kiln.devices()[0]
    stats = dev.memory_stats()  # None on the CPU (no allocator statistics), a dict of byte counts on a GPU
    assert stats is None if dev.platform == "cpu" else stats["bytes_in_use"] >= 0
    assert dev.host_id == dev.process_index == 0
    assert isinstance(dev.local_hardware_id, int) or dev.local_hardware_id is None
