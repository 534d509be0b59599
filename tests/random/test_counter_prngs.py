"""The threefry4x32, philox4x32 and philox2x32 PRNG implementations (JAX's). The ciphers are checked against
Random123's known-answer vectors and a NumPy model of each written here; the keys, splits, fold_ins and bits
against the layouts built on the NumPy model (jit, vmap and batches of keys included); the samplers and the
flags against their contracts. Where JAX is installed (``nox -s against_jax``), keys, bits and samples are
compared with JAX's bit for bit; JAX is never the source of the other tests' expected values."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import kiln
import kiln.extend.random as extend_random
import kiln.numpy as knp
from kiln import random

M32 = np.uint64(0xFFFFFFFF)
IMPLS = {"threefry4x32": ("fry4", 4), "philox4x32": ("phx4", 2), "philox2x32": ("phx2", 1)}


# -- NumPy models of the ciphers (uint32 words, wrapping arithmetic in uint64) ----------------------------------

def _u(x):
    return np.asarray(x, np.uint64) & M32


def _rotl(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & M32


def np_threefry4x32(key, ctr):
    rot = [(10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20)]
    ks = [_u(k) for k in key]
    ks.append(ks[0] ^ ks[1] ^ ks[2] ^ ks[3] ^ np.uint64(0x1BD11BDA))
    x = [(_u(c) + k) & M32 for c, k in zip(ctr, ks)]
    for rnd in range(20):
        r0, r1 = rot[rnd % 8]
        pairs = [(0, 1, r0), (2, 3, r1)] if rnd % 2 == 0 else [(0, 3, r0), (2, 1, r1)]
        for a, b, r in pairs:
            x[a] = (x[a] + x[b]) & M32
            x[b] = _rotl(x[b], r) ^ x[a]
        if rnd % 4 == 3:
            s = rnd // 4 + 1
            x = [(w + ks[(s + i) % 5]) & M32 for i, w in enumerate(x)]
            x[3] = (x[3] + np.uint64(s)) & M32
    return [w.astype(np.uint32) for w in x]


def _mulhilo(m, x):
    p = np.uint64(m) * x  # < 2**64: no overflow in uint64
    return p & M32, p >> np.uint64(32)


def np_philox4x32(key, ctr):
    k0, k1 = _u(key[0]), _u(key[1])
    x0, x1, x2, x3 = (_u(c) for c in ctr)
    for rnd in range(10):
        if rnd:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
        lo0, hi0 = _mulhilo(0xD2511F53, x0)
        lo1, hi1 = _mulhilo(0xCD9E8D57, x2)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return [w.astype(np.uint32) for w in (x0, x1, x2, x3)]


def np_philox2x32(key, ctr):
    k0 = _u(key[0])
    x0, x1 = _u(ctr[0]), _u(ctr[1])
    for rnd in range(10):
        if rnd:
            k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        lo, hi = _mulhilo(0xD256D193, x0)
        x0, x1 = hi ^ x1 ^ k0, lo
    return [w.astype(np.uint32) for w in (x0, x1)]


CIPHERS = {"threefry4x32": (np_threefry4x32, 4), "philox4x32": (np_philox4x32, 4), "philox2x32": (np_philox2x32, 2)}


def np_seed(impl, seed):
    """The key of a seed: its 64-bit value (hi, lo) in the key (threefry4x32) or the counter (philox)."""
    cipher, n_ctr = CIPHERS[impl]
    hi, lo = (seed % 2**64) >> 32, seed % 2**32
    n_key = IMPLS[impl][1]
    if impl == "threefry4x32":
        words = cipher([hi, lo, 0, 0], [0] * n_ctr)
    else:
        words = cipher([0] * n_key, [hi, lo] + [0] * (n_ctr - 2))
    return np.array([w for w in words[:n_key]], np.uint32).reshape(n_key)


def np_hash(impl, key, counters):
    cipher, _ = CIPHERS[impl]
    return cipher(list(key), counters)


def np_split(impl, key, n):
    _, n_ctr = CIPHERS[impl]
    i = np.arange(n, dtype=np.uint64)
    words = np_hash(impl, key, [np.zeros(n)] * (n_ctr - 2) + [i >> np.uint64(32), i & M32])
    return np.stack(words[:IMPLS[impl][1]], axis=-1)


def np_bits32(impl, key, n):
    _, n_ctr = CIPHERS[impl]
    i = np.arange(n, dtype=np.uint64)
    words = np_hash(impl, key, [i >> np.uint64(32), i & M32] + [np.zeros(n)] * (n_ctr - 2))
    return np.bitwise_xor.reduce(np.stack(words), axis=0)


def np_fold_in(impl, key, data):
    _, n_ctr = CIPHERS[impl]
    words = np_hash(impl, key, [0] * (n_ctr - 1) + [data])
    return np.array(words[:IMPLS[impl][1]], np.uint32).reshape(-1)


def _data(keys):
    return np.asarray(random.key_data(keys))


# -- the ciphers ------------------------------------------------------------------------------------------------

def test_numpy_models_give_random123s_known_answers():
    """Random123's kat_vectors for the zero key and counter (the models below are checked by them)."""
    assert [hex(int(w)) for w in np_threefry4x32([0] * 4, [0] * 4)] == [
        "0x9c6ca96a", "0xe17eae66", "0xfc10ecd4", "0x5256a7d8"]
    assert [hex(int(w)) for w in np_philox4x32([0] * 2, [0] * 4)] == [
        "0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    assert [hex(int(w)) for w in np_philox2x32([0], [0] * 2)] == ["0xff1dae59", "0x6cd10df2"]


@pytest.mark.parametrize("impl", IMPLS)
def test_seed_is_the_cipher_of_the_seed(impl):
    for seed in (0, 1, 42, 2**31 - 1, -7):
        key = random.key(seed, impl=impl)
        expected = np_seed(impl, seed if seed >= 0 else seed % 2**32)  # a negative Python int: a 32-bit seed
        np.testing.assert_array_equal(_data(key), expected, err_msg=f"seed {seed}")
    with kiln.enable_x64(True):
        for seed in (2**40 + 3, -2**50):
            np.testing.assert_array_equal(_data(random.key(seed, impl=impl)), np_seed(impl, seed))


@pytest.mark.parametrize("impl", IMPLS)
def test_split_fold_in_and_bits_follow_the_layouts(impl):
    key = random.key(42, impl=impl)
    k = _data(key)
    np.testing.assert_array_equal(_data(random.split(key, 6)), np_split(impl, k, 6))
    np.testing.assert_array_equal(_data(random.split(key, (2, 3))), np_split(impl, k, 6).reshape(2, 3, -1))
    np.testing.assert_array_equal(_data(random.fold_in(key, 12345)), np_fold_in(impl, k, 12345))
    bits = np_bits32(impl, k, 10)
    np.testing.assert_array_equal(np.asarray(random.bits(key, (10,))), bits)
    np.testing.assert_array_equal(np.asarray(random.bits(key, (2, 5))), bits.reshape(2, 5))
    np.testing.assert_array_equal(np.asarray(random.bits(key, (10,), dtype=knp.uint8)), bits.astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(random.bits(key, (10,), dtype=knp.uint16)), bits.astype(np.uint16))


def test_64_bit_bits_take_two_words_high_first():
    with kiln.enable_x64(True):
        for impl in IMPLS:
            key = random.key(3, impl=impl)
            cipher, n_ctr = CIPHERS[impl]
            i = np.arange(4, dtype=np.uint64)
            w = np_hash(impl, _data(key), [i >> np.uint64(32), i & M32] + [np.zeros(4)] * (n_ctr - 2))
            w = [x.astype(np.uint64) for x in w]
            hi, lo = (w[0] ^ w[2], w[1] ^ w[3]) if impl == "threefry4x32" else (w[0], w[1])
            np.testing.assert_array_equal(np.asarray(random.bits(key, (4,), dtype=knp.uint64)),
                                          (hi << np.uint64(32)) | lo, err_msg=impl)


@pytest.mark.parametrize("impl", IMPLS)
def test_batches_of_keys_under_jit_and_vmap_match_one_key_at_a_time(impl):
    keys = random.split(random.key(5, impl=impl), 4)
    data = _data(keys)
    msgs = knp.arange(4, dtype=knp.uint32)
    folded = kiln.jit(kiln.vmap(random.fold_in))(keys, msgs)
    np.testing.assert_array_equal(_data(folded), np.stack([np_fold_in(impl, d, i) for i, d in enumerate(data)]))
    np.testing.assert_array_equal(_data(kiln.vmap(lambda k: random.fold_in(k, 9))(keys)),
                                  np.stack([np_fold_in(impl, d, 9) for d in data]))
    drawn = kiln.vmap(lambda k: random.bits(k, (3,)))(keys)
    np.testing.assert_array_equal(np.asarray(drawn), np.stack([np_bits32(impl, d, 3) for d in data]))
    split = kiln.jit(kiln.vmap(lambda k: random.split(k, 2)))(keys)
    np.testing.assert_array_equal(_data(split), np.stack([np_split(impl, d, 2) for d in data]))


@pytest.mark.parametrize("impl", IMPLS)
def test_samplers_take_the_keys(impl):
    key = random.key(0, impl=impl)
    u = np.asarray(random.uniform(key, (20000,)))
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    # uniform is the mantissa of the bits with the exponent of 1.0, minus one
    bits = np_bits32(impl, _data(key), 5)
    np.testing.assert_array_equal(np.asarray(random.uniform(key, (5,))),
                                  ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - 1.0)
    z = np.asarray(kiln.jit(lambda k: random.normal(k, (20000,)))(key))
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    p = np.asarray(random.permutation(key, 50))
    np.testing.assert_array_equal(np.sort(p), np.arange(50))
    g = kiln.grad(lambda s: knp.sum(s * random.normal(key, (3,))))(2.0)
    np.testing.assert_allclose(g, np.sum(np.asarray(random.normal(key, (3,)))), rtol=1e-6)


# -- keys, impl objects, flags ------------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_keys_print_their_tag_and_wrap_their_data(impl):
    tag, words = IMPLS[impl]
    key = random.key(1, impl=impl)
    assert key.dtype.name == f"key<{tag}>" and random.key_impl(key) == impl and key.itemsize == 4 * words
    assert str(kiln.typeof(random.split(key, 3))) == f"key<{tag}>[3]"
    raw = random.PRNGKey(1, impl=impl)
    assert raw.shape == (words,) and raw.dtype == np.uint32
    wrapped = random.wrap_key_data(np.asarray(raw), impl=impl)
    np.testing.assert_array_equal(np.asarray(random.uniform(wrapped, (3,))), np.asarray(random.uniform(key, (3,))))
    impl_obj = getattr(extend_random, f"{impl}_prng_impl")
    assert impl_obj.name == impl and impl_obj.key_shape == (words,) and random.key(1, impl=impl_obj).dtype == key.dtype


def test_default_prng_impl_takes_every_name():
    try:
        for impl in IMPLS:
            kiln.config.update("jax_default_prng_impl", impl)
            assert random.key(3).dtype.name == f"key<{IMPLS[impl][0]}>"
            assert random.PRNGKey(3).shape == (IMPLS[impl][1],)
    finally:
        kiln.config.update("jax_default_prng_impl", "threefry2x32")
    every = r"kiln implements 'threefry2x32', 'threefry4x32', 'rbg', 'unsafe_rbg', 'philox2x32' and 'philox4x32'"
    with pytest.raises(ValueError, match=r"kiln.random.key: unrecognized PRNG implementation 'philox'; " + every):
        random.key(0, impl="philox")
    with pytest.raises(ValueError, match=r"unknown PRNG implementation; " + every):
        kiln.config.update("jax_default_prng_impl", "philox")



# -- a user's implementation (kiln.extend.random.define_prng_impl) ---------------------------------------------------

def _toy_impl():
    """A toy implementation of one key at a time (two words), with its NumPy model below."""
    def seed(s):
        s = knp.asarray(s).astype(knp.uint32)
        return knp.stack([s, s ^ np.uint32(0x9E3779B9)])

    def split(key, shape):
        i = knp.arange(int(np.prod(shape)), dtype=knp.uint32)
        return knp.stack([key[0] * np.uint32(3) + i, key[1] ^ (i * np.uint32(7))], -1).reshape(tuple(shape) + (2,))

    def fold_in(key, data):
        return knp.stack([key[0] + data, key[1] ^ data])

    def random_bits(key, bit_width, shape):
        i = knp.arange(int(np.prod(shape)), dtype=knp.uint32)
        bits = (key[0] * np.uint32(2654435761) + i) ^ key[1]
        return bits.reshape(shape).astype(f"uint{bit_width}")

    return extend_random.define_prng_impl(key_shape=(2,), seed=seed, split=split, random_bits=random_bits,
                                          fold_in=fold_in, name="toy", tag="toy")


def _np_toy_bits(key, n):
    k0, k1 = (np.uint64(w) for w in key)
    return ((((k0 * np.uint64(2654435761)) + np.arange(n, dtype=np.uint64)) & M32) ^ k1).astype(np.uint32)


def test_define_prng_impl_makes_keys_of_a_users_implementation():
    toy = _toy_impl()
    key = random.key(5, impl=toy)
    assert key.dtype.name == "key<toy>" and random.key_impl(key) == "toy" and key.shape == ()
    k = np.array([5, 5 ^ 0x9E3779B9], np.uint32)
    np.testing.assert_array_equal(_data(key), k)
    i = np.arange(6, dtype=np.uint32)
    expected_split = np.stack([k[0] * np.uint32(3) + i, k[1] ^ (i * np.uint32(7))], -1)
    np.testing.assert_array_equal(_data(random.split(key, (2, 3))), expected_split.reshape(2, 3, 2))
    np.testing.assert_array_equal(_data(kiln.jit(random.split, static_argnums=1)(key, 6)), expected_split)
    np.testing.assert_array_equal(_data(random.fold_in(key, 9)), [k[0] + 9, k[1] ^ 9])
    np.testing.assert_array_equal(np.asarray(random.bits(key, (4,))), _np_toy_bits(k, 4))
    bits = _np_toy_bits(k, 3)
    np.testing.assert_array_equal(np.asarray(random.uniform(key, (3,))),
                                  ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - 1.0)
    keys = random.split(key, 4)  # a batch: the one-key functions mapped with vmap
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda kk: random.bits(kk, (2,)))(keys)),
                                  np.stack([_np_toy_bits(d, 2) for d in expected_split[:4]]))
    folded = kiln.vmap(random.fold_in)(keys, knp.arange(4, dtype=knp.uint32))
    np.testing.assert_array_equal(_data(folded), [[d[0] + j, d[1] ^ j] for j, d in enumerate(expected_split[:4])])


def test_a_users_implementation_is_not_a_name():
    toy = _toy_impl()
    with pytest.raises(TypeError, match="cannot pickle the unregistered PRNG implementation"):
        pickle.dumps(toy)
    with pytest.raises(ValueError, match=r"kiln.config.update\('jax_default_prng_impl', 'toy'\): unknown PRNG"):
        kiln.config.update("jax_default_prng_impl", "toy")


# -- against JAX, where it is installed (nox -s against_jax) -------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_against_jax_bit_for_bit(impl):
    jax = pytest.importorskip("jax")
    jr = jax.random
    for seed in (0, 42, 2 ** 31 + 5, -3):
        jk, kk = jr.key(seed, impl=impl), random.key(seed, impl=impl)
        np.testing.assert_array_equal(_data(kk), np.asarray(jr.key_data(jk)))
        np.testing.assert_array_equal(_data(random.split(kk, (2, 3))), np.asarray(jr.key_data(jr.split(jk, (2, 3)))))
        np.testing.assert_array_equal(_data(random.fold_in(kk, 7)), np.asarray(jr.key_data(jr.fold_in(jk, 7))))
        for dtype in ("uint8", "uint16", "uint32"):
            np.testing.assert_array_equal(random.bits(kk, (5, 3), dtype), np.asarray(jr.bits(jk, (5, 3), dtype)))
        np.testing.assert_array_equal(random.uniform(kk, (4, 3)), np.asarray(jr.uniform(jk, (4, 3))))
        np.testing.assert_array_equal(random.normal(kk, (7,)), np.asarray(jr.normal(jk, (7,))))
        np.testing.assert_array_equal(random.randint(kk, (6,), 0, 100), np.asarray(jr.randint(jk, (6,), 0, 100)))
        np.testing.assert_array_equal(random.permutation(kk, 10), np.asarray(jr.permutation(jk, 10)))
    assert str(random.key(1, impl=impl)) == str(jr.key(1, impl=impl))
    jks, kks = jr.split(jr.key(3, impl=impl), 4), random.split(random.key(3, impl=impl), 4)
    np.testing.assert_array_equal(_data(kiln.vmap(random.split)(kks)), np.asarray(jr.key_data(jax.vmap(jr.split)(jks))))
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.uniform(k, (2,)))(kks),
                                  np.asarray(jax.vmap(lambda k: jr.uniform(k, (2,)))(jks)))
