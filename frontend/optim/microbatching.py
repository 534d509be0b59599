"""optax.microbatching: run a function over a batch in microbatches (a loop over slices of the batch axis) and
combine the results with an accumulator (sum, mean, running mean, concatenation), to bound memory."""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
from typing import Any, Callable, Sequence

from .. import numpy as jnp
from ..ad.api import value_and_grad
from ..batching.api import vmap
from ..control.api import fori_loop
from ..core.tree_util import tree_flatten, tree_leaves, tree_map
from ..driver.tools import eval_shape

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch", "reshape_batch_axis"]

# what micro_grad's function returns besides the gradient (optax's namedtuple, named Aux)
IndividualOutputs = collections.namedtuple("Aux", ["values", "metrics", "aux"])


@dataclasses.dataclass(frozen=True)
class Accumulator:
    """How to combine per-microbatch results: ``init(shape_like) -> carry``, ``update(carry, value, index) ->
    carry``, ``finalize(carry) -> result``, and ``aggregate(values)`` to reduce a batch axis of values at once."""
    init: Callable
    update: Callable
    finalize: Callable
    aggregate: Callable


class AccumulationType(enum.Enum):
    """The built-in accumulators."""
    MEAN = enum.auto()  # the mean over microbatches (floating values only)
    SUM = enum.auto()  # the sum over microbatches
    RUNNING_MEAN = enum.auto()  # the mean, updated as a running average (floating values only)
    CONCAT = enum.auto()  # the results concatenated along the batch axis, in the batch's order


def _zeros(x):
    # (x may be a ShapeDtypeStruct: the shape of a result, traced only)
    return jnp.zeros(x.shape, x.dtype)


def _floating_only(fn: Callable) -> Callable:
    def checked(*args, **kwargs):
        dtypes = [jnp.dtype(x.dtype) for x in tree_leaves((args, kwargs))]
        if not all(jnp.issubdtype(d, jnp.floating) for d in dtypes):
            raise ValueError(f"microbatching: the MEAN and RUNNING_MEAN accumulators need floating-point values, got "
                             f"dtypes {sorted(set(map(str, dtypes)))}; use SUM for integers.")
        return fn(*args, **kwargs)
    return checked


def reshape_batch_axis(tree, microbatch_size: int, axis: int = 0):
    """Splits ``axis`` of every leaf into ``(num_microbatches, microbatch_size)`` (Fortran order, as optax's:
    microbatch ``i`` holds the examples ``i, i + num_microbatches, ...``)."""
    def one(x):
        return x.reshape(x.shape[:axis] + (-1, microbatch_size) + x.shape[axis + 1:], order="F")
    return tree_map(one, tree)


def _lift(acc: Accumulator) -> Accumulator:
    """``acc`` applied leaf by leaf."""
    return Accumulator(lambda value: tree_map(acc.init, value),
                       lambda carry, value, i: tree_map(lambda c, v: acc.update(c, v, i), carry, value),
                       lambda carry: tree_map(acc.finalize, carry),
                       lambda values: tree_map(acc.aggregate, values))


def _compose(accumulators) -> Accumulator:
    """One accumulator per subtree: ``accumulators`` is a prefix of the results' structure."""
    return Accumulator(
        lambda values: tree_map(lambda a, v: a.init(v), accumulators, values),
        lambda carry, value, i: tree_map(lambda a, c, v: a.update(c, v, i), accumulators, carry, value),
        lambda carry: tree_map(lambda a, c: a.finalize(c), accumulators, carry),
        lambda values: tree_map(lambda a, v: a.aggregate(v), accumulators, values))


def _positive(num_microbatches: int) -> None:
    if num_microbatches <= 0:
        raise ValueError(f"microbatching: num_microbatches={num_microbatches} must be positive.")


def _sum() -> Accumulator:
    return _lift(Accumulator(_zeros, lambda c, v, _: c + v, lambda x: x, functools.partial(jnp.sum, axis=0)))


def _mean(num_microbatches: int) -> Accumulator:
    _positive(num_microbatches)
    return _lift(Accumulator(_floating_only(_zeros), lambda c, v, _: c + v, lambda c: c / num_microbatches,
                             functools.partial(jnp.mean, axis=0)))


def _running_mean() -> Accumulator:
    def update(carry, value, index):
        p = index / (index + 1)
        return carry * p + value * (1 - p)
    return _lift(Accumulator(_floating_only(_zeros), update, lambda x: x, functools.partial(jnp.mean, axis=0)))


def _concat(num_microbatches: int) -> Accumulator:
    _positive(num_microbatches)

    def init(value):
        return jnp.broadcast_to(_zeros(value), (num_microbatches,) + tuple(value.shape))

    def finalize(carry):  # back to the batch's order (the inverse of reshape_batch_axis)
        return carry.reshape((-1,) + tuple(carry.shape[2:]), order="F")
    return _lift(Accumulator(init, lambda c, v, i: c.at[i].set(v), finalize, lambda x: x))


def _canonicalize(tree, num_microbatches: int | None) -> Accumulator:
    def one(acc):
        if isinstance(acc, Accumulator):
            return acc
        if acc is AccumulationType.MEAN:
            return _mean(num_microbatches)
        if acc is AccumulationType.SUM:
            return _sum()
        if acc is AccumulationType.RUNNING_MEAN:
            return _running_mean()
        if acc is AccumulationType.CONCAT:
            return _concat(num_microbatches)
        raise ValueError(f"microbatching: unknown accumulator {acc!r}; use an AccumulationType, an Accumulator or a "
                         "pytree of them.")
    return _compose(tree_map(one, tree))


def _reshape_all_args(microbatch_size, argnums, argnames, in_axes, args, kwargs):
    args, kwargs = list(args), dict(kwargs)
    batched = [args[i] for i in argnums] + [kwargs[n] for n in argnames]
    sizes = tree_flatten(tree_map(lambda ax, sub: tree_map(lambda x: x.shape[ax], sub), tuple(in_axes),
                                  tuple(batched)))[0]
    if len(set(sizes)) > 1:
        raise ValueError(f"microbatch: the batch arguments must have batch axes of one size, found {sizes}.")
    batch_size = sizes[0]
    if batch_size % microbatch_size != 0:
        raise ValueError(f"microbatch: batch_size={batch_size} must be divisible by "
                         f"microbatch_size={microbatch_size}.")
    for i, ax in zip(argnums, in_axes):
        args[i] = reshape_batch_axis(args[i], microbatch_size, ax)
    for n, ax in zip(argnames, in_axes[len(argnums):]):
        kwargs[n] = reshape_batch_axis(kwargs[n], microbatch_size, ax)
    return tuple(args), kwargs, batch_size


def microbatch(fun: Callable, argnums: int | Sequence[int], microbatch_size: int | None,
               accumulator=AccumulationType.SUM, *, argnames: str | Sequence[str] = (),
               in_axes: int | Sequence[int] = 0, num_real_microbatches=None) -> Callable:
    """``fun`` run on microbatches of ``microbatch_size`` examples of the arguments ``argnums`` / ``argnames``
    (batch axis ``in_axes``), one after the other in a loop, its results combined by ``accumulator`` (an
    :class:`AccumulationType`, an :class:`Accumulator`, or a pytree of them for the results' subtrees).
    ``num_real_microbatches`` stops the loop early (the rest is padding). ``microbatch_size=None`` returns
    ``fun``."""
    if microbatch_size is None:
        return fun
    if not callable(fun):
        raise TypeError(f"microbatch: fun must be callable, got {type(fun).__name__}.")
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    in_axes = (in_axes,) * (len(argnums) + len(argnames)) if isinstance(in_axes, int) else tuple(in_axes)

    def microbatched(*args, **kwargs):
        args, kwargs, batch_size = _reshape_all_args(microbatch_size, argnums, argnames, in_axes, args, kwargs)
        acc = _canonicalize(accumulator, batch_size // microbatch_size)

        def on_microbatch(index):
            a, kw = list(args), dict(kwargs)
            for i, ax in zip(argnums, in_axes):
                a[i] = tree_map(functools.partial(jnp.take, indices=index, axis=ax), a[i])
            for n, ax in zip(argnames, in_axes[len(argnums):]):
                kw[n] = tree_map(functools.partial(jnp.take, indices=index, axis=ax), kw[n])
            return fun(*a, **kw)

        bound = batch_size // microbatch_size if num_real_microbatches is None else num_real_microbatches
        carry = acc.init(eval_shape(on_microbatch, 0))
        carry = fori_loop(0, bound, lambda i, c: acc.update(c, on_microbatch(i), i), carry)
        return acc.finalize(carry)
    return microbatched


def micro_vmap(fun: Callable, in_axes: int | Sequence[int] = 0, out_axes: Any = 0, *,
               microbatch_size: int | None = None, vmap_fn: Callable = vmap,
               accumulator=AccumulationType.CONCAT, num_real_microbatches=None) -> Callable:
    """``vmap_fn(fun, in_axes)`` run on microbatches of ``microbatch_size`` examples (the keyword arguments are
    batched on axis 0), each microbatch's outputs reduced with ``accumulator``'s ``aggregate`` and combined
    across microbatches by it (by default concatenated: the same result as the whole ``vmap``)."""
    if out_axes != 0:
        raise NotImplementedError(f"micro_vmap: only out_axes=0 is supported, got {out_axes!r}.")
    in_axes = (in_axes,) if isinstance(in_axes, int) else tuple(in_axes)

    def vmap_then_reduce(*args, kwargs):
        out = vmap_fn(fun, in_axes, out_axes)(*args, **kwargs)
        size = tree_leaves(out)[0].shape[0]
        return _canonicalize(accumulator, size).aggregate(out)

    inner = microbatch(vmap_then_reduce, argnums=tuple(i for i, ax in enumerate(in_axes) if ax is not None),
                       argnames="kwargs", microbatch_size=microbatch_size, accumulator=accumulator,
                       in_axes=tuple(ax for ax in in_axes if ax is not None) + (0,),
                       num_real_microbatches=num_real_microbatches)
    return lambda *args, **kwargs: inner(*args, kwargs=kwargs)


def _with_aux(fun: Callable, has_aux: bool) -> Callable:
    return fun if has_aux else (lambda *args, **kwargs: (fun(*args, **kwargs), None))


def _with_extra_batch_axis(fun: Callable, batch_argnums: Sequence[int]) -> Callable:
    """``fun`` with an axis of size 1 added after the batch axis of the batch arguments (so that the per-example
    function sees a batch of one)."""
    def wrapped(*args, **kwargs):
        args = list(args)
        for i in batch_argnums:
            args[i] = tree_map(lambda x: jnp.expand_dims(x, axis=1), args[i])
        return fun(*args, **kwargs)
    return wrapped


def micro_grad(fun: Callable, has_aux: bool = False, argnums: int | Sequence[int] = 0, *,
               batch_argnums: int | Sequence[int] = 1, keep_batch_dim: bool = True,
               microbatch_size: int | None = None, accumulator=AccumulationType.SUM,
               transform_fn: Callable = lambda x: x, metrics_fn: Callable = lambda x: None,
               num_real_microbatches=None) -> Callable:
    """Per-example gradients of ``fun`` over the batch arguments ``batch_argnums``, each passed through
    ``transform_fn`` (e.g. clipped) and combined by ``accumulator`` (their sum by default), computed in
    microbatches. Returns ``(combined, Aux(values, metrics, aux))`` with the per-example values,
    ``metrics_fn`` of each gradient and auxiliary outputs, concatenated."""
    batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else tuple(batch_argnums)
    value_and_grad_fn = value_and_grad(_with_aux(fun, has_aux), argnums, has_aux=True)

    def grad_fn(*args, **kwargs):
        (value, aux), grad = value_and_grad_fn(*args, **kwargs)
        return transform_fn(grad), IndividualOutputs(values=value, metrics=metrics_fn(grad), aux=aux)

    in_axes = [None] * (max(batch_argnums) + 1)
    for i in batch_argnums:
        in_axes[i] = 0
    micro_fun = micro_vmap(grad_fn, in_axes=in_axes, accumulator=(accumulator, AccumulationType.CONCAT),
                           microbatch_size=microbatch_size, num_real_microbatches=num_real_microbatches)
    return _with_extra_batch_axis(micro_fun, batch_argnums) if keep_batch_dim else micro_fun
