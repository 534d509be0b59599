"""Axis arguments: the one check and normalisation behind every kiln function that takes an axis.

``where`` is the caller's name as its messages start (``"kiln.numpy.squeeze"``), so every function reports
``kiln.numpy.squeeze: axis 3 is out of bounds for an array of dimension 2`` in its own name."""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import AxisError, ConcretizationTypeError
from .tracing import Tracer


def canonical_axis(where: str, axis: Any, ndim: int, *, what: str = "axis", within: str | None = None) -> int:
    """``axis``, an int in ``[-ndim, ndim)``, as a non-negative int. ``what`` names the argument in messages
    (``"dimension"`` for ``kiln.lax.sort``); ``within`` the sequence it came from (``"axes[0]"``)."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise axis_type_error(where, axis, what=what, within=within)
    of = "" if within is None else f" in {within}"
    if not -ndim <= axis < ndim:
        raise AxisError(f"{where}: {what} {axis}{of} is out of bounds for an array of dimension {ndim}")
    return int(axis) % ndim


def axis_type_error(where: str, axis: Any, *, what: str = "axis", within: str | None = None,
                    fix: str = "") -> TypeError:
    """The error for an axis that is not an int (a bool, a float, a string, a traced value), to raise. ``fix``
    (``"; write axis=1"``) ends the message."""
    of = "" if within is None else f" in {within}"
    if isinstance(axis, Tracer):  # as JAX: the error class of a value that must be static
        return ConcretizationTypeError(
            f"{where}: {what}{of} must be a static int, but got a traced value {axis.aval.str_short()}: an axis "
            "decides the result's shape, so it must be known when the function is traced. Pass it as a static "
            "argument (static_argnums/static_argnames) or as a Python int.")
    return TypeError(f"{where}: {what}{of} must be an int, got {type(axis).__name__} {axis!r}{fix}")


def canonical_axes(where: str, axis: Any, ndim: int, *, allow_repeats: bool = False,
                   within: str | None = None) -> tuple[int, ...]:
    """An int or an iterable of ints as non-negative axes, in the given order. A repeated axis is an error
    unless ``allow_repeats``."""
    out = tuple(canonical_axis(where, a, ndim, within=within) for a in _entries(axis))
    if not allow_repeats and len(set(out)) != len(out):
        of = "" if within is None else f"{within} "
        raise ValueError(f"{where}: repeated axis in {of}{axis}")
    return out


def sorted_axes(where: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """The axes a reduction (or ``flip``, ``squeeze``, ``softmax``) works over: ``None`` -> every axis;
    otherwise :func:`canonical_axes`, ascending."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(canonical_axes(where, axis, ndim)))


def _entries(axis: Any) -> tuple:
    """The axes an argument names: the entries of a tuple, a list or another iterable of at least one
    dimension; anything else is one axis (which ``canonical_axis`` then checks)."""
    if isinstance(axis, (tuple, list)):
        return tuple(axis)
    one = isinstance(axis, (int, np.integer, str, bytes)) or getattr(axis, "ndim", 1) == 0
    return (axis,) if one or not hasattr(axis, "__iter__") else tuple(axis)
