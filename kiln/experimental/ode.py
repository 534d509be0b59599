"""kiln.experimental.ode: integration of ordinary differential equations (as ``jax.experimental.ode``)."""
from kiln.frontend.ode import odeint as odeint

__all__ = ["odeint"]
