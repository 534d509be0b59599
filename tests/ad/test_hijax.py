"""``kiln.experimental.hijax`` (frontend/ad/hijax.py): what the page custom-derivatives.md uses beyond a class with
``jvp`` or ``vjp_fwd``/``vjp_bwd_retval`` (tests/examples/test_docs_custom_derivatives_301.py runs the page):
``lin``/``linearized``, the derived rules, the accumulators ``vjp_bwd`` gets, ``batch``, ``nzs_out``, structured
residuals, and the errors of misused rules. Expected values are closed forms and float64 finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln.experimental.hijax import (
    NullAccum,
    ShapedArray,
    ValAccum,
    VJPHiPrimitive,
    Zero,
    jvp_from_lin,
    linearize_from_jvp,
    vjp_from_jvp,
    vjp_from_lin,
)


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


class _Unary(VJPHiPrimitive):
    def __init__(self, x_aval):
        self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
        super().__init__()

    def expand(self, x):
        return jnp.sin(x) * x


def _call(cls):
    return lambda x: cls(kiln.typeof(x))(x)


def _dsin_x(x):
    return np.cos(x) * x + np.sin(x)


class LinOnly(_Unary):
    def lin(self, nzs_in, x):
        return self(x), (jnp.cos(x) * x + jnp.sin(x),)

    def linearized(self, res, x_dot):
        return res[0] * x_dot


def test_shaped_array_is_the_type_of_an_argument():
    assert isinstance(kiln.typeof(jnp.ones(3)), ShapedArray)
    assert ShapedArray((2,), np.float32).shape == (2,)


def test_lin_and_linearized_serve_linearize_and_jvp():
    f = _call(LinOnly)
    with kiln.enable_x64():
        for x in (0.3, -2.0):
            y, f_lin = kiln.linearize(f, x)
            np.testing.assert_allclose([y, f_lin(1.5)], [np.sin(x) * x, 1.5 * _fd(lambda v: np.sin(v) * v, x)],
                                       rtol=1e-8)
            np.testing.assert_allclose(kiln.jvp(f, (x,), (2.0,))[1], 2 * _dsin_x(x), rtol=1e-12)
            np.testing.assert_allclose(kiln.jit(kiln.grad(f))(x), _dsin_x(x), rtol=1e-12)  # (JAX: needs vjp_fwd)


class JvpDerived(_Unary):
    def jvp(self, primals, tangents):
        (x,), (t,) = primals, tangents
        return self(x), (jnp.cos(x) * x + jnp.sin(x)) * t

    lin, linearized = linearize_from_jvp


class LinDerived(LinOnly):
    jvp = jvp_from_lin


class FromJvp(JvpDerived):
    vjp_fwd, vjp_bwd_retval = vjp_from_jvp


class FromLin(LinOnly):
    vjp_fwd, vjp_bwd_retval = vjp_from_lin


@pytest.mark.parametrize("cls", [JvpDerived, FromJvp, FromLin, LinDerived])
def test_derived_rules_called_directly(cls):
    # each derived method, called as JAX's machinery calls it, against the closed form
    with kiln.enable_x64():
        prim = cls(kiln.typeof(0.7))
        if cls in (JvpDerived,):
            y, res = prim.lin((True,), 0.7)[:2]
            np.testing.assert_allclose([y, prim.linearized(res, 2.0)], [np.sin(0.7) * 0.7, 2 * _dsin_x(0.7)])
        elif cls is LinDerived:
            y, t = prim.jvp((0.7,), (2.0,))
            np.testing.assert_allclose([y, t], [np.sin(0.7) * 0.7, 2 * _dsin_x(0.7)])
        else:
            y, res = prim.vjp_fwd((True,), 0.7)[:2]
            ct, = prim.vjp_bwd_retval(res, 2.0)
            np.testing.assert_allclose([y, ct], [np.sin(0.7) * 0.7, 2 * _dsin_x(0.7)], rtol=1e-15)
        f = _call(cls)
        np.testing.assert_allclose(kiln.grad(f)(0.7), _dsin_x(0.7), rtol=1e-12)
        np.testing.assert_allclose(kiln.grad(kiln.grad(f))(0.7), _fd(_dsin_x, 0.7), rtol=1e-8)


def test_vjp_from_jvp_skips_the_inputs_not_differentiated():
    class Mul(VJPHiPrimitive):
        def __init__(self, x_aval, y_aval):
            self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
            super().__init__()

        def expand(self, x, y):
            return x * y

        def jvp(self, primals, tangents):
            (x, y), (xd, yd) = primals, tangents
            return self(x, y), xd * y + x * yd

        vjp_fwd, vjp_bwd_retval = vjp_from_jvp

    prim = Mul(kiln.typeof(2.0), kiln.typeof(3.0))
    _, res = prim.vjp_fwd((False, True), 2.0, 3.0)
    dx, dy = prim.vjp_bwd_retval(res, 1.0)
    assert dx is None and float(dy) == 2.0


def test_deriving_in_a_circle_and_calling_a_pair_raise():
    class Circle(_Unary):
        jvp = jvp_from_lin
        lin, linearized = linearize_from_jvp

    with pytest.raises(TypeError, match="can't set both `jvp = jvp_from_lin` and `lin, linearized = linearize_from_jvp"
                                        "`, since each would be defined in terms of the other; write one of the two"):
        Circle(kiln.typeof(1.0))
    for pair, names in ((vjp_from_jvp, "vjp_fwd, vjp_bwd_retval = vjp_from_jvp"),
                        (vjp_from_lin, "vjp_fwd, vjp_bwd_retval = vjp_from_lin")):
        with pytest.raises(TypeError, match=f"is a pair of rules, not a single rule; unpack it in the class body: "
                                            f"`{names}`"):
            pair()


class Axpy(VJPHiPrimitive):
    """a x + y, recording the accumulators its vjp_bwd gets."""
    seen: list = []

    def __init__(self, x_aval, y_aval):
        self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
        super().__init__()

    def expand(self, x, y):
        return 2.0 * x + y

    def vjp_fwd(self, nzs_in, x, y):
        return self(x, y), None

    def vjp_bwd(self, res, g, x_acc, y_acc):
        Axpy.seen.append((type(x_acc).__name__, type(y_acc).__name__, x_acc.aval.shape))
        x_acc.accum(g)
        x_acc.accum(g)  # (contributions add up)
        y_acc.accum(g)


def test_vjp_bwd_gets_a_null_accum_for_an_input_not_differentiated():
    axpy = lambda x, y: Axpy(kiln.typeof(x), kiln.typeof(y))(x, y)  # noqa: E731
    Axpy.seen = []
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(kiln.grad(lambda x, y: jnp.sum(axpy(x, y)))(x, x), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(kiln.grad(lambda x, y: jnp.sum(axpy(x, y)), 1)(x, x), [1.0, 1.0, 1.0])
    assert Axpy.seen == [("ValAccum", "NullAccum", (3,)), ("NullAccum", "ValAccum", (3,))]
    acc = ValAccum(kiln.typeof(1.0))
    acc.accum(Zero(kiln.typeof(1.0)))
    acc.accum(None)
    assert acc.value is None
    NullAccum(kiln.typeof(1.0)).accum(1.0)


def test_batch_rule_is_used_by_vmap():
    calls = []

    class RowSum(VJPHiPrimitive):
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), ShapedArray((), x_aval.dtype), {}
            super().__init__()

        def expand(self, x):
            return jnp.sum(x)

        def batch(self, axis_data, args, dims):
            x, = args
            calls.append((axis_data.size, dims))
            return jnp.sum(x, axis=1 - dims[0]), 0

    f = lambda x: RowSum(kiln.typeof(x))(x)  # noqa: E731
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(kiln.vmap(f, in_axes=1)(x), x.sum(0))  # a Python loop over the columns
    np.testing.assert_array_equal(kiln.jit(kiln.vmap(f))(x), [row.sum() for row in x])
    assert calls == [(4, (0,)), (3, (0,))]  # the batch axis reaches the rule first
    with pytest.raises(NotImplementedError, match="must implement `vjp_fwd`"):  # (batch serves vmap only)
        kiln.vmap(kiln.grad(f))(x)


def test_batch_rule_output_axis_is_moved_to_the_front():
    class Outer(VJPHiPrimitive):
        def __init__(self, x_aval):
            self.in_avals = (x_aval,)
            self.out_aval = ShapedArray((2,) + x_aval.shape, x_aval.dtype)
            self.params = {}
            super().__init__()

        def expand(self, x):
            return jnp.stack([x, 2 * x])

        def batch(self, axis_data, args, dims):
            x, = args  # (B, n) -> (2, B, n): the batch axis of the output is 1
            return jnp.stack([x, 2 * x]), 1

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    out = kiln.vmap(lambda v: Outer(kiln.typeof(v))(v))(x)
    np.testing.assert_array_equal(out, np.stack([np.stack([r, 2 * r]) for r in x]))


class ZeroOut(VJPHiPrimitive):
    """(sin x, floor x); nzs_out says the second output has no tangent."""
    seen: list = []

    def __init__(self, x_aval):
        self.in_avals, self.out_aval, self.params = (x_aval,), (x_aval, x_aval), {}
        super().__init__()

    def expand(self, x):
        return jnp.sin(x), jnp.floor(x)

    def vjp_fwd(self, nzs_in, x):
        return self(x), jnp.cos(x), (True, False)

    def vjp_bwd_retval(self, cos_x, g):
        ZeroOut.seen.append(tuple(type(c).__name__ for c in g))
        return (cos_x * g[0],)


def test_nzs_out_false_gives_a_zero_cotangent():
    ZeroOut.seen = []
    f = lambda x: sum(ZeroOut(kiln.typeof(x))(x))  # noqa: E731
    np.testing.assert_allclose(kiln.grad(f)(0.5), np.cos(0.5), rtol=1e-6)
    assert ZeroOut.seen[0][1] == "Zero" and ZeroOut.seen[0][0] != "Zero"


class Structured(_Unary):
    def vjp_fwd(self, nzs_in, x):
        return self(x), jnp.cos(x), True, {"x": x}

    def vjp_bwd(self, cos_x, sres, g, x_acc):
        x_acc.accum((cos_x * sres["x"] + jnp.sin(sres["x"])) * g)


def test_structured_residuals_reach_vjp_bwd():
    with kiln.enable_x64():
        np.testing.assert_allclose(kiln.grad(_call(Structured))(0.9), _dsin_x(0.9), rtol=1e-12)
        np.testing.assert_allclose(kiln.jit(kiln.vmap(kiln.grad(_call(Structured))))(jnp.array([0.9, -1.0])),
                                   _dsin_x(np.array([0.9, -1.0])), rtol=1e-12)


def test_structured_residuals_need_vjp_bwd():
    class Retval(_Unary):
        def vjp_fwd(self, nzs_in, x):
            return self(x), (), True, {"x": x}

        def vjp_bwd_retval(self, res, g):
            raise AssertionError("not reached")

    with pytest.raises(TypeError, match=r"Retval.vjp_fwd returned structured residuals \(a fourth value\), which only "
                                        r"a `vjp_bwd\(res, sres, g, \*arg_accums\)` rule receives; override vjp_bwd"):
        kiln.grad(_call(Retval))(1.0)


def test_misshapen_rule_results_raise():
    class BadFwd(_Unary):
        def vjp_fwd(self, nzs_in, x):
            return self(x)

        def vjp_bwd_retval(self, res, g):
            return (g,)

    with pytest.raises(TypeError, match=r"BadFwd.vjp_fwd must return \(output, residuals\), optionally followed by "
                                        "nzs_out and structured residuals"):
        kiln.grad(_call(BadFwd))(1.0)

    class BadLog(_Unary):
        def vjp_fwd(self, nzs_in, x):
            return self(x), None

        def vjp_bwd(self, res, g, x_acc):
            x_acc.accum(g)
            return ["not", "a", "dict"]

    with pytest.raises(TypeError, match="BadLog.vjp_bwd should return None or a dict of backward-pass log entries, "
                                        "got list"):
        kiln.grad(_call(BadLog))(1.0)


def test_logs_of_a_rule_are_dropped():
    # (kiln has no VJP.with_logs: a plain call drops the logs, as JAX's does)
    class Logging(_Unary):
        vjp_bwd_retval_logs = True

        def vjp_fwd(self, nzs_in, x):
            return self(x), x

        def vjp_bwd_retval(self, x, g):
            return ((jnp.cos(x) * x + jnp.sin(x)) * g,), {"seen": g}

    np.testing.assert_allclose(kiln.grad(_call(Logging))(0.4), _dsin_x(0.4), rtol=1e-6)
