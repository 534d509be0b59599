"""Emission rules written in JAX's calling convention, which a primitive carries itself (``prim.lowering_rules``,
set by ``kiln.interpreters.mlir.register_lowering``): ``rule(ctx, *operands, **params)`` returns the result values,
with ``ctx`` a :class:`LoweringRuleContext` (``avals_in``, ``avals_out``, ``platform``), inside the module's insertion
point, so that ``stablehlo.AddOp(stablehlo.MulOp(x, y), z).result`` builds in place (JAX's custom-primitive
tutorial, "How JAX primitives work")."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from kiln.frontend.core.ir import IR, ClosedIR, Eqn

from .hlo import const

# The platform names a rule may be registered for, beyond the backend's own: JAX's "gpu" for either GPU platform.
_ALIASES = {"cuda": ("gpu",), "rocm": ("gpu",)}


class LoweringRuleContext:
    """The ``ctx`` of a rule registered with ``register_lowering``: the operands' and results' abstract values and
    the platform being lowered for (JAX's names)."""

    def __init__(self, emit_ctx: Any, eqn: Eqn) -> None:
        self.avals_in = [a.aval for a in eqn.inputs]
        self.avals_out = [v.aval for v in eqn.outputs]
        self.platform = emit_ctx.platform
        self._emit_ctx = emit_ctx

    def emit(self, closed: ClosedIR, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit a traced function's IR on ``args`` here (``mlir.lower_fun``): its constants become constants."""
        consts = [const(np.asarray(c), np.asarray(c).dtype).v for c in closed.consts]
        body: IR = closed.ir
        return self._emit_ctx.emit_body(body, consts + list(args))


def rule_for(prim: Any, platform: str | None) -> Callable[..., Any] | None:
    """The rule ``prim`` carries for ``platform`` (then for its aliases, then for every platform), or None."""
    rules = prim.lowering_rules or {}
    for key in (platform, *_ALIASES.get(platform or "", ()), None):
        if key in rules:
            return rules[key]
    return None


def emit(ctx: Any, eqn: Eqn, rule: Callable[..., Any], operands: Sequence[ir.Value]) -> list[ir.Value]:
    """Call a JAX-convention ``rule`` for ``eqn`` and return its results as a list."""
    outs = rule(LoweringRuleContext(ctx, eqn), *operands, **eqn.params)
    if isinstance(outs, ir.Value):
        return [outs]
    return list(outs)
