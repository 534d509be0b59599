"""Shared helpers of kiln.numpy: argument checking, promotion, broadcasting, axes."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core import axes, dtypes
from ..core.config import config
from ..core.errors import BroadcastError, IntegerOverflowError, NegativeDimensionError
from ..core.ir import Literal
from ..core.source_info import user_stacklevel
from ..core.tracing import Tracer, abstractify, ref_hint
from ..driver.array import Array
from . import key_arrays

_ARRAY_TYPES = (Array, Tracer)


def is_array(x: Any) -> bool:
    return isinstance(x, (Array, Tracer))


def check_arraylike(fname: str, *args: Any) -> None:
    for i, a in enumerate(args):
        check_array_argument(f"kiln.numpy.{fname}", f"argument {i}", a, library="kiln.numpy")


def check_array_argument(where: str, what: str, x: Any, library: str = "kiln") -> None:
    """Raise unless ``x`` is an array or a scalar: ``where`` names the function, ``what`` the argument."""
    if is_array(x) or isinstance(x, (np.ndarray, np.generic, Literal)) or isinstance(x, dtypes.PY_SCALARS):
        return
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{where}: {what} is a {type(x).__name__}; {library} does not convert lists or tuples "
                        "implicitly (it would hide a host-to-device copy): wrap it with kiln.numpy.asarray(...)")
    if key_arrays.any_key(x):  # (the key's repr is no help here: it spans lines)
        raise TypeError(f"{where}: {what} is a PRNG key array (dtype {x.dtype}), which has no numeric operations: "
                        "derive new keys with kiln.random.split or kiln.random.fold_in, or use "
                        "kiln.random.key_data(keys) for its uint32 data")
    raise TypeError(f"{where}: {what} of type {type(x).__name__} ({x!r:.40}) is not an array or a scalar"
                    f"{ref_hint(x)}")


def as_operand(x: Any) -> Any:
    """An argument as primitives take it: kiln arrays and tracers as they are; host values as such."""
    if isinstance(x, (np.ndarray, np.generic)) and not is_array(x):
        dtype = dtypes.canonicalize_dtype(x.dtype)
        return x if x.dtype == dtype else np.asarray(x, dtype)
    return x


def convert(x: Any, dtype: np.dtype, weak: bool) -> Any:
    """``x`` as ``dtype`` (Python scalars become literals; others a convert where needed)."""
    if isinstance(x, dtypes.PY_SCALARS) and not isinstance(x, np.generic):
        return lax.literal(x, dtype, weak)
    aval = abstractify(x)
    if aval.dtype == dtype and aval.weak_type == weak:
        return as_operand(x)
    if aval.ndim == 0 and isinstance(x, (np.ndarray, np.generic)):
        return lax.literal(np.asarray(x).astype(dtype), dtype, weak)
    return lax.convert_element_type(as_operand(x), dtype, weak_type=weak)


def promote_dtypes(fname: str, *args: Any) -> list[Any]:
    """Convert all arguments to their common dtype (JAX's promotion lattice)."""
    if _same_dtypes(args):  # nothing to promote: the common case, on the eager hot path
        return list(args)
    check_arraylike(fname, *args)
    try:
        dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
        return [convert(a, dtype, weak) for a in args]
    except OverflowError as e:  # a Python int too large for the arrays' dtype: name the function
        raise IntegerOverflowError(f"kiln.numpy.{fname}: {str(e).removeprefix('kiln: ')}") from None


def broadcast_shapes(fname: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise BroadcastError(f"kiln.numpy.{fname}: operands could not be broadcast together with shapes "
                             + " ".join(str(tuple(s)) for s in shapes)) from None


_RANK_PROMOTION_DOCS = "https://docs.jax.dev/en/latest/rank_promotion_warning.html"


def check_rank_promotion(fname: str, shapes: Sequence[Sequence[int]]) -> None:
    """Warn or raise, as the ``numpy_rank_promotion`` flag says, when operands of different ranks (scalars
    aside) are broadcast together, as JAX's elementwise functions do. JAX's wording comes first, so that
    warning filters and ``pytest.raises(match=...)`` written for JAX apply."""
    mode = config.numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if len(s)}) < 2:
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {fname} on shapes {listed}. Set the "
                      f"jax_numpy_rank_promotion config option to 'allow' to disable this warning; for more "
                      f"information, see {_RANK_PROMOTION_DOCS}.", stacklevel=user_stacklevel())
    elif mode == "raise":
        raise BroadcastError(f"Operands could not be broadcast together for {fname} on shapes {listed} and with the "
                             f"config option jax_numpy_rank_promotion='raise'. For more information, see "
                             f"{_RANK_PROMOTION_DOCS}. (kiln.numpy.{fname}: broadcast explicitly, e.g. with "
                             f"x[None, :], kiln.numpy.expand_dims or kiln.numpy.broadcast_to, or allow rank "
                             f"promotion with kiln.numpy_rank_promotion('allow').)")


def broadcast_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    """NumPy-style broadcast of ``x`` to ``shape`` (shape must be compatible)."""
    aval = abstractify(x)
    if aval.shape == shape:
        return x
    nlead = len(shape) - aval.ndim
    # Dimensions of size 1 that must grow are squeezed away first (broadcast_in_dim needs equality or 1).
    keep = [i for i, d in enumerate(aval.shape) if d == shape[nlead + i]]
    if len(keep) != aval.ndim:
        x = lax.reshape(x, tuple(aval.shape[i] for i in keep))
    return lax.broadcast_in_dim(x, shape, tuple(nlead + i for i in keep))


def _same_dtypes(args: tuple) -> bool:
    """All arguments kiln arrays (or tracers) of one dtype and weak-type flag (and not two or more weak bools, which
    JAX's promotion makes strong: ``jnp.logical_and(x > 0, x < 3)`` of a weak ``x`` under jit is a strong bool)."""
    if not args or type(args[0]) not in _ARRAY_TYPES:
        return False
    aval = args[0].aval
    if len(args) > 1 and aval.weak_type and aval.dtype == np.bool_:
        return False
    for a in args[1:]:
        if type(a) not in _ARRAY_TYPES or a.aval.dtype != aval.dtype or a.aval.weak_type != aval.weak_type:
            return False
    return True


def _same_avals(args: tuple) -> bool:
    """All arguments kiln arrays (or tracers) of one abstract value: nothing to promote or broadcast."""
    aval = getattr(args[0], "aval", None)
    if aval is None or type(args[0]) not in _ARRAY_TYPES:
        return False
    if len(args) > 1 and aval.weak_type and aval.dtype == np.bool_:  # weak bools promote to strong (_same_dtypes)
        return False
    for a in args[1:]:
        if type(a) not in _ARRAY_TYPES or a.aval != aval:
            return False
    return True


def promote_and_broadcast(fname: str, *args: Any) -> list[Any]:
    """Promote dtypes, then broadcast shapes (the preamble of every binary ufunc)."""
    if _same_avals(args):  # the common case, on the eager hot path
        return list(args)
    args = promote_dtypes(fname, *args)
    shapes = [abstractify(a).shape for a in args]
    shape = broadcast_shapes(fname, *shapes)
    if any(len(s) != len(shape) for s in shapes):
        check_rank_promotion(fname, shapes)
    return [broadcast_to_shape(a, shape) for a in args]


def canonical_axis(fname: str, axis: Any, ndim: int, **options: Any) -> int:
    """:func:`kiln.frontend.core.axes.canonical_axis` in the name of ``kiln.numpy.<fname>``."""
    return axes.canonical_axis(f"kiln.numpy.{fname}", axis, ndim, **options)


def canonical_axes(fname: str, axis: Any, ndim: int, **options: Any) -> tuple[int, ...]:
    """:func:`kiln.frontend.core.axes.canonical_axes` in the name of ``kiln.numpy.<fname>``."""
    return axes.canonical_axes(f"kiln.numpy.{fname}", axis, ndim, **options)


def sorted_axes(fname: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """:func:`kiln.frontend.core.axes.sorted_axes` in the name of ``kiln.numpy.<fname>``."""
    return axes.sorted_axes(f"kiln.numpy.{fname}", axis, ndim)


def static_int(fname: str, what: str, value: Any) -> int:
    """A Python int from a value that must be known at trace time."""
    if isinstance(value, Tracer):
        try:
            return int(value)
        except TypeError as e:
            raise type(e)(f"kiln.numpy.{fname}: {what} must be a static (non-traced) integer. {e}") from None
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer, Array)):
        raise TypeError(f"kiln.numpy.{fname}: {what} must be an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, Array) and (value.ndim != 0 or not dtypes.is_int(value.dtype)):
        raise TypeError(f"kiln.numpy.{fname}: {what} must be an integer, got an array of shape {value.shape} "
                        f"and dtype {value.dtype}")
    return int(value)


def static_shape(fname: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) or is_array(shape) and abstractify(shape).ndim == 0:
        shape = (shape,)
    try:
        dims = tuple(static_int(fname, "each dimension of the shape", d) for d in shape)
    except TypeError as e:
        if isinstance(shape, (list, tuple)):
            raise
        raise TypeError(f"kiln.numpy.{fname}: shape must be a sequence of integers, got {shape!r}") from e
    if any(d < 0 for d in dims):
        raise NegativeDimensionError(f"kiln.numpy.{fname}: negative dimensions are not allowed, got shape {dims}")
    return dims
