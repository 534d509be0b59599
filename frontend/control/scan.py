"""``scan``: a loop over the leading axis of ``xs`` carrying state, stacking per-step outputs.

``scan(*consts, *carry, *xs, body, num_consts, num_carry, length, reverse, unroll)``: the body
takes (consts, carry, x slices) and returns (new carry, y slices). Lowered to ``stablehlo.while``
over a counter (unrolled by ``unroll`` steps per trip). Reverse mode runs a reverse scan over
residuals stacked by the forward scan.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import lax
from ..core import consumption, refs, tree_util
from ..core.avals import ShapedArray
from ..core.call import bind_call, call_body
from ..core.ir import IR, ClosedIR, Eqn, Literal, Var
from ..core.passes import has_effects
from ..core.primitive import Primitive
from ..core.tracing import abstractify, trace_to_ir
from ..core.varying import nested_hints, widened_carry
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


def _scan_rule(*avals: ShapedArray, body: ClosedIR, num_consts: int, num_carry: int, length: int,
               reverse: bool, unroll: int):
    carry = body.out_avals[:num_carry]
    ys = [a.update(shape=(length,) + a.shape) for a in body.out_avals[num_carry:]]
    return list(carry) + ys


scan_p = Primitive("scan", _scan_rule, multiple_results=True)


def _split3(seq, a: int, b: int):
    return list(seq[:a]), list(seq[a:a + b]), list(seq[a + b:])


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, stacked ys)``.

    ``xs=None`` with ``length=n`` runs ``n`` steps with ``x=None``. ``reverse`` walks from the end.
    ``unroll`` (int, or True for everything) emits that many steps per loop trip.
    """
    check_callables("kiln.lax.scan", f=f)
    name = fun_name(f)
    init_leaves, init_tree = tree_util.tree_flatten(init)
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    lengths = []
    for x in xs_leaves:
        aval = abstractify(x)
        if aval.ndim == 0:
            raise ControlFlowError(f"kiln.lax.scan({name}): every leaf of xs needs a leading axis to scan over, got "
                                   "a 0-d value")
        lengths.append(aval.shape[0])
    if length is not None:
        length = int(length)
        if any(n != length for n in lengths):
            raise ControlFlowError(f"kiln.lax.scan({name}): length={length} does not match the leading sizes of xs "
                                   f"{lengths}")
    elif lengths:
        if len(set(lengths)) != 1:
            shapes = ", ".join(str(abstractify(x).shape) for x in xs_leaves)
            raise ControlFlowError(f"kiln.lax.scan({name}): xs leaves have mismatched leading sizes {lengths} "
                                   f"(shapes {shapes}); all must have the same length")
        length = lengths[0]
    else:
        raise ControlFlowError(f"kiln.lax.scan({name}): xs is None (or has no arrays), so pass length=")
    x_avals = [abstractify(x).update(shape=abstractify(x).shape[1:]) for x in xs_leaves]
    carry_avals = [abstractify(c) for c in init_leaves]
    written: list = []
    with consumption.loop_body():  # a PRNG key it closes over would be consumed on every iteration
        closed, out_tree, carry_avals = _trace_body(f, init_tree, xs_tree, carry_avals, x_avals, name, written,
                                                    nested_hints(init_leaves + xs_leaves))
    if written:  # the body writes refs created outside it: they become carries
        return _scan_threading_refs(f, list(dict.fromkeys(written)), init, xs, length, reverse, unroll)
    consts = closed.consts
    nc = len(init_leaves)
    if isinstance(unroll, bool):
        steps = max(length, 1) if unroll else 1
    else:
        steps = int(unroll)
        if steps < 1:
            raise ControlFlowError(f"kiln.lax.scan({name}): unroll must be a bool or a positive int, got {unroll!r}")
    outs = scan_p.bind(*consts, *[cast_to(c, a) for c, a in zip(init_leaves, carry_avals)], *xs_leaves,
                       body=call_body(closed), num_consts=len(consts), num_carry=nc, length=length,
                       reverse=bool(reverse), unroll=steps)
    carry_tree, y_tree = out_tree.children()
    return tree_util.tree_unflatten(carry_tree, outs[:nc]), tree_util.tree_unflatten(y_tree, outs[nc:])


def _scan_threading_refs(f: Callable, written: list, init: Any, xs: Any, length: int, reverse: bool, unroll):
    """``scan`` of a body that writes the refs ``written`` (created outside it): each ref's value is one more
    carry, read before the loop and written after it."""
    def body(carry, x):
        carry, values = carry
        refs.seed(written, values)
        carry, y = _pair(f(carry, x), fun_name(f))
        return (carry, refs.take(written)), y
    body.__name__ = fun_name(f)
    (carry, finals), ys = scan(body, (init, [refs.read(r) for r in written]), xs, length, reverse, unroll)
    for ref, value in zip(written, finals):
        refs.write(ref, value)
    return carry, ys


def _trace_body(f, init_tree, xs_tree, carry_avals, x_avals, name, ref_writes=None, hints=None):
    """Trace the body; if it changes a weakly typed carry's type (``0`` becoming float32, or a weak
    float32 becoming strong), trace again with the promoted type, as JAX. Inside a ``shard_map`` body,
    ``hints`` give the carries and xs the mesh axes they vary along; a carry that an iteration makes vary
    along more is traced again with them (JAX asks for a ``pvary`` instead)."""
    in_tree = tree_util.tree_structure((init_tree.unflatten([0] * init_tree.num_leaves),
                                        xs_tree.unflatten([0] * xs_tree.num_leaves)))
    nc = len(carry_avals)
    while True:  # at most a few rounds: a promoted type only moves up the (finite) promotion lattice
        closed, out_tree = trace_callable(lambda c, x: _pair(f(c, x), name), in_tree, carry_avals + x_avals, name,
                                          input_hints=hints,
                                          check_out=lambda out: consumption.check_carry(f"kiln.lax.scan({name})",
                                                                                        out[0]),
                                          ref_writes=ref_writes)
        wider = widened_carry(closed, hints, nc) if hints else None
        if wider is not None:  # (the varying axes only grow, and there are finitely many)
            hints = wider
            continue
        children = out_tree.children()
        if children[0] != init_tree:
            raise ControlFlowError(f"kiln.lax.scan({name}): the body must return a carry with the structure of init "
                                   f"{init_tree}, got {children[0]}")
        outs = closed.out_avals[:len(carry_avals)]
        promoted = promote_carry(carry_avals, outs)
        if promoted == carry_avals and all(same_types(a, b) for a, b in zip(carry_avals, outs)):
            return closed, out_tree, carry_avals
        if promoted == carry_avals or not all(carry_compatible(a, b) for a, b in zip(carry_avals, outs)):
            raise ControlFlowError(f"kiln.lax.scan({name}): the carry's type changed in the body: before "
                                   f"{avals_str(carry_avals)}, after {avals_str(outs)}. The body must return a "
                                   "carry of the same shapes and dtypes (convert with .astype)")
        carry_avals = promoted


def _pair(out, name):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        got = (f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) else
               f"an array {abstractify(out).str_short()}" if hasattr(out, "aval") else f"a {type(out).__name__}")
        raise ControlFlowError(f"kiln.lax.scan({name}): the body must return a pair (carry, y), got {got}; return "
                               "(carry, None) when there are no per-step outputs")
    return tuple(out)


# -- transformation rules ---------------------------------------------------------------------------------
def _permuted(closed: ClosedIR, in_order: Sequence[int], out_order: Sequence[int]) -> tuple[ClosedIR, list]:
    """``closed`` (as a body with its consts as leading inputs) with inputs/outputs reordered.

    ``in_order``/``out_order`` index the original inputs (after the consts)/outputs. Returns the new
    body and the consts to pass as leading scan consts.
    """
    body = call_body(closed).ir
    nk = len(closed.consts)
    invars = body.invars[:nk] + [body.invars[nk + i] for i in in_order]
    outvars = [body.outvars[i] for i in out_order]
    return ClosedIR(IR([], invars, body.eqns, outvars), []), list(closed.consts)


def _scan_jvp(primals, tangents, *, body, num_consts, num_carry, length, reverse, unroll):
    from ..ad.jvp import jvp_ir
    from ..ad.tangents import Zero, instantiate, tangent_aval
    nz = [not isinstance(t, Zero) for t in tangents]
    c_nz, k_nz, x_nz = _split3(nz, num_consts, num_carry)
    while True:  # carries whose tangent can become nonzero: a fixed point
        _, out_nz = jvp_ir(body, c_nz + k_nz + x_nz)
        new_k = [a or b for a, b in zip(k_nz, out_nz[:num_carry])]
        if new_k == k_nz:
            break
        k_nz = new_k
    n_ys = len(body.out_avals) - num_carry
    jbody, out_nz = jvp_ir(body, c_nz + k_nz + x_nz, instantiate=k_nz + [False] * n_ys)
    y_nz = out_nz[num_carry:]
    n_in = len(primals)
    # jvp body inputs: primals (consts, carry, xs) then nonzero tangents in the same groups.
    t_index = {}
    pos = n_in
    for i, z in enumerate(c_nz + k_nz + x_nz):
        if z:
            t_index[i] = pos
            pos += 1
    groups = [range(0, num_consts), range(num_consts, num_consts + num_carry), range(num_consts + num_carry, n_in)]
    in_order = []
    for g in groups:
        in_order += list(g) + [t_index[i] for i in g if i in t_index]
    n_out = len(body.out_avals)
    t_out = {}
    pos = n_out
    for i, z in enumerate(k_nz + y_nz):
        if z:
            t_out[i] = pos
            pos += 1
    out_order = list(range(num_carry)) + [t_out[i] for i in range(num_carry) if i in t_out] + \
        list(range(num_carry, n_out)) + [t_out[i] for i in range(num_carry, n_out) if i in t_out]
    new_body, extra = _permuted(jbody, in_order, out_order)
    tans = list(tangents)
    args = []
    for g in groups:
        args += [primals[i] for i in g] + [instantiate(tans[i]) for i in g if t_index.get(i) is not None]
    nk_t = sum(k_nz)
    outs = scan_p.bind(*extra, *args, body=new_body, num_consts=len(extra) + num_consts + sum(c_nz),
                       num_carry=num_carry + nk_t, length=length, reverse=reverse, unroll=unroll)
    carry, carry_t = outs[:num_carry], outs[num_carry:num_carry + nk_t]
    ys, ys_t = outs[num_carry + nk_t:num_carry + nk_t + n_ys], outs[num_carry + nk_t + n_ys:]
    it_k, it_y = iter(carry_t), iter(ys_t)
    out_avals = _scan_rule(*[], body=body, num_consts=num_consts, num_carry=num_carry, length=length,
                           reverse=reverse, unroll=unroll)
    touts = [next(it_k) if z else Zero(tangent_aval(a)) for z, a in zip(k_nz, out_avals[:num_carry])]
    touts += [next(it_y) if z else Zero(tangent_aval(a)) for z, a in zip(y_nz, out_avals[num_carry:])]
    return carry + ys, touts


def _scan_partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    from ..ad.partial_eval import partial_eval
    p = eqn.params
    body, nc, nk = p["body"], p["num_consts"], p["num_carry"]
    c_u, k_u, x_u = _split3(unknown_inputs, nc, nk)
    while True:
        out_u = partial_eval(body.ir, c_u + k_u + x_u).out_unknown
        new_k = [a or b for a, b in zip(k_u, out_u[:nk])]
        if new_k == k_u:
            break
        k_u = new_k
    if not any(c_u + k_u + x_u):
        return [eqn], [], [False] * len(eqn.outputs)
    n_ys = len(body.out_avals) - nk
    split = partial_eval(body.ir, c_u + k_u + x_u, force_unknown=k_u + [False] * n_ys)
    y_u = split.out_unknown[nk:]
    length = p["length"]
    nres = split.num_residuals
    known, unknown = split.known, split.unknown
    inputs = eqn.inputs
    ins_c, ins_k, ins_x = _split3(inputs, nc, nk)
    # Residuals that are the scan's own (known) consts are loop-invariant: the linear scan takes the
    # outer value as a const instead of a per-step stacked copy. Residuals that are the scan's own (known) xs
    # are the outer xs themselves: the linear scan reads those instead of a stacked copy. Residuals computed
    # from literals alone (a broadcast constant) are computed again in the linear body, not stacked.
    n_known_out = len(known.outvars) - nres
    residuals = known.outvars[n_known_out:]
    const_pos = {v: i for i, v in enumerate(body.ir.invars[:nc]) if not c_u[i]}
    xs_pos = {v: i for i, v in enumerate(body.ir.invars[nc + nk:]) if not x_u[i]}
    constant = {e.outputs[0]: e for e in known.eqns
                if len(e.outputs) == 1 and not e.prim.multiple_results and e.inputs and not has_effects(e)
                and all(isinstance(a, Literal) for a in e.inputs)
                and not any(isinstance(v, (IR, ClosedIR)) for v in e.params.values())}
    # Residuals computed from the known consts alone (a transposed or broadcast weight) are loop-invariant too:
    # computed once before the loops (``hoisted``) and taken by the linear scan as consts.
    invariant = set(const_pos)
    for e in known.eqns:
        if not has_effects(e) and all(not isinstance(a, Var) or a in invariant for a in e.inputs):
            invariant.update(e.outputs)
    # Residuals that are the body's own known ys (an RNN's h, both output and its tanh's residual) are stacked by
    # the known scan already: the linear scan reads that output instead of a second stacked copy.
    known_ys = [v for v, u in zip(eqn.outputs[nk:], y_u) if not u]
    ys_pos = {}
    for i, v in enumerate(known.outvars[k_u.count(False):n_known_out]):
        if isinstance(v, Var) and v not in ys_pos:
            ys_pos[v] = i
    kind = [("const" if r in const_pos else "xs" if r in xs_pos else "ys" if r in ys_pos else
             "literal" if r in constant else "hoist" if r in invariant else "stacked") if isinstance(r, Var)
            else "stacked" for r in residuals]
    # A residual that one cheap elementwise operation computes from another stacked residual and literals (tanh's
    # derivative keeps y and 1 - y, JAX's order of operations) is computed again in the linear body from that
    # one: not stacked too.
    stacked_set = {r for r, k in zip(residuals, kind) if k in ("stacked", "ys")}  # one array per step
    derived = {e.outputs[0]: e for e in known.eqns
               if e.prim.name in _CHEAP and len(e.outputs) == 1 and e.outputs[0] in stacked_set
               and e.outputs[0] not in ys_pos
               and all(isinstance(a, Literal) or a in constant or (a in stacked_set and a is not e.outputs[0])
                       for a in e.inputs)
               and any(a in stacked_set for a in e.inputs if isinstance(a, Var))}
    # (not from another derived one: the linear body computes each from stacked arrays only)
    derived = {r: e for r, e in derived.items() if not any(a in derived for a in e.inputs if isinstance(a, Var))}
    kind = ["derived" if r in derived else k for r, k in zip(residuals, kind)]
    hoisted, outer = _hoist(known.eqns, [r for r, k in zip(residuals, kind) if k == "hoist"],
                            {v: ins_c[i] for v, i in const_pos.items()})
    stacked = [r for r, k in zip(residuals, kind) if k == "stacked"]
    # Known scan: (known consts, known carry, known xs) -> (known carry, known ys, stacked residuals).
    n_kc, n_kk = c_u.count(False), k_u.count(False)
    known_body = ClosedIR(IR([], known.invars, known.eqns, known.outvars[:n_known_out] + stacked), [])
    res_vars = [Var(r.aval.update(shape=(length,) + r.aval.shape)) for r in stacked]
    outs_c, outs_y = eqn.outputs[:nk], eqn.outputs[nk:]
    known_eqn = Eqn(scan_p, [a for a, u in zip(ins_c, c_u) if not u] + [a for a, u in zip(ins_k, k_u) if not u]
                    + [a for a, u in zip(ins_x, x_u) if not u],
                    [v for v, u in zip(outs_c, k_u) if not u] + [v for v, u in zip(outs_y, y_u) if not u] + res_vars,
                    {**p, "body": known_body, "num_consts": n_kc, "num_carry": n_kk}, eqn.source)
    # Unknown scan: consts = unknown consts + invariant residuals, carry = unknown carry,
    # xs = stacked residuals + forwarded xs + unknown xs.
    u_in = unknown.invars
    res_in, rest = u_in[:nres], u_in[nres:]
    n_uc, n_uk = c_u.count(True), k_u.count(True)
    u_consts, u_carry, u_xs = rest[:n_uc], rest[n_uc:n_uc + n_uk], rest[n_uc + n_uk:]

    def of(k):
        return [(v, r) for v, r, kk in zip(res_in, residuals, kind) if kk == k]
    inv_in = [v for v, _ in of("const")] + [v for v, _ in of("hoist")]
    inv_outer = [ins_c[const_pos[r]] for _, r in of("const")] + [outer[r] for _, r in of("hoist")]
    fwd_in = [v for v, _ in of("xs")] + [v for v, _ in of("ys")]
    fwd_outer = [ins_x[xs_pos[r]] for _, r in of("xs")] + [known_ys[ys_pos[r]] for _, r in of("ys")]
    stacked_in = [v for v, _ in of("stacked")]
    recomputed = [Eqn(constant[r].prim, constant[r].inputs, [v], constant[r].params, constant[r].source)
                  for v, r in of("literal")]
    stacked_var = {r: v for v, r in of("stacked") + of("ys")}
    for v, r in of("derived"):
        e, ins = derived[r], []
        for a in e.inputs:
            if isinstance(a, Var) and a in constant:  # a broadcast literal: computed again as well
                c = constant[a]
                a_new = Var(a.aval)
                recomputed.append(Eqn(c.prim, c.inputs, [a_new], c.params, c.source))
                a = a_new
            ins.append(stacked_var.get(a, a) if isinstance(a, Var) else a)
        recomputed.append(Eqn(e.prim, ins, [v], e.params, e.source))
    unknown_body = ClosedIR(IR([], u_consts + inv_in + u_carry + stacked_in + fwd_in + u_xs,
                               recomputed + unknown.eqns, unknown.outvars), [])
    unknown_eqn = Eqn(scan_p, [a for a, u in zip(ins_c, c_u) if u] + inv_outer + [a for a, u in zip(ins_k, k_u) if u]
                      + res_vars + fwd_outer + [a for a, u in zip(ins_x, x_u) if u],
                      [v for v, u in zip(outs_c, k_u) if u] + [v for v, u in zip(outs_y, y_u) if u],
                      {**p, "body": unknown_body, "num_consts": n_uc + len(inv_in), "num_carry": n_uk}, eqn.source)
    return hoisted + [known_eqn], [unknown_eqn], k_u + y_u


# Elementwise operations cheap enough to compute again in the linear loop rather than stack their result.
_CHEAP = frozenset({"add", "sub", "mul", "neg"})


def _hoist(eqns: list[Eqn], wanted: list[Var], env: dict) -> tuple[list[Eqn], dict]:
    """The equations of a loop body that compute ``wanted`` (loop-invariant values: from the body's consts
    alone), copied out of the loop with the body's consts replaced by the outer values ``env``; and the outer
    variable of each wanted value."""
    if not wanted:
        return [], {}
    needed, chosen = set(wanted), []
    for e in reversed(eqns):
        if any(o in needed for o in e.outputs):
            chosen.append(e)
            needed.update(a for a in e.inputs if isinstance(a, Var))
    env, out = dict(env), []
    for e in reversed(chosen):
        outs = [Var(o.aval) for o in e.outputs]
        out.append(Eqn(e.prim, [env.get(a, a) if isinstance(a, Var) else a for a in e.inputs], outs, e.params,
                       e.source))
        env.update(zip(e.outputs, outs))
    return out, {r: env[r] for r in wanted}


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse, unroll):
    from ..ad.tangents import Zero, instantiate, zeros_like_aval
    from ..ad.transpose import is_undefined, transpose_closed
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    c_lin = [is_undefined(c) for c in consts]
    x_lin = [is_undefined(x) for x in xs]
    # Every carry of a linear scan is treated as linear; a carry given a known value (a zero initial
    # tangent, say) just gets no cotangent.
    ct_carry = [instantiate(c) if not isinstance(c, Zero) else zeros_like_aval(c.aval) for c in cts[:num_carry]]
    ct_ys = [instantiate(c) if not isinstance(c, Zero) else zeros_like_aval(c.aval) for c in cts[num_carry:]]
    body_t = transpose_closed(body, c_lin + [True] * num_carry + x_lin)
    # body_t: (non-linear consts, non-linear xs, ct carry out, ct y) -> (ct lin consts, ct carry in, ct lin xs)
    nl_consts = [c for c, lin in zip(consts, c_lin) if not lin]
    nl_xs = [x for x, lin in zip(xs, x_lin) if not lin]
    lin_c_avals = [c.aval for c, lin in zip(consts, c_lin) if lin]
    n_nlc, n_nlx, n_lc = len(nl_consts), len(nl_xs), len(lin_c_avals)

    def step(*vals):
        nlc = vals[:n_nlc]
        acc = vals[n_nlc:n_nlc + n_lc]
        ctk = vals[n_nlc + n_lc:n_nlc + n_lc + num_carry]
        nlx = vals[n_nlc + n_lc + num_carry:n_nlc + n_lc + num_carry + n_nlx]
        cty = vals[n_nlc + n_lc + num_carry + n_nlx:]
        outs = bind_call(body_t, list(nlc) + list(nlx) + list(ctk) + list(cty), "scan_transpose_body")
        c_ct, k_ct, x_ct = outs[:n_lc], outs[n_lc:n_lc + num_carry], outs[n_lc + num_carry:]
        return [lax.add(a, c) for a, c in zip(acc, c_ct)] + list(k_ct) + list(x_ct)

    in_avals = ([abstractify(c) for c in nl_consts] + lin_c_avals + [abstractify(c) for c in ct_carry]
                + [abstractify(x).update(shape=abstractify(x).shape[1:]) for x in nl_xs]
                + [abstractify(c).update(shape=abstractify(c).shape[1:]) for c in ct_ys])
    t_closed, _ = trace_to_ir(step, in_avals, name="scan_transpose")
    acc0 = [zeros_like_aval(a) for a in lin_c_avals]
    outs = scan_p.bind(*t_closed.consts, *nl_consts, *acc0, *ct_carry, *nl_xs, *ct_ys, body=call_body(t_closed),
                       num_consts=len(t_closed.consts) + n_nlc, num_carry=n_lc + num_carry, length=length,
                       reverse=not reverse, unroll=unroll)
    c_out, k_out, x_out = outs[:n_lc], outs[n_lc:n_lc + num_carry], outs[n_lc + num_carry:]
    it_c, it_x = iter(c_out), iter(x_out)
    return ([next(it_c) if lin else None for lin in c_lin]
            + [k if is_undefined(a) else None for k, a in zip(k_out, carry)]
            + [next(it_x) if lin else None for lin in x_lin])


def _scan_batch(ctx, args, dims, *, body, num_consts, num_carry, length, reverse, unroll):
    from ..batching.core import batch_closed, move_dim
    c_d, k_d, x_d = _split3(list(dims), num_consts, num_carry)
    c_b = [d is not None for d in c_d]
    k_b = [d is not None for d in k_d]
    x_b = [d is not None for d in x_d]
    n_ys = len(body.out_avals) - num_carry
    while True:
        in_dims = [0 if b else None for b in c_b + k_b + x_b]
        _, out_dims = batch_closed(body, in_dims, ctx)
        new_k = [b or d is not None for b, d in zip(k_b, out_dims[:num_carry])]
        if new_k == k_b:
            break
        k_b = new_k
    in_dims = [0 if b else None for b in c_b + k_b + x_b]
    # A y stays unbatched when the body computes it from unbatched values only (jacfwd's primal outputs).
    new_body, out_dims = batch_closed(body, in_dims, ctx,
                                      out_dims_wanted=[0 if b else None for b in k_b] + [None] * n_ys)
    consts, carry, xs = _split3(list(args), num_consts, num_carry)
    consts = [move_dim(c, d, 0, ctx.size) if b else c for c, d, b in zip(consts, c_d, c_b)]
    carry = [move_dim(k, d, 0, ctx.size) if b else k for k, d, b in zip(carry, k_d, k_b)]
    xs = [move_dim(x, d, 1, ctx.size) if d is not None else x for x, d in zip(xs, x_d)]  # axis 0 is scanned
    b_consts = list(new_body.consts)
    outs = scan_p.bind(*b_consts, *consts, *carry, *xs, body=call_body(new_body),
                       num_consts=len(b_consts) + num_consts, num_carry=num_carry, length=length, reverse=reverse,
                       unroll=unroll)
    return outs, [0 if b else None for b in k_b] + [None if d is None else 1 for d in out_dims[num_carry:]]


def _scan_locate(eqn, args, run):
    """debug_nans' op-by-op re-run: the loop in Python, its body equation by equation (the slicing of xs and
    stacking of ys are not checked: they only move values)."""
    from ..driver.nan_check import unchecked
    p = eqn.params
    body, n_consts, n_carry, length = p["body"], p["num_consts"], p["num_carry"], p["length"]
    consts, carry, xs = _split3(args, n_consts, n_carry)
    ys_steps = []
    for step in range(length):
        i = length - 1 - step if p["reverse"] else step
        with unchecked():
            x_i = [lax.index_in_dim(x, i, 0, keepdims=False) for x in xs]
        outs = run(body.ir, body.consts, [*consts, *carry, *x_i])
        carry, ys = outs[:n_carry], outs[n_carry:]
        ys_steps.append(ys)
    if p["reverse"]:
        ys_steps.reverse()
    stacked = []
    with unchecked():
        for k, aval in enumerate(eqn.outputs[n_carry:]):
            aval = aval.aval
            if length == 0:
                stacked.append(lax.full(aval.shape, 0, aval.dtype))
            else:
                stacked.append(lax.concatenate([lax.expand_dims(ys[k], (0,)) for ys in ys_steps], 0))
    return list(carry) + stacked


def _scan_save_inside(eqn: Eqn, save_body: Callable):
    """Under a checkpoint policy (kiln.checkpoint): the forward scan also returns, stacked as extra ys, the values
    of its body that the policy saves; the recompute scan reads them as extra xs instead of computing them."""
    body: ClosedIR = eqn.params["body"]
    inner = save_body(body.ir)
    if inner is None:
        return None
    forward, recompute, saved = inner
    length = eqn.params["length"]
    stacked = [Var(v.aval.update(shape=(length,) + v.aval.shape)) for v in saved]
    return (Eqn(scan_p, eqn.inputs, list(eqn.outputs) + stacked,
                {**eqn.params, "body": ClosedIR(forward, body.consts)}, eqn.source),
            Eqn(scan_p, list(eqn.inputs) + stacked, eqn.outputs,
                {**eqn.params, "body": ClosedIR(recompute, body.consts)}, eqn.source),
            stacked)


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..ad.remat import save_inside_rules
    save_inside_rules[scan_p] = _scan_save_inside
    from ..driver.nan_check import locate_rules
    locate_rules[scan_p] = _scan_locate
    from ..ad.partial_eval import pe_rules
    from ..ad.transpose import transpose_rules
    from ..batching.core import batch_rules
    jvp_rules[scan_p] = _scan_jvp
    pe_rules[scan_p] = _scan_partial_eval
    transpose_rules[scan_p] = _scan_transpose
    batch_rules[scan_p] = _scan_batch


_register_rules()
