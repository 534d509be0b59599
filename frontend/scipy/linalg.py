"""kiln.scipy.linalg: SciPy's linear algebra (as ``jax.scipy.linalg``), built on kiln's decompositions
(``kiln.lax.linalg``) and ``kiln.numpy.linalg``."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..control.loops import fori_loop
from ..core import dtypes
from ..core.errors import MatrixShapeError
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from ..lax import linalg as lax_linalg
from ..numpy import linalg as _nla
from ..numpy._util import check_arraylike

__all__ = [
    "cholesky", "cho_factor", "cho_solve", "lu", "lu_factor", "lu_solve", "qr", "qr_multiply", "svd", "eigh",
    "eigh_tridiagonal", "inv", "det", "solve", "solve_triangular", "expm", "expm_frechet", "polar", "block_diag",
    "toeplitz", "hankel", "circulant", "companion", "fiedler", "fiedler_companion", "leslie", "convolution_matrix",
    "hilbert", "invhilbert", "pascal", "invpascal", "helmert", "hadamard", "dft", "schur", "rsf2csf", "sqrtm",
    "funm", "solve_sylvester", "hessenberg",
]


def _where(fname: str) -> str:
    return f"kiln.scipy.linalg.{fname}"


def _inexact(fname: str, *args: Any) -> list[Any]:
    """The arguments as kiln arrays of their common inexact dtype (integers -> the default float)."""
    if len(args) == 1 and type(args[0]) is Array:  # (an eager call on one float array: as it is, in a tenth
        aval = args[0].aval                        # of the time of the general path below)
        if not aval.weak_type and aval.dtype.kind in "fc":
            return [args[0]]
    check_arraylike(_where(fname), *args)
    dtype = dtypes.result_type(*args)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    return [jnp.asarray(a, dtype=dtype) for a in args]


def _square(fname: str, a, what: str = "a") -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise MatrixShapeError(f"{_where(fname)}: {what} must be a square matrix (or a stack of them), got shape "
                               f"{a.shape}")


def _mH(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _columns(fname: str, a, b):
    """``b`` as a stack of column blocks ``(..., n, k)`` broadcast against ``a``'s batch, and whether it was
    a vector (``b.ndim == a.ndim - 1``, as JAX)."""
    n = a.shape[-1]
    vector = b.ndim == a.ndim - 1 or b.ndim == 1
    bb = b[..., None] if vector else b
    if bb.ndim < 2 or bb.shape[-2] != n:
        raise ValueError(f"{_where(fname)}: b must have {n} rows to match a of shape {a.shape}, got b of shape "
                         f"{b.shape}")
    batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(bb, batch + bb.shape[-2:]), vector


# -- Cholesky ---------------------------------------------------------------------------------------

@eager_jit("lower", "overwrite_a", "check_finite")
def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a Hermitian positive definite matrix: upper ``U`` with ``a = U^H U`` (default,
    as SciPy) or lower ``L`` with ``a = L L^H``. A matrix that is not positive definite gives NaNs.

    Only the requested triangle of ``a`` is read, as in SciPy and JAX (``kiln.numpy.linalg.cholesky``
    symmetrizes its input instead)."""
    del overwrite_a, check_finite
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a)
    factor = lax_linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
    return factor if lower else _mH(factor)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for :func:`cho_solve`: the Cholesky factor and which triangle it is."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` given ``(c, lower) = cho_factor(a)``."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    return _cho_solve(c, b, lower=bool(lower))


@eager_jit("lower")
def _cho_solve(c, b, *, lower: bool):
    c, b = _inexact("cho_solve", c, b)
    _square("cho_solve", c, "c")
    c, bb, vector = _columns("cho_solve", c, b)
    if lower:
        y = lax_linalg.triangular_solve(c, bb, left_side=True, lower=True)
        x = lax_linalg.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    else:
        y = lax_linalg.triangular_solve(c, bb, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
        x = lax_linalg.triangular_solve(c, y, left_side=True, lower=False)
    return x[..., 0] if vector else x


# -- LU ---------------------------------------------------------------------------------------------

@eager_jit("overwrite_a", "check_finite")
def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: L (unit diagonal, implied) and U packed in one matrix, and the 0-based row swaps
    (row ``i`` was swapped with row ``piv[i]``), as LAPACK's getrf."""
    del overwrite_a, check_finite
    (a,) = _inexact("lu_factor", a)
    if a.ndim < 2:
        raise MatrixShapeError(f"kiln.scipy.linalg.lu_factor: a must be a matrix, got shape {a.shape}")
    lu_, piv, _ = lax_linalg.lu(a)
    return lu_, piv


def _pivots_to_permutation(piv, m: int):
    """The row order that the swaps ``piv`` make of ``range(m)``."""
    perm = jnp.broadcast_to(jnp.arange(m, dtype=piv.dtype), piv.shape[:-1] + (m,))

    def swap(i, p):
        j = piv[..., i]
        pi = p[..., i]
        pj = jnp.take_along_axis(p, j[..., None], axis=-1)[..., 0]
        cols = jnp.arange(m)
        p = jnp.where(cols == i, pj[..., None], p)
        return jnp.where(cols == j[..., None], pi[..., None], p)

    return fori_loop(0, piv.shape[-1], swap, perm)


@eager_jit("trans", "overwrite_b", "check_finite", sequences=("lu_and_piv",))
def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from ``lu_factor(a)``."""
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"kiln.scipy.linalg.lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    lu_, piv = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    _square("lu_solve", lu_, "lu")
    piv = jnp.asarray(piv)
    m = lu_.shape[-1]
    perm = _pivots_to_permutation(piv, m)
    lu_, bb, vector = _columns("lu_solve", lu_, b)
    perm = jnp.broadcast_to(perm, lu_.shape[:-1])
    x = _nla._lu_solve(lu_, perm, bb) if trans == 0 else _nla._lu_solve_transposed(lu_, perm, bb, trans == 2)
    return x[..., 0] if vector else x


@eager_jit("permute_l", "overwrite_a", "check_finite")
def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``p`` a permutation matrix, ``l`` unit lower, ``u`` upper
    triangular); ``(p @ l, u)`` with ``permute_l``."""
    del overwrite_a, check_finite
    (a,) = _inexact("lu", a)
    if a.ndim < 2:
        raise MatrixShapeError(f"kiln.scipy.linalg.lu: a must be a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    lu_, _, perm = lax_linalg.lu(a)
    l_ = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(lu_[..., :k, :])
    p = (perm[..., None, :] == jnp.arange(m)[:, None]).astype(a.dtype)
    if permute_l:
        return jnp.matmul(p, l_), u
    return p, l_, u


# -- QR, SVD, eigh ----------------------------------------------------------------------------------

@eager_jit("overwrite_a", "lwork", "mode", "pivoting", "check_finite")
def qr(a, overwrite_a: bool = False, lwork: Any = None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR decomposition: ``(q, r)`` (mode 'full' or 'economic') or ``(r,)`` (mode 'r', full ``r``)."""
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"kiln.scipy.linalg.qr: mode must be 'full', 'economic' or 'r', got {mode!r}"
                         + (" ('raw' is not supported, as in JAX)" if mode == "raw" else ""))
    if pivoting:
        raise NotImplementedError("kiln.scipy.linalg.qr: pivoting=True (column-pivoted QR) is not supported; "
                                  "use pivoting=False")
    (a,) = _inexact("qr", a)
    if a.ndim < 2:
        raise MatrixShapeError(f"kiln.scipy.linalg.qr: a must be a matrix, got shape {a.shape}")
    q, r = lax_linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


@eager_jit("mode", "pivoting", "conjugate", "overwrite_a", "overwrite_c")
def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """``(c @ q, r)`` (mode 'right') or ``(q @ c, r)`` (mode 'left') for the economic QR of ``a``."""
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise ValueError(f"kiln.scipy.linalg.qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise NotImplementedError("kiln.scipy.linalg.qr_multiply: pivoting=True is not supported")
    a, c = _inexact("qr_multiply", a, c)
    q, r = qr(a, mode="economic")
    if conjugate:
        q = jnp.conj(q)
    if mode == "right":
        return jnp.matmul(c, q), r  # a 1-D c is a row vector: (M,) @ (M, K) is (K,)
    qc = jnp.matmul(q, c[..., None] if c.ndim == 1 else c)
    return (qc[..., 0] if c.ndim == 1 else qc), r


@eager_jit("full_matrices", "compute_uv", "overwrite_a", "check_finite", "lapack_driver")
def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition ``(u, s, vh)`` (only ``s`` with ``compute_uv=False``)."""
    del overwrite_a, check_finite
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"kiln.scipy.linalg.svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    return _nla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


@eager_jit("lower", "eigvals_only", "overwrite_a", "overwrite_b", "turbo", "eigvals", "type",
           "check_finite")
def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1, check_finite: bool = True):
    """Eigenvalues (ascending) and eigenvectors ``(w, v)`` of a Hermitian matrix (``w`` alone with
    ``eigvals_only``); the ``lower`` (or upper) triangle is read."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("kiln.scipy.linalg.eigh: the generalized problem (b) is not supported, as "
                                  "in JAX")
    if eigvals is not None:
        raise NotImplementedError("kiln.scipy.linalg.eigh: eigvals (a subset of eigenvalues) is not supported, "
                                  "as in JAX; slice the result instead")
    if type != 1:
        raise NotImplementedError(f"kiln.scipy.linalg.eigh: type={type} is not supported (only 1)")
    (a,) = _inexact("eigh", a)
    _square("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


@eager_jit("eigvals_only", "select", "select_range")
def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a", select_range=None,
                     tol: float | None = None, key=None):
    """Eigenvalues of the real symmetric tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``.

    As JAX, only ``eigvals_only=True`` is supported; ``select`` is 'a' (all) or 'i' (the indices
    ``select_range = (lo, hi)``, inclusive). Computed with :func:`eigh` of the dense matrix.
    """
    del tol, key
    if not eigvals_only:
        raise NotImplementedError("kiln.scipy.linalg.eigh_tridiagonal: only eigvals_only=True is supported (as "
                                  "in JAX)")
    if select not in ("a", "i"):
        raise NotImplementedError(f"kiln.scipy.linalg.eigh_tridiagonal: select={select!r} is not supported; use "
                                  "'a' or 'i'")
    d, e = _inexact("eigh_tridiagonal", d, e)
    n = d.shape[-1]
    if e.shape[-1] != n - 1:
        raise ValueError(f"kiln.scipy.linalg.eigh_tridiagonal: e must have {n - 1} entries (one fewer than d), got "
                         f"shape {e.shape}")
    t = jnp.zeros(d.shape + (n,), d.dtype)
    idx = jnp.arange(n)
    t = jnp.where(idx[:, None] == idx[None, :], d[..., :, None], t)
    off = jnp.pad(e, [(0, 0)] * (e.ndim - 1) + [(0, 1)])
    t = jnp.where(idx[:, None] == idx[None, :] + 1, off[..., None, :], t)
    t = jnp.where(idx[:, None] + 1 == idx[None, :], off[..., :, None], t)
    w = eigh(t, eigvals_only=True)
    if select == "i":
        lo, hi = select_range
        w = w[..., int(lo):int(hi) + 1]
    return w


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of a square matrix (stack)."""
    return _nla.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of a square matrix (stack)."""
    return _nla.det(a)


# -- Solvers ----------------------------------------------------------------------------------------

@eager_jit("lower", "overwrite_a", "overwrite_b", "debug", "check_finite", "assume_a")
def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, debug: bool = False,
          check_finite: bool = True, assume_a: str = "gen"):
    """Solve ``a x = b``. ``assume_a='pos'`` uses a Cholesky factorization (``a`` positive definite, its
    ``lower`` or upper triangle read); 'gen', 'sym' and 'her' an LU factorization."""
    del overwrite_a, overwrite_b, debug, check_finite
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"kiln.scipy.linalg.solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got "
                         f"{assume_a!r}")
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    if assume_a == "pos":
        c = lax_linalg.cholesky(a if lower else _mH(a))
        return _cho_solve(c, b, lower=True)
    a, bb, vector = _columns("solve", a, b)
    x = _nla.solve(a, bb)
    return x[..., 0] if vector else x


@eager_jit("trans", "lower", "unit_diagonal", "overwrite_b", "debug", "check_finite")
def solve_triangular(a, b, trans: int | str = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug: Any = None, check_finite: bool = True):
    """Solve ``op(a) x = b`` for triangular ``a``; ``trans``: 0/'N' (``a``), 1/'T' (``a^T``), 2/'C' (``a^H``)."""
    del overwrite_b, debug, check_finite
    codes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
    if trans not in codes:
        raise ValueError(f"kiln.scipy.linalg.solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got "
                         f"{trans!r}")
    t = codes[trans]
    a, b = _inexact("solve_triangular", a, b)
    _square("solve_triangular", a)
    a, bb, vector = _columns("solve_triangular", a, b)
    x = lax_linalg.triangular_solve(a, bb, left_side=True, lower=lower, transpose_a=t > 0, conjugate_a=t == 2,
                                    unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


# -- Matrix exponential -----------------------------------------------------------------------------

def _pade_coefficients(m: int) -> list[float]:
    """The coefficients of the [m/m] Padé approximant of exp, ``b_j = (2m-j)! m! / ((2m)! j! (m-j)!)``,
    scaled so that the last one is 1 (as usual in scaling and squaring)."""
    f = math.factorial
    b = [Fraction(f(2 * m - j) * f(m), f(2 * m) * f(j) * f(m - j)) for j in range(m + 1)]
    return [float(v / b[-1]) for v in b]


# theta_m: the largest 1-norm for which the [m/m] approximant is accurate to the unit roundoff (Higham 2005).
_THETA64 = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1, 9: 2.097847961257068e0,
            13: 5.371920351148152e0}
_THETA32 = {3: 4.258730016922831e-1, 5: 1.880152677804762e0, 7: 3.925724783138660e0}


def _pade_uv(A, m: int, eye):
    """(U, V) with ``exp(A) ~ (V - U)^-1 (V + U)`` for the [m/m] approximant."""
    b = _pade_coefficients(m)
    A2 = jnp.matmul(A, A)
    if m == 13:
        A4 = jnp.matmul(A2, A2)
        A6 = jnp.matmul(A4, A2)
        u = jnp.matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye
        v = jnp.matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
        return jnp.matmul(A, u), v
    powers = [eye, A2]
    while len(powers) <= m // 2:
        powers.append(jnp.matmul(powers[-1], A2))
    u = sum(b[2 * k + 1] * powers[k] for k in range(m // 2 + 1))
    v = sum(b[2 * k] * powers[k] for k in range(m // 2 + 1))
    return jnp.matmul(A, u), v


@eager_jit("upper_triangular", "max_squarings")
def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by Padé approximation with scaling and squaring (Higham 2005): the
    approximant's degree (3 to 13 in float64, 3 to 7 in float32) is picked by the 1-norm, larger norms are
    scaled by ``2**-s`` and squared ``s`` times (at most ``max_squarings``; beyond that the result is NaN).
    ``upper_triangular`` is accepted for JAX's signature (it only allows a faster path there)."""
    del upper_triangular
    (A,) = _inexact("expm", A)
    _square("expm", A, "A")
    n = A.shape[-1]
    eye = jnp.broadcast_to(jnp.eye(n, dtype=A.dtype), A.shape)
    theta = _THETA64 if A.dtype in (np.float64, np.complex128) else _THETA32
    top = max(theta)
    norm = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)[..., None, None]
    s = jnp.maximum(0.0, jnp.ceil(jnp.log2(norm / theta[top])))
    s = jnp.where(norm > 0, s, 0.0)
    scaled = A / (2.0 ** s).astype(A.dtype)
    U, V = _pade_uv(scaled, top, eye)
    for m in sorted(theta, reverse=True)[1:]:
        u, v = _pade_uv(A, m, eye)
        small = norm <= theta[m]
        U, V = jnp.where(small, u, U), jnp.where(small, v, V)
    R = _nla.solve(V - U, V + U)

    def square(i, r):
        return jnp.where(i < s, jnp.matmul(r, r), r)

    R = fori_loop(0, max_squarings, square, R)
    return jnp.where(s > max_squarings, np.nan, R)


@eager_jit("method", "compute_expm")
def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
    """The Fréchet derivative of :func:`expm` at ``A`` in direction ``E`` (and ``expm(A)`` with
    ``compute_expm``), from the exponential of the block matrix ``[[A, E], [0, A]]``."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"kiln.scipy.linalg.expm_frechet: method must be None, 'SPS' or 'blockEnlarge', got "
                         f"{method!r}")
    A, E = _inexact("expm_frechet", A, E)
    _square("expm_frechet", A, "A")
    if E.shape != A.shape:
        raise ValueError(f"kiln.scipy.linalg.expm_frechet: E must have A's shape {A.shape}, got {E.shape}")
    n = A.shape[-1]
    top = jnp.concatenate([A, E], axis=-1)
    bottom = jnp.concatenate([jnp.zeros_like(A), A], axis=-1)
    big = expm(jnp.concatenate([top, bottom], axis=-2))
    L = big[..., :n, n:]
    return (big[..., :n, :n], L) if compute_expm else L


@eager_jit("side", "method", "eps", "max_iterations")
def polar(a, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None):
    """The polar decomposition ``a = u p`` (``side='right'``) or ``a = p u`` ('left'): ``u`` unitary, ``p``
    Hermitian positive semidefinite. Computed from the SVD whichever ``method`` is named."""
    del eps, max_iterations
    if side not in ("right", "left"):
        raise ValueError(f"kiln.scipy.linalg.polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"kiln.scipy.linalg.polar: method must be 'qdwh' or 'svd', got {method!r}")
    (a,) = _inexact("polar", a)
    if a.ndim != 2:
        raise MatrixShapeError(f"kiln.scipy.linalg.polar: a must be a matrix, got shape {a.shape}")
    u, s, vh = _nla.svd(a, full_matrices=False)
    unitary = jnp.matmul(u, vh)
    s = s.astype(a.dtype)
    if side == "right":
        p = jnp.matmul(_mH(vh) * s, vh)
    else:
        p = jnp.matmul(u * s, _mH(u))
    return unitary, p


# -- Schur-based functions (LAPACK gees/geev on the CPU) ---------------------------------------------

@eager_jit("output")
def schur(a, output: str = "real"):
    """The Schur decomposition ``a = Z T Z^H``: returns ``(T, Z)``, ``Z`` unitary.

    ``output='real'`` (for real ``a``): ``T`` is quasi-upper-triangular (a 2x2 block on the diagonal for
    each complex-conjugate eigenvalue pair); ``output='complex'``: ``T`` is upper triangular and complex.
    LAPACK's ``gees`` on the CPU (no GPU implementation, as JAX); not differentiable (as JAX).
    """
    if output not in ("real", "complex"):
        raise ValueError(f"kiln.scipy.linalg.schur: output must be 'real' or 'complex', got {output!r}")
    (a,) = _inexact("schur", a)
    _square("schur", a)
    if output == "complex":
        a = a.astype(dtypes.to_complex_dtype(a.dtype))
    return lax_linalg.schur(a)


def _check_tz(fname: str, T, Z) -> None:
    for name, x in (("T", T), ("Z", Z)):
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise MatrixShapeError(f"{_where(fname)}: {name} must be a square matrix (or a stack of them), got "
                                   f"shape {x.shape}")
    if T.shape[-1] != Z.shape[-1]:
        raise MatrixShapeError(f"{_where(fname)}: T and Z must have the same matrix size, got shapes {T.shape} and "
                               f"{Z.shape}")


def rsf2csf(T, Z, check_finite: bool = True):
    """Convert a real Schur form ``(T, Z)`` (from ``schur(a)``) to the complex one: returns complex
    ``(T, Z)`` with ``T`` upper triangular and the same ``Z T Z^H``.

    Each 2x2 diagonal block (a complex-conjugate eigenvalue pair) is triangularised by a complex Givens
    rotation, from the bottom right up (SciPy's algorithm); the rotation uses the block's eigenvalue with
    the principal square root (the one with positive imaginary part for a standardised block). Batch
    dimensions of ``T`` and ``Z`` broadcast. The loop over the diagonal is unrolled (the program grows
    with the matrix size).
    """
    del check_finite
    T, Z = _inexact("rsf2csf", T, Z)
    _check_tz("rsf2csf", T, Z)
    return _rsf2csf(T, Z)


@eager_jit()
def _rsf2csf(T, Z):
    cdt = dtypes.to_complex_dtype(T.dtype)
    T, Z = T.astype(cdt), Z.astype(cdt)
    batch = np.broadcast_shapes(T.shape[:-2], Z.shape[:-2])
    n = T.shape[-1]
    T = jnp.broadcast_to(T, batch + (n, n))
    Z = jnp.broadcast_to(Z, batch + (n, n))
    eps = float(np.finfo(cdt).eps)
    for m in range(n - 1, 0, -1):
        a, b = T[..., m - 1, m - 1], T[..., m - 1, m]
        c, d = T[..., m, m - 1], T[..., m, m]
        # An eigenvalue of the 2x2 block [[a, b], [c, d]], minus d.
        half = (a - d) / 2
        mu = half + jnp.sqrt(half * half + b * c)
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(c) ** 2).astype(cdt)
        split = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        r = jnp.where(split, r, 1)
        cs, sn = mu / r, c / r
        # G = [[conj(cs), sn], [-sn, cs]]: rows m-1, m of T (columns m-1:) from the left, columns m-1, m of
        # T (rows :m+1) and of Z by G^H from the right.
        g = jnp.stack([jnp.stack([jnp.conj(cs), sn], -1), jnp.stack([-sn, cs], -1)], -2)
        gh = _mH(g)
        rows = jnp.matmul(g, T[..., m - 1:m + 1, m - 1:])
        t_new = T.at[..., m - 1:m + 1, m - 1:].set(rows)
        cols = jnp.matmul(t_new[..., :m + 1, m - 1:m + 1], gh)
        t_new = t_new.at[..., :m + 1, m - 1:m + 1].set(cols)
        z_new = Z.at[..., :, m - 1:m + 1].set(jnp.matmul(Z[..., :, m - 1:m + 1], gh))
        keep = split[..., None, None]
        T = jnp.where(keep, t_new, T)
        Z = jnp.where(keep, z_new, Z)
        T = T.at[..., m, m - 1].set(0)
    return T, Z


def _superdiagonal_mask(n: int, d):
    """``(n, n)`` booleans: the ``d``-th superdiagonal (``d`` may be traced)."""
    i = jnp.arange(n)
    return (i[None, :] - i[:, None]) == d


def _sqrtm_triu(T):
    """The principal square root of an upper triangular ``T`` (Björck and Hammarling's recurrence), one
    superdiagonal per step: with the diagonals below ``d`` filled, ``(U @ U)[i, i + d]`` is exactly the sum
    the recurrence subtracts."""
    n = T.shape[-1]
    diag = jnp.sqrt(jnp.diagonal(T, axis1=-2, axis2=-1))
    U = jnp.where(jnp.eye(n, dtype=bool), diag[..., None, :], 0).astype(T.dtype)
    den = diag[..., :, None] + diag[..., None, :]

    rows = jnp.arange(n)

    def body(d, U):
        # (U @ U)[i, i + d] for every row i, without the matmul (a complex dot is a library call on the CPU, the
        # loop's cost at small n): sum_k U[i, k] U[k, (i + d) mod n]; the wrapped rows are masked off below.
        shifted = jnp.swapaxes(jnp.take(U, (rows + d) % n, axis=-1), -1, -2)
        num = T - jnp.sum(U * shifted, axis=-1)[..., :, None]
        step = jnp.where(num == 0, 0, num / jnp.where(num == 0, 1, den))
        return jnp.where(_superdiagonal_mask(n, d), step, U)

    return fori_loop(1, n, body, U)


def sqrtm(A, blocksize: int = 1):
    """The principal matrix square root, from the complex Schur form (Björck and Hammarling's method):
    always complex, as JAX (SciPy returns a real result when it can). ``blocksize > 1`` raises, as JAX.

    LAPACK's ``gees`` on the CPU; not differentiable (as JAX).
    """
    if blocksize > 1:
        raise NotImplementedError("kiln.scipy.linalg.sqrtm: blocksize > 1 (the blocked algorithm) is not "
                                  "implemented, as in JAX; use blocksize=1")
    (A,) = _inexact("sqrtm", A)
    _square("sqrtm", A, "A")
    return _sqrtm(A)


@eager_jit()
def _sqrtm(A):
    T, Z = schur(A, output="complex")
    return jnp.matmul(jnp.matmul(Z, _sqrtm_triu(T)), _mH(Z))


def _parlett(F, T):
    """Parlett's recurrence (Golub & Van Loan, Algorithm 11.1.1) for ``f(T)`` of an upper triangular ``T``
    given its diagonal ``F``: one superdiagonal per step, where ``(T @ F - F @ T)[i, j]`` is exactly the
    recurrence's numerator. Returns ``(F, smallest |T_jj - T_ii| used)``."""
    n = T.shape[-1]
    tdiag = jnp.diagonal(T, axis1=-2, axis2=-1)
    den = tdiag[..., None, :] - tdiag[..., :, None]  # T_jj - T_ii

    def body(d, carry):
        F, minden = carry
        mask = _superdiagonal_mask(n, d)
        s = jnp.matmul(T, F) - jnp.matmul(F, T)
        step = jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s)
        used = jnp.min(jnp.where(mask, jnp.abs(den), jnp.inf), axis=(-2, -1))
        return jnp.where(mask, step, F), jnp.minimum(minden, used)

    minden0 = jnp.abs(T[..., 0, 0])
    return fori_loop(1, n, body, (F, minden0))


def funm(A, func, disp: bool = True):
    """The matrix function ``func(A)`` for a scalar function ``func`` (applied elementwise to kiln arrays),
    by Parlett's recurrence on the complex Schur form (as SciPy and JAX). Always complex, as JAX.

    ``disp=False`` returns ``(F, errest)`` with SciPy's error estimate. Meant for matrices with distinct
    eigenvalues (repeated ones make the recurrence divide by zero; that entry is then left undivided, as
    JAX). LAPACK's ``gees`` on the CPU; not differentiable (as JAX).
    """
    (A,) = _inexact("funm", A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise MatrixShapeError(f"kiln.scipy.linalg.funm: A must be a square matrix, got shape {A.shape}")
    if not callable(func):
        raise TypeError(f"kiln.scipy.linalg.funm: func must be a callable, got {type(func).__name__}")
    disp = bool(disp)
    T, Z, diagonal = _funm_schur(A)
    if A.shape[-1] == 0:
        return (T, jnp.zeros((), T.real.dtype)) if not disp else T
    # func (the user's, any callable: no static option a compiled call hashes) runs on its own, between two
    # compiled programs, as in JAX.
    return _funm_parlett(T, Z, jnp.asarray(func(diagonal)), disp)


@eager_jit()
def _funm_schur(A):
    """The complex Schur form ``(T, Z)`` of ``A`` and ``T``'s diagonal."""
    T, Z = rsf2csf(*schur(A))
    return T, Z, jnp.diagonal(T)


@eager_jit("disp")
def _funm_parlett(T, Z, fd, disp):
    n = T.shape[-1]
    fd = fd.astype(T.dtype)
    F = jnp.where(jnp.eye(n, dtype=bool), fd[None, :], 0).astype(T.dtype)
    F, minden = _parlett(F, T)
    F = jnp.matmul(jnp.matmul(Z, F), _mH(Z))
    if disp:
        return F
    tol = float(np.finfo(T.real.dtype).eps)
    minden = jnp.where(minden == 0, tol, minden)
    err = jnp.where(jnp.any(jnp.isinf(F)), np.inf,
                    jnp.minimum(1, jnp.maximum(tol, (tol / minden) * _nla.norm(jnp.triu(T, 1), 1))))
    return F, err


def _sylvester_triangular(R, L, F):
    """``Y`` with ``R Y + Y L = F`` for upper triangular ``R`` (m x m) and lower triangular ``L`` (n x n): one
    anti-diagonal level ``(m-1-i) + (n-1-j)`` per step, from the bottom right; with the finished levels
    filled and the rest zero, ``(R @ Y + Y @ L)[i, j]`` is exactly what the equation subtracts."""
    m, n = F.shape[-2:]
    i = jnp.arange(m)[:, None]
    j = jnp.arange(n)[None, :]
    level = (m - 1 - i) + (n - 1 - j)
    den = jnp.diagonal(R, axis1=-2, axis2=-1)[..., :, None] + jnp.diagonal(L, axis1=-2, axis2=-1)[..., None, :]

    def body(k, Y):
        step = (F - jnp.matmul(R, Y) - jnp.matmul(Y, L)) / den
        return jnp.where(level == k, step, Y)

    return fori_loop(0, m + n - 1, body, jnp.zeros_like(F))


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """The solution ``X`` of ``A X + X B = C`` (``A`` m x m, ``B`` n x n, ``C`` m x n; batch dimensions
    broadcast).

    ``method='schur'`` (default): Bartels-Stewart on the complex Schur forms of ``A`` and ``B^H`` (LAPACK
    ``gees``); ``'eigen'``: from the eigendecompositions (LAPACK ``geev``; faster, less accurate for
    non-normal matrices). As JAX, the result is NaN when some ``|eig(A)_i + eig(B)_j| < tol`` (no unique
    solution), and real when ``C`` is real. CPU only; not differentiable (as JAX).
    """
    if method not in ("schur", "eigen"):
        raise ValueError(f"kiln.scipy.linalg.solve_sylvester: method must be 'schur' or 'eigen', got {method!r}")
    A, B, C = _inexact("solve_sylvester", A, B, C)
    if C.ndim < 2 or A.ndim < 2 or B.ndim < 2:
        raise MatrixShapeError(f"kiln.scipy.linalg.solve_sylvester: A, B and C must be matrices (or stacks), got "
                               f"shapes {A.shape}, {B.shape}, {C.shape}")
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise MatrixShapeError(f"kiln.scipy.linalg.solve_sylvester: incompatible shapes: A {A.shape} must be "
                               f"(..., m, m), B {B.shape} (..., n, n) and C {C.shape} (..., m, n)")
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    A = jnp.broadcast_to(A, batch + (m, m))
    B = jnp.broadcast_to(B, batch + (n, n))
    C = jnp.broadcast_to(C, batch + (m, n))
    return _solve_sylvester(A, B, C, method, tol)


@eager_jit("method")
def _solve_sylvester(A, B, C, method, tol):
    cdt = dtypes.to_complex_dtype(A.dtype)
    if method == "schur":
        R, U = schur(A, output="complex")
        S, V = schur(_mH(B), output="complex")
        L = _mH(S)
        F = jnp.matmul(jnp.matmul(_mH(U), C.astype(cdt)), V)
        X = jnp.matmul(jnp.matmul(U, _sylvester_triangular(R, L, F)), _mH(V))
        wa, wb = jnp.diagonal(R, axis1=-2, axis2=-1), jnp.diagonal(L, axis1=-2, axis2=-1)
    else:
        wa, ua = _nla.eig(A)
        wb, ub = _nla.eig(B)
        F = _nla.solve(ua, jnp.matmul(C.astype(cdt), ub))
        X = jnp.matmul(jnp.matmul(ua, F / (wa[..., :, None] + wb[..., None, :])), _nla.inv(ub))
    if not jnp.iscomplexobj(C):
        X = X.real
    singular = jnp.any(jnp.abs(wa[..., :, None] + wb[..., None, :]) < tol, axis=(-2, -1))
    return jnp.where(singular[..., None, None], np.nan, X)


@eager_jit("calc_q", "overwrite_a", "check_finite")
def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Hessenberg form ``a = Q H Q^H`` (``H`` zero below the first subdiagonal): ``H``, or ``(H, Q)``
    when ``calc_q``. Householder reflections with LAPACK ``gehrd``'s conventions, built from kiln
    operations (``kiln.lax.linalg.hessenberg``): it runs on every backend and is differentiable, unlike
    JAX's (a CPU-only LAPACK call); the program grows with the matrix size (meant for small and medium
    matrices)."""
    del overwrite_a, check_finite
    (a,) = _inexact("hessenberg", a)
    _square("hessenberg", a)
    if a.shape[-1] <= 1:
        return (a, jnp.ones_like(a)) if calc_q else a
    return _hessenberg(a, bool(calc_q))


@eager_jit("calc_q")
def _hessenberg(a, calc_q):
    packed, taus = lax_linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    q = jnp.pad(q, [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)])
    return h, q.at[..., 0, 0].set(1)


# -- Special matrices -------------------------------------------------------------------------------

@eager_jit()
def block_diag(*arrs):
    """The block diagonal matrix of the given (at most two-dimensional) arrays."""
    if not arrs:
        return jnp.zeros((1, 0))
    check_arraylike(_where("block_diag"), *arrs)
    bad = [i for i, a in enumerate(arrs) if np.ndim(a) > 2]
    if bad:
        raise ValueError(f"kiln.scipy.linalg.block_diag: arguments {bad} have more than two dimensions")
    dtype = dtypes.result_type(*arrs)
    blocks = [jnp.atleast_2d(jnp.asarray(a, dtype=dtype)) for a in arrs]
    total = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        rows.append(jnp.pad(b, [(0, 0), (col, total - col - b.shape[1])]))
        col += b.shape[1]
    return jnp.concatenate(rows, axis=0)


def _vec(fname: str, x):
    check_arraylike(_where(fname), x)
    return jnp.atleast_1d(jnp.asarray(x))


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (default ``conj(c)``; ``r[0]`` is
    ignored); batched over leading dimensions."""
    c = _vec("toeplitz", c)
    r = jnp.conj(c) if r is None else _vec("toeplitz", r)
    c, r = _inexact_or_same(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    c, r = jnp.broadcast_to(c, batch + (m,)), jnp.broadcast_to(r, batch + (n,))
    vals = jnp.concatenate([jnp.flip(r[..., 1:], axis=-1), c], axis=-1)
    idx = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
    return jnp.take(vals, jnp.asarray(idx), axis=-1)


def _inexact_or_same(*xs):
    dtype = dtypes.result_type(*xs)
    return [x.astype(dtype) for x in xs]


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (default zeros; ``r[0]`` is ignored)."""
    c = _vec("hankel", c)
    r = jnp.zeros_like(c) if r is None else _vec("hankel", r)
    c, r = _inexact_or_same(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    c, r = jnp.broadcast_to(c, batch + (m,)), jnp.broadcast_to(r, batch + (n,))
    vals = jnp.concatenate([c, r[..., 1:]], axis=-1)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return jnp.take(vals, jnp.asarray(idx), axis=-1)


def circulant(c):
    """The circulant matrix with first column ``c``: ``out[i, j] = c[(i - j) % n]``."""
    c = _vec("circulant", c)
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return jnp.take(c, jnp.asarray(idx), axis=-1)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest degree first)."""
    check_arraylike(_where("companion"), a)
    (a,) = _inexact("companion", jnp.atleast_1d(jnp.asarray(a)))
    n = a.shape[-1]
    if n < 2:
        raise ValueError("kiln.scipy.linalg.companion: a must have at least two coefficients, got "
                         f"shape {a.shape}")
    first = -a[..., 1:] / a[..., :1]
    sub = jnp.eye(n - 1, n - 1, -1, dtype=a.dtype)
    rows = jnp.broadcast_to(sub[1:], a.shape[:-1] + (n - 2, n - 1))
    return jnp.concatenate([first[..., None, :], rows], axis=-2)


def fiedler(a):
    """The Fiedler matrix ``|a[i] - a[j]|``."""
    a = _vec("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients ``a`` (highest degree first): a
    pentadiagonal matrix whose eigenvalues are the polynomial's roots (laid out as SciPy's)."""
    check_arraylike(_where("fiedler_companion"), a)
    (a,) = _inexact("fiedler_companion", jnp.atleast_1d(jnp.asarray(a)))
    n = a.shape[-1]
    if n == 0:
        raise ValueError("kiln.scipy.linalg.fiedler_companion: a must have at least one coefficient")
    m = n - 1
    c = -a[..., 1:] / a[..., :1]
    entries = [(0, 0, 0)] if m >= 1 else []  # (row, column, index into c, or -1 for a one)
    entries += [((k - 2, k - 1) if k % 2 == 0 else (k - 1, k - 2)) + (k - 1,) for k in range(2, m + 1)]
    entries += [(1, 0, -1)] if m >= 2 else []
    entries += [(r, r + 2, -1) for r in range(0, m - 2, 2)] + [(r, r - 2, -1) for r in range(3, m, 2)]
    mask = np.zeros((len(entries), m, m))
    for e, (i, j, _) in enumerate(entries):
        mask[e, i, j] = 1
    vals = jnp.stack([c[..., k] if k >= 0 else jnp.ones(c.shape[:-1], a.dtype) for _, _, k in entries], axis=-1) \
        if entries else jnp.zeros(c.shape[:-1] + (0,), a.dtype)
    return jnp.sum(vals[..., :, None, None] * jnp.asarray(mask, dtype=a.dtype), axis=-3)


def leslie(f, s):
    """The Leslie matrix: fecundities ``f`` on the first row, survival rates ``s`` on the sub-diagonal."""
    f, s = _inexact("leslie", f, s)
    f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
    n = f.shape[-1]
    if n < 2:
        raise ValueError(f"kiln.scipy.linalg.leslie: f must have at least two entries, got shape {f.shape}")
    if s.shape[-1] != n - 1:
        raise ValueError(f"kiln.scipy.linalg.leslie: s must have {n - 1} entries (one fewer than f), got shape "
                         f"{s.shape}")
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    f, s = jnp.broadcast_to(f, batch + (n,)), jnp.broadcast_to(s, batch + (n - 1,))
    sub = s[..., :, None] * jnp.eye(n - 1, n, dtype=f.dtype)
    return jnp.concatenate([f[..., None, :], sub], axis=-2)


@eager_jit("n", "mode")
def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix ``A`` with ``A @ v == kiln.numpy.convolve(a, v, mode)`` for ``v`` of length ``n``."""
    n = int(n)
    if n <= 0:
        raise ValueError(f"kiln.scipy.linalg.convolution_matrix: n must be positive, got {n}")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"kiln.scipy.linalg.convolution_matrix: mode must be 'full', 'valid' or 'same', got "
                         f"{mode!r}")
    a = _vec("convolution_matrix", a)
    m = a.shape[-1]
    if m < 1:
        raise ValueError("kiln.scipy.linalg.convolution_matrix: a must not be empty")
    full_rows = m + n - 1
    if mode == "full":
        start, rows = 0, full_rows
    elif mode == "same":
        rows = max(m, n)
        start = (full_rows - rows) // 2
    else:
        rows = max(m, n) - min(m, n) + 1
        start = min(m, n) - 1
    i = np.arange(start, start + rows)[:, None] - np.arange(n)[None, :]
    valid = (i >= 0) & (i < m)
    vals = jnp.take(a, jnp.asarray(np.clip(i, 0, m - 1)), axis=-1)
    return jnp.where(jnp.asarray(valid), vals, jnp.zeros((), a.dtype))


def _static_n(fname: str, n) -> int:
    try:
        return int(n)
    except TypeError:
        raise TypeError(f"kiln.scipy.linalg.{fname}: n must be a static Python int, got {type(n).__name__}") from None


def _float_const(values: np.ndarray):
    return jnp.asarray(values, dtype=dtypes.default_float_dtype())


def hilbert(n: int):
    """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)``."""
    n = _static_n("hilbert", n)
    i = np.arange(n, dtype=np.float64)
    return _float_const(1.0 / (i[:, None] + i[None, :] + 1))


def invhilbert(n: int, exact: bool = False):
    """The inverse of the ``n x n`` Hilbert matrix (floats; ``exact=True`` is not supported)."""
    if exact:
        raise NotImplementedError("kiln.scipy.linalg.invhilbert: exact=True is not supported; use exact=False")
    n = _static_n("invhilbert", n)
    f = math.comb
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * f(n + i, n - j - 1) * f(n + j, n - i - 1) * f(s, i) ** 2)
    return _float_const(out)


def _pascal_lower(n: int) -> np.ndarray:
    return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], dtype=np.float64)


def pascal(n: int, kind: str = "symmetric", exact: bool = True):
    """The ``n x n`` Pascal matrix ('symmetric', 'lower' or 'upper'), as floats."""
    n = _static_n("pascal", n)
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"kiln.scipy.linalg.pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    L = _pascal_lower(n)
    out = {"lower": L, "upper": L.T, "symmetric": L @ L.T}[kind]
    return _float_const(out)


def invpascal(n: int, kind: str = "symmetric", exact: bool = True):
    """The inverse of the ``n x n`` Pascal matrix, as floats."""
    n = _static_n("invpascal", n)
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"kiln.scipy.linalg.invpascal: kind must be 'symmetric', 'lower' or 'upper', got "
                         f"{kind!r}")
    i = np.arange(n)
    Li = _pascal_lower(n) * (-1.0) ** (i[:, None] - i[None, :])
    out = {"lower": Li, "upper": Li.T, "symmetric": Li.T @ Li}[kind]
    return _float_const(out)


def helmert(n: int, full: bool = False):
    """The Helmert matrix of order ``n`` (``n - 1`` rows, or ``n`` with ``full``)."""
    n = _static_n("helmert", n)
    if n < 1:
        raise ValueError(f"kiln.scipy.linalg.helmert: n must be >= 1, got {n}")
    H = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    H[0] = 1
    d[0] = n
    out = H / np.sqrt(d)[:, None]
    return _float_const(out if full else out[1:])


def hadamard(n: int, dtype=int):
    """The ``n x n`` Hadamard matrix (Sylvester's construction; ``n`` a power of 2)."""
    n = _static_n("hadamard", n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"kiln.scipy.linalg.hadamard: n must be a positive power of 2, got {n}")
    H = np.ones((1, 1))
    while H.shape[0] < n:
        H = np.block([[H, H], [H, -H]])
    return jnp.asarray(H, dtype=dtypes.canonicalize_dtype(np.dtype(dtype)))


@eager_jit("n", "scale", "dtype")
def dft(n: int, scale: str | None = None, *, dtype=None):
    """The ``n x n`` discrete Fourier transform matrix ``exp(-2 pi i j k / n)`` (scaled by ``1/sqrt(n)``
    or ``1/n`` with ``scale='sqrtn'`` or ``'n'``)."""
    n = _static_n("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"kiln.scipy.linalg.dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    if dtype is None:
        dtype = np.complex128 if dtypes.default_float_dtype() == np.float64 else np.complex64
    # One program computing in ``dtype``, as JAX's jitted dft: the same rounding, last bits and signs of zero.
    k = jnp.arange(n, dtype=dtype)
    m = jnp.exp(-2j * np.pi * k[:, None] * k[None, :] / n)
    if scale == "sqrtn":
        m = m / jnp.sqrt(n)
    elif scale == "n":
        m = m / n
    return m
