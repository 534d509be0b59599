"""``out_sharding=`` of the kiln.numpy / kiln.lax / kiln.random functions that take it (as in JAX 0.10.2): the
result laid out by the NamedSharding (or a PartitionSpec under kiln.set_mesh), eager and under jit, with the
values of the call without it; gradients through it; the errors."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kiln
import kiln.lax as lax
import kiln.numpy as jnp
from kiln.sharding import NamedSharding, PartitionSpec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from out_sharding_cases import CASES  # noqa: E402

P = PartitionSpec


@pytest.fixture(scope="module")
def mesh():
    return kiln.make_mesh((4, 2), ("x", "y"))


def _check(out, ref, sharding, exact: bool):
    outs, refs = kiln.tree_util.tree_leaves(out), kiln.tree_util.tree_leaves(ref)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.sharding.is_equivalent_to(sharding, o.ndim), (o.sharding, sharding)
        if exact:
            np.testing.assert_array_equal(np.asarray(o), np.asarray(r))
        else:
            np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, call, spec", CASES, ids=[c[0] for c in CASES])
def test_out_sharding(mesh, name, call, spec):
    ref = call(None)
    s = NamedSharding(mesh, P(*spec))
    _check(call(s), ref, s, exact=True)  # eager: the same values, laid out
    with kiln.set_mesh(mesh):
        _check(call(P(*spec)), ref, s, exact=True)
    f = kiln.jit(lambda: call(s))
    _check(f(), ref, s, exact=False)  # XLA may fuse differently once partitioned
    assert "sdy.sharding_constraint" in f.lower().as_text()


def test_none_adds_nothing():
    text = kiln.jit(lambda a, b: jnp.dot(a, b, out_sharding=None)).lower(np.ones((2, 2)), np.ones((2, 2))).as_text()
    assert "sharding_constraint" not in text


def test_grad_through_dot(mesh):
    a = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
    b = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    s = NamedSharding(mesh, P("x", "y"))

    def loss(a, b):
        return (jnp.dot(a, b, out_sharding=s) ** 2).sum()

    ga, gb = kiln.grad(loss, argnums=(0, 1))(a, b)
    ja, jb = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(a, b)
    c = a @ b  # d/dA sum((AB)^2) = 2 (AB) B^T, d/dB = 2 A^T (AB)
    for g, want in ((ga, 2 * c @ b.T), (gb, 2 * a.T @ c), (ja, 2 * c @ b.T), (jb, 2 * a.T @ c)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    with kiln.set_mesh(mesh):
        v = kiln.jit(kiln.vmap(lambda r: jnp.dot(r, b, out_sharding=P("y"))))(a)
    assert v.sharding.is_equivalent_to(NamedSharding(mesh, P(None, "y")), 2)
    np.testing.assert_allclose(np.asarray(v), a @ b, rtol=1e-6, atol=1e-6)


def test_rng_bit_generator_lays_out_the_bits_only(mesh):
    key = kiln.device_put(np.arange(4, dtype=np.uint32), NamedSharding(mesh, P()))
    new_key, bits = lax.rng_bit_generator(key, (8, 4), out_sharding=NamedSharding(mesh, P("x")))
    assert bits.sharding.is_equivalent_to(NamedSharding(mesh, P("x")), 2)
    assert new_key.sharding.is_equivalent_to(NamedSharding(mesh, P()), 1)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: jnp.zeros(6, out_sharding=NamedSharding(m, P("x"))), ValueError,
     r"kiln.numpy.zeros: out_sharding does not fit the result of shape \(6,\): .*splits dimension 0 of shape "
     r"\(6,\) into 4 pieces"),
    (lambda m: kiln.jit(lambda: jnp.ones((8, 3), out_sharding=NamedSharding(m, P(None, "y"))))(), ValueError,
     r"kiln.numpy.ones: out_sharding does not fit the result of shape \(8, 3\): .*splits dimension 1"),
    (lambda m: jnp.dot(np.ones((8, 2)), np.ones((2, 2)), out_sharding=NamedSharding(m, P("x", "y", None))),
     ValueError, r"kiln.numpy.dot: out_sharding does not fit the result of shape \(8, 2\): .*"),
    (lambda m: kiln.random.normal(kiln.random.key(0), (8,), out_sharding=m), TypeError,
     r"kiln.random.normal: out_sharding must be a kiln.sharding.NamedSharding, a PartitionSpec .* got Mesh"),
])
def test_errors(mesh, call, error, message):
    with pytest.raises(error, match=message):
        call(mesh)
