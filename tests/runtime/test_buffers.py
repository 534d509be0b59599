"""Host <-> device transfers, readback and buffer lifetime, with NumPy as the oracle."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from kiln import runtime

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128]


def _sample(dtype, shape) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    base = np.arange(n, dtype=np.float64) - (0 if dtype.kind == "u" else n // 2)
    if dtype.kind == "c":
        return (base + 1j * (base + 0.5)).astype(dtype).reshape(shape)
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        base = base * 0.25
    return base.astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (7,), (2, 3, 4)], ids=str)
def test_round_trip(cpu0, dtype, shape):
    x = _sample(dtype, shape)
    buf = runtime.put(x, cpu0)
    y = runtime.to_numpy(buf)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    assert runtime.buffer_device(buf) is cpu0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_non_contiguous(cpu0, dtype):
    x = _sample(dtype, (6, 8))[::2, 1::3].T
    assert not x.flags.c_contiguous
    y = runtime.to_numpy(runtime.put(x, cpu0))
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "int4", "uint4"])
def test_round_trip_narrow_ml_dtypes(cpu0, name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    x = np.array([[0, 1, 2], [3, 4, 5]], np.float32).astype(dtype)
    y = runtime.to_numpy(runtime.put(x, cpu0))
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))


def test_put_copies_host_memory(cpu0):
    # A 64-byte aligned array would be aliased with jaxlib's default ZERO_COPY semantics.
    for _ in range(8):
        x = np.zeros(1024, np.float32)
        buf = runtime.put(x, cpu0)
        x[:] = 7.0
        np.testing.assert_array_equal(runtime.to_numpy(buf), np.zeros(1024, np.float32))


def test_bf16_values(cpu0):
    x = np.array([1.5, -2.0, 3.140625, 0.0], ml_dtypes.bfloat16)
    y = runtime.to_numpy(runtime.put(x, cpu0))
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))


def test_put_non_native_byte_order(cpu0):
    x = np.arange(5, dtype=">f4")
    y = runtime.to_numpy(runtime.put(x, cpu0))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x)


def test_put_rejects_non_arrays(cpu0):
    with pytest.raises(TypeError, match="dtype object cannot be stored"):
        runtime.put(np.array([None]), cpu0)
    with pytest.raises(TypeError, match="numpy"):
        runtime.put(3.0, cpu0)
    with pytest.raises(TypeError, match="Device"):
        runtime.put(np.zeros(2), "cpu:0")


def test_readiness_and_nbytes(cpu0):
    buf = runtime.put(np.arange(10, dtype=np.int32), cpu0)
    runtime.block_until_ready(buf)
    assert runtime.is_ready(buf) is True
    assert runtime.nbytes(buf) == 40


def test_delete(cpu0):
    buf = runtime.put(np.ones(3, np.float32), cpu0)
    assert runtime.is_deleted(buf) is False
    runtime.delete(buf)
    assert runtime.is_deleted(buf) is True
    for fn in (runtime.to_numpy, runtime.is_ready, runtime.block_until_ready, runtime.nbytes):
        with pytest.raises(runtime.DeletedBufferError, match="Array has been deleted or donated"):
            fn(buf)
    with pytest.raises(runtime.DeletedBufferError):
        runtime.copy_to(buf, cpu0)


def test_delete_bf16(cpu0):
    buf = runtime.put(np.ones(3, ml_dtypes.bfloat16), cpu0)
    runtime.delete(buf)
    with pytest.raises(runtime.DeletedBufferError, match="deleted or donated"):
        runtime.to_numpy(buf)


def test_copy_to_same_device_is_identity(cpu0):
    buf = runtime.put(np.ones(3, np.float32), cpu0)
    assert runtime.copy_to(buf, cpu0) is buf


def test_readback_survives_delete(cpu0):
    # The zero-copy readback view must stay valid after the buffer is deleted.
    buf = runtime.put(np.arange(4, dtype=np.float32), cpu0)
    y = runtime.to_numpy(buf)
    runtime.delete(buf)
    np.testing.assert_array_equal(y, np.arange(4, dtype=np.float32))
