"""kiln.debug: debugging aids (JAX's ``jax.debug``): printing and host callbacks from inside transformed code,
and how arrays are laid out over devices."""
from kiln.frontend.debugger import breakpoint as breakpoint  # noqa: A004  (jax.debug.breakpoint)
from kiln.frontend.driver.visualize import visualize_array_sharding as visualize_array_sharding
from kiln.frontend.driver.visualize import visualize_sharding as visualize_sharding
from kiln.frontend.lax.callbacks import debug_callback as callback
from kiln.frontend.lax.callbacks import debug_log as log
from kiln.frontend.lax.callbacks import debug_print as print  # noqa: A001  (jax.debug.print)
from kiln.frontend.lax.callbacks import inspect_array_sharding as inspect_array_sharding

__all__ = ["breakpoint", "callback", "inspect_array_sharding", "log", "print", "visualize_array_sharding",
           "visualize_sharding"]
