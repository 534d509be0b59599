"""bcoo_conv_general_dilated (lax.conv_general_dilated with BCOO operands) and sparsify's rule for the convolution,
against a NumPy cross-correlation loop and kiln.lax.conv_general_dilated of the densified operands."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental import sparse
from kiln.experimental.sparse import BCOO, bcoo_conv_general_dilated

RNG = np.random.default_rng(0)
X = np.array([0, 1.5, 0, -2, 0, 0, 3], np.float32)  # width 7, 3 stored
K = np.array([1, 0, -0.5], np.float32)  # width 3, 2 stored
# padding as given -> (low, high) for a width-3 kernel at unit stride
PADDINGS = {"SAME": (1, 1), "VALID": (0, 0), ((2, 1),): (2, 1), ((-1, 3),): (-1, 3)}


def np_conv(x, k, low, high):
    """1-D cross-correlation (XLA's convolution) of ``x`` padded by (low, high); negative padding crops."""
    xp = np.concatenate([np.zeros(max(low, 0), x.dtype), x, np.zeros(max(high, 0), x.dtype)])
    xp = xp[max(-low, 0):len(xp) - max(-high, 0)]
    return np.array([xp[i:i + len(k)] @ k for i in range(max(len(xp) - len(k) + 1, 0))], dtype=x.dtype)


def conv(lhs, rhs, padding, **kw):
    return bcoo_conv_general_dilated(lhs, rhs, window_strides=(1,), padding=list(padding)
                                     if isinstance(padding, tuple) else padding, **kw)


def np_todense(out):
    """The dense value of a (1, 1, width) result with n_batch=2, summed in NumPy (entries out of range dropped)."""
    width, idx, data = out.shape[2], np.asarray(out.indices).ravel(), np.asarray(out.data).ravel()
    dense = np.zeros(width + 1, data.dtype)
    np.add.at(dense, np.minimum(idx, width), data)
    return dense[:width].reshape(out.shape)


def stored(shape, dtype=np.float32):
    """A BCOO of ``shape`` with one stored 1 at the origin (built without compiling anything)."""
    return BCOO((np.ones(1, dtype), np.zeros((1, len(shape)), np.int32)), shape=shape)


# one compile per case instead of one per kiln.numpy op and shape (eager); the eager path is checked once below
jconv = kiln.jit(conv, static_argnums=(2,), static_argnames=("preferred_element_type",))


@pytest.mark.parametrize("padding", list(PADDINGS), ids=str)
def test_values_match_numpy_and_the_dense_convolution(padding):
    x, k = X.reshape(1, 1, 7), K.reshape(1, 1, 3)
    want = np_conv(X, K, *PADDINGS[padding]).reshape(1, 1, -1)
    dense = np.asarray(lax.conv_general_dilated(x, k, (1,), list(padding) if isinstance(padding, tuple) else padding))
    np.testing.assert_allclose(dense, want, rtol=1e-6)
    sx, sk = BCOO.fromdense(x), BCOO.fromdense(k)
    for lhs, rhs, nse in [(sx, k, 3 * 3), (x, sk, 7 * 2), (sx, sk, 3 * 2), (x, k, 7 * 3)]:
        eager = padding == "SAME" and lhs is sx and rhs is sk
        out = (conv if eager else jconv)(lhs, rhs, padding)  # eagerly once, else compiled
        # JAX's layout: (1, 1, width) with two batch dimensions, one entry per pair of stored entries
        assert isinstance(out, BCOO) and out.shape == want.shape and out.dtype == np.float32
        assert (out.n_batch, out.n_sparse, out.n_dense, out.nse) == (2, 1, 0, nse)
        np.testing.assert_allclose(np_todense(out), want, rtol=1e-6)
        if eager:
            np.testing.assert_allclose(np.asarray(out.todense()), want, rtol=1e-6)
        # products outside the output are padding entries (index = width, value 0)
        idx, data = np.asarray(out.indices).ravel(), np.asarray(out.data).ravel()
        assert np.all((idx >= 0) & (idx <= want.shape[2])) and np.all(data[idx == want.shape[2]] == 0)


def test_other_widths_layouts_and_padding_entries():
    x = (RNG.standard_normal(11) * (RNG.random(11) < 0.4)).astype(np.float32).reshape(1, 1, 11)
    k = np.array([0, 2, 0, 1], np.float32).reshape(1, 1, 4)
    want = np_conv(x.ravel(), k.ravel(), 1, 2).reshape(1, 1, 11)  # 'SAME', even kernel: the extra padding goes high
    nnz = int(np.count_nonzero(x))
    # every layout of the operand; with nse > nnz, fromdense's padding entries too
    for n_batch, n_dense, nse in [(0, 0, nnz + 2), (2, 0, nnz), (1, 1, 1)]:
        f = kiln.jit(lambda a, b: conv(BCOO.fromdense(a, nse=nse, n_batch=n_batch, n_dense=n_dense),
                                       BCOO.fromdense(b, nse=2), "SAME"))
        np.testing.assert_allclose(np_todense(f(x, k)), want, rtol=1e-5, err_msg=f"{n_batch, n_dense}")
    # an entry out of range, with a value, is dropped
    odd = BCOO((np.array([5.0, 7.0], np.float32), np.array([[0, 0, 3], [0, 0, 11]], np.int32)), shape=(1, 1, 11))
    e3 = np.zeros(11, np.float32)
    e3[3] = 5
    np.testing.assert_allclose(np_todense(jconv(odd, k, "VALID")).ravel(), np_conv(e3, k.ravel(), 0, 0))
    # an empty output (width 2 with a width-3 kernel, 'VALID')
    out = jconv(stored((1, 1, 2)), np.ones((1, 1, 3), np.float32), "VALID")
    assert out.shape == (1, 1, 0) and np_todense(out).shape == (1, 1, 0)


def test_integer_dtypes_and_preferred_element_type():
    x, k = np.array([0, 100, 0, 50, 0, 0, 3], np.int8), np.array([2, 0, 1], np.int8)
    out = jconv(BCOO.fromdense(x.reshape(1, 1, 7)), k.reshape(1, 1, 3), "SAME")
    assert out.dtype == np.int8
    np.testing.assert_array_equal(np_todense(out).ravel(), np_conv(x, k, 1, 1))  # wraps as int8 does
    # preferred_element_type: products computed in int32 (JAX ignores it and returns int8)
    out = jconv(BCOO.fromdense(x.reshape(1, 1, 7)), BCOO.fromdense(k.reshape(1, 1, 3)), "SAME",
                preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np_todense(out).ravel(), np_conv(x.astype(np.int32), k.astype(np.int32),
                                                                    1, 1))


def test_under_jit_vmap_and_grad():
    sx = BCOO.fromdense(X.reshape(1, 1, 7))
    # vmap over a dense kernel, and over a BCOO with a batch dimension: a Python loop is the oracle
    ks = RNG.standard_normal((3, 1, 1, 3)).astype(np.float32)
    out = kiln.jit(kiln.vmap(lambda b: conv(sx, b, "SAME")))(ks)
    assert out.shape == (3, 1, 1, 7)
    np.testing.assert_allclose(np.asarray(out.todense()), np.stack([np_conv(X, kk.ravel(), 1, 1).reshape(1, 1, 7)
                                                                    for kk in ks]), rtol=1e-5)
    xs = np.stack([X, 2 * X, -X]).reshape(3, 1, 1, 7)
    out = kiln.jit(kiln.vmap(lambda a: conv(a, K.reshape(1, 1, 3), "SAME")))(BCOO.fromdense(xs, n_batch=1))
    np.testing.assert_allclose(np.asarray(out.todense()), np.stack([np_conv(xx.ravel(), K, 1, 1).reshape(1, 1, 7)
                                                                    for xx in xs]), rtol=1e-5)

    # gradients of a weighted sum: the result is linear in each operand, so the gradient at element p is the
    # weighted sum of the convolution of the p-th unit vector
    w = RNG.standard_normal(7).astype(np.float32)

    def loss(data, kernel):
        return jnp.sum(conv(BCOO((data, sx.indices), shape=sx.shape), kernel, "SAME").todense().ravel() * w)
    g_data, g_kernel = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(sx.data, K.reshape(1, 1, 3))
    unit = np.eye(7, dtype=np.float32)
    g_x = np.array([w @ np_conv(unit[p], K, 1, 1) for p in range(7)])
    np.testing.assert_allclose(np.asarray(g_data), g_x[np.asarray(sx.indices)[:, 2]], rtol=1e-5)
    g_k = np.array([w @ np_conv(X, np.eye(3, dtype=np.float32)[j], 1, 1) for j in range(3)])
    np.testing.assert_allclose(np.asarray(g_kernel).ravel(), g_k, rtol=1e-5)


def test_sparsify_routes_the_convolution():
    sx = BCOO.fromdense(X.reshape(1, 1, 7))

    @sparse.sparsify
    def f(a, b):
        return lax.conv_general_dilated(a, b, (1,), "VALID") * 2

    out = f(sx, K.reshape(1, 1, 3))
    assert isinstance(out, BCOO) and out.nse == 9
    np.testing.assert_allclose(np.asarray(out.todense()).ravel(), 2 * np_conv(X, K, 0, 0), rtol=1e-6)
    out = kiln.jit(sparse.sparsify(lambda a, b: lax.conv(a, b, (1,), "SAME", precision="highest")))(
        K.reshape(1, 1, 3), sx)  # a sparse kernel
    np.testing.assert_allclose(np.asarray(out.todense()).ravel(), np_conv(K, X, 3, 3), rtol=1e-6)
    with pytest.raises(NotImplementedError, match=r"window_strides=\(2,\) is not supported .*call "
                                                  r"kiln.lax.conv_general_dilated"):
        sparse.sparsify(lambda a, b: lax.conv_general_dilated(a, b, (2,), "VALID"))(sx, K.reshape(1, 1, 3))


def test_errors():
    sx, k = stored((1, 1, 7)), K.reshape(1, 1, 3)
    hint = r"densify the BCOO operands \(x.todense\(\)\) and call kiln.lax.conv_general_dilated"
    for kw, what in [(dict(window_strides=(2,)), r"window_strides=\(2,\)"),
                     (dict(lhs_dilation=(2,), padding=[(1, 1)]), r"lhs_dilation=\(2,\)"),
                     (dict(rhs_dilation=(2,)), r"rhs_dilation=\(2,\)")]:
        kw = {"window_strides": (1,), "padding": "VALID", **kw}
        with pytest.raises(NotImplementedError, match=rf"bcoo_conv_general_dilated: {what} is not supported \(only "
                                                      rf"unit .*; {hint}"):
            bcoo_conv_general_dilated(sx, k, **kw)
    with pytest.raises(NotImplementedError, match=rf"2 spatial dimensions .* \(only 1 spatial dimension, .*{hint}"):
        bcoo_conv_general_dilated(stored((1, 1, 4, 4)), np.ones((1, 1, 3, 3), np.float32),
                                  window_strides=(1, 1), padding="SAME")
    with pytest.raises(NotImplementedError, match=r"lhs of shape \(2, 1, 7\) with rhs of shape \(1, 1, 3\) is not "
                                                  rf"supported \(the batch and feature dimensions.*size 1.*{hint}"):
        bcoo_conv_general_dilated(stored((2, 1, 7)), k, window_strides=(1,),
                                  padding="SAME")
    with pytest.raises(NotImplementedError, match=rf"feature_group_count=2 with batch_group_count=1 .*{hint}"):
        bcoo_conv_general_dilated(stored((1, 2, 7)), np.ones((2, 1, 3), np.float32),
                                  window_strides=(1,), padding="SAME", feature_group_count=2)
    with pytest.raises(NotImplementedError, match=r"dimension_numbers=\('NHC', 'HIO', 'NHC'\) .*transpose the "
                                                  rf"operands to that layout, or {hint}"):
        bcoo_conv_general_dilated(stored((1, 7, 1)), np.ones((3, 1, 1), np.float32),
                                  window_strides=(1,), padding="SAME", dimension_numbers=("NHC", "HIO", "NHC"))
    # the dense convolution's own checks apply
    with pytest.raises(TypeError, match=r"lhs and rhs must have one dtype, got float32 and int32"):
        bcoo_conv_general_dilated(sx, k.astype(np.int32), window_strides=(1,), padding="SAME")
    with pytest.raises(ValueError, match=r"string padding 'SAME' is not supported together with lhs_dilation"):
        bcoo_conv_general_dilated(sx, k, window_strides=(1,), padding="SAME", lhs_dilation=(2,))
    with pytest.raises(TypeError, match=r"rhs is a BCSR; only BCOO and dense operands are supported .*to_bcoo\(\)"):
        bcsr = sparse.BCSR((np.ones(1, np.float32), np.zeros(1, np.int32), np.array([0, 1], np.int32)), shape=(1, 3))
        bcoo_conv_general_dilated(sx, bcsr, window_strides=(1,), padding="SAME")
    with pytest.raises(TypeError, match=r"lhs of type str is neither a BCOO nor a dense array"):
        bcoo_conv_general_dilated("x", k, window_strides=(1,), padding="SAME")
