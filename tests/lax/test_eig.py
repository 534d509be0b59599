"""Nonsymmetric eigenproblems (issue 14): kiln.lax.linalg.eig / schur (LAPACK geev / gees on the CPU),
kiln.numpy.linalg.eig / eigvals, kiln.numpy.roots and poly of a matrix; against NumPy (sorted
eigenvalues, the eigen-equations rather than eigenvector phases), every LAPACK dtype, batched, eager and
jit, grad against finite differences, vmap against a loop, and the error paths (CPU-only, LAPACK off)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax, lowering, runtime

LA = lax.linalg
RNG = np.random.default_rng(14)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]

pytestmark = pytest.mark.backend("cpu")  # eig and schur are LAPACK (CPU) only, as JAX


@pytest.fixture(autouse=True)
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _complex(dtype):
    return np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128


def _sorted(w):
    w = np.asarray(w)
    return np.sort_complex(np.round(w.astype(np.complex128), 6)) if w.ndim == 1 else np.stack([_sorted(r) for r in w])


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _check_eig(a, w, vl, vr, dtype):
    tol = _tol(dtype)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(_sorted(w), _sorted(np.linalg.eigvals(a.astype(_complex(dtype)))), rtol=tol * 10,
                               atol=tol * 10 * scale)
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=tol * 10 * scale)        # a vr = vr diag(w)
    np.testing.assert_allclose(_mH(vl) @ a, w[..., :, None] * _mH(vl), atol=tol * 10 * scale)  # vl^H a = diag(w) vl^H
    for v in (vl, vr):  # LAPACK's normalisation: unit columns, largest component real
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=tol * 10)
        big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
        np.testing.assert_allclose(big.imag, 0, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_against_numpy_batched_eager_and_jit(dtype):
    a = _rand((2, 3, 5, 5), dtype)
    eager = LA.eig(a)
    jitted = kiln.jit(lambda a: LA.eig(a))(a)
    assert isinstance(eager, list) and len(eager) == 3
    for w, vl, vr in (eager, jitted):
        assert w.dtype == _complex(dtype) and vl.dtype == _complex(dtype) and w.shape == (2, 3, 5)
        _check_eig(a, np.asarray(w), np.asarray(vl), np.asarray(vr), dtype)
    # the compute_* flags choose the outputs: [w], [w, vl], [w, vr]
    w_only = LA.eig(a[0, 0], compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    assert len(w_only) == 1
    np.testing.assert_allclose(np.asarray(w_only[0]), np.asarray(eager[0])[0, 0], rtol=_tol(dtype))
    w, v = LA.eig(a[0, 0], compute_left_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(v), np.asarray(eager[2])[0, 0], rtol=_tol(dtype), atol=_tol(dtype))
    w, v = LA.eig(a[0, 0], compute_right_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(v), np.asarray(eager[1])[0, 0], rtol=_tol(dtype), atol=_tol(dtype))


def test_eig_implementation_and_edge_cases():
    a = _rand((3, 3), np.float64)
    w = LA.eig(a, implementation=LA.EigImplementation.LAPACK, compute_left_eigenvectors=False,
               compute_right_eigenvectors=False)[0]
    np.testing.assert_allclose(_sorted(w), _sorted(np.linalg.eigvals(a)), rtol=1e-10)
    with pytest.raises(ValueError, match=r"eig: implementation=EigImplementation.MAGMA is not available in kiln"):
        LA.eig(a, implementation=LA.EigImplementation.MAGMA)
    with pytest.raises(ValueError, match=r"implementation=EigImplementation.CUSOLVER is not available"):
        LA.eig(a, implementation=LA.EigImplementation.CUSOLVER)
    with pytest.raises(TypeError, match=r"eig: implementation must be None or a kiln.lax.linalg.EigImplementation"):
        LA.eig(a, implementation="lapack")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LA.eig(a, use_magma=False)
    assert any(issubclass(c.category, DeprecationWarning) and "use_magma" in str(c.message) for c in caught)
    with pytest.raises(ValueError, match="MAGMA is not available"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LA.eig(a, use_magma=True)
    # empty and 1x1 matrices
    w, vl, vr = LA.eig(np.zeros((2, 0, 0)))
    assert w.shape == (2, 0) and vr.shape == (2, 0, 0) and w.dtype == np.complex128
    w, vl, vr = LA.eig(np.array([[3.0]]))
    np.testing.assert_allclose(np.asarray(w), [3.0])
    np.testing.assert_allclose(np.asarray(vr), [[1.0]])
    # a defective matrix and a nilpotent one still give the (repeated) eigenvalues
    np.testing.assert_allclose(np.asarray(LA.eig(np.array([[2.0, 1.0], [0.0, 2.0]]))[0]), [2, 2])


def test_eig_and_schur_shape_and_dtype_errors():
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.lax.linalg.eig: its operand must be square in its last "
                                                    r"two dimensions, got shape \(3, 4\)"):
        LA.eig(np.ones((3, 4)))
    with pytest.raises(kiln.MatrixShapeError, match=r"lax.linalg.eig: its operand must have at least 2 dimensions"):
        LA.eig(np.ones(3))
    with pytest.raises(TypeError, match=r"kiln.lax.linalg.eig: its operand must be float32, float64, complex64 or "
                                        r"complex128, got int32"):
        LA.eig(np.ones((2, 2), np.int32))  # lax does not promote, as JAX
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.lax.linalg.schur: its operand must be square"):
        LA.schur(np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"lax.linalg.schur: its operand must be float32"):
        LA.schur(np.ones((2, 2), np.int32))
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.numpy.linalg.eig: the last two dimensions of a must be "
                                                    r"square, got shape \(2, 3\)"):
        knp.linalg.eig(np.ones((2, 3)))
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.numpy.linalg.eigvals: a must be at least two-dim"):
        knp.linalg.eigvals(np.ones(3))
    with pytest.raises(NotImplementedError, match=r"schur: sort_eig_vals=True .* is not supported"):
        LA.schur(np.eye(2), sort_eig_vals=True, select_callable=lambda w: w.real > 0)
    with pytest.raises(TypeError, match=r"schur: select_callable must be None or a callable"):
        LA.schur(np.eye(2), select_callable=3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_schur_reconstructs_and_is_quasi_triangular(dtype):
    a = _rand((3, 5, 5), dtype)
    t, q = kiln.jit(LA.schur)(a)
    t_only = LA.schur(a, compute_schur_vectors=False)
    t, q, t_only = np.asarray(t), np.asarray(q), np.asarray(t_only)
    assert t.dtype == dtype and q.dtype == dtype
    tol = _tol(dtype) * 10
    np.testing.assert_allclose(q @ t @ _mH(q), a, atol=tol)
    np.testing.assert_allclose(_mH(q) @ q, np.broadcast_to(np.eye(5), q.shape), atol=tol)
    np.testing.assert_allclose(t_only, t, atol=tol)
    below = np.tril(t, -2 if np.dtype(dtype).kind == "f" else -1)
    assert np.all(below == 0)
    if np.dtype(dtype).kind == "f":  # 2x2 blocks only: no two consecutive subdiagonal entries
        sub = np.diagonal(t, -1, -2, -1)
        assert not np.any((sub[..., 1:] != 0) & (sub[..., :-1] != 0))
    np.testing.assert_allclose(_sorted(np.linalg.eigvals(t)), _sorted(np.linalg.eigvals(a)), atol=tol * 10)


def test_numpy_eig_and_eigvals():
    a = _rand((2, 4, 4), np.float32)
    res = knp.linalg.eig(a)
    assert isinstance(res, knp.linalg.EigResult) and res.eigenvalues.dtype == np.complex64
    w, v = np.asarray(res.eigenvalues), np.asarray(res.eigenvectors)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-4)
    np.testing.assert_allclose(_sorted(w), _sorted(np.linalg.eigvals(a)), atol=1e-4)
    np.testing.assert_allclose(np.asarray(kiln.jit(knp.linalg.eigvals)(a)), w, atol=1e-5)
    # integers promote to the default float (as JAX): float64 under x64, float32 without
    ints = np.array([[1, 2], [3, 4]])
    assert knp.linalg.eigvals(ints).dtype == np.complex128
    with kiln.config.override("enable_x64", False):
        assert knp.linalg.eigvals(ints).dtype == np.complex64
    np.testing.assert_allclose(_sorted(knp.linalg.eigvals(ints)), _sorted(np.linalg.eigvals(ints)), rtol=1e-12)
    # a real matrix with complex eigenvalues (a rotation)
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    np.testing.assert_allclose(_sorted(knp.linalg.eigvals(rot)), [-1j, 1j], atol=1e-12)


def test_grad_of_eigenvalues_matches_finite_differences():
    a = _rand((4, 4), np.float64)

    def f(a):
        w = knp.linalg.eigvals(a)
        return knp.sum(knp.abs(w) ** 2) + knp.sum(knp.real(w) ** 3)

    g = np.asarray(kiln.jit(kiln.grad(f))(a))
    fj = kiln.jit(f)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd[i] = (float(fj(a + e)) - float(fj(a - e))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    # jvp of the eigenvalues: first-order perturbation theory, dw_j = (V^-1 da V)_jj
    da = _rand((4, 4), np.float64)
    (w,), (dw,) = kiln.jvp(lambda a: LA.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False),
                           (a,), (da,))
    w_np, v_np = np.linalg.eig(a)
    order = [int(np.argmin(np.abs(w_np - x))) for x in np.asarray(w)]
    expected = np.diag(np.linalg.solve(v_np, da @ v_np))[order]
    np.testing.assert_allclose(np.asarray(dw), expected, rtol=1e-8, atol=1e-10)


def test_grad_of_eigenvectors_opt_in():
    a = _rand((4, 4), np.float64)
    weights = np.arange(16.0).reshape(4, 4)

    def f(a, left):
        w, v = LA.eig(a, compute_left_eigenvectors=left, compute_right_eigenvectors=not left,
                      enable_eigvec_derivs=True)
        return knp.sum(knp.real(v) ** 2 * weights) + knp.sum(knp.imag(v) * weights) + knp.sum(knp.imag(w) ** 2)

    fj = kiln.jit(f, static_argnums=1)
    eps = 1e-6
    for left in (False, True):
        g = np.asarray(kiln.jit(kiln.grad(f), static_argnums=1)(a, left))
        fd = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[i] = eps
            fd[i] = (float(fj(a + e, left)) - float(fj(a - e, left))) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match=r"eig: derivatives of nonsymmetric eigenvectors .* pass "
                                                  r"enable_eigvec_derivs=True"):
        kiln.grad(lambda a: knp.real(knp.sum(knp.linalg.eig(a).eigenvectors)))(a)


def test_grad_of_eigenvalues_of_a_complex_matrix():
    a = _rand((3, 3), np.complex128)

    def f(a):
        return knp.sum(knp.abs(knp.linalg.eigvals(a)) ** 2)

    g = np.asarray(kiln.grad(f)(a))
    fj = kiln.jit(f)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros(a.shape)
        e[i] = eps
        dx = float(fj(a + e)) - float(fj(a - e))
        dy = float(fj(a + 1j * e)) - float(fj(a - 1j * e))
        fd[i] = (dx - 1j * dy) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)  # kiln's (JAX's) convention: df/dx - i df/dy


def test_vmap_matches_a_loop():
    a = _rand((3, 4, 4), np.float64)
    batched = kiln.jit(kiln.vmap(lambda x: LA.eig(x)))(a)
    batched_schur = kiln.jit(kiln.vmap(LA.schur, in_axes=1, out_axes=1))(np.swapaxes(a, 0, 1))
    single, single_schur = kiln.jit(LA.eig), kiln.jit(LA.schur)
    for i in range(3):
        for b, s in zip(batched, single(a[i])):
            np.testing.assert_allclose(np.asarray(b)[i], np.asarray(s), rtol=1e-12, atol=1e-12)
        for b, s in zip(batched_schur, single_schur(a[i])):
            np.testing.assert_allclose(np.asarray(b)[:, i], np.asarray(s), rtol=1e-12, atol=1e-12)


def test_roots_against_numpy():
    cases = [np.array([1.0, -6.0, 11.0, -6.0]), np.array([0.0, 0.0, 2.0, 0.0, -8.0]), np.array([1.0, 0.0, 1.0]),
             np.array([3.0, 2.0, 0.0, 0.0]), np.array([5.0])]
    for p in cases:
        r = knp.roots(p)
        assert r.dtype == np.complex128
        np.testing.assert_allclose(_sorted(r), _sorted(np.roots(p).astype(np.complex128)), atol=1e-7)
    np.testing.assert_allclose(_sorted(knp.roots(np.array([1, -3, 2]))), [1, 2], atol=1e-12)  # ints promote
    assert knp.roots(np.array([1.0, 2.0], np.float32)).dtype == np.complex64
    assert knp.roots(np.zeros(4)).shape == (0,)
    # strip_zeros=False: static length, NaN for the roots lost to leading zeros; works under jit
    f = kiln.jit(lambda p: knp.roots(p, strip_zeros=False))
    r = np.asarray(f(np.array([0.0, 0.0, 1.0, -3.0, 2.0])))
    assert r.shape == (4,) and np.isnan(r[2:]).all()
    np.testing.assert_allclose(_sorted(r[:2]), [1, 2], atol=1e-12)
    np.testing.assert_allclose(_sorted(f(np.array([1.0, -3.0, 2.0, 0.0, 0.0]))), [0, 0, 1, 2], atol=1e-7)
    assert np.isnan(np.asarray(f(np.zeros(5)))).all()
    with pytest.raises(kiln.ConcretizationTypeError, match=r"kiln.numpy.roots: strip_zeros=True needs concrete "
                                                           r"coefficients .* pass strip_zeros=False"):
        kiln.jit(knp.roots)(np.ones(3))
    with pytest.raises(ValueError, match=r"kiln.numpy.roots: the coefficients must be a 1-D array, got shape"):
        knp.roots(np.ones((2, 2)))


def test_poly_of_a_matrix_is_its_characteristic_polynomial():
    m = np.array([[2.0, 1.0, 5.0], [3.0, 4.0, 7.0], [1.0, 3.0, 5.0]])
    c = knp.poly(m)
    assert c.dtype == np.complex128  # as JAX: from the (complex) eigenvalues
    np.testing.assert_allclose(np.asarray(c), np.poly(m), atol=1e-10)


def test_lapack_off_and_other_backends_raise_a_clear_error():
    a = np.eye(3)
    with kiln.config.override("cpu_lapack", False):
        with pytest.raises(lowering.LoweringError, match=r"kiln.lax.linalg.eig: needs LAPACK on the CPU .* turn them "
                                                         r"on with kiln.config.update\('cpu_lapack', True\)"):
            kiln.jit(lambda x: knp.linalg.eigvals(x))(a)
        with pytest.raises(lowering.LoweringError, match=r"kiln.lax.linalg.schur: needs LAPACK on the CPU"):
            kiln.jit(LA.schur)(a)
    for f in (lambda x: knp.linalg.eig(x), lambda x: LA.schur(x)):
        closed = kiln.make_ir(f)(a.astype(np.float32))
        with pytest.raises(lowering.LoweringError, match=r"needs LAPACK on the CPU .* compiled for 'cuda'.*"
                                                         r"kiln.device_put\(x, kiln.devices\('cpu'\)\[0\]\), or .* "
                                                         r"kiln.jit\(f, backend='cpu'\)"):
            lowering.lower(closed.ir, context=runtime.mlir_context(), platform="cuda")
    # the advice works: a function compiled for the CPU runs there
    np.testing.assert_allclose(np.asarray(kiln.jit(knp.linalg.eigvals, backend="cpu")(a)), [1, 1, 1])


def test_eager_cache_follows_cpu_lapack():
    """An eager eig compiled with LAPACK is not reused after cpu_lapack is turned off (the flag is part of the
    eager cache's key), and turning it back on reuses it."""
    a = np.array([[2.0, 1.0], [0.5, 3.0]], np.float32)
    w = LA.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]
    np.testing.assert_allclose(np.sort(np.asarray(w).real), np.sort(np.linalg.eigvals(a).real), rtol=1e-5)
    with kiln.config.override("cpu_lapack", False):
        with pytest.raises(lowering.LoweringError, match="needs LAPACK on the CPU"):
            LA.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    LA.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
