"""kiln.optim.second_order: optax.second_order's Hessian-vector product, Hessian diagonal and Fisher diagonal."""
from kiln.frontend.optim.second_order import fisher_diag as fisher_diag
from kiln.frontend.optim.second_order import hessian_diag as hessian_diag
from kiln.frontend.optim.second_order import hvp as hvp

__all__ = ["fisher_diag", "hessian_diag", "hvp"]
