"""kiln.scipy.optimize."""
from kiln.frontend.scipy.optimize import OptimizeResults as OptimizeResults
from kiln.frontend.scipy.optimize import minimize as minimize

__all__ = [
    "OptimizeResults", "minimize"
]
