"""The kiln.lax functions of issue 14 outside the FFT family: shape helpers, ``full``/``empty``, ``dtype``,
``mulhi``, ``scatter_sub``, ``approx_max_k``/``approx_min_k``, the convolution helpers, the general
``reduce`` and ``reduce_xor``, ``reduce_precision``, ``optimization_barrier``, ``rng_bit_generator``;
against NumPy (and loops written here), eager and under jit, with grad and vmap where they apply."""
from __future__ import annotations

import numpy as np
import pytest
from ml_dtypes import bfloat16

import kiln
import kiln.numpy as jnp
from kiln import lax, lowering

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(a, b, tol=1e-5):
    a = np.asarray(a)
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# -- shape helpers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("jit", [False, True])
def test_shape_helpers(jit):
    x = _f32(1, 3, 1, 4)

    def all_of(x):
        return dict(
            squeeze=lax.squeeze(x, (0, -2)), expand=lax.expand_dims(x[0, :, 0], (0, 2, -1)),
            tile=lax.tile(x[0], (2, 1, 3)),
            split=lax.split(x, (1, 2), axis=1), stack=lax.stack([x[0, 0], x[0, 1], x[0, 2]], axis=1),
            unstack=lax.unstack(x, 1), collapse=lax.collapse(x, 1, 3), collapse_end=lax.collapse(x, 1),
            like=lax.broadcast_like(x[0, 0, 0], x), rank=lax.broadcast_to_rank(x[0, 0, 0], 3),
            full=lax.full((2, 3), 1.5), full_int=lax.full((2,), np.int8(3)), empty=lax.empty((2, 2), np.int32))
    out = (kiln.jit(all_of) if jit else all_of)(x)
    _close(out["squeeze"], x.reshape(3, 4))
    _close(out["expand"], np.expand_dims(x[0, :, 0], (0, 2, 4)))
    _close(out["tile"], np.tile(x[0], (2, 1, 3)))
    assert [np.shape(p) for p in out["split"]] == [(1, 1, 1, 4), (1, 2, 1, 4)]
    _close(out["split"][1], x[:, 1:])
    _close(out["stack"], np.stack([x[0, 0], x[0, 1], x[0, 2]], axis=1))
    assert len(out["unstack"]) == 3
    _close(out["unstack"][2], x[:, 2])
    _close(out["collapse"], x.reshape(1, 3, 4))
    _close(out["collapse_end"], x.reshape(1, 12))
    _close(out["like"], np.broadcast_to(x[0, 0, 0], x.shape))
    _close(out["rank"], x[0, 0, 0].reshape(1, 1, 4))
    _close(out["full"], np.full((2, 3), 1.5, np.float32))
    assert out["full"].dtype == np.float32 and out["full_int"].dtype == np.int8
    assert out["empty"].shape == (2, 2) and out["empty"].dtype == np.int32


# -- implicit broadcasting of elementwise operands (JAX's lax: rank-0 operands, axes of size 1) ----------------

_BCAST_CASES = [  # (x shape, y shape, result shape)
    ((3, 4), (), (3, 4)), ((), (3, 4), (3, 4)), ((3, 4), (1, 4), (3, 4)), ((3, 1), (1, 4), (3, 4)),
    ((1, 1), (2, 5), (2, 5)), ((2, 1, 3), (2, 4, 1), (2, 4, 3)),
]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("xs,ys,out", _BCAST_CASES)
def test_binary_ops_broadcast_rank0_and_size1(xs, ys, out, jit):
    x, y = _f32(*xs), np.abs(_f32(*ys)) + 0.5
    for name, ref in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
                      ("max", np.maximum), ("atan2", np.arctan2), ("lt", np.less), ("nextafter", np.nextafter)):
        fn = getattr(lax, name)
        got = (kiln.jit(fn) if jit else fn)(x, y)
        assert got.shape == out
        # div and atan2 within an ulp: XLA divides by a broadcast value as a product with its reciprocal
        tol = 2.5e-7 if name in ("div", "atan2") else 0
        np.testing.assert_allclose(np.asarray(got), ref(x, y), rtol=tol, atol=0, err_msg=name)
    _close(lax.igamma(y, np.abs(x) + 0.1), _scipy_gammainc(y, np.abs(x) + 0.1))


def _scipy_gammainc(a, x):
    from scipy import special
    return special.gammainc(a, x).astype(np.float32)


def test_broadcast_operands_in_the_ir_grad_and_vmap():
    x, y = _f32(3, 4), _f32(1, 4)
    printed = str(kiln.make_jaxpr(lax.mul)(x, y))
    assert "broadcast_in_dim[broadcast_dimensions=(0, 1)]" in printed and "mul" in printed
    # The size-1 operand's cotangent is summed over the broadcast axis; a rank-0 operand's over all of them.
    _close(kiln.grad(lambda b: lax.mul(x, b).sum())(y), x.sum(0, keepdims=True))
    _close(kiln.grad(lambda s: lax.mul(x, s).sum())(np.float32(2)), x.sum())
    # vmap of an operand against a rank-0 array: the array stays unbatched and broadcasts to each row.
    _close(kiln.vmap(lambda r: lax.sub(r, np.float32(1.5)))(x), x - np.float32(1.5))
    _close(kiln.vmap(lax.add, in_axes=(0, None))(x, y[0]), x + y[0])


def test_operands_that_do_not_broadcast_name_both_shapes():
    with pytest.raises(kiln.ShapeError, match=r"kiln\.lax\.add: operand shapes \(3, 4\) and \(4,\) do not broadcast"):
        lax.add(_f32(3, 4), _f32(4))
    with pytest.raises(kiln.ShapeError, match=r"kiln\.lax\.sub: operand shapes \(3, 4\) and \(2, 4\) do not "
                                              r"broadcast"):
        kiln.jit(lax.sub)(_f32(3, 4), _f32(2, 4))
    with pytest.raises(TypeError, match=r"kiln\.lax\.add: operands must have the same dtype, got float32 and int32"):
        lax.add(_f32(3, 4), np.ones((), np.int32))


def test_full_dtype_and_weak_type():
    assert lax.full((2,), 1.0).weak_type and not lax.full((2,), 1.0, np.float32).weak_type
    assert lax.full((), 3, jnp.bfloat16).dtype == bfloat16
    assert lax.broadcast_shapes((2, 1), (3,), (1, 1, 1)) == (1, 2, 3)
    assert lax.broadcast_shapes(4) == (4,)


def test_dtype():
    assert lax.dtype(1.0) == np.float32 and lax.dtype(1) == np.int32 and lax.dtype(True) == np.bool_
    assert lax.dtype(1j) == np.complex64 and lax.dtype(np.zeros(3)) == np.float32
    assert lax.dtype("int64") == np.int32 and lax.dtype(jnp.ones(2, jnp.bfloat16)) == bfloat16
    kiln.config.update("enable_x64", True)
    assert lax.dtype(np.zeros(3)) == np.float64 and lax.dtype(1) == np.int64


def test_grad_and_vmap_of_shape_helpers():
    x = _f32(3, 4)
    g = kiln.grad(lambda x: jnp.sum(lax.tile(x, (2, 3)) * jnp.arange(72.0).reshape(6, 12)))(x)
    w = np.arange(72.0).reshape(6, 12)
    _close(g, sum(w[i * 3:(i + 1) * 3, j * 4:(j + 1) * 4] for i in range(2) for j in range(3)))
    g = kiln.grad(lambda x: jnp.sum(lax.stack(lax.unstack(x, 1)[::-1], 0) ** 2))(x)
    _close(g, 2 * x)
    out = kiln.vmap(lambda r: lax.split(lax.expand_dims(r, (0,)), (1, 2), 1)[1], in_axes=1)(x)
    _close(out, np.stack([x[1:, i][None] for i in range(4)]))


# -- mulhi, scatter_sub, approx top-k --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64])
def test_mulhi(dtype):
    if np.dtype(dtype).itemsize == 8:
        kiln.config.update("enable_x64", True)
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    a[:4], b[:4] = [info.min, info.max, 0, info.max], [info.min, info.max, info.min, info.min]
    bits = 8 * np.dtype(dtype).itemsize
    expected = np.array([(int(x) * int(y)) >> bits for x, y in zip(a, b)], dtype=dtype)
    out = kiln.jit(lax.mulhi)(a, b)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_mulhi_of_32_bits_is_one_product_in_64_bits_under_vmap_and_eagerly():
    """Integers of up to 32 bits: one primitive, emitted as a double-width product (without x64: XLA has the type)."""
    a = RNG.integers(0, 2**32, (3, 8), dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2**32, (3, 8), dtype=np.uint64).astype(np.uint32)
    expected = np.array([[(int(x) * int(y)) >> 32 for x, y in zip(r, s)] for r, s in zip(a, b)], np.uint32)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(jnp.asarray(a), jnp.asarray(b))), expected)
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lax.mulhi, in_axes=(1, 1), out_axes=1)(a, b)), expected)
    text = kiln.jit(lax.mulhi).lower(a, b).as_text()
    assert text.count("stablehlo.multiply") == 1 and "tensor<3x8xui64>" in text, text
    assert kiln.grad(lambda x: jnp.sum(lax.mulhi(jnp.int32(7), jnp.int32(9)) * x))(2.0) == 0.0  # (a constant)


def test_scatter_sub():
    x = _f32(5, 3)
    idx = np.array([[1], [3], [1]], np.int32)
    upd = _f32(3, 3)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    expected = x.copy()
    np.subtract.at(expected, idx[:, 0], upd)
    _close(lax.scatter_sub(x, idx, upd, dn), expected)
    g = kiln.grad(lambda u: jnp.sum(lax.scatter_sub(x, idx, u, dn) ** 2))(upd)
    _close(g, -2 * expected[idx[:, 0]], tol=1e-4)


def test_approx_k_are_exact():
    x = _f32(4, 6)
    v, i = lax.approx_max_k(x, 3)
    _close(v, -np.sort(-x, axis=1)[:, :3])
    np.testing.assert_array_equal(np.asarray(i), np.argsort(-x, axis=1, kind="stable")[:, :3])
    v, i = kiln.jit(lambda x: lax.approx_min_k(x, 2, reduction_dimension=0))(x)
    _close(v, np.sort(x, axis=0)[:2])
    np.testing.assert_array_equal(np.asarray(i), np.argsort(x, axis=0, kind="stable")[:2])
    g = kiln.grad(lambda x: jnp.sum(lax.approx_max_k(x, 2)[0]))(x)
    mask = np.zeros_like(x)
    np.put_along_axis(mask, np.argsort(-x, axis=1)[:, :2], 1.0, axis=1)
    _close(g, mask)


# -- convolution helpers ----------------------------------------------------------------------------

def _np_conv_nhwc(x, w, pads, lhs_dilation=(1, 1)):
    """Stride-1 correlation of a dilated, padded NHWC input with an HWIO kernel (the oracle)."""
    n, h, wd, c = x.shape
    dh, dw = lhs_dilation
    xd = np.zeros((n, (h - 1) * dh + 1, (wd - 1) * dw + 1, c))
    xd[:, ::dh, ::dw] = x
    (l0, h0), (l1, h1) = pads
    xp = np.pad(xd, ((0, 0), (max(l0, 0), max(h0, 0)), (max(l1, 0), max(h1, 0)), (0, 0)))
    xp = xp[:, max(-l0, 0):xp.shape[1] - max(-h0, 0), max(-l1, 0):xp.shape[2] - max(-h1, 0)]
    kh, kw = w.shape[:2]
    out = np.zeros((n, xp.shape[1] - kh + 1, xp.shape[2] - kw + 1, w.shape[3]))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = np.einsum("nhwc,hwco->no", xp[:, i:i + kh, j:j + kw], w)
    return out


def test_conv_transpose():
    x, w = _f32(2, 5, 4, 3), _f32(3, 2, 3, 4)
    outs = kiln.jit(lambda x, w: (lax.conv_transpose(x, w, (2, 3), "SAME"), lax.conv_transpose(x, w, (2, 3), "VALID"),
                                  lax.conv_transpose(x, w, (2, 3), ((1, 2), (0, 1))),
                                  lax.conv_transpose(x, w.transpose(0, 1, 3, 2), (2, 3), "VALID",
                                                     transpose_kernel=True)))(x, w)
    # SAME: output length in * stride; VALID: in * stride + max(k - stride, 0)
    assert outs[0].shape == (2, 10, 12, 4) and outs[1].shape == (2, 11, 12, 4)
    _close(outs[0], _np_conv_nhwc(x, w, ((2, 1), (1, 2)), (2, 3)), 1e-4)
    _close(outs[1], _np_conv_nhwc(x, w, ((2, 2), (1, 2)), (2, 3)), 1e-4)
    _close(outs[2], _np_conv_nhwc(x, w, ((1, 2), (0, 1)), (2, 3)), 1e-4)
    _close(outs[3], _np_conv_nhwc(x, w[::-1, ::-1], ((2, 2), (1, 2)), (2, 3)), 1e-4)


def test_conv_patches_and_local():
    x = _f32(2, 3, 5, 4)  # NCHW
    patches = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
    expected = np.zeros((2, 18, 4, 2))
    for i in range(4):
        for j in range(2):
            expected[:, :, i, j] = x[:, :, i:i + 2, j:j + 3].reshape(2, -1)
    _close(patches, expected)
    rhs = _f32(18, 4, 2, 7)
    out = kiln.jit(lambda x, r: lax.conv_general_dilated_local(x, r, (1, 1), "VALID", (2, 3),
                                                               dimension_numbers=("NCHW", "IHWO", "NCHW")))(x, rhs)
    _close(out, np.einsum("nfhw,fhwo->nohw", expected, rhs), 1e-4)


def test_conv_shape_helpers():
    assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME") == (2, 4, 5, 8)
    assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), ((1, 0), (0, 2)), 2) == (1, 4, 4, 9)
    dn = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), "VALID", dn) == (2, 4, 7, 4)
    assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), "SAME", dn) == (2, 18, 24, 4)
    assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), ((1, 2), (0, 1)), dn) == (2, 18, 22, 4)
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NCHW")) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3))
    assert lax.reduce_window_shape_tuple((5, 7), (2, 3), (1, 2), ((1, 0), (0, 1)), (2, 1), (1, 2)) == (9, 2)


# -- reduce, reduce_xor, reduce_precision, optimization_barrier, rng_bit_generator -------------------

def test_general_reduce():
    x = _f32(3, 5)
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), (3, 5))

    def argmax(a, b):
        take_a = a[0] >= b[0]
        return lax.max(a[0], b[0]), lax.select(take_a, a[1], b[1])

    def all_of(x):
        return (lax.reduce(x, 0.0, lax.add, (0,)),  # a monoid: reduce_sum
                lax.reduce(x, 1.0, lambda a, b: a * b * 1.0, (0, 1)),
                lax.reduce((x, idx), (-np.inf, 0), argmax, (1,)),
                lax.reduce({"s": x, "m": x}, {"s": 0.0, "m": -np.inf},
                           lambda a, b: {"s": a["s"] + b["s"], "m": lax.max(a["m"], b["m"])}, (1,)))
    for out in (all_of(x), kiln.jit(all_of)(x)):
        _close(out[0], x.sum(0))
        _close(out[1], x.prod(), 1e-4)
        _close(out[2][0], x.max(1))
        np.testing.assert_array_equal(np.asarray(out[2][1]), x.argmax(1))
        _close(out[3]["s"], x.sum(1))
        _close(out[3]["m"], x.max(1))
    ir = str(kiln.make_ir(lambda x: lax.reduce(x, 0.0, lax.add, (0,)))(x))
    assert "reduce_sum" in ir
    # derivatives (forward through a tree of the computation, so reverse mode works too)
    g = kiln.grad(lambda x: jnp.sum(lax.reduce(x, 1.0, lambda a, b: a * b * 1.0, (1,))))(x)
    _close(g, np.stack([[np.prod(np.delete(r, j)) for j in range(5)] for r in x]), 1e-4)
    g = kiln.grad(lambda x: jnp.sum(lax.reduce((x, idx), (-np.inf, 0), argmax, (1,))[0]))(x)
    mask = np.zeros_like(x)
    mask[np.arange(3), x.argmax(1)] = 1
    _close(g, mask)
    out = kiln.vmap(lambda r: lax.reduce(r, 1.0, lambda a, b: a * b * 1.0, (0,)), in_axes=1)(x)
    _close(out, x.prod(0), 1e-4)


def test_reduce_xor():
    x = RNG.integers(0, 100, (3, 4)).astype(np.int32)
    _close(lax.reduce_xor(x, (1,)), np.bitwise_xor.reduce(x, axis=1))
    b = x % 3 == 0
    out = kiln.jit(lambda b: lax.reduce_xor(b, (0, 1)))(b)
    assert bool(out) == bool(np.logical_xor.reduce(b.ravel()))
    u = x.astype(np.uint8)
    _close(lax.reduce_xor(u, (0,)), np.bitwise_xor.reduce(u, axis=0))


def test_reduce_precision():
    x = _f32(4, 5) * 1000
    _close(lax.reduce_precision(x, 5, 10), x.astype(np.float16).astype(np.float32), 0)
    _close(kiln.jit(lambda x: lax.reduce_precision(x, 8, 7))(x), x.astype(bfloat16).astype(np.float32), 0)
    assert np.isinf(np.asarray(lax.reduce_precision(np.float32(1e6), 5, 10)))
    g = kiln.grad(lambda x: jnp.sum(lax.reduce_precision(x, 5, 10)))(x)
    _close(g, np.ones_like(x))


def test_optimization_barrier():
    x = _f32(3)
    out = kiln.jit(lambda x: lax.optimization_barrier((x, x * 2, 1.0)))(x)
    _close(out[1], 2 * x)
    assert float(out[2]) == 1.0
    assert "optimization_barrier" in kiln.jit(lambda x: lax.optimization_barrier(x * 2)).lower(x).as_text()
    _close(kiln.grad(lambda x: jnp.sum(lax.optimization_barrier(x * x)))(x), 2 * x)
    _close(kiln.vmap(lambda r: lax.optimization_barrier(r + 1))(x), x + 1)


def test_rng_bit_generator():
    key = np.array([1, 2, 3, 4], np.uint32)
    new_key, bits = lax.rng_bit_generator(key, (1000,))
    assert new_key.shape == (4,) and new_key.dtype == np.uint32 and bits.dtype == np.uint32
    assert not np.array_equal(np.asarray(new_key), key)
    again = kiln.jit(lambda k: lax.rng_bit_generator(k, (1000,)))(key)
    np.testing.assert_array_equal(np.asarray(again[1]), np.asarray(bits))  # deterministic
    mean = np.asarray(bits).astype(np.float64).mean() / 2**32
    assert 0.45 < mean < 0.55
    for dtype in (np.uint8, np.uint16):
        for alg in (lax.RandomAlgorithm.RNG_THREE_FRY, lax.RandomAlgorithm.RNG_PHILOX):
            assert lax.rng_bit_generator(key, (2, 3), dtype, alg)[1].dtype == dtype
    keys = np.stack([key, key + 1])
    ks, bs = kiln.vmap(lambda k: lax.rng_bit_generator(k, (5,)))(keys)
    np.testing.assert_array_equal(np.asarray(bs[0]), np.asarray(lax.rng_bit_generator(key, (5,))[1]))
    assert bs.shape == (2, 5) and ks.shape == (2, 4)


# -- ragged dots, shape_as_value, composite, stage, accuracy and dot algorithms, platform_dependent ---------

def _groups(sizes):
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return list(zip(starts, sizes))


def test_ragged_dot_modes():
    lhs, rhs = _f32(7, 3), _f32(3, 3, 4)
    sizes = np.array([2, 0, 4], np.int32)  # row 6 is in no group: zeros
    expected = np.zeros((7, 4), np.float32)
    for g, (s, n) in enumerate(_groups(sizes)):
        expected[s:s + n] = lhs[s:s + n] @ rhs[g]
    _close(lax.ragged_dot(lhs, rhs, sizes), expected)
    _close(kiln.jit(lax.ragged_dot)(lhs, rhs, sizes), expected)
    g_lhs, g_rhs = kiln.grad(lambda a, b: jnp.sum(lax.ragged_dot(a, b, sizes) ** 2), argnums=(0, 1))(lhs, rhs)
    _close(g_lhs[6], np.zeros(3))
    _close(g_rhs[0], 2 * lhs[:2].T @ expected[:2], 1e-4)
    # ragged contracting dimension: one product per group, stacked in front
    a, b, sizes2 = _f32(5, 6), _f32(6, 4), np.array([1, 3, 2], np.int32)
    dn = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
    _close(lax.ragged_dot_general(a, b, sizes2, dn),
           np.stack([a[:, s:s + n] @ b[s:s + n] for s, n in _groups(sizes2)]))
    # ragged batch dimension: batches after the last group are zero
    a3, b3 = _f32(4, 2, 3), _f32(4, 3, 5)
    dn = lax.RaggedDotDimensionNumbers((((2,), (1,)), ((0,), (0,))), (0,), ())
    expected3 = np.einsum("bmk,bkn->bmn", a3, b3)
    expected3[3] = 0
    _close(lax.ragged_dot_general(a3, b3, np.array([1, 2], np.int32), dn), expected3)
    # the group dimension of rhs anywhere, and the ragged one not first among lhs's free dimensions
    a4, b4 = _f32(2, 6, 3), _f32(3, 4, 2)  # lhs (x, m, k), rhs (k, n, g)
    dn = lax.RaggedDotDimensionNumbers((((2,), (0,)), ((), ())), (1,), (2,))
    sizes4 = np.array([4, 2], np.int32)
    expected4 = np.zeros((2, 6, 4), np.float32)
    for g, (s, n) in enumerate(_groups(sizes4)):
        expected4[:, s:s + n] = a4[:, s:s + n] @ b4[:, :, g]
    _close(lax.ragged_dot_general(a4, b4, sizes4, dn), expected4)


def test_small_helpers():
    np.testing.assert_array_equal(lax.shape_as_value((2, 3)), np.array([2, 3], np.int32))
    assert lax.shape_as_value(()).shape == (0,)
    scale = lax.composite(lambda x, *, k: x * k, "my.scale")
    _close(kiln.jit(lambda x: scale(x, k=3.0))(np.float32(2)), 6.0)
    assert isinstance(lax.stage(np.arange(3)), kiln.Array) and lax.stage(1.0).weak_type
    _close(kiln.jit(lambda x: lax.stage(np.arange(3.0)) + x)(np.float32(1)), np.arange(3.0) + 1)
    x = _f32(3)
    _close(lax.exp(x, accuracy=lax.Tolerance(atol=1e-3)), np.exp(x))
    _close(lax.exp2(x, accuracy=lax.AccuracyMode.HIGHEST), np.exp2(x))
    # (dot algorithms XLA's CPU backend computes; tests/lax/test_precision_emitted.py has the others)
    for p in ("BF16_BF16_F32", lax.DotAlgorithmPreset.F32_F32_F32, "BF16_BF16_F32_X3"):
        _close(lax.dot(x, x, precision=p), x @ x)
        _close(jnp.dot(x, x, precision=p), x @ x)


def test_platform_dependent():
    def f(x):
        return lax.platform_dependent(x, cpu=lambda v: v + 1, cuda=lambda v: v * 10, default=lambda v: v - 1)
    here = kiln.devices()[0].platform
    expected = {"cpu": 3.0, "cuda": 20.0}.get(here, 1.0)
    _close(f(np.float32(2)), expected)
    _close(kiln.jit(f)(np.float32(2)), expected)
    _close(kiln.grad(f)(2.0), {"cuda": 10.0}.get(here, 1.0))
    _close(kiln.vmap(f)(np.arange(3, dtype=np.float32)), np.array([f(np.float32(i)) for i in range(3)]))
    # only a branch for another platform, with a default: the default runs
    _close(kiln.jit(lambda x: lax.platform_dependent(x, tpu=lambda v: v + 1, default=lambda v: v - 1))(
        np.float32(2)), 1.0 if here != "tpu" else 3.0)
    if here == "cpu":  # no branch for the platform and no default: an error when the program is lowered
        with pytest.raises(lowering.LoweringError, match="no branch for platform 'cpu'"):
            kiln.jit(lambda x: lax.platform_dependent(x, tpu=lambda v: v + 1, cuda=lambda v: v))(np.float32(2))


def test_top_k_is_xla_topk():
    x = np.array([[1, 3, 3, 0, -0.0, 0.0], [np.nan, 1, 2, np.inf, 5, 5]], np.float32)
    x[1, 0] = -np.abs(x[1, 0])  # a NaN with its sign bit set still counts as the largest
    v, i = kiln.jit(lambda x: lax.top_k(x, 5))(x)
    np.testing.assert_array_equal(np.asarray(i), [[1, 2, 0, 3, 5], [0, 3, 4, 5, 2]])  # ties by index; -0.0 < 0.0
    assert np.isnan(np.asarray(v)[1, 0])
    assert "chlo.top_k" in kiln.jit(lambda x: lax.top_k(x, 2)).lower(x).as_text()


# -- errors ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,exc,match", [
    (lambda: lax.squeeze(np.ones((2, 3)), (0,)), ValueError, r"dimensions \(0,\) .* do not have size 1"),
    (lambda: lax.expand_dims(np.ones(2), (0, 0)), ValueError, "repeated axis"),
    (lambda: lax.full((2,), np.ones(2)), TypeError, "fill_value must be a scalar"),
    (lambda: lax.full((-1,), 0.0), ValueError, "negative dimension"),
    (lambda: lax.tile(np.ones((2, 2)), (2,)), TypeError, "one entry per dimension"),
    (lambda: lax.split(np.ones(6), (2, 3)), ValueError, "add up to dimension 0"),
    (lambda: lax.stack([np.ones(2), np.ones(3)]), TypeError, "the same shape"),
    (lambda: lax.stack([]), ValueError, "at least one array"),
    (lambda: lax.unstack(np.ones(2), 1), np.exceptions.AxisError, "axis 1 is out of bounds"),
    (lambda: lax.collapse(np.ones((2, 3)), 1, 0), ValueError, "invalid dimension range"),
    (lambda: lax.broadcast_shapes((2,), (3,)), ValueError, "incompatible shapes"),
    (lambda: lax.broadcast_like(np.ones(3), np.ones((2, 4))), ValueError, "cannot broadcast"),
    (lambda: lax.broadcast_to_rank(np.ones((2, 3)), 1), ValueError, "less than"),
    (lambda: lax.dtype([1, 2]), TypeError, "cannot determine the dtype"),
    (lambda: lax.mulhi(np.ones(2, np.float32), np.ones(2, np.float32)), TypeError, "integers of one dtype"),
    (lambda: lax.approx_max_k(np.ones(3), 4), ValueError, "k=4 must be between 0"),
    (lambda: lax.approx_min_k(np.ones(3), 1.5), TypeError, "k must be a static int"),
    (lambda: lax.conv_general_permutations(("NHWC", "HWIO")), TypeError, "three strings"),
    (lambda: lax.conv_general_permutations(("NHWC", "HWIO", "NHW")), TypeError, "exactly once"),
    (lambda: lax.conv_shape_tuple((1, 1, 4), (1, 1, 2), (1,), ((1, 1), (1, 1))), TypeError, "one per spatial"),
    (lambda: lax.conv_transpose(np.ones((1, 3, 1)), np.ones((2, 1, 1)), (1,), "FULL"), ValueError,
     "invalid padding 'FULL'"),
    (lambda: lax.reduce(np.ones(3), (0.0, 0.0), lax.add, (0,)), ValueError, "the same structure"),
    (lambda: lax.reduce(np.ones(3), 0.0, 5, (0,)), TypeError, "computation must be callable"),
    (lambda: lax.reduce(np.ones(3), 0.0, lambda a, b: (a, b), (0,)), TypeError, "must return the structure"),
    (lambda: lax.reduce(np.ones(3), 0.0, lax.add, (1,)), ValueError, "dimension 1 is not a dimension"),
    (lambda: lax.reduce_xor(np.ones(3), (0,)), TypeError, "boolean or integer"),
    (lambda: lax.reduce_precision(np.ones(3, np.int32), 5, 10), TypeError, "must be a float array"),
    (lambda: lax.reduce_precision(np.ones(3, np.float32), 0, 10), ValueError, "exponent_bits must be at least 1"),
    (lambda: lax.rng_bit_generator(np.ones(3, np.uint32), (2,)), TypeError, r"shape \(4,\)"),
    (lambda: lax.rng_bit_generator(np.ones(4, np.uint32), (2,), np.int32), TypeError, "uint8, uint16"),
    (lambda: lax.rng_bit_generator(np.ones(4, np.uint32), (2,), algorithm=7), ValueError, "unknown algorithm"),
    (lambda: lax.ragged_dot(np.ones((2, 3)), np.ones((3, 4)), np.array([2], np.int32)), ValueError,
     r"rhs \(g, k, n\)"),
    (lambda: lax.ragged_dot(np.ones((2, 3)), np.ones((1, 3, 4)), np.array([[2]], np.int32)), TypeError,
     "group_sizes must be a 1-D integer array"),
    (lambda: lax.ragged_dot(np.ones((2, 3)), np.ones((2, 3, 4)), np.array([2], np.int32)), ValueError,
     "has size 2 but group_sizes has 1 groups"),
    (lambda: lax.ragged_dot(np.ones((2, 3)), np.ones((1, 3, 4)), np.array([2], np.int32),
                            group_offset=np.zeros(1, np.int32)), NotImplementedError, "group_offset"),
    (lambda: lax.exp(np.ones(2), accuracy="high"), TypeError, "accuracy must be None, a kiln.lax.Tolerance"),
    (lambda: lax.Tolerance(), ValueError, "at least one of atol"),
    (lambda: lax.Tolerance(atol=-1.0), ValueError, "non-negative"),
    (lambda: lax.composite(3, "x"), TypeError, "decomposition must be callable"),
    (lambda: lax.platform_dependent(1.0, vulkan=lambda v: v), ValueError, "unknown platform 'vulkan'"),
    (lambda: lax.platform_dependent(1.0), ValueError, "at least one platform"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_reduce_init_value_derivative_and_batching_errors():
    with pytest.raises(NotImplementedError, match="with respect to its init_values"):
        kiln.grad(lambda i: jnp.sum(lax.reduce(jnp.ones(3), i, lambda a, b: a * b * 1.0, (0,))))(2.0)
    with pytest.raises(ValueError, match="batched init_values"):
        kiln.vmap(lambda i: lax.reduce(jnp.ones(3), i, lambda a, b: a * b * 1.0, (0,)))(jnp.ones(2))
