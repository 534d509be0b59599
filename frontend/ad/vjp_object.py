"""The pullback ``kiln.vjp`` returns: a callable pytree of the residuals, as JAX's ``VJP`` object.

Its leaves are what the backward pass reads, in three groups: ``args_res``, the arguments it reads as they were
given (one entry per positional argument: the argument's value, or tuples of entries nested as its containers
are, ``NotNeeded()`` for a leaf it does not read and ``NotSaveable()`` for one that ``vjp``'s
``saveable_args`` left out, which the caller restores before calling), ``opaque_residuals``, the values the
forward pass computed for it, and ``structured_residuals`` (JAX's channel for rules that save named residuals;
no kiln rule does, so it stays empty). Being a pytree, it passes into and out of jitted functions (a forward
and a backward pass compiled apart), and its saved state can be read, and replaced before it is called.
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


class NotSaveable(_Marker):
    """The entry of ``VJP.args_res`` for an argument value that ``kiln.vjp(..., saveable_args=...)`` kept out of
    the saved state (an empty pytree): restore the value there before calling the VJP function."""


class GradValue(_Marker):
    """``VJP.with_refs`` entry: return this argument's cotangent as a value (what ``f_vjp(ct)`` does)."""


class DontWant(_Marker):
    """``VJP.with_refs`` entry: this argument's cotangent is not wanted (not computed; ``DidntWant()`` is returned)."""


class GradRef(_Marker):
    """What ``VJP.with_refs`` returns for an argument whose cotangent was added into a Ref (an empty pytree)."""


class DidntWant(_Marker):
    """What ``VJP.with_refs`` returns for an argument given ``DontWant()`` (an empty pytree)."""


for _cls in (NotNeeded, NotSaveable, GradRef, DidntWant):
    tree_util.register_pytree_node(_cls, lambda _: ((), None), lambda _, __, c=_cls: c())


def _is_entry(x: Any) -> bool:
    return isinstance(x, (NotNeeded, NotSaveable))


def saveable_flags(saveable_args: Any, in_tree: Any) -> list[bool]:
    """One flag per leaf of the primals (structure ``in_tree``) from ``vjp``'s ``saveable_args``: a bool, or a
    tree of bools that is a prefix of the primals, where a tuple may stand for any container of as many children
    (JAX's "tuple-tree")."""
    flags: list[bool] = []
    _expand_flags(saveable_args, in_tree, "saveable_args", flags)
    return flags


def _expand_flags(prefix: Any, td: Any, where: str, out: list) -> None:
    if isinstance(prefix, bool):
        out.extend([prefix] * td.num_leaves)
        return
    if not isinstance(prefix, tuple) and tree_util.treedef_is_leaf(tree_util.tree_structure(prefix)):
        raise ValueError(f"kiln.vjp: saveable_args must be a bool or a tree of bools (tuples, or containers "
                         f"shaped like the primals), but {where} is {prefix!r:.60} of type {type(prefix).__name__}")
    # the prefix's children, one level down (its root is the only node not taken as a leaf)
    entries, top = tree_util.tree_flatten_with_path(prefix, is_leaf=lambda x: x is not prefix)
    fits = isinstance(prefix, tuple) or top.node_data() == td.node_data()
    if tree_util.treedef_is_leaf(td) or not fits or len(entries) != len(td.children()):
        raise ValueError(f"kiln.vjp: saveable_args must be a prefix of the primals' structure, but {where} is "
                         f"{prefix!r:.60} where the primals have {_describe(td)} (a tuple matches any container of "
                         "as many children; a single bool covers a whole subtree)")
    for (path, p), sub in zip(entries, td.children()):
        _expand_flags(p, sub, where + tree_util.keystr(path), out)


def _describe(td: Any) -> str:
    if tree_util.treedef_is_leaf(td):
        return "a leaf" if td.num_leaves else "an empty node"
    kind, data = td.node_data()
    n = len(td.children())
    keys = f" with keys {data}" if kind is dict else ""
    return f"a {kind.__name__} of {n} {'child' if n == 1 else 'children'}{keys}"


class VJP:
    """``f_vjp`` of ``out, f_vjp = kiln.vjp(f, *primals)``: ``f_vjp(ct)`` gives the cotangents of the primals.

    ``args_res``: a list, one entry per primal (see the module's docstring); ``opaque_residuals``: a list of
    arrays; ``structured_residuals``: an empty list. ``in_tree``/``out_tree``: the structures of the primals and
    of the output; ``jaxpr``: the linear program the backward pass transposes (kiln's IR)."""

    __slots__ = ("_apply", "_info", "args_res", "opaque_residuals", "structured_residuals")
    _STATE = ("args_res", "opaque_residuals", "structured_residuals")

    def __init__(self, apply: Callable, info: Any, args_res: list, opaque_residuals: list,
                 structured_residuals: list) -> None:
        self._apply, self._info = apply, info
        self.args_res, self.opaque_residuals = args_res, opaque_residuals
        self.structured_residuals = structured_residuals

    @classmethod
    def from_residuals(cls, apply: Callable, info: Any, residuals: list, saveable: list[bool]) -> VJP:
        """The VJP of the residuals the forward pass returned, ``info.sources[k]`` saying which input residual
        ``k`` is (None: a computed one); ``saveable[i]`` False puts ``NotSaveable()`` in place of input ``i``."""
        entries: list[Any] = [NotNeeded() for _ in info.in_avals]
        for r, i in zip(residuals, info.sources):
            if i is not None:
                entries[i] = r if saveable[i] else NotSaveable()
        # one entry per positional argument: its value, or nested tuples that mirror its containers
        args_res = list(info.in_tree.walk(lambda xs, _: tuple(xs), None, entries))
        opaque = [r for r, i in zip(residuals, info.sources) if i is None]
        return cls(apply, info, args_res, opaque, [])

    def replace(self, **changes: Any) -> VJP:
        """A copy with some of the saved state replaced: ``args_res``, ``opaque_residuals``,
        ``structured_residuals`` (as JAX's ``dataclasses.replace``)."""
        if unknown := sorted(set(changes) - set(self._STATE)):
            raise TypeError(f"kiln.vjp: VJP.replace takes {', '.join(self._STATE)}, got {', '.join(unknown)}")
        state = {name: changes.get(name, getattr(self, name)) for name in self._STATE}
        return VJP(self._apply, self._info, **state)

    def _residuals(self) -> list:
        """The residuals in the backward pass's order, from ``args_res`` and ``opaque_residuals`` as they are now."""
        flat = [leaf for entry in self.args_res for leaf in tree_util.tree_leaves(entry, is_leaf=_is_entry)]
        if len(flat) != len(self._info.in_avals):
            raise ValueError(f"kiln.vjp: args_res holds {len(flat)} leaves, but the function was called with "
                             f"{len(self._info.in_avals)}: assign each argument's value (or its tuple of leaves) "
                             "to its entry")
        if tree_util.tree_leaves(self.structured_residuals):
            raise ValueError("kiln.vjp: structured_residuals holds values, but this VJP's backward pass reads none "
                             "(no kiln rule saves structured residuals): leave it empty")
        if missing := sorted({i for i in self._info.sources if i is not None and isinstance(flat[i], NotSaveable)}):
            raise self._not_restored(missing)
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

    def _not_restored(self, leaves: list[int]) -> ValueError:
        """The error for calling the VJP function while ``args_res`` still holds ``NotSaveable()`` at ``leaves``."""
        info = self._info
        try:
            dummy = tree_util.tree_unflatten(info.in_tree, list(range(len(info.in_avals))))
            paths = [f"args{tree_util.keystr(path)}" for path, _ in tree_util.tree_flatten_with_path(dummy)[0]]
        except Exception:  # noqa: BLE001 (a custom pytree node may refuse the dummy leaves)
            paths = [f"flat argument {i}" for i in range(len(info.in_avals))]
        names = ", ".join(paths[i] for i in leaves)
        return ValueError(f"kiln.vjp: the VJP function of {info.fun_name} was applied before restoring the argument "
                          f"values that saveable_args kept out of its saved state (NotSaveable() in args_res): "
                          f"{names}. Assign them first, e.g. f_vjp.args_res[0] = value, or "
                          "f_vjp = f_vjp.replace(args_res=[...])")

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
    VJP, lambda v: ((v.args_res, v.opaque_residuals, v.structured_residuals), (v._apply, v._info)),
    lambda aux, children: VJP(aux[0], aux[1], *map(list, children)))
