"""kiln.scipy.cluster.vq (as ``jax.scipy.cluster.vq``): ``vq``, the nearest code of each observation."""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp
from ..core import dtypes
from ..driver.eager_jit import eager_jit
from ..numpy._util import check_array_argument

__all__ = ["vq"]

_WHERE = "kiln.scipy.cluster.vq.vq"


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """Assign to each observation the nearest code of a code book (Euclidean distance), as
    :func:`scipy.cluster.vq.vq`.

    Parameters
    ----------
    obs : array of shape (M, N), or (M,)
        The observations, one per row; a 1-D ``obs`` holds M observations of one feature.
    code_book : array of shape (K, N), or (K,)
        The codes, one per row; 1-D when ``obs`` is.
    check_finite : bool
        Unused (as in JAX): non-finite inputs are not checked, as they cannot be under ``jit``.

    Returns
    -------
    code : integer array of shape (M,)
        The index in ``code_book`` of the nearest code of each observation (the first one on ties).
    dist : array of shape (M,)
        The Euclidean distance between each observation and its nearest code.
    """
    del check_finite  # (as JAX: a check of the values cannot run under jit)
    check_array_argument(_WHERE, "obs", obs)
    check_array_argument(_WHERE, "code_book", code_book)
    dtype = dtypes.result_type(obs, code_book)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    obs, code_book = jnp.asarray(obs, dtype=dtype), jnp.asarray(code_book, dtype=dtype)
    if obs.ndim != code_book.ndim:
        raise ValueError(f"{_WHERE}: observation and code_book should have the same rank, got obs of shape "
                         f"{obs.shape} and code_book of shape {code_book.shape}; give both as 2-D (one row per "
                         "observation or code) or both as 1-D (one feature)")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"{_WHERE}: ndim different than 1 or 2 are not supported: obs and code_book have "
                         f"{obs.ndim} dimensions (shapes {obs.shape} and {code_book.shape})")
    if obs.shape[1] != code_book.shape[1]:
        raise ValueError(f"{_WHERE}: obs has {obs.shape[1]} features per observation (shape {obs.shape}) but "
                         f"code_book has {code_book.shape[1]} per code (shape {code_book.shape}); both must have "
                         "shape (rows, N) with the same N")
    if code_book.shape[0] == 0:
        raise ValueError(f"{_WHERE}: code_book has no codes (shape {code_book.shape}); give at least one")
    return _vq(obs, code_book)


@eager_jit(where=_WHERE)
def _vq(obs: Any, code_book: Any) -> tuple[Any, Any]:
    diff = obs[:, None, :] - code_book[None, :, :]
    sq = diff * diff if not dtypes.is_complex(diff.dtype) else jnp.real(diff * jnp.conj(diff))
    sq = jnp.sum(sq, axis=-1)  # (M, K): the nearest code by squared distance, as SciPy
    code = jnp.argmin(sq, axis=-1)
    dist = jnp.sqrt(jnp.take_along_axis(sq, code[:, None], axis=-1)[:, 0])
    return code, dist
