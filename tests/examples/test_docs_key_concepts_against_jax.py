"""JAX's docs pages docs/key-concepts.md and docs/default_dtypes.md under kiln and under JAX 0.10.2 give the same
results (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_key_concepts.py; the JAX side is the same source with JAX's imports
put back. The NumPy oracles and the pages' claims are in test_docs_key_concepts.py; this checks that the two
libraries agree cell by cell: what the cells print (the jitted SELU's value, the printed tracer, the pytrees'
structures and leaves, the default and x64 dtypes), the values (dtypes, weak types, shapes), the exception class of
`lax.add(1, 1.0)`, the jaxpr's binders, its equations' values and its primitives.

Differences, tested as such:
- the jaxpr of `selu`: kiln broadcasts each scalar literal with a broadcast_in_dim of its own and records
  `jnp.where` as one `select` equation; JAX 0.10.2 takes the literals as they are (`gt a 0.0:f32[]`) and records
  `jnp.where` as a nested `jit[name=_where]` of `select_n` (README, "Printed jaxprs": written otherwise, same
  values). The same primitives in the same order once the broadcasts are taken out and the nested jit is entered;
  that the printed text differs is a strict xfail.
- the truncation warning of `jnp.arange(5, dtype='float64')`: the same class and first sentence; kiln's message
  names kiln's flag and environment variable instead of JAX's.
- the environment variable: JAX reads `JAX_ENABLE_X64`, kiln `KILN_ENABLE_X64` (README, "Differences from JAX").
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402

XS = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5], np.float32)


@pytest.fixture(scope="module")
def both():
    return load("docs_key_concepts"), load("docs_key_concepts", "jax")


@contextlib.contextmanager
def _jax_x64_restored():
    saved = jax.config.jax_enable_x64
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", saved)


# ============================================== docs/key-concepts.md ================================================

def test_transformations(both):
    k, j = both
    (kf, kout), (jf, jout) = quiet(k.selu_jit_block), quiet(j.selu_jit_block)
    assert kout == jout == "1.05\n"
    assert_same(kf(1.0), jf(1.0), rtol=0)
    assert_same(kf(XS), jf(XS), rtol=1e-6)
    kd, jd = k.selu_decorator_block(), j.selu_decorator_block()
    assert kd.__name__ == jd.__name__ == "selu"
    assert_same(kd(XS), jd(XS), rtol=1e-6)
    assert_same(kd(XS, 2.0, 0.5), jd(XS, 2.0, 0.5), rtol=1e-6)
    assert_same(kd(-2.0), jd(-2.0), rtol=1e-6)


def test_tracing(both):
    k, j = both
    ((kf, kres), kout), ((jf, jres), jout) = quiet(k.tracing_block), quiet(j.tracing_block)
    assert kout == jout == "JitTracer(int32[5])\n"
    assert_same(kres, jres, rtol=0)
    for x in (np.arange(5, dtype=np.int32) * 3, np.arange(3.0, dtype=np.float32)):  # cached, then traced anew
        (kr, kout), (jr, jout) = quiet(kf, x), quiet(jf, x)
        assert kout == jout
        assert_same(kr, jr, rtol=0)


def _flat(jaxpr, out=None):
    """(primitive, [input types], [output types]) per equation, nested jits entered, scalar broadcasts left out."""
    out = [] if out is None else out
    for e in jaxpr.eqns:
        subs = [getattr(v, "jaxpr", v) for v in e.params.values() if hasattr(getattr(v, "jaxpr", v), "eqns")]
        if subs:
            for s in subs:
                _flat(s, out)
        elif not (e.primitive.name == "broadcast_in_dim" and e.invars[0].aval.shape == ()):
            name = {"select_n": "select"}.get(e.primitive.name, e.primitive.name)
            out.append((name, [str(v.aval.dtype) for v in e.outvars]))
    return out


def test_jaxpr(both):
    k, j = both
    kc, jc = k.make_jaxpr_block(), j.make_jaxpr_block()
    assert str(kc).splitlines()[0] == str(jc).splitlines()[0] == "{ lambda ; a:f32[5]. let"
    assert [(v.aval.shape, v.aval.dtype) for v in kc.jaxpr.outvars] == \
        [(v.aval.shape, v.aval.dtype) for v in jc.jaxpr.outvars]
    assert _flat(kc.jaxpr) == _flat(jc.jaxpr)  # gt, exp, mul, sub, select, mul
    for x in (XS[:5], np.arange(5.0, dtype=np.float32)):
        kv = kiln.core.eval_jaxpr(kc.jaxpr, kc.consts, x)
        jv = jax.core.eval_jaxpr(jc.jaxpr, jc.consts, x)
        assert_same(kv, jv, rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="kiln's jaxpr of selu broadcasts each scalar literal with a broadcast_in_dim "
                   "(`b:f32[5] = broadcast_in_dim 0.0:f32[]; c:bool[5] = gt a b`) and records jnp.where as one "
                   "`select c a h`; JAX 0.10.2 prints `gt a 0.0:f32[]` and a nested `jit[name=_where]` of "
                   "`select_n b e a`")
def test_jaxpr_text(both):
    k, j = both
    assert str(k.make_jaxpr_block()) == str(j.make_jaxpr_block())


@pytest.mark.parametrize("block", ["list_params_block", "dict_params_block", "namedtuple_params_block"])
def test_pytrees(both, block):
    k, j = both
    (kp, kout), (jp, jout) = quiet(getattr(k, block)), quiet(getattr(j, block))
    assert kout == jout
    assert_same(kp, jp, rtol=0)
    assert str(kiln.tree.structure(kp)) == str(jax.tree.structure(jp))
    assert_same(kiln.tree.map(lambda x: x * 2, kp), jax.tree.map(lambda x: x * 2, jp), rtol=0)
    assert_same(kiln.tree.reduce(lambda a, b: a + kiln.numpy.sum(b), kp, 0.0),
                jax.tree.reduce(lambda a, b: a + jax.numpy.sum(b), jp, 0.0), rtol=0)


def test_api_layering(both):
    k, j = both
    for name in ("jnp_add_block", "lax_add_promoted_block"):
        ka, ja = getattr(k, name)(), getattr(j, name)()
        assert_same(ka, ja, rtol=0)
        assert repr(ka) == repr(ja)
    (kerr, kout), (jerr, jout) = outcome(k.lax_add_block), outcome(j.lax_add_block)
    assert isinstance(jerr, TypeError) and kout == jout == ""
    assert_same_exception(kerr, jerr)
    kres, jres = k.convolve_block(), j.convolve_block()
    assert_same(kres, jres, rtol=0)
    assert repr(kres[2]) == repr(jres[2])
    kr, jr = k.conv_general_dilated_block(*kres[:2]), j.conv_general_dilated_block(*jres[:2])
    assert_same(kr, jr, rtol=0)
    assert repr(kr) == repr(jr)


# ============================================== docs/default_dtypes.md ==============================================

def test_default_dtypes(both):
    k, j = both
    assert kiln.config.jax_enable_x64 is jax.config.jax_enable_x64 is False
    kres, jres = k.default_dtypes_block(), j.default_dtypes_block()
    assert_same(kres, jres, rtol=0)
    assert [repr(a) for a in kres] == [repr(a) for a in jres]


def test_truncated_64_bit_dtype(both):
    k, j = both
    with warnings.catch_warnings(record=True) as kw:
        warnings.simplefilter("always")
        ka = k.truncated_float64_block()
    with warnings.catch_warnings(record=True) as jw:
        warnings.simplefilter("always")
        ja = j.truncated_float64_block()
    assert [w.category for w in kw] == [w.category for w in jw] == [UserWarning]
    first = "Explicitly requested dtype float64"
    truncated = "is not available, and will be truncated to dtype float32."
    for w in (kw[0], jw[0]):
        assert str(w.message).startswith(first) and truncated in str(w.message)
    assert "kiln.config.update('jax_enable_x64', True)" in str(kw[0].message)  # kiln names its own flag's setter
    assert_same(ka, ja, rtol=0)
    assert repr(ka) == repr(ja)


def test_x64_cell(both):
    k, j = both
    with _jax_x64_restored():  # (the autouse fixture of tests/conftest.py restores kiln's flag)
        (kr, kout), (jr, jout) = quiet(k.x64_block), quiet(j.x64_block)
        assert kr is None and jr is None
        assert kout == jout
        assert kiln.config.jax_enable_x64 is jax.config.jax_enable_x64 is True
        kpy = [kiln.numpy.asarray(v) for v in (1, 1.0, 1j, True)]
        jpy = [jax.numpy.asarray(v) for v in (1, 1.0, 1j, True)]
        assert_same(kpy, jpy, rtol=0)
        kf, jf = kiln.jit(lambda: kiln.numpy.arange(3) + 1.0), jax.jit(lambda: jax.numpy.arange(3) + 1.0)
        assert_same(kf(), jf(), rtol=0)  # float64
        kiln.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)
        assert_same(kf(), jf(), rtol=0)  # both trace anew: float32
        assert_same(k.default_dtypes_block(), j.default_dtypes_block(), rtol=0)


def _scalars_meet_arrays(lib):
    """Python and NumPy scalars as arrays, and Python scalars meeting arrays of narrow dtypes."""
    np_ = lib.numpy
    res = [np_.asarray(v) for v in (1, 1.0, 1j, True, np.float64(1.0), np.int64(3))]
    for dtype in (np_.bfloat16, np.float16, np.float32, np.int8, np.uint8):
        res += [np_.ones(3, dtype) * 2 + 1, np_.ones(3, dtype) + 1.5]
    return res + [np_.add(1, 1.0)]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_weak_types_of_python_scalars(x64):
    with _jax_x64_restored():
        kiln.config.update("jax_enable_x64", x64)
        jax.config.update("jax_enable_x64", x64)
        assert_same(_scalars_meet_arrays(kiln), _scalars_meet_arrays(jax), rtol=0)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "cumsum", "nansum", "ptp"])
def test_reductions_of_weakly_typed_values_are_strong(name):
    # (found by this port: kiln's reductions kept a weakly typed operand's weak type; fixed in
    # frontend/numpy/reductions.py and statistics.py)
    for x in (5.0, 3):
        kr, jr = getattr(kiln.numpy, name)(x), getattr(jax.numpy, name)(x)
        assert_same(kr, jr, rtol=0)
    kr = getattr(kiln.numpy, name)(kiln.numpy.asarray(2.0) + 1.0)
    jr = getattr(jax.numpy, name)(jax.numpy.asarray(2.0) + 1.0)
    assert_same(kr, jr, rtol=0)


SCRIPT = """
import {lib}.numpy as jnp
print(repr(jnp.arange(5)))
print(repr(jnp.zeros(5)))
print(repr(jnp.ones(5, dtype=int)))
"""


def test_environment_variable(run_py):
    """`JAX_ENABLE_X64=1 python main.py` for JAX, its kiln counterpart KILN_ENABLE_X64=1 for kiln: the same output."""
    kout = run_py(SCRIPT.format(lib="kiln"), env={"KILN_ENABLE_X64": "1"}).stdout
    jout = run_py(SCRIPT.format(lib="jax"), env={"JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}).stdout
    assert kout == jout
    assert kout.splitlines()[0] == "Array([0, 1, 2, 3, 4], dtype=int64)"
