"""kiln.optim implementation: gradient transformations, schedules and losses with optax's API (F5)."""
from typing import Any

from .combinators import *  # noqa: F401,F403
from .combinators import __all__ as _combinators_all
from .linear_algebra import *  # noqa: F401,F403
from .linear_algebra import __all__ as _linear_algebra_all
from .linesearch import *  # noqa: F401,F403
from .linesearch import __all__ as _linesearch_all
from .losses import *  # noqa: F401,F403
from .losses import __all__ as _losses_all
from .moment_optimizers import *  # noqa: F401,F403
from .moment_optimizers import __all__ as _moment_optimizers_all
from .more import *  # noqa: F401,F403
from .more import __all__ as _more_all
from .numerics import *  # noqa: F401,F403
from .numerics import __all__ as _numerics_all
from .quasi_newton import *  # noqa: F401,F403
from .quasi_newton import __all__ as _quasi_newton_all
from .scaling_rules import *  # noqa: F401,F403
from .scaling_rules import __all__ as _scaling_rules_all
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
           + list(_combinators_all) + list(_quasi_newton_all) + list(_linesearch_all) + list(_moment_optimizers_all)
           + list(_numerics_all) + list(_linear_algebra_all) + list(_scaling_rules_all)
           + ["Params", "Updates", "OptState", "Schedule", "ScalarOrSchedule"])
LOSSES = tuple(_losses_all)
SCHEDULES = tuple(_schedules_all)
