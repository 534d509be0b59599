"""kiln.custom_derivatives: functions with user-defined derivatives (as ``jax.custom_derivatives``)."""
from kiln.frontend.ad.api import closure_convert as closure_convert
from kiln.frontend.ad.api import custom_gradient as custom_gradient
from kiln.frontend.ad.custom import custom_jvp as custom_jvp
from kiln.frontend.ad.custom import custom_vjp as custom_vjp
from kiln.frontend.ad.linear_call import linear_call as linear_call
from kiln.frontend.ad.symbolic_zeros import CustomVJPPrimal as CustomVJPPrimal
from kiln.frontend.ad.symbolic_zeros import SymbolicZero as SymbolicZero
from kiln.frontend.ad.symbolic_zeros import custom_vjp_primal_tree_values as custom_vjp_primal_tree_values
from kiln.frontend.ad.symbolic_zeros import zero_from_primal as zero_from_primal

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values", "linear_call", "SymbolicZero", "zero_from_primal"]
