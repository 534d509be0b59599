"""Operators and methods shared by concrete arrays (``Array``) and traced ones (``Tracer``).

Each one forwards to the kiln.numpy implementation, so ``x + y`` and ``knp.add(x, y)`` are the
same function with the same promotion and error messages.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DtypeArgumentError

# Installed by kiln.frontend.numpy when it loads (a higher floor: the core cannot import it), as JAX's
# register_jax_array_methods: the kiln.numpy namespace and the class behind ``x.at``.
_knp: Any = None
_index_update_helper: Any = None
_iter_rows: Any = None  # iter() of a concrete array: kiln.numpy's chunked row iterator


def install_array_methods(numpy_namespace: Any, index_update_helper: type, iter_rows: Any = None) -> None:
    """Make the operators and methods of arrays and tracers forward to ``numpy_namespace``'s functions.

    The binary operators are bound to their functions here, once: an operator is on the path of every eager
    ``x * 2`` and every traced one, and a lookup of the function per call costs a third of a microsecond."""
    global _knp, _index_update_helper, _iter_rows
    _knp, _index_update_helper, _iter_rows = numpy_namespace, index_update_helper, iter_rows
    for dunder, method in list(vars(ArrayMethods).items()):
        operator = getattr(method, "_operator", None)  # (kiln.numpy name, reflected), set by _binary
        if operator is not None:
            setattr(ArrayMethods, dunder, _bound_binary(dunder, getattr(numpy_namespace, operator[0]), operator[1]))
        function = getattr(method, "_function", None)  # kiln.numpy's name, set by _function_method
        if function is not None:
            setattr(ArrayMethods, dunder, getattr(numpy_namespace, function))


def concrete_rows(x: Any):
    """``iter(x)`` of a concrete array (see kiln.numpy's ``iter_rows``; row by row before kiln.numpy loads)."""
    if _iter_rows is None:
        return (x[i] for i in range(x.aval.shape[0]))
    return _iter_rows(x)


def check_to_device_stream(stream: Any) -> None:
    if stream is not None:
        raise NotImplementedError("x.to_device: the stream argument is not supported (kiln orders transfers "
                                  "itself); call x.to_device(device) without it")


def _np():
    if _knp is None:
        raise RuntimeError("kiln: array operators need kiln.numpy, which is not loaded; import kiln first")
    return _knp


# Operand types the operators handle; for any other type they return NotImplemented, so that Python
# tries the other operand's reflected method (a user class's __radd__), and ``x == None`` is False.
_OPERAND_TYPES = (np.ndarray, np.generic, bool, int, float, complex, list, tuple)


def _is_operand(x: Any) -> bool:
    return isinstance(x, _OPERAND_TYPES) or isinstance(x, ArrayMethods) or hasattr(x, "aval")


def _bound_binary(dunder: str, fn: Any, reflected: bool):
    """The operator ``dunder`` calling ``fn`` (``fn(other, self)`` when ``reflected``)."""
    if reflected:
        def method(self, other):
            if isinstance(other, _COMMON_OPERANDS) or _is_operand(other):
                return fn(other, self)
            return NotImplemented
    else:
        def method(self, other):
            if isinstance(other, _COMMON_OPERANDS) or _is_operand(other):
                return fn(self, other)
            return NotImplemented
    method.__name__ = method.__qualname__ = dunder
    return method


def _binary(name: str, reflected: bool = False):
    """An operator before kiln.numpy is loaded: :func:`install_array_methods` replaces it with one bound to
    kiln.numpy's ``name`` (this one explains that kiln.numpy is missing)."""
    def method(self, other):
        if not _is_operand(other):
            return NotImplemented
        fn = getattr(_np(), name)
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    method._operator = (name, reflected)
    return method


def _function_method(name: str, dunder: str | None = None):
    """A method (or an operator of one operand, ``dunder``) that is kiln.numpy's function ``name`` of the array:
    :func:`install_array_methods` puts the function itself in its place, so that ``-x`` and ``x.sum()`` are the
    calls ``knp.negative(x)`` and ``knp.sum(x)`` with no method's frame around them (that of an eager call on one
    array launches directly). This one, before kiln.numpy is loaded, explains that it is missing."""
    def method(self, *args, **kwargs):
        return getattr(_np(), name)(self, *args, **kwargs)
    method.__name__ = dunder or name
    method._function = name
    return method


def _format_index(index: Any) -> str:
    """``x[...]``'s index as written in source: ``0``, ``1:3``, ``..., ::2``."""
    def one(i):
        if isinstance(i, slice):
            text = ":".join("" if p is None else str(p) for p in (i.start, i.stop, i.step))
            return text[:-1] if i.step is None else text
        return "..." if i is Ellipsis else "None" if i is None else str(i) if isinstance(i, int) else "idx"
    return ", ".join(one(i) for i in index) if isinstance(index, tuple) else one(index)


class ArrayMethods:
    """Mixin: NumPy-style operators and methods. Subclasses provide ``aval``."""

    __slots__ = ()

    # -- metadata -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def flat(self):
        raise NotImplementedError("kiln arrays do not implement the .flat iterator (as JAX's); use x.ravel() or "
                                  "x.flatten()")

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    # -- operators --------------------------------------------------------------------------
    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", True)
    __truediv__ = _binary("true_divide")
    __rtruediv__ = _binary("true_divide", True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", True)
    __pow__ = _binary("power")
    __rpow__ = _binary("power", True)
    __matmul__ = _binary("matmul")
    __rmatmul__ = _binary("matmul", True)
    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", True)
    __lshift__ = _binary("left_shift")
    __rlshift__ = _binary("left_shift", True)
    __rshift__ = _binary("right_shift")
    __rrshift__ = _binary("right_shift", True)
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __eq__ = _binary("equal")  # type: ignore[assignment]
    __ne__ = _binary("not_equal")  # type: ignore[assignment]
    __neg__ = _function_method("negative", "__neg__")
    __pos__ = _function_method("positive", "__pos__")
    __abs__ = _function_method("abs", "__abs__")
    __invert__ = _function_method("invert", "__invert__")
    __hash__ = None  # arrays are mutable-looking values: unhashable, as NumPy's and JAX's

    def __divmod__(self, other):
        return _np().divmod(self, other)

    def __rdivmod__(self, other):
        return _np().divmod(other, self)

    def __getitem__(self, index: Any):
        return _np()._getitem(self, index)

    # -- the array API standard --------------------------------------------------------------
    def __array_namespace__(self, *, api_version: str | None = None):
        """The array API namespace of kiln arrays: the ``kiln.numpy`` module."""
        return _np().array_namespace(api_version)

    def to_device(self, device: Any, /, *, stream: Any = None):
        """The array on ``device``. Inside a trace placement is the enclosing computation's, so a traced
        value comes back unchanged (concrete arrays override this with a copy to ``device``)."""
        check_to_device_stream(stream)
        return self

    @property
    def at(self):
        """Functional updates, JAX style: ``x.at[idx].set(v)``, ``.add(v)``, ``.get()``, ..."""
        _np()  # kiln.numpy installs the helper
        return _index_update_helper(self)

    def __setitem__(self, index: Any, value: Any):
        raise TypeError(f"kiln arrays are immutable: {type(self).__name__} does not support item assignment "
                        f"(x[{_format_index(index)}] = ...). Use x = x.at[{_format_index(index)}].set(value) "
                        "instead, which returns an updated copy.")

    # -- methods ------------------------------------------------------------------------------
    @property
    def T(self):
        return _np().transpose(self)

    @property
    def mT(self):
        return _np().matrix_transpose(self)

    def reshape(self, *shape, order: str = "C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _np().reshape(self, shape, order=order)

    def astype(self, dtype):
        try:
            return _np().astype(self, dtype)
        except DtypeArgumentError as e:
            raise e.named("kiln.Array.astype") from None

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return _np().transpose(self, axes or None)

    # NumPy's methods of the same parameters as kiln.numpy's functions (in NumPy's order: x.sum(0, None, None, True)
    # keeps the dimension): the functions themselves once kiln.numpy is loaded.
    sum = _function_method("sum")
    prod = _function_method("prod")
    mean = _function_method("mean")
    max = _function_method("max")
    min = _function_method("min")
    any = _function_method("any")
    all = _function_method("all")
    argmax = _function_method("argmax")
    argmin = _function_method("argmin")
    var = _function_method("var")
    std = _function_method("std")

    def sort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
        """A sorted copy (kiln arrays are immutable: unlike NumPy's, this does not sort in place)."""
        return _np().sort(self, axis=axis, kind=kind, order=order, stable=stable, descending=descending)

    def argsort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
        return _np().argsort(self, axis=axis, kind=kind, order=order, stable=stable, descending=descending)

    def searchsorted(self, v, side="left", sorter=None):
        return _np().searchsorted(self, v, side=side, sorter=sorter)

    cumsum = _function_method("cumsum")
    cumprod = _function_method("cumprod")

    def repeat(self, repeats, axis=None, *, total_repeat_length=None):
        return _np().repeat(self, repeats, axis=axis, total_repeat_length=total_repeat_length)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _np().diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return _np().trace(self, offset, axis1, axis2, dtype=dtype, out=out)

    ptp = _function_method("ptp")

    def copy(self):
        return _np().copy(self)

    def squeeze(self, axis=None):
        return _np().squeeze(self, axis)

    def ravel(self, order: str = "C"):
        return _np().ravel(self) if order == "C" else _np().ravel(self, order)

    def flatten(self):
        return _np().ravel(self)

    def swapaxes(self, a: int, b: int):
        return _np().swapaxes(self, a, b)

    def dot(self, other, *, precision=None, preferred_element_type=None):
        return _np().dot(self, other, precision=precision, preferred_element_type=preferred_element_type)

    def clip(self, min=None, max=None):  # noqa: A002 - NumPy's names
        return _np().clip(self, min, max)

    def round(self, decimals: int = 0):
        return _np().round(self, decimals)

    def conj(self):
        return _np().conj(self)

    def conjugate(self):
        return _np().conj(self)

    def nonzero(self, *, fill_value=None, size=None):
        return _np().nonzero(self, size=size, fill_value=fill_value)

    def take(self, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
             fill_value=None):
        return _np().take(self, indices, axis=axis, out=out, mode=mode, unique_indices=unique_indices,
                          indices_are_sorted=indices_are_sorted, fill_value=fill_value)

    def compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
        return _np().compress(condition, self, axis=axis, out=out, size=size, fill_value=fill_value)

    def choose(self, choices, out=None, mode="raise"):
        return _np().choose(self, choices, out=out, mode=mode)

    def argpartition(self, kth, axis=-1):
        return _np().argpartition(self, kth, axis=axis)

    def view(self, dtype=None, type=None):  # noqa: A002 - NumPy's names
        """The same bits seen as ``dtype`` (the last dimension scales when the item sizes differ), as JAX's."""
        if type is not None:
            raise NotImplementedError("kiln: x.view(type=...) is not supported (kiln arrays have one type)")
        if dtype is None:
            return self
        return _np()._view_as(self, dtype)

    def byteswap(self, inplace=False):
        """Each element with its bytes reversed (same dtype), as NumPy's; kiln arrays are immutable."""
        if inplace:
            raise ValueError("kiln: x.byteswap(inplace=True) is not supported: kiln arrays are immutable; "
                             "use y = x.byteswap()")
        return _np()._byteswap(self)

    @property
    def real(self):
        return _np().real(self)

    @property
    def imag(self):
        return _np().imag(self)


# The operands most operators see, checked first (read by _bound_binary's methods at call time): another array
# or tracer, a Python float or int.
_COMMON_OPERANDS = (ArrayMethods, float, int)
