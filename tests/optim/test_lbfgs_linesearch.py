"""kiln.optim's L-BFGS and line searches against NumPy: the two-loop recursion against the dense BFGS update of
the inverse Hessian, the step sizes against the (strong) Wolfe and Armijo conditions, the minima against known
ones and scipy's L-BFGS-B; and their error messages."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import optim


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_np(x):
    x = np.asarray(x, np.float64)
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad_np(x):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    r = x[1:] - x[:-1] ** 2
    g[:-1] += -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


X0 = np.array([-1.2, 1.0, -0.5, 0.7], np.float32)

# a strictly convex quadratic 0.5 x'Qx - b'x
_R = np.random.default_rng(0)
_M = _R.standard_normal((5, 5))
Q = (_M @ _M.T + 5 * np.eye(5)).astype(np.float32)
B = _R.standard_normal(5).astype(np.float32)


def quadratic(x):
    return 0.5 * jnp.dot(x, jnp.dot(jnp.asarray(Q), x)) - jnp.dot(jnp.asarray(B), x)


def _lbfgs_step(opt, fn):
    value_and_grad = optim.value_and_grad_from_state(fn)

    def step(params, state):
        value, grad = value_and_grad(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=fn)
        return optim.apply_updates(params, updates), state
    return step


# ----------------------------------------------------------------------------------------------------------------
# Minimisation
# ----------------------------------------------------------------------------------------------------------------

def test_lbfgs_reproduces_optaxs_documented_example():
    # optax.lbfgs's docstring: sum(x**2) from [1, 2, 3] prints 7.52E+00 then 7.46E-14
    def f(x):
        return jnp.sum(x ** 2)
    opt = optim.lbfgs()
    params, state = jnp.array([1.0, 2.0, 3.0]), None
    state = opt.init(params)
    step = _lbfgs_step(opt, f)
    printed = []
    for _ in range(2):
        params, state = step(params, state)
        printed.append("{:.2E}".format(float(f(params))))
    assert printed == ["7.52E+00", "7.46E-14"]


@pytest.mark.parametrize("jitted", [False, True])
def test_lbfgs_minimises_rosenbrock_as_scipy(jitted):
    import scipy.optimize
    opt = optim.lbfgs()
    step = _lbfgs_step(opt, rosenbrock)
    if jitted:
        step = kiln.jit(step)
    params = jnp.asarray(X0)
    state = opt.init(params)
    values = [rosenbrock_np(X0)]
    for _ in range(40):
        params, state = step(params, state)
        values.append(rosenbrock_np(params))
    # the zoom line search guarantees sufficient decrease: the values never go up
    assert all(b <= a for a, b in zip(values, values[1:])), values
    ref = scipy.optimize.minimize(rosenbrock_np, X0.astype(np.float64), jac=rosenbrock_grad_np, method="L-BFGS-B",
                                  options=dict(gtol=1e-10, ftol=1e-14))
    assert ref.success
    np.testing.assert_allclose(np.asarray(params), ref.x, atol=1e-3)
    np.testing.assert_allclose(np.asarray(params), np.ones(4), atol=1e-3)
    # the state's value and gradient are those at the current params (what value_and_grad_from_state reuses)
    np.testing.assert_allclose(float(state[2].value), rosenbrock_np(params), rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(np.asarray(state[2].grad), rosenbrock_grad_np(params), rtol=1e-3, atol=1e-4)


def test_lbfgs_inside_while_loop_as_optaxs_docs():
    # optax's "L-BFGS" guide runs the whole solve as one lax.while_loop, stopping on the gradient norm
    opt = optim.lbfgs()
    step = _lbfgs_step(opt, quadratic)

    def run(x0):
        def keep_going(carry):
            _, state = carry
            err = jnp.sqrt(jnp.sum(state[2].grad ** 2))
            return (state[0].count == 0) | ((state[0].count < 50) & (err >= 1e-4))
        return kiln.lax.while_loop(keep_going, lambda c: step(*c), (x0, opt.init(x0)))
    params, state = kiln.jit(run)(jnp.zeros(5))
    np.testing.assert_allclose(np.asarray(params), np.linalg.solve(Q.astype(np.float64), B), rtol=1e-4, atol=1e-5)
    # L-BFGS on a 5-dimensional quadratic with exact-ish line searches: a handful of iterations, not 50
    assert 1 <= int(state[0].count) < 20


def test_lbfgs_on_a_pytree_with_extra_arguments():
    # value_fn(params, x, y): x and y reach it through update's extra keyword arguments
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    w_true = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0]], np.float32)
    y = x @ w_true + np.array([0.3, -0.7], np.float32)

    def loss(p, x, y):
        return jnp.mean((jnp.dot(x, p["w"]) + p["b"] - y) ** 2)
    opt = optim.lbfgs()
    params = {"w": jnp.zeros((3, 2)), "b": jnp.zeros(2)}
    state = opt.init(params)

    @kiln.jit
    def step(params, state, x, y):
        value, grad = optim.value_and_grad_from_state(loss)(params, x, y, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=loss, x=x, y=y)
        return optim.apply_updates(params, updates), state
    for _ in range(25):
        params, state = step(params, state, x, y)
    np.testing.assert_allclose(np.asarray(params["w"]), w_true, atol=1e-4)
    np.testing.assert_allclose(np.asarray(params["b"]), [0.3, -0.7], atol=1e-4)


def test_lbfgs_with_a_learning_rate_and_no_line_search_is_plain_preconditioning():
    # linesearch=None: update = -learning_rate * P_k g, no value_fn needed
    opt = optim.lbfgs(learning_rate=0.5, linesearch=None)
    params = jnp.asarray(X0)
    state = opt.init(params)
    g = kiln.grad(rosenbrock)(params)
    updates, state = opt.update(g, state, params)
    # the first step: P_0 = min(1, 1/|g|) I
    gn = np.asarray(g, np.float64)
    np.testing.assert_allclose(np.asarray(updates), -0.5 * min(1.0, 1.0 / np.linalg.norm(gn)) * gn, rtol=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# The two-loop recursion against the dense BFGS inverse-Hessian update
# ----------------------------------------------------------------------------------------------------------------

def _dense_lbfgs_direction(g, s_list, y_list, gamma):
    """``H g`` with ``H`` from ``gamma I`` by the BFGS update ``H <- V'HV + rho s s'`` (``V = I - rho y s'``)
    over the stored pairs, oldest first: the matrix form of what the two-loop recursion computes."""
    n = g.shape[0]
    h = gamma * np.eye(n)
    for s, y in zip(s_list, y_list):
        rho = 1.0 / (y @ s)
        v = np.eye(n) - rho * np.outer(y, s)
        h = v.T @ h @ v + rho * np.outer(s, s)
    return h @ g


@pytest.mark.parametrize("memory_size", [1, 3, 10])
@pytest.mark.parametrize("scale_init_precond", [True, False])
def test_scale_by_lbfgs_is_the_bfgs_inverse_hessian_over_the_memory(memory_size, scale_init_precond):
    rng = np.random.default_rng(memory_size)
    q = Q.astype(np.float64)
    tx = optim.scale_by_lbfgs(memory_size=memory_size, scale_init_precond=scale_init_precond)
    update = kiln.jit(tx.update)
    x = rng.standard_normal(5)
    state = tx.init(jnp.asarray(x, dtype=jnp.float32))
    xs, gs = [], []
    for k in range(7):
        x32 = x.astype(np.float32)
        g32 = (q @ x32.astype(np.float64) - B).astype(np.float32)
        xs.append(x32.astype(np.float64))
        gs.append(g32.astype(np.float64))
        out, state = update(jnp.asarray(g32), state, jnp.asarray(x32))
        s_list = [b - a for a, b in zip(xs, xs[1:])][-memory_size:]
        y_list = [b - a for a, b in zip(gs, gs[1:])][-memory_size:]
        if k == 0:
            gamma = min(1.0, 1.0 / np.linalg.norm(gs[0])) if scale_init_precond else 1.0
        else:
            gamma = (s_list[-1] @ y_list[-1]) / (y_list[-1] @ y_list[-1]) if scale_init_precond else 1.0
        want = _dense_lbfgs_direction(gs[-1], s_list, y_list, gamma)
        np.testing.assert_allclose(np.asarray(out), want, rtol=2e-4, atol=1e-5 * np.abs(want).max(),
                                   err_msg=f"step {k}")
        assert int(state.count) == k + 1
        x = x - 0.1 * np.asarray(out, np.float64) + 0.01 * rng.standard_normal(5)  # any step: H is defined by s, y


def test_scale_by_lbfgs_state_layout():
    params = {"w": jnp.zeros((2, 3)), "b": jnp.zeros(3, jnp.float16)}
    state = optim.scale_by_lbfgs(memory_size=4).init(params)
    assert type(state).__name__ == "ScaleByLBFGSState"
    assert state._fields == ("count", "params", "updates", "diff_params_memory", "diff_updates_memory",
                             "weights_memory")
    assert state.count.dtype == np.int32 and int(state.count) == 0
    assert state.diff_params_memory["w"].shape == (4, 2, 3)
    assert state.diff_updates_memory["b"].dtype == np.float16
    assert state.weights_memory.shape == (4,) and state.weights_memory.dtype == np.float32


# ----------------------------------------------------------------------------------------------------------------
# Line searches against their conditions
# ----------------------------------------------------------------------------------------------------------------

_POINTS = [np.array([-1.2, 1.0, -0.5, 0.7]), np.array([0.3, 0.2, 2.0, -1.0]), np.array([1.5, 2.0, 1.0, 1.0])]


@pytest.mark.parametrize("length", [1.0, 1e-3])  # 1e-3: the first trial (step 1) is too short, the search grows
@pytest.mark.parametrize("i", range(len(_POINTS)))
def test_zoom_linesearch_step_meets_the_strong_wolfe_conditions(i, length):
    c1, c2 = 1e-4, 0.9
    x = _POINTS[i].astype(np.float32)
    g = rosenbrock_grad_np(x).astype(np.float32)
    direction = -length * g / np.linalg.norm(g)  # steepest descent: the step 1 is rarely right
    ls = optim.scale_by_zoom_linesearch(max_linesearch_steps=30, slope_rtol=c1, curv_rtol=c2, approx_dec_rtol=None)
    state = ls.init(jnp.asarray(x))
    value, grad = kiln.value_and_grad(rosenbrock)(jnp.asarray(x))
    updates, state = ls.update(jnp.asarray(direction), state, jnp.asarray(x), value=value, grad=grad,
                               value_fn=rosenbrock)
    lr = float(state.learning_rate)
    assert lr > 0
    np.testing.assert_allclose(np.asarray(updates), lr * direction, rtol=1e-6)
    x64, d64 = x.astype(np.float64), direction.astype(np.float64)
    new = x64 + lr * d64
    slope0 = rosenbrock_grad_np(x64) @ d64
    assert slope0 < 0
    tol = 1e-5 * abs(rosenbrock_np(x64))  # float32 evaluation of the objective
    assert rosenbrock_np(new) <= rosenbrock_np(x64) + c1 * lr * slope0 + tol
    assert abs(rosenbrock_grad_np(new) @ d64) <= c2 * abs(slope0) * (1 + 1e-4)
    assert float(state.info.decrease_error) == 0.0 and float(state.info.curvature_error) == 0.0
    # the state holds the value and gradient at the new point
    np.testing.assert_allclose(float(state.value), rosenbrock_np(new), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(state.grad), rosenbrock_grad_np(new), rtol=1e-4, atol=1e-4)


def test_zoom_linesearch_respects_max_learning_rate():
    x = jnp.asarray(np.array([3.0, -2.0], np.float32))

    def f(v):
        return jnp.sum(v ** 2)
    value, grad = kiln.value_and_grad(f)(x)
    ls = optim.scale_by_zoom_linesearch(10, max_learning_rate=0.1)
    # direction -grad / 100: the best step is 50, beyond the maximum; the maximum is taken (curvature unmet)
    updates, state = ls.update(-grad / 100, ls.init(x), x, value=value, grad=grad, value_fn=f)
    assert float(state.learning_rate) == pytest.approx(0.1)
    assert float(state.info.decrease_error) == 0.0 and float(state.info.curvature_error) > 0.0


def test_zoom_linesearch_on_an_ascent_direction_keeps_finite_values():
    x = jnp.array([1.0, 2.0])

    def f(v):
        return jnp.sum(v ** 2)
    value, grad = kiln.value_and_grad(f)(x)
    ls = optim.scale_by_zoom_linesearch(5)
    updates, state = ls.update(grad, ls.init(x), x, value=value, grad=grad, value_fn=f)
    assert float(state.info.decrease_error) > 0.0  # flagged as failed
    assert np.all(np.isfinite(np.asarray(updates)))


@pytest.mark.parametrize("store_grad", [False, True])
def test_backtracking_linesearch_is_the_first_armijo_step(store_grad):
    c1, shrink, grow, max_lr = 1e-4, 0.8, 1.5, 1.0
    ls = optim.scale_by_backtracking_linesearch(max_backtracking_steps=50, slope_rtol=c1, decrease_factor=shrink,
                                                increase_factor=grow, max_learning_rate=max_lr,
                                                store_grad=store_grad)
    x = jnp.asarray(X0)
    state = ls.init(x)
    prev_lr = 1.0
    for _ in range(4):
        value, grad = kiln.value_and_grad(rosenbrock)(x)
        g = np.asarray(grad, np.float64)
        updates, state = ls.update(-grad, state, x, value=value, grad=grad, value_fn=rosenbrock)
        # NumPy: shrink min(grow * previous, max) until Armijo's condition holds
        x64 = np.asarray(x, np.float64)
        lr, k = min(grow * prev_lr, max_lr), 0
        while rosenbrock_np(x64 - lr * g) > rosenbrock_np(x64) - c1 * lr * (g @ g):
            lr, k = lr * shrink, k + 1
        np.testing.assert_allclose(float(state.learning_rate), lr, rtol=1e-5)
        assert int(state.info.num_linesearch_steps) == k + 1
        assert float(state.info.decrease_error) == 0.0
        new = np.asarray(optim.apply_updates(x, updates), np.float64)
        assert rosenbrock_np(new) <= rosenbrock_np(x64) - c1 * lr * (g @ g) + 1e-5 * rosenbrock_np(x64)
        np.testing.assert_allclose(float(state.value), rosenbrock_np(new), rtol=1e-5)
        if store_grad:
            np.testing.assert_allclose(np.asarray(state.grad), rosenbrock_grad_np(new), rtol=1e-4, atol=1e-3)
        else:
            assert state.grad is None
        x, prev_lr = optim.apply_updates(x, updates), lr


def test_backtracking_linesearch_makes_no_step_where_every_value_is_nan():
    def f(v):
        return jnp.sum(jnp.log(-v))  # nan at every trial point (v > 0)
    x = jnp.array([1.0, 2.0])
    ls = optim.scale_by_backtracking_linesearch(5)
    updates, state = ls.update(jnp.array([-1.0, -1.0]), ls.init(x), x, value=jnp.asarray(-1.0),
                               grad=jnp.array([1.0, 1.0]), value_fn=f)
    assert float(state.learning_rate) == 0.0
    np.testing.assert_array_equal(np.asarray(updates), [-0.0, -0.0])


def test_sgd_with_backtracking_matches_optaxs_documented_example():
    # optax.scale_by_backtracking_linesearch's docstring (store_grad=True, value_and_grad_from_state)
    def fn(params):
        return jnp.sum(params ** 2)
    solver = optim.chain(optim.sgd(learning_rate=1.0),
                         optim.scale_by_backtracking_linesearch(max_backtracking_steps=15, store_grad=True))
    params = jnp.array([1.0, 2.0, 3.0])
    state = solver.init(params)
    value_and_grad = optim.value_and_grad_from_state(fn)
    printed = []
    for _ in range(5):
        value, grad = value_and_grad(params, state=state)
        updates, state = solver.update(grad, state, params, value=value, grad=grad, value_fn=fn)
        params = optim.apply_updates(params, updates)
        printed.append("{:.2E}".format(float(fn(params))))
    assert printed == ["5.04E+00", "1.81E+00", "6.53E-01", "2.35E-01", "8.47E-02"]


def test_value_and_grad_from_state_reuses_the_stored_value_only_when_finite():
    def f(x):
        return jnp.sum(x ** 2)
    ls = optim.scale_by_zoom_linesearch(10)
    x = jnp.array([1.0, 2.0])
    state = ls.init(x)
    vg = optim.value_and_grad_from_state(f)
    v, g = vg(x, state=state)  # the initial state's value is inf: computed
    assert float(v) == 5.0 and np.array_equal(np.asarray(g), [2.0, 4.0])
    stored = state._replace(value=jnp.asarray(7.0), grad=jnp.array([9.0, 9.0]))
    v, g = vg(x, state=stored)
    assert float(v) == 7.0 and np.array_equal(np.asarray(g), [9.0, 9.0])
    v, g = vg(x, state=stored._replace(value=jnp.asarray(np.nan, np.float32)))
    assert float(v) == 5.0


# ----------------------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: optim.lbfgs(), lambda: optim.scale_by_zoom_linesearch(5),
                                  lambda: optim.scale_by_backtracking_linesearch(5)])
@pytest.mark.parametrize("missing", ["value", "grad", "value_fn"])
def test_missing_line_search_arguments(make, missing):
    opt = make()
    x = jnp.array([1.0, 2.0])
    kwargs = dict(value=jnp.asarray(5.0), grad=x, value_fn=lambda p: jnp.sum(p ** 2))
    del kwargs[missing]
    with pytest.raises(TypeError, match=rf"linesearch\.update: missing keyword argument\(s\) {missing}.*"
                                        r"update\(updates, state, params, value=value, grad=grad, value_fn=fn\)"):
        opt.update(x, opt.init(x), x, **kwargs)


def test_line_search_without_params():
    ls = optim.scale_by_zoom_linesearch(5)
    x = jnp.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"scale_by_zoom_linesearch\.update: needs the current params"):
        ls.update(x, ls.init(x), value=jnp.asarray(5.0), grad=x, value_fn=lambda p: jnp.sum(p ** 2))
    with pytest.raises(ValueError, match=r"scale_by_lbfgs: update needs the params"):
        optim.scale_by_lbfgs().update(x, optim.scale_by_lbfgs().init(x))


def test_unexpected_extra_arguments_name_themselves():
    ls = optim.scale_by_backtracking_linesearch(5)
    x = jnp.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['batch'\].*not parameters of value_fn"):
        ls.update(x, ls.init(x), x, value=jnp.asarray(5.0), grad=x, value_fn=lambda p: jnp.sum(p ** 2), batch=3)


def test_value_fn_must_be_callable():
    ls = optim.scale_by_zoom_linesearch(5)
    x = jnp.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"value_fn must be the objective .*got float"):
        ls.update(x, ls.init(x), x, value=jnp.asarray(5.0), grad=x, value_fn=1.0)
    with pytest.raises(TypeError, match=r"value_and_grad_from_state: value_fn must be the objective"):
        optim.value_and_grad_from_state("f")


@pytest.mark.parametrize("memory_size", [0, -1, 2.5, True])
def test_bad_memory_size(memory_size):
    with pytest.raises(ValueError, match=r"scale_by_lbfgs: memory_size must be an integer >= 1"):
        optim.scale_by_lbfgs(memory_size=memory_size)
    with pytest.raises(ValueError, match=r"memory_size must be an integer >= 1"):
        optim.lbfgs(memory_size=memory_size)


def test_bad_line_search_hyperparameters():
    with pytest.raises(ValueError, match=r"scale_by_zoom_linesearch: unknown initial_guess_strategy 'two'; use "
                                         r"'one'.*or 'keep'"):
        optim.scale_by_zoom_linesearch(5, initial_guess_strategy="two")
    with pytest.raises(ValueError, match=r"scale_by_zoom_linesearch: max_linesearch_steps must be a non-negative"):
        optim.scale_by_zoom_linesearch(-1)
    with pytest.raises(ValueError, match=r"scale_by_backtracking_linesearch: max_backtracking_steps must be"):
        optim.scale_by_backtracking_linesearch(-3)
    with pytest.raises(TypeError, match=r"lbfgs: linesearch: expected a GradientTransformation"):
        optim.lbfgs(linesearch="zoom")


def test_value_and_grad_from_state_needs_a_line_search_state():
    opt = optim.chain(optim.sgd(0.1), optim.scale_by_backtracking_linesearch(5))  # store_grad=False: grad None
    x = jnp.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"value_and_grad_from_state: no 'value' or 'grad' in the optimizer state.*"
                                         r"store_grad=True"):
        optim.value_and_grad_from_state(lambda p: jnp.sum(p ** 2))(x, state=opt.init(x))
    with pytest.raises(ValueError, match=r"no 'value' or 'grad'"):
        optim.value_and_grad_from_state(lambda p: jnp.sum(p ** 2))(x, state=optim.adam(0.1).init(x))
