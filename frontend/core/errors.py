"""kiln's exception types. Each message says what went wrong, where, and how to fix it."""
from __future__ import annotations

import numpy as np
from kiln.runtime.errors import KilnError  # noqa: F401  (the base of every kiln error: the lowest floor's)


class KilnTypeError(KilnError, TypeError):
    """A ``TypeError`` of kiln's own (``kiln.errors.JAXTypeError``): the base of the tracer errors below,
    as JAX's ``JAXTypeError`` is of its."""


class KilnIndexError(KilnError, IndexError):
    """An ``IndexError`` of kiln's own (``kiln.errors.JAXIndexError``)."""


class ConcretizationTypeError(KilnTypeError):
    """A traced value was used where Python needs a concrete one (``int(x)``, a shape, ...)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value, usually a Python ``if``/``while`` on an array under ``jit``."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()``/``__index__`` of a traced value."""


class TracerArrayConversionError(KilnTypeError):
    """``np.asarray`` of a traced value."""


class UnexpectedTracerError(KilnTypeError):
    """A tracer escaped the function that was being traced (stored in a global, say)."""


# Bad-input errors. Each derives from the built-in class JAX raises for the same input, so that a ported
# program's ``except`` clause still catches it (tests/frontend/test_error_classes.py holds the table).
# Where JAX raises different classes for one kiln check (or NumPy disagrees with JAX), the class derives
# from both, as NumPy's own AxisError (ValueError and IndexError) does.


class ShapeError(KilnError, TypeError):
    """Operand shapes that an operation's shape rule rejects: contraction dimensions of a product,
    a concatenation, a transpose permutation, a slice outside the operand. A ``TypeError``, as JAX's
    shape rules raise."""


class BroadcastError(ShapeError, ValueError):
    """Operand shapes that do not broadcast together. JAX raises ``TypeError`` from elementwise ops and
    ``ValueError`` from ``broadcast_shapes``/``where``; NumPy raises ``ValueError``: this is both."""


class NegativeDimensionError(ShapeError, ValueError):
    """A shape with a negative dimension. JAX raises ``TypeError`` (``zeros``, ``full``, ``tri``) or
    ``ValueError`` (``eye``, ``broadcast_to``); NumPy raises ``ValueError``: this is both."""


class ShapeTooLargeError(ShapeError, ValueError):
    """A shape XLA cannot represent: an array whose size in bytes (or one dimension) does not fit in
    int64. XLA aborts the process on such a shape, so kiln refuses it where the abstract value is
    built. A ``ValueError``, as NumPy raises for arrays too big; JAX has no class for it (it aborts)."""


class MatrixShapeError(ShapeError, np.linalg.LinAlgError):
    """A linear-algebra argument that is not a (stack of) square matrices. JAX raises ``ValueError``
    (``inv``, ``det``) or ``TypeError`` (``cholesky``, ``eigh``, ``svd``, ``qr``); NumPy raises
    ``LinAlgError`` (a ``ValueError``): this is all three."""


class AxisError(KilnError, np.exceptions.AxisError):
    """An axis out of bounds for the array's rank. A ``ValueError`` and an ``IndexError`` (as NumPy's
    ``AxisError``): JAX raises ``ValueError`` from most functions, ``IndexError`` from ``argmax``,
    ``mean`` and ``swapaxes``."""


class IndexTypeError(KilnError, TypeError, IndexError):
    """An index of a type arrays cannot be indexed with (a float, a string, a float array). JAX raises
    ``TypeError`` (``IndexError`` for other objects), NumPy ``IndexError``: this is both."""


class IntegerOverflowError(KilnError, OverflowError):
    """A Python integer too large for any integer dtype kiln can give it (int32 or int64/uint64)."""



class TypePromotionError(KilnError, ValueError):
    """Operands whose dtypes have no implicit promotion: under ``numpy_dtype_promotion='strict'``, or
    with a narrow dtype of ml_dtypes (``float8_*``, ``int4``, ...), which promotes to nothing else
    (``kiln.dtypes.TypePromotionError``; a ``ValueError``, as JAX's)."""


class DotAlgorithmError(KilnError, ValueError):
    """A dot algorithm (``precision=`` of a dot product) the platform or the operands' dtypes do not allow (a
    ``ValueError``, as JAX's)."""


class IRTypeError(KilnError, TypeError):
    """An ill-typed kiln IR (``kiln.errors.JaxprTypeError``)."""


class InconclusiveDimensionOperation(KilnError, TypeError):
    """JAX raises it for comparisons of symbolic dimensions (shape polymorphism). kiln's shapes are
    always concrete, so kiln never raises it; it exists so that ``except`` clauses of ported programs
    work."""


class KeyReuseError(KilnTypeError):
    """A typed PRNG key consumed twice (by two kiln.random draws, or by a loop body on every iteration) while
    ``debug_key_reuse`` is on."""
