"""kiln.optim.tree_utils, numerics, linear algebra, projections and second_order against optax on the same
inputs, where JAX and optax are installed. Results are bit-identical unless a comment says why not."""
import warnings

import numpy as np
import pytest

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
jnp_jax = pytest.importorskip("jax.numpy")

import kiln  # noqa: E402
import kiln.numpy as knp  # noqa: E402
import kiln.random as krandom  # noqa: E402
from kiln import optim  # noqa: E402
from kiln.optim import projections as kproj  # noqa: E402
from kiln.optim import second_order as kso  # noqa: E402
from kiln.optim import tree as ktree  # noqa: E402
from kiln.optim import tree_utils as ktu  # noqa: E402

RNG = np.random.default_rng(7)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


TX = {"a": _rand(3, 2), "b": (_rand(4), _rand())}
TY = {"a": _rand(3, 2), "b": (_rand(4), _rand())}
TZ = {"a": _rand(3, 2), "b": (_rand(4), _rand())}
CPLX = {"z": (_rand(3) + 1j * _rand(3)).astype(np.complex64), "r": _rand(2)}
CPLX2 = {"z": (_rand(3) + 1j * _rand(3)).astype(np.complex64), "r": _rand(2)}


def _to(lib_asarray, tree):
    return jax.tree.map(lambda x: lib_asarray(x) if isinstance(x, np.ndarray) else x, tree)


def _both(fn_k, fn_o, *args):
    """``fn_k`` on kiln arrays and ``fn_o`` on JAX arrays made from the same NumPy ``args``."""
    return fn_k(*[_to(knp.asarray, a) for a in args]), fn_o(*[_to(jnp_jax.asarray, a) for a in args])


def _assert_same(got, want):
    got_l, want_l = kiln.tree_util.tree_leaves(got), jax.tree.leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# ----------------------------------------------------------------------------------------------
# tree_utils maths
# ----------------------------------------------------------------------------------------------

OT = optax.tree_utils
MATH_CASES = [
    ("tree_add", lambda m: lambda x, y: m.tree_add(x, y), (TX, TY)),
    ("tree_add 3", lambda m: lambda x, y, z: m.tree_add(x, y, z), (TX, TY, TZ)),
    ("tree_sub", lambda m: m.tree_sub, (TX, TY)),
    ("tree_mul", lambda m: m.tree_mul, (TX, TY)),
    ("tree_div", lambda m: m.tree_div, (TX, TY)),
    ("tree_scale", lambda m: lambda x: m.tree_scale(0.3, x), (TX,)),
    ("tree_add_scale", lambda m: lambda x, y: m.tree_add_scale(x, -0.7, y), (TX, TY)),
    ("tree_vdot", lambda m: m.tree_vdot, (TX, TY)),
    ("tree_sum", lambda m: m.tree_sum, (TX,)),
    ("tree_max", lambda m: m.tree_max, (TX,)),
    ("tree_min", lambda m: m.tree_min, (TX,)),
    ("tree_conj", lambda m: m.tree_conj, (CPLX,)),
    ("tree_real", lambda m: m.tree_real, (CPLX,)),
    ("tree_norm", lambda m: m.tree_norm, (TX,)),
    ("tree_norm complex", lambda m: m.tree_norm, (CPLX,)),
    ("tree_norm squared", lambda m: lambda x: m.tree_norm(x, squared=True), (TX,)),
    ("tree_norm 1", lambda m: lambda x: m.tree_norm(x, ord=1), (TX,)),
    ("tree_norm 1 squared", lambda m: lambda x: m.tree_norm(x, ord=1, squared=True), (TX,)),
    ("tree_norm inf", lambda m: lambda x: m.tree_norm(x, ord="inf"), (TX,)),
    ("tree_norm inf complex", lambda m: lambda x: m.tree_norm(x, ord=np.inf), (CPLX,)),
    ("tree_batch_shape", lambda m: lambda x: m.tree_batch_shape(x, (2, 1)), (TX,)),
    ("tree_zeros_like", lambda m: m.tree_zeros_like, (TX,)),
    ("tree_ones_like f16", lambda m: lambda x: m.tree_ones_like(x, jnp_jax.float16), (TX,)),
    ("tree_full_like", lambda m: lambda x: m.tree_full_like(x, 3), (TX,)),
    ("tree_clip", lambda m: lambda x: m.tree_clip(x, -0.3, 0.5), (TX,)),
    ("tree_clip max only", lambda m: lambda x: m.tree_clip(x, max_value=0.1), (TX,)),
    ("tree_where", lambda m: lambda x, y: m.tree_where(m.tree_sum(x) > 0, x, y), (TX, TY)),
    ("tree_allclose", lambda m: m.tree_allclose, (TX, TX)),
    ("tree_update_moment", lambda m: lambda g, t: m.tree_update_moment(g, t, 0.9, 2), (TX, TY)),
    ("tree_update_moment order 1", lambda m: lambda g, t: m.tree_update_moment(g, t, 0.99, 1), (TX, TY)),
    ("tree_update_infinity_moment", lambda m: lambda g, t: m.tree_update_infinity_moment(g, t, 0.9, 1e-8),
     (TX, TY)),
    ("tree_update_moment_per_elem_norm", lambda m: lambda g, t: m.tree_update_moment_per_elem_norm(g, t, 0.9, 2),
     (TX, TY)),
    ("tree_update_moment_per_elem_norm complex 3",
     lambda m: lambda g, t: m.tree_update_moment_per_elem_norm(g, t, 0.9, 3), (CPLX, {"z": _rand(3), "r": _rand(2)})),
    ("tree_update_moment_per_elem_norm complex 4",
     lambda m: lambda g, t: m.tree_update_moment_per_elem_norm(g, t, 0.9, 4), (CPLX, {"z": _rand(3), "r": _rand(2)})),
    ("tree_bias_correction", lambda m: lambda t: m.tree_bias_correction(t, 0.999, 7), (TX,)),
]


@pytest.mark.parametrize("name, make, args", MATH_CASES, ids=[c[0] for c in MATH_CASES])
def test_tree_math_bit_identical(name, make, args):
    got, want = _both(make(ktu), make(OT), *args)
    _assert_same(got, want)


@pytest.mark.parametrize("name, make, args", MATH_CASES, ids=[c[0] for c in MATH_CASES])
def test_tree_math_bit_identical_under_jit(name, make, args):
    got, want = _both(kiln.jit(make(ktu)), jax.jit(make(OT)), *args)
    _assert_same(got, want)


def test_tree_vdot_complex():
    # XLA fuses JAX's conj into its complex dot and sums in another order than kiln's (and JAX's own
    # jnp.dot(jnp.conj(a), b)): kiln.numpy.vdot on complex arrays is 1 ulp off JAX's; real leaves match exactly
    got, want = _both(ktu.tree_vdot, OT.tree_vdot, CPLX, CPLX2)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_tree_sum_associative_reduction():
    many = {f"k{i}": _rand(3) for i in range(7)}
    got, want = _both(lambda t: ktu.tree_sum(t, True), lambda t: OT.tree_sum(t, True), many)
    _assert_same(got, want)


def test_python_scalar_leaves_and_none():
    # weak types: optax's results on Python scalars keep JAX's weak typing
    got, want = _both(ktu.tree_add, OT.tree_add, {"a": 1.0, "b": None}, {"a": 2.0, "b": None})
    assert got["b"] is None and want["b"] is None
    np.testing.assert_array_equal(got["a"], want["a"])
    got, want = _both(ktu.tree_vdot, OT.tree_vdot, [1.0, 2.0], [3.0, 4.0])
    _assert_same(got, want)
    assert ktu.tree_size(TX) == OT.tree_size(TX)
    _assert_same(ktu.tree_max({}), OT.tree_max({}))


def test_short_names_match_optax():
    for name in ktree.__all__:
        optax_fn = getattr(optax.tree, name)
        long = optax_fn.__name__ if hasattr(optax_fn, "__name__") else optax_fn.__wrapped__.__name__
        assert getattr(ktree, name) is getattr(ktu, long), name
    assert set(ktree.__all__) == {n for n in dir(optax.tree) if not n.startswith("_")}
    optax_names = {n for n in dir(OT) if not n.startswith("_") and n not in ("functools", "typing")}
    assert optax_names | set(OT._deprecations) == set(ktu.__all__)


@pytest.mark.parametrize("name, ord_", [("tree_l1_norm", 1), ("tree_l2_norm", 2), ("tree_linf_norm", "inf")])
def test_deprecated_norm_names(name, ord_):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        optax_fn = getattr(OT, name)
    got, want = _both(getattr(ktu, name), optax_fn, TX)
    _assert_same(got, want)


# ----------------------------------------------------------------------------------------------
# Casting, random trees
# ----------------------------------------------------------------------------------------------

def test_casting():
    got, want = _both(lambda t: ktu.tree_cast(t, knp.bfloat16), lambda t: OT.tree_cast(t, jnp_jax.bfloat16), TX)
    _assert_same(got, want)
    other = {"a": _rand(3, 2).astype(np.float16), "b": (np.arange(4, dtype=np.int32), 1.0)}
    got, want = _both(ktu.tree_cast_like, OT.tree_cast_like, TX, other)
    _assert_same(got, want)
    mixed = {"h": _rand(2).astype(np.float16), "f": _rand(2), "i": np.arange(2, dtype=np.int32)}
    for handler in ("promote", "highest", "lowest"):
        got, want = _both(lambda t: ktu.tree_dtype(t, handler), lambda t: OT.tree_dtype(t, handler), mixed)
        assert np.dtype(got) == np.dtype(want), handler
    assert np.dtype(ktu.tree_dtype({})) == np.dtype(OT.tree_dtype({}))
    ints = [np.int32(1), np.uint32(1)]
    for handler in ("promote", "highest", "lowest"):
        assert np.dtype(ktu.tree_dtype(ints, handler)) == np.dtype(OT.tree_dtype(ints, handler)), handler


@pytest.mark.parametrize("typed", [True, False])
def test_random_trees_bit_identical(typed):
    kkey = krandom.key(11) if typed else krandom.PRNGKey(11)
    jkey = jax.random.key(11) if typed else jax.random.PRNGKey(11)
    kt, jt = _to(knp.asarray, TX), _to(jnp_jax.asarray, TX)
    _assert_same(ktu.tree_unwrap_random_key_data(ktu.tree_split_key_like(kkey, kt)),
                 OT.tree_unwrap_random_key_data(OT.tree_split_key_like(jkey, jt)))
    _assert_same(ktu.tree_random_like(kkey, kt), OT.tree_random_like(jkey, jt))
    _assert_same(ktu.tree_random_like(kkey, kt, krandom.uniform, knp.float16),
                 OT.tree_random_like(jkey, jt, jax.random.uniform, jnp_jax.float16))


# ----------------------------------------------------------------------------------------------
# Optimizer-state look-ups on the same optimizers
# ----------------------------------------------------------------------------------------------

def _states():
    params = {"w": np.ones(3, np.float32), "b": np.zeros(2, np.float32)}

    def make(lib, asarray):
        opt = lib.chain(lib.add_decayed_weights(0.1), lib.inject_hyperparams(lib.adam)(learning_rate=0.1))
        return opt, opt.init(_to(asarray, params))
    return make(optim, knp.asarray), make(optax, jnp_jax.asarray)


@pytest.mark.parametrize("key", ["count", "learning_rate", "mu", "ScaleByAdamState", "InjectHyperparamsState"])
def test_tree_get_all_with_path_same_paths(key):
    (_, ks), (_, js) = _states()
    got = ktu.tree_get_all_with_path(ks, key)
    want = OT.tree_get_all_with_path(js, key)
    assert [kiln.tree_util.keystr(p) for p, _ in got] == [jax.tree_util.keystr(p) for p, _ in want]
    for (_, g), (_, w) in zip(got, want):
        _assert_same(g, w)


def test_tree_get_and_set_same_results():
    (_, ks), (_, js) = _states()

    def only_adam(path, _):
        return isinstance(path[-1], (ktu.NamedTupleKey, OT.NamedTupleKey)) and path[-1].tuple_name == "ScaleByAdamState"
    _assert_same(ktu.tree_get(ks, "count", filtering=only_adam), OT.tree_get(js, "count", filtering=only_adam))
    _assert_same(ktu.tree_get(ks, "learning_rate"), OT.tree_get(js, "learning_rate"))
    _assert_same(ktu.tree_set(ks, learning_rate=knp.asarray(0.5)),
                 OT.tree_set(js, learning_rate=jnp_jax.asarray(0.5)))
    _assert_same(ktu.tree_set(ks, only_adam, count=knp.asarray(3)),
                 OT.tree_set(js, only_adam, count=jnp_jax.asarray(3)))
    with pytest.raises(KeyError):
        OT.tree_get(js, "count")
    with pytest.raises(KeyError, match="found 2 values for 'count'"):
        ktu.tree_get(ks, "count")


def test_tree_map_params_same_results():
    (kopt, ks), (jopt, js) = _states()
    got = ktu.tree_map_params(kopt, lambda p: p + 2.0, ks, transform_non_params=lambda v: v * 0)
    want = OT.tree_map_params(jopt, lambda p: p + 2.0, js, transform_non_params=lambda v: v * 0)
    _assert_same(got, want)


# ----------------------------------------------------------------------------------------------
# Numerics, linear algebra
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, dtype", [(5, np.int32), (2 ** 31 - 1, np.int32), (255, np.uint8), (1.5, np.float32)])
def test_safe_increment(value, dtype):
    got, want = _both(optim.safe_increment, optax.safe_increment, np.asarray(value, dtype))
    _assert_same(got, want)


@pytest.mark.parametrize("ord_, axis, keepdims",
                         [(None, None, False), (1, 0, False), (2, 1, True), (np.inf, None, True)])
def test_safe_norm(ord_, axis, keepdims):
    x = _rand(3, 4)
    for floor in (0.0, 1e3):
        got, want = _both(lambda v: optim.safe_norm(v, floor, ord_, axis, keepdims),
                          lambda v: optax.safe_norm(v, floor, ord_, axis, keepdims), x)
        _assert_same(got, want)
    got, want = _both(kiln.grad(lambda v: optim.safe_norm(v, 1e-3, ord_, axis).sum()),
                      jax.grad(lambda v: optax.safe_norm(v, 1e-3, ord_, axis).sum()), x)
    _assert_same(got, want)


def test_safe_root_mean_squares():
    for x in (_rand(5), CPLX["z"], np.zeros(3, np.float32)):
        got, want = _both(lambda v: optim.safe_root_mean_squares(v, 1e-2),
                          lambda v: optax.safe_root_mean_squares(v, 1e-2), x)
        _assert_same(got, want)


def test_multi_normal():
    loc, log_scale = _rand(2, 3), 0.3 * _rand(3)
    kd = optim.multi_normal(knp.asarray(loc), knp.asarray(log_scale))
    jd = optax.multi_normal(jnp_jax.asarray(loc), jnp_jax.asarray(log_scale))
    ks, js = kd.sample((4,), krandom.PRNGKey(2)), jd.sample((4,), jax.random.PRNGKey(2))
    _assert_same(ks, js)
    # logpdf's log(2 pi) term and its order of operations are kiln.scipy's and jax.scipy's: 1 ulp apart
    np.testing.assert_allclose(np.asarray(kd.log_prob(ks)), np.asarray(jd.log_prob(js)), rtol=1e-6)


def _psd(n):
    b = _rand(n, n)
    return (b @ b.T).astype(np.float32)


def test_power_iteration():
    m = _psd(6)
    _assert_same(*_both(optim.power_iteration, optax.power_iteration, m))
    _assert_same(*_both(lambda a: optim.power_iteration(a, key=krandom.PRNGKey(4), num_iters=7),
                        lambda a: optax.power_iteration(a, key=jax.random.PRNGKey(4), num_iters=7), m))
    v0 = {"x": _rand(6)}
    _assert_same(*_both(lambda a, v: optim.power_iteration(lambda t: {"x": a @ t["x"]}, v0=v),
                        lambda a, v: optax.power_iteration(lambda t: {"x": a @ t["x"]}, v0=v), m, v0))


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_matrix_inverse_pth_root(p):
    m = _psd(5)
    _assert_same(*_both(lambda a: optim.matrix_inverse_pth_root(a, p),
                        lambda a: optax.matrix_inverse_pth_root(a, p), m))


@pytest.mark.parametrize("b_shape", [(6,), (6, 2)])
def test_nnls(b_shape):
    a, b = _rand(6, 4), _rand(*b_shape)
    _assert_same(*_both(lambda a, b: optim.nnls(a, b, 300), lambda a, b: optax.nnls(a, b, 300), a, b))
    _assert_same(*_both(lambda a, b: optim.nnls(a, b, 50, unroll=4, L=30.0),
                        lambda a, b: optax.nnls(a, b, 50, unroll=4, L=30.0), a, b))


# ----------------------------------------------------------------------------------------------
# Projections, second order
# ----------------------------------------------------------------------------------------------

P = optax.projections
PX = {"a": 2 * _rand(4), "b": (2 * _rand(3),)}
PA = {"a": _rand(4), "b": (_rand(3),)}
PROJ_CASES = [
    ("projection_non_negative", (PX,), ()),
    ("projection_box", (PX, {"a": -0.5, "b": (0.0,)}, {"a": 0.5, "b": (1.0,)}), ()),
    ("projection_hypercube", (PX["a"],), (0.6,)),
    ("projection_simplex", (PX,), (1.5,)),
    ("projection_l1_sphere", (PX,), (1.0,)),
    ("projection_l1_ball", (PX,), (1.0,)),
    ("projection_l1_ball inside", (PX,), (1e3,)),
    ("projection_l2_sphere", (PX,), (0.5,)),
    ("projection_l2_ball", (PX,), (0.5,)),
    ("projection_l2_ball inside", (PX,), (1e3,)),
    ("projection_linf_ball", (PX,), (0.4,)),
    ("projection_vector", (PX, PA), ()),
    ("projection_hyperplane", (PX, PA), (0.3,)),
    ("projection_halfspace", (PX, PA), (-2.0,)),
    ("projection_halfspace inside", (PX, PA), (1e3,)),
]


@pytest.mark.filterwarnings("ignore::kiln.errors.RetraceWarning")  # one jitted closure per case, on purpose
@pytest.mark.parametrize("name, arrays, extra", PROJ_CASES, ids=[c[0] for c in PROJ_CASES])
def test_projections(name, arrays, extra):
    fname = name.split()[0]
    kf, of = getattr(kproj, fname), getattr(P, fname)
    _assert_same(*_both(lambda *a: kf(*a, *extra), lambda *a: of(*a, *extra), *arrays))
    _assert_same(*_both(kiln.jit(lambda *a: kf(*a, *extra)), jax.jit(lambda *a: of(*a, *extra)), *arrays))
    # with the scalar settings traced too, each compiler fuses the scalar arithmetic its own way (JAX's
    # compiled simplex projection then differs from JAX's eager one by an ulp): compared with a tolerance
    got, want = _both(kiln.jit(kf), jax.jit(of), *arrays, *[np.float32(e) for e in extra])
    for g, w in zip(kiln.tree_util.tree_leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-7)


def test_simplex_jacobian():
    _assert_same(*_both(kiln.jacobian(kproj.projection_simplex), jax.jacobian(P.projection_simplex), PX["a"]))


def _loss(np_):
    def loss(p, x, y):
        return np_.mean(np_.tanh(x @ p["w"] + p["b"]) ** 2 - y * (x @ p["w"]))
    return loss


SO_ARGS = ({"w": _rand(3, 2), "b": _rand(2)}, _rand(4, 3), _rand(4, 2))


@pytest.fixture
def optax_second_order():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # optax deprecates these (removal in 0.2.9)
        yield optax.second_order


def test_hvp_and_fisher(optax_second_order):
    v = _rand(8)
    _assert_same(*_both(lambda v, *a: kso.hvp(_loss(knp), v, *a),
                        lambda v, *a: optax_second_order.hvp(_loss(jnp_jax), v, *a), v, *SO_ARGS))
    _assert_same(*_both(lambda *a: kso.fisher_diag(_loss(knp), *a),
                        lambda *a: optax_second_order.fisher_diag(_loss(jnp_jax), *a), *SO_ARGS))


def test_hessian_diag(optax_second_order):
    got, want = _both(lambda *a: kso.hessian_diag(_loss(knp), *a),
                      lambda *a: optax_second_order.hessian_diag(_loss(jnp_jax), *a), *SO_ARGS)
    # JAX's vmap turns the per-vector HVPs into batched matmuls that sum in another order (JAX's own
    # unbatched HVPs differ from its vmapped ones by an ulp); kiln's vmap keeps the unbatched sums
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)
    rows = [jnp_jax.vdot(e, jax.flatten_util.ravel_pytree(optax_second_order.hvp(
        _loss(jnp_jax), e, *_to(jnp_jax.asarray, SO_ARGS)))[0]) for e in jnp_jax.eye(8)]
    # (to an ulp or two: XLA's CPU dot kernels, chosen by the host's instruction set, may round the unbatched
    # sums differently in kiln's program and JAX's; 1 ulp apart on an AMD EPYC without AVX-512)
    np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(rows), maxulp=2)
