"""``precision=`` of dot products and convolutions: JAX's ``lax.Precision`` names, checked and normalised.

kiln accepts every form JAX accepts for ``precision`` (None, a name, a :class:`Precision`, a pair of
either) so that JAX code ports unchanged. :func:`canonicalize_precision` turns it into the primitives'
``precision`` parameter (None or one :class:`Precision` per operand), which the lowering emits as
StableHLO's ``precision_config`` as JAX does; None takes the ``default_matmul_precision`` flag
(``kiln.default_matmul_precision``). Dot algorithms (:class:`DotAlgorithm`, :class:`DotAlgorithmPreset`)
are accepted and checked but not emitted: XLA's default algorithm is used (see README, "Differences
from JAX").
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

from ..core.config import config

# Strings JAX accepts, by the member they name ("float32" etc. name the arithmetic each member uses).
_ALIASES = {
    "default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
    "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
    "highest": "HIGHEST", "float32": "HIGHEST",
}


class Precision(enum.Enum):
    """Speed/accuracy trade-off of float32 dot products and convolutions on accelerators.

    ``DEFAULT`` (aliases ``'default'``, ``'fastest'``, ``'bfloat16'``), ``HIGH`` (``'high'``,
    ``'bfloat16_3x'``, ``'tensorfloat32'``) and ``HIGHEST`` (``'highest'``, ``'float32'``), as
    ``jax.lax.Precision``; ``Precision('highest')`` is ``Precision.HIGHEST``.
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        name = _ALIASES.get(value.lower()) if isinstance(value, str) else None
        return cls[name] if name is not None else None

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


class DotAlgorithmPreset(enum.Enum):
    """Named dot-product algorithms (as ``jax.lax.DotAlgorithmPreset``): accepted as ``precision=``,
    checked, and otherwise ignored by kiln (XLA's default algorithm is used)."""

    DEFAULT = 1
    ANY_F8_ANY_F8_F32 = 2
    ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
    ANY_F8_ANY_F8_ANY = 4
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
    F16_F16_F16 = 6
    F16_F16_F32 = 7
    BF16_BF16_BF16 = 8
    BF16_BF16_F32 = 9
    BF16_BF16_F32_X3 = 10
    BF16_BF16_F32_X6 = 11
    BF16_BF16_F32_X9 = 12
    TF32_TF32_F32 = 13
    TF32_TF32_F32_X3 = 14
    F32_F32_F32 = 15
    F64_F64_F64 = 16

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name


class DotAlgorithm(NamedTuple):
    """An explicit dot-product algorithm (as ``jax.lax.DotAlgorithm``): accepted as ``precision=``,
    checked, and otherwise ignored by kiln (XLA's default algorithm is used)."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


def _is_algorithm(p: Any) -> bool:
    return isinstance(p, (DotAlgorithm, DotAlgorithmPreset)) or (
        isinstance(p, str) and p.upper() in DotAlgorithmPreset.__members__ and p.lower() not in _ALIASES)


def swap_precision(precision: tuple[Precision, Precision] | None) -> tuple[Precision, Precision] | None:
    """A canonical ``precision`` for the same product with its two operands swapped."""
    return None if precision is None else (precision[1], precision[0])


def _one(fname: str, p: Any, whole: Any) -> Precision:
    if isinstance(p, Precision):
        return p
    if isinstance(p, str):
        try:
            return Precision(p)
        except ValueError:
            pass
    raise ValueError(f"kiln.{fname}: precision={whole!r} is not a precision; use None, one of "
                     f"{sorted(_ALIASES)}, a kiln.lax.Precision (DEFAULT, HIGH, HIGHEST), a pair of these "
                     "(one per operand), or a kiln.lax.DotAlgorithm / DotAlgorithmPreset")


def canonicalize_precision(fname: str, precision: Any) -> tuple[Precision, Precision] | None:
    """``precision`` as a pair of :class:`Precision` (one per operand), or None (XLA's default, emitted as
    ``[DEFAULT, DEFAULT]``); a bad value raises ``ValueError`` (as JAX) naming ``fname`` (e.g.
    ``"numpy.dot"``). None takes the ``default_matmul_precision`` flag, read now: call it at trace time."""
    if precision is None:
        precision = config.default_matmul_precision  # checked when set (Config._CHOICES)
        if precision is None:
            return None
    if _is_algorithm(precision):  # a dot algorithm (or its preset's name): one for both operands, ignored
        return None
    if isinstance(precision, (list, tuple)) and not isinstance(precision, DotAlgorithm):
        if len(precision) != 2:
            raise ValueError(f"kiln.{fname}: precision={precision!r} must be a single precision or a pair "
                             f"(one per operand), got {len(precision)} values")
        return _one(fname, precision[0], precision), _one(fname, precision[1], precision)
    p = _one(fname, precision, precision)
    return p, p


class AccuracyMode(enum.Enum):
    """Result-accuracy mode of transcendental functions (as ``jax.lax.AccuracyMode``), for their
    ``accuracy=`` argument: accepted, checked, and otherwise ignored by kiln (XLA's default accuracy)."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Result-accuracy tolerance of transcendental functions (as ``jax.lax.Tolerance``), for their
    ``accuracy=`` argument: accepted, checked, and otherwise ignored by kiln (XLA's default accuracy)."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError(f"kiln.lax.Tolerance: atol, rtol and ulps must be non-negative, got atol={atol}, "
                             f"rtol={rtol}, ulps={ulps}")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("kiln.lax.Tolerance: set at least one of atol, rtol and ulps")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def check_accuracy(fname: str, accuracy: Any) -> None:
    """``accuracy=`` of a transcendental function: None, a :class:`Tolerance` or an :class:`AccuracyMode`."""
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise TypeError(f"kiln.lax.{fname}: accuracy must be None, a kiln.lax.Tolerance or a kiln.lax.AccuracyMode, "
                        f"got {accuracy!r}")
