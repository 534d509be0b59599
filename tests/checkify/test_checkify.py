"""kiln.experimental.checkify (JAX's jax.experimental.checkify): user checks and their messages, the automatic NaN,
division-by-zero and out-of-bounds checks, the error value under jit, vmap, grad and control flow, ``check``
outside ``checkify``, and every error path. Values are checked against NumPy; the expected messages are JAX
0.10.2's (found by running it on the same programs)."""
from __future__ import annotations

import doctest
import functools
import re

import numpy as np
import pytest
from kiln.frontend.checkify import errors as ck_errors
from kiln.frontend.checkify import primitive as ck_primitive
from kiln.frontend.checkify import transform as ck_transform

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental import checkify

ck = checkify


def failed(msg: str) -> str:
    return msg + " (`check` failed)"


def oob(shape: tuple, index: int, axis: int, size: int) -> str:
    return (f"out-of-bounds indexing for array of shape {shape}: index {index} is out of bounds for axis {axis} "
            f"with size {size}. ")


# -- the module ---------------------------------------------------------------------------------------------------

def test_public_names():
    assert set(checkify.__all__) == {
        "Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks", "check", "check_error",
        "checkify", "debug_check", "div_checks", "float_checks", "index_checks", "init_error", "nan_checks",
        "user_checks"}
    assert kiln.experimental.checkify is checkify


def test_error_sets_are_frozensets_with_set_algebra():
    E = ck_errors
    assert ck.user_checks == frozenset({E.FailedCheckError})
    assert ck.nan_checks == frozenset({E.NaNError})
    assert ck.index_checks == frozenset({E.OOBError})
    assert ck.div_checks == frozenset({E.DivisionByZeroError})
    assert ck.float_checks == ck.nan_checks | ck.div_checks
    assert ck.automatic_checks == ck.float_checks | ck.index_checks
    assert ck.all_checks == ck.automatic_checks | ck.user_checks
    assert ck.all_checks - ck.user_checks == ck.automatic_checks
    assert all(isinstance(s, frozenset) for s in (ck.user_checks, ck.float_checks, ck.all_checks))


def test_error_classes_are_kiln_errors():
    assert issubclass(ck.JaxRuntimeError, ValueError) and issubclass(ck.JaxRuntimeError, kiln.KilnError)
    for cls in ck.all_checks:
        assert issubclass(cls, kiln.KilnError) and issubclass(cls, ck_errors.JaxException)


def test_init_error():
    assert ck.init_error.get() is None
    assert str(ck.init_error) == "Error(None)"
    ck.init_error.throw()  # nothing failed: nothing raised
    ck.check_error(ck.init_error)


# -- user checks -----------------------------------------------------------------------------------------------------

def test_check_formats_arrays_positional_and_keyword():
    def f(x, y):
        ck.check(jnp.all(x > 0), "x={} y={y} sum={s}", x, y=y, s=jnp.sum(x))
        return x * 2

    x = np.array([1., -2., 3.], np.float32)
    err, out = ck.checkify(f)(jnp.asarray(x), jnp.arange(2))
    assert err.get() == failed("x=[ 1. -2.  3.] y=[0 1] sum=2.0")
    assert str(err) == f"Error({err.get()})"
    np.testing.assert_array_equal(out, x * 2)
    err, _ = ck.checkify(f)(jnp.ones(3), jnp.arange(2))
    assert err.get() is None


def test_check_pytree_and_numpy_format_arguments():
    err, _ = ck.checkify(lambda: ck.check(False, "{} world", np.array(1.)))()
    assert err.get() == failed("1.0 world")
    err, _ = ck.checkify(lambda d: ck.check(d["a"] > 0, "{}", d))({"a": jnp.float32(-1)})
    assert err.get() == failed("{'a': Array(-1., dtype=float32)}")


def test_throw_raises_jax_runtime_error_with_cause_and_location():
    def f(x):
        ck.check(x > 0, "{x} needs to be positive!", x=x)
        return 1 / x

    err, _ = kiln.jit(ck.checkify(f))(-3.)
    with pytest.raises(ck.JaxRuntimeError, match=r"^-3\.0 needs to be positive! \(`check` failed\)$") as info:
        err.throw()
    assert isinstance(info.value.__cause__, ck_errors.FailedCheckError)
    line = f.__code__.co_firstlineno + 1
    assert info.value.__cause__.__notes__ == [f"checkify: the failing check was traced at {__file__}:{line} (f)"]
    with pytest.raises(ck.JaxRuntimeError, match="needs to be positive"):
        ck.check_error(err)


def test_first_failed_check_is_reported():
    def f(x):
        ck.check(x > 10, "first")
        ck.check(x > 5, "second")
        return x
    assert ck.checkify(f)(jnp.int32(1))[0].get() == failed("first")
    assert ck.checkify(f)(jnp.int32(7))[0].get() == failed("first")
    assert ck.checkify(f)(jnp.int32(11))[0].get() is None

    def g(x):  # two checks with the same payload types share a slot: the first that fails is kept
        ck.check(x > 0, "A {}", x)
        ck.check(x > 5, "B {}", x)
        return x
    assert ck.checkify(g)(jnp.int32(3))[0].get() == failed("B 3")
    assert ck.checkify(g)(jnp.int32(-3))[0].get() == failed("A -3")


def test_check_outside_checkify_raises_eagerly():
    with pytest.raises(ck.JaxRuntimeError, match=r"^hi \(`check` failed\)$"):
        ck.check(False, "hi")
    with pytest.raises(ck.JaxRuntimeError, match=r"^hi 3\.0 \(`check` failed\)$"):
        ck.check(jnp.array(1.) > 2, "hi {}", jnp.array(3.))
    ck.check(True, "never")
    ck.check(jnp.bool_(True), "never {}", jnp.arange(3))


def test_check_under_eager_grad_and_vmap_raises():
    def f(x):
        ck.check(x > 0., "{} must be positive!", x)
        return jnp.log(x)
    with pytest.raises(ck.JaxRuntimeError, match=r"^0\.0 must be positive! \(`check` failed\)$"):
        kiln.grad(f)(0.)
    assert float(kiln.grad(f)(2.)) == pytest.approx(0.5)

    @kiln.vmap
    def g(x):
        ck.check(jnp.sum(x) == 1., "x must sum to one.")
        return x
    np.testing.assert_array_equal(g(jnp.array([[0.5, 0.5], [1., 0.]])), [[0.5, 0.5], [1., 0.]])
    with pytest.raises(ck.JaxRuntimeError, match="x must sum to one"):
        g(jnp.array([[0.5, 0.5], [1., 1.], [2., 2.]]))


def test_check_in_custom_vjp_backward_pass():
    @kiln.custom_vjp
    def assert_gradient_negative(x):
        return x

    def fwd(x):
        return assert_gradient_negative(x), None

    def bwd(_, g):
        ck.check(g < 0, "gradient needs to be negative!")
        return (g,)
    assert_gradient_negative.defvjp(fwd, bwd)
    with pytest.raises(ck.JaxRuntimeError, match="gradient needs to be negative!"):
        kiln.grad(assert_gradient_negative)(-1.)


def test_check_error_is_functionalized_again():
    def g():
        ck.check(False, "hi")

    def f():
        err, _ = ck.checkify(g)()
        ck.check_error(err)
    with pytest.raises(ck.JaxRuntimeError, match="hi"):
        f()
    err, none = ck.checkify(f)()
    assert none is None and err.get() == failed("hi")


def test_check_error_of_scanned_errors():
    def body(carry, x):
        ck.check(jnp.all(x > 0), "should be positive")
        return carry, x

    def checked_body(carry, x):
        err, (carry, x) = ck.checkify(body)(carry, x)
        return carry, (x, err)

    def f(x):
        _, (xs, errs) = lax.scan(checked_body, (None,), x)
        ck.check_error(errs)
        return xs
    assert ck.checkify(f)(jnp.array([1, 0, -1]))[0].get() == failed("should be positive")
    assert ck.checkify(f)(jnp.array([1, 2]))[0].get() is None


def test_discharge_then_recharge_under_jit():
    calls = []

    def ejit(f):
        f = kiln.jit(ck.checkify(f))

        def jitted(*args):
            err, out = f(*args)
            ck.check_error(err)
            return out
        return jitted

    @ejit
    def f(pred):
        calls.append(1)
        ck.check(pred, "foo")
    f(True)
    f(True)
    assert len(calls) == 1  # traced once
    with pytest.raises(ck.JaxRuntimeError, match="foo"):
        f(False)


def test_debug_check():
    def f(x):
        ck.debug_check(jnp.all(x != x), "{x} cannot be {x}", x=x)
        return x
    x = jnp.ones(())
    f(x)  # dropped outside checkify: eagerly, under jit, vmap and grad
    kiln.jit(f)(x)
    kiln.vmap(f)(jnp.ones((2,)))
    kiln.grad(f)(x)
    assert ck.checkify(f)(x)[0].get() == failed("1.0 cannot be 1.0")
    assert kiln.jit(ck.checkify(f))(x)[0].get() == failed("1.0 cannot be 1.0")
    assert ck.checkify(f, errors=frozenset())(x)[0].get() is None


def test_check_with_no_data_dependence_on_the_arguments():
    @kiln.jit
    def g(x):
        @ck.checkify
        def f():
            ck.check(x > 0, "must be positive!")
            return jnp.log(x)
        return f()
    assert g(1.)[0].get() is None
    assert g(0.)[0].get() == failed("must be positive!")


def test_checkify_closes_over_python_values():
    assert float(ck.checkify(lambda x: 1.)("hi")[1]) == 1.0

    @ck.checkify
    def f(x):
        if x:
            return
    assert kiln.jit(f, static_argnums=(0,))(True)[1] is None


# -- error paths ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pred, shown", [(jnp.array([True]), "[ True]"), (jnp.array(1), "1"), (1, "1"),
                                         (np.bool_(False), "False")])
def test_check_needs_a_scalar_boolean(pred, shown):
    with pytest.raises(TypeError, match=rf"^check takes a scalar pred as argument, got {re.escape(shown)}$"):
        ck.check(pred, "x")


def test_debug_check_needs_a_scalar_boolean():
    f = ck.checkify(lambda x: ck.debug_check(x != x, "{x}", x=x))
    with pytest.raises(TypeError, match=r"^debug_check takes a scalar pred as argument, got JitTracer\(bool\[5\]\)$"):
        f(jnp.ones((5,)))


@pytest.mark.parametrize("call", [lambda: ck.check(False, "{} world", "hello"),
                                  lambda: ck.check(False, "{hello} world", hello="hello"),
                                  lambda: ck.check(False, "{}", 3)])
def test_format_arguments_must_be_arrays(call):
    with pytest.raises(TypeError, match="^Formatting arguments to checkify.check need to be PyTrees of arrays, but "
                                        "got .* of type <class '(str|int)'>.$"):
        ck.checkify(call)()


def test_check_error_needs_an_error():
    with pytest.raises(TypeError, match=r"^check_error takes an Error as argument, got type <class 'int'> instead\.$"):
        ck.check_error(3)


def test_check_under_jit_without_checkify():
    def f(x):
        ck.check(x > 0, "hi")
        return x
    with pytest.raises(ValueError, match=r"^Cannot abstractly evaluate a checkify.check which was not functionalized\. "
                                         r"This probably means you tried to stage \(jit/scan/pmap/\.\.\.\) a `check` "
                                         r"without functionalizing it through `checkify.checkify`\.$"):
        kiln.jit(f)(1.)
    kiln.eval_shape(f, 1.)  # abstract evaluation is fine
    assert "check[debug=False" in str(kiln.make_jaxpr(f)(1.))


def test_checkify_of_vmap_of_while_raises():
    def body(x):
        ck.check(x < 5, "should never happen")
        return x + 1

    @kiln.vmap
    def fun(x):
        return lax.while_loop(lambda x: x < 5, body, x)
    with pytest.raises(ValueError, match=r"^Checkify does not support batched while-loops \(checkify-of-vmap-of-while\)"
                                         r"\. \nHint: if possible, move the vmap to the outer level"):
        ck.checkify(fun)(jnp.arange(5))


def test_checkify_needs_a_function():
    with pytest.raises(TypeError, match="checkify: expected a function, got int"):
        ck.checkify(3)


def test_disabled_checks_are_dropped():
    def multi_errors(x):
        x = x / 0
        x = jnp.sin(x)
        x = x[500]
        ck.check(x < 0, "must be negative!")
        return x
    assert ck.checkify(multi_errors, errors=set())(jnp.ones((2,)))[0].get() is None


@pytest.mark.parametrize("errors, expected", [
    (ck.user_checks, failed("must be negative!")),
    (ck.div_checks, "division by zero"),
    (ck.nan_checks, "nan generated by primitive: sin."),
    (ck.index_checks, oob((2,), 500, 0, 2)),
    (ck.automatic_checks, "division by zero"),
    (ck.all_checks, failed("must be negative!")),
])
def test_enabled_errors(errors, expected):
    def multi_errors(x):
        ck.check(jnp.all(x < 0), "must be negative!")
        x = x / 0
        x = jnp.sin(x)
        x = x[500]
        return x
    assert ck.checkify(multi_errors, errors=errors)(jnp.ones((2,)))[0].get() == expected


# -- automatic checks ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("jit", [False, True])
def test_nan_check_names_the_primitive(jit):
    def f(x1, x2):
        return jnp.sin(x1) + jnp.sin(x2)
    f = kiln.jit(f) if jit else f
    cf = ck.checkify(f, errors=ck.float_checks)
    err, out = cf(3., 4.)
    assert err.get() is None
    assert float(out) == pytest.approx(np.sin(3.) + np.sin(4.), rel=1e-6)
    with pytest.raises(ck.JaxRuntimeError, match=r"^nan generated by primitive: sin\.$"):
        cf(3., jnp.inf)[0].throw()


@pytest.mark.parametrize("f, x, prim", [
    (jnp.log, [-1.], "log"), (jnp.sqrt, [-4.], "sqrt"), (lambda x: x * 0., [np.inf], "mul"),
    (lambda x: x - x, [np.inf], "sub"), (jnp.sum, [np.inf, -np.inf], "reduce_sum"),
    (lambda x: x @ jnp.array([0., 1.]), [np.inf, 0.], "dot_general"), (lambda x: x + 1, [np.nan], "add"),
])
def test_nan_checks(f, x, prim):
    err, out = ck.checkify(f, errors=ck.nan_checks)(jnp.array(x, np.float32))
    assert err.get() == f"nan generated by primitive: {prim}."
    with np.errstate(all="ignore"):
        expected = np.asarray(f(np.array(x, np.float32))) if prim != "dot_general" else np.nan  # inf * 0
    np.testing.assert_allclose(np.asarray(out), expected)
    assert ck.checkify(f, errors=ck.nan_checks)(jnp.array(np.ones(len(x)), np.float32))[0].get() is None


def test_nan_checks_skip_integer_results():
    err, _ = ck.checkify(lambda x: x + 1, errors=ck.nan_checks)(jnp.arange(3))
    assert err._pred == {}


@pytest.mark.parametrize("jit", [False, True])
def test_division_by_zero(jit):
    f = lambda x, y: x / y  # noqa: E731
    f = kiln.jit(f) if jit else f
    cf = ck.checkify(f, errors=ck.float_checks)
    assert cf(jnp.ones((3,)), jnp.ones((3,)))[0].get() is None
    err, out = cf(jnp.ones((3,)), jnp.array([1., 0., 1.]))
    assert err.get() == "division by zero"
    np.testing.assert_array_equal(out, [1., np.inf, 1.])
    assert cf(jnp.array([1, jnp.inf, 1]), jnp.array([1, jnp.inf, 1]))[0].get() == "nan generated by primitive: div."


def test_integer_division_by_zero():
    err, out = ck.checkify(lambda x, y: x // y, errors=ck.div_checks)(jnp.int32(7), jnp.int32(0))
    assert err.get() == "division by zero"
    err, out = ck.checkify(lambda x, y: x // y, errors=ck.div_checks)(jnp.arange(6), jnp.int32(4))
    assert err.get() is None
    np.testing.assert_array_equal(out, np.arange(6) // 4)
    # rem has no division-by-zero check (as in JAX)
    assert ck.checkify(lambda x, y: x % y, errors=ck.all_checks)(jnp.int32(1), jnp.int32(0))[0].get() is None


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("index, expected", [(2, None), (5, oob((3,), 5, 0, 3)), (-4, oob((3,), -1, 0, 3)),
                                             (-1, None)])
def test_index_check_dynamic_index(jit, index, expected):
    def f(x, i):
        return jnp.cos(jnp.sin(x)[i])
    f = kiln.jit(f) if jit else f
    err, out = ck.checkify(f, errors=ck.index_checks)(jnp.arange(3.), jnp.int32(index))
    assert err.get() == expected
    assert float(out) == pytest.approx(np.cos(np.sin(np.arange(3.))[np.clip(index if index >= 0 else index + 3, 0, 2)]))


def test_index_check_static_out_of_bounds_index():
    err, out = ck.checkify(lambda x: x[5] + x[6], errors=ck.index_checks)(jnp.arange(2.))
    assert err.get() == oob((2,), 5, 0, 2)
    assert float(out) == 2.0  # clamped, as XLA does


@pytest.mark.parametrize("update", ["get", "set", "add", "multiply", "divide", "power", "min", "max"])
def test_index_checks_of_at_updates(update):
    def fn(x, i):
        ref = x.at[i]
        return ref.get() if update == "get" else getattr(ref, update)(1.)
    x = jnp.ones((2, 3, 7))
    cf = ck.checkify(kiln.jit(fn), errors=ck.index_checks)
    cases = [(5, "index 5", 0, 2), (-5, "index -3", 0, 2), ((0, 100), "index 100", 1, 3),
             ((0, 5, 100), "index 5", 1, 3), ((0, 0, 100), "index 100", 2, 7),
             (((1, 20), (1, 4)), "index 20", 0, 2), (((1, 20), (3, 4)), "index 3", 1, 3)]
    for idx, index, axis, size in cases:
        msg = cf(x, idx)[0].get()
        assert msg.startswith("out-of-bounds indexing for array of shape (2, 3, 7): ")
        assert f"{index} is out of bounds for axis {axis} with size {size}" in msg
    assert cf(x, (1, 2, 6))[0].get() is None


def test_index_checks_of_dynamic_slices():
    x = jnp.ones((2, 3, 7))
    y = jnp.zeros((1, 1, 1))
    ds = ck.checkify(kiln.jit(functools.partial(lax.dynamic_slice, slice_sizes=(1, 1, 1))), errors=ck.index_checks)
    dus = ck.checkify(kiln.jit(lax.dynamic_update_slice), errors=ck.index_checks)
    for idx, index, axis in [((2, 0, 0), 2, 0), ((-3, 0, 0), -1, 0), ((0, 3, 0), 3, 1), ((0, -5, 0), -2, 1),
                             ((0, 1, 8), 8, 2), ((0, 1, -10), -3, 2)]:
        assert ds(x, idx)[0].get() == oob((2, 3, 7), index, axis, x.shape[axis])
        assert dus(x, y, idx)[0].get() == oob((2, 3, 7), index, axis, x.shape[axis])
    assert ds(x, (1, 2, 6))[0].get() is None
    err, out = dus(x, y, (1, 2, 6))
    expected = np.ones((2, 3, 7), np.float32)
    expected[1, 2, 6] = 0
    assert err.get() is None
    np.testing.assert_array_equal(out, expected)


def test_index_checks_of_gathers():
    err, out = ck.checkify(lambda x, i: jnp.take(x, i), errors=ck.index_checks)(jnp.arange(4.), jnp.array([1, 7]))
    assert err.get() == oob((4,), 7, 0, 4)
    err, _ = ck.checkify(lambda x, i, j: x[i, j], errors=ck.index_checks)(jnp.ones((3, 4)), jnp.array([0, 1]),
                                                                        jnp.array([2, 9]))
    assert err.get() == oob((3, 4), 9, 1, 4)
    err, _ = ck.checkify(lambda x, i: x[i], errors=ck.index_checks)(jnp.ones(3), jnp.array([0, 5], np.uint32))
    assert err.get() == oob((3,), 5, 0, 3)
    err, out = ck.checkify(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.), errors=ck.index_checks)(
        jnp.arange(4.), jnp.array([1, 7]))
    assert err.get() == oob((4,), 7, 0, 4)  # mode='fill' still reports the index, as JAX
    np.testing.assert_array_equal(out, [1., -1.])


def test_first_error_in_program_order():
    def f(x, i):
        return x[i] * jnp.sin(x)  # both out-of-bounds and a NaN: the indexing comes first
    err, _ = ck.checkify(f, errors=ck.automatic_checks)(jnp.array([0., 1., jnp.inf]), jnp.int32(5))
    assert err.get() == oob((3,), 5, 0, 3)


# -- transformations ----------------------------------------------------------------------------------------------

def test_jit_of_checkify_and_checkify_of_jit():
    def f(x, i):
        return x[i]
    for g in (ck.checkify(kiln.jit(f), errors=ck.index_checks), kiln.jit(ck.checkify(f, errors=ck.index_checks))):
        err, out = g(jnp.arange(5.), 100)
        assert err.get() == oob((5,), 100, 0, 5)
        assert float(out) == 4.0
        assert g(jnp.arange(5.), 3)[0].get() is None


def test_checkify_of_jit_compiles_once(monkeypatch):
    from kiln.frontend.driver import eager
    compiles = []
    original = eager._compile

    def counting(*args, **kwargs):
        compiles.append(args[0])
        return original(*args, **kwargs)
    monkeypatch.setattr(eager, "_compile", counting)
    for errors in (ck.user_checks, ck.float_checks):
        f = ck.checkify(kiln.jit(lambda x: jnp.sin(x) ** 2), errors=errors)
        f(3.)
        del compiles[:]
        err, out = f(3.)
        assert not compiles and err.get() is None
        assert float(out) == pytest.approx(np.sin(3.) ** 2, rel=1e-6)


def test_vmap_of_checkify_gives_a_batched_error():
    def f(x, i):
        ck.check(i >= 0, "index needs to be non-negative!")
        return x[i]
    errs, out = kiln.vmap(ck.checkify(f, errors=ck.all_checks))(jnp.ones((3, 5)), jnp.array([-1, 2, 100]))
    assert errs.get() == ("at mapped index 0: " + failed("index needs to be non-negative!") + "\n"
                          "at mapped index 2: " + oob((5,), 100, 0, 5))
    assert isinstance(errs.get_exception(), ck_errors.BatchedError)
    # throw() reduces the batch: one error per kind, the smallest code first (as JAX)
    with pytest.raises(ck.JaxRuntimeError, match=r"^index needs to be non-negative! \(`check` failed\)$"):
        errs.throw()
    np.testing.assert_array_equal(out, np.ones(3))
    errs, _ = kiln.vmap(ck.checkify(f, errors=ck.all_checks))(jnp.ones((3, 5)), jnp.array([0, 2, 4]))
    assert errs.get() is None


def test_vmap_of_checkify_payloads_per_element():
    cf = ck.checkify(lambda x, i: x[i], errors=ck.index_checks)
    errs, _ = kiln.vmap(cf)(jnp.ones((3, 2)), jnp.array([5, 0, 100]))
    assert errs.get() == "at mapped index 0: " + oob((2,), 5, 0, 2) + "\nat mapped index 2: " + oob((2,), 100, 0, 2)

    def g(x):
        ck.check(x > 0, "A {}", x)
        ck.check(x > 5, "B {}", x)
        return x
    errs, _ = kiln.vmap(ck.checkify(g))(jnp.array([-1, 3, 7]))
    assert errs.get() == f"at mapped index 0: {failed('A -1')}\nat mapped index 1: {failed('B 3')}"


def test_nested_vmap_of_checkify():
    f = ck.checkify(lambda x: ck.check(x < 3, "x={}", x))
    errs, _ = kiln.vmap(kiln.vmap(f))(jnp.arange(6).reshape(2, 3) + 1)
    assert errs.get() == "\n".join(f"at mapped index {i}, {j}: {failed(f'x={v}')}"
                                   for (i, j), v in [((0, 2), 3), ((1, 0), 4), ((1, 1), 5), ((1, 2), 6)])


def test_checkify_of_vmap_reduces_the_batch():
    @kiln.vmap
    def f(x, i):
        ck.check(i >= 0, "index needs to be non-negative!")
        return x[i]
    cf = ck.checkify(f, errors=ck.all_checks)
    assert cf(jnp.ones((3, 5)), jnp.array([-1, 2, 100]))[0].get() == failed("index needs to be non-negative!")
    assert cf(jnp.ones((3, 5)), jnp.array([1, 2, 100]))[0].get() == oob((3, 5), 100, 1, 5)
    assert cf(jnp.ones((3, 5)), jnp.array([1, 2, 3]))[0].get() is None
    g = ck.checkify(kiln.vmap(kiln.vmap(lambda x: ck.check(x < 3, "x={}", x))))
    assert g(jnp.arange(6).reshape(2, 3) + 1)[0].get() == failed("x=6")  # the last failing element, as JAX


def test_vmap_of_checkify_of_while():
    def fun(x):
        def body(x):
            ck.check(x < 6, "too big {}", x)
            return x + 1
        return lax.while_loop(lambda x: x < 7, body, x)
    errs, out = kiln.vmap(ck.checkify(fun))(jnp.arange(10))
    assert errs.get() == "\n".join(f"at mapped index {i}: {failed('too big 6')}" for i in range(7))
    np.testing.assert_array_equal(out, np.maximum(np.arange(10), 7))


def test_checkify_of_grad_checks_the_backward_pass():
    def f(x):
        return x / (1 + jnp.sqrt(x))
    err, g = ck.checkify(kiln.grad(f), errors=ck.nan_checks)(0.)
    assert err.get() == "nan generated by primitive: mul."
    err, g = ck.checkify(kiln.grad(f), errors=ck.nan_checks)(4.)
    assert err.get() is None
    assert float(g) == pytest.approx((1 + 2 - 4 / (2 * 2)) / 9)  # d/dx x/(1+sqrt x) at 4

    @kiln.grad
    def h(x):
        ck.check(jnp.all(x > 0), "should be positive!")
        return x
    assert ck.checkify(h)(1.)[0].get() is None
    assert ck.checkify(h)(0.)[0].get() == failed("should be positive!")


def test_grad_of_checkify_outputs_keeps_custom_rules():
    def h(x):
        ck.check(True, "")
        return kiln.nn.relu(x)
    h = ck.checkify(h)
    assert float(kiln.grad(lambda x: h(x)[1])(0.)) == 0.0  # relu's custom_jvp: 0 at 0

    @kiln.custom_vjp
    def sin(x):
        return jnp.sin(x)
    sin.defvjp(lambda x: (jnp.sin(x), 2. * x), lambda x2, g: (jnp.cos(x2 / 2.) * g,))
    s = ck.checkify(lambda x: (ck.check(True, ""), sin(x))[1])
    assert float(kiln.grad(lambda x: s(x)[1])(0.5)) == pytest.approx(np.cos(0.5))


def test_custom_jvp_and_custom_vjp_bodies_are_checked():
    @kiln.custom_jvp
    def sin(x):
        return jnp.sin(x)

    @sin.defjvp
    def sin_jvp(primals, tangents):
        (x,), (xdot,) = primals, tangents
        return sin(x), jnp.cos(x) * xdot
    f = ck.checkify(sin, errors=ck.float_checks)
    assert f(3.)[0].get() is None
    assert f(jnp.inf)[0].get() == "nan generated by primitive: sin."
    (err, y), (_, ydot) = kiln.jvp(f, (3.,), (1.,))
    assert err.get() is None and float(ydot) == pytest.approx(np.cos(3.))
    assert float(kiln.grad(lambda x: f(x)[1])(3.)) == pytest.approx(np.cos(3.))
    g = ck.checkify(lambda x, xdot: kiln.jvp(sin, (x,), (xdot,)), errors=ck.float_checks)
    assert g(jnp.inf, 1.)[0].get() == "nan generated by primitive: sin."

    @kiln.custom_vjp
    def vsin(x):
        return jnp.sin(x)
    vsin.defvjp(lambda x: (jnp.sin(x), 2. * x), lambda x2, g: (jnp.cos(x2 / 2.) * g,))
    f = ck.checkify(vsin, errors=ck.float_checks)
    assert f(3.)[0].get() is None
    assert f(jnp.inf)[0].get() == "nan generated by primitive: sin."
    assert ck.checkify(kiln.grad(vsin), errors=ck.float_checks)(jnp.inf)[0].get() == "nan generated by primitive: sin."


@pytest.mark.parametrize("jit", [False, True])
def test_remat(jit):
    def fn(x):
        ck.check(jnp.all(x > 0), "x must be positive")
        return x + 1
    fn = kiln.remat(fn)
    fn = kiln.jit(fn) if jit else fn
    fn = ck.checkify(fn)
    err, y = fn(jnp.array([1, 2, 3]))
    assert err.get() is None
    np.testing.assert_array_equal(y, [2, 3, 4])
    assert fn(jnp.array([0, 2, 3]))[0].get() == failed("x must be positive")


def test_closed_over_jit():
    @functools.partial(ck.checkify, errors=ck.float_checks)
    def g(x):
        @kiln.jit
        def f(y):
            return jnp.sin(x * y)
        return f(jnp.inf)
    assert g(2.)[0].get() == "nan generated by primitive: sin."


def test_error_value_through_jit_arguments_and_outputs():
    err, _ = ck.checkify(lambda x: ck.check(x > 0, "p {}", x))(jnp.float32(-2.))
    again = kiln.jit(lambda e: e)(err)
    assert isinstance(again, ck.Error) and again.get() == failed("p -2.0")
    with pytest.raises(ValueError, match="Cannot abstractly evaluate"):
        kiln.jit(ck.check_error)(err)


# -- control flow ------------------------------------------------------------------------------------------------

def test_cond():
    @kiln.jit
    def f(x):
        def true_fun(x):
            return jnp.sin(x)

        def false_fun(x):
            ck.check(x > -1, "oh no")
            return x / 0.
        return lax.cond(x > 0, true_fun, false_fun, x)
    cf = ck.checkify(f, errors=ck.all_checks)
    assert cf(3.)[0].get() is None
    assert float(cf(3.)[1]) == pytest.approx(np.sin(3.))
    assert cf(jnp.inf)[0].get() == "nan generated by primitive: sin."
    assert cf(-jnp.inf)[0].get() == failed("oh no")
    assert cf(0.)[0].get() == "division by zero"


def test_cond_branches_with_different_payloads():
    @kiln.jit
    def f(x):
        def true_fun(x):
            ck.check(jnp.all(x > 0), "{one}", one=x)

        def false_fun(x):
            ck.check(jnp.all(x < 0), "{one} and {two}", one=x, two=x)
        return lax.cond(jnp.all(x < 0), true_fun, false_fun, x)
    cf = ck.checkify(f)
    assert cf(jnp.arange(0, 4))[0].get() == failed("[0 1 2 3] and [0 1 2 3]")
    assert cf(jnp.arange(-4, -1))[0].get() == failed("[-4 -3 -2]")


def test_cond_and_switch_without_operands():
    f = ck.checkify(lambda: lax.cond(True, lambda: ck.check(False, "hi!"), lambda: ck.check(False, "bye!")))
    assert f()[0].get() == failed("hi!")

    def branch():
        ck.check(False, "hi!")
    assert ck.checkify(lambda: lax.switch(0, [branch] * 3))()[0].get() == failed("hi!")


def test_switch():
    def f(i, x):
        return lax.switch(i, [lambda x: x[5], lambda x: jnp.log(x[0]),
                              lambda x: (ck.check(x[0] > 0, "neg {}", x), x[1])[1]], x)
    cf = ck.checkify(f, errors=ck.all_checks)
    x = jnp.array([-1., 2.])
    assert [cf(jnp.int32(i), x)[0].get() for i in range(4)] == [
        oob((2,), 5, 0, 2), "nan generated by primitive: log.", failed("neg [-1.  2.]"), failed("neg [-1.  2.]")]


def test_scan_map_and_carry():
    def body(carry, x):
        carry = carry - 1.
        return carry, x + jnp.sin(1. / carry)

    @kiln.jit
    def f(carry, xs):
        return lax.scan(body, carry, xs)
    cf = ck.checkify(f, errors=ck.float_checks)
    for carry, n, expected in [(3., 2, None), (1., 2, "division by zero"), (2., 4, "division by zero")]:
        err, (c, ys) = cf(carry, jnp.ones((n,)))
        assert err.get() == expected
        cs = carry - 1. - np.arange(n)
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(np.asarray(ys), 1 + np.sin(1. / cs), rtol=1e-6)
        assert float(c) == carry - n


def test_scan_with_consts_reverse_and_unroll():
    def f(xs):
        def body(carry, _):
            return carry + 1, xs[carry]
        return lax.scan(body, 1, xs)
    assert ck.checkify(f, errors=ck.index_checks)(jnp.ones((7,)))[0].get() == oob((7,), 7, 0, 7)

    def g(xs):
        def body(c, x):
            ck.check(x > 0, "x={} c={}", x, c)
            return c + 1, 1. / x
        return lax.scan(body, 0, xs, reverse=True, unroll=2)
    err, (c, ys) = ck.checkify(g, errors=ck.all_checks)(jnp.array([1., 0., -3., 2.]))
    assert err.get() == failed("x=-3.0 c=1")  # walking backwards, -3 fails before 0
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(np.asarray(ys), 1. / np.array([1., 0., -3., 2.]))
    assert ck.checkify(g, errors=ck.all_checks)(jnp.array([1., 2., 3.]))[0].get() is None


def test_while_loop_body_and_cond():
    def while_cond(val):
        i, cond_val, _ = val
        return i + 0. * jnp.sin(cond_val) < 2

    def while_body(val):
        i, cond_val, body_val = val
        return i + 1., cond_val, jnp.cos(body_val)

    @kiln.jit
    def f(cond_val, body_val):
        return lax.while_loop(while_cond, while_body, (0., cond_val, body_val))
    cf = ck.checkify(f, errors=ck.float_checks)
    assert cf(jnp.inf, 1.)[0].get() == "nan generated by primitive: sin."
    assert cf(1., jnp.inf)[0].get() == "nan generated by primitive: cos."
    assert cf(jnp.inf, jnp.inf)[0].get() == "nan generated by primitive: sin."  # the condition runs first
    err, (i, _, b) = cf(1., 1.)
    assert err.get() is None and float(i) == 2. and float(b) == pytest.approx(np.cos(np.cos(1.)))


def test_while_loop_condition_checked_before_and_after_each_step():
    def f(init):
        return lax.while_loop(lambda v: jnp.logical_not(jnp.isnan(jnp.sin(1. / v))), lambda v: v - 1, init)
    cf = ck.checkify(f, errors=ck.float_checks)
    assert cf(0.)[0].get() == "division by zero"  # the first test
    assert cf(1.)[0].get() == "division by zero"  # the second

    def g(i0, x0):
        def cond(v):
            ck.check(v[0] < 0, "i must be negative")
            return v[0] < 2

        def body(v):
            ck.check(v[1] < 0, "x must be negative")
            return v[0] + 1., v[1] + 1
        return lax.while_loop(cond, body, (i0, x0))
    cg = ck.checkify(kiln.jit(g))
    assert cg(0., 1)[0].get() == failed("i must be negative")
    assert cg(-1., 0)[0].get() == failed("x must be negative")


def test_while_loop_with_consts():
    def f(xs):
        def cond(carry):
            i, _ = carry
            _ = xs[i], jnp.sin(np.arange(11.))
            return i > -1

        def body(carry):
            i, _ = carry
            return i - 1, xs[i] / i
        return lax.while_loop(cond, body, (0, jnp.zeros_like(xs[0])))
    assert ck.checkify(f, errors=ck.float_checks)(jnp.ones((7, 3)))[0].get() == "division by zero"


@pytest.mark.parametrize("traced", [False, True])
def test_fori_loop(traced):
    def f(n):
        def body(i, c):
            ck.check(i < 3, "i={}", i)
            return c + jnp.sin(1. / (i - 4))
        return lax.fori_loop(0, n, body, 0.)
    for n, expected in [(2, None), (4, failed("i=3")), (6, failed("i=3"))]:
        if traced:
            err, out = kiln.jit(ck.checkify(f, errors=ck.all_checks))(n)
        else:
            err, out = ck.checkify(lambda: f(n), errors=ck.all_checks)()
        assert err.get() == expected
        if n < 4:
            assert float(out) == pytest.approx(sum(np.sin(1. / (i - 4)) for i in range(n)), rel=1e-6)
    err, _ = ck.checkify(lambda: f(6), errors=ck.div_checks)()
    assert err.get() == "division by zero"


# -- internals worth pinning ------------------------------------------------------------------------------------

def test_error_is_a_pytree_with_fixed_leaf_types():
    err, _ = ck.checkify(lambda x, i: jnp.sin(x[i]), errors=ck.all_checks)(jnp.ones(3), jnp.int32(1))
    leaves, tree = kiln.tree_util.tree_flatten(err)
    assert [(leaf.shape, leaf.dtype.name) for leaf in leaves] == [((), "bool"), ((), "int32"), ((), "bool"),
                                                                   ((), "int32"), ((3,), "int32")]
    assert kiln.tree_util.tree_unflatten(tree, leaves).get() is None


def test_effects_of_is_a_superset_of_what_the_rules_record():
    def f(x, i):
        ck.check(i > 0, "{}", i)
        return jnp.sin(x[i]) / x[0]
    closed = kiln.make_jaxpr(f)(jnp.ones(3), 1)
    found = ck_transform.effects_of(closed.jaxpr, ck.all_checks)
    err, _ = ck.checkify(f, errors=ck.all_checks)(jnp.ones(3), jnp.int32(1))
    assert set(err._pred) <= found
    assert ck_transform.effects_of(closed.jaxpr, ck.user_checks) == {
        ck_errors.ErrorEffect(ck_errors.FailedCheckError, (kiln.ShapedArray((), np.dtype("int32")),))}


def test_check_primitive_rules():
    p = ck_primitive.check_p
    from kiln.frontend.ad.jvp import jvp_rules
    from kiln.frontend.batching.core import batch_rules
    assert p in jvp_rules and p in batch_rules and p.has_effects and p.multiple_results


_DOCTEST_GLOBS = {"kiln": kiln, "checkify": ck.checkify, "float_checks": ck.float_checks, "check": ck.check}


@pytest.mark.parametrize("fn", [ck.check, ck.checkify])
def test_docstring_examples(fn):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(fn, fn.__name__, globs=dict(_DOCTEST_GLOBS))
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).attempted > 0
    assert runner.summarize(verbose=False).failed == 0


def test_checks_inside_custom_derivative_functions():
    @kiln.custom_jvp
    def f(x):
        ck.check(x > 0, "pos {}", x)
        return jnp.sin(x)
    f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * t[0]))

    @kiln.custom_vjp
    def g(x):
        ck.check(x > 0, "gpos {}", x)
        return jnp.sin(x)
    g.defvjp(lambda x: (g(x), x), lambda r, ct: (jnp.cos(r) * ct,))
    for fn, msg in ((f, "pos -1.0"), (g, "gpos -1.0")):
        for cf in (ck.checkify(fn), kiln.jit(ck.checkify(fn))):
            assert cf(1.)[0].get() is None
            assert cf(-1.)[0].get() == failed(msg)
        assert kiln.jit(ck.checkify(fn, errors=ck.nan_checks))(-1.)[0].get() is None  # dropped, not lowered
        assert float(kiln.grad(lambda x: ck.checkify(fn)(x)[1])(1.)) == pytest.approx(np.cos(1.))
    # eager grad runs the check on the primal values (as JAX)
    assert float(kiln.grad(f)(jnp.float32(1.))) == pytest.approx(np.cos(1.))
    with pytest.raises(ck.JaxRuntimeError, match="pos -1.0"):
        kiln.grad(f)(jnp.float32(-1.))


def test_disabled_user_checks_inside_bodies_are_dropped():
    def h(x):
        ck.check(x > 0, "hpos {}", x)
        return x * 2
    only_nans = functools.partial(ck.checkify, errors=ck.nan_checks)
    assert only_nans(kiln.jit(h))(-1.)[0].get() is None
    assert only_nans(kiln.jit(kiln.remat(h)))(-1.)[0].get() is None
    err, (_, ys) = only_nans(lambda xs: lax.scan(lambda c, x: (c, h(x)), 0., xs))(jnp.array([-1., 2.]))
    assert err.get() is None
    np.testing.assert_array_equal(ys, [-2., 4.])
    assert only_nans(lambda x: lax.cond(x > 0, h, h, x))(-1.)[0].get() is None
    assert only_nans(lambda x: lax.while_loop(lambda v: v < 4, lambda v: h(v) + 3, x))(-1.)[0].get() is None
