"""JAX's docs page docs/new_docs/201/precision.md under kiln and under JAX gives the same results and the same
modules (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_precision.py; the JAX side is the same source with JAX's imports put
back. The NumPy oracles and the page's claims are in test_docs_precision.py; this checks that the two libraries
agree block by block: the values bit for bit (dtypes, weak types, shapes), the exception classes of the algorithms the
CPU lacks (kiln's adds what to use instead to JAX's message), and the dot_generals of the modules, for CPU (``jit``
... ``lower``) and for CUDA (``export``): operand and result types, ``precision_config``, ``algorithm``, and the
conversions around them. Differences, tested as such: kiln's gradient jaxpr computes the transposed dot in the
gradient's layout (``dot_general a d: f32[8,2]``) where JAX's computes ``f32[2,8]`` and transposes; both carry the
algorithm.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("jax.export")  # (the CUDA modules: jax.export)
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, quiet  # noqa: E402

import kiln  # noqa: E402
import kiln.export  # noqa: E402,F401

X = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def both():
    return load("docs_precision"), load("docs_precision", "jax")


def _same(kiln_tree, jax_tree):
    """The same values bit for bit, or exceptions of the same class (JAX's message the start of kiln's)."""
    if isinstance(jax_tree, BaseException):
        assert isinstance(kiln_tree, BaseException), kiln_tree
        assert_same_exception(kiln_tree, jax_tree)
        assert str(kiln_tree).startswith(str(jax_tree)), (str(kiln_tree), str(jax_tree))
        return
    assert_same(kiln_tree, jax_tree, 0.0, 0.0)


def _dots(text: str) -> list[tuple]:
    """Each dot_general and convert of a module: its operand and result types and attributes, SSA names aside."""
    ops = []
    for line in text.splitlines():
        m = re.search(r"(stablehlo\.(?:dot_general|convert))\b.*?(?:contracting_dims = (.*?))? : (.*)$", line)
        if m:
            attrs = re.sub(r" loc\(.*", "", line.split(m.group(1), 1)[1])
            ops.append((m.group(1), re.sub(r"%\w+", "%", attrs).strip()))
    return ops


def _modules(lib, fn, *args):
    """(the CPU module's dot_generals and converts, or the exception of its lowering; the CUDA module's)."""
    try:
        cpu = _dots(lib.jit(fn).lower(*args).as_text())
    except ValueError:  # (the CPU lacks the algorithm: the same ValueError, test_dot_algorithms_block)
        cpu = "ValueError"
    cuda = _dots(lib.export.export(lib.jit(fn), platforms=("cuda",))(*args).mlir_module())
    return cpu, cuda


def test_dot_algorithms_block(both):
    k, j = both
    for a, b in zip(k.dot_algorithms_block(X), j.dot_algorithms_block(X)):
        _same(a, b)


def test_preferred_element_type_block(both):
    k, j = both
    for a, b in zip(k.preferred_element_type_block(), j.preferred_element_type_block()):
        _same(a, b)


@pytest.mark.parametrize("precision,dtype,kw", [
    ("F32_F32_F32", np.float32, {}), ("BF16_BF16_F32", np.float32, {}), ("TF32_TF32_F32", np.float32, {}),
    ("F16_F16_F16", np.float32, {}), ("F64_F64_F64", np.float32, {}), ("BF16_BF16_F32_X3", np.float32, {}),
    ("DEFAULT", np.float32, {}), ("highest", np.float32, {}), (("highest", "default"), np.float32, {}),
    ("F16_F16_F32", np.float16, {}), ("F16_F16_F32", np.float16, {"preferred_element_type": np.float32}),
    ("BF16_BF16_F32", np.float16, {}), ("BF16_BF16_F32", "bfloat16", {}),
], ids=str)
def test_modules(precision, dtype, kw):
    x, y = X.astype(dtype), X.T.astype(dtype)
    found = []
    for lib in (kiln, jax):
        found.append(_modules(lib, lambda a, b: lib.numpy.dot(a, b, precision=precision, **kw), x, y))
    assert found[0] == found[1]


def test_grad_jaxpr_block(both):
    k, j = both
    (kx, kw), ktext = quiet(k.grad_jaxpr_block)
    (jx, jw), jtext = quiet(j.grad_jaxpr_block)
    for text in (ktext, jtext):
        assert text.count("dot_general[") == 2 and text.count("precision=BF16_BF16_F32") == 2
    # kiln: e:f32[8,2] = dot_general ... a d; JAX: e:f32[2,8] = dot_general ... d a, then a transpose
    assert "transpose[permutation=(1, 0)]" in jtext and "transpose" not in ktext
    assert ktext.splitlines()[:6] == jtext.splitlines()[:6]  # the forward dot, the same
    assert_same(kiln.grad(k.loss, argnums=1)(kx, kw), jax.grad(j.loss, argnums=1)(jx, jw), 0.0, 0.0)
    xr = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    assert_same(kiln.jit(kiln.value_and_grad(k.loss, argnums=(0, 1)))(xr, kw),
                jax.jit(jax.value_and_grad(j.loss, argnums=(0, 1)))(xr, jw), 0.0, 0.0)
    kmod = _dots(kiln.jit(kiln.value_and_grad(k.loss, argnums=1)).lower(xr, kw).as_text())
    jmod = _dots(jax.jit(jax.value_and_grad(j.loss, argnums=1)).lower(xr, jw).as_text())
    assert [a for _, a in kmod if "algorithm" in a] and len(kmod) == len(jmod) == 2
    assert {re.search(r"algorithm = <.*?>", a).group() for _, a in kmod} == \
        {re.search(r"algorithm = <.*?>", a).group() for _, a in jmod}


def test_highest_block(both):
    k, j = both
    _same(k.highest_block(X), j.highest_block(X))


def test_global_default_block(both):
    k, j = both
    found = []
    for lib, page in ((kiln, k), (jax, j)):
        def f(x, lib=lib):
            return lib.numpy.dot(x, x), _dots(lib.jit(lambda v: v @ v).lower(x).as_text())
        try:
            result = page.global_default_block(f, X)
            after = _dots(lib.jit(lambda v: v @ v).lower(X).as_text()), lib.numpy.dot(X, X)
        finally:
            lib.config.update("jax_default_matmul_precision", None)
        found.append((result, after))
    (kres, kafter), (jres, jafter) = found
    _same(kres[0], jres[0])
    assert kres[1] == jres[1] and kafter[0] == jafter[0] and "num_primitive_operations = 3" in kafter[0][0][1]
    _same(kafter[1], jafter[1])
