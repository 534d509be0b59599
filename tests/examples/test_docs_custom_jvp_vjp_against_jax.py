"""JAX's docs/new_docs/301/custom-jvp-vjp.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_custom_jvp_vjp.py; the JAX side is the same source with JAX's
imports put back. The oracles are in test_docs_custom_jvp_vjp.py; this checks that the two libraries agree: every
cell's result (the port's ``run``, all of the page) with the same containers, dtypes, weak types and signed zeros
and the values to float32 rounding, the same printed text, the same jaxpr text from ``jit(...).trace(x).jaxpr``, and
the same exception classes where the page or its prose says forward mode fails.

Differences, tested as such: the message of forward mode through a custom_vjp function (kiln's names the function
and says what to use instead; JAX's is "can't apply forward-mode autodiff (jvp) to a custom_vjp function."), which
the page prints once.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402

_assert_same = functools.partial(assert_same, signed_zeros=True)  # the pytree cells' +0. and -0. cotangents

NUM = 50


@pytest.fixture(scope="module")
def k():
    return load("docs_custom_jvp_vjp")


@pytest.fixture(scope="module")
def j():
    return load("docs_custom_jvp_vjp", "jax")


@pytest.fixture(scope="module")
def runs(k, j):
    return quiet(k.run, NUM), quiet(j.run, NUM)


ERRORS = ("jvp_error", "clip_gradient_jvp")


def test_every_cell_gives_the_same_results(runs):
    (kout, _), (jout, _) = runs
    assert sorted(kout) == sorted(jout)
    for key in sorted(set(kout) - {"log1pexp_jaxpr", *ERRORS}):
        _assert_same(kout[key], jout[key], allow_empty=True)


def test_printed_text(runs):
    (_, ktext), (_, jtext) = runs
    klines, jlines = ktext.splitlines(), jtext.splitlines()
    assert len(klines) == len(jlines)
    for kl, jl in zip(klines, jlines):
        if jl.startswith("ERROR! "):  # the one deliberate difference: kiln's message is its own
            assert jl == "ERROR! can't apply forward-mode autodiff (jvp) to a custom_vjp function."
            assert kl.startswith("ERROR! kiln: forward-mode differentiation") and "custom_vjp function f " in kl
        else:
            assert kl == jl


def test_trace_jaxpr(runs):
    (kout, _), (jout, _) = runs
    assert str(kout["log1pexp_jaxpr"]) == str(jout["log1pexp_jaxpr"])


def test_forward_mode_errors(runs):
    (kout, _), (jout, _) = runs
    for key in ERRORS:
        assert isinstance(jout[key], TypeError), key
        assert_same_exception(kout[key], jout[key])


@pytest.mark.parametrize("name", ["jacfwd(clip_sin)", "hessian of sin_custom_vjp", "grad(grad(clip_sin))",
                                  "hessian(clip_sin)", "jvp(grad(clip_sin))", "jacrev(jacrev(sin_custom_vjp))"])
def test_prose_on_composing_modes(k, j, name):
    # "Note that reverse mode composes fine: grad-of-grad, hessian, and forward-over-reverse Hessian-vector
    # products all work": for clip_gradient; for a custom_vjp whose fwd calls the function (the page's sin), forward
    # over reverse fails in both
    def case(nb, lib):
        xs = lib.numpy.array([0.3, 1.2, 2.0, 4.0])
        total = lambda v: lib.numpy.sum(nb.clip_sin(v))  # noqa: E731
        sq = lambda v: lib.numpy.sum(nb.sin_custom_vjp_def()(v) ** 2)  # noqa: E731
        return {
            "jacfwd(clip_sin)": lambda: lib.jacfwd(nb.clip_sin)(xs),
            "hessian of sin_custom_vjp": lambda: lib.hessian(sq)(xs),
            "grad(grad(clip_sin))": lambda: lib.vmap(lib.grad(lib.grad(nb.clip_sin)))(xs),
            "hessian(clip_sin)": lambda: lib.hessian(total)(xs),
            "jvp(grad(clip_sin))": lambda: lib.jvp(lib.grad(total), (xs,), (lib.numpy.ones(4),)),
            "jacrev(jacrev(sin_custom_vjp))": lambda: lib.jacrev(lib.jacrev(sq))(xs),
        }[name]
    (kres, _), (jres, _) = outcome(case(k, kiln)), outcome(case(j, jax))
    if name in ("jacfwd(clip_sin)", "hessian of sin_custom_vjp"):
        assert isinstance(jres, TypeError) and "forward-mode" in str(jres), jres
        assert_same_exception(kres, jres)
    else:
        assert not isinstance(kres, BaseException), kres
        _assert_same(kres, jres, 1e-6, 1e-7)
        assert np.isfinite(np.asarray(jax.tree_util.tree_leaves(jres)[-1])).all()
