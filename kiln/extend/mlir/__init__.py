"""kiln.extend.mlir: jaxlib's MLIR Python bindings, for lowering rules written for new primitives
(``kiln.interpreters.mlir.register_lowering``), as JAX's ``jax.extend.mlir``: ``ir`` and ``dialects.stablehlo``."""
from kiln.extend.mlir import dialects
from kiln.runtime.mlir import ir as ir

__all__ = ["dialects", "ir"]
