"""What custom derivative rules defined with ``symbolic_zeros=True`` see (as ``jax.custom_derivatives``):
:class:`SymbolicZero` for a tangent or cotangent known to be zero, :class:`CustomVJPPrimal` for each primal
argument of a custom_vjp's ``fwd``, and the helpers :func:`zero_from_primal` and
:func:`custom_vjp_primal_tree_values`.

Inside kiln a zero tangent is a :class:`~.tangents.Zero`; a rule gets it as a :class:`SymbolicZero` (user
code may test ``type(t) is SymbolicZero``) and may return one, which becomes a ``Zero`` again.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..core import tree_util
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.errors import KilnTypeError
from ..core.tracing import abstractify
from .tangents import Zero, instantiate, tangent_aval, zeros_like_aval


class SymbolicZero:
    """A tangent or cotangent known to be zero, as a custom rule defined with ``symbolic_zeros=True`` gets it
    (``jax.custom_derivatives.SymbolicZero``): a custom_jvp rule for the tangent of an input that is not
    differentiated, a custom_vjp ``bwd`` for the cotangent of an output that does not reach the differentiated
    result. It holds only the abstract value ``aval`` and reads ``shape``, ``dtype``, ``ndim``, ``size`` and
    ``weak_type`` (any attribute of the abstract value) from it. It is no array: test ``type(t) is SymbolicZero``
    and leave it out of the computation. A rule may return one (of the tangent's type) for a zero result.

    >>> SymbolicZero.from_primal_value(knp.ones(3)).shape
    (3,)
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        if isinstance(aval, ShapeDtypeStruct):
            aval = aval.aval
        if not isinstance(aval, ShapedArray):
            raise TypeError(f"kiln.custom_derivatives.SymbolicZero: expected an abstract value (a "
                            f"kiln.core.ShapedArray or kiln.ShapeDtypeStruct), got {type(aval).__name__}; "
                            "SymbolicZero.from_primal_value(x) gives the zero tangent of a value x")
        self.aval = aval

    def __repr__(self) -> str:
        return "SymbolicZero"  # as JAX's

    def __getattr__(self, name: str) -> Any:
        # Reached only for what the class lacks: the abstract value answers (shape, dtype, ...), as in JAX.
        if name == "aval" or name.startswith("__"):  # (``aval`` unset: a copy being built; no protocol lookups)
            raise AttributeError(f"SymbolicZero has no attribute {name}")
        try:
            return getattr(self.aval, name)
        except AttributeError:
            raise AttributeError(f"SymbolicZero has no attribute {name}") from None

    def __array__(self, *args, **kwargs):
        # kiln takes anything with an abstract value as an array operand; converting this one is where that ends.
        raise KilnTypeError(
            f"kiln: a SymbolicZero (a zero tangent of type {self.aval.str_short()}) was used as an array. A rule "
            "defined with symbolic_zeros=True gets SymbolicZero for tangents (or cotangents) known to be zero: test "
            "`type(t) is SymbolicZero` and leave them out of the computation, or make an array of zeros with "
            "kiln.numpy.zeros(t.shape, t.dtype)")

    @staticmethod
    def from_primal_value(val: Any) -> SymbolicZero:
        """The symbolic zero tangent of ``val`` (of ``float0`` dtype for an integer or boolean value)."""
        return SymbolicZero(tangent_aval(abstractify(val)))


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """The zero tangent of each leaf of ``val``: a :class:`SymbolicZero` with ``symbolic_zeros``, else an array
    of zeros (``float0`` zeros for an integer or boolean leaf), as ``jax.custom_derivatives.zero_from_primal``."""
    def zero(x):
        aval = tangent_aval(abstractify(x))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_util.tree_map(zero, val)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """A primal argument leaf as a custom_vjp ``fwd`` defined with ``symbolic_zeros=True`` gets it
    (``jax.custom_derivatives.CustomVJPPrimal``): ``value`` is the argument, ``perturbed`` whether it is
    differentiated (False: the cotangent ``bwd`` returns for it is not used)."""

    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """``tree`` with each :class:`CustomVJPPrimal` leaf replaced by its ``value``: the arguments of a
    ``symbolic_zeros`` ``fwd`` as the function itself takes them."""
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"kiln.custom_derivatives.custom_vjp_primal_tree_values: expected a tree whose leaves "
                            f"are CustomVJPPrimal (the arguments of a custom_vjp fwd defined with "
                            f"symbolic_zeros=True), got a leaf of type {type(leaf).__name__}")
        return leaf.value
    return tree_util.tree_map(value, tree)


# -- between kiln's Zero and the rules ----------------------------------------------------------------
def to_rule(t: Any, symbolic: bool) -> Any:
    """A tangent or cotangent as a rule gets it: a Zero as a SymbolicZero with ``symbolic``, else as zeros."""
    if isinstance(t, Zero):
        return SymbolicZero(t.aval) if symbolic else instantiate(t)
    return t


def from_rule(t: Any) -> Any:
    """A tangent or cotangent a rule returned, a SymbolicZero in it as kiln's Zero (its type checked by the
    caller)."""
    return Zero(t.aval) if type(t) is SymbolicZero else t


def fits(zero: Zero | SymbolicZero, aval: ShapedArray) -> bool:
    """Whether a symbolic zero can stand for the tangent of a value of type ``aval`` (weak types aside)."""
    expected = tangent_aval(aval)
    return zero.aval.shape == expected.shape and zero.aval.dtype == expected.dtype


def find_primal_wrapper(tree: Any) -> int | None:
    """The index of the first CustomVJPPrimal among the leaves of ``tree``, or None."""
    return next((i for i, x in enumerate(tree_util.tree_leaves(tree)) if type(x) is CustomVJPPrimal), None)


__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_vjp_primal_tree_values", "zero_from_primal"]
