"""``kiln.extend.random.threefry_2x32`` and ``random_seed`` (JAX's ``jax.extend.random``), and the
``kiln.experimental.key_reuse`` module."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.extend import random as xrandom

U32 = np.uint32

# Known-answer tests of Threefry-2x32 (20 rounds) from the Random123 distribution (kat_vectors): key, counter, result.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key, count, expected", KAT)
def test_threefry_2x32_known_answers(key, count, expected):
    out = xrandom.threefry_2x32((U32(key[0]), U32(key[1])), np.array(count, U32))
    assert out.dtype == np.uint32 and out.shape == (2,)
    np.testing.assert_array_equal(np.asarray(out), np.array(expected, U32))
    # the key as one uint32 array of shape (2,), and under jit
    out = kiln.jit(xrandom.threefry_2x32)(np.array(key, U32), np.array(count, U32))
    np.testing.assert_array_equal(np.asarray(out), np.array(expected, U32))


def test_threefry_2x32_pairs_the_two_halves_of_the_flat_counts():
    key = (U32(0x13198A2E), U32(0x03707344))
    # [c0, c1, c2, c3] hashes the pairs (c0, c2) and (c1, c3); the results are laid out as the counts were
    counts = np.array([[0x243F6A88, 7], [0x85A308D3, 9]], U32)
    out = np.asarray(xrandom.threefry_2x32(key, counts))
    assert out.shape == (2, 2)
    assert (out[0, 0], out[1, 0]) == (0xC4923A9C, 0x483DF7A0)
    pair = np.asarray(xrandom.threefry_2x32(key, np.array([7, 9], U32)))
    assert (out[0, 1], out[1, 1]) == tuple(pair)


def test_threefry_2x32_odd_count_is_padded_with_zero():
    key = (U32(0), U32(0))
    out = np.asarray(xrandom.threefry_2x32(key, np.zeros(3, U32)))
    # the flat counts [0, 0, 0, 0(pad)] form the pairs (0, 0), (0, 0): the first half is their first words
    assert out.shape == (3,)
    np.testing.assert_array_equal(out, np.array([0x6B200159, 0x6B200159, 0x99BA4EFE], U32))


def test_threefry_2x32_errors():
    with pytest.raises(TypeError, match=r"threefry_2x32 requires uint32 arguments, got \[dtype\('int32'\), "
                                        r"dtype\('int32'\), dtype\('uint32'\)\]"):
        xrandom.threefry_2x32((1, 2), np.arange(4, dtype=U32))
    with pytest.raises(TypeError, match=r"requires uint32 arguments.*float32"):
        xrandom.threefry_2x32((U32(1), U32(2)), np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match=r"keypair must be a pair \(key1, key2\) of uint32 scalars, got int"):
        xrandom.threefry_2x32(5, np.arange(4, dtype=U32))
    with pytest.raises(ValueError, match=r"key1 and key2 must be scalars, got shapes \(2,\) and \(\)"):
        xrandom.threefry_2x32((np.zeros(2, U32), U32(1)), np.arange(4, dtype=U32))


def test_random_seed_maps_over_seeds():
    seeds = np.arange(6, dtype=np.int32).reshape(2, 3)
    keys = xrandom.random_seed(seeds, xrandom.threefry_prng_impl)
    assert keys.shape == (2, 3)
    assert keys.dtype == kiln.random.key_dtype("threefry2x32")
    data = np.asarray(kiln.random.key_data(keys))
    assert data.shape == (2, 3, 2)
    # threefry's key of seed s (at most 32 bits) is the words [0, s]
    np.testing.assert_array_equal(data[..., 0], 0)
    np.testing.assert_array_equal(data[..., 1], seeds)


def test_random_seed_of_an_int_and_other_impls():
    key = xrandom.random_seed(7, xrandom.threefry_prng_impl)
    assert key.shape == ()
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(key)), [0, 7])
    rbg = xrandom.random_seed(np.array([1, 2], np.int32), xrandom.rbg_prng_impl)
    assert rbg.shape == (2,) and rbg.dtype == kiln.random.key_dtype("rbg")
    # rbg's key data is threefry's two words twice
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(rbg))[1], [0, 2, 0, 2])


def test_random_seed_rejects_float_seeds():
    with pytest.raises(TypeError, match="seed must be an integer"):
        xrandom.random_seed(1.5, xrandom.threefry_prng_impl)


def test_experimental_key_reuse_module():
    import kiln.experimental.key_reuse as key_reuse
    assert key_reuse.__all__ == []
    assert "debug_key_reuse" in key_reuse.__doc__
    assert kiln.experimental.key_reuse is key_reuse
