"""kiln.experimental.key_reuse: JAX's ``jax.experimental.key_reuse``, which holds only its documentation (it exports
no names).

Key reuse checking is turned on with ``kiln.config.update('jax_debug_key_reuse', True)`` or, in a block, with
``with kiln.debug_key_reuse(True):``. Using a typed key (``kiln.random.key``) twice then raises
``kiln.errors.KeyReuseError``::

    >>> with kiln.debug_key_reuse(True):
    ...     key = kiln.random.key(0)
    ...     val1 = kiln.random.normal(key)
    ...     val2 = kiln.random.normal(key)  # raises KeyReuseError
"""

__all__: list[str] = []
