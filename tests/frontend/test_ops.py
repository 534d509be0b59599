"""kiln.ops' segment reductions against NumPy (np.add.at and friends), eager, jitted, differentiated and
batched."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import ops

RNG = np.random.RandomState(0)


def _reference(op, data, ids, num):
    ufunc, init = {"sum": (np.add, 0), "prod": (np.multiply, 1)}.get(op, (None, None))
    if op in ("max", "min"):
        ufunc = np.maximum if op == "max" else np.minimum
        if data.dtype.kind == "f":
            init = -np.inf if op == "max" else np.inf
        else:
            info = np.iinfo(data.dtype)
            init = info.min if op == "max" else info.max
    out = np.full((num,) + data.shape[1:], init, data.dtype)
    ok = (ids >= 0) & (ids < num)
    ufunc.at(out, ids[ok], data[ok])
    return out


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_segments_against_numpy(op, dtype):
    fn = getattr(ops, f"segment_{op}")
    data = (RNG.randn(7, 3) * 3).astype(dtype)
    ids = np.array([0, 2, 2, -1, 4, 0, 9], np.int32)  # -1 and 9 are out of range: dropped
    expected = _reference(op, data, ids, 5)
    got = fn(data, ids, 5)
    assert got.dtype == dtype and got.shape == (5, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(fn, static_argnums=2)(data, ids, 5), expected, rtol=1e-6)
    sorted_ids = np.sort(ids[(ids >= 0) & (ids < 5)])
    np.testing.assert_allclose(fn(data[:len(sorted_ids)], sorted_ids, 5, indices_are_sorted=True),
                               _reference(op, data[:len(sorted_ids)], sorted_ids, 5), rtol=1e-6)


def test_num_segments_default_buckets_and_transformations():
    data = RNG.randn(10).astype(np.float32)
    ids = np.array([0, 1] * 5)
    np.testing.assert_allclose(ops.segment_sum(data, ids), [data[0::2].sum(), data[1::2].sum()], rtol=1e-6)
    np.testing.assert_allclose(ops.segment_sum(data, ids, bucket_size=3), [data[0::2].sum(), data[1::2].sum()],
                               rtol=1e-6)
    np.testing.assert_allclose(ops.segment_prod(data, ids, 2, bucket_size=4), [data[0::2].prod(), data[1::2].prod()],
                               rtol=1e-5)
    g = kiln.grad(lambda d: ops.segment_max(d, np.array([0, 0, 1]), 2).sum())(np.array([1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 1, 1])
    g = kiln.grad(lambda d: (ops.segment_sum(d, np.array([1, 0, 1]), 2) * np.array([2.0, 5.0])).sum())(np.ones(3))
    np.testing.assert_array_equal(g, [5, 2, 5])
    batched = kiln.vmap(lambda d: ops.segment_sum(d, np.array([0, 1, 1]), 2))(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(batched, [[0, 3], [3, 9]])
    assert ops.segment_max(np.ones(0, np.float32), np.zeros(0, np.int32), 2).tolist() == [-np.inf, -np.inf]


def test_segment_errors():
    with pytest.raises(TypeError, match=r"kiln.ops.segment_sum: segment_ids must be integers, got float32"):
        ops.segment_sum(np.ones(3), np.ones(3, np.float32), 2)
    with pytest.raises(ValueError, match=r"segment_ids must be 1-D with one id per row of data"):
        ops.segment_sum(np.ones(3), np.zeros(2, np.int32), 2)
    with pytest.raises(ValueError, match=r"kiln.ops.segment_min: num_segments must be non-negative, got -1"):
        ops.segment_min(np.ones(2), np.zeros(2, np.int32), -1)
    with pytest.raises(TypeError, match=r"num_segments must be given when segment_ids is traced"):
        kiln.jit(lambda d, s: ops.segment_sum(d, s))(np.ones(2), np.zeros(2, np.int32))
    with pytest.raises(TypeError, match=r"bool data cannot be summed"):
        ops.segment_sum(np.ones(2, bool), np.zeros(2, np.int32), 1)
    with pytest.raises(ValueError, match=r"bucket_size must be a positive int, got 0"):
        ops.segment_sum(np.ones(2), np.zeros(2, np.int32), 1, bucket_size=0)
    with pytest.raises(TypeError, match=r"num_segments must be a Python int, got float"):
        ops.segment_sum(np.ones(2), np.zeros(2, np.int32), 1.5)
    with pytest.raises(TypeError, match=r"segment_max: complex64 data has no ordering"):
        ops.segment_max(knp.ones(2, np.complex64), np.zeros(2, np.int32), 1)


@pytest.mark.parametrize("bucket_size", [None, 2])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_negative_ids_are_out_of_range_in_every_mode(op, bucket_size):
    """A negative id never counts from the end: dropped by default ('drop', 'fill'), clamped to 0 by 'clip'."""
    data, ids = np.arange(1.0, 6.0, dtype=np.float32), np.array([-1, 0, 2, 3, -4])
    f = getattr(ops, f"segment_{op}")
    for mode in (None, "drop", "fill"):
        np.testing.assert_array_equal(f(data, ids, 3, mode=mode, bucket_size=bucket_size),
                                      _reference(op, data, ids, 3))
    np.testing.assert_array_equal(kiln.jit(lambda d, i: f(d, i, 3, mode="clip", bucket_size=bucket_size))(data, ids),
                                  _reference(op, data, np.clip(ids, 0, 2), 3))
