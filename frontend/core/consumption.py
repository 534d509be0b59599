"""Values that may be consumed once (typed PRNG keys under ``debug_key_reuse``) and the traces that change
what "once" means: a loop body runs many times, so a key it closes over is consumed on every iteration, and
the branches of a cond are alternatives, so each may consume the same key.

The control-flow floor marks those traces here; ``kiln.random`` (a floor above) reads the marks when a
key is consumed. An object that is consumed records itself with :func:`record` and has a ``_consumed``
attribute that :func:`alternatives` may set back.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator

from .errors import KeyReuseError
from .tree_util import user_leaves_with_path

# How many loop bodies enclose the code being traced now.
_loop_depth: contextvars.ContextVar[int] = contextvars.ContextVar("kiln_loop_depth", default=0)
# The objects consumed in the branch being traced now (None outside any cond branch).
_branch_log: contextvars.ContextVar[list | None] = contextvars.ContextVar("kiln_branch_log", default=None)

loop_depth = _loop_depth.get


@contextlib.contextmanager
def loop_body() -> Iterator[None]:
    """Around the trace of a body that runs repeatedly (scan, while_loop, fori_loop)."""
    token = _loop_depth.set(_loop_depth.get() + 1)
    try:
        yield
    finally:
        _loop_depth.reset(token)


def check_carry(what: str, carry: Any) -> None:
    """Raise when a loop body returns, in its carry, a key it consumed: the next iteration would consume it
    again."""
    if any(getattr(leaf, "_consumed", False) for _, leaf in user_leaves_with_path(carry)):
        raise KeyReuseError(f"{what}: the loop body returns in its carry a PRNG key it consumed, so the next "
                            "iteration consumes it again (debug_key_reuse is on). Split the key in the body and "
                            "return one of the new keys: key, subkey = kiln.random.split(key). See "
                            "https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError")


def consumed_leaves(tree: Any) -> tuple[int, ...]:
    """The positions, among the leaves users see in ``tree`` (a key array is one), of the consumed ones: the
    arguments a traced function consumed."""
    return tuple(i for i, (_, leaf) in enumerate(user_leaves_with_path(tree)) if getattr(leaf, "_consumed", False))


def consume_arguments(where: str, tree: Any, positions: tuple[int, ...], label: Callable[[int], str]) -> None:
    """Consume the leaves of ``tree`` at ``positions`` (those :func:`consumed_leaves` found when the function
    was traced); raise if one already was. ``label(i)`` names leaf ``i`` in the message."""
    leaves = [leaf for _, leaf in user_leaves_with_path(tree)]
    for i in positions:
        if leaves[i]._consumed:
            raise KeyReuseError(f"{where}: {label(i)} is a previously-consumed PRNG key, and the function consumes "
                                "it (debug_key_reuse is on): a call draws from it again. Split it once per use: "
                                "key, subkey = kiln.random.split(key). See "
                                "https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError")
    for i in positions:
        leaves[i]._consumed = True
        record(leaves[i])


def record(obj: Any) -> None:
    """Note that ``obj`` was consumed (for an enclosing :func:`alternatives`)."""
    log = _branch_log.get()
    if log is not None:
        log.append(obj)


@contextlib.contextmanager
def alternatives() -> Iterator[Callable[[], contextlib.AbstractContextManager]]:
    """Around the traces of a cond's branches: ``with alternatives() as branch:``, then ``with branch():``
    around each. Each branch starts from the consumption state before the first; after the last, what any
    branch consumed is consumed."""
    consumed: list = []

    @contextlib.contextmanager
    def branch() -> Iterator[None]:
        log: list = []
        token = _branch_log.set(log)
        try:
            yield
        finally:
            _branch_log.reset(token)
            for obj in log:
                obj._consumed = False
            consumed.extend(log)

    yield branch
    for obj in consumed:
        obj._consumed = True
        record(obj)
