"""The compiled programs of typical functions, kiln against JAX: kernels, instructions and temporary bytes.

``python benchmarks/programs.py [-k NAME] [--framework kiln|jax]`` compiles each function below (softmax, layer
norm, attention, gathers and scatters, sorts, loops, conds, linear algebra, the gradients, vmaps and Jacobians of
most of them) with ``jit(f).lower(*args).compile()`` on each framework, in a fresh interpreter per framework, and
prints one row per function: the kernels and optimized HLO instructions (counted as ``hlo_ops.py`` counts them), the
StableHLO operations, and the temporary bytes of XLA's memory analysis, kiln/JAX. A row is marked where kiln's
program has more kernels, over 10% more instructions or over 10% more temporary bytes than JAX's: the places to
read the two programs (``--dump DIR`` writes them). Without JAX, kiln's counts alone.

The comparison found programs worse than JAX's: the grad of a cond saving a broadcast constant, the grad of
``linalg.solve`` differentiating the LU factorization, ``x @ w`` broadcasting ``w`` over ``x``'s batch
dimensions, and ``segment_sum`` wrapping its negative ids twice. Rows that stay marked on purpose: ``var`` (kiln
shifts by a sample before the two-pass sums, which costs a pass and is four orders of magnitude more accurate on
data with a large mean), ``top_k`` (kiln ranks every NaN first, a NaN with its sign bit set too), ``argmax`` and
``switch`` (kiln's argmax reducer takes the first NaN by index whatever order XLA reduces in), ``grad_gather``
(the gradient goes to the clamped element an out-of-bounds index read, so the scatter's indices are clamped).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hlo_ops import hlo_counts, stablehlo_counts  # noqa: E402


def programs(jax, jnp, lax) -> dict:
    """name -> (function, *arguments): the same on both frameworks (``jax`` is kiln or jax)."""
    r = np.random.RandomState(0)

    def f32(*shape):
        return r.randn(*shape).astype(np.float32)
    x, w, v = f32(64, 128), f32(128, 128), f32(128)
    idx = r.randint(0, 64, size=(32,)).astype(np.int32)
    q, k = f32(4, 16, 32), f32(4, 16, 32)
    images, kernel = f32(2, 3, 16, 16), f32(4, 3, 3, 3)
    spd = w @ w.T + 128 * np.eye(128, dtype=np.float32)

    def layernorm(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    def attention(q, k):
        s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(32.0)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), k)

    def mlp_loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    def adam(p, g, m, s):
        m, s = 0.9 * m + 0.1 * g, 0.999 * s + 0.001 * g * g
        return p - 1e-3 * m / (jnp.sqrt(s) + 1e-8), m, s

    def fori(v):
        return lax.fori_loop(0, 50, lambda i, c: c * 0.5 + i, v)

    def scan_rnn(w, x):
        def body(h, xt):
            h = jnp.tanh(h @ w + xt)
            return h, h.sum()
        return lax.scan(body, jnp.zeros(128), x)[1].sum()

    def cond(x):
        return lax.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, x)

    def switch(x):
        return lax.switch(jnp.argmax(x.sum(1)) % 3, [lambda a: a * 2, lambda a: a - 1, jnp.sin], x)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME")

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def grad(f, *argnums):
        return jax.grad(lambda *a: jnp.sum(f(*a)), argnums or 0)

    return {
        "softmax": (lambda x: jax.nn.softmax(x, -1), x),
        "logsumexp": (lambda x: jax.nn.logsumexp(x, -1), x),
        "layernorm": (layernorm, x),
        "attention": (attention, q, k),
        "adam": (adam, w, w, w, w),
        "gather": (lambda x, i: x[i], x, idx),
        "scatter_add": (lambda x, i: x.at[i].add(1.0), x, idx),
        "segment_sum": (lambda x, i: jax.ops.segment_sum(x[:32], i % 8, num_segments=8), x, idx),
        "cumsum": (lambda x: jnp.cumsum(x, 0), x),
        "sort": (lambda x: jnp.sort(x, -1), x),
        "top_k": (lambda x: lax.top_k(x, 5), x),
        "argmax": (lambda x: jnp.argmax(x, -1), x),
        "mean_var": (lambda x: (jnp.mean(x, 0), jnp.var(x, 0)), x),
        "norm": (lambda x: jnp.linalg.norm(x, axis=-1), x),
        "where": (lambda x: jnp.where(x > 0, x, 0.01 * x), x),
        "gelu_softplus": (lambda x: jax.nn.gelu(x) + jax.nn.softplus(x), x),
        "one_hot": (lambda i: jax.nn.one_hot(i, 64), idx),
        "pad_slice": (lambda x: jnp.pad(x, ((1, 1), (2, 2)))[1:-1, 2:-2] * 2, x),
        "concatenate": (lambda x: jnp.concatenate([x, x * 2, x[:, :3]], axis=1), x),
        "matmul_3d_2d": (lambda x, w: x.reshape(8, 8, 128) @ w, x, w),
        "while_loop": (lambda v: lax.while_loop(lambda c: c[0] < 50, lambda c: (c[0] + 1, jnp.sin(c[1])),
                                                (0, v))[1], v),
        "fori_loop": (fori, v),
        "scan_rnn": (scan_rnn, w, x),
        "cond": (cond, x),
        "switch": (switch, x),
        "vmap_cond": (jax.vmap(cond), x),
        "conv": (conv, images, kernel),
        "max_pool": (max_pool, images),
        "solve": (jnp.linalg.solve, spd, v),
        "cholesky": (jnp.linalg.cholesky, spd),
        "random_normal": (lambda: jax.random.normal(jax.random.key(0), (256, 256)),),
        "random_categorical": (lambda x: jax.random.categorical(jax.random.key(2), x), x),
        "grad_mlp": (jax.grad(mlp_loss), w, x),
        "grad_layernorm": (grad(layernorm), x),
        "grad_attention": (grad(attention, 0, 1), q, k),
        "grad_scan_rnn": (jax.grad(scan_rnn), w, x),
        "grad_fori_loop": (grad(fori), v),
        "grad_cond": (grad(cond), x),
        "grad_switch": (grad(switch), x),
        "grad_gather": (grad(lambda x, i: x[i] ** 2), x, idx),
        "grad_sort": (grad(lambda x: jnp.sort(x, -1) * jnp.arange(128.0)), x),
        "grad_cumsum": (grad(lambda x: jnp.cumsum(x, 0) ** 2), x),
        "grad_logsumexp": (grad(lambda x: jax.nn.logsumexp(x, -1)), x),
        "grad_conv": (grad(conv, 1), images, kernel),
        "grad_max_pool": (grad(max_pool), images),
        "grad_solve": (grad(lambda a: jnp.linalg.solve(a, v)), spd),
        "grad_cholesky": (grad(jnp.linalg.cholesky), spd),
        "grad_vmap_loss": (grad(lambda w: jax.vmap(lambda row: jnp.tanh(row @ w).sum())(x)), w),
        "vmap_grad": (jax.vmap(jax.grad(lambda w, r: jnp.tanh(r @ w).sum()), (None, 0)), w, x),
        "jvp_mlp": (lambda w, x: jax.jvp(lambda w: mlp_loss(w, x), (w,), (w,)), w, x),
        "jacrev": (jax.jacrev(lambda v: jnp.sin(v[:16]) * v[:16].sum()), v),
        "hessian": (jax.hessian(lambda v: jnp.sum(jnp.sin(v[:8]) ** 3)), v),
        "checkpoint_grad": (jax.grad(lambda w: jax.checkpoint(lambda w: jnp.tanh(jnp.tanh(x @ w) @ w))(w).sum()), w),
    }


def measure(framework: str, select: str | None, dump: str | None) -> dict:
    """{name: {kernels, instructions, stablehlo, temp_bytes} or {error}} for ``framework`` in this process."""
    if framework == "kiln":
        import kiln as top
        import kiln.numpy as tnp
    else:
        import jax as top
        import jax.numpy as tnp
    out = {}
    for name, (fn, *args) in programs(top, tnp, top.lax).items():
        if select and select not in name:
            continue
        try:
            lowered = top.jit(fn).lower(*args)
            compiled = lowered.compile()
            hlo, text = compiled.as_text(), lowered.as_text()
            ops, kernels = hlo_counts(hlo)
            out[name] = dict(kernels=kernels, instructions=sum(ops.values()),
                             stablehlo=sum(stablehlo_counts(text).values()),
                             temp_bytes=compiled.memory_analysis().temp_size_in_bytes)
            if dump:
                os.makedirs(dump, exist_ok=True)
                for suffix, content in (("stablehlo", text), ("hlo", hlo)):
                    with open(os.path.join(dump, f"{name}.{framework}.{suffix}.txt"), "w") as f:
                        f.write(content)
        except Exception as e:  # a row says what failed; the others still count
            out[name] = dict(error=f"{type(e).__name__}: {str(e)[:160]}")
    return out


def _in_fresh_interpreter(framework: str, select: str | None, dump: str | None) -> dict | None:
    cmd = [sys.executable, os.path.abspath(__file__), "--framework", framework, "--json"]
    cmd += ["-k", select] if select else []
    cmd += ["--dump", dump] if dump else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        if framework == "jax" and "No module named 'jax'" in proc.stderr:
            return None
        raise RuntimeError(f"programs.py --framework {framework} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _worse(k: dict, j: dict) -> bool:
    return (k["kernels"] > j["kernels"] or k["instructions"] > 1.1 * j["instructions"]
            or k["temp_bytes"] > 1.1 * j["temp_bytes"])


def table(kiln_rows: dict, jax_rows: dict | None) -> str:
    keys = ("kernels", "instructions", "stablehlo", "temp_bytes")
    lines = ["| program | " + " | ".join(keys) + " | |", "| --- |" + " ---: |" * len(keys) + " --- |"]
    for name, k in kiln_rows.items():
        j = (jax_rows or {}).get(name)
        if "error" in k or (j is not None and "error" in j):
            lines.append(f"| {name} | {k.get('error') or ''} {'' if j is None else j.get('error') or ''} |")
            continue
        cells = [f"{k[c]}" if j is None else f"{k[c]} / {j[c]}" for c in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {'more than JAX' if j and _worse(k, j) else ''} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="select", help="only the programs whose name contains this")
    parser.add_argument("--framework", choices=("kiln", "jax"), help="measure this one here (no subprocess)")
    parser.add_argument("--json", action="store_true", help="with --framework: print the counts as JSON")
    parser.add_argument("--dump", help="write each program's StableHLO and optimized HLO to this directory")
    args = parser.parse_args(argv)
    if args.framework:
        rows = measure(args.framework, args.select, args.dump)
        print(json.dumps(rows) if args.json else table(rows, None))
        return 0
    kiln_rows = _in_fresh_interpreter("kiln", args.select, args.dump)
    jax_rows = _in_fresh_interpreter("jax", args.select, args.dump)
    print("kiln / JAX" if jax_rows is not None else "kiln (JAX is not installed)")
    print(table(kiln_rows, jax_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
