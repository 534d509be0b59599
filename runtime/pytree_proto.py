"""Tree structures as jaxlib's PyTreeDef protocol buffers (JAX's ``PyTreeDef.serialize_using_proto``).

jaxlib's C++ pytree code writes and reads the proto; kiln hands it a *skeleton*: the tree with a placeholder for
each leaf, made of Python's containers (tuple, list, dict with string keys, None) only, as the proto holds no
other node type. The bytes are JAX's for the same structure, so either library reads what the other wrote.

This module imports only jaxlib and the standard library.
"""
from __future__ import annotations

from typing import Any

from ._jaxlib import JaxRuntimeError, _jax

_registry: list = []  # [jaxlib's registry of the built-in containers], made on first use


def _containers() -> Any:
    if not _registry:
        _registry.append(_jax.pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=False,
                                                    enable_list=True, enable_dict=True))
    return _registry[0]


class Leaf:
    """The placeholder of a leaf in a skeleton (a leaf to jaxlib and to kiln's pytrees alike)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def serialize(skeleton: Any) -> bytes:
    """The proto of ``skeleton``'s structure (its :class:`Leaf` placeholders are the leaves)."""
    _, treedef = _containers().flatten(skeleton)
    return treedef.serialize_using_proto()


def deserialize(data: bytes) -> Any:
    """The skeleton of the structure ``data`` holds (a :class:`Leaf` at each leaf). ValueError when ``data`` is no
    PyTreeDef proto."""
    try:
        treedef = _jax.pytree.PyTreeDef.deserialize_using_proto(_containers(), bytes(data))
    except (JaxRuntimeError, ValueError, RuntimeError) as e:
        raise ValueError(f"the data is not a serialized tree structure (PyTreeDef proto): {e}") from None
    return treedef.unflatten([Leaf() for _ in range(treedef.num_leaves)])


__all__ = ["Leaf", "deserialize", "serialize"]
