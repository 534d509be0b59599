"""JAX's docs page docs/new_docs/201/jit.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_jit_201.py; the JAX side is the same source with JAX's imports put
back. The NumPy oracles and the page's claims are in test_docs_jit_201.py; this checks that the two libraries agree
block by block: what the blocks print, the jaxpr's text, the values (dtypes, weak types, shapes), how many times
the caching section's loops trace, which calls ``jax_explain_cache_misses`` reports (and at which lines), the
exception classes of the blocks that raise, which donated arrays are deleted (keyword arguments included: both
donate them, where the page says nothing is donated). Differences, tested as such: kiln reports cache misses as
``UserWarning``s where JAX logs them; kiln warns (``StaleValueWarning``) when the mutated static ``self`` serves
stale code, JAX is silent. Small sizes: the SELU's 10000 elements (the page's 1000000), the caching loops' 5
iterations (20), the matmul's 300 x 300 (1000 x 1000).
"""
from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402
from kiln.errors import StaleValueWarning  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_jit_201"), load("docs_jit_201", "jax")


def test_selu(both):
    k, j = both
    (kx, kout), (jx, jout) = k.selu_block(10000), j.selu_block(10000)
    assert_same(kx, jx, 0.0)
    assert_same(kout, jout, rtol=1e-6)
    (kjit, kres), (jjit, jres) = k.selu_jit_block(kx), j.selu_jit_block(jx)
    assert_same(kres, jres, rtol=1e-6)
    neg = np.linspace(-5.0, 0.5, 12, dtype=np.float32)
    assert_same(kjit(kiln.numpy.asarray(neg)), jjit(jax.numpy.asarray(neg)), rtol=2e-6)


def test_what_the_compiled_function_captures(both):
    k, j = both
    assert str(k.log2_if_rank_2_jaxpr_block()) == str(j.log2_if_rank_2_jaxpr_block())
    m = np.array([[1.0, 2.0, 8.0], [0.5, 3.0, 1024.0]], np.float32)
    assert_same(kiln.jit(k.log2_if_rank_2)(m), jax.jit(j.log2_if_rank_2)(m), rtol=1e-6)


def test_value_dependent_control_flow(both):
    k, j = both
    for block in ("f_jit_block", "g_jit_block"):
        (kerr, _), (jerr, _) = outcome(getattr(k, block)), outcome(getattr(j, block))
        assert type(jerr).__name__ == "TracerBoolConversionError"
        assert_same_exception(kerr, jerr)
    assert_same(k.g_inner_jitted_block(), j.g_inner_jitted_block(), 0.0)


def test_static_arguments(both):
    k, j = both
    (kf, kout), (jf, jout) = quiet(k.f_jit_correct_block), quiet(j.f_jit_correct_block)
    assert kout == jout
    assert_same(kf(-3), jf(-3), 0.0)
    (kg, kout), (jg, jout) = quiet(k.g_jit_correct_block), quiet(j.g_jit_correct_block)
    assert kout == jout
    assert_same(kg(1.5, 4), jg(1.5, 4), 0.0)
    assert quiet(k.g_jit_decorated_block)[1] == quiet(j.g_jit_decorated_block)[1]
    # unhashable static values: JAX's ValueError
    (kerr, _), (jerr, _) = outcome(kiln.jit(k.f, static_argnums=0), [1]), outcome(jax.jit(j.f, static_argnums=0), [1])
    assert isinstance(jerr, ValueError)
    assert_same_exception(kerr, jerr)


def _counting(lib_module, monkeypatch):
    calls = [0]

    def counted(prev_i):
        calls[0] += 1
        return prev_i + 1
    monkeypatch.setattr(lib_module, "unjitted_loop_body", counted)
    return calls


def test_caching_loops(both, monkeypatch):
    """The loops at 5 iterations, not the page's 20: each iteration of the partial and lambda loops compiles (a
    tenth of a second each in JAX). (kiln's RetraceWarning for these loops, past 10 iterations, is in
    test_docs_jit_201.py.)"""
    k, j = both
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (kres, kout), (jres, jout) = quiet(k.caching_block, 5), quiet(j.caching_block, 5)
    assert kout == jout
    assert_same(kres, jres, 0.0)
    kcalls, jcalls = _counting(k, monkeypatch), _counting(j, monkeypatch)
    for name in ("g_inner_jitted_partial", "g_inner_jitted_lambda", "g_inner_jitted_normal"):
        kcalls[0] = jcalls[0] = 0
        assert_same(getattr(k, name)(10, 3), getattr(j, name)(10, 3), 0.0)
        assert kcalls[0] == jcalls[0], name  # the traces: 3, 3, 1


def test_explain_cache_misses(both, caplog, recwarn):
    k, j = both
    try:
        k.explain_cache_misses_block()
    finally:
        k.explain_cache_misses_off_block()
    kmisses = [w for w in recwarn if "kiln.jit(double)" in str(w.message)]
    with caplog.at_level(logging.WARNING):
        try:
            j.explain_cache_misses_block()
        finally:
            j.explain_cache_misses_off_block()
    jmisses = [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()
               and "double" in r.getMessage()]
    assert len(kmisses) == len(jmisses) == 2
    # the same call sites: the port's lines (JAX's messages say "at FILE:LINE:COLUMN")
    jlines = [int(re.search(r"TRACING CACHE MISS at \S+?:(\d+):\d+", m).group(1)) for m in jmisses]
    assert [w.lineno for w in kmisses] == jlines
    assert "never seen function" in jmisses[0] and "tracing for the first time" in str(kmisses[0].message)
    for msg in (jmisses[1], str(kmisses[1].message)):
        assert "i32[3]" in msg and "f32[3]" in msg


def test_methods(both):
    k, j = both
    (kerr, _), (jerr, _) = outcome(k.method_error_block), outcome(j.method_error_block)
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)
    ((kc, _), kout), ((jc, _), jout) = quiet(k.helper_function_block), quiet(j.helper_function_block)
    assert kout == jout
    (kc, kout), (jc, jout) = quiet(k.static_self_block), quiet(j.static_self_block)
    assert kout == jout
    with pytest.warns(StaleValueWarning):  # kiln's; JAX serves the same stale code silently
        kout = quiet(k.stale_static_self_block, kc)[1]
    assert kout == quiet(j.stale_static_self_block, jc)[1] == "6\n"
    kC, jC = k.hashable_self_block(), j.hashable_self_block()
    for args in ((2, True), (2, False), (5, True)):
        assert_same(kC(*args).calc(3), jC(*args).calc(3), 0.0)
    # mutating an object in use as a cache key: the same (stale) answer in both
    kc, jc = kC(3, True), jC(3, True)
    assert_same(kc.calc(2), jc.calc(2), 0.0)
    kc.mul = jc.mul = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleValueWarning)
        assert_same(kc.calc(2), jc.calc(2), 0.0)
    kC, jC = k.pytree_self_block(), j.pytree_self_block()
    (kc, kout), (jc, jout) = quiet(k.pytree_self_calls_block, kC), quiet(j.pytree_self_calls_block, jC)
    assert kout == jout
    assert_same(kc.x, jc.x, 0.0)


def test_refs(both):
    k, j = both
    (kref, kout), (jref, jout) = quiet(k.sin_inplace_block), quiet(j.sin_inplace_block)
    for out in (kout, jout):
        (p0, _), (p1, _) = (line.split(" ", 1) for line in out.splitlines())
        assert p0 == p1  # the buffer's address stays the same in both
    assert [line.split(" ", 1)[1] for line in kout.splitlines()] == [line.split(" ", 1)[1] for line in
                                                                    jout.splitlines()]
    assert_same(kref[...], jref[...], rtol=1e-6)


def _update_fn(params, state):
    return params - 0.5 * state, state + 1.0


def test_donation(both):
    k, j = both
    for block in ("donate_update_block", "keyword_donation_block"):
        kargs = kiln.numpy.arange(3.0), kiln.numpy.full(3, 2.0)
        jargs = jax.numpy.arange(3.0), jax.numpy.full(3, 2.0)
        assert_same(getattr(k, block)(_update_fn, *kargs), getattr(j, block)(_update_fn, *jargs), 0.0)
        # both donate, by position and by keyword (the page says keyword arguments are not donated)
        assert [a.is_deleted() for a in kargs] == [a.is_deleted() for a in jargs] == [True, True]
    # a function of keywords only: donate_argnums names no parameter, an error in both
    kerr, _ = outcome(k.keyword_donation_block, lambda **kw: (kw["params"], kw["state"]), kiln.numpy.ones(3),
                      kiln.numpy.ones(3))
    jerr, _ = outcome(j.keyword_donation_block, lambda **kw: (kw["params"], kw["state"]), jax.numpy.ones(3),
                      jax.numpy.ones(3))
    assert isinstance(jerr, ValueError)
    assert_same_exception(kerr, jerr)
    kres, jres = k.donate_add_block(), j.donate_add_block()
    assert_same(kres[2], jres[2], 0.0)
    assert [a.is_deleted() for a in kres] == [a.is_deleted() for a in jres] == [False, True, False]
    kx, ky = (kiln.device_put(np.ones((2, 3))) for _ in range(2))
    jx, jy = (jax.device_put(np.ones((2, 3))) for _ in range(2))
    (kerr, _), (jerr, _) = outcome(k.donated_means_gone_block, kx, ky), outcome(j.donated_means_gone_block, jx, jy)
    assert isinstance(jerr, RuntimeError)
    assert_same_exception(kerr, jerr)
    (kxs, kz), (jxs, jz) = k.pytree_donation_block(), j.pytree_donation_block()
    assert_same(kz, jz, 0.0)
    assert [a.is_deleted() for a in kxs] == [a.is_deleted() for a in jxs] == [True, True]


def test_unusable_donations_warn_in_both(both):
    k, j = both
    for lib, add in ((kiln, k.add), (jax, j.add)):
        with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
            lib.jit(add, donate_argnums=(0, 1))(lib.numpy.ones(3), lib.numpy.ones(3))


def test_async_dispatch(both):
    k, j = both
    (kx, ky), (jx, jy) = k.async_dispatch_block(300), j.async_dispatch_block(300)
    assert_same(kx, jx, 0.0)
    assert_same(ky, jy, rtol=1e-5)
    assert_same(k.time_dispatch_block(kx), j.time_dispatch_block(jx), rtol=1e-5)
    assert_same(k.time_block_until_ready_block(kx), j.time_block_until_ready_block(jx), rtol=1e-5)
