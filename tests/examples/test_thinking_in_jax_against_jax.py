"""JAX's docs notebook thinking_in_jax.md under kiln and under JAX gives the same results (the against_jax session).

The kiln side is tests/examples/jax_ported/thinking_in_jax.py; the JAX side is the same source with JAX's imports
put back. The NumPy and closed-form oracles are in test_thinking_in_jax.py; this checks that the two libraries
agree cell by cell: the same values (the PRNG draws bit for bit), dtypes, weak types and shapes, the same reprs
and printed text (the tracers printed during tracing, the PRNG key, the draws, jax.debug.print's values), and the
same exception classes where the notebook shows an error (kiln's may be a subclass; a class from jax.errors must be
kiln.errors' class of that name, and kiln's must be an instance of every builtin exception JAX's derives from).

Left out to stay cheap (JAX compiles each eager operation, some 0.5 s a cell), as test_thinking_in_jax.py checks
them against NumPy and closed forms: the plot data, the normalisation (norm, eager and jitted), the
finite-difference, jacobian and hessian cells and the naively and manually batched products (the vmap cell, which
also runs the naive loop, is compared).

Left out because kiln differs from JAX (see the port's ``# KILN BUG:`` comment): the make_jaxpr cell's full text
(kiln adds a broadcast_in_dim equation before each add of the literal 1.0).
"""
from __future__ import annotations

import contextlib
import functools
import io

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception  # noqa: E402

import kiln  # noqa: E402


def _assert_same(kiln_tree, jax_tree, rtol=0.0):
    """Bit for bit, unless a check gives rtol (atol then the same)."""
    assert_same(kiln_tree, jax_tree, rtol, rtol)


@pytest.fixture(scope="module")
def k():
    return load("thinking_in_jax")


@pytest.fixture(scope="module")
def j():
    return load("thinking_in_jax", "jax")


@pytest.fixture(autouse=True)
def _numpy_global_rng():
    """The notebook seeds and draws from NumPy's global generator: leave its state as it was for other tests."""
    state = np.random.get_state()
    yield
    np.random.set_state(state)


def _run(lib, fn, *args, seed=None):
    """(what fn returns, what it printed); NumPy's global generator seeded first when ``seed`` is given."""
    if seed is not None:
        np.random.seed(seed)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
        lib.effects_barrier()
    return res, buf.getvalue()


def _both(k, j, name, *args, seed=None):
    """((kiln's result, its text), (JAX's result, its text)) of the cell ``name``."""
    return _run(kiln, getattr(k, name), *args, seed=seed), _run(jax, getattr(j, name), *args, seed=seed)


def _raised(fn, *args) -> BaseException:
    with pytest.raises(Exception) as e:
        fn(*args)
    return e.value


# ==================== Part 1 =======================================================================================

def test_immutability_and_at(k, j):
    (kx, kout), (jx, jout) = _both(k, j, "numpy_mutable_cell")
    assert kout == jout
    assert_same_exception(_raised(k.jax_immutable_cell), _raised(j.jax_immutable_cell))
    (ky, kout), (jy, jout) = _run(kiln, k.at_set_cell, kiln.numpy.arange(10)), _run(jax, j.at_set_cell,
                                                                                   jax.numpy.arange(10))
    assert kout == jout
    _assert_same(ky, jy)


def test_lax_and_jnp_promotion(k, j):
    for name in ("jnp_add_cell", "lax_add_promoted_cell"):
        (a, _), (b, _) = _both(k, j, name)
        _assert_same(a, b)
        assert repr(a) == repr(b)
    assert_same_exception(_raised(k.lax_add_cell), _raised(j.lax_add_cell))


def test_convolutions(k, j):
    (kres, _), (jres, _) = _both(k, j, "convolve_cell")
    for a, b in zip(kres, jres):
        _assert_same(a, b)
    assert repr(kres[2]) == repr(jres[2])
    _assert_same(k.conv_general_dilated_cell(*kres[:2]), j.conv_general_dilated_cell(*jres[:2]))


def test_get_negatives(k, j):
    (kres, _), (jres, _) = _both(k, j, "get_negatives_cell", seed=3)
    _assert_same(kres[1], jres[1])
    assert repr(kres[1]) == repr(jres[1])
    assert_same_exception(_raised(k.jit_get_negatives_cell, kres[0]), _raised(j.jit_get_negatives_cell, jres[0]))


def test_tracing_prints_and_second_call(k, j):
    (kres, kout), (jres, jout) = _both(k, j, "tracing_cell", seed=4)
    assert kout == jout  # "  x = JitTracer(float32[3,4])" ...
    _assert_same(kres[3], jres[3], rtol=1e-6)
    (k2, kout), (j2, jout) = (_run(kiln, k.second_call_cell, kres[0], seed=5),
                              _run(jax, j.second_call_cell, jres[0], seed=5))
    assert kout == jout == ""
    _assert_same(k2[2], j2[2], rtol=1e-6)


def test_make_jaxpr(k, j):
    x, y = np.ones((3, 4)), np.ones(4)
    kt, jt = str(k.make_jaxpr_cell(x, y)), str(j.make_jaxpr_cell(x, y))
    kl, jl = kt.splitlines(), jt.splitlines()
    assert kl[0] == jl[0] == "{ lambda ; a:f32[3,4] b:f32[4]. let"
    assert kl[-4:-2] == jl[-4:-2]  # dot_general's dimension_numbers and preferred_element_type
    for lines in (kl, jl):
        assert lines[-5].endswith(":f32[3] = dot_general[") and lines[-1].startswith("  in (")
    # KILN BUG: kiln's text has two more equations (broadcast_in_dim of 1.0 before each add); kt == jt is not checked.
    kn = [e.primitive.name for e in k.make_jaxpr(lambda a, b: kiln.numpy.dot(a + 1, b + 1))(x, y).jaxpr.eqns]
    jn = [e.primitive.name for e in j.make_jaxpr(lambda a, b: jax.numpy.dot(a + 1, b + 1))(x, y).jaxpr.eqns]
    assert [n for n in kn if n != "broadcast_in_dim"] == jn


def test_control_flow_and_static_argnums(k, j):
    assert_same_exception(_raised(k.traced_if_cell), _raised(j.traced_if_cell))
    (kres, _), (jres, _) = _both(k, j, "static_argnums_cell")
    _assert_same(kres[1], jres[1])
    a, b = k.static_argnums_recompile_cell(kres[0]), j.static_argnums_recompile_cell(jres[0])
    _assert_same(a, b)
    assert repr(a) == repr(b)


def _calls(lib, **jit_kwargs):
    traces = []

    @functools.partial(lib.jit, **jit_kwargs)
    def f(x, neg):
        traces.append(neg)
        return -x if neg else x

    results = [f(1, True), f(2, True), f(1, neg=True), f(1, False), f(3, neg=False), f(1.5, False)]
    with pytest.raises(ValueError) as e:
        f(1, [True])
    return results, traces, e.value


@pytest.mark.parametrize("kwargs", [dict(static_argnums=(1,)), dict(static_argnames=("neg",))])
def test_static_arguments_trace_alike(kwargs):
    kres, ktraces, kexc = _calls(kiln, **kwargs)
    jres, jtraces, jexc = _calls(jax, **kwargs)
    assert ktraces == jtraces  # the same retraces, for the same calls
    for a, b in zip(kres, jres):
        _assert_same(a, b)
    assert_same_exception(kexc, jexc)


def test_static_vs_traced_operations(k, j):
    assert_same_exception(_raised(k.traced_shape_cell), _raised(j.traced_shape_cell))
    (kr, kout), (jr, jout) = (_run(kiln, k.traced_shape_prints_cell, kiln.numpy.ones((2, 3))),
                              _run(jax, j.traced_shape_prints_cell, jax.numpy.ones((2, 3))))
    assert kr is None and jr is None
    assert kout == jout
    a, b = k.static_shape_cell(kiln.numpy.ones((2, 3))), j.static_shape_cell(jax.numpy.ones((2, 3)))
    _assert_same(a, b)
    assert repr(a) == repr(b)


# ==================== Part 2 =======================================================================================

def test_arrays_devices_sharding(k, j):
    (kx, kis), (jx, jis) = k.array_cell(), j.array_cell()
    assert kis is jis is True
    _assert_same(kx, jx)
    assert repr(k.devices_cell(kx)) == repr(j.devices_cell(jx))
    assert repr(k.sharding_cell(kx)) == repr(j.sharding_cell(jx))


def test_derivatives(k, j):
    ((_, kd), kout), ((_, jd), jout) = _both(k, j, "grad_cell")
    _assert_same(kd, jd, rtol=1e-6)
    assert kout == jout
    (a, kout), (b, jout) = _both(k, j, "grad_of_jit_cell")
    _assert_same(a, b, rtol=1e-6)
    assert kout == jout


def test_vmap_section(k, j):
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(k.key1)), np.asarray(jax.random.key_data(j.key1)))
    _assert_same(k.mat, j.mat)
    _assert_same(k.batched_x, j.batched_x)
    (a, kout), (b, jout) = _both(k, j, "vmap_cell")
    _assert_same(a, b, rtol=1e-5)
    assert kout == jout


def test_keys_and_draws(k, j):
    (kkey, kout), (jkey, jout) = _both(k, j, "key_cell")
    assert kout == jout  # "Array((), dtype=key<fry>) overlaying:\n[ 0 43]"
    (ka, kout), (ja, jout) = _run(kiln, k.same_key_cell, kkey), _run(jax, j.same_key_cell, jkey)
    assert kout == jout
    for a, b in zip(ka, ja):
        _assert_same(a, b)
    ((klast, kvals), kout), ((jlast, jvals), jout) = (_run(kiln, k.split_loop_cell, kkey),
                                                      _run(jax, j.split_loop_cell, jkey))
    assert kout == jout  # "draw 0: -1.91336..." bit for bit
    for a, b in zip(kvals, jvals):
        _assert_same(a, b)
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(klast)), np.asarray(jax.random.key_data(jlast)))


def test_print_and_debug_print(k, j):
    for name in ("print_cell", "debug_print_cell"):
        (a, kout), (b, jout) = _both(k, j, name)
        assert kout == jout, name  # "print(x) -> JitTracer(~float32[])", "jax.debug.print(y) -> 0.909..."
        _assert_same(a, b, rtol=1e-6)
