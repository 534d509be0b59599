"""``platform_dependent``: a different implementation per platform (as ``jax.lax.platform_dependent``).

Built as ``switch(platform_index(), branches, *args)``: ``platform_index`` is a constant chosen when the
program is lowered for a device (kiln lowers per backend), so XLA keeps only the chosen branch, and
derivatives and batching are those of ``switch``.
"""
from __future__ import annotations

from typing import Any, Callable

from ..lax.misc import platform_index_p
from .cond import switch

# Names a user may give, and the platforms (as kiln's devices name them) each stands for.
_ALIASES = {"gpu": ("cuda", "rocm"), "cpu": ("cpu",), "cuda": ("cuda",), "rocm": ("rocm",), "tpu": ("tpu",)}


def platform_dependent(*args: Any, default: Callable | None = None, **per_platform: Callable):
    """``per_platform[p](*args)`` for the platform ``p`` the program runs on (``cpu``, ``cuda``, ``rocm``,
    ``tpu``, or ``gpu`` for both GPU platforms), else ``default(*args)``. Every branch is traced, so all
    must return the same types; only the chosen one is kept when the program is compiled."""
    if not per_platform and default is None:
        raise ValueError("kiln.lax.platform_dependent: give at least one platform's function or a default")
    names, funs = [], []
    for name, fn in per_platform.items():
        if name not in _ALIASES:
            raise ValueError(f"kiln.lax.platform_dependent: unknown platform {name!r}; use one of "
                             f"{sorted(_ALIASES)}")
        if not callable(fn):
            raise TypeError(f"kiln.lax.platform_dependent: the function for {name!r} is not callable")
        names.append(_ALIASES[name])
        funs.append(fn)
    if default is not None:
        if not callable(default):
            raise TypeError("kiln.lax.platform_dependent: default is not callable")
        funs.append(default)
    index = platform_index_p.bind(platforms=tuple(names), has_default=default is not None)
    return switch(index, funs, *args)
