"""JAX's ``jax.experimental.hijax.VJPHiPrimitive`` (its "custom derivatives with HiJAX" page): a class whose
instance, built from the input and output types, is called like a function. ``expand`` computes it; ``vjp_fwd`` and
``vjp_bwd_retval`` (or ``vjp_bwd`` with accumulators) give its reverse-mode derivative, ``jvp`` its forward-mode
one. kiln builds the call on its own custom derivatives: a ``custom_jvp`` where ``jvp`` is defined (reverse mode
then transposes it), else a ``custom_vjp`` with symbolic zeros (``nzs_in``, and ``Zero`` cotangents for outputs that
do not reach the differentiated result)."""
from __future__ import annotations

from typing import Any

from ..core import tree_util
from .custom import custom_jvp, custom_vjp
from .symbolic_zeros import SymbolicZero, custom_vjp_primal_tree_values, from_rule
from .tangents import Zero, add_tangents


def _overrides(prim: Any, name: str) -> bool:
    return getattr(type(prim), name) is not getattr(VJPHiPrimitive, name)


class VJPHiPrimitive:
    """Subclasses set ``self.in_avals`` (a tuple with one pytree of types per argument), ``self.out_aval`` (a pytree
    of types) and ``self.params`` (exposed as attributes) before calling ``super().__init__()``."""

    def __init__(self):
        for attr in ("in_avals", "out_aval", "params"):
            if not hasattr(self, attr):
                raise AttributeError(f"subclass __init__ should set `self.{attr}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both `vjp_bwd` and `vjp_bwd_retval`")
        self.in_tree = tree_util.tree_structure(tuple(self.in_avals))
        self.out_tree = tree_util.tree_structure(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_fwd`")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_bwd` or "
                                  "`vjp_bwd_retval`")

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_bwd` or "
                                  "`vjp_bwd_retval`")

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

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


class _GradAccum:
    """An argument's cotangent accumulator, as ``vjp_bwd`` gets one per argument leaf."""

    def __init__(self):
        self.value = None

    def accum(self, ct):
        self.value = add_tangents(self.value, ct)


def _custom_function(prim: VJPHiPrimitive):
    """``prim.expand`` with ``prim``'s derivative rules, as one of kiln's custom-derivative functions."""
    def fun(*args):
        return prim.expand(*args)
    fun.__name__ = fun.__qualname__ = type(prim).__name__

    def jvp(primals, tangents):
        return prim.jvp(tuple(primals), tuple(tangents))

    def vjp_fwd(*args):
        return _fwd(prim, args)

    def vjp_bwd(res, g):
        return _bwd(prim, res, g)

    if _overrides(prim, "jvp"):
        f = custom_jvp(fun)
        f.defjvp(jvp)
        return f
    f = custom_vjp(fun)
    f.defvjp(vjp_fwd, vjp_bwd, symbolic_zeros=True)
    f.forward_mode_error = (f"for jvp support, subclass {type(prim)} must implement `jvp` (forward-mode "
                            f"differentiation of {prim!r}: kiln.jvp, kiln.jacfwd, kiln.linearize)")
    return f


def _fwd(prim: VJPHiPrimitive, args: tuple):
    nzs_in = tree_util.tree_map(lambda p: p.perturbed, args)
    out, res, *_ = prim.vjp_fwd(nzs_in, *custom_vjp_primal_tree_values(args))
    return out, res


def _bwd(prim: VJPHiPrimitive, res: Any, g: Any) -> tuple:
    g = tree_util.tree_map(from_rule, g, is_leaf=lambda x: type(x) is SymbolicZero)
    if _overrides(prim, "vjp_bwd"):
        accums = tree_util.tree_map(lambda _: _GradAccum(), tuple(prim.in_avals))
        prim.vjp_bwd(res, g, *accums)
        cts = tree_util.tree_map(lambda a: a.value, accums)
    else:
        cts = tuple(prim.vjp_bwd_retval(res, g))
    return tuple(tree_util.tree_map(lambda c: None if isinstance(c, Zero) else c, cts,
                                    is_leaf=lambda x: x is None or isinstance(x, Zero)))


__all__ = ["VJPHiPrimitive"]
