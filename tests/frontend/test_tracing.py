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
# The expected strings are what JAX 0.10.2's make_jaxpr prints for the same functions (where kiln's IR has
# the same equations; the tests that show kiln's own primitives or parameters say so).

def test_make_ir_prints_like_a_jaxpr():
    ir = kiln.make_ir(lambda a: knp.tanh(a))(X3)
    assert str(ir) == "{ lambda ; a:f32[3]. let b:f32[3] = tanh a in (b,) }"  # fits in 80 columns: one line
    assert repr(ir) == str(ir) == str(ir.jaxpr)


def test_make_ir_literals_inline_and_scalar_program():
    # the seed's make_jaxpr example: f(x) = 2*x*x + 3*x + 3 on a Python int
    def f(x):
        return x * 2 * x + x * 3 + 3

    assert str(kiln.make_ir(f)(3)) == ("{ lambda ; a:i32[]. let\n"
                                       "    b:i32[] = mul a 2:i32[]\n"
                                       "    c:i32[] = mul b a\n"
                                       "    d:i32[] = mul a 3:i32[]\n"
                                       "    e:i32[] = add c d\n"
                                       "    f:i32[] = add e 3:i32[]\n"
                                       "  in (f,) }")
    assert str(kiln.make_ir(f)(3.0)) == ("{ lambda ; a:f32[]. let\n"
                                         "    b:f32[] = mul a 2.0:f32[]\n"
                                         "    c:f32[] = mul b a\n"
                                         "    d:f32[] = mul a 3.0:f32[]\n"
                                         "    e:f32[] = add c d\n"
                                         "    f:f32[] = add e 3.0:f32[]\n"
                                         "  in (f,) }")


def test_make_ir_constvars_params_and_multiple_outputs():
    c = knp.asarray(np.arange(3, dtype=np.float32))
    h = np.ones((2, 3), np.float32)
    text = str(kiln.make_ir(lambda a, m: (a + c + c, m.sum(axis=0), lax.convert_element_type(a, np.int32)))(X3, h))
    # kiln's reduce_sum has no out_sharding parameter (JAX's prints out_sharding=None)
    assert text == ("{ lambda a:f32[3]; b:f32[3] c:f32[2,3]. let\n"
                    "    d:f32[3] = add b a\n"
                    "    e:f32[3] = add d a\n"
                    "    f:f32[3] = reduce_sum[axes=(0,)] c\n"
                    "    g:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
                    "  in (e, f, g) }")


def test_make_ir_identity_and_no_inputs():
    assert str(kiln.make_ir(lambda a: a)(X3)) == "{ lambda ; a:f32[3]. let  in (a,) }"
    assert str(kiln.make_ir(lambda a, b: a)(1.0, 2.0)) == "{ lambda ; a:f32[] b:f32[]. let  in (a,) }"
    text = str(kiln.make_ir(lambda: knp.zeros(2, dtype=knp.int32))())
    assert text == "{ lambda ; . let a:i32[2] = broadcast_in_dim 0:i32[] in (a,) }"


def test_make_ir_static_argnums_and_nested_jit():
    text = str(kiln.make_ir(lambda a, n: a * n, static_argnums=1)(X3, 3))
    assert "3.0:f32[]" in text and text.startswith("{ lambda ; a:f32[3]. let")  # n is baked in, not an input

    inner = kiln.jit(lambda a: knp.sin(a))
    text = str(kiln.make_ir(lambda a: inner(a) + 1)(X3))
    # JAX prints jit[name=<lambda> jaxpr={...}] for kiln's jit_call[name=<lambda> ir={...}], and adds the 1 without
    # a broadcast_in_dim; the body's inputs and results take the names of the equation's (JAX's rule for jit)
    assert text == ("{ lambda ; a:f32[3]. let\n"
                    "    b:f32[3] = jit_call[\n"
                    "      name=<lambda>\n"
                    "      ir={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n"
                    "    ] a\n"
                    "    c:f32[3] = broadcast_in_dim 1.0:f32[]\n"
                    "    d:f32[3] = add b c\n"
                    "  in (d,) }")
    assert str(kiln.make_ir(inner)(X3)) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def log1pexp(x):
    return knp.log(1. + knp.exp(x))


def unused_log(x):
    knp.log(x)
    return knp.sin(x) * 2.


def sin_chain(x):
    for _ in range(28):
        x = knp.sin(x)
    return x


@pytest.mark.parametrize("make,expected", [
    # JAX's docs notebook "Custom derivative rules for Python code": make_jaxpr(grad(log1pexp))(100.)
    (lambda: kiln.make_jaxpr(kiln.grad(log1pexp))(100.),
     "{ lambda ; a:f32[]. let\n"
     "    b:f32[] = exp a\n"
     "    c:f32[] = add 1.0:f32[] b\n"
     "    _:f32[] = log c\n"
     "    d:f32[] = div 1.0:f32[] c\n"
     "    e:f32[] = mul d b\n"
     "  in (e,) }"),
    (lambda: kiln.make_jaxpr(log1pexp)(3.),
     "{ lambda ; a:f32[]. let\n"
     "    b:f32[] = exp a\n"
     "    c:f32[] = add 1.0:f32[] b\n"
     "    d:f32[] = log c\n"
     "  in (d,) }"),
    (lambda: kiln.make_jaxpr(unused_log)(1.),
     "{ lambda ; a:f32[]. let\n"
     "    _:f32[] = log a\n"
     "    b:f32[] = sin a\n"
     "    c:f32[] = mul b 2.0:f32[]\n"
     "  in (c,) }"),
    (lambda: kiln.make_jaxpr(lambda x: knp.sin(x) * 2.)(1.),
     "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }"),
    (lambda: kiln.make_jaxpr(sin_chain)(1.),  # names past z: ba, bb, ...
     "{ lambda ; a:f32[]. let\n" + "".join(
         f"    {b}:f32[] = sin {a}\n" for a, b in zip([*"abcdefghijklmnopqrstuvwxyz", "ba", "bb"],
                                                     [*"bcdefghijklmnopqrstuvwxyz", "ba", "bb", "bc"]))
     + "  in (bc,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x + 1)(np.uint32(1)),
     "{ lambda ; a:u32[]. let b:u32[] = add a 1:u32[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x * 3)(np.int8(1)),
     "{ lambda ; a:i8[]. let b:i8[] = mul a 3:i8[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: knp.logical_or(x, True))(True),
     "{ lambda ; a:bool[]. let b:bool[] = or a True:bool[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x + np.float16(0.1))(np.float16(1.0)),
     "{ lambda ; a:f16[]. let b:f16[] = add a 0.0999755859375:f16[] in (b,) }"),
    # a strongly typed literal prints its float32 value exactly, a weakly typed one the Python number
    (lambda: kiln.make_jaxpr(lambda x: x * np.float32(0.1))(np.float32(1.0)),
     "{ lambda ; a:f32[]. let b:f32[] = mul a 0.10000000149011612:f32[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x * 0.1 + 1e-05)(1.0),
     "{ lambda ; a:f32[]. let\n"
     "    b:f32[] = mul a 0.1:f32[]\n"
     "    c:f32[] = add b 1e-05:f32[]\n"
     "  in (c,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x + 1e20)(1.0),
     "{ lambda ; a:f32[]. let b:f32[] = add a 1e+20:f32[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: x * 1j)(np.complex64(1.0)),
     "{ lambda ; a:c64[]. let b:c64[] = mul a 1j:c64[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda x: knp.maximum(x, -np.inf))(1.0),
     "{ lambda ; a:f32[]. let b:f32[] = max a -inf:f32[] in (b,) }"),
    (lambda: kiln.make_jaxpr(lambda p, x: lax.cond(p, lambda x: x + 1.0, knp.cos, x))(True, 1.0),
     "{ lambda ; a:bool[] b:f32[]. let\n"
     "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
     "    d:f32[] = cond[\n"
     "      branches=(\n"
     "        { lambda ; e:f32[]. let f:f32[] = cos e in (f,) }\n"
     "        { lambda ; g:f32[]. let h:f32[] = add g 1.0:f32[] in (h,) }\n"
     "      )\n"
     "    ] c b\n"
     "  in (d,) }"),
])
def test_make_jaxpr_prints_what_jax_prints(make, expected):
    assert str(make()) == expected


def test_make_jaxpr_unused_results_of_a_sub_ir():
    # "_" for results nothing reads: in the printed IR only; the sub-IR's result names follow the
    # equation's (JAX prints jit[name=<lambda> jaxpr={...}] here, the rest alike)
    text = str(kiln.make_jaxpr(lambda x: kiln.jit(lambda y: (knp.sin(y), knp.cos(y)))(x)[0])(1.))
    assert text == ("{ lambda ; a:f32[]. let\n"
                    "    b:f32[] _:f32[] = jit_call[\n"
                    "      name=<lambda>\n"
                    "      ir={ lambda ; a:f32[]. let b:f32[] = sin a; _:f32[] = cos a in (b, _) }\n"
                    "    ] a\n"
                    "  in (b,) }")


def test_make_jaxpr_shares_a_sub_ir_printed_once():
    # JAX's layout: a sub-IR used twice (or one with more than 10 equations) is printed first, named after
    # the equation's name= without its <> (JAX prints jit[name=<lambda> jaxpr=lambda], the rest alike)
    inner = kiln.jit(lambda x: knp.sin(x) + 1.0)
    text = str(kiln.make_jaxpr(lambda x: inner(x) * inner(x + 1.))(1.))
    assert text == ("let lambda = { lambda ; a:f32[]. let\n"
                    "    b:f32[] = sin a\n"
                    "    c:f32[] = add b 1.0:f32[]\n"
                    "  in (c,) } in\n"
                    "{ lambda ; d:f32[]. let\n"
                    "    e:f32[] = jit_call[name=<lambda> ir=lambda] d\n"
                    "    f:f32[] = add d 1.0:f32[]\n"
                    "    g:f32[] = jit_call[name=<lambda> ir=lambda] f\n"
                    "    h:f32[] = mul e g\n"
                    "  in (h,) }")


def test_make_jaxpr_long_params_and_no_result_equations():
    # parameters that do not fit go one per line; dot_general's dimension numbers print as lists; an
    # equation with no results prints without "_ ="
    text = str(kiln.make_jaxpr(lambda x, y: knp.dot(x, y))(np.ones((2, 3), np.float32), np.ones(3, np.float32)))
    assert text == ("{ lambda ; a:f32[2,3] b:f32[3]. let\n"
                    "    c:f32[2] = dot_general[\n"
                    "      dimension_numbers=(([1], [0]), ([], []))\n"
                    "      preferred_element_type=float32\n"
                    "    ] a b\n"
                    "  in (c,) }")  # JAX's text (jnp.dot asks for its result dtype)

    def f(x):
        kiln.debug.print("x={}", x)
        return x * 2

    text = str(kiln.make_jaxpr(f)(1.0))
    assert text.startswith("{ lambda ; a:f32[]. let\n    debug_callback[\n      callback=") and "_ =" not in text
    assert text.endswith("    ] a\n    b:f32[] = mul a 2.0:f32[]\n  in (b,) }")


def _two_lines(x):
    y = knp.sin(x)
    return y * 3.0


def test_pretty_print_source_info_notes_line_up():
    # JAX's layout of the notes: after the line, one column past the longest line; a second note on a line
    # goes on a line of its own (JAX's notes say file:line:column with the full path)
    import inspect
    first = inspect.getsourcelines(_two_lines)[1] + 1
    text = kiln.make_jaxpr(_two_lines)(1.0).pretty_print(source_info=True)
    line = "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 3.0:f32[] in (c,) }"
    assert text == (f"{line} # test_tracing.py:{first} (_two_lines)\n"
                    f"{' ' * len(line)} # test_tracing.py:{first + 1} (_two_lines)")
    text = kiln.make_jaxpr(_two_lines)(np.ones((2, 3, 4, 5, 6, 7), np.float32)).pretty_print(source_info=True)
    assert text == ("{ lambda ; a:f32[2,3,4,5,6,7]. let\n"
                    f"    b:f32[2,3,4,5,6,7] = sin a                      # test_tracing.py:{first} (_two_lines)\n"
                    f"    c:f32[2,3,4,5,6,7] = broadcast_in_dim 3.0:f32[] # test_tracing.py:{first + 1} (_two_lines)\n"
                    f"    d:f32[2,3,4,5,6,7] = mul b c                    # test_tracing.py:{first + 1} (_two_lines)\n"
                    "  in (d,) }")


def test_literal_str():
    from kiln.frontend.core.avals import ShapedArray
    from kiln.frontend.core.ir import Literal
    f32, weak = np.dtype(np.float32), ShapedArray((), np.dtype(np.float32), True)
    assert str(Literal(0.1, ShapedArray((), f32))) == "0.10000000149011612:f32[]"
    assert str(Literal(0.1, weak)) == "0.1:f32[]"
    assert str(Literal(3.14159265358979, weak)) == "3.1415927:f32[]"  # JAX: 3.14159265358979 (kiln keeps f32)
    assert str(Literal(np.nan, weak)) == "nan:f32[]"
    assert str(Literal(-0.0, weak)) == "-0.0:f32[]"
    assert str(Literal(True, ShapedArray((), np.dtype(bool)))) == "True:bool[]"
    assert str(Literal(0.1, ShapedArray((), np.dtype(knp.bfloat16)))) == "0.10009765625:bf16[]"
    assert str(Literal(0.1, ShapedArray((), np.dtype(knp.bfloat16), True))) == "0.1:bf16[]"
    assert str(Literal([1, 2], ShapedArray((2,), np.dtype(np.int32)))) == "[1,2]:i32[2]"
    assert repr(Literal(2, ShapedArray((), np.dtype(np.int32)))) == "Literal(2:i32[])"


def test_print_inside_jit_shows_a_tracer_and_runs_once(capsys):
    @kiln.jit
    def f(x):
        print("x is", x)
        return x * 2

    f(X3)
    f(X3 + 1)
    out = capsys.readouterr().out
    assert out.count("x is") == 1  # side effects happen at trace time only
    assert "x is JitTracer(float32[3])" in out


def test_tracers_print_as_jaxs(capsys):
    """What print(x) shows inside a transformed function, as JAX 0.10 prints its tracers."""
    def show(tag):
        def f(x):
            print(tag, x, repr(x) == str(x))
            return x
        return f
    kiln.jit(show("jit"))(2)
    kiln.make_jaxpr(show("make_jaxpr"))(knp.ones(3, knp.bfloat16))
    kiln.vmap(show("vmap"))(knp.arange(3.0))
    kiln.vmap(show("vmap1"), in_axes=1)(knp.ones((2, 3), knp.int32))
    kiln.grad(show("grad"))(1.0)
    kiln.grad(lambda x: knp.sum(show("grad2")(x * 2)))(knp.ones(2))
    kiln.jvp(show("jvp"), (1.0,), (1.0,))
    kiln.jit(kiln.grad(show("jit-grad")))(1.0)
    kiln.vmap(kiln.grad(show("vmap-grad")))(knp.arange(2.0))
    kiln.lax.cond(True, show("true"), show("false"), 1.0)  # true_fun is traced first, as in JAX
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "jit JitTracer(~int32[]) True",
        "make_jaxpr JitTracer(bfloat16[3]) True",
        "vmap VmapTracer(aval=float32[], batched=float32[3]) True",
        "vmap1 VmapTracer(aval=int32[2], batched=int32[2,3]) True",
        "grad GradTracer(primal=1.0, typeof(tangent)=f32[]) True",
        "grad2 GradTracer(primal=[2. 2.], typeof(tangent)=f32[2]) True",
        "jvp JVPTracer(primal=1.0, typeof(tangent)=f32[]) True",
        "jit-grad GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[]) True",
        "vmap-grad GradTracer(primal=VmapTracer(aval=float32[], batched=float32[2]), typeof(tangent)=f32[]) True",
        "true JitTracer(~float32[]) True", "false JitTracer(~float32[]) True"]


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
