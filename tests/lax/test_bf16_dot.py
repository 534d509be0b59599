"""bfloat16 dots on a CPU that multiplies bf16 natively (AVX512-BF16, AMX, Arm's BF16): kiln asks XLA for an f32
result and rounds it to bf16 (XLA's bf16 kernel, about twice as fast there as the f32 dot XLA otherwise converts
to; on other CPUs it is slower, and kiln emits JAX's dot). The result is within f32 accumulation error of the exact
product's bf16 rounding either way; HIGHEST precision, other dtypes and other backends keep the plain dot."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from kiln.runtime import backends, compile_cache

import kiln
import kiln.numpy as knp
from kiln import lax

BF16 = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(0)


def _bf16(*shape):
    return rng.standard_normal(shape).astype(BF16)


def _dots(fn, *args) -> list[str]:
    """The result element types of the dot_generals in ``kiln.jit(fn)``'s StableHLO."""
    text = kiln.jit(fn).lower(*args).as_text()
    return re.findall(r"stablehlo\.dot_general .*-> tensor<[\dx]*(\w+)>", text)


def _error_bound(a, b):
    """How far a bf16 result of ``a @ b`` accumulated in f32 may be from the exact product: half a bf16 ulp of it, plus
    a few f32 roundings of the sum of the products' magnitudes (where a bf16 accumulation would be 2**16 times off)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    half_ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 1e-30))) - 8)
    return exact, half_ulp + 8 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))


def _check(got, a, b):
    exact, bound = _error_bound(a, b)
    err = np.abs(np.asarray(got).astype(np.float64) - exact)
    assert (err <= bound).all(), np.max(err / bound)


def test_a_bf16_matmul_rounds_an_f32_product():
    a, b = _bf16(96, 200), _bf16(200, 64)
    got = kiln.jit(lambda x, y: x @ y)(a, b)
    assert got.dtype == BF16
    _check(got, a, b)


@pytest.mark.parametrize("fn", [
    lambda x, y: x @ y,
    lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=BF16),
    lambda x, y: knp.einsum("ij,jk->ik", x, y),
])
@pytest.mark.parametrize("native", [True, False], ids=["native-bf16-cpu", "other-cpu"])
def test_cpu_emits_an_f32_dot_then_a_convert_where_it_multiplies_bf16(fn, native, monkeypatch):
    monkeypatch.setattr(backends, "_native_bf16", [native])
    want = ["f32"] if kiln.devices()[0].platform == "cpu" and native else ["bf16"]
    assert _dots(fn, _bf16(8, 16), _bf16(16, 4)) == want
    got = kiln.jit(fn)(*(a := _bf16(8, 16), b := _bf16(16, 4)))
    assert got.dtype == BF16
    _check(got, a, b)


@pytest.mark.parametrize("lines, native", [
    (["flags\t\t: fpu sse2 avx2 avx512f avx512_bf16"], True), (["flags\t\t: fpu amx_bf16 amx_tile"], True),
    (["Features\t: fp asimd bf16 i8mm"], True), (["flags\t\t: fpu sse2 avx2 fma"], False),
    (["flags\t\t: fpu avx512f avx512bw"], False), (["model name\t: bf16 in a name only"], False), ([], False)])
def test_native_bf16_is_read_from_the_cpu_flags(lines, native, monkeypatch):
    monkeypatch.setattr(compile_cache, "_host_cpu", lambda: "x86_64\n" + "\n".join(lines))
    monkeypatch.setattr(backends, "_native_bf16", [])
    assert backends.cpu_has_native_bf16() is native


@pytest.mark.parametrize("fn, args", [
    (lambda x, y: lax.dot(x, y, precision=lax.Precision.HIGHEST), (_bf16(8, 16), _bf16(16, 4))),
    (lambda x, y: x @ y, (np.ones((8, 16), np.float16), np.ones((16, 4), np.float16))),  # no native f16 kernel
    (lambda x, y: x @ y, (_bf16(8, 16), np.ones((16, 4), np.float32))),  # promoted to f32 first
])
def test_other_dots_stay_as_they_are(fn, args):
    out = kiln.jit(fn).lower(*args).out_info
    dtype = str(np.dtype(kiln.tree_util.tree_leaves(out)[0].dtype))
    assert _dots(fn, *args) == [{"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[dtype]]


def test_batched_and_differentiated_bf16_dots():
    a, b = _bf16(3, 10, 12), _bf16(3, 12, 5)
    got = np.asarray(kiln.vmap(lambda x, y: x @ y)(a, b))
    for i in range(3):
        _check(got[i], a[i], b[i])
    # d/da sum(a @ b) = ones @ b.T: every row of the gradient is b's row sums
    ga = kiln.grad(lambda x: (x @ b[0]).astype(np.float32).sum())(a[0])
    assert ga.dtype == BF16
    _check(ga, np.ones((10, 5), BF16), b[0].T)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((1, 1), (1, 1)), ((3, 5), (5, 7)), ((17, 33), (33, 9)), ((1, 300), (300, 1)), ((300,), (300,)),
    ((31, 65), (65,)), ((0, 4), (4, 5)), ((4, 0), (0, 5)), ((2, 3, 8, 16), (16, 5)),
])
def test_bf16_matmuls_of_every_shape_kind(a_shape, b_shape):
    a, b = _bf16(*a_shape), _bf16(*b_shape)
    got = kiln.jit(lambda x, y: x @ y)(a, b)
    assert got.dtype == BF16 and got.shape == (a.astype(np.float32) @ b.astype(np.float32)).shape
    if got.size:
        _check(got, a, b)
    if 0 in a_shape:  # an empty contraction sums nothing
        assert not np.asarray(got).astype(np.float32).any()


def test_a_batched_dot_general_of_bf16():
    a, b = _bf16(4, 6, 10), _bf16(4, 10, 3)
    got = np.asarray(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))))
    for i in range(4):
        _check(got[i], a[i], b[i])
