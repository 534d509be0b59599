"""``out_sharding=`` on one device: every function JAX 0.10.2 gives the parameter has it (same kind: keyword-only,
or positional last where JAX has it so); None changes nothing; a one-device mesh lays the result out; bad values
are clear errors. tests/multidevice/test_out_sharding.py checks the layouts on 8 devices."""
from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest

import kiln
import kiln.lax as lax
import kiln.numpy as jnp
import kiln.random as jr
from kiln.sharding import NamedSharding, PartitionSpec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "multidevice"))
from out_sharding_cases import CASES, NAMES, POSITIONAL  # noqa: E402

P = PartitionSpec
MODULES = {"numpy": jnp, "lax": lax, "random": jr}


def test_signatures_have_out_sharding():
    names = {f"{m}.{n}" for m, ns in NAMES.items() for n in ns}
    assert {c[0] for c in CASES} == names  # every function has a case below
    for name in sorted(names):
        module, fn = name.split(".")
        param = inspect.signature(getattr(MODULES[module], fn)).parameters.get("out_sharding")
        assert param is not None, name
        assert param.default is None, name
        kind = param.POSITIONAL_OR_KEYWORD if name in POSITIONAL else param.KEYWORD_ONLY
        assert param.kind is kind, (name, param.kind)


def test_wrapped_functions_keep_their_own_signature_and_name():
    sig = inspect.signature(jnp.dot)
    assert list(sig.parameters)[:4] == ["a", "b", "precision", "preferred_element_type"]
    assert jnp.dot.__name__ == "dot" and "dot" in jnp.dot.__doc__.lower()
    assert list(inspect.signature(jr.exponential).parameters) == ["key", "shape", "dtype", "out_sharding"]
    assert list(inspect.signature(lax.reduce).parameters)[-1] == "out_sharding"


@pytest.fixture(scope="module")
def mesh1():
    return kiln.make_mesh((1, 1), ("x", "y"))


@pytest.mark.parametrize("name, call, spec", CASES, ids=[c[0] for c in CASES])
def test_none_and_one_device_mesh(mesh1, name, call, spec):
    ref = call(None)
    s = NamedSharding(mesh1, P(*spec))
    out = call(s)
    for o, r in zip(kiln.tree_util.tree_leaves(out), kiln.tree_util.tree_leaves(ref)):
        assert o.sharding.is_equivalent_to(s, o.ndim) and o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_array_equal(np.asarray(o), np.asarray(r))


def test_under_jit_on_one_device(mesh1):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with kiln.set_mesh(mesh1):
        f = kiln.jit(lambda a: jnp.dot(a, a.T, out_sharding=P("x")) + jnp.zeros(2, out_sharding=P("y")))
        np.testing.assert_allclose(np.asarray(f(a)), a @ a.T, rtol=1e-6)
    g = kiln.jit(lambda a: jnp.dot(a, a.T, out_sharding=None))
    assert "sharding_constraint" not in g.lower(a).as_text()  # None costs nothing


def test_positional_out_sharding(mesh1):
    s = NamedSharding(mesh1, P("x"))
    a = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    out = lax.reduce(a, np.float32(0), lax.add, (1,), s)
    assert out.sharding.is_equivalent_to(s, 1)
    np.testing.assert_array_equal(np.asarray(out), a.sum(1))


@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.zeros(3, out_sharding="x"), TypeError,
     r"kiln.numpy.zeros: out_sharding must be a kiln.sharding.NamedSharding, a PartitionSpec \(with a mesh set by "
     r"kiln.set_mesh\) or None, got str 'x'"),
    (lambda: lax.dot(np.ones((2, 2)), np.ones((2, 2)), out_sharding=kiln.devices()[0]), TypeError,
     r"kiln.lax.dot: out_sharding must be a kiln.sharding.NamedSharding"),
    (lambda: jr.normal(jr.key(0), (2,), out_sharding=(P(),)), TypeError,
     r"kiln.random.normal: out_sharding must be .* got tuple"),
    (lambda: jnp.ones(4, out_sharding=P("x")), ValueError,
     r"kiln.numpy.ones: out_sharding: a PartitionSpec \(P\('x',\)\) needs a mesh in context: call it under "
     r"`with kiln.set_mesh\(mesh\):`"),
    (lambda: kiln.jit(lambda: lax.broadcasted_iota(np.int32, (2,), 0, out_sharding=P()))(), ValueError,
     r"kiln.lax.broadcasted_iota: out_sharding: a PartitionSpec \(P\(\)\) needs a mesh in context"),
    (lambda: lax.reduce(np.ones(2), 0.0, lax.add, (0,), None, None), TypeError,
     r"kiln.lax.reduce\(\) takes at most 5 positional arguments \(out_sharding last\), got 6"),
    (lambda: lax.reduce(np.ones(2), 0.0, lax.add, (0,), None, out_sharding=None), TypeError,
     r"kiln.lax.reduce\(\) got multiple values for argument 'out_sharding'"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_decorator_misuse_is_refused():
    from kiln.frontend.lax.sharding import takes_out_sharding

    def has_it(x, *, out_sharding=None):
        return x

    def keyword_only(x, *, y=1):
        return x

    with pytest.raises(TypeError, match=r"takes_out_sharding: kiln\..*has_it already has an out_sharding parameter"):
        takes_out_sharding(has_it)
    with pytest.raises(TypeError, match=r"takes_out_sharding: kiln\..*keyword_only must have positional parameters "
                                        "only to take out_sharding positionally"):
        takes_out_sharding(keyword_only, positional=True)
    wrapped = takes_out_sharding(keyword_only)
    assert list(inspect.signature(wrapped).parameters) == ["x", "y", "out_sharding"] and wrapped(3, y=2) == 3
