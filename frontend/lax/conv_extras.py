"""Convolution helpers over ``conv_general_dilated`` (no primitive of their own): ``conv_transpose``,
``conv_general_dilated_patches``, ``conv_general_dilated_local``, and the static shape helpers
``conv_shape_tuple``, ``conv_general_shape_tuple``, ``conv_transpose_shape_tuple``,
``conv_general_permutations`` and ``reduce_window_shape_tuple`` (as ``jax.lax``)."""
from __future__ import annotations

import math
from typing import Any, Sequence, Tuple, Union

import numpy as np

from ..core.tracing import abstractify
from . import api
from .convolution import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated
from .precision import canonicalize_precision
from .windowed import dilate_dim, padtype_to_pads, window_output_shape

__all__ = [
    "ConvGeneralDilatedDimensionNumbers", "conv_general_dilated_local", "conv_general_dilated_patches",
    "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
    "conv_transpose_shape_tuple", "reduce_window_shape_tuple",
]

# The forms ``dimension_numbers=`` takes (a type alias, as ``jax.lax``'s).
ConvGeneralDilatedDimensionNumbers = Union[Tuple[str, str, str], ConvDimensionNumbers, None]


def conv_general_permutations(dimension_numbers: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """For three dimension strings (lhs, rhs, out), the permutations that bring each operand to
    ``NC<spatial>`` / ``OI<spatial>`` layout, spatial dimensions in the kernel string's order."""
    if not (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
            and all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError(f"kiln.lax.conv_general_permutations: dimension_numbers must be three strings such as "
                        f"('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    lhs, rhs, out = dimension_numbers
    pairs = ("N", "C"), ("O", "I"), ("N", "C")
    for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs)):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise TypeError(f"kiln.lax.conv_general_permutations: dimension_numbers[{i}] = {spec!r} must contain "
                            f"{a!r} and {b!r} exactly once and no letter twice")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(f"kiln.lax.conv_general_permutations: the three strings must name the same spatial "
                        f"dimensions, got {tuple(dimension_numbers)}")
    order = [c for c in rhs if c not in "OI"]

    def perm(spec, pair):
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spec.index(c) for c in order)
    return perm(lhs, pairs[0]), perm(rhs, pairs[1]), perm(out, pairs[2])


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int], pads: Any,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """The output shape of a convolution of an ``NC...`` input with an ``OI...`` kernel."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"kiln.lax.conv_shape_tuple: expected {len(lhs_shape) - 2} (low, high) pads, one per "
                        f"spatial dimension, got {len(pads)}")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"kiln.lax.conv_shape_tuple: negative padding {tuple(pads)} is larger than the input's "
                         f"spatial dimensions {lhs_shape[2:]}")
    space = tuple(0 if p < k else (p - k) // s + 1 for p, k, s in zip(padded, rhs_shape[2:], strides))
    if lhs_shape[0] % batch_group_count:
        raise ValueError(f"kiln.lax.conv_shape_tuple: batch size {lhs_shape[0]} is not divisible by "
                         f"batch_group_count={batch_group_count}")
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + space


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
                             padding: Any, dimension_numbers: Sequence[str]) -> tuple[int, ...]:
    """The output shape of ``conv_general_dilated`` with three dimension strings (no dilation)."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(tuple(np.take(lhs_shape, lhs_perm)), tuple(np.take(rhs_shape, rhs_perm)),
                           window_strides, padding)
    return tuple(int(out[i]) for i in np.argsort(out_perm))


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """The explicit padding of the dilated convolution that ``conv_transpose`` runs for one dimension."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, tuple) and len(padding) == 2:
        lo, total = k - padding[0] - 1, 2 * (k - 1) - padding[0] - padding[1]
    else:
        raise ValueError(f"kiln.lax.conv_transpose: invalid padding {padding!r}; use 'SAME', 'VALID' or (low, "
                         "high) pairs")
    return lo, total - lo


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
                               padding: Any, dimension_numbers: Sequence[str]) -> tuple[int, ...]:
    """The output shape of :func:`conv_transpose` with three dimension strings."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = [int(d) for d in np.take(lhs_shape, lhs_perm)], [int(d) for d in np.take(rhs_shape, rhs_perm)]
    if isinstance(padding, str):
        padding = [_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + sum(p) for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out = (lhs_t[0], rhs_t[0], *space)
    return tuple(int(out[i]) for i in np.argsort(out_perm))


_TRANSPOSE_DEFAULTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                       5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any, rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: Any = None, transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None, use_consistent_padding: bool = False) -> Any:
    """Transposed convolution ("deconvolution"): a convolution with the input dilated by ``strides``.

    As ``jax.lax.conv_transpose``: the default layout is ``NHWC``/``HWIO`` (channels last); ``padding``
    ``'SAME'``/``'VALID'`` pads so that the output is ``in * stride`` (SAME) or ``in * stride +
    max(k - stride, 0)`` (VALID) long; explicit pairs pad the dilated input directly (or, with
    ``use_consistent_padding``, are converted as SAME/VALID are). ``transpose_kernel=True`` flips the
    kernel's spatial dimensions and swaps its I/O dimensions (the gradient of a convolution).
    """
    lhs_aval, rhs_aval = abstractify(lhs), abstractify(rhs)
    nd = lhs_aval.ndim
    if rhs_aval.ndim != nd or nd < 2:
        raise ValueError(f"kiln.lax.conv_transpose: lhs and rhs must have the same rank, at least 2, got shapes "
                         f"{lhs_aval.shape} and {rhs_aval.shape}")
    if dimension_numbers is None:
        if nd not in _TRANSPOSE_DEFAULTS:
            raise ValueError(f"kiln.lax.conv_transpose: no default dimension_numbers for {nd}-d operands; pass "
                             "dimension_numbers")
        dimension_numbers = _TRANSPOSE_DEFAULTS[nd]
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    k_sp = [rhs_aval.shape[d] for d in dn.rhs_spec[2:]]
    rd = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * (nd - 2)
    strides = tuple(int(s) for s in strides)
    if use_consistent_padding or isinstance(padding, str):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = tuple(_transpose_padding(dilate_dim(k, r), s, p) for k, r, s, p in zip(k_sp, rd, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = api.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = api.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, lhs_dilation=strides, rhs_dilation=rd,
                                dimension_numbers=dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int], window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """The patches a convolution with a kernel of spatial shape ``filter_shape`` sees, as features.

    The output has ``conv_general_dilated``'s layout with ``C * prod(filter_shape)`` features: feature
    ``c * prod(filter_shape) + j`` is input channel ``c`` at flat position ``j`` of the window.
    """
    lhs_aval = abstractify(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape, dimension_numbers)
    size = math.prod(filter_shape)
    channels = lhs_aval.shape[dn.lhs_spec[1]]
    # A one-hot kernel: output feature c * size + j picks window position j of channel c.
    eye = np.eye(size, dtype=lhs_aval.dtype)
    kernel = np.broadcast_to(eye, (channels, size, size)).reshape((channels * size, 1) + filter_shape)
    order = [0] * lhs_aval.ndim  # kernel dims as (O, I, spatial...) -> rhs_spec positions
    for src, dst in enumerate(dn.rhs_spec):
        order[dst] = src
    kernel = np.transpose(kernel, order)
    p = canonicalize_precision("lax.conv_general_dilated_patches", precision)
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                # As JAX: None stays None (the flag's default then applies to both operands).
                                precision=None if precision is None or p is None else (p[0], "DEFAULT"),
                                feature_group_count=channels, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                               filter_shape: Sequence[int], lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                               precision: Any = None) -> Any:
    """A locally connected ("unshared") convolution: a different kernel at every output position.

    ``rhs`` has the kernel layout of ``dimension_numbers`` with its input-feature dimension of size
    ``C * prod(filter_shape)`` (the patches' features, see :func:`conv_general_dilated_patches`) and its
    spatial dimensions equal to the output's spatial shape.
    """
    p = canonicalize_precision("lax.conv_general_dilated_local", precision)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
                                           rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                                           precision=None if p is None else p[0])
    lhs_aval = abstractify(lhs)
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(lhs_aval.shape, (1, 1) + tuple(filter_shape),
                                                          dimension_numbers)
    # Contract the features; the spatial dimensions pair up as batch dimensions (in output order).
    pairs = sorted(zip(out_spec[2:], rhs_spec[2:]))
    lhs_batch, rhs_batch = [a for a, _ in pairs], [b for _, b in pairs]
    out = api.dot_general(patches, rhs, (((out_spec[1],), (rhs_spec[1],)), (tuple(lhs_batch), tuple(rhs_batch))),
                          precision=precision)
    # dot_general's result: spatial (sorted as in out), then patches' batch, then rhs's out features.
    nd = len(out_spec)
    current = sorted(out_spec[2:]) + [out_spec[0], out_spec[1]]
    perm = [current.index(d) for d in range(nd)]
    return api.transpose(out, perm)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output shape of ``reduce_window`` with explicit (low, high) ``padding``; a dimension that is negative
    after padding (stax's -1 batch size) gives 0, as in JAX."""
    n = len(operand_shape)
    return window_output_shape("reduce_window_shape_tuple", tuple(operand_shape), tuple(window_dimensions),
                               tuple(window_strides), tuple(tuple(p) for p in padding),
                               tuple(base_dilation) if base_dilation is not None else (1,) * n,
                               tuple(window_dilation) if window_dilation is not None else (1,) * n,
                               negative_is_empty=True)
