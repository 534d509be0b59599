"""JAX documentation pages run under ``import kiln as jax`` (imports changed only): the custom-interpreter
notebook's ``examine_jaxpr``/``inverse`` cells, complex-differentiation.md, buffer_donation.md,
async_dispatch.rst, JEP 4008 (custom_vjp without nondiff_argnums), JEP 2026 (custom_jvp/custom_vjp), JEP 9407
(the jnp promotion table) and JEP 263 (the PRNG design's split/dropout patterns). Expected values come from
NumPy or from the math; the fixes these pages exposed have their regression tests here."""
from __future__ import annotations

import warnings
from functools import partial, wraps

import numpy as np
import pytest

import kiln as jax
import kiln.numpy as jnp
from kiln import grad, jit, jvp, lax, random, vjp, vmap
from kiln.extend import core

# -- docs/notebooks/Writing_custom_interpreters_in_Jax.md --------------------------------------------------------


def test_examine_jaxpr_reads_jaxs_field_names():
    def bar(w, b, x):
        return jnp.dot(w, x) + b + jnp.ones(5), x

    jaxpr = jax.make_jaxpr(bar)(jnp.ones((5, 10)), jnp.ones(5), jnp.ones(10)).jaxpr
    assert [str(v.aval) for v in jaxpr.invars] == ["float32[5,10]", "float32[5]", "float32[10]"]
    assert len(jaxpr.outvars) == 2 and jaxpr.outvars[1] is jaxpr.invars[2] and jaxpr.constvars == []
    assert [str(e.primitive) for e in jaxpr.eqns] == ["dot_general", "add", "broadcast_in_dim", "add"]
    assert jaxpr.eqns[0].params["dimension_numbers"] == (((1,), (0,)), ((), ()))
    assert jaxpr.eqns[2].params["shape"] == (5,)
    lit = jax.make_jaxpr(lambda x: x + 1)(5).jaxpr.eqns[0].invars[1]
    assert type(lit) is core.Literal and lit.val == 1


def _safe_map(f, *xs):  # jax._src.util.safe_map is JAX-internal: the notebook's use of it, spelled out
    assert len({len(x) for x in xs}) == 1
    return list(map(f, *xs))


_inverse_registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}


def _inverse_jaxpr(jaxpr, consts, *args):
    env = {}

    def read(var):
        return var.val if type(var) is core.Literal else env[var]

    def write(var, val):
        env[var] = val
    _safe_map(write, jaxpr.outvars, args)
    _safe_map(write, jaxpr.constvars, consts)
    for eqn in jaxpr.eqns[::-1]:
        invals = _safe_map(read, eqn.outvars)
        if eqn.primitive not in _inverse_registry:
            raise NotImplementedError(f"{eqn.primitive} does not have registered inverse.")
        _safe_map(write, eqn.invars, [_inverse_registry[eqn.primitive](*invals)])
    return _safe_map(read, jaxpr.invars)


def _inverse(fun):
    @wraps(fun)
    def wrapped(*args, **kwargs):
        closed_jaxpr = jax.make_jaxpr(fun)(*args, **kwargs)
        return _inverse_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.literals, *args)[0]
    return wrapped


def test_notebooks_inverse_with_literals_and_its_error():
    def f(x):
        return jnp.exp(jnp.tanh(x))
    assert jnp.allclose(_inverse(f)(f(1.0)), 1.0)
    assert jax.make_jaxpr(f)(jnp.ones(5)).literals == []
    with pytest.raises(NotImplementedError, match="sin does not have registered inverse"):
        _inverse(jnp.sin)(0.5)


# -- docs/complex-differentiation.md -----------------------------------------------------------------------------

def _coefficients(seed):
    key = random.key(seed)
    key, subkey = random.split(key)
    a, b, c, d = random.uniform(subkey, (4,))
    key, subkey = random.split(key)
    x, y = random.uniform(subkey, (2,))
    key, subkey = random.split(key)
    return (a, b, c, d), (x, y), random.uniform(subkey, (2,))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complex_jvp_and_vjp_checks(seed):
    (a, b, c, d), (x, y), (p, q) = _coefficients(seed)

    def fun(z):
        x, y = jnp.real(z), jnp.imag(z)
        return (a * x + b * y) + (c * x + d * y) * 1j
    z = x + y * 1j
    # JVP: [1 i] J [p q]^T with J = [[a b] [c d]]
    _, ans = jvp(fun, (z,), (p + q * 1j,))
    np.testing.assert_allclose(ans, (a * p + b * q) + (c * p + d * q) * 1j, rtol=1e-5)
    # VJP: [p -q] J [1 -i]^T
    _, pullback = vjp(fun, z)
    ans, = pullback(jnp.array(p + q * 1j))
    np.testing.assert_allclose(ans, (p * a - q * c) - (p * b - q * d) * 1j, rtol=1e-5, atol=1e-6)


def test_complex_grads_of_the_page():
    z = 3. + 4j
    np.testing.assert_allclose(grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(z), 6. - 8j)
    np.testing.assert_allclose(grad(jnp.sin, holomorphic=True)(z), np.cos(z), rtol=1e-5)
    np.testing.assert_allclose(grad(jnp.conjugate, holomorphic=True)(z), 1.0)


def test_grad_through_complex_cholesky_against_finite_differences():
    a = np.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

    def f(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L)) ** 2)
    got = grad(f, holomorphic=True)(jnp.array(a, jnp.complex64))

    def real_f(m):  # the function in float64 NumPy (the input symmetrized, as cholesky reads it)
        L = np.linalg.cholesky((m + m.conj().T) / 2)
        return np.sum((L - np.sin(L)) ** 2).real
    # grad of a C -> C function with holomorphic=True: d Re f / dx - i d Re f / dy, per entry
    want = np.zeros_like(a)
    h = 1e-6
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        dx = (real_f(a + e) - real_f(a - e)) / (2 * h)
        dy = (real_f(a + 1j * e) - real_f(a - 1j * e)) / (2 * h)
        want[idx] = dx - 1j * dy
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


# -- docs/buffer_donation.md, docs/async_dispatch.rst ------------------------------------------------------------

def _add(x, y):
    return x + y


def test_buffer_donation_page():
    x = jax.device_put(np.ones((2, 3)))
    y = jax.device_put(np.ones((2, 3)))
    z = jax.jit(_add, donate_argnums=(1,))(x, y)
    np.testing.assert_array_equal(z, np.full((2, 3), 2.0))
    assert y.is_deleted() and not x.is_deleted()
    with pytest.raises(RuntimeError, match="argument x refers to a deleted array: it was donated"):
        y + 1

    xs = [jax.device_put(np.ones((2, 3))), jax.device_put(np.ones((3, 4)))]
    out = jax.jit(lambda xs: [v + 1 for v in xs], donate_argnums=0)(xs)
    assert all(v.is_deleted() for v in xs) and [o.shape for o in out] == [(2, 3), (3, 4)]

    x = jax.device_put(np.ones((2, 3)))
    for y in (jax.device_put(np.ones((2, 3))), jax.device_put(np.ones((1, 3)))):
        donate = (0, 1) if y.shape == x.shape else (1,)
        with pytest.warns(UserWarning, match=rf"Some donated buffers were not usable: y f32\[{y.shape[0]},3\]"):
            jax.jit(_add, donate_argnums=donate)(jax.device_put(np.ones((2, 3))), y)
        assert not y.is_deleted()  # (an unusable donation leaves the array alone)


def test_pmap_donation_deletes_the_donated_inputs():
    """A pmap's input is re-laid out over the pmap's mesh on the way in: the donated original is deleted as JAX
    deletes it (kiln kept it alive, so donating freed nothing)."""
    params, state = jax.device_put(np.ones((1, 3))), jax.device_put(np.ones((1, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new_params = jax.pmap(lambda p, s: p * 2, donate_argnums=(0, 1))(params, state)
    np.testing.assert_array_equal(new_params, np.full((1, 3), 2.0))
    assert params.is_deleted() and not state.is_deleted()  # (no output can take state's buffer)
    with pytest.raises(RuntimeError, match="deleted array"):
        jnp.sum(params)


def test_async_dispatch_page():
    x = random.uniform(random.key(0), (1000, 1000))
    r = jnp.dot(x, x) + 3.
    assert r.shape == (1000, 1000) and r.dtype == np.float32  # known before the value is
    host = np.asarray(x, np.float64)
    np.testing.assert_allclose(np.asarray(r), host @ host + 3., rtol=1e-4)
    y = jnp.dot(x, x)
    assert y.block_until_ready() is y and y.is_ready()


# -- docs/jep/4008-custom-vjp-update.md, docs/jep/2026-custom-derivatives.md -----------------------------------

@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _clip_gradient_old(lo, hi, x):
    return x


_clip_gradient_old.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (jnp.clip(g, lo, hi),))


@jax.custom_vjp
def _clip_gradient(lo, hi, x):
    return x


def _clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


_clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)), _clip_gradient_bwd)


def test_clip_gradient_old_and_new_ways():
    assert grad(lambda x: 3.0 * _clip_gradient_old(-1.0, 1.0, x))(2.0) == 1.0
    with pytest.raises(jax.errors.UnexpectedTracerError, match=r"argument 0 \(in nondiff_argnums\) is a traced"):
        grad(lambda lo, x: 3.0 * _clip_gradient_old(lo, 1.0, x))(-1.0, 2.0)
    # the new way takes traced bounds under every transformation
    d_lo, d_x = grad(lambda lo, x: 3.0 * _clip_gradient(lo, 1.0, x), argnums=(0, 1))(-1.0, 2.0)
    assert (float(d_lo), float(d_x)) == (0.0, 1.0)
    assert jit(grad(lambda x, lo: 3.0 * _clip_gradient(lo, 1.0, x)))(2.0, -0.5) == 1.0
    got = vmap(grad(lambda x, lo: 3.0 * _clip_gradient(lo, 1.0, x)))(jnp.array([2.0, -2.0]), jnp.array([-0.5, -2.]))
    np.testing.assert_array_equal(got, [1.0, 1.0])


def test_skip_app_takes_a_function_in_nondiff_argnums():
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def skip_app(f, x):
        return f(x)
    skip_app.defvjp(lambda f, x: (skip_app(f, x), None), lambda f, _, g: (g,))
    assert grad(lambda x: skip_app(jnp.sin, x))(1.0) == 1.0
    np.testing.assert_array_equal(jit(vmap(grad(lambda x: skip_app(jnp.sin, x))))(jnp.arange(3.)), np.ones(3))


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_custom_function_closing_over_a_differentiated_value_with_constant_arguments_raises(kind):
    """JEP 4008: differentiating a custom function with respect to a value it closes over is an error. Called
    with constant arguments, kiln leaked the closed-over tracer into the rule (an UnexpectedTracerError about a
    value 'stored in a global') instead of saying so."""
    def g(x):
        if kind == "custom_jvp":
            h = jax.custom_jvp(lambda y: x * y)
            h.defjvp(lambda p, t: (h(p[0]), t[0]))
        else:
            h = jax.custom_vjp(lambda y: x * y)
            h.defvjp(lambda y: (h(y), None), lambda r, ct: (ct,))
        return h(2.0)
    with pytest.raises(jax.CustomDerivativeError, match=rf"kiln.{kind} function <lambda> closes over a value that "
                                                        r"is being differentiated \(f32\[\]\).*as an argument"):
        grad(g)(3.0)
    np.testing.assert_array_equal(vmap(g)(jnp.arange(3.)), [0., 2., 4.])  # not differentiated: fine
    assert jit(g)(3.0) == 6.0


def test_jep_2026_custom_jvp_and_custom_vjp_of_sin():
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    def f_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return f(x), jnp.cos(x) * t
    f.defjvp(f_jvp)

    @jax.custom_vjp
    def f2(x):
        return jnp.sin(x)
    f2.defvjp(lambda x: (f2(x), jnp.cos(x)), lambda cos_x, g: (cos_x * g,))

    xs = np.arange(4.0, dtype=np.float32)
    for fun in (f, f2):
        np.testing.assert_allclose(vmap(fun)(xs), np.stack([fun(x) for x in xs]), rtol=1e-6)
        np.testing.assert_allclose(vmap(grad(fun))(xs), np.cos(xs), rtol=1e-6)
        np.testing.assert_allclose(jit(grad(fun))(1.0), np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(jvp(f, (1.0,), (2.0,))[1], 2 * np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(grad(grad(f))(1.0), -np.sin(1.0), rtol=1e-6)
    with pytest.raises(TypeError, match="forward-mode differentiation .* of the custom_vjp function f2"):
        jvp(f2, (1.0,), (2.0,))


# -- docs/jep/9407-type-promotion.md ------------------------------------------------------------------------------

# The JEP's final lattice (its last lattice cell), with bool below the weak int as in JAX's type promotion page.
_LATTICE = {
    "b": ["i*"], "i*": ["u8", "i8"], "f*": ["c*", "f16", "bf16"], "c*": ["c64"],
    "u8": ["u16", "i16"], "u16": ["u32", "i32"], "u32": ["u64", "i64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f16": ["f32"], "bf16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"], "c64": ["c128"], "c128": []}


def _upper(node):
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += _LATTICE[n]
    return seen


def _join(a, b):
    common = _upper(a) & _upper(b)
    return next(n for n in common if _upper(n) >= common)


def test_jnp_promotion_table_is_the_lattice_join():
    """The JEP's jnp.add table (x64 on): every pair of dtypes and Python scalar types."""
    codes = {"b": jnp.bool_, "u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "u64": jnp.uint64,
             "i8": jnp.int8, "i16": jnp.int16, "i32": jnp.int32, "i64": jnp.int64, "bf16": jnp.bfloat16,
             "f16": jnp.float16, "f32": jnp.float32, "f64": jnp.float64, "c64": jnp.complex64,
             "c128": jnp.complex128, "i*": int, "f*": float, "c*": complex}
    names = {np.dtype(v): k for k, v in codes.items() if k[-1] != "*"}

    def zero(t):
        return t(0) if t in (int, float, complex) else jnp.zeros((), dtype=t)

    def code(out):
        if out.weak_type:
            return out.dtype.kind + "*"
        return names[out.dtype]

    # The whole table abstractly (eval_shape: the promotion a call makes, without compiling 324 programs), and the
    # rows of f32 and of a Python int by eager calls, which must promote alike.
    with jax.enable_x64(True):
        got = {(a, b): code(jax.eval_shape(jnp.add, zero(ta), zero(tb))) for a, ta in codes.items()
               for b, tb in codes.items()}
        eager = {(a, b): code(jnp.add(zero(codes[a]), zero(tb))) for a in ("f32", "i*") for b, tb in codes.items()}
    want = {(a, b): _join(a, b) for a in codes for b in codes}
    want[("b", "b")] = "b"  # (bool + bool stays bool: the lattice's bottom)
    assert {k: v for k, v in got.items() if v != want[k]} == {}
    assert {k: v for k, v in eager.items() if v != want[k]} == {}


@pytest.mark.parametrize("dtype, scalar, part", [(np.int32, 1.5, "fraction"), (np.uint8, 2.0, "fraction"),
                                                 (np.float32, 1j, "imaginary part")])
def test_lax_refuses_a_python_scalar_of_a_higher_kind(dtype, scalar, part):
    """The JEP's lax table: lax does not promote. kiln's lax gave a Python scalar the array's dtype even where
    that dropped part of it (lax.add(int32, 1.5) was 1) or failed inside NumPy (a complex scalar with a float
    array); it raises a TypeError that says what to do, as JAX raises one."""
    x = jnp.zeros(3, dtype)
    with pytest.raises(TypeError, match=rf"kiln.lax.add: the Python {type(scalar).__name__} {scalar!r} cannot take "
                                        rf"the dtype {np.dtype(dtype).name} .*drop its {part}.*Use kiln.numpy"):
        lax.add(x, scalar)
    with pytest.raises(TypeError, match=r"kiln.lax.select: the Python"):
        lax.select(jnp.ones(3, bool), x, scalar)
    # a scalar of the array's kind or lower still takes its dtype (JAX is stricter: see README)
    assert lax.add(jnp.zeros(3, jnp.float16), 1).dtype == jnp.float16
    assert lax.mul(jnp.ones(2, jnp.bfloat16), 1.5).dtype == jnp.bfloat16
    assert lax.add(jnp.zeros(2, jnp.complex64), 1.0).dtype == jnp.complex64


# -- docs/jep/263-prng.md -----------------------------------------------------------------------------------------

def _dropout(rate):
    def apply_fun(rng, params, inputs):
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)
    return apply_fun


def test_jep_263_split_keys_in_serial_and_parallel_layers():
    rng = random.key(0)
    rngs = random.split(rng, 3)
    outs = [_dropout(0.5)(r, (), jnp.ones(10_000)) for r in rngs]
    for out in outs:
        values = np.unique(np.asarray(out))
        assert set(values) <= {0.0, 2.0} and abs(float(jnp.mean(out == 2.0)) - 0.5) < 0.03
    assert not np.array_equal(outs[0], outs[1])  # split keys draw independent streams
    np.testing.assert_array_equal(_dropout(0.5)(rngs[0], (), jnp.ones(10_000)), outs[0])  # and reproducible
    # a loop that splits its key each step, as the JEP's training loop
    key, seen = random.key(1), set()
    for _ in range(3):
        key, sub = random.split(key)
        seen.add(float(random.uniform(sub)))
    assert len(seen) == 3
