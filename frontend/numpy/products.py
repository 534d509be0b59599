"""Products: matmul, dot, vdot, inner, outer, tensordot (via dot_general)."""
from __future__ import annotations

from .. import lax
from ..tracing import abstractify
from ._util import broadcast_shapes, broadcast_to_shape, promote_dtypes


def _shape_error(fname: str, a, b, detail: str) -> ValueError:
    return ValueError(f"kiln.numpy.{fname}: shapes {abstractify(a).shape} and {abstractify(b).shape} are not "
                      f"aligned: {detail}")


def matmul(a, b, /):
    """Matrix product with NumPy's rules: 1-D operands are promoted, leading dims broadcast."""
    a, b = promote_dtypes("matmul", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        raise ValueError("kiln.numpy.matmul: operands must not be 0-d (use * for scalars)")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        a, sa = lax.reshape(a, (1,) + sa), (1,) + sa
    if b_vec:
        b, sb = lax.reshape(b, sb + (1,)), sb + (1,)
    if sa[-1] != sb[-2]:
        raise _shape_error("matmul", a, b, f"{sa[-1]} (dim {len(sa) - 1}) != {sb[-2]} (dim {len(sb) - 2})")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    nb = len(batch)
    if nb:
        a = broadcast_to_shape(a, batch + sa[-2:])
        b = broadcast_to_shape(b, batch + sb[-2:])
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    out = lax.dot_general(a, b, dims)
    shape = abstractify(out).shape
    if a_vec:
        shape = shape[:-2] + shape[-1:]
    if b_vec:
        shape = shape[:-1]
    return lax.reshape(out, shape)


def dot(a, b, /):
    """NumPy's dot: scalars multiply; otherwise contract a's last axis with b's second-to-last."""
    a, b = promote_dtypes("dot", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        from .ufuncs import multiply
        return multiply(a, b)
    cb = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[cb]:
        raise _shape_error("dot", a, b, f"{sa[-1]} (dim {len(sa) - 1}) != {sb[cb]} (dim {cb})")
    return lax.dot_general(a, b, (((len(sa) - 1,), (cb,)), ((), ())))


def vdot(a, b, /):
    """Dot product of the flattened arrays."""
    from .shape import ravel
    a, b = promote_dtypes("vdot", a, b)
    return dot(ravel(a), ravel(b))


def inner(a, b, /):
    """Contract the last axes of ``a`` and ``b``."""
    a, b = promote_dtypes("inner", a, b)
    sa, sb = abstractify(a).shape, abstractify(b).shape
    if not sa or not sb:
        from .ufuncs import multiply
        return multiply(a, b)
    if sa[-1] != sb[-1]:
        raise _shape_error("inner", a, b, f"last dimensions {sa[-1]} != {sb[-1]}")
    return lax.dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())))


def outer(a, b, /):
    """Outer product of the flattened arrays."""
    from .shape import ravel
    a, b = promote_dtypes("outer", a, b)
    a, b = ravel(a), ravel(b)
    return lax.dot_general(lax.reshape(a, abstractify(a).shape + (1,)), lax.reshape(b, (1,) + abstractify(b).shape),
                           (((1,), (0,)), ((), ())))


def tensordot(a, b, axes=2):
    """Contract ``axes`` (an int: the last/first n; or a pair of axis lists)."""
    a, b = promote_dtypes("tensordot", a, b)
    na, nb = abstractify(a).ndim, abstractify(b).ndim
    if isinstance(axes, int):
        if axes < 0 or axes > min(na, nb):
            raise ValueError(f"kiln.numpy.tensordot: axes={axes} is out of range for ranks {na} and {nb}")
        ax_a, ax_b = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        ax_a = tuple(x % na for x in ax_a)
        ax_b = tuple(x % nb for x in ax_b)
    for i, j in zip(ax_a, ax_b):
        if abstractify(a).shape[i] != abstractify(b).shape[j]:
            raise _shape_error("tensordot", a, b, f"dim {i} of a ({abstractify(a).shape[i]}) != dim {j} of b "
                               f"({abstractify(b).shape[j]})")
    return lax.dot_general(a, b, ((ax_a, ax_b), ((), ())))
