"""``kiln.checkpoint`` (alias ``kiln.remat``): recompute a function's intermediates in the backward
pass instead of storing them.

A call is recorded as one ``remat`` equation holding the traced body and its policy. Under reverse mode
its partial evaluation keeps as residuals the *inputs*, and the values of the equations the policy calls
saveable (``policy(prim, *input_avals, **params)``, as JAX's: ``dots_with_no_batch_dims_saveable`` saves
matrix products, ``save_only_these_names`` the values named with ``checkpoint_name``): the forward half
computes the outputs and those values, the linear half recomputes the rest from them. Lowering passes the
inputs of each remat body through ``stablehlo.optimization_barrier`` so that XLA cannot merge the
recomputation with the forward computation (which would store the intermediates again).
"""
from __future__ import annotations

import functools
import weakref
from typing import Callable, NamedTuple, Sequence

import numpy as np
from kiln.frontend.core.passes import eliminate_dead_code, has_effects, used_inputs

from ..core import caches, refs, tree_util
from ..core.call import call_body, call_p
from ..core.errors import KilnError
from ..core.ir import IR, ClosedIR, Eqn, Var
from ..core.primitive import Primitive
from ..core.tracing import abstractify, active_traces, current_builder, trace_to_ir
from ..driver.placement import device_put
from ..lax.api import stop_gradient
from .jvp import jvp_ir, jvp_rules, linear_jvp
from .partial_eval import partial_eval, pe_rules
from .tangents import Zero, tangent_aval
from .transpose import is_undefined, transpose_closed, transpose_rules


def _remat_rule(*avals, body: ClosedIR, prevent_cse: bool, name: str, policy: Callable | None):
    return body.out_avals


remat_p = Primitive("remat", _remat_rule, multiple_results=True)


# -- checkpoint_name: a value named for the policies --------------------------------------------------

name_p = Primitive("name", lambda aval, *, name: aval)
name_p.impl = lambda x, *, name: x


def checkpoint_name(x, name: str):
    """``x`` (an array or a pytree of arrays) named ``name``, as ``jax.ad_checkpoint.checkpoint_name``: inside a
    ``kiln.checkpoint`` whose policy saves that name (``save_only_these_names``), reverse mode stores the value
    instead of recomputing it. The values are unchanged."""
    if not isinstance(name, str):
        raise TypeError(f"kiln.ad_checkpoint.checkpoint_name: name must be a string, got "
                        f"{type(name).__name__} {name!r:.60}")
    if not active_traces():  # nothing records the name outside a transformation
        return x
    return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


# Linear, as JAX's: the tangent carries the name too (only the primal's is known, so only it can be saved).
linear_jvp(name_p)
transpose_rules[name_p] = lambda ct, x, *, name: [name_p.bind(ct, name=name)]


class _Decision:
    """``Saveable`` and ``Recompute``: what a policy may return instead of True or False (as JAX's)."""

    def __init__(self, name: str, saved: bool):
        self.name, self.saved = name, saved

    def __repr__(self) -> str:
        return self.name

    def __bool__(self) -> bool:
        # (JAX's are plain objects, true both: a policy's answer is read by identity, never by truth value)
        return True


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable(NamedTuple):
    """A policy's answer: save this value in memory space ``dst`` (moved there from ``src``). kiln keeps
    residuals in device memory: an offloadable value is saved there."""
    src: str
    dst: str


class _Policies:
    """``kiln.checkpoint_policies``: JAX's rematerialization policies, by name. A policy is a predicate
    ``policy(prim, *avals, **params) -> bool``: save the output of this equation for the backward pass? The
    offloading policies save in device memory (kiln does not move residuals to the host)."""

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
        wanted = frozenset(names)

        def policy(prim, *_, **params) -> bool:
            return prim is name_p and params["name"] in wanted
        return policy

    @staticmethod
    def save_any_names_but_these(*names: str) -> Callable:
        unwanted = frozenset(names)

        def policy(prim, *_, **params) -> bool:
            return prim is name_p and params["name"] not in unwanted
        return policy

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Callable:
        """Any value (not only named ones) is saveable, but for the values named ``names``."""
        unwanted = frozenset(names)

        def policy(prim, *_, **params) -> bool:
            return prim is not name_p or params["name"] not in unwanted
        return policy

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved=(), names_which_can_be_offloaded=(),
                                          offload_src="device", offload_dst="pinned_host") -> Callable:
        return _Policies.save_only_these_names(*names_which_can_be_saved, *names_which_can_be_offloaded)

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


def _as_array(x):
    # (a Python number or a NumPy array as an array, weak types kept; anything else as it is)
    return device_put(x) if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)) else x


class CheckpointConcreteError(KilnError, NotImplementedError):
    """``kiln.checkpoint(..., concrete=...)``: the option JAX removed (JEP 11830); ``static_argnums`` replaces it."""


_NOT_GIVEN = object()


def checkpoint(fun: Callable, *, prevent_cse: bool | Sequence[bool] = True, policy=None,
               static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
               concrete=_NOT_GIVEN):
    """Wrap ``fun`` so that reverse-mode differentiation recomputes its intermediates.

    ``policy`` (one of ``kiln.checkpoint_policies``, or any ``policy(prim, *avals, **params) -> bool``): which
    intermediates to save rather than recompute, as in JAX; ``None`` saves the inputs only. The numbers are
    the same whatever the policy; memory and time differ. ``static_argnums``/``static_argnames``: arguments
    passed to ``fun`` as they are (Python values for its control flow), not traced. ``concrete`` is refused,
    whatever its value, as JAX 0.10 refuses it.
    """
    if concrete is not _NOT_GIVEN:
        raise CheckpointConcreteError(
            f"kiln.checkpoint({getattr(fun, '__name__', 'function')}): the `concrete` option was removed (as in "
            "JAX 0.10: JEP 11830). Pass the Python arguments the function branches on with static_argnums=(...) "
            "(or static_argnames); for kiln.numpy operations on them computed while tracing, use them inside "
            "`with kiln.ensure_compile_time_eval():`.")
    if policy is not None and not callable(policy):
        raise TypeError(f"kiln.checkpoint: policy must be one of kiln.checkpoint_policies (a callable) or None, "
                        f"got {type(policy).__name__} {policy!r:.60}")
    if policy is checkpoint_policies.everything_saveable:
        return fun
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)  # as JAX
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if not isinstance(prevent_cse, bool):
        # JAX's per-argument flags: kiln's barrier covers all the inputs or none (the numbers are the same)
        prevent_cse = any(prevent_cse)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        bad = [i for i in static_argnums if not -len(args) <= i < len(args)]
        if bad:
            raise ValueError(f"kiln.checkpoint({getattr(fun, '__name__', 'function')}): static_argnums "
                             f"{static_argnums} is out of range for a call with {len(args)} positional "
                             "argument(s); static arguments must be passed positionally")
        static = {i % len(args): args[i] for i in static_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        static_kw = {k: kwargs[k] for k in static_argnames if k in kwargs}
        kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}
        if current_builder() is None:
            # Nothing to differentiate: fun itself, on its arguments as arrays (as JAX's traced call sees them,
            # so that `-x` of a Python number is an array in both).
            dyn_arr = iter(tree_util.tree_map(_as_array, dyn))
            full = [static[i] if i in static else next(dyn_arr) for i in range(len(args))]
            return fun(*full, **tree_util.tree_map(_as_array, kwargs), **static_kw)
        # Keyword arguments are inputs like the positional ones (as in JAX): traced, and differentiated.
        flat, in_tree = tree_util.tree_flatten((tuple(dyn), kwargs))
        out_tree_box, written_box = [], []

        def flat_fun(*tracers):
            dyn_in, kw_in = tree_util.tree_unflatten(in_tree, list(tracers))
            it = iter(dyn_in)
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            leaves, tree = tree_util.tree_flatten(fun(*full, **kw_in, **static_kw))
            out_tree_box.append(tree)
            # Refs created outside that it wrote: their final values are outputs too, written after the call.
            written_box.append(refs.escaping(current_builder()))
            return leaves + refs.take(written_box[-1])

        closed, _ = trace_to_ir(flat_fun, [abstractify(x) for x in flat], name=getattr(fun, "__name__", "remat"),
                                known_values=flat)
        outs = remat_p.bind(*closed.consts, *flat, body=call_body(closed), prevent_cse=prevent_cse,
                            name=getattr(fun, "__name__", "remat"), policy=policy)
        written = written_box[0]
        for ref, value in zip(written, outs[len(outs) - len(written):]):
            # (an output of the whole remat equation looks differentiated to an enclosing grad, whatever the body
            # did to it: what a ref receives is a constant of the derivative in any case)
            refs.write(ref, stop_gradient(value))
        return tree_util.tree_unflatten(out_tree_box[0], outs[:len(outs) - len(written)])
    return wrapped


remat = checkpoint


def _remat_jvp(primals, tangents, *, body: ClosedIR, prevent_cse: bool, name: str, policy: Callable | None):
    nonzero = [not isinstance(t, Zero) for t in tangents]
    new, out_nonzero = jvp_ir(body, nonzero)
    outs = remat_p.bind(*primals, *[t for t in tangents if not isinstance(t, Zero)], body=call_body(new),
                        prevent_cse=prevent_cse, name=name, policy=policy)
    n = len(body.out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(body.out_avals, out_nonzero)]


jvp_rules[remat_p] = _remat_jvp

_split_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_split_memo.clear)


def _prune(ir: IR, keep_outputs: list[bool]) -> IR:
    outs = [a for a, k in zip(ir.outvars, keep_outputs) if k]
    return eliminate_dead_code(IR(ir.constvars, ir.invars, ir.eqns, outs))


def _saveable(policy: Callable | None, eqn: Eqn) -> bool:
    if policy is None:
        return False
    answer = policy(eqn.prim, *[abstractify(a) for a in eqn.inputs], **eqn.params)
    if isinstance(answer, _Decision):
        return answer.saved
    return isinstance(answer, Offloadable) or bool(answer)


# Equations with a body (a call, a scan) whose own equations the policy may save: ``rule(eqn, save_body)`` is
# ``(forward eqn, recompute eqn, saved vars)`` or None, where the forward equation also returns the values its
# body saves (``save_body(ir)``, the same split one level down), as the new outputs ``saved vars``, and the
# recompute equation takes them as extra inputs instead of computing them (a scan stacks them: one per step).
save_inside_rules: dict[Primitive, Callable] = {}


def _save_in_body(ir: IR, policy: Callable) -> tuple[IR, IR, list[Var]] | None:
    """``(forward, recompute, saved)`` for an IR run in the forward pass and again in the backward: ``forward``
    also returns ``saved``, the values of its equations (at any depth of calls and scans) that ``policy`` saves;
    ``recompute`` takes them as trailing inputs instead of computing them. None when the policy saves nothing."""
    saved: list[Var] = []
    forward_eqns: list[Eqn] = []
    recompute_eqns: list[Eqn] = []
    for e in ir.eqns:
        if has_effects(e):
            inner = None
        elif _saveable(policy, e):
            forward_eqns.append(e)
            saved.extend(e.outputs)
            continue
        else:
            rule = save_inside_rules.get(e.prim)
            inner = rule(e, lambda body: _save_in_body(body, policy)) if rule is not None else None
        if inner is None:
            forward_eqns.append(e)
            recompute_eqns.append(e)
        else:
            forward_eqns.append(inner[0])
            recompute_eqns.append(inner[1])
            saved.extend(inner[2])
    if not saved:
        return None
    recompute = eliminate_dead_code(IR(ir.constvars, ir.invars + saved, recompute_eqns, ir.outvars))
    n_fixed = len(ir.constvars) + len(ir.invars)
    saved = [v for v, used in zip(saved, used_inputs(recompute)[n_fixed:]) if used]  # (only what is read)
    if not saved:
        return None
    recompute = IR(recompute.constvars, ir.invars + saved, recompute.eqns, recompute.outvars)
    return IR(ir.constvars, ir.invars, forward_eqns, list(ir.outvars) + saved), recompute, saved


def _save_in_call(eqn: Eqn, save_body: Callable):
    body: ClosedIR = eqn.params["ir"]
    inner = save_body(body.ir)
    if inner is None:
        return None
    forward, recompute, saved = inner
    new = [Var(v.aval) for v in saved]
    return (Eqn(call_p, eqn.inputs, list(eqn.outputs) + new, {**eqn.params, "ir": ClosedIR(forward, body.consts)},
                eqn.source),
            Eqn(call_p, list(eqn.inputs) + new, eqn.outputs, {**eqn.params, "ir": ClosedIR(recompute, body.consts)},
                eqn.source),
            new)


save_inside_rules[call_p] = _save_in_call


def _split(body: ClosedIR, unknown: tuple[bool, ...], policy: Callable | None):
    memo = _split_memo.setdefault(body, {})
    key = (unknown, policy)
    if key not in memo:
        split = partial_eval(body.ir, list(unknown))
        out_unknown = split.out_unknown
        k = split.known
        n_known = len(k.outvars) - split.num_residuals
        # A known call or scan the policy does not save as a whole: the values inside it that the policy saves
        # are returned by its forward run and read by its recompute, as JAX's policies reach into them.
        inside = {}
        if policy is not None:
            for e in k.eqns:
                rule = save_inside_rules.get(e.prim)
                if rule is not None and not has_effects(e) and not _saveable(policy, e):
                    found = rule(e, lambda ir: _save_in_body(ir, policy))
                    if found is not None:
                        inside[id(e)] = found
        # The unknown half recomputes the known equations, then runs the unknown ones; both as the split
        # made them, so that an equation mixing known and unknown inputs (a nested remat, a call, a loop)
        # is its known half (non-linear) and its unknown half (linear), which transposition needs.
        ir = body.ir
        recompute = _prune(IR(ir.constvars, ir.invars, [inside[id(e)][1] if id(e) in inside else e for e in k.eqns]
                              + split.unknown.eqns, ir.outvars), out_unknown)
        # Known equations the policy saves are not recomputed: their values come from the forward half.
        known_eqns = set(map(id, k.eqns))
        saved_eqns = [e for e in recompute.eqns if id(e) in known_eqns and _saveable(policy, e)]
        saved_ids = set(map(id, saved_eqns))
        candidates = [v for e in saved_eqns for v in e.outputs]
        recomputed = set(map(id, recompute.eqns))
        candidates += [v for found in inside.values() if id(found[1]) in recomputed for v in found[2]]
        unknown_body = eliminate_dead_code(IR(recompute.constvars, recompute.invars + candidates,
                                              [e for e in recompute.eqns if id(e) not in saved_ids],
                                              recompute.outvars))
        n_const, n_fixed = len(recompute.constvars), len(recompute.constvars) + len(recompute.invars)
        used = used_inputs(unknown_body)
        saved = [v for v, u in zip(candidates, used[n_fixed:]) if u]
        # A known input the recomputation never reads is no residual (as JAX's: `a * x` under checkpoint saves
        # nothing, not even x); the unknown (linear) inputs all stay, for the transposition.
        keep = tuple(u or unk for u, unk in zip(used[n_const:n_fixed], unknown))
        unknown_body = IR(unknown_body.constvars, [v for v, k in zip(recompute.invars, keep) if k] + saved,
                          unknown_body.eqns, unknown_body.outvars)
        # The known half: its outputs, then the saved values. Built from the split, not the whole body:
        # call-like equations mixing known and unknown inputs are split.
        outs = k.outvars[:n_known] + saved
        saved_set = set(saved)
        forward_eqns = [inside[id(e)][0] if id(e) in inside and not saved_set.isdisjoint(inside[id(e)][2]) else e
                        for e in k.eqns]
        known_body = _prune(IR([], k.invars, forward_eqns, outs), [True] * len(outs))
        memo[key] = (ClosedIR(known_body, []), ClosedIR(unknown_body, []), out_unknown, [v.aval for v in saved],
                     keep)
    return memo[key]


def _remat_partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    """Known half: the outputs from the known inputs, and the values the policy saves. Unknown half: the
    rest, recomputed from all inputs and the saved values (the residuals)."""
    p = dict(eqn.params)
    known_body, unknown_body, out_unknown, saved_avals, keep = _split(p["body"], tuple(unknown_inputs),
                                                                      p["policy"])
    saved = [Var(a) for a in saved_avals]
    known_eqn = Eqn(remat_p, [a for a, u in zip(eqn.inputs, unknown_inputs) if not u],
                    [v for v, u in zip(eqn.outputs, out_unknown) if not u] + saved, {**p, "body": known_body},
                    eqn.source)
    unknown_eqn = Eqn(remat_p, [a for a, k in zip(eqn.inputs, keep) if k] + saved,
                      [v for v, u in zip(eqn.outputs, out_unknown) if u], {**p, "body": unknown_body}, eqn.source)
    return [known_eqn], [unknown_eqn], out_unknown


pe_rules[remat_p] = _remat_partial_eval


def _remat_transpose(cts, *args, body: ClosedIR, prevent_cse: bool, name: str, policy: Callable | None):
    linear = [is_undefined(a) for a in args]
    t = transpose_closed(body, linear)
    from .tangents import instantiate
    outs = iter(remat_p.bind(*[a for a in args if not is_undefined(a)], *[instantiate(c) for c in cts],
                             body=call_body(t), prevent_cse=prevent_cse, name=f"transpose({name})", policy=policy))
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

__all__ = ["checkpoint", "checkpoint_name", "name_p", "Offloadable", "Recompute", "remat", "remat_p", "Saveable"]
