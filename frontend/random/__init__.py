"""kiln.random: counter-based, splittable pseudo-random numbers (threefry2x32), bit-exact with
JAX's ``jax.random`` in both of its threefry modes (``kiln.config.threefry_partitionable``).

Keys are explicit: make one with ``key(seed)``, derive independent ones with ``split`` or
``fold_in``, and pass one to every sampler. The same key always gives the same numbers.
"""
from .keys import *  # noqa: F401,F403
from .keys import __all__ as _keys_all
from .samplers import *  # noqa: F401,F403
from .samplers import __all__ as _samplers_all

__all__ = list(_keys_all) + list(_samplers_all)
