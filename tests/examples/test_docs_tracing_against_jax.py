"""JAX's docs page docs/tracing.md ("Tracing") under kiln and under JAX 0.10.2: the same values, dtypes and weak
types, the same printed tracers, the same jaxpr and the same exception classes (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_tracing.py, the JAX side the same source with JAX's imports put
back; the NumPy oracles and the page's claims are in test_docs_tracing.py. Both sides draw the page's inputs from
NumPy's global generator seeded alike. Exceptions: kiln's class is JAX's (jax.errors' classes by name) or a
subclass (same_as_jax.assert_same_exception); kiln's messages are its own.

Differences, tested as such:
- the jaxpr of `jnp.dot(x + 1, y + 1)`: kiln broadcasts the literal 1.0 with a broadcast_in_dim before each add (JAX
  0.10.2: `add a 1.0:f32[]`); compared with those broadcasts taken out (tests/examples/jaxpr_canon.py; the strict
  xfail is in test_docs_jaxpr_against_jax.py).

`int(x)` and `bool(x)` of a concrete tracer being differentiated (grad, jvp) return the primal's value in both;
`float(x)` raises in both.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jaxpr_canon import canonical  # noqa: E402
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_tracing"), load("docs_tracing", "jax")


@pytest.fixture(autouse=True)
def _numpy_global_rng():
    state = np.random.get_state()
    yield
    np.random.set_state(state)


def _run(fn, *args):
    """(what fn returns, or the exception it raised; what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            res = fn(*args)
        except Exception as e:  # noqa: BLE001 (the cells that raise on the page)
            res = e
    return res, buf.getvalue()


def _first_cells(module):
    """The page's first two cells, one after the other from NumPy's generator seeded with 0: (values, printed)."""
    np.random.seed(0)
    (f, x, y, result), out = _run(module.print_cell)
    (x2, y2, result2), out2 = _run(module.second_call_cell, f)
    return (x, y, result, x2, y2, result2), (out, out2)


def test_tracing_cells(both):
    k, j = both
    (kvals, (kout, kout2)), (jvals, (jout, jout2)) = _first_cells(k), _first_cells(j)
    assert kout == jout  # "Running f():" and the tracers
    assert kout2 == jout2 == ""  # the second call traces nothing
    assert_same(kvals, jvals, rtol=1e-6)


def test_make_jaxpr_cell(both):
    k, j = both
    x, y = np.random.randn(3, 4), np.random.randn(4)
    kc, jc = k.make_jaxpr_cell(x, y), j.make_jaxpr_cell(x, y)
    (kt, kdrop), (jt, jdrop) = canonical(kc, scalar_broadcasts=True), canonical(jc, scalar_broadcasts=True)
    assert kt == jt
    # the parameters left out: None in both (dot_general's precision), or JAX's out_sharding, which kiln lacks
    assert set(jdrop) == {"dot_general"} and jdrop["dot_general"] <= {"precision", "out_sharding"}
    assert all(keys <= jdrop.get(p, set()) for p, keys in kdrop.items())
    assert str(kc).splitlines()[0] == str(jc).splitlines()[0]  # the binders
    # the dot_general's parameters, as printed (its variables' names differ: kiln's two broadcasts come first)
    assert str(kc).splitlines()[-4:-2] == str(jc).splitlines()[-4:-2] == [
        "      dimension_numbers=(([1], [0]), ([], []))", "      preferred_element_type=float32"]
    kv = kiln.core.eval_jaxpr(kc.jaxpr, kc.consts, x.astype(np.float32), y.astype(np.float32))
    jv = jax.core.eval_jaxpr(jc.jaxpr, jc.consts, x.astype(np.float32), y.astype(np.float32))
    assert_same(kv, jv, rtol=1e-6)


@pytest.mark.parametrize("cell", ["traced_condition_cell", "reshape_traced_size_cell"])
def test_cells_that_raise(both, cell):
    k, j = both
    (ke, kout), (je, jout) = _run(getattr(k, cell)), _run(getattr(j, cell))
    assert isinstance(je, Exception) and kout == jout == ""
    assert_same_exception(ke, je)


def test_static_argnums_cells(both):
    k, j = both
    ((kf, kr), _), ((jf, jr), _) = _run(k.static_argnums_cell), _run(j.static_argnums_cell)
    assert_same(kr, jr, rtol=0)
    assert_same(k.static_recompile_cell(kf), j.static_recompile_cell(jf), rtol=0)
    assert kf._cache_size() == jf._cache_size() == 2


def test_static_and_traced_operations(both):
    k, j = both
    x = np.ones((2, 3), np.float32)
    (kr, kout), (jr, jout) = _run(k.print_static_and_traced_cell, x), _run(j.print_static_and_traced_cell, x)
    assert kr is None and jr is None and kout == jout
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert_same(k.numpy_prod_cell(x), j.numpy_prod_cell(x), rtol=0)


def test_divide(both):
    k, j = both
    for y in (2., 0.5):
        assert_same(kiln.grad(k.divide)(3., y), jax.grad(j.divide)(3., y), rtol=0)
        assert_same(kiln.grad(k.divide, argnums=1)(3., y), jax.grad(j.divide, argnums=1)(3., y), rtol=0)
        assert_same(kiln.jit(k.divide, static_argnums=1)(3., y), jax.jit(j.divide, static_argnums=1)(3., y), rtol=0)
    assert_same_exception(_run(kiln.jit(k.divide), 3., 2.)[0], _run(jax.jit(j.divide), 3., 2.)[0])


CONVERSIONS = {"bool": lambda x: bool(x >= 1.), "int": int, "float": float}


def _transforms(lib):
    lax = lib.lax
    return {
        "jit": lambda c: lib.jit(lambda x: x * c(x))(2.),
        "vmap": lambda c: lib.vmap(lambda x: x * c(x))(np.ones(2, np.float32)),
        "make_jaxpr": lambda c: lib.make_jaxpr(lambda x: x * c(x))(2.).out_avals,
        "pmap": lambda c: lib.pmap(lambda x: x * c(x[0]))(np.ones((1, 1), np.float32)),
        "grad": lambda c: lib.grad(lambda x: x * c(x))(2.),
        "jvp": lambda c: lib.jvp(lambda x: x * c(x), (2.,), (1.,)),
        "grad inside jit": lambda c: lib.jit(lib.grad(lambda x: x * c(x)))(2.),
        "cond": lambda c: lax.cond(True, lambda x: x * c(x), lambda x: x, 2.),
        "while_loop": lambda c: lax.while_loop(lambda x: x < 3., lambda x: x + c(x), 2.),
        "fori_loop": lambda c: lax.fori_loop(0, 2, lambda i, x: x + c(x), 2.),
        "scan": lambda c: lax.scan(lambda x, _: (x + c(x), x), 2., None, length=2),
    }


KINDS = [pytest.param(where, convert) for where in _transforms(jax) for convert in CONVERSIONS]


@pytest.mark.parametrize(("where", "convert"), KINDS)
def test_kinds_of_tracers(where, convert):
    """The same outcome for a Python conversion of a traced value under each transformation: the value, or the
    exception class (abstract tracers; float() of a value being differentiated)."""
    c = CONVERSIONS[convert]
    (kr, _), (jr, _) = _run(_transforms(kiln)[where], c), _run(_transforms(jax)[where], c)
    if isinstance(jr, Exception):
        assert_same_exception(kr, jr)
    else:
        if where == "make_jaxpr":
            assert str(kr) == str(jr)
        else:
            assert_same(kr, jr, rtol=0)


@pytest.mark.parametrize("fn", [lambda x: x * int(x), lambda x: x * 2. if x else x], ids=["int", "bool"])
def test_conversions_of_a_differentiated_value(fn):
    assert_same(kiln.grad(fn)(2.5), jax.grad(fn)(2.5), rtol=0)
