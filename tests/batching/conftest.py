"""Shared helpers of the vmap tests (as fixtures): the Python-loop oracle, and a recorder of which
batching rules ran.

``check_vmap(f, examples, in_axes, out_axes=0)``: ``examples`` is a list (one entry per batch
element) of argument lists. The mapped arguments are stacked along their ``in_axes``; an argument
with ``in_axes`` None is the first example's. Asserts that ``vmap(f, in_axes, out_axes)`` equals
``f`` applied to each batch element in a Python loop, stacked along ``out_axes``.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import kiln


def stack_args(examples, in_axes):
    """The arguments of the batched call: each mapped argument stacked along its axis."""
    out = []
    for i, ax in enumerate(in_axes):
        if ax is None:
            out.append(examples[0][i])
        else:
            out.append(np.moveaxis(np.stack([np.asarray(e[i]) for e in examples]), 0, ax))
    return out


def loop_reference(f, examples, in_axes, out_axes):
    """``f`` per batch element (unmapped arguments from the first example), stacked along ``out_axes``."""
    outs = [f(*[e[i] if ax is not None else examples[0][i] for i, ax in enumerate(in_axes)]) for e in examples]
    return kiln.tree_util.tree_map(lambda *xs: np.moveaxis(np.stack([np.asarray(x) for x in xs]), 0, out_axes),
                                   *outs)


def assert_trees_close(got, want, rtol=2e-5, atol=2e-5):
    g_leaves, g_tree = kiln.tree_util.tree_flatten(got)
    w_leaves, w_tree = kiln.tree_util.tree_flatten(want)
    assert g_tree == w_tree, (g_tree, w_tree)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def check_vmap(f, examples, in_axes, out_axes=0, rtol=2e-5, atol=2e-5):
    in_axes = tuple(in_axes)
    got = kiln.vmap(f, in_axes=in_axes, out_axes=out_axes)(*stack_args(examples, in_axes))
    want = loop_reference(f, examples, in_axes, out_axes)
    assert_trees_close(got, want, rtol=rtol, atol=atol)
    return got


@contextlib.contextmanager
def recording_batch_rules():
    """Yields the set of names of the primitives whose batching rule runs inside the block."""
    from kiln.frontend.batching.core import batch_rules

    seen: set[str] = set()
    saved = dict(batch_rules)

    def wrap(prim, rule):
        def recording(*args, **kwargs):
            seen.add(prim.name)
            return rule(*args, **kwargs)
        return recording

    batch_rules.update({p: wrap(p, r) for p, r in saved.items()})
    try:
        yield seen
    finally:
        batch_rules.update(saved)


@pytest.fixture(scope="session")
def vm():
    """The helpers above, as one namespace."""
    class Helpers:
        pass
    h = Helpers()
    for fn in (stack_args, loop_reference, assert_trees_close, check_vmap, recording_batch_rules):
        setattr(h, fn.__name__, staticmethod(fn))
    return h
