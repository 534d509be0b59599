"""The first call of the MLP train step in a fresh process, with an empty and with a warm persistent compile
cache: ``python benchmarks/first_call.py kiln|jax CACHE_DIR`` prints, as one JSON object on its last line, the
seconds of the first call (trace, lower, compile or load from the cache, run, wait) and, for kiln, the cache's
counters and what a lookup that misses costs (key + probe of one file, seconds).

``cases.py`` runs it twice per sample in fresh interpreters (see :func:`run`): once on an empty temporary
directory (cold) and once more on the same directory (warm). kiln's cache is on by default; JAX's is turned on
for the run (``jax_compilation_cache_dir``, no minimum compile time).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_results: dict[tuple[str, bool], dict[str, float]] = {}


def _once(framework: str, cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("KILN_COMPILATION_CACHE", "KILN_CACHE_DIR")}
    cmd = [sys.executable, os.path.join(HERE, "first_call.py"), framework, cache_dir]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmarks/first_call.py {framework} failed (rc={proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(framework: str, quick: bool) -> dict[str, float]:
    """Medians over a few (cold, warm) pairs, each pair on a fresh directory; computed once per process."""
    key = (framework, quick)
    if key not in _results:
        cold, warm, lookup = [], [], []
        for _ in range(1 if quick else 3):
            d = tempfile.mkdtemp(prefix=f"first-call-{framework}-")
            try:
                first, second = _once(framework, d), _once(framework, d)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            if framework == "kiln" and (first["stats"]["hits"] or second["stats"]["misses"]):
                raise RuntimeError(f"kiln's compile cache did not behave: cold {first['stats']}, "
                                   f"warm {second['stats']}")
            cold.append(first["seconds"])
            warm.append(second["seconds"])
            lookup.append(first.get("lookup_miss", float("nan")))
        _results[key] = {"cold": statistics.median(cold), "warm": statistics.median(warm),
                         "lookup_miss": statistics.median(lookup)}
    return _results[key]


def run(framework: str, which: str, quick: bool) -> float | None:
    """``which``: "cold", "warm" or "lookup_miss" (kiln only), in seconds."""
    if which == "lookup_miss" and framework != "kiln":
        return None
    return measure(framework, quick)[which]


def _lookup_miss_cost(kiln, step, args) -> float:
    """Median seconds of a lookup that misses (key over the MLP step's module + probing one file)."""
    from kiln.runtime import compile_cache
    from kiln.runtime._jaxlib import xc
    from kiln.runtime.executable import _compile_options
    dev = kiln.devices()[0]
    text = step.lower(*args).as_text()
    client, devices, options = dev.backend._client, xc.DeviceList((dev._raw,)), _compile_options(dev)
    samples = []
    for i in range(200):
        module = text.replace("@main", f"@main_{i}", 1)  # another key each time: never a hit
        start = time.perf_counter()
        _, exe = compile_cache.lookup(client, module, devices, options, text=module)
        samples.append(time.perf_counter() - start)
        assert exe is None
    return statistics.median(samples)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("kiln", "jax"):
        print("usage: first_call.py kiln|jax CACHE_DIR", file=sys.stderr)
        return 2
    framework, cache_dir = argv
    sys.path.insert(0, HERE)
    if framework == "kiln":
        os.environ["KILN_CACHE_DIR"] = cache_dir
        import kiln as top
    else:
        import jax as top
        top.config.update("jax_compilation_cache_dir", cache_dir)
        top.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        top.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    from cases import _mlp_train_step, mlp_host_data
    from frameworks import Framework

    fw = Framework(name=framework, version="", device="", np=top.numpy, jit=top.jit, put=top.device_put,
                   block=top.block_until_ready, tree_map=top.tree_util.tree_map, value_and_grad=top.value_and_grad)
    args = top.device_put(mlp_host_data())
    top.block_until_ready(args)
    step = top.jit(_mlp_train_step(fw))
    start = time.perf_counter()
    top.block_until_ready(step(*args))
    result: dict = {"seconds": time.perf_counter() - start}
    if framework == "kiln":
        from kiln.runtime import compile_cache
        result["stats"] = compile_cache.stats()
        result["lookup_miss"] = _lookup_miss_cost(top, step, args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
