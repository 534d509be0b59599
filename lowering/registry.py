"""The table of emission rules: primitive name -> function that emits StableHLO for it.

A rule is called as ``rule(ctx, eqn, *operands)`` inside the module's insertion point and returns
the result values (one ``ir.Value`` or a list). ``ctx`` is the :class:`~.module.EmitContext`.
"""
from __future__ import annotations

from typing import Callable

rules: dict[str, Callable] = {}


def register(*names: str):
    """Decorator: register one emission rule for the primitives ``names``."""
    def wrap(fn: Callable) -> Callable:
        for name in names:
            if name in rules:
                raise ValueError(f"emission rule for {name!r} registered twice")
            rules[name] = fn
        return fn
    return wrap
