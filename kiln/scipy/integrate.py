"""kiln.scipy.integrate."""
from kiln.frontend.scipy.integrate import trapezoid as trapezoid

__all__ = [
    "trapezoid"
]
