"""Threefry-2x32 (20 rounds) and the PRNG operations built on it, in kiln primitives.

Everything here works on raw key data: uint32 arrays of shape ``batch + (2,)``. A batch of keys
broadcasts against the counters, so one call serves any number of keys (vmap is not needed).

Two layouts of the counters, as in JAX, chosen by ``kiln.config.threefry_partitionable`` (read
when tracing; it is part of jit's cache key):

* partitionable (default): element ``i`` of an output of shape ``s`` hashes the 64-bit counter
  ``i`` (as the pair ``(hi, lo)``), so any slice of the output can be computed on its own;
* legacy: the flat counter ``iota(n)`` is cut in two halves that are hashed pairwise and joined
  again (JAX's original ``threefry_2x32``).

``fold_in`` hashes the counter pair ``(0, data)`` in both modes.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..control.loops import while_loop
from ..core import dtypes
from ..core.config import config
from ..core.tracing import abstractify
from ..lax import api as lax

__all__ = ["threefry2x32", "threefry_2x32", "seed", "split", "fold_in", "random_bits", "bits_dtype"]

_U32 = dtypes.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Threefry's key-schedule constant for 32-bit words
# threefry2x32 emits its rounds as a loop for arrays of fewer elements than this, inline otherwise: the
# loop keeps programs with many draws (and slices of drawn arrays) small to compile, the inline rounds run
# about 3x faster on large arrays. JAX always loops on CPU.
_ROLL_BELOW = 2 ** 20
_UINT_OF_BITS = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


# -- the hash ------------------------------------------------------------------------------------

def _bcast(x, shape: tuple[int, ...]):
    """Broadcast ``x`` to ``shape`` aligning trailing dimensions (NumPy rules)."""
    aval = abstractify(x)
    if aval.shape == shape:
        return x
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - aval.ndim, len(shape))))


def threefry2x32(k1, k2, x1, x2, *, rolled: bool | None = None) -> tuple[Any, Any]:
    """The Threefry-2x32 block cipher with 20 rounds, elementwise.

    ``k1, k2`` (the key words) and ``x1, x2`` (the counter words) are uint32 arrays that
    broadcast together (NumPy rules); returns the two uint32 output words of that shape.
    Additions wrap modulo 2**32.

    ``rolled`` chooses the emitted code (the bits are the same): a loop of 5 steps of 4 rounds
    and a key injection (a small ``stablehlo.while``, as JAX emits on CPU), or the 20 rounds
    inline (~200 operations that XLA fuses into one fast kernel). The inline form makes XLA's
    compile time grow with every call site, and XLA copies it into each consumer of the bits
    (each slice of a random array recomputes the whole hash), so by default arrays of fewer
    than ``_ROLL_BELOW`` elements, the common case of many random calls in one program, get
    the loop; large arrays, where the loop's run time (3-4x the inline kernel's on CPU) would
    show, get the inline form.
    """
    avals = [abstractify(a) for a in (k1, k2, x1, x2)]
    for name, aval in zip(("k1", "k2", "x1", "x2"), avals):
        if aval.dtype != _U32:
            raise TypeError(f"kiln.random.threefry2x32: {name} must be uint32, got {aval.dtype.name}")
    shape = tuple(np.broadcast_shapes(*(a.shape for a in avals)))
    kshape = tuple(np.broadcast_shapes(avals[0].shape, avals[1].shape))
    k1, k2 = _bcast(k1, kshape), _bcast(k2, kshape)
    x1, x2 = _bcast(x1, shape), _bcast(x2, shape)
    # Key words with the rank of the output (leading ones): broadcast where they are added.
    kshape = (1,) * (len(shape) - len(kshape)) + kshape
    ks = [lax.reshape(k, kshape) for k in (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY))]
    x1 = lax.add(x1, _bcast(ks[0], shape))
    x2 = lax.add(x2, _bcast(ks[1], shape))
    if rolled is None:
        rolled = math.prod(shape) < _ROLL_BELOW
    if rolled:
        return _rounds_rolled(x1, x2, ks, shape)
    ks = [_bcast(k, shape) for k in ks]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x1 = lax.add(x1, x2)
            x2 = lax.bitwise_xor(x1, _rotl(x2, r))
        x1 = lax.add(x1, ks[(block + 1) % 3])
        x2 = lax.add(lax.add(x2, ks[(block + 2) % 3]), block + 1)
    return x1, x2


def _rounds_rolled(x1, x2, ks, shape):
    """The 20 rounds after the first key injection as a loop of 5 steps over ``(i, x1, x2)``.

    Step ``i`` does 4 rounds with ``_ROTATIONS[i % 2]``, then adds ``ks[(i + 1) % 3]`` to ``x1`` and
    ``ks[(i + 2) % 3] + i + 1`` to ``x2``. The rotation amounts and key words are chosen with
    ``select`` from loop-invariant values rather than passed around in the carry: a carry that
    permutes itself makes XLA insert copies, which cost compile time at every call site.
    """
    def cond(carry):
        return lax.lt(carry[0], 5)

    def pick(pred, a, b):
        return lax.select(lax.broadcast_in_dim(pred, abstractify(a).shape, ()), a, b)

    def step(carry):
        i, x1, x2 = carry
        odd = lax.ne(lax.bitwise_and(i, 1), 0)
        for r0, r1 in zip(*_ROTATIONS):
            left = lax.select(odd, lax.literal(r1, _U32), lax.literal(r0, _U32))
            right = lax.select(odd, lax.literal(32 - r1, _U32), lax.literal(32 - r0, _U32))
            rotated = lax.bitwise_or(lax.shift_left(x2, lax.broadcast_in_dim(left, shape, ())),
                                     lax.shift_right_logical(x2, lax.broadcast_in_dim(right, shape, ())))
            x1 = lax.add(x1, x2)
            x2 = lax.bitwise_xor(x1, rotated)
        i = lax.add(i, 1)
        m = lax.rem(i, 3)  # with i now the step number + 1: inject ks[i % 3] and ks[(i + 1) % 3]
        ka = pick(lax.eq(m, 0), ks[0], pick(lax.eq(m, 1), ks[1], ks[2]))
        kb = pick(lax.eq(m, 0), ks[1], pick(lax.eq(m, 1), ks[2], ks[0]))
        x1 = lax.add(x1, _bcast(ka, shape))
        x2 = lax.add(lax.add(x2, _bcast(kb, shape)), _bcast(i, shape))
        return i, x1, x2

    _, x1, x2 = while_loop(cond, step, (lax.literal(0, _U32), x1, x2))
    return x1, x2


def _rotl(x, r: int):
    return lax.bitwise_or(lax.shift_left(x, r), lax.shift_right_logical(x, 32 - r))


def _key_words(key_data) -> tuple[Any, Any, tuple[int, ...]]:
    """The two key words of a batch of keys ``batch + (2,)``, each of shape ``batch``."""
    shape = abstractify(key_data).shape
    batch = shape[:-1]
    nd = len(shape)
    k1 = lax.reshape(lax.slice(key_data, (0,) * nd, batch + (1,)), batch)
    k2 = lax.reshape(lax.slice(key_data, (0,) * (nd - 1) + (1,), batch + (2,)), batch)
    return k1, k2, batch


def _expand_keys(k, batch: tuple[int, ...], shape: tuple[int, ...]):
    """Key words of shape ``batch`` as ``batch + (1,) * len(shape)``: they broadcast against counters of
    shape ``batch + shape`` (threefry2x32 broadcasts them inside its loop)."""
    if not shape:
        return k
    return lax.reshape(k, batch + (1,) * len(shape))


def _expand_counts(x, batch: tuple[int, ...]):
    """Counters of shape ``s`` broadcast to ``batch + s``."""
    if not batch:
        return x
    s = abstractify(x).shape
    return lax.broadcast_in_dim(x, batch + s, tuple(range(len(batch), len(batch) + len(s))))


def threefry_2x32(key_data, count) -> Any:
    """JAX's original ``threefry_2x32``: hash the flat uint32 array ``count`` with each key.

    The flat counter (padded with a zero to an even length) is cut into two halves that form the
    counter pairs; the two output words are joined again in the same layout. ``key_data`` has
    shape ``batch + (2,)``; the result has shape ``batch + count.shape``.
    """
    k1, k2, batch = _key_words(key_data)
    cshape = abstractify(count).shape
    n = math.prod(cshape)
    flat = lax.reshape(count, (n,))
    if n % 2:
        flat = lax.concatenate([flat, lax.broadcast_in_dim(lax.literal(0, _U32), (1,), ())], 0)
    half = (n + 1) // 2
    x1 = lax.slice(flat, (0,), (half,))
    x2 = lax.slice(flat, (half,), (2 * half,))
    y1, y2 = threefry2x32(_expand_keys(k1, batch, (half,)), _expand_keys(k2, batch, (half,)),
                          _expand_counts(x1, batch), _expand_counts(x2, batch))
    nb = len(batch)
    out = lax.concatenate([y1, y2], nb)
    if n % 2:
        out = lax.slice(out, (0,) * (nb + 1), batch + (n,))
    return lax.reshape(out, batch + cshape)


def _iota_2x32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The 64-bit row-major index of every element of ``shape`` as (hi, lo) uint32 words."""
    n = math.prod(shape)
    if n >= 2 ** 32:
        raise NotImplementedError(f"kiln.random: arrays of {n} random values (2**32 or more) are not supported")
    lo = lax.reshape(lax.iota(_U32, n), shape) if shape else lax.literal(0, _U32)
    hi = lax.broadcast_in_dim(lax.literal(0, _U32), shape, ()) if shape else lax.literal(0, _U32)
    return hi, lo


def _hash_positions(key_data, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Partitionable mode: hash the index of every element of ``shape`` with each key."""
    k1, k2, batch = _key_words(key_data)
    hi, lo = _iota_2x32(shape)
    return threefry2x32(_expand_keys(k1, batch, shape), _expand_keys(k2, batch, shape),
                        _expand_counts(hi, batch), _expand_counts(lo, batch))


# -- PRNG operations on raw key data -----------------------------------------------------------

def seed(seed_value) -> Any:
    """Raw key data ``[hi, lo]`` from an integer scalar (array or tracer): the seed's 64-bit two's
    complement value cut into two uint32 words (a seed of 32 bits or fewer has ``hi = 0``)."""
    aval = abstractify(seed_value)
    if aval.dtype.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed_value, 32), _U32)
    else:
        hi = lax.literal(0, _U32)
    lo = lax.convert_element_type(seed_value, _U32)
    return lax.concatenate([lax.broadcast_in_dim(hi, (1,), ()), lax.broadcast_in_dim(lo, (1,), ())], 0)


def split(key_data, shape: Sequence[int]) -> Any:
    """New keys of shape ``batch + shape + (2,)`` from keys ``batch + (2,)``."""
    shape = tuple(shape)
    batch = abstractify(key_data).shape[:-1]
    if config.threefry_partitionable:
        b1, b2 = _hash_positions(key_data, shape)
        nd = len(batch) + len(shape)
        out_shape = batch + shape + (1,)
        return lax.concatenate([lax.reshape(b1, out_shape), lax.reshape(b2, out_shape)], nd)
    num = math.prod(shape)
    bits = threefry_2x32(key_data, lax.iota(_U32, 2 * num))
    return lax.reshape(bits, batch + shape + (2,))


def fold_in(key_data, data) -> Any:
    """Keys ``batch + (2,)`` with the uint32 ``data`` (broadcastable to ``batch``) folded in."""
    k1, k2, batch = _key_words(key_data)
    d_shape = abstractify(data).shape
    shape = tuple(np.broadcast_shapes(batch, d_shape))
    zero = lax.broadcast_in_dim(lax.literal(0, _U32), shape, ()) if shape else lax.literal(0, _U32)
    y1, y2 = threefry2x32(k1, k2, zero, data)
    y1, y2 = _bcast(y1, shape), _bcast(y2, shape)
    return lax.concatenate([lax.reshape(y1, shape + (1,)), lax.reshape(y2, shape + (1,))], len(shape))


def bits_dtype(bit_width: int) -> Any:
    """The unsigned dtype of ``bit_width`` random bits (every implementation's ``random_bits`` checks it here)."""
    if bit_width not in _UINT_OF_BITS:
        raise TypeError(f"kiln.random.bits: bit width must be 8, 16, 32 or 64, got {bit_width}")
    dtype = _UINT_OF_BITS[bit_width]
    if bit_width == 64 and dtypes.canonicalize_dtype(dtype) != dtype:
        raise TypeError("kiln.random.bits: 64-bit random bits need kiln.config.update('enable_x64', True)")
    return dtype


def random_bits(key_data, bit_width: int, shape: Sequence[int]) -> Any:
    """Uniform random bits: uint{bit_width} of shape ``batch + shape`` from keys ``batch + (2,)``."""
    shape = tuple(shape)
    dtype = bits_dtype(bit_width)
    batch = abstractify(key_data).shape[:-1]
    if config.threefry_partitionable:
        b1, b2 = _hash_positions(key_data, shape)
        if bit_width == 64:
            hi = lax.convert_element_type(b1, dtype)
            return lax.bitwise_or(lax.shift_left(hi, 32), lax.convert_element_type(b2, dtype))
        bits = lax.bitwise_xor(b1, b2)
        return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
    return _random_bits_legacy(key_data, bit_width, shape, batch, dtype)


def _random_bits_legacy(key_data, bit_width: int, shape: tuple[int, ...], batch: tuple[int, ...], dtype):
    size = math.prod(shape)
    words = -(-bit_width * size // 32)  # ceil
    if words >= 2 ** 32 - 1:
        raise NotImplementedError(f"kiln.random: arrays of {size} random values are too large for the legacy "
                                  "threefry mode")
    nb = len(batch)
    bits = threefry_2x32(key_data, lax.iota(_U32, words))  # batch + (words,)
    if bit_width == 64:
        half = words // 2
        hi = lax.convert_element_type(lax.slice(bits, (0,) * (nb + 1), batch + (half,)), dtype)
        lo = lax.convert_element_type(lax.slice(bits, (0,) * nb + (half,), batch + (words,)), dtype)
        bits = lax.bitwise_or(lax.shift_left(hi, 32), lo)
    elif bit_width in (8, 16):
        per_word = 32 // bit_width
        # Each word holds per_word values, the lowest bits first (a little-endian view of the words).
        wide = lax.broadcast_in_dim(bits, batch + (words, per_word), tuple(range(nb + 1)))
        shifts = lax.mul(lax.broadcasted_iota(_U32, batch + (words, per_word), nb + 1), bit_width)
        parts = lax.bitwise_and(lax.shift_right_logical(wide, shifts), (1 << bit_width) - 1)
        parts = lax.reshape(parts, batch + (words * per_word,))
        parts = lax.slice(parts, (0,) * (nb + 1), batch + (size,))
        bits = lax.convert_element_type(parts, dtype)
    return lax.reshape(bits, batch + shape)
