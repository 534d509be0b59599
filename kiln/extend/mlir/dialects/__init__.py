"""kiln.extend.mlir.dialects: the MLIR dialects of StableHLO programs (JAX's ``jax.extend.mlir.dialects``):
``stablehlo`` (JAX's ``hlo``), ``chlo``, ``func``."""
from kiln.runtime.mlir import chlo as chlo
from kiln.runtime.mlir import func as func
from kiln.runtime.mlir import stablehlo as stablehlo

__all__ = ["chlo", "func", "stablehlo"]
