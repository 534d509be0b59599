"""The ``eqn_count_pprof`` dump (JAX's ``jax_dump_ir_modes=eqn_count_pprof``): how many equations each line of
the user's code put into a program, written as a pprof profile (``pprof -top FILE``) by the runtime's IR dumps.
A program that is slow to trace or compile because a Python loop unrolled into thousands of equations shows
that loop's line at the top.

Each equation counts once at the user's line that made it (its ``source``: kiln keeps that one frame, so a
sample's stack is that line alone), per primitive; the equations of sub-IRs (a jitted function called inside,
a loop's body) count too, once per equation that holds them, as JAX's profile counts them.
"""
from __future__ import annotations

import collections
from typing import Iterator

from kiln import runtime

from ..core.ir import IR, ClosedIR, Eqn


def _equations(ir: IR) -> Iterator[Eqn]:
    for eqn in ir.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, (IR, ClosedIR)):
                    yield from _equations(sub.ir if isinstance(sub, ClosedIR) else sub)


def equation_counts(ir: IR) -> list[tuple[tuple | None, str, int]]:
    """``(location, primitive name, count)`` for the equations of ``ir``; a location is (file name, the function's
    qualified name, its first line, the line), None for equations made by no line of the user's."""
    counts: collections.Counter = collections.Counter()
    for eqn in _equations(ir):
        src = eqn.source
        code = None if src is None else src.code
        where = None if code is None else (code.co_filename, code.co_qualname, code.co_firstlineno, src.line)
        counts[where, eqn.prim.name] += 1
    return [(where, primitive, n) for (where, primitive), n in counts.items()]


def dump(ir: IR, name: str) -> None:
    """Write the equation-count profile of ``ir`` (the program of function ``name``) when that mode is dumped."""
    if runtime.ir_dump.enabled("eqn_count_pprof"):
        runtime.ir_dump.dump_eqn_count_pprof(name, equation_counts(ir), comment=name)
