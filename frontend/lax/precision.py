"""``precision=`` of dot products and convolutions: JAX's ``lax.Precision`` names, checked and normalised.

kiln accepts every form JAX accepts for ``precision`` (None, a name, a :class:`Precision`, a pair of
either) so that JAX code ports unchanged. :func:`canonicalize_precision` turns it into the primitives'
``precision`` parameter (None or one :class:`Precision` per operand), which the lowering emits as
StableHLO's ``precision_config`` as JAX does; None takes the ``default_matmul_precision`` flag
(``kiln.default_matmul_precision``). A dot algorithm (:class:`DotAlgorithm`, :class:`DotAlgorithmPreset`, or a
preset's name) is kept whole as ``dot_general``'s ``precision``, as JAX keeps it: the lowering casts the operands
to the algorithm's storage types and emits StableHLO's ``algorithm`` attribute (:meth:`DotAlgorithmPreset.plan`);
convolutions take XLA's default for one, as JAX's do.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np

from ..core import dtypes
from ..core.config import config
from ..core.errors import DotAlgorithmError

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
    """Named dot-product algorithms (as ``jax.lax.DotAlgorithmPreset``), for ``precision=`` of dot products:
    ``LHS_RHS_ACCUM``, the types the operands are rounded to and the accumulation type (``_X3``...: that many
    bf16/tf32 products emulate a wider type). Support depends on the platform: XLA's CPU backend takes those in
    ``on_cpu``, as JAX's lowering allows."""

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

    @property
    def on_cpu(self) -> bool:
        """Whether XLA's CPU backend may take this algorithm. It ignores the attribute and multiplies the converted
        operands in their own type: JAX's lowering (and kiln's) refuses the presets whose numbers that would not
        give."""
        return self.name in _ON_CPU

    def plan(self, lhs: Any, rhs: Any, out: Any) -> tuple:
        """How to lower a ``dot_general`` of ``lhs`` and ``rhs`` (dtypes) with result dtype ``out``: ``(lhs, rhs,
        accumulation)`` dtypes (the operands are converted to the first two, the ``stablehlo.dot_general``
        returns the third, converted to ``out``) and the ``algorithm`` attribute as ``(lhs type, rhs type,
        accumulation type, lhs components, rhs components, primitive operations, imprecise accumulation)`` with
        the types as dtypes or ``"tf32"`` (None for ``DEFAULT``: no attribute). As JAX's lowering: an operand
        already of one of the algorithm's storage types keeps it, others take its first."""
        storage = _STORAGE.get(self.name)
        lhs, rhs = (_keep_or_first(np.dtype(t), storage) for t in (lhs, rhs))
        acc = _keep_or_first(np.dtype(out), self._outputs(lhs, rhs))
        if self.name == "DEFAULT":
            return (lhs, rhs, acc), None
        if self.name.startswith("ANY_F8"):
            if not (lhs.name.startswith("float8") and rhs.name.startswith("float8")):
                raise DotAlgorithmError(f"The dot algorithm '{self}' requires both inputs to have float8 dtypes. "
                                        f"Got {lhs} and {rhs} instead: cast both operands to a float8 dtype "
                                        "(e.g. x.astype(kiln.numpy.float8_e4m3fn)), or pick another algorithm.")
            return (lhs, rhs, acc), (lhs, rhs, np.dtype(np.float32), 1, 1, 1, self.name.endswith("FAST_ACCUM"))
        operand, accumulation, *ops = self.name.split("_")[1:]
        kind = _ALGORITHM_TYPES[operand]
        return (lhs, rhs, acc), (kind, kind, _ALGORITHM_TYPES[accumulation], 1, 1,
                                 int(ops[0][1:]) if ops else 1, False)

    def _outputs(self, lhs: np.dtype, rhs: np.dtype) -> tuple | None:
        """The result types the algorithm can return (JAX's ``supported_output_types``)."""
        if self.name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            return (dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float8_e4m3fn, dtypes.float8_e5m2,
                    dtypes.float8_e5m2fnuz, dtypes.float8_e4m3fnuz, dtypes.float8_e4m3b11fnuz)
        for name, narrow in (("F16_F16_F32", dtypes.float16), ("BF16_BF16_F32", dtypes.bfloat16)):
            if self.name == name:  # the narrow output only from narrow operands
                return (dtypes.float32, narrow) if dtypes.promote_types(lhs, rhs) == narrow else (dtypes.float32,)
        acc = _ACCUMULATION.get(self.name, dtypes.float32)
        return None if acc is None else (acc,)


# The presets XLA's CPU backend computes (JAX's lowering refuses the others on CPU).
_ON_CPU = frozenset(("DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                     "BF16_BF16_F32_X6"))
# The operands' storage types of the presets that have them (JAX's supported_lhs_types): BF16_BF16_* keep float32
# operands as they are, and round anything else to bfloat16.
_STORAGE = {"F16_F16_F16": (dtypes.float16,), "F16_F16_F32": (dtypes.float16,),
            "BF16_BF16_BF16": (dtypes.bfloat16, dtypes.float32), "BF16_BF16_F32": (dtypes.bfloat16, dtypes.float32),
            "F64_F64_F64": (dtypes.float64,), "BF16_BF16_F32_X3": (dtypes.float32,),
            "BF16_BF16_F32_X6": (dtypes.float32,), "BF16_BF16_F32_X9": (dtypes.float32,),
            "TF32_TF32_F32": (dtypes.float32,), "TF32_TF32_F32_X3": (dtypes.float32,),
            "F32_F32_F32": (dtypes.float32,)}
# Accumulation types that are not float32 (None: the result type decides).
_ACCUMULATION = {"DEFAULT": None, "ANY_F8_ANY_F8_ANY": None, "ANY_F8_ANY_F8_ANY_FAST_ACCUM": None,
                 "F16_F16_F16": dtypes.float16, "BF16_BF16_BF16": dtypes.bfloat16, "F64_F64_F64": dtypes.float64}
# The element types of the names' parts, as the algorithm attribute has them.
_ALGORITHM_TYPES = {"F16": dtypes.float16, "BF16": dtypes.bfloat16, "TF32": "tf32", "F32": dtypes.float32,
                    "F64": dtypes.float64}


def _keep_or_first(dtype: np.dtype, allowed: tuple | None) -> np.dtype:
    return dtype if allowed is None or dtype in allowed else np.dtype(allowed[0])


class DotAlgorithm(NamedTuple):
    """An explicit dot-product algorithm (as ``jax.lax.DotAlgorithm``), for ``precision=`` of dot products: the
    operands are converted to ``lhs_precision_type``/``rhs_precision_type`` and accumulated in
    ``accumulation_type``. XLA's CPU backend takes none (only some presets, :class:`DotAlgorithmPreset`)."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False

    on_cpu = False

    def plan(self, lhs: Any, rhs: Any, out: Any) -> tuple:
        """As :meth:`DotAlgorithmPreset.plan`: the types are the algorithm's own."""
        types = tuple(np.dtype(t) for t in (self.lhs_precision_type, self.rhs_precision_type, self.accumulation_type))
        return types, (*types, self.lhs_component_count, self.rhs_component_count, self.num_primitive_operations,
                       self.allow_imprecise_accumulation)

    def swapped(self) -> DotAlgorithm:
        """The same algorithm for the product with its operands swapped."""
        return self._replace(lhs_precision_type=self.rhs_precision_type, rhs_precision_type=self.lhs_precision_type,
                             lhs_component_count=self.rhs_component_count,
                             rhs_component_count=self.lhs_component_count)


def _is_algorithm(p: Any) -> bool:
    # ("DEFAULT" is the preset, "default" the Precision, as in JAX)
    return isinstance(p, (DotAlgorithm, DotAlgorithmPreset)) or (isinstance(p, str) and (
        p in DotAlgorithmPreset.__members__ or (p.upper() in DotAlgorithmPreset.__members__
                                                and p.lower() not in _ALIASES)))


def swap_precision(precision: Any) -> Any:
    """A canonical ``precision`` for the same product with its two operands swapped (an algorithm's operand
    types swap; the presets treat both operands alike)."""
    if isinstance(precision, DotAlgorithm):
        return precision.swapped()
    if precision is None or isinstance(precision, DotAlgorithmPreset):
        return precision
    return precision[1], precision[0]


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


def canonicalize_precision(fname: str, precision: Any, *, keep_algorithm: bool = False) -> Any:
    """``precision`` as a pair of :class:`Precision` (one per operand), or None (XLA's default, emitted as
    ``[DEFAULT, DEFAULT]``); a bad value raises ``ValueError`` (as JAX) naming ``fname`` (e.g.
    ``"numpy.dot"``). None takes the ``default_matmul_precision`` flag, read now: call it at trace time.
    A dot algorithm (or a preset's name) is returned as a :class:`DotAlgorithm` or :class:`DotAlgorithmPreset`
    with ``keep_algorithm`` (dot products), else as None (convolutions: XLA's default, as JAX's lowering)."""
    if precision is None:
        precision = config.default_matmul_precision  # checked when set (Config._CHOICES)
        if precision is None:
            return None
    if _is_algorithm(precision):  # a dot algorithm (or its preset's name): one for both operands
        if not keep_algorithm:
            return None
        return precision if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)) else \
            DotAlgorithmPreset[precision.upper()]
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
