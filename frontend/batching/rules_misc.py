"""Batching rules of ``lax/misc.py`` (and of ``call_exported``: once per batch element, unrolled):
``reduce_precision``, ``optimization_barrier`` and ``xla_metadata_value`` keep each batch dimension where it
is; the general ``reduce`` moves it to the front (init values must be unbatched, as in JAX);
``rng_bit_generator`` with a batch of keys runs once per key (unrolled)."""
from __future__ import annotations

from .. import lax
from ..driver.export import call_exported_p
from ..lax import misc
from .core import BatchingError, batch_rules, move_dim


def _reduce_precision_rule(ctx, args, dims, **params):
    return misc.reduce_precision_p.bind(args[0], **params), dims[0]


def _metadata_rule(ctx, args, dims, **params):
    return misc.xla_metadata_value_p.bind(args[0], **params), dims[0]


def _barrier_rule(ctx, args, dims):
    return misc.optimization_barrier_p.bind(*args), list(dims)


def _reduce_rule(ctx, args, dims, *, computation, dimensions):
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise BatchingError("kiln.vmap: kiln.lax.reduce with batched init_values is not supported (as in JAX); "
                            "make the init values constants of the reduced function")
    ops = [move_dim(a, d, 0, ctx.size) for a, d in zip(args[:n], dims[:n])]
    outs = misc.reduce_p.bind(*ops, *args[n:], computation=computation,
                              dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


def _rng_rule(ctx, args, dims, **params):
    key = move_dim(args[0], dims[0], 0, ctx.size)
    keys, bits = [], []
    for i in range(ctx.size):
        k, b = misc.rng_bit_generator_p.bind(lax.index_in_dim(key, i, 0, keepdims=False), **params)
        keys.append(k)
        bits.append(b)
    return [lax.stack(keys), lax.stack(bits)], [0, 0]


def _platform_index_rule(ctx, args, dims, **params):
    # No operands, so never batched; listed so that every primitive has a rule.
    return misc.platform_index_p.bind(**params), None


def _call_exported_rule(ctx, args, dims, **params):
    """The module runs once per batch element (unrolled), as it was exported for unbatched shapes."""
    args = [a if d is None else move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
    rows = [call_exported_p.bind(*[a if d is None else lax.index_in_dim(a, i, 0, keepdims=False)
                                   for a, d in zip(args, dims)], **params) for i in range(ctx.size)]
    return [lax.stack(list(col)) for col in zip(*rows)], [0] * len(params["out_avals"])


batch_rules[call_exported_p] = _call_exported_rule
batch_rules[misc.platform_index_p] = _platform_index_rule
batch_rules[misc.reduce_precision_p] = _reduce_precision_rule
batch_rules[misc.optimization_barrier_p] = _barrier_rule
batch_rules[misc.xla_metadata_value_p] = _metadata_rule
batch_rules[misc.reduce_p] = _reduce_rule
batch_rules[misc.rng_bit_generator_p] = _rng_rule
