"""``kiln.vmap``: vectorise a function over a batch axis by batching its IR."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .. import tree_util
from ..tracing import abstractify, trace_to_ir
from . import rules  # noqa: F401  (registers the batching rules)
from .collectives import axis_names_bound, axis_size_bound
from .core import BatchContext, batch_eval, move_dim


class VmapError(ValueError):
    """Inconsistent batch sizes, mismatched in_axes/out_axes, or an axis out of range."""


def _broadcast_prefix(fname: str, prefix: Any, tree: Any, what: str) -> list:
    """One entry of ``prefix`` per leaf of ``tree`` (``prefix`` is a pytree prefix of ``tree``)."""
    leaves: list = []

    def walk(p, t, path: str):
        if p is None or isinstance(p, int):
            leaves.extend([p] * len(tree_util.tree_leaves(t)))
            return
        p_leaves, p_tree = tree_util.tree_flatten(p, is_leaf=lambda x: x is None)
        try:
            subtrees = p_tree.flatten_up_to(t)
        except (ValueError, TypeError):
            raise VmapError(f"kiln.{fname}: {what} specification {prefix!r} must be a tree prefix of the "
                            f"corresponding value, whose structure is {tree_util.tree_structure(tree)}") from None
        for pl, st in zip(p_leaves, subtrees):
            if pl is not None and not isinstance(pl, int):
                raise VmapError(f"kiln.{fname}: {what} leaves must be ints or None, got {pl!r}")
            leaves.extend([pl] * len(tree_util.tree_leaves(st)))

    walk(prefix, tree, "")
    return leaves


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         axis_name: Any = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorise ``fun`` over an axis of its arguments (as ``jax.vmap``).

    ``in_axes``: an int, None, or a tuple with one entry per positional argument, each a pytree
    prefix of that argument (ints say which axis is mapped, None that it is not). Keyword arguments
    are mapped over axis 0. ``out_axes`` likewise for the outputs. ``axis_name`` names the axis
    for collectives (``kiln.lax.psum``...).
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise VmapError(f"kiln.vmap({name}): in_axes has {len(in_axes)} entries but the function was called "
                            f"with {len(args)} positional argument(s); in_axes must be an int, None, or a tuple "
                            "with one entry per positional argument")
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        if isinstance(in_axes, tuple):
            arg_dims = [d for a, ax in zip(args, in_axes) for d in _broadcast_prefix("vmap", ax, a, "in_axes")]
        else:
            arg_dims = _broadcast_prefix("vmap", in_axes, args, "in_axes")
        dims = arg_dims + [0] * len(tree_util.tree_leaves(kwargs))
        size = _batch_size(name, flat, dims, args, in_axes, axis_size)
        norm_dims = []
        for x, d in zip(flat, dims):
            if d is None:
                norm_dims.append(None)
                continue
            norm_dims.append(d % abstractify(x).ndim)
        per_example = [abstractify(x) if d is None else
                       abstractify(x).update(shape=tuple(s for i, s in enumerate(abstractify(x).shape) if i != d))
                       for x, d in zip(flat, norm_dims)]
        out_tree_box = []

        def flat_fun(*tracers):
            a, k = tree_util.tree_unflatten(in_tree, list(tracers))
            out = fun(*a, **k)
            leaves, tree = tree_util.tree_flatten(out)
            out_tree_box.append((tree, out))
            return leaves

        with axis_names_bound(axis_name), axis_size_bound(axis_name, size):
            closed, _ = trace_to_ir(flat_fun, per_example, name=name)
        ctx = BatchContext(size, axis_name)
        outs, out_dims = batch_eval(closed.ir, closed.consts, flat, norm_dims, ctx)
        out_tree, out_example = out_tree_box[0]
        wanted = _broadcast_prefix("vmap", out_axes, out_example, "out_axes")
        final = []
        for o, d, w in zip(outs, out_dims, wanted):
            if w is None:
                if d is not None:
                    raise VmapError(f"kiln.vmap({name}): out_axes is None for an output that depends on the mapped "
                                    "axis; only outputs that are the same for every batch element can have "
                                    "out_axes=None")
                final.append(o)
                continue
            ndim = abstractify(o).ndim + (d is None)
            if not -ndim <= w < ndim:
                raise VmapError(f"kiln.vmap({name}): out_axes={w} is out of range for an output of rank {ndim}")
            final.append(move_dim(o, d, w % ndim, size))
        return tree_util.tree_unflatten(out_tree, final)
    return batched


def _batch_size(name, flat, dims, args, in_axes, axis_size) -> int:
    sizes = []
    for x, d in zip(flat, dims):
        if d is None:
            continue
        aval = abstractify(x)
        if aval.ndim == 0:
            raise VmapError(f"kiln.vmap({name}): cannot map over axis {d} of a 0-d (scalar) argument; use "
                            "in_axes=None for it")
        if not -aval.ndim <= d < aval.ndim:
            raise VmapError(f"kiln.vmap({name}): in_axes={d} is out of range for an argument of shape {aval.shape} "
                            f"(rank {aval.ndim})")
        sizes.append((aval.shape[d], aval.shape, d))
    if not sizes:
        if axis_size is None:
            raise VmapError(f"kiln.vmap({name}): no argument is mapped (all in_axes are None) and axis_size is not "
                            "given; pass axis_size= to say how many times to repeat the function")
        return int(axis_size)
    distinct = {s for s, _, _ in sizes}
    if len(distinct) > 1 or (axis_size is not None and axis_size not in distinct):
        lines = []
        for i, (x, d) in enumerate(zip(flat, dims)):
            if d is not None:
                lines.append(f"  argument {i} has shape {abstractify(x).shape} and axis {d} is to be mapped "
                             f"(size {abstractify(x).shape[d]})")
        extra = f"\n  axis_size={axis_size} was given" if axis_size is not None else ""
        raise VmapError(f"kiln.vmap({name}) got inconsistent sizes for array axes to be mapped:\n"
                        + "\n".join(lines) + extra)
    return sizes[0][0]


from . import transform_rules  # noqa: E402,F401  (batching rules of remat and custom derivatives)
