"""Batching rules of the elementwise family (``lax/elementwise.py``): operands meet at one batch
dimension; ``select`` with a scalar predicate broadcasts it."""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import elementwise as ew
from ..lax.sorting import clamp_p
from .core import BatchContext, batch_rules, common_dim, move_dim, operand_ndim, scalar_aware


def _same_batching(args, dims, scalar_like) -> int | None:
    """The batch dimension every operand has when all are batched alike (one shape, one batch dimension), else
    None. Scalars, and unbatched broadcasts of one (``scalar_like``), do not count: they broadcast in any case."""
    first = next(i for i, d in enumerate(dims) if d is not None)
    shape, d = abstractify(args[first]).shape, dims[first]
    for a, bd, scalar in zip(args, dims, scalar_like or [False] * len(args)):
        aval = abstractify(a)
        if aval.ndim and not scalar and (bd != d or aval.shape != shape):
            return None
    return d


def _operand_at(x, bd, d, size: int, scalar_like: bool):
    """``x`` with its batch dimension at ``d``. An unbatched array gets it in two broadcasts, as JAX's (its rule
    gives the operand a batch dimension of size 1 that the primitive's implicit broadcasting widens): XLA's
    simplifier treats ``a / broadcast(broadcast(b))`` unlike ``a / broadcast(b)`` (it rewrote one into a product
    with a reciprocal and rounded differently; found porting JAX's advi example)."""
    if bd is None and not scalar_like and operand_ndim(x):
        shape = abstractify(x).shape
        ones = move_dim(x, None, d, 1)
        return lax.broadcast_in_dim(ones, shape[:d] + (size,) + shape[d:], tuple(range(len(shape) + 1)))
    return move_dim(x, bd, d, size)


def register_elementwise(prim):
    def rule(ctx: BatchContext, args, dims, scalar_like=(), **params):
        # As JAX's rule: operands batched alike stay where they are; otherwise (an unbatched array operand, batch
        # dimensions that differ, a scalar predicate of select) every operand's batch dimension goes to the front.
        # The place decides which transposes XLA sees, hence how it fuses the program and rounds its results.
        d = _same_batching(args, dims, scalar_like)
        d = 0 if d is None else d
        scalar_like = scalar_like or [False] * len(args)
        args = [_operand_at(a, bd, d, ctx.size, s) for a, bd, s in zip(args, dims, scalar_like)]
        return prim.bind(*args, **params), d
    batch_rules[prim] = rule
    scalar_aware.add(prim)


for _p in [*ew.unary_prims.values(), *ew.binary_prims.values(), ew.round_p, ew.convert_p, ew.stop_gradient_p,
           clamp_p]:
    register_elementwise(_p)


def _select_rule(ctx, args, dims):
    pred, a, b = args
    pd, ad, bd = dims
    case_rank = operand_ndim(a) - (ad is not None)
    if operand_ndim(pred) - (pd is not None) == case_rank:
        d = common_dim(args, dims)
        return ew.select_p.bind(*[move_dim(x, xd, d, ctx.size) for x, xd in zip(args, dims)]), d
    # A scalar predicate with array cases: the cases meet at one batch dimension; a batched
    # predicate is broadcast to their shape along it.
    d = ad if ad is not None else bd if bd is not None else 0
    a, b = move_dim(a, ad, d, ctx.size), move_dim(b, bd, d, ctx.size)
    if pd is not None:
        pred = lax.broadcast_in_dim(pred, abstractify(a).shape, (d,))
    return ew.select_p.bind(pred, a, b), d


batch_rules[ew.select_p] = _select_rule
