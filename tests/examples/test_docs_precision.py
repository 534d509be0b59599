"""JAX's docs page docs/new_docs/201/precision.md ("Matmul precision"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_precision.py), checked against NumPy in float64 and the page's claims.

What the page claims and CPU can check: a dot algorithm (a preset's name, a ``DotAlgorithmPreset``, a
``DotAlgorithm``) is StableHLO's ``algorithm = <...>`` with ``precision = [DEFAULT, DEFAULT]``; the operands are cast
to its storage types and the result keeps the inputs' dtype, unless ``preferred_element_type`` asks for the
accumulator's; the transposed dot of a gradient carries the same algorithm; an algorithm the platform lacks is an
error when the program is lowered (on CPU: ``TF32_TF32_F32``, ``F16_F16_F32``, with the message the page quotes), not
a silent fallback; the three ``Precision`` levels and their aliases are StableHLO's ``precision_config`` and change
nothing on CPU; ``default_matmul_precision`` (scoped, and process-wide with a preset's name) decides the dots that
give no precision. What only a GPU runs (TF32, ``F16_F16_F32``) is checked in the module ``kiln.export`` makes for
CUDA. The values: NumPy's float64 products, to float32's rounding (float16's where the algorithm computes in
float16).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as knp
from kiln import export, lax

ON_CPU = kiln.devices()[0].platform == "cpu"
X = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)
X64 = X.astype(np.float64)
SCALE = np.abs(X64) @ np.abs(X64)  # what float32's rounding error of X @ X is relative to

_ALGORITHM = re.compile(r"algorithm = <lhs_precision_type = (\w+), rhs_precision_type = (\w+), accumulation_type = "
                        r"(\w+), lhs_component_count = (\d+), rhs_component_count = (\d+), num_primitive_operations = "
                        r"(\d+), allow_imprecise_accumulation = (\w+)>")


@pytest.fixture(scope="module")
def page():
    return load("docs_precision")


def _float32_product(y, exact=X64 @ X64):
    y = np.asarray(y)
    assert y.dtype == np.float32 and y.shape == exact.shape
    assert np.all(np.abs(y - exact) <= 8 * 2.0 ** -24 * SCALE)


def _dots(text: str) -> list[tuple]:
    """(operand types, result type, precision_config, algorithm fields) of each dot_general of a module's text."""
    found = []
    for line in text.splitlines():
        if "stablehlo.dot_general" in line:
            types = re.search(r": \((tensor<[^>]*>), (tensor<[^>]*>)\) -> (tensor<[^>]*>)", line).groups()
            precision = re.search(r"precision = \[(\w+), (\w+)\]", line)
            algorithm = _ALGORITHM.search(line)
            found.append((types, precision and precision.groups(), algorithm and algorithm.groups()))
    return found


def _cuda_module(fn, *args) -> tuple[str, tuple]:
    """The StableHLO module (and result avals) kiln.export makes of ``jit(fn)`` for CUDA: the page's GPU examples."""
    exp = export.export(kiln.jit(fn), platforms=("cuda",))(*args)
    return exp.mlir_module(), exp.out_avals


def _says_not_on_cpu(err, name):
    # the page's message ("The precision 'F16_F16_F32' is not supported by dot_general on CPU"), and what to do
    assert isinstance(err, ValueError), err
    assert str(err).startswith(f"The precision '{name}' is not supported by dot_general on CPU"), str(err)
    assert "F32_F32_F32" in str(err) and "kiln.lax.Precision" in str(err)


# ------------------------------------------------ Dot algorithms ----------------------------------------------------

def test_dot_algorithms_block(page):
    y_f32, y_bf16, y_tf32 = page.dot_algorithms_block(X)
    _float32_product(y_f32)
    # float32 operands are a storage type of BF16_BF16_F32: they reach the dot unconverted (JAX's lowering), and
    # XLA's CPU backend computes in float32
    _float32_product(y_bf16)
    if ON_CPU:  # TF32 is NVIDIA's: the CPU refuses it when the program is lowered
        _says_not_on_cpu(y_tf32, "TF32_TF32_F32")
    # the modules: precision [DEFAULT, DEFAULT] beside the algorithm, no conversions of float32 operands
    f32 = ("tensor<8x8xf32>",) * 3
    for name, want in (("F32_F32_F32", ("f32", "f32", "f32")), ("BF16_BF16_F32", ("bf16", "bf16", "f32"))):
        text = kiln.jit(lambda x: knp.dot(x, x, precision=name)).lower(X).as_text()
        assert _dots(text) == [(f32, ("DEFAULT", "DEFAULT"), (*want, "1", "1", "1", "false"))]
        assert "convert" not in text
    text, avals = _cuda_module(lambda x: knp.dot(x, x, precision=lax.DotAlgorithmPreset.TF32_TF32_F32), X)
    assert _dots(text) == [(f32, None, ("tf32", "tf32", "f32", "1", "1", "1", "false"))]  # (DEFAULTs not printed)
    assert "convert" not in text and avals[0].dtype == np.float32


def test_any_input_dtype_is_cast_to_the_algorithm_and_the_output_type_matches_the_inputs():
    # "you can pass float32 arrays with precision=..., and the rounding is handled for you": F16_F16_F16 casts the
    # float32 operands to float16, multiplies in float16, and returns float32 (the inputs' type)
    text = kiln.jit(lambda x: knp.dot(x, x, precision="F16_F16_F16")).lower(X).as_text()
    assert text.count("stablehlo.convert") == 3
    assert _dots(text) == [(("tensor<8x8xf16>",) * 3, ("DEFAULT", "DEFAULT"),
                            ("f16", "f16", "f16", "1", "1", "1", "false"))]
    y = knp.dot(X, X, precision="F16_F16_F16")
    assert y.dtype == np.float32
    x16 = X.astype(np.float16).astype(np.float64)
    err16 = np.abs(np.asarray(y, np.float64) - x16 @ x16)
    assert err16.max() < 8 * 2.0 ** -11 * SCALE.max()  # float16's rounding of the products and sums
    assert np.abs(np.asarray(y, np.float64) - X64 @ X64).max() > 1e-4  # ...not float32's
    # F64_F64_F64: float64 arithmetic on the float32 operands, rounded once to float32
    np.testing.assert_array_max_ulp(np.asarray(knp.dot(X, X, precision="F64_F64_F64")),
                                    (X64 @ X64).astype(np.float32), 0)


def test_preferred_element_type_block(page):
    f16_result, f32_result = page.preferred_element_type_block()
    if ON_CPU:  # the page: F16_F16_F32 "on CPU fails with" this message
        _says_not_on_cpu(f16_result, "F16_F16_F32")
        _says_not_on_cpu(f32_result, "F16_F16_F32")
    # on a GPU: the f16 result (the inputs' type), or the f32 accumulator with preferred_element_type
    x16 = np.ones((4, 4), np.float16)
    alg = ("f16", "f16", "f32", "1", "1", "1", "false")
    text, avals = _cuda_module(lambda x: knp.dot(x, x, precision="F16_F16_F32"), x16)
    assert avals[0].dtype == np.float16 and _dots(text) == [(("tensor<4x4xf16>",) * 3, None, alg)]
    text, avals = _cuda_module(lambda x: knp.dot(x, x, precision="F16_F16_F32", preferred_element_type=np.float32),
                               x16)
    assert avals[0].dtype == np.float32
    assert _dots(text) == [(("tensor<4x4xf16>", "tensor<4x4xf16>", "tensor<4x4xf32>"), None, alg)]
    assert "convert" not in text
    # where the CPU computes the algorithm (F16_F16_F16): f16 stays f16, preferred_element_type gives f32
    a = np.arange(16, dtype=np.float16).reshape(4, 4) / 8
    want = a.astype(np.float64) @ a.astype(np.float64)  # exact in float16 and float32 (multiples of 1/64 < 2048)
    for kw, dtype in (({}, np.float16), ({"preferred_element_type": np.float32}, np.float32)):
        y = knp.dot(a, a, precision="F16_F16_F16", **kw)
        assert y.dtype == dtype
        np.testing.assert_array_equal(np.asarray(y, np.float64), want)


def test_grad_jaxpr_block(page):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        x, w = page.grad_jaxpr_block()
    text = buf.getvalue()
    # "Both dot_generals — the forward one and the transposed one that computes the gradient — carry
    # precision=BF16_BF16_F32": the page's jaxpr, as kiln prints it (kiln's transposed dot contracts `a` with the
    # cotangent in the gradient's own layout, f32[8,2], where JAX's gives f32[2,8] and a transpose)
    assert text.count("dot_general[") == 2 and text.count("precision=BF16_BF16_F32") == 2
    assert text.startswith("{ lambda ; a:f32[4,8] b:f32[8,2]. let\n    c:f32[4,2] = dot_general[\n")
    assert "d:f32[4,2] = broadcast_in_dim 1.0:f32[]" in text and text.rstrip().endswith("in (e,) }")
    # and in the module, both dot_generals with the algorithm (the loss's value too: else its dot is dead code)
    dots = _dots(kiln.jit(kiln.value_and_grad(page.loss, argnums=1)).lower(x, w).as_text())
    assert len(dots) == 2 and {d[2] for d in dots} == {("bf16", "bf16", "f32", "1", "1", "1", "false")}
    grad = kiln.jit(kiln.grad(page.loss, argnums=1))
    # the gradient of sum(x @ w) in w: x's column sums, each 4 for ones((4, 8))
    g = grad(x, w)
    assert g.dtype == np.float32 and g.shape == (8, 2)
    np.testing.assert_array_equal(np.asarray(g), np.full((8, 2), 4.0, np.float32))
    xr = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(grad(xr, w)), np.repeat(xr.sum(0)[:, None], 2, 1), rtol=1e-6, atol=1e-6)


def test_custom_dot_algorithm():
    # "a fully custom algorithm with jax.lax.DotAlgorithm": its types and counts are the attribute's; the CPU lacks it
    alg = lax.DotAlgorithm(np.float16, np.float16, np.float32, num_primitive_operations=1)
    text, avals = _cuda_module(lambda x, y: lax.dot(x, y, precision=alg), X, X.T.copy())
    assert avals[0].dtype == np.float32 and text.count("stablehlo.convert") == 2  # the operands to float16
    assert _dots(text) == [(("tensor<8x8xf16>", "tensor<8x8xf16>", "tensor<8x8xf32>"), None,
                            ("f16", "f16", "f32", "1", "1", "1", "false"))]
    if ON_CPU:
        with pytest.raises(ValueError) as e:
            lax.dot(X, X, precision=alg)
        _says_not_on_cpu(e.value, str(alg))


# ------------------------------------------------ Precision levels --------------------------------------------------

def test_highest_block(page):
    y = page.highest_block(X)
    _float32_product(y)
    assert _dots(kiln.jit(page.highest_block).lower(X).as_text())[0][1] == ("HIGHEST", "HIGHEST")


@pytest.mark.parametrize("level,aliases", [
    ("DEFAULT", [lax.Precision.DEFAULT, "default", "fastest", None]),
    ("HIGH", [lax.Precision.HIGH, "high", "bfloat16_3x", "tensorfloat32"]),
    ("HIGHEST", [lax.Precision.HIGHEST, "highest", "float32"]),
])
def test_precision_levels_and_aliases(level, aliases):
    # the page's aliases of each level are its precision_config; on CPU the three give float32's products, the same
    for p in aliases:
        if p is not None:
            assert (lax.Precision(p) if isinstance(p, str) else p) is lax.Precision[level]
        text = kiln.jit(lambda x: knp.dot(x, x, precision=p)).lower(X).as_text()
        assert _dots(text) == [(("tensor<8x8xf32>",) * 3, (level, level), None)]
    if ON_CPU:
        np.testing.assert_array_equal(np.asarray(knp.dot(X, X, precision=aliases[0])), np.asarray(knp.dot(X, X)))


# ------------------------------------------------ Setting a default globally -----------------------------------------

def test_global_default_block(page):
    def f(x):  # the page's `f`: any function of x with dot products (it records the module traced in the scope)
        return knp.dot(x, x), kiln.jit(lambda v: v @ v).lower(x).as_text()
    assert kiln.config.default_matmul_precision is None
    try:
        result, scoped_text = page.global_default_block(f, X)
        # scoped: 'highest' inside the `with`, for eager and traced dots alike
        assert _dots(scoped_text)[0][1] == ("HIGHEST", "HIGHEST")
        _float32_product(result)
        # process-wide, with a dot algorithm preset's name
        assert kiln.config.default_matmul_precision == "BF16_BF16_F32_X3"
        assert kiln.config.jax_default_matmul_precision == "BF16_BF16_F32_X3"
        text = kiln.jit(lambda v: v @ v).lower(X).as_text()
        assert _dots(text) == [(("tensor<8x8xf32>",) * 3, ("DEFAULT", "DEFAULT"),
                                ("bf16", "bf16", "f32", "1", "1", "3", "false"))]
        _float32_product(knp.dot(X, X))  # (BF16_BF16_F32_X3 computes float32 products on CPU)
        # a dot that names its own precision keeps it
        assert _dots(kiln.jit(lambda v: knp.dot(v, v, precision="highest")).lower(X).as_text())[0][2] is None
    finally:
        kiln.config.update("jax_default_matmul_precision", None)
    assert _dots(kiln.jit(lambda v: v @ v).lower(X).as_text())[0][1:] == (("DEFAULT", "DEFAULT"), None)
