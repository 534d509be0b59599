"""JAX's docs notebook Custom_derivative_rules_for_Python_code.md, ported to kiln by changing imports
(tests/examples/jax_ported/custom_derivative_rules.py), checked against oracles that do not involve JAX.

The cells run once, in the notebook's order (the port's ``run``), with 50 points instead of 1000 for the
gradient-clipping curves. Oracles: everything the notebook prints (its .ipynb's stream outputs, below), line for
line, each number to one float32 ulp (the notebook ran on an older JAX, whose sin, Newton iteration and plain
log1pexp gradient rounded a few values one ulp away, and which printed no ``weak_type=True`` and a NumPy zero
cotangent); closed-form derivatives in NumPy float64 (sigmoid for log1pexp, (sqrt x + 2) / (2 (sqrt x + 1)^2),
1 / (2 sqrt a) and its derivative for Newton's square root, ...); float64 central finite differences of the
ported functions themselves, with x64 on; and the exceptions the notebook promises (forward mode of a custom_vjp
function, reverse mode of a while_loop, a tracer in custom_vjp's nondiff_argnums, the backward pass of its pdb
example, which returns a bare cotangent where a tuple is required).
test_custom_derivative_rules_against_jax.py compares the same cells with JAX number for number.
"""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from ported import load, run_quietly

import kiln
import kiln.numpy as jnp

NUM = 50  # points of the gradient-clipping curves (the notebook's 1000)

# Everything the notebook prints, cell after cell (its .ipynb at jax-ml/jax f8017a6838, stream outputs only).
NOTEBOOK_STDOUT = """\
2.7278922
2.7278922
-1.2484405
-1.2484405
2.7278922
2.7278922
-1.2484405
-1.2484405
-1.2484405
3.0485873
0.95257413
[0.5        0.7310586  0.88079715]
nan
1.0
3.0485873
0.95257413
[0.5       0.7310586 0.8807971]
1.0
3.0485873
0.95257413
[0.5       0.7310586 0.8807971]
nan
1.0
1.0
1.4142135
[1.        1.4142135 1.7320508 2.       ]
1.4142135
0.35355335
-0.088388346
0.35355338
-0.08838835
0.14112
0.14112
-0.9899925
-0.9899925
-0.14112
12.0
-0.9899925
12.0
12.0
4.0
12.0
12.0
0.0
called f!
0.14112
called f!
[0.        0.841471  0.9092974]
called f!
0.14112
called f_jvp!
called f!
-0.9899925
called f_jvp!
called f!
-0.9899925
called f_jvp!
called f_jvp!
called f!
2.0
3.0
0.14112
-0.9899925
-1.2484405
called f!
0.14112
called f_fwd!
called f!
called f_bwd!
-0.9899925
called f_fwd!
called f!
0.14112
called f_bwd!
(Array(-0.9899925, dtype=float32),)
called f_fwd!
called f!
ERROR! can't apply forward-mode autodiff (jvp) to a custom_vjp function.
{'a': 1.0, 'b': (Array(0.841471, dtype=float32), Array(-0.4161468, dtype=float32))}
Point(x=Array(2.5403023, dtype=float32), y=array(0., dtype=float32))
{'a': 1.0, 'b': (Array(0.841471, dtype=float32), Array(-0.4161468, dtype=float32))}
Point(x=Array(2.5403023, dtype=float32), y=Array(-0., dtype=float32))
27.0
2.0
3375.0
3.0
16.0
5.0
"""


@pytest.fixture(scope="module")
def nb():
    return load("custom_derivative_rules")


@pytest.fixture(scope="module")
def out(nb):
    """What every cell returns (``run``), and everything they printed under "stdout"."""
    return run_quietly(nb, num=NUM)


def _f64(x):
    return np.asarray(x, np.float64)


def _f32(x):
    return np.float32(x)


def _ulps(a, b):
    """Distance in float32 units in the last place between two float32 values (0 for two NaNs)."""
    a, b = np.float32(a), np.float32(b)
    if np.isnan(a) or np.isnan(b):
        return 0 if np.isnan(a) and np.isnan(b) else np.inf
    ia, ib = (int(np.array(v, np.float32).view(np.int32)) for v in (a, b))
    ia, ib = (i if i >= 0 else -(i & 0x7FFFFFFF) for i in (ia, ib))  # sign-magnitude to a monotone integer line
    return abs(ia - ib)


def _assert_ulps(got, expect, n=1):
    got, expect = np.ravel(np.asarray(got, np.float32)), np.ravel(np.asarray(expect, np.float64).astype(np.float32))
    assert got.shape == expect.shape
    d = [_ulps(g, e) for g, e in zip(got, expect)]
    assert max(d) <= n, f"{got} vs {expect}: {d} ulps"


_NUMBER = re.compile(r"-?(?:\d+\.\d*|\d+|nan|inf)(?:e[-+]?\d+)?")


def _assert_printed_like(got: str, notebook: str):
    """One printed line as the notebook's: the same text around the numbers, each number within a float32 ulp.
    The notebook's JAX printed no weak types and a NumPy array for a zero cotangent; spaces pad NumPy's columns."""
    def template(s):
        s = s.replace(", weak_type=True", "").replace("=array(", "=Array(")
        return re.sub(r"\s+", " ", _NUMBER.sub("#", s)).replace("[ ", "[").replace(" ]", "]")
    assert template(got) == template(notebook), (got, notebook)
    nums_got, nums_nb = _NUMBER.findall(got), _NUMBER.findall(notebook)
    assert len(nums_got) == len(nums_nb)
    for g, e in zip(nums_got, nums_nb):
        assert _ulps(float(g), float(e)) <= 1 and np.signbit(float(g)) == np.signbit(float(e)), (got, notebook)


def _fd(fun, x, h=1e-5):
    """Central difference of a scalar function in float64."""
    return (float(fun(x + h)) - float(fun(x - h))) / (2 * h)


# ------------------------------------------------ The whole notebook ------------------------------------------------

def test_printed_output_is_the_notebooks(out):
    got, expect = out["stdout"].splitlines(), NOTEBOOK_STDOUT.splitlines()
    assert len(got) == len(expect)
    for g, e in zip(got, expect):
        if e.startswith("ERROR! "):
            # kiln's message is its own (the class is JAX's TypeError): it names forward mode and custom_vjp
            assert g.startswith("ERROR! ") and "forward-mode" in g and "custom_vjp function f" in g
        else:
            _assert_printed_like(g, e)


# ------------------------------------------------ TL;DR ------------------------------------------------

def test_tldr_custom_jvp_defjvps_and_custom_vjp(out):
    expect = [3 * np.sin(2.0), 3 * np.sin(2.0), 3 * np.cos(2.0), 3 * np.cos(2.0)]  # f = sin(x) y, d/dx at (2, 3)
    for key in ("tldr_jvp", "tldr_defjvps"):
        vals = out[key]
        assert all(v.dtype == np.float32 and v.shape == () for v in vals)
        _assert_ulps(vals, expect)
    assert out["tldr_vjp"].dtype == np.float32
    _assert_ulps(out["tldr_vjp"], 3 * np.cos(2.0))
    _assert_ulps(out["sin_y_vjp"], 3 * np.cos(2.0))


def test_custom_functions_take_keyword_and_default_arguments(nb):
    # "allowed so long as they can be unambiguously mapped to positional arguments"
    for f in (nb.tldr_custom_jvp_def(), nb.tldr_custom_vjp_def()):
        _assert_ulps(f(x=2., y=3.), 3 * np.sin(2.0))
        _assert_ulps(nb.grad(lambda x: f(y=3., x=x))(2.), 3 * np.cos(2.0))
        _assert_ulps(nb.grad(lambda y: f(2., y=y))(3.), np.sin(2.0))

    @nb.custom_jvp
    def h(x, y=2.):
        return x * y
    h.defjvp(lambda p, t: (h(*p), t[0] * p[1] + t[1] * p[0]))
    assert float(h(3.)) == 6 and float(nb.grad(h)(3.)) == 2 and float(nb.jvp(h, (3.,), (1.,))[1]) == 2


# ------------------------------------------- Example: Numerical stability -------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-_f64(x)))


def test_log1pexp_plain(out, nb):
    v = out["log1pexp"]
    assert v.dtype == np.float32 and v.weak_type
    _assert_ulps(v, np.log1p(np.exp(3.0)))
    y, g, gv = out["log1pexp_transforms"]
    _assert_ulps(y, np.log1p(np.exp(3.0)))
    _assert_ulps(g, _sigmoid(3.0))
    assert gv.shape == (3,) and gv.dtype == np.float32
    _assert_ulps(gv, _sigmoid(np.arange(3.0)))
    # "there's a numerical stability problem lurking here": exp(100) overflows, (1 / inf) * inf
    assert np.isnan(float(out["log1pexp_grad_100"]))


def test_log1pexp_jaxpr_multiplies_zero_by_infinity(out):
    closed = out["log1pexp_jaxpr"]
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["exp", "add", "log", "div", "mul"]
    lines = str(closed).splitlines()
    assert lines[0] == "{ lambda ; a:f32[]. let" and lines[-1] == "  in (e,) }"
    assert "    _:f32[] = log c" in lines  # the primal's log is computed and dropped
    assert lines[-2] == "    e:f32[] = mul d b"  # (1 / (1 + exp x)) * exp x


@pytest.mark.parametrize("key", ["log1pexp_custom_transforms", "log1pexp_defjvps"])
def test_log1pexp_custom_jvp(out, key):
    vals = out[key] if key == "log1pexp_defjvps" else (out["log1pexp_custom_grad_100"], *out[key])
    g100, y, g, gv = vals
    assert float(g100) == 1.0  # the notebook's 1.0, where the plain rule gave nan
    _assert_ulps(y, np.log1p(np.exp(3.0)))
    _assert_ulps(g, _sigmoid(3.0))
    _assert_ulps(gv, _sigmoid(np.arange(3.0)))


def test_log1pexp_rule_in_float64_and_forward_mode(nb):
    xs = [-30.0, -5.0, 0.0, 3.0, 30.0]
    with kiln.config.override("enable_x64", True):
        for make in (nb.log1pexp_custom_jvp_def, nb.log1pexp_defjvps_def):
            f = make()
            for x in xs:
                g = nb.grad(f)(x)
                assert g.dtype == np.float64
                np.testing.assert_allclose(float(g), 1 - 1 / (1 + np.exp(x)), rtol=1e-15)  # the rule's formula
                # the derivative: the formula cancels for x << 0, to an absolute 1e-16
                np.testing.assert_allclose(float(g), _sigmoid(x), rtol=1e-14, atol=2e-16)
                if x > -10:  # (below, the primal log(1 + exp x) itself rounds 1 + exp x to 1)
                    np.testing.assert_allclose(float(g), _fd(f, x), rtol=1e-8, atol=1e-15)
            assert float(nb.grad(f)(1000.)) == 1.0
        assert np.isnan(float(nb.grad(nb.log1pexp_def())(1000.)))  # float64 overflows too, later
        J = nb.jax.jacfwd(nb.log1pexp_custom_jvp_def())(jnp.array([100., 0., -3.]))  # forward mode uses the rule
    np.testing.assert_allclose(_f64(J), np.diag(_sigmoid([100., 0., -3.])), rtol=1e-14)


# ---------------------------------- Example: Enforcing a differentiation convention -----------------------------------

def _dratio(x):
    return (np.sqrt(x) + 2) / (2 * (np.sqrt(x) + 1) ** 2)


def test_x_over_1_plus_sqrt_at_zero(out):
    assert np.isnan(float(out["sqrt_ratio_grad_0"]))  # the notebook's nan: 0 * inf from sqrt's derivative at 0
    for key in ("sqrt_ratio_custom_grad_0", "sqrt_ratio_defjvps_grad_0"):
        assert float(out[key]) == 1.0 and out[key].dtype == np.float32


def test_x_over_1_plus_sqrt_rule_is_the_derivative(nb):
    # away from 0 the rule is the function's derivative; at 0 it is the one-sided one
    with kiln.config.override("enable_x64", True):
        plain = nb.x_over_1_plus_sqrt_def()
        for make in (nb.x_over_1_plus_sqrt_custom_jvp_def, nb.x_over_1_plus_sqrt_defjvps_def):
            f = make()
            for x in (0.01, 0.5, 2.0, 40.0):
                g = float(nb.grad(f)(x))
                np.testing.assert_allclose(g, _dratio(x), rtol=1e-14)
                np.testing.assert_allclose(g, _fd(f, x, h=1e-6), rtol=1e-7)
                np.testing.assert_allclose(g, float(nb.grad(plain)(x)), rtol=1e-14)
            h = 1e-12
            np.testing.assert_allclose((float(f(h)) - float(f(0.))) / h, float(nb.grad(f)(0.)), rtol=2e-6)


# ------------------------------------------- Example: Gradient clipping -------------------------------------------

def test_gradient_clipping_curves(out):
    t = out["t"]
    sin_t, dsin_t = out["sin_curves"]
    clip_sin_t, dclip_t = out["clip_sin"]
    assert t.shape == sin_t.shape == dsin_t.shape == clip_sin_t.shape == dclip_t.shape == (NUM,)
    tt = np.linspace(0, 10, NUM)
    np.testing.assert_allclose(_f64(t), tt, rtol=1e-6)
    np.testing.assert_allclose(_f64(sin_t), np.sin(_f64(t)), atol=1e-6)
    np.testing.assert_allclose(_f64(dsin_t), np.cos(_f64(t)), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(clip_sin_t), np.asarray(sin_t))  # clip_gradient is the identity
    np.testing.assert_allclose(_f64(dclip_t), np.clip(np.cos(_f64(t)), -0.75, 0.75), atol=1e-6)
    assert np.abs(_f64(dclip_t)).max() == np.float32(0.75) and (np.abs(np.cos(tt)) > 0.75).any()


def test_clip_gradient_gives_zero_cotangents_to_the_bounds(nb):
    g = nb.grad(lambda lo, hi, x: 3. * nb.clip_gradient(lo, hi, x), argnums=(0, 1, 2))(-0.75, 0.75, 2.)
    assert [float(v) for v in g] == [0.0, 0.0, 0.75]  # bwd's None for lo and hi
    gv = nb.jit(nb.vmap(nb.grad(nb.clip_sin)))(jnp.array([0., 1., 4.]))
    np.testing.assert_allclose(_f64(gv), np.clip(np.cos([0., 1., 4.]), -0.75, 0.75), rtol=1e-6)


# ---------------------- Example: Implicit function differentiation of iterative implementations -----------------------

def test_newton_sqrt_values(out):
    for key in ("newton_sqrt", "newton_sqrt_custom"):
        assert out[key].dtype == np.float32
        _assert_ulps(out[key], np.sqrt(2.0))
    v = out["newton_sqrt_jit_vmap"]
    assert v.shape == (4,) and v.dtype == np.float32
    _assert_ulps(v, np.sqrt([1., 2., 3., 4.]))  # float32 Newton stops one ulp above sqrt(3), as in JAX


def test_newton_sqrt_plain_while_loop_has_no_reverse_mode(nb):
    _, newton_sqrt = nb.fixed_point_def()
    with pytest.raises(ValueError, match="while_loop"):  # "We can't apply reverse-mode autodiff ..."
        nb.grad(newton_sqrt)(2.)
    # forward mode goes through the loop
    _, t = nb.jvp(newton_sqrt, (2.,), (1.,))
    _assert_ulps(t, 1 / (2 * np.sqrt(2.0)), n=2)


def test_newton_sqrt_implicit_gradients(out):
    d1, d2 = out["newton_sqrt_grad"]
    assert d1.dtype == d2.dtype == np.float32
    _assert_ulps(d1, 1 / (2 * np.sqrt(2.0)), n=2)  # the notebook's 0.35355335 (old JAX) is 1 ulp below
    _assert_ulps(d2, -1 / (4 * 2.0 ** 1.5), n=2)
    s1, s2 = out["sqrt_grad"]  # jnp.sqrt's own derivatives, the notebook's check
    _assert_ulps(s1, 1 / (2 * np.sqrt(2.0)))
    _assert_ulps(s2, -1 / (4 * 2.0 ** 1.5))


def test_newton_sqrt_implicit_gradients_in_float64(nb):
    fixed_point, newton_sqrt = nb.fixed_point_custom_vjp_def()
    with kiln.config.override("enable_x64", True):
        for a in (0.5, 9.0):
            g = nb.grad(newton_sqrt)(a)
            assert g.dtype == np.float64
            np.testing.assert_allclose(float(g), 0.5 / np.sqrt(a), rtol=1e-10)
            np.testing.assert_allclose(float(g), _fd(newton_sqrt, a), rtol=1e-7)  # the implementation's slope
            np.testing.assert_allclose(float(nb.grad(nb.grad(newton_sqrt))(a)), -0.25 * a ** -1.5, rtol=1e-8)
        # a fixed point with a non-trivial A = d f / d x: x = a cos(x), dx/da = cos x / (1 + a sin x)
        x = fixed_point(lambda a, x: a * jnp.cos(x), 0.5, 0.0)
        g = nb.grad(lambda a: fixed_point(lambda a, x: a * jnp.cos(x), a, 0.0))(0.5)
        xs = float(x)
        np.testing.assert_allclose(xs, 0.5 * np.cos(xs), rtol=1e-6)
        np.testing.assert_allclose(float(g), np.cos(xs) / (1 + 0.5 * np.sin(xs)), rtol=1e-5)
    vg = nb.vmap(nb.grad(newton_sqrt))(jnp.array([1., 4., 9.]))
    _assert_ulps(vg, [0.5, 0.25, 1 / 6], n=2)
    _assert_ulps(nb.jit(nb.grad(newton_sqrt))(4.), 0.25, n=2)
    with pytest.raises(TypeError, match="custom_vjp function fixed_point"):  # reverse mode only
        nb.jvp(newton_sqrt, (2.,), (1.,))


# ----------------- Use `jax.custom_jvp` to define forward-mode (and, indirectly, reverse-mode) rules ------------------

def test_custom_jvp_basics(out):
    _assert_ulps(out["sin_jvp"], [np.sin(3.0), np.sin(3.0), np.cos(3.0)])
    _assert_ulps(out["sin_grad_grad"], [np.cos(3.0), -np.sin(3.0)])
    assert float(out["x2y_grad"]) == 12.0  # d (x^2 y) / dx = 2 x y at (2, 3)
    _assert_ulps(out["sin_defjvps_grad"], np.cos(3.0))
    assert [float(v) for v in out["x2y_defjvps"]] == [12.0, 12.0, 4.0]
    assert [float(v) for v in out["x2y_defjvps_none"]] == [12.0, 12.0, 0.0]  # None: a zero JVP for y
    assert all(v.dtype == np.float32 for v in (*out["x2y_defjvps"], *out["x2y_defjvps_none"]))


def test_custom_jvp_is_called_only_when_differentiating(out):
    _assert_ulps(out["side_effect_f"], np.sin(3.0))
    v, vj = out["side_effect_vmap_jit"]
    _assert_ulps(v, np.sin(np.arange(3.0)))
    _assert_ulps(vj, np.sin(3.0))
    y, y_dot = out["side_effect_jvp"]
    _assert_ulps([y, y_dot], [np.sin(3.0), np.cos(3.0)])
    _assert_ulps(out["side_effect_grad"], np.cos(3.0))
    gg = out["side_effect_grad_grad"]
    assert gg.dtype == np.float32 and gg.weak_type  # the cell's display: Array(-0.14112, dtype=float32, ...)
    _assert_ulps(gg, -np.sin(3.0))
    # grad(grad(f)): the rule once per order, f once (the notebook's "called f_jvp!" twice, then "called f!")
    assert "called f_jvp!\ncalled f_jvp!\ncalled f!\n2.0\n" in out["stdout"]


def test_custom_jvp_with_python_control_flow(out, nb):
    assert [float(v) for v in out["control_flow"]] == [2.0, 3.0]  # the rule's 2 and 3, not cos/-sin
    with pytest.raises(kiln.errors.TracerBoolConversionError):  # concrete values only: `if x > 0` under jit
        nb.jit(nb.grad(nb.control_flow_custom_jvp_def()))(1.)


def test_nonlinear_jvp_rule_transposes_with_an_error(nb):
    # "the JVP rule's output tangents must be linear ... Otherwise a transposition error is raised"
    @nb.custom_jvp
    def sq(x):
        return x * x
    sq.defjvp(lambda p, t: (sq(p[0]), t[0] * t[0]))
    y, t = nb.jvp(sq, (jnp.float32(3.),), (jnp.float32(2.),))
    assert (float(y), float(t)) == (9.0, 4.0)  # forward mode just runs the rule
    with pytest.raises(TypeError, match=r"a product of two tangents \(mul\) is not linear in the tangents.*A "
                                        r"custom_jvp rule's tangent output must be linear in its tangent inputs"):
        nb.grad(sq)(3.)


# --------------------------- Use `jax.custom_vjp` to define custom reverse-mode-only rules ----------------------------

def test_custom_vjp_basics(out):
    _assert_ulps(out["sin_vjp"], [np.sin(3.0), np.cos(3.0)])
    _assert_ulps(out["vjp_side_effect_f"], np.sin(3.0))
    _assert_ulps(out["vjp_side_effect_grad"], np.cos(3.0))
    _assert_ulps(out["vjp_side_effect_y"], np.sin(3.0))
    ct = out["vjp_side_effect_f_vjp"]
    assert isinstance(ct, tuple) and len(ct) == 1 and ct[0].dtype == np.float32
    _assert_ulps(ct[0], np.cos(3.0))


def test_forward_mode_of_custom_vjp_raises(out):
    e = out["jvp_error"]  # the cell's `except TypeError as e`
    assert isinstance(e, TypeError) and "forward-mode" in str(e) and "custom_vjp" in str(e)
    # fwd (and the f it calls) ran before the error, as the notebook prints
    assert "called f_fwd!\ncalled f!\nERROR! " in out["stdout"]


def test_custom_vjp_rule_structure_errors(nb):
    # "the output of f_bwd must be a sequence (e.g. a tuple) of length equal to the number of arguments"
    @nb.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1],))
    with pytest.raises(TypeError, match="1 cotangent"):
        nb.grad(f)(2., 3.)

    @nb.custom_vjp
    def h(x):
        return x
    h.defvjp(lambda x: x, lambda r, g: (g,))  # fwd must return (output, residuals)
    with pytest.raises(TypeError, match="pair"):
        nb.grad(h)(2.)


def test_pdb_in_the_backward_pass(nb, monkeypatch):
    seen = []

    def set_trace():  # what the notebook's `p x` and `p g` show
        frame = sys._getframe(1)
        seen.append((frame.f_code.co_name, frame.f_locals["x"], frame.f_locals["g"]))

    monkeypatch.setattr(nb.pdb, "set_trace", set_trace)
    # The notebook's debug_bwd returns g, not (g,): the backward pass stops at the breakpoint with the notebook's
    # x = 9 and g = cos(9), then the bare cotangent is refused (a TypeError, as JAX 0.10 refuses it)
    with pytest.raises(TypeError, match="tuple"):
        nb.debug_cell()
    assert [name for name, *_ in seen] == ["debug_bwd"]
    _, x, g = seen[0]
    assert float(x) == 9.0 and x.dtype == np.float32
    _assert_ulps(g, np.cos(9.0))
    _assert_ulps(g, -0.91113025)  # the notebook's transcript

    # with the tuple the rule should return, the gradient is sin(x^2)'s
    seen.clear()
    nb.debug.defvjp(nb.debug_fwd, lambda x, g: (nb.debug_bwd(x, g),))
    try:
        _assert_ulps(nb.debug_cell(), 6 * np.cos(9.0), n=2)
    finally:
        nb.debug.defvjp(nb.debug_fwd, nb.debug_bwd)
    assert len(seen) == 1


# ----------------------- Working with `list` / `tuple` / `dict` containers (and other pytrees) ------------------------

@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_pytree_arguments_and_outputs(out, nb, kind):
    fx = out[f"point_{kind}_f"]
    assert sorted(fx) == ["a", "b"] and isinstance(fx["b"], tuple)
    assert fx["a"] == 1.0  # x ** 2 of the Python float 1.
    _assert_ulps([fx["b"][0], fx["b"][1]], [np.sin(1.0), np.cos(2.0)])
    g = out[f"point_{kind}_grad"]
    assert isinstance(g, nb.Point)
    _assert_ulps(g.x, 2 * 1.0 + np.cos(1.0))  # d (x^2 + sin x) / dx at 1
    assert float(g.y) == 0.0 and g.y.dtype == np.float32
    # the custom_jvp rule's symbolic zero comes out +0; the custom_vjp bwd computes -sin(2) * 0 = -0
    assert np.signbit(float(g.y)) == (kind == "vjp")
    f, _ = getattr(nb, f"point_custom_{kind}_def")()
    gy = nb.grad(lambda p: f(p)["b"][1])(nb.Point(1., 2.))  # the other output: d cos(y) / dy
    assert float(gy.x) == 0.0
    _assert_ulps(gy.y, -np.sin(2.0))


def test_pytree_custom_jvp_in_forward_mode(nb):
    f, _ = nb.point_custom_jvp_def()
    y, t = nb.jvp(f, (nb.Point(1., 2.),), (nb.Point(1., 1.),))
    assert float(t["a"]) == 2.0
    _assert_ulps([t["b"][0], t["b"][1]], [np.cos(1.0), -np.sin(2.0)])


# --------------------------------------- Handling non-differentiable arguments ----------------------------------------

def test_nondiff_argnums(out):
    assert float(out["app_jvp"]) == 27.0 and float(out["app_jvp_grad"]) == 2.0  # the rule's 2, not 3 x^2
    assert float(out["app2"]) == 3375.0 and float(out["app2_grad"]) == 3.0  # (5 * 3) ** 3; the rule's 3
    assert float(out["app_vjp"]) == 16.0 and float(out["app_vjp_grad"]) == 5.0  # bwd's 5 g
    for key in ("app_jvp_grad", "app2_grad", "app_vjp_grad"):
        assert out[key].dtype == np.float32


def test_tracers_in_nondiff_argnums(nb):
    # custom_vjp: "If JAX detects that an argument indicated by nondiff_argnums contains a JAX Tracer, then an
    # error is raised" (kiln raises where the tracer is being differentiated)
    @nb.partial(nb.custom_vjp, nondiff_argnums=(0,))
    def scale(s, x):
        return s * x
    scale.defvjp(lambda s, x: (s * x, None), lambda s, r, g: (s * g,))
    assert float(nb.grad(lambda x: scale(3., x))(2.)) == 3.0
    with pytest.raises(kiln.errors.UnexpectedTracerError, match="nondiff_argnums"):
        nb.grad(lambda s: scale(s, 2.))(3.)
    # custom_jvp takes traced arrays there as constants of the derivative, as JAX does
    @nb.partial(nb.custom_jvp, nondiff_argnums=(0,))
    def jscale(s, x):
        return s * x
    jscale.defjvp(lambda s, p, t: (jscale(s, p[0]), s * t[0]))
    assert float(nb.grad(lambda s: jscale(s, 2.))(3.)) == 0.0
    np.testing.assert_array_equal(np.asarray(nb.vmap(lambda s: nb.grad(lambda x: jscale(s, x))(2.))(
        jnp.arange(3.))), [0., 1., 2.])
