"""Products: matmul, dot, vdot, vecdot, inner, outer, tensordot, trace, kron, cross (via dot_general and
elementwise primitives). ``einsum`` lives in :mod:`.einsum`. ``precision=`` is checked here (errors name the
numpy function) and passed to :func:`kiln.lax.dot_general` (or the convolution), as JAX does."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.errors import ShapeError
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ..lax.precision import canonicalize_precision
from ..lax.sharding import takes_out_sharding
from ._util import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    check_arraylike,
    convert,
    promote_dtypes,
)

__all__ = [
    "convolve", "correlate", "cross", "dot", "inner", "kron", "matmul", "matvec", "outer", "tensordot", "trace",
    "vdot", "vecmat", "vecdot",
]


def _operands(fname: str, *args) -> list[Any]:
    check_arraylike(fname, *args)
    return [materialize(x) for x in promote_dtypes(fname, *args)]


def _preferred(a, preferred_element_type):
    """The result dtype a product asks dot_general for: the operands' (promoted) dtype unless given, as JAX's
    ``jnp.dot`` does (its jaxprs show ``preferred_element_type=float32``; the program is the same)."""
    return abstractify(a).dtype if preferred_element_type is None else preferred_element_type


def _shape_error(fname: str, a, b, detail: str) -> ShapeError:
    return ShapeError(f"kiln.numpy.{fname}: shapes {abstractify(a).shape} and {abstractify(b).shape} are not "
                      f"aligned: {detail}")


def _mul(a, b):
    """Elementwise product of two arrays of one dtype and shape (``and`` for booleans)."""
    if abstractify(a).dtype == np.bool_:
        return lax.bitwise_and(a, b)
    return lax.mul(a, b)


def _scalar_product(fname: str, a, b):
    shape = broadcast_shapes(fname, abstractify(a).shape, abstractify(b).shape)
    return _mul(broadcast_to_shape(a, shape), broadcast_to_shape(b, shape))


def _conj_if_complex(x):
    return lax.conj(x) if abstractify(x).dtype.kind == "c" else x


@takes_out_sharding
@eager_jit("precision", "preferred_element_type")
def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted to matrices (and the added axis
    removed afterwards), leading (batch) dimensions broadcast."""
    canonicalize_precision("numpy.matmul", precision)
    a, b = _operands("matmul", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        raise ValueError(f"kiln.numpy.matmul: operands must not be 0-d (got shapes {sa} and {sb}); use * for "
                         "scalars")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    b_dim = 0 if b_vec else len(sb) - 2  # b's contracted dimension
    if sa[-1] != sb[b_dim]:  # checked on the shapes as given
        raise _shape_error("matmul", a, b, f"{sa[-1]} (dim {len(sa) - 1}) != {sb[b_dim]} (dim {b_dim})")
    a_batch, b_batch = sa[:-2] if not a_vec else (), sb[:-2] if not b_vec else ()
    batch = broadcast_shapes("matmul", a_batch, b_batch)
    roles, a, b = _matmul_batch_roles(batch, a, a_batch, b, b_batch)
    # One dot_general, no broadcast operand (x @ w with x of shape (B, T, D) must not copy w B times): a batch
    # dimension both operands have is one of its batch dimensions; one only one operand has (the other's is 1 or
    # missing, squeezed out) stays a free dimension of that operand. 1-D operands are contracted as they are.
    ka = [k for k, r in enumerate(roles) if r in ("both", "a")]
    kb = [k for k, r in enumerate(roles) if r in ("both", "b")]
    shared = [k for k, r in enumerate(roles) if r == "both"]
    dims = (((len(ka) + (0 if a_vec else 1),), (len(kb),)), (tuple(ka.index(k) for k in shared),
                                                            tuple(kb.index(k) for k in shared)))
    out = lax.dot_general(a, b, dims, precision=precision, preferred_element_type=_preferred(a, preferred_element_type))
    # dot_general's result: shared batch dimensions, a's free ones (then M), b's free ones (then N)
    got = shared + [k for k in ka if roles[k] == "a"] + ([] if a_vec else ["m"]) + \
        [k for k in kb if roles[k] == "b"] + ([] if b_vec else ["n"])
    want = [k for k, r in enumerate(roles) if r != "one"] + ([] if a_vec else ["m"]) + ([] if b_vec else ["n"])
    if got != want:
        out = lax.transpose(out, tuple(got.index(d) for d in want))
    shape = tuple(batch) + (() if a_vec else (sa[-2],)) + (() if b_vec else (sb[-1],))
    return out if abstractify(out).shape == shape else lax.reshape(out, shape)


def _matmul_batch_roles(batch, a, a_batch, b, b_batch):
    """Per dimension of matmul's broadcast ``batch`` shape, which operands have it ("both", "a", "b", or "one":
    of size 1 in the result); ``a`` and ``b`` with their size-1 dimensions that another operand broadcasts, or
    that are 1 in the result, squeezed out."""
    nb = len(batch)
    a_at = {k: k - (nb - len(a_batch)) for k in range(nb - len(a_batch), nb)}  # batch position -> a's dimension
    b_at = {k: k - (nb - len(b_batch)) for k in range(nb - len(b_batch), nb)}
    roles, drop_a, drop_b = [], [], []
    for k, n in enumerate(batch):
        na = a_batch[a_at[k]] if k in a_at else 1
        nb_ = b_batch[b_at[k]] if k in b_at else 1
        role = "one" if n == 1 else "both" if na == nb_ else "a" if na == n else "b"
        roles.append(role)
        if role in ("one", "b") and k in a_at:
            drop_a.append(a_at[k])
        if role in ("one", "a") and k in b_at:
            drop_b.append(b_at[k])
    return roles, _squeeze_dims(a, drop_a), _squeeze_dims(b, drop_b)


def _squeeze_dims(x, dims):
    if not dims:
        return x
    shape = abstractify(x).shape
    return lax.reshape(x, tuple(d for i, d in enumerate(shape) if i not in dims))


@takes_out_sharding
@eager_jit("precision", "preferred_element_type")
def dot(a, b, /, *, precision=None, preferred_element_type=None):
    """NumPy's dot: scalars multiply; otherwise contract a's last axis with b's second-to-last
    (its only axis when 1-D)."""
    canonicalize_precision("numpy.dot", precision)
    a, b = _operands("dot", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        return _scalar_product("dot", a, b)
    cb = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[cb]:
        raise _shape_error("dot", a, b, f"{sa[-1]} (dim {len(sa) - 1}) != {sb[cb]} (dim {cb})")
    return lax.dot_general(a, b, (((len(sa) - 1,), (cb,)), ((), ())),
                           precision=precision, preferred_element_type=_preferred(a, preferred_element_type))


@eager_jit("precision", "preferred_element_type")
def vdot(a, b, /, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays."""
    canonicalize_precision("numpy.vdot", precision)
    a, b = _operands("vdot", a, b)
    a = _conj_if_complex(a)  # vdot conjugates its first argument
    sa, sb = abstractify(a).shape, abstractify(b).shape
    na, nb = int(np.prod(sa, dtype=np.int64)), int(np.prod(sb, dtype=np.int64))
    if na != nb:
        raise ShapeError(f"kiln.numpy.vdot: the arrays must have the same number of elements, got shapes {sa} "
                         f"and {sb}")
    return lax.dot_general(lax.reshape(a, (na,)), lax.reshape(b, (nb,)), (((0,), (0,)), ((), ())),
                           precision=precision, preferred_element_type=_preferred(a, preferred_element_type))


@eager_jit("axis", "precision", "preferred_element_type")
def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Dot product of vectors along ``axis``, broadcasting the other dimensions."""
    canonicalize_precision("numpy.vecdot", precision)
    a, b = _operands("vecdot", x1, x2)
    a = _conj_if_complex(a)  # as the array API standard asks: sum(conj(x1) * x2)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        raise ValueError(f"kiln.numpy.vecdot: operands must be at least 1-D, got shapes {sa} and {sb}")
    ax_a = canonical_axis("vecdot", axis, len(sa))
    ax_b = canonical_axis("vecdot", axis, len(sb))
    if sa[ax_a] != sb[ax_b]:
        raise _shape_error("vecdot", a, b, f"axis {axis} has sizes {sa[ax_a]} and {sb[ax_b]}")
    from .shape import moveaxis
    a, b = moveaxis(a, ax_a, -1), moveaxis(b, ax_b, -1)
    batch = broadcast_shapes("vecdot", abstractify(a).shape[:-1], abstractify(b).shape[:-1])
    n = sa[ax_a]
    a, b = broadcast_to_shape(a, batch + (n,)), broadcast_to_shape(b, batch + (n,))
    nb = len(batch)
    return lax.dot_general(a, b, (((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                           precision=precision, preferred_element_type=_preferred(a, preferred_element_type))


@eager_jit("precision", "preferred_element_type")
def inner(a, b, /, *, precision=None, preferred_element_type=None):
    """Contract the last axes of ``a`` and ``b`` (a product when either is 0-d)."""
    canonicalize_precision("numpy.inner", precision)
    a, b = _operands("inner", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        return _scalar_product("inner", a, b)
    if sa[-1] != sb[-1]:
        raise _shape_error("inner", a, b, f"last dimensions {sa[-1]} != {sb[-1]}")
    return lax.dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())),
                           precision=precision, preferred_element_type=_preferred(a, preferred_element_type))


@eager_jit()
def outer(a, b, out=None):
    """Outer product of the flattened arrays."""
    if out is not None:
        raise TypeError("kiln.numpy.outer: out= is not supported (kiln arrays are immutable)")
    a, b = _operands("outer", a, b)
    na, nb = abstractify(a).size, abstractify(b).size
    a = lax.broadcast_in_dim(lax.reshape(a, (na,)), (na, nb), (0,))
    b = lax.broadcast_in_dim(lax.reshape(b, (nb,)), (na, nb), (1,))
    return _mul(a, b)


@takes_out_sharding
def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract ``axes`` of ``a`` with ``axes`` of ``b``: an int n (a's last n with b's first n) or a
    pair of axis sequences. The result has a's free axes, then b's."""
    if type(axes) is list or type(axes) is tuple:  # (lists as tuples: a static option the compiled call hashes)
        axes = tuple(tuple(ax) if type(ax) is list else ax for ax in axes)
    if precision is None and preferred_element_type is None:
        return _tensordot(a, b, axes)
    return _tensordot(a, b, axes, precision=precision, preferred_element_type=preferred_element_type)


@eager_jit("axes", "precision", "preferred_element_type", where="kiln.numpy.tensordot")
def _tensordot(a, b, axes, *, precision=None, preferred_element_type=None):
    canonicalize_precision("numpy.tensordot", precision)
    a, b = _operands("tensordot", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    na, nb = len(sa), len(sb)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = int(axes)
        if axes < 0 or axes > builtins.min(na, nb):
            raise ValueError(f"kiln.numpy.tensordot: axes={axes} must be between 0 and the smaller rank "
                             f"({na} and {nb})")
        ax_a, ax_b = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise TypeError(f"kiln.numpy.tensordot: axes must be an int or a pair of axis sequences, got "
                            f"{axes!r}") from None  # a TypeError, as JAX's
        ax_a = canonical_axes("tensordot", ax_a, na, within="axes[0]")
        ax_b = canonical_axes("tensordot", ax_b, nb, within="axes[1]")
        if len(ax_a) != len(ax_b):
            raise ValueError(f"kiln.numpy.tensordot: axes {axes} must give the same number of axes for a and b")
    for i, j in zip(ax_a, ax_b):
        if sa[i] != sb[j]:
            raise _shape_error("tensordot", a, b, f"dim {i} of a ({sa[i]}) != dim {j} of b ({sb[j]})")
    return lax.dot_general(a, b, ((ax_a, ax_b), ((), ())),
                           precision=precision, preferred_element_type=_preferred(a, preferred_element_type))


@eager_jit("offset", "axis1", "axis2", "dtype", "out")
def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """Sum along the ``offset``-th diagonal over ``axis1`` and ``axis2`` (sum's dtype rules)."""
    if out is not None:
        raise TypeError("kiln.numpy.trace: out= is not supported (kiln arrays are immutable)")
    from .creation import _diagonal
    from .reductions import sum as _sum
    (a,) = _operands("trace", a)
    return _sum(_diagonal("trace", a, offset, axis1, axis2), axis=-1, dtype=dtype)


@eager_jit()
def kron(a, b):
    """Kronecker product: blocks of ``b`` scaled by the elements of ``a``."""
    a, b = _operands("kron", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    nd = builtins.max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    inter = tuple(v for pair in zip(sa, sb) for v in pair)
    a = lax.broadcast_in_dim(lax.reshape(a, sa), inter, tuple(range(0, 2 * nd, 2)))
    b = lax.broadcast_in_dim(lax.reshape(b, sb), inter, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(_mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


@eager_jit("axisa", "axisb", "axisc", "axis")
def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """Cross product of 3-vectors (or 2-vectors, whose missing z is 0) along ``axisa``/``axisb``;
    ``axis`` sets all three. Two 2-vectors give the scalar z component."""
    a, b = _operands("cross", a, b)
    if abstractify(a).dtype == np.bool_:
        raise TypeError("kiln.numpy.cross: not supported for boolean arrays")
    if axis is not None:
        axisa = axisb = axisc = axis
    from .shape import moveaxis
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        raise ValueError(f"kiln.numpy.cross: operands must be at least 1-D, got shapes {sa} and {sb}")
    a = moveaxis(a, canonical_axis("cross", axisa, len(sa)), -1)
    b = moveaxis(b, canonical_axis("cross", axisb, len(sb)), -1)
    na, nb = abstractify(a).shape[-1], abstractify(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"kiln.numpy.cross: incompatible dimensions for cross product (dimension must be 2 or 3), "
                         f"got {na} and {nb}")
    batch = broadcast_shapes("cross", abstractify(a).shape[:-1], abstractify(b).shape[:-1])

    def comp(x, i):
        s = abstractify(x).shape
        c = lax.slice(x, (0,) * (len(s) - 1) + (i,), s[:-1] + (i + 1,))
        return broadcast_to_shape(lax.reshape(c, s[:-1]), batch)

    a0, a1 = comp(a, 0), comp(a, 1)
    b0, b1 = comp(b, 0), comp(b, 1)
    z = lax.sub(lax.mul(a0, b1), lax.mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    dt = abstractify(a0)
    zero = lax.broadcast_in_dim(lax.literal(0, dt.dtype, dt.weak_type), batch, ())
    a2 = comp(a, 2) if na == 3 else zero
    b2 = comp(b, 2) if nb == 3 else zero
    x = lax.sub(lax.mul(a1, b2), lax.mul(a2, b1))
    y = lax.sub(lax.mul(a2, b0), lax.mul(a0, b2))
    nd = len(batch)
    out = lax.concatenate([lax.reshape(c, batch + (1,)) for c in (x, y, z)], nd)
    return moveaxis(out, -1, canonical_axis("cross", axisc, nd + 1))



# -- 1-D convolution and correlation ------------------------------------------------------------------

@eager_jit("mode", "precision", "preferred_element_type")
def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """NumPy's ``convolve`` of two 1-D arrays: ``(a * v)[n] = sum_m a[m] v[n - m]``. ``mode`` is
    ``'full'`` (length ``N + M - 1``), ``'same'`` (``max(N, M)``) or ``'valid'`` (``max(N, M) - min(N, M) + 1``).
    Integer and boolean inputs give the default float dtype (as JAX), unless ``preferred_element_type``."""
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


@eager_jit("mode", "precision", "preferred_element_type")
def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """NumPy's ``correlate`` of two 1-D arrays: ``c[k] = sum_n a[n + k] conj(v[n])`` (modes as
    :func:`convolve`'s, default ``'valid'``)."""
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


def _conv1d(fname: str, a, v, mode: str, precision, preferred_element_type):
    canonicalize_precision(f"numpy.{fname}", precision)
    check_arraylike(fname, a, v)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"kiln.numpy.{fname}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    sa, sv = abstractify(a).shape, abstractify(v).shape
    if len(sa) != 1 or len(sv) != 1:
        raise ValueError(f"kiln.numpy.{fname}: only 1-D inputs are supported, got shapes {sa} and {sv}")
    if not sa[0] or not sv[0]:
        raise ValueError(f"kiln.numpy.{fname}: inputs cannot be empty, got shapes {sa} and {sv}")
    dtype = dtypes.result_type(a, v)
    if preferred_element_type is None and not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()  # as NumPy's convolution of integers, in floating point
    x, y = (materialize(convert(t, dtype, False)) for t in (a, v))
    reverse_out = False
    if fname == "correlate":
        if dtypes.is_complex(dtype):
            y = lax.conj(y)
        if sa[0] < sv[0]:  # the longer one slides; the output comes out reversed
            x, y, reverse_out = y, x, True
    else:
        if sa[0] < sv[0]:
            x, y = y, x
        y = lax.rev(y, (0,))  # a convolution is a correlation with the kernel flipped
    m = abstractify(y).shape[0]
    padding = {"valid": [(0, 0)], "same": [(m // 2, m - m // 2 - 1)], "full": [(m - 1, m - 1)]}[mode]
    out = lax.conv_general_dilated(lax.reshape(x, (1, 1, abstractify(x).shape[0])), lax.reshape(y, (1, 1, m)),
                                   (1,), padding, precision=precision, preferred_element_type=preferred_element_type)
    out = lax.reshape(out, (abstractify(out).shape[2],))
    return lax.rev(out, (0,)) if reverse_out else out


@eager_jit()
def matvec(x1, x2, /):
    """Batched matrix-vector products: ``x1`` ``(..., m, n)`` times ``x2`` ``(..., n)`` gives ``(..., m)``
    (batch dimensions broadcast)."""
    check_arraylike("matvec", x1, x2)
    s1, s2 = abstractify(x1).shape, abstractify(x2).shape
    if len(s1) < 2 or len(s2) < 1 or s1[-1] != s2[-1]:
        raise _shape_error("matvec", x1, x2, "needs x1 (..., m, n) and x2 (..., n)")
    from .creation import asarray
    x2 = asarray(x2)
    return matmul(x1, x2[..., None])[..., 0]


@eager_jit()
def vecmat(x1, x2, /):
    """Batched vector-matrix products: the conjugate of ``x1`` ``(..., n)`` times ``x2`` ``(..., n, m)``
    gives ``(..., m)`` (batch dimensions broadcast)."""
    check_arraylike("vecmat", x1, x2)
    s1, s2 = abstractify(x1).shape, abstractify(x2).shape
    if len(s1) < 1 or len(s2) < 2 or s1[-1] != s2[-2]:
        raise _shape_error("vecmat", x1, x2, "needs x1 (..., n) and x2 (..., n, m)")
    from .creation import asarray
    from .ufuncs import conj
    x1, x2 = asarray(x1), asarray(x2)
    if dtypes.is_complex(abstractify(x1).dtype):
        x1 = conj(x1)
    return matmul(x1[..., None, :], x2)[..., 0, :]
