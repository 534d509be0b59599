"""kiln.numpy.linalg."""
from kiln.frontend.numpy.linalg import *  # noqa: F401,F403
