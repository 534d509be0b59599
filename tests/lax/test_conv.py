"""kiln.lax.conv_general_dilated (+ conv, conv_with_general_padding) against a direct NumPy
implementation (and scipy.signal.correlate for the plain case)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

RNG = np.random.default_rng(2)


def _dilate(x, dil, first_spatial=2):
    """Insert dil - 1 zeros between the elements of each spatial dimension."""
    shape = list(x.shape)
    for i, d in enumerate(dil):
        n = shape[first_spatial + i]
        shape[first_spatial + i] = 0 if n == 0 else (n - 1) * d + 1
    out = np.zeros(shape, x.dtype)
    out[(slice(None),) * first_spatial + tuple(slice(None, None, d) for d in dil)] = x
    return out


def _pad(x, padding):
    for i, (lo, hi) in enumerate(padding):
        ax = 2 + i
        if lo < 0:
            x = np.take(x, range(-lo, x.shape[ax]), axis=ax)
        if hi < 0:
            x = np.take(x, range(0, x.shape[ax] + hi), axis=ax)
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
    return x


def conv_ref(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None, fgc=1, bgc=1):
    """XLA's convolution for NC... inputs and OI... kernels, computed in float64 (or int64)."""
    acc = np.float64 if lhs.dtype.kind == "f" else np.int64
    n_sp = lhs.ndim - 2
    ld, rd = lhs_dilation or (1,) * n_sp, rhs_dilation or (1,) * n_sp
    x = _pad(_dilate(lhs.astype(acc), ld), padding)
    w = _dilate(rhs.astype(acc), rd)
    B, C = x.shape[:2]
    O, I = w.shape[:2]
    out_sp = [max(0, (p - k) // s + 1) if p >= k else 0 for p, k, s in zip(x.shape[2:], w.shape[2:], strides)]
    Bp = B // bgc
    out = np.zeros([Bp, O] + out_sp, acc)
    for o in range(O):
        gf, gb = o // (O // fgc), o // (O // bgc)
        xs = x[gb * Bp:(gb + 1) * Bp, gf * I:(gf + 1) * I]
        for pos in itertools.product(*[range(n) for n in out_sp]):
            win = xs[(slice(None), slice(None)) + tuple(slice(p * s, p * s + k) for p, s, k in
                                                        zip(pos, strides, w.shape[2:]))]
            out[(slice(None), o) + pos] = np.tensordot(win, w[o], axes=(list(range(1, win.ndim)),
                                                                         list(range(w[o].ndim))))
    return out.astype(lhs.dtype)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# (lhs, rhs, kwargs for conv_general_dilated, kwargs for conv_ref)
CASES = [
    (f32(2, 3, 7, 6), f32(4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID"),
     dict(strides=(1, 1), padding=((0, 0), (0, 0)))),
    (f32(2, 3, 7, 6), f32(4, 3, 3, 2), dict(window_strides=(2, 1), padding="SAME"),
     dict(strides=(2, 1), padding=((1, 1), (0, 1)))),
    (f32(1, 2, 6, 5), f32(3, 2, 2, 3), dict(window_strides=(1, 2), padding=((2, 1), (-1, 2)),
                                            lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
     dict(strides=(1, 2), padding=((2, 1), (-1, 2)), lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    (f32(2, 6, 5), f32(4, 3, 2), dict(window_strides=(1,), padding="VALID", feature_group_count=2),
     dict(strides=(1,), padding=((0, 0),), fgc=2)),
    (f32(2, 4, 5), f32(4, 1, 3), dict(window_strides=(1,), padding="SAME", feature_group_count=4),  # depthwise
     dict(strides=(1,), padding=((1, 1),), fgc=4)),
    (f32(6, 2, 5), f32(6, 2, 2), dict(window_strides=(1,), padding="VALID", batch_group_count=3),
     dict(strides=(1,), padding=((0, 0),), bgc=3)),
    (f32(1, 2, 3, 4, 3), f32(2, 2, 2, 2, 2), dict(window_strides=(1, 1, 2), padding="SAME"),
     dict(strides=(1, 1, 2), padding=((0, 1), (0, 1), (0, 1)))),
    (RNG.integers(-4, 4, (2, 2, 5, 5)).astype(np.int32), RNG.integers(-3, 3, (3, 2, 2, 2)).astype(np.int32),
     dict(window_strides=(1, 1), padding=((1, 0), (0, 1))), dict(strides=(1, 1), padding=((1, 0), (0, 1)))),
    (np.zeros((0, 3, 4), np.float32), f32(2, 3, 2), dict(window_strides=(1,), padding="VALID"),
     dict(strides=(1,), padding=((0, 0),))),
]


def _run(args):
    return [lax.conv_general_dilated(x, w, **kw) for (x, w), (_, _, kw, _) in zip(args, CASES)]


def _check(outs):
    for i, (out, (x, w, _, ref_kw)) in enumerate(zip(outs, CASES)):
        want = conv_ref(x, w, **ref_kw)
        assert out.shape == want.shape and out.dtype == want.dtype, (i, out.shape, want.shape)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5, err_msg=f"case {i}")


def test_conv_eager():
    _check(_run([(knp.asarray(x), knp.asarray(w)) for x, w, _, _ in CASES]))


def test_conv_jit():
    _check(kiln.jit(_run)([(x, w) for x, w, _, _ in CASES]))


def test_plain_conv_matches_scipy():
    from scipy.signal import correlate
    x, w = f32(2, 3, 7, 6), f32(4, 3, 3, 2)
    want = np.stack([np.stack([sum(correlate(x[b, c], w[o, c], mode="valid") for c in range(3))
                               for o in range(4)]) for b in range(2)])
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 1), "VALID")), want, rtol=1e-5, atol=1e-5)


def test_dimension_number_strings():
    x, w = f32(2, 3, 7, 6), f32(4, 3, 3, 2)  # NCHW, OIHW
    want = conv_ref(x, w, (1, 2), ((1, 1), (0, 1)))
    xh, wh = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)  # NHWC, HWIO

    def f(x, w, xh, wh):
        return (lax.conv_general_dilated(xh, wh, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
                lax.conv_general_dilated(x, w, (1, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NHWC")),
                lax.conv_general_dilated(xh, w, (1, 2), "SAME", dimension_numbers=("NHWC", "OIHW", "NCHW")),
                lax.conv_general_dilated(x, w, (1, 2), "SAME",
                                         dimension_numbers=lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3),
                                                                                    (0, 1, 2, 3))))
    for fn in (f, kiln.jit(f)):
        a, b, c, d = fn(x, w, xh, wh)
        np.testing.assert_allclose(np.asarray(a), want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(b), want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(c), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(d), want, rtol=1e-5, atol=1e-5)
    dn = lax.conv_dimension_numbers(xh.shape, wh.shape, ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    # Spatial dimensions pair up by letter, in the kernel's order.
    dn = lax.conv_dimension_numbers((1, 1, 1, 1), (1, 1, 1, 1), ("NCWH", "OIHW", "NCHW"))
    assert dn.lhs_spec == (0, 1, 3, 2)


def test_conv_with_general_padding_and_preferred_type():
    x, w = f32(1, 2, 5, 5), f32(2, 2, 3, 3)
    got = lax.conv_with_general_padding(x, w, (1, 1), ((1, 1), (2, 0)), (1, 2), (2, 1))
    np.testing.assert_allclose(np.asarray(got), conv_ref(x, w, (1, 1), ((1, 1), (2, 0)), (1, 2), (2, 1)),
                               rtol=1e-5, atol=1e-5)
    import ml_dtypes
    xb, wb = x.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)
    out = lax.conv(xb, wb, (1, 1), "VALID", preferred_element_type=np.float32)
    assert out.dtype == np.float32
    want = conv_ref(xb.astype(np.float32), wb.astype(np.float32), (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-2, atol=1e-2)


def test_conv_lowering():
    text = kiln.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=(
        "NHWC", "HWIO", "NHWC"))).lower(f32(1, 4, 4, 2), f32(3, 3, 2, 5)).as_text()
    assert "stablehlo.convolution" in text and "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in text


def test_conv_errors():
    x, w = knp.asarray(f32(2, 3, 7, 6)), knp.asarray(f32(4, 3, 3, 2))
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: the input has 3 features; with "
                                         r"feature_group_count=1 the kernel's input-feature dimension must be 3"):
        lax.conv_general_dilated(x, knp.asarray(f32(4, 2, 3, 2)), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.conv_general_dilated: lhs and rhs must have the same rank"):
        lax.conv_general_dilated(x, knp.asarray(f32(4, 3, 3)), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.conv_general_dilated: lhs and rhs must have one dtype"):
        lax.conv_general_dilated(x, knp.asarray(np.ones((4, 3, 3, 2), np.int32)), (1, 1), "VALID")
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: string padding 'SAME' is not supported "
                                         r"together with lhs_dilation"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", lhs_dilation=(2, 1))
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: window_strides \(1,\) must have one entry"):
        lax.conv_general_dilated(x, w, (1,), "VALID")
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: the spatial dimensions of lhs string "
                                         r"'NCHD' do not match"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHD", "OIHW", "NCHW"))
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: kernel dimension string 'OXHW' must"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OXHW", "NCHW"))
    with pytest.raises(TypeError, match=r"kiln.lax.conv_general_dilated: lhs dimension string 'NCH' has 3 letters"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCH", "OIHW", "NCHW"))
    with pytest.raises(TypeError, match=r"kiln.lax.conv_general_dilated: dimension_numbers must be None, a "
                                        r"ConvDimensionNumbers or three strings"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers="NCHW")
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: at most one of feature_group_count"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=3, batch_group_count=2)
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: batch size 2 and output features 4 must "
                                         r"be divisible by batch_group_count=3"):
        lax.conv_general_dilated(x, knp.asarray(f32(4, 3, 3, 2)), (1, 1), "VALID", batch_group_count=3)
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: rhs_dilation must be positive"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", rhs_dilation=(0, 1))
    with pytest.raises(ValueError, match=r"kiln.lax.conv_general_dilated: operands need at least 2 dimensions"):
        lax.conv_general_dilated(knp.asarray(f32(3)), knp.asarray(f32(3)), (), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.conv_general_dilated: does not accept dtype bool"):
        b = knp.asarray(np.ones((1, 1, 2), bool))
        lax.conv_general_dilated(b, b, (1,), "VALID")


def test_complex_conv_is_three_real_convolutions():
    # As JAX lowers it on CPU and GPU: Gauss's trick, k1 = conv(re x + im x, re w), k2 = conv(re x, im w - re w),
    # k3 = conv(im x, re w + im w), x * w = (k1 - k3) + i (k1 + k2) (XLA's GPU backend has no complex convolution;
    # found porting JAX's convolutions notebook, whose complex numbers differed in the last place).
    if kiln.default_backend() == "tpu":
        pytest.skip("on TPU, JAX and kiln emit the complex convolution itself")
    xr, xi, wr, wi = f32(2, 3, 7, 6), f32(2, 3, 7, 6), f32(4, 3, 3, 2), f32(4, 3, 3, 2)
    kw = dict(window_strides=(1, 2), padding=((1, 0), (2, 1)), rhs_dilation=(1, 2))
    got = kiln.jit(lambda x, w: lax.conv_general_dilated(x, w, **kw))(xr + 1j * xi, wr + 1j * wi)
    assert got.dtype == np.complex64

    def conv(a, b):
        return np.asarray(lax.conv_general_dilated(a, b, **kw))
    k1, k2, k3 = conv(xr + xi, wr), conv(xr, wi - wr), conv(xi, wr + wi)
    np.testing.assert_array_equal(np.asarray(got), (k1 - k3) + 1j * (k1 + k2))
    ref_kw = dict(strides=(1, 2), padding=((1, 0), (2, 1)), rhs_dilation=(1, 2))
    ref = (conv_ref(xr, wr, **ref_kw).astype(np.float64) - conv_ref(xi, wi, **ref_kw)
           + 1j * (conv_ref(xr, wi, **ref_kw).astype(np.float64) + conv_ref(xi, wr, **ref_kw)))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4)
    text = kiln.jit(lambda x, w: lax.conv_general_dilated(x, w, **kw)).lower(xr + 1j * xi, wr + 1j * wi).as_text()
    convs = [line for line in text.splitlines() if "stablehlo.convolution" in line]
    assert len(convs) == 3 and not any("complex" in line for line in convs), convs
