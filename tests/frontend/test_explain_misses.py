"""kiln.explain_cache_misses says why a jitted function was traced again."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_explains_a_dtype_change():
    f = kiln.jit(lambda x: x + 1)
    f(knp.ones(3))
    with kiln.explain_cache_misses():
        with pytest.warns(UserWarning, match=r"argument shapes/dtypes changed \(f32\[3\] -> i32\[3\]\)"):
            f(knp.ones(3, dtype=np.int32))


def test_explains_a_static_change_and_stays_quiet_on_hits(recwarn):
    f = kiln.jit(lambda x, n: x * n, static_argnames="n")
    x = knp.ones(2)
    f(x, n=2)
    with kiln.explain_cache_misses():
        f(x, n=2)
        assert not [w for w in recwarn if "cache miss" in str(w.message)]
        with pytest.warns(UserWarning, match="static arguments changed"):
            f(x, n=3)


def test_explains_a_first_trace_as_jax_says_never_seen_function():
    def step(x):
        return x + 1
    with kiln.explain_cache_misses():
        with pytest.warns(UserWarning, match=r"kiln.jit\(step\): cache miss, tracing for the first time \(a function "
                                             r"never called before, defined at .*test_explain_misses.py:\d+\)$"):
            kiln.jit(step)(knp.ones(2))


def test_a_function_jitted_anew_per_call_is_named_as_the_cause(recwarn):
    x = knp.ones(2)
    with kiln.explain_cache_misses():
        for _ in range(2):
            kiln.jit(lambda v: v * 2)(x)
    messages = [str(w.message) for w in recwarn if "cache miss" in str(w.message)]
    assert len(messages) == 2
    assert "another function made from the same code" not in messages[0]
    assert "another function made from the same code was traced before" in messages[1]


def test_kiln_library_functions_and_hits_say_nothing(recwarn):
    f = kiln.jit(lambda x: x - 1)
    f(knp.ones(2))
    with kiln.explain_cache_misses():
        f(knp.ones(2))
        knp.tanh(knp.ones(5)) + knp.cos(knp.ones(5))
        knp.tanh(knp.ones(6))  # (a retrace of kiln.numpy.tanh, whatever ran before in this process)
    assert not [w for w in recwarn if "cache miss" in str(w.message)]
