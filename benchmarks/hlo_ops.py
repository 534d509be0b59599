"""What the benchmark programs compile to, kiln against JAX: operation counts, not times.

``python benchmarks/hlo_ops.py [--dump DIR] [-k NAME]`` prints, for the MLP train step, the stax + adam step
and the RNN's forward and value_and_grad (the programs of the timing rows in ``cases.py``, same shapes), how many
operations each framework emits (StableHLO, before XLA) and how many are left after XLA's optimizations
(optimized HLO instructions, and kernels among them), with the count of each kind of operation where the two
differ; ``--dump DIR`` writes the four texts per program (``DIR/<program>.<framework>.{stablehlo,hlo}.txt``)
for reading the differences.
``cases.py`` shows the totals as table rows (unit "ops": kiln/jax < 1 means kiln emits fewer).

How the counts are taken (the same way on both sides):

* **optimized HLO** (``jit(f).lower(*args).compile().as_text()``): every instruction of every computation in
  the module (``name = type opcode(...)``, ``ROOT`` included): the entry computation, the bodies of fusions,
  loops and conditionals, and reducers. ``parameter`` instructions are not counted (they name inputs and do no
  work; a fusion's parameter count depends only on how XLA cut the fusions). A fusion counts once as an
  instruction of its caller and its body's instructions count too, so fusing neither adds nor removes work;
  ``kernels`` counts what runs one after the other: the instructions of
  the entry computation and of loop and branch bodies (not of the computations fusions and reductions call),
  but not ``parameter``, ``constant``, ``tuple``, ``get-tuple-element`` or ``bitcast`` there.
* **StableHLO** (``jit(f).lower(*args).as_text()``): every operation in every function of the module
  (``%x = stablehlo.add ...``, ``"stablehlo.reduce"(...)``, ``func.call``, ...), without the terminators
  (``stablehlo.return``, ``func.return``) and the ``func.func`` headers.
"""
from __future__ import annotations

import argparse
import collections
import functools
import os
import re
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from frameworks import Framework  # noqa: E402

_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-]*)\(", re.M)
_HLO_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_STABLEHLO_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_]+\.[a-z_][\w.]*)\"?[\s(<{]")
_NOT_OPS = frozenset({"func.func", "func.return", "stablehlo.return", "sdy.return", "mhlo.return"})
_CALLED = re.compile(r"(?:calls|to_apply)=%?([\w.\-]+)")
_NOT_KERNELS = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})


def hlo_counts(text: str) -> tuple[collections.Counter, int]:
    """(the opcode of each instruction of every computation, ``parameter`` left out; the number of kernels:
    the instructions of the entry computation and of loop and branch bodies, not of the computations that
    fusions and reductions call, that are not parameters, constants, tuples or bitcasts)."""
    called = set(_CALLED.findall(text))
    ops: collections.Counter = collections.Counter()
    kernels = 0
    inside_called = False
    for line in text.splitlines():
        head = _HLO_COMPUTATION.match(line)  # a computation's header (instructions are indented)
        if head is not None and not line[:1].isspace():
            inside_called = head.group(2) in called
            continue
        m = _HLO_INSTRUCTION.match(line)
        if m is None or m.group(1) == "parameter":
            continue
        ops[m.group(1)] += 1
        if not inside_called and m.group(1) not in _NOT_KERNELS:
            kernels += 1
    return ops, kernels


def stablehlo_counts(text: str) -> collections.Counter:
    """The name of each operation of every function (terminators and ``func.func`` left out)."""
    ops: collections.Counter = collections.Counter()
    for line in text.splitlines():
        m = _STABLEHLO_OP.match(line)
        if m is not None and m.group(1) not in _NOT_OPS:
            ops[m.group(1)] += 1
    return ops


# -- the programs (those of the timing rows in cases.py, same shapes) -------------------------------------------

def _mlp_step(fw: Framework):
    import cases
    return cases._mlp_train_step(fw), cases._mlp_data(fw), {}


def _stax_adam_step(fw: Framework):
    import cases
    program = cases.stax_adam_program(fw)
    return None if program is None else (*program, {"donate_argnums": (0, 1)})


def _rnn(make_name: str):
    def build(fw: Framework):
        import cases
        if fw.lax is None or fw.value_and_grad is None:
            return None
        return getattr(cases, make_name)(fw), cases._rnn_data(fw), {}
    return build


PROGRAMS: dict[str, Callable[[Framework], Any]] = {
    "MLP train step (value_and_grad + SGD)": _mlp_step,
    "MLP train step: stax + adam": _stax_adam_step,
    "RNN forward (scan)": _rnn("_rnn_loss"),
    "RNN value_and_grad (scan)": _rnn("_rnn_grad"),
}


@functools.lru_cache(maxsize=None)
def _texts(fw_name: str, program: str, fw: Framework) -> tuple[str, str] | None:
    built = PROGRAMS[program](fw)
    if built is None:
        return None
    fn, args, jit_kwargs = built
    lowered = fw.jit(fn, **jit_kwargs).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


def texts(fw: Framework, program: str) -> tuple[str, str] | None:
    """(StableHLO, optimized HLO) of ``program`` in ``fw``, lowered and compiled once per process."""
    return _texts(fw.name, program, fw)


def count(program: str, which: str) -> Callable[[Framework, bool], float | None]:
    """A ``cases.Case`` function: the number of operations of ``program`` (``which``: "hlo" instructions after
    XLA's optimizations, "kernels" among them, "stablehlo" as emitted), counted as the module docstring says."""
    def bench(fw: Framework, quick: bool) -> float | None:
        got = texts(fw, program)
        if got is None:
            return None
        stablehlo, hlo = got
        if which == "hlo":
            return float(sum(hlo_counts(hlo)[0].values()))
        if which == "kernels":
            return float(hlo_counts(hlo)[1])
        return float(sum(stablehlo_counts(stablehlo).values()))
    return bench


def _differences(kiln_ops: collections.Counter, jax_ops: collections.Counter) -> str:
    keys = sorted(set(kiln_ops) | set(jax_ops), key=lambda k: (-abs(kiln_ops[k] - jax_ops[k]), k))
    return ", ".join(f"{k} {kiln_ops[k]}/{jax_ops[k]}" for k in keys if kiln_ops[k] != jax_ops[k]) or "none"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", default=None, help="write each program's StableHLO and optimized HLO here")
    parser.add_argument("-k", dest="select", default=None, help="only programs whose name contains this")
    args = parser.parse_args(argv)
    from frameworks import load_jax, load_kiln

    import kiln  # noqa: F401  (before jax, as run.py does)
    jax_fw, kiln_fw = load_jax(), load_kiln()
    if jax_fw is None:
        print("jax is not installed: nothing to compare with", file=sys.stderr)
        return 2
    for program in PROGRAMS:
        if args.select is not None and args.select.lower() not in program.lower():
            continue
        got = {fw.name: texts(fw, program) for fw in (kiln_fw, jax_fw)}
        if None in got.values():
            print(f"{program}: not available")
            continue
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            stem = re.sub(r"[^\w]+", "_", program).strip("_").lower()
            for name, (shlo, hlo) in got.items():
                for kind, text in (("stablehlo", shlo), ("hlo", hlo)):
                    with open(os.path.join(args.dump, f"{stem}.{name}.{kind}.txt"), "w") as f:
                        f.write(text)
        shlo = {name: stablehlo_counts(t[0]) for name, t in got.items()}
        hlo = {name: hlo_counts(t[1]) for name, t in got.items()}
        print(f"## {program}")
        print(f"StableHLO ops: kiln {sum(shlo['kiln'].values())}, jax {sum(shlo['jax'].values())}")
        print(f"  differences (kiln/jax): {_differences(shlo['kiln'], shlo['jax'])}")
        print(f"optimized HLO instructions: kiln {sum(hlo['kiln'][0].values())}, jax {sum(hlo['jax'][0].values())}; "
              f"kernels: kiln {hlo['kiln'][1]}, jax {hlo['jax'][1]}")
        print(f"  differences (kiln/jax): {_differences(hlo['kiln'][0], hlo['jax'][0])}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
