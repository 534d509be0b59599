"""``while_loop``, ``fori_loop`` and ``map``.

``while(*cond_consts, *body_consts, *carry, cond, body, ...)`` lowers to ``stablehlo.while``.
Forward mode differentiates it; reverse mode needs a bound on the number of iterations, so
``while_loop(..., max_steps=N)`` (kiln's extension) runs as a scan of N masked steps, which reverse
mode handles by storing at most N steps of residuals. ``fori_loop`` with static bounds is a scan.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import lax
from ..batching import rules_callbacks as _rules_callbacks
from ..core import consumption, dtypes, refs, tree_util
from ..core.avals import ShapedArray
from ..core.call import bind_call, call_body
from ..core.errors import KilnError
from ..core.ir import IR, ClosedIR, Var
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, trace_to_ir
from ..core.varying import VaryingInput, nested_hints, values_vma, varying_axes, widened_carry
from .common import (
    ControlFlowError,
    avals_str,
    carry_compatible,
    cast_to,
    check_callables,
    fun_name,
    promote_carry,
    same_types,
    trace_callable,
)
from .scan import scan


def _while_rule(*avals: ShapedArray, cond: ClosedIR, body: ClosedIR, cond_nconsts: int, body_nconsts: int):
    return body.out_avals


while_p = Primitive("while", _while_rule, multiple_results=True)


class ReverseModeLoopError(KilnError, ValueError, TypeError):
    """Reverse-mode differentiation of a loop without a static bound: a ValueError, as JAX raises (and a TypeError,
    as kiln raised before)."""


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *, max_steps: int | None = None):
    """``while cond_fun(val): val = body_fun(val)``, compiled as one loop.

    ``max_steps`` (beyond JAX): at most that many iterations; the loop is then differentiable in
    reverse mode (it runs as ``max_steps`` masked steps of a scan).
    """
    check_callables("kiln.lax.while_loop", cond_fun=cond_fun, body_fun=body_fun)
    name = fun_name(body_fun)
    leaves, tree = tree_util.tree_flatten(init_val)
    avals = [abstractify(x) for x in leaves]
    written: list = []
    with consumption.loop_body():  # a PRNG key they close over would be consumed on every iteration
        cond_closed, body_closed, avals = _trace_loop(cond_fun, body_fun, tree, avals, name, written,
                                                      nested_hints(leaves))
    if written:  # the body writes refs created outside it: they become part of the carry
        return _while_threading_refs(cond_fun, body_fun, list(dict.fromkeys(written)), init_val, max_steps)
    leaves = [cast_to(x, a) for x, a in zip(leaves, avals)]
    if max_steps is not None:
        max_steps = int(max_steps)
        if max_steps < 0:
            raise ControlFlowError(f"kiln.lax.while_loop: max_steps must be >= 0, got {max_steps}")

        def step(val, _):
            pred = cond_fun(val)
            new = body_fun(val)
            return tree_util.tree_map(lambda n, o: lax.select(pred, n, o) if abstractify(o).ndim == 0 else
                                      lax.select(lax.broadcast_in_dim(pred, abstractify(o).shape, ()), n, o),
                                      new, val), None
        out, _ = scan(step, tree_util.tree_unflatten(tree, leaves), None, length=max_steps)
        return out
    outs = while_p.bind(*cond_closed.consts, *body_closed.consts, *leaves, cond=call_body(cond_closed),
                        body=call_body(body_closed), cond_nconsts=len(cond_closed.consts),
                        body_nconsts=len(body_closed.consts))
    return tree_util.tree_unflatten(tree, outs)


def _while_threading_refs(cond_fun: Callable, body_fun: Callable, written: list, init_val: Any,
                          max_steps: int | None) -> Any:
    """``while_loop`` of a body that writes the refs ``written`` (created outside it): each ref's value is part of
    the carry (cond_fun reads the values it had after the previous iteration), read before the loop and written
    after it."""
    def cond(state):
        val, values = state
        refs.seed(written, values)
        pred = cond_fun(val)
        refs.take(written)
        return pred

    def body(state):
        val, values = state
        refs.seed(written, values)
        val = body_fun(val)
        return val, refs.take(written)
    body.__name__ = fun_name(body_fun)
    val, finals = while_loop(cond, body, (init_val, [refs.read(r) for r in written]), max_steps=max_steps)
    for ref, value in zip(written, finals):
        refs.write(ref, value)
    return val


def _trace_loop(cond_fun, body_fun, tree, avals, name, ref_writes=None, hints=None):
    """Trace cond_fun and body_fun, again with promoted types where the body changes a weakly typed carry's (as
    JAX), and, inside a ``shard_map`` body (``hints``: the mesh axes each carry varies along), with wider varying
    axes where an iteration adds some: a varying predicate makes every carry vary along its axes."""
    while True:  # a promoted carry type only moves up the (finite) promotion lattice
        cond_closed, cond_tree = trace_callable(cond_fun, tree_util.tree_structure((tree.unflatten(
            [0] * tree.num_leaves),)), avals, fun_name(cond_fun), input_hints=hints)
        out = cond_closed.out_avals
        if len(out) != 1 or out[0].shape != () or out[0].dtype != np.bool_:
            got = avals_str(out)
            raise ControlFlowError(f"kiln.lax.while_loop: cond_fun ({fun_name(cond_fun)}) must return a boolean "
                                   f"scalar, got {got}")
        body_closed, body_tree = trace_callable(body_fun, tree_util.tree_structure((tree.unflatten(
            [0] * tree.num_leaves),)), avals, name, input_hints=hints, check_out=lambda out: consumption.check_carry(
                f"kiln.lax.while_loop({name})", out), ref_writes=ref_writes)
        if body_tree != tree:
            raise ControlFlowError(f"kiln.lax.while_loop: body_fun must return a value with the structure of "
                                   f"init_val {tree}, got {body_tree}")
        if hints:
            wider = _wider_loop_hints(cond_closed, body_closed, hints)
            if wider is not None:  # (the varying axes only grow, and there are finitely many)
                hints = wider
                continue
        outs = body_closed.out_avals
        promoted = promote_carry(avals, outs)  # a weakly typed carry takes the body's type, as JAX
        if promoted == avals and all(same_types(a, b) for a, b in zip(avals, outs)):
            return cond_closed, body_closed, avals
        if promoted == avals or not all(carry_compatible(a, b) for a, b in zip(avals, outs)):
            raise ControlFlowError(f"kiln.lax.while_loop: the carry's type changed in body_fun ({name}): before "
                                   f"{avals_str(avals)}, after {avals_str(outs)}. body_fun must return values of "
                                   "the same shapes and dtypes (convert with .astype)")
        avals = promoted


def _wider_loop_hints(cond_closed, body_closed, hints: list) -> list | None:
    """The carries' hints to trace a while loop again with, where an iteration makes one vary along more axes (the
    body's outputs, and where the predicate varies, every carry along its axes); None when they agree."""
    (pred,) = varying_axes(cond_closed.ir, [h.axes for h in hints], frozenset(hints[0].mesh_axes),
                           values_vma(cond_closed.consts))
    widened = [h if pred <= h.axes else VaryingInput(h.axes | pred, h.mesh_axes, h.typed) for h in hints]
    wider = widened_carry(body_closed, widened, len(hints))
    if wider is not None:
        return wider
    return widened if any(a is not b for a, b in zip(widened, hints)) else None


def _static_int(x) -> int | None:
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, Tracer):
        return None
    if hasattr(x, "aval") and x.aval.shape == () and x.aval.dtype.kind in "iu":
        return int(x)
    return None


def fori_loop(lower, upper, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None,
              max_steps: int | None = None):
    """``for i in range(lower, upper): val = body_fun(i, val)``.

    With static (Python int) bounds this is a scan (differentiable in both modes); with traced
    bounds a while loop (forward mode only, unless ``max_steps`` bounds it). ``i`` has the bounds'
    dtype (weakly typed when both are Python ints, as JAX).
    """
    check_callables("kiln.lax.fori_loop", body_fun=body_fun)
    for b in (lower, upper):
        aval = abstractify(b)
        if aval.shape != () or aval.dtype.kind not in "iu":
            raise ControlFlowError(f"kiln.lax.fori_loop: lower and upper must be integer scalars, got "
                                   f"{aval.str_short()}")
    idx_dtype, idx_weak = dtypes.result_type(lower, upper, return_weak_type_flag=True)
    one = lax.literal(1, idx_dtype, idx_weak)
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        n = max(hi - lo, 0)

        def step(carry, _):
            i, val = carry
            return (lax.add(i, one), _fori_body(body_fun, i, val)), None
        i0 = lax.convert_element_type(lo, idx_dtype, weak_type=idx_weak)
        (_, out), _ = scan(step, (i0, init_val), None, length=n, unroll=1 if unroll is None else unroll)
        return out
    if unroll is not None:
        raise ControlFlowError("kiln.lax.fori_loop: unroll= needs static (Python int) bounds; with traced bounds "
                               "the loop is a while loop, which cannot be unrolled")
    lower_a = lax.convert_element_type(lower, idx_dtype, weak_type=idx_weak)
    upper_a = lax.convert_element_type(upper, idx_dtype, weak_type=idx_weak)

    def cond(carry):
        return lax.lt(carry[0], carry[1])

    def body(carry):
        i, u, val = carry
        return lax.add(i, one), u, _fori_body(body_fun, i, val)
    _, _, out = while_loop(cond, body, (lower_a, upper_a, init_val), max_steps=max_steps)
    return out


def _fori_body(body_fun: Callable, i, val):
    """``body_fun(i, val)``, checked to return a value of ``val``'s structure and types."""
    new = body_fun(i, val)
    name = fun_name(body_fun)
    old_leaves, old_tree = tree_util.tree_flatten(val)
    new_leaves, new_tree = tree_util.tree_flatten(new)
    if new_tree != old_tree:
        raise ControlFlowError(f"kiln.lax.fori_loop: body_fun ({name}) must return a value with the structure of "
                               f"init_val {old_tree}, got {new_tree}")
    before, after = [abstractify(x) for x in old_leaves], [abstractify(x) for x in new_leaves]
    if not all(carry_compatible(a, b) for a, b in zip(before, after)):  # (scan/while promote weak carries)
        raise ControlFlowError(f"kiln.lax.fori_loop: the carry's type changed in body_fun ({name}): before "
                               f"{avals_str(before)}, after {avals_str(after)}. body_fun must return values of the "
                               "same shapes and dtypes (convert with .astype)")
    return new


def map(f: Callable, xs: Any, *, batch_size: int | None = None):  # noqa: A001
    """``stack([f(x) for x in xs])`` as a scan (``batch_size``: vmap over chunks of that size)."""
    check_callables("kiln.lax.map", f=f)
    if batch_size is not None:
        from ..batching.api import vmap
        leaves = tree_util.tree_leaves(xs)
        if not leaves:
            _, ys = scan(lambda c, x: (c, f(x)), (), xs)
            return ys
        n = abstractify(leaves[0]).shape[0]
        batch_size = int(batch_size)
        if batch_size < 0:
            raise ControlFlowError(f"kiln.lax.map: batch_size must be a non-negative int, got {batch_size}")
        # As JAX: whole chunks of batch_size under a scan of vmap(f), the remaining n % batch_size
        # elements (all of them for batch_size=0) as one more vmap(f), concatenated after the chunks.
        chunks, rem = divmod(n, batch_size) if batch_size else (0, n)
        full = chunks * batch_size
        ys = None
        if chunks:
            cut = tree_util.tree_map(lambda x: lax.slice_in_dim(x, 0, full, axis=0) if rem else x, xs)
            cut = tree_util.tree_map(lambda x: lax.reshape(x, (chunks, batch_size) + abstractify(x).shape[1:]), cut)
            _, ys = scan(lambda c, x: (c, vmap(f)(x)), (), cut)
            ys = tree_util.tree_map(lambda y: lax.reshape(y, (full,) + abstractify(y).shape[2:]), ys)
        if rem:
            rest = vmap(f)(tree_util.tree_map(lambda x: lax.slice_in_dim(x, full, n, axis=0), xs))
            ys = rest if ys is None else tree_util.tree_map(lambda a, b: lax.concatenate([a, b], 0), ys, rest)
        return ys
    _, ys = scan(lambda c, x: (c, f(x)), (), xs)
    return ys


_rules_callbacks.sequential_map = map  # pure/io callbacks batch as a loop over the batch (as JAX's lax.map)


# -- transformation rules of while ------------------------------------------------------------------------
def _extend(closed: ClosedIR, extra_avals, at: int) -> ClosedIR:
    """``closed`` taking extra (unused) inputs inserted at position ``at``."""
    ir = closed.ir
    invars = list(ir.invars)
    invars[at:at] = [Var(a) for a in extra_avals]
    return ClosedIR(IR([], invars, ir.eqns, ir.outvars), [])


def _while_jvp(primals, tangents, *, cond, body, cond_nconsts, body_nconsts):
    from ..ad.jvp import jvp_ir
    from ..ad.tangents import Zero, instantiate, tangent_aval
    nz = [not isinstance(t, Zero) for t in tangents]
    bc_nz = nz[cond_nconsts:cond_nconsts + body_nconsts]
    k_nz = nz[cond_nconsts + body_nconsts:]
    while True:
        _, out_nz = jvp_ir(body, bc_nz + k_nz)
        new = [a or b for a, b in zip(k_nz, out_nz)]
        if new == k_nz:
            break
        k_nz = new
    jbody, _ = jvp_ir(body, bc_nz + k_nz, instantiate=k_nz)
    cc, bc, carry = (primals[:cond_nconsts], primals[cond_nconsts:cond_nconsts + body_nconsts],
                     primals[cond_nconsts + body_nconsts:])
    bct = [t for t, z in zip(tangents[cond_nconsts:cond_nconsts + body_nconsts], bc_nz) if z]
    kt = [instantiate(t) for t, z in zip(tangents[cond_nconsts + body_nconsts:], k_nz) if z]
    # jbody inputs: (its consts, body consts, carry, body-const tangents, carry tangents); the while's
    # body takes (body consts..., carry...) with carry = carry + carry tangents.
    b = call_body(jbody).ir
    nj = len(jbody.consts)
    n_bc, n_k = len(bc), len(carry)
    jv = b.invars
    consts_part = jv[:nj] + jv[nj:nj + n_bc] + jv[nj + n_bc + n_k:nj + n_bc + n_k + len(bct)]
    carry_part = jv[nj + n_bc:nj + n_bc + n_k] + jv[nj + n_bc + n_k + len(bct):]
    new_body = ClosedIR(IR([], consts_part + carry_part, b.eqns, b.outvars), [])
    new_cond = _extend(cond, [a.aval for a in carry_part[n_k:]], len(cond.ir.invars))
    outs = while_p.bind(*cc, *jbody.consts, *bc, *bct, *carry, *kt, cond=new_cond, body=new_body,
                        cond_nconsts=cond_nconsts, body_nconsts=nj + n_bc + len(bct))
    it = iter(outs[n_k:])
    return outs[:n_k], [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(k_nz, body.out_avals)]


def _while_partial_eval(eqn, unknown_inputs):
    if not any(unknown_inputs):
        return [eqn], [], [False] * len(eqn.outputs)
    raise ReverseModeLoopError(
        "kiln: reverse-mode differentiation (grad, vjp) of a while_loop, or of a fori_loop with traced "
        "bounds, is not possible: the number of iterations is unknown, so its intermediate values cannot "
        "be stored. Use kiln.lax.scan, a fori_loop with static (Python int) bounds, or pass max_steps=N to "
        "while_loop/fori_loop to bound the loop (kiln then stores at most N steps).")


def _while_batch(ctx, args, dims, *, cond, body, cond_nconsts, body_nconsts):
    from ..batching.core import batch_closed, move_dim
    ncc, nbc = cond_nconsts, body_nconsts
    cc_d, bc_d, k_d = dims[:ncc], dims[ncc:ncc + nbc], dims[ncc + nbc:]
    k_b = [d is not None for d in k_d]
    while True:
        _, out_dims = batch_closed(body, [0 if d is not None else None for d in bc_d] + [0 if b else None
                                                                                          for b in k_b], ctx)
        new = [b or d is not None for b, d in zip(k_b, out_dims)]
        if new == k_b:
            break
        k_b = new
    cd_in = [0 if d is not None else None for d in cc_d] + [0 if b else None for b in k_b]
    _, (pred_d,) = batch_closed(cond, cd_in, ctx)
    cc, bc, carry = args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:]
    cc = [move_dim(c, d, 0, ctx.size) if d is not None else c for c, d in zip(cc, cc_d)]
    bc = [move_dim(c, d, 0, ctx.size) if d is not None else c for c, d in zip(bc, bc_d)]
    if pred_d is not None:
        k_b = [True] * len(carry)  # a batched predicate: every element keeps its own state
    carry = [move_dim(k, d, 0, ctx.size) if b else k for k, d, b in zip(carry, k_d, k_b)]
    bd_in = [0 if d is not None else None for d in bc_d] + [0 if b else None for b in k_b]
    cd_in = [0 if d is not None else None for d in cc_d] + [0 if b else None for b in k_b]
    new_body, _ = batch_closed(body, bd_in, ctx, out_dims_wanted=[0 if b else None for b in k_b])
    new_cond, _ = batch_closed(cond, cd_in, ctx, out_dims_wanted=[0 if pred_d is not None else None])
    if pred_d is None:
        outs = while_p.bind(*new_cond.consts, *cc, *new_body.consts, *bc, *carry, cond=call_body(new_cond),
                            body=call_body(new_body), cond_nconsts=len(new_cond.consts) + ncc,
                            body_nconsts=len(new_body.consts) + nbc)
        return outs, [0 if b else None for b in k_b]
    # Batched predicate: run while any element is active; finished elements keep their value.
    n_cc, n_bc = len(cc), len(bc)
    cond_avals = [abstractify(x) for x in list(cc) + list(bc) + list(carry)]

    def any_active(*vals):
        pred = bind_call(new_cond, list(vals[:n_cc]) + list(vals[n_cc + n_bc:]), "while_cond")[0]
        return [lax.reduce_or(pred, (0,))]

    def masked_body(*vals):
        c_vals, b_vals, k_vals = vals[:n_cc], vals[n_cc:n_cc + n_bc], vals[n_cc + n_bc:]
        pred = bind_call(new_cond, list(c_vals) + list(k_vals), "while_cond")[0]
        new = bind_call(new_body, list(b_vals) + list(k_vals), "while_body")
        out = []
        for n, o in zip(new, k_vals):
            mask = lax.broadcast_in_dim(pred, abstractify(o).shape, (0,))
            out.append(lax.select(mask, n, o))
        return out

    c_closed, _ = trace_to_ir(any_active, cond_avals, name="while_any")
    b_closed, _ = trace_to_ir(masked_body, cond_avals, name="while_masked")
    # Both loop functions take (their consts, cond consts, body consts, carry).
    outs = while_p.bind(*c_closed.consts, *cc, *bc, *b_closed.consts, *cc, *bc, *carry,
                        cond=call_body(c_closed), body=call_body(b_closed),
                        cond_nconsts=len(c_closed.consts) + n_cc + n_bc,
                        body_nconsts=len(b_closed.consts) + n_cc + n_bc)
    return outs, [0] * len(carry)


def _while_locate(eqn, args, run):
    """debug_nans' op-by-op re-run: the loop in Python, its cond and body equation by equation."""
    p = eqn.params
    cond, body, nc, nb = p["cond"], p["body"], p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, carry = args[:nc], args[nc:nc + nb], list(args[nc + nb:])
    while bool(np.asarray(run(cond.ir, cond.consts, [*cond_consts, *carry])[0])):
        carry = run(body.ir, body.consts, [*body_consts, *carry])
    return carry


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..driver.nan_check import locate_rules
    locate_rules[while_p] = _while_locate
    from ..ad.partial_eval import pe_rules
    from ..batching.core import batch_rules
    jvp_rules[while_p] = _while_jvp
    pe_rules[while_p] = _while_partial_eval
    batch_rules[while_p] = _while_batch


_register_rules()
