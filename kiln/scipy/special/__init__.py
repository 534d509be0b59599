"""kiln.scipy.special."""
from kiln.frontend.scipy.special import *  # noqa: F401,F403
