"""``kiln.lax``: thin functions over the primitives, with JAX's lax signatures.

No implicit promotion: operands must agree in dtype, except that a Python scalar operand takes the dtype of
the array operands. Elementwise operands broadcast as in JAX's lax: a rank-0 operand to the others' shape, an
axis of size 1 to the others' size (operands of one rank only).
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.axes import axis_type_error
from ..core.config import config
from ..core.ir import Literal
from ..core.tracing import abstractify, materialize
from . import elementwise as ew
from . import reduction as red
from . import structural as st
from .precision import Precision, canonicalize_precision, check_accuracy  # noqa: F401  (kiln.lax.Precision)
from .sharding import takes_out_sharding


def _is_py_scalar(x: Any) -> bool:
    return isinstance(x, dtypes.PY_SCALARS) and not isinstance(x, np.generic)


def _scalar_fits_kind(value: Any, dtype: np.dtype) -> bool:
    """Whether a Python scalar keeps its kind in ``dtype``: a float needs an inexact dtype, a complex a complex one
    (an int or bool fits any: its range is checked when it is converted)."""
    if isinstance(value, complex):
        return dtype.kind == "c"
    if isinstance(value, float):
        return dtype.kind in "fc" or dtypes.issubdtype(dtype, np.floating)
    return True


def literal(value: Any, dtype: np.dtype, weak_type: bool = False) -> Literal:
    """A scalar constant of ``dtype`` (weak when it stands for a Python scalar)."""
    try:
        val = np.asarray(value, dtype)
    except OverflowError:
        if type(value) is int:
            raise dtypes.int_overflow_error("kiln", value, dtype, source="array") from None
        raise OverflowError(f"kiln: Python scalar {value!r} is out of range for {np.dtype(dtype).name}, the dtype "
                            "it takes from the array it is combined with; cast the array to a wider dtype "
                            "first") from None
    return Literal(val, ShapedArray((), np.dtype(dtype), weak_type))


def _shape(x: Any) -> tuple[int, ...]:
    return x.aval.shape if isinstance(x, Literal) else np.shape(x)


def broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape elementwise operands broadcast to as in JAX's lax: a rank-0 operand takes any shape, the others
    must have one rank, and an axis of size 1 takes the size of the others. None where they do not broadcast (the
    primitive's shape rule then explains it)."""
    ranked = [s for s in shapes if s]
    if not ranked:
        return ()
    if len({len(s) for s in ranked}) != 1:
        return None
    out = []
    for sizes in zip(*ranked):
        others = {d for d in sizes if d != 1}
        if len(others) > 1:
            return None
        out.append(others.pop() if others else 1)
    return tuple(out)


def _operands(*args: Any, name: str = "select") -> list[Any]:
    """Give Python scalars the dtype of the array operands, and broadcast the operands to one shape as JAX's lax
    does (rank-0 operands, and axes of size 1: :func:`broadcast_shape`)."""
    if any(map(_is_py_scalar, args)):
        arrays = [a for a in args if not _is_py_scalar(a)]
        if not arrays:
            return list(args)
        dtype = abstractify(arrays[0]).dtype
        for a in args:
            if _is_py_scalar(a) and not _scalar_fits_kind(a, dtype):
                raise TypeError(
                    f"kiln.lax.{name}: the Python {type(a).__name__} {a!r} cannot take the dtype {dtype.name} of the "
                    "array it is combined with (lax functions do not promote, and this would drop its "
                    f"{'imaginary part' if isinstance(a, complex) else 'fraction'}; JAX raises here too). Use "
                    f"kiln.numpy, which promotes, or convert the array first (lax.convert_element_type).")
        args = [literal(a, dtype, weak_type=True) if _is_py_scalar(a) else a for a in args]
    shapes = [_shape(a) for a in args]
    first = shapes[0]
    if all(s == first for s in shapes):
        return args
    target = broadcast_shape(shapes)
    if target is None:
        return args
    return [a if s == target else _broadcast_to(a, s, target) for a, s in zip(args, shapes)]


def _broadcast_to(x: Any, shape: tuple[int, ...], target: tuple[int, ...]) -> Any:
    """``x`` of ``shape`` (rank 0, or the rank of ``target`` with axes of size 1) broadcast to ``target``."""
    return broadcast_in_dim(x, target, tuple(range(len(shape))))


# Functions that take JAX's ``accuracy=`` (a Tolerance or AccuracyMode): checked, then ignored.
_ACCURACY = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "logistic", "sqrt", "rsqrt", "cbrt"}


def _unary(name: str):
    prim = ew.unary_prims[name]

    if name in _ACCURACY:
        def fn(x, *, accuracy=None):
            if accuracy is not None:
                check_accuracy(name, accuracy)
            return prim.bind(x)
    else:
        def fn(x):
            return prim.bind(x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (kiln primitive)."
    return fn


def _binary(name: str):
    prim = ew.binary_prims[name]

    def fn(x, y):
        return prim.bind(*_operands(x, y, name=name))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of two arrays of one dtype and shape (kiln primitive)."
    return fn


neg, sign, abs, exp, log, log1p, expm1 = (_unary(n) for n in  # noqa: A001
                                          ("neg", "sign", "abs", "exp", "log", "log1p", "expm1"))
sin, cos, tan, tanh, logistic, sqrt, rsqrt, cbrt = (_unary(n) for n in (
    "sin", "cos", "tan", "tanh", "logistic", "sqrt", "rsqrt", "cbrt"))
floor, ceil, is_finite = _unary("floor"), _unary("ceil"), _unary("is_finite")
# A primitive, as JAX's: its derivative is then g * (2 * x), JAX's numbers, where x * x would differentiate
# by the product rule into g*x + g*x (the same value alone, but summed with other terms it rounds differently).
square = _unary("square")
square.__doc__ = "Elementwise ``x * x`` (kiln primitive, as JAX's ``square``)."
bitwise_not = _unary("not")
add, sub, mul, div, rem, pow, max, min = (_binary(n) for n in (  # noqa: A001
    "add", "sub", "mul", "div", "rem", "pow", "max", "min"))
bitwise_and, bitwise_or, bitwise_xor = _binary("and"), _binary("or"), _binary("xor")
shift_left, shift_right_arithmetic, shift_right_logical = (_binary(n) for n in (
    "shift_left", "shift_right_arithmetic", "shift_right_logical"))
atan2 = _binary("atan2")
eq, ne, lt, le, gt, ge = (_binary(n) for n in ew.COMPARISONS)


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
    """Round to the nearest integer; ties away from zero (default) or to even."""
    return ew.round_p.bind(x, rounding_method=int(rounding_method))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false``, elementwise."""
    on_true, on_false = _operands(on_true, on_false)
    return ew.select_p.bind(pred, on_true, on_false)


def convert_element_type(x, new_dtype, *, weak_type: bool = False):
    """Cast ``x`` to ``new_dtype`` (canonicalized: float64 becomes float32 unless x64 is on)."""
    try:
        new_dtype = dtypes.canonicalize_dtype(new_dtype)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.lax.convert_element_type") from None
    aval = abstractify(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and not _is_py_scalar(x):
        return x
    if _is_py_scalar(x):
        return materialize(literal(x, new_dtype, weak_type))
    return ew.convert_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


@takes_out_sharding
def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """Broadcast ``x`` into ``shape``; operand dimension i becomes result dimension
    ``broadcast_dimensions[i]``."""
    shape, dims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    aval = abstractify(x)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        return materialize(x)
    if len(dims) == aval.ndim and len(set(dims)) == len(dims) and list(dims) != sorted(dims):
        # Dimensions out of order (JAX accepts them): transpose the operand so that they increase,
        # which is the same broadcast; the primitive keeps its increasing dimensions.
        order = sorted(range(len(dims)), key=dims.__getitem__)
        x, dims = transpose(x, order), tuple(dims[i] for i in order)
    return st.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


@takes_out_sharding
def broadcast(x, sizes: Sequence[int]):
    """Add leading dimensions of ``sizes`` to ``x``."""
    aval = abstractify(x)
    sizes = tuple(sizes)
    return broadcast_in_dim(x, sizes + aval.shape, tuple(range(len(sizes), len(sizes) + aval.ndim)))


@takes_out_sharding
def reshape(x, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    """Reshape ``x`` (row-major); ``dimensions`` transposes first, as in XLA."""
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if abstractify(x).shape == new_sizes:
        return materialize(x)
    return st.reshape_p.bind(x, new_sizes=new_sizes)


def transpose(x, permutation: Sequence[int]):
    """Permute the axes of ``x``."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == abstractify(x).ndim:
        return x
    return st.transpose_p.bind(x, permutation=permutation)


def slice(x, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None):
    """Static slice ``x[start:limit:stride]`` along every dimension."""
    strides = tuple(strides) if strides is not None else (1,) * len(start_indices)
    return st.slice_p.bind(x, start_indices=tuple(int(i) for i in start_indices),
                           limit_indices=tuple(int(i) for i in limit_indices),
                           strides=tuple(int(s) for s in strides))


def _index_operands(fname: str, indices: Sequence[Any], shape: tuple[int, ...],
                    allow_negative_indices: bool | Sequence[bool] = True) -> list[Any]:
    """Start indices as scalars; negative ones count from the end where ``allow_negative_indices`` (one bool,
    or one per dimension, as JAX's) says so, else they are clamped like any out-of-bounds start."""
    if len(indices) != len(shape):
        raise ValueError(f"kiln.lax.{fname}: needs {len(shape)} start indices for an operand of shape {shape}, "
                         f"got {len(indices)}")
    wraps = ([bool(allow_negative_indices)] * len(shape) if isinstance(allow_negative_indices, (bool, np.bool_))
             else [bool(w) for w in allow_negative_indices])
    if len(wraps) != len(shape):
        raise ValueError(f"kiln.lax.{fname}: allow_negative_indices has {len(wraps)} entries for an operand of "
                         f"rank {len(shape)}; give one bool, or one per dimension")
    out = []
    for i, dim, wrap in zip(indices, shape, wraps):
        if _is_py_scalar(i) or isinstance(i, np.integer):
            i = int(i)
            out.append(literal(i + dim if i < 0 and wrap else i, dtypes.canonicalize_dtype(np.int32)))
            continue
        aval = abstractify(i)
        if wrap and dtypes.kind(aval.dtype) == "i":
            zero, n = literal(0, aval.dtype), literal(dim, aval.dtype)
            i = select(lt(i, zero), add(i, n), i)
        out.append(i)
    return out


def dynamic_slice(x, start_indices: Sequence[Any], slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True):
    """Slice of static size at traced start indices. Negative indices count from the end (unless
    ``allow_negative_indices`` is False for that dimension); then indices are clamped so that the slice stays
    in bounds (as XLA does)."""
    shape = abstractify(x).shape
    indices = _index_operands("dynamic_slice", start_indices, shape, allow_negative_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    if config.index_checks:
        from .indexing import check_dynamic_slice  # indexing builds on this module
        check_dynamic_slice("dynamic_slice", indices, shape, sizes, "moves the slice back into bounds")
    return st.dynamic_slice_p.bind(x, *indices, slice_sizes=sizes)


def dynamic_update_slice(x, update, start_indices: Sequence[Any], *,
                         allow_negative_indices: bool | Sequence[bool] = True):
    """``x`` with ``update`` written at traced start indices (negative ones count from the end unless
    ``allow_negative_indices`` is False; then clamped to stay in bounds)."""
    shape = abstractify(x).shape
    indices = _index_operands("dynamic_update_slice", start_indices, shape, allow_negative_indices)
    if config.index_checks:
        from .indexing import check_dynamic_slice  # indexing builds on this module
        check_dynamic_slice("dynamic_update_slice", indices, shape, abstractify(update).shape,
                            "moves the update back into bounds")
    return st.dynamic_update_slice_p.bind(x, update, *indices)


def concatenate(operands: Sequence[Any], dimension: int):
    """Join arrays of one dtype along ``dimension``."""
    operands = list(operands)
    if len(operands) == 1:
        return operands[0]
    return st.concatenate_p.bind(*operands, dimension=int(dimension))


def pad(x, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pad with (low, high, interior) per dimension; negative low/high crop."""
    aval = abstractify(x)
    if _is_py_scalar(padding_value):
        padding_value = literal(padding_value, aval.dtype, aval.weak_type)
    config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    return st.pad_p.bind(x, padding_value, padding_config=config)


def iota(dtype, size: int):
    """``[0, 1, ..., size-1]`` of ``dtype``."""
    return broadcasted_iota(dtype, (size,), 0)


@takes_out_sharding
def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of ``shape`` whose values count along ``dimension``."""
    return st.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=tuple(int(d) for d in shape),
                          dimension=int(dimension))


def _int_axis(axis: Any) -> int:
    """An axis entry that is not a Python int: a NumPy integer (or another integer with ``__index__``) as an int;
    a TypeError for anything else, bools included (the callers' error path names the function)."""
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError
    return operator.index(axis)


def _as_int(axis: Any) -> int | None:
    """The int an axis written as another type stands for (``1.0``, ``'1'``, ``np.int64(1)``), else None."""
    if isinstance(axis, (bool, np.bool_)):
        return None
    if isinstance(axis, (float, np.floating)) and float(axis).is_integer():
        return int(axis)
    if isinstance(axis, str) and axis.strip().lstrip("-").isdigit():
        return int(axis)
    return int(axis) if isinstance(axis, (int, np.integer)) else None


def _axis_range(x: Any) -> str:
    try:
        shape = abstractify(x).shape
    except Exception:
        return ""
    return f"; an axis is an int in [0, {len(shape)}) for an operand of shape {shape}"


def _bad_axis(fname: str, x: Any, axis: Any) -> TypeError:
    """The error of a ``kiln.lax`` axis argument that is not an int."""
    n = _as_int(axis)
    return axis_type_error(f"kiln.lax.{fname}", axis, fix=_axis_range(x) if n is None else f"; pass axis={n}")


def _bad_axes(fname: str, x: Any, axes: Any) -> TypeError:
    """The error of a ``kiln.lax`` reduction's ``axes`` that are not a sequence of ints."""
    where = f"kiln.lax.{fname}"
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        n = _as_int(axes)
        return TypeError(f"{where}: axes must be a sequence of ints (a tuple such as (0, 1)), got "
                         f"{type(axes).__name__} {axes!r}" + ("" if n is None else f"; pass axes=({n},)"))
    axes = tuple(axes)
    for k, a in enumerate(axes):
        try:
            if type(a) is not int:
                _int_axis(a)
        except TypeError:
            ns = [_as_int(b) for b in axes]
            fix = _axis_range(x) if None in ns else f"; pass axes={tuple(ns)}"
            return axis_type_error(where, a, what=f"axes[{k}]", fix=fix)
    return TypeError(f"{where}: axes must be a sequence of ints, got {axes!r}")


def _reducer(name: str):
    prim = red.reduce_prims[name]

    def fn(x, axes: Sequence[int]):
        try:
            axes = tuple(a if type(a) is int else _int_axis(a) for a in axes)
        except TypeError:
            raise _bad_axes(name, x, axes) from None
        if not axes:
            return x
        return prim.bind(x, axes=axes)
    fn.__name__ = name
    fn.__doc__ = f"``{name}`` over ``axes`` (kiln primitive)."
    return fn


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = (
    _reducer(n) for n in red.REDUCTIONS)
reduce_sum = takes_out_sharding(reduce_sum)  # as in JAX, the only reduction taking out_sharding=


def _arg_reduction(name: str, prim, x, axis, index_dtype):
    """argmax/argmin: ``axis`` an int (a NumPy integer taken as one), ``index_dtype`` a dtype, both explained
    by name when they are not."""
    if type(axis) is not int:
        try:
            axis = _int_axis(axis)
        except TypeError:
            raise _bad_axis(name, x, axis) from None
    try:
        index_dtype = dtypes.canonicalize_dtype(index_dtype)
    except dtypes.DtypeArgumentError as e:
        raise e.named(f"kiln.lax.{name}") from None
    return prim.bind(x, axis=axis, index_dtype=index_dtype)


def argmax(x, axis: int, index_dtype=np.int32):
    """Index of the first maximum along ``axis`` (NaN counts as the maximum, as in NumPy)."""
    return _arg_reduction("argmax", red.argmax_p, x, axis, index_dtype)


def argmin(x, axis: int, index_dtype=np.int32):
    """Index of the first minimum along ``axis``."""
    return _arg_reduction("argmin", red.argmin_p, x, axis, index_dtype)


@takes_out_sharding
def dot_general(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    """Generalised dot: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.

    The result's dimensions are batch, then lhs free, then rhs free (as XLA). ``precision`` (None, a
    :class:`Precision`, its name, or a pair: one per operand) is StableHLO's ``precision_config``, as in
    JAX; None takes ``kiln.default_matmul_precision`` (XLA's default when unset). A dot algorithm
    (:class:`DotAlgorithmPreset`, its name, or a :class:`DotAlgorithm`) is StableHLO's ``algorithm``, the operands
    converted to its storage types, as in JAX; the platform must support it (XLA's CPU backend: see
    ``DotAlgorithmPreset.on_cpu``), else lowering raises ``ValueError``.
    """
    precision = canonicalize_precision("lax.dot_general", precision, keep_algorithm=True)
    (xc, yc), (xb, yb) = dimension_numbers
    dn = ((tuple(int(a) for a in xc), tuple(int(a) for a in yc)),
          (tuple(int(a) for a in xb), tuple(int(a) for a in yb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return red.dot_general_p.bind(x, y, dimension_numbers=dn, precision=precision, preferred_element_type=pet)


@takes_out_sharding
def dot(x, y, *, dimension_numbers=None, precision=None, preferred_element_type=None):
    """Vector/matrix product of 1-D or 2-D operands (``x``'s last axis with ``y``'s first), or
    :func:`dot_general` when ``dimension_numbers`` is given. ``precision`` as in :func:`dot_general`."""
    if dimension_numbers is not None:
        return dot_general(x, y, dimension_numbers, precision=precision,
                           preferred_element_type=preferred_element_type)
    canonicalize_precision("lax.dot", precision)  # (checked under this name; dot_general resolves it)
    xs, ys = abstractify(x).shape, abstractify(y).shape
    if not (1 <= len(xs) <= 2 and 1 <= len(ys) <= 2 and xs[-1] == ys[0]):
        # A ValueError, as JAX's lax.dot: it is a misuse of dot, not an operand shape rule.
        raise ValueError(f"kiln.lax.dot: operands must be 1-D or 2-D with x.shape[-1] == y.shape[0], got shapes "
                         f"{xs} and {ys}; for batched or other contractions use kiln.lax.dot_general (or pass "
                         "dimension_numbers=)")
    return dot_general(x, y, (((len(xs) - 1,), (0,)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: ``lhs[..., m, k] @ rhs[..., k, n]`` with equal leading (batch) dimensions."""
    canonicalize_precision("lax.batch_matmul", precision)
    ls, rs = abstractify(lhs).shape, abstractify(rhs).shape
    if len(ls) != len(rs) or len(ls) < 2:
        raise ValueError(f"kiln.lax.batch_matmul: operands must have the same number of dimensions, at least 2, "
                         f"got shapes {ls} and {rs}")
    nb = len(ls) - 2
    batch = tuple(range(nb))
    return dot_general(lhs, rhs, (((nb + 1,), (nb,)), (batch, batch)), precision=precision)


def rev(x, dimensions: Sequence[int]):
    """Reverse ``x`` along ``dimensions``."""
    dimensions = tuple(int(d) for d in dimensions)
    if not dimensions:
        return x
    return st.rev_p.bind(x, dimensions=dimensions)


def stop_gradient(x):
    """``x`` itself, with a zero derivative (applies to every array in a pytree)."""
    from ..core import tree_util
    from ..core.tracing import Tracer

    def stop(leaf):
        if isinstance(leaf, (int, float, complex, bool)) and not isinstance(leaf, np.generic):
            return leaf
        if isinstance(leaf, Tracer) or hasattr(leaf, "aval"):
            if not dtypes.is_inexact(abstractify(leaf).dtype):
                return leaf
            return ew.stop_gradient_p.bind(leaf)
        return leaf
    return tree_util.tree_map(stop, x)


def full_like(x, fill_value):
    """An array of ``x``'s shape, dtype and weak type filled with the scalar ``fill_value``."""
    aval = abstractify(x)
    fill_shape = abstractify(fill_value).shape if hasattr(fill_value, "aval") else np.shape(fill_value)
    if fill_shape:
        raise TypeError(f"kiln.lax.full_like: fill_value must be a scalar, got one of shape {fill_shape}; use "
                        "kiln.numpy.broadcast_to for arrays")
    return broadcast_in_dim(literal(fill_value, aval.dtype, aval.weak_type), aval.shape, ())
