"""``precision=`` reaches the compiled program: every entry point's StableHLO carries JAX's ``precision = [...]``
(``[DEFAULT, DEFAULT]`` for None, as JAX writes) or a dot algorithm's ``algorithm = <...>`` (the operands cast to
its types, as JAX's lowering does; the algorithms XLA's CPU backend lacks refused there, as JAX refuses them),
derivatives and ``vmap`` keep it, and the ``default_matmul_precision`` flag decides it where a call gives None (and
is part of jit's cache key)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from kiln.frontend.lax.precision import swap_precision

import kiln
import kiln.export
import kiln.numpy as knp
import kiln.scipy.signal
from kiln import lax

P = lax.Precision
HIGHEST, HIGH, DEFAULT = ("HIGHEST", "HIGHEST"), ("HIGHEST", "HIGH"), ("DEFAULT", "DEFAULT")

rng = np.random.default_rng(0)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(4, 5)).astype(np.float32)
U = rng.normal(size=(4,)).astype(np.float32)
IMG = rng.normal(size=(1, 2, 6, 6)).astype(np.float32)
KER = rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
X1, V1 = rng.normal(size=(9,)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)

_DOT = re.compile(r"stablehlo\.dot_general .*?precision = \[(\w+), (\w+)\]")
_CONV = re.compile(r"stablehlo\.convolution.*?precision_config = \[#stablehlo<precision (\w+)>, "
                   r"#stablehlo<precision (\w+)>\]")


def _emitted(fn, *args) -> list[tuple[str, str]]:
    """The (lhs, rhs) precisions of every dot_general and convolution of ``kiln.jit(fn)``'s module, in order;
    fails if one of them has no precision."""
    text = kiln.jit(fn).lower(*args).as_text()
    ops = [line for line in text.splitlines() if "stablehlo.dot_general" in line or "stablehlo.convolution" in line]
    found = [m.groups() for line in ops for m in [_DOT.search(line) or _CONV.search(line)] if m]
    assert len(found) == len(ops), f"an operation without precision in:\n{text}"
    assert found, f"no dot_general or convolution in:\n{text}"
    return found


# name -> (function of precision, its arguments)
DOT_ENTRY_POINTS = {
    "lax.dot_general": (lambda p: lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=p), (A, B)),
    "lax.dot": (lambda p: lambda a, b: lax.dot(a, b, precision=p), (A, B)),
    "lax.dot dimension_numbers": (
        lambda p: lambda a, b: lax.dot(a, b, dimension_numbers=(((1,), (0,)), ((), ())), precision=p), (A, B)),
    "lax.batch_matmul": (lambda p: lambda a, b: lax.batch_matmul(a[None], b[None], precision=p), (A, B)),
    "numpy.matmul": (lambda p: lambda a, b: knp.matmul(a, b, precision=p), (A, B)),
    "numpy.dot": (lambda p: lambda a, b: knp.dot(a, b, precision=p), (A, B)),
    "Array.dot": (lambda p: lambda a, b: a.dot(b, precision=p), (A, B)),
    "numpy.vdot": (lambda p: lambda a, b: knp.vdot(a, b, precision=p), (A, A)),
    "numpy.vecdot": (lambda p: lambda a, b: knp.vecdot(a, b, precision=p), (A, A)),
    "numpy.inner": (lambda p: lambda a, b: knp.inner(a, b, precision=p), (A, U)),
    "numpy.tensordot": (lambda p: lambda a, b: knp.tensordot(a, b, 1, precision=p), (A, B)),
    "numpy.einsum": (lambda p: lambda a, b: knp.einsum("ij,jk->ik", a, b, precision=p), (A, B)),
    "numpy.einsum three operands": (lambda p: lambda a, b: knp.einsum("ij,jk,k->i", a, b, b[0], precision=p), (A, B)),
    "numpy.linalg.matmul": (lambda p: lambda a, b: knp.linalg.matmul(a, b, precision=p), (A, B)),
    "numpy.linalg.multi_dot": (lambda p: lambda a, b: knp.linalg.multi_dot([a, b, b.T], precision=p), (A, B)),
}
CONV_ENTRY_POINTS = {
    "lax.conv_general_dilated": (
        lambda p: lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME", precision=p), (IMG, KER)),
    "lax.conv": (lambda p: lambda x, k: lax.conv(x, k, (2, 1), "VALID", precision=p), (IMG, KER)),
    "lax.conv_with_general_padding": (lambda p: lambda x, k: lax.conv_with_general_padding(
        x, k, (1, 1), [(1, 0), (0, 1)], (2, 1), (1, 2), precision=p), (IMG, KER)),
    "lax.conv_transpose": (lambda p: lambda x, k: lax.conv_transpose(
        x, k, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=p), (IMG, KER[:, :2])),
    "numpy.convolve": (lambda p: lambda a, v: knp.convolve(a, v, precision=p), (X1, V1)),
    "numpy.correlate": (lambda p: lambda a, v: knp.correlate(a, v, "full", precision=p), (X1, V1)),
    "scipy.signal.convolve": (lambda p: lambda a, v: kiln.scipy.signal.convolve(a, v, precision=p), (X1, V1)),
    "scipy.signal.correlate2d": (
        lambda p: lambda a, v: kiln.scipy.signal.correlate2d(a, v, precision=p), (IMG[0, 0], KER[0, 0])),
}
ENTRY_POINTS = {**DOT_ENTRY_POINTS, **CONV_ENTRY_POINTS}


@pytest.mark.parametrize("precision,expected", [
    (None, DEFAULT), ("highest", HIGHEST), (P.HIGHEST, HIGHEST), ("tensorfloat32", ("HIGH", "HIGH")),
    ((P.HIGHEST, P.HIGH), HIGH), (("default", "float32"), ("DEFAULT", "HIGHEST")),
], ids=repr)
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_points_emit_the_precision(name, precision, expected):
    make, args = ENTRY_POINTS[name]
    assert set(_emitted(make(precision), *args)) == {expected}


def test_matmul_operator_emits_jax_default():
    assert _emitted(lambda a, b: a @ b, A, B) == [DEFAULT]
    assert _emitted(lambda a, b: knp.asarray(a) @ knp.asarray(b), A, B) == [DEFAULT]


def test_module_text_of_a_highest_matmul():
    text = kiln.jit(lambda a, b: knp.matmul(a, b, precision="highest")).lower(A, B).as_text()
    assert ("stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : "
            "(tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>") in text


def test_jaxpr_shows_the_precision_as_jax():
    jaxpr = str(kiln.make_jaxpr(lambda a, b: knp.matmul(a, b, precision="highest"))(A, B))
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in jaxpr
    assert "precision" not in str(kiln.make_jaxpr(lambda a, b: a @ b)(A, B))  # None is not shown, as JAX


def _algorithms(fn, *args) -> list[tuple[str, str, str, str]]:
    """(lhs, rhs, accumulation type, primitive operations) of the ``algorithm`` of every dot_general of
    ``kiln.jit(fn)``'s module, in order (those without one left out)."""
    text = kiln.jit(fn).lower(*args).as_text()
    return re.findall(r"algorithm = <lhs_precision_type = (\w+), rhs_precision_type = (\w+), accumulation_type = "
                      r"(\w+), lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = (\d+), "
                      r"allow_imprecise_accumulation = false>", text)


@pytest.mark.parametrize("algorithm,expected", [
    (lax.DotAlgorithmPreset.F32_F32_F32, ("f32", "f32", "f32", "1")), ("BF16_BF16_F32", ("bf16", "bf16", "f32", "1")),
    ("BF16_BF16_F32_X6", ("bf16", "bf16", "f32", "6")), ("F64_F64_F64", ("f64", "f64", "f64", "1")),
], ids=str)
@pytest.mark.parametrize("name", list(DOT_ENTRY_POINTS))
def test_dot_algorithms_are_emitted_as_jax(name, algorithm, expected):
    # StableHLO's algorithm attribute, with JAX's precision_config beside it ([DEFAULT, DEFAULT])
    make, args = DOT_ENTRY_POINTS[name]
    assert set(_emitted(make(algorithm), *args)) == {DEFAULT}
    assert set(_algorithms(make(algorithm), *args)) == {expected}


def test_dot_algorithm_casts_and_results_as_jax():
    # The operands go to the algorithm's storage types (float32 stays float32 under BF16_BF16_F32, as JAX keeps it),
    # the product comes in its accumulation type and is converted to the result's dtype.
    text = kiln.jit(lambda a, b: knp.dot(a, b, precision="F16_F16_F16")).lower(A, B).as_text()
    assert "stablehlo.convert %arg0 : (tensor<3x4xf32>) -> tensor<3x4xf16>" in text
    assert re.search(r"-> tensor<3x5xf16>\n.*stablehlo.convert %\d+ : \(tensor<3x5xf16>\) -> tensor<3x5xf32>", text)
    assert "convert" not in kiln.jit(lambda a, b: knp.dot(a, b, precision="BF16_BF16_F32")).lower(A, B).as_text()
    exact = A.astype(np.float64) @ B.astype(np.float64)
    # F64_F64_F64: float64 products of the float32 operands, rounded once to float32
    np.testing.assert_array_max_ulp(np.asarray(knp.dot(A, B, precision="F64_F64_F64")), exact.astype(np.float32), 0)
    # F16_F16_F16: float16 operands and arithmetic, so float16's error (float32's result is 1000 times closer)
    a16, b16 = A.astype(np.float16).astype(np.float64), B.astype(np.float16).astype(np.float64)
    got = np.asarray(knp.dot(A, B, precision="F16_F16_F16"), np.float64)
    assert got.dtype == np.float64 and np.abs(got - a16 @ b16).max() < 4 * 2.0 ** -10 * np.abs(exact).max()
    assert np.abs(got - exact).max() > 100 * np.abs(np.asarray(knp.dot(A, B), np.float64) - exact).max()
    # a float16 product keeps its dtype; preferred_element_type keeps the accumulator's
    a16, b16 = A.astype(np.float16), B.astype(np.float16)
    assert knp.dot(a16, b16, precision="F16_F16_F16").dtype == np.float16
    assert knp.dot(a16, b16, precision="F16_F16_F16", preferred_element_type=np.float32).dtype == np.float32


def test_dot_algorithm_in_the_jaxpr_and_derivatives_as_jax():
    def loss(a, b):
        return (knp.dot(a, b, precision="BF16_BF16_F32") ** 2).sum()
    assert "precision=BF16_BF16_F32" in str(kiln.make_jaxpr(loss)(A, B))
    jaxpr = str(kiln.make_jaxpr(kiln.grad(loss, argnums=(0, 1)))(A, B))
    assert jaxpr.count("precision=BF16_BF16_F32") == 3  # the forward dot and both transposes: unchanged
    assert _algorithms(kiln.grad(loss, argnums=(0, 1)), A, B) == [("bf16", "bf16", "f32", "1")] * 3
    assert _algorithms(kiln.vmap(lambda a, b: knp.dot(a, b, precision="BF16_BF16_F32"), (0, None)),
                       np.stack([A, A]), B) == [("bf16", "bf16", "f32", "1")]
    # a DotAlgorithm names each operand's type: the transpose that swaps the operands swaps them
    alg = lax.DotAlgorithm(np.float16, np.float32, np.float32)
    assert swap_precision(alg) == lax.DotAlgorithm(np.float32, np.float16, np.float32)
    assert swap_precision(lax.DotAlgorithmPreset.TF32_TF32_F32) is lax.DotAlgorithmPreset.TF32_TF32_F32


@pytest.mark.parametrize("algorithm", ["TF32_TF32_F32", "F16_F16_F32", "BF16_BF16_F32_X9", "ANY_F8_ANY_F8_F32",
                                       lax.DotAlgorithm(np.float32, np.float32, np.float32)], ids=str)
def test_dot_algorithms_the_cpu_lacks_are_refused(algorithm):
    if kiln.devices()[0].platform != "cpu":
        pytest.skip("the CPU backend's check")
    # JAX's ValueError and message, with what to do instead
    for call in (lambda: knp.dot(A, B, precision=algorithm),
                 lambda: kiln.jit(lambda a, b: lax.dot(a, b, precision=algorithm)).lower(A, B)):
        with pytest.raises(ValueError, match=re.escape(f"The precision '{algorithm}' is not supported by dot_general "
                                                       "on CPU")) as e:
            call()
        assert "F32_F32_F32" in str(e.value) and "kiln.lax.Precision" in str(e.value)
    np.testing.assert_allclose(np.asarray(knp.dot(A, B)), A @ B, rtol=1e-5, atol=1e-5)  # nothing left behind


def test_float8_algorithm_needs_float8_operands():
    # (lowered for CUDA, which has the float8 algorithms): JAX's message, and what to do
    f = kiln.jit(lambda a, b: knp.dot(a, b, precision="ANY_F8_ANY_F8_F32"))
    with pytest.raises(ValueError, match=r"The dot algorithm 'ANY_F8_ANY_F8_F32' requires both inputs to have float8 "
                                         r"dtypes. Got float32 and float32 instead: cast both operands to a float8"):
        kiln.export.export(f, platforms=("cuda",))(A, B)
    f8 = np.dtype(kiln.numpy.float8_e4m3fn)
    text = kiln.export.export(f, platforms=("cuda",))(A.astype(f8), B.astype(f8)).mlir_module()
    assert re.search(r"algorithm = <lhs_precision_type = f8E4M3FN, rhs_precision_type = f8E4M3FN, accumulation_type = "
                     r"f32.*-> tensor<3x5xf8E4M3FN>", text), text


# -- derivatives and vmap ---------------------------------------------------------------------------------------


def _dot_loss(p):
    return lambda a, b: (lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=p) ** 2).sum()


def _conv_loss(p):
    return lambda x, k: (lax.conv_general_dilated(x, k, (2, 1), [(1, 1), (0, 2)], rhs_dilation=(1, 2),
                                                  precision=p) ** 2).sum()


@pytest.mark.parametrize("loss,args", [(_dot_loss, (A, B)), (_conv_loss, (IMG, KER))], ids=["dot", "conv"])
def test_grad_keeps_the_precision(loss, args):
    found = _emitted(kiln.grad(loss("highest"), argnums=(0, 1)), *args)
    assert len(found) == 3 and set(found) == {HIGHEST}  # forward, and one per operand's cotangent
    assert set(_emitted(kiln.grad(loss(None), argnums=(0, 1)), *args)) == {DEFAULT}


def test_dot_transposes_give_the_pair_as_jax():
    # JAX's transposes are dot_general(ct, other, precision=(p0, p1)) for both operands: the cotangent gets
    # the first entry, the other operand the second. kiln's y cotangent puts x first: the pair swaps.
    found = _emitted(kiln.grad(_dot_loss(("highest", "high")), argnums=(0, 1)), A, B)
    assert sorted(found) == sorted([HIGH, HIGH, ("HIGH", "HIGHEST")])
    text = kiln.jit(kiln.grad(_dot_loss(("highest", "high")), argnums=(0, 1))).lower(A, B).as_text()
    assert re.search(r"dot_general %arg0, %\w+, contracting_dims = \[0\] x \[0\], precision = \[HIGH, HIGHEST\]",
                     text), text


def test_conv_transposes_keep_the_pair_as_jax():
    found = _emitted(kiln.grad(_conv_loss(("highest", "high")), argnums=(0, 1)), IMG, KER)
    assert found == [HIGH] * 3


def test_jvp_and_linearize_keep_the_precision():
    f = _dot_loss("highest")
    found = _emitted(lambda a, b, ta, tb: kiln.jvp(f, (a, b), (ta, tb)), A, B, A, B)
    assert len(found) == 3 and set(found) == {HIGHEST}
    g = lambda x, k: lax.conv(x, k, (1, 1), "SAME", precision=P.HIGH)  # noqa: E731
    found = _emitted(lambda x, k, t: kiln.jvp(lambda k: g(x, k), (k,), (t,)), IMG, KER, KER)
    assert set(found) == {("HIGH", "HIGH")}


def test_second_derivatives_keep_the_precision():
    h = kiln.hessian(lambda a: _dot_loss("highest")(a, B))
    assert set(_emitted(h, A)) == {HIGHEST}


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_vmap_keeps_the_precision(in_axes):
    f = kiln.vmap(lambda a, b: knp.matmul(a, b, precision=("highest", "high")), in_axes=in_axes)
    args = [np.stack([x, x]) if ax == 0 else x for x, ax in zip((A, B), in_axes)]
    assert _emitted(f, *args) == [HIGH]
    c = kiln.vmap(lambda x, k: lax.conv(x, k, (1, 1), "SAME", precision="highest"), in_axes=in_axes)
    args = [np.stack([x, x]) if ax == 0 else x for x, ax in zip((IMG, KER), in_axes)]
    assert set(_emitted(c, *args)) == {HIGHEST}


def test_vmap_of_grad_keeps_the_precision():
    f = kiln.vmap(kiln.grad(_dot_loss("highest")), in_axes=(0, None))
    assert set(_emitted(f, np.stack([A, A]), B)) == {HIGHEST}


# -- default_matmul_precision -------------------------------------------------------------------------------------


def test_default_matmul_precision_context_manager_changes_the_program_and_retraces():
    traces = []

    def f(a, b):
        traces.append(1)
        return a @ b

    jf, g = kiln.jit(f), lambda a, b: a @ b
    assert _emitted(g, A, B) == [DEFAULT]
    jf(A, B)
    with kiln.default_matmul_precision("float32"):
        assert kiln.default_matmul_precision.value == "float32"
        assert _emitted(g, A, B) == [HIGHEST]
        jf(A, B)
        assert len(traces) == 2  # retraced: the flag is part of the cache key
        assert _emitted(lambda a, b: knp.matmul(a, b, precision="high"), A, B) == [("HIGH", "HIGH")]  # explicit wins
        assert set(_emitted(lambda x, k: lax.conv(x, k, (1, 1), "SAME"), IMG, KER)) == {HIGHEST}
        # an explicit dot algorithm is kept, not replaced by the flag
        assert _emitted(lambda a, b: lax.dot(a, b, precision="F32_F32_F32"), A, B) == [DEFAULT]
        assert _algorithms(lambda a, b: lax.dot(a, b, precision="F32_F32_F32"), A, B) == [("f32", "f32", "f32", "1")]
    with kiln.default_matmul_precision("bfloat16"):
        assert _emitted(g, A, B) == [DEFAULT]
    jf(A, B)
    assert len(traces) == 2  # back to the first program


def test_default_matmul_precision_applies_to_eager_calls():
    with kiln.default_matmul_precision("tensorfloat32"):
        text = knp.matmul.lower(A, B).as_text()
        out = knp.matmul(A, B)
    assert "precision = [HIGH, HIGH]" in text
    np.testing.assert_allclose(np.asarray(out), A @ B, rtol=1e-5, atol=1e-5)


def test_default_matmul_precision_config_flag():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enforced now: no "has no effect" warning
        kiln.config.update("jax_default_matmul_precision", "highest")
    try:
        assert kiln.config.default_matmul_precision == "highest"
        assert _emitted(lambda a, b: knp.dot(a, b), A, B) == [HIGHEST]
        kiln.config.update("jax_default_matmul_precision", "BF16_BF16_F32_X3")  # an algorithm's name
        assert _emitted(lambda a, b: knp.dot(a, b), A, B) == [DEFAULT]
        assert _algorithms(lambda a, b: knp.dot(a, b), A, B) == [("bf16", "bf16", "f32", "3")]
        assert set(_emitted(lambda x, k: lax.conv(x, k, (1, 1), "SAME"), IMG, KER)) == {DEFAULT}  # as JAX's convs
    finally:
        kiln.config.update("jax_default_matmul_precision", None)
    assert _emitted(lambda a, b: knp.dot(a, b), A, B) == [DEFAULT]


def test_conv_patches_keep_none_under_the_flag_as_jax():
    f = lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID")  # noqa: E731
    g = lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID", precision="highest")  # noqa: E731
    with kiln.default_matmul_precision("highest"):
        assert _emitted(f, IMG) == [HIGHEST]
    assert _emitted(g, IMG) == [("HIGHEST", "DEFAULT")]


def test_bad_default_matmul_precision_is_a_clear_error():
    with pytest.raises(ValueError, match=r"kiln\.config\.update\('jax_default_matmul_precision', 'fast'\): "
                                         r"expected one of None, 'default', .*'float32'"):
        kiln.config.update("jax_default_matmul_precision", "fast")
    with pytest.raises(ValueError, match=r"expected one of"), kiln.default_matmul_precision("nope"):
        pass
    assert kiln.config.default_matmul_precision is None


# -- numbers ------------------------------------------------------------------------------------------------------


def test_highest_is_accurate_against_float64():
    a = rng.normal(size=(64, 512)).astype(np.float32)
    b = rng.normal(size=(512, 48)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    for out in (knp.matmul(a, b, precision="highest"), kiln.jit(lambda a, b: knp.dot(a, b, precision=P.HIGHEST))(a, b),
                lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision="float32")):
        err = np.abs(np.asarray(out, np.float64) - exact) / scale
        assert err.max() < 1e-5, err.max()
    k = rng.normal(size=(4, 3, 5, 5)).astype(np.float32)
    x = rng.normal(size=(2, 3, 16, 16)).astype(np.float32)
    out = np.asarray(lax.conv(x, k, (1, 1), "VALID", precision="highest"), np.float64)
    x64, k64 = x.astype(np.float64), k.astype(np.float64)
    ref = np.zeros_like(out)
    for i in range(12):
        for j in range(12):
            ref[:, :, i, j] = np.einsum("nchw,ochw->no", x64[:, :, i:i + 5, j:j + 5], k64)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
