"""kiln.optim.assignment: optax.assignment's solvers of the linear assignment problem."""
from kiln.frontend.optim.assignment import base_hungarian_algorithm as base_hungarian_algorithm
from kiln.frontend.optim.assignment import hungarian_algorithm as hungarian_algorithm

__all__ = ["base_hungarian_algorithm", "hungarian_algorithm"]
