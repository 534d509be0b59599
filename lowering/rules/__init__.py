"""Emission rules, one module per family of primitives (importing them registers them)."""
from . import elementwise, reduction, structural  # noqa: F401
