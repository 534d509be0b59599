"""kiln.numpy: NumPy's API with JAX's semantics (immutable arrays, float32 default)."""
from kiln.frontend.driver.array import Array as ndarray  # noqa: F401
from kiln.frontend.numpy import *  # noqa: F401,F403

from . import linalg  # noqa: F401,E402
