"""F1, the driver floor: ``Array``, placement, eager execution, ``jit``/``lower``/``compile`` and dispatch.
The only frontend floor that imports ``kiln.lowering``."""

# eager installs eager execution into the core floor's bind; gc_guard registers what the
# array_garbage_collection_guard flag does.
from . import eager, gc_guard  # noqa: E402,F401
