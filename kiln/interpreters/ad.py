"""kiln.interpreters.ad (JAX's ``jax.interpreters.ad``): ``primitive_jvps[p] = rule(primals, tangents, **params)
-> (primal_out, tangent_out)`` (a tangent may be ``Zero``), ``primitive_transposes[p] = rule(ct, *args, **params)``
-> one cotangent per argument (None for the non-linear ones, which arrive as values; the linear ones arrive as
``UndefinedPrimal``)."""
from kiln.frontend.extend import UndefinedPrimal as UndefinedPrimal
from kiln.frontend.extend import Zero as Zero
from kiln.frontend.extend import instantiate as instantiate_zeros
from kiln.frontend.extend import is_undefined as is_undefined_primal
from kiln.frontend.extend import primitive_jvps as primitive_jvps
from kiln.frontend.extend import primitive_transposes as primitive_transposes
from kiln.frontend.extend import zeros_like_aval as zeros_like_aval

__all__ = ["UndefinedPrimal", "Zero", "instantiate_zeros", "is_undefined_primal", "primitive_jvps",
           "primitive_transposes", "zeros_like_aval"]
