"""Windowed reductions (the ``reduce_window`` primitive, ``stablehlo.reduce_window``) and the
cumulative reductions (``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``cumlogsumexp``).

``reduce_window`` supports the monoids kiln knows how to lower: add, mul, max, min, and, or
(pass ``kiln.lax.add``, ``kiln.lax.max``, ... as ``computation``).

The cumulative reductions are primitives of their own, with JAX's names and parameters (``axis``,
``reverse``): ``make_jaxpr`` shows ``cumsum[axis=0 reverse=False]``. Each lowers, as JAX's do, to one
``stablehlo.reduce_window`` over a window of the whole axis, padded in front by ``n - 1`` identities
(behind when ``reverse``), stride 1. That reads as O(n^2) work, but XLA rewrites such a scan-like
reduce_window into a tree of reduce_windows (O(n log n)), so the numbers are JAX's, bit for bit.
Their derivatives (``ad/rules_windowed.py``) go through :func:`prefix_scan`, JAX's odd/even scan
(``associative_scan``), as JAX's do: ``cumsum`` is linear, the others differentiate that composition.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.axes import canonical_axis
from ..core.errors import ShapeError
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api

__all__ = ["reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
           "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "padtype_to_pads",
           "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"]

# monoid -> dtype kinds it accepts
MONOIDS = {"add": "iufc", "mul": "iufc", "max": "biuf", "min": "biuf", "and": "biu", "or": "biu"}


def _kind(dtype: np.dtype) -> str:
    return dtypes.kind(dtype)


def dilate_dim(d: int, dilation: int) -> int:
    """Size of a dimension of size ``d`` with ``dilation - 1`` holes between elements."""
    return 0 if d == 0 else 1 + dilation * (d - 1)


def window_output_shape(fname: str, shape, window, strides, padding, base_dilation, window_dilation,
                        negative_is_empty: bool = False):
    """The output shape of a strided, padded, dilated window over ``shape`` (XLA's formula). A padded size
    below zero is an error, or with ``negative_is_empty`` an empty dimension (JAX's shape helpers: stax asks
    for the shape of a batch of size -1, "any")."""
    out = []
    for i, (d, w, s, (lo, hi), bd, wd) in enumerate(zip(shape, window, strides, padding, base_dilation,
                                                      window_dilation)):
        padded = dilate_dim(d, bd) + lo + hi
        span = dilate_dim(w, wd)
        if padded < 0 and not negative_is_empty:
            raise ValueError(f"kiln.lax.{fname}: padding {(lo, hi)} of dimension {i} leaves a negative size")
        out.append(0 if padded < span else (padded - span) // s + 1)
    return tuple(out)


def _reduce_window_rule(x: ShapedArray, init: ShapedArray, *, computation: str, window_dimensions,
                        window_strides, padding, base_dilation, window_dilation) -> ShapedArray:
    name = "reduce_window"
    if computation not in MONOIDS:
        raise ValueError(f"kiln.lax.{name}: unknown computation {computation!r}")
    if _kind(x.dtype) not in MONOIDS[computation]:
        raise TypeError(f"kiln.lax.{name}: computation {computation} does not accept dtype {x.dtype.name}")
    if init.shape != () or init.dtype != x.dtype:
        raise TypeError(f"kiln.lax.{name}: init_value must be a scalar of the operand's dtype {x.dtype.name}, "
                        f"got {init.str_short()}")
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("padding", padding), ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if len(v) != x.ndim:
            raise ShapeError(f"kiln.lax.{name}: {what} {tuple(v)} must have one entry per dimension of the "
                             f"operand shape {x.shape}")
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if any(e < 1 for e in v):
            raise ValueError(f"kiln.lax.{name}: {what} must be positive, got {tuple(v)}")
    shape = window_output_shape(name, x.shape, window_dimensions, window_strides, padding, base_dilation,
                                window_dilation)
    return ShapedArray(shape, x.dtype, x.weak_type)


reduce_window_p = Primitive("reduce_window", _reduce_window_rule)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    """Explicit (low, high) pads for ``'SAME'``/``'VALID'`` (``'SAME'``: output size ceil(n / stride),
    the extra padding going high, as TensorFlow and JAX)."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind in ("SAME", "SAME_LOWER"):
        pads = []
        for n, w, s in zip(in_shape, window_shape, window_strides):
            out = -(-n // s)
            total = max((out - 1) * s + w - n, 0)
            lo = total // 2 if kind == "SAME" else -(-total // 2)
            pads.append((lo, total - lo))
        return pads
    raise ValueError(f"kiln.lax: unknown padding {padding!r}; use 'SAME', 'VALID' or a sequence of "
                     "(low, high) pairs")


def _int_tuple(fname: str, what: str, v: Any, n: int, default: int | None = None,
               length_error: type[Exception] = ValueError) -> tuple[int, ...]:
    """``v`` as ``n`` ints. A wrong length raises ``length_error``: JAX raises ``ValueError`` for
    convolutions and ``TypeError`` (kiln's ``ShapeError``) for ``reduce_window``."""
    if v is None:
        if default is None:
            raise ValueError(f"kiln.lax.{fname}: {what} is required")
        return (default,) * n
    try:
        out = tuple(int(e) for e in v)
    except TypeError:
        raise TypeError(f"kiln.lax.{fname}: {what} must be a sequence of ints, got {v!r}") from None
    if len(out) != n:
        raise length_error(f"kiln.lax.{fname}: {what} {out} must have one entry per dimension of the operand "
                           f"({n})")
    return out


def normalize_padding(fname: str, padding: Any, in_shape, window_shape, strides) -> tuple[tuple[int, int], ...]:
    """``'SAME'``/``'VALID'`` or a sequence of (low, high) pairs, as a tuple of int pairs."""
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID", "SAME_LOWER"):
            raise ValueError(f"kiln.lax.{fname}: unknown padding {padding!r}; use 'SAME', 'VALID' or a sequence "
                             "of (low, high) pairs")
        return tuple(padtype_to_pads(in_shape, window_shape, strides, padding))
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"kiln.lax.{fname}: padding must be 'SAME', 'VALID' or a sequence of (low, high) pairs, "
                        f"got {padding!r}") from None
    if len(pads) != len(in_shape):
        raise ValueError(f"kiln.lax.{fname}: padding {pads} must have one (low, high) pair per spatial "
                         f"dimension ({len(in_shape)})")
    return pads


# Functions reduce_window recognises as a monoid (and then reduces with the matching primitive). kiln.numpy
# adds its ufuncs (register_monoids): a higher floor, which this one cannot import.
_MONOIDS: dict[Callable, str] = {api.add: "add", api.mul: "mul", api.max: "max", api.min: "min",
                                 api.bitwise_and: "and", api.bitwise_or: "or"}


def register_monoids(table: dict[Callable, str]) -> None:
    """Let ``reduce_window`` recognise more functions as the monoids ``add``/``mul``/``max``/``min``/``and``/``or``."""
    _MONOIDS.update(table)


def _monoid_of(computation: Callable) -> str | None:
    try:
        return _MONOIDS.get(computation)
    except TypeError:  # an unhashable callable
        return None


def reduce_window(operand: Any, init_value: Any, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce each window of ``operand`` with ``computation``, starting from ``init_value``.

    ``computation`` is one of the monoids ``kiln.lax.add``, ``mul``, ``max``, ``min``,
    ``bitwise_and``, ``bitwise_or`` (kiln does not trace arbitrary reducers here). ``padding`` is
    ``'SAME'``, ``'VALID'`` or one (low, high) pair per dimension; padded positions hold
    ``init_value``. ``window_strides`` defaults to 1 per dimension, ``padding`` to ``'VALID'``.
    """
    if isinstance(operand, (tuple, list)):
        raise NotImplementedError("kiln.lax.reduce_window: reducing several operands together is not supported; "
                                  "call it once per operand")
    monoid = _monoid_of(computation) if callable(computation) else None
    if monoid is None:
        raise TypeError(f"kiln.lax.reduce_window: computation {computation!r:.60} is not supported: kiln's "
                        "reduce_window takes one of the monoids kiln.lax.add, kiln.lax.mul, kiln.lax.max, "
                        "kiln.lax.min, kiln.lax.bitwise_and, kiln.lax.bitwise_or")
    aval = abstractify(operand)
    n = aval.ndim
    window = _int_tuple("reduce_window", "window_dimensions", window_dimensions, n, length_error=ShapeError)
    strides = _int_tuple("reduce_window", "window_strides", window_strides, n, 1, ShapeError)
    bd = _int_tuple("reduce_window", "base_dilation", base_dilation, n, 1, ShapeError)
    wd = _int_tuple("reduce_window", "window_dilation", window_dilation, n, 1, ShapeError)
    # As JAX: string padding is computed from the operand's (undilated) shape and the dilated window.
    pads = normalize_padding("reduce_window", padding, aval.shape,
                             tuple(dilate_dim(w, d) for w, d in zip(window, wd)), strides)
    if api._is_py_scalar(init_value):
        init_value = api.literal(init_value, aval.dtype, aval.weak_type)
    elif isinstance(init_value, (np.ndarray, np.generic)) and np.ndim(init_value) == 0:
        init_value = api.literal(np.asarray(init_value), dtypes.canonicalize_dtype(np.asarray(init_value).dtype))
    return reduce_window_p.bind(operand, init_value, computation=monoid, window_dimensions=window,
                                window_strides=strides, padding=pads, base_dilation=bd, window_dilation=wd)


def _identity(monoid: str, dtype: np.dtype) -> Any:
    kind = _kind(dtype)
    if monoid in ("add", "or"):
        return 0
    if monoid == "mul":
        return 1
    if monoid == "and":
        return dtypes.highest(dtype) if kind in "bu" else -1
    return dtypes.lowest(dtype) if monoid == "max" else dtypes.highest(dtype)


def _windowed(monoid: str):
    def fn(operand: Any, window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
           padding: str | Sequence[tuple[int, int]] = "VALID", base_dilation: Sequence[int] | None = None,
           window_dilation: Sequence[int] | None = None) -> Any:
        aval = abstractify(operand)
        if window_strides is None:
            window_strides = (1,) * aval.ndim
        init = api.literal(_identity(monoid, aval.dtype), aval.dtype, aval.weak_type)
        comp = {"add": api.add, "max": api.max, "min": api.min}[monoid]
        return reduce_window(operand, init, comp, window_dimensions, window_strides, padding, base_dilation,
                             window_dilation)
    fn.__name__ = f"reduce_window_{'sum' if monoid == 'add' else monoid}"
    fn.__doc__ = (f"``reduce_window`` with ``{monoid}`` and its identity as the initial value "
                  "(strides default to 1, padding to 'VALID').")
    return fn


reduce_window_sum = _windowed("add")
reduce_window_max = _windowed("max")
reduce_window_min = _windowed("min")


# -- cumulative reductions -----------------------------------------------------------------------
_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "floating", "c": "complex"}


def _check_cumulative_dtype(name: str, kinds: str, dtype: np.dtype) -> None:
    if _kind(dtype) not in kinds:
        raise TypeError(f"kiln.lax.{name}: does not accept dtype {np.dtype(dtype).name}; it takes "
                        f"{', '.join(_KIND_NAMES[k] for k in kinds)} arrays")


def _cumulative_rule(name: str, kinds: str):
    def rule(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        _check_cumulative_dtype(name, kinds, x.dtype)
        if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
            raise ValueError(f"kiln.lax.{name}: axis {axis!r} is out of bounds for an array of dimension {x.ndim} "
                             "(the primitive takes a non-negative axis)")
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return rule


# name -> the dtype kinds it accepts (JAX's take numbers; kiln's cummax/cummin take booleans too, as or/and)
CUMULATIVE_KINDS = {"cumsum": "iufc", "cumprod": "iufc", "cummax": "biuf", "cummin": "biuf", "cumlogsumexp": "f"}
cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p = (
    Primitive(n, _cumulative_rule(n, k)) for n, k in CUMULATIVE_KINDS.items())


def _cumulative(prim: Primitive):
    name = prim.name

    def fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        aval = abstractify(operand)
        _check_cumulative_dtype(name, CUMULATIVE_KINDS[name], aval.dtype)
        axis = canonical_axis(f"kiln.lax.{name}", axis, aval.ndim)
        return prim.bind(operand, axis=axis, reverse=bool(reverse))
    fn.__name__ = name
    fn.__doc__ = (f"Cumulative ``{name[3:]}`` along ``axis`` (from the end when ``reverse``); the result has "
                  "the operand's shape and dtype.")
    return fn


cumsum = _cumulative(cumsum_p)
cumprod = _cumulative(cumprod_p)
cummax = _cumulative(cummax_p)
cummin = _cumulative(cummin_p)
cumlogsumexp = _cumulative(cumlogsumexp_p)


# -- the parallel prefix scan (JAX's associative_scan) -------------------------------------------------
def _slice_axis(x: Any, start: int, stop: int | None, step: int, axis: int) -> Any:
    """``x[start:stop:step]`` along ``axis`` (a negative ``stop`` counts from the end)."""
    shape = abstractify(x).shape
    n = shape[axis]
    stop = n if stop is None else (stop if stop >= 0 else n + stop)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, max(stop, start), step
    return api.slice(x, starts, limits, strides)


def _interleave(even: Any, odd: Any, axis: int) -> Any:
    """``[e0, o0, e1, o1, ...]`` along ``axis`` (``even`` has as many elements as ``odd`` or one more), as JAX
    builds it: each padded with zeros into the other's places (interior padding 1), then added (or'ed)."""
    aval = abstractify(even)
    n_e, n_o = aval.shape[axis], abstractify(odd).shape[axis]
    e_cfg, o_cfg = [(0, 0, 0)] * aval.ndim, [(0, 0, 0)] * aval.ndim
    e_cfg[axis] = (0, 1 if n_e == n_o else 0, 1)
    o_cfg[axis] = (1, 0 if n_e == n_o else 1, 1)
    zero = api.literal(0, aval.dtype, aval.weak_type)
    combine = api.bitwise_or if aval.dtype == np.bool_ else api.add
    return combine(api.pad(even, zero, e_cfg), api.pad(odd, zero, o_cfg))


def prefix_scan(combine: Callable, xs: Sequence[Any], axis: int, reverse: bool = False) -> list:
    """All prefix combinations along ``axis`` of the arrays ``xs`` (one size along it), for an associative
    ``combine(a_list, b_list) -> list``: ``[x0, c(x0, x1), c(c(x0, x1), x2), ...]`` (from the end when ``reverse``).

    JAX's ``associative_scan``, op for op (so that derivatives taken through it round as JAX's): combine
    neighbouring pairs, scan the half-length result recursively, combine its elements with the even positions,
    and interleave the two halves.
    """
    xs = list(xs)
    if reverse:
        xs = [api.rev(x, (axis,)) for x in xs]

    def scan(elems):
        n = abstractify(elems[0]).shape[axis]
        if n < 2:
            return elems
        reduced = combine([_slice_axis(x, 0, -1, 2, axis) for x in elems],
                          [_slice_axis(x, 1, None, 2, axis) for x in elems])
        odd = scan(reduced)
        if n % 2 == 0:
            even = combine([_slice_axis(o, 0, -1, 1, axis) for o in odd],
                           [_slice_axis(x, 2, None, 2, axis) for x in elems])
        else:
            even = combine(odd, [_slice_axis(x, 2, None, 2, axis) for x in elems])
        even = [api.concatenate([_slice_axis(x, 0, 1, 1, axis), e], axis) for x, e in zip(elems, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(xs)
    return [api.rev(x, (axis,)) for x in out] if reverse else out
