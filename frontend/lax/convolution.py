"""Convolution: the ``conv_general_dilated`` primitive (``stablehlo.convolution``) and the lax
functions over it (``conv_general_dilated``, ``conv``, ``conv_with_general_padding``).

As in XLA (and ``jax.lax``), this is a cross-correlation: the kernel is not flipped.
Dimension numbers say where the batch, feature and spatial dimensions of the input (``lhs``), the
kernel (``rhs``) and the output are; they are a :class:`ConvDimensionNumbers` of dimension indices
or three strings such as ``('NCHW', 'OIHW', 'NCHW')`` or ``('NHWC', 'HWIO', 'NHWC')``.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.errors import KilnError, ShapeError
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from .precision import canonicalize_precision
from .sharding import takes_out_sharding
from .windowed import _int_tuple, dilate_dim, normalize_padding, window_output_shape

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding"]


class ConvDimensionNumbers(NamedTuple):
    """Where the dimensions are, as indices: ``lhs_spec = (batch, feature, *spatial)`` of the input,
    ``rhs_spec = (out feature, in feature, *spatial)`` of the kernel, ``out_spec = (batch, feature,
    *spatial)`` of the output. Spatial dimensions pair up in order."""
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


class DimensionNumbersError(KilnError, TypeError, ValueError):
    """Dimension-number strings that do not name each dimension once: a TypeError, as JAX raises (and a
    ValueError, as kiln raised before)."""


def _spec_from_string(fname: str, spec: str, ndim: int, what: str, lead: str, spatial_order: str) -> tuple[int, ...]:
    if len(spec) != ndim:
        raise ShapeError(f"kiln.lax.{fname}: {what} dimension string {spec!r} has {len(spec)} letters but the "
                         f"{what} has {ndim} dimensions")
    if len(set(spec)) != len(spec) or any(c not in spec for c in lead):
        raise DimensionNumbersError(f"kiln.lax.{fname}: {what} dimension string {spec!r} must name each dimension "
                                    f"once and contain {lead[0]!r} and {lead[1]!r}")
    spatial = [c for c in spec if c not in lead]
    if sorted(spatial) != sorted(spatial_order):
        raise DimensionNumbersError(f"kiln.lax.{fname}: the spatial dimensions of {what} string {spec!r} do not "
                                    f"match those of the kernel string ({''.join(spatial_order)!r})")
    return (spec.index(lead[0]), spec.index(lead[1])) + tuple(spec.index(c) for c in spatial_order)


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """Normalise ``dimension_numbers`` (None, a :class:`ConvDimensionNumbers` or three strings)."""
    fname = "conv_general_dilated"
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise ShapeError(f"kiln.lax.{fname}: lhs and rhs must have the same rank, got shapes {tuple(lhs_shape)} "
                         f"and {tuple(rhs_shape)}")
    if nd < 2:
        raise ValueError(f"kiln.lax.{fname}: operands need at least 2 dimensions (batch and feature), got shape "
                         f"{tuple(lhs_shape)}")
    if dimension_numbers is None:
        spec = tuple(range(nd))
        return ConvDimensionNumbers(spec, spec, spec)
    if isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3 and all(
            isinstance(s, str) for s in dimension_numbers):
        lhs_s, rhs_s, out_s = dimension_numbers
        if len(rhs_s) != nd or len(set(rhs_s)) != nd or "O" not in rhs_s or "I" not in rhs_s:
            raise DimensionNumbersError(f"kiln.lax.{fname}: kernel dimension string {rhs_s!r} must name each of "
                                        f"the {nd} kernel dimensions once and contain 'O' and 'I'")
        order = [c for c in rhs_s if c not in "OI"]
        return ConvDimensionNumbers(_spec_from_string(fname, lhs_s, nd, "lhs", "NC", order),
                                    _spec_from_string(fname, rhs_s, nd, "rhs", "OI", order),
                                    _spec_from_string(fname, out_s, nd, "output", "NC", order))
    try:
        specs = tuple(tuple(int(d) for d in s) for s in dimension_numbers)
    except (TypeError, ValueError):
        specs = ()
    if len(specs) != 3:
        raise TypeError(f"kiln.lax.{fname}: dimension_numbers must be None, a ConvDimensionNumbers or three "
                        f"strings like ('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    for what, s in zip(("lhs_spec", "rhs_spec", "out_spec"), specs):
        if sorted(s) != list(range(nd)):
            raise ValueError(f"kiln.lax.{fname}: {what} {s} is not a permutation of the {nd} dimensions")
    return ConvDimensionNumbers(*specs)


def _conv_rule(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision, preferred_element_type):
    del precision  # (None or a pair of lax.Precision): how XLA computes, not what
    fname = "conv_general_dilated"
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"kiln.lax.{fname}: lhs and rhs must have one dtype, got {lhs.dtype.name} and "
                        f"{rhs.dtype.name} (kiln.lax does not promote)")
    if lhs.dtype == np.bool_:
        raise TypeError(f"kiln.lax.{fname}: does not accept dtype bool")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nd = lhs.ndim
    if rhs.ndim != nd or any(len(s) != nd for s in dimension_numbers):
        raise ValueError(f"kiln.lax.{fname}: lhs {lhs.shape}, rhs {rhs.shape} and dimension numbers "
                         f"{tuple(dimension_numbers)} must agree in rank")
    n_sp = nd - 2
    for what, v in (("window_strides", window_strides), ("padding", padding), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if len(v) != n_sp:
            raise ValueError(f"kiln.lax.{fname}: {what} {tuple(v)} must have one entry per spatial dimension "
                             f"({n_sp})")
    for what, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(e < 1 for e in v):
            raise ValueError(f"kiln.lax.{fname}: {what} must be positive, got {tuple(v)}")
    fgc, bgc = feature_group_count, batch_group_count
    if fgc < 1 or bgc < 1:
        raise ValueError(f"kiln.lax.{fname}: feature_group_count ({fgc}) and batch_group_count ({bgc}) must be "
                         "positive")
    if fgc > 1 and bgc > 1:
        raise ValueError(f"kiln.lax.{fname}: at most one of feature_group_count ({fgc}) and batch_group_count "
                         f"({bgc}) may exceed 1")
    batch, in_feat = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_feat, k_in = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if in_feat % fgc or in_feat // fgc != k_in:
        raise ValueError(f"kiln.lax.{fname}: the input has {in_feat} features; with feature_group_count={fgc} "
                         f"the kernel's input-feature dimension must be {in_feat // fgc if in_feat % fgc == 0 else '?'}"
                         f" (input features divisible by the group count), got {k_in} (lhs shape {lhs.shape}, "
                         f"rhs shape {rhs.shape})")
    if out_feat % fgc:
        raise ValueError(f"kiln.lax.{fname}: the kernel's {out_feat} output features are not divisible by "
                         f"feature_group_count={fgc}")
    if batch % bgc or out_feat % bgc:
        raise ValueError(f"kiln.lax.{fname}: batch size {batch} and output features {out_feat} must be divisible "
                         f"by batch_group_count={bgc}")
    in_sp = [lhs.shape[d] for d in lhs_spec[2:]]
    k_sp = [rhs.shape[d] for d in rhs_spec[2:]]
    sp = window_output_shape(fname, in_sp, k_sp, window_strides, padding, lhs_dilation, rhs_dilation)
    shape = [0] * nd
    shape[out_spec[0]], shape[out_spec[1]] = batch // bgc, out_feat
    for d, s in zip(out_spec[2:], sp):
        shape[d] = s
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(tuple(shape), dtype, lhs.weak_type and rhs.weak_type)


conv_general_dilated_p = Primitive("conv_general_dilated", _conv_rule)


@takes_out_sharding(positional=True)
def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """General N-d convolution (cross-correlation) with strides, padding and dilations.

    ``padding`` is ``'SAME'``, ``'VALID'`` or one (low, high) pair per spatial dimension;
    ``lhs_dilation`` dilates the input (a transposed convolution), ``rhs_dilation`` the kernel
    (atrous convolution). ``feature_group_count`` gives grouped/depthwise convolutions,
    ``batch_group_count`` groups over the batch (as XLA). Spatial parameters are in the order of the
    kernel's spatial dimensions. ``precision`` is as :func:`kiln.lax.dot_general`'s (one per operand,
    emitted as StableHLO's ``precision_config``; None takes ``kiln.default_matmul_precision``).
    """
    fname = "conv_general_dilated"
    precision = canonicalize_precision(f"lax.{fname}", precision)
    lhs_aval, rhs_aval = abstractify(lhs), abstractify(rhs)
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    n_sp = lhs_aval.ndim - 2
    strides = _int_tuple(fname, "window_strides", window_strides, n_sp)
    ld = _int_tuple(fname, "lhs_dilation", lhs_dilation, n_sp, 1)
    rd = _int_tuple(fname, "rhs_dilation", rhs_dilation, n_sp, 1)
    for what, v in (("window_strides", strides), ("lhs_dilation", ld), ("rhs_dilation", rd)):
        if any(e < 1 for e in v):  # (before SAME padding divides by a stride)
            raise ValueError(f"kiln.lax.{fname}: {what} must be positive, got {v}")
    for what, v in (("feature_group_count", feature_group_count), ("batch_group_count", batch_group_count)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"kiln.lax.{fname}: {what} must be an int, got {v!r}")
    if isinstance(padding, str):
        if any(d != 1 for d in ld):
            raise ValueError(f"kiln.lax.{fname}: string padding {padding!r} is not supported together with "
                             "lhs_dilation (a transposed convolution): give explicit (low, high) pairs")
        in_sp = [lhs_aval.shape[d] for d in dn.lhs_spec[2:]]
        k_sp = [dilate_dim(rhs_aval.shape[d], r) for d, r in zip(dn.rhs_spec[2:], rd)]
        pads = normalize_padding(fname, padding, in_sp, k_sp, strides)
    else:
        pads = normalize_padding(fname, padding, [0] * n_sp, [0] * n_sp, strides)
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=ld, rhs_dilation=rd,
        dimension_numbers=ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dn)),
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=precision, preferred_element_type=pet)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """Convolution of an ``NC...`` input with an ``OI...`` kernel (no dilation, no groups)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                              lhs_dilation: Sequence[int] | None, rhs_dilation: Sequence[int] | None,
                              precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Convolution of an ``NC...`` input with an ``OI...`` kernel, with padding and dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)
