"""JAX's other counter-based PRNG implementations: ``threefry4x32`` (``key<fry4>``, four uint32 words),
``philox4x32`` (``key<phx4>``, two words) and ``philox2x32`` (``key<phx2>``, one word), built on Random123's
Threefry-4x32 (20 rounds) and Philox-4x32 / Philox-2x32 (10 rounds) ciphers.

Each operation hashes counters with the key, word by word (uint32, additions and products wrap):

* ``split(shape)``: new key ``i`` (row-major over ``shape``) hashes the counter whose last two words are ``i``
  as a 64-bit number ``(hi, lo)``, the words before them zero; the new key is the first words of the output;
* ``random_bits(shape)``: value ``i`` hashes the counter whose first two words are ``(hi, lo)`` of ``i``; 32 bits
  are the XOR of all output words, 8 and 16 bits its low bits, 64 bits two words (threefry4x32: words 0^2 and
  1^3) high first;
* ``fold_in(data)``: the counter ``(0, ..., 0, data)``;
* ``seed``: the seed's 64-bit value ``(hi, lo)``: threefry4x32 hashes the zero counter with the key
  ``(hi, lo, 0, 0)``; the philox implementations hash the counter ``(hi, lo, 0...)`` with the zero key.

These are the layouts of JAX's implementations (the numbers are JAX's). Raw key data has shape
``batch + key_shape``; the key words broadcast against the counters, so one hash serves a batch of keys.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import api as lax
from ..lax.composed import mulhi
from . import threefry

__all__ = ["CounterPRNG", "THREEFRY4X32", "PHILOX4X32", "PHILOX2X32"]

_U32 = dtypes.uint32


# -- the ciphers: (key words, counter words) -> output words, elementwise ---------------------------------

_THREEFRY4_ROTATIONS = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_THREEFRY_PARITY = 0x1BD11BDA
_PHILOX_WEYL = (0x9E3779B9, 0xBB67AE85)  # the key's increments between rounds
_PHILOX4_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_PHILOX2_MULTIPLIER = 0xD256D193


def threefry4x32(keys: list, x: list) -> list:
    """Threefry-4x32 with 20 rounds: a key injection (the fifth key word is the parity of the four) every four
    rounds, the words mixed in pairs (0, 1), (2, 3), then (0, 3), (2, 1)."""
    ks = [*keys, lax.bitwise_xor(lax.bitwise_xor(lax.bitwise_xor(keys[0], keys[1]), keys[2]),
                                 lax.bitwise_xor(keys[3], _THREEFRY_PARITY))]
    x = [lax.add(w, k) for w, k in zip(x, ks)]
    for rnd in range(20):
        r0, r1 = _THREEFRY4_ROTATIONS[rnd % 8]
        (a, b), (c, d) = ((0, 1), (2, 3)) if rnd % 2 == 0 else ((0, 3), (2, 1))
        x[a] = lax.add(x[a], x[b])
        x[b] = lax.bitwise_xor(x[a], threefry._rotl(x[b], r0))
        x[c] = lax.add(x[c], x[d])
        x[d] = lax.bitwise_xor(x[c], threefry._rotl(x[d], r1))
        if rnd % 4 == 3:
            s = rnd // 4 + 1
            x = [lax.add(w, ks[(s + i) % 5]) for i, w in enumerate(x)]
            x[3] = lax.add(x[3], s)
    return x


def _mulhilo(m: int, x):
    return lax.mul(x, m), mulhi(x, lax.full_like(x, m))


def philox4x32(keys: list, x: list) -> list:
    """Philox-4x32 with 10 rounds: each round multiplies words 0 and 2 by the Philox constants and mixes the
    high halves with words 1 and 3 and the key, which grows by the Weyl constants between rounds."""
    k0, k1 = keys
    x0, x1, x2, x3 = x
    for rnd in range(10):
        if rnd:
            k0, k1 = lax.add(k0, _PHILOX_WEYL[0]), lax.add(k1, _PHILOX_WEYL[1])
        lo0, hi0 = _mulhilo(_PHILOX4_MULTIPLIERS[0], x0)
        lo1, hi1 = _mulhilo(_PHILOX4_MULTIPLIERS[1], x2)
        x0, x1, x2, x3 = (lax.bitwise_xor(lax.bitwise_xor(hi1, x1), k0), lo1,
                          lax.bitwise_xor(lax.bitwise_xor(hi0, x3), k1), lo0)
    return [x0, x1, x2, x3]


def philox2x32(keys: list, x: list) -> list:
    """Philox-2x32 with 10 rounds (one key word, one product per round)."""
    (k0,), (x0, x1) = keys, x
    for rnd in range(10):
        if rnd:
            k0 = lax.add(k0, _PHILOX_WEYL[0])
        lo, hi = _mulhilo(_PHILOX2_MULTIPLIER, x0)
        x0, x1 = lax.bitwise_xor(lax.bitwise_xor(hi, x1), k0), lo
    return [x0, x1]


# -- the PRNG operations ------------------------------------------------------------------------------

class CounterPRNG:
    """One implementation: its cipher, the number of key and counter words, whether the seed is hashed as the
    key (threefry4x32) or as the counter (philox), and how 64-bit values take two words of the output."""

    def __init__(self, cipher: Callable[[list, list], list], key_words: int, counter_words: int,
                 seed_in_key: bool, wide_words: Callable[[list], tuple[Any, Any]]) -> None:
        self.cipher, self.key_words, self.counter_words = cipher, key_words, counter_words
        self.seed_in_key, self.wide_words = seed_in_key, wide_words
        self.key_shape = (key_words,)

    def _key_words(self, key_data) -> tuple[list, tuple[int, ...]]:
        """The key words of ``key_data`` (``batch + (key_words,)``), each of shape ``batch``, and ``batch``."""
        batch = abstractify(key_data).shape[:-1]
        nb = len(batch)
        return [lax.reshape(lax.slice(key_data, (0,) * nb + (i,), batch + (i + 1,)), batch)
                for i in range(self.key_words)], batch

    def _hash(self, key_data, counters: list, shape: tuple[int, ...]) -> list:
        """The output words of each key of ``key_data`` and ``counters`` of ``shape``: each of shape
        ``batch + shape``."""
        keys, batch = self._key_words(key_data)
        full, nb = batch + shape, len(batch)
        keys = [threefry._bcast(lax.reshape(k, batch + (1,) * len(shape)), full) for k in keys]
        counters = [lax.broadcast_in_dim(c, full, tuple(range(nb, len(full)))) for c in counters]
        return self.cipher(keys, counters)

    def _positions(self, shape: tuple[int, ...], first: bool) -> list:
        """Counters of ``shape``: the 64-bit index of each element as their first (or last) two words."""
        hi, lo = threefry._iota_2x32(shape)
        zeros = [_zeros(shape)] * (self.counter_words - 2)
        return [hi, lo, *zeros] if first else [*zeros, hi, lo]

    def _key_of(self, words: list):
        """A key (the first ``key_words`` words, stacked last) of each element of the output words."""
        shape = abstractify(words[0]).shape
        return lax.concatenate([lax.reshape(w, shape + (1,)) for w in words[:self.key_words]], len(shape))

    def seed(self, seed_value) -> Any:
        hi, lo = _seed_words(seed_value)
        zero = lax.literal(0, _U32)
        if self.seed_in_key:
            words = self.cipher([hi, lo] + [zero] * (self.key_words - 2), [zero] * self.counter_words)
        else:
            words = self.cipher([zero] * self.key_words, [hi, lo] + [zero] * (self.counter_words - 2))
        return self._key_of(words)

    def split(self, key_data, shape: Sequence[int]) -> Any:
        shape = tuple(shape)
        return self._key_of(self._hash(key_data, self._positions(shape, first=False), shape))

    def fold_in(self, key_data, data) -> Any:
        """Keys ``batch + key_shape`` with the uint32 ``data`` (broadcastable to ``batch``) folded in."""
        keys, batch = self._key_words(key_data)
        full = tuple(np.broadcast_shapes(batch, abstractify(data).shape))
        counters = [_zeros(full)] * (self.counter_words - 1) + [threefry._bcast(data, full)]
        return self._key_of(self.cipher([threefry._bcast(k, full) for k in keys], counters))

    def random_bits(self, key_data, bit_width: int, shape: Sequence[int]) -> Any:
        shape = tuple(shape)
        dtype = threefry.bits_dtype(bit_width)
        words = self._hash(key_data, self._positions(shape, first=True), shape)
        if bit_width == 64:
            hi, lo = self.wide_words(words)
            return lax.bitwise_or(lax.shift_left(lax.convert_element_type(hi, dtype), 32),
                                  lax.convert_element_type(lo, dtype))
        bits = words[0]
        for w in words[1:]:
            bits = lax.bitwise_xor(bits, w)
        return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _zeros(shape: tuple[int, ...]):
    return lax.broadcast_in_dim(lax.literal(0, _U32), shape, ()) if shape else lax.literal(0, _U32)


def _seed_words(seed_value) -> tuple[Any, Any]:
    """The seed's 64-bit two's complement value as (hi, lo) uint32 scalars (threefry2x32's seed words)."""
    data = threefry.seed(seed_value)
    return (lax.reshape(lax.slice(data, (0,), (1,)), ()), lax.reshape(lax.slice(data, (1,), (2,)), ()))


THREEFRY4X32 = CounterPRNG(threefry4x32, 4, 4, seed_in_key=True,
                           wide_words=lambda w: (lax.bitwise_xor(w[0], w[2]), lax.bitwise_xor(w[1], w[3])))
PHILOX4X32 = CounterPRNG(philox4x32, 2, 4, seed_in_key=False, wide_words=lambda w: (w[0], w[1]))
PHILOX2X32 = CounterPRNG(philox2x32, 1, 2, seed_in_key=False, wide_words=lambda w: (w[0], w[1]))
