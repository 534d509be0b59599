"""``custom_vmap``: a function with a user-defined batching rule (as ``jax.custom_batching.custom_vmap``).

Outside ``vmap`` the function runs as written. Under a trace a call is one ``custom_vmap_call`` equation
holding the traced body: lowering inlines the body; ``vmap`` calls the user's rule
``rule(axis_size, in_batched, *args) -> (out, out_batched)`` with every batched argument's batch axis
first; differentiation goes through the body (the derivative of the unbatched function).
"""
from __future__ import annotations

import functools
from typing import Callable

from ..ad import custom as _custom
from ..ad.jvp import _call_jvp, jvp_rules
from ..core import tree_util
from ..core.call import call_body
from ..core.errors import KilnError
from ..core.primitive import Primitive
from ..core.tracing import abstractify, materialize
from .core import batch_closed, batch_rules, move_dim

__all__ = ["custom_vmap", "CustomVmapError"]


class CustomVmapError(KilnError, TypeError):
    """A custom_vmap function without a rule, or a rule whose result does not fit."""


def _body_rule(*avals, body, rule, name):
    return body.out_avals


custom_vmap_call_p = Primitive("custom_vmap_call", _body_rule, multiple_results=True, inline_param="body")


class custom_vmap:
    """Wrap ``fun`` so that ``vmap`` uses the rule given with :meth:`def_vmap`:
    ``rule(axis_size, in_batched, *args)`` gets the batch size, one bool per argument leaf (in the
    arguments' structure) saying whether it is batched (its batch axis is then axis 0), and the arguments;
    it returns ``(out, out_batched)`` with ``out_batched`` a bool per output leaf (or one bool for all)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = ()
        self.vmap_rule: Callable | None = None

    def def_vmap(self, rule: Callable) -> Callable:
        self.vmap_rule = rule
        return rule

    def __call__(self, *args, **kwargs):
        missing = None if self.vmap_rule is not None else "has no batching rule: call {name}.def_vmap(rule) first"
        return _custom._call_custom(self, custom_vmap_call_p, "custom_vmap", missing, args, kwargs)


jvp_rules[custom_vmap_call_p] = lambda primals, tangents, *, body, rule, name: _call_jvp(
    primals, tangents, ir=body, name=name)


def _custom_vmap_batch(ctx, args, dims, *, body, rule, name):
    n_consts = len(args) - rule.in_tree.num_leaves
    if any(d is not None for d in dims[:n_consts]):
        # The function closes over a batched value, which the rule cannot see: batch the body instead.
        new, out_dims = batch_closed(body, dims, ctx)
        return custom_vmap_call_p.bind(*args, body=call_body(new), rule=rule, name=name), out_dims
    # materialize: an unmapped Python scalar reaches the rule as a value, not as the IR's Literal.
    flat = [materialize(a) if d is None else move_dim(a, d, 0, ctx.size)
            for a, d in zip(args[n_consts:], dims[n_consts:])]
    in_batched = tree_util.tree_unflatten(rule.in_tree, [d is not None for d in dims[n_consts:]])
    user_args = tree_util.tree_unflatten(rule.in_tree, flat)
    res = rule.owner.vmap_rule(ctx.size, list(in_batched), *user_args)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise CustomVmapError(f"kiln.custom_vmap: the batching rule of {name} must return a pair (out, out_batched), "
                              f"got {type(res).__name__}")
    out, out_batched = res
    flat_out, out_tree = tree_util.tree_flatten(out)
    if out_tree != rule.out_tree:
        raise CustomVmapError(f"kiln.custom_vmap: the batching rule of {name} returned outputs of structure "
                              f"{out_tree}, but the function returns {rule.out_tree}")
    if isinstance(out_batched, bool):
        flags = [out_batched] * len(flat_out)
    else:
        flags, flags_tree = tree_util.tree_flatten(out_batched)
        if flags_tree != out_tree or not all(isinstance(f, bool) for f in flags):
            raise CustomVmapError(f"kiln.custom_vmap: the batching rule of {name} must return out_batched as one bool "
                                  f"per output leaf (structure {out_tree}), got {out_batched!r:.80}")
    outs = []
    for i, (o, b, a) in enumerate(zip(flat_out, flags, body.out_avals)):
        want = ((ctx.size,) if b else ()) + tuple(a.shape)
        got = tuple(abstractify(o).shape)
        if got != want:
            raise CustomVmapError(f"kiln.custom_vmap: output {i} of {name}'s batching rule has shape {got}, expected "
                                  f"{want} ({'batched' if b else 'unbatched'}: out_batched says so)")
        outs.append(o)
    return outs, [0 if b else None for b in flags]


batch_rules[custom_vmap_call_p] = _custom_vmap_batch
