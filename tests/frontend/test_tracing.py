"""Tracing: the IR printer, tracer conversion errors, leaked tracers, pytrees through jit, x64."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

X3 = np.array([1.0, -2.0, 3.0], np.float32)


# -- the IR printer ---------------------------------------------------------------------------

def test_make_ir_prints_like_a_jaxpr():
    ir = kiln.make_ir(lambda a: knp.tanh(a))(X3)
    assert str(ir) == ("{ lambda ; a:f32[3]. let\n"
                       "    b:f32[3] = tanh a\n"
                       "  in (b,) }")
    assert repr(ir) == str(ir)


def test_make_ir_literals_inline_and_scalar_program():
    # the seed's make_jaxpr example: f(x) = 2*x*x + 3*x + 3 on a Python int
    def f(x):
        return x * 2 * x + x * 3 + 3

    assert str(kiln.make_ir(f)(3)) == ("{ lambda ; a:i32[]. let\n"
                                       "    b:i32[] = mul a 2\n"
                                       "    c:i32[] = mul b a\n"
                                       "    d:i32[] = mul a 3\n"
                                       "    e:i32[] = add c d\n"
                                       "    f:i32[] = add e 3\n"
                                       "  in (f,) }")
    assert "mul a 2.0" in str(kiln.make_ir(f)(3.0))
    assert str(kiln.make_ir(f)(3.0)).startswith("{ lambda ; a:f32[]. let")


def test_make_ir_constvars_params_and_multiple_outputs():
    c = knp.asarray(np.arange(3, dtype=np.float32))
    h = np.ones((2, 3), np.float32)
    text = str(kiln.make_ir(lambda a, m: (a + c + c, m.sum(axis=0), lax.convert_element_type(a, np.int32)))(X3, h))
    assert text == ("{ lambda a:f32[3]; b:f32[3] c:f32[2,3]. let\n"
                    "    d:f32[3] = add b a\n"
                    "    e:f32[3] = add d a\n"
                    "    f:f32[3] = reduce_sum[axes=(0,)] c\n"
                    "    g:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
                    "  in (e, f, g) }")


def test_make_ir_identity_and_no_inputs():
    assert str(kiln.make_ir(lambda a: a)(X3)) == "{ lambda ; a:f32[3]. let\n  in (a,) }"
    text = str(kiln.make_ir(lambda: knp.zeros(2, dtype=knp.int32))())
    assert text.startswith("{ lambda ; . let\n") and "a:i32[2] = broadcast_in_dim" in text


def test_make_ir_static_argnums_and_nested_jit():
    text = str(kiln.make_ir(lambda a, n: a * n, static_argnums=1)(X3, 3))
    assert "3.0" in text and text.startswith("{ lambda ; a:f32[3]. let")  # n is baked in, not an input

    inner = kiln.jit(lambda a: knp.sin(a))
    text = str(kiln.make_ir(lambda a: inner(a) + 1)(X3))
    assert "jit_call[name='<lambda>'] a" in text
    assert "{ lambda ; a:f32[3]. let\n            b:f32[3] = sin a" in text  # the body, indented
    assert str(kiln.make_ir(inner)(X3)) == "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }"


def test_print_inside_jit_shows_a_tracer_and_runs_once(capsys):
    @kiln.jit
    def f(x):
        print("x is", x)
        return x * 2

    f(X3)
    f(X3 + 1)
    out = capsys.readouterr().out
    assert out.count("x is") == 1  # side effects happen at trace time only
    assert "Traced<f32[3]>(f)" in out


# -- tracer conversion errors -----------------------------------------------------------------

def test_python_if_on_traced_value():
    @kiln.jit
    def relu_if(x):
        if x > 0:
            return x
        return 0.0 * x

    with pytest.raises(kiln.TracerBoolConversionError,
                       match=r"bool\(\).*traced array bool\[\] while tracing relu_if\. It depends on argument x\..*"
                             r"kiln\.lax\.cond.*static_argnums"):
        relu_if(2.0)
    assert isinstance(kiln.TracerBoolConversionError("m"), kiln.ConcretizationTypeError)
    # no poisoned cache: the same function with x static works
    ok = kiln.jit(relu_if.__wrapped__, static_argnums=0)
    assert float(ok(2.0)) == 2.0 and float(ok(-2.0)) == 0.0


def test_conversions_of_traced_values_name_function_and_argument():
    cases = [
        (lambda n: knp.ones(int(n)), kiln.TracerIntegerConversionError, r"int\(\)"),
        (lambda n: float(n) * knp.ones(2), kiln.ConcretizationTypeError, r"float\(\)"),
        (lambda n: knp.ones(3)[[0, 1, 2][n]], kiln.TracerIntegerConversionError, r"__index__\(\)"),
        (lambda n: complex(n), kiln.ConcretizationTypeError, r"complex\(\)"),
        (lambda n: n.item(), kiln.ConcretizationTypeError, r"\.item\(\)"),
        (lambda n: n.tolist(), kiln.ConcretizationTypeError, r"\.tolist\(\)"),
        (lambda n: n and 1, kiln.TracerBoolConversionError, r"bool\(\)"),
    ]
    for fn, err, what in cases:
        def length(count, fn=fn):
            return fn(count)

        with pytest.raises(err, match=what + r".*while tracing length\. It depends on argument count\..*"
                                             r"static_argnums"):
            kiln.jit(length)(3)


def test_error_names_pytree_argument_path():
    @kiln.jit
    def f(params, x):
        if params["w"][1] > 0:
            return x
        return -x

    with pytest.raises(kiln.TracerBoolConversionError, match=r"depends on argument params\['w'\]\[1\]"):
        f({"w": [1.0, 2.0]}, X3)


def test_error_names_every_argument_it_depends_on():
    @kiln.jit
    def f(a, b, c):
        return bool(a + b > 0) * c

    with pytest.raises(kiln.TracerBoolConversionError, match=r"depends on arguments a, b\. "):
        f(1.0, 2.0, 3.0)


def test_np_asarray_of_tracer():
    @kiln.jit
    def f(x):
        return np.sum(np.asarray(x))

    with pytest.raises(kiln.TracerArrayConversionError,
                       match=r"cannot convert a traced array f32\[3\] to a NumPy array while tracing f"):
        f(X3)


def test_leaked_tracer():
    leaked = []

    @kiln.jit
    def keep(x):
        leaked.append(x)
        return x

    keep(X3)
    t = leaked[0]
    with pytest.raises(kiln.UnexpectedTracerError, match=r"created while tracing keep was used after that trace "
                                                          r"ended.*Return it from the function"):
        t + 1  # eager use
    with pytest.raises(kiln.UnexpectedTracerError, match=r"while tracing keep.*now tracing use"):
        kiln.jit(_named("use", lambda y: y * t))(X3)  # captured by another trace
    with pytest.raises(kiln.UnexpectedTracerError, match="while tracing keep"):
        kiln.jit(lambda y: y)(t)  # passed as an argument
    # kiln still works afterwards
    np.testing.assert_array_equal(np.asarray(keep(X3)), X3)


def _named(name, fn):
    fn.__name__ = name
    return fn


def test_concrete_values_allowed_under_make_ir_static():
    # a static argument is a Python value inside the function: Python control flow on it is fine
    @kiln.jit
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x

    g = kiln.jit(f.__wrapped__, static_argnums=1)
    np.testing.assert_array_equal(np.asarray(g(X3, 3)), X3 * 8)


# -- pytrees through jit ----------------------------------------------------------------------

Params = namedtuple("Params", ["w", "b"])


def test_pytrees_in_and_out():
    @kiln.jit
    def f(d, lst, tup, p, nothing):
        assert nothing is None
        return {"sum": d["a"] + lst[0], "pair": (tup[1], None), "params": Params(p.w * 2, p.b), "list": [lst[1]]}

    out = f({"a": X3}, [X3, 5.0], (None, X3), Params(X3, 1.0), None)
    assert set(out) == {"sum", "pair", "params", "list"}
    np.testing.assert_array_equal(np.asarray(out["sum"]), X3 * 2)
    assert out["pair"][1] is None and isinstance(out["pair"], tuple)
    assert isinstance(out["params"], Params)
    np.testing.assert_array_equal(np.asarray(out["params"].w), X3 * 2)
    assert out["params"].b.weak_type and float(out["params"].b) == 1.0
    assert isinstance(out["list"], list) and float(out["list"][0]) == 5.0


def test_pytree_structure_in_cache_key():
    traces = []

    @kiln.jit
    def f(t):
        traces.append(1)
        return kiln.tree_util.tree_map(lambda v: v + 1, t)

    f({"a": X3})
    f({"a": X3 * 2})
    assert len(traces) == 1
    out = f({"a": X3, "b": X3})  # new structure: retrace
    assert len(traces) == 2 and set(out) == {"a", "b"}
    f([X3])
    f((X3,))  # list and tuple are different structures
    assert len(traces) == 4
    f(Params(X3, X3))
    assert len(traces) == 5


def test_scalar_outputs_are_arrays():
    out = kiln.jit(lambda x: (x, 2.0, 1, True, None))(X3)
    assert isinstance(out[1], kiln.Array) and out[1].dtype == np.float32 and out[1].weak_type
    assert out[2].dtype == np.int32 and out[2].weak_type
    assert out[3].dtype == np.bool_ and not out[3].weak_type
    assert out[4] is None
    assert kiln.jit(lambda: ())() == ()


# -- x64 and weak types under tracing ---------------------------------------------------------

def test_weak_type_of_python_scalar_arguments():
    f = kiln.jit(lambda x: x)
    assert f(2.0).weak_type and f(2.0).dtype == np.float32
    assert f(2).weak_type and f(2).dtype == np.int32
    assert not f(True).weak_type
    assert not f(np.float32(2.0)).weak_type
    g = kiln.jit(lambda x, y: x * y)
    assert g(knp.ones(2, dtype=knp.float16), 3.0).dtype == np.float16
    assert g(knp.ones(2, dtype=knp.bfloat16), 3).dtype == knp.bfloat16
    assert g(knp.ones(2, dtype=knp.int8), 3).dtype == np.int8
    assert g(knp.ones(2, dtype=knp.int8), 3.0).dtype == np.float32


def test_x64_flag_retraces():
    traces = []

    @kiln.jit
    def f(x):
        traces.append(1)
        return x * 1.5

    assert f(2.0).dtype == np.float32
    kiln.config.update("enable_x64", True)
    out = f(2.0)
    assert out.dtype == np.float64 and len(traces) == 2
    f(2.0)
    assert len(traces) == 2
    kiln.config.update("enable_x64", False)
    assert f(2.0).dtype == np.float32
    assert len(traces) == 2  # back to the first configuration: its entry is reused
    assert f(np.float64(2.0)).dtype == np.float32  # canonicalized without x64: a strong f32 signature
    assert len(traces) == 3
