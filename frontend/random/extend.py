"""The functions of ``jax.extend.random`` that work on raw words and seeds: ``threefry_2x32(keypair, count)`` (the
Threefry-2x32 hash, bit-exact with JAX's) and ``random_seed(seeds, impl)`` (typed keys from an array of seeds)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as knp
from ..batching.api import vmap
from ..core.tracing import abstractify
from .keys import key
from .threefry import threefry_2x32 as _threefry_2x32

_WHERE = "kiln.extend.random"


def threefry_2x32(keypair: Any, count: Any) -> Any:
    """Apply the Threefry 2x32 hash (``jax.extend.random.threefry_2x32``).

    Parameters
    ----------
    keypair : a pair ``(key1, key2)`` of uint32 scalars (or a uint32 array of shape ``(2,)``)
        The key.
    count : uint32 array
        The counts to hash.

    Returns
    -------
    Array
        uint32, of the shape of ``count``: the flat counts (padded with a zero to an even length) are cut into two
        halves that form the counter pairs, and the two output words are joined again in the same layout.
    """
    try:
        key1, key2 = keypair
    except (TypeError, ValueError):
        raise TypeError(f"{_WHERE}.threefry_2x32: keypair must be a pair (key1, key2) of uint32 scalars, got "
                        f"{type(keypair).__name__} {keypair!r:.60}") from None
    try:
        avals = [abstractify(x) for x in (key1, key2, count)]
    except TypeError:
        raise TypeError(f"{_WHERE}.threefry_2x32 requires uint32 arguments, got "
                        f"{[type(x).__name__ for x in (key1, key2, count)]}") from None
    dtypes = [a.dtype for a in avals]
    if not all(d == np.uint32 for d in dtypes):
        raise TypeError(f"{_WHERE}.threefry_2x32 requires uint32 arguments, got {dtypes}")
    if avals[0].shape or avals[1].shape:
        raise ValueError(f"{_WHERE}.threefry_2x32: key1 and key2 must be scalars, got shapes {avals[0].shape} and "
                         f"{avals[1].shape}")
    return _threefry_2x32(knp.stack([key1, key2]), count)


def random_seed(seeds: Any, impl: Any) -> Any:
    """Typed PRNG keys of implementation ``impl``, one per seed (``jax.extend.random.random_seed``).

    Parameters
    ----------
    seeds : int or integer array of any shape
        The seeds (a Python int is a 64-bit seed, as :func:`kiln.random.key` takes it).
    impl : a ``kiln.extend.random`` implementation (``threefry_prng_impl``, ...) or its name

    Returns
    -------
    Array
        A key array of the shape of ``seeds``: element ``i`` is ``kiln.random.key(seeds[i], impl=impl)``.
    """
    if isinstance(seeds, int) or np.ndim(seeds) == 0:
        return key(seeds, impl=impl)

    def one(s):
        return key(s, impl=impl)
    fn = one
    for _ in range(np.ndim(seeds)):
        fn = vmap(fn)
    return fn(seeds)
