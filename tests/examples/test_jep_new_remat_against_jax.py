"""JAX's design document docs/jep/11830-new-remat-checkpoint.md under kiln and under JAX gives the same results
(the against_jax session).

The kiln side is tests/examples/jax_ported/jep_new_remat.py; the JAX side is the same source with JAX's imports put
back. The oracles are in test_jep_new_remat.py; this checks that the two libraries agree cell by cell: the residual
listings text for text (the file's path aside), how many sin/cos/dot_general/iota the forward and backward programs
evaluate, the values, dtypes and weak types of the functions and their gradients (float32 rounding), and the
exception classes of the removed options (JAX's AttributeError and NotImplementedError; kiln's are subclasses, whose
messages say what replaces the option).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import count_primitives, load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, quiet  # noqa: E402

import kiln  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def both():
    return (load("jep_new_remat"), kiln), (load("jep_new_remat", "jax"), jax)


def _located(text):
    return re.sub(r"from \S+?\.py:", "from FILE:", text)


def _work(jaxpr, prims=("sin", "cos", "dot_general", "iota", "reduce_sum")):
    c = count_primitives(jaxpr)
    return tuple(c[p] for p in prims)


def test_removed_options_raise_alike(both):
    (k, _), (j, _) = both
    for cell in ("new_checkpoint_option_cell", "concrete_cell"):
        (ke, kt), (je, jt) = quiet(getattr(k, cell)), quiet(getattr(j, cell))
        assert isinstance(ke, Exception) and isinstance(je, Exception) and kt == jt == ""
        assert_same_exception(ke, je)
    assert "static_argnums" in str(k.concrete_cell()) and "static_argnums" in str(j.concrete_cell())


def test_predict_residuals_and_programs(both):
    (k, _), (j, _) = both
    params = [RNG.normal(size=s).astype(np.float32) / 2 for s in ((5, 4), (6, 5), (3, 6))]
    x, ct = RNG.normal(size=4).astype(np.float32), RNG.normal(size=3).astype(np.float32)
    (_, kt), (_, jt) = quiet(k.predict_residuals_cell, params, x), quiet(j.predict_residuals_cell, params, x)
    assert kt.strip() and _located(kt) == _located(jt)
    results, works = [], []
    for nb, lib in both:
        y, pullback = lib.vjp(nb.predict, params, x)
        results.append((y, pullback(ct)))
        works.append((_work(lib.make_jaxpr(pullback)(ct).jaxpr),
                      _work(lib.make_jaxpr(lambda p, v: lib.vjp(nb.predict, p, v)[0])(params, x).jaxpr)))
    assert works[0] == works[1]
    assert_same(*results, rtol=2e-6, atol=2e-7)


def test_constant_residuals_and_programs(both):
    (k, _), (j, _) = both
    (_, kt), (_, jt) = quiet(k.constant_residuals_cell, np.float32(3.0)), quiet(j.constant_residuals_cell,
                                                                                  np.float32(3.0))
    assert kt == jt == ""  # nothing saved
    results, works = [], []
    for nb, lib in both:
        loss = lambda x: lib.numpy.sum(nb.f(x))  # noqa: E731
        results.append((nb.f(np.float32(3.0)), lib.grad(loss)(3.0), lib.jit(lib.grad(loss))(np.float32(-2.0))))
        works.append(_work(lib.make_jaxpr(lib.grad(loss))(3.0).jaxpr))
    assert works[0] == works[1]
    assert_same(*results, rtol=2e-6, atol=2e-6)


def test_static_argnums_cells(both):
    (k, _), (j, _) = both
    results, works, listings = [], [], []
    for nb, lib in both:
        out = []
        for x in (np.float32(-1.3), 0.7):
            out += [nb.foo(x, True), nb.foo(x, False), lib.grad(nb.foo)(x, True), lib.grad(nb.foo)(x, False)]
        for n in (2, 3, 4, 5):
            out += [nb.scaled(1.5, n), lib.grad(nb.scaled)(1.5, n), nb.scaled(np.float32(1.5), n)]
        results.append(out)
        works.append(_work(lib.make_jaxpr(lambda x: nb.scaled(x, 4))(1.5).jaxpr, ("iota", "reduce_sum", "mul")))
        listings.append(quiet(nb.print_saved_residuals, lambda x: nb.foo(x, True), np.float32(0.5))[1])
    assert_same(*results, rtol=2e-6, atol=2e-7)
    assert works[0] == works[1] == (0, 0, 1)
    assert listings[0] == listings[1] == "f32[] from the argument x\n"
