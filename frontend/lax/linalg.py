"""Linear-algebra primitives: ``kiln.lax.linalg`` (as ``jax.lax.linalg``).

Primitives (each takes a stack of matrices: any leading batch dimensions, the matrix in the last two)
----------------------------------------------------------------------------------------------------
- ``cholesky``: lower Cholesky factor of a Hermitian positive-definite matrix (reads the lower triangle).
- ``lu``: LU with partial pivoting, ``a[perm] = L @ U``; results ``(lu, pivots, permutation)``.
- ``qr``: Householder QR, ``(q, r)``, complete or reduced.
- ``eigh``: eigenvalues (ascending) and eigenvectors of a Hermitian matrix (reads one triangle).
- ``svd``: singular values (descending) and optionally the singular vectors.
- ``eig``: eigenvalues and left/right eigenvectors of a general (nonsymmetric) matrix (complex results).
- ``schur``: the Schur form ``T`` (and the Schur vectors ``Q``) with ``x = Q T Q^H``.
- ``triangular_solve``: solves ``op(a) @ x = b`` or ``x @ op(a) = b`` for triangular ``a``.

How they run (chosen when the program is lowered for a device; see ``kiln.lowering.rules.linalg``):

- **CPU**: jaxlib's LAPACK kernels (``getrf``, ``potrf``, ``geqrf``+``orgqr``, ``syevd``/``heevd``,
  ``gesdd``, ``trsm``) as typed-FFI custom calls, which ``kiln.runtime`` registers with XLA on first use.
  jaxlib binds those kernels to SciPy's LAPACK, so this path needs SciPy installed.
- **Everywhere else** (GPU, TPU; or CPU without SciPy): kiln's portable implementations, written in
  plain StableHLO with ``stablehlo.while`` loops over the matrix size (no size limit, no unrolling):
  right-looking LU with partial pivoting, Cholesky, row-by-row substitution, Householder QR, parallel
  (round-robin) two-sided Jacobi for ``eigh``, one-sided Jacobi for ``svd``. They are meant for small
  and medium matrices (the Jacobi methods cost O(n^3) per sweep and take ~10 sweeps) and support real
  dtypes only. ``eig`` and ``schur`` have no portable implementation: they need LAPACK (``geev``,
  ``gees``) on CPU, and lowering them for another backend raises an error saying how to move the
  computation to the CPU.

Failures follow JAX, not NumPy: nothing raises at run time. A singular matrix gives an LU factor with a
zero on the diagonal (so ``det`` is 0 and ``inv``/``solve`` give inf/NaN); ``cholesky`` of a matrix
that is not positive definite, and ``eigh``/``svd`` when LAPACK reports no convergence, give NaN.
"""
from __future__ import annotations

import enum
import warnings
from typing import Any, Callable

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.errors import MatrixShapeError
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api

__all__ = ["cholesky", "lu", "qr", "eigh", "svd", "triangular_solve", "cholesky_p", "lu_p", "qr_p", "eigh_p",
           "svd_p", "triangular_solve_p", "eig", "eig_p", "EigImplementation", "schur", "schur_p",
           "EighImplementation", "SvdAlgorithm", "cholesky_update", "hessenberg",
           "householder_product", "lu_pivots_to_permutation", "ormqr", "qdwh", "symmetric_product", "tridiagonal",
           "tridiagonal_solve"]

_SUPPORTED = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)
_REAL = {dtypes.float32: dtypes.float32, dtypes.float64: dtypes.float64,
         dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}


def _check_matrix(fname: str, x: ShapedArray, *, square: bool = False, what: str = "") -> None:
    what = what or "its operand"
    if x.dtype not in _SUPPORTED:
        raise TypeError(f"kiln.lax.linalg.{fname}: {what} must be float32, float64, complex64 or complex128, "
                        f"got {x.dtype.name} (convert it first; lax does no implicit promotion)")
    if x.ndim < 2:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must have at least 2 dimensions (a stack of "
                               f"matrices), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise MatrixShapeError(f"kiln.lax.linalg.{fname}: {what} must be square in its last two dimensions, got "
                               f"shape {x.shape}")


def _matrix(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, False)


# -- cholesky ------------------------------------------------------------------------------------

def _cholesky_rule(x: ShapedArray) -> ShapedArray:
    _check_matrix("cholesky", x, square=True)
    return _matrix(x)


cholesky_p = Primitive("cholesky", _cholesky_rule)


def _symmetrize(x):
    """``(x + x^H) / 2`` over the last two dimensions."""
    aval = abstractify(x)
    perm = tuple(range(aval.ndim - 2)) + (aval.ndim - 1, aval.ndim - 2)
    xt = api.transpose(x, perm)
    if aval.dtype.kind == "c":
        from .special import conj
        xt = conj(xt)
    return api.mul(api.add(x, xt), 0.5)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower-triangular Cholesky factor ``L`` with ``x = L @ L^H``.

    With ``symmetrize_input`` (the default, as JAX) the factor of ``(x + x^H) / 2`` is computed;
    otherwise only the lower triangle of ``x`` is read. A matrix that is not positive definite gives
    NaNs (no exception).
    """
    aval = abstractify(x)
    _check_matrix("cholesky", aval, square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


# -- lu ------------------------------------------------------------------------------------------

def _lu_rule(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lu", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    return [_matrix(x), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32)]


lu_p = Primitive("lu", _lu_rule, multiple_results=True)


def lu(x):
    """LU decomposition with partial pivoting of a stack of ``m x n`` matrices.

    Returns ``(lu, pivots, permutation)``: ``lu`` holds ``L`` (unit lower triangle, diagonal implied)
    and ``U`` (upper triangle); ``pivots[i]`` is the row swapped with row ``i`` at step ``i``
    (0-based, int32); ``permutation`` is the resulting row order, so that ``x[..., permutation, :] ==
    L @ U``.
    """
    return tuple(lu_p.bind(x))


# -- qr ------------------------------------------------------------------------------------------

def _qr_rule(x: ShapedArray, *, full_matrices: bool) -> list[ShapedArray]:
    _check_matrix("qr", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = m if full_matrices else min(m, n)
    return [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]


qr_p = Primitive("qr", _qr_rule, multiple_results=True)


def qr(x, *, full_matrices: bool = True, pivoting: bool = False):
    """QR decomposition ``x = q @ r`` of a stack of ``m x n`` matrices (Householder reflections).

    ``full_matrices=True``: ``q`` is ``m x m`` and ``r`` is ``m x n``; otherwise ``q`` is ``m x k`` and
    ``r`` is ``k x n`` with ``k = min(m, n)``. Signs follow LAPACK on CPU (the diagonal of ``r`` may be
    negative).
    """
    if pivoting:
        raise NotImplementedError("kiln.lax.linalg.qr: pivoting=True (column-pivoted QR) is not supported")
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# -- eigh ----------------------------------------------------------------------------------------

def _eigh_rule(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("eigh", x, square=True)
    return [_matrix(x), ShapedArray(x.shape[:-1], _REAL[x.dtype])]


eigh_p = Primitive("eigh", _eigh_rule, multiple_results=True)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index: tuple[int, int] | None = None, implementation: Any = None):
    """Eigendecomposition of a Hermitian matrix: returns ``(v, w)`` with ``x @ v == v * w``.

    ``w`` (real, ascending) are the eigenvalues and the columns of ``v`` the eigenvectors. Only the
    ``lower`` (or upper) triangle is read, after symmetrizing with ``(x + x^H) / 2`` when
    ``symmetrize_input`` (the default, as JAX). ``subset_by_index=(lo, hi)`` keeps eigenpairs ``lo`` to
    ``hi - 1`` (all are computed); ``implementation`` (an ``EighImplementation``) is accepted and ignored.
    """
    _check_implementation("eigh", "implementation", implementation, "EighImplementation")
    if not sort_eigenvalues:
        raise NotImplementedError("kiln.lax.linalg.eigh: sort_eigenvalues=False is not supported (the "
                                  "eigenvalues always come in ascending order)")
    _check_matrix("eigh", abstractify(x), square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower))
    if subset_by_index is not None:
        lo, hi = _subset("eigh", subset_by_index, abstractify(w).shape[-1])
        v, w = _take_last(v, lo, hi), _take_last(w, lo, hi)
    return v, w


# -- eig -----------------------------------------------------------------------------------------

class EigImplementation(enum.Enum):
    """The implementation of ``eig`` (as ``jax.lax.linalg.EigImplementation``). kiln has LAPACK only
    (``geev`` on the CPU); ``CUSOLVER`` and ``MAGMA`` (JAX's GPU kernels) raise an error."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


def _eig_rule(x: ShapedArray, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool,
              enable_eigvec_derivs: bool, implementation: Any) -> list[ShapedArray]:
    _check_matrix("eig", x, square=True)
    c = dtypes.to_complex_dtype(x.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray(x.shape[:-1], c)] + [ShapedArray(x.shape, c) for _ in range(count)]


eig_p = Primitive("eig", _eig_rule, multiple_results=True)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation: EigImplementation | None = None,
        use_magma: bool | None = None) -> list:
    """Eigendecomposition of a general (nonsymmetric) square matrix (stack), by LAPACK's ``geev`` on CPU.

    Returns a list ``[w, vl, vr]``: the eigenvalues ``w`` (``(..., n)``), then the left eigenvectors
    ``vl`` (``vl[..., :, j]^H x = w[j] vl[..., :, j]^H``) if ``compute_left_eigenvectors`` and the right
    eigenvectors ``vr`` (``x vr[..., :, j] = w[j] vr[..., :, j]``) if ``compute_right_eigenvectors``. All
    are complex (complex64 for float32 input, complex128 for float64). Eigenvectors are normalised as
    LAPACK does: unit 2-norm, largest component real. A failed decomposition gives NaNs (no exception).

    Derivatives: the eigenvalues are differentiable; eigenvectors only with ``enable_eigvec_derivs=True``
    (valid for distinct eigenvalues, as JAX). There is no GPU/TPU implementation: on another backend
    the lowering raises an error saying how to run it on the CPU.
    """
    if use_magma is not None:
        warnings.warn("kiln.lax.linalg.eig: use_magma is deprecated (as in JAX); use implementation= instead",
                      DeprecationWarning, stacklevel=2)
        if use_magma:
            implementation = EigImplementation.MAGMA
    _check_eig_implementation(implementation)
    _check_matrix("eig", abstractify(x), square=True)
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs), implementation=None))


def _check_eig_implementation(implementation: Any) -> None:
    if implementation is None or implementation is EigImplementation.LAPACK:
        return
    if isinstance(implementation, EigImplementation):
        raise ValueError(f"kiln.lax.linalg.eig: implementation={implementation} is not available in kiln (JAX's "
                         "GPU kernels); kiln computes eig with LAPACK on the CPU only: pass None or "
                         "EigImplementation.LAPACK")
    raise TypeError(f"kiln.lax.linalg.eig: implementation must be None or a kiln.lax.linalg.EigImplementation, "
                    f"got {implementation!r}")


# -- schur ---------------------------------------------------------------------------------------

def _schur_rule(x: ShapedArray, *, compute_schur_vectors: bool, sort_eig_vals: bool,
                select_callable: Any) -> list[ShapedArray]:
    _check_matrix("schur", x, square=True)
    if sort_eig_vals:
        raise NotImplementedError(_SCHUR_SORT)
    return [_matrix(x)] * (2 if compute_schur_vectors else 1)


_SCHUR_SORT = ("kiln.lax.linalg.schur: sort_eig_vals=True (LAPACK gees's eigenvalue ordering with a "
               "select_callable) is not supported, as in JAX; sort the eigenvalues afterwards, or reorder with "
               "scipy.linalg.schur(sort=...) outside kiln")

schur_p = Primitive("schur", _schur_rule, multiple_results=True)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Callable[..., Any] | None = None):
    """Schur decomposition ``x = Q T Q^H`` of a square matrix (stack), by LAPACK's ``gees`` on CPU.

    Returns ``(T, Q)``, or only ``T`` when ``compute_schur_vectors=False``. For real input ``T`` is
    quasi-upper-triangular (2x2 blocks on the diagonal for complex-conjugate eigenvalue pairs); for
    complex input it is upper triangular. ``sort_eig_vals=True`` raises (as JAX, whose gees lowering has no
    sorting); ``select_callable`` is only meaningful with sorting and is otherwise ignored, as in JAX.
    Not differentiable (as JAX). CPU only: on another backend the lowering raises an error saying how to
    run it on the CPU.
    """
    if sort_eig_vals:
        raise NotImplementedError(_SCHUR_SORT)
    if select_callable is not None and not callable(select_callable):
        raise TypeError(f"kiln.lax.linalg.schur: select_callable must be None or a callable, got {select_callable!r}")
    outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors), sort_eig_vals=False,
                        select_callable=None)
    return tuple(outs) if compute_schur_vectors else outs[0]


# -- svd -----------------------------------------------------------------------------------------

def _svd_rule(x: ShapedArray, *, full_matrices: bool, compute_uv: bool) -> list[ShapedArray]:
    _check_matrix("svd", x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    s = ShapedArray(batch + (k,), _REAL[x.dtype])
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, ku), x.dtype), ShapedArray(batch + (kv, n), x.dtype)]


svd_p = Primitive("svd", _svd_rule, multiple_results=True)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index: tuple[int, int] | None = None,
        algorithm: Any = None):
    """Singular value decomposition ``x = u @ diag(s) @ vh`` of a stack of ``m x n`` matrices.

    Returns ``(u, s, vh)`` (``s`` real and descending), or only ``s`` when ``compute_uv=False``.
    ``full_matrices=False`` gives the reduced ``u`` (``m x k``) and ``vh`` (``k x n``), ``k = min(m, n)``.
    ``subset_by_index=(lo, hi)`` keeps singular triplets ``lo`` to ``hi - 1`` (all are computed; needs
    ``full_matrices=False`` when computing vectors, as JAX); ``algorithm`` (an ``SvdAlgorithm``) is
    accepted and ignored.
    """
    _check_implementation("svd", "algorithm", algorithm, "SvdAlgorithm")
    if subset_by_index is not None and compute_uv and full_matrices:
        raise ValueError("kiln.lax.linalg.svd: subset_by_index needs full_matrices=False when compute_uv=True")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset_by_index is not None:
        lo, hi = _subset("svd", subset_by_index, abstractify(outs[0]).shape[-1])
        outs = [_take_last(outs[0], lo, hi)] + ([_take_last(outs[1], lo, hi), _take_rows(outs[2], lo, hi)]
                                                if compute_uv else [])
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def _check_implementation(fname: str, what: str, value: Any, enum_name: str) -> None:
    from . import linalg_composed
    if value is not None and not isinstance(value, getattr(linalg_composed, enum_name)):
        raise TypeError(f"kiln.lax.linalg.{fname}: {what} must be None or a kiln.lax.linalg.{enum_name}, got "
                        f"{value!r}")


def _subset(fname: str, subset: Any, k: int) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in subset)
    except (TypeError, ValueError):
        raise TypeError(f"kiln.lax.linalg.{fname}: subset_by_index must be a pair (lo, hi), got {subset!r}") from None
    if not 0 <= lo <= hi <= k:
        raise ValueError(f"kiln.lax.linalg.{fname}: subset_by_index {subset!r} must satisfy 0 <= lo <= hi <= {k}")
    return lo, hi


def _take_last(x, lo: int, hi: int):
    s = abstractify(x).shape
    return api.slice(x, (0,) * (len(s) - 1) + (lo,), s[:-1] + (hi,))


def _take_rows(x, lo: int, hi: int):
    s = abstractify(x).shape
    return api.slice(x, (0,) * (len(s) - 2) + (lo, 0), s[:-2] + (hi, s[-1]))


# -- triangular_solve ----------------------------------------------------------------------------

def _triangular_solve_rule(a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool, transpose_a: bool,
                           conjugate_a: bool, unit_diagonal: bool) -> ShapedArray:
    _check_matrix("triangular_solve", a, square=True, what="a")
    _check_matrix("triangular_solve", b, what="b")
    if a.dtype != b.dtype:
        raise TypeError(f"kiln.lax.linalg.triangular_solve: a and b must have one dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"kiln.lax.linalg.triangular_solve: a and b must have the same batch dimensions, got "
                         f"shapes {a.shape} and {b.shape}")
    n = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != n:
        side = "rows" if left_side else "columns"
        raise ValueError(f"kiln.lax.linalg.triangular_solve: b must have {n} {side} to match a of shape "
                         f"{a.shape} (left_side={left_side}), got shape {b.shape}")
    return _matrix(b)


triangular_solve_p = Primitive("triangular_solve", _triangular_solve_rule)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """Solve a triangular system: ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` (JAX's default).

    ``op(a)`` is ``a``, its transpose (``transpose_a``), its conjugate (``conjugate_a``) or both; only the
    ``lower`` (or upper) triangle of ``a`` is read, and its diagonal is taken as ones when
    ``unit_diagonal``. ``a`` is ``(..., n, n)``, ``b`` is ``(..., n, k)`` (left side) or ``(..., k, n)``.
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


from .linalg_composed import (  # noqa: E402  (functions over the primitives above)
    EighImplementation,
    SvdAlgorithm,
    cholesky_update,
    hessenberg,
    householder_product,
    lu_pivots_to_permutation,
    ormqr,
    qdwh,
    symmetric_product,
    tridiagonal,
    tridiagonal_solve,
)
