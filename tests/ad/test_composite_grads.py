"""Derivatives of the composite ``kiln.numpy``, ``kiln.nn`` and ``kiln.scipy.special`` functions through
``check_grads`` (eagerly, to second order; a few also under ``kiln.jit``)."""
from __future__ import annotations

import numpy as np
import pytest
from check_grads import check_grads

import kiln
import kiln.numpy as knp
from kiln import nn
from kiln.scipy import special

R = np.random.default_rng(7)


def a(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


X = a(3, 4)
V = a(5)
POS = a(3, 4, lo=0.5, hi=2.0)
IDX = np.array([2, 0, 2, -1])
MASK = np.array([True, False, True, True, False])

# name -> (function, args[, order])
CASES = {
    "sum": (lambda x: knp.sum(x, axis=1), (X,)),
    "mean": (lambda x: knp.mean(x), (X,)),
    "var": (lambda x: knp.var(x, axis=0), (X,)),
    "std": (lambda x: knp.std(x, axis=1, ddof=1), (X,)),
    "max": (lambda x: knp.max(x, axis=1), (X,)),
    "min": (lambda x: knp.min(x), (X,)),
    "prod": (lambda x: knp.prod(x, axis=0), (X,)),
    "norm": (lambda x: knp.linalg.norm(x), (X,)),
    "norm_axis": (lambda x: knp.linalg.norm(x, ord=3, axis=1), (X,)),
    "abs_power": (lambda x: knp.abs(x) ** 2.5 + knp.power(knp.abs(x) + 1, x), (X,)),
    "logsumexp": (lambda x: special.logsumexp(x, axis=1), (X,)),
    "nn_logsumexp": (lambda x: nn.logsumexp(x), (X,)),
    "softmax": (lambda x: nn.softmax(x, axis=-1), (X,)),
    "log_softmax": (lambda x: nn.log_softmax(x, axis=0), (X,)),
    "matmul": (lambda x, y: x @ y, (X, a(4, 2))),
    "matmul_vec": (lambda x, v: knp.matmul(x, v), (X, a(4))),
    "einsum": (lambda x, y: knp.einsum("ij,jk->ik", x, y), (X, a(4, 2))),
    "einsum_trace": (lambda x: knp.einsum("ii->", x), (a(3, 3),)),
    "tensordot": (lambda x, y: knp.tensordot(x, y, axes=([1], [0])), (X, a(4, 2))),
    "outer": (lambda x, y: knp.outer(x, y), (V, a(3))),
    "where": (lambda x, y: knp.where(x > 0, x * y, knp.sin(y)), (X, a(3, 4))),
    "maximum": (lambda x, y: knp.maximum(x, y) + knp.minimum(x, 0.3), (X, a(3, 4))),
    "clip": (lambda x: knp.clip(x, -0.5, 0.5), (X,)),
    "arctan2_hypot": (lambda x, y: knp.arctan2(x, y) + knp.hypot(x, y), (X, POS)),
    "basic_index": (lambda x: x[1, 1:3] * x[-1, ::2].sum(), (X,)),
    "advanced_index": (lambda x: x[IDX], (V,)),
    "advanced_index_2d": (lambda x: x[np.array([0, 2]), np.array([[1], [3]])], (X,)),
    "bool_mask": (lambda x: x[MASK], (V,)),
    "take_along_axis": (lambda x: knp.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), axis=1), (X,)),
    "at_add": (lambda x, u: knp.asarray(x).at[IDX].add(u), (V, a(4))),
    "at_set": (lambda x, u: knp.asarray(x).at[IDX].set(u), (V, a(4))),
    "at_set_slice": (lambda x, u: knp.asarray(x).at[1:3].set(u), (V, a(2))),
    "at_multiply": (lambda x, u: knp.asarray(x).at[1].multiply(u), (V, np.array(1.7))),
    "at_min_max": (lambda x, u: knp.asarray(x).at[IDX].min(u) + knp.asarray(x).at[IDX].max(u), (V, a(4))),
    "at_get_fill": (lambda x: knp.asarray(x).at[np.array([1, 7])].get(mode="fill", fill_value=0.0), (V,)),
    "cumsum": (lambda x: knp.cumsum(x, axis=1), (X,)),
    "cumprod": (lambda x: knp.cumprod(x), (V,)),
    "cummax": (lambda x: kiln.lax.cummax(x, axis=0), (V,)),
    "cumlogsumexp": (lambda x: kiln.lax.cumlogsumexp(x, axis=0), (V,)),
    "sort": (lambda x: knp.sort(x, axis=0), (X,)),
    "sort_desc_topk": (lambda x: kiln.lax.top_k(x, 2)[0], (X,)),
    "median": (lambda x: knp.median(x, axis=1), (X,), 1),
    "quantile": (lambda x: knp.quantile(x, 0.3), (V,), 1),
    "conv": (lambda x, k: kiln.lax.conv(x, k, (1, 1), "SAME"), (a(1, 2, 4, 3), a(2, 2, 3, 2))),
    "concat_stack_split": (lambda x, y: knp.stack(knp.split(knp.concatenate([x, y]), 2))[1], (X, a(1, 4))),
    "pad_roll_flip": (lambda x: knp.roll(knp.flip(knp.pad(x, ((1, 0), (0, 2)), mode="reflect"), 0), 2, axis=1),
                      (X,)),
    "tile_repeat": (lambda x: knp.tile(x, (2, 1)) * knp.repeat(x, 2, axis=0), (X,)),
    "diag_trace_tril": (lambda x: knp.trace(x) + knp.diag(x) @ knp.tril(x) @ knp.ones(3), (a(3, 3),)),
    "linalg_inv_solve": (lambda m, b: knp.linalg.inv(m) @ knp.linalg.solve(m, b), (a(3, 3) + 3 * np.eye(3), a(3))),
    "linalg_det": (lambda m: knp.linalg.det(m) + knp.linalg.slogdet(m)[1], (a(3, 3) + 3 * np.eye(3),)),
    "linalg_cholesky": (lambda m: knp.linalg.cholesky(m @ m.T + 3 * knp.eye(3)), (a(3, 3),)),
    "nn_activations": (lambda x: nn.relu(x) + nn.gelu(x) + nn.silu(x) + nn.softplus(x) + nn.sigmoid(x)
                       + nn.log_sigmoid(x) + nn.elu(x) + nn.selu(x) + nn.celu(x) + nn.leaky_relu(x)
                       + nn.mish(x) + nn.soft_sign(x) + nn.squareplus(x) + nn.gelu(x, approximate=False),
                       (X + 0.05,)),
    "nn_glu_standardize": (lambda x: nn.glu(x, axis=1) + nn.standardize(x, axis=1)[:, :2], (X,)),
    "special": (lambda x: special.erf(x) + special.erfc(x) + special.gammaln(x + 2) + special.digamma(x + 2)
                + special.xlogy(x + 2, x + 3) + special.expit(x) + special.ndtr(x) + special.logit(x * 0.4 + 0.5)
                + special.erfinv(x * 0.5) + special.xlog1py(x, x + 0.5) + special.entr(x + 1.5), (X,)),
    "trig_hyperbolic": (lambda x: knp.arcsin(x * 0.6) + knp.arccos(x * 0.6) + knp.arctanh(x * 0.6) + knp.sinh(x)
                        + knp.cosh(x) + knp.arcsinh(x) + knp.arccosh(x + 3) + knp.arctan(x) + knp.tan(x), (X,)),
    "complex_parts": (lambda x, y: knp.abs(knp.real(x * y)) + knp.imag(knp.conj(x) * y) ** 2,
                      (a(3) + 1j * a(3), a(3) + 1j * a(3))),
}

JIT = {"softmax", "advanced_index", "at_add", "at_set", "cumsum", "sort", "linalg_inv_solve", "conv"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite(name):
    fn, args, *rest = CASES[name]
    check_grads(fn, args, order=rest[0] if rest else 2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(JIT))
def test_composite_jit(name):
    fn, args, *_ = CASES[name]
    check_grads(fn, args, order=1, atol=1e-5, rtol=1e-5, jit=True)
