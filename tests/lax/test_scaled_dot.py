"""Block-scaled products: kiln.lax.scaled_dot and kiln.nn.scaled_matmul against NumPy on the dequantized
operands (ml_dtypes gives the float8 values)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax, nn


def _mx(shape, block, seed):
    """float8_e4m3fn data and float8_e8m0fnu scales (powers of two) with one scale per ``block`` of the last axis."""
    r = np.random.default_rng(seed)
    data = r.normal(size=shape).astype(ml_dtypes.float8_e4m3fn)
    scales = (2.0 ** r.integers(-3, 4, size=shape[:-1] + (shape[-1] // block,))).astype(ml_dtypes.float8_e8m0fnu)
    return data, scales


def _dequantized(data, scales, dtype):
    block = data.shape[-1] // scales.shape[-1]
    return data.astype(dtype) * np.repeat(scales.astype(dtype), block, axis=-1)


@pytest.mark.parametrize("block", [1, 4, 32])
def test_scaled_matmul_is_the_dot_of_the_dequantized_operands(block):
    a, sa = _mx((2, 3, 32), block, 0)
    b, sb = _mx((2, 5, 32), block, 1)
    want = np.einsum("bmk,bnk->bmn", _dequantized(a, sa, np.float32), _dequantized(b, sb, np.float32))
    for fn in (nn.scaled_matmul, kiln.jit(nn.scaled_matmul)):
        got = fn(a, b, sa, sb)
        assert got.dtype == np.float32 and got.shape == (2, 3, 5)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # JAX's documented example, in float32 with float32 scales.
    x = knp.array([1.0, 2, 3]).reshape((1, 1, 3))
    y = knp.array([4.0, 5, 6]).reshape((1, 1, 3))
    s = knp.array([0.5]).reshape((1, 1, 1))
    np.testing.assert_array_equal(np.asarray(nn.scaled_matmul(x, y, s, s)), [[[8.0]]])
    got = nn.scaled_matmul(a, b, sa, sb, preferred_element_type=knp.bfloat16)
    assert got.dtype == knp.bfloat16


def test_scaled_dot_default_and_explicit_dimension_numbers():
    a, sa = _mx((2, 4, 64), 32, 2)
    b, sb = _mx((2, 6, 64), 32, 3)
    want = np.einsum("bmk,bnk->bmn", _dequantized(a, sa, np.float32), _dequantized(b, sb, np.float32))
    dn = (((2,), (2,)), ((0,), (0,)))
    got = lax.scaled_dot(a, b, lhs_scale=sa, rhs_scale=sb, dimension_numbers=dn, preferred_element_type=np.float32)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-2)  # the operands are scaled in bfloat16, as JAX
    assert lax.scaled_dot(a, b, lhs_scale=sa, rhs_scale=sb, dimension_numbers=dn).dtype == knp.bfloat16
    # Default dimension numbers: contract lhs's last with rhs's second-to-last, batch the leading ones.
    bt, sbt = np.swapaxes(b, 1, 2), np.swapaxes(sb, 1, 2)
    got = kiln.jit(lambda *v: lax.scaled_dot(v[0], v[1], lhs_scale=v[2], rhs_scale=v[3]))(a, bt, sa, np.asarray(sbt))
    assert got.shape == (2, 4, 6)
    np.testing.assert_allclose(np.asarray(got).astype(np.float32), want, rtol=2e-2, atol=1e-2)
    # Without scales it is a bfloat16 dot.
    np.testing.assert_allclose(np.asarray(lax.scaled_dot(a, bt, preferred_element_type=np.float32)),
                               np.einsum("bmk,bkn->bmn", a.astype(np.float32), bt.astype(np.float32)), rtol=2e-2)


@pytest.mark.parametrize("call, message", [
    (lambda: nn.scaled_matmul(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1)), np.ones((2, 1))), "must be 3-D"),
    (lambda: nn.scaled_matmul(np.ones((1, 2, 4)), np.ones((1, 2, 8)), np.ones((1, 2, 1)), np.ones((1, 2, 1))),
     "must share the batch"),
    (lambda: nn.scaled_matmul(np.ones((1, 2, 4)), np.ones((1, 2, 4)), np.ones((1, 3, 1)), np.ones((1, 2, 1))),
     "must match the operands' batch and non-contracting dimensions"),
    (lambda: nn.scaled_matmul(np.ones((1, 2, 6)), np.ones((1, 2, 6)), np.ones((1, 2, 4)), np.ones((1, 2, 4))),
     r"contracting dimension 2 of the operand \(6\) is not a multiple of the scale's \(4\)"),
    (lambda: lax.scaled_dot(np.ones(4), np.ones(4)), "0-d and 1-d operands need explicit dimension_numbers"),
])
def test_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_scaled_matmul_differentiates_in_float32():
    r = np.random.default_rng(4)
    a, b = r.random((1, 2, 8), np.float32), r.random((1, 3, 8), np.float32)
    sa, sb = np.ones((1, 2, 2), np.float32), np.full((1, 3, 2), 2.0, np.float32)
    g = kiln.grad(lambda x: nn.scaled_matmul(x, b, sa, sb).sum())(a)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to((2 * b).sum(1, keepdims=True), a.shape), rtol=1e-6)
