"""kiln.numpy's conditional helpers built on ``where``: ``select`` and ``piecewise``."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.tracing import abstractify

__all__ = ["piecewise", "select"]


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0):
    """The first choice whose condition holds, elementwise (NumPy's ``select``)."""
    from .ufuncs import where
    if len(condlist) != len(choicelist):
        raise ValueError(f"kiln.numpy.select: condlist has {len(condlist)} entries but choicelist has "
                         f"{len(choicelist)}; they must match")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return out


def piecewise(x, condlist: Sequence[Any], funclist: Sequence[Callable | Any], *args, **kw):
    """Evaluate each function on ``x`` and combine by the conditions (NumPy's ``piecewise``).

    As in JAX every function is evaluated on the whole array (no data-dependent shapes); one more
    function than conditions gives the value where no condition holds.
    """
    from .creation import zeros_like
    from .ufuncs import where
    funclist = list(funclist)
    if not isinstance(condlist, (list, tuple)):
        # An array: one condition where it broadcasts to x and one or two functions are given (NumPy's use);
        # otherwise, as in JAX, a stack of conditions along its first axis.
        shape, xshape = np.shape(condlist), np.shape(x)
        try:
            one = len(funclist) in (1, 2) and np.broadcast_shapes(shape, xshape) == xshape
        except ValueError:
            one = False
        condlist = [condlist] if one or not shape else [condlist[i] for i in range(shape[0])]
    if len(funclist) not in (len(condlist), len(condlist) + 1):
        raise ValueError(f"kiln.numpy.piecewise: with {len(condlist)} condition(s) funclist needs "
                         f"{len(condlist)} or {len(condlist) + 1} entries, got {len(funclist)}")

    def value(f):
        return f(x, *args, **kw) if callable(f) else f
    out = value(funclist[-1]) if len(funclist) == len(condlist) + 1 else zeros_like(x)
    for cond, f in zip(condlist, funclist):  # as NumPy: a later condition overrides an earlier one
        out = where(cond, value(f), out)
    dtype = abstractify(x).dtype
    from .creation import astype
    return astype(out, dtype)
