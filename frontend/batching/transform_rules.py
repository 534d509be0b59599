"""Batching rules of the transformation primitives: remat (and checkpoint_name's name) and the custom-derivative
calls.

A batched custom_jvp/custom_vjp call stays a custom call: its body is the batched body and its rule
is the user's rule under vmap, so differentiating a vmapped function still uses the user's rule.
The batched rules take zero tangents and cotangents symbolically (they are not vmapped): the user's rule gets
them per example as its ``symbolic_zeros`` setting says.
"""
from __future__ import annotations

from typing import Sequence

from ..ad import custom
from ..ad.remat import name_p, remat_p
from ..ad.symbolic_zeros import SymbolicZero
from ..ad.tangents import Zero, is_differentiable_dtype, tangent_aval, zeros_like_aval
from ..core import tree_util
from ..core.call import call_body
from ..core.tracing import abstractify
from .api import vmap
from .core import batch_closed, batch_rules, move_dim


def _remat_batch(ctx, args, dims, *, body, prevent_cse, name, policy):
    new, out_dims = batch_closed(body, dims, ctx)
    return remat_p.bind(*args, body=call_body(new), prevent_cse=prevent_cse, name=name, policy=policy), out_dims


def _name_batch(ctx, args, dims, *, name):
    return name_p.bind(args[0], name=name), dims[0]


batch_rules[remat_p] = _remat_batch
batch_rules[name_p] = _name_batch


def _all_at_front(ctx, args, dims):
    return [move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]


def _flat_call(n_in: int, n_out: int, owner) -> custom._Call:
    """A rule record over flat tuples of arrays (the batched rules work on flat values)."""
    return custom._Call(owner, [], tree_util.tree_structure(tuple(range(n_in))),
                        tree_util.tree_structure(tuple(range(n_out))))


def _unbatched_zeros(values: tuple) -> list:
    """Per value batched along axis 0: None where it is an array (vmapped), the Zero of one example where it is a
    SymbolicZero (not vmapped)."""
    return [Zero(v.aval.update(shape=v.aval.shape[1:])) if type(v) is SymbolicZero else None for v in values]


def _with_zeros(zeros: list, nonzero: Sequence) -> list:
    """``zeros`` (see _unbatched_zeros) with the arrays ``nonzero`` in the places of the Nones."""
    it = iter(nonzero)
    return [next(it) if z is None else z for z in zeros]


def _arrays(values: tuple) -> tuple:
    return tuple(v for v in values if type(v) is not SymbolicZero)


class _BatchedJVP:
    """The user's custom_jvp rule, vmapped over axis 0 of every primal and nonzero tangent."""

    symbolic_zeros = True  # zero tangents stay symbolic (see the module's docstring)

    def __init__(self, rule: custom._Call, body, name: str):
        self.rule, self.body, self.name = rule, body, name

    def jvp(self, primals: tuple, tangents: tuple):
        rule, body, name = self.rule, self.body, self.name
        zeros, out_nonzero = _unbatched_zeros(tangents), []

        def per_example(p, t):
            outs, touts = custom._custom_jvp_rule(list(p), _with_zeros(zeros, t), body=body, rule=rule, name=name)
            out_nonzero[:] = [not isinstance(x, Zero) for x in touts]
            return tuple(outs), tuple(x for x in touts if not isinstance(x, Zero))
        outs, touts = vmap(per_example)(tuple(primals), _arrays(tangents))
        touts = iter(touts)
        return outs, tuple(next(touts) if nz else SymbolicZero(tangent_aval(abstractify(o)))
                           for o, nz in zip(outs, out_nonzero))


def _custom_jvp_batch(ctx, args, dims, *, body, rule, name):
    args = _all_at_front(ctx, args, dims)
    n_out = len(body.out_avals)
    new, _ = batch_closed(body, [0] * len(args), ctx, out_dims_wanted=[0] * n_out)
    batched_rule = _flat_call(len(args), n_out, _BatchedJVP(rule, body, name))
    outs = custom.custom_jvp_call_p.bind(*args, body=call_body(new), rule=batched_rule, name=name)
    return outs, [0] * n_out


batch_rules[custom.custom_jvp_call_p] = _custom_jvp_batch


class _BatchedVJP:
    """The user's fwd and bwd, vmapped over axis 0 (residuals are batched along axis 0 too)."""

    nondiff_argnums = ()  # as an owner of custom_vjp rules: takes every argument flattened, all differentiable
    symbolic_zeros = True  # fwd learns which inputs are perturbed; zero cotangents stay symbolic

    def __init__(self, rule: custom._Call, name: str, n_consts: int, example_avals: list):
        self.rule, self.name, self.n_consts, self.example_avals = rule, name, n_consts, example_avals
        self.res_tree = None

    def fwd(self, *primals):
        perturbed = [p.perturbed for p in primals[self.n_consts:]]

        def per_example(*p):
            out, res, self.res_tree = custom._fwd_outputs(self.rule, p, None, self.name, perturbed)
            return tuple(out), tuple(res)
        outs, res = vmap(per_example)(*[p.value for p in primals])
        return tuple(outs), tuple(res)

    def bwd(self, res: tuple, cts: tuple):
        # The user's bwd behind the transpose rule of one example's custom_vjp_lin (its checks, symbolic zeros).
        kept = tuple(is_differentiable_dtype(a.dtype) for a in self.example_avals)
        lin = custom._Lin(self.rule, self.res_tree, self.name, tuple(self.example_avals), kept)
        zeros = _unbatched_zeros(cts)

        def per_example(r, c):
            in_cts = custom._custom_vjp_lin_transpose(_with_zeros(zeros, c), *r, *([None] * sum(kept)), rule=lin,
                                                      num_res=len(r), out_avals=())[len(r):]
            # (an integer argument's cotangent is no output of the transpose rule; it is dropped anyway)
            full = _with_zeros([None if k else Zero(a) for a, k in zip(self.example_avals, kept)], in_cts)
            return tuple(zeros_like_aval(a) if x is None or isinstance(x, Zero) else x
                         for x, a in zip(full, self.example_avals))
        # The call's leading inputs are the traced function's constants: they get no cotangent.
        return (None,) * self.n_consts + tuple(vmap(per_example)(tuple(res), _arrays(cts)))


def _custom_vjp_batch(ctx, args, dims, *, body, rule, name):
    args = _all_at_front(ctx, args, dims)
    n_out = len(body.out_avals)
    n_consts = len(args) - rule.in_tree.num_leaves
    new, _ = batch_closed(body, [0] * len(args), ctx, out_dims_wanted=[0] * n_out)
    owner = _BatchedVJP(rule, name, n_consts, list(body.in_avals[n_consts:]))
    outs = custom.custom_vjp_call_p.bind(*args, body=call_body(new), rule=_flat_call(len(args), n_out, owner),
                                         name=name)
    return outs, [0] * n_out


batch_rules[custom.custom_vjp_call_p] = _custom_vjp_batch


class _BatchedLin:
    """The user's bwd behind a batched ``custom_vjp_lin``: the original transpose rule, vmapped over
    the residuals (batched ones along axis 0) and the output cotangents (axis 0)."""

    symbolic_zeros = True  # zero cotangents stay symbolic (see the module's docstring)

    def __init__(self, lin: custom._Lin, num_res: int, res_dims: list, out_avals: tuple):
        self.lin, self.num_res, self.res_dims, self.out_avals = lin, num_res, res_dims, out_avals

    def bwd(self, res: tuple, cts: tuple):
        lin, num_res = self.lin, self.num_res
        zeros = _unbatched_zeros(cts)
        kept_avals = [a for a, k in zip(lin.in_avals, lin.kept) if k]

        def per_example(r, c):
            in_cts = custom._custom_vjp_lin_transpose(_with_zeros(zeros, c), *r, *([None] * len(kept_avals)),
                                                      rule=lin, num_res=num_res, out_avals=self.out_avals)[num_res:]
            return tuple(zeros_like_aval(a) if x is None else x for x, a in zip(in_cts, kept_avals))
        return tuple(vmap(per_example, in_axes=(tuple(self.res_dims), 0))(tuple(res), _arrays(cts)))


def _custom_vjp_lin_batch(ctx, args, dims, *, rule, num_res, out_avals):
    # Residuals keep being unbatched where they are; tangents and outputs are batched along axis 0.
    res = [a if d is None else move_dim(a, d, 0, ctx.size) for a, d in zip(args[:num_res], dims[:num_res])]
    res_dims = [None if d is None else 0 for d in dims[:num_res]]
    tangents = _all_at_front(ctx, args[num_res:], dims[num_res:])
    batched = lambda a: a.update(shape=(ctx.size,) + a.shape)  # noqa: E731
    owner = _BatchedLin(rule, num_res, res_dims, out_avals)
    n_in, n_out = len(tangents), len(out_avals)
    call = custom._Call(owner, [], tree_util.tree_structure(tuple(range(n_in))),
                        tree_util.tree_structure(tuple(range(n_out))))
    new_rule = custom._Lin(call, tree_util.tree_structure(tuple(range(num_res))), rule.name,
                           tuple(batched(a) for a, k in zip(rule.in_avals, rule.kept) if k))
    outs = custom.custom_vjp_lin_p.bind(*res, *tangents, rule=new_rule, num_res=num_res,
                                        out_avals=tuple(batched(a) for a in out_avals))
    return outs, [0] * n_out


batch_rules[custom.custom_vjp_lin_p] = _custom_vjp_lin_batch
