"""``xla_metadata_call`` (JAX's ``jax.experimental.xla_metadata.xla_metadata_call``, ``xla_metadata_call2`` and
``must_fuse_call``): a function staged out as a computation of its own, called through one ``call`` operation
that carries XLA metadata (frontend attributes, ``key="value"``). When XLA inlines the call it copies the
attributes onto the operations of the function, so they all carry the metadata.

Unlike ``with set_xla_metadata(...)``, the metadata belongs to the function, not to the tracing context: nothing
is traced again, and the transformations keep it. ``vmap`` batches the function and keeps its call tagged; under
``jvp`` the primal and tangent computations are one call with the function's metadata; reverse mode (``grad``,
``vjp``, ``linearize``) splits that call into the forward computation, tagged with the function's metadata, and
the linear (tangent) one and its transpose (the backward pass), tagged with ``ad_metadata`` (the same metadata by
default; none with ``'drop'``; or other metadata), as in JAX.

The ``xla_metadata_call`` equation holds the function's IR (``ir``, a ClosedIR without constants), its metadata
(``xla_metadata``) and that of the computations reverse mode derives from it (``ad_metadata``), both sorted
``(key, value)`` string pairs. Lowering emits the body as a private function and a ``func.call`` of it
(lowering/rules/misc.py). Run eagerly, the call is compiled as a program of its own.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Callable

from .ad.jvp import jvp_ir, jvp_rules
from .ad.partial_eval import partial_eval, pe_rules
from .ad.tangents import Zero, instantiate, tangent_aval
from .ad.transpose import is_undefined, transpose_closed, transpose_rules
from .batching.core import batch_closed, batch_rules
from .core import tree_util
from .core.call import call_body
from .core.errors import KilnTypeError
from .core.ir import ClosedIR, Eqn, Var
from .core.primitive import Primitive
from .core.tracing import abstractify, trace_to_ir
from .driver.nan_check import locate_rules
from .xla_metadata import XlaMetadataKeyError

__all__ = ["must_fuse_call", "xla_metadata_call", "xla_metadata_call2", "xla_metadata_call_p"]

_WHERE = "kiln.experimental.xla_metadata"


def _shape_rule(*in_avals: Any, ir: ClosedIR, xla_metadata: tuple, ad_metadata: tuple) -> list:
    expected = ir.in_avals
    if len(in_avals) != len(expected) or any(a.shape != e.shape or a.dtype != e.dtype
                                             for a, e in zip(in_avals, expected)):
        raise TypeError(f"kiln: xla_metadata_call with arguments ({', '.join(a.str_short() for a in in_avals)}); "
                        f"its IR takes ({', '.join(e.str_short() for e in expected)})")
    return ir.out_avals


xla_metadata_call_p = Primitive("xla_metadata_call", _shape_rule, multiple_results=True)


def _bind(closed: ClosedIR, args: list, xla_metadata: tuple, ad_metadata: tuple) -> list:
    """One ``xla_metadata_call`` of ``closed`` (its constants become leading arguments)."""
    return xla_metadata_call_p.bind(*closed.consts, *args, ir=call_body(closed), xla_metadata=xla_metadata,
                                    ad_metadata=ad_metadata)


# -- the API --------------------------------------------------------------------------------------------------

def _canonical(metadata: Mapping, what: str) -> tuple[tuple[str, str], ...]:
    """``metadata`` as sorted ``(key, value)`` strings: a bool as ``"true"``/``"false"``, a number as ``str``."""
    pairs = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise XlaMetadataKeyError(f"{_WHERE}.{what}: a metadata key must be a non-empty string, got {key!r}")
        if isinstance(value, bool):
            pairs[key] = str(value).lower()
        elif isinstance(value, (str, int, float)):
            pairs[key] = str(value)
        else:
            raise KilnTypeError(f"{_WHERE}.{what}: xla_metadata_call metadata values must be str, bool, int, or "
                                f"float, got {type(value).__name__} ({value!r:.60}) for key {key!r}: pass it as a "
                                "string")
    return tuple(sorted(pairs.items()))


def _ad_metadata(ad_metadata: Any, metadata: tuple, what: str) -> tuple[tuple[str, str], ...]:
    """The metadata of the computations autodiff derives: ``'same'``, ``'drop'`` (none) or a dict."""
    if isinstance(ad_metadata, str) and ad_metadata in ("same", "drop"):
        return metadata if ad_metadata == "same" else ()
    if isinstance(ad_metadata, Mapping):
        return _canonical(ad_metadata, what)
    raise KilnTypeError(f"{_WHERE}.{what}: ad_metadata must be 'same', 'drop', or a dict of metadata, got "
                        f"{ad_metadata!r:.60}")


def _wrap(fun: Callable, metadata: tuple, ad_metadata: tuple) -> Callable:
    name = getattr(fun, "__name__", "xla_metadata_call")

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        out_tree = []

        def flat_fun(*tracers: Any) -> list:
            call_args, call_kwargs = tree_util.tree_unflatten(in_tree, list(tracers))
            leaves, tree = tree_util.tree_flatten(fun(*call_args, **call_kwargs))
            out_tree.append(tree)
            return leaves

        closed, _ = trace_to_ir(flat_fun, [abstractify(x) for x in flat], name=name)
        return tree_util.tree_unflatten(out_tree[0], _bind(closed, flat, metadata, ad_metadata))
    return wrapped


def xla_metadata_call2(f: Callable | Mapping | None = None, /, metadata: Mapping | None = None, *,
                       ad_metadata: str | Mapping = "same") -> Callable:
    """``f`` staged out as its own computation, called through a ``call`` tagged with ``metadata``.

    Parameters
    ----------
    f : callable, optional
        The function to wrap; without it (or with the metadata dict in its place), a decorator.
    metadata : dict
        Keys to values (str, bool, int or float; written as strings, a bool as ``"true"``/``"false"``).
    ad_metadata : 'same', 'drop' or dict
        The metadata of the linear (tangent) and transposed (backward-pass) computations reverse mode derives:
        the same (the default), none, or this dict's. Forward mode (``jvp``) keeps ``metadata``.

    Returns
    -------
    callable
        ``f`` wrapped, or a decorator.

    Examples
    --------
    >>> import kiln, kiln.numpy as knp
    >>> from kiln.experimental.xla_metadata import xla_metadata_call2
    >>> layer = xla_metadata_call2(knp.sin, {"group": "l3"}, ad_metadata={"group": "l3_bwd"})
    >>> 'frontend_attributes={group="l3"}' in kiln.jit(layer).lower(1.0).as_text("hlo")
    True
    """
    if isinstance(f, Mapping) and metadata is None:
        f, metadata = None, f
    if f is not None and not callable(f):
        raise KilnTypeError(f"{_WHERE}.xla_metadata_call2: expected a callable to wrap, got {f!r:.60}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise KilnTypeError(f"{_WHERE}.xla_metadata_call2: metadata must be a dict, got {metadata!r:.60}")
    kvs = _canonical(metadata or {}, "xla_metadata_call2")
    ad_kvs = _ad_metadata(ad_metadata, kvs, "xla_metadata_call2")
    if f is None:
        return lambda g: _wrap(g, kvs, ad_kvs)
    return _wrap(f, kvs, ad_kvs)


def xla_metadata_call(f: Callable | None = None, /, **metadata: Any) -> Callable:
    """``f`` staged out as its own computation, called through a ``call`` tagged with ``metadata`` (keyword
    arguments), which reverse mode's derived computations carry too: :func:`xla_metadata_call2` with its
    defaults. Without ``f``, a decorator.

    Examples
    --------
    >>> import kiln, kiln.numpy as knp
    >>> from kiln.experimental.xla_metadata import xla_metadata_call
    >>> @xla_metadata_call(tag="my_block")
    ... def block(x):
    ...     return knp.sin(x) * knp.cos(x)
    >>> 'frontend_attributes={tag="my_block"}' in kiln.jit(block).lower(1.0).as_text("hlo")
    True
    """
    if f is not None and not callable(f):
        raise KilnTypeError(f"{_WHERE}.xla_metadata_call: expected a callable to wrap, got {f!r:.60}; the metadata "
                            "goes in keyword arguments: xla_metadata_call(tag='x')(f)")
    return xla_metadata_call2(f, metadata)


def must_fuse_call(identifier: str) -> Callable:
    """A decorator: XLA must place all the operations of the function in one fusion (the call is tagged
    ``MUST_FUSE=identifier``; XLA fails to compile when it cannot fuse them)."""
    return xla_metadata_call(MUST_FUSE=identifier)


# -- transformation rules -------------------------------------------------------------------------------------

def _jvp(primals, tangents, *, ir: ClosedIR, xla_metadata: tuple, ad_metadata: tuple):
    # one call for the primal and tangent computations (fused, as JAX's): the function's own metadata
    nonzero = [not isinstance(t, Zero) for t in tangents]
    new, out_nonzero = jvp_ir(ir, nonzero)
    outs = _bind(new, [*primals, *[t for t in tangents if not isinstance(t, Zero)]], xla_metadata, ad_metadata)
    n = len(ir.out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(ir.out_avals, out_nonzero)]


def _partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    """A known call (the forward computation, with the residuals) with the function's metadata, and an unknown one
    (the linear computation) with ``ad_metadata``."""
    p = eqn.params
    split = partial_eval(p["ir"].ir, list(unknown_inputs))
    known_outs = [v for v, u in zip(eqn.outputs, split.out_unknown) if not u]
    residuals = [Var(v.aval) for v in split.known.outvars[len(known_outs):]]
    known = Eqn(xla_metadata_call_p, [a for a, u in zip(eqn.inputs, unknown_inputs) if not u], known_outs + residuals,
                {**p, "ir": ClosedIR(split.known, [])}, eqn.source)
    linear = Eqn(xla_metadata_call_p, residuals + [a for a, u in zip(eqn.inputs, unknown_inputs) if u],
                 [v for v, u in zip(eqn.outputs, split.out_unknown) if u],
                 {"ir": ClosedIR(split.unknown, []), "xla_metadata": p["ad_metadata"],
                  "ad_metadata": p["ad_metadata"]}, eqn.source)
    return [known], [linear], split.out_unknown


def _transpose(cts, *args, ir: ClosedIR, xla_metadata: tuple, ad_metadata: tuple):
    linear = [is_undefined(a) for a in args]
    t = transpose_closed(ir, linear)
    outs = iter(_bind(t, [a for a in args if not is_undefined(a)] + [instantiate(c) for c in cts], ad_metadata,
                      ad_metadata))
    return [next(outs) if lin else None for lin in linear]


def _batch(ctx, args, dims, *, ir: ClosedIR, xla_metadata: tuple, ad_metadata: tuple):
    new, out_dims = batch_closed(ir, dims, ctx)
    return _bind(new, list(args), xla_metadata, ad_metadata), out_dims


def _locate(eqn, args, run):
    """debug_nans' op-by-op re-run: the body, equation by equation."""
    body = eqn.params["ir"]
    return run(body.ir, body.consts, args)


jvp_rules[xla_metadata_call_p] = _jvp
pe_rules[xla_metadata_call_p] = _partial_eval
transpose_rules[xla_metadata_call_p] = _transpose
batch_rules[xla_metadata_call_p] = _batch
locate_rules[xla_metadata_call_p] = _locate
