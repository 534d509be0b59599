"""Emission rules for ``reduce_window`` (``stablehlo.reduce_window`` with a monoid body) and the cumulative
reductions (``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``cumlogsumexp``): one ``stablehlo.reduce_window``
over a window of the whole axis, padded with ``n - 1`` identities in front (behind when ``reverse``), stride 1,
as JAX lowers them on every platform. XLA rewrites such a scan-like reduce_window into an O(n log n) tree."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from ..hlo import (
    V,
    absv,
    build_region,
    const,
    i64_array,
    i64_pairs,
    identity,
    maximum,
    monoid,
    op,
    out_type,
    select,
    unary,
)
from ..registry import register
from ..types import scalar_type

_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum", "and": "and", "or": "or"}


@register("reduce_window")
def _reduce_window(ctx, eqn, x, init):
    p = eqn.params
    dtype = eqn.inputs[0].aval.dtype
    combine = monoid(_COMBINE[p["computation"]], dtype)
    scalar = scalar_type(dtype)
    rw = ir.Operation.create(
        "stablehlo.reduce_window", results=[out_type(eqn)], operands=[x, init],
        attributes={"window_dimensions": i64_array(p["window_dimensions"]),
                    "window_strides": i64_array(p["window_strides"]),
                    "base_dilations": i64_array(p["base_dilation"]),
                    "window_dilations": i64_array(p["window_dilation"]),
                    "padding": i64_pairs(p["padding"])},
        regions=1)
    build_region(rw.regions[0], [scalar, scalar], lambda a, b: op(f"stablehlo.{combine}", [a, b], scalar))
    return rw.result


def _logaddexp(a: V, b: V) -> V:
    """JAX's ``logaddexp`` (``jax._src.lax.other``) op for op: ``max + log1p(exp(-|a - b|))``, or ``a + b`` where
    ``a - b`` is NaN (a NaN, or two infinities of one sign)."""
    amax = maximum(a, b)
    delta = a - b
    is_nan = delta.ne(delta)
    total = a + b
    return select(is_nan, total, amax + unary("log_plus_one", unary("exponential", -absv(delta))))


# primitive -> (monoid of the body, or None for logaddexp)
_CUMULATIVE = {"cumsum": "add", "cumprod": "multiply", "cummax": "maximum", "cummin": "minimum",
               "cumlogsumexp": None}


def _cumulative(name: str):
    kind = _CUMULATIVE[name]

    def rule(ctx, eqn, x):
        aval = eqn.inputs[0].aval
        axis, n = eqn.params["axis"], aval.shape[eqn.params["axis"]]
        if n == 0:
            return x
        dtype, nd = aval.dtype, len(aval.shape)
        init = const(-np.inf if kind is None else identity(kind, dtype), dtype)
        window, padding = [1] * nd, [(0, 0)] * nd
        window[axis] = n
        padding[axis] = (0, n - 1) if eqn.params["reverse"] else (n - 1, 0)
        rw = ir.Operation.create(
            "stablehlo.reduce_window", results=[out_type(eqn)], operands=[x, init.v],
            attributes={"window_dimensions": i64_array(window), "window_strides": i64_array([1] * nd),
                        "base_dilations": i64_array([1] * nd), "window_dilations": i64_array([1] * nd),
                        "padding": i64_pairs(padding)},
            regions=1)
        scalar = scalar_type(dtype)
        if kind is None:
            body = lambda a, b: _logaddexp(V(a, (), dtype), V(b, (), dtype)).v
        else:
            combine = monoid(kind, dtype)  # booleans: or for max, and for min
            body = lambda a, b: op(f"stablehlo.{combine}", [a, b], scalar)
        build_region(rw.regions[0], [scalar, scalar], body)
        return rw.result
    return rule


for _name in _CUMULATIVE:
    register(_name)(_cumulative(_name))
