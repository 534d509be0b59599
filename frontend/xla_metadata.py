"""``kiln.experimental.xla_metadata``: JAX's ``set_xla_metadata``, XLA metadata on operations.

The metadata is a set of ``key="value"`` strings that XLA keeps on an operation as its *frontend attributes*
(``mhlo.frontend_attributes = {key = "value"}`` in the StableHLO, ``frontend_attributes={key="value"}`` in XLA's
HLO). It does not change what the program computes; XLA's passes and tools (debuggers, schedulers) read it.

- ``with set_xla_metadata(key=value, ...):`` (or ``@set_xla_metadata(...)`` on a function, jitted or not): every
  equation traced inside records the metadata in effect (on its ``source``, see ``core/source_info.py``), and
  lowering writes it on each operation the equation's rule emits. Contexts nest (an inner value for a key wins;
  ``key=None`` removes the key); the equations transformations derive from a tagged one (its JVP, its transpose,
  its batched form) keep its metadata, so the backward pass of ``grad`` is tagged too, as in JAX.
- ``set_xla_metadata(x, key=value, ...)`` tags the operations that produce the arrays of the pytree ``x`` (a
  ``xla_metadata_value`` equation, as JAX's): under ``vmap`` the batched operation, under ``jvp`` the tangent's
  too, but not the backward pass of ``grad`` (as JAX). An input of the program has no operation to tag.

Values are written as strings: ``str(value)``, a bool as ``"true"``/``"false"`` (as JAX); a value must be
hashable, as JAX requires, and a key not empty (which JAX takes, but XLA cannot read back). jit's caches are keyed
on the metadata in effect (``config.trace_key``), and while a context is open (in any thread) calls of jitted
functions take the Python path, whose key sees it. Operations run eagerly (outside ``jit``) are not tagged.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from .core import dtypes, source_info, tree_util
from .core.config import config
from .core.errors import KilnError, KilnTypeError
from .core.tracing import materialize
from .lax import api, misc

__all__ = ["XlaMetadataContextManager", "XlaMetadataKeyError", "set_xla_metadata"]

_WHERE = "kiln.experimental.xla_metadata.set_xla_metadata"


class XlaMetadataKeyError(KilnError, ValueError):
    """An empty metadata key (``set_xla_metadata(**{"": 1})``): XLA reads no attribute of that name back."""


def _string(key: str, value: Any) -> str | None:
    """How the program holds ``value``: ``str(value)``, ``"true"``/``"false"`` for a bool (as JAX); None stays."""
    if not key:
        # (JAX writes it; XLA's parser then rejects the module: kiln's HLO and compile paths read it as text)
        raise XlaMetadataKeyError(f"{_WHERE}: a metadata key must be a non-empty string, got {key!r}")
    try:
        hash(value)
    except TypeError:
        raise KilnTypeError(
            f"{_WHERE}: the value of {key!r} is a {type(value).__name__} ({value!r:.60}), which is not hashable "
            f"(unhashable type: '{type(value).__name__}'); metadata values must be hashable, as in JAX: a string, "
            "a number or a bool (written into the program as a string), or None to remove the key") from None
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


class XlaMetadataContextManager:
    """What ``set_xla_metadata(**metadata)`` returns: a context manager (reusable, and re-entrant) under which the
    metadata is in effect for the equations traced, and a decorator (:meth:`__call__`)."""

    __slots__ = ("updates", "_local")

    def __init__(self, updates: dict[str, str | None]):
        self.updates = updates  # key -> its string, or None to remove the key
        self._local = threading.local()  # the tokens of this thread's open uses, innermost last

    def __enter__(self) -> None:
        if not self.updates:
            return
        merged = source_info.merge_metadata(source_info.current_metadata(), self.updates)
        tokens = self._local.__dict__.setdefault("tokens", [])
        tokens.append(source_info.set_metadata(merged))
        config._hold_python_dispatch(1)

    def __exit__(self, *exc: Any) -> None:
        if not self.updates:
            return
        source_info.reset_metadata(self._local.tokens.pop())
        config._hold_python_dispatch(-1)

    def __call__(self, f: Callable) -> Callable:
        """``f`` run with the metadata in effect; so are its callable attributes (``.lower``, ``.trace`` of a
        jitted function), as JAX's decorator does."""
        return _Decorated(f, self)

    def __repr__(self) -> str:
        return f"set_xla_metadata({', '.join(f'{k}={v!r}' for k, v in self.updates.items())})"


class _Decorated:
    """A function decorated with ``@set_xla_metadata(...)``: calls of it, and of its callable attributes, run with
    the metadata in effect; other attributes are ``f``'s."""

    def __init__(self, f: Callable, context: XlaMetadataContextManager):
        self._f = f
        self._context = context
        functools.update_wrapper(self, f, updated=())  # (f's own attributes come through __getattr__, wrapped)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._context:
            return self._f(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._f, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def within(*args: Any, **kwargs: Any) -> Any:
            with self._context:
                return attr(*args, **kwargs)
        return within


def set_xla_metadata(x: Any = None, **metadata: Any) -> Any:
    """Attach XLA metadata (frontend attributes, ``key="value"``) to operations.

    ``set_xla_metadata(**metadata)`` returns a context manager: the operations traced inside its ``with`` block
    carry the metadata (merged with an enclosing one's; a key set to None is removed); used as a decorator
    (``@set_xla_metadata(...)``), on every call of the function. ``set_xla_metadata(x, **metadata)`` returns ``x``
    (a pytree of arrays) with the operations that produced its arrays tagged.

    Parameters
    ----------
    x : pytree of arrays, optional
        The values to tag; without it, a context manager.
    **metadata
        Keys and values (hashable; written as ``str(value)``, a bool as ``"true"``/``"false"``).

    Returns
    -------
    XlaMetadataContextManager or pytree
        The context manager, or ``x``.

    Examples
    --------
    >>> import kiln, kiln.numpy as knp
    >>> from kiln.experimental.xla_metadata import set_xla_metadata
    >>> def f(x):
    ...     return set_xla_metadata(knp.sin(x) * knp.cos(x), breakpoint=True)
    >>> 'frontend_attributes={breakpoint="true"}' in kiln.jit(f).lower(1.0).as_text("hlo")
    True
    """
    updates = {key: _string(key, value) for key, value in metadata.items()}
    if x is None:
        return XlaMetadataContextManager(updates)
    # (a None value tags nothing here: there is no enclosing metadata to remove a key from)
    kvs = tuple(sorted((k, v) for k, v in updates.items() if v is not None))
    if not kvs:
        return x

    def tag(leaf: Any) -> Any:
        if api._is_py_scalar(leaf):
            leaf = materialize(api.literal(leaf, dtypes.dtype_of_value(leaf)[0], dtypes.is_weakly_typed(leaf)))
        return misc.xla_metadata_value_p.bind(leaf, xla_metadata_kvs=kvs)
    return tree_util.tree_map(tag, x)
