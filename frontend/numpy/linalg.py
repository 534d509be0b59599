"""kiln.numpy.linalg: NumPy's linear algebra with JAX's semantics.

The decompositions are kiln primitives (``kiln.lax.linalg``: ``lu``, ``cholesky``, ``qr``, ``eigh``,
``svd``, ``triangular_solve``); everything else here composes them with ordinary kiln operations:

- ``det``, ``slogdet``: from ``lu`` (the sign from the pivots' parity);
- ``inv``, ``solve``: ``lu`` and two triangular solves (``solve`` permutes the right-hand side with a
  gather);
- ``norm`` (``ord`` 2, -2, 'nuc'), ``cond``, ``pinv``, ``lstsq``, ``matrix_rank``, ``svdvals``: ``svd``;
- ``matrix_power``: repeated squaring with matrix products.
- ``eig``, ``eigvals``: ``kiln.lax.linalg.eig`` (LAPACK ``geev``; CPU only, no portable version).

Implementation of the primitives: on CPU, jaxlib's LAPACK kernels (``getrf``, ``potrf``, ``geqrf`` +
``orgqr``, ``syevd``/``heevd``, ``gesdd``, ``trsm``) called from the compiled program as XLA custom calls
(kiln registers them on first use; jaxlib loads them from SciPy's LAPACK, so SciPy must be installed).
On every other backend (GPU, TPU), and on CPU without SciPy, kiln's own portable implementations in
StableHLO: loops (``stablehlo.while``) over the matrix size doing LU with partial pivoting, Cholesky,
substitution, Householder QR, and parallel Jacobi iterations for ``eigh`` and ``svd``. The portable
versions handle real dtypes of any size, but the Jacobi methods (O(n^3) work per sweep, ~10 sweeps)
are meant for small and medium matrices; complex inputs there raise an error when lowered.

As in JAX, bad *values* never raise: a singular matrix gives ``det == 0`` and inf/NaN from ``inv`` and
``solve``; ``cholesky`` of a matrix that is not positive definite gives NaN. Bad shapes and dtypes
raise errors naming the function (a non-square matrix raises ``MatrixShapeError``, a ``ValueError``
and a ``TypeError``, as JAX raises either depending on the function). Stacks of matrices (leading
batch dimensions) are supported everywhere NumPy supports them; integer inputs are converted to the default float dtype.
"""
from __future__ import annotations

import builtins
import operator
from typing import Any, NamedTuple

import numpy as np

from .. import lax
from ..control.solves import custom_linear_solve
from ..core import dtypes
from ..core.axes import canonical_axes
from ..core.errors import MatrixShapeError
from ..core.folding import square_and_multiply
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ..lax import linalg as lax_linalg
from ..lax import precision as lax_precision
from . import products as _products
from . import reductions as _red
from ._util import check_arraylike, convert

__all__ = [
    "cholesky", "cond", "cross", "det", "diagonal", "outer", "tensorinv", "tensorsolve", "trace", "eigh", "eigvalsh",
    "inv", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "vecdot", "vector_norm", "EighResult",
    "QRResult", "SlogdetResult", "SVDResult", "eig", "eigvals", "EigResult",
]


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


_LAPACK_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


# -- argument handling ----------------------------------------------------------------------------

def _inexact(fname: str, *args: Any, lapack: bool = True) -> list[Any]:
    """The arguments converted to their common inexact dtype (integers and bools -> default float)."""
    check_arraylike(f"linalg.{fname}", *args)
    dtype = dtypes.result_type(*args)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    if lapack and dtype not in _LAPACK_DTYPES:
        raise TypeError(f"kiln.numpy.linalg.{fname}: array type {np.dtype(dtype).name} is unsupported in linalg; "
                        "convert it to float32 (or float64/complex) first")
    return [materialize(convert(a, dtype, False)) for a in args]


def _ndim_at_least_2(fname: str, x: Any, what: str = "a") -> None:
    shape = abstractify(x).shape
    if len(shape) < 2:
        raise MatrixShapeError(f"kiln.numpy.linalg.{fname}: {what} must be at least two-dimensional (a matrix or a "
                               f"stack of matrices), got a {len(shape)}-dimensional array of shape {shape}")


def _square(fname: str, x: Any, what: str = "a") -> None:
    _ndim_at_least_2(fname, x, what)
    shape = abstractify(x).shape
    if shape[-1] != shape[-2]:
        raise MatrixShapeError(f"kiln.numpy.linalg.{fname}: the last two dimensions of {what} must be square, got "
                               f"shape {shape}")


def _real_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return {np.dtype(np.complex64): dtypes.float32, np.dtype(np.complex128): dtypes.float64}.get(dtype, dtype)


def _static_order(fname: str, what: str, value: Any) -> Any:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return value
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"kiln.numpy.linalg.{fname}: {what} must be a Python number, a string or None, got "
                    f"{type(value).__name__} {value!r}")


# -- small array helpers (lax level: no promotion) --------------------------------------------------

def _shape(x) -> tuple[int, ...]:
    return abstractify(x).shape


def _dtype(x) -> np.dtype:
    return abstractify(x).dtype


def _mT(x):
    nd = len(_shape(x))
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
    return lax.conj(x) if _dtype(x).kind == "c" else x


def _mH(x):
    return _conj(_mT(x))


def _matmul(a, b):
    """``a @ b`` for stacks with equal batch dimensions."""
    nb = len(_shape(a)) - 2
    batch = tuple(range(nb))
    return lax.dot_general(a, b, (((nb + 1,), (nb,)), (batch, batch)))


def _eye_mask(shape: tuple[int, ...]):
    nd = len(shape)
    return lax.eq(lax.broadcasted_iota(np.int32, shape, nd - 2), lax.broadcasted_iota(np.int32, shape, nd - 1))


def _eye(batch: tuple[int, ...], n: int, dtype):
    return lax.convert_element_type(_eye_mask(batch + (n, n)), dtype)


def _diagonal(x):
    zeros = lax.broadcast_in_dim(lax.literal(0, _dtype(x)), _shape(x), ())
    return lax.reduce_sum(lax.select(_eye_mask(_shape(x)), x, zeros), (len(_shape(x)) - 1,))


def _full(shape, value, dtype):
    return lax.broadcast_in_dim(lax.literal(value, dtype), tuple(shape), ())


def _broadcast(x, shape: tuple[int, ...]):
    """NumPy-style broadcast to ``shape``."""
    old = _shape(x)
    if old == shape:
        return x
    lead = len(shape) - len(old)
    keep = [i for i, d in enumerate(old) if d == shape[lead + i]]
    if len(keep) != len(old):
        x = lax.reshape(x, tuple(old[i] for i in keep))
    return lax.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def _batch_shape(fname: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"kiln.numpy.linalg.{fname}: the batch dimensions {' and '.join(map(str, shapes))} "
                         "cannot be broadcast together") from None


def _permute_rows(b, perm):
    """``b[..., perm, :]`` for ``b`` of shape ``(..., m, k)`` and ``perm`` of shape ``(..., m)``."""
    *batch, m, k = _shape(b)
    nb = len(batch)
    dn = lax.GatherDimensionNumbers(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
                                    operand_batching_dims=tuple(range(nb)),
                                    start_indices_batching_dims=tuple(range(nb)))
    return lax.gather(b, lax.reshape(perm, tuple(batch) + (m, 1)), dn, (1,) * nb + (1, k))


def _lu_solve(lu, perm, b):
    """Solve ``a @ x = b`` from ``a``'s LU factors (equal batch dimensions)."""
    y = lax_linalg.triangular_solve(lu, _permute_rows(b, perm), left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def _lu_solve_transposed(lu, perm, b, conjugate: bool = False):
    """Solve ``a^T @ x = b`` (``a^H`` with ``conjugate``) from ``a``'s LU factors (``a[perm] = L U``, so
    ``a^T = U^T L^T P``)."""
    y = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conjugate)
    w = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                                    conjugate_a=conjugate)
    shape = _shape(perm)
    _, inverse = lax.sort_key_val(perm, lax.broadcasted_iota(perm.dtype, shape, len(shape) - 1))
    return _permute_rows(w, inverse)  # x = P^T w


def _solve_implicitly(a, b):
    """``x`` with ``a @ x = b`` (equal batch dimensions, ``b`` a stack of matrices), differentiated implicitly (as
    JAX's solve): the derivatives solve with ``a``'s LU factors again, once with ``a^T`` for reverse mode, rather
    than differentiate the factorization (five triangular solves and three matrix products more, and their
    temporaries)."""
    lu, _, perm = lax_linalg.lu(lax.stop_gradient(a))
    return custom_linear_solve(lambda x: _products.matmul(a, x), b, solve=lambda _, x: _lu_solve(lu, perm, x),
                               transpose_solve=lambda _, x: _lu_solve_transposed(lu, perm, x))


def _pivot_sign(pivots, dtype):
    """(-1) ** (number of row swaps) as ``dtype``."""
    shape = _shape(pivots)
    swapped = lax.ne(pivots, lax.broadcasted_iota(np.int32, shape, len(shape) - 1))
    count = lax.reduce_sum(lax.convert_element_type(swapped, np.int32), (len(shape) - 1,))
    odd = lax.convert_element_type(lax.rem(count, 2), dtype)
    return lax.sub(1, lax.mul(odd, 2))


# -- decompositions -------------------------------------------------------------------------------

@eager_jit("upper", "symmetrize_input")
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of a Hermitian positive-definite matrix (stack): lower ``L`` with ``a = L @ L^H``,
    or the upper ``L^H`` when ``upper``.

    As JAX (and unlike NumPy, which reads only the lower triangle), the input is symmetrized first
    unless ``symmetrize_input=False``. A matrix that is not positive definite gives NaNs, no error.
    """
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mH(factor) if upper else factor


@eager_jit("mode")
def qr(a, mode: str = "reduced"):
    """QR decomposition of a matrix (stack). ``mode``: 'reduced' (default), 'complete' or 'r'.

    Returns ``QRResult(Q, R)`` (only ``R`` for mode 'r'). Signs may differ from NumPy's; ``Q @ R == a``.
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"kiln.numpy.linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}"
                         + (" ('raw' is not supported)" if mode == "raw" else ""))
    (a,) = _inexact("qr", a)
    _ndim_at_least_2("qr", a)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


@eager_jit("UPLO", "symmetrize_input")
def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix (stack).

    Returns ``EighResult(eigenvalues, eigenvectors)`` with ``a @ v == v * w``. ``UPLO`` ('L', the
    default, or 'U') says which triangle is read; as JAX, the input is symmetrized first unless
    ``symmetrize_input=False``.
    """
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"kiln.numpy.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    (a,) = _inexact("eigh", a)
    _square("eigh", a)
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


@eager_jit()
def eig(a):
    """Eigenvalues and right eigenvectors of a general square matrix (stack): ``EigResult(eigenvalues,
    eigenvectors)`` with ``a @ v[..., :, j] == w[..., j] * v[..., :, j]``.

    As JAX (unlike NumPy), the results are always complex (complex64 for 32-bit input, complex128 for
    64-bit); eigenvectors have unit norm and their largest component real (LAPACK's ``geev``). CPU only
    (LAPACK); the eigenvectors are not differentiable (use ``kiln.lax.linalg.eig(...,
    enable_eigvec_derivs=True)``), the eigenvalues are.
    """
    (a,) = _inexact("eig", a)
    _square("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


@eager_jit()
def eigvals(a):
    """Eigenvalues of a general square matrix (stack), always complex as in JAX (see ``eig``)."""
    (a,) = _inexact("eigvals", a)
    _square("eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


@eager_jit("UPLO")
def eigvalsh(a, UPLO: str | None = "L"):
    """Eigenvalues (ascending) of a Hermitian matrix (stack)."""
    return eigh(a, UPLO).eigenvalues


@eager_jit("full_matrices", "compute_uv", "hermitian")
def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of a matrix (stack); ``S`` descending.

    Returns ``SVDResult(U, S, Vh)``, or only ``S`` when ``compute_uv=False``. ``hermitian`` is accepted
    for NumPy compatibility; the general algorithm is used either way.
    """
    (a,) = _inexact("svd", a)
    _ndim_at_least_2("svd", a)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=False, compute_uv=False)
    u, s, vh = lax_linalg.svd(a, full_matrices=bool(full_matrices), compute_uv=True)
    return SVDResult(u, s, vh)


@eager_jit()
def svdvals(x):
    """The singular values of a matrix (stack), descending."""
    return svd(x, compute_uv=False)


# -- determinants, inverses, solves ---------------------------------------------------------------

@eager_jit()
def det(a):
    """Determinant of a square matrix (stack): 2x2 and 3x3 ones by the cofactor formula (as JAX: exact for
    small integers), larger ones from their LU factorization (0 for a singular matrix)."""
    (a,) = _inexact("det", a)
    _square("det", a)
    *batch, n, _ = _shape(a)
    if n == 0:
        return _full(tuple(batch), 1, _dtype(a))
    if n in (2, 3):
        return _det_cofactors(a, n)
    lu, pivots, _ = lax_linalg.lu(a)
    prod = lax.reduce_prod(_diagonal(lu), (len(batch),))
    return lax.mul(_pivot_sign(pivots, _dtype(a)), prod)


def _det_cofactors(a, n: int):
    """The determinant of 2x2 or 3x3 matrices ``a`` (a stack): ``ad - bc``, or the expansion along the first row."""
    nb = len(_shape(a)) - 2

    def e(i, j):
        return lax.squeeze(lax.slice_in_dim(lax.slice_in_dim(a, i, i + 1, axis=nb), j, j + 1, axis=nb + 1),
                           (nb, nb + 1))

    def minor(i0, i1, j0, j1):
        return lax.sub(lax.mul(e(i0, j0), e(i1, j1)), lax.mul(e(i0, j1), e(i1, j0)))
    if n == 2:
        return minor(0, 1, 0, 1)
    return lax.add(lax.sub(lax.mul(e(0, 0), minor(1, 2, 1, 2)), lax.mul(e(0, 1), minor(1, 2, 0, 2))),
                   lax.mul(e(0, 2), minor(1, 2, 0, 1)))


@eager_jit()
def slogdet(a):
    """Sign and natural log of the absolute value of the determinant: ``SlogdetResult(sign, logabsdet)``.

    A singular matrix gives ``sign == 0`` and ``logabsdet == -inf``. For complex input the sign is a
    complex number of modulus 1.
    """
    (a,) = _inexact("slogdet", a)
    _square("slogdet", a)
    *batch, n, _ = _shape(a)
    dtype = _dtype(a)
    real = _real_dtype(dtype)
    batch = tuple(batch)
    if n == 0:
        return SlogdetResult(_full(batch, 1, dtype), _full(batch, 0, real))
    lu, pivots, _ = lax_linalg.lu(a)
    d = _diagonal(lu)
    absd = lax.abs(d)
    axis = (len(batch),)
    logabsdet = lax.reduce_sum(lax.log(absd), axis)
    if dtype.kind == "c":
        zero = lax.eq(absd, _full(_shape(absd), 0, real))
        safe = lax.select(zero, _full(_shape(absd), 1, real), absd)
        unit = lax.div(d, lax.convert_element_type(safe, dtype))
        unit = lax.select(zero, _full(_shape(d), 0, dtype), unit)
        sign = lax.reduce_prod(unit, axis)
    else:
        sign = lax.reduce_prod(lax.sign(d), axis)
    return SlogdetResult(lax.mul(_pivot_sign(pivots, dtype), sign), logabsdet)


@eager_jit()
def inv(a):
    """Inverse of a square matrix (stack), from LU and two triangular solves. A singular matrix gives
    inf/NaN entries (no error)."""
    (a,) = _inexact("inv", a)
    _square("inv", a)
    *batch, n, _ = _shape(a)
    batch = tuple(batch)
    if n == 0:
        return a
    lu, _, perm = lax_linalg.lu(a)
    # P @ I: the rows of the identity in the order of ``perm`` (no gather needed).
    cols = lax.broadcasted_iota(np.int32, batch + (n, n), len(batch) + 1)
    p = lax.convert_element_type(lax.eq(lax.broadcast_in_dim(perm, batch + (n, n), tuple(range(len(batch) + 1))),
                                        cols), _dtype(a))
    y = lax_linalg.triangular_solve(lu, p, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


@eager_jit()
def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` (stack).

    As NumPy 2 (and JAX): ``b`` of shape ``(M,)`` is one vector (broadcast against ``a``'s stack);
    otherwise ``b`` is a stack of ``(M, K)`` matrices whose batch dimensions broadcast with ``a``'s. A
    singular ``a`` gives inf/NaN (no error).
    """
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    sa, sb = _shape(a), _shape(b)
    m = sa[-1]
    if len(sb) == 0:
        raise ValueError(f"kiln.numpy.linalg.solve: b must be at least one-dimensional, got a scalar "
                         f"(a has shape {sa})")
    vector = len(sb) == 1
    if vector:
        b = lax.reshape(b, sb + (1,))
        sb = _shape(b)
    if sb[-2] != m:
        raise ValueError(f"kiln.numpy.linalg.solve: b must have {m} rows to match a of shape {sa}, got b of shape "
                         f"{(sb[0],) if vector else sb}" + ("" if vector else
                         " (a b with more than one dimension is a stack of "
                         "(M, K) matrices, as in NumPy 2)"))
    batch = _batch_shape("solve", sa[:-2], sb[:-2])
    a = _broadcast(a, batch + sa[-2:])
    b = _broadcast(b, batch + sb[-2:])
    if 0 in batch or m == 0 or sb[-1] == 0:
        x = b  # nothing to solve: x has b's (empty) shape
    else:
        x = _solve_implicitly(a, b)
    if vector:
        x = lax.reshape(x, batch + (m,))
    return x


@eager_jit("n")
def matrix_power(a, n):
    """``a`` raised to the integer power ``n`` (repeated squaring); ``n < 0`` inverts ``a`` first.

    Integer matrices keep their dtype for ``n >= 0``.
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"kiln.numpy.linalg.matrix_power: exponent must be a static integer, got "
                        f"{type(n).__name__} {n!r}") from None
    check_arraylike("linalg.matrix_power", a)
    a = materialize(convert(a, dtypes.result_type(a), False))
    _square("matrix_power", a)
    *batch, m, _ = _shape(a)
    if n == 0:
        return _eye(tuple(batch), m, _dtype(a))
    if n < 0:
        a = inv(a)
        n = -n
    return square_and_multiply(a, n, _matmul)


@eager_jit("hermitian")
def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse from the SVD; singular values ``<= rtol * max(s)`` are dropped.

    The default ``rtol`` is ``10 * max(M, N) * eps`` (JAX's; NumPy's is 1e-15). ``rcond`` is the older
    name of ``rtol``; ``hermitian`` is accepted for compatibility.
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("kiln.numpy.linalg.pinv: pass rtol or rcond, not both")
        rtol = rcond
    (a,) = _inexact("pinv", a)
    _ndim_at_least_2("pinv", a)
    *batch, m, n = _shape(a)
    batch = tuple(batch)
    dtype, real = _dtype(a), _real_dtype(_dtype(a))
    if m == 0 or n == 0:
        return _full(batch + (n, m), 0, dtype)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    if rtol is None:
        rtol = 10 * builtins.max(m, n) * float(dtypes.finfo(real).eps)
    cutoff = lax.mul(_as_real(rtol, real, batch), lax.reduce_max(s, (len(batch),)))
    k = _shape(s)[-1]
    keep = lax.gt(s, lax.broadcast_in_dim(cutoff, batch + (k,), tuple(range(len(batch)))))
    ones = _full(batch + (k,), 1, real)
    s_inv = lax.select(keep, lax.div(ones, lax.select(keep, s, ones)), _full(batch + (k,), 0, real))
    scaled = lax.mul(_mH(vh), lax.convert_element_type(
        lax.broadcast_in_dim(s_inv, batch + (n, k), tuple(range(len(batch))) + (len(batch) + 1,)), dtype))
    return _matmul(scaled, _mH(u))


def _as_real(value, real, batch):
    """A static or array tolerance as a real array of the batch shape."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _full(batch, float(value), real)
    value = materialize(convert(value, real, False))
    return _broadcast(value, batch)


def _numpy_resid(args: tuple, kwargs: dict) -> bool:
    """Whether an lstsq call asks for NumPy's residuals, which depend on the rank's value: op by op."""
    return bool(kwargs.get("numpy_resid", False))


@eager_jit("numpy_resid", op_by_op=_numpy_resid)
def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of ``a @ x = b`` for a 2-D ``a``, from the SVD.

    Returns ``(x, residuals, rank, s)``. Singular values ``<= rcond * max(s)`` are treated as zero
    (default ``rcond = eps * max(M, N)``). As JAX, ``residuals`` is the squared 2-norm of each column
    of ``b - a @ x`` (shape ``(K,)``, or ``()`` for a 1-D ``b``); with ``numpy_resid=True`` it follows
    NumPy (empty unless ``rank == N < M``; needs concrete values: such a call runs op by op, as JAX's, the
    others one compiled program per signature, ``rcond`` an argument of it).
    """
    a, b = _inexact("lstsq", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2:
        raise ValueError(f"kiln.numpy.linalg.lstsq: a must be two-dimensional, got shape {sa}")
    if len(sb) not in (1, 2):
        raise ValueError(f"kiln.numpy.linalg.lstsq: b must be one- or two-dimensional, got shape {sb}")
    m, n = sa
    if sb[0] != m:
        raise ValueError(f"kiln.numpy.linalg.lstsq: b must have {m} rows to match a of shape {sa}, got shape {sb}")
    vector = len(sb) == 1
    if vector:
        b = lax.reshape(b, (m, 1))
    k_rhs = _shape(b)[1]
    dtype, real = _dtype(a), _real_dtype(_dtype(a))
    if m == 0 or n == 0:
        x = _full((n, k_rhs), 0, dtype)
        s = _full((0,), 0, real)
        rank = _full((), 0, np.int32)
    else:
        u, s, vh = lax_linalg.svd(a, full_matrices=False)
        if rcond is None:
            rcond = float(dtypes.finfo(real).eps) * builtins.max(m, n)
        k = _shape(s)[0]
        cutoff = lax.mul(_as_real(rcond, real, ()), lax.reduce_max(s, (0,)))
        keep = lax.gt(s, lax.broadcast_in_dim(cutoff, (k,), ()))
        rank = lax.reduce_sum(lax.convert_element_type(keep, np.int32), (0,))
        ones = _full((k,), 1, real)
        s_inv = lax.select(keep, lax.div(ones, lax.select(keep, s, ones)), _full((k,), 0, real))
        uhb = _matmul(_mH(u), b)
        uhb = lax.mul(uhb, lax.convert_element_type(lax.broadcast_in_dim(s_inv, (k, k_rhs), (0,)), dtype))
        x = _matmul(_mH(vh), uhb)
    r = lax.sub(b, _matmul(a, x)) if m and n else b
    resid = lax.reduce_sum(lax.mul(lax.abs(r), lax.abs(r)) if dtype.kind == "c" else lax.mul(r, r), (0,))
    if vector:
        x = lax.reshape(x, (n,))
        resid = lax.reshape(resid, ())
    if numpy_resid:
        if int(rank) == n and m > n:
            resid = lax.reshape(resid, (1,)) if vector else resid
        else:
            resid = _full((0,), 0, real)
    return x, resid, rank, s


@eager_jit()
def matrix_rank(M, rtol=None, *, tol=None):
    """Rank of a matrix (stack): the number of singular values ``> tol``.

    Default ``tol = max(s) * max(M, N) * eps`` (``rtol`` replaces ``max(M, N) * eps``). Arrays of fewer
    than two dimensions have rank 1 unless all zero.
    """
    (M,) = _inexact("matrix_rank", M)
    shape = _shape(M)
    real = _real_dtype(_dtype(M))
    if len(shape) < 2:
        nonzero = lax.ne(M, _full(shape, 0, _dtype(M)))
        if shape:
            nonzero = lax.reduce_or(nonzero, (0,))
        return lax.convert_element_type(nonzero, np.int32)
    *batch, m, n = shape
    batch = tuple(batch)
    if m == 0 or n == 0:
        return _full(batch, 0, np.int32)
    s = svdvals(M)
    k = _shape(s)[-1]
    smax = lax.reduce_max(s, (len(batch),))
    if tol is None:
        if rtol is None:
            rtol = builtins.max(m, n) * float(dtypes.finfo(real).eps)
        tol_arr = lax.mul(smax, _as_real(rtol, real, batch))
    else:
        tol_arr = _as_real(tol, real, batch)
    keep = lax.gt(s, lax.broadcast_in_dim(tol_arr, batch + (k,), tuple(range(len(batch)))))
    return lax.reduce_sum(lax.convert_element_type(keep, np.int32), (len(batch),))


@eager_jit("p")
def cond(x, p=None):
    """Condition number of a matrix (stack) in the norm ``p`` (None/2/-2 from the SVD; 'fro', 'nuc',
    1, -1, inf, -inf as ``norm(x, p) * norm(inv(x), p)``)."""
    p = _static_order("cond", "p", p)
    (x,) = _inexact("cond", x)
    _ndim_at_least_2("cond", x)
    if p is None or p in (2, -2):
        s = svdvals(x)
        axis = (len(_shape(s)) - 1,)
        big, small = lax.reduce_max(s, axis), lax.reduce_min(s, axis)
        return lax.div(small, big) if p == -2 else lax.div(big, small)
    _square("cond", x)
    return lax.mul(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))


def matrix_transpose(x):
    """Swap the last two axes of a stack of matrices."""
    check_arraylike("linalg.matrix_transpose", x)
    x = materialize(convert(x, dtypes.result_type(x), False))
    _ndim_at_least_2("matrix_transpose", x, "x")
    return _mT(x)


# -- norms ----------------------------------------------------------------------------------------

def _keep(x, axes: tuple[int, ...], shape: tuple[int, ...], keepdims: bool):
    if not keepdims:
        return x
    return lax.reshape(x, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _abs(x):
    return lax.abs(x)


def _sum(x, axes):
    """kiln.numpy.sum, as JAX's norms: float16/bfloat16 accumulate in float32 and round once at the end."""
    return _red.sum(x, axis=axes)


def _sum_sq(x, axes):
    # JAX's real(x * conj(x)): for complex x, re*re + im*im, which |x|*|x| rounds differently
    sq = lax.real(lax.mul(x, lax.conj(x))) if _dtype(x).kind == "c" else lax.mul(x, x)
    return _sum(sq, axes)


def _norm_axes(fname: str, axis, ndim: int) -> tuple[int, ...]:
    where = f"kiln.numpy.linalg.{fname}"
    axes = (axis,) if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) else axis
    if not isinstance(axes, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise TypeError(f"{where}: axis must be None, an int or a tuple of ints, got {axis!r}")
    out = canonical_axes(where, axes, ndim, allow_repeats=True)
    if len(set(out)) != len(out):
        raise ValueError(f"{where}: duplicate axes given: {axis!r}")
    return out


def _vector_norm(x, ord, axes: tuple[int, ...], fname: str):
    real = _real_dtype(_dtype(x))
    if isinstance(ord, str):
        raise ValueError(f"kiln.numpy.linalg.{fname}: invalid norm order {ord!r} for vectors")
    if ord is None or ord == 2:
        return lax.sqrt(_sum_sq(x, axes))
    ax = _abs(x)
    if ord == np.inf:
        return lax.reduce_max(ax, axes)
    if ord == -np.inf:
        return lax.reduce_min(ax, axes)
    if ord == 0:
        nonzero = lax.ne(x, _full(_shape(x), 0, _dtype(x)))
        return _sum(lax.convert_element_type(nonzero, real), axes)
    if ord == 1:
        return _sum(ax, axes)
    p = float(ord)
    summed = _sum(lax.pow(ax, _full(_shape(ax), p, real)), axes)
    return lax.pow(summed, _full(_shape(summed), 1.0 / p, real))


def _matrix_norm(x, ord, row: int, col: int, fname: str):
    shape = _shape(x)
    if ord is None or ord == "fro":
        return lax.sqrt(_sum_sq(x, tuple(sorted((row, col)))))
    if ord in (2, -2, "nuc"):
        if _dtype(x) not in _LAPACK_DTYPES:
            raise TypeError(f"kiln.numpy.linalg.{fname}: ord={ord!r} needs a singular value decomposition, which "
                            f"does not support {_dtype(x).name}; convert to float32 first")
        others = tuple(i for i in range(len(shape)) if i not in (row, col))
        s = lax_linalg.svd(lax.transpose(x, others + (row, col)), full_matrices=False, compute_uv=False)
        last = (len(others),)
        if ord == "nuc":
            return _sum(s, last)
        return lax.reduce_max(s, last) if ord == 2 else lax.reduce_min(s, last)
    if ord in (1, -1):
        sums = _sum(_abs(x), (row,))
        c = col - 1 if col > row else col
        return lax.reduce_max(sums, (c,)) if ord == 1 else lax.reduce_min(sums, (c,))
    if ord in (np.inf, -np.inf):
        sums = _sum(_abs(x), (col,))
        r = row - 1 if row > col else row
        return lax.reduce_max(sums, (r,)) if ord == np.inf else lax.reduce_min(sums, (r,))
    raise ValueError(f"kiln.numpy.linalg.{fname}: invalid norm order {ord!r} for matrices (use None, 'fro', "
                     "'nuc', inf, -inf, 1, -1, 2 or -2)")


@eager_jit("ord", "axis", "keepdims")
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Matrix or vector norm, as ``numpy.linalg.norm``.

    ``axis`` None: the 2-norm of the flattened array when ``ord`` is None, else ``x`` must be 1-D or
    2-D. An int (or 1-tuple) ``axis`` gives vector norms (``ord``: None/2, 1, inf, -inf, 0, any other
    number p for ``sum(|x|**p)**(1/p)``); a 2-tuple gives matrix norms (``ord``: None/'fro', 'nuc', 1,
    -1, 2, -2, inf, -inf). ``keepdims`` keeps the reduced axes with size 1.
    """
    ord = _static_order("norm", "ord", ord)
    (x,) = _inexact("norm", x, lapack=False)
    shape = _shape(x)
    nd = len(shape)
    if axis is None:
        if ord is None:
            axes = tuple(range(nd))
            return _keep(lax.sqrt(_sum_sq(x, axes)), axes, shape, keepdims)
        if nd not in (1, 2):
            raise ValueError(f"kiln.numpy.linalg.norm: improper number of dimensions to norm: ord={ord!r} with "
                             f"axis=None needs a 1-D or 2-D array, got shape {shape}")
        axis = tuple(range(nd))
    axes = _norm_axes("norm", axis, nd)
    if len(axes) == 1:
        out = _vector_norm(x, ord, axes, "norm")
    elif len(axes) == 2:
        out = _matrix_norm(x, ord, axes[0], axes[1], "norm")
    else:
        raise ValueError(f"kiln.numpy.linalg.norm: improper number of dimensions to norm: axis={axis!r} names "
                         f"{len(axes)} axes (1 for vector norms, 2 for matrix norms)")
    return _keep(out, axes, shape, keepdims)


@eager_jit("axis", "keepdims", "ord")
def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """Vector norm over ``axis`` (all axes, flattened, when None), as the array API's ``vector_norm``."""
    ord = _static_order("vector_norm", "ord", ord)
    (x,) = _inexact("vector_norm", x, lapack=False)
    shape = _shape(x)
    axes = tuple(range(len(shape))) if axis is None else _norm_axes("vector_norm", axis, len(shape))
    return _keep(_vector_norm(x, ord, axes, "vector_norm"), axes, shape, keepdims)


@eager_jit("keepdims", "ord")
def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """Matrix norm over the last two axes, as the array API's ``matrix_norm``."""
    ord = _static_order("matrix_norm", "ord", ord)
    (x,) = _inexact("matrix_norm", x, lapack=False)
    _ndim_at_least_2("matrix_norm", x, "x")
    shape = _shape(x)
    nd = len(shape)
    return _keep(_matrix_norm(x, ord, nd - 2, nd - 1, "matrix_norm"), (nd - 2, nd - 1), shape, keepdims)


# ---------------------------------------------------------------------------------------------
# Products (the array API's linalg namespace; kiln.numpy's functions with keyword-only options)
# ---------------------------------------------------------------------------------------------

def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """:func:`kiln.numpy.matmul`."""
    return _products.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """:func:`kiln.numpy.tensordot` with keyword-only ``axes``."""
    return _products.tensordot(x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """:func:`kiln.numpy.vecdot`."""
    return _products.vecdot(x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices, in the order of fewest multiplications (as NumPy). The
    first array may be 1-D (a row vector) and the last 1-D (a column vector); the others are 2-D."""
    lax_precision.canonicalize_precision("numpy.linalg.multi_dot", precision)
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"kiln.numpy.linalg.multi_dot: needs at least two arrays, got {len(arrays)}")
    check_arraylike("multi_dot", *arrays)
    shapes = [abstractify(a).shape for a in arrays]
    for k, s in enumerate(shapes):
        allowed = (1, 2) if k in (0, len(shapes) - 1) else (2,)
        if len(s) not in allowed:
            raise ValueError(f"kiln.numpy.linalg.multi_dot: array {k} must be "
                             f"{'1-D or 2-D' if len(allowed) == 2 else '2-D'}, got shape {s}")
    if len(shapes) == 2:
        return _products.dot(arrays[0], arrays[1], precision=precision)
    # Matrix-chain order by dynamic programming over the (row, col) sizes.
    dims = [shapes[0][0] if len(shapes[0]) == 2 else 1] + [s[-1] if len(s) == 2 else 1 for s in shapes]
    n = len(arrays)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _products.dot(chain(i, k), chain(k + 1, j), precision=precision)
    return chain(0, n - 1)


# -- the array API's names -------------------------------------------------------------------------
@eager_jit("axis")
def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along ``axis`` (both arrays must have size 3 there)."""
    check_arraylike("linalg.cross", x1, x2)
    s1, s2 = abstractify(x1).shape, abstractify(x2).shape
    if not s1 or not s2 or not (-len(s1) <= axis < len(s1)) or not (-len(s2) <= axis < len(s2)) \
            or s1[axis] != 3 or s2[axis] != 3:
        raise ValueError(f"kiln.numpy.linalg.cross: both arrays must have size 3 along axis {axis}, got shapes "
                         f"{s1} and {s2}")
    return _products.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The diagonals (offset ``offset``) of the matrices in the last two axes of ``x``."""
    from .creation import diagonal as _diagonal_of
    _ndim_at_least_2("diagonal", x, "x")
    return _diagonal_of(x, offset=offset, axis1=-2, axis2=-1)


def outer(x1, x2, /):
    """The outer product of two 1-D arrays."""
    check_arraylike("linalg.outer", x1, x2)
    for name, x in (("x1", x1), ("x2", x2)):
        if abstractify(x).ndim != 1:
            raise ValueError(f"kiln.numpy.linalg.outer: {name} must be 1-D, got shape {abstractify(x).shape}")
    return _products.outer(x1, x2)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sums of the diagonals (offset ``offset``) of the matrices in the last two axes of ``x``."""
    _ndim_at_least_2("trace", x, "x")
    return _products.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def tensorinv(a, ind: int = 2):
    """The inverse of ``a`` as an N-dimensional tensor: ``tensordot(tensorinv(a, ind), a, ind)`` is the
    identity, for ``prod(a.shape[:ind]) == prod(a.shape[ind:])``."""
    from .shape import reshape
    check_arraylike("tensorinv", a)
    shape = abstractify(a).shape
    ind = int(ind)
    if ind <= 0:
        raise ValueError(f"kiln.numpy.linalg.tensorinv: ind must be positive, got {ind}")
    rows, cols = int(np.prod(shape[:ind], dtype=np.int64)), int(np.prod(shape[ind:], dtype=np.int64))
    if rows != cols:
        raise ValueError(f"kiln.numpy.linalg.tensorinv: the product of the first ind={ind} dimensions ({rows}) must "
                         f"equal that of the others ({cols}); got shape {shape}")
    return reshape(inv(reshape(a, (rows, cols))), shape[ind:] + shape[:ind])


def tensorsolve(a, b, axes=None):
    """The ``x`` with ``tensordot(a, x, axes=x.ndim) == b``: ``a``'s leading dimensions match ``b``'s
    shape and the product of the rest equals ``b.size``. ``axes``: axes of ``a`` to move to the end
    first."""
    from .shape import moveaxis, reshape
    check_arraylike("tensorsolve", a, b)
    if axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        a = moveaxis(a, axes, tuple(range(-len(axes), 0)))
    a_shape, b_shape = abstractify(a).shape, abstractify(b).shape
    nb = len(b_shape)
    if a_shape[:nb] != b_shape:
        raise ValueError(f"kiln.numpy.linalg.tensorsolve: a's leading dimensions {a_shape[:nb]} must be b's shape "
                         f"{b_shape}")
    out_shape = a_shape[nb:]
    rows, cols = int(np.prod(b_shape, dtype=np.int64)), int(np.prod(out_shape, dtype=np.int64))
    if rows != cols:
        raise ValueError(f"kiln.numpy.linalg.tensorsolve: a must be square when flattened: b has {rows} elements but "
                         f"the solution would have {cols} (shape {out_shape})")
    return reshape(solve(reshape(a, (rows, cols)), reshape(b, (rows,))), out_shape)
