"""kiln.nn.scaled_dot_general and get_scaled_dot_general_config against a NumPy implementation of the block
quantizers (ml_dtypes casts) and np.einsum of the dequantized operands."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from kiln.frontend.nn.scaled import BlockScaleConfig, _quantize

import kiln
import kiln.numpy as knp
from kiln import nn

F8, E8M0, F4 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn
BF16 = ml_dtypes.bfloat16


# -- the NumPy oracle -------------------------------------------------------------------------------------------
def np_quantize(x, mode, global_scale=1.0):
    """(B, M, K) -> data (B, M, K) and scales (B, M, K // block): mxfp8 scales are 2**ceil(log2(amax / 448))
    (clamped to e8m0's exponents -127..127), nvfp4's are amax / global_scale / 6 rounded to float8_e4m3fn.
    Each division by a per-block (or global) value is a multiplication by its reciprocal, as XLA computes JAX's."""
    b, m, k = x.shape
    recip = lambda v: np.float32(1) / v  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        if mode == "mxfp8":
            blocks = x.reshape(b, m, k // 32, 32)
            ratio = (np.abs(blocks).max(-1) * (x.dtype.type(1) / x.dtype.type(448))).astype(np.float64)  # x's dtype
            mant, exp = np.frexp(ratio)  # ratio = mant * 2**exp, mant in [0.5, 1)
            exp = np.where(mant == 0.5, exp - 1, exp)  # exact powers of two are not rounded up
            exp = np.clip(np.where(ratio == 0, -127, exp), -127, 127)
            scales = (2.0 ** exp).astype(np.float32).astype(E8M0)
            scaled = blocks.astype(np.float64) / 2.0 ** exp[..., None]
            data = np.clip(scaled, -448, 448).astype(np.float32).astype(F8)
        else:
            blocks = x.astype(np.float32).reshape(b, m, k // 16, 16) * recip(np.float32(global_scale))
            scales = np.clip(np.abs(blocks).max(-1) * recip(np.float32(6)), 0, 448).astype(F8)
            data = np.clip(blocks * recip(scales.astype(np.float32))[..., None], -6, 6).astype(F4)
    return data.reshape(b, m, k), scales


def np_dequantize(data, scales):
    block = data.shape[-1] // scales.shape[-1]
    return data.astype(np.float64) * np.repeat(scales.astype(np.float64), block, axis=-1)


def np_qdot(x3, y3, mode, gx=1.0, gy=1.0):
    """(B, M, K) x (B, N, K) -> (B, M, N) of the quantized-then-dequantized operands."""
    x, y = np_dequantize(*np_quantize(x3, mode, gx)), np_dequantize(*np_quantize(y3, mode, gy))
    out = np.einsum("bmk,bnk->bmn", x, y)
    return out * (np.float64(gx) * np.float64(gy) if mode == "nvfp4" else 1.0)


def np_to_3d(x, batch, free, contracting):
    t = np.transpose(x, list(batch) + list(free) + list(contracting))
    size = lambda dims: int(np.prod([x.shape[d] for d in dims]))  # noqa: E731
    return t.reshape(size(batch), size(free), size(contracting))


def np_layout(lshape, rshape, dn):
    """Each side's (batch, free, contracting) dimensions, the pairs in lhs's order, and the result's shape."""
    (lc, rc), (lb, rb) = dn
    bp, cp = sorted(zip(lb, rb)), sorted(zip(lc, rc))
    lb, rb, lc, rc = [p[0] for p in bp], [p[1] for p in bp], [p[0] for p in cp], [p[1] for p in cp]
    lf = [i for i in range(len(lshape)) if i not in lb + lc]
    rf = [i for i in range(len(rshape)) if i not in rb + rc]
    out = tuple(lshape[i] for i in lb + lf) + tuple(rshape[i] for i in rf)
    return (lb, lf, lc), (rb, rf, rc), out


def np_sdg(lhs, rhs, dn, mode, gx=1.0, gy=1.0):
    lays, rays, out_shape = np_layout(lhs.shape, rhs.shape, dn)
    return np_qdot(np_to_3d(lhs, *lays), np_to_3d(rhs, *rays), mode, gx, gy).reshape(out_shape)


def configs(mode, global_scale=None):
    return [nn.get_scaled_dot_general_config(mode, global_scale)] * 3


def _data(shape, seed, dtype=np.float32, spread=True):
    r = np.random.default_rng(seed)
    x = r.normal(size=shape)
    if spread:  # blocks of very different magnitudes, so the scales differ
        x *= 2.0 ** r.integers(-20, 20, size=shape[:-1] + (1,))
    return x.astype(dtype)


# -- get_scaled_dot_general_config -------------------------------------------------------------------------------
def test_get_scaled_dot_general_config():
    c = nn.get_scaled_dot_general_config("mxfp8")
    assert isinstance(c, BlockScaleConfig)
    assert (c.mode, c.block_size, c.data_type, c.scale_type, c.global_scale, c.infer_only) == \
        ("mxfp8", 32, F8, E8M0, None, False)
    assert nn.get_scaled_dot_general_config("mxfp8", knp.array([2.0])).global_scale is None
    c = nn.get_scaled_dot_general_config("nvfp4")
    assert (c.mode, c.block_size, c.data_type, c.scale_type, c.infer_only) == ("nvfp4", 16, F4, F8, False)
    assert c.global_scale.shape == (1,) and c.global_scale.dtype == np.float32 and float(c.global_scale[0]) == 1.0
    gs = knp.array([0.5], knp.float32)
    assert nn.get_scaled_dot_general_config("nvfp4", gs).global_scale is gs
    with pytest.raises(ValueError, match=r"unsupported mode 'fp8'; use 'mxfp8' or 'nvfp4'"):
        nn.get_scaled_dot_general_config("fp8")


# -- the quantizers, bit by bit -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode, shape, dtype, eager", [
    ("mxfp8", (1, 3, 32), np.float32, True), ("mxfp8", (2, 3, 96), np.float32, False),
    ("mxfp8", (2, 5, 64), BF16, False), ("mxfp8", (1, 4, 64), np.float16, False),
    ("nvfp4", (1, 1, 16), np.float32, True), ("nvfp4", (2, 3, 64), np.float32, False),
    ("nvfp4", (3, 2, 48), BF16, False),
])
def test_quantize_is_bit_exact(mode, shape, dtype, eager):
    x = _data(shape, 1, spread=dtype == np.float32)
    if mode == "mxfp8" and dtype == np.float32:
        blocks = x.reshape(-1, 32)
        blocks[0] = 448.0 * 2.0 ** np.arange(-16, 16)  # amax / 448 an exact power of two: not rounded up
        if len(blocks) > 2:
            blocks[1] = 0.0  # a block of zeros quantizes to zeros, scale 2**-127
            blocks[2] *= 2.0 ** -120  # scales among the subnormal float32s
    gs = 0.25 if mode == "nvfp4" else None
    config = nn.get_scaled_dot_general_config(mode, None if gs is None else knp.array([gs], knp.float32))
    want_data, want_scales = np_quantize(x.astype(dtype), mode, gs or 1.0)
    quantize = lambda v: _quantize(v, config, config.global_scale, "x")  # noqa: E731
    for fn in (quantize, kiln.jit(quantize)) if eager else (kiln.jit(quantize),):  # eager: a few cases
        data, scales = fn(knp.asarray(x.astype(dtype)))
        assert data.dtype == config.data_type and scales.dtype == config.scale_type
        np.testing.assert_array_equal(np.asarray(scales).view(np.uint8), want_scales.view(np.uint8))
        np.testing.assert_array_equal(np.asarray(data).view(np.uint8), want_data.view(np.uint8))


# -- the product ------------------------------------------------------------------------------------------------
DIMENSION_NUMBERS = [
    ((2, 3, 64), (2, 5, 64), (((2,), (2,)), ((0,), (0,)))),        # (B, M, K) x (B, N, K)
    ((3, 64), (64, 4), (((1,), (0,)), ((), ()))),                  # a matrix product, no batch
    ((4, 2, 16), (2, 16, 3), (((1, 2), (0, 1)), ((), ()))),        # two contracting dimensions (K = 32)
    ((2, 3, 32, 2), (3, 2, 4, 32), (((2,), (3,)), ((0, 1), (1, 0)))),  # two batch dimensions, paired crosswise
    ((16, 2, 3), (2, 5, 2, 16), (((1, 0), (2, 3)), ((), ()))),     # contracting pairs listed out of order
]


@pytest.mark.parametrize("case", range(len(DIMENSION_NUMBERS)))
def test_scaled_dot_general_matches_numpy(case):
    lshape, rshape, dn = DIMENSION_NUMBERS[case]
    lhs, rhs = _data(lshape, 2, spread=False), _data(rshape, 3, spread=False)
    # The dot_general reference fixes the result's layout; the quantized values are close to it.
    exact = np.asarray(kiln.lax.dot_general(lhs, rhs, dn))
    modes = ("mxfp8", "nvfp4")
    both = lambda a, b: [nn.scaled_dot_general(a, b, dn, configs=configs(m)) for m in modes]  # noqa: E731
    for fn in (both, kiln.jit(both)) if case == 0 else (kiln.jit(both),):  # eager: the first case
        for mode, got in zip(modes, fn(lhs, rhs)):
            want = np_sdg(lhs, rhs, dn, mode)
            assert got.dtype == np.float32 and got.shape == want.shape == exact.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
            rel = np.abs(np.asarray(got) - exact).max() / np.abs(exact).max()
            assert rel < (0.1 if mode == "mxfp8" else 0.4)


def test_preferred_element_type_and_global_scale():
    lhs, rhs = _data((2, 3, 64), 4, spread=False), _data((2, 5, 64), 5, spread=False)
    dn = (((2,), (2,)), ((0,), (0,)))
    got = nn.scaled_dot_general(lhs, rhs, dn, preferred_element_type=knp.bfloat16, configs=configs("mxfp8"))
    assert got.dtype == knp.bfloat16
    np.testing.assert_allclose(np.asarray(got).astype(np.float32), np_sdg(lhs, rhs, dn, "mxfp8"), rtol=1e-2)
    got = nn.scaled_dot_general(lhs.astype(BF16), rhs.astype(BF16), dn, preferred_element_type=np.float16,
                                configs=configs("mxfp8"))
    assert got.dtype == np.float16
    want = np_sdg(lhs.astype(BF16), rhs.astype(BF16), dn, "mxfp8")
    np.testing.assert_allclose(np.asarray(got).astype(np.float32), want, rtol=2e-3, atol=2e-3)
    # nvfp4 with global scales: data divided by them, the product multiplied back; traced under jit.
    gl, gr = np.float32(0.03125), np.float32(0.125)

    def f(a, b, sl, sr):
        cl, cr = (nn.get_scaled_dot_general_config("nvfp4", s) for s in (sl, sr))
        return nn.scaled_dot_general(a, b, dn, preferred_element_type=knp.bfloat16, configs=[cl, cr, cl])
    for fn in (f, kiln.jit(f)):
        got = fn(lhs, rhs, np.array([gl]), np.array([gr]))
        assert got.dtype == knp.bfloat16
        np.testing.assert_allclose(np.asarray(got).astype(np.float32), np_sdg(lhs, rhs, dn, "nvfp4", gl, gr),
                                   rtol=1e-2, atol=1e-2)


def test_configs_none_is_dot_general_and_implementation_is_deprecated():
    lhs, rhs = _data((3, 4), 6, spread=False), _data((4, 2), 7, spread=False)
    dn = (((1,), (0,)), ((), ()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nn.scaled_dot_general(lhs, rhs, dn)  # no quantization, and any K
    np.testing.assert_allclose(np.asarray(got), lhs @ rhs, rtol=1e-6)
    with pytest.warns(DeprecationWarning, match="implementation= is deprecated and ignored"):
        nn.scaled_dot_general(lhs, rhs, dn, implementation="cudnn")


# -- the gradient ------------------------------------------------------------------------------------------------
def np_vjp(lhs, rhs, dn, ct, mode, gx=1.0, gy=1.0):
    """JAX's rule: lhs_ct = q(ct) @ q(rhs) contracting N, rhs_ct = q(ct^T) @ q(lhs) contracting M; nvfp4
    multiplies unquantized and zeroes the cotangent of entries above global_scale * 6 * 448."""
    lays, rays, _ = np_layout(lhs.shape, rhs.shape, dn)
    l3, r3 = np_to_3d(lhs, *lays), np_to_3d(rhs, *rays)
    g3 = ct.reshape(l3.shape[0], l3.shape[1], r3.shape[1]).astype(np.float64)
    sw = lambda v: np.swapaxes(v, 1, 2)  # noqa: E731
    if mode == "mxfp8":
        dl3, dr3 = np_qdot(g3, sw(r3), mode), np_qdot(sw(g3), sw(l3), mode)
    else:
        dl3, dr3 = g3 @ r3, sw(g3) @ l3

    def back(d3, x, lay):
        perm = [d for dims in lay for d in dims]
        return np.transpose(d3.reshape([x.shape[d] for d in perm]), np.argsort(perm))
    dl, dr = back(dl3, lhs, lays), back(dr3, rhs, rays)
    if mode == "nvfp4":
        dl = np.where(np.abs(lhs) <= gx * 6 * 448, dl, 0)
        dr = np.where(np.abs(rhs) <= gy * 6 * 448, dr, 0)
    return dl, dr


@pytest.mark.parametrize("mode, lshape, rshape, dn", [
    ("mxfp8", (2, 32, 64), (2, 32, 64), (((2,), (2,)), ((0,), (0,)))),
    ("mxfp8", (64, 32), (2, 64, 32), (((0,), (1,)), ((), ()))),
    ("nvfp4", (2, 16, 32), (2, 16, 32), (((2,), (2,)), ((0,), (0,)))),
    ("nvfp4", (3, 2, 16), (16, 2, 5), (((2, 1), (0, 1)), ((), ()))),
])
def test_grad_is_jax_vjp_rule(mode, lshape, rshape, dn):
    lhs, rhs = _data(lshape, 8, spread=False), _data(rshape, 9, spread=False)
    gs = 0.0005 if mode == "nvfp4" else None  # nvfp4 clips |x| > gs * 6 * 448 = 1.344: those get no gradient
    if mode == "nvfp4":
        assert (np.abs(lhs) > gs * 6 * 448).any()
    cfg = configs(mode, None if gs is None else np.array([gs], np.float32))
    ct = _data(np.asarray(kiln.lax.dot_general(lhs, rhs, dn)).shape, 10)

    def vjp(a, b, g):
        return kiln.vjp(lambda x, y: nn.scaled_dot_general(x, y, dn, configs=cfg), a, b)[1](g)
    want = np_vjp(lhs, rhs, dn, ct, mode, gs or 1.0, gs or 1.0)
    for fn in (vjp, kiln.jit(vjp)) if lshape == (2, 16, 32) else (kiln.jit(vjp),):  # eager: one case
        for got, w in zip(fn(lhs, rhs, ct), want):
            assert got.dtype == np.float32 and got.shape == w.shape
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-6 * np.abs(w).max())
    # grad of a scalar loss: the same rule with an all-ones cotangent
    loss = lambda a: nn.scaled_dot_general(a, rhs, dn, configs=cfg).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(loss))(lhs)),
                               np_vjp(lhs, rhs, dn, np.ones_like(ct), mode, gs or 1.0, gs or 1.0)[0],
                               rtol=1e-5, atol=1e-6)


def test_grad_in_bfloat16_has_the_operand_dtype():
    lhs, rhs = _data((1, 32, 32), 11, BF16, spread=False), _data((1, 32, 32), 12, BF16, spread=False)
    dn = (((2,), (2,)), ((0,), (0,)))
    g = kiln.jit(kiln.grad(lambda a: nn.scaled_dot_general(a, rhs, dn, preferred_element_type=knp.bfloat16,
                                                           configs=configs("mxfp8")).astype(np.float32).sum()))(lhs)
    assert g.dtype == knp.bfloat16
    want = np_vjp(lhs.astype(np.float32), rhs.astype(np.float32), dn, np.ones((1, 32, 32)), "mxfp8")[0]
    np.testing.assert_allclose(np.asarray(g).astype(np.float32), want, rtol=1e-2)


# -- vmap -------------------------------------------------------------------------------------------------------
def test_vmap_matches_a_loop():
    lhs, rhs = _data((3, 32, 32), 13), _data((3, 32, 32), 14)
    dn = (((1,), (1,)), ((), ()))
    cfg = configs("mxfp8")
    f = lambda a, b: nn.scaled_dot_general(a, b, dn, configs=cfg)  # noqa: E731
    got = kiln.vmap(f)(lhs, rhs)
    np.testing.assert_allclose(np.asarray(got), np.stack([np_sdg(lhs[i], rhs[i], dn, "mxfp8") for i in range(3)]),
                               rtol=1e-5, atol=1e-6 * np.abs(np.asarray(got)).max())
    # rhs shared (in_axes None), and the gradient under vmap
    g = kiln.jit(kiln.vmap(kiln.grad(lambda a, b: f(a, b).sum()), in_axes=(0, None)))(lhs, rhs[0])
    want = [np_vjp(lhs[i], rhs[0], dn, np.ones((32, 32)), "mxfp8")[0] for i in range(3)]
    np.testing.assert_allclose(np.asarray(g), np.stack(want), rtol=1e-5, atol=1e-6 * np.abs(want).max())


# -- errors -----------------------------------------------------------------------------------------------------
_DN = (((2,), (2,)), ((0,), (0,)))
_X = np.ones((1, 2, 32), np.float32)


def _mixed():
    return [nn.get_scaled_dot_general_config("mxfp8"), nn.get_scaled_dot_general_config("nvfp4")]


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.scaled_dot_general(_X, _X, _DN, preferred_element_type=np.int32, configs=configs("mxfp8")),
     TypeError, "preferred_element_type must be float32, bfloat16 or float16, got <class 'numpy.int32'>"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, preferred_element_type=None, configs=configs("mxfp8")),
     TypeError, "preferred_element_type must be float32, bfloat16 or float16, got None"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=nn.get_scaled_dot_general_config("mxfp8")),
     TypeError, r"configs must be a list of BlockScaleConfig for lhs, rhs and the gradient"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=["mxfp8"] * 3),
     TypeError, r"configs\[0\] is a str, not a BlockScaleConfig"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=[BlockScaleConfig("fp8", 32, F8, E8M0, None, False)] * 2),
     ValueError, r"configs\[0\] has mode 'fp8'; the modes are 'mxfp8' and 'nvfp4'"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=[BlockScaleConfig("mxfp8", 32, F8, F8, None, False)] * 2),
     ValueError, r"configs\[0\] \(mxfp8\) must have scale_type float8_e8m0fnu, got float8_e4m3fn"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=configs("nvfp4", np.array([1.0], np.float16))),
     ValueError, r"configs\[0\] is nvfp4, whose global_scale must be a float32 array of one element"),
    (lambda: nn.scaled_dot_general(_X, _X, _DN, configs=_mixed()),
     ValueError, "the configs must share one mode and one block_size.*mxfp8/32, nvfp4/16"),
    (lambda: nn.scaled_dot_general(np.ones((1, 2, 48)), np.ones((1, 2, 48)), _DN, configs=configs("mxfp8")),
     ValueError, "lhs has 48 elements along the quantized dimension, which must be a multiple of the block size "
                 r"32 \(mxfp8\)"),
    (lambda: nn.scaled_dot_general(np.ones((1, 2, 32), np.int32), _X, _DN, configs=configs("mxfp8")),
     TypeError, "lhs must be a floating-point array .*got int32"),
    (lambda: nn.scaled_dot_general(_X, _X, (((2,), (2,)), ((0,), ())), configs=configs("mxfp8")),
     ValueError, r"must come in pairs"),
    (lambda: nn.scaled_dot_general(_X, _X, (((), ()), ((0,), (0,))), configs=configs("mxfp8")),
     ValueError, "at least one contracting dimension is needed"),
    (lambda: nn.scaled_dot_general(_X, _X, (((3,), (2,)), ((0,), (0,))), configs=configs("mxfp8")),
     ValueError, r"the lhs contracting and batch dimensions \(3, 0\) must be distinct dimensions of its shape"),
    (lambda: nn.scaled_dot_general(_X, np.ones((1, 2, 64), np.float32), _DN, configs=configs("mxfp8")),
     ValueError, r"lhs dimension 2 \(32\) and rhs dimension 2 \(64\) are paired but differ in size"),
    (lambda: nn.scaled_dot_general(_X, _X, "ij,ij", configs=configs("mxfp8")),
     TypeError, r"dimension_numbers must be \(\(lhs_contracting, rhs_contracting\), \(lhs_batch, rhs_batch\)\)"),
    # The gradient quantizes the cotangent along N (lhs) and M (rhs): they too must be multiples of the block.
    (lambda: kiln.jit(kiln.grad(lambda a: nn.scaled_dot_general(a, _X, _DN, configs=configs("mxfp8")).sum()))(_X),
     ValueError, r"the output cotangent \(lhs gradient\) has 2 elements along the quantized dimension"),
    (lambda: kiln.jit(kiln.grad(lambda a: nn.scaled_dot_general(a, _X, _DN, configs=configs("mxfp8")[:2]).sum()))(_X),
     ValueError, "differentiating needs a third config, for the gradient"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
