"""kiln.extend: the part of ``jax.extend`` kiln has: ``kiln.extend.core`` (the IR's classes under JAX's names, and
``Primitive`` for new primitives) and ``kiln.extend.mlir`` (the MLIR bindings their lowering rules use)."""
from kiln.extend import core, mlir

__all__ = ["core", "mlir"]
