"""Smoothing by random perturbations (``optax.perturbations``): ``make_perturbed_fun(f)`` is a Monte-Carlo
estimate of ``E_z f(x + sigma z)`` whose derivatives, of any order, are the score-function estimates of that
expectation's, so ``f`` itself need not be differentiable (nor continuous)."""
from __future__ import annotations

from typing import Callable

from .. import lax, random
from .. import numpy as jnp
from ..batching.api import vmap
from ..core.tree_util import tree_map
from .tree_utils import tree_add_scale, tree_random_like, tree_scale, tree_sum

__all__ = ["Normal", "Gumbel", "make_perturbed_fun"]


class Normal:
    """The standard normal noise: ``sample`` draws it, ``log_prob`` is its log-density up to a constant."""

    def sample(self, key, sample_shape=(), dtype=float):
        return random.normal(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -0.5 * inputs ** 2


class Gumbel:
    """The standard Gumbel noise: ``sample`` draws it, ``log_prob`` is its log-density."""

    def sample(self, key, sample_shape=(), dtype=float):
        return random.gumbel(key, sample_shape, dtype)

    def log_prob(self, inputs):
        return -inputs - jnp.exp(-inputs)


def _magicbox(x):
    # 1 in value, but its derivative brings down d(x): DiCE's "magic box" operator
    return jnp.exp(x - lax.stop_gradient(x))


def make_perturbed_fun(fun: Callable, num_samples: int = 1000, sigma=0.1, noise=Gumbel(), use_baseline=True):
    """``fun`` (pytree -> pytree) smoothed by ``num_samples`` perturbations ``x + sigma * z``, ``z ~ noise``;
    returns ``f(key, x)``. With ``use_baseline``, ``fun(x)`` is subtracted inside the estimator to reduce the
    variance of its derivatives."""
    if not hasattr(noise, "sample") or not hasattr(noise, "log_prob"):
        raise TypeError(f"optim.perturbations.make_perturbed_fun: noise must have sample(key, shape, dtype) and "
                        f"log_prob(z) methods, like Gumbel() or Normal(); got {noise!r}")

    def one_sample(key, x, baseline):
        z = tree_random_like(key, x, sampler=noise.sample)
        shifted = lax.stop_gradient(tree_map(lambda x, z: x + sigma * z, x, z))
        z = tree_map(lambda x, y: (y - x) / sigma, x, shifted)  # z again, but now a function of x
        box = _magicbox(tree_sum(tree_map(noise.log_prob, z)))
        out = tree_scale(box, fun(shifted))
        return tree_add_scale(out, 1 - box, baseline) if use_baseline else out

    def perturbed(key, x):
        baseline = fun(lax.stop_gradient(x)) if use_baseline else None
        out = vmap(one_sample, in_axes=(0, None, None))(random.split(key, num_samples), x, baseline)
        return tree_map(lambda y: jnp.mean(y, axis=0), out)

    return perturbed
