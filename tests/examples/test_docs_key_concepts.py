"""JAX's docs pages docs/key-concepts.md ("Key concepts": transformations, tracing, jaxprs, pytrees, the API layering)
and docs/default_dtypes.md ("Default dtypes and the X64 flag"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_key_concepts.py), checked against oracles that do not involve JAX: the SELU in
float64 NumPy, NumPy's convolution, Python's own trees for the pytree cells (what the structures and leaves print),
the jaxpr evaluated on other inputs, and the text and values the pages show (default_dtypes.md's doctest and its x64
cell's output, its prose's claims: 32-bit defaults, no 64-bit values at all without the flag, 64-bit defaults with
it, the environment variable, weak types of Python scalars).

The API layering cells are also thinking_in_jax.py's (tests/examples/test_thinking_in_jax.py checks them against
the same oracles); here they are checked for this page's claims. The environment variable is kiln's
(``KILN_ENABLE_X64``): ``JAX_ENABLE_X64`` alone leaves kiln in 32-bit mode with a warning that names it (README,
"Differences from JAX").
"""
from __future__ import annotations

import contextlib
import io
import operator
import warnings

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp


@pytest.fixture(scope="module")
def page():
    return load("docs_key_concepts")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _np_selu(x, alpha=1.67, lambda_=1.05):
    x = np.asarray(x, np.float64)
    return lambda_ * np.where(x > 0, x, alpha * np.exp(x) - alpha)


XS = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5], np.float32)


# ============================================== docs/key-concepts.md ================================================
# ---------------------------------------------- Transformations -----------------------------------------------------

def test_jitted_selu_prints_its_value(page):
    selu_jit, out = _run(page.selu_jit_block)
    assert out == "1.05\n"  # selu(1.0) = lambda_ * 1.0, printed as float32's shortest repr
    r = selu_jit(1.0)
    assert (r.dtype, r.shape, r.weak_type) == (np.float32, (), True)  # a Python float in: weakly typed out
    assert float(r) == float(np.float32(1.05))
    np.testing.assert_allclose(selu_jit(XS), _np_selu(XS), rtol=1e-6, atol=1e-7)
    # alpha and lambda_ are traced arguments too
    np.testing.assert_allclose(selu_jit(XS, 2.0, 0.5), _np_selu(XS, 2.0, 0.5), rtol=1e-6, atol=1e-7)


def test_decorated_selu_is_the_same_function_jitted(page):
    selu = page.selu_decorator_block()
    assert callable(selu.lower) and selu.__name__ == "selu"  # a jitted function, named after the page's
    np.testing.assert_allclose(selu(XS), _np_selu(XS), rtol=1e-6, atol=1e-7)
    selu_jit, _ = _run(page.selu_jit_block)
    np.testing.assert_array_equal(selu(XS), selu_jit(XS))  # decorator syntax or a call of jax.jit: the same
    assert selu(jnp.asarray(XS)).dtype == np.float32
    # below zero selu tends to -lambda_ * alpha
    np.testing.assert_allclose(float(selu(-30.0)), -1.05 * 1.67, rtol=1e-6)


# ---------------------------------------------- Tracing -------------------------------------------------------------

def test_printing_inside_jit_shows_a_tracer(page):
    (f, result), out = _run(page.tracing_block)
    # "not the array x, but a Tracer instance that represents ... its shape and dtype"
    assert out == "JitTracer(int32[5])\n"
    assert "[0 1 2 3 4]" not in out
    assert (result.dtype, result.weak_type) == (np.int32, False)
    np.testing.assert_array_equal(result, np.arange(5) + 1)
    # the print is a Python side effect of tracing: a second call with the same shape and dtype traces nothing
    again, out = _run(f, jnp.arange(5) * 2)
    assert out == ""
    np.testing.assert_array_equal(again, np.arange(5) * 2 + 1)
    # another shape or dtype is traced anew, and prints its own
    other, out = _run(f, jnp.arange(3.0))
    assert out == "JitTracer(float32[3])\n"
    np.testing.assert_array_equal(other, np.arange(3.0) + 1)


# ---------------------------------------------- Jaxprs --------------------------------------------------------------

def _primitives(jaxpr):
    """The equations' primitives, nested programs' equations in their place, broadcasts of scalars left out."""
    names = []
    for e in jaxpr.eqns:
        subs = [getattr(v, "jaxpr", v) for v in e.params.values() if hasattr(getattr(v, "jaxpr", v), "eqns")]
        if subs:
            for s in subs:
                names += _primitives(s)
        elif not (e.primitive.name == "broadcast_in_dim" and e.invars[0].aval.shape == ()):
            names.append(e.primitive.name)
    return names


def test_the_jaxpr_of_selu(page):
    closed = page.make_jaxpr_block()
    jaxpr = closed.jaxpr
    # one f32[5] input (jnp.arange(5.0)), one f32[5] output
    assert [(v.aval.shape, np.dtype(v.aval.dtype)) for v in jaxpr.invars] == [((5,), np.float32)]
    assert [(v.aval.shape, np.dtype(v.aval.dtype)) for v in jaxpr.outvars] == [((5,), np.float32)]
    # "it encodes the precise sequence of operations": x > 0, exp(x), alpha * ., . - alpha, where, lambda_ * .
    assert _primitives(jaxpr) == ["gt", "exp", "mul", "sub", "select", "mul"]
    text = str(closed)
    assert text.splitlines()[0] == "{ lambda ; a:f32[5]. let"
    for literal in ("0.0:f32[]", f"{float(np.float32(1.67))!r}:f32[]", f"{float(np.float32(1.05))!r}:f32[]"):
        assert literal in text  # the default arguments, baked in as float32 literals
    # the recorded program is selu, on inputs other than the one it was traced with
    (out,) = kiln.core.eval_jaxpr(jaxpr, closed.consts, XS[:5])
    np.testing.assert_allclose(out, _np_selu(XS[:5]), rtol=1e-6, atol=1e-7)
    (out,) = kiln.core.eval_jaxpr(jaxpr, closed.consts, np.arange(5.0, dtype=np.float32))
    np.testing.assert_allclose(out, _np_selu(np.arange(5.0)), rtol=1e-6)


# ---------------------------------------------- Pytrees -------------------------------------------------------------

def test_nested_list_of_parameters(page):
    params, out = _run(page.list_params_block)
    assert out.splitlines() == [
        "PyTreeDef([*, *, (*, *)])",
        "[1, 2, Array([0, 1, 2], dtype=int32), Array([1., 1.], dtype=float32)]"]
    leaves = kiln.tree.leaves(params)
    assert leaves[:2] == [1, 2] and leaves[2] is params[2][0] and leaves[3] is params[2][1]
    treedef = kiln.tree.structure(params)
    assert treedef.num_leaves == 4 and kiln.tree.unflatten(treedef, leaves) == params
    # the prose: tree.map maps a function over every leaf, tree.reduce reduces across them
    doubled = kiln.tree.map(lambda x: x * 2, params)
    assert doubled[:2] == [2, 4] and isinstance(doubled[2], tuple)
    np.testing.assert_array_equal(doubled[2][0], [0, 2, 4])
    np.testing.assert_array_equal(doubled[2][1], [2.0, 2.0])
    total = kiln.tree.reduce(operator.add, kiln.tree.map(lambda x: jnp.sum(x), params))
    assert float(total) == 1 + 2 + (0 + 1 + 2) + 2


def test_dict_of_parameters(page):
    params, out = _run(page.dict_params_block)
    # a dict's keys in sorted order ('W' < 'b' < 'n'), whatever the order they were written in
    assert out.splitlines() == [
        "PyTreeDef({'W': *, 'b': *, 'n': *})",
        "[Array([[1., 1.],", "       [1., 1.]], dtype=float32), Array([0., 0.], dtype=float32), 5]"]
    assert [k for k in sorted(params)] == ["W", "b", "n"]
    leaves = kiln.tree.leaves(params)
    assert leaves[0] is params["W"] and leaves[1] is params["b"] and leaves[2] == 5
    shapes = kiln.tree.map(lambda x: np.shape(x), params)
    assert shapes == {"n": (), "W": (2, 2), "b": (2,)}


def test_namedtuple_of_parameters(page):
    params, out = _run(page.namedtuple_params_block)
    assert out.splitlines() == ["PyTreeDef(CustomNode(namedtuple[Params], [*, *]))", "[1, 5.0]"]
    assert kiln.tree.leaves(params) == [1, 5.0]
    rebuilt = kiln.tree.unflatten(kiln.tree.structure(params), [2, 7.5])
    assert type(rebuilt) is page.Params and rebuilt == page.Params(2, 7.5)
    assert kiln.tree.map(lambda x: x + 1, params) == page.Params(2, 6.0)
    assert kiln.tree.reduce(operator.add, params) == 6.0


# ---------------------------------------------- JAX API layering: NumPy, lax & XLA ----------------------------------

def test_jnp_promotes_and_lax_does_not(page):
    r = page.jnp_add_block()
    # "implicitly promote arguments to allow operations between mixed data types": int + float is a float; two
    # Python scalars stay weakly typed
    assert (r.dtype, r.weak_type, float(r)) == (np.float32, True, 2.0)
    assert repr(r) == "Array(2., dtype=float32, weak_type=True)"
    with pytest.raises(TypeError) as info:
        page.lax_add_block()
    msg = str(info.value)
    assert "add" in msg and "int32" in msg and "float32" in msg
    # "you'll have to do type promotion explicitly"
    r = page.lax_add_promoted_block()
    assert (r.dtype, r.weak_type, float(r)) == (np.float32, False, 2.0)
    assert repr(r) == "Array(2., dtype=float32)"


def test_convolve_and_its_general_convolution(page):
    x, y, conv = page.convolve_block()
    assert (x.dtype, y.dtype) == (np.int32, np.float32)
    expected = np.convolve([1, 2, 1], np.ones(10))
    assert (conv.dtype, conv.shape) == (np.float32, (12,))
    np.testing.assert_array_equal(conv, expected)
    result = page.conv_general_dilated_block(x, y)
    # "equivalent of padding='full' in NumPy"; astype(float) is float32 without x64
    assert (result.dtype, result.shape, result.weak_type) == (np.float32, (12,), False)
    np.testing.assert_array_equal(result, np.convolve([1, 2, 1], np.ones(10), mode="full"))
    np.testing.assert_array_equal(result, conv)
    # the padding is what makes it 'full': without it, only the positions where the length-10 kernel lies inside
    # the length-3 input, none (lax takes its operands as input and kernel as given; NumPy's convolve swaps them)
    valid = kiln.lax.conv_general_dilated(x.reshape(1, 1, 3).astype(float), y.reshape(1, 1, 10), window_strides=(1,),
                                          padding=[(0, 0)])
    assert valid.shape == (1, 1, 0)
    swapped = kiln.lax.conv_general_dilated(y.reshape(1, 1, 10), x.reshape(1, 1, 3).astype(float), window_strides=(1,),
                                            padding="VALID")
    np.testing.assert_array_equal(swapped[0, 0], np.convolve([1, 2, 1], np.ones(10), mode="valid"))


# ============================================== docs/default_dtypes.md ==============================================

# The doctest's outputs and the x64 cell's output, as the page shows them.
PAGE_DOCTEST = ["Array([0, 1, 2, 3, 4], dtype=int32)", "Array([0., 0., 0., 0., 0.], dtype=float32)",
                "Array([1, 1, 1, 1, 1], dtype=int32)"]
PAGE_X64_OUTPUT = ["Array([0, 1, 2, 3, 4], dtype=int64)", "Array([0., 0., 0., 0., 0.], dtype=float64)",
                   "Array([1, 1, 1, 1, 1], dtype=int64)"]


def test_default_setting_is_32_bits(page):
    assert kiln.config.enable_x64 is False and kiln.config.jax_enable_x64 is False  # "By default ... False"
    arrays = page.default_dtypes_block()
    assert [repr(a) for a in arrays] == PAGE_DOCTEST
    for a, want in zip(arrays, (np.arange(5), np.zeros(5), np.ones(5, dtype=int))):
        np.testing.assert_array_equal(a, want)
        assert a.weak_type is False
    assert np.dtype(int) == np.int64  # NumPy's default int here is 64-bit; dtype=int is int32 nonetheless


def test_64_bit_dtypes_are_truncated_without_x64(page):
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64 .*not available, and will be "
                                         "truncated to dtype float32") as record:
        a = page.truncated_float64_block()
    assert len(record) == 1
    assert repr(a) == "Array([0., 1., 2., 3., 4.], dtype=float32)"
    # "prevents you from creating 64-bit arrays at all": NumPy's 64-bit arrays and scalars become 32-bit too
    for value, want in ((np.arange(3, dtype=np.int64), np.int32), (np.linspace(0, 1, 3), np.float32),
                        (np.arange(3, dtype=np.uint64), np.uint32), (np.ones(2, np.complex128), np.complex64),
                        (np.float64(1.5), np.float32), (np.int64(7), np.int32)):
        got = jnp.asarray(value)
        assert got.dtype == want, (value, got.dtype)
        np.testing.assert_array_equal(got, np.asarray(value).astype(want))
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):  # (as JAX's astype)
        assert jnp.ones(3).astype(np.float64).dtype == np.float32
    for fn in (jnp.zeros, jnp.ones):
        with pytest.warns(UserWarning, match="Explicitly requested dtype int64"):
            assert fn(2, dtype=np.int64).dtype == np.int32
    # a Python int that needs 64 bits has no 32-bit value: an error, not a silent wrap
    with pytest.raises(OverflowError):
        jnp.asarray(2**40)


def test_x64_cell_prints_the_pages_output(page):
    (none, out) = _run(page.x64_block)  # (the autouse fixture of tests/conftest.py turns the flag off again)
    assert none is None and kiln.config.enable_x64 is True
    assert out.splitlines() == PAGE_X64_OUTPUT
    # with the flag on, 64-bit values can be created, and NumPy's defaults are kept
    for value, want in ((np.arange(3, dtype=np.int64), np.int64), (np.linspace(0, 1, 3), np.float64),
                        (np.arange(3, dtype=np.uint64), np.uint64), (np.ones(2, np.complex128), np.complex128)):
        assert jnp.asarray(value).dtype == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncation warning now
        a = jnp.arange(5, dtype="float64")
    assert repr(a) == "Array([0., 1., 2., 3., 4.], dtype=float64)"
    assert float(jnp.asarray(np.float64(1) + 2.0**-40)) == 1 + 2.0**-40  # a bit float32 does not have
    assert int(jnp.asarray(2**40)) == 2**40
    kiln.config.update("jax_enable_x64", False)
    assert [repr(a) for a in page.default_dtypes_block()] == PAGE_DOCTEST


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_python_scalars_are_weakly_typed_defaults(x64):
    """Python scalars take the default dtypes of their kind (32- or 64-bit by the flag), weakly typed: they adapt
    to the array they meet, so a float32 or bfloat16 computation stays in its width (the AI users' wish)."""
    kiln.config.update("jax_enable_x64", x64)
    bits = 64 if x64 else 32
    for value, kind in ((1, "int"), (1.0, "float"), (1j, "complex")):
        a = jnp.asarray(value)
        want = np.dtype(f"{kind}{2 * bits if kind == 'complex' else bits}")
        assert (a.dtype, a.weak_type) == (want, True), value
    b = jnp.asarray(True)
    assert (b.dtype, b.weak_type) == (np.bool_, False)
    # NumPy's scalars are typed, strongly (np.float64 and np.complex128 subclass Python's float and complex: kiln
    # made them weak, fixed in frontend/numpy/creation.py)
    for value, kind in ((np.float64(1.0), "float"), (np.complex128(1j), "complex"), (np.int64(1), "int")):
        a = jnp.asarray(value)
        want = np.dtype(f"{kind}{2 * bits if kind == 'complex' else bits}")
        assert (a.dtype, a.weak_type) == (want, False), value
    for dtype in (jnp.bfloat16, np.float16, np.float32):
        r = jnp.ones(3, dtype) * 2.0 + 1
        assert (r.dtype, r.weak_type) == (np.dtype(dtype), False)
    r = jnp.arange(3, dtype=np.int8) + 1
    assert r.dtype == np.int8
    r = jnp.arange(3, dtype=np.int8) + 1.5  # int array and Python float: the default float
    assert (r.dtype, r.weak_type) == (np.dtype(f"float{bits}"), True)


def test_a_jitted_function_follows_the_flag():
    """The page: "code execution may happen in a different context than code compilation". kiln keys its compiled
    programs by the flag (frontend/core/config.py): a function traced in 32-bit mode is traced anew in 64-bit mode."""
    f = kiln.jit(lambda: jnp.arange(3) + 1.0)
    assert f().dtype == np.float32
    kiln.config.update("jax_enable_x64", True)
    assert f().dtype == np.float64
    kiln.config.update("jax_enable_x64", False)
    assert f().dtype == np.float32


X64_SCRIPT = """
import warnings
warnings.simplefilter("always")
import kiln.numpy as jnp
print(repr(jnp.arange(5)))
print(repr(jnp.zeros(5)))
print(repr(jnp.ones(5, dtype=int)))
"""


def test_environment_variable(run_py):
    """The page's `JAX_ENABLE_X64=1 python main.py`: kiln's variable is KILN_ENABLE_X64; JAX's alone is named in a
    warning at import, and has no effect (README, "Differences from JAX")."""
    proc = run_py(X64_SCRIPT, env={"KILN_ENABLE_X64": "1"})
    assert proc.stdout.splitlines() == PAGE_X64_OUTPUT
    proc = run_py(X64_SCRIPT, env={"JAX_ENABLE_X64": "1"})
    assert proc.stdout.splitlines() == PAGE_DOCTEST
    assert "JAX_ENABLE_X64='1' (kiln's variable: KILN_ENABLE_X64)" in proc.stderr
