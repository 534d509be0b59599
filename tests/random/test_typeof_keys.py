"""``kiln.typeof`` of typed PRNG key arrays (JAX's docs/new_docs/101/random.md prints ``jax.typeof(key)``)."""
from __future__ import annotations

import kiln
import kiln.random as krandom


def test_typeof_of_a_key_is_a_key_aval():
    key = krandom.key(0)
    t = kiln.typeof(key)
    assert str(t) == "key<fry>[]"
    assert repr(t) == "ShapedArray(key<fry>[])"
    assert t.shape == () and t.ndim == 0 and t.size == 1 and t.dtype == key.dtype and not t.weak_type
    keys = krandom.split(key, (2, 3))
    t2 = kiln.typeof(keys)
    assert str(t2) == "key<fry>[2,3]" and t2.shape == (2, 3) and t2.size == 6
    assert t2 == kiln.typeof(krandom.split(krandom.key(1), (2, 3))) and t2 != t
    assert hash(t2) == hash(kiln.typeof(krandom.split(krandom.key(1), (2, 3))))
    assert t2.update(shape=(6,)).shape == (6,)


def test_typeof_of_a_key_under_transformations():
    seen = []
    keys = krandom.split(krandom.key(0), 4)
    kiln.jit(lambda k: seen.append(str(kiln.typeof(k))))(keys)
    kiln.vmap(lambda k: seen.append(str(kiln.typeof(k))))(keys)
    assert seen == ["key<fry>[4]", "key<fry>[]"]


def test_typeof_of_a_raw_key_is_its_uint32_data():
    assert str(kiln.typeof(krandom.PRNGKey(0))) == "uint32[2]"
