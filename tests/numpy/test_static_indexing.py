"""Static basic indexing (Python ints and slices) lowers to ``stablehlo.slice`` (+ reshape), not to a
``dynamic_slice`` with constant starts: values against NumPy, derivatives against the NumPy scatter of
the cotangent, vmap against a Python loop, and the emitted StableHLO."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(3)
A = rng.standard_normal((3, 4, 5)).astype(np.float32)

# every index is static (ints, negative ints, slices with steps, None, ...)
STATIC = [
    (0,), (2,), (-1,), (-3,), (1, 2), (2, -1, 4), (-1, -4, -5), (2, slice(None), 1), (slice(1, 3),),
    (slice(None), 3), (Ellipsis, 2), (Ellipsis, -2), (None, 1), (1, None, 2), (slice(None, None, -1), 0),
    (0, slice(3, 0, -2), slice(None, None, 2)), (np.int32(1), np.int64(-2)), (slice(-2, None), -1, Ellipsis),
    (slice(0, 0), 1), (),
]


def _hlo(fn, *args) -> str:
    return kiln.jit(fn).lower(*args).as_text()


def test_static_int_indexing_emits_slice():
    x = np.arange(10.0, dtype=np.float32)
    for fn in [lambda x: x[3], lambda x: x[-2], lambda x: x[1:4], lambda x: x[9]]:
        text = _hlo(fn, x)
        assert "stablehlo.slice" in text and "dynamic_slice" not in text, text
    text = _hlo(lambda a: a[2, :, 1], A)
    assert "stablehlo.slice" in text and "dynamic_slice" not in text, text
    assert "tensor<1x4x1xf32>" in text  # one slice, then a reshape drops the integer-indexed axes


def test_traced_int_indexing_still_uses_dynamic_slice():
    text = _hlo(lambda a, i: a[i, 1], A, np.int32(2))
    assert "stablehlo.dynamic_slice" in text  # the traced index
    got = kiln.jit(lambda a, i: a[i, 1, -1])(A, np.int32(2))
    np.testing.assert_array_equal(np.asarray(got), A[2, 1, -1])


@pytest.mark.parametrize("idx", STATIC, ids=repr)
def test_static_index_values_match_numpy(idx):
    want = A[idx]
    eager, jitted = knp.asarray(A)[idx], kiln.jit(lambda a: a[idx])(A)
    for got in (eager, jitted):
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
    assert "dynamic_slice" not in _hlo(lambda a: a[idx], A)


def test_out_of_range_static_ints_clamp_as_before():
    # JAX's semantics (kiln's documented behaviour): out-of-range integers clamp; an empty axis raises
    x = np.arange(10, dtype=np.int32)
    assert int(knp.asarray(x)[11]) == 9 and int(knp.asarray(x)[-12]) == 0
    assert int(kiln.jit(lambda x: x[11])(x)) == 9 and int(kiln.jit(lambda x: x[-12])(x)) == 0
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        knp.zeros((0, 3))[0]
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 0"):
        kiln.jit(lambda a: a[:, -1])(np.zeros((2, 0)))


@pytest.mark.parametrize("idx", [(1,), (-1, 2), (2, slice(None), 1), (slice(None, None, -1), -2, slice(1, 4, 2)),
                                 (None, 0, Ellipsis, 3)], ids=repr)
def test_static_index_gradients(idx):
    """grad of sum(w * x[idx]) is w scattered into zeros at idx; jvp is the tangent indexed the same way."""
    w = rng.standard_normal(A[idx].shape).astype(np.float32)
    want = np.zeros_like(A)
    want[idx] += w  # basic indexing is a view: each element is picked at most once
    for f in (lambda x: knp.sum(x[idx] * w), kiln.jit(lambda x: knp.sum(x[idx] * w))):
        np.testing.assert_array_equal(np.asarray(kiln.grad(f)(A)), want)
    t = rng.standard_normal(A.shape).astype(np.float32)
    primal, tangent = kiln.jvp(lambda x: x[idx], (A,), (t,))
    np.testing.assert_array_equal(np.asarray(primal), A[idx])
    np.testing.assert_array_equal(np.asarray(tangent), t[idx])


@pytest.mark.parametrize("idx", [(1,), (-1, 2), (slice(None), -3), (Ellipsis, 0), (slice(3, None, -2), None, 1)],
                         ids=repr)
def test_static_index_under_vmap(idx):
    xs = rng.standard_normal((6, 4, 5)).astype(np.float32)
    got = kiln.vmap(lambda x: x[idx])(xs)
    np.testing.assert_array_equal(np.asarray(got), np.stack([x[idx] for x in xs]))
    got = kiln.vmap(lambda x: x[idx], in_axes=1, out_axes=-1)(np.moveaxis(xs, 0, 1))
    np.testing.assert_array_equal(np.asarray(got), np.stack([x[idx] for x in xs], -1))
