"""Emission rules of the layouts: ``sdy.sharding_constraint`` (frontend/lax/sharding.py) in a program partitioned
over a mesh (in a one-device program a constraint has nothing to constrain), and ``shard_map``
(frontend/control/shard_map.py) as ``sdy.manual_computation`` over all the mesh's axes."""
from __future__ import annotations

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from ..hlo import sdy_sharding
from ..module import LoweringError
from ..registry import register
from ..types import tensor_type


@register("sharding_constraint")
def _sharding_constraint(ctx, eqn, x):
    if ctx.mesh is None:
        return x
    axes = eqn.params["mesh_axes"]
    if tuple(ctx.mesh.axes) != axes:
        raise LoweringError(f"kiln.lax.with_sharding_constraint: the constraint's mesh {dict(axes)} differs from the "
                            f"mesh the program runs on ({dict(ctx.mesh.axes)}); use one mesh for the whole computation")
    return sdy.ShardingConstraintOp(x, sdy_sharding(eqn.params["spec_dims"])).result


def _per_value(specs) -> ir.Attribute:
    return ir.Attribute.parse("#sdy.sharding_per_value<[" + ", ".join(
        str(sdy_sharding(s)).removeprefix("#sdy.sharding") for s in specs) + "]>")


@register("shard_map")
def _shard_map(ctx, eqn, *args):
    axes = eqn.params["mesh_axes"]
    name = eqn.params["name"]
    if ctx.mesh is None or tuple(ctx.mesh.axes) != axes:
        where = "a program on one device" if ctx.mesh is None else f"a program over the mesh {dict(ctx.mesh.axes)}"
        raise LoweringError(f"kiln.shard_map({name}) over the mesh {dict(axes)} cannot run in {where}; run it under "
                            "kiln.jit (or call it directly) so that the program runs over its mesh")
    if ctx.manual_axes is not None:
        raise LoweringError(f"kiln.shard_map({name}): a shard_map inside another shard_map is not supported")
    body = eqn.params["body"]
    if ctx.mesh.num_partitions == 1:  # one device: its block is the whole value, no manual region needed
        return _emit_manual(ctx, axes, body, list(args))
    manual = ir.Attribute.parse("#sdy<manual_axes{" + ", ".join(f'"{n}"' for n, _ in axes) + "}>")
    op = sdy.ManualComputationOp([tensor_type(v.aval) for v in eqn.outputs], list(args),
                                 _per_value(eqn.params["in_specs"]), _per_value(eqn.params["out_specs"]), manual)
    block = op.body.blocks.append(*[tensor_type(a) for a in body.in_avals])
    with ir.InsertionPoint(block):
        sdy.ReturnOp(_emit_manual(ctx, axes, body, list(block.arguments)))
    return list(op.results)


def _emit_manual(ctx, axes, body, args):
    ctx.manual_axes = axes
    try:
        return ctx.emit_body(body.ir, args)
    finally:
        ctx.manual_axes = None
