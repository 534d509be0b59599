"""``pmap``: JAX's older SPMD map, one device per element of a mapped axis, built (as JAX now builds it) as a
jitted ``shard_map`` over a one-axis mesh of the first ``n`` devices whose axis is ``axis_name``."""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from ..batching.api import _broadcast_prefix
from ..core import caches, tree_util
from ..core.errors import KilnError
from ..core.tracing import abstractify
from ..driver import placement
from ..driver.jit import jit
from ..driver.sharding import Mesh, PartitionSpec
from .common import fun_name
from .shard_map import shard_map

__all__ = ["pmap", "PmapError"]


class PmapError(KilnError, ValueError):
    """Mapped axes of different sizes, more elements than devices, or bad in_axes/out_axes."""


@functools.lru_cache(maxsize=256)
def _mesh(devices: tuple, axis_name: str) -> Mesh:
    return Mesh(np.array(devices, dtype=object), (axis_name,))


def _as_tuple(value: Any) -> tuple[int, ...]:
    return (int(value),) if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)


def pmap(fun: Callable | None = None, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: Any = (), devices: Sequence[Any] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: Any = ()) -> Any:
    """``fun`` applied to each element along the mapped axes of its arguments, element ``i`` on device ``i``
    (JAX's ``jax.pmap``); collectives inside ``fun`` name ``axis_name``. Results are laid out over those
    devices (a ``NamedSharding`` over a one-axis mesh named ``axis_name``)."""
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums, devices=devices,
                                 backend=backend, axis_size=axis_size, donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"kiln.pmap: the first argument must be a callable, got {type(fun).__name__}")
    name = fun_name(fun)
    if axis_name is not None and not isinstance(axis_name, str):
        raise PmapError(f"kiln.pmap({name}): axis_name must be a string (it names the axis of a device mesh), got "
                        f"{axis_name!r}")
    axis = axis_name if axis_name is not None else _ANONYMOUS
    static = _as_tuple(static_broadcasted_argnums)
    if isinstance(in_axes, list):  # (vmap takes a list as the tuple, as JAX's does; JAX's pmap refuses one)
        raise PmapError(f"kiln.pmap({name}): in_axes={in_axes!r} is a list, but pmap's in_axes must be an int, None "
                        f"or a tuple with one entry per positional argument (a pytree prefix of the arguments' "
                        f"tuple, as in JAX); write in_axes={tuple(in_axes)!r}")
    donate = _as_tuple(donate_argnums)
    # ``pmap(f)(x)`` written inline in a loop builds a new pmap every step: the same options on the same function
    # reuse one jitted program (as JAX's pmap cache does), instead of tracing and compiling it again.
    key = (axis, in_axes, out_axes, static, None if devices is None else tuple(devices), backend, axis_size, donate)
    try:
        jitted = _built.setdefault(fun, {}).get(key)
    except TypeError:  # unhashable options (a dict of in_axes) or a function that cannot be weakly referenced
        key, jitted = None, None
    if jitted is None:
        jitted = _build(fun, name, axis, in_axes, out_axes, static, devices, backend, axis_size, donate)
        if key is not None:
            _built[fun][key] = jitted
    return functools.wraps(fun)(lambda *args, **kwargs: _call(jitted, name, static, args, kwargs))


# fun -> {options: the jitted program}; entries go with their function.
_built: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_built.clear)
_ANONYMOUS = "_internal_pmap_axis_name"  # a pmap without axis_name: JAX's name, seen in the results' sharding


def _build(fun: Callable, name: str, axis: str, in_axes: Any, out_axes: Any, static: tuple, devices: Any,
           backend: str | None, axis_size: int | None, donate: tuple) -> Any:
    """The jitted shard_map that runs ``fun`` as ``pmap``'s options say."""
    def run(*args):
        dyn = [i for i in range(len(args)) if i not in static]
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise PmapError(f"kiln.pmap({name}): in_axes has {len(in_axes)} entries but the function was called "
                                f"with {len(args)} positional arguments; give one entry per argument")
            dims = [d for i in dyn for d in _broadcast_prefix("pmap", in_axes[i], args[i], "in_axes",
                                                              f"in_axes[{i}]", f"argument {i}")]
        else:
            dims = _broadcast_prefix("pmap", in_axes, tuple(args[i] for i in dyn), "in_axes", "in_axes",
                                     "the arguments")
        leaves, tree = tree_util.tree_flatten(tuple(args[i] for i in dyn))
        n = _mapped_size(name, leaves, dims, axis_size)
        devs = _devices(name, n, devices, backend)
        mesh = _mesh(devs, axis)
        moved = [x if d is None else _to_front(x, d) for x, d in zip(leaves, dims)]
        specs = [PartitionSpec() if d is None else PartitionSpec(axis) for d in dims]
        out_tree_box: list = []

        def body(*blocks):
            unmapped = [b if d is None else lax.squeeze(b, (0,)) for b, d in zip(blocks, dims)]
            dyn_args = iter(tree_util.tree_unflatten(tree, unmapped))
            call = [args[i] if i in static else next(dyn_args) for i in range(len(args))]
            out = fun(*call)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_dims = _broadcast_prefix("pmap", out_axes, out, "out_axes", "out_axes", "the result")
            out_tree_box.append((out_tree, out_dims))
            return tree_util.tree_unflatten(out_tree, [o if d is None else lax.expand_dims(o, (0,))
                                                       for o, d in zip(out_leaves, out_dims)])

        # out_axes is a prefix of the result: the same prefix of specs (None: the same on every device).
        o_specs = tree_util.tree_map(lambda d: PartitionSpec() if d is None else PartitionSpec(axis), out_axes,
                                     is_leaf=lambda d: d is None)
        outs = shard_map(body, mesh=mesh, in_specs=tuple(specs), out_specs=o_specs, check_vma=False)(*moved)
        out_tree, out_dims = out_tree_box[-1]
        outs = [o if d in (None, 0) else _from_front(o, d) for o, d in zip(tree_util.tree_leaves(outs), out_dims)]
        return tree_util.tree_unflatten(out_tree, outs)

    return jit(run, static_argnums=static, donate_argnums=donate)


def _call(jitted, name: str, static: tuple, args: tuple, kwargs: dict) -> Any:
    if kwargs:
        raise PmapError(f"kiln.pmap({name}): pass the arguments positionally (got keyword arguments "
                        f"{sorted(kwargs)}); in_axes maps positional arguments")
    if any(not -len(args) <= i < len(args) for i in static):
        raise PmapError(f"kiln.pmap({name}): static_broadcasted_argnums={static} is out of range for a call with "
                        f"{len(args)} positional argument(s); static arguments must be passed positionally")
    return jitted(*args)


def _mapped_size(name: str, leaves: list, dims: list, axis_size: int | None) -> int:
    sizes = set()
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        aval = abstractify(x)
        if not -aval.ndim <= d < aval.ndim:
            raise PmapError(f"kiln.pmap({name}): in_axes={d} is out of range for an argument of shape {aval.shape}")
        sizes.add(aval.shape[d])
    if axis_size is not None:
        sizes.add(int(axis_size))
    if not sizes:
        raise PmapError(f"kiln.pmap({name}): no argument is mapped (all in_axes are None); pass axis_size=")
    if len(sizes) > 1:
        raise PmapError(f"kiln.pmap({name}): the mapped axes have different sizes {sorted(sizes)}; every mapped "
                        "axis must have the same size (one element per device)")
    return sizes.pop()


def _devices(name: str, n: int, devices: Sequence[Any] | None, backend: str | None) -> tuple:
    pool = list(devices) if devices is not None else placement.local_devices(backend=backend)
    if n > len(pool):
        where = "the devices given" if devices is not None else "this process's devices (kiln.local_devices())"
        raise PmapError(f"kiln.pmap({name}): the mapped axis has size {n}, but there are only {len(pool)} of "
                        f"{where}; pmap runs one element per device. Split the axis (reshape to (devices, -1) "
                        "and vmap inside), or start with more devices (KILN_NUM_CPU_DEVICES=8 on CPU).")
    if devices is not None and n != len(pool):
        raise PmapError(f"kiln.pmap({name}): {len(pool)} devices were given but the mapped axis has size {n}; "
                        "they must be equal")
    return tuple(pool[:n])


def _to_front(x, d: int):
    nd = abstractify(x).ndim
    d %= nd
    return x if d == 0 else lax.transpose(x, (d,) + tuple(i for i in range(nd) if i != d))


def _from_front(x, d: int):
    nd = abstractify(x).ndim
    d %= nd
    perm = list(range(1, nd))
    perm.insert(d, 0)
    return lax.transpose(x, tuple(perm))
