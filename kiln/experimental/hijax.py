"""``jax.experimental.hijax``: ``VJPHiPrimitive`` (operations with their own derivative rules, defined as classes),
and the symbolic ``Zero`` cotangent its ``vjp_bwd_retval`` may get, with ``instantiate_zeros``."""
from kiln.frontend.ad.hijax import VJPHiPrimitive as VJPHiPrimitive
from kiln.frontend.ad.tangents import Zero as Zero
from kiln.frontend.ad.tangents import instantiate as instantiate_zeros

__all__ = ["VJPHiPrimitive", "Zero", "instantiate_zeros"]
