"""kiln.interpreters.mlir (JAX's ``jax.interpreters.mlir``): ``register_lowering(p, rule, platform=None)`` with
``rule(ctx, *operand_values, **params)`` building StableHLO (``kiln.extend.mlir``), and ``lower_fun``."""
from kiln.frontend.extend import lower_fun as lower_fun
from kiln.frontend.extend import register_lowering as register_lowering

__all__ = ["lower_fun", "register_lowering"]
