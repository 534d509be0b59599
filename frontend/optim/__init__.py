"""kiln.optim implementation: gradient transformations, schedules and losses with optax's API (F5)."""
from typing import Any

from .losses import *  # noqa: F401,F403
from .losses import __all__ as _losses_all
from .more import *  # noqa: F401,F403
from .more import __all__ as _more_all
from .schedules import *  # noqa: F401,F403
from .schedules import __all__ as _schedules_all
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all
from .wrappers import *  # noqa: F401,F403
from .wrappers import __all__ as _wrappers_all

# optax's type names, for annotations in ported code (optax.Params, optax.OptState, ...): any pytree.
Params = Updates = OptState = Any
Schedule = ScalarOrSchedule = Any

__all__ = (list(_transforms_all) + list(_schedules_all) + list(_more_all) + list(_wrappers_all) + list(_losses_all)
           + ["Params", "Updates", "OptState", "Schedule", "ScalarOrSchedule"])
LOSSES = tuple(_losses_all)
SCHEDULES = tuple(_schedules_all)
