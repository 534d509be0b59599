"""kiln.errors: the error classes JAX names in ``jax.errors``, as kiln's own classes that mean the same.

``JAXTypeError`` and ``JAXIndexError`` are kiln's bases ``KilnTypeError`` and ``KilnIndexError``;
``JaxRuntimeError`` is ``KilnRuntimeError`` (errors from the XLA runtime); ``JaxprTypeError`` is
``IRTypeError`` (kiln's IR stands for jaxprs). ``InconclusiveDimensionOperation`` exists for ``except``
clauses only: kiln has no symbolic shapes. ``KeyReuseError`` is raised under ``debug_key_reuse``.
"""
from kiln.frontend.core.errors import ConcretizationTypeError as ConcretizationTypeError
from kiln.frontend.core.errors import InconclusiveDimensionOperation as InconclusiveDimensionOperation
from kiln.frontend.core.errors import IRTypeError as JaxprTypeError
from kiln.frontend.core.errors import KeyReuseError as KeyReuseError
from kiln.frontend.core.errors import KilnIndexError as JAXIndexError
from kiln.frontend.core.errors import KilnTypeError as JAXTypeError
from kiln.frontend.core.errors import TracerArrayConversionError as TracerArrayConversionError
from kiln.frontend.core.errors import TracerBoolConversionError as TracerBoolConversionError
from kiln.frontend.core.errors import TracerIntegerConversionError as TracerIntegerConversionError
from kiln.frontend.core.errors import UnexpectedTracerError as UnexpectedTracerError
from kiln.frontend.driver.retrace import RetraceWarning as RetraceWarning
from kiln.frontend.driver.stale import StaleValueWarning as StaleValueWarning
from kiln.frontend.driver.trace_mutations import TraceSideEffectWarning as TraceSideEffectWarning
from kiln.frontend.lax.indexing import IndexCheckError as IndexCheckError
from kiln.frontend.numpy.indexing import NonConcreteBooleanIndexError as NonConcreteBooleanIndexError
from kiln.runtime import CallbackError as CallbackError
from kiln.runtime import KilnRuntimeError as JaxRuntimeError
from kiln.runtime.transfer_guard import TransferGuardError as TransferGuardError

__all__ = [
    "CallbackError", "ConcretizationTypeError", "InconclusiveDimensionOperation", "IndexCheckError", "JAXIndexError",
    "JaxprTypeError", "JaxRuntimeError", "JAXTypeError", "KeyReuseError", "NonConcreteBooleanIndexError",
    "RetraceWarning", "StaleValueWarning", "TraceSideEffectWarning", "TracerArrayConversionError",
    "TracerBoolConversionError", "TracerIntegerConversionError", "TransferGuardError", "UnexpectedTracerError",
]
