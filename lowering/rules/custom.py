"""Emission rules of primitives that only exist inside differentiation."""
from __future__ import annotations

from ..hlo import op
from ..registry import register


@register("custom_vjp_lin")
def _custom_vjp_lin(ctx, eqn, *args):
    name = eqn.params["rule"].name
    own_message = getattr(eqn.params["rule"].call.owner, "forward_mode_error", None)  # (a hijax primitive's)
    if own_message:
        raise NotImplementedError(own_message)
    raise TypeError(f"kiln: forward-mode differentiation (kiln.jvp, kiln.jacfwd, kiln.linearize) of the "
                    f"custom_vjp function {name} is not supported, as in JAX. Use reverse mode (kiln.grad, "
                    "kiln.vjp, kiln.jacrev), or define the function with kiln.custom_jvp.")


@register("name")
def _name(ctx, eqn, x):
    """checkpoint_name: the value itself (the name only guides checkpoint policies)."""
    return x


@register("remat")
def _remat(ctx, eqn, *args):
    """Emit the body; its inputs first pass an optimization barrier, so that XLA cannot merge a
    recomputation with the original computation."""
    body = eqn.params["body"].ir
    if eqn.params["prevent_cse"] and args:
        args = op("stablehlo.optimization_barrier", args, [a.type for a in args])
    return ctx.emit_body(body, list(args))
