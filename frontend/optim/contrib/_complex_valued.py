"""``split_real_and_imaginary``: runs a transformation on the real and imaginary parts of complex leaves as
two real arrays (so that, e.g., Adam's second moment is kept per part rather than of ``|g|**2``)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformation, _check_transform

__all__ = ["SplitRealAndImaginaryState", "split_real_and_imaginary"]


class SplitRealAndImaginaryArrays(NamedTuple):
    """A complex leaf as its two real parts (optax's node, so the inner state has optax's structure)."""
    real: Any
    imaginary: Any


class SplitRealAndImaginaryState(NamedTuple):
    inner_state: Any


def _split(x):
    return SplitRealAndImaginaryArrays(jnp.real(x), jnp.imag(x)) if jnp.iscomplexobj(x) else x


def _join(x):
    if isinstance(x, SplitRealAndImaginaryArrays):
        return x.real + x.imaginary * 1j
    return x


def split_real_and_imaginary(inner: GradientTransformation) -> GradientTransformation:
    """Applies ``inner`` to complex leaves split into ``(real, imaginary)`` pairs, and joins its updates back
    into complex leaves; real leaves pass to ``inner`` as they are."""
    _check_transform(inner, "split_real_and_imaginary")

    def init(params):
        return SplitRealAndImaginaryState(inner.init(tree_map(_split, params)))

    def update(updates, state, params=None):
        split_params = None if params is None else tree_map(_split, params)
        new_updates, inner_state = inner.update(tree_map(_split, updates), state.inner_state, split_params)
        new_updates = tree_map(_join, new_updates, is_leaf=lambda x: isinstance(x, SplitRealAndImaginaryArrays))
        return new_updates, SplitRealAndImaginaryState(inner_state)
    return GradientTransformation(init, update)
