"""``shard_map``: a function of one device's block of each argument, run on every device of a mesh at once.

``shard_map(f, mesh=mesh, in_specs=P("data"), out_specs=P())(x)`` traces ``f`` once on the blocks' types with
the mesh's axis names bound (so collectives such as ``kiln.lax.psum(v, "data")`` can name them) and records one
``shard_map`` equation. It lowers to Shardy's ``sdy.manual_computation`` over all the mesh's axes; inside it the
collectives are explicit (``lowering/rules/collectives.py``), and XLA's SPMD partitioner places the blocks.

Specs: ``in_specs``/``out_specs`` are pytree prefixes of the arguments/results (a ``None`` leaf of ``in_specs``
passes that argument to ``f`` unchanged, as a static value). An output's spec not naming a mesh axis promises
that the output is the same on every device along it; ``check_vma`` (on by default, as JAX's) proves it by
following which mesh axes each value varies over, and refuses what it cannot prove.

Derivatives and batching transform the body. With ``check_vma`` the transposition is typed as JAX's
(``ad/varying_transpose.py``, JEP 17111): a value the same along a mesh axis is one value with one cotangent, summed
over the devices where it meets varying values, and ``psum`` transposes to ``pvary``; residuals are stacked only
along the axes they vary along, so that they keep their types. Without it, per-device *partial* cotangents: an
output that is the same along a mesh axis contributes its cotangent once (device 0 of that axis), and an input
that is the same along a mesh axis gets the sum of its partial cotangents (a ``psum``); ``psum``'s transpose is
then ``psum``. README, "Differences from JAX".
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable, Sequence

from .. import lax
from ..core import axis_env, tree_util
from ..core.avals import ShapedArray
from ..core.call import call_body
from ..core.errors import KilnError
from ..core.ir import ClosedIR
from ..core.primitive import Primitive
from ..core.tracing import abstractify, eval_ir, trace_origin, trace_to_ir
from ..core.varying import VaryingInput, varying_axes
from ..driver.array import Array
from ..driver.sharding import Mesh, NamedSharding, PartitionSpec, get_mesh, spec_axes_problem
from ..lax.collectives import psum_p
from .common import fun_name, trace_callable

__all__ = ["shard_map", "shard_map_p", "ShardMapError"]

# Per dimension of a value, the mesh axes splitting it: ``(("data",), ())`` is ``P("data", None)``.
SpecDims = tuple[tuple[str, ...], ...]


class ShardMapError(KilnError, ValueError):
    """A spec that does not fit its argument or result, or an output that is not provably replicated."""


def _block_shape(shape: tuple[int, ...], spec: SpecDims, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(n // math.prod(sizes[a] for a in axes) for n, axes in zip(shape, spec))


def _global_shape(shape: tuple[int, ...], spec: SpecDims, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(n * math.prod(sizes[a] for a in axes) for n, axes in zip(shape, spec))


def _shard_map_rule(*in_avals: ShapedArray, body: ClosedIR, mesh: Mesh, mesh_axes: tuple, in_specs: tuple,
                    out_specs: tuple, check_vma: bool, name: str) -> list[ShapedArray]:
    sizes = dict(mesh_axes)
    for i, (a, spec, b) in enumerate(zip(in_avals, in_specs, body.in_avals)):
        if len(spec) != a.ndim or _block_shape(a.shape, spec, sizes) != b.shape or a.dtype != b.dtype:
            raise ShardMapError(f"kiln.shard_map({name}): internal error: input {i} is {a.str_short()}, whose "
                                f"blocks by {spec} do not match the body's {b.str_short()}")
    return [a.update(shape=_global_shape(a.shape, spec, sizes)) for a, spec in zip(body.out_avals, out_specs)]


# ``body`` takes and returns blocks; ``mesh`` is the kiln Mesh (the driver runs the program over it);
# ``mesh_axes`` its ((name, size), ...) for the lowering; ``in_specs``/``out_specs`` a SpecDims per value.
shard_map_p = Primitive("shard_map", _shard_map_rule, multiple_results=True)


# -- specs -------------------------------------------------------------------------------------------------
def _spec_dims(spec: Any, aval: ShapedArray, mesh: Mesh, what: str, where: str, block: bool = False) -> SpecDims:
    """The SpecDims of ``spec`` for a value of ``aval`` (a whole argument; ``block``: one device's block of a
    result), checked against the mesh and the shape."""
    if not isinstance(spec, PartitionSpec):
        raise ShardMapError(f"{where}: {what} must be a kiln.sharding.PartitionSpec (P(...)), got {spec!r:.80}")
    if len(spec) > aval.ndim:
        raise ShardMapError(f"{where}: {what} is {spec}, which has {len(spec)} entries, but the value is "
                            f"{aval.str_short()} with {aval.ndim} dimensions; give at most one entry per dimension")
    problem = spec_axes_problem(spec, mesh.axis_names)
    if problem:
        raise ShardMapError(f"{where}: {what} is {spec}, which {problem}")
    sizes = mesh.shape
    dims = tuple(spec.axis_names_of(d) for d in range(aval.ndim))
    for d, axes in enumerate(dims):
        n = math.prod(sizes[a] for a in axes)
        if not block and aval.shape[d] % n:
            raise ShardMapError(f"{where}: {what} is {spec}, which splits dimension {d} of {aval.str_short()} into "
                                f"{n} blocks, but {n} does not divide {aval.shape[d]}; pad the array or choose "
                                "mesh axes whose sizes divide it")
    return dims


def _broadcast_prefix(specs: Any, tree: Any, n_leaves: int, what: str, where: str) -> list:
    """``specs`` (a pytree prefix of the values with treedef ``tree``) repeated for every leaf."""
    if isinstance(specs, PartitionSpec) or specs is None:
        return [specs] * n_leaves
    dummy = tree_util.tree_unflatten(tree, list(range(n_leaves)))
    out: list = [None] * n_leaves

    def fill(spec, sub):
        for i in tree_util.tree_leaves(sub):
            out[i] = spec
    try:
        tree_util.tree_map(fill, specs, dummy, is_leaf=lambda s: isinstance(s, PartitionSpec) or s is None)
    except (ValueError, TypeError) as e:
        of = "arguments (a tuple, one entry per positional argument)" if what == "in_specs" else "results"
        raise ShardMapError(f"{where}: {what} must be a PartitionSpec or a pytree prefix of the {of}; its structure "
                            f"does not match ({e})") from None
    return out


def _check_replication(closed: ClosedIR, in_specs: Sequence[SpecDims], out_specs: Sequence[SpecDims],
                       given: Sequence[PartitionSpec], mesh: Mesh, out_paths: Sequence[str], where: str) -> None:
    names = frozenset(mesh.axis_names)
    in_vma = [_mentioned(spec) for spec in in_specs]
    body = call_body(closed)
    vma = varying_axes(body.ir, [frozenset()] * len(closed.consts) + in_vma, names)
    problems = []
    for path, spec, spec_text, v in zip(out_paths, out_specs, given, vma):
        mentioned = _mentioned(spec)
        extra = v - mentioned
        if extra:
            problems.append(f"  {path}: out_specs entry {spec_text} promises the value is the same along mesh "
                            f"axes {sorted(names - mentioned)}, but it may differ along {sorted(extra)}")
    if problems:
        raise ShardMapError(
            f"{where}: out_specs ask for outputs replicated along mesh axes they may vary over:\n" + "\n".join(problems)
            + "\nReduce them first (e.g. kiln.lax.psum(x, axis)), or name the axes in out_specs to concatenate the "
              "blocks; if the values are equal for a reason kiln cannot see, pass check_vma=False (then each output "
              "is taken from the first device along those axes).")


# -- in_specs from the arguments' layouts -------------------------------------------------------------------------
class _InferType:
    def __repr__(self) -> str:
        return "Infer"


Infer = _InferType()  # shard_map's default in_specs: each argument's own layout


def _inferred_spec(x: Any, mesh: Mesh, what: str, where: str) -> PartitionSpec:
    """The spec of argument leaf ``x``: its ``NamedSharding``'s over ``mesh``; replicated for host values and
    arrays on one device. Inside a trace, the layout of the jit argument (or concrete value) it stands for."""
    origin = trace_origin(x)
    if origin is None:
        raise ShardMapError(f"{where}: cannot infer the in_specs entry for {what}: it is a value computed inside the "
                            "trace, and kiln's types carry no layout (README, Differences from JAX). Pass in_specs=...")
    sharding = origin if isinstance(origin, NamedSharding) else getattr(origin, "_sharding", None)
    if not isinstance(sharding, NamedSharding):
        return PartitionSpec()
    if sharding.mesh != mesh:
        raise ShardMapError(f"{where}: {what} is laid out over {sharding.mesh}, not over the shard_map's mesh {mesh}; "
                            "pass in_specs=..., or move it with kiln.device_put(x, NamedSharding(mesh, spec))")
    return sharding.spec


# -- the user function -----------------------------------------------------------------------------------------
def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer, mesh: Mesh | None = None,
              axis_names: Any = frozenset(), check_vma: bool = True, check_rep: bool | None = None) -> Any:
    """Run ``f`` on each device's block of the arguments at once (JAX's ``jax.shard_map``).

    ``in_specs``/``out_specs``: PartitionSpecs, pytree prefixes of the positional arguments / the results
    (an ``in_specs`` leaf ``None`` passes that argument whole and static). Without ``in_specs``, each argument
    keeps its layout: its ``NamedSharding``'s spec (also for the arguments of a jitted function), replicated
    for host values. ``mesh`` defaults to the one of
    ``with mesh:``. All mesh axes are manual inside ``f`` (``axis_names`` must name all of them or none).
    ``check_rep`` is the older name of ``check_vma``.
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh, axis_names=axis_names,
                                 check_vma=check_vma, check_rep=check_rep)
    if not callable(f):
        raise TypeError(f"kiln.shard_map: the first argument must be a callable, got {type(f).__name__}")
    check = check_vma if check_rep is None else bool(check_rep)

    @functools.wraps(f)
    def mapped(*args):
        m = mesh if mesh is not None else get_mesh()
        where = f"kiln.shard_map({fun_name(f)})"
        if m is None:
            raise ShardMapError(f"{where}: no mesh: pass mesh=kiln.make_mesh(...) or call it inside `with mesh:`")
        if not isinstance(m, Mesh):
            raise TypeError(f"{where}: mesh must be a kiln.sharding.Mesh, got {type(m).__name__}")
        if axis_names and frozenset(axis_names) != frozenset(m.axis_names):
            raise NotImplementedError(f"{where}: axis_names={set(axis_names)} makes only some mesh axes manual; kiln's "
                                      f"shard_map is manual over all of the mesh's axes {m.axis_names}. Use a mesh "
                                      "with just those axes.")
        return _apply(f, m, args, in_specs, out_specs, check, where)
    return mapped


def legacy_shard_map(f: Callable, mesh: Mesh, in_specs: Any, out_specs: Any, check_rep: bool = True) -> Any:
    """``jax.experimental.shard_map.shard_map``: the older spelling, with positional mesh and specs (deprecated
    in JAX for ``jax.shard_map``; kept working, with a DeprecationWarning)."""
    warnings.warn("kiln.experimental.shard_map.shard_map is deprecated (as in JAX); use kiln.shard_map",
                  DeprecationWarning, stacklevel=2)
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)


def _apply(f: Callable, mesh: Mesh, args: tuple, in_specs: Any, out_specs: Any, check: bool, where: str) -> Any:
    leaves, in_tree = tree_util.tree_flatten(args)
    if in_specs is Infer:
        in_specs = tuple(tree_util.tree_unflatten(in_tree, [
            _inferred_spec(x, mesh, f"argument leaf {i}", where) for i, x in enumerate(leaves)]))
    leaf_specs = _broadcast_prefix(in_specs if isinstance(in_specs, (PartitionSpec, tuple)) or in_specs is None
                                   else (in_specs,), in_tree, len(leaves), "in_specs", where)
    dynamic = [i for i, s in enumerate(leaf_specs) if s is not None]
    avals = [abstractify(leaves[i]) for i in dynamic]
    specs = [_spec_dims(leaf_specs[i], a, mesh, f"in_specs entry for argument leaf {i}", where)
             for i, a in zip(dynamic, avals)]
    sizes = mesh.shape
    block_avals = [a.update(shape=_block_shape(a.shape, s, sizes)) for a, s in zip(avals, specs)]

    def body(*blocks):
        full = list(leaves)
        for i, b in zip(dynamic, blocks):
            full[i] = b
        return f(*tree_util.tree_unflatten(in_tree, full))

    flat_in = tree_util.tree_structure(tuple(range(len(dynamic))))
    # Each block says which mesh axes it varies along (kiln.typeof shows them inside the body).
    hints = [VaryingInput(_mentioned(spec), mesh.axis_names, check) for spec in specs]
    closed, out_tree = axis_env.run_with_axes(tuple(mesh.shape_tuple), trace_callable, lambda *b: body(*b), flat_in,
                                              block_avals, fun_name(f), hints)
    n_out = len(closed.out_avals)
    out_leaf_specs = _broadcast_prefix(out_specs, out_tree, n_out, "out_specs", where)
    dummy = tree_util.tree_unflatten(out_tree, list(range(n_out)))
    paths = ["output" + tree_util.keystr(path) for path, _ in tree_util.tree_leaves_with_path(dummy)]
    o_specs = []
    for path, s, a in zip(paths, out_leaf_specs, closed.out_avals):
        if s is None:
            raise ShardMapError(f"{where}: out_specs has None for {path}; every output needs a PartitionSpec")
        o_specs.append(_spec_dims(s, a, mesh, f"out_specs entry for {path}", where, block=True))
    if check:
        _check_replication(closed, specs, o_specs, out_leaf_specs, mesh, paths, where)
    outs = bind_shard_map(closed, [leaves[i] for i in dynamic], mesh, specs, o_specs, check, fun_name(f))
    outs = [_as_stated(o, mesh, s) for o, s in zip(outs, out_leaf_specs)]
    return tree_util.tree_unflatten(out_tree, outs)


def _as_stated(out: Any, mesh: Mesh, spec: PartitionSpec) -> Any:
    """An eager result described by the spec out_specs gave it (``P('x', None)``, as JAX's result says), where the
    layout read back from the partitioner is that one (which drops trailing Nones: ``P('x',)``)."""
    if type(out) is not Array or out._sharding is None or not isinstance(spec, PartitionSpec):
        return out
    stated = NamedSharding(mesh, spec)
    if out._sharding == stated or not stated.is_equivalent_to(out._sharding, out.ndim):
        return out
    return Array(out._buf, out.aval, None, out._committed, stated)


def bind_shard_map(closed: ClosedIR, args: Sequence[Any], mesh: Mesh, in_specs: Sequence[SpecDims],
                   out_specs: Sequence[SpecDims], check_vma: bool, name: str) -> list:
    """Bind ``shard_map`` of ``closed`` on ``args``; its constants go first, replicated (they are trace-time
    values, the same on every device)."""
    const_specs = [((),) * abstractify(c).ndim for c in closed.consts]
    return shard_map_p.bind(*closed.consts, *args, body=call_body(closed), mesh=mesh,
                            mesh_axes=tuple(mesh.shape_tuple), in_specs=(*const_specs, *in_specs),
                            out_specs=tuple(out_specs), check_vma=check_vma, name=name)


# -- transformation rules -------------------------------------------------------------------------------------
def _all_axes(mesh_axes: tuple) -> tuple[str, ...]:
    return tuple(n for n, _ in mesh_axes)


def _unmentioned(spec: SpecDims, mesh_axes: tuple) -> tuple[str, ...]:
    used = {a for axes in spec for a in axes}
    return tuple(a for a in _all_axes(mesh_axes) if a not in used)


def _shard_map_jvp(primals, tangents, *, body, mesh, mesh_axes, in_specs, out_specs, check_vma, name):
    from ..ad.jvp import jvp_ir
    from ..ad.tangents import Zero, tangent_aval
    nonzero = [not isinstance(t, Zero) for t in tangents]
    new, out_nz = jvp_ir(body, nonzero)
    t_specs = [s for s, nz in zip(in_specs, nonzero) if nz]
    t_out_specs = [s for s, nz in zip(out_specs, out_nz) if nz]
    outs = bind_shard_map(new, [*primals, *[t for t in tangents if not isinstance(t, Zero)]], mesh,
                          [*in_specs, *t_specs], [*out_specs, *t_out_specs], check_vma, f"jvp({name})")
    n = len(out_specs)
    it = iter(outs[n:])
    touts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(body.out_avals, out_nz)]
    return outs[:n], touts


def _residual_spec(aval: ShapedArray, mesh_axes: tuple, varying: frozenset | None = None) -> SpecDims:
    """A residual is whatever each device computed: stacked along a new leading dimension split over every axis
    (over the axes it varies along, where they are known: one that is the same on every device is one value, as
    the typed transposition needs)."""
    axes = _all_axes(mesh_axes)
    if varying is not None:
        axes = tuple(a for a in axes if a in varying)
    return (axes,) + ((),) * aval.ndim


def _shard_map_partial_eval(eqn, unknown_inputs: list[bool]):
    from ..ad.partial_eval import partial_eval
    from ..core.ir import Eqn, Var
    p = eqn.params
    split = partial_eval(p["body"].ir, list(unknown_inputs))
    n_known_out = len(split.known.outvars) - split.num_residuals
    res_avals = [v.aval for v in split.known.outvars[n_known_out:]]
    known_in = [a.aval for a in split.known.invars]

    def known_fun(*xs):
        outs = eval_ir(split.known, [], xs)
        return outs[:n_known_out] + [lax.expand_dims(r, (0,)) for r in outs[n_known_out:]]
    known_body, _ = trace_to_ir(known_fun, known_in, name="shard_map_known")

    def unknown_fun(*xs):
        res = [lax.squeeze(r, (0,)) for r in xs[:len(res_avals)]]
        return eval_ir(split.unknown, [], [*res, *xs[len(res_avals):]])
    stacked = [a.update(shape=(1,) + a.shape) for a in res_avals]
    unknown_in = stacked + [v.aval for v in split.unknown.invars[len(res_avals):]]
    unknown_body, _ = trace_to_ir(unknown_fun, unknown_in, name="shard_map_unknown")
    if known_body.consts or unknown_body.consts:  # they only reshape: nothing to capture
        raise ShardMapError(f"kiln.shard_map({p['name']}): internal error: a split body captured constants")

    out_unknown = split.out_unknown
    if p["check_vma"]:
        known_vma = [_mentioned(s) for s, u in zip(p["in_specs"], unknown_inputs) if not u]
        res_vma = varying_axes(split.known, known_vma, frozenset(_all_axes(p["mesh_axes"])))[n_known_out:]
    else:
        res_vma = [None] * len(res_avals)
    res_specs = tuple(_residual_spec(a, p["mesh_axes"], v) for a, v in zip(res_avals, res_vma))
    sizes = dict(p["mesh_axes"])
    res_vars = [Var(a.update(shape=_global_shape(a.shape, s, sizes))) for a, s in zip(stacked, res_specs)]
    ins_k = [a for a, u in zip(eqn.inputs, unknown_inputs) if not u]
    ins_u = [a for a, u in zip(eqn.inputs, unknown_inputs) if u]
    spec_k = tuple(s for s, u in zip(p["in_specs"], unknown_inputs) if not u)
    spec_u = tuple(s for s, u in zip(p["in_specs"], unknown_inputs) if u)
    out_k = tuple(s for s, u in zip(p["out_specs"], out_unknown) if not u)
    out_u = tuple(s for s, u in zip(p["out_specs"], out_unknown) if u)
    common = {"mesh": p["mesh"], "mesh_axes": p["mesh_axes"], "check_vma": p["check_vma"]}
    known_eqn = Eqn(shard_map_p, ins_k, [v for v, u in zip(eqn.outputs, out_unknown) if not u] + res_vars,
                    {"body": call_body(known_body), "in_specs": spec_k, "out_specs": out_k + res_specs,
                     "name": p["name"], **common}, eqn.source)
    unknown_eqn = Eqn(shard_map_p, res_vars + ins_u, [v for v, u in zip(eqn.outputs, out_unknown) if u],
                      {"body": call_body(unknown_body), "in_specs": res_specs + spec_u, "out_specs": out_u,
                       "name": f"{p['name']}_lin", **common}, eqn.source)
    return [known_eqn], [unknown_eqn], out_unknown


def _sum_along(x, axes: tuple[str, ...]):
    """The sum of ``x`` over the devices along ``axes`` (``x`` itself for no axes)."""
    return psum_p.bind(x, axis_name=axes) if axes else x


def _mentioned(spec: SpecDims) -> frozenset:
    return frozenset(a for axes in spec for a in axes)


def _shard_map_transpose(cts, *args, body, mesh, mesh_axes, in_specs, out_specs, check_vma, name):
    from ..ad.tangents import instantiate
    from ..ad.transpose import UndefinedPrimal, is_undefined, transpose_closed
    from ..ad.varying_transpose import backward_pass_typed, first_along
    linear = [is_undefined(a) for a in args]
    nonlin = [a for a in args if not is_undefined(a)]
    lin_specs = [s for s, lin in zip(in_specs, linear) if lin]
    n = len(nonlin)

    def untyped(*xs):
        # Per-device partial cotangents: an output the same along an axis enters once, on its first device; an
        # input the same along an axis gets its devices' partial cotangents summed.
        t = transpose_closed(body, linear)
        cts_in = [first_along(c, _unmentioned(s, mesh_axes)) for c, s in zip(xs[n:], out_specs)]
        outs = eval_ir(t.ir, t.consts, list(xs[:n]) + cts_in)
        return [_sum_along(o, _unmentioned(s, mesh_axes)) for o, s in zip(outs, lin_specs)]

    def typed(*xs):
        # check_vma: JAX's types (ad/varying_transpose.py); the cotangents of invariant inputs come out summed.
        it = iter(xs[:n])
        full = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(body.in_avals, linear)]
        outs = backward_pass_typed(body.ir, body.consts, full, list(xs[n:]),
                                   in_vma=[_mentioned(s) for s in in_specs],
                                   const_vma=[frozenset()] * len(body.consts),
                                   out_vma=[_mentioned(s) for s in out_specs], mesh_names=_all_axes(mesh_axes))
        return [instantiate(o) for o, lin in zip(outs, linear) if lin]

    nonlin_specs = [s for s, lin in zip(in_specs, linear) if not lin]
    in_avals = [a for a, lin in zip(body.in_avals, linear) if not lin] + list(body.out_avals)
    new, _ = trace_to_ir(typed if check_vma else untyped, in_avals, name=f"transpose({name})")
    outs = iter(bind_shard_map(new, [*nonlin, *[instantiate(c) for c in cts]], mesh,
                               [*nonlin_specs, *out_specs], lin_specs, check_vma, f"transpose({name})"))
    return [next(outs) if lin else None for lin in linear]


def _shard_map_batch(ctx, args, dims, *, body, mesh, mesh_axes, in_specs, out_specs, check_vma, name):
    from ..batching.core import batch_closed, move_dim
    moved = [a if d is None else move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
    in_dims = [None if d is None else 0 for d in dims]
    # An output that does not depend on the batch stays unbatched (jacfwd of a gradient needs its primal so).
    new, out_dims = batch_closed(body, in_dims, ctx, out_dims_wanted=[None] * len(out_specs))
    new_in = [s if d is None else ((),) + s for s, d in zip(in_specs, dims)]
    new_out = [s if d is None else ((),) + s for s, d in zip(out_specs, out_dims)]
    outs = bind_shard_map(new, moved, mesh, new_in, new_out, check_vma, f"vmap({name})")
    return outs, list(out_dims)


def _register_rules() -> None:
    from ..ad.jvp import jvp_rules
    from ..ad.partial_eval import pe_rules
    from ..ad.transpose import transpose_rules
    from ..batching.core import batch_rules
    jvp_rules[shard_map_p] = _shard_map_jvp
    pe_rules[shard_map_p] = _shard_map_partial_eval
    transpose_rules[shard_map_p] = _shard_map_transpose
    batch_rules[shard_map_p] = _shard_map_batch


_register_rules()
