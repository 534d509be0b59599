"""kiln.numpy.linalg and kiln.lax.linalg against NumPy: values, batching, eager and jit, both
implementations (LAPACK custom calls on CPU, the portable StableHLO loops elsewhere), errors.

Decompositions are checked up to their sign/phase conventions: reconstruction (``Q @ R == A``,
``U @ diag(S) @ Vh == A``, ``A @ v == v * w``) and orthogonality, plus the invariant parts
(eigenvalues, singular values, R's absolute values) against NumPy. Compilations are grouped (one
jitted function computes many results) to keep the suite fast.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kiln.frontend.driver import dispatch

import kiln
import kiln.numpy as jnp
from kiln import lax, lowering, runtime

LA = jnp.linalg
RNG = np.random.default_rng(0)


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-5) if np.dtype(dtype) in (np.float32, np.complex64) else \
        dict(rtol=1e-10, atol=1e-11)


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _spd(shape, dtype):
    """Hermitian positive-definite matrices (well conditioned)."""
    a = _rand(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _x64(dtype):
    return kiln.config.override("enable_x64", np.dtype(dtype) in (np.float64, np.complex128))


def _np(x):
    return np.asarray(x)


def _check_qr(a, q, r, mode, tol):
    m, n = a.shape[-2:]
    k = min(m, n)
    kq = m if mode == "complete" else k
    assert q.shape == a.shape[:-2] + (m, kq) and r.shape == a.shape[:-2] + (kq, n)
    np.testing.assert_allclose(q @ r, a, **tol)
    np.testing.assert_allclose(_mH(q) @ q, np.broadcast_to(np.eye(kq), q.shape[:-2] + (kq, kq)), **tol)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a, mode=mode)[1]), **tol)


def _check_eigh(a, w, v, tol):
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **tol)
    scale = np.abs(a).max()
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=tol["rtol"], atol=tol["rtol"] * scale)
    n = a.shape[-1]
    np.testing.assert_allclose(_mH(v) @ v, np.broadcast_to(np.eye(n), v.shape), **tol)


def _check_svd(a, u, s, vh, full_matrices, tol):
    m, n = a.shape[-2:]
    k = min(m, n)
    ku, kv = (m, n) if full_matrices else (k, k)
    assert u.shape == a.shape[:-2] + (m, ku) and vh.shape == a.shape[:-2] + (kv, n)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **tol)
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, **tol)
    np.testing.assert_allclose(_mH(u) @ u, np.broadcast_to(np.eye(ku), u.shape[:-2] + (ku, ku)), **tol)
    np.testing.assert_allclose(vh @ _mH(vh), np.broadcast_to(np.eye(kv), vh.shape[:-2] + (kv, kv)), **tol)


def _first_column(b):
    """One vector (1-D) from a stack of matrices: NumPy 2 broadcasts it against the stack of ``a``."""
    return b[(0,) * (b.ndim - 2) + (slice(None), 0)]


def _decompositions(a, spd, b):
    """Everything at once (one compilation under jit)."""
    lu, piv, perm = lax.linalg.lu(a)
    q, r = LA.qr(a)
    qc, rc = LA.qr(a, mode="complete")
    w, v = LA.eigh(spd)
    u, s, vh = LA.svd(a)
    ur, sr, vhr = LA.svd(a, full_matrices=False)
    return dict(lu=lu, piv=piv, perm=perm, q=q, r=r, qc=qc, rc=rc, chol=LA.cholesky(spd),
                cholu=LA.cholesky(spd, upper=True), w=w, v=v, u=u, s=s, vh=vh, ur=ur, sr=sr, vhr=vhr,
                sv=LA.svd(a, compute_uv=False), det=LA.det(spd), slogdet=tuple(LA.slogdet(spd)), inv=LA.inv(spd),
                solve=LA.solve(spd, b), solve_vec=LA.solve(spd, _first_column(b)))


def _check_decompositions(a, spd, b, out):
    tol = _tol(a.dtype)
    m, n = a.shape[-2:]
    lu, piv, perm = out["lu"], out["piv"], out["perm"]
    k = min(m, n)
    assert piv.dtype == np.int32 and piv.shape == a.shape[:-2] + (k,)
    assert perm.dtype == np.int32 and perm.shape == a.shape[:-2] + (m,)
    lower = np.tril(lu, -1)[..., :, :k] + np.eye(m, k)
    upper = np.triu(lu)[..., :k, :]
    np.testing.assert_allclose(lower @ upper, np.take_along_axis(a, perm[..., None], -2), **tol)
    _check_qr(a, out["q"], out["r"], "reduced", tol)
    _check_qr(a, out["qc"], out["rc"], "complete", tol)
    np.testing.assert_allclose(out["chol"], np.linalg.cholesky(spd), **tol)
    np.testing.assert_allclose(out["cholu"], _mH(np.linalg.cholesky(spd)), **tol)
    _check_eigh(spd, out["w"], out["v"], tol)
    _check_svd(a, out["u"], out["s"], out["vh"], True, tol)
    _check_svd(a, out["ur"], out["sr"], out["vhr"], False, tol)
    np.testing.assert_allclose(out["sv"], np.linalg.svd(a, compute_uv=False), **tol)
    np.testing.assert_allclose(out["det"], np.linalg.det(spd), rtol=tol["rtol"] * 10)
    sign, logdet = np.linalg.slogdet(spd)
    np.testing.assert_allclose(out["slogdet"][0], sign, **tol)
    np.testing.assert_allclose(out["slogdet"][1], logdet, **tol)
    np.testing.assert_allclose(out["inv"], np.linalg.inv(spd), **tol)
    np.testing.assert_allclose(out["solve"], np.linalg.solve(spd, b), **tol)
    np.testing.assert_allclose(out["solve_vec"], np.linalg.solve(spd, _first_column(b)), **tol)
    for key, value in out.items():
        if key not in ("piv", "perm", "slogdet"):
            want = np.float64 if a.dtype in (np.float64, np.complex128) else np.float32
            if key in ("w", "s", "sr", "sv"):
                assert value.dtype == want, key
            else:
                assert value.dtype == a.dtype, key


CASES = [((4, 4), np.float32), ((2, 3, 3), np.float32), ((5, 3), np.float32), ((2, 1, 3, 5), np.float32),
         ((3, 3), np.float64), ((2, 4, 2), np.float64)]


@pytest.fixture
def lapack():
    """CPU linear algebra through jaxlib's LAPACK kernels (the default; explicit for tests that need it)."""
    with kiln.config.override("cpu_lapack", True):
        yield


@pytest.mark.parametrize("shape,dtype", CASES, ids=[f"{s}-{np.dtype(d).name}" for s, d in CASES])
def test_decompositions_jit(shape, dtype):
    with _x64(dtype):
        a, spd = _rand(shape, dtype), _spd(shape[:-1] + (shape[-2],), dtype)
        b = _rand(shape[:-1] + (2,), dtype)
        out = kiln.jit(_decompositions)(a, spd, b)
        _check_decompositions(a, spd, b, {k: tuple(map(_np, v)) if isinstance(v, tuple) else _np(v)
                                          for k, v in out.items()})


def test_decompositions_with_lapack(lapack):
    """The same checks through jaxlib's LAPACK kernels (opt-in on CPU)."""
    test_decompositions_jit((2, 4, 4), np.float32)
    test_decompositions_jit((3, 5), np.float64)


def test_decompositions_eager():
    """Outside jit every primitive runs as its own cached executable (float64 is covered under jit)."""
    a, spd, b = _rand((2, 4, 3), np.float32), _spd((2, 4, 4), np.float32), _rand((2, 4, 2), np.float32)
    out = _decompositions(jnp.asarray(a), jnp.asarray(spd), jnp.asarray(b))
    assert all(isinstance(v, kiln.Array) for v in out.values() if not isinstance(v, tuple))
    _check_decompositions(a, spd, b, {k: tuple(map(_np, v)) if isinstance(v, tuple) else _np(v)
                                      for k, v in out.items()})


@pytest.mark.backend("cpu")
def test_complex_on_cpu(lapack):
    a, spd, b = _rand((2, 4, 3), np.complex64), _spd((2, 4, 4), np.complex64), _rand((2, 4, 2), np.complex64)
    out = kiln.jit(_decompositions)(a, spd, b)
    _check_decompositions(a, spd, b, {k: tuple(map(_np, v)) if isinstance(v, tuple) else _np(v)
                                      for k, v in out.items()})
    np.testing.assert_allclose(_np(LA.det(jnp.asarray(a[0, :3]))), np.linalg.det(a[0, :3]), rtol=1e-4)


def test_results_are_namedtuples():
    a = jnp.asarray(_spd((3, 3), np.float32))
    assert LA.qr(a)._fields == ("Q", "R")
    assert LA.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert LA.svd(a)._fields == ("U", "S", "Vh")
    assert LA.slogdet(a)._fields == ("sign", "logabsdet")
    r = LA.qr(a, mode="r")
    np.testing.assert_allclose(np.abs(_np(r)), np.abs(np.linalg.qr(_np(a), mode="r")), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(LA.eigvalsh(a)), np.linalg.eigvalsh(_np(a)), rtol=1e-5)
    np.testing.assert_allclose(_np(LA.svdvals(a)), np.linalg.svd(_np(a), compute_uv=False), rtol=1e-5)


def test_eigh_uplo_reads_one_triangle():
    a = _spd((4, 4), np.float32)
    lower_only = np.tril(a) + np.triu(RNG.standard_normal((4, 4)).astype(np.float32), 1) * 100
    upper_only = np.triu(a) + np.tril(RNG.standard_normal((4, 4)).astype(np.float32), -1) * 100
    w_l, _ = LA.eigh(lower_only, UPLO="L", symmetrize_input=False)
    w_u, _ = LA.eigh(upper_only, UPLO="U", symmetrize_input=False)
    np.testing.assert_allclose(_np(w_l), np.linalg.eigvalsh(a), rtol=1e-5)
    np.testing.assert_allclose(_np(w_u), np.linalg.eigvalsh(a), rtol=1e-5)
    # the default symmetrizes (as JAX): eigenvalues of (x + x^T) / 2
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(_np(LA.eigvalsh(x)), np.linalg.eigvalsh((x + x.T) / 2), rtol=1e-5, atol=1e-6)


# -- norms ------------------------------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _norms(x):
    out = [LA.norm(x), LA.norm(x, keepdims=True)]
    out += [LA.norm(x, o, axis=1) for o in VECTOR_ORDS]
    out += [LA.norm(x, o, axis=(0, 2)) for o in MATRIX_ORDS]
    out += [LA.norm(x, o, axis=(2, 1), keepdims=True) for o in MATRIX_ORDS]
    out += [LA.norm(x[0, 0], o) for o in VECTOR_ORDS] + [LA.norm(x[0], o) for o in MATRIX_ORDS]
    out += [LA.vector_norm(x), LA.vector_norm(x, axis=-1, ord=1, keepdims=True), LA.matrix_norm(x),
            LA.matrix_norm(x, ord=2, keepdims=True)]
    return out


def _norms_np(x):
    out = [np.linalg.norm(x), np.linalg.norm(x, keepdims=True)]
    out += [np.linalg.norm(x, o, axis=1) for o in VECTOR_ORDS]
    out += [np.linalg.norm(x, o, axis=(0, 2)) for o in MATRIX_ORDS]
    out += [np.linalg.norm(x, o, axis=(2, 1), keepdims=True) for o in MATRIX_ORDS]
    out += [np.linalg.norm(x[0, 0], o) for o in VECTOR_ORDS] + [np.linalg.norm(x[0], o) for o in MATRIX_ORDS]
    out += [np.linalg.vector_norm(x), np.linalg.vector_norm(x, axis=-1, ord=1, keepdims=True),
            np.linalg.matrix_norm(x), np.linalg.matrix_norm(x, ord=2, keepdims=True)]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_norm(dtype, lapack):
    if np.dtype(dtype).kind == "c" and kiln.default_backend() != "cpu":
        pytest.skip("complex SVD (ord 2, -2, 'nuc') needs LAPACK (CPU)")
    x = _rand((3, 4, 5), dtype)
    x[0, 0, 1] = 0  # for ord=0
    with _x64(dtype):
        got = kiln.jit(_norms)(x)
    with np.errstate(divide="ignore"):
        want = _norms_np(x)
    tol = _tol(dtype)
    real = np.float64 if dtype == np.float64 else np.float32
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == np.shape(w), (i, g.shape, np.shape(w))
        assert g.dtype == real, (i, g.dtype)
        np.testing.assert_allclose(_np(g), w, err_msg=f"norm case {i}", **tol)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_norms_sum_in_float32(dtype):
    # The sums of the norms accumulate float16/bfloat16 in float32 and round once (kiln.numpy.sum, as JAX):
    # the bfloat16 Frobenius norm of a 64x48 array summed in bfloat16 was 5-7% off, its float16 one 0.1%
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    x = RNG.standard_normal((64, 48)).astype(dt)
    x64 = x.astype(np.float64)
    rtol = 1e-2 if dtype == "bfloat16" else 8e-4  # a few roundings of the result (2**-9, 2**-12 relative)
    got = kiln.jit(lambda x: (LA.norm(x), LA.norm(x, axis=0), LA.norm(x, ord=1, axis=0), LA.vector_norm(x),
                              LA.matrix_norm(x), LA.norm(x, ord=1), LA.norm(x, ord=np.inf)))(x)
    want = (np.linalg.norm(x64), np.linalg.norm(x64, axis=0), np.linalg.norm(x64, ord=1, axis=0),
            np.linalg.norm(x64.ravel()), np.linalg.norm(x64), np.linalg.norm(x64, ord=1),
            np.linalg.norm(x64, ord=np.inf))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == dt, (i, g.dtype)
        np.testing.assert_allclose(np.asarray(g).astype(np.float64), w, rtol=rtol, err_msg=f"norm case {i}")
    np.testing.assert_allclose(np.asarray(LA.norm(x)).astype(np.float64), np.linalg.norm(x64), rtol=rtol)


def test_complex_norm_is_the_root_of_the_sum_of_squared_parts():
    # re*re + im*im (JAX's real(x * conj(x))), not |x|*|x|, summed
    z = (RNG.standard_normal((6, 5)) + 1j * RNG.standard_normal((6, 5))).astype(np.complex64)
    got = kiln.jit(lambda z: (LA.norm(z), LA.norm(z, axis=1), LA.vector_norm(z, axis=0)))(z)
    z64 = z.astype(np.complex128)
    for g, w in zip(got, (np.linalg.norm(z64), np.linalg.norm(z64, axis=1), np.linalg.norm(z64, axis=0))):
        assert g.dtype == np.float32
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-6)


def test_norm_eager_and_int_input():
    x = np.arange(12).reshape(3, 4)
    for o in (None, 1, np.inf):
        np.testing.assert_allclose(_np(LA.norm(jnp.asarray(x), o)), np.linalg.norm(x, o), rtol=1e-6)
    assert LA.norm(jnp.asarray(x)).dtype == np.float32
    np.testing.assert_allclose(_np(LA.norm(jnp.asarray(x), axis=0)), np.linalg.norm(x, axis=0), rtol=1e-6)


# -- other functions ------------------------------------------------------------------------------

def test_matrix_power():
    a = _rand((2, 3, 3), np.float32) / 2
    f = kiln.jit(lambda x: [LA.matrix_power(x, n) for n in (0, 1, 2, 5, -1, -3)])
    for n, got in zip((0, 1, 2, 5, -1, -3), f(a)):
        np.testing.assert_allclose(_np(got), np.linalg.matrix_power(a, n), rtol=1e-3, atol=1e-4, err_msg=str(n))
    ai = np.array([[1, 2], [3, 4]], np.int32)
    got = LA.matrix_power(jnp.asarray(ai), 3)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(_np(got), np.linalg.matrix_power(ai, 3))


def test_pinv_lstsq_rank_cond():
    a = _rand((2, 5, 3), np.float32)
    deficient = (_rand((6, 2), np.float32) @ _rand((2, 4), np.float32)).astype(np.float32)

    def f(a, deficient):
        x, resid, rank, s = LA.lstsq(a[0], a[1, :, :2])
        xv, residv, _, _ = LA.lstsq(a[0], a[1, :, 0])
        return [LA.pinv(a), LA.pinv(deficient), LA.matrix_rank(a), LA.matrix_rank(deficient),
                LA.matrix_rank(a[0, 0]), LA.cond(a[:, :3]), LA.cond(a[:, :3], 1), LA.cond(a[:, :3], -2),
                x, resid, rank, s, xv, residv]

    (pinv, pinv_d, rank, rank_d, rank_v, cond2, cond1, condm2,
     x, resid, lrank, s, xv, residv) = map(_np, kiln.jit(f)(a, deficient))
    np.testing.assert_allclose(pinv, np.linalg.pinv(a), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pinv_d, np.linalg.pinv(deficient, rcond=1e-5), rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(rank, [3, 3])
    assert rank.dtype == np.int32
    assert rank_d == 2 and rank_v == 1
    np.testing.assert_allclose(cond2, np.linalg.cond(a[:, :3]), rtol=1e-3)
    np.testing.assert_allclose(cond1, np.linalg.cond(a[:, :3], 1), rtol=1e-3)
    np.testing.assert_allclose(condm2, np.linalg.cond(a[:, :3], -2), rtol=1e-3)
    x_np, resid_np, rank_np, s_np = np.linalg.lstsq(a[0], a[1, :, :2])
    np.testing.assert_allclose(x, x_np, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(resid, resid_np, rtol=1e-4, atol=1e-5)
    assert lrank == rank_np
    np.testing.assert_allclose(s, s_np, rtol=1e-5)
    np.testing.assert_allclose(xv, np.linalg.lstsq(a[0], a[1, :, 0])[0], rtol=1e-4, atol=1e-5)
    assert residv.shape == ()
    # numpy_resid (eager): NumPy's shape conventions
    _, r_np, _, _ = LA.lstsq(jnp.asarray(a[0]), jnp.asarray(a[1, :, 0]), numpy_resid=True)
    np.testing.assert_allclose(_np(r_np), np.linalg.lstsq(a[0], a[1, :, 0])[1], rtol=1e-4)
    _, r_np, _, _ = LA.lstsq(jnp.asarray(deficient), jnp.asarray(deficient[:, :1]), numpy_resid=True)
    assert r_np.shape == (0,)


def test_singular_matrices_follow_jax():
    """No exceptions: det 0, slogdet (0, -inf), inv/solve non-finite, cholesky NaN."""
    s = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    z = np.zeros((2, 2), np.float32)
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)

    def f(s, z, not_pd):
        return [LA.det(s), LA.det(z), *LA.slogdet(z), LA.inv(z), LA.solve(z, s), LA.cholesky(not_pd)]

    det_s, det_z, sign, logdet, inv, solve, chol = map(_np, kiln.jit(f)(s, z, not_pd))
    assert det_s == 0 and det_z == 0
    assert sign == 0 and logdet == -np.inf
    assert not np.isfinite(inv).all() and not np.isfinite(solve).all()
    assert np.isnan(chol).all()


def test_zero_sized():
    e = np.zeros((0, 0), np.float32)
    eb = np.zeros((2, 0, 0), np.float32)
    w = np.zeros((3, 0), np.float32)
    empty_batch = np.zeros((0, 3, 3), np.float32)

    def f(e, eb, w, empty_batch):
        return [LA.det(e), LA.det(eb), LA.inv(eb), *LA.slogdet(eb), LA.svd(w)[0], LA.svd(w, compute_uv=False),
                LA.qr(w)[0], LA.qr(w, mode="complete")[0], LA.eigh(eb)[0], LA.cholesky(e), LA.det(empty_batch),
                LA.inv(empty_batch), LA.solve(empty_batch, empty_batch), LA.norm(e), LA.pinv(w)]

    out = list(map(_np, kiln.jit(f)(e, eb, w, empty_batch)))
    assert out[0] == 1 and out[1].shape == (2,) and (out[1] == 1).all()
    assert out[2].shape == (2, 0, 0)
    assert (out[3] == 1).all() and (out[4] == 0).all()
    np.testing.assert_array_equal(out[5], np.eye(3))  # U of a 3x0 matrix: the 3x3 identity
    assert out[6].shape == (0,)
    assert out[7].shape == (3, 0)
    np.testing.assert_array_equal(out[8], np.eye(3))
    assert out[9].shape == (2, 0) and out[10].shape == (0, 0)
    assert out[11].shape == (0,) and out[12].shape == (0, 3, 3) and out[13].shape == (0, 3, 3)
    assert out[14] == 0 and out[15].shape == (0, 3)


def test_lax_triangular_solve_variants():
    a = _rand((2, 4, 4), np.float32) + 4 * np.eye(4, dtype=np.float32)
    b_left, b_right = _rand((2, 4, 3), np.float32), _rand((2, 3, 4), np.float32)
    variants = [(left, lower, trans, unit) for left in (True, False) for lower in (True, False)
                for trans in (False, True) for unit in (False, True)]

    def f(a, b_left, b_right):
        return [lax.linalg.triangular_solve(a, b_left if left else b_right, left_side=left, lower=lower,
                                            transpose_a=trans, unit_diagonal=unit)
                for left, lower, trans, unit in variants]

    for (left, lower, trans, unit), x in zip(variants, kiln.jit(f)(a, b_left, b_right)):
        t = np.tril(a) if lower else np.triu(a)
        if unit:
            t = t - np.diagonal(t, axis1=-2, axis2=-1)[..., None] * np.eye(4) + np.eye(4)
        t = np.swapaxes(t, -1, -2) if trans else t
        got = t @ _np(x) if left else _np(x) @ t
        np.testing.assert_allclose(got, b_left if left else b_right, rtol=1e-4, atol=1e-5,
                                   err_msg=str((left, lower, trans, unit)))


# -- transformations: vmap, jvp, grad -----------------------------------------------------------

def test_vmap():
    a = _rand((3, 4, 4), np.float32)
    spd = _spd((3, 4, 4), np.float32)
    b = _rand((4, 2), np.float32)

    def f(a, spd):
        return [kiln.vmap(LA.det)(a), kiln.vmap(LA.inv, in_axes=1, out_axes=1)(jnp.swapaxes(a, 0, 1)),
                kiln.vmap(LA.eigvalsh)(spd),
                kiln.vmap(lambda x: LA.svd(x)[1])(a), kiln.vmap(LA.cholesky)(spd), kiln.vmap(lambda x: LA.qr(x)[1])(a),
                kiln.vmap(lambda t: lax.linalg.triangular_solve(t, jnp.asarray(b), left_side=True, lower=True))(spd)]

    det, inv, w, s, chol, r, x = map(_np, kiln.jit(f)(a, spd))
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=1e-4)
    np.testing.assert_allclose(inv, np.swapaxes(np.linalg.inv(a), 0, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd), rtol=1e-5)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-5)
    np.testing.assert_allclose(chol, np.linalg.cholesky(spd), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a)[1]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.tril(spd) @ x, np.broadcast_to(b, (3, 4, 2)), rtol=1e-4, atol=1e-5)


def _gauge_eigh(x):
    v, w = lax.linalg.eigh(x)
    return [w, v * jnp.sign(v[..., :1, :])]  # a sign per eigenvector: fixed locally, so differentiable


def _gauge_svd(full):
    def f(x):
        u, s, vh = lax.linalg.svd(x, full_matrices=full)
        sign = jnp.sign(u[..., :1, :])
        k = vh.shape[-2]
        return [s, u * sign, vh * jnp.swapaxes(sign, -1, -2)[..., :k, :]]
    return f


def _jvp_cases(b):
    tri = dict(left_side=True, lower=True)
    return [
        ("cholesky", lambda x: [lax.linalg.cholesky(x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(4))]),
        ("lu", lambda x: [lax.linalg.lu(x)[0]]),
        ("qr", lambda x: list(lax.linalg.qr(x))),
        ("qr reduced tall", lambda x: list(lax.linalg.qr(x[..., :3], full_matrices=False))),
        ("eigh", lambda x: _gauge_eigh(x + jnp.swapaxes(x, -1, -2))),
        ("svd", _gauge_svd(True)),
        ("svd tall", lambda x: _gauge_svd(False)(x[..., :3])),
        ("svd wide", lambda x: _gauge_svd(False)(x[..., :3, :])),
        ("svdvals", lambda x: [lax.linalg.svd(x[..., :2], compute_uv=False)]),
        ("triangular_solve a", lambda x: [lax.linalg.triangular_solve(x + 4 * jnp.eye(4), b, **tri)]),
        ("triangular_solve right transposed", lambda x: [lax.linalg.triangular_solve(
            x + 4 * jnp.eye(4), jnp.swapaxes(b, -1, -2), lower=False, transpose_a=True, unit_diagonal=True)]),
        ("triangular_solve b", lambda x: [lax.linalg.triangular_solve(jnp.tril(b[..., :4, :]) + 4 * jnp.eye(4),
                                                                      x, **tri)]),
        ("det", lambda x: [LA.det(x)]),
        ("slogdet", lambda x: [LA.slogdet(x)[1]]),
        ("inv", lambda x: [LA.inv(x)]),
        ("solve", lambda x: [LA.solve(x, b)]),
    ]


def test_jvp_against_finite_differences():
    with kiln.config.override("enable_x64", True):
        a = _rand((2, 4, 4), np.float64)
        t = _rand((2, 4, 4), np.float64)
        b = jnp.asarray(_rand((2, 4, 4), np.float64))
        cases = _jvp_cases(b)
        eps = 1e-6
        tangents = kiln.jit(lambda x, t: [kiln.jvp(f, (x,), (t,))[1] for _, f in cases])(a, t)
        plus = kiln.jit(lambda x: [f(x) for _, f in cases])(a + eps * t)
        minus = kiln.jit(lambda x: [f(x) for _, f in cases])(a - eps * t)
        for (name, _), tan, p, m in zip(cases, tangents, plus, minus):
            for i, (ti, pi, mi) in enumerate(zip(tan, p, m)):
                fd = (_np(pi) - _np(mi)) / (2 * eps)
                np.testing.assert_allclose(_np(ti), fd, rtol=1e-5, atol=1e-6 * max(1, np.abs(fd).max()),
                                           err_msg=f"{name} output {i}")


def test_grad_against_finite_differences():
    with kiln.config.override("enable_x64", True):
        a = _rand((2, 4, 4), np.float64)
        t = _rand((2, 4, 4), np.float64)
        b = jnp.asarray(_rand((2, 4, 3), np.float64))
        scalars = [
            lambda x: jnp.sum(LA.det(x)),
            lambda x: jnp.sum(LA.slogdet(x)[1]),
            lambda x: jnp.sum(LA.inv(x)),
            lambda x: jnp.sum(LA.solve(x, b)),
            lambda x: jnp.sum(LA.norm(x, 2, axis=(-2, -1))),
            lambda x: jnp.sum(LA.norm(x, "nuc", axis=(-2, -1))),
            lambda x: jnp.sum(LA.cholesky(x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(4))),
            lambda x: jnp.sum(LA.eigvalsh(x + jnp.swapaxes(x, -1, -2)) ** 2),
            lambda x: jnp.sum(LA.qr(x)[1] ** 2),
            lambda x: jnp.sum(LA.pinv(x)),
        ]
        grads = kiln.jit(lambda x: [kiln.grad(f)(x) for f in scalars])(a)
        eps = 1e-6
        plus = kiln.jit(lambda x: [f(x) for f in scalars])(a + eps * t)
        minus = kiln.jit(lambda x: [f(x) for f in scalars])(a - eps * t)
        for i, (g, p, m) in enumerate(zip(grads, plus, minus)):
            fd = (float(p) - float(m)) / (2 * eps)
            np.testing.assert_allclose(np.sum(_np(g) * t), fd, rtol=1e-6, err_msg=f"scalar function {i}")


def test_unsupported_derivatives():
    with pytest.raises(TypeError, match=r"kiln: differentiation of kiln.lax.linalg.lu of non-square matrices"):
        kiln.jvp(lambda x: lax.linalg.lu(x)[0], (jnp.ones((2, 3)),), (jnp.ones((2, 3)),))
    with pytest.raises(TypeError, match=r"kiln: differentiation of kiln.lax.linalg.svd with full_matrices=True of "
                                        r"a non-square matrix"):
        kiln.jvp(lambda x: lax.linalg.svd(x)[0], (jnp.ones((2, 3)),), (jnp.ones((2, 3)),))
    with pytest.raises(TypeError, match=r"kiln: differentiation of kiln.lax.linalg.qr for shape \(2, 3\)"):
        kiln.jvp(lambda x: lax.linalg.qr(x)[0], (jnp.ones((2, 3)),), (jnp.ones((2, 3)),))


# -- the portable implementation (what runs on GPU/TPU), exercised on CPU ------------------------

def _run_portable(fn, *args):
    """Lower ``fn`` for a platform without LAPACK (kiln's portable StableHLO) and run it on CPU."""
    closed = kiln.make_ir(fn)(*args)
    lowered = lowering.lower(closed.ir, context=runtime.mlir_context(), platform="portable", keep_unused=True)
    text = lowered.as_text()
    assert "custom_call" not in text and "stablehlo.while" in text
    dev = runtime.local_device("cpu", 0)
    exe = runtime.compile(lowered.module, dev, [(a.shape, a.dtype) for a in lowered.out_avals])
    outs = exe.execute([dispatch.to_buffer(c, dev) for c in closed.consts] +
                       [dispatch.to_buffer(np.asarray(x), dev) for x in args])
    return [runtime.to_numpy(o) for o in outs]


def _flat(fn):
    def flat(*args):
        out = fn(*args)
        return [v for k in sorted(out) for v in (out[k] if isinstance(out[k], tuple) else (out[k],))]
    return flat


def _unflat(values):
    """Inverse of ``_flat`` for ``_decompositions`` (only 'slogdet' is a pair)."""
    keys = ["lu", "piv", "perm", "q", "r", "qc", "rc", "chol", "cholu", "w", "v", "u", "s", "vh", "ur", "sr",
            "vhr", "sv", "det", "slogdet", "inv", "solve", "solve_vec"]
    out, it = {}, iter(values)
    for k in sorted(keys):
        out[k] = (next(it), next(it)) if k == "slogdet" else next(it)
    return out


@pytest.mark.parametrize("shape,dtype", [((2, 5, 3), np.float32), ((3, 5), np.float64)])
def test_portable_implementation(shape, dtype):
    with _x64(dtype):
        a, spd = _rand(shape, dtype), _spd(shape[:-1] + (shape[-2],), dtype)
        b = _rand(shape[:-1] + (2,), dtype)
        _check_decompositions(a, spd, b, _unflat(_run_portable(_flat(_decompositions), a, spd, b)))


def test_portable_rank_deficient_and_repeated():
    deficient = (_rand((6, 2), np.float32) @ _rand((2, 4), np.float32)).astype(np.float32)
    repeated = np.diag([2.0, 1.0, 1.0, 1.0]).astype(np.float32)
    zero = np.zeros((4, 3), np.float32)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    one = np.array([[[-3.0]], [[2.0]]], np.float32)

    def f(d, r, z, s, one):
        u, sv, vh = LA.svd(d)
        w, v = LA.eigh(r)
        uz, sz, vhz = LA.svd(z)
        u1, s1, vh1 = LA.svd(one)
        w1, v1 = LA.eigh(one)
        return [u, sv, vh, w, v, uz, sz, vhz, LA.det(s), LA.cholesky(s), u1, s1, vh1, w1, v1, LA.inv(one)]

    (u, sv, vh, w, v, uz, sz, vhz, det, chol,
     u1, s1, vh1, w1, v1, inv1) = _run_portable(f, deficient, repeated, zero, singular, one)
    _check_svd(deficient, u, sv, vh, True, dict(rtol=1e-4, atol=1e-5))
    _check_eigh(repeated, w, v, dict(rtol=1e-5, atol=1e-6))
    _check_svd(zero, uz, sz, vhz, True, dict(rtol=1e-5, atol=1e-6))
    assert det == 0 and np.isnan(chol).all()
    _check_svd(one, u1, s1, vh1, True, dict(rtol=1e-6, atol=1e-6))
    _check_eigh(one, w1, v1, dict(rtol=1e-6, atol=1e-6))
    np.testing.assert_allclose(inv1, 1 / one)


def test_portable_triangular_solve_and_norms():
    a = _rand((2, 4, 4), np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = _rand((2, 3, 4), np.float32)
    x, y, n2, nuc = _run_portable(
        lambda a, b: [lax.linalg.triangular_solve(a, b, lower=False, transpose_a=True),
                      lax.linalg.triangular_solve(a, b, left_side=False, lower=True, unit_diagonal=True),
                      LA.norm(a, 2, axis=(1, 2)), LA.norm(a[0], "nuc")], a, b)
    np.testing.assert_allclose(x @ np.swapaxes(np.triu(a), -1, -2), b, rtol=1e-4, atol=1e-5)
    unit_lower = np.tril(a, -1) + np.eye(4)
    np.testing.assert_allclose(y @ unit_lower, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(n2, np.linalg.norm(a, 2, axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(nuc, np.linalg.norm(a[0], "nuc"), rtol=1e-5)


def test_portable_rejects_complex():
    closed = kiln.make_ir(lambda x: LA.inv(x))(_rand((3, 3), np.complex64))
    with pytest.raises(lowering.LoweringError, match=r"kiln.lax.linalg.lu: complex matrices are supported only on "
                                                     r"CPU with LAPACK"):
        lowering.lower(closed.ir, context=runtime.mlir_context(), platform="cuda")


# -- the LAPACK custom calls ---------------------------------------------------------------------

@pytest.mark.backend("cpu")
def test_cpu_lapack_is_the_default_and_can_be_turned_off():
    """As JAX, CPU linear algebra uses jaxlib's LAPACK kernels by default; cpu_lapack=False gives kiln's
    portable algorithms (no custom calls)."""
    x = np.eye(3, dtype=np.float32)
    f = lambda a: [LA.inv(a), LA.eigh(a)[0]]  # noqa: E731
    assert kiln.config.cpu_lapack
    assert "lapack_sgetrf_ffi" in kiln.jit(f).lower(x).as_text()
    with kiln.config.override("cpu_lapack", False):
        assert "custom_call" not in kiln.jit(f).lower(x).as_text()
        assert runtime.custom_call_targets("cpu") == frozenset()
        np.testing.assert_allclose(np.asarray(kiln.jit(f)(x)[0]), np.eye(3), atol=1e-6)


@pytest.mark.backend("cpu")
def test_complex_linear_algebra_works_by_default():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))).astype(np.complex64)
    h = a @ a.conj().T + 4 * np.eye(4, dtype=np.complex64)
    np.testing.assert_allclose(np.asarray(LA.inv(a)), np.linalg.inv(a), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(LA.eigvalsh(h)), np.linalg.eigvalsh(h), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(LA.svd(a, compute_uv=False)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-4, atol=1e-4)
    l_ = np.asarray(kiln.jit(LA.cholesky)(h))
    np.testing.assert_allclose(l_ @ l_.conj().T, h, rtol=1e-4, atol=1e-4)


@pytest.mark.backend("cpu")
def test_cpu_lowering_uses_lapack(lapack):
    x = np.eye(3, dtype=np.float32)
    text = kiln.jit(lambda a: [LA.inv(a), LA.eigh(a)[0], LA.svd(a)[1], LA.qr(a)[0], LA.cholesky(a)]).lower(x).as_text()
    for target in ("lapack_sgetrf_ffi", "lapack_strsm_ffi", "lapack_ssyevd_ffi", "lapack_sgesdd_ffi",
                   "lapack_sgeqrf_ffi", "lapack_sorgqr_ffi", "lapack_spotrf_ffi"):
        assert f"@{target}" in text or f'"{target}"' in text, target
    assert "api_version = 4" in text
    assert "custom_call_targets" in runtime.__all__
    assert "lapack_dgetrf_ffi" in runtime.custom_call_targets("cpu")
    assert runtime.custom_call_targets("cuda") == frozenset()


@pytest.mark.backend("cpu")
def test_runtime_compile_registers_lapack_for_module_text():
    """A fresh process: runtime.compile of StableHLO text with a LAPACK custom call registers the targets."""
    code = textwrap.dedent('''
        import numpy as np
        from kiln import runtime
        TEXT = """func.func public @main(%a: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>) {
          %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) {api_version = 4 : i32,
              operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
              result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}
              : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>)
          return %0#0, %0#1, %0#2 : tensor<3x3xf32>, tensor<3xi32>, tensor<i32>
        }"""
        d = runtime.local_device("cpu", 0)
        exe = runtime.compile(TEXT, d, [((3, 3), np.float32), ((3,), np.int32), ((), np.int32)])
        a = np.array([[1, 2, 0], [4, 1, 0], [0, 0, 2]], np.float32)
        lu, piv, info = [runtime.to_numpy(o) for o in exe.execute([runtime.put(a, d)])]
        print(piv.tolist(), int(info))
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[2, 2, 3] 0"


@pytest.mark.backend("cpu")
def test_cpu_without_scipy_uses_the_portable_implementation():
    """jaxlib loads its LAPACK kernels from SciPy; without SciPy kiln lowers the portable loops on CPU too."""
    code = textwrap.dedent('''
        import sys
        sys.modules["scipy"] = None
        import numpy as np
        import kiln, kiln.numpy as jnp
        from kiln import runtime
        kiln.config.update("cpu_lapack", True)
        a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
        text = kiln.jit(lambda x: [jnp.linalg.det(x), jnp.linalg.eigvalsh(x)]).lower(a).as_text()
        det, w = kiln.jit(lambda x: [jnp.linalg.det(x), jnp.linalg.eigvalsh(x)])(a)
        print("custom_call" in text, "stablehlo.while" in text)
        print(np.allclose(np.asarray(det), np.linalg.det(a), rtol=1e-5),
              np.allclose(np.asarray(w), np.linalg.eigvalsh(a), rtol=1e-5))
        print("SciPy" in runtime.lapack_unavailable_reason())
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True", "True", "True"]


# -- errors ---------------------------------------------------------------------------------------

def test_errors_shapes():
    sq, rect, vec = jnp.ones((3, 3)), jnp.ones((2, 3)), jnp.ones(3)
    for fn in (LA.det, LA.inv, LA.slogdet, LA.cholesky, LA.eigh):
        name = fn.__name__
        with pytest.raises(ValueError, match=rf"kiln.numpy.linalg.{name}: the last two dimensions of a must be "
                                             r"square, got shape \(2, 3\)"):
            fn(rect)
        with pytest.raises(ValueError, match=rf"kiln.numpy.linalg.{name}: a must be at least two-dimensional"):
            fn(vec)
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.svd: a must be at least two-dimensional"):
        LA.svd(vec)
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.solve: b must have 3 rows to match a of shape "
                                         r"\(3, 3\), got b of shape \(2,\)"):
        LA.solve(sq, jnp.ones(2))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.solve: the batch dimensions \(2,\) and \(3,\) cannot"):
        LA.solve(jnp.ones((2, 3, 3)), jnp.ones((3, 3, 1)))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.solve: b must be at least one-dimensional"):
        LA.solve(sq, 1.0)
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.lstsq: a must be two-dimensional"):
        LA.lstsq(jnp.ones((2, 3, 3)), jnp.ones(3))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.lstsq: b must have 3 rows"):
        LA.lstsq(sq, jnp.ones(4))


def test_errors_arguments():
    sq = jnp.ones((3, 3))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.qr: mode must be 'reduced', 'complete' or 'r', got "
                                         r"'raw' \('raw' is not supported\)"):
        LA.qr(sq, mode="raw")
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.eigh: UPLO must be 'L' or 'U', got 'X'"):
        LA.eigh(sq, UPLO="X")
    with pytest.raises(TypeError, match=r"kiln.numpy.linalg.matrix_power: exponent must be a static integer, got "
                                        r"float 2.5"):
        LA.matrix_power(sq, 2.5)
    with pytest.raises(TypeError, match=r"kiln.numpy.linalg.inv: array type float16 is unsupported in linalg"):
        LA.inv(jnp.ones((2, 2), dtype=jnp.float16))
    with pytest.raises(TypeError, match=r"kiln.numpy.linalg.det: argument 0 is a list"):
        LA.det([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.pinv: pass rtol or rcond, not both"):
        LA.pinv(sq, rtol=1e-3, rcond=1e-3)


def test_errors_norm():
    x = jnp.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: invalid norm order 'fro' for vectors"):
        LA.norm(x, "fro", axis=1)
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: invalid norm order 3 for matrices"):
        LA.norm(x, 3, axis=(1, 2))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: improper number of dimensions to norm: ord=1 "
                                         r"with axis=None needs a 1-D or 2-D array, got shape \(2, 3, 4\)"):
        LA.norm(x, 1)
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: improper number of dimensions to norm: "
                                         r"axis=\(0, 1, 2\) names 3 axes"):
        LA.norm(x, axis=(0, 1, 2))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: duplicate axes given: \(1, -2\)"):
        LA.norm(x, axis=(1, -2))
    with pytest.raises(ValueError, match=r"kiln.numpy.linalg.norm: axis 3 is out of bounds for an array of "
                                         r"dimension 3"):
        LA.norm(x, axis=3)
    with pytest.raises(TypeError, match=r"kiln.numpy.linalg.norm: axis must be None, an int or a tuple of ints, "
                                        r"got 1.5"):
        LA.norm(x, axis=1.5)
    with pytest.raises(TypeError, match=r"kiln.numpy.linalg.norm: ord must be a Python number, a string or None"):
        LA.norm(x, ord=[1])


def test_errors_lax():
    f32 = jnp.ones((3, 3))
    with pytest.raises(TypeError, match=r"kiln.lax.linalg.cholesky: its operand must be float32, float64, "
                                        r"complex64 or complex128, got int32"):
        lax.linalg.cholesky(jnp.ones((3, 3), dtype=jnp.int32))
    with pytest.raises(ValueError, match=r"kiln.lax.linalg.lu: its operand must have at least 2 dimensions"):
        lax.linalg.lu(jnp.ones(3))
    with pytest.raises(ValueError, match=r"kiln.lax.linalg.eigh: its operand must be square"):
        lax.linalg.eigh(jnp.ones((2, 3)))
    with pytest.raises(TypeError, match=r"kiln.lax.linalg.triangular_solve: a and b must have one dtype, got "
                                        r"float32 and complex64"):
        lax.linalg.triangular_solve(f32, jnp.ones((3, 3), dtype=jnp.complex64))
    with pytest.raises(ValueError, match=r"kiln.lax.linalg.triangular_solve: a and b must have the same batch "
                                         r"dimensions"):
        lax.linalg.triangular_solve(f32, jnp.ones((2, 3, 3)))
    with pytest.raises(ValueError, match=r"kiln.lax.linalg.triangular_solve: b must have 3 rows to match a of shape "
                                         r"\(3, 3\) \(left_side=True\), got shape \(2, 4\)"):
        lax.linalg.triangular_solve(f32, jnp.ones((2, 4)), left_side=True)
    with pytest.raises(NotImplementedError, match=r"kiln.lax.linalg.qr: pivoting=True"):
        lax.linalg.qr(f32, pivoting=True)
    with pytest.raises(NotImplementedError, match=r"kiln.lax.linalg.eigh: sort_eigenvalues=False"):
        lax.linalg.eigh(f32, sort_eigenvalues=False)


def test_lstsq_eager_runs_one_compiled_program(primitive_runs):
    """lstsq called eagerly is one compiled program per signature (rcond an argument of it), as JAX's jitted
    lstsq; numpy_resid=True, whose residuals' shape depends on the rank's value, runs op by op."""
    a = _rand((7, 4), np.float32)
    b = _rand((7, 3), np.float32)
    ak, bk = jnp.asarray(a), jnp.asarray(b)
    for rcond, args in ((None, (ak, bk)), (1e-3, (ak, bk)), (None, (ak, bk[:, 0]))):
        stats = runtime.compile_cache.stats()
        before = stats["hits"] + stats["misses"]
        primitive_runs.clear()
        x, resid, rank, s = LA.lstsq(*args, rcond)
        stats = runtime.compile_cache.stats()
        assert stats["hits"] + stats["misses"] - before <= 1
        assert primitive_runs == []
        xn, rn, kn, sn = np.linalg.lstsq(a, np.asarray(args[1]), rcond=rcond)
        np.testing.assert_allclose(_np(x), xn, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(_np(resid), rn, rtol=1e-3, atol=1e-5)
        assert int(rank) == kn
        np.testing.assert_allclose(_np(s), sn, rtol=1e-5)
    primitive_runs.clear()
    _, r_np, _, _ = LA.lstsq(ak, bk[:, 0], numpy_resid=True)
    assert primitive_runs  # op by op
    np.testing.assert_allclose(_np(r_np), np.linalg.lstsq(a, b[:, 0])[1], rtol=1e-4)


def test_solve_is_differentiated_implicitly():
    """The derivatives of solve reuse a's LU factors (a solve with a^T for reverse mode, as JAX's) instead of
    differentiating the factorization: kiln's grad program kept 390 KB of temporaries for a 128x128 a (four more
    triangular solves and three 128^3 matrix products); JAX's keeps 3 KB. Values against finite differences and
    the closed forms d(a^-1 b) = -a^-1 da a^-1 b, grad_b = a^-T g."""
    a = RNG.normal(size=(128, 128)).astype(np.float32) + 128 * np.eye(128, dtype=np.float32)
    b = RNG.normal(size=128).astype(np.float32)
    stats = kiln.jit(kiln.grad(lambda a: jnp.linalg.solve(a, b).sum())).lower(a).compile().memory_analysis()
    assert stats.temp_size_in_bytes < 16 * 1024, stats.temp_size_in_bytes
    a64, b64, B64 = RNG.normal(size=(5, 5)), RNG.normal(size=5), RNG.normal(size=(3, 5, 2))
    with kiln.enable_x64():
        def f(a, b):
            return (jnp.linalg.solve(a, b) ** 2).sum()
        ga, gb = kiln.grad(f, (0, 1))(a64, b64)
        x = np.linalg.solve(a64, b64)
        np.testing.assert_allclose(np.asarray(gb), np.linalg.solve(a64.T, 2 * x), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ga), -np.outer(np.linalg.solve(a64.T, 2 * x), x), rtol=1e-9)
        eps, e = 1e-6, np.zeros((5, 5))
        e[1, 3] = eps
        fd = (float(f(a64 + e, b64)) - float(f(a64 - e, b64))) / (2 * eps)
        assert abs(float(ga[1, 3]) - fd) < 1e-6 * max(1.0, abs(fd))
        t = kiln.jvp(lambda a: jnp.linalg.solve(a, b64), (a64,), (np.eye(5),))[1]
        np.testing.assert_allclose(np.asarray(t), -np.linalg.solve(a64, x), rtol=1e-9)
        stack = RNG.normal(size=(3, 5, 5)) + 5 * np.eye(5)
        np.testing.assert_allclose(np.asarray(kiln.vmap(jnp.linalg.solve)(stack, B64)), np.linalg.solve(stack, B64),
                                   rtol=1e-10)
        inv = np.linalg.inv(a64)
        np.testing.assert_allclose(np.asarray(kiln.hessian(lambda b: f(a64, b))(b64)), 2 * inv.T @ inv, rtol=1e-8)
