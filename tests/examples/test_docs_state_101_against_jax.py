"""JAX's docs page docs/new_docs/101/state.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_state_101.py; the JAX side is the same source with JAX's imports put
back. The NumPy oracles and the page's claims are in test_docs_state_101.py; this checks that the two libraries agree
block by block: what the blocks print, the jaxprs' text, the values (dtypes, weak types, shapes), the exception
classes of the blocks that raise. Differences, tested as such: kiln warns (``TraceSideEffectWarning``) where the
untraceable counter is traced, JAX is silent; an out-of-bounds static index of a Ref is an error in kiln everywhere
(the page's rule), where JAX 0.10.2 checks only non-negative indices outside ``jit``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402
from kiln.errors import TraceSideEffectWarning  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_state_101"), load("docs_state_101", "jax")


def test_counters_and_their_jaxprs(both):
    k, j = both
    (kc, kout), (jc, jout) = quiet(k.counter_block), quiet(j.counter_block)
    assert kout == jout and kc.n == jc.n
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX: silent
        jclosed, jc = j.counter_jaxpr_block()
    with pytest.warns(TraceSideEffectWarning):
        kclosed, kc = k.counter_jaxpr_block()
    assert str(kclosed) == str(jclosed) and kc.n == jc.n
    (kc, ks), kout = quiet(k.counter_v2_block)
    (jc, js), jout = quiet(j.counter_v2_block)
    assert kout == jout and ks == js
    assert str(k.counter_v2_jaxpr_block(kc)) == str(j.counter_v2_jaxpr_block(jc))


def test_training_loop(both):
    k, j = both
    (kres, kout), (jres, jout) = quiet(k.training_block), quiet(j.training_block)
    assert kout == jout
    assert_same(kres, jres, rtol=1e-5)
    batch = np.array([1.0, 2.0, 3.0], np.float32), np.array([3.0, 5.0, 7.0], np.float32)
    # one more step, jitted, from the loop's state
    kstep = kiln.jit(k.update)(*kres, tuple(kiln.numpy.asarray(b) for b in batch))
    jstep = jax.jit(j.update)(*jres, tuple(jax.numpy.asarray(b) for b in batch))
    assert_same(kstep, jstep, rtol=1e-5)


def test_refs(both):
    k, j = both
    ((kref, kf), kout), ((jref, jf), jout) = quiet(k.new_ref_block), quiet(j.new_ref_block)
    assert kout == jout
    assert_same(kref[...], jref[...], 0.0)
    assert kf() is None and jf() is None
    assert_same(kref[...], jref[...], 0.0)
    assert quiet(k.grad_block)[1] == quiet(j.grad_block)[1]
    assert_same(kiln.grad(k.g)(0.3), jax.grad(j.g)(0.3))
    (kerr, _), (jerr, _) = outcome(k.math_on_a_ref_block), outcome(j.math_on_a_ref_block)
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)


def test_indexing_and_freeze(both):
    k, j = both
    (kref, *kread), (jref, *jread) = k.indexing_block(), j.indexing_block()
    assert_same(kread, jread, 0.0)
    assert_same(kref[...], jref[...], 0.0)
    assert_same(k.freeze_block(kref), j.freeze_block(jref), 0.0)


@pytest.mark.parametrize("index", [5, 3, np.int32(4), (0, 4), (Ellipsis, 4)], ids=str)
def test_static_out_of_bounds_index_outside_jit(index):
    """Reads and writes of a Ref at a non-negative out-of-bounds index known in advance: the same class of error
    (ValueError) in both."""
    for lib in (kiln, jax):
        x_ref = lib.new_ref(lib.numpy.arange(12.0).reshape(3, 4))
        for use in (lambda: x_ref[index], lambda: x_ref.__setitem__(index, 0.0)):
            with pytest.raises(ValueError, match="(?i)out of bound"):
                use()


@pytest.mark.parametrize("index", [-4, (1, -5)], ids=str)
def test_negative_out_of_bounds_index_differs(index):
    """A negative index past the start: kiln raises (the page's rule, NumPy's bounds); JAX 0.10.2 does not check."""
    k_ref = kiln.new_ref(kiln.numpy.arange(12.0).reshape(3, 4))
    j_ref = jax.new_ref(jax.numpy.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match="out of bounds"):
        k_ref[index]
    j_ref[index]


def test_static_out_of_bounds_index_under_jit_differs():
    """Under jit (a closed-over ref, a Python int index): kiln raises as outside jit; JAX 0.10.2 clamps."""
    k_ref, j_ref = kiln.new_ref(kiln.numpy.arange(3.0)), jax.new_ref(jax.numpy.arange(3.0))
    with pytest.raises(ValueError, match="out of bounds"):
        kiln.jit(lambda: k_ref[5])()
    assert float(jax.jit(lambda: j_ref[5])()) == 2.0


def test_refs_and_purity(both):
    k, j = both
    assert_same(k.normalize_grad_block(), j.normalize_grad_block(), atol=1e-7)
    (kref, kout), (jref, jout) = quiet(k.scale_into_block), quiet(j.scale_into_block)
    assert kout == jout
    assert_same(kref[...], jref[...], 0.0)
    (kerr, _), (jerr, _) = outcome(k.write_shared_block), outcome(j.write_shared_block)
    assert isinstance(jerr, Exception) and isinstance(kerr, ValueError)
    assert_same_exception(kerr, jerr)
