"""Memory that follows functions: RSS growth of kiln against JAX, each scenario in a fresh process.

``python benchmarks/memory.py [--quick] [-k NAME]`` prints a markdown table (scenario | kiln | jax |
kiln/jax) of the resident-memory growth over a loop, measured after a warm-up with ``gc.collect()``.
A scenario runs in its own interpreter per framework, so the two never share caches or allocators;
before each reading, ``gc.collect()`` and glibc's ``malloc_trim`` return freed heap pages, so the
numbers are memory still held (both frameworks alike), not allocator slack.
JAX is measured only where it is importable (``nox -s bench`` installs it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

# Each scenario is the body of ``run(fw, np, n)``: ``fw`` is kiln or jax, ``np`` NumPy, ``n`` the count.
# ``fw.numpy`` and ``fw.grad`` exist under both names.
SCENARIOS = {
    "fresh jitted functions, each called once and dropped": ("2000", """
        x = fw.numpy.ones(16)
        for i in range(n):
            c = float(i)
            f = fw.jit(lambda x: fw.numpy.sin(x) * c + c)
            f(x).block_until_ready()
            del f
    """),
    "jit(grad(closure)) of fresh closures": ("1000", """
        x = fw.numpy.ones(16)
        for i in range(n):
            c = float(i)
            g = fw.jit(fw.grad(lambda x: fw.numpy.sum(fw.numpy.tanh(x * c))))
            g(x).block_until_ready()
            del g
    """),
    "one jitted function called with many shapes": ("2000", """
        f = fw.jit(lambda x: fw.numpy.cos(x) * 2.0 + 1.0)
        for i in range(n):
            f(fw.numpy.ones(i + 1)).block_until_ready()
    """),
    "eager ops on many shapes (sin, *, sum: one program each per shape)": ("1000", """
        for i in range(n):
            x = fw.numpy.ones(i + 1)
            fw.numpy.sum(fw.numpy.sin(x) * 2.0).block_until_ready()
    """),
}

_CHILD = """
import gc, os, sys, resource
name = sys.argv[1]
if name == "kiln":
    import kiln as fw
    import kiln.numpy
else:
    import jax as fw
    import jax.numpy
import numpy as np

def rss_mb():
    gc.collect()
    try:  # give freed heap pages back first: what is measured is memory still held, not allocator slack
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def run(fw, np, n):
{body}

run(fw, np, {warmup})   # warm-up: first-use costs (backend, dispatch paths) are not growth
gc.collect()
before = rss_mb()
run(fw, np, {n})
gc.collect()
print(rss_mb() - before)
"""


def measure(framework: str, body: str, n: int) -> float | None:
    code = _CHILD.format(body=textwrap.indent(textwrap.dedent(body), "    "), n=n, warmup=max(2, n // 20))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", code, framework], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        if framework == "jax" and "No module named 'jax'" in proc.stderr:
            return None
        raise RuntimeError(f"{framework} scenario failed:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    parser.add_argument("-k", dest="select", default=None, help="only scenarios whose name contains this")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    rows = []
    for name, (count, body) in SCENARIOS.items():
        if args.select and args.select.lower() not in name.lower():
            continue
        n = int(count) // (10 if args.quick else 1)
        k, j = measure("kiln", body, n), measure("jax", body, n)
        rows.append({"scenario": f"{name} (x{n})", "kiln_mb": k, "jax_mb": j})
        print(f"  {name}: kiln {k:.1f} MB, jax {'n/a' if j is None else f'{j:.1f} MB'}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
        return 0
    print("| scenario | kiln RSS growth | jax RSS growth | kiln/jax |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        j = r["jax_mb"]
        ratio = "n/a" if j is None else f"{r['kiln_mb'] / max(j, 1.0):.2f}"
        print(f"| {r['scenario']} | {r['kiln_mb']:.1f} MB | {'n/a' if j is None else f'{j:.1f} MB'} | {ratio} |")
    print("\n(kiln/jax divides by max(jax, 1 MB): growth below a megabyte is noise)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
