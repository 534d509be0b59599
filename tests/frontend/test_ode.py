"""kiln.experimental.ode.odeint against SciPy's integrators and closed forms (exponential decay, the harmonic
oscillator as a tuple state, Lotka–Volterra with arguments), in float32 and float64; its adjoint-method
derivatives against the analytic ones of the linear ODE and against central differences; jit and vmap
(against a Python loop); and the errors for bad input.

Every distinct program costs a compile (about 0.3 s forward, 0.7 s with the backward pass), so the tests share
programs: one vmapped call evaluates every finite difference, one jitted gradient covers y0, args, t, a
closed-over value and an integer argument, and gradients are jitted (one program rather than two)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import kiln
import kiln.numpy as knp
from kiln.experimental.ode import odeint


@pytest.fixture
def x64():
    with kiln.enable_x64():
        yield


def _scipy(f, y0, t, *args, rtol=1e-12, atol=1e-12):
    """SciPy's 8th-order Dormand–Prince (DOP853) solution at the times t: rows = times."""
    sol = solve_ivp(lambda s, y: f(y, s, *args), (t[0], t[-1]), np.asarray(y0, np.float64), method="DOP853",
                    t_eval=t, rtol=rtol, atol=atol)
    assert sol.success
    return sol.y.T


def _lotka_volterra(y, t, a, b, c, d):
    prey, predator = y[0], y[1]
    return knp.stack([a * prey - b * prey * predator, d * prey * predator - c * predator])


def _lotka_volterra_np(y, t, a, b, c, d):
    return np.array([a * y[0] - b * y[0] * y[1], d * y[0] * y[1] - c * y[1]])


LV_ARGS = (1.1, 0.4, 0.4, 0.1)


# -- values ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exponential_decay(dtype):
    with kiln.enable_x64(dtype == np.float64):
        t = np.linspace(0.0, 4.0, 9).astype(dtype)
        y0 = np.array([1.0, -2.0, 0.5], dtype)
        rate = np.array([0.5, 1.0, 2.0], dtype)
        ys = odeint(lambda y, t, k: -k * y, knp.asarray(y0), knp.asarray(t), knp.asarray(rate))
        assert ys.shape == (9, 3) and ys.dtype == dtype
        exact = y0 * np.exp(-np.outer(t.astype(np.float64), rate))
        np.testing.assert_allclose(exact, _scipy(lambda y, t, k: -k * y, y0, t, rate), rtol=1e-8, atol=1e-10)
        # The default tolerances (1.4e-8) bound each step's error; the errors of the steps add up.
        tol = 1e-6 if dtype == np.float32 else 1e-7
        np.testing.assert_allclose(np.asarray(ys), exact, rtol=tol, atol=tol / 10)


def test_harmonic_oscillator_tuple_state(x64):
    # x'' = -w^2 x, as the state (x, v); x(0) = 1, v(0) = 0.5.
    w = 3.0
    t = np.linspace(0.0, 2.0, 11)
    x, v = odeint(lambda s, t: (s[1], -w ** 2 * s[0]), (knp.array(1.0), knp.array(0.5)), knp.asarray(t),
                  rtol=1e-11, atol=1e-11)
    assert x.shape == v.shape == (11,)
    np.testing.assert_allclose(np.asarray(x), np.cos(w * t) + 0.5 / w * np.sin(w * t), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(v), -w * np.sin(w * t) + 0.5 * np.cos(w * t), rtol=1e-9, atol=1e-9)
    expected = _scipy(lambda y, t: np.array([y[1], -w ** 2 * y[0]]), [1.0, 0.5], t)
    np.testing.assert_allclose(np.stack([x, v], axis=1), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lotka_volterra_with_args(dtype):
    with kiln.enable_x64(dtype == np.float64):
        t = np.linspace(0.0, 15.0, 7)
        y0 = np.array([10.0, 5.0])
        expected = _scipy(_lotka_volterra_np, y0, t, *LV_ARGS)
        if dtype == np.float32:
            ys = odeint(_lotka_volterra, knp.asarray(y0, dtype), knp.asarray(t, dtype), *LV_ARGS, rtol=1e-6,
                        atol=1e-6)
            assert ys.dtype == np.float32
            np.testing.assert_allclose(np.asarray(ys), expected, rtol=2e-4, atol=2e-4)
        else:
            ys = odeint(_lotka_volterra, knp.asarray(y0), knp.asarray(t), *LV_ARGS, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(np.asarray(ys), expected, rtol=1e-8, atol=1e-8)


def test_dict_state_complex_state_and_a_single_time():
    t = knp.linspace(0.0, 2.0, 5)
    out = odeint(lambda s, t: {"z": 1j * s["z"], "m": -s["m"]},
                 {"z": knp.array([1.0 + 0j, 2j]), "m": knp.ones((2, 2))}, t)
    assert out["z"].shape == (5, 2) and out["z"].dtype == np.complex64 and out["m"].shape == (5, 2, 2)
    tt = np.asarray(t, np.float64)
    np.testing.assert_allclose(np.asarray(out["z"]), np.exp(1j * tt)[:, None] * np.array([1.0, 2j]), atol=2e-6)
    np.testing.assert_allclose(np.asarray(out["m"]), np.broadcast_to(np.exp(-tt)[:, None, None], (5, 2, 2)),
                               rtol=2e-6)
    # t of length 1: the initial state alone.
    np.testing.assert_array_equal(np.asarray(odeint(lambda y, t: -y, knp.ones(3), knp.array([0.5]))),
                                  np.ones((1, 3)))


def test_mxstep_and_hmax():
    t = knp.linspace(0.0, 5.0, 6)
    f = lambda y, t: -y  # noqa: E731
    exact = np.exp(-np.asarray(t))
    # hmax: many small steps, still accurate.
    np.testing.assert_allclose(np.asarray(odeint(f, knp.array(1.0), t, hmax=0.05)), exact, rtol=1e-5)
    # As JAX: past mxstep steps the outputs extrapolate the last accepted step (inaccurate), and with no step
    # at all (mxstep=0) they are not finite.
    short = np.asarray(odeint(f, knp.array(1.0), t, mxstep=1))
    assert short[0] == 1.0 and np.max(np.abs(short[1:] - exact[1:])) > 1e-2
    assert not np.isfinite(np.asarray(odeint(f, knp.array(1.0), t, mxstep=0))[1:]).any()


# -- transformations -------------------------------------------------------------------------------------
def test_jit_and_vmap_match_a_python_loop():
    t = knp.linspace(0.0, 6.0, 4)
    y0s = np.array([[10.0, 5.0], [5.0, 2.0], [1.0, 8.0]], np.float32)

    def solve(y0, a):
        return odeint(_lotka_volterra, y0, t, a, 0.4, 0.4, 0.1, rtol=1e-6, atol=1e-6)

    loop = np.stack([np.asarray(solve(knp.asarray(y), 1.1)) for y in y0s])
    batched = kiln.jit(kiln.vmap(solve, in_axes=(0, None)))(knp.asarray(y0s), 1.1)
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-6, atol=1e-6)


def test_gradients_of_the_linear_ode_are_analytic(x64):
    # y(t) = y0 exp(-(a + b) k (t - t0)): a is an argument, b a closed-over value, k an integer argument.
    t = np.array([0.5, 1.0, 1.7, 3.0])
    y0 = np.array([1.0, -2.0])
    w = np.array([[0.3, -1.0], [1.2, 0.4], [-0.7, 2.0], [0.5, 0.5]])  # the loss's weights, per time and entry
    a, b, k = 0.4, 0.3, 2

    def loss(y0, a, b, t):
        ys = odeint(lambda y, s, a, k: -(a + b) * k * y, y0, t, a, knp.asarray(k), rtol=1e-11, atol=1e-11)
        return knp.sum(knp.asarray(w) * ys)

    g_y0, g_a, g_b, g_t = kiln.jit(kiln.grad(loss, argnums=(0, 1, 2, 3)))(knp.asarray(y0), a, b, knp.asarray(t))
    rate = (a + b) * k
    decay = np.exp(-rate * (t - t[0]))[:, None]  # dy(t_i)/dy0
    ys = y0 * decay
    np.testing.assert_allclose(np.asarray(g_y0), np.sum(w * decay, axis=0), rtol=1e-8)
    d_rate = np.sum(w * ys * -(t - t[0])[:, None])  # d loss / d rate
    np.testing.assert_allclose(float(g_a), d_rate * k, rtol=1e-8)
    np.testing.assert_allclose(float(g_b), d_rate * k, rtol=1e-8)
    d_t = np.sum(w * -rate * ys, axis=1)  # moving t_i moves y(t_i) by dy/dt
    d_t[0] = -np.sum(d_t[1:])  # moving t0 moves the whole solution the other way
    np.testing.assert_allclose(np.asarray(g_t), d_t, rtol=1e-8, atol=1e-10)


def test_gradients_match_finite_differences(x64):
    # Lotka–Volterra: d loss / d (y0, args, t), against central differences, all evaluated in one vmapped call.
    y0 = np.array([10.0, 5.0])
    args = np.array(LV_ARGS)
    t = np.array([0.0, 1.5, 4.0, 6.0])
    w = np.array([[0.0, 0.0], [0.5, -1.0], [1.0, 0.3], [-0.2, 0.8]])

    def loss(y0, args, t):
        ys = odeint(_lotka_volterra, y0, t, *[args[i] for i in range(4)], rtol=1e-11, atol=1e-11)
        return knp.sum(knp.asarray(w) * ys)

    grads = kiln.jit(kiln.grad(loss, argnums=(0, 1, 2)))(knp.asarray(y0), knp.asarray(args), knp.asarray(t))
    x = np.concatenate([y0, args, t])
    eps = 1e-5
    points = np.concatenate([x + eps * np.eye(x.size), x - eps * np.eye(x.size)])
    values = np.asarray(kiln.vmap(loss)(knp.asarray(points[:, :2]), knp.asarray(points[:, 2:6]),
                                        knp.asarray(points[:, 6:])))
    fd = (values[:x.size] - values[x.size:]) / (2 * eps)
    np.testing.assert_allclose(np.concatenate([np.asarray(g) for g in grads]), fd, rtol=1e-5, atol=1e-5)


def test_vmap_of_grad(x64):
    # Batched state and argument, through the forward and the backward (adjoint) solves.
    t = knp.array([0.0, 1.0, 2.0])

    def end(y0, a):
        return odeint(lambda y, t, a: -a * y, y0, t, a, rtol=1e-10, atol=1e-10)[-1]

    y0 = np.array([1.0, 2.0, 3.0])
    a = np.array([0.5, 1.0, 1.5])
    g_y0, g_a = kiln.jit(kiln.vmap(kiln.grad(end, argnums=(0, 1))))(knp.asarray(y0), knp.asarray(a))
    np.testing.assert_allclose(np.asarray(g_y0), np.exp(-2 * a), rtol=1e-8)
    np.testing.assert_allclose(np.asarray(g_a), -2 * y0 * np.exp(-2 * a), rtol=1e-8)


def test_integer_args_are_passed_as_they_are_and_get_no_gradient():
    t = knp.linspace(0.0, 1.0, 3)
    k = knp.array(2)

    def final(y0, k):
        return odeint(lambda y, t, k: -k * y, y0, t, k)[-1].sum()
    g = kiln.grad(final)(knp.ones(2), k)
    np.testing.assert_allclose(np.asarray(g), np.exp(-2.0) * np.ones(2), rtol=1e-5)
    g_k = kiln.grad(final, argnums=1, allow_int=True)(knp.ones(2), k)
    assert g_k.dtype == kiln.dtypes.float0


def test_a_closed_over_traced_value_is_not_kept_after_its_trace():
    # func's closure is converted: the traced value becomes an argument of the solver, not part of the
    # function its IR keeps (check_tracer_leaks raises otherwise).
    t = knp.linspace(0.0, 1.0, 3)
    with kiln.checking_leaks():
        ys = kiln.jit(lambda a: odeint(lambda y, t: -a * y, knp.ones(2), t))(2.0)
    np.testing.assert_allclose(np.asarray(ys)[:, 0], np.exp(-2.0 * np.asarray(t)), rtol=1e-6)


# -- errors ----------------------------------------------------------------------------------------------
def _decay(y, t, *args):
    return -y


def test_non_array_args_are_refused():
    t = knp.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match=r"args\[0\] is a str .*closing over it.*functools.partial"):
        odeint(_decay, knp.ones(2), t, "fast")
    with pytest.raises(kiln.KilnError, match=r"args\[1\]\['f'\] is a function"):
        odeint(_decay, knp.ones(2), t, 1.0, {"f": _decay})


def test_t_must_be_a_1d_float_array():
    y0 = knp.ones(2)
    with pytest.raises(TypeError, match=r"t must be a non-empty 1-D array.*shape \(\).*jnp.array\(\[t0, T\]\)"):
        odeint(_decay, y0, 1.0)
    with pytest.raises(TypeError, match=r"t must be a non-empty 1-D array.*shape \(2, 3\)"):
        odeint(_decay, y0, knp.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"t must be a non-empty 1-D array.*shape \(0,\)"):
        odeint(_decay, y0, knp.zeros((0,)))
    with pytest.raises(TypeError, match=r"t must be an array of real floating-point times, got int32.*astype"):
        odeint(_decay, y0, knp.arange(3))
    with pytest.raises(ValueError, match=r"times t must be increasing, but t\[2\] = 0.5 < t\[1\] = 1.0"):
        odeint(_decay, y0, knp.array([0.0, 1.0, 0.5]))


def test_func_must_return_the_structure_and_shapes_of_y0():
    t = knp.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match=r"must return dy/dt with the structure of y0, PyTreeDef\(\(\*, \*\)\), but "
                                        r"returned PyTreeDef\(\*\)"):
        odeint(lambda s, t: s[0], (knp.ones(2), knp.ones(2)), t)
    with pytest.raises(kiln.KilnError, match=r"derivative of shape \(3,\) for y0\['b'\], which has shape \(2,\)"):
        odeint(lambda s, t: {"a": s["a"], "b": knp.ones(3)}, {"a": knp.ones(2), "b": knp.ones(2)}, t)
    with pytest.raises(TypeError, match=r"complex derivative \(complex64\) for y0, which is real"):
        odeint(lambda y, t: 1j * y, knp.ones(2), t)
    with pytest.raises(TypeError, match=r"shape \(3,\) for y0, which has shape \(2,\)"):
        kiln.jit(lambda y0: odeint(lambda y, t: knp.ones(3), y0, t))(knp.ones(2))


def test_other_bad_input():
    t = knp.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match=r"y0 has dtype int32; the state must be floating-point"):
        odeint(_decay, knp.arange(2), t)
    with pytest.raises(TypeError, match=r"y0\[1\] is a str"):
        odeint(_decay, (knp.ones(2), "x"), t)
    with pytest.raises(TypeError, match=r"func must be a callable"):
        odeint(None, knp.ones(2), t)
    with pytest.raises(TypeError, match=r"rtol must be a Python number"):
        odeint(_decay, knp.ones(2), t, rtol=knp.array(1e-3))
    with pytest.raises(ValueError, match=r"atol must be non-negative, got -1.0"):
        odeint(_decay, knp.ones(2), t, atol=-1)
    with pytest.raises(ValueError, match=r"hmax must be positive"):
        odeint(_decay, knp.ones(2), t, hmax=0.0)
