"""kiln.extend.random: the PRNG implementation objects of ``jax.extend.random`` (``threefry_prng_impl``,
``rbg_prng_impl``, ``unsafe_rbg_prng_impl``), which ``kiln.random.key(seed, impl=...)``,
``kiln.random.wrap_key_data`` and ``kiln.random.key_dtype`` take as they take the implementations' names, and
``seed_with_impl(impl, seed)``. Each has ``name``, ``tag`` (what its key dtype prints: ``key<rbg>``) and
``key_shape``. kiln has no ``define_prng_impl`` (user-defined implementations)."""
from kiln.frontend.random.impls import rbg_prng_impl as rbg_prng_impl
from kiln.frontend.random.impls import threefry_prng_impl as threefry_prng_impl
from kiln.frontend.random.impls import unsafe_rbg_prng_impl as unsafe_rbg_prng_impl
from kiln.frontend.random.keys import seed_with_impl as seed_with_impl

__all__ = ["rbg_prng_impl", "seed_with_impl", "threefry_prng_impl", "unsafe_rbg_prng_impl"]
