"""kiln.export: jitted functions as serialized, portable StableHLO artifacts (JAX's ``jax.export``)."""
from kiln.frontend.driver.export import DisabledSafetyCheck as DisabledSafetyCheck
from kiln.frontend.driver.export import Exported as Exported
from kiln.frontend.driver.export import ExportError as ExportError
from kiln.frontend.driver.export import SymbolicScope as SymbolicScope
from kiln.frontend.driver.export import default_export_platform as default_export_platform
from kiln.frontend.driver.export import deserialize as deserialize
from kiln.frontend.driver.export import export as export
from kiln.frontend.driver.export import is_symbolic_dim as is_symbolic_dim
from kiln.frontend.driver.export import (
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
)
from kiln.frontend.driver.export import (
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version,
)
from kiln.frontend.driver.export import register_namedtuple_serialization as register_namedtuple_serialization
from kiln.frontend.driver.export import register_pytree_node_serialization as register_pytree_node_serialization
from kiln.frontend.driver.export import symbolic_args_specs as symbolic_args_specs
from kiln.frontend.driver.export import symbolic_shape as symbolic_shape

__all__ = ["default_export_platform", "deserialize", "DisabledSafetyCheck", "export", "Exported", "ExportError",
           "is_symbolic_dim", "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_shape", "SymbolicScope"]
