"""kiln.numpy's implementation: NumPy's API over kiln primitives, with JAX's semantics."""
from .. import dtypes as _dtypes
from .creation import (  # noqa: F401
    arange,
    array,
    asarray,
    astype,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .indexing import getitem as _getitem  # noqa: F401
from .products import dot, inner, matmul, outer, tensordot, vdot  # noqa: F401
from .reductions import all, amax, amin, any, argmax, argmin, max, mean, min, prod, std, sum, var  # noqa: F401
from .shape import (  # noqa: F401
    broadcast_arrays,
    broadcast_to,
    concatenate,
    expand_dims,
    moveaxis,
    permute_dims,
    ravel,
    reshape,
    squeeze,
    stack,
    swapaxes,
    transpose,
)
from .ufuncs import (  # noqa: F401
    abs,
    absolute,
    add,
    around,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clip,
    conj,
    conjugate,
    cos,
    divide,
    divmod,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    greater,
    greater_equal,
    imag,
    invert,
    isfinite,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    real,
    remainder,
    right_shift,
    round,
    sign,
    sin,
    sqrt,
    subtract,
    tan,
    tanh,
    true_divide,
    where,
)

# dtype names, as numpy's (np.dtype objects)
bool_ = _dtypes.bool_
int8, int16, int32, int64 = _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64
uint8, uint16, uint32, uint64 = _dtypes.uint8, _dtypes.uint16, _dtypes.uint32, _dtypes.uint64
float16, bfloat16, float32, float64 = _dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64
complex64, complex128 = _dtypes.complex64, _dtypes.complex128
result_type, promote_types, issubdtype = _dtypes.result_type, _dtypes.promote_types, _dtypes.issubdtype
finfo, iinfo = _dtypes.finfo, _dtypes.iinfo
