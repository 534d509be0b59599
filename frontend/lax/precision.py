"""``precision=`` of dot products and convolutions: JAX's ``lax.Precision`` names, checked and normalised.

kiln accepts every form JAX accepts for ``precision`` (None, a name, a :class:`Precision`, a pair of
either) so that JAX code ports unchanged, and checks it; the compiled program uses XLA's default
precision whatever the value (see README, "Differences from JAX").
"""
from __future__ import annotations

import enum
from typing import Any

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


def _one(fname: str, p: Any, whole: Any) -> Precision:
    if isinstance(p, Precision):
        return p
    if isinstance(p, str):
        try:
            return Precision(p)
        except ValueError:
            pass
    raise ValueError(f"kiln.{fname}: precision={whole!r} is not a precision; use None, one of "
                     f"{sorted(_ALIASES)}, a kiln.lax.Precision (DEFAULT, HIGH, HIGHEST) or a pair of these "
                     "(one per operand)")


def canonicalize_precision(fname: str, precision: Any) -> tuple[Precision, Precision] | None:
    """``precision`` as a pair of :class:`Precision` (one per operand), or None; a bad value raises
    ``ValueError`` (as JAX) naming ``fname`` (e.g. ``"numpy.dot"``)."""
    if precision is None:
        return None
    if isinstance(precision, (list, tuple)):
        if len(precision) != 2:
            raise ValueError(f"kiln.{fname}: precision={precision!r} must be a single precision or a pair "
                             f"(one per operand), got {len(precision)} values")
        return _one(fname, precision[0], precision), _one(fname, precision[1], precision)
    p = _one(fname, precision, precision)
    return p, p
