"""kiln.scipy.interpolate (as ``jax.scipy.interpolate``): ``RegularGridInterpolator``, linear and nearest
interpolation on a rectilinear grid, traceable (jit, vmap, grad) and a pytree."""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..core.tracing import Tracer
from ..core.tree_util import register_pytree_node
from ..driver.eager_jit import eager_jit
from ..numpy._util import check_array_argument, is_array

__all__ = ["RegularGridInterpolator"]

_CLASS = "kiln.scipy.interpolate.RegularGridInterpolator"
_METHODS = ("linear", "nearest")
# The fewest grid points per dimension each method needs (as SciPy).
_MIN_POINTS = {"linear": 2, "nearest": 1}


def _check_method(where: str, method: Any) -> None:
    if method not in _METHODS:
        raise ValueError(f"{where}: method {method!r} is not defined; use 'linear' or 'nearest'")


def _check_grid_sizes(where: str, grid: Sequence[Any], method: str) -> None:
    need = _MIN_POINTS[method]
    for d, g in enumerate(grid):
        if g.shape[0] < need:
            raise ValueError(f"{where}: there are {g.shape[0]} points in dimension {d}, but method {method!r} "
                             f"requires at least {need} point{'s' if need > 1 else ''} per dimension")


def _check_ascending(where: str, d: int, g: Any) -> None:
    """Strictly ascending points, checked where their values are known (not for traced points)."""
    if isinstance(g, Tracer):
        return
    host = np.asarray(g)
    if host.size > 1 and not bool(np.all(host[1:] > host[:-1])):
        raise ValueError(f"{where}: points[{d}] must be strictly ascending (no repeats, no NaN), got {host!r:.80}. "
                         f"For a descending axis, reverse it and the matching axis of values "
                         f"(points[{d}][::-1], kiln.numpy.flip(values, axis={d}))")


def _coordinates(where: str, xi: Any, ndim: int) -> Any:
    """The query points as one array of shape (..., ndim): ``xi`` as it is, a 1-D ``xi`` read as consecutive
    points, or a tuple of ``ndim`` coordinate arrays broadcast together (as SciPy)."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        for j, c in enumerate(xi):
            check_array_argument(where, f"xi[{j}]", c)
        try:
            parts = jnp.broadcast_arrays(*(jnp.asarray(c) for c in xi))
        except ValueError as e:
            shapes = ", ".join(str(jnp.shape(c)) for c in xi)
            raise ValueError(f"{where}: the coordinate arrays of xi have shapes {shapes}, which do not broadcast "
                             "together; give one array per dimension, of one (broadcastable) shape") from e
        return jnp.stack(parts, axis=-1).astype(dtypes.default_float_dtype())
    check_array_argument(where, "xi", xi)
    xi = jnp.asarray(xi)
    if xi.ndim == 0:
        raise ValueError(f"{where}: xi is a scalar; the sample points must have shape (..., {ndim}) (one point per "
                         f"row of {ndim} coordinate{'s' if ndim > 1 else ''})")
    if xi.ndim == 1:
        if xi.shape[0] % ndim:
            raise ValueError(f"{where}: the 1-D xi of {xi.shape[0]} values cannot be read as points of dimension "
                             f"{ndim}; give xi the shape (..., {ndim})")
        xi = xi.reshape(-1, ndim)
    if xi.shape[-1] != ndim:
        raise ValueError(f"{where}: the requested sample points xi have dimension {xi.shape[-1]} (xi has shape "
                         f"{xi.shape}), but this RegularGridInterpolator has dimension {ndim}; xi must have shape "
                         f"(..., {ndim})")
    return xi


class RegularGridInterpolator:
    """Interpolate on a regular (rectilinear) grid, as :class:`scipy.interpolate.RegularGridInterpolator`.

    Parameters
    ----------
    points : sequence of 1-D arrays
        The grid coordinates of each of the ``ndim`` dimensions, each strictly ascending.
    values : array
        The values at the grid points, of shape ``(len(points[0]), ..., len(points[ndim - 1]), *trailing)``;
        the trailing dimensions are carried through to the result. Integers become the default float dtype.
    method : {'linear', 'nearest'}
        The interpolation method (may be overridden at each call).
    bounds_error : bool
        Must be False: an error on out-of-bounds points cannot be raised under ``jit`` (JAX refuses it too).
    fill_value : scalar or None
        The value returned for points outside the grid (default NaN); None extrapolates.

    Notes
    -----
    The interpolator is a pytree (leaves: the grid, the values and the fill value), so it can be passed to
    ``kiln.jit``-compiled functions, vmapped over and differentiated (``linear``: with respect to ``values``
    and ``xi``). As in JAX, the points must be strictly ascending; kiln checks that where their values are
    known (not for traced points).

    Examples
    --------
    >>> points = (kiln.numpy.array([1., 2., 3.]), kiln.numpy.array([4., 5., 6.]))
    >>> values = kiln.numpy.array([[10., 20., 30.], [40., 50., 60.], [70., 80., 90.]])
    >>> interp = RegularGridInterpolator(points, values)
    >>> interp(kiln.numpy.array([[1.5, 4.5], [2.2, 5.8]]))
    Array([30., 64.], dtype=float32)
    """

    def __init__(self, points: Sequence[Any], values: Any, method: str = "linear", bounds_error: bool = False,
                 fill_value: Any = np.nan):
        where = _CLASS
        _check_method(where, method)
        if bounds_error:
            raise NotImplementedError(
                f"{where}: bounds_error=True is not supported (as in JAX): an error on out-of-bounds points cannot "
                "be raised under jit. Use bounds_error=False with fill_value=nan (the default) and check the "
                "result with kiln.numpy.isnan, or fill_value=None to extrapolate")
        if is_array(points) or isinstance(points, np.ndarray):
            if jnp.ndim(points) != 2:
                raise TypeError(f"{where}: points must be a sequence of 1-D arrays, one per dimension, got an array "
                                f"of shape {jnp.shape(points)}; for a 1-D grid write (x,)")
            points = list(points)
        elif not isinstance(points, (tuple, list)):
            raise TypeError(f"{where}: points must be a tuple of 1-D arrays, one per dimension, got "
                            f"{type(points).__name__}")
        check_array_argument(where, "values", values)
        values = jnp.asarray(values)
        if not dtypes.is_inexact(values.dtype):
            values = values.astype(dtypes.default_float_dtype())
        if len(points) == 0:
            raise ValueError(f"{where}: points is empty; give one 1-D array of grid coordinates per dimension")
        if len(points) > values.ndim:
            raise ValueError(f"{where}: there are {len(points)} point arrays, but values has {values.ndim} "
                             f"dimensions (shape {values.shape}); values must have shape (len(points[0]), ..., "
                             f"len(points[{len(points) - 1}]), *trailing)")
        grid = []
        for d, p in enumerate(points):
            check_array_argument(where, f"points[{d}]", p)
            g = jnp.asarray(p)
            if g.ndim != 1:
                raise ValueError(f"{where}: points[{d}] has shape {g.shape}; each entry of points must be 1-D")
            if g.shape[0] != values.shape[d]:
                raise ValueError(f"{where}: there are {g.shape[0]} points in dimension {d}, but values has "
                                 f"{values.shape[d]} (values has shape {values.shape}); values must have shape "
                                 f"(len(points[0]), ..., len(points[{len(points) - 1}]), *trailing)")
            _check_ascending(where, d, p)
            grid.append(g)
        _check_grid_sizes(where, grid, method)
        if fill_value is not None:
            check_array_argument(where, "fill_value", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(f"{where}: fill_value must be either None or of a type compatible with values: "
                                 f"a {fill_value.dtype} fill_value does not cast to values' {values.dtype}")
        self.method = method
        self.bounds_error = bounds_error
        self.fill_value = fill_value
        self.grid = tuple(grid)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """Interpolate at ``xi``: an array of shape ``(..., ndim)`` (a 1-D one is read as consecutive points)
        or a tuple of ``ndim`` coordinate arrays broadcast together. ``method`` overrides the interpolator's.
        Returns an array of shape ``xi.shape[:-1] + values.shape[ndim:]``."""
        where = f"{_CLASS}.__call__"
        method = self.method if method is None else method
        _check_method(where, method)
        _check_grid_sizes(where, self.grid, method)
        xi = _coordinates(where, xi, len(self.grid))
        return _interpolate(self.grid, self.values, self.fill_value, xi, method)

    def __repr__(self) -> str:
        shape = tuple(self.values.shape)
        return f"RegularGridInterpolator(values shape={shape}, method={self.method!r})"


@eager_jit("method", where=f"{_CLASS}.__call__", sequences=("grid",))
def _interpolate(grid: tuple, values: Any, fill_value: Any, xi: Any, method: str) -> Any:
    ndim = len(grid)
    trailing = values.shape[ndim:]
    lead = xi.shape[:-1]
    x = xi.reshape(-1, ndim)
    indices, fractions = [], []
    outside = jnp.zeros(x.shape[:1], dtype=bool)
    for d, g in enumerate(grid):
        xd = x[:, d]
        n = g.shape[0]
        if n == 1:  # (nearest only) every point takes the one sample
            i = jnp.zeros(xd.shape, dtype=dtypes.default_int_dtype())
            t = jnp.zeros(xd.shape, dtype=dtypes.default_float_dtype())
        else:
            # The cell [g[i], g[i + 1]] holding xd; the first or last cell beyond the edges (extrapolation).
            i = jnp.clip(jnp.searchsorted(g, xd) - 1, 0, n - 2)
            lo, hi = g[i], g[i + 1]
            t = (xd - lo) / (hi - lo)
        indices.append(i)
        fractions.append(t)
        outside = outside | (xd < g[0]) | (xd > g[-1])
    expand = (slice(None),) + (None,) * len(trailing)
    if method == "linear":
        result = None
        for corner in itertools.product((0, 1), repeat=ndim):
            weight = None
            for bit, t in zip(corner, fractions):
                w = t if bit else 1 - t
                weight = w if weight is None else weight * w
            term = values[tuple(i + bit for i, bit in zip(indices, corner))] * weight[expand]
            result = term if result is None else result + term
    else:  # nearest: halves go to the lower sample (as SciPy and JAX)
        result = values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(indices, fractions))]
    if fill_value is not None:
        result = jnp.where(outside[expand], fill_value, result)
    return result.reshape(lead + trailing)


def _flatten(interp: RegularGridInterpolator):
    return (interp.grid, interp.values, interp.fill_value), (interp.method, interp.bounds_error)


def _unflatten(aux: tuple, children: tuple) -> RegularGridInterpolator:
    # Not through __init__: the leaves may be tracers, or other objects of a tree_map (as in JAX they must
    # be arrays); the interpolator was checked when it was built.
    interp = object.__new__(RegularGridInterpolator)
    interp.grid, interp.values, interp.fill_value = children
    interp.grid = tuple(interp.grid)
    interp.method, interp.bounds_error = aux
    return interp


register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
