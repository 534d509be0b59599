"""Derivative rules of ``lax/misc.py``: ``reduce_precision`` (linear: the same rounding of the tangent,
as JAX), ``xla_metadata_value`` (linear; its transpose is the identity), ``optimization_barrier`` (a barrier on
the primals and one on the tangents), the general ``reduce`` (forward mode through a tree of applications of the
computation, as JAX, so that reverse mode works too); ``rng_bit_generator`` has no derivative."""
from __future__ import annotations

import math

from ..core.tracing import abstractify, eval_ir, trace_to_ir
from ..driver.export import ExportDerivativeError, call_exported_p
from ..lax import api, misc
from .jvp import jvp_eval, jvp_rules, linear_jvp, non_differentiable
from .tangents import Zero, instantiate, tangent_aval
from .transpose import transpose_rules

non_differentiable.update({misc.rng_bit_generator_p, misc.platform_index_p})

linear_jvp(misc.reduce_precision_p)
transpose_rules[misc.reduce_precision_p] = lambda ct, x, **params: [misc.reduce_precision_p.bind(ct, **params)]

# set_xla_metadata(x, ...): the tangent is tagged too (forward mode), the cotangent is not (as JAX: a tagged value
# tags the forward pass only; a context manager tags the backward pass too).
linear_jvp(misc.xla_metadata_value_p)
transpose_rules[misc.xla_metadata_value_p] = lambda ct, x, **params: [ct]


def _barrier_jvp(primals, tangents):
    outs = misc.optimization_barrier_p.bind(*primals)
    live = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]
    touts = [Zero(tangent_aval(abstractify(o))) for o in outs]
    if live:
        for i, t in zip(live, misc.optimization_barrier_p.bind(*[tangents[i] for i in live])):
            touts[i] = t
    return outs, touts


def _barrier_transpose(cts, *xs):
    live = [i for i, c in enumerate(cts) if not isinstance(c, Zero)]
    out = [None] * len(xs)
    if live:
        for i, c in zip(live, misc.optimization_barrier_p.bind(*[cts[i] for i in live])):
            out[i] = c
    return out


jvp_rules[misc.optimization_barrier_p] = _barrier_jvp
transpose_rules[misc.optimization_barrier_p] = _barrier_transpose


def _elementwise(computation, ndim: int):
    """The scalar computation (a ClosedIR) applied elementwise to arrays of ``ndim`` dimensions."""
    from ..batching.api import vmap

    def fn(*args):
        return eval_ir(computation.ir, computation.consts, args)
    for _ in range(ndim):
        fn = vmap(fn)
    return fn


def _reduce_jvp(primals, tangents, *, computation, dimensions):
    n = len(primals) // 2
    ops, inits = list(primals[:n]), list(primals[n:])
    if any(not isinstance(t, Zero) for t in tangents[n:]):
        raise NotImplementedError("kiln: differentiation of kiln.lax.reduce with respect to its init_values is "
                                  "not implemented (as in JAX); pass constant init values")
    shape = abstractify(ops[0]).shape
    kept = [i for i in range(len(shape)) if i not in dimensions]
    size = math.prod(shape[d] for d in dimensions)
    kept_shape = tuple(shape[i] for i in kept)
    reducer = _elementwise(computation, 1 + len(kept))

    def tree(*args):
        xs, init = [api.reshape(x, (size,) + kept_shape, tuple(dimensions) + tuple(kept)) for x in args[:n]], args[n:]
        length = size
        while length > 1:
            first = (length + 1) // 2
            lo = [api.slice(x, (0,) * (1 + len(kept)), (first,) + kept_shape) for x in xs]
            hi = [api.slice(x, (first,) + (0,) * len(kept), (length,) + kept_shape) for x in xs]
            if length - first != first:
                config = [(0, 1, 0)] + [(0, 0, 0)] * len(kept)
                hi = [api.pad(h, i, config) for h, i in zip(hi, init)]
            xs = list(reducer(*lo, *hi))
            length = first
        if length == 0:
            return [api.broadcast_in_dim(i, kept_shape, ()) for i in init]
        return [api.reshape(x, kept_shape) for x in xs]

    closed, _ = trace_to_ir(tree, [abstractify(a) for a in ops + inits], name="reduce_jvp")
    outs, touts = jvp_eval(closed.ir, closed.consts, ops + inits, list(tangents[:n]) + list(tangents[n:]))
    return outs, [t if isinstance(t, Zero) else instantiate(t) for t in touts]


jvp_rules[misc.reduce_p] = _reduce_jvp


def _call_exported_jvp(primals, tangents, *, name, **params):
    # The VJP of an exported f is exported as f_vjp, its VJP as f_vjp_vjp, ...: the derivative's order is asked
    order, base = 1, name
    while base.endswith("_vjp"):
        order, base = order + 1, base[:-len("_vjp")]
    stored = f"serialize(vjp_order={order}) or higher for this derivative of order {order}"
    raise ExportDerivativeError(
        f"kiln.export: cannot differentiate the exported {name!r}: it has no VJP (kiln records one when every "
        f"argument and result is floating or complex; a deserialized Exported needs {stored}), and "
        "forward mode is not available for exported functions (as in JAX); export the derivative you need as a "
        "function of its own, e.g. kiln.export.export(kiln.jit(kiln.grad(f)))")


jvp_rules[call_exported_p] = _call_exported_jvp
