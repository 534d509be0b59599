"""kiln's primitives and the ``kiln.lax`` functions over them.

One module per family of primitives; each defines its primitives, their shape rules and the
public lax functions over them (listed in its ``__all__``). Add a family: one import line below.
"""
from .api import *  # noqa: F401,F403  (elementwise, structural, reduction families)
from .api import RoundingMethod, literal  # noqa: F401
