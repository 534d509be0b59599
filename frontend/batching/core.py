"""Batching: evaluate an IR on values that carry an extra (batch) dimension.

``batch_rules[prim](ctx, args, dims, **params) -> (out, out_dim)`` (lists for primitives with
several results). ``dims[i]`` is the position of ``args[i]``'s batch dimension, or None when that
argument is the same for every batch element. Rules keep the batch dimension where it is whenever
they can, so that batching adds no transposes.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import lax
from ..core import caches
from ..core.avals import ShapedArray
from ..core.call import bind_call, call_p
from ..core.errors import KilnError
from ..core.ir import IR, ClosedIR, Literal, Var
from ..core.primitive import Primitive
from ..core.source_info import at
from ..core.tracing import abstractify, materialize, trace_to_ir

batch_rules: dict[Primitive, Callable] = {}
# Elementwise primitives, whose rules also get ``scalar_like``: which operands are unbatched broadcasts of a
# scalar (kiln's IR spells out the broadcast of ``x * 2.0``'s 2.0, which JAX's leaves rank-0 for lax to broadcast).
scalar_aware: set[Primitive] = set()
# Primitives batched even when no operand is (they observe the axis itself, e.g. axis_index).
always_batched: set[Primitive] = set()


class BatchingError(KilnError, ValueError):
    """A primitive without a batching rule, or an inconsistent batch."""


class MissingBatchingRule(BatchingError, NotImplementedError):
    """A primitive without a batching rule (a ``NotImplementedError`` too, as JAX's)."""


@dataclass(frozen=True)
class BatchContext:
    """What rules may need to know about the batch: its size and the vmap's axis name."""

    size: int
    name: Any = None


def move_dim(x: Any, src: int | None, dst: int, size: int) -> Any:
    """``x`` with its batch dimension at ``dst`` (broadcast in if ``x`` is unbatched)."""
    if src is None:
        aval = abstractify(x)
        shape = aval.shape[:dst] + (size,) + aval.shape[dst:]
        dims = tuple(i if i < dst else i + 1 for i in range(aval.ndim))
        return lax.broadcast_in_dim(materialize(x), shape, dims)
    if src == dst:
        return x
    ndim = abstractify(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, perm)


def batch_eval(ir: IR, consts: Sequence[Any], args: Sequence[Any], dims: Sequence[int | None],
               ctx: BatchContext) -> tuple[list[Any], list[int | None]]:
    """Evaluate ``ir`` on batched ``args``; returns the outputs and their batch dimensions."""
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    denv: dict[Var, int | None] = {v: None for v in ir.constvars}
    env.update(zip(ir.invars, args))
    denv.update(zip(ir.invars, dims))

    def read(a):
        return (a, None) if isinstance(a, Literal) else (env[a], denv[a])

    scalar_broadcasts: set[Var] = set()  # unbatched results of broadcast_in_dim of a rank-0 value
    for eqn in ir.eqns:
        with at(eqn.source):  # equations it creates keep eqn's location
            vals, ds = zip(*[read(a) for a in eqn.inputs]) if eqn.inputs else ((), ())
            observes_axis = eqn.prim in always_batched and _names_axis(eqn.params, ctx)
            if all(d is None for d in ds) and not observes_axis:
                outs = eqn.prim.bind(*vals, **eqn.params)
                outs = outs if eqn.prim.multiple_results else [outs]
                out_dims = [None] * len(outs)
            else:
                rule = batch_rules.get(eqn.prim)
                if rule is None:
                    raise MissingBatchingRule(f"kiln.vmap: batching of primitive {eqn.prim.name!r} is not implemented: "
                                              "give it a rule with kiln.interpreters.batching.primitive_batchers"
                                              "[primitive] = rule")
                if eqn.prim in scalar_aware:
                    scalar_like = [a in scalar_broadcasts for a in eqn.inputs]
                    outs, out_dims = rule(ctx, list(vals), list(ds), scalar_like=scalar_like, **eqn.params)
                else:
                    outs, out_dims = rule(ctx, list(vals), list(ds), **eqn.params)
                if not eqn.prim.multiple_results:
                    outs, out_dims = [outs], [out_dims]
        env.update(zip(eqn.outputs, outs))
        denv.update(zip(eqn.outputs, out_dims))
        if eqn.prim.name == "broadcast_in_dim" and not eqn.inputs[0].aval.shape and out_dims[0] is None:
            scalar_broadcasts.add(eqn.outputs[0])
    outs, out_dims = zip(*[read(a) for a in ir.outvars]) if ir.outvars else ((), ())
    return [materialize(o) for o in outs], list(out_dims)


def _names_axis(params: dict, ctx: BatchContext) -> bool:
    name = params.get("axis_name")
    return name == ctx.name or (isinstance(name, tuple) and ctx.name in name)


_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_memo.clear)


def batch_closed(closed: ClosedIR, dims: Sequence[int | None], ctx: BatchContext,
                 out_dims_wanted: Sequence[int | None] | None = None) -> tuple[ClosedIR, list[int | None]]:
    """The batched IR of ``closed`` for argument batch dims ``dims`` (memoised per IR and dims).

    With ``out_dims_wanted``, the outputs are moved there (None: left where the rules put them).
    """
    key = (tuple(dims), ctx, None if out_dims_wanted is None else tuple(out_dims_wanted))
    memo = _memo.setdefault(closed, {})
    if key in memo:
        return memo[key]
    in_avals = [_batched_aval(a, d, ctx.size) for a, d in zip(closed.in_avals, dims)]
    out_dims: list[int | None] = []

    def fun(*args):
        outs, ods = batch_eval(closed.ir, closed.consts, args, dims, ctx)
        if out_dims_wanted is not None:
            outs = [o if w is None and d is None else move_dim(o, d, w if w is not None else 0, ctx.size)
                    for o, d, w in zip(outs, ods, out_dims_wanted)]
            ods = [None if (w is None and d is None) else (w if w is not None else 0)
                   for d, w in zip(ods, out_dims_wanted)]
        out_dims.extend(ods)
        return outs

    new, _ = trace_to_ir(fun, in_avals, name="vmap")
    memo[key] = (new, out_dims)
    return new, out_dims


def _batched_aval(aval: ShapedArray, d: int | None, size: int) -> ShapedArray:
    if d is None:
        return aval
    return aval.update(shape=aval.shape[:d] + (size,) + aval.shape[d:])


def _call_batch(ctx, args, dims, *, ir: ClosedIR, name: str, inline: bool = False):
    new, out_dims = batch_closed(ir, dims, ctx)
    return bind_call(new, args, f"vmap({name})", inline), out_dims


batch_rules[call_p] = _call_batch


def operand_ndim(x) -> int:
    return abstractify(x).ndim


def common_dim(args, dims) -> int:
    """Where n-ary operands meet: the first batched operand's dimension."""
    return next(d for d in dims if d is not None)


def shift_axes(axes, d: int) -> tuple:
    """Operand axes renumbered for an operand whose batch dimension ``d`` is inserted among them."""
    return tuple(a + (a >= d) for a in axes)
