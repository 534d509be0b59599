"""kiln.extend: the part of ``jax.extend`` kiln has: ``kiln.extend.core`` (the IR's classes under JAX's names, and
``Primitive`` for new primitives), ``kiln.extend.mlir`` (the MLIR bindings their lowering rules use) and
``kiln.extend.random`` (the PRNG implementation objects)."""
from kiln.extend import core, mlir, random

__all__ = ["core", "mlir", "random"]
