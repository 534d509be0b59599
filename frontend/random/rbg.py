"""The ``rbg`` and ``unsafe_rbg`` PRNG implementations (as JAX's): keys of four uint32 words whose random bits
come from XLA's RngBitGenerator (``kiln.lax.rng_bit_generator``, the backend's default algorithm).

* ``rbg``: ``split`` and ``fold_in`` treat a key as two threefry2x32 keys (words 0-1 and 2-3) and apply
  threefry's ``split``/``fold_in`` to each (so they follow ``threefry_partitionable`` as threefry keys do);
  the seed is threefry's seed repeated.
* ``unsafe_rbg``: ``split`` takes every tenth of ``10 * num`` generated keys and ``fold_in`` XORs the key with
  the last of ten keys generated from the folded-in value's seed; cheaper, with weaker guarantees.

Everything here works on raw key data, uint32 of shape ``batch + (4,)``; a batch of keys is mapped over with
``vmap`` (as JAX maps its implementations). Under ``vmap`` the generator follows JAX's batching rule for
``rng_bit_generator``: the first key of a batch draws the bits of the whole batch (:func:`_generator`, a
``custom_vmap``; ``kiln.lax.rng_bit_generator`` itself runs one generator per key). XLA does not promise the
generator's bits across backends or versions: the numbers are JAX's on the same backend and jaxlib.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..batching.api import vmap
from ..batching.custom_vmap import custom_vmap
from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import api as lax
from ..lax import misc
from . import threefry

__all__ = ["seed", "split", "fold_in", "random_bits", "unsafe_split", "unsafe_fold_in", "mapped_over_keys"]

KEY_SHAPE = (4,)
_U32 = dtypes.uint32
_UINT_OF_BITS = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


def mapped_over_keys(fn: Callable[..., Any], key_ndim: int) -> Callable[..., Any]:
    """``fn(key, *args)`` of one key (``key_ndim`` dimensions), mapped with ``vmap`` over the batch dimensions of
    raw key data (the other arguments unbatched). rbg's operations and ``define_prng_impl``'s are mapped so."""
    def mapped(key_data, *args):
        f = lambda key: fn(key, *args)  # noqa: E731
        for _ in range(abstractify(key_data).ndim - key_ndim):
            f = vmap(f)
        return f(key_data)
    return mapped


@functools.cache
def _generator(shape: tuple[int, ...], dtype: np.dtype) -> custom_vmap:
    """``key -> bits`` of ``shape`` and ``dtype`` from XLA's RngBitGenerator (its default algorithm), with JAX's
    batching rule: a batch of keys draws bits of shape ``(batch, *shape)`` from its first key. Nested ``vmap``s
    apply the rule again (the rule's draw is this function), as JAX's do."""

    def rbg_bits(key):
        return misc.rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                             algorithm=misc.RandomAlgorithm.RNG_DEFAULT)[1]

    drawn = custom_vmap(rbg_bits)

    @drawn.def_vmap
    def _first_key_draws(size, in_batched, keys):
        if size == 0:  # no key to draw from
            return lax.broadcast_in_dim(lax.literal(0, dtype), (0, *shape), ()), True
        first = lax.reshape(lax.slice(keys, (0, 0), (1,) + KEY_SHAPE), KEY_SHAPE)
        return _generator((size, *shape), dtype)(first), True

    return drawn


def _bits_of(key, shape: tuple[int, ...], dtype) -> Any:
    return _generator(tuple(shape), np.dtype(dtype))(key)


def seed(seed_value) -> Any:
    """An rbg key from an integer scalar: threefry's key of the seed, twice."""
    half = threefry.seed(seed_value)
    return lax.concatenate([half, half], 0)


def _split_one(key, shape: tuple[int, ...]):
    halves = lax.reshape(key, (2, 2))
    new = threefry.split(halves, shape)  # (2,) + shape + (2,): each half split as a threefry key
    n = len(shape)
    new = lax.transpose(new, tuple(range(1, n + 1)) + (0, n + 1))
    return lax.reshape(new, shape + KEY_SHAPE)


def split(key_data, shape: Sequence[int]) -> Any:
    """rbg: new keys ``batch + shape + (4,)``, each half split with threefry."""
    return mapped_over_keys(_split_one, 1)(key_data, tuple(shape))


def _fold_in_one(key, msg):
    return lax.reshape(threefry.fold_in(lax.reshape(key, (2, 2)), msg), KEY_SHAPE)


def fold_in(key_data, msg) -> Any:
    """rbg: ``msg`` (a uint32 scalar) folded into each half with threefry."""
    return mapped_over_keys(_fold_in_one, 1)(key_data, msg)


def _random_bits_one(key, bit_width: int, shape: tuple[int, ...]):
    return _bits_of(key, shape, _UINT_OF_BITS[bit_width])


def random_bits(key_data, bit_width: int, shape: Sequence[int]) -> Any:
    """rbg and unsafe_rbg: uint{bit_width} bits of shape ``batch + shape`` from XLA's RngBitGenerator."""
    threefry.bits_dtype(bit_width)
    return mapped_over_keys(_random_bits_one, 1)(key_data, bit_width, tuple(shape))


def _unsafe_split_one(key, shape: tuple[int, ...]):
    num = math.prod(shape)
    keys = _bits_of(key, (10 * num, 4), _U32)  # ten generator steps per new key, as a hash
    return lax.reshape(lax.slice(keys, (0, 0), (10 * num, 4), (10, 1)), shape + KEY_SHAPE)


def unsafe_split(key_data, shape: Sequence[int]) -> Any:
    """unsafe_rbg: every tenth of ``10 * num`` keys the generator draws from the key."""
    return mapped_over_keys(_unsafe_split_one, 1)(key_data, tuple(shape))


def _unsafe_fold_in_one(key, msg):
    drawn = _bits_of(seed(msg), (10, 4), _U32)
    return lax.bitwise_xor(key, lax.reshape(lax.slice(drawn, (9, 0), (10, 4)), KEY_SHAPE))


def unsafe_fold_in(key_data, msg) -> Any:
    """unsafe_rbg: the key XOR the last of ten keys drawn from the seed of ``msg``."""
    return mapped_over_keys(_unsafe_fold_in_one, 1)(key_data, msg)
