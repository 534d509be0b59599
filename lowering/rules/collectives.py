"""Emission rules of the collectives inside a ``shard_map`` body (``EmitContext.manual_axes`` is its mesh).

A collective over mesh axes A works within groups of devices: those that differ only in their A coordinates.
Device ids are logical (the partition ids of the SPMD program: position in the mesh's row-major device
order), hence ``use_global_device_ids`` and a channel handle on every cross-device op. Outside a shard_map
an axis name means nothing: vmap removed the collectives over its own axes before lowering.
"""
from __future__ import annotations

import math

import numpy as np
from jaxlib.mlir import ir

from ..hlo import V, build_region, const, convert, full, monoid, op, out_type, reshape
from ..registry import register
from ..types import ranked_type, scalar_type


def _names(axis_name) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _manual_axes(ctx, eqn) -> tuple:
    names = _names(eqn.params["axis_name"])
    axes = ctx.manual_axes or ()
    known = [n for n, _ in axes]
    for n in names:
        if n not in known:
            where = (f"the bound mesh axes are {known}" if axes else
                     "collectives only work inside kiln.vmap(..., axis_name=...) or kiln.shard_map/kiln.pmap")
            raise NameError(f"kiln.lax.{eqn.prim.name}: unbound axis name {n!r}: {where}")
    return axes


def _device_grid(axes) -> np.ndarray:
    return np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])


def replica_groups(axes, names) -> np.ndarray:
    """The groups (rows, in ``names``' order within a row) of devices a collective over ``names`` combines."""
    all_names = [n for n, _ in axes]
    pos = [all_names.index(n) for n in names]
    others = [i for i in range(len(axes)) if i not in pos]
    grid = _device_grid(axes).transpose(others + pos)
    return grid.reshape(-1, math.prod(axes[p][1] for p in pos))


def _groups_attr(groups: np.ndarray) -> ir.DenseIntElementsAttr:
    """A 2-d ``tensor<..xi64>`` attribute (replica groups, source-target pairs)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.DenseIntElementsAttr.get(np.ascontiguousarray(groups, np.int64),
                                       type=ir.RankedTensorType.get(list(groups.shape), i64))


def _channel() -> dict:
    return {"channel_handle": ir.Attribute.parse("#stablehlo.channel_handle<handle = 1, type = 1>")}


def _global_ids() -> dict:
    return {"use_global_device_ids": ir.UnitAttr.get()}


def _combining(name: str, x: ir.Value, result, dtype, kind: str, attributes: dict) -> ir.Value:
    created = ir.Operation.create(name, results=[result], operands=[x], attributes=attributes, regions=1)
    combine = monoid(kind, dtype)
    build_region(created.regions[0], [scalar_type(dtype)] * 2,
                 lambda a, b: op(f"stablehlo.{combine}", [a, b], scalar_type(dtype)))
    return created.result


def _alone(groups: np.ndarray) -> bool:
    """Whether each device is alone in its group (axes of size 1): the collective moves nothing."""
    return groups.shape[1] == 1


def _reducer(kind: str):
    def rule(ctx, eqn, x):
        axes = _manual_axes(ctx, eqn)
        groups = replica_groups(axes, _names(eqn.params["axis_name"]))
        if _alone(groups):
            return x
        return _combining("stablehlo.all_reduce", x, out_type(eqn), eqn.outputs[0].aval.dtype, kind,
                          {"replica_groups": _groups_attr(groups), **_channel(), **_global_ids()})
    return rule


register("psum")(_reducer("add"))
register("pmax")(_reducer("maximum"))
register("pmin")(_reducer("minimum"))


@register("pvary")
def _pvary(ctx, eqn, x):
    """pcast to varying: the value itself (the mark only matters to kiln's varying-axes analysis)."""
    return x


@register("axis_index")
def _axis_index(ctx, eqn):
    axes = _manual_axes(ctx, eqn)
    sizes = dict(axes)
    order = [n for n, _ in axes]
    dtype = eqn.outputs[0].aval.dtype
    if math.prod(sizes[n] for n in _names(eqn.params["axis_name"])) == 1:
        return const(0, dtype).v
    pid = V(op("stablehlo.partition_id", [], ranked_type((), np.uint32)), (), np.uint32)
    index, scale = None, 1
    for name in reversed(_names(eqn.params["axis_name"])):
        stride = math.prod(sizes[n] for n in order[order.index(name) + 1:])
        coord = convert((pid / const(stride, np.uint32)) % const(sizes[name], np.uint32), dtype)
        term = coord if scale == 1 else coord * const(scale, dtype)
        index = term if index is None else index + term
        scale *= sizes[name]
    return index.v


def _insert_unit_dim(x: V, dim: int) -> V:
    return reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


@register("all_gather")
def _all_gather(ctx, eqn, x):
    axes = _manual_axes(ctx, eqn)
    p = eqn.params
    v = V.of(x, eqn.inputs[0].aval)
    if not p["tiled"]:
        v = _insert_unit_dim(v, p["axis"])
    groups = replica_groups(axes, _names(p["axis_name"]))
    if _alone(groups):
        return v.v
    return op("stablehlo.all_gather", [v.v], out_type(eqn), all_gather_dim=ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), p["axis"]), replica_groups=_groups_attr(groups), **_channel(), **_global_ids())


@register("psum_scatter")
def _psum_scatter(ctx, eqn, x):
    axes = _manual_axes(ctx, eqn)
    p = eqn.params
    dim, size = p["scatter_dimension"], p["axis_size"]
    aval = eqn.inputs[0].aval
    shape = list(aval.shape)
    shape[dim] //= size
    groups = replica_groups(axes, _names(p["axis_name"]))
    if _alone(groups):
        return reshape(V.of(x, aval), eqn.outputs[0].aval.shape).v
    out = _combining("stablehlo.reduce_scatter", x, ranked_type(tuple(shape), aval.dtype), aval.dtype, "add",
                     {"scatter_dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim),
                      "replica_groups": _groups_attr(groups), **_channel(), **_global_ids()})
    return out if p["tiled"] else reshape(V(out, tuple(shape), aval.dtype), eqn.outputs[0].aval.shape).v


@register("all_to_all")
def _all_to_all(ctx, eqn, x):
    axes = _manual_axes(ctx, eqn)
    p = eqn.params
    # all_to_all_p keeps the rank (the untiled form adds and drops a unit dimension around it, in lax).
    split, concat, size = p["split_axis"], p["concat_axis"], p["axis_size"]
    v = V.of(x, eqn.inputs[0].aval)
    shape = list(v.shape)
    shape[split] //= size
    shape[concat] *= size
    i64 = ir.IntegerType.get_signless(64)
    groups = replica_groups(axes, _names(p["axis_name"]))
    if _alone(groups):
        return reshape(v, eqn.outputs[0].aval.shape).v
    out = op("stablehlo.all_to_all", [v.v], ranked_type(tuple(shape), v.dtype),
             split_dimension=ir.IntegerAttr.get(i64, split), concat_dimension=ir.IntegerAttr.get(i64, concat),
             split_count=ir.IntegerAttr.get(i64, size), replica_groups=_groups_attr(groups), **_channel())
    return reshape(V(out, tuple(shape), v.dtype), eqn.outputs[0].aval.shape).v


@register("ppermute")
def _ppermute(ctx, eqn, x):
    axes = _manual_axes(ctx, eqn)
    p = eqn.params
    groups = replica_groups(axes, _names(p["axis_name"]))
    if _alone(groups) and p["perm"]:
        return x  # the only permutation of one device
    pairs = [(int(g[s]), int(g[d])) for g in groups for s, d in p["perm"]]
    if not pairs:  # nothing is sent: every device gets zeros
        return full(0, eqn.outputs[0].aval.shape, eqn.outputs[0].aval.dtype).v
    return op("stablehlo.collective_permute", [x], out_type(eqn),
              source_target_pairs=_groups_attr(np.array(pairs).reshape(len(pairs), 2)), **_channel())
