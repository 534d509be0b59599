"""debug_key_reuse: a typed PRNG key consumed twice raises KeyReuseError, as JAX's checker does; raw uint32
keys are not tracked, and without the flag nothing is checked."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax, random
from kiln.errors import KeyReuseError

_AGAIN = r"kiln.random.{}: previously-consumed key passed \(debug_key_reuse is on\)"
_LOOP = r"kiln.random.{}: a loop body \(scan, fori_loop, while_loop\) consumes a key it closes over"
_CARRY = r"kiln.lax.{}: the loop body returns in its carry a PRNG key it consumed"


@pytest.fixture(autouse=True)
def checking():
    with kiln.debug_key_reuse(True):
        yield


def test_a_key_drawn_from_twice():
    key = random.key(0)
    random.normal(key)
    with pytest.raises(KeyReuseError, match=_AGAIN.format("uniform")) as info:
        random.uniform(key)
    assert "key, subkey = kiln.random.split(key)" in str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, kiln.KilnError)
    with pytest.raises(KeyReuseError, match=_AGAIN.format("split")):
        random.split(key)


def test_split_keys_each_once_and_reading_is_no_use():
    key = random.key(1)
    a, b = random.split(key)
    random.normal(a), random.normal(b)
    with pytest.raises(KeyReuseError, match=_AGAIN.format("normal")):
        random.normal(a)
    fresh = random.key(2)
    random.key_data(fresh), random.fold_in(fresh, 1), random.fold_in(fresh, 2)  # JAX's fold_in consumes nothing
    random.normal(fresh)
    copy = random.clone(fresh)
    np.testing.assert_array_equal(random.normal(copy), random.normal(random.key(2)))  # a clone is unconsumed


def test_within_one_trace():
    with pytest.raises(KeyReuseError, match=_AGAIN.format("uniform")):
        kiln.jit(lambda k: (random.normal(k), random.uniform(k)))(random.key(3))
    with pytest.raises(KeyReuseError, match=_AGAIN.format("split")):
        lax.while_loop(lambda c: c[1] < 3.0,
                       lambda c: (random.split(c[0])[0], c[1] + random.uniform(random.split(c[0])[1])),
                       (random.key(4), 0.0))
    kiln.vmap(random.normal)(random.split(random.key(5), 3))  # one use per key


def test_loop_bodies_consuming_a_key_they_close_over():
    key = random.key(6)
    with pytest.raises(KeyReuseError, match=_LOOP.format("normal")) as info:
        lax.fori_loop(0, 3, lambda i, x: x + random.normal(key), 0.0)
    assert "fold_in(key, i)" in str(info.value)
    with pytest.raises(KeyReuseError, match=_LOOP.format("uniform")):
        lax.scan(lambda c, x: (c, random.uniform(key)), 0.0, None, length=3)
    with pytest.raises(KeyReuseError, match=_LOOP.format("bits")):
        lax.while_loop(lambda c: c < 3, lambda c: c + random.bits(key).astype(int) * 0 + 1, 0)
    # Keys made inside the body, carried, or scanned over are each used once per iteration.
    lax.scan(lambda c, x: (c, random.normal(random.key(7))), 0.0, None, length=3)
    lax.scan(lambda c, x: tuple(random.split(c)), random.key(8), None, length=3)
    _, ys = lax.scan(lambda c, k: (c, random.normal(k)), 0.0, random.split(random.key(9), 3))
    np.testing.assert_array_equal(ys, [random.normal(k) for k in random.split(random.key(9), 3)])
    lax.fori_loop(0, 3, lambda i, x: x + random.normal(random.fold_in(key, i)), 0.0)


def test_a_loop_carrying_a_consumed_key():
    with pytest.raises(KeyReuseError, match=_CARRY.format(r"scan\(<lambda>\)")):
        lax.scan(lambda c, x: (c, random.normal(c)), random.key(10), None, length=3)
    with pytest.raises(KeyReuseError, match=_CARRY.format(r"while_loop\(<lambda>\)")):
        lax.while_loop(lambda c: c[1] < 2.0, lambda c: (c[0], c[1] + random.uniform(c[0])), (random.key(11), 0.0))


def test_cond_branches_are_alternatives():
    key = random.key(12)
    lax.cond(True, lambda: random.normal(key), lambda: random.uniform(key))  # either branch, once
    with pytest.raises(KeyReuseError, match=_AGAIN.format("normal")):
        random.normal(key)  # after the cond it is consumed
    lax.switch(1, [random.normal, random.uniform, random.gumbel], random.key(13))


def test_raw_keys_and_the_flag_off_are_not_checked():
    raw = random.PRNGKey(0)
    random.normal(raw), random.normal(raw)
    with kiln.debug_key_reuse(False):
        key = random.key(14)
        np.testing.assert_array_equal(random.normal(key), random.normal(key))
    assert knp.all(random.uniform(random.key(15), (4,)) < 1)


def test_jitted_functions_consume_the_keys_they_are_passed():
    sample = kiln.jit(lambda key, scale: random.normal(key) * scale)
    key = random.key(16)
    first = sample(key, 2.0)
    with pytest.raises(KeyReuseError, match=r"kiln.jit\(<lambda>\): argument key is a previously-consumed PRNG "
                                            r"key, and the function consumes it \(debug_key_reuse is on\)"):
        sample(key, 3.0)  # the classic bug: a training step called with the same key every time
    np.testing.assert_array_equal(first, random.normal(random.key(16)) * 2.0)
    peek = kiln.jit(lambda keys: random.key_data(keys["a"]))
    keys = {"a": random.key(17)}
    peek(keys), peek(keys)  # reading is no use
    random.normal(keys["a"])
    with pytest.raises(KeyReuseError, match=r"argument keys\['a'\] is a previously-consumed PRNG key"):
        kiln.jit(lambda keys: random.uniform(keys["a"]))(keys)
    with pytest.raises(KeyReuseError, match=_AGAIN.format("normal")):
        kiln.jit(lambda k: (sample(k, 1.0), random.normal(k)))(random.key(18))  # a nested jit consumes it first


def test_toggling_the_flag_retraces():
    sample = kiln.jit(random.normal)
    key = random.key(19)
    with kiln.debug_key_reuse(False):
        sample(key), sample(key)  # traced and run without checks
    sample(key)
    with pytest.raises(KeyReuseError, match=r"argument key is a previously-consumed PRNG key"):
        sample(key)
