"""JAX's docs page docs/new_docs/101/arrays.md under kiln and under JAX give the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_arrays_101.py; the JAX side is the same source with JAX's imports put
back. The NumPy oracles and the page's claims are in test_docs_arrays_101.py; this checks that the two libraries
agree block by block: what the blocks print, the values bit for bit (dtypes, weak types, shapes), the JAX types'
text, the shardings' text, the exception classes of the blocks that raise, the truncation warning of a float64
request, and the dtypes once the page's x64 sketch has run (turned off again afterwards, on both sides).
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_arrays_101"), load("docs_arrays_101", "jax")


def _same(k_res, j_res):
    assert_same(k_res, j_res, 0.0, allow_empty=True)


def test_from_numpy_to_jax(both):
    k, j = both
    ((kx, ky), kout), ((jx, jy), jout) = quiet(k.numpy_like_block), quiet(j.numpy_like_block)
    assert kout == jout
    _same((kx, ky), (jx, jy))
    assert k.isinstance_block(kx) is j.isinstance_block(jx) is True
    assert k.isinstance_block(np.ones(2)) is j.isinstance_block(np.ones(2)) is False
    assert quiet(k.typeof_block, kx)[1] == quiet(j.typeof_block, jx)[1] == "float32[3,3]\n"
    for make in (lambda np_: np_.arange(10), lambda np_: np_.asarray(1.0), lambda np_: np_.arange(3) > 1,
                 lambda np_: np_.zeros((2, 0, 4), np_.bfloat16)):
        assert quiet(k.typeof_block, make(kiln.numpy))[1] == quiet(j.typeof_block, make(jax.numpy))[1]


def test_immutability_and_at(both):
    k, j = both
    assert quiet(k.numpy_mutation_block)[1] == quiet(j.numpy_mutation_block)[1]
    (kerr, _), (jerr, _) = outcome(k.immutable_block), outcome(j.immutable_block)
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)
    kx, jx = kiln.numpy.arange(10), jax.numpy.arange(10)
    (ky, kout), (jy, jout) = quiet(k.at_set_block, kx), quiet(j.at_set_block, jx)
    assert kout == jout
    _same(ky, jy)
    assert quiet(k.at_family_block, kx)[1] == quiet(j.at_family_block, jx)[1]
    idx, vals = np.array([1, 4, 1, 0, 4]), np.array([2.0, 0.5, -3.0, 7.0, 6.0], np.float32)
    for name in ("set", "add", "multiply", "min", "max"):
        _same(getattr(kiln.numpy.arange(6.0).at[idx], name)(vals), getattr(jax.numpy.arange(6.0).at[idx], name)(vals))


def test_dtypes_and_promotion(both):
    k, j = both
    assert quiet(k.default_dtypes_block)[1] == quiet(j.default_dtypes_block)[1] == "float64\nfloat32\n"
    assert k.promotion_block() == j.promotion_block() == np.float32
    for lib in (kiln, jax):  # a float64 request: float32, with a warning naming the way out
        with pytest.warns(UserWarning, match="Explicitly requested dtype float64 .*not available.*jax_enable_x64"):
            assert lib.numpy.array([1.0, 2.0], dtype=lib.numpy.float64).dtype == np.float32
    _same(k.jnp_add_block(), j.jnp_add_block())


def test_the_x64_sketch(both):
    k, j = both
    try:
        k.enable_x64_sketch()
        j.enable_x64_sketch()
        assert quiet(k.default_dtypes_block)[1] == quiet(j.default_dtypes_block)[1] == "float64\nfloat64\n"
        assert k.promotion_block() == j.promotion_block() == np.float64
        _same(k.jnp_add_block(), j.jnp_add_block())
        _same(kiln.numpy.sin(kiln.numpy.array([0.1, 1 / 3])), jax.numpy.sin(jax.numpy.array([0.1, 1 / 3])))
    finally:
        kiln.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def test_indexing_differences(both):
    k, j = both
    (kv, kx), (jv, jx) = k.clamped_read_block(), j.clamped_read_block()
    _same((kv, kx), (jv, jx))
    _same(k.dropped_write_block(kx), j.dropped_write_block(jx))
    for i in (10, -11, 100):
        _same(kx[i], jx[i])
        _same(kiln.jit(lambda i: kx[i])(i), jax.jit(lambda i: jx[i])(i))
        _same(kx.at[i].add(5), jx.at[i].add(5))
    _same(kx.at[11].get(mode="fill", fill_value=-1), jx.at[11].get(mode="fill", fill_value=-1))
    _same(kx.at[11].set(99, mode="clip"), jx.at[11].set(99, mode="clip"))
    (kerr, _), (jerr, _) = outcome(k.list_argument_block), outcome(j.list_argument_block)
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)
    _same(k.explicit_array_block(), j.explicit_array_block())


def test_sharding(both):
    k, j = both
    ks, js = k.sharding_block(kiln.numpy.arange(10)), j.sharding_block(jax.numpy.arange(10))
    assert type(ks).__name__ == type(js).__name__ == "SingleDeviceSharding"
    assert repr(ks) == repr(js) and str(ks) == str(js)  # (both on CPU here)
    assert ks.memory_kind == js.memory_kind and ks.shard_shape((10,)) == js.shard_shape((10,))


def test_under_the_hood(both):
    k, j = both
    for value in (2, 2.0, np.arange(3), np.linspace(-3.0, 3.0, 7), 1j, True):
        _same(k.sin(value), j.sin(value))
        _same(k.jnp.sin(value), j.jnp.sin(value))
    _same(k.sin(kiln.numpy.arange(3, dtype=kiln.numpy.bfloat16)), j.sin(jax.numpy.arange(3, dtype=jax.numpy.bfloat16)))
    (kerr, _), (jerr, _) = outcome(k.lax_add_block), outcome(j.lax_add_block)
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)
    _same(k.lax.add(1.0, 1.0), j.lax.add(1.0, 1.0))
