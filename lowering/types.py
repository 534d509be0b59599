"""kiln dtypes and abstract values as MLIR types."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from kiln.frontend.core.errors import KilnTypeError

# ml_dtypes' narrow types (int1, uint1 and the float6 types: see _NOT_COMPUTABLE).
_NARROW = {
    np.dtype(ml_dtypes.int2): lambda: ir.IntegerType.get_signless(2),
    np.dtype(ml_dtypes.int4): lambda: ir.IntegerType.get_signless(4),
    np.dtype(ml_dtypes.uint2): lambda: ir.IntegerType.get_unsigned(2),
    np.dtype(ml_dtypes.uint4): lambda: ir.IntegerType.get_unsigned(4),
    np.dtype(ml_dtypes.float8_e3m4): lambda: ir.Float8E3M4Type.get(),
    np.dtype(ml_dtypes.float8_e4m3): lambda: ir.Float8E4M3Type.get(),
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): lambda: ir.Float8E4M3B11FNUZType.get(),
    np.dtype(ml_dtypes.float8_e4m3fn): lambda: ir.Float8E4M3FNType.get(),
    np.dtype(ml_dtypes.float8_e4m3fnuz): lambda: ir.Float8E4M3FNUZType.get(),
    np.dtype(ml_dtypes.float8_e5m2): lambda: ir.Float8E5M2Type.get(),
    np.dtype(ml_dtypes.float8_e5m2fnuz): lambda: ir.Float8E5M2FNUZType.get(),
    np.dtype(ml_dtypes.float8_e8m0fnu): lambda: ir.Float8E8M0FNUType.get(),
    np.dtype(ml_dtypes.float4_e2m1fn): lambda: ir.Float4E2M1FNType.get(),
}

# Narrow dtypes kiln can hold but no computation can take or return, and why (jaxlib 0.10.x, CPU).
_HOST_ONLY = "kiln.numpy.asarray(np.asarray(x).astype(np.float32))"
_NOT_COMPUTABLE = {
    np.dtype(ml_dtypes.int1): (
        "StableHLO has no 1-bit integer type apart from bool (int1 would be i1, which XLA takes as bool, and "
        "it then rejects int1 buffers where it expects bool ones). kiln holds int1 arrays (kiln.numpy.asarray "
        "of a NumPy int1 array, numpy.asarray back) but cannot compute with them"),
    np.dtype(ml_dtypes.uint1): (
        "StableHLO has no unsigned 1-bit integer type (ui1 is not a valid element type of its operations). "
        "kiln holds uint1 arrays (kiln.numpy.asarray of a NumPy uint1 array, numpy.asarray back) but cannot "
        "compute with them"),
    np.dtype(ml_dtypes.float6_e2m3fn): (
        "XLA in jaxlib 0.10.x has no 6-bit float support (it rejects F6E2M3FN when compiling, and jaxlib cannot "
        "transfer float6 arrays to a device either)"),
    np.dtype(ml_dtypes.float6_e3m2fn): (
        "XLA in jaxlib 0.10.x has no 6-bit float support (it rejects F6E3M2FN when compiling, and jaxlib cannot "
        "transfer float6 arrays to a device either)"),
}


def check_computable(dtype) -> None:
    """Raise a clear error for a narrow dtype no compiled computation can take or return (int1, uint1,
    float6_*)."""
    why = _NOT_COMPUTABLE.get(np.dtype(dtype))
    if why is not None:
        raise KilnTypeError(f"kiln: cannot compute with dtype {np.dtype(dtype).name}: {why}. Convert such data "
                            f"with NumPy on the host first, e.g. {_HOST_ONLY}.")


# Types already built, per MLIR context (types belong to the context they were made in): building one costs
# about a microsecond, mostly comparing the dtype with NumPy's types, and a lowering asks for the same few
# types once per operation (a 1,000-operation program spent 1.4 ms of its 23 ms trace and lower here).
_TYPES: dict[ir.Context, dict[tuple, ir.Type]] = {}
_TYPES_PER_CONTEXT = 4096  # (shape, dtype) pairs kept per context; a program with more starts over


def _types_of_current_context() -> dict[tuple, ir.Type]:
    context = ir.Context.current
    types = _TYPES.get(context)
    if types is None or len(types) > _TYPES_PER_CONTEXT:
        if len(_TYPES) > 8:  # contexts made and dropped (tests): let them go
            _TYPES.clear()
        types = _TYPES[context] = {}
    return types


def element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a dtype (inside an active ``ir.Context``)."""
    types = _types_of_current_context()
    key = (None, dtype)
    found = types.get(key)
    if found is None:
        found = types[key] = _element_type(dtype)
    return found


def _element_type(dtype: np.dtype) -> ir.Type:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype.kind == "i":
        return ir.IntegerType.get_signless(8 * dtype.itemsize)
    if dtype.kind == "u":
        return ir.IntegerType.get_unsigned(8 * dtype.itemsize)
    if dtype == ml_dtypes.bfloat16:
        return ir.BF16Type.get()
    narrow = _NARROW.get(dtype)
    if narrow is not None:
        return narrow()
    check_computable(dtype)
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
    types = _types_of_current_context()
    key = (tuple(shape), dtype)
    found = types.get(key)
    if found is None:
        found = types[key] = ir.RankedTensorType.get(list(shape), element_type(dtype))
    return found


def tensor_type(aval) -> ir.RankedTensorType:
    """``tensor<2x3xf32>`` for an abstract value (anything with ``shape`` and ``dtype``)."""
    return ranked_type(aval.shape, aval.dtype)


def scalar_type(dtype) -> ir.RankedTensorType:
    """``tensor<f32>``: the type of a scalar of ``dtype`` (as region arguments of reductions and sorts are)."""
    return ranked_type((), dtype)
