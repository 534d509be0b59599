"""JAX's docs page docs/complex-differentiation.md ("Complex numbers and differentiation": the JVP and VJP of a
C -> C function through its R^2 -> R^2 twin, grad of C -> R functions, holomorphic=True, the Cholesky example),
ported to kiln by changing imports (tests/examples/jax_ported/docs_complex_differentiation.py), checked against
oracles that do not involve JAX: the page's own definitions evaluated in float64 NumPy with central differences.
With J the 2x2 Jacobian of g(x, y) = (u, v), by central differences:

- JVP of f at z along c + di: [1 i] J [c d]^T;
- VJP of f at z of the cotangent c + di: [c -d] J [1 -i]^T;
- grad(f)(z) of a C -> R function, and grad(f, holomorphic=True)(z) of any C -> C function: that VJP with
  cotangent 1, d_x Re f - i d_y Re f ("the Jacobian of the function where we just discard the imaginary part");
  for a holomorphic f this is f'(z), the complex central difference (f(z + h) - f(z - h)) / 2h.

The JVP and VJP checks draw their coefficients from kiln.random: the oracle makes the same draws with a NumPy
Threefry (threefry_oracle.py), evaluates the page's u and v in float64, and the test records what kiln's jvp and vjp
return inside the page's `check` (the page's functions look `jvp` and `vjp` up at call time; the test wraps them).
Note the page's `check`: it draws the tangent (cotangent) into `c, d`, the names of v's coefficients, and u and v
read them when called: v(x, y) is then (tangent c) x + (tangent d) y. The oracle does as the page does. The page's
upshots are checked too: the error without holomorphic=True, descent along the conjugate of grad for a C -> R loss,
a real function with complex (FFT) internals, and a non-holomorphic function's full Jacobian from two JVPs.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import threefry_oracle
from ported import fd_jacobian, load

import kiln
import kiln.numpy as jnp

H = 1e-6


@pytest.fixture(scope="module")
def page():
    return load("docs_complex_differentiation")


def _run(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


# ---------------------------------------------- the page's definitions, in float64 ---------------------------------

def _jacobian(fun, z) -> np.ndarray:
    """The 2x2 Jacobian of g(x, y) = (Re f, Im f) at z = x + yi, by central differences (fun: C -> C, NumPy)."""
    def g(xy):
        w = fun(xy[0] + 1j * xy[1])
        return np.array([np.real(w), np.imag(w)])
    return fd_jacobian(g, np.array([np.real(z), np.imag(z)]), h=H)


def _jvp(fun, z, t) -> complex:
    """The page's JVP: [1 i] J [c d]^T."""
    return complex(np.array([1, 1j]) @ _jacobian(fun, z) @ np.array([np.real(t), np.imag(t)]))


def _vjp(fun, z, ct) -> complex:
    """The page's VJP: [c -d] J [1 -i]^T."""
    return complex(np.array([np.real(ct), -np.imag(ct)]) @ _jacobian(fun, z) @ np.array([1, -1j]))


def _holomorphic_grad(fun, z) -> complex:
    """grad(f, holomorphic=True)(z) and grad of C -> R: the VJP with cotangent 1."""
    return _vjp(fun, z, 1.0)


def test_definitions_on_known_functions():
    """The oracle, checked on known functions: for the holomorphic z**2 (J the scale-and-rotate of f'(z) = 2z) the
    JVP is f'(z) t and the page's VJP [c -d] J [1 -i]^T works out to (c + di) f'(z), no conjugate; conj's Jacobian is
    diag(1, -1); the VJP of cotangent 1 of sin is cos."""
    z, t = 1.5 - 0.5j, 0.25 + 2j
    np.testing.assert_allclose(_jvp(lambda w: w ** 2, z, t), 2 * z * t, rtol=1e-8)
    np.testing.assert_allclose(_vjp(lambda w: w ** 2, z, t), t * 2 * z, rtol=1e-8)
    np.testing.assert_allclose(_jacobian(np.conj, z), [[1, 0], [0, -1]], atol=1e-8)
    np.testing.assert_allclose(_holomorphic_grad(np.sin, z), np.cos(z), rtol=1e-8)


# ---------------------------------------------- the JVP and VJP checks ---------------------------------------------

def _draws(seed):
    """The page's check: key(seed) -> split: 4 coefficients; split: the point; split: the (co)tangent."""
    key = np.array([0, seed], np.uint32)  # random.key(seed) for a seed below 2**32
    key, sub = threefry_oracle.split(key)
    a, b, c, d = threefry_oracle.uniform(sub, 4).astype(np.float64)
    key, sub = threefry_oracle.split(key)
    x, y = threefry_oracle.uniform(sub, 2).astype(np.float64)
    key, sub = threefry_oracle.split(key)
    tc, td = threefry_oracle.uniform(sub, 2).astype(np.float64)
    return (a, b, c, d), x + 1j * y, tc + 1j * td


def _fun_as_the_page_runs_it(a, b, tc, td):
    """u uses (a, b); v reads c, d when called, after the page has rebound them to the tangent's parts."""
    return lambda z: (a * z.real + b * z.imag) + (tc * z.real + td * z.imag) * 1j


def test_jvp_check(page, monkeypatch):
    calls = []

    def recording_jvp(fun, primals, tangents):
        out = kiln.jvp(fun, primals, tangents)
        calls.append((primals[0], tangents[0], out))
        return out
    monkeypatch.setattr(page, "jvp", recording_jvp)
    res, out = _run(page.check_jvp_block)
    assert res is None and out == "True\nTrue\nTrue\n"
    assert len(calls) == 3
    for seed, (z, z_dot, (primal_out, ans)) in enumerate(calls):
        (a, b, _, _), z_np, t_np = _draws(seed)
        np.testing.assert_allclose(complex(z), z_np, rtol=1e-6)
        np.testing.assert_allclose(complex(z_dot), t_np, rtol=1e-6)
        fun = _fun_as_the_page_runs_it(a, b, t_np.real, t_np.imag)
        assert ans.dtype == np.complex64 and ans.shape == ()
        np.testing.assert_allclose(complex(primal_out), fun(z_np), rtol=1e-5)
        np.testing.assert_allclose(complex(ans), _jvp(fun, z_np, t_np), rtol=1e-5, atol=1e-6)


def test_vjp_check(page, monkeypatch):
    calls = []

    def recording_vjp(fun, z):
        out, pullback = kiln.vjp(fun, z)

        def recorded(ct):
            res = pullback(ct)
            calls.append((z, ct, res[0]))
            return res
        return out, recorded
    monkeypatch.setattr(page, "vjp", recording_vjp)
    res, out = _run(page.check_vjp_block)
    assert res is None and out == ""  # the VJP check asserts instead of printing
    assert len(calls) == 3
    for seed, (z, z_bar, ans) in enumerate(calls):
        (a, b, _, _), z_np, ct_np = _draws(seed)
        np.testing.assert_allclose(complex(z), z_np, rtol=1e-6)
        np.testing.assert_allclose(complex(z_bar), ct_np, rtol=1e-6)
        fun = _fun_as_the_page_runs_it(a, b, ct_np.real, ct_np.imag)
        assert ans.dtype == np.complex64 and ans.shape == ()
        np.testing.assert_allclose(complex(ans), _vjp(fun, z_np, ct_np), rtol=1e-5, atol=1e-6)


def test_the_checks_catch_a_wrong_rule(page, monkeypatch):
    """The page's checks are not vacuous: a jvp that conjugates its answer prints False; a vjp that does, fails the
    assert."""
    monkeypatch.setattr(page, "jvp", lambda f, p, t: (lambda o: (o[0], jnp.conj(o[1])))(kiln.jvp(f, p, t)))
    assert _run(page.check_jvp, 1)[1] == "False\n"

    def conj_vjp(f, z):
        out, pullback = kiln.vjp(f, z)
        return out, lambda ct: (jnp.conj(pullback(ct)[0]),)
    monkeypatch.setattr(page, "vjp", conj_vjp)
    with pytest.raises(AssertionError):
        page.check(1)


# ---------------------------------------------- grad and holomorphic=True -----------------------------------------

def test_grad_of_a_real_valued_function(page):
    g = page.grad_real_output_block()
    assert (g.dtype, g.shape) == (np.complex64, ())
    want = _holomorphic_grad(lambda z: z.real ** 2 + z.imag ** 2, 3 + 4j)
    np.testing.assert_allclose(complex(g), want, rtol=1e-6)
    assert complex(g) == 6 - 8j


def test_grad_of_a_holomorphic_function(page):
    g = page.grad_holomorphic_block()
    assert (g.dtype, g.shape) == (np.complex64, ())
    z = 3 + 4j
    np.testing.assert_allclose(complex(g), _holomorphic_grad(np.sin, z), rtol=1e-5)
    # holomorphic: the Jacobian is a scale-and-rotate (Cauchy-Riemann), and the number is f'(z)
    J = _jacobian(np.sin, z)
    np.testing.assert_allclose([J[0, 0], J[0, 1]], [J[1, 1], -J[1, 0]], rtol=1e-7)
    np.testing.assert_allclose(complex(g), (np.sin(z + H) - np.sin(z - H)) / (2 * H), rtol=1e-5)


def test_holomorphic_true_on_a_function_that_is_not(page):
    g = page.grad_not_holomorphic_block()
    assert (g.dtype, g.shape) == (np.complex64, ())
    # the Jacobian of Re conj(z) = x: 1, not the full Jacobian diag(1, -1)
    np.testing.assert_allclose(complex(g), _holomorphic_grad(np.conj, 3 + 4j), atol=1e-7)
    assert complex(g) == 1


def test_grad_of_a_complex_output_needs_holomorphic():
    """"JAX will raise an error when jax.grad is used for a complex-output function", and holomorphic=True wants
    complex inputs."""
    with pytest.raises(TypeError) as info:
        kiln.grad(jnp.sin)(3.0 + 4j)
    assert "complex64" in str(info.value) and "holomorphic=True" in str(info.value)
    with pytest.raises(TypeError, match="holomorphic=True requires complex inputs, got float32"):
        kiln.grad(jnp.sin, holomorphic=True)(3.0)


def test_cholesky_of_a_complex_matrix(page):
    g = page.cholesky_block()
    assert (g.dtype, g.shape) == (np.complex64, (3, 3))
    A = np.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

    def f(X):  # jnp.linalg.cholesky reads (X + X^H) / 2 (symmetrize_input=True, its default), as NumPy here
        L = np.linalg.cholesky((X + X.conj().T) / 2)
        return np.sum((L - np.sin(L)) ** 2)
    want = np.zeros_like(A)
    for idx in np.ndindex(A.shape):  # entry by entry: the VJP of cotangent 1, d_x Re f - i d_y Re f
        e = np.zeros_like(A)
        e[idx] = 1
        want[idx] = _holomorphic_grad(lambda w, e=e: f(A + (w - A[idx]) * e), A[idx])
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-4, atol=2e-4)


# ---------------------------------------------- the page's upshots -------------------------------------------------

def test_descend_along_the_conjugate_of_grad():
    """"optimize f: C -> R ... by taking steps in the direction of the conjugate of grad(f)(x)"."""
    def f(z):
        return jnp.real(z) ** 2 + jnp.imag(z) ** 2
    z = jnp.complex64(3 + 4j)
    g = kiln.grad(f)(z)
    # the conjugate of grad is the real gradient (d_x f, d_y f), by central differences
    fd = fd_jacobian(lambda xy: xy[0] ** 2 + xy[1] ** 2, np.array([3.0, 4.0]))
    np.testing.assert_allclose([np.conj(complex(g)).real, np.conj(complex(g)).imag], fd, rtol=1e-6)
    assert float(f(z - 0.1 * jnp.conj(g))) < float(f(z)) < float(f(z - 0.1 * g))


def test_real_function_with_complex_internals():
    """"an R -> R function that just happens to use some complex-valued operations internally (... FFTs used in
    convolutions)": grad gives what the real implementation's derivative is."""
    k = np.array([0.5, -1.0, 2.0, 0.25])

    def f(x):  # circular convolution with k through FFTs
        return jnp.sum(jnp.real(jnp.fft.ifft(jnp.fft.fft(x) * jnp.fft.fft(jnp.asarray(k, np.float32)))) ** 2)

    def f_real(x):  # the same, real arithmetic only
        conv = np.array([sum(x[j] * k[(i - j) % 4] for j in range(4)) for i in range(4)])
        return np.sum(conv ** 2)
    x = np.array([1.0, -2.0, 0.5, 3.0])
    g = kiln.grad(f)(jnp.asarray(x, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), fd_jacobian(f_real, x), rtol=1e-5, atol=1e-5)


def test_full_jacobian_of_a_non_holomorphic_function_from_jvps():
    """"if we wanted to compute the full Jacobian matrix of a non-holomorphic C -> C function, we can do it with
    JVPs": the JVPs along 1 and i are its columns."""
    def f(z):
        return jnp.conj(z) * jnp.abs(z)

    def f_np(z):
        return np.conj(z) * np.abs(z)
    z = 1.0 - 2.0j
    cols = [complex(kiln.jvp(f, (jnp.complex64(z),), (jnp.complex64(t),))[1]) for t in (1, 1j)]
    J = np.array([[c.real for c in cols], [c.imag for c in cols]])
    np.testing.assert_allclose(J, _jacobian(f_np, z), rtol=1e-5, atol=1e-6)
