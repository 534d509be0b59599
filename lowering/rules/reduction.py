"""Emission rules for reductions (stablehlo.reduce with a body region) and dot_general."""
from __future__ import annotations

import numpy as np
from kiln.frontend.core import dtypes
from kiln.frontend.core.errors import DotAlgorithmError

from ..hlo import (
    const,
    convert,
    dot,
    identity,
    iota,
    logical_not,
    monoid,
    precision_names,
    reduce,
    reduce_general,
    select,
    wrap_inputs,
)
from ..registry import register

_COMBINE = {"reduce_sum": "add", "reduce_prod": "multiply", "reduce_max": "maximum",
            "reduce_min": "minimum", "reduce_and": "and", "reduce_or": "or"}


def _make_reduce(name: str):
    def rule(ctx, eqn, x):
        (x,) = wrap_inputs(eqn, [x])
        return reduce(x, eqn.params["axes"], monoid(_COMBINE[name], x.dtype)).v
    return rule


for _name in _COMBINE:
    register(_name)(_make_reduce(_name))


def _make_arg_reduce(direction: str):
    """argmax/argmin: reduce (value, index) pairs; NaN wins, ties go to the lower index."""
    def rule(ctx, eqn, x):
        (x,) = wrap_inputs(eqn, [x])
        axis, index_dtype = eqn.params["axis"], eqn.params["index_dtype"]
        idx = iota(x.shape, axis, index_dtype)
        init_v = const(identity("maximum" if direction == "GT" else "minimum", x.dtype), x.dtype)
        init_i = const(0, index_dtype)
        is_float = dtypes.kind(x.dtype) == "f"

        def body(acc_v, acc_i, v, i):
            better = v.compare(acc_v, direction)
            if is_float:  # NaN beats everything (NumPy returns the first NaN's index)
                v_nan, acc_nan = v.ne(v), acc_v.ne(acc_v)
                better = better | (v_nan & logical_not(acc_nan))
                equal = v.eq(acc_v) | (v_nan & acc_nan)
            else:
                equal = v.eq(acc_v)
            take = better | (equal & (i < acc_i))
            return [select(take, v, acc_v), select(take, i, acc_i)]

        return reduce_general([x, idx], [init_v, init_i], [axis], body)[1].v
    return rule


register("argmax")(_make_arg_reduce("GT"))
register("argmin")(_make_arg_reduce("LT"))


def _dot_with_algorithm(ctx, eqn, x, y, algorithm, out_dtype):
    """As JAX's lowering: the operands converted to the algorithm's storage types, the product in its accumulation
    type with StableHLO's ``algorithm`` attribute, converted to the result type. XLA's CPU backend ignores the
    attribute: the algorithms whose numbers it would not give are refused, as JAX refuses them."""
    if ctx.platform == "cpu" and not algorithm.on_cpu:
        raise DotAlgorithmError(
            f"The precision '{algorithm}' is not supported by dot_general on CPU: kiln.lax.dot_general (and "
            "kiln.numpy's dot, matmul, einsum...) with this dot algorithm needs a GPU or TPU. On CPU use one of "
            "DEFAULT, F16_F16_F16, F32_F32_F32, F64_F64_F64, BF16_BF16_F32, BF16_BF16_F32_X3, BF16_BF16_F32_X6, "
            "or a kiln.lax.Precision ('highest', ...).")
    (lhs, rhs, acc), attribute = algorithm.plan(x.dtype, y.dtype, out_dtype)
    out = dot(convert(x, lhs), convert(y, rhs), *eqn.params["dimension_numbers"], precision="DEFAULT", dtype=acc,
              algorithm=attribute)
    return convert(out, out_dtype).v


@register("dot_general")
def _dot_general(ctx, eqn, x, y):
    x, y = wrap_inputs(eqn, [x, y])
    out_dtype = eqn.outputs[0].aval.dtype
    if hasattr(eqn.params["precision"], "plan"):  # a dot algorithm (kiln.lax.DotAlgorithm or DotAlgorithmPreset)
        return _dot_with_algorithm(ctx, eqn, x, y, eqn.params["precision"], out_dtype)
    # JAX writes [DEFAULT, DEFAULT] when the precision is None: the same modules, the same numbers.
    precision = eqn.params["precision"] or "DEFAULT"
    if (ctx.platform == "cpu" and ctx.native_bf16 and x.dtype == y.dtype == out_dtype == dtypes.bfloat16
            and precision_names(precision) == ("DEFAULT", "DEFAULT")):
        # XLA's CPU backend computes a bf16 x bf16 -> bf16 dot by converting both operands to f32 and multiplying
        # in f32; asked for an f32 result, it runs its bf16 kernel, which also accumulates in f32: about twice as
        # fast on a CPU with native bf16 products (AVX512-BF16, AMX), 1.4 times slower on one without (its
        # products emulated), where the JAX-like dot stays. Both results are the bf16 rounding of an f32 sum;
        # they differ where the two sums, taken in different orders, round to different bf16 values (about 17
        # elements in 100,000 of a product of standard-normal 1024² matrices). HIGHEST precision keeps the f32 dot.
        return convert(dot(x, y, *eqn.params["dimension_numbers"], precision=precision, dtype=np.float32),
                       out_dtype).v
    return dot(x, y, *eqn.params["dimension_numbers"], precision=precision, dtype=out_dtype).v
