"""kiln.interpreters: the rule tables of new primitives (``kiln.extend.core.Primitive``) under JAX's names:
``ad`` (derivatives), ``batching`` (vmap), ``mlir`` (lowering)."""
from kiln.interpreters import ad, batching, mlir

__all__ = ["ad", "batching", "mlir"]
