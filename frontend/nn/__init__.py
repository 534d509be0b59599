"""kiln.nn implementation: activations and other neural-network helpers (as ``jax.nn``)."""
from . import initializers  # noqa: F401,E402  (kiln.nn.initializers)
from .attention import *  # noqa: F401,F403
from .attention import __all__ as _attention_all
from .functions import *  # noqa: F401,F403
from .functions import __all__ as _functions_all
from .scaled import __all__ as _scaled_all
from .scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul  # noqa: F401

__all__ = list(_functions_all) + list(_attention_all) + list(_scaled_all)
