"""kiln dtypes and abstract values as MLIR types."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir


def element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a dtype (inside an active ``ir.Context``)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype.kind == "i":
        return ir.IntegerType.get_signless(8 * dtype.itemsize)
    if dtype.kind == "u":
        return ir.IntegerType.get_unsigned(8 * dtype.itemsize)
    if dtype == ml_dtypes.bfloat16:
        return ir.BF16Type.get()
    if dtype == np.float16:
        return ir.F16Type.get()
    if dtype == np.float32:
        return ir.F32Type.get()
    if dtype == np.float64:
        return ir.F64Type.get()
    if dtype == np.complex64:
        return ir.ComplexType.get(ir.F32Type.get())
    if dtype == np.complex128:
        return ir.ComplexType.get(ir.F64Type.get())
    raise TypeError(f"kiln lowering: no StableHLO element type for dtype {dtype}")


def ranked_type(shape, dtype) -> ir.RankedTensorType:
    """``tensor<2x3xf32>`` for a shape and a dtype."""
    return ir.RankedTensorType.get(list(shape), element_type(dtype))


def tensor_type(aval) -> ir.RankedTensorType:
    """``tensor<2x3xf32>`` for an abstract value (anything with ``shape`` and ``dtype``)."""
    return ranked_type(aval.shape, aval.dtype)


def scalar_type(dtype) -> ir.RankedTensorType:
    """``tensor<f32>``: the type of a scalar of ``dtype`` (as region arguments of reductions and sorts are)."""
    return ranked_type((), dtype)
