"""JAX's ``jax.experimental.hijax.VJPHiPrimitive`` (its "custom derivative rules with hijax primitives" page): a
class whose instance, built from the input and output types, is called like a function. ``expand`` computes it;
``vjp_fwd`` and ``vjp_bwd_retval`` (or ``vjp_bwd`` with accumulators) give its reverse-mode derivative, ``jvp`` (or
``lin``/``linearized``) its forward-mode one, ``batch`` its batching. kiln builds the call on its own custom
derivatives: a ``custom_jvp`` where ``jvp`` or ``lin`` is defined (reverse mode then transposes it), else a
``custom_vjp`` with symbolic zeros (``nzs_in``; ``Zero`` cotangents for outputs that do not reach the
differentiated result); a ``custom_vmap`` around it where ``batch`` is defined.

The pairs ``linearize_from_jvp``, ``vjp_from_jvp``, ``vjp_from_lin`` and the rule ``jvp_from_lin`` derive rules
from others, unpacked in a class body (``lin, linearized = linearize_from_jvp``)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import lax
from ..batching.custom_vmap import custom_vmap
from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.tracing import abstractify
from .api import linear_transpose, linearize
from .custom import custom_jvp, custom_vjp
from .symbolic_zeros import SymbolicZero, custom_vjp_primal_tree_values, from_rule
from .tangents import Zero, add_tangents, instantiate, tangent_aval, zeros_like_aval

_DERIVE = "derive its reverse-mode rules by setting `vjp_fwd, vjp_bwd_retval = vjp_from_jvp` (or `= vjp_from_lin`)"


def _overrides(prim: Any, name: str) -> bool:
    return getattr(type(prim), name) is not getattr(VJPHiPrimitive, name)


class VJPHiPrimitive:
    """Subclasses set ``self.in_avals`` (a tuple with one pytree of types per argument), ``self.out_aval`` (a pytree
    of types) and ``self.params`` (exposed as attributes) before calling ``super().__init__()``."""

    vjp_bwd_retval_logs: bool = False  # (JAX: vjp_bwd_retval returns (cotangents, logs); kiln drops the logs)

    def __init__(self):
        for attr in ("in_avals", "out_aval", "params"):
            if not hasattr(self, attr):
                raise AttributeError(f"subclass __init__ should set `self.{attr}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both `vjp_bwd` and `vjp_bwd_retval`")
        if type(self).jvp is jvp_from_lin and type(self).lin is _lin_from_jvp:
            raise TypeError(f"subclass {type(self)} can't set both `jvp = jvp_from_lin` and `lin, linearized = "
                            "linearize_from_jvp`, since each would be defined in terms of the other; write one of "
                            "the two by hand")
        self.in_tree = tree_util.tree_structure(tuple(self.in_avals))
        self.out_tree = tree_util.tree_structure(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_fwd`, or {_DERIVE}")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_bwd` or "
                                  f"`vjp_bwd_retval`, or {_DERIVE}")

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_bwd` or "
                                  f"`vjp_bwd_retval`, or {_DERIVE}")

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

    def lin(self, nzs_in, *primals):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement `lin` and "
                                  "`linearized`, or derive them from its `jvp` rule by setting `lin, linearized = "
                                  "linearize_from_jvp`")

    def linearized(self, residuals, *tangents):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement `lin` and "
                                  "`linearized`, or derive them from its `jvp` rule by setting `lin, linearized = "
                                  "linearize_from_jvp`")

    def batch(self, axis_data, args, dims):
        raise NotImplementedError(f"subclass {type(self)} does not define `batch`")  # (kiln calls it only if defined)

    def batch_dim_rule(self, axis_data, dims, /):
        raise NotImplementedError(f"subclass {type(self)} does not define `batch_dim_rule`")  # (kiln never calls it)

    def check(self, *arg_tys):
        return

    def __call__(self, *args):
        tree = tree_util.tree_structure(args)
        if tree != self.in_tree:
            raise TypeError(f"kiln.experimental.hijax: {self!r} was called with arguments of structure {tree}, but "
                            f"its in_avals have structure {self.in_tree}; pass one argument per entry of in_avals")
        if "_kiln_fun" not in self.__dict__:
            self._kiln_fun = _custom_function(self)
        return self._kiln_fun(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}[{self.params}]"

    def __hash__(self):
        return hash((self.__class__.__name__, tuple(self.params.items())))

    def __eq__(self, other):
        return type(self) is type(other) and self.params == other.params


# -- gradient accumulators (what vjp_bwd gets, one per argument leaf) ---------------------------------------------
class GradAccum:
    """Where ``vjp_bwd`` puts one argument leaf's cotangent: ``accum(ct)`` adds a contribution; ``aval`` is the
    cotangent's type."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def accum(self, ct: Any) -> None:
        raise NotImplementedError


class ValAccum(GradAccum):
    """The cotangent as a value, the sum of the contributions (what ``grad`` and ``vjp`` hand a rule)."""

    def __init__(self, aval: ShapedArray):
        super().__init__(aval)
        self.value = None

    def accum(self, ct: Any) -> None:
        if ct is not None and not isinstance(ct, (Zero, SymbolicZero)):
            self.value = add_tangents(self.value, ct)


class NullAccum(GradAccum):
    """A cotangent nobody wants (the argument is not differentiated): ``accum`` drops it."""

    def accum(self, ct: Any) -> None:
        return None


class RefAccum(GradAccum):
    """A gradient ``Ref`` (``ref``) that ``accum`` adds to in place. JAX hands one to a rule when the VJP function
    is applied with ``with_refs``; kiln does not (yet): there the rule gets a ValAccum and ``with_refs`` adds the
    whole cotangent to the ref."""

    def __init__(self, aval: ShapedArray, ref: Any):
        super().__init__(aval)
        self.ref = ref

    def accum(self, ct: Any) -> None:
        if ct is not None and not isinstance(ct, (Zero, SymbolicZero)):
            self.ref[...] += ct


# -- the call, as one of kiln's custom-derivative functions --------------------------------------------------------
class _Static:
    """Static data among a rule's residuals (a pytree node without children: no array is made of it)."""

    def __init__(self, value: Any):
        self.value = value


tree_util.register_pytree_node(_Static, lambda s: ((), s.value), lambda value, _: _Static(value))


def _forward_rule(prim: VJPHiPrimitive) -> Callable | None:
    """The forward-mode rule kiln differentiates ``prim`` with (reverse mode transposes it), or None."""
    if _overrides(prim, "jvp"):
        return prim.jvp
    if _overrides(prim, "lin"):
        return lambda primals, tangents: jvp_from_lin(prim, primals, tangents)
    return None


def _custom_function(prim: VJPHiPrimitive):
    """``prim.expand`` with ``prim``'s derivative and batching rules, as one of kiln's custom functions."""
    def fun(*args):
        return prim.expand(*args)
    fun.__name__ = fun.__qualname__ = type(prim).__name__

    forward = _forward_rule(prim)

    def jvp(primals, tangents):
        return forward(tuple(primals), tuple(tangents))

    def vjp_fwd(*args):
        return _fwd(prim, args)

    def vjp_bwd(saved, g):
        return _bwd(prim, saved, g)

    if forward is not None:
        f = custom_jvp(fun)
        f.defjvp(jvp)
    else:
        f = custom_vjp(fun)
        f.defvjp(vjp_fwd, vjp_bwd, symbolic_zeros=True)
        f.forward_mode_error = (f"for jvp support, subclass {type(prim)} must implement `jvp` (forward-mode "
                                f"differentiation of {prim!r}: kiln.jvp, kiln.jacfwd, kiln.linearize)")
    if not _overrides(prim, "batch"):
        return f  # vmap batches expand and the rules (JAX's default `batch`, from batch_dim_rule)
    batched = custom_vmap(f)
    batched.def_vmap(lambda size, in_batched, *args: _batch(prim, size, in_batched, args))
    return batched


class _AxisData(NamedTuple):
    """What ``batch`` learns of the vmap (JAX's ``axis_data``): its size (kiln's custom_vmap gives no name)."""
    size: int
    name: Any = None
    spmd_name: Any = None
    explicit_mesh_axis: Any = None


def _batch(prim: VJPHiPrimitive, size: int, in_batched: list, args: tuple):
    """custom_vmap's rule from ``prim.batch``: the batched arguments have their batch axis first."""
    dims = tuple(tree_util.tree_map(lambda b: 0 if b else None, b) for b in in_batched)
    out, out_dim = prim.batch(_AxisData(size), args, dims)
    flat, tree = tree_util.tree_flatten(out)
    dims_flat = tree_util.flatten_prefix(tree, out_dim) if not isinstance(out_dim, (int, type(None))) else (
        [out_dim] * len(flat))
    flat = [x if d in (None, 0) else _move_to_front(x, d) for x, d in zip(flat, dims_flat)]
    return tree_util.tree_unflatten(tree, flat), tree_util.tree_unflatten(tree, [d is not None for d in dims_flat])


def _move_to_front(x: Any, d: int) -> Any:
    ndim = len(abstractify(x).shape)
    d = d % ndim
    return lax.transpose(x, (d, *[i for i in range(ndim) if i != d]))


def _fwd(prim: VJPHiPrimitive, args: tuple):
    """custom_vjp's fwd: ``prim.vjp_fwd`` with the perturbed flags, its residuals kept with what ``_bwd`` needs."""
    nzs_in = tree_util.tree_map(lambda p: p.perturbed, args)
    res = prim.vjp_fwd(nzs_in, *custom_vjp_primal_tree_values(args))
    if not (isinstance(res, (tuple, list)) and 2 <= len(res) <= 4):
        raise TypeError(f"kiln.experimental.hijax: {type(prim).__name__}.vjp_fwd must return (output, residuals), "
                        f"optionally followed by nzs_out and structured residuals; got {type(res).__name__}"
                        f"{f' of {len(res)}' if isinstance(res, (tuple, list)) else ''}")
    out, residuals = res[:2]
    nzs_out = res[2] if len(res) > 2 else True
    sres = res[3] if len(res) > 3 else None
    nzs_out_flat = tree_util.tree_leaves(tree_util.tree_map(lambda nz, o: tree_util.tree_map(lambda _: bool(nz), o),
                                                            nzs_out, out, is_leaf=lambda x: x is None))
    static = _Static((tuple(tree_util.tree_leaves(nzs_in)), tuple(nzs_out_flat), len(res) == 4))
    return out, (residuals, sres, static)


def _bwd(prim: VJPHiPrimitive, saved: tuple, g: Any) -> tuple:
    """custom_vjp's bwd: ``prim.vjp_bwd`` with accumulators, or ``prim.vjp_bwd_retval``."""
    residuals, sres, static = saved
    nzs_in, nzs_out, has_sres = static.value
    g_flat = [Zero(tangent_aval(a)) if not nz else from_rule(c) for c, nz, a in
              zip(tree_util.tree_leaves(g, is_leaf=lambda x: type(x) is SymbolicZero), nzs_out,
                  tree_util.tree_leaves(prim.out_aval))]
    g = tree_util.tree_unflatten(prim.out_tree, g_flat)
    if has_sres or _overrides(prim, "vjp_bwd"):
        if has_sres and not _overrides(prim, "vjp_bwd"):
            raise TypeError(f"kiln.experimental.hijax: {type(prim).__name__}.vjp_fwd returned structured residuals "
                            "(a fourth value), which only a `vjp_bwd(res, sres, g, *arg_accums)` rule receives; "
                            "override vjp_bwd instead of vjp_bwd_retval")
        avals = tree_util.tree_leaves(tuple(prim.in_avals))
        accums = [ValAccum(tangent_aval(a)) if nz else NullAccum(tangent_aval(a)) for a, nz in zip(avals, nzs_in)]
        tree = tree_util.tree_unflatten(prim.in_tree, accums)
        logs = prim.vjp_bwd(residuals, sres, g, *tree) if has_sres else prim.vjp_bwd(residuals, g, *tree)
        if logs is not None and type(logs) is not dict:
            raise TypeError(f"{type(prim).__name__}.vjp_bwd should return None or a dict of backward-pass log "
                            f"entries, got {type(logs).__name__}")
        cts = tree_util.tree_unflatten(prim.in_tree, [getattr(a, "value", None) for a in accums])
    else:
        cts = prim.vjp_bwd_retval(residuals, g)
        if prim.vjp_bwd_retval_logs:
            cts, _ = cts  # (the logs: kiln has no with_logs to hand them to)
        cts = tuple(cts)
    return tuple(tree_util.tree_map(lambda c: None if isinstance(c, Zero) else c, cts,
                                    is_leaf=lambda x: x is None or isinstance(x, Zero)))


# -- deriving rules from other rules ---------------------------------------------------------------------------------
def _tangent_zeros(prim: VJPHiPrimitive) -> list:
    """Zeros of each argument's tangent type: the shapes ``linear_transpose`` is given."""
    return [tree_util.tree_map(lambda a: zeros_like_aval(tangent_aval(a)), a) for a in prim.in_avals]


def _instantiated(tree: Any) -> Any:
    return tree_util.tree_map(lambda t: instantiate(from_rule(t)), tree,
                              is_leaf=lambda x: isinstance(x, (Zero, SymbolicZero)))


def _lin_from_jvp(self, nzs_in, *primals):
    """``linearize_from_jvp``'s ``lin``: the call linearized (through ``jvp``, the rule kiln differentiates it
    with); the residuals are the linear map (a pytree of the values it saved)."""
    return linearize(lambda *p: self(*p), *primals)


def _linearized_from_jvp(self, residuals, *tangents):
    """``linearize_from_jvp``'s ``linearized``: the saved linear map applied to the tangents."""
    return residuals(*_instantiated(tangents))


def jvp_from_lin(self, primals, tangents):
    """A ``jvp`` rule from ``lin`` and ``linearized``: the linearization applied to the tangents."""
    nzs_in = tree_util.tree_map(lambda t: not isinstance(t, (Zero, SymbolicZero)), tuple(tangents),
                                is_leaf=lambda x: isinstance(x, (Zero, SymbolicZero)))
    out, residuals, *rest = self.lin(nzs_in, *primals)
    tangents = _instantiated(tuple(tangents))
    if len(rest) >= 2:  # (structured residuals in lin's fourth slot)
        return out, self.linearized(residuals, rest[1], *tangents)
    return out, self.linearized(residuals, *tangents)


def _vjp_fwd_from_jvp(self, nzs_in, *primals):
    """``vjp_from_jvp``'s ``vjp_fwd``: the primals are the residuals."""
    return self(*primals), (primals, _Static(tuple(tree_util.tree_leaves(nzs_in))))


def _transpose_jvp(self, res, out_ct):
    """``vjp_from_jvp``'s ``vjp_bwd_retval``: the ``jvp`` rule at the saved primals, transposed (None for the
    inputs not differentiated)."""
    primals, nzs = res
    cts = linear_transpose(lambda *t: _instantiated(self.jvp(tuple(primals), t)[1]),
                           *_tangent_zeros(self))(_instantiated(out_ct))
    nzs = tree_util.tree_unflatten(self.in_tree, list(nzs.value))
    return tree_util.tree_map(lambda c, nz: c if nz else None, tuple(cts), nzs)


def _vjp_fwd_from_lin(self, nzs_in, *primals):
    """``vjp_from_lin``'s ``vjp_fwd``: ``lin``."""
    return self.lin(nzs_in, *primals)


def _transpose_linearized(self, residuals, out_ct):
    """``vjp_from_lin``'s ``vjp_bwd_retval``: ``linearized`` at the saved residuals, transposed."""
    return linear_transpose(lambda *t: _instantiated(self.linearized(residuals, *t)),
                            *_tangent_zeros(self))(_instantiated(out_ct))


class _RulePair(tuple):
    """Two rules that a class body unpacks (``lin, linearized = linearize_from_jvp``); called as one rule, it says
    so."""

    def __new__(cls, name: str, names: str, first: Callable, second: Callable):
        pair = super().__new__(cls, (first, second))
        pair.name, pair.names = name, names
        return pair

    def __call__(self, *args, **kwargs):
        raise TypeError(f"`{self.name}` is a pair of rules, not a single rule; unpack it in the class body: "
                        f"`{self.names} = {self.name}`")


linearize_from_jvp = _RulePair("linearize_from_jvp", "lin, linearized", _lin_from_jvp, _linearized_from_jvp)
vjp_from_jvp = _RulePair("vjp_from_jvp", "vjp_fwd, vjp_bwd_retval", _vjp_fwd_from_jvp, _transpose_jvp)
vjp_from_lin = _RulePair("vjp_from_lin", "vjp_fwd, vjp_bwd_retval", _vjp_fwd_from_lin, _transpose_linearized)


__all__ = ["GradAccum", "NullAccum", "RefAccum", "ValAccum", "VJPHiPrimitive", "jvp_from_lin", "linearize_from_jvp",
           "vjp_from_jvp", "vjp_from_lin"]
