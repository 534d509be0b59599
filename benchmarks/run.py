"""kiln against JAX, side by side in one process: ``python benchmarks/run.py [--quick] [-k NAME] [--backend B]``.

Prints a markdown table (benchmark | kiln | jax | kiln/jax). JAX is measured only where it is
importable (``nox -s bench`` installs the jax release matching the installed jaxlib); kiln itself
never imports jax. Every number is a median after warm-up, with results waited for: for steady-state rows, of both
frameworks' batches interleaved (``--rounds`` times the row's repeats); for the others, the best of ``--rounds`` rounds.
The benchmarks themselves are in ``cases.py``; data sizes follow the device (1 GiB arrays on a GPU,
small ones on the CPU). ``--gpu`` selects issue 13's GPU suite (``--backend cuda --gpu`` on a GPU
machine); ``--list`` prints the selected names without running anything. Rows marked ↳ are rates
derived from the rows above them (higher is better). Rows in "ops" count the operations of a compiled
program instead of timing it (``hlo_ops.py``; fewer is better).

Large host arrays: by default glibc's malloc hands freed memory back to the operating system once the
free space at the top of its heap passes a threshold that it moves as it goes, and the next allocation
then page-faults its way back in. On the CPU backend an eager op on a million floats (a 4 MB buffer)
spent up to half its time in those faults, and how many it met changed from process to process
(kiln's eager SELU row read 1.7 to 3.8 ms in three runs, JAX's 1.9 to 3.9 ms in one process), for
both frameworks alike: it measured the heap's history, not kiln or JAX. So the bench fixes glibc's
thresholds for its own process (``mallopt``: less than 2 GB of free heap is never trimmed, blocks up
to 32 MB come from the heap), the same for both; ``--malloc default`` measures with glibc's defaults instead.
The rows with large buffers (``one_arena`` in cases.py: 6 Mi floats, random.normal of 4M, the GCN epoch, the
per-example gradients) run in a child process (this script, ``--one-arena-case``) whose threads all use the one
malloc arena (``M_ARENA_MAX`` 1, set before either backend starts a thread): with the arenas glibc adds for threads,
in half of the runs of the 6 Mi-float rows one framework or the other (not the same one from run to run)
page-faulted every page of each fresh output (6,145 faults per call: 9.0 ms instead of 1.5 ms), and JAX's
random.normal row met 11,719 faults per call (44 ms instead of 25 ms), its GCN row 15,266; with one arena none did.
The other rows keep glibc's arenas: with one arena for every thread, a program that XLA runs on its worker threads
while Python dispatches the next call waits on the arena's lock (eager matmul f32[64,64]: 14.6 µs instead of 9.5 µs
for kiln, 15.8 instead of 9.2 µs for JAX, in one run), and which framework waited longer changed from run to run
(the row read 0.88, 1.16 and 0.93 in three runs). The page faults per call are counted for the steady-state rows,
and the rows where the two frameworks' differ are listed under the table. Even so, blocks that the two frameworks'
interleaved allocations pushed past the heap's top page-faulted (1,229 faults per call in some batches of the
6 Mi-float rows, of either framework): the bench grows the heap by 1 GB and touches it before it measures, so
that such blocks land on pages already mapped.

Both frameworks share the device in one process, so GPU memory preallocation is off unless
``XLA_PYTHON_CLIENT_PREALLOCATE`` says otherwise (both read it): otherwise the first client to start
takes 75% of the GPU's memory and the second runs short.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import CASES, DERIVED, sizes_for, title  # noqa: E402
from frameworks import load_jax, load_kiln  # noqa: E402
from timing import Plan, interleaved_batches, medians, planning, ratio_interval  # noqa: E402

_GPU_NAMES = ("cuda", "rocm", "gpu")

# glibc's mallopt parameters (malloc.h) and the values the bench sets (see the docstring).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
# Trim only above 2 GB of free heap top (mallopt takes an int); 32 MB: the largest mmap threshold glibc takes.
_STEADY_MALLOC = ((_M_TRIM_THRESHOLD, 2**31 - 1), (_M_MMAP_THRESHOLD, 32 << 20))
_ONE_ARENA = ((_M_ARENA_MAX, 1),)  # one arena for every thread: the child process of the one_arena rows
_MALLOC_ENV = {_M_TRIM_THRESHOLD: "MALLOC_TRIM_THRESHOLD_", _M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_",
               _M_ARENA_MAX: "MALLOC_ARENA_MAX"}


def _steady_malloc(one_arena: bool = False) -> str:
    """Fix glibc's trim and mmap thresholds for this process (and, with ``one_arena``, give all its threads one
    arena); says what was done."""
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return "malloc: left as it is (no glibc mallopt here)"
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    settings = _STEADY_MALLOC + (_ONE_ARENA if one_arena else ())
    if not all(mallopt(param, value) == 1 for param, value in settings):
        return "malloc: glibc refused the steady thresholds; left as it is"
    # The same for the processes the bench starts (the 8-device rows, the first calls): glibc reads these at start.
    os.environ.update({_MALLOC_ENV[param]: str(value) for param, value in settings})
    _prefault_heap(ctypes.CDLL(None))
    return (f"malloc: glibc's trim and mmap thresholds fixed{', one arena' if one_arena else ''}, the heap grown by "
            f"{_PREFAULT_BYTES >> 20} MB and touched first, for both frameworks; the rows of large buffers in a "
            "child process with one arena (--malloc default: glibc's own everywhere)")


# How far the heap is grown (and its pages touched) before anything is measured: more than the steady rows hold
# at once (the 6 Mi-float rows: both frameworks' inputs and the outputs of the calls in flight, 24 MB each).
_PREFAULT_BYTES, _PREFAULT_BLOCK = 1 << 30, 24 << 20


def _prefault_heap(libc) -> None:
    """Grow the heap by _PREFAULT_BYTES in blocks below the mmap threshold, touch every page, and free them: the
    free space stays at the heap's top (nothing under 2 GB is trimmed), its pages mapped. Without it, a block
    that the two frameworks' buffers (one heap, allocations interleaved) happened to push past the heap's top
    met a page fault per 4 KB page: in one run of jit SELU f32[6Mi] a batch of either framework met 1,229 faults a
    call (6,145 in the batch's one call that grew the heap: 2.4 against 1.6 ms)."""
    import ctypes
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    blocks = [libc.malloc(_PREFAULT_BLOCK) for _ in range(_PREFAULT_BYTES // _PREFAULT_BLOCK)]
    for b in blocks:
        if b:
            ctypes.memset(b, 1, _PREFAULT_BLOCK)
    for b in reversed(blocks):
        if b:
            libc.free(b)

_SCALE = {"us": 1e6, "ms": 1e3}
_UNIT_TEXT = {"us": "µs", "ms": "ms"}


def _fmt(seconds: float | None, unit: str) -> str:
    """A row's value as the table shows it: seconds in µs or ms, or a count of operations (unit "ops")."""
    if seconds is None:
        return "n/a"
    if unit == "ops":
        return f"{seconds:.0f} ops"
    value = seconds * _SCALE[unit]
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {_UNIT_TEXT[unit]}"


def _mixed_checkouts() -> str | None:
    """Where ``kiln`` and its implementation packages come from different places, a message saying so.

    An editable install maps ``kiln.frontend``/``.lowering``/``.runtime`` to its own checkout, and a
    ``PYTHONPATH`` pointing at another checkout replaces only ``kiln`` itself: the numbers would then
    measure the installed checkout's implementation under the other one's name.
    """
    import kiln.frontend
    import kiln.lowering
    import kiln.runtime

    import kiln

    kiln_dir = os.path.dirname(os.path.abspath(kiln.__file__))
    for mod in (kiln.frontend, kiln.lowering, kiln.runtime):
        where = os.path.dirname(os.path.abspath(mod.__file__))
        if os.path.dirname(where) not in (kiln_dir, os.path.dirname(kiln_dir)):  # installed, or a checkout
            return (f"kiln is imported from {kiln_dir} but {mod.__name__} from {where} (an editable install of "
                    "another checkout; PYTHONPATH does not override it): measure a checkout with a Python "
                    "environment in which that checkout is installed (pip install -e .)")
    return None


def _measure(case, frameworks, rounds: int,
             quick: bool) -> tuple[dict[str, float | None], dict[str, float], tuple[float, float] | None]:
    """Seconds per framework for ``case`` (None where a framework lacks what it needs); for a steady-state case the
    page faults per call of each framework's batches (else an empty dict) and, with both frameworks, the 95%
    bootstrap interval of the kiln/jax ratio (``timing.ratio_interval``; else None).

    A steady-state case (one timed with ``per_call``) has the batches of its frameworks interleaved,
    ``rounds`` times its repeats of each (``timing.interleaved``). Any other case (tracing, compiling, a first
    call) runs whole ``rounds`` times, the order alternating (kiln, jax, then jax, kiln), and its best median
    counts. Either way a burst of load from elsewhere on the machine, or a warm-up effect, favours neither side.
    """
    first: dict[str, float | Plan | None] = {}
    with planning():
        for fw in frameworks:
            fw.enter()  # its process-wide jaxlib settings (frameworks.py)
            first[fw.name] = case.run(fw, quick)
    if any(isinstance(v, Plan) for v in first.values()):
        plans = {name: v for name, v in first.items() if isinstance(v, Plan)}
        samples, fault_samples = interleaved_batches(plans, {fw.name: fw.enter for fw in frameworks}, rounds)
        interval = ratio_interval(samples["kiln"], samples["jax"]) if {"kiln", "jax"} <= set(samples) else None
        return {**first, **medians(samples)}, medians(fault_samples), interval
    samples: dict[str, list[float | None]] = {name: [value] for name, value in first.items()}
    for r in range(1, rounds):
        for fw in (frameworks if r % 2 == 0 else frameworks[::-1]):
            fw.enter()
            samples[fw.name].append(case.run(fw, quick))
    return {name: None if None in vals else min(vals) for name, vals in samples.items()}, {}, None


def _measure_in_child(case, args, pending: list, measured: dict
                      ) -> tuple[dict[str, float | None], dict[str, float], tuple[float, float] | None]:
    """:func:`_measure` of ``case`` in a fresh interpreter running this script, whose threads share one malloc arena
    (see the docstring); both frameworks in that one process, as here. The first call measures every case of
    ``pending`` (the selected one-arena cases) in one child and keeps their results in ``measured``."""
    if case.name not in measured:
        cmd = [sys.executable, os.path.abspath(__file__), "--rounds", str(args.rounds)]
        for c in pending:
            cmd += ["--one-arena-case", c.name]
        cmd += (["--quick"] if args.quick else []) + (["--no-jax"] if args.no_jax else [])
        cmd += ["--backend", args.backend] if args.backend else []
        env = {**os.environ, _MALLOC_ENV[_M_ARENA_MAX]: "1"}  # read by glibc when the child starts
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"the one-arena child for {[c.name for c in pending]} failed "
                               f"(rc={proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        measured.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    m = measured.pop(case.name)
    return m["results"], m["faults"], None if m["interval"] is None else tuple(m["interval"])


def _faults_differ(faults: dict[str, float]) -> bool:
    """Whether the page faults per call of two frameworks differ enough to explain a difference in time: by more
    than 10 per call (a fault may be a 2 MB transparent huge page, zeroed by the kernel: a 24 MB buffer is 12) and
    by more than a factor of two."""
    if len(faults) < 2:
        return False
    low, high = min(faults.values()), max(faults.values())
    return high - low > 10 and high > 2 * low


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke test, noisy numbers)")
    parser.add_argument("-k", dest="select", default=None, help="run only benchmarks whose name contains this")
    parser.add_argument("--backend", default=None, help="backend for both frameworks (default: their best)")
    parser.add_argument("--gpu", action="store_true",
                        help="issue 13's GPU suite only: SELU, copy bandwidth, bf16 matmul, MLP step, RNN, "
                             "random.normal, per-example grads, jit dispatch")
    parser.add_argument("--list", action="store_true",
                        help="print the selected benchmarks (with the sizes for --backend; GPU sizes when it is "
                             "not given) and exit without loading kiln or jax")
    parser.add_argument("--rounds", type=int, default=3,
                        help="steady rows: this many times their batches, the frameworks' interleaved; other rows: "
                             "run this many times, the best median counts")
    parser.add_argument("--no-jax", action="store_true", help="measure kiln only, even if jax is installed")
    parser.add_argument("--malloc", choices=("steady", "default"), default="steady",
                        help="steady (default): fix glibc's trim and mmap thresholds, so that large-array rows "
                             "do not measure page faults that depend on the heap's history; default: glibc's own")
    parser.add_argument("--one-arena-case", action="append", default=None,
                        help=argparse.SUPPRESS)  # the child of _measure_in_child (one or more cases)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be positive, got {args.rounds}")

    def matches(case) -> bool:  # -k looks at the name with the sizes of either kind of device
        names = (case.name, title(case.name, "cpu"), title(case.name, "gpu"))
        return args.select is None or any(args.select.lower() in n.lower() for n in names)

    cases = [c for c in CASES if (not args.gpu or c.gpu) and matches(c)]
    if args.one_arena_case is not None:
        cases = [c for c in CASES if c.name in args.one_arena_case]
    if not cases:
        print(f"no benchmark name contains {args.select!r}", file=sys.stderr)
        return 2
    if args.list:
        platform_ = "cpu" if args.backend == "cpu" else "gpu"
        chosen = {c.name for c in cases}
        for case in cases:
            print(title(case.name, platform_))
            for d in DERIVED:
                if d.inputs[-1] == case.name and set(d.inputs) <= chosen:
                    print(title(d.name, platform_))
        return 0

    # Both clients in one process: neither may take 75% of the GPU up front (see the docstring).
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # The order matters twice. kiln is imported before jax, as its users have it: its C++ dispatch path
    # is set up only where jax is not loaded yet (runtime/fastpath.py). But jax's backends start before
    # kiln's: a PJRT plugin (CUDA) loads once per process, jax's loader fails (ALREADY_EXISTS) when
    # kiln loaded it first and jax then has no GPU, while kiln reuses a plugin that jax loaded.
    import kiln  # noqa: F401  (no backend starts on import)
    mixed = _mixed_checkouts()
    if mixed:
        print(f"warning: {mixed}", file=sys.stderr)
    # Before either backend starts its threads: a thread keeps the malloc arena it first got.
    child = args.one_arena_case is not None
    malloc = _steady_malloc(child) if args.malloc == "steady" else "malloc: glibc's defaults (--malloc default)"
    jax_fw = None if args.no_jax else load_jax(args.backend)
    kiln_fw = load_kiln(args.backend)
    frameworks = [kiln_fw] + ([jax_fw] if jax_fw is not None else [])
    if child:  # the cases measured for the parent (_measure_in_child), which prints them
        out = {}
        for case in cases:
            results, faults, interval = _measure(case, frameworks, args.rounds, args.quick)
            out[case.name] = {"results": results, "faults": faults, "interval": interval}
            print(f"  {case.name}: measured in the one-arena child", file=sys.stderr, flush=True)
        print(json.dumps(out))
        return 0
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    print(malloc)
    from jaxlib import version as jaxlib_version
    print(f"jaxlib {jaxlib_version.__version__}")
    for fw in frameworks:
        print(f"{fw.name} {fw.version} on {fw.device}")
    if jax_fw is None:
        print("jax not installed: measuring kiln only" if not args.no_jax else "--no-jax: measuring kiln only")
    if args.backend in _GPU_NAMES and kiln_fw.platform != "gpu":
        print(f"--backend {args.backend}: kiln runs on {kiln_fw.device}, not a GPU", file=sys.stderr)
        return 3
    if jax_fw is not None and jax_fw.platform != kiln_fw.platform:
        print(f"kiln runs on {kiln_fw.device} but jax on {jax_fw.device}: not comparable (name --backend)",
              file=sys.stderr)
        return 3
    print()

    rows = []
    fault_rows: list[str] = []  # steady rows whose frameworks met different numbers of page faults
    beyond_noise: list[str] = []  # steady rows whose ratio's interval lies on one side of 1
    seconds: dict[str, dict[str, float | None]] = {}  # case template -> framework -> seconds
    sizes = sizes_for(kiln_fw.platform)
    start = time.perf_counter()
    interrupted = False
    in_child: dict[str, dict] = {}  # the one-arena cases' results, measured by one child (_measure_in_child)
    try:
        for case in cases:
            name = title(case.name, kiln_fw.platform)
            if case.one_arena and args.malloc == "steady":
                pending = [c for c in cases if c.one_arena and c.name not in seconds]
                results, faults, interval = _measure_in_child(case, args, pending, in_child)
            else:
                results, faults, interval = _measure(case, frameworks, args.rounds, args.quick)
            if _faults_differ(faults):
                fault_rows.append(f"{name}: " + ", ".join(f"{n} {v:.0f}" for n, v in faults.items()))
            seconds[case.name] = results
            k, j = results.get("kiln"), results.get("jax")
            ratio = f"{k / j:.2f}" if k is not None and j is not None else "n/a"
            spread = f"{interval[0]:.2f}–{interval[1]:.2f}" if interval is not None else ""
            if interval is not None and (interval[0] > 1 or interval[1] < 1):
                beyond_noise.append(f"{name}: {ratio} ({spread})")
            rows.append((name, _fmt(k, case.unit), _fmt(j, case.unit) if jax_fw else "n/a", ratio, spread))
            faulted = f" (page faults per call: {', '.join(f'{n} {v:g}' for n, v in faults.items())})" if any(
                faults.values()) else ""
            print(f"  {name}: " + ", ".join(f"{n} {_fmt(v, case.unit)}" for n, v in results.items()) + faulted,
                  file=sys.stderr, flush=True)
            for d in DERIVED:
                if d.inputs[-1] == case.name and all(i in seconds for i in d.inputs):
                    values = {}
                    for fw in ("kiln", "jax"):
                        args_ = [seconds[i].get(fw) for i in d.inputs]
                        values[fw] = None if None in args_ else d.compute(sizes, *args_)
                    kv, jv = values["kiln"], values["jax"]
                    ratio = f"{kv / jv:.2f}" if kv is not None and jv is not None else "n/a"
                    rows.append((title(d.name, kiln_fw.platform), "n/a" if kv is None else d.fmt.format(kv),
                                 "n/a" if jv is None else d.fmt.format(jv), ratio, ""))
    except KeyboardInterrupt:  # a time limit (SIGINT): the table of what was measured so far
        interrupted = True
        print(f"interrupted after {len(seconds)} of {len(cases)} benchmarks", file=sys.stderr, flush=True)

    header = ("benchmark", "kiln", "jax", "kiln/jax", "95% interval")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        print("| " + " | ".join(cells) + " |")
    rates = "; in the ↳ rows (rates), > 1 does" if any(r[0].startswith("↳") for r in rows) else ""
    counts = "; in the ops rows (operations in the compiled program), < 1 means kiln emits fewer" if any(
        r[1].endswith(" ops") for r in rows) else ""
    if fault_rows:
        print("\nPage faults per call differ between the frameworks in these rows (each fault is a fresh page the "
              "allocator took from the operating system; a row's time may then measure the faults):")
        for line in fault_rows:
            print(f"- {line}")
    if beyond_noise:
        print("\nSteady rows whose 95% interval lies on one side of 1 (the batch-to-batch noise alone does not explain "
              "the difference; the other steady rows' ratios are within it):")
        for line in beyond_noise:
            print(f"- {line}")
    print(f"\n(total {time.perf_counter() - start:.1f} s; kiln/jax < 1 means kiln is faster{rates}{counts}; "
          "95% interval: a bootstrap interval of a steady row's kiln/jax ratio over its batches)")
    if interrupted:
        print(f"(interrupted: {len(cases) - len(seconds)} of {len(cases)} benchmarks not measured)")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
