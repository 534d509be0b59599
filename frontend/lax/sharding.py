"""``with_sharding_constraint``: inside a program partitioned over a device mesh, the layout one value must
have (``sdy.sharding_constraint``); XLA's partitioner chooses the others around it. A jitted function that
uses one runs over the constraint's mesh; outside any trace it lays the array out (``device_put``)."""
from __future__ import annotations

from typing import Any

from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import Tracer
from ..driver.sharding import NamedSharding, flatten_shardings, resolve_spec, shardings_per_leaf

__all__ = ["reshard", "with_sharding_constraint"]


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


def _lay_out(x: Any, shardings: Any, where: str) -> Any:
    """``x`` (a pytree) laid out by ``shardings`` (a pytree prefix of NamedShardings, or PartitionSpecs with a
    mesh in context): a constraint on traced values, a ``device_put`` of concrete ones."""
    from ..driver.placement import device_put
    leaves, tree = tree_util.tree_flatten(x)
    prefix_leaves, prefix_tree = flatten_shardings(shardings)
    per_leaf = shardings_per_leaf(prefix_leaves, prefix_tree, x, where)
    out = []
    for leaf, s in zip(leaves, per_leaf):
        if s is None:
            raise ValueError(f"{where}: the sharding of a value is None; give a NamedSharding (or a PartitionSpec "
                             "with a mesh in context) for every value")
        s = resolve_spec(s, where)
        if not isinstance(s, NamedSharding):
            raise TypeError(f"{where}: shardings must be kiln.sharding.NamedSharding (or PartitionSpec with a mesh "
                            f"in context), got {s!r:.60}")
        out.append(constrain(leaf, s) if isinstance(leaf, Tracer) else device_put(leaf, s))
    return tree_util.tree_unflatten(tree, out)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` (a pytree) laid out by ``shardings`` (a NamedSharding, or a pytree prefix of them, or a
    PartitionSpec with a mesh in context: ``kiln.set_mesh(mesh)`` or ``with mesh:``) at this point of the
    program. Outside a trace it lays the values out (``device_put``)."""
    return _lay_out(x, shardings, "kiln.lax.with_sharding_constraint")


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` (a pytree) laid out by ``out_shardings`` (a pytree prefix of NamedShardings, or PartitionSpecs
    with a mesh in context): outside a trace a ``device_put``, inside a sharding constraint. kiln's mesh axes
    are all Auto, so inside a program this is ``with_sharding_constraint``."""
    return _lay_out(xs, out_shardings, "kiln.reshard")
