"""``cond`` and ``switch``: one primitive, ``cond``, choosing one of several branch IRs by an index.

``cond(index, *operands, branches)``: every branch takes all operands (the branches' constants
come first among them) and returns values of the same types. Lowered to ``stablehlo.case``, so
only the chosen branch runs. Its derivatives differentiate each branch; batching with a batched
index computes every branch and selects (as JAX).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from ..core import consumption, dtypes, refs, source_info, tree_util
from ..core.avals import ShapedArray
from ..core.call import call_body
from ..core.config import config
from ..core.ir import IR, ClosedIR, Eqn, Var
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, current_builder
from ..core.varying import nested_hints
from .common import ControlFlowError, avals_str, fun_name, same_types, trace_callable


def _cond_rule(index: ShapedArray, *operands: ShapedArray, branches: tuple[ClosedIR, ...]):
    if index.shape != () or index.dtype.kind not in "iu":
        raise ControlFlowError(f"kiln.lax.cond: internal error: index must be an integer scalar, got "
                               f"{index.str_short()}")
    return branches[0].out_avals


cond_p = Primitive("cond", _cond_rule, multiple_results=True)


def _index_dtype():
    return dtypes.canonicalize_dtype(np.int32)


def _concrete(x) -> Any:
    """The concrete value of ``x`` under ``disable_jit`` with no trace active, else None. Otherwise, as in
    JAX, both branches are traced (so their output types are checked) and the conditional runs as one
    program, even when the predicate is known."""
    if not config.disable_jit or current_builder() is not None or isinstance(x, Tracer):
        return None
    return np.asarray(x)


def _check_pred(pred) -> None:
    aval = abstractify(pred)
    if aval.shape != ():
        raise ControlFlowError(f"kiln.lax.cond: the predicate must be a scalar, got an array of shape {aval.shape}; "
                               "use kiln.numpy.where for elementwise selection, or reduce it with .any()/.all()")
    if aval.dtype != np.bool_ and aval.dtype.kind not in "iu":
        raise ControlFlowError(f"kiln.lax.cond: the predicate must be a boolean (or integer) scalar, got "
                               f"{aval.dtype.name}")


def _trace_branches(funs: Sequence[Callable], operands: tuple, what: str, labels: Sequence[str],
                    trace_order: Sequence[int] | None = None, ref_writes: list | None = None):
    """Trace every branch on the operands; ``labels`` name the branches in errors (``true_fun``).
    ``trace_order``: the order in which the branches are traced (what their prints show), if not theirs."""
    leaves, in_tree = tree_util.tree_flatten(operands)
    avals = [abstractify(x) for x in leaves]
    traced: list = [None] * len(funs)
    hints = nested_hints(leaves)  # inside a shard_map body: the mesh axes the operands vary along
    with consumption.alternatives() as branch:  # each branch may consume the same PRNG key
        for i in trace_order if trace_order is not None else range(len(funs)):
            with branch():
                traced[i] = trace_callable(funs[i], in_tree, avals, fun_name(funs[i]), input_hints=hints,
                                           ref_writes=ref_writes)
    tree0, avals0 = traced[0][1], traced[0][0].out_avals
    first = f"{labels[0]} ({fun_name(funs[0])})"
    for i, (closed, tree) in enumerate(traced[1:], 1):
        other = f"{labels[i]} ({fun_name(funs[i])})"
        if tree != tree0:
            raise ControlFlowError(f"kiln.lax.{what}: branches must return the same structure, but {first} "
                                   f"returned {tree0} and {other} returned {tree}")
        if len(closed.out_avals) != len(avals0) or not all(same_types(a, b) for a, b in zip(avals0,
                                                                                         closed.out_avals)):
            raise ControlFlowError(f"kiln.lax.{what}: branches must return the same shapes and dtypes, but {first} "
                                   f"returned {avals_str(avals0)} and {other} returned "
                                   f"{avals_str(closed.out_avals)}")
    # Weak types: the first branch's (cond's false_fun, switch's branches[0]), as JAX's cond_p takes its result
    # type from its first branch; the others' outputs convert to it.
    weak = [a.weak_type for a in avals0]
    return leaves, [c for c, _ in traced], tree0, weak


def _bind_branches(index, leaves, closeds: list[ClosedIR], weak: list[bool]):
    """Bind ``cond`` with every branch taking all branches' constants, then the operands."""
    consts = [c for closed in closeds for c in closed.consts]
    const_avals = [abstractify(c) for c in consts]
    branches = []
    offset = 0
    for closed in closeds:
        n = len(closed.consts)
        branches.append(_with_extra_inputs(closed, const_avals, offset, n, weak))
        offset += n
    return cond_p.bind(index, *consts, *leaves, branches=tuple(branches))


def _with_extra_inputs(closed: ClosedIR, const_avals, offset: int, n: int, weak: list[bool]) -> ClosedIR:
    """A branch body taking every branch's constants (using its own) followed by the operands."""
    body = call_body(closed).ir  # its own consts first, then operands
    own_consts, operands = body.invars[:n], body.invars[n:]
    invars = [Var(a) for a in const_avals]
    invars[offset:offset + n] = own_consts
    outvars = list(body.outvars)
    eqns = list(body.eqns)
    # Unify weak types of outputs across branches (``weak``: the result's).
    fixed = []
    for a, w in zip(outvars, weak):
        if a.aval.weak_type != w:
            v = Var(a.aval.update(weak_type=w))
            from ..lax.elementwise import convert_p
            eqns.append(Eqn(convert_p, [a], [v], {"new_dtype": a.aval.dtype, "weak_type": w},
                            source_info.current()))
            fixed.append(v)
        else:
            fixed.append(a)
    return ClosedIR(IR([], invars + operands, eqns, fixed), [])


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one compiled conditional.

    Both functions are traced and must return the same types, even for a concrete predicate (as JAX);
    under ``kiln.disable_jit()`` a concrete predicate runs only the chosen function, eagerly.
    """
    if not callable(true_fun) or not callable(false_fun):
        raise ControlFlowError("kiln.lax.cond: true_fun and false_fun must be callables")
    _check_pred(pred)
    concrete = _concrete(pred)
    if concrete is not None:
        return (true_fun if bool(concrete) else false_fun)(*operands)
    # true_fun is traced first, as in JAX (a print in each shows in that order); the branch order is false, true
    written: list = []
    leaves, closeds, out_tree, weak = _trace_branches([false_fun, true_fun], operands, "cond",
                                                      ["false_fun", "true_fun"], trace_order=(1, 0),
                                                      ref_writes=written)
    if written:  # a branch writes refs created outside: their values become operands and results
        return _threading_refs(lambda t, f, *ops: cond(pred, t, f, *ops), [true_fun, false_fun], written, operands)
    pred_aval = abstractify(pred)
    index = lax.ne(pred, lax.literal(0, pred_aval.dtype)) if pred_aval.dtype != np.bool_ else pred
    index = lax.convert_element_type(index, _index_dtype())
    return tree_util.tree_unflatten(out_tree, _bind_branches(index, leaves, closeds, weak))


def switch(index, branches: Sequence[Callable], *operands):
    """``branches[clamp(index, 0, n-1)](*operands)`` as one compiled conditional."""
    if not isinstance(branches, Sequence):
        raise ControlFlowError(f"kiln.lax.switch: branches must be a sequence (list or tuple) of callables, got "
                               f"{type(branches).__name__}; for a single function call it directly or use lax.cond")
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise ControlFlowError("kiln.lax.switch: branches must be a non-empty sequence of callables")
    aval = abstractify(index)
    if aval.shape != () or aval.dtype.kind not in "iu":
        raise ControlFlowError(f"kiln.lax.switch: the index must be an integer scalar, got {aval.str_short()}")
    concrete = _concrete(index)
    if concrete is not None:
        return branches[int(np.clip(int(concrete), 0, len(branches) - 1))](*operands)
    if len(branches) == 1:
        return branches[0](*operands)
    written: list = []
    leaves, closeds, out_tree, weak = _trace_branches(branches, operands, "switch",
                                                      [f"branches[{i}]" for i in range(len(branches))],
                                                      ref_writes=written)
    if written:  # a branch writes refs created outside: their values become operands and results
        return _threading_refs(lambda *a: switch(index, a[:len(branches)], *a[len(branches):]), branches, written,
                               operands)
    idx = lax.convert_element_type(index, _index_dtype())
    lo = lax.literal(0, _index_dtype())
    hi = lax.literal(len(branches) - 1, _index_dtype())
    idx = lax.clamp(lo, idx, hi)  # as JAX
    return tree_util.tree_unflatten(out_tree, _bind_branches(idx, leaves, closeds, weak))


def _threading_refs(run: Callable, funs: Sequence[Callable], written: list, operands: tuple) -> Any:
    """The conditional ``run(*branches, *operands)`` of ``funs``, whose branches write the refs ``written``
    (created outside them): each ref's value is one more operand and one more result of every branch, read
    before and written after."""
    written = list(dict.fromkeys(written))

    def threading(fun: Callable) -> Callable:
        def branch(*args):
            *ops, values = args
            refs.seed(written, values)
            out = fun(*ops)
            return out, refs.take(written)
        branch.__name__ = fun_name(fun)
        return branch
    out, finals = run(*[threading(f) for f in funs], *operands, [refs.read(r) for r in written])
    for ref, value in zip(written, finals):
        refs.write(ref, value)
    return out


# -- transformation rules ---------------------------------------------------------------------------------
def _zeros_eqn(aval: ShapedArray) -> tuple[Eqn, Var]:
    from ..core.ir import Literal
    from ..lax.structural import broadcast_in_dim_p
    v = Var(aval)
    lit = Literal(np.zeros((), aval.dtype), ShapedArray((), aval.dtype, aval.weak_type))
    return Eqn(broadcast_in_dim_p, [lit], [v], {"shape": aval.shape, "broadcast_dimensions": ()},
               source_info.current()), v


def _cond_jvp(primals, tangents, *, branches):
    from ..ad.jvp import jvp_ir
    from ..ad.tangents import Zero, tangent_aval
    index, *ops = primals
    tops = tangents[1:]
    nonzero = [not isinstance(t, Zero) for t in tops]
    out_nz = [any(nz) for nz in zip(*[jvp_ir(b, nonzero)[1] for b in branches])]
    new = [jvp_ir(b, nonzero, instantiate=out_nz)[0] for b in branches]
    n = len(branches[0].out_avals)
    weak = [a.weak_type for a in new[0].out_avals]  # the first branch's, as the primal cond's
    outs = _bind_branches(index, list(ops) + [t for t in tops if not isinstance(t, Zero)], new, weak)
    it = iter(outs[n:])
    touts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(branches[0].out_avals, out_nz)]
    return outs[:n], touts


def _cond_partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    from ..ad.partial_eval import partial_eval
    if unknown_inputs[0]:  # an unknown index: nothing can be computed ahead
        return [], [eqn], [True] * len(eqn.outputs)
    branches = eqn.params["branches"]
    unk_ops = unknown_inputs[1:]
    out_unk = [any(u) for u in zip(*[partial_eval(b.ir, unk_ops).out_unknown for b in branches])]
    splits = [partial_eval(b.ir, unk_ops, force_unknown=out_unk) for b in branches]
    res_avals = [[v.aval for v in s.known.outvars[len(s.known.outvars) - s.num_residuals:]] for s in splits]
    all_res = [a for avals in res_avals for a in avals]
    known_branches, unknown_branches = [], []
    offset = 0
    for s, avals in zip(splits, res_avals):
        k = s.known
        n_known_out = len(k.outvars) - s.num_residuals
        eqns, outs = list(k.eqns), list(k.outvars[:n_known_out])
        res_out = []
        for j, a in enumerate(all_res):
            if offset <= j < offset + len(avals):
                res_out.append(k.outvars[n_known_out + j - offset])
            else:
                z_eqn, z = _zeros_eqn(a)
                eqns.append(z_eqn)
                res_out.append(z)
        known_branches.append(ClosedIR(IR([], k.invars, eqns, outs + res_out), []))
        u = s.unknown
        res_in = [Var(a) for a in all_res]
        res_in[offset:offset + len(avals)] = u.invars[:len(avals)]
        unknown_branches.append(ClosedIR(IR([], res_in + u.invars[len(avals):], u.eqns, u.outvars), []))
        offset += len(avals)
    index, ops = eqn.inputs[0], eqn.inputs[1:]
    res_vars = [Var(a) for a in all_res]
    known_outs = [v for v, u in zip(eqn.outputs, out_unk) if not u]
    known_eqn = Eqn(cond_p, [index] + [o for o, u in zip(ops, unk_ops) if not u], known_outs + res_vars,
                    {"branches": tuple(known_branches)}, eqn.source)
    unknown_eqn = Eqn(cond_p, [index] + res_vars + [o for o, u in zip(ops, unk_ops) if u],
                      [v for v, u in zip(eqn.outputs, out_unk) if u], {"branches": tuple(unknown_branches)},
                      eqn.source)
    return [known_eqn], [unknown_eqn], out_unk


def _cond_transpose(cts, index, *ops, branches):
    from ..ad.tangents import instantiate
    from ..ad.transpose import is_undefined, transpose_closed
    linear = [is_undefined(o) for o in ops]
    transposed = [transpose_closed(b, linear) for b in branches]
    weak = [o.aval.weak_type for o in ops if is_undefined(o)]  # a cotangent is typed as its primal
    args = [o for o in ops if not is_undefined(o)] + [instantiate(c) for c in cts]
    outs = iter(_bind_branches(index, args, transposed, weak))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batch(ctx, args, dims, *, branches):
    from ..batching.core import batch_closed, move_dim
    from ..core.call import bind_call
    index, *ops = args
    idx_d, *op_dims = dims
    n_out = len(branches[0].out_avals)
    if idx_d is None:
        # An output is batched when some branch's is (unbatched in every branch: it stays unbatched).
        per_branch = [batch_closed(b, op_dims, ctx)[1] for b in branches]
        out_b = [any(ds[k] is not None for ds in per_branch) for k in range(n_out)]
        wanted = [0 if b else None for b in out_b]
        new = [batch_closed(b, op_dims, ctx, out_dims_wanted=wanted)[0] for b in branches]
        weak = [all(b.out_avals[k].weak_type for b in new) for k in range(n_out)]
        return _bind_branches(index, ops, new, weak), wanted
    # A batched index: every branch runs on the whole batch, then a select per branch (documented).
    results = []
    for b in branches:
        new, _ = batch_closed(b, op_dims, ctx, out_dims_wanted=[0] * n_out)
        results.append(bind_call(new, ops, "cond_branch"))
    index = move_dim(index, idx_d, 0, ctx.size)
    outs = list(results[0])
    for i, res in enumerate(results[1:], 1):
        is_i = lax.eq(index, lax.broadcast_in_dim(lax.literal(i, abstractify(index).dtype), (ctx.size,), ()))
        for k in range(n_out):
            shape = abstractify(outs[k]).shape
            mask = lax.broadcast_in_dim(is_i, shape, (0,))
            outs[k] = lax.select(mask, res[k], outs[k])
    return outs, [0] * n_out


def _cond_locate(eqn, args, run):
    """debug_nans' op-by-op re-run: the branch the (concrete) index picks, equation by equation."""
    branches = eqn.params["branches"]
    index = min(max(int(np.asarray(args[0])), 0), len(branches) - 1)  # clamped, as the compiled cond
    body = branches[index]
    return run(body.ir, body.consts, args[1:])


def _cond_save_inside(eqn: Eqn, save_body: Callable):
    """Under a checkpoint policy (kiln.checkpoint): the forward cond also returns the values its taken branch's
    policy saves, in slots the branches share by type (as JAX's: a slot per value of one type in the branch that
    saves the most of that type; zeros in a slot the taken branch leaves empty); the recompute cond reads its
    branch's slots instead of computing those values."""
    branches = eqn.params["branches"]
    found = [save_body(b.ir) for b in branches]
    if all(f is None for f in found):
        return None
    slots: list = []  # the type of each slot
    placed = []  # per branch: the slot of each value it saves
    for f in found:
        taken: list[int] = []
        for v in ([] if f is None else f[2]):
            free = next((j for j, a in enumerate(slots) if a == v.aval and j not in taken), None)
            if free is None:
                slots.append(v.aval)
                free = len(slots) - 1
            taken.append(free)
        placed.append(taken)
    forward_branches, recompute_branches = [], []
    for b, f, taken in zip(branches, found, placed):
        n_out, n_in = len(b.ir.outvars), len(b.ir.invars)
        forward, recompute = (b.ir, b.ir) if f is None else f[:2]
        eqns, slot_out = list(forward.eqns), [None] * len(slots)
        slot_in = [Var(aval) for aval in slots]
        for k, j in enumerate(taken):
            slot_out[j] = forward.outvars[n_out + k]
            slot_in[j] = recompute.invars[n_in + k]
        for j, aval in enumerate(slots):
            if slot_out[j] is None:
                z_eqn, slot_out[j] = _zeros_eqn(aval)
                eqns.append(z_eqn)
        forward_branches.append(ClosedIR(IR(forward.constvars, forward.invars, eqns,
                                            list(forward.outvars[:n_out]) + slot_out), b.consts))
        recompute_branches.append(ClosedIR(IR(recompute.constvars, list(recompute.invars[:n_in]) + slot_in,
                                              recompute.eqns, recompute.outvars), b.consts))
    new = [Var(aval) for aval in slots]
    return (Eqn(cond_p, eqn.inputs, list(eqn.outputs) + new, {**eqn.params, "branches": tuple(forward_branches)},
                eqn.source),
            Eqn(cond_p, list(eqn.inputs) + new, eqn.outputs, {**eqn.params, "branches": tuple(recompute_branches)},
                eqn.source),
            new)


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..ad.remat import save_inside_rules
    from ..driver.nan_check import locate_rules
    locate_rules[cond_p] = _cond_locate
    save_inside_rules[cond_p] = _cond_save_inside
    from ..ad.partial_eval import pe_rules
    from ..ad.transpose import transpose_rules
    from ..batching.core import batch_rules
    jvp_rules[cond_p] = _cond_jvp
    pe_rules[cond_p] = _cond_partial_eval
    transpose_rules[cond_p] = _cond_transpose
    batch_rules[cond_p] = _cond_batch


_register_rules()
