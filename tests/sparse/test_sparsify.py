"""kiln.experimental.sparse.sparsify: functions written for dense arrays run on BCOO arrays with the numbers of the
dense computation (NumPy/SciPy oracles), under jit, grad and vmap, through while/scan/cond/jit, and the errors."""
import doctest
import functools

import numpy as np
import pytest
import scipy.optimize

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental import sparse
from kiln.experimental.sparse import BCOO, sparsify

RNG = np.random.default_rng(0)


def _sparse_dense(shape, dtype=np.float32, density=0.5):
    m = RNG.standard_normal(shape) * (RNG.random(shape) < density)
    if np.issubdtype(dtype, np.integer):
        m = np.round(m * 3)
    return m.astype(dtype)


def _dense(x):
    return np.asarray(x.todense() if isinstance(x, BCOO) else x)


# --- JAX's documentation examples ------------------------------------------------------------------

_DOCTEST = """
>>> M = jnp.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]])
>>> M_sp = sparse.BCOO.fromdense(M)
>>> y = jnp.array([3., 6., 5.])
>>> def f(M, v):
...     return 2 * jnp.dot(jnp.log1p(M.T), v) + 1
>>> f(M, y)
Array([17.635532,  5.158883, 17.09438 ,  7.591674], dtype=float32)
>>> f_sp = sparse.sparsify(f)
>>> f_sp(M_sp, y)
Array([17.635532,  5.158883, 17.09438 ,  7.591674], dtype=float32)
>>> @sparse.sparsify
... def g(M, v):
...     return 2 * M.T @ v
>>> g(sparse.BCOO.fromdense(jnp.arange(12).reshape(3, 4)), jnp.array([3, 4, 2]))
Array([ 64,  82, 100, 118], dtype=int32)
"""


def test_jax_docstring_examples_as_doctest():
    """The sparsify examples of JAX's module and function docstrings, with ``import kiln`` for ``import jax``."""
    globs = {"jnp": jnp, "sparse": sparse}
    test = doctest.DocTestParser().get_doctest(_DOCTEST, globs, "sparsify_examples", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_sparsify_docstring():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(sparsify, "sparsify", globs={"jnp": jnp, "BCOO": BCOO, "sparsify": sparsify}):
        runner.run(test)
    assert runner.summarize(verbose=False).attempted > 0
    assert runner.summarize(verbose=False).failed == 0


def test_log1p_example_against_numpy():
    m = np.abs(_sparse_dense((3, 4)))
    v = RNG.standard_normal(3).astype(np.float32)
    want = 2 * np.log1p(m.T) @ v + 1

    def f(M, v):
        return 2 * jnp.dot(jnp.log1p(M.T), v) + 1
    for fn in (sparsify(f), kiln.jit(sparsify(f))):
        out = fn(BCOO.fromdense(m), v)
        assert not isinstance(out, BCOO)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)


def test_sin_matvec_example():
    m = _sparse_dense((5, 5))
    vec = RNG.random(5).astype(np.float32)
    out = sparsify(lambda mat, vec: -(jnp.sin(mat) @ vec))(BCOO.fromdense(m), vec)
    np.testing.assert_allclose(np.asarray(out), -(np.sin(m) @ vec), rtol=1e-5, atol=1e-6)


# --- the rules, each against the dense computation --------------------------------------------------

def _elementwise(M):
    return {"div2": M / 2, "mul_row": M * jnp.arange(1., M.shape[-1] + 1), "neg": -M, "sum0": M.sum(0),
            "sum_all": M.sum(), "f16": M.astype(jnp.float16), "square": M ** 2, "abs": jnp.abs(M),
            "sin": jnp.sin(M), "sqrt_abs": jnp.sqrt(jnp.abs(M)), "tanh": jnp.tanh(M), "expm1": jnp.expm1(M),
            "sign": jnp.sign(M), "add_self": M + M, "sub": M - 2 * M, "add_dense": M + jnp.ones(M.shape, M.dtype),
            "dense_sub": jnp.ones(M.shape, M.dtype) - M, "plus_scalar": M + 1.0, "scalar_minus": 1 - M,
            "div_row": M / jnp.arange(1., M.shape[-1] + 1),
            "scalar_mul": 3 * M}


_SPARSE_OUT = {"div2", "mul_row", "neg", "sum0", "f16", "square", "abs", "sin", "sqrt_abs", "tanh", "expm1",
               "sign", "add_self", "sub", "div_row", "scalar_mul"}


@pytest.mark.parametrize("layout,dtype,eager", [(dict(), np.float32, True), (dict(n_batch=1), np.float32, False),
                                                (dict(n_dense=1), np.float32, False), (dict(), np.float64, False)])
def test_elementwise_and_reduction_rules(layout, dtype, eager):
    with kiln.config.override("enable_x64", dtype == np.float64):
        m = _sparse_dense((3, 4), dtype)
        want = _elementwise(jnp.asarray(m))
        fns = [sparsify(_elementwise), kiln.jit(sparsify(_elementwise))] if eager else \
            [kiln.jit(sparsify(_elementwise))]
        for got in (fn(BCOO.fromdense(m, **layout)) for fn in fns):
            for k, w in want.items():
                assert isinstance(got[k], BCOO) == (k in _SPARSE_OUT), k
                assert _dense(got[k]).dtype == np.asarray(w).dtype, k
                np.testing.assert_allclose(_dense(got[k]), np.asarray(w), rtol=1e-6, atol=1e-6, err_msg=k)


def test_integer_rules():
    m = _sparse_dense((3, 4), np.int32)
    f = sparsify(lambda M: (M * 2, -M, jnp.abs(M), M.sum(1), M.T))
    outs = f(BCOO.fromdense(m))
    for got, want in zip(outs, (m * 2, -m, np.abs(m), m.sum(1), m.T)):
        assert isinstance(got, BCOO)
        np.testing.assert_array_equal(_dense(got), want)


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((3, 4), (4, 2)), ((2, 3, 4), (4,))])
def test_dot_general_both_sides(shapes):
    ms, xs = shapes
    m = _sparse_dense(ms)
    x = RNG.standard_normal(xs).astype(np.float32)
    y = RNG.standard_normal(ms[:-1]).astype(np.float32)

    def f(M, x, y):
        return M @ x, jnp.einsum("...i,...ij->...j", y, M) if M.ndim == 3 else y @ M, jnp.tensordot(M, x, 1)
    want = f(m, x, y)
    A = BCOO.fromdense(m, n_batch=len(ms) - 2)  # dot batch dimensions must be batch dimensions of the BCOO
    for got in (sparsify(f)(A, x, y), kiln.jit(sparsify(f))(A, x, y)):
        for g, w in zip(got, want):
            assert not isinstance(g, BCOO)
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_transpose_rule():
    m = _sparse_dense((2, 3, 4))
    out = sparsify(lambda M: jnp.transpose(M, (2, 0, 1)))(BCOO.fromdense(m))
    assert isinstance(out, BCOO) and out.shape == (4, 2, 3)
    np.testing.assert_array_equal(_dense(out), m.transpose(2, 0, 1))


def _structural(M):
    return {"row": M[0], "cols": M[:, 1:3], "lead": M[None], "flat": M.reshape(-1), "cat0": jnp.concatenate([M, 2 * M]),
            "flip": M[::-1], "step": M[:, ::-2], "squeeze": jnp.squeeze(M[None]), "trail": jnp.expand_dims(M, -1),
            "part": M[1:, 2], "reshape": M.reshape(2, 6), "cat1": jnp.concatenate([M, M], 1),
            "rev1": jnp.flip(M, 1)}


@pytest.mark.parametrize("nse", [None, 10])  # 10: with padding entries, which must stay padding
def test_structural_rules(nse):
    m = _sparse_dense((3, 4))
    want = _structural(jnp.asarray(m))
    fns = [kiln.jit(sparsify(_structural))] + ([sparsify(_structural)] if nse is None else [])
    for got in (fn(BCOO.fromdense(m, nse=nse)) for fn in fns):
        for k, w in want.items():
            assert isinstance(got[k], BCOO), k
            assert got[k].shape == w.shape, k
            np.testing.assert_array_equal(_dense(got[k]), np.asarray(w), err_msg=k)


@pytest.mark.parametrize("layout", [dict(n_batch=1), dict(n_dense=1)])
def test_slice_and_rev_with_batch_and_dense_axes(layout):
    m = _sparse_dense((3, 4))

    def f(M):
        return M[1:, ::2], M[::-1, ::-1], M[:2, 1:3]
    for got, want in zip(sparsify(f)(BCOO.fromdense(m, **layout)), f(m)):
        assert isinstance(got, BCOO)
        np.testing.assert_array_equal(_dense(got), np.asarray(want))


def _indexing(M, i):
    return (M[i], M[:, i], M[-1], lax.dynamic_slice_in_dim(M, i, 2, 0), lax.dynamic_slice_in_dim(M, i + 1, 2, 1),
            M[None], M[:, None], M[..., None], M[None][:, 1:][0], jnp.squeeze(M[1:2]), M[None, :, None, :, None])


@pytest.mark.parametrize("shape,layout", [((3, 4), dict()), ((3, 4), dict(n_batch=1)), ((3, 4, 2), dict(n_dense=1)),
                                          ((3, 4, 2), dict(n_batch=1, n_dense=1))])
def test_traced_indexing_and_size_one_axes(shape, layout):
    """``M[i]`` with a traced ``i`` (dynamic_slice, clamped as XLA does) and adding/removing axes of size 1."""
    m = _sparse_dense(shape)
    A = BCOO.fromdense(m, nse=int(np.count_nonzero(m)) + 2, **layout)  # with padding entries
    fn = kiln.jit(sparsify(_indexing))
    for i in (0, 2, -1):
        for k, (got, want) in enumerate(zip(fn(A, i), _indexing(m, i))):
            assert isinstance(got, BCOO), k
            np.testing.assert_array_equal(_dense(got), np.asarray(want), err_msg=f"output {k}, i={i}")


@pytest.mark.parametrize("layout", [dict(), dict(n_batch=1), dict(n_dense=1)])
def test_broadcast_rule(layout):
    m = _sparse_dense((3, 4))
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)

    def f(M, x):
        return (jnp.broadcast_to(M, (2, 3, 4)), M * x, M[:, :1] * x[..., :1], jnp.outer(M[0], x[0, 0]),
                lax.broadcast_in_dim(M, (2, 3, 4, 2), (1, 2)))
    for got, want in zip(kiln.jit(sparsify(f))(BCOO.fromdense(m, **layout), x), f(m, x)):
        assert isinstance(got, BCOO) and got.shape == want.shape
        np.testing.assert_allclose(_dense(got), np.asarray(want), rtol=1e-6)


def _take(M, i, i2):
    return M[i], M[:, i], M[i2], M[:, i2]


@pytest.mark.parametrize("shape,layout", [((3, 4), dict()), ((3, 4), dict(n_batch=1)), ((3, 4, 2), dict(n_dense=1)),
                                          ((3, 4, 2), dict(n_batch=1, n_dense=1))])
def test_gather_rule_takes_along_one_axis(shape, layout):
    m = _sparse_dense(shape)
    i, i2 = jnp.array([2, 0, -1, 2]), jnp.array([[0, 1], [2, 2]])
    A = BCOO.fromdense(m, nse=int(np.count_nonzero(m)) + 2, **layout)
    for k, (got, want) in enumerate(zip(kiln.jit(sparsify(_take))(A, i, i2), _take(m, i, i2))):
        assert isinstance(got, BCOO), k
        np.testing.assert_array_equal(_dense(got), np.asarray(want), err_msg=f"output {k}")


def test_sparse_plus_sparse_concatenates_entries():
    a, b = _sparse_dense((3, 4)), _sparse_dense((3, 4))
    A, B = BCOO.fromdense(a), BCOO.fromdense(b)
    plus, minus = sparsify(lambda x, y: (x + y, x - y))(A, B)
    assert isinstance(plus, BCOO) and plus.nse == A.nse + B.nse  # as in JAX: no merging of duplicates
    np.testing.assert_allclose(_dense(plus), a + b, rtol=1e-6)
    np.testing.assert_allclose(_dense(minus), a - b, rtol=1e-6)
    # Same indices: the data add, the layout stays.
    same = sparsify(lambda x: x + 2 * x)(A)
    assert same.nse == A.nse
    np.testing.assert_allclose(_dense(same), 3 * a, rtol=1e-6)


def test_nonlinear_op_on_duplicate_indices_sums_them_first():
    # Two entries at (0, 1): sin(a) + sin(b) would be wrong, sin(a + b) is right.
    A = BCOO((jnp.array([0.5, 0.7, 2.0]), jnp.array([[0, 1], [0, 1], [1, 0]])), shape=(2, 2))
    out = sparsify(jnp.sin)(A)
    np.testing.assert_allclose(_dense(out), np.sin(np.array([[0., 1.2], [2., 0.]])), rtol=1e-6)
    lin = sparsify(lambda x: -x)(A)
    assert lin.nse == 3  # a linear op keeps the entries as they are
    np.testing.assert_allclose(_dense(lin), -np.array([[0., 1.2], [2., 0.]]), rtol=1e-6)


def test_pytree_arguments_and_outputs():
    m = _sparse_dense((3, 3))
    v = RNG.standard_normal(3).astype(np.float32)

    def f(d, scale=1.0):
        return {"prod": d["M"] @ d["v"] * scale, "M2": d["M"] * scale, "n": d["n"] + 1}
    out = sparsify(f)({"M": BCOO.fromdense(m), "v": v, "n": 2}, scale=2.0)
    assert isinstance(out["M2"], BCOO)
    np.testing.assert_allclose(np.asarray(out["prod"]), m @ v * 2, rtol=1e-5)
    np.testing.assert_allclose(_dense(out["M2"]), m * 2)
    assert int(out["n"]) == 3


def test_dense_arguments_only_is_the_function_itself():
    calls = []

    @sparsify
    def f(x, y):
        calls.append(1)
        return jnp.exp(x) @ y
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    y = RNG.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x, y)), np.exp(x) @ y, rtol=1e-6)
    assert f.__name__ == "f" and len(calls) == 1


def test_todense_inside_sparsify():
    m = _sparse_dense((3, 3))

    def f(M):
        return jnp.exp(sparse.todense(M)) + sparse.todense(M * 2)
    want = np.exp(m) + 2 * m
    for fn in (sparsify(f), kiln.jit(sparsify(f))):
        np.testing.assert_allclose(np.asarray(fn(BCOO.fromdense(m))), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(m)), want, rtol=1e-6)  # dense: an identity call
    np.testing.assert_allclose(np.asarray(kiln.grad(lambda x: f(x).sum())(m)), np.exp(m) + 2, rtol=1e-6)


# --- transformations of sparsified functions --------------------------------------------------------

def _loss(M, v):
    return jnp.sum(jnp.tanh(jnp.sin(M) @ v) ** 2)


def test_grad_wrt_dense_argument_and_data():
    m = _sparse_dense((4, 3))
    v = RNG.standard_normal(3).astype(np.float32)
    A = BCOO.fromdense(m)
    # Analytic: d/dv sum(tanh(u)^2) with u = sin(m) @ v is sin(m).T @ (2 tanh(u) (1 - tanh(u)^2)).
    t = np.tanh(np.sin(m) @ v)
    g_u = 2 * t * (1 - t ** 2)
    for fn in (kiln.grad(sparsify(_loss), 1), kiln.jit(kiln.grad(sparsify(_loss), 1))):
        np.testing.assert_allclose(np.asarray(fn(A, v)), np.sin(m).T @ g_u, rtol=1e-5, atol=1e-6)
    g_data = kiln.grad(lambda d: sparsify(_loss)(BCOO((d, A.indices), shape=A.shape), v))(A.data)
    rows, cols = np.asarray(A.indices).T
    np.testing.assert_allclose(np.asarray(g_data), (np.cos(m) * np.outer(g_u, v))[rows, cols], rtol=1e-5,
                               atol=1e-6)


def test_vmap_of_sparsified_function():
    m = _sparse_dense((4, 3))
    V = RNG.standard_normal((5, 3)).astype(np.float32)
    A = BCOO.fromdense(m)
    want = [float(np.sum(np.tanh(np.sin(m) @ v) ** 2)) for v in V]
    np.testing.assert_allclose(np.asarray(kiln.vmap(sparsify(_loss), (None, 0))(A, V)), want, rtol=1e-5)
    # Mapping over a batched BCOO: each example is an unbatched BCOO.
    ms = np.stack([_sparse_dense((4, 3)) for _ in range(3)])
    got = kiln.vmap(sparsify(_loss), (0, None))(BCOO.fromdense(ms, n_batch=1), V[0])
    want = [float(np.sum(np.tanh(np.sin(mm) @ V[0]) ** 2)) for mm in ms]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_control_flow_and_nested_jit_with_sparse_operands():
    m = _sparse_dense((4, 3))
    v = RNG.standard_normal(3).astype(np.float32)

    def f(M, v):
        def body(c):
            i, x = c
            return i + 1, jnp.tanh(M.T @ (M @ x))
        _, x = lax.while_loop(lambda c: c[0] < 3, body, (0, v))
        s, ys = lax.scan(lambda c, k: (c + (M @ x).sum() * k, M @ x * k), 0., jnp.arange(3.))
        z = lax.cond(s > 0, lambda M, x: M @ x, lambda M, x: -(M @ x), M, x)
        w = kiln.jit(lambda M, x: jnp.sin(M) @ x)(M, x)
        carried = lax.fori_loop(0, 2, lambda i, N: N * 0.5, M)  # a BCOO carry
        return x, s, ys, z, w, carried
    want = f(m, v)
    A = BCOO.fromdense(m)
    for got in (sparsify(f)(A, v), kiln.jit(sparsify(f))(A, v)):
        assert isinstance(got[-1], BCOO)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_dense(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_checkpoint_and_custom_jvp_bodies_with_sparse_operands_are_inlined():
    m = _sparse_dense((2, 3))
    v = RNG.standard_normal(3).astype(np.float32)

    @kiln.custom_jvp
    def h(M, v):
        return jnp.sin(M) @ v

    @h.defjvp
    def _h_jvp(primals, tangents):
        return h(*primals), jnp.zeros(2, np.float32)

    def f(M, v):
        return kiln.checkpoint(lambda M, v: jnp.tanh(M) @ v)(M, v) + h(M, v)
    np.testing.assert_allclose(np.asarray(sparsify(f)(BCOO.fromdense(m), v)), np.tanh(m) @ v + np.sin(m) @ v,
                               rtol=1e-5)
    # With a BCOO operand the custom rule is replaced by the body's derivative (a documented difference from JAX).
    g = kiln.grad(lambda v: sparsify(f)(BCOO.fromdense(m), v).sum())(v)
    np.testing.assert_allclose(np.asarray(g), np.tanh(m).sum(0) + np.sin(m).sum(0), rtol=1e-5)


def test_vmap_and_forward_derivative_through_a_loop_over_a_sparse_matrix():
    m = _sparse_dense((4, 3))
    V = RNG.standard_normal((3, 3)).astype(np.float32)

    def f(M, v):
        _, x = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.tanh(M.T @ (M @ c[1]))), (0, v))
        return lax.cond(x.sum() > 0, lambda M, x: M @ x, lambda M, x: -(M @ x), M, x)
    A = BCOO.fromdense(m)
    np.testing.assert_allclose(np.asarray(kiln.vmap(sparsify(f), (None, 0))(A, V)),
                               np.stack([np.asarray(f(m, v)) for v in V]), rtol=1e-5, atol=1e-6)
    # Three tanh iterations in float32: entries near zero carry the rounding of the large ones (atol).
    np.testing.assert_allclose(np.asarray(kiln.jacfwd(sparsify(f), 1)(A, V[0])),
                               np.asarray(kiln.jacfwd(f, 1)(m, V[0])), rtol=1e-5, atol=1e-5)


def _sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def _logreg_loss(params, X, y):
    y_hat = _sigmoid(jnp.dot(X, params[1:]) + params[0])
    return -jnp.mean(y * jnp.log(y_hat) + (1 - y) * jnp.log(1 - y_hat))


def _fit_logreg(X, y):
    params = jnp.zeros(X.shape[1] + 1)
    result = kiln.scipy.optimize.minimize(functools.partial(_logreg_loss, X=X, y=y), x0=params, method="BFGS")
    return result.x


def test_sparse_logistic_regression_matches_dense_and_scipy():
    """JAX's sparse logistic regression example: BFGS (a while loop closing over the sparse X) on sparse data."""
    rng = np.random.default_rng(1701)
    X = (rng.standard_normal((80, 5)) * (rng.random((80, 5)) < 0.4)).astype(np.float32)
    p_true = 1 / (1 + np.exp(-(X @ rng.standard_normal(5) * 0.7 + 0.2)))
    y = (rng.random(80) < p_true).astype(np.float32)  # noisy labels: a well-posed (non-separable) fit
    params_dense = np.asarray(_fit_logreg(jnp.asarray(X), y))
    params_sparse = np.asarray(sparsify(_fit_logreg)(BCOO.fromdense(X), y))
    np.testing.assert_allclose(params_sparse, params_dense, rtol=0, atol=1e-5)

    def np_loss(p):
        z = X.astype(np.float64) @ p[1:] + p[0]
        return np.mean(np.logaddexp(0, z) - y * z)

    def np_grad(p):
        r = 1 / (1 + np.exp(-(X.astype(np.float64) @ p[1:] + p[0]))) - y
        return np.concatenate([[r.mean()], X.T @ r / len(y)])
    ref = scipy.optimize.minimize(np_loss, np.zeros(6), jac=np_grad, method="BFGS").x
    np.testing.assert_allclose(params_sparse, ref, rtol=0, atol=1e-4)


# --- errors -----------------------------------------------------------------------------------------

def test_unsupported_primitive_names_it_and_suggests_todense():
    A = BCOO.fromdense(_sparse_dense((3, 4)))
    with pytest.raises(NotImplementedError, match=r"sparse rule for reduce_max is not implemented "
                                                  r".*test_sparsify.py.*sparse.todense\(x\)"):
        sparsify(lambda M: jnp.max(M, axis=0))(A)
    with pytest.raises(NotImplementedError, match=r"sparse rule for exp is not implemented because it would result "
                                                  r"in dense output.*sparse.todense\(x\)"):
        sparsify(jnp.exp)(A)
    with pytest.raises(kiln.KilnError):  # every kiln error derives from KilnError
        sparsify(jnp.cos)(A)


@pytest.mark.parametrize("layout", [dict(), dict(n_batch=1)])
def test_product_of_two_sparse_arrays(layout):
    a, b = _sparse_dense((3, 3)), _sparse_dense((3, 3))
    A, B = BCOO.fromdense(a, **layout), BCOO.fromdense(b, nse=int(np.count_nonzero(b)) + 1, **layout)
    out = kiln.jit(sparsify(lambda x, y: (x * y, x * y[::-1])))(A, B)
    assert all(isinstance(o, BCOO) for o in out)
    if not layout:  # one entry per pair of entries, as JAX's bcoo_multiply_sparse
        assert out[0].nse == A.nse * B.nse
    np.testing.assert_allclose(_dense(out[0]), a * b, rtol=1e-6)
    np.testing.assert_allclose(_dense(out[1]), a * b[::-1], rtol=1e-6)


def test_matrix_product_of_two_sparse_arrays():
    a, b = _sparse_dense((4, 3)), _sparse_dense((4, 3))
    A, B = BCOO.fromdense(a), BCOO.fromdense(b, nse=int(np.count_nonzero(b)) + 2)
    v = RNG.standard_normal(3).astype(np.float32)

    def f(M, N):
        return M.T @ N, M @ N.T, jnp.einsum("ij,ik->jk", M, N), jnp.vdot(M, N), M.T @ M @ v
    want = (a.T @ b, a @ b.T, a.T @ b, np.vdot(a, b), a.T @ a @ v)
    for fn in (sparsify(f), kiln.jit(sparsify(f))):
        got = fn(A, B)
        assert [isinstance(g, BCOO) for g in got] == [True, True, True, False, False]
        assert got[0].nse == min(A.nse * B.nse, 3 * 3)  # one per pair, at most the size: JAX's bcoo_spdot_general
        for g, w in zip(got, want):
            np.testing.assert_allclose(_dense(g), w, rtol=1e-5, atol=1e-5)
    rows, cols = np.asarray(A.indices).T
    g = kiln.grad(lambda d: sparsify(lambda M: (M.T @ M).sum())(BCOO((d, A.indices), shape=A.shape)))(A.data)
    np.testing.assert_allclose(np.asarray(g), (2 * a @ np.ones((3, 3)))[rows, cols], rtol=1e-5)


def test_batched_sparse_product_and_division_by_sparse_errors():
    a, b = _sparse_dense((3, 3)), _sparse_dense((3, 3))
    A = BCOO.fromdense(a)
    out = sparsify(lambda x, y: x @ y)(BCOO.fromdense(b, n_batch=1), A)  # bcoo_spdot_general, batch axes kept
    assert isinstance(out, BCOO) and out.n_batch == 1
    np.testing.assert_allclose(out.todense(), b @ a, rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match=r"div by a sparse array.*dense output.*todense"):
        sparsify(lambda x: 1.0 / x)(A)


def test_sparse_addition_with_other_layout_errors():
    m = _sparse_dense((2, 3))
    with pytest.raises(NotImplementedError, match=r"add of two BCOO arrays with different batch/dense dimensions "
                                                  r"\(n_batch 0 and 1"):
        sparsify(lambda x, y: x + y)(BCOO.fromdense(m), BCOO.fromdense(m, n_batch=1))


def test_structural_rule_errors():
    m = _sparse_dense((2, 3))
    with pytest.raises(NotImplementedError, match=r"reshape of a BCOO with batch or dense dimensions \(n_batch=1, "
                                                  r"n_dense=0\) is implemented only for adding or removing axes of "
                                                  r"size 1 \(got shape \(2, 3\) to \(6,\)\).*sparse.todense\(x\)"):
        sparsify(lambda x: x.reshape(-1))(BCOO.fromdense(m, n_batch=1))
    with pytest.raises(NotImplementedError, match=r"concatenate of BCOO and dense arrays.*sparse.todense\(x\)"):
        sparsify(lambda x, y: jnp.concatenate([x, y]))(BCOO.fromdense(m), m)
    with pytest.raises(NotImplementedError, match=r"concatenate is implemented along a sparse dimension.*"
                                                  r"n_dense \[1, 0\]"):
        sparsify(lambda x, y: jnp.concatenate([x, y]))(BCOO.fromdense(m, n_dense=1), BCOO.fromdense(m))


def test_broadcast_of_a_sparse_axis_errors():
    A = BCOO.fromdense(_sparse_dense((3, 1)))
    with pytest.raises(NotImplementedError, match=r"broadcast_in_dim of a BCOO of shape \(3, 1\) to \(3, 4\) "
                                                  r"\(broadcast_dimensions=\(0, 1\)\) is implemented only for new "
                                                  r"leading or trailing axes.*sparse.todense\(x\)"):
        sparsify(lambda M: lax.broadcast_in_dim(M, (3, 4), (0, 1)))(A)


def test_gather_of_several_axes_is_bcoo_gather():
    dense = _sparse_dense((3, 4))
    out = sparsify(lambda M, i: M[i, 1:])(BCOO.fromdense(dense), jnp.array([0, 2]))
    assert isinstance(out, BCOO) and out.n_batch == 1  # one slice per index, stacked (bcoo_gather's layout)
    np.testing.assert_array_equal(np.asarray(out.todense()), dense[[0, 2], 1:])


def test_scan_over_sparse_xs_errors():
    A = BCOO.fromdense(_sparse_dense((3, 3)))
    with pytest.raises(NotImplementedError, match=r"scan over a BCOO array \(a sparse xs\).*todense"):
        sparsify(lambda M: lax.scan(lambda c, row: (c + row.sum(), None), 0., M)[0])(A)


def test_sparsify_of_a_non_function_errors():
    with pytest.raises(TypeError, match="sparsify: expected a function, got int"):
        sparsify(3)
