"""``kiln.checkpoint`` (alias ``kiln.remat``): recompute a function's intermediates in the backward
pass instead of storing them.

A call is recorded as one ``remat`` equation holding the traced body. Under reverse mode its
partial evaluation keeps only the *inputs* as residuals: the forward half computes the outputs,
the linear half recomputes the body from the inputs. Lowering passes the inputs of each remat body
through ``stablehlo.optimization_barrier`` so that XLA cannot merge the recomputation with the
forward computation (which would store the intermediates again).
"""
from __future__ import annotations

import functools
import weakref
from typing import Callable, Sequence

from kiln.frontend.core.passes import eliminate_dead_code

from ..core import caches, tree_util
from ..core.call import call_body
from ..core.ir import IR, ClosedIR, Eqn
from ..core.primitive import Primitive
from ..core.tracing import abstractify, current_builder, trace_to_ir
from .jvp import jvp_ir, jvp_rules
from .partial_eval import partial_eval, pe_rules
from .tangents import Zero, tangent_aval
from .transpose import is_undefined, transpose_closed, transpose_rules


def _remat_rule(*avals, body: ClosedIR, prevent_cse: bool, name: str):
    return body.out_avals


remat_p = Primitive("remat", _remat_rule, multiple_results=True)


class _Policies:
    """``kiln.checkpoint_policies``: JAX's rematerialization policies, by name. A policy is a predicate
    ``policy(prim, *avals, **params) -> bool`` (save this value?); kiln's checkpoint distinguishes only
    ``everything_saveable`` (no recomputation) from the rest (save the inputs only)."""

    @staticmethod
    def everything_saveable(*_, **__) -> bool:
        return True

    @staticmethod
    def nothing_saveable(*_, **__) -> bool:
        return False

    @staticmethod
    def dots_saveable(prim, *_, **__) -> bool:
        return getattr(prim, "name", "") in ("dot_general", "conv_general_dilated")

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
        if getattr(prim, "name", "") != "dot_general":
            return False
        dims = params.get("dimension_numbers")
        return not (dims and dims[1] and (dims[1][0] or dims[1][1]))

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names: str) -> Callable:
        return _Policies.nothing_saveable

    @staticmethod
    def save_any_names_but_these(*names: str) -> Callable:
        return _Policies.nothing_saveable

    save_anything_except_these_names = save_any_names_but_these

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved=(), names_which_can_be_offloaded=(),
                                          offload_src="device", offload_dst="pinned_host") -> Callable:
        return _Policies.nothing_saveable

    @staticmethod
    def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
        def policy(*args, **params):
            return policy_1(*args, **params) or policy_2(*args, **params)
        return policy

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src: str = "device", offload_dst: str = "pinned_host") -> Callable:
        return _Policies.dots_with_no_batch_dims_saveable

    def __repr__(self) -> str:
        return "kiln.checkpoint_policies"


checkpoint_policies = _Policies()


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy=None, static_argnums: Sequence[int] = ()):
    """Wrap ``fun`` so that reverse-mode differentiation recomputes its intermediates.

    ``policy`` (one of ``kiln.checkpoint_policies``): ``everything_saveable`` saves everything (no
    recomputation); every other policy saves only the inputs and recomputes the rest, as ``None``. The
    numbers are the same whatever the policy; only memory and time differ from JAX's.
    """
    if policy is not None and not callable(policy):
        raise TypeError(f"kiln.checkpoint: policy must be one of kiln.checkpoint_policies (a callable) or None, "
                        f"got {type(policy).__name__} {policy!r:.60}")
    if policy is checkpoint_policies.everything_saveable:
        return fun
    static_argnums = tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if current_builder() is None:
            return fun(*args, **kwargs)
        static = {i: args[i] for i in static_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        # Keyword arguments are inputs like the positional ones (as in JAX): traced, and differentiated.
        flat, in_tree = tree_util.tree_flatten((tuple(dyn), kwargs))
        out_tree_box = []

        def flat_fun(*tracers):
            dyn_in, kw_in = tree_util.tree_unflatten(in_tree, list(tracers))
            it = iter(dyn_in)
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            leaves, tree = tree_util.tree_flatten(fun(*full, **kw_in))
            out_tree_box.append(tree)
            return leaves

        closed, _ = trace_to_ir(flat_fun, [abstractify(x) for x in flat], name=getattr(fun, "__name__", "remat"),
                                known_values=flat)
        outs = remat_p.bind(*closed.consts, *flat, body=call_body(closed), prevent_cse=prevent_cse,
                            name=getattr(fun, "__name__", "remat"))
        return tree_util.tree_unflatten(out_tree_box[0], outs)
    return wrapped


remat = checkpoint


def _remat_jvp(primals, tangents, *, body: ClosedIR, prevent_cse: bool, name: str):
    nonzero = [not isinstance(t, Zero) for t in tangents]
    new, out_nonzero = jvp_ir(body, nonzero)
    outs = remat_p.bind(*primals, *[t for t in tangents if not isinstance(t, Zero)], body=call_body(new),
                        prevent_cse=prevent_cse, name=name)
    n = len(body.out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(body.out_avals, out_nonzero)]


jvp_rules[remat_p] = _remat_jvp

_split_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_split_memo.clear)


def _prune(ir: IR, keep_outputs: list[bool]) -> IR:
    outs = [a for a, k in zip(ir.outvars, keep_outputs) if k]
    return eliminate_dead_code(IR(ir.constvars, ir.invars, ir.eqns, outs))


def _split(body: ClosedIR, unknown: tuple[bool, ...]):
    memo = _split_memo.setdefault(body, {})
    if unknown not in memo:
        split = partial_eval(body.ir, list(unknown))
        out_unknown = split.out_unknown
        # The known half without its residual outputs (the unknown half recomputes instead). Built from
        # the split, not the whole body: call-like equations mixing known and unknown inputs are split.
        k = split.known
        n_known = len(k.outvars) - split.num_residuals
        known_body = _prune(IR([], k.invars, k.eqns, k.outvars[:n_known]), [True] * n_known)
        # The unknown half recomputes the known equations, then runs the unknown ones; both as the split
        # made them, so that an equation mixing known and unknown inputs (a nested remat, a call, a loop)
        # is its known half (non-linear) and its unknown half (linear), which transposition needs.
        ir = body.ir
        unknown_body = _prune(IR(ir.constvars, ir.invars, k.eqns + split.unknown.eqns, ir.outvars), out_unknown)
        memo[unknown] = (ClosedIR(known_body, []), ClosedIR(unknown_body, []), out_unknown)
    return memo[unknown]


def _remat_partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    """Known half: the outputs from the known inputs. Unknown half: everything, recomputed from all
    inputs (so the only residuals are the inputs themselves)."""
    known_body, unknown_body, out_unknown = _split(eqn.params["body"], tuple(unknown_inputs))
    p = dict(eqn.params)
    known_eqn = Eqn(remat_p, [a for a, u in zip(eqn.inputs, unknown_inputs) if not u],
                    [v for v, u in zip(eqn.outputs, out_unknown) if not u], {**p, "body": known_body},
                    eqn.source)
    unknown_eqn = Eqn(remat_p, list(eqn.inputs), [v for v, u in zip(eqn.outputs, out_unknown) if u],
                      {**p, "body": unknown_body}, eqn.source)
    return [known_eqn], [unknown_eqn], out_unknown


pe_rules[remat_p] = _remat_partial_eval


def _remat_transpose(cts, *args, body: ClosedIR, prevent_cse: bool, name: str):
    linear = [is_undefined(a) for a in args]
    t = transpose_closed(body, linear)
    from .tangents import instantiate
    outs = iter(remat_p.bind(*[a for a in args if not is_undefined(a)], *[instantiate(c) for c in cts],
                             body=call_body(t), prevent_cse=prevent_cse, name=f"transpose({name})"))
    return [next(outs) if lin else None for lin in linear]


transpose_rules[remat_p] = _remat_transpose


def _remat_locate(eqn, args, run):
    """debug_nans' op-by-op re-run: the body, equation by equation."""
    body = eqn.params["body"]
    return run(body.ir, body.consts, args)


def _register_locate() -> None:
    from ..driver.nan_check import locate_rules  # the driver's table (F1); this floor registers into it
    locate_rules[remat_p] = _remat_locate


_register_locate()

__all__ = ["checkpoint", "remat", "remat_p"]
