"""Emission rules, one module per family of primitives (importing them registers them)."""
from . import elementwise, reduction, structural  # noqa: F401
from . import indexing  # noqa: F401
from . import special  # noqa: F401
from . import sorting  # noqa: F401
from . import windowed  # noqa: F401
from . import convolution  # noqa: F401
from . import custom  # noqa: F401
from . import linalg  # noqa: F401
from . import collectives  # noqa: F401
from . import control  # noqa: F401
