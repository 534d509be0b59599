"""PRNG implementations: what a key's data is and how it is seeded, split, folded and turned into bits.

kiln has JAX's ``threefry2x32`` (the default; ``key<fry>``, two uint32 words), ``rbg`` (``key<rbg>``) and
``unsafe_rbg`` (``key<urbg>``), four uint32 words each, and ``threefry4x32`` (``key<fry4>``), ``philox4x32``
(``key<phx4>``) and ``philox2x32`` (``key<phx2>``) (counter_prngs.py).
``kiln.config.update('jax_default_prng_impl', name)`` picks the one new keys (and raw uint32 keys) use when no
``impl=`` is given; :func:`define_prng_impl` makes a user's implementation.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core.config import config
from . import counter_prngs, rbg, threefry

__all__ = ["PRNGImpl", "PRNGS", "resolve", "default_impl", "threefry_prng_impl", "rbg_prng_impl",
           "unsafe_rbg_prng_impl", "threefry4x32_prng_impl", "philox4x32_prng_impl", "philox2x32_prng_impl",
           "define_prng_impl"]


class PRNGImpl:
    """A PRNG implementation (as ``jax.extend.random``'s): the shape of one key's uint32 data and its four
    operations on raw key data of shape ``batch + key_shape``: ``seed(int scalar)``, ``split(keys, shape)``,
    ``fold_in(keys, uint32 scalar)`` and ``random_bits(keys, bit_width, shape)``. ``name`` is what ``impl=``
    takes, ``tag`` what the key dtype prints (``key<tag>``)."""

    __slots__ = ("key_shape", "seed", "split", "random_bits", "fold_in", "name", "tag", "_hash")

    def __init__(self, key_shape: tuple[int, ...], seed: Callable, split: Callable, random_bits: Callable,
                 fold_in: Callable, name: str = "<unnamed>", tag: str = "?") -> None:
        self.key_shape = tuple(key_shape)
        self.seed, self.split, self.random_bits, self.fold_in = seed, split, random_bits, fold_in
        self.name, self.tag = name, tag
        self._hash = hash((PRNGImpl, name, tag))  # (a static argument of jitted functions: hashed on every call)

    def __repr__(self) -> str:
        return f"PRNGImpl(key_shape={self.key_shape}, name={self.name!r}, tag={self.tag!r})"

    def __str__(self) -> str:
        return self.tag

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):  # the registered implementations pickle by name
        if PRNGS.get(self.name) is self:
            return (_registered, (self.name,))
        raise TypeError(f"cannot pickle the unregistered PRNG implementation {self!r}")


def _registered(name: str) -> PRNGImpl:
    return PRNGS[name]


threefry_prng_impl = PRNGImpl((2,), threefry.seed, threefry.split, threefry.random_bits, threefry.fold_in,
                              name="threefry2x32", tag="fry")
rbg_prng_impl = PRNGImpl(rbg.KEY_SHAPE, rbg.seed, rbg.split, rbg.random_bits, rbg.fold_in, name="rbg", tag="rbg")
unsafe_rbg_prng_impl = PRNGImpl(rbg.KEY_SHAPE, rbg.seed, rbg.unsafe_split, rbg.random_bits, rbg.unsafe_fold_in,
                                name="unsafe_rbg", tag="urbg")



def _counter_impl(prng: counter_prngs.CounterPRNG, name: str, tag: str) -> PRNGImpl:
    return PRNGImpl(prng.key_shape, prng.seed, prng.split, prng.random_bits, prng.fold_in, name=name, tag=tag)


threefry4x32_prng_impl = _counter_impl(counter_prngs.THREEFRY4X32, "threefry4x32", "fry4")
philox4x32_prng_impl = _counter_impl(counter_prngs.PHILOX4X32, "philox4x32", "phx4")
philox2x32_prng_impl = _counter_impl(counter_prngs.PHILOX2X32, "philox2x32", "phx2")

PRNGS: dict[str, PRNGImpl] = {impl.name: impl for impl in (
    threefry_prng_impl, threefry4x32_prng_impl, rbg_prng_impl, unsafe_rbg_prng_impl, philox2x32_prng_impl,
    philox4x32_prng_impl)}


def define_prng_impl(*, key_shape: Sequence[int], seed: Callable, split: Callable, random_bits: Callable,
                     fold_in: Callable, name: str = "<unnamed>", tag: str = "?") -> PRNGImpl:
    """A PRNG implementation from functions of one key, as JAX's ``jax.extend.random.define_prng_impl`` takes them:
    ``seed(integer scalar) -> key``, ``split(key, shape) -> keys of shape + key_shape``, ``fold_in(key, uint32
    scalar) -> key``, ``random_bits(key, bit_width, shape) -> bits``, written with kiln's operations. A batch of
    keys is mapped over with ``vmap``. Give the result as ``impl=`` to ``kiln.random.key`` (it is not registered by
    name: ``jax_default_prng_impl`` does not take it)."""
    key_shape = tuple(int(d) for d in key_shape)
    per_key = lambda fn: rbg.mapped_over_keys(fn, len(key_shape))  # noqa: E731
    return PRNGImpl(key_shape, seed, per_key(split), per_key(random_bits), per_key(fold_in), name=name, tag=tag)


def default_impl() -> PRNGImpl:
    """The implementation of ``kiln.config.default_prng_impl`` (JAX's ``jax_default_prng_impl``)."""
    return PRNGS[config.default_prng_impl]


def known_names() -> str:
    """``'threefry2x32', 'threefry4x32', ... and 'philox4x32'``, for messages."""
    names = [repr(n) for n in PRNGS]
    return ", ".join(names[:-1]) + " and " + names[-1]


def resolve(fname: str, spec: Any) -> PRNGImpl:
    """The implementation ``spec`` names: None (the default), a name, a key dtype (``keys.dtype``,
    ``kiln.random.key_dtype('rbg')``) or a :class:`PRNGImpl` (``kiln.extend.random.rbg_prng_impl``)."""
    if spec is None:
        return default_impl()
    if isinstance(spec, PRNGImpl):
        return spec
    impl = getattr(spec, "prng_impl", None)  # a KeyDtype
    if isinstance(impl, PRNGImpl):
        return impl
    if isinstance(spec, str):
        if spec in PRNGS:
            return PRNGS[spec]
        raise ValueError(f"kiln.random.{fname}: unrecognized PRNG implementation {spec!r}; kiln implements "
                         f"{known_names()}")
    raise TypeError(f"kiln.random.{fname}: unrecognized type {type(spec).__name__} for a PRNG implementation; "
                    f"give one of the names {', '.join(map(repr, PRNGS))}, a key dtype or an impl object of "
                    "kiln.extend.random")
