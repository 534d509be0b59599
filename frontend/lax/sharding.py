"""``with_sharding_constraint``: inside a program partitioned over a device mesh, the layout one value must
have (``sdy.sharding_constraint``); XLA's partitioner chooses the others around it. A jitted function that
uses one runs over the constraint's mesh; outside any trace it lays the array out (``device_put``)."""
from __future__ import annotations

from typing import Any

from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import Tracer
from ..driver.sharding import NamedSharding, PartitionSpec

__all__ = ["with_sharding_constraint"]


def _constraint_rule(x: ShapedArray, *, sharding: NamedSharding, spec_dims: tuple, mesh_axes: tuple) -> ShapedArray:
    sharding.shard_shape(x.shape)  # the spec fits the rank and its mesh axes divide the dimensions
    return x


# ``sharding``: the layout; ``spec_dims`` (per dimension, the mesh axes splitting it) and ``mesh_axes`` (the mesh's
# (name, size) pairs) are what the lowering writes and checks.
sharding_constraint_p = Primitive("sharding_constraint", _constraint_rule)


def constrain(x: Any, sharding: NamedSharding) -> Any:
    ndim = len(x.aval.shape)
    spec_dims = tuple(sharding.spec.axis_names_of(d) for d in range(ndim))
    mesh_axes = tuple(sharding.mesh.shape_tuple)
    return sharding_constraint_p.bind(x, sharding=sharding, spec_dims=spec_dims, mesh_axes=mesh_axes)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` (a pytree) laid out by ``shardings`` (a NamedSharding, or a pytree prefix of them, or a
    PartitionSpec under ``with mesh:``) at this point of the program."""
    from ..driver.placement import device_put
    from ..driver.sharding import get_mesh
    leaves, tree = tree_util.tree_flatten(x)
    if isinstance(shardings, (NamedSharding, PartitionSpec)):
        per_leaf = [shardings] * len(leaves)
    else:
        per_leaf = tree_util.tree_leaves(tree_util.tree_map(
            lambda s, v: [s] * len(tree_util.tree_leaves(v)), shardings, x,
            is_leaf=lambda s: isinstance(s, (NamedSharding, PartitionSpec)) or s is None))
    out = []
    for leaf, s in zip(leaves, per_leaf):
        if isinstance(s, PartitionSpec):
            mesh = get_mesh()
            if mesh is None:
                raise ValueError(f"kiln.lax.with_sharding_constraint: a PartitionSpec ({s}) needs a mesh: pass a "
                                 "NamedSharding(mesh, spec), or call it inside `with mesh:`")
            s = NamedSharding(mesh, s)
        if not isinstance(s, NamedSharding):
            raise TypeError(f"kiln.lax.with_sharding_constraint: shardings must be kiln.sharding.NamedSharding (or "
                            f"PartitionSpec under `with mesh:`), got {s!r:.60}")
        out.append(constrain(leaf, s) if isinstance(leaf, Tracer) else device_put(leaf, s))
    return tree_util.tree_unflatten(tree, out)
