"""``normalize``: divides the updates by their global l2 norm (SAM's adversarial step uses it)."""
from __future__ import annotations

from ...core.tree_util import tree_map
from ..transforms import EmptyState, GradientTransformation
from ..tree_utils import tree_norm

__all__ = ["NormalizeState", "normalize"]

NormalizeState = EmptyState  # (optax's name for it)


def normalize():
    """Scales the updates to unit global l2 norm (NaN updates where they are all zero, as optax's)."""
    def update(updates, state, params=None):
        norm = tree_norm(updates)
        return tree_map(lambda g: g / norm, updates), state
    return GradientTransformation(lambda params: NormalizeState(), update)
