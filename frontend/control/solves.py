"""Differentiable solvers: ``custom_linear_solve`` and ``custom_root`` (as ``jax.lax``).

``custom_linear_solve(matvec, b, solve, transpose_solve)`` is the ``linear_solve`` primitive: its
value is ``solve(matvec, b)``, but it is differentiated implicitly rather than through the solver
(which may be an iterative method with loops):

- forward mode: from ``A x = b``, ``dx = solve(A, db - dA x)`` (``dA x``: the JVP of ``matvec``
  in the values it closes over, at the solution);
- reverse mode: the solve is linear in ``b``, and its transpose is the transposed solve:
  ``transpose_solve(A^T, ct)`` with ``A^T`` the transpose of ``matvec`` (``matvec`` itself when
  ``symmetric``).

Every function (``matvec``, its transpose, ``solve``, ``transpose_solve``) is traced once into an IR
whose inputs are all the values any of them closes over, then ``b``; those values are the
primitive's leading operands, so derivatives and batching reach them. Lowering inlines the solve.

``custom_root(f, x0, solve, tangent_solve)`` finds ``x`` with ``f(x) = 0`` by ``solve(f, x0)`` and
differentiates by the implicit function theorem, ``dx = -tangent_solve(J_x f, J_theta f dtheta)``,
through :class:`kiln.custom_jvp`.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import lax
from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.ir import ClosedIR
from ..core.primitive import Primitive
from ..core.tracing import abstractify, eval_ir, materialize, trace_to_ir
from .common import ControlFlowError, fun_name, trace_callable


def _linear_solve_rule(*avals: ShapedArray, solve: ClosedIR, matvec: ClosedIR, vecmat: ClosedIR | None,
                       transpose_solve: ClosedIR | None, num_b: int):
    return solve.out_avals


# ``solve`` is the body lowering inlines: it takes all the operands (closed-over values, then b).
linear_solve_p = Primitive("linear_solve", _linear_solve_rule, multiple_results=True, inline_param="solve")


def _check_like(what: str, got_tree, got_avals, tree, avals) -> None:
    if got_tree != tree:
        raise ControlFlowError(f"kiln.lax.custom_linear_solve: {what} must return the structure of b ({tree}), "
                               f"got {got_tree}")
    for g, e in zip(got_avals, avals):
        if g.shape != e.shape or g.dtype != e.dtype:
            raise ControlFlowError(f"kiln.lax.custom_linear_solve: {what} must return arrays like b "
                                   f"({e.str_short()}), got {g.str_short()}")


def _full_signature(parts: list[ClosedIR], b_avals: list[ShapedArray]) -> tuple[list[ClosedIR], list]:
    """IRs over (every part's constants..., b...), each reading its own constants; and those constants."""
    consts = [c for p in parts if p is not None for c in p.consts]
    const_avals = [abstractify(c) for c in consts]
    out, start = [], 0
    for p in parts:
        if p is None:
            out.append(None)
            continue
        lo, hi = start, start + len(p.consts)
        start = hi

        def fn(*args, p=p, lo=lo, hi=hi):
            return eval_ir(p.ir, list(args[lo:hi]), list(args[len(consts):]))
        closed, _ = trace_to_ir(fn, const_avals + list(b_avals), name="linear_solve")
        out.append(closed)
    return out, consts


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False):
    """``solve(matvec, b)``, differentiated implicitly: see the module docstring.

    ``matvec(x)`` applies a linear operator ``A`` to a pytree like ``b``; ``solve(matvec, b)`` returns
    ``x`` with ``A x = b`` (and auxiliary data, with ``has_aux``). ``transpose_solve(vecmat, b)`` solves
    with ``A^T``; it is needed for reverse-mode derivatives, unless ``symmetric`` (then ``solve`` is
    used).
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    leaves, tree = tree_util.tree_flatten(b)
    leaves = [materialize(x) for x in leaves]
    b_avals = [abstractify(x) for x in leaves]
    args_tree = tree_util.tree_structure((b,))  # trace_callable calls fun(*args)

    mv_ir, mv_tree = trace_callable(matvec, args_tree, b_avals, fun_name(matvec))
    _check_like("matvec", mv_tree, mv_ir.out_avals, tree, b_avals)

    def matvec_flat(*xs):
        return eval_ir(mv_ir.ir, mv_ir.consts, xs)

    def as_tree_fn(flat_fn):
        return lambda x: tree_util.tree_unflatten(tree, list(flat_fn(*tree_util.tree_leaves(x))))

    def traced_solve(fn, op, what):
        closed, out_tree = trace_callable(lambda x: fn(op, x), args_tree, b_avals, fun_name(fn))
        if has_aux:
            pair = tree_util.tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ControlFlowError(f"kiln.lax.custom_linear_solve: with has_aux=True, {what} must return a "
                                       "pair (solution, aux)")
            sol_tree = tree_util.tree_structure(pair[0])
            _check_like(what, sol_tree, closed.out_avals[:sol_tree.num_leaves], tree, b_avals)
        else:
            _check_like(what, out_tree, closed.out_avals, tree, b_avals)
        return closed, out_tree

    solve_ir, out_tree = traced_solve(solve, as_tree_fn(matvec_flat), "solve")
    vecmat_ir = tsolve_ir = None
    if transpose_solve is not None:
        if symmetric:
            vecmat_ir = mv_ir
        else:
            from ..ad.api import vjp
            zeros = [lax.full_like(x, 0) for x in leaves]

            def vecmat_flat(*cts):
                _, pullback = vjp(lambda *xs: list(matvec_flat(*xs)), *zeros)
                return pullback(list(cts))
            vecmat_ir, _ = trace_to_ir(vecmat_flat, b_avals, name="vecmat")
        vm_flat = (lambda *xs: eval_ir(vecmat_ir.ir, vecmat_ir.consts, xs))
        tsolve_ir, _ = traced_solve(transpose_solve, as_tree_fn(vm_flat), "transpose_solve")
    (solve_f, mv_f, vm_f, ts_f), consts = _full_signature([solve_ir, mv_ir, vecmat_ir, tsolve_ir], b_avals)
    outs = linear_solve_p.bind(*consts, *leaves, solve=solve_f, matvec=mv_f, vecmat=vm_f, transpose_solve=ts_f,
                               num_b=len(leaves))
    return tree_util.tree_unflatten(out_tree, outs)


# -- derivative and batching rules -------------------------------------------------------------------

def _linear_solve_jvp(primals, tangents, **params):
    from ..ad.jvp import jvp_eval
    from ..ad.tangents import Zero, add_tangents, tangent_aval
    n = params["num_b"]
    consts = list(primals[:-n])
    outs = linear_solve_p.bind(*primals, **params)
    xs = outs[:n]
    # rhs = db - dA x, with dA x the JVP of matvec in its constants at the solution.
    mv = params["matvec"]
    _, dax = jvp_eval(mv.ir, mv.consts, consts + xs, list(tangents[:-n]) + [Zero(tangent_aval(abstractify(x)))
                                                                          for x in xs])
    rhs = [add_tangents(db, dx if isinstance(dx, Zero) else lax.neg(dx)) for db, dx in zip(tangents[-n:], dax)]
    touts = [Zero(tangent_aval(abstractify(o))) for o in outs]
    if not all(isinstance(r, Zero) for r in rhs):
        from ..ad.tangents import instantiate
        dxs = linear_solve_p.bind(*consts, *[instantiate(r) for r in rhs], **params)
        touts[:n] = dxs[:n]
    return outs, touts


def _linear_solve_transpose(cts, *args, solve, matvec, vecmat, transpose_solve, num_b):
    from ..ad.tangents import Zero, instantiate
    from ..ad.transpose import is_undefined
    n = num_b
    consts = args[:-n]
    if any(is_undefined(c) for c in consts):
        raise TypeError("kiln: internal error: linear_solve is linear in b only")
    if transpose_solve is None:
        raise TypeError("kiln.lax.custom_linear_solve: reverse-mode differentiation needs transpose_solve (or "
                        "symmetric=True for a symmetric operator)")
    cts_x = list(cts[:n])
    if all(isinstance(c, Zero) for c in cts_x):
        return [None] * len(args)
    outs = linear_solve_p.bind(*consts, *[instantiate(c) for c in cts_x], solve=transpose_solve, matvec=vecmat,
                               vecmat=matvec, transpose_solve=solve, num_b=n)
    return [None] * len(consts) + list(outs[:n])


def _batch_ir(closed: ClosedIR | None, avals: list[ShapedArray], size: int) -> ClosedIR | None:
    """``closed`` applied to a batch (every input and output batched along axis 0)."""
    if closed is None:
        return None
    from ..batching.api import vmap

    def fn(*args):
        return vmap(lambda *a: eval_ir(closed.ir, closed.consts, a))(*args)
    batched = [ShapedArray((size,) + a.shape, a.dtype, a.weak_type) for a in avals]
    out, _ = trace_to_ir(fn, batched, name="batched")
    return out


def _linear_solve_batch(ctx, args, dims, **params):
    from ..batching.core import move_dim
    args = [move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
    avals = [ShapedArray(abstractify(a).shape[1:], abstractify(a).dtype) for a in args]
    new = {k: _batch_ir(params[k], avals, ctx.size) for k in ("solve", "matvec", "vecmat", "transpose_solve")}
    outs = linear_solve_p.bind(*args, num_b=params["num_b"], **new)
    return outs, [0] * len(outs)


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..ad.transpose import transpose_rules
    from ..batching.core import batch_rules
    jvp_rules[linear_solve_p] = _linear_solve_jvp
    transpose_rules[linear_solve_p] = _linear_solve_transpose
    batch_rules[linear_solve_p] = _linear_solve_batch


_register_rules()


# -- custom_root --------------------------------------------------------------------------------------

def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly.

    ``f`` maps a pytree like ``initial_guess`` to one of the same structure; ``solve(f, x0)`` returns
    ``x`` with ``f(x) = 0`` (and auxiliary data, with ``has_aux``). Derivatives do not go through
    ``solve``: with ``g`` the linearisation of ``f`` at the root, ``tangent_solve(g, y)`` must solve
    ``g(x) = y`` (e.g. ``lambda g, y: y / g(1.0)`` for a scalar root). Values ``f`` closes over are
    differentiated.
    """
    from ..ad.api import jvp, linearize
    from ..ad.custom import custom_jvp
    leaves, tree = tree_util.tree_flatten(initial_guess)
    leaves = [materialize(x) for x in leaves]
    avals = [abstractify(x) for x in leaves]
    args_tree = tree_util.tree_structure((initial_guess,))
    f_ir, f_tree = trace_callable(f, args_tree, avals, fun_name(f))
    if f_tree != tree:
        raise ControlFlowError(f"kiln.lax.custom_root: f must return the structure of initial_guess ({tree}), got "
                               f"{f_tree}")

    def as_tree_fn(flat_fn):
        return lambda x: tree_util.tree_unflatten(tree, list(flat_fn(*tree_util.tree_leaves(x))))

    f_now = as_tree_fn(lambda *xs: eval_ir(f_ir.ir, f_ir.consts, xs))
    # solve and tangent_solve are traced now, so that what they close over becomes explicit operands.
    solve_ir, s_tree = trace_callable(lambda x: solve(f_now, x), args_tree, avals, fun_name(solve))
    sol_tree = s_tree
    if has_aux:
        pair = tree_util.tree_unflatten(s_tree, list(range(s_tree.num_leaves)))
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ControlFlowError("kiln.lax.custom_root: with has_aux=True, solve must return a pair (solution, aux)")
        sol_tree = tree_util.tree_structure(pair[0])
    if sol_tree != tree:
        raise ControlFlowError(f"kiln.lax.custom_root: solve must return the structure of initial_guess ({tree}), "
                               f"got {sol_tree}")

    def lin_and_solve(*xs_and_b):
        xs, rhs = xs_and_b[:len(avals)], xs_and_b[len(avals):]
        _, g_flat = linearize(lambda *x: eval_ir(f_ir.ir, f_ir.consts, x), *xs)
        out = tangent_solve(as_tree_fn(g_flat), tree_util.tree_unflatten(tree, list(rhs)))
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise ControlFlowError(f"kiln.lax.custom_root: tangent_solve must return the structure of "
                                   f"initial_guess ({tree}), got {out_tree}")
        return out_leaves
    ls_ir, _ = trace_to_ir(lin_and_solve, avals + avals, name=fun_name(tangent_solve))
    n_f, n_s, n_l = len(f_ir.consts), len(solve_ir.consts), len(ls_ir.consts)

    def primal(*args):
        s_c, xs = args[n_f:n_f + n_s], args[n_f + n_s + n_l:]
        return tuple(eval_ir(solve_ir.ir, list(s_c), list(xs)))

    root = custom_jvp(primal)

    @root.defjvp
    def _root_jvp(primals, tangents):
        f_c, l_c = primals[:n_f], primals[n_f + n_s:n_f + n_s + n_l]
        out = primal(*primals)
        sol = list(out[:tree.num_leaves])
        # dx = -tangent_solve(g, J_theta f . dtheta), g = J_x f at the root
        if n_f:
            _, rhs = jvp(lambda *c: eval_ir(f_ir.ir, list(c), sol), tuple(f_c), tuple(tangents[:n_f]))
        else:
            rhs = [lax.full_like(x, 0) for x in sol]
        dx = [lax.neg(d) for d in eval_ir(ls_ir.ir, list(l_c), sol + list(rhs))]
        aux_t = [lax.full_like(a, 0) if _inexact(a) else a for a in out[tree.num_leaves:]]
        return out, tuple(dx + aux_t)

    out = root(*f_ir.consts, *solve_ir.consts, *ls_ir.consts, *leaves)
    return tree_util.tree_unflatten(s_tree, list(out))


def _inexact(x) -> bool:
    from ..core import dtypes
    return dtypes.is_inexact(abstractify(x).dtype)
