"""Functions that apply a user's function over arrays: vectorize (generalised ufuncs through
``kiln.vmap``), apply_along_axis, apply_over_axes, fromfunction."""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Collection

import numpy as np

from ..batching.api import vmap
from ..core import tree_util
from ..core.tracing import abstractify
from ._util import canonical_axis, check_arraylike, static_shape
from .creation import asarray, indices
from .shape import expand_dims, moveaxis, reshape, squeeze

__all__ = ["apply_along_axis", "apply_over_axes", "fromfunction", "frompyfunc", "ufunc", "vectorize"]

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    sig = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"kiln.numpy.vectorize: invalid signature {signature!r}; expected a generalised-ufunc "
                         "signature such as '(n),(n)->()' or '(m,n)->(n),(m)'")
    ins, outs = sig.split("->")

    def parse(side: str) -> list[tuple[str, ...]]:
        return [tuple(d for d in arg.split(",") if d) for arg in re.findall(r"\(([^)]*)\)", side)]

    return parse(ins), parse(outs)


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(), signature: str | None = None):
    """``pyfunc`` made to broadcast over its array arguments (as ``numpy.vectorize``), by ``kiln.vmap``
    rather than a Python loop.

    Without ``signature`` the function sees scalars; with a generalised-ufunc ``signature``
    (``'(n),(n)->()'``) it sees arrays with those core dimensions, and the other (leading) dimensions
    broadcast. ``excluded``: positions or keyword names of arguments passed through unchanged;
    other keyword arguments are passed through unchanged as well (not vectorised).
    """
    excluded = frozenset(excluded)
    in_core, out_core = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        where = f"kiln.numpy.vectorize({getattr(pyfunc, '__name__', 'function')})"
        static = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        dynamic = [asarray(a) for i, a in enumerate(args) if i not in static]
        cores = ([()] * len(dynamic) if in_core is None else
                 [c for i, c in enumerate(in_core) if i not in static] if len(in_core) == len(args) else None)
        if cores is None:
            raise TypeError(f"{where}: the signature {signature!r} has {len(in_core)} inputs, but the function was "
                            f"called with {len(args)} positional arguments")
        sizes: dict[str, int] = {}
        loop_shapes = []
        for k, (a, core) in enumerate(zip(dynamic, cores)):
            shape = abstractify(a).shape
            if len(shape) < len(core):
                raise ValueError(f"{where}: argument {k} has shape {shape}, fewer dimensions than its core "
                                 f"dimensions {core} in the signature {signature!r}")
            for name, size in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(name, size) != size:
                    raise ValueError(f"{where}: core dimension {name!r} has inconsistent sizes {sizes[name]} and "
                                     f"{size}")
            loop_shapes.append(shape[:len(shape) - len(core)])
        try:
            loop = tuple(np.broadcast_shapes(*loop_shapes)) if loop_shapes else ()
        except ValueError:
            raise ValueError(f"{where}: the arguments' loop dimensions {loop_shapes} do not broadcast together") \
                from None

        def call(*dyn):
            full, it = [], iter(dyn)
            for i in range(len(args)):
                full.append(static[i] if i in static else next(it))
            out = pyfunc(*full, **kwargs)
            if out_core is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) > 1 and not isinstance(out, tuple):
                    raise TypeError(f"{where}: the signature has {len(out_core)} outputs; the function must return "
                                    f"a tuple, got {type(out).__name__}")
                if len(outs) != len(out_core):
                    raise TypeError(f"{where}: the signature has {len(out_core)} outputs, the function returned "
                                    f"{len(outs)}")
                for o, core in zip(outs, out_core):
                    shape = np.shape(o) if not hasattr(o, "shape") else tuple(o.shape)
                    if len(shape) != len(core):
                        raise ValueError(f"{where}: an output has shape {shape}, but the signature gives it core "
                                         f"dimensions {core}")
                    for name, size in zip(core, shape):
                        if sizes.setdefault(name, size) != size:
                            raise ValueError(f"{where}: output core dimension {name!r} has size {size}, expected "
                                             f"{sizes[name]}")
            return out

        # One vmap per loop dimension (innermost first); arguments with size 1 there are not mapped.
        padded = [(1,) * (len(loop) - len(s)) + s for s in loop_shapes]
        squeezed = [squeeze(a, tuple(i for i, d in enumerate(s) if d == 1)) if 1 in s else a
                    for a, s in zip(dynamic, loop_shapes)]
        fn, expand = call, []
        for d in range(len(loop) - 1, -1, -1):
            axes = tuple(None if p[d] == 1 else 0 for p in padded)
            if all(ax is None for ax in axes):
                expand.append(d)
            else:
                fn = vmap(fn, in_axes=axes)
        out = fn(*squeezed)
        if expand:
            out = tree_util.tree_map(lambda o: expand_dims(o, sorted(expand)), out)
        return out

    return wrapped


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``func1d`` applied to the 1-D slices of ``arr`` along ``axis`` (by ``kiln.vmap``); the
    dimensions of its result take the place of ``axis``."""
    check_arraylike("apply_along_axis", arr)
    arr = asarray(arr)
    nd = abstractify(arr).ndim
    axis = canonical_axis("apply_along_axis", axis, nd)
    out = _map_last(func1d, moveaxis(arr, axis, -1), args, kwargs)
    lead = nd - 1
    k = abstractify(out).ndim - lead
    # out: (the other dimensions..., the result's dimensions...) -> the result's dimensions at ``axis``
    return moveaxis(out, tuple(range(lead, lead + k)), tuple(range(axis, axis + k)))


def _map_last(func1d: Callable, moved: Any, args: tuple, kwargs: dict) -> Any:
    """``func1d`` on each last-axis slice of ``moved``: the result has ``moved``'s leading shape first."""
    shape = abstractify(moved).shape
    lead, n = shape[:-1], shape[-1]
    flat = reshape(moved, (int(np.prod(lead, dtype=np.int64)), n))
    out = vmap(lambda x: asarray(func1d(x, *args, **kwargs)))(flat)
    return reshape(out, lead + abstractify(out).shape[1:])


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Any) -> Any:
    """``func(a, axis)`` applied for each axis in turn, each result fed to the next; a result with one
    dimension fewer gets it back (``expand_dims``), so the number of dimensions never changes."""
    check_arraylike("apply_over_axes", a)
    a = asarray(a)
    for axis in (axes if isinstance(axes, (tuple, list)) else [axes]):
        res = asarray(func(a, axis))
        if res.ndim == a.ndim - 1:
            res = expand_dims(res, axis)
        elif res.ndim != a.ndim:
            raise ValueError(f"kiln.numpy.apply_over_axes: func must keep the number of dimensions ({a.ndim}) or "
                             f"remove one, got a result of shape {res.shape}")
        a = res
    return a


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
    """``function`` evaluated at each index of ``shape``: it receives one coordinate per dimension (as
    ``dtype``, default float). As in JAX, it is mapped with ``kiln.vmap``, so it sees scalar
    coordinates; keyword arguments are passed through."""
    shape = static_shape("fromfunction", shape)
    grids = indices(shape, dtype=dtype)
    n = int(np.prod(shape, dtype=np.int64))
    flat = [reshape(g, (n,)) for g in grids] if shape else []
    if not shape:
        return function(**kwargs)
    out = vmap(lambda *c: function(*c, **kwargs))(*flat)
    return tree_util.tree_map(lambda o: reshape(o, shape + tuple(abstractify(o).shape[1:])), out)


# -- ufunc objects ---------------------------------------------------------------------------------
def _result_dtype(func: Callable, *dts: np.dtype) -> np.dtype:
    """The dtype ``func`` returns for 0-d arguments of dtypes ``dts`` (traced abstractly, nothing runs)."""
    from ..core.avals import ShapedArray
    from ..core.tracing import trace_to_ir
    closed, _ = trace_to_ir(lambda *xs: [asarray(func(*xs))], [ShapedArray((), np.dtype(d)) for d in dts],
                            name=getattr(func, "__name__", "ufunc"))
    return closed.ir.out_avals[0].dtype


class ufunc:
    """A universal function made from a scalar function (as JAX's ``jax.numpy.ufunc``): calling it
    broadcasts over its arguments (``vectorize``), and binary ones with one output also have
    ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``, each built from the scalar
    function with kiln's loops (``fori_loop``/``scan``) and ``vmap``. ``call``, ``reduce``, ...
    replace those default implementations with faster ones."""

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity: Any = None, call: Callable | None = None,
                 reduce: Callable | None = None, accumulate: Callable | None = None, at: Callable | None = None,
                 reduceat: Callable | None = None):
        self.__doc__ = func.__doc__
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._props = (func, int(nin), int(nout), int(nargs or nin), identity)
        self._impl = {"call": call, "reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}

    _func = property(lambda self: self._props[0])
    nin = property(lambda self: self._props[1])
    nout = property(lambda self: self._props[2])
    nargs = property(lambda self: self._props[3])
    identity = property(lambda self: self._props[4])

    def __hash__(self) -> int:
        return hash((self.__name__,) + self._props)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and (self.__name__,) + self._props == (other.__name__,) + other._props

    def __repr__(self) -> str:
        return f"<kiln.numpy.ufunc '{self.__name__}'>"

    def _where(self, method: str) -> str:
        return f"kiln.numpy.ufunc '{self.__name__}'.{method}"

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{self._where(method)}: only for ufuncs of 2 inputs and 1 output, this one has "
                             f"nin={self.nin}, nout={self.nout}")

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        check_arraylike(self.__name__, *args)
        if out is not None or where is not None:
            raise NotImplementedError(f"{self._where('__call__')}: out= and where= are not supported")
        if len(args) != self.nin:
            raise TypeError(f"{self._where('__call__')}: takes {self.nin} arguments, got {len(args)}")
        call = self._impl["call"] or vectorize(self._func)
        return call(*args)

    def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        """``a`` reduced along ``axis`` (all axes flattened when None) by repeated application."""
        from ..control.api import fori_loop
        from .shape import broadcast_to, ravel
        from .ufuncs import where as _select
        self._binary("reduce")
        check_arraylike(self._where("reduce"), a)
        if out is not None:
            raise NotImplementedError(f"{self._where('reduce')}: out= is not supported")
        if self._impl["reduce"] is not None:
            return self._impl["reduce"](a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        arr = asarray(a)
        if initial is None:
            initial = self.identity
        if where is not None:
            where = broadcast_to(asarray(where), arr.shape)
            if where.dtype != np.bool_:
                raise ValueError(f"{self._where('reduce')}: where must be boolean, got {where.dtype.name}")
            if initial is None:
                raise ValueError(f"{self._where('reduce')}: a where= mask needs initial= (this ufunc has no identity)")
        dt = np.dtype(dtype) if dtype is not None else _result_dtype(self._func, arr.dtype, arr.dtype)
        if isinstance(axis, (tuple, list)):
            raise NotImplementedError(f"{self._where('reduce')}: a tuple of axes is not supported (as in JAX)")
        if axis is None:
            final = (1,) * arr.ndim if keepdims else ()
            arr, where = ravel(arr), (None if where is None else ravel(where))
            axis = 0
        else:
            axis = canonical_axis(self._where("reduce"), axis, arr.ndim)
            final = arr.shape[:axis] + ((1,) if keepdims else ()) + arr.shape[axis + 1:]
            arr = moveaxis(arr, axis, 0)
            where = None if where is None else moveaxis(where, axis, 0)
        if arr.shape[0] == 0:
            if initial is None:
                raise ValueError(f"{self._where('reduce')}: an empty reduction needs initial= (this ufunc has no "
                                 "identity)")
            return broadcast_to(asarray(initial, dtype=dt), final)

        def body(i, acc):
            new = asarray(self._func(acc, arr[i].astype(dt))).astype(dt)
            return new if where is None else _select(where[i], new, acc)

        start, init = (1, arr[0]) if initial is None else (0, asarray(initial))
        result = fori_loop(start, arr.shape[0], body, broadcast_to(init.astype(dt), arr.shape[1:]))
        return reshape(result, final)

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running results of ``reduce`` along ``axis``."""
        from ..control.api import scan
        self._binary("accumulate")
        check_arraylike(self._where("accumulate"), a)
        if out is not None:
            raise NotImplementedError(f"{self._where('accumulate')}: out= is not supported")
        if self._impl["accumulate"] is not None:
            return self._impl["accumulate"](a, axis=axis, dtype=dtype)
        arr = asarray(a)
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{self._where('accumulate')}: needs a single integer axis, got {axis!r}")
        axis = canonical_axis(self._where("accumulate"), axis, arr.ndim)
        dt = np.dtype(dtype) if dtype is not None else _result_dtype(self._func, arr.dtype, arr.dtype)
        if arr.size == 0:
            return arr.astype(dt)
        moved = moveaxis(arr, axis, 0).astype(dt)

        def step(acc, x):
            new = asarray(self._func(acc, x)).astype(dt)
            return new, new

        _, rest = scan(step, moved[0], moved[1:])
        from .shape import concatenate
        return moveaxis(concatenate([moved[:1], rest], 0), 0, axis)

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """Reductions over the slices ``indices[i]:indices[i+1]`` along ``axis`` (as NumPy: where
        ``indices[i] >= indices[i+1]`` the result is ``a[indices[i]]``)."""
        from ..control.api import fori_loop
        from .index_funcs import take
        from .shape import concatenate
        from .ufuncs import where as _select
        self._binary("reduceat")
        check_arraylike(self._where("reduceat"), a, indices)
        if out is not None:
            raise NotImplementedError(f"{self._where('reduceat')}: out= is not supported")
        if self._impl["reduceat"] is not None:
            return self._impl["reduceat"](a, indices, axis=axis, dtype=dtype)
        arr, idx = asarray(a), asarray(indices)
        if arr.ndim == 0 or idx.ndim != 1:
            raise ValueError(f"{self._where('reduceat')}: needs an array of at least 1 dimension and 1-D indices, got "
                             f"shapes {arr.shape} and {idx.shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{self._where('reduceat')}: needs a single integer axis, got {axis!r}")
        axis = canonical_axis(self._where("reduceat"), axis, arr.ndim)
        dt = arr.dtype if dtype is None else np.dtype(dtype)
        moved = moveaxis(arr, axis, 0).astype(dt)
        res = take(moved, idx, axis=0)
        bounds = concatenate([idx, asarray([moved.shape[0]], dtype=idx.dtype)])
        start = reshape(bounds[:-1], (-1,) + (1,) * (moved.ndim - 1))
        stop = reshape(bounds[1:], (-1,) + (1,) * (moved.ndim - 1))

        def body(i, acc):
            inside = (i > start) & (i < stop)
            return _select(inside, asarray(self._func(acc, moved[i][None])).astype(dt), acc)

        return moveaxis(fori_loop(0, moved.shape[0], body, res), 0, axis)

    def outer(self, A: Any, B: Any, /) -> Any:
        """``func(a, b)`` for every pair of elements of ``A`` and ``B``: shape ``A.shape + B.shape``."""
        if self.nout != 1:
            raise ValueError(f"{self._where('outer')}: only for ufuncs with one output")
        check_arraylike(self._where("outer"), A, B)
        A, B = asarray(A), asarray(B)
        flat = vmap(vmap(self, (None, 0)), (0, None))(reshape(A, (A.size,)), reshape(B, (B.size,)))
        return reshape(flat, A.shape + B.shape)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """``a`` with ``func`` applied at ``indices`` (with ``b`` as second operand), repeated indices
        applied once each, in order. Needs ``inplace=False``: kiln arrays are immutable."""
        from ..control.api import fori_loop
        if inplace:
            raise ValueError(f"{self._where('at')}: kiln arrays are immutable, so it cannot update in place; pass "
                             "inplace=False and use the returned array")
        if self._impl["at"] is not None:
            return self._impl["at"](a, indices) if b is None else self._impl["at"](a, indices, b)
        arr = asarray(a)
        extra = () if b is None else (asarray(b),)
        dt = _result_dtype(self._func, arr.dtype, *(e.dtype for e in extra))
        arr = arr.astype(dt)
        idx = indices if isinstance(indices, tuple) else (indices,)
        arrays = [asarray(i) for i in idx if not isinstance(i, slice) and i is not None and i is not Ellipsis]
        if not arrays or len(idx) != len(arrays):
            raise NotImplementedError(f"{self._where('at')}: indices must be integer arrays or scalars (one per "
                                      "indexed axis); slices are not supported")
        shape = tuple(np.broadcast_shapes(*[x.shape for x in arrays]))
        if not shape:
            new = self._func(arr[idx], *(e.astype(dt) for e in extra))
            return arr.at[idx].set(asarray(new).astype(dt))
        from .shape import broadcast_to
        flat = [reshape(broadcast_to(x, shape), (-1,)) for x in arrays]
        n = flat[0].shape[0]
        vals = None
        if extra:
            e = extra[0].astype(dt)
            vals = reshape(broadcast_to(e, shape + e.shape[len(shape):] if e.ndim > len(shape) else shape),
                           (n,) + (e.shape[len(shape):] if e.ndim > len(shape) else ()))

        def body(i, acc):
            where = tuple(f[i] for f in flat)
            args = () if vals is None else (vals[i],)
            return acc.at[where].set(asarray(self._func(acc[where], *args)).astype(dt))

        return fori_loop(0, n, body, arr)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A :class:`ufunc` from a scalar function of ``nin`` arguments and ``nout`` results."""
    return ufunc(func, nin, nout, identity=identity)
