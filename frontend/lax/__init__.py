"""kiln's primitives and the ``kiln.lax`` functions over them."""
from . import elementwise, reduction, structural  # noqa: F401  (define the primitives)
from .api import *  # noqa: F401,F403
from .api import RoundingMethod, literal  # noqa: F401
