"""kiln's exception types. Each message says what went wrong, where, and how to fix it."""
from __future__ import annotations


class KilnError(Exception):
    """Base class of kiln's own errors."""


class ConcretizationTypeError(KilnError, TypeError):
    """A traced value was used where Python needs a concrete one (``int(x)``, a shape, ...)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value, usually a Python ``if``/``while`` on an array under ``jit``."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()``/``__index__`` of a traced value."""


class TracerArrayConversionError(KilnError, TypeError):
    """``np.asarray`` of a traced value."""


class UnexpectedTracerError(KilnError):
    """A tracer escaped the function that was being traced (stored in a global, say)."""


def describe_origin(builder) -> str:
    """Where a traced value came from, for error messages."""
    fun = getattr(builder, "fun_name", None) or "a traced function"
    return f"while tracing {fun}"
