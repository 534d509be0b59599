"""``jax.experimental.hijax``: ``VJPHiPrimitive`` (operations with their own derivative rules, defined as classes),
the gradient accumulators its ``vjp_bwd`` gets (``ValAccum``, ``NullAccum``; ``RefAccum``, which kiln does not hand
out yet), the rules derived from others (``linearize_from_jvp``, ``vjp_from_jvp``, ``vjp_from_lin``,
``jvp_from_lin``), the symbolic ``Zero`` cotangent with ``instantiate_zeros``, and ``ShapedArray`` (the type of an
array argument or result, as ``out_aval`` names one)."""
from kiln.frontend.ad.hijax import GradAccum as GradAccum
from kiln.frontend.ad.hijax import NullAccum as NullAccum
from kiln.frontend.ad.hijax import RefAccum as RefAccum
from kiln.frontend.ad.hijax import ValAccum as ValAccum
from kiln.frontend.ad.hijax import VJPHiPrimitive as VJPHiPrimitive
from kiln.frontend.ad.hijax import jvp_from_lin as jvp_from_lin
from kiln.frontend.ad.hijax import linearize_from_jvp as linearize_from_jvp
from kiln.frontend.ad.hijax import vjp_from_jvp as vjp_from_jvp
from kiln.frontend.ad.hijax import vjp_from_lin as vjp_from_lin
from kiln.frontend.ad.tangents import Zero as Zero
from kiln.frontend.ad.tangents import instantiate as instantiate_zeros
from kiln.frontend.core.avals import ShapedArray as ShapedArray

__all__ = ["GradAccum", "NullAccum", "RefAccum", "ShapedArray", "VJPHiPrimitive", "ValAccum", "Zero",
           "instantiate_zeros", "jvp_from_lin", "linearize_from_jvp", "vjp_from_jvp", "vjp_from_lin"]
