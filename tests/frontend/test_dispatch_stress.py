"""Stress tests of jit's C++ dispatch path, each in a fresh interpreter so that a crash fails a test.

The C++ fast path reads one input sharding and one layout per argument the executable takes,
closed-over constants included; a record with too few entries made jaxlib read past the end of its
lists and crash the process, typically after some tens of calls with an array constant.
"""
from __future__ import annotations

import pytest

PRELUDE = """
import gc, threading
import numpy as np
import kiln, kiln.numpy as knp
kiln.devices()
gc.freeze()  # what the imports made is never garbage: gc.collect() below walks only what the test makes
"""


def _run(run_py, body: str) -> str:
    proc = run_py(PRELUDE + body, timeout=120)
    assert "DONE" in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout


def test_closed_over_constant_many_calls(run_py):
    _run(run_py, """
for n in (1, 6, 7, 8, 9, 63, 64, 65, 1023, 1024, 1025, 4097):
    c = np.arange(n, dtype=np.float32)
    f = kiln.jit(lambda x: x + c)
    x = knp.ones(n)
    for i in range(120):
        y = f(x)
        if i % 40 == 0:
            gc.collect()
    np.testing.assert_array_equal(np.asarray(y), c + 1)
print("DONE")
""")


def test_constants_and_unused_arguments(run_py):
    # Constants plus arguments the executable drops: the kept-bit vector filters both.
    _run(run_py, """
c1 = np.arange(1025, dtype=np.float32)
c2 = knp.arange(1025.0)
f = kiln.jit(lambda unused, x, also_unused: (x + c1) * c2)
x = knp.ones(1025)
u = knp.zeros(3)
for i in range(200):
    y = f(u, x, u)
np.testing.assert_allclose(np.asarray(y), (1 + np.arange(1025)) * np.arange(1025))
print("DONE")
""")


def test_one_function_two_shapes(run_py):
    _run(run_py, """
c = np.float32(3.0) * np.ones(7, np.float32)
f = kiln.jit(lambda x: x[..., :7] * c)
a, b = knp.ones((2, 9)), knp.ones((9,))
for i in range(150):
    ya, yb = f(a), f(b)
np.testing.assert_array_equal(np.asarray(ya), 3 * np.ones((2, 7)))
np.testing.assert_array_equal(np.asarray(yb), 3 * np.ones(7))
print("DONE")
""")


def test_fresh_functions_with_gc(run_py):
    _run(run_py, """
x = knp.ones(1025)
for i in range(150):
    c = np.full(1025, i, np.float32)
    f = kiln.jit(lambda x: x * c + 1.0)
    for _ in range(3):
        y = f(x)
    assert float(y[5]) == i + 1.0
    del f
    gc.collect()
print("DONE")
""")


def test_threads_calling_fresh_functions(run_py):
    _run(run_py, """
errors = []
def worker(f, x, want):
    try:
        for _ in range(50):
            y = f(x)
        np.testing.assert_array_equal(np.asarray(y), want)
    except Exception as e:  # reported below
        errors.append(e)
for r in range(40):
    c = np.arange(r, r + 1025, dtype=np.float32)
    f = kiln.jit(lambda x: x - c)
    x = knp.zeros(1025)
    ts = [threading.Thread(target=worker, args=(f, x, -c)) for _ in range(2)]
    for t in ts: t.start()
    for t in ts: t.join()
assert not errors, errors[:3]
print("DONE")
""")


def test_eager_ops_many_shapes(run_py):
    _run(run_py, """
for n in (1, 7, 8, 9, 64, 1023, 1024, 1025):
    a = knp.arange(float(n))
    for _ in range(60):
        b = knp.sin(a) + a * 2.0
    np.testing.assert_allclose(np.asarray(b), np.sin(np.arange(n)) + 2 * np.arange(n), rtol=1e-6)
print("DONE")
""")


@pytest.mark.parametrize("seed", [0, 1])
def test_random_programs(run_py, seed):
    # Small random programs mixing constants, unused arguments and pytree outputs, called repeatedly.
    _run(run_py, f"""
rng = np.random.default_rng({seed})
for trial in range(60):
    n = int(rng.choice([1, 5, 8, 63, 64, 65, 1024, 1025]))
    consts = [rng.standard_normal(n).astype(np.float32) for _ in range(int(rng.integers(0, 4)))]
    n_args = int(rng.integers(1, 4))
    used = [bool(u) for u in rng.integers(0, 2, n_args)]
    used[0] = True
    def f(*args):
        acc = args[0]
        for a, u in zip(args[1:], used[1:]):
            if u:
                acc = acc + a
        for c in consts:
            acc = acc * 0.5 + c
        return {{"y": acc, "s": acc.sum()}}
    jf = kiln.jit(f)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(n_args)]
    args = [knp.asarray(h) for h in host]
    for _ in range(5):
        out = jf(*args)
    want = host[0].copy()
    for h, u in zip(host[1:], used[1:]):
        if u:
            want = want + h
    for c in consts:
        want = want * np.float32(0.5) + c
    np.testing.assert_allclose(np.asarray(out["y"]), want, rtol=1e-5, atol=1e-5)
print("DONE")
""")
