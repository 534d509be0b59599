"""kiln's primitives and the ``kiln.lax`` functions over them.

One module per family of primitives; each defines its primitives, their shape rules and the
public lax functions over them (listed in its ``__all__``). Add a family: one import line below.
"""
from . import linalg  # noqa: F401  (kiln.lax.linalg, as jax.lax.linalg)
from .api import *  # noqa: F401,F403  (elementwise, structural, reduction families)
from .api import RoundingMethod, literal  # noqa: F401
from .convolution import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .precision import Precision  # noqa: F401
from .sorting import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .windowed import *  # noqa: F401,F403
