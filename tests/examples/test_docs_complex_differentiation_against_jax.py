"""JAX's docs page docs/complex-differentiation.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_complex_differentiation.py; the JAX side is the same source with
JAX's imports put back. The oracles (the page's definitions evaluated with float64 central differences) are in
test_docs_complex_differentiation.py; this checks that the two libraries agree block by block: what the JVP check
prints, the JVPs and VJPs the checks compute (recorded by wrapping each side's `jvp` and `vjp`), the gradients'
values, dtypes and weak types, the Cholesky example's gradient, and the exception class and message of grad on a
complex output. No differences.
"""
from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_complex_differentiation"), load("docs_complex_differentiation", "jax")


def _recorded(mod, lib, monkeypatch):
    """(what the JVP check prints, the JVPs, the VJPs) of the page's two checks, with `lib`'s jvp and vjp."""
    jvps, vjps = [], []

    def jvp(fun, primals, tangents):
        out = lib.jvp(fun, primals, tangents)
        jvps.append((primals, tangents, out))
        return out

    def vjp(fun, z):
        out, pullback = lib.vjp(fun, z)

        def recorded(ct):
            res = pullback(ct)
            vjps.append((z, ct, out, res))
            return res
        return out, recorded
    monkeypatch.setattr(mod, "jvp", jvp)
    monkeypatch.setattr(mod, "vjp", vjp)
    _, printed = quiet(mod.check_jvp_block)
    mod.check_vjp_block()
    return printed, jvps, vjps


def test_jvp_and_vjp_checks(both, monkeypatch):
    k, j = both
    kprinted, kjvps, kvjps = _recorded(k, kiln, monkeypatch)
    jprinted, jjvps, jvjps = _recorded(j, jax, monkeypatch)
    assert kprinted == jprinted == "True\n" * 3
    assert_same(kjvps, jjvps)
    assert_same(kvjps, jvjps)


@pytest.mark.parametrize("block", ["grad_real_output_block", "grad_holomorphic_block", "grad_not_holomorphic_block"])
def test_grad_blocks(both, block):
    k, j = both
    assert_same(getattr(k, block)(), getattr(j, block)())


def test_cholesky_block(both):
    k, j = both
    assert_same(k.cholesky_block(), j.cholesky_block(), rtol=2e-5, atol=2e-5)


def test_grad_of_a_complex_output_without_holomorphic(both):
    k, j = both
    for args, kwargs in (((3.0 + 4j,), {}), ((3.0,), {"holomorphic": True})):
        (kerr, _), (jerr, _) = outcome(lambda: kiln.grad(kiln.numpy.sin, **kwargs)(*args)), outcome(
            lambda: jax.grad(jax.numpy.sin, **kwargs)(*args))
        assert isinstance(jerr, TypeError)
        assert_same_exception(kerr, jerr)
    assert "holomorphic=True" in str(kerr) and "holomorphic=True" in str(jerr)
