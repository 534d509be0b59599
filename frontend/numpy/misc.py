"""NumPy's constants, index expressions, print options and small predicates, as kiln.numpy has them.

As in JAX, several are NumPy's own objects: the constants (``pi``, ``inf``, ...), ``newaxis``,
``index_exp``/``s_`` (they build plain index tuples, which kiln arrays accept), ``iterable``, the print
options (kiln arrays print through NumPy, so NumPy's options govern them), ``array_repr``/``array_str``
and ``ComplexWarning``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import is_array

__all__ = [
    "ComplexWarning", "array_repr", "array_str", "e", "euler_gamma", "get_printoptions", "index_exp", "inf",
    "isscalar", "iterable", "nan", "newaxis", "pi", "printoptions", "s_", "set_printoptions",
]

e = np.e
pi = np.pi
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma
newaxis = None

index_exp = np.index_exp
s_ = np.s_
iterable = np.iterable

get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
array_repr = np.array_repr
array_str = np.array_str

ComplexWarning = np.exceptions.ComplexWarning


def isscalar(element: Any) -> bool:
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array (kiln, traced or NumPy).

    Unlike ``numpy.isscalar``, 0-d arrays count as scalars, as in JAX; lists, tuples, ``None`` and
    arrays with dimensions do not.
    """
    if np.isscalar(element):
        return True
    if isinstance(element, np.ndarray) or is_array(element):
        return element.ndim == 0
    return False
