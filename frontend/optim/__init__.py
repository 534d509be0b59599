"""kiln.optim implementation: gradient transformations and schedules with optax's API (F5)."""
from .more import *  # noqa: F401,F403
from .more import __all__ as _more_all
from .schedules import *  # noqa: F401,F403
from .schedules import __all__ as _schedules_all
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all

__all__ = list(_transforms_all) + list(_schedules_all) + list(_more_all)
