"""F1, the driver floor: ``Array``, placement, eager execution, ``jit``/``lower``/``compile`` and dispatch.
The only frontend floor that imports ``kiln.lowering``."""

from . import eager  # noqa: E402,F401  (installs eager execution into the core floor's bind)
