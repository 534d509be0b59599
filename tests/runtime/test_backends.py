"""Backends, devices, default-backend selection and their errors."""
from __future__ import annotations

import pickle

import pytest

from kiln import runtime


def test_cpu_always_available():
    names = runtime.available_backends()
    assert "cpu" in names
    assert runtime.default_backend() == names[0]
    backend = runtime.get_backend("cpu")
    assert backend.platform == "cpu"
    assert backend._client.platform == "cpu"


def test_device_attributes(cpu0):
    assert cpu0.platform == "cpu"
    assert cpu0.id == 0
    assert isinstance(cpu0.device_kind, str) and cpu0.device_kind
    assert cpu0.process_index == 0
    assert cpu0.backend is runtime.get_backend("cpu")
    assert cpu0._raw.id == 0
    assert repr(cpu0) == "CpuDevice(id=0)"


def test_devices_are_interned_and_hashable(cpu0):
    assert runtime.devices("cpu")[0] is cpu0
    assert runtime.local_device(None if runtime.default_backend() == "cpu" else "cpu", 0) is cpu0
    assert {cpu0: 1}[runtime.devices("cpu")[0]] == 1
    assert cpu0 == runtime.devices("cpu")[0] and cpu0 != "cpu:0"
    assert pickle.loads(pickle.dumps(cpu0)) is cpu0
    # devices() returns a fresh list: callers cannot corrupt the backend's list
    runtime.devices("cpu").clear()
    assert len(runtime.devices("cpu")) >= 1


def test_unknown_backend():
    with pytest.raises(runtime.BackendError, match=r"Unknown backend 'tpux'\. Available backends: .*cpu"):
        runtime.get_backend("tpux")
    with pytest.raises(ValueError):  # BackendError is also a ValueError
        runtime.devices("tpux")


@pytest.mark.parametrize("name", ["cuda", "gpu", "rocm", "tpu"])
def test_unavailable_backend(name):
    if name in runtime.available_backends() or (name == "gpu" and {"cuda", "rocm"} & set(
            runtime.available_backends())):
        pytest.skip(f"{name} is available here")
    with pytest.raises(runtime.BackendError, match=rf"'{name}' is not available.*Available backends: .*cpu"):
        runtime.get_backend(name)


def test_device_index_out_of_range():
    n = len(runtime.devices("cpu"))
    with pytest.raises(runtime.DeviceError, match=rf"index {n + 3} is out of range for backend 'cpu', "
                                                   rf"which has {n} device"):
        runtime.local_device("cpu", n + 3)
    with pytest.raises(runtime.DeviceError, match="out of range"):
        runtime.local_device("cpu", -1)
    with pytest.raises(runtime.DeviceError, match="must be an int"):
        runtime.local_device("cpu", "0")


def test_set_default_backend():
    original = runtime.default_backend()
    try:
        runtime.set_default_backend("cpu")
        assert runtime.default_backend() == "cpu"
        assert runtime.get_backend() is runtime.get_backend("cpu")
        with pytest.raises(runtime.BackendError, match="Unknown backend 'nope'"):
            runtime.set_default_backend("nope")
        assert runtime.default_backend() == "cpu"
    finally:
        runtime.set_default_backend(None)
    assert runtime.default_backend() == original


def test_jaxlib_version():
    import jaxlib.version

    assert runtime.jaxlib_version() == jaxlib.version.__version__


def test_two_cpu_devices_subprocess(run_py):
    run_py("""
        import numpy as np
        from kiln import runtime
        d0, d1 = runtime.devices()
        assert (repr(d0), repr(d1)) == ("CpuDevice(id=0)", "CpuDevice(id=1)")
        assert runtime.local_device("cpu", 1) is d1 and d0 != d1 and hash(d0) != hash(d1)
        x = np.arange(12, dtype=np.float64).reshape(3, 4)
        b1 = runtime.put(x, d1)
        assert runtime.buffer_device(b1) is d1
        np.testing.assert_array_equal(runtime.to_numpy(b1), x)
        b0 = runtime.copy_to(b1, d0)
        assert runtime.buffer_device(b0) is d0 and runtime.buffer_device(b1) is d1
        np.testing.assert_array_equal(runtime.to_numpy(b0), x)
        try:
            runtime.local_device("cpu", 2)
        except runtime.DeviceError as e:
            assert "which has 2 devices" in str(e), e
        else:
            raise AssertionError("no DeviceError")
        print("ok")
    """, env={"KILN_NUM_CPU_DEVICES": "2"})


def test_bad_cpu_device_count_subprocess(run_py):
    proc = run_py("""
        from kiln import runtime
        for _ in range(2):  # the same clear error on every use, not a half-initialised state
            try:
                runtime.available_backends()
            except runtime.BackendError as e:
                print(e)
    """, env={"KILN_NUM_CPU_DEVICES": "zero"})
    assert proc.stdout.count("KILN_NUM_CPU_DEVICES='zero' is not a positive integer") == 2


def test_cpu_device_count_from_xla_flags_and_config(run_py):
    # As JAX: XLA_FLAGS' --xla_force_host_platform_device_count, and jax_num_cpu_devices before the backends start
    proc = run_py("""
        import kiln
        print(len(kiln.devices()), str(kiln.devices()[2]), repr(kiln.devices()[2]))
    """, env={"XLA_FLAGS": "--xla_dump_to=/tmp/nowhere --xla_force_host_platform_device_count=3"})
    assert proc.stdout.strip() == "3 cpu:2 CpuDevice(id=2)"
    proc = run_py("""
        import kiln
        kiln.config.update("jax_num_cpu_devices", 5)
        print(len(kiln.devices()), kiln.config.num_cpu_devices)
        kiln.config.update("jax_num_cpu_devices", 5)  # unchanged: fine
        try:
            kiln.config.update("jax_num_cpu_devices", 2)
        except ValueError as e:
            print(e)
    """, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=3"})
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "5 5"
    assert "num_cpu_devices can be set only before the backends start" in lines[1]
    proc = run_py("""
        import kiln
        try:
            kiln.config.update("num_cpu_devices", 0)
        except ValueError as e:
            print(e)
    """)
    assert "num_cpu_devices=0 is not a positive integer" in proc.stdout
    proc = run_py("""
        from kiln import runtime
        try:
            runtime.available_backends()
        except runtime.BackendError as e:
            print(e)
    """, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=x"})
    assert "--xla_force_host_platform_device_count (XLA_FLAGS)='x' is not a positive integer" in proc.stdout


def test_platform_name_before_num_cpu_devices(run_py):
    # JAX's training cookbook sets jax_platform_name, then jax_num_cpu_devices: naming the platform must not
    # start the backends. An unknown name fails when they start; the count they already have is no change.
    proc = run_py("""
        import kiln
        kiln.config.update("jax_platform_name", "cpu")
        kiln.config.update("jax_num_cpu_devices", 4)
        print(kiln.device_count(), kiln.devices()[0].platform)
        kiln.config.update("jax_platform_name", "cpu")
    """)
    assert proc.stdout.strip() == "4 cpu"
    proc = run_py("""
        import kiln
        kiln.config.update("jax_platform_name", "nowhere")
        try:
            kiln.numpy.ones(3)
        except kiln.runtime.BackendError as e:
            print(e)
        try:
            kiln.config.update("jax_platform_name", "nowhere")
        except kiln.runtime.BackendError as e:
            print(e)
    """, env={"KILN_PLATFORMS": "cpu"})
    assert proc.stdout.strip().splitlines() == ["Unknown backend 'nowhere'. Available backends: cpu"] * 2
    proc = run_py("""
        import kiln
        print(kiln.device_count())
        kiln.config.update("jax_num_cpu_devices", 3)  # what the backend has (from XLA_FLAGS): fine
        print(kiln.config.num_cpu_devices)
        kiln.config.update("jax_num_cpu_devices", -1)  # back to the default (from XLA_FLAGS: 3 again): fine
        print(kiln.config.num_cpu_devices)
        kiln.config.update("jax_num_cpu_devices", 3)
        try:
            kiln.config.update("jax_num_cpu_devices", 2)
        except ValueError as e:
            print(type(e).__name__)
    """, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=3"})
    assert proc.stdout.split() == ["3", "3", "-1", "ConfigError"]


def test_kiln_platforms_subprocess(run_py):
    proc = run_py("""
        from kiln import runtime
        print(runtime.available_backends(), runtime.default_backend())
    """, env={"KILN_PLATFORMS": "cpu"})
    assert proc.stdout.strip() == "['cpu'] cpu"
    proc = run_py("""
        from kiln import runtime
        try:
            runtime.available_backends()
        except runtime.BackendError as e:
            print("BackendError:", e)
    """, env={"KILN_PLATFORMS": "cuda,cpu"})
    assert "BackendError: KILN_PLATFORMS requests 'cuda'" in proc.stdout
