"""Batching rules of ``lax/callbacks.py`` (as JAX's):

- ``debug_callback`` runs once per batch element (unrolled), in order; ``inspect_sharding`` once, on the batched value;
- ``pure_callback`` follows its ``vmap_method``: ``sequential`` (a loop over the batch, one call per element),
  ``sequential_unrolled`` (the same loop unrolled), ``expand_dims`` (one call; unbatched arguments get a
  leading axis of size 1), ``broadcast_all`` (one call; unbatched arguments broadcast to the batch size),
  ``legacy_vectorized`` (one call; unbatched arguments as they are); without one, vmap raises;
- ``io_callback`` runs once per batch element in a loop; an ordered one cannot be batched.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import lax
from ..lax import callbacks
from .core import BatchingError, batch_rules, move_dim

# lax.map (control floor, above this one: it installs itself here, see control/loops.py). Until then the
# sequential loop is unrolled.
sequential_map: Callable[..., Any] | None = None


class VmapMethodError(BatchingError, NotImplementedError):
    """A pure callback without a usable ``vmap_method`` was vmapped (JAX raises NotImplementedError)."""


def _element(x, d, i):
    return x if d is None else lax.index_in_dim(x, i, axis=d, keepdims=False)


def _debug_batch(ctx, args, dims, **params):
    for i in range(ctx.size):
        callbacks.debug_callback_p.bind(*[_element(x, d, i) for x, d in zip(args, dims)], **params)
    return [], []


def _batched_avals(result_avals, size: int) -> tuple:
    return tuple(a.update(shape=(size, *a.shape)) for a in result_avals)


def sequential(prim, ctx, args, dims, unroll: bool, **params):
    """``prim`` applied to each batch element in turn (a ``lax.map`` loop, or unrolled); ``params`` hold its
    unbatched ``result_avals``."""
    n_out = len(params["result_avals"])
    front = [move_dim(x, d, 0, ctx.size) if d is not None else x for x, d in zip(args, dims)]
    batched = [d is not None for d in dims]

    def one(elements):
        it = iter(elements)
        return prim.bind(*[next(it) if b else x for x, b in zip(front, batched)], **params)
    if not unroll and sequential_map is not None:
        outs = sequential_map(one, [x for x, b in zip(front, batched) if b])
        return list(outs), [0] * n_out
    per = [one([x[i] for x, b in zip(front, batched) if b]) for i in range(ctx.size)]
    return [lax.concatenate([lax.expand_dims(p[j], (0,)) for p in per], 0) for j in range(n_out)], [0] * n_out


VECTORIZED = ("expand_dims", "broadcast_all", "legacy_vectorized")


def vectorized_args(ctx, args, dims, vmap_method: str) -> list:
    """The arguments of one call over the whole batch (``vmap_method`` one of :data:`VECTORIZED`): batched
    ones with the batch axis first; unbatched ones with a leading axis of size 1 (``expand_dims``), broadcast
    to the batch size (``broadcast_all``) or as they are (``legacy_vectorized``)."""
    size = ctx.size if vmap_method == "broadcast_all" else 1
    new = []
    for x, d in zip(args, dims):
        if d is not None:
            new.append(move_dim(x, d, 0, ctx.size))
        elif vmap_method == "legacy_vectorized":
            new.append(x)
        else:
            new.append(move_dim(x, None, 0, size))
    return new


def _pure_batch(ctx, args, dims, *, callback, result_avals, vmap_method):
    params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return sequential(callbacks.pure_callback_p, ctx, args, dims, vmap_method == "sequential_unrolled", **params)
    if vmap_method in VECTORIZED:
        new = vectorized_args(ctx, args, dims, vmap_method)
        avals = _batched_avals(result_avals, ctx.size)
        cb = callback.with_result_types([(a.shape, a.dtype) for a in avals])
        outs = callbacks.pure_callback_p.bind(*new, callback=cb, result_avals=avals, vmap_method=vmap_method)
        return list(outs), [0] * len(outs)
    raise VmapMethodError(
        f"kiln.vmap: vmap of {callback.name} needs its vmap_method: pass vmap_method= one of 'sequential', "
        "'sequential_unrolled', 'expand_dims', 'broadcast_all' or 'legacy_vectorized' to kiln.pure_callback "
        f"(got vmap_method={vmap_method!r})")


def _io_batch(ctx, args, dims, *, callback, result_avals, ordered):
    if ordered:
        raise BatchingError(f"kiln.vmap: cannot vmap the ordered IO callback {callback.name} (as in JAX); call it "
                            "with ordered=False or outside vmap")
    return sequential(callbacks.io_callback_p, ctx, args, dims, False, callback=callback,
                      result_avals=result_avals, ordered=False)


def _inspect_batch(ctx, args, dims, **params):
    # The batched value's layout, as JAX reports it (not each element's)
    callbacks.inspect_sharding_p.bind(*args, **params)
    return [], []


batch_rules[callbacks.debug_callback_p] = _debug_batch
batch_rules[callbacks.inspect_sharding_p] = _inspect_batch
batch_rules[callbacks.pure_callback_p] = _pure_batch
batch_rules[callbacks.io_callback_p] = _io_batch
