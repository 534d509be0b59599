"""The benchmarks. To add a row, write ``def bench_x(fw, quick) -> seconds | None`` and list it in CASES.

Each benchmark gets a :class:`~frameworks.Framework` and uses only its attributes, so the same code
measures kiln and JAX. Returning None means "not available in this framework" (shown as n/a).

Data sizes depend on the device (``SIZES``): the GPU sizes are issue 13's (1 GiB arrays, a 4096²
matmul); on the CPU the same benchmarks run on small data. A case's name is a template whose
``{stream}``, ``{normal}`` and ``{matmul}`` show the size used. Cases marked ``gpu=True`` form the
GPU suite (``run.py --gpu``). ``DERIVED`` rows are rates computed from other rows (a bandwidth, a
fraction of the copy bandwidth, TFLOP/s).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import itertools
import math
import os
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np
from frameworks import Framework
from timing import once_each, per_call

CHAIN_OPS = 1000
MLP_SIZES = (784, 512, 512, 10)
MLP_BATCH = 128
LEARNING_RATE = 0.01
# A new constant for every function built to be traced or compiled afresh, different in every process too (a
# random start): the compile rows must not hit a compile cache kept from an earlier run (kiln's is on by default).
_SALT_BITS = 20
_SALTS = itertools.count(int.from_bytes(os.urandom(4), "little") % 2**_SALT_BITS)


def _fresh_factor() -> float:
    """A factor in [1, 1.5) not used before: 2**-21 steps, distinct in float32."""
    return 1.0 + (next(_SALTS) % 2**_SALT_BITS) / 2**(_SALT_BITS + 1)


# Sizes by kind of device. "gpu" (also used on TPUs): issue 13's sizes. "cpu": small enough for a
# shared CPU machine (no 1 GiB arrays), large enough to leave the caches (6 Mi floats are 24 MiB: an
# input and an output, 48 MiB, overflow this machine's 32 MiB L3). Below glibc's largest mmap threshold
# (32 MiB, which run.py sets): at 8 Mi floats every output buffer was a fresh mmap, and the rows measured
# its page faults, 2 to 11 ms per call for the same program depending on the process and the moment.
SIZES: dict[str, dict[str, int]] = {
    "cpu": {"stream": 6 * 2**20, "normal": 4_000_000, "matmul": 1024},
    "gpu": {"stream": 256 * 2**20, "normal": 64 * 2**20, "matmul": 4096},
}


def sizes_for(platform: str) -> dict[str, int]:
    """The sizes for a framework's ``platform`` ("cpu", "gpu", "tpu")."""
    return SIZES["cpu" if platform == "cpu" else "gpu"]


def size(fw: Framework, name: str) -> int:
    return sizes_for(fw.platform)[name]


def _count(n: int) -> str:
    """256 Mi elements as ``256Mi``, a million as ``1,000,000``, a matrix side as ``4096``."""
    if n >= 2**20 and n % 2**20 == 0:
        return f"{n // 2**20}Mi"
    return f"{n:,}" if n >= 10_000 else str(n)


def title(template: str, platform: str) -> str:
    """A case's name with the sizes used on ``platform`` filled in."""
    return template.format(**{k: _count(v) for k, v in sizes_for(platform).items()})


@dataclass(frozen=True)
class Case:
    name: str  # a template: {stream}, {normal} and {matmul} are filled in with the sizes used (see title)
    unit: str  # "us" or "ms": how the table shows the seconds the function returns; "ops": a count (hlo_ops.py)
    run: Callable[[Framework, bool], float | None]
    gpu: bool = False  # part of the GPU suite (run.py --gpu)
    # Measured in a child process whose threads share one malloc arena (run.py, "Large host arrays"): the rows
    # whose large buffers page-faulted in the arenas glibc adds for threads (one framework's, not the other's).
    one_arena: bool = False


@dataclass(frozen=True)
class Derived:
    """A row computed, per framework, from the seconds of other rows (``inputs``, their templates)."""
    name: str  # a template, as Case.name
    inputs: tuple[str, ...]
    compute: Callable[..., float]  # compute(sizes, *seconds) -> the value
    fmt: str  # how the value is shown, e.g. "{:.2f} TFLOP/s"


def _host_rng() -> np.random.Generator:
    return np.random.default_rng(0)


@functools.lru_cache(maxsize=2)
def _host_normal(n: int) -> np.ndarray:
    """``n`` standard normal float32 values (seed 42, as the SELU example in the seed), made once per size:
    the 1 GiB arrays of the GPU suite take seconds to draw on the host."""
    x = np.random.default_rng(42).standard_normal(n, dtype=np.float32)
    x.flags.writeable = False
    return x


def _on_gpu(fw: Framework) -> bool:
    return fw.platform != "cpu"


# -- dispatch and eager op latency ----------------------------------------------------------------

def bench_jit_dispatch(fw: Framework, quick: bool) -> float:
    """A jitted f32[4] add on arrays already on the device: the per-call cost of jit's fast path."""
    rng = _host_rng()
    a, b = fw.put(rng.standard_normal(4, dtype=np.float32)), fw.put(rng.standard_normal(4, dtype=np.float32))
    add = fw.jit(lambda x, y: x + y)
    return per_call(lambda: add(a, b), fw.block, number=50 if quick else 500, repeat=5 if quick else 40)


def bench_jit_dispatch_pytree(fw: Framework, quick: bool) -> float:
    """A jitted update of a dict of 8 f32[4] parameters by one array (8 results): the per-call cost of jit on
    pytrees, as a small model's training step has them."""
    rng = _host_rng()
    params = {f"w{i}": fw.put(rng.standard_normal(4, dtype=np.float32)) for i in range(8)}
    x = fw.put(rng.standard_normal(4, dtype=np.float32))
    step = fw.jit(lambda p, v: {k: w - 0.1 * v for k, w in p.items()})
    return per_call(lambda: step(params, x), fw.block, number=50 if quick else 300, repeat=5 if quick else 30)


def _eager(op: Callable[..., object], *host_args: np.ndarray | Callable[[], np.ndarray], number: int = 200,
           repeat: int = 25):
    """``op(fw.np)`` called without jit on the arguments (host arrays, or functions making them) put on the
    device."""
    def bench(fw: Framework, quick: bool) -> float:
        args = [fw.put(x() if callable(x) else x) for x in host_args]
        fn = op(fw.np)
        return per_call(lambda: fn(*args), fw.block, number=min(number, 20) if quick else number,
                        repeat=min(repeat, 5) if quick else repeat)
    return bench


def _times_167(np_):
    return lambda x: x * 1.67


def bench_eager_grad(fw: Framework, quick: bool) -> float | None:
    """value_and_grad without jit of a loss of five numpy functions on f32[256] (a notebook's first gradient): each
    function's primal with its residuals runs as one compiled program in both frameworks, the backward pass op by
    op."""
    if fw.value_and_grad is None:
        return None
    np_ = fw.np
    x = fw.put(_host_rng().uniform(-2, 2, 256).astype(np.float32))
    vg = fw.value_and_grad(lambda v: np_.sum(np_.tanh(v) * np_.arctan(v) + np_.log1p(v * v)))
    return per_call(lambda: vg(x), fw.block, number=5 if quick else 50, repeat=3 if quick else 15)


def bench_iterate_rows(fw: Framework, quick: bool) -> float:
    """``list(x)`` of an f32[128,4] array: its rows as arrays (a loop ``for row in x``)."""
    x = fw.put(_host_rng().standard_normal((128, 4), dtype=np.float32))
    return per_call(lambda: list(x), fw.block, number=3 if quick else 20, repeat=3 if quick else 15)


_rng = _host_rng()
_V4 = _rng.standard_normal(4, dtype=np.float32)
_W4 = _rng.standard_normal(4, dtype=np.float32)
_MASK4 = _V4 > 0
_M64 = _rng.standard_normal((64, 64), dtype=np.float32)


# -- tracing, lowering and compiling a large program ---------------------------------------------

def _make_chain(fw: Framework):
    """A fresh function of CHAIN_OPS elementwise ops with a constant never used before, so that neither
    framework can answer from a trace or compile cache keyed on the function or the module text."""
    np_ = fw.np
    scale = _fresh_factor()

    def chain(x, x0):
        x = x * scale
        for i in range(CHAIN_OPS - 1):
            k = i % 4
            if k == 0:
                x = np_.sin(x)
            elif k == 1:
                x = x * x0
            elif k == 2:
                x = np_.cos(x)
            else:
                x = x + x0
        return x
    return chain


def _chain_args(fw: Framework):
    rng = _host_rng()
    return fw.put(rng.standard_normal(128, dtype=np.float32)), fw.put(rng.standard_normal(128, dtype=np.float32))


def bench_trace_lower(fw: Framework, quick: bool) -> float:
    """``jit(f).lower(x).as_text()`` of a 1,000-op function: tracing, IR passes, StableHLO emission."""
    args = _chain_args(fw)
    fw.jit(_make_chain(fw)).lower(*args).as_text()  # warm-up: first-use costs of both libraries
    return once_each(lambda i: lambda: fw.jit(_make_chain(fw)).lower(*args).as_text(), repeat=2 if quick else 9)


def bench_compile(fw: Framework, quick: bool) -> float:
    """``lowered.compile()`` of the same 1,000-op function (mostly XLA's own compile time)."""
    args = _chain_args(fw)
    return once_each(lambda i: fw.jit(_make_chain(fw)).lower(*args).compile, repeat=1 if quick else 5)


def bench_compile_both_caches(fw: Framework, quick: bool) -> float:
    """The compile row with both persistent compile caches on and writing, like for like: kiln's as it is by
    default, JAX's turned on for this row only (no minimum compile time or entry size, as kiln's defaults), each
    into a new temporary directory. The row above compares kiln's default against JAX's (its cache off)."""
    import tempfile
    with tempfile.TemporaryDirectory() as directory, _persistent_cache(fw, directory):
        return bench_compile(fw, quick)


@contextlib.contextmanager
def _persistent_cache(fw: Framework, directory: str):
    """``fw``'s persistent compile cache on, writing every executable into ``directory``; restored after."""
    top = importlib.import_module(fw.name)
    names = (("jax_compilation_cache_dir", directory), ("jax_persistent_cache_min_compile_time_secs", 0.0),
             ("jax_persistent_cache_min_entry_size_bytes", -1)) if fw.name == "jax" else \
        (("compilation_cache", True), ("compilation_cache_dir", directory))
    saved = [(name, getattr(top.config, name)) for name, _ in names]
    for name, value in names:
        top.config.update(name, value)
    try:
        yield
    finally:
        for name, value in saved:
            top.config.update(name, value)
        if fw.name == "jax":
            from jax._src import compilation_cache
            compilation_cache.reset_cache()  # the next row runs without it, as JAX's default


# -- an MLP ---------------------------------------------------------------------------------------

def mlp_host_data(batch: int = MLP_BATCH) -> tuple[list, np.ndarray, np.ndarray]:
    """The MLP's parameters (He-initialised), a batch of inputs and one-hot labels, as NumPy arrays."""
    rng = _host_rng()
    params = []
    for n_in, n_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        w = rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(np.sqrt(2.0 / n_in))
        params.append((w, np.zeros(n_out, np.float32)))
    x = rng.standard_normal((batch, MLP_SIZES[0]), dtype=np.float32)
    labels = np.eye(MLP_SIZES[-1], dtype=np.float32)[rng.integers(0, MLP_SIZES[-1], batch)]
    return params, x, labels


def _mlp_data(fw: Framework):
    params, x, labels = mlp_host_data()
    return fw.put(params), fw.put(x), fw.put(labels)


def _mlp_loss(np_):
    def loss(params, x, labels):
        h = x
        for w, b in params[:-1]:
            h = np_.maximum(h @ w + b, 0.0)
        w, b = params[-1]
        logits = h @ w + b
        shifted = logits - np_.max(logits, axis=-1, keepdims=True)
        log_probs = shifted - np_.log(np_.sum(np_.exp(shifted), axis=-1, keepdims=True))
        return -np_.mean(np_.sum(labels * log_probs, axis=-1))
    return loss


def bench_mlp_forward(fw: Framework, quick: bool) -> float:
    """Steady-state jitted forward pass + softmax cross-entropy of a 784-512-512-10 MLP, batch 128."""
    params, x, labels = _mlp_data(fw)
    step = fw.jit(_mlp_loss(fw.np))
    return per_call(lambda: step(params, x, labels), fw.block, number=5 if quick else 40, repeat=3 if quick else 25)


def _mlp_train_step(fw: Framework, learning_rate: float = LEARNING_RATE) -> Callable:
    value_and_grad = fw.value_and_grad(_mlp_loss(fw.np))

    def train_step(params, x, labels):
        loss, grads = value_and_grad(params, x, labels)
        return loss, fw.tree_map(lambda p, g: p - learning_rate * g, params, grads)
    return train_step


def bench_mlp_train_step(fw: Framework, quick: bool) -> float | None:
    """Steady-state jitted training step: value_and_grad of the MLP loss + an SGD update."""
    if fw.value_and_grad is None:
        return None
    params, x, labels = _mlp_data(fw)
    step = fw.jit(_mlp_train_step(fw))
    return per_call(lambda: step(params, x, labels), fw.block, number=5 if quick else 40, repeat=3 if quick else 25)


def bench_mlp_train_trace_lower(fw: Framework, quick: bool) -> float | None:
    """``jit(train_step).lower(...).as_text()``: tracing the loss, differentiating it (JVP, partial
    evaluation, transposition), IR passes and StableHLO emission; a fresh learning rate each time."""
    if fw.value_and_grad is None:
        return None
    args = _mlp_data(fw)

    def work(i):
        fn = fw.jit(_mlp_train_step(fw, LEARNING_RATE * _fresh_factor()))
        return lambda: fn.lower(*args).as_text()
    work(0)()  # warm-up: first-use costs of both libraries
    return once_each(work, repeat=2 if quick else 9)


# -- an RNN over a scan ---------------------------------------------------------------------------

RNN_HIDDEN, RNN_STEPS, RNN_INPUT, RNN_BATCH = 128, 200, 64, 32


def _rnn_data(fw: Framework):
    rng = _host_rng()
    w = rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN), dtype=np.float32) * np.float32(1 / np.sqrt(RNN_HIDDEN))
    u = rng.standard_normal((RNN_INPUT, RNN_HIDDEN), dtype=np.float32) * np.float32(1 / np.sqrt(RNN_INPUT))
    xs = rng.standard_normal((RNN_STEPS, RNN_BATCH, RNN_INPUT), dtype=np.float32)
    h0 = np.zeros((RNN_BATCH, RNN_HIDDEN), np.float32)
    return fw.put((w, u)), fw.put(h0), fw.put(xs)


def _rnn_loss(fw: Framework, scale: float = 1.0):
    """h_t = tanh(W h_{t-1} + U x_t) over RNN_STEPS steps with ``lax.scan``; loss = mean of the h_t squared.

    (Batched: rows of ``h`` are sequences, so ``W h`` is ``h @ W``.) ``scale`` is a constant that
    makes a function no cache has seen (for the compile-time rows).
    """
    np_, lax = fw.np, fw.lax

    def loss(params, h0, xs):
        w, u = params

        def step(h, x):
            h = np_.tanh(h @ w + (x @ u) * scale)
            return h, h

        _, hs = lax.scan(step, h0, xs)
        return np_.mean(hs * hs)
    return loss


def _rnn_grad(fw: Framework, scale: float = 1.0):
    return fw.value_and_grad(_rnn_loss(fw, scale))


def _rnn_compile(make: Callable[[Framework, float], Callable]):
    def bench(fw: Framework, quick: bool) -> float | None:
        if fw.lax is None or fw.value_and_grad is None:
            return None
        args = _rnn_data(fw)

        def work(i):  # trace + lower + XLA compile of a function with a fresh constant
            fn = fw.jit(make(fw, _fresh_factor()))
            return lambda: fn.lower(*args).compile()
        work(0)()  # warm-up: first-use costs of both libraries
        return once_each(work, repeat=1 if quick else 5)
    return bench


def _rnn_steady(make: Callable[[Framework, float], Callable]):
    def bench(fw: Framework, quick: bool) -> float | None:
        if fw.lax is None or fw.value_and_grad is None:
            return None
        args = _rnn_data(fw)
        fn = fw.jit(make(fw, 1.0))
        return per_call(lambda: fn(*args), fw.block, number=3 if quick else 20, repeat=3 if quick else 15)
    return bench


# -- random numbers -------------------------------------------------------------------------------

def _random_module(fw: Framework):
    """``kiln.random`` or ``jax.random``: the package beside the framework's ``numpy``."""
    return getattr(fw, "random", None) or importlib.import_module(fw.np.__name__.split(".")[0] + ".random")


def bench_random_normal(fw: Framework, quick: bool) -> float:
    """Steady-state ``jit(lambda k: random.normal(k, (n,)))`` (n: 4,000,000 on the CPU, 64 Mi on a GPU):
    threefry2x32 bits, the mantissa trick and erf_inv, bit-exact between the two frameworks."""
    rnd = _random_module(fw)
    key = fw.put(rnd.key(0))
    n = size(fw, "normal")
    sample = fw.jit(lambda k: rnd.normal(k, (n,)))
    return per_call(lambda: sample(key), fw.block, number=2 if quick else 10, repeat=3 if quick else 15)


RANDOM_CALLS = 100


def _many_random_calls(fw: Framework, calls: int, scale: float):
    """``calls`` draws ``normal(fold_in(key, i), (256,))`` summed: as many threefry hashes (two per draw)
    as call sites; ``scale`` is a constant that makes a function no cache has seen."""
    np_, rnd = fw.np, _random_module(fw)

    def f(key):
        acc = np_.zeros((256,), np.float32)
        for i in range(calls):
            acc = acc + rnd.normal(rnd.fold_in(key, i), (256,))
        return acc * scale
    return f


def bench_compile_random_calls(fw: Framework, quick: bool) -> float:
    """``jit(f).lower(key).compile()`` of a function with 100 random draws (trace, lowering and XLA's compile;
    a fresh function and constant each time, so that no trace or compile cache answers). ``quick`` (the test
    suite's smoke run, whose numbers mean nothing) compiles 10 draws: XLA takes some 13 s for the 100 there."""
    key = fw.put(_random_module(fw).key(0))

    def work(calls):
        fn = fw.jit(_many_random_calls(fw, calls, _fresh_factor()))
        return lambda: fn.lower(key).compile()
    work(2)()  # warm-up (a small program): first-use costs of both libraries
    return once_each(lambda i: work(10 if quick else RANDOM_CALLS), repeat=1 if quick else 3)


# -- memory bandwidth and matmul throughput (issue 13's GPU measurements) --------------------------

SELU_SIZE = 1_000_000  # "一百萬個啟用值" in seed 004


def _selu(np_):
    """The SELU of seed 004 (its first and last definitions; the middle one drops the ``where``), constants
    included."""
    def selu(x, alpha=1.6732632423543772848170429916717, scale=1.0507009873554804934193349852946):
        """Scaled exponential linear unit activation function."""
        return scale * np_.where(x > 0, x, alpha * np_.exp(x) - alpha)
    return selu


def _jit_on_stream(make: Callable[[Framework], Callable], n: int | None = None):
    """Steady state of ``jit(make(fw))`` on f32[n] standard normal data (default n: the ``stream`` size,
    256 Mi = 1 GiB on a GPU); each call reads n floats and writes n new ones."""
    def bench(fw: Framework, quick: bool) -> float:
        count = n if n is not None else size(fw, "stream")
        x = fw.put(_host_normal(count))
        fn = fw.jit(make(fw))
        big = count >= 2**20
        if quick:
            number, repeat = 3, 3
        elif _on_gpu(fw):
            number, repeat = (20, 10) if big else (100, 15)
        else:
            number, repeat = (5, 5) if big else (20, 10)
        return per_call(lambda: fn(x), fw.block, number=number, repeat=repeat)
    return bench


def _copy(fw: Framework) -> Callable:
    """A device-to-device copy: ``jit(lambda x: np.copy(x))``.

    Both frameworks lower it to ``return %arg0``; as a jitted function may not hand back its (not
    donated) argument, XLA compiles that to a copy into a new buffer (an ``HloInstruction`` ``copy``: a
    device memcpy on GPUs), so every call reads and writes n floats, the same bytes as the SELU. The
    alternatives measure nothing or the same thing: XLA's simplifier turns ``x + 0`` and ``x * 1.0`` into
    this very copy, and ``device_put`` of an array to the device it is on returns it without copying.
    The fraction of copy bandwidth means something on GPUs, whose allocators reuse device memory; on the
    CPU both rows mostly measure the page faults of each fresh output buffer.
    """
    np_ = fw.np
    return lambda x: np_.copy(x)


def bench_matmul_bf16(fw: Framework, quick: bool) -> float:
    """Steady-state ``jit(a @ b)`` of two bf16[n, n] matrices (n: 4096 on a GPU, 1024 on the CPU)."""
    n = size(fw, "matmul")
    rng = _host_rng()
    a, b = (fw.put(rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)) for _ in range(2))
    mm = fw.jit(lambda a, b: a @ b)
    if quick:
        number, repeat = 3, 3
    else:
        number, repeat = (50, 15) if _on_gpu(fw) else (3, 5)
    return per_call(lambda: mm(a, b), fw.block, number=number, repeat=repeat)


# -- per-example gradients (vmap of grad) ---------------------------------------------------------

PEG_SIZES = (64, 128, 128, 10)
PEG_BATCH = 256


def _top_module(fw: Framework):
    """``kiln`` or ``jax``: the package of the framework's ``numpy`` (for ``vmap`` and ``grad``)."""
    return importlib.import_module(fw.np.__name__.split(".")[0])


def bench_per_example_grads(fw: Framework, quick: bool) -> float | None:
    """Steady-state ``jit(vmap(grad(loss), in_axes=(None, 0, 0)))``: the gradient of the softmax
    cross-entropy of a 64-128-128-10 MLP for each of 256 examples separately."""
    top = _top_module(fw)
    if getattr(top, "vmap", None) is None or getattr(top, "grad", None) is None:
        return None
    rng = _host_rng()
    params = []
    for n_in, n_out in zip(PEG_SIZES[:-1], PEG_SIZES[1:]):
        w = rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(np.sqrt(2.0 / n_in))
        params.append((w, np.zeros(n_out, np.float32)))
    x = rng.standard_normal((PEG_BATCH, PEG_SIZES[0]), dtype=np.float32)
    labels = np.eye(PEG_SIZES[-1], dtype=np.float32)[rng.integers(0, PEG_SIZES[-1], PEG_BATCH)]
    params, x, labels = fw.put(params), fw.put(x), fw.put(labels)
    step = fw.jit(top.vmap(top.grad(_mlp_loss(fw.np)), in_axes=(None, 0, 0)))
    return per_call(lambda: step(params, x, labels), fw.block, number=5 if quick else 20, repeat=3 if quick else 15)


SPARSE_NODES, SPARSE_NNZ, SPARSE_FEATURES = 2708, 13264, 64
SPARSE_MATMUL = (f"sparse BCOO @ dense: {SPARSE_NODES}-node graph, {SPARSE_NNZ:,} nonzeros, "
                 f"features f32[{SPARSE_NODES},{SPARSE_FEATURES}]")


def bench_sparse_matmul(fw: Framework, quick: bool) -> float | None:
    """Steady-state jitted ``A @ h`` with ``A`` a ``experimental.sparse.BCOO`` adjacency of a random graph the size
    of Cora (2708 nodes, 13,264 stored entries, sorted row-major, as ``fromdense`` makes them) and ``h`` dense node
    features: a graph convolution's propagation step. Both frameworks get the same data and indices."""
    try:
        sparse = importlib.import_module(f"{_top_module(fw).__name__}.experimental.sparse")
    except ImportError:
        return None
    rng = _host_rng()
    flat = np.sort(rng.choice(SPARSE_NODES * SPARSE_NODES, SPARSE_NNZ, replace=False))
    indices = np.stack([flat // SPARSE_NODES, flat % SPARSE_NODES], axis=1).astype(np.int32)
    data = rng.random(SPARSE_NNZ, dtype=np.float32)
    h = rng.standard_normal((SPARSE_NODES, SPARSE_FEATURES), dtype=np.float32)
    adj = sparse.BCOO((fw.put(data), fw.put(indices)), shape=(SPARSE_NODES, SPARSE_NODES), indices_sorted=True,
                      unique_indices=True)
    h = fw.put(h)
    step = fw.jit(lambda a, x: a @ x)
    return per_call(lambda: step(adj, h), fw.block, number=5 if quick else 20, repeat=3 if quick else 15)


def _first_call(which: str):
    def bench(fw: Framework, quick: bool) -> float | None:
        """The MLP train step's first call in a fresh process (trace, lower, compile or load from the persistent
        compile cache, run): ``cold`` on an empty cache directory, ``warm`` on the one the cold run filled
        (first_call.py; JAX with its cache turned on). ``lookup_miss``: what kiln's cache adds to a miss."""
        if fw.value_and_grad is None:
            return None
        import first_call
        return first_call.run(fw.name, which, quick)
    return bench


def bench_data_parallel_mlp(fw: Framework, quick: bool) -> float | None:
    """A data-parallel training step on 8 CPU devices: the MLP train step above on a batch of 1024 split over
    a mesh axis, parameters replicated, in a fresh process that holds both frameworks, their batches interleaved
    (the device count is fixed when a framework starts; multidevice.py). Both wait for the loss every 8 steps:
    JAX's CPU collectives abort the process when many executions queue up unsynchronised."""
    import multidevice
    return multidevice.run(fw.name, "dp_mlp", quick)


def bench_shard_map_mlp(fw: Framework, quick: bool) -> float | None:
    """The same data-parallel step with the loss written as a shard_map (pmean of the devices' losses) and
    value_and_grad taken of it: the transposition of a shard_map (multidevice.py)."""
    import multidevice
    return multidevice.run(fw.name, "sm_mlp", quick)


def bench_shard_map_psum_loop(fw: Framework, quick: bool) -> float | None:
    """A jitted shard_map on 8 CPU devices looping over 100 psums of a 1024-float block per device, in a fresh
    process that holds both frameworks (multidevice.py)."""
    import multidevice
    return multidevice.run(fw.name, "psum_loop", quick)


def bench_debug_print_loop(fw: Framework, quick: bool) -> float:
    """A jitted ``fori_loop`` of 100 steps, each ``debug.print``-ing the step and the f32[4] carry: the cost of
    host callbacks in a loop. Both frameworks print to ``sys.stdout``, redirected to os.devnull here the same way,
    so that the terminal does not dominate."""
    import contextlib
    import os
    debug = importlib.import_module(_top_module(fw).__name__ + ".debug")

    def body(i, c):
        debug.print("step {i}: {c}", i=i, c=c)
        return c + 1.0
    loop = fw.jit(lambda x: fw.lax.fori_loop(0, 100, body, x))
    x = fw.put(np.zeros(4, np.float32))
    sink = open(os.devnull, "w")  # open while the plan lives: its batches may run after this returns
    return per_call(lambda: loop(x), fw.block, number=3 if quick else 10, repeat=3 if quick else 10,
                    around=lambda: contextlib.redirect_stdout(sink))


# -- training steps as users write them: stax + an optax optimizer (issue 17) ----------------------

def _training_libraries(fw: Framework):
    """``(stax, optimizers, optax)`` of the framework: ``kiln.example_libraries.{stax,optimizers}`` and
    ``kiln.optim`` on kiln; ``jax.example_libraries.{stax,optimizers}`` and ``optax`` on JAX. None where one
    is missing (JAX without optax installed: ``nox -s bench`` installs it)."""
    top = _top_module(fw).__name__
    try:
        stax = importlib.import_module(top + ".example_libraries.stax")
        optimizers = importlib.import_module(top + ".example_libraries.optimizers")
        optax = importlib.import_module("kiln.optim" if top == "kiln" else "optax")
    except ImportError:
        return None
    return stax, optimizers, optax


def _steady_state_step(fw: Framework, step: Callable, state: tuple, *rest, quick: bool, number: int,
                       repeat: int) -> float:
    """Steady-state time of ``state = step(*state, *rest)[:len(state)]``: the step donates its state and gets
    back the new one each call, as a training loop does."""
    n = len(state)
    box = [state]

    def call():
        out = step(*box[0], *rest)
        box[0] = out[:n]
        return out
    return per_call(call, fw.block, number=2 if quick else number, repeat=3 if quick else repeat)


def stax_adam_program(fw: Framework) -> tuple[Callable, tuple] | None:
    """The training step of ``stax.serial(Dense(512), Relu, Dense(512), Relu, Dense(10), LogSoftmax)`` on a
    batch of 128: cross-entropy, ``value_and_grad``, ``adam(1e-3)`` (``kiln.optim`` against ``optax``),
    ``apply_updates``; and its arguments (params, optimizer state, inputs, labels). None without the libraries."""
    libs = _training_libraries(fw)
    if libs is None or fw.value_and_grad is None:
        return None
    stax, _, optax = libs
    np_ = fw.np
    _, apply_fun = stax.serial(stax.Dense(MLP_SIZES[1]), stax.Relu, stax.Dense(MLP_SIZES[2]), stax.Relu,
                               stax.Dense(MLP_SIZES[3]), stax.LogSoftmax)
    host_params, x, labels = mlp_host_data()
    params = fw.put([host_params[0], (), host_params[1], (), host_params[2], ()])  # stax's layout: () for Relu
    opt = optax.adam(1e-3)

    def loss_fn(params, x, labels):
        return -np_.mean(np_.sum(labels * apply_fun(params, x), axis=-1))

    def train_step(params, opt_state, x, labels):
        loss, grads = fw.value_and_grad(loss_fn)(params, x, labels)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return train_step, (params, opt.init(params), fw.put(x), fw.put(labels))


def bench_stax_adam_step(fw: Framework, quick: bool) -> float | None:
    """Steady state of :func:`stax_adam_program`, jitted with the params and optimizer state donated and
    returned."""
    program = stax_adam_program(fw)
    if program is None:
        return None
    train_step, (params, opt_state, x, labels) = program
    step = fw.jit(train_step, donate_argnums=(0, 1))
    return _steady_state_step(fw, step, (params, opt_state), x, labels, quick=quick, number=20, repeat=15)


# Cora's sizes (2,708 papers, 1,433 words, 7 topics, 140 labelled nodes for training) and seed 003's model.
GCN_NODES, GCN_FEATURES, GCN_CLASSES, GCN_HIDDEN, GCN_TRAIN = 2708, 1433, 7, 16, 140
GCN_EDGES, GCN_WORDS_PER_NODE = 5278, 18  # Cora has 5,278 undirected edges and ~18 words per paper
GCN_DROPOUT, GCN_WEIGHT_DECAY, GCN_LEARNING_RATE = 0.5, 5e-4, 0.01


@functools.lru_cache(maxsize=1)
def gcn_host_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic citation-like graph with Cora's sizes (NumPy seed 3): ``(features, adjacency, labels,
    train_idx)``. Nodes have topics; a citation stays within the citing node's topic with probability 0.8;
    each node uses ~18 words, most from its topic's vocabulary; features are row-normalised binary bags of
    words; the adjacency is dense and normalised as in Kipf & Welling, ``D^-1/2 (A + I) D^-1/2``."""
    rng = np.random.default_rng(3)
    n, f, c = GCN_NODES, GCN_FEATURES, GCN_CLASSES
    topic = rng.integers(0, c, n)
    by_topic = [np.flatnonzero(topic == k) for k in range(c)]
    src = rng.integers(0, n, GCN_EDGES)
    same = rng.random(GCN_EDGES) < 0.8
    dst = np.where(same, [rng.choice(by_topic[topic[s]]) for s in src], rng.integers(0, n, GCN_EDGES))
    a = np.zeros((n, n), np.float32)
    a[src, dst] = a[dst, src] = 1.0
    np.fill_diagonal(a, 1.0)  # A + I
    d = 1.0 / np.sqrt(a.sum(axis=1))
    adj = (a * d[:, None] * d[None, :]).astype(np.float32)
    vocab = rng.permutation(f).reshape(-1)[: f - f % c].reshape(c, -1)  # each topic's own words
    feats = np.zeros((n, f), np.float32)
    for i in range(n):
        own = rng.choice(vocab[topic[i]], GCN_WORDS_PER_NODE * 2 // 3, replace=False)
        other = rng.integers(0, f, GCN_WORDS_PER_NODE // 3)
        feats[i, own] = feats[i, other] = 1.0
    feats /= feats.sum(axis=1, keepdims=True)
    labels = np.eye(c, dtype=np.float32)[topic]
    train_idx = np.arange(GCN_TRAIN, dtype=np.int32)
    for x in (feats, adj, labels, train_idx):
        x.flags.writeable = False
    return feats, adj, labels, train_idx


def _gcn(fw: Framework, nhid: int, nclass: int, dropout: float):
    """Seed 003's GCN in the framework's own modules: two ``GraphConvolution`` layers written stax-style
    (``init_fun``/``apply_fun``, glorot-uniform weights, no bias), relu, dropout by ``random.bernoulli``
    (``dropout`` the keep rate, as stax's), log-softmax."""
    top = _top_module(fw)
    np_, random, nn = fw.np, _random_module(fw), top.nn

    def graph_convolution(out_dim):
        def init_fun(rng, input_shape):
            k1, _ = random.split(rng)
            return input_shape[:-1] + (out_dim,), (nn.initializers.glorot_uniform()(k1, (input_shape[-1], out_dim)),
                                                  None)

        def apply_fun(params, feature, adj, **kwargs):
            w, _ = params
            return np_.matmul(adj, np_.dot(feature, w))
        return init_fun, apply_fun

    def drop(x, rng):
        keep = random.bernoulli(rng, dropout, x.shape)
        return np_.where(keep, x / dropout, 0)

    gc1_init, gc1_fun = graph_convolution(nhid)
    gc2_init, gc2_fun = graph_convolution(nclass)

    def init_fun(rng, input_shape):
        params = []
        for init in (gc1_init, gc2_init):
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, feature, adj, rng):
        k1, k2, k3, k4 = random.split(rng, 4)
        x = drop(feature, k1)
        x = nn.relu(gc1_fun(params[0], x, adj, rng=k2))
        x = drop(x, k3)
        return nn.log_softmax(gc2_fun(params[1], x, adj, rng=k4))
    return init_fun, apply_fun


def bench_gcn_epoch(fw: Framework, quick: bool) -> float | None:
    """One epoch of seed 003's GCN training, a jitted step: dropout, two graph convolutions on the dense
    normalised adjacency, masked cross-entropy + ``5e-4 * optimizers.l2_norm(params)**2``, ``grad``, ``adam``
    (``kiln.optim`` against ``optax``), ``apply_updates``; params, optimizer state and PRNG key donated and
    returned."""
    libs = _training_libraries(fw)
    if libs is None or fw.value_and_grad is None:
        return None
    _, optimizers, optax = libs
    np_, random = fw.np, _random_module(fw)
    feats, adj, labels, train_idx = gcn_host_data()
    init_fun, predict_fun = _gcn(fw, GCN_HIDDEN, GCN_CLASSES, 1 - GCN_DROPOUT)
    _, params = init_fun(random.key(0), (-1, GCN_FEATURES))
    opt = optax.adam(GCN_LEARNING_RATE)
    batch = fw.put((feats, labels, adj, train_idx))

    def loss(params, batch, rng):
        inputs, targets, adj, idx = batch
        preds = predict_fun(params, inputs, adj, rng=rng)
        ce_loss = -np_.mean(np_.sum(preds[idx] * targets[idx], axis=1))
        return ce_loss + GCN_WEIGHT_DECAY * optimizers.l2_norm(params) ** 2

    def epoch(params, opt_state, key, batch):
        key, subkey = random.split(key)
        value, grads = fw.value_and_grad(loss)(params, batch, subkey)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, key, value

    step = fw.jit(epoch, donate_argnums=(0, 1, 2))
    state = (fw.put(params), opt.init(params), random.key(1))
    return _steady_state_step(fw, step, state, batch, quick=quick, number=5, repeat=7)


def _op_count(program: str, which: str):
    def bench(fw: Framework, quick: bool) -> float | None:
        import hlo_ops
        return hlo_ops.count(program, which)(fw, quick)
    return bench


# What the MLP, stax + adam and RNN programs compile to (hlo_ops.py says how the operations are counted): the
# StableHLO each framework emits and the HLO left after XLA's optimizations, each compiled once per process.
_OP_COUNTS = [Case(f"ops: {program}, {label}", "ops", _op_count(program, which))
              for program in ("MLP train step (value_and_grad + SGD)", "MLP train step: stax + adam",
                              "RNN forward (scan)", "RNN value_and_grad (scan)")
              for which, label in (("stablehlo", "StableHLO emitted"), ("hlo", "HLO after XLA"),
                                   ("kernels", "kernels after XLA"))]

STAX_ADAM = "MLP train step: stax + adam (784-512-512-10, batch 128)"
GCN_EPOCH = f"GCN epoch (seed 003): 2 graph convs, dropout, adam + l2_norm, {GCN_NODES:,} nodes"

FIRST_COLD = "MLP train step: first call in a new process, empty compile cache"
FIRST_WARM = "MLP train step: first call in a new process, warm compile cache"
SELU_STREAM = "jit SELU f32[{stream}]"
COPY_STREAM = "jit copy f32[{stream}] (device to device)"
MATMUL = "jit matmul bf16[{matmul},{matmul}] @ bf16[{matmul},{matmul}]"

EAGER_SMALL = ("eager add f32[4]", "eager mul f32[4]", "eager tanh f32[4]", "eager sum f32[4]", "eager max f32[4]")
EAGER_MUL, EAGER_MAX = EAGER_SMALL[1], EAGER_SMALL[4]

CASES: list[Case] = [
    Case("jit dispatch: f32[4] add", "us", bench_jit_dispatch, gpu=True),
    Case("jit dispatch: dict of 8 f32[4] parameters", "us", bench_jit_dispatch_pytree),
    Case(EAGER_SMALL[0], "us", _eager(lambda np_: np_.add, _V4, _W4)),
    Case(EAGER_SMALL[2], "us", _eager(lambda np_: np_.tanh, _V4)),
    Case("eager exp f32[4]", "us", _eager(lambda np_: np_.exp, _V4)),
    Case(EAGER_SMALL[3], "us", _eager(lambda np_: np_.sum, _V4)),
    Case("eager where f32[4]", "us", _eager(lambda np_: np_.where, _MASK4, _V4, _W4)),
    Case(EAGER_MUL, "us", _eager(lambda np_: np_.multiply, _V4, _W4)),
    Case(EAGER_MAX, "us", _eager(lambda np_: np_.max, _V4)),
    Case("eager matmul f32[64,64]", "us", _eager(lambda np_: np_.matmul, _M64, _M64)),
    Case(f"eager x * 1.67, f32[{SELU_SIZE:,}]", "us",
         _eager(_times_167, lambda: _host_normal(SELU_SIZE), number=20, repeat=40)),
    Case(f"eager SELU f32[{SELU_SIZE:,}] (seed 004, without jit)", "ms",
         _eager(_selu, lambda: _host_normal(SELU_SIZE), number=5, repeat=20)),
    Case("eager value_and_grad: 5 numpy functions on f32[256]", "us", bench_eager_grad),
    Case("eager iteration: list(x) of f32[128,4]", "us", bench_iterate_rows),
    Case(f"trace+lower: {CHAIN_OPS:,}-op chain", "ms", bench_trace_lower),
    Case(f"compile: {CHAIN_OPS:,}-op chain", "ms", bench_compile),
    Case(f"compile: {CHAIN_OPS:,}-op chain, both persistent caches on", "ms", bench_compile_both_caches),
    Case("MLP forward+loss 784-512-512-10, batch 128", "ms", bench_mlp_forward),
    Case("MLP train step (value_and_grad + SGD)", "ms", bench_mlp_train_step, gpu=True),
    Case("MLP train step: trace+lower", "ms", bench_mlp_train_trace_lower),
    Case(STAX_ADAM, "ms", bench_stax_adam_step),
    Case(GCN_EPOCH, "ms", bench_gcn_epoch, one_arena=True),
    Case("RNN h=128, 200 steps (scan), batch 32: forward compile", "ms", _rnn_compile(_rnn_loss)),
    Case("RNN h=128, 200 steps (scan), batch 32: forward", "ms", _rnn_steady(_rnn_loss), gpu=True),
    Case("RNN h=128, 200 steps (scan), batch 32: value_and_grad compile", "ms", _rnn_compile(_rnn_grad)),
    Case("RNN h=128, 200 steps (scan), batch 32: value_and_grad", "ms", _rnn_steady(_rnn_grad), gpu=True),
    *_OP_COUNTS,
    Case("jit random.normal f32[{normal}]", "ms", bench_random_normal, gpu=True, one_arena=True),
    Case(f"compile: {RANDOM_CALLS} random calls", "ms", bench_compile_random_calls),
    Case(f"per-example grads: jit(vmap(grad)) MLP 64-128-128-10, batch {PEG_BATCH}", "us", bench_per_example_grads,
         gpu=True, one_arena=True),
    Case(FIRST_COLD, "ms", _first_call("cold")),
    Case(FIRST_WARM, "ms", _first_call("warm")),
    Case("compile cache lookup on a miss (key of the MLP step + probe)", "us", _first_call("lookup_miss")),
    Case("data-parallel MLP step, 8 CPU devices (batch 1024 split, sync every 8 steps)", "ms",
         bench_data_parallel_mlp),
    Case("shard_map data-parallel MLP step: grad of a shard_map loss, 8 CPU devices", "ms", bench_shard_map_mlp),
    Case("shard_map: 100 psums in a fori_loop, 8 CPU devices", "ms", bench_shard_map_psum_loop),
    Case("debug.print in a jitted fori_loop, 100 steps", "ms", bench_debug_print_loop),
    Case(f"jit SELU f32[{SELU_SIZE:,}] (seed 004)", "us", _jit_on_stream(lambda fw: _selu(fw.np), SELU_SIZE), gpu=True),
    Case(SELU_STREAM, "ms", _jit_on_stream(lambda fw: _selu(fw.np)), gpu=True, one_arena=True),
    Case(COPY_STREAM, "ms", _jit_on_stream(_copy), gpu=True, one_arena=True),
    Case(MATMUL, "ms", bench_matmul_bf16, gpu=True),
    Case(SPARSE_MATMUL, "us", bench_sparse_matmul),  # not in issue 13's pinned GPU suite: run it with -k BCOO
]


def _stream_bytes(sizes: dict[str, int]) -> int:
    return 2 * 4 * sizes["stream"]  # f32[n] read once and written once


def _geomean(sizes: dict[str, int], *seconds: float) -> float:
    return math.exp(sum(math.log(s) for s in seconds) / len(seconds))


DERIVED: list[Derived] = [
    Derived("eager op latency, small arrays: geometric mean of the add, mul, tanh, sum and max rows (issue 18's "
            "target: kiln/jax ≤ 0.8)", EAGER_SMALL, lambda sizes, *s: _geomean(sizes, *s) * 1e6, "{:.2f} us"),
    Derived("↳ first-call speed-up of a warm cache (cold / warm; issue 16's target: ≥ 3.3, warm ≤ 0.3× cold)",
            (FIRST_COLD, FIRST_WARM), lambda sizes, cold, warm: cold / warm, "{:.1f}×"),
    Derived("↳ copy bandwidth (read + write)", (COPY_STREAM,),
            lambda sizes, copy: _stream_bytes(sizes) / copy / 1e9, "{:.0f} GB/s"),
    Derived("↳ SELU: fraction of copy bandwidth (copy time / SELU time)", (SELU_STREAM, COPY_STREAM),
            lambda sizes, selu, copy: copy / selu, "{:.2f}"),
    Derived("↳ matmul throughput (2n³ / time)", (MATMUL,),
            lambda sizes, mm: 2 * sizes["matmul"] ** 3 / mm / 1e12, "{:.2f} TFLOP/s"),
]
