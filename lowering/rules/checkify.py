"""Emission rule of the ``check`` primitive (``frontend/checkify/primitive.py``).

A ``check`` reaches lowering only when no ``checkify`` functionalized it (``jit(f)`` of a function calling
``checkify.check``): XLA has no way to raise a Python exception, so lowering refuses it with JAX's message. A
``debug_check`` (``debug=True``) is dropped.
"""
from __future__ import annotations

from ..module import LoweringError
from ..registry import register


class CheckNotFunctionalizedError(LoweringError, ValueError):
    """A ``checkify.check`` was staged (``jit``, ``scan``, ...) without ``checkify`` (a ``ValueError``, as JAX's)."""


@register("check")
def _check(ctx, eqn, *args):
    if eqn.params["debug"]:
        return []
    raise CheckNotFunctionalizedError(
        "Cannot abstractly evaluate a checkify.check which was not functionalized. This probably means you tried to "
        "stage (jit/scan/pmap/...) a `check` without functionalizing it through `checkify.checkify`.")
