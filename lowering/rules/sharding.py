"""Emission rule for frontend/lax/sharding.py: ``sdy.sharding_constraint`` in a program partitioned over a
mesh; in a one-device program a constraint has nothing to constrain."""
from __future__ import annotations

from jaxlib.mlir.dialects import sdy

from ..hlo import sdy_sharding
from ..module import LoweringError
from ..registry import register


@register("sharding_constraint")
def _sharding_constraint(ctx, eqn, x):
    if ctx.mesh is None:
        return x
    axes = eqn.params["mesh_axes"]
    if tuple(ctx.mesh.axes) != axes:
        raise LoweringError(f"kiln.lax.with_sharding_constraint: the constraint's mesh {dict(axes)} differs from the "
                            f"mesh the program runs on ({dict(ctx.mesh.axes)}); use one mesh for the whole computation")
    return sdy.ShardingConstraintOp(x, sdy_sharding(eqn.params["spec_dims"])).result
