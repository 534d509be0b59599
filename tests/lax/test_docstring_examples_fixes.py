"""Regressions found by running the `>>>` examples of JAX's docstrings (lax, random, scipy, tree_util, the
top level) under kiln. Oracles: NumPy, SciPy or values derived by hand."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def test_reduce_window_defaults_to_unit_strides_and_valid_padding():
    x = np.arange(10, dtype=np.float32)
    got = lax.reduce_window(knp.asarray(x), np.float32(1), lax.mul, window_dimensions=(2,))
    np.testing.assert_array_equal(np.asarray(got), x[:-1] * x[1:])
    got = lax.reduce_window(knp.asarray(x), 0.0, lax.add, (3,), padding="SAME")
    np.testing.assert_array_equal(np.asarray(got), np.convolve(x, np.ones(3, np.float32), mode="same"))


@pytest.mark.parametrize("dims,shape", [((1, 0), (2, 3, 4)), ((2, 0), (2, 4, 3))])
def test_broadcast_in_dim_accepts_dimensions_out_of_order(dims, shape):
    a = np.arange(6, dtype=np.float32).reshape(3, 2) if dims == (2, 0) else np.arange(3.0, dtype=np.float32)[:, None]
    # operand dimension i lands on result dimension dims[i]
    want = np.broadcast_to(np.expand_dims(a.T, tuple(d for d in range(3) if d not in dims)), shape)
    for f in (lax.broadcast_in_dim, kiln.jit(lax.broadcast_in_dim, static_argnums=(1, 2))):
        np.testing.assert_array_equal(np.asarray(f(knp.asarray(a), shape, dims)), want)


def test_broadcast_in_dim_out_of_order_gradient_and_vmap():
    w = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    a = np.ones((3, 2), np.float32)
    g = kiln.grad(lambda a: (lax.broadcast_in_dim(a, (2, 4, 3), (2, 0)) * w).sum())(a)
    # d/da[i, j] = sum_k w[j, k, i]
    np.testing.assert_array_equal(np.asarray(g), w.sum(1).T)
    out = kiln.vmap(lambda a: lax.broadcast_in_dim(a, (2, 4, 3), (2, 0)))(knp.stack([a, 2 * a]))
    assert out.shape == (2, 2, 4, 3)
    np.testing.assert_array_equal(np.asarray(out[1]), np.full((2, 4, 3), 2.0, np.float32))


@pytest.mark.parametrize("batch_size", [3, 4, 5, 1, 10, 12, 0])
def test_lax_map_batch_size_with_a_remainder(batch_size):
    x = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    seen = []

    def f(r):
        seen.append(r.shape)
        return r * 2, r.sum()

    y, s = lax.map(f, knp.asarray(x), batch_size=batch_size)
    np.testing.assert_array_equal(np.asarray(y), 2 * x)
    np.testing.assert_array_equal(np.asarray(s), x.sum(1))
    assert set(seen) == {(3,)}          # f sees one element, under vmap


def test_lax_map_batch_size_remainder_under_jit_and_grad():
    x = np.arange(7, dtype=np.float32)
    y = kiln.jit(lambda x: lax.map(lambda v: v * v, x, batch_size=3))(x)
    np.testing.assert_array_equal(np.asarray(y), x * x)
    g = kiln.grad(lambda x: lax.map(lambda v: v * v, x, batch_size=3).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), 2 * x)


def test_lax_map_negative_batch_size_raises():
    with pytest.raises(Exception, match="batch_size must be a non-negative int, got -2"):
        lax.map(lambda v: v, knp.arange(4.0), batch_size=-2)


def test_wrap_key_data_takes_dtype():
    key = kiln.random.key(42)
    data = kiln.random.key_data(key)
    assert bool(kiln.random.wrap_key_data(data, dtype=key.dtype) == key)
    assert bool(kiln.random.wrap_key_data(data, dtype="threefry2x32") == key)
    with pytest.raises(ValueError, match="not both"):
        kiln.random.wrap_key_data(data, impl="threefry2x32", dtype=key.dtype)


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float32", "int8", "bool", "complex64", "int64"])
def test_array_byteswap_matches_numpy(dtype):
    a = (np.arange(5) * 7919 + 3).astype(dtype)
    x = knp.asarray(a)
    want = a.astype(x.dtype).byteswap()
    got = np.asarray(x.byteswap())
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(np.asarray(x.byteswap().byteswap()), np.asarray(x))


def test_array_byteswap_inplace_raises():
    with pytest.raises(ValueError, match="immutable"):
        knp.arange(3).byteswap(inplace=True)


def test_ds_slices_with_a_traced_start():
    x = np.arange(10, dtype=np.int32)
    assert kiln.ds(None) == slice(None)
    np.testing.assert_array_equal(np.asarray(knp.asarray(x)[kiln.ds(4, 2)]), x[4:6])
    np.testing.assert_array_equal(np.asarray(knp.asarray(x)[kiln.ds(3)]), x[:3])

    @kiln.jit(static_argnames="size")
    def f(x, i, size):
        return x[kiln.ds(i, size)]
    np.testing.assert_array_equal(np.asarray(f(x, 4, 2)), x[4:6])
    np.testing.assert_array_equal(np.asarray(f(x, 9, 3)), x[7:10])      # start clamped, as dynamic_slice
    y = np.arange(60).reshape(3, 4, 5).astype(np.float32)
    g = kiln.jit(lambda y, i: y[None, 1, kiln.ds(i, 2), ..., kiln.ds(i, 2, 2)])
    np.testing.assert_array_equal(np.asarray(g(y, 1)), y[None, 1, 1:3, ..., 1:4:2])
    rows = kiln.vmap(lambda i: knp.asarray(x)[kiln.ds(i, 3)])(knp.arange(3))
    np.testing.assert_array_equal(np.asarray(rows), np.stack([x[i:i + 3] for i in range(3)]))


def test_ds_in_at_updates_raises():
    with pytest.raises(NotImplementedError, match="dynamic_update_slice"):
        knp.arange(5).at[kiln.ds(1, 2)].set(0)


def test_round_complex_rounds_each_part():
    a = np.array([1.26 + 2.55j, -0.5 - 0.5j, 2.5 + 3.5j, 1.5 - 2.5j], np.complex64)
    np.testing.assert_array_equal(np.asarray(knp.round(knp.asarray(a))), np.round(a))
    np.testing.assert_allclose(np.asarray(knp.round(knp.asarray(a), 1)), np.round(a, 1), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(knp.asarray(a).round()), np.round(a))


def test_qr_multiply_right_with_a_vector():
    A = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0], [1.0, 4.0]], np.float32)
    b = np.array([2.0, 4.0, 5.0, 4.0], np.float32)
    qtb, r = kiln.scipy.linalg.qr_multiply(A, b, mode="right")
    assert qtb.shape == (2,) and r.shape == (2, 2)
    x = kiln.scipy.linalg.solve_triangular(r, qtb)
    np.testing.assert_allclose(np.asarray(x), np.linalg.lstsq(A, b, rcond=None)[0], rtol=1e-5)


def test_linear_transpose_keeps_weak_types_of_python_scalars():
    (out,) = kiln.linear_transpose(lambda x: x + x / 3.0, 1.0)(18.0)
    assert float(out) == 24.0 and out.weak_type
    (out,) = kiln.linear_transpose(lambda x: x * 2.0, 1.0)(np.float32(18.0))
    assert float(out) == 36.0 and not out.weak_type      # a float32 cotangent is not weak
    (out,) = kiln.linear_transpose(lambda x: x * 2.0, np.float32(1.0))(18.0)
    assert float(out) == 36.0 and not out.weak_type      # nor is a float32 primal's


def test_custom_gradient_cotangents_of_python_floats_are_weak():
    @kiln.custom_gradient
    def f(x, y):
        return x * y, lambda g: (g * y, g * x)

    gx, gy = kiln.grad(f, argnums=(0, 1))(3.0, 4.0)
    assert (float(gx), float(gy)) == (4.0, 3.0)
    assert gx.weak_type and gy.weak_type
    gx, gy = kiln.grad(f, argnums=(0, 1))(np.float32(3.0), 4.0)
    assert (float(gx), float(gy)) == (4.0, 3.0)
    assert not gx.weak_type and not gy.weak_type


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("scale", [None, "sqrtn", "n"])
def test_dft_matrix(n, scale):
    k = np.arange(n)
    want = np.exp(-2j * np.pi * np.outer(k, k) / n) / {None: 1, "sqrtn": np.sqrt(n), "n": n}[scale]
    got = kiln.scipy.linalg.dft(n, scale)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)   # float32 angles up to 2 pi (n-1)^2 / n
    np.testing.assert_allclose(np.asarray(got.round(3)), np.round(want, 3), atol=1e-6)   # complex round
