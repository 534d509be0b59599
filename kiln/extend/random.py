"""kiln.extend.random: the PRNG implementation objects of ``jax.extend.random`` (``threefry_prng_impl``,
``rbg_prng_impl``, ``unsafe_rbg_prng_impl``; also ``threefry4x32_prng_impl``, ``philox4x32_prng_impl`` and
``philox2x32_prng_impl``, which JAX keeps in ``jax._src.random``), which ``kiln.random.key(seed, impl=...)``,
``kiln.random.wrap_key_data`` and ``kiln.random.key_dtype`` take as they take the implementations' names, and
``seed_with_impl(impl, seed)``. Each has ``name``, ``tag`` (what its key dtype prints: ``key<rbg>``) and
``key_shape``. ``define_prng_impl`` makes an implementation from functions of one key. ``threefry_2x32(keypair,
count)`` is the Threefry-2x32 hash of uint32 words, ``random_seed(seeds, impl)`` typed keys from an array of seeds."""
from kiln.frontend.random.extend import random_seed as random_seed
from kiln.frontend.random.extend import threefry_2x32 as threefry_2x32
from kiln.frontend.random.impls import define_prng_impl as define_prng_impl
from kiln.frontend.random.impls import philox2x32_prng_impl as philox2x32_prng_impl
from kiln.frontend.random.impls import philox4x32_prng_impl as philox4x32_prng_impl
from kiln.frontend.random.impls import rbg_prng_impl as rbg_prng_impl
from kiln.frontend.random.impls import threefry4x32_prng_impl as threefry4x32_prng_impl
from kiln.frontend.random.impls import threefry_prng_impl as threefry_prng_impl
from kiln.frontend.random.impls import unsafe_rbg_prng_impl as unsafe_rbg_prng_impl
from kiln.frontend.random.keys import seed_with_impl as seed_with_impl

__all__ = ["define_prng_impl", "philox2x32_prng_impl", "philox4x32_prng_impl", "random_seed", "rbg_prng_impl",
           "seed_with_impl", "threefry4x32_prng_impl", "threefry_2x32", "threefry_prng_impl", "unsafe_rbg_prng_impl"]
