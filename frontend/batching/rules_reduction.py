"""Batching rules of the reduction family (``lax/reduction.py``): reductions, arg-reductions and
``dot_general`` (the batch dimension becomes a dot batch dimension)."""
from __future__ import annotations

from ..lax import reduction as red
from .core import batch_rules, operand_ndim, shift_axes


def _reduce_rule(prim):
    def rule(ctx, args, dims, *, axes):
        (x,), (d,) = args, dims
        out_d = d - sum(1 for a in axes if a < d)
        return prim.bind(x, axes=shift_axes(axes, d)), out_d
    batch_rules[prim] = rule


for _p in red.reduce_prims.values():
    _reduce_rule(_p)


def _arg_rule(prim):
    def rule(ctx, args, dims, *, axis, index_dtype):
        (x,), (d,) = args, dims
        out_d = d - (axis < d)
        return prim.bind(x, axis=axis + (axis >= d), index_dtype=index_dtype), out_d
    batch_rules[prim] = rule


_arg_rule(red.argmax_p)


_arg_rule(red.argmin_p)


def _dot_general_rule(ctx, args, dims, *, dimension_numbers, precision, preferred_element_type):
    (x, y), (xd, yd) = args, dims
    (xc, yc), (xb, yb) = dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    if xd is not None and yd is not None:
        # Both batched: the vmapped dimension becomes one more dot_general batch dimension.
        x_shift = lambda ax: tuple(a + (a >= xd) for a in ax)  # noqa: E731
        y_shift = lambda ax: tuple(a + (a >= yd) for a in ax)  # noqa: E731
        dn = ((x_shift(xc), y_shift(yc)), ((xd,) + x_shift(xb), (yd,) + y_shift(yb)))
        return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), 0
    if xd is not None:
        # The vmapped dimension is one more free dimension of the lhs.
        xs = lambda ax: tuple(a + (a >= xd) for a in ax)  # noqa: E731
        dn = ((xs(xc), yc), (xs(xb), yb))
        x_free = [i for i in range(operand_ndim(x)) if i not in dn[0][0] and i not in dn[1][0]]
        return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), len(xb) + x_free.index(xd)
    ys = lambda ax: tuple(a + (a >= yd) for a in ax)  # noqa: E731
    dn = ((xc, ys(yc)), (xb, ys(yb)))
    x_free = [i for i in range(operand_ndim(x)) if i not in xc and i not in xb]
    y_free = [i for i in range(operand_ndim(y)) if i not in dn[0][1] and i not in dn[1][1]]
    return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), len(xb) + len(x_free) + y_free.index(yd)


batch_rules[red.dot_general_p] = _dot_general_rule
