"""jit never makes a failure worse: errors propagate once, recursion ends, threads compile once,
and compiled code is freed with the function that made it."""
from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import kiln
import kiln.numpy as knp


class Boom(ValueError):
    pass


def _failing(calls: list):
    @kiln.jit
    def bad(x):
        calls.append(1)
        raise Boom("boom while tracing")
    return bad


def test_failing_trace_runs_the_body_once():
    calls = []
    bad = _failing(calls)
    with pytest.raises(Boom, match="boom while tracing"):
        bad(1.0)
    assert len(calls) == 1
    with pytest.raises(Boom):  # and again on the next call (nothing cached that hides the error)
        bad(knp.ones(3))
    assert len(calls) == 2


@pytest.mark.parametrize("depth", [1, 5, 12])
def test_failing_trace_inside_nested_jits_runs_once(depth):
    calls = []
    f = _failing(calls)
    for _ in range(depth):
        f = kiln.jit(lambda x, g=f: g(x) + 1.0)
    with pytest.raises(Boom):
        f(knp.ones(2))
    assert len(calls) == 1


def test_function_still_works_after_a_failed_signature():
    state = {"fail": True}

    @kiln.jit
    def f(x):
        if state["fail"]:
            raise Boom("first call fails")
        return x * 2.0

    x = knp.arange(3.0)
    with pytest.raises(Boom):
        f(x)
    state["fail"] = False
    for _ in range(3):  # the signature that failed is traced again, and then taken by the fast path
        np.testing.assert_array_equal(np.asarray(f(x)), [0.0, 2.0, 4.0])


def test_unbounded_recursion_raises_recursion_error(run_py):
    proc = run_py("""
import time, kiln, kiln.numpy as knp
@kiln.jit
def f(x):
    return f(x) + 1.0
t = time.perf_counter()
try:
    f(knp.ones(2))
except RecursionError as e:
    print("RecursionError after", round(time.perf_counter() - t, 1), "s")
g = kiln.jit(lambda x: x + 1.0)          # kiln still works afterwards
print(float(g(knp.ones(2))[0]))
""", timeout=120)
    assert "RecursionError after" in proc.stdout, proc.stdout + proc.stderr
    assert "2.0" in proc.stdout


def test_threads_meeting_a_new_signature_compile_once(monkeypatch):
    from kiln.frontend.driver import dispatch
    compiles = []
    real = dispatch.compile_ir

    def counting(ir, *a, **k):
        if any(e.prim.name == "tanh" for e in ir.eqns):
            compiles.append(1)
        return real(ir, *a, **k)
    monkeypatch.setattr(dispatch, "compile_ir", counting)
    traces = []
    barrier = threading.Barrier(8)

    def fun(x):
        traces.append(1)
        return knp.tanh(x) * 3.0

    # Donation keeps the call on kiln's Python dispatch path, where the race used to compile per thread.
    f = kiln.jit(fun, donate_argnums=0)
    results, errors = [], []

    xs = [knp.ones(37) for _ in range(8)]

    def worker(x):
        try:
            barrier.wait()
            results.append(np.asarray(f(x)))
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 8
    assert len(traces) == 1 and len(compiles) == 1, (len(traces), len(compiles))


def test_dropped_function_frees_its_executables():
    x = knp.ones(5)
    refs = []
    for i in range(5):
        c = np.full(5, i, np.float32)
        f = kiln.jit(lambda x: x * c)
        f(x)
        f(x)  # the fast path holds the executable too
        refs.append(weakref.ref(f._executables()[0]))
        del f
    gc.collect()
    assert all(r() is None for r in refs), "a dropped jitted function's executable is still alive"


def test_one_function_keeps_a_bounded_number_of_signatures(monkeypatch):
    from kiln.frontend.driver import jit as jit_module
    monkeypatch.setattr(jit_module, "SIGNATURES_PER_FUNCTION", 8)
    f = kiln.jit(lambda x: x + 1.0)
    cap = 8
    for n in range(1, cap + 20):
        f(np.ones(n, np.float32))
    assert f._cache_size() <= cap and len(f._executables()) <= cap
    np.testing.assert_array_equal(np.asarray(f(np.ones(1, np.float32))), [2.0])  # evicted: traced again


def test_jit_of_the_same_function_twice_shares_the_trace():
    traces = []

    def fun(x):
        traces.append(1)
        return x * 2.0

    x = knp.ones(3)
    kiln.jit(fun)(x)
    kiln.jit(fun)(x)
    assert len(traces) == 1
    kiln.jit(fun, static_argnums=())(x)  # same options: same cache
    assert len(traces) == 1
    kiln.jit(fun, donate_argnums=0)(knp.ones(3))  # other options: another cache
    assert len(traces) == 2


def test_shared_trace_cache_does_not_keep_the_function_alive():
    def fun(x):
        return x - 1.0
    kiln.jit(fun)(knp.ones(2))
    r = weakref.ref(fun)
    del fun
    gc.collect()
    assert r() is None
