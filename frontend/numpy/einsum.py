"""``einsum`` and ``einsum_path``: Einstein summation as a sequence of pairwise ``dot_general`` s.

The subscripts are parsed into integer labels (letters by code point, the dimensions covered by
``...`` as negative labels shared by all operands, right-aligned). Each operand is first reduced on
its own: size-1 dimensions that broadcast against a larger size are squeezed out, repeated labels
become diagonals, and labels no one else needs are summed. Then operands are contracted pairwise in
a greedy order (the pair whose result is smallest first), each step one ``dot_general`` whose batch
dimensions are the labels both operands share and something later still needs.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ..lax.precision import canonicalize_precision
from ..lax.sharding import takes_out_sharding
from ._util import check_arraylike, is_array, promote_dtypes

__all__ = ["einsum", "einsum_path"]


def _err(msg: str) -> ValueError:
    return ValueError(f"kiln.numpy.einsum: {msg}")


def _label_name(label: int) -> str:
    return chr(label) if label >= 0 else "..."


def _parse_term(term: str, where: str, subscripts: str) -> list[Any]:
    """A term as a list of letters and at most one Ellipsis."""
    out: list[Any] = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise _err(f"invalid '.' in {where} of subscripts {subscripts!r}: an ellipsis is written '...'")
            if Ellipsis in out:
                raise _err(f"{where} of subscripts {subscripts!r} has more than one ellipsis '...'")
            out.append(Ellipsis)
            i += 3
            continue
        out.append(c)  # any other character is a label, as in JAX's (opt_einsum's) parser: "bd,3dk->b3k"
        i += 1
    return out


class _Spec:
    """Parsed subscripts: per-operand labels, output labels and the size of each label."""

    def __init__(self, terms: list[list[int]], output: list[int], sizes: dict[int, int], text: str):
        self.terms, self.output, self.sizes, self.text = terms, output, sizes, text


def _parse(subscripts: str, shapes: Sequence[tuple[int, ...]]) -> _Spec:
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise _err(f"subscripts {subscripts!r} contain more than one '->'")
    if "->" in text:
        lhs, rhs = text.split("->")
    else:
        lhs, rhs = text, None
    if "-" in lhs or ">" in lhs or (rhs is not None and ("-" in rhs or ">" in rhs)):
        raise _err(f"invalid '-' or '>' in subscripts {subscripts!r} (the output is introduced by '->')")
    if rhs is not None and "," in rhs:
        raise _err(f"the output of subscripts {subscripts!r} cannot contain ','")
    raw_terms = lhs.split(",")
    if len(raw_terms) != len(shapes):
        raise _err(f"subscripts {subscripts!r} name {len(raw_terms)} operand(s) but {len(shapes)} were given")
    parsed = [_parse_term(t, f"operand {i}", subscripts) for i, t in enumerate(raw_terms)]
    # Ellipsis dimensions: right-aligned, labelled -1 - position (positions count from the left).
    n_ell = []
    for i, (p, s) in enumerate(zip(parsed, shapes)):
        letters = len(p) - (1 if Ellipsis in p else 0)
        if Ellipsis in p:
            if len(s) < letters:
                raise _err(f"operand {i} has {len(s)} dimension(s) but its subscripts {raw_terms[i]!r} name "
                           f"{letters} (besides '...')")
            n_ell.append(len(s) - letters)
        else:
            if len(s) != letters:
                raise _err(f"operand {i} has {len(s)} dimension(s) but its subscripts {raw_terms[i]!r} name "
                           f"{letters}")
            n_ell.append(0)
    E = builtins.max(n_ell, default=0)
    terms: list[list[int]] = []
    for p, e in zip(parsed, n_ell):
        labels: list[int] = []
        for t in p:
            if t is Ellipsis:
                labels.extend(-1 - (E - e + k) for k in range(e))
            else:
                labels.append(ord(t))
        terms.append(labels)
    ell_labels = [-1 - k for k in range(E)]
    # Sizes: equal, or 1 (broadcast) across operands; equal within one operand (a diagonal).
    sizes: dict[int, int] = {}
    first: dict[int, int] = {}
    for i, (labels, s) in enumerate(zip(terms, shapes)):
        own: dict[int, int] = {}
        for lab, d in zip(labels, s):
            if lab in own and own[lab] != d:
                raise _err(f"label {_label_name(lab)!r} is repeated in operand {i} with different sizes "
                           f"({own[lab]} and {d}); a repeated label takes a diagonal, which needs equal sizes")
            own[lab] = d
            prev = sizes.get(lab)
            if prev is None or (prev == 1 and d != 1):
                sizes[lab], first[lab] = d, i
            elif d not in (1, prev):
                raise _err(f"size of label {_label_name(lab)!r} in operand {i} ({d}) does not match its size in "
                           f"operand {first[lab]} ({prev})")
    for lab in ell_labels:
        sizes.setdefault(lab, 1)
    counts: dict[int, int] = {}
    for labels in terms:
        for lab in labels:
            counts[lab] = counts.get(lab, 0) + 1
    if rhs is None:
        output = ell_labels + sorted(lab for lab, c in counts.items() if lab >= 0 and c == 1)
    else:
        out_p = _parse_term(rhs, "the output", subscripts)
        output = []
        for t in out_p:
            if t is Ellipsis:
                output.extend(ell_labels)
                continue
            lab = ord(t)
            if lab not in counts:
                raise _err(f"output label {t!r} of subscripts {subscripts!r} does not appear in any operand")
            if lab in output:
                raise _err(f"output label {t!r} appears more than once in subscripts {subscripts!r}")
            output.append(lab)
    return _Spec(terms, output, sizes, text)


# ---------------------------------------------------------------------------------------------
# Planning (static: labels and sizes only)
# ---------------------------------------------------------------------------------------------

def _size(labels, sizes) -> int:
    n = 1
    for lab in labels:
        n *= sizes[lab]
    return n


def _summed_labels(spec: _Spec, i: int) -> list[int]:
    """Labels of operand ``i`` that neither another operand nor the output has: summed out first."""
    others = set(spec.output)
    for j, t in enumerate(spec.terms):
        if j != i:
            others.update(t)
    return [lab for lab in dict.fromkeys(spec.terms[i]) if lab not in others]


def _greedy_path(terms: list[list[int]], output: list[int], sizes: dict[int, int], optimize) -> list[tuple[int, int]]:
    """Pairwise contraction order: greedy (smallest intermediate first) or left to right."""
    terms = [list(t) for t in terms]
    path = []
    while len(terms) > 1:
        if not optimize:
            i, j = 0, 1
        else:
            best = None
            for i_ in range(len(terms)):
                for j_ in range(i_ + 1, len(terms)):
                    res = _pair_result(terms, i_, j_, output)
                    r = _size(res, sizes)
                    key = (r, r - _size(terms[i_], sizes) - _size(terms[j_], sizes), i_, j_)
                    if best is None or key < best[0]:
                        best = (key, i_, j_)
            _, i, j = best
        res = _pair_result(terms, i, j, output)
        path.append((i, j))
        new = [t for k, t in enumerate(terms) if k not in (i, j)]
        if optimize:
            new.append(res)
        else:
            new.insert(0, res)
        terms = new
    return path


def _pair_result(terms, i: int, j: int, output) -> list[int]:
    """Labels of the contraction of operands i and j: those still needed, in dot_general's order."""
    keep = set(output)
    for k, t in enumerate(terms):
        if k not in (i, j):
            keep.update(t)
    li, lj = terms[i], terms[j]
    batch = [lab for lab in li if lab in lj and lab in keep]
    free_i = [lab for lab in li if lab not in lj and lab in keep]
    free_j = [lab for lab in lj if lab not in li and lab in keep]
    return batch + free_i + free_j


# ---------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------

def _reduce_labels(x, labels: list[int], drop: set[int]):
    """Sum ``x`` over the axes whose labels are in ``drop``."""
    axes = tuple(k for k, lab in enumerate(labels) if lab in drop)
    if not axes:
        return x, labels
    dt = abstractify(x).dtype
    x = (lax.reduce_or if dt == np.bool_ else lax.reduce_sum)(x, axes)
    return x, [lab for lab in labels if lab not in drop]


def _prepare(spec: _Spec, i: int, x):
    """Operand ``i`` with broadcast size-1 axes squeezed, repeated labels made diagonals, and labels no
    other operand or the output needs summed out."""
    from .creation import diagonal
    labels = list(spec.terms[i])
    shape = abstractify(x).shape
    squeeze = [k for k, (lab, d) in enumerate(zip(labels, shape)) if d == 1 and spec.sizes[lab] != 1]
    if squeeze:
        x = lax.reshape(x, tuple(d for k, d in enumerate(shape) if k not in squeeze))
        labels = [lab for k, lab in enumerate(labels) if k not in squeeze]
    while True:
        dup = next((lab for lab in labels if labels.count(lab) > 1), None)
        if dup is None:
            break
        k1 = labels.index(dup)
        k2 = labels.index(dup, k1 + 1)
        x = diagonal(x, 0, k1, k2)
        labels = [lab for k, lab in enumerate(labels) if k not in (k1, k2)] + [dup]
    return _reduce_labels(x, labels, set(_summed_labels(spec, i)))


def _contract(x, lx: list[int], y, ly: list[int], keep: set[int], preferred, precision=None):
    """One pairwise step: a dot_general with shared kept labels as batch dimensions."""
    # Labels of one side that nothing else needs are summed first.
    x, lx = _reduce_labels(x, lx, {lab for lab in lx if lab not in ly and lab not in keep})
    y, ly = _reduce_labels(y, ly, {lab for lab in ly if lab not in lx and lab not in keep})
    batch = [lab for lab in lx if lab in ly and lab in keep]
    contract = [lab for lab in lx if lab in ly and lab not in keep]
    dims = ((tuple(lx.index(lab) for lab in contract), tuple(ly.index(lab) for lab in contract)),
            (tuple(lx.index(lab) for lab in batch), tuple(ly.index(lab) for lab in batch)))
    out = lax.dot_general(x, y, dims, precision=precision,
                          preferred_element_type=abstractify(x).dtype if preferred is None else preferred)
    labels = batch + [lab for lab in lx if lab not in ly] + [lab for lab in ly if lab not in lx]
    return out, labels


def _interleaved(args) -> tuple[str, list[Any]]:
    """``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as subscripts and operands."""
    args = list(args)
    out_sub = args.pop() if len(args) % 2 else None
    operands, terms = args[0::2], args[1::2]
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def conv(sub) -> str:
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            elif isinstance(v, (int, np.integer)) and 0 <= int(v) < len(alphabet):
                s += alphabet[int(v)]
            else:
                raise _err(f"sublist labels must be ints in [0, 52) or Ellipsis, got {v!r}")
        return s
    subscripts = ",".join(conv(t) for t in terms)
    if out_sub is not None:
        subscripts += "->" + conv(out_sub)
    return subscripts, operands


def _is_sublist(v) -> bool:
    """A label list of the interleaved form: a list or tuple (of ints and Ellipsis, which ``_interleaved``
    checks), or a 1-D NumPy integer array."""
    return isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iu")


def _describe(v) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"{type(v).__name__} of shape {tuple(v.shape)} and dtype {v.dtype}"
    return f"{type(v).__name__} {v!r:.60}"


def _check_interleaved(fname: str, args: tuple) -> None:
    """``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])``: the first argument is an operand and each
    operand is followed by its label list. Anything else is a first argument that is neither form."""
    what = (f"kiln.numpy.{fname}: the first argument must be a subscripts string such as 'ij,jk->ik', or "
            "operands interleaved with their axis-label lists (einsum(a, [0, 1], b, [1, 2]))")
    first = args[0]
    if isinstance(first, bytes):
        raise TypeError(f"{what}; got bytes {first!r:.60}: decode it to a str")
    if not (is_array(first) or isinstance(first, (np.ndarray, np.generic, int, float, complex))):
        raise TypeError(f"{what}; got {_describe(first)}")
    if len(args) == 1:
        raise TypeError(f"{what}; got only {_describe(first)}, with no subscripts and no label list")
    for k in range(1, len(args), 2):
        if not _is_sublist(args[k]):
            raise TypeError(f"{what}; got {_describe(args[k - 1])} followed by {_describe(args[k])}, not by a label "
                            "list")
    last = args[-1]
    if len(args) % 2 and not _is_sublist(last):
        if isinstance(last, str):
            raise TypeError(f"{what}; the output labels (the last argument) must be a list too, got str {last!r}")
        raise TypeError(f"{what}; got {_describe(last)} as the last argument, with no label list after it")


def _spec_and_operands(fname: str, subscripts, operands):
    if not isinstance(subscripts, str):
        _check_interleaved(fname, (subscripts,) + tuple(operands))
        subscripts, operands = _interleaved((subscripts,) + tuple(operands))
    operands = list(operands)
    if not operands:
        raise ValueError(f"kiln.numpy.{fname}: needs at least one operand")
    for k, op in enumerate(operands):
        try:
            check_arraylike(fname, op)
        except TypeError as e:
            raise TypeError(f"kiln.numpy.{fname}: operand {k} is not an array ({e})") from None
    shapes = [abstractify(op).shape for op in operands]
    return _parse(subscripts, shapes), operands


_AUTO = "auto"


@takes_out_sharding
def einsum(subscripts, *operands, out=None, optimize=_AUTO, precision=None, preferred_element_type=None,
           _dot_general=None):
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', x, y)``.

    Supports explicit (``->``) and implicit outputs, ``...`` broadcasting, repeated labels within an
    operand (diagonals and traces), size-1 broadcasting, and the interleaved form
    ``einsum(x, [0, 1], y, [1, 2], [0, 2])``. ``optimize`` (default on) picks a greedy pairwise order;
    ``optimize=False`` contracts left to right. ``precision`` (as :func:`kiln.lax.dot_general`'s) applies
    to every pairwise ``dot_general``, as in JAX.
    """
    if not isinstance(subscripts, str):  # the interleaved form: as subscripts, for the one compiled program
        _check_interleaved("einsum", (subscripts,) + operands)
        subscripts, operands = _interleaved((subscripts,) + operands)
    if out is None and optimize is _AUTO and precision is None and preferred_element_type is None \
            and _dot_general is None:
        return _einsum(subscripts, *operands)  # (no keywords: the shortest match of a recent signature)
    return _einsum(subscripts, *operands, out=out, optimize=optimize, precision=precision,
                   preferred_element_type=preferred_element_type, _dot_general=_dot_general)


# Called eagerly, one compiled program per subscripts, operand types and options (as JAX's jitted einsum): parsing
# and the contraction order run at trace time, not at every call (64 µs a call before, op by op; now 6).
def _einsum_program(subscripts, *operands, out=None, optimize=_AUTO, precision=None, preferred_element_type=None,
            _dot_general=None):
    if out is not None:
        raise TypeError("kiln.numpy.einsum: out= is not supported (kiln arrays are immutable)")
    canonicalize_precision("numpy.einsum", precision)
    spec, operands = _spec_and_operands("einsum", subscripts, operands)
    ops = [materialize(x) for x in promote_dtypes("einsum", *operands)]
    preferred = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    if preferred is not None:
        ops = [lax.convert_element_type(x, preferred) for x in ops]
    prepared = [_prepare(spec, i, x) for i, x in enumerate(ops)]
    items = [(x, labels) for x, labels in prepared]
    explicit = isinstance(optimize, (list, tuple))
    if explicit:
        path = _explicit_path(optimize, len(items))
    else:
        path = _greedy_path([labels for _, labels in items], spec.output, spec.sizes, _optimize_flag(optimize))
    for i, j in path:
        keep = set(spec.output)
        for k, (_, labels) in enumerate(items):
            if k not in (i, j):
                keep.update(labels)
        if len(items) == 2 and _pair_result([items[1][1], items[0][1]], 0, 1, spec.output) == spec.output:
            i, j = j, i  # the last step in the order that needs no final transpose
        res = _contract(items[i][0], items[i][1], items[j][0], items[j][1], keep, None, precision)
        rest = [it for k, it in enumerate(items) if k not in (i, j)]
        items = rest + [res] if explicit or _optimize_flag(optimize) else [res] + rest
    x, labels = items[0]
    x, labels = _reduce_labels(x, labels, {lab for lab in labels if lab not in spec.output})
    return lax.transpose(x, tuple(labels.index(lab) for lab in spec.output))


_einsum_program.__name__ = _einsum_program.__qualname__ = "einsum"  # (what compile logs and profiles show)
_einsum = eager_jit("subscripts", "out", "optimize", "precision", "preferred_element_type", "_dot_general",
                    where="kiln.numpy.einsum")(_einsum_program)


def _optimize_flag(optimize) -> bool:
    if optimize in (False, None, "none"):
        return False
    if optimize in (True, "auto", "greedy", "optimal", "dp", "auto-hq", "branch-2", "branch-all", "eager"):
        return True
    raise ValueError(f"kiln.numpy.einsum: optimize must be a bool or one of 'auto', 'greedy', 'optimal', "
                     f"got {optimize!r}")


def _explicit_path(optimize, n: int) -> list[tuple[int, int]]:
    """An explicit contraction path (``einsum_path``'s, JAX's ``[(i, j), ...]``, or NumPy's with a leading
    ``'einsum_path'``): each step contracts operands ``i`` and ``j`` of the current list and appends the
    result; the steps must leave one operand."""
    steps = list(optimize[1:] if optimize and optimize[0] == "einsum_path" else optimize)
    path = []
    for step in steps:
        pair = tuple(step) if isinstance(step, (list, tuple)) else None
        if pair is None or len(pair) != 2 or not all(isinstance(k, (int, np.integer)) for k in pair):
            raise NotImplementedError(f"kiln.numpy.einsum: an explicit path takes pairs of operand positions, got "
                                      f"step {step!r}")
        i, j = sorted(int(k) for k in pair)
        if i == j or i < 0 or j >= n:
            raise ValueError(f"kiln.numpy.einsum: path step {step!r} does not name two of the {n} operands left")
        path.append((i, j))
        n -= 1
    if n != 1:
        raise ValueError(f"kiln.numpy.einsum: the explicit path leaves {n} operands; its steps must contract them "
                         "to one")
    return path


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The pairwise contraction order :func:`einsum` uses, as ``(path, description)``.

    ``path`` is ``[(i, j), ...]`` (JAX's, opt_einsum's format; ``einsum(..., optimize=path)`` takes it, and
    NumPy's ``['einsum_path', ...]`` too): at each step operands ``i`` and ``j`` of the current list are
    contracted and the result appended to the end.
    """
    spec, operands = _spec_and_operands("einsum_path", subscripts, operands)
    terms = []
    for i in range(len(spec.terms)):
        summed = _summed_labels(spec, i)
        terms.append([lab for lab in dict.fromkeys(spec.terms[i]) if lab not in summed])
    flag = _optimize_flag(optimize)
    path = _greedy_path(terms, spec.output, spec.sizes, flag)
    naive = _size(set(lab for t in spec.terms for lab in t), spec.sizes)
    lines = [f"  Complete contraction:  {spec.text}", f"  Naive FLOP count (approximate):  {naive:.3e}"]
    cur = [list(t) for t in terms]
    largest = builtins.max([_size(t, spec.sizes) for t in cur], default=1)
    for i, j in path:
        res = _pair_result(cur, i, j, spec.output)
        largest = builtins.max(largest, _size(res, spec.sizes))
        names = ",".join("".join(_label_name(lab) if lab >= 0 else "" for lab in cur[k]) for k in (i, j))
        lines.append(f"  contract {i}, {j}: {names} -> {''.join(_label_name(lab) for lab in res if lab >= 0)}")
        rest = [t for k, t in enumerate(cur) if k not in (i, j)]
        cur = rest + [res] if flag else [res] + rest
    lines.insert(2, f"  Largest intermediate:  {largest:.3e} elements")
    return list(path), "\n".join(lines)
