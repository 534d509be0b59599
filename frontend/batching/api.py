"""``kiln.vmap``: vectorise a function over a batch axis by batching its IR."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..core import axis_env, refs, tree_util
from ..core.errors import KilnError
from ..core.tracing import abstractify, check_output_leaves, current_builder, non_array_argument, trace_to_ir
from . import (  # noqa: F401  (each registers the batching rules of its family)
    rules_callbacks,
    rules_collectives,
    rules_conv,
    rules_elementwise,
    rules_ffi,
    rules_fft,
    rules_indexing,
    rules_linalg,
    rules_misc,
    rules_reduction,
    rules_sharding,
    rules_sorting,
    rules_special,
    rules_structural,
    rules_windowed,
)
from .core import BatchContext, batch_eval, move_dim


class VmapError(KilnError, ValueError):
    """Inconsistent batch sizes, mismatched in_axes/out_axes, or an axis out of range."""


def _leaf_labels(args: tuple, kwargs: dict) -> list[str]:
    """A name for every leaf of ``(args, kwargs)``, in flattening order: ``argument 1['w']``,
    ``keyword argument 'scale'``."""
    labels = []
    for path in tree_util.user_paths((args, kwargs)):  # a key array is named, not its data
        kind, key, rest = path[0], path[1], tree_util.keystr(path[2:])
        if kind.idx == 0:
            labels.append(f"argument {key.idx}{rest}")
        else:
            labels.append(f"keyword argument {key.key!r}{rest}")
    return labels


def _output_labels(out: Any) -> list[str]:
    paths = tree_util.user_paths(out)
    if len(paths) == 1 and not paths[0]:
        return ["the output"]
    return [f"output{tree_util.keystr(path)}" for path in paths]


def _check_axis_leaf(fname: str, what: str, where: str, leaf: Any) -> None:
    if leaf is not None and (isinstance(leaf, (bool, np.bool_)) or not isinstance(leaf, (int, np.integer))):
        raise VmapError(f"kiln.{fname}: {what} entries must be ints or None, got {leaf!r} at {where}")


def _broadcast_prefix(fname: str, prefix: Any, tree: Any, what: str, where: str, value_name: str) -> list:
    """One entry of ``prefix`` per leaf of ``tree`` (``prefix`` is a pytree prefix of ``tree``).

    ``where`` names the prefix in messages (``in_axes[1]``), ``value_name`` the value (``argument 1``).
    """
    if prefix is None or isinstance(prefix, (int, np.integer)):
        _check_axis_leaf(fname, what, where, prefix)
        return [None if prefix is None else int(prefix)] * len(tree_util.tree_leaves(tree))
    p_leaves, p_tree = tree_util.tree_flatten(prefix, is_leaf=lambda x: x is None)
    try:
        subtrees = tree_util.flatten_prefix(p_tree, tree)
    except (tree_util._Mismatch, ValueError, TypeError) as e:
        at = tree_util.keystr(getattr(e, "path", ())) or "the top level"
        detail = getattr(e, "detail", str(e))
        raise VmapError(f"kiln.{fname}: {where} = {prefix!r} is not a pytree prefix of {value_name}: at {at}, "
                        f"{detail}. The structure of {value_name} is {tree_util.tree_structure(tree)}") from None
    leaves: list = []
    for (path, pl), st in zip(tree_util.tree_leaves_with_path(prefix, is_leaf=lambda x: x is None), subtrees):
        _check_axis_leaf(fname, what, f"{where}{tree_util.keystr(path)}", pl)
        leaves.extend([None if pl is None else int(pl)] * len(tree_util.tree_leaves(st)))
    return leaves


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         axis_name: Any = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorise ``fun`` over an axis of its arguments (as ``jax.vmap``).

    Parameters
    ----------
    fun : callable
        The function to vectorise; it sees one batch element of each mapped argument.
    in_axes : int, None or tuple
        Which axis of each positional argument is mapped: an int (negative counts from the end) or
        None for all of them, or a tuple with one entry per positional argument, each a pytree prefix
        of that argument (its int/None leaves apply to every leaf below). Keyword arguments are
        mapped over axis 0.
    out_axes : int, None or pytree
        Where the mapped axis goes in each output (a pytree prefix of the outputs); None only for
        outputs that are the same for every batch element.
    axis_size : int, optional
        The batch size; required when no argument is mapped.
    axis_name : hashable, optional
        A name for the mapped axis, for the collectives (``kiln.lax.psum``, ``pmean``, ``pmax``,
        ``pmin``, ``all_gather``, ``axis_index``) inside ``fun``.

    Returns
    -------
    callable
        The batched function: its outputs have the batch axis at ``out_axes``.
    """
    if not callable(fun):
        raise TypeError(f"kiln.vmap: expected a function to vectorise, got {type(fun).__name__}: {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, np.integer, tuple))) or isinstance(in_axes, bool):
        raise VmapError(f"kiln.vmap: in_axes must be an int, None, or a tuple with one entry per positional "
                        f"argument, got {type(in_axes).__name__} {in_axes!r}")
    if axis_size is not None and (isinstance(axis_size, bool) or not isinstance(axis_size, (int, np.integer))
                                  or axis_size < 0):
        raise VmapError(f"kiln.vmap: axis_size must be a non-negative int, got {axis_size!r}")
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        fname = f"vmap({name})"
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise VmapError(f"kiln.vmap({name}): in_axes has {len(in_axes)} entries but the function was called "
                            f"with {len(args)} positional argument(s); in_axes must be an int, None, or a tuple "
                            "with one entry per positional argument")
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        labels = _leaf_labels(args, kwargs)
        # Mutable array references: a mapped one is a ref over its value's slices (each example gets a ref of its
        # slice, written back along the same axis); an unmapped one reaches the function as it is.
        ref_leaves = {i: x for i, x in enumerate(flat) if isinstance(x, refs.Ref)}
        if isinstance(in_axes, tuple):
            arg_dims = [d for i, (a, ax) in enumerate(zip(args, in_axes))
                        for d in _broadcast_prefix(fname, ax, a, "in_axes", f"in_axes[{i}]", f"argument {i}")]
        else:
            arg_dims = _broadcast_prefix(fname, in_axes, args, "in_axes", "in_axes", "the arguments")
        dims = arg_dims + [0] * len(tree_util.tree_leaves(kwargs))
        hidden = tree_util.hidden_axes((args, kwargs))  # a key array's axes are its data's leading ones
        if ref_leaves:
            flat = [refs.read(x) if i in ref_leaves and dims[i] is not None else x for i, x in enumerate(flat)]
        size = _batch_size(name, flat, dims, labels, axis_size, hidden)
        # Only the mapped leaves are traced. The others reach the function as they are, as in JAX: a Python
        # int stays an int (a static argument of a jit inside, a shape), an array stays concrete.
        mapped = [i for i, d in enumerate(dims) if d is not None]
        mapped_avals = [abstractify(flat[i]) for i in mapped]
        mapped_dims = [dims[i] % (a.ndim - hidden[i]) for i, a in zip(mapped, mapped_avals)]
        per_example = [a.update(shape=a.shape[:d] + a.shape[d + 1:]) for a, d in zip(mapped_avals, mapped_dims)]
        out_tree_box = []

        def flat_fun(*tracers):
            leaves = list(flat)
            builder = current_builder()
            proxies = {}
            for i, t in zip(mapped, tracers):
                if i in ref_leaves:  # this example's ref, a ref of this trace (kept past it, it raises when used)
                    proxies[i] = t = refs.stand_in(t)
                leaves[i] = t
            a, k = tree_util.tree_unflatten(in_tree, leaves)
            out = fun(*a, **k)
            leaves, tree = tree_util.tree_flatten(out)
            check_output_leaves("kiln.vmap", name, out, leaves)
            # The output's structure only (no tracers kept past the trace: check_tracer_leaks would see them).
            out_tree_box.append((tree, tree_util.tree_unflatten(tree, [0] * len(leaves)), tree_util.hidden_axes(out)))
            # Python scalars and NumPy values it returns as they are: with out_axes=None they come back as they
            # were (as JAX's: jacfwd's has_aux hands back a NumPy aux this way)
            out_tree_box.append({k: v for k, v in enumerate(leaves) if type(v) in (bool, int, float, complex)
                                 or isinstance(v, (np.ndarray, np.generic))})
            # The final values of the mapped refs, then of the others it wrote: outputs too, after its own.
            written = [r for r in refs.escaping(builder) if r not in proxies.values()]
            out_tree_box.append(written)
            return leaves + refs.take(list(proxies.values()) + written)

        # What the function computes from the concrete arrays it is given unmapped or closes over alone has a
        # concrete value (``if table.sum() > 0`` works, as in JAX); a value of an enclosing trace (an eager grad's
        # tracer, carrying a derivative that must not become a Python constant) does not.
        closed, _ = axis_env.run_with_axis(axis_name, size, lambda: trace_to_ir(
            flat_fun, per_example, name=name, keeps_calls=True, kind="vmap", batch=(size, mapped_dims),
            known_constants=True, outer_values=[flat[i] for i in mapped]))
        ctx = BatchContext(size, axis_name)
        outs, out_dims = batch_eval(closed.ir, closed.consts, [flat[i] for i in mapped], mapped_dims, ctx)
        out_tree, out_example, out_hidden = out_tree_box[0]
        python_scalars, written = out_tree_box[1], out_tree_box[2]
        if ref_leaves or written:
            outs, out_dims = _write_refs(name, outs, out_dims, size, ref_leaves, mapped, mapped_dims, written)
        wanted = _broadcast_prefix(fname, out_axes, out_example, "out_axes", "out_axes", "the function's output")
        final = []
        for k, (o, d, w, h, label) in enumerate(zip(outs, out_dims, wanted, out_hidden, _output_labels(out_example))):
            if w is None:
                if d is not None:
                    raise VmapError(f"kiln.vmap({name}): out_axes is None for {label}, but it depends on the "
                                    "mapped axis (it differs between batch elements); out_axes=None is only for "
                                    "outputs that are the same for every batch element")
                final.append(python_scalars.get(k, o))
                continue
            ndim = abstractify(o).ndim - h + (d is None)
            if not -ndim <= w < ndim:
                raise VmapError(f"kiln.vmap({name}): out_axes={w} is out of range for {label}, of rank {ndim} "
                                "with the mapped axis")
            final.append(move_dim(o, d, w % ndim, size))
        return tree_util.tree_unflatten(out_tree, final)
    return batched


def _write_refs(name: str, outs: list, out_dims: list, size: int, ref_leaves: dict, mapped: list,
                mapped_dims: list, written: list) -> tuple[list, list]:
    """Write the refs' final values (the outputs after the function's own) back along their mapped axes; returns
    the function's own outputs. A write to an unmapped ref raises, as in JAX, even of a value that is the same for
    every example: each example writes it, so ``ref[...] += 1`` would add the batch size, not 1."""
    mapped_refs = [(ref_leaves[i], d) for i, d in zip(mapped, mapped_dims) if i in ref_leaves]
    n = len(outs) - len(mapped_refs) - len(written)
    finals, final_dims = outs[n:], out_dims[n:]
    if written:  # (checked before any ref is written: a failed call leaves every ref as it was)
        if any(d is not None for d in final_dims[len(mapped_refs):]):
            raise refs.RefError(f"kiln.vmap({name}): the function writes a value that differs between batch elements "
                                "to a Ref that is not mapped (closed over, or passed with in_axes None), as JAX "
                                "refuses too: pass the ref as an argument mapped along an axis, so that each "
                                "element writes its own slice")
        raise refs.RefError(f"kiln.vmap({name}): the function writes to a Ref that is not mapped (closed over, or "
                            "passed with in_axes None); as in JAX this is an error even when the value is the same "
                            "for every batch element, since each element writes it (ref[...] += 1 would have to add "
                            "the batch size). Pass the ref as an argument mapped along an axis, or write it outside "
                            "kiln.vmap. A kiln.experimental.random generator keeps its state in such a Ref: split "
                            "it (rng.split(n)) and pass it as a mapped argument")
    for (ref, axis), value, d in zip(mapped_refs, finals, final_dims):
        refs.write(ref, move_dim(value, d, axis, size))
    return outs[:n], out_dims[:n]


def _batch_size(name: str, flat: list, dims: list, labels: list[str], axis_size: int | None,
                hidden: list[int]) -> int:
    sizes = []
    for x, d, h, label in zip(flat, dims, hidden, labels):
        if d is None:
            continue
        try:
            aval = abstractify(x)
        except TypeError:
            fix = ("keyword arguments are always mapped over their axis 0: pass it positionally with in_axes=None, "
                   "or close over it" if label.startswith("keyword") else
                   "a mapped argument must be an array (or a pytree of them); pass in_axes=None for an argument "
                   "that is not mapped")
            raise non_array_argument("kiln.vmap", f"{label} of {name}", x, fix) from None
        shape = aval.shape[:aval.ndim - h]  # the shape the user sees (a key array's, not its data's)
        if not shape:
            raise VmapError(f"kiln.vmap({name}): cannot map over axis {d} of {label}, a 0-d (scalar) value; "
                            "use in_axes=None for it")
        if not -len(shape) <= d < len(shape):
            # (a key array hides its data's trailing axes: say so, the mistake JEP 9263's typed keys catch)
            keys = ("; a key array's key data is not one of its axes (map over kiln.random.key_data(keys) for "
                    "that)" if h else "")
            raise VmapError(f"kiln.vmap({name}): in_axes={d} is out of range for {label} of shape {shape} "
                            f"(rank {len(shape)}): use an axis in [-{len(shape)}, {len(shape)}){keys}")
        sizes.append(shape[d])
    if not sizes:
        if axis_size is None:
            raise VmapError(f"kiln.vmap({name}): no argument is mapped (all in_axes are None) and axis_size is not "
                            "given; pass axis_size= to say how many times to repeat the function")
        return int(axis_size)
    distinct = set(sizes)
    if len(distinct) > 1 or (axis_size is not None and axis_size not in distinct):
        shapes = [abstractify(x).shape[:abstractify(x).ndim - h] for x, h in zip(flat, hidden)]
        lines = [f"  {label} has shape {shape} and axis {d} is to be mapped (size {shape[d]})"
                 for shape, d, label in zip(shapes, dims, labels) if d is not None]
        extra = f"\n  axis_size={axis_size} was given" if axis_size is not None else ""
        raise VmapError(f"kiln.vmap({name}) got inconsistent sizes for array axes to be mapped:\n"
                        + "\n".join(lines) + extra)
    return sizes[0]


from . import custom_vmap, transform_rules  # noqa: E402,F401  (batching rules of remat, custom derivatives, custom_vmap)
