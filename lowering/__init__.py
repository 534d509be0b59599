"""kiln's lowering: IR passes and one StableHLO emission rule per primitive."""
from . import rules  # noqa: F401  (registers the emission rules)
from .hlo import op  # noqa: F401
from .module import EmitContext, LoweredModule, LoweringError, MeshLayout, custom_calls, lower, type_strings  # noqa: F401
from .registry import rules as emission_rules  # noqa: F401
