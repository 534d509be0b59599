"""``kiln.experimental.random``: a stateful generator (JAX's ``stateful_rng``), as NumPy's ``default_rng``.

A :class:`StatefulPRNG` holds a typed base key and a counter in a mutable array reference (``kiln.new_ref``):
each draw folds the counter into the base key and increments it, so repeated draws differ without the user
threading keys, eagerly and inside ``jit`` (which writes the counter back) or ``vmap`` (over ``split``
generators). The numbers are those of JAX's generator for the same seed.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any, Sequence

import numpy as np

from .. import numpy as knp
from ..core import tree_util
from ..core.refs import Ref
from ..core.tracing import active_traces
from ..refs import new_ref
from . import keys, samplers


def _size(size: int | Sequence[int] | None, *args: Any) -> tuple[int, ...]:
    """The shape of a draw: ``size`` as a tuple, or the broadcast shape of the distribution's parameters."""
    if size is None:
        return tuple(np.broadcast_shapes(*(np.shape(a) for a in args)))
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(operator.index(d) for d in size)


@dataclasses.dataclass(frozen=True)
class StatefulPRNG:
    """A random generator whose state updates itself (make one with :func:`stateful_rng`): a typed base key and
    a counter ref. It is a pytree (jit and vmap take it as an argument), but no function may return it."""

    _base_key: Any
    _counter: Ref

    def __post_init__(self):
        if not isinstance(self._base_key, keys.KeyArray):
            raise ValueError(f"kiln.experimental.random.StatefulPRNG: base_key must be a typed PRNG key "
                             f"(kiln.random.key); got {type(self._base_key).__name__}")
        if not isinstance(self._counter, Ref):
            raise ValueError(f"kiln.experimental.random.StatefulPRNG: the counter must be an integer Ref "
                             f"(kiln.new_ref); got {type(self._counter).__name__}")

    def key(self, shape: int | Sequence[int] = ()) -> Any:
        """A new key (or keys of ``shape``), independent of every other this generator gives; the state moves on."""
        if self._base_key.shape:
            raise ValueError("kiln.experimental.random.StatefulPRNG.key: this generator was split (rng.split(n)); "
                             "draw from it inside kiln.vmap, one element at a time")
        key = keys.fold_in(self._base_key, self._counter[...])
        self._counter[...] = self._counter[...] + 1
        shape = _size(shape)
        return keys.split(key, shape) if shape else key

    def random(self, size: int | Sequence[int] | None = None, dtype: Any = float) -> Any:
        """Floats in [0, 1)."""
        return samplers.uniform(self.key(), _size(size), dtype=dtype)

    def uniform(self, low: Any = 0, high: Any = 1, size: int | Sequence[int] | None = None, *,
                dtype: Any = float) -> Any:
        """Floats uniformly in [low, high)."""
        return samplers.uniform(self.key(), _size(size, low, high), minval=low, maxval=high, dtype=dtype)

    def normal(self, loc: Any = 0, scale: Any = 1, size: int | Sequence[int] | None = None, *,
               dtype: Any = float) -> Any:
        """Normally distributed floats of mean ``loc`` and standard deviation ``scale``."""
        draw = samplers.normal(self.key(), _size(size, loc, scale), dtype)
        return (knp.asarray(loc) + knp.asarray(scale) * draw).astype(dtype)

    def integers(self, low: Any, high: Any = None, size: int | Sequence[int] | None = None, *,
                 dtype: Any = int) -> Any:
        """Integers in [low, high) (in [0, low) when ``high`` is not given)."""
        if high is None:
            low, high = 0, low
        return samplers.randint(self.key(), _size(size, low, high), minval=low, maxval=high, dtype=dtype)

    def split(self, num: int | Sequence[int]) -> StatefulPRNG:
        """One generator holding ``num`` independent ones, to be mapped over with ``kiln.vmap``."""
        return StatefulPRNG(self.key(num), new_ref(knp.zeros(num, dtype=int)))

    def spawn(self, n_children: int) -> list[StatefulPRNG]:
        """A list of ``n_children`` independent generators."""
        return [StatefulPRNG(key, new_ref(0)) for key in self.key(n_children)]


tree_util.register_dataclass(StatefulPRNG, data_fields=["_base_key", "_counter"], meta_fields=[])


def stateful_rng(seed: Any = None, *, impl: Any = None) -> StatefulPRNG:
    """A :class:`StatefulPRNG` seeded with ``seed`` (an integer; left out, from NumPy's entropy, at the top level
    only), as JAX's ``jax.experimental.random.stateful_rng``: ``rng.uniform()``, ``rng.normal(size=3)``,
    ``rng.integers(0, 10)``, ``rng.key()`` draw and move the state on, also inside ``kiln.jit``."""
    if seed is None:
        if active_traces():
            raise TypeError("kiln.experimental.random.stateful_rng: inside a traced function it needs an explicit "
                            "seed (stateful_rng(0)); only at the top level is one drawn from the system's entropy")
        seed = np.int64(np.random.SeedSequence().entropy & np.iinfo(np.int64).max)
    return StatefulPRNG(keys.key(seed, impl=impl), new_ref(0))
