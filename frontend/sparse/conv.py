"""``bcoo_conv_general_dilated``: ``lax.conv_general_dilated`` with BCOO operands (JAX's sparse convolution).

As in ``jax.experimental.sparse``, only the simplest convolution is supported: one spatial dimension, a single
batch element and feature (operands of shape ``(1, 1, width)`` in the default ``('NCH', 'OIH', 'NCH')`` layout),
unit strides and dilations, no feature or batch groups; any padding. Either operand, or both, may be sparse.

Every stored entry of ``lhs`` meets every stored entry of ``rhs``: the product of their values lands at output
position ``i_lhs + pad_low - i_rhs`` (a cross-correlation, as XLA's). The result is a BCOO array of shape
``(1, 1, out_width)`` with ``n_batch=2`` and ``nse = nse(lhs) * nse(rhs)`` (a dense operand counts each of its
elements as stored); products that fall outside the output, or come from padding entries, are padding entries.
Duplicate positions are not summed (``sum_duplicates()`` does that). Everything is kiln.numpy ops on ``data`` and
``indices``, so it runs eagerly, under ``kiln.jit``, ``kiln.vmap`` and ``kiln.grad``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.avals import ShapedArray
from ..core.tracing import abstractify, trace_to_ir
from ..lax.convolution import conv_general_dilated_p
from .base import JAXSparse
from .bcoo import BCOO, _in_range
from .bcoo_structure import bcoo_update_layout

__all__ = ["bcoo_conv_general_dilated"]

_WHERE = "bcoo_conv_general_dilated"
_DENSIFY = "densify the BCOO operands (x.todense()) and call kiln.lax.conv_general_dilated"


def _aval(x: Any, what: str) -> ShapedArray:
    if isinstance(x, BCOO):
        return ShapedArray(tuple(x.shape), np.dtype(x.dtype))
    if isinstance(x, JAXSparse):
        raise TypeError(f"{_WHERE}: {what} is a {type(x).__name__}; only BCOO and dense operands are supported "
                        "(as in JAX): convert it with x.to_bcoo() or BCOO.fromdense(x.todense())")
    try:
        return abstractify(x)
    except Exception:
        raise TypeError(f"{_WHERE}: {what} of type {type(x).__name__} is neither a BCOO nor a dense array") from None


def _conv_params(lhs: ShapedArray, rhs: ShapedArray, **options: Any) -> dict:
    """The normalised parameters of the dense ``lax.conv_general_dilated`` for these operand types (its checks
    apply: ranks, dimension numbers, dtypes, padding), read off its one-equation trace."""
    def dense(a, b):
        return [lax.conv_general_dilated(a, b, **options)]
    closed, _ = trace_to_ir(dense, [ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype)],
                            name=_WHERE)
    eqn, = [e for e in closed.ir.eqns if e.prim is conv_general_dilated_p]
    return dict(eqn.params)


def _unsupported(what: str, only: str, fix: str = "") -> NotImplementedError:
    return NotImplementedError(f"{_WHERE}: {what} is not supported ({only}, as in JAX: sparse convolution covers 1-D "
                               "operands of shape (1, 1, width) with unit strides and dilations); " + fix + _DENSIFY)


def _stored_1d(x: Any, index_dtype: np.dtype) -> tuple[Any, Any]:
    """(values, positions) of the stored entries of a ``(1, 1, width)`` operand, both of shape (nse,): a BCOO's
    entries (padding entries get position ``width`` and value 0), or every element of a dense array."""
    width = x.shape[2]
    if not isinstance(x, BCOO):
        return jnp.asarray(x)[0, 0], jnp.arange(width, dtype=index_dtype)
    m = bcoo_update_layout(x, n_batch=2, n_dense=0, on_inefficient=None)  # (1, 1) batch: no copies
    keep = _in_range(m)[0, 0]
    return jnp.where(keep, m.data[0, 0], 0), jnp.where(keep, m.indices[0, 0, :, 0], width)


def bcoo_conv_general_dilated(lhs: Any, rhs: Any, *, window_strides: Any, padding: Any, lhs_dilation: Any = None,
                              rhs_dilation: Any = None, dimension_numbers: Any = None, feature_group_count: int = 1,
                              batch_group_count: int = 1, precision: Any = None, preferred_element_type: Any = None,
                              out_sharding: Any = None) -> BCOO:
    """``lax.conv_general_dilated(lhs, rhs, ...)`` where ``lhs``, ``rhs`` or both are BCOO arrays (as
    ``jax.experimental.sparse.bcoo_conv_general_dilated``); the result is a BCOO array.

    Supported, as in JAX: 1-D convolutions of operands of shape ``(1, 1, width)`` in the default layout
    (``dimension_numbers`` None or equivalent to ``('NCH', 'OIH', 'NCH')``), unit ``window_strides``,
    ``lhs_dilation`` and ``rhs_dilation``, ``feature_group_count = batch_group_count = 1``; ``padding`` is
    ``'SAME'``, ``'VALID'`` or a ``(low, high)`` pair (negative values crop). Other cases raise
    ``NotImplementedError``: densify the operands and call ``kiln.lax.conv_general_dilated``.

    The result has shape ``(1, 1, out_width)``, ``n_batch=2`` and ``nse(lhs) * nse(rhs)`` stored entries (a
    dense operand stores each element), duplicates unsummed. ``preferred_element_type`` sets the dtype in which
    the products are computed (JAX ignores it); ``precision`` has no effect (the products are elementwise);
    ``out_sharding`` is checked as the dense convolution's and not applied (a BCOO result is not sharded).
    """
    lhs_aval, rhs_aval = _aval(lhs, "lhs"), _aval(rhs, "rhs")
    params = _conv_params(lhs_aval, rhs_aval, window_strides=window_strides, padding=padding,
                          lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                          feature_group_count=feature_group_count, batch_group_count=batch_group_count,
                          precision=precision, preferred_element_type=preferred_element_type,
                          out_sharding=out_sharding)
    nd = lhs_aval.ndim
    if nd != 3:
        raise _unsupported(f"a convolution with {nd - 2} spatial dimensions (operands of shape {lhs_aval.shape} and "
                           f"{rhs_aval.shape})", "only 1 spatial dimension")
    if any(tuple(s) != (0, 1, 2) for s in params["dimension_numbers"]):
        raise _unsupported(f"dimension_numbers={dimension_numbers!r}", "only the default layout ('NCH', 'OIH', 'NCH')",
                           "transpose the operands to that layout, or ")
    for name in ("window_strides", "lhs_dilation", "rhs_dilation"):
        if any(v != 1 for v in params[name]):
            raise _unsupported(f"{name}={params[name]}", f"only unit {name}")
    if params["feature_group_count"] != 1 or params["batch_group_count"] != 1:
        raise _unsupported(f"feature_group_count={params['feature_group_count']} with batch_group_count="
                           f"{params['batch_group_count']}", "only 1 and 1")
    if lhs_aval.shape[:2] != (1, 1) or rhs_aval.shape[:2] != (1, 1):
        raise _unsupported(f"lhs of shape {lhs_aval.shape} with rhs of shape {rhs_aval.shape}",
                           "the batch and feature dimensions, the first two of each operand, must have size 1")

    sparse = [x for x in (lhs, rhs) if isinstance(x, BCOO)]
    index_dtype = np.dtype(sparse[0].indices.dtype) if sparse else np.dtype(np.int32)
    (low, high), = params["padding"]
    out_width = max(0, lhs_aval.shape[2] + low + high - rhs_aval.shape[2] + 1)
    l_vals, l_pos = _stored_1d(lhs, index_dtype)
    r_vals, r_pos = _stored_1d(rhs, index_dtype)
    pet = params["preferred_element_type"]
    dtype = lhs_aval.dtype if pet is None else pet
    values = (l_vals.astype(dtype)[:, None] * r_vals.astype(dtype)[None, :]).reshape(-1)
    # Position of each product; a padding entry of either operand, or a product outside the output, is padding.
    pos = (l_pos.astype(index_dtype)[:, None] + (low - r_pos.astype(index_dtype))[None, :]).reshape(-1)
    valid = ((l_pos < lhs_aval.shape[2])[:, None] & (r_pos < rhs_aval.shape[2])[None, :]).reshape(-1)
    keep = valid & (pos >= 0) & (pos < out_width)
    values = jnp.where(keep, values, jnp.zeros((), dtype))
    pos = jnp.where(keep, pos, np.asarray(out_width, index_dtype))
    return BCOO((values[None, None], pos[None, None, :, None]), shape=(1, 1, out_width))
