"""The pullback ``kiln.vjp`` returns: a callable pytree of the residuals, as JAX's ``VJP`` object.

Its leaves are what the backward pass reads, in two groups: ``args_res``, the arguments it reads as they were
given (one entry per positional argument: the argument's value, a tuple of entries for an argument with
several leaves, and ``NotNeeded()`` for a leaf it does not read), and ``opaque_residuals``, the values the
forward pass computed for it. Being a pytree, it passes into and out of jitted functions (a forward and a
backward pass compiled apart), and its saved state can be read, and replaced before it is called.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core import tree_util


class _Marker:
    """A value-less marker, equal to any other of its class (JAX's frozen dataclasses without fields)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class NotNeeded(_Marker):
    """The entry of ``VJP.args_res`` for an argument the backward pass does not read (an empty pytree)."""


class GradValue(_Marker):
    """``VJP.with_refs`` entry: return this argument's cotangent as a value (what ``f_vjp(ct)`` does)."""


class DontWant(_Marker):
    """``VJP.with_refs`` entry: this argument's cotangent is not wanted (not computed; ``DidntWant()`` is returned)."""


class GradRef(_Marker):
    """What ``VJP.with_refs`` returns for an argument whose cotangent was added into a Ref (an empty pytree)."""


class DidntWant(_Marker):
    """What ``VJP.with_refs`` returns for an argument given ``DontWant()`` (an empty pytree)."""


for _cls in (NotNeeded, GradRef, DidntWant):
    tree_util.register_pytree_node(_cls, lambda _: ((), None), lambda _, __, c=_cls: c())


def _is_entry(x: Any) -> bool:
    return isinstance(x, NotNeeded)


class VJP:
    """``f_vjp`` of ``out, f_vjp = kiln.vjp(f, *primals)``: ``f_vjp(ct)`` gives the cotangents of the primals.

    ``args_res``: a list, one entry per primal (see the module's docstring); ``opaque_residuals``: a list of
    arrays. ``in_tree``/``out_tree``: the structures of the primals and of the output; ``jaxpr``: the linear
    program the backward pass transposes (kiln's IR)."""

    __slots__ = ("_apply", "_info", "args_res", "opaque_residuals")

    def __init__(self, apply: Callable, info: Any, args_res: list, opaque_residuals: list) -> None:
        self._apply, self._info = apply, info
        self.args_res, self.opaque_residuals = args_res, opaque_residuals

    @classmethod
    def from_residuals(cls, apply: Callable, info: Any, residuals: list) -> VJP:
        """The VJP of the residuals the forward pass returned, ``info.sources[k]`` saying which input residual
        ``k`` is (None: a computed one)."""
        entries: list[Any] = [NotNeeded() for _ in info.in_avals]
        for r, i in zip(residuals, info.sources):
            if i is not None:
                entries[i] = r
        args_res, start = [], 0
        for sub in info.in_tree.children():  # one per positional argument
            n = sub.num_leaves
            part = entries[start:start + n]
            args_res.append(part[0] if n == 1 and sub.node_data() is None else tuple(part))
            start += n
        opaque = [r for r, i in zip(residuals, info.sources) if i is None]
        return cls(apply, info, args_res, opaque)

    def _residuals(self) -> list:
        """The residuals in the backward pass's order, from ``args_res`` and ``opaque_residuals`` as they are now."""
        flat = [leaf for entry in self.args_res for leaf in tree_util.tree_leaves(entry, is_leaf=_is_entry)]
        if len(flat) != len(self._info.in_avals):
            raise ValueError(f"kiln.vjp: args_res holds {len(flat)} leaves, but the function was called with "
                             f"{len(self._info.in_avals)}: assign each argument's value (or its tuple of leaves) "
                             "to its entry")
        opaque = iter(self.opaque_residuals)
        out = []
        for i in self._info.sources:
            if i is None:
                out.append(next(opaque))
                continue
            if isinstance(flat[i], NotNeeded):
                raise ValueError(f"kiln.vjp: the backward pass reads leaf {i} of the arguments, but args_res holds "
                                 "NotNeeded() there: restore the argument's value into args_res before calling")
            out.append(flat[i])
        return out

    def __call__(self, ct: Any) -> Any:
        return self._apply(self._info, self._residuals(), ct)

    def with_refs(self, *maybe_ct_refs: Any) -> Callable:
        """A pullback that delivers each argument's cotangent as its entry says: ``GradValue()`` returns it,
        ``DontWant()`` skips it (``DidntWant()`` returned), a Ref adds it into the Ref (``GradRef()`` returned).
        The entries have the structure of the primals (one per positional argument, or a pytree of them)."""
        residuals = self._residuals()
        return lambda ct: self._apply(self._info, residuals, ct, maybe_ct_refs)

    @property
    def in_tree(self) -> Any:
        return self._info.in_tree

    @property
    def out_tree(self) -> Any:
        return self._info.main_tree

    @property
    def jaxpr(self) -> Any:
        return self._info.lin.ir

    def __repr__(self) -> str:
        return f"VJP(args_res={self.args_res!r}, opaque_residuals=<{len(self.opaque_residuals)} arrays>)"


tree_util.register_pytree_node(
    VJP, lambda v: ((v.args_res, v.opaque_residuals), (v._apply, v._info)),
    lambda aux, children: VJP(aux[0], aux[1], list(children[0]), list(children[1])))
