"""kiln against JAX, side by side in one process: ``python benchmarks/run.py [--quick] [-k NAME] [--backend B]``.

Prints a markdown table (benchmark | kiln | jax | kiln/jax). JAX is measured only where it is
importable (``nox -s bench`` installs the jax release matching the installed jaxlib); kiln itself
never imports jax. Every number is a median after warm-up, with results waited for (the best of ``--rounds`` rounds).
The benchmarks themselves are in ``cases.py``.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import CASES  # noqa: E402
from frameworks import load_jax, load_kiln  # noqa: E402

_SCALE = {"us": 1e6, "ms": 1e3}
_UNIT_TEXT = {"us": "µs", "ms": "ms"}


def _fmt(seconds: float | None, unit: str) -> str:
    if seconds is None:
        return "n/a"
    value = seconds * _SCALE[unit]
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {_UNIT_TEXT[unit]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke test, noisy numbers)")
    parser.add_argument("-k", dest="select", default=None, help="run only benchmarks whose name contains this")
    parser.add_argument("--backend", default=None, help="backend for both frameworks (default: their best)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per benchmark; the best median counts")
    parser.add_argument("--no-jax", action="store_true", help="measure kiln only, even if jax is installed")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be positive, got {args.rounds}")

    kiln_fw = load_kiln(args.backend)
    jax_fw = None if args.no_jax else load_jax(args.backend)
    frameworks = [kiln_fw] + ([jax_fw] if jax_fw is not None else [])
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    from jaxlib import version as jaxlib_version
    print(f"jaxlib {jaxlib_version.__version__}")
    for fw in frameworks:
        print(f"{fw.name} {fw.version} on {fw.device}")
    if jax_fw is None:
        print("jax not installed: measuring kiln only" if not args.no_jax else "--no-jax: measuring kiln only")
    print()

    cases = [c for c in CASES if args.select is None or args.select.lower() in c.name.lower()]
    if not cases:
        print(f"no benchmark name contains {args.select!r}", file=sys.stderr)
        return 2
    rows = []
    start = time.perf_counter()
    for case in cases:
        # Rounds alternate the order (kiln, jax, then jax, kiln) and the best median counts, so that a
        # burst of load from elsewhere on the machine or a warm-up effect does not favour one side.
        samples: dict[str, list[float | None]] = {fw.name: [] for fw in frameworks}
        for r in range(args.rounds):
            for fw in (frameworks if r % 2 == 0 else frameworks[::-1]):
                samples[fw.name].append(case.run(fw, args.quick))
        results = {name: None if None in vals else min(vals) for name, vals in samples.items()}
        k, j = results.get("kiln"), results.get("jax")
        ratio = f"{k / j:.2f}" if k is not None and j is not None else "n/a"
        rows.append((case.name, _fmt(k, case.unit), _fmt(j, case.unit) if jax_fw else "n/a", ratio))
        print(f"  {case.name}: " + ", ".join(f"{n} {_fmt(v, case.unit)}" for n, v in results.items()),
              file=sys.stderr, flush=True)

    header = ("benchmark", "kiln", "jax", "kiln/jax")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        print("| " + " | ".join(cells) + " |")
    print(f"\n(total {time.perf_counter() - start:.1f} s; kiln/jax < 1 means kiln is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
