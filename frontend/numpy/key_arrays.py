"""kiln.numpy's functions on typed PRNG key arrays (``kiln.random.key``), which jax.numpy takes wherever a
function only moves elements around: ``stack``, ``concatenate``, ``where``, ``take``, ``broadcast_to``,
``reshape``, ``expand_dims``, ``squeeze``, ``transpose``, ``flip``, ``asarray``, ``array``, ``copy``.

A key array is a wrapper over uint32 key data (kiln.random's ``KeyArray``). kiln.random builds on kiln.numpy,
so it registers the type and each function's rule here; the numpy function hands a call that holds a key
array to its rule (:func:`any_key`, :func:`rule`).
"""
from __future__ import annotations

from typing import Any, Callable

_key_type: type | None = None
_RULES: dict[str, Callable[..., Any]] = {}


def register(key_type: type, rules: dict[str, Callable[..., Any]]) -> None:
    """Called by kiln.random: its key array type and, by kiln.numpy function name, the rule for key arrays."""
    global _key_type
    _key_type = key_type
    _RULES.update(rules)


def any_key(*values: Any) -> bool:
    """Whether one of ``values`` is a key array (by exact type: ``asarray`` asks on every call, so this costs a
    type comparison per value)."""
    for v in values:
        if type(v) is _key_type:
            return True
    return False


def rule(name: str) -> Callable[..., Any]:
    """The rule of kiln.numpy's ``name`` for key arrays."""
    return _RULES[name]
