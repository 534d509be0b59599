"""``with_sharding_constraint``: inside a program partitioned over a device mesh, the layout one value must
have (``sdy.sharding_constraint``); XLA's partitioner chooses the others around it. A jitted function that
uses one runs over the constraint's mesh; outside any trace it lays the array out (``device_put``)."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, current_builder
from ..driver import placement
from ..driver.sharding import NamedSharding, PartitionSpec, flatten_shardings, resolve_spec, shardings_per_leaf

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


placement.traced_layout.append(constrain)  # kiln.device_put of a traced value to a NamedSharding


def _lay_out(x: Any, shardings: Any, where: str) -> Any:
    """``x`` (a pytree) laid out by ``shardings`` (a pytree prefix of NamedShardings, or PartitionSpecs with a
    mesh in context): a constraint on traced values (and on constants inside a trace), a ``device_put`` of
    concrete values outside any trace."""
    from ..driver.placement import device_put
    leaves, tree = tree_util.tree_flatten(x)
    prefix_leaves, prefix_tree = flatten_shardings(shardings)
    per_leaf = shardings_per_leaf(prefix_leaves, prefix_tree, x, where)
    builder = current_builder()
    out = []
    for leaf, s in zip(leaves, per_leaf):
        if s is None:
            raise ValueError(f"{where}: the sharding of a value is None; give a NamedSharding (or a PartitionSpec "
                             "with a mesh in context) for every value")
        s = resolve_spec(s, where)
        if not isinstance(s, NamedSharding):
            raise TypeError(f"{where}: shardings must be kiln.sharding.NamedSharding (or PartitionSpec with a mesh "
                            f"in context), got {s!r:.60}")
        if not isinstance(leaf, Tracer) and builder is not None:  # a constant inside a trace: stage it
            leaf = Tracer(builder, builder.atom(leaf))
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


# -- out_sharding= ---------------------------------------------------------------------------------

def apply_out_sharding(result: Any, out_sharding: Any, where: str) -> Any:
    """``result`` as it is when ``out_sharding`` is None, else laid out by it (as :func:`reshard`; every array
    of a tuple result alike): the ``out_sharding=`` of the kiln.numpy / kiln.lax / kiln.random functions that
    take it. ``where`` names the function in errors."""
    if out_sharding is None:
        return result
    if not isinstance(out_sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"{where}: out_sharding must be a kiln.sharding.NamedSharding, a PartitionSpec (with a mesh "
                        f"set by kiln.set_mesh) or None, got {type(out_sharding).__name__} {out_sharding!r:.60}")
    where = f"{where}: out_sharding"
    sharding = resolve_spec(out_sharding, where)
    for leaf in tree_util.tree_leaves(result):
        shape = abstractify(leaf).shape
        try:
            sharding.shard_shape(shape)
        except ValueError as e:
            raise ValueError(f"{where} does not fit the result of shape {shape}: {e}") from None
    return _lay_out(result, sharding, where)


def _public_name(fn: Callable) -> str:
    """``kiln.numpy.dot`` for ``dot`` defined in ``kiln.frontend.numpy.products``."""
    parts = fn.__module__.split(".")
    package = parts[2] if parts[:2] == ["kiln", "frontend"] and len(parts) > 3 else parts[-1]
    return f"kiln.{package}.{fn.__name__}"


def takes_out_sharding(fn: Callable | None = None, *, positional: bool = False) -> Any:
    """Decorator: ``fn`` gains an ``out_sharding=None`` parameter (its result laid out by
    :func:`apply_out_sharding`), keyword-only, or when ``positional`` after ``fn``'s positional parameters
    (where JAX has it so). None costs nothing: no constraint, no copy. ``inspect.signature`` shows it."""
    if fn is None:
        return functools.partial(takes_out_sharding, positional=positional)
    where = _public_name(fn)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if any(p.name == "out_sharding" for p in params):
        raise TypeError(f"takes_out_sharding: {where} already has an out_sharding parameter")
    kinds = inspect.Parameter
    if positional:
        if any(p.kind in (kinds.VAR_POSITIONAL, kinds.KEYWORD_ONLY, kinds.VAR_KEYWORD) for p in params):
            raise TypeError(f"takes_out_sharding: {where} must have positional parameters only to take "
                            "out_sharding positionally")
        n_pos = len(params)
        new = kinds("out_sharding", kinds.POSITIONAL_OR_KEYWORD, default=None)
        params.append(new)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > n_pos:
                if len(args) > n_pos + 1:
                    raise TypeError(f"{where}() takes at most {n_pos + 1} positional arguments (out_sharding "
                                    f"last), got {len(args)}")
                if "out_sharding" in kwargs:
                    raise TypeError(f"{where}() got multiple values for argument 'out_sharding'")
                args, out_sharding = args[:n_pos], args[n_pos]
            else:
                out_sharding = kwargs.pop("out_sharding", None)
            return apply_out_sharding(fn(*args, **kwargs), out_sharding, where)
    else:
        new = kinds("out_sharding", kinds.KEYWORD_ONLY, default=None)
        at = len(params) - (1 if params and params[-1].kind is kinds.VAR_KEYWORD else 0)
        params.insert(at, new)

        @functools.wraps(fn)
        def wrapper(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
            if out_sharding is None:
                return fn(*args, **kwargs)
            return apply_out_sharding(fn(*args, **kwargs), out_sharding, where)
        # An eager kiln.numpy function's fixed-signature entry (eager_jit's) stays in front: a call without
        # keywords (``matmul(a, b)``) keeps its inline launch, without this wrapper's Python frame in between.
        with_fallback = getattr(fn, "_with_fallback", None)
        if with_fallback is not None:
            wrapper = functools.wraps(fn)(with_fallback(wrapper))
    wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper
